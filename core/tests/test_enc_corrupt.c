/*
 * Hostile input and failure paths: truncated and bit-flipped encodings of
 * every encoding decode to a clean error (or, when a flip still decodes, to
 * bounded output), never a crash, an overrun (ASan) or a leak; and an
 * allocation failure injected at every allocation of an encode and of a
 * decode gives ENOMEM with the reservation back where it started.
 */
#include "test_enc_util.h"
#include "memory/memory_testing.h"

/* A pool with a limit, so a corrupt size that slips through cannot take
 * the machine's memory. */
static void env_open_limited(struct enc_env *env) {
    struct qv_error err;
    struct qv_pool_options po = {0};
    po.name = "enc-corrupt";
    po.limit = 256u << 20;
    assert_int_equal(qv_pool_create(&po, &env->pool, &err), 0);
    assert_int_equal(qv_reservation_create(env->pool, NULL, &env->r, &err), 0);
}

struct sample {
    struct col c;
    int force;
};

static size_t g_text(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    static const char *w[] = {"alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "};
    size_t want = 5 + rng_next(s) % 30, l = 0;
    while (l < want) {
        const char *x = w[rng_next(s) % 6];
        memcpy(b + l, x, strlen(x));
        l += strlen(x);
    }
    return want;
}
static size_t g_low(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    static const char *w[] = {"AIR", "RAIL", "SHIP", ""};
    const char *x = w[rng_next(s) % 4];
    memcpy(b, x, strlen(x));
    return strlen(x);
}

/* Samples: every encoding on a kind it supports (make_samples checks the
 * count after the fact: the caller's array must have room for them all). */
#define MAX_SAMPLES 48
static int make_samples(struct sample *out, int64_t n) {
    int k = 0;
    uint64_t s = 77;
    static const int int_encs[] = {QV_ENC_PLAIN, QV_ENC_BITPACK, QV_ENC_FOR,  QV_ENC_DELTA,
                                   QV_ENC_ZIGZAG, QV_ENC_DICT,   QV_ENC_RLE,  QV_ENC_SPARSE,
                                   QV_ENC_ZSTD,  QV_ENC_LZ4,     QV_ENC_AUTO, QV_ENC_CONSTANT,
                                   QV_ENC_BUCKET};
    for (size_t i = 0; i < sizeof int_encs / sizeof int_encs[0]; i++) {
        struct col c = col_words(i % 2 ? QV_KIND_INT32 : QV_KIND_INT64, n);
        for (int64_t j = 0; j < n; j++) {
            int64_t x = int_encs[i] == QV_ENC_CONSTANT ? 9 : (int64_t)(rng_next(&s) % 40) - 5 + (j / 100) * 3;
            if (c.v.kind == QV_KIND_INT32) ((int32_t *)c.values)[j] = (int32_t)x;
            else ((int64_t *)c.values)[j] = x;
        }
        out[k++] = (struct sample){c, int_encs[i]};
    }
    /* Values of 1 and 4 bits forced to seqpack (format 8.0). */
    for (int i = 0; i < 2; i++) {
        struct col c = col_words(i ? QV_KIND_UINT16 : QV_KIND_INT64, n);
        for (int64_t j = 0; j < n; j++) {
            const uint64_t x = (uint64_t)(j / 7 + (int64_t)(rng_next(&s) % 3)) % (i ? 16 : 2);
            if (i) ((uint16_t *)c.values)[j] = (uint16_t)x;
            else ((int64_t *)c.values)[j] = (int64_t)x;
        }
        out[k++] = (struct sample){c, QV_ENC_SEQPACK};
    }
    /* 11 and 200 values forced to radix (format 9.0), the first from 1000
     * (under a for node). */
    for (int i = 0; i < 2; i++) {
        struct col c = col_words(i ? QV_KIND_UINT16 : QV_KIND_INT64, n);
        for (int64_t j = 0; j < n; j++) {
            const uint64_t x = rng_next(&s) % (i ? 200 : 11);
            if (i) ((uint16_t *)c.values)[j] = (uint16_t)x;
            else ((int64_t *)c.values)[j] = (int64_t)x + 1000;
        }
        out[k++] = (struct sample){c, QV_ENC_RADIX};
    }
    static const int f_encs[] = {QV_ENC_ALP, QV_ENC_ALP_RD, QV_ENC_DICT, QV_ENC_AUTO};
    for (size_t i = 0; i < 4; i++) {
        struct col c = col_words(i % 2 ? QV_KIND_FLOAT32 : QV_KIND_FLOAT64, n);
        for (int64_t j = 0; j < n; j++) {
            double x = j % 50 == 0 ? (double)rng_next(&s) / 3 : (double)(rng_next(&s) % 1000) / 100.0;
            if (c.v.kind == QV_KIND_FLOAT32) ((float *)c.values)[j] = (float)x;
            else ((double *)c.values)[j] = x;
        }
        out[k++] = (struct sample){c, f_encs[i]};
    }
    static const int b_encs[] = {QV_ENC_PLAIN, QV_ENC_SPARSE, QV_ENC_RLE, QV_ENC_LZ4};
    for (size_t i = 0; i < 4; i++) {
        struct col c;
        memset(&c, 0, sizeof c);
        c.values = calloc(1, (size_t)n / 8 + 8);
        for (int64_t j = 0; j < n; j++) qv_bit_put(c.values, j, (j / 37) % 5 != 0 || rng_next(&s) % 9 == 0);
        c.v.kind = QV_KIND_BOOL;
        c.v.count = n;
        c.v.values = c.values;
        out[k++] = (struct sample){c, b_encs[i]};
    }
    static const int s_encs[] = {QV_ENC_PLAIN, QV_ENC_DICT, QV_ENC_FSST, QV_ENC_ZSTD, QV_ENC_AUTO};
    for (size_t i = 0; i < 5; i++)
        out[k++] = (struct sample){col_strings(i % 2 ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY, n,
                                               i == 1 ? g_low : g_text, 5 + i),
                                   s_encs[i]};
    static const int x_encs[] = {QV_ENC_PLAIN, QV_ENC_DICT};
    for (size_t i = 0; i < 2; i++) {
        struct col c;
        memset(&c, 0, sizeof c);
        c.values = calloc(1, (size_t)n * 16);
        for (int64_t j = 0; j < n * 16; j++) ((uint8_t *)c.values)[j] = (uint8_t)((j / 16) % 7 + j % 16);
        c.v.kind = QV_KIND_FIXED_BINARY;
        c.v.fixed_width = 16;
        c.v.count = n;
        c.v.values = c.values;
        out[k++] = (struct sample){c, x_encs[i]};
    }
    assert_true(k <= MAX_SAMPLES);
    return k;
}

/* Opens and decodes everything it can; returns the first error. */
static int try_decode(struct enc_env *env, const uint8_t *bytes, size_t size, const struct qv_values *v) {
    struct qv_error err = {0};
    struct qv_decoder *d;
    int rc = qv_decoder_open(bytes, size, v->kind, v->fixed_width, v->count, env->r, &d, &err);
    if (rc) {
        if (rc == EIO && !strstr(err.message, "corrupt")) fail_msg("EIO without context: %s", err.message);
        return rc;
    }
    struct qv_decode_out o;
    out_alloc(&o, v, v->count);
    rc = qv_decoder_decode_range(d, 0, v->count, &o, &err);
    /* Output stays within what the caller gave (ASan checks the writes);
     * binary data within its capacity. */
    if (!rc && (o.data_size > o.data_capacity)) fail_msg("data_size beyond capacity");
    out_free(&o, env->r);
    if (!rc && v->count > 10) {
        out_alloc(&o, v, 5);
        rc = qv_decoder_decode_range(d, v->count / 2, 5, &o, &err);
        out_free(&o, env->r);
        int64_t rows[4] = {0, 1, v->count / 3, v->count - 1};
        out_alloc(&o, v, 4);
        if (!rc) rc = qv_decoder_take(d, rows, 4, &o, &err);
        out_free(&o, env->r);
    }
    qv_decoder_close(d);
    if (rc && rc != EIO && rc != ENOMEM && rc != EOVERFLOW) fail_msg("unexpected %d: %s", rc, err.message);
    return rc;
}

static void test_truncate_and_flip(void **state) {
    (void)state;
    struct enc_env env;
    env_open_limited(&env);
    struct sample smp[MAX_SAMPLES];
    int ns = make_samples(smp, 3000);
    uint64_t s = 1234;
    for (int i = 0; i < ns; i++) {
        struct qv_encode_options o = {0};
        o.force = smp[i].force;
        struct qv_encoded e = roundtrip(&env, &smp[i].c.v, &o, 2, 1);
        uint64_t base = qv_reservation_used(env.r);
        uint8_t *buf = malloc(e.size + 8);
        /* Truncations (into 8-aligned copies, like a reader's buffers). */
        size_t step = e.size > 3000 ? e.size / 1500 : 1;
        for (size_t len = 0; len < e.size; len += step) {
            memcpy(buf, e.data, len);
            assert_int_not_equal(try_decode(&env, buf, len, &smp[i].c.v), 0);
            assert_int_equal(qv_reservation_used(env.r), base);
        }
        /* Single bit flips everywhere in small encodings, sampled in large
         * ones, plus a few multi-byte smashes. */
        size_t flips = e.size < 4000 ? e.size * 2 : 6000;
        int failed = 0;
        for (size_t f = 0; f < flips; f++) {
            memcpy(buf, e.data, e.size);
            size_t at = f < e.size * 2 && e.size < 4000 ? f / 2 : (size_t)(rng_next(&s) % e.size);
            buf[at] ^= (uint8_t)(1u << (rng_next(&s) % 8));
            if (f % 97 == 0)
                for (int k = 0; k < 4; k++) buf[rng_next(&s) % e.size] = (uint8_t)rng_next(&s);
            failed += try_decode(&env, buf, e.size, &smp[i].c.v) != 0;
            assert_int_equal(qv_reservation_used(env.r), base);
        }
        print_message("  %-12s %-9s %6zu bytes: %zu flips, %d rejected\n",
                      qv_value_kind_name(smp[i].c.v.kind), qv_encoding_name(smp[i].force), e.size,
                      flips, failed);
        free(buf);
        qv_encoded_release(env.r, &e);
    }
    for (int i = 0; i < ns; i++) col_free(&smp[i].c);
    env_close(&env);
}

static void test_garbage(void **state) {
    (void)state;
    struct enc_env env;
    env_open_limited(&env);
    uint64_t s = 99;
    uint8_t buf[512] __attribute__((aligned(8)));
    static const enum qv_value_kind kinds[] = {QV_KIND_INT64, QV_KIND_FLOAT64, QV_KIND_BOOL,
                                               QV_KIND_BINARY, QV_KIND_FIXED_BINARY, QV_KIND_UINT8};
    for (int it = 0; it < 20000; it++) {
        size_t len = (size_t)(rng_next(&s) % 64) * 8;
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rng_next(&s);
        if (len >= 2) {
            buf[0] = (uint8_t)(1 + rng_next(&s) % 14); /* a valid encoding id */
            buf[1] = (uint8_t)(1 + rng_next(&s) % 9);
        }
        struct qv_values v = {kinds[it % 6], 16, (int64_t)(rng_next(&s) % 3000), 0, NULL, NULL};
        try_decode(&env, buf, len, &v);
        assert_int_equal(qv_reservation_used(env.r), 0);
    }
    env_close(&env);
}

/* Allocation failure at every allocation of an encode and of a decode. */
static void test_alloc_failures(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct sample smp[MAX_SAMPLES];
    int ns = make_samples(smp, 2100);
    for (int i = 0; i < ns; i++) {
        struct qv_encode_options o = {0};
        o.force = smp[i].force;
        struct qv_error err;
        struct qv_encoded e;
        uint64_t before = qv_pool_alloc_count(env.pool);
        assert_int_equal(qv_encode(&smp[i].c.v, &o, env.r, &e, &err), 0);
        uint64_t allocs = qv_pool_alloc_count(env.pool) - before;
        qv_encoded_release(env.r, &e);
        for (uint64_t nth = 1; nth <= allocs; nth++) {
            qv_pool_inject_alloc_failure(env.pool, nth);
            int rc = qv_encode(&smp[i].c.v, &o, env.r, &e, &err);
            qv_pool_inject_alloc_failure(env.pool, 0);
            if (rc == 0) fail_msg("%s %s: failure at allocation %llu of %llu was swallowed",
                                  qv_value_kind_name(smp[i].c.v.kind), qv_encoding_name(o.force),
                                  (unsigned long long)nth, (unsigned long long)allocs);
            assert_int_equal(rc, ENOMEM);
            assert_null(e.data);
            assert_int_equal(qv_reservation_used(env.r), 0);
        }
        /* Decode: open + full decode + range + take. */
        assert_int_equal(qv_encode(&smp[i].c.v, &o, env.r, &e, &err), 0);
        uint64_t base = qv_reservation_used(env.r);
        before = qv_pool_alloc_count(env.pool);
        assert_int_equal(try_decode(&env, e.data, e.size, &smp[i].c.v), 0);
        allocs = qv_pool_alloc_count(env.pool) - before;
        for (uint64_t nth = 1; nth <= allocs; nth++) {
            qv_pool_inject_alloc_failure(env.pool, nth);
            int rc = try_decode(&env, e.data, e.size, &smp[i].c.v);
            qv_pool_inject_alloc_failure(env.pool, 0);
            /* Test-owned allocations (binary output) also count; a failure
             * must surface as ENOMEM either way. */
            if (rc != ENOMEM) fail_msg("decode %s %s: allocation %llu of %llu gave %d",
                                       qv_value_kind_name(smp[i].c.v.kind), qv_encoding_name(o.force),
                                       (unsigned long long)nth, (unsigned long long)allocs, rc);
            assert_int_equal(qv_reservation_used(env.r), base);
        }
        qv_encoded_release(env.r, &e);
    }
    for (int i = 0; i < ns; i++) col_free(&smp[i].c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncate_and_flip),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
