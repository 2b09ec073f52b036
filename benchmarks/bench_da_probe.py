"""Benchmark: the Adult probe of ``bench_da_round.py`` on several versions of the code, in turn.

A round's draws per chain in the minute move with the machine as much as with the code, and one
probe (``bench_da_round.py --probe``) times one version only. This script times the same fixed
piece of work (:func:`bench_da_round.probe`: one chain of the default moves on Adult's release 11
from MCMC seed 1, kernels cached, the median of three) for each checkout given, one after
another, and repeats the cycle, so that every version meets the machine's swings alike. A
version that is slower in every cycle is slower; versions that trade places are the same within
the machine's noise.

Each checkout is a directory holding the package (``pymc_rdp/``), such as a ``git clone`` at
an older commit; it is imported ahead of the installed package. Its first probe also compiles
its kernels into its own numba cache, and that compilation is not timed. The probe's script
calls the package as it is now (``DataAugmentation.from_network``, ``run_chain(draws, tune,
seed)``, ``UnsafeNoiseSeed``, the bundled Adult data); it ran on checkouts from ``9995577``
(2026-12-06) on, and an older checkout may lack one of these.

Run: ``python benchmarks/bench_da_probe.py /path/to/old /path/to/new --cycles 3``; ``.`` is this
checkout.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

# the probe as the round runs it (this script runs from the same folder)
from bench_da_round import package_checkout, probe


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", type=Path, nargs="+", help="directories holding pymc_rdp/")
    parser.add_argument("--cycles", type=int, default=3, help="times every checkout is probed")
    args = parser.parse_args(argv)
    if args.cycles < 1:
        raise SystemExit("--cycles must be at least 1")
    for checkout in args.checkouts:  # every checkout checked before the first is timed
        try:
            package_checkout(checkout)
        except ValueError as error:
            parser.error(str(error))
    times: dict[Path, list[float]] = {c: [] for c in args.checkouts}
    print("| cycle | checkout | ms per iteration |")
    print("|---|---|---|")
    for cycle in range(1, args.cycles + 1):
        for checkout in args.checkouts:
            ms = probe(checkout=checkout)
            times[checkout].append(ms)
            print(f"| {cycle} | {checkout} | {ms:.1f} |", flush=True)
    first = statistics.median(times[args.checkouts[0]])
    print()
    for checkout, found in times.items():
        median = statistics.median(found)
        print(
            f"{checkout}: the median {median:.1f} ms per iteration ({median / first:.2f}x the "
            f"first checkout's), cycles {', '.join(f'{t:.1f}' for t in found)}"
        )


if __name__ == "__main__":
    main()
