/*
 * FSST decoding paths: the four-codes-at-a-time stream over blocks of
 * short strings and the one-string path of strings too long for a block;
 * escapes (bytes the table has no symbol for), empty strings, strings of
 * exactly 8, 16 and 17 bytes (the symbol copy is 16 bytes wide), ranges and
 * takes, int32 and int64 offsets into exactly sized offset buffers; and
 * codes that must fail with EIO: a code beyond the symbol table, an escape
 * as the last code of a string (in the stream its literal would be the
 * next string's first code) and of the chunk.
 */
#include "base/varint.h"
#include "test_enc_util.h"

static size_t g_shapes(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)cap;
    size_t len;
    switch (i % 11) {
    case 0: return 0;
    case 1: len = 8; break;
    case 2: len = 16; break;
    case 3: len = 17; break;
    case 4: len = 1 + rng_next(s) % 3; break;
    case 5: /* escapes: bytes no text has */
        len = 1 + rng_next(s) % 40;
        for (size_t j = 0; j < len; j++)
            b[j] = (uint8_t)(rng_next(s) % 3 == 0 ? 0x80 + rng_next(s) % 0x7F : 'a' + rng_next(s) % 26);
        return len;
    case 6: len = 15 + rng_next(s) % 4; break;
    default: len = 10 + rng_next(s) % 34; break;
    }
    fill_words(s, b, len);
    return len;
}

/* Strings of any length (col_strings caps them at 4 KiB): gen writes
 * string i into b (room for `cap` bytes). */
typedef size_t (*big_gen)(int64_t i, uint64_t *s, uint8_t *b, size_t cap);
static struct col col_big(enum qv_value_kind k, int64_t n, big_gen g, size_t cap, uint64_t seed) {
    struct col c;
    memset(&c, 0, sizeof c);
    size_t used = 0;
    c.data = malloc(cap * (size_t)n + 1);
    c.values = malloc((size_t)(n + 1) * 8);
    uint64_t s = seed;
    for (int64_t i = 0; i <= n; i++) {
        if (k == QV_KIND_BINARY) ((int32_t *)c.values)[i] = (int32_t)used;
        else ((int64_t *)c.values)[i] = (int64_t)used;
        if (i < n) used += g(i, &s, c.data + used, cap);
    }
    c.v.kind = k;
    c.v.count = n;
    c.v.values = c.values;
    c.v.data = c.data;
    return c;
}

/* A few strings far longer than a stream block of codes: random letters
 * (short symbols) and random bytes (many escapes). */
static size_t g_long(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    if (i % 50 == 7 || i % 50 == 31) {
        for (size_t j = 0; j < cap; j++)
            b[j] = (uint8_t)(i % 50 == 7 ? rng_next(s) : 'a' + rng_next(s) % 26);
        return cap;
    }
    return g_shapes(i, s, b, cap);
}

static int64_t off_of(const struct qv_decode_out *o, enum qv_value_kind k, int64_t i) {
    return k == QV_KIND_BINARY ? ((const int32_t *)o->values)[i] : ((const int64_t *)o->values)[i];
}

/* Decodes [start, start + n) (rows == NULL) or a take of rows[0..n) into an
 * offsets buffer of exactly n + 1 slots, after `pre` bytes already in the
 * data buffer, and compares with the input. */
static void check_out(struct qv_decoder *d, const struct col *c, int64_t start, const int64_t *rows,
                      int64_t n, size_t pre, struct enc_env *env) {
    const enum qv_value_kind k = c->v.kind;
    const size_t ow = k == QV_KIND_BINARY ? 4 : 8;
    struct qv_decode_out o = {0};
    o.values = malloc((size_t)(n + 1) * ow);
    struct qv_error err = {0};
    if (pre) {
        o.data = qv_alloc(env->r, pre, &err);
        assert_non_null(o.data);
        memset(o.data, 'x', pre);
        o.data_capacity = o.data_size = pre;
    }
    int rc = rows ? qv_decoder_take(d, rows, n, &o, &err) : qv_decoder_decode_range(d, start, n, &o, &err);
    if (rc) fail_msg("%s of %lld from %lld: %s", rows ? "take" : "range", (long long)n, (long long)start, err.message);
    assert_int_equal(off_of(&o, k, 0), (int64_t)pre);
    for (int64_t i = 0; i < n; i++) {
        int64_t row = rows ? rows[i] : start + i;
        int64_t a0 = off_at(&c->v, row), a1 = off_at(&c->v, row + 1);
        int64_t b0 = off_of(&o, k, i), b1 = off_of(&o, k, i + 1);
        if (a1 - a0 != b1 - b0 || b1 > (int64_t)o.data_size)
            fail_msg("row %lld: length %lld, decoded %lld", (long long)row, (long long)(a1 - a0), (long long)(b1 - b0));
        if (a1 > a0 && memcmp(c->data + a0, o.data + b0, (size_t)(a1 - a0)))
            fail_msg("row %lld differs", (long long)row);
    }
    assert_int_equal(off_of(&o, k, n), (int64_t)o.data_size);
    free(o.values);
    if (o.data) qv_free(env->r, o.data, o.data_capacity);
}

static void check_column(struct enc_env *env, const struct col *c, uint64_t seed) {
    struct qv_encoded e = encode_forced(env, &c->v, QV_ENC_FSST);
    const int64_t n = c->v.count;
    struct qv_error err = {0};
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(e.data, e.size, c->v.kind, 0, n, env->r, &d, &err), 0);
    check_out(d, c, 0, NULL, n, 0, env);
    check_out(d, c, 0, NULL, n, 5, env);
    uint64_t s = seed;
    for (int t = 0; t < 60; t++) {
        int64_t len = 1 + (int64_t)(rng_next(&s) % (t % 2 ? 40 : 3000));
        if (len > n) len = n;
        int64_t start = t < 5 ? n - len : (int64_t)(rng_next(&s) % (uint64_t)(n - len + 1));
        check_out(d, c, start, NULL, len, t % 3 ? 0 : 3, env);
        int64_t rows[300], k = 1 + (int64_t)(rng_next(&s) % 300);
        for (int64_t i = 0; i < k; i++) rows[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        sort_rows(rows, k);
        check_out(d, c, 0, rows, k, 0, env);
    }
    check_out(d, c, n, NULL, 0, 0, env);
    qv_decoder_close(d);
    qv_encoded_release(env->r, &e);
}

static void test_string_shapes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {1, 11, 1023, 1025, 20000};
    for (int wide = 0; wide < 2; wide++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            struct col c = col_strings(wide ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY, ns[i], g_shapes, 40 + i);
            check_column(&env, &c, 7 + i);
            col_free(&c);
        }
    env_close(&env);
}

/* The encoder compresses a chunk as four runs of strings side by side and
 * then moves the runs together: chunks of a few strings (runs of zero or
 * one string), and runs that start or end with empty strings or hold only
 * empty strings, must still decode to their input (and, in debug builds,
 * give each string the codes it gets alone: a QV_DCHECK in the encoder). */
static size_t g_lanes(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    /* Empty strings around the run boundaries of every small count. */
    if (i % 4 == 0 || i % 7 == 3) return 0;
    return g_shapes(i, s, b, cap);
}
static size_t g_empty(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i, (void)s, (void)b, (void)cap;
    return 0;
}
static size_t g_one_long(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    /* All the bytes in the last string: the first runs are empty strings. */
    if (i < 6) return 0;
    size_t len = 3000;
    for (size_t j = 0; j < len; j++) b[j] = (uint8_t)('a' + rng_next(s) % 7);
    (void)cap;
    return len;
}

static void test_lanes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    for (int wide = 0; wide < 2; wide++) {
        enum qv_value_kind k = wide ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY;
        for (int64_t n = 1; n <= 13; n++) {
            struct col c = col_strings(k, n, g_lanes, 100 + (uint64_t)n);
            check_column(&env, &c, 5 + (uint64_t)n);
            col_free(&c);
        }
        for (int64_t n = 1; n <= 9; n += 4) {
            struct col c = col_strings(k, n, g_empty, 1);
            check_column(&env, &c, 3);
            col_free(&c);
        }
        struct col c = col_big(k, 7, g_one_long, 3000, 9);
        check_column(&env, &c, 11);
        col_free(&c);
        c = col_strings(k, 4099, g_lanes, 77);
        check_column(&env, &c, 12);
        col_free(&c);
    }
    env_close(&env);
}

/* A range decode of a vector or more sizes its output once (the chunk's
 * raw bytes, or their share by the range's code bytes) instead of
 * doubling: the buffer it hands back is within the estimate's spare
 * (1/32 and 4 KiB), a tight bound of the last blocks, and the size class
 * it is rounded up to (at most 1/8 more) of what it holds. */
static void test_range_output_sized(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_LARGE_BINARY, 20000, g_shapes, 31);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_FSST);
    struct qv_error err = {0};
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(e.data, e.size, c.v.kind, 0, 20000, env.r, &d, &err), 0);
    const int64_t parts[][2] = {{0, 20000}, {1000, 15000}, {5000, 5000}, {18900, 1100}};
    int64_t *offs = malloc(20001 * 8);
    for (int p = 0; p < 4; p++) {
        const int64_t lo = parts[p][0], m = parts[p][1];
        struct qv_decode_out o = {.values = offs};
        assert_int_equal(qv_decoder_decode_range(d, lo, m, &o, &err), 0);
        const size_t bytes = (size_t)(off_at(&c.v, lo + m) - off_at(&c.v, lo));
        assert_int_equal(o.data_size, bytes);
        assert_memory_equal(o.data, c.data + off_at(&c.v, lo), bytes);
        if (o.data_capacity > (bytes + bytes / 16 + 8192) / 8 * 9 + 64)
            fail_msg("range [%lld, +%lld): %zu bytes in a buffer of %zu", (long long)lo,
                     (long long)m, bytes, o.data_capacity);
        qv_free(env.r, o.data, o.data_capacity);
    }
    free(offs);
    qv_decoder_close(d);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Ranges of about the same bytes get buffers of the same size: a scan's
 * batches of one column then reuse each other's blocks through the pool's
 * block cache (it matches sizes exactly). Sized to the byte, a streaming
 * scan of lineitem SF1 peaked 40 MiB higher. */
static void test_range_output_size_classes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_LARGE_BINARY, 20000, g_shapes, 31);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_FSST);
    struct qv_error err = {0};
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(e.data, e.size, c.v.kind, 0, 20000, env.r, &d, &err), 0);
    int64_t *offs = malloc(20001 * 8);
    size_t caps[4], sizes[4];
    for (int p = 0; p < 4; p++) {
        struct qv_decode_out o = {.values = offs};
        assert_int_equal(qv_decoder_decode_range(d, 4096 * p, 4096, &o, &err), 0);
        caps[p] = o.data_capacity;
        sizes[p] = o.data_size;
        qv_free(env.r, o.data, o.data_capacity);
    }
    int distinct_sizes = 0, distinct_caps = 0;
    for (int p = 0; p < 4; p++) {
        int seen_size = 0, seen_cap = 0;
        for (int q = 0; q < p; q++) {
            seen_size |= sizes[q] == sizes[p];
            seen_cap |= caps[q] == caps[p];
        }
        distinct_sizes += !seen_size;
        distinct_caps += !seen_cap;
    }
    /* Four ranges with bytes of their own, within a few percent of each
     * other: at most two capacities (a class boundary may fall between). */
    assert_int_equal(distinct_sizes, 4);
    assert_true(distinct_caps <= 2);
    free(offs);
    qv_decoder_close(d);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

static void test_long_strings(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    for (int wide = 0; wide < 2; wide++) {
        struct col c = col_big(wide ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY, 300, g_long, 30000, 3);
        check_column(&env, &c, 13);
        col_free(&c);
    }
    env_close(&env);
}

/* Where the root's parameters and buffers are (docs/format.md: the node
 * header). */
struct layout {
    int64_t params[8];
    size_t buf_off[4], buf_len[4];
};

static void root_layout(const uint8_t *p, size_t size, struct layout *l) {
    size_t pos = 2;
    uint64_t v = 0;
    assert_int_equal(qv__varint_get(p, size, &pos, &v), 0); /* count */
    unsigned np = p[pos++];
    for (unsigned i = 0; i < np; i++) {
        assert_int_equal(qv__varint_get(p, size, &pos, &v), 0);
        l->params[i] = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    }
    unsigned nb = p[pos++];
    for (unsigned i = 0; i < nb; i++) {
        assert_int_equal(qv__varint_get(p, size, &pos, &v), 0);
        l->buf_len[i] = (size_t)v;
    }
    unsigned nc = p[pos++];
    for (unsigned i = 0; i < nc; i++) assert_int_equal(qv__varint_get(p, size, &pos, &v), 0);
    pos = (pos + 7) & ~(size_t)7;
    for (unsigned i = 0; i < nb; i++) {
        l->buf_off[i] = pos;
        pos += (l->buf_len[i] + 7) & ~(size_t)7;
    }
    assert_true(pos <= size);
}

/* Decodes [start, start + n) of a corrupted copy; returns the code. */
static int decode_bad(struct enc_env *env, const uint8_t *p, size_t size, int64_t count,
                      int64_t start, int64_t n) {
    struct qv_error err = {0};
    struct qv_decoder *d;
    int rc = qv_decoder_open(p, size, QV_KIND_BINARY, 0, count, env->r, &d, &err);
    if (rc) return rc;
    struct qv_decode_out o = {0};
    o.values = malloc((size_t)(n + 1) * 4);
    rc = qv_decoder_decode_range(d, start, n, &o, &err);
    free(o.values);
    if (o.data) qv_free(env->r, o.data, o.data_capacity);
    qv_decoder_close(d);
    return rc;
}

static size_t g_a(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)s;
    (void)cap;
    b[0] = 'a';
    return 1;
}
static size_t g_letters(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    for (size_t j = 0; j < cap; j++) b[j] = (uint8_t)('a' + rng_next(s) % 2);
    return cap;
}

static void test_corrupt_codes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    /* Short strings of one code each (the stream path). */
    const int64_t n = 3000;
    struct col c = col_strings(QV_KIND_BINARY, n, g_a, 1);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_FSST);
    struct layout l = {0};
    root_layout(e.data, e.size, &l);
    assert_int_equal(l.buf_len[1], (size_t)n); /* one code a string */
    const int64_t nsym = l.params[0];
    assert_true(nsym >= 1 && nsym < 255);
    uint8_t *bad = malloc(e.size);
    uint8_t *codes = bad + l.buf_off[1];
    assert_int_equal(decode_bad(&env, e.data, e.size, n, 0, n), 0);
    /* A code beyond the table, at the start, in the middle and at the end
     * of the 4-code groups. */
    static const int64_t at[] = {0, 1, 2, 3, 5, 1500, 2998, 2999};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        memcpy(bad, e.data, e.size);
        codes[at[i]] = (uint8_t)nsym;
        assert_int_equal(decode_bad(&env, bad, e.size, n, 0, n), EIO);
        assert_int_equal(decode_bad(&env, bad, e.size, n, at[i], 1), EIO);
        if (at[i] > 0) assert_int_equal(decode_bad(&env, bad, e.size, n, 0, at[i]), 0);
        /* An escape as a string's only code: its literal would be the next
         * string's code (or beyond the last). */
        codes[at[i]] = 255;
        assert_int_equal(decode_bad(&env, bad, e.size, n, 0, n), EIO);
        assert_int_equal(decode_bad(&env, bad, e.size, n, at[i], 1), EIO);
        if (at[i] + 2 <= n) assert_int_equal(decode_bad(&env, bad, e.size, n, at[i], 2), EIO);
    }
    qv_encoded_release(env.r, &e);
    col_free(&c);
    /* One string far longer than a stream block: its last code made an
     * escape, and (when the table has room) a code beyond the table. */
    c = col_big(QV_KIND_BINARY, 1, g_letters, 60000, 2);
    e = encode_forced(&env, &c.v, QV_ENC_FSST);
    root_layout(e.data, e.size, &l);
    assert_true(l.buf_len[1] > 8192);
    assert_int_equal(decode_bad(&env, e.data, e.size, 1, 0, 1), 0);
    bad = realloc(bad, e.size);
    codes = bad + l.buf_off[1];
    memcpy(bad, e.data, e.size);
    size_t last = 0;
    for (size_t p = 0; p < l.buf_len[1]; p += codes[p] == 255 ? 2 : 1) last = p;
    /* Two letters: the table has a symbol for each, no escapes. */
    assert_int_not_equal(codes[last], 255);
    codes[last] = 255;
    assert_int_equal(decode_bad(&env, bad, e.size, 1, 0, 1), EIO);
    if (l.params[0] < 255) {
        memcpy(bad, e.data, e.size);
        codes[l.buf_len[1] / 2] = (uint8_t)l.params[0];
        assert_int_equal(decode_bad(&env, bad, e.size, 1, 0, 1), EIO);
    }
    free(bad);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Words that share their first three bytes, as text does ("pending ",
 * "pendant ", ...): the lookup holds one 3+ byte symbol per hash of its
 * first three bytes, so the table is filled from the candidates whose slot
 * is still free. All 255 codes are used (before, a third of them were
 * dropped here, and lineitem's l_comment got 174-192 symbols), and the
 * column still round-trips. */
static size_t g_prefixed(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i, (void)cap;
    size_t len = 0;
    for (int w = 0, nw = 4 + (int)(rng_next(s) % 6); w < nw; w++) {
        /* 512 words: 64 prefixes of three letters, 8 endings each. */
        uint64_t k = rng_next(s) % 512, p = k % 64, e = k / 64;
        b[len++] = (uint8_t)('a' + p % 4 * 5);
        b[len++] = (uint8_t)('b' + p / 4 % 4 * 6);
        b[len++] = (uint8_t)('c' + p / 16 * 3);
        for (uint64_t j = 0; j < 2 + e % 5; j++) b[len++] = (uint8_t)('d' + (e * 7 + j * 3) % 22);
        b[len++] = ' ';
    }
    return len;
}

static void test_table_filled(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    /* A chunk under 512 KiB and one over (their training budgets differ:
     * fsst.c's SAMPLE_BYTES). */
    static const int64_t ns[] = {5000, 20000};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        struct col c = col_strings(QV_KIND_BINARY, ns[i], g_prefixed, 5);
        struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_FSST);
        struct layout l;
        root_layout(e.data, e.size, &l);
        /* 166 and 138 symbols before the table was filled past collisions,
         * 244 with only the best 510 candidates ranked. */
        assert_int_equal(l.params[0], 255);
        qv_encoded_release(env.r, &e);
        check_column(&env, &c, 11 + i);
        col_free(&c);
    }
    env_close(&env);
}

/* Training's scratch follows the sample, not its largest size: a small
 * chunk (4,096 strings, about 150 KiB) trains and encodes within a budget of
 * 2.5 MiB, where 3.5 MiB of candidate tables were once charged for any
 * chunk (a writer of six such columns needed a 9 MB limit, 2.9 MB now). */
static void test_small_chunk_budget(void **state) {
    (void)state;
    struct qv_error err;
    struct qv_pool_options po = {.name = "fsst-budget", .limit = 5u << 19};
    struct qv_pool *pool;
    struct qv_reservation *r;
    assert_int_equal(qv_pool_create(&po, &pool, &err), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &r, &err), 0);
    struct col c = col_strings(QV_KIND_BINARY, 4096, g_prefixed, 9);
    struct qv_encode_options o = {.force = QV_ENC_FSST};
    struct qv_encoded e;
    int rc = qv_encode(&c.v, &o, r, &e, &err);
    if (rc) fail_msg("encode under 2.5 MiB: %s", err.message);
    struct enc_env env = {pool, r};
    struct layout l;
    root_layout(e.data, e.size, &l);
    assert_true(l.params[0] > 100); /* a trained table, not a degenerate one */
    qv_encoded_release(r, &e);
    check_column(&env, &c, 21);
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_chunk_budget),
        cmocka_unit_test(test_string_shapes),
        cmocka_unit_test(test_long_strings),
        cmocka_unit_test(test_range_output_sized),
        cmocka_unit_test(test_range_output_size_classes),
        cmocka_unit_test(test_lanes),
        cmocka_unit_test(test_corrupt_codes),
        cmocka_unit_test(test_table_filled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
