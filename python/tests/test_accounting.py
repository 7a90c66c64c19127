"""Issue 9, item 14: a memory_limit is charged the bytes a read really holds plus a
bounded slack, not a 1 MiB block per column per batch (to_arrow() of a 75 MiB file used
to fail under a 128 MiB limit)."""
import os

import numpy as np
import pyarrow as pa

import quiver

MiB = 1 << 20
# What a live reservation may hold beyond its use (docs/memory.md), and room for the
# few reservations besides the batches' (the reader's, a finished scan's).
SLACK = 64 * 1024
OTHERS = 8 * SLACK


def _int64_file(tmp_path, nbytes):
    rng = np.random.default_rng(14)
    info = np.iinfo(np.int64)
    values = rng.integers(info.min, info.max, nbytes // 8, dtype=np.int64)  # incompressible
    path = str(tmp_path / "int64.qvr")
    quiver.write(pa.table({"x": values}), path)
    return path, values


def test_to_arrow_of_75_mib_file_under_128_mib_limit(tmp_path):
    path, values = _int64_file(tmp_path, 75 * MiB)
    assert os.path.getsize(path) >= 75 * MiB
    f = quiver.open(path, memory_limit=128 * MiB)
    for batch_rows in (None, 8192, 1000):
        t = f.to_arrow(batch_rows=batch_rows)
        assert t.num_rows == len(values)
        assert np.array_equal(t.column("x").to_numpy(), values)
        # Holding the table: every batch is charged its bytes and no slack.
        st = f.memory_stats()
        assert st["reserved"] >= len(values) * 8
        assert st["reserved"] <= len(values) * 8 + t.column("x").num_chunks * 1024 + OTHERS
        del t
    st = f.memory_stats()
    assert st["oom_count"] == 0
    assert st["peak_reserved"] <= 128 * MiB
    f.close()


def test_small_batches_are_charged_their_bytes(tmp_path):
    # The figure: a 15 MiB int64 column read in 1000-row batches reserved
    # 4,027 MiB; it is now charged its bytes.
    path, values = _int64_file(tmp_path, 15 * MiB)
    f = quiver.open(path, memory_limit=20 * MiB)
    batches = list(f.scan(batch_rows=1000))
    assert sum(len(b) for b in batches) == len(values)
    st = f.memory_stats()
    assert st["reserved"] <= len(values) * 8 + len(batches) * 1024 + OTHERS
    assert st["peak_reserved"] <= 20 * MiB
    del batches
    f.close()
