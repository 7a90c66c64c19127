/*
 * Lessons (encoding/lesson.h): a string chunk's FSST training reported as a
 * lesson, and the lesson's table reused for a later chunk of the same kind
 * of text (no training: nothing learned again) but not for a chunk of other
 * text (trained there), every chunk decoding to its input; a chunk encoded
 * with the lesson it taught is the same bytes; other kinds, chunks too
 * small for FSST and tables that hardly compress their chunk teach nothing.
 * A compression context kept across encodes (qv__zcache) gives the same
 * bytes as an encode's own, is charged to its reservation, and after a
 * failed allocation the next encode makes a new one.
 */
#include "encoding/enc_internal.h"
#include "encoding/lesson.h"
#include "memory/memory_testing.h"
#include "test_enc_util.h"

/* Comment-like text from ten words (seeded), or, with other = 1, hex
 * digits and punctuation the words never use. */
static size_t words(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    size_t len = 10 + rng_next(s) % 60;
    fill_words(s, b, len);
    return len;
}
static size_t hexes(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    size_t len = 10 + rng_next(s) % 60;
    for (size_t j = 0; j < len; j++) b[j] = (uint8_t)"0123456789ABCDEF#%"[rng_next(s) % 18];
    return len;
}

/* Random bytes, which no symbol table compresses. */
static size_t noise(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    size_t len = 10 + rng_next(s) % 60;
    for (size_t j = 0; j < len; j++) b[j] = (uint8_t)rng_next(s);
    return len;
}

static struct qv_encoded taught(struct enc_env *env, const struct qv_values *v,
                                const struct qv__lesson *use, struct qv__lesson *learn) {
    struct qv_error err = {0};
    struct qv_encoded enc;
    int rc = qv__encode_taught(v, NULL, use, learn, NULL, env->r, &enc, &err);
    if (rc) fail_msg("encode: %s", err.message);
    return enc;
}

/* Every value of `in` decodes from enc. */
static void decodes(struct enc_env *env, const struct qv_values *in, const struct qv_encoded *enc) {
    struct qv_error err = {0};
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc->data, enc->size, in->kind, 0, in->count, env->r, &d, &err), 0);
    struct qv_decode_out o;
    out_alloc(&o, in, in->count);
    assert_int_equal(qv_decoder_decode_range(d, 0, in->count, &o, &err), 0);
    for (int64_t i = 0; i < in->count; i++) check_value(in, i, &o, i, "lesson");
    out_free(&o, env->r);
    qv_decoder_close(d);
}

static void test_taught_and_reused(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    /* About 2.3 MB each: large chunks (the teaching table's larger sample). */
    const int64_t n = 60000;
    struct col a = col_strings(QV_KIND_BINARY, n, words, 1);
    struct col b = col_strings(QV_KIND_LARGE_BINARY, n, words, 2);
    struct col c = col_strings(QV_KIND_BINARY, n, hexes, 3);
    static struct qv__lesson la, lb, lc;
    memset(&la, 0xAB, sizeof la); /* whatever was there is overwritten */
    struct qv_encoded ea = taught(&env, &a.v, NULL, &la);
    assert_int_equal(root_encoding(&ea), QV_ENC_FSST);
    assert_true(la.nsym > 0 && la.nsym <= QV__LESSON_SYMS);
    assert_true(la.ratio > 0 && la.ratio < 0.6);
    decodes(&env, &a.v, &ea);
    /* The teacher's own chunk with its lesson: the same table, the same bytes. */
    struct qv_encoded ea2 = taught(&env, &a.v, &la, NULL);
    assert_int_equal(ea2.size, ea.size);
    assert_memory_equal(ea2.data, ea.data, ea.size);
    /* The same text: the lesson's table is used, nothing trained. */
    struct qv_encoded eb = taught(&env, &b.v, &la, &lb);
    assert_int_equal(lb.nsym, 0);
    assert_int_equal(root_encoding(&eb), QV_ENC_FSST);
    decodes(&env, &b.v, &eb);
    /* Other text: the lesson's table compresses it worse than it did its
     * own, so the chunk trains its table (and reports it). */
    struct qv_encoded ec = taught(&env, &c.v, &la, &lc);
    assert_true(lc.nsym > 0);
    decodes(&env, &c.v, &ec);
    struct qv_encoded ec2 = taught(&env, &c.v, &la, NULL);
    decodes(&env, &c.v, &ec2);
    qv_encoded_release(env.r, &ea);
    qv_encoded_release(env.r, &ea2);
    qv_encoded_release(env.r, &eb);
    qv_encoded_release(env.r, &ec);
    qv_encoded_release(env.r, &ec2);
    col_free(&a);
    col_free(&b);
    col_free(&c);
    env_close(&env);
}

/* Encoding v with a lesson to learn leaves it empty (whatever it held);
 * with check_decode, the chunk also decodes to v. */
static void teaches_nothing(struct enc_env *env, const struct qv_values *v, int check_decode) {
    static struct qv__lesson l;
    l.nsym = 99;
    struct qv_encoded e = taught(env, v, NULL, &l);
    assert_int_equal(l.nsym, 0);
    if (check_decode) decodes(env, v, &e);
    qv_encoded_release(env->r, &e);
}

static void test_nothing_to_teach(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static struct qv__lesson l;
    /* Integers. */
    struct col ints = col_words(QV_KIND_INT64, 5000);
    for (int64_t i = 0; i < 5000; i++) ((int64_t *)ints.values)[i] = i * 7 % 1000;
    teaches_nothing(&env, &ints.v, 0);
    /* Strings too few bytes for FSST to be tried. */
    struct col few = col_strings(QV_KIND_BINARY, 20, words, 4);
    teaches_nothing(&env, &few.v, 1);
    /* A table that hardly compresses its own chunk (random bytes) is not
     * taught: kept against its own poor ratio, it would stand in for the
     * table of any later chunk. */
    struct col rnd = col_strings(QV_KIND_BINARY, 60000, noise, 6);
    teaches_nothing(&env, &rnd.v, 1);
    col_free(&rnd);
    /* An empty lesson is no lesson: the chunk is encoded as without one. */
    struct col a = col_strings(QV_KIND_BINARY, 3000, words, 5);
    struct qv_error err = {0};
    struct qv_encoded plain;
    assert_int_equal(qv_encode(&a.v, NULL, env.r, &plain, &err), 0);
    memset(&l, 0, sizeof l);
    struct qv_encoded e = taught(&env, &a.v, &l, NULL);
    assert_int_equal(e.size, plain.size);
    assert_memory_equal(e.data, plain.data, plain.size);
    qv_encoded_release(env.r, &e);
    qv_encoded_release(env.r, &plain);
    col_free(&ints);
    col_free(&few);
    col_free(&a);
    env_close(&env);
}

/* One encode of v with zc (or NULL), in compact mode or not. */
static int encode_with(struct enc_env *env, const struct qv_values *v, int compact,
                       struct qv__zcache *zc, struct qv_encoded *out, struct qv_error *err) {
    struct qv_encode_options o = {.compact = compact};
    return qv__encode_taught(v, &o, NULL, NULL, zc, env->r, out, err);
}

static void test_zcache_same_bytes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err = {0};
    /* Inputs whose encodes compress with zstd (the entropy stage's trials
     * and frames, string trials, compact mode's whole-chunk frames), in
     * sizes that make zstd grow its workspace and then use less of it. */
    struct col skew = col_words(QV_KIND_INT64, 40000);
    uint64_t sd = 7;
    for (int64_t i = 0; i < 40000; i++) {
        uint64_t r = rng_next(&sd) % 1000;
        ((int64_t *)skew.values)[i] = (int64_t)(r * r / 1000); /* skewed toward 0 */
    }
    struct col hours = col_words(QV_KIND_INT32, 5000);
    for (int64_t i = 0; i < 5000; i++) ((int32_t *)hours.values)[i] = (int32_t)(i % 24);
    struct col text = col_strings(QV_KIND_BINARY, 30000, words, 9);
    struct col small = col_strings(QV_KIND_BINARY, 300, hexes, 10);
    const struct qv_values *in[] = {&skew.v, &text.v, &hours.v, &small.v, &text.v, &skew.v};
    struct qv__zcache *zc;
    assert_int_equal(qv__zcache_create(env.pool, &zc, &err), 0);
    for (int compact = 0; compact <= 1; compact++)
        for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
            struct qv_encoded own, lent;
            if (encode_with(&env, in[i], compact, NULL, &own, &err)) fail_msg("%s", err.message);
            if (encode_with(&env, in[i], compact, zc, &lent, &err)) fail_msg("%s", err.message);
            assert_int_equal(lent.size, own.size);
            assert_memory_equal(lent.data, own.data, own.size);
            decodes(&env, in[i], &lent);
            qv_encoded_release(env.r, &own);
            qv_encoded_release(env.r, &lent);
        }
    /* The kept context and its workspace are charged to the pool. */
    const uint64_t with = qv_pool_used(env.pool);
    qv__zcache_destroy(zc);
    assert_true(qv_pool_used(env.pool) + 64 * 1024 < with);
    /* An allocation failing while a lent context compresses fails that
     * encode (ENOMEM, the zstd context named); the next encode with the
     * same cache makes a new context and gives the same bytes. Every
     * allocation of a compact encode (zstd frames and trials) is tried in
     * turn. */
    assert_int_equal(qv__zcache_create(env.pool, &zc, &err), 0);
    struct qv_encoded want;
    if (encode_with(&env, &hours.v, 1, NULL, &want, &err)) fail_msg("%s", err.message);
    int failures = 0, zstd_named = 0;
    for (uint64_t nth = 1;; nth++) {
        qv_error_clear(&err);
        struct qv_encoded got;
        qv__zcache_free(zc); /* so that every try makes the context again */
        qv_pool_inject_alloc_failure(env.pool, nth);
        int rc = encode_with(&env, &hours.v, 1, zc, &got, &err);
        qv_pool_inject_alloc_failure(env.pool, 0);
        if (rc) {
            assert_int_equal(rc, ENOMEM);
            failures++;
            zstd_named += strstr(err.message, "zstd: compression context") != NULL;
            if (encode_with(&env, &hours.v, 1, zc, &got, &err)) fail_msg("%s", err.message);
        }
        assert_int_equal(got.size, want.size);
        assert_memory_equal(got.data, want.data, want.size);
        qv_encoded_release(env.r, &got);
        if (!rc) break;
    }
    assert_true(failures > 0);
    assert_true(zstd_named > 0);
    qv_encoded_release(env.r, &want);
    qv__zcache_destroy(zc);
    col_free(&skew);
    col_free(&hours);
    col_free(&text);
    col_free(&small);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taught_and_reused),
        cmocka_unit_test(test_nothing_to_teach),
        cmocka_unit_test(test_zcache_same_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
