"""Many open / scan / take / close cycles leave nothing behind: the pool is
back to zero and the process does not grow."""
import gc

import numpy as np
import pyarrow as pa

import quiver


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_open_scan_close_cycles(tmp_path):
    n = 100_000
    t = pa.table({"a": pa.array(np.arange(n)), "s": pa.array([f"s{i % 5000}" for i in range(n)]),
                  "l": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int64()))})
    p = tmp_path / "leak.qvr"
    quiver.write(t, p, row_group_rows=16384)
    gc.collect()
    base = quiver.memory_stats()

    def cycle(i):
        with quiver.open(p) as f:
            assert f.to_arrow(threads=None if i % 2 else quiver.SCAN_SYNC).num_rows == n
            r = f.scan(columns=["s"], filter="a > 50000", batch_rows=4096)
            r.read_next_batch()
            r.close()
            assert f.take([3, 99_999, 3]).num_rows == 3
            f.statistics
            f.row_group_statistics(1)
            s = f.scan_batches(columns=["l"])  # dropped without being read
            del s
        if i % 10 == 0:
            quiver.write(t.slice(0, 20_000), tmp_path / "w.qvr")

    for i in range(20):  # warm up allocators and caches
        cycle(i)
    gc.collect()
    rss0 = rss_bytes()
    for i in range(200):
        cycle(i)
    gc.collect()
    grown = rss_bytes() - rss0
    now = quiver.memory_stats()
    assert now["reserved"] == base["reserved"]
    assert now["reservations"] == base["reservations"]
    assert grown < 32 << 20, f"RSS grew by {grown >> 20} MiB over 200 cycles"


def test_pool_back_to_zero_after_everything_is_dropped(tmp_path):
    p = tmp_path / "z.qvr"
    quiver.write(pa.table({"x": np.arange(50_000)}), p)
    gc.collect()
    assert quiver.memory_stats()["reservations"] == 0, quiver.memory_stats()
    f = quiver.open(p)
    t = f.to_arrow()
    assert quiver.memory_stats()["reserved"] > 0
    f.close()
    del t
    gc.collect()
    s = quiver.memory_stats()
    assert s["reserved"] == 0 and s["reservations"] == 0, s
