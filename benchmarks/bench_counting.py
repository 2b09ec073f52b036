"""Counting all family tables of the Adult network on each engine, from one Parquet file.

The records are synthetic: forward samples of the Adult network (Ponnoprat, TMLR 2023) with CPTs
estimated from the bundled Adult training data (+1 smoothing), written once as a Parquet file of
string columns in a temporary folder. Each engine then counts the 7 family tables
(:func:`pymc_rdp.curation.counting.count_tables`) in its own subprocess, so that its peak resident
memory
(``ru_maxrss``) is its own:

* ``pandas``: ``pd.read_parquet`` then the ``np.bincount`` path (time without / with the read);
* ``duckdb``: ``duckdb.read_parquet`` relation through the narwhals path, streaming the file;
* ``duckdb-sql``: the anchor, one plain ``SELECT parents, child, count(*) ... GROUP BY ALL``
  query per family on the file;
* ``polars``: ``pl.scan_parquet`` through the narwhals path; ``polars-raw``: the same group-by
  written in Polars directly;
* ``spark`` (with ``--spark``): ``spark.read.parquet`` in local mode through the narwhals path.

Every engine's tables are checked equal to the pandas ones. Reported: best-of-``--repeat`` time
of the counting, ratios to the anchor and to the raw query of the same engine, peak RSS and the
in-memory size of the file as a pandas DataFrame.

Run: ``python benchmarks/bench_counting.py --records 1000000`` (10⁷: ``--records 10000000``,
about 1 GB of pandas memory and a few minutes on two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ENGINES = ("pandas", "duckdb", "duckdb-sql", "polars", "polars-raw")


def _network():
    from pymc_rdp import datasets
    from pymc_rdp.curation.counting import count_tables, infer_states

    dag = dict(datasets.ADULT_DAG)
    train = datasets.adult_paper("train")[list(dag)]
    states = {v: [str(s) for s in infer_states(train, [v])[v]] for v in dag}
    return dag, states, count_tables(train.astype(str), dag, states)


def write_parquet(path: Path, n: int, seed: int = 0, chunk: int = 1_000_000) -> dict:
    """``n`` forward samples of the Adult network as a Parquet file of string columns.

    Returns ``{"dag": ..., "states": ...}`` for the workers.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pymc_rdp.bn.structure import forward_sample, parse_structure

    dag, states, tables = _network()
    structure, _ = parse_structure(dag)
    cpts = {v: (t + 1.0) / (t + 1.0).sum(axis=1, keepdims=True) for v, t in tables.items()}
    cards = {v: len(s) for v, s in states.items()}
    rng = np.random.default_rng(seed)
    writer = None
    done = 0
    while done < n:
        m = min(chunk, n - done)
        codes = forward_sample(structure, cpts, cards, m, rng)
        arrays = {
            v: pa.array(np.asarray(states[v], dtype=object)[codes[v]], type=pa.string())
            for v in dag
        }
        table = pa.table(arrays)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        done += m
    writer.close()
    return {"dag": dag, "states": states}


def _time(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def worker(engine: str, path: str, spec: str, repeat: int) -> dict:
    """Count in this process; returns times, tables and peak RSS."""
    from pymc_rdp.curation.counting import count_tables

    doc = json.loads(Path(spec).read_text())
    dag, states = doc["dag"], doc["states"]
    families = [[*dag[v], v] for v in dag]
    res: dict = {"engine": engine}
    if engine == "pandas":
        import pandas as pd

        t0 = time.perf_counter()
        df = pd.read_parquet(path)
        res["read"] = time.perf_counter() - t0
        res["pandas_bytes"] = int(df.memory_usage(deep=True).sum())
        res["time"], tables = _time(lambda: count_tables(df, dag, states), repeat)
    elif engine == "duckdb":
        import duckdb

        res["time"], tables = _time(
            lambda: count_tables(duckdb.read_parquet(path), dag, states), repeat
        )
    elif engine == "duckdb-sql":
        import duckdb

        def run():
            out = []
            for cols in families:
                sel = ", ".join(f'"{c}"' for c in cols)
                out.append(
                    duckdb.sql(
                        f"SELECT {sel}, count(*) FROM read_parquet('{path}') GROUP BY ALL"
                    ).fetchall()
                )
            return out

        res["time"], raw = _time(run, repeat)
        tables = None
        res["checked"] = [sum(r[-1] for r in rows) for rows in raw]
    elif engine == "polars":
        import polars as pl

        res["time"], tables = _time(
            lambda: count_tables(pl.scan_parquet(path), dag, states), repeat
        )
    elif engine == "polars-raw":
        import polars as pl

        def run():
            return [
                pl.scan_parquet(path).group_by(cols).agg(pl.len()).collect() for cols in families
            ]

        res["time"], raw = _time(run, repeat)
        tables = None
        res["checked"] = [int(f["len"].sum()) for f in raw]
    elif engine == "spark":
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate()
        )
        sdf = spark.read.parquet(path)
        res["time"], tables = _time(lambda: count_tables(sdf, dag, states), repeat)
        spark.stop()
    else:
        raise ValueError(f"unknown engine {engine!r}")
    if tables is not None:
        res["tables"] = {v: t.tolist() for v, t in tables.items()}
    res["peak_rss"] = peak_rss()
    return res


def peak_rss() -> int:
    """Peak resident memory of this process in bytes.

    ``VmHWM`` of ``/proc/self/status`` (Linux): the high-water mark of this process's own
    address space. ``ru_maxrss`` is the fallback, but Linux carries it over ``execve`` from the
    parent, so it would report the parent's peak in a fresh subprocess.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true", help="also count with PySpark")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--path", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--spec", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.path, args.spec, args.repeat)))
        return

    engines = [*ENGINES, "spark"] if args.spark else list(ENGINES)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "adult.parquet"
        t0 = time.perf_counter()
        spec = Path(tmp) / "network.json"
        spec.write_text(json.dumps(write_parquet(path, args.records)))
        print(
            f"{args.records:,} synthetic Adult records, 7 family tables; Parquet "
            f"{path.stat().st_size / 2**20:.1f} MiB written in {time.perf_counter() - t0:.1f} s"
        )
        results = {}
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        for e in engines:
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                e,
                "--path",
                str(path),
                "--spec",
                str(spec),
            ]
            cmd += ["--repeat", str(args.repeat)]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            results[e] = json.loads(out.stdout.strip().splitlines()[-1])
    ref = results["pandas"]["tables"]
    for e, r in results.items():
        if "tables" in r:
            assert r["tables"] == ref, f"{e} tables differ from pandas"
        else:
            assert r["checked"] == [args.records] * len(ref), f"{e} totals wrong"
    anchor = results["duckdb-sql"]["time"]
    raw_of = {"duckdb": "duckdb-sql", "polars": "polars-raw"}
    pandas_bytes = results["pandas"]["pandas_bytes"]
    print(f"in-memory pandas size of the file: {pandas_bytes / 2**20:.0f} MiB")
    head = f"{'engine':<12}{'time (s)':>10}{'/ anchor':>10}{'/ raw':>8}"
    print(f"{head}{'peak RSS':>12}{'/ pandas':>10}")
    for e, r in results.items():
        raw = results.get(raw_of.get(e, ""), {}).get("time")
        ratio = f"{r['time'] / raw:8.2f}" if raw else f"{'':>8}"
        rss = r["peak_rss"]
        print(
            f"{e:<12}{r['time']:10.3f}{r['time'] / anchor:10.2f}{ratio}"
            f"{rss / 2**20:9.0f} MiB{rss / pandas_bytes:10.2f}"
        )
    print(f"pandas read_parquet: {results['pandas']['read']:.3f} s; tables equal on every engine")


if __name__ == "__main__":
    main()
