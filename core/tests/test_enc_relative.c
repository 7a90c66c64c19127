/* The relative encoding (17) on its own: values stored as differences
 * against a reference chunk's decoder, for every integer kind, through
 * full, range and take decodes; the errors of a relative decoder without
 * (or with a wrong) reference; the shape rules (root only, one child of
 * the same type); forcing it through qv_encode; no encoded-domain filter. */
#include "test_enc_util.h"

#include "encoding/relative.h"
#include "memory/memory_testing.h"

static const enum qv_value_kind int_kinds[] = {
    QV_KIND_INT8,  QV_KIND_UINT8,  QV_KIND_INT16, QV_KIND_UINT16,
    QV_KIND_INT32, QV_KIND_UINT32, QV_KIND_INT64, QV_KIND_UINT64,
};

static void store(void *p, unsigned w, int64_t i, uint64_t v) {
    memcpy((uint8_t *)p + (size_t)i * w, &v, w);
}
static uint64_t load(const void *p, unsigned w, int64_t i) {
    uint64_t v = 0;
    memcpy(&v, (const uint8_t *)p + (size_t)i * w, w);
    return v;
}

/* A reference chunk and a relative chunk over it, both open. */
struct pair {
    struct qv_encoded ref_enc, rel_enc;
    struct qv_decoder *ref, *rel;
    uint8_t *want; /* the dependent's values */
    unsigned w;
    int64_t n;
};

static void pair_open(struct enc_env *env, enum qv_value_kind kind, int64_t n, uint64_t seed,
                      int64_t ref_node, struct pair *p) {
    struct qv_error err;
    const unsigned w = kind_width(kind, 0);
    memset(p, 0, sizeof *p);
    p->w = w;
    p->n = n;
    uint8_t *ref = malloc((size_t)(n ? n : 1) * w), *diff = malloc((size_t)(n ? n : 1) * w);
    p->want = malloc((size_t)(n ? n : 1) * w);
    uint64_t s = seed, acc = rng_next(&s);
    for (int64_t i = 0; i < n; i++) {
        /* Sorted-ish dates as the reference, small signed offsets (and a few
         * wild ones that wrap) as the differences. */
        acc += rng_next(&s) % 3;
        uint64_t d = (rng_next(&s) % 61) - 30;
        if (rng_next(&s) % 97 == 0) d = rng_next(&s);
        store(ref, w, i, acc);
        store(diff, w, i, d);
        store(p->want, w, i, acc + d);
    }
    struct qv_values rv = {.kind = kind, .count = n, .values = ref};
    assert_int_equal(qv_encode(&rv, NULL, env->r, &p->ref_enc, &err), 0);
    struct qv_values dv = {.kind = kind, .count = n, .values = diff};
    if (qv__relative_encode(&dv, ref_node, NULL, env->r, &p->rel_enc, &err))
        fail_msg("relative encode: %s", err.message);
    free(ref);
    free(diff);
    assert_int_equal(qv_decoder_open(p->ref_enc.data, p->ref_enc.size, kind, 0, n, env->r, &p->ref,
                                     &err),
                     0);
    if (qv_decoder_open(p->rel_enc.data, p->rel_enc.size, kind, 0, n, env->r, &p->rel, &err))
        fail_msg("open relative: %s", err.message);
    assert_int_equal(qv_decoder_reference_node(p->rel), ref_node);
    assert_int_equal(qv_decoder_reference_node(p->ref), -1);
}

static void pair_close(struct enc_env *env, struct pair *p) {
    qv_decoder_close(p->rel);
    qv_decoder_close(p->ref);
    qv_encoded_release(env->r, &p->ref_enc);
    qv_encoded_release(env->r, &p->rel_enc);
    free(p->want);
}

static void test_roundtrip_every_kind(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t sizes[] = {0, 1, 1023, 1024, 5000, 70000};
    for (size_t ki = 0; ki < sizeof int_kinds / sizeof int_kinds[0]; ki++) {
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            struct pair p;
            struct qv_error err;
            const int64_t n = sizes[si];
            pair_open(&env, int_kinds[ki], n, 11 + ki * 7 + si, 3, &p);
            assert_int_equal(qv_decoder_set_reference(p.rel, p.ref, &err), 0);
            uint8_t *got = malloc((size_t)(n ? n : 1) * p.w + 8);
            struct qv_decode_out o = {.values = got};
            if (qv_decoder_decode_range(p.rel, 0, n, &o, &err))
                fail_msg("%s n=%lld: %s", qv_value_kind_name(int_kinds[ki]), (long long)n, err.message);
            assert_memory_equal(got, p.want, (size_t)n * p.w);
            /* Ranges, including ones that straddle the decoder's steps. */
            uint64_t s = 5 + si;
            for (int t = 0; n && t < 20; t++) {
                int64_t a = (int64_t)(rng_next(&s) % (uint64_t)n);
                int64_t m = (int64_t)(rng_next(&s) % (uint64_t)(n - a + 1));
                assert_int_equal(qv_decoder_decode_range(p.rel, a, m, &o, &err), 0);
                assert_memory_equal(got, p.want + (size_t)a * p.w, (size_t)m * p.w);
            }
            /* Takes: sorted, with repeats, across vectors. */
            int64_t rows[300];
            int64_t k = 0;
            for (int64_t r = 0; n && r < n && k < 300; r += (int64_t)(rng_next(&s) % 700)) {
                rows[k++] = r;
                if (k < 300 && rng_next(&s) % 5 == 0) rows[k++] = r;
            }
            assert_int_equal(qv_decoder_take(p.rel, rows, k, &o, &err), 0);
            for (int64_t i = 0; i < k; i++)
                assert_int_equal(load(got, p.w, i), load(p.want, p.w, rows[i]));
            free(got);
            pair_close(&env, &p);
        }
    }
    env_close(&env);
}

static void test_without_reference(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct pair p;
    struct qv_error err;
    pair_open(&env, QV_KIND_INT32, 3000, 1, 42, &p);
    int32_t out[16];
    struct qv_decode_out o = {.values = out};
    assert_int_equal(qv_decoder_decode_range(p.rel, 0, 16, &o, &err), EINVAL);
    assert_non_null(strstr(err.message, "node 42"));
    int64_t rows[2] = {3, 2000};
    assert_int_equal(qv_decoder_take(p.rel, rows, 2, &o, &err), EINVAL);
    assert_non_null(strstr(err.message, "not attached"));
    /* One-shot decodes cannot attach one: a clear error, not a crash. */
    int32_t *all = malloc(3000 * 4);
    struct qv_decode_out ao = {.values = all};
    assert_int_equal(qv_decode(p.rel_enc.data, p.rel_enc.size, QV_KIND_INT32, 0, 3000, env.r, &ao,
                               &err),
                     EINVAL);
    free(all);
    /* Bad attachments. */
    assert_int_equal(qv_decoder_set_reference(p.rel, NULL, &err), EINVAL);
    assert_int_equal(qv_decoder_set_reference(p.rel, p.rel, &err), EINVAL);
    assert_int_equal(qv_decoder_set_reference(p.ref, p.rel, &err), EINVAL);
    assert_non_null(strstr(err.message, "not relative"));
    assert_int_equal(qv_decoder_set_reference(NULL, p.ref, &err), EINVAL);
    pair_close(&env, &p);
    env_close(&env);
}

static void test_mismatched_references(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    struct pair p, q, r64;
    pair_open(&env, QV_KIND_INT32, 2048, 2, 1, &p);
    pair_open(&env, QV_KIND_INT32, 2047, 3, 1, &q);
    pair_open(&env, QV_KIND_UINT32, 2048, 4, 1, &r64);
    /* Another count: corrupt (the footer said both are the row group's). */
    assert_int_equal(qv_decoder_set_reference(p.rel, q.ref, &err), EIO);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    assert_non_null(strstr(err.message, "2047"));
    /* Another kind of the same width: refused too. */
    assert_int_equal(qv_decoder_set_reference(p.rel, r64.ref, &err), EIO);
    /* A relative reference: no chains. */
    assert_int_equal(qv_decoder_set_reference(p.rel, r64.rel, &err), EIO);
    assert_int_equal(qv_decoder_set_reference(p.rel, q.rel, &err), EIO);
    assert_non_null(strstr(err.message, "chains"));
    /* Nothing attached: still refuses to decode. */
    int32_t out[4];
    struct qv_decode_out o = {.values = out};
    assert_int_equal(qv_decoder_decode_range(p.rel, 0, 4, &o, &err), EINVAL);
    /* The right one works after the wrong ones. */
    assert_int_equal(qv_decoder_set_reference(p.rel, p.ref, &err), 0);
    assert_int_equal(qv_decoder_decode_range(p.rel, 0, 4, &o, &err), 0);
    assert_memory_equal(out, p.want, 16);
    pair_close(&env, &p);
    pair_close(&env, &q);
    pair_close(&env, &r64);
    env_close(&env);
}

/* A zigzag root (encoding 6) over the given subtree, by hand (format.md 5.2). */
static size_t wrap_zigzag(const uint8_t *child, size_t child_size, uint8_t pt, uint64_t count,
                          uint8_t *out) {
    size_t p = 0;
    out[p++] = 6;
    out[p++] = pt;
    do {
        out[p++] = (uint8_t)((count & 0x7f) | (count >= 0x80 ? 0x80 : 0));
        count >>= 7;
    } while (count);
    out[p++] = 0; /* params */
    out[p++] = 0; /* buffers */
    out[p++] = 1; /* children */
    uint64_t cs = child_size;
    do {
        out[p++] = (uint8_t)((cs & 0x7f) | (cs >= 0x80 ? 0x80 : 0));
        cs >>= 7;
    } while (cs);
    while (p & 7) out[p++] = 0;
    memcpy(out + p, child, child_size);
    return p + child_size;
}

static void test_shape_rules(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    struct pair p;
    pair_open(&env, QV_KIND_INT32, 100, 9, 5, &p);
    /* Under another node it would pair with the wrong values: corrupt. */
    uint8_t *buf = calloc(1, p.rel_enc.size + 64);
    size_t size = wrap_zigzag(p.rel_enc.data, p.rel_enc.size, 3, 100, buf);
    struct qv_decoder *d = NULL;
    assert_int_equal(qv_decoder_open(buf, size, QV_KIND_INT32, 0, 100, env.r, &d, &err), EIO);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    assert_non_null(strstr(err.message, "root"));
    free(buf);
    /* The child's type must be the node's: flip the child's type byte. */
    uint8_t *bad = malloc(p.rel_enc.size);
    memcpy(bad, p.rel_enc.data, p.rel_enc.size);
    /* Header: id, type, count (1 byte), nparams, param (1 byte), nbufs,
     * nchildren, child size (1-2 bytes), padding to 8; the child follows. */
    size_t child_at = (bad[7] & 0x80) ? 16 : 8;
    assert_int_equal(bad[0], QV_ENC_RELATIVE);
    bad[child_at + 1] = 4; /* u64 */
    assert_int_equal(qv_decoder_open(bad, p.rel_enc.size, QV_KIND_INT32, 0, 100, env.r, &d, &err),
                     EIO);
    /* A negative reference node. */
    memcpy(bad, p.rel_enc.data, p.rel_enc.size);
    assert_int_equal(bad[4], 10); /* zig-zag of 5 */
    bad[4] = 1;                   /* -1 */
    assert_int_equal(qv_decoder_open(bad, p.rel_enc.size, QV_KIND_INT32, 0, 100, env.r, &d, &err),
                     EIO);
    assert_non_null(strstr(err.message, "out of range"));
    free(bad);
    /* Other kinds than integers are refused when encoding. */
    float f[4] = {1, 2, 3, 4};
    struct qv_values fv = {.kind = QV_KIND_FLOAT32, .count = 4, .values = f};
    struct qv_encoded e = {0};
    assert_int_equal(qv__relative_encode(&fv, 0, NULL, env.r, &e, &err), EINVAL);
    pair_close(&env, &p);
    env_close(&env);
}

static void test_forced_through_qv_encode(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    int32_t v[100];
    for (int i = 0; i < 100; i++) v[i] = i * 3;
    struct qv_values in = {.kind = QV_KIND_INT32, .count = 100, .values = v};
    struct qv_encode_options o = {.force = QV_ENC_RELATIVE};
    struct qv_encoded e = {0};
    assert_int_equal(qv_encode(&in, &o, env.r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "reference"));
    assert_null(e.data);
    /* The cascade never picks it on its own. */
    o.force = QV_ENC_AUTO;
    assert_int_equal(qv_encode(&in, &o, env.r, &e, &err), 0);
    assert_int_not_equal(e.data[0], QV_ENC_RELATIVE);
    qv_encoded_release(env.r, &e);
    assert_string_equal(qv_encoding_name(QV_ENC_RELATIVE), "relative");
    assert_int_equal(qv_encoding_from_name("relative"), QV_ENC_RELATIVE);
    env_close(&env);
}

static void test_no_encoded_filter(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    struct pair p;
    pair_open(&env, QV_KIND_INT64, 3000, 21, 0, &p);
    assert_int_equal(qv_decoder_set_reference(p.rel, p.ref, &err), 0);
    struct qv_enc_pred pred = {.op = QV_ENC_OP_GE, .lo = 0};
    uint64_t out[47];
    assert_int_equal(qv_decoder_filter(p.rel, 0, 3000, &pred, NULL, out, &err), ENOTSUP);
    pair_close(&env, &p);
    env_close(&env);
}

static void test_compact_and_describe(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    int64_t n = 20000;
    int32_t *d = malloc((size_t)n * 4);
    uint64_t s = 77;
    for (int64_t i = 0; i < n; i++) d[i] = (int32_t)(rng_next(&s) % 30) + 1;
    struct qv_values dv = {.kind = QV_KIND_INT32, .count = n, .values = d};
    struct qv_encode_options o = {.compact = 1};
    struct qv_encoded e = {0};
    assert_int_equal(qv__relative_encode(&dv, 10, &o, env.r, &e, &err), 0);
    char desc[512];
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, desc, sizeof desc, &err), 0);
    assert_non_null(strstr(desc, "relative(ref=10"));
    /* 1..30: 5 bits a value, well under the 32 of the values. */
    assert_true(e.size < (size_t)n * 5 / 8 + 1024);
    qv_encoded_release(env.r, &e);
    free(d);
    env_close(&env);
}

/* Allocation failure at every step of encoding, and of opening and
 * decoding through a reference: ENOMEM each time, nothing left charged
 * (env_close checks), until no failure is left to inject. */
static void test_allocation_failures(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    int32_t *d = malloc(9000 * 4);
    for (int i = 0; i < 9000; i++) d[i] = i % 17;
    struct qv_values dv = {.kind = QV_KIND_INT32, .count = 9000, .values = d};
    int ok = 0;
    for (uint64_t nth = 1; nth < 200 && !ok; nth++) {
        qv_pool_inject_alloc_failure(env.pool, nth);
        struct qv_encoded e = {0};
        int rc = qv__relative_encode(&dv, 1, NULL, env.r, &e, &err);
        qv_pool_inject_alloc_failure(env.pool, 0);
        if (rc == 0) {
            ok = 1;
            qv_encoded_release(env.r, &e);
            break;
        }
        assert_int_equal(rc, ENOMEM);
        assert_null(e.data);
        assert_int_equal(qv_reservation_used(env.r), 0);
    }
    assert_true(ok);
    struct pair p;
    pair_open(&env, QV_KIND_INT32, 9000, 31, 2, &p);
    assert_int_equal(qv_decoder_set_reference(p.rel, p.ref, &err), 0);
    int32_t *got = malloc(9000 * 4);
    struct qv_decode_out o = {.values = got};
    ok = 0;
    for (uint64_t nth = 1; nth < 200 && !ok; nth++) {
        qv_pool_inject_alloc_failure(env.pool, nth);
        int rc = qv_decoder_decode_range(p.rel, 100, 8800, &o, &err);
        qv_pool_inject_alloc_failure(env.pool, 0);
        if (rc == 0) ok = 1;
        else assert_int_equal(rc, ENOMEM);
    }
    assert_true(ok);
    assert_memory_equal(got, p.want + 400, 8800 * 4);
    free(got);
    free(d);
    pair_close(&env, &p);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_kind),
        cmocka_unit_test(test_without_reference),
        cmocka_unit_test(test_mismatched_references),
        cmocka_unit_test(test_shape_rules),
        cmocka_unit_test(test_forced_through_qv_encode),
        cmocka_unit_test(test_no_encoded_filter),
        cmocka_unit_test(test_compact_and_describe),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
