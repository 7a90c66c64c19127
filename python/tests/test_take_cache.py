"""Repeated takes on one open file reuse the column readers the takes before
opened (the file's take cache, core/src/file/take_cache.c): results stay
exact take after take, from several threads at once, and the cache's memory
goes back to the pool when the file closes."""
import gc
import threading

import numpy as np
import pyarrow as pa

import quiver


def _table(n):
    return pa.table({"a": pa.array(np.arange(n, dtype=np.int64)),
                     "s": pa.array([f"s{i % 977}" for i in range(n)]),
                     "x": pa.array(np.arange(n) * 0.5, mask=np.arange(n) % 9 == 4)})


def test_repeated_takes_exact(tmp_path):
    t = _table(60_000)
    p = tmp_path / "c.qvr"
    quiver.write(t, p, row_group_rows=8192)
    rng = np.random.default_rng(7)
    with quiver.open(p) as f:
        for k in range(6):
            idx = rng.choice(len(t), 100, replace=k % 2 == 1)
            if k % 3 == 0:
                idx = np.sort(idx)
            assert f.take(idx).equals(t.take(pa.array(idx)))


def test_concurrent_takes_one_file(tmp_path):
    t = _table(40_000)
    p = tmp_path / "m.qvr"
    quiver.write(t, p, row_group_rows=4096)
    errors = []
    with quiver.open(p) as f:
        def work(seed):
            try:
                rng = np.random.default_rng(seed)
                for _ in range(10):
                    idx = rng.choice(len(t), 50)
                    assert f.take(idx).equals(t.take(pa.array(idx)))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        th = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for x in th:
            x.start()
        for x in th:
            x.join(120)
    assert not errors, errors


def test_cache_memory_returned_at_close(tmp_path):
    p = tmp_path / "z.qvr"
    quiver.write(_table(30_000), p)
    gc.collect()
    assert quiver.memory_stats()["reservations"] == 0, quiver.memory_stats()
    f = quiver.open(p)
    r = f.take([5, 29_000, 17, 12_345])
    del r
    gc.collect()
    # The readers stay open for the next take, charged to the pool.
    assert quiver.memory_stats()["reservations"] > 1
    f.close()
    gc.collect()
    s = quiver.memory_stats()
    assert s["reserved"] == 0 and s["reservations"] == 0, s
