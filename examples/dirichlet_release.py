"""Release a conditional probability table with the Dirichlet mechanism, as a model component.

Curator: a synthetic table of (weather, activity) records gives the counts of the family
P(activity | weather): 3 parent configurations × 3 child states. The Dirichlet mechanism
(Ponnoprat 2023) is calibrated to ε = 1 at order λ = 5 for replace-one neighbours
(Δ₂ = √2, Δ∞ = 1). ``DirichletRelease`` declares θ̃ ~ Dirichlet(r·counts + α) per row, and
``release`` makes k exact draws, charging k × the table's per-draw curve (one entry). A second
release that would exceed the budget is refused before anything is drawn.

The released draws come back as an ArviZ DataTree (chain = 1, draw = k) with the ledger in its
attrs; the script prints an ArviZ summary, plots the draws, and writes the tree (netCDF) and the
accountant (JSON) to ``--out``.

Run: python examples/dirichlet_release.py [--fast] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import arviz as az
import numpy as np
import pymc as pm

import pymc_rdp.distributions as pmr
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import DirichletMechanism

WEATHER = ["sun", "cloud", "rain"]
ACTIVITY = ["walk", "cycle", "stay in"]


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: temp)")
    parser.add_argument("--fast", action="store_true", help="fewer released draws")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="pymc-rdp-dirichlet-"))
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)

    # the private records and the family table
    n = 1500
    weather = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    probs = np.array([[0.5, 0.35, 0.15], [0.4, 0.3, 0.3], [0.1, 0.1, 0.8]])
    activity = np.array([rng.choice(3, p=probs[w]) for w in weather])
    counts = np.zeros((3, 3), dtype=np.int64)
    np.add.at(counts, (weather, activity), 1)

    order = 5.0
    mechanism = DirichletMechanism.calibrate(
        1.0, order, l2_sensitivity=np.sqrt(2.0), linf_sensitivity=1.0
    )
    k = 2 if args.fast else 5
    accountant = Accountant.at_order(k * 1.0 + 0.5, order)  # room for k draws, not 2k
    with pm.Model(coords={"weather": WEATHER, "activity": ACTIVITY}) as model:
        pmr.DirichletRelease(
            "activity_given_weather", counts, mechanism, dims=("weather", "activity")
        )

    tree = pmr.release_dirichlet(model, draws=k, accountant=accountant)
    print(
        f"released {k} exact draws; r = {float(mechanism.r):.4g}, α = {float(mechanism.alpha):.4g}"
    )
    print(az.summary(tree, kind="stats"))
    try:
        pmr.release_dirichlet(model, draws=k, accountant=accountant)
    except BudgetExceededError as exc:
        print("second release refused before drawing:", str(exc).splitlines()[0][:120])
    print(accountant.report())

    pc = az.plot_forest(tree, var_names=["activity_given_weather"], backend="matplotlib")
    pc.savefig(out / "released_cpt.png")
    tree.to_netcdf(out / "released.nc", engine="h5netcdf")
    (out / "accountant.json").write_text(accountant.to_json())
    print("true conditional frequencies:\n", np.round(counts / counts.sum(1, keepdims=True), 3))
    print(f"wrote {sorted(p.name for p in out.iterdir())} to {out}")
    return out


if __name__ == "__main__":
    main()
