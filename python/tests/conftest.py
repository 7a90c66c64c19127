import decimal
import datetime as dt
import gc
import signal

import numpy as np
import pyarrow as pa
import pytest

import quiver


def _rng(seed=7):
    return np.random.default_rng(seed)


def _maybe(rng, values, p=0.2):
    """`values` with about p of them replaced by None."""
    mask = rng.random(len(values)) < p
    return [None if m else v for v, m in zip(values, mask)]


def all_types_table(n=3000, seed=7):
    """One column of every type Quiver stores, nulls at every nesting level."""
    rng = _rng(seed)
    ints = rng.integers(-1000, 1000, n)
    cols = {}
    cols["null"] = pa.nulls(n)
    cols["bool"] = pa.array(_maybe(rng, [bool(x) for x in rng.integers(0, 2, n)]), pa.bool_())
    for name, t in [("int8", pa.int8()), ("int16", pa.int16()), ("int32", pa.int32()),
                    ("int64", pa.int64()), ("uint8", pa.uint8()), ("uint16", pa.uint16()),
                    ("uint32", pa.uint32()), ("uint64", pa.uint64())]:
        lo, hi = (0, 200) if name.startswith("u") else (-100, 100)
        cols[name] = pa.array(_maybe(rng, [int(x) for x in rng.integers(lo, hi, n)]), t)
    cols["int64_wide"] = pa.array(_maybe(rng, [int(x) for x in rng.integers(-2**62, 2**62, n)]),
                                  pa.int64())
    cols["float16"] = pa.array(rng.random(n).astype(np.float16), pa.float16(),
                               mask=rng.random(n) < 0.2)
    cols["float32"] = pa.array(_maybe(rng, [float(x) for x in rng.random(n)]), pa.float32())
    f64 = [float(x) for x in rng.normal(0, 1e6, n)]
    f64[1] = float("nan")
    f64[2] = float("-inf")
    f64[3] = -0.0
    cols["float64"] = pa.array(_maybe(rng, f64), pa.float64())
    cols["dec"] = pa.array(_maybe(rng, [decimal.Decimal(int(x)).scaleb(-2) for x in ints]),
                           pa.decimal128(10, 2))
    cols["dec38"] = pa.array(_maybe(rng, [decimal.Decimal(int(x) * 10**25 + 7).scaleb(-10)
                                          for x in ints]), pa.decimal128(38, 10))
    cols["date"] = pa.array(_maybe(rng, [dt.date(2000, 1, 1) + dt.timedelta(days=int(x))
                                         for x in ints]), pa.date32())
    for unit in ("s", "ms", "us", "ns"):
        cols[f"ts_{unit}"] = pa.array(_maybe(rng, [int(x) * 10**9 for x in ints]), pa.int64()) \
            .cast(pa.timestamp(unit, "UTC" if unit == "us" else None))
    words = [f"w{int(x)}" * (int(x) % 5) for x in ints]
    cols["string"] = pa.array(_maybe(rng, words), pa.string())
    cols["large_string"] = pa.array(_maybe(rng, words), pa.large_string())
    cols["binary"] = pa.array(_maybe(rng, [w.encode() + b"\x00\xff" for w in words]), pa.binary())
    cols["large_binary"] = pa.array(_maybe(rng, [w.encode() for w in words]), pa.large_binary())
    cols["fixed_binary"] = pa.array(_maybe(rng, [int(x).to_bytes(4, "little", signed=True)
                                                 for x in ints]), pa.binary(4))
    cols["unicode"] = pa.array(_maybe(rng, ["héllo✓" * (i % 3) for i in range(n)]), pa.string())

    def lst(i, k):
        if rng.random() < 0.15:
            return None
        return _maybe(rng, [int(x) for x in rng.integers(0, 50, int(rng.integers(0, k)))])

    cols["list"] = pa.array([lst(i, 6) for i in range(n)], pa.list_(pa.int64()))
    cols["large_list"] = pa.array(
        [None if rng.random() < 0.1 else _maybe(rng, [f"s{j}" for j in range(int(rng.integers(0, 4)))])
         for _ in range(n)], pa.large_list(pa.string()))
    cols["fixed_list"] = pa.array(
        [None if rng.random() < 0.1 else _maybe(rng, [float(x) for x in rng.random(3)])
         for _ in range(n)], pa.list_(pa.float32(), 3))
    st_type = pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string())),
                         ("c", pa.struct([("d", pa.float64()), ("e", pa.bool_())]))])
    cols["struct"] = pa.array(
        [None if rng.random() < 0.15 else
         {"a": None if rng.random() < 0.2 else int(rng.integers(0, 9)),
          "b": None if rng.random() < 0.2 else _maybe(rng, ["x", "yy", "zzz"][:int(rng.integers(0, 4))]),
          "c": None if rng.random() < 0.2 else {"d": None if rng.random() < 0.2 else float(rng.random()),
                                                "e": None if rng.random() < 0.2 else bool(rng.integers(0, 2))}}
         for _ in range(n)], st_type)
    cols["map"] = pa.array(
        [None if rng.random() < 0.15 else
         [(f"k{j}", None if rng.random() < 0.2 else int(rng.integers(0, 100)))
          for j in range(int(rng.integers(0, 4)))] for _ in range(n)],
        pa.map_(pa.string(), pa.int32()))
    deep = pa.list_(pa.struct([("x", pa.int16()), ("m", pa.map_(pa.int32(), pa.list_(pa.string())))]))
    cols["deep"] = pa.array(
        [None if rng.random() < 0.1 else
         [None if rng.random() < 0.2 else
          {"x": None if rng.random() < 0.2 else int(rng.integers(0, 9)),
           "m": None if rng.random() < 0.2 else
           [(int(k), None if rng.random() < 0.3 else _maybe(rng, ["p", "q"]))
            for k in range(int(rng.integers(0, 3)))]}
          for _ in range(int(rng.integers(0, 3)))] for _ in range(n)], deep)
    schema = pa.schema([pa.field(k, v.type) for k, v in cols.items()],
                       metadata={"origin": "quiver tests"})
    return pa.Table.from_arrays(list(cols.values()), schema=schema)


def stats_by_path(schema, stats):
    """{path: {key: value}} of a statistics array (File.statistics): row
    None is the whole table; columns are numbered depth-first over `schema`
    (a struct, its fields; a list, its item; a map, "m.entries", "m.key",
    "m.value"), as the Arrow statistics schema says."""
    paths = []

    def walk(path, t):
        paths.append(path)
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(f"{path}.{t.field(i).name}", t.field(i).type)
        elif pa.types.is_map(t):
            paths.append(f"{path}.entries")
            walk(f"{path}.key", t.key_type)
            walk(f"{path}.value", t.item_type)
        elif (pa.types.is_list(t) or pa.types.is_large_list(t)
              or pa.types.is_fixed_size_list(t)):
            walk(f"{path}.{t.value_field.name}", t.value_type)

    for field in schema:
        walk(field.name, field.type)
    out = {}
    maps = stats.field("statistics")
    offsets = maps.offsets.to_pylist()
    for r, c in enumerate(stats.field("column").to_pylist()):
        entries = {}
        for j in range(offsets[r], offsets[r + 1]):
            value = maps.items[j]
            try:
                value = value.as_py()
            except (OverflowError, ValueError):  # a timestamp beyond Python's datetime
                value = value.value
            entries[maps.keys[j].as_py()] = value
        out[None if c is None else paths[c]] = entries
    return out


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt during the tests whatever started
    them. A shell without job control starts background commands (`cmd &`)
    with SIGINT ignored; Python then installs no handler, and the tests that
    send SIGINT (to this process, or to children that inherit the ignored
    signal across exec) would see nothing happen."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture(scope="session")
def all_types():
    return all_types_table()


@pytest.fixture
def no_leaks():
    """Checks that the default pool is back where it was."""
    gc.collect()
    before = quiver.memory_stats()
    yield
    gc.collect()
    after = quiver.memory_stats()
    assert after["reserved"] == before["reserved"], (before, after)
    assert after["reservations"] == before["reservations"], (before, after)
