"""``pymc-rdp fit --engine``: one release from pandas, DuckDB and Polars; bad input exits 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pymc_rdp.cli.main import main
from pymc_rdp.privacy.accountant import Accountant

pytest.importorskip("duckdb")
pytest.importorskip("polars")
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    from pgmpy.readwrite import BIFWriter

    from pymc_rdp import datasets

    d = tmp_path_factory.mktemp("engines")
    df = datasets.sample_network("cancer", 1500, random_state=3)
    df.to_parquet(d / "train.parquet", index=False)
    df.to_csv(d / "train.csv", index=False)
    model = datasets.load_network("cancer")
    (d / "dag.json").write_text(json.dumps({v: sorted(model.get_parents(v)) for v in model}))
    BIFWriter(model).write(str(d / "cancer.bif"))
    schema = {str(c.variable): [str(s) for s in c.state_names[c.variable]] for c in model.cpds}
    (d / "schema.json").write_text(json.dumps(schema))
    return {"dir": d, "parquet": d / "train.parquet", "csv": d / "train.csv",
            "json": d / "dag.json", "bif": d / "cancer.bif",
            "schema": d / "schema.json"}  # fmt: skip


def _fit(files, data: str, structure: str, engine: str, out: Path) -> dict:
    argv = ["fit", str(files[data]), "--structure", str(files[structure]), "--engine", engine]
    argv += ["--epsilon", "2", "--order", "4", "--seed", "1", "--out", str(out), "--quiet"]
    if structure == "json":  # a JSON structure has no states: declare them
        argv += ["--schema", str(files["schema"])]
    assert main(argv) == 0
    return json.loads((out / "releases.json").read_text())


@pytest.mark.parametrize(("data", "structure"), [("parquet", "bif"), ("csv", "json")])
def test_every_engine_releases_the_same_tables(files, tmp_path, data, structure):
    docs = {
        e: _fit(files, data, structure, e, tmp_path / e) for e in ("pandas", "duckdb", "polars")
    }
    ref = docs["pandas"]
    for engine, doc in docs.items():
        assert doc["n_records"] is None, engine  # N is not public unless declared
        for fam, want in zip(doc["families"], ref["families"], strict=True):
            assert fam["node"] == want["node"] and fam["parents"] == want["parents"], engine
            assert fam["states"] == want["states"], engine
            assert np.shape(fam["values"]) == np.shape(want["values"]), engine
        a = Accountant.from_json(json.dumps(doc["ledger"]))
        b = Accountant.from_json(json.dumps(ref["ledger"]))
        assert [e.tag for e in a.ledger] == [e.tag for e in b.ledger]
        np.testing.assert_array_equal(a.rdp(), b.rdp())


def _fails(capsys, argv) -> str:
    assert main(argv) == 1
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pymc-rdp: error: ")
    return lines[0]


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_bad_input_is_one_line_exit_1_and_releases_nothing(files, tmp_path, capsys, engine):
    import pandas as pd

    d = files["dir"]
    base = ["--structure", str(files["bif"]), "--engine", engine, "--quiet"]
    out = tmp_path / "o"
    msg = _fails(capsys, ["fit", str(files["parquet"]), *base[:2], "--engine", "spreadsheet"])
    assert "unknown --engine 'spreadsheet'" in msg
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not a parquet file PAR1")
    msg = _fails(capsys, ["fit", str(broken), *base, "--out", str(out)])
    assert "cannot read data file" in msg and "broken.parquet" in msg
    df = pd.read_parquet(files["parquet"])
    df.drop(columns="Xray").to_parquet(d / "no_xray.parquet")
    msg = _fails(capsys, ["fit", str(d / "no_xray.parquet"), *base, "--out", str(out)])
    assert "unknown column(s) 'Xray'" in msg
    odd = df.astype(str)
    odd.loc[5, "Smoker"] = "Sometimes"
    odd.to_parquet(d / "odd.parquet")
    msg = _fails(capsys, ["fit", str(d / "odd.parquet"), *base, "--out", str(out)])
    assert "column 'Smoker' has values outside its declared states" in msg
    assert "Sometimes" not in msg
    holes = df.astype(object)
    holes.loc[2, "Dyspnoea"] = None
    holes.to_parquet(d / "holes.parquet")
    msg = _fails(capsys, ["fit", str(d / "holes.parquet"), *base, "--out", str(out)])
    assert "missing values in column(s) 'Dyspnoea'" in msg and "--missing" in msg
    assert not (out / "ledger.json").exists() and not (out / "releases.json").exists()
