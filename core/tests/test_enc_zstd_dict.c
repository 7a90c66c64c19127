/*
 * zstd_dict (id 16): strings in small zstd frames sharing a dictionary
 * trained per chunk. Round trips (full, ranges, takes) of both binary
 * kinds, forced and chosen by the cascade, with and without a dictionary;
 * empty strings, empty frames and strings longer than a frame; corrupted
 * dictionaries, frame tables, frames and lengths give clean errors; an
 * allocation failure at every allocation of an encode and a decode gives
 * ENOMEM with the reservation back where it was.
 */
#include "test_enc_util.h"
#include "memory/memory_testing.h"

/* Free text like TPC-H's comments: sentences drawn from a vocabulary, so
 * phrases repeat across the chunk far beyond what 255 short symbols hold. */
static const char *const words[] = {
    "furiously", "carefully", "quickly",  "slyly",    "blithely", "regular",  "final",
    "express",   "ironic",    "pending",  "special",  "bold",     "even",     "silent",
    "unusual",   "requests",  "deposits", "packages", "accounts", "foxes",    "ideas",
    "theodolites", "pinto beans", "instructions", "dependencies", "excuses", "platelets",
    "asymptotes", "courts",   "dolphins", "multipliers", "sauternes", "warthogs", "frets",
    "dinos",     "attainments", "somas",  "sheaves",  "gifts",    "sleep",    "wake",
    "are",       "haggle",    "nag",      "use",      "boost",    "affix",    "detect",
    "integrate", "maintain",  "nod",      "was",      "poach",    "across the", "along the",
    "above the", "according to the", "after the", "against the", "among the", "beneath the",
};
#define NWORDS (sizeof words / sizeof words[0])

static size_t g_comment(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    size_t want = 10 + rng_next(s) % 34, l = 0;
    while (l < want) {
        const char *w = words[rng_next(s) % NWORDS];
        size_t wl = strlen(w);
        if (l + wl + 1 > cap) break;
        memcpy(b + l, w, wl);
        l += wl;
        b[l++] = ' ';
    }
    return l < want ? l : want;
}

/* Strings of 1-3 sentences from a pool of 400 (each 4-10 words): phrases
 * longer than FSST's symbols repeat across the chunk, as in log lines,
 * URLs and templated text, where a shared dictionary wins clearly. */
static char pool_txt[400][160];
static size_t g_sentences(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    if (!pool_txt[0][0]) {
        uint64_t ps = 1234;
        for (int k = 0; k < 400; k++) {
            size_t l = 0;
            int nw = 4 + (int)(rng_next(&ps) % 7);
            for (int w = 0; w < nw; w++) {
                const char *x = words[rng_next(&ps) % NWORDS];
                size_t xl = strlen(x);
                if (l + xl + 2 >= sizeof pool_txt[k]) break;
                memcpy(pool_txt[k] + l, x, xl);
                l += xl;
                pool_txt[k][l++] = w + 1 < nw ? ' ' : '.';
            }
            pool_txt[k][l] = 0;
        }
    }
    size_t l = 0;
    int ns = 1 + (int)(rng_next(s) % 3);
    for (int k = 0; k < ns; k++) {
        const char *x = pool_txt[rng_next(s) % 400];
        size_t xl = strlen(x);
        if (l + xl + 1 > cap) break;
        memcpy(b + l, x, xl);
        l += xl;
        b[l++] = ' ';
    }
    return l;
}

/* Every 7th string empty, some long (a few KiB), the rest comments. */
static size_t g_mixed(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    if (i % 7 == 3) return 0;
    if (i % 97 == 5) {
        size_t want = 1000 + rng_next(s) % 3000, l = 0;
        while (l < want && l + 64 < cap) l += g_comment(i, s, b + l, cap - l);
        return l;
    }
    return g_comment(i, s, b, cap);
}

static size_t g_empty(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)s;
    (void)b;
    (void)cap;
    return 0;
}

/* Random bytes: incompressible. */
static size_t g_random(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    size_t l = 1 + rng_next(s) % 60;
    if (l > cap) l = cap;
    for (size_t k = 0; k < l; k++) b[k] = (uint8_t)rng_next(s);
    return l;
}

/* Length of the root's dictionary (buffer 0), read from the node header
 * (docs/format.md 5.1): id, type, count, nparams, nbufs, buffer lengths. */
static uint64_t varint(const uint8_t *p, size_t *at) {
    uint64_t v = 0;
    for (unsigned sh = 0; sh < 64; sh += 7) {
        uint8_t c = p[(*at)++];
        v |= (uint64_t)(c & 0x7F) << sh;
        if (!(c & 0x80)) break;
    }
    return v;
}
static uint64_t root_dict_bytes(const struct qv_encoded *e) {
    assert_int_equal(e->data[0], QV_ENC_ZSTD_DICT);
    size_t at = 2;
    (void)varint(e->data, &at); /* count */
    assert_int_equal(e->data[at++], 0); /* no parameters */
    assert_int_equal(e->data[at++], 3); /* three buffers */
    return varint(e->data, &at);
}

/* Forced round trip; want_dict: 1 a trained dictionary, 0 none, -1 either. */
static void roundtrip_forced(enum qv_value_kind k, int64_t n, str_gen g, uint64_t seed,
                             int want_dict) {
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(k, n, g, seed);
    struct qv_encode_options o = {0};
    o.force = QV_ENC_ZSTD_DICT;
    struct qv_encoded e = roundtrip(&env, &c.v, &o, 24, seed * 3 + 1);
    assert_int_equal(root_encoding(&e), QV_ENC_ZSTD_DICT);
    uint64_t dict = root_dict_bytes(&e);
    if (want_dict == 1) assert_true(dict > 0);
    if (want_dict == 0) assert_int_equal(dict, 0);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

static void test_forced_text(void **state) {
    (void)state;
    /* ~2 MiB of text: a trained dictionary and over a hundred frames. */
    roundtrip_forced(QV_KIND_BINARY, 80000, g_comment, 11, 1);
    roundtrip_forced(QV_KIND_LARGE_BINARY, 30000, g_comment, 12, 1);
}

static void test_forced_shapes(void **state) {
    (void)state;
    /* Too little text to train on: frames without a dictionary. */
    roundtrip_forced(QV_KIND_BINARY, 0, g_comment, 1, 0);
    roundtrip_forced(QV_KIND_BINARY, 1, g_comment, 2, 0);
    roundtrip_forced(QV_KIND_BINARY, 100, g_comment, 3, 0);
    /* A few frames, trained or not (either must read back). */
    roundtrip_forced(QV_KIND_LARGE_BINARY, 1025, g_mixed, 4, -1);
    /* Only empty strings: frames with no bytes at all. */
    roundtrip_forced(QV_KIND_BINARY, 9000, g_empty, 5, 0);
    /* Empty strings, long strings and comments, with a dictionary. */
    roundtrip_forced(QV_KIND_BINARY, 40000, g_mixed, 6, 1);
    /* Incompressible bytes (forced: kept though not smaller). */
    roundtrip_forced(QV_KIND_BINARY, 5000, g_random, 7, -1);
}

/* One string longer than a frame (16 KiB) between short ones: a frame of
 * its own. */
static void test_long_string(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 3000;
    struct col c = col_strings(QV_KIND_BINARY, n, g_comment, 21);
    /* Rebuild with value 1500 replaced by 100 KB of text. */
    size_t total = (size_t)((int32_t *)c.values)[n] + 100000;
    uint8_t *data = malloc(total);
    int32_t *offs = malloc((size_t)(n + 1) * 4);
    size_t at = 0;
    uint64_t s = 5;
    for (int64_t i = 0; i < n; i++) {
        offs[i] = (int32_t)at;
        if (i == 1500) {
            size_t end = at + 100000;
            while (at < end) {
                uint8_t buf[64];
                size_t l = g_comment(i, &s, buf, sizeof buf);
                if (l > end - at) l = end - at;
                memcpy(data + at, buf, l);
                at += l;
            }
        } else {
            int32_t a = ((int32_t *)c.values)[i], b = ((int32_t *)c.values)[i + 1];
            memcpy(data + at, c.data + a, (size_t)(b - a));
            at += (size_t)(b - a);
        }
    }
    offs[n] = (int32_t)at;
    struct qv_values v = {.kind = QV_KIND_BINARY, .count = n, .values = offs, .data = data};
    struct qv_encode_options o = {0};
    o.force = QV_ENC_ZSTD_DICT;
    struct qv_encoded e = roundtrip(&env, &v, &o, 30, 77);
    assert_true(root_dict_bytes(&e) > 0);
    qv_encoded_release(env.r, &e);
    free(offs);
    free(data);
    col_free(&c);
    env_close(&env);
}

/* In compact mode the cascade picks zstd_dict for templated text large
 * enough to train on, and the result is smaller than FSST's; the default
 * mode keeps FSST's decode speed and never picks it. */
static void test_chosen(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 40000, g_sentences, 31);
    struct qv_encode_options compact = {.compact = 1};
    struct qv_encoded e = roundtrip(&env, &c.v, &compact, 16, 9);
    /* Compact mode may still wrap the tree in one lz4/zstd frame (the
     * lengths child compresses): zstd_dict is the strings' node inside. */
    char desc[512];
    struct qv_error er;
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, desc, sizeof desc, &er), 0);
    assert_non_null(strstr(desc, "zstd_dict("));
    struct qv_encoded f = encode_forced(&env, &c.v, QV_ENC_FSST);
    assert_true(e.size < f.size);
    qv_encoded_release(env.r, &f);
    qv_encoded_release(env.r, &e);
    e = roundtrip(&env, &c.v, NULL, 16, 12);
    assert_int_not_equal(root_encoding(&e), QV_ENC_ZSTD_DICT);
    qv_encoded_release(env.r, &e);
    /* Not allowed: never chosen. */
    struct qv_encode_options o = {.compact = 1};
    o.allowed = ~QV_ENC_BIT(QV_ENC_ZSTD_DICT);
    e = roundtrip(&env, &c.v, &o, 2, 10);
    assert_int_not_equal(root_encoding(&e), QV_ENC_ZSTD_DICT);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    /* Random bytes: nothing compresses them, zstd_dict is not chosen. */
    c = col_strings(QV_KIND_BINARY, 50000, g_random, 32);
    e = roundtrip(&env, &c.v, NULL, 2, 11);
    assert_int_not_equal(root_encoding(&e), QV_ENC_ZSTD_DICT);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Decodes a whole chunk, ranges and a take; the errno of the first
 * failure (0 when all succeed). */
static int try_decode(struct enc_env *env, const uint8_t *bytes, size_t size,
                      const struct qv_values *in) {
    struct qv_error err;
    struct qv_decoder *d;
    int rc = qv_decoder_open(bytes, size, in->kind, 0, in->count, env->r, &d, &err);
    if (rc) return rc;
    struct qv_decode_out o;
    out_alloc(&o, in, in->count);
    rc = qv_decoder_decode_range(d, 0, in->count, &o, &err);
    if (!rc && in->count > 10) {
        int64_t rows[4] = {0, 3, in->count / 2, in->count - 1};
        out_free(&o, env->r);
        out_alloc(&o, in, 4);
        rc = qv_decoder_take(d, rows, 4, &o, &err);
    }
    if (rc && rc != ENOMEM && rc != EIO)
        fail_msg("decode gave %d (%s), want 0, EIO or ENOMEM", rc, err.message);
    if (rc == EIO && !strstr(err.message, "corrupt"))
        fail_msg("EIO without naming the corruption: %s", err.message);
    out_free(&o, env->r);
    qv_decoder_close(d);
    return rc;
}

/* Bit flips over every region of the node (header, dictionary, frame
 * table, frames, lengths) and truncations: 0 (a flip that still decodes:
 * zstd frames carry no checksum, so a flipped literal decodes to other
 * bytes of the same lengths), EIO or ENOMEM, never a crash or an overrun. */
static void test_corrupt(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 20000, g_comment, 41);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_ZSTD_DICT);
    assert_true(root_dict_bytes(&e) > 0);
    uint8_t *copy = malloc(e.size);
    uint64_t s = 99;
    int eio = 0;
    const uint64_t base = qv_reservation_used(env.r);
    for (int k = 0; k < 600; k++) {
        memcpy(copy, e.data, e.size);
        /* Dense flips near the start (header, dictionary, table), then
         * anywhere. */
        size_t at = k < 300 ? (size_t)(rng_next(&s) % (e.size < 70000 ? e.size : 70000))
                            : (size_t)(rng_next(&s) % e.size);
        copy[at] ^= (uint8_t)(1u << (rng_next(&s) % 8));
        eio += try_decode(&env, copy, e.size, &c.v) == EIO;
        assert_int_equal(qv_reservation_used(env.r), base);
    }
    assert_true(eio > 0);
    for (size_t cut = 8; cut < e.size; cut += e.size / 50 + 8) {
        assert_int_equal(try_decode(&env, e.data, cut & ~(size_t)7, &c.v), EIO);
    }
    free(copy);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Named corruptions: a frame's content size disagreeing with the lengths,
 * a frame table running backwards, a dictionary that is not one. */
static void test_corrupt_named(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 20000, g_comment, 51);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_ZSTD_DICT);
    size_t at = 2;
    (void)varint(e.data, &at);
    at += 2;
    const uint64_t dlen = varint(e.data, &at), tlen = varint(e.data, &at);
    (void)varint(e.data, &at); /* frames */
    assert_int_equal(e.data[at++], 1); /* one child */
    (void)varint(e.data, &at);
    const size_t dict_at = (at + 7) & ~(size_t)7, table_at = dict_at + ((dlen + 7) & ~7ull);
    assert_true(tlen >= 16);
    uint8_t *copy = malloc(e.size);
    struct qv_error err;
    struct qv_decoder *d;
    struct qv_decode_out o;
    /* The dictionary's magic number kept, its tables destroyed. */
    memcpy(copy, e.data, e.size);
    memset(copy + dict_at + 8, 0xFF, 64);
    assert_int_equal(try_decode(&env, copy, e.size, &c.v), EIO);
    /* Frame 1's value end before frame 0's. */
    memcpy(copy, e.data, e.size);
    memset(copy + table_at + 12, 0, 4);
    assert_int_equal(qv_decoder_open(copy, e.size, QV_KIND_BINARY, 0, c.v.count, env.r, &d, &err),
                     EIO);
    assert_non_null(strstr(err.message, "zstd_dict"));
    /* Frame 0's compressed end moved: its bytes no longer a zstd frame of
     * the size the lengths give. */
    memcpy(copy, e.data, e.size);
    uint32_t ce;
    memcpy(&ce, copy + table_at, 4);
    ce -= 3;
    memcpy(copy + table_at, &ce, 4);
    assert_int_equal(qv_decoder_open(copy, e.size, QV_KIND_BINARY, 0, c.v.count, env.r, &d, &err),
                     0);
    out_alloc(&o, &c.v, 5);
    assert_int_equal(qv_decoder_decode_range(d, 0, 5, &o, &err), EIO);
    assert_non_null(strstr(err.message, "frame 0"));
    out_free(&o, env.r);
    qv_decoder_close(d);
    /* The data decodes under the wrong kind's count: the open refuses. */
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_BINARY, 0, c.v.count + 1, env.r, &d,
                                     &err),
                     EIO);
    free(copy);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* An allocation failure at every allocation of an encode (forced and
 * chosen) and of a decode. */
static void test_alloc_failures(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 6000, g_comment, 61);
    for (int forced = 0; forced < 2; forced++) {
        struct qv_encode_options o = {0};
        o.force = forced ? QV_ENC_ZSTD_DICT : QV_ENC_AUTO;
        encode_alloc_failures(&env, &c.v, &o, forced ? "encode (forced)" : "encode (chosen)");
    }
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_ZSTD_DICT);
    uint64_t base = qv_reservation_used(env.r);
    uint64_t before = qv_pool_alloc_count(env.pool);
    assert_int_equal(try_decode(&env, e.data, e.size, &c.v), 0);
    uint64_t allocs = qv_pool_alloc_count(env.pool) - before;
    for (uint64_t nth = 1; nth <= allocs; nth++) {
        qv_pool_inject_alloc_failure(env.pool, nth);
        int rc = try_decode(&env, e.data, e.size, &c.v);
        qv_pool_inject_alloc_failure(env.pool, 0);
        if (rc != ENOMEM)
            fail_msg("decode: allocation %llu of %llu gave %d", (unsigned long long)nth,
                     (unsigned long long)allocs, rc);
        assert_int_equal(qv_reservation_used(env.r), base);
    }
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Layout of a forced zstd_dict chunk: where its frame table and frames
 * start (docs/format.md 5.1), for the tests that aim at one frame. */
struct zd_layout {
    size_t table_at, frames_at;
    int64_t nframes;
};
static struct zd_layout zd_layout_of(const struct qv_encoded *e) {
    struct zd_layout l;
    size_t at = 2;
    (void)varint(e->data, &at);
    at += 2;
    const uint64_t dlen = varint(e->data, &at), tlen = varint(e->data, &at);
    (void)varint(e->data, &at);
    assert_int_equal(e->data[at++], 1);
    (void)varint(e->data, &at);
    const size_t dict_at = (at + 7) & ~(size_t)7;
    l.table_at = dict_at + ((dlen + 7) & ~7ull);
    l.frames_at = l.table_at + ((tlen + 7) & ~7ull);
    l.nframes = (int64_t)(tlen / 8);
    return l;
}
static uint32_t zd_get32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
/* First value of frame f. */
static int64_t zd_frame_first(const struct qv_encoded *e, const struct zd_layout *l, int64_t f) {
    return f ? zd_get32(e->data + l->table_at + (size_t)(f - 1) * 8 + 4) : 0;
}

/* One decoder through a sequence mixing partial and whole frames: a range
 * starting inside frame 0 and covering frames 1 and 2 whole (decoded
 * straight into the output, after bytes already there), the whole frame 1
 * again (not cached by the direct path), part of frame 1 (reloaded into
 * the cache), frame 1 whole while cached, takes across frames, then the
 * whole chunk; both binary kinds. */
static void test_direct_frame_sequences(void **state) {
    (void)state;
    for (int large = 0; large < 2; large++) {
        struct enc_env env;
        env_open(&env);
        const enum qv_value_kind k = large ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY;
        struct col c = col_strings(k, 20000, g_comment, 81 + (uint64_t)large);
        struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_ZSTD_DICT);
        struct zd_layout l = zd_layout_of(&e);
        assert_true(l.nframes >= 5);
        const int64_t f1 = zd_frame_first(&e, &l, 1), f2 = zd_frame_first(&e, &l, 2),
                      f3 = zd_frame_first(&e, &l, 3), f4 = zd_frame_first(&e, &l, 4);
        const int64_t seq[][2] = {
            {f1 - 5, f3},     {f1, f2},         {f1 + 2, f1 + 4}, {f1, f2},     {f2, f2 + 1},
            {f1 - 1, f4},     {f3 - 1, f3 + 1}, {f2, f3},         {0, c.v.count},
            {f4 - 1, c.v.count}, {0, f1},
        };
        struct qv_error err;
        struct qv_decoder *d;
        assert_int_equal(qv_decoder_open(e.data, e.size, k, 0, c.v.count, env.r, &d, &err), 0);
        for (size_t q = 0; q < sizeof seq / sizeof seq[0]; q++) {
            const int64_t a = seq[q][0], n = seq[q][1] - a;
            struct qv_decode_out o;
            out_alloc(&o, &c.v, n);
            if (q % 2 == 0) {
                o.data = qv_alloc(env.r, 10, &err);
                o.data_capacity = 10;
                o.data_size = 7;
                memset(o.data, 0xAB, 7);
            }
            const size_t pre = o.data_size;
            if (qv_decoder_decode_range(d, a, n, &o, &err))
                fail_msg("step %zu [%lld,+%lld): %s", q, (long long)a, (long long)n, err.message);
            for (int64_t i = 0; i < n; i++) check_value(&c.v, a + i, &o, i, "sequence");
            for (size_t i = 0; i < pre; i++) assert_int_equal(o.data[i], 0xAB);
            const int64_t first = large ? ((int64_t *)o.values)[0] : ((int32_t *)o.values)[0];
            assert_int_equal(first, (int64_t)pre);
            out_free(&o, env.r);
            /* A take after each range: rows of frames 1 and 3, one row of 2. */
            int64_t rows[6] = {f1, f1 + 1, f2 + 3, f3, f3 + 2, f4 - 1};
            out_alloc(&o, &c.v, 6);
            assert_int_equal(qv_decoder_take(d, rows, 6, &o, &err), 0);
            for (int64_t i = 0; i < 6; i++) check_value(&c.v, rows[i], &o, i, "take");
            out_free(&o, env.r);
        }
        qv_decoder_close(d);
        qv_encoded_release(env.r, &e);
        col_free(&c);
        env_close(&env);
    }
}

/* A frame of garbage (its header kept or not) or cut short, met after a
 * partial decode of the frame before it and in the middle of a range of
 * whole frames: EIO naming the frame, the output's bytes and offsets
 * before it untouched, nothing leaked, and the other frames still decode
 * on the same decoder. */
static void test_direct_frame_corrupt(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 20000, g_comment, 91);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_ZSTD_DICT);
    struct zd_layout l = zd_layout_of(&e);
    assert_true(l.nframes >= 5);
    const int64_t f1 = zd_frame_first(&e, &l, 1), f2 = zd_frame_first(&e, &l, 2),
                  f3 = zd_frame_first(&e, &l, 3), f4 = zd_frame_first(&e, &l, 4);
    const size_t cb = l.frames_at + zd_get32(e.data + l.table_at + 1 * 8),
                 ce = l.frames_at + zd_get32(e.data + l.table_at + 2 * 8);
    assert_true(ce - cb > 64);
    uint8_t *copy = malloc(e.size);
    for (int how = 0; how < 4; how++) {
        memcpy(copy, e.data, e.size);
        if (how == 0) memset(copy + cb + 14, 0xFF, ce - cb - 14);        /* garbage blocks */
        else if (how == 1) memset(copy + cb, 0x5A, ce - cb);             /* no header at all */
        else if (how == 2) memset(copy + cb + (ce - cb) / 2, 0, (ce - cb) / 2); /* tail zeroed */
        else {
            /* Frame 2's content size one byte larger than its lengths. */
            uint8_t fhd = copy[cb + 4];
            unsigned fcs_code = fhd >> 6, single = (fhd >> 5) & 1, did = fhd & 3;
            size_t at = cb + 5 + (single ? 0 : 1) + (did == 3 ? 4 : did);
            assert_true(fcs_code >= 1 || single);
            copy[at] = (uint8_t)(copy[at] + 1);
        }
        const uint64_t base = qv_reservation_used(env.r);
        struct qv_error err;
        struct qv_decoder *d;
        assert_int_equal(qv_decoder_open(copy, e.size, QV_KIND_BINARY, 0, c.v.count, env.r, &d,
                                         &err),
                         0);
        struct qv_decode_out o;
        /* Part of frame 1 first (cached), then frames 1 (rest), 2, 3. */
        out_alloc(&o, &c.v, 3);
        assert_int_equal(qv_decoder_decode_range(d, f1 + 1, 3, &o, &err), 0);
        out_free(&o, env.r);
        for (int v = 0; v < 2; v++) {
            const int64_t a = v ? f2 : f1 - 2, n = f4 - a;
            out_alloc(&o, &c.v, n);
            o.data = qv_alloc(env.r, 16, &err);
            o.data_capacity = 16;
            o.data_size = 5;
            memset(o.data, 0xCD, 5);
            int rc = qv_decoder_decode_range(d, a, n, &o, &err);
            if (rc != EIO) fail_msg("corruption %d: decode gave %d (%s)", how, rc, err.message);
            assert_non_null(strstr(err.message, "corrupt"));
            assert_non_null(strstr(err.message, "frame 2"));
            for (int i = 0; i < 5; i++) assert_int_equal(o.data[i], 0xCD);
            out_free(&o, env.r);
        }
        /* The frames around it are whole. */
        const int64_t ok[][2] = {{f1 - 2, f2}, {f1, f2}, {f3, f4}, {f3 + 1, f4 + 2}, {0, 4}};
        for (size_t q = 0; q < sizeof ok / sizeof ok[0]; q++) {
            const int64_t a = ok[q][0], n = ok[q][1] - a;
            out_alloc(&o, &c.v, n);
            if (qv_decoder_decode_range(d, a, n, &o, &err))
                fail_msg("corruption %d, range %zu: %s", how, q, err.message);
            for (int64_t i = 0; i < n; i++) check_value(&c.v, a + i, &o, i, "around");
            out_free(&o, env.r);
        }
        int64_t rows[3] = {f1, f2 + 1, f3};
        out_alloc(&o, &c.v, 3);
        assert_int_equal(qv_decoder_take(d, rows, 3, &o, &err), EIO);
        out_free(&o, env.r);
        qv_decoder_close(d);
        assert_int_equal(qv_reservation_used(env.r), base);
    }
    free(copy);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Predicates on a zstd_dict chunk (decoded one vector at a time): EQ and
 * PREFIX on a window with a selection agree with comparing the input. */
static void test_filter(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 30000;
    struct col c = col_strings(QV_KIND_BINARY, n, g_sentences, 71);
    struct qv_encoded e = encode_forced(&env, &c.v, QV_ENC_ZSTD_DICT);
    struct qv_error err;
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_BINARY, 0, n, env.r, &d, &err), 0);
    const int32_t *off = c.values;
    const int64_t start = 1234, len = 20000;
    uint64_t *sel = calloc((size_t)len / 64 + 1, 8), *out = calloc((size_t)len / 64 + 1, 8);
    for (int64_t i = 0; i < len; i++)
        if (i % 3) sel[i >> 6] |= UINT64_C(1) << (i & 63);
    /* The literal: value 5000 (EQ) and its first 12 bytes (PREFIX). */
    const uint8_t *lit = c.data + off[5000];
    const size_t lit_len = (size_t)(off[5001] - off[5000]);
    for (int op = 0; op < 2; op++) {
        struct qv_enc_pred p = {.op = op ? QV_ENC_OP_PREFIX : QV_ENC_OP_EQ, .bytes = lit,
                                .len = op ? (lit_len < 12 ? lit_len : 12) : lit_len};
        memset(out, 0, (size_t)(len / 64 + 1) * 8);
        int rc = qv_decoder_filter(d, start, len, &p, sel, out, &err);
        if (rc) fail_msg("filter: %s", err.message);
        int64_t hits = 0;
        for (int64_t i = 0; i < len; i++) {
            const int64_t r = start + i;
            const size_t l = (size_t)(off[r + 1] - off[r]);
            int want = (sel[i >> 6] >> (i & 63) & 1) &&
                       (op ? l >= p.len && !memcmp(c.data + off[r], lit, p.len)
                           : l == p.len && !memcmp(c.data + off[r], lit, p.len));
            int got = (int)(out[i >> 6] >> (i & 63) & 1);
            if (want != got) fail_msg("op %d row %lld: %d, expected %d", op, (long long)r, got, want);
            hits += got;
        }
        assert_true(hits > 0);
    }
    free(sel);
    free(out);
    qv_decoder_close(d);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Not binary: refused when forced. */
static void test_refuses_other_kinds(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_words(QV_KIND_INT64, 100);
    struct qv_encode_options o = {0};
    o.force = QV_ENC_ZSTD_DICT;
    struct qv_encoded e;
    struct qv_error err;
    assert_int_equal(qv_encode(&c.v, &o, env.r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "zstd_dict"));
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forced_text),    cmocka_unit_test(test_forced_shapes),
        cmocka_unit_test(test_long_string),    cmocka_unit_test(test_chosen),
        cmocka_unit_test(test_corrupt),        cmocka_unit_test(test_corrupt_named),
        cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_refuses_other_kinds),
        cmocka_unit_test(test_filter),
        cmocka_unit_test(test_direct_frame_sequences),
        cmocka_unit_test(test_direct_frame_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
