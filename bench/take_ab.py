"""A/B of bench/compare.py's take_100 / take_warm on lineitem SF1 (issue 14, item 5).

    python3 bench/take_ab.py PYTHONPATH_A PYTHONPATH_B [ROUNDS] [THREADS] [CALLS]

Each round runs both builds (`import quiver` from each PYTHONPATH; the child
checks it got that one) in fresh processes, alternating which goes first.
A child measures as compare.py does: a cold take (quiver.open + take of the
same 100 random rows, numpy seed 42, inside the timed call; the page cache
warm) CALLS times after one unmeasured call, then on one open file a warm
take CALLS times after one unmeasured take, each call after gc.collect();
it reports the minimum of its calls. Printed: min and median over rounds
per build, and the ratios A/B. THREADS 1 means quiver.SCAN_SYNC.
"""
import json, os, statistics, subprocess, sys
import pathlib
PATH = str(pathlib.Path(__file__).resolve().parent.parent / "data/compare/files/lineitem-sf1/quiver.qvr")
CHILD = r'''
import sys, time, json, gc
import numpy as np
import quiver
assert quiver.__file__.startswith(sys.argv[2]), quiver.__file__
path = sys.argv[1]; thr = int(sys.argv[3]); t = quiver.SCAN_SYNC if thr == 1 else thr
with quiver.open(path) as f: n = len(f)
idx = np.sort(np.random.default_rng(42).choice(n, min(n, 100), replace=False)).astype(np.int64)
def cold():
    with quiver.open(path) as f:
        return f.take(idx, threads=t)
cold()
cs = []
for _ in range(int(sys.argv[4])):
    gc.collect(); t0 = time.perf_counter(); r = cold(); cs.append(time.perf_counter() - t0)
    assert r.num_rows == 100
f = quiver.open(path)
f.take(idx, threads=t)
ws = []
for _ in range(int(sys.argv[4])):
    gc.collect(); t0 = time.perf_counter(); r = f.take(idx, threads=t); ws.append(time.perf_counter() - t0)
    assert r.num_rows == 100
f.close()
print(json.dumps({"cold": min(cs), "warm": min(ws)}))
'''
def main():
    a, b = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    thr = sys.argv[4] if len(sys.argv) > 4 else "1"
    inner = sys.argv[5] if len(sys.argv) > 5 else "5"
    res = {"A": {"cold": [], "warm": []}, "B": {"cold": [], "warm": []}}
    for r in range(rounds):
        for tag, pp in ([("A", a), ("B", b)] if r % 2 == 0 else [("B", b), ("A", a)]):
            env = dict(os.environ, PYTHONPATH=pp)
            out = subprocess.run([sys.executable, "-c", CHILD, PATH, pp, thr, inner], env=env,
                                 capture_output=True, text=True, check=True).stdout
            d = json.loads(out)
            for k in d: res[tag][k].append(d[k] * 1e3)
    print(f"threads={thr} rounds={rounds} (each round: min of {inner} calls in a fresh process), ms per take")
    for k in ["cold", "warm"]:
        ma, mb = min(res["A"][k]), min(res["B"][k]); da, db = statistics.median(res["A"][k]), statistics.median(res["B"][k])
        print(f"  {k:5s} A {a}: min {ma:7.3f} med {da:7.3f} | B {b}: min {mb:7.3f} med {db:7.3f} | A/B min {ma/mb:5.2f}x med {da/db:5.2f}x")
main()
