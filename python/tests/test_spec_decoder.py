"""Files written by Quiver, read by spec_decoder (an independent decoder written
from docs/format.md alone), must give exactly what Quiver's own reader gives.

This checks two things at once: that the specification is complete enough to
write a reader from, and that the C writer follows it. Floats are compared
by bit pattern (NaN payloads and -0.0 included); null slots only by being
null (the format leaves their values open, section 3).

Where the specification and the files disagree, or the text leaves a reader
guessing, it is written down here (section, what the text says, what the
files hold):

- Section 4's float statistics (-0.0 against +0.0), the null type's
  null_count and raw_bytes were silent; docs/format.md now says what the
  files hold (-0.0 below +0.0; 0; validity bytes exactly when there are
  nulls, the chunk's rows only), which test_statistics_signed_zero and
  check_raw_bytes check.
- Section 2 says every field is stored with its Arrow format string "so
  every type Arrow can describe is written the same way Arrow writes it",
  then lists the types version 1 stores; it does not say what a reader does
  with a format outside the table (time32/time64 `tt?`, duration `tD?`,
  intervals, decimal256 `d:p,s,256`): refuse as corrupt, or as unsupported.
  No file holds one (quiver.write casts the view types and date64 and
  refuses the others, quiver/_types.py); spec_decoder raises
  NotImplementedError naming the column.
- Section 5.2's parsing steps say "check count <= 2^31" for every node,
  while section 5.3 says at most 2^31 - 1 except u32 and u64 nodes (which
  may hold 2^31). spec_decoder applies 5.3's stricter rule; the steps of 5.2
  should say the same.
- Section 5.5.17 (ans) wrote a frequency "as one byte when f_s < 128,
  otherwise two" without saying whether a frequency below 128 written in
  two bytes (`0x81 0x00` for 1) is corrupt; Quiver's reader accepted it,
  spec_decoder refused it. The text now says it is corrupt and Quiver's
  reader refuses it too (test_ans_block_corrupt here, test_enc_ans there).
- Section 5.5.17 said one renormalization word "always suffices for a block
  a writer made"; it suffices for every block whose states start at 2^16
  or more, which the text requires (after a step a state is at least
  16 x f_s, so one word lifts it to at least 2^20), and the text now says
  so.
"""

import glob
import math
import os
import re
import decimal
import struct

import numpy as np
import pyarrow as pa
import pytest

import quiver
import spec_decoder as sd

pytestmark = pytest.mark.timeout(60)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sorted(glob.glob(os.path.join(HERE, "..", "..", "core", "tests", "data", "*.qvr")))


def same(expected, got):
    """Quiver's column vs spec_decoder's: types, nulls and non-null values."""
    if isinstance(expected, pa.ChunkedArray):
        expected = expected.combine_chunks()
    assert expected.type == got.type
    if pa.types.is_nested(expected.type):
        # Nested values may hold floats: compare their reprs, where NaN
        # equals NaN and -0.0 differs from 0.0.
        got.validate(full=True)
        return repr(expected.to_pylist()) == repr(got.to_pylist())
    if pa.types.is_floating(expected.type):
        as_int = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[expected.type.bit_width]
        expected, got = expected.view(as_int), got.view(as_int)
    return expected.equals(got)


def encodings_of(f):
    """Every encoding name in every segment tree of the file (frames included)."""
    names = set()
    for g in range(len(f.row_groups)):
        for node in range(len(f.nodes)):
            for role in (0, 1, 2):
                tree = f.encoding_tree(g, node, role)
                if tree:
                    names.update(re.findall(r"([a-z_0-9]+)[(\[]", tree))
    return names


def check_raw_bytes(f, field):
    """Section 4's chunk `raw_bytes` for fixed-width and bool columns: what
    the files hold (see the module's docstring for what the text leaves
    open): the validity bitmap's ceil(rows / 8) bytes only when the chunk has
    nulls, plus the values' bytes."""
    typ = sd.arrow_type(field)
    if pa.types.is_null(typ):
        per_rows = lambda n: 0  # noqa: E731
    elif pa.types.is_boolean(typ):
        per_rows = lambda n: -(-n // 8)  # noqa: E731
    elif pa.types.is_fixed_size_binary(typ):
        per_rows = lambda n: n * typ.byte_width  # noqa: E731
    elif any(is_(typ) for is_ in (pa.types.is_integer, pa.types.is_floating,
                                  pa.types.is_decimal, pa.types.is_date,
                                  pa.types.is_timestamp)):
        per_rows = lambda n: n * typ.bit_width // 8  # noqa: E731
    else:
        return
    for rg in f.row_groups:
        ch = rg.chunks[field.node]
        validity = -(-rg.rows // 8) if ch.null_count else 0
        assert ch.raw_bytes == validity + per_rows(rg.rows), (field.name, ch.raw_bytes)


def compare_file(path):
    """Decodes every column with spec_decoder and compares it with quiver's
    to_arrow(); returns the names of the columns compared and of those
    skipped (formats outside the spec's type table: none so far)."""
    f = sd.open_file(path)
    assert f.check_layout() > 0 or f.num_rows == 0
    table = quiver.open(path).to_arrow()
    assert table.num_rows == f.num_rows
    compared, skipped = [], []
    for i, field in enumerate(f.columns):
        name = field.name.decode()
        try:
            got = f.column(i)
        except NotImplementedError as e:
            assert repr(field.name) in str(e)
            skipped.append(name)
            continue
        check_raw_bytes(f, field)
        trees = [f.encoding_tree(g, field.node) for g in range(len(f.row_groups))]
        assert same(table.column(i), got), f"{path}: column {name}, trees {trees}"
        compared.append(name)
    return f, compared, skipped


# ------------------------------------------------------------ the spec's examples

def test_example_dict_of_five_strings():
    # Section 5.6, the 128-byte variant written by qv_encode with force = dict.
    values_node = bytes.fromhex(
        "0108050001160138" + "6170706c6562616e" + "616e616461746566" + "6967" + "6b697769"
        + "0000" + "0104060001300000" + "0000000000000000" + "0500000000000000"
        + "0b00000000000000" + "0f00000000000000" + "1200000000000000" + "1600000000000000")
    assert len(values_node) == 88
    seg = bytes.fromhex("0708050000022058" "0103050001140000"
                        "0400000003000000" "0000000002000000" "0100000000000000") + values_node
    assert len(seg) == 128
    values, root = sd.decode_segment(seg, 12, 0, 5)
    assert values == [b"kiwi", b"fig", b"apple", b"date", b"banana"]
    assert root.describe() == "dict(plain(),plain(plain()))"
    # The 248-byte tree assembled with the node builders: codes bit-packed
    # at w = 3, lanes 0-4 of word 0 holding 4, 3, 0, 2, 1.
    packed = np.array([4, 3, 0, 2, 1] + [0] * 27, "<u4").tobytes()
    seg = (bytes.fromhex("0708050000029001" "5800000000000000")
           + bytes.fromhex("0303050106018001") + bytes(8) + packed + values_node)
    assert len(seg) == 248
    values, root = sd.decode_segment(seg, 12, 0, 5)
    assert values == [b"kiwi", b"fig", b"apple", b"date", b"banana"]
    assert root.describe() == "dict(bitpack(),plain(plain()))"


def test_example_bitpack_across_rows_and_for():
    # Section 5.6: forty int32 values i mod 8, bit-packed at w = 3 (144 bytes).
    words = [(lane | (lane << 3)) if lane < 8 else lane % 8 for lane in range(32)]
    packed = np.array(words, "<u4").tobytes()
    seg = bytes.fromhex("0303280106018001") + bytes(8) + packed
    assert len(seg) == 144
    values, _ = sd.decode_segment(seg, 6, 0, 40)
    assert values.tolist() == [i % 8 for i in range(40)]
    # ... and with 1000 added, as for(bitpack) (160 bytes).
    for_seg = bytes.fromhex("04032801d00f000190010000000000") + bytes(1) + seg
    assert len(for_seg) == 160
    values, _ = sd.decode_segment(for_seg, 6, 0, 40)
    assert values.tolist() == [1000 + i % 8 for i in range(40)]


def test_example_alp():
    seg = bytes.fromhex(
        "0a06060204000003" "3810100000000000"
        "0104060001300000" "cf07000000000000" "0d02000000000000" "ceffffffffffffff"
        "cf07000000000000" "e02e000000000000" "0a00000000000000"
        "0103010001040000" "0300000000000000"
        "0106010001080000" "000000000000f87f")
    assert len(seg) == 104
    values, _ = sd.decode_segment(seg, 11, 0, 6)
    expected = np.array([19.99, 5.25, -0.5, np.nan, 120.0, 0.1])
    assert values.tobytes() == expected.tobytes()


def test_zigzag_built_by_hand():
    # A zigzag (6) node built from sections 5.5.6 and 5.2 alone (the
    # writer's own are checked through flat_table's "walk"):
    # zigzag(plain u32 0, 1, 2, 3, 4) must decode to 0, -1, 1, -2, 2.
    child = bytes.fromhex("01030500011400" "00") + np.arange(5, dtype="<u4").tobytes() + bytes(4)
    seg = bytes.fromhex("06030500000120" "00") + child
    assert len(seg) == 40
    values, root = sd.decode_segment(seg, 6, 0, 5)
    assert values.view(np.int32).tolist() == [0, -1, 1, -2, 2]
    assert root.describe() == "zigzag(plain())"


# ------------------------------------------------------------ old-format fixtures

@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_fixture(path):
    f, compared, skipped = compare_file(path)
    assert f.version in ((1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0))
    assert f.verify_checksums() > 0 or sd.xxhash is None
    assert compared
    if "all_types" in path or "compact" in path:
        assert {"b", "i64", "u64", "f16", "f64", "d9", "d38", "day", "ts", "s", "ls",
                "bin", "lbin", "fb", "nul"} <= set(compared)
        assert {"pt", "li", "lls", "lp", "fl", "m"} <= set(compared)
    assert skipped == []


def test_fixtures_present():
    assert {os.path.basename(p) for p in FIXTURES} >= {
        "v1_0_all_types.qvr", "v1_0_compact.qvr", "v1_0_long_strings.qvr",
        "v2_0_all_types.qvr", "v2_0_compact.qvr", "v2_0_long_strings.qvr",
        "v3_0_all_types.qvr", "v3_0_compact.qvr", "v3_0_long_strings.qvr",
        "v4_0_all_types.qvr", "v4_0_compact.qvr", "v4_0_long_strings.qvr",
        "v5_0_all_types.qvr", "v5_0_compact.qvr", "v5_0_long_strings.qvr",
        "v6_0_all_types.qvr", "v6_0_compact.qvr", "v6_0_long_strings.qvr",
        "v7_0_all_types.qvr", "v7_0_compact.qvr", "v7_0_long_strings.qvr",
        "v8_0_all_types.qvr", "v8_0_compact.qvr", "v8_0_long_strings.qvr"}


# ------------------------------------------------------------ files of today's writer

N = 20000
WORDS = ["alpha", "beta", "gamma", "delta", "quiver", "columnar", "format", "decoder",
         "specification", "segment", "checksum", "frame", "dictionary", "lorem", "ipsum"]


def text_column(rng, n, lo, hi, vocab, p=None):
    counts = rng.integers(lo, hi, n)
    words = np.asarray(vocab, dtype=object)[rng.choice(len(vocab), int(counts.sum()), p=p)]
    ends = np.cumsum(counts)
    return [" ".join(words[e - k:e]) for e, k in zip(ends.tolist(), counts.tolist())]


def flat_table(seed=15, n=N):
    """Every flat type with nulls, and columns shaped to draw every
    encoding the writer chooses (the trees are asserted below)."""
    rng = np.random.default_rng(seed)

    def nulls(frac=0.1):
        return rng.random(n) < frac

    ship = rng.integers(8000, 11000, n)
    ship_nulls = nulls(0.2)
    return pa.table({
        "b": pa.array(rng.random(n) < 0.3, mask=nulls()),
        "b_const": pa.array(np.ones(n, bool)),
        "b_sparse": pa.array(rng.random(n) < 0.01),
        "b_runs": pa.array(np.repeat(np.arange(n // 500 + 1) % 2 == 0, 500)[:n]),
        "i8": pa.array(rng.integers(-128, 128, n).astype(np.int8), mask=nulls()),
        "i16": pa.array(rng.integers(-3000, 3000, n).astype(np.int16), mask=nulls()),
        "i32": pa.array(rng.integers(-2 ** 31, 2 ** 31, n).astype(np.int32), mask=nulls()),
        "i64": pa.array(rng.integers(-2 ** 62, 2 ** 62, n), mask=nulls()),
        "u8": pa.array(rng.integers(0, 256, n).astype(np.uint8)),
        "u16": pa.array(rng.integers(0, 65536, n).astype(np.uint16), mask=nulls()),
        "u32": pa.array(rng.integers(0, 2 ** 32, n).astype(np.uint32), mask=nulls()),
        "u64": pa.array(rng.integers(0, 2 ** 63, n).astype(np.uint64) * 2 + 1, mask=nulls()),
        "sorted": pa.array(np.cumsum(rng.integers(0, 5, n))),
        "hour": pa.array((np.arange(n) % 24).astype(np.int32)),
        "runs": pa.array(np.repeat(rng.integers(0, 1000, n // 100 + 1), 100)[:n]),
        "zipf": pa.array(np.minimum(rng.zipf(1.3, n), 1000).astype(np.int64), mask=nulls(0.02)),
        "outliers": pa.array(np.where(rng.random(n) < 0.005, rng.integers(0, 2 ** 40, n),
                                      rng.integers(0, 100, n))),
        "mostly7": pa.array(np.where(rng.random(n) < 0.97, 7, rng.integers(0, 2 ** 20, n))),
        "f16": pa.array(rng.random(n).astype(np.float16), mask=nulls()),
        "f32": pa.array(np.round(rng.random(n) * 100, 2).astype(np.float32), mask=nulls()),
        "f64_dec": pa.array(np.where(rng.random(n) < 0.01, np.nan,
                                     np.round(rng.random(n) * 1000, 2)), mask=nulls()),
        "f64_real": pa.array(rng.standard_normal(n), mask=nulls()),
        "f32_real": pa.array(rng.standard_normal(n).astype(np.float32)),
        "f_runs": pa.array(np.repeat(rng.standard_normal(n // 200 + 1), 200)[:n]),
        "f_neg0": pa.array(np.where(rng.random(n) < 0.5, -0.0, 1.5)),
        # A block of 256 random floats over and over: lz4 and zstd find the
        # repeats equally and nothing else pays, so compact mode wraps it in
        # the cheaper lz4 (the writer's choice asserted below).
        "f_blk": pa.array(np.tile(rng.random(256), n // 256 + 1)[:n]),
        "d9": pa.array([decimal.Decimal(int(x)).scaleb(-2)
                        for x in rng.integers(-10 ** 8, 10 ** 8, n)],
                       type=pa.decimal128(9, 2), mask=nulls()),
        "d38": pa.array([decimal.Decimal(int(x) * 10 ** 15).scaleb(-10)
                         for x in rng.integers(-10 ** 12, 10 ** 12, n)],
                        type=pa.decimal128(38, 10), mask=nulls()),
        "shipdate": pa.array(ship.astype(np.int32), type=pa.date32(), mask=ship_nulls),
        # Null where the ship date is (and more): the writer then still pairs
        # them (section 5.5.16), with a reference that has nulls.
        "receiptdate": pa.array((ship + rng.integers(1, 31, n)).astype(np.int32),
                                type=pa.date32(), mask=ship_nulls | nulls(0.05)),
        "key": pa.array(ship.astype(np.int64) * 1000 + rng.integers(0, 8, n)),
        "later": pa.array(ship.astype(np.int64) * 1000 + rng.integers(0, 40, n), mask=nulls()),
        "ts": pa.array(1_700_000_000_000_000 + np.cumsum(rng.integers(0, 10 ** 6, n)),
                       type=pa.timestamp("us", "UTC"), mask=nulls()),
        "tsn": pa.array(rng.integers(0, 2 ** 62, n), type=pa.timestamp("ns")),
        "tss": pa.array(rng.integers(0, 2 ** 31, n), type=pa.timestamp("s")),
        "tsm": pa.array(rng.integers(0, 2 ** 40, n), type=pa.timestamp("ms", "Europe/Paris")),
        "s_low": pa.array(np.asarray(["N", "R", "A", ""])[rng.integers(0, 4, n)], mask=nulls()),
        "s_text": pa.array(text_column(rng, n, 3, 12, WORDS), mask=nulls()),
        "ls": pa.array(text_column(rng, n, 1, 4, WORDS), type=pa.large_string()),
        "bin": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 20, n)], mask=nulls()),
        "lbin": pa.array([bytes([int(k) % 3]) * int(k % 5) for k in rng.integers(0, 100, n)],
                         type=pa.large_binary()),
        "fb": pa.array([rng.bytes(5) for _ in range(n)], type=pa.binary(5), mask=nulls()),
        "fb_low": pa.array([bytes([65 + int(k)]) * 3 for k in rng.integers(0, 4, n)],
                           type=pa.binary(3), mask=nulls()),
        "s_const": pa.array(["same"] * n),
        "fb0": pa.array([b""] * n, type=pa.binary(0)),
        "all_null": pa.array([None] * n, type=pa.int32()),
        "nul": pa.nulls(n),
        # Skewed small integers: the entropy stage codes their u8 residuals
        # in ans frames (5.5.17, 5.7) outside compact mode. Drawn last, so
        # the columns above keep their values.
        "skewed": pa.array(skewed_small(rng, n)),
        # Codes of a 600-value dictionary drawn by Zipf(1.1), scattered
        # over a wide range: the codes are bucket nodes (5.5.18, 5.7),
        # tokens in ans frames and extra bits.
        "zipf_wide": pa.array(zipf_wide(rng, n, 600), mask=nulls(0.05)),
        # A walk of small steps either way with a rare far jump: delta's
        # chain (section 5.7), its deltas patched.
        "walk": pa.array(random_walk(rng, n)),
        # Delays: mostly a few units either side of zero, a long tail and
        # 3% far ones. Compact mode zig-zags them into bucket (5.7).
        "delay": pa.array(delays(rng, n)),
        # A flag that mostly holds along the lines of an order (lineitem's
        # l_linestatus): sequential bits in zstd frames, seqpack (5.5.19).
        "status": pa.array(order_flags(rng, n, 2, 14)),
        # Eleven uniform values (lineitem's l_discount): pairs of base-11
        # digits in 7 bits, radix (5.5.20).
        "discount": pa.array(rng.integers(0, 11, n)),
    })


def order_flags(rng, n, k, longest=7):
    """Values 0..k-1, one per order of 1 to `longest` lines, a tenth of
    lines changed."""
    sizes = rng.integers(1, longest + 1, n)
    v = np.repeat(rng.integers(0, k, n), sizes)[:n]
    flip = rng.random(n) < 0.1
    v[flip] = rng.integers(0, k, int(flip.sum()))
    return v.astype(np.int8)


def delays(rng, n):
    v = np.round(rng.exponential(12, n)).astype(np.int64) - 6
    far = rng.random(n) < 0.03
    v[far] = rng.integers(100, 1500, int(far.sum()))
    return v


def random_walk(rng, n):
    steps = rng.integers(-3, 4, n)
    far = rng.random(n) < 0.004
    steps[far] = rng.integers(-10 ** 6, 10 ** 6, int(far.sum()))
    return np.cumsum(steps) + 10 ** 7


# Weights of 1..5 for skewed_small: 2, 3, 4, 6 and 5 in 20.
SKEW = np.array([1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5], np.int64)


def skewed_small(rng, n):
    return SKEW[rng.integers(0, len(SKEW), n)]


def zipf_wide(rng, n, d=2000):
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    ranks = rng.choice(d, n, p=w / w.sum())
    return (ranks * 7919 % 100003).astype(np.int64) * 1000 - 5000


@pytest.fixture(scope="module")
def flat():
    return flat_table()


# What the writer of format 9.0 chooses for these columns (docs/format.md 5.7).
# Asserted so that the comparisons above really cover every encoding: if the
# writer's choices change, pick new data rather than dropping the check.
EXPECTED_DEFAULT = {"plain", "constant", "bitpack", "for", "delta", "dict", "rle", "sparse",
                    "alp", "alp_rd", "fsst", "zstd", "patched", "relative", "ans", "bucket",
                    "seqpack", "radix"}
EXPECTED_COMPACT = {"plain", "constant", "bitpack", "for", "zstd", "lz4", "patched",
                    "relative", "zigzag", "bucket"}


# random_access leaves out every encoding that stores frames; the rest of
# the default's choices stay, but for bucket and seqpack, which pay only
# with their tokens or bits inside frames.
FRAMED = {"zstd", "lz4", "ans", "zstd_dict"}
EXPECTED_RANDOM_ACCESS = EXPECTED_DEFAULT - FRAMED - {"bucket", "seqpack"}
MODES = {"default": {}, "compact": {"compact": True}, "random_access": {"random_access": True}}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("row_group_rows", [8192, 7000])
def test_written_flat_types(tmp_path, flat, mode, row_group_rows):
    path = str(tmp_path / "flat.qvr")
    quiver.write(flat, path, row_group_rows=row_group_rows, **MODES[mode])
    f, compared, skipped = compare_file(path)
    assert f.version == (9, 0)
    assert len(f.row_groups) == -(-N // row_group_rows)
    assert skipped == [] and len(compared) == flat.num_columns
    if sd.xxhash is not None:
        assert f.verify_checksums() > 0
    used = encodings_of(f)
    expected = {"default": EXPECTED_DEFAULT, "compact": EXPECTED_COMPACT,
                "random_access": EXPECTED_RANDOM_ACCESS}[mode]
    assert expected <= used, sorted(used)
    if mode == "random_access":
        assert not used & FRAMED, sorted(used & FRAMED)


def narrow_frame_residuals(node):
    """Types of the narrower residuals children of for nodes in the frames
    of the zstd and ans nodes of a tree (section 5.5.4, format 4.0 on)."""
    found = set()
    if node.enc == 4 and node.children[0].type != node.type:
        found.add((node.type, node.children[0].type, node.children[0].enc))
    for c in node.children:
        found |= narrow_frame_residuals(c)
    if node.enc in (13, 18):
        entries, frames = sd.frame_entries(node)
        for r in sd.frame_roots(node, entries, frames):
            found |= narrow_frame_residuals(r)
    return found


def test_sequential_entropy_frames(tmp_path):
    # Line numbers 1..k per order (k = 1..7), times 3 (up to 21: 5 bits, so
    # not sequential bits, which test_seqpack_nodes_written covers), with
    # and without nulls: the entropy stage stores them in zstd frames of
    # for over plain u8 residuals under u32 nodes (5.5.4, 5.7), which the
    # spec decoder reads.
    rng = np.random.default_rng(15)

    def lines():
        return np.concatenate([np.arange(1, k + 1) * 3 for k in rng.integers(1, 8, 12000)])[:40000]

    # Two draws, so that the writer does not store one relative to the other.
    ln, ln2 = lines().astype(np.int32), lines().astype(np.int32)
    t = pa.table({"ln": pa.array(ln), "ln_nulls": pa.array(ln2, mask=rng.random(len(ln2)) < 0.1)})
    path = str(tmp_path / "seq.qvr")
    quiver.write(t, path, row_group_rows=30000)
    f, compared, skipped = compare_file(path)
    assert skipped == [] and compared == ["ln", "ln_nulls"]
    for c in (0, 1):
        seg = f.row_groups[0].chunks[f.columns[c].node].segments[2]
        root = sd.parse_node(f.segment_bytes(seg), 0, seg.length, 0)
        assert (sd.T_U32, sd.T_U8, 1) in narrow_frame_residuals(root), \
            f.encoding_tree(0, f.columns[c].node)


def ans_blocks(f, node):
    """(raw size, block bytes) of every frame of the ans nodes at the root of
    `node`'s values segments, over all row groups (section 5.5.17)."""
    out = []
    for rg in f.row_groups:
        seg = rg.chunks[node].segments[2]
        root = sd.parse_node(f.segment_bytes(seg), 0, seg.length, 0)
        if root.enc != 18:
            continue
        entries, frames = sd.frame_entries(root)
        prev = 0
        for end, raw, _, _ in entries:
            out.append((raw, bytes(frames[prev:end])))
            prev = end
    return out


def test_ans_frames(tmp_path):
    # Skewed small integers (5 values, 5 apart: 5 bits, where 4 would go to
    # sequential bits, seqpack in zstd frames) and a Zipf column capped at
    # 250 (over 100 distinct values): the entropy stage stores both in ans
    # frames of
    # for over u8 residuals (5.5.17, 5.7); the spec decoder decodes them to
    # the values written, with the coded blocks' symbols listed (fewer than
    # 32) and in a bitmap (32 or more).
    rng = np.random.default_rng(33)
    skewed = skewed_small(rng, N) * 5
    zipf = np.minimum(rng.zipf(1.6, N), 250).astype(np.int64)
    assert len(np.unique(zipf)) > 100
    path = str(tmp_path / "ans.qvr")
    quiver.write(pa.table({"skewed": skewed, "zipf": zipf}), path)
    f, compared, skipped = compare_file(path)
    assert f.version == (9, 0)
    assert skipped == [] and compared == ["skewed", "zipf"]
    assert "ans" in encodings_of(f)
    assert f.column(0).to_numpy().tolist() == skewed.tolist()
    assert f.column(1).to_numpy().tolist() == zipf.tolist()
    nsyms = {}
    for c, name in enumerate(("skewed", "zipf")):
        node = f.columns[c].node
        for g in range(len(f.row_groups)):
            assert f.encoding_tree(g, node).startswith("ans("), f.encoding_tree(g, node)
        seg = f.row_groups[0].chunks[node].segments[2]
        root = sd.parse_node(f.segment_bytes(seg), 0, seg.length, 0)
        assert (sd.T_U64, sd.T_U8, 1) in narrow_frame_residuals(root)
        blocks = ans_blocks(f, node)
        assert blocks
        for raw, block in blocks:
            assert sd.ans_decode_block(block, raw)[:1] == bytes([4])  # a for node's id
        # Coded blocks, smaller than their frames: the text's rANS, not
        # only the stored kind, is what decoded the values above.
        coded = [(raw, b) for raw, b in blocks if b[0] in (1, 2)]
        assert coded and all(len(b) < raw for raw, b in coded)
        # Frames of 8,192 bytes or more coding into some 2 KiB or more are
        # wide blocks (kind 2, format 6.0), the others kind 1.
        assert all(raw >= 8192 and len(b) > 1800 for raw, b in coded if b[0] == 2)
        assert all(raw < 8192 or len(b) < 2400 for raw, b in coded if b[0] == 1)
        assert any(b[0] == 2 for _, b in coded)
        nsyms[name] = {b[1] + 1 for _, b in coded}
    assert max(nsyms["skewed"]) < 32 and min(nsyms["zipf"]) >= 32, nsyms


def test_relative_reference_with_nulls(tmp_path, flat):
    # `receiptdate` is stored against `shipdate`, which has nulls (section
    # 5.5.16: the reference's null slots count with whatever its values
    # segment decodes to, whatever its validity says).
    path = str(tmp_path / "rel.qvr")
    t = flat.select(["shipdate", "receiptdate", "key", "later"])
    quiver.write(t, path, row_group_rows=8192)
    f, compared, _ = compare_file(path)
    trees = {c.name.decode(): f.encoding_tree(0, c.node) for c in f.columns}
    assert trees["receiptdate"].startswith("relative("), trees
    rel = sd.parse_node(f.segment_bytes(f.row_groups[0].chunks[1].segments[2]), 0,
                        f.row_groups[0].chunks[1].segments[2].length, 0)
    assert rel.params == [0]  # node 0: shipdate
    assert f.row_groups[0].chunks[0].null_count > 0


def long_text_table(n=6000, seed=7):
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(letters[rng.integers(0, 26, int(k))]) for k in rng.integers(2, 10, 3000)]
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    urls = text_column(rng, n, 3, 4, vocab, p)
    return pa.table({
        "id": np.arange(n),
        "text": pa.array(text_column(rng, n, 30, 120, vocab, p), mask=rng.random(n) < 0.05),
        "url": pa.array([f"https://example.org/{u.replace(' ', '/')}?q={i}"
                         for i, u in enumerate(urls)]),
    })


@pytest.mark.parametrize("compact", [False, True], ids=["default", "compact"])
def test_long_text(tmp_path, compact):
    # Long strings: zstd frames of plain binary in the default mode, and
    # zstd_dict (id 16) in compact mode (section 5.5.15).
    path = str(tmp_path / "long.qvr")
    quiver.write(long_text_table(), path, row_group_rows=3000, compact=compact)
    f, compared, _ = compare_file(path)
    assert compared == ["id", "text", "url"]
    used = encodings_of(f)
    assert ("zstd_dict" if compact else "zstd") in used, sorted(used)


def nested_table(n=5000, seed=3):
    rng = np.random.default_rng(seed)

    def mask(frac=0.15):
        return pa.array(rng.random(n) < frac)

    xs = pa.array(np.where(rng.random(n) < 0.02, np.nan, np.round(rng.random(n) * 10, 1)))
    labels = pa.array(np.asarray(["a", "bb", "", "ccc"])[rng.integers(0, 4, n)])
    pt = pa.StructArray.from_arrays([xs, labels], names=["x", "label"], mask=mask())
    lens = rng.integers(0, 5, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    items = pa.array(rng.integers(0, 1000, int(offsets[-1])))
    li = pa.ListArray.from_arrays(pa.array(offsets), items, mask=mask())
    lls = pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)),
                                        pa.array([f"s{int(v)}" for v in items.to_numpy()]))
    fl = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(3 * n)
                                                    .astype(np.float32)), 3, mask=mask())
    keys = pa.array([f"k{int(v) % 7}" for v in items.to_numpy()])
    vals = pa.array(items.to_numpy().astype(np.int32), mask=rng.random(len(items)) < 0.1)
    m = pa.MapArray.from_arrays(pa.array(offsets), keys, vals, mask=mask())
    lp = pa.ListArray.from_arrays(pa.array(offsets),
                                  pa.StructArray.from_arrays([items.cast(pa.float64()),
                                                              keys], names=["x", "label"]))
    return pa.table({"id": np.arange(n), "pt": pt, "li": li, "lls": lls, "fl": fl, "m": m,
                     "lp": lp})


@pytest.mark.parametrize("mode", list(MODES))
def test_written_nested_types(tmp_path, mode):
    # Section 2's node kinds and lengths: struct children as long as their
    # parent, list children as the last offset, fixed-size lists N times.
    path = str(tmp_path / "nested.qvr")
    quiver.write(nested_table(), path, row_group_rows=2000, **MODES[mode])
    f, compared, skipped = compare_file(path)
    assert skipped == [] and compared == ["id", "pt", "li", "lls", "fl", "m", "lp"]
    assert len(f.row_groups) == 3
    if mode == "random_access":
        assert not encodings_of(f) & FRAMED


@pytest.mark.parametrize("rows,row_group_rows", [(0, None), (1, None), (3, 1), (7, 2)])
def test_small_files(tmp_path, rows, row_group_rows):
    # No row group at all, one row, row groups of one and two rows.
    for name, table in (("flat", flat_table(n=7)), ("nested", nested_table(n=7))):
        path = str(tmp_path / f"{name}.qvr")
        quiver.write(table.slice(0, rows), path, row_group_rows=row_group_rows)
        f, compared, skipped = compare_file(path)
        assert skipped == [] and len(compared) == table.num_columns
        assert len(f.row_groups) == (0 if rows == 0 else -(-rows // (row_group_rows or rows)))


# ------------------------------------------------------------ statistics (section 4)

def check_statistics(path):
    """Every flat chunk's min/max (and NaN count) against its decoded
    non-null values; returns the number of chunks checked."""
    f = sd.open_file(path)
    checked = 0
    for g in range(len(f.row_groups)):
        for field in f.columns:
            if field.format.startswith("+") or field.format in ("n", "e"):
                continue  # nested, null and float16 chunks have no statistics
            st = sd.chunk_statistics(f, g, field)
            a = f.column_chunk(g, field)
            valid = a.filter(a.is_valid())
            if pa.types.is_floating(valid.type):
                values = [v for v in valid.to_pylist() if not math.isnan(v)]
                assert st["nan_count"] == len(valid) - len(values), (path, field.name, g)
            elif pa.types.is_decimal(valid.type):
                values = [int(v.scaleb(valid.type.scale)) for v in valid.to_pylist()]
            elif pa.types.is_timestamp(valid.type) or pa.types.is_date(valid.type):
                values = valid.view(pa.int64() if valid.type.bit_width == 64
                                    else pa.int32()).to_pylist()
            else:
                values = valid.to_pylist()
            values = [v.encode() if isinstance(v, str) else v for v in values]
            if not values:
                assert st["min"] is None, (path, field.name, g)
                continue
            lo, hi = min(values), max(values)
            assert st["min"] is not None, (path, field.name, g)
            if isinstance(lo, bytes):
                # A cut min or max is a prefix of the true one.
                assert st["min"] == lo or st["min_truncated"] and lo.startswith(st["min"])
                assert st["max"] == hi or st["max_truncated"] and hi.startswith(st["max"])
                assert len(st["min"]) <= 64 and len(st["max"]) <= 64
            else:
                assert (st["min"], st["max"]) == (lo, hi), (path, field.name, g, st)
            checked += 1
    return checked


@pytest.mark.parametrize("compact", [False, True], ids=["default", "compact"])
def test_statistics(tmp_path, flat, compact):
    path = str(tmp_path / "stats.qvr")
    quiver.write(flat, path, row_group_rows=8192, compact=compact)
    assert check_statistics(path) > 3 * 30


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_statistics_fixture(path):
    assert check_statistics(path) > 0


def test_statistics_truncated_text(tmp_path):
    path = str(tmp_path / "text.qvr")
    quiver.write(pa.table({"u": ["\u00e9" * 40, "b", "a" * 100]}), path)
    f = sd.open_file(path)
    st = sd.chunk_statistics(f, 0, f.columns[0])
    # utf8 is cut at a character boundary: 32 two-byte characters.
    assert st["max"] == "\u00e9".encode() * 32 and st["max_truncated"]
    assert st["min"] == b"a" * 64 and st["min_truncated"]
    assert check_statistics(path) == 1


def test_statistics_signed_zero(tmp_path):
    # Not stated by section 4 (see the module's docstring): -0.0 below +0.0.
    path = str(tmp_path / "zero.qvr")
    quiver.write(pa.table({"z": [0.0, -0.0, 0.0], "w": [-0.0, 0.0, -0.0]}), path)
    f = sd.open_file(path)
    for field in f.columns:
        st = sd.chunk_statistics(f, 0, field)
        assert math.copysign(1, st["min"]) == -1 and math.copysign(1, st["max"]) == 1


# ------------------------------------------------------------ checks of the decoder itself

def test_block_checksum_mismatch_detected(tmp_path):
    if sd.xxhash is None:
        pytest.skip("the xxhash module is not installed")
    path = str(tmp_path / "c.qvr")
    quiver.write(pa.table({"x": np.arange(5000)}), path)
    f = sd.open_file(path)
    seg = f.row_groups[0].chunks[0].segments[2]
    data = bytearray(f.data)
    data[seg.offset + seg.length - 1] ^= 0x40
    bad = str(tmp_path / "bad.qvr")
    with open(bad, "wb") as fh:
        fh.write(data)
    with pytest.raises(sd.SpecError, match="checksum mismatch"):
        sd.open_file(bad)


def test_relative_without_reference_is_an_error(tmp_path, flat):
    path = str(tmp_path / "rel.qvr")
    quiver.write(flat.select(["shipdate", "receiptdate"]), path)
    f = sd.open_file(path)
    seg = f.row_groups[0].chunks[1].segments[2]
    with pytest.raises(sd.SpecError, match="no reference"):
        sd.decode_segment(f.segment_bytes(seg), seg.kind, seg.fixed_width, seg.count)


# ------------------------------------------------------------ ans blocks (section 5.5.17)

def ans_table(freqs, kind=1):
    """A coded block's kind, symbol count, symbols and frequencies for a
    {symbol: frequency} dict, laid out as section 5.5.17 says."""
    syms = sorted(freqs)
    out = bytearray([kind, len(syms) - 1])
    if len(syms) < 32:
        out += bytes(syms)
    else:
        bitmap = bytearray(32)
        for s in syms:
            bitmap[s >> 3] |= 1 << (s & 7)
        out += bitmap
    for s in syms:
        fs = freqs[s]
        out += bytes([fs]) if fs < 128 else bytes([(fs % 128) | 0x80, fs // 128])
    return bytes(out)


def ans_encode(data, freqs, lanes=8):
    """An encoder from 5.5.17's last paragraph: the bytes backwards from
    eight (kind 1) or 32 (kind 2) states of 2^16, a word out of a state
    about to code a symbol of frequency f when it is >= 2^20 f, the words in
    the order the decoder reads them. Returns (table, states, words) of a
    coded block."""
    cum, c = {}, 0
    for s in sorted(freqs):
        cum[s], c = c, c + freqs[s]
    assert c == 4096
    x = [1 << 16] * lanes
    emitted = []
    for i in reversed(range(len(data))):
        s = data[i]
        fs, v = freqs[s], x[i % lanes]
        if v >= fs << 20:
            emitted.append(v & 0xFFFF)
            v >>= 16
        x[i % lanes] = (v // fs) * 4096 + v % fs + cum[s]
    return ans_table(freqs, 1 if lanes == 8 else 2), x, emitted[::-1]


def ans_block(table, states, words):
    return (table + struct.pack(f"<{len(states)}I", *states)
            + struct.pack(f"<{len(words)}H", *words))


ANS_FREQS = {0: 2048, 7: 1024, 8: 512, 200: 511, 255: 1}
ANS_DATA = bytes(np.random.default_rng(18).choice(
    sorted(ANS_FREQS), 300, p=np.array([ANS_FREQS[s] for s in sorted(ANS_FREQS)]) / 4096)
    .tolist())


def test_ans_block_round_trip():
    table, states, words = ans_encode(ANS_DATA, ANS_FREQS)
    assert len(ANS_DATA) == 300 and set(ANS_DATA) <= set(ANS_FREQS)
    assert len(words) > 4 and all(x >= 1 << 16 for x in states)
    block = ans_block(table, states, words)
    assert len(block) < len(ANS_DATA)
    assert sd.ans_decode_block(block, len(ANS_DATA)) == ANS_DATA
    # Stored kind: the bytes after the kind.
    assert sd.ans_decode_block(b"\0" + ANS_DATA, len(ANS_DATA)) == ANS_DATA
    # A bitmap of 40 symbols (from 32 on), frequencies of one and two bytes.
    freqs = {s: 100 for s in range(10, 250, 6)}
    freqs[10] += 4096 - sum(freqs.values())
    assert len(freqs) == 40 and freqs[10] >= 128
    rng = np.random.default_rng(5)
    data = bytes(rng.choice(sorted(freqs), 1000,
                            p=np.array([freqs[s] for s in sorted(freqs)]) / 4096).tolist())
    table, states, words = ans_encode(data, freqs)
    assert len(table) == 2 + 32 + 2 + 39
    assert sd.ans_decode_block(ans_block(table, states, words), len(data)) == data
    # One symbol of frequency 4096: no word, the states stay at 2^16.
    table, states, words = ans_encode(b"\x2a" * 64, {42: 4096})
    assert words == [] and states == [1 << 16] * 8
    assert sd.ans_decode_block(ans_block(table, states, words), 64) == b"\x2a" * 64


def test_ans_block_corrupt():
    n = len(ANS_DATA)
    table, states, words = ans_encode(ANS_DATA, ANS_FREQS)
    good = ans_block(table, states, words)
    assert sd.ans_decode_block(good, n) == ANS_DATA

    def bad(block, match, size=n):
        with pytest.raises(sd.SpecError, match=match):
            sd.ans_decode_block(block, size)

    bad(b"", "empty ans block")
    for kind in (3, 0x80, 0xFF):
        bad(bytes([kind]) + good[1:], f"kind {kind} ")
    bad(b"\0" + ANS_DATA[:-1], "stored ans block of 300 bytes for 300 bytes")
    bad(b"\0" + ANS_DATA + b"\0", "stored ans block of 302 bytes")
    # Frequencies summing to 4095 and 4097 (the last symbol's 1 changed),
    # a frequency of 0, a frequency below 128 written in two bytes.
    for f_last, match in ((0, "frequency 0"), (2, "sum to 4097")):
        t = ans_table({**ANS_FREQS, 255: 1})
        bad(t[:-1] + bytes([f_last]) + good[len(t):], match)
    t = ans_table({**ANS_FREQS, 200: 510})
    bad(t + good[len(table):], "sum to 4095")
    t = table[:-1] + bytes([0x81, 0x00])
    bad(t + good[len(table):], "frequency 1 of symbol 255 in two bytes")
    # Symbols out of order or repeated; a bitmap with a bit too few.
    bad(table[:2] + bytes([0, 8, 7, 200, 255]) + good[7:], "not strictly increasing")
    bad(table[:2] + bytes([0, 7, 7, 200, 255]) + good[7:], "not strictly increasing")
    bitmap_freqs = {s: 128 for s in range(32)}
    t = ans_table(bitmap_freqs)
    assert sd.ans_read_table(t, "t")[2] == len(t)
    bad(t[:2] + bytes([0xFE]) + t[3:], "bitmap has 31 bits set for 32 symbols")
    # Truncated inside the table and inside the states.
    for cut in (1, 2, 4, 8, len(table) - 1):
        bad(good[:cut], "runs past|ends before")
    bad(good[:len(table) + 31], "states run past")
    # A state below 2^16.
    for j in (0, 5, 7):
        low = list(states)
        low[j] = 0xFFFF
        bad(ans_block(table, low, words), f"state {j} is 65535, below 2\\^16")
    # An odd stream, a stream a word short, a word too many.
    bad(good + b"\0", "not an even number")
    bad(good[:-1], "not an even number")
    bad(good[:-2], f"stream of {len(words) - 1} words ends at byte")
    bad(good + b"\0\0", f"1 of {len(words) + 1} words left after the last byte")
    # A valid-looking block for fewer or more bytes than it codes.
    bad(good, "words left|ends at|not 2\\^16", size=n - 8)
    bad(good, "ends at byte|not 2\\^16", size=n + 8)
    # Final states other than 2^16: one symbol of frequency 4096 never
    # changes a state, so a state of 2^16 + 5 is still there at the end.
    one = ans_table({42: 4096})
    bad(ans_block(one, [1 << 16] * 3 + [(1 << 16) + 5] + [1 << 16] * 4, []),
        "state 3 ends at 65541, not 2\\^16", size=64)


def test_ans_wide_block():
    # Kind 2 (format 6.0): byte i by state i mod 32, otherwise kind 1.
    rng = np.random.default_rng(19)
    data = bytes(rng.choice(sorted(ANS_FREQS), 5000,
                            p=np.array([ANS_FREQS[s] for s in sorted(ANS_FREQS)]) / 4096).tolist())
    table, states, words = ans_encode(data, ANS_FREQS, lanes=32)
    assert table[0] == 2 and len(states) == 32
    good = ans_block(table, states, words)
    assert sd.ans_decode_block(good, len(data)) == data
    # Read as kind 1 (eight states), the same bytes are not a valid block.
    with pytest.raises(sd.SpecError):
        sd.ans_decode_block(bytes([1]) + good[1:], len(data))
    # The states are 32: a block cut inside them, a state below 2^16 past
    # the eighth, a word short, a final state past the eighth.
    with pytest.raises(sd.SpecError, match="states run past"):
        sd.ans_decode_block(good[:len(table) + 4 * 31], len(data))
    low = list(states)
    low[20] = 0xFFFF
    with pytest.raises(sd.SpecError, match="state 20 is 65535"):
        sd.ans_decode_block(ans_block(table, low, words), len(data))
    with pytest.raises(sd.SpecError, match="ends at byte"):
        sd.ans_decode_block(good[:-2], len(data))
    one = ans_table({42: 4096}, kind=2)
    with pytest.raises(sd.SpecError, match="state 30 ends at 65541"):
        sd.ans_decode_block(ans_block(one, [1 << 16] * 30 + [(1 << 16) + 5] + [1 << 16], []),
                            64)
    assert sd.ans_decode_block(ans_block(one, [1 << 16] * 32, []), 64) == b"\x2a" * 64


def nodes_of(node, enc):
    """The nodes of encoding `enc` in a tree, frames' trees included."""
    found = [node] if node.enc == enc else []
    for c in node.children:
        found += nodes_of(c, enc)
    if node.enc in sd.FRAMED:
        entries, frames = sd.frame_entries(node)
        for r in sd.frame_roots(node, entries, frames):
            found += nodes_of(r, enc)
    return found


def written_nodes(tmp_path, vals, mask, row_group_rows, enc):
    """Writes vals (nulls where mask) as column c, checks the spec decoder
    reads back what was written, and returns each row group's values tree
    as (its description, its nodes of encoding `enc`)."""
    path = str(tmp_path / "c.qvr")
    quiver.write(pa.table({"c": pa.array(vals, mask=mask)}), path, row_group_rows=row_group_rows)
    f, compared, skipped = compare_file(path)
    assert f.version == (9, 0) and compared == ["c"] and skipped == []
    got = f.column(0).to_pylist()
    assert got == [None if m else int(v) for v, m in zip(vals.tolist(), mask.tolist())]
    node = f.columns[0].node
    out = []
    for g in range(len(f.row_groups)):
        seg = f.row_groups[g].chunks[node].segments[2]
        root = sd.parse_node(f.segment_bytes(seg), 0, seg.length, 0)
        out.append((f.encoding_tree(g, node), nodes_of(root, enc)))
    return out


@pytest.mark.parametrize("d", [300, 1000, 2500])
def test_bucket_nodes(tmp_path, d):
    # Zipf(1.1) codes of dictionaries of 300 to 2,500 values (codes of 9 to
    # 12 bits; a dictionary is in frequency order up to an eighth of its
    # row group's values), with nulls: the codes are bucket nodes whose
    # tokens are ans frames; the spec decoder's values are the ones written, and each
    # node's m and extra bits are what section 5.5.18 allows.
    rng = np.random.default_rng(d)
    vals = zipf_wide(rng, 50000, d)
    mask = rng.random(50000) < 0.03
    for tree, found in written_nodes(tmp_path, vals, mask, 25000, 19):
        assert found, tree
        for b in found:
            assert 0 <= b.params[0] <= 3
            assert b.children[0].enc == 18, tree  # tokens: ans frames
            assert len(b.bufs[0]) > 0


def test_bucket_node_corrupt():
    # A hand-made bucket node (section 5.5.18): the spec's example decodes;
    # a token past the last, starts that disagree with the tokens, and an m
    # out of range are refused.
    def node(m, tok, starts, bits, typ=sd.T_U32):
        n = sd.Node.__new__(sd.Node)
        n.enc, n.type, n.width, n.count = 19, typ, 0, len(tok)
        n.params, n.bufs, n.offset, n.depth, n.data = [m], [bytes(bits)], 0, 0, None
        t = sd.Node.__new__(sd.Node)
        t.enc, t.type, t.width, t.count, t.params, t.children = 1, sd.T_U8, 0, len(tok), [], []
        t.bufs, t.offset, t.depth, t.data = [bytes(tok)], 0, 1, None
        st = sd.Node.__new__(sd.Node)
        st.enc, st.type, st.width, st.count, st.params, st.children = 1, sd.T_U64, 0, len(starts), [], []
        st.bufs, st.offset, st.depth, st.data = [struct.pack(f"<{len(starts)}Q", *starts)], 0, 1, None
        n.children = [t, st]
        return n

    tok = [0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7]
    bits = [0x4a, 0x4e, 0x0e]  # the spec's bytes: 20 extra bits, least significant first
    assert sd.decode(node(1, tok, [0, 20], bits), sd.DecodeContext()).tolist() == list(range(16))
    with pytest.raises(sd.SpecError, match="token 16 of 16"):  # u8, m = 1: 4 + 6 x 2 tokens
        sd.decode(node(1, tok[:-1] + [16], [0, 20], bits, sd.T_U8), sd.DecodeContext())
    with pytest.raises(sd.SpecError, match="tokens take 20 bits, its starts 19"):
        sd.decode(node(1, tok, [0, 19], bits), sd.DecodeContext())
    with pytest.raises(sd.SpecError, match="m = 3 for 64-bit"):
        sd.decode(node(3, tok, [0, 20], bits, sd.T_U64), sd.DecodeContext())


def test_seqpack_node():
    # Hand-made seqpack nodes (section 5.5.19): the spec's three examples
    # decode, at u8 and zero-extended to u64; a width other than 1, 2 or 4
    # and a buffer of the wrong length are refused.
    def node(w, buf, count, typ=sd.T_U8):
        n = sd.Node.__new__(sd.Node)
        n.enc, n.type, n.width, n.count, n.children = 20, typ, 0, count, []
        n.params, n.bufs, n.offset, n.depth, n.data = [w], [bytes(buf)], 0, 0, None
        return n

    ctx = sd.DecodeContext()
    assert sd.decode(node(1, [0x8d, 0x01], 9), ctx).tolist() == [1, 0, 1, 1, 0, 0, 0, 1, 1]
    assert sd.decode(node(2, [0x63, 0x02], 5), ctx).tolist() == [3, 0, 2, 1, 2]
    assert sd.decode(node(4, [0xc5, 0x00], 3), ctx).tolist() == [5, 12, 0]
    assert sd.decode(node(4, [0xc5, 0x00], 3, sd.T_U64), ctx).tolist() == [5, 12, 0]
    assert sd.decode(node(1, [], 0), ctx).tolist() == []
    with pytest.raises(sd.SpecError, match="w = 3"):
        sd.decode(node(3, [0, 0], 5), ctx)
    with pytest.raises(sd.SpecError, match="buffer 1 bytes, expected 2"):
        sd.decode(node(1, [0x8d], 9), ctx)


@pytest.mark.parametrize("k,w,longest", [(2, 1, 14), (4, 2, 14), (7, 4, 7)])
def test_seqpack_nodes_written(tmp_path, k, w, longest):
    # Flags or small codes that hold along the lines of an order (k values,
    # k - 1 needing w bits; orders of up to 14 lines for the flag, which
    # bit-packing holds in a bit), with nulls, in row groups of 20,000 and a
    # shorter last one: the writer lays them out as seqpack residuals of w
    # bits in zstd frames, and the spec decoder reads back what was written.
    rng = np.random.default_rng(k)
    vals = order_flags(rng, 50000, k, longest).astype(np.int32)
    mask = rng.random(50000) < 0.02
    for tree, found in written_nodes(tmp_path, vals, mask, 20000, 20):
        assert found, tree
        assert all(s.params[0] == w for s in found), tree


def test_radix_node():
    # Hand-made radix nodes (section 5.5.20) over plain u16 groups: the
    # spec's two examples decode, at u8 and zero-extended to u64; a base or
    # digit count out of range, a group not below b^k and a last group with
    # digits past the last value are refused.
    def node(b, k, groups, count, typ=sd.T_U8):
        g = sd.Node.__new__(sd.Node)
        g.enc, g.type, g.width, g.count, g.children = 1, sd.T_U16, 0, len(groups), []
        g.params, g.bufs, g.offset, g.depth, g.data = [], [np.asarray(groups, "<u2").tobytes()], 0, 1, None
        n = sd.Node.__new__(sd.Node)
        n.enc, n.type, n.width, n.count, n.children = 21, typ, 0, count, [g]
        n.params, n.bufs, n.offset, n.depth, n.data = [b, k], [], 0, 0, None
        return n

    ctx = sd.DecodeContext()
    assert sd.decode(node(11, 2, [80, 10, 5], 5), ctx).tolist() == [3, 7, 10, 0, 5]
    assert sd.decode(node(3, 5, [200, 7], 7), ctx).tolist() == [2, 0, 1, 1, 2, 1, 2]
    assert sd.decode(node(3, 5, [200, 7], 7, sd.T_U64), ctx).tolist() == [2, 0, 1, 1, 2, 1, 2]
    assert sd.decode(node(11, 2, [], 0), ctx).tolist() == []
    for b, k in [(2, 2), (257, 2), (11, 1), (11, 5)]:
        with pytest.raises(sd.SpecError, match=f"b = {b}, k = {k}"):
            sd.decode(node(b, k, [0], 1), ctx)
    with pytest.raises(sd.SpecError, match="group 121 >= 11"):
        sd.decode(node(11, 2, [80, 121, 5], 6), ctx)
    with pytest.raises(sd.SpecError, match="digits past the last value"):
        sd.decode(node(11, 2, [80, 10, 11], 5), ctx)


@pytest.mark.parametrize("span,b,k", [(3, 3, 5), (5, 5, 3), (11, 11, 2), (40, 40, 3)])
def test_radix_nodes_written(tmp_path, span, b, k):
    # Uniform values of 3 to 40 values from 1000 (a reference above the
    # groups), with nulls, in row groups of 20,000 and a shorter last one:
    # the writer holds them as radix nodes of base `span`, and the spec
    # decoder reads back what was written.
    rng = np.random.default_rng(span)
    vals = (1000 + rng.integers(0, span, 50000)).astype(np.int64)
    mask = rng.random(50000) < 0.02
    for tree, found in written_nodes(tmp_path, vals, mask, 20000, 21):
        assert found, tree
        assert all(s.params == [b, k] for s in found), tree


def test_file_of_unknown_major_version_refused(tmp_path):
    path = str(tmp_path / "v.qvr")
    quiver.write(pa.table({"x": np.arange(10)}), path)
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    assert struct.unpack_from("<HH", data, len(data) - 8) == (9, 0)
    struct.pack_into("<H", data, len(data) - 8, 10)
    with open(path, "wb") as fh:
        fh.write(data)
    with pytest.raises(sd.SpecError, match=r"format version 10\.0; this reader reads "
                                           r"versions 1\.x to 9\.x only"):
        sd.open_file(path)
