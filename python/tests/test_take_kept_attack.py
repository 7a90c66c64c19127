"""Takes that come back to what the decoders keep (frames of zstd string
columns, delta and run-end vectors), in hostile orders on one open file:
cycles over more row groups' frames than are kept, far alternation, one row
again and again, descending rows, duplicates, and several threads taking
from the same file at once; every result against pyarrow's take. Threads
carry a deadline (join with a timeout, then fail if one is still alive)."""
import threading

import numpy as np
import pyarrow as pa

import quiver

N = 120_000


def _table():
    rng = np.random.default_rng(3)
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])
    # Long free text (zstd frames sized by bytes), sorted keys (delta),
    # runs (run-end), floats with nulls.
    text = [" ".join(words[rng.integers(0, 6, 40)]) + f" {i}" for i in range(N)]
    return pa.table({
        "key": pa.array(np.cumsum(rng.integers(0, 30, N)), type=pa.int64()),
        "run": pa.array(np.repeat(np.arange(N // 7 + 1), 7)[:N] * 1000 - 5, type=pa.int64()),
        "text": pa.array(text),
        "x": pa.array(rng.standard_normal(N), mask=np.arange(N) % 11 == 3),
    })


def _orders(n, rg):
    """Row lists, each as a take: cycles, alternation, repeats, descending."""
    out = []
    groups = n // rg
    for rnd in range(3):
        # One row in each of up to 40 row groups, in a cycle, then again.
        out.append([g * rg + (g * 37 + rnd * 11) % rg for g in range(min(groups, 40))])
    out += [[0, n - 1]] * 4
    out += [[n // 2]] * 5
    out += [[r] for r in range(n - 1, 0, -(rg // 3 + 1))][:30]
    out.append([5, 5, 5, rg + 1, rg + 1, n - 1, n - 1])
    out.append(list(range(n - 1, n - 40, -1)))  # unsorted (descending) in one take
    return out


def test_hostile_orders_exact(tmp_path):
    t = _table()
    p = tmp_path / "k.qvr"
    rg = 4096
    quiver.write(t, p, row_group_rows=rg)
    with quiver.open(p) as f:
        for rep in range(3):
            for rows in _orders(len(t), rg):
                idx = np.array(rows, dtype=np.int64)
                got = f.take(idx)
                assert got.equals(t.take(pa.array(idx))), (rep, rows[:5])


def test_threads_on_one_file(tmp_path):
    t = _table()
    p = tmp_path / "m.qvr"
    rg = 4096
    quiver.write(t, p, row_group_rows=rg)
    orders = _orders(len(t), rg)
    errors = []
    with quiver.open(p) as f:
        def work(seed):
            try:
                rng = np.random.default_rng(seed)
                for k in range(40):
                    if k % 2:
                        idx = np.array(orders[(seed + k) % len(orders)], dtype=np.int64)
                    else:
                        idx = rng.choice(len(t), 30)
                    assert f.take(idx).equals(t.take(pa.array(idx)))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        th = [threading.Thread(target=work, args=(s,), daemon=True) for s in range(4)]
        for x in th:
            x.start()
        for x in th:
            x.join(300)
        assert not any(x.is_alive() for x in th), "a take thread did not finish"
    assert not errors, errors
