"""File.statistics / File.row_group_statistics(i): the file layer's
statistics (qv_file_statistics) as Arrow data in the Arrow statistics
schema (Arrow columnar format docs, "Statistics schema"), checked against
the spec and against what pyarrow.compute computes from the data itself,
per row group and for the whole file."""
import decimal
import gc

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import quiver

N = 5000
RG = 1024

STANDARD = {
    "ARROW:average_byte_width:exact": pa.float64(),
    "ARROW:average_byte_width:approximate": pa.float64(),
    "ARROW:distinct_count:exact": pa.int64(),
    "ARROW:distinct_count:approximate": pa.float64(),
    "ARROW:max_byte_width:exact": pa.int64(),
    "ARROW:max_byte_width:approximate": pa.float64(),
    "ARROW:null_count:exact": pa.int64(),
    "ARROW:null_count:approximate": pa.float64(),
    "ARROW:row_count:exact": pa.int64(),
    "ARROW:row_count:approximate": pa.float64(),
    # Target dependent:
    "ARROW:max_value:exact": None,
    "ARROW:max_value:approximate": None,
    "ARROW:min_value:exact": None,
    "ARROW:min_value:approximate": None,
}


def _nulls(rng, n, p=0.2):
    return rng.random(n) < p


def stats_table(seed=9):
    """Every orderable type, nested ones too. Below a null struct or list
    every child slot is null (or absent), so a child's physical null count
    is its logical one."""
    rng = np.random.default_rng(seed)
    cols = {}
    cols["i8"] = pa.array(rng.integers(-100, 100, N), pa.int8(), mask=_nulls(rng, N))
    cols["i64"] = pa.array(rng.integers(-2**62, 2**62, N), pa.int64(), mask=_nulls(rng, N))
    cols["u32"] = pa.array(rng.integers(0, 2**32, N), pa.uint32(), mask=_nulls(rng, N))
    cols["u64"] = pa.array(rng.integers(0, 2**64 - 1, N, dtype=np.uint64, endpoint=True),
                           pa.uint64(), mask=_nulls(rng, N))
    cols["f32"] = pa.array(rng.normal(0, 100, N).astype(np.float32), mask=_nulls(rng, N))
    cols["f64"] = pa.array(rng.normal(0, 1e6, N), mask=_nulls(rng, N))
    cols["bool"] = pa.array(rng.random(N) < 0.5, mask=_nulls(rng, N))
    cents = rng.integers(-10**6, 10**6, N)
    cols["dec"] = pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in cents],
                           pa.decimal128(12, 2), mask=_nulls(rng, N))
    cols["date"] = pa.array(rng.integers(-20000, 20000, N).astype(np.int32), pa.int32(),
                            mask=_nulls(rng, N)).cast(pa.date32())
    cols["ts"] = pa.array(rng.integers(-2**40, 2**40, N), pa.int64(),
                          mask=_nulls(rng, N)).cast(pa.timestamp("us", "UTC"))
    words = [f"w{int(x):05d}" * (1 + int(x) % 3) for x in rng.integers(0, 99999, N)]
    cols["str"] = pa.array(words, pa.string(), mask=_nulls(rng, N))
    cols["bin"] = pa.array([w.encode() + b"\x00\xff" for w in words], pa.binary(),
                           mask=_nulls(rng, N))
    # Long strings: bounds may be truncated (":approximate").
    cols["long"] = pa.array([w * 40 for w in words], pa.large_string(), mask=_nulls(rng, N))
    cols["allnull"] = pa.nulls(N, pa.int32())
    smask = _nulls(rng, N, 0.1)
    a = pa.array(rng.integers(0, 1000, N), pa.int32(), mask=_nulls(rng, N) | smask)
    b = pa.array([f"b{i % 97}" for i in range(N)], pa.string(), mask=_nulls(rng, N) | smask)
    inner_mask = _nulls(rng, N) | smask
    x = pa.array(rng.random(N), pa.float64(), mask=_nulls(rng, N) | inner_mask)
    inner = pa.StructArray.from_arrays([x], names=["x"], mask=pa.array(inner_mask))
    cols["st"] = pa.StructArray.from_arrays([a, b, inner], names=["a", "b", "in"],
                                            mask=pa.array(smask))
    cols["lst"] = pa.array([None if rng.random() < 0.15 else
                            [None if rng.random() < 0.2 else int(v)
                             for v in rng.integers(-500, 500, int(rng.integers(0, 5)))]
                            for _ in range(N)], pa.list_(pa.int64()))
    def entries():
        kv = [(f"k{int(k)}", None if rng.random() < 0.2 else float(v))
              for k, v in zip(rng.integers(0, 50, 3), rng.random(3))]
        return kv[:int(rng.integers(0, 4))]

    cols["m"] = pa.array([None if rng.random() < 0.15 else entries() for _ in range(N)],
                         pa.map_(pa.string(), pa.float64()))
    return pa.table(cols)


@pytest.fixture(scope="module")
def table():
    return stats_table()


@pytest.fixture(scope="module")
def path(tmp_path_factory, table):
    p = tmp_path_factory.mktemp("stats") / "s.qvr"
    quiver.write(table, p, row_group_rows=RG)
    return p


# ---- the spec's schema ------------------------------------------------------

def check_schema(arr):
    """`arr` has the statistics schema; returns {column: {key: (value, type)}}."""
    assert isinstance(arr, pa.StructArray)
    arr.validate(full=True)
    t = arr.type
    assert [t.field(i).name for i in range(t.num_fields)] == ["column", "statistics"]
    col = t.field("column")
    assert col.type == pa.int32() and col.nullable
    st = t.field("statistics")
    assert pa.types.is_map(st.type) and not st.nullable
    assert st.type.key_type == pa.dictionary(pa.int32(), pa.utf8())
    assert not st.type.key_field.nullable
    items = st.type.item_field
    assert pa.types.is_union(items.type) and items.type.mode == "dense"
    assert not items.nullable
    assert arr.null_count == 0
    codes = items.type.type_codes
    out = {}
    columns = arr.field("column").to_pylist()
    maps = arr.field("statistics")
    union = maps.items
    keys = maps.keys
    offsets = maps.offsets.to_pylist()
    assert len(set(columns)) == len(columns), "one row per column"
    for r, c in enumerate(columns):
        entries = {}
        for j in range(offsets[r], offsets[r + 1]):
            key = keys[j].as_py()
            child = items.type.field(codes.index(union.type_codes[j].as_py()))
            assert key not in entries, f"{key} twice for column {c}"
            entries[key] = (union[j].as_py(), child.type)
        out[c] = entries
    for c, entries in out.items():
        for key, (value, typ) in entries.items():
            assert key in STANDARD or not key.startswith("ARROW:"), key
            if STANDARD.get(key) is not None:
                assert typ == STANDARD[key], (key, typ)
    return out


def dfs_nodes(schema, table):
    """(path, physical array) of every field, in the order of the column
    indexes of the IPC record batch message (depth-first, a map's entries
    struct included)."""
    out = []

    def walk(path, arr):
        out.append((path, arr))
        t = arr.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(f"{path}.{t.field(i).name}", arr.field(i))
        elif pa.types.is_map(t):
            entries = pa.StructArray.from_arrays([arr.keys, arr.items], names=["key", "value"])
            out.append((f"{path}.entries", entries))
            walk(f"{path}.entries.key", arr.keys)
            walk(f"{path}.entries.value", arr.items)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(f"{path}.{t.value_field.name}", arr.flatten())

    for name in schema.names:
        walk(name, table.column(name).combine_chunks())
    return out


def _as(scalar, typ):
    return scalar.as_py() if scalar.type == typ else scalar.cast(typ).as_py()


def check_against_data(stats, table):
    assert stats[None]["ARROW:row_count:exact"][0] == table.num_rows
    nodes = dfs_nodes(table.schema, table)
    described = [c for c in stats if c is not None]
    assert all(0 <= c < len(nodes) for c in described)
    leaves_checked = 0
    for c, (path, arr) in enumerate(nodes):
        st = stats.get(c)
        assert st is not None, f"no statistics for {path} (column {c})"
        assert st["ARROW:null_count:exact"][0] == arr.null_count, path
        t = arr.type
        orderable = not (pa.types.is_nested(t) or pa.types.is_null(t))
        if not orderable or arr.null_count == len(arr):
            assert "ARROW:min_value:exact" not in st and "ARROW:max_value:exact" not in st, path
            continue
        mm = pc.min_max(arr)
        lo, hi = mm["min"], mm["max"]
        if "ARROW:min_value:exact" in st:
            v, typ = st["ARROW:min_value:exact"]
            assert v == _as(lo, typ), (path, v, lo)
        else:
            v, typ = st["ARROW:min_value:approximate"]
            assert v <= _as(lo, typ), (path, v, lo)
        if "ARROW:max_value:exact" in st:
            v, typ = st["ARROW:max_value:exact"]
            assert v == _as(hi, typ), (path, v, hi)
        else:
            v, typ = st["ARROW:max_value:approximate"]
            true = _as(hi, typ)
            assert v >= true or true.startswith(v), (path, v, true)
        leaves_checked += 1
    return leaves_checked


def test_whole_file_statistics(path, table):
    with quiver.open(path) as f:
        stats = check_schema(f.statistics)
    assert check_against_data(stats, table) >= 15


def test_row_group_statistics(path, table):
    with quiver.open(path) as f:
        assert f.num_row_groups == (N + RG - 1) // RG
        for i in range(f.num_row_groups):
            stats = check_schema(f.row_group_statistics(i))
            part = table.slice(i * RG, RG)
            assert f.read_row_group(i).equals(part)
            check_against_data(stats, part)
        with pytest.raises(IndexError):
            f.row_group_statistics(f.num_row_groups)


def test_truncated_bounds_are_approximate(path):
    with quiver.open(path) as f:
        stats = check_schema(f.statistics)
        idx = [p for p, _ in dfs_nodes(f.schema, f.read_row_group(0))].index("long")
    keys = set(stats[idx])
    assert keys & {"ARROW:min_value:approximate", "ARROW:max_value:approximate"}, keys


def test_statistics_of_an_empty_file(tmp_path):
    t = pa.table({"a": pa.array([], pa.int32())})
    quiver.write(t, tmp_path / "e.qvr")
    with quiver.open(tmp_path / "e.qvr") as f:
        stats = check_schema(f.statistics)
        assert stats[None]["ARROW:row_count:exact"][0] == 0
        assert f.num_row_groups == 0


@pytest.mark.parametrize("memory_limit", [None, 256 << 20])
def test_statistics_survive_close(path, table, memory_limit):
    # With a memory_limit the file has a pool of its own, which the
    # statistics' memory is charged to: they keep it alive.
    f = quiver.open(path, memory_limit=memory_limit)
    s, r = f.statistics, f.row_group_statistics(2)
    f.close()
    with pytest.raises(ValueError):
        f.statistics
    del f
    gc.collect()
    check_against_data(check_schema(s), table)
    check_against_data(check_schema(r), table.slice(2 * RG, RG))


# ---- string bounds from the encoder's dictionary, against brute force -------
#
# The writer takes min/max of string and fixed-size binary columns without
# nulls from the ends of the dictionary the encoder built (debug builds
# check them against a scan; release builds do not): random tables of
# every byte-ordered type and its neighbours (decimal128 and float16 are
# fixed-size binary in memory but not byte-ordered), nested or not, with
# and without nulls, few or many distinct values, long values, compact or
# not, compared with min/max computed here over the values.

def _brute(arr):
    vals = [v for v in arr.to_pylist() if v is not None]
    if not vals:
        return None
    if pa.types.is_floating(arr.type):
        vals = [v for v in vals if v == v]
    return min(vals), max(vals)


def _rand_bytes(rng, lo, hi):
    n = int(rng.integers(lo, hi + 1))
    alphabet = np.array([0, 1, 0x41, 0x61, 0x7F, 0x80, 0xC3, 0xFE, 0xFF], np.uint8)
    return bytes(alphabet[rng.integers(0, len(alphabet), n)])


def _rand_text(rng, lo, hi):
    chars = ["\x00", "a", "b", "z", "\x7f", "\u00ff", "\u0100", "\uffff", "\U0001F600"]
    n = int(rng.integers(lo, hi + 1))
    return "".join(chars[int(i)] for i in rng.integers(0, len(chars), n))


def _values(rng, n, make):
    """n values: few distinct (a dictionary), many (declined), or one."""
    shape = rng.integers(0, 4)
    if shape == 0:
        pool = [make() for _ in range(1)]
    elif shape == 1:
        pool = [make() for _ in range(int(rng.integers(2, 20)))]
    elif shape == 2:
        pool = [make() for _ in range(max(1, n // 3))]
    else:
        return [make() for _ in range(n)]
    return [pool[int(i)] for i in rng.integers(0, len(pool), n)]


def _mask(rng, n):
    return None if rng.random() < 0.6 else rng.random(n) < 0.3


def random_bounds_table(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2500))
    lens = [(0, 3), (0, 12), (60, 80), (0, 200)][int(rng.integers(0, 4))]
    cols = {}
    cols["s"] = pa.array(_values(rng, n, lambda: _rand_text(rng, *lens)), pa.string(),
                         mask=_mask(rng, n))
    cols["ls"] = pa.array(_values(rng, n, lambda: _rand_text(rng, *lens)), pa.large_string(),
                          mask=_mask(rng, n))
    cols["b"] = pa.array(_values(rng, n, lambda: _rand_bytes(rng, *lens)), pa.binary(),
                         mask=_mask(rng, n))
    cols["lb"] = pa.array(_values(rng, n, lambda: _rand_bytes(rng, *lens)), pa.large_binary(),
                          mask=_mask(rng, n))
    for w in (1, 3, 16):
        cols[f"fsb{w}"] = pa.array(_values(rng, n, lambda: _rand_bytes(rng, w, w)),
                                   pa.binary(w), mask=_mask(rng, n))
    cols["fsb0"] = pa.array([b""] * n, pa.binary(0), mask=_mask(rng, n))
    cols["dec"] = pa.array(
        _values(rng, n, lambda: decimal.Decimal(int(rng.integers(-10**9, 10**9))).scaleb(-3)),
        pa.decimal128(20, 3), mask=_mask(rng, n))
    cols["f16"] = pa.array(np.array(_values(rng, n, lambda: float(rng.normal(0, 50))),
                                    np.float16), pa.float16(), mask=_mask(rng, n))
    child = pa.array(_values(rng, n, lambda: _rand_text(rng, *lens)), pa.string(),
                     mask=_mask(rng, n))
    fb = pa.array(_values(rng, n, lambda: _rand_bytes(rng, 4, 4)), pa.binary(4),
                  mask=_mask(rng, n))
    cols["st"] = pa.StructArray.from_arrays([child, fb], names=["t", "f"])
    flat = pa.array(_values(rng, 2 * n, lambda: _rand_text(rng, *lens)), pa.string(),
                    mask=_mask(rng, 2 * n))
    cuts = np.sort(rng.integers(0, 2 * n + 1, n - 1))
    offs = pa.array(np.concatenate([[0], cuts, [2 * n]]).astype(np.int32))
    cols["lst"] = pa.ListArray.from_arrays(offs, flat)
    return pa.table(cols)


def _bound_of(st, which):
    for exact in ("exact", "approximate"):
        key = f"ARROW:{which}_value:{exact}"
        if key in st:
            return st[key][0], exact == "exact"
    return None, None


def check_bounds(stats, table, where):
    checked = 0
    for c, (path, arr) in enumerate(dfs_nodes(table.schema, table)):
        t = arr.type
        if pa.types.is_nested(t):
            continue
        st = stats.get(c, {})
        want = _brute(arr)
        lo, lo_exact = _bound_of(st, "min")
        hi, hi_exact = _bound_of(st, "max")
        if want is None or (pa.types.is_fixed_size_binary(t) and t.byte_width == 0):
            if want is not None and lo is not None:
                assert lo == b"" and hi == b"", (where, path, lo, hi)
            continue
        if lo is None and hi is None:
            continue  # some types carry no bounds
        if isinstance(want[0], str) and isinstance(lo if lo is not None else hi, bytes):
            want = (want[0].encode(), want[1].encode())
        if lo_exact:
            assert lo == want[0], (where, path, lo, want[0])
        elif lo is not None:
            assert lo <= want[0], (where, path, lo, want[0])
        if hi is None:
            pass  # no upper bound: a long run of 0xFF (or U+10FFFF) cannot round up
        elif hi_exact:
            assert hi == want[1], (where, path, hi, want[1])
        else:
            assert hi >= want[1] or want[1].startswith(hi), (where, path, hi, want[1])
        checked += 1
    return checked


@pytest.mark.parametrize("seed", range(40))
def test_string_bounds_random(tmp_path, seed):
    table = random_bounds_table(1000 + seed)
    rng = np.random.default_rng(seed)
    rg = int(rng.integers(50, 3000))
    p = tmp_path / "b.qvr"
    quiver.write(table, p, row_group_rows=rg, compact=bool(seed % 2))
    checked = 0
    with quiver.open(p) as f:
        assert f.read_row_group(0).equals(table.slice(0, rg))
        checked += check_bounds(check_schema(f.statistics), table, "file")
        for i in range(f.num_row_groups):
            part = table.slice(i * rg, rg)
            checked += check_bounds(check_schema(f.row_group_statistics(i)), part, f"rg {i}")
    assert checked >= 10


@pytest.mark.parametrize("compact", [False, True])
def test_string_bounds_long_and_high_bytes(tmp_path, compact):
    """Values past the bounds' length limit made of 0xFF (U+10FFFF): no
    upper bound can be rounded up; 100-byte fixed values; only empty
    strings. Few distinct values, so the writer's dictionary answers."""
    n = 3000
    rng = np.random.default_rng(3)
    fixed = [bytes(rng.integers(0, 3, 100).astype(np.uint8)) for _ in range(7)]
    table = pa.table({
        "a": pa.array([b"\xff" * 70 + bytes([i % 5]) for i in range(n)], pa.binary()),
        "b": pa.array([b"\xff" * (60 + i % 10) for i in range(n)], pa.large_binary()),
        "c": pa.array([fixed[i % 7] for i in range(n)], pa.binary(100)),
        "s": pa.array(["\U0010ffff" * 20 + str(i % 3) for i in range(n)]),
        "e": pa.array([""] * n),
    })
    p = tmp_path / "h.qvr"
    quiver.write(table, p, row_group_rows=1000, compact=compact)
    with quiver.open(p) as f:
        stats = check_schema(f.statistics)
        assert check_bounds(stats, table, "file") == 5
        for i in range(f.num_row_groups):
            check_bounds(check_schema(f.row_group_statistics(i)), table.slice(i * 1000, 1000),
                         f"rg {i}")
    assert stats[1]["ARROW:min_value:exact"][0] == b"\xff" * 60
    assert stats[4]["ARROW:max_value:exact"][0] == ""
