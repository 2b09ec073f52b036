"""Input and output of the command line: records, structures and schemas in; result files out.

Records are read from CSV or Parquet with pandas, or lazily with DuckDB or Polars
(:mod:`pymc_rdp.curation.counting.files`); every failure is one :class:`CLIError` naming the
file. The results of a run are written as ``posterior.nc`` (netCDF, the ledger in its
attributes), ``ledger.json`` and ``releases.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pymc_rdp.cli.errors import CLIError

__all__ = [
    "bin_by_schema",
    "check_columns",
    "choose_engine",
    "declared_states",
    "prepare_frame",
    "prepare_out",
    "read_schema",
    "read_structure",
    "read_table",
    "write_json",
    "write_results",
]


def read_table(
    path: Path, what: str = "data", engine: str = "pandas", as_text: bool = False
) -> Any:
    """Read a CSV or Parquet file into a DataFrame with one clear error per failure.

    ``engine="duckdb"`` or ``"polars"`` opens the file lazily instead (a DuckDB relation, a
    Polars LazyFrame; :func:`pymc_rdp.curation.counting.files.read_frame`); ``as_text`` reads its
    CSV
    columns as written (state names that are strings).
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise CLIError(f"{what} file not found: {path}")
    if path.is_dir():
        raise CLIError(f"{what} file is a directory: {path}")
    if engine != "pandas":
        from pymc_rdp.curation.counting.files import read_frame

        try:
            return read_frame(path, engine, what=what, as_text=as_text)
        except (ValueError, ImportError) as exc:
            raise CLIError(str(exc)) from None
    suffix = "".join(path.suffixes[-2:]).lower()
    if suffix.endswith((".parquet", ".pq")):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            try:
                import fastparquet  # noqa: F401
            except ImportError:
                raise CLIError(
                    f"reading Parquet ({path.name}) needs pyarrow: pip install pyarrow, "
                    "or save the table as CSV"
                ) from None
        df = pd.read_parquet(path)
    elif suffix.endswith((".csv", ".csv.gz", ".txt", ".tsv")):
        sep = "\t" if suffix.endswith(".tsv") else ","
        try:
            df = pd.read_csv(path, sep=sep, skipinitialspace=True)
        except pd.errors.EmptyDataError:
            raise CLIError(f"{what} file is empty: {path}") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise CLIError(f"cannot parse {what} file {path}: {exc}") from None
    else:
        raise CLIError(f"{what} file {path}: unknown format (use .csv or .parquet)")
    if len(df) == 0:
        raise CLIError(f"{what} file has no records: {path}")
    return df


def read_structure(path: Path) -> tuple[dict[str, list[str]], dict[str, list[str]] | None]:
    """A network structure ``{child: [parents]}`` and, for a BIF file, the state names."""
    path = Path(path)
    if not path.exists():
        raise CLIError(f"structure file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".bif":
        from pgmpy.readwrite import BIFReader

        try:
            model = BIFReader(path=str(path)).get_model()
        except Exception as exc:  # pgmpy raises assorted exceptions on bad files
            raise CLIError(f"cannot read BIF file {path}: {exc}") from None
        structure = {str(v): [str(p) for p in model.get_parents(v)] for v in model.nodes()}
        states = {
            str(c.variable): [str(s) for s in c.state_names[c.variable]] for c in model.get_cpds()
        }
        return structure, states
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CLIError(f"structure file {path} is not valid JSON: {exc}") from None
    if isinstance(doc, dict) and "structure" in doc and isinstance(doc["structure"], dict):
        doc = doc["structure"]
    if not isinstance(doc, dict) or not doc:
        raise CLIError(
            f"structure file {path} must hold a JSON object child -> [parents], "
            'e.g. {"smoker": [], "cancer": ["smoker"]}'
        )
    structure: dict[str, list[str]] = {}
    for child, parents in doc.items():
        if parents is None:
            parents = []
        if isinstance(parents, str):
            parents = [parents]
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            raise CLIError(
                f"structure file {path}: the parents of {child!r} must be a list of names"
            )
        structure[str(child)] = list(parents)
    for parents in list(structure.values()):
        for p in parents:
            structure.setdefault(p, [])  # parents that are not keys are roots
    return structure, None


def read_schema(path: Path, nodes: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A schema file (JSON or YAML) of the public domains, checked against the network."""
    from pymc_rdp.curation.domains import load_schema

    path = Path(path)
    if not path.exists():
        raise CLIError(f"schema file not found: {path}")
    schema = load_schema(path)
    unknown = [c for c in schema if c not in nodes]
    if unknown:
        raise CLIError(
            f"schema file {path}: {', '.join(map(repr, unknown))} are not variables of the "
            f"network ({', '.join(nodes)})"
        )
    return schema


def _label(value: Any) -> str:
    """A state as the string the CLI compares (integral floats without '.0')."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def declared_states(
    nodes: Sequence[str],
    bif_states: dict[str, list[str]] | None,
    schema: dict[str, dict[str, Any]] | None,
    from_data: bool,
) -> dict[str, list[str]]:
    """The declared states of every node (as strings): the BIF file's, then the schema's."""
    states: dict[str, list[str]] = dict(bif_states or {})
    for col, entry in (schema or {}).items():
        labels = [_label(s) for s in entry["states"]]
        if len(set(labels)) != len(labels):
            raise CLIError(f"schema: the states of {col!r} repeat once written as text: {labels}")
        states[col] = labels
    undeclared = [v for v in nodes if v not in states]
    if undeclared and not from_data:
        raise CLIError(
            f"no declared states for the variable(s) {', '.join(map(repr, undeclared))}: give "
            "--schema FILE (JSON or YAML; per column its states, or cut points for a numeric "
            "column) or a BIF structure; or --states-from-data to read them from the records "
            "(outside the guarantee, flagged in the ledger and the report)"
        )
    return states


def bin_by_schema(df: Any, schema: dict[str, dict[str, Any]] | None, what: str) -> Any:
    """Bin the schema's numeric columns by their public cut points."""
    if not schema or not any("cuts" in e for e in schema.values()):
        return df
    from pymc_rdp.curation.domains import apply_schema

    binned, _ = apply_schema(df, {c: e for c, e in schema.items() if "cuts" in e}, name=what)
    return binned


def check_columns(df: Any, nodes: Sequence[str], what: str) -> None:
    """Refuse a frame (pandas or a lazily read file) that lacks a column of the network."""
    from pymc_rdp.curation.counting import is_pandas

    if is_pandas(df):
        columns = list(df.columns)
    else:
        import narwhals as nw

        columns = list(nw.from_native(df).collect_schema())
    absent = [v for v in nodes if v not in columns]
    if absent:
        cols = list(map(str, columns))
        shown = ", ".join(cols[:12]) + (" ..." if len(cols) > 12 else "")
        raise CLIError(
            f"{what}: unknown column(s) {', '.join(map(repr, absent))} named in the structure "
            f"(columns: {shown})"
        )


def prepare_frame(
    df: Any, nodes: Sequence[str], states: dict[str, list[str]] | None, missing: str, what: str
) -> Any:
    """The network's columns, checked; missing values handled; declared states as strings."""
    from pymc_rdp.curation.counting import is_pandas

    if not is_pandas(df):
        return _prepare_lazy(df, nodes, states, missing, what)
    check_columns(df, nodes, what)
    sub = df[list(nodes)].copy()
    if missing == "drop":
        sub = sub.dropna().reset_index(drop=True)
        if len(sub) == 0:
            raise CLIError(f"{what}: no record is left after dropping missing values")
    elif missing == "category":
        for v in nodes:
            if sub[v].isna().any():
                sub[v] = sub[v].astype(object).where(sub[v].notna(), "missing")
    else:
        bad = [v for v in nodes if sub[v].isna().any()]
        if bad:
            raise CLIError(
                f"{what}: missing values in column(s) {', '.join(map(repr, bad))}; "
                "use --missing drop or --missing category"
            )
    if states is not None:
        for v in nodes:
            if v in states:
                sub[v] = sub[v].astype(object).map(_label)
    return sub


def _prepare_lazy(
    df: Any, nodes: Sequence[str], states: dict[str, list[str]] | None, missing: str, what: str
) -> Any:
    """:func:`prepare_frame` for a lazily read file: the same checks as engine expressions."""
    import narwhals as nw

    frame = nw.from_native(df)
    check_columns(df, nodes, what)
    frame = frame.select(*nodes)
    if states is not None:
        frame = frame.with_columns(*(nw.col(v).cast(nw.String) for v in nodes))
    if missing == "drop":
        frame = frame.drop_nulls()
    elif missing == "category":
        frame = frame.with_columns(
            *(nw.col(v).cast(nw.String).fill_null(nw.lit("missing")) for v in nodes)
        )
    else:
        holes = frame.select(*(nw.col(v).is_null().any() for v in nodes))
        holes = holes.collect() if isinstance(holes, nw.LazyFrame) else holes
        bad = [v for v in nodes if bool(holes.get_column(v).to_list()[0])]
        if bad:
            raise CLIError(
                f"{what}: missing values in column(s) {', '.join(map(repr, bad))}; "
                "use --missing drop or --missing category"
            )
    return frame.to_native()


def choose_engine(engine: str) -> str:
    """The engine of ``fit``: ``--engine``, or DuckDB when installed for ``auto``."""
    from pymc_rdp.curation.counting.files import ENGINES, default_engine

    if engine == "auto":
        return default_engine()
    if engine not in ENGINES:
        raise CLIError(f"unknown --engine {engine!r}: choose one of auto, {', '.join(ENGINES)}")
    return engine


def _json_default(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    raise TypeError(f"cannot write {type(x).__name__} as JSON")


def write_json(path: Path, doc: Any) -> None:
    text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False, default=_json_default)
    path.write_text(text + "\n", encoding="utf-8")


def prepare_out(out: Path) -> Path:
    """Check the output can be written (before any work); returns ``out/figures``."""
    try:
        import h5netcdf  # noqa: F401
    except ImportError:
        raise CLIError("writing posterior.nc needs h5netcdf: pip install h5netcdf") from None
    figures = Path(out) / "figures"
    try:
        figures.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create the output directory {out}: {exc.strerror}") from None
    return figures


def write_results(out: Path, idata: Any, ledger_json: str, releases: dict[str, Any]) -> None:
    """Write ``posterior.nc`` (replacing an earlier one), ``ledger.json`` and ``releases.json``."""
    out = Path(out)
    nc_path = out / "posterior.nc"
    if nc_path.exists():
        nc_path.unlink()
    idata.to_netcdf(nc_path, engine="h5netcdf")
    (out / "ledger.json").write_text(ledger_json + "\n", encoding="utf-8")
    write_json(out / "releases.json", releases)
