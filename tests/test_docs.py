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
    assert "lung_cpt[smoke=yes, yes]" in out
    assert re.search(r"\((0\.\d+|1\.000), 1e-6\)-DP", out)


@pytest.mark.parametrize("doc", ["docs/guide.md"])
def test_doc_examples_run(doc, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / doc)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, doc, "exec"), {})
    assert (tmp_path / "smoking.json").exists()
