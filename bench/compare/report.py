"""The comparison's report: from the flat JSON records (DESIGN.md section 2)
of one run, and optionally of an earlier one, the markdown tables, the
Vortex/Quiver ratios, the targets, the before/after columns and the chart.

Records: {"bench": "compare", "case": dataset, "variant": "FORMAT/Nt",
"metric", "stat", "value", "unit"}; N is the thread count of the mode, 0
for figures that do not depend on it (file size). Times are in seconds,
stat "min" and "median"; sizes in bytes, stat "value". Everything here works
on records alone, so a report can be rendered again from a JSON file
(`--report-only`), including one written by an older compare.py, whose
records simply lack the newer measures.
"""
import os

MEASURES = [  # (metric, label, unit scale, unit label); every one: lower is better
    ("write", "write", 1.0, "s"),
    ("full_scan", "full scan", 1e3, "ms"),
    ("project_int", "int column", 1e3, "ms"),
    ("project_int_str", "int+str columns", 1e3, "ms"),
    ("filter_q6", "Q6 filter", 1e3, "ms"),
    ("filter_dec", "decimal filter", 1e3, "ms"),
    ("take_100", "cold take 100", 1e3, "ms"),
    ("take_warm", "warm take 100", 1e3, "ms"),
    ("take_long", "take long strings", 1e3, "ms"),
    ("take_url", "take URLs", 1e3, "ms"),
    ("take_sparse", "take 95%-null", 1e3, "ms"),
    ("take_uuid", "take UUIDs", 1e3, "ms"),
]
SIZES = [("file_size", "file size", 2**-20, "MiB"), ("peak_rss", "peak RSS", 2**-20, "MiB")]
UNITS = {m: (lbl, scale, unit) for m, lbl, scale, unit in MEASURES + SIZES}

# The datasets issue 14's "no measure behind Vortex" target is about (the
# takes dataset is measured and shown, but is not part of that target).
TARGET_DATASETS = ("lineitem", "nested", "flights")


class Records:
    """Index of one run's records: value(case, fmt, mode, metric), and the
    per-column sizes column_sizes(case, fmt) (records of metric
    "column_size" with a "column" key; variant "arrow/0t" is the in-memory
    table's, not a format's)."""

    def __init__(self, records):
        self.by = {}
        self.columns = {}
        figures = []
        for r in records:
            if r["metric"] == "column_size":
                fmt = r["variant"].split("/")[0]
                self.columns.setdefault(r["case"], {}).setdefault(fmt, {})[r["column"]] = \
                    r["value"]
                continue
            figures.append(r)
            self.by[(r["case"], r["variant"], r["metric"], r["stat"])] = r["value"]
        self.cases = list(dict.fromkeys([r["case"] for r in figures] + list(self.columns)))
        self.formats = list(dict.fromkeys(r["variant"].split("/")[0] for r in figures))
        self.modes = sorted({int(r["variant"].split("/")[1][:-1]) for r in figures} - {0})

    def column_sizes(self, case, fmt):
        """{column: bytes} of `fmt`'s file of `case` (or of the Arrow table,
        fmt "arrow"), in the order recorded; {} when not recorded."""
        return self.columns.get(case, {}).get(fmt, {})

    def value(self, case, fmt, mode, metric, stat="median"):
        if metric == "file_size":
            return self.by.get((case, f"{fmt}/0t", metric, "value"))
        if metric in ("peak_rss", "peak_rss_delta"):
            return self.by.get((case, f"{fmt}/{mode}t", metric, "value"))
        return self.by.get((case, f"{fmt}/{mode}t", metric, stat))

    def metrics(self, case):
        """The metrics measured on `case`, in report order."""
        have = {k[2] for k in self.by if k[0] == case}
        return [m for m, *_ in SIZES[:1] + MEASURES + SIZES[1:] if m in have]


def figure(metric, v):
    if v is None:
        return "—"
    _, scale, _ = UNITS[metric]
    x = v * scale
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def ratio_text(r):
    return "—" if r is None else f"{r:.2f}×"


def change_text(before, after):
    """after against before, in percent of before (negative: less time)."""
    if before is None or after is None or before == 0:
        return "—"
    c = (after / before - 1) * 100
    return f"{'+' if c >= 0 else '−'}{abs(c):.0f}%"


def mode_label(mode, meta):
    if mode == 1:
        return "1 thread"
    text = f"{mode} threads"
    over = meta.get("oversubscribed") or []
    if mode in over:
        usable = (meta.get("cpus") or {}).get("usable", "?")
        text += (f" — OVERSUBSCRIBED: this process could use only {usable} CPU(s), "
                 f"so these are not {mode}-thread figures")
    return text


def real_mode(mode, meta):
    return mode not in (meta.get("oversubscribed") or [])


def dataset_key(case):
    """"lineitem-sf1" -> "lineitem", "takes-400k" -> "takes"."""
    return case.split("-")[0]


def fold(ds, lines, summary):
    """`lines` about dataset ds, folded into a <details> block (GitHub renders
    it closed) when ds is one of the small real tables, which are many and
    whose ratios to Parquet-zstd are summed up in vs_parquet.py's tables."""
    if dataset_key(ds) != "real" or not lines:
        return lines
    return [f"<details><summary>{summary}</summary>", ""] + lines + ["</details>", ""]


def format_tables(rs, meta):
    out = []
    for ds in rs.cases:
        if not rs.metrics(ds):
            continue
        note = (meta.get("datasets") or {}).get(ds)
        block = [f"**{ds}**" + (f" — {note}" if note else ""), ""]
        metrics = [m for m in rs.metrics(ds) if m not in ("file_size", "peak_rss")]
        for mode in rs.modes:
            block.append(f"{mode_label(mode, meta)}:")
            block.append("")
            hdr = ["format", "size MiB"] + [f"{UNITS[m][0]} {UNITS[m][2]}" for m in metrics] + \
                  ["peak RSS MiB"]
            block.append("| " + " | ".join(hdr) + " |")
            block.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
            for f in rs.formats:
                size = rs.value(ds, f, 0, "file_size")
                if size is None:
                    continue
                row = [f, f"{size / 2**20:.1f}" if size >= 2**20 * 0.1 else f"{size / 2**20:.3g}"]
                row += [figure(m, rs.value(ds, f, mode, m)) for m in metrics]
                row.append(figure("peak_rss", rs.value(ds, f, mode, "peak_rss")))
                block.append("| " + " | ".join(row) + " |")
            block.append("")
        out += fold(ds, block, ds)
    return out


def ratio_rows(rs, ds, mode):
    """[(metric, quiver, vortex, vortex/quiver)] for every metric of the
    mode (file size in the 1-thread table only)."""
    rows = []
    for m in rs.metrics(ds):
        if m == "file_size" and rs.modes and mode != rs.modes[0]:
            continue
        q, x = rs.value(ds, "quiver", mode, m), rs.value(ds, "vortex", mode, m)
        if q is None and x is None:
            continue
        rows.append((m, q, x, None if not q or x is None else x / q))
    return rows


def ratio_tables(rs, meta):
    """Issue 14: Vortex/Quiver for every measure, per dataset and thread
    count; above 1 Quiver is ahead, ✗ marks where it is behind."""
    if "quiver" not in rs.formats or "vortex" not in rs.formats:
        return []
    out = ["### Vortex/Quiver", "",
           "Vortex's figure divided by Quiver's (above 1: Quiver is faster or smaller); "
           "✗ where Quiver is behind.", ""]
    for ds in rs.cases:
        block = []
        for mode in rs.modes:
            rows = ratio_rows(rs, ds, mode)
            if not rows:
                continue
            block.append(f"{ds}, {mode_label(mode, meta)}:")
            block.append("")
            block.append("| measure | Quiver | Vortex | Vortex/Quiver | |")
            block.append("|---|---:|---:|---:|:---:|")
            for m, q, x, r in rows:
                lbl, _, unit = UNITS[m]
                bad = "✗" if q is not None and x is not None and q > x else ""
                block.append(f"| {lbl} {unit} | {figure(m, q)} | {figure(m, x)} | "
                             f"{ratio_text(r)} | {bad} |")
            block.append("")
        out += fold(ds, block, f"{ds}: Vortex/Quiver")
    return out


def issue14_targets(rs, meta):
    """[(target, measured text, met: True/False/None)] of issue 14's targets
    on one run's records. None: not measurable from these records. None at
    all for a run that timed nothing (--sizes-only): file sizes alone would
    judge "no measure behind Vortex" on one measure."""
    out = []
    if not rs.modes:
        return out

    def case(key):
        return next((c for c in rs.cases if dataset_key(c) == key), None)
    two = [m for m in rs.modes if m != 1]
    modes = [1] + two[:1]
    for key in TARGET_DATASETS:
        ds = case(key)
        if ds is None:
            continue
        for mode in modes:
            label = f"no measure behind Vortex on {ds}, {mode} thread{'s' if mode > 1 else ''}"
            if not real_mode(mode, meta):
                out.append((label, "not measured: oversubscribed", None))
                continue
            rows = [r for r in ratio_rows(rs, ds, mode) if r[3] is not None]
            if not rows:
                out.append((label, "—", None))
                continue
            behind = [f"{UNITS[m][0]} {r:.2f}×" for m, q, x, r in rows if r < 1]
            out.append((label, f"{len(behind)} of {len(rows)} behind"
                        + (f": {', '.join(behind)}" if behind else ""), not behind))
    ds = case("lineitem")
    if ds is not None:
        for mode in modes:
            q, x = rs.value(ds, "quiver", mode, "filter_q6"), rs.value(ds, "vortex", mode,
                                                                          "filter_q6")
            label = f"Q6 ≤ 0.7× Vortex's time on {ds}, {mode} thread{'s' if mode > 1 else ''}"
            if not real_mode(mode, meta):
                out.append((label, "not measured: oversubscribed", None))
            elif q is None or x is None:
                out.append((label, "—", None))
            else:
                out.append((label, f"{q / x:.2f}× ({figure('filter_q6', q)} vs "
                                   f"{figure('filter_q6', x)} ms)", q / x <= 0.7))
    if two:
        mode = two[0]
        for key in TARGET_DATASETS:
            ds = case(key)
            if ds is None:
                continue
            label = f"Quiver full scan, {mode} threads ≥ 1.8× 1 thread, {ds}"
            a, b = rs.value(ds, "quiver", 1, "full_scan"), rs.value(ds, "quiver", mode,
                                                                    "full_scan")
            if not real_mode(mode, meta):
                out.append((label, "not measured: oversubscribed", None))
            elif a is None or b is None:
                out.append((label, "—", None))
            else:
                xa, xb = rs.value(ds, "vortex", 1, "full_scan"), rs.value(ds, "vortex", mode,
                                                                          "full_scan")
                vtx = f" (Vortex {xa / xb:.2f}×)" if xa and xb else ""
                out.append((label, f"{a / b:.2f}×{vtx}", a / b >= 1.8))
    for key in ("lineitem", "nested", "flights", "takes"):
        ds = case(key)
        if ds is None:
            continue
        for metric, goal in (("take_100", 2e-3), ("take_warm", 0.3e-3)):
            v = rs.value(ds, "quiver", 1, metric)
            label = (f"Quiver {UNITS[metric][0]} rows ≤ {goal * 1e3:g} ms from Python, "
                     f"{ds}, 1 thread")
            out.append((label, "—" if v is None else f"{v * 1e3:.3g} ms",
                        None if v is None else v <= goal))
    return out


def met_text(met):
    return "—" if met is None else "yes" if met else "no"


def targets_table(title, targets, rs, meta, before=None, before_meta=None):
    """The section `title`: the rows of `targets(records, meta)` (target,
    measured, met) of this run, and of the run before beside them when
    there is one; none when this run has no targets."""
    rows = targets(rs, meta)
    if not rows:
        return []
    out = [f"### {title}", ""]
    if before is None:
        out += ["| target | measured | met |", "|---|---|:---:|"]
        out += [f"| {t} | {m} | {met_text(ok)} |" for t, m, ok in rows]
    else:
        prev = {t: (m, ok) for t, m, ok in targets(before, before_meta or {})}
        out += ["| target | before | after | met before | met after |",
                "|---|---|---|:---:|:---:|"]
        for t, m, ok in rows:
            bm, bok = prev.get(t, ("—", None))
            out.append(f"| {t} | {bm} | {m} | {met_text(bok)} | {met_text(ok)} |")
    out.append("")
    return out


def targets14(rs, meta, before=None, before_meta=None):
    return targets_table("Targets of issue 14", issue14_targets, rs, meta, before, before_meta)


def parquet_targets(rs):
    """The project's earlier targets against Parquet+zstd, 1 thread."""
    ds = next((c for c in rs.cases if dataset_key(c) == "lineitem"), None)
    if ds is None or "quiver" not in rs.formats or "parquet-zstd" not in rs.formats:
        return []

    def v(fmt, metric):
        return rs.value(ds, fmt, 1, metric)

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b
    checks = [
        ("file size ≤ 0.8× Parquet+zstd", ratio(v("quiver", "file_size"),
                                                v("parquet-zstd", "file_size")), "≤", 0.8),
        ("write ≥ 2× faster than Parquet+zstd", ratio(v("parquet-zstd", "write"),
                                                       v("quiver", "write")), "≥", 2),
        ("full scan ≥ 3× faster than Parquet (zstd)", ratio(v("parquet-zstd", "full_scan"),
                                                           v("quiver", "full_scan")), "≥", 3),
        ("projected int column ≥ 10× faster than Parquet (zstd)",
         ratio(v("parquet-zstd", "project_int"), v("quiver", "project_int")), "≥", 10),
        ("take 100 rows ≥ 50× faster than Parquet (zstd)",
         ratio(v("parquet-zstd", "take_100"), v("quiver", "take_100")), "≥", 50),
    ]
    lines = [f"Earlier targets on {ds}, 1 thread (ratios of medians in this run):", "",
             "| target | measured | met |", "|---|---:|:---:|"]
    for label, r, op, goal in checks:
        if r is None:
            lines.append(f"| {label} | — | — |")
            continue
        ok = r <= goal if op == "≤" else r >= goal
        lines.append(f"| {label} | {r:.2f}× | {'yes' if ok else 'no'} |")
    lines.append("")
    return lines


def before_after(before, after, before_meta, meta):
    """Quiver's and Vortex's figures of an earlier run beside this one's, per
    dataset and thread count, with the change and the Vortex/Quiver ratio."""
    out = ["### Before / after", ""]
    src = before_meta.get("source", "an earlier run")
    when = before_meta.get("date")
    out.append(f"Before: {src}{f' ({when})' if when else ''}. Change: after against "
               f"before (negative: less time or space). Vortex/Quiver above 1: Quiver ahead.")
    out.append("")
    missing = [ds for ds in after.cases if ds not in before.cases]
    if missing:
        out.append(f"{', '.join(missing)}: not in the before run.")
        out.append("")
    for ds in after.cases:
        if ds in missing:
            continue
        block = []
        for mode in after.modes:
            metrics = [m for m in dict.fromkeys(before.metrics(ds) + after.metrics(ds))
                       if m != "peak_rss_delta"]
            metrics.sort(key=lambda m: [x for x, *_ in SIZES[:1] + MEASURES + SIZES[1:]]
                         .index(m))
            if mode != after.modes[0]:
                metrics = [m for m in metrics if m != "file_size"]
            rows = []
            for m in metrics:
                qb, qa = before.value(ds, "quiver", mode, m), after.value(ds, "quiver", mode, m)
                xb, xa = before.value(ds, "vortex", mode, m), after.value(ds, "vortex", mode, m)
                if qb is None and qa is None:
                    continue
                lbl, _, unit = UNITS[m]
                rb = xb / qb if qb and xb is not None else None
                ra = xa / qa if qa and xa is not None else None
                rows.append(f"| {lbl} {unit} | {figure(m, qb)} | {figure(m, qa)} | "
                            f"{change_text(qb, qa)} | {figure(m, xb)} | {figure(m, xa)} | "
                            f"{ratio_text(rb)} | {ratio_text(ra)} |")
            if not rows:
                continue
            label = mode_label(mode, meta)
            if mode not in before.modes:
                label += " (not in the before run)"
            elif not real_mode(mode, before_meta):
                label += " (before: oversubscribed)"
            block.append(f"{ds}, {label}:")
            block.append("")
            block.append("| measure | Quiver before | Quiver after | change | Vortex before | "
                         "Vortex after | Vortex/Quiver before | Vortex/Quiver after |")
            block.append("|---|---:|---:|---:|---:|---:|---:|---:|")
            block += rows
            block.append("")
        out += fold(ds, block, f"{ds}: before / after")
    return out


def markdown(records, meta, before=None, before_meta=None):
    rs = Records(records)
    br = Records(before) if before is not None else None
    out = []
    runs = meta.get("runs")
    if meta.get("date") is None:  # a bare records file: nothing known of its run
        out.append(f"Records of {meta.get('source', '?')} (no run metadata beside them); "
                   f"medians (min in the JSON).  ")
    else:
        out.append(f"Run {meta['date']} on {meta.get('machine', '?')}; "
                   f"{'quick run, ' if meta.get('quick') else ''}"
                   + (f"median of {runs} runs after a warm-up (min in the JSON).  "
                      if runs else "medians (min in the JSON).  "))
    if (meta.get("cpus") or {}).get("affinity") is not None:
        from . import machine
        c = meta["cpus"]
        out.append(f"CPUs of this process: {machine.cpus_text(c)}.  ")
        if c.get("measured") is not None and c["measured"] < 0.9 * c["usable"]:
            out.append(f"**Warning:** other work competed for the CPUs ({c['usable']} busy "
                       f"processes got {c['measured']:.2f} CPUs at the start): these figures, "
                       f"the 2-thread ones most, are not what an idle machine gives.  ")
    if meta.get("versions"):
        out.append("Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
                   + ".")
    if meta.get("note"):
        out.append(f"Note: {meta['note']}.")
    out.append("")
    out += format_tables(rs, meta)
    out += ratio_tables(rs, meta)
    out += targets14(rs, meta, br, before_meta)
    out += parquet_targets(rs)
    # Issue 15's sections (sizes and writes against Parquet-zstd, per-column
    # sizes, its targets); imported here because that module uses this one's
    # helpers.
    from . import vs_parquet
    out += vs_parquet.sections(rs, meta, br, before_meta)
    if br is not None:
        out += before_after(br, rs, before_meta or {}, meta)
    if meta.get("problems"):
        out.append("Problems seen during the run:")
        out.append("")
        out += [f"- {p}" for p in meta["problems"]]
        out.append("")
    return "\n".join(out)


def chart(records, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    rs = Records(records)
    width = 0.8 / max(1, len(rs.formats))
    ref_fmt = "parquet-zstd" if "parquet-zstd" in rs.formats else rs.formats[-1]
    # One panel of measures per large dataset; the small real tables, being
    # many with few measures, share two panels (size and write time, one
    # group of bars per table).
    large = [ds for ds in rs.cases if dataset_key(ds) != "real" and rs.metrics(ds)]
    small = [ds for ds in rs.cases if dataset_key(ds) == "real" and rs.metrics(ds)]
    panels = [(ds, [m for m in rs.metrics(ds) if m != "peak_rss_delta"]) for ds in large]
    panels += [(None, m) for m in ("file_size", "write") if small]
    fig, axes = plt.subplots(len(panels), 1, figsize=(14, 3.6 * len(panels)), squeeze=False)
    for ax, (ds, what) in zip(axes[:, 0], panels):
        groups = what if ds is not None else small
        for i, f in enumerate(rs.formats):
            ys = []
            for g in groups:
                case, m = (ds, g) if ds is not None else (g, what)
                v, ref = rs.value(case, f, 1, m), rs.value(case, ref_fmt, 1, m)
                ys.append(v / ref if v and ref else np.nan)
            ax.bar(np.arange(len(groups)) + (i - len(rs.formats) / 2 + 0.5) * width, ys,
                   width, label=f)
        ax.set_yscale("log")
        ax.axhline(1, color="black", lw=0.6)
        ax.set_xticks(np.arange(len(groups)))
        if ds is not None:
            ax.set_xticklabels([UNITS[m][0] for m in groups], fontsize=8, rotation=15)
            ax.set_title(f"{ds} — 1 thread", fontsize=10)
        else:
            ax.set_xticklabels([g[len("real-"):] for g in groups], fontsize=7, rotation=20)
            ax.set_title(f"small real tables: {UNITS[what][0]}"
                         + (" — 1 thread" if what != "file_size" else ""), fontsize=10)
        ax.set_ylabel(f"relative to {ref_fmt}\n(lower is better)")
    axes[0, 0].legend(ncol=len(rs.formats), fontsize=8, loc="upper center",
                      bbox_to_anchor=(0.5, 1.35))
    fig.suptitle(f"Quiver vs Parquet, Vortex, Arrow IPC, DuckDB — {meta.get('date', '?')}",
                 y=1.0)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")


def readme_excerpt(md_text, md_rel):
    """The report's header and its first dataset's tables, then a pointer to
    the whole report: with every dataset, the small tables and the
    per-column sizes it runs to ~1,700 lines, too many for the README."""
    parts = md_text.split("\n**")
    if len(parts) <= 2:
        return md_text
    return ("\n**".join(parts[:2]).rstrip("\n") +
            f"\n\nEvery other dataset, the Vortex ratios, the issues' targets and the "
            f"per-column sizes: [{md_rel}]({md_rel}).\n")


def update_readme(root, md_text, png_rel):
    readme = os.path.join(root, "README.md")
    text = open(readme).read()
    start, end = "<!-- compare:start -->", "<!-- compare:end -->"
    md_rel = os.path.splitext(png_rel)[0] + ".md"
    body = (f"{start}\n_Filled by `bench/run compare --update-readme`; do not edit by hand._\n\n"
            f"![comparison chart]({png_rel})\n\n{readme_excerpt(md_text, md_rel)}\n{end}")
    if start in text and end in text:
        a, b = text.index(start), text.index(end) + len(end)
        text = text[:a] + body + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n## Latest comparison\n\n" + body + "\n"
    open(readme, "w").write(text)
