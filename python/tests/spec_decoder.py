"""An independent decoder of Quiver files, written from docs/format.md (7.0) alone.

Its purpose is to check that the specification is complete enough to write a
reader from and that Quiver's writer follows it: it was written without
looking at Quiver's C decoder, so where it disagrees with Quiver's reader
either the text or the writer is wrong. It reads a whole file into memory,
parses the tail, the footer sections, the schema and the row groups, checks
the block checksums (when the `xxhash` module is installed), decodes every
encoding tree of sections 5.5.1 to 5.5.17 into numpy arrays or lists of
bytes (zstd frames need the `zstandard` module and lz4 frames the `lz4`
module; ans frames, 5.5.17, are decoded here in plain Python), and
assembles top-level columns into pyarrow arrays: the flat types of section
2's table and the nested ones (struct, list, large list, fixed-size list,
map). A format string outside that table raises NotImplementedError
naming the column. (The ans block decoder, ans_decode_block, follows the
steps of 5.5.17's text; its author had read core/src/encoding/ans.c
beforehand, to compare the two; where they differ is listed in
test_spec_decoder.py's docstring.)

Representation of decoded values (one per physical type, section 5.1):
word types (u8..u64, f32, f64) are numpy arrays of unsigned integers of the
type's width (floats as their bit patterns, so NaN payloads and -0.0 stay
exact); bool is a numpy bool array; binary and fixed are lists of bytes.
"""

import struct

import numpy as np

try:
    import xxhash
except ImportError:  # the checksums are then not verified
    xxhash = None
try:
    import zstandard
except ImportError:
    zstandard = None
try:
    import lz4.block as lz4_block
except ImportError:
    lz4_block = None


class SpecError(Exception):
    """A file breaks a rule of docs/format.md (the spec's "corrupt")."""


MAGIC = b"QVR1"

# Section 5.1: physical types.
T_U8, T_U16, T_U32, T_U64, T_F32, T_F64, T_BOOL, T_BINARY, T_FIXED = range(1, 10)
WORD_WIDTH = {T_U8: 1, T_U16: 2, T_U32: 4, T_U64: 8, T_F32: 4, T_F64: 8}
INT_TYPES = (T_U8, T_U16, T_U32, T_U64)
UDTYPE = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}

# Section 5.1: value kind -> physical type of the segment's root.
KIND_TYPE = {1: T_BOOL, 2: T_U8, 3: T_U8, 4: T_U16, 5: T_U16, 6: T_U32, 7: T_U32,
             8: T_U64, 9: T_U64, 10: T_F32, 11: T_F64, 12: T_BINARY, 13: T_BINARY,
             14: T_FIXED}

ENCODING_NAMES = {1: "plain", 2: "constant", 3: "bitpack", 4: "for", 5: "delta",
                  6: "zigzag", 7: "dict", 8: "rle", 9: "sparse", 10: "alp", 11: "alp_rd",
                  12: "fsst", 13: "zstd", 14: "lz4", 15: "patched", 16: "zstd_dict",
                  17: "relative", 18: "ans", 19: "bucket", 20: "seqpack",
                  21: "radix"}

MAX_DEPTH = 16

# Encodings whose values are cut into frames of serialized trees (5.5.13,
# 5.5.17): zstd, lz4, ans.
FRAMED = (13, 14, 18)


# ---------------------------------------------------------------- primitives

class Cursor:
    """Reads varints and fixed integers from a bytes object within [pos, end)."""

    def __init__(self, data, pos=0, end=None, what="footer"):
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.what = what

    def need(self, n):
        if n < 0 or self.pos + n > self.end:
            raise SpecError(f"{self.what}: read of {n} bytes at {self.pos} runs past {self.end}")

    def u8(self):
        self.need(1)
        v = self.data[self.pos]
        self.pos += 1
        return v

    def u64(self):
        self.need(8)
        v = struct.unpack_from("<Q", self.data, self.pos)[0]
        self.pos += 8
        return v

    def varint(self):
        v = 0
        for i in range(10):
            b = self.u8()
            if i == 9 and b > 1:
                raise SpecError(f"{self.what}: varint's 10th byte {b} is not 0 or 1")
            v |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return v
        raise SpecError(f"{self.what}: varint longer than 10 bytes")

    def svarint(self):
        z = self.varint()
        v = (z >> 1) ^ -(z & 1)
        return v

    def bytes_(self):
        n = self.varint()
        self.need(n)
        v = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return v


def round8(n):
    return (n + 7) & ~7


def ceil_div(a, b):
    return -(-a // b)


def xxh3(data):
    return xxhash.xxh3_64_intdigest(data)


# ---------------------------------------------------------------- encoding trees

class Node:
    """One parsed encoding node (section 5.2)."""

    __slots__ = ("enc", "type", "width", "count", "params", "bufs", "children",
                 "offset", "depth", "data")

    @property
    def name(self):
        return ENCODING_NAMES.get(self.enc, str(self.enc))

    def describe(self):
        """The tree as `qv inspect` names it; a zstd, lz4 or ans node lists
        the distinct trees of its frames in brackets."""
        inner = ",".join(c.describe() for c in self.children)
        if self.enc in FRAMED:
            entries, frames = frame_entries(self)
            trees = dict.fromkeys(r.describe() for r in frame_roots(self, entries, frames))
            inner = "[" + "|".join(trees) + "]"
        return f"{self.name}({inner})"


def type_width(ptype, width):
    if ptype in WORD_WIDTH:
        return WORD_WIDTH[ptype]
    if ptype == T_FIXED:
        return width
    return None


def parse_node(data, p, size, depth):
    """Parses the node spanning data[p:p+size] (section 5.2) and its children."""
    if depth > MAX_DEPTH:
        raise SpecError(f"node at byte {p}: depth {depth} beyond {MAX_DEPTH}")
    if size < 8 or size % 8:
        raise SpecError(f"node at byte {p}: span of {size} bytes")
    c = Cursor(data, p, p + size, what=f"node at byte {p}")
    n = Node()
    n.offset, n.depth, n.data = p, depth, data
    n.enc = c.u8()
    n.type = c.u8()
    if n.enc not in ENCODING_NAMES:
        raise SpecError(f"node at byte {p}: unknown encoding {n.enc}")
    if not 1 <= n.type <= 9:
        raise SpecError(f"node at byte {p}: unknown type {n.type}")
    n.width = 0
    if n.type == T_FIXED:
        n.width = c.varint()
        if n.width > 4096 or (n.width == 0 and n.enc not in (1, 2)):
            raise SpecError(f"{n.name} node at byte {p}: fixed width {n.width}")
    n.count = c.varint()
    if n.count > 2 ** 31 or (n.count == 2 ** 31 and n.type not in (T_U32, T_U64)):
        raise SpecError(f"{n.name} node at byte {p}: count {n.count}")
    nparams = c.u8()
    if nparams > 8:
        raise SpecError(f"{n.name} node at byte {p}: {nparams} params")
    n.params = [c.svarint() for _ in range(nparams)]
    nbufs = c.u8()
    if nbufs > 4:
        raise SpecError(f"{n.name} node at byte {p}: {nbufs} buffers")
    lengths = [c.varint() for _ in range(nbufs)]
    nchildren = c.u8()
    if nchildren > 4:
        raise SpecError(f"{n.name} node at byte {p}: {nchildren} children")
    sizes = [c.varint() for _ in range(nchildren)]
    for s in sizes:
        if s < 8 or s % 8 or s > size:
            raise SpecError(f"{n.name} node at byte {p}: child size {s}")
    at = round8(c.pos - p)
    n.bufs = []
    for length in lengths:
        if at + length > size:
            raise SpecError(f"{n.name} node at byte {p}: buffer runs past the span")
        n.bufs.append(memoryview(data)[p + at:p + at + length])
        at += round8(length)
    n.children = []
    for s in sizes:
        if at + s > size:
            raise SpecError(f"{n.name} node at byte {p}: child runs past the span")
        n.children.append(parse_node(data, p + at, s, depth + 1))
        at += s
    if at != size:
        raise SpecError(f"{n.name} node at byte {p}: parts fill {at} of {size} bytes")
    check_shape(n)
    return n


# Section 5.4: (params, buffers, children) each encoding takes, per type class.
def check_shape(n):
    t, e = n.type, n.enc
    word, integer = t in WORD_WIDTH, t in INT_TYPES
    floats = t in (T_F32, T_F64)
    if e == 1:
        ok = (word or t in (T_FIXED, T_BOOL)) and (0, 1, 0) or t == T_BINARY and (0, 1, 1)
    elif e == 2:
        ok = t == T_BOOL and (1, 0, 0) or (0, 1, 0)
    elif e == 3:
        ok = integer and (1, 1, 0)
    elif e in (4, 17):
        ok = integer and (1, 0, 1)
    elif e == 5:
        ok = integer and (0, 0, 2)
    elif e == 6:
        ok = integer and (0, 0, 1)
    elif e == 7:
        ok = t != T_BOOL and (0, 0, 2)
    elif e == 8:
        ok = word and (0, 0, 2) or t == T_BOOL and (1, 0, 1)
    elif e == 9:
        ok = word and (0, 1, 2) or t == T_BOOL and (1, 0, 1)
    elif e == 10:
        ok = floats and (2, 0, 3)
    elif e == 11:
        ok = floats and (1, 0, 2)
    elif e == 12:
        ok = t == T_BINARY and (2, 2, 1)
    elif e in FRAMED:
        ok = (len(n.params) in (1, 2)) and (len(n.params), 2, 0)
    elif e == 15:
        ok = integer and (0, 0, 3)
    elif e == 16:
        ok = t == T_BINARY and (0, 3, 1)
    elif e == 19:
        ok = integer and (1, 1, 2)
    elif e == 20:
        ok = integer and (1, 1, 0)
    elif e == 21:
        ok = integer and (2, 0, 1)
    else:
        ok = None
    if not ok:
        raise SpecError(f"{n.name} node at byte {n.offset}: type {t} not allowed")
    got = (len(n.params), len(n.bufs), len(n.children))
    if got != ok:
        raise SpecError(f"{n.name} node at byte {n.offset}: params/buffers/children {got}, "
                        f"expected {ok}")


def expect_child(n, i, ptype, count, width=0):
    ch = n.children[i]
    if ch.type != ptype or ch.count != count or (ptype == T_FIXED and ch.width != width):
        raise SpecError(f"{n.name} node at byte {n.offset}: child {i} is type {ch.type} "
                        f"count {ch.count}, expected type {ptype} count {count}")
    return ch


def same_type_child(n, i, count):
    return expect_child(n, i, n.type, count, n.width)


def empty_values(n):
    if n.type in WORD_WIDTH:
        return np.zeros(0, UDTYPE[WORD_WIDTH[n.type]])
    if n.type == T_BOOL:
        return np.zeros(0, bool)
    return []


def mask_of(width):
    return (1 << (8 * width)) - 1


class DecodeContext:
    """What a decode may need beyond the tree: the reference of a relative node."""

    def __init__(self, reference=None):
        self.reference = reference  # callable(ref, node) -> values, or None


def decode(n, ctx):
    """Decodes all n.count values of node n (section 5.5)."""
    fn = DECODERS[n.enc]
    out = fn(n, ctx)
    got = len(out)
    if got != n.count:
        raise SpecError(f"{n.name} node at byte {n.offset}: decoded {got} of {n.count} values")
    return out


def dec_plain(n, ctx):
    buf = n.bufs[0]
    if n.type in WORD_WIDTH:
        w = WORD_WIDTH[n.type]
        if len(buf) != n.count * w:
            raise SpecError(f"plain node at byte {n.offset}: buffer {len(buf)} bytes")
        return np.frombuffer(buf, UDTYPE[w]).copy()
    if n.type == T_BOOL:
        if len(buf) != ceil_div(n.count, 8):
            raise SpecError(f"plain node at byte {n.offset}: bool buffer {len(buf)} bytes")
        bits = np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little")
        return bits[:n.count].astype(bool)
    if n.type == T_FIXED:
        w = n.width
        if len(buf) != n.count * w:
            raise SpecError(f"plain node at byte {n.offset}: buffer {len(buf)} bytes")
        b = bytes(buf)
        return [b[i * w:(i + 1) * w] for i in range(n.count)]
    # binary
    offs = decode(expect_child(n, 0, T_U64, n.count + 1), ctx)
    return slice_binary(n, bytes(buf), offs)


def slice_binary(n, data, offs):
    offs = offs.astype(np.uint64)
    if len(offs) and (np.any(offs[1:] < offs[:-1]) or int(offs[-1]) > len(data)):
        raise SpecError(f"{n.name} node at byte {n.offset}: offsets decrease or pass the data")
    o = offs.tolist()
    return [data[o[i]:o[i + 1]] for i in range(n.count)]


def dec_constant(n, ctx):
    if n.type == T_BOOL:
        if n.params[0] not in (0, 1):
            raise SpecError(f"constant node at byte {n.offset}: bool value {n.params[0]}")
        return np.full(n.count, bool(n.params[0]))
    v = bytes(n.bufs[0])
    if n.type in WORD_WIDTH:
        w = WORD_WIDTH[n.type]
        if len(v) != w:
            raise SpecError(f"constant node at byte {n.offset}: value of {len(v)} bytes")
        return np.full(n.count, int.from_bytes(v, "little"), UDTYPE[w])
    if n.type == T_FIXED and len(v) != n.width:
        raise SpecError(f"constant node at byte {n.offset}: value of {len(v)} bytes")
    if n.count * len(v) > 2 ** 32:
        raise SpecError(f"constant node at byte {n.offset}: decodes past 2^32 bytes")
    return [v] * n.count


def packed_bytes(count, w):
    if w == 0 or count == 0:
        return 0
    lanes, bits = (32, 32) if w <= 32 else (16, 64)
    rem = count % 1024
    tail = 0 if rem == 0 else ceil_div(ceil_div(rem, lanes) * w, bits) * lanes * bits // 8
    return (count // 1024) * 128 * w + tail


def dec_bitpack(n, ctx):
    width = WORD_WIDTH[n.type]
    w = n.params[0]
    if not 0 <= w <= 8 * width:
        raise SpecError(f"bitpack node at byte {n.offset}: w = {w}")
    buf = n.bufs[0]
    if len(buf) != packed_bytes(n.count, w):
        raise SpecError(f"bitpack node at byte {n.offset}: buffer {len(buf)} bytes, "
                        f"expected {packed_bytes(n.count, w)}")
    out_dtype = UDTYPE[width]
    if w == 0 or n.count == 0:
        return np.zeros(n.count, out_dtype)
    lanes, bits = (32, 32) if w <= 32 else (16, 64)
    # Pad the buffer to whole words of full vectors, so that word(q + 1),
    # fetched for every value but used only where a value straddles, exists.
    words = np.frombuffer(buf, np.dtype(f"<u{bits // 8}")).astype(np.uint64)
    words = np.concatenate([words, np.zeros(lanes * (w + 1), np.uint64)])
    i = np.arange(n.count, dtype=np.int64)
    k, j = i // 1024, i % 1024
    lane, row = j % lanes, j // lanes
    bit = row * w
    q, s = bit // bits, bit % bits
    base_words = k * (128 * w) // (bits // 8)
    lo = words[base_words + q * lanes + lane]
    hi = words[base_words + (q + 1) * lanes + lane]
    v = lo >> s.astype(np.uint64)
    straddles = s + w > bits
    shift_hi = np.where(straddles, bits - s, 0).astype(np.uint64)
    v = np.where(straddles, v | (hi << shift_hi), v)
    v &= np.uint64((1 << w) - 1)
    return v.astype(out_dtype)


def dec_for(n, ctx):
    width = WORD_WIDTH[n.type]
    ch = n.children[0]
    # 5.5.4: residuals of the same type, or (4.0 on) of a narrower integer
    # type, zero-extended before the reference is added.
    if ch.type in INT_TYPES and WORD_WIDTH[ch.type] < width:
        res = decode(expect_child(n, 0, ch.type, n.count), ctx).astype(UDTYPE[width])
    else:
        res = decode(same_type_child(n, 0, n.count), ctx)
    ref = n.params[0] & mask_of(width)
    return (res + UDTYPE[width].type(ref)).astype(UDTYPE[width])


def dec_delta(n, ctx):
    width = WORD_WIDTH[n.type]
    nvec = ceil_div(n.count, 1024)
    bases = decode(same_type_child(n, 0, nvec), ctx)
    deltas = decode(same_type_child(n, 1, n.count), ctx).astype(np.uint64)
    if n.count == 0:
        return np.zeros(0, UDTYPE[width])
    padded = np.zeros(nvec * 1024, np.uint64)
    padded[:n.count] = deltas
    padded = padded.reshape(nvec, 1024)
    padded[:, 0] = bases.astype(np.uint64)
    out = np.cumsum(padded, axis=1, dtype=np.uint64).reshape(-1)[:n.count]
    return out.astype(UDTYPE[width])  # truncation is the wrap modulo 2^(8 x width)


def dec_zigzag(n, ctx):
    width = WORD_WIDTH[n.type]
    dt = UDTYPE[width]
    z = decode(same_type_child(n, 0, n.count), ctx)
    return ((z >> dt.type(1)) ^ (dt.type(0) - (z & dt.type(1)))).astype(dt)


def dec_dict(n, ctx):
    d = n.children[1].count
    if n.count > 0 and not 1 <= d <= n.count or n.count == 0 and d != 0:
        raise SpecError(f"dict node at byte {n.offset}: dictionary of {d} for {n.count}")
    codes = decode(expect_child(n, 0, T_U32, n.count), ctx)
    values = decode(same_type_child(n, 1, d), ctx)
    if len(codes) and int(codes.max()) >= d:
        bad = int(np.argmax(codes >= d))
        raise SpecError(f"corrupt dict node at byte {n.offset}: code {int(codes[bad])} at "
                        f"value {bad} is outside the dictionary of {d}")
    if isinstance(values, np.ndarray):
        return values[codes.astype(np.int64)]
    return [values[c] for c in codes.tolist()]


def check_positions(n, pos, count, what):
    if len(pos) and (np.any(pos[1:] <= pos[:-1]) or int(pos[-1]) >= count):
        raise SpecError(f"{n.name} node at byte {n.offset}: {what} not strictly increasing "
                        f"below {count}")


def dec_rle(n, ctx):
    r = n.children[0].count
    if r > n.count or (n.count > 0 and r < 1) or (n.count == 0 and r != 0):
        raise SpecError(f"rle node at byte {n.offset}: {r} runs for {n.count} values")
    ends = decode(expect_child(n, 0, T_U32, r), ctx).astype(np.int64)
    if len(ends) and (np.any(ends[1:] <= ends[:-1]) or ends[-1] != n.count or ends[0] < 0):
        raise SpecError(f"rle node at byte {n.offset}: run ends not increasing to {n.count}")
    lengths = np.diff(np.concatenate([[0], ends]))
    if n.type == T_BOOL:
        first = n.params[0]
        if first not in (0, 1):
            raise SpecError(f"rle node at byte {n.offset}: first = {first}")
        runs = (np.arange(r) % 2) ^ first
        return np.repeat(runs.astype(bool), lengths)
    values = decode(same_type_child(n, 1, r), ctx)
    return np.repeat(values, lengths)


def dec_sparse(n, ctx):
    e = n.children[0].count
    if e > n.count:
        raise SpecError(f"sparse node at byte {n.offset}: {e} positions for {n.count}")
    pos = decode(expect_child(n, 0, T_U32, e), ctx).astype(np.int64)
    check_positions(n, pos, n.count, "positions")
    if n.type == T_BOOL:
        fill = n.params[0]
        if fill not in (0, 1):
            raise SpecError(f"sparse node at byte {n.offset}: fill = {fill}")
        out = np.full(n.count, bool(fill))
        out[pos] = not fill
        return out
    width = WORD_WIDTH[n.type]
    if len(n.bufs[0]) != width:
        raise SpecError(f"sparse node at byte {n.offset}: fill of {len(n.bufs[0])} bytes")
    out = np.full(n.count, int.from_bytes(bytes(n.bufs[0]), "little"), UDTYPE[width])
    out[pos] = decode(same_type_child(n, 1, e), ctx)
    return out


def dec_alp(n, ctx):
    e, f = n.params
    f64 = n.type == T_F64
    if not 0 <= f <= e <= (18 if f64 else 10):
        raise SpecError(f"alp node at byte {n.offset}: e = {e}, f = {f}")
    x_count = n.children[1].count
    if x_count > n.count:
        raise SpecError(f"alp node at byte {n.offset}: {x_count} exceptions")
    digits = decode(expect_child(n, 0, T_U64 if f64 else T_U32, n.count), ctx)
    pos = decode(expect_child(n, 1, T_U32, x_count), ctx).astype(np.int64)
    check_positions(n, pos, n.count, "exception positions")
    exc = decode(same_type_child(n, 2, x_count), ctx)
    if f64:
        x = (digits.view(np.int64).astype(np.float64) * np.float64(10.0 ** f)) \
            / np.float64(10.0 ** e)
        bits = x.view(np.uint64).copy()
    else:
        p32 = np.float32
        x = (digits.view(np.int32).astype(np.float32) * p32(10.0 ** f)) / p32(10.0 ** e)
        assert x.dtype == np.float32
        bits = x.view(np.uint32).copy()
    bits[pos] = exc
    return bits


def dec_alp_rd(n, ctx):
    rb = n.params[0]
    f64 = n.type == T_F64
    lo, hi = (48, 63) if f64 else (16, 31)
    if not lo <= rb <= hi:
        raise SpecError(f"alp_rd node at byte {n.offset}: right_bits {rb}")
    left = decode(expect_child(n, 0, T_U16, n.count), ctx).astype(np.uint64)
    right = decode(expect_child(n, 1, T_U64 if f64 else T_U32, n.count), ctx).astype(np.uint64)
    v = (left << np.uint64(rb)) | right
    return v if f64 else (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def dec_fsst(n, ctx):
    nsym, raw_bytes = n.params
    table, codes = bytes(n.bufs[0]), bytes(n.bufs[1])
    if not 0 <= nsym <= 255 or not 0 <= raw_bytes <= 2 ** 32 or raw_bytes > 16 * len(codes):
        raise SpecError(f"fsst node at byte {n.offset}: symbols {nsym}, raw_bytes {raw_bytes}")
    lens = list(table[:nsym])
    if len(table) != nsym + sum(lens) or any(not 1 <= x <= 16 for x in lens):
        raise SpecError(f"fsst node at byte {n.offset}: symbol table of {len(table)} bytes")
    offs = decode(expect_child(n, 0, T_U64, n.count + 1), ctx).astype(np.int64)
    if len(offs) and (np.any(offs[1:] < offs[:-1]) or offs[-1] > len(codes) or offs[0] < 0):
        raise SpecError(f"fsst node at byte {n.offset}: offsets decrease or pass the codes")
    if n.count == 0:
        return []
    lo, hi = int(offs[0]), int(offs[-1])
    stream = np.frombuffer(codes, np.uint8)[lo:hi].astype(np.int64)
    # Which bytes are escapes (255 not itself the literal of an escape): in a
    # run of 255s the first is an escape (the byte before it is not a 255,
    # or it is the literal of one), then they alternate.
    is255 = stream == 255
    run_start = np.zeros(len(stream), np.int64)
    idx = np.arange(len(stream))
    starts = is255 & np.concatenate([[True], ~is255[:-1]])
    run_start[starts] = idx[starts]
    run_start = np.maximum.accumulate(np.where(is255, run_start, 0))
    escape = is255 & ((idx - run_start) % 2 == 0)
    literal = np.concatenate([[False], escape[:-1]])
    bad = ~escape & ~literal & (stream >= nsym)
    if np.any(bad):
        raise SpecError(f"fsst node at byte {n.offset}: code {int(stream[bad][0])} with "
                        f"{nsym} symbols")
    # An escape must have its literal inside the same value.
    value_last = offs[1:] - 1 - lo
    nonempty = offs[1:] > offs[:-1]
    if np.any(escape[value_last[nonempty]]):
        raise SpecError(f"fsst node at byte {n.offset}: escape at the end of a value")
    # The pool: the symbols' bytes, then the 256 literal bytes.
    sym_bytes = table[nsym:]
    sym_start = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    pool = np.frombuffer(sym_bytes + bytes(range(256)), np.uint8)
    sym_len = np.array(lens + [0] * (256 - nsym), np.int64)
    sym_at = np.concatenate([sym_start[:nsym], np.zeros(256 - nsym, np.int64)])
    out_len = np.where(escape, 0, np.where(literal, 1, sym_len[stream]))
    src = np.where(literal, len(sym_bytes) + stream, sym_at[stream])
    out_start = np.concatenate([[0], np.cumsum(out_len)])
    total = int(out_start[-1])
    gather = np.repeat(src - out_start[:-1], out_len) + np.arange(total)
    data = pool[gather].tobytes()
    value_offs = out_start[offs - lo].tolist()
    return [data[value_offs[i]:value_offs[i + 1]] for i in range(n.count)]


def frame_bound(n, m):
    if n.type == T_BOOL:
        p = ceil_div(m, 8)
    elif n.type == T_BINARY:
        p = 2 ** 32
    else:
        p = m * type_width(n.type, n.width)
    return p + p // 2 + 65536 + 16 * m


def concat(n, parts):
    if n.type in WORD_WIDTH:
        return np.concatenate(parts) if parts else empty_values(n)
    if n.type == T_BOOL:
        return np.concatenate(parts) if parts else empty_values(n)
    out = []
    for p in parts:
        out.extend(p)
    return out


def frame_entries(n):
    """The frame table of a zstd, lz4 or ans node (sections 5.5.13, 5.5.17):
    a list of (end, raw, first value, value end), and the compressed frames."""
    frame_values = n.params[0]
    if not 1 <= frame_values <= 2 ** 31 - 1:
        raise SpecError(f"{n.name} node at byte {n.offset}: frame_values {frame_values}")
    table, frames = bytes(n.bufs[0]), bytes(n.bufs[1])
    entries = []  # (end, raw, first value, value end)
    if len(n.params) == 1:  # fixed frames
        nf = ceil_div(n.count, frame_values)
        if len(table) != 16 * nf:
            raise SpecError(f"{n.name} node at byte {n.offset}: frame table {len(table)} bytes")
        for f in range(nf):
            end, raw = struct.unpack_from("<QQ", table, 16 * f)
            entries.append((end, raw, f * frame_values,
                            min(n.count, (f + 1) * frame_values)))
    else:
        if n.params[1] != 1:
            raise SpecError(f"{n.name} node at byte {n.offset}: layout {n.params[1]}")
        if len(table) % 24:
            raise SpecError(f"{n.name} node at byte {n.offset}: frame table {len(table)} bytes")
        nf = len(table) // 24
        if (nf == 0) != (n.count == 0):
            raise SpecError(f"{n.name} node at byte {n.offset}: {nf} frames, {n.count} values")
        prev = 0
        for f in range(nf):
            end, raw, vend = struct.unpack_from("<QQQ", table, 24 * f)
            if vend <= prev or vend - prev > frame_values:
                raise SpecError(f"{n.name} node at byte {n.offset}: frame {f} value end {vend}")
            entries.append((end, raw, prev, vend))
            prev = vend
        if nf and prev != n.count:
            raise SpecError(f"{n.name} node at byte {n.offset}: frames end at {prev}")
    return entries, frames


def dec_general(n, ctx):
    entries, frames = frame_entries(n)
    parts = [decode(root, ctx) for root in frame_roots(n, entries, frames)]
    return concat(n, parts)


def frame_roots(n, entries, frames):
    """Decompresses and parses each frame of a zstd, lz4 or ans node
    (sections 5.5.13, 5.5.17)."""
    # The plausibility bound of raw[f] against clen: as zstd's for ans.
    per_byte = 256 if n.enc == 14 else 65536
    prev_end = 0
    for f, (end, raw, first, vend) in enumerate(entries):
        m = vend - first
        if not prev_end <= end <= len(frames):
            raise SpecError(f"{n.name} node at byte {n.offset}: frame {f} ends at {end}")
        clen = end - prev_end
        if raw < 8 or raw % 8 or raw > frame_bound(n, m) or \
                raw > clen * per_byte + 65536:
            raise SpecError(f"{n.name} node at byte {n.offset}: frame {f} raw size {raw}")
        comp = frames[prev_end:end]
        prev_end = end
        if n.enc == 18:
            plain = ans_decode_block(comp, raw, f"ans node at byte {n.offset}: frame {f}")
        elif n.enc == 13:
            if zstandard is None:
                raise NotImplementedError("zstd frames need the zstandard module")
            declared = zstandard.frame_content_size(comp)
            if declared != raw:
                raise SpecError(f"zstd node at byte {n.offset}: frame {f} declares {declared} "
                                f"bytes, the table {raw}")
            plain = zstandard.ZstdDecompressor().decompress(comp, max_output_size=raw)
        else:
            if lz4_block is None:
                raise NotImplementedError("lz4 frames need the lz4 module")
            plain = lz4_block.decompress(comp, uncompressed_size=raw)
        if len(plain) != raw:
            raise SpecError(f"{n.name} node at byte {n.offset}: frame {f} gave {len(plain)} "
                            f"bytes, not {raw}")
        root = parse_node(plain, 0, raw, n.depth + 1)
        if root.type != n.type or root.count != m or (n.type == T_FIXED and
                                                     root.width != n.width):
            raise SpecError(f"{n.name} node at byte {n.offset}: frame {f}'s root is type "
                            f"{root.type} of {root.count} values, expected {m}")
        yield root


ANS_M = 4096       # 5.5.17: the frequencies sum to 2^12
ANS_L = 1 << 16    # the states' lower bound, and every state's final value
ANS_LANES = 8      # interleaved states: byte i is decoded by state i mod 8


def ans_read_table(block, what):
    """Section 5.5.17: a coded block's symbols and frequencies, from byte 1
    on. Returns (symbols, frequencies, position after the table)."""
    end = len(block)
    pos = 1
    if pos >= end:
        raise SpecError(f"{what}: coded ans block ends before its symbol count")
    nsym = block[pos] + 1
    pos += 1
    if nsym < 32:
        if pos + nsym > end:
            raise SpecError(f"{what}: ans symbol list of {nsym} runs past the block's "
                            f"{end} bytes")
        syms = list(block[pos:pos + nsym])
        pos += nsym
        for a, b in zip(syms, syms[1:]):
            if b <= a:
                raise SpecError(f"{what}: ans symbols not strictly increasing ({a}, then {b})")
    else:
        if pos + 32 > end:
            raise SpecError(f"{what}: ans symbol bitmap runs past the block's {end} bytes")
        bitmap = block[pos:pos + 32]
        pos += 32
        syms = [s for s in range(256) if bitmap[s >> 3] >> (s & 7) & 1]
        if len(syms) != nsym:
            raise SpecError(f"{what}: ans symbol bitmap has {len(syms)} bits set for "
                            f"{nsym} symbols")
    freqs = []
    for s in syms:
        if pos >= end:
            raise SpecError(f"{what}: ans frequency table runs past the block's {end} bytes")
        v = block[pos]
        pos += 1
        if v & 0x80:
            if pos >= end:
                raise SpecError(f"{what}: ans frequency table runs past the block's "
                                f"{end} bytes")
            v = (v & 0x7F) | block[pos] << 7
            pos += 1
            if v < 128:
                # The text: one byte when f_s < 128, otherwise two.
                raise SpecError(f"{what}: ans frequency {v} of symbol {s} in two bytes")
        if v < 1:
            raise SpecError(f"{what}: ans frequency 0 for symbol {s}")
        freqs.append(v)
    total = sum(freqs)
    if total != ANS_M:
        raise SpecError(f"{what}: ans frequencies sum to {total}, not {ANS_M}")
    return syms, freqs, pos


def ans_decode_block(block, n, what="block"):
    """Decodes one ans block (section 5.5.17) to exactly n bytes; raises
    SpecError on everything the section calls corrupt."""
    block = bytes(block)
    if not block:
        raise SpecError(f"{what}: empty ans block")
    kind = block[0]
    if kind == 0:
        if len(block) != n + 1:
            raise SpecError(f"{what}: stored ans block of {len(block)} bytes for {n} bytes "
                            f"(must be {n + 1})")
        return block[1:]
    if kind not in (1, 2):
        raise SpecError(f"{what}: ans block kind {kind} (0 stored, 1 coded, 2 coded wide)")
    lanes = ANS_LANES if kind == 1 else 32  # kind 2: 32 states (format 6.0)
    syms, freqs, pos = ans_read_table(block, what)
    if pos + 4 * lanes > len(block):
        raise SpecError(f"{what}: ans states run past the block's {len(block)} bytes")
    x = list(struct.unpack_from(f"<{lanes}I", block, pos))
    pos += 4 * lanes
    for j, v in enumerate(x):
        if v < ANS_L:
            raise SpecError(f"{what}: ans state {j} is {v}, below 2^16")
    stream = block[pos:]
    if len(stream) % 2:
        raise SpecError(f"{what}: ans stream of {len(stream)} bytes, not an even number")
    words = struct.unpack(f"<{len(stream) // 2}H", stream)
    nwords = len(words)
    # slot -> symbol s with cum_s <= slot < cum_s + f_s, f_s, and slot - cum_s
    sym_of, freq_of, bias_of = [], [], []
    for s, fs in zip(syms, freqs):
        sym_of.extend([s] * fs)
        freq_of.extend([fs] * fs)
        bias_of.extend(range(fs))
    out = bytearray(n)
    w = 0
    for i in range(n):
        j = i % lanes
        v = x[j]
        slot = v & 0xFFF  # x mod 4096
        out[i] = sym_of[slot]
        v = freq_of[slot] * (v >> 12) + bias_of[slot]
        if v < ANS_L:  # one word always lifts it: v >= 16 f_s here
            if w >= nwords:
                raise SpecError(f"{what}: ans stream of {nwords} words ends at byte {i} "
                                f"of {n}")
            v = v << 16 | words[w]
            w += 1
        x[j] = v
    if w != nwords:
        raise SpecError(f"{what}: ans stream has {nwords - w} of {nwords} words left after "
                        f"the last byte")
    for j, v in enumerate(x):
        if v != ANS_L:
            raise SpecError(f"{what}: ans state {j} ends at {v}, not 2^16")
    return bytes(out)


def dec_patched(n, ctx):
    e = n.children[1].count
    if e > n.count:
        raise SpecError(f"patched node at byte {n.offset}: {e} positions for {n.count}")
    base = decode(same_type_child(n, 0, n.count), ctx).copy()
    pos = decode(expect_child(n, 1, T_U32, e), ctx).astype(np.int64)
    check_positions(n, pos, n.count, "positions")
    base[pos] = decode(same_type_child(n, 2, e), ctx)
    return base


ZSTD_DICT_MAGIC = 0xEC30A437


def check_zstd_frame_header(n, f, comp, dictionary_id):
    """Section 5.5.15: zstd_dict frames carry no dictionary id and no content
    checksum (RFC 8878 3.1.1.1: magic, then the frame header descriptor whose
    bits 0-1 are the dictionary id size and bit 2 the checksum flag)."""
    if len(comp) < 5 or struct.unpack_from("<I", comp)[0] != 0xFD2FB528:
        raise SpecError(f"{n.name} node at byte {n.offset}: frame {f} is not a zstd frame")
    fhd = comp[4]
    if not dictionary_id and (fhd & 3 or fhd & 4):
        raise SpecError(f"{n.name} node at byte {n.offset}: frame {f} carries a dictionary "
                        f"id or a checksum (descriptor {fhd:#04x})")


def dec_zstd_dict(n, ctx):
    if zstandard is None:
        raise NotImplementedError("zstd_dict frames need the zstandard module")
    dict_bytes, table, frames = (bytes(b) for b in n.bufs)
    lens = decode(expect_child(n, 0, T_U32, n.count), ctx).astype(np.int64)
    if len(table) % 8:
        raise SpecError(f"zstd_dict node at byte {n.offset}: frame table {len(table)} bytes")
    nf = len(table) // 8
    if (nf == 0) != (n.count == 0):
        raise SpecError(f"zstd_dict node at byte {n.offset}: {nf} frames, {n.count} values")
    if dict_bytes:
        kind = zstandard.DICT_TYPE_FULLDICT if \
            struct.unpack_from("<I", dict_bytes)[0] == ZSTD_DICT_MAGIC and len(dict_bytes) >= 4 \
            else zstandard.DICT_TYPE_RAWCONTENT
        zdict = zstandard.ZstdCompressionDict(dict_bytes, dict_type=kind)
        dctx = zstandard.ZstdDecompressor(dict_data=zdict)
    else:
        dctx = zstandard.ZstdDecompressor()
    entries = [struct.unpack_from("<II", table, 8 * f) for f in range(nf)]
    prev_end = prev_vend = 0
    for f, (end, vend) in enumerate(entries):
        if end < prev_end or vend <= prev_vend or vend - prev_vend > 2 ** 20:
            raise SpecError(f"zstd_dict node at byte {n.offset}: frame {f} table entry")
        prev_end, prev_vend = end, vend
    if nf and (prev_end != len(frames) or prev_vend != n.count):
        raise SpecError(f"zstd_dict node at byte {n.offset}: frames end at {prev_end} bytes, "
                        f"{prev_vend} values")
    out = []
    prev_end = prev_vend = 0
    for f, (end, vend) in enumerate(entries):
        flens = lens[prev_vend:vend]
        raw = int(flens.sum())
        comp = frames[prev_end:end]
        clen = end - prev_end
        if raw > 2 ** 32 or raw > clen * 65536 + 65536 or (raw == 0) != (clen == 0):
            raise SpecError(f"zstd_dict node at byte {n.offset}: frame {f} of {clen} bytes "
                            f"for {raw}")
        if raw:
            check_zstd_frame_header(n, f, comp, dictionary_id=False)
            declared = zstandard.frame_content_size(comp)
            if declared != raw:
                raise SpecError(f"zstd_dict node at byte {n.offset}: frame {f} declares "
                                f"{declared} bytes, the lengths {raw}")
            plain = dctx.decompress(comp, max_output_size=raw)
            if len(plain) != raw:
                raise SpecError(f"zstd_dict node at byte {n.offset}: frame {f} gave "
                                f"{len(plain)} bytes")
        else:
            plain = b""
        at = 0
        for length in flens.tolist():
            out.append(plain[at:at + length])
            at += length
        prev_end, prev_vend = end, vend
    return out


def dec_relative(n, ctx):
    ref = n.params[0]
    if not 0 <= ref < 1_000_000:
        raise SpecError(f"relative node at byte {n.offset}: ref {ref}")
    if n.depth != 0:
        raise SpecError(f"relative node at byte {n.offset}: not the segment's root")
    if ctx.reference is None:
        raise SpecError(f"relative node at byte {n.offset}: no reference for node {ref}")
    reference = ctx.reference(ref, n)
    diffs = decode(same_type_child(n, 0, n.count), ctx)
    return (reference + diffs).astype(diffs.dtype)


def dec_bucket(n, ctx):
    """Section 5.5.18: a token per value (child 0) and the extra bits its
    token leaves open, vector by vector from the starts (child 1)."""
    width = WORD_WIDTH[n.type]
    bits_total, m = 8 * width, n.params[0]
    ntok = (1 << (m + 1)) + (bits_total - m - 1) * (1 << m) if 0 <= m <= 3 else 0
    if not 0 <= m <= 3 or m + 1 > bits_total or ntok > 256:
        raise SpecError(f"bucket node at byte {n.offset}: m = {m} for {bits_total}-bit values")
    nvec = ceil_div(n.count, 1024)
    tok = decode(expect_child(n, 0, T_U8, n.count), ctx).astype(np.int64)
    starts = [int(x) for x in decode(expect_child(n, 1, T_U64, nvec + 1), ctx)]
    buf = n.bufs[0]
    if starts[0] != 0 or any(b < a for a, b in zip(starts, starts[1:])) or \
            starts[-1] > 8 * len(buf):
        raise SpecError(f"bucket node at byte {n.offset}: starts {starts[:4]}... over a "
                        f"{len(buf)}-byte buffer")
    if n.count and int(tok.max()) >= ntok:
        raise SpecError(f"bucket node at byte {n.offset}: token {int(tok.max())} of {ntok}")
    direct = 1 << (m + 1)
    big = tok >= direct
    j = np.where(big, tok - direct, 0)
    e = np.where(big, (j >> m) + 1, 0)
    high = np.where(big, ((1 << m) + (j & ((1 << m) - 1))), tok).astype(np.uint64)
    stream = np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little").astype(np.uint64)
    out = np.zeros(n.count, np.uint64)
    for k in range(nvec):
        lo, hi = 1024 * k, min(n.count, 1024 * k + 1024)
        ek = e[lo:hi]
        if int(ek.sum()) != starts[k + 1] - starts[k]:
            raise SpecError(f"bucket node at byte {n.offset}: vector {k}'s tokens take "
                            f"{int(ek.sum())} bits, its starts {starts[k + 1] - starts[k]}")
        at = starts[k] + np.concatenate([[0], np.cumsum(ek)[:-1]]).astype(np.int64)
        extra = np.zeros(hi - lo, np.uint64)
        for q in range(int(ek.max()) if hi > lo else 0):
            has = ek > q
            extra[has] |= stream[at[has] + q] << np.uint64(q)
        out[lo:hi] = (high[lo:hi] << ek.astype(np.uint64)) | extra
    return out.astype(UDTYPE[width])


def dec_seqpack(n, ctx):
    """Section 5.5.19: values of w bits one after the other, from the low
    bits of each byte."""
    w = n.params[0]
    if w not in (1, 2, 4):
        raise SpecError(f"seqpack node at byte {n.offset}: w = {w}")
    buf = n.bufs[0]
    if len(buf) != ceil_div(n.count * w, 8):
        raise SpecError(f"seqpack node at byte {n.offset}: buffer {len(buf)} bytes, "
                        f"expected {ceil_div(n.count * w, 8)}")
    per = 8 // w
    b = np.frombuffer(buf, np.uint8).astype(np.uint64)
    i = np.arange(n.count, dtype=np.int64)
    v = (b[i // per] >> ((i % per) * w).astype(np.uint64)) & np.uint64((1 << w) - 1)
    return v.astype(UDTYPE[WORD_WIDTH[n.type]])


def dec_radix(n, ctx):
    """Section 5.5.20: groups of k base-b digits, the first value the least
    significant digit; groups below b^k, the last one's digits past the
    last value 0."""
    b, k = n.params
    if not 3 <= b <= 256 or k < 2 or b ** k > 65536:
        raise SpecError(f"radix node at byte {n.offset}: b = {b}, k = {k}")
    ng = ceil_div(n.count, k)
    g = decode(expect_child(n, 0, T_U16, ng), ctx).astype(np.int64)
    if ng and int(g.max()) >= b ** k:
        raise SpecError(f"radix node at byte {n.offset}: group {int(g.max())} >= {b}^{k}")
    last = n.count - (ng - 1) * k
    if ng and last < k and int(g[-1]) >= b ** last:
        raise SpecError(f"radix node at byte {n.offset}: digits past the last value")
    digits = (g[:, None] // (b ** np.arange(k, dtype=np.int64))[None, :]) % b
    return digits.reshape(-1)[:n.count].astype(UDTYPE[WORD_WIDTH[n.type]])


DECODERS = {1: dec_plain, 2: dec_constant, 3: dec_bitpack, 4: dec_for, 5: dec_delta,
            6: dec_zigzag, 7: dec_dict, 8: dec_rle, 9: dec_sparse, 10: dec_alp,
            11: dec_alp_rd, 12: dec_fsst, 13: dec_general, 14: dec_general,
            15: dec_patched, 16: dec_zstd_dict, 17: dec_relative, 18: dec_general,
            19: dec_bucket, 20: dec_seqpack, 21: dec_radix}


def decode_segment(data, kind, fixed_width, count, ctx=None):
    """Decodes one segment's bytes (an encoding tree whose root must match
    the footer's kind, fixed width and count, section 5.1)."""
    root = parse_node(data, 0, len(data), 0)
    ptype = KIND_TYPE.get(kind)
    if ptype is None:
        raise SpecError(f"segment: unknown value kind {kind}")
    if root.type != ptype or root.count != count or (ptype == T_FIXED and
                                                    root.width != fixed_width):
        raise SpecError(f"segment: root is type {root.type} of {root.count} values, the "
                        f"footer says kind {kind} ({count} values)")
    return decode(root, ctx or DecodeContext()), root


# ---------------------------------------------------------------- the file

class Field:
    """A schema field (section 4, section 2)."""

    def __init__(self, name, fmt, flags, metadata, children):
        self.name, self.format, self.flags = name, fmt, flags
        self.metadata, self.children = metadata, children
        self.node = None  # physical node number (pre-order, root excluded)


class Segment:
    __slots__ = ("role", "kind", "fixed_width", "count", "offset", "length", "checksum",
                 "first_block")


class Chunk:
    __slots__ = ("length", "null_count", "raw_bytes", "segments", "stats_flags", "min",
                 "max", "nan_count")


class RowGroup:
    __slots__ = ("rows", "offset", "length", "chunks", "first_row")


def parse_field(c, depth, counter):
    name = c.bytes_()
    if len(name) > 65536:
        raise SpecError("schema: field name over 65,536 bytes")
    fmt = c.bytes_().decode("utf-8")
    flags = c.varint()
    nmeta = c.varint()
    meta = [(c.bytes_(), c.bytes_()) for _ in range(nmeta)]
    nchildren = c.varint()
    counter[0] += 1
    if depth > 63:
        raise SpecError("schema: nested deeper than 63 levels")
    children = [parse_field(c, depth + 1, counter) for _ in range(nchildren)]
    return Field(name, fmt, flags, meta, children)


class QuiverFile:
    """A Quiver file read whole into memory and its footer parsed."""

    def __init__(self, path, verify=True):
        with open(path, "rb") as fh:
            self.data = fh.read()
        self.path = path
        self._parse_tail()
        self._parse_footer()
        if verify:
            self.verify_checksums()

    def _parse_tail(self):
        d = self.data
        if len(d) < 40:
            raise SpecError(f"{self.path}: {len(d)} bytes, too short for header and tail")
        off, length, checksum, major, minor, magic = struct.unpack_from("<QQQHH4s", d,
                                                                         len(d) - 32)
        if magic != MAGIC:
            raise SpecError(f"{self.path}: tail magic {magic!r}")
        if major not in range(1, 10):
            raise SpecError(f"{self.path}: format version {major}.{minor}; this reader reads "
                            "versions 1.x to 9.x only")
        if off < 8 or off + length + 32 != len(d) or length > 256 << 20:
            raise SpecError(f"{self.path}: footer at {off} of {length} bytes")
        if d[:4] != MAGIC:
            raise SpecError(f"{self.path}: header magic {d[:4]!r}")
        self.version = (major, minor)
        self.footer_offset, self.footer_length = off, length
        footer = d[off:off + length]
        if xxhash is not None and xxh3(footer) != checksum:
            raise SpecError(f"{self.path}: footer checksum mismatch")
        self.footer = footer

    def _parse_footer(self):
        c = Cursor(self.footer)
        sections = {}
        while c.pos < c.end:
            tag = c.varint()
            payload = c.bytes_()
            sections[tag] = payload
        if 2 not in sections or 4 not in sections:
            raise SpecError(f"{self.path}: footer lacks section 2 or 4")
        if self.version[0] >= 2 and 5 not in sections:
            raise SpecError(f"{self.path}: format {self.version[0]} footer lacks section 5")
        self.writer = sections.get(1, b"").decode("utf-8", "replace")
        self._parse_schema(sections[2])
        self.metadata = []
        if 3 in sections:
            m = Cursor(sections[3], what="file metadata")
            self.metadata = [(m.bytes_(), m.bytes_()) for _ in range(m.varint())]
        self._parse_row_groups(sections[4])
        self.block_shift = None
        if 5 in sections:
            self._parse_blocks(sections[5])

    def _parse_schema(self, payload):
        c = Cursor(payload, what="schema")
        node_count = c.varint()
        if node_count > 1_000_001:
            raise SpecError(f"schema: {node_count} nodes")
        counter = [0]
        self.root = parse_field(c, 0, counter)
        if counter[0] != node_count:
            raise SpecError(f"schema: {counter[0]} fields, header says {node_count}")
        self.nodes = []  # pre-order, root excluded
        self.parent = []

        def walk(field, parent):
            field.node = len(self.nodes)
            self.nodes.append(field)
            self.parent.append(parent)
            for ch in field.children:
                walk(ch, field.node)
        for col in self.root.children:
            walk(col, -1)
        self.columns = self.root.children

    def _parse_row_groups(self, payload):
        c = Cursor(payload, what="row groups")
        n_rg = c.varint()
        n_nodes = c.varint()
        if n_nodes != len(self.nodes):
            raise SpecError(f"row groups: {n_nodes} nodes, the schema has {len(self.nodes)}")
        if n_rg * 3 > len(payload):
            raise SpecError(f"row groups: {n_rg} row groups in {len(payload)} bytes")
        self.row_groups = []
        first = 0
        for _ in range(n_rg):
            rg = RowGroup()
            rg.rows, rg.offset, rg.length = c.varint(), c.varint(), c.varint()
            rg.first_row = first
            first += rg.rows
            if rg.offset < 8 or rg.offset + rg.length > self.footer_offset:
                raise SpecError(f"row group at {rg.offset}: outside the data")
            rg.chunks = []
            for _ in range(n_nodes):
                ch = Chunk()
                ch.length, ch.null_count, ch.raw_bytes = c.varint(), c.varint(), c.varint()
                nseg = c.varint()
                if nseg > 3:
                    raise SpecError(f"chunk: {nseg} segments")
                ch.segments = {}  # by role, in the order the footer lists them
                for _ in range(nseg):
                    s = Segment()
                    s.role, s.kind = c.u8(), c.u8()
                    s.fixed_width, s.count = c.varint(), c.varint()
                    s.offset, s.length = c.varint(), c.varint()
                    s.checksum = c.u64()
                    if s.role > 2 or s.role in ch.segments:
                        raise SpecError(f"chunk: segment role {s.role} repeated or unknown")
                    if s.offset < rg.offset or s.offset + s.length > rg.offset + rg.length:
                        raise SpecError(f"segment at {s.offset}: outside its row group")
                    ch.segments[s.role] = s
                ch.stats_flags = c.varint()
                ch.min = ch.max = ch.nan_count = None
                if ch.stats_flags & 1:
                    ch.min, ch.max = c.bytes_(), c.bytes_()
                if ch.stats_flags & 8:
                    ch.nan_count = c.varint()
                rg.chunks.append(ch)
            self.row_groups.append(rg)
        self.num_rows = first

    def segments_in_order(self):
        for rg in self.row_groups:
            for ch in rg.chunks:
                # Section 5: the block checksums follow the segments in the
                # order section 4 lists them (dicts keep insertion order).
                yield from ch.segments.values()

    def _parse_blocks(self, payload):
        c = Cursor(payload, what="block checksums")
        shift = c.varint()
        if not 10 <= shift <= 26:
            raise SpecError(f"block checksums: block_shift {shift}")
        self.block_shift = shift
        size = 1 << shift
        pos = c.pos
        for seg in self.segments_in_order():
            seg.first_block = pos
            pos += 8 * ceil_div(seg.length, size)
        if pos != len(payload):
            raise SpecError(f"block checksums: {len(payload) - c.pos} bytes for "
                            f"{pos - c.pos} bytes of checksums")
        self.block_payload = payload

    def verify_checksums(self):
        """Checks every segment's whole checksum and, from format 2.0 on,
        every block's. Returns the number of hashes compared (0 without
        the xxhash module)."""
        if xxhash is None:
            return 0
        checked = 0
        for seg in self.segments_in_order():
            data = self.data[seg.offset:seg.offset + seg.length]
            if xxh3(data) != seg.checksum:
                raise SpecError(f"segment at {seg.offset}: checksum mismatch")
            checked += 1
            if self.block_shift is not None:
                size = 1 << self.block_shift
                for b in range(ceil_div(seg.length, size)):
                    want = struct.unpack_from("<Q", self.block_payload, seg.first_block + 8 * b)[0]
                    if xxh3(data[b * size:(b + 1) * size]) != want:
                        raise SpecError(f"segment at {seg.offset}: block {b} checksum mismatch")
                    checked += 1
        return checked

    # -- decoding

    def check_layout(self):
        """Section 3: a row group's segments lie back to back, column by
        column, each node's in role order, 8-aligned, and fill the row
        group's byte range; section 4: row groups lie in [8, footer_offset).
        Returns the number of segments checked."""
        n = 0
        for g, rg in enumerate(self.row_groups):
            pos = rg.offset
            for node, ch in enumerate(rg.chunks):
                if list(ch.segments) != sorted(ch.segments):
                    raise SpecError(f"row group {g} node {node}: segments not in role order")
                for seg in ch.segments.values():
                    if seg.offset != pos or seg.offset % 8 or seg.length % 8:
                        raise SpecError(f"row group {g} node {node}: segment at {seg.offset} "
                                        f"(expected {pos}) of {seg.length} bytes")
                    pos += seg.length
                    n += 1
            if pos != rg.offset + rg.length:
                raise SpecError(f"row group {g}: segments end at {pos}, the row group at "
                                f"{rg.offset + rg.length}")
        return n

    def segment_bytes(self, seg):
        if seg.offset % 8 or seg.length % 8:
            raise SpecError(f"segment at {seg.offset}: offset or length not a multiple of 8")
        return self.data[seg.offset:seg.offset + seg.length]

    def decode_chunk_segment(self, rg_index, node, role):
        """Decodes segment `role` of `node`'s chunk in row group `rg_index`;
        None when the chunk has no such segment."""
        rg = self.row_groups[rg_index]
        seg = rg.chunks[node].segments.get(role)
        if seg is None:
            return None
        ctx = DecodeContext(reference=lambda ref, n: self._reference(rg_index, node, ref, n))
        values, _ = decode_segment(self.segment_bytes(seg), seg.kind, seg.fixed_width,
                                   seg.count, ctx)
        return values

    def _reference(self, rg_index, node, ref, rel_node):
        """The reference of a relative node (section 5.5.16)."""
        if ref >= len(self.nodes) or self.parent[ref] != -1 or ref == node:
            raise SpecError(f"relative node of node {node}: reference {ref} is not another "
                            "top-level column")
        if self.parent[node] != -1:
            raise SpecError(f"relative node of node {node}: not a top-level column")
        rg = self.row_groups[rg_index]
        mine = rg.chunks[node].segments[2]
        seg = rg.chunks[ref].segments.get(2)
        if seg is None or seg.kind != mine.kind or seg.fixed_width != mine.fixed_width or \
                seg.count != mine.count:
            raise SpecError(f"relative node of node {node}: reference {ref} has no matching "
                            "values segment")
        data = self.segment_bytes(seg)
        if data[:1] == bytes([17]):
            raise SpecError(f"relative node of node {node}: reference {ref} is relative")
        values, _ = decode_segment(data, seg.kind, seg.fixed_width, seg.count,
                                   DecodeContext())
        return values

    def encoding_tree(self, rg_index, node, role=2):
        seg = self.row_groups[rg_index].chunks[node].segments.get(role)
        if seg is None:
            return None
        return parse_node(self.segment_bytes(seg), 0, seg.length, 0).describe()

    def column(self, name_or_index):
        """The top-level column as one pyarrow array."""
        import pyarrow as pa
        if isinstance(name_or_index, int):
            field = self.columns[name_or_index]
        else:
            field = next(f for f in self.columns if f.name == name_or_index.encode())
        parts = [self.column_chunk(i, field) for i in range(len(self.row_groups))]
        if not parts:
            return pa.array([], type=arrow_type(field))
        return pa.concat_arrays(parts)

    def column_chunk(self, rg_index, field):
        """One row group of a top-level column as a pyarrow array."""
        return self.node_array(rg_index, field, self.row_groups[rg_index].rows)

    def node_array(self, rg_index, field, slots):
        """Node `field`'s chunk in a row group, with `slots` slots (section 2,
        "Lengths"), and its subtree, as a pyarrow array."""
        import pyarrow as pa
        typ = arrow_type(field)
        ch = self.row_groups[rg_index].chunks[field.node]
        if ch.length != slots:
            raise SpecError(f"column {field.name!r}: chunk of {ch.length} slots, its parent "
                            f"gives it {slots}")
        if pa.types.is_null(typ):
            if ch.segments:
                raise SpecError(f"column {field.name!r}: a null node with segments")
            return pa.nulls(slots)
        validity = self.decode_chunk_segment(rg_index, field.node, 0)
        if (validity is None) != (ch.null_count == 0):
            raise SpecError(f"column {field.name!r}: validity segment and null count "
                            f"{ch.null_count} disagree")
        vbuf = None
        if validity is not None:
            if len(validity) != slots or int(slots - validity.sum()) != ch.null_count:
                raise SpecError(f"column {field.name!r}: validity of {len(validity)} slots, "
                                f"{slots - validity.sum()} nulls, footer says {ch.null_count}")
            vbuf = pa.py_buffer(np.packbits(validity, bitorder="little").tobytes())
        fmt = field.format
        if fmt == "+s":
            if 2 in ch.segments or 1 in ch.segments:
                raise SpecError(f"column {field.name!r}: a struct node with values or offsets")
            children = [self.node_array(rg_index, c, slots) for c in field.children]
            return pa.Array.from_buffers(typ, slots, [vbuf], children=children)
        if fmt in ("+l", "+L", "+m"):
            offs = self.decode_chunk_segment(rg_index, field.node, 1)
            if offs is None or len(offs) != slots + 1:
                raise SpecError(f"column {field.name!r}: offsets segment missing or short")
            signed = offs.view(np.int64 if fmt == "+L" else np.int32)
            if np.any(signed[1:] < signed[:-1]) or signed[0] < 0:
                raise SpecError(f"column {field.name!r}: list offsets decrease")
            child = self.node_array(rg_index, field.children[0], int(signed[-1]))
            return pa.Array.from_buffers(typ, slots, [vbuf, pa.py_buffer(offs.tobytes())],
                                         children=[child])
        if fmt.startswith("+w:"):
            child = self.node_array(rg_index, field.children[0], int(fmt[3:]) * slots)
            return pa.Array.from_buffers(typ, slots, [vbuf], children=[child])
        values = self.decode_chunk_segment(rg_index, field.node, 2)
        if values is None or len(values) != slots:
            raise SpecError(f"column {field.name!r}: values segment missing or short")
        return to_arrow(typ, values, vbuf, slots)


def arrow_field(field):
    import pyarrow as pa
    return pa.field(field.name.decode("utf-8", "surrogateescape"), arrow_type(field),
                    nullable=bool(field.flags & 1))


def arrow_type(field):
    """The pyarrow type of a field from its format string (section 2)."""
    import pyarrow as pa
    f = field.format
    simple = {"n": pa.null(), "b": pa.bool_(), "c": pa.int8(), "s": pa.int16(),
              "i": pa.int32(), "l": pa.int64(), "C": pa.uint8(), "S": pa.uint16(),
              "I": pa.uint32(), "L": pa.uint64(), "e": pa.float16(), "f": pa.float32(),
              "g": pa.float64(), "u": pa.string(), "z": pa.binary(), "U": pa.large_string(),
              "Z": pa.large_binary(), "tdD": pa.date32()}
    if f in simple:
        return simple[f]
    if f.startswith("ts") and len(f) >= 4 and f[3] == ":":
        return pa.timestamp({"s": "s", "m": "ms", "u": "us", "n": "ns"}[f[2]], f[4:] or None)
    if f.startswith("d:"):
        parts = f[2:].split(",")
        if len(parts) == 3 and parts[2] != "128":
            raise NotImplementedError(f"column {field.name!r}: decimal format {f!r} is not "
                                      "in the spec's type table")
        return pa.decimal128(int(parts[0]), int(parts[1]))
    if f.startswith("w:"):
        return pa.binary(int(f[2:]))
    if f == "+s":
        return pa.struct([arrow_field(c) for c in field.children])
    if f in ("+l", "+L", "+m") or f.startswith("+w:"):
        if len(field.children) != 1:
            raise SpecError(f"column {field.name!r}: {f!r} with {len(field.children)} children")
        child = field.children[0]
        if f == "+l":
            return pa.list_(arrow_field(child))
        if f == "+L":
            return pa.large_list(arrow_field(child))
        if f.startswith("+w:"):
            return pa.list_(arrow_field(child), int(f[3:]))
        if child.format != "+s" or len(child.children) != 2 or child.flags & 1:
            raise SpecError(f"column {field.name!r}: a map's entries are not a non-nullable "
                            "struct of two fields")
        key, item = child.children
        return pa.map_(arrow_field(key), arrow_field(item), keys_sorted=bool(field.flags & 2))
    if f.startswith("+"):
        raise NotImplementedError(f"column {field.name!r}: format {f!r} is not in the spec's "
                                  "type table (docs/format.md section 2)")
    raise NotImplementedError(f"column {field.name!r}: format {f!r} is not in the spec's "
                              "type table (docs/format.md section 2)")


def to_arrow(typ, values, vbuf, n):
    import pyarrow as pa
    if pa.types.is_boolean(typ):
        data = np.packbits(values.astype(bool), bitorder="little").tobytes()
        return pa.Array.from_buffers(typ, n, [vbuf, pa.py_buffer(data)])
    if pa.types.is_decimal(typ):
        if typ.precision <= 18:
            lo = values.astype(np.uint64)
            hi = np.where(lo >> np.uint64(63), np.uint64(2 ** 64 - 1), np.uint64(0))
            data = np.stack([lo, hi], axis=1).astype("<u8").tobytes()
        else:
            data = b"".join(values)
        return pa.Array.from_buffers(typ, n, [vbuf, pa.py_buffer(data)])
    if pa.types.is_fixed_size_binary(typ):
        return pa.Array.from_buffers(typ, n, [vbuf, pa.py_buffer(b"".join(values))])
    if pa.types.is_string(typ) or pa.types.is_binary(typ) or \
            pa.types.is_large_string(typ) or pa.types.is_large_binary(typ):
        large = pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)
        lengths = np.fromiter((len(v) for v in values), np.int64, count=n)
        offs = np.concatenate([[0], np.cumsum(lengths)])
        if not large and offs[-1] > 2 ** 31 - 1:
            raise OverflowError("binary data past 2^31 - 1 bytes")
        offs = offs.astype(np.int64 if large else np.int32)
        return pa.Array.from_buffers(typ, n, [vbuf, pa.py_buffer(offs.tobytes()),
                                              pa.py_buffer(b"".join(values))])
    # Fixed-width numbers, dates, timestamps, float16: the bit patterns are the data.
    width = typ.bit_width // 8
    if values.dtype.itemsize != width:
        raise SpecError(f"{typ}: decoded values of {values.dtype.itemsize} bytes")
    return pa.Array.from_buffers(typ, n, [vbuf, pa.py_buffer(values.tobytes())])


def open_file(path, verify=True):
    return QuiverFile(path, verify=verify)


def chunk_statistics(f, rg_index, field):
    """The chunk's statistics (section 4, "Statistics") as Python values:
    a dict with min, max (None when absent), min_truncated, max_truncated
    and nan_count. Integers, dates, timestamps and decimals of up to 18
    digits are ints (unscaled), floats are floats, bool is a bool, wider
    decimals an int, binary values bytes."""
    ch = f.row_groups[rg_index].chunks[field.node]
    out = {"min": None, "max": None, "min_truncated": bool(ch.stats_flags & 2),
           "max_truncated": bool(ch.stats_flags & 4), "nan_count": ch.nan_count}
    if not ch.stats_flags & 1:
        return out
    fmt = field.format

    def one(b):
        if fmt in ("f", "g"):
            if len(b) != 8:
                raise SpecError(f"column {field.name!r}: float statistic of {len(b)} bytes")
            return struct.unpack("<d", b)[0]
        if fmt == "b":
            if len(b) != 1 or b[0] > 1:
                raise SpecError(f"column {field.name!r}: bool statistic {b!r}")
            return bool(b[0])
        if fmt in ("u", "z", "U", "Z") or fmt.startswith("w:"):
            if len(b) > 64:
                raise SpecError(f"column {field.name!r}: binary statistic of {len(b)} bytes")
            return b
        if fmt.startswith("d:") and int(fmt[2:].split(",")[0]) > 18:
            if len(b) != 16:
                raise SpecError(f"column {field.name!r}: decimal statistic of {len(b)} bytes")
            return int.from_bytes(b, "little", signed=True)
        if len(b) != 8:
            raise SpecError(f"column {field.name!r}: statistic of {len(b)} bytes")
        return int.from_bytes(b, "little", signed=fmt not in ("C", "S", "I", "L"))
    out["min"], out["max"] = one(ch.min), one(ch.max)
    return out
