"""Tests of bench/format_parquet.py (Parquet-zstd beside `bench/run
format`'s Quiver figures) on a small CSV made here: the CSV loads in the
lineitem schema, the side-by-side lines are the ratios of the records, and
a run appends its records to bench_format's JSON.

    python3 -m pytest bench/test_format_parquet.py -q
"""
import decimal
import json
import os
import sys

import pyarrow as pa
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import format_parquet as fp  # noqa: E402

HEADER = ("l_orderkey,l_partkey,l_suppkey,l_linenumber,l_quantity,l_extendedprice,l_discount,"
          "l_tax,l_returnflag,l_linestatus,l_shipdate,l_commitdate,l_receiptdate,"
          "l_shipinstruct,l_shipmode,l_comment")


def _csv(path, rows):
    with open(path, "w") as f:
        f.write(HEADER + "\n")
        for i in range(rows):
            f.write(f"{i + 1},{155190 + i},{i % 100},{i % 7 + 1},{i % 50 + 1},{21168.23 + i:.2f},"
                    f"0.0{i % 10},0.02,N,O,1996-03-13,1996-02-12,1996-03-22,DELIVER IN PERSON,"
                    f"TRUCK,\"regular, courts {i}\"\n")


def _bench_records(case, arrow_bytes, rows):
    out = [{"bench": "format", "case": case, "variant": "arrow", "metric": "bytes",
            "stat": "value", "value": arrow_bytes, "unit": "B"},
           {"bench": "format", "case": case, "variant": "arrow", "metric": "rows",
            "stat": "value", "value": rows, "unit": "rows"}]
    for mode, size, speeds in (("default", 800, (90, 100, 120)), ("compact", 700, (40, 50, 60))):
        out.append({"bench": "format", "case": case, "variant": mode, "metric": "file_bytes",
                    "stat": "value", "value": size, "unit": "B"})
        for metric, scale in (("write_mb_per_s", 1), ("write_mb_per_cpu_s", 10)):
            for stat, v in zip(("min", "median", "max"), speeds):
                out.append({"bench": "format", "case": case, "variant": mode, "metric": metric,
                            "stat": stat, "value": v * scale, "unit": "MB/s"})
    return out


def test_csv_loads_in_the_lineitem_schema(tmp_path, monkeypatch):
    path = tmp_path / "lineitem.csv"
    _csv(path, 5)
    monkeypatch.setattr(fp, "BATCH_ROWS", 2)
    t = fp.load_csv(str(path))
    assert t.schema == fp.lineitem_schema()
    assert t.num_rows == 5 and [len(b) for b in t.to_batches()] == [2, 2, 1]
    assert t.column("l_extendedprice")[1].as_py() == decimal.Decimal("21169.23")
    assert t.column("l_comment")[0].as_py() == "regular, courts 0"
    assert str(t.column("l_receiptdate")[0].as_py()) == "1996-03-22"


def test_report_puts_the_ratios_side_by_side():
    lines = fp.report(_bench_records("tpch-sf1", 1e9, 10), "tpch-sf1",
                      {"bytes": 1000, "write_mb_per_s": (50.0, 60.0),
                       "write_mb_per_cpu_s": (1000.0, 1500.0)})
    rows = {line[:18].strip(): line.split() for line in lines[1:]}
    assert set(rows) == {"quiver default", "quiver compact", "parquet-zstd"}
    assert rows["quiver default"][3:] == ["0.80x", "|", "100", "120", "2.00x", "2.00x"]
    assert rows["quiver compact"][3] == "0.70x"
    assert rows["parquet-zstd"][1:] == ["0.00", "1.00x", "|", "50", "60", "1.00x", "1.00x"]


def test_run_appends_parquet_records(tmp_path, monkeypatch, capsys):
    (tmp_path / "tpch").mkdir()
    _csv(tmp_path / "tpch" / "lineitem.csv", 300)
    js = tmp_path / "format.json"
    # 6 significant digits, as bench_format's JSON holds them: 300 rows are
    # exact, and a count off by the rounding is accepted
    js.write_text(json.dumps(_bench_records("tpch-sf1", 60000, 300.001)))
    monkeypatch.setenv("QV_BENCH_DATA", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["format_parquet.py", "--json", str(js), "--reps", "2"])
    assert fp.main() == 0
    out = capsys.readouterr().out
    assert "== Against Parquet-zstd" in out and "quiver default" in out
    recs = [r for r in json.loads(js.read_text()) if r["variant"] == "parquet-zstd"]
    assert {(r["metric"], r["stat"]) for r in recs} == {("file_bytes", "value")} | {
        (m, s) for m in ("write_mb_per_s", "write_mb_per_cpu_s") for s in ("min", "median", "max")}
    size = next(r["value"] for r in recs if r["metric"] == "file_bytes")
    buf = pa.BufferOutputStream()
    import pyarrow.parquet as pq
    pq.write_table(fp.load_csv(str(tmp_path / "tpch" / "lineitem.csv")), buf, compression="zstd")
    assert size == buf.getvalue().size


def test_nothing_to_compare_without_tpch(tmp_path, monkeypatch, capsys):
    js = tmp_path / "format.json"
    recs = _bench_records("gen-sf0.1", 60000, 300)
    js.write_text(json.dumps(recs))
    monkeypatch.setattr(sys, "argv", ["format_parquet.py", "--json", str(js)])
    assert fp.main() == 0
    assert "nothing to compare" in capsys.readouterr().out
    assert json.loads(js.read_text()) == recs


@pytest.fixture(autouse=True)
def _one_cpu_back():
    # main() sets pyarrow's CPU pool to one thread; give the next test the
    # pool it had.
    n = pa.cpu_count()
    yield
    pa.set_cpu_count(n)


def test_a_different_csv_is_refused(tmp_path, monkeypatch):
    (tmp_path / "tpch").mkdir()
    _csv(tmp_path / "tpch" / "lineitem.csv", 200)
    js = tmp_path / "format.json"
    js.write_text(json.dumps(_bench_records("tpch-sf1", 60000, 300)))
    monkeypatch.setenv("QV_BENCH_DATA", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["format_parquet.py", "--json", str(js)])
    assert fp.main() == 1
    assert all(r["variant"] != "parquet-zstd" for r in json.loads(js.read_text()))
