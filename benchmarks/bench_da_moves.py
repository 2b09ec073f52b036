"""Benchmark: where a data-augmentation chain's time goes, move by move.

A minimum ESS per second is the product of how far an iteration moves the slowest entries and
what the iteration costs; this script measures the second, split by the moves of the schedule.
It runs one chain of :class:`~pymc_rdp.distributions.augmentation_chain.ChainMoves` on a network's
Gaussian release (ε = 1 at δ = 1e-6, the same release in every run with ``--release-seed``), the
kernels compiled first by an untimed short chain, and times every slot of the schedule (a move
listed twice, as the default's two heat-bath sweeps, is two slots) and θ's draw separately:
milliseconds per iteration over the ``--draws`` iterations after ``--tune``, and each slot's share.

The loop is that of ``DataAugmentation.run_chain`` without its compile helper and clock; the moves,
their settings and their adaptation are the chain's own, so the draws are those of
``run_chain(draws, tune, seed)``. The peer of a move is the rest of the schedule: the table is read
across one run, on one machine, at one moment.

``--by-node 8`` adds the subtree moves' time of the eight costliest nodes (each node's sweep is
one call of its kernel).

Run: ``python benchmarks/bench_da_moves.py --network insurance --release-seed 11``;
``--moves gibbs+gibbs+subtree+transfer`` for another schedule; ``--n`` for another ``N``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import defaultdict

# the benchmarks' data, as bench_da.py loads it (this script runs from the same folder)
from bench_da import benchmark_data


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="insurance", help="'adult' or a bundled network")
    parser.add_argument(
        "--n", type=int, default=None, help="records (Adult: all 32,561; networks: 10,000)"
    )
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="the chain's seed")
    parser.add_argument("--release-seed", type=int, default=11)
    parser.add_argument("--moves", default="default", help="'+'-joined moves, or 'default'")
    parser.add_argument(
        "--by-node",
        type=int,
        default=0,
        help="also the subtree moves' time of the N costliest nodes",
    )
    args = parser.parse_args(argv)
    if args.draws < 1 or args.tune < 0:
        raise SystemExit("--draws must be at least 1 and --tune at least 0")
    warnings.filterwarnings("ignore")

    import pymc_rdp as pmr
    from pymc_rdp.distributions.augmentation_chain import ChainMoves
    from pymc_rdp.distributions.data_augmentation import DataAugmentation
    from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

    structure, states, df = benchmark_data(args.network, args.n)
    bn = pmr.BayesianNetwork(structure, states=states).fit(
        df,
        mechanism="gaussian",
        epsilon=1.0,
        delta=1e-6,
        public_total=len(df),
        noise_source=UnsafeNoiseSeed(args.release_seed),  # a simulation, never a release
    )
    options = {} if args.moves == "default" else {"moves": tuple(args.moves.split("+"))}
    da = DataAugmentation.from_network(bn, **options)
    da.run_chain(2, 3, args.seed)  # every kernel compiled (or loaded from the cache), untimed

    # the start run_chain makes from the same seed
    chain = ChainMoves(da, da._chain_start(args.seed), args.tune, adapt=True)
    by_node: dict[str, float] = defaultdict(float)
    if args.by_node:  # the chain calls the kernel through its module, once per node
        from pymc_rdp.distributions import augmentation_subtree as kt

        sweep = kt.subtree_sweep

        def timed(v, *rest):
            t0 = time.perf_counter()
            out = sweep(v, *rest)
            by_node[da.nodes[v]] += time.perf_counter() - t0
            return out

        kt.subtree_sweep = timed
    slots = [f"{m} ({da.moves[:i].count(m) + 1})" for i, m in enumerate(da.moves)]
    spent: dict[str, float] = defaultdict(float)
    start = time.perf_counter()
    for it in range(args.tune + args.draws):
        if it == args.tune:
            spent.clear()
            by_node.clear()
            start = time.perf_counter()
        chain.begin(it)
        runs: dict[str, int] = {}
        for move, slot in zip(da.moves, slots, strict=True):
            t0 = time.perf_counter()
            rate = chain.run(move, it, later=bool(runs.get(move)))
            spent[slot] += time.perf_counter() - t0
            if rate is not None:
                runs[move] = runs.get(move, 0) + 1
        if it >= args.tune:
            t0 = time.perf_counter()
            chain.draw_theta()
            spent["θ's draw"] += time.perf_counter() - t0
    total = time.perf_counter() - start
    per = 1e3 / args.draws
    print(
        f"{args.network}: N = {bn.n_records}, release {args.release_seed}, chain seed "
        f"{args.seed}, {args.draws} iterations after {args.tune}: {total * per:.1f} ms each"
    )
    print("| move | ms per iteration | share |")
    print("|---|---|---|")
    for slot, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"| {slot} | {seconds * per:.2f} | {seconds / total:.1%} |")
    other = total - sum(spent.values())
    print(f"| the loop itself | {other * per:.2f} | {other / total:.1%} |")
    if by_node:
        print()
        print("| node (states, descendants) | subtree moves, ms per iteration | share |")
        print("|---|---|---|")
        costliest = sorted(by_node.items(), key=lambda kv: -kv[1])[: args.by_node]
        for node, seconds in costliest:
            v = da.nodes.index(node)
            about = f"{len(da.states[node])}, {int(chain._n_desc[v])}"
            print(f"| {node} ({about}) | {seconds * per:.2f} | {seconds / total:.1%} |")


if __name__ == "__main__":
    main()
