"""Benchmark: the joint likelihood as an observed private node against the same Potential.

The node (:class:`pymc_rdp.distributions.joint_releases.JointReleases`) receives the CPTs as one
concatenated vector and slices them back; the Potential form passes the CPT variables directly.
Both models hold the same releases of a bundled network (Gaussian noise σ = 20, N = 10,000);
reported: compile time of ``compile_logp`` + ``compile_dlogp`` (PyTensor's default numba linker)
and the median time of one gradient evaluation at a few points, with the ratio node / Potential,
measured side by side in one process.

Run: ``python benchmarks/bench_joint_node.py --network asia --repeats 300``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time

import numpy as np


def _models(network: str, n: int, sigma: float):
    import pymc as pm

    from pymc_rdp.bn.structure import family_table, forward_sample, parse_structure
    from pymc_rdp.datasets import load_network
    from pymc_rdp.distributions.joint_likelihood import (
        build_joint_model,
        family_layout,
        joint_noisy_counts_logp,
    )

    st, states = parse_structure(load_network(network))
    cards = {v: len(states[v]) for v in st.order}
    rng = np.random.default_rng(0)
    cpts = {
        v: rng.dirichlet(np.ones(cards[v]), size=int(np.prod([cards[p] for p in st.parents[v]])))
        for v in st.order
    }
    codes = forward_sample(st, cpts, cards, n, rng)
    releases = {
        v: family_table(codes, v, st.parents[v], cards) + rng.normal(0, sigma, (len(c), cards[v]))
        for v, c in cpts.items()
    }
    node = build_joint_model(st, cards, releases, n=n, noise="gaussian", scale=sigma)
    lay = family_layout(st, cards)
    y = np.concatenate([releases[v].reshape(-1) for v in st.order])
    with pm.Model() as potential:
        theta = {
            v: pm.Dirichlet(f"{v}_cpt", a=np.ones(cpts[v].shape), shape=cpts[v].shape)
            for v in st.order
        }
        logp = joint_noisy_counts_logp(
            pm.Data("releases", y), float(n), st, cards, theta, sigma=sigma, layout=lay
        )
        pm.Potential("joint_releases", logp)
    return node, potential


def _measure(model, points, repeats: int) -> tuple[float, float, float]:
    start = time.perf_counter()
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    compile_s = time.perf_counter() - start
    values = [logp(p) for p in points]
    times = []
    for _ in range(repeats):
        for p in points:
            t0 = time.perf_counter()
            dlogp(p)
            times.append(time.perf_counter() - t0)
    return compile_s, float(np.median(times)), float(values[0])


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="asia")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args(argv)
    node, potential = _models(args.network, args.n, 20.0)
    rng = np.random.default_rng(1)
    start = node.initial_point()
    points = [{k: v + rng.normal(0, 0.2, np.shape(v)) for k, v in start.items()} for _ in range(3)]
    c_node, t_node, v_node = _measure(node, points, args.repeats)
    c_pot, t_pot, v_pot = _measure(potential, points, args.repeats)
    out = {
        "compile_node_s": c_node,
        "compile_potential_s": c_pot,
        "dlogp_node_us": 1e6 * t_node,
        "dlogp_potential_us": 1e6 * t_pot,
        "ratio_dlogp": t_node / t_pot,
        "logp_difference": abs(v_node - v_pot),
    }
    for k, v in out.items():
        print(f"{k:>22}: {v:.4g}")
    return out


if __name__ == "__main__":
    main()
