/*
 * Bucket (docs/format.md 5.5.18): round trips of every integer kind forced
 * to bucket with every mantissa width the kind allows, at every SIMD level
 * (full decodes, ranges from any row, takes); the spec's worked example
 * decoded from a hand-made tree; the cascade choosing it for skewed wide
 * codes and not for uniform ones; and hand-made corrupt nodes (tokens past
 * the last, starts that do not start at 0, go backwards, run past the
 * buffer or disagree with the tokens, m out of range) that must fail with
 * EIO and a message, never read outside the buffer.
 */
#include "test_enc_util.h"

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"
#include "encoding/encoding_testing.h"

static const enum qv_value_kind int_kinds[] = {QV_KIND_INT8,  QV_KIND_UINT8,  QV_KIND_INT16,
                                               QV_KIND_UINT16, QV_KIND_INT32, QV_KIND_UINT32,
                                               QV_KIND_INT64, QV_KIND_UINT64};
#define NKINDS (sizeof int_kinds / sizeof int_kinds[0])

enum shape {
    SKEWED, /* mostly small, a long tail up to the top of the width */
    WIDE,   /* uniform over the whole width (fields of up to 63 bits) */
    ZERO,   /* all 0: tokens only, no extra bits */
    SPREAD, /* bit lengths uniform over the width: tokens near uniform, so
             * their ans frames come out no smaller and the cascade codes them */
    NSHAPES
};

static struct col make_col(enum qv_value_kind k, int64_t n, enum shape sh, uint64_t seed) {
    struct col c = col_words(k, n);
    const unsigned w = kind_width(k, 0);
    const uint64_t mask = w == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * w)) - 1;
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = 0;
        if (sh == SKEWED) {
            /* A geometric bit length: half the values below 2, a quarter
             * below 4, ..., so every token occurs. */
            unsigned len = 0;
            while (len < 8 * w && rng_next(&s) % 3 != 0) len++;
            x = len ? (rng_next(&s) | UINT64_C(1) << 63) >> (64 - len) : 0;
        } else if (sh == WIDE) {
            x = rng_next(&s);
        } else if (sh == SPREAD) {
            const unsigned len = (unsigned)(rng_next(&s) % (8 * w + 1));
            x = len ? (rng_next(&s) | UINT64_C(1) << 63) >> (64 - len) : 0;
        }
        x &= mask;
        memcpy((uint8_t *)c.values + (size_t)i * w, &x, w);
    }
    return c;
}

static int max_level(void) { return qv__cpu_supported(); }

static void test_forced_roundtrip(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {0, 1, 2, 1023, 1024, 1025, 5000, 70001};
    uint64_t seed = 1;
    for (size_t ki = 0; ki < NKINDS; ki++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int sh = 0; sh < NSHAPES; sh++)
                for (int m = 0; m <= 3; m++) {
                    struct col c = make_col(int_kinds[ki], ns[ni], (enum shape)sh, seed++);
                    qv_encode_force_bucket_m(m);
                    struct qv_encode_options o = {0};
                    o.force = QV_ENC_BUCKET;
                    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
                        qv__cpu_set_level(level);
                        struct qv_encoded e = roundtrip(&env, &c.v, &o, ns[ni] > 5000 ? 6 : 12, seed);
                        assert_int_equal(root_encoding(&e), QV_ENC_BUCKET);
                        qv_encoded_release(env.r, &e);
                    }
                    qv_encode_force_bucket_m(-1);
                    col_free(&c);
                }
    qv__cpu_set_level(max_level());
    env_close(&env);
}

/* A bucket node made by hand: u32 values, parameter m, the given tokens
 * (plain u8), starts (plain u64; ns of them) and extra-bit bytes. */
static struct qv_encoded hand_made(struct enc_env *env, int64_t m, const uint8_t *tok, int64_t n,
                                   const uint64_t *starts, int64_t ns, const uint8_t *bits,
                                   size_t len) {
    struct qv__enc e;
    struct qv_error err = {0};
    struct qv_encode_options o = {0};
    qv__enc_init(&e, &o, env->r, &err);
    struct qv__enode *nd = qv__enode_new(&e, QV_ENC_BUCKET, QV__PT_U32, 4, n);
    assert_non_null(nd);
    assert_int_equal(qv__plain_encode_raw(&e, tok, n, QV__PT_U8, 1, 1, &nd->child[0]), 0);
    assert_int_equal(qv__plain_encode_raw(&e, starts, ns, QV__PT_U64, 8, 1, &nd->child[1]), 0);
    nd->nparams = 1;
    nd->params[0] = m;
    nd->nbufs = 1;
    nd->buf[0] = bits;
    nd->buf_len[0] = len;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    struct qv_encoded out;
    if (qv__enc_finish(&e, 0, nd, &out)) fail_msg("serialize: %s", err.message);
    return out;
}

/* Decodes all n values of chunk e as u32 into out; the error code (and the
 * message in *err). */
static int decode_all(struct enc_env *env, const struct qv_encoded *e, int64_t n, uint32_t *out,
                      struct qv_error *err) {
    struct qv_decode_out o = {0};
    o.values = out;
    return qv_decode(e->data, e->size, QV_KIND_UINT32, 0, n, env->r, &o, err);
}

/* The spec's example (5.5.18): with m = 1, 0..3 are tokens 0..3; 4 and 5
 * token 4 with one extra bit, 6 and 7 token 5, 8..11 token 6 with two
 * extra bits, 12..15 token 7. */
static void test_spec_example(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const uint8_t tok[16] = {0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7};
    /* Extra bits, value after value, each least significant bit first:
     * 4..7 one bit each, 8..15 two, 20 in all, in the bytes the spec
     * gives (4a 4e 0e). */
    uint8_t b[3] = {0};
    unsigned at = 0;
    static const unsigned ebits[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2};
    for (unsigned v = 0; v < 16; v++)
        for (unsigned q = 0; q < ebits[v]; q++, at++)
            if ((v >> q) & 1) b[at / 8] |= (uint8_t)(1u << (at % 8));
    assert_int_equal(at, 20);
    assert_int_equal(b[0], 0x4a);
    assert_int_equal(b[1], 0x4e);
    assert_int_equal(b[2], 0x0e);
    const uint64_t starts[2] = {0, 20};
    struct qv_encoded e = hand_made(&env, 1, tok, 16, starts, 2, b, sizeof b);
    uint32_t out[16];
    struct qv_error err = {0};
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        memset(out, 0xff, sizeof out);
        assert_int_equal(decode_all(&env, &e, 16, out, &err), 0);
        for (uint32_t v = 0; v < 16; v++) assert_int_equal(out[v], v);
    }
    qv__cpu_set_level(max_level());
    qv_encoded_release(env.r, &e);
    env_close(&env);
}

/* Dictionary codes drawn by Zipf(1.1) over 2,000 values, scattered over a
 * wide range: the cascade takes bucket for the codes, and the chunk is at
 * least 8% smaller than without bucket. Uniform codes: no bucket. */
static void test_chosen(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 100000, d = 2000;
    double *cdf = malloc((size_t)d * sizeof *cdf);
    const double sum = zipf_cdf(cdf, d, 1.1);
    for (int uniform = 0; uniform < 2; uniform++) {
        struct col c = col_words(QV_KIND_INT64, n);
        uint64_t s = 9;
        for (int64_t i = 0; i < n; i++) {
            const int64_t r =
                uniform ? (int64_t)(rng_next(&s) % (uint64_t)d) : zipf_draw(cdf, d, sum, &s);
            ((int64_t *)c.values)[i] = (int64_t)((uint64_t)(r * 7919) % 100003) * 1000 - 5000;
        }
        char tree[1024];
        size_t with = encoded_size(&env, &c.v, 0, 8, 3, tree, sizeof tree);
        size_t without = encoded_size(&env, &c.v, ~QV_ENC_BIT(QV_ENC_BUCKET), 8, 3, NULL, 0);
        print_message("%s: %zu bytes, %zu without bucket: %s\n", uniform ? "uniform" : "zipf",
                      with, without, tree);
        if (uniform) {
            if (strstr(tree, "bucket")) fail_msg("uniform codes, yet %s", tree);
        } else {
            if (!strstr(tree, "bucket")) fail_msg("zipf codes without bucket: %s", tree);
            if ((double)with > 0.92 * (double)without)
                fail_msg("zipf codes: %zu bytes with bucket, %zu without", with, without);
        }
        col_free(&c);
    }
    free(cdf);
    env_close(&env);
}

/* Decoding a hand-made node fails with EIO naming the bucket node and the
 * fault; so does a take of `row` alone, a row of the faulty vector before
 * its fault and its end (a take checks the whole vector, as a full decode
 * does: the attack of stop 44 took such a row and got a wrong value). */
static void expect_corrupt(struct enc_env *env, int64_t m, const uint8_t *tok, int64_t n,
                           const uint64_t *starts, int64_t ns, const uint8_t *bits, size_t len,
                           const char *want, int64_t row) {
    struct qv_encoded e = hand_made(env, m, tok, n, starts, ns, bits, len);
    uint32_t *out = malloc((size_t)(n ? n : 1) * 4);
    struct qv_error err = {0};
    int rc = decode_all(env, &e, n, out, &err);
    if (rc != EIO) fail_msg("%s: decode gave %d (%s)", want, rc, err.message);
    if (!strstr(err.message, "bucket") || !strstr(err.message, want))
        fail_msg("want \"%s\" in: %s", want, err.message);
    for (int last = 0; last < 2; last++) {
        struct qv_decoder *d;
        assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_UINT32, 0, n, env->r, &d, &err), 0);
        int64_t r = last ? n - 1 : row;
        struct qv_decode_out o = {0};
        o.values = out;
        rc = qv_decoder_take(d, &r, 1, &o, &err);
        if (rc != EIO) fail_msg("%s: take of row %lld gave %d", want, (long long)r, rc);
        qv_decoder_close(d);
    }
    free(out);
    qv_encoded_release(env->r, &e);
}

static void test_corrupt_nodes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    /* 2,000 values of 32 bits, m = 0 (tokens 0..32: 33 of them), every
     * value token 10: 9 extra bits each. */
    enum { N = 2000 };
    uint8_t *tok = malloc(N);
    memset(tok, 10, N);
    uint8_t *bits = calloc(1, N * 9 / 8 + 1);
    const uint64_t good[4] = {0, 1024 * 9, N * 9, N * 9}; /* the 4th: for a wrong count */
    /* The good node decodes: token 10 with zero extra bits is 2^9. */
    struct qv_encoded e = hand_made(&env, 0, tok, N, good, 3, bits, N * 9 / 8);
    uint32_t *out = malloc(N * 4);
    struct qv_error err = {0};
    assert_int_equal(decode_all(&env, &e, N, out, &err), 0);
    for (int i = 0; i < N; i++) assert_int_equal(out[i], 512);
    qv_encoded_release(env.r, &e);

    tok[1500] = 33; /* one past the last token of 32-bit values with m = 0 */
    expect_corrupt(&env, 0, tok, N, good, 3, bits, N * 9 / 8, "token 33", 1100);
    tok[1500] = 10;
    const uint64_t late[3] = {8, 1024 * 9 + 8, N * 9 + 8};
    expect_corrupt(&env, 0, tok, N, late, 3, bits, N * 9 / 8 + 1, "starts at bit 8", 5);
    const uint64_t back[3] = {0, N * 9, 1024 * 9};
    expect_corrupt(&env, 0, tok, N, back, 3, bits, N * 9 / 8, "before vector", 1500);
    const uint64_t past[3] = {0, 1024 * 9, N * 9 + 64};
    expect_corrupt(&env, 0, tok, N, past, 3, bits, N * 9 / 8, "extra bits end", 1500);
    const uint64_t short_vec[3] = {0, 1024 * 9 - 1, N * 9};
    expect_corrupt(&env, 0, tok, N, short_vec, 3, bits, N * 9 / 8, "extra bits, its starts", 10);
    /* Wrong counts of starts and m out of range fail at open (EIO). */
    static const struct {
        int64_t m, ns;
    } bad_shapes[] = {{0, 2}, {0, 4}, {4, 3}, {-1, 3}};
    for (size_t i = 0; i < sizeof bad_shapes / sizeof bad_shapes[0]; i++) {
        struct qv_encoded b = hand_made(&env, bad_shapes[i].m, tok, N, good, bad_shapes[i].ns, bits,
                                        N * 9 / 8);
        struct qv_decoder *d;
        int rc = qv_decoder_open(b.data, b.size, QV_KIND_UINT32, 0, N, env.r, &d, &err);
        if (rc != EIO) fail_msg("shape %zu: open gave %d", i, rc);
        qv_encoded_release(env.r, &b);
    }
    free(out);
    free(bits);
    free(tok);
    env_close(&env);
}

/* Bit flips of forced bucket chunks fail cleanly or decode (ASan: in
 * bounds), at every level. */
static void test_flips(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        static const enum shape shapes[] = {SKEWED, WIDE, SPREAD};
        for (int sh = 0; sh < 3; sh++) {
            struct col c = make_col(QV_KIND_UINT32, 5000, shapes[sh], 40 + (uint64_t)sh);
            struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_BUCKET);
            corrupt_trials(&env, &e, QV_KIND_UINT32, 5000, 300, 7 + (uint64_t)level, 100, 50);
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    }
    qv__cpu_set_level(max_level());
    env_close(&env);
}

/* Bad arguments: bucket forced on kinds it cannot hold (floats, strings,
 * booleans) is refused with EINVAL naming it, and the budget is back where
 * it was. */
static size_t gen_word(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    const size_t len = 1 + rng_next(s) % 8;
    memset(b, 'a' + (int)(rng_next(s) % 26), len);
    return len;
}

static void test_kinds_refused(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const uint64_t before = qv_reservation_used(env.r);
    struct col cs[3] = {col_words(QV_KIND_FLOAT32, 3000), col_words(QV_KIND_FLOAT64, 3000),
                        col_strings(QV_KIND_BINARY, 3000, gen_word, 5)};
    uint8_t bits[400] = {0};
    struct qv_values b = {.kind = QV_KIND_BOOL, .count = 3000, .values = bits};
    for (int i = 0; i < 4; i++) {
        struct qv_encode_options o = {0};
        o.force = QV_ENC_BUCKET;
        struct qv_encoded e;
        struct qv_error err = {0};
        assert_int_equal(qv_encode(i < 3 ? &cs[i].v : &b, &o, env.r, &e, &err), EINVAL);
        if (!strstr(err.message, "bucket")) fail_msg("kind %d: %s", i, err.message);
        assert_int_equal(qv_reservation_used(env.r), before);
    }
    for (int i = 0; i < 3; i++) col_free(&cs[i]);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forced_roundtrip), cmocka_unit_test(test_spec_example),
        cmocka_unit_test(test_chosen),           cmocka_unit_test(test_corrupt_nodes),
        cmocka_unit_test(test_flips),            cmocka_unit_test(test_kinds_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
