"""Scans: projection, filters, take, statistics, consumers, lifetimes."""
import datetime
import decimal
import gc
import math

import numpy as np
import pyarrow as pa
import pytest

import quiver
from conftest import stats_by_path

N = 200_000


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(1)
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "k": pa.array(rng.integers(0, 100, N).astype(np.int32)),
        "price": pa.array(np.round(rng.random(N) * 100, 2)),
        "s": pa.array([f"name-{i % 977}" for i in range(N)]),
        "tags": pa.array([[f"t{i % 3}"] * (i % 4) for i in range(N)], pa.list_(pa.string())),
    })


@pytest.fixture(scope="module")
def path(table, tmp_path_factory):
    p = tmp_path_factory.mktemp("scan") / "t.qvr"
    quiver.write(table, p, row_group_rows=32768)
    return p


def test_schema_and_counts(path, table):
    with quiver.open(path) as f:
        assert f.schema.equals(table.schema)
        assert f.num_rows == N and len(f) == N
        assert f.num_columns == 5
        assert f.num_row_groups == 7
        assert sum(rg["num_rows"] for rg in f.row_groups) == N


@pytest.mark.parametrize("threads", [None, quiver.SCAN_SYNC, 1, 3])
def test_full_scan(path, table, threads):
    with quiver.open(path) as f:
        reader = f.scan(threads=threads, batch_rows=10_000, prefetch=2)
        assert isinstance(reader, pa.RecordBatchReader)
        assert hasattr(reader, "__arrow_c_stream__")
        batches = list(reader)
        assert max(b.num_rows for b in batches) <= 10_000
        assert pa.Table.from_batches(batches).equals(table)


def test_projection(path, table):
    with quiver.open(path) as f:
        t = f.to_arrow(columns=["s", "id"])
        assert t.schema.names == ["s", "id"]
        assert t.equals(table.select(["s", "id"]))
        assert f.to_arrow(columns=[1]).equals(table.select(["k"]))
        with pytest.raises(KeyError):
            f.scan(columns=["nope"])


def test_filter(path, table):
    with quiver.open(path) as f:
        got = f.to_arrow(filter="k < 10 AND price BETWEEN 5 AND 50.5 AND s STARTS WITH 'name-1'")
        mask = ((table["k"].to_numpy() < 10) & (table["price"].to_numpy() >= 5)
                & (table["price"].to_numpy() <= 50.5)
                & np.char.startswith(np.array(table["s"].to_pylist()), "name-1"))
        assert got.equals(table.filter(pa.array(mask)))
        # Statistics prune row groups: ids are sorted, so one row group matches.
        scan = f.scan_batches(filter="id >= 40000 AND id < 40010")
        rows = sum(b.num_rows for b in scan)
        assert rows == 10
        scan = f.scan_batches(filter="id >= 40000 AND id < 40010")
        next(scan)
        st = scan.stats()
        assert st["row_groups_pruned"] == 6 and st["row_groups_total"] == 7
        scan.close()


def test_filter_with_projection_of_other_columns(path, table):
    with quiver.open(path) as f:
        got = f.to_arrow(columns=["s"], filter="id IN (3, 70000, 199999)")
        assert got.column("s").to_pylist() == ["name-3", f"name-{70000 % 977}",
                                               f"name-{199999 % 977}"]


def test_limit_and_row_group(path, table):
    with quiver.open(path) as f:
        assert f.scan(limit=12345).read_all().num_rows == 12345
        assert f.read_row_group(2).equals(table.slice(65536, 32768))


@pytest.mark.parametrize("indices", [
    [0], [5, 3, 5, 199_999], [-1, -N], list(range(100, 40_000, 7)),
    np.random.default_rng(3).integers(0, N, 100), []])
def test_take(path, table, indices):
    with quiver.open(path) as f:
        got = f.take(indices)
        idx = np.asarray(indices, dtype=np.int64)
        idx = np.where(idx < 0, idx + N, idx)
        assert got.equals(table.take(pa.array(idx, pa.int64())))
        got = f.take(indices, columns=["tags"])
        assert got.equals(table.select(["tags"]).take(pa.array(idx, pa.int64())))


def test_take_out_of_range(path):
    with quiver.open(path) as f:
        with pytest.raises(IndexError):
            f.take([N])
        with pytest.raises(TypeError):
            f.take([1.5])


def test_statistics(path, table):
    with quiver.open(path) as f:
        rg = stats_by_path(f.schema, f.row_group_statistics(1))
        assert rg[None]["ARROW:row_count:exact"] == 32768
        assert rg["id"]["ARROW:min_value:exact"] == 32768
        assert rg["id"]["ARROW:max_value:exact"] == 65535
        assert rg["id"]["ARROW:null_count:exact"] == 0
        assert isinstance(rg["price"]["ARROW:min_value:exact"], float)
        assert rg["s"]["ARROW:min_value:exact"].startswith("name-")
        assert rg["tags.item"]["ARROW:null_count:exact"] == 0
        whole = stats_by_path(f.schema, f.statistics)
        assert whole[None]["ARROW:row_count:exact"] == N
        assert whole["id"]["ARROW:min_value:exact"] == 0
        assert whole["id"]["ARROW:max_value:exact"] == N - 1
        assert whole["k"]["ARROW:max_value:exact"] == max(table["k"].to_pylist())


def test_statistics_types(tmp_path, all_types):
    quiver.write(all_types, tmp_path / "a.qvr")
    with quiver.open(tmp_path / "a.qvr") as f:
        cols = stats_by_path(f.schema, f.row_group_statistics(0))
    mn, mx, nulls = "ARROW:min_value:exact", "ARROW:max_value:exact", "ARROW:null_count:exact"
    assert isinstance(cols["date"][mn], datetime.date)
    assert isinstance(cols["dec"][mn], decimal.Decimal)
    assert cols["dec"][mn] == min(x for x in all_types["dec"].to_pylist() if x is not None)
    assert isinstance(cols["ts_us"][mx], datetime.datetime)
    assert cols["ts_us"][mx].tzinfo is not None
    assert cols["int8"][mn] >= -100 and cols["uint64"][mx] < 200
    assert cols["bool"][mn] is False and cols["bool"][mx] is True
    assert isinstance(cols["binary"][mn], bytes)
    # The export orders NaN above every number (docs/statistics.md).
    f64 = all_types["float64"].to_pylist()
    assert math.isnan(cols["float64"][mx]) == any(x != x for x in f64 if x is not None)
    assert cols["struct.c.d"][nulls] > 0
    assert cols["string"][nulls] == all_types["string"].null_count
    assert "float16" in cols and mn not in cols["float16"]  # no bounds for float16


def test_duckdb_consumes_scan(path, table):
    duckdb = pytest.importorskip("duckdb")
    with quiver.open(path) as f:
        reader = f.scan(columns=["k", "price"])  # noqa: F841 (DuckDB finds it by name)
        got = duckdb.sql("SELECT k, count(*) AS n, sum(price) AS p FROM reader "
                         "GROUP BY k ORDER BY k").fetchall()
        ks = table["k"].to_numpy()
        assert [r[1] for r in got] == list(np.bincount(ks))
        # Through the capsule protocol explicitly, with a pushed-down filter.
        scan = f.scan(filter="k = 7")
        rel = duckdb.from_arrow(scan)
        assert rel.aggregate("count(*)").fetchall()[0][0] == int((ks == 7).sum())


def test_polars_consumes_scan_without_copies(path, table):
    pl = pytest.importorskip("polars")
    gc.collect()
    base = quiver.memory_stats()["reserved"]
    with quiver.open(path) as f:
        df = pl.DataFrame(f.scan(columns=["id", "price"]))
    assert df.shape == (N, 2)
    assert df["id"].sum() == table["id"].to_numpy().sum()
    # Polars holds the scan's own buffers (no copy): the pool still carries them.
    held = quiver.memory_stats()["reserved"] - base
    assert held >= N * 16, held
    del df
    gc.collect()
    assert quiver.memory_stats()["reserved"] == base


def test_pyarrow_consumes_capsule(path, table):
    with quiver.open(path) as f:
        scan = f.scan_batches(columns=["s"])
        reader = pa.RecordBatchReader.from_stream(scan)  # moves the native stream out
        assert reader.read_all().equals(table.select(["s"]))
        # Its batches went to pyarrow: iterating it is an error, not an
        # empty scan.
        with pytest.raises(ValueError, match="consumed once"):
            next(scan)


def test_early_release(path, no_leaks):
    f = quiver.open(path)
    reader = f.scan(batch_rows=1000, prefetch=4)
    first = reader.read_next_batch()
    assert first.num_rows == 1000
    assert quiver.memory_stats()["reservations"] > 0
    reader.close()
    del reader
    f.close()
    # The batch outlives the scan and the file.
    assert first.column("id")[999].as_py() == 999
    del first


def test_scan_outlives_file(path, table, no_leaks):
    f = quiver.open(path)
    reader = f.scan(columns=["id"])
    f.close()
    with pytest.raises(ValueError):
        f.scan()
    assert reader.read_all().num_rows == N
    del reader


def test_context_manager(path):
    with quiver.open(path) as f:
        assert not f.closed
    assert f.closed
    with pytest.raises(ValueError):
        f.to_arrow()
