"""The format's limits from Python: what the writer accepts, the reader and
pyarrow read back; what cannot be stored faithfully is refused (never cut);
fixed_size_binary(0) and exact row_group_rows work end to end."""
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import quiver


def _no_files(tmp_path):
    return os.listdir(tmp_path) == []


def _nested(levels):
    t = pa.int32()
    for _ in range(levels - 1):
        t = pa.list_(t)
    return t


def test_wide_table_roundtrips(tmp_path):
    # More columns than the old 4,096-column projection limit.
    n = 5000
    t = pa.table({f"c{i}": pa.array([i, None, -i], pa.int64()) for i in range(n)})
    p = tmp_path / "wide.qvr"
    quiver.write(t, p)
    with quiver.open(p) as f:
        assert f.num_columns == n
        assert f.to_arrow().equals(t)
        assert f.take([2, 0]).equals(t.take([2, 0]))


def test_depth_at_limit_roundtrips_and_beyond_is_refused(tmp_path):
    # A column nested 63 levels (the format's limit) imports into pyarrow;
    # 64 levels are refused when the writer opens, leaving no file.
    t = pa.table({"deep": pa.array([None], _nested(63))})
    p = tmp_path / "deep.qvr"
    quiver.write(t, p)
    with quiver.open(p) as f:
        assert f.to_arrow().equals(t)
    os.unlink(p)
    t = pa.table({"deep": pa.array([None], _nested(64))})
    with pytest.raises(quiver.InvalidArgumentError, match="63 levels"):
        quiver.write(t, p)
    assert _no_files(tmp_path)


def test_name_over_limit_refused(tmp_path):
    p = tmp_path / "long.qvr"
    with pytest.raises(quiver.InvalidArgumentError, match="limit of 65536 bytes"):
        quiver.write(pa.table({"n" * 65537: [1]}), p)
    assert _no_files(tmp_path)
    name = "n" * 65536
    quiver.write(pa.table({name: [1]}), p)
    with quiver.open(p) as f:
        assert f.schema.names == [name]


@pytest.mark.parametrize("schema", [
    pa.schema([("a\0b", pa.int32())]),
    pa.schema([("s", pa.struct([("x\0", pa.int8())]))]),
    pa.schema([("l", pa.list_(pa.field("it\0em", pa.int8())))]),
    pa.schema([("t", pa.timestamp("us", tz="UTC\0junk"))]),
])
def test_nul_in_names_and_zones_refused(tmp_path, schema):
    # Arrow's C interface carries names and zones as C strings: a NUL would
    # cut them silently.
    p = tmp_path / "nul.qvr"
    with pytest.raises(quiver.InvalidArgumentError, match="NUL"):
        quiver.write(schema.empty_table(), p)
    assert _no_files(tmp_path)


@pytest.mark.parametrize("length", [123, 124, 300, 5000])
def test_long_time_zones_stored_whole(tmp_path, length):
    tz = ("Europe/Paris" * 500)[:length]
    t = pa.table({"t": pa.array([0, None, 10**15], pa.timestamp("us", tz=tz))})
    p = tmp_path / "tz.qvr"
    quiver.write(t, p)
    with quiver.open(p) as f:
        assert f.schema.field("t").type.tz == tz
        assert f.to_arrow().equals(t)


def test_fixed_size_binary_zero(tmp_path):
    n = 5000
    z = pa.array([b"" if i % 3 else None for i in range(n)], pa.binary(0))
    t = pa.table({"z": z, "i": pa.array(range(n), pa.int32())})
    p = tmp_path / "fsb0.qvr"
    quiver.write(t, p, row_group_rows=2048)
    with quiver.open(p) as f:
        assert f.num_row_groups == 3
        assert f.to_arrow().equals(t)
        idx = [4999, 0, 2048, 1]
        assert f.take(idx).equals(t.take(idx))
        got = f.to_arrow(filter="z IS NULL")
        assert got.equals(t.filter(pc.is_null(t["z"])))
        st = dict(f.row_group_statistics(0).to_pylist()[1]["statistics"])  # column 0: z
        assert st["ARROW:null_count:exact"] == sum(1 for i in range(2048) if i % 3 == 0)


@pytest.mark.parametrize("rows", [1, 1000, 1500, 4096])
def test_row_group_rows_is_exact(tmp_path, rows):
    n = 5000
    t = pa.table({"a": pa.array(range(n), pa.int64())})
    p = tmp_path / "rg.qvr"
    quiver.write(t, p, row_group_rows=rows)
    with quiver.open(p) as f:
        sizes = [rg["num_rows"] for rg in f.row_groups]
        assert sizes == [rows] * (n // rows) + ([n % rows] if n % rows else [])
        assert f.to_arrow().equals(t)


@pytest.mark.parametrize("rows", [-1, 1 << 31])
def test_row_group_rows_out_of_range_refused(tmp_path, rows):
    p = tmp_path / "rg.qvr"
    # -1 is refused by the Python layer (ValueError naming the argument),
    # 2**31 by the writer (InvalidArgumentError, also a ValueError).
    with pytest.raises(ValueError, match="row_group_rows"):
        quiver.write(pa.table({"a": [1]}), p, row_group_rows=rows)
    assert _no_files(tmp_path)
