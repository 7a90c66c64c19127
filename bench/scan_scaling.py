"""Does a second worker pay? Full scans of one .qvr file to Arrow at 1 and 2
threads, with wall, user and system time of each, in two settings:

- repeated: one process scans again and again, 1 and 2 threads alternating
  (what `bench/run compare` does: its figures are medians of repeated runs);
- fresh: every scan in a process of its own (after one small warm-up scan in
  that process), as a script that reads a file once sees it.

The system time tells where the second worker's gain goes: the pages of the
output (about as many bytes as the table in Arrow) are new memory whose page
faults the kernel serves, and in the repeated setting only the allocator's
reuse of the previous scan's pages avoids them (see docs/benchmarks.md).

usage: python3 bench/scan_scaling.py FILE.qvr [--runs N] [--fresh-runs N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def scan_once(path, threads):
    import quiver
    c0, w0 = os.times(), time.perf_counter()
    with quiver.open(path) as f:
        f.to_arrow(threads=quiver.SCAN_SYNC if threads == 1 else threads)
    w, c1 = time.perf_counter() - w0, os.times()
    return w * 1e3, (c1.user - c0.user) * 1e3, (c1.system - c0.system) * 1e3


def child(path, threads):
    import quiver
    with quiver.open(path) as f:  # imports, page cache and the library's first use
        f.to_arrow(columns=[f.schema.names[0]], threads=quiver.SCAN_SYNC)
    print(*scan_once(path, threads))


def summary(label, runs):
    out = {}
    for t in (1, 2):
        ws = [r[0] for r in runs[t]]
        out[t] = statistics.median(ws)
        print(f"  {label} {t} thread{'s' if t > 1 else ''}: wall min {min(ws):.1f} med {out[t]:.1f} ms;"
              f" median user {statistics.median(r[1] for r in runs[t]):.0f} ms,"
              f" sys {statistics.median(r[2] for r in runs[t]):.0f} ms")
    print(f"  {label} 2 threads over 1 (median wall): {out[1] / out[2]:.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path")
    ap.add_argument("--runs", type=int, default=8, help="repeated scans per thread count")
    ap.add_argument("--fresh-runs", type=int, default=6, help="fresh processes per thread count")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.path, a.child)
        return
    print(f"# {a.path}; load average {os.getloadavg()[0]:.2f}; usable CPUs {len(os.sched_getaffinity(0))}")
    runs = {1: [], 2: []}
    for t in (1, 2):
        scan_once(a.path, t)  # warm-up
    for _ in range(a.runs):
        for t in (1, 2):
            runs[t].append(scan_once(a.path, t))
    summary("repeated", runs)
    runs = {1: [], 2: []}
    for _ in range(a.fresh_runs):
        for t in (1, 2):
            r = subprocess.run([sys.executable, __file__, a.path, "--child", str(t)],
                               capture_output=True, text=True, timeout=600, check=True)
            runs[t].append(tuple(float(x) for x in r.stdout.split()))
    summary("fresh", runs)
    print(f"# load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
