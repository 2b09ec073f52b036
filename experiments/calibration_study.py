"""Simulation-based calibration of private Bayesian-network posteriors.

For each replicate: CPT rows are drawn from the prior ``Dirichlet(1)``, ``N`` records are forward
sampled, every family table is released with the Gaussian (or Laplace) mechanism at a total budget
ε at order λ = 5 (ε/K per family, as :class:`pymc_rdp.BayesianNetwork` does), and the CPTs are
inferred by

* ``joint``: the joint linear-query model (:mod:`pymc_rdp.distributions.joint_likelihood`; Laplace
noise
  as a scale mixture of normals), NUTS;
* ``per-family``: :class:`pymc_rdp.BayesianNetwork`'s noise-aware model (one ``NoisyCounts``
  term per family), NUTS, on the same releases;
* ``naive``: the clipped and normalised noisy tables of the same releases (a point estimate: no
  intervals);
* ``non-private``: the exact conjugate posterior ``Dirichlet(1 + counts)``;
* ``augmentation``: the exact posterior given the releases by data augmentation
  (``BayesianNetwork.fit(...).sample(sampler="augmentation")``, :class:`pymc_rdp.DataAugmentation`
  with its default moves, ``--chains`` chains of ``--tune`` + ``--draws`` iterations), the number
  of records declared public. It fits the release kinds ``discrete_gaussian``,
  ``discrete_laplace`` and ``dirichlet`` (``--noise``): the family tables released exactly as
  ``BayesianNetwork.fit(mechanism="gaussian" | "laplace" | "dirichlet")`` releases them (the
  integer mechanisms, and the Dirichlet mechanism's released CPT rows), and the kinds ``gaussian``
  and ``laplace`` of the NUTS methods with the same mechanisms
  (:mod:`calibration_augmentation`, beside this script).

Per replicate and method the record also holds the TARP fractions of the posterior draws for
eight reference points drawn from the prior (Lemos et al. 2023, "Sampling-based accuracy testing
of posterior estimators for general inference"; ``calibration_augmentation.tarp_fractions``), and
for the data-augmentation fits the smallest bulk ESS, the largest r̂ over the CPT entries and the
moves' acceptance rates.

If the inference is calibrated, the true CPT entry falls in the central q-interval of its
posterior with probability q, and its rank among L posterior draws is uniform on 0..L
(Talts et al. 2018, "Validating Bayesian inference algorithms with simulation-based
calibration"). Reported: coverage of the central 50/80/95% intervals over all CPT entries and
replicates (with a standard error from the spread of the per-replicate coverages, which accounts
for the correlation of the entries within a replicate), SBC rank histograms, the mean
KL(true row ‖ posterior-mean row), the mean held-out log-likelihood per record (2,000 fresh
records from the true network), NUTS sampling time and minimum ESS (over the CPT entries) per
second.

Every replicate is seeded by (seed, setting, replicate) alone, so that the methods see the same
truth and the same releases whichever of them run and in whichever order, and an interrupted run
resumes where it stopped. Each finished (setting, replicate, method) is appended to the
JSON-lines file ``--out``; ``--resume`` skips what it holds; ``--report`` rebuilds the table and
the figures from such files without fitting anything. Each model structure is compiled once
(``calibration_templates.ModelTemplate``); the joint model is sampled with nutpie and the
per-family model with PyMC's NUTS by default (``--joint-sampler``, ``--family-sampler``), one chain.

This script is the command line; the work is done by the modules beside it, each loaded by its
path: ``calibration_replicates.py`` (one replicate of a setting), ``calibration_templates.py``
(the compiled NUTS templates), ``calibration_augmentation.py`` (the data-augmentation fits and
TARP) and ``calibration_report.py`` (summaries, tables and figures). The names the tests use are
re-exported here.

Run::

    python experiments/calibration_study.py --replicates 10 --out results.jsonl
    python experiments/calibration_study.py --report --from-json results.jsonl

    python experiments/calibration_study.py --methods augmentation non-private \
        --noise discrete_gaussian discrete_laplace dirichlet --chains 2 --tune 40 --draws 80 \
        --out experiments/results/calibration_augmentation.jsonl --resume --tolerance 0.05 \
        --figure-prefix calibration_augmentation

Default grid: asia, Gaussian, N ∈ {100, 1000, 10000}, ε ∈ {0.1, 1}. The full study
(``--networks asia sachs child --noise gaussian laplace --replicates 100``) takes days on one core.
Figures: ``docs/figures/{prefix}_coverage.png``, ``{prefix}_ranks_{network}.png`` and
``{prefix}_tarp.png`` (``--figure-prefix``, default ``calibration``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import logging
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _sibling(name: str):
    """The module ``experiments/{name}.py`` (the scripts are loaded by their paths)."""
    import importlib.util
    import sys

    full = f"_experiments_{name}"
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules[full]


replicates = _sibling("calibration_replicates")
reporting = _sibling("calibration_report")
aug = replicates.aug
# re-exported: the names the tests and the docs use
LEVELS = replicates.LEVELS
METHODS = replicates.METHODS
INTERVAL_METHODS = replicates.INTERVAL_METHODS
NUTS_METHODS = replicates.NUTS_METHODS
N_RANK = replicates.N_RANK
N_HELDOUT = replicates.N_HELDOUT
NOISE_KINDS = replicates.NOISE_KINDS
setting_key = replicates.setting_key
Setting = replicates.Setting
run_setting = replicates.run_setting
summarise = reporting.summarise
load_records = reporting.load_records
group = reporting.group
paired = reporting.paired
markdown_table = reporting.markdown_table
pooled_table = reporting.pooled_table
time_table = reporting.time_table
outside_target = reporting.outside_target
figures = reporting.figures
report = reporting.report


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description="SBC of private Bayesian-network posteriors")
    p.add_argument(
        "--networks",
        nargs="+",
        default=None,
        help="networks to fit (default: asia); with --report, only these networks' records",
    )
    p.add_argument("--ns", nargs="+", type=int, default=[100, 1000, 10000])
    p.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0])
    p.add_argument(
        "--noise",
        nargs="+",
        default=None,
        choices=list(NOISE_KINDS),
        help="release kinds to fit (default: gaussian); with --report, only these kinds' records",
    )
    p.add_argument("--replicates", type=int, default=5)
    p.add_argument(
        "--first-replicate",
        type=int,
        default=0,
        help="index of the first replicate (replicates are seeded by their index)",
    )
    p.add_argument(
        "--chains",
        type=int,
        default=2,
        help="chains of the data-augmentation sampler (the NUTS methods run one)",
    )
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--tune", type=int, default=200)
    p.add_argument("--joint-sampler", default="nutpie", choices=["pymc", "nutpie"])
    p.add_argument("--family-sampler", default="pymc", choices=["pymc", "nutpie"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument(
        "--out", default=None, help="append every finished record to this JSON-lines file"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="skip the (setting, replicate, method) already in --out",
    )
    p.add_argument(
        "--skip-done-in",
        nargs="+",
        default=[],
        metavar="FILE",
        help="also skip the (setting, replicate, method) already in these JSON-lines files",
    )
    p.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="start no new replicate after this many minutes",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="no fitting: the table and figures from --from-json files",
    )
    p.add_argument("--from-json", nargs="+", default=None, help="JSON-lines files for --report")
    p.add_argument("--json", default=None, help="also write the summary table to this JSON file")
    p.add_argument("--figures-dir", default=str(ROOT / "docs" / "figures"))
    p.add_argument("--no-figures", action="store_true")
    p.add_argument("--figure-prefix", default="calibration", help="file names of the figures")
    p.add_argument("--tolerance", type=float, default=0.08, help="coverage target: nominal ± this")
    args = p.parse_args(argv)
    figdir = None if args.no_figures else Path(args.figures_dir)
    if args.report:
        records = [
            r
            for r in load_records(args.from_json or [args.out])
            if (args.networks is None or r["network"] in args.networks)
            and (args.noise is None or r["noise"] in args.noise)
        ]
        results = report(records, figdir, args.figure_prefix, args.tolerance)
        if args.json:
            Path(args.json).write_text(json.dumps({"results": results}, indent=1))
        return results

    args.networks = args.networks or ["asia"]
    args.noise = args.noise or ["gaussian"]
    warnings.filterwarnings("ignore")
    for name in ("pymc", "pymc.sampling.mcmc", "pymc.stats.convergence"):
        logging.getLogger(name).setLevel(logging.ERROR)
    done_files = list(args.skip_done_in)
    if args.resume and args.out and Path(args.out).exists():
        done_files.append(args.out)
    done = {(r["key"], r["rep"], r["method"]) for r in load_records(done_files)}
    start = time.perf_counter()
    settings = {}
    records = []
    # replicate-major: a stopped run leaves every setting with about the same number of replicates
    for rep in range(args.first_replicate, args.first_replicate + args.replicates):
        for net in args.networks:
            for noise in args.noise:
                for eps in args.epsilons:
                    for n in args.ns:
                        key = setting_key(net, noise, eps, n)
                        todo = [m for m in args.methods if (key, rep, m) not in done]
                        if not todo:
                            continue
                        if (
                            args.budget_minutes is not None
                            and time.perf_counter() - start > 60 * args.budget_minutes
                        ):
                            print("budget spent: stopping", flush=True)
                            return _finish(args, records, figdir)
                        if key not in settings:
                            settings[key] = Setting(net, n, eps, noise)
                        t0 = time.perf_counter()
                        recs = settings[key].replicate(
                            rep,
                            args.seed,
                            todo,
                            args.draws,
                            args.tune,
                            {"joint": args.joint_sampler, "per-family": args.family_sampler},
                            chains=args.chains,
                        )
                        records.extend(recs)
                        if args.out:
                            with open(args.out, "a") as fh:
                                for r in recs:
                                    fh.write(json.dumps(r) + "\n")
                        walls = " ".join(f"{r['method']}={r['wall_s']:.1f}s" for r in recs)
                        print(
                            f"{key} rep {rep} ({time.perf_counter() - t0:.0f} s: {walls})",
                            flush=True,
                        )
    return _finish(args, records, figdir)


def _finish(args, records, figdir) -> dict:
    if args.out:  # the table of everything in the file, not only this run's part
        records = load_records([args.out])
    results = report(records, figdir, args.figure_prefix, args.tolerance)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    return results


if __name__ == "__main__":
    main()
