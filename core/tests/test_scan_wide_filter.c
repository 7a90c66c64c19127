/* A filter may read any number of columns: generated filters OR equalities
 * over hundreds of columns. 600 int32 columns, a filter over 500 of them,
 * in every threading mode, with pruning (statistics of more than 32
 * references) and every byte given back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/scan.h"
#include "test_util.h"

#define NCOL 600
#define NFILT 500
#define ROWS 3000
#define RG 1024

static struct qv_pool *pool;
static struct qv_reservation *res;
static struct qv_reader *rd;
static char path[512];
static struct qv_field cols[NCOL];
static char names[NCOL][16];

/* Column c, row i holds i + c: `c<k> = t + k` matches exactly row t. */
static int write_file(void) {
    for (int c = 0; c < NCOL; c++) {
        snprintf(names[c], sizeof names[c], "c%d", c);
        cols[c] = (struct qv_field){.name = names[c], .type = QV_TYPE_INT32};
    }
    struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = NCOL,
                            .children = cols};
    struct qv_schema *s;
    struct qv_error err;
    int rc = qv_schema_create(&root, res, &s, &err);
    if (rc) return rc;
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG};
    rc = qv_writer_open(path, s, &o, res, &w, &err);
    if (rc) {
        qv_schema_destroy(s);
        return rc;
    }
    struct qv_builder *b = qv_writer_builder(w);
    for (int64_t i = 0; i < ROWS && !rc; i++) {
        for (int c = 0; c < NCOL && !rc; c++)
            rc = qv_append_int32(qv_builder_column(b, c), (int32_t)(i + c));
        if (!rc && i % 500 == 499) rc = qv_writer_end_rows(w, &err);
    }
    if (!rc) rc = qv_writer_end_rows(w, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fprintf(stderr, "write_file: %s\n", err.message);
    qv_writer_close(w);
    qv_schema_destroy(s);
    return rc;
}

static int setup(void **state) {
    (void)state;
    alarm(300);
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "scan_wide_filter.qvr");
    assert_int_equal(write_file(), 0);
    assert_int_equal(qv_reader_open(path, NULL, res, &rd, NULL), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    qv_reader_close(rd);
    unlink(path);
    assert_int_equal(qv_reservation_used(res), 0);
    qv_reservation_destroy(res);
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(pool);
    return 0;
}

/* The target row of disjunct k: rows in the first row group only, so the
 * others are pruned by statistics. */
static int64_t target(int k) { return (int64_t)(k * 7) % RG; }

static void test_or_over_500_columns(void **state) {
    (void)state;
    size_t cap = (size_t)NFILT * 40, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int k = 0; k < NFILT; k++) {
        /* Columns 100..599: the projection (c0) is not among them. */
        int c = NCOL - NFILT + k;
        len += (size_t)snprintf(text + len, cap - len, "%sc%d = %lld", k ? " OR " : "", c,
                                (long long)(target(k) + c));
    }
    static int want[ROWS];
    int n_want = 0;
    memset(want, 0, sizeof want);
    for (int k = 0; k < NFILT; k++)
        if (!want[target(k)]++) n_want++;
    int32_t proj[] = {0};
    int modes[] = {QV_SCAN_SYNC, 1, 3};
    for (size_t m = 0; m < 3; m++) {
        struct qv_scan_options o = {.columns = proj, .n_columns = 1, .filter = text,
                                    .threads = modes[m], .validate = QV_SCAN_VALIDATE_FULL};
        struct ArrowArrayStream st;
        struct qv_error err;
        if (qv_scan_open(rd, &o, res, &st, &err)) fail_msg("open: %s", err.message);
        int64_t n = 0;
        for (;;) {
            struct ArrowArray b;
            int rc = st.get_next(&st, &b);
            if (rc) fail_msg("get_next: %s", st.get_last_error(&st));
            if (!b.release) break;
            const int32_t *v = b.children[0]->buffers[1];
            for (int64_t i = 0; i < b.length; i++) {
                int32_t row = v[b.children[0]->offset + i]; /* c0 = row */
                assert_true(row >= 0 && row < ROWS && want[row]);
                n++;
            }
            b.release(&b);
        }
        assert_int_equal(n, n_want);
        struct qv_scan_stats ss;
        assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
        assert_int_equal(ss.row_groups_pruned, ss.row_groups_total - 1);
        st.release(&st);
    }
    free(text);
}

/* An AND over every column (600 references) keeps all rows; one more
 * conjunct narrows it to one. */
static void test_and_over_every_column(void **state) {
    (void)state;
    size_t cap = (size_t)NCOL * 40, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int c = 0; c < NCOL; c++)
        len += (size_t)snprintf(text + len, cap - len, "%sc%d >= %d", c ? " AND " : "", c, c);
    for (int narrow = 0; narrow < 2; narrow++) {
        if (narrow) snprintf(text + len, cap - len, " AND c599 = %d", 2500 + 599);
        struct qv_scan_options o = {.filter = text, .threads = 2};
        struct ArrowArrayStream st;
        struct qv_error err;
        if (qv_scan_open(rd, &o, res, &st, &err)) fail_msg("open: %s", err.message);
        int64_t n = 0;
        for (;;) {
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), 0);
            if (!b.release) break;
            assert_int_equal(b.n_children, NCOL);
            if (narrow) assert_int_equal(((const int32_t *)b.children[7]->buffers[1])[0], 2507);
            n += b.length;
            b.release(&b);
        }
        assert_int_equal(n, narrow ? 1 : ROWS);
        st.release(&st);
    }
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_or_over_500_columns),
        cmocka_unit_test(test_and_over_every_column),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
