"""Randomised records: NUTS on their exact likelihood against data augmentation, one process.

A network is fitted by randomized response (``BayesianNetwork.fit(mechanism=
"randomized_response")``, reproducible noise from ``UnsafeNoiseSeed(3)``: a benchmark, not a
release), then its posterior is sampled by both samplers for each seed, side by side:

* ``nuts``: ``bn.sample(sampler="nuts")``, NUTS on the released rows' exact likelihood
  (:mod:`pymc_rdp.distributions.records_model`); its wall time counts the compilation;
* ``augmentation``: ``bn.sample(sampler="augmentation")``, :class:`pymc_rdp.DataAugmentation`;
  its first run counts numba's compilation unless the kernels are cached.

NUTS's two chains run in two processes where PyMC forks them (the package's default on a
machine with two CPUs or more, :func:`pymc_rdp.models.network_posterior.nuts_chain_cores`);
``--nuts-cores 1`` runs them one after another, as PyMC's own default does on two CPUs, and
``--nuts-only`` leaves data augmentation out, to time the two side by side.

Printed per seed: wall seconds, the minimum bulk ESS over every CPT entry, the minimum ESS per
wall second, and the largest gap between the two posterior means. The last line gives the
median ratio of the minimum ESS per second (NUTS over data augmentation).

Networks (``--network``): ``small`` (smoker → cough, smoker → colour; N = 2,000 simulated) and
``adult4`` (Adult's age, sex → education → income; the 32,561 training records).

Run: ``python benchmarks/bench_randomized_records.py --network adult4 --epsilon 8``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def _network(name: str):
    import pandas as pd

    from pymc_rdp import datasets

    if name == "adult4":
        dag = {"age": [], "sex": [], "education": ["age"], "income": ["education", "sex"]}
        return dag, datasets.adult_paper("train")[list(dag)]
    if name != "small":
        raise SystemExit(f"--network must be small or adult4, got {name!r}")
    rng = np.random.default_rng(0)
    n = 2000
    smoker = rng.integers(0, 2, n)
    cough = np.where(rng.random(n) < 0.2 + 0.5 * smoker, 1, 0)
    colour = np.where(smoker == 1, rng.integers(0, 3, n), rng.integers(0, 2, n))
    frame = pd.DataFrame({"smoker": smoker, "cough": cough, "colour": colour})
    return {"smoker": [], "cough": ["smoker"], "colour": ["smoker"]}, frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="small")
    parser.add_argument("--epsilon", type=float, default=4.0)
    parser.add_argument("--nuts-draws", type=int, default=1000)
    parser.add_argument("--da-draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--seed", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--nuts-cores",
        type=int,
        nargs="+",
        default=[0],
        help="processes for NUTS's chains, one NUTS run per value (0: the package's default)",
    )
    parser.add_argument("--nuts-only", action="store_true", help="no data augmentation")
    args = parser.parse_args()

    import arviz as az

    import pymc_rdp as pmr

    warnings.simplefilter("ignore")  # PyMC's advice on chain counts, the slow-mixing warning
    dag, frame = _network(args.network)
    bn = pmr.BayesianNetwork(dag, states="from-data")
    bn.fit(
        frame,
        mechanism="randomized_response",
        epsilon=args.epsilon,
        delta=1e-6,
        public_total=len(frame),
        noise_source=pmr.UnsafeNoiseSeed(3),
    )
    ps = {v: round(r.mechanism.p, 3) for v, r in bn.releases.items()}
    print(f"{args.network}: N = {len(frame)}, epsilon = {args.epsilon}, p = {ps}")

    def run(sampler: str, seed: int, draws: int, cores: int = 0) -> tuple[float, float, np.ndarray]:
        options = {"cores": cores} if cores else {}
        start = time.perf_counter()
        idata = bn.sample(
            draws=draws, tune=args.tune, chains=2, random_seed=seed, sampler=sampler, **options
        )
        wall = time.perf_counter() - start
        ess = az.ess(idata["posterior"].to_dataset(), method="bulk")
        low = min(float(ess[k].min()) for k in ess.data_vars)
        means = np.concatenate([bn.cpt_draws(idata, v).mean(axis=0).ravel() for v in dag])
        return wall, low, means

    print(
        "| seed | NUTS cores | NUTS wall s | min ESS | ESS/s | DA wall s | min ESS | ESS/s "
        "| mean gap |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for seed in args.seed:
        for cores in args.nuts_cores:
            w1, e1, m1 = run("nuts", seed, args.nuts_draws, cores)
            label = cores or "default"
            if args.nuts_only:
                print(f"| {seed} | {label} | {w1:.1f} | {e1:.0f} | {e1 / w1:.1f} | | | | |")
                continue
            w2, e2, m2 = run("augmentation", seed, args.da_draws)
            ratios.append((e1 / w1) / (e2 / w2))
            gap = float(np.abs(m1 - m2).max())
            print(
                f"| {seed} | {label} | {w1:.1f} | {e1:.0f} | {e1 / w1:.1f} | {w2:.1f} | {e2:.0f} | "
                f"{e2 / w2:.2f} | {gap:.4f} |",
                flush=True,
            )
    if ratios:
        print(f"median ratio of minimum ESS per wall second, NUTS / DA: {np.median(ratios):.1f}")


if __name__ == "__main__":
    main()
