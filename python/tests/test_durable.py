"""quiver.write(durable=...): both modes write the same readable file, only
at the end (never a partial file under the name), and a bad value is
refused before anything is created. Whether fsync is called is checked in C
(core/tests/test_io_file.c counts them)."""
import os

import pyarrow as pa
import pytest

import quiver


def _table(n=5000):
    return pa.table({"a": pa.array(range(n), pa.int64()),
                     "s": pa.array([str(i % 97) for i in range(n)])})


@pytest.mark.parametrize("durable", [True, False])
def test_round_trip(tmp_path, durable):
    t = _table()
    p = tmp_path / "t.qvr"
    res = quiver.write(t, p, durable=durable)
    assert res.num_rows == t.num_rows
    with quiver.open(p) as f:
        assert f.to_arrow().equals(t)
    # Replacing keeps working and leaves only the file.
    quiver.write(t.slice(0, 10), p, durable=durable)
    with quiver.open(p) as f:
        assert f.num_rows == 10
    assert os.listdir(tmp_path) == ["t.qvr"]


@pytest.mark.parametrize("durable", [True, False])
def test_failure_leaves_old_file(tmp_path, durable):
    p = tmp_path / "t.qvr"
    quiver.write(_table(100), p, durable=durable)
    before = p.read_bytes()

    def batches():
        yield pa.record_batch(_table(50).to_batches()[0])
        raise RuntimeError("source failed")

    reader = pa.RecordBatchReader.from_batches(_table(50).schema, batches())
    with pytest.raises(RuntimeError, match="source failed"):
        quiver.write(reader, p, durable=durable)
    assert p.read_bytes() == before
    assert os.listdir(tmp_path) == ["t.qvr"]


@pytest.mark.parametrize("bad", [None, 1, 0, "yes", 2.0])
def test_bad_value_refused(tmp_path, bad):
    p = tmp_path / "t.qvr"
    with pytest.raises(TypeError, match="durable"):
        quiver.write(_table(10), p, durable=bad)
    assert not p.exists()
