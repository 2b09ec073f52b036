"""Benchmark: NUTS on the noise-aware Bayesian-network posterior against the non-private one.

One network, N records drawn from its bundled CPTs, family tables released with the Gaussian
mechanism (ε = 1 at order λ = 5 for the whole fit, ε/K per family). In one process, for

1. the non-private Dirichlet–multinomial model (``BayesianNetwork.fit(mechanism="none")``:
   Dirichlet priors on CPT rows, observed ``Multinomial`` counts),
2. the per-family noise-aware model (``BayesianNetwork.fit(mechanism="gaussian")``: one
   ``NoisyCounts`` term per family),
3. the joint noise-aware model (:func:`pymc_rdp.models.joint_likelihood.joint_model_from_network`:
   one multivariate normal over all family cells with the exact between-family covariance),

it reports the compile time (logp and gradient functions), the cost of one logp+gradient
evaluation, the NUTS sampling time, the minimum bulk ESS over all CPT entries (ArviZ ``ess``)
and the minimum ESS per second of sampling, with the ratio to the non-private model.

BLAS is limited to one thread (several chains share two cores; threaded BLAS on small matrices
was measured to be several times slower under load).

Run: ``python benchmarks/bench_bn_sampling.py`` (alarm, N = 10,000), ``--quick`` (asia),
``--network NAME --n N --draws D --tune T --chains C``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time
import warnings

import numpy as np


def _min_ess(idata) -> float:
    import arviz as az

    ess = az.ess(idata)
    post = ess["posterior"] if "posterior" in getattr(ess, "children", {}) else ess
    return float(min(np.nanmin(post[v].to_numpy()) for v in post.data_vars))


def _time_model(label: str, model, draws: int, tune: int, chains: int, seed: int, nuts: dict):
    import pymc as pm

    start = time.perf_counter()
    fn = model.logp_dlogp_function(ravel_inputs=True)
    fn.set_extra_values({})
    compile_s = time.perf_counter() - start
    point = model.initial_point()
    q0 = np.concatenate([np.asarray(point[v.name]).ravel() for v in fn._grad_vars])
    fn(q0)
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(q0)
    eval_ms = (time.perf_counter() - t0) / reps * 1e3
    t0 = time.perf_counter()
    with model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            nuts=nuts,
        )
    total_s = time.perf_counter() - t0
    sampling_s = float(idata["posterior"].attrs.get("sampling_time", total_s))
    ess = _min_ess(idata)
    return {
        "model": label,
        "compile_s": compile_s,
        "eval_ms": eval_ms,
        "sample_s": sampling_s,
        "total_s": total_s,
        "min_ess": ess,
        "ess_per_s": ess / sampling_s,
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="asia, N = 2,000, few draws")
    parser.add_argument("--network", default=None)
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--tune", type=int, default=None)
    parser.add_argument("--chains", type=int, default=None)
    parser.add_argument("--max-treedepth", type=int, default=None)
    parser.add_argument("--skip", default="", help="comma list of models to skip: joint,family")
    args = parser.parse_args(argv)
    network = args.network or ("asia" if args.quick else "alarm")
    n = args.n or (2_000 if args.quick else 10_000)
    big = network not in ("asia", "cancer", "earthquake", "survey")
    # alarm: 0.1-0.4 s per logp+gradient of the joint model here; keep the run within minutes
    draws = args.draws or (100 if args.quick else (20 if big else 300))
    tune = args.tune or (100 if args.quick else (20 if big else 300))
    treedepth = args.max_treedepth or (5 if big else 10)
    args.chains = args.chains or (1 if big else 2)

    from pymc_rdp.datasets import load_network, sample_network
    from pymc_rdp.models.bayesian_network import BayesianNetwork
    from pymc_rdp.models.joint_likelihood import joint_model_from_network

    warnings.filterwarnings("ignore", category=FutureWarning)
    df = sample_network(network, n, random_state=1)
    structure = load_network(network)
    rows = []
    plain = BayesianNetwork(structure).fit(df, mechanism="none")
    print(f"network {network}: N = {n}, {len(plain.nodes)} families")
    rows.append(
        _time_model(
            "non-private Dirichlet-multinomial", plain.model, draws, tune, args.chains, 3, {}
        )
    )
    print(rows[-1], flush=True)
    bn = BayesianNetwork(structure).fit(
        df, mechanism="gaussian", epsilon=1.0, order=5.0, random_state=2
    )
    print(f"Gaussian sigma per family: {bn.family_mechanism.sigma:.3f}")
    skip = set(filter(None, args.skip.split(",")))
    if "family" not in skip:
        rows.append(
            _time_model(
                "noise-aware per-family",
                bn.model,
                draws,
                tune,
                args.chains,
                4,
                {"max_treedepth": treedepth},
            )
        )
        print(rows[-1], flush=True)
    if "joint" not in skip:
        t0 = time.perf_counter()
        joint = joint_model_from_network(bn)
        build_s = time.perf_counter() - t0
        row = _time_model(
            "noise-aware joint", joint, draws, tune, args.chains, 5, {"max_treedepth": treedepth}
        )
        row["build_s"] = build_s
        rows.append(row)
        print(rows[-1], flush=True)
    base = rows[0]["ess_per_s"]
    print()
    print("| model | compile s | logp+grad ms | sampling s | min ESS | min ESS/s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['compile_s']:.1f} | {r['eval_ms']:.2f} | {r['sample_s']:.1f} "
            f"| {r['min_ess']:.0f} | {r['ess_per_s']:.2f} | {r['ess_per_s'] / base:.3f} |"
        )
    print(f"(draws={draws}, tune={tune}, chains={args.chains}, max_treedepth={treedepth})")
    return rows


if __name__ == "__main__":
    main()
