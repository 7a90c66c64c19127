/*
 * Private structures of the encoding part: physical value types, the
 * encoder-side tree (built in memory, then serialized), the decoder-side
 * parsed tree, memory helpers and each encoding's entry points.
 *
 * Serialized node (all integers little-endian; varints are LEB128, at most
 * 10 bytes; signed parameters are zig-zag varints):
 *
 *   u8  encoding id            (enum qv_encoding)
 *   u8  physical type          (enum qv__pt)
 *   varint width               (only for QV__PT_FIXED: bytes per value)
 *   varint count               (values in this node)
 *   u8  nparams, nparams x zig-zag varint
 *   u8  nbufs,   nbufs   x varint byte length
 *   u8  nchild,  nchild  x varint byte size (each a multiple of 8)
 *   zero padding to a multiple of 8
 *   buffers, each followed by zero padding to a multiple of 8
 *   children, in order
 *
 * A node's size is a multiple of 8 and is exactly the span its parent (or
 * the caller, for the root) gives it, so every buffer sits at an 8-byte
 * aligned offset from the segment start.
 */
#ifndef QV_ENC_INTERNAL_H
#define QV_ENC_INTERNAL_H

#include <string.h>

#include "base/varint.h"
#include "encoding/lesson.h"
#include "quiver/encoding.h"

/* Physical types of nodes. Integers are bit patterns of their width;
 * signedness is a property of the logical kind, not of the tree. */
enum qv__pt {
    QV__PT_U8 = 1,
    QV__PT_U16 = 2,
    QV__PT_U32 = 3,
    QV__PT_U64 = 4,
    QV__PT_F32 = 5,
    QV__PT_F64 = 6,
    QV__PT_BOOL = 7,
    QV__PT_BIN = 8,
    QV__PT_FIXED = 9,
};

#define QV__MAX_PARAMS 8
#define QV__MAX_BUFS 4
#define QV__MAX_CHILDREN 4
/* Deepest node of an encoding tree (root = 0, frame subtrees included):
 * docs/format.md section 5.2. Not the schema's nesting limit, which is
 * QV__MAX_NESTING (base/limits.h). */
#define QV__ENC_MAX_DEPTH 16
#define QV__VEC 1024
#define QV__VEC_SHIFT 10

static inline int qv__pt_is_int(int pt) { return pt >= QV__PT_U8 && pt <= QV__PT_U64; }
static inline int qv__pt_is_float(int pt) { return pt == QV__PT_F32 || pt == QV__PT_F64; }
/* Types whose values are 1/2/4/8-byte words (integers and floats). */
static inline int qv__pt_is_word(int pt) { return pt >= QV__PT_U8 && pt <= QV__PT_F64; }
/* Bytes per value of word types. */
static inline unsigned qv__pt_width(int pt) {
    static const unsigned w[] = {0, 1, 2, 4, 8, 4, 8, 0, 0, 0};
    return (pt >= 0 && pt <= 9) ? w[pt] : 0;
}
static inline int qv__pt_uint_of_width(unsigned w) {
    return w == 1 ? QV__PT_U8 : w == 2 ? QV__PT_U16 : w == 4 ? QV__PT_U32 : QV__PT_U64;
}
const char *qv__pt_name(int pt);

/* Index of the first of a[0..n) greater than key (run ends: the run that
 * holds row key). */
static inline int64_t qv__upper_bound32(const uint32_t *a, int64_t n, int64_t key) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        if ((int64_t)a[mid] <= key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Sign-extends the low `bits` bits of v. */
static inline int64_t qv__sext(uint64_t v, unsigned bits) {
    if (bits >= 64) return (int64_t)v;
    unsigned s = 64 - bits;
    return (int64_t)(v << s) >> s;
}
static inline uint64_t qv__mask(unsigned bits) {
    return bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
}
static inline unsigned qv__bits(uint64_t v) { return qv_bit_width64(v); }

/* ---- Tracked allocations ----
 * An arena that remembers each block it handed out, so a whole encode or an
 * open decoder frees everything at once (also on every error path), while
 * single blocks can still be released early. */
struct qv__mem {
    struct qv_reservation *r;
    struct qv__blk {
        void *p;
        size_t n;
    } *v;
    size_t len, cap;
    /* Bump region for qv__mem_small: a decoder's inline one, then 8 KiB
     * blocks of the arena. */
    uint8_t *slab;
    size_t slab_left;
};
void *qv__mem_alloc(struct qv__mem *m, size_t n, struct qv_error *err);
void *qv__mem_calloc(struct qv__mem *m, size_t n, struct qv_error *err);
/* Grows a block of this arena (or allocates when p is NULL). */
void *qv__mem_realloc(struct qv__mem *m, void *p, size_t old_n, size_t new_n,
                      struct qv_error *err);
void qv__mem_free(struct qv__mem *m, void *p);
/* A small zeroed block (parsed nodes, per-node caches) that lives until
 * qv__mem_free_all: never freed or grown on its own. Carved from the bump
 * region, so opening a decoder does not cost an allocation per node. */
void *qv__mem_small(struct qv__mem *m, size_t n, struct qv_error *err);
/* An array that lives until qv__mem_free_all: small ones from the bump
 * region (zeroed), larger ones a block of their own (not zeroed). */
void *qv__mem_buf(struct qv__mem *m, size_t n, struct qv_error *err);
void qv__mem_free_all(struct qv__mem *m);
uint64_t qv__mem_bytes(const struct qv__mem *m);

/* ---- Scratch stack ----
 * Temporaries with nested lifetimes (a vector being decoded while a child
 * decodes into another) come from a chunked stack charged to the
 * reservation. Release to a mark frees everything pushed after it. */
struct qv__stack_chunk;
struct qv__stack {
    struct qv_reservation *r;
    struct qv__stack_chunk *top;   /* chunk in use */
    struct qv__stack_chunk *spare; /* one kept chunk, so loops do not malloc */
    void *inline_buf;              /* caller memory for the first chunk, set up on */
    size_t inline_size;            /* first use (decodes that push nothing never touch it) */
};
struct qv__mark {
    struct qv__stack_chunk *chunk;
    size_t used;
};
void *qv__stack_push(struct qv__stack *s, size_t n, struct qv_error *err);
struct qv__mark qv__stack_mark(const struct qv__stack *s);
void qv__stack_release(struct qv__stack *s, struct qv__mark m);
void qv__stack_free(struct qv__stack *s);
/* Gives the stack a first chunk in caller memory (QV_ALIGNMENT aligned,
 * `size` bytes including the chunk header), never freed by the stack. */
void qv__stack_init_inline(struct qv__stack *s, void *buf, size_t size);
#define QV__STACK_CHUNK_HEADER QV_ALIGNMENT
uint64_t qv__stack_bytes(const struct qv__stack *s);

/* ---- Encoder-side tree ---- */
struct qv__enode {
    uint8_t enc, pt, nparams, nbufs, nchildren;
    uint32_t width; /* bytes per value (FIXED: its width; BOOL/BIN: 0) */
    int64_t count;
    int64_t params[QV__MAX_PARAMS];
    const uint8_t *buf[QV__MAX_BUFS]; /* owned by the arena, or borrowed input */
    uint64_t buf_len[QV__MAX_BUFS];
    struct qv__enode *child[QV__MAX_CHILDREN];
    uint64_t size; /* serialized size, set by qv__enode_finish */
};

/* zstd's allocations from an arena (zstd_mem.h): the arena, where an
 * allocation failure is recorded (NULL: nowhere), and whether one failed
 * (zstd reports only a NULL object or a memory_allocation error, which
 * for a dictionary also means bad bytes). */
struct qv__zmem {
    struct qv__mem *m;
    struct qv_error *err;
    int failed;
};

/* A zstd compression context kept across encodes: the writer keeps one per
 * encoding thread and lends it to each encode it runs (qv__encode_taught),
 * which then compresses through it instead of making its own. Making a
 * context and its first workspace cost 18-37 us a time (zstd 1.5.4, level
 * 3, 2-64 KiB inputs: 22.7 against 4.8 us for 2 KiB, 46.1 against 25.5 us
 * for 16 KiB), once per column chunk, more than a small table's trial
 * compressions themselves. The context and its workspace are blocks of
 * `mem`, charged to the cache's own reservation (qv__zcache_create, in
 * lesson.h); a failed compression frees them, so the next encode starts
 * from a new context. */
struct qv__zcache {
    void *cctx;
    struct qv__mem mem;
    struct qv__zmem zmem;
    struct qv_reservation *res;
};
/* Frees the context and its workspace; the cache stays usable. */
void qv__zcache_free(struct qv__zcache *z);

/* One qv_encode call. */
struct qv__enc {
    struct qv__mem mem;
    struct qv__stack stack;
    struct qv_reservation *r;
    struct qv_error *err;
    uint32_t allowed; /* mask, PLAIN always set */
    int max_depth;
    int compact;
    int zstd_level;
    /* Zig-zag nodes above the node being encoded (zigzag.c): below one,
     * the default mode does not propose bucket (cascade.c, add_bucket). */
    int under_zigzag;
    /* One zstd compression context for every plain zstd compression of
     * this encode (the cascade's trial compressions and the frames of zstd
     * nodes): the caller's (zcache, lent across encodes), else own_zc,
     * made at the first compression and freed by qv__enc_finish. A context
     * per call allocated and set up its tables again each time, which cost
     * more than compressing a 4-vector frame or a trial sample did. zstd's
     * output does not depend on what the context compressed before. own_zc's
     * context and workspace (570 KiB at level 1, 1.25 MiB at level 3 with
     * zstd 1.5.4, less while only small inputs came) are blocks of its arena,
     * on the encode's reservation; it has no reservation of its own. */
    struct qv__zcache own_zc;
    struct qv__zcache *zcache;
    /* The caller's qv_encode_options.extremes, and the input it is about:
     * set only by a dictionary over exactly these strings (root_data,
     * root_n) at depth 0. */
    struct qv_encode_extremes *extremes;
    const uint8_t *root_data;
    int64_t root_n;
    /* FSST's table for the root's strings (lesson.h): one to try before
     * training (or NULL), and where a root's training is reported (or
     * NULL). */
    const struct qv__lesson *lesson_use;
    struct qv__lesson *lesson_learn;
};

/* Creates a node in the encoder's arena. */
struct qv__enode *qv__enode_new(struct qv__enc *e, int enc, int pt, uint32_t width,
                                int64_t count);
/* Computes n->size from its header, buffers and children's sizes. */
void qv__enode_finish(struct qv__enode *n);
/* Serialized size of a header, buffers and children of this node. */
uint64_t qv__enode_header_size(const struct qv__enode *n);
/* Writes the subtree at out (n->size bytes; callers ensure room). */
void qv__enode_write(const struct qv__enode *n, uint8_t *out);
/* Frees the arena blocks the subtree owns (used when a candidate is
 * dropped; borrowed buffers are left alone). */
void qv__enode_drop(struct qv__enc *e, struct qv__enode *n);

static inline int qv__allowed(const struct qv__enc *e, int enc) {
    return (e->allowed >> enc) & 1;
}

/* Cascade entry points: choose and build an encoding for the given values.
 * `force` is QV_ENC_AUTO or an encoding to use at this node. `depth` is the
 * nesting level of the node (root = 0). Integer values come widened to
 * uint64 (bit patterns of `pt`'s width, zero-extended). */
int qv__cascade_int(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                    int force, struct qv__enode **out);
int qv__cascade_float(struct qv__enc *e, const void *v, int64_t n, int pt, int depth,
                      int force, struct qv__enode **out);
int qv__cascade_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int depth, int force,
                     struct qv__enode **out);
/* Binary values: off[0..n] relative offsets into data with off[0] == 0. */
int qv__cascade_bin(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                    int depth, int force, struct qv__enode **out);
int qv__cascade_fixed(struct qv__enc *e, const uint8_t *v, int64_t n, uint32_t width, int depth,
                      int force, struct qv__enode **out);

/* Statistics of an integer run, over all values (cheap, vectorizable) and
 * a sample (distinct count, most frequent value). */
struct qv__istats {
    int64_t n;
    unsigned bits; /* value width in bits */
    uint64_t umin, umax;
    int64_t smin, smax;
    /* From the sample (exact when it is all of the data): */
    int64_t dmin, dmax; /* signed deltas v[i]-v[i-1] at the value width */
    int64_t runs;       /* runs of equal values, scaled to n */
    int64_t max_run;    /* longest run */
    int64_t sample_n, sample_distinct;
    int64_t half_n, half_distinct; /* the same over the first half of the sample */
    /* Incidence over the sampled vectors: how many vectors were sampled,
     * and how many distinct values appeared in exactly one, and in
     * exactly two, of them. */
    int64_t sample_units, sample_q1, sample_q2;
    uint64_t top_value;
    int64_t top_count; /* occurrences of top_value in the sample */
};
void qv__istats_compute(const uint64_t *v, int64_t n, unsigned bits, struct qv__istats *s);
/* The sample's fields of s (after qv__istats_compute over the same values):
 * all of them (QV__SAMPLE_ALL), or, for a caller that only asks whether
 * the values repeat (the entropy stage below the cascade's depth),
 * sample_n, sample_distinct and the half counts alone (QV__SAMPLE_DISTINCT:
 * the others as for no repeats, deltas and runs unset). */
#define QV__SAMPLE_ALL 0
#define QV__SAMPLE_DISTINCT 1
int qv__istats_sample(struct qv__enc *e, const uint64_t *v, int64_t n, int what,
                      struct qv__istats *s);
/* Bits of the frame-of-reference residual range (the smaller of the
 * unsigned and signed views) and the reference to use. */
unsigned qv__istats_for_bits(const struct qv__istats *s, uint64_t *ref);
/* The residual range itself (the largest residual) of that choice, and
 * its reference. */
uint64_t qv__istats_for_range(const struct qv__istats *s, uint64_t *ref);
/* What a sample of whole vectors saw of the distinct values: sn values in
 * m vectors held d distinct (hd among the first hn values), q1 of them in
 * exactly one of the vectors and q2 in exactly two. */
struct qv__distinct_sample {
    int64_t sn, d, hn, hd, m, q1, q2;
};

/* Incidence over the sampled vectors, for q1 and q2, as the integer sampler
 * (stats.c) and the string sampler (cascade.c) count it: per slot of the
 * sampler's table, the sampled vectors its value was in (bits
 * QV__INC_SHIFT and up) and the last one (the bits below: its index + 1,
 * so a sample takes at most QV__INC_MAX_VECTORS vectors). */
#define QV__INC_SHIFT 5
#define QV__INC_MAX_VECTORS ((1 << QV__INC_SHIFT) - 1)

/* Counts sampled vector k (0-based, in order) for the value of inc[slot]
 * once however often the value stands in it. */
static inline void qv__inc_note(uint16_t *inc, uint64_t slot, int64_t k) {
    if ((inc[slot] & QV__INC_MAX_VECTORS) != k + 1)
        inc[slot] = (uint16_t)((((inc[slot] >> QV__INC_SHIFT) + 1) << QV__INC_SHIFT) | (k + 1));
}

/* Adds to *q1 and *q2 the slots of inc[0..slots) whose value was in
 * exactly one, and exactly two, sampled vectors. */
static inline void qv__inc_count(const uint16_t *inc, int64_t slots, int64_t *q1, int64_t *q2) {
    for (int64_t h = 0; h < slots; h++) {
        *q1 += inc[h] >> QV__INC_SHIFT == 1;
        *q2 += inc[h] >> QV__INC_SHIFT == 2;
    }
}

/* Distinct values expected in n values, from such a sample, estimated
 * twice and the smaller taken:
 * - the rate at which the second half of the sample still found new
 *   values, extrapolated to the rest of the data: right for clustered data
 *   (sorted runs, each value in one place), whose count grows with the
 *   runs; saturated low-cardinality data gives d, unique data n;
 * - incidence over the sampled vectors (Chao's estimator for samples of
 *   units: the values seen in one vector only against those seen in two
 *   tell how many were never seen): right for values that recur all over
 *   the data, which the rate overestimates 2-4x (a schedule's flight
 *   numbers or times; two or three bits of dictionary codes too many),
 *   because new values come slower as the sample grows; far too high for
 *   clustered data (q1 = d), where the rate is the smaller.
 * An underestimate costs at most a dictionary that is built and then
 * declined or loses to the next candidate on size (second_opinion). */
static inline double qv__distinct_estimate(int64_t n, const struct qv__distinct_sample *s) {
    if (s->sn <= 0) return 0;
    if (s->sn >= n || s->sn <= s->hn) return (double)s->d;
    double rate = (double)(s->d - s->hd) / (double)(s->sn - s->hn);
    double est = (double)s->d + rate * (double)(n - s->sn);
    if (est > (double)n) est = (double)n;
    if (s->m >= 4) {
        double q1 = (double)s->q1, q2 = (double)s->q2;
        double chao = (double)s->d + (double)(s->m - 1) / (double)s->m * q1 *
                                         (q1 > 0 ? q1 - 1 : 0) / (2 * (q2 + 1));
        if (chao < est) est = chao;
    }
    return est;
}

/* The estimate for the n values an istats describes. */
static inline double qv__istats_distinct(const struct qv__istats *s, int64_t n) {
    struct qv__distinct_sample d = {s->sample_n,   s->sample_distinct, s->half_n, s->half_distinct,
                                    s->sample_units, s->sample_q1,     s->sample_q2};
    return qv__distinct_estimate(n, &d);
}

/* Encoders of the individual encodings. Each builds a node (children via the
 * cascade at depth + 1) or returns an errno. */
int qv__plain_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                          struct qv__enode **out);
/* Raw values, bool bitmaps and binary bytes are borrowed when `borrow` is
 * set (the caller's input outlives the encode call) and copied otherwise. */
int qv__plain_encode_raw(struct qv__enc *e, const void *v, int64_t n, int pt, uint32_t width,
                         int borrow, struct qv__enode **out);
int qv__plain_encode_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int borrow,
                          struct qv__enode **out);
int qv__plain_encode_bin(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                         int depth, int borrow, struct qv__enode **out);
int qv__constant_encode(struct qv__enc *e, int pt, uint32_t width, int64_t n, const void *value,
                        size_t value_len, struct qv__enode **out);
int qv__bitpack_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, unsigned w,
                       struct qv__enode **out);
/* Frame of reference + bitpack; emits a bare bitpack node when ref is 0. */
int qv__for_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                   const struct qv__istats *s, struct qv__enode **out);
/* A for node of reference ref over v's residuals ((v - ref) over `bits`
 * bits), built by `child` (with `arg`) as its child: bit-packed
 * (qv__for_encode) or radix (radix.c). */
typedef int (*qv__residuals_fn)(struct qv__enc *e, const uint64_t *res, int64_t n, int pt,
                                const void *arg, struct qv__enode **out);
int qv__for_over(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, unsigned bits,
                 uint64_t ref, qv__residuals_fn child, const void *arg, struct qv__enode **out);
int qv__delta_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                     struct qv__enode **out);
int qv__zigzag_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                      struct qv__enode **out);
/* Dictionary over word values; ENOSPC (internal) when more than max_dict
 * distinct values exist. */
int qv__dict_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                         int64_t max_dict, struct qv__enode **out);
int qv__dict_encode_bin(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                        int depth, int64_t max_dict, struct qv__enode **out);
int qv__dict_encode_fixed(struct qv__enc *e, const uint8_t *v, int64_t n, uint32_t width,
                          int depth, int64_t max_dict, struct qv__enode **out);
int qv__rle_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                        struct qv__enode **out);
int qv__rle_encode_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int depth,
                        struct qv__enode **out);
int qv__sparse_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                           uint64_t fill, struct qv__enode **out);
int qv__sparse_encode_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int depth,
                           struct qv__enode **out);
/* ALP: estimates (bytes) from a sample and builds. */
struct qv__alp_choice {
    int e, f;
    double est_bytes;
    int64_t est_exceptions;
};
void qv__alp_choose(const void *v, int64_t n, int pt, struct qv__alp_choice *c);
/* ALP at `depth` with c's exponents, its digits child estimated as it is
 * and as a delta chain (qv__xform_estimate) on whole sampled vectors: *est its
 * bytes, *score weighed by the decode costs of ALP and the chain; *est < 0
 * when there is none. alp_choose's estimate packs the digits at the width
 * of their range: flights' departure times, sorted within each day, step
 * by a few minutes. Returns 0 or ENOMEM. */
int qv__alp_chain(struct qv__enc *e, const void *v, int64_t n, int pt, int depth,
                  const struct qv__alp_choice *c, double *est, double *score);
int qv__alp_encode(struct qv__enc *e, const void *v, int64_t n, int pt, int depth,
                   const struct qv__alp_choice *c, struct qv__enode **out);
struct qv__alprd_choice {
    unsigned right_bits;
    double est_bytes;
};
void qv__alprd_choose(const void *v, int64_t n, int pt, struct qv__alprd_choice *c);
int qv__alprd_encode(struct qv__enc *e, const void *v, int64_t n, int pt, int depth,
                     unsigned right_bits, struct qv__enode **out);
/* Patched (patched.c): bit-packing with exceptions. The choice: reference
 * and width that minimize packed bits plus exceptions, estimated on a
 * sample (est_bytes < 0: not worth proposing); flip is the sign bit when
 * the reference is taken in signed order, full the frame-of-reference
 * width without exceptions. */
struct qv__patched_choice {
    uint64_t ref, flip;
    unsigned width, full;
    double est_bytes;
    int64_t est_exceptions;
};
/* 0, or ENOMEM for the sample's scratch (the encode fails then, as with
 * qv__entropy_choose). */
int qv__patched_choose(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, struct qv__patched_choice *c);
int qv__patched_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                       const struct qv__patched_choice *c, int forced, struct qv__enode **out);
/* Bucket (bucket.c): tokens of magnitude plus extra bits, for values of
 * more than 8 bits. The choice: the mantissa bits m whose sampled tokens
 * and extra bits are estimated smallest, est_bytes < 0 when there are no
 * values. */
struct qv__bucket_choice {
    unsigned m;
    double est_bytes;
};
void qv__bucket_choose(const uint64_t *v, int64_t n, int pt, struct qv__bucket_choice *c);
int qv__bucket_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                      unsigned m, struct qv__enode **out);
/* Transforms' estimates (xform.c): delta's or zig-zag's node at `depth`
 * over v (QV__XFORM_NONE: a node at depth whose child takes v as it is),
 * scored with its child's likely cascade on a transformed sample
 * (frame of reference, patched, or for delta a zig-zag child with either
 * or bucket below it). est_bytes < 0: no estimate (fewer than a vector of
 * values); else the best chain's bytes for all n values, its score (bytes
 * weighed by the decode costs of the whole chain) and that cost. Returns
 * 0 or ENOMEM (the sample's scratch). */
enum { QV__XFORM_NONE = 0, QV__XFORM_DELTA = 1, QV__XFORM_ZIGZAG = 2 };
struct qv__xform_choice {
    double est_bytes, score;
    int cost;
};
int qv__xform_estimate(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int kind,
                       int depth, struct qv__xform_choice *c);
/* What delta puts in each vector's first delta slot, which decoders never
 * read: 0 when the deltas [dmin, dmax] straddle it (inside their range,
 * and zig-zag's smallest code), else dmin (frame of reference's own
 * reference). dmin == INT64_MAX: no deltas. */
static inline uint64_t qv__delta_fill(int64_t dmin, int64_t dmax, unsigned bits) {
    if (dmin == INT64_MAX) return 0;
    return dmin < 0 && dmax >= 0 ? 0 : (uint64_t)dmin & qv__mask(bits);
}
/* The entropy stage (entropy.c): zstd in frames of 4 or 16 vectors over a
 * frame of reference + the residuals laid out at `width` bits: bit-packed
 * at their own width or the next whole byte width, sequential bytes of
 * 8 or 16 bits (a plain child), or for residuals of at most 4 bits
 * sequential 1, 2 or 4-bit values (a seqpack child), whichever the sample
 * compressed best.
 * est_bytes < 0: not proposed (too few values, zstd not
 * allowed). */
enum {
    QV__ENTROPY_PACKED = 1, /* bit-packed (at `width`: exact or whole bytes) */
    QV__ENTROPY_BYTES = 2,  /* only as a forced layout: bit-packed at whole bytes */
    QV__ENTROPY_SEQ = 3,    /* sequential plain residuals of 8 or 16 bits */
    QV__ENTROPY_ANS = 4,    /* only as a forced layout: sequential bytes in ans frames */
    QV__ENTROPY_SEQBITS = 5, /* sequential residuals of 1, 2 or 4 bits (seqpack, format 8.0) */
};
/* The factor by which the entropy stage's zstd frames must beat the other
 * candidates beyond their decode cost: their estimate comes from trial
 * compressions of 8 vectors, which is noisy on small differences. */
#define QV__ENTROPY_MARGIN 1.1
struct qv__entropy_choice {
    uint64_t ref;
    unsigned width;
    int layout;           /* QV__ENTROPY_PACKED, _SEQ or _SEQBITS */
    int64_t frame_values; /* 4 vectors, 16 for repetitive data or SEQBITS; ans: 16 */
    int codec;            /* the frames' codec: QV_ENC_ZSTD or QV_ENC_ANS */
    int cost;             /* decode cost: the codec's, plus seqpack's for SEQBITS */
    double est_bytes;
};
/* The layout forced by qv_encode_force_entropy_layout (encoding_testing.h),
 * 0 when none. */
int qv__entropy_forced(void);
/* Whether qv__entropy_choose, given values of these range statistics,
 * would go on to read the sample's distinct count (the caller then takes
 * a sample: QV__SAMPLE_DISTINCT is enough). */
int qv__entropy_samples(const struct qv__enc *e, int64_t n, const struct qv__istats *s);
/* Bytes the stage's ans frames would take for n values of at most 8 bits
 * whose sample of `sampled` values has these 256 counts (no trial). */
double qv__entropy_ans_bytes(const uint64_t *cnt, int64_t sampled, int64_t n);
/* The stage's ans frames over values whose range (s: their statistics)
 * is at most 8 bits, without a choice (bucket's tokens). */
int qv__entropy_ans_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                           const struct qv__istats *s, struct qv__enode **out);
/* Chooses the layout from trial compressions of a sample; c->est_bytes
 * < 0 when the stage is not proposed. 0, or the trials' error (ENOMEM for
 * their scratch or zstd's context: see qv__zstd_compress). */
int qv__entropy_choose(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, double to_beat, struct qv__entropy_choice *c);
int qv__entropy_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, const struct qv__entropy_choice *c,
                       int forced, struct qv__enode **out);
/* FSST: trains a table on a sample, estimates, then builds. */
struct qv__fsst_table;
/* Trains on a sample of `scale` times the usual budget (fsst.c). */
int qv__fsst_train(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                   int scale, struct qv__fsst_table **out);
int qv__fsst_nsym(const struct qv__fsst_table *t);
/* Compressed bytes relative to raw bytes of about `budget` bytes of the
 * strings, between those the table was trained on. */
#define QV__FSST_MEASURE (16 << 10)
double qv__fsst_sample_ratio(struct qv__fsst_table *t, const uint64_t *off, const uint8_t *data,
                             int64_t n, uint64_t budget);
/* A table from a lesson's symbols (as trained, so the lookup is the
 * trained table's); and a trained table's symbols and sampled ratio into a
 * lesson. */
int qv__fsst_from_lesson(struct qv__enc *e, const struct qv__lesson *l,
                         struct qv__fsst_table **out);
void qv__fsst_to_lesson(const struct qv__fsst_table *t, double ratio, struct qv__lesson *l);
int qv__fsst_encode(struct qv__enc *e, struct qv__fsst_table *t, const uint64_t *off,
                    const uint8_t *data, int64_t n, int depth, struct qv__enode **out);
/* zstd / lz4 in frames: fn builds the subtree of values [start, start + n)
 * of each frame (*owned: dropped after serialization). frame_values 0 = one
 * frame. QV__DECLINED (internal) when compression does not make it smaller,
 * unless forced. */
typedef int (*qv__frame_fn)(struct qv__enc *e, void *ctx, int64_t start, int64_t n,
                            struct qv__enode **out, int *owned);
/* ends[0..n_ends): each frame's end (sized frames, format 2); NULL: fixed
 * frames of frame_values. */
int qv__general_encode(struct qv__enc *e, int enc, int pt, uint32_t width, int64_t count,
                       int64_t frame_values, const int64_t *ends, int64_t n_ends, qv__frame_fn fn,
                       void *ctx, int force, struct qv__enode **out);
/* String bytes at which the cascade's zstd/lz4 frames end (general.c). */
#define QV__FRAME_BYTES (128 * 1024)
/* Wraps a finished subtree as a single frame. */
int qv__general_wrap(struct qv__enc *e, int enc, const struct qv__enode *inner, int force,
                     struct qv__enode **out);

/* zstd_dict (zstd_dict.c): a dictionary trained by zstd's builder on a
 * sample spread over the strings (size 0 when there is too little to learn
 * from, or the library was built without the builder); the compressed
 * size relative to the raw bytes on frames outside the training pieces;
 * the node. Dictionaries live in the encoder's arena. */
struct qv__zdict;
int qv__zdict_train(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                    struct qv__zdict **out);
size_t qv__zdict_size(const struct qv__zdict *zd);
void qv__zdict_free(struct qv__enc *e, struct qv__zdict *zd);
int qv__zdict_sample_ratio(struct qv__enc *e, const struct qv__zdict *zd, const uint64_t *off,
                           const uint8_t *data, int64_t n, double *ratio);
int qv__zdict_encode(struct qv__enc *e, const struct qv__zdict *zd, const uint64_t *off,
                     const uint8_t *data, int64_t n, int depth, int forced,
                     struct qv__enode **out);

/* zstd helpers. qv__zstd_compress compresses n bytes of src into dst
 * (cap >= qv__zstd_bound(n)) through the encoder's context (e->zcache, or
 * e->own_zc made at the first call) and sets *clen. Every zstd compression of an encode,
 * the cascade's trial compressions included, goes through it, and its
 * errors fail the encode: the context and zstd's workspace are allocated
 * from the encoder's arena, so under a memory limit they can fail, and a
 * trial dropped for memory would make the file depend on what else the
 * pool held at the time (other columns encoding on other threads), where
 * the writer promises the same bytes whatever the threads. Errors, set on
 * e->err: the pool's ENOMEM (or what the reservation reported) prefixed
 * with "zstd: compression context at level L", EIO for zstd's own
 * errors. */
size_t qv__zstd_bound(size_t n);
int qv__zstd_compress(struct qv__enc *e, void *dst, size_t cap, const void *src, size_t n,
                      int level, size_t *clen);
/* The ans codec (ans.c): an order-0 rANS block of n bytes. qv__ans_compress
 * writes at most qv__ans_bound(n) bytes (cap must be that) and returns
 * them (0 only for a smaller cap); qv__ans_decompress decodes a block of
 * clen bytes into exactly n, 0 or -1 with *why naming what is corrupt.
 * qv__ans_estimate: the coded bytes a block of bytes with these 256 counts
 * would take, and in *table the bytes of the kind, table and states of a
 * block of `frame` such bytes. */
size_t qv__ans_bound(size_t n);
size_t qv__ans_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap);
/* With the states chosen: 8 (kind 1), 32 (kind 2) or 0: as qv__ans_compress
 * chooses (kind 2 for at least 8,192 bytes coded into at least 2,048). */
size_t qv__ans_compress_lanes(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, int lanes);
int qv__ans_decompress(const uint8_t *src, size_t clen, uint8_t *dst, size_t n, const char **why);
double qv__ans_estimate(const uint64_t *cnt, size_t frame, double *table);

/* ---- Bit-packing kernels ----
 * A vector of 1024 values at width w <= 32 is packed in 32 lanes of 32-bit
 * words: value i = r * 32 + l (row r, lane l) occupies bits [r*w, r*w + w)
 * of lane l's stream, and word j of lane l is stored at index j * 32 + l.
 * Widths 33..64 use 16 lanes of 64-bit words the same way (i = r * 16 + l,
 * word j of lane l at j * 16 + l). A full vector takes 128 * w bytes. The
 * last, partial vector of a run stores only the words its rows reach:
 * ceil(ceil(rem / lanes) * w / lane_bits) words per lane. */
uint64_t qv__bitpack_bytes(int64_t n, unsigned w);
/* Sequential packing (seqpack.c): n values of w = 1, 2 or 4 bits, value
 * after value from the low bits of each byte, in ceil(n w / 8) bytes. */
uint64_t qv__seqpack_bytes(int64_t n, unsigned w);
void qv__seqpack_put(const uint64_t *v, int64_t n, unsigned w, uint8_t *out);
int qv__seqpack_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, unsigned w,
                       struct qv__enode **out);
/* Radix (radix.c): values below b held k to a u16 group, the group's base-b
 * digits. qv__radix_digits gives the k of fewest bits a value for b (3 to
 * 256; 0 outside) and, in *gbits, a group's bit width; qv__radix_encode
 * builds the node (every value below b) and cascades its groups at depth
 * + 1. */
#define QV__RADIX_MAX_K 10
unsigned qv__radix_digits(uint32_t b, unsigned *gbits);
/* b^k, or 0 when above 65,536 (the u16 groups' limit). */
uint32_t qv__radix_power(uint32_t b, unsigned k);
int qv__radix_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, uint32_t b,
                     unsigned k, int depth, struct qv__enode **out);
/* Bytes of the vector holding values [0, rem) (rem <= 1024). */
uint64_t qv__bitpack_vec_bytes(int64_t rem, unsigned w);
/* Packs values (each < 2^w) of one vector; rem <= 1024 values; writes
 * qv__bitpack_vec_bytes(rem, w) bytes. `tmp` is 1024 uint32 of scratch. */
void qv__pack_vec(const uint64_t *v, int64_t rem, unsigned w, uint8_t *out, uint32_t *tmp);
/* Unpacks one full vector (128 * w readable bytes, 8-aligned), adding `base`. */
void qv__unpack32(const uint32_t *in, unsigned w, uint32_t *out, uint32_t base);
void qv__unpack64(const void *in, unsigned w, uint64_t *out, uint64_t base);
/* One value of a (possibly partial) vector. */
static inline uint64_t qv__bitpack_get(const uint8_t *vec, unsigned w, unsigned i) {
    if (w == 0) return 0;
    if (w <= 32) {
        unsigned r = i >> 5, l = i & 31, bit = r * w, word = bit >> 5, shift = bit & 31;
        uint32_t lo, hi = 0;
        memcpy(&lo, vec + ((size_t)word * 32 + l) * 4, 4);
        uint64_t v = lo >> shift;
        if (shift + w > 32) {
            memcpy(&hi, vec + ((size_t)(word + 1) * 32 + l) * 4, 4);
            v |= (uint64_t)hi << (32 - shift);
        }
        return v & qv__mask(w);
    }
    unsigned r = i >> 4, l = i & 15, bit = r * w, word = bit >> 6, shift = bit & 63;
    uint64_t lo, hi = 0;
    memcpy(&lo, vec + ((size_t)word * 16 + l) * 8, 8);
    uint64_t v = lo >> shift;
    if (shift && shift + w > 64) {
        memcpy(&hi, vec + ((size_t)(word + 1) * 16 + l) * 8, 8);
        v |= hi << (64 - shift);
    }
    return v & qv__mask(w);
}

/* ---- Decoder-side tree ---- */
struct qv__cache; /* per-node lazily decoded state, defined by users */

struct qv__node {
    const struct qv__encoding *codec; /* the record of `enc`, set by the parser */
    uint8_t enc, pt, nparams, nbufs, nchildren;
    uint32_t width; /* bytes per value for word and fixed types */
    int64_t count;
    int64_t params[QV__MAX_PARAMS];
    const uint8_t *buf[QV__MAX_BUFS];
    uint64_t buf_len[QV__MAX_BUFS];
    struct qv__node *child[QV__MAX_CHILDREN];
    uint64_t offset; /* of the node, in its segment (or decompressed subtree) */
    uint64_t size;
    int depth;
    int inner; /* inside a zstd/lz4 subtree */
    uint64_t outer_offset; /* offset of the nearest zstd/lz4 ancestor (if inner) */
    void *cache; /* owned by the decoder's arena */
    void *vcache; /* delta.c's decoded vectors for takes (the decoder's arena) */
};

/* Buffers of a node that its decoder verifies by the range it reads
 * (dec_verify.h): plain's values, bitpack's vectors, fsst's codes, zstd and
 * lz4's frames. Every other byte of a node is verified when it is parsed. */
static inline int qv__lazy_buffer(const struct qv__node *nd, int i) {
    switch (nd->enc) {
    case QV_ENC_PLAIN:
    case QV_ENC_BITPACK: return i == 0;
    case QV_ENC_FSST:
    case QV_ENC_ZSTD:
    case QV_ENC_LZ4:
    case QV_ENC_ANS: return i == 1;
    case QV_ENC_ZSTD_DICT: return i == 2;
    default: return 0;
    }
}

/* Parses a subtree at p[0, size) (8-aligned) into nodes allocated from `m`,
 * validating structure and per-encoding shape. */
int qv__tree_parse(struct qv__mem *m, const uint8_t *p, size_t size, int depth, int inner,
                   uint64_t outer_offset, struct qv__node **out, struct qv_error *err);
/* The same for a segment's root, calling vfn(vctx, off, len) on every byte
 * range before the parser reads it (headers, and each node's buffers but
 * the lazy ones, qv__lazy_buffer). */
int qv__tree_parse_checked(struct qv__mem *m, const uint8_t *p, size_t size,
                           int (*vfn)(void *, uint64_t, uint64_t, struct qv_error *), void *vctx,
                           struct qv__node **out, struct qv_error *err);
/* EIO of kind QV_ERROR_CORRUPT with "corrupt <enc> node at byte <off>: ..." */
int qv__corrupt(struct qv_error *err, const struct qv__node *nd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Binary output under construction. */
struct qv__binout {
    int off64;
    void *offsets;   /* n + 1 entries */
    int64_t i;       /* next offset slot to write (offsets[0] written at start) */
    uint8_t *data;
    size_t size, cap;
    struct qv_reservation *r;
    struct qv__mem *mem; /* when set, data is a block of this arena */
};
/* Makes room for `extra` more bytes plus 8 bytes of write slack (growing
 * the capacity by doubling). */
int qv__binout_reserve(struct qv__binout *o, size_t extra, struct qv_error *err);
/* The same, to exactly that room (rounded up to 64 bytes): for a decoder
 * that knows the bytes it will write (or a bound close to them), so the
 * output is allocated once instead of copied at every doubling. */
int qv__binout_presize(struct qv__binout *o, size_t extra, struct qv_error *err);
/* Writes the offset for the value just completed (after its bytes). */
static inline int qv__binout_end_value(struct qv__binout *o, struct qv_error *err) {
    o->i++;
    if (o->off64) {
        ((int64_t *)o->offsets)[o->i] = (int64_t)o->size;
    } else {
        if (o->size > (size_t)INT32_MAX)
            return qv_error_set(err, EOVERFLOW,
                                "decode: binary data exceeds the int32 offset range (%zu bytes)",
                                o->size);
        ((int32_t *)o->offsets)[o->i] = (int32_t)o->size;
    }
    return 0;
}
static inline int qv__binout_push(struct qv__binout *o, const uint8_t *p, size_t len,
                                  struct qv_error *err) {
    if (o->cap - o->size < len + 8) {
        int rc = qv__binout_reserve(o, len, err);
        if (rc) return rc;
    }
    memcpy(o->data + o->size, p, len);
    o->size += len;
    return qv__binout_end_value(o, err);
}

struct qv__dec {
    struct qv__mem mem;
    struct qv__stack stack;
    struct qv_reservation *r;
    struct qv__node *root;
    struct qv__frame_cache *frames; /* zstd/lz4 frame caches, freed at close */
    /* Values the current public call decodes in all (a take's rows, a
     * range's length): encodings that can either decode only what a few
     * values need or load a whole child once choose by it. */
    int64_t want;
    /* Verifier of the segment's bytes (dec_verify.h); NULL: none. */
    int (*vfn)(void *ctx, uint64_t off, uint64_t len, struct qv_error *err);
    void *vctx;
    const uint8_t *vbase; /* the parsed bytes: offsets are from here */
    /* The reference chunk's decoder of a relative root (relative.c);
     * borrowed, NULL until qv_decoder_set_reference. */
    struct qv_decoder *ref;
};
/* Verifies the bytes of plain's, bitpack's and seqpack's buffer that decoding values
 * [start, start + n) reads, before they are read. Called by the dispatch and
 * by encodings that decode a child without it (for -> bitpack). Plain
 * binary, fsst and zstd/lz4 verify their lazy buffer in their decoders. */
int qv__dec_touch(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                  struct qv_error *err);
static inline int qv__dec_check(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                                struct qv_error *err) {
    return d->vfn && !nd->inner &&
                   ((nd->enc == QV_ENC_PLAIN && nd->pt != QV__PT_BIN) || nd->enc == QV_ENC_BITPACK ||
                    nd->enc == QV_ENC_SEQPACK)
               ? qv__dec_touch(d, nd, start, n, err)
               : 0;
}
/* Verifies bytes [p, p + len) of the segment (p inside it). */
static inline int qv__dec_touch_bytes(struct qv__dec *d, const uint8_t *p, uint64_t len,
                                      struct qv_error *err) {
    return d->vfn && len ? d->vfn(d->vctx, (uint64_t)(p - d->vbase), len, err) : 0;
}

/* Decoders: values [start, start + n) of `nd` (the caller has checked the
 * range against nd->count). Word/fixed types write n * width bytes. */
int qv__dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                 struct qv_error *err);
int qv__dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                 uint8_t *bits, int64_t bit_off, struct qv_error *err);
int qv__dec_bin(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                struct qv__binout *o, struct qv_error *err);
/* Takes: values at rows[0..n) (sorted non-decreasing, each below the
 * node's count) of a word or fixed node into n consecutive slots of w
 * bytes (the node's width). qv__take_word uses the encoding's take_word
 * where it has one, else qv__take_span per 1024-value vector;
 * qv__take_span decodes the span rows[0] .. rows[k - 1] (inside one
 * vector) as one range and gathers from it, or straight into out when the
 * rows are that span. Encodings call them for their children. */
int qv__take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t n,
                  unsigned w, void *out, struct qv_error *err);
int qv__take_span(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t k,
                  unsigned w, void *out, struct qv_error *err);
/* Decodes n word values of an integer child into uint64 (zero-extended). */
int qv__dec_u64(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                uint64_t *out, struct qv_error *err);
/* Decodes a whole child once into a decoder-held uint64 array (cached on the
 * node), checking it is strictly increasing and below `limit` when
 * `increasing` is set. */
int qv__dec_cached_u64(struct qv__dec *d, struct qv__node *nd, int increasing, uint64_t limit,
                       const uint64_t **out, struct qv_error *err);

/* The ids (frames, vectors) a take cache met recently, to tell one that a
 * take comes back to (worth keeping) from one it visits once (a cold take
 * then holds no more than before): a ring of the last n ids met for the
 * first time. Ids are >= 0. Each user passes its own n (at most
 * QV__SEEN_MAX), the same on every call: a constant, so the inlined
 * check is a fixed run of compares without a branch. */
#define QV__SEEN_MAX 64
struct qv__seen {
    int64_t id[QV__SEEN_MAX];
    int at;
};
static inline void qv__seen_init(struct qv__seen *s) {
    for (int i = 0; i < QV__SEEN_MAX; i++) s->id[i] = -1;
    s->at = 0;
}
/* 1 when id is among the ring's; otherwise records it in place of the
 * oldest and returns 0. A hit records nothing. */
static inline int qv__seen_before(struct qv__seen *s, int n, int64_t id) {
    for (int i = 0; i < n; i++)
        if (s->id[i] == id) return 1;
    s->id[s->at] = id;
    if (++s->at == n) s->at = 0;
    return 0;
}

/* Per-encoding decoders, named by the encodings' records (some also call
 * each other: FOR decodes through bitpack, sparse through constant). */
int qv__plain_dec_word(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                       struct qv_error *);
int qv__plain_dec_bool(struct qv__dec *, struct qv__node *, int64_t, int64_t, uint8_t *, int64_t,
                       struct qv_error *);
int qv__plain_dec_bin(struct qv__dec *, struct qv__node *, int64_t, int64_t, struct qv__binout *,
                      struct qv_error *);
int qv__constant_dec_word(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                          struct qv_error *);
int qv__constant_dec_bool(struct qv__dec *, struct qv__node *, int64_t, int64_t, uint8_t *,
                          int64_t, struct qv_error *);
int qv__constant_dec_bin(struct qv__dec *, struct qv__node *, int64_t, int64_t,
                         struct qv__binout *, struct qv_error *);
int qv__bitpack_dec(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *, uint64_t base,
                    struct qv_error *);
int qv__for_dec(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *, struct qv_error *);
int qv__delta_dec(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                  struct qv_error *);
int qv__zigzag_dec(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                   struct qv_error *);
int qv__dict_dec_word(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                      struct qv_error *);
int qv__dict_dec_bin(struct qv__dec *, struct qv__node *, int64_t, int64_t, struct qv__binout *,
                     struct qv_error *);
int qv__rle_dec_word(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                     struct qv_error *);
int qv__rle_dec_bool(struct qv__dec *, struct qv__node *, int64_t, int64_t, uint8_t *, int64_t,
                     struct qv_error *);
/* All run ends of run-end node nd (child 0), decoded into memory of d and
 * checked: strictly increasing, the last at nd's count. 0, ENOMEM or EIO. */
int qv__rle_read_ends(struct qv__dec *d, struct qv__node *nd, uint32_t **out,
                      struct qv_error *err);
int qv__sparse_dec_word(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                        struct qv_error *);
int qv__sparse_dec_bool(struct qv__dec *, struct qv__node *, int64_t, int64_t, uint8_t *,
                        int64_t, struct qv_error *);
int qv__alp_dec(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *, struct qv_error *);
int qv__alprd_dec(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                  struct qv_error *);
int qv__fsst_dec(struct qv__dec *, struct qv__node *, int64_t, int64_t, struct qv__binout *,
                 struct qv_error *);
/* zstd / lz4: range decodes through the frames they touch. */
int qv__general_dec_word(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                         struct qv_error *);
int qv__general_dec_bool(struct qv__dec *, struct qv__node *, int64_t, int64_t, uint8_t *,
                         int64_t, struct qv_error *);
int qv__general_dec_bin(struct qv__dec *, struct qv__node *, int64_t, int64_t,
                        struct qv__binout *, struct qv_error *);
int64_t qv__general_nframes(const struct qv__node *nd);
/* Decompresses frame f of a zstd/lz4 node into a fresh block of `m` (zstd
 * with the calling thread's kept context). */
int qv__general_decompress(struct qv__mem *m, const struct qv__node *nd, int64_t f,
                           uint8_t **out, size_t *out_size, struct qv_error *err);
struct qv__frame_cache;
void qv__frame_caches_free(struct qv__frame_cache *c);

/* Shape checks, run by the parser on every node: the generic limits, then
 * the record's validate hook. */
int qv__validate_node(const struct qv__node *nd, struct qv_error *err);

/* Plain copy of bits (any alignment), word at a time. */
void qv__copy_bits(uint8_t *dst, int64_t dst_off, const uint8_t *src, int64_t src_off,
                   int64_t n);

/* Widening / narrowing between uint64 and the word types. */
void qv__widen(const void *in, unsigned width, int64_t n, uint64_t *out);
void qv__narrow(const uint64_t *in, unsigned width, int64_t n, void *out);

/* Binary search: index of the first element of a[0..n) greater than key. */
static inline int64_t qv__upper_bound(const uint64_t *a, int64_t n, uint64_t key) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        if (a[mid] <= key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
static inline int64_t qv__lower_bound(const uint64_t *a, int64_t n, uint64_t key) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        if (a[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The same answer found by doubling from the front, in O(log i) steps for
 * an answer i: for walking two sorted lists together, where the next
 * answer is usually near (a take of many rows against a patch list: a
 * binary search over the whole rest per row cost a dense take of a
 * patched column twice its decode). */
static inline int64_t qv__gallop(const uint64_t *a, int64_t n, uint64_t key) {
    if (n <= 0) return 0;
    int64_t lo = 0, step = 1;
    while (lo + step < n && a[lo + step] < key) {
        lo += step;
        step <<= 1;
    }
    int64_t hi = lo + step < n ? lo + step : n;
    if (lo < n && a[lo] >= key) return lo;
    return lo + 1 + qv__lower_bound(a + lo + 1, hi - lo - 1, key);
}

/* ---- One record per encoding ----
 * Everything the library knows about an encoding that is not inside its
 * own file: its wire id and name, how it decodes each family of physical
 * types, its shape check, the names `qv inspect` prints, and how the
 * cascade builds it. Each encoding's file defines its record
 * (`const struct qv__encoding qv__enc_bitpack = {...}`); registry.c lists
 * them by id. The parser looks the record up once per node (a bad id is
 * corruption) and keeps it in qv__node.codec, so a range decode costs one
 * indirect call per node and range, never one per value. */

/* What the cascade hands an encoding to build: the values of one node in
 * every form the cascade has them. Which fields are set depends on the
 * physical type: integers (u64 widened values and stats), floats (the same
 * over their bit patterns, plus the raw values), bool (bits, ones), binary
 * (off, data), fixed (raw, width). */
struct qv__src {
    int pt;
    uint32_t width;      /* bytes per value: word and fixed types */
    int64_t n;
    int depth;           /* of the node being built (root = 0) */
    int forced;          /* the caller named this encoding: build it even if poor */
    const uint64_t *u64; /* integers; floats' bit patterns */
    const struct qv__istats *s;
    const void *raw;     /* floats and fixed values as given */
    const uint8_t *bits; /* bool */
    int64_t ones;
    const uint64_t *off; /* binary: n + 1 offsets into data, off[0] == 0 */
    const uint8_t *data;
    /* Choices the cascade made while estimating (NULL when not estimated). */
    const struct qv__alp_choice *alp;
    const struct qv__alprd_choice *alprd;
    struct qv__fsst_table *fsst;
    const struct qv__patched_choice *patched;
    const struct qv__bucket_choice *bucket;
    struct qv__zdict *zdict; /* zstd_dict: the dictionary trained while estimating */
};

typedef int (*qv__dec_word_fn)(struct qv__dec *, struct qv__node *, int64_t, int64_t, void *,
                               struct qv_error *);
typedef int (*qv__dec_bool_fn)(struct qv__dec *, struct qv__node *, int64_t, int64_t, uint8_t *,
                               int64_t, struct qv_error *);
typedef int (*qv__dec_bin_fn)(struct qv__dec *, struct qv__node *, int64_t, int64_t,
                              struct qv__binout *, struct qv_error *);
/* Values at rows[0..k) (sorted non-decreasing, each below the node's count)
 * into k consecutive word slots. */
typedef int (*qv__take_word_fn)(struct qv__dec *, struct qv__node *, const int64_t *rows,
                                int64_t k, void *out, struct qv_error *);
/* Binary values at rows[0..k) (sorted non-decreasing, each below the
 * node's count) appended to o, one offset each. */
typedef int (*qv__take_bin_fn)(struct qv__dec *, struct qv__node *, const int64_t *rows,
                               int64_t k, struct qv__binout *o, struct qv_error *);

struct qv__encoding {
    uint8_t id;       /* enum qv_encoding: the wire id, never renumbered */
    const char *name; /* as `qv inspect` and docs/format.md print it */
    /* Percent of size a candidate must save to beat one of cost 0. */
    int decode_cost;
    /* Flags: FRAMES for zstd/lz4 (the node compresses subtrees: the cascade
     * wraps finished trees in it, inspection expands its first frame);
     * ZERO_WIDTH when it may hold fixed values of width 0. */
    unsigned flags;
    /* Range decoders per family of physical types (word and fixed share
     * dec_word); NULL where the encoding cannot hold the family. */
    qv__dec_word_fn dec_word;
    qv__dec_bool_fn dec_bool;
    qv__dec_bin_fn dec_bin;
    /* Optional take of word values, for encodings that reach a row's value
     * faster than a range decode of its 1024-value vector does (run-end: a
     * search per row). NULL: qv_decoder_take goes through dec_word. */
    qv__take_word_fn take_word;
    /* The same for binary values (dictionary: a copy per row asked, none
     * for the other rows of its vector). NULL: through dec_bin. */
    qv__take_bin_fn take_bin;
    /* Shape check of a parsed node (docs/format.md 5.5, "shape"): counts of
     * parameters, buffers and children, their ranges and children's types.
     * Runs after the generic checks of validate.c. */
    int (*validate)(const struct qv__node *nd, struct qv_error *err);
    /* Builds a node for the values (children through the cascade one level
     * deeper). EINVAL when the encoding cannot hold src->pt; QV__DECLINED
     * when it declines (not forced). NULL for FRAMES encodings that only
     * wrap (qv__general_wrap). */
    int (*build)(struct qv__enc *e, const struct qv__src *src, struct qv__enode **out);
    /* Names for inspection; NULL entries print as "p" and "child". */
    const char *params[QV__MAX_PARAMS];
    const char *bool_params[QV__MAX_PARAMS]; /* when the node is bool, if different */
    const char *children[QV__MAX_CHILDREN];
};
#define QV__ENC_FRAMES 1u
#define QV__ENC_ZERO_WIDTH 2u

extern const struct qv__encoding qv__enc_plain, qv__enc_constant, qv__enc_bitpack, qv__enc_for,
    qv__enc_delta, qv__enc_zigzag, qv__enc_dict, qv__enc_rle, qv__enc_sparse, qv__enc_alp,
    qv__enc_alp_rd, qv__enc_fsst, qv__enc_zstd, qv__enc_lz4;
extern const struct qv__encoding qv__enc_patched;
extern const struct qv__encoding qv__enc_zstd_dict;
extern const struct qv__encoding qv__enc_relative;
extern const struct qv__encoding qv__enc_ans;
extern const struct qv__encoding qv__enc_bucket;
extern const struct qv__encoding qv__enc_seqpack;
extern const struct qv__encoding qv__enc_radix;

/* qv_encode's set-up of one call from its options (encode.c), and its
 * end: on rc == 0 serializes `root` into *out (from e->r); in every case
 * frees the call's arena and stack. Returns rc or ENOMEM. */
void qv__enc_init(struct qv__enc *e, const struct qv_encode_options *o, struct qv_reservation *r,
                  struct qv_error *err);
int qv__enc_finish(struct qv__enc *e, int rc, const struct qv__enode *root,
                   struct qv_encoded *out);


/* The record of a wire id, or NULL for 0 (auto), reserved and unknown ids:
 * bounds-checked, so any byte from a file may be passed. */
const struct qv__encoding *qv__encoding_of(unsigned id);
/* Score factor of a decode cost: the percent of size a candidate of that
 * cost must save to win; in compact mode a tenth of it, so size comes
 * first and the cost only breaks near ties (at full weight, compact
 * lineitem's ship dates stayed packed at 12 bits a value where a delta
 * chain with bucket makes 10). */
#define QV__COMPACT_COST_SHARE 0.1
static inline double qv__cost_weight(const struct qv__enc *e, double cost) {
    return 1.0 + 0.01 * cost * (e->compact ? QV__COMPACT_COST_SHARE : 1.0);
}
/* The score factor of an encoding's record's decode cost. Only ids with a
 * record get here. */
static inline double qv__cost_factor(const struct qv__enc *e, int enc) {
    return qv__cost_weight(e, qv__encoding_of((unsigned)enc)->decode_cost);
}
/* Number of id slots (one past the largest id). */
unsigned qv__encoding_slots(void);

/* EINVAL "encode: <enc> cannot encode <type> values", for build hooks. */
int qv__enc_unsupported(struct qv__enc *e, int enc, int pt);

/* Shape helpers for validate hooks: exact counts of parameters, buffers and
 * children; child i's type (fixed: the parent's width) and count (-1: any). */
int qv__want_shape(const struct qv__node *nd, int nparams, int nbufs, int nchildren,
                   struct qv_error *err);
int qv__want_child(const struct qv__node *nd, int i, int pt, int64_t count,
                   struct qv_error *err);
/* Buffer 0 of a packing node (bitpack, seqpack: param 0 the bit width)
 * holds exactly `need` bytes. */
int qv__want_packed(const struct qv__node *nd, uint64_t need, struct qv_error *err);
/* Bytes the node's values take decoded (bool: bits rounded up to bytes). */
uint64_t qv__node_value_bytes(const struct qv__node *nd);


/* ---- Predicates on encoded values (filter*.c) ---- */

/* decode.c owns struct qv_decoder; the filter reaches its parts here. */
struct qv__dec *qv__decoder_dec(struct qv_decoder *dc);
enum qv_value_kind qv__decoder_kind(const struct qv_decoder *dc);
/* A pointer the filter keeps its per-decoder state in (allocated from the
 * decoder's arena, so freed at close); NULL until the first filter. */
void **qv__decoder_filter_slot(struct qv_decoder *dc);
/* The loaded dictionary of a DICT node: word values (d * width bytes), or
 * binary offsets (d + 1, uint64) and bytes. Loaded once, kept on the node. */
int qv__dict_entries(struct qv__dec *d, struct qv__node *nd, const void **vals,
                     const uint64_t **off, const uint8_t **data, int64_t *dsize,
                     struct qv_error *err);

/* An integer predicate as an arc of the circle of B-bit patterns: x
 * satisfies it iff ((x - a) mod 2^B) <= d. Every comparison of signed or
 * unsigned values of B bits (EQ, NE, ranges) is one such arc, and so is
 * its translation into the residuals of a frame of reference or a bit
 * packing, so one branch-free test serves them all. none / all: the answer
 * is the same for every value. */
struct qv__arc {
    uint64_t a, d, mask; /* mask = 2^B - 1 */
    int none, all;
};

/* A predicate prepared for one decoder and call. */
struct qv__fpred {
    const struct qv_enc_pred *p;
    enum qv_value_kind kind;
    unsigned width; /* bytes per value of word kinds */
    int is_int, is_bin;
    int use_eval;   /* op == QV_ENC_OP_EVAL: only the callback */
    struct qv__arc arc;  /* integers, in the raw B-bit domain */
    int prefix, neg;     /* binary: PREFIX; NE (the EQ answer inverted) */
};

/* Per-decoder filter state (see qv__decoder_filter_slot). */
struct qv__fstate {
    /* Binary values of one vector, decoded for comparison. */
    uint64_t off[QV__VEC + 1];
    uint8_t *data;
    size_t data_cap;
    /* The last dictionary table: the node, the predicate it answers and one
     * bit per entry (tab_cap words, a zero word past the entries). */
    const struct qv__node *tab_node;
    struct qv_enc_pred tab_key;
    uint8_t tab_bytes[256];
    uint64_t *tab;
    int64_t tab_cap;
    /* The run ends of a run-end root, checked. */
    const struct qv__node *ends_node;
    uint32_t *ends;
};

/* 64 bytes of 0 or 1 as 64 bits (byte j -> bit j): per 8 bytes one
 * multiply moves byte i's bit to bit 56 + i (the partial products sit at
 * distinct bits, so nothing carries) and the top byte is kept. */
static inline uint64_t qv__pack_bytes64(const uint8_t *t) {
    uint64_t w = 0;
    for (unsigned g = 0; g < 8; g++) {
        uint64_t x;
        memcpy(&x, t + 8 * g, 8);
        w |= ((x * UINT64_C(0x0102040810204080)) >> 56) << (8 * g);
    }
    return w;
}

/* Writes ceil(m / 64) words of out: bit j = ((x[j] - a) & mask) <= d, for m
 * values of `width` bytes (bits past m are 0). */
void qv__arc_cmp(const void *x, unsigned width, int64_t m, uint64_t a, uint64_t d,
                 uint64_t mask, uint64_t *out);
/* Writes ceil(m / 64) words of out: bit j = bit codes[j] of `answers`, for
 * m dictionary codes below 32 (a dictionary of at most 32 entries, its
 * answers one bit per entry; bits past m are 0). */
void qv__code_cmp32(const uint32_t *codes, int64_t m, uint32_t answers, uint64_t *out);
/* The same for codes of any size: bit j = bit codes[j] of the bitset
 * `answers` of dsize entries (little-endian words; the caller checked
 * every code against dsize). */
void qv__code_bits(const uint32_t *codes, int64_t m, const uint64_t *answers, uint32_t dsize,
                   uint64_t *out);
/* The largest of m codes (0 for none). */
uint32_t qv__codes_max(const uint32_t *codes, int64_t m);
/* Binary values (uint64 offsets, bytes): EQ or PREFIX against lit[0..len),
 * inverted when neg. Same output shape. */
void qv__str_cmp(const uint64_t *off, const uint8_t *data, int64_t m, const uint8_t *lit,
                 size_t len, int prefix, int neg, uint64_t *out);
/* The predicate over values the decoder produced itself: word values of
 * the node's width, or binary (off, data). The callback of EVAL sees them
 * as the chunk's kind (BINARY: int32 offsets, converted in scratch of
 * `stk`). */
int qv__fpred_values(const struct qv__fpred *fp, struct qv__stack *stk, const void *vals,
                     const uint64_t *off, const uint8_t *data, int64_t m, uint64_t *out,
                     struct qv_error *err);

/* Callback of qv__filter_blocks: the predicate on values [pos, pos + m) of
 * the root (within one 1024-value vector), bit j of res for value pos + j. */
typedef int (*qv__block_fn)(void *ctx, int64_t pos, int64_t m, uint64_t *res,
                            struct qv_error *err);
/* Runs fn over the vectors of [start, start + n) that have a selected row
 * and ORs the answers, masked by sel, into out (zeroed by the caller). */
int qv__filter_blocks(int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                      qv__block_fn fn, void *ctx, struct qv_error *err);
/* out = sel (all ones when NULL) over n bits: the answer when every value
 * satisfies the predicate. */
void qv__filter_fill(const uint64_t *sel, int64_t n, uint64_t *out);
/* Bits [off, off + m) of src (ceil(nbits / 64) words) into dst[0..), m <= 1024. */
void qv__bits_extract(const uint64_t *src, int64_t nbits, int64_t off, int64_t m,
                      uint64_t *dst);

/* The paths, by the root's encoding (filter_int.c, filter_dict.c,
 * filter_str.c). Each returns 0, ENOTSUP or an error. */
int qv__filter_packed(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                      const uint64_t *sel, uint64_t *out, struct qv_error *err);
/* A radix node's values [start, start + n) as bytes, whatever its type (its
 * digits: filter_int.c compares them in their own domain). */
int qv__radix_dec_digits(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                         uint8_t *out, struct qv_error *err);
/* Its groups [g0, g0 + m) into g, the last one's digits past the last
 * value checked to be 0, and with `check`, each group checked to be below
 * b^k (a caller that splits them can check that as it splits). */
int qv__radix_groups(struct qv__dec *d, struct qv__node *nd, int64_t g0, int64_t m, uint16_t *g,
                     int check, struct qv_error *err);
/* The error naming the first group of g[0..m) (groups g0 on) not below b^k. */
int qv__radix_bad_group(struct qv__node *nd, int64_t g0, const uint16_t *g, int64_t m,
                        struct qv_error *err);
/* Pairs (k = 2) split and compared in one pass: bit i of `bits` (zeroed
 * here, ceil(2 ng / 64) words) answers ((digit i - a) mod 256) <= d for the
 * 2 ng digits of groups g[0..ng). init fills pc for base b and returns 0
 * when no 16-bit division by b is exact (the caller splits then compares);
 * the kernel returns nonzero when a group is at or above b^2. */
struct qv__pairs_cmp {
    uint16_t m, b, top1; /* multiplier, base, b^2 - 1 */
    uint8_t s, a, d;     /* shift; the arc */
};
int qv__radix_pairs_cmp_init(uint32_t b, uint8_t a, uint8_t d, struct qv__pairs_cmp *pc);
unsigned qv__radix_pairs_cmp(const struct qv__pairs_cmp *pc, const uint16_t *g, int64_t ng,
                             uint64_t *bits);
int qv__filter_radix(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                     const uint64_t *sel, uint64_t *out, struct qv_error *err);
int qv__filter_decoded_int(struct qv__dec *d, const struct qv__fpred *fp, int64_t start,
                           int64_t n, const uint64_t *sel, uint64_t *out, struct qv_error *err);
int qv__filter_constant(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                        const uint64_t *sel, uint64_t *out, struct qv_error *err);
int qv__filter_dict(struct qv__dec *d, struct qv__fstate *st, const struct qv__fpred *fp,
                    int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                    struct qv_error *err);
int qv__filter_rle(struct qv__dec *d, struct qv__fstate *st, const struct qv__fpred *fp,
                   int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                   struct qv_error *err);
int qv__filter_sparse(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                      const uint64_t *sel, uint64_t *out, struct qv_error *err);
int qv__filter_decoded_bin(struct qv__dec *d, struct qv__fstate *st, const struct qv__fpred *fp,
                           int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                           struct qv_error *err);

/* Internal "did not fit" code for encoders that decline (dictionary too
 * large, compression not smaller). Never escapes qv_encode. */
#define QV__DECLINED ENOSPC

#endif /* QV_ENC_INTERNAL_H */
