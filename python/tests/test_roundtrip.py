"""Write then read back: every type, nulls at every level, sliced and chunked
input, every way of handing data over."""
import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest

import quiver


def roundtrip(tmp_path, data, name="t.qvr", **kw):
    path = tmp_path / name
    res = quiver.write(data, path, **kw)
    with quiver.open(path) as f:
        out = f.to_arrow()
        assert f.num_rows == out.num_rows == res.num_rows
    out.validate(full=True)
    return out


_AS_BITS = {pa.float16(): pa.int16(), pa.float32(): pa.int32(), pa.float64(): pa.int64()}


def assert_same(expected, got):
    """Equal schemas (metadata aside) and equal values; floats compare by bit
    pattern, so NaN equals NaN and -0.0 differs from 0.0."""
    assert got.schema.equals(expected.schema, check_metadata=False), (expected.schema, got.schema)
    for name in expected.column_names:
        e, g = expected.column(name).combine_chunks(), got.column(name).combine_chunks()
        if e.type in _AS_BITS:
            e, g = e.view(_AS_BITS[e.type]), g.view(_AS_BITS[e.type])
        assert g.equals(e), f"column {name}: {e.slice(0, 5)} != {g.slice(0, 5)}"


def test_every_type(tmp_path, all_types, no_leaks):
    out = roundtrip(tmp_path, all_types)
    assert_same(all_types, out)
    assert out.schema.metadata == all_types.schema.metadata


@pytest.mark.parametrize("compact", [False, True])
def test_every_type_small_row_groups(tmp_path, all_types, compact):
    out = roundtrip(tmp_path, all_types, row_group_rows=1024, compact=compact)
    assert_same(all_types, out)
    with quiver.open(tmp_path / "t.qvr") as f:
        assert f.num_row_groups == 3


def test_sliced_and_chunked(tmp_path, all_types):
    n = all_types.num_rows
    pieces = [all_types.slice(5, 17), all_types.slice(100, 1), all_types.slice(200, 0),
              all_types.slice(333, 1500), all_types.slice(n - 7, 7)]
    chunked = pa.concat_tables(pieces)
    assert chunked.column("deep").num_chunks == len(pieces)
    out = roundtrip(tmp_path, chunked, row_group_rows=1024)
    assert_same(chunked.combine_chunks(), out)


def test_sliced_nested_arrays(tmp_path, all_types):
    # Slices inside nested arrays: a struct column sliced, then its children.
    t = all_types.select(["struct", "map", "deep", "list"]).slice(11, 2000)
    batches = t.to_batches(max_chunksize=333)
    assert any(b.column(0).offset for b in batches)
    out = roundtrip(tmp_path, pa.Table.from_batches(batches))
    assert_same(t, out)


def test_record_batch_reader_is_streamed(tmp_path, all_types):
    batches = all_types.to_batches(max_chunksize=500)
    consumed = []

    def gen():
        for b in batches:
            consumed.append(b.num_rows)
            yield b

    reader = pa.RecordBatchReader.from_batches(all_types.schema, gen())
    out = roundtrip(tmp_path, reader)
    assert sum(consumed) == all_types.num_rows
    assert_same(all_types, out)


def test_record_batch_and_empty(tmp_path, all_types):
    b = all_types.to_batches()[0].slice(0, 10)
    assert_same(pa.Table.from_batches([b]), roundtrip(tmp_path, b, "b.qvr"))
    empty = all_types.schema.empty_table()
    out = roundtrip(tmp_path, empty, "e.qvr")
    assert out.num_rows == 0
    assert out.schema.equals(all_types.schema, check_metadata=False)


def test_file_metadata(tmp_path):
    t = pa.table({"x": [1, 2, 3]})
    quiver.write(t, tmp_path / "m.qvr", metadata={"who": "me", b"bin": b"\xff\x00"})
    with quiver.open(tmp_path / "m.qvr") as f:
        assert f.metadata == {"who": "me", "bin": b"\xff\x00"}
        assert f.writer_version
        assert f.file_size == (tmp_path / "m.qvr").stat().st_size


def test_storable_data_is_not_cast(tmp_path, monkeypatch):
    """Data whose types Quiver stores as they are reaches the writer as it
    is: no per-batch cast through Python (a schema compared with itself by
    identity once saw a cast in every write). Only other types are cast."""
    from quiver import _write

    calls = []
    real_cast = _write._cast
    monkeypatch.setattr(_write, "_cast", lambda *a: calls.append(a) or real_cast(*a))
    t = pa.table({"i": [1, 2, None], "s": ["a", None, "c"], "f": [0.5, None, 2.0],
                  "l": pa.array([[1], None, []], pa.list_(pa.int32()))},
                 metadata={"k": "v"})
    for data in (t, t.to_batches()[0], t.to_reader()):
        quiver.write(data, tmp_path / "plain.qvr")
        with quiver.open(tmp_path / "plain.qvr") as f:
            assert f.to_arrow().replace_schema_metadata(None).equals(t.replace_schema_metadata(None))
    assert calls == []
    quiver.write(pa.table({"v": pa.array(["x"], pa.string_view())}), tmp_path / "v.qvr")
    assert len(calls) == 1


def test_view_and_dictionary_types_are_cast(tmp_path):
    t = pa.table({
        "sv": pa.array(["a", None, "ccc"], pa.string_view()),
        "bv": pa.array([b"a", b"", None], pa.binary_view()),
        "dict": pa.array(["x", "y", "x"]).dictionary_encode(),
        "ree": pa.compute.run_end_encode(pa.array([1, 1, 2])),
        "nested": pa.array([["p"], None, []], pa.list_(pa.string_view())),
    })
    out = roundtrip(tmp_path, t)
    assert out.schema.types == [pa.string(), pa.binary(), pa.string(), pa.int64(),
                                pa.list_(pa.string())]
    assert out.column("sv").to_pylist() == ["a", None, "ccc"]
    assert out.column("dict").to_pylist() == ["x", "y", "x"]
    assert out.column("ree").to_pylist() == [1, 1, 2]
    assert out.column("nested").to_pylist() == [["p"], None, []]


def test_unsupported_type_is_rejected(tmp_path):
    t = pa.table({"t": pa.array([1, 2], pa.time64("us"))})
    with pytest.raises(quiver.NotSupportedError, match="time64"):
        quiver.write(t, tmp_path / "x.qvr")
    assert not (tmp_path / "x.qvr").exists()


def test_polars_and_duckdb_inputs(tmp_path):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    df = pl.DataFrame({"a": [1, 2, None], "s": ["x", None, "zz"],
                       "l": [[1], [], None]})
    out = roundtrip(tmp_path, df, "pl.qvr")
    assert out.column("s").to_pylist() == ["x", None, "zz"]
    assert out.column("l").to_pylist() == [[1], [], None]
    rel = duckdb.sql("SELECT range AS i, 'v' || range::VARCHAR AS s FROM range(10000)")
    out = roundtrip(tmp_path, rel, "duck.qvr")
    assert out.num_rows == 10000
    assert out.column("s")[9999].as_py() == "v9999"


def test_pandas_input(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]})
    out = roundtrip(tmp_path, df)
    assert out.column("b").to_pylist() == ["x", "y", None]


def test_write_replaces_atomically(tmp_path):
    p = tmp_path / "r.qvr"
    quiver.write(pa.table({"x": [1]}), p)
    quiver.write(pa.table({"y": ["a", "b"]}), p)
    with quiver.open(p) as f:
        assert f.schema.names == ["y"]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r.qvr"]


@pytest.mark.timeout(120)
def test_write_threads_same_bytes(tmp_path, all_types, no_leaks):
    # The encoding threads change who encodes a column, never the bytes:
    # on the calling thread (SCAN_SYNC), one thread, two, four.
    files = []
    for threads in (quiver.SCAN_SYNC, 1, 2, 4):
        path = tmp_path / f"t{threads}.qvr"
        quiver.write(all_types, path, row_group_rows=1024, threads=threads)
        files.append(path.read_bytes())
    assert all(f == files[0] for f in files)
    with quiver.open(tmp_path / "t4.qvr") as f:
        assert_same(all_types, f.to_arrow())


def test_write_threads_refused(tmp_path, all_types):
    with pytest.raises(quiver.InvalidArgumentError, match="threads"):
        quiver.write(all_types, tmp_path / "t.qvr", threads=65)
    with pytest.raises(quiver.InvalidArgumentError, match="threads"):
        quiver.write(all_types, tmp_path / "t.qvr", threads=-2)
    with pytest.raises(TypeError, match="threads"):
        quiver.write(all_types, tmp_path / "t.qvr", threads="2")
    assert not (tmp_path / "t.qvr").exists()
