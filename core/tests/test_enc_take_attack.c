/*
 * Hostile orders and failures against what decoders keep for takes
 * (general.c's frames, delta.c's summed vectors, rle.c's vectors of ends):
 *  - takes in cycles longer than the 16 frame slots and the 32-entry seen
 *    ring, alternating far frames, one row repeated, rows descending (one
 *    per take), unsorted takes refused, range decodes interleaved, every
 *    result against the full decode; the decoder's memory stops growing
 *    once the cycle has been seen (nothing is kept twice);
 *  - an allocation failure injected at every step of a script of takes on
 *    a decoder that already keeps frames and vectors: ENOMEM, then the same
 *    decoder gives the full decode's values, and everything is given back
 *    at close (the pool's accounting at zero);
 *  - one frame far larger than the keep budget among small ones (a long
 *    string): takes alternating between it and the small frames.
 */
#include "encoding/encoding_testing.h"
#include "encoding/enc_internal.h"
#include "memory/memory_testing.h"
#include "test_enc_util.h"

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct chunk {
    struct qv_encoded enc;
    enum qv_value_kind kind;
    unsigned w;
    int64_t n;
    uint8_t *ref; /* full decode */
};

static void chunk_encode(struct enc_env *env, struct chunk *c, enum qv_value_kind kind,
                         const void *v, int64_t n, int force) {
    struct qv_values in = {0};
    in.kind = kind;
    in.count = n;
    in.values = v;
    struct qv_encode_options eo = {0};
    eo.force = force;
    struct qv_error err = {0};
    memset(c, 0, sizeof *c);
    assert_int_equal(qv_encode(&in, &eo, env->r, &c->enc, &err), 0);
    c->kind = kind;
    c->w = kind_width(kind, 0);
    c->n = n;
    c->ref = malloc((size_t)n * c->w);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(c->enc.data, c->enc.size, kind, 0, n, env->r, &d, &err), 0);
    struct qv_decode_out o = {.values = c->ref};
    assert_int_equal(qv_decoder_decode_range(d, 0, n, &o, &err), 0);
    qv_decoder_close(d);
    assert_memory_equal(c->ref, v, (size_t)n * c->w);
}

static void chunk_free(struct enc_env *env, struct chunk *c) {
    qv_encoded_release(env->r, &c->enc);
    free(c->ref);
}

/* Takes rows[0..k); 0 or the error (values compared when 0). */
static int take_cmp(struct qv_decoder *d, const struct chunk *c, const int64_t *rows, int64_t k,
                    struct qv_error *err) {
    uint8_t out[64 * 8];
    struct qv_decode_out o = {.values = out};
    int rc = qv_decoder_take(d, rows, k, &o, err);
    if (rc) return rc;
    for (int64_t i = 0; i < k; i++)
        if (memcmp(out + (size_t)i * c->w, c->ref + (size_t)rows[i] * c->w, c->w))
            fail_msg("row %lld (take of %lld) differs from the full decode", (long long)rows[i],
                     (long long)k);
    return 0;
}

static int range_cmp(struct qv_decoder *d, const struct chunk *c, int64_t a, int64_t len,
                     uint8_t *buf, struct qv_error *err) {
    struct qv_decode_out o = {.values = buf};
    int rc = qv_decoder_decode_range(d, a, len, &o, err);
    if (rc) return rc;
    if (memcmp(buf, c->ref + (size_t)a * c->w, (size_t)len * c->w))
        fail_msg("range [%lld, +%lld) differs from the full decode", (long long)a, (long long)len);
    return 0;
}

/* A script of takes over unit-sized pieces (frames or vectors) of `unit`
 * values: cycles of `cyc` units, two rows a take inside one vector (so a
 * delta or run-end node inside meets its vector again), far alternation,
 * one row repeated, descending single rows, a range decode now and then.
 * Returns the first error (the script stops there). */
static int script(struct qv_decoder *d, const struct chunk *c, int64_t unit, int64_t cyc,
                  int round, uint8_t *buf, struct qv_error *err) {
    const int64_t n = c->n, units = (n + unit - 1) / unit;
    int rc;
    int64_t rows[64];
    for (int64_t u = 0; u < cyc; u++) {
        int64_t us = (u % units) * unit, ue = us + unit < n ? us + unit : n;
        int64_t r = us + (u * 37 + round * 11 + 1) % (ue - us);
        rows[0] = r;
        rows[1] = (r | 1023) < ue ? (r | 1023) : ue - 1;
        if (rows[1] < rows[0]) rows[1] = rows[0];
        if ((rc = take_cmp(d, c, rows, 2, err))) return rc;
    }
    for (int i = 0; i < 20; i++) {
        rows[0] = i % 2 ? n - 1 - i : i + 1;
        if ((rc = take_cmp(d, c, rows, 1, err))) return rc;
    }
    for (int i = 0; i < 10; i++) {
        rows[0] = n / 2 + 3;
        if ((rc = take_cmp(d, c, rows, 1, err))) return rc;
    }
    for (int64_t r = n - 1, i = 0; r >= 0 && i < 40; r -= unit / 3 + 1, i++) {
        rows[0] = r;
        if ((rc = take_cmp(d, c, rows, 1, err))) return rc;
        if (i % 13 == 5) {
            int64_t a = r / 2, len = n - a < 3000 ? n - a : 3000;
            if ((rc = range_cmp(d, c, a, len, buf, err))) return rc;
        }
    }
    /* One take over many units, duplicates included. */
    uint64_t s = (uint64_t)round * 977 + 3;
    for (int i = 0; i < 48; i++) rows[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
    rows[48] = rows[47];
    qsort(rows, 49, sizeof rows[0], cmp64);
    return take_cmp(d, c, rows, 49, err);
}

/* The first zstd/lz4 node of the tree (the root, or dict's codes). */
static const struct qv__node *framed(const struct qv__node *nd) {
    if (nd->enc == QV_ENC_ZSTD || nd->enc == QV_ENC_LZ4) return nd;
    for (int i = 0; i < nd->nchildren; i++) {
        const struct qv__node *f = framed(nd->child[i]);
        if (f) return f;
    }
    return NULL;
}

static int64_t frame_values_of(struct enc_env *env, const struct chunk *c, int64_t *nframes) {
    struct qv__mem m = {.r = env->r};
    struct qv__node *root;
    struct qv_error err = {0};
    assert_int_equal(qv__tree_parse(&m, c->enc.data, c->enc.size, 0, 0, 0, &root, &err), 0);
    int64_t fv = 0;
    *nframes = 0;
    const struct qv__node *f = framed(root);
    if (f && f->count == c->n) {
        *nframes = qv__general_nframes(f);
        fv = f->params[0];
    }
    qv__mem_free_all(&m);
    return fv;
}

/* The orders, then the memory after rounds 3 and 12 of the same cycle:
 * nothing more is held for going round again. */
static void orders(struct enc_env *env, const struct chunk *c, int64_t unit, int64_t cyc) {
    struct qv_error err = {0};
    struct qv_decoder *d;
    uint8_t *buf = malloc((size_t)c->n * c->w);
    assert_int_equal(
        qv_decoder_open(c->enc.data, c->enc.size, c->kind, 0, c->n, env->r, &d, &err), 0);
    /* Unsorted rows are refused and leave the decoder usable. */
    int64_t bad[2] = {c->n - 1, 0};
    uint8_t o2[16];
    struct qv_decode_out o = {.values = o2};
    assert_int_equal(qv_decoder_take(d, bad, 2, &o, &err), EINVAL);
    uint64_t at3 = 0;
    for (int round = 0; round < 12; round++) {
        if (script(d, c, unit, cyc, round % 3, buf, &err)) fail_msg("%s", err.message);
        if (round == 3) at3 = qv_reservation_used(env->r);
    }
    uint64_t at12 = qv_reservation_used(env->r);
    if (at12 > at3 + 4096)
        fail_msg("the decoder grew from %llu to %llu bytes repeating the same takes",
                 (unsigned long long)at3, (unsigned long long)at12);
    qv_decoder_close(d);
    free(buf);
}

/* Allocation failure at every step of the script: from the decoder's
 * open (cold, then warming up) and on a warm decoder (frames and vectors
 * met twice already kept). Returns how many steps failed. */
static int faults_from(struct enc_env *env, const struct chunk *c, int64_t unit, int64_t cyc,
                       int warm) {
    struct qv_error err = {0};
    uint8_t *buf = malloc((size_t)c->n * c->w);
    const uint64_t base = qv_reservation_used(env->r);
    int failed = 0;
    for (uint64_t nth = 1;; nth++) {
        struct qv_decoder *d = NULL;
        int rc = 0;
        if (!warm) qv_pool_inject_alloc_failure(env->pool, nth);
        qv_error_clear(&err);
        rc = qv_decoder_open(c->enc.data, c->enc.size, c->kind, 0, c->n, env->r, &d, &err);
        if (!rc && warm) {
            /* Warm: frames and vectors met twice are kept. */
            assert_int_equal(script(d, c, unit, cyc, 0, buf, &err), 0);
            assert_int_equal(script(d, c, unit, cyc, 1, buf, &err), 0);
            qv_pool_inject_alloc_failure(env->pool, nth);
        }
        for (int round = 0; !rc && round < (warm ? 2 : 3); round++)
            rc = script(d, c, unit, cyc, (round + 2) % 3, buf, &err);
        qv_pool_inject_alloc_failure(env->pool, 0);
        if (rc) {
            if (rc != ENOMEM) fail_msg("step %llu: %d %s", (unsigned long long)nth, rc, err.message);
            failed++;
            /* One of the next allocations fails too (a retry that fails
             * again, on whatever the first failure left). */
            for (int again = 1; d && again <= 3; again++) {
                qv_pool_inject_alloc_failure(env->pool, (uint64_t)again);
                qv_error_clear(&err);
                int rc2 = script(d, c, unit, cyc, 2, buf, &err);
                qv_pool_inject_alloc_failure(env->pool, 0);
                if (rc2 && rc2 != ENOMEM) fail_msg("retry after step %llu: %d %s",
                                                   (unsigned long long)nth, rc2, err.message);
            }
            /* The same decoder, after the failures: every value right. */
            qv_error_clear(&err);
            for (int round = 0; d && round < 3; round++)
                if (script(d, c, unit, cyc, round, buf, &err))
                    fail_msg("after ENOMEM at step %llu: %s", (unsigned long long)nth, err.message);
        }
        if (d) qv_decoder_close(d);
        assert_int_equal(qv_reservation_used(env->r), base);
        if (!rc) break;
        assert_true(nth < 20000);
    }
    free(buf);
    return failed;
}

static void faults(struct enc_env *env, const struct chunk *c, int64_t unit, int64_t cyc) {
    int cold = faults_from(env, c, unit, cyc, 0);
    int warm = faults_from(env, c, unit, cyc, 1);
    assert_true(cold > 3);
    (void)warm;
}

static void test_frames(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 40 * 4096 + 555;
    int32_t *v = malloc((size_t)n * 4);
    uint64_t s = 9;
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(rng_next(&s) % 11) + (i % 5000 == 7 ? 900000 : 0);
    int done = 0;
    for (int layout = 1; layout <= 3; layout++) {
        qv_encode_force_entropy_layout(layout);
        struct chunk c;
        chunk_encode(&env, &c, QV_KIND_INT32, v, n, 0);
        qv_encode_force_entropy_layout(0);
        int64_t nf, fv = frame_values_of(&env, &c, &nf);
        if (nf > 34) {
            /* Cycles of 17 (one past the slots) and 33 (one past the seen
             * ring) frames. */
            orders(&env, &c, fv, 17);
            orders(&env, &c, fv, 33);
            faults(&env, &c, fv, 17);
            done++;
        }
        chunk_free(&env, &c);
    }
    assert_true(done >= 3); /* every layout */
    free(v);
    env_close(&env);
}

/* Whole-chunk zstd frames (compact) over delta and run-end trees, and
 * the forced delta and run-end nodes themselves. */
static void test_vectors(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 24 * 1024 + 77;
    int64_t *a = malloc((size_t)n * 8), *runs = malloc((size_t)n * 8);
    uint64_t s = 21;
    int64_t x = -5000, y = 3;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        x += (int64_t)(r % 50);
        a[i] = x;
        if (r % 5 == 0) y += (int64_t)(r >> 52) - 2000;
        runs[i] = y;
    }
    struct chunk c;
    chunk_encode(&env, &c, QV_KIND_INT64, a, n, QV_ENC_DELTA);
    orders(&env, &c, 1024, 20);
    faults(&env, &c, 1024, 12);
    chunk_free(&env, &c);
    chunk_encode(&env, &c, QV_KIND_INT64, runs, n, QV_ENC_RLE);
    orders(&env, &c, 1024, 20);
    faults(&env, &c, 1024, 12);
    chunk_free(&env, &c);
    /* Runs of one over 72 vectors of ends: the lazy path decodes up to
     * 22 vectors of ends, more than the seen ring holds. */
    const int64_t n2 = 72 * 1024 + 5;
    int64_t *inc = malloc((size_t)n2 * 8);
    for (int64_t i = 0; i < n2; i++) inc[i] = i * 3 + (i % 7);
    chunk_encode(&env, &c, QV_KIND_INT64, inc, n2, QV_ENC_RLE);
    orders(&env, &c, 1024, 24);
    faults(&env, &c, 1024, 20);
    chunk_free(&env, &c);
    free(inc);
    chunk_encode(&env, &c, QV_KIND_INT64, a, n, QV_ENC_ZSTD);
    orders(&env, &c, 1024, 20);
    faults(&env, &c, 1024, 12);
    chunk_free(&env, &c);
    free(a);
    free(runs);
    env_close(&env);
}

/* One 3 MiB string (a frame of its own, six times the keep budget) among
 * short ones in zstd frames sized by bytes. */
static void test_huge_frame(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 6000, big = 2500;
    const size_t big_len = (size_t)3 << 20;
    int64_t *off = malloc((size_t)(n + 1) * 8);
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) off[i + 1] = off[i] + (i == big ? (int64_t)big_len : 150 + i % 200);
    uint8_t *data = malloc((size_t)off[n]);
    uint64_t s = 5;
    for (int64_t i = 0; i < off[n]; i++) data[i] = (uint8_t)("abcdefghij"[rng_next(&s) % 10]);
    struct qv_values in = {.kind = QV_KIND_LARGE_BINARY, .count = n, .values = off, .data = data};
    struct qv_encode_options eo = {.allowed = QV_ENC_BIT(QV_ENC_ZSTD)};
    struct qv_encoded enc = {0};
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&in, &eo, env.r, &enc, &err), 0);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, QV_KIND_LARGE_BINARY, 0, n, env.r, &d, &err), 0);
    const uint64_t base = qv_reservation_used(env.r);
    uint64_t at2 = 0;
    int64_t offs[4];
    for (int round = 0; round < 8; round++) {
        for (int64_t i = 0; i < n; i += 211) {
            int64_t rows[3] = {i, big, big + 1 + (i * 7) % (n - big - 1)};
            if (i > big) {
                rows[0] = big;
                rows[1] = i;
                rows[2] = i + 1 < n ? i + 1 : i;
            }
            struct qv_decode_out t = {.values = offs};
            assert_int_equal(qv_decoder_take(d, rows, 3, &t, &err), 0);
            for (int j = 0; j < 3; j++) {
                int64_t r = rows[j];
                assert_int_equal(offs[j + 1] - offs[j], off[r + 1] - off[r]);
                assert_memory_equal(t.data + offs[j], data + off[r], (size_t)(off[r + 1] - off[r]));
            }
            qv_free(env.r, t.data, t.data_capacity);
        }
        if (round == 2) at2 = qv_reservation_used(env.r);
    }
    /* The big frame kept, and at most the budget besides (plus one frame
     * and the parsed nodes), and no growth from going round again. */
    assert_true(qv_reservation_used(env.r) <= base + 2 * big_len + (512 << 10) + (1 << 20));
    assert_true(qv_reservation_used(env.r) <= at2 + 4096);
    qv_decoder_close(d);
    qv_encoded_release(env.r, &enc);
    free(off);
    free(data);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_huge_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
