/*
 * Shared helpers of the encoding tests: a pool and reservation per test,
 * a deterministic generator, and a round-trip checker that compares full,
 * range and take decodes with the input, bit for bit.
 */
#ifndef QV_TEST_ENC_UTIL_H
#define QV_TEST_ENC_UTIL_H

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memory/memory_testing.h" /* allocation failures injected */
#include "quiver/encoding.h"

struct enc_env {
    struct qv_pool *pool;
    struct qv_reservation *r;
};

static inline void env_open(struct enc_env *env) {
    struct qv_error err;
    struct qv_pool_options po = {0};
    po.name = "enc-test";
    assert_int_equal(qv_pool_create(&po, &env->pool, &err), 0);
    assert_int_equal(qv_reservation_create(env->pool, NULL, &env->r, &err), 0);
}

static inline void env_close(struct enc_env *env) {
    assert_int_equal(qv_reservation_used(env->r), 0);
    qv_reservation_destroy(env->r);
    qv_pool_destroy(env->pool);
}

static inline uint64_t rng_next(uint64_t *s) {
    /* splitmix64 */
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline unsigned kind_width(enum qv_value_kind k, int32_t fw) {
    switch (k) {
    case QV_KIND_INT8:
    case QV_KIND_UINT8: return 1;
    case QV_KIND_INT16:
    case QV_KIND_UINT16: return 2;
    case QV_KIND_INT32:
    case QV_KIND_UINT32:
    case QV_KIND_FLOAT32: return 4;
    case QV_KIND_INT64:
    case QV_KIND_UINT64:
    case QV_KIND_FLOAT64: return 8;
    case QV_KIND_FIXED_BINARY: return (unsigned)fw;
    default: return 0;
    }
}

static inline int is_bin(enum qv_value_kind k) {
    return k == QV_KIND_BINARY || k == QV_KIND_LARGE_BINARY;
}

static inline int64_t off_at(const struct qv_values *v, int64_t i) {
    return v->kind == QV_KIND_BINARY ? ((const int32_t *)v->values)[i]
                                     : ((const int64_t *)v->values)[i];
}

/* Value i of `in` equals value j of a decoded output (binary: with its own
 * offsets array `offs` of the same width). */
static inline void check_value(const struct qv_values *in, int64_t i, const struct qv_decode_out *o,
                               int64_t j, const char *what) {
    enum qv_value_kind k = in->kind;
    if (k == QV_KIND_BOOL) {
        int a = qv_bit_get(in->values, in->bit_offset + i);
        int b = qv_bit_get(o->values, o->bit_offset + j);
        if (a != b) fail_msg("%s: bool %lld: %d != %d", what, (long long)i, a, b);
        return;
    }
    if (is_bin(k)) {
        int64_t a0 = off_at(in, i), a1 = off_at(in, i + 1);
        int64_t b0, b1;
        if (k == QV_KIND_BINARY) {
            b0 = ((const int32_t *)o->values)[j];
            b1 = ((const int32_t *)o->values)[j + 1];
        } else {
            b0 = ((const int64_t *)o->values)[j];
            b1 = ((const int64_t *)o->values)[j + 1];
        }
        if (a1 - a0 != b1 - b0)
            fail_msg("%s: string %lld: length %lld != %lld", what, (long long)i,
                     (long long)(a1 - a0), (long long)(b1 - b0));
        if (b1 > (int64_t)o->data_size) fail_msg("%s: offset beyond data", what);
        if (a1 > a0 && memcmp(in->data + a0, o->data + b0, (size_t)(a1 - a0)))
            fail_msg("%s: string %lld differs", what, (long long)i);
        return;
    }
    unsigned w = kind_width(k, in->fixed_width);
    if (memcmp((const uint8_t *)in->values + (size_t)i * w, (const uint8_t *)o->values + (size_t)j * w, w))
        fail_msg("%s: value %lld differs", what, (long long)i);
}

static inline void out_alloc(struct qv_decode_out *o, const struct qv_values *in, int64_t n) {
    memset(o, 0, sizeof *o);
    size_t bytes;
    if (in->kind == QV_KIND_BOOL) bytes = (size_t)(n + 7) / 8 + 8;
    else if (in->kind == QV_KIND_BINARY) bytes = (size_t)(n + 1) * 4;
    else if (in->kind == QV_KIND_LARGE_BINARY) bytes = (size_t)(n + 1) * 8;
    else bytes = (size_t)n * kind_width(in->kind, in->fixed_width);
    o->values = calloc(1, bytes + 64);
    assert_non_null(o->values);
}

static inline void out_free(struct qv_decode_out *o, struct qv_reservation *r) {
    free(o->values);
    if (o->data) qv_free(r, o->data, o->data_capacity);
    memset(o, 0, sizeof *o);
}

/* Encodes `in` with `opts`, checks the full decode, `probes` random ranges
 * and takes, and returns the encoded chunk (release with
 * qv_encoded_release). */
static inline struct qv_encoded roundtrip(struct enc_env *env, const struct qv_values *in,
                                          const struct qv_encode_options *opts, int probes,
                                          uint64_t seed) {
    struct qv_error err = {0};
    struct qv_encoded enc;
    int rc = qv_encode(in, opts, env->r, &enc, &err);
    if (rc) fail_msg("encode %s n=%lld force=%s: %s", qv_value_kind_name(in->kind),
                     (long long)in->count, qv_encoding_name(opts ? opts->force : 0), err.message);
    assert_int_equal(enc.size % 8, 0);
    struct qv_decoder *d;
    rc = qv_decoder_open(enc.data, enc.size, in->kind, in->fixed_width, in->count, env->r, &d, &err);
    if (rc) fail_msg("open: %s", err.message);
    const int64_t n = in->count;
    struct qv_decode_out o;
    out_alloc(&o, in, n);
    rc = qv_decoder_decode_range(d, 0, n, &o, &err);
    if (rc) fail_msg("decode %s n=%lld force=%s: %s", qv_value_kind_name(in->kind), (long long)n,
                     qv_encoding_name(opts ? opts->force : 0), err.message);
    for (int64_t i = 0; i < n; i++) check_value(in, i, &o, i, "full");
    out_free(&o, env->r);
    uint64_t s = seed;
    for (int p = 0; p < probes && n > 0; p++) {
        int64_t start = (int64_t)(rng_next(&s) % (uint64_t)n);
        int64_t len = (int64_t)(rng_next(&s) % (uint64_t)(p % 3 == 0 ? 3000 : 40)) + 1;
        if (len > n - start) len = n - start;
        out_alloc(&o, in, len);
        if (in->kind == QV_KIND_BOOL) o.bit_offset = (int64_t)(rng_next(&s) % 13);
        if (is_bin(in->kind)) {
            /* Appending after existing bytes must work too. */
            o.data = qv_alloc(env->r, 10, &err);
            o.data_capacity = 10;
            o.data_size = 3;
        }
        rc = qv_decoder_decode_range(d, start, len, &o, &err);
        if (rc) fail_msg("range [%lld,+%lld): %s", (long long)start, (long long)len, err.message);
        for (int64_t i = 0; i < len; i++) check_value(in, start + i, &o, i, "range");
        out_free(&o, env->r);
        /* take: sorted random rows, sometimes contiguous or one row in
         * `step` (2 to 18: the dense takes that unpack a whole vector and
         * pick from it), with duplicates */
        int64_t k = (int64_t)(rng_next(&s) % 200) + 1;
        if (p % 4 == 3) k = 150 + (int64_t)(rng_next(&s) % 1200);
        int64_t *rows = malloc((size_t)k * 8);
        for (int64_t i = 0; i < k; i++) rows[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        if (p % 4 == 1)
            for (int64_t i = 0; i < k; i++) rows[i] = start + (i < len ? i : len - 1);
        if (p % 4 == 3) {
            const int64_t step = 2 + p % 17, s0 = (int64_t)(rng_next(&s) % (uint64_t)n);
            for (int64_t i = 0; i < k; i++) rows[i] = s0 + i * step < n ? s0 + i * step : n - 1;
        }
        for (int64_t i = 1; i < k; i++)
            for (int64_t j = i; j > 0 && rows[j - 1] > rows[j]; j--) {
                int64_t t = rows[j];
                rows[j] = rows[j - 1];
                rows[j - 1] = t;
            }
        out_alloc(&o, in, k);
        if (in->kind == QV_KIND_BOOL) o.bit_offset = 5;
        rc = qv_decoder_take(d, rows, k, &o, &err);
        if (rc) fail_msg("take: %s", err.message);
        for (int64_t i = 0; i < k; i++) check_value(in, rows[i], &o, i, "take");
        out_free(&o, env->r);
        free(rows);
    }
    qv_decoder_close(d);
    return enc;
}

/* Every allocation of encoding `in` with `o` fails in turn: each encode
 * returns ENOMEM and leaves no chunk and nothing charged (the reservation
 * must be empty on entry). `what` names the case in a failure. */
static inline void encode_alloc_failures(struct enc_env *env, const struct qv_values *in,
                                         const struct qv_encode_options *o, const char *what) {
    struct qv_error err;
    struct qv_encoded e;
    const uint64_t before = qv_pool_alloc_count(env->pool);
    assert_int_equal(qv_encode(in, o, env->r, &e, &err), 0);
    const uint64_t allocs = qv_pool_alloc_count(env->pool) - before;
    qv_encoded_release(env->r, &e);
    for (uint64_t nth = 1; nth <= allocs; nth++) {
        qv_pool_inject_alloc_failure(env->pool, nth);
        int rc = qv_encode(in, o, env->r, &e, &err);
        qv_pool_inject_alloc_failure(env->pool, 0);
        if (rc != ENOMEM)
            fail_msg("%s: allocation %llu of %llu gave %d", what, (unsigned long long)nth,
                     (unsigned long long)allocs, rc);
        assert_null(e.data);
        assert_int_equal(qv_reservation_used(env->r), 0);
    }
}

/* Root encoding id of an encoded chunk. */
static inline int root_encoding(const struct qv_encoded *e) { return e->size ? e->data[0] : -1; }

static inline int cmp_row(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts k row numbers in ascending order (takes want them sorted). */
static inline void sort_rows(int64_t *rows, int64_t k) {
    qsort(rows, (size_t)k, sizeof rows[0], cmp_row);
}

/* v encoded with `encoding` forced at the root (asserted: the encoder
 * honoured it). */
static inline struct qv_encoded encode_forced(struct enc_env *env, const struct qv_values *v,
                                              int encoding) {
    struct qv_encode_options o = {0};
    o.force = encoding;
    struct qv_encoded e;
    struct qv_error err = {0};
    if (qv_encode(v, &o, env->r, &e, &err)) fail_msg("encode: %s", err.message);
    assert_int_equal(root_encoding(&e), encoding);
    return e;
}

/* Size of v encoded with the cascade restricted to `allowed` (0: all),
 * round-tripped (roundtrip(): `probes` probes from `seed`); its encoding
 * tree in `tree` when that is not NULL. */
static inline size_t encoded_size(struct enc_env *env, const struct qv_values *v, uint32_t allowed,
                                  int probes, uint64_t seed, char *tree, size_t cap) {
    struct qv_encode_options o = {0};
    o.allowed = allowed;
    struct qv_encoded e = roundtrip(env, v, &o, probes, seed);
    size_t sz = e.size;
    struct qv_error err = {0};
    if (tree && qv_enc_describe(e.data, e.size, env->r, tree, cap, &err) == EIO)
        fail_msg("describe: %s", err.message);
    qv_encoded_release(env->r, &e);
    return sz;
}

/* `trials` copies of chunk `e` (n values of `kind`) with 1 to 3 bits
 * flipped each (from `seed`): opening, a range of `range_len` rows from a
 * random start below n - 100 (none when 0), a take of `take_rows` (<= 64)
 * sorted random rows and the full range each succeed or fail with EIO,
 * never anything else; at least one fails. */
static inline void corrupt_trials(struct enc_env *env, const struct qv_encoded *e,
                                  enum qv_value_kind kind, int64_t n, int trials, uint64_t seed,
                                  int64_t range_len, int take_rows) {
    assert_true(take_rows <= 64);
    uint8_t *bad = malloc(e->size);
    int64_t *out = malloc((size_t)n * 8);
    uint64_t s = seed;
    int failed = 0;
    for (int t = 0; t < trials; t++) {
        memcpy(bad, e->data, e->size);
        for (int f = 0; f < 1 + t % 3; f++)
            bad[rng_next(&s) % e->size] ^= (uint8_t)(1u << (rng_next(&s) % 8));
        struct qv_error err = {0};
        struct qv_decoder *d;
        int rc = qv_decoder_open(bad, e->size, kind, 0, n, env->r, &d, &err);
        if (rc) {
            if (rc != EIO) fail_msg("trial %d: open gave %d (%s)", t, rc, err.message);
            failed++;
            continue;
        }
        struct qv_decode_out o = {0};
        o.values = out;
        int64_t start = range_len ? (int64_t)(rng_next(&s) % (uint64_t)(n - 100)) : 0, rows[64];
        for (int i = 0; i < take_rows; i++) rows[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        sort_rows(rows, take_rows);
        int rcs[3], k = 0;
        if (range_len) rcs[k++] = qv_decoder_decode_range(d, start, range_len, &o, &err);
        rcs[k++] = qv_decoder_take(d, rows, take_rows, &o, &err);
        rcs[k++] = qv_decoder_decode_range(d, 0, n, &o, &err);
        for (int i = 0; i < k; i++) {
            if (rcs[i] != 0 && rcs[i] != EIO)
                fail_msg("trial %d: decode %d gave %d (%s)", t, i, rcs[i], err.message);
            failed += rcs[i] != 0;
        }
        qv_decoder_close(d);
    }
    assert_true(failed > 0);
    free(out);
    free(bad);
}

/* Owned test columns. */
struct col {
    struct qv_values v;
    void *values;
    uint8_t *data;
};

static inline void col_free(struct col *c) {
    free(c->values);
    free(c->data);
    memset(c, 0, sizeof *c);
}

/* Zipf draws: cdf[r] (d entries) gets the cumulative weights (r + 1)^-s;
 * returns their sum. zipf_draw then gives a rank in [0, d). */
static inline double zipf_cdf(double *cdf, int64_t d, double s) {
    double sum = 0;
    for (int64_t r = 0; r < d; r++) cdf[r] = (sum += pow((double)(r + 1), -s));
    return sum;
}
static inline int64_t zipf_draw(const double *cdf, int64_t d, double sum, uint64_t *rng) {
    const double u = (double)(rng_next(rng) >> 11) / 9007199254740992.0 * sum;
    int64_t lo = 0, hi = d - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (cdf[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static inline struct col col_words(enum qv_value_kind k, int64_t n) {
    struct col c;
    memset(&c, 0, sizeof c);
    c.values = calloc(1, (size_t)n * 8 + 8);
    c.v.kind = k;
    c.v.count = n;
    c.v.values = c.values;
    return c;
}

/* Fills b[0..len) with comment-like text: words drawn from ten (the last
 * one cut at len), each draw one step of s. */
static inline void fill_words(uint64_t *s, uint8_t *b, size_t len) {
    static const char *w[] = {"carefully ", "final ", "requests ", "sleep ", "the ", "ironic ",
                              "deposits ", "haggle ", "quickly ", "furiously "};
    size_t l = 0;
    while (l < len) {
        const char *x = w[rng_next(s) % 10];
        size_t xl = strlen(x) < len - l ? strlen(x) : len - l;
        memcpy(b + l, x, xl);
        l += xl;
    }
}

/* Binary column from n strings given by a generator callback. */
typedef size_t (*str_gen)(int64_t i, uint64_t *rng, uint8_t *buf, size_t cap);
static inline struct col col_strings(enum qv_value_kind k, int64_t n, str_gen g, uint64_t seed) {
    struct col c;
    memset(&c, 0, sizeof c);
    size_t cap = 1024, used = 0;
    c.data = malloc(cap);
    c.values = malloc((size_t)(n + 1) * 8);
    uint64_t s = seed;
    uint8_t buf[4096];
    for (int64_t i = 0; i <= n; i++) {
        if (k == QV_KIND_BINARY) ((int32_t *)c.values)[i] = (int32_t)used;
        else ((int64_t *)c.values)[i] = (int64_t)used;
        if (i == n) break;
        size_t l = g(i, &s, buf, sizeof buf);
        while (used + l > cap) c.data = realloc(c.data, cap *= 2);
        memcpy(c.data + used, buf, l);
        used += l;
    }
    c.v.kind = k;
    c.v.count = n;
    c.v.values = c.values;
    c.v.data = c.data;
    return c;
}

/* Every op of the predicate language over n int64 values v through d (a
 * decoder of them), literals lit_lo to lit_hi (BETWEEN lit and lit +
 * span), each from its own unaligned start: the filter's bits must be the
 * values' answers. Returns how many filters ran; ENOTSUP (no
 * encoded-domain path) skips one. */
static inline int filter_ops_match(struct qv_decoder *d, const int64_t *v, int64_t n,
                                   int64_t lit_lo, int64_t lit_hi, int64_t span) {
    static const int ops[] = {QV_ENC_OP_EQ, QV_ENC_OP_NE, QV_ENC_OP_LT, QV_ENC_OP_LE,
                              QV_ENC_OP_GT, QV_ENC_OP_GE, QV_ENC_OP_BETWEEN};
    uint64_t *out = calloc((size_t)n / 64 + 2, 8);
    struct qv_error err = {0};
    int ran = 0;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (int64_t lit = lit_lo; lit <= lit_hi; lit++) {
            const int64_t start = 3 + (lit - lit_lo) * 1001, len = n - start - 7;
            struct qv_enc_pred p = {.op = ops[k], .lo = lit, .hi = lit + span};
            memset(out, 0, ((size_t)n / 64 + 2) * 8);
            int rc = qv_decoder_filter(d, start, len, &p, NULL, out, &err);
            if (rc == ENOTSUP) continue;
            if (rc) fail_msg("op %d lit %lld: %s", ops[k], (long long)lit, err.message);
            ran++;
            for (int64_t i = 0; i < len; i++) {
                const int64_t x = v[start + i];
                const int want = ops[k] == QV_ENC_OP_EQ   ? x == lit
                                 : ops[k] == QV_ENC_OP_NE ? x != lit
                                 : ops[k] == QV_ENC_OP_LT ? x < lit
                                 : ops[k] == QV_ENC_OP_LE ? x <= lit
                                 : ops[k] == QV_ENC_OP_GT ? x > lit
                                 : ops[k] == QV_ENC_OP_GE ? x >= lit
                                                          : x >= lit && x <= lit + span;
                if ((int)(out[i >> 6] >> (i & 63) & 1) != want)
                    fail_msg("op %d lit %lld row %lld: got %d", ops[k], (long long)lit,
                             (long long)(start + i), !want);
            }
        }
    free(out);
    return ran;
}

#endif
