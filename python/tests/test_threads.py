"""Scans, files and batches used from several threads (issue 9, item 3).

A scan is an iterator: one thread reads it at a time, a second one gets a
clear RuntimeError (never a crash), and close() from any thread cancels a
read in progress promptly. Every test is time-bounded: threads are daemons
joined with a deadline, and pytest-timeout bounds the whole test."""
import random
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import quiver

pytestmark = pytest.mark.timeout(120)

N = 100_000
JOIN = 60  # seconds a thread may take before the test fails (it would be a hang)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(11)
    t = pa.table({"id": np.arange(N, dtype=np.int64), "y": rng.random(N),
                  "s": pa.array([f"s{i % 1000}" for i in range(N)])})
    p = tmp_path_factory.mktemp("threads") / "t.qvr"
    quiver.write(t, p, row_group_rows=8192)
    return p


def run_threads(targets):
    ts = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in ts:
        t.start()
    for t in ts:
        t.join(JOIN)
    assert not any(t.is_alive() for t in ts), "a thread hung"


# A filter no row matches that statistics cannot prune: one long get_next.
NO_MATCH = "y = 0.123456789"


@pytest.mark.parametrize("threads", [None, quiver.SCAN_SYNC, 1, 3])
@pytest.mark.parametrize("kind", ["scan_batches", "scan"])
def test_two_threads_iterate_one_scan(path, threads, kind, no_leaks):
    with quiver.open(path) as f:
        for rep in range(8):
            src = getattr(f, kind)(batch_rows=4096, threads=threads, columns=["id"])
            got = [[], []]
            errors = []

            def reader(i):
                def run():
                    try:
                        if kind == "scan":
                            while True:
                                got[i].append(src.read_next_batch())
                        for b in src:
                            got[i].append(b)
                    except StopIteration:
                        pass
                    except RuntimeError as e:
                        errors.append(str(e))
                    except BaseException as e:  # anything else is a defect
                        errors.append(f"unexpected {e!r}")
                return run

            run_threads([reader(0), reader(1)])
            assert not [e for e in errors if "another thread" not in e], errors
            ids = np.concatenate([b.column(0).to_numpy() for g in got for b in g] or [[]])
            # No batch twice, none corrupted: what was read is a set of distinct rows.
            assert len(np.unique(ids)) == len(ids)
            if not errors:
                assert len(ids) == N
            del got, src


@pytest.mark.parametrize("threads", [None, quiver.SCAN_SYNC, 1, 4])
def test_close_from_another_thread_cancels(path, threads, no_leaks):
    rng = random.Random(threads)
    outcomes = set()
    with quiver.open(path) as f:
        for rep in range(25):
            scan = f.scan_batches(batch_rows=2048, threads=threads,
                                  filter=NO_MATCH if rep % 2 else None)
            result = []

            def consume():
                try:
                    for _ in scan:
                        pass
                    result.append("end")
                except quiver.CancelledError as e:
                    assert "closed by another thread" in str(e)
                    result.append("cancelled")

            t = threading.Thread(target=consume, daemon=True)
            t.start()
            time.sleep(rng.random() * 0.01)
            scan.close()  # returns once the reading thread let go of the stream
            assert scan.stats() is None
            t.join(JOIN)
            assert not t.is_alive(), "close() did not stop the reading thread"
            assert result in (["end"], ["cancelled"])
            outcomes.add(result[0])
            scan.close()  # idempotent
            with pytest.raises(StopIteration):
                next(scan)
    assert outcomes  # every round ended one of the two ways


def test_close_from_many_threads_at_once(path, no_leaks):
    with quiver.open(path) as f:
        for rep in range(10):
            scan = f.scan_batches(batch_rows=1024, filter=NO_MATCH)
            started = threading.Event()

            def consume():
                started.set()
                try:
                    for _ in scan:
                        pass
                except quiver.CancelledError:
                    pass

            closers = [scan.close] * 4
            t = threading.Thread(target=consume, daemon=True)
            t.start()
            started.wait(JOIN)
            run_threads(closers)
            t.join(JOIN)
            assert not t.is_alive()


def test_busy_scan_refuses_export_and_keeps_stats(path):
    with quiver.open(path) as f:
        scan = f.scan_batches(batch_rows=1024, threads=quiver.SCAN_SYNC)
        next(scan)
        st = scan.stats()
        assert st["batches"] >= 1
        # While another thread reads, stats() answers (as of the last batch)
        # and __arrow_c_stream__ refuses rather than moving the stream away.
        seen = []

        def consume():
            try:
                for _ in scan:
                    pass
            except ValueError as e:  # exported between batches: "consumed once"
                assert "consumed once" in str(e)

        t = threading.Thread(target=consume, daemon=True)
        t.start()
        for _ in range(200):
            s = scan.stats()
            if s is None:
                break
            seen.append(s["rows_output"])
            try:
                scan.__arrow_c_stream__()
            except (RuntimeError, ValueError):
                pass
            else:  # it moved out between batches: the reader then stops
                break
        t.join(JOIN)
        assert not t.is_alive()
        assert seen == sorted(seen)


def test_file_shared_by_threads(path, no_leaks):
    """A File is immutable once open: scans and takes from many threads at
    once are fine, and close() on another thread never frees the reader
    under a scan being opened (it is reference counted)."""
    f = quiver.open(path)
    errors = []

    def work(seed):
        def run():
            rng = np.random.default_rng(seed)
            try:
                for _ in range(5):
                    idx = rng.integers(0, N, 50)
                    got = f.take(idx, columns=["id"]).column(0).to_numpy()
                    assert (got == idx).all()
                    n = sum(b.num_rows for b in f.scan_batches(columns=["id"], filter="id < 5000"))
                    assert n == 5000
            except ValueError as e:  # the file was closed by another thread
                assert "closed" in str(e)
            except BaseException as e:
                errors.append(repr(e))
        return run

    def closer():
        time.sleep(0.05)
        f.close()

    run_threads([work(i) for i in range(4)] + [closer])
    assert not errors, errors


def test_batches_released_on_other_threads(path, no_leaks):
    """Batches are freed by whichever thread drops them last (consumers do
    that from their own threads), while the scan keeps producing."""
    with quiver.open(path) as f:
        held = []
        lock = threading.Lock()
        stop = threading.Event()

        def dropper():
            while not stop.is_set() or held:
                with lock:
                    if held:
                        held.pop()
                time.sleep(0)

        ts = [threading.Thread(target=dropper, daemon=True) for _ in range(3)]
        for t in ts:
            t.start()
        rows = 0
        for b in f.scan_batches(batch_rows=2048, prefetch=4):
            rows += b.num_rows
            with lock:
                held.append(b)
            del b
        stop.set()
        for t in ts:
            t.join(JOIN)
        assert rows == N
        assert not any(t.is_alive() for t in ts)


def test_writers_on_many_threads(tmp_path, no_leaks):
    """Writers share nothing: concurrent writes to different paths and to
    the same path all succeed, each file complete (renames are atomic)."""
    t = pa.table({"a": np.arange(50_000)})
    errors = []

    def write(i):
        def run():
            try:
                quiver.write(t, tmp_path / f"w{i % 3}.qvr", row_group_rows=4096)
            except BaseException as e:
                errors.append(repr(e))
        return run

    run_threads([write(i) for i in range(6)])
    assert not errors, errors
    for i in range(3):
        with quiver.open(tmp_path / f"w{i}.qvr") as f:
            assert f.to_arrow().equals(t)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w0.qvr", "w1.qvr", "w2.qvr"]


@pytest.mark.parametrize("action", ["close", "next", "export"])
def test_signal_handler_touching_the_scan_being_read(path, action, no_leaks):
    """A signal handler runs on the reading thread between waits for the
    next batch (or between batches): closing the scan there must not
    deadlock (it cannot wait for itself) nor leave a freed stream behind;
    reading or exporting it there is refused."""
    import signal
    main = threading.main_thread().ident
    with quiver.open(path) as f:
        for rep in range(30):
            scan = f.scan_batches(batch_rows=1024, filter=NO_MATCH if rep % 2 else None,
                                  threads=None if rep % 3 else quiver.SCAN_SYNC)

            refused = []

            def handler(signum, frame, scan=scan):
                try:
                    if action == "close":
                        scan.close()
                    elif action == "next":
                        next(scan, None)
                    else:
                        scan.__arrow_c_stream__()  # the capsule dies at once
                except (RuntimeError, ValueError) as e:
                    refused.append(str(e))

            old = signal.signal(signal.SIGUSR1, handler)
            timer = threading.Timer(random.random() * 0.01,
                                    lambda: signal.pthread_kill(main, signal.SIGUSR1))
            try:
                timer.start()
                try:
                    for _ in scan:
                        pass
                except (quiver.CancelledError, RuntimeError, ValueError):
                    pass
                timer.join(JOIN)
                time.sleep(0.001)  # let a late signal's handler run here
            finally:
                timer.join(JOIN)
                signal.signal(signal.SIGUSR1, old)
            scan.close()
            assert scan.stats() is None
            assert all("another thread" in m or "closed" in m or "consumed" in m
                       for m in refused), refused
            del scan
