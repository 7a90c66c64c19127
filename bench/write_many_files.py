"""CPU cost of one small write into an empty directory and into one holding
many files, for one or more builds of the quiver package side by side.

    python3 bench/write_many_files.py [--files N] [--writes W] [--repeat R] [PKG_DIR ...]

Each PKG_DIR is put first on PYTHONPATH in a child process (none: the
installed package). A writer that lists its directory on every write pays in
proportion to the files there, so a loop writing N files costs O(N^2). Prints
min and median CPU ms per 3-row write, R times per package, interleaved.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import os, sys, time, json, tempfile
import pyarrow as pa, quiver
n, writes = int(sys.argv[1]), int(sys.argv[2])
t = pa.table({"a": [1, 2, 3]})
def run(d):
    xs = []
    for i in range(writes):
        p = os.path.join(d, f"w{i}.qvr")
        c = time.process_time()
        quiver.write(t, p)
        xs.append((time.process_time() - c) * 1e3)
    return xs
with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as full:
    for i in range(n):
        open(os.path.join(full, f"other{i}.qvr"), "w").close()
    print(json.dumps({"pkg": os.path.dirname(os.path.dirname(quiver.__file__)),
                      "empty": run(empty), "full": run(full)}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--writes", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("pkgs", nargs="*", default=[""])
    a = ap.parse_args()
    import json
    print(f"3-row writes, CPU ms (min / median of {a.writes}); 'full' holds {a.files} files")
    for r in range(a.repeat):
        for pkg in a.pkgs:
            env = dict(os.environ)
            if pkg:
                env["PYTHONPATH"] = pkg + os.pathsep + env.get("PYTHONPATH", "")
            out = subprocess.run([sys.executable, "-c", CHILD, str(a.files), str(a.writes)],
                                 env=env, check=True, capture_output=True, text=True, timeout=600)
            d = json.loads(out.stdout)
            e, f = d["empty"], d["full"]
            print(f"run {r + 1} {d['pkg']:<55} empty {min(e):6.2f} / {statistics.median(e):6.2f}"
                  f"   full {min(f):6.2f} / {statistics.median(f):6.2f}"
                  f"   full/empty {statistics.median(f) / statistics.median(e):5.2f}x")


if __name__ == "__main__":
    main()
