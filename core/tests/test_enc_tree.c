/*
 * Bit-packing kernels at every width and tail size, the encoding tree's
 * inspection API (walk, describe, names), and decoding from unaligned bytes.
 */
#include "test_enc_util.h"

#include "encoding/enc_internal.h"

static void test_bitpack_kernels(void **state) {
    (void)state;
    uint64_t s = 42;
    static const int64_t rems[] = {1, 2, 31, 32, 33, 500, 1023, 1024};
    uint64_t v[QV__VEC];
    uint32_t tmp[QV__VEC], o32[QV__VEC];
    uint64_t o64[QV__VEC];
    uint8_t *buf = malloc(128 * 64 + 64);
    for (unsigned w = 0; w <= 64; w++) {
        for (size_t ri = 0; ri < sizeof rems / sizeof rems[0]; ri++) {
            int64_t rem = rems[ri];
            for (int64_t i = 0; i < rem; i++) v[i] = rng_next(&s) & qv__mask(w);
            if (w && rem > 2) v[1] = qv__mask(w); /* extremes */
            uint64_t nb = qv__bitpack_vec_bytes(rem, w);
            assert_true(nb <= (uint64_t)128 * w);
            assert_int_equal(nb % 128, 0);
            memset(buf, 0xAB, 128 * 64 + 64);
            qv__pack_vec(v, rem, w, buf, tmp);
            for (uint64_t i = nb; i < nb + 64; i++) assert_int_equal(buf[i], 0xAB); /* no overrun */
            for (int64_t i = 0; i < rem; i++)
                if (qv__bitpack_get(buf, w, (unsigned)i) != v[i])
                    fail_msg("w=%u rem=%lld get(%lld)", w, (long long)rem, (long long)i);
            if (rem == QV__VEC) {
                uint64_t base = rng_next(&s);
                qv__unpack64(buf, w, o64, base);
                for (int i = 0; i < QV__VEC; i++) assert_true(o64[i] == v[i] + base);
                if (w <= 32) {
                    qv__unpack32((const uint32_t *)(void *)buf, w, o32, (uint32_t)base);
                    for (int i = 0; i < QV__VEC; i++) assert_true(o32[i] == (uint32_t)(v[i] + base));
                }
            }
        }
        assert_int_equal(qv__bitpack_bytes(3000, w), (uint64_t)2 * 128 * w + qv__bitpack_vec_bytes(952, w));
    }
    free(buf);
}

static void test_varints(void **state) {
    (void)state;
    uint8_t b[16];
    static const uint64_t vals[] = {0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX, UINT64_MAX >> 1};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        size_t n = qv__varint_put(b, vals[i]);
        assert_int_equal(n, qv__varint_size(vals[i]));
        size_t pos = 0;
        uint64_t got;
        assert_int_equal(qv__varint_get(b, n, &pos, &got), 0);
        assert_true(got == vals[i]);
        assert_int_equal(pos, n);
        pos = 0;
        if (n > 1) assert_int_equal(qv__varint_get(b, n - 1, &pos, &got), -1); /* truncated */
    }
    memset(b, 0xff, sizeof b); /* overlong */
    size_t pos = 0;
    uint64_t got;
    assert_int_equal(qv__varint_get(b, sizeof b, &pos, &got), -1);
}

struct walk_log {
    int n;
    struct qv_enc_node_info info[64];
    char names[64][16], roles[64][16], types[64][16];
};

static int visit(void *ctx, const struct qv_enc_node_info *info) {
    struct walk_log *l = ctx;
    if (l->n == 64) return 7;
    l->info[l->n] = *info;
    snprintf(l->names[l->n], 16, "%s", info->name);
    snprintf(l->roles[l->n], 16, "%s", info->role);
    snprintf(l->types[l->n], 16, "%s", info->type);
    l->n++;
    return 0;
}

static size_t g_mode(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    static const char *m[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK"};
    const char *w = m[rng_next(s) % 5];
    memcpy(b, w, strlen(w));
    return strlen(w);
}

static void test_walk_and_describe(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 20000, g_mode, 3);
    struct qv_encoded e = roundtrip(&env, &c.v, NULL, 4, 1);
    struct walk_log log;
    memset(&log, 0, sizeof log);
    struct qv_error err;
    assert_int_equal(qv_enc_walk(e.data, e.size, env.r, visit, &log, &err), 0);
    assert_true(log.n >= 3);
    assert_string_equal(log.names[0], "dict");
    assert_string_equal(log.types[0], "binary");
    assert_string_equal(log.roles[0], "");
    assert_int_equal(log.info[0].count, 20000);
    assert_int_equal(log.info[0].size, e.size);
    assert_int_equal(log.info[0].depth, 0);
    assert_string_equal(log.roles[1], "codes");
    assert_string_equal(log.types[1], "u32");
    assert_int_equal(log.info[1].depth, 1);
    /* Sizes add up: a node's size is its own part plus its children's
     * (a framed node's first frame, shown expanded, is inside its bytes). */
    for (int i = 0; i < log.n; i++) {
        uint64_t kids = 0;
        for (int j = i + 1; j < log.n && log.info[j].depth > log.info[i].depth; j++)
            if (log.info[j].depth == log.info[i].depth + 1 &&
                log.info[j].compressed == log.info[i].compressed)
                kids += log.info[j].size;
        assert_int_equal(log.info[i].own_size + kids, log.info[i].size);
    }
    char d[512];
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, d, sizeof d, &err), 0);
    assert_non_null(strstr(d, "dict(codes="));
    assert_int_equal(d[strlen(d) - 1], ')');
    char small[10];
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, small, sizeof small, &err), EOVERFLOW);
    assert_int_equal(strlen(small), sizeof small - 1);
    /* Stop early. */
    memset(&log, 0, sizeof log);
    log.n = 64;
    assert_int_equal(qv_enc_walk(e.data, e.size, env.r, visit, &log, &err), 7);
    /* Without a reservation: still walks. */
    memset(&log, 0, sizeof log);
    assert_int_equal(qv_enc_walk(e.data, e.size, NULL, visit, &log, &err), 0);
    assert_true(log.n >= 3);
    qv_encoded_release(env.r, &e);

    /* zstd frames: expanded with a reservation, leaves without. */
    struct qv_encode_options o = {0};
    o.force = QV_ENC_ZSTD;
    e = roundtrip(&env, &c.v, &o, 4, 2);
    memset(&log, 0, sizeof log);
    assert_int_equal(qv_enc_walk(e.data, e.size, env.r, visit, &log, &err), 0);
    assert_string_equal(log.names[0], "zstd");
    assert_true(log.n >= 2);
    assert_string_equal(log.roles[1], "frame0");
    assert_true(log.info[1].compressed);
    memset(&log, 0, sizeof log);
    assert_int_equal(qv_enc_walk(e.data, e.size, NULL, visit, &log, &err), 0);
    assert_int_equal(log.n, 1);
    assert_int_equal(qv_reservation_used(env.r), e.capacity > 0 ? qv_reservation_used(env.r) : 0);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

static void test_names(void **state) {
    (void)state;
    for (int i = 1; i < QV_ENC_COUNT; i++)
        assert_int_equal(qv_encoding_from_name(qv_encoding_name(i)), i);
    assert_int_equal(qv_encoding_from_name("nope"), -1);
    assert_string_equal(qv_encoding_name(99), "?");
    assert_string_equal(qv_value_kind_name(QV_KIND_LARGE_BINARY), "large_binary");
    assert_string_equal(qv_value_kind_name((enum qv_value_kind)77), "?");
}

/* The registry: every id 1..QV_ENC_COUNT - 1 has the record whose id it
 * is, with the hooks every encoding must have; id 0 (auto), reserved and
 * out-of-range ids have none (a bounds-checked lookup, any byte allowed). */
static void test_registry(void **state) {
    (void)state;
    assert_int_equal(qv__encoding_slots(), QV_ENC_COUNT);
    assert_null(qv__encoding_of(QV_ENC_AUTO));
    for (unsigned id = QV_ENC_COUNT; id < 300; id++) assert_null(qv__encoding_of(id));
    for (unsigned id = 1; id < QV_ENC_COUNT; id++) {
        const struct qv__encoding *c = qv__encoding_of(id);
        assert_non_null(c);
        assert_int_equal(c->id, id);
        assert_non_null(c->validate);
        assert_non_null(c->build);
        assert_true(c->dec_word || c->dec_bool || c->dec_bin);
        assert_string_equal(qv_encoding_name((int)id), c->name);
        for (unsigned j = 1; j < id; j++)
            if (qv__encoding_of(j)) assert_string_not_equal(qv__encoding_of(j)->name, c->name);
    }
}

/* A node naming an id without a record is corrupt (kind CORRUPT), for
 * every such byte. */
static void test_unknown_ids_are_corrupt(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    uint8_t node[8] __attribute__((aligned(8))) = {0, 3 /* u32 */, 0, 0, 0, 0, 0, 0};
    for (unsigned id = 0; id < 256; id++) {
        if (qv__encoding_of(id)) continue;
        node[0] = (uint8_t)id;
        struct qv_error err;
        struct qv_decode_out o = {0};
        assert_int_equal(qv_decode(node, sizeof node, QV_KIND_UINT32, 0, 0, env.r, &o, &err), EIO);
        assert_int_equal(err.kind, QV_ERROR_CORRUPT);
        assert_non_null(strstr(err.message, "unknown encoding id"));
    }
    env_close(&env);
}

static void test_unaligned_bytes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_words(QV_KIND_INT64, 5000);
    for (int64_t i = 0; i < 5000; i++) ((int64_t *)c.values)[i] = i * 3 - 77;
    struct qv_error err;
    struct qv_encoded e;
    assert_int_equal(qv_encode(&c.v, NULL, env.r, &e, &err), 0);
    uint8_t *shifted = malloc(e.size + 3);
    memcpy(shifted + 3, e.data, e.size);
    int64_t *out = malloc(5000 * 8);
    struct qv_decode_out o = {out, 0, NULL, 0, 0};
    assert_int_equal(qv_decode(shifted + 3, e.size, QV_KIND_INT64, 0, 5000, env.r, &o, &err), 0);
    assert_memory_equal(out, c.values, 5000 * 8);
    char d[256];
    assert_int_equal(qv_enc_describe(shifted + 3, e.size, env.r, d, sizeof d, &err), 0);
    free(shifted);
    free(out);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bitpack_kernels), cmocka_unit_test(test_varints),
        cmocka_unit_test(test_walk_and_describe), cmocka_unit_test(test_names),
        cmocka_unit_test(test_unaligned_bytes), cmocka_unit_test(test_registry),
        cmocka_unit_test(test_unknown_ids_are_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
