"""The pipeline called from Python: settings, results, the same files as the command line."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pymc_rdp import Accountant, BayesianNetwork, UnsafeNoiseSeed
from pymc_rdp.cli import FitConfig, FitResult, run_demo, run_fit
from pymc_rdp.cli.main import main
from pymc_rdp.cli.pipeline import release_kind
from pymc_rdp.cli.progress import Steps

ROOT = Path(__file__).resolve().parents[2]
STRUCTURE = {"smoker": [], "cancer": ["smoker"], "cough": ["cancer"]}
STATES = {"smoker": ["no", "yes"], "cancer": ["no", "yes"], "cough": ["no", "some", "much"]}


@pytest.fixture(scope="module")
def records() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(11)
    n = 1500
    smoker = rng.choice(["no", "yes"], n, p=[0.7, 0.3])
    cancer = np.where(
        smoker == "yes",
        rng.choice(["no", "yes"], n, p=[0.8, 0.2]),
        rng.choice(["no", "yes"], n, p=[0.97, 0.03]),
    )
    cough = np.where(
        cancer == "yes",
        rng.choice(["no", "some", "much"], n, p=[0.2, 0.3, 0.5]),
        rng.choice(["no", "some", "much"], n, p=[0.7, 0.2, 0.1]),
    )
    df = pd.DataFrame({"smoker": smoker, "cancer": cancer, "cough": cough})
    return df.iloc[:1000].reset_index(drop=True), df.iloc[1000:].reset_index(drop=True)


# ------------------------------------------------------------------------------ settings


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"mechanism": "exponential"}, ValueError, "mechanism must be one of"),
        ({"neighbours": "swap"}, ValueError, "neighbours must be one of"),
        ({"inference": "vi"}, ValueError, "inference must be one of"),
        ({"epsilon": 0.0}, ValueError, "epsilon must be a finite number > 0"),
        ({"epsilon": float("inf")}, ValueError, "epsilon must be a finite number > 0"),
        ({"epsilon": "1"}, TypeError, "epsilon must be a number"),
        ({"delta": 1.0}, ValueError, r"delta must lie in \(0, 1\)"),
        ({"order": 1.0}, ValueError, "order must be > 1"),
        ({"delta": 1e-6, "order": 4.0}, ValueError, "not both"),
        ({"mechanism": "laplace", "draws": 0}, ValueError, "draws must be an integer >= 1"),
        ({"mechanism": "laplace", "chains": 2.0}, ValueError, "chains must be an integer"),
        ({"seed": -1}, ValueError, "seed must be a non-negative integer"),
        ({"unsafe_noise_seed": 1.5}, TypeError, "unsafe_noise_seed must be an integer"),
        ({"inference": "joint"}, ValueError, "applies only to mechanism 'gaussian' or"),
        ({"time_limit": 0}, ValueError, "time_limit must be a finite number > 0"),
        ({"time_limit": float("nan")}, ValueError, "time_limit must be a finite number > 0"),
        ({"time_limit": True}, TypeError, "time_limit must be a number"),
        (
            {"mechanism": "gaussian", "inference": "noise-aware", "time_limit": 9.0},
            ValueError,
            "time_limit: only data augmentation samples for a time limit",
        ),
        (
            {"mechanism": "gaussian", "inference": "naive", "time_limit": 9.0},
            ValueError,
            "time_limit: not used with inference 'naive'",
        ),
        (
            {"mechanism": "gaussian", "inference": "naive", "tune": 5},
            ValueError,
            "tune: not used with inference 'naive'",
        ),
        (
            {"mechanism": "randomized_response", "inference": "joint"},
            ValueError,
            "inference='joint' does not apply to randomised records",
        ),
        (
            {"mechanism": "randomized_response", "neighbours": "add-remove"},
            ValueError,
            "neighbours='add-remove' does not apply to randomized response",
        ),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        FitConfig(**kwargs)


def test_settings_defaults_budget_and_sampling():
    config = FitConfig()
    assert config.budget == (1.0, None, 1e-6)
    assert FitConfig(epsilon=2, order=8).budget == (2.0, 8.0, None)
    assert FitConfig(delta=1e-8).budget == (1.0, None, 1e-8)
    assert config.sampling() == {"draws": 300, "tune": 300, "chains": 2}
    assert config.sampling(fast=True) == {"draws": 100, "tune": 100, "chains": 1}
    given = FitConfig(mechanism="laplace", draws=7, chains=3)
    assert given.sampling(fast=True) == {"draws": 7, "tune": 100, "chains": 3}
    with pytest.raises(AttributeError):
        config.epsilon = 2.0  # frozen


def test_release_kind_of_every_mechanism():
    assert release_kind("dirichlet").cpt_draw and release_kind("dirichlet").noise is None
    assert release_kind("gaussian").noise == "discrete Gaussian"
    assert release_kind("laplace").noise == "discrete Laplace"
    assert not release_kind("gaussian").cpt_draw and not release_kind("laplace").cpt_draw
    with pytest.raises(ValueError, match="mechanism must be one of"):
        release_kind("none")


def test_bad_arguments_of_run_fit(records):
    train, _ = records
    with pytest.raises(TypeError, match="config must be a FitConfig"):
        run_fit(train, STRUCTURE, {"mechanism": "laplace"}, states=STATES)
    with pytest.raises(TypeError, match="structure must be a mapping"):
        run_fit(train, [("cancer", "smoker")], states=STATES)
    with pytest.raises(TypeError, match="progress must be a bool or Steps"):
        run_fit(train, STRUCTURE, states=STATES, progress="yes")
    # fit has no public N: a Dirichlet release is its one draw per CPT row, nothing to sample
    with pytest.raises(ValueError, match="draws: not used by run_fit with mechanism 'dirichlet'"):
        run_fit(train, STRUCTURE, FitConfig(draws=10), states=STATES)


# ------------------------------------------------------------------------------ runs


def test_run_fit_in_memory_matches_the_network_fitted_by_hand(records, tmp_path, monkeypatch):
    """Without ``out`` nothing is written; the releases and ledger are those of the same fit
    done by hand with the same (unsafe, test-only) noise seed."""
    train, test = records
    monkeypatch.chdir(tmp_path)
    config = FitConfig(mechanism="laplace", inference="naive", unsafe_noise_seed=5)
    result = run_fit(train, STRUCTURE, config, states=STATES, test=test)
    assert isinstance(result, FitResult)
    assert result.out is None and list(tmp_path.iterdir()) == []
    bn = BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(
        train,
        mechanism="laplace",
        epsilon=1.0,
        delta=1e-6,
        noise_aware=False,
        noise_source=UnsafeNoiseSeed(5),
    )
    for v in STRUCTURE:
        np.testing.assert_array_equal(
            np.asarray(result.network.releases[v].values), np.asarray(bn.releases[v].values)
        )
        np.testing.assert_allclose(result.network.cpts[v], bn.cpts[v], rtol=0, atol=0)
    assert result.accountant.to_json() == bn.accountant.to_json()
    assert result.test_log_likelihood == pytest.approx(bn.log_likelihood(test, "skip"), 1e-12)
    assert result.summary["test_scored"] == (len(test), len(test))
    eps, best = bn.accountant.epsilon_and_order(1e-6)
    assert result.guarantee["epsilon_at_delta"] == eps and result.guarantee["best_order"] == best
    assert eps <= 1.0
    assert not result.summary["noise_aware"] and result.summary["sampling"] is None
    assert set(result.idata["posterior"].data_vars) == {f"{v}_cpt" for v in STRUCTURE}


def test_run_fit_writes_what_the_command_writes(records, tmp_path, monkeypatch):
    """``run_fit(out=...)`` and ``pymc-rdp fit`` on the same records, settings and test-only
    noise seed publish the same tables and the same ledger."""
    train, _ = records
    train.to_csv(tmp_path / "train.csv", index=False)
    (tmp_path / "dag.json").write_text(json.dumps(STRUCTURE))
    (tmp_path / "schema.json").write_text(json.dumps(STATES))
    cli_out, py_out = tmp_path / "cli", tmp_path / "py"
    argv = [
        *("fit", str(tmp_path / "train.csv"), "--structure", str(tmp_path / "dag.json")),
        *("--schema", str(tmp_path / "schema.json"), "--engine", "pandas", "--order", "4"),
        *("--epsilon", "2", "--unsafe-noise-seed", "3", "--out", str(cli_out), "--quiet"),
    ]
    monkeypatch.setattr("sys.argv", ["pymc-rdp", *argv])
    assert main(argv) == 0
    config = FitConfig(epsilon=2, order=4, unsafe_noise_seed=3)
    result = run_fit(train, STRUCTURE, config, states=STATES, out=py_out)
    assert result.out == py_out
    for name in ("posterior.nc", "ledger.json", "releases.json", "report.md"):
        assert (py_out / name).is_file(), name
    assert sorted(p.name for p in (py_out / "figures").iterdir()) == sorted(
        p.name for p in (cli_out / "figures").iterdir()
    )
    docs = [json.loads((o / "releases.json").read_text()) for o in (cli_out, py_out)]
    assert docs[0] == docs[1]
    ledgers = [(o / "ledger.json").read_text() for o in (cli_out, py_out)]
    assert ledgers[0] == ledgers[1]
    acc = Accountant.from_json(ledgers[1])
    assert float(acc.rdp([4.0])[0]) <= 2.0 + 1e-12
    report = (py_out / "report.md").read_text()
    assert "Generated by `pymc_rdp.cli.run_fit`" in report
    assert "**NOT PRIVATE.**" in report  # the test-only noise seed is declared


def test_run_demo_from_python_compares_the_mechanisms(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_demo(FitConfig(mechanism="gaussian", inference="naive"), fast=True)
    assert list(tmp_path.iterdir()) == []
    comparison = result.summary["comparison"]
    assert sorted(comparison["mechanism"].unique()) == ["dirichlet", "gaussian", "laplace"]
    assert sorted(comparison["epsilon"].unique()) == [0.3, 3.0]
    assert len(comparison) == 6 and np.isfinite(comparison["log_likelihood"]).all()
    (ref,) = result.summary["reference"].values()
    assert ref > comparison["log_likelihood"].max() - 0.5  # the non-private fit is no worse
    assert result.summary["public_reference"]
    assert result.test_log_likelihood is not None and result.summary["test_scored"][1] == 2000


# ------------------------------------------------------------------------------ progress


def test_steps_quiet_plain_and_failed(capsys):
    quiet = Steps(2, quiet=True)
    with quiet.step("one", total=2) as advance:
        advance(2)
    quiet.info("note")
    assert capsys.readouterr().err == ""
    plain = Steps(2, console=_console(terminal=False))
    assert not plain.bars
    with plain.step("one", total=3) as advance:
        advance()
    plain.info("a note")
    with pytest.raises(RuntimeError), plain.step("two"):
        raise RuntimeError("boom")
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"\[1/2\] one \.\.\.\n      done \(\d+\.\d s\)\n      a note\n\[2/2\] two \.\.\.\n", err
    ), err
    with pytest.raises(ValueError, match="total must be >= 1"):
        Steps(0)


def test_steps_draw_rich_bars_on_a_terminal(capsys):
    console = _console(terminal=True)
    steps = Steps(3, console=console)
    assert steps.bars
    with steps.step("count", total=4) as advance:
        for _ in range(4):
            advance()
    with steps.step("pulse"):
        pass
    with steps.step("own bar", bar=False):
        pass
    drawn = console.file.getvalue()
    assert "[1/3] count" in drawn and "4/4" in drawn and "[2/3] pulse" in drawn
    assert "own bar" not in drawn  # a step without a bar is a plain line on stderr
    assert "[3/3] own bar ..." in capsys.readouterr().err
    assert not Steps(3, quiet=True, console=_console(terminal=True)).bars


def test_the_command_line_draws_no_bar_when_stderr_is_captured(records, tmp_path, capsys):
    train, _ = records
    train.to_csv(tmp_path / "train.csv", index=False)
    (tmp_path / "dag.json").write_text(json.dumps(STRUCTURE))
    (tmp_path / "schema.json").write_text(json.dumps(STATES))
    argv = [
        *("fit", str(tmp_path / "train.csv"), "--structure", str(tmp_path / "dag.json")),
        *("--schema", str(tmp_path / "schema.json"), "--out", str(tmp_path / "o")),
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "\x1b[" not in err and "\r" not in err  # no terminal control: plain lines only
    assert re.findall(r"^\[(\d)/6\]", err, flags=re.M) == list("123456")
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def _console(terminal: bool):
    from rich.console import Console

    return Console(file=io.StringIO(), force_terminal=terminal, width=100)


# ------------------------------------------------------------------------------ docs


def test_the_python_example_of_the_cli_docs_runs(tmp_path, monkeypatch, capsys):
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/cli.md has no Python example"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "docs/cli.md", "exec"), {})
    out = capsys.readouterr().out
    assert re.search(r"ε = \d\.\d+ at δ = 1e-06", out), out
    assert (tmp_path / "smoking-result" / "report.md").is_file()


def test_importing_the_command_line_loads_no_heavy_library():
    """``pymc-rdp --help`` and ``from pymc_rdp.cli import run_fit`` stay quick: PyMC, PyTensor,
    pandas, matplotlib and rich load only when a run needs them."""
    import subprocess
    import sys

    code = (
        "import sys, pymc_rdp.cli, pymc_rdp.cli.main, pymc_rdp.cli.pipeline;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'pymc', 'pytensor', 'pandas', 'matplotlib', 'rich'}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr
