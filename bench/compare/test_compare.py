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
