"""Benchmark: Adult's one-minute target over a round of runs, each compiled afresh.

The target (minimum bulk ESS >= 400 over the CPT entries of rows holding >= 20 records, in < 60 s
of wall time with compilation, 2 chains on the 2-core machine) is judged on the first run after
installing, which compiles the sampler's kernels. ``bench_da.py --cold`` compiles into a fresh
numba cache once per process, so a round over several releases and MCMC seeds needs one process
per run: this script starts ``bench_da.py --cold --json --wall-budget B`` for every (release,
seed) in turn, one after another (runs side by side would share the two cores), reads each run's
``RUN`` line and prints a table of the runs and how many met the target.

The peer of the target (NUTS on the per-family model, ``bench_da.py --family-nuts``) is not run
here: it takes minutes per run and does not change between rounds.

Run: ``python benchmarks/bench_da_round.py`` (releases 11-13 x MCMC seeds 1-4, a budget of 57 s);
``--releases 11 --seeds 1 2`` for a shorter round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# the Adult target, as bench_da.py judges it (this script runs from the same folder)
from bench_da import _TARGET_ESS as TARGET_ESS
from bench_da import _TARGET_WALL as TARGET_WALL


def run_once(release: int, seed: int, budget: float, draws: int, tune: int) -> dict:
    """One run of ``bench_da.py`` in a new process, compiled afresh: its ``RUN`` record."""
    script = Path(__file__).with_name("bench_da.py")
    command = [
        sys.executable,
        str(script),
        "--draws",
        str(draws),
        "--tune",
        str(tune),
        "--chains",
        "2",
        "--release-seed",
        str(release),
        "--seed",
        str(seed),
        "--cold",
        "--json",
        "--wall-budget",
        str(budget),
    ]
    # the fresh numba cache bench_da.py makes goes into a directory removed after the run
    with tempfile.TemporaryDirectory(prefix="bench-da-round-") as scratch:
        env = {**os.environ, "TMPDIR": scratch}
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    for line in done.stdout.splitlines():
        if line.startswith("RUN "):
            return json.loads(line[4:])
    raise RuntimeError(
        f"bench_da.py gave no RUN line for release {release}, seed {seed} (exit "
        f"{done.returncode}):\n{done.stderr[-2000:]}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, nargs="+", default=[11, 12, 13])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument(
        "--wall-budget",
        type=float,
        default=57.0,
        help="seconds each run samples for, its setup included (the rest of the minute "
        "covers the conversion to ArviZ)",
    )
    parser.add_argument("--draws", type=int, default=1600, help="the most draws a chain keeps")
    parser.add_argument("--tune", type=int, default=50)
    args = parser.parse_args(argv)
    if args.wall_budget <= 0:
        raise SystemExit("--wall-budget must be positive")
    found = []
    print("| release | MCMC seed | started | draws per chain | min bulk ESS | wall s | met |")
    print("|---|---|---|---|---|---|---|")
    for release in args.releases:
        for seed in args.seeds:
            started = time.strftime("%H:%M:%S")
            r = run_once(release, seed, args.wall_budget, args.draws, args.tune)
            met = r["min_ess"] >= TARGET_ESS and r["wall"] < TARGET_WALL
            found.append((r, met))
            print(
                f"| {release} | {seed} | {started} | {r['draws']} | {r['min_ess']:.0f} "
                f"| {r['wall']:.1f} | {'yes' if met else 'no'} |",
                flush=True,
            )
    ess = [r["min_ess"] for r, _ in found]
    draws = [r["draws"] for r, _ in found]
    print(
        f"\nESS >= {TARGET_ESS} in < {TARGET_WALL:.0f} s wall, compiled afresh: met in "
        f"{sum(met for _, met in found)} of {len(found)}; min bulk ESS {min(ess):.0f}-"
        f"{max(ess):.0f} (median {statistics.median(ess):.0f}) on {min(draws)}-{max(draws)} "
        "draws per chain"
    )


if __name__ == "__main__":
    main()
