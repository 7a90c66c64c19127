"""Random filters against pyarrow.compute, with projections overlapping the
filter's columns: the scan gathers a projected filter column from the
values its filter decoded (core/src/scan/gather.c), and dictionary takes
look up only the rows asked for (encoding/dict.c). Every flat type, nulls,
OR / NOT / IS NULL / string comparisons (which decode their columns),
batch sizes that do not divide row groups, limits, take lists, threads
SYNC / 1 / 2, compact files or not."""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import quiver

N = 6000
WORDS = ["", "a", "ab", "abc", "b", "ba", "zz", "q9", "x" * 70, "\u00e9t\u00e9"]


def _mask(rng, n, p):
    return rng.random(n) < p if p else None


def make_table(seed):
    rng = np.random.default_rng(seed)
    p = [0.0, 0.1, 0.5][seed % 3]
    n = N
    cols = {
        "i": pa.array(rng.integers(-50, 50, n), pa.int32(), mask=_mask(rng, n, p)),
        "u": pa.array(rng.integers(0, 7, n), pa.uint8(), mask=_mask(rng, n, p)),
        "l": pa.array(rng.integers(-2**40, 2**40, n), pa.int64(), mask=_mask(rng, n, p)),
        "f": pa.array(np.round(rng.normal(0, 10, n), 1), pa.float64(), mask=_mask(rng, n, p)),
        "g": pa.array(rng.integers(-8, 8, n).astype(np.float32), pa.float32(),
                      mask=_mask(rng, n, p)),
        "b": pa.array(rng.random(n) < 0.3, pa.bool_(), mask=_mask(rng, n, p)),
        "d": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-999, 999, n)],
                      pa.decimal128(9, 2), mask=_mask(rng, n, p)),
        "dt": pa.array(rng.integers(18000, 18030, n).astype(np.int32), pa.int32(),
                       mask=_mask(rng, n, p)).cast(pa.date32()),
        "ts": pa.array(rng.integers(0, 10**6, n) * 1000, pa.int64(),
                       mask=_mask(rng, n, p)).cast(pa.timestamp("us")),
        "s": pa.array([WORDS[int(k)] for k in rng.integers(0, len(WORDS), n)], pa.string(),
                      mask=_mask(rng, n, p)),
        "t": pa.array([f"k{int(k)}" for k in rng.integers(0, 3000, n)], pa.large_string(),
                      mask=_mask(rng, n, p)),
        "y": pa.array([bytes([int(k) % 256, 0, 255]) * int(k % 3) for k in
                       rng.integers(0, 40, n)], pa.binary(), mask=_mask(rng, n, p)),
        "w": pa.array([bytes([int(k), 0xFF - int(k)]) for k in rng.integers(0, 6, n)],
                      pa.binary(2), mask=_mask(rng, n, p)),
        "h": pa.array(rng.integers(-4, 4, n).astype(np.float16), pa.float16(),
                      mask=_mask(rng, n, p)),
    }
    return pa.table(cols)


OPS = ["=", "!=", "<", "<=", ">", ">="]
PC_OPS = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
          ">": pc.greater, ">=": pc.greater_equal}


def _lit(rng, col):
    """(text, python value) of a literal for column col."""
    if col in ("i", "u"):
        v = int(rng.integers(-5 if col == "i" else 0, 8))
        return str(v), v
    if col == "l":
        v = int(rng.integers(-2**40, 2**40))
        return str(v), v
    if col in ("f", "g"):
        v = float(np.round(rng.normal(0, 5), 1))
        return repr(v), v
    if col == "d":
        v = decimal.Decimal(int(rng.integers(-999, 999))).scaleb(-2)
        return str(v), v
    if col == "dt":
        v = datetime.date(2019, 4, 14) + datetime.timedelta(days=int(rng.integers(0, 30)))
        return f"DATE '{v.isoformat()}'", v
    if col == "ts":
        us = int(rng.integers(0, 10**9))
        v = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=us)
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'", v
    if col == "s":
        v = WORDS[int(rng.integers(0, len(WORDS) - 1))]
        return "'" + v + "'", v
    if col == "t":
        v = f"k{int(rng.integers(0, 3000))}"
        return "'" + v + "'", v
    raise AssertionError(col)


FILTERABLE = ["i", "u", "l", "f", "g", "d", "dt", "ts", "s", "t", "b"]


def _atom(rng, table):
    col = FILTERABLE[int(rng.integers(0, len(FILTERABLE)))]
    a = table.column(col)
    kind = int(rng.integers(0, 10))
    if col == "b":
        if kind < 5:
            return col, a
        return f"NOT {col}", pc.invert(a)
    if kind == 0:
        return f"{col} IS NULL", pc.is_null(a)
    if kind == 1:
        return f"{col} IS NOT NULL", pc.is_valid(a)
    if kind == 2:
        (t1, v1), (t2, v2) = _lit(rng, col), _lit(rng, col)
        if v1 > v2:
            (t1, v1), (t2, v2) = (t2, v2), (t1, v1)
        exp = pc.and_kleene(pc.greater_equal(a, pa.scalar(v1, a.type)),
                            pc.less_equal(a, pa.scalar(v2, a.type)))
        return f"{col} BETWEEN {t1} AND {t2}", exp
    if kind == 3:
        lits = [_lit(rng, col) for _ in range(int(rng.integers(1, 4)))]
        exp = None
        for _, v in lits:
            e = pc.equal(a, pa.scalar(v, a.type))
            exp = e if exp is None else pc.or_kleene(exp, e)
        return f"{col} IN ({', '.join(t for t, _ in lits)})", exp
    if kind == 4 and col in ("s", "t"):
        pre = ["", "a", "k1", "x", "k2"][int(rng.integers(0, 5))]
        return f"{col} STARTS WITH '{pre}'", pc.starts_with(a, pre)
    op = OPS[int(rng.integers(0, len(OPS)))]
    t, v = _lit(rng, col)
    return f"{col} {op} {t}", PC_OPS[op](a, pa.scalar(v, a.type))


def random_filter(rng, table, depth=0):
    r = rng.random()
    if depth >= 3 or r < 0.35:
        return _atom(rng, table)
    if r < 0.45:
        t, e = random_filter(rng, table, depth + 1)
        return f"NOT ({t})", pc.invert(e)
    parts = [random_filter(rng, table, depth + 1) for _ in range(int(rng.integers(2, 4)))]
    op, fn = ("AND", pc.and_kleene) if rng.random() < 0.5 else ("OR", pc.or_kleene)
    exp = parts[0][1]
    for _, e in parts[1:]:
        exp = fn(exp, e)
    return f" {op} ".join(f"({t})" for t, _ in parts), exp


ALL = ["i", "u", "l", "f", "g", "b", "d", "dt", "ts", "s", "t", "y", "w", "h"]


@pytest.mark.parametrize("seed", range(12))
def test_random_filters_against_pyarrow(tmp_path, seed):
    table = make_table(seed)
    rng = np.random.default_rng(100 + seed)
    p = tmp_path / "r.qvr"
    quiver.write(table, p, row_group_rows=int(rng.integers(700, 2500)), compact=seed % 4 == 3)
    with quiver.open(p) as f:
        for q in range(25):
            text, mask = random_filter(rng, table)
            mask = pc.fill_null(mask, False)
            cols = [c for c in ALL if rng.random() < 0.5] or ["s"]
            want = table.filter(mask).select(cols)
            threads = [quiver.SCAN_SYNC, 1, 2][q % 3]
            batch = int(rng.integers(100, 3000))
            where = f"seed {seed} query {q}: {text} cols {cols} threads {threads} batch {batch}"
            got = f.to_arrow(columns=cols, filter=text, threads=threads, batch_rows=batch)
            assert got.equals(want), where
            if q % 4 == 0 and want.num_rows > 1:
                lim = int(rng.integers(1, want.num_rows))
                got = f.scan(columns=cols, filter=text, threads=threads, batch_rows=batch,
                             limit=lim).read_all()
                assert got.equals(want.slice(0, lim)), where + f" limit {lim}"
            if q % 5 == 1:
                idx = np.unique(rng.integers(0, N, int(rng.integers(1, 2000))))
                scan = f._open_scan(cols, text, idx, batch, threads)
                got = pa.Table.from_batches(list(scan), schema=scan.schema)
                keep = pc.is_in(pa.array(np.arange(N)), pa.array(idx))
                want_t = table.select(cols).filter(pc.and_(keep, mask))
                assert got.equals(want_t), where + " take list"
