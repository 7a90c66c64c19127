/*
 * Bucket: an integer as a one-byte token for its magnitude and the low
 * bits that the token leaves open (docs/format.md 5.5.18, format 7.0).
 *
 * The entropy stage's ans frames code bytes, so values of more than 8 bits
 * (the codes of a dictionary of a few hundred to a few thousand entries:
 * flights' 1,000-odd scheduled departure times) were bit-packed at their
 * full width or left to zstd, though the codes of a frequency-ordered
 * dictionary are mostly small. Here each
 * value x of a node with m mantissa bits (0..3) becomes:
 *   - x itself as the token when x < 2^(m+1), with no extra bits;
 *   - otherwise, with k the bit length of x and e = k - 1 - m, the token
 *     2^(m+1) + (k - m - 2) * 2^m + (the m bits below x's top bit), and
 *     x's low e bits as extra bits.
 * The tokens (one byte each) are a child, as ans frames unless those
 * come out no smaller than bit-packing; the extra bits are one buffer, least
 * significant bit first,
 * each vector's starting at a bit offset held by the second child (so a
 * range or a take starts at its vector). A value then costs the entropy of
 * its magnitude class plus its extra bits: near the entropy of a skewed,
 * decreasing distribution, which is what frequency-ordered codes are.
 */
#include "base/cpu_internal.h"
#include "base/dcheck.h"
#include "encoding/enc_internal.h"
#include "encoding/encoding_testing.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

#define BUCKET_M_MAX 3
/* Sampled vectors for the estimate: as the entropy stage's. */
#define BUCKET_SAMPLE_VECTORS 8

/* Tokens a node of `bits`-bit values with m mantissa bits can hold: the
 * 2^(m+1) direct ones, then 2^m for each bit length from m + 2 to bits. */
static unsigned ntokens(unsigned bits, unsigned m) {
    return (2u << m) + (bits - m - 1) * (1u << m);
}

/* Whether m is valid for values of `bits` bits: every token fits a byte. */
static int m_valid(unsigned bits, int64_t m) {
    return m >= 0 && m <= BUCKET_M_MAX && (unsigned)m + 1 <= bits &&
           ntokens(bits, (unsigned)m) <= 256;
}

/* The extra bits of token t (0 for the tokens that are their own value):
 * the encoder's second pass and the decoder's table both go by it. */
static inline unsigned token_ebits(unsigned t, unsigned m) {
    return t < (2u << m) ? 0 : ((t - (2u << m)) >> m) + 1;
}

static inline unsigned token_of(uint64_t x, unsigned m, unsigned *ebits) {
    if (x < (UINT64_C(2) << m)) {
        *ebits = 0;
        return (unsigned)x;
    }
    const unsigned k = 64 - (unsigned)__builtin_clzll(x);
    const unsigned e = k - 1 - m;
    *ebits = e;
    return (2u << m) + ((k - m - 2) << m) + (unsigned)((x >> e) & ((1u << m) - 1));
}

/* ---- Encoding ---- */

/* The test knob (encoding_testing.h): a forced m, -1 for none. */
static int forced_m = -1;

void qv_encode_force_bucket_m(int m) { __atomic_store_n(&forced_m, m, __ATOMIC_RELAXED); }

void qv__bucket_choose(const uint64_t *v, int64_t n, int pt, struct qv__bucket_choice *c) {
    c->est_bytes = -1;
    c->m = 0;
    const unsigned bits = qv__pt_width(pt) * 8;
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    const int64_t take = nvec < BUCKET_SAMPLE_VECTORS ? nvec : BUCKET_SAMPLE_VECTORS;
    if (n <= 0) return;
    const uint64_t mask = qv__mask(bits);
    /* One pass over the sample: counts by bit length k and the 3 bits
     * below the top bit (left-aligned when there are fewer), which give
     * every m's token and extra bits (values below 2^(m+1) <= 16 are
     * tokens of their own, and have k <= 4: the 3 bits hold them). */
    uint32_t h[65][8];
    memset(h, 0, sizeof h);
    int64_t sn = 0;
    for (int64_t k = 0; k < take; k++) {
        const int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
        const int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        for (int64_t i = vs; i < ve; i++) {
            const uint64_t x = v[i] & mask;
            const unsigned len = x ? 64 - (unsigned)__builtin_clzll(x) : 0;
            const unsigned t3 = len >= 4 ? (unsigned)(x >> (len - 4)) & 7
                                         : (unsigned)(x << (4 - len)) & 7;
            h[len][t3]++;
        }
        sn += ve - vs;
    }
    for (unsigned m = 0; m <= BUCKET_M_MAX; m++) {
        if (!m_valid(bits, m)) continue;
        uint64_t cnt[256] = {0}, extra = 0;
        for (unsigned len = 0; len <= bits; len++)
            for (unsigned t3 = 0; t3 < 8; t3++) {
                const uint64_t f = h[len][t3];
                if (!f) continue;
                if (len <= m + 1) {
                    cnt[len ? (1u << (len - 1)) | (t3 >> (4 - len)) : 0] += f;
                } else {
                    cnt[(2u << m) + ((len - m - 2) << m) + (t3 >> (3 - m))] += f;
                    extra += f * (len - 1 - m);
                }
            }
#ifdef QV_DEBUG
        /* The counts give the tokens and extra bits token_of() does. */
        uint64_t want[256] = {0}, want_extra = 0;
        for (int64_t k = 0; k < take; k++) {
            const int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
            const int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
            for (int64_t i = vs; i < ve; i++) {
                unsigned eb;
                want[token_of(v[i] & mask, m, &eb)]++;
                want_extra += eb;
            }
        }
        QV_DCHECK(!memcmp(want, cnt, sizeof cnt) && want_extra == extra);
#endif
        /* The tokens in the entropy stage's ans frames, the extra bits,
         * and the vectors' starts (delta-coded: a few bytes each). */
        const double est = qv__entropy_ans_bytes(cnt, sn, n) +
                           (double)extra * (double)n / (double)sn / 8 + (double)nvec * 2 + 64;
        if (c->est_bytes < 0 || est < c->est_bytes) {
            c->est_bytes = est;
            c->m = m;
        }
    }
}

/* The tokens: the entropy stage's ans frames, which the estimate counted
 * on and bucket's decode cost includes, or the cascade's node when ans
 * frames come out no smaller than the tokens bit-packed (the cascade
 * would weigh ans's decode cost a second time: Zipf codes' tokens, 4.6
 * bits of entropy in 5, stayed bit-packed; and its trial compressions were
 * most of bucket's write time). */
static int tokens(struct qv__enc *e, const uint64_t *tok, int64_t n, int depth,
                  struct qv__enode **out) {
    struct qv__istats s;
    qv__istats_compute(tok, n, 8, &s);
    if (n >= QV__VEC && s.umin != s.umax && qv__allowed(e, QV_ENC_ANS)) {
        struct qv__enode *alt;
        int rc = qv__entropy_ans_encode(e, tok, n, QV__PT_U8, &s, &alt);
        if (rc && rc != QV__DECLINED) return rc; /* declined: the frames came out no smaller */
        if (!rc) {
            if (alt->size < qv__bitpack_bytes(n, qv__bits(s.umax - s.umin)) + 64) {
                *out = alt;
                return 0;
            }
            qv__enode_drop(e, alt);
        }
    }
    return qv__cascade_int(e, tok, n, QV__PT_U8, depth + 1, QV_ENC_AUTO, out);
}

int qv__bucket_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                      unsigned m, struct qv__enode **out) {
    const unsigned w = qv__pt_width(pt), bits = w * 8;
    const uint64_t mask = qv__mask(bits);
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_BUCKET, pt, w, n);
    uint64_t *tok = nd ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    uint64_t *starts = tok ? qv__mem_alloc(&e->mem, (size_t)(nvec + 1) * 8, e->err) : NULL;
    if (!starts) {
        qv__mem_free(&e->mem, tok);
        return ENOMEM;
    }
    uint64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(i & (QV__VEC - 1))) starts[i >> QV__VEC_SHIFT] = total;
        unsigned eb;
        tok[i] = token_of(v[i] & mask, m, &eb);
        total += eb;
    }
    starts[nvec] = total;
    const size_t len = (size_t)((total + 7) / 8);
    /* Eight spare bytes: the writer below stores whole words. */
    uint8_t *buf = qv__mem_alloc(&e->mem, len + 8, e->err);
    int rc = buf ? 0 : ENOMEM;
    if (!rc) {
        uint64_t acc = 0;
        unsigned have = 0;
        size_t at = 0;
        for (int64_t i = 0; i < n; i++) {
            const unsigned eb = token_ebits((unsigned)tok[i], m);
            if (!eb) continue;
            const uint64_t x = v[i] & mask;
            const uint64_t low = x & qv__mask(eb);
            acc |= low << have;
            if (have + eb >= 64) {
                memcpy(buf + at, &acc, 8);
                at += 8;
                acc = have ? low >> (64 - have) : 0;
                have = have + eb - 64;
            } else {
                have += eb;
            }
        }
        memcpy(buf + at, &acc, 8);
        rc = tokens(e, tok, n, depth, &nd->child[0]);
    }
    if (!rc) rc = qv__cascade_int(e, starts, nvec + 1, QV__PT_U64, depth + 1, QV_ENC_AUTO,
                                  &nd->child[1]);
    qv__mem_free(&e->mem, starts);
    qv__mem_free(&e->mem, tok);
    if (rc) {
        qv__mem_free(&e->mem, buf);
        return rc;
    }
    nd->nparams = 1;
    nd->params[0] = m;
    nd->nbufs = 1;
    nd->buf[0] = buf;
    nd->buf_len[0] = len;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decoding ---- */

/* Per node, made at its first decode: the vectors' starts (checked once)
 * and each token's high bits and count of extra bits. Tokens from
 * ntokens() on have no entry: a token there is corrupt. */
struct bucket_cache {
    const uint64_t *starts;
    uint64_t high[256];
    uint64_t low[256]; /* mask of the extra bits */
    uint32_t high32[256], low32[256]; /* the same for values of 32 bits and less */
    uint8_t ebits[256];
    unsigned ntok;
};

static int load(struct qv__dec *d, struct qv__node *nd, struct bucket_cache **out,
                struct qv_error *err) {
    struct bucket_cache *c = nd->cache;
    if (c) {
        *out = c;
        return 0;
    }
    const int64_t nvec = (nd->count + QV__VEC - 1) >> QV__VEC_SHIFT;
    const uint64_t *starts;
    int rc = qv__dec_cached_u64(d, nd->child[1], 0, 0, &starts, err);
    if (rc) return rc;
    if (starts[0] != 0)
        return qv__corrupt(err, nd, "first vector starts at bit %llu, not 0",
                           (unsigned long long)starts[0]);
    for (int64_t k = 0; k < nvec; k++)
        if (starts[k + 1] < starts[k])
            return qv__corrupt(err, nd, "vector %lld starts at bit %llu, before vector %lld's %llu",
                               (long long)(k + 1), (unsigned long long)starts[k + 1], (long long)k,
                               (unsigned long long)starts[k]);
    if (starts[nvec] > nd->buf_len[0] * 8)
        return qv__corrupt(err, nd, "extra bits end at bit %llu of a %llu-byte buffer",
                           (unsigned long long)starts[nvec], (unsigned long long)nd->buf_len[0]);
    c = qv__mem_small(&d->mem, sizeof *c, err);
    if (!c) return ENOMEM;
    const unsigned m = (unsigned)nd->params[0];
    c->starts = starts;
    c->ntok = ntokens(nd->width * 8, m);
    memset(c->high, 0, sizeof c->high);
    memset(c->low, 0, sizeof c->low);
    memset(c->high32, 0, sizeof c->high32);
    memset(c->low32, 0, sizeof c->low32);
    memset(c->ebits, 0, sizeof c->ebits);
    for (unsigned t = 0; t < c->ntok; t++) {
        if (t < (2u << m)) {
            c->high[t] = t;
            continue;
        }
        const unsigned j = t - (2u << m), e = token_ebits(t, m);
        c->high[t] = ((uint64_t)((1u << m) | (j & ((1u << m) - 1)))) << e;
        c->ebits[t] = (uint8_t)e;
        c->low[t] = qv__mask(e);
    }
    for (unsigned t = 0; t < 256; t++) {
        c->high32[t] = (uint32_t)c->high[t];
        c->low32[t] = (uint32_t)c->low[t];
    }
    nd->cache = c;
    *out = c;
    return 0;
}

/* Bit offsets of a vector's first m values, whose tokens are tok, from
 * `sh`: rel[i] = sh + the extra bits of the tokens before i. Returns the
 * offset after the last (sh + the m tokens' bits), or UINT64_MAX when a
 * token is beyond the node's; *tmax: the largest token (the widest field:
 * extra bits grow with the token). */
static uint64_t offsets(const struct bucket_cache *c, const uint8_t *tok, int64_t m, unsigned sh,
                        uint32_t *rel, unsigned *tmax) {
    uint32_t at = sh;
    unsigned top = 0;
    for (int64_t i = 0; i < m; i++) {
        rel[i] = at;
        at += c->ebits[tok[i]];
        top = tok[i] > top ? tok[i] : top;
    }
    *tmax = top;
    return top >= c->ntok ? UINT64_MAX : at;
}

/* The values [lo, hi) of one vector whose tokens are tok and whose extra
 * bits start at `bits` (rel: offsets()'s), which may be read 16 bytes past
 * the vector's last extra bit. `two`: a field may straddle two words (one
 * of more than 57 bits), so two are loaded a value. */
#define VEC_DECODE(T)                                                                            \
    static void vec_##T(const struct bucket_cache *c, const uint8_t *bits, const uint8_t *tok,  \
                        int64_t lo, int64_t hi, const uint32_t *rel, int two, T *o) {            \
        if (!two) {                                                                              \
            for (int64_t i = lo; i < hi; i++) {                                                  \
                uint64_t x;                                                                      \
                memcpy(&x, bits + (rel[i] >> 3), 8);                                             \
                o[i - lo] = (T)(c->high[tok[i]] | ((x >> (rel[i] & 7)) & c->low[tok[i]]));       \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t i = lo; i < hi; i++) {                                                  \
                uint64_t x, y;                                                                   \
                memcpy(&x, bits + (rel[i] >> 3), 8);                                             \
                memcpy(&y, bits + (rel[i] >> 3) + 8, 8);                                         \
                const unsigned r = rel[i] & 7;                                                   \
                x = (x >> r) | ((y << 1) << (63 - r));                                           \
                o[i - lo] = (T)(c->high[tok[i]] | (x & c->low[tok[i]]));                         \
            }                                                                                    \
        }                                                                                        \
    }
VEC_DECODE(uint8_t)
VEC_DECODE(uint16_t)
VEC_DECODE(uint32_t)
VEC_DECODE(uint64_t)

#if QV__X86_DISPATCH
/* AVX2: eight values (u32) or four (u64) a step, their words gathered at
 * their byte offsets and shifted by their bit offsets lane by lane, their
 * tokens' high bits and masks gathered from the tables. One-word fields
 * only; the generic loop does the tail. Same results as vec_uint32_t and
 * vec_uint64_t (test_enc_bucket compares every level). */
static QV__TARGET_AVX2 void vec32_avx2(const struct bucket_cache *c, const uint8_t *bits,
                                       const uint8_t *tok, int64_t lo, int64_t hi,
                                       const uint32_t *rel, uint32_t *o) {
    const __m256i seven = _mm256_set1_epi32(7);
    const __m256i lows = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const long long *base = (const long long *)(const void *)bits;
    int64_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        const __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(rel + i));
        const __m256i off = _mm256_srli_epi32(r, 3);
        const __m256i sh = _mm256_and_si256(r, seven);
        __m256i w0 = _mm256_i32gather_epi64(base, _mm256_castsi256_si128(off), 1);
        __m256i w1 = _mm256_i32gather_epi64(base, _mm256_extracti128_si256(off, 1), 1);
        w0 = _mm256_srlv_epi64(w0, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(sh)));
        w1 = _mm256_srlv_epi64(w1, _mm256_cvtepu32_epi64(_mm256_extracti128_si256(sh, 1)));
        const __m256i x = _mm256_permute2x128_si256(_mm256_permutevar8x32_epi32(w0, lows),
                                                    _mm256_permutevar8x32_epi32(w1, lows), 0x20);
        uint64_t t8;
        memcpy(&t8, tok + i, 8);
        const __m256i t = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)t8));
        const __m256i h = _mm256_i32gather_epi32((const int *)c->high32, t, 4);
        const __m256i m = _mm256_i32gather_epi32((const int *)c->low32, t, 4);
        _mm256_storeu_si256((__m256i *)(void *)(o + (i - lo)),
                            _mm256_or_si256(h, _mm256_and_si256(x, m)));
    }
    if (i < hi) vec_uint32_t(c, bits, tok, i, hi, rel, 0, o + (i - lo));
}

static QV__TARGET_AVX2 void vec64_avx2(const struct bucket_cache *c, const uint8_t *bits,
                                       const uint8_t *tok, int64_t lo, int64_t hi,
                                       const uint32_t *rel, uint64_t *o) {
    const __m128i seven = _mm_set1_epi32(7);
    const long long *base = (const long long *)(const void *)bits;
    int64_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        const __m128i r = _mm_loadu_si128((const __m128i *)(const void *)(rel + i));
        __m256i w = _mm256_i32gather_epi64(base, _mm_srli_epi32(r, 3), 1);
        w = _mm256_srlv_epi64(w, _mm256_cvtepu32_epi64(_mm_and_si128(r, seven)));
        uint32_t t4;
        memcpy(&t4, tok + i, 4);
        const __m128i t = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)t4));
        const __m256i h = _mm256_i32gather_epi64((const long long *)c->high, t, 8);
        const __m256i m = _mm256_i32gather_epi64((const long long *)c->low, t, 8);
        _mm256_storeu_si256((__m256i *)(void *)(o + (i - lo)),
                            _mm256_or_si256(h, _mm256_and_si256(w, m)));
    }
    if (i < hi) vec_uint64_t(c, bits, tok, i, hi, rel, 0, o + (i - lo));
}
#endif

static int bucket_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                           void *out, struct qv_error *err) {
    struct bucket_cache *c = NULL;
    int rc = load(d, nd, &c, err);
    if (rc) return rc;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    /* A vector's tokens, their bit offsets, and room for a copy of its
     * extra bits (at most 63 a value) with 16 bytes to spare. */
    const size_t pad_cap = QV__VEC * 63 / 8 + 1 + 16;
    uint8_t *tok = qv__stack_push(&d->stack, QV__VEC, err);
    uint32_t *rel = tok ? qv__stack_push(&d->stack, QV__VEC * 4, err) : NULL;
    uint8_t *pad = rel ? qv__stack_push(&d->stack, pad_cap, err) : NULL;
    if (!pad) {
        qv__stack_release(&d->stack, mk);
        return ENOMEM;
    }
    const uint8_t *buf = nd->buf[0];
    const uint64_t len = nd->buf_len[0];
    const unsigned w = nd->width;
    for (int64_t at = start; at < start + n && !rc;) {
        const int64_t k = at >> QV__VEC_SHIFT, vs = k << QV__VEC_SHIFT;
        const int64_t ve = vs + QV__VEC < nd->count ? vs + QV__VEC : nd->count;
        const int64_t hi = start + n < ve ? start + n : ve;
        /* The whole vector's tokens, offsets and range before any bit is
         * read, whatever part of it is asked for: a vector never reads
         * past its own bits, and a take finds a vector whose tokens
         * disagree with its starts as a full decode does. */
        if ((rc = qv__dec_word(d, nd->child[0], vs, ve - vs, tok, err))) break;
        const uint64_t p = c->starts[k], end = c->starts[k + 1];
        const unsigned sh = (unsigned)(p & 7);
        const int64_t lo = at - vs, m = hi - vs;
        unsigned tmax;
        const uint64_t after = offsets(c, tok, ve - vs, sh, rel, &tmax);
        if (after == UINT64_MAX) {
            int64_t i = 0;
            while (tok[i] < c->ntok) i++;
            rc = qv__corrupt(err, nd, "token %u at value %lld: %u-bit values with %lld mantissa "
                             "bits have %u tokens", tok[i], (long long)(vs + i), w * 8,
                             (long long)nd->params[0], c->ntok);
            break;
        }
        const uint64_t used = after - sh;
        if (p + used != end) {
            rc = qv__corrupt(err, nd, "vector %lld's tokens take %llu extra bits, its starts %llu",
                             (long long)k, (unsigned long long)used,
                             (unsigned long long)(end - p));
            break;
        }
        /* The vector's bits in place when 16 bytes past its end are still
         * the buffer's; else (the node's last bytes) a zero-padded copy. */
        const uint8_t *bits = buf + (p >> 3);
        const uint64_t nbytes = (after + 7) / 8;
        if ((p >> 3) + nbytes + 16 > len) {
            memset(pad, 0, pad_cap);
            memcpy(pad, bits, (size_t)nbytes);
            bits = pad;
        }
        uint8_t *o = (uint8_t *)out + (size_t)(at - start) * w;
        const int two = c->ebits[tmax] > 57;
        switch (w) {
        case 1: vec_uint8_t(c, bits, tok, lo, m, rel, two, (uint8_t *)o); break;
        case 2: vec_uint16_t(c, bits, tok, lo, m, rel, two, (uint16_t *)(void *)o); break;
#if QV__X86_DISPATCH
        case 4:
            if (qv__cpu_level() >= QV__CPU_AVX2) vec32_avx2(c, bits, tok, lo, m, rel, (uint32_t *)(void *)o);
            else vec_uint32_t(c, bits, tok, lo, m, rel, 0, (uint32_t *)(void *)o);
            break;
        default:
            if (!two && qv__cpu_level() >= QV__CPU_AVX2)
                vec64_avx2(c, bits, tok, lo, m, rel, (uint64_t *)(void *)o);
            else vec_uint64_t(c, bits, tok, lo, m, rel, two, (uint64_t *)(void *)o);
            break;
#else
        case 4: vec_uint32_t(c, bits, tok, lo, m, rel, 0, (uint32_t *)(void *)o); break;
        default: vec_uint64_t(c, bits, tok, lo, m, rel, two, (uint64_t *)(void *)o); break;
#endif
        }
        at = hi;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ---- */

/* Integer word types. Param 0: m, 0..3, with every token of the node's
 * width below 256; buffer 0: the extra bits; children tokens (u8, count)
 * and starts (u64, ceil(count / 1024) + 1: checked when decoded). */
static int bucket_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 1, 1, 2, err))) return rc;
    if (!m_valid(nd->width * 8, nd->params[0]))
        return qv__corrupt(err, nd, "%lld mantissa bits for %u-bit values",
                           (long long)nd->params[0], nd->width * 8);
    if ((rc = qv__want_child(nd, 0, QV__PT_U8, nd->count, err))) return rc;
    return qv__want_child(nd, 1, QV__PT_U64, ((nd->count + QV__VEC - 1) >> QV__VEC_SHIFT) + 1,
                          err);
}

static int bucket_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_BUCKET, s->pt);
    struct qv__bucket_choice c = {.m = 0, .est_bytes = -1};
    if (s->bucket) c = *s->bucket;
    else qv__bucket_choose(s->u64, s->n, s->pt, &c);
    const int fm = __atomic_load_n(&forced_m, __ATOMIC_RELAXED);
    if (fm >= 0 && m_valid(s->width * 8, fm)) c.m = (unsigned)fm;
    return qv__bucket_encode(e, s->u64, s->n, s->pt, s->depth, c.m, out);
}

const struct qv__encoding qv__enc_bucket = {
    .id = QV_ENC_BUCKET,
    .name = "bucket",
    .decode_cost = 20,
    .dec_word = bucket_dec_word,
    .validate = bucket_validate,
    .build = bucket_build,
    .params = {"m"},
    .children = {"tokens", "starts"},
};
