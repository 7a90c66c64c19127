"""Cost of validating every batch the Python API hands out (issue 9, item 13).

    python3 bench/py_validate.py FILE.qvr [RUNS]

Scans FILE fully (all columns) through scan_batches() with validation on
(the default) and off (quiver.open(..., validate=False)), alternating, RUNS times each
(default 7), and prints min and median wall time per mode and the
difference. Make the file with `qv gen lineitem --sf 0.1 FILE.qvr`.
"""
import statistics
import sys
import time

import quiver


def one(files, validate, threads):
    t0 = time.perf_counter()
    rows = 0
    for b in files[validate].scan_batches(threads=threads):
        rows += b.num_rows
    return time.perf_counter() - t0, rows


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    with quiver.open(path) as fv, quiver.open(path, validate=False) as fn:
        f = {True: fv, False: fn}
        for threads in (None, quiver.SCAN_SYNC):
            one(f, True, threads)  # warm the page cache
            times = {True: [], False: []}
            for _ in range(runs):
                for v in (False, True):
                    dt, rows = one(f, v, threads)
                    times[v].append(dt)
            name = "default threads" if threads is None else "SCAN_SYNC"
            for v in (False, True):
                t = times[v]
                print(f"{name:16s} validate={v!s:5s}: min {min(t) * 1e3:7.1f} ms  "
                      f"median {statistics.median(t) * 1e3:7.1f} ms  ({rows:,} rows, {runs} runs)")
            d = statistics.median(times[True]) - statistics.median(times[False])
            print(f"{name:16s} validation costs {d * 1e3:+.1f} ms per scan "
                  f"({d / statistics.median(times[False]) * 100:+.0f}% of the median)")


if __name__ == "__main__":
    main()
