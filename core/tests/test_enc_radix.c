/*
 * Radix (docs/format.md 5.5.20): the spec's examples both ways; the digits
 * a group the encoder takes for each base; round trips of every integer
 * kind forced to radix over ranges of 1 to 256 values, with and without a
 * reference (full decodes, ranges from any row, takes); forced values of
 * too wide a range refused; the cascade's choice (11 uniform values take
 * it, 16 do not); a filter over it for every op, and the filter's pairs
 * kernel at every SIMD level against digit-by-digit answers; hand-made
 * corrupt nodes (bases and digit counts out of range, the groups' type or
 * count wrong, a group not below b^k, digits past the last value) refused
 * with EIO and a message; bit flips; an allocation failure at every
 * allocation of an encode.
 */
#include "test_enc_util.h"

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

static const enum qv_value_kind int_kinds[] = {QV_KIND_INT8,  QV_KIND_UINT8,  QV_KIND_INT16,
                                               QV_KIND_UINT16, QV_KIND_INT32, QV_KIND_UINT32,
                                               QV_KIND_INT64, QV_KIND_UINT64};
#define NKINDS (sizeof int_kinds / sizeof int_kinds[0])

/* n values base + (0 .. span-1), uniform, at the kind's width (wrapping). */
static struct col uniform(enum qv_value_kind k, int64_t n, uint64_t span, int64_t base,
                          uint64_t seed) {
    struct col c = col_words(k, n);
    const unsigned w = kind_width(k, 0);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t y = (uint64_t)base + rng_next(&s) % span;
        memcpy((uint8_t *)c.values + (size_t)i * w, &y, w);
    }
    return c;
}

/* A radix node made by hand over plain u16 groups. */
static struct qv_encoded hand_made(struct enc_env *env, int pt, int64_t b, int64_t k,
                                   const uint64_t *groups, int64_t ng, int gpt, int64_t n) {
    struct qv__enc e;
    struct qv_error err = {0};
    struct qv_encode_options o = {0};
    qv__enc_init(&e, &o, env->r, &err);
    struct qv__enode *nd = qv__enode_new(&e, QV_ENC_RADIX, pt, qv__pt_width(pt), n);
    assert_non_null(nd);
    assert_int_equal(qv__plain_encode_word(&e, groups, ng, gpt, &nd->child[0]), 0);
    nd->nparams = 2;
    nd->params[0] = b;
    nd->params[1] = k;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    struct qv_encoded out;
    if (qv__enc_finish(&e, 0, nd, &out)) fail_msg("serialize: %s", err.message);
    return out;
}

/* The spec's examples: values, their groups, and back through a node made
 * from the groups, as u8 and zero-extended to u64. */
static void test_spec_examples(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const struct {
        int64_t b, k, n, ng;
        uint8_t v[8];
        uint64_t g[3];
    } ex[] = {{11, 2, 5, 3, {3, 7, 10, 0, 5}, {80, 10, 5}},
              {3, 5, 7, 2, {2, 0, 1, 1, 2, 1, 2}, {200, 7}}};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        unsigned gw;
        assert_int_equal(qv__radix_digits((uint32_t)ex[i].b, &gw), ex[i].k);
        struct qv_encoded e =
            hand_made(&env, QV__PT_U8, ex[i].b, ex[i].k, ex[i].g, ex[i].ng, QV__PT_U16, ex[i].n);
        uint8_t o8[8];
        struct qv_decode_out o = {0};
        o.values = o8;
        struct qv_error err = {0};
        assert_int_equal(qv_decode(e.data, e.size, QV_KIND_UINT8, 0, ex[i].n, env.r, &o, &err), 0);
        assert_memory_equal(o8, ex[i].v, (size_t)ex[i].n);
        qv_encoded_release(env.r, &e);
        e = hand_made(&env, QV__PT_U64, ex[i].b, ex[i].k, ex[i].g, ex[i].ng, QV__PT_U16, ex[i].n);
        uint64_t o64[8];
        o.values = o64;
        assert_int_equal(qv_decode(e.data, e.size, QV_KIND_UINT64, 0, ex[i].n, env.r, &o, &err), 0);
        for (int64_t j = 0; j < ex[i].n; j++) assert_int_equal(o64[j], ex[i].v[j]);
        qv_encoded_release(env.r, &e);
        /* And the encoder makes those groups. */
        struct col c = col_words(QV_KIND_UINT8, ex[i].n);
        memcpy(c.values, ex[i].v, (size_t)ex[i].n);
        struct qv_encode_options fo = {0};
        fo.force = QV_ENC_RADIX;
        e = roundtrip(&env, &c.v, &fo, 4, 1);
        char tree[512];
        assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
        char want[64];
        snprintf(want, sizeof want, "radix(b=%lld,k=%lld", (long long)ex[i].b, (long long)ex[i].k);
        if (!strstr(tree, want)) fail_msg("example %zu: %s", i, tree);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* The digits a group for each base: the fewest bits a value, then the
 * fewest digits; none outside 3..256. */
static void test_digits(void **state) {
    (void)state;
    static const struct {
        uint32_t b;
        unsigned k, w;
    } t[] = {{3, 5, 8},   {4, 2, 4},   {5, 3, 7},   {6, 5, 13},  {7, 2, 6},  {9, 5, 16},
             {10, 3, 10}, {11, 2, 7},  {12, 3, 11}, {20, 3, 13}, {40, 3, 16}, {50, 2, 12},
             {90, 2, 13}, {200, 2, 16}, {256, 2, 16}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        unsigned w = 0;
        unsigned k = qv__radix_digits(t[i].b, &w);
        if (k != t[i].k || w != t[i].w)
            fail_msg("b=%u: k=%u w=%u, want k=%u w=%u", t[i].b, k, w, t[i].k, t[i].w);
    }
    assert_int_equal(qv__radix_digits(2, NULL), 0);
    assert_int_equal(qv__radix_digits(257, NULL), 0);
    assert_int_equal(qv__radix_digits(0, NULL), 0);
}

/* Every kind forced to radix, spans of 1 to 256 values from 0, from a
 * positive and from a negative reference, sizes around the group and
 * vector edges: full decodes, ranges from any row, takes. */
static void test_forced_roundtrip(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {0, 1, 2, 3, 5, 7, 1023, 1024, 1025, 3001, 70001};
    static const uint64_t spans[] = {1, 3, 5, 11, 37, 200, 256};
    static const int64_t bases[] = {0, 100, -50};
    uint64_t seed = 1;
    char tree[1024];
    struct qv_error err = {0};
    for (size_t ki = 0; ki < NKINDS; ki++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t si = 0; si < sizeof spans / sizeof spans[0]; si++)
                for (size_t bi = 0; bi < 3; bi++) {
                    struct col c = uniform(int_kinds[ki], ns[ni], spans[si], bases[bi], seed++);
                    struct qv_encode_options o = {0};
                    o.force = QV_ENC_RADIX;
                    struct qv_encoded e = roundtrip(&env, &c.v, &o, ns[ni] > 3000 ? 6 : 12, seed);
                    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
                    if (!strstr(tree, "radix(")) fail_msg("no radix node: %s", tree);
                    qv_encoded_release(env.r, &e);
                    col_free(&c);
                }
    /* A span of 257 values cannot be held: EINVAL naming the span. */
    struct col c = uniform(QV_KIND_INT32, 3000, 256, 0, 9);
    ((int32_t *)c.values)[50] = 256;
    struct qv_encode_options o = {0};
    o.force = QV_ENC_RADIX;
    struct qv_encoded e;
    assert_int_equal(qv_encode(&c.v, &o, env.r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "span 257"));
    assert_int_equal(qv_reservation_used(env.r), 0);
    col_free(&c);
    env_close(&env);
}

/* The cascade takes radix for 11 uniform values (3.5 bits a value against
 * packing's 4), from 0 and under a reference; not for 16 (nothing to
 * gain) nor for 7 (3 bits either way). */
static void test_chosen(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    char tree[2048];
    struct qv_error err = {0};
    static const struct {
        uint64_t span;
        int64_t base;
        int want;
    } t[] = {{11, 0, 1}, {11, 1000, 1}, {5, -3, 1}, {16, 0, 0}, {7, 0, 0}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const int64_t n = 131072;
        struct col c = uniform(QV_KIND_INT64, n, t[i].span, t[i].base, 40 + i);
        struct qv_encoded e = roundtrip(&env, &c.v, NULL, 8, 41 + i);
        assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
        if (!!strstr(tree, "radix(") != t[i].want)
            fail_msg("span %llu base %lld: %s", (unsigned long long)t[i].span,
                     (long long)t[i].base, tree);
        if (t[i].span == 11) /* 3.5 bits a value and a few bytes */
            assert_true(e.size < (size_t)n * 35 / 80 + 256);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* A filter over a radix node gives what comparing the values gives: under
 * a reference, 11 and 181 values (pairs split and compared in one pass,
 * shifts 0 and 7) and 9 values, 5 digits (a table of each group's
 * answers); at the root, 250 values (pairs, no exact 16-bit division:
 * split into bytes, then compared) and 3 values, 5 digits (the table). For every op and
 * literals on and past both ends, from unaligned starts.
 * comparing the values gives, for every op and literals on and past both
 * ends, from unaligned starts. */
static void filter_case(uint64_t span, int64_t base);
static void test_filter(void **state) {
    (void)state;
    static const struct {
        uint64_t span;
        int64_t base;
    } t[] = {{11, 5}, {9, 5}, {3, 0}, {181, -90}, {250, 0}};
    for (size_t ti = 0; ti < sizeof t / sizeof t[0]; ti++) filter_case(t[ti].span, t[ti].base);
}

static void filter_case(uint64_t span, int64_t base) {
    struct enc_env env;
    env_open(&env);
    const int64_t n = 40000;
    struct col c = uniform(QV_KIND_INT64, n, span, base, 17 + span);
    struct qv_encode_options fo = {0};
    fo.force = QV_ENC_RADIX;
    struct qv_encoded e = roundtrip(&env, &c.v, &fo, 4, 17);
    struct qv_decoder *d;
    struct qv_error err = {0};
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT64, 0, n, env.r, &d, &err), 0);
    /* Radix has an encoded-domain path: every op ran. */
    /* Literals on and past both ends of the range. */
    const int64_t top = base + (int64_t)span - 1;
    assert_int_equal(filter_ops_match(d, c.values, n, base - 2, base + 5, 2) +
                         filter_ops_match(d, c.values, n, top - 5, top + 2, 2),
                     7 * 16);
    qv_decoder_close(d);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* The pairs kernel of the filter against digit-by-digit answers, at every
 * SIMD level, for every base its 16-bit division serves (19 between 214
 * and 254 it does not), every group count to 40 and a vector's 512;
 * a group at or above b^2 anywhere is flagged. */
static void test_pairs_cmp(void **state) {
    (void)state;
    const int level0 = qv__cpu_set_level(QV__CPU_AVX2);
    const int top_level = qv__cpu_set_level(level0);
    uint64_t s = 99;
    uint16_t g[512];
    uint64_t bits[17], want[17];
    int refused = 0;
    for (uint32_t b = 3; b <= 256; b++) {
        struct qv__pairs_cmp pc;
        const uint8_t a = (uint8_t)(rng_next(&s) % b), d = (uint8_t)(rng_next(&s) % b);
        if (!qv__radix_pairs_cmp_init(b, a, d, &pc)) {
            assert_true(b >= 214 && b < 256);
            refused++;
            continue;
        }
        for (int64_t ng = 0; ng <= 512; ng = ng < 40 ? ng + 1 : ng == 40 ? 512 : 513) {
            for (int64_t i = 0; i < ng; i++)
                g[i] = (uint16_t)(i % 7 == 0 ? b * b - 1 : i % 11 == 0 ? 0 : rng_next(&s) % (b * b));
            memset(want, 0, sizeof want);
            for (int64_t i = 0; i < 2 * ng; i++) {
                const uint32_t digit = i & 1 ? g[i / 2] / b : g[i / 2] % b;
                if ((uint8_t)(digit - a) <= d) want[i >> 6] |= UINT64_C(1) << (i & 63);
            }
            for (int level = QV__CPU_BASELINE; level <= top_level; level++) {
                qv__cpu_set_level(level);
                memset(bits, 0xa5, sizeof bits);
                assert_int_equal(qv__radix_pairs_cmp(&pc, g, ng, bits), 0);
                for (int64_t w = 0; w < (2 * ng + 63) / 64; w++) assert_int_equal(bits[w], want[w]);
                if (ng && b * b <= 65535) {
                    const int64_t at = (int64_t)(rng_next(&s) % (uint64_t)ng);
                    const uint16_t keep = g[at];
                    g[at] = (uint16_t)(b * b + rng_next(&s) % (65536 - b * b));
                    assert_int_not_equal(qv__radix_pairs_cmp(&pc, g, ng, bits), 0);
                    g[at] = keep;
                }
            }
            qv__cpu_set_level(level0);
        }
    }
    assert_int_equal(refused, 19); /* 214, 216, ... 254: no shift makes the division exact */
}

/* Hand-made nodes the spec calls corrupt: EIO naming the problem. */
static void test_corrupt_nodes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const uint64_t g[4] = {80, 10, 5, 0};
    static const struct {
        int64_t b, k, ng;
        int gpt;
        int64_t n;
        uint64_t g2; /* groups[2] */
        const char *msg;
    } bad[] = {
        {2, 2, 3, QV__PT_U16, 5, 5, "base 2"},
        {257, 2, 3, QV__PT_U16, 5, 5, "base 257"},
        {11, 1, 3, QV__PT_U16, 3, 5, "1 digits of base 11"},
        {11, 5, 3, QV__PT_U16, 15, 5, "5 digits of base 11"},
        {3, 11, 3, QV__PT_U16, 33, 5, "11 digits of base 3"},
        {11, 2, 3, QV__PT_U8, 5, 5, "u8"},
        {11, 2, 4, QV__PT_U16, 5, 5, "4 values"},
        {11, 2, 3, QV__PT_U16, 7, 5, "3 values"},
        {11, 2, 3, QV__PT_U16, 6, 121, "group 2 is 121, not below 11^2 = 121"},
        {11, 2, 3, QV__PT_U16, 5, 11, "the last group, 11, holds digits past the 5 values"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t gg[4];
        memcpy(gg, g, sizeof gg);
        gg[2] = bad[i].g2;
        struct qv_encoded e =
            hand_made(&env, QV__PT_U8, bad[i].b, bad[i].k, gg, bad[i].ng, bad[i].gpt, bad[i].n);
        uint8_t out[64];
        struct qv_decode_out o = {0};
        o.values = out;
        struct qv_error err = {0};
        assert_int_equal(qv_decode(e.data, e.size, QV_KIND_UINT8, 0, bad[i].n, env.r, &o, &err), EIO);
        if (!strstr(err.message, bad[i].msg)) fail_msg("case %zu: %s", i, err.message);
        qv_encoded_release(env.r, &e);
    }
    /* Bit flips in forced nodes of 3 and 11 values a digit. */
    for (uint64_t span = 3; span <= 11; span += 8) {
        struct col c = uniform(QV_KIND_INT64, 20000, span, 7, 21 + span);
        struct qv_encode_options o = {0};
        o.force = QV_ENC_RADIX;
        struct qv_encoded e = roundtrip(&env, &c.v, &o, 2, 21);
        corrupt_trials(&env, &e, QV_KIND_INT64, 20000, 300, 22 + span, 90, 40);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* Every allocation of a forced radix encode (under a reference) and of a
 * chosen one fails in turn: ENOMEM, nothing left charged. */
static void test_alloc_failures(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = uniform(QV_KIND_INT32, 20000, 11, 1000, 31);
    struct qv_encode_options o = {0};
    o.force = QV_ENC_RADIX;
    encode_alloc_failures(&env, &c.v, &o, "forced radix");
    encode_alloc_failures(&env, &c.v, NULL, "chosen radix");
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_examples), cmocka_unit_test(test_digits),
        cmocka_unit_test(test_forced_roundtrip), cmocka_unit_test(test_chosen),
        cmocka_unit_test(test_filter),        cmocka_unit_test(test_corrupt_nodes),
        cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_pairs_cmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
