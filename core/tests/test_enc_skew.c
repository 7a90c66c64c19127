/*
 * Skew and repetition in the cascade: the entropy stage (zstd in frames of
 * 4 or 16 vectors over packed integer codes), frequency-ordered dictionaries,
 * patched codes, and the second build when an estimate was wrong. Each case
 * of the issue (a repeating 0..23 hour column, decade years, Zipf-skewed
 * ints with 1,000 distinct values, skewed strings, unsorted data whose
 * sample looks sorted) round-trips (full, ranges, takes) and must come out
 * smaller than the cascade without these stages (the encodings they add
 * masked off); corrupt entropy-coded chunks fail cleanly.
 */
#include <math.h>

#include "test_enc_util.h"

/* Every encoding but the entropy stage (zstd) and patched: the cascade as
 * it was before them. Dictionaries are frequency-ordered either way. */
static const uint32_t OLD_MASK = ~(QV_ENC_BIT(QV_ENC_ZSTD) | QV_ENC_BIT(QV_ENC_PATCHED));

/* Chosen (all encodings) must be at most `frac` of the old cascade's size. */
static void expect_smaller(struct enc_env *env, const struct qv_values *v, double frac,
                           const char *what) {
    char tree[1024];
    size_t now = encoded_size(env, v, 0, 10, 17, tree, sizeof tree);
    size_t old = encoded_size(env, v, OLD_MASK, 10, 17, NULL, 0);
    print_message("%s: %zu bytes (%.2f bits/value), was %zu: %s\n", what, now,
                  8.0 * (double)now / (double)v->count, old, tree);
    if ((double)now > frac * (double)old)
        fail_msg("%s: %zu bytes, the old cascade %zu (want <= %.2fx)", what, now, old, frac);
}

/* A sensor's hour of day, 0..23 over and over. */
static void test_hour_cycle(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {4096, 26280, 100000};
    for (size_t k = 0; k < 3; k++) {
        struct col c = col_words(QV_KIND_INT64, ns[k]);
        for (int64_t i = 0; i < ns[k]; i++) ((int64_t *)c.values)[i] = i % 24;
        expect_smaller(&env, &c.v, 0.25, "hour 0..23");
        col_free(&c);
    }
    env_close(&env);
}

/* Decade years, each repeated for a group of rows (age groups x sexes),
 * the groups cycling. */
static void test_decade_years(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 30000;
    struct col c = col_words(QV_KIND_INT32, n);
    for (int64_t i = 0; i < n; i++) ((int32_t *)c.values)[i] = 1850 + 10 * (int32_t)((i / 7) % 16);
    expect_smaller(&env, &c.v, 0.5, "decade years");
    col_free(&c);
    env_close(&env);
}

/* Zipf-distributed values (s = 1.1) over 1,000 distinct ints spread over a
 * wide range: fixed-width codes need 10 bits per value. */
static void test_zipf(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 200000, d = 1000;
    double *cdf = malloc((size_t)d * sizeof *cdf), sum = 0;
    for (int64_t r = 0; r < d; r++) cdf[r] = (sum += 1.0 / pow((double)(r + 1), 1.1));
    struct col c = col_words(QV_KIND_INT64, n);
    uint64_t s = 5;
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(rng_next(&s) >> 11) / 9007199254740992.0 * sum;
        int64_t lo = 0, hi = d - 1;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1;
            else hi = mid;
        }
        /* Value of rank lo: scattered so its order says nothing of rank. */
        ((int64_t *)c.values)[i] = (int64_t)((uint64_t)(lo * 7919) % 100003) * 1000 + 17;
    }
    char tree[1024];
    size_t now = encoded_size(&env, &c.v, 0, 10, 17, tree, sizeof tree);
    double bits = 8.0 * (double)now / (double)n;
    print_message("zipf: %.2f bits/value: %s\n", bits, tree);
    if (bits > 9.0) fail_msg("zipf ints: %.2f bits per value (fixed width needs 10)", bits);
    expect_smaller(&env, &c.v, 0.9, "zipf");
    free(cdf);
    col_free(&c);
    env_close(&env);
}

/* Skewed short strings (airport codes): a frequency-ordered dictionary
 * whose codes then cost fewer bits. */
static size_t airport(int64_t i, uint64_t *rng, uint8_t *buf, size_t cap) {
    (void)i;
    (void)cap;
    /* rank = floor of an exponential: geometric skew over ~200 codes */
    uint64_t x = rng_next(rng);
    unsigned rank = (unsigned)__builtin_ctzll(x | (UINT64_C(1) << 40)) * 5 + (unsigned)((x >> 50) % 5);
    buf[0] = (uint8_t)('A' + rank % 26);
    buf[1] = (uint8_t)('A' + (rank / 26) % 26);
    buf[2] = (uint8_t)('A' + (rank * 7) % 26);
    return 3;
}
static void test_skewed_strings(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 120000, airport, 9);
    expect_smaller(&env, &c.v, 0.9, "airport codes");
    col_free(&c);
    env_close(&env);
}

/* Small values with rare outliers (delays: mostly 0..30, a few hours):
 * patched, or the entropy stage, beats frame of reference. */
static void test_delays(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 100000;
    struct col c = col_words(QV_KIND_INT32, n);
    uint64_t s = 3;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        int32_t x = (int32_t)(r % 31);
        if (r % 100 == 7) x = 200 + (int32_t)((r >> 20) % 1200);
        if (r % 1000 == 9) x = -(int32_t)((r >> 30) % 60);
        ((int32_t *)c.values)[i] = x;
    }
    expect_smaller(&env, &c.v, 0.9, "delays");
    col_free(&c);
    env_close(&env);
}

/* Unsorted data whose sampled vectors happen to be sorted: delta looks
 * cheap on the sample; the built node must not be larger than frame of
 * reference (the second build catches the estimate). */
static void test_sample_looks_sorted(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 64 * 1024;
    struct col c = col_words(QV_KIND_INT32, n);
    uint64_t s = 11;
    for (int64_t i = 0; i < n; i++) {
        int64_t vec = i / 1024;
        /* The cascade samples vectors 0, 4, 8, ...: those ascend slowly. */
        int32_t x = vec % 4 == 0 ? (int32_t)(vec * 4096 + (i % 1024) * 4)
                                 : (int32_t)(rng_next(&s) % (64 * 4096));
        ((int32_t *)c.values)[i] = x;
    }
    char tree[1024];
    size_t now = encoded_size(&env, &c.v, 0, 10, 17, tree, sizeof tree);
    /* Frame of reference: 18 bits per value plus headers. */
    size_t for_bytes = (size_t)n * 18 / 8 + 256;
    print_message("sample looks sorted: %zu bytes (frame of reference %zu): %s\n", now, for_bytes,
                  tree);
    if (now > for_bytes) fail_msg("%zu bytes, frame of reference needs %zu: %s", now, for_bytes, tree);
    col_free(&c);
    env_close(&env);
}

/* Row counts around the entropy stage's frames and minimum. */
static void test_frame_edges(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {1023, 1024, 4095, 4096, 4097, 16383, 16384, 16385, 40000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        struct col c = col_words(QV_KIND_UINT16, ns[k]);
        for (int64_t i = 0; i < ns[k]; i++) ((uint16_t *)c.values)[i] = (uint16_t)(1000 + (i * 5) % 37);
        struct qv_encoded e = roundtrip(&env, &c.v, NULL, 30, (uint64_t)k);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* Flipped bytes of an entropy-coded chunk: EIO or success, never more. */
static void test_corrupt_entropy(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 40000;
    struct col c = col_words(QV_KIND_INT64, n);
    for (int64_t i = 0; i < n; i++) ((int64_t *)c.values)[i] = i % 24;
    struct qv_error err = {0};
    struct qv_encoded e;
    assert_int_equal(qv_encode(&c.v, NULL, env.r, &e, &err), 0);
    char tree[512];
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
    if (!strstr(tree, "zstd")) fail_msg("no entropy stage in %s", tree);
    corrupt_trials(&env, &e, QV_KIND_INT64, n, 600, 42, 0, 20);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hour_cycle),       cmocka_unit_test(test_decade_years),
        cmocka_unit_test(test_zipf),             cmocka_unit_test(test_skewed_strings),
        cmocka_unit_test(test_delays),           cmocka_unit_test(test_sample_looks_sorted),
        cmocka_unit_test(test_frame_edges),      cmocka_unit_test(test_corrupt_entropy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
