"""Benchmark: Adult's one-minute target over a round of runs, each compiled afresh.

The target (minimum bulk ESS >= 400 over the CPT entries of rows holding >= 20 records, in < 60 s
of wall time with compilation, 2 chains on the 2-core machine) is judged on the first run after
installing, which compiles the sampler's kernels. ``bench_da.py --cold`` compiles into a fresh
numba cache once per process, so a round over several releases and MCMC seeds needs one process
per run: this script starts ``bench_da.py --cold --json --wall-budget B`` for every (release,
seed) in turn, one after another (runs side by side would share the two cores), reads each run's
``RUN`` line and prints a table of the runs and how many met the target.

Draws per chain in the minute follow the machine's speed, which on the shared 2-core machine
moves by a third within an afternoon. ``--probe`` times a fixed piece of work before and after
the round (:func:`probe`: the default moves on release 11 from the same seed, kernels cached, in
a process of its own), so that rounds of different days can be told apart by the machine as well
as by the code.

The peer of the target (NUTS on the per-family model, ``bench_da.py --family-nuts``) is not run
here: it takes minutes per run and does not change between rounds.

Run: ``python benchmarks/bench_da_round.py`` (releases 11-13 x MCMC seeds 1-4, a budget of 57 s);
``--releases 11 --seeds 1 2`` for a shorter round; ``--probe`` adds the machine's speed.
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


_PROBE = """
import time, warnings
warnings.filterwarnings("ignore")
import pymc_rdp as pmr
from pymc_rdp import datasets
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed
structure = dict(datasets.ADULT_DAG)
df = datasets.adult_paper("train")[list(structure)].reset_index(drop=True)
bn = pmr.BayesianNetwork(structure, states="from-data").fit(
    df, mechanism="gaussian", epsilon=1.0, delta=1e-6, public_total=len(df),
    noise_source=UnsafeNoiseSeed(11),
)
da = DataAugmentation.from_network(bn)
da.run_chain(1, 21, 1)  # compiles the kernels into the user's cache if they are not there
for _ in range(REPEATS):
    t0 = time.perf_counter()
    da.run_chain(DRAWS, 21, 1)
    print("PROBE", (time.perf_counter() - t0) / (DRAWS + 21) * 1e3, flush=True)
"""


def package_checkout(checkout: Path | str) -> Path:
    """``checkout`` resolved, once it is known to hold the package (``pymc_rdp/__init__.py``).

    Raises
    ------
    ValueError
        ``checkout`` holds no ``pymc_rdp`` package.
    """
    where = Path(checkout).resolve()
    if not (where / "pymc_rdp" / "__init__.py").is_file():
        raise ValueError(f"checkout: no pymc_rdp package in {checkout}")
    return where


def probe(repeats: int = 3, draws: int = 40, checkout: Path | None = None) -> float:
    """The machine's speed: the median over ``repeats`` of the milliseconds per iteration of one
    chain of the default moves on Adult's release 11 (``UnsafeNoiseSeed(11)``), 21 tuning
    iterations and ``draws`` kept from MCMC seed 1, kernels cached, in a process of its own.
    The same seed gives the same work, so for one version of the code the figure moves with the
    machine only.

    ``checkout``: a directory holding another version of the package (``pymc_rdp/`` inside it),
    imported in the probe's process ahead of the installed one (``PYTHONPATH``); None times the
    installed package."""
    script = _PROBE.replace("REPEATS", str(repeats)).replace("DRAWS", str(draws))
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(package_checkout(checkout)), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, env=env
    )
    times = [
        float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("PROBE")
    ]
    if len(times) != repeats:
        raise RuntimeError(f"the probe failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return statistics.median(times)


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
    parser.add_argument(
        "--probe",
        action="store_true",
        help="time a fixed piece of work before and after the round (the machine's speed)",
    )
    args = parser.parse_args(argv)
    if args.wall_budget <= 0:
        raise SystemExit("--wall-budget must be positive")
    before = probe() if args.probe else None
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
    if before is not None:
        after = probe()
        print(
            f"machine: {before:.1f} ms per iteration of the probe before the round, {after:.1f} "
            "after (the default moves on release 11, MCMC seed 1, kernels cached)"
        )


if __name__ == "__main__":
    main()
