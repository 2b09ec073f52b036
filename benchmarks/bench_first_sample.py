"""The first ``pm.sample`` of a noise-aware model: compile time against sampling time.

Each case runs in its own subprocess, first with a cold cache (``PYTENSOR_FLAGS=
base_compiledir=<empty dir>`` and ``NUMBA_CACHE_DIR=<empty dir>``), then warm (a second subprocess
on the same, now filled, directories). In the subprocess the model is built, then ``pm.sample``
runs NUTS (``--chains`` chains of ``--tune`` + ``--draws`` on ``--cores`` cores). Reported per run:

* build: the model's construction (for a network: ``fit``, the releases included);
* compile: the wall time of ``pm.sample`` minus its own sampling time, i.e. the graph
  construction of logp and its gradient, PyTensor's rewrites and the numba compilation (NUTS
  initialisation is a few gradient evaluations);
* sampling: ``pm.sample``'s ``sampling_time`` (the NUTS iterations of every chain, including the
  start of the worker processes);
* the ratio compile / sampling.

Samplers (``--sampler``, comma-separated; each in its own cold cache directory):

* ``pymc``: PyMC's NUTS on PyTensor's default (numba) backend;
* ``pymc-fast-compile``: the same with ``PYTENSOR_FLAGS=mode=FAST_COMPILE`` (few rewrites, the
  Python/C virtual machine instead of one numba function);
* ``numpyro``: ``pm.sample(nuts_sampler="numpyro")``, the logp graph compiled by JAX;
* ``nutpie-numba``: ``pm.sample(nuts_sampler="nutpie")`` through nutpie's numba backend;
* ``nutpie-jax``: nutpie with ``backend="jax"`` and ``gradient_backend="jax"``;
* ``nutpie-jax-pytensor-grad``: nutpie's JAX backend compiling PyTensor's gradient graph
  (``gradient_backend="pytensor"``) instead of differentiating the logp with JAX.

JAX's persistent compilation cache is pointed at the case's cache directory
(``JAX_COMPILATION_CACHE_DIR``), so a cold run compiles from scratch and the warm run may reuse it.
JAX compiles lazily: numpyro and nutpie's JAX backend trace and compile the sampler's functions
inside their sampling call, which PyMC counts as sampling time. The benchmark moves that time to
compile: it sums JAX's own compile events (``jax.monitoring``: jaxpr tracing, lowering to MLIR,
XLA compilation) recorded inside the engine's sampling call and subtracts them from sampling.
Nested traces may be counted twice, so the compile figure of a JAX engine is an upper bound.

Cases: a hierarchical 6-region × 4-outcome model observing one noised 6 × 4 table through
``NoisyCounts`` (discrete Laplace noise through ``pmr.privatize``, continuous Laplace noise through
``observed=``), the asia network fitted with Gaussian and with Laplace releases (noise-aware,
per-family), each beside its anchor: the same model observing the true counts (``pm.Multinomial``;
for the network ``fit(mechanism="none")``, sampled by NUTS too).

``--stages`` adds, for each private case, a cold profile of the stages of one logp-and-gradient
function: graph construction, rewrites, numba compilation and the first evaluation.

Run: ``python benchmarks/bench_first_sample.py [--cases hier_dlaplace,asia_gaussian,...]
[--sampler pymc,numpyro,nutpie-numba,nutpie-jax] [--draws 1000 --tune 1000 --chains 2
--cores 2] [--stages]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REGIONS = 6
OUTCOMES = 4
CASES = {
    "hier_dlaplace": "hierarchical 6x4, discrete Laplace release",
    "hier_laplace": "hierarchical 6x4, Laplace release (observed=)",
    "hier_plain": "hierarchical 6x4, true counts (Multinomial)",
    "asia_gaussian": "asia, Gaussian releases, noise-aware",
    "asia_laplace": "asia, Laplace releases, noise-aware",
    "asia_plain": "asia, true counts (Dirichlet-Multinomial)",
}
SAMPLERS = (
    "pymc",
    "pymc-fast-compile",
    "numpyro",
    "nutpie-numba",
    "nutpie-jax",
    "nutpie-jax-pytensor-grad",
)
ANCHOR = {
    "hier_dlaplace": "hier_plain",
    "hier_laplace": "hier_plain",
    "asia_gaussian": "asia_plain",
    "asia_laplace": "asia_plain",
}


def _hierarchical_table() -> tuple[np.ndarray, np.ndarray]:
    """The true 6 × 4 table (a fixed draw) and the row totals."""
    rng = np.random.default_rng(20240601)
    totals = np.array([120, 340, 80, 210, 150, 400], dtype=np.int64)
    mu = np.array([0.45, 0.3, 0.15, 0.1])
    p = rng.dirichlet(30.0 * mu, size=REGIONS)
    table = np.stack([rng.multinomial(n, row) for n, row in zip(totals, p, strict=True)])
    return table, totals


def build_hierarchical(case: str) -> Any:
    """The hierarchical model: μ ~ Dirichlet(1), κ ~ Gamma(2, 0.1), p_r ~ Dirichlet(κ μ)."""
    import pymc as pm

    import pymc_rdp.distributions as pmr
    from pymc_rdp.privacy.accountant import Accountant
    from pymc_rdp.privacy.mechanisms import (
        DiscreteLaplaceMechanism,
        LaplaceMechanism,
        UnsafeNoiseSeed,
    )

    table, totals = _hierarchical_table()
    coords = {"region": [f"r{i}" for i in range(REGIONS)], "outcome": list("abcd")}
    with pm.Model(coords=coords) as model:
        mu = pm.Dirichlet("mu", np.ones(OUTCOMES), dims="outcome")
        kappa = pm.Gamma("kappa", alpha=2.0, beta=0.1)
        p = pm.Dirichlet("p", kappa * mu, dims=("region", "outcome"))
        if case == "hier_plain":
            pm.Multinomial("table", n=totals, p=p, observed=table, dims=("region", "outcome"))
        elif case == "hier_dlaplace":
            acc = Accountant(budget=(2.0, 1e-6))
            mech = DiscreteLaplaceMechanism.calibrate(1.0, order=float("inf"), sensitivity=2.0)
            rel = pmr.privatize(table, mech, acc, "region x outcome", UnsafeNoiseSeed(3))
            pmr.NoisyCounts("table", totals, p, rel, dims=("region", "outcome"))
        elif case == "hier_laplace":
            mech = LaplaceMechanism(2.0, 2.0)  # scale b = 2 (ε = 1 for Δ₁ = 2)
            noisy = table + np.random.default_rng(5).laplace(0.0, 2.0, table.shape)
            pmr.NoisyCounts(
                "table", totals, p, mechanism=mech, observed=noisy, dims=("region", "outcome")
            )
        else:
            raise ValueError(f"unknown case {case!r}")
    return model


def build_network(case: str) -> Any:
    """The asia network fitted on 2,000 sampled records; returns the fitted estimator."""
    from pymc_rdp.datasets import load_network, sample_network
    from pymc_rdp.models.bayesian_network import BayesianNetwork
    from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

    df = sample_network("asia", 2000, random_state=1)
    bn = BayesianNetwork(load_network("asia"))
    if case == "asia_plain":
        return bn.fit(df, mechanism="none")
    mech = case.removeprefix("asia_")
    return bn.fit(df, mechanism=mech, epsilon=1.0, order=5.0, noise_source=UnsafeNoiseSeed(2))


def _model_of(case: str) -> Any:
    if case.startswith("hier"):
        return build_hierarchical(case)
    return build_network(case).model


_JAX_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def _watch_engine_compile(sampler: str) -> dict[str, float]:
    """Sum JAX's compile events inside the engine's sampling call (numpyro's or nutpie's)."""
    seen = {"inside": 0.0, "all": 0.0}
    if sampler not in ("numpyro", "nutpie-jax", "nutpie-jax-pytensor-grad"):
        return seen
    import jax.monitoring

    state = {"in_call": False}

    def listen(event: str, duration: float, **kwargs: Any) -> None:
        if event in _JAX_COMPILE_EVENTS:
            seen["all"] += duration
            if state["in_call"]:
                seen["inside"] += duration

    jax.monitoring.register_event_duration_secs_listener(listen)

    def wrap(module: Any, name: str) -> None:
        inner = getattr(module, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            state["in_call"] = True
            try:
                return inner(*args, **kwargs)
            finally:
                state["in_call"] = False

        setattr(module, name, call)

    if sampler == "numpyro":
        import pymc.sampling.jax as pymc_jax

        wrap(pymc_jax, "_sample_numpyro_nuts")
    else:
        import nutpie

        wrap(nutpie, "sample")
    return seen


def _sampler_kwargs(sampler: str) -> dict[str, Any]:
    if sampler in ("pymc", "pymc-fast-compile"):
        return {"nuts_sampler": "pymc"}
    if sampler == "numpyro":
        return {"nuts_sampler": "numpyro"}
    if sampler == "nutpie-numba":
        return {"nuts_sampler": "nutpie", "backend": "numba"}
    if sampler in ("nutpie-jax", "nutpie-jax-pytensor-grad"):
        gradient = "jax" if sampler == "nutpie-jax" else "pytensor"
        return {
            "nuts_sampler": "nutpie",
            "backend": "jax",
            "compile_kwargs": {"gradient_backend": gradient},
        }
    raise ValueError(f"unknown sampler {sampler!r}; choose from {', '.join(SAMPLERS)}")


def worker(
    case: str, draws: int, tune: int, chains: int, cores: int, sampler: str = "pymc"
) -> dict[str, float]:
    """Build and sample one case in this process (called in a subprocess)."""
    import pymc as pm

    t0 = time.perf_counter()
    model = _model_of(case)
    t_build = time.perf_counter() - t0
    seen = _watch_engine_compile(sampler)
    t0 = time.perf_counter()
    idata = pm.sample(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        model=model,
        random_seed=1,
        progressbar=False,
        compute_convergence_checks=False,
        **_sampler_kwargs(sampler),
    )
    t_total = time.perf_counter() - t0
    t_sampling = float(idata["posterior"].attrs["sampling_time"]) - seen["inside"]
    return {
        "build": t_build,
        "compile": t_total - t_sampling,
        "sampling": t_sampling,
        "jax_compile": seen["all"],
        "divergences": int(idata["sample_stats"]["diverging"].sum()),
    }


def stages(case: str) -> dict[str, float]:
    """Cold profile of one logp-and-gradient function: graph, rewrites, numba, first call."""
    import pytensor
    from pytensor.compile.debug.profiling import ProfileStats

    t0 = time.perf_counter()
    model = _model_of(case)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    logp = model.logp()
    values = model.value_vars
    grads = pytensor.grad(logp, values)
    t_graph = time.perf_counter() - t0
    t0 = time.perf_counter()
    fn = pytensor.function(values, [logp, *grads], profile=ProfileStats(atexit_print=False))
    t_function = time.perf_counter() - t0
    point = model.initial_point()
    args = [point[v.name] for v in values]
    t0 = time.perf_counter()
    fn(*args)
    t_first = time.perf_counter() - t0
    prof = fn.profile
    return {
        "build": t_build,
        "graph": t_graph,
        "rewrites": float(prof.rewriting_time),
        "link": float(prof.linker_time),
        "function": t_function,
        "first_call": t_first,
        "nodes": len(fn.maker.fgraph.apply_nodes),
    }


def _run(args: list[str], cache: Path, sampler: str = "pymc") -> dict[str, Any]:
    env = dict(os.environ)
    flags = f"base_compiledir={cache / 'pytensor'}"
    if sampler == "pymc-fast-compile":
        flags += ",mode=FAST_COMPILE"
    env["PYTENSOR_FLAGS"] = flags
    env["NUMBA_CACHE_DIR"] = str(cache / "numba")
    env["JAX_COMPILATION_CACHE_DIR"] = str(cache / "jax")
    out = subprocess.run(
        [sys.executable, __file__, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"worker {args} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--sampler", default="pymc", help=f"comma-separated, from {', '.join(SAMPLERS)}"
    )
    parser.add_argument("--stages", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--stage-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(
            json.dumps(
                worker(args.worker, args.draws, args.tune, args.chains, args.cores, args.sampler)
            )
        )
        return
    if args.stage_worker:
        print(json.dumps(stages(args.stage_worker)))
        return

    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"unknown case {c!r}; choose from {', '.join(CASES)}")
    samplers = [v for v in args.sampler.split(",") if v]
    for v in samplers:
        if v not in SAMPLERS:
            raise SystemExit(f"unknown sampler {v!r}; choose from {', '.join(SAMPLERS)}")
    common = [
        f"--draws={args.draws}",
        f"--tune={args.tune}",
        f"--chains={args.chains}",
        f"--cores={args.cores}",
    ]
    print(
        f"{args.chains} chains x ({args.tune} + {args.draws}), cores={args.cores}; "
        f"os.cpu_count()={os.cpu_count()}, load {os.getloadavg()[0]:.1f}"
    )
    header = (
        f"{'case':44s} {'sampler':24s} {'cache':5s} {'build':>6s} {'compile':>8s} "
        f"{'sampling':>9s} {'compile/sampling':>17s} {'div':>5s} {'load':>5s}"
    )
    print(header)
    print("-" * len(header), flush=True)
    results: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="first-sample-") as tmp:
        for v in samplers:
            for c in cases:
                cache = Path(tmp) / f"{v}-{c}"
                run = [f"--worker={c}", f"--sampler={v}", *common]
                results[v, c] = {}
                for kind in ("cold", "warm"):
                    r = _run(run, cache, v)
                    results[v, c][kind] = r
                    print(
                        f"{CASES[c]:44s} {v:24s} {kind:5s} {r['build']:6.1f} "
                        f"{r['compile']:8.1f} {r['sampling']:9.1f} "
                        f"{r['compile'] / r['sampling']:17.2f} {r['divergences']:5d} "
                        f"{os.getloadavg()[0]:5.1f}",
                        flush=True,
                    )
        stage_rows = {}
        if args.stages:
            for c in cases:
                if c in ANCHOR or c.endswith("plain"):
                    stage_rows[c] = _run([f"--stage-worker={c}"], Path(tmp) / f"{c}-stages")

    print()
    for v in samplers:
        for c, anchor in ANCHOR.items():
            if (v, c) in results and (v, anchor) in results:
                a, b = results[v, c]["cold"], results[v, anchor]["cold"]
                print(
                    f"{v}: cold compile of {c} / {anchor}: {a['compile'] / b['compile']:.2f}; "
                    f"sampling: {a['sampling'] / b['sampling']:.2f}"
                )
    for c in cases:
        met = [
            f"{v} ({results[v, c]['cold']['compile']:.1f} s / "
            f"{results[v, c]['cold']['sampling']:.1f} s)"
            for v in samplers
            if results[v, c]["cold"]["compile"] <= results[v, c]["cold"]["sampling"]
        ]
        print(f"{c}: cold compile <= sampling with: {', '.join(met) or 'none'}")
    if stage_rows:
        print()
        print(
            f"{'cold stages of one logp+grad function':40s} {'build':>6s} {'graph':>6s} "
            f"{'rewrite':>8s} {'link':>6s} {'1st call':>9s} {'nodes':>6s}"
        )
        for c, s in stage_rows.items():
            print(
                f"{c:40s} {s['build']:6.1f} {s['graph']:6.1f} {s['rewrites']:8.1f} "
                f"{s['link']:6.1f} {s['first_call']:9.1f} {s['nodes']:6d}"
            )


if __name__ == "__main__":
    main()
