/*
 * The cascade's statistics (encoding/stats.c) against a straightforward
 * reference: value ranges over every value, and what the sample of whole
 * vectors saw (deltas, runs, the longest run, distinct values over the
 * sample and its first half, incidence over the sampled vectors, the most
 * frequent value and which value reached that count first), on random and
 * edge-case inputs at every width and SIMD level; QV__SAMPLE_DISTINCT's
 * fields equal QV__SAMPLE_ALL's. Patched's low percentiles (patched.c
 * checks them against selection over the whole sample in debug builds)
 * are driven through the bucket cases: the minimum, one bucket for both,
 * two buckets, 64-bit keys, signed order.
 */
#include "test_enc_util.h"

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

struct fixture {
    struct enc_env env;
    struct qv_error err;
    struct qv__enc e;
};

static int setup(void **state) {
    struct fixture *f = calloc(1, sizeof *f);
    env_open(&f->env);
    struct qv_encode_options o = {0};
    qv__enc_init(&f->e, &o, f->env.r, &f->err);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    struct fixture *f = *state;
    qv__enc_finish(&f->e, ECANCELED, NULL, NULL);
    env_close(&f->env);
    qv__cpu_set_level(qv__cpu_supported());
    free(f);
    return 0;
}

/* ---- The reference ---- */

struct ref_stats {
    int64_t dmin, dmax, runs, max_run, sn, distinct, half_n, half_distinct, units, q1, q2, top;
    uint64_t top_value;
};

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Index of x in the sorted distinct values u[0..d). */
static int64_t find(const uint64_t *u, int64_t d, uint64_t x) {
    int64_t lo = 0, hi = d - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (u[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    assert_true(u[lo] == x);
    return lo;
}

static int64_t count_distinct(const uint64_t *v, int64_t n) {
    uint64_t *c = malloc((size_t)(n ? n : 1) * 8);
    memcpy(c, v, (size_t)n * 8);
    qsort(c, (size_t)n, 8, cmp_u64);
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += i == 0 || c[i] != c[i - 1];
    free(c);
    return d;
}

/* The sample as the encoder takes it: `take` whole vectors spread evenly. */
static void reference(const uint64_t *v, int64_t n, unsigned bits, struct ref_stats *r) {
    memset(r, 0, sizeof *r);
    const int64_t nvec = (n + QV__VEC - 1) / QV__VEC, take = nvec < 16 ? nvec : 16;
    uint64_t *smp = malloc((size_t)(n ? n : 1) * 8);
    int64_t *vec_of = malloc((size_t)(n ? n : 1) * 8);
    int have_delta = 0;
    r->max_run = 1;
    for (int64_t k = 0; k < take; k++) {
        int64_t vs = (take == nvec ? k : k * nvec / take) * QV__VEC;
        int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        if (k == take / 2) {
            r->half_n = r->sn;
            r->half_distinct = count_distinct(smp, r->sn);
        }
        int64_t run = 0;
        for (int64_t i = vs; i < ve; i++) {
            if (i > vs) {
                int64_t d = qv__sext((v[i] - v[i - 1]) & qv__mask(bits), bits);
                if (!have_delta || d < r->dmin) r->dmin = d;
                if (!have_delta || d > r->dmax) r->dmax = d;
                have_delta = 1;
            }
            run = i > vs && v[i] == v[i - 1] ? run + 1 : 1;
            r->runs += run == 1;
            if (run > r->max_run) r->max_run = run;
            vec_of[r->sn] = k;
            smp[r->sn++] = v[i];
        }
    }
    if (r->sn != n && r->sn) r->runs = (int64_t)((double)r->runs * (double)n / (double)r->sn) + 1;
    /* Distinct values, counts, and vectors each was in. */
    uint64_t *u = malloc((size_t)(r->sn ? r->sn : 1) * 8);
    memcpy(u, smp, (size_t)r->sn * 8);
    qsort(u, (size_t)r->sn, 8, cmp_u64);
    int64_t d = 0;
    for (int64_t i = 0; i < r->sn; i++)
        if (i == 0 || u[i] != u[i - 1]) u[d++] = u[i];
    r->distinct = d;
    int64_t *cnt = calloc((size_t)(d ? d : 1), 8), *vecs = calloc((size_t)(d ? d : 1), 8),
            *last = malloc((size_t)(d ? d : 1) * 8);
    for (int64_t j = 0; j < d; j++) last[j] = -1;
    for (int64_t i = 0; i < r->sn; i++) {
        int64_t j = find(u, d, smp[i]);
        cnt[j]++;
        if (last[j] != vec_of[i]) vecs[j]++, last[j] = vec_of[i];
    }
    for (int64_t j = 0; j < d; j++) r->top = cnt[j] > r->top ? cnt[j] : r->top;
    /* The value whose count reached the top first. */
    r->top_value = n ? v[0] : 0;
    memset(cnt, 0, (size_t)(d ? d : 1) * 8);
    for (int64_t i = 0; i < r->sn; i++)
        if (++cnt[find(u, d, smp[i])] == r->top) {
            r->top_value = smp[i];
            break;
        }
    if (take < nvec) {
        r->units = take;
        for (int64_t j = 0; j < d; j++) r->q1 += vecs[j] == 1, r->q2 += vecs[j] == 2;
    }
    free(u);
    free(cnt);
    free(vecs);
    free(last);
    free(smp);
    free(vec_of);
}

/* ---- Inputs ---- */

enum shape { RANDOM, NARROW, RUNS, SORTED, CONSTANT, SKEWED, EXTREMES, SHORT_RUNS, SHAPES };

static void make(uint64_t *v, int64_t n, unsigned bits, enum shape sh, uint64_t seed) {
    const uint64_t mask = qv__mask(bits);
    uint64_t s = seed, x = rng_next(&s) & mask;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        switch (sh) {
        case RANDOM: x = r; break;
        case NARROW: x = (UINT64_C(1) << (bits - 1)) - 20 + r % 40; break; /* across the sign bit */
        case RUNS: x = r % 7 == 0 ? r >> 8 : x; break;
        case SORTED: x += r % 5; break;
        case CONSTANT: break;
        case SKEWED: x = r % 100 < 93 ? 42 : r % 1000; break;
        case SHORT_RUNS: x = r & 1 ? r % 5 : x; break; /* every 4-lane mask of equal neighbours */
        default: {
            static const uint64_t edge[] = {0, 1, ~UINT64_C(0), UINT64_C(1) << 63,
                                            (UINT64_C(1) << 63) - 1, 0x80, 0x7f};
            x = edge[r % 7];
        }
        }
        v[i] = x & mask;
    }
}

static void check_sample(struct qv__enc *e, const uint64_t *v, int64_t n, unsigned bits,
                         const char *what) {
    struct ref_stats r;
    reference(v, n, bits, &r);
    struct qv__istats s, t;
    qv__istats_compute(v, n, bits, &s);
    t = s;
    assert_int_equal(qv__istats_sample(e, v, n, QV__SAMPLE_ALL, &s), 0);
    assert_int_equal(qv__istats_sample(e, v, n, QV__SAMPLE_DISTINCT, &t), 0);
    int ok = s.dmin == r.dmin && s.dmax == r.dmax && s.runs == r.runs && s.max_run == r.max_run &&
             s.sample_n == r.sn && s.sample_distinct == r.distinct && s.half_n == r.half_n &&
             s.half_distinct == r.half_distinct && s.sample_units == r.units &&
             s.sample_q1 == r.q1 && s.sample_q2 == r.q2 && s.top_count == r.top &&
             s.top_value == r.top_value;
    if (!ok)
        fail_msg("%s (%s, n=%lld, bits=%u): dmin %lld/%lld dmax %lld/%lld runs %lld/%lld "
                 "max_run %lld/%lld sn %lld/%lld distinct %lld/%lld half %lld,%lld/%lld,%lld "
                 "units %lld/%lld q %lld,%lld/%lld,%lld top %lld/%lld value %llu/%llu",
                 what, qv__cpu_level_name(qv__cpu_level()), (long long)n, bits,
                 (long long)s.dmin, (long long)r.dmin, (long long)s.dmax, (long long)r.dmax,
                 (long long)s.runs, (long long)r.runs, (long long)s.max_run,
                 (long long)r.max_run, (long long)s.sample_n, (long long)r.sn,
                 (long long)s.sample_distinct, (long long)r.distinct, (long long)s.half_n,
                 (long long)s.half_distinct, (long long)r.half_n, (long long)r.half_distinct,
                 (long long)s.sample_units, (long long)r.units, (long long)s.sample_q1,
                 (long long)s.sample_q2, (long long)r.q1, (long long)r.q2,
                 (long long)s.top_count, (long long)r.top, (unsigned long long)s.top_value,
                 (unsigned long long)r.top_value);
    /* The distinct-only sample: the same counts it keeps. */
    assert_int_equal(t.sample_n, s.sample_n);
    assert_int_equal(t.sample_distinct, s.sample_distinct);
    assert_int_equal(t.half_n, s.half_n);
    assert_int_equal(t.half_distinct, s.half_distinct);
    assert_int_equal(t.umin, s.umin);
    assert_int_equal(t.smax, s.smax);
}

static void test_sample_matches_reference(void **state) {
    struct fixture *f = *state;
    static const int64_t sizes[] = {1, 2, 3, 15, 16, 17, 1023, 1024, 1025, 5000, 16384, 16385,
                                    40000};
    static const char *names[] = {"random", "narrow", "runs", "sorted", "constant", "skewed",
                                  "extremes", "short runs"};
    uint64_t *v = malloc(40000 * 8);
    for (int level = QV__CPU_BASELINE; level <= qv__cpu_supported(); level++) {
        qv__cpu_set_level(level);
        for (unsigned bits = 8; bits <= 64; bits *= 2)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                for (int sh = 0; sh < SHAPES; sh++) {
                    /* The large sizes at every level for two shapes only. */
                    if (sizes[si] > 17000 && sh != RUNS && sh != SKEWED && level > 0) continue;
                    make(v, sizes[si], bits, (enum shape)sh, (uint64_t)(si * 31 + sh * 7 + bits));
                    check_sample(&f->e, v, sizes[si], bits, names[sh]);
                }
    }
    free(v);
}

/* ---- Patched's percentiles ---- */

static void choose(struct qv__enc *e, const uint64_t *v, int64_t n, int pt) {
    struct qv__istats s;
    qv__istats_compute(v, n, qv__pt_width(pt) * 8, &s);
    assert_int_equal(qv__istats_sample(e, v, n, QV__SAMPLE_ALL, &s), 0);
    struct qv__patched_choice c;
    assert_int_equal(qv__patched_choose(e, v, n, pt, &s, &c), 0);
    if (c.est_bytes >= 0) {
        /* The reference is one of the sample's values or the minimum. */
        int found = 0;
        for (int64_t i = 0; i < n && !found; i++) found = v[i] == c.ref;
        assert_true(found);
    }
}

static void test_patched_percentiles(void **state) {
    struct fixture *f = *state;
    enum { N = 20000 };
    uint64_t *v = malloc(N * 8);
    static const int pts[] = {QV__PT_U8, QV__PT_U16, QV__PT_U32, QV__PT_U64};
    for (size_t p = 0; p < sizeof pts / sizeof pts[0]; p++) {
        const unsigned bits = qv__pt_width(pts[p]) * 8;
        const uint64_t mask = qv__mask(bits);
        for (int c = 0; c < 7; c++) {
            uint64_t s = (uint64_t)(p * 10 + c);
            for (int64_t i = 0; i < N; i++) {
                uint64_t r = rng_next(&s), x;
                switch (c) {
                case 0: x = 1000 + r % 16; break;                              /* no outliers */
                case 1: x = r % 1000 < 5 ? 3 : 1000 + r % 16; break;           /* 0.5% low */
                case 2: x = r % 100 < 5 ? r % 50 : 1000 + r % 16; break;       /* 5% low */
                case 3: x = r % 100 < 20 ? 7 : 1000 + r % 4096; break;         /* 20% at min */
                case 4: x = r; break;                                          /* full width */
                case 5: x = r % 100 < 50 ? 0 : ~UINT64_C(0) - r % 9; break;    /* sign flips */
                default: x = r % 1000 < 3 ? UINT64_C(1) << (bits - 1) : r % 300; break;
                }
                v[i] = x & mask;
            }
            for (int64_t n = 16; n <= N; n = n * 5 + 3) choose(&f->e, v, n, pts[p]);
            choose(&f->e, v, N, pts[p]);
        }
    }
    free(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sample_matches_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patched_percentiles, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
