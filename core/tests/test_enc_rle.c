/*
 * Run-end decoding paths: the expansion with wide unconditional stores
 * (runs shorter and longer than a store block, at every value width, the
 * last runs touching the end of an exactly sized output buffer, so ASan
 * sees any store past it), ranges that start and end inside runs through
 * the path that decodes all run ends and through the lazy one of small
 * ranges, takes (walk over the ends, lazy search, values cached or decoded
 * per group), and corrupt chunks that must fail cleanly.
 */
#include "test_enc_util.h"

static const enum qv_value_kind word_kinds[] = {QV_KIND_UINT8,  QV_KIND_INT16,   QV_KIND_INT32,
                                                QV_KIND_UINT64, QV_KIND_FLOAT32, QV_KIND_FLOAT64};
#define NKINDS (sizeof word_kinds / sizeof word_kinds[0])

/* Values with runs whose lengths come from `len_of`; run values differ
 * from their neighbours at every width. */
typedef int64_t (*run_len_fn)(int64_t run, uint64_t *s);

static struct col make_runs(enum qv_value_kind k, int64_t n, run_len_fn len_of, uint64_t seed) {
    struct col c = col_words(k, n);
    const unsigned w = kind_width(k, 0);
    uint64_t s = seed;
    for (int64_t i = 0, r = 0; i < n; r++) {
        int64_t len = len_of(r, &s);
        /* Odd and even runs differ in the low byte: neighbours never merge. */
        uint64_t v = (rng_next(&s) & ~UINT64_C(0xFF)) | (uint64_t)((r & 1) ? 0x5A : 0xA5);
        if (k == QV_KIND_FLOAT32) {
            float f = (float)(r % 1000) + ((r & 1) ? 0.5f : 0.25f);
            memcpy(&v, &f, 4);
        } else if (k == QV_KIND_FLOAT64) {
            double f = (double)r * 1.5 + ((r & 1) ? 0.5 : 0.25);
            memcpy(&v, &f, 8);
        }
        for (int64_t j = 0; j < len && i < n; j++, i++)
            memcpy((uint8_t *)c.values + (size_t)i * w, &v, w);
    }
    return c;
}

static int64_t len_one(int64_t r, uint64_t *s) {
    (void)r;
    (void)s;
    return 1;
}
static int64_t len_orders(int64_t r, uint64_t *s) { /* 1..7, like l_orderkey */
    (void)r;
    return 1 + (int64_t)(rng_next(s) % 7);
}
/* Around the block sizes (4, 8, 16, 32, 64 values) and long runs. */
static int64_t len_edges(int64_t r, uint64_t *s) {
    static const int64_t L[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000};
    (void)r;
    return L[rng_next(s) % (sizeof L / sizeof L[0])];
}
static int64_t len_long(int64_t r, uint64_t *s) {
    (void)s;
    return r % 3 == 1 ? 2 : 40000 + r;
}

/* Decodes [start, start + len) into a buffer of exactly len values (no
 * slack: ASan reports any store past it) and compares. */
static void check_range(struct qv_decoder *d, const struct col *c, int64_t start, int64_t len) {
    const unsigned w = kind_width(c->v.kind, 0);
    struct qv_decode_out o = {0};
    o.values = malloc((size_t)(len ? len : 1) * w);
    struct qv_error err = {0};
    if (qv_decoder_decode_range(d, start, len, &o, &err))
        fail_msg("range [%lld, +%lld): %s", (long long)start, (long long)len, err.message);
    if (len && memcmp(o.values, (const uint8_t *)c->values + (size_t)start * w, (size_t)len * w))
        fail_msg("%s range [%lld, +%lld) differs", qv_value_kind_name(c->v.kind), (long long)start,
                 (long long)len);
    free(o.values);
}

static void check_take(struct qv_decoder *d, const struct col *c, const int64_t *rows, int64_t k) {
    const unsigned w = kind_width(c->v.kind, 0);
    struct qv_decode_out o = {0};
    o.values = malloc((size_t)(k ? k : 1) * w);
    struct qv_error err = {0};
    if (qv_decoder_take(d, rows, k, &o, &err)) fail_msg("take of %lld: %s", (long long)k, err.message);
    for (int64_t i = 0; i < k; i++)
        if (memcmp((uint8_t *)o.values + (size_t)i * w,
                   (const uint8_t *)c->values + (size_t)rows[i] * w, w))
            fail_msg("%s take: row %lld differs", qv_value_kind_name(c->v.kind), (long long)rows[i]);
    free(o.values);
}

/* Full decode, every range of a few lengths at every start near the ends
 * of the chunk and at random starts, through a fresh decoder (lazy path for
 * small ranges) and a warm one (all ends decoded). */
static void check_column(struct enc_env *env, const struct col *c, uint64_t seed) {
    struct qv_encoded e = encode_forced(env, &c->v, QV_ENC_RLE);
    const int64_t n = c->v.count;
    struct qv_error err = {0};
    struct qv_decoder *warm, *fresh;
    assert_int_equal(qv_decoder_open(e.data, e.size, c->v.kind, 0, n, env->r, &warm, &err), 0);
    check_range(warm, c, 0, n);
    static const int64_t lens[] = {1, 2, 3, 4, 5, 7, 8, 9, 31, 33, 64, 65, 1000, 5000};
    uint64_t s = seed;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t len = lens[li];
        if (len > n) continue;
        for (int64_t t = 0; t < 40; t++) {
            /* Both ends of the chunk, then random starts. */
            int64_t start = t < 10 ? t : t < 20 ? n - len - (t - 10) : (int64_t)(rng_next(&s) % (uint64_t)(n - len + 1));
            if (start < 0 || start > n - len) continue;
            check_range(warm, c, start, len);
            assert_int_equal(qv_decoder_open(e.data, e.size, c->v.kind, 0, n, env->r, &fresh, &err), 0);
            check_range(fresh, c, start, len);
            qv_decoder_close(fresh);
        }
    }
    /* Takes: small ones on fresh decoders (lazy search), large ones. */
    int64_t rows[3000];
    for (int t = 0; t < 12; t++) {
        int64_t k = t < 6 ? 1 + (int64_t)(rng_next(&s) % 20) : 1 + (int64_t)(rng_next(&s) % 3000);
        for (int64_t i = 0; i < k; i++) rows[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        if (t % 3 == 2)
            for (int64_t i = 0; i < k; i++) /* duplicates */
                rows[i] = i < 4 || n < 5 ? 0 : n - 1 - (i % 5);
        sort_rows(rows, k);
        assert_int_equal(qv_decoder_open(e.data, e.size, c->v.kind, 0, n, env->r, &fresh, &err), 0);
        check_take(fresh, c, rows, k);
        check_take(fresh, c, rows, k);
        qv_decoder_close(fresh);
        check_take(warm, c, rows, k);
    }
    qv_decoder_close(warm);
    qv_encoded_release(env->r, &e);
}

static void run_all(run_len_fn len_of, const int64_t *ns, size_t nn, uint64_t seed) {
    struct enc_env env;
    env_open(&env);
    for (size_t ki = 0; ki < NKINDS; ki++)
        for (size_t i = 0; i < nn; i++) {
            struct col c = make_runs(word_kinds[ki], ns[i], len_of, seed + ki * 31 + i);
            check_column(&env, &c, seed + i);
            col_free(&c);
        }
    env_close(&env);
}

static void test_runs_of_one(void **state) {
    (void)state;
    static const int64_t ns[] = {1, 2, 7, 33, 1025, 70000};
    run_all(len_one, ns, sizeof ns / sizeof ns[0], 1);
}

static void test_order_like_runs(void **state) {
    (void)state;
    static const int64_t ns[] = {3, 64, 4097, 300000};
    run_all(len_orders, ns, sizeof ns / sizeof ns[0], 2);
}

static void test_runs_around_blocks(void **state) {
    (void)state;
    static const int64_t ns[] = {5, 65, 3000, 200000};
    run_all(len_edges, ns, sizeof ns / sizeof ns[0], 3);
}

static void test_long_runs(void **state) {
    (void)state;
    static const int64_t ns[] = {40000, 250000};
    run_all(len_long, ns, sizeof ns / sizeof ns[0], 4);
}

/* Every range of a short column: each start and end, in and between runs,
 * at each width. */
static void test_every_range(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    for (size_t ki = 0; ki < NKINDS; ki++) {
        struct col c = make_runs(word_kinds[ki], 150, len_edges, 9 + ki);
        struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_RLE);
        struct qv_error err = {0};
        struct qv_decoder *d;
        assert_int_equal(qv_decoder_open(e.data, e.size, c.v.kind, 0, 150, env.r, &d, &err), 0);
        for (int64_t a = 0; a <= 150; a++)
            for (int64_t b = a; b <= 150; b++) check_range(d, &c, a, b - a);
        qv_decoder_close(d);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* Booleans: runs alternate; ranges in and across runs. */
static void test_bool_runs(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 100000;
    uint8_t *bits = calloc(1, (size_t)n / 8 + 8);
    uint64_t s = 5;
    for (int64_t i = 0, r = 0; i < n; r++) {
        int64_t len = len_edges(r, &s);
        for (int64_t j = 0; j < len && i < n; j++, i++) qv_bit_put(bits, i, (int)(r & 1));
    }
    struct qv_values v = {QV_KIND_BOOL, 0, n, 0, bits, NULL};
    struct qv_encode_options o = {0};
    o.force = QV_ENC_RLE;
    struct qv_encoded e = roundtrip(&env, &v, &o, 60, 11);
    assert_int_equal(root_encoding(&e), QV_ENC_RLE);
    qv_encoded_release(env.r, &e);
    free(bits);
    env_close(&env);
}

/* Flipped bytes of run-end chunks with many runs (several vectors of
 * ends): every decode path either succeeds or fails with EIO. */
static void test_corrupt_runs(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = make_runs(QV_KIND_INT64, 20000, len_orders, 21);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_RLE);
    uint8_t *bad = malloc(e.size);
    uint64_t s = 99;
    int failed = 0;
    for (int t = 0; t < 600; t++) {
        memcpy(bad, e.data, e.size);
        for (int f = 0; f < 1 + t % 3; f++) bad[8 + rng_next(&s) % (e.size - 8)] ^= (uint8_t)(1u << (rng_next(&s) % 8));
        struct qv_error err = {0};
        struct qv_decoder *d;
        int rc = qv_decoder_open(bad, e.size, QV_KIND_INT64, 0, 20000, env.r, &d, &err);
        if (rc) {
            assert_int_equal(rc, EIO);
            failed++;
            continue;
        }
        int64_t *out = malloc(20000 * 8);
        struct qv_decode_out o = {0};
        o.values = out;
        int64_t start = (int64_t)(rng_next(&s) % 19000), rows[50];
        for (int i = 0; i < 50; i++) rows[i] = (int64_t)(rng_next(&s) % 20000);
        sort_rows(rows, 50);
        int rcs[4];
        rcs[0] = qv_decoder_decode_range(d, start, 7, &o, &err);     /* lazy */
        rcs[1] = qv_decoder_take(d, rows, 50, &o, &err);            /* lazy take */
        rcs[2] = qv_decoder_decode_range(d, 0, 20000, &o, &err);    /* all ends */
        rcs[3] = qv_decoder_take(d, rows, 50, &o, &err);
        for (int i = 0; i < 4; i++) {
            if (rcs[i] != 0 && rcs[i] != EIO) fail_msg("trial %d: decode %d gave %d", t, i, rcs[i]);
            failed += rcs[i] != 0;
        }
        free(out);
        qv_decoder_close(d);
    }
    /* The flips hit the ends and values often enough that some fail. */
    assert_true(failed > 0);
    free(bad);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_of_one),       cmocka_unit_test(test_order_like_runs),
        cmocka_unit_test(test_runs_around_blocks), cmocka_unit_test(test_long_runs),
        cmocka_unit_test(test_every_range),       cmocka_unit_test(test_bool_runs),
        cmocka_unit_test(test_corrupt_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
