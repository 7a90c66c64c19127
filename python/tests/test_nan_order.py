"""nan_order: float filters under IEEE and under Spark's NaN-largest order."""
import math

import pyarrow as pa
import pytest

import quiver

VALUES = [math.nan, -math.inf, -0.0, 0.0, 1.5, math.inf, None, 7.0]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    t = pa.table({
        "id": pa.array(range(len(VALUES)), pa.int64()),
        "d": pa.array(VALUES, pa.float64()),
        "f": pa.array(VALUES, pa.float32()),
    })
    p = tmp_path_factory.mktemp("nan") / "nan.qvr"
    quiver.write(t, p, row_group_rows=2)
    return p


def ids(path, text, order):
    with quiver.open(path) as f:
        return f.to_arrow(columns=["id"], filter=text, nan_order=order)["id"].to_pylist()


@pytest.mark.parametrize("col", ["d", "f"])
def test_orders(path, col):
    assert ids(path, f"{col} = NaN", None) == []
    assert ids(path, f"{col} = NaN", "ieee") == []
    assert ids(path, f"{col} = NaN", "largest") == [0]
    assert ids(path, f"{col} >= Infinity", "ieee") == [5]
    assert ids(path, f"{col} >= Infinity", "largest") == [0, 5]
    assert ids(path, f"{col} > 1.5", "largest") == [0, 5, 7]
    assert ids(path, f"{col} = -0.0", "largest") == [2, 3]
    assert ids(path, f"{col} < NaN", "largest") == [1, 2, 3, 4, 5, 7]
    assert ids(path, f"{col} NOT IN (NaN, 1.5)", "largest") == [1, 2, 3, 5, 7]
    assert ids(path, f"{col} NOT IN (NaN, 1.5)", "ieee") == [0, 1, 2, 3, 5, 7]


def test_every_entry_point(path):
    assert quiver.read_table(path, filter="d = NaN", nan_order="largest")["id"].to_pylist() == [0]
    with quiver.open(path) as f:
        assert f.scan(filter="d = NaN", nan_order="LARGEST").read_all().num_rows == 1
        assert sum(b.num_rows for b in f.scan_batches(filter="d = NaN", nan_order="largest")) == 1


def test_bad_order(path):
    with quiver.open(path) as f:
        with pytest.raises(ValueError, match="nan_order"):
            f.to_arrow(filter="d = 1", nan_order="total")
        with pytest.raises(ValueError, match="nan_order"):
            f.to_arrow(filter="d = 1", nan_order=1)
