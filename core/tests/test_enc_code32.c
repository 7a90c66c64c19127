/*
 * Dictionaries of at most 32 entries are filtered by qv__code_cmp32 (a
 * 32-bit word of answers shifted by each code) instead of a table load per
 * code. Attacked here at its edges, with the generic kernel and the best
 * the CPU has (QUIVER_SIMD=baseline's level too): the kernel itself against
 * a plain loop (codes of exactly 31, every length around 64, bits past m);
 * dictionaries of 1, 31, 32 and 33 entries (the last one the table path)
 * through qv_decoder_filter against the decoded values, integers with every
 * operator and floats holding NaN, -0.0 and infinities through EVAL; and a
 * corrupt code (exactly the dictionary's size, size + 32 and 2^32 - 1, which
 * `& 31` would map onto a real entry) refused as corrupt, never answered.
 * Larger dictionaries' kernel (qv__code_bits, a gathered bitset) against a
 * plain loop too, and through qv_decoder_filter: 63, 64, 65 and 1000
 * entries (an EVAL setting the bits past the entries too), 2^16 - 1, 2^16
 * and 2^16 + 1 entries with takes, corrupt codes in 64, 65 and 1000.
 */
#include <math.h>

#include "test_enc_util.h"
#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

static const int levels[] = {QV__CPU_BASELINE, QV__CPU_AVX2};

/* ---- the kernel ---- */

static void test_kernel(void **state) {
    (void)state;
    uint64_t s = 32;
    static uint32_t codes[4096 + 64];
    static uint64_t out[4096 / 64 + 2];
    const int64_t ms[] = {0, 1, 2, 31, 32, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096};
    const uint32_t fixed[] = {0, 1, 0x80000000u, 0xFFFFFFFFu, 0x7FFFFFFFu, 0xAAAAAAAAu};
    for (int lv = 0; lv < 2; lv++) {
        const int saved = qv__cpu_set_level(levels[lv]);
        for (int round = 0; round < 200; round++) {
            const int64_t m = ms[round % 14];
            uint32_t answers = round < 6 ? fixed[round] : (uint32_t)rng_next(&s);
            for (int64_t j = 0; j < m; j++) {
                uint64_t r = rng_next(&s);
                /* Many 31s and 0s: the ends of the word. */
                codes[j] = r % 4 == 0 ? 31 : r % 4 == 1 ? 0 : (uint32_t)(r >> 8) % 32;
            }
            /* Garbage past m: the kernel must not read it into an answer. */
            for (int64_t j = m; j < m + 64; j++) codes[j] = 31;
            const int64_t words = (m + 63) / 64;
            for (int64_t k = 0; k < words + 1; k++) out[k] = 0x5555555555555555u;
            qv__code_cmp32(codes, m, answers, out);
            for (int64_t j = 0; j < words * 64; j++) {
                int got = (int)(out[j / 64] >> (j % 64)) & 1;
                int want = j < m ? (int)(answers >> codes[j]) & 1 : 0;
                if (got != want)
                    fail_msg("level %d m %lld answers %08x: bit %lld is %d, code %u", levels[lv],
                             (long long)m, answers, (long long)j, got, j < m ? codes[j] : 0);
            }
            /* Nothing written past ceil(m / 64) words. */
            assert_true(out[words] == 0x5555555555555555u);
        }
        qv__cpu_set_level(saved);
    }
}

/* qv__code_bits (dictionaries above 32 entries): a bitset of ds answers,
 * codes below ds (many at 0, 31, 32, ds - 1: the words' ends), every
 * length around 64, against a plain loop; nothing past ceil(m / 64) words
 * written, bits past m 0. */
static void test_kernel_bits(void **state) {
    (void)state;
    uint64_t s = 77;
    static uint32_t codes[4096 + 64];
    static uint64_t out[4096 / 64 + 2];
    static uint64_t answers[70000 / 64 + 2];
    const int64_t ms[] = {0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096};
    const uint32_t dss[] = {33, 63, 64, 65, 100, 1000, 65536, 70000};
    for (int lv = 0; lv < 2; lv++) {
        const int saved = qv__cpu_set_level(levels[lv]);
        for (int round = 0; round < 400; round++) {
            const int64_t m = ms[round % 14];
            const uint32_t ds = dss[(round / 14) % 8];
            const int64_t aw = (ds + 63) / 64;
            for (int64_t k = 0; k <= aw; k++) answers[k] = round % 5 == 0 ? ~UINT64_C(0) : rng_next(&s);
            if (ds % 64) answers[aw - 1] &= (UINT64_C(1) << (ds % 64)) - 1;
            answers[aw] = 0;
            for (int64_t j = 0; j < m; j++) {
                uint64_t r = rng_next(&s);
                codes[j] = r % 5 == 0 ? 0 : r % 5 == 1 ? ds - 1 : r % 5 == 2 ? 31 % ds
                         : r % 5 == 3 ? 32 % ds : (uint32_t)(r >> 8) % ds;
            }
            for (int64_t j = m; j < m + 64; j++) codes[j] = 0xFFFFFFFFu; /* never read */
            const int64_t words = (m + 63) / 64;
            for (int64_t k = 0; k < words + 1; k++) out[k] = 0x5555555555555555u;
            qv__code_bits(codes, m, answers, ds, out);
            for (int64_t j = 0; j < words * 64; j++) {
                int got = (int)(out[j / 64] >> (j % 64)) & 1;
                int want = j < m ? (int)(answers[codes[j] / 64] >> (codes[j] % 64)) & 1 : 0;
                if (got != want)
                    fail_msg("level %d m %lld dict %u: bit %lld is %d, code %u", levels[lv],
                             (long long)m, ds, (long long)j, got, j < m ? codes[j] : 0);
            }
            assert_true(out[words] == 0x5555555555555555u);
        }
        qv__cpu_set_level(saved);
    }
}

/* ---- dictionaries through qv_decoder_filter ---- */

/* EVAL on doubles: ctx says which predicate (IEEE: NaN compares false). */
struct fpred {
    int kind; /* 0: x < lit, 1: x != x (NaN), 2: x == lit, 3: x >= lit */
    double lit;
};

static int fpred_holds(const struct fpred *p, double x) {
    switch (p->kind) {
    case 0: return x < p->lit;
    case 1: return x != x;
    case 2: return x == p->lit;
    default: return x >= p->lit;
    }
}

static int feval(void *ctx, const struct qv_values *vals, uint64_t *out, struct qv_error *err) {
    (void)err;
    const struct fpred *p = ctx;
    const double *x = vals->values;
    for (int64_t i = 0; i < vals->count; i++)
        if (fpred_holds(p, x[i])) out[i / 64] |= UINT64_C(1) << (i % 64);
    return 0;
}

/* BETWEEN ctx->lo..hi on int32 entries, and every bit past count set in
 * the last word (garbage the filter must ignore). */
static int greedy_ieval(void *ctx, const struct qv_values *vals, uint64_t *out,
                        struct qv_error *err) {
    (void)err;
    const struct qv_enc_pred *q = ctx;
    const int32_t *x = vals->values;
    assert_int_equal(vals->kind, QV_KIND_INT32);
    for (int64_t i = 0; i < vals->count; i++)
        if (x[i] >= q->lo && x[i] <= q->hi) out[i / 64] |= UINT64_C(1) << (i % 64);
    if (vals->count % 64) out[vals->count / 64] |= ~UINT64_C(0) << (vals->count % 64);
    return 0;
}

static int root_is_dict(struct enc_env *env, const struct qv_encoded *e) {
    char desc[512];
    struct qv_error err;
    assert_int_equal(qv_enc_describe(e->data, e->size, env->r, desc, sizeof desc, &err), 0);
    return strncmp(desc, "dict(", 5) == 0;
}

/* Random windows and selections of a decoder over n values; `want(i)` is
 * the oracle. */
static void check_filter(struct qv_decoder *d, int64_t n, const struct qv_enc_pred *p, uint64_t *s,
                         int (*want)(const void *ctx, int64_t i), const void *wctx,
                         const char *what) {
    static uint64_t sel[8192 / 64 + 1], out[8192 / 64 + 1];
    struct qv_error err;
    for (int w = 0; w < 6; w++) {
        int64_t start = w == 0 ? 0 : (int64_t)(rng_next(s) % (uint64_t)n);
        int64_t len = w == 0 ? n : 1 + (int64_t)(rng_next(s) % (uint64_t)(n - start));
        int use_sel = w % 2;
        for (int64_t k = 0; k < (len + 63) / 64; k++) sel[k] = use_sel ? rng_next(s) : ~UINT64_C(0);
        int rc = qv_decoder_filter(d, start, len, p, use_sel ? sel : NULL, out, &err);
        if (rc) fail_msg("%s: filter rc %d: %s", what, rc, err.message);
        for (int64_t i = 0; i < len; i++) {
            int sb = (int)(sel[i / 64] >> (i % 64)) & 1;
            int got = (int)(out[i / 64] >> (i % 64)) & 1;
            int exp = sb && want(wctx, start + i);
            if (got != exp)
                fail_msg("%s: value %lld (window %lld+%lld): got %d, want %d", what,
                         (long long)(start + i), (long long)start, (long long)len, got, exp);
        }
    }
}

struct icase {
    const int32_t *v;
    const struct qv_enc_pred *p;
};
static int iwant(const void *ctx, int64_t i) {
    const struct icase *c = ctx;
    int64_t x = c->v[i];
    switch (c->p->op) {
    case QV_ENC_OP_EQ: return x == c->p->lo;
    case QV_ENC_OP_NE: return x != c->p->lo;
    case QV_ENC_OP_LT: return x < c->p->lo;
    case QV_ENC_OP_LE: return x <= c->p->lo;
    case QV_ENC_OP_GT: return x > c->p->lo;
    case QV_ENC_OP_GE: return x >= c->p->lo;
    default: return x >= c->p->lo && x <= c->p->hi;
    }
}

struct fcase {
    const double *v;
    const struct fpred *p;
};
static int fwant(const void *ctx, int64_t i) {
    const struct fcase *c = ctx;
    return fpred_holds(c->p, c->v[i]);
}

static void test_dict_sizes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    uint64_t s = 3233;
    /* 63..65: the two-shift path's edges; 1000: the gathered words. */
    const int sizes[] = {1, 2, 31, 32, 33, 63, 64, 65, 1000};
    const int64_t n = 5000;
    char what[160];
    for (int lv = 0; lv < 2; lv++) {
        const int saved = qv__cpu_set_level(levels[lv]);
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            const int ds = sizes[z];
            /* Integers: entries -40 + 3k, the last entry (code ds - 1, 31
             * for 32) frequent. */
            struct col ci = col_words(QV_KIND_INT32, n);
            int32_t *iv = ci.values;
            for (int64_t i = 0; i < n; i++) {
                uint64_t r = rng_next(&s);
                int k = r % 3 == 0 ? ds - 1 : (int)((r >> 8) % (uint64_t)ds);
                iv[i] = -40 + 3 * k;
            }
            struct qv_encode_options eo = {.force = QV_ENC_DICT};
            struct qv_encoded e;
            struct qv_error err;
            if (ds == 1) eo.force = QV_ENC_AUTO; /* dict of one entry may be refused */
            assert_int_equal(qv_encode(&ci.v, &eo, env.r, &e, &err), 0);
            struct qv_decoder *d;
            assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT32, 0, n, env.r, &d, &err), 0);
            for (int t = 0; t < 120; t++) {
                struct qv_enc_pred p = {0};
                p.op = t % 7;
                int k1 = (int)(rng_next(&s) % (uint64_t)(ds + 2)) - 1;
                int k2 = (int)(rng_next(&s) % (uint64_t)(ds + 2)) - 1;
                p.lo = -40 + 3 * k1 + (t % 5 == 4 ? 1 : 0); /* entries, between, beyond */
                p.hi = -40 + 3 * k2;
                snprintf(what, sizeof what, "int32 dict of %d (level %d) op %d lo %lld hi %lld", ds,
                         levels[lv], p.op, (long long)p.lo, (long long)p.hi);
                struct icase ic = {iv, &p};
                check_filter(d, n, &p, &s, iwant, &ic, what);
            }
            /* EVAL answering BETWEEN that also sets every bit past the
             * entries in its last word (the contract says they are
             * ignored): those bits must not answer for any code. */
            /* One ctx per predicate: the decoder keeps answers per pair. */
            static struct qv_enc_pred qs[2][9][12];
            for (int t = 0; t < 12; t++) {
                struct qv_enc_pred *qp = &qs[lv][z][t], q = {.op = QV_ENC_OP_BETWEEN};
                q.lo = -40 + 3 * (int)(rng_next(&s) % (uint64_t)(ds + 1));
                q.hi = t % 3 == 0 ? q.lo - 1 : q.lo + 3 * (int)(rng_next(&s) % 8);
                *qp = q;
                struct qv_enc_pred p = {.op = QV_ENC_OP_EVAL, .eval = greedy_ieval, .eval_ctx = qp};
                snprintf(what, sizeof what, "int32 dict of %d (level %d) greedy eval %lld..%lld",
                         ds, levels[lv], (long long)q.lo, (long long)q.hi);
                struct icase ic = {iv, &q};
                check_filter(d, n, &p, &s, iwant, &ic, what);
            }
            qv_decoder_close(d);
            qv_encoded_release(env.r, &e);
            col_free(&ci);

            /* Floats: NaN, -0.0, 0.0, +-Infinity among the entries. */
            struct col cf = col_words(QV_KIND_FLOAT64, n);
            double *fv = cf.values;
            static double ent[1000];
            for (int k = 0; k < 1000; k++) ent[k] = k * 0.5 - 7.25;
            ent[0] = NAN;
            if (ds > 1) ent[1] = -0.0;
            if (ds > 2) ent[2] = 0.0;
            if (ds > 3) ent[3] = INFINITY;
            if (ds > 4) ent[4] = -INFINITY;
            for (int64_t i = 0; i < n; i++) {
                uint64_t r = rng_next(&s);
                fv[i] = ent[r % 3 == 0 ? ds - 1 : (int)((r >> 8) % (uint64_t)ds)];
            }
            /* Every entry present, so the dictionary has exactly ds. */
            for (int k = 0; k < ds; k++) fv[(k * 7) % n] = ent[k];
            eo.force = ds == 1 ? QV_ENC_AUTO : QV_ENC_DICT;
            assert_int_equal(qv_encode(&cf.v, &eo, env.r, &e, &err), 0);
            if (ds > 1) assert_true(root_is_dict(&env, &e));
            assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_FLOAT64, 0, n, env.r, &d, &err), 0);
            struct fpred fps[40];
            for (int t = 0; t < 40; t++) {
                fps[t].kind = t % 4;
                fps[t].lit = t % 5 == 0 ? NAN : t % 5 == 1 ? 0.0 : ent[5 + t % 30];
                struct qv_enc_pred p = {.op = QV_ENC_OP_EVAL, .eval = feval, .eval_ctx = &fps[t]};
                snprintf(what, sizeof what, "float64 dict of %d (level %d) pred %d lit %g", ds,
                         levels[lv], fps[t].kind, fps[t].lit);
                struct fcase fc = {fv, &fps[t]};
                check_filter(d, n, &p, &s, fwant, &fc, what);
            }
            qv_decoder_close(d);
            qv_encoded_release(env.r, &e);
            col_free(&cf);
        }
        qv__cpu_set_level(saved);
    }
    env_close(&env);
}

/* Dictionaries of 2^16 - 1, 2^16 and 2^16 + 1 entries (the gathered words'
 * index near 2^11): every operator over the whole chunk and random windows
 * with a selection, and takes sparse (a filter's survivors) and dense,
 * against the values. */
static void test_dict_64k(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    uint64_t s = 6553;
    const int sizes[] = {65535, 65536, 65537};
    const int64_t n = 70000;
    static uint64_t sel[70000 / 64 + 1], out[70000 / 64 + 1];
    static int64_t rows[70000];
    static int32_t got[70000];
    for (int lv = 0; lv < 2; lv++) {
        const int saved = qv__cpu_set_level(levels[lv]);
        for (int z = 0; z < 3; z++) {
            const int ds = sizes[z];
            struct col ci = col_words(QV_KIND_INT32, n);
            int32_t *iv = ci.values;
            /* Entry k is 7 k - 200000; every entry present, the last often. */
            for (int64_t i = 0; i < n; i++) {
                uint64_t r = rng_next(&s);
                int64_t k = i < ds ? (i * 40507) % ds : r % 3 == 0 ? ds - 1 : (int64_t)((r >> 8) % (uint64_t)ds);
                iv[i] = (int32_t)(7 * k - 200000);
            }
            struct qv_encode_options eo = {.force = QV_ENC_DICT};
            struct qv_encoded e;
            struct qv_error err;
            assert_int_equal(qv_encode(&ci.v, &eo, env.r, &e, &err), 0);
            assert_true(root_is_dict(&env, &e));
            struct qv_decoder *d;
            assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT32, 0, n, env.r, &d, &err), 0);
            for (int t = 0; t < 21; t++) {
                struct qv_enc_pred p = {0};
                p.op = t % 7;
                int64_t k1 = (int64_t)(rng_next(&s) % (uint64_t)(ds + 2)) - 1;
                int64_t k2 = t % 2 ? k1 + (int64_t)(rng_next(&s) % 4000) : ds - 1;
                p.lo = 7 * k1 - 200000 + (t % 5 == 4 ? 3 : 0);
                p.hi = 7 * k2 - 200000;
                struct icase ic = {iv, &p};
                const int64_t start = t < 7 ? 0 : (int64_t)(rng_next(&s) % 1000);
                const int64_t len = t < 7 ? n : n - start - (int64_t)(rng_next(&s) % 1000);
                const int use_sel = t >= 14;
                for (int64_t k = 0; k < (len + 63) / 64; k++) sel[k] = use_sel ? rng_next(&s) : ~UINT64_C(0);
                int rc = qv_decoder_filter(d, start, len, &p, use_sel ? sel : NULL, out, &err);
                if (rc) fail_msg("dict of %d: filter rc %d: %s", ds, rc, err.message);
                for (int64_t i = 0; i < len; i++) {
                    int sb = (int)(sel[i / 64] >> (i % 64)) & 1;
                    int g = (int)(out[i / 64] >> (i % 64)) & 1;
                    if (g != (sb && iwant(&ic, start + i)))
                        fail_msg("dict of %d (level %d) op %d lo %lld hi %lld: value %lld got %d",
                                 ds, levels[lv], p.op, (long long)p.lo, (long long)p.hi,
                                 (long long)(start + i), g);
                }
            }
            /* Takes: one row in 97 (sparse), every row but a few, every
             * row twice over a span. */
            for (int shape = 0; shape < 3; shape++) {
                int64_t k = 0;
                for (int64_t r = 0; r < n && k < n; r++) {
                    if (shape == 0 && r % 97 != 5) continue;
                    if (shape == 1 && r % 13 == 0) continue;
                    if (shape == 2 && (r < 60000 || r >= 60000 + n / 4 / 2)) continue;
                    rows[k++] = r;
                    if (shape == 2) rows[k++] = r;
                }
                struct qv_decode_out o = {.values = got};
                int rc = qv_decoder_take(d, rows, k, &o, &err);
                if (rc) fail_msg("dict of %d: take shape %d rc %d: %s", ds, shape, rc, err.message);
                for (int64_t i = 0; i < k; i++)
                    if (got[i] != iv[rows[i]])
                        fail_msg("dict of %d take shape %d: row %lld got %d want %d", ds, shape,
                                 (long long)rows[i], got[i], iv[rows[i]]);
            }
            qv_decoder_close(d);
            qv_encoded_release(env.r, &e);
            col_free(&ci);
        }
        qv__cpu_set_level(saved);
    }
    env_close(&env);
}

/* ---- corrupt codes ---- */

struct find_codes {
    uint64_t offset, own_size;
    int64_t count;
    int found, plain;
};

static int visit_codes(void *ctx, const struct qv_enc_node_info *info) {
    struct find_codes *f = ctx;
    if (info->depth == 1 && !strcmp(info->role, "codes")) {
        f->found = 1;
        f->plain = info->encoding == QV_ENC_PLAIN;
        f->offset = info->offset;
        f->own_size = info->own_size;
        f->count = info->count;
    }
    return 0;
}

/* Rows of a take around a bad code at `at`, in its vector [v0, v1): 0
 * scattered rows holding it (twice), 1 two rows around it but not it (-1
 * when it has no row on both sides), 2 the row alone, 3 every row of a
 * span over it once. Returns the count. */
static int64_t shape_rows(int shape, int64_t at, int64_t v0, int64_t v1, int64_t *rows) {
    int64_t k = 0;
    if (shape == 0) {
        if (v0 < at) rows[k++] = v0;
        rows[k++] = at;
        rows[k++] = at;
        if (at + 3 < v1) rows[k++] = at + 3;
    } else if (shape == 1) {
        if (at == v0 || at + 1 >= v1) return -1;
        rows[k++] = v0;
        rows[k++] = v1 - 1;
    } else if (shape == 2) {
        rows[k++] = at;
    } else {
        for (int64_t r = at > v0 ? at - 1 : at; r < v1 && k < 3; r++) rows[k++] = r;
    }
    return k;
}

/* A dictionary of ds entries whose plain codes get one bad code at value
 * `at`: every filter over a range holding it fails as corrupt naming the
 * code, whatever the predicate; a range without it is answered right. */
static void corrupt_code(struct enc_env *env, int ds, uint32_t bad, int64_t at, int level) {
    const int64_t n = 3000;
    struct col ci = col_words(QV_KIND_INT32, n);
    int32_t *iv = ci.values;
    for (int64_t i = 0; i < n; i++) iv[i] = 100 + (int32_t)(i % ds) * 2;
    /* Only dict and plain: the codes are a plain u32 buffer. */
    struct qv_encode_options eo = {.force = QV_ENC_DICT, .allowed = QV_ENC_BIT(QV_ENC_PLAIN),
                                   .max_depth = 1};
    struct qv_encoded e;
    struct qv_error err;
    assert_int_equal(qv_encode(&ci.v, &eo, env->r, &e, &err), 0);
    struct find_codes fc = {0};
    assert_int_equal(qv_enc_walk(e.data, e.size, NULL, visit_codes, &fc, &err), 0);
    if (!fc.found || !fc.plain) {
        char desc[512];
        qv_enc_describe(e.data, e.size, env->r, desc, sizeof desc, &err);
        fail_msg("dict of %d: codes not plain: %s", ds, desc);
    }
    assert_int_equal(fc.count, n);
    /* The buffer ends the node's own bytes (padded to 8). */
    const uint64_t blen = ((uint64_t)n * 4 + 7) & ~UINT64_C(7);
    uint32_t *codes = (uint32_t *)(void *)(e.data + fc.offset + fc.own_size - blen);
    for (int64_t i = 0; i < n; i++) assert_true(codes[i] < (uint32_t)ds); /* found them */
    const uint32_t was = codes[at];
    codes[at] = bad;
    const int saved = qv__cpu_set_level(level);
    struct qv_decoder *d;
    int rc = qv_decoder_open(e.data, e.size, QV_KIND_INT32, 0, n, env->r, &d, &err);
    if (rc) { /* refused up front: as good */
        assert_int_equal(rc, EIO);
    } else {
        static uint64_t out[3000 / 64 + 1];
        /* An entry's value, so `& 31` mapping would find a match. */
        const int32_t alias = 100 + (int32_t)((bad & 31) % (uint32_t)ds) * 2;
        struct qv_enc_pred preds[] = {{.op = QV_ENC_OP_EQ, .lo = alias},
                                      {.op = QV_ENC_OP_NE, .lo = alias},
                                      {.op = QV_ENC_OP_GE, .lo = 0},
                                      {.op = QV_ENC_OP_BETWEEN, .lo = 100, .hi = 100 + 2 * ds}};
        for (size_t k = 0; k < sizeof preds / sizeof preds[0]; k++) {
            qv_error_clear(&err);
            rc = qv_decoder_filter(d, 0, n, &preds[k], NULL, out, &err);
            if (rc != EIO)
                fail_msg("dict of %d, code %u at %lld, op %d: rc %d (not refused)", ds, bad,
                         (long long)at, preds[k].op, rc);
            char want[96];
            snprintf(want, sizeof want, "code %u at value %lld is outside the dictionary of %d",
                     bad, (long long)at, ds);
            if (!strstr(err.message, want)) fail_msg("message '%s', want '%s'", err.message, want);
            /* A range of whole vectors before it is answered right. */
            const int64_t before = at / 1024 * 1024;
            if (before > 0) {
                rc = qv_decoder_filter(d, 0, before, &preds[k], NULL, out, &err);
                assert_int_equal(rc, 0);
                struct icase ic = {iv, &preds[k]};
                for (int64_t i = 0; i < before; i++)
                    assert_int_equal((int)(out[i / 64] >> (i % 64)) & 1, iwant(&ic, i));
            }
        }
        /* Takes (dict_take_word): scattered rows of the bad code's vector
         * holding it, the row alone, or a contiguous run over it: corrupt,
         * naming the code. Two rows around it, not it: a sparse take checks
         * the codes it uses (a filter's survivors need not pay for checking
         * the whole span), so they are answered right. Rows of other
         * vectors only: right values. */
        const int64_t v0 = at / 1024 * 1024, v1 = v0 + 1024 < n ? v0 + 1024 : n;
        int64_t rows[8];
        int32_t got[8];
        for (int shape = 0; shape < 4; shape++) {
            const int64_t k = shape_rows(shape, at, v0, v1, rows);
            if (k < 0) continue;
            struct qv_decode_out o = {.values = got};
            qv_error_clear(&err);
            rc = qv_decoder_take(d, rows, k, &o, &err);
            if (shape == 1) {
                if (rc) fail_msg("dict of %d, code %u at %lld, rows around it: rc %d (%s)", ds,
                                 bad, (long long)at, rc, err.message);
                for (int64_t i = 0; i < k; i++) assert_int_equal(got[i], iv[rows[i]]);
                continue;
            }
            if (rc != EIO)
                fail_msg("dict of %d, code %u at %lld, take shape %d: rc %d", ds, bad,
                         (long long)at, shape, rc);
            char want[96];
            snprintf(want, sizeof want, "code %u at value", bad);
            if (!strstr(err.message, want) || !strstr(err.message, "outside the dictionary"))
                fail_msg("take message '%s'", err.message);
        }
        /* Rows of the other vectors: answered. */
        int64_t k = 0;
        for (int64_t r = 5; r < n && k < 8; r += 373)
            if (r < v0 || r >= v1) rows[k++] = r;
        struct qv_decode_out o = {.values = got};
        assert_int_equal(qv_decoder_take(d, rows, k, &o, &err), 0);
        for (int64_t i = 0; i < k; i++) assert_int_equal(got[i], iv[rows[i]]);
        qv_decoder_close(d);
    }
    qv__cpu_set_level(saved);
    codes[at] = was;
    qv_encoded_release(env->r, &e);
    col_free(&ci);
}

/* Strings "s<k>" for k = i % g_ds: a dictionary of g_ds entries. */
static int g_ds;
static size_t g_entry(int64_t i, uint64_t *rng, uint8_t *buf, size_t cap) {
    (void)rng;
    return (size_t)snprintf((char *)buf, cap, "s%lld", (long long)(i % g_ds));
}

/* The binary take (dict_take_bin) over a bad code, as the word take above:
 * a take holding the row is refused as corrupt naming the code, two rows
 * around it are answered right, rows of other vectors too. */
static void corrupt_code_bin(struct enc_env *env, int ds, uint32_t bad, int64_t at) {
    const int64_t n = 3000;
    g_ds = ds;
    struct col cs = col_strings(QV_KIND_BINARY, n, g_entry, 1);
    struct qv_encode_options eo = {.force = QV_ENC_DICT, .allowed = QV_ENC_BIT(QV_ENC_PLAIN),
                                   .max_depth = 1};
    struct qv_encoded e;
    struct qv_error err;
    assert_int_equal(qv_encode(&cs.v, &eo, env->r, &e, &err), 0);
    struct find_codes fc = {0};
    assert_int_equal(qv_enc_walk(e.data, e.size, NULL, visit_codes, &fc, &err), 0);
    assert_true(fc.found && fc.plain);
    assert_int_equal(fc.count, n);
    const uint64_t blen = ((uint64_t)n * 4 + 7) & ~UINT64_C(7);
    uint32_t *codes = (uint32_t *)(void *)(e.data + fc.offset + fc.own_size - blen);
    for (int64_t i = 0; i < n; i++) assert_true(codes[i] < (uint32_t)ds);
    codes[at] = bad;
    struct qv_decoder *d;
    int rc = qv_decoder_open(e.data, e.size, QV_KIND_BINARY, 0, n, env->r, &d, &err);
    if (rc) {
        assert_int_equal(rc, EIO);
    } else {
        const int64_t v0 = at / 1024 * 1024, v1 = v0 + 1024 < n ? v0 + 1024 : n;
        int64_t rows[8];
        int32_t offs[9];
        for (int shape = 0; shape < 5; shape++) {
            int64_t k = shape < 4 ? shape_rows(shape, at, v0, v1, rows) : 0;
            if (shape == 4) /* rows of the other vectors */
                for (int64_t r = 5; r < n && k < 8; r += 373)
                    if (r < v0 || r >= v1) rows[k++] = r;
            if (k <= 0) continue;
            struct qv_decode_out o = {.values = offs};
            qv_error_clear(&err);
            rc = qv_decoder_take(d, rows, k, &o, &err);
            if (shape == 1 || shape == 4) {
                if (rc) fail_msg("dict of %d, code %u at %lld, shape %d: rc %d (%s)", ds, bad,
                                 (long long)at, shape, rc, err.message);
                for (int64_t i = 0; i < k; i++) {
                    const int64_t a0 = off_at(&cs.v, rows[i]), a1 = off_at(&cs.v, rows[i] + 1);
                    assert_int_equal(offs[i + 1] - offs[i], a1 - a0);
                    assert_memory_equal(o.data + offs[i], cs.data + a0, (size_t)(a1 - a0));
                }
            } else {
                char want[96];
                snprintf(want, sizeof want, "code %u at value", bad);
                if (rc != EIO || !strstr(err.message, want) ||
                    !strstr(err.message, "outside the dictionary"))
                    fail_msg("dict of %d, code %u at %lld, shape %d: rc %d '%s'", ds, bad,
                             (long long)at, shape, rc, err.message);
            }
            if (o.data) qv_free(env->r, o.data, o.data_capacity);
        }
        qv_decoder_close(d);
    }
    qv_encoded_release(env->r, &e);
    col_free(&cs);
}

static void test_corrupt_codes_bin(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int sizes[] = {2, 33, 1000};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        const uint32_t bads[] = {(uint32_t)sizes[z], 0xFFFFFFFFu};
        const int64_t ats[] = {0, 64, 1500, 2999};
        for (size_t b = 0; b < 2; b++)
            for (size_t a = 0; a < 4; a++) corrupt_code_bin(&env, sizes[z], bads[b], ats[a]);
    }
    env_close(&env);
}

static void test_corrupt_codes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    /* 64, 65, 1000: the two-shift and the gathered kernels. */
    const int sizes[] = {2, 31, 32, 33, 64, 65, 1000};
    for (int lv = 0; lv < 2; lv++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            const int ds = sizes[z];
            const uint32_t bads[] = {(uint32_t)ds, (uint32_t)ds + 31, 32, 63, 0xFFFFFFFFu};
            const int64_t ats[] = {0, 63, 64, 1500, 2999};
            for (size_t b = 0; b < 5; b++)
                for (size_t a = 0; a < 5; a++)
                    if (bads[b] >= (uint32_t)ds) corrupt_code(&env, ds, bads[b], ats[a], levels[lv]);
        }
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel),
        cmocka_unit_test(test_kernel_bits),
        cmocka_unit_test(test_dict_sizes),
        cmocka_unit_test(test_dict_64k),
        cmocka_unit_test(test_corrupt_codes),
        cmocka_unit_test(test_corrupt_codes_bin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
