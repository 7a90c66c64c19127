/*
 * Lessons (encoding/lesson.h): a string chunk's FSST training reported as a
 * lesson, and the lesson's table reused for a later chunk of the same kind
 * of text (no training: nothing learned again) but not for a chunk of other
 * text (trained there), every chunk decoding to its input; a chunk encoded
 * with the lesson it taught is the same bytes; other kinds, chunks too
 * small for FSST and tables that hardly compress their chunk teach nothing.
 */
#include "encoding/lesson.h"
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
    int rc = qv__encode_taught(v, NULL, use, learn, env->r, &enc, &err);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taught_and_reused),
        cmocka_unit_test(test_nothing_to_teach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
