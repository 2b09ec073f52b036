"""``pymc-rdp ledger`` verifies what it prints: edited ledgers fail with exit status 1."""

from __future__ import annotations

import json
import math

import pytest

from pymc_rdp.cli.main import main
from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import GaussianMechanism, LaplaceMechanism


def _acc() -> Accountant:
    acc = Accountant(budget=(2.0, 1e-6))
    acc.spend(GaussianMechanism(6.0, math.sqrt(2.0)), tag="counts")
    acc.spend(LaplaceMechanism(20.0, 2.0), group="rows", partition=0)
    acc.spend(LaplaceMechanism(20.0, 2.0), group="rows", partition=1)
    return acc


def _write(tmp_path, text: str):
    path = tmp_path / "ledger.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_honest_ledger_prints_its_digest_and_recomputed_epsilon(tmp_path, capsys):
    acc = _acc()
    path = _write(tmp_path, acc.to_json())
    assert main(["ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert acc.digest() in out
    assert f"ε = {acc.epsilon():.6g} at δ = 1e-06" in out
    assert "hash chain verified" in out
    assert main(["ledger", str(path), "--digest", acc.digest().upper()]) == 0
    assert "matches the expected digest" in capsys.readouterr().out
    assert main(["ledger", str(tmp_path)]) == 0  # a run directory holding ledger.json
    assert acc.digest() in capsys.readouterr().out


def test_a_zeroed_ledger_is_refused(tmp_path, capsys):
    doc = json.loads(_acc().to_json())
    for e in doc["entries"]:
        e["curve"] = [0.0] * len(e["curve"])
    path = _write(tmp_path, json.dumps(doc))
    assert main(["ledger", str(path)]) == 1
    captured = capsys.readouterr()
    assert "ε =" not in captured.out
    assert "does not verify, refused" in captured.err and "entry 0" in captured.err


def test_a_digest_mismatch_is_refused(tmp_path, capsys):
    acc = _acc()
    published = acc.digest()
    acc.spend(GaussianMechanism(50.0), tag="unpublished")
    path = _write(tmp_path, acc.to_json())
    assert main(["ledger", str(path), "--digest", published]) == 1
    assert "differs from the expected" in capsys.readouterr().err
    assert main(["ledger", str(path), "--digest", "xyz"]) == 2
    assert "--digest must be 64 hexadecimal digits" in capsys.readouterr().err


@pytest.mark.parametrize("good", [True, False])
def test_a_signed_ledger_is_checked_with_the_key_file(tmp_path, capsys, good):
    key = tmp_path / "key"
    key.write_bytes(b"curator secret")
    path = _write(tmp_path, _acc().to_json(key=b"curator secret" if good else b"other"))
    status = main(["ledger", str(path), "--key-file", str(key)])
    captured = capsys.readouterr()
    if good:
        assert status == 0 and "signature verified" in captured.out
    else:
        assert status == 1 and "signature does not verify" in captured.err


def test_a_pipe_closed_early_stops_quietly(tmp_path):
    """``pymc-rdp ledger --json FILE | head -1``: no broken-pipe traceback or error line."""
    import os
    import subprocess
    import sys

    acc = Accountant(budget=(1e6, 1e-6))
    for _ in range(300):  # a ledger far larger than the pipe's buffer
        acc.spend(LaplaceMechanism(20.0, 2.0), tag="more")
    path = _write(tmp_path, acc.to_json())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    script = "import sys; from pymc_rdp.cli import main; sys.exit(main())"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "ledger", "--json", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    first = os.read(proc.stdout.fileno(), 64)  # the JSON is one long line: read its start
    proc.stdout.close()  # and close the pipe, as `head -c 64` does
    err = proc.stderr.read().decode()
    proc.stderr.close()
    status = proc.wait(timeout=120)
    assert first.startswith(b'{"format":"pymc-rdp-ledger"')
    assert "Traceback" not in err and "BrokenPipe" not in err and "Broken pipe" not in err, err
    assert err == ""
    assert status == 141
