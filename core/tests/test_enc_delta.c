/*
 * Delta and dictionary decode paths: the in-register prefix sums (every
 * value width, every bit width of the deltas, negative deltas, wrapping at
 * the type's limits), the fused unpack of bit-packed deltas, ranges that
 * start and end inside vectors into buffers of exactly their size, the
 * small-dictionary permutation and the checked gather, and corrupt chunks
 * failing with EIO. Every test runs again with QUIVER_SIMD=baseline (see
 * CMakeLists.txt), which compares the generic kernels too.
 */
#include "test_enc_util.h"

#include <errno.h>

static void put(void *vals, unsigned w, int64_t i, uint64_t x) {
    switch (w) {
    case 1: ((uint8_t *)vals)[i] = (uint8_t)x; break;
    case 2: ((uint16_t *)vals)[i] = (uint16_t)x; break;
    case 4: ((uint32_t *)vals)[i] = (uint32_t)x; break;
    default: ((uint64_t *)vals)[i] = x; break;
    }
}

/* Decodes [start, start + len) into a buffer of exactly len values (ASan
 * catches a store past it) and compares with the input. */
static void check_range(struct enc_env *env, const struct qv_encoded *e, const struct qv_values *v,
                        int64_t start, int64_t len) {
    unsigned w = kind_width(v->kind, 0);
    struct qv_error err = {0};
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(e->data, e->size, v->kind, 0, v->count, env->r, &d, &err), 0);
    struct qv_decode_out o = {0};
    o.values = malloc((size_t)len * w);
    int rc = qv_decoder_decode_range(d, start, len, &o, &err);
    if (rc) fail_msg("range [%lld,+%lld): %s", (long long)start, (long long)len, err.message);
    if (memcmp(o.values, (const uint8_t *)v->values + (size_t)start * w, (size_t)len * w))
        fail_msg("range [%lld,+%lld) of %s differs", (long long)start, (long long)len,
                 qv_value_kind_name(v->kind));
    free(o.values);
    qv_decoder_close(d);
}

static const enum qv_value_kind kinds[] = {QV_KIND_INT8,  QV_KIND_INT16, QV_KIND_INT32,
                                           QV_KIND_INT64, QV_KIND_UINT32, QV_KIND_UINT64};

/* Deltas drawn from the signed range of b bits (half of them negative), for
 * every b up to the type's width: the cascade bit-packs them (under a FOR
 * node when negative) at every width, so the fused path and the wide
 * unpack both run; 5000 values end in a partial vector. */
static void test_delta_every_width(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 5000;
    uint64_t s = 1;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        unsigned w = kind_width(kinds[k], 0);
        for (unsigned b = 0; b <= w * 8; b++) {
            struct col c = col_words(kinds[k], n);
            uint64_t x = rng_next(&s);
            for (int64_t i = 0; i < n; i++) {
                uint64_t r = b == 0 ? 0 : rng_next(&s) & (b == 64 ? ~0ull : (1ull << b) - 1);
                /* Sign-extend from b bits: deltas in [-2^(b-1), 2^(b-1)). */
                if (b && b < 64 && (r >> (b - 1)) & 1) r |= ~0ull << b;
                x += r;
                put(c.values, w, i, x);
            }
            struct qv_encode_options o = {0};
            o.force = QV_ENC_DELTA;
            struct qv_encoded e = roundtrip(&env, &c.v, &o, 12, b * 7 + k);
            assert_int_equal(root_encoding(&e), QV_ENC_DELTA);
            check_range(&env, &e, &c.v, 1, n - 2);
            check_range(&env, &e, &c.v, 1500, 1000);
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    }
    env_close(&env);
}

/* Increasing values with non-negative deltas (bit-packed without FOR) and
 * constant steps (FOR over a zero-width pack). */
static void test_delta_monotone(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 9000;
    uint64_t s = 2;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        unsigned w = kind_width(kinds[k], 0);
        for (int shape = 0; shape < 3; shape++) {
            struct col c = col_words(kinds[k], n);
            uint64_t x = shape == 2 ? 5 : rng_next(&s);
            for (int64_t i = 0; i < n; i++) {
                x += shape == 0 ? rng_next(&s) % 61 : shape == 1 ? 3 : (i % 1024 == 7 ? 1000 : 0);
                put(c.values, w, i, x);
            }
            struct qv_encode_options o = {0};
            o.force = QV_ENC_DELTA;
            struct qv_encoded e = roundtrip(&env, &c.v, &o, 30, (uint64_t)shape);
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    }
    env_close(&env);
}

/* Sums that wrap: values around INT64_MAX/INT64_MIN, jumps between the two
 * extremes (deltas of +-2^64 - 1 that wrap), and the same at 32 bits. */
static void test_delta_wrapping(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 4100;
    for (int shape = 0; shape < 4; shape++) {
        for (int k = 0; k < 2; k++) {
            enum qv_value_kind kind = k ? QV_KIND_INT32 : QV_KIND_INT64;
            unsigned w = kind_width(kind, 0);
            uint64_t mx = k ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX, mn = k ? (uint64_t)(int64_t)INT32_MIN : (uint64_t)INT64_MIN;
            struct col c = col_words(kind, n);
            for (int64_t i = 0; i < n; i++) {
                uint64_t x;
                switch (shape) {
                case 0: x = mx - 700 + (uint64_t)i; break;       /* crosses max -> min */
                case 1: x = mn + 700 - (uint64_t)i; break;       /* crosses min -> max */
                case 2: x = i % 2 ? mx : mn; break;               /* extreme jumps */
                default: x = i % 3 ? mx - (uint64_t)(i % 5) : mn + (uint64_t)(i % 7); break;
                }
                put(c.values, w, i, x);
            }
            struct qv_encode_options o = {0};
            o.force = QV_ENC_DELTA;
            struct qv_encoded e = roundtrip(&env, &c.v, &o, 20, (uint64_t)shape);
            check_range(&env, &e, &c.v, 690, 30);
            check_range(&env, &e, &c.v, 1023, 2050);
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    }
    env_close(&env);
}

/* Sequences (one constant delta): the fused path that writes base + j
 * steps. Every width, steps that count up, down and wrap around the type
 * (an int8 step of 3 over 5000 values wraps 58 times), lengths that end
 * inside a vector or exactly on one; the deltas must be the constant node,
 * and every range cut and take (the roundtrip's probes) must give the
 * values. */
static void test_delta_sequence(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t lens[] = {1, 2, 1024, 1025, 5000, 8192};
    static const uint64_t steps[] = {1, 3, (uint64_t)-1, (uint64_t)-7, 0x9e3779b97f4a7c15ull};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        unsigned w = kind_width(kinds[k], 0);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++) {
                const int64_t n = lens[li];
                struct col c = col_words(kinds[k], n);
                uint64_t x = 0x0123456789abcdefull * (k + 1);
                for (int64_t i = 0; i < n; i++, x += steps[si]) put(c.values, w, i, x);
                struct qv_encode_options o = {0};
                o.force = QV_ENC_DELTA;
                struct qv_encoded e = roundtrip(&env, &c.v, &o, 24, li * 11 + si);
                char tree[512];
                struct qv_error err = {0};
                assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
                if (n > 2 && !strstr(tree, "deltas=constant"))
                    fail_msg("%s n=%lld step %llx: deltas not constant: %s",
                             qv_value_kind_name(kinds[k]), (long long)n,
                             (unsigned long long)steps[si], tree);
                for (int64_t a = 0; a < n; a += 37) check_range(&env, &e, &c.v, a, n - a < 70 ? n - a : 70);
                check_range(&env, &e, &c.v, n - 1, 1);
                qv_encoded_release(env.r, &e);
                col_free(&c);
            }
        }
    }
    env_close(&env);
}

/* Every range cut at the edges that matter (vector starts and ends, the
 * 8- and 16-value blocks of the kernels, the partial tail), into buffers
 * of exactly the range's size. */
static void test_delta_cut_ranges(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 3100;
    static const int64_t starts[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 1023, 1024,
                                     1025, 2047, 2048, 2049, 3071, 3072, 3099};
    static const int64_t lens[] = {1, 2, 3, 7, 8, 9, 16, 17, 63, 64, 65, 1000, 1023, 1024, 1025, 2049};
    uint64_t s = 3;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        unsigned w = kind_width(kinds[k], 0);
        struct col c = col_words(kinds[k], n);
        uint64_t x = rng_next(&s);
        for (int64_t i = 0; i < n; i++) put(c.values, w, i, x += rng_next(&s) % 1000 - 300);
        struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_DELTA);
        for (size_t a = 0; a < sizeof starts / sizeof starts[0]; a++)
            for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++)
                if (starts[a] + lens[b] <= n) check_range(&env, &e, &c.v, starts[a], lens[b]);
        check_range(&env, &e, &c.v, 0, n);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* Dictionaries of every size around the register-sized tables (4 entries
 * of 64 bits, 8 of 32 bits) and a large one, with ranges cut inside
 * vectors. */
static void test_dict_sizes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 5000;
    static const enum qv_value_kind dk[] = {QV_KIND_INT64, QV_KIND_INT32, QV_KIND_INT16,
                                            QV_KIND_UINT8, QV_KIND_UINT64};
    static const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 17, 300};
    uint64_t s = 4;
    for (size_t k = 0; k < sizeof dk / sizeof dk[0]; k++) {
        unsigned w = kind_width(dk[k], 0);
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            if (w == 1 && sizes[z] > 200) continue;
            uint64_t entries[300];
            for (int i = 0; i < sizes[z]; i++) entries[i] = w == 1 ? (uint64_t)i * 3 : rng_next(&s);
            if (sizes[z] > 1) entries[1] = ~0ull; /* the type's all-ones value */
            struct col c = col_words(dk[k], n);
            for (int64_t i = 0; i < n; i++) put(c.values, w, i, entries[rng_next(&s) % (uint64_t)sizes[z]]);
            struct qv_encode_options o = {0};
            o.force = QV_ENC_DICT;
            struct qv_encoded e = roundtrip(&env, &c.v, &o, 20, z);
            assert_int_equal(root_encoding(&e), QV_ENC_DICT);
            check_range(&env, &e, &c.v, 3, 1021);
            check_range(&env, &e, &c.v, 1021, 7);
            check_range(&env, &e, &c.v, 0, n);
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    }
    env_close(&env);
}

/* Flipped bytes of delta and dictionary chunks: every decode either
 * succeeds or fails with EIO (never a signal or a sanitizer report). */
static void flip_trials(struct enc_env *env, const struct qv_encoded *e, const struct qv_values *v,
                        uint64_t seed) {
    const int64_t n = v->count;
    unsigned w = kind_width(v->kind, 0);
    uint8_t *bad = malloc(e->size);
    void *out = malloc((size_t)n * w);
    uint64_t s = seed;
    for (int t = 0; t < 400; t++) {
        memcpy(bad, e->data, e->size);
        for (int f = 0; f < 1 + t % 3; f++)
            bad[8 + rng_next(&s) % (e->size - 8)] ^= (uint8_t)(1u << (rng_next(&s) % 8));
        struct qv_error err = {0};
        struct qv_decoder *d;
        int rc = qv_decoder_open(bad, e->size, v->kind, 0, n, env->r, &d, &err);
        if (rc) {
            assert_int_equal(rc, EIO);
            continue;
        }
        struct qv_decode_out o = {0};
        o.values = out;
        int64_t start = (int64_t)(rng_next(&s) % (uint64_t)(n - 100));
        int rcs[2];
        rcs[0] = qv_decoder_decode_range(d, start, 77, &o, &err);
        rcs[1] = qv_decoder_decode_range(d, 0, n, &o, &err);
        for (int i = 0; i < 2; i++)
            if (rcs[i] != 0 && rcs[i] != EIO) fail_msg("trial %d: decode %d gave %d", t, i, rcs[i]);
        qv_decoder_close(d);
    }
    free(out);
    free(bad);
}

static void test_corrupt(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 6000;
    uint64_t s = 5;
    struct col c = col_words(QV_KIND_INT64, n);
    uint64_t x = 0;
    for (int64_t i = 0; i < n; i++) ((uint64_t *)c.values)[i] = x += rng_next(&s) % 5000 - 100;
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_DELTA);
    flip_trials(&env, &e, &c.v, 6);
    qv_encoded_release(env.r, &e);
    for (int64_t i = 0; i < n; i++) ((uint64_t *)c.values)[i] = rng_next(&s) % 3;
    e = encode_forced(&env, &c.v, QV_ENC_DICT);
    flip_trials(&env, &e, &c.v, 7);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_every_width), cmocka_unit_test(test_delta_monotone),
        cmocka_unit_test(test_delta_wrapping),
        cmocka_unit_test(test_delta_sequence),    cmocka_unit_test(test_delta_cut_ranges),
        cmocka_unit_test(test_dict_sizes),        cmocka_unit_test(test_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
