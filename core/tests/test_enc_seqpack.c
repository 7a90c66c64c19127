/*
 * Seqpack (docs/format.md 5.5.19) and the entropy stage's sequential bits
 * (5.7): the spec's three examples byte for byte, both ways; round trips of
 * every integer kind forced to seqpack at 1, 2 and 4 bits (full decodes,
 * ranges from any row, takes) and forced values too wide refused; the
 * layout forced in zstd frames at every width, and chosen by the cascade
 * for flags that hold along orders and not for uniform 4-bit values; a
 * filter over those frames; hand-made corrupt nodes (a width of 3, 0 or
 * 8, a buffer a byte short or long) refused with EIO and a message; bit
 * flips; an allocation failure at every allocation of an encode.
 */
#include "test_enc_util.h"

#include "encoding/enc_internal.h"
#include "encoding/encoding_testing.h"

static const enum qv_value_kind int_kinds[] = {QV_KIND_INT8,  QV_KIND_UINT8,  QV_KIND_INT16,
                                               QV_KIND_UINT16, QV_KIND_INT32, QV_KIND_UINT32,
                                               QV_KIND_INT64, QV_KIND_UINT64};
#define NKINDS (sizeof int_kinds / sizeof int_kinds[0])

/* n values below 2^bits: one per order of 1..`longest` lines, a tenth
 * redrawn. */
static struct col orders_of(enum qv_value_kind k, int64_t n, unsigned bits, uint64_t seed,
                            int longest) {
    struct col c = col_words(k, n);
    const unsigned w = kind_width(k, 0);
    uint64_t s = seed, x = 0;
    int64_t left = 0;
    for (int64_t i = 0; i < n; i++) {
        if (left-- <= 0) {
            left = (int64_t)(rng_next(&s) % (uint64_t)longest);
            x = rng_next(&s) & ((UINT64_C(1) << bits) - 1);
        }
        uint64_t y = rng_next(&s) % 10 == 0 ? rng_next(&s) & ((UINT64_C(1) << bits) - 1) : x;
        memcpy((uint8_t *)c.values + (size_t)i * w, &y, w);
    }
    return c;
}

static struct col order_col(enum qv_value_kind k, int64_t n, unsigned bits, uint64_t seed) {
    return orders_of(k, n, bits, seed, 7);
}

/* A seqpack node made by hand: `pt` values, width w, the given bytes. */
static struct qv_encoded hand_made(struct enc_env *env, int pt, int64_t w, const uint8_t *buf,
                                   size_t len, int64_t n) {
    struct qv__enc e;
    struct qv_error err = {0};
    struct qv_encode_options o = {0};
    qv__enc_init(&e, &o, env->r, &err);
    struct qv__enode *nd = qv__enode_new(&e, QV_ENC_SEQPACK, pt, qv__pt_width(pt), n);
    assert_non_null(nd);
    nd->nparams = 1;
    nd->params[0] = w;
    nd->nbufs = 1;
    nd->buf[0] = buf;
    nd->buf_len[0] = len;
    qv__enode_finish(nd);
    struct qv_encoded out;
    if (qv__enc_finish(&e, 0, nd, &out)) fail_msg("serialize: %s", err.message);
    return out;
}

/* The spec's examples: u8 values and the bytes seqpack holds them in. */
static void test_spec_examples(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const struct {
        unsigned w;
        int64_t n;
        uint8_t v[9], b[2];
    } ex[] = {{1, 9, {1, 0, 1, 1, 0, 0, 0, 1, 1}, {0x8d, 0x01}},
              {2, 5, {3, 0, 2, 1, 2}, {0x63, 0x02}},
              {4, 3, {5, 12, 0}, {0xc5, 0x00}}};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        uint64_t v[9];
        uint8_t b[2];
        for (int64_t j = 0; j < ex[i].n; j++) v[j] = ex[i].v[j];
        assert_int_equal(qv__seqpack_bytes(ex[i].n, ex[i].w), 2);
        qv__seqpack_put(v, ex[i].n, ex[i].w, b);
        assert_memory_equal(b, ex[i].b, 2);
        /* And back, through a node made from the spec's bytes, as u8 and
         * zero-extended to u64. */
        struct qv_encoded e = hand_made(&env, QV__PT_U8, ex[i].w, ex[i].b, 2, ex[i].n);
        uint8_t o8[9];
        struct qv_decode_out o = {0};
        o.values = o8;
        struct qv_error err = {0};
        assert_int_equal(qv_decode(e.data, e.size, QV_KIND_UINT8, 0, ex[i].n, env.r, &o, &err), 0);
        assert_memory_equal(o8, ex[i].v, (size_t)ex[i].n);
        qv_encoded_release(env.r, &e);
        e = hand_made(&env, QV__PT_U64, ex[i].w, ex[i].b, 2, ex[i].n);
        uint64_t o64[9];
        o.values = o64;
        assert_int_equal(qv_decode(e.data, e.size, QV_KIND_UINT64, 0, ex[i].n, env.r, &o, &err), 0);
        for (int64_t j = 0; j < ex[i].n; j++) assert_int_equal(o64[j], ex[i].v[j]);
        qv_encoded_release(env.r, &e);
    }
    env_close(&env);
}

/* Every kind forced to seqpack, values of 1 to 4 bits, sizes around the
 * byte and vector edges: full decodes, ranges from any row (unaligned to
 * the values a byte holds), takes. */
static void test_forced_roundtrip(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {0, 1, 2, 3, 7, 9, 1023, 1024, 1025, 5001, 70001};
    uint64_t seed = 1;
    for (size_t ki = 0; ki < NKINDS; ki++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (unsigned bits = 1; bits <= 4; bits++) {
                struct col c = order_col(int_kinds[ki], ns[ni], bits, seed++);
                struct qv_encode_options o = {0};
                o.force = QV_ENC_SEQPACK;
                struct qv_encoded e = roundtrip(&env, &c.v, &o, ns[ni] > 5000 ? 8 : 16, seed);
                assert_int_equal(root_encoding(&e), QV_ENC_SEQPACK);
                qv_encoded_release(env.r, &e);
                col_free(&c);
            }
    /* Values of 5 bits cannot be held: EINVAL naming the width. */
    struct col c = order_col(QV_KIND_INT32, 100, 5, 9);
    ((int32_t *)c.values)[50] = 16;
    struct qv_encode_options o = {0};
    o.force = QV_ENC_SEQPACK;
    struct qv_encoded e;
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&c.v, &o, env.r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "at most 4 bits"));
    assert_int_equal(qv_reservation_used(env.r), 0);
    col_free(&c);
    env_close(&env);
}

/* Whether `tree` holds a seqpack node of width w. */
static int has_seqpack(const char *tree, unsigned w) {
    char want[32];
    snprintf(want, sizeof want, "seqpack(w=%u)", w);
    return strstr(tree, want) != NULL;
}

/* The layout forced in zstd frames, every width, with a reference (values
 * from 1000) and without; then the cascade's own choice: flags that hold
 * along orders go to sequential bits, uniform 4-bit values stay
 * bit-packed. */
static void test_entropy_layout(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {1024, 6000, 16384, 16385, 40000};
    char tree[4096];
    struct qv_error err = {0};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (unsigned bits = 1; bits <= 4; bits++)
            for (int based = 0; based <= 1; based++) {
                const int64_t n = ns[ni];
                struct col c = order_col(QV_KIND_INT64, n, bits, (uint64_t)(n + bits));
                if (based)
                    for (int64_t i = 0; i < n; i++) ((int64_t *)c.values)[i] += 1000;
                qv_encode_force_entropy_layout(QV__ENTROPY_SEQBITS);
                struct qv_encoded e = roundtrip(&env, &c.v, NULL, 10, (uint64_t)n);
                qv_encode_force_entropy_layout(0);
                assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
                const unsigned w = bits == 1 ? 1 : bits == 2 ? 2 : 4;
                if (!strstr(tree, "zstd(") || !has_seqpack(tree, w))
                    fail_msg("n=%lld bits=%u based=%d: %s", (long long)n, bits, based, tree);
                qv_encoded_release(env.r, &e);
                col_free(&c);
            }
    /* Chosen: 100,000 flags of orders of up to 14 lines. */
    struct col c = orders_of(QV_KIND_INT32, 100000, 1, 5, 14);
    struct qv_encoded e = roundtrip(&env, &c.v, NULL, 10, 5);
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
    if (!has_seqpack(tree, 1)) fail_msg("flags of orders: %s", tree);
    assert_true(e.size * 8 < (size_t)100000 * 85 / 100); /* under 0.85 bits a value */
    qv_encoded_release(env.r, &e);
    col_free(&c);
    /* Not chosen: uniform values 0..15 (nothing to gain). */
    c = col_words(QV_KIND_INT32, 100000);
    uint64_t s = 3;
    for (int64_t i = 0; i < 100000; i++) ((int32_t *)c.values)[i] = (int32_t)(rng_next(&s) % 16);
    e = roundtrip(&env, &c.v, NULL, 10, 6);
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
    if (strstr(tree, "seqpack")) fail_msg("uniform: %s", tree);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* A filter over sequential-bit frames gives what comparing the values
 * gives, for every op, from unaligned starts. */
static void test_filter(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 40000;
    struct col c = order_col(QV_KIND_INT64, n, 2, 17);
    qv_encode_force_entropy_layout(QV__ENTROPY_SEQBITS);
    struct qv_encoded e = roundtrip(&env, &c.v, NULL, 4, 17);
    qv_encode_force_entropy_layout(0);
    struct qv_decoder *d;
    struct qv_error err = {0};
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT64, 0, n, env.r, &d, &err), 0);
    /* Integer trees without an encoded-domain path decode a vector at a
     * time and compare: every op ran. */
    assert_int_equal(filter_ops_match(d, c.values, n, -1, 4, 1), 7 * 6);
    qv_decoder_close(d);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Hand-made nodes the spec calls corrupt: EIO naming the node, never a
 * read outside the buffer (ASan). */
static void test_corrupt_nodes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const uint8_t buf[4] = {0x8d, 0x01, 0xff, 0xff};
    static const struct {
        int64_t w;
        size_t len;
        int64_t n;
        const char *msg;
    } bad[] = {{3, 2, 5, "bit width 3"},  {0, 2, 5, "bit width 0"}, {8, 2, 2, "bit width 8"},
               {1, 1, 9, "holds 1 bytes"}, {1, 3, 9, "holds 3 bytes"}, {4, 2, 5, "holds 2 bytes"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct qv_encoded e = hand_made(&env, QV__PT_U8, bad[i].w, buf, bad[i].len, bad[i].n);
        uint8_t out[16];
        struct qv_decode_out o = {0};
        o.values = out;
        struct qv_error err = {0};
        assert_int_equal(qv_decode(e.data, e.size, QV_KIND_UINT8, 0, bad[i].n, env.r, &o, &err), EIO);
        if (!strstr(err.message, bad[i].msg)) fail_msg("case %zu: %s", i, err.message);
        qv_encoded_release(env.r, &e);
    }
    /* Bit flips in a forced node and in zstd frames of sequential bits. */
    struct col c = order_col(QV_KIND_INT64, 20000, 2, 21);
    struct qv_encode_options o = {0};
    o.force = QV_ENC_SEQPACK;
    struct qv_encoded e = roundtrip(&env, &c.v, &o, 2, 21);
    corrupt_trials(&env, &e, QV_KIND_INT64, 20000, 300, 22, 90, 40);
    qv_encoded_release(env.r, &e);
    qv_encode_force_entropy_layout(QV__ENTROPY_SEQBITS);
    e = roundtrip(&env, &c.v, NULL, 2, 23);
    qv_encode_force_entropy_layout(0);
    corrupt_trials(&env, &e, QV_KIND_INT64, 20000, 300, 24, 90, 40);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Every allocation of a forced seqpack encode and of a sequential-bits
 * frames encode fails in turn: ENOMEM, nothing left charged. */
static void test_alloc_failures(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = order_col(QV_KIND_INT32, 20000, 1, 31);
    struct qv_encode_options o = {0};
    o.force = QV_ENC_SEQPACK;
    encode_alloc_failures(&env, &c.v, &o, "forced seqpack");
    qv_encode_force_entropy_layout(QV__ENTROPY_SEQBITS);
    encode_alloc_failures(&env, &c.v, NULL, "sequential bits");
    qv_encode_force_entropy_layout(0);
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_examples),  cmocka_unit_test(test_forced_roundtrip),
        cmocka_unit_test(test_entropy_layout), cmocka_unit_test(test_filter),
        cmocka_unit_test(test_corrupt_nodes),  cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
