"""Hostile inputs through the Python API (issue 9): arguments, indexes,
paths, filters, sources that raise, consumers, files changed under a scan,
special files. Tests that could hang or crash run their reproducer in a
child process with a timeout and check how it ended."""
import errno
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import quiver

pytestmark = pytest.mark.timeout(120)

N = 50_000


@pytest.fixture(scope="module")
def table():
    return pa.table({"id": np.arange(N, dtype=np.int64),
                     "s": pa.array([f"v{i % 100}" for i in range(N)])})


@pytest.fixture(scope="module")
def path(table, tmp_path_factory):
    p = tmp_path_factory.mktemp("hostile") / "t.qvr"
    quiver.write(table, p, row_group_rows=8192)
    return p


def run_child(code, *args, timeout=60):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout,
    stderr), or fails the test when it does not end within `timeout`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(quiver.__file__)), env.get("PYTHONPATH", "")])
    try:
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                           capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child did not finish within {timeout} s (a hang)")
    return p.returncode, p.stdout, p.stderr


def assert_no_signal(rc, err):
    assert rc >= 0, f"the child died of signal {-rc}: {err[-2000:]}"


# ---- item 1: the file shrinks under a scan or a take -----------------------

def test_truncate_during_scan_is_an_error_not_a_signal(table, tmp_path):
    p = tmp_path / "shrink.qvr"
    quiver.write(table, p, row_group_rows=4096)
    rc, out, err = run_child("""
        import os, sys, quiver
        p = sys.argv[1]
        f = quiver.open(p)
        r = f.scan(batch_rows=1000)
        r.read_next_batch()
        os.truncate(p, 4096)
        for what in ("scan", "take"):
            try:
                if what == "scan":
                    for b in r:
                        pass
                else:
                    f.take([f.num_rows - 1])
                print(what, "no error")
            except quiver.QuiverError as e:
                print(what, type(e).__name__)
    """, p)
    assert_no_signal(rc, err)
    assert rc == 0, err
    assert "scan CorruptFileError" in out or "scan QuiverError" in out, out
    assert "take CorruptFileError" in out or "take QuiverError" in out, out


# ---- item 4: special files must not block open ------------------------------

def test_open_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe.qvr"
    os.mkfifo(fifo)
    rc, out, err = run_child("""
        import sys, quiver
        try:
            quiver.open(sys.argv[1])
            print("opened")
        except quiver.QuiverError as e:
            print("error", type(e).__name__, e)
    """, fifo, timeout=30)
    assert_no_signal(rc, err)
    assert out.startswith("error") and "pipe.qvr" in out, (out, err)


# ---- item 7: the writer's destination ---------------------------------------

def test_write_to_fifo_is_refused(tmp_path):
    fifo = tmp_path / "out.qvr"
    os.mkfifo(fifo)
    rc, out, err = run_child("""
        import sys, pyarrow as pa, quiver
        try:
            quiver.write(pa.table({"a": [1, 2]}), sys.argv[1])
            print("written")
        except (quiver.QuiverError, OSError) as e:
            print("error", e)
    """, fifo, timeout=30)
    assert_no_signal(rc, err)
    assert out.startswith("error"), (out, err)
    assert __import__("stat").S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO


def test_write_through_symlink_replaces_the_target(tmp_path):
    target = tmp_path / "real.qvr"
    link = tmp_path / "link.qvr"
    quiver.write(pa.table({"a": [1]}), target)
    os.symlink(target.name, link)
    quiver.write(pa.table({"a": [1, 2, 3]}), link)
    assert os.path.islink(link)  # the link is kept, its target written
    with quiver.open(target) as f:
        assert f.num_rows == 3


# ---- item 9: indexes of every integer type, checked before conversion -------

@pytest.mark.parametrize("bad", [
    np.array([2**64 - 1], np.uint64), np.array([2**63], np.uint64), [2**64 - 1], [2**70],
    [-(2**63)], [-(2**70)], np.array([N], np.uint32), np.array([-N - 1], np.int32)])
def test_take_index_out_of_range_never_wraps(path, bad):
    with quiver.open(path) as f:
        with pytest.raises(IndexError) as e:
            f.take(bad)
    shown = int(np.asarray(bad, dtype=object).ravel()[0])
    assert str(shown) in str(e.value)  # the index as given, not a wrapped value


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64])
def test_take_every_integer_width(path, table, dtype):
    idx = np.array([3, 1, 100], dtype)
    with quiver.open(path) as f:
        assert f.take(idx).equals(table.take(pa.array([3, 1, 100])))
        assert f.take([np.int64(-1), 0]).column("id").to_pylist() == [N - 1, 0]


@pytest.mark.parametrize("bad", [[True], np.array([True, False]), [1.0], np.array([0.5]),
                                 ["1"], [None]])
def test_take_rejects_non_integers(path, bad):
    with quiver.open(path) as f:
        with pytest.raises(TypeError):
            f.take(bad)


# ---- item 12: counts are validated; 0 rows means 0 rows ---------------------

def test_limit_zero_means_no_rows(path):
    with quiver.open(path) as f:
        assert f.scan(limit=0).read_all().num_rows == 0
        assert sum(b.num_rows for b in f.scan_batches(limit=0)) == 0
        assert f.scan(limit=0, columns=["s"]).schema.names == ["s"]
        assert f.scan(limit=1).read_all().num_rows == 1
        with pytest.raises(quiver.InvalidArgumentError):  # the filter is still checked
            f.scan(limit=0, filter="nope = 1")


@pytest.mark.parametrize("arg,value,exc", [
    ("limit", -1, ValueError), ("batch_rows", 0, ValueError), ("batch_rows", -5, ValueError),
    ("prefetch", 0, ValueError), ("prefetch", -1, ValueError), ("threads", -2, ValueError),
    ("limit", 2**64, ValueError), ("batch_rows", 1.5, TypeError), ("limit", True, TypeError),
    ("threads", "2", TypeError), ("prefetch", 2**40, ValueError)])
def test_bad_scan_arguments_name_the_argument(path, arg, value, exc):
    with quiver.open(path) as f:
        with pytest.raises(exc, match=arg):
            f.scan(**{arg: value})
        with pytest.raises(exc, match=arg):
            f.scan_batches(**{arg: value})


@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_bad_memory_limits(path, tmp_path, value):
    with pytest.raises((ValueError, TypeError), match="memory_limit"):
        quiver.open(path, memory_limit=value)
    with pytest.raises((ValueError, TypeError), match="memory_limit"):
        quiver.write(pa.table({"a": [1]}), tmp_path / "m.qvr", memory_limit=value)
    assert not (tmp_path / "m.qvr").exists()


@pytest.mark.parametrize("arg,value", [("row_group_rows", 0), ("row_group_rows", -1),
                                       ("row_group_bytes", -1)])
def test_bad_write_arguments(tmp_path, arg, value):
    with pytest.raises(ValueError, match=arg):
        quiver.write(pa.table({"a": [1]}), tmp_path / "a.qvr", **{arg: value})
    assert list(tmp_path.iterdir()) == []


def test_numpy_integers_are_counts(path):
    with quiver.open(path) as f:
        r = f.scan(limit=np.uint8(7), batch_rows=np.int32(3), prefetch=np.int64(2))
        assert r.read_all().num_rows == 7
        assert f.read_row_group(np.int16(1)).num_rows == 8192
        with pytest.raises(TypeError):
            f.read_row_group(1.0)


def test_mmap_reads_the_same_data(table, path, no_leaks):
    """quiver.open(mmap=True) maps the file instead of reading it: the same
    rows through scans, filters, takes and row groups."""
    with quiver.open(path) as f, quiver.open(path, mmap=True) as m:
        assert m.to_arrow().equals(f.to_arrow())
        assert m.to_arrow().equals(table)
        for threads in (None, quiver.SCAN_SYNC, 3):
            assert m.to_arrow(filter="s = 'v42'", threads=threads).equals(
                f.to_arrow(filter="s = 'v42'"))
        idx = [N - 1, 0, 8192, 17, 8192]
        assert m.take(idx).equals(f.take(idx))
        assert m.read_row_group(2).equals(f.read_row_group(2))
        assert m.statistics.equals(f.statistics)
        assert m.row_group_statistics(1).equals(f.row_group_statistics(1))


# ---- item 13: what Python hands out is valid Arrow --------------------------

def invalid_tables():
    offs = pa.py_buffer(np.array([0, 2, 4], np.int32).tobytes())
    bad_utf8 = pa.Array.from_buffers(pa.string(), 2, [None, offs, pa.py_buffer(b"ok\xff\xfe")])
    yield "utf8", pa.table({"st": pa.StructArray.from_arrays([bad_utf8], names=["s"])})
    dec = pa.Array.from_buffers(pa.decimal128(3, 1), 2,
                                [None, pa.py_buffer(np.array([5, 0, 99999, 0], np.int64).tobytes())])
    yield "decimal", pa.table({"d": dec})


@pytest.mark.parametrize("name,t", list(invalid_tables()))
def test_invalid_contents_are_refused(tmp_path, name, t, no_leaks):
    """Arrays that pass the writer's cheap checks but are not valid Arrow:
    the file's checksums are right, its contents are not. Reading must
    raise CorruptFileError (as `qv scan` does), unless validation is
    explicitly off."""
    p = tmp_path / f"{name}.qvr"
    try:
        quiver.write(t, p)
    except quiver.InvalidArgumentError:
        return  # a writer that validates fully refuses it: also safe
    col = t.schema.names[0]
    with quiver.open(p) as f:
        with pytest.raises(quiver.CorruptFileError, match="invalid array") as e:
            f.to_arrow()
        # The scan's worker names where: file, column, row group.
        assert f"column '{col}', row group 0 is corrupt" in str(e.value), str(e.value)
        assert f"{name}.qvr" in str(e.value)
        with pytest.raises(quiver.CorruptFileError):
            list(f.scan_batches(threads=quiver.SCAN_SYNC))
        with pytest.raises(quiver.CorruptFileError):
            list(f.scan_batches())
        with pytest.raises(quiver.CorruptFileError):
            f.take([1])
        stream = pa.RecordBatchReader.from_stream(f.scan_batches())
        with pytest.raises(OSError):  # through the exported C stream too
            stream.read_all()
    with quiver.open(p, validate=False) as f:  # the documented opt-out
        got = f.to_arrow()
        with pytest.raises(pa.ArrowInvalid):
            got.validate(full=True)


# ---- item 15: paths, names, filters ----------------------------------------

def test_bytes_and_non_utf8_paths(tmp_path):
    raw = os.fsencode(tmp_path) + b"/caf\xe9 \xff.qvr"
    quiver.write(pa.table({"a": [1, 2]}), raw, metadata={b"k\xff": b"v\xfe", "x": "y"})
    with quiver.open(raw) as f:
        assert f.path == raw and f.num_rows == 2
        assert f.metadata == {b"k\xff": b"v\xfe", "x": "y"}
        assert "caf" in repr(f)
    as_str = os.fsdecode(raw)  # str with surrogate escapes, as os.listdir gives
    with quiver.open(as_str) as f:
        assert f.to_arrow().num_rows == 2
    import pathlib
    with quiver.open(pathlib.Path(as_str)) as f:
        assert f.num_rows == 2
    with pytest.raises(quiver.QuiverFileNotFoundError) as e:
        quiver.open(os.fsencode(tmp_path) + b"/nope\xff.qvr")
    assert "nope\\xff.qvr" in str(e.value)  # undecodable bytes shown, not an exception


def test_empty_and_nul_paths(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        quiver.write(pa.table({"a": [1]}), "")
    with pytest.raises(ValueError, match="empty"):
        quiver.open("")
    with pytest.raises(ValueError):
        quiver.write(pa.table({"a": [1]}), str(tmp_path / "a\0b.qvr"))
    assert list(tmp_path.iterdir()) == []


def test_filters_with_nul_and_bytes(tmp_path):
    t = pa.table({"s": pa.array([b"a\x00b", b"ab", b"\xff"], pa.binary())})
    p = tmp_path / "nul.qvr"
    quiver.write(t, p)
    with quiver.open(p) as f:
        # The filter is parsed with its length: a NUL inside a string
        # literal is data, matching the row that holds it (and only it).
        got = f.to_arrow(filter="s = 'a\0b'")
        assert got.column("s").to_pylist() == [b"a\x00b"]
        assert f.to_arrow(filter=b"s = 'a\x00b' OR s = 'ab'").num_rows == 2
        assert f.to_arrow(filter="s STARTS WITH 'a\0'").num_rows == 1
        # Outside a literal a NUL is a syntax error with its position.
        with pytest.raises(quiver.InvalidArgumentError, match="position"):
            f.scan(filter="s = 'ab'\0")
        with pytest.raises(quiver.InvalidArgumentError):
            f.scan(filter='"s\0" = 1')  # names are C strings: never truncated
        # NUL (and any byte) can also be written as a hex literal.
        assert f.to_arrow(filter="s = X'610062'").num_rows == 1
        assert f.to_arrow(filter=b"s = X'ff'").num_rows == 1  # bytes filters too
        with pytest.raises(TypeError):
            f.scan(filter=5)
        # A lone surrogate has no UTF-8 form: an argument error naming it.
        with pytest.raises(quiver.InvalidArgumentError, match="surrogate"):
            f.scan(filter="s = '\ud800'")


@pytest.mark.timeout(120)
def test_ctrl_c_interrupts_a_long_filter_parse(path):
    """A generated filter can take seconds to parse (a million-value IN
    list); Ctrl-C must stop it with KeyboardInterrupt, not after the parse.
    The text ends in a syntax error, so a parse that ran to its end (the
    interrupt missed it) fails with InvalidArgumentError instead."""
    rc, out, err = run_child("""
        import os, signal, sys, threading, quiver
        text = "id IN (" + ", ".join(map(str, range(2_000_000))) + ") AND ("
        f = quiver.open(sys.argv[1])
        stop = threading.Event()
        # Only the first SIGINT raises KeyboardInterrupt (as the default
        # handler does); later ones, which the sender below may still send
        # before it sees `stop`, are ignored, so that one landing between
        # the except clause and stop.set() cannot kill the child.
        fired = []
        def on_sigint(signum, frame):
            if not fired:
                fired.append(signum)
                raise KeyboardInterrupt
        signal.signal(signal.SIGINT, on_sigint)
        def ctrl_c():  # a real SIGINT, repeated until the main thread saw it
            stop.wait(0.3)
            while not stop.is_set():
                os.kill(os.getpid(), signal.SIGINT)
                stop.wait(0.2)
        t = threading.Thread(target=ctrl_c)
        t.start()
        try:
            f.scan(filter=text)
            print("parsed")
        except KeyboardInterrupt:
            print("interrupted")
        except quiver.InvalidArgumentError as e:
            print("parse ran to the end:", str(e)[:100])
        finally:
            stop.set()
            t.join()
        # Nothing is left half-done: the file scans as before.
        print(f.to_arrow(filter="id < 10").num_rows)
    """, path)
    assert_no_signal(rc, err)
    assert out.split() == ["interrupted", "10"], (out, err[-2000:])


def test_unicode_names_and_filters(tmp_path):
    t = pa.table({"prix €": [1, 2, 3], "naïve": ["é", "ß", "✓"]})
    p = tmp_path / "u.qvr"
    quiver.write(t, p)
    with quiver.open(p) as f:
        assert f.schema.names == ["prix €", "naïve"]
        assert f.to_arrow(filter='"prix €" >= 2 AND naïve != \'ß\'').num_rows == 1
        stats = f.statistics.to_pylist()
        assert [r["column"] for r in stats] == [None, 0, 1]
        assert dict(stats[2]["statistics"])["ARROW:max_value:exact"] == "✓"


# ---- item 16: a source that raises ------------------------------------------

class SourceError(Exception):
    pass


def raising_source(exc):
    def gen():
        yield pa.record_batch({"a": pa.array([1, 2], pa.int64())})
        try:
            raise KeyError("why")
        except KeyError as k:
            raise exc from k
    return pa.RecordBatchReader.from_batches(pa.schema({"a": pa.int64()}), gen())


@pytest.mark.parametrize("exc", [SourceError("boom"), KeyboardInterrupt(), MemoryError("x")])
def test_source_exception_is_reraised_as_itself(tmp_path, exc, no_leaks):
    p = tmp_path / "g.qvr"
    with pytest.raises(type(exc)) as e:
        quiver.write(raising_source(exc), p)
    assert e.value is exc  # the very object, not an InvalidArgumentError
    assert isinstance(e.value.__cause__, KeyError)  # its own chain kept
    assert "Traceback" not in str(e.value)
    assert list(tmp_path.iterdir()) == []  # no file, no temporary


def _mismatched_source(bad):
    """A generator that yields one good batch, then `bad`: pyarrow's
    RecordBatchReader.from_batches does not check what a generator yields."""
    schema = pa.schema({"a": pa.int64()})

    def gen():
        yield pa.record_batch([pa.array([1, 2])], schema=schema)
        yield bad

    return pa.RecordBatchReader.from_batches(schema, gen())


@pytest.mark.parametrize("bad", [
    pa.record_batch([pa.array([1]), pa.array([2])], names=["a", "b"]),  # a column more
    pa.record_batch([pa.array(["x"])], names=["a"]),                     # another type
    pa.record_batch([pa.array([1], pa.int32())], names=["a"]),
    pa.record_batch([pa.array([1])], names=["z"]),                       # another name
], ids=["extra-column", "string", "int32", "renamed"])
def test_source_batch_with_another_schema_is_an_error_not_a_crash(tmp_path, bad):
    # A batch with an extra column used to reach pyarrow's casting reader,
    # which crashed the process (SIGSEGV); so run it in a child.
    code = f"""
        import sys, pyarrow as pa, quiver
        schema = pa.schema({{"a": pa.int64()}})
        bad = pa.ipc.read_message(pa.py_buffer(bytes.fromhex(sys.argv[2])))
        bad = pa.ipc.read_record_batch(bad, pa.ipc.read_schema(
            pa.py_buffer(bytes.fromhex(sys.argv[3]))))
        def gen():
            yield pa.record_batch([pa.array([1, 2])], schema=schema)
            yield bad
        try:
            quiver.write(pa.RecordBatchReader.from_batches(schema, gen()), sys.argv[1])
        except quiver.InvalidArgumentError as e:
            print("refused:", e)
    """
    rc, out, err = run_child(code, tmp_path / "m.qvr", bad.serialize().to_pybytes().hex(),
                             bad.schema.serialize().to_pybytes().hex())
    assert_no_signal(rc, err)
    assert rc == 0, err
    assert "refused:" in out and "batch 1" in out and "does not have the stream's schema" in out
    assert list(tmp_path.iterdir()) == []
    # In process too (the check runs before any cast or native code sees it).
    with pytest.raises(quiver.InvalidArgumentError, match="batch 1"):
        quiver.write(_mismatched_source(bad), tmp_path / "m.qvr")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("meta", [{1: b"v"}, {b"k": 2}, {"k": None}, {"k": 3.5}, [("k", "v")]])
def test_metadata_that_is_not_str_or_bytes_is_refused(tmp_path, meta):
    # bytes(2) is two NUL bytes: an int key or value was stored as NULs.
    with pytest.raises(TypeError, match="metadata"):
        quiver.write(pa.table({"a": [1]}), tmp_path / "m.qvr", metadata=meta)
    assert list(tmp_path.iterdir()) == []
    quiver.write(pa.table({"a": [1]}), tmp_path / "m.qvr",
                 metadata={"k": "v", b"\xff": bytearray(b"\x00x"), "m": memoryview(b"y")})
    assert quiver.open(tmp_path / "m.qvr").metadata == {"k": "v", b"\xff": "\x00x", "m": "y"}


# ---- item 17: DuckDB and other PyCapsule consumers ---------------------------

def test_duckdb_reads_scan_and_scan_batches(path):
    duckdb = pytest.importorskip("duckdb")
    with quiver.open(path) as f:
        r = f.scan()  # noqa: F841 (found by name)
        assert duckdb.sql("select count(*) from r").fetchall() == [(N,)]
        r = f.scan_batches(columns=["id"], filter="id < 100")  # noqa: F841
        assert duckdb.sql("select count(*), sum(id) from r").fetchall() == [(100, 4950)]


def test_scan_capsules(path):
    with quiver.open(path) as f:
        scan = f.scan_batches(columns=["s"])
        schema = pa.Schema._import_from_c_capsule(scan.__arrow_c_schema__())
        assert schema.names == ["s"]
        stream = scan.__arrow_c_stream__()
        with pytest.raises(ValueError, match="consumed once"):
            scan.__arrow_c_stream__()
        # Iterating it after its batches went elsewhere is the same error,
        # not a silently empty scan (it used to raise StopIteration).
        with pytest.raises(ValueError, match="consumed once"):
            next(scan)
        with pytest.raises(ValueError, match="consumed once"):
            list(scan)
        # The schema stays available after the stream moved out.
        assert pa.Schema._import_from_c_capsule(scan.__arrow_c_schema__()) == schema
        assert pa.RecordBatchReader._import_from_c_capsule(stream).read_all().num_rows == N


# ---- item 18: operating-system errors are OSError ---------------------------

@pytest.mark.parametrize("code,cls", [
    (errno.ENOSPC, OSError), (errno.EDQUOT, OSError), (errno.EACCES, PermissionError),
    (errno.EISDIR, IsADirectoryError), (errno.EIO, OSError), (errno.ENOENT, FileNotFoundError)])
def test_os_errors_are_oserrors(code, cls):
    e = quiver.errors._make_error(code, errno.errorcode[code], "file 'x': disk full")
    assert isinstance(e, cls) and isinstance(e, quiver.QuiverError)
    assert e.errno == code and e.code == code
    assert str(e) == "file 'x': disk full"


def test_open_errors_carry_the_systems_reason(tmp_path):
    # Opening for reading reported every failure but ENOENT as EIO, i.e.
    # CorruptFileError "the file is corrupt" for a symlink loop, a name too
    # long or (as a non-root user) a file one may not read.
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(OSError) as e:
        quiver.open(tmp_path / "a")
    assert e.value.errno == errno.ELOOP and e.value.code_name == "ELOOP"
    assert not isinstance(e.value, quiver.CorruptFileError)
    with pytest.raises(OSError) as e:
        quiver.open(tmp_path / ("n" * 300))
    assert e.value.errno == errno.ENAMETOOLONG
    assert not isinstance(e.value, quiver.CorruptFileError)
    with pytest.raises(FileNotFoundError):
        quiver.open(tmp_path / "missing" / "x.qvr")


def test_write_error_is_an_oserror_and_leaves_nothing(tmp_path):
    # A file size limit makes the writer's write() fail (EFBIG): a real I/O
    # error from the system, in a child so the limit stays there.
    rc, out, err = run_child("""
        import os, resource, signal, sys
        import numpy as np, pyarrow as pa, quiver
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
        try:
            quiver.write(pa.table({"a": np.random.default_rng(1).random(500_000)}),
                         sys.argv[1])
            print("written")
        except OSError as e:
            print("oserror", isinstance(e, quiver.QuiverError), e.errno is not None,
                  e.code_name)
    """, tmp_path / "big.qvr")
    assert_no_signal(rc, err)
    assert out.strip() == "oserror True True EFBIG", (out, err)  # was "E?"
    assert list(tmp_path.iterdir()) == []
