#!/usr/bin/env python3
"""Parquet-zstd next to `bench/run format`'s Quiver figures.

    bench/format_parquet.py --json FILE [--reps N]

bench_format (C) measures Quiver's file size and write speed on the real
TPC-H lineitem SF1 (data/tpch/lineitem.csv) into an in-memory sink; Parquet
is not in C, so this runs after it (bench/run format calls it): it loads the
same CSV in the same lineitem schema (int64 keys, int32 line number,
decimal(15, 2) amounts, date32 dates, strings) in batches of the same
131,072 rows, writes it with pyarrow's Parquet writer (defaults, zstd, one
thread) into an in-memory buffer --reps times, and prints both side by
side: file size and the ratio to Parquet-zstd, write MB/s (MB of Arrow data
as bench_format counts them: its "arrow"/"bytes" record, so both speeds
share one numerator) and how many times faster than Parquet-zstd. The
Parquet figures are appended to FILE as records with variant
"parquet-zstd" (file_bytes; write_mb_per_s min/median/max), beside
bench_format's "default" and "compact".

Data directory: $QV_BENCH_DATA, else <repo>/data (as bench_format).
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH_ROWS = 131072  # bench_tpch.h's BT_BATCH_ROWS
MB = 1e6


def lineitem_schema():
    import pyarrow as pa
    dec = pa.decimal128(15, 2)
    return pa.schema([
        ("l_orderkey", pa.int64()), ("l_partkey", pa.int64()), ("l_suppkey", pa.int64()),
        ("l_linenumber", pa.int32()), ("l_quantity", dec), ("l_extendedprice", dec),
        ("l_discount", dec), ("l_tax", dec), ("l_returnflag", pa.string()),
        ("l_linestatus", pa.string()), ("l_shipdate", pa.date32()),
        ("l_commitdate", pa.date32()), ("l_receiptdate", pa.date32()),
        ("l_shipinstruct", pa.string()), ("l_shipmode", pa.string()),
        ("l_comment", pa.string())])


def load_csv(path):
    """The CSV as one table of BATCH_ROWS-row chunks, in lineitem_schema()."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    schema = lineitem_schema()
    t = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
        column_types=schema, strings_can_be_null=False, include_columns=schema.names))
    t = t.select(schema.names).cast(schema).combine_chunks()
    return pa.Table.from_batches(t.to_batches(max_chunksize=BATCH_ROWS), schema)


def write_parquet(table):
    """One Parquet-zstd write into memory: (seconds, bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    sink = pa.BufferOutputStream()
    t0 = time.perf_counter()
    pq.write_table(table, sink, compression="zstd")
    buf = sink.getvalue()
    return time.perf_counter() - t0, buf.size


def by_key(records):
    out = {}
    for r in records:
        out[(r.get("case"), r.get("variant"), r.get("metric"), r.get("stat"))] = r["value"]
    return out


def report(records, case, parquet):
    """The side-by-side lines for `case` (bench_format's records) and the
    Parquet-zstd figures {bytes, median, max} (MB/s; max: the best repeat)."""
    v = by_key(records)
    lines = [f"{'format':<18} {'file MB':>9} {'size/P':>7} | {'write MB/s':>10} {'best':>8} "
             f"{'speed/P':>8} {'best/P':>7}"]
    rows = [(f"quiver {m}", v.get((case, m, "file_bytes", "value")),
             v.get((case, m, "write_mb_per_s", "median")),
             v.get((case, m, "write_mb_per_s", "max")))
            for m in ("default", "compact")]
    rows.append(("parquet-zstd", parquet["bytes"], parquet["median"], parquet["max"]))
    for name, size, med, best in rows:
        if size is None or med is None or best is None:
            continue
        lines.append(f"{name:<18} {size / MB:>9.2f} {size / parquet['bytes']:>6.2f}x | "
                     f"{med:>10.0f} {best:>8.0f} {med / parquet['median']:>7.2f}x "
                     f"{best / parquet['max']:>6.2f}x")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True, metavar="FILE",
                    help="bench_format's records: read, and the Parquet figures appended")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    with open(args.json) as f:
        records = json.load(f)
    v = by_key(records)
    case = next((r["case"] for r in records if r.get("variant") == "arrow"
                 and r.get("metric") == "bytes" and str(r.get("case", "")).startswith("tpch-")),
                None)
    print(f"\n== Against Parquet-zstd (pyarrow, defaults, one thread, into memory) ==")
    if case is None:
        print("no TPC-H lineitem in this run (--quick or --no-tpch measure only the built-in "
              "generator's data, which pyarrow cannot load): nothing to compare")
        return 0
    try:
        import pyarrow as pa
    except ImportError as e:
        print(f"pyarrow is not installed ({e}): scripts/setup.sh installs it")
        return 0
    data = os.environ.get("QV_BENCH_DATA") or os.path.join(ROOT, "data")
    csv = os.path.join(data, "tpch", "lineitem.csv")
    arrow_bytes = v[(case, "arrow", "bytes", "value")]
    t0 = time.perf_counter()
    table = load_csv(csv)
    if table.num_rows != v.get((case, "arrow", "rows", "value"), table.num_rows):
        print(f"{csv}: {table.num_rows} rows, bench_format read "
              f"{v[(case, 'arrow', 'rows', 'value')]:.0f}", file=sys.stderr)
        return 1
    print(f"{case}: {table.num_rows:,} rows from {csv} (loaded in "
          f"{time.perf_counter() - t0:.1f} s); pyarrow {pa.__version__}, {args.reps} repeats")
    pa.set_cpu_count(1)
    write_parquet(table)  # warm-up: the allocator's first touch of the pages
    speeds, size = [], None
    for _ in range(max(1, args.reps)):
        s, size = write_parquet(table)
        speeds.append(arrow_bytes / s / MB)
    parquet = {"bytes": size, "median": statistics.median(speeds), "max": max(speeds)}
    for line in report(records, case, parquet):
        print(line)
    print("(write MB/s: MB of Arrow data per wall second, bench_format's Quiver writes into its\n"
          " memory sink and pyarrow's into a BufferOutputStream; speed/P above 1: faster than\n"
          " Parquet-zstd; size/P below 1: smaller. The machine may be shared: see min and median.)")
    records.append({"bench": "format", "case": case, "variant": "parquet-zstd",
                    "metric": "file_bytes", "stat": "value", "value": size, "unit": "B"})
    for stat, x in (("min", min(speeds)), ("median", statistics.median(speeds)),
                    ("max", max(speeds))):
        records.append({"bench": "format", "case": case, "variant": "parquet-zstd",
                        "metric": "write_mb_per_s", "stat": stat, "value": x, "unit": "MB/s"})
    with open(args.json, "w") as f:
        json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
