"""Nested projection: columns=["a.b", ...] reads only the fields named, and
what comes back is what pyarrow's own selection of those fields gives (the
same values, the same nulls at every level), on every nested type."""
import numpy as np
import pyarrow as pa
import pytest

import quiver

N = 2500


def _maybe(rng, v, p=0.2):
    return None if rng.random() < p else v


def nested_table(seed=3):
    """struct, struct<struct>, list<struct>, struct<list>, map (with a
    struct value) and fixed_size_list<struct>, with nulls at every level."""
    rng = np.random.default_rng(seed)

    def inner():
        return _maybe(rng, {"x": _maybe(rng, int(rng.integers(-50, 50))),
                            "y": _maybe(rng, f"y{int(rng.integers(0, 9))}")})

    def lst(k):
        return _maybe(rng, [inner() for _ in range(int(rng.integers(0, k)))])

    s_t = pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.float64())])
    ss_t = pa.struct([("p", pa.struct([("x", pa.int64()), ("y", pa.string())])),
                      ("q", pa.bool_())])
    in_t = pa.struct([("x", pa.int64()), ("y", pa.string())])
    sl_t = pa.struct([("tags", pa.list_(pa.string())), ("n", pa.int16())])
    m_t = pa.map_(pa.string(), in_t)
    cols = {
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "s": pa.array([_maybe(rng, {"a": _maybe(rng, int(rng.integers(0, 100))),
                                    "b": _maybe(rng, f"b{i % 7}"),
                                    "c": _maybe(rng, float(rng.random()))})
                       for i in range(N)], s_t),
        "ss": pa.array([_maybe(rng, {"p": inner(), "q": _maybe(rng, bool(i % 2))})
                        for i in range(N)], ss_t),
        "ls": pa.array([lst(4) for _ in range(N)], pa.list_(in_t)),
        "lls": pa.array([lst(3) for _ in range(N)], pa.large_list(in_t)),
        "sl": pa.array([_maybe(rng, {"tags": _maybe(rng, [_maybe(rng, f"t{j}")
                                                          for j in range(int(rng.integers(0, 4)))]),
                                     "n": _maybe(rng, int(rng.integers(0, 9)))})
                        for _ in range(N)], sl_t),
        "m": pa.array([_maybe(rng, [(f"k{j}", inner()) for j in range(int(rng.integers(0, 3)))])
                       for _ in range(N)], m_t),
        "fl": pa.array([_maybe(rng, [inner(), inner()]) for _ in range(N)], pa.list_(in_t, 2)),
    }
    return pa.table(cols)


@pytest.fixture(scope="module")
def table():
    return nested_table()


@pytest.fixture(scope="module")
def path(tmp_path_factory, table):
    p = tmp_path_factory.mktemp("nested") / "n.qvr"
    quiver.write(table, p, row_group_rows=1024)
    return p


# ---- pyarrow's selection of the same fields -------------------------------

def _tree(paths):
    """{"col": {"a": {...} or None}} from dotted paths (None: all of it)."""
    tree = {}
    for p in paths:
        parts = p.split(".")
        node = tree
        for k in parts[:-1]:
            if node.get(k, {}) is None:
                break  # below a field already selected whole
            node = node.setdefault(k, {})
        else:
            node[parts[-1]] = None
    return tree


def _select(arr, sub):
    """`arr` keeping only the fields of `sub` (None: all), rebuilt with
    pyarrow's own constructors: same offsets, same validity at every level."""
    if sub is None:
        return arr
    t = arr.type
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields) if t.field(i).name in sub]
        assert set(names) == set(sub), (names, sub)
        kids = [_select(arr.field(n), sub[n]) for n in names]
        fields = [pa.field(n, k.type, t.field(n).nullable) for n, k in zip(names, kids)]
        return pa.StructArray.from_arrays(kids, fields=fields, mask=mask)
    if pa.types.is_map(t):
        keys, items = arr.keys, arr.items
        if "value" in sub:
            items = _select(items, sub["value"])
        mt = pa.map_(t.key_field, t.item_field.with_type(items.type))
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=mt, mask=mask)
    if pa.types.is_fixed_size_list(t):
        (name, rest), = sub.items()
        assert name == t.value_field.name
        vals = _select(arr.values, rest)
        return pa.FixedSizeListArray.from_arrays(
            vals, type=pa.list_(t.value_field.with_type(vals.type), t.list_size), mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        (name, rest), = sub.items()
        assert name == t.value_field.name
        vals = _select(arr.values, rest)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        mk = pa.large_list if pa.types.is_large_list(t) else pa.list_
        return cls.from_arrays(arr.offsets, vals, type=mk(t.value_field.with_type(vals.type)),
                               mask=mask)
    raise AssertionError(f"cannot select {sub} of {t}")


def pyarrow_selection(table, paths):
    tree = _tree(paths)
    order = list(dict.fromkeys(p.split(".")[0] for p in paths))
    arrays = [_select(table.column(c).combine_chunks(), tree[c]) for c in order]
    fields = [pa.field(c, a.type, table.schema.field(c).nullable) for c, a in zip(order, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


CASES = [
    ["s.a"],                          # struct
    ["s.c", "s.a"],                   # two fields: kept in schema order
    ["ss.p.x"],                       # struct<struct>
    ["ss.p.y", "ss.q"],
    ["ss.p", "ss.p.x"],               # a path below a selected field adds nothing
    ["ls.item.y"],                    # list<struct>
    ["lls.item.x"],                   # large_list<struct>
    ["sl.tags"],                      # struct<list>
    ["sl.n", "sl.tags.item"],
    ["m.value.x"],                    # map<string, struct>
    ["fl.item.y"],                    # fixed_size_list<struct>
    ["ls.item.x", "id", "s.b"],       # column order: first appearance
]


@pytest.mark.parametrize("paths", CASES, ids=lambda p: ",".join(p))
def test_nested_projection_matches_pyarrow(path, table, paths):
    with quiver.open(path) as f:
        got = f.to_arrow(columns=paths)
        for c in got.columns:
            for chunk in c.chunks:
                chunk.validate(full=True)
        want = pyarrow_selection(table, paths)
        assert got.schema.equals(want.schema), (got.schema, want.schema)
        assert got.combine_chunks().equals(want), paths
        # The same selection through a take and a filter.
        rows = [7, 3, 2000, 3, 1024]
        assert f.take(rows, columns=paths).equals(want.take(rows))
        filtered = f.to_arrow(columns=paths, filter="id < 100")
        assert filtered.equals(want.slice(0, 100))


def test_nested_projection_reads_less(path):
    with quiver.open(path) as f:
        whole = f.scan_batches(columns=["ss"])
        for _ in whole:
            pass
        part = f.scan_batches(columns=["ss.q"])
        assert sum(b.num_rows for b in part) == N
        assert part.schema.field("ss").type == pa.struct([("q", pa.bool_())])


def test_quoted_names_and_errors(tmp_path):
    t = pa.table({"a.b": [1, 2], "a": pa.array([{"b": 3}, {"b": 4}]), 'q"t': [5, 6]})
    quiver.write(t, tmp_path / "q.qvr")
    with quiver.open(tmp_path / "q.qvr") as f:
        assert f.to_arrow(columns=['"a.b"'])["a.b"].to_pylist() == [1, 2]
        assert f.to_arrow(columns=["a.b"])["a"].to_pylist() == [{"b": 3}, {"b": 4}]
        assert f.to_arrow(columns=['"q""t"'])['q"t'].to_pylist() == [5, 6]
        assert f.to_arrow(columns=[0]).column_names == ["a.b"]  # by index, dot and all
        with pytest.raises(quiver.FieldNotFoundError) as e:
            f.to_arrow(columns=["a.nope"])
        assert isinstance(e.value, KeyError) and e.value.kind == "not_found"
        assert "nope" in str(e.value)
        with pytest.raises(KeyError):
            f.scan(columns=["nope"])
