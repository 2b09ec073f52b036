"""Record files (CSV, Parquet) opened lazily by an engine, for counting larger than memory.

``read_frame(path, "duckdb")`` returns a DuckDB relation over the file and
``read_frame(path, "polars")`` a Polars ``LazyFrame``: nothing is loaded until a count runs, and
then the engine streams through the file and keeps only its grouped aggregate. The pandas
reader of the command line (:func:`pymc_rdp.cli.io.read_table`) loads the whole file instead.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["ENGINES", "LAZY_ENGINES", "default_engine", "file_format", "read_frame"]

#: engines that open a file lazily
LAZY_ENGINES = ("duckdb", "polars")
#: every engine the command line accepts
ENGINES = ("pandas", *LAZY_ENGINES)


def default_engine() -> str:
    """``"duckdb"`` when DuckDB is installed (``pip install 'pymc-rdp[duckdb]'``), else pandas."""
    return "duckdb" if importlib.util.find_spec("duckdb") is not None else "pandas"


def file_format(path: Path) -> str | None:
    """``"parquet"``, ``"csv"``, ``"tsv"`` from the file name, or None."""
    suffix = "".join(Path(path).suffixes[-2:]).lower()
    if suffix.endswith((".parquet", ".pq")):
        return "parquet"
    if suffix.endswith(".tsv"):
        return "tsv"
    if suffix.endswith((".csv", ".csv.gz", ".txt")):
        return "csv"
    return None


def read_frame(path: Path, engine: str, *, what: str = "data", as_text: bool = False) -> Any:
    """Open a CSV or Parquet file lazily with ``engine`` (``"duckdb"`` or ``"polars"``).

    Parameters
    ----------
    path : Path
        The file; its format comes from its name (``.csv``, ``.csv.gz``, ``.tsv``, ``.txt``,
        ``.parquet``, ``.pq``).
    engine : {"duckdb", "polars"}
    what : str
        The file's role in error messages.
    as_text : bool
        Read every CSV column as text, as written in the file (for state names that are
        strings, e.g. those of a BIF file).

    Raises
    ------
    ValueError
        Unknown engine or format, an empty or unreadable file (named in the message).
    ImportError
        The engine is not installed (the message names the extra to install).
    """
    path = Path(path)
    if engine not in LAZY_ENGINES:
        raise ValueError(f"engine must be one of {LAZY_ENGINES}, got {engine!r}")
    fmt = file_format(path)
    if fmt is None:
        raise ValueError(f"{what} file {path}: unknown format (use .csv or .parquet)")
    if path.is_file() and path.stat().st_size == 0:
        raise ValueError(f"{what} file is empty: {path}")
    if importlib.util.find_spec(engine) is None:
        raise ImportError(
            f"the {engine} engine is not installed: pip install 'pymc-rdp[{engine}]', or "
            "choose another with --engine"
        )
    try:
        frame = _open(path, engine, fmt, as_text)
        import narwhals as nw

        nw.from_native(frame).collect_schema()  # reads the header or footer: fails early
    except Exception as exc:  # engines raise their own error types on unreadable files
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"cannot read {what} file {path} with {engine}: {first}") from None
    return frame


def _open(path: Path, engine: str, fmt: str, as_text: bool) -> Any:
    sep = "\t" if fmt == "tsv" else ","
    if engine == "duckdb":
        import duckdb

        if fmt == "parquet":
            return duckdb.read_parquet(str(path))
        return duckdb.read_csv(str(path), sep=sep, all_varchar=as_text, header=True)
    import polars as pl

    if fmt == "parquet":
        return pl.scan_parquet(path)
    return pl.scan_csv(path, separator=sep, infer_schema=not as_text)
