/*
 * The entropy stage's ranking of its layouts on a quarter of the sample
 * (entropy.c: trial_compress, RANK_SLACK) against columns of 1023, 1024,
 * 4095, 4096, 4097 and more values (no quarter, a quarter of one vector,
 * partial last vectors), skewed small integers, values zstd cannot shrink,
 * each layout forced, and allocation failures at every allocation of an
 * encode: every chunk round-trips exactly, a forced layout is built, and an
 * allocation failure gives ENOMEM or a correct chunk, never a wrong one
 * nor a leak.
 */
#include "encoding/encoding_testing.h"
#include "memory/memory_testing.h"
#include "test_enc_util.h"

/* Shapes: 0 skewed small ints (geometric), 1 uniform over 12 bits (zstd
 * gains little), 2 uniform over 31 bits (zstd expands), 3 a few values in
 * long runs, 4 skewed with rare wide outliers, 5 sawtooth. */
#define NSHAPES 6

static void fill(int32_t *v, int64_t n, int shape, uint64_t seed) {
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        int32_t x;
        switch (shape) {
        case 0: x = __builtin_ctzll(r | (UINT64_C(1) << 40)); break;
        case 1: x = (int32_t)(r & 0xFFF); break;
        case 2: x = (int32_t)(r & 0x7FFFFFFF); break;
        case 3: x = (int32_t)((i / 300) % 5) * 1000; break;
        case 4: x = r % 500 == 0 ? (int32_t)(r >> 40) : __builtin_ctzll(r | (UINT64_C(1) << 8)); break;
        default: x = (int32_t)(i % 700); break;
        }
        v[i] = x;
    }
}

static void describe(struct enc_env *env, const struct qv_encoded *e, char *tree, size_t cap) {
    struct qv_error err = {0};
    if (qv_enc_describe(e->data, e->size, env->r, tree, cap, &err) == EIO)
        fail_msg("describe: %s", err.message);
}

static void test_sizes_shapes_layouts(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1023, 1024, 1025, 2047, 3073, 4095, 4096, 4097, 7169, 8192, 20000};
    int32_t *v = malloc(20000 * 4);
    assert_non_null(v);
    char tree[4096];
    int zstd_chosen = 0;
    for (int layout = 0; layout <= 4; layout++) {
        qv_encode_force_entropy_layout(layout);
        for (int shape = 0; shape < NSHAPES; shape++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                const int64_t n = sizes[si];
                fill(v, n, shape, (uint64_t)(n + shape));
                struct qv_values in = {0};
                in.kind = QV_KIND_INT32;
                in.count = n;
                in.values = v;
                struct qv_encoded e = roundtrip(&env, &in, NULL, 3, (uint64_t)n * 3 + (uint64_t)layout);
                describe(&env, &e, tree, sizeof tree);
                /* The stage's frames: zstd, or ans (chosen for skewed
                 * bytes, forced as layout 4). */
                const int has_zstd = strstr(tree, "zstd(") != NULL || strstr(tree, "ans(") != NULL;
                /* A forced layout is built for every node it can hold: the
                 * skewed shapes' roots (1 to 16 bits, 1,024 values or more; 1,023
                 * values are below the stage's minimum; ans holds 8 bits). */
                if (layout && n >= 1024 && (shape == 0 || (shape == 5 && layout != 4)) &&
                    !has_zstd)
                    fail_msg("layout %d forced, n=%lld shape %d: no zstd in %s", layout,
                             (long long)n, shape, tree);
                if (!layout) zstd_chosen += has_zstd;
                /* Columns of 4 vectors or more (ranked on a quarter of the
                 * sample) whose values zstd shrinks well: the stage wins;
                 * shape 5 (i % 700) may go to delta's chain instead, steps
                 * of 1 patched at each wrap, which is smaller still. */
                const int chained = shape == 5 && strncmp(tree, "delta(", 6) == 0;
                if (!layout && !has_zstd && !chained && n >= 4095 && n != 4096 && n != 8192 &&
                    (shape == 0 || shape == 5))
                    fail_msg("n=%lld shape %d: the entropy stage was not chosen: %s",
                             (long long)n, shape, tree);
                qv_encoded_release(env.r, &e);
            }
    }
    qv_encode_force_entropy_layout(0);
    /* Left to choose, the stage is taken for some of these columns. */
    assert_true(zstd_chosen > 0);
    free(v);
    env_close(&env);
}

/* Every allocation of an encode of each size failed in turn. */
static void test_allocation_failures(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1024, 4096, 4097};
    int32_t *v = malloc(4097 * 4);
    assert_non_null(v);
    for (int layout = 0; layout <= 3; layout += 3) {
        qv_encode_force_entropy_layout(layout);
        for (int shape = 0; shape < NSHAPES; shape += 2)
            for (size_t si = 0; si < 3; si++) {
                const int64_t n = sizes[si];
                fill(v, n, shape, (uint64_t)n);
                struct qv_values in = {0};
                in.kind = QV_KIND_INT32;
                in.count = n;
                in.values = v;
                int failures = 0, successes = 0;
                for (uint64_t nth = 1; nth < 400; nth++) {
                    struct qv_encoded e;
                    struct qv_error err = {0};
                    qv_pool_inject_alloc_failure(env.pool, nth);
                    int rc = qv_encode(&in, NULL, env.r, &e, &err);
                    qv_pool_inject_alloc_failure(env.pool, 0);
                    assert_int_equal(qv_reservation_used(env.r), rc ? 0 : (int64_t)qv_reservation_used(env.r));
                    if (rc) {
                        if (rc != ENOMEM)
                            fail_msg("n=%lld shape %d, allocation %llu failed: rc %d (%s)",
                                     (long long)n, shape, (unsigned long long)nth, rc, err.message);
                        failures++;
                        continue;
                    }
                    /* Whatever it chose, the chunk is right. */
                    struct qv_decoder *d;
                    assert_int_equal(qv_decoder_open(e.data, e.size, in.kind, 0, n, env.r, &d, &err), 0);
                    struct qv_decode_out o;
                    out_alloc(&o, &in, n);
                    assert_int_equal(qv_decoder_decode_range(d, 0, n, &o, &err), 0);
                    assert_memory_equal(o.values, v, (size_t)n * 4);
                    out_free(&o, env.r);
                    qv_decoder_close(d);
                    qv_encoded_release(env.r, &e);
                    successes++;
                    if (successes > 3) break; /* past the encode's last allocation */
                }
                assert_true(failures > 0);
                assert_true(successes > 0);
            }
    }
    qv_encode_force_entropy_layout(0);
    free(v);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_shapes_layouts),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
