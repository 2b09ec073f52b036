"""Tests of the ``pymc-rdp`` command through its entry point (subprocess and ``main(argv)``)."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pymc_rdp import Accountant, GaussianMechanism, LaplaceMechanism
from pymc_rdp.cli.main import main

DEMO_FILES = [
    "posterior.nc",
    "ledger.json",
    "releases.json",
    "report.md",
    "privacy_utility.csv",
    "figures/rdp_curve.png",
    "figures/epsilon_delta.png",
    "figures/privacy_utility.png",
    "figures/cpt_age.png",
    "figures/cpt_sex.png",
    "figures/cpt_income.png",
]
ADULT_NODES = ["age", "sex", "education", "occupation", "capital-gain", "capital-loss", "income"]


def _run(*args: str, cwd: Path | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
    env.pop("PYMC_RDP_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "pymc_rdp.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def _one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("pymc-rdp: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "out"
    proc = _run("demo", "--fast", "--seed", "3", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "(ε, δ) = (1, 1e-06)" in proc.stdout
    return out


# ------------------------------------------------------------------------------------- demo


def test_demo_writes_every_promised_file(demo_dir):
    for name in DEMO_FILES:
        path = demo_dir / name
        assert path.is_file(), name
        assert path.stat().st_size > 100, name
    for png in (demo_dir / "figures").glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_ledger_in_netcdf_equals_the_json(demo_dir):
    import xarray as xr

    text = (demo_dir / "ledger.json").read_text().strip()
    with xr.open_datatree(demo_dir / "posterior.nc", engine="h5netcdf") as tree:
        attrs = dict(tree.attrs)
        cpt_vars = set(tree["posterior"].data_vars)
    assert json.loads(attrs["pymc_rdp_accountant"]) == json.loads(text)
    releases = json.loads((demo_dir / "releases.json").read_text())
    assert releases["ledger"] == json.loads(text)
    assert cpt_vars == {f"{v}_cpt" for v in ADULT_NODES}
    # the ledger is exact: the rebuilt accountant spends at most the default budget (1, 1e-6)
    acc = Accountant.from_json(attrs["pymc_rdp_accountant"])
    assert acc.to_json() == text
    assert len(acc.ledger) == len(ADULT_NODES)
    assert acc.budget == (1.0, 1e-6)
    assert acc.epsilon(1e-6) <= 1.0


def test_demo_releases_hold_the_released_tables(demo_dir):
    doc = json.loads((demo_dir / "releases.json").read_text())
    assert doc["mechanism"] == "dirichlet"
    fams = {f["node"]: f for f in doc["families"]}
    assert set(fams) == set(ADULT_NODES)
    for f in fams.values():
        values = np.asarray(f["values"])
        assert values.shape == (len(f["parent_configurations"]), len(f["states"]))
        np.testing.assert_allclose(values.sum(axis=1), 1.0, rtol=1e-12)  # CPT rows
        assert f["mechanism"]["name"] == "dirichlet"
    assert fams["income"]["parents"] == ["occupation", "capital-gain", "capital-loss"]


def test_demo_publishes_only_declared_states(demo_dir):
    """Every published state list is the public schema's, whatever the records hold."""
    from pymc_rdp import datasets
    from pymc_rdp.curation.domains import parse_schema

    schema = parse_schema(datasets.ADULT_SCHEMA)
    doc = json.loads((demo_dir / "releases.json").read_text())
    for f in doc["families"]:
        assert f["states"] == [str(s) for s in schema[f["node"]]["states"]]
    acc = Accountant.from_json((demo_dir / "ledger.json").read_text())
    # the only declaration: the public number of records (the UCI files' size), within the
    # guarantee; no states read from the data
    assert acc.within_guarantee
    assert [d["kind"] for d in acc.declarations] == ["public_total"]
    assert "read from the data" not in (demo_dir / "report.md").read_text()


def test_demo_report_states_the_guarantee(demo_dir):
    text = (demo_dir / "report.md").read_text()
    acc = Accountant.from_json((demo_dir / "ledger.json").read_text())
    eps, best = acc.epsilon_and_order(1e-6)
    assert "(ε, δ) = (1, 1e-06)" in text
    assert f"ε = {eps:.4g} at δ = 1e-06" in text
    assert f"λ = {best:.4g}" in text
    assert "dirichlet" in text and "4,000" in text  # the fast-mode subsample is stated
    for name in ("rdp_curve.png", "epsilon_delta.png", "privacy_utility.png"):
        assert f"figures/{name}" in text


def test_ledger_command_prints_the_epsilon(demo_dir, capsys):
    acc = Accountant.from_json((demo_dir / "ledger.json").read_text())
    for src in ("posterior.nc", "ledger.json", "releases.json"):
        assert main(["ledger", str(demo_dir / src)]) == 0
        out = capsys.readouterr().out
        assert f"ε = {acc.epsilon(1e-6):.6g} at δ = 1e-06" in out
        assert "bn:income" in out
    assert main(["ledger", str(demo_dir / "posterior.nc"), "--delta", "1e-9"]) == 0
    out = capsys.readouterr().out
    assert f"ε = {acc.epsilon(1e-9):.6g} at δ = 1e-09" in out
    assert main(["ledger", str(demo_dir / "posterior.nc"), "--json"]) == 0
    assert capsys.readouterr().out.strip() == acc.to_json()


def test_the_published_digest_verifies_every_stored_ledger(demo_dir, capsys):
    import re

    report = (demo_dir / "report.md").read_text(encoding="utf-8")
    (digest,) = set(re.findall(r"ledger digest \(sha256 chain\): ([0-9a-f]{64})", report))
    for src in ("posterior.nc", "ledger.json"):
        assert main(["ledger", str(demo_dir / src), "--digest", digest]) == 0
        assert "matches the expected digest" in capsys.readouterr().out
        assert main(["ledger", str(demo_dir / src), "--digest", "0" * 64]) == 1
        assert "differs from the expected" in capsys.readouterr().err


def test_ledger_command_through_the_subprocess(demo_dir):
    proc = _run("ledger", str(demo_dir / "posterior.nc"))
    assert proc.returncode == 0, proc.stderr
    acc = Accountant.from_json((demo_dir / "ledger.json").read_text())
    assert f"{acc.epsilon(1e-6):.6g}" in proc.stdout


# ------------------------------------------------------------------------------------- ledger


def test_ledger_of_release_files(tmp_path, capsys):
    # the release format of pymc_rdp.distributions: the mechanism is re-evaluated
    rel = {
        "format": "pymc-rdp.release",
        "version": 1,
        "tag": "t",
        "values": [1.0, 2.0],
        "mechanism": GaussianMechanism(sigma=4.0, sensitivity=math.sqrt(2.0)).to_dict(),
        "entry": {"tag": "t", "count": 3},
    }
    lap = dict(rel, tag="u", mechanism=LaplaceMechanism(scale=8.0).to_dict(), entry={})
    expected = Accountant()
    expected.spend(GaussianMechanism(sigma=4.0, sensitivity=math.sqrt(2.0)), count=3)
    one = tmp_path / "release.json"
    one.write_text(json.dumps(rel))
    assert main(["ledger", str(one), "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert f"ε = {expected.epsilon(1e-5):.6g} at δ = 1e-05" in out
    expected.spend(LaplaceMechanism(scale=8.0))
    both = tmp_path / "releases.json"
    both.write_text(json.dumps([rel, lap]))
    assert main(["ledger", str(both)]) == 0
    out = capsys.readouterr().out
    assert f"ε = {expected.epsilon(1e-6):.6g} at δ = 1e-06" in out


def test_ledger_with_an_rdp_budget(tmp_path, capsys):
    acc = Accountant.at_order(2.0, 8.0)
    acc.spend(GaussianMechanism(sigma=3.0), tag="g")
    path = tmp_path / "acc.json"
    path.write_text(acc.to_json())
    assert main(["ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"ε(8) = {float(acc.rdp([8.0])[0]):.6g} (budget 2)" in out
    assert f"ε = {acc.epsilon(1e-6):.6g} at δ = 1e-06" in out


# ------------------------------------------------------------------------------------- fit


@pytest.fixture(scope="module")
def cancer_files(tmp_path_factory) -> dict[str, Path]:
    from pgmpy.readwrite import BIFWriter

    from pymc_rdp import datasets

    d = tmp_path_factory.mktemp("cancer")
    df = datasets.sample_network("cancer", 3000, random_state=7)
    df.iloc[:2000].to_csv(d / "train.csv", index=False)
    df.iloc[2000:].to_csv(d / "test.csv", index=False)
    model = datasets.load_network("cancer")
    structure = {v: sorted(model.get_parents(v)) for v in model.nodes()}
    (d / "dag.json").write_text(json.dumps(structure))
    BIFWriter(model).write(str(d / "cancer.bif"))
    # the public domain: the model's states, in the opposite order to the BIF file's
    states = {v: list(model.get_cpds(v).state_names[v])[::-1] for v in model.nodes()}
    (d / "schema.json").write_text(json.dumps(states))
    (d / "schema.yaml").write_text(
        "".join(f"{v}:\n" + "".join(f"  - '{s}'\n" for s in sts) for v, sts in states.items())
    )
    return {
        "dir": d,
        "train": d / "train.csv",
        "test": d / "test.csv",
        "json": d / "dag.json",
        "bif": d / "cancer.bif",
        "schema": d / "schema.json",
        "yaml": d / "schema.yaml",
        "states": states,
    }


@pytest.mark.parametrize("structure", ["json", "bif"])
def test_fit_with_an_rdp_budget(cancer_files, structure, tmp_path, capsys):
    out = tmp_path / "res"
    schema = ["--schema", str(cancer_files["schema"])] if structure == "json" else []
    code = main(
        [
            "fit",
            str(cancer_files["train"]),
            "--structure",
            str(cancer_files[structure]),
            *schema,
            "--epsilon",
            "2",
            "--order",
            "4",
            "--test",
            str(cancer_files["test"]),
            "--seed",
            "1",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    stdout = capsys.readouterr().out
    for name in (
        "posterior.nc",
        "ledger.json",
        "releases.json",
        "report.md",
        "figures/rdp_curve.png",
        "figures/epsilon_delta.png",
    ):
        assert (out / name).is_file(), name
    assert len(list((out / "figures").glob("cpt_*.png"))) == 3
    assert not (out / "figures" / "privacy_utility.png").exists()  # no extra fits on user data
    acc = Accountant.from_json((out / "ledger.json").read_text())
    assert acc.budget_order == (2.0, 4.0)
    assert float(acc.rdp([4.0])[0]) <= 2.0
    assert len(acc.ledger) == 5
    assert "at Rényi order 4" in stdout and "held-out log-likelihood" in stdout
    doc = json.loads((out / "releases.json").read_text())
    cancer = next(f for f in doc["families"] if f["node"] == "Cancer")
    assert sorted(cancer["parents"]) == ["Pollution", "Smoker"]
    if structure == "bif":
        assert cancer["states"] == ["True", "False"]  # the BIF file's states, in its order
    else:
        assert cancer["states"] == ["False", "True"]  # the schema's states, in its order
    assert acc.within_guarantee
    assert "Outside the guarantee" not in (out / "report.md").read_text()


def _schema_argv(files, out, *extra: str) -> list[str]:
    return [
        "fit",
        str(files["train"]),
        "--structure",
        str(files["json"]),
        "--order",
        "4",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


@pytest.mark.parametrize("kind", ["schema", "yaml"])
def test_fit_with_a_schema_fixes_the_published_states(cancer_files, kind, tmp_path):
    """Declared states in the schema's order; a declared state never seen is a zero column."""
    states = dict(cancer_files["states"])
    states["Xray"] = [*states["Xray"], "unclear"]  # declared, never observed
    path = tmp_path / ("s.json" if kind == "schema" else "s.yaml")
    if kind == "schema":
        path.write_text(json.dumps(states))
    else:
        import yaml

        path.write_text(yaml.safe_dump(states))
    out = tmp_path / "o"
    assert main(_schema_argv(cancer_files, out, "--schema", str(path))) == 0
    doc = json.loads((out / "releases.json").read_text())
    for fam in doc["families"]:
        assert fam["states"] == states[fam["node"]]
    xray = next(f for f in doc["families"] if f["node"] == "Xray")
    assert np.asarray(xray["values"]).shape == (2, 3)


def test_fit_without_declared_states_is_refused(cancer_files, tmp_path, capsys):
    out = tmp_path / "o"
    msg = _err(capsys, _schema_argv(cancer_files, out))
    assert "no declared states for the variable(s)" in msg
    assert "--schema" in msg and "--states-from-data" in msg
    assert not (out / "releases.json").exists()
    proc = _run(*_schema_argv(cancer_files, out))
    assert proc.returncode == 1
    _one_line_error(proc.stderr)


def test_fit_states_from_data_is_flagged(cancer_files, tmp_path):
    out = tmp_path / "o"
    assert main(_schema_argv(cancer_files, out, "--states-from-data")) == 0
    acc = Accountant.from_json((out / "ledger.json").read_text())
    assert not acc.within_guarantee
    assert acc.declarations[0]["kind"] == "states_from_data"
    report = (out / "report.md").read_text()
    assert "**Outside the guarantee:**" in report
    assert "OUTSIDE THE GUARANTEE (states_from_data)" in report


def test_fit_schema_cuts_bin_a_numeric_column(tmp_path):
    rng = np.random.default_rng(0)
    import pandas as pd

    age = rng.uniform(18, 90, 400)
    sick = np.where(age > 60, rng.random(400) < 0.6, rng.random(400) < 0.2)
    pd.DataFrame({"age": age, "sick": sick}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "dag.json").write_text(json.dumps({"age": [], "sick": ["age"]}))
    argv = ["fit", str(tmp_path / "d.csv"), "--structure", str(tmp_path / "dag.json")]
    argv += ["--order", "4", "--out", str(tmp_path / "o"), "--quiet"]
    # a float column is refused even with --states-from-data, with the advice to bin it
    code = main([*argv, "--states-from-data"])
    assert code == 1
    (tmp_path / "s.yaml").write_text("age:\n  cuts: [40, 60]\nsick: [False, True]\n")
    assert main([*argv, "--schema", str(tmp_path / "s.yaml")]) == 0
    doc = json.loads((tmp_path / "o" / "releases.json").read_text())
    fam = {f["node"]: f for f in doc["families"]}
    assert fam["age"]["states"] == ["<=40", "(40, 60]", ">60"]
    assert fam["sick"]["parent_configurations"] == ["age=<=40", "age=(40, 60]", "age=>60"]
    assert fam["sick"]["states"] == ["False", "True"]


@pytest.mark.parametrize("kind", ["float", "names"])
def test_fit_float_column_error_says_how_to_bin(tmp_path, capsys, kind):
    """Old code published 199 float values or patient names as states; now refused."""
    import pandas as pd

    rng = np.random.default_rng(1)
    x = rng.normal(size=300) if kind == "float" else [f"patient {i:03d}" for i in range(300)]
    pd.DataFrame({"x": x, "y": rng.integers(0, 2, 300)}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "dag.json").write_text(json.dumps({"x": [], "y": ["x"]}))
    argv = ["fit", str(tmp_path / "d.csv"), "--structure", str(tmp_path / "dag.json")]
    msg = _err(capsys, [*argv, "--order", "4", "--out", str(tmp_path / "o"), "--states-from-data"])
    assert "column 'x'" in msg and "cuts" in msg and "private_bins" in msg
    assert not (tmp_path / "o" / "releases.json").exists()


def test_fit_out_of_domain_value_is_refused(cancer_files, tmp_path, capsys):
    import pandas as pd

    df = pd.read_csv(cancer_files["train"])
    df["Smoker"] = df["Smoker"].astype(str)
    df.loc[5, "Smoker"] = "Sometimes"  # one record with a new value
    path = tmp_path / "new.csv"
    df.to_csv(path, index=False)
    argv = _schema_argv(cancer_files, tmp_path / "o", "--schema", str(cancer_files["schema"]))
    argv[1] = str(path)
    msg = _err(capsys, argv)
    assert "column 'Smoker' has values outside its declared states" in msg
    assert "Sometimes" not in msg
    assert not (tmp_path / "o" / "ledger.json").exists()


def test_bad_schema_files_are_one_line_errors(cancer_files, tmp_path, capsys):
    def err(text: str, name: str = "s.json") -> str:
        path = tmp_path / name
        path.write_text(text)
        return _err(capsys, _schema_argv(cancer_files, tmp_path / "o", "--schema", str(path)))

    assert "not valid JSON" in err("{oops")
    assert "not valid YAML" in err("a: [1, 2\n", "s.yaml")
    assert "'Age' are not variables of the network" in err(json.dumps({"Age": [1, 2]}))
    assert "lists the state 'True' twice" in err(json.dumps({"Smoker": ["True", "True"]}))
    assert "must be a list of states" in err(json.dumps({"Smoker": "True"}))
    assert "'states' or 'cuts'" in err(json.dumps({"Smoker": {"values": [1]}}))
    assert "schema file not found" in _err(
        capsys, _schema_argv(cancer_files, tmp_path / "o", "--schema", str(tmp_path / "no.json"))
    )


def test_demo_gaussian_samples_the_exact_posterior_of_large_tables(tmp_path, capsys):
    out = tmp_path / "g"
    argv = ["demo", "--fast", "--mechanism", "gaussian", "--epsilon", "2", "--order", "5"]
    assert main([*argv, "--out", str(out), "--quiet", "--seed", "2"]) == 0
    assert "gaussian mechanism under ε = 2 at Rényi order 5" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    assert "naive baseline" not in report
    assert "Data augmentation sampled the exact posterior" in report
    # what was released says how the posterior was sampled: not NUTS, which did not run
    assert "sampled by data augmentation" in report.split("## The guarantee")[0]
    assert "NUTS" not in report.split("## The guarantee")[0]
    assert "max r̂" in report  # intervals and convergence diagnostics of the sampled posterior
    doc = json.loads((out / "releases.json").read_text())
    fam = next(f for f in doc["families"] if f["node"] == "occupation")
    rel = fam["release"]  # the noisy counts with their mechanism, as published
    assert rel["mechanism"]["name"] == "discrete_gaussian"
    assert np.asarray(rel["values"]).size == 2880  # 6 x 2 x 16 x 15: declared, not observed
    assert (np.asarray(rel["values"]) == np.round(rel["values"])).all()  # integers
    acc = Accountant.from_json((out / "ledger.json").read_text())
    assert float(acc.rdp([5.0])[0]) <= 2.0
    entry = next(e for e in acc.ledger if e.tag == rel["tag"])
    assert entry.mechanism_dict() == rel["mechanism"]


def _gaussian_fit_argv(files, out, inference, draws, budget, seed) -> list[str]:
    """``pymc-rdp fit`` of the cancer records with Gaussian releases and NUTS."""
    return [
        "fit",
        str(files["train"]),
        "--structure",
        str(files["json"]),
        "--schema",
        str(files["schema"]),
        "--mechanism",
        "gaussian",
        "--epsilon",
        "1",
        *budget,
        "--draws",
        str(draws),
        "--tune",
        str(draws),
        "--chains",
        "1",
        "--seed",
        str(seed),
        "--out",
        str(out),
        "--inference",
        inference,
        "--quiet",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("inference", ["noise-aware", "joint"])
def test_fit_gaussian_noise_aware_posterior(cancer_files, tmp_path, capsys, inference):
    out = tmp_path / "na"
    argv = _gaussian_fit_argv(cancer_files, out, inference, 200, ["--delta", "1e-6"], 4)
    assert main(argv) == 0
    import xarray as xr

    with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
        assert tree["posterior"].sizes["draw"] == 200
        names = set(tree["posterior"].data_vars)
    report = (out / "report.md").read_text()
    assert "NUTS sampled the noise-aware model" in report
    # the per-family model samples whole family tables; the joint model only the CPTs
    assert any(n.endswith("_family") for n in names) == (inference == "noise-aware")
    assert ("joint likelihood" in report) == (inference == "joint")


def test_fit_with_the_joint_likelihood(cancer_files, tmp_path, capsys):
    """``--inference joint``: the model of all tables at once (a short run: the wiring only)."""
    out = tmp_path / "joint"
    argv = _gaussian_fit_argv(cancer_files, out, "joint", 30, ["--order", "5"], 2)
    assert main(argv) == 0
    import xarray as xr

    with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
        names = set(tree["posterior"].data_vars)
    assert names == {f"{v}_cpt" for v in ("Pollution", "Smoker", "Cancer", "Xray", "Dyspnoea")}
    assert "the joint likelihood of all tables" in (out / "report.md").read_text()


# ------------------------------------------------------------------------------------- errors


def _err(capsys, argv) -> str:
    code = main(argv)
    assert code != 0
    return _one_line_error(capsys.readouterr().err)


def test_bad_budgets_are_one_line_errors(cancer_files, capsys):
    base = ["fit", str(cancer_files["train"]), "--structure", str(cancer_files["json"])]
    assert "--epsilon" in _err(capsys, [*base, "--epsilon", "0"])
    assert "--epsilon" in _err(capsys, [*base, "--epsilon", "-1"])
    assert "--epsilon" in _err(capsys, [*base, "--epsilon", "nan"])
    assert "--delta" in _err(capsys, [*base, "--delta", "1.5"])
    assert "--order" in _err(capsys, [*base, "--order", "1"])
    assert "--time-limit" in _err(capsys, [*base, "--time-limit", "0"])
    assert "--time-limit" in _err(capsys, [*base, "--time-limit", "inf"])
    assert "not allowed with" in _err(capsys, [*base, "--order", "3", "--delta", "1e-6"])
    assert "invalid choice" in _err(capsys, ["demo", "--mechanism", "exponential"])
    assert "--structure" in _err(capsys, ["fit", str(cancer_files["train"])])


def test_bad_files_are_one_line_errors(cancer_files, tmp_path, capsys):
    d = cancer_files["dir"]
    train, dag = str(cancer_files["train"]), str(cancer_files["json"])
    msg = _err(capsys, ["fit", str(tmp_path / "nope.csv"), "--structure", dag])
    assert "not found" in msg and "nope.csv" in msg
    msg = _err(capsys, ["fit", train, "--structure", str(tmp_path / "nope.json")])
    assert "structure file not found" in msg
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"Cancer": ["Smoker", "Age"], "Smoker": []}))
    msg = _err(capsys, ["fit", train, "--structure", str(unknown)])
    assert "unknown column" in msg and "'Age'" in msg
    cyclic = tmp_path / "cyclic.json"
    cyclic.write_text(json.dumps({"Cancer": ["Smoker"], "Smoker": ["Xray"], "Xray": ["Cancer"]}))
    msg = _err(capsys, ["fit", train, "--structure", str(cyclic)])
    assert "cycle" in msg
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "not valid JSON" in _err(capsys, ["fit", train, "--structure", str(bad)])
    bad.write_text("[1, 2]")
    assert "JSON object" in _err(capsys, ["fit", train, "--structure", str(bad)])
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert "empty" in _err(capsys, ["fit", str(empty), "--structure", dag])
    pq = tmp_path / "data.parquet"
    pq.write_bytes(b"PAR1")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert "pyarrow" in _err(capsys, ["fit", str(pq), "--structure", dag])
    txt = tmp_path / "data.xlsx"
    txt.write_text("x")
    assert "unknown format" in _err(capsys, ["fit", str(txt), "--structure", dag])
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    msg = _err(capsys, ["demo", "--fast", "--out", str(blocker / "out")])
    assert "cannot create the output directory" in msg
    assert "not found" in _err(capsys, ["ledger", str(d / "missing.nc")])
    assert "no pymc-rdp ledger" in _err(capsys, ["ledger", dag])
    assert "neither" in _err(capsys, ["ledger", train])


def test_missing_values(cancer_files, tmp_path, capsys):
    import pandas as pd

    df = pd.read_csv(cancer_files["train"])
    df.loc[3, "Xray"] = np.nan
    path = tmp_path / "holes.csv"
    df.to_csv(path, index=False)
    argv = [
        "fit",
        str(path),
        "--structure",
        str(cancer_files["json"]),
        "--schema",
        str(cancer_files["yaml"]),
        "--order",
        "3",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    ]
    msg = _err(capsys, argv)
    assert "missing values" in msg and "'Xray'" in msg and "--missing" in msg
    assert main([*argv, "--missing", "drop"]) == 0
    acc = Accountant.from_json((tmp_path / "o" / "ledger.json").read_text())
    assert float(acc.rdp([3.0])[0]) <= 1.0


def test_errors_through_the_subprocess_have_no_traceback(tmp_path):
    proc = _run("fit", str(tmp_path / "absent.csv"), "--structure", "x.json")
    assert proc.returncode == 1
    _one_line_error(proc.stderr)
    proc = _run("demo", "--epsilon", "-2")
    assert proc.returncode == 2
    _one_line_error(proc.stderr)


@pytest.mark.parametrize("command", [[], ["demo"], ["fit"], ["ledger"]])
def test_help_shows_an_example(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example" in out
    assert "pymc-rdp " + (command[0] if command else "demo") in out


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "demo" in capsys.readouterr().out


# ---------------------------------------------------------------- what leaves the curator

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")


def _numbers(text: str) -> set[float]:
    return {float(t) for t in _NUMBER.findall(text)}


def _strip_values(releases: dict) -> dict:
    """releases.json without the released values (the charged outputs) and the ledger."""
    doc = {k: v for k, v in releases.items() if k != "ledger"}
    fams = []
    for f in doc["families"]:
        f = dict(f)
        f.pop("values", None)
        if "release" in f:
            f["release"] = {k: v for k, v in f["release"].items() if k != "values"}
        fams.append(f)
    doc["families"] = fams
    return doc


def _ledger_core(text: str) -> dict:
    doc = json.loads(text)
    return {k: doc.get(k) for k in ("orders", "budget", "entries", "declarations")}


def _run_fit(argv: list[str], monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["pymc-rdp", *argv])
    assert main(argv) == 0


@pytest.mark.parametrize(
    "mechanism",
    [
        ["--mechanism", "dirichlet"],
        ["--mechanism", "gaussian", "--inference", "naive"],
        [
            *("--mechanism", "laplace", "--inference", "noise-aware"),
            *("--draws", "20", "--tune", "20", "--chains", "1"),
        ],
    ],
)
def test_neighbouring_files_publish_no_raw_count(cancer_files, tmp_path, monkeypatch, mechanism):
    """Exact totals: two files differing in one record (a value made missing), fitted with
    --missing drop, must not publish the number of records, of complete records or of dropped
    records; every artefact other than the released values is the same for both."""
    import pandas as pd
    import xarray as xr

    from pymc_rdp import datasets

    rows, holes = 1237, 137  # 1000 is a sampler setting (nutpie stores it)
    df = datasets.sample_network("cancer", rows, random_state=11).astype(object)
    exact = {float(rows), float(rows - holes), float(rows - holes - 1), float(holes), 138.0}
    runs = {}
    for name, k in (("a", holes), ("b", holes + 1)):
        d = tmp_path / name
        d.mkdir()
        frame = df.copy()
        frame.loc[: k - 1, "Xray"] = np.nan
        frame.to_csv(d / "records.csv", index=False)
        out = d / "out"
        argv = [
            "fit",
            str(d / "records.csv"),
            "--structure",
            str(cancer_files["bif"]),
            "--missing",
            "drop",
            "--epsilon",
            "8",
            "--delta",
            "1e-6",
            *mechanism,
            "--seed",
            "5",
            "--out",
            str(out),
            "--quiet",
        ]
        _run_fit(argv, monkeypatch)

        # paths hold pytest's numbered temp dirs (pytest-138/...): not numbers of the data
        def scrub(text: str, d=d) -> str:
            return text.replace(str(d), "DIR").replace(str(cancer_files["bif"].parent), "STRUCT")

        report = scrub((out / "report.md").read_text())
        releases = json.loads((out / "releases.json").read_text())
        with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
            attrs = {k: scrub(str(v)) for node in tree.subtree for k, v in node.attrs.items()}
            shapes = {
                node.path: {v: node[v].shape for v in node.data_vars} for node in tree.subtree
            }
        runs[name] = {
            "report": report,
            "releases": _strip_values(releases),
            "ledger": _ledger_core((out / "ledger.json").read_text()),
            "attrs": attrs,
            "shapes": shapes,
            "figures": sorted(p.name for p in (out / "figures").iterdir()),
            "files": sorted(p.name for p in out.iterdir()),
        }
    a, b = runs["a"], runs["b"]
    for run in (a, b):
        assert run["releases"]["n_records"] is None
        assert all(f.get("release", {}).get("total") is None for f in run["releases"]["families"])
        texts = [
            run["report"],
            json.dumps(run["releases"]),
            *(v for k, v in run["attrs"].items() if not k.startswith("pymc_rdp")),
        ]
        for text in texts:
            assert not (_numbers(text) & exact), (_numbers(text) & exact, text[:2000])
    # the structure of everything published is the same for both neighbours
    mask = functools.partial(_NUMBER.sub, "#")
    assert mask(a["report"]) == mask(b["report"])
    assert a["releases"] == b["releases"]
    assert a["ledger"] == b["ledger"]
    assert {k: v for k, v in a["attrs"].items() if k.startswith("pymc_rdp")} == {
        k: v for k, v in b["attrs"].items() if k.startswith("pymc_rdp")
    }
    assert a["shapes"] == b["shapes"] and a["figures"] == b["figures"]
    assert a["files"] == b["files"]
    assert "NOT PRIVATE" not in a["report"]
    _ = pd  # the frames above are pandas


def test_report_carries_no_seed_and_unsafe_noise_is_marked(cancer_files, tmp_path, monkeypatch):
    """Seeded noise: --seed steers only the MCMC and is not written; reproducible noise
    needs --unsafe-noise-seed, which the ledger and the report mark as not private."""
    base = [
        "fit",
        str(cancer_files["train"]),
        "--structure",
        str(cancer_files["bif"]),
        "--order",
        "4",
        "--quiet",
    ]
    safe, unsafe = tmp_path / "safe", tmp_path / "unsafe"
    _run_fit([*base, "--seed", "48151", "--out", str(safe)], monkeypatch)
    _run_fit(
        [*base, "--seed=48151", "--unsafe-noise-seed", "62342", "--out", str(unsafe)], monkeypatch
    )
    for out in (safe, unsafe):
        for name in ("report.md", "releases.json", "ledger.json"):
            text = (out / name).read_text()
            assert "48151" not in text and "62342" not in text, name
    assert "--seed S" in (safe / "report.md").read_text()
    assert "NOT PRIVATE" not in (safe / "report.md").read_text()
    assert Accountant.from_json((safe / "ledger.json").read_text()).within_guarantee
    report = (unsafe / "report.md").read_text()
    assert report.startswith("# ") and "**NOT PRIVATE.**" in report
    assert "--unsafe-noise-seed S" in report
    acc = Accountant.from_json((unsafe / "ledger.json").read_text())
    assert not acc.within_guarantee
    assert {d["kind"] for d in acc.declarations} == {"unsafe_noise"}
    # two runs with the same --seed but OS noise release different tables
    again = tmp_path / "again"
    _run_fit([*base, "--seed", "48151", "--out", str(again)], monkeypatch)
    fam = [json.loads((o / "releases.json").read_text())["families"] for o in (safe, again)]
    assert fam[0][0]["values"] != fam[1][0]["values"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--mechanism", "dirichlet", "--inference", "joint"], "--inference joint applies only"),
        (["--mechanism", "dirichlet", "--inference", "naive"], "--inference naive applies only"),
        (["--mechanism", "dirichlet", "--draws", "50"], "--draws: not used with --mechanism"),
        (["--chains", "3", "--tune", "9"], "--tune, --chains: not used with --mechanism"),
        (
            ["--mechanism", "gaussian", "--inference", "naive", "--draws", "9"],
            "--draws: not used with --inference naive",
        ),
        (["--time-limit", "30"], "--time-limit: not used with --mechanism dirichlet"),
        (
            ["--mechanism", "gaussian", "--inference", "noise-aware", "--time-limit", "30"],
            "--time-limit: only data augmentation (--inference auto) samples for a time limit",
        ),
    ],
)
def test_options_that_do_not_apply_are_refused(cancer_files, tmp_path, capsys, options, message):
    """An option the mechanism would ignore is an error (exit 1), before anything is released."""
    out = tmp_path / "refused"
    argv = [
        *("fit", str(cancer_files["train"]), "--structure", str(cancer_files["json"])),
        *("--schema", str(cancer_files["schema"]), "--out", str(out), "--quiet"),
        *options,
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()  # nothing written, nothing released


def test_demo_takes_sampler_options_with_the_dirichlet_mechanism(tmp_path):
    """The demo samples the Dirichlet release's posterior (public N), so a longer run than the
    default is one option away, as its report advises when the chains have not converged."""
    out = tmp_path / "demo"
    argv = ["demo", "--fast", "--draws", "30", "--tune", "20", "--chains", "1"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    import xarray as xr

    assert "(1 chain(s) × 30 draws)" in (out / "report.md").read_text()
    with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
        sizes = dict(tree["posterior"].sizes)
    assert sizes["chain"] == 1 and sizes["draw"] == 30


def test_demo_samples_for_a_time_limit(tmp_path):
    """``--time-limit``: a limit already past when the tuning ends keeps one draw per chain,
    and the report states the draws kept and the limit."""
    out = tmp_path / "limited"
    argv = ["demo", "--fast", "--draws", "500", "--tune", "5", "--chains", "1"]
    with pytest.warns(UserWarning, match="cut to 1 draw of the 500"):
        assert main([*argv, "--time-limit", "0.001", "--out", str(out), "--quiet"]) == 0
    import xarray as xr

    with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
        assert dict(tree["posterior"].sizes)["draw"] == 1
        assert tree.attrs["time_limit"] == 0.001
    report = (out / "report.md").read_text()
    assert "1 chain(s) × 1 draws after 5 discarded iterations, as many as fitted in" in report
    assert "time limit of 0.001 s" in report


def test_fit_reports_how_many_held_out_records_were_scored(cancer_files, tmp_path, capsys):
    """Held-out records with a state the fit never saw are left out of the mean: say how many
    were scored (the analyst's own held-out file), on stdout and in the report."""
    import pandas as pd

    test = pd.read_csv(cancer_files["test"])
    odd = test.iloc[:7].copy()
    odd["Xray"] = "unreadable"  # not a state of the training records
    path = tmp_path / "test_odd.csv"
    pd.concat([test, odd]).to_csv(path, index=False)
    out = tmp_path / "scored"
    argv = [
        *("fit", str(cancer_files["train"]), "--structure", str(cancer_files["json"])),
        *("--states-from-data", "--test", str(path), "--out", str(out), "--quiet"),
    ]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    expected = f"{len(test):,} of {len(test) + 7:,} held-out records scored"
    assert expected in stdout
    report = (out / "report.md").read_text()
    assert expected in report
    # the posterior section: released CPTs (one draw), nothing to diagnose, declared states
    assert "### CPT posteriors and convergence" in report
    assert "Convergence diagnostics: none" in report
    assert report.count("| parent configuration |") == 5  # one table per node


def _rr_argv(files, out, *extra: str) -> list[str]:
    return [
        *("fit", str(files["train"]), "--structure", str(files["bif"])),
        *("--mechanism", "randomized_response", "--epsilon", "6", "--delta", "1e-6"),
        *("--out", str(out), "--quiet"),
        *extra,
    ]


def test_fit_by_randomized_response_releases_records_and_samples(cancer_files, tmp_path):
    """--mechanism randomized_response: one randomised row per record, one charge per variable,
    N declared, and the exact posterior sampled (NUTS: few joint states)."""
    out = tmp_path / "rr"
    argv = _rr_argv(cancer_files, out, "--public-total", "2000", "--draws", "40", "--tune", "20")
    assert main([*argv, "--chains", "1", "--seed", "3", "--test", str(cancer_files["test"])]) == 0
    acc = Accountant.from_json((out / "ledger.json").read_text())
    assert sorted(e.tag for e in acc.ledger) == sorted(f"bn:{v}" for v in cancer_files["states"])
    assert {e.mechanism for e in acc.ledger} == {"categorical_randomized_response"}
    assert acc.epsilon(1e-6) <= 6.0 + 1e-9 and acc.within_guarantee
    assert any(d["kind"] == "public_total" for d in acc.declarations)
    doc = json.loads((out / "releases.json").read_text())
    assert doc["n_records"] == 2000
    for fam in doc["families"]:
        assert fam["kind"].startswith("randomised records")
        assert len(fam["values"]) == 2000 and set(fam["values"]) <= set(range(len(fam["states"])))
        assert fam["mechanism"]["name"] == "categorical_randomized_response"
    import xarray as xr

    with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
        assert tree["posterior"].sizes["draw"] == 40
    report = (out / "report.md").read_text()
    assert "k-ary randomized response" in report and "No table was released" in report
    assert "NUTS sampled" in report  # 32 joint states: NUTS on the exact likelihood by default
    assert "(2,000) is declared public" in report
    assert "by NUTS on their exact likelihood" in report


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--mechanism randomized_response releases one row per record"),
        (["--public-total", "2000", "--neighbours", "add-remove"], "--neighbours add-remove"),
        (["--public-total", "2000", "--inference", "naive"], "--inference naive does not apply"),
        (["--public-total", "2000", "--missing", "drop"], "--public-total with --missing drop"),
        (["--public-total", "1999"], "public_total does not equal the number of records"),
    ],
)
def test_randomized_response_refusals_release_nothing(
    cancer_files, tmp_path, capsys, extra, message
):
    out = tmp_path / "refused"
    assert main(_rr_argv(cancer_files, out, *extra)) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (out / "ledger.json").exists()


def test_fit_with_a_public_total_samples_the_dirichlet_posterior(cancer_files, tmp_path):
    out = tmp_path / "dir"
    argv = [
        *("fit", str(cancer_files["train"]), "--structure", str(cancer_files["bif"])),
        *("--public-total", "2000", "--draws", "30", "--tune", "20", "--chains", "1"),
        *("--out", str(out), "--quiet"),
    ]
    assert main(argv) == 0
    import xarray as xr

    with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
        assert tree["posterior"].sizes["draw"] == 30
    assert "Data augmentation sampled the exact posterior" in (out / "report.md").read_text()


def test_fit_by_randomized_response_with_nuts(cancer_files, tmp_path):
    out = tmp_path / "rr_nuts"
    argv = _rr_argv(cancer_files, out, "--public-total", "2000", "--inference", "noise-aware")
    assert main([*argv, "--draws", "60", "--tune", "60", "--chains", "1", "--seed", "2"]) == 0
    report = (out / "report.md").read_text()
    assert "NUTS sampled" in report and "by NUTS (requested)" in report
    import xarray as xr

    with xr.open_datatree(out / "posterior.nc", engine="h5netcdf") as tree:
        assert tree["posterior"].sizes["draw"] == 60


def test_fit_by_randomized_response_for_a_time_limit_samples_by_data_augmentation(
    cancer_files, tmp_path
):
    out = tmp_path / "rr_limit"
    argv = _rr_argv(cancer_files, out, "--public-total", "2000", "--time-limit", "600")
    assert main([*argv, "--draws", "40", "--tune", "20", "--chains", "1"]) == 0
    assert "given the released records" in (out / "report.md").read_text()
