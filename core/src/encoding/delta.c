/*
 * Delta: each 1024-value vector stores its first value in the `bases`
 * child and the differences to the previous value in the `deltas` child
 * (wrapping at the type's width). A range decode starts at the first
 * vector it touches, never earlier, so random access costs at most one
 * vector of prefix sum. The delta slot at a vector start is unused; the
 * encoder fills it with a value inside the deltas' range, so it does not
 * widen their bit-packing (qv__delta_fill).
 */
#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

int qv__delta_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                     struct qv__enode **out) {
    const unsigned bits = qv__pt_width(pt) * 8;
    const uint64_t mask = qv__mask(bits);
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_DELTA, pt, qv__pt_width(pt), n);
    if (!nd) return ENOMEM;
    uint64_t *bases = qv__mem_alloc(&e->mem, (size_t)(nvec ? nvec : 1) * 8, e->err);
    uint64_t *deltas = bases ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    if (!deltas) {
        qv__mem_free(&e->mem, bases);
        return ENOMEM;
    }
    int64_t dmin = INT64_MAX, dmax = INT64_MIN;
    for (int64_t k = 0; k < nvec; k++) {
        int64_t vs = k << QV__VEC_SHIFT, ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        bases[k] = v[vs];
        for (int64_t i = vs + 1; i < ve; i++) {
            uint64_t dd = (v[i] - v[i - 1]) & mask;
            deltas[i] = dd;
            int64_t s = qv__sext(dd, bits);
            if (s < dmin) dmin = s;
            if (s > dmax) dmax = s;
        }
    }
    const uint64_t fill = qv__delta_fill(dmin, dmax, bits);
    for (int64_t k = 0; k < nvec; k++) deltas[k << QV__VEC_SHIFT] = fill;
    int rc = qv__cascade_int(e, bases, nvec, pt, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (!rc) rc = qv__cascade_int(e, deltas, n, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    qv__mem_free(&e->mem, deltas);
    qv__mem_free(&e->mem, bases);
    if (rc) return rc;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decode kernels ----
 *
 * A vector's values are a running sum: x starts at the vector's base and
 * each later slot adds its delta. The sum runs along the values' natural
 * order, which the bit-packed lanes do not follow, so it cannot be split
 * across lanes without changing the wire format; instead the kernels sum
 * in registers: a 4- or 8-value block gets its own prefix sum in a few
 * shifts and adds, and only one add per block carries the running total
 * (the block's last value is broadcast off the critical path), so the
 * chain is one add per block instead of one per value.
 *
 * Each kernel computes out[i] = x += d[i] (+ add) for i in [0, m) and
 * returns the last x; out may equal d (in-place). All arithmetic wraps at
 * the output width, as the encoder's deltas do. */

#define PREFIX(T)                                                                                \
    static T prefix_##T(T *out, const T *d, int64_t m, T x) {                                    \
        for (int64_t i = 0; i < m; i++) {                                                        \
            x = (T)(x + d[i]);                                                                   \
            out[i] = x;                                                                          \
        }                                                                                        \
        return x;                                                                                \
    }
PREFIX(uint8_t)
PREFIX(uint16_t)

static QV__ALWAYS_INLINE uint32_t prefix32_body(uint32_t *out, const uint32_t *d, int64_t m,
                                                 uint32_t x) {
    for (int64_t i = 0; i < m; i++) out[i] = x += d[i];
    return x;
}
static QV__ALWAYS_INLINE uint64_t prefix64_body(uint64_t *out, const uint64_t *d, int64_t m,
                                                 uint64_t x) {
    for (int64_t i = 0; i < m; i++) out[i] = x += d[i];
    return x;
}
/* 32-bit deltas (unpacked from lanes of 32 bits) widened to 64-bit values
 * with the frame-of-reference `add` folded in: the FOR node under a delta
 * costs no pass of its own. */
static QV__ALWAYS_INLINE uint64_t prefix64w_body(uint64_t *out, const uint32_t *d, int64_t m,
                                                  uint64_t add, uint64_t x) {
    for (int64_t i = 0; i < m; i++) out[i] = x += (uint64_t)d[i] + add;
    return x;
}

static uint32_t prefix32_generic(uint32_t *out, const uint32_t *d, int64_t m, uint32_t x) {
    return prefix32_body(out, d, m, x);
}
static uint64_t prefix64_generic(uint64_t *out, const uint64_t *d, int64_t m, uint64_t x) {
    return prefix64_body(out, d, m, x);
}
static uint64_t prefix64w_generic(uint64_t *out, const uint32_t *d, int64_t m, uint64_t add,
                                  uint64_t x) {
    return prefix64w_body(out, d, m, add, x);
}

#if QV__X86_DISPATCH
/* Inclusive prefix sum of four 64-bit lanes: add the lanes shifted up by
 * one, then by two. */
static QV__TARGET_AVX2 QV__ALWAYS_INLINE __m256i scan4_avx2(__m256i v) {
    const __m256i z = _mm256_setzero_si256();
    __m256i s1 = _mm256_blend_epi32(_mm256_permute4x64_epi64(v, 0x90), z, 0x03);
    v = _mm256_add_epi64(v, s1);
    return _mm256_add_epi64(v, _mm256_permute2x128_si256(v, v, 0x08));
}
/* Inclusive prefix sum of eight 32-bit lanes: within each 128-bit half by
 * byte shifts, then the low half's total added to the high half. */
static QV__TARGET_AVX2 QV__ALWAYS_INLINE __m256i scan8_avx2(__m256i v) {
    v = _mm256_add_epi32(v, _mm256_slli_si256(v, 4));
    v = _mm256_add_epi32(v, _mm256_slli_si256(v, 8));
    __m256i t = _mm256_shuffle_epi32(v, 0xFF);
    return _mm256_add_epi32(v, _mm256_permute2x128_si256(t, t, 0x08));
}
static QV__TARGET_AVX2 QV__ALWAYS_INLINE __m256i last64_avx2(__m256i v) {
    return _mm256_permute4x64_epi64(v, 0xFF);
}

/* Four deltas from d + i: 64-bit ones, or (wide) 32-bit ones widened with
 * `add` added. */
static QV__TARGET_AVX2 QV__ALWAYS_INLINE __m256i load4_avx2(const void *d, int64_t i, __m256i va,
                                                           int wide) {
    if (!wide) return _mm256_loadu_si256((const __m256i *)(const void *)((const uint64_t *)d + i));
    const __m128i *p = (const __m128i *)(const void *)((const uint32_t *)d + i);
    return _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm_loadu_si128(p)), va);
}
/* prefix64 and (wide, a constant) prefix64w: eight values a step. */
static QV__TARGET_AVX2 QV__ALWAYS_INLINE uint64_t prefix64_avx2_body(uint64_t *out, const void *d,
                                                                     int64_t m, uint64_t add,
                                                                     uint64_t x, int wide) {
    __m256i carry = _mm256_set1_epi64x((long long)x), va = _mm256_set1_epi64x((long long)add);
    int64_t i = 0;
    for (; i + 8 <= m; i += 8) {
        __m256i a = load4_avx2(d, i, va, wide), b = load4_avx2(d, i + 4, va, wide);
        a = scan4_avx2(a);
        b = scan4_avx2(b);
        b = _mm256_add_epi64(b, last64_avx2(a));
        __m256i tot = last64_avx2(b);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_add_epi64(a, carry));
        _mm256_storeu_si256((__m256i *)(void *)(out + i + 4), _mm256_add_epi64(b, carry));
        carry = _mm256_add_epi64(carry, tot);
    }
    x = (uint64_t)_mm256_extract_epi64(carry, 0);
    return wide ? prefix64w_body(out + i, (const uint32_t *)d + i, m - i, add, x)
                : prefix64_body(out + i, (const uint64_t *)d + i, m - i, x);
}
static QV__TARGET_AVX2 uint64_t prefix64_avx2(uint64_t *out, const uint64_t *d, int64_t m,
                                              uint64_t x) {
    return prefix64_avx2_body(out, d, m, 0, x, 0);
}
static QV__TARGET_AVX2 uint64_t prefix64w_avx2(uint64_t *out, const uint32_t *d, int64_t m,
                                               uint64_t add, uint64_t x) {
    return prefix64_avx2_body(out, d, m, add, x, 1);
}

static QV__TARGET_AVX2 uint32_t prefix32_avx2(uint32_t *out, const uint32_t *d, int64_t m,
                                              uint32_t x) {
    __m256i carry = _mm256_set1_epi32((int)x);
    const __m256i seven = _mm256_set1_epi32(7);
    int64_t i = 0;
    for (; i + 16 <= m; i += 16) {
        __m256i a = scan8_avx2(_mm256_loadu_si256((const __m256i *)(const void *)(d + i)));
        __m256i b = scan8_avx2(_mm256_loadu_si256((const __m256i *)(const void *)(d + i + 8)));
        b = _mm256_add_epi32(b, _mm256_permutevar8x32_epi32(a, seven));
        __m256i tot = _mm256_permutevar8x32_epi32(b, seven);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_add_epi32(a, carry));
        _mm256_storeu_si256((__m256i *)(void *)(out + i + 8), _mm256_add_epi32(b, carry));
        carry = _mm256_add_epi32(carry, tot);
    }
    x = (uint32_t)_mm256_extract_epi32(carry, 0);
    return prefix32_body(out + i, d + i, m - i, x);
}
#endif

static uint32_t prefix32(uint32_t *out, const uint32_t *d, int64_t m, uint32_t x) {
    return QV__DISPATCH2(prefix32, out, d, m, x);
}
static uint64_t prefix64(uint64_t *out, const uint64_t *d, int64_t m, uint64_t x) {
    return QV__DISPATCH2(prefix64, out, d, m, x);
}
static uint64_t prefix64w(uint64_t *out, const uint32_t *d, int64_t m, uint64_t add,
                          uint64_t x) {
    return QV__DISPATCH2(prefix64w, out, d, m, add, x);
}

/* The running value just before slot k of a vector whose deltas are d
 * (k >= 1): the base plus the deltas of slots 1..k-1. A plain reduction,
 * which the compiler vectorizes, so a range that starts inside a vector
 * skips its head without storing it. */
#define SUM(N, T, D)                                                                             \
    static T N(const D *d, int64_t k, T base, T add) {                                           \
        T s = 0;                                                                                 \
        for (int64_t i = 1; i < k; i++) s = (T)(s + (T)d[i]);                                    \
        return (T)(base + s + (T)((T)(k - 1) * add));                                            \
    }
SUM(sum8, uint8_t, uint8_t)
SUM(sum16, uint16_t, uint16_t)
SUM(sum32, uint32_t, uint32_t)
SUM(sum64, uint64_t, uint64_t)
SUM(sum64w, uint64_t, uint32_t)

/* Writes values [lo, hi) of one vector (offsets from its start, lo < hi)
 * to out from the vector's deltas d (slot 0 ignored), base and, for 64-bit
 * values with 32-bit deltas, the frame of reference `add`. */
static void vec_out(void *out, const void *d, unsigned w, int wide, int64_t lo, int64_t hi,
                    uint64_t base, uint64_t add) {
    int64_t from = lo ? lo : 1;
    if (wide) {
        uint64_t *o = out;
        const uint32_t *dd = d;
        uint64_t x = lo ? sum64w(dd, lo, base, add) : base;
        if (!lo) *o++ = base;
        prefix64w(o, dd + from, hi - from, add, x);
        return;
    }
    /* One case per width, the same steps on its own types: the first value
     * (the base, or the sum of the deltas up to lo), then the running sum. */
#define VEC_OUT(T, SUM, PREFIX)                                                                  \
    {                                                                                            \
        T *o = out;                                                                              \
        const T *dd = d;                                                                         \
        T x = lo ? SUM(dd, lo, (T)base, 0) : (T)base;                                            \
        if (!lo) *o++ = x;                                                                       \
        PREFIX(o, dd + from, hi - from, x);                                                      \
        break;                                                                                   \
    }
    switch (w) {
    case 1: VEC_OUT(uint8_t, sum8, prefix_uint8_t)
    case 2: VEC_OUT(uint16_t, sum16, prefix_uint16_t)
    case 4: VEC_OUT(uint32_t, sum32, prefix32)
    default: VEC_OUT(uint64_t, sum64, prefix64)
    }
#undef VEC_OUT
}

/* The bit-packed node under the deltas (directly or under a FOR node) and
 * the reference to add, when the fused path applies: 32- or 64-bit values. */
static const struct qv__node *packed_deltas(const struct qv__node *nd, uint64_t *ref) {
    const struct qv__node *c = nd->child[1];
    *ref = 0;
    if (nd->width != 4 && nd->width != 8) return NULL;
    if (c->enc == QV_ENC_FOR && c->child[0]->enc == QV_ENC_BITPACK &&
        c->child[0]->pt == c->pt) {
        *ref = (uint64_t)c->params[0];
        c = c->child[0];
    }
    return c->enc == QV_ENC_BITPACK ? c : NULL;
}

/* Decoded vectors kept for takes. A value inside a vector is the sum of
 * the deltas from the vector's start, so a take of one row decodes up to a
 * whole vector of deltas (and, under them, patched exceptions or a
 * compressed frame): most of what a row of a string column's offsets or a
 * run-end column's values costs. A call that decodes few values (a take:
 * at most a vector's worth in all) keeps the vectors it comes back to,
 * summed from their start to its last row, up to DELTA_SLOTS per node (a
 * vector met once is summed into the output as before), least recently used
 * replaced first, so takes repeated on one open file (the file layer's take
 * cache keeps the decoders) do not sum them again (lineitem SF1, 100 random rows, a warm take: 4.2 -> 3.6 M instructions,
 * callgrind). Ranges that start at a vector's start need no sum and are
 * decoded as before, and a range decode (a scan) never uses the cache. The
 * vectors are blocks of the decoder's arena, charged to its reservation:
 * at most DELTA_SLOTS x 8 KiB per node. */
#define DELTA_SLOTS 8

#define DELTA_SEEN 16

struct delta_vcache {
    uint64_t clock;
    struct qv__seen seen; /* DELTA_SEEN vectors summed without being kept */
    struct {
        int64_t vec; /* -1: empty */
        int64_t len; /* values of it decoded, from its start */
        uint64_t used;
        uint8_t *v;  /* room for QV__VEC values of the node's width */
    } s[DELTA_SLOTS];
};

static int delta_dec_range(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                           void *out, struct qv_error *err);

/* Values [lo, hi) of vector vec (lo past its start) from the kept vectors,
 * decoding the vector's values up to hi into one first when it holds
 * fewer (a decode from the vector's start sums nothing it does not keep,
 * so a first take costs what it did). */
static int from_kept(struct qv__dec *d, struct qv__node *nd, int64_t vec, int64_t lo, int64_t hi,
                     uint8_t *o, struct qv_error *err) {
    struct delta_vcache *c = nd->vcache;
    const unsigned w = nd->width;
    if (!c) {
        c = qv__mem_small(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        for (int i = 0; i < DELTA_SLOTS; i++) c->s[i].vec = -1;
        qv__seen_init(&c->seen);
        nd->vcache = c;
    }
    c->clock++;
    const int64_t vs = vec << QV__VEC_SHIFT;
    int slot = -1;
    for (int i = 0; i < DELTA_SLOTS; i++)
        if (c->s[i].vec == vec) slot = i;
    if (slot < 0) {
        /* A vector met the first time is summed into the output, as
         * before, and only noted: a take that visits it once (a cold take)
         * holds no more memory than it did. */
        if (!qv__seen_before(&c->seen, DELTA_SEEN, vec))
            return delta_dec_range(d, nd, lo, hi - lo, o, err);
        slot = 0;
        for (int i = 1; i < DELTA_SLOTS && c->s[slot].vec >= 0; i++)
            if (c->s[i].vec < 0 || c->s[i].used < c->s[slot].used) slot = i;
        if (!c->s[slot].v) {
            c->s[slot].v = qv__mem_buf(&d->mem, (size_t)QV__VEC * w, err);
            if (!c->s[slot].v) return ENOMEM;
        }
        c->s[slot].vec = -1;
        c->s[slot].len = 0;
    }
    if (c->s[slot].len < hi - vs) {
        c->s[slot].vec = -1;
        int rc = delta_dec_range(d, nd, vs, hi - vs, c->s[slot].v, err);
        if (rc) return rc;
        c->s[slot].vec = vec;
        c->s[slot].len = hi - vs;
    }
    c->s[slot].used = c->clock;
    memcpy(o, c->s[slot].v + (size_t)(lo - vs) * w, (size_t)(hi - lo) * w);
    return 0;
}

/* Deltas that are one constant (a row number, an id, a timestamp at a
 * fixed interval): value j of a vector is its base plus j steps, written in
 * one pass instead of the constant filled in and summed again, and a value
 * inside a vector costs no sum of the ones before it. Same wrap-around as
 * the running sum: arithmetic modulo the value's width. */
#define SEQ_OUT(T)                                                                               \
    {                                                                                            \
        T *o = out, s = (T)step;                                                                 \
        for (int64_t pos = start, end = start + n; pos < end;) {                                 \
            int64_t vec = pos >> QV__VEC_SHIFT, vs = vec << QV__VEC_SHIFT;                       \
            int64_t hi = end < vs + QV__VEC ? end : vs + QV__VEC;                                \
            T x = (T)(bases[vec] + (T)(pos - vs) * s);                                           \
            for (int64_t i = pos; i < hi; i++, x = (T)(x + s)) *o++ = x;                         \
            pos = hi;                                                                            \
        }                                                                                        \
        break;                                                                                   \
    }
static int seq_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                   struct qv_error *err) {
    const uint64_t *bases;
    struct qv__node *c = nd->child[1];
    int rc = qv__dec_cached_u64(d, nd->child[0], 0, 0, &bases, err);
    if (rc || (rc = qv__dec_check(d, c, start, n, err))) return rc;
    uint64_t step = 0;
    memcpy(&step, c->buf[0], nd->width); /* validated: the node's width */
    switch (nd->width) {
    case 1: SEQ_OUT(uint8_t)
    case 2: SEQ_OUT(uint16_t)
    case 4: SEQ_OUT(uint32_t)
    default: SEQ_OUT(uint64_t)
    }
    return 0;
}
#undef SEQ_OUT

int qv__delta_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                  struct qv_error *err) {
    if (nd->child[1]->enc == QV_ENC_CONSTANT) return seq_dec(d, nd, start, n, out, err);
    /* A small call (a take's rows) inside vectors: from the kept vectors. */
    if (d->want <= QV__VEC && n <= 64 && (start & (QV__VEC - 1))) {
        uint8_t *o = out;
        for (int64_t pos = start, end = start + n; pos < end;) {
            int64_t vec = pos >> QV__VEC_SHIFT, vs = vec << QV__VEC_SHIFT;
            int64_t vend = vs + QV__VEC < nd->count ? vs + QV__VEC : nd->count;
            int64_t hi = end < vend ? end : vend;
            int rc = pos == vs ? delta_dec_range(d, nd, pos, hi - pos, o, err)
                               : from_kept(d, nd, vec, pos, hi, o, err);
            if (rc) return rc;
            o += (size_t)(hi - pos) * nd->width;
            pos = hi;
        }
        return 0;
    }
    return delta_dec_range(d, nd, start, n, out, err);
}

static int delta_dec_range(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                           void *out, struct qv_error *err) {
    const uint64_t *bases;
    /* -1 limit and no ordering: bases are arbitrary values. */
    int rc = qv__dec_cached_u64(d, nd->child[0], 0, 0, &bases, err);
    if (rc) return rc;
    const unsigned w = nd->width;
    uint64_t ref;
    const struct qv__node *bp = packed_deltas(nd, &ref);
    const unsigned bw = bp ? (unsigned)bp->params[0] : 0;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    /* One vector of deltas, 8 bytes a value whatever w (the unpack of a
     * 64-bit vector may need them). */
    uint8_t *tmp = qv__stack_push(&d->stack, (size_t)QV__VEC * 8, err);
    if (!tmp) return ENOMEM;
    uint8_t *o = out;
    int64_t pos = start, end = start + n;
    while (pos < end) {
        int64_t vec = pos >> QV__VEC_SHIFT, vs = vec << QV__VEC_SHIFT;
        int64_t vend = vs + QV__VEC < nd->count ? vs + QV__VEC : nd->count;
        int64_t hi = end < vend ? end : vend, lo = pos;
        if (bp && vend - vs == QV__VEC && hi - vs > 64) {
            /* A full packed vector: unpack it into L1 scratch and sum while
             * it is hot, the FOR reference folded into the sum. Widths above
             * 32 bits unpack to 64-bit lanes with the reference added. */
            /* The packed bytes are read here, not through the dispatch:
             * verify (and, reading on demand, fetch) them first. */
            if ((rc = qv__dec_check(d, (struct qv__node *)bp, vs, QV__VEC, err))) break;
            const uint8_t *vin = bw ? bp->buf[0] + (uint64_t)vec * 128 * bw : bp->buf[0];
            if (w == 4) {
                qv__unpack32((const uint32_t *)(const void *)vin, bw, (uint32_t *)(void *)tmp,
                             (uint32_t)ref);
                vec_out(o, tmp, 4, 0, lo - vs, hi - vs, bases[vec], 0);
            } else if (bw <= 32) {
                qv__unpack32((const uint32_t *)(const void *)vin, bw, (uint32_t *)(void *)tmp, 0);
                vec_out(o, tmp, 8, 1, lo - vs, hi - vs, bases[vec], ref);
            } else {
                qv__unpack64(vin, bw, (uint64_t *)(void *)tmp, ref);
                vec_out(o, tmp, 8, 0, lo - vs, hi - vs, bases[vec], 0);
            }
        } else {
            /* Deltas of [vs, hi) from the child, summed from the vector
             * start; straight into the output when the range starts there. */
            int64_t m = hi - vs;
            uint8_t *dst = lo == vs ? o : tmp;
            if ((rc = qv__dec_word(d, nd->child[1], vs, m, dst, err))) break;
            vec_out(o, dst, w, 0, lo - vs, hi - vs, bases[vec], 0);
        }
        o += (size_t)(hi - lo) * w;
        pos = hi;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ---- */

/* Integers. Child 0: the first value of each 1024-value vector; child 1:
 * deltas to the previous value (the slot at a vector start is ignored). */
static int delta_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 0, 0, 2, err))) return rc;
    if ((rc = qv__want_child(nd, 0, nd->pt, (nd->count + QV__VEC - 1) >> QV__VEC_SHIFT, err)))
        return rc;
    return qv__want_child(nd, 1, nd->pt, nd->count, err);
}

static int delta_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_DELTA, s->pt);
    return qv__delta_encode(e, s->u64, s->n, s->pt, s->depth, out);
}

const struct qv__encoding qv__enc_delta = {
    .id = QV_ENC_DELTA,
    .name = "delta",
    .decode_cost = 2,
    .dec_word = qv__delta_dec,
    .validate = delta_validate,
    .build = delta_build,
    .children = {"bases", "deltas"},
};
