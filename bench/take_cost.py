"""Cost of small takes from Python, two builds side by side (issue 14, item 5).

    python3 bench/take_cost.py --a PYTHONPATH_A --b PYTHONPATH_B [--rounds 5]

Each build (a PYTHONPATH where `import quiver` finds it; "" = the installed
package) writes its own files (the format differs between builds) from the
same tables: TPC-H lineitem SF1 (data/compare/tpch-sf1/lineitem.parquet)
and generated columns of long strings (1-4 KB), URLs, a 95%-null float
column and UUIDs. Then, alternating between the builds round by round, each
measures in a fresh process: a take of 100 random rows on a freshly opened
file (open + take: "cold", the page cache warm) and on an open file after
one take ("warm"), and a full scan. Reports min and median per build, and
file sizes.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r'''
import json, os, sys, time, uuid
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
import quiver
mode, work, lineitem = sys.argv[1], sys.argv[2], sys.argv[3]

def tables():
    out = {}
    if lineitem and os.path.exists(lineitem):
        out["lineitem"] = pq.read_table(lineitem)
    rng = np.random.default_rng(14)
    n = 200_000
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
    w = np.array(words)
    ls = []
    for i, k in enumerate(rng.integers(1000, 4000, 50_000)):
        s = " ".join(w[rng.integers(0, 9, k // 5)])[:k]
        ls.append(s)
    out["long_strings"] = pa.table({"s": pa.array(ls)})
    hosts = ["example.com", "quiver.dev", "arrow.apache.org", "data.gov", "news.ycombinator.com"]
    paths = ["item", "user", "search", "static/img", "api/v2/orders"]
    out["urls"] = pa.table({"u": pa.array([f"https://{hosts[i % 5]}/{paths[(i * 7) % 5]}/"
                                           f"{int(x)}?ref={int(y)}" for i, (x, y) in
                                           enumerate(zip(rng.integers(0, 10**9, n),
                                                         rng.integers(0, 10**4, n)))])})
    v = rng.normal(size=n)
    out["null95"] = pa.table({"x": pa.array(v, mask=rng.random(n) < 0.95)})
    out["uuids"] = pa.table({"id": pa.array([str(uuid.UUID(bytes=rng.bytes(16))) for _ in range(n)])})
    return out

if mode == "write":
    sizes = {}
    for name, t in tables().items():
        p = os.path.join(work, name + ".qvr")
        quiver.write(t, p)
        sizes[name] = os.path.getsize(p)
    print(json.dumps(sizes))
    sys.exit(0)

res = {}
rng = np.random.default_rng(42)
for name in sorted(os.listdir(work)):
    if not name.endswith(".qvr"):
        continue
    p = os.path.join(work, name)
    with quiver.open(p) as f:
        n = len(f)
    idx = np.sort(rng.choice(n, 100, replace=False)).astype(np.int64)
    cold, warm = [], []
    for _ in range(7):
        t0 = time.perf_counter()
        with quiver.open(p) as f:
            t = f.take(idx)
        cold.append(time.perf_counter() - t0)
        assert t.num_rows == 100
    with quiver.open(p) as f:
        f.take(idx)
        for _ in range(15):
            t0 = time.perf_counter()
            f.take(idx)
            warm.append(time.perf_counter() - t0)
    scans = []
    for _ in range(3 if name.startswith("lineitem") else 2):
        t0 = time.perf_counter()
        with quiver.open(p) as f:
            rows = sum(b.num_rows for b in f.scan(threads=1))
        scans.append(time.perf_counter() - t0)
    res[name[:-4]] = {"cold": min(cold), "warm": min(warm), "scan": min(scans)}
print(json.dumps(res))
'''


def run(pp, args):
    env = dict(os.environ)
    if pp:
        env["PYTHONPATH"] = pp
    else:
        env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-c", CHILD] + args, env=env, capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"child failed ({pp}): {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", default="", help="PYTHONPATH of build A (main)")
    ap.add_argument("--b", required=True, help="PYTHONPATH of build B")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lineitem", default=os.path.join(ROOT, "data", "compare", "tpch-sf1",
                                                        "lineitem.parquet"))
    ap.add_argument("--work", default=tempfile.gettempdir())
    args = ap.parse_args()
    dirs = {}
    sizes = {}
    for k, pp in (("a", args.a), ("b", args.b)):
        dirs[k] = os.path.join(args.work, f"take_cost_{k}")
        os.makedirs(dirs[k], exist_ok=True)
        sizes[k] = run(pp, ["write", dirs[k], args.lineitem])
    samples = {"a": [], "b": []}
    for i in range(args.rounds):
        for k, pp in (("a", args.a), ("b", args.b)) if i % 2 == 0 else (("b", args.b), ("a", args.a)):
            samples[k].append(run(pp, ["measure", dirs[k], ""]))
    names = sorted(samples["a"][0])
    print(f"{'dataset':14} {'metric':6} {'A min':>9} {'A med':>9} {'B min':>9} {'B med':>9}  B/A")
    for n in names:
        for m in ("cold", "warm", "scan"):
            a = [s[n][m] * 1e3 for s in samples["a"]]
            b = [s[n][m] * 1e3 for s in samples["b"]]
            print(f"{n:14} {m:6} {min(a):8.2f}ms {statistics.median(a):8.2f}ms "
                  f"{min(b):8.2f}ms {statistics.median(b):8.2f}ms  {min(b) / min(a):.2f}")
    print()
    for n in sorted(sizes["a"]):
        a, b = sizes["a"][n], sizes["b"][n]
        print(f"size {n:14} A {a:>12,} B {b:>12,} ({(b - a) / a * 100:+.3f}%)")


if __name__ == "__main__":
    main()
