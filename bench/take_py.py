"""Cold and warm takes of 100 random rows (all columns) from Python, on one
.qvr file (issue 14, item 5):

    PYTHONPATH=... python3 bench/take_py.py FILE.qvr [REPEATS] [THREADS...]

THREADS: numbers or "default" (threads=None); default "1 default". Per
setting: the open alone, open + take on a fresh open file ("cold": the
page cache warm), and the same take again on one open file ("warm"), min
and median over REPEATS (30). The rows: 100 distinct, sorted, seed 42."""
import sys, time, statistics, numpy as np, quiver
path = sys.argv[1]; reps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
thr_list = [None if t == "default" else int(t) for t in (sys.argv[3:] or ["1", "default"])]
with quiver.open(path) as f:
    n, ncols = len(f), len(f.schema)
idx = np.sort(np.random.default_rng(42).choice(n, 100, replace=False)).astype(np.int64)
def stats(ts):
    return f"min {min(ts)*1e3:7.3f} med {statistics.median(ts)*1e3:7.3f} ms"
for thr in thr_list:
    opn, cold, warm = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        f = quiver.open(path)
        t1 = time.perf_counter()
        t = f.take(idx, threads=thr)
        t2 = time.perf_counter()
        opn.append(t1 - t0); cold.append(t2 - t0)
        assert t.num_rows == 100 and t.num_columns == ncols
        f.close()
    with quiver.open(path) as f:
        f.take(idx, threads=thr)
        for _ in range(reps):
            t0 = time.perf_counter(); f.take(idx, threads=thr); warm.append(time.perf_counter() - t0)
    print(f"threads={thr}: open {stats(opn)} | cold open+take {stats(cold)} | warm take {stats(warm)}")
