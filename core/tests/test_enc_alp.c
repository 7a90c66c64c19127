/*
 * ALP's encode side: the two-level (e, f) search finds the exponent a
 * decimal column needs (no exceptions, digits no wider than the decimals'
 * range), small chunks search every pair, and the exceptions (marked in a
 * bitmap in one pass over the values) round-trip bit for bit wherever they
 * fall: the first value, whole 64-value words, the last partial word, every
 * value.
 */
#include <math.h>

#include "test_enc_util.h"

/* Bits needed for values 0..x. */
static unsigned bits_of(uint64_t x) { return x ? 64u - (unsigned)__builtin_clzll(x) : 0u; }

/* A forced ALP encode of v, round-tripped; returns its size. */
static size_t alp_roundtrip(struct enc_env *env, const struct qv_values *v) {
    struct qv_encode_options o = {0};
    o.force = QV_ENC_ALP;
    struct qv_encoded e = roundtrip(env, v, &o, 8, 3);
    assert_int_equal(root_encoding(&e), QV_ENC_ALP);
    size_t size = e.size;
    qv_encoded_release(env->r, &e);
    return size;
}

/* Decimals with k digits after the point: the cascade picks ALP and the
 * size is that of the digits bit-packed at their range's width (plus
 * headers), so the chosen exponent is the one the decimals need. */
static void test_decimals(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {131072, 5000, 100, 7};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int64_t n = sizes[si];
        for (int k = 0; k <= 4; k++) {
            struct col c = col_words(QV_KIND_FLOAT64, n);
            double *a = c.values;
            uint64_t s = 17 + (uint64_t)k;
            const double scale = pow(10.0, k);
            const uint64_t range = 5000000;
            for (int64_t i = 0; i < n; i++) a[i] = (double)(int64_t)(rng_next(&s) % range) / scale;
            struct qv_encoded e = roundtrip(&env, &c.v, NULL, 6, 5);
            if (n >= 1024) {
                assert_int_equal(root_encoding(&e), QV_ENC_ALP);
                double packed = (double)n * bits_of(range - 1) / 8.0;
                if ((double)e.size > packed * 1.02 + 512)
                    fail_msg("n=%lld k=%d: %zu bytes, digits alone %.0f", (long long)n, k, e.size,
                             packed);
            }
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    }
    /* Float32 too (e <= 10). */
    struct col f = col_words(QV_KIND_FLOAT32, 131072);
    float *b = f.values;
    uint64_t s = 3;
    for (int64_t i = 0; i < 131072; i++) b[i] = (float)(int64_t)(rng_next(&s) % 100000) / 10.0f;
    struct qv_encoded e = roundtrip(&env, &f.v, NULL, 6, 5);
    assert_int_equal(root_encoding(&e), QV_ENC_ALP);
    assert_true((double)e.size < 131072.0 * 17 / 8 * 1.02 + 512);
    qv_encoded_release(env.r, &e);
    col_free(&f);
    env_close(&env);
}

/* Exceptions anywhere: positions chosen by pattern, values NaN, -0.0,
 * infinities and doubles with more precision than the chosen exponent. */
static void test_exceptions(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1, 63, 64, 65, 1000, 4096, 70001};
    const double odd[] = {NAN, -0.0, INFINITY, -INFINITY, 0.1 + 0.2, 1.0 / 3.0};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int64_t n = sizes[si];
        for (int pat = 0; pat < 5; pat++) {
            struct col c = col_words(QV_KIND_FLOAT64, n);
            double *a = c.values;
            uint64_t s = (uint64_t)(n * 7 + pat);
            for (int64_t i = 0; i < n; i++) {
                int exc;
                switch (pat) {
                case 0: exc = i == 0; break;                      /* the first value */
                case 1: exc = i < 128; break;                     /* whole words first */
                case 2: exc = i >= n - (n % 64 ? n % 64 : 64); break; /* the last word */
                case 3: exc = rng_next(&s) % 17 == 0; break;      /* scattered */
                default: exc = 1; break;                          /* every value */
                }
                a[i] = exc ? odd[rng_next(&s) % 6] : (double)(int64_t)(rng_next(&s) % 100000) / 100.0;
            }
            alp_roundtrip(&env, &c.v);
            struct qv_encoded e = roundtrip(&env, &c.v, NULL, 6, 11);
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    }
    /* Float32 exceptions. */
    struct col f = col_words(QV_KIND_FLOAT32, 3000);
    float *b = f.values;
    uint64_t s = 8;
    for (int64_t i = 0; i < 3000; i++)
        b[i] = i % 97 == 0 ? (i % 2 ? NAN : -0.0f) : (float)(int64_t)(rng_next(&s) % 1000) / 4.0f;
    alp_roundtrip(&env, &f.v);
    col_free(&f);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decimals),
        cmocka_unit_test(test_exceptions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
