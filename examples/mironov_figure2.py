"""Redraw the comparison of Mironov (2017), Figure 2: how likely can a bad event become?

An event has probability p ("baseline") when one person's record is left out. The same ε-DP
mechanism is then run n times on the data (randomized response, or the Laplace mechanism), and we
ask how large the event's probability can be with the record in. Four ways to answer:

* naive composition: the n runs are nε-DP, so the probability is at most e^{nε} p;
* advanced composition of (ε, δ)-DP (Dwork–Rothblum–Vadhan, Kairouz–Oh–Viswanath): the n runs
  are (ε′, δ)-DP, so the probability is at most e^{ε′} p + δ, with the best δ;
* Mironov's Proposition 4 (an RDP proof of advanced composition), again with the best δ;
* the RDP analysis: the exact RDP curve of the mechanism times n, and Proposition 10
  (``pymc_rdp.privacy.rdp.event_probability_bounds``) at the best order: (e^{nε(α)} p)^{(α−1)/α}.

Run ``python examples/mironov_figure2.py`` (``--out PATH`` to choose the PNG, ``--epsilon`` for the
per-run ε). It prints a few of the plotted numbers too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from pymc_rdp.privacy import rdp

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "docs" / "figures" / "mironov_figure2.png"
BASELINES = (1e-6, 1e-3, 1e-1)
ORDERS = np.append(rdp.DEFAULT_ORDERS, np.inf)
DELTAS = np.logspace(-60, -0.05, 1500)  # candidate δ for the (ε, δ) bounds


def best_over_delta(eps_prime: np.ndarray, p: float) -> np.ndarray:
    """min over δ of min(1, e^{ε′(δ)} p + δ); ``eps_prime`` has shape (n values, δ values)."""
    with np.errstate(over="ignore"):
        bound = np.exp(eps_prime) * p + DELTAS
    return np.minimum(bound.min(axis=1), 1.0)


def bounds(n: np.ndarray, epsilon: float, p: float) -> dict[str, np.ndarray]:
    """Upper bounds on the event probability after each number of runs in ``n``."""
    n_col, d_row = n[:, None], DELTAS[None, :]
    naive = np.minimum(np.exp(np.minimum(n * epsilon, 700.0)) * p, 1.0)
    standard = np.minimum(
        rdp.advanced_composition(epsilon, n_col, d_row, method="drv"),
        rdp.advanced_composition(epsilon, n_col, d_row, method="kov"),
    )
    prop4 = rdp.advanced_composition(epsilon, n_col, d_row, method="mironov")
    rr_curve = rdp.randomized_response(ORDERS, np.exp(epsilon) / (1.0 + np.exp(epsilon)))
    lap_curve = rdp.laplace(ORDERS, 1.0 / epsilon)
    rdp_rr = np.array([rdp.best_event_probability_bound(ORDERS, k * rr_curve, p)[0] for k in n])
    rdp_lap = np.array([rdp.best_event_probability_bound(ORDERS, k * lap_curve, p)[0] for k in n])
    return {
        "naive composition, $e^{n\\varepsilon}p$": naive,
        "advanced composition (DRV/KOV), best δ": np.minimum(best_over_delta(standard, p), naive),
        "Mironov Prop. 4, best δ": best_over_delta(prop4, p),
        "RDP, Laplace mechanism": rdp_lap,
        "RDP, randomized response": rdp_rr,
    }


STYLES = {
    "naive composition, $e^{n\\varepsilon}p$": dict(color="0.45", linestyle=":"),
    "advanced composition (DRV/KOV), best δ": dict(color="tab:orange", linestyle="--"),
    "Mironov Prop. 4, best δ": dict(color="tab:purple", linestyle="-."),
    "RDP, Laplace mechanism": dict(color="tab:green", linewidth=3.5, alpha=0.6),
    "RDP, randomized response": dict(color="tab:blue", linewidth=1.4, linestyle=(0, (5, 2))),
}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="PNG file to write")
    parser.add_argument("--epsilon", type=float, default=0.1, help="pure-DP ε of each run")
    parser.add_argument("--n-max", type=int, default=3000, help="largest number of runs")
    args = parser.parse_args(argv)

    n = np.unique(np.round(np.geomspace(1, args.n_max, 160)))
    fig, axes = plt.subplots(1, len(BASELINES), figsize=(15, 4.8), sharex=True)
    for ax, p in zip(axes, BASELINES, strict=True):
        curves = bounds(n, args.epsilon, p)
        for label, values in curves.items():
            ax.plot(n, values, label=label, **STYLES[label])
        ax.axhline(p, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(p / 2.0, 1.5)
        ax.set_xlabel("number of runs n")
        ax.set_title(f"baseline probability p = {p:g}")
        ax.grid(True, which="major", alpha=0.3)
        print(f"p = {p:g}  (columns: {' | '.join(curves)})")
        for k in (10, 100, 1000):
            if k <= args.n_max:
                i = int(np.argmin(np.abs(n - k)))
                row = "  ".join(f"{v[i]:9.3g}" for v in curves.values())
                print(f"  n = {int(n[i]):5d}: {row}")
    axes[0].set_ylabel("upper bound on the event's probability")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(
        f"Mironov (2017), Fig. 2 redrawn: n runs of an ε = {args.epsilon:g} mechanism "
        "(randomized response or Laplace)"
    )
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    plt.close(fig)
    print(f"wrote {args.out}")
    return args.out


if __name__ == "__main__":
    main()
