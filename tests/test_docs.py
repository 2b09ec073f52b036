"""The Python examples in the README and the user guide run as written (with fewer draws)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    (code,) = python_blocks(ROOT / "README.md")
    fast = re.sub(r"draws=\d+, tune=\d+", "draws=30, tune=30", code)
    assert fast != code, "the README example no longer names draws and tune"
    monkeypatch.chdir(tmp_path)
    exec(compile(fast, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "lung_cpt[smoke=yes | lung=yes]" in out
    assert re.search(r"\((0\.\d+|1\.000), 1e-6\)-DP", out)


@pytest.mark.parametrize("doc", ["docs/guide.md"])
def test_doc_examples_run(doc, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / doc)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, doc, "exec"), {})
    assert (tmp_path / "smoking.json").exists()


def test_api_reference_builds_and_covers_the_public_names(tmp_path):
    import importlib.util

    import pymc_rdp

    spec = importlib.util.spec_from_file_location("build_api", ROOT / "docs" / "build_api.py")
    build_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_api)
    out = tmp_path / "api.md"
    build_api.main(["--out", str(out)])
    text = out.read_text(encoding="utf-8")
    for name in pymc_rdp.__all__:
        assert f"`{name}`" in text
    assert "### `to_dp(" in text and "### `Accountant(" in text
