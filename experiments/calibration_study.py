"""Simulation-based calibration of private Bayesian-network posteriors.

For each replicate: CPT rows are drawn from the prior ``Dirichlet(1)``, ``N`` records are forward
sampled, every family table is released with the Gaussian (or Laplace) mechanism at a total budget
ε at order λ = 5 (ε/K per family, as :class:`pymc_rdp.BayesianNetwork` does), and the CPTs are
inferred by

* ``joint``: the joint linear-query model (:mod:`pymc_rdp.models.joint_likelihood`), NUTS;
* ``per-family``: :class:`pymc_rdp.BayesianNetwork`'s noise-aware model (one ``NoisyCounts``
  term per family), NUTS, on the same releases;
* ``naive``: the clipped and normalised noisy tables (a point estimate: no intervals);
* ``non-private``: the exact conjugate posterior ``Dirichlet(1 + counts)``.

If the inference is calibrated, the true CPT entry falls in the central q-interval of its
posterior with probability q, and its rank among L posterior draws is uniform on 0..L
(Talts et al. 2018, "Validating Bayesian inference algorithms with simulation-based
calibration"). Reported: coverage of the central 50/80/95% intervals over all CPT entries and
replicates, the mean KL(true row ‖ posterior-mean row), the mean held-out log-likelihood per
record (fresh records from the true network), sampling time and minimum ESS per second.

Run: ``python experiments/calibration_study.py --replicates 10`` (reduced grid by default:
``--networks asia``, ``--ns 100 1000 10000``, ``--epsilons 0.1 1``); the full study uses
``--replicates 100`` and is slow (hours). Results: a markdown table (printed, for
``docs/calibration.md``), ``docs/figures/calibration_*.png`` and optionally ``--json PATH``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import logging
import time
import warnings
from pathlib import Path

import numpy as np

LEVELS = (0.5, 0.8, 0.95)
METHODS = ("joint", "per-family", "naive", "non-private")
ROOT = Path(__file__).resolve().parents[1]


def _prior_cpts(st, cards, rng):
    return {
        v: rng.dirichlet(np.ones(cards[v]), size=int(np.prod([cards[p] for p in st.parents[v]])))
        for v in st.order
    }


def _summaries(draws: dict, truth: dict, st) -> dict:
    """Coverage indicators, SBC ranks and KL for one replicate; draws[v]: (S, rows, states)."""
    cover = {q: [] for q in LEVELS}
    ranks, kls = [], []
    for v in st.order:
        d = draws[v]
        t = truth[v]
        for q in LEVELS:
            lo = np.quantile(d, (1 - q) / 2, axis=0)
            hi = np.quantile(d, (1 + q) / 2, axis=0)
            cover[q].extend(((lo <= t) & (t <= hi)).ravel().tolist())
        ranks.extend((d < t[None]).sum(axis=0).ravel().tolist())
        mean = d.mean(axis=0)
        mean = mean / mean.sum(axis=1, keepdims=True)
        kls.extend(np.sum(t * (np.log(t) - np.log(np.maximum(mean, 1e-300))), axis=1).tolist())
    return {"cover": cover, "ranks": ranks, "kl": kls}


def _heldout(st, cards, truth, est, rng, n=2000) -> float:
    from pymc_rdp.models.bn_structure import forward_sample, record_log_likelihood

    codes = forward_sample(st, truth, cards, n, rng)
    return float(np.mean(record_log_likelihood(st, est, cards, codes)))


def _thin(d: np.ndarray, size: int) -> np.ndarray:
    idx = np.linspace(0, d.shape[0] - 1, size).round().astype(int)
    return d[idx]


def run_setting(network, n, epsilon, noise, replicates, draws, tune, seed, methods=METHODS):
    """All replicates of one (network, N, ε, noise) setting; returns per-method summaries."""
    import pandas as pd
    import pymc as pm

    from pymc_rdp.datasets import load_network
    from pymc_rdp.models.bayesian_network import BayesianNetwork
    from pymc_rdp.models.bn_structure import family_table, forward_sample, parse_structure
    from pymc_rdp.models.joint_likelihood import build_joint_model

    net = load_network(network)
    st, states = parse_structure(net)
    cards = {v: len(states[v]) for v in st.order}
    structure = {v: list(st.parents[v]) for v in st.order}
    rng = np.random.default_rng(seed)
    out = {
        m: {
            "cover": {q: [] for q in LEVELS},
            "ranks": [],
            "kl": [],
            "heldout": [],
            "sample_s": [],
            "ess_s": [],
        }
        for m in methods
    }
    joint_model = None
    n_rank = 99
    for _rep in range(replicates):
        truth = _prior_cpts(st, cards, rng)
        codes = forward_sample(st, truth, cards, n, rng)
        df = pd.DataFrame({v: codes[v] for v in st.order})
        given = {v: list(range(cards[v])) for v in st.order}
        bn = BayesianNetwork(structure, states=given).fit(
            df,
            mechanism=noise,
            epsilon=epsilon,
            order=5.0,
            random_state=int(rng.integers(2**31)),
        )
        results = {}
        if "non-private" in methods:
            post = {}
            for v in st.order:
                a = family_table(codes, v, st.parents[v], cards) + 1.0
                g = rng.standard_gamma(np.broadcast_to(a, (n_rank, *a.shape)))
                post[v] = g / g.sum(axis=-1, keepdims=True)
            results["non-private"] = (post, None, None)
        if "naive" in methods:
            naive = BayesianNetwork(structure, states=given)
            naive.fit(
                df,
                mechanism=noise,
                epsilon=epsilon,
                order=5.0,
                noise_aware=False,
                random_state=int(rng.integers(2**31)),
            )
            results["naive"] = ({v: naive.cpts[v][None] for v in st.order}, None, None)
        kw = dict(
            draws=draws,
            tune=tune,
            chains=1,
            progressbar=False,
            compute_convergence_checks=False,
            random_seed=int(rng.integers(2**31)),
        )
        if "joint" in methods:
            y = np.concatenate([np.asarray(bn.releases[v].values).ravel() for v in st.order])
            if joint_model is None:
                joint_model = build_joint_model(st, cards, bn.releases, n=float(n), alpha0=1.0)
            with joint_model:
                pm.set_data({"releases": y})
                t0 = time.perf_counter()
                idata = pm.sample(**kw)
                el = time.perf_counter() - t0
            results["joint"] = (
                {v: _thin(bn.cpt_draws(idata, v), n_rank) for v in st.order},
                idata,
                el,
            )
        if "per-family" in methods:
            t0 = time.perf_counter()
            with bn.model:
                idata = pm.sample(**kw)
            el = time.perf_counter() - t0
            results["per-family"] = (
                {v: _thin(bn.cpt_draws(idata, v), n_rank) for v in st.order},
                idata,
                el,
            )
        for m, (post, idata, el) in results.items():
            s = _summaries(post, truth, st)
            for q in LEVELS:
                out[m]["cover"][q].extend(s["cover"][q])
            out[m]["ranks"].extend(s["ranks"])
            out[m]["kl"].append(float(np.mean(s["kl"])))
            est = {
                v: post[v].mean(axis=0) / post[v].mean(axis=0).sum(-1, keepdims=True)
                for v in st.order
            }
            out[m]["heldout"].append(_heldout(st, cards, truth, est, rng))
            if idata is not None:
                min_ess = _min_ess(idata)
                samp = float(idata["posterior"].attrs.get("sampling_time", el))
                out[m]["sample_s"].append(samp)
                out[m]["ess_s"].append(min_ess / samp)
    return out, n_rank


def _min_ess(idata) -> float:
    import arviz as az

    ess = az.ess(idata)
    post = ess["posterior"] if "posterior" in getattr(ess, "children", {}) else ess
    return float(min(np.nanmin(post[v].to_numpy()) for v in post.data_vars))


def summarise(out: dict) -> dict:
    rows = {}
    for m, r in out.items():
        point = m == "naive"  # a point estimate has no intervals
        rows[m] = {
            **{
                f"cov{int(q * 100)}": (
                    float(np.mean(r["cover"][q])) if r["cover"][q] and not point else None
                )
                for q in LEVELS
            },
            "kl": float(np.mean(r["kl"])) if r["kl"] else None,
            "heldout": float(np.mean(r["heldout"])) if r["heldout"] else None,
            "sample_s": float(np.mean(r["sample_s"])) if r["sample_s"] else None,
            "ess_s": float(np.mean(r["ess_s"])) if r["ess_s"] else None,
        }
    return rows


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description="SBC of private Bayesian-network posteriors")
    p.add_argument("--networks", nargs="+", default=["asia"])
    p.add_argument("--ns", nargs="+", type=int, default=[100, 1000, 10000])
    p.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0])
    p.add_argument("--noise", nargs="+", default=["gaussian"])
    p.add_argument("--replicates", type=int, default=5)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--tune", type=int, default=200)
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--figures-dir", default=str(ROOT / "docs" / "figures"))
    p.add_argument("--no-figures", action="store_true")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    results = {}
    ranks_all = {}
    for net in args.networks:
        for noise in args.noise:
            for eps in args.epsilons:
                for n in args.ns:
                    t0 = time.perf_counter()
                    out, n_rank = run_setting(
                        net,
                        n,
                        eps,
                        noise,
                        args.replicates,
                        args.draws,
                        args.tune,
                        args.seed + n + int(eps * 1000),
                        methods=args.methods,
                    )
                    key = f"{net}|{noise}|{eps:g}|{n}"
                    results[key] = summarise(out)
                    ranks_all[key] = {m: out[m]["ranks"] for m in out}
                    print(
                        key,
                        f"({time.perf_counter() - t0:.0f} s)",
                        json.dumps(results[key]),
                        flush=True,
                    )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    print(markdown_table(results))
    if not args.no_figures:
        Path(args.figures_dir).mkdir(parents=True, exist_ok=True)
        figures(results, ranks_all, n_rank, Path(args.figures_dir))
    return results


def markdown_table(results: dict) -> str:
    lines = [
        "| network | noise | ε | N | method | cov 50 | cov 80 | cov 95 | KL | held-out LL "
        "| sampling s | min ESS/s |",
        "|---" * 12 + "|",
    ]

    def f(x, fmt):
        return "–" if x is None else format(x, fmt)

    for key, rows in results.items():
        net, noise, eps, n = key.split("|")
        for m, r in rows.items():
            lines.append(
                f"| {net} | {noise} | {eps} | {n} | {m} | {f(r['cov50'], '.2f')} | "
                f"{f(r['cov80'], '.2f')} | {f(r['cov95'], '.2f')} | {f(r['kl'], '.4f')} | "
                f"{f(r['heldout'], '.4f')} | {f(r['sample_s'], '.1f')} | {f(r['ess_s'], '.1f')} |"
            )
    return "\n".join(lines)


def figures(results: dict, ranks_all: dict, n_rank: int, outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(results)
    methods = [m for m in METHODS if m in results[keys[0]] and m != "naive"]
    fig, axes = plt.subplots(1, len(LEVELS), figsize=(4 * len(LEVELS), 3.5), sharey=True)
    x = np.arange(len(keys))
    for ax, q in zip(axes, LEVELS, strict=True):
        for j, m in enumerate(methods):
            vals = [results[k][m][f"cov{int(q * 100)}"] for k in keys]
            ax.plot(x, vals, "o-", label=m, alpha=0.8, ms=4 + j)
        ax.axhline(q, color="k", lw=1)
        ax.axhspan(q - 0.08, q + 0.08, color="0.9")
        ax.set_title(f"central {int(q * 100)}% intervals")
        ax.set_xticks(
            x, [k.split("|", 2)[2].replace("|", ", N=") for k in keys], rotation=60, fontsize=7
        )
        ax.set_xlabel("ε, N")
    axes[0].set_ylabel("coverage")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / "calibration_coverage.png", dpi=110)
    plt.close(fig)
    if not all(k in ranks_all for k in keys):
        return
    fig, axes = plt.subplots(
        len(methods), len(keys), figsize=(2.0 * len(keys), 1.8 * len(methods)), squeeze=False
    )
    bins = np.linspace(-0.5, n_rank + 0.5, 11)
    for i, m in enumerate(methods):
        for j, k in enumerate(keys):
            ax = axes[i, j]
            r = ranks_all[k][m]
            ax.hist(r, bins=bins, color="C0")
            ax.axhline(len(r) / 10, color="k", lw=1)
            ax.set_yticks([])
            ax.set_xticks([])
            if i == 0:
                ax.set_title(k.split("|", 2)[2].replace("|", ", N="), fontsize=7)
            if j == 0:
                ax.set_ylabel(m, fontsize=8)
    fig.suptitle("SBC rank histograms (10 bins; line = uniform)", fontsize=9)
    fig.tight_layout()
    fig.savefig(outdir / "calibration_ranks.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
