"""Writes of the comparison's small real tables (bench/compare/real_tables.py),
Quiver (1 thread, not durable) against pyarrow's Parquet-zstd (which never
fsyncs), for one or more builds of the package side by side:

    python3 bench/write_small.py [--reps N] [--rounds R] [--tables a,b] [PKG_DIR ...]

Each PKG_DIR (a `pip install --target` of ./python; none: the installed
package) runs in a child process with it first on PYTHONPATH, the builds
taking turns for R rounds; each child writes every table N times with both
writers, alternating, and reports the median and minimum of each. Printed per
table and build: Quiver's median ms, Parquet's, their ratio (Parquet/Quiver:
above 1, Quiver is faster) and Quiver's file size; then the ratios' geometric
mean. Issue 15 asks that no table write slower than Parquet-zstd."""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(reps, tables):
    sys.path.insert(0, HERE)
    import pyarrow.parquet as pq
    import quiver
    from compare import real_tables
    out = {}
    d = tempfile.mkdtemp(prefix="write-small-")
    qp, pp = os.path.join(d, "t.qvr"), os.path.join(d, "t.parquet")
    for key, *_ in real_tables.TABLES:
        if tables and key not in tables:
            continue
        t = real_tables.load(key).table
        tq, tp = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            quiver.write(t, qp, threads=1, durable=False)
            t1 = time.perf_counter()
            pq.write_table(t, pp, compression="zstd")
            t2 = time.perf_counter()
            tq.append(t1 - t0)
            tp.append(t2 - t1)
        out[key] = {"qv": tq, "pq": tp, "size": os.path.getsize(qp)}
    os.remove(qp)
    os.remove(pp)
    os.rmdir(d)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tables", help="comma-separated names (vega-airports, sm-fair, ...)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("pkgs", nargs="*")
    a = ap.parse_args()
    tables = a.tables.split(",") if a.tables else []
    if a.child:
        child(a.reps, tables)
        return
    pkgs = a.pkgs or [""]
    runs = {p: [] for p in pkgs}
    for _ in range(a.rounds):
        for p in pkgs:
            env = dict(os.environ)
            if p:
                env["PYTHONPATH"] = p + os.pathsep + env.get("PYTHONPATH", "")
            cmd = [sys.executable, __file__, "--child", "--reps", str(a.reps)]
            if a.tables:
                cmd += ["--tables", a.tables]
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            runs[p].append(json.loads(res.stdout))
    for p in pkgs:
        print(f"== {p or 'installed package'}")
        ratios = []
        for key in runs[p][0]:
            tq = [x for r in runs[p] for x in r[key]["qv"]]
            tp = [x for r in runs[p] for x in r[key]["pq"]]
            mq, mp = statistics.median(tq), statistics.median(tp)
            ratios.append(mp / mq)
            print(f"{key:24s} quiver {mq * 1e3:7.2f} ms (min {min(tq) * 1e3:6.2f})  "
                  f"parquet-zstd {mp * 1e3:7.2f} ms (min {min(tp) * 1e3:6.2f})  "
                  f"parquet/quiver {mp / mq:5.2f}  {runs[p][0][key]['size']:9,d} B")
        print(f"geometric mean parquet/quiver {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")


if __name__ == "__main__":
    main()
