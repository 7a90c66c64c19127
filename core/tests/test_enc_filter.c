/*
 * qv_decoder_filter against a brute-force oracle: for each encoding forced
 * at the root and each kind it holds, random data (skewed, repeated, runs,
 * sparse, negative, full-range, with 0 and the kind's min and max) and
 * thousands of random predicates (literals drawn from present values and
 * their neighbours, below the min, above the max, the frame-of-reference
 * base, the largest packed value, the kind's limits), random windows and
 * random selections; every answer is compared bit by bit with a plain loop
 * over qv_decode's output. Each kernel (root encoding) must answer at least
 * 4,800 predicates, and ENOTSUP is accepted only where filter.c documents
 * it. Half the integer columns run the generic compare kernel, half the
 * best the CPU has. Corrupt bytes give an error, never a crash.
 */
#include "test_enc_util.h"
#include "base/cpu_internal.h"
#include "memory/memory_testing.h"
#include "pred_oracle.h"

#define PER_KERNEL 4800

/* Predicates answered per root encoding (the kernel that ran). */
static int64_t g_answered[QV_ENC_COUNT];

static int kind_signed(enum qv_value_kind k) {
    return k == QV_KIND_INT8 || k == QV_KIND_INT16 || k == QV_KIND_INT32 || k == QV_KIND_INT64;
}

static int64_t kmin(enum qv_value_kind k) {
    switch (k) {
    case QV_KIND_INT8: return INT8_MIN;
    case QV_KIND_INT16: return INT16_MIN;
    case QV_KIND_INT32: return INT32_MIN;
    case QV_KIND_INT64: return INT64_MIN;
    default: return 0;
    }
}
static uint64_t kmax(enum qv_value_kind k) {
    switch (k) {
    case QV_KIND_INT8: return INT8_MAX;
    case QV_KIND_INT16: return INT16_MAX;
    case QV_KIND_INT32: return INT32_MAX;
    case QV_KIND_INT64: return INT64_MAX;
    case QV_KIND_UINT8: return UINT8_MAX;
    case QV_KIND_UINT16: return UINT16_MAX;
    case QV_KIND_UINT32: return UINT32_MAX;
    default: return UINT64_MAX;
    }
}

/* Value i as a signed (sign-extended) or unsigned 64-bit integer. */
static uint64_t get_raw(const void *v, enum qv_value_kind k, int64_t i) {
    switch (kind_width(k, 0)) {
    case 1: return kind_signed(k) ? (uint64_t)(int64_t)((const int8_t *)v)[i] : ((const uint8_t *)v)[i];
    case 2: return kind_signed(k) ? (uint64_t)(int64_t)((const int16_t *)v)[i] : ((const uint16_t *)v)[i];
    case 4: return kind_signed(k) ? (uint64_t)(int64_t)((const int32_t *)v)[i] : ((const uint32_t *)v)[i];
    default: return ((const uint64_t *)v)[i];
    }
}
static void put_raw(void *v, enum qv_value_kind k, int64_t i, uint64_t x) {
    switch (kind_width(k, 0)) {
    case 1: ((uint8_t *)v)[i] = (uint8_t)x; break;
    case 2: ((uint16_t *)v)[i] = (uint16_t)x; break;
    case 4: ((uint32_t *)v)[i] = (uint32_t)x; break;
    default: ((uint64_t *)v)[i] = x; break;
    }
}

/* A value of the kind from a 64-bit draw (truncated to the width). */
static uint64_t fit(enum qv_value_kind k, uint64_t x) {
    unsigned w = kind_width(k, 0) * 8;
    if (w == 64) return x;
    x &= (UINT64_C(1) << w) - 1;
    if (kind_signed(k) && (x >> (w - 1))) x |= ~UINT64_C(0) << w;
    return x;
}

static int oracle_int(enum qv_value_kind k, const struct qv_enc_pred *p, uint64_t v) {
    return kind_signed(k) ? pred_oracle_i64(p, (int64_t)v) : pred_oracle_u64(p, v);
}

/* Data patterns. */
enum { P_SKEW, P_NARROW, P_RUNS, P_SPARSE, P_FULL, P_CONST, P_SORTED, P_COUNT };

static void gen_ints(enum qv_value_kind k, int pattern, int64_t n, void *v, uint64_t *s) {
    uint64_t pool[16];
    for (int i = 0; i < 16; i++) pool[i] = fit(k, rng_next(s) % 64 - 20);
    pool[0] = 0;
    pool[1] = fit(k, (uint64_t)kmin(k));
    pool[2] = fit(k, kmax(k));
    uint64_t base = fit(k, rng_next(s) % 3 ? (uint64_t)-(int64_t)(rng_next(s) % 5000) : rng_next(s));
    uint64_t cur = pool[3], step = rng_next(s) % 3;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x;
        switch (pattern) {
        case P_SKEW: x = pool[rng_next(s) % 4 ? rng_next(s) % 3 + 3 : rng_next(s) % 16]; break;
        case P_NARROW: x = fit(k, base + rng_next(s) % 300); break;
        case P_RUNS:
            if (rng_next(s) % 40 == 0) cur = pool[rng_next(s) % 16];
            x = cur;
            break;
        case P_SPARSE: x = rng_next(s) % 30 ? pool[5] : pool[rng_next(s) % 16]; break;
        case P_FULL: x = fit(k, rng_next(s)); break;
        case P_CONST: x = pool[7]; break;
        default: x = fit(k, base + (uint64_t)i * step + rng_next(s) % 2); break;
        }
        put_raw(v, k, i, x);
    }
    if (pattern == P_FULL && n > 3) {
        put_raw(v, k, 0, fit(k, (uint64_t)kmin(k)));
        put_raw(v, k, 1, fit(k, kmax(k)));
        put_raw(v, k, 2, 0);
    }
}

/* A literal: present values, neighbours, the min / max of the data and
 * beyond, the frame-of-reference bases and largest packed values (both
 * views), the kind's limits, random. */
static uint64_t draw_lit(enum qv_value_kind k, const void *v, int64_t n, uint64_t *s) {
    const int sg = kind_signed(k);
    uint64_t umin = UINT64_MAX, umax = 0;
    int64_t smin = INT64_MAX, smax = INT64_MIN;
    /* Cheap enough: the columns are a few thousand values. */
    for (int64_t i = 0; i < n; i += 1 + i / 64) {
        uint64_t x = get_raw(v, k, i);
        uint64_t u = sg ? x - (uint64_t)kmin(k) : x; /* order-preserving view */
        if (u < umin) umin = u;
        if (u > umax) umax = u;
        if ((int64_t)x < smin) smin = (int64_t)x;
        if ((int64_t)x > smax) smax = (int64_t)x;
    }
    uint64_t x = n ? get_raw(v, k, (int64_t)(rng_next(s) % (uint64_t)n)) : 0;
    const uint64_t lo = sg ? umin + (uint64_t)kmin(k) : umin, hi = sg ? umax + (uint64_t)kmin(k) : umax;
    unsigned bits = 0;
    while (bits < 64 && ((umax - umin) >> bits)) bits++;
    const uint64_t span = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    switch (rng_next(s) % 14) {
    case 0:
    case 1:
    case 2: return x;
    case 3: return x + 1;
    case 4: return x - 1;
    case 5: return lo - 1 - rng_next(s) % 3; /* below the min (may wrap) */
    case 6: return hi + 1 + rng_next(s) % 3; /* above the max */
    case 7: return lo;                       /* the FOR base (ordered view) */
    case 8: return (uint64_t)smin;           /* the base of the other view */
    case 9: return lo + span;                /* the largest packed value */
    case 10: return (uint64_t)smax + (rng_next(s) % 2);
    case 11: return sg ? (uint64_t)kmin(k) : 0;
    case 12: return kmax(k) + (rng_next(s) % 2 ? 0 : (sg ? 1 : 0));
    default: return rng_next(s) % 2 ? rng_next(s) : fit(k, rng_next(s));
    }
}

/* Random selection over n bits: none, all, random density, whole vectors
 * left out. */
static uint64_t *draw_sel(int64_t n, uint64_t *s) {
    int mode = (int)(rng_next(s) % 5);
    if (mode == 0) return NULL;
    int64_t nw = (n + 63) / 64;
    uint64_t *sel = calloc((size_t)(nw ? nw : 1), 8);
    unsigned dens = (unsigned)(rng_next(s) % 100);
    for (int64_t i = 0; i < n; i++) {
        int on;
        switch (mode) {
        case 1: on = 1; break;
        case 2: on = rng_next(s) % 100 < dens; break;
        case 3: on = ((i / 1024) % 2 == 0) && rng_next(s) % 3 == 0; break;
        default: on = rng_next(s) % 1000 == 0; break;
        }
        if (on) sel[i >> 6] |= UINT64_C(1) << (i & 63);
    }
    if (nw && (n & 63)) sel[nw - 1] |= ~UINT64_C(0) << (n & 63); /* garbage past n */
    return sel;
}

static void draw_window(int64_t n, uint64_t *s, int64_t *start, int64_t *len) {
    switch (rng_next(s) % 4) {
    case 0:
        *start = 0;
        *len = n;
        break;
    case 1:
        *start = n ? (int64_t)(rng_next(s) % (uint64_t)(n / 1024 + 1)) * 1024 : 0;
        if (*start > n) *start = n;
        *len = n - *start < 2048 ? n - *start : 2048;
        break;
    default:
        *start = (int64_t)(rng_next(s) % (uint64_t)(n + 1));
        *len = (int64_t)(rng_next(s) % (uint64_t)(n - *start + 1));
        if (rng_next(s) % 3 == 0 && *len > 70) *len = (int64_t)(rng_next(s) % 70);
        break;
    }
}

/* Runs p over a random window of the n values with a random selection
 * (drawn from *s in that order); the window, the selection and the output
 * bitmap (both for the caller to free) are returned beside the filter's
 * return code. */
static int filter_window(struct qv_decoder *d, int64_t n, uint64_t *s,
                         const struct qv_enc_pred *p, int64_t *start, int64_t *len,
                         uint64_t **sel, uint64_t **out, struct qv_error *err) {
    draw_window(n, s, start, len);
    *sel = draw_sel(*len, s);
    *out = calloc((size_t)(*len / 64 + 2), 8);
    return qv_decoder_filter(d, *start, *len, p, *sel, *out, err);
}

static void check_bits(const uint64_t *out, const uint64_t *sel, int64_t len, const char *what,
                       int (*expect)(void *, int64_t), void *ctx) {
    for (int64_t i = 0; i < len; i++) {
        int want = (!sel || ((sel[i >> 6] >> (i & 63)) & 1)) && expect(ctx, i);
        int got = (int)((out[i >> 6] >> (i & 63)) & 1);
        if (want != got) fail_msg("%s: row %lld: expected %d, got %d", what, (long long)i, want, got);
    }
}

struct int_case {
    enum qv_value_kind k;
    const void *vals;
    int64_t start;
    const struct qv_enc_pred *p;
};
static int expect_int(void *ctx, int64_t i) {
    struct int_case *c = ctx;
    return oracle_int(c->k, c->p, get_raw(c->vals, c->k, c->start + i));
}

/* Encodes, decodes with qv_decode, then runs `preds` random predicates. */
static void run_int(struct enc_env *env, enum qv_value_kind k, int pattern, int force, int preds,
                    uint64_t seed) {
    uint64_t s = seed;
    int64_t n = 1 + (int64_t)(rng_next(&s) % 5000);
    struct col c = col_words(k, n);
    gen_ints(k, pattern, n, c.values, &s);
    struct qv_encode_options opts = {.force = force};
    struct qv_encoded enc;
    struct qv_error err = {0};
    int rc = qv_encode(&c.v, &opts, env->r, &enc, &err);
    if (rc == EINVAL && force != QV_ENC_AUTO) { /* e.g. constant on unequal values */
        col_free(&c);
        return;
    }
    if (rc) fail_msg("encode %s %s: %s", qv_value_kind_name(k), qv_encoding_name(force), err.message);
    void *dec = calloc(1, (size_t)n * 8 + 8);
    struct qv_decode_out o = {.values = dec};
    assert_int_equal(qv_decode(enc.data, enc.size, k, 0, n, env->r, &o, &err), 0);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, k, 0, n, env->r, &d, &err), 0);
    const int root = root_encoding(&enc);
    const int level = qv__cpu_set_level((seed >> 1) & 1 ? QV__CPU_BASELINE : QV__CPU_AVX2);
    char what[160];
    for (int t = 0; t < preds; t++) {
        struct qv_enc_pred p = {0};
        p.op = (int)(rng_next(&s) % (QV_ENC_OP_BETWEEN + 1));
        uint64_t a = draw_lit(k, dec, n, &s), b = draw_lit(k, dec, n, &s);
        if (p.op == QV_ENC_OP_BETWEEN && rng_next(&s) % 4) {
            int lt = kind_signed(k) ? (int64_t)b < (int64_t)a : b < a;
            if (lt) { uint64_t x = a; a = b; b = x; }
        }
        p.lo = (int64_t)a, p.hi = (int64_t)b, p.ulo = a, p.uhi = b;
        int64_t start, len;
        uint64_t *sel, *out;
        rc = filter_window(d, n, &s, &p, &start, &len, &sel, &out, &err);
        snprintf(what, sizeof what, "%s %s (root %s) pattern %d op %d lit %llu/%llu [%lld,+%lld)",
                 qv_value_kind_name(k), qv_encoding_name(force), qv_encoding_name(root), pattern,
                 p.op, (unsigned long long)a, (unsigned long long)b, (long long)start,
                 (long long)len);
        if (rc) fail_msg("%s: rc %d: %s", what, rc, err.message);
        struct int_case ic = {k, dec, start, &p};
        check_bits(out, sel, len, what, expect_int, &ic);
        g_answered[root]++;
        free(sel);
        free(out);
    }
    qv__cpu_set_level(level);
    qv_decoder_close(d);
    free(dec);
    qv_encoded_release(env->r, &enc);
    col_free(&c);
}

static const enum qv_value_kind int_kinds[] = {QV_KIND_INT8,  QV_KIND_UINT8,  QV_KIND_INT16,
                                               QV_KIND_UINT16, QV_KIND_INT32, QV_KIND_UINT32,
                                               QV_KIND_INT64,  QV_KIND_UINT64};
static const int int_encs[] = {QV_ENC_PLAIN, QV_ENC_BITPACK, QV_ENC_FOR,    QV_ENC_DELTA,
                               QV_ENC_ZIGZAG, QV_ENC_DICT,   QV_ENC_RLE,    QV_ENC_SPARSE,
                               QV_ENC_ZSTD,  QV_ENC_LZ4,     QV_ENC_CONSTANT, QV_ENC_AUTO};

static void test_int_oracle(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    memset(g_answered, 0, sizeof g_answered);
    uint64_t seed = 1;
    for (size_t e = 0; e < sizeof int_encs / sizeof int_encs[0]; e++) {
        for (size_t ki = 0; ki < 8; ki++) {
            int patterns = int_encs[e] == QV_ENC_CONSTANT ? 1 : P_COUNT;
            for (int pt = 0; pt < patterns; pt++) {
                int pattern = int_encs[e] == QV_ENC_CONSTANT ? P_CONST : pt;
                /* 8 kinds x 7 patterns x 90: about 5,000 per encoding;
                 * constant has one pattern and gets as many. */
                int preds = int_encs[e] == QV_ENC_CONSTANT ? 620 : 90;
                run_int(&env, int_kinds[ki], pattern, int_encs[e], preds, seed++ * 7919);
            }
        }
    }
    for (size_t e = 0; e < sizeof int_encs / sizeof int_encs[0]; e++) {
        int id = int_encs[e];
        if (id == QV_ENC_AUTO) continue;
        if (g_answered[id] < PER_KERNEL)
            fail_msg("%s answered %lld integer predicates (< %d)", qv_encoding_name(id),
                     (long long)g_answered[id], PER_KERNEL);
    }
    env_close(&env);
}

/* ---- Binary ---- */

static const char *words[] = {"", "a", "ab", "abc", "AIR", "AIR REG", "RAIL", "SHIP", "TRUCK",
                              "MAIL", "FOB", "http://example.com/", "http://example.com/x",
                              "DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"};
#define NWORDS (sizeof words / sizeof words[0])
static int g_strpat;
static size_t gen_str(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)cap;
    const char *w;
    switch (g_strpat) {
    case 0: w = words[rng_next(s) % NWORDS]; break;
    case 1: w = words[(i / 50) % NWORDS]; break; /* runs */
    case 2: w = words[5]; break;                 /* constant */
    default: {
        /* Long-ish text with shared prefixes. */
        size_t l = 0, want = rng_next(s) % 40;
        const char *p = words[11 + rng_next(s) % 2];
        memcpy(b, p, strlen(p));
        l = strlen(p);
        while (l < want + 19) b[l++] = (uint8_t)('a' + rng_next(s) % 26);
        return l;
    }
    }
    memcpy(b, w, strlen(w));
    return strlen(w);
}

struct str_case {
    const struct qv_decode_out *o;
    enum qv_value_kind k;
    int64_t start;
    const struct qv_enc_pred *p;
};
static int expect_str(void *ctx, int64_t i) {
    struct str_case *c = ctx;
    int64_t j = c->start + i, a, b;
    if (c->k == QV_KIND_BINARY) {
        a = ((const int32_t *)c->o->values)[j];
        b = ((const int32_t *)c->o->values)[j + 1];
    } else {
        a = ((const int64_t *)c->o->values)[j];
        b = ((const int64_t *)c->o->values)[j + 1];
    }
    size_t l = (size_t)(b - a);
    const uint8_t *v = c->o->data + a;
    switch (c->p->op) {
    case QV_ENC_OP_EQ: return l == c->p->len && (!l || !memcmp(v, c->p->bytes, l));
    case QV_ENC_OP_NE: return !(l == c->p->len && (!l || !memcmp(v, c->p->bytes, l)));
    default: return l >= c->p->len && (!c->p->len || !memcmp(v, c->p->bytes, c->p->len));
    }
}

static void run_str(struct enc_env *env, enum qv_value_kind k, int pattern, int force, int preds,
                    uint64_t seed) {
    uint64_t s = seed;
    int64_t n = 1 + (int64_t)(rng_next(&s) % 5000);
    g_strpat = pattern;
    struct col c = col_strings(k, n, gen_str, seed);
    struct qv_encode_options opts = {.force = force};
    struct qv_encoded enc;
    struct qv_error err = {0};
    int rc = qv_encode(&c.v, &opts, env->r, &enc, &err);
    if (rc == EINVAL && force != QV_ENC_AUTO) {
        col_free(&c);
        return;
    }
    if (rc) fail_msg("encode %s %s: %s", qv_value_kind_name(k), qv_encoding_name(force), err.message);
    struct qv_decode_out o = {.values = calloc((size_t)(n + 1), 8)};
    assert_int_equal(qv_decode(enc.data, enc.size, k, 0, n, env->r, &o, &err), 0);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, k, 0, n, env->r, &d, &err), 0);
    const int root = root_encoding(&enc);
    char what[200];
    uint8_t lit[128];
    for (int t = 0; t < preds; t++) {
        struct qv_enc_pred p = {0};
        static const int ops[] = {QV_ENC_OP_EQ, QV_ENC_OP_NE, QV_ENC_OP_PREFIX};
        p.op = ops[rng_next(&s) % 3];
        /* A present value, a prefix of one, one with a byte appended, a
         * word list entry, or random bytes. */
        struct str_case sc = {&o, k, 0, &p};
        int64_t j = (int64_t)(rng_next(&s) % (uint64_t)n);
        int64_t a = k == QV_KIND_BINARY ? ((int32_t *)o.values)[j] : ((int64_t *)o.values)[j];
        int64_t b = k == QV_KIND_BINARY ? ((int32_t *)o.values)[j + 1] : ((int64_t *)o.values)[j + 1];
        size_t l = (size_t)(b - a) < 100 ? (size_t)(b - a) : 100;
        memcpy(lit, o.data + a, l);
        switch (rng_next(&s) % 5) {
        case 0: break;
        case 1: l = l ? (size_t)(rng_next(&s) % l) : 0; break;
        case 2: lit[l++] = (uint8_t)rng_next(&s); break;
        case 3: {
            const char *w = words[rng_next(&s) % NWORDS];
            l = strlen(w);
            memcpy(lit, w, l);
            break;
        }
        default:
            l = rng_next(&s) % 5;
            for (size_t i = 0; i < l; i++) lit[i] = (uint8_t)('a' + rng_next(&s) % 3);
            break;
        }
        p.bytes = lit;
        p.len = l;
        int64_t start, len;
        uint64_t *sel, *out;
        rc = filter_window(d, n, &s, &p, &start, &len, &sel, &out, &err);
        snprintf(what, sizeof what, "%s %s (root %s) pattern %d op %d len %zu [%lld,+%lld)",
                 qv_value_kind_name(k), qv_encoding_name(force), qv_encoding_name(root), pattern,
                 p.op, l, (long long)start, (long long)len);
        if (rc) fail_msg("%s: rc %d: %s", what, rc, err.message);
        sc.start = start;
        check_bits(out, sel, len, what, expect_str, &sc);
        g_answered[root]++;
        free(sel);
        free(out);
    }
    qv_decoder_close(d);
    free(o.values);
    if (o.data) qv_free(env->r, o.data, o.data_capacity);
    qv_encoded_release(env->r, &enc);
    col_free(&c);
}

static void test_str_oracle(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    memset(g_answered, 0, sizeof g_answered);
    static const int encs[] = {QV_ENC_PLAIN, QV_ENC_DICT, QV_ENC_FSST, QV_ENC_ZSTD,
                               QV_ENC_LZ4,   QV_ENC_CONSTANT, QV_ENC_AUTO};
    uint64_t seed = 99;
    for (size_t e = 0; e < sizeof encs / sizeof encs[0]; e++) {
        for (int k = 0; k < 2; k++) {
            for (int pt = 0; pt < 4; pt++) {
                int pattern = encs[e] == QV_ENC_CONSTANT ? 2 : pt;
                run_str(&env, k ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY, pattern, encs[e], 620,
                        seed++ * 104729);
            }
        }
    }
    for (size_t e = 0; e + 1 < sizeof encs / sizeof encs[0]; e++)
        if (g_answered[encs[e]] < PER_KERNEL)
            fail_msg("%s answered %lld binary predicates (< %d)", qv_encoding_name(encs[e]),
                     (long long)g_answered[encs[e]], PER_KERNEL);
    env_close(&env);
}

/* ---- EVAL: the callback on the decoder's own values ---- */

/* Ints: v % 3 == 0 (signed view); floats: v < 0.5; binary: shorter than 4
 * bytes or starting below 'M'. */
static int eval_one(enum qv_value_kind k, const void *vals, const uint8_t *data, int64_t i) {
    if (k == QV_KIND_FLOAT64) return ((const double *)vals)[i] < 0.5;
    if (k == QV_KIND_FLOAT32) return ((const float *)vals)[i] < 0.5f;
    if (k == QV_KIND_LARGE_BINARY || k == QV_KIND_BINARY) {
        int64_t a, b;
        if (k == QV_KIND_BINARY) {
            a = ((const int32_t *)vals)[i];
            b = ((const int32_t *)vals)[i + 1];
        } else {
            a = ((const int64_t *)vals)[i];
            b = ((const int64_t *)vals)[i + 1];
        }
        return b - a < 4 || data[a] < 'M';
    }
    return (int64_t)get_raw(vals, k, i) % 3 == 0;
}

static int g_eval_calls;
static int eval_cb(void *ctx, const struct qv_values *v, uint64_t *out, struct qv_error *err) {
    (void)ctx;
    (void)err;
    g_eval_calls++;
    for (int64_t i = 0; i < v->count; i++)
        if (eval_one(v->kind, v->values, v->data, i)) out[i >> 6] |= UINT64_C(1) << (i & 63);
    return 0;
}

struct eval_case {
    enum qv_value_kind k;
    const struct qv_decode_out *o;
    int64_t start;
};
static int expect_eval(void *ctx, int64_t i) {
    struct eval_case *c = ctx;
    return eval_one(c->k, c->o->values, c->o->data, c->start + i);
}

static void run_eval(struct enc_env *env, struct col *c, int force, int want_rc, uint64_t seed) {
    struct qv_encode_options opts = {.force = force};
    struct qv_encoded enc;
    struct qv_error err = {0};
    const enum qv_value_kind k = c->v.kind;
    const int64_t n = c->v.count;
    int rc = qv_encode(&c->v, &opts, env->r, &enc, &err);
    if (rc) fail_msg("encode %s %s: %s", qv_value_kind_name(k), qv_encoding_name(force), err.message);
    struct qv_decode_out o = {.values = calloc((size_t)(n + 1), 8)};
    assert_int_equal(qv_decode(enc.data, enc.size, k, 0, n, env->r, &o, &err), 0);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, k, 0, n, env->r, &d, &err), 0);
    uint64_t s = seed;
    for (int t = 0; t < 200; t++) {
        struct qv_enc_pred p = {.op = QV_ENC_OP_EVAL, .eval = eval_cb};
        int64_t start, len;
        uint64_t *sel, *out;
        rc = filter_window(d, n, &s, &p, &start, &len, &sel, &out, &err);
        /* An empty range answers at once, whatever the tree. */
        const int want = len ? want_rc : 0;
        if (rc != want)
            fail_msg("EVAL %s %s [%lld,+%lld): rc %d, expected %d (%s)", qv_value_kind_name(k),
                     qv_encoding_name(force), (long long)start, (long long)len, rc, want,
                     err.message);
        if (!rc) {
            struct eval_case ec = {k, &o, start};
            check_bits(out, sel, len, "EVAL", expect_eval, &ec);
        }
        free(sel);
        free(out);
    }
    qv_decoder_close(d);
    free(o.values);
    if (o.data) qv_free(env->r, o.data, o.data_capacity);
    qv_encoded_release(env->r, &enc);
}

static void test_eval(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    uint64_t s = 5;
    const int64_t n = 3000;
    /* Integers and floats with few distinct values, in runs. */
    struct col ci = col_words(QV_KIND_INT32, n), cf = col_words(QV_KIND_FLOAT64, n),
               cc = col_words(QV_KIND_INT64, n);
    for (int64_t i = 0; i < n; i++) {
        ((int32_t *)ci.values)[i] = (int32_t)((i / 37) % 11) - 4;
        ((double *)cf.values)[i] = i % 40 ? 0.25 : (double)(i % 7) / 7.0;
        ((int64_t *)cc.values)[i] = -9;
    }
    g_eval_calls = 0;
    static const int ok_encs[] = {QV_ENC_DICT, QV_ENC_RLE, QV_ENC_SPARSE};
    static const int no_encs[] = {QV_ENC_PLAIN, QV_ENC_BITPACK, QV_ENC_FOR, QV_ENC_DELTA};
    for (size_t e = 0; e < 3; e++) {
        run_eval(&env, &ci, ok_encs[e], 0, s++);
        run_eval(&env, &cf, ok_encs[e], 0, s++);
    }
    for (size_t e = 0; e < 4; e++) run_eval(&env, &ci, no_encs[e], ENOTSUP, s++);
    run_eval(&env, &cf, QV_ENC_ALP, ENOTSUP, s++);
    run_eval(&env, &cc, QV_ENC_CONSTANT, 0, s++);
    assert_true(g_eval_calls > 0);
    /* Binary: dictionary and constant run it; FSST and plain do not. */
    g_strpat = 0;
    struct col cs = col_strings(QV_KIND_BINARY, n, gen_str, 3);
    run_eval(&env, &cs, QV_ENC_DICT, 0, s++);
    run_eval(&env, &cs, QV_ENC_FSST, ENOTSUP, s++);
    run_eval(&env, &cs, QV_ENC_PLAIN, ENOTSUP, s++);
    /* A dictionary keeps its entries' answers for the same callback and
     * context, and asks again for another context. */
    {
        struct qv_encode_options o = {.force = QV_ENC_DICT};
        struct qv_encoded e;
        struct qv_error err = {0};
        struct qv_decoder *d;
        assert_int_equal(qv_encode(&ci.v, &o, env.r, &e, &err), 0);
        assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT32, 0, n, env.r, &d, &err), 0);
        uint64_t out[64];
        int ctx1, ctx2;
        struct qv_enc_pred p = {.op = QV_ENC_OP_EVAL, .eval = eval_cb, .eval_ctx = &ctx1};
        g_eval_calls = 0;
        assert_int_equal(qv_decoder_filter(d, 0, 1000, &p, NULL, out, &err), 0);
        assert_int_equal(qv_decoder_filter(d, 1000, 1000, &p, NULL, out, &err), 0);
        assert_int_equal(g_eval_calls, 1);
        p.eval_ctx = &ctx2;
        assert_int_equal(qv_decoder_filter(d, 0, 1000, &p, NULL, out, &err), 0);
        assert_int_equal(g_eval_calls, 2);
        qv_decoder_close(d);
        qv_encoded_release(env.r, &e);
    }
    g_strpat = 2;
    struct col cs2 = col_strings(QV_KIND_LARGE_BINARY, n, gen_str, 3);
    run_eval(&env, &cs2, QV_ENC_CONSTANT, 0, s++);
    col_free(&ci);
    col_free(&cf);
    col_free(&cc);
    col_free(&cs);
    col_free(&cs2);
    env_close(&env);
}

/* ---- Arguments ---- */

static void test_arguments(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 2000;
    struct col ci = col_words(QV_KIND_INT16, n), cf = col_words(QV_KIND_FLOAT32, n);
    for (int64_t i = 0; i < n; i++) ((int16_t *)ci.values)[i] = (int16_t)(i % 300);
    g_strpat = 0;
    struct col cs = col_strings(QV_KIND_BINARY, n, gen_str, 3);
    struct qv_encoded ei, ef, es;
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&ci.v, NULL, env.r, &ei, &err), 0);
    assert_int_equal(qv_encode(&cf.v, NULL, env.r, &ef, &err), 0);
    assert_int_equal(qv_encode(&cs.v, NULL, env.r, &es, &err), 0);
    struct qv_decoder *di, *df, *ds;
    assert_int_equal(qv_decoder_open(ei.data, ei.size, QV_KIND_INT16, 0, n, env.r, &di, &err), 0);
    assert_int_equal(qv_decoder_open(ef.data, ef.size, QV_KIND_FLOAT32, 0, n, env.r, &df, &err), 0);
    assert_int_equal(qv_decoder_open(es.data, es.size, QV_KIND_BINARY, 0, n, env.r, &ds, &err), 0);
    uint64_t out[64], sel[64];
    memset(sel, 0xff, sizeof sel);
    struct qv_enc_pred p = {.op = QV_ENC_OP_LT, .lo = 10};
    assert_int_equal(qv_decoder_filter(di, 1990, 11, &p, NULL, out, &err), EINVAL);
    assert_int_equal(qv_decoder_filter(di, -1, 5, &p, NULL, out, &err), EINVAL);
    assert_int_equal(qv_decoder_filter(di, 0, 64, &p, out, out, &err), EINVAL);
    assert_int_equal(qv_decoder_filter(di, 0, 64, NULL, NULL, out, &err), EINVAL);
    p.op = QV_ENC_OP_PREFIX;
    assert_int_equal(qv_decoder_filter(di, 0, 64, &p, NULL, out, &err), EINVAL);
    p.op = 42;
    assert_int_equal(qv_decoder_filter(di, 0, 64, &p, NULL, out, &err), EINVAL);
    p.op = QV_ENC_OP_EVAL;
    assert_int_equal(qv_decoder_filter(di, 0, 64, &p, NULL, out, &err), EINVAL);
    p.op = QV_ENC_OP_LT;
    assert_int_equal(qv_decoder_filter(ds, 0, 64, &p, NULL, out, &err), EINVAL);
    assert_int_equal(qv_decoder_filter(df, 0, 64, &p, NULL, out, &err), ENOTSUP);
    /* An empty range answers nothing and reads nothing. */
    assert_int_equal(qv_decoder_filter(di, n, 0, &p, NULL, NULL, &err), 0);
    /* Every row of a literal above the kind's max. */
    p.lo = 40000;
    memset(out, 0xaa, sizeof out);
    assert_int_equal(qv_decoder_filter(di, 100, 1000, &p, sel, out, &err), 0);
    for (int64_t i = 0; i < 1000; i++) assert_true((out[i >> 6] >> (i & 63)) & 1);
    qv_decoder_close(di);
    qv_decoder_close(df);
    qv_decoder_close(ds);
    qv_encoded_release(env.r, &ei);
    qv_encoded_release(env.r, &ef);
    qv_encoded_release(env.r, &es);
    col_free(&ci);
    col_free(&cf);
    col_free(&cs);
    env_close(&env);
}

/* ---- Corrupt bytes ---- */

static void env_open_limited(struct enc_env *env) {
    struct qv_error err;
    struct qv_pool_options po = {0};
    po.name = "enc-filter-corrupt";
    po.limit = 256u << 20;
    assert_int_equal(qv_pool_create(&po, &env->pool, &err), 0);
    assert_int_equal(qv_reservation_create(env->pool, NULL, &env->r, &err), 0);
}

static void corrupt_one(struct enc_env *env, const struct qv_values *v, int force, uint64_t seed) {
    struct qv_encode_options opts = {.force = force};
    struct qv_encoded enc;
    struct qv_error err = {0};
    if (qv_encode(v, &opts, env->r, &enc, &err)) return;
    uint64_t s = seed;
    uint8_t *copy = malloc(enc.size + 8);
    for (int t = 0; t < 300; t++) {
        memcpy(copy, enc.data, enc.size);
        size_t size = enc.size;
        if (t % 5 == 4) size = (size_t)(rng_next(&s) % (enc.size / 8 + 1)) * 8;
        else
            for (int f = 0, nf = 1 + (int)(rng_next(&s) % 3); f < nf && size; f++)
                copy[rng_next(&s) % size] ^= (uint8_t)(1u << (rng_next(&s) % 8));
        struct qv_decoder *d;
        int rc = qv_decoder_open(copy, size, v->kind, 0, v->count, env->r, &d, &err);
        if (rc) {
            if (rc != EIO && rc != ENOMEM) fail_msg("open of corrupt bytes: rc %d (%s)", rc, err.message);
            continue;
        }
        for (int q = 0; q < 6; q++) {
            struct qv_enc_pred p = {0};
            uint8_t lit[4] = {'A', 'I', 'R', 0};
            if (is_bin(v->kind)) {
                p.op = q % 2 ? QV_ENC_OP_EQ : QV_ENC_OP_PREFIX;
                p.bytes = lit;
                p.len = (size_t)(q % 4);
            } else {
                p.op = (int)(rng_next(&s) % (QV_ENC_OP_BETWEEN + 1));
                p.lo = (int64_t)(rng_next(&s) % 50) - 10;
                p.hi = p.lo + 20;
                p.ulo = (uint64_t)p.lo;
                p.uhi = (uint64_t)p.hi;
            }
            int64_t start, len;
            draw_window(v->count, &s, &start, &len);
            uint64_t *out = calloc((size_t)(len / 64 + 2), 8);
            rc = qv_decoder_filter(d, start, len, &p, NULL, out, &err);
            if (rc && rc != EIO && rc != ENOMEM && rc != EOVERFLOW)
                fail_msg("filter of corrupt bytes: rc %d (%s)", rc, err.message);
            free(out);
        }
        qv_decoder_close(d);
    }
    free(copy);
    qv_encoded_release(env->r, &enc);
}

static void test_corrupt(void **state) {
    (void)state;
    struct enc_env env;
    env_open_limited(&env);
    const int64_t n = 2500;
    uint64_t s = 11;
    struct col ci = col_words(QV_KIND_INT32, n);
    gen_ints(QV_KIND_INT32, P_RUNS, n, ci.values, &s);
    for (size_t e = 0; e < sizeof int_encs / sizeof int_encs[0]; e++)
        corrupt_one(&env, &ci.v, int_encs[e], s++);
    struct col cu = col_words(QV_KIND_UINT64, n);
    gen_ints(QV_KIND_UINT64, P_SPARSE, n, cu.values, &s);
    corrupt_one(&env, &cu.v, QV_ENC_SPARSE, s++);
    corrupt_one(&env, &cu.v, QV_ENC_FOR, s++);
    g_strpat = 3;
    struct col cs = col_strings(QV_KIND_BINARY, n, gen_str, 3);
    static const int b_encs[] = {QV_ENC_PLAIN, QV_ENC_DICT, QV_ENC_FSST, QV_ENC_ZSTD, QV_ENC_LZ4};
    for (size_t e = 0; e < 5; e++) corrupt_one(&env, &cs.v, b_encs[e], s++);
    col_free(&ci);
    col_free(&cu);
    col_free(&cs);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_oracle),
        cmocka_unit_test(test_str_oracle),
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
