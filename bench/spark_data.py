"""Prepares the data of `bench/run spark`: TPC-H lineitem as one Quiver file
and as one Parquet (zstd) file, from the same Arrow table, cached under
data/spark/. Prints the two paths and sizes (the Java side reads them).

The table comes from bench/compare/datasets.py (tpchgen-cli's Parquet output,
string_view cast to string), so the Spark benchmark and the head-to-head
comparison read the same rows."""
import argparse
import os
import sys

import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import datasets  # noqa: E402

import quiver  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    sf = f"{args.scale:g}"
    out = os.path.join(datasets.ROOT, "data", "spark", f"lineitem-sf{sf}")
    qvr = os.path.join(out, "quiver", "lineitem.qvr")
    pqt = os.path.join(out, "parquet", "lineitem.parquet")
    if not (os.path.exists(qvr) and os.path.exists(pqt)):
        table = datasets.lineitem(args.scale).table
        os.makedirs(os.path.dirname(qvr), exist_ok=True)
        os.makedirs(os.path.dirname(pqt), exist_ok=True)
        if not os.path.exists(pqt):
            # pyarrow's defaults (row groups of 1 Mi rows) with zstd: what a
            # Python pipeline writes when it asks for Parquet-zstd.
            pq.write_table(table, pqt + ".tmp", compression="zstd")
            os.replace(pqt + ".tmp", pqt)
        if not os.path.exists(qvr):
            quiver.write(table, qvr)
    print(qvr, os.path.getsize(qvr))
    print(pqt, os.path.getsize(pqt))


if __name__ == "__main__":
    main()
