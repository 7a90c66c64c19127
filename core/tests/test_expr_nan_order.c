/* The NaN order of the predicate language (enum qv_nan_order): every
 * comparison form on NaN, -0.0 / 0.0, infinities and NULL, on float64 and
 * float32 columns, under both orders, checked row by row against an oracle
 * written here; and pruning under both orders: targeted zones, and a
 * brute-force check that no zone where evaluation selects a row is ever
 * skipped, whatever the statistics say or leave out. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quiver/format.h"
#include "quiver/scan.h"

struct env {
    struct qv_pool *pool;
    struct qv_reservation *r, *scratch;
};

static int setup(void **state) {
    struct env *e = calloc(1, sizeof *e);
    struct qv_error err;
    assert_int_equal(qv_pool_create(NULL, &e->pool, &err), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->r, &err), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->scratch, &err), 0);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    struct env *e = *state;
    assert_int_equal(qv_reservation_used(e->scratch), 0);
    qv_reservation_destroy(e->scratch);
    qv_reservation_destroy(e->r);
    qv_pool_destroy(e->pool);
    free(e);
    return 0;
}

/* Columns: f and g float64, h float32, i int32. */
static const struct qv_field cols[] = {
    {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "g", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "h", .type = QV_TYPE_FLOAT32, .nullable = true},
    {.name = "i", .type = QV_TYPE_INT32, .nullable = true},
};
static const struct qv_field root_field = {.type = QV_TYPE_STRUCT, .n_children = 4, .children = cols};

/* A value of a row: `null` or the double v. */
struct val {
    bool null;
    double v;
};

/* The values rows take: two NaN payloads, the infinities, both zeros. */
static double neg_nan(void) {
    double d;
    uint64_t bits = UINT64_C(0xfff8000000000123); /* a negative NaN with a payload */
    memcpy(&d, &bits, 8);
    return d;
}
#define NV 10
static struct val pool_v[NV];
static void init_pool(void) {
    const double xs[] = {NAN, 0, -INFINITY, -1.5, -0.0, 0.0, 1.5, 5, INFINITY};
    for (int k = 0; k < 9; k++) pool_v[k] = (struct val){.v = xs[k]};
    pool_v[1].v = neg_nan();
    pool_v[9] = (struct val){.null = true};
}

/* Builds a batch of n rows; column c of row k is vals[c][k]. */
static void build(struct env *E, const struct qv_schema *s, struct val vals[4][16], int n,
                  struct ArrowArray *out) {
    struct qv_error err;
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(s, E->r, NULL, &b, &err), 0);
    for (int k = 0; k < n; k++) {
        for (int c = 0; c < 4; c++) {
            struct qv_appender *a = qv_builder_column(b, c);
            const struct val *x = &vals[c][k];
            int rc;
            if (x->null) rc = qv_append_null(a);
            else if (c < 2) rc = qv_append_float64(a, x->v);
            else if (c == 2) rc = qv_append_float32(a, (float)x->v);
            else rc = qv_append_int32(a, (int32_t)x->v);
            assert_int_equal(rc, 0);
        }
    }
    assert_int_equal(qv_builder_finish(b, out, &err), 0);
    qv_builder_destroy(b);
}

/* ---- The oracle ---- */

enum { TV_F = 0, TV_T = 1, TV_N = 2 };

/* -1 / 0 / 1, or 2 for unordered (IEEE with a NaN). */
static int ord(double x, double y, int order) {
    bool nx = isnan(x), ny = isnan(y);
    if (order == QV_NAN_LARGEST) {
        if (nx && ny) return 0;
        if (nx) return 1;
        if (ny) return -1;
    } else if (nx || ny) {
        return 2;
    }
    return x < y ? -1 : x > y ? 1 : 0;
}

static int holds(int c, int op) {
    if (c == 2) return op == QV_CMP_NE;
    switch (op) {
    case QV_CMP_EQ: return c == 0;
    case QV_CMP_NE: return c != 0;
    case QV_CMP_LT: return c < 0;
    case QV_CMP_LE: return c <= 0;
    case QV_CMP_GT: return c > 0;
    default: return c >= 0;
    }
}

static int tv_not(int a) { return a == TV_N ? TV_N : !a; }
static int tv_and(int a, int b) {
    if (a == TV_F || b == TV_F) return TV_F;
    return (a == TV_N || b == TV_N) ? TV_N : TV_T;
}
static int tv_or(int a, int b) {
    if (a == TV_T || b == TV_T) return TV_T;
    return (a == TV_N || b == TV_N) ? TV_N : TV_F;
}

static int cmp_tv(struct val x, int op, struct val y, int order) {
    if (x.null || y.null) return TV_N;
    return holds(ord(x.v, y.v, order), op);
}

/* ---- Predicates: a form, its text and its oracle ---- */

static const char *const op_text[] = {"=", "!=", "<", "<=", ">", ">="};

struct lit {
    const char *text;
    struct val v;
};
static const struct lit lits[] = {
    {"NaN", {.v = NAN}},       {"-Infinity", {.v = -INFINITY}}, {"Infinity", {.v = INFINITY}},
    {"-0.0", {.v = -0.0}},     {"0", {.v = 0.0}},               {"1.5", {.v = 1.5}},
    {"-1.5", {.v = -1.5}},     {"5", {.v = 5}},                 {"NULL", {.null = true}},
};
#define NLITS ((int)(sizeof lits / sizeof lits[0]))

enum { P_CMP, P_IN, P_BETWEEN, P_COLCOL, P_OR_EQ, P_AND_NE };

struct pred {
    int kind;
    int col, col2; /* column indices */
    int op;
    bool negate;
    int n;
    int lit[4]; /* indices into lits */
};

static const char *const col_name[] = {"f", "g", "h", "i"};

static void pred_text(const struct pred *p, char *buf, size_t cap) {
    int o = 0;
    const char *c = col_name[p->col];
    switch (p->kind) {
    case P_CMP: snprintf(buf, cap, "%s %s %s", c, op_text[p->op], lits[p->lit[0]].text); return;
    case P_COLCOL: snprintf(buf, cap, "%s %s %s", c, op_text[p->op], col_name[p->col2]); return;
    case P_BETWEEN:
        snprintf(buf, cap, "%s %sBETWEEN %s AND %s", c, p->negate ? "NOT " : "",
                 lits[p->lit[0]].text, lits[p->lit[1]].text);
        return;
    case P_IN:
        o = snprintf(buf, cap, "%s %sIN (", c, p->negate ? "NOT " : "");
        for (int k = 0; k < p->n; k++)
            o += snprintf(buf + o, cap - (size_t)o, "%s%s", k ? ", " : "", lits[p->lit[k]].text);
        snprintf(buf + o, cap - (size_t)o, ")");
        return;
    default:
        for (int k = 0; k < p->n; k++)
            o += snprintf(buf + o, cap - (size_t)o, "%s%s %s %s",
                          k ? (p->kind == P_OR_EQ ? " OR " : " AND ") : "", c,
                          p->kind == P_OR_EQ ? "=" : "!=", lits[p->lit[k]].text);
        return;
    }
}

static int pred_tv(const struct pred *p, struct val row[4], int order) {
    struct val x = row[p->col];
    switch (p->kind) {
    case P_CMP: return cmp_tv(x, p->op, lits[p->lit[0]].v, order);
    case P_COLCOL: return cmp_tv(x, p->op, row[p->col2], order);
    case P_BETWEEN: {
        int t = tv_and(cmp_tv(x, QV_CMP_GE, lits[p->lit[0]].v, order),
                       cmp_tv(x, QV_CMP_LE, lits[p->lit[1]].v, order));
        return p->negate ? tv_not(t) : t;
    }
    case P_IN: {
        int t = TV_F;
        for (int k = 0; k < p->n; k++) t = tv_or(t, cmp_tv(x, QV_CMP_EQ, lits[p->lit[k]].v, order));
        return p->negate ? tv_not(t) : t;
    }
    case P_OR_EQ: {
        int t = TV_F;
        for (int k = 0; k < p->n; k++) t = tv_or(t, cmp_tv(x, QV_CMP_EQ, lits[p->lit[k]].v, order));
        return t;
    }
    default: {
        int t = TV_T;
        for (int k = 0; k < p->n; k++) t = tv_and(t, cmp_tv(x, QV_CMP_NE, lits[p->lit[k]].v, order));
        return t;
    }
    }
}

/* Every form on the float columns, and NaN against the integer column. */
static int all_preds(struct pred *out, int cap) {
    int n = 0;
    static const int fcols[] = {0, 2};
    static const int lists[][4] = {{0, -1}, {0, 5, -1}, {4, -1}, {3, 2, -1}, {0, 8, -1},
                                   {5, 8, -1}, {1, 2, 0, -1}};
    static const int ranges[][2] = {{5, 0}, {1, 2}, {0, 0}, {3, 4}, {6, 5}, {2, 0}, {8, 0}};
#define ADD(...) do { assert_true(n < cap); out[n++] = (struct pred){__VA_ARGS__}; } while (0)
    for (int ci = 0; ci < 2; ci++) {
        int c = fcols[ci];
        for (int op = 0; op < 6; op++)
            for (int l = 0; l < NLITS; l++) ADD(.kind = P_CMP, .col = c, .op = op, .lit = {l});
        for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++)
            for (int neg = 0; neg < 2; neg++) {
                struct pred p = {.kind = P_IN, .col = c, .negate = neg};
                while (lists[k][p.n] >= 0) p.lit[p.n] = lists[k][p.n], p.n++;
                ADD(p.kind, p.col, 0, 0, p.negate, p.n, {p.lit[0], p.lit[1], p.lit[2], p.lit[3]});
                p.kind = neg ? P_AND_NE : P_OR_EQ;
                p.negate = false;
                ADD(p.kind, p.col, 0, 0, false, p.n, {p.lit[0], p.lit[1], p.lit[2], p.lit[3]});
            }
        for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++)
            for (int neg = 0; neg < 2; neg++)
                ADD(.kind = P_BETWEEN, .col = c, .negate = neg, .lit = {ranges[k][0], ranges[k][1]});
    }
    for (int op = 0; op < 6; op++) {
        ADD(.kind = P_COLCOL, .col = 0, .col2 = 1, .op = op);
        ADD(.kind = P_COLCOL, .col = 2, .col2 = 0, .op = op);
        ADD(.kind = P_CMP, .col = 3, .op = op, .lit = {0});
    }
#undef ADD
    return n;
}

/* Binds `text` with `order` and evaluates it on the batch: the selected
 * rows as a mask. */
static uint64_t sel_of(struct env *E, const struct qv_schema *s, const struct ArrowArray *batch,
                       const char *text, int order, struct qv_expr **keep) {
    struct qv_error err = {0};
    struct qv_expr *e;
    if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("parse %s: %s", text, err.message);
    if (qv_expr_bind_ex(e, s, order, &err)) fail_msg("bind %s: %s", text, err.message);
    uint8_t sel[8] = {0};
    if (qv_expr_eval(e, batch, NULL, sel, NULL, E->scratch, &err))
        fail_msg("eval %s: %s", text, err.message);
    uint64_t m = 0;
    for (int k = 0; k < 8; k++) m |= (uint64_t)sel[k] << (8 * k);
    if (keep) *keep = e;
    else qv_expr_destroy(e);
    return m;
}

/* Every row pairing of the value pool: row k holds f = pool[k % NV] and
 * g = pool[k / NV] (so f op g meets every pair), in batches of 64. */
static void test_eval_both_orders(void **state) {
    struct env *E = *state;
    init_pool();
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root_field, E->r, &s, &err), 0);
    static struct pred preds[512];
    int np = all_preds(preds, 512);
    int64_t checked = 0, selected = 0;
    for (int base = 0; base < NV * NV; base += 16) {
        struct val vals[4][16];
        int n = NV * NV - base < 16 ? NV * NV - base : 16;
        for (int k = 0; k < n; k++) {
            int idx = base + k;
            vals[0][k] = pool_v[idx % NV];
            vals[1][k] = pool_v[idx / NV];
            vals[2][k] = pool_v[idx % NV];
            vals[3][k] = (struct val){.null = idx % 7 == 0, .v = (double)(idx % 11) - 5};
        }
        struct ArrowArray batch;
        build(E, s, vals, n, &batch);
        for (int order = 0; order <= 1; order++)
            for (int i = 0; i < np; i++) {
                char text[200], ntext[220];
                pred_text(&preds[i], text, sizeof text);
                snprintf(ntext, sizeof ntext, "NOT (%s)", text);
                uint64_t t = sel_of(E, s, &batch, text, order, NULL);
                uint64_t f = sel_of(E, s, &batch, ntext, order, NULL);
                for (int k = 0; k < n; k++) {
                    struct val row[4] = {vals[0][k], vals[1][k], vals[2][k], vals[3][k]};
                    int want = pred_tv(&preds[i], row, order);
                    int got = (t >> k) & 1 ? TV_T : (f >> k) & 1 ? TV_F : TV_N;
                    if (((t >> k) & 1) && ((f >> k) & 1)) got = -1;
                    if (got != want)
                        fail_msg("%s order: %s on row (f=%g%s, g=%g%s, i=%g%s): got %d, want %d",
                                 order ? "LARGEST" : "IEEE", text, row[0].v, row[0].null ? " null" : "",
                                 row[1].v, row[1].null ? " null" : "", row[3].v,
                                 row[3].null ? " null" : "", got, want);
                    checked++;
                    selected += want == TV_T;
                }
            }
        batch.release(&batch);
    }
    assert_true(checked > 30000);
    assert_true(selected > checked / 10);
    qv_schema_destroy(s);
}

/* Spot checks that read as the rules do (on top of the oracle). */
static void test_spark_rules(void **state) {
    struct env *E = *state;
    init_pool();
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root_field, E->r, &s, &err), 0);
    /* rows: NaN, -Inf, -0.0, 0.0, +Inf, NULL */
    const double xs[] = {NAN, -INFINITY, -0.0, 0.0, INFINITY, 0};
    struct val vals[4][16];
    for (int k = 0; k < 6; k++)
        for (int c = 0; c < 4; c++) vals[c][k] = (struct val){.null = k == 5, .v = c == 3 ? k : xs[k]};
    struct ArrowArray b;
    build(E, s, vals, 6, &b);
    for (int c = 0; c < 3; c += 2) {
        char t[64];
#define CHECK(fmt, ieee, largest)                                                             \
    do {                                                                                      \
        snprintf(t, sizeof t, fmt, col_name[c]);                                              \
        assert_int_equal(sel_of(E, s, &b, t, QV_NAN_IEEE, NULL), (ieee));                     \
        assert_int_equal(sel_of(E, s, &b, t, QV_NAN_LARGEST, NULL), (largest));               \
    } while (0)
        CHECK("%s = NaN", 0, 1);
        CHECK("%s >= Infinity", 16, 16 | 1);
        CHECK("%s > Infinity", 0, 1);
        CHECK("%s = -0.0", 4 | 8, 4 | 8);
        CHECK("%s = 0", 4 | 8, 4 | 8);
        CHECK("%s < NaN", 0, 2 | 4 | 8 | 16);
        CHECK("%s != NaN", 31, 2 | 4 | 8 | 16);
        CHECK("%s IN (NaN)", 0, 1);
        CHECK("%s NOT IN (NaN)", 31, 2 | 4 | 8 | 16);
        CHECK("%s IS NULL", 32, 32);
#undef CHECK
    }
    /* The integer column against NaN: NaN is above every number. */
    assert_int_equal(sel_of(E, s, &b, "i < NaN", QV_NAN_LARGEST, NULL), 31);
    assert_int_equal(sel_of(E, s, &b, "i < NaN", QV_NAN_IEEE, NULL), 0);
    /* A bad order is refused by name, and the tree is left unbound. */
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse("f = 1", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, s, &err), 0);
    assert_int_equal(qv_expr_bind_ex(e, s, 7, &err), EINVAL);
    assert_non_null(strstr(err.message, "nan order 7"));
    assert_false(qv_expr_is_bound(e));
    qv_expr_destroy(e);
    b.release(&b);
    qv_schema_destroy(s);
}

/* ---- Pruning ---- */

static void put_dbl(uint8_t *p, double d) { memcpy(p, &d, 8); /* little-endian host */ }

struct zs {
    struct qv_zone_stats s;
    uint8_t mn[8], mx[8];
};

/* Exact statistics of column c over n rows, as the format keeps them. */
static void exact_stats(struct val vals[4][16], int c, int n, struct zs *z) {
    memset(z, 0, sizeof *z);
    int64_t nulls = 0, nans = 0;
    bool any = false;
    double lo = 0, hi = 0;
    for (int k = 0; k < n; k++) {
        struct val x = vals[c][k];
        double v = c == 2 ? (double)(float)x.v : c == 3 ? (double)(int32_t)x.v : x.v;
        if (x.null) nulls++;
        else if (isnan(v)) nans++;
        else {
            if (!any || v < lo || (v == lo && signbit(v))) lo = v;
            if (!any || v > hi || (v == hi && !signbit(v))) hi = v;
            any = true;
        }
    }
    z->s.has_null_count = 1;
    z->s.null_count_min = z->s.null_count_max = nulls;
    if (c < 3) {
        z->s.has_nan_count = 1;
        z->s.nan_count = nans;
        z->s.nan_count_exact = 1;
    }
    if (any) {
        z->s.has_min_max = 1;
        if (c == 3) {
            int64_t a = (int64_t)lo, b = (int64_t)hi;
            memcpy(z->mn, &a, 8);
            memcpy(z->mx, &b, 8);
        } else {
            put_dbl(z->mn, lo);
            put_dbl(z->mx, hi);
        }
        z->s.min = z->mn;
        z->s.max = z->mx;
        z->s.min_len = z->s.max_len = 8;
    }
}

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Weakens exact statistics the ways a reader may see them: each part
 * missing, the NaN count an upper bound only, the bounds looser. */
static void degrade(struct zs *z, int c, uint64_t *seed) {
    unsigned m = (unsigned)rnd(seed);
    if (m & 1) return;
    if (m & 2) z->s.has_min_max = 0;
    if (m & 4) z->s.has_nan_count = 0;
    if (m & 8) z->s.nan_count_exact = 0;
    if ((m & 16) && z->s.has_nan_count) {
        z->s.nan_count += 1 + (int64_t)(rnd(seed) % 3);
        z->s.nan_count_exact = 0;
    }
    if (m & 32) z->s.has_null_count = 0;
    if ((m & 64) && z->s.has_min_max && c < 3) {
        double lo, hi;
        memcpy(&lo, z->mn, 8);
        memcpy(&hi, z->mx, 8);
        put_dbl(z->mn, (m & 128) ? -INFINITY : lo - 1);
        put_dbl(z->mx, (m & 256) ? INFINITY : hi + 1);
    }
}

static int prune_text(struct env *E, const struct qv_schema *s, const char *text, int order,
                      const struct qv_zone_stats *st, int64_t rows) {
    struct qv_error err = {0};
    struct qv_expr *e;
    if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("parse %s: %s", text, err.message);
    if (qv_expr_bind_ex(e, s, order, &err)) fail_msg("bind %s: %s", text, err.message);
    assert_int_equal(qv_expr_num_refs(e), 1);
    int m = qv_expr_prune(e, st, rows);
    qv_expr_destroy(e);
    return m;
}

/* One float64 reference with the given statistics. */
static struct qv_zone_stats fz(int64_t nulls, int nan_known, int64_t nans, int exact, int mm,
                               double lo, double hi, uint8_t *mn, uint8_t *mx) {
    struct qv_zone_stats z = {.has_null_count = 1, .null_count_min = nulls, .null_count_max = nulls,
                              .has_nan_count = nan_known, .nan_count = nans,
                              .nan_count_exact = exact, .has_min_max = mm};
    if (mm) {
        put_dbl(mn, lo);
        put_dbl(mx, hi);
        z.min = mn;
        z.max = mx;
        z.min_len = z.max_len = 8;
    }
    return z;
}

static void test_prune_targeted(void **state) {
    struct env *E = *state;
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root_field, E->r, &s, &err), 0);
    uint8_t mn[8], mx[8];
    struct qv_zone_stats z;
    const int I = QV_NAN_IEEE, L = QV_NAN_LARGEST;
    /* Values in [1, 2], one NaN among 4 rows. */
    z = fz(0, 1, 1, 1, 1, 1, 2, mn, mx);
    assert_int_equal(prune_text(E, s, "f > 5", I, &z, 4), 0);
    assert_int_equal(prune_text(E, s, "f > 5", L, &z, 4), 1);
    assert_int_equal(prune_text(E, s, "f >= Infinity", L, &z, 4), 1);
    assert_int_equal(prune_text(E, s, "f = NaN", L, &z, 4), 1);
    assert_int_equal(prune_text(E, s, "f = NaN", I, &z, 4), 0);
    assert_int_equal(prune_text(E, s, "f < 1", L, &z, 4), 0);
    assert_int_equal(prune_text(E, s, "f IN (NaN)", L, &z, 4), 1);
    assert_int_equal(prune_text(E, s, "f IN (7, 8)", L, &z, 4), 0);
    /* No NaN: the bounds decide. */
    z = fz(0, 1, 0, 1, 1, 1, 2, mn, mx);
    assert_int_equal(prune_text(E, s, "f > 5", L, &z, 4), 0);
    assert_int_equal(prune_text(E, s, "f = NaN", L, &z, 4), 0);
    assert_int_equal(prune_text(E, s, "f >= NaN", L, &z, 4), 0);
    assert_int_equal(prune_text(E, s, "f < NaN", L, &z, 4), 1);
    assert_int_equal(prune_text(E, s, "f NOT IN (NaN)", L, &z, 4), 1);
    /* NaN count unknown: never prunes on NaN's account. */
    z = fz(0, 0, 0, 0, 1, 1, 2, mn, mx);
    assert_int_equal(prune_text(E, s, "f > 5", L, &z, 4), 1);
    assert_int_equal(prune_text(E, s, "f = NaN", L, &z, 4), 1);
    /* All NaN (no min/max, exact count 3 of 3 rows). */
    z = fz(0, 1, 3, 1, 0, 0, 0, mn, mx);
    assert_int_equal(prune_text(E, s, "f < 1", L, &z, 3), 0);
    assert_int_equal(prune_text(E, s, "f = NaN", L, &z, 3), 1);
    assert_int_equal(prune_text(E, s, "f != NaN", L, &z, 3), 0);
    assert_int_equal(prune_text(E, s, "f > Infinity", L, &z, 3), 1);
    /* The same count as an upper bound only proves nothing. */
    z.nan_count_exact = 0;
    assert_int_equal(prune_text(E, s, "f < 1", L, &z, 3), 1);
    /* One null and two NaNs in three rows, exact: still nothing else. */
    z = fz(1, 1, 2, 1, 0, 0, 0, mn, mx);
    assert_int_equal(prune_text(E, s, "f < 1", L, &z, 3), 0);
    assert_int_equal(prune_text(E, s, "f IS NULL", L, &z, 3), 1);
    /* -0.0 and 0.0 are one value in both orders. */
    z = fz(0, 1, 0, 1, 1, -0.0, -0.0, mn, mx);
    assert_int_equal(prune_text(E, s, "f = 0", L, &z, 2), 1);
    assert_int_equal(prune_text(E, s, "f > 0", L, &z, 2), 0);
    assert_int_equal(prune_text(E, s, "f != 0", L, &z, 2), 0);
    assert_int_equal(prune_text(E, s, "f = 0", I, &z, 2), 1);
    qv_schema_destroy(s);
}

/* Random zones of 1 to 6 rows with exact or degraded statistics: a zone is
 * never skipped when evaluation selects one of its rows, under either
 * order, for every predicate form. */
static void test_prune_brute_force(void **state) {
    struct env *E = *state;
    init_pool();
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root_field, E->r, &s, &err), 0);
    static struct pred preds[512];
    int np = all_preds(preds, 512);
    /* Bind every predicate once per order. */
    static struct qv_expr *bound[2][512];
    for (int order = 0; order <= 1; order++)
        for (int i = 0; i < np; i++) {
            char text[200];
            pred_text(&preds[i], text, sizeof text);
            assert_int_equal(qv_expr_parse(text, E->r, &bound[order][i], &err), 0);
            assert_int_equal(qv_expr_bind_ex(bound[order][i], s, order, &err), 0);
        }
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int64_t zones = 0, skipped = 0, matched = 0;
    for (int it = 0; it < 600; it++) {
        int n = 1 + (int)(rnd(&seed) % 6);
        struct val vals[4][16];
        /* Zones lean towards few distinct values, so that all-NaN, all-null
         * and single-value zones occur often. */
        int span = 1 + (int)(rnd(&seed) % NV);
        int start = (int)(rnd(&seed) % NV);
        for (int k = 0; k < n; k++) {
            vals[0][k] = pool_v[(start + rnd(&seed) % (uint64_t)span) % NV];
            vals[1][k] = pool_v[rnd(&seed) % NV];
            vals[2][k] = pool_v[(start + rnd(&seed) % (uint64_t)span) % NV];
            vals[3][k] = (struct val){.null = rnd(&seed) % 5 == 0, .v = (double)(rnd(&seed) % 7) - 3};
        }
        struct ArrowArray batch;
        build(E, s, vals, n, &batch);
        struct zs st[4];
        for (int c = 0; c < 4; c++) {
            exact_stats(vals, c, n, &st[c]);
            degrade(&st[c], c, &seed);
        }
        for (int order = 0; order <= 1; order++)
            for (int i = 0; i < np; i++) {
                struct qv_expr *e = bound[order][i];
                struct qv_zone_stats per[2];
                int32_t nr = qv_expr_num_refs(e);
                assert_true(nr >= 1 && nr <= 2);
                for (int32_t k = 0; k < nr; k++) {
                    struct qv_expr_ref ref;
                    assert_int_equal(qv_expr_ref(e, k, &ref), 0);
                    per[k] = st[ref.column].s;
                }
                uint8_t sel[1] = {0};
                int64_t hit = 0;
                assert_int_equal(qv_expr_eval(e, &batch, NULL, sel, &hit, E->scratch, &err), 0);
                int may = qv_expr_prune(e, per, n);
                zones++;
                if (hit && !may) {
                    char text[200];
                    pred_text(&preds[i], text, sizeof text);
                    fail_msg("%s order: '%s' pruned a zone of %d rows where %lld match (f[0]=%g)",
                             order ? "LARGEST" : "IEEE", text, n, (long long)hit, vals[0][0].v);
                }
                skipped += !may;
                matched += hit > 0;
            }
        batch.release(&batch);
    }
    for (int order = 0; order <= 1; order++)
        for (int i = 0; i < np; i++) qv_expr_destroy(bound[order][i]);
    /* Pruning did skip zones (the check is not vacuous), and zones matched. */
    assert_true(skipped > zones / 20);
    assert_true(matched > zones / 10);
    qv_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eval_both_orders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spark_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_targeted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_brute_force, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
