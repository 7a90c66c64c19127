"""Tests of the comparison harness itself (not of any format): the report
built from records (Vortex/Quiver ratios, targets, before/after, older
records), the CPU check and thread modes, the records loader, and the
generated takes dataset. Pure Python on small inputs: about a second.

    python3 -m pytest bench/compare -q
"""
import importlib.util
import json
import os
import re
import types

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from . import datasets, machine, report

HERE = os.path.dirname(os.path.abspath(__file__))


def _main_module():
    # bench/compare.py shares its name with this package, so it is loaded
    # from its path under another name.
    spec = importlib.util.spec_from_file_location(
        "compare_main", os.path.join(os.path.dirname(HERE), "compare.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _recs(case, fmt, mode, figures):
    out = []
    for metric, v in figures.items():
        if metric == "file_size":
            out.append({"bench": "compare", "case": case, "variant": f"{fmt}/0t",
                        "metric": metric, "stat": "value", "value": v, "unit": "bytes"})
        elif metric == "peak_rss":
            out.append({"bench": "compare", "case": case, "variant": f"{fmt}/{mode}t",
                        "metric": metric, "stat": "value", "value": v, "unit": "bytes"})
        else:
            for stat in ("min", "median"):
                out.append({"bench": "compare", "case": case, "variant": f"{fmt}/{mode}t",
                            "metric": metric, "stat": stat, "value": v, "unit": "s"})
    return out


def _run(q1, x1, q2, x2, case="lineitem-sf1"):
    return (_recs(case, "quiver", 1, q1) + _recs(case, "vortex", 1, x1)
            + _recs(case, "quiver", 2, q2) + _recs(case, "vortex", 2, x2))


AFTER = _run({"file_size": 100, "full_scan": 0.200, "filter_q6": 0.014, "take_100": 0.0015,
              "take_warm": 0.0002},
             {"file_size": 120, "full_scan": 0.250, "filter_q6": 0.021, "take_100": 0.024,
              "take_warm": 0.004},
             {"full_scan": 0.105, "filter_q6": 0.010, "take_100": 0.0016},
             {"full_scan": 0.121, "filter_q6": 0.0147, "take_100": 0.022})
# An older run: no warm take, Quiver behind on the full scan at 2 threads.
BEFORE = _run({"file_size": 110, "full_scan": 0.400, "filter_q6": 0.030, "take_100": 0.017},
              {"file_size": 120, "full_scan": 0.250, "filter_q6": 0.021, "take_100": 0.024},
              {"full_scan": 0.330, "filter_q6": 0.035, "take_100": 0.018},
              {"full_scan": 0.121, "filter_q6": 0.0147, "take_100": 0.022})


def _table(md, title):
    """The rows of the markdown table that follows the line `title`."""
    lines = md.splitlines()
    i = lines.index(title)
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows[2:] if rows and rows[0][0] in ("measure", "target") else rows


def test_ratio_tables_mark_where_quiver_is_behind():
    md = report.markdown(AFTER, {"runs": 5})
    rows = {r[0]: r for r in _table(md, "lineitem-sf1, 1 thread:")}
    assert rows["full scan ms"][1:4] == ["200", "250", "1.25×"]
    assert rows["full scan ms"][4] == ""
    assert rows["Q6 filter ms"][3] == "1.50×"
    assert rows["file size MiB"][3] == "1.20×"
    md_behind = report.markdown(BEFORE, {"runs": 5})
    rows = {r[0]: r for r in _table(md_behind, "lineitem-sf1, 1 thread:")}
    assert rows["full scan ms"][3:] == ["0.62×", "✗"]
    rows2 = {r[0]: r for r in _table(md_behind, "lineitem-sf1, 2 threads:")}
    assert "file size MiB" not in rows2  # thread-independent: 1-thread table only


def test_issue14_targets_evaluated():
    t = {label: (measured, met) for label, measured, met in
         report.issue14_targets(report.Records(AFTER), {})}
    assert t["no measure behind Vortex on lineitem-sf1, 1 thread"] == ("0 of 5 behind", True)
    assert t["Q6 ≤ 0.7× Vortex's time on lineitem-sf1, 1 thread"] == \
        ("0.67× (14 vs 21 ms)", True)
    assert t["Q6 ≤ 0.7× Vortex's time on lineitem-sf1, 2 threads"][1] is True  # 0.68
    assert t["Quiver full scan, 2 threads ≥ 1.8× 1 thread, lineitem-sf1"][1] is True  # 1.90
    assert t["Quiver cold take 100 rows ≤ 2 ms from Python, lineitem-sf1, 1 thread"] == \
        ("1.5 ms", True)
    assert t["Quiver warm take 100 rows ≤ 0.3 ms from Python, lineitem-sf1, 1 thread"] == \
        ("0.2 ms", True)
    old = {label: (measured, met) for label, measured, met in
           report.issue14_targets(report.Records(BEFORE), {})}
    assert old["Quiver warm take 100 rows ≤ 0.3 ms from Python, lineitem-sf1, 1 thread"] == \
        ("—", None)
    assert old["no measure behind Vortex on lineitem-sf1, 2 threads"][1] is False
    assert old["Q6 ≤ 0.7× Vortex's time on lineitem-sf1, 1 thread"][1] is False  # 1.43


def test_oversubscribed_mode_is_not_reported_as_such():
    meta = {"oversubscribed": [2],
            "cpus": {"online": 2, "affinity": [1], "quota": None, "usable": 1}}
    md = report.markdown(AFTER, meta)
    assert "CPUs of this process: 2 online, affinity {1} (1), cgroup quota none: 1 usable" in md
    assert "2 threads — OVERSUBSCRIBED: this process could use only 1 CPU(s)" in md
    t = {label: (measured, met) for label, measured, met in
         report.issue14_targets(report.Records(AFTER), meta)}
    assert t["Quiver full scan, 2 threads ≥ 1.8× 1 thread, lineitem-sf1"] == \
        ("not measured: oversubscribed", None)
    assert t["no measure behind Vortex on lineitem-sf1, 2 threads"][1] is None


def test_before_after_columns_and_older_records():
    md = report.markdown(AFTER, {"runs": 5}, BEFORE, {"source": "before.json"})
    assert "### Before / after" in md
    blocks = md.split("### Before / after")[1]
    rows = {r[0]: r for r in _table(blocks, "lineitem-sf1, 1 thread:")}
    assert rows["full scan ms"] == ["full scan ms", "400", "200", "−50%", "250", "250",
                                    "0.62×", "1.25×"]
    assert rows["warm take 100 ms"][1:4] == ["—", "0.2", "—"]
    assert rows["file size MiB"][3] == "−9%"
    targets = md.split("### Targets of issue 14")[1]
    assert "| target | before | after | met before | met after |" in targets


def test_dataset_only_in_one_run():
    after = AFTER + _run({"full_scan": 0.01}, {"full_scan": 0.02}, {"full_scan": 0.006},
                         {"full_scan": 0.01}, case="takes-1000k")
    md = report.markdown(after, {}, BEFORE, {})
    assert "takes-1000k: not in the before run." in md


def test_thread_modes_follow_usable_cpus(capsys):
    mod = _main_module()
    args = types.SimpleNamespace(threads=None, oversubscribe=False)
    assert mod.thread_modes(args, {"usable": 2}) == ([1, 2], [])
    assert mod.thread_modes(args, {"usable": 1}) == ([1], [])
    assert "only 1 usable CPU(s): skipping the 2-thread mode" in capsys.readouterr().out
    args.oversubscribe = True
    assert mod.thread_modes(args, {"usable": 1}) == ([1, 2], [2])
    args.threads = "1,4"
    assert mod.thread_modes(args, {"usable": 8}) == ([1, 4], [])


def test_busy_machine_is_flagged():
    cpus = {"online": 2, "affinity": [0, 1], "quota": None, "usable": 2, "measured": 1.1,
            "loadavg": 4.0}
    md = report.markdown(AFTER, {"cpus": cpus, "date": "D"})
    assert "2 busy processes got 1.10 CPUs, load average 4.00" in md
    assert "**Warning:** other work competed for the CPUs" in md
    cpus["measured"] = 1.97
    assert "Warning" not in report.markdown(AFTER, {"cpus": cpus, "date": "D"})


def test_parallelism_is_measured():
    got = machine.parallelism(1, seconds=0.1)
    assert 0.0 < got <= 1.2  # one busy process gets at most one CPU (+ timing slack)


def test_cpus_are_what_the_process_may_use():
    c = machine.cpus()
    assert 1 <= c["usable"] <= len(c["affinity"]) <= c["online"]
    assert set(c["affinity"]) == set(os.sched_getaffinity(0))
    assert machine.cpus_text({"online": 8, "affinity": [0, 1, 2, 5], "quota": 1.5,
                              "usable": 2}) == \
        "8 online, affinity {0-2,5} (4), cgroup quota 1.5 CPUs: 2 usable"


def test_load_run(tmp_path):
    mod = _main_module()
    p = tmp_path / "run.json"
    p.write_text(json.dumps(AFTER))
    records, meta = mod.load_run(str(p))
    assert records == AFTER and meta["source"].endswith("run.json")
    (tmp_path / "run.meta.json").write_text(json.dumps({"date": "D", "quick": True}))
    assert mod.load_run(str(p))[1]["date"] == "D"
    (tmp_path / "bad.json").write_text(json.dumps({"not": "records"}))
    with pytest.raises(SystemExit):
        mod.load_run(str(tmp_path / "bad.json"))


def test_filter_mask_counts_what_every_engine_must_return():
    mod = _main_module()
    t = pa.table({"a": pa.array([1, 5, None, 7, 3]), "b": pa.array([0.1, 0.2, 0.3, None, 0.5])})
    assert mod.filter_mask(t, [("a", ">=", 3), ("b", "between", (0.0, 1.0))]) == 2
    assert mod.filter_mask(t, [("a", ">", 100)]) == 0


def test_takes_dataset_is_seeded_and_shaped():
    a = datasets.takes(3000, chunk=1024, corpus_bytes=64 << 10)
    b = datasets.takes(3000, chunk=1024, corpus_bytes=64 << 10)
    assert a.table.equals(b.table)
    t = a.table
    assert t.num_rows == 3000 and t.column_names == ["id", "long_text", "url", "sparse", "uuid"]
    lens = pc.binary_length(t.column("long_text")).to_numpy()
    assert lens.min() >= 1024 and lens.max() <= 4096
    assert t.column("long_text").num_chunks == 3
    assert 0.93 < t.column("sparse").null_count / 3000 < 0.97
    uuid = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    assert all(uuid.match(u) for u in t.column("uuid").to_pylist())
    assert all(u.startswith("https://www.") for u in t.column("url").to_pylist())
    assert set(a.takes.values()) == {"long_text", "url", "sparse", "uuid"}
    assert "filter_dec" not in a.filters and "filter_q6" in a.filters


# ---- issue 15: sizes and writes against Parquet-zstd, per-column sizes ----

def _cols(case, fmt, sizes):
    return [{"bench": "compare", "case": case, "variant": f"{fmt}/0t", "metric": "column_size",
             "stat": "value", "value": v, "unit": "bytes", "column": c} for c, v in sizes.items()]


def _run15(q_size=100, q_write=1.0, q_write2=0.5, case="lineitem-sf1", compact=65):
    return (_recs(case, "quiver", 1, {"file_size": q_size, "write": q_write})
            + _recs(case, "quiver", 2, {"write": q_write2})
            + _recs(case, "quiver-compact", 1, {"file_size": compact, "write": 3.0})
            + _recs(case, "parquet-zstd", 1, {"file_size": 100, "write": 2.0})
            + _recs(case, "parquet-zstd", 2, {"write": 2.0})
            + _recs(case, "vortex", 1, {"file_size": 125, "write": 4.0})
            + _recs(case, "vortex", 2, {"write": 3.0}))


REAL = (_run15(80, 0.01, 0.01, case="real-vega-cars")
        + _cols("real-vega-cars", "quiver", {"name": 900, "year": 100, "mpg": 50})
        + _cols("real-vega-cars", "parquet-zstd", {"name": 1000, "year": 40, "mpg": 60})
        + _cols("real-vega-cars", "arrow", {"name": 5000, "year": 3000, "mpg": 3000})
        + _run15(95, 0.03, 0.03, case="real-sm-co2")
        + _cols("real-sm-co2", "quiver", {"date": 10, "co2": 20})
        + _cols("real-sm-co2", "parquet-zstd", {"date": 10, "co2": 30}))


def _targets15(records, meta=None):
    from . import vs_parquet
    return {label: (measured, met) for label, measured, met in
            vs_parquet.issue15_targets(report.Records(records), meta or {})}


def test_column_records_are_kept_apart_from_figures():
    rs = report.Records(REAL)
    assert rs.column_sizes("real-vega-cars", "quiver") == {"name": 900, "year": 100, "mpg": 50}
    assert rs.column_sizes("real-vega-cars", "vortex") == {}
    assert "arrow" not in rs.formats and rs.cases == ["real-vega-cars", "real-sm-co2"]
    assert rs.value("real-vega-cars", "quiver", 0, "file_size") == 80
    assert "column_size" not in rs.metrics("real-vega-cars")


def test_issue15_targets_evaluated():
    t = _targets15(_run15(80, 0.9, 0.5) + _run15(81, 2.5, 2.5, case="flights") + REAL)
    assert t["lineitem-sf1: Quiver default ≤ 0.80× Parquet-zstd's size"] == \
        ("0.80× (0.1 KiB vs 0.1 KiB)", True)
    assert t["lineitem-sf1: Quiver compact ≤ 0.70× Parquet-zstd's size"][1] is True  # 0.65
    assert t["flights: Quiver default ≤ 0.90× Parquet-zstd's size"][1] is True
    assert t["real-sm-co2: Quiver default ≤ 0.90× Parquet-zstd's size"][1] is False  # 0.95
    assert "lineitem-sf1: Quiver default ≤ 0.90× Parquet-zstd's size" not in t  # not real
    mean = t["geometric mean of Quiver's size over Parquet-zstd's, 3 real datasets (informative)"]
    assert mean == (f"{(0.81 * 0.80 * 0.95) ** (1 / 3):.2f}×", None)
    assert t["real-vega-cars: no column larger than Parquet-zstd's"] == \
        ("1 of 3 larger: year 2.50×", False)
    assert t["real-sm-co2: no column larger than Parquet-zstd's"] == ("0 of 2 larger", True)
    assert t["lineitem-sf1: Quiver writes ≥ 2.0× faster than Parquet-zstd, 1 thread"] == \
        ("2.22×", True)
    assert t["flights: Quiver writes no slower than Parquet-zstd, 1 thread"] == ("0.80×", False)
    assert t["lineitem-sf1: Quiver writes ≥ 1.8× faster with 2 threads than with 1"] == \
        ("1.80×", True)
    over = _targets15(_run15(), {"oversubscribed": [2]})
    assert over["lineitem-sf1: Quiver writes ≥ 1.8× faster with 2 threads than with 1"] == \
        ("not measured: oversubscribed", None)


def test_size_and_write_tables_with_geometric_means():
    md = report.markdown(_run15(80, 0.9, 0.5) + REAL, {"shapes": {"real-vega-cars": [406, 9, 1]}})
    sizes = {r[0]: r for r in _table(md, "### Sizes against Parquet-zstd")}
    assert sizes["dataset"][3:] == ["quiver/P", "quiver-compact/P", "vortex/P", "quiver/vortex"]
    assert sizes["real-vega-cars"][1:5] == ["406", "0.1 KiB", "0.80×", "0.65×"]
    assert sizes["real-sm-co2"][3] == "0.95× ✗" and sizes["lineitem-sf1"][3] == "0.80×"
    mean = sizes["**geometric mean, real datasets (2)**"]
    assert mean[3] == f"{(0.8 * 0.95) ** 0.5:.2f}×" and mean[6] == f"{(0.64 * 0.76) ** 0.5:.2f}×"
    every = sizes["**geometric mean, every dataset (3)**"]
    assert every[3] == f"{(0.8 * 0.8 * 0.95) ** (1 / 3):.2f}×"
    title = next(line for line in md.splitlines() if line.startswith(
        "Write speed against Parquet-zstd, 2 threads"))
    writes = {r[0]: r for r in _table(md, title)}
    assert writes["dataset"][-1] == "quiver 2t/1t"
    assert writes["lineitem-sf1"][1:3] == ["2000", "4.00×"]
    assert writes["lineitem-sf1"][-1] == "1.80×"
    title1 = next(line for line in md.splitlines() if line.startswith(
        "Write speed against Parquet-zstd, 1 thread"))
    one = {r[0]: r for r in _table(md, title1)}
    assert one["real-vega-cars"][2] == "200.00×" and "✗" not in one["real-vega-cars"][2]


def test_per_column_table_flags_columns_larger_than_parquet():
    before = _cols("real-vega-cars", "quiver", {"name": 1000, "year": 200})
    md = report.markdown(REAL, {}, before, {})
    summary = {r[0]: r for r in _table(md, "### Per-column sizes against Parquet-zstd")}
    assert summary["real-vega-cars"][1:3] == ["3", "1"]
    assert summary["real-vega-cars"][-1] == "year 2.50×"
    assert summary["real-sm-co2"][2] == "0"
    title = "<details><summary>real-vega-cars: 1 of 3 columns larger than Parquet-zstd</summary>"
    rows = {r[0]: r for r in _table(md, title)}
    assert rows["column"][-3:] == ["quiver before", "change", ""]
    assert rows["year"][1:5] == ["3,000", "40", "100", "2.50×"] and rows["year"][-1] == "✗"
    assert rows["name"][-3:] == ["1,000", "−10%", ""]
    assert rows["mpg"][-3:] == ["—", "—", ""]
    assert rows["**all columns**"][2:5] == ["1,100", "1,050", "0.95×"]
    # the small tables' figures fold away; the report still names them
    assert "<details><summary>real-vega-cars</summary>" in md


def test_parquet_column_sizes_follow_top_level_columns(tmp_path):
    import pyarrow.parquet as pq

    from . import formats
    n = 2000
    t = pa.table({
        "a.b": pa.array(np.arange(n)),
        "s": pa.StructArray.from_arrays([pa.array(np.arange(n) % 7), pa.array(["x"] * n)],
                                        names=["p", "q"]),
        "l": pa.array([[i, i + 1] for i in range(n)]),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "z": pa.array(np.zeros(n)),
    })
    path = str(tmp_path / "t.parquet")
    pq.write_table(t, path, compression="zstd", row_group_size=700)
    sizes = formats.make("parquet-zstd").column_sizes(path)
    assert list(sizes) == ["a.b", "s", "l", "m", "z"]
    md = pq.ParquetFile(path).metadata
    chunks = [md.row_group(g).column(c).total_compressed_size
              for g in range(md.num_row_groups) for c in range(md.num_columns)]
    assert md.num_row_groups == 3 and md.num_columns == 7  # a.b, s.p, s.q, l, m.k, m.v, z
    assert sum(sizes.values()) == sum(chunks)
    s_chunks = sum(md.row_group(g).column(c).total_compressed_size
                   for g in range(3) for c in (1, 2))  # s.p, s.q
    assert sizes["s"] == s_chunks
    assert formats.arrow_leaves(t.schema.field("m").type) == 2


def test_quiver_column_sizes_sum_to_encoded_data(tmp_path):
    from . import formats
    quiver = pytest.importorskip("quiver")
    if formats.qv_cli() is None:
        pytest.skip("no qv command built (bench/run compare builds build/release/cli/qv)")
    n = 5000
    t = pa.table({"id": pa.array(np.arange(n)), "txt": pa.array([f"v{i % 13}" for i in range(n)])})
    path = str(tmp_path / "t.qvr")
    quiver.write(t, path, row_group_rows=2000)
    sizes = formats.make("quiver").column_sizes(path)
    assert list(sizes) == ["id", "txt"] and all(v > 0 for v in sizes.values())
    assert sum(sizes.values()) < os.path.getsize(path)


def test_real_tables_convert_to_plain_arrow():
    pd = pytest.importorskip("pandas")
    from . import real_tables
    df = pd.DataFrame({"v": [1.5, None, 3.0], "c": pd.Categorical(["a", "b", "a"]),
                       "s": ["x", None, "z"]},
                      index=pd.DatetimeIndex(["2020-01-01", "2020-01-08", "2020-01-15"],
                                             name="when"))
    t = real_tables._arrow(df)
    assert t.column_names == ["when", "v", "c", "s"]
    assert t.schema.field("when").type == pa.timestamp("us")
    assert t.schema.field("c").type == pa.string() and t.schema.field("s").type == pa.string()
    assert t.schema.metadata is None and t.column("s").null_count == 1
    plain = real_tables._arrow(pd.DataFrame({"x": [1, 2]}))
    assert plain.column_names == ["x"]  # a default index is not a column


def test_real_tables_load_from_their_packages():
    """Every table of the catalogue loads from its installed package
    (scripts/setup.sh installs them; nothing is downloaded) as a light
    dataset of plain Arrow types."""
    from . import real_tables
    names = [k for k, *_ in real_tables.TABLES]
    assert len(names) == len(set(names)) >= 12
    plain = (pa.types.is_integer, pa.types.is_floating, pa.types.is_string, pa.types.is_boolean,
             pa.types.is_timestamp, pa.types.is_date)
    for key, package, *_ in real_tables.TABLES:
        pytest.importorskip({"vega_datasets": "vega_datasets", "scikit-learn": "sklearn",
                             "statsmodels": "statsmodels"}[package])
        ds = real_tables.load(key)
        t = ds.table
        assert ds.name == f"real-{key}" and ds.light and ds.filters == {}
        assert t.num_rows >= 100 and t.num_columns >= 2, key
        assert all(c.num_chunks == 1 for c in t.columns), key
        bad = [f"{f.name}: {f.type}" for f in t.schema if not any(p(f.type) for p in plain)]
        assert not bad, f"{key}: {bad}"
    keys = [k for k, _ in datasets.plan(False, ["real-sm"])]
    assert keys and all(k.startswith("real-sm-") for k in keys)


def test_fast_calls_get_more_runs(monkeypatch):
    import gc
    mod = _main_module()
    monkeypatch.setattr(mod, "FILL_RUNS", 7)
    calls = []
    lo, med, rows = mod.timed(lambda: calls.append(gc.isenabled()), 3, fill=True)
    assert len(calls) == 1 + 7 and lo <= med
    assert not any(calls) and gc.isenabled()  # off during the runs, on again after
    calls.clear()
    mod.timed(lambda: calls.append(1), 3)
    assert len(calls) == 4


def test_run_measures_a_light_dataset(tmp_path, monkeypatch):
    """compare.run end to end on one small table with two pyarrow formats
    (and Quiver where its package and qv are there): sizes, per-column sizes,
    writes, scans and takes recorded, and the report renders them."""
    mod = _main_module()
    from compare import formats
    t = pa.table({"k": pa.array(np.arange(300) % 11), "v": pa.array(np.arange(300) * 0.5)})
    light = datasets.Dataset("real-test", t, None, None, None, None, "a test table", light=True)
    monkeypatch.setattr(datasets, "plan", lambda quick, keep: [("real-test", lambda: light)])
    monkeypatch.setattr(mod, "FILL_RUNS", 3)
    fmts = ["parquet-zstd", "arrow-ipc-lz4"]
    try:
        formats.make("quiver")
        fmts.append("quiver")
    except ImportError:
        pass
    args = types.SimpleNamespace(formats=",".join(fmts), threads="1", oversubscribe=False,
                                 runs=1, quick=True, datasets=None, no_rss=False,
                                 work_dir=str(tmp_path))
    cpus = {"online": 1, "affinity": [0], "quota": None, "usable": 1}
    records, meta = mod.run(args, cpus)
    rs = report.Records(records)
    assert not [p for p in meta["problems"] if "column sizes" not in p], meta["problems"]
    assert meta["shapes"]["real-test"] == [300, 2, t.nbytes]
    for f in fmts:
        assert rs.value("real-test", f, 0, "file_size") > 0
        for m in ("write", "full_scan", "take_100"):
            assert rs.value("real-test", f, 1, m) > 0, (f, m)
        assert rs.value("real-test", f, 1, "project_int") is None
        assert rs.value("real-test", f, 1, "peak_rss") is None
    assert set(rs.column_sizes("real-test", "parquet-zstd")) == {"k", "v"}
    assert rs.column_sizes("real-test", "arrow") == {"k": t.column("k").nbytes,
                                                     "v": t.column("v").nbytes}
    assert os.path.exists(tmp_path / "real-test" / "parquet-zstd.parquet")
    md = report.markdown(records, meta)
    assert "### Sizes against Parquet-zstd" in md and "real-test" in md
    args.sizes_only = True
    records, meta = mod.run(args, cpus)
    assert meta["sizes_only"] and {r["metric"] for r in records} == {"file_size", "column_size"}


def test_quiver_writer_is_told_the_threads(monkeypatch):
    import sys
    from . import formats
    calls = []

    def write(table, path, *, compact=False, threads=None):
        calls.append((compact, threads))
    monkeypatch.setitem(sys.modules, "quiver", types.SimpleNamespace(SCAN_SYNC=-1, write=write))
    q = formats.Quiver(True)
    q.write(None, "x.qvr", 1)
    q.write(None, "x.qvr", 2)
    assert calls == [(True, -1), (True, 2)]  # 1 thread: the calling thread alone

    def older(table, path, *, compact=False):  # a package without the option
        calls.append(compact)
    monkeypatch.setitem(sys.modules, "quiver", types.SimpleNamespace(SCAN_SYNC=-1, write=older))
    formats.Quiver(False).write(None, "x.qvr", 2)
    assert calls[-1] is False


def test_load_runs_joins_before_files(tmp_path):
    mod = _main_module()
    a, b = tmp_path / "big.json", tmp_path / "small.json"
    a.write_text(json.dumps(BEFORE))
    (tmp_path / "big.meta.json").write_text(json.dumps({"date": "D1"}))
    b.write_text(json.dumps(REAL))
    records, meta = mod.load_runs([str(a), str(b)])
    assert records == REAL + BEFORE and meta["date"] == "D1"  # the first file's figures win
    assert meta["source"] == f"{a} + {b}"
    rs = report.Records(records)
    assert "lineitem-sf1" in rs.cases and "real-vega-cars" in rs.cases


def test_report_of_a_sizes_only_run():
    recs = [r for r in _run15() + REAL if r["metric"] == "file_size"] + \
        [r for r in REAL if r["metric"] == "column_size"]
    rs = report.Records(recs)
    assert rs.modes == [] and report.issue14_targets(rs, {}) == []
    md = report.markdown(recs, {"sizes_only": True})
    assert "### Sizes against Parquet-zstd" in md and "### Writes against" not in md
    assert "real-vega-cars: 1 of 3 columns larger than Parquet-zstd" in md
