/*
 * Hostile float columns against ALP's (e, f) search (alp.c: a contiguous
 * sample scored by score_d/score_f, generic or AVX2) and the cascade's
 * skip of ALP-RD's search (cascade.c): NaN payloads, signalling NaNs,
 * -0.0, subnormals, infinities, values at the +-2^51 / +-2^22 limits of
 * the digits, integers near 2^53 (2^24 for float), constant and
 * all-exception columns, every size 1..200 and sizes around 1024/1031.
 * Each column, at every SIMD level: the search's choice is the same as
 * the generic one's, the encoded bytes are the same (auto, ALP forced,
 * ALP-RD forced), and the round trip is bit-exact (payloads and -0.0).
 */
#include <math.h>

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"
#include "quiver/arrow.h"
#include "quiver/format.h"
#include "test_enc_util.h"
#include "test_util.h"

static double d_of(uint64_t b) {
    double d;
    memcpy(&d, &b, 8);
    return d;
}
static float f_of(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* Special doubles (as bit patterns where the value alone is ambiguous). */
static const uint64_t SPECIAL_D[] = {
    0x7ff8000000000000ull, /* quiet NaN */
    0x7ff8000000000001ull, /* quiet NaN, payload 1 */
    0xfff800000000dead,    /* negative quiet NaN with a payload */
    0x7ff0000000000001ull, /* signalling NaN */
    0x7ff4000000000000ull, /* signalling NaN, other payload */
    0x8000000000000000ull, /* -0.0 */
    0x0000000000000001ull, /* smallest subnormal */
    0x800fffffffffffffull, /* -largest subnormal */
    0x0010000000000000ull, /* smallest normal */
    0x7ff0000000000000ull, /* +inf */
    0xfff0000000000000ull, /* -inf */
    0x7fefffffffffffffull, /* DBL_MAX */
};

static double special_d(uint64_t r) {
    switch (r % 24) {
    case 0: return 2251799813685248.0;         /* 2^51: the first value out of range */
    case 1: return -2251799813685248.0;        /* -2^51 */
    case 2: return 2251799813685247.0;         /* 2^51 - 1: the last in range */
    case 3: return -2251799813685247.0;
    case 4: return 2251799813685247.5;         /* 2^51 - 0.5 */
    case 5: return 9007199254740992.0;         /* 2^53 */
    case 6: return 9007199254740991.0;         /* 2^53 - 1 */
    case 7: return 9007199254740994.0;         /* 2^53 + 2 */
    case 8: return -9007199254740993.0;        /* rounds to -2^53 */
    case 9: return 225179981368524.75;         /* 2^51 / 10 with decimals */
    case 10: return 1e18;
    case 11: return -1e-18;
    default: return d_of(SPECIAL_D[r % (sizeof SPECIAL_D / sizeof SPECIAL_D[0])]);
    }
}

static const uint32_t SPECIAL_F[] = {
    0x7fc00000u, 0x7fc00001u, 0xffc0dead, 0x7f800001u, 0x7fa00000u, /* NaNs, signalling */
    0x80000000u, 0x00000001u, 0x807fffffu, 0x00800000u,             /* -0, subnormals */
    0x7f800000u, 0xff800000u, 0x7f7fffffu,                          /* inf, FLT_MAX */
};

static float special_f(uint64_t r) {
    switch (r % 22) {
    case 0: return 4194304.0f;  /* 2^22 */
    case 1: return -4194304.0f;
    case 2: return 4194303.0f;  /* 2^22 - 1 */
    case 3: return -4194303.0f;
    case 4: return 4194303.5f;
    case 5: return 16777216.0f; /* 2^24 */
    case 6: return 16777215.0f;
    case 7: return 16777218.0f;
    case 8: return 419430.38f;
    case 9: return 1e10f;
    default: return f_of(SPECIAL_F[r % (sizeof SPECIAL_F / sizeof SPECIAL_F[0])]);
    }
}

/* Column shapes: 0 decimals with a few specials, 1 only specials (all
 * exceptions), 2 one special repeated (constant), 3 integers near 2^53
 * (2^24), 4 decimals at the digit limit (2^51 / 100), 5 a decimal column
 * where every 8th value (the first level's sample) is special, 6 half
 * specials, 7 -0.0 and 0.0 alternating, 8 subnormals only. */
#define NSHAPES 9

static void fill(void *out, int pt, int64_t n, int shape, uint64_t seed) {
    uint64_t s = seed;
    const uint64_t pick = rng_next(&s);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        int sp;
        switch (shape) {
        case 0: sp = r % 37 == 0; break;
        case 1: sp = 1; break;
        case 2: sp = 2; break;
        case 5: sp = i % 8 == 0; break;
        case 6: sp = r & 1; break;
        default: sp = 0; break;
        }
        if (pt == QV__PT_F64) {
            double x;
            if (sp == 1) x = special_d(r >> 8);
            else if (sp == 2) x = special_d(pick);
            else if (shape == 3) x = 9007199254740992.0 - (double)(r % 4096) * 2;
            else if (shape == 4) x = (double)(int64_t)(r % 45035996273704ull) / 100.0 * ((r >> 60) & 1 ? -1 : 1);
            else if (shape == 7) x = (r & 1) ? -0.0 : 0.0;
            else if (shape == 8) x = d_of(r & 0x000fffffffffffffull);
            else x = (double)(int64_t)(r % 200000) / 100.0 - 1000;
            ((double *)out)[i] = x;
        } else {
            float x;
            if (sp == 1) x = special_f(r >> 8);
            else if (sp == 2) x = special_f(pick);
            else if (shape == 3) x = 16777216.0f - (float)(r % 512) * 2;
            else if (shape == 4) x = (float)(int32_t)(r % 41943) / 100.0f * ((r >> 60) & 1 ? -1 : 1);
            else if (shape == 7) x = (r & 1) ? -0.0f : 0.0f;
            else if (shape == 8) x = f_of((uint32_t)(r & 0x007fffffu));
            else x = (float)(int32_t)(r % 20000) / 10.0f - 1000;
            ((float *)out)[i] = x;
        }
    }
}

static struct qv_encoded encode_at(struct enc_env *env, const struct qv_values *in, int level,
                                   int force) {
    qv__cpu_set_level(level);
    struct qv_encode_options o = {0};
    o.force = force;
    struct qv_encoded e;
    struct qv_error err = {0};
    if (qv_encode(in, &o, env->r, &e, &err))
        fail_msg("encode %s n=%lld force=%d level=%d: %s", qv_value_kind_name(in->kind),
                 (long long)in->count, force, level, err.message);
    return e;
}

/* One column: choice, bytes and round trip at every level. */
static void check_column(struct enc_env *env, const void *buf, int pt, int64_t n, int shape) {
    const int top = qv__cpu_supported();
    qv__cpu_set_level(QV__CPU_BASELINE);
    struct qv__alp_choice want;
    qv__alp_choose(buf, n, pt, &want);
    for (int level = QV__CPU_BASELINE + 1; level <= top; level++) {
        qv__cpu_set_level(level);
        struct qv__alp_choice got;
        qv__alp_choose(buf, n, pt, &got);
        if (got.e != want.e || got.f != want.f || !(got.est_bytes == want.est_bytes) ||
            got.est_exceptions != want.est_exceptions)
            fail_msg("pt=%d n=%lld shape=%d level %d: (e %d, f %d, %.17g B, %lld exc) != "
                     "baseline's (%d, %d, %.17g B, %lld exc)", pt, (long long)n, shape, level,
                     got.e, got.f, got.est_bytes, (long long)got.est_exceptions, want.e, want.f,
                     want.est_bytes, (long long)want.est_exceptions);
    }
    struct qv_values in = {0};
    in.kind = pt == QV__PT_F64 ? QV_KIND_FLOAT64 : QV_KIND_FLOAT32;
    in.count = n;
    in.values = buf;
    static const int forces[] = {QV_ENC_AUTO, QV_ENC_ALP, QV_ENC_ALP_RD};
    for (size_t fi = 0; fi < 3; fi++) {
        struct qv_encoded base = encode_at(env, &in, QV__CPU_BASELINE, forces[fi]);
        for (int level = QV__CPU_BASELINE + 1; level <= top; level++) {
            struct qv_encoded e = encode_at(env, &in, level, forces[fi]);
            if (e.size != base.size || memcmp(e.data, base.data, e.size))
                fail_msg("pt=%d n=%lld shape=%d force=%d: level %d wrote %zu bytes, baseline "
                         "%zu, or different ones", pt, (long long)n, shape, forces[fi], level,
                         (size_t)e.size, (size_t)base.size);
            qv_encoded_release(env->r, &e);
        }
        qv_encoded_release(env->r, &base);
        /* Bit-exact round trip (full, ranges, takes) at each level. */
        for (int level = QV__CPU_BASELINE; level <= top; level += top > 0 ? top : 1) {
            qv__cpu_set_level(level);
            struct qv_encode_options o = {0};
            o.force = forces[fi];
            struct qv_encoded e = roundtrip(env, &in, &o, n > 200 ? 3 : 1, (uint64_t)n + (uint64_t)shape);
            qv_encoded_release(env->r, &e);
        }
    }
}

static int initial_level = -1;

static int setup(void **state) {
    (void)state;
    initial_level = qv__cpu_level();
    return 0;
}
static int teardown(void **state) {
    (void)state;
    qv__cpu_set_level(initial_level);
    return 0;
}

static void test_small_columns(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    double *buf = malloc(200 * 8);
    assert_non_null(buf);
    for (int pt = QV__PT_F32; pt; pt = pt == QV__PT_F32 ? QV__PT_F64 : 0)
        for (int shape = 0; shape < NSHAPES; shape++)
            for (int64_t n = 1; n <= 200; n += n < 20 ? 1 : 7) {
                fill(buf, pt, n, shape, (uint64_t)(n * 131 + shape));
                check_column(&env, buf, pt, n, shape);
            }
    free(buf);
    env_close(&env);
}

static void test_sizes_around_the_sample(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {127, 128, 129, 1023, 1024, 1025, 1031, 2055, 8200};
    double *buf = malloc(8200 * 8);
    assert_non_null(buf);
    for (int pt = QV__PT_F32; pt; pt = pt == QV__PT_F32 ? QV__PT_F64 : 0)
        for (int shape = 0; shape < NSHAPES; shape++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                fill(buf, pt, sizes[si], shape, (uint64_t)(sizes[si] * 7 + shape));
                check_column(&env, buf, pt, sizes[si], shape);
            }
    free(buf);
    env_close(&env);
}

/* Every special value alone as a constant column, and each one planted at
 * every position of an otherwise clean decimal column of 9..17 values
 * (the AVX2 loop's lanes and its tail). */
static void test_each_special_in_each_lane(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    double d[40];
    float f[40];
    for (uint64_t sp = 0; sp < 24; sp++) {
        for (int64_t n = 9; n <= 17; n++)
            for (int64_t at = 0; at < n; at++) {
                for (int64_t i = 0; i < n; i++) {
                    d[i] = (double)(i * 37 % 101) / 4.0;
                    f[i] = (float)(i * 37 % 101) / 4.0f;
                }
                d[at] = special_d(sp);
                f[at] = special_f(sp);
                check_column(&env, d, QV__PT_F64, n, 100 + (int)sp);
                check_column(&env, f, QV__PT_F32, n, 100 + (int)sp);
            }
        for (int64_t i = 0; i < 33; i++) {
            d[i] = special_d(sp);
            f[i] = special_f(sp);
        }
        check_column(&env, d, QV__PT_F64, 33, 200 + (int)sp);
        check_column(&env, f, QV__PT_F32, 33, 200 + (int)sp);
    }
    env_close(&env);
}

/* A file of every shape (float64 and float32 columns, chunks of 1,031
 * rows, one shape each, and a short last one) written at `level`; its
 * bytes in *size. */
static unsigned char *write_at(struct enc_env *env, int level, const char *path, size_t *size) {
    static const struct qv_field cols[] = {
        {.name = "d", .type = QV_TYPE_FLOAT64, .nullable = true},
        {.name = "f", .type = QV_TYPE_FLOAT32, .nullable = false},
    };
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2,
                                         .children = cols};
    enum { N = NSHAPES * 1031 + 77 };
    qv__cpu_set_level(level);
    struct qv_schema *sc;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, env->r, &sc, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(sc, env->r, NULL, &b, &err), 0);
    double *d = malloc(1031 * 8);
    float *f = malloc(1031 * 4);
    assert_true(d && f);
    for (int64_t at = 0, k = 0; at < N; at += 1031, k++) {
        fill(d, QV__PT_F64, 1031, (int)(k % NSHAPES), (uint64_t)k);
        fill(f, QV__PT_F32, 1031, (int)((k + 3) % NSHAPES), (uint64_t)k + 50);
        for (int64_t i = 0; i < 1031 && at + i < N; i++) {
            if (i % 97 == 5) assert_int_equal(qv_append_null(qv_builder_column(b, 0)), 0);
            else assert_int_equal(qv_append_float64(qv_builder_column(b, 0), d[i]), 0);
            assert_int_equal(qv_append_float32(qv_builder_column(b, 1), f[i]), 0);
        }
    }
    free(d);
    free(f);
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = 1031}; /* a shape per chunk */
    assert_int_equal(qv_writer_open(path, sc, &o, env->r, &w, &err), 0);
    assert_int_equal(qv_writer_write(w, &batch, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(sc);
    unsigned char *bytes = tu_read_file(path, size);
    assert_non_null(bytes);
    remove(path);
    return bytes;
}

/* The files written at every level are byte-identical. */
static void test_files_same_at_every_level(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    char path[512];
    tu_path(path, sizeof path, "alp_edges_levels.qvr");
    size_t base_size;
    unsigned char *base = write_at(&env, QV__CPU_BASELINE, path, &base_size);
    for (int level = QV__CPU_BASELINE + 1; level <= qv__cpu_supported(); level++) {
        size_t size;
        unsigned char *got = write_at(&env, level, path, &size);
        if (size != base_size || memcmp(got, base, size))
            fail_msg("level %d wrote %zu bytes, baseline %zu, or different ones", level, size,
                     base_size);
        free(got);
    }
    free(base);
    env_close(&env);
}

/* ---- The search against an exhaustive one ----
 * alp.c gives a pair up early (too many exceptions, or digits spanning
 * too much for the estimate to beat the cut). The reference below scores
 * every pair in full, with the search's two levels and tie rules, so any
 * early stop that changes the choice shows up. */
static const double RF10[19] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8, 1e9,
                                1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
static const float RF10F[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};

static int ref_digits(const void *x, int pt, int64_t k, int e, int f, int64_t *dg) {
    if (pt == QV__PT_F64) {
        double v = ((const double *)x)[k], y = v * RF10[e] / RF10[f];
        if (!(y > -2251799813685248.0 && y < 2251799813685248.0)) return -1;
        double r = (y + 6755399441055744.0) - 6755399441055744.0;
        double back = (double)(int64_t)r * RF10[f] / RF10[e];
        if (memcmp(&back, &v, 8)) return -1;
        *dg = (int64_t)r;
    } else {
        float v = ((const float *)x)[k], y = v * RF10F[e] / RF10F[f];
        if (!(y > -4194304.0f && y < 4194304.0f)) return -1;
        float r = (y + 12582912.0f) - 12582912.0f;
        float back = (float)(int32_t)r * RF10F[f] / RF10F[e];
        if (memcmp(&back, &v, 4)) return -1;
        *dg = (int32_t)r;
    }
    return 0;
}

static double ref_score(const void *x, int pt, int64_t ns, int e, int f, int64_t *exc_out) {
    int64_t exc = 0, lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t k = 0; k < ns; k++) {
        int64_t dg;
        if (ref_digits(x, pt, k, e, f, &dg)) {
            exc++;
            continue;
        }
        lo = dg < lo ? dg : lo;
        hi = dg > hi ? dg : hi;
    }
    unsigned w = 0;
    for (uint64_t span = exc == ns ? 0 : (uint64_t)hi - (uint64_t)lo; span; span >>= 1) w++;
    *exc_out = exc;
    const unsigned vbits = pt == QV__PT_F64 ? 64 : 32;
    return (double)(ns - exc) * w + (double)exc * (vbits + 32 + w);
}

static void ref_choose(const void *v, int64_t n, int pt, struct qv__alp_choice *c) {
    const int emax = pt == QV__PT_F64 ? 18 : 10;
    const size_t w = pt == QV__PT_F64 ? 8 : 4;
    const int64_t step = n <= 1024 ? 1 : n / 1024, ns = n < 1024 ? n : 1024;
    const int64_t g1 = ns > 128 ? ns / 128 : 1;
    unsigned char samp[1024 * 8], samp1[128 * 8];
    int64_t ns1 = 0;
    for (int64_t k = 0; k < ns; k++) memcpy(samp + k * w, (const char *)v + k * step * w, w);
    for (int64_t k = 0; k < 128 && k * g1 < ns; k++) memcpy(samp1 + (ns1++) * w, samp + k * g1 * w, w);
    int te[5], tf[5], nt = 0, pe[200], pf[200], np = 0;
    double tb[5];
    int64_t exc;
    if (ns > 128) {
        for (int e = 0; e <= emax; e++)
            for (int f = 0; f <= e; f++) {
                double bits = ref_score(samp1, pt, 128, e, f, &exc);
                if (nt == 5 && !(bits < tb[4])) continue;
                int at = nt < 5 ? nt++ : 4;
                while (at > 0 && tb[at - 1] > bits) {
                    tb[at] = tb[at - 1], te[at] = te[at - 1], tf[at] = tf[at - 1];
                    at--;
                }
                tb[at] = bits, te[at] = e, tf[at] = f;
            }
        for (int e = 0; e <= emax; e++) /* in the order of the full search */
            for (int f = 0; f <= e; f++)
                for (int i = 0; i < nt; i++)
                    if (te[i] == e && tf[i] == f) pe[np] = e, pf[np++] = f;
    } else {
        for (int e = 0; e <= emax; e++)
            for (int f = 0; f <= e; f++) pe[np] = e, pf[np++] = f;
    }
    double best = INFINITY;
    c->e = c->f = 0;
    c->est_exceptions = n;
    for (int i = 0; i < np; i++) {
        double bits = ref_score(samp, pt, ns, pe[i], pf[i], &exc);
        if (bits < best) {
            best = bits;
            c->e = pe[i];
            c->f = pf[i];
            c->est_exceptions = exc * (n / ns);
        }
    }
    c->est_bytes = best / 8.0 * ((double)n / (double)ns) + 64;
}

/* Integer-valued, decimal, mixed-scale and outlier columns (where the
 * span cut prunes most pairs), and the hostile shapes above, at sizes
 * on both sides of both samples: the choice equals the exhaustive one at
 * every SIMD level. */
static void test_search_matches_exhaustive(void **state) {
    (void)state;
    static const int64_t sizes[] = {1, 3, 17, 100, 128, 129, 700, 1024, 1025, 5000, 40000};
    double *buf = malloc(40000 * 8);
    assert_non_null(buf);
    const int top = qv__cpu_supported();
    int checked = 0;
    for (int pt = QV__PT_F32; pt; pt = pt == QV__PT_F32 ? QV__PT_F64 : 0)
        for (int shape = 0; shape < NSHAPES + 8; shape++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                const int64_t n = sizes[si];
                if (shape < NSHAPES) {
                    fill(buf, pt, n, shape, (uint64_t)(n * 13 + shape));
                } else {
                    uint64_t r = (uint64_t)(n * 31 + shape);
                    for (int64_t i = 0; i < n; i++) {
                        uint64_t x = rng_next(&r);
                        double d;
                        switch (shape - NSHAPES) {
                        case 0: d = (double)(x % 17); break;                       /* small ints */
                        case 1: d = (double)(int64_t)(x % 2000001) - 1e6; break;   /* wide ints */
                        case 2: d = (double)(x % 100000) / 1000.0; break;          /* 3 decimals */
                        case 3: d = (x % 4 ? (double)(x % 50) / 10.0 : (double)(x % 999) / 100.0); break;
                        case 4: d = (x % 97 ? (double)(x % 300) : 1e15 + (double)(x % 7)); break;
                        case 5: d = (double)(x % 5) * 0.25 + (i % 500 == 0 ? 0.1 : 0); break;
                        case 6: d = (double)(x % 1000000000) / 10000.0; break; /* rounding */
                        default: d = (double)(x % 100000000) / (x & 1 ? 1000.0 : 100000.0); break;
                        }
                        if (pt == QV__PT_F64) buf[i] = d;
                        else ((float *)buf)[i] = (float)d;
                    }
                }
                struct qv__alp_choice want;
                ref_choose(buf, n, pt, &want);
                for (int level = QV__CPU_BASELINE; level <= top; level++) {
                    qv__cpu_set_level(level);
                    struct qv__alp_choice got;
                    qv__alp_choose(buf, n, pt, &got);
                    if (got.e != want.e || got.f != want.f || !(got.est_bytes == want.est_bytes) ||
                        got.est_exceptions != want.est_exceptions)
                        fail_msg("pt=%d n=%lld shape=%d level %d: (e %d, f %d, %.17g B, %lld exc) "
                                 "!= exhaustive (%d, %d, %.17g B, %lld exc)", pt, (long long)n,
                                 shape, level, got.e, got.f, got.est_bytes,
                                 (long long)got.est_exceptions, want.e, want.f, want.est_bytes,
                                 (long long)want.est_exceptions);
                    checked++;
                }
            }
    assert_true(checked >= 2 * (NSHAPES + 8) * 11);
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_small_columns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sizes_around_the_sample, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_special_in_each_lane, setup, teardown),
        cmocka_unit_test_setup_teardown(test_files_same_at_every_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_search_matches_exhaustive, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
