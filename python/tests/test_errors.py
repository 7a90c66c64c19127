"""Native errors become quiver exceptions with the library's message."""
import errno
import os
import signal
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import quiver

N = 300_000


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    return pa.table({"x": pa.array(rng.integers(0, 1 << 40, N)),
                     "s": pa.array([f"value {i}" for i in rng.integers(0, 10**9, N)])})


@pytest.fixture(scope="module")
def path(table, tmp_path_factory):
    p = tmp_path_factory.mktemp("err") / "t.qvr"
    quiver.write(table, p, row_group_rows=65536)
    return p


def corrupt_copy(src, dst, offset, n=16):
    data = bytearray(open(src, "rb").read())
    for i in range(offset, offset + n):
        data[i] ^= 0x5A
    open(dst, "wb").write(bytes(data))


def test_missing_file(tmp_path):
    with pytest.raises(quiver.QuiverFileNotFoundError) as e:
        quiver.open(tmp_path / "nope.qvr")
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, quiver.QuiverError)
    assert e.value.code == errno.ENOENT and e.value.kind == "not_found"
    assert "nope.qvr" in str(e.value)


def test_not_a_quiver_file(tmp_path):
    p = tmp_path / "junk.qvr"
    p.write_bytes(os.urandom(200_000))
    with pytest.raises(quiver.CorruptFileError) as e:
        quiver.open(p)
    assert e.value.code == errno.EIO and e.value.code_name == "EIO"
    assert e.value.kind == "corrupt"
    assert "junk.qvr" in str(e.value)


def test_truncated_file(path, tmp_path):
    p = tmp_path / "short.qvr"
    p.write_bytes(open(path, "rb").read()[:-100])
    with pytest.raises(quiver.CorruptFileError):
        quiver.open(p)


def test_corrupt_footer(path, tmp_path):
    p = tmp_path / "footer.qvr"
    corrupt_copy(path, p, os.path.getsize(path) - 200)
    with pytest.raises(quiver.CorruptFileError):
        quiver.open(p)


def test_corrupt_data_segment(path, table, tmp_path):
    p = tmp_path / "data.qvr"
    corrupt_copy(path, p, os.path.getsize(path) // 3)
    with quiver.open(p) as f:  # the footer is fine
        with pytest.raises(quiver.CorruptFileError) as e:
            f.to_arrow()
        msg = str(e.value)
        assert "data.qvr" in msg and ("checksum" in msg or "corrupt" in msg), msg
        assert e.value.kind == "corrupt"  # the scan's error record (qv_scan_last_error)
        # Without checksums the decoder still never reads out of bounds:
        # either an error or (for bytes it cannot tell are wrong) data.
    with quiver.open(p, verify_checksums=False) as f:
        try:
            f.to_arrow().validate(full=True)
        except (quiver.QuiverError, pa.ArrowInvalid):
            pass


def test_bad_filters(path):
    with quiver.open(path) as f:
        with pytest.raises(quiver.InvalidArgumentError, match="position"):
            f.scan(filter="x > AND")
        with pytest.raises(quiver.InvalidArgumentError, match="nope"):
            f.scan(filter="nope = 1")
        with pytest.raises(quiver.InvalidArgumentError):
            f.scan(filter="s > 5")  # a string column against a number
        assert isinstance(pytest.raises(ValueError, f.scan, filter="(").value,
                          quiver.QuiverError)


@pytest.mark.parametrize("name", ["t q'x.qvr", "é dir/t.qvr", b"bad\xff.qvr"],
                         ids=["quote-space", "non-ascii", "bytes"])
def test_refusals_name_the_file_once(table, tmp_path, name):
    # Whichever layer refuses (Python's index checks, the filter parser,
    # the scan), the message names the file once, as the library writes
    # it: a bytes path's undecodable bytes as \xNN.
    if isinstance(name, bytes):
        p = os.fsencode(tmp_path) + b"/" + name
        shown = p.decode("utf-8", "backslashreplace")
    else:
        os.makedirs(tmp_path / os.path.dirname(name), exist_ok=True)
        p = shown = str(tmp_path / name)
    quiver.write(table.slice(0, 100), p)
    cases = [(IndexError, lambda f: f.take([0, 100])),
             (IndexError, lambda f: f.take([-101])),
             (IndexError, lambda f: f.read_row_group(1)),
             (IndexError, lambda f: f.to_arrow(columns=[5])),
             (quiver.InvalidArgumentError, lambda f: f.scan(filter="x > AND")),
             (quiver.InvalidArgumentError, lambda f: f.scan(filter="nope = 1")),
             (quiver.InvalidArgumentError, lambda f: f.to_arrow(filter="s > 5")),
             (quiver.QuiverError, lambda f: f.scan(columns=["nope"]))]
    with quiver.open(p) as f:
        for cls, call in cases:
            with pytest.raises(cls) as e:
                call(f)
            msg = str(e.value)
            assert msg.count(f"file '{shown}'") == 1, msg


def test_scan_memory_limit(path, no_leaks):
    with quiver.open(path, memory_limit=3 << 20) as f:
        with pytest.raises(quiver.OutOfMemoryError) as e:
            f.to_arrow()
        assert isinstance(e.value, MemoryError) and e.value.kind == "out_of_memory"
        assert "limit" in str(e.value)
        assert f.memory_stats()["limit"] == 3 << 20
        assert f.memory_stats()["oom_count"] >= 1
    # A limit large enough works, and its pool lives on with the batches.
    with quiver.open(path, memory_limit=256 << 20) as f:
        t = f.to_arrow()
    assert t.num_rows == N
    del t


def test_write_memory_limit(table, tmp_path, no_leaks):
    p = tmp_path / "w.qvr"
    with pytest.raises(quiver.OutOfMemoryError):
        quiver.write(table, p, memory_limit=1 << 20)
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left behind


def test_injected_allocation_failure(path, no_leaks):
    with quiver.open(path) as f:
        quiver._quiver._inject_alloc_failure(3)
        try:
            with pytest.raises(quiver.OutOfMemoryError):
                f.to_arrow(threads=quiver.SCAN_SYNC)
        finally:
            quiver._quiver._inject_alloc_failure(0)


# Each kind of the library (enum qv_error_kind, by qv_error_kind_name) has its
# class; within a kind the errno value picks the closest Python exception.
@pytest.mark.parametrize("kind,code,cls", [
    ("not_found", errno.ENOENT, quiver.QuiverFileNotFoundError),
    ("corrupt", errno.EIO, quiver.CorruptFileError),
    ("io", errno.EIO, quiver.CorruptFileError),
    ("io", errno.ENOSPC, quiver.QuiverIOError),
    ("io", errno.EACCES, quiver.QuiverPermissionError),
    ("out_of_memory", errno.ENOMEM, quiver.OutOfMemoryError),
    ("invalid_argument", errno.EINVAL, quiver.InvalidArgumentError),
    ("invalid_argument", errno.EOVERFLOW, quiver.QuiverOverflowError),
    ("not_supported", errno.ENOSYS, quiver.NotSupportedError),
    ("cancelled", errno.ECANCELED, quiver.CancelledError),
    ("changed", errno.ESTALE, quiver.FileChangedError),
])
def test_error_class_follows_the_kind(kind, code, cls):
    e = quiver.errors._make_error(code, errno.errorcode[code], "m", kind)
    assert type(e) is cls and e.kind == kind and e.code == code and str(e) == "m"
    # Without a kind, the one the library gives the errno value.
    assert quiver.errors._make_error(code, errno.errorcode[code], "m").kind == \
        quiver._quiver.error_kind_of(code)
    if isinstance(e, OSError):
        assert e.errno == code


def test_not_found_while_choosing_columns_is_a_key_error():
    e = quiver.errors._make_error(errno.ENOENT, "ENOENT", "column 'x' not found",
                                  "not_found", True)
    assert isinstance(e, quiver.FieldNotFoundError) and isinstance(e, KeyError)
    assert not isinstance(e, FileNotFoundError) and str(e) == "column 'x' not found"


@pytest.mark.parametrize("precision", [5, 18, 38])
def test_write_refuses_decimals_beyond_their_precision(tmp_path, precision):
    """A decimal128 array whose values do not fit its precision is invalid
    Arrow (pyarrow builds one from raw buffers without a check). The writer
    refuses it, naming the column and the slot, and leaves nothing at the
    path; before, precision <= 18 stored such values wrapped to 64 bits and
    every read called the file corrupt. A null slot may hold anything."""
    n = 5000
    vals = list(range(n))
    vals[3100] = 10**precision  # one digit too many, in the second row group
    garbage = 2**100  # under a null: not looked at
    vals[10] = garbage
    buf = b"".join(v.to_bytes(16, "little", signed=True) for v in vals)
    valid = np.ones(n, bool)
    valid[10] = False
    arr = pa.Array.from_buffers(pa.decimal128(precision, 0), n,
                                [pa.array(valid).buffers()[1], pa.py_buffer(buf)], null_count=1)
    p = tmp_path / "d.qvr"
    with pytest.raises(quiver.InvalidArgumentError,
                       match=f"column 'd': slot {3100 - 2048} holds a value with more than"):
        quiver.write(pa.table({"d": arr}), p, row_group_rows=2048)
    assert not p.exists()
    vals[3100] = -(10**precision - 1)  # the last that fits, negative
    buf = b"".join(v.to_bytes(16, "little", signed=True) for v in vals)
    arr = pa.Array.from_buffers(pa.decimal128(precision, 0), n,
                                [pa.array(valid).buffers()[1], pa.py_buffer(buf)], null_count=1)
    quiver.write(pa.table({"d": arr}), p, row_group_rows=2048)
    with quiver.open(p) as f:
        got = f.to_arrow()["d"]
    assert got.null_count == 1 and got[3100].as_py() == -(10**precision - 1)


def test_schema_mismatch_in_stream(tmp_path):
    # A producer whose batches do not match its schema is EINVAL, not a crash.
    good = pa.table({"a": pa.array([1, 2, 3], pa.int64())})
    bad = pa.RecordBatch.from_arrays([pa.array(["x"])], names=["a"])

    class Lying:
        def __arrow_c_stream__(self, requested_schema=None):
            return pa.RecordBatchReader.from_batches(
                good.schema, iter([good.to_batches()[0]])).__arrow_c_stream__()

    quiver.write(Lying(), tmp_path / "ok.qvr")
    with pytest.raises(Exception):
        quiver.write(pa.RecordBatchReader.from_batches(good.schema, iter([bad])),
                     tmp_path / "bad.qvr")
    assert not (tmp_path / "bad.qvr").exists()


def interrupt_soon(delay):
    """Sends SIGINT to the main thread after `delay` seconds, as Ctrl-C would;
    the main thread is then most likely blocked in native code with the GIL
    released, which is the case that matters."""
    main = threading.main_thread().ident
    t = threading.Timer(delay, lambda: signal.pthread_kill(main, signal.SIGINT))
    t.start()
    return t


@pytest.fixture(scope="module")
def big_path(tmp_path_factory):
    n = 3_000_000
    rng = np.random.default_rng(9)
    t = pa.table({"x": rng.integers(0, 1 << 40, n), "y": rng.random(n)})
    p = tmp_path_factory.mktemp("big") / "big.qvr"
    quiver.write(t, p)
    return p


# Every loop that waits for a signal has a deadline (a lost signal fails the
# test instead of spinning forever, as it once did for 12 minutes under load),
# and pytest-timeout bounds each test as a whole.
SIGNAL_DEADLINE = 20  # seconds


@pytest.mark.timeout(120)
@pytest.mark.parametrize("threads,filter", [(quiver.SCAN_SYNC, None), (None, None),
                                            (None, "y = 0.123456789")])
def test_ctrl_c_cancels_scan(big_path, no_leaks, threads, filter):
    # The last case: a threaded scan whose filter matches no row waits in one
    # long get_next; the wait gives the GIL back regularly for Ctrl-C.
    f = quiver.open(big_path)
    inside = False
    for attempt in range(20):
        scan = f.scan_batches(batch_rows=4096, threads=threads, filter=filter)
        timer = interrupt_soon(0.02)
        deadline = time.monotonic() + SIGNAL_DEADLINE
        try:
            with pytest.raises(KeyboardInterrupt):
                while time.monotonic() < deadline:
                    for _ in scan:
                        pass
                    scan = f.scan_batches(batch_rows=4096, threads=threads, filter=filter)
        finally:
            timer.join()
        if scan.stats() is None:  # interrupted inside the scan: it was released
            inside = True
            break
    assert inside
    del scan
    f.close()


@pytest.mark.timeout(120)
def test_ctrl_c_aborts_write(tmp_path):
    n = 4_000_000
    t = pa.table({"x": np.arange(n), "y": np.random.default_rng(2).random(n)})
    p = tmp_path / "i.qvr"
    timer = interrupt_soon(0.05)
    deadline = time.monotonic() + SIGNAL_DEADLINE
    try:
        with pytest.raises(KeyboardInterrupt):
            while time.monotonic() < deadline:  # in case the write finishes first
                quiver.write(t.to_reader(max_chunksize=10_000), p)
                p.unlink()
    finally:
        timer.join()
    # Interrupted inside the write: nothing is left (its temporary file is
    # removed, no i.qvr appears). The interrupt can also land just after a
    # write returned, its rename done, and before the unlink (a faster
    # writer made that window likely): the file is then the whole table,
    # committed. Never a temporary file, never a partial i.qvr.
    left = sorted(x.name for x in tmp_path.iterdir())
    assert left in ([], ["i.qvr"]), left
    if left:
        with quiver.open(p) as f:
            assert len(f) == n
            assert f.to_arrow().equals(t)


@pytest.mark.timeout(120)
def test_ctrl_c_in_a_generator_feeding_write(tmp_path):
    """Ctrl-C while the writer waits on a Python source: the KeyboardInterrupt
    raised in the generator comes back as itself, nothing is left."""
    p = tmp_path / "g.qvr"

    def slow():
        deadline = time.monotonic() + SIGNAL_DEADLINE
        while time.monotonic() < deadline:
            yield pa.record_batch({"a": pa.array(np.arange(1000))})
            time.sleep(0.001)

    timer = interrupt_soon(0.05)
    try:
        with pytest.raises(KeyboardInterrupt):
            quiver.write(pa.RecordBatchReader.from_batches(
                pa.schema({"a": pa.int64()}), slow()), p)
    finally:
        timer.join()
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_on_the_capturing_yield_is_remembered():
    """The race the test above can hit: Ctrl-C lands while the writer's
    capturing generator is at its own `yield`, not inside the user's source.
    The exception must still be remembered (write() re-raises it as itself);
    a plain close of the generator is no failure."""
    from quiver._write import _Failure, _captured_batches
    schema = pa.schema({"a": pa.int64()})
    batch = pa.record_batch({"a": pa.array(np.arange(3))})

    def reader():
        return pa.RecordBatchReader.from_batches(schema, iter([batch, batch]))

    box = _Failure()
    g = _captured_batches(reader(), box, "x.qvr")
    assert next(g).equals(batch)
    interrupt = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        g.throw(interrupt)
    assert box.exc is interrupt

    box = _Failure()
    g = _captured_batches(reader(), box, "x.qvr")
    next(g)
    g.close()
    assert box.exc is None
