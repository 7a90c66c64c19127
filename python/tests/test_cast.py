"""scan(cast="spark"): the types Spark's Arrow reader accepts
(qv_scan_options.cast = QV_CAST_SPARK). Every output is valid Arrow and
equal to pyarrow's own cast of the same data; a value that does not fit is
an error naming it, never a wrapped or clipped value."""
import numpy as np
import pyarrow as pa
import pytest

import quiver

N = 3000


def _with_nulls(arr, rng, p=0.2):
    mask = rng.random(len(arr)) < p
    return pa.array(arr.to_pylist(), arr.type, mask=mask) if len(arr) else arr


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    secs = rng.integers(-2_000_000_000, 2_000_000_000, N)
    cols = {}
    for unit, mult in (("s", 1), ("ms", 1000), ("us", 10**6), ("ns", 10**9)):
        cols[f"ts_{unit}"] = _with_nulls(pa.array(secs * mult, pa.timestamp(unit)), rng)
    cols["ts_ms_tz"] = _with_nulls(pa.array(secs * 1000, pa.timestamp("ms", "Europe/Paris")), rng)
    for name, t, hi in (("u8", pa.uint8(), 2**8), ("u16", pa.uint16(), 2**16),
                        ("u32", pa.uint32(), 2**32)):
        cols[name] = _with_nulls(pa.array(rng.integers(0, hi, N, dtype=np.uint64), t), rng)
    u64 = rng.integers(0, 2**64 - 1, N, dtype=np.uint64, endpoint=True)
    u64[:3] = [0, 2**64 - 1, 2**63]
    cols["u64"] = _with_nulls(pa.array(u64, pa.uint64()), rng)
    cols["f16"] = pa.array(rng.random(N).astype(np.float16), pa.float16(),
                           mask=rng.random(N) < 0.2)
    cols["ll"] = pa.array([None if rng.random() < 0.15 else
                           [None if rng.random() < 0.2 else int(x)
                            for x in rng.integers(0, 9, int(rng.integers(0, 5)))]
                           for _ in range(N)], pa.large_list(pa.int32()))
    # The same types nested, where Spark meets them too.
    cols["nested"] = pa.StructArray.from_arrays(
        [cols["ts_ns"], cols["u32"], cols["ll"]], names=["t", "u", "l"],
        mask=pa.array(rng.random(N) < 0.1))
    cols["list_u16"] = pa.array([None if rng.random() < 0.1 else
                                 [int(x) for x in rng.integers(0, 2**16, int(rng.integers(0, 4)))]
                                 for _ in range(N)], pa.large_list(pa.uint16()))
    cols["untouched"] = pa.array(rng.integers(-5, 5, N), pa.int64())
    return pa.table(cols)


def spark_type(t):
    """What QV_CAST_SPARK makes of `t` (quiver/scan.h, enum qv_cast)."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if t == pa.uint8():
        return pa.int16()
    if t == pa.uint16():
        return pa.int32()
    if t == pa.uint32():
        return pa.int64()
    if t == pa.uint64():
        return pa.decimal128(20, 0)
    if t == pa.float16():
        return pa.float32()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(spark_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(spark_type(t.field(i).type))
                          for i in range(t.num_fields)])
    return t


@pytest.fixture(scope="module")
def path(tmp_path_factory, table):
    p = tmp_path_factory.mktemp("cast") / "c.qvr"
    quiver.write(table, p, row_group_rows=1000)
    return p


@pytest.mark.parametrize("threads", [None, quiver.SCAN_SYNC])
def test_spark_cast_matches_pyarrow(path, table, threads):
    with quiver.open(path) as f:
        got = f.to_arrow(cast="spark", threads=threads)
    for name in table.column_names:
        want_type = spark_type(table.schema.field(name).type)
        assert got.schema.field(name).type == want_type, name
        col = got.column(name)
        for chunk in col.chunks:
            chunk.validate(full=True)
        want = table.column(name).cast(want_type)
        assert col.combine_chunks().equals(want.combine_chunks()), name


def test_spark_cast_with_projection_take_and_filter(path, table):
    with quiver.open(path) as f:
        rows = [5, 2999, 5, 0]
        got = f.take(rows, columns=["u64", "nested"], cast="spark")
        for name in ("u64", "nested"):
            want_type = spark_type(table.schema.field(name).type)
            assert got.schema.field(name).type == want_type
            want = table.column(name).take(rows).cast(want_type)
            assert got.column(name).combine_chunks().equals(want.combine_chunks())
        assert f.take([], columns=["u32"], cast="spark").schema.field(0).type == pa.int64()
        got = f.to_arrow(columns=["f16"], filter="untouched = 3", cast="spark")
        mask = pa.compute.equal(table.column("untouched"), 3)
        want = table.column("f16").filter(mask).cast(pa.float32())
        assert got.column("f16").combine_chunks().equals(want.combine_chunks())


def test_no_cast_keeps_stored_types(path, table):
    with quiver.open(path) as f:
        assert f.scan(cast=None).schema.equals(table.schema)


def test_timestamp_that_does_not_fit_is_an_error(tmp_path):
    # 10^13 seconds is past what int64 microseconds hold (9.2 * 10^12 s).
    t = pa.table({"t": pa.array([0, 10**13, None], pa.timestamp("s"))})
    quiver.write(t, tmp_path / "big.qvr")
    with quiver.open(tmp_path / "big.qvr") as f:
        assert f.to_arrow()["t"].equals(t["t"])
        with pytest.raises(quiver.QuiverOverflowError) as e:
            f.to_arrow(cast="spark")
        assert e.value.kind == "invalid_argument" and "t" in str(e.value)


@pytest.mark.parametrize("bad", ["SPARK", "arrow", 1, True])
def test_bad_cast_is_refused(path, bad):
    with quiver.open(path) as f:
        with pytest.raises(quiver.InvalidArgumentError):
            f.scan(cast=bad)


def test_spark_cast_of_nested_fields(path, table):
    """Casts apply below a nested projection too ("nested.t", "nested.l")."""
    rows = [2999, 5, 5, 0, 1500]
    with quiver.open(path) as f:
        got = f.take(rows, columns=["nested.l", "u64", "nested.t"], cast="spark")
        whole = f.to_arrow(columns=["nested.t"], cast="spark")
    full = table.column("nested").combine_chunks()
    full = full.cast(spark_type(full.type))
    want = pa.StructArray.from_arrays([full.field("t"), full.field("l")], names=["t", "l"],
                                      mask=full.is_null())
    assert got.column_names == ["nested", "u64"]
    nested = got.column("nested").combine_chunks()
    nested.validate(full=True)
    assert nested.equals(want.take(rows))
    only_t = pa.StructArray.from_arrays([full.field("t")], names=["t"], mask=full.is_null())
    assert whole.column("nested").combine_chunks().equals(only_t)
