"""The calibration study's data-augmentation method (experiments/calibration_study.py).

The default run fits one short replicate per release kind on asia and checks what a replicate
records, that ``--resume`` (and ``--skip-done-in`` another file) fits nothing more and that the
report is rebuilt from the file; the full study (every network, release kind, ε and N, 100
replicates, coverage within ±5 points) is marked slow. The default run also checks the
committed records of that study (``experiments/results/``) against the same target.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _study():
    full = "_experiments_calibration_study"
    if full not in sys.modules:
        path = ROOT / "experiments" / "calibration_study.py"
        spec = importlib.util.spec_from_file_location(full, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules[full]


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_short_augmentation_run_records_resumes_and_reports(tmp_path):
    study = _study()
    out = tmp_path / "aug.jsonl"
    args = [
        "--networks", "asia", "--ns", "100", "--epsilons", "1",
        "--noise", "discrete_laplace", "dirichlet", "--methods", "augmentation", "non-private",
        "--replicates", "1", "--chains", "2", "--draws", "12", "--tune", "6", "--seed", "3",
        "--out", str(out), "--no-figures", "--tolerance", "0.05",
    ]  # fmt: skip
    results = study.main(args)
    assert set(results) == {"asia|discrete_laplace|1|100", "asia|dirichlet|1|100"}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4
    entries = 36  # asia's CPT entries (18 free parameters)
    for r in records:
        assert len(r["ranks"]) == entries
        assert all(0 <= k <= study.N_RANK for k in r["ranks"])
        assert len(r["tarp"]) == study.aug.N_TARP_REFERENCES
        assert all(0.0 <= f <= 1.0 for f in r["tarp"])
        if r["method"] == "augmentation":
            assert r["chains"] == 2 and r["draws"] == 12
            assert r["sampler"] == "data_augmentation"
            assert r["min_ess"] > 0 and np.isfinite(r["max_rhat"])
            defaults = {"dirichlet": "gibbs,pair,subtree,child_row"}  # the sampler's defaults
            assert r["moves"] == defaults.get(r["noise"], "gibbs,gibbs,subtree,diffuse_pair")
            assert all(a is None or 0.0 <= a <= 1.0 for a in r["accept"].values())
    assert study.main([*args, "--resume"]) == results
    assert len(out.read_text().splitlines()) == 4
    # another file's records count as done too: a new output file gets nothing
    other = tmp_path / "more.jsonl"
    elsewhere = [str(other) if a == str(out) else a for a in args]
    assert study.main([*elsewhere, "--skip-done-in", str(out)]) == {}
    assert not other.exists()
    again = study.main(["--report", "--from-json", str(out), "--no-figures"])
    assert again == results
    # --report with --noise (or --networks) keeps only those records
    only = study.main(["--report", "--from-json", str(out), "--no-figures", "--noise", "dirichlet"])
    assert only == {"asia|dirichlet|1|100": results["asia|dirichlet|1|100"]}
    assert (
        study.main(["--report", "--from-json", str(out), "--no-figures", "--networks", "child"])
        == {}
    )


def test_nuts_methods_refuse_the_dirichlet_release():
    study = _study()
    setting = study.Setting("asia", 100, 1.0, "dirichlet")
    with pytest.raises(ValueError, match="gaussian"):
        setting.replicate(0, 1, ["per-family"], 10, 10)
    with pytest.raises(ValueError, match="noise"):
        study.Setting("asia", 100, 1.0, "uniform")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_full_augmentation_calibration_study(tmp_path):
    """100 replicates of every setting; coverage within ±5 points of nominal in each."""
    study = _study()
    results = study.main(
        [
            "--replicates", "100",
            "--networks", "asia", "sachs", "child", "alarm", "insurance",
            "--noise", "discrete_gaussian", "discrete_laplace", "dirichlet",
            "--ns", "100", "1000", "10000", "--epsilons", "0.1", "1",
            "--methods", "augmentation", "--chains", "2", "--tune", "40", "--draws", "80",
            "--out", str(tmp_path / "augmentation.jsonl"), "--no-figures",
        ]
    )  # fmt: skip
    assert len(results) == 5 * 3 * 3 * 2
    for rows in results.values():
        assert rows["augmentation"]["replicates"] == 100
        for q in (50, 80, 95):
            assert abs(rows["augmentation"][f"cov{q}"] - q / 100) <= 0.05


def test_the_committed_study_meets_the_coverage_target():
    """The committed records of the data-augmentation study (experiments/results/): every one of
    the 90 settings (5 networks × 3 release kinds × ε ∈ {0.1, 1} × N ∈ {10², 10³, 10⁴}) holds
    replicates 0–99 of the augmentation method, and its coverage of the central 50/80/95 %
    intervals is within ±5 points of nominal; the exact non-private posterior of the same
    replicates is there too. Read from the files as the report reads them (a later record of a
    (setting, replicate, method) wins)."""
    report = _study().reporting
    paths = sorted((ROOT / "experiments" / "results").glob("calibration_augmentation*.jsonl"))
    grouped = report.group(report.load_records(paths))
    expected = {
        f"{net}|{kind}|{eps}|{n}"
        for net in ("asia", "sachs", "child", "alarm", "insurance")
        for kind in ("discrete_gaussian", "discrete_laplace", "dirichlet")
        for eps in ("0.1", "1")
        for n in (100, 1000, 10000)
    }
    assert expected <= set(grouped)
    results = {k: report.summarise(grouped[k]) for k in sorted(expected)}
    for key in sorted(expected):
        reps = sorted(r["rep"] for r in grouped[key] if r["method"] == "augmentation")
        assert reps == list(range(100)), key
        assert results[key]["augmentation"]["replicates"] == 100
        assert results[key]["non-private"]["replicates"] >= 100, key
    assert report.outside_target(results, tol=0.05, methods=("augmentation",)) == []
