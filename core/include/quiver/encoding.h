/*
 * Quiver encoding: turns one column chunk's values into one self-describing
 * byte buffer, and decodes it back, whole or in part.
 *
 * The format layer hands over dense values (null slots hold any value; the
 * validity bitmap is encoded separately as a QV_KIND_BOOL chunk). qv_encode
 * picks an encoding tree with a sampling cascade (or the one forced in the
 * options) and writes it as one contiguous buffer that starts with the tree's
 * header: encoding id, value type, value count, parameters, buffer sizes and
 * child sizes, recursively. A reader needs only those bytes plus the logical
 * kind and count it recorded itself.
 *
 * Encodings (wire ids in enum qv_encoding never change): plain, constant,
 * bit-packing over 1024-value vectors in an interleaved lane layout,
 * frame-of-reference, delta with a base per 1024-value vector, zig-zag,
 * dictionary, run-end, sparse (fill value + exceptions), ALP and ALP-RD for
 * floating point, FSST for strings (symbols up to 16 bytes), zstd / lz4
 * over serialized subtrees in frames, and patched (bit-packing with
 * exceptions: a narrow base plus outliers' positions and values).
 *
 * Random access: every encoding decodes a row range touching only the
 * 1024-value vectors that hold it (run-end and sparse find their place by
 * binary search over run ends / positions kept by the decoder), except
 * zstd and lz4 nodes: their values are cut into frames (16384 values when
 * the cascade picks zstd for strings; the whole chunk in compact mode),
 * and a range decode decompresses every frame it touches. The decoder keeps
 * the last decompressed frame per node, so sequential scans and sorted
 * takes decompress each frame once.
 *
 * Hostile input: decoding never reads or writes out of bounds, never loops
 * beyond the declared counts, and checks every declared size against the
 * input length and the limits below before allocating. Corrupt bytes give
 * EIO with a message naming the encoding and the byte offset of the node in
 * the segment.
 *
 * Memory: every buffer is allocated through the accounting allocator and
 * charged to the reservation the caller passes (scratch included).
 */
#ifndef QUIVER_ENCODING_H
#define QUIVER_ENCODING_H

#include "quiver/base.h"
#include "quiver/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Logical kinds of values. Arrow mapping: date32/time32 -> INT32,
 * timestamp/date64/duration/time64 -> INT64, utf8/binary -> BINARY,
 * large_utf8/large_binary -> LARGE_BINARY, fixed_size_binary(w) and
 * decimal128 (w = 16) -> FIXED_BINARY, boolean and validity -> BOOL. */
enum qv_value_kind {
    QV_KIND_BOOL = 1,
    QV_KIND_INT8,
    QV_KIND_UINT8,
    QV_KIND_INT16,
    QV_KIND_UINT16,
    QV_KIND_INT32,
    QV_KIND_UINT32,
    QV_KIND_INT64,
    QV_KIND_UINT64,
    QV_KIND_FLOAT32,
    QV_KIND_FLOAT64,
    QV_KIND_BINARY,       /* int32 offsets + data */
    QV_KIND_LARGE_BINARY, /* int64 offsets + data */
    QV_KIND_FIXED_BINARY, /* fixed_width bytes per value */
};

/* Encoding ids, stored in files: never renumber. */
enum qv_encoding {
    QV_ENC_AUTO = 0, /* options only: let the cascade choose */
    QV_ENC_PLAIN = 1,
    QV_ENC_CONSTANT = 2,
    QV_ENC_BITPACK = 3,
    QV_ENC_FOR = 4,
    QV_ENC_DELTA = 5,
    QV_ENC_ZIGZAG = 6,
    QV_ENC_DICT = 7,
    QV_ENC_RLE = 8, /* run-end: run end positions + run values */
    QV_ENC_SPARSE = 9,
    QV_ENC_ALP = 10,
    QV_ENC_ALP_RD = 11,
    QV_ENC_FSST = 12,
    QV_ENC_ZSTD = 13,
    QV_ENC_LZ4 = 14,
    QV_ENC_PATCHED = 15, /* bit-packing with exceptions: base + patch positions and values */
    QV_ENC_ZSTD_DICT = 16, /* strings as zstd frames sharing a dictionary trained per chunk */
    /* A values segment stored as differences against the values segment
     * of another column of the same row group (docs/format.md 5.5.16):
     * only the writer builds it (forcing it through qv_encode is EINVAL),
     * and a decoder needs that column's decoder (qv_decoder_set_reference). */
    QV_ENC_RELATIVE = 17,
    /* Frames (as zstd's) of an order-0 rANS coder over bytes (docs/format.md
     * 5.5.17): the entropy stage's choice for skewed 8-bit residuals. */
    QV_ENC_ANS = 18,
    /* Integers as a one-byte magnitude token (a child, usually in ans
     * frames) and the low bits it leaves open (docs/format.md 5.5.18,
     * format 7.0): skewed values of more than 8 bits. */
    QV_ENC_BUCKET = 19,
    /* Integers of 1, 2 or 4 bits packed value after value (docs/format.md
     * 5.5.19, format 8.0): the entropy stage's layout for narrow residuals
     * inside zstd frames, where neighbouring values share a byte. */
    QV_ENC_SEQPACK = 20,
    /* Integers of b values (3 to 256) held k to a 16-bit group, as the
     * group's base-b digits (docs/format.md 5.5.20, format 9.0): ranges
     * that fill too little of a power of two for bit-packing's whole
     * bits (11 values: 3.5 bits a value against 4). */
    QV_ENC_RADIX = 21,
    QV_ENC_COUNT
};
#define QV_ENC_BIT(e) (UINT32_C(1) << (e))
/* Every encoding id (QV_ENC_AUTO excluded). */
#define QV_ENC_ALL_MASK ((QV_ENC_BIT(QV_ENC_COUNT) - 1) & ~QV_ENC_BIT(QV_ENC_AUTO))
/* The encodings that store values in frames decoded whole: a take of one
 * value decodes its frame (zstd, lz4 and ans: up to 16,384 values; zstd_dict:
 * 32 KiB of strings). Without them a value is reached by decoding the
 * 1,024-value vector holding it, beside a chunk's small tables (a
 * dictionary, a patch list) decoded once (qv_writer_options.random_access). */
#define QV_ENC_FRAMED_MASK                                                                  \
    (QV_ENC_BIT(QV_ENC_ZSTD) | QV_ENC_BIT(QV_ENC_LZ4) | QV_ENC_BIT(QV_ENC_ANS) |          \
     QV_ENC_BIT(QV_ENC_ZSTD_DICT))

/* Limits a chunk must respect, on encode and (as corruption checks) on
 * decode. */
#define QV_ENC_MAX_COUNT ((int64_t)INT32_MAX)          /* values per chunk */
#define QV_ENC_MAX_BYTES (UINT64_C(1) << 32)           /* decoded bytes per chunk */
#define QV_ENC_MAX_FIXED_WIDTH 4096                    /* FIXED_BINARY width */
#define QV_ENC_VECTOR 1024                             /* values per vector */
#define QV_ENC_DEFAULT_DEPTH 3

/* Name of an encoding ("bitpack", "dict", ...); "?" for an unknown id. */
QV_API const char *qv_encoding_name(int encoding);
/* Encoding id for a name, or -1. */
QV_API int qv_encoding_from_name(const char *name);
/* Name of a kind ("int32", "binary", ...); "?" for an unknown kind. */
QV_API const char *qv_value_kind_name(enum qv_value_kind kind);

/* A read-only view of one chunk's dense values. Nothing is owned; the
 * pointers must stay valid for the duration of the call they are passed to.
 *  - integers and floats: `values` holds count values of the kind's width,
 *    little-endian, aligned to that width;
 *  - BOOL: `values` is an LSB-first bitmap, values at bits
 *    [bit_offset, bit_offset + count);
 *  - BINARY / LARGE_BINARY: `values` holds count + 1 int32 / int64 offsets
 *    (non-decreasing, offsets[0] need not be 0) into `data`;
 *  - FIXED_BINARY: `values` holds count * fixed_width bytes. */
struct qv_values {
    enum qv_value_kind kind;
    int32_t fixed_width; /* FIXED_BINARY only */
    int64_t count;
    int64_t bit_offset; /* BOOL only */
    const void *values;
    const uint8_t *data; /* binary kinds only */
};

/* Where qv_encode_options.extremes reports a dictionary's ends (below). */
struct qv_encode_extremes {
    int found;
    int64_t min_row, max_row;
};

struct qv_encode_options {
    /* QV_ENC_AUTO: the cascade chooses. Otherwise the top-level encoding
     * (children are still chosen by the cascade); EINVAL if the encoding
     * cannot represent the kind or the data (constant on unequal values). */
    int force;
    /* Mask of QV_ENC_BIT(e) the cascade may use; 0 = every encoding. PLAIN
     * is always allowed (it is the last resort). */
    uint32_t allowed;
    /* Nonzero: size first. Decode costs weigh a tenth in the cascade's
     * scores, text may take zstd_dict (frames at level 15 sharing a
     * trained dictionary), bucket may sit below zig-zag, and zstd and lz4
     * are tried over the chosen tree (one frame), the smallest kept.
     * Without it the general-purpose codecs are used only when forced, or
     * for binary values where zstd, estimated on a sample, beats every
     * lightweight encoding by 20% beyond its decode cost (free text);
     * those are framed per 16384 values. */
    int compact;
    /* Nesting bound of the cascade; 0 = QV_ENC_DEFAULT_DEPTH. */
    int max_depth;
    /* zstd level; 0 = 1 (3 in compact mode). */
    int zstd_level;
    /* Optional, out. For BINARY, LARGE_BINARY and FIXED_BINARY input: when
     * the encoder built a dictionary over every value of the input (which
     * it does for low-cardinality strings, whatever encoding it keeps),
     * found = 1 and the rows of the smallest and the largest value (bytes
     * compared unsigned, a prefix before its extensions); found = 0
     * otherwise. A writer takes its string statistics from these instead
     * of a second pass over the strings. */
    struct qv_encode_extremes *extremes;
};

/* An encoded chunk. `data` is allocated from the reservation given to
 * qv_encode and owned by the caller; release it with qv_encoded_release.
 * `size` is a multiple of 8; `capacity` is the allocation size. */
struct qv_encoded {
    uint8_t *data;
    size_t size;
    size_t capacity;
};

/* Encodes one chunk. On success *out owns a new buffer (any previous content
 * of *out is ignored, not freed). On failure *out is zeroed and nothing is
 * left charged to `r`. `opts` may be NULL (all defaults). EINVAL for a bad
 * view (unknown kind, count beyond QV_ENC_MAX_COUNT, decreasing offsets) or
 * a forced encoding that cannot represent it; ENOMEM from the reservation. */
QV_API int qv_encode(const struct qv_values *in, const struct qv_encode_options *opts,
              struct qv_reservation *r, struct qv_encoded *out, struct qv_error *err);
/* Frees out->data (NULL-safe) and zeroes *out. */
QV_API void qv_encoded_release(struct qv_reservation *r, struct qv_encoded *out);

/* ---- Decoding ---- */

/* Where decoded values go. The decoder writes n values:
 *  - integers, floats, FIXED_BINARY: `values` receives n * width bytes; it
 *    is the caller's, aligned to the value width;
 *  - BOOL: bits [bit_offset, bit_offset + n) of the bitmap `values` are
 *    written; other bits are left alone;
 *  - binary kinds: `values` receives n + 1 int32 / int64 offsets, and the
 *    bytes are appended to `data` starting at data_size, so offsets[0] is
 *    the data_size on entry (chunks can be decoded back to back into one
 *    Arrow array). `data` is NULL or a block qv_alloc'ed from the decoder's
 *    reservation with size data_capacity; the decoder grows it with
 *    qv_realloc and updates data, data_capacity and data_size. The block
 *    stays the caller's, on failure too (release with qv_free(r, data,
 *    data_capacity)). Int32 offsets that would pass INT32_MAX give
 *    EOVERFLOW. */
struct qv_decode_out {
    void *values;
    int64_t bit_offset;
    uint8_t *data;
    size_t data_size;
    size_t data_capacity;
};

/* An open encoded chunk. It borrows the encoded bytes (they must outlive
 * it), keeps the parsed tree and, lazily, decoded dictionaries, run ends,
 * exception lists and decompressed zstd/lz4 subtrees, so repeated range
 * decodes and takes do not redo that work. One thread at a time. */
struct qv_decoder;

/* Parses and validates the tree in bytes[0, size) for `count` values of
 * `kind` (fixed_width for FIXED_BINARY). When `bytes` is not 8-byte aligned
 * the decoder works on an aligned copy. On success *out is the caller's;
 * release with qv_decoder_close. EIO for corrupt bytes, EINVAL for bad
 * arguments, ENOMEM from `r`. */
QV_API int qv_decoder_open(const void *bytes, size_t size, enum qv_value_kind kind,
                    int32_t fixed_width, int64_t count, struct qv_reservation *r,
                    struct qv_decoder **out, struct qv_error *err);
/* Frees the decoder and everything it holds (NULL-safe). */
QV_API void qv_decoder_close(struct qv_decoder *d);
/* Decodes values [start, start + n). EINVAL when the range is outside the
 * chunk. On failure the output may be partly written. */
QV_API int qv_decoder_decode_range(struct qv_decoder *d, int64_t start, int64_t n,
                            struct qv_decode_out *out, struct qv_error *err);
/* Decodes the values at rows[0..n) (sorted non-decreasing, each in
 * [0, count)) into consecutive output slots. EINVAL for unsorted or
 * out-of-range rows. */
QV_API int qv_decoder_take(struct qv_decoder *d, const int64_t *rows, int64_t n,
                    struct qv_decode_out *out, struct qv_error *err);
/* Bytes of decoder-held memory (tree, caches, scratch). */
QV_API uint64_t qv_decoder_memory(const struct qv_decoder *d);

/* ---- Chunks stored relative to another column (QV_ENC_RELATIVE) ----
 *
 * A relative chunk's value i is (the reference chunk's value i + its own
 * stored difference i), wrapping at the value width. The reference is the
 * values segment of another top-level column of the same row group, named
 * by its physical node number (docs/format.md section 2); the format layer
 * (the column reader) opens that segment and attaches its decoder. */

/* The physical node number of the column this decoder's chunk is stored
 * relative to, or -1 when the chunk is not relative. */
QV_API int64_t qv_decoder_reference_node(const struct qv_decoder *d);
/* Attaches `ref`, the decoder of the reference column's values segment of
 * the same row group, to the relative decoder `d`. Borrowed: `ref` must
 * stay open while `d` decodes, and is used from d's thread only. EINVAL
 * when d is not relative, or ref is NULL or d itself; EIO (corrupt) when
 * ref's kind, width or count differ from d's, or ref is itself relative
 * (the format allows no chains). Until a reference is attached, every
 * decode of a relative chunk fails with EINVAL naming the reference node;
 * nothing is read. */
QV_API int qv_decoder_set_reference(struct qv_decoder *d, struct qv_decoder *ref,
                                    struct qv_error *err);

/* One-shot full decode: open, decode [0, count), close. */
QV_API int qv_decode(const void *bytes, size_t size, enum qv_value_kind kind, int32_t fixed_width,
              int64_t count, struct qv_reservation *r, struct qv_decode_out *out,
              struct qv_error *err);

/* ---- Predicates on encoded values ----
 *
 * A comparison evaluated below decoding: bit-packed and frame-of-reference
 * values compare in the packed domain (the literal translated into it);
 * dictionaries evaluate the predicate once per entry and then select codes;
 * run-end once per run; constants once; sparse nodes on the fill value once
 * plus the exceptions; other integer trees decode one vector at a time into
 * scratch and compare in a tight loop; binary trees (FSST, plain, zstd)
 * compare EQ / NE / PREFIX on decoded bytes one vector at a time, without
 * building Arrow arrays. Which nodes take which path: docs in
 * core/src/encoding/filter.c. */

enum qv_enc_op {
    QV_ENC_OP_EQ = 0,
    QV_ENC_OP_NE,
    QV_ENC_OP_LT,
    QV_ENC_OP_LE,
    QV_ENC_OP_GT,
    QV_ENC_OP_GE,
    QV_ENC_OP_BETWEEN, /* lo <= v <= hi (both inclusive) */
    QV_ENC_OP_PREFIX,  /* binary kinds: value starts with bytes[0..len) */
    QV_ENC_OP_EVAL     /* only `eval` below: a predicate the encoding cannot translate */
};

/* Evaluates a predicate over values the decoder produced itself (a
 * dictionary's entries, the values of runs, a constant, a sparse node's
 * fill value and exceptions): bit i of out = predicate holds for value i of
 * `vals` (n = vals->count, vals->kind the chunk's kind; out has
 * ceil(n / 64) words, zeroed, the bits past n are ignored). Returns 0 or an
 * errno (then err is set); the filter returns that errno. */
typedef int (*qv_enc_eval_fn)(void *ctx, const struct qv_values *vals, uint64_t *out,
                              struct qv_error *err);

struct qv_enc_pred {
    int op; /* enum qv_enc_op */
    /* Signed integer kinds (INT8..INT64; decimals <= 18 digits and
     * timestamps are INT64, dates INT32); single comparisons use lo. */
    int64_t lo, hi;
    uint64_t ulo, uhi; /* unsigned kinds */
    const uint8_t *bytes; /* binary kinds: EQ / NE / PREFIX operand */
    size_t len;
    /* Optional; required for QV_ENC_OP_EVAL. When set, dictionary, run-end
     * and constant nodes may use it on their few values instead of op (e.g.
     * IN lists, floats, LT on strings). A decoder may keep the answers of
     * a dictionary's entries for the next call with the same eval and
     * eval_ctx: while it is open, one pair must mean one predicate. */
    qv_enc_eval_fn eval;
    void *eval_ctx;
};

/* Sets bit i of out (i in [0, n)) to whether value start + i satisfies
 * pred, for the rows whose bit is set in `sel` (NULL = all rows); bits of
 * rows not selected are 0 on return. `sel` and `out` are n-bit LSB-first
 * bitmaps in 64-bit words (bit i = word i/64, bit i%64); they may not
 * alias. Null slots hold whatever the writer stored there: the caller
 * masks validity. Vectors (1024 values) with no selected row are not
 * decoded. 0; ENOTSUP when this chunk's tree has no encoded-domain path
 * for this predicate (nothing is wrong: the caller decodes and compares);
 * EINVAL for bad arguments (range outside the chunk, op not valid for the
 * kind); EIO corrupt. */
QV_API int qv_decoder_filter(struct qv_decoder *d, int64_t start, int64_t n,
                             const struct qv_enc_pred *pred, const uint64_t *sel, uint64_t *out,
                             struct qv_error *err);

/* ---- Inspection (for `qv inspect`) ---- */

#define QV_ENC_MAX_PARAMS 8

struct qv_enc_node_info {
    int depth;             /* 0 at the root */
    const char *role;      /* role in the parent: "" (root), "codes", "values", ... */
    int encoding;          /* enum qv_encoding */
    const char *name;      /* qv_encoding_name(encoding) */
    const char *type;      /* "u8","u16","u32","u64","f32","f64","bool","binary","fixed" */
    uint32_t fixed_width;  /* for type "fixed" */
    int64_t count;         /* values in this node */
    uint64_t offset;       /* byte offset of the node: in the segment, or, when
                              compressed is nonzero, in the decompressed bytes of
                              the nearest zstd/lz4 ancestor */
    int compressed;        /* inside a zstd/lz4 subtree */
    uint64_t size;         /* encoded bytes including children */
    uint64_t own_size;     /* header and buffers, children excluded */
    int nparams;
    const char *param_names[QV_ENC_MAX_PARAMS];
    int64_t params[QV_ENC_MAX_PARAMS];
};

/* Called for each node in pre-order. Return nonzero to stop the walk (the
 * walk then returns that value). */
typedef int (*qv_enc_visit_fn)(void *ctx, const struct qv_enc_node_info *info);

/* Walks the tree in bytes[0, size). With a reservation, zstd/lz4 subtrees are
 * decompressed (charged to `r`, freed before returning) and walked too;
 * with r == NULL they appear as leaves. EIO for corrupt bytes. */
QV_API int qv_enc_walk(const void *bytes, size_t size, struct qv_reservation *r, qv_enc_visit_fn fn,
                void *ctx, struct qv_error *err);
/* Renders the tree compactly into buf (always NUL-terminated when cap > 0),
 * e.g. "dict(codes=bitpack(w=3),values=fsst(symbols=87,offsets=delta(...)))".
 * Returns 0, EIO for corrupt bytes, or EOVERFLOW when truncated. */
QV_API int qv_enc_describe(const void *bytes, size_t size, struct qv_reservation *r, char *buf,
                    size_t cap, struct qv_error *err);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_ENCODING_H */
