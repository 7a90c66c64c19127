/*
 * Patched (bit-packing with exceptions): round trips of every integer kind
 * forced and chosen by the cascade (outliers above, below, none, at vector
 * and chunk edges), the cascade choosing it only where it is smaller than
 * frame of reference, kinds it cannot hold, predicates over a patched root,
 * and corrupt chunks that must fail cleanly.
 */
#include "encoding/enc_internal.h"
#include "test_enc_util.h"

static const enum qv_value_kind int_kinds[] = {QV_KIND_INT8,  QV_KIND_UINT8,  QV_KIND_INT16,
                                               QV_KIND_UINT16, QV_KIND_INT32, QV_KIND_UINT32,
                                               QV_KIND_INT64, QV_KIND_UINT64};
#define NKINDS (sizeof int_kinds / sizeof int_kinds[0])

static int is_signed(enum qv_value_kind k) {
    return k == QV_KIND_INT8 || k == QV_KIND_INT16 || k == QV_KIND_INT32 || k == QV_KIND_INT64;
}

/* Shapes of outliers. */
enum shape {
    HIGH,  /* small values, 1% far above */
    LOW,   /* values around a base, 0.5% far below (negative for signed kinds) */
    BOTH,  /* both */
    NONE,  /* no outlier at all */
    EDGES, /* outliers at the first and last value and at vector edges only */
};

static struct col make_col_spread(enum qv_value_kind k, int64_t n, enum shape sh, uint64_t seed,
                                  uint64_t spread);
static struct col make_col(enum qv_value_kind k, int64_t n, enum shape sh, uint64_t seed) {
    return make_col_spread(k, n, sh, seed, 13);
}

/* Values base + [0, spread), with outliers as `sh` says. */
static struct col make_col_spread(enum qv_value_kind k, int64_t n, enum shape sh, uint64_t seed,
                                  uint64_t spread) {
    struct col c = col_words(k, n);
    const unsigned w = kind_width(k, 0);
    const uint64_t mask = w == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * w)) - 1;
    /* base and outlier magnitudes scaled to the width */
    const uint64_t top = is_signed(k) ? mask >> 1 : mask;
    const uint64_t base = top / 4;
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = base + rng_next(&s) % spread;
        uint64_t r = rng_next(&s) % 1000;
        switch (sh) {
        case HIGH:
            if (r < 10) x = top - rng_next(&s) % 7;
            break;
        case LOW:
            if (r < 5) x = is_signed(k) ? (uint64_t)-(int64_t)(1 + rng_next(&s) % 100) : rng_next(&s) % 3;
            break;
        case BOTH:
            if (r < 5) x = top - rng_next(&s) % 7;
            else if (r < 10) x = is_signed(k) ? (uint64_t)-(int64_t)(1 + rng_next(&s) % 100) : 0;
            break;
        case NONE: break;
        case EDGES:
            if (i == 0 || i == n - 1 || i % 1024 == 1023 || i % 1024 == 0) x = top;
            break;
        }
        x &= mask;
        memcpy((uint8_t *)c.values + (size_t)i * w, &x, w);
    }
    return c;
}

/* qv__gallop (the take's walk of the patch list) against qv__lower_bound:
 * every key around every element of sorted lists of 0-70 values, with
 * runs of equal values and gaps. */
static void test_gallop(void **state) {
    (void)state;
    uint64_t a[70], s = 5;
    for (int64_t n = 0; n <= 70; n++) {
        uint64_t v = 3;
        for (int64_t i = 0; i < n; i++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            v += (s >> 61) & 3 ? (s >> 40) % 9 : 0; /* repeats, small and large steps */
            a[i] = v;
        }
        for (uint64_t key = 0; key <= v + 2; key++)
            assert_int_equal(qv__gallop(a, n, key), qv__lower_bound(a, n, key));
    }
}

static void test_forced_roundtrip(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {0, 1, 2, 15, 16, 17, 1023, 1024, 1025, 5000, 70001};
    uint64_t seed = 1;
    for (size_t ki = 0; ki < NKINDS; ki++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int sh = HIGH; sh <= EDGES; sh++) {
                struct col c = make_col(int_kinds[ki], ns[ni], (enum shape)sh, seed++);
                struct qv_encode_options o = {0};
                o.force = QV_ENC_PATCHED;
                struct qv_encoded e = roundtrip(&env, &c.v, &o, 12, seed);
                assert_int_equal(root_encoding(&e), QV_ENC_PATCHED);
                qv_encoded_release(env.r, &e);
                col_free(&c);
            }
    env_close(&env);
}

/* With outliers the cascade picks patched (somewhere in the tree) and the
 * chunk is smaller than with neither patched nor the entropy stage;
 * without outliers it never picks patched. */
static void test_chosen(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    /* Without patched and without the entropy stage (zstd over integer
     * codes), which can be smaller still but costs more to decode. */
    const uint32_t no_patched = ~(QV_ENC_BIT(QV_ENC_PATCHED) | QV_ENC_BIT(QV_ENC_ZSTD));
    static const enum qv_value_kind ks[] = {QV_KIND_INT32, QV_KIND_UINT32, QV_KIND_INT64};
    for (size_t ki = 0; ki < 3; ki++)
        for (int sh = HIGH; sh <= BOTH; sh++) {
            /* Common values spread over 17 bits, nearly all distinct (no
             * dictionary competes); outliers need 31 or 63. */
            struct col c = make_col_spread(ks[ki], 65536, (enum shape)sh, 77 + (uint64_t)sh,
                                           UINT64_C(1) << 17);
            char tree[512];
            size_t with = encoded_size(&env, &c.v, 0, 6, 5, tree, sizeof tree);
            size_t without = encoded_size(&env, &c.v, no_patched, 6, 5, NULL, 0);
            if (!strstr(tree, "patched"))
                fail_msg("%s shape %d: no patched node in %s", qv_value_kind_name(ks[ki]), sh, tree);
            if (with >= without)
                fail_msg("%s shape %d: %zu bytes with patched, %zu without (%s)",
                         qv_value_kind_name(ks[ki]), sh, with, without, tree);
            col_free(&c);
        }
    struct col c = make_col(QV_KIND_INT32, 65536, NONE, 3);
    char tree[512];
    encoded_size(&env, &c.v, 0, 6, 5, tree, sizeof tree);
    if (strstr(tree, "patched")) fail_msg("no outliers, yet %s", tree);
    col_free(&c);
    env_close(&env);
}

/* A patched node just above the depth bound (here the root, with a bound of
 * 1): its positions cannot choose delta in the cascade, so delta is built
 * beside the cascade's node and kept when smaller. 1% outliers over 65,536
 * values: gaps of about 100 pack in 8 bits or so, the positions whole in
 * 16; the chunk round-trips (roundtrip's probes and ranges). */
static void test_positions_below_bound(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = make_col_spread(QV_KIND_INT64, 65536, HIGH, 91, UINT64_C(1) << 17);
    struct qv_encode_options o = {0};
    o.allowed = ~QV_ENC_BIT(QV_ENC_ZSTD);
    o.max_depth = 1;
    struct qv_encoded e = roundtrip(&env, &c.v, &o, 12, 7);
    char tree[1024];
    struct qv_error err = {0};
    assert_int_not_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), EIO);
    print_message("  depth 1: %zu bytes, %s\n", e.size, tree);
    assert_non_null(strstr(tree, "patched("));
    assert_non_null(strstr(tree, "positions=delta("));
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Only integers: floats, bool and binary refuse a forced patched. */
static void test_kinds_refused(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const enum qv_value_kind ks[] = {QV_KIND_FLOAT32, QV_KIND_FLOAT64};
    for (size_t ki = 0; ki < 2; ki++) {
        struct col c = col_words(ks[ki], 100);
        struct qv_encode_options o = {0};
        o.force = QV_ENC_PATCHED;
        struct qv_encoded e;
        struct qv_error err = {0};
        assert_int_equal(qv_encode(&c.v, &o, env.r, &e, &err), EINVAL);
        assert_non_null(strstr(err.message, "patched"));
        col_free(&c);
    }
    uint8_t bits[16] = {0};
    struct qv_values b = {.kind = QV_KIND_BOOL, .count = 100, .values = bits};
    struct qv_encode_options o = {0};
    o.force = QV_ENC_PATCHED;
    struct qv_encoded e;
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&b, &o, env.r, &e, &err), EINVAL);
    env_close(&env);
}

/* Predicates over a patched root decode and compare: every answer matches
 * the values, including rows that are patches. */
static void test_filter(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 9000;
    struct col c = make_col(QV_KIND_INT32, n, BOTH, 11);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_PATCHED);
    struct qv_decoder *d;
    struct qv_error err = {0};
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT32, 0, n, env.r, &d, &err), 0);
    const int32_t *v = c.values;
    const int32_t lits[] = {v[0], v[1], v[17], INT32_MAX / 2 - 3, -5, 0};
    uint64_t out[(9000 + 63) / 64 + 1];
    for (size_t li = 0; li < sizeof lits / sizeof lits[0]; li++)
        for (int op = QV_ENC_OP_EQ; op <= QV_ENC_OP_GE; op++) {
            struct qv_enc_pred p = {0};
            p.op = op;
            p.lo = lits[li];
            int64_t start = (int64_t)(li * 700), len = n - start - (int64_t)li;
            int rc = qv_decoder_filter(d, start, len, &p, NULL, out, &err);
            if (rc == ENOTSUP) continue;
            assert_int_equal(rc, 0);
            for (int64_t i = 0; i < len; i++) {
                int32_t x = v[start + i];
                int want = op == QV_ENC_OP_EQ ? x == lits[li] : op == QV_ENC_OP_NE ? x != lits[li]
                         : op == QV_ENC_OP_LT ? x < lits[li] : op == QV_ENC_OP_LE ? x <= lits[li]
                         : op == QV_ENC_OP_GT ? x > lits[li] : x >= lits[li];
                int got = (int)((out[i / 64] >> (i % 64)) & 1);
                if (want != got)
                    fail_msg("op %d lit %d row %lld: %d != %d", op, lits[li], (long long)(start + i),
                             got, want);
            }
        }
    qv_decoder_close(d);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Flipped bytes of patched chunks: open, ranges and takes either succeed
 * or fail with EIO, never anything else. */
static void test_corrupt(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 20000;
    struct col c = make_col(QV_KIND_INT64, n, BOTH, 21);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_PATCHED);
    corrupt_trials(&env, &e, QV_KIND_INT64, n, 800, 99, 77, 50);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gallop),
        cmocka_unit_test(test_forced_roundtrip), cmocka_unit_test(test_chosen),
        cmocka_unit_test(test_kinds_refused),    cmocka_unit_test(test_filter),
        cmocka_unit_test(test_corrupt),          cmocka_unit_test(test_positions_below_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
