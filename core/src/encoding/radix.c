/*
 * Radix: integers of b possible values (0 .. b-1, b from 3 to 256) held k
 * at a time as the digits of one base-b number, the group (docs/format.md
 * 5.5.20, format 9.0). Group j holds values jk .. jk+k-1, the first as
 * its least significant digit; the groups are a u16 child, cascaded like
 * any integers (bit-packed, mostly).
 *
 * Bit-packing spends whole bits on every value: 11 values (lineitem's
 * discounts, 0.00 to 0.10) take 4 bits, though log2(11) is 3.46. Two of
 * them as one number below 121 take 7 bits, 3.5 a value, and decode as a
 * bit-packed width plus one division by a constant. A range that fills at
 * most about 70% of its power of two saves a tenth to a fifth of packing's
 * bits this way (3 values: 1.6 bits against 2; 5: 2.33 against 3; 10: 3.33
 * against 4), and a range that fills it saves nothing, which is when the
 * cascade does not propose it.
 */
#include "base/cpu_internal.h"
#include "base/dcheck.h"
#include "encoding/enc_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

/* Groups decoded per step of the decoder (a stack slot of 2 KiB). */
#define RADIX_CHUNK 1024

uint32_t qv__radix_power(uint32_t b, unsigned k) {
    uint32_t p = 1;
    for (unsigned i = 0; i < k; i++) {
        if ((uint64_t)p * b > 65536) return 0;
        p *= b;
    }
    return p;
}

unsigned qv__radix_digits(uint32_t b, unsigned *gbits) {
    if (b < 3 || b > 256) return 0;
    unsigned best = 0, bw = 0;
    /* The fewest bits a value; among equals, the fewest digits a group (a
     * division less a group). */
    for (unsigned k = 2; k <= QV__RADIX_MAX_K; k++) {
        uint32_t p = qv__radix_power(b, k);
        if (!p) break;
        unsigned w = qv__bits(p - 1);
        if (!best || (uint64_t)w * best < (uint64_t)bw * k) {
            best = k;
            bw = w;
        }
    }
    if (gbits) *gbits = bw;
    return best;
}

/* ---- Encode ---- */

int qv__radix_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, uint32_t b,
                     unsigned k, int depth, struct qv__enode **out) {
    QV_DCHECK(b >= 3 && b <= 256 && k >= 2 && qv__radix_power(b, k));
    const int64_t ng = (n + k - 1) / k;
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_RADIX, pt, qv__pt_width(pt), n);
    uint64_t *g = nd ? qv__mem_alloc(&e->mem, (size_t)(ng ? ng : 1) * 8, e->err) : NULL;
    if (!g) return ENOMEM;
    for (int64_t j = 0; j < ng; j++) {
        const int64_t lo = j * k, hi = lo + k < n ? lo + k : n;
        uint64_t x = 0;
        for (int64_t i = hi; i-- > lo;) {
            QV_DCHECK(v[i] < b);
            x = x * b + v[i];
        }
        g[j] = x;
    }
    int rc = qv__cascade_int(e, g, ng, QV__PT_U16, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    qv__mem_free(&e->mem, g);
    if (rc) return rc;
    nd->nparams = 2;
    nd->params[0] = b;
    nd->params[1] = k;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decode ---- */

/* q = x / b for every x < 2^16: (x * m) >> 32 with m = floor(2^32 / b) + 1
 * (m * b - 2^32 is at most b <= 2^16, so the error stays below one). */
static inline uint32_t div_b(uint32_t x, uint32_t m) { return (uint32_t)(((uint64_t)x * m) >> 32); }

/* Pairs (k = 2), the common case: a loop the compiler vectorizes, built
 * for AVX2 too (its 32 x 32 -> 64-bit multiplies take four lanes, the
 * baseline build's two; bench/run small_ints, 11 values: 0.38 -> 0.34 ns
 * a value decoded). It also flags a group at or above b^2 (a quotient of
 * b or more), so that no pass of its own checks the groups. */
#define PAIRS(T)                                                                                 \
    static QV__ALWAYS_INLINE unsigned pairs_body_##T(const uint16_t *restrict g, int64_t n,     \
                                                     uint32_t b, uint32_t m, T *restrict o) {    \
        unsigned bad = 0;                                                                        \
        for (int64_t p = 0; p < n; p++) {                                                        \
            const uint32_t x = g[p], q = div_b(x, m);                                            \
            o[2 * p] = (T)(x - q * b);                                                           \
            o[2 * p + 1] = (T)q;                                                                 \
            bad |= q >= b;                                                                       \
        }                                                                                        \
        return bad;                                                                              \
    }                                                                                            \
    static unsigned pairs_##T##_generic(const uint16_t *restrict g, int64_t n, uint32_t b,       \
                                        uint32_t m, T *restrict o) {                             \
        return pairs_body_##T(g, n, b, m, o);                                                    \
    }                                                                                            \
    PAIRS_AVX2(T)                                                                                \
    static unsigned pairs_##T(const uint16_t *g, int64_t n, uint32_t b, uint32_t m, T *o) {      \
        return QV__DISPATCH2(pairs_##T, g, n, b, m, o);                                          \
    }
#if QV__X86_DISPATCH
#define PAIRS_AVX2(T)                                                                            \
    static QV__TARGET_AVX2 unsigned pairs_##T##_avx2(const uint16_t *restrict g, int64_t n,      \
                                                     uint32_t b, uint32_t m, T *restrict o) {    \
        return pairs_body_##T(g, n, b, m, o);                                                    \
    }
#else
#define PAIRS_AVX2(T)
#endif
PAIRS(uint8_t)
PAIRS(uint16_t)
PAIRS(uint32_t)
PAIRS(uint64_t)

/* Whole groups of K digits from g[j] into o[i], while cnt - i >= K; a
 * group at or above b^K has a top digit of b or more, which sets bad. */
#define RADIX_GROUPS(T, K)                                                                       \
    for (; cnt - i >= (int64_t)(K); j++, i += (K)) {                                             \
        const uint32_t x = g[j];                                                                 \
        uint32_t hi = x;                                                                         \
        for (unsigned t = 0; t + 1 < (K); t++) {                                                 \
            const uint32_t q = div_b(x, mt[t + 1]);                                              \
            o[i + t] = (T)(hi - q * b);                                                          \
            hi = q;                                                                              \
        }                                                                                        \
        o[i + (K) - 1] = (T)hi;                                                                  \
        bad |= hi >= b;                                                                          \
    }

/* The digits of groups g[0..) from digit `skip` of the first group on,
 * `cnt` of them, into o as type T: one pass, no copy in between. Returns
 * nonzero when a group is at or above top = b^k. */
#define SPLIT(T)                                                                                 \
    static unsigned split_##T(const uint16_t *g, uint32_t b, unsigned k, uint32_t top,           \
                              int64_t skip, int64_t cnt, T *o) {                                 \
        const uint32_t m = (uint32_t)((UINT64_C(1) << 32) / b + 1);                              \
        int64_t j = 0, i = 0;                                                                    \
        unsigned bad = 0;                                                                        \
        /* A partial first group: digit by digit. */                                             \
        if (skip) {                                                                              \
            bad |= g[j] >= top;                                                                  \
            uint32_t x = g[j++];                                                                 \
            for (unsigned t = 0; t < k && i < cnt; t++) {                                        \
                const uint32_t q = div_b(x, m);                                                  \
                if ((int64_t)t >= skip) o[i++] = (T)(x - q * b);                                 \
                x = q;                                                                           \
            }                                                                                    \
        }                                                                                        \
        if (k == 2) {                                                                            \
            const int64_t pairs = (cnt - i) / 2;                                                 \
            const uint16_t *gg = g + j;                                                          \
            T *oo = o + i;                                                                       \
            bad |= pairs_##T(gg, pairs, b, m, oo);                                               \
            j += pairs;                                                                          \
            i += 2 * pairs;                                                                      \
        } else {                                                                                 \
            /* Digit t is (x / b^t) mod b: the quotients by b^t are        \
             * independent of one another (m_t = floor(2^32 / b^t) + 1, exact  \
             * as m is, b^t being at most 2^16), not a chain of divisions. */  \
            uint32_t mt[QV__RADIX_MAX_K];                                                        \
            for (unsigned t = 1, p = b; t < k; t++, p *= b)                                      \
                mt[t] = (uint32_t)((UINT64_C(1) << 32) / p + 1);                                 \
            switch (k) {                                                                         \
            case 3: RADIX_GROUPS(T, 3); break;                                                   \
            case 4: RADIX_GROUPS(T, 4); break;                                                   \
            case 5: RADIX_GROUPS(T, 5); break;                                                   \
            default: RADIX_GROUPS(T, k); break;                                                  \
            }                                                                                    \
        }                                                                                        \
        /* A partial last group. */                                                              \
        if (i < cnt) bad |= g[j] >= top;                                                         \
        for (uint32_t x = i < cnt ? g[j] : 0; i < cnt;) {                                        \
            const uint32_t q = div_b(x, m);                                                      \
            o[i++] = (T)(x - q * b);                                                             \
            x = q;                                                                               \
        }                                                                                        \
        return bad;                                                                              \
    }
SPLIT(uint8_t)
SPLIT(uint16_t)
SPLIT(uint32_t)
SPLIT(uint64_t)

/* ---- Pairs compared as they are split (filter_int.c) ----
 *
 * A pair's two digits sit in one u16 lane as r | q << 8 (the low digit
 * first, as in memory order), so a byte compare against the arc gives
 * both digits' answers in digit order and one movemask writes 32 of them.
 * The quotient comes from a 16-bit multiply-high: q = (x * m) >> 16 >> s.
 * With m = ceil(2^(16+s) / b) = (2^(16+s) + e) / b, that is x / b exactly
 * when x * e < 2^(16+s) for every x below b^2 (the fraction it adds stays
 * below 1/b), which qv__radix_pairs_cmp_init checks for s = 0..8; every
 * base has such an s but 19 between 214 and 254 (lineitem's discounts,
 * b = 11: s = 0). Groups at or above b^2 are flagged, whatever their
 * quotient. */
int qv__radix_pairs_cmp_init(uint32_t b, uint8_t a, uint8_t d, struct qv__pairs_cmp *pc) {
    if (b < 3 || b > 256) return 0;
    for (unsigned s = 0; s <= 8; s++) {
        const uint64_t p = UINT64_C(1) << (16 + s), m = (p + b - 1) / b, e = m * b - p;
        if (m > 65535 || (uint64_t)(b * b - 1) * e >= p) continue;
        pc->m = (uint16_t)m;
        pc->s = (uint8_t)s;
        pc->b = (uint16_t)b;
        pc->top1 = (uint16_t)(b * b - 1);
        pc->a = a;
        pc->d = d;
        return 1;
    }
    return 0;
}

/* Groups [p, ng) one at a time (the generic variant, and the AVX2 one's
 * last groups), with the 32-bit division of the decoder. */
static QV__ALWAYS_INLINE unsigned pairs_cmp_tail(const struct qv__pairs_cmp *pc,
                                                 const uint16_t *g, int64_t p, int64_t ng,
                                                 uint64_t *bits) {
    const uint32_t b = pc->b, m = (uint32_t)((UINT64_C(1) << 32) / b + 1);
    unsigned bad = 0;
    for (; p < ng; p++) {
        const uint32_t x = g[p], q = div_b(x, m);
        const uint64_t t = (uint64_t)((uint8_t)(x - q * b - pc->a) <= pc->d) |
                           (uint64_t)((uint8_t)(q - pc->a) <= pc->d) << 1;
        bits[p >> 5] |= t << (2 * (p & 31));
        bad |= x > pc->top1;
    }
    return bad;
}

static unsigned pairs_cmp_generic(const struct qv__pairs_cmp *pc, const uint16_t *g, int64_t ng,
                                  uint64_t *bits) {
    return pairs_cmp_tail(pc, g, 0, ng, bits);
}

#if QV__X86_DISPATCH
static QV__TARGET_AVX2 unsigned pairs_cmp_avx2(const struct qv__pairs_cmp *pc, const uint16_t *g,
                                               int64_t ng, uint64_t *bits) {
    const __m256i vm = _mm256_set1_epi16((short)pc->m), vb = _mm256_set1_epi16((short)pc->b);
    const __m256i vtop = _mm256_set1_epi16((short)pc->top1);
    const __m256i va = _mm256_set1_epi8((char)pc->a), vd = _mm256_set1_epi8((char)pc->d);
    const __m128i vs = _mm_cvtsi32_si128(pc->s);
    __m256i ok = _mm256_set1_epi16(-1);
    int64_t p = 0;
    for (; p + 16 <= ng; p += 16) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(g + p));
        ok = _mm256_and_si256(ok, _mm256_cmpeq_epi16(_mm256_max_epu16(x, vtop), vtop));
        const __m256i q = _mm256_srl_epi16(_mm256_mulhi_epu16(x, vm), vs);
        const __m256i r = _mm256_sub_epi16(x, _mm256_mullo_epi16(q, vb));
        const __m256i t = _mm256_sub_epi8(_mm256_or_si256(r, _mm256_slli_epi16(q, 8)), va);
        const uint32_t m32 = (uint32_t)_mm256_movemask_epi8(
            _mm256_cmpeq_epi8(_mm256_min_epu8(t, vd), t));
        memcpy((uint8_t *)bits + (size_t)(p >> 4) * 4, &m32, 4); /* little-endian words */
    }
    unsigned bad = (uint32_t)_mm256_movemask_epi8(ok) != UINT32_C(0xffffffff);
    return bad | pairs_cmp_tail(pc, g, p, ng, bits);
}
#endif

unsigned qv__radix_pairs_cmp(const struct qv__pairs_cmp *pc, const uint16_t *g, int64_t ng,
                             uint64_t *bits) {
    memset(bits, 0, (size_t)(2 * ng + 63) / 64 * 8);
    return QV__DISPATCH2(pairs_cmp, pc, g, ng, bits);
}

/* The error for group `at`, x, not below b^k. */
static int group_error(struct qv__node *nd, int64_t at, uint32_t x, struct qv_error *err) {
    const uint32_t b = (uint32_t)nd->params[0];
    const unsigned k = (unsigned)nd->params[1];
    return qv__corrupt(err, nd, "group %lld is %u, not below %u^%u = %u", (long long)at, x, b, k,
                       qv__radix_power(b, k));
}

/* The first of g[0..m) at or above top, or -1 (one pass without a branch
 * a group, then the search only when one is). */
static int64_t first_bad_group(const uint16_t *g, int64_t m, uint32_t top) {
    unsigned bad = 0;
    for (int64_t j = 0; j < m; j++) bad |= g[j] >= top;
    if (!bad) return -1;
    int64_t j = 0;
    while (g[j] < top) j++;
    return j;
}

int qv__radix_bad_group(struct qv__node *nd, int64_t g0, const uint16_t *g, int64_t m,
                        struct qv_error *err) {
    const uint32_t top = qv__radix_power((uint32_t)nd->params[0], (unsigned)nd->params[1]);
    const int64_t j = first_bad_group(g, m, top), at = j < 0 ? m - 1 : j;
    return group_error(nd, g0 + at, g[at], err);
}

/* The last group's digits past the last value are zeros. */
static int last_group(struct qv__node *nd, uint32_t x, struct qv_error *err) {
    const uint32_t b = (uint32_t)nd->params[0];
    const unsigned k = (unsigned)nd->params[1];
    const int64_t tail = nd->count - (nd->child[0]->count - 1) * (int64_t)k;
    if (tail < (int64_t)k && x >= qv__radix_power(b, (unsigned)tail))
        return qv__corrupt(err, nd, "the last group, %u, holds digits past the %lld values", x,
                           (long long)nd->count);
    return 0;
}

int qv__radix_groups(struct qv__dec *d, struct qv__node *nd, int64_t g0, int64_t m, uint16_t *g,
                     int check, struct qv_error *err) {
    const uint32_t b = (uint32_t)nd->params[0];
    const unsigned k = (unsigned)nd->params[1];
    const uint32_t top = qv__radix_power(b, k); /* validated: not 0 */
    struct qv__node *c = nd->child[0];
    int rc = qv__dec_word(d, c, g0, m, g, err);
    if (rc || m <= 0) return rc;
    const int64_t j = check ? first_bad_group(g, m, top) : -1;
    if (j >= 0) return group_error(nd, g0 + j, g[j], err);
    return g0 + m == c->count ? last_group(nd, g[m - 1], err) : 0;
}

/* Values [start, start + n) into `out` at width ow (the node's, or 1 for
 * the digits alone). */
static int radix_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     void *out, unsigned ow, struct qv_error *err) {
    if (n <= 0) return 0;
    const uint32_t b = (uint32_t)nd->params[0];
    const unsigned k = (unsigned)nd->params[1];
    const uint32_t top = qv__radix_power(b, k);
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint16_t *g = qv__stack_push(&d->stack, RADIX_CHUNK * 2, err);
    if (!g) {
        qv__stack_release(&d->stack, mk);
        return ENOMEM;
    }
    int rc = 0;
    uint8_t *o = out;
    const int64_t end = start + n, gend = (end - 1) / k + 1;
    for (int64_t g0 = start / k; g0 < gend && !rc; g0 += RADIX_CHUNK) {
        const int64_t g1 = gend - g0 < RADIX_CHUNK ? gend : g0 + RADIX_CHUNK, m = g1 - g0;
        /* The groups' range is checked as they are split. */
        if ((rc = qv__radix_groups(d, nd, g0, m, g, 0, err))) break;
        const int64_t lo = start > g0 * k ? start : g0 * k, up = end < g1 * k ? end : g1 * k;
        const int64_t skip = lo - g0 * k, cnt = up - lo;
        unsigned bad;
        switch (ow) {
        case 1: bad = split_uint8_t(g, b, k, top, skip, cnt, (uint8_t *)o); break;
        case 2: bad = split_uint16_t(g, b, k, top, skip, cnt, (uint16_t *)(void *)o); break;
        case 4: bad = split_uint32_t(g, b, k, top, skip, cnt, (uint32_t *)(void *)o); break;
        default: bad = split_uint64_t(g, b, k, top, skip, cnt, (uint64_t *)(void *)o); break;
        }
        if (bad) {
            rc = qv__radix_bad_group(nd, g0, g, m, err);
            break;
        }
        o += (size_t)cnt * ow;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

static int radix_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                          void *out, struct qv_error *err) {
    return radix_dec(d, nd, start, n, out, nd->width, err);
}

int qv__radix_dec_digits(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                         uint8_t *out, struct qv_error *err) {
    return radix_dec(d, nd, start, n, out, 1, err);
}

/* Values at rows[0..n): the groups holding them, each once, taken from
 * the groups' child (a bit-packed one reads a sparse take's groups in
 * place), RADIX_CHUNK rows at a time, then each row's digit. Digit e of x is
 * x / b^e - b (x / b^(e+1)): two multiply-shift divisions by a table
 * (mt[0] = 2^32 divides by 1, mt[k] = 0 gives 0), no branch on e, which
 * a take's rows make random. */
static int radix_take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t n,
                           void *out, struct qv_error *err) {
    const uint32_t b = (uint32_t)nd->params[0];
    const unsigned k = (unsigned)nd->params[1], ow = nd->width;
    const uint32_t top = qv__radix_power(b, k);
    struct qv__node *c = nd->child[0];
    uint64_t mt[QV__RADIX_MAX_K + 1] = {UINT64_C(1) << 32};
    for (unsigned t = 1, p = b; t < k; t++, p *= b) mt[t] = (UINT64_C(1) << 32) / p + 1;
    /* A row's group, row / k, as a multiply-high: M = ceil(2^64 / k) is
     * exact for rows below 2^64 / k, far beyond any chunk (a hardware
     * 64-bit division a row cost more than the rest of the take). */
    __extension__ typedef unsigned __int128 u128;
    const uint64_t M = UINT64_MAX / k + 1;
#define GROUP_OF(row) ((int64_t)(((u128)(uint64_t)(row) * M) >> 64))
    struct qv__mark mk = qv__stack_mark(&d->stack);
    int64_t *gr = qv__stack_push(&d->stack, RADIX_CHUNK * 8, err);
    uint16_t *g = gr ? qv__stack_push(&d->stack, RADIX_CHUNK * 2, err) : NULL;
    uint16_t *ur = g ? qv__stack_push(&d->stack, RADIX_CHUNK * 2, err) : NULL;
    uint8_t *er = ur ? qv__stack_push(&d->stack, RADIX_CHUNK, err) : NULL;
    int rc = er ? 0 : ENOMEM;
    for (int64_t i = 0; i < n && !rc; i += RADIX_CHUNK) {
        /* Rows [i, i + m): their distinct groups gr[0..ng), in order, and
         * each row's group index ur and digit er. */
        const int64_t m = n - i < RADIX_CHUNK ? n - i : RADIX_CHUNK;
        int64_t ng = 0, last = -1;
        for (int64_t t = 0; t < m; t++) {
            const int64_t gi = GROUP_OF(rows[i + t]);
            gr[ng] = gi;
            ng += gi != last;
            last = gi;
            ur[t] = (uint16_t)(ng - 1);
            er[t] = (uint8_t)(rows[i + t] - gi * k);
        }
        if ((rc = qv__take_word(d, c, gr, ng, 2, g, err))) break;
        const int64_t u = first_bad_group(g, ng, top);
        if (u >= 0) {
            rc = group_error(nd, gr[u], g[u], err);
            break;
        }
        if (gr[ng - 1] == c->count - 1 && (rc = last_group(nd, g[ng - 1], err))) break;
#define DIGITS(T)                                                                                \
    for (int64_t t = 0; t < m; t++) {                                                            \
        const uint64_t x = g[ur[t]], q = (x * mt[er[t]]) >> 32, q1 = (x * mt[er[t] + 1]) >> 32;  \
        ((T *)out)[i + t] = (T)(q - q1 * b);                                                     \
    }
        switch (ow) {
        case 1: DIGITS(uint8_t) break;
        case 2: DIGITS(uint16_t) break;
        case 4: DIGITS(uint32_t) break;
        default: DIGITS(uint64_t) break;
        }
#undef DIGITS
    }
#undef GROUP_OF
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ---- */

/* Integers. Param 0: the base b, 3..256 (and no more than the node's type
 * holds as a value plus one); param 1: the digits a group, k >= 2, with
 * b^k <= 65,536. Child 0: the ceil(count / k) groups, u16. */
static int radix_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 2, 0, 1, err))) return rc;
    const int64_t b = nd->params[0], k = nd->params[1];
    if (b < 3 || b > 256)
        return qv__corrupt(err, nd, "base %lld (3 to 256 only)", (long long)b);
    if (k < 2 || k > QV__RADIX_MAX_K || !qv__radix_power((uint32_t)b, (unsigned)k))
        return qv__corrupt(err, nd, "%lld digits of base %lld a group (2 or more, %lld^k at "
                                    "most 65536)",
                           (long long)k, (long long)b, (long long)b);
    const int64_t ng = nd->count / k + (nd->count % k != 0);
    return qv__want_child(nd, 0, QV__PT_U16, ng, err);
}

struct radix_arg {
    uint32_t b;
    unsigned k;
    int depth;
};
static int radix_residuals(struct qv__enc *e, const uint64_t *res, int64_t n, int pt,
                           const void *arg, struct qv__enode **out) {
    const struct radix_arg *a = arg;
    return qv__radix_encode(e, res, n, pt, a->b, a->k, a->depth, out);
}

/* The reference and range of frame of reference: radix holds the
 * residuals, under a `for` node when the reference is not 0. */
static int radix_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_RADIX, s->pt);
    uint64_t ref;
    const uint64_t range = qv__istats_for_range(s->s, &ref);
    /* Forced (tests), a range of one or two values takes base 3. */
    const uint64_t base = s->forced && range < 2 ? 3 : range + 1;
    const uint32_t b = base >= 3 && base <= 256 ? (uint32_t)base : 0;
    const unsigned k = b ? qv__radix_digits(b, NULL) : 0;
    if (!k) {
        if (!s->forced) return QV__DECLINED;
        return qv_error_set(e->err, EINVAL,
                            "encode: radix holds ranges of 3 to 256 values; these span %llu",
                            (unsigned long long)range + 1);
    }
    if (ref == 0) return qv__radix_encode(e, s->u64, s->n, s->pt, b, k, s->depth, out);
    const struct radix_arg a = {b, k, s->depth + 1};
    return qv__for_over(e, s->u64, s->n, s->pt, s->s->bits, ref, radix_residuals, &a, out);
}

const struct qv__encoding qv__enc_radix = {
    .id = QV_ENC_RADIX,
    .name = "radix",
    .decode_cost = 3,
    .dec_word = radix_dec_word,
    .take_word = radix_take_word,
    .validate = radix_validate,
    .build = radix_build,
    .params = {"b", "k"},
    .children = {"groups"},
};
