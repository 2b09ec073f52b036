"""Release a noisy contingency table, then model it with a noise-aware likelihood.

Curator: a synthetic survey of N people cross-tabulates age band (3 levels) against smoking
(yes/no). The 3 × 2 table is released once with Laplace noise calibrated to pure ε = 1
(replace-one neighbours: Δ₁ = 2), rounded and clamped at zero, and published as JSON.

Analyst: reads only the published JSON. The row totals are private, but under replace-one
neighbours the grand total N is public, so the model Poissonises the table: row weights
w ~ Dirichlet(1), smoking rates p_r ~ Dirichlet(1) per age band and cells
s_rk ~ Poisson(N w_r p_rk),
observed through ``NoisyCounts`` (the rounding and clamping are modelled as censoring). NUTS
samples the posterior; sampling is post-processing and charges nothing. The script prints an
ArviZ summary and the ledger and writes a posterior plot, the release and the posterior (netCDF,
ledger in its attrs) to ``--out``.

Run: python examples/noisy_counts.py [--fast] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import arviz as az
import numpy as np
import pymc as pm

import pymc_rdp.distributions as pmr
from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import DiscreteLaplaceMechanism

AGES = ["18-34", "35-59", "60+"]
SMOKING = ["yes", "no"]


def curator(out: Path, seed: int) -> tuple[Path, Accountant]:
    """Make the table, release it once (charged first) and publish the release as JSON."""
    rng = np.random.default_rng(seed)
    n = 400
    age = rng.choice(3, size=n, p=[0.35, 0.4, 0.25])
    smokes = rng.random(n) < np.array([0.3, 0.2, 0.12])[age]
    table = np.zeros((3, 2), dtype=np.int64)
    np.add.at(table, (age, np.where(smokes, 0, 1)), 1)

    accountant = Accountant(budget=(2.0, 1e-6))
    # exactly sampled integer noise (the discrete Laplace mechanism): pure ε = 1
    mechanism = DiscreteLaplaceMechanism.calibrate(1.0, order=float("inf"), sensitivity=2.0)
    release = pmr.privatize(table, mechanism, accountant, "age x smoking")
    path = out / "release.json"
    path.write_text(release.to_json())
    print(f"true table:\n{table}\nreleased table (discrete Laplace t = {mechanism.scale:g}):")
    print(release.values)
    return path, accountant


def analyst(release_path: Path, accountant: Accountant, out: Path, fast: bool, seed: int) -> None:
    """Model the published release and sample the noise-aware posterior."""
    release = pmr.Release.from_json(release_path.read_text())
    coords = {"age": AGES, "smoking": SMOKING}
    with pm.Model(coords=coords) as model:
        # The exact number of records is private and not in the release: a prior centred on the
        # noisy table's sum (post-processing) stands in for it.
        noisy_sum = max(float(np.sum(release.values)), 1.0)
        total = pm.LogNormal("n_records", mu=np.log(noisy_sum), sigma=0.1)
        w = pm.Dirichlet("age_share", np.ones(3), dims="age")
        p = pm.Dirichlet("smoking_rate", np.ones((3, 2)), dims=("age", "smoking"))
        pmr.NoisyCounts("table", total * w, p, release, dims=("age", "smoking"))
    draws, tune = (300, 300) if fast else (1000, 1000)
    idata = pmr.sample(
        draws,
        tune=tune,
        chains=2,
        cores=1,
        model=model,
        accountant=accountant,
        random_seed=seed,
        progressbar=False,
    )
    with model:
        pm.sample_posterior_predictive(
            idata, extend_inferencedata=True, progressbar=False, random_seed=seed
        )
    print(az.summary(idata, var_names=["smoking_rate"], coords={"smoking": ["yes"]}))
    pc = az.plot_dist(
        idata, var_names=["smoking_rate"], coords={"smoking": ["yes"]}, backend="matplotlib"
    )
    pc.savefig(out / "smoking_rate.png")
    idata.to_netcdf(out / "posterior.nc", engine="h5netcdf")
    print("private nodes:", json.dumps(pmr.ledger(model), default=str)[:200], "...")
    print(accountant.report())


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: temp)")
    parser.add_argument("--fast", action="store_true", help="short chains")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="pymc-rdp-noisy-counts-"))
    out.mkdir(parents=True, exist_ok=True)
    release_path, accountant = curator(out, args.seed)
    analyst(release_path, accountant, out, args.fast, args.seed)
    print(f"wrote {sorted(p.name for p in out.iterdir())} to {out}")
    return out


if __name__ == "__main__":
    main()
