/*
 * Filters on dictionary-encoded float and int columns of exactly 31, 32 and
 * 33 distinct values (the last one past qv__code_cmp32's 32), with nulls,
 * NaN, -0.0, 0.0 and infinities among the entries, through the whole scan
 * (qv_writer_force_encoding(QV_ENC_DICT)), in both NaN orders, at the
 * generic and the best CPU level: the ids selected equal a three-valued
 * oracle's, row for row.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/cpu_internal.h"
#include "format/format_testing.h"
#include "quiver/encoding.h"
#include "quiver/scan.h"
#include "test_util.h"

#define ROWS 6000
#define RG_ROWS 2500

static const struct qv_field cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "i", .type = QV_TYPE_INT32, .nullable = true},
};

static int is_null(int64_t r) { return r % 5 == 2 || (r >= 3000 && r < 4100); }

/* Entry k of a dictionary of ds floats: NaN, -0.0, 0.0, +-inf, then halves. */
static double fent(int ds, int k) {
    (void)ds;
    switch (k) {
    case 0: return NAN;
    case 1: return -0.0;
    case 2: return 0.0;
    case 3: return INFINITY;
    case 4: return -INFINITY;
    default: return (k - 15) * 0.5 + 0.25; /* never 0: every entry distinct */
    }
}
static int entry_of(int ds, int64_t r) {
    /* Every entry in each row group (first rows), then a skew to the last. */
    int64_t rr = r % RG_ROWS;
    if (rr < ds) return (int)rr;
    uint64_t x = (uint64_t)r * 2654435761u;
    return (x >> 7) % 3 == 0 ? ds - 1 : (int)((x >> 11) % (uint64_t)ds);
}

static void write_file(const char *path, int ds, struct qv_reservation *r) {
    struct qv_field root = {.type = QV_TYPE_STRUCT, .children = (struct qv_field *)cols,
                            .n_children = 3};
    struct qv_schema *schema;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, r, &schema, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(schema, r, NULL, &b, &err), 0);
    for (int64_t i = 0; i < ROWS; i++) {
        assert_int_equal(qv_append_int64(qv_builder_column(b, 0), i), 0);
        int k = entry_of(ds, i);
        if (is_null(i)) {
            assert_int_equal(qv_append_null(qv_builder_column(b, 1)), 0);
            assert_int_equal(qv_append_null(qv_builder_column(b, 2)), 0);
        } else {
            assert_int_equal(qv_append_float64(qv_builder_column(b, 1), fent(ds, k)), 0);
            assert_int_equal(qv_append_int32(qv_builder_column(b, 2), -35 + 7 * k), 0);
        }
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG_ROWS};
    assert_int_equal(qv_writer_open(path, schema, &o, r, &w, &err), 0);
    qv_writer_force_encoding(w, QV_ENC_DICT);
    int rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("write: %s", err.message);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(schema);
}

/* ---- the oracle: 0 FALSE, 1 TRUE, 2 NULL ---- */

enum { OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_BETWEEN, OP_IN, OP_ISNULL };
struct pred {
    const char *text; /* on f; %s replaced by nothing */
    int col;          /* 1 = f, 2 = i */
    int op, negate;
    double a, b;
};

/* -1, 0, 1, or 2 when unordered (IEEE NaN). */
static int fcmp(double x, double y, int largest) {
    int xn = x != x, yn = y != y;
    if (xn || yn) {
        if (!largest) return 2;
        return xn && yn ? 0 : xn ? 1 : -1;
    }
    return x < y ? -1 : x > y ? 1 : 0;
}

static int cmp_op(int op, int c) {
    if (c == 2) return op == OP_NE; /* IEEE: only != holds */
    switch (op) {
    case OP_LT: return c < 0;
    case OP_LE: return c <= 0;
    case OP_GT: return c > 0;
    case OP_GE: return c >= 0;
    case OP_EQ: return c == 0;
    default: return c != 0;
    }
}

static int oracle(const struct pred *p, int64_t r, int ds, int largest) {
    int null = is_null(r);
    int t;
    if (p->op == OP_ISNULL) t = null;
    else if (null) t = 2;
    else {
        double x = p->col == 1 ? fent(ds, entry_of(ds, r)) : -35 + 7 * entry_of(ds, r);
        if (p->op == OP_BETWEEN)
            t = cmp_op(OP_GE, fcmp(x, p->a, largest)) && cmp_op(OP_LE, fcmp(x, p->b, largest));
        else if (p->op == OP_IN)
            t = cmp_op(OP_EQ, fcmp(x, p->a, largest)) || cmp_op(OP_EQ, fcmp(x, p->b, largest));
        else t = cmp_op(p->op, fcmp(x, p->a, largest));
    }
    if (p->negate && t != 2) t = !t;
    return t;
}

static const struct pred preds[] = {
    {"f < 1", 1, OP_LT, 0, 1, 0},
    {"f <= 0", 1, OP_LE, 0, 0, 0},
    {"f > -0.5", 1, OP_GT, 0, -0.5, 0},
    {"f >= 2", 1, OP_GE, 0, 2, 0},
    {"f = 0", 1, OP_EQ, 0, 0, 0},
    {"f != 0", 1, OP_NE, 0, 0, 0},
    {"f = NaN", 1, OP_EQ, 0, NAN, 0},
    {"f != NaN", 1, OP_NE, 0, NAN, 0},
    {"f > 1000", 1, OP_GT, 0, 1000, 0},
    {"f = Infinity", 1, OP_EQ, 0, INFINITY, 0},
    {"f BETWEEN -1 AND 3", 1, OP_BETWEEN, 0, -1, 3},
    {"f IN (1.75, NaN)", 1, OP_IN, 0, 1.75, NAN},
    {"f IS NULL", 1, OP_ISNULL, 0, 0, 0},
    {"NOT (f < 1)", 1, OP_LT, 1, 1, 0},
    {"NOT (f = NaN)", 1, OP_EQ, 1, NAN, 0},
    /* ints: entry k is -35 + 7k (0 an entry, as a null slot may hold):
     * k = 31 is 182, k = 32 is 189 */
    {"i = 182", 2, OP_EQ, 0, 182, 0},
    {"i = 189", 2, OP_EQ, 0, 189, 0},
    {"i = -35", 2, OP_EQ, 0, -35, 0},
    {"i != 182", 2, OP_NE, 0, 182, 0},
    {"i < 175", 2, OP_LT, 0, 175, 0},
    {"i >= 182", 2, OP_GE, 0, 182, 0},
    {"i BETWEEN -35 AND 189", 2, OP_BETWEEN, 0, -35, 189},
    {"i IN (182, -28)", 2, OP_IN, 0, 182, -28},
};

/* The values read back are the ones written, bit for bit (-0.0 is not 0.0,
 * NaN keeps its payload), before any filter is trusted. */
static void check_roundtrip(struct qv_reader *rd, int ds, struct qv_reservation *r) {
    static const int32_t proj[] = {0, 1, 2};
    struct qv_scan_options o = {.columns = proj, .n_columns = 3, .threads = QV_SCAN_SYNC};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, r, &st, NULL), 0);
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), 0);
        if (!b.release) break;
        const struct ArrowArray *ia = b.children[0], *fa = b.children[1], *xa = b.children[2];
        for (int64_t j = 0; j < b.length; j++) {
            int64_t id = ((const int64_t *)ia->buffers[1])[ia->offset + j];
            int64_t fj = fa->offset + j, xj = xa->offset + j;
            const uint8_t *fv = fa->buffers[0], *xv = xa->buffers[0];
            int fvalid = !fv || (fv[fj / 8] >> (fj % 8)) & 1;
            int xvalid = !xv || (xv[xj / 8] >> (xj % 8)) & 1;
            assert_int_equal(fvalid, !is_null(id));
            assert_int_equal(xvalid, !is_null(id));
            if (!fvalid) continue;
            double want = fent(ds, entry_of(ds, id)), got = ((const double *)fa->buffers[1])[fj];
            if (memcmp(&want, &got, 8))
                fail_msg("dict of %d: row %lld: f is %g (sign %d), written %g (sign %d)", ds,
                         (long long)id, got, signbit(got) != 0, want, signbit(want) != 0);
            assert_int_equal(((const int32_t *)xa->buffers[1])[xj], -35 + 7 * entry_of(ds, id));
        }
        rows += b.length;
        b.release(&b);
    }
    assert_int_equal(rows, ROWS);
    st.release(&st);
}

static void test_small_dicts_through_scan(void **state) {
    (void)state;
    struct qv_pool *pool;
    struct qv_reservation *r;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    static const int32_t proj[] = {0};
    static uint8_t got[ROWS];
    const int sizes[] = {31, 32, 33};
    const int levels[] = {QV__CPU_BASELINE, QV__CPU_AVX2};
    for (int z = 0; z < 3; z++) {
        const int ds = sizes[z];
        char path[512], name[64];
        snprintf(name, sizeof name, "scan_dict32_%d.qvr", ds);
        tu_path(path, sizeof path, name);
        write_file(path, ds, r);
        struct qv_reader *rd;
        assert_int_equal(qv_reader_open(path, NULL, r, &rd, NULL), 0);
        check_roundtrip(rd, ds, r);
        for (int lv = 0; lv < 2; lv++) {
            const int saved = qv__cpu_set_level(levels[lv]);
            for (size_t k = 0; k < sizeof preds / sizeof preds[0]; k++)
                for (int largest = 0; largest < 2; largest++)
                    for (int threads = 0; threads < 2; threads++) {
                        struct qv_scan_options o = {.columns = proj, .n_columns = 1,
                                                    .filter = preds[k].text, .batch_rows = 1000,
                                                    .threads = threads ? 2 : QV_SCAN_SYNC,
                                                    .nan_order = largest};
                        struct ArrowArrayStream st;
                        struct qv_error err;
                        int rc = qv_scan_open(rd, &o, r, &st, &err);
                        if (rc) fail_msg("%s: %s", preds[k].text, err.message);
                        memset(got, 0, sizeof got);
                        for (;;) {
                            struct ArrowArray b;
                            rc = st.get_next(&st, &b);
                            if (rc) fail_msg("%s: %s", preds[k].text, st.get_last_error(&st));
                            if (!b.release) break;
                            const int64_t *id = b.children[0]->buffers[1];
                            for (int64_t j = 0; j < b.length; j++) got[id[j + b.children[0]->offset]]++;
                            b.release(&b);
                        }
                        st.release(&st);
                        int64_t n = 0;
                        for (int64_t i = 0; i < ROWS; i++) {
                            int want = oracle(&preds[k], i, ds, largest) == 1;
                            n += want;
                            if (got[i] != want)
                                fail_msg("dict of %d, level %d, %s, nan order %d, threads %d: row "
                                         "%lld (entry %d%s) selected %d times, want %d", ds,
                                         levels[lv], preds[k].text, largest, threads,
                                         (long long)i, entry_of(ds, i),
                                         is_null(i) ? ", null" : "", got[i], want);
                        }
                        (void)n;
                    }
            qv__cpu_set_level(saved);
        }
        qv_reader_close(rd);
        if (!getenv("KEEP")) unlink(path);
    }
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_dicts_through_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
