/* Pruning with zone statistics: soundness (a zone is skipped only when no
 * row of it makes the predicate TRUE) for random predicates over random
 * zones whose statistics the test computes itself, exact or degraded
 * (missing, truncated at and around the 64-byte string bound, NaNs, all-null
 * zones); usefulness (selective predicates do skip); and the row-group
 * adapter over a real file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_expr_gen.h"
#include "test_util.h"
#include "quiver/format.h"

struct env {
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_reservation *scratch;
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

/* ---- Statistics computed by the test, from the data ---- */

struct zstat {
    struct qv_zone_stats s;
    uint8_t minb[160], maxb[160];
};

enum { M_EXACT, M_NO_MINMAX, M_NO_NULLS, M_NOTHING, M_CUT, M_NO_NAN, M_COUNT };

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static const struct gcol *col_of_ref(const struct gcat *cat, const struct qv_expr_ref *ref) {
    for (int i = 0; i < cat->n; i++) {
        const struct gcol *g = &cat->cols[i];
        if (g->comp[0] == ref->column && g->depth == ref->depth &&
            (ref->depth == 0 || g->comp[1] == ref->path[0]))
            return g;
    }
    return NULL;
}

/* Statistics of rows [0, batch->length) of column g as the format would
 * keep them (strings cut at 64 bytes), then degraded by `mode`. */
static void compute_stats(const struct gcol *g, const struct ArrowArray *batch, int mode,
                          uint64_t *seed, struct zstat *z) {
    memset(z, 0, sizeof *z);
    int64_t rows = batch->length, own = 0, anc = 0, nans = 0;
    int any = 0;
    struct gval lo = {0}, hi = {0};
    for (int64_t i = 0; i < rows; i++) {
        const struct ArrowArray *a = batch->children[g->comp[0]];
        int64_t phys = a->offset + batch->offset + i;
        if (g->depth == 1) {
            if (!g_valid(a, phys)) anc++;
            a = a->children[g->comp[1]];
            phys += a->offset;
        }
        if (!g_valid(a, phys)) {
            own++;
            continue;
        }
        struct gval v;
        g_read(batch, NULL, g, i, &v);
        if (v.null) continue; /* under a null parent */
        if (g->cls == G_FLOAT && isnan(v.f)) {
            nans++;
            continue;
        }
        int c_lo, c_hi;
        if (g->cls == G_FLOAT) c_lo = v.f < lo.f, c_hi = v.f > hi.f;
        else if (g->cls == G_BYTES) c_lo = g_bytes_cmp(v.p, v.n, lo.p, lo.n) < 0, c_hi = g_bytes_cmp(v.p, v.n, hi.p, hi.n) > 0;
        else c_lo = v.i < lo.i, c_hi = v.i > hi.i;
        if (!any || c_lo) lo = v;
        if (!any || c_hi) hi = v;
        any = 1;
    }
    struct qv_zone_stats *s = &z->s;
    s->has_null_count = 1;
    s->null_count_min = own > anc ? own : anc;
    s->null_count_max = own + anc < rows ? own + anc : rows;
    if (g->cls == G_FLOAT) {
        s->has_nan_count = 1;
        s->nan_count = nans;
    }
    s->min = z->minb;
    s->max = z->maxb;
    if (any) {
        s->has_min_max = 1;
        switch (g->cls) {
        case G_BOOL:
            z->minb[0] = (uint8_t)lo.i;
            z->maxb[0] = (uint8_t)hi.i;
            s->min_len = s->max_len = 1;
            break;
        case G_INT: case G_UINT: case G_DATE: case G_TS: case G_DEC:
            if (g->cls == G_DEC && g->field->precision > 18) {
                memcpy(z->minb, &lo.i, 16);
                memcpy(z->maxb, &hi.i, 16);
                s->min_len = s->max_len = 16;
            } else {
                put64(z->minb, (uint64_t)lo.i);
                put64(z->maxb, (uint64_t)hi.i);
                s->min_len = s->max_len = 8;
            }
            break;
        case G_FLOAT:
            memcpy(z->minb, &lo.f, 8);
            memcpy(z->maxb, &hi.f, 8);
            s->min_len = s->max_len = 8;
            break;
        case G_BYTES: {
            size_t cut = mode == M_CUT ? (size_t)(rb_next(seed) % 66) : 64;
            size_t cut2 = mode == M_CUT ? (size_t)(rb_next(seed) % 66) : 64;
            s->min_len = (uint32_t)(lo.n < cut ? lo.n : cut);
            s->max_len = (uint32_t)(hi.n < cut2 ? hi.n : cut2);
            s->min_truncated = s->min_len < lo.n;
            s->max_truncated = s->max_len < hi.n;
            if (s->min_len) memcpy(z->minb, lo.p, s->min_len);
            if (s->max_len) memcpy(z->maxb, hi.p, s->max_len);
            break;
        }
        default: s->has_min_max = 0; break; /* float16, nested, null: none */
        }
    }
    switch (mode) {
    case M_NO_MINMAX: s->has_min_max = 0; break;
    case M_NO_NULLS: s->has_null_count = 0; break;
    case M_NOTHING: memset(s, 0, sizeof *s); break;
    case M_NO_NAN: s->has_nan_count = 0; break;
    default: break;
    }
}

/* The smallest or largest non-null (non-NaN) value of column g in a batch. */
static int extreme_value(const struct gcol *g, const struct ArrowArray *batch, int want_max,
                         struct gval *out) {
    int any = 0;
    for (int64_t i = 0; i < batch->length; i++) {
        struct gval v;
        g_read(batch, NULL, g, i, &v);
        if (v.null || ((g->cls == G_FLOAT || g->cls == G_F16) && isnan(v.f))) continue;
        if (!any) {
            *out = v;
            any = 1;
            continue;
        }
        int c;
        if (g->cls == G_FLOAT || g->cls == G_F16) c = (v.f > out->f) - (v.f < out->f);
        else if (g->cls == G_BYTES) c = g_bytes_cmp(v.p, v.n, out->p, out->n);
        else c = (v.i > out->i) - (v.i < out->i);
        if (want_max ? c > 0 : c < 0) *out = v;
    }
    return any;
}

/* Moves literals to where pruning decides: next to the zone's minimum or
 * maximum, and for strings cut around the 64-byte statistics bound. */
static void edge_literals(struct gnode *n, const struct gcat *cat, const struct ArrowArray *zone,
                          uint64_t *seed) {
    for (int k = 0; k < n->nkids; k++) edge_literals(n->kids[k], cat, zone, seed);
    if (n->nkids) return;
    if (n->kind != GN_CMP && n->kind != GN_IN && n->kind != GN_BETWEEN && n->kind != GN_STARTS) return;
    const struct gcol *g = &cat->cols[n->col];
    for (int i = 0; i < n->nlits; i++) {
        uint64_t r = rb_next(seed) % 3;
        struct gval v;
        if (r == 0 || !extreme_value(g, zone, (int)(rb_next(seed) & 1), &v)) continue;
        if (r == 1 || g->cls != G_BYTES || v.n < 62) {
            g_lit_near(g, &v, seed, 50 + rb_next(seed) % 50, &n->lits[i]);
            continue;
        }
        size_t cut = 62 + (size_t)(rb_next(seed) % 5);
        if (cut > v.n) cut = v.n;
        memcpy(n->lits[i].bytes, v.p, cut);
        n->lits[i].n = cut;
        if (rb_next(seed) % 3 == 0) n->lits[i].bytes[n->lits[i].n++] = (uint8_t)(rb_next(seed) & 1 ? 0xff : 'a');
        n->lits[i].kind = GL_STR;
        g_bytes_text(&n->lits[i]);
    }
}

/* A view of a zone in which struct columns may be null where their fields
 * are not. */
struct zview {
    struct ArrowArray batch;
    struct ArrowArray *ptrs[64];
    struct ArrowArray copies[64];
    const void *bufs[64][1];
    uint8_t bits[64][16];
};

static void make_zview(const struct ArrowArray *zone, const struct qv_schema *s, uint64_t *seed,
                       struct zview *v) {
    v->batch = *zone;
    for (int64_t c = 0; c < zone->n_children; c++) {
        v->ptrs[c] = zone->children[c];
        if (s->root.children[c].type == QV_TYPE_STRUCT && rb_next(seed) % 2 && zone->length <= 100) {
            v->copies[c] = *zone->children[c];
            g_scramble_validity(&v->copies[c], v->bufs[c], v->bits[c], seed);
            v->ptrs[c] = &v->copies[c];
        }
    }
    v->batch.children = v->ptrs;
}

static void test_soundness(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    assert_int_equal(rb_all_types_schema(E->r, &schema), 0);
    struct gcat cat;
    g_catalog(schema, &cat);
    char *text = malloc(1 << 16);
    struct gnode *pool = malloc(64 * sizeof *pool);
    struct zstat *zs = malloc(64 * sizeof *zs);
    struct qv_zone_stats st[64];
    int64_t checked = 0, skipped = 0, skipped_exact = 0, empty_zones = 0, skipped_blind = 0;
    for (uint64_t zseed = 1; zseed <= 300; zseed++) {
        uint64_t seed = zseed * 104729;
        int kind = (int)(rb_next(&seed) % 8);
        struct rb_options o = {.null_prob = kind == 0 ? 1.0 : (double)(rb_next(&seed) % 4) * 0.2,
                               .max_list = 2,
                               .max_string = kind == 1 ? 100 : (int)(rb_next(&seed) % 100),
                               .low_cardinality = kind >= 5};
        int64_t rows = 1 + (int64_t)(rb_next(&seed) % 40);
        struct ArrowArray zone_data, other;
        assert_int_equal(rb_batch(schema, rows, zseed, &o, E->r, &zone_data), 0);
        struct zview zv;
        make_zview(&zone_data, schema, &seed, &zv);
        const struct ArrowArray *zone = &zv.batch;
        /* Literals come from the zone itself or from another batch, so some
         * predicates are satisfiable in the zone and some are not. */
        struct rb_options o2 = o;
        o2.null_prob = 0.1;
        assert_int_equal(rb_batch(schema, 40, zseed + 100000, &o2, E->r, &other), 0);
        for (int k = 0; k < 30; k++) {
            const struct ArrowArray *src = k % 2 ? &other : zone;
            int used = 0;
            struct gnode *root = g_gen(&cat, src, NULL, &seed, 2, pool, &used, 64);
            edge_literals(root, &cat, zone, &seed);
            char *t = text;
            g_text(&cat, root, &t, &seed);
            struct qv_error err;
            struct qv_expr *e;
            if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("%s: %s", text, err.message);
            if (qv_expr_bind(e, schema, &err)) fail_msg("%s: %s", text, err.message);
            int32_t nrefs = qv_expr_num_refs(e);
            int all_exact = 1;
            for (int32_t i = 0; i < nrefs; i++) {
                struct qv_expr_ref ref;
                assert_int_equal(qv_expr_ref(e, i, &ref), 0);
                const struct gcol *g = col_of_ref(&cat, &ref);
                assert_non_null(g);
                int mode = rb_next(&seed) % 3 ? M_EXACT : (int)(rb_next(&seed) % M_COUNT);
                all_exact &= mode == M_EXACT;
                compute_stats(g, zone, mode, &seed, &zs[i]);
                st[i] = zs[i].s;
            }
            int may = qv_expr_prune(e, st, rows);
            int64_t truths = 0;
            for (int64_t row = 0; row < rows; row++) truths += g_eval(&cat, root, zone, NULL, row) == TV_T;
            if (!may) {
                if (truths) {
                    char norm[4096];
                    qv_expr_to_string(e, norm, sizeof norm);
                    fail_msg("zone %llu skipped but %lld rows match: %s", (unsigned long long)zseed,
                             (long long)truths, norm);
                }
                uint8_t sel[8];
                int64_t n;
                assert_int_equal(qv_expr_eval(e, zone, NULL, sel, &n, E->scratch, &err), 0);
                assert_int_equal(n, 0);
                skipped++;
                skipped_exact += all_exact;
            }
            empty_zones += truths == 0;
            /* With nothing known only predicates no value can satisfy
             * (x > 18446744073709551615 on a uint64, i = 2.5) skip. */
            if (!qv_expr_prune(e, NULL, rows)) {
                assert_int_equal(truths, 0);
                skipped_blind++;
            }
            /* An empty zone always skips. */
            assert_int_equal(qv_expr_prune(e, st, 0), 0);
            checked++;
            qv_expr_destroy(e);
        }
        other.release(&other);
        zone_data.release(&zone_data);
    }
    print_message("%lld predicates x zones, %lld without matches, %lld skipped (%lld with exact "
                  "statistics, %lld even without statistics)\n",
                  (long long)checked, (long long)empty_zones, (long long)skipped,
                  (long long)skipped_exact, (long long)skipped_blind);
    assert_true(skipped > 2 * skipped_blind);
    assert_true(checked >= 9000);
    assert_true(skipped > checked / 20);
    free(zs);
    free(pool);
    free(text);
    qv_schema_destroy(schema);
}

/* ---- Usefulness: obviously selective predicates skip ---- */

static int prune_text(struct env *E, const struct qv_schema *schema, const struct gcat *cat,
                      const struct ArrowArray *zone, const char *text, int mode) {
    struct qv_error err;
    struct qv_expr *e;
    if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("%s: %s", text, err.message);
    if (qv_expr_bind(e, schema, &err)) fail_msg("%s: %s", text, err.message);
    struct zstat zs[8];
    struct qv_zone_stats st[8];
    uint64_t seed = 1;
    for (int32_t i = 0; i < qv_expr_num_refs(e); i++) {
        struct qv_expr_ref ref;
        qv_expr_ref(e, i, &ref);
        compute_stats(col_of_ref(cat, &ref), zone, mode, &seed, &zs[i]);
        st[i] = zs[i].s;
    }
    int may = qv_expr_prune(e, st, zone->length);
    qv_expr_destroy(e);
    return may;
}

static void test_useful(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    assert_int_equal(rb_all_types_schema(E->r, &schema), 0);
    struct gcat cat;
    g_catalog(schema, &cat);
    int skips = 0;
    for (uint64_t zseed = 1; zseed <= 30; zseed++) {
        struct rb_options o = {.null_prob = 0.0, .max_list = 1, .max_string = 80};
        struct ArrowArray zone;
        assert_int_equal(rb_batch(schema, 25, zseed, &o, E->r, &zone), 0);
        for (int c = 0; c < cat.n; c++) {
            const struct gcol *g = &cat.cols[c];
            uint64_t seed = zseed;
            struct zstat z;
            compute_stats(g, &zone, M_EXACT, &seed, &z);
            char text[1024], lit[400];
            /* No nulls here: IS NULL skips (top-level columns; struct fields
             * of a nullable struct too, since no struct is null). */
            if (g->cls != G_NULLT) {
                snprintf(text, sizeof text, "%s IS NULL", g->text);
                assert_int_equal(prune_text(E, schema, &cat, &zone, text, M_EXACT), 0);
                skips++;
            }
            if (!z.s.has_min_max) continue;
            /* col > max and col < min skip */
            for (int side = 0; side < 2; side++) {
                const uint8_t *b = side ? z.maxb : z.minb;
                switch (g->cls) {
                case G_INT: case G_DATE: case G_TS: {
                    int64_t v = 0;
                    for (int i = 7; i >= 0; i--) v = (int64_t)((uint64_t)v << 8 | b[i]);
                    if (g->cls == G_INT) snprintf(lit, sizeof lit, "%lld", (long long)v);
                    else if (g->cls == G_DATE) {
                        char d[32];
                        g_date_text((int32_t)v, d);
                        snprintf(lit, sizeof lit, "DATE '%s'", d);
                    } else g_ts_text((g_i128)v * g->npu, lit);
                    break;
                }
                case G_UINT: {
                    uint64_t v = 0;
                    for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
                    snprintf(lit, sizeof lit, "%llu", (unsigned long long)v);
                    break;
                }
                case G_DEC: {
                    g_i128 v = 0;
                    if (g->field->precision > 18) memcpy(&v, b, 16);
                    else {
                        int64_t w = 0;
                        for (int i = 7; i >= 0; i--) w = (int64_t)((uint64_t)w << 8 | b[i]);
                        v = w;
                    }
                    char digits[64];
                    g_i128_text(v, digits);
                    snprintf(lit, sizeof lit, "%se-%d", digits, g->scale);
                    break;
                }
                case G_FLOAT: {
                    double d;
                    memcpy(&d, b, 8);
                    if (isinf(d)) snprintf(lit, sizeof lit, "%sInfinity", d < 0 ? "-" : "");
                    else snprintf(lit, sizeof lit, "%.17g", d);
                    break;
                }
                case G_BYTES: {
                    if (z.s.max_truncated && side) continue; /* a cut max bounds nothing exactly */
                    struct glit l = {.kind = GL_STR};
                    l.n = side ? z.s.max_len : z.s.min_len;
                    memcpy(l.bytes, b, l.n);
                    g_bytes_text(&l);
                    snprintf(lit, sizeof lit, "%s", l.text);
                    if (!side && z.s.min_truncated) continue;
                    break;
                }
                case G_BOOL: snprintf(lit, sizeof lit, "%s", b[0] ? "TRUE" : "FALSE"); break;
                default: continue;
                }
                snprintf(text, sizeof text, "%s %s %s", g->text, side ? ">" : "<", lit);
                int may = prune_text(E, schema, &cat, &zone, text, M_EXACT);
                if (may) fail_msg("zone %llu: '%s' does not skip", (unsigned long long)zseed, text);
                skips++;
                /* and a NOT BETWEEN covering everything, and a disjoint IN */
                snprintf(text, sizeof text, "NOT (%s %s %s) AND %s IS NULL", g->text,
                         side ? "<=" : ">=", lit, g->text);
                assert_int_equal(prune_text(E, schema, &cat, &zone, text, M_EXACT), 0);
                /* With no statistics, only a literal at the edge of the
                 * type's domain (x > max of the type) still skips. */
                snprintf(text, sizeof text, "%s %s= %s", g->text, side ? ">" : "<", lit);
                assert_int_equal(prune_text(E, schema, &cat, &zone, text, M_NOTHING), 1);
            }
        }
        zone.release(&zone);
    }
    print_message("%d selective predicates skipped their zone\n", skips);
    assert_true(skips > 500);

    /* All-null zones: every comparison is NULL, so nothing but IS NULL and
     * its compositions can be TRUE. */
    struct rb_options o = {.null_prob = 1.0, .max_list = 1, .max_string = 10};
    struct ArrowArray zone;
    assert_int_equal(rb_batch(schema, 20, 7, &o, E->r, &zone), 0);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "i32 = 1", M_EXACT), 0);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "NOT (i32 = 1)", M_EXACT), 0);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "s IN ('a', NULL) OR f64 != NaN", M_EXACT), 0);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "i32 IS NOT NULL", M_EXACT), 0);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "pt.x > 0 OR pt.label STARTS WITH 'a'", M_EXACT), 0);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "i32 IS NULL", M_EXACT), 1);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "NOT (i32 = 1) OR i32 IS NULL", M_EXACT), 1);
    assert_int_equal(prune_text(E, schema, &cat, &zone, "NOT (i32 = 1 AND i64 = 5)", M_EXACT), 1); /* i64 is not nullable */
    zone.release(&zone);
    qv_schema_destroy(schema);
}

#define A16 "aaaaaaaaaaaaaaaa"
#define A64 A16 A16 A16 A16
#define A63 A16 A16 A16 "aaaaaaaaaaaaaaa"

/* Hand-made statistics for the corner cases of the rules. */
static void test_rules(void **state) {
    struct env *E = *state;
    static const struct qv_field kids[] = {
        {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
        {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
        {.name = "i", .type = QV_TYPE_INT32, .nullable = true},
        {.name = "d", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 9, .scale = 2},
        {.name = "j", .type = QV_TYPE_INT64, .nullable = true},
    };
    static const struct qv_field rt = {.type = QV_TYPE_STRUCT, .n_children = 5, .children = kids};
    struct qv_error err;
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&rt, E->r, &s, &err), 0);
    uint8_t fmin[8], fmax[8], imin[8], imax[8], jmin[8], jmax[8];
    put64(jmin, 11);
    put64(jmax, 20);
    struct qv_zone_stats j = {.has_null_count = 1, .has_min_max = 1, .min = jmin, .max = jmax,
                              .min_len = 8, .max_len = 8};
    double one = 1.0, two = 2.0;
    memcpy(fmin, &one, 8);
    memcpy(fmax, &two, 8);
    put64(imin, 5);
    put64(imax, 10);
    struct qv_zone_stats f = {.has_null_count = 1, .has_nan_count = 1, .nan_count = 0, .has_min_max = 1,
                              .min = fmin, .max = fmax, .min_len = 8, .max_len = 8};
    struct qv_zone_stats i = {.has_null_count = 1, .has_min_max = 1, .min = imin, .max = imax,
                              .min_len = 8, .max_len = 8};
    /* 64 'a' then nothing (max cut): the true max may be "aaa...a" + anything */
    uint8_t smin[64], smax[64];
    memset(smin, 'a', 64);
    memset(smax, 'a', 64);
    struct qv_zone_stats str = {.has_null_count = 1, .has_min_max = 1, .min = smin, .max = smax,
                                .min_len = 64, .max_len = 64, .max_truncated = 1};
    struct {
        const char *text;
        int may;
    } cases[] = {
        {"f > 2", 0},           {"f >= 2", 1},           {"f < 1", 0},          {"f = 3", 0},
        {"f != 1.5", 1},        {"f = NaN", 0},          {"f != NaN", 1},       {"NOT (f < 3)", 0},
        {"f IN (0, 3, NaN)", 0}, {"f IN (0, 1.5)", 1},   {"f NOT IN (0, 3)", 1},
        {"i > 10", 0},          {"i >= 10", 1},          {"i > 9.5", 1},        {"i > 10.5", 0},
        {"i < 5", 0},           {"i < 5.5", 1},          {"i = 7.5", 0},        {"i != 7.5", 1},
        {"i BETWEEN 11 AND 20", 0}, {"i NOT BETWEEN 0 AND 100", 0}, {"i NOT BETWEEN 6 AND 100", 1},
        {"i IN (1, 2, 11)", 0}, {"i IN (1, 7)", 1},      {"i IS NULL", 0},      {"i IS NOT NULL", 1},
        {"NOT (i > 3)", 0},     {"NOT (i > 3) OR f > 5", 0}, {"NOT (i > 3 AND f > 5)", 1},
        {"s > 'b'", 0},         {"s >= 'aaaa'", 1},      {"s < 'a'", 0},        {"s = 'a'", 0},
        {"s STARTS WITH 'b'", 0}, {"s STARTS WITH 'aaaa'", 1}, {"NOT (s STARTS WITH 'aaaa')", 0},
        {"NOT (s STARTS WITH 'a')", 0},
        /* just past the cut: the max may be longer than 64 'a's */
        {"s > '" A64 "z'", 1},
        {"s = '" A64 "'", 1},
        {"s STARTS WITH '" A64 "b'", 1},
        {"s > '" A63 "b'", 0},
        {"s STARTS WITH '" A63 "b'", 0},
        {"i < j", 1},           {"i > j", 0},            {"i = j", 0},          {"i != j", 1},
        {"j <= i", 0},          {"NOT (i < j)", 0},
        {"d IS NULL", 1},       {"d = 1", 1}, /* nothing known about d */
    };
    struct qv_zone_stats all[8];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qv_expr *e;
        if (qv_expr_parse(cases[k].text, E->r, &e, &err)) fail_msg("%s: %s", cases[k].text, err.message);
        if (qv_expr_bind(e, s, &err)) fail_msg("%s: %s", cases[k].text, err.message);
        memset(all, 0, sizeof all);
        for (int32_t r = 0; r < qv_expr_num_refs(e); r++) {
            struct qv_expr_ref ref;
            qv_expr_ref(e, r, &ref);
            all[r] = ref.column == 0 ? f : ref.column == 1 ? str : ref.column == 2 ? i
                   : ref.column == 4 ? j : (struct qv_zone_stats){0};
        }
        int may = qv_expr_prune(e, all, 100);
        if (may != cases[k].may) fail_msg("%s: prune says %d, expected %d", cases[k].text, may, cases[k].may);
        qv_expr_destroy(e);
    }
    /* NaNs present: comparisons may be FALSE (so NOT may be TRUE), != TRUE. */
    f.nan_count = 3;
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse("NOT (f < 3)", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, s, &err), 0);
    assert_int_equal(qv_expr_prune(e, &f, 100), 1);
    qv_expr_destroy(e);
    assert_int_equal(qv_expr_parse("f != 1.5 AND f > 2", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, s, &err), 0);
    assert_int_equal(qv_expr_prune(e, &f, 100), 0);
    qv_expr_destroy(e);
    /* A single value, then NaNs: they are the only rows != 1 / NOT IN (1). */
    struct qv_zone_stats single = f;
    single.max = fmin;
    single.nan_count = 0;
    const char *singles[] = {"f NOT IN (1, 5)", "f != 1", "NOT (f = 1)", "NOT (f IN (1))"};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(qv_expr_parse(singles[k], E->r, &e, &err), 0);
        assert_int_equal(qv_expr_bind(e, s, &err), 0);
        single.nan_count = 0;
        if (qv_expr_prune(e, &single, 100) != 0) fail_msg("%s: no skip without NaNs", singles[k]);
        single.nan_count = 2;
        if (qv_expr_prune(e, &single, 100) != 1) fail_msg("%s: skips despite NaNs", singles[k]);
        single.has_nan_count = 0;
        if (qv_expr_prune(e, &single, 100) != 1) fail_msg("%s: skips with NaNs unknown", singles[k]);
        single.has_nan_count = 1;
        qv_expr_destroy(e);
    }
    /* Only nulls: null_count covers every row. */
    struct qv_zone_stats nulls = {.has_null_count = 1, .null_count_min = 100, .null_count_max = 100};
    assert_int_equal(qv_expr_parse("f = 1 OR NOT (f = 1) OR f IN (1, NULL)", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, s, &err), 0);
    assert_int_equal(qv_expr_prune(e, &nulls, 100), 0);
    assert_int_equal(qv_expr_prune(e, &nulls, 101), 1);
    qv_expr_destroy(e);
    /* Malformed statistics (wrong lengths, min > max) are ignored, never trusted. */
    struct qv_zone_stats badlen = i;
    badlen.min_len = 4;
    struct qv_zone_stats swapped = i;
    swapped.min = imax;
    swapped.max = imin;
    assert_int_equal(qv_expr_parse("i > 100", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, s, &err), 0);
    assert_int_equal(qv_expr_prune(e, &i, 100), 0);
    assert_int_equal(qv_expr_prune(e, &badlen, 100), 1);
    assert_int_equal(qv_expr_prune(e, &swapped, 100), 1);
    qv_expr_destroy(e);
    qv_schema_destroy(s);
}

/* The row-group adapter reads the footer's statistics, nested fields
 * included, and is sound against the data of each row group. */
static void test_row_groups(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    assert_int_equal(rb_all_types_schema(E->r, &schema), 0);
    struct gcat cat;
    g_catalog(schema, &cat);
    char path[512];
    tu_path(path, sizeof path, "expr_prune.qvr");
    struct qv_error err = {0};
    struct qv_writer_options wo = {.row_group_rows = 1024};
    struct qv_writer *w;
    if (qv_writer_open(path, schema, &wo, E->r, &w, &err)) fail_msg("open: %s", err.message);
    for (int b = 0; b < 6; b++) {
        /* Each row group has its own value flavour so statistics differ. */
        struct rb_options o = {.null_prob = b == 2 ? 1.0 : 0.1 * b, .max_list = 2,
                               .max_string = b * 20, .low_cardinality = b % 2};
        struct ArrowArray batch;
        assert_int_equal(rb_batch(schema, 1024, 1000 + (uint64_t)b, &o, E->r, &batch), 0);
        if (qv_writer_write(w, &batch, &err)) fail_msg("write: %s", err.message);
        batch.release(&batch);
    }
    if (qv_writer_finish(w, &err)) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
    struct qv_reader *rd;
    if (qv_reader_open(path, NULL, E->r, &rd, &err)) fail_msg("reader: %s", err.message);
    int64_t nrg = qv_reader_num_row_groups(rd);
    assert_int_equal(nrg, 6);
    struct ArrowArray groups[6];
    for (int64_t g = 0; g < nrg; g++)
        if (qv_reader_read_row_group(rd, g, NULL, 0, E->r, &groups[g], &err)) fail_msg("read: %s", err.message);
    uint64_t seed = 77;
    char *text = malloc(1 << 16);
    struct gnode *pool = malloc(64 * sizeof *pool);
    int64_t checked = 0, skipped = 0;
    for (int k = 0; k < 300; k++) {
        int used = 0;
        const struct ArrowArray *src = &groups[rb_next(&seed) % (uint64_t)nrg];
        struct gnode *root = g_gen(&cat, src, NULL, &seed, 2, pool, &used, 64);
        char *t = text;
        g_text(&cat, root, &t, &seed);
        struct qv_expr *e;
        if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("%s: %s", text, err.message);
        if (qv_expr_bind(e, schema, &err)) fail_msg("%s: %s", text, err.message);
        for (int64_t g = 0; g < nrg; g++) {
            int may = -1;
            if (qv_expr_prune_row_group(e, rd, g, &may, E->scratch, &err)) fail_msg("prune: %s", err.message);
            assert_true(may == 0 || may == 1);
            if (!may) {
                for (int64_t row = 0; row < groups[g].length; row++)
                    if (g_eval(&cat, root, &groups[g], NULL, row) == TV_T)
                        fail_msg("row group %lld skipped but row %lld matches: %s", (long long)g,
                                 (long long)row, text);
                skipped++;
            }
            checked++;
        }
        qv_expr_destroy(e);
    }
    print_message("%lld predicate x row group pairs, %lld skipped\n", (long long)checked, (long long)skipped);
    assert_true(skipped > 0);

    /* Row group 2 is all nulls; i64 is never null. */
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse("i32 = 5 OR pt.x > 0", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, schema, &err), 0);
    int may;
    assert_int_equal(qv_expr_prune_row_group(e, rd, 2, &may, E->scratch, &err), 0);
    assert_int_equal(may, 0);
    qv_expr_destroy(e);
    assert_int_equal(qv_expr_parse("i64 IS NULL", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, schema, &err), 0);
    for (int64_t g = 0; g < nrg; g++) {
        assert_int_equal(qv_expr_prune_row_group(e, rd, g, &may, E->scratch, &err), 0);
        assert_int_equal(may, 0);
    }
    assert_int_equal(qv_expr_prune_row_group(e, rd, 99, &may, E->scratch, &err), EINVAL);
    qv_expr_destroy(e);
    free(pool);
    free(text);
    for (int64_t g = 0; g < nrg; g++) groups[g].release(&groups[g]);
    qv_reader_close(rd);
    remove(path);
    qv_schema_destroy(schema);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_useful, setup, teardown),
        cmocka_unit_test_setup_teardown(test_soundness, setup, teardown),
        cmocka_unit_test_setup_teardown(test_row_groups, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
