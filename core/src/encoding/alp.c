/*
 * ALP (Adaptive Lossless floating-Point compression, Afroozeh et al.,
 * SIGMOD 2023) and its ALP-RD fallback, implemented from the paper.
 *
 * ALP: many doubles are decimals in disguise (prices, measurements). With an
 * exponent e and factor f, digits = round(v * 10^e / 10^f) is an integer
 * and v == digits * 10^f / 10^e exactly in IEEE arithmetic. (The paper
 * multiplies by the inexact 10^-e; dividing by the exact 10^e instead
 * reproduces what parsing a decimal string gives, which removes most
 * exceptions for float32 and for two-decimal doubles at a small decode
 * cost.) Values for
 * which that round trip is not bit-exact (NaN, infinities, -0.0, values
 * with more precision) are exceptions, stored by position and raw value.
 * The digits are cascaded (frame of reference + bit-packing). (e, f) is
 * chosen per chunk by trying every pair on a sample and estimating the
 * size. Float32 works the same with float arithmetic and e <= 10.
 *
 * Determinism: the decoder must reproduce the encoder's arithmetic bit for
 * bit, so both use the same multiplication and division in the same order,
 * in ISO C mode (no FP contraction into FMA), with the rounding done by
 * adding and subtracting 2^52 + 2^51 (2^23 + 2^22 for float).
 *
 * ALP-RD: for real doubles (no decimal structure) the top bits of the
 * pattern (sign, exponent, leading mantissa) take few distinct values while
 * the low bits are noise. The node splits each value at `right_bits`: the
 * left part (<= 16 bits, u16) is cascaded, where it becomes a small
 * dictionary; the right part is bit-packed. The cut is chosen on a sample.
 */
#include <math.h>

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

static const double F10[19] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8, 1e9,
                               1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
static const float F10F[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                               1e6f, 1e7f, 1e8f, 1e9f, 1e10f};

#define MAGIC_D 6755399441055744.0 /* 2^52 + 2^51 */
#define MAGIC_F 12582912.0f        /* 2^23 + 2^22 */

/* Per type: enc_N encodes one value, returning 0 and its digits or -1 for
 * an exception; digits_to_N converts m digits to values in place, with the
 * same arithmetic. T is the type, DG its digits, U an unsigned integer of
 * its width (the round trip compares bits), TEN its powers of ten, MAGIC
 * its rounding constant, LIM the bound on |digits| (2^51, 2^22). */
#define ALP_TYPE(N, T, DG, U, TEN, MAGIC, LIM)                                                   \
    static inline int enc_##N(T v, int e, int f, DG *digits) {                                   \
        T x = v * TEN[e] / TEN[f];                                                               \
        if (!(x > -LIM && x < LIM)) return -1;                                                   \
        T r = (x + MAGIC) - MAGIC;                                                               \
        DG d = (DG)r;                                                                            \
        T back = (T)d * TEN[f] / TEN[e];                                                         \
        U a, b;                                                                                  \
        memcpy(&a, &back, sizeof a);                                                             \
        memcpy(&b, &v, sizeof b);                                                                \
        if (a != b) return -1;                                                                   \
        *digits = d;                                                                             \
        return 0;                                                                                \
    }                                                                                            \
    static void digits_to_##N(void *buf, int64_t m, int e, int f) {                              \
        uint8_t *p = buf;                                                                        \
        const T a = TEN[f], b = TEN[e];                                                          \
        for (int64_t i = 0; i < m; i++) {                                                        \
            DG dg;                                                                               \
            memcpy(&dg, p + sizeof(T) * i, sizeof dg);                                           \
            T x = (T)dg * a / b;                                                                 \
            memcpy(p + sizeof(T) * i, &x, sizeof x);                                             \
        }                                                                                        \
    }
ALP_TYPE(d, double, int64_t, uint64_t, F10, MAGIC_D, 2251799813685248.0)
ALP_TYPE(f, float, int32_t, uint32_t, F10F, MAGIC_F, 4194304.0f)
#undef ALP_TYPE

/* Value i of v (double or float, as pt says): 0 and its digits, or -1
 * for an exception. */
static QV__ALWAYS_INLINE int enc_digits(const void *v, int64_t i, int pt, int e, int f,
                                        int64_t *digits) {
    if (pt == QV__PT_F64) return enc_d(((const double *)v)[i], e, f, digits);
    int32_t dg;
    if (enc_f(((const float *)v)[i], e, f, &dg)) return -1;
    *digits = dg;
    return 0;
}

#define SAMPLE 1024

/* Evenly spread sample indices (all values when n is small). */
static int64_t sample_step(int64_t n) { return n <= SAMPLE ? 1 : n / SAMPLE; }

/* Scoring (e, f) over a contiguous sample: the exceptions, and the
 * smallest and largest digits of the others (lo > hi when every value is
 * an exception). Gives up (returns 1) once the exceptions pass `max_exc`.
 * The AVX2 variants do the same IEEE operations in the same order, four
 * doubles (eight floats) at a time, so they find the same digits and
 * exceptions bit for bit; the digits' extremes are taken as doubles, which
 * hold them exactly (|digits| < 2^51, 2^22 for float). The search scores
 * up to 190 pairs per chunk, most of a float column's write time. */
struct alp_tally {
    int64_t exc, lo, hi;
    /* Gives up too once the digits span rstop or more (see alp_score). */
    int64_t rstop;
};

static QV__ALWAYS_INLINE int score_tail(const void *x, int pt, int64_t from, int64_t ns, int e,
                                        int f, int64_t max_exc, struct alp_tally *t) {
    for (int64_t k = from; k < ns; k++) {
        int64_t dg;
        if (enc_digits(x, k, pt, e, f, &dg)) {
            if (++t->exc > max_exc) return 1;
            continue;
        }
        if (dg < t->lo) t->lo = dg;
        if (dg > t->hi) t->hi = dg;
        if (t->hi - t->lo >= t->rstop) return 1;
    }
    return 0;
}

static int score_d_generic(const double *x, int64_t ns, int e, int f, int64_t max_exc,
                           struct alp_tally *t) {
    return score_tail(x, QV__PT_F64, 0, ns, e, f, max_exc, t);
}
static int score_f_generic(const float *x, int64_t ns, int e, int f, int64_t max_exc,
                           struct alp_tally *t) {
    return score_tail(x, QV__PT_F32, 0, ns, e, f, max_exc, t);
}

#if QV__X86_DISPATCH
/* The AVX2 scorer of one type, written once so that the double and the
 * float one do the same steps: T the type (pt), V its vector of L lanes, S
 * the intrinsics' suffix, I a lane's bits (the round trip compares the
 * bits), TEN the powers of ten, MAGIC the rounding constant, LIM the bound
 * on |digits|, RSTOP t->rstop as a T. */
#define SCORE_AVX2(N, T, pt, V, S, I, L, TEN, MAGIC, LIM, RSTOP)                                 \
    static QV__TARGET_AVX2 int score_##N##_avx2(const T *x, int64_t ns, int e, int f,            \
                                                int64_t max_exc, struct alp_tally *t) {          \
        const V me = _mm256_set1_##S(TEN[e]), mf = _mm256_set1_##S(TEN[f]);                     \
        const V magic = _mm256_set1_##S(MAGIC), lim = _mm256_set1_##S(LIM);                      \
        const V nlim = _mm256_set1_##S(-LIM);                                                    \
        const V pinf = _mm256_set1_##S(INFINITY), ninf = _mm256_set1_##S(-INFINITY);            \
        const V rstop = _mm256_set1_##S(RSTOP);                                                  \
        V lo = pinf, hi = ninf;                                                                  \
        int64_t k = 0;                                                                           \
        for (; k + L <= ns; k += L) {                                                            \
            V v = _mm256_loadu_##S(x + k);                                                       \
            V y = _mm256_div_##S(_mm256_mul_##S(v, me), mf);                                     \
            V in = _mm256_and_##S(_mm256_cmp_##S(y, nlim, _CMP_GT_OQ),                           \
                                  _mm256_cmp_##S(y, lim, _CMP_LT_OQ));                           \
            V r = _mm256_sub_##S(_mm256_add_##S(y, magic), magic);                               \
            V back = _mm256_div_##S(_mm256_mul_##S(r, mf), me);                                  \
            __m256i same =                                                                       \
                _mm256_cmpeq_epi##I(_mm256_cast##S##_si256(back), _mm256_cast##S##_si256(v));    \
            V ok = _mm256_and_##S(in, _mm256_castsi256_##S(same));                               \
            lo = _mm256_min_##S(lo, _mm256_blendv_##S(pinf, r, ok));                             \
            hi = _mm256_max_##S(hi, _mm256_blendv_##S(ninf, r, ok));                             \
            t->exc += L - __builtin_popcount((unsigned)_mm256_movemask_##S(ok));                 \
            if (t->exc > max_exc) return 1;                                                      \
            /* A lane's own span is at most the digits' span (a lane with no                     \
             * digit yet has hi - lo = -inf). */                                                 \
            if (_mm256_movemask_##S(_mm256_cmp_##S(_mm256_sub_##S(hi, lo), rstop, _CMP_GE_OQ)))  \
                return 1;                                                                        \
        }                                                                                        \
        T l[L], h[L];                                                                            \
        _mm256_storeu_##S(l, lo);                                                                \
        _mm256_storeu_##S(h, hi);                                                                \
        for (int i = 0; i < L; i++) {                                                            \
            if (l[i] <= h[i]) { /* a lane that saw a digit */                                    \
                if ((int64_t)l[i] < t->lo) t->lo = (int64_t)l[i];                                \
                if ((int64_t)h[i] > t->hi) t->hi = (int64_t)h[i];                                \
            }                                                                                    \
        }                                                                                        \
        return score_tail(x, pt, k, ns, e, f, max_exc, t);                                       \
    }
SCORE_AVX2(d, double, QV__PT_F64, __m256d, pd, 64, 4, F10, MAGIC_D, 2251799813685248.0,
           (double)t->rstop)
/* float digits are below 2^22 in magnitude, so their spans (below 2^23)
 * are exact in float; rstop is a power of two. */
SCORE_AVX2(f, float, QV__PT_F32, __m256, ps, 32, 8, F10F, MAGIC_F, 4194304.0f,
           t->rstop < (INT64_C(1) << 24) ? (float)t->rstop : INFINITY)
#undef SCORE_AVX2
#endif

/* Estimated bits of (e, f) over the `ns` values of a contiguous sample
 * (double or float, as pt says): digits at the width of their range, an
 * exception its value and a position. Gives up (INFINITY) once the
 * exceptions alone pass `cut`. */
static double alp_score(const void *x, int pt, int e, int f, int64_t ns, double cut,
                        int64_t *exc_out) {
    const unsigned vbits = pt == QV__PT_F64 ? 64 : 32;
    /* exc * (vbits + 32) > cut, as a count */
    const double q = cut / (double)(vbits + 32);
    const int64_t max_exc = !(q < (double)ns) ? ns : (int64_t)q;
    /* Every value costs at least w bits, w the width of the digits' span,
     * so the estimate is at least ns x w, and a pair is given up once the
     * span seen so far makes ns x w reach the cut: the search drops
     * estimates at or above it anyway, so the choice does not change. (A
     * search over integer-valued doubles otherwise scored all 190 pairs
     * in full: with the rest of the search, a tenth of writing a small
     * table of floats.) The smallest such w0 gives the span 2^(w0 - 1)
     * (qv__bits(span) >= w0). cut and ns are integers, so cut / ns is
     * exact or at least 1 / ns from an integer, and ceil() finds w0. */
    int64_t rstop = INT64_MAX;
    if (cut < INFINITY) {
        if (!(cut > 0)) return INFINITY;
        const double w0 = ceil(cut / (double)ns);
        if (w0 <= 52) rstop = INT64_C(1) << ((w0 < 1 ? 1 : (int)w0) - 1);
    }
    struct alp_tally t = {0, INT64_MAX, INT64_MIN, rstop};
    int stop = pt == QV__PT_F64 ? QV__DISPATCH2(score_d, x, ns, e, f, max_exc, &t)
                                : QV__DISPATCH2(score_f, x, ns, e, f, max_exc, &t);
    if (stop) return INFINITY;
    const int64_t exc = t.exc;
    unsigned w = exc == ns ? 0 : qv__bits((uint64_t)t.hi - (uint64_t)t.lo);
    *exc_out = exc;
    return (double)(ns - exc) * w + (double)exc * (vbits + 32 + w);
}

/* Pairs kept from the first level of the search. */
#define ALP_TOP 5
/* Values of the first level's sample (every 8th of the 1024). */
#define ALP_SAMPLE1 128

void qv__alp_choose(const void *v, int64_t n, int pt, struct qv__alp_choice *c) {
    const int emax = pt == QV__PT_F64 ? 18 : 10;
    const int64_t step = sample_step(n);
    const int64_t ns = n < SAMPLE ? n : SAMPLE;
    c->e = c->f = 0;
    c->est_bytes = INFINITY;
    c->est_exceptions = n;
    if (n == 0) {
        c->est_bytes = 0;
        return;
    }
    /* Two levels, as in the ALP paper: every (e, f) pair is scored on a
     * sample of the sample, and only the best few are scored on the whole
     * sample. Scoring all 190 pairs (float64) on 1024 values was a few
     * hundred thousand divisions per chunk: most of a float column's
     * encode time. Small chunks (sample of at most ALP_SAMPLE1 values) go
     * straight to the second level with every pair. Both samples are
     * copied together first (every step-th value; every (ns / ALP_SAMPLE1)-th
     * of those), so the scoring reads them contiguously. */
    union {
        double d[SAMPLE];
        float f[SAMPLE];
    } samp;
    union {
        double d[ALP_SAMPLE1];
        float f[ALP_SAMPLE1];
    } samp1;
    const int64_t g1 = ns > ALP_SAMPLE1 ? ns / ALP_SAMPLE1 : 1;
    for (int64_t k = 0; k < ns; k++) {
        if (pt == QV__PT_F64) samp.d[k] = ((const double *)v)[k * step];
        else samp.f[k] = ((const float *)v)[k * step];
    }
    for (int64_t k = 0; k < ALP_SAMPLE1 && k * g1 < ns; k++) {
        if (pt == QV__PT_F64) samp1.d[k] = samp.d[k * g1];
        else samp1.f[k] = samp.f[k * g1];
    }
    int top_e[ALP_TOP * 40], top_f[ALP_TOP * 40], ntop = 0;
    if (ns > ALP_SAMPLE1) {
        const int64_t ns1 = ALP_SAMPLE1;
        double tb[ALP_TOP];
        int te[ALP_TOP], tf[ALP_TOP], nt = 0;
        for (int e = 0; e <= emax; e++) {
            for (int f = 0; f <= e; f++) {
                int64_t exc = 0;
                double cut = nt == ALP_TOP ? tb[ALP_TOP - 1] : INFINITY;
                double bits = alp_score(&samp1, pt, e, f, ns1, cut, &exc);
                if (!(bits < cut)) continue;
                /* Insert in (bits, order of trial): ties keep the earlier pair. */
                int at = nt < ALP_TOP ? nt++ : ALP_TOP - 1;
                while (at > 0 && tb[at - 1] > bits) {
                    tb[at] = tb[at - 1];
                    te[at] = te[at - 1];
                    tf[at] = tf[at - 1];
                    at--;
                }
                tb[at] = bits;
                te[at] = e;
                tf[at] = f;
            }
        }
        /* The second level tries them in the order of the full search. */
        for (int i = 0; i < nt; i++) {
            int j = ntop++;
            while (j > 0 && (top_e[j - 1] > te[i] || (top_e[j - 1] == te[i] && top_f[j - 1] > tf[i]))) {
                top_e[j] = top_e[j - 1];
                top_f[j] = top_f[j - 1];
                j--;
            }
            top_e[j] = te[i];
            top_f[j] = tf[i];
        }
    } else {
        for (int e = 0; e <= emax; e++)
            for (int f = 0; f <= e; f++) {
                top_e[ntop] = e;
                top_f[ntop++] = f;
            }
    }
    /* Ascending e: among equal sizes the smallest exponent wins, which
     * leaves the most headroom for values outside the sample. */
    double best = INFINITY;
    for (int i = 0; i < ntop; i++) {
        int64_t exc = 0;
        double bits = alp_score(&samp, pt, top_e[i], top_f[i], ns, best, &exc);
        if (bits < best) {
            best = bits;
            c->e = top_e[i];
            c->f = top_f[i];
            c->est_exceptions = exc * (n / ns);
        }
    }
    c->est_bytes = best / 8.0 * ((double)n / (double)ns) + 64;
}

/* Digits of value i as the child stores them: float digits as u32. */
static inline int enc_any(const void *v, int64_t i, int pt, int e, int f, uint64_t *bits) {
    int64_t dg;
    if (enc_digits(v, i, pt, e, f, &dg)) return -1;
    *bits = pt == QV__PT_F64 ? (uint64_t)dg : (uint32_t)dg;
    return 0;
}

/* Whole vectors of the sample the chain estimate takes. */
#define CHAIN_VECTORS 4

int qv__alp_chain(struct qv__enc *e, const void *v, int64_t n, int pt, int depth,
                  const struct qv__alp_choice *c, double *est, double *score) {
    *est = -1;
    *score = 0;
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    const int64_t take = nvec < CHAIN_VECTORS ? nvec : CHAIN_VECTORS;
    if (n < QV__VEC || !(c->est_bytes < INFINITY)) return 0;
    struct qv__mark mk = qv__stack_mark(&e->stack);
    uint64_t *dig = qv__stack_push(&e->stack, (size_t)take * QV__VEC * 8, e->err);
    if (!dig) {
        qv__stack_release(&e->stack, mk);
        return ENOMEM;
    }
    /* The digits of whole vectors, an exception's slot holding the last
     * digits before it (the encoder gives it the chunk's first digits,
     * which a sample cannot know; in a run of close values either is one
     * outlier at most). */
    int64_t sn = 0;
    uint64_t last = 0;
    int have = 0;
    for (int64_t k = 0; k < take; k++) {
        const int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
        const int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        for (int64_t i = vs; i < ve; i++, sn++) {
            if (!enc_any(v, i, pt, c->e, c->f, &dig[sn])) {
                last = dig[sn];
                have = 1;
            } else {
                dig[sn] = last;
            }
        }
    }
    /* The digits child as it is (frame of reference, patched) and as a
     * delta chain, whichever scores better. */
    const int upt = pt == QV__PT_F64 ? QV__PT_U64 : QV__PT_U32;
    struct qv__xform_choice xc = {.est_bytes = -1}, xd = {.est_bytes = -1};
    int rc = have ? qv__xform_estimate(e, dig, sn, upt, QV__XFORM_NONE, depth, &xc) : 0;
    if (!rc && have) rc = qv__xform_estimate(e, dig, sn, upt, QV__XFORM_DELTA, depth + 1, &xd);
    qv__stack_release(&e->stack, mk);
    if (rc || xc.est_bytes < 0) return rc;
    if (xd.est_bytes >= 0 && xd.score < xc.score) xc = xd;
    /* The exceptions as alp_score counts them: the value and a position. */
    const unsigned vbits = pt == QV__PT_F64 ? 64 : 32;
    const double exc = (double)c->est_exceptions * (vbits + 32) / 8;
    *est = xc.est_bytes * ((double)n / (double)sn) + exc + 64;
    *score = *est * qv__cost_weight(e, qv__enc_alp.decode_cost + xc.cost);
    return 0;
}

int qv__alp_encode(struct qv__enc *e, const void *v, int64_t n, int pt, int depth,
                   const struct qv__alp_choice *c, struct qv__enode **out) {
    const unsigned w = qv__pt_width(pt);
    /* One pass computes every value's digits and marks the exceptions in a
     * bitmap; a second pass over the bitmap gives the exceptions' slots the
     * first valid digits, so they do not widen the packing. (The digits
     * cost two divisions each: computing them once, not twice, is a third
     * of a float column's encode time.) */
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_ALP, pt, w, n);
    const int64_t nwords = (n + 63) >> 6;
    uint64_t *dig = nd ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    uint64_t *excb = dig ? qv__mem_alloc(&e->mem, (size_t)(nwords ? nwords : 1) * 8, e->err) : NULL;
    uint64_t *pos = NULL;
    uint8_t *xv = NULL;
    int rc = ENOMEM;
    if (!excb) goto out;
    int64_t nexc = 0, first_ok = -1;
    for (int64_t wi = 0; wi < nwords; wi++) {
        uint64_t word = 0;
        int64_t end = (wi + 1) * 64 < n ? (wi + 1) * 64 : n;
        for (int64_t i = wi * 64; i < end; i++)
            if (enc_any(v, i, pt, c->e, c->f, &dig[i])) word |= UINT64_C(1) << (i & 63);
        excb[wi] = word;
        nexc += __builtin_popcountll(word);
        if (first_ok < 0 && ~word != 0) {
            int64_t j = wi * 64 + __builtin_ctzll(~word);
            if (j < end) first_ok = j;
        }
    }
    const uint64_t fill = first_ok >= 0 ? dig[first_ok] : 0;
    pos = qv__mem_alloc(&e->mem, (size_t)(nexc ? nexc : 1) * 8, e->err);
    xv = pos ? qv__mem_alloc(&e->mem, (size_t)(nexc ? nexc : 1) * w, e->err) : NULL;
    if (!xv) goto out;
    for (int64_t wi = 0, k = 0; wi < nwords; wi++) {
        for (uint64_t bits = excb[wi]; bits; bits &= bits - 1) {
            int64_t i = wi * 64 + __builtin_ctzll(bits);
            dig[i] = fill;
            pos[k] = (uint64_t)i;
            memcpy(xv + (size_t)k * w, (const uint8_t *)v + (size_t)i * w, w);
            k++;
        }
    }
    rc = qv__cascade_int(e, dig, n, pt == QV__PT_F64 ? QV__PT_U64 : QV__PT_U32, depth + 1,
                         QV_ENC_AUTO, &nd->child[0]);
    if (!rc) rc = qv__cascade_int(e, pos, nexc, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    if (!rc) rc = qv__plain_encode_raw(e, xv, nexc, pt, w, 0, &nd->child[2]);
    if (rc) goto out;
    nd->nparams = 2;
    nd->params[0] = c->e;
    nd->params[1] = c->f;
    nd->nchildren = 3;
    qv__enode_finish(nd);
    *out = nd;
out:
    qv__mem_free(&e->mem, xv);
    qv__mem_free(&e->mem, pos);
    qv__mem_free(&e->mem, excb);
    qv__mem_free(&e->mem, dig);
    return rc;
}

/* ---- ALP-RD ---- */

void qv__alprd_choose(const void *v, int64_t n, int pt, struct qv__alprd_choice *c) {
    const unsigned vbits = pt == QV__PT_F64 ? 64 : 32;
    const int64_t step = sample_step(n);
    const int64_t ns = n < SAMPLE ? n : SAMPLE;
    uint16_t left[SAMPLE];
    double best = INFINITY;
    c->right_bits = vbits - 16;
    for (unsigned lw = 1; lw <= 16; lw++) {
        unsigned rb = vbits - lw;
        for (int64_t k = 0; k < ns; k++) {
            uint64_t x;
            if (pt == QV__PT_F64) memcpy(&x, (const double *)v + k * step, 8);
            else {
                uint32_t y;
                memcpy(&y, (const float *)v + k * step, 4);
                x = y;
            }
            left[k] = (uint16_t)(x >> rb);
        }
        /* Distinct count by a small bitmap when lw <= 16. */
        uint64_t seen[1024];
        memset(seen, 0, sizeof seen);
        int64_t distinct = 0;
        for (int64_t k = 0; k < ns; k++) {
            uint64_t b = UINT64_C(1) << (left[k] & 63);
            if (!(seen[left[k] >> 6] & b)) {
                seen[left[k] >> 6] |= b;
                distinct++;
            }
        }
        double lbits = distinct <= 256 ? (double)qv__bits((uint64_t)(distinct - 1)) : lw;
        double bits = (double)ns * (rb + lbits) + (distinct <= 256 ? (double)distinct * 16 : 0);
        if (bits < best) {
            best = bits;
            c->right_bits = rb;
        }
    }
    c->est_bytes = ns ? best / 8.0 * ((double)n / (double)ns) + 64 : 0;
}

int qv__alprd_encode(struct qv__enc *e, const void *v, int64_t n, int pt, int depth,
                     unsigned right_bits, struct qv__enode **out) {
    const unsigned w = qv__pt_width(pt);
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_ALP_RD, pt, w, n);
    uint64_t *buf = nd ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    if (!buf) return ENOMEM;
    qv__widen(v, w, n, buf);
    for (int64_t i = 0; i < n; i++) buf[i] >>= right_bits;
    int rc = qv__cascade_int(e, buf, n, QV__PT_U16, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (!rc) {
        qv__widen(v, w, n, buf);
        const uint64_t mask = qv__mask(right_bits);
        for (int64_t i = 0; i < n; i++) buf[i] &= mask;
        rc = qv__cascade_int(e, buf, n, qv__pt_uint_of_width(w), depth + 1, QV_ENC_AUTO,
                             &nd->child[1]);
    }
    qv__mem_free(&e->mem, buf);
    if (rc) return rc;
    nd->nparams = 1;
    nd->params[0] = right_bits;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decoding ---- */

struct alp_cache {
    const uint64_t *pos;
    const uint8_t *vals;
};

static int alp_load(struct qv__dec *d, struct qv__node *nd, struct alp_cache **out,
                    struct qv_error *err) {
    if (nd->cache) {
        *out = nd->cache;
        return 0;
    }
    struct alp_cache *c = qv__mem_small(&d->mem, sizeof *c, err);
    if (!c) return ENOMEM;
    int rc = qv__dec_cached_u64(d, nd->child[1], 1, (uint64_t)nd->count, &c->pos, err);
    if (rc) return rc;
    int64_t ne = nd->child[1]->count;
    uint8_t *vals = qv__mem_buf(&d->mem, (size_t)(ne ? ne : 1) * nd->width, err);
    if (!vals) return ENOMEM;
    if ((rc = qv__dec_word(d, nd->child[2], 0, ne, vals, err))) return rc;
    c->vals = vals;
    nd->cache = c;
    *out = c;
    return 0;
}

int qv__alp_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                struct qv_error *err) {
    struct alp_cache *c;
    int rc = alp_load(d, nd, &c, err);
    if (rc) return rc;
    const int e = (int)nd->params[0], f = (int)nd->params[1];
    const unsigned w = nd->width;
    uint8_t *o = out;
    /* Vector-sized blocks keep the digits in cache between the unpack and
     * the conversion. */
    for (int64_t b = 0; b < n; b += QV__VEC) {
        int64_t m = n - b < QV__VEC ? n - b : QV__VEC;
        if ((rc = qv__dec_word(d, nd->child[0], start + b, m, o + (size_t)b * w, err))) return rc;
        if (w == 8) digits_to_d(o + (size_t)b * w, m, e, f);
        else digits_to_f(o + (size_t)b * w, m, e, f);
    }
    const int64_t ne = nd->child[1]->count;
    for (int64_t k = qv__lower_bound(c->pos, ne, (uint64_t)start);
         k < ne && c->pos[k] < (uint64_t)(start + n); k++)
        memcpy(o + (c->pos[k] - (uint64_t)start) * w, c->vals + (size_t)k * w, w);
    return 0;
}

int qv__alprd_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                  struct qv_error *err) {
    const unsigned rb = (unsigned)nd->params[0], w = nd->width;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint16_t *left = qv__stack_push(&d->stack, QV__VEC * 2, err);
    if (!left) return ENOMEM;
    int rc = 0;
    for (int64_t b = 0; b < n && !rc; b += QV__VEC) {
        int64_t m = n - b < QV__VEC ? n - b : QV__VEC;
        void *o = (uint8_t *)out + (size_t)b * w;
        if ((rc = qv__dec_word(d, nd->child[1], start + b, m, o, err))) break;
        if ((rc = qv__dec_word(d, nd->child[0], start + b, m, left, err))) break;
        if (w == 8) {
            uint64_t *p = o;
            for (int64_t i = 0; i < m; i++) p[i] |= (uint64_t)left[i] << rb;
        } else {
            uint32_t *p = o;
            for (int64_t i = 0; i < m; i++) p[i] |= (uint32_t)left[i] << rb;
        }
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Records: alp and alp_rd ---- */

/* Floats. Params: exponent e, factor f (0 <= f <= e <= 18 for f64, 10 for
 * f32); child 0: integer digits (u64 for f64, u32 for f32); child 1:
 * exception positions (u32, increasing); child 2: exception values. */
static int alp_validate(const struct qv__node *nd, struct qv_error *err) {
    const int pt = nd->pt;
    const int64_t n = nd->count;
    int rc;
    if (!qv__pt_is_float(pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(pt));
    if ((rc = qv__want_shape(nd, 2, 0, 3, err))) return rc;
    int64_t emax = pt == QV__PT_F64 ? 18 : 10;
    if (nd->params[0] < 0 || nd->params[0] > emax || nd->params[1] < 0 ||
        nd->params[1] > nd->params[0])
        return qv__corrupt(err, nd, "exponent %lld / factor %lld", (long long)nd->params[0],
                           (long long)nd->params[1]);
    if ((rc = qv__want_child(nd, 0, pt == QV__PT_F64 ? QV__PT_U64 : QV__PT_U32, n, err)))
        return rc;
    if ((rc = qv__want_child(nd, 1, QV__PT_U32, -1, err))) return rc;
    if (nd->child[1]->count > n)
        return qv__corrupt(err, nd, "%lld exceptions for %lld values",
                           (long long)nd->child[1]->count, (long long)n);
    return qv__want_child(nd, 2, pt, nd->child[1]->count, err);
}

static int alp_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_float(s->pt)) return qv__enc_unsupported(e, QV_ENC_ALP, s->pt);
    struct qv__alp_choice c;
    if (!s->alp) qv__alp_choose(s->raw, s->n, s->pt, &c);
    return qv__alp_encode(e, s->raw, s->n, s->pt, s->depth, s->alp ? s->alp : &c, out);
}

const struct qv__encoding qv__enc_alp = {
    .id = QV_ENC_ALP,
    .name = "alp",
    .decode_cost = 3,
    .dec_word = qv__alp_dec,
    .validate = alp_validate,
    .build = alp_build,
    .params = {"e", "f"},
    .children = {"digits", "exc_positions", "exc_values"},
};

/* Floats. Param 0: right bits (bits - 16 <= r < bits); child 0: left parts
 * (u16); child 1: right parts (u64 for f64, u32 for f32). */
static int alprd_validate(const struct qv__node *nd, struct qv_error *err) {
    const int pt = nd->pt;
    int rc;
    if (!qv__pt_is_float(pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(pt));
    if ((rc = qv__want_shape(nd, 1, 0, 2, err))) return rc;
    int64_t bits = pt == QV__PT_F64 ? 64 : 32;
    if (nd->params[0] < bits - 16 || nd->params[0] >= bits)
        return qv__corrupt(err, nd, "right bits %lld", (long long)nd->params[0]);
    if ((rc = qv__want_child(nd, 0, QV__PT_U16, nd->count, err))) return rc;
    return qv__want_child(nd, 1, pt == QV__PT_F64 ? QV__PT_U64 : QV__PT_U32, nd->count, err);
}

static int alprd_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_float(s->pt)) return qv__enc_unsupported(e, QV_ENC_ALP_RD, s->pt);
    struct qv__alprd_choice c;
    if (!s->alprd) qv__alprd_choose(s->raw, s->n, s->pt, &c);
    return qv__alprd_encode(e, s->raw, s->n, s->pt, s->depth,
                            (s->alprd ? s->alprd : &c)->right_bits, out);
}

const struct qv__encoding qv__enc_alp_rd = {
    .id = QV_ENC_ALP_RD,
    .name = "alp_rd",
    .decode_cost = 4,
    .dec_word = qv__alprd_dec,
    .validate = alprd_validate,
    .build = alprd_build,
    .params = {"right_bits"},
    .children = {"left", "right"},
};
