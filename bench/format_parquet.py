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
side: file size and the ratio to Parquet-zstd, write MB/s per wall second
(MB of Arrow data as bench_format counts them: its "arrow"/"bytes" record,
so both speeds share one numerator) and how many times faster than
Parquet-zstd. The Parquet figures are appended to FILE as records with
variant "parquet-zstd" (file_bytes; write_mb_per_s, and per CPU second of
the process write_mb_per_cpu_s, min/median/max), beside bench_format's
"default" and "compact".

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
    """One Parquet-zstd write into memory: (wall seconds, CPU seconds of the
    process, bytes). The process's CPU time rather than the thread's, so
    that work pyarrow hands to a thread of its own is counted too."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    sink = pa.BufferOutputStream()
    t0, c0 = time.perf_counter(), time.process_time()
    pq.write_table(table, sink, compression="zstd")
    buf = sink.getvalue()
    return time.perf_counter() - t0, time.process_time() - c0, buf.size


def by_key(records):
    out = {}
    for r in records:
        out[(r.get("case"), r.get("variant"), r.get("metric"), r.get("stat"))] = r["value"]
    return out


# Compared per wall second only: bench_format's write_mb_per_cpu_s counts
# the CPU time of its calling thread, and Quiver's writer encodes on its
# pipeline thread (writer_pipeline.c), so that figure leaves most of the
# work out and cannot stand beside a process's CPU time.
SPEEDS = (("write_mb_per_s", "MB/s"),)


def report(records, case, parquet):
    """The side-by-side lines for `case` (bench_format's records) and the
    Parquet-zstd figures {"bytes": n, metric: (median, best)} of SPEEDS
    (MB of Arrow per wall second)."""
    v = by_key(records)
    hdr = f"{'format':<18} {'file MB':>9} {'size/P':>7}"
    for _, unit in SPEEDS:
        hdr += f" | {unit:>10} {'best':>8} {'speed/P':>8} {'best/P':>7}"
    lines = [hdr]
    rows = [(f"quiver {m}", v.get((case, m, "file_bytes", "value")),
             {k: (v.get((case, m, k, "median")), v.get((case, m, k, "max"))) for k, _ in SPEEDS})
            for m in ("default", "compact")]
    rows.append(("parquet-zstd", parquet["bytes"], {k: parquet[k] for k, _ in SPEEDS}))
    for name, size, speeds in rows:
        if size is None or any(None in speeds[k] for k, _ in SPEEDS):
            continue
        line = f"{name:<18} {size / MB:>9.2f} {size / parquet['bytes']:>6.2f}x"
        for k, _ in SPEEDS:
            (med, best), (pmed, pbest) = speeds[k], parquet[k]
            line += f" | {med:>10.0f} {best:>8.0f} {med / pmed:>7.2f}x {best / pbest:>6.2f}x"
        lines.append(line)
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
    # bench_format's JSON holds 6 significant digits (%g)
    rows = v.get((case, "arrow", "rows", "value"), table.num_rows)
    if abs(table.num_rows - rows) > 1e-5 * rows:
        print(f"{csv}: {table.num_rows} rows, bench_format read {rows:.0f}", file=sys.stderr)
        return 1
    print(f"{case}: {table.num_rows:,} rows from {csv} (loaded in "
          f"{time.perf_counter() - t0:.1f} s); pyarrow {pa.__version__}, {args.reps} repeats")
    pa.set_cpu_count(1)
    write_parquet(table)  # warm-up: the allocator's first touch of the pages
    samples = {"write_mb_per_s": [], "write_mb_per_cpu_s": []}
    size = None
    for _ in range(max(1, args.reps)):
        wall, cpu, size = write_parquet(table)
        samples["write_mb_per_s"].append(arrow_bytes / wall / MB)
        samples["write_mb_per_cpu_s"].append(arrow_bytes / cpu / MB)
    parquet = {"bytes": size}
    parquet.update({k: (statistics.median(samples[k]), max(samples[k])) for k, _ in SPEEDS})
    for line in report(records, case, parquet):
        print(line)
    cpu = samples["write_mb_per_cpu_s"]
    print(f"(MB of Arrow data per wall second: bench_format's Quiver writes into its memory\n"
          f" sink, pyarrow's into a BufferOutputStream. speed/P above 1: faster than\n"
          f" Parquet-zstd; size/P below 1: smaller; file MB as bench_format's JSON holds them\n"
          f" (6 significant digits). Parquet-zstd per CPU second of the process: median\n"
          f" {statistics.median(cpu):.0f} MB/s, not set beside bench_format's MB/cpu-s, which\n"
          f" counts only its calling thread while Quiver's writer encodes on a pipeline thread.\n"
          f" On a shared machine the wall figures vary: see median and best.)")
    records.append({"bench": "format", "case": case, "variant": "parquet-zstd",
                    "metric": "file_bytes", "stat": "value", "value": size, "unit": "B"})
    for k, x in samples.items():
        for stat, val in (("min", min(x)), ("median", statistics.median(x)), ("max", max(x))):
            records.append({"bench": "format", "case": case, "variant": "parquet-zstd",
                            "metric": k, "stat": stat, "value": val, "unit": "MB/s"})
    with open(args.json, "w") as f:
        json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
