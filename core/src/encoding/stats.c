/*
 * Statistics the cascade estimates sizes from. Value ranges (which decide
 * bit widths, and whether the data is constant) come from one vectorized
 * pass over every value; everything else (delta ranges, runs, distinct
 * count, most frequent value) from a sample of whole 1024-value vectors
 * spread over the chunk, so local patterns (runs, sortedness) are seen as
 * they are. Encoders compute exact figures when they build.
 */
#include <stdlib.h>

#include "base/cpu_internal.h"
#include "base/dcheck.h"
#include "encoding/enc_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

/* The four extremes the loops keep: unsigned order of x (umin, umax) and
 * of y = x ^ sb (fmin, fmax: signed order at the value width). */
struct minmax {
    uint64_t umin, umax, fmin, fmax;
};

/* Flipping bit p keeps the unsigned order of values that all have the same
 * bit p: then y's extremes are x's with sb flipped, and the loops skip y's
 * pass. Mostly they do (codes, residuals, lengths: small and
 * non-negative); only values on both sides of the sign bit (deltas of
 * either sign, floats' bit patterns of either sign) take the second pass.
 * Bit p agrees when the AND and the OR of every value have it alike. */
static QV__ALWAYS_INLINE int sign_bit_agrees(uint64_t and_all, uint64_t or_all, uint64_t sb) {
    return ((and_all ^ or_all) & sb) == 0;
}

/* Unsigned extremes of v[0..n) into m->umin/umax, and the AND and OR of
 * every value. */
static QV__ALWAYS_INLINE void umm_from(const uint64_t *v, int64_t n, struct minmax *m,
                                       uint64_t *and_all, uint64_t *or_all) {
    uint64_t umin = m->umin, umax = m->umax, a = *and_all, o = *or_all;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        umin = x < umin ? x : umin;
        umax = x > umax ? x : umax;
        a &= x;
        o |= x;
    }
    m->umin = umin, m->umax = umax, *and_all = a, *or_all = o;
}

/* Extremes of y = x ^ sb over v[0..n) into m->fmin/fmax. */
static QV__ALWAYS_INLINE void fmm_from(const uint64_t *v, int64_t n, uint64_t sb,
                                       struct minmax *m) {
    uint64_t fmin = m->fmin, fmax = m->fmax;
    for (int64_t i = 0; i < n; i++) {
        uint64_t y = v[i] ^ sb;
        fmin = y < fmin ? y : fmin;
        fmax = y > fmax ? y : fmax;
    }
    m->fmin = fmin, m->fmax = fmax;
}

/* Stores s's value ranges from m (of n > 0 values of `bits` bits), the
 * sample's fields zero. */
static QV__ALWAYS_INLINE void put_ranges(struct qv__istats *s, int64_t n, unsigned bits,
                                         const struct minmax *m) {
    const uint64_t sb = UINT64_C(1) << (bits - 1);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->bits = bits;
    s->umin = m->umin;
    s->umax = m->umax;
    s->smin = qv__sext(m->fmin ^ sb, bits);
    s->smax = qv__sext(m->fmax ^ sb, bits);
}

/* The min/max loop compares 64-bit integers: SSE2 has no such compare, so
 * the baseline runs it scalar, as does the SSE4.2 variant (the compiler
 * leaves unsigned 64-bit min/max scalar); the AVX2 variant below is
 * written with intrinsics. Chosen at run time (base/cpu_internal.h). */
static QV__ALWAYS_INLINE void istats_compute_body(const uint64_t *v, int64_t n, unsigned bits,
                                                  struct qv__istats *s) {
    if (n == 0) {
        memset(s, 0, sizeof *s);
        s->bits = bits;
        return;
    }
    /* Signed order at the value width is unsigned order with the sign bit
     * flipped. */
    const uint64_t sb = UINT64_C(1) << (bits - 1);
    struct minmax m = {v[0], v[0], v[0] ^ sb, v[0] ^ sb};
    uint64_t a = v[0], o = v[0];
    umm_from(v + 1, n - 1, &m, &a, &o);
    if (sign_bit_agrees(a, o, sb)) m.fmin = m.umin ^ sb, m.fmax = m.umax ^ sb;
    else fmm_from(v + 1, n - 1, sb, &m);
    put_ranges(s, n, bits, &m);
}

static void istats_compute_generic(const uint64_t *v, int64_t n, unsigned bits,
                                   struct qv__istats *s) {
    istats_compute_body(v, n, bits, s);
}
#if QV__X86_DISPATCH
static QV__TARGET_SSE42 void istats_compute_sse42(const uint64_t *v, int64_t n, unsigned bits,
                                                  struct qv__istats *s) {
    istats_compute_body(v, n, bits, s);
}
/* AVX2 has no unsigned 64-bit compare, and the compiler leaves the loops
 * above scalar (about 11 instructions a value, 6% of a flights write).
 * Unsigned order of x is signed order of x ^ 2^63, so the extremes are
 * kept as signed keys x ^ k: k = 2^63 for x, k = sb ^ 2^63 for y = x ^ sb;
 * two sets of accumulators (eight values a step) hide the
 * compare-and-blend latency. The AND and OR come with the first pass (the
 * second is skipped when the sign bit agrees, as above). The result is the
 * scalar loops', to the bit. */
static QV__TARGET_AVX2 void keys_minmax_avx2(const uint64_t *v, int64_t n, uint64_t k,
                                             uint64_t *lo, uint64_t *hi, uint64_t *and_all,
                                             uint64_t *or_all) {
    const __m256i kk = _mm256_set1_epi64x((long long)k);
    __m256i mn[2], mx[2], an[2], on[2];
    for (int j = 0; j < 2; j++) {
        mn[j] = _mm256_set1_epi64x(INT64_MAX);
        mx[j] = _mm256_set1_epi64x(INT64_MIN);
        an[j] = _mm256_set1_epi64x(-1);
        on[j] = _mm256_setzero_si256();
    }
    for (int64_t i = 0; i + 8 <= n; i += 8) {
        for (int j = 0; j < 2; j++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(v + i + 4 * j));
            __m256i a = _mm256_xor_si256(x, kk);
            mn[j] = _mm256_blendv_epi8(mn[j], a, _mm256_cmpgt_epi64(mn[j], a));
            mx[j] = _mm256_blendv_epi8(mx[j], a, _mm256_cmpgt_epi64(a, mx[j]));
            if (and_all) {
                an[j] = _mm256_and_si256(an[j], x);
                on[j] = _mm256_or_si256(on[j], x);
            }
        }
    }
    int64_t l0[4], l1[4], h0[4], h1[4];
    uint64_t a0[4], a1[4], o0[4], o1[4];
    _mm256_storeu_si256((__m256i *)l0, mn[0]);
    _mm256_storeu_si256((__m256i *)l1, mn[1]);
    _mm256_storeu_si256((__m256i *)h0, mx[0]);
    _mm256_storeu_si256((__m256i *)h1, mx[1]);
    _mm256_storeu_si256((__m256i *)a0, an[0]);
    _mm256_storeu_si256((__m256i *)a1, an[1]);
    _mm256_storeu_si256((__m256i *)o0, on[0]);
    _mm256_storeu_si256((__m256i *)o1, on[1]);
    int64_t l = INT64_MAX, h = INT64_MIN;
    uint64_t a = ~UINT64_C(0), o = 0;
    for (int j = 0; j < 4; j++) {
        l = l0[j] < l ? l0[j] : l, l = l1[j] < l ? l1[j] : l;
        h = h0[j] > h ? h0[j] : h, h = h1[j] > h ? h1[j] : h;
        a &= a0[j] & a1[j];
        o |= o0[j] | o1[j];
    }
    *lo = (uint64_t)l ^ k, *hi = (uint64_t)h ^ k;
    if (and_all) *and_all = a, *or_all = o;
}

static QV__TARGET_AVX2 void istats_compute_avx2(const uint64_t *v, int64_t n, unsigned bits,
                                                struct qv__istats *s) {
    if (n < 16) {
        istats_compute_body(v, n, bits, s);
        return;
    }
    const uint64_t top = UINT64_C(1) << 63, sb = UINT64_C(1) << (bits - 1);
    const int64_t body = n & ~(int64_t)7;
    struct minmax m;
    uint64_t a, o;
    keys_minmax_avx2(v, body, top, &m.umin, &m.umax, &a, &o);
    umm_from(v + body, n - body, &m, &a, &o);
    if (sign_bit_agrees(a, o, sb)) {
        m.fmin = m.umin ^ sb, m.fmax = m.umax ^ sb;
    } else {
        uint64_t lo, hi;
        keys_minmax_avx2(v, body, sb ^ top, &lo, &hi, NULL, NULL);
        m.fmin = lo ^ sb, m.fmax = hi ^ sb;
        fmm_from(v + body, n - body, sb, &m);
    }
    put_ranges(s, n, bits, &m);
}
#endif

void qv__istats_compute(const uint64_t *v, int64_t n, unsigned bits, struct qv__istats *s) {
    QV__DISPATCH(istats_compute, v, n, bits, s);
}

uint64_t qv__istats_for_range(const struct qv__istats *s, uint64_t *ref) {
    uint64_t urange = s->umax - s->umin;
    uint64_t srange = (uint64_t)s->smax - (uint64_t)s->smin;
    if (srange < urange) {
        *ref = (uint64_t)s->smin & qv__mask(s->bits);
        return srange;
    }
    *ref = s->umin;
    return urange;
}

unsigned qv__istats_for_bits(const struct qv__istats *s, uint64_t *ref) {
    return qv__bits(qv__istats_for_range(s, ref));
}

#define SAMPLE_VECTORS 16
_Static_assert(SAMPLE_VECTORS <= QV__INC_MAX_VECTORS, "incidence keeps a sampled vector's index + 1");
_Static_assert(SAMPLE_VECTORS * QV__VEC <= UINT16_MAX, "a value's count in the sample fits 16 bits");

/* What the sample loop accumulates. */
struct sample_acc {
    int64_t distinct, top, dmin, dmax, runs, max_run, seen, q1, q2;
    uint64_t topv;
};

/* Deltas and runs of sampled vectors: dmin / dmax of the deltas at the
 * value width shifted to the top of the word (their order is the deltas';
 * the caller shifts back), runs of equal values and the longest. */
struct delta_runs {
    int64_t dmin, dmax, runs, max_run;
};

/* One value's step of the current run: equal to the one before or not. */
static QV__ALWAYS_INLINE void run_step(int eq, int64_t *run, struct delta_runs *a) {
    if (eq) {
        if (++*run > a->max_run) a->max_run = *run;
    } else {
        a->runs++;
        *run = 1;
    }
}

/* Values v[from..m) of a vector (from >= 1) into a, the run so far in *run. */
static QV__ALWAYS_INLINE void delta_runs_from(const uint64_t *v, int64_t from, int64_t m,
                                              unsigned dsh, int64_t *run, struct delta_runs *a) {
    for (int64_t i = from; i < m; i++) {
        int64_t d = (int64_t)((v[i] - v[i - 1]) << dsh);
        a->dmin = d < a->dmin ? d : a->dmin;
        a->dmax = d > a->dmax ? d : a->dmax;
        run_step(v[i] == v[i - 1], run, a);
    }
}

/* A vector v[0..m) (m >= 1): its first value starts a run. */
static void delta_runs_generic(const uint64_t *v, int64_t m, unsigned dsh, struct delta_runs *a) {
    int64_t run = 1;
    a->runs++;
    delta_runs_from(v, 1, m, dsh, &run, a);
}
#if QV__X86_DISPATCH
/* Runs through four equal-neighbour bits (bit l: lane l equals the value
 * before it), for masks with a lane not equal: the lanes equal before the
 * first such lane (they extend the current run), how many there are (each
 * starts a run), the lanes equal after the last (the run that goes on) and
 * the longest run started inside the four. RUN4 (a 4-bit mask) fills all
 * four; the table is RUN4 over every mask. */
struct run4 {
    uint8_t pre, starts, post, longest;
};
#define RUN4_PRE(m) ((m) & 1 ? (m) & 2 ? (m) & 4 ? 3 : 2 : 1 : 0)
#define RUN4_POST(m) ((m) & 8 ? (m) & 4 ? (m) & 2 ? 3 : 2 : 1 : 0)
#define RUN4_STARTS(m) (4 - (((m) & 1) + ((m) >> 1 & 1) + ((m) >> 2 & 1) + ((m) >> 3 & 1)))
/* Longest run begun at a lane not equal: the lanes equal right after it. */
#define RUN4_AT(m, j) (!((m) >> (j) & 1) ? 1 + RUN4_PRE((m) >> ((j) + 1)) : 0)
#define RUN4_MAX2(a, b) ((a) > (b) ? (a) : (b))
#define RUN4_LONGEST(m) \
    RUN4_MAX2(RUN4_MAX2(RUN4_AT(m, 0), RUN4_AT(m, 1)), RUN4_MAX2(RUN4_AT(m, 2), RUN4_AT(m, 3)))
#define RUN4(m) {RUN4_PRE(m), RUN4_STARTS(m), RUN4_POST(m), RUN4_LONGEST(m)}
static const struct run4 run4_table[15] = {RUN4(0), RUN4(1), RUN4(2),  RUN4(3),  RUN4(4),
                                            RUN4(5), RUN4(6), RUN4(7),  RUN4(8),  RUN4(9),
                                            RUN4(10), RUN4(11), RUN4(12), RUN4(13), RUN4(14)};
#undef RUN4
#undef RUN4_LONGEST
#undef RUN4_MAX2
#undef RUN4_AT
#undef RUN4_STARTS
#undef RUN4_POST
#undef RUN4_PRE

/* Four deltas a step: shifted deltas' signed min / max with AVX2's 64-bit
 * compare, equal neighbours as a 4-bit mask: all equal goes on by four,
 * any other mask steps through run4_table (stepping lane by lane on mixed
 * masks mispredicted on short runs: a tenth of a small float table's
 * write). The same figures as the scalar loop. */
static QV__TARGET_AVX2 void delta_runs_avx2(const uint64_t *v, int64_t m, unsigned dsh,
                                            struct delta_runs *a) {
    int64_t run = 1, i = 1;
    a->runs++;
    __m256i mn = _mm256_set1_epi64x(INT64_MAX), mx = _mm256_set1_epi64x(INT64_MIN);
    const __m128i sh = _mm_cvtsi32_si128((int)dsh);
    for (; i + 4 <= m; i += 4) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(v + i));
        __m256i p = _mm256_loadu_si256((const __m256i *)(v + i - 1));
        __m256i d = _mm256_sll_epi64(_mm256_sub_epi64(x, p), sh);
        mn = _mm256_blendv_epi8(mn, d, _mm256_cmpgt_epi64(mn, d));
        mx = _mm256_blendv_epi8(mx, d, _mm256_cmpgt_epi64(d, mx));
        unsigned eq = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(x, p)));
        if (eq == 15) {
            run += 4;
            a->max_run = run > a->max_run ? run : a->max_run;
        } else {
            const struct run4 r = run4_table[eq];
            run += r.pre;
            int64_t hi = run > r.longest ? run : r.longest;
            a->max_run = hi > a->max_run ? hi : a->max_run;
            a->runs += r.starts;
            run = 1 + r.post;
        }
    }
    int64_t lo[4], hi[4];
    _mm256_storeu_si256((__m256i *)lo, mn);
    _mm256_storeu_si256((__m256i *)hi, mx);
    for (int k = 0; k < 4; k++) {
        a->dmin = lo[k] < a->dmin ? lo[k] : a->dmin;
        a->dmax = hi[k] > a->dmax ? hi[k] : a->dmax;
    }
    delta_runs_from(v, i, m, dsh, &run, a);
}
#endif

/* The sample loop. Values are counted either in an open-addressing hash
 * table (keys, cnt of tsize slots) or, when `direct`, in cnt indexed by
 * x - base (the chunk's values span fewer slots than the table would
 * have: no hashing, no probing, no keys). Either way each value's count
 * goes up in the same order, so the distinct count, the top count and
 * which value reaches it first are the same. With `full`, also the deltas
 * and runs (delta_runs, vector by vector before its values are counted)
 * and the most frequent value (without, the accumulator's other fields
 * stay as for an empty sample); with `use_inc`, inc holds, per
 * slot, the incidence of its value over the sampled vectors (qv__inc_note),
 * for the counts q1 and q2 (values in exactly one, two sampled vectors;
 * not needed when every vector is sampled: the count is then exact).
 * `direct`, `full` and `use_inc` are constants at every call, so each
 * combination compiles to a loop of its own. */
static QV__ALWAYS_INLINE void sample_loop(const uint64_t *v, int64_t n, int64_t nvec, int64_t take,
                                          unsigned bits, int direct, int full, int use_inc,
                                          uint64_t base, uint64_t *keys, uint16_t *cnt,
                                          uint16_t *inc, int64_t tsize, unsigned shift,
                                          struct qv__istats *s, struct sample_acc *a) {
    const unsigned dsh = 64 - bits;
    struct delta_runs dr = {INT64_MAX, INT64_MIN, 0, 1};
    int64_t distinct = 0, top = 0, seen = 0;
    uint64_t topv = v[0];
    for (int64_t k = 0; k < take; k++) {
        int64_t vec = take == nvec ? k : k * nvec / take;
        int64_t vs = vec << QV__VEC_SHIFT, ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        if (k == take / 2) {
            s->half_n = seen;
            s->half_distinct = distinct;
        }
        seen += ve - vs;
        if (full) QV__DISPATCH2(delta_runs, v + vs, ve - vs, dsh, &dr);
        for (int64_t i = vs; i < ve; i++) {
            uint64_t x = v[i];
            uint64_t h;
            if (direct) {
                h = x - base;
                distinct += cnt[h] == 0;
            } else {
                h = (x * UINT64_C(0x9E3779B97F4A7C15)) >> shift;
                while (cnt[h] && keys[h] != x) h = (h + 1) & (uint64_t)(tsize - 1);
                if (!cnt[h]) {
                    keys[h] = x;
                    distinct++;
                }
            }
            if (full) {
                /* Without a branch: the top moves unpredictably while
                 * counts are low (a mispredict every few values on
                 * low-cardinality data). */
                const int64_t c = ++cnt[h];
                const int up = c > top;
                top = up ? c : top;
                topv = up ? x : topv;
            } else {
                cnt[h] = 1;
            }
            if (use_inc) qv__inc_note(inc, h, k);
        }
    }
    if (dr.dmin != INT64_MAX) {
        dr.dmin >>= dsh;
        dr.dmax >>= dsh;
    }
    int64_t q1 = 0, q2 = 0;
    if (use_inc) qv__inc_count(inc, direct ? (int64_t)(s->umax - base) + 1 : tsize, &q1, &q2);
    if (!full) dr.max_run = 0, topv = 0;
    *a = (struct sample_acc){distinct, top, dr.dmin, dr.dmax, dr.runs, dr.max_run, seen, q1, q2, topv};
}

/* sample_loop with its constants: the sample's purpose (`full`, or the
 * distinct count alone), incidence when inc, the counting `direct`. */
static void sample_run(const uint64_t *v, int64_t n, int64_t nvec, int64_t take, unsigned bits,
                       int direct, int full, uint64_t base, uint64_t *keys, uint16_t *cnt,
                       uint16_t *inc, int64_t tsize, unsigned shift, struct qv__istats *s,
                       struct sample_acc *a) {
#define QV__SAMPLE_LOOP(D, F, I) \
    sample_loop(v, n, nvec, take, bits, D, F, I, base, keys, cnt, inc, tsize, shift, s, a)
    if (!full) {
        if (direct) QV__SAMPLE_LOOP(1, 0, 0);
        else QV__SAMPLE_LOOP(0, 0, 0);
    } else if (inc) {
        if (direct) QV__SAMPLE_LOOP(1, 1, 1);
        else QV__SAMPLE_LOOP(0, 1, 1);
    } else {
        if (direct) QV__SAMPLE_LOOP(1, 1, 0);
        else QV__SAMPLE_LOOP(0, 1, 0);
    }
#undef QV__SAMPLE_LOOP
}

int qv__istats_sample(struct qv__enc *e, const uint64_t *v, int64_t n, int what,
                      struct qv__istats *s) {
    const int full = what == QV__SAMPLE_ALL;
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    const int64_t take = nvec < SAMPLE_VECTORS ? nvec : SAMPLE_VECTORS;
    int64_t sn = 0;
    for (int64_t k = 0; k < take; k++) {
        int64_t vec = take == nvec ? k : k * nvec / take;
        int64_t vs = vec << QV__VEC_SHIFT;
        sn += (vs + QV__VEC < n ? QV__VEC : n - vs);
    }
    s->sample_n = sn;
    s->sample_distinct = 0;
    s->sample_units = s->sample_q1 = s->sample_q2 = 0;
    s->half_n = s->half_distinct = 0;
    s->top_count = 0;
    s->top_value = n ? v[0] : 0;
    if (sn == 0) return 0;
    const int64_t tsize = (int64_t)qv_next_pow2_64((uint64_t)sn * 2);
    const unsigned shift = 64 - (unsigned)__builtin_ctzll((uint64_t)tsize);
    /* s->umin / umax cover every value (qv__istats_compute ran first). */
    const uint64_t span = s->umax - s->umin;
    const int direct = span < (uint64_t)tsize;
    /* The scratch is pushed at its full size either way, so the encoder's
     * allocations (its stack's growth) are the same whichever way counts;
     * direct counting only clears and touches the first span + 1 slots. */
    struct qv__mark mk = qv__stack_mark(&e->stack);
    uint64_t *keys = qv__stack_push(&e->stack, (size_t)tsize * 8, e->err);
    const size_t ncnt = direct ? (size_t)span + 1 : (size_t)tsize;
    uint16_t *cnt = keys ? qv__stack_push(&e->stack, (size_t)tsize * 2, e->err) : NULL;
    /* Pushed at its full size either way, as keys are. */
    uint16_t *inc = cnt ? qv__stack_push(&e->stack, (size_t)tsize * 2, e->err) : NULL;
    if (!inc) {
        qv__stack_release(&e->stack, mk);
        return ENOMEM;
    }
    memset(cnt, 0, ncnt * 2);
    if (full && take < nvec)
        memset(inc, 0, ncnt * 2);
    else
        inc = NULL;
    /* Runs and deltas within the sampled vectors (exact when the sample is
     * all of the data). */
    struct sample_acc a;
    sample_run(v, n, nvec, take, s->bits, direct, full, direct ? s->umin : 0, direct ? NULL : keys,
               cnt, inc, tsize, shift, s, &a);
#ifdef QV_DEBUG
    /* Direct counting finds what the hash table finds. */
    /* (malloc, not the encoder's allocator: the allocation-failure tests
     * count the encoder's allocations, and this one is not the library's.) */
    uint64_t *dk = direct ? malloc((size_t)tsize * 8) : NULL;
    uint16_t *dc = dk ? calloc((size_t)tsize, 2) : NULL;
    uint16_t *di = dc && inc ? calloc((size_t)tsize, 2) : NULL;
    if (dc && (di || !inc)) {
        struct sample_acc b;
        int64_t hn = s->half_n, hd = s->half_distinct;
        sample_run(v, n, nvec, take, s->bits, 0, full, 0, dk, dc, di, tsize, shift, s, &b);
        QV_DCHECK(memcmp(&a, &b, sizeof a) == 0 && hn == s->half_n && hd == s->half_distinct);
    }
    free(dk);
    free(dc);
    free(di);
#endif
    qv__stack_release(&e->stack, mk);
    const int64_t dmin = a.dmin, dmax = a.dmax, runs = a.runs;
    s->dmin = dmin == INT64_MAX ? 0 : dmin;
    s->dmax = dmin == INT64_MAX ? 0 : dmax;
    /* Runs scale with the data; a run across sampled vectors counts twice,
     * which errs towards not choosing run-end encoding. */
    s->runs = sn == n ? runs : (int64_t)((double)runs * (double)n / (double)sn) + 1;
    s->max_run = a.max_run;
    s->sample_distinct = a.distinct;
    s->sample_units = full && take < nvec ? take : 0;
    s->sample_q1 = a.q1;
    s->sample_q2 = a.q2;
    s->top_count = a.top;
    s->top_value = a.topv;
    return 0;
}
