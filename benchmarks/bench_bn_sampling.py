"""Benchmark: NUTS on the noise-aware Bayesian-network posterior against the non-private one.

One network, N records drawn from its bundled CPTs, family tables released with the Gaussian
mechanism (ε = 1 at order λ = 5 for the whole fit, ε/K per family). In one process, for

1. the non-private Dirichlet–multinomial model (``BayesianNetwork.fit(mechanism="none")``:
   Dirichlet priors on CPT rows, observed ``Multinomial`` counts),
2. the per-family noise-aware model (``BayesianNetwork.fit(mechanism="gaussian")``: one
   ``NoisyCounts`` term per family),
3. the joint noise-aware model (``fit(..., noise_model="joint")``: one multivariate normal over
   all family cells with the exact between-family covariance),
4. the exact posterior of the same releases by data augmentation
   (:class:`pymc_rdp.distributions.data_augmentation.DataAugmentation`, default moves; the fit
   declares N public), not NUTS: its "compile s" is the first (numba-compiling) call, its
   "logp+grad ms" does not apply,

it reports the compile time (logp and gradient functions), the cost of one logp+gradient
evaluation, the NUTS sampling time, the minimum bulk ESS over all CPT entries (ArviZ ``ess``)
and the minimum ESS per second of sampling, with the ratio to the non-private model.

BLAS is limited to one thread (several chains share two cores; threaded BLAS on small matrices
was measured to be several times slower under load).

Each model is sampled with every NUTS implementation that is installed (PyMC's own, and nutpie
if ``pip install nutpie`` was run: PyMC 6 then picks it by default), each ratio taken against the
non-private model under the same sampler.

Run: ``python benchmarks/bench_bn_sampling.py`` (alarm, N = 10,000, 500 + 500 iterations, two
chains), ``--quick`` (asia), ``--network NAME --n N --draws D --tune T --chains C``,
``--models none,family,joint``, ``--samplers pymc,nutpie``, ``--joint-draws D`` (fewer
iterations for the slow joint model).
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
    """Minimum bulk ESS over every CPT entry (variables ``*_cpt``; nuisance variables such as
    the per-family parent weights or the Laplace mixing variances are not counted)."""
    import arviz as az

    ess = az.ess(idata)
    post = ess["posterior"] if "posterior" in getattr(ess, "children", {}) else ess
    names = [v for v in post.data_vars if str(v).endswith("_cpt")]
    return float(min(np.nanmin(post[v].to_numpy()) for v in names))


def _time_model(
    label: str,
    model,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    nuts: dict,
    sampler: str = "pymc",
):
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
    kwargs = {"nuts": nuts} if sampler == "pymc" else {}
    if sampler == "nutpie" and "max_treedepth" in nuts:
        kwargs["nuts_sampler_kwargs"] = {"maxdepth": nuts["max_treedepth"]}
    with model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            nuts_sampler=sampler,
            **kwargs,
        )
    total_s = time.perf_counter() - t0
    sampling_s = float(idata["posterior"].attrs.get("sampling_time", total_s))
    ess = _min_ess(idata)
    return {
        "model": label,
        "sampler": sampler,
        "compile_s": compile_s,
        "eval_ms": eval_ms,
        "sample_s": sampling_s,
        "total_s": total_s,
        "min_ess": ess,
        "ess_per_s": ess / sampling_s,
    }


def _time_augmentation(label: str, bn, draws: int, tune: int, chains: int, seed: int) -> dict:
    from pymc_rdp.distributions.data_augmentation import DataAugmentation

    start = time.perf_counter()
    da = DataAugmentation.from_network(bn)
    da.run_chain(1, 0, seed)  # compiles (or loads) the kernels
    compile_s = time.perf_counter() - start
    t0 = time.perf_counter()
    idata = da.sample(draws=draws, tune=tune, chains=chains, random_seed=seed)
    total_s = time.perf_counter() - t0
    sampling_s = float(idata.attrs["sampling_time"])
    ess = _min_ess(idata)
    return {
        "model": label,
        "sampler": "augmentation " + "+".join(da.moves),
        "compile_s": compile_s,
        "eval_ms": float("nan"),
        "sample_s": sampling_s,
        "total_s": total_s,
        "min_ess": ess,
        "ess_per_s": ess / sampling_s,
    }


def _available_samplers() -> list[str]:
    import importlib.util

    out = ["pymc"]
    if importlib.util.find_spec("nutpie") is not None:
        out.append("nutpie")
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="asia, N = 2,000, few draws")
    parser.add_argument("--network", default=None)
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--tune", type=int, default=None)
    parser.add_argument("--chains", type=int, default=None)
    parser.add_argument("--max-treedepth", type=int, default=None)
    parser.add_argument(
        "--models",
        default="none,family,augmentation,joint",
        help="comma list of models: none (non-private), family (per-family), augmentation "
        "(exact, data augmentation), joint",
    )
    parser.add_argument(
        "--samplers",
        default=None,
        help="comma list of NUTS implementations: pymc, nutpie (default: those installed)",
    )
    parser.add_argument("--joint-draws", type=int, default=None, help="draws (and tune) for joint")
    args = parser.parse_args(argv)
    network = args.network or ("asia" if args.quick else "alarm")
    n = args.n or (2_000 if args.quick else 10_000)
    draws = args.draws or (100 if args.quick else 500)
    tune = args.tune or (100 if args.quick else 500)
    treedepth = args.max_treedepth or 10
    chains = args.chains or 2
    models = [m for m in args.models.split(",") if m]
    samplers = args.samplers.split(",") if args.samplers else _available_samplers()
    for m in models:
        if m not in ("none", "family", "joint", "augmentation"):
            parser.error(f"unknown model {m!r}")

    from pymc_rdp.datasets import load_network, sample_network
    from pymc_rdp.models.bayesian_network import BayesianNetwork
    from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    df = sample_network(network, n, random_state=1)
    structure = load_network(network)
    print(f"network {network}: N = {n}; samplers {samplers}", flush=True)
    fits = {}
    if "none" in models:
        fits["none"] = BayesianNetwork(structure).fit(df, mechanism="none")
    private = dict(mechanism="gaussian", epsilon=1.0, order=5.0)

    def noise() -> UnsafeNoiseSeed:
        # simulated data: the same reproducible (not private) noise for every model compared
        return UnsafeNoiseSeed(2)

    if "family" in models:
        fits["family"] = BayesianNetwork(structure).fit(df, noise_source=noise(), **private)
        print(f"Gaussian sigma per family: {fits['family'].family_mechanism.sigma:.3f}")
    if "joint" in models:
        t0 = time.perf_counter()
        fits["joint"] = BayesianNetwork(structure).fit(
            df, noise_model="joint", noise_source=noise(), **private
        )
        print(f"joint model built in {time.perf_counter() - t0:.1f} s", flush=True)
    if "augmentation" in models:
        fits["augmentation"] = BayesianNetwork(structure).fit(
            df, noise_source=noise(), public_total=n, **private
        )
    labels = {
        "augmentation": "noise-aware exact (data augmentation)",
        "none": "non-private Dirichlet-multinomial",
        "family": "noise-aware per-family",
        "joint": "noise-aware joint",
    }
    rows = []
    for sampler in samplers:
        for m in models:
            if m == "augmentation":
                continue
            d, t = draws, tune
            if m == "joint" and args.joint_draws:
                d = t = args.joint_draws
            row = _time_model(
                labels[m],
                fits[m].model,
                d,
                t,
                chains,
                3,
                {"max_treedepth": treedepth},
                sampler=sampler,
            )
            row["draws"], row["tune"] = d, t
            rows.append(row)
            print(row, flush=True)
    if "augmentation" in models:
        row = _time_augmentation(
            labels["augmentation"], fits["augmentation"], draws, tune, chains, 3
        )
        row["draws"], row["tune"] = draws, tune
        rows.append(row)
        print(row, flush=True)
    print()
    print(
        "| sampler | model | draws+tune | compile s | logp+grad ms | sampling s | min ESS "
        "| min ESS/s | ratio to non-private |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        same = r["sampler"] if r["model"] != labels["augmentation"] else "pymc"
        base = [b for b in rows if b["sampler"] == same and b["model"] == labels["none"]]
        ratio = f"{r['ess_per_s'] / base[0]['ess_per_s']:.3f}" if base else "–"
        print(
            f"| {r['sampler']} | {r['model']} | {r['draws']}+{r['tune']} | {r['compile_s']:.1f} "
            f"| {r['eval_ms']:.2f} | {r['sample_s']:.1f} | {r['min_ess']:.0f} "
            f"| {r['ess_per_s']:.2f} | {ratio} |"
        )
    print(f"(chains={chains}, max_treedepth={treedepth}; compile s: PyMC's logp+gradient function)")
    return rows


if __name__ == "__main__":
    main()
