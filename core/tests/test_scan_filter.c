/* The conjunct-by-conjunct filter (core/src/scan/filter.c) against the
 * independent reference evaluator of test_expr_gen.h: files written with
 * each encoding forced on every values segment (so the filter columns go
 * through each encoded-domain kernel and each decode path), random
 * predicates (AND of random subtrees, so that simple conjuncts, BETWEEN and
 * general ones mix), every selected row compared with the reference; the
 * boundaries that encoded comparisons get wrong (a literal below the min,
 * above the max, equal to a row group's min, which a frame of reference
 * takes as its base, and to its max, the largest packed value; NaN; nulls,
 * all-null vectors); every permutation of the conjuncts' order giving the
 * same rows; takes; the counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "pool_env.h"
#include "format/format_testing.h"
#include "scan/scan_internal.h"
#include "test_expr_gen.h"
#include "test_util.h"

#define ROWS 3000
#define RG_ROWS 1500 /* not a multiple of 1024: vectors end inside row groups */

/* ---- families of columns an encoding can hold, with an id column ---- */

enum { FAM_INT, FAM_STR, FAM_FLT };

static const struct qv_field int_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "i8", .type = QV_TYPE_INT8, .nullable = true},
    {.name = "i16", .type = QV_TYPE_INT16, .nullable = true},
    {.name = "i32", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "i64", .type = QV_TYPE_INT64, .nullable = true},
    {.name = "u8", .type = QV_TYPE_UINT8, .nullable = true},
    {.name = "u16", .type = QV_TYPE_UINT16, .nullable = true},
    {.name = "u32", .type = QV_TYPE_UINT32, .nullable = true},
    {.name = "u64", .type = QV_TYPE_UINT64, .nullable = true},
    {.name = "dec", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 12, .scale = 2},
    {.name = "day", .type = QV_TYPE_DATE32, .nullable = true},
    {.name = "ts", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_MS},
};
static const struct qv_field str_cols[] = {
    {.name = "id", .type = QV_TYPE_UTF8},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "ls", .type = QV_TYPE_LARGE_UTF8, .nullable = true},
    {.name = "b", .type = QV_TYPE_BINARY, .nullable = true},
};
static const struct qv_field flt_cols[] = {
    {.name = "id", .type = QV_TYPE_FLOAT64},
    {.name = "f32", .type = QV_TYPE_FLOAT32, .nullable = true},
    {.name = "f64", .type = QV_TYPE_FLOAT64, .nullable = true},
};

static int fam_schema(int fam, struct qv_reservation *r, struct qv_schema **out) {
    struct qv_field root = {.type = QV_TYPE_STRUCT};
    root.children = fam == FAM_INT ? int_cols : fam == FAM_STR ? str_cols : flt_cols;
    root.n_children = fam == FAM_INT   ? (int64_t)(sizeof int_cols / sizeof *int_cols)
                      : fam == FAM_STR ? (int64_t)(sizeof str_cols / sizeof *str_cols)
                                       : (int64_t)(sizeof flt_cols / sizeof *flt_cols);
    return qv_schema_create(&root, r, out, NULL);
}

/* Data shapes, so that each forced encoding can hold the values. */
enum { D_GENERAL, D_NONNEG, D_SPARSE };

static const char *const words[] = {"", "a", "apple", "apricot", "banana", "band", "bandana",
                                    "cherry", "ch", "zebra", "\xc3\xa9t\xc3\xa9", "apple pie"};

/* Builds ROWS rows of family `fam`: values drawn around a per-column base,
 * with runs (run-end), repeats (dictionaries), nulls (whole null vectors in
 * the second row group's middle), and the id column = the row number. */
static void make_batch(int fam, int shape, uint64_t seed, struct qv_reservation *r,
                       const struct qv_schema *schema, struct ArrowArray *out) {
    struct qv_builder *b;
    struct qv_error err;
    assert_int_equal(qv_builder_create(schema, r, NULL, &b, &err), 0);
    int64_t nc = schema->root.n_children;
    for (int64_t c = 0; c < nc; c++) {
        struct qv_appender *a = qv_builder_column(b, c);
        const struct qv_field *f = &schema->root.children[c];
        uint64_t s = seed * 131 + (uint64_t)c;
        int64_t base = shape == D_NONNEG ? (int64_t)(rb_next(&s) % 50)
                                         : (int64_t)(rb_next(&s) % 200) - 100;
        int64_t span = 1 + (int64_t)(rb_next(&s) % 300);
        int64_t prev = base;
        for (int64_t i = 0; i < ROWS; i++) {
            int rc;
            if (c == 0) {
                char id[16];
                snprintf(id, sizeof id, "r%07lld", (long long)i);
                rc = fam == FAM_INT   ? qv_append_int64(a, i)
                     : fam == FAM_STR ? qv_append_string(a, id, strlen(id))
                                      : qv_append_float64(a, (double)i);
                assert_int_equal(rc, 0);
                continue;
            }
            uint64_t x = rb_next(&s);
            /* Nulls: none in sparse files, a null stretch covering whole
             * vectors, and random ones. */
            bool null = shape != D_SPARSE &&
                        ((i >= 1600 && i < 3000 && c % 2 == 1) || x % 100 < 12);
            if (null) {
                assert_int_equal(qv_append_null(a), 0);
                continue;
            }
            int64_t v;
            if (shape == D_SPARSE) v = x % 100 < 95 ? base : base + (int64_t)(x >> 40) % span;
            else if (x % 4 == 0) v = prev; /* runs */
            else v = base + (int64_t)((x >> 20) % (uint64_t)span);
            prev = v;
            switch (f->type) {
            case QV_TYPE_INT8: rc = qv_append_int8(a, (int8_t)(v % 120)); break;
            case QV_TYPE_INT16: rc = qv_append_int16(a, (int16_t)(v * 37)); break;
            case QV_TYPE_INT32: rc = qv_append_int32(a, (int32_t)(v * 1001)); break;
            case QV_TYPE_INT64: rc = qv_append_int64(a, v * 1000003 + (v % 7 == 0 ? INT64_C(1) << 40 : 0)); break;
            case QV_TYPE_UINT8: rc = qv_append_uint8(a, (uint8_t)(v + 100)); break;
            case QV_TYPE_UINT16: rc = qv_append_uint16(a, (uint16_t)(v + 1000)); break;
            case QV_TYPE_UINT32: rc = qv_append_uint32(a, (uint32_t)(v + 4000000000LL - 500)); break;
            case QV_TYPE_UINT64:
                rc = qv_append_uint64(a, (uint64_t)(v + 500) + (shape == D_GENERAL && v % 5 == 0 ? UINT64_C(1) << 63 : 0));
                break;
            case QV_TYPE_DECIMAL128: rc = qv_append_decimal64(a, v * 25 + 1); break;
            case QV_TYPE_DATE32: rc = qv_append_date32(a, (int32_t)(v + 19000)); break;
            case QV_TYPE_TIMESTAMP: rc = qv_append_timestamp(a, v * 3600000 + 1700000000000LL); break;
            case QV_TYPE_FLOAT32:
            case QV_TYPE_FLOAT64: {
                double d = (double)v / 4;
                if (shape != D_SPARSE && x % 97 == 0) d = NAN;
                if (shape != D_SPARSE && x % 89 == 0) d = -0.0;
                if (shape != D_SPARSE && x % 83 == 0) d = (x & 1) ? INFINITY : -INFINITY;
                rc = f->type == QV_TYPE_FLOAT32 ? qv_append_float32(a, (float)d) : qv_append_float64(a, d);
                break;
            }
            default: {
                const char *w = words[(uint64_t)(v - base) % (sizeof words / sizeof *words)];
                char buf[64];
                snprintf(buf, sizeof buf, "%s%s", w, x % 10 == 0 ? "-x" : "");
                rc = qv_append_binary(a, buf, strlen(buf));
                break;
            }
            }
            assert_int_equal(rc, 0);
        }
    }
    assert_int_equal(qv_builder_finish(b, out, &err), 0);
    qv_builder_destroy(b);
}

static void write_file(const char *path, const struct qv_schema *schema, const struct ArrowArray *batch,
                       int force, struct qv_reservation *r) {
    struct qv_writer *w;
    struct qv_error err;
    struct qv_writer_options o = {.row_group_rows = RG_ROWS};
    assert_int_equal(qv_writer_open(path, schema, &o, r, &w, &err), 0);
    qv_writer_force_encoding(w, force);
    int rc = qv_writer_write(w, batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("writing with %s forced: %s", qv_encoding_name(force), err.message);
    qv_writer_close(w);
}

/* ---- checking one predicate through the scan ---- */

static int64_t id_of(int fam, const struct ArrowArray *col, int64_t i) {
    int64_t p = col->offset + i;
    if (fam == FAM_INT) return ((const int64_t *)col->buffers[1])[p];
    if (fam == FAM_FLT) return (int64_t)((const double *)col->buffers[1])[p];
    const int32_t *o = col->buffers[1];
    const char *d = col->buffers[2];
    char buf[32] = "";
    int32_t len = o[p + 1] - o[p];
    if (len > 0 && len < (int32_t)sizeof buf) memcpy(buf, d + o[p], (size_t)len);
    return buf[0] == 'r' ? strtoll(buf + 1, NULL, 10) : -1; /* "r0001234" */
}

struct file {
    int fam;
    struct qv_schema *schema;
    struct ArrowArray batch;
    struct gcat cat;
    struct qv_reader *rd;
};

/* Whether a generated tree names columns of the kinds it needs (the
 * generator picks a bytes column for STARTS WITH, a bool one for a bare
 * reference, which some families lack). */
static int g_tree_ok(const struct gnode *n) {
    switch (n->kind) {
    case GN_AND: case GN_OR: case GN_NOT:
        for (int i = 0; i < n->nkids; i++)
            if (!g_tree_ok(n->kids[i])) return 0;
        return 1;
    case GN_CONST: return 1;
    default: return n->col >= 0;
    }
}

/* Scans `text` (take: the rows of take[0..n_take), global) and compares the
 * ids of the rows it yields with the reference's. Returns the rows
 * selected. */
static int64_t check_scan(struct pool_env *E, struct file *F, const struct gnode *root,
                          const char *text,
                          int64_t batch_rows, const int64_t *take, int64_t n_take, int nan_order) {
    (void)nan_order;
    size_t used0 = qv_reservation_used(E->r);
    int32_t proj = 0;
    struct qv_scan_options o = {.columns = &proj, .n_columns = 1, .filter = text,
                                .threads = QV_SCAN_SYNC, .batch_rows = batch_rows,
                                .take = take, .n_take = n_take};
    struct ArrowArrayStream st;
    struct qv_error err;
    int rc = qv_scan_open(F->rd, &o, E->r, &st, &err);
    if (rc) fail_msg("scan_open failed for %s: %s", text, err.message);
    int64_t k = 0, ti = 0;
    int64_t *expect = malloc(ROWS * sizeof *expect), n_expect = 0;
    for (int64_t i = 0; i < ROWS; i++) {
        if (take) {
            if (ti >= n_take || take[ti] != i) continue;
            ti++;
        }
        if (g_eval(&F->cat, root, &F->batch, NULL, i) == TV_T) expect[n_expect++] = i;
    }
    for (;;) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc) fail_msg("get_next failed for %s: %s", text, st.get_last_error(&st));
        if (!b.release) break;
        for (int64_t i = 0; i < b.length; i++) {
            int64_t id = id_of(F->fam, b.children[0], i);
            if (k >= n_expect || expect[k] != id)
                fail_msg("output row %lld is id %lld, the reference says %lld (of %lld)\n  "
                         "filter: %s",
                         (long long)k, (long long)id,
                         k < n_expect ? (long long)expect[k] : -1LL, (long long)n_expect, text);
            k++;
        }
        b.release(&b);
    }
    if (k != n_expect)
        fail_msg("%lld rows, the reference says %lld\n  filter: %s", (long long)k,
                 (long long)n_expect, text);
    st.release(&st);
    free(expect);
    if (qv_reservation_used(E->r) != used0)
        fail_msg("the scan left %lld bytes behind\n  filter: %s",
                 (long long)(qv_reservation_used(E->r) - used0), text);
    return k;
}

static void open_file(struct pool_env *E, struct file *F, int fam, int shape, int force,
                      uint64_t seed,
                      const char *name) {
    memset(F, 0, sizeof *F);
    F->fam = fam;
    assert_int_equal(fam_schema(fam, E->r, &F->schema), 0);
    make_batch(fam, shape, seed, E->r, F->schema, &F->batch);
    char path[512];
    tu_path(path, sizeof path, name);
    write_file(path, F->schema, &F->batch, force, E->r);
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, E->r, &F->rd, &err), 0);
    unlink(path);
    g_catalog(F->schema, &F->cat);
}

static void close_file(struct file *F) {
    qv_reader_close(F->rd);
    F->batch.release(&F->batch);
    qv_schema_destroy(F->schema);
}

/* The rows of F's batch (takes: every third row of each row group, as
 * run_filter takes them) for which the library's evaluator, row by row,
 * says x is TRUE, in want. Returns how many. */
static int64_t eval_rows(struct pool_env *E, const struct file *F, const struct qv_expr *x,
                         int takes, int64_t *want) {
    int64_t nw = 0;
    for (int64_t r = 0; r < ROWS; r++) {
        if (takes && (r % RG_ROWS) % 3) continue;
        uint8_t bit = 0;
        struct ArrowArray one = F->batch;
        one.offset = r;
        one.length = 1;
        struct qv_error err;
        assert_int_equal(qv_expr_eval(x, &one, NULL, &bit, NULL, E->r, &err), 0);
        if (bit) want[nw++] = r;
    }
    return nw;
}

/* `text` parsed and bound on F's schema (in *x) and a filter of it on F's
 * reader. */
static struct qv__filter *filter_of(struct pool_env *E, struct file *F, const char *text,
                                    struct qv_expr **x) {
    struct qv_error err;
    if (qv_expr_parse(text, E->r, x, &err)) fail_msg("%s: %s", text, err.message);
    assert_int_equal(qv_expr_bind(*x, F->schema, &err), 0);
    struct qv__filter *f;
    assert_int_equal(qv__filter_create(F->rd, *x, E->pool, E->r, &f, &err), 0);
    return f;
}

/* 4,800 random predicates over one file: an AND of one to four random
 * subtrees, the simpler ones more often. */
static void random_predicates(struct pool_env *E, struct file *F, uint64_t seed, int count) {
    char *text = malloc(1 << 16);
    struct gnode *pool = malloc(96 * sizeof *pool);
    int64_t sel = 0, rows = 0;
    int64_t *take = malloc(ROWS * sizeof *take);
    static const int64_t batch_sizes[] = {700, 1024, 3000, 65536};
    for (int k = 0; k < count; k++) {
        struct gnode *root;
        for (;;) {
            int used = 1;
            root = &pool[0];
            memset(root, 0, sizeof *root);
            root->kind = GN_AND;
            root->nkids = 1 + (int)(rb_next(&seed) % 4);
            for (int i = 0; i < root->nkids; i++) {
                int depth = rb_next(&seed) % 3 == 0 ? 2 : 0;
                root->kids[i] = g_gen(&F->cat, &F->batch, NULL, &seed, depth, pool, &used, 96);
                if (!root->kids[i]) root->nkids = i;
            }
            if (root->nkids && g_tree_ok(root)) break;
        }
        char *t = text;
        g_text(&F->cat, root, &t, &seed);
        int64_t n_take = 0;
        if (rb_next(&seed) % 8 == 0) {
            uint64_t keep = 1 + rb_next(&seed) % 60;
            for (int64_t i = 0; i < ROWS; i++)
                if (rb_next(&seed) % 100 < keep) take[n_take++] = i;
        }
        int64_t bs = batch_sizes[rb_next(&seed) % 4];
        sel += check_scan(E, F, root, text, bs, n_take ? take : NULL, n_take, 0);
        rows += n_take ? n_take : ROWS;
    }
    /* The predicates are neither all true nor all false. */
    assert_true(sel > rows / 50 && sel < rows - rows / 50);
    free(take);
    free(pool);
    free(text);
}

struct forced {
    int fam, shape, enc;
};
static const struct forced forced[] = {
    {FAM_INT, D_GENERAL, QV_ENC_AUTO},    {FAM_INT, D_GENERAL, QV_ENC_PLAIN},
    {FAM_INT, D_NONNEG, QV_ENC_BITPACK},  {FAM_INT, D_GENERAL, QV_ENC_FOR},
    {FAM_INT, D_GENERAL, QV_ENC_DELTA},   {FAM_INT, D_GENERAL, QV_ENC_ZIGZAG},
    {FAM_INT, D_GENERAL, QV_ENC_DICT},    {FAM_INT, D_GENERAL, QV_ENC_RLE},
    {FAM_INT, D_SPARSE, QV_ENC_SPARSE},   {FAM_INT, D_GENERAL, QV_ENC_ZSTD},
    {FAM_INT, D_GENERAL, QV_ENC_LZ4},     {FAM_STR, D_GENERAL, QV_ENC_AUTO},
    {FAM_STR, D_GENERAL, QV_ENC_PLAIN},   {FAM_STR, D_GENERAL, QV_ENC_DICT},
    {FAM_STR, D_GENERAL, QV_ENC_FSST},    {FAM_STR, D_GENERAL, QV_ENC_ZSTD},
    {FAM_STR, D_GENERAL, QV_ENC_LZ4},     {FAM_FLT, D_GENERAL, QV_ENC_AUTO},
    {FAM_FLT, D_GENERAL, QV_ENC_PLAIN},   {FAM_FLT, D_GENERAL, QV_ENC_ALP},
    {FAM_FLT, D_GENERAL, QV_ENC_DICT},    {FAM_FLT, D_GENERAL, QV_ENC_ZSTD},
};
#define N_FORCED ((int)(sizeof forced / sizeof *forced))

static int predicates_per_file(void) {
    const char *s = getenv("QV_TEST_FILTER_PREDICATES");
    return s ? atoi(s) : 4800;
}

static void test_oracle_forced(void **state, int first, int last) {
    struct pool_env *E = *state;
    for (int i = first; i < last && i < N_FORCED; i++) {
        struct file F;
        open_file(E, &F, forced[i].fam, forced[i].shape, forced[i].enc, (uint64_t)i + 1, "oracle.qvr");
        random_predicates(E, &F, (uint64_t)i * 7919 + 3, predicates_per_file());
        close_file(&F);
    }
}
static void test_oracle_int(void **state) { test_oracle_forced(state, 0, 11); }
static void test_oracle_str(void **state) { test_oracle_forced(state, 11, 17); }
static void test_oracle_flt(void **state) { test_oracle_forced(state, 17, N_FORCED); }

/* ---- boundaries ---- */

static void num_lit(const struct gcol *g, g_i128 v, struct glit *l, uint64_t *seed) {
    memset(l, 0, sizeof *l);
    if (g->cls == G_DATE) {
        l->kind = GL_DATE;
        l->days = (int32_t)v;
        char tmp[32];
        g_date_text(l->days, tmp);
        sprintf(l->text, "DATE '%s'", tmp);
    } else if (g->cls == G_TS) {
        l->kind = GL_TS;
        l->ns = v * g->npu;
        g_ts_text(l->ns, l->text);
    } else {
        l->kind = GL_NUM;
        l->m = v;
        l->s = g->scale;
        g_num_text(l, seed);
    }
}

/* For every integer-like column and row group: comparisons with the row
 * group's min and max (a frame of reference's base and its largest packed
 * value) and their neighbours, the whole file's min - 1 and max + 1 (below
 * and above every value), and BETWEEN over those. */
static void test_boundaries(void **state) {
    struct pool_env *E = *state;
    static const int encs[] = {QV_ENC_FOR, QV_ENC_BITPACK, QV_ENC_DICT, QV_ENC_RLE, QV_ENC_DELTA,
                               QV_ENC_PLAIN};
    char text[1024];
    uint64_t seed = 99;
    int64_t checked = 0;
    for (int e = 0; e < (int)(sizeof encs / sizeof *encs); e++) {
        struct file F;
        open_file(E, &F, FAM_INT, encs[e] == QV_ENC_BITPACK ? D_NONNEG : D_GENERAL, encs[e],
                  (uint64_t)e + 40, "bounds.qvr");
        for (int c = 1; c < F.cat.n; c++) {
            const struct gcol *g = &F.cat.cols[c];
            g_i128 gmin = 0, gmax = 0;
            int gany = 0;
            for (int64_t rg = 0; rg * RG_ROWS < ROWS; rg++) {
                g_i128 mn = 0, mx = 0;
                int any = 0;
                for (int64_t i = rg * RG_ROWS; i < (rg + 1) * RG_ROWS && i < ROWS; i++) {
                    struct gval v;
                    g_read(&F.batch, NULL, g, i, &v);
                    if (v.null) continue;
                    if (!any || v.i < mn) mn = v.i;
                    if (!any || v.i > mx) mx = v.i;
                    any = 1;
                }
                if (!any) continue;
                if (!gany || mn < gmin) gmin = mn;
                if (!gany || mx > gmax) gmax = mx;
                gany = 1;
                g_i128 vals[] = {mn - 1, mn, mn + 1, mx - 1, mx, mx + 1};
                for (int k = 0; k < 6; k++)
                    for (int op = 0; op < 6; op++) {
                        struct gnode n = {.kind = GN_CMP, .op = op, .col = c, .nlits = 1};
                        num_lit(g, vals[k], &n.lits[0], &seed);
                        char *t = text;
                        g_text(&F.cat, &n, &t, &seed);
                        check_scan(E, &F, &n, text, 1024, NULL, 0, 0);
                        checked++;
                    }
                for (int k = 0; k < 3; k++) {
                    struct gnode n = {.kind = GN_BETWEEN, .col = c, .nlits = 2, .neg = k == 2};
                    num_lit(g, k == 1 ? mn + 1 : mn, &n.lits[0], &seed);
                    num_lit(g, k == 1 ? mx - 1 : mx, &n.lits[1], &seed);
                    char *t = text;
                    g_text(&F.cat, &n, &t, &seed);
                    check_scan(E, &F, &n, text, 65536, NULL, 0, 0);
                    checked++;
                }
            }
            g_i128 outside[] = {gmin - 1, gmax + 1};
            for (int k = 0; k < 2 && gany; k++)
                for (int op = 0; op < 6; op++) {
                    struct gnode n = {.kind = GN_CMP, .op = op, .col = c, .nlits = 1};
                    num_lit(g, outside[k], &n.lits[0], &seed);
                    char *t = text;
                    g_text(&F.cat, &n, &t, &seed);
                    check_scan(E, &F, &n, text, 3000, NULL, 0, 0);
                    checked++;
                }
        }
        close_file(&F);
    }
    assert_true(checked > 1000);
}

/* NaN, infinities and signed zeros against float columns, in both NaN
 * orders' text forms; all-null vectors and IS [NOT] NULL. */
static void test_nan_and_nulls(void **state) {
    struct pool_env *E = *state;
    static const char *const lits[] = {"NaN", "Infinity", "-Infinity", "0", "-0.0", "0.25"};
    static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">="};
    static const int encs[] = {QV_ENC_PLAIN, QV_ENC_ALP, QV_ENC_DICT};
    char text[256];
    for (int e = 0; e < 3; e++) {
        struct file F;
        open_file(E, &F, FAM_FLT, D_GENERAL, encs[e], 77, "nan.qvr");
        for (int c = 1; c < 3; c++)
            for (int l = 0; l < 6; l++)
                for (int op = 0; op < 6; op++) {
                    uint64_t seed = 5;
                    struct gnode n = {.kind = GN_CMP, .op = op, .col = c, .nlits = 1};
                    n.lits[0].kind = GL_DBL;
                    n.lits[0].d = l == 0 ? NAN : strtod(l == 1 ? "inf" : l == 2 ? "-inf" : lits[l], NULL);
                    snprintf(text, sizeof text, "%s %s %s", F.cat.cols[c].text, ops[op], lits[l]);
                    (void)seed;
                    check_scan(E, &F, &n, text, 1024, NULL, 0, 0);
                }
        /* QV_NAN_LARGEST: NaN above every number and equal to itself; the
         * library's own evaluator (test_expr_nan_order checks it) is the
         * reference here. */
        for (int c = 1; c < 3; c++)
            for (int l = 0; l < 6; l++)
                for (int op = 0; op < 6; op++) {
                    snprintf(text, sizeof text, "%s %s %s AND id >= 0", F.cat.cols[c].text, ops[op],
                             lits[l]);
                    struct qv_expr *x;
                    struct qv_error err;
                    assert_int_equal(qv_expr_parse(text, E->r, &x, &err), 0);
                    assert_int_equal(qv_expr_bind_ex(x, F.schema, QV_NAN_LARGEST, &err), 0);
                    int64_t want[ROWS], nw = eval_rows(E, &F, x, 0, want), k = 0;
                    qv_expr_destroy(x);
                    int32_t proj = 0;
                    struct qv_scan_options o = {.columns = &proj, .n_columns = 1, .filter = text,
                                                .threads = QV_SCAN_SYNC, .batch_rows = 1024,
                                                .nan_order = QV_NAN_LARGEST};
                    struct ArrowArrayStream st;
                    assert_int_equal(qv_scan_open(F.rd, &o, E->r, &st, &err), 0);
                    for (;;) {
                        struct ArrowArray b;
                        assert_int_equal(st.get_next(&st, &b), 0);
                        if (!b.release) break;
                        for (int64_t i = 0; i < b.length; i++) {
                            assert_true(k < nw);
                            assert_int_equal(id_of(FAM_FLT, b.children[0], i), want[k]);
                            k++;
                        }
                        b.release(&b);
                    }
                    st.release(&st);
                    assert_int_equal(k, nw);
                }
        for (int c = 1; c < 3; c++)
            for (int neg = 0; neg < 2; neg++) {
                struct gnode n = {.kind = GN_ISNULL, .col = c, .neg = neg};
                snprintf(text, sizeof text, "%s IS %sNULL", F.cat.cols[c].text, neg ? "NOT " : "");
                check_scan(E, &F, &n, text, 700, NULL, 0, 0);
            }
        close_file(&F);
    }
}

/* ---- the filter's own interface ---- */

/* Runs f over every row group in batches of `bs` rows (ranges, or takes of
 * every third row) and writes the selected global rows to out. */
static int64_t run_filter(struct pool_env *E, struct qv__filter *f, const struct qv_reader *rd,
                          int64_t bs, int takes, int64_t *out, struct qv__filter_counts *counts) {
    struct qv__filter_ctx *c;
    struct qv_error err;
    assert_int_equal(qv__filter_ctx_create(f, E->pool, &c, &err), 0);
    int64_t *sel = malloc((size_t)bs * sizeof *sel), *rows = malloc((size_t)bs * sizeof *rows);
    int64_t total = 0, start = 0;
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++) {
        int64_t n_rg = qv_reader_row_group_rows(rd, rg);
        for (int64_t lo = 0; lo < n_rg; lo += bs) {
            int64_t n = n_rg - lo < bs ? n_rg - lo : bs, k = 0, m = 0;
            if (takes)
                for (int64_t i = (lo + 2) / 3 * 3; i < lo + n; i += 3) rows[m++] = i;
            int rc = qv__filter_batch(c, rg, lo, takes ? rows : NULL, takes ? m : n, sel, &k,
                                      counts, NULL, &err);
            if (rc) fail_msg("filter_batch: %s", err.message);
            for (int64_t i = 0; i < k; i++) {
                if (i) assert_true(sel[i] > sel[i - 1]);
                out[total++] = start + sel[i];
            }
        }
        start += n_rg;
    }
    free(rows);
    free(sel);
    qv__filter_ctx_destroy(c);
    return total;
}

static void next_perm(int32_t *p, int32_t n, uint64_t *seed) {
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)(rb_next(seed) % (uint64_t)(i + 1));
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* Every order of the conjuncts gives the same rows, in ranges and takes,
 * and the same as the reference. */
static void test_order_permutations(void **state) {
    struct pool_env *E = *state;
    static const char *const filters[] = {
        "i32 >= 0 AND i16 < 3000 AND dec BETWEEN -1.5 AND 40.26 AND u8 IN (120, 130, 150, NULL) "
        "AND NOT (i8 = 3)",
        "ts > TIMESTAMP '2023-11-14 22:13:20' AND (i64 < 0 OR u64 > 100) AND day != DATE "
        "'2022-01-01' AND i8 IS NOT NULL AND u16 BETWEEN 1000 AND 1200",
        "i32 < i64 AND i8 > -50 AND u32 <= 4000000000 AND dec > 0",
    };
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_FOR, QV_ENC_DICT, QV_ENC_RLE};
    int64_t *want = malloc(ROWS * sizeof *want), *got = malloc(ROWS * sizeof *got);
    for (int e = 0; e < 4; e++) {
        struct file F;
        open_file(E, &F, FAM_INT, D_GENERAL, encs[e], (uint64_t)e + 7, "perm.qvr");
        for (int q = 0; q < 3; q++) {
            struct qv_expr *x;
            struct qv__filter *f = filter_of(E, &F, filters[q], &x);
            int32_t nc = qv__filter_conjuncts(f);
            assert_true(nc >= 4);
            int32_t perm[16];
            for (int32_t i = 0; i < nc; i++) perm[i] = i;
            for (int takes = 0; takes < 2; takes++) {
                /* The reference's rows. */
                int64_t nw = eval_rows(E, &F, x, takes, want);
                uint64_t seed = (uint64_t)q * 31 + (uint64_t)takes;
                for (int rep = 0; rep < 12; rep++) {
                    struct qv__filter_counts counts = {0};
                    int64_t k = run_filter(E, f, F.rd, rep % 2 ? 1000 : 4096, takes, got, &counts);
                    assert_int_equal(k, nw);
                    assert_memory_equal(got, want, (size_t)k * sizeof *got);
                    assert_int_equal(counts.rows_out, k);
                    assert_int_equal(counts.rows_in, takes ? 2 * ((RG_ROWS + 2) / 3) : ROWS);
                    assert_true(counts.rows_decoded <= counts.rows_in);
                    next_perm(perm, nc, &seed);
                    qv__filter_set_order(f, perm);
                }
            }
            qv__filter_destroy(f);
            qv_expr_destroy(x);
        }
        close_file(&F);
    }
    free(want);
    free(got);
}

/* A conjunct that statistics prove TRUE for every row is never evaluated:
 * nothing is decoded for it; one that cannot be TRUE empties the batch
 * without decoding either. */
static void test_statistics_skip(void **state) {
    struct pool_env *E = *state;
    struct file F;
    open_file(E, &F, FAM_INT, D_GENERAL, QV_ENC_AUTO, 3, "skip.qvr");
    static const struct {
        const char *text;
        int all;
    } cases[] = {{"id >= 0 AND id < 1000000", 1}, {"id < 0", 0}, {"id >= 0 AND id > 999999", 0}};
    for (int k = 0; k < 3; k++) {
        struct qv_expr *x;
        struct qv__filter *f = filter_of(E, &F, cases[k].text, &x);
        int64_t *got = malloc(ROWS * sizeof *got);
        struct qv__filter_counts counts = {0};
        int64_t n = run_filter(E, f, F.rd, 1024, 0, got, &counts);
        assert_int_equal(n, cases[k].all ? ROWS : 0);
        assert_int_equal(counts.values_decoded, 0);
        assert_int_equal(counts.rows_decoded, 0);
        assert_int_equal(counts.bytes_loaded, 0);
        free(got);
        qv__filter_destroy(f);
        qv_expr_destroy(x);
    }
    close_file(&F);
}

/* Decoding follows the survivors: a selective first conjunct leaves the
 * second column decoded only for the vectors that still hold rows. */
static void test_decodes_follow_survivors(void **state) {
    struct pool_env *E = *state;
    struct file F;
    open_file(E, &F, FAM_INT, D_GENERAL, QV_ENC_PLAIN, 5, "surv.qvr");
    struct qv_expr *x;
    /* id in one vector of each row group, then a general conjunct. */
    struct qv__filter *f = filter_of(E, &F,
                                     "(id BETWEEN 100 AND 140 OR id BETWEEN 1600 AND 1610) AND "
                                     "(i32 > 0 OR i16 < 0)",
                                     &x);
    int32_t order[2] = {0, 1};
    qv__filter_set_order(f, order);
    int64_t *got = malloc(ROWS * sizeof *got);
    struct qv__filter_counts counts = {0};
    run_filter(E, f, F.rd, 65536, 0, got, &counts);
    /* id decoded whole (ROWS values); i32 and i16 for the 52 rows the first
     * conjunct kept (taken: sparse in their vectors). */
    assert_int_equal(counts.values_decoded, ROWS + 2 * 52);
    assert_int_equal(counts.rows_in, ROWS);
    free(got);
    qv__filter_destroy(f);
    qv_expr_destroy(x);
    close_file(&F);
}

/* Comparisons the encodings answer leave their filter-only columns
 * undecoded: integers (decimals as int64, dates) under every integer
 * encoding, string equality and prefixes under every binary one. */
static void test_encoded_without_decode(void **state) {
    struct pool_env *E = *state;
    static const struct forced cases[] = {
        {FAM_INT, D_NONNEG, QV_ENC_BITPACK}, {FAM_INT, D_GENERAL, QV_ENC_FOR},
        {FAM_INT, D_GENERAL, QV_ENC_DELTA},  {FAM_INT, D_GENERAL, QV_ENC_DICT},
        {FAM_INT, D_GENERAL, QV_ENC_RLE},    {FAM_INT, D_GENERAL, QV_ENC_PLAIN},
        {FAM_INT, D_GENERAL, QV_ENC_ZSTD},   {FAM_INT, D_SPARSE, QV_ENC_SPARSE},
        {FAM_STR, D_GENERAL, QV_ENC_DICT},   {FAM_STR, D_GENERAL, QV_ENC_FSST},
        {FAM_STR, D_GENERAL, QV_ENC_PLAIN},  {FAM_STR, D_GENERAL, QV_ENC_ZSTD},
    };
    int64_t *got = malloc(ROWS * sizeof *got), *want = malloc(ROWS * sizeof *want);
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        struct file F;
        open_file(E, &F, cases[i].fam, cases[i].shape, cases[i].enc, (uint64_t)i + 300, "enc.qvr");
        /* Literals from a row whose values are all there, so that it passes. */
        char text[2048];
        int64_t r0 = -1;
        for (int64_t r = 0; r < ROWS && r0 < 0; r++) {
            int ok = 1;
            for (int c = 1; c < F.cat.n; c++) {
                struct gval v;
                g_read(&F.batch, NULL, &F.cat.cols[c], r, &v);
                /* A prefix of two bytes: an empty one is only IS NOT NULL. */
                ok &= !v.null && (cases[i].fam != FAM_STR || v.n >= 2);
            }
            if (ok) r0 = r;
        }
        assert_true(r0 >= 0);
        struct gval v[12];
        for (int c = 1; c < F.cat.n; c++) g_read(&F.batch, NULL, &F.cat.cols[c], r0, &v[c]);
        if (cases[i].fam == FAM_INT) {
            struct glit lo, hi, day;
            uint64_t sd = 1;
            num_lit(&F.cat.cols[9], v[9].i, &lo, &sd);
            num_lit(&F.cat.cols[9], v[9].i + 2000, &hi, &sd);
            num_lit(&F.cat.cols[10], v[10].i + 100, &day, &sd);
            snprintf(text, sizeof text,
                     "i32 >= %lld AND dec BETWEEN %s AND %s AND day <= %s AND u64 != %llu",
                     (long long)v[3].i, lo.text, hi.text, day.text,
                     (unsigned long long)(v[8].i + 1));
        } else {
            char hs[200] = "", hl[8] = "";
            for (size_t k = 0; k < v[1].n && k < 60; k++) sprintf(hs + 2 * k, "%02x", v[1].p[k]);
            for (size_t k = 0; k < v[2].n && k < 2; k++) sprintf(hl + 2 * k, "%02x", v[2].p[k]);
            snprintf(text, sizeof text, "s = X'%s' AND ls STARTS WITH X'%s' AND b != 'zz'", hs, hl);
        }
        struct qv_expr *x;
        struct qv__filter *f = filter_of(E, &F, text, &x);
        for (int takes = 0; takes < 2; takes++) {
            struct qv__filter_counts counts = {0};
            int64_t k = run_filter(E, f, F.rd, 1024, takes, got, &counts);
            int64_t nw = eval_rows(E, &F, x, takes, want);
            assert_int_equal(k, nw);
            assert_memory_equal(got, want, (size_t)k * sizeof *got);
            if (counts.values_decoded != 0)
                fail_msg("%s (%s): %lld values decoded", qv_encoding_name(cases[i].enc),
                         takes ? "takes" : "ranges", (long long)counts.values_decoded);
            if (counts.bytes_loaded <= 0 || (!takes && k == 0)) fail_msg("%s: bytes_loaded %lld, k %lld, rows_decoded %lld", qv_encoding_name(cases[i].enc), (long long)counts.bytes_loaded, (long long)k, (long long)counts.rows_decoded);
        }
        qv__filter_destroy(f);
        qv_expr_destroy(x);
        close_file(&F);
    }
    free(want);
    free(got);
}

/* Cancellation between conjuncts. */
static void test_cancel(void **state) {
    struct pool_env *E = *state;
    struct file F;
    open_file(E, &F, FAM_INT, D_GENERAL, QV_ENC_AUTO, 9, "cancel.qvr");
    struct qv_expr *x;
    struct qv__filter *f = filter_of(E, &F, "i32 > 0 AND i16 < 100", &x);
    struct qv_error err;
    struct qv__filter_ctx *c;
    assert_int_equal(qv__filter_ctx_create(f, E->pool, &c, &err), 0);
    int64_t sel[1024], k = -1;
    int cancel = 1;
    assert_int_equal(qv__filter_batch(c, 0, 0, NULL, 1024, sel, &k, NULL, &cancel, &err), ECANCELED);
    assert_int_equal(qv__filter_batch(c, 5, 0, NULL, 1024, sel, &k, NULL, NULL, &err), EINVAL);
    cancel = 0;
    assert_int_equal(qv__filter_batch(c, 0, 0, NULL, 1024, sel, &k, NULL, &cancel, &err), 0);
    qv__filter_ctx_destroy(c);
    qv__filter_destroy(f);
    qv_expr_destroy(x);
    close_file(&F);
}

int main(void) {
    (void)g_scramble_validity; /* of the shared generator; batches here are whole */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_oracle_int, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_oracle_str, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_oracle_flt, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_boundaries, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_nan_and_nulls, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_order_permutations, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_statistics_skip, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_decodes_follow_survivors, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_encoded_without_decode, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_cancel, pool_env_setup, pool_env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
