/* Split planning over projected columns (qv_file_plan_splits_columns): a row
 * group weighs the chunks a scan of the columns loads, so a split's bytes
 * are what scanning it reads (qv_scan_stats.bytes_read); a small column
 * makes fewer, larger splits than every column; every row group is in
 * exactly one split; nested names weigh their field only; no column weighs
 * rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/file.h"
#include "quiver/scan.h"
#include "random_batch.h"
#include "test_util.h"

#define RG 500
#define NRG 12
#define ROWS (RG * NRG)

static struct qv_pool *pool;
static struct qv_reservation *res;
static char path[512];

static const struct qv_field S_FIELDS[] = {
    {.name = "a", .type = QV_TYPE_INT8, .nullable = true},
    {.name = "b", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field M_KV[] = {
    {.name = "key", .type = QV_TYPE_UTF8, .nullable = false},
    {.name = "value", .type = QV_TYPE_INT64, .nullable = true},
};
static const struct qv_field M_ENTRIES[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .nullable = false, .n_children = 2, .children = M_KV},
};
static const struct qv_field COLS[] = {
    {.name = "id", .type = QV_TYPE_INT8, .nullable = false},
    {.name = "text", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "s", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = S_FIELDS},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = M_ENTRIES},
};
static const struct qv_field ROOT = {.type = QV_TYPE_STRUCT, .n_children = 4, .children = COLS};

static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "file_splits.qvr");
    struct qv_schema *schema;
    struct qv_error err = {0};
    assert_int_equal(qv_schema_create(&ROOT, res, &schema, &err), 0);
    struct qv_writer *w;
    struct qv_writer_options wo = {.row_group_rows = RG};
    if (qv_writer_open(path, schema, &wo, res, &w, &err)) fail_msg("%s", err.message);
    struct rb_options ro = {.null_prob = 0.1, .max_list = 4, .max_string = 60};
    for (int64_t done = 0; done < ROWS; done += RG) {
        struct ArrowArray b;
        assert_int_equal(rb_batch(schema, RG, 11 + (uint64_t)done, &ro, res, &b), 0);
        if (qv_writer_write(w, &b, &err)) fail_msg("%s", err.message);
        b.release(&b);
    }
    if (qv_writer_finish(w, &err)) fail_msg("%s", err.message);
    qv_writer_close(w);
    qv_schema_destroy(schema);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return 0;
}

/* Every row group in exactly one split, in order, rows matching. */
static void check_cover(const struct qv_file *f, const struct qv_file_split *sp, int64_t n) {
    const struct qv_reader *rd = qv_file_reader(f);
    int64_t next = 0;
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(sp[i].row_group_begin, next);
        assert_true(sp[i].row_group_end > sp[i].row_group_begin);
        assert_int_equal(sp[i].row_begin, qv_reader_row_group_first_row(rd, sp[i].row_group_begin));
        int64_t last = sp[i].row_group_end - 1;
        assert_int_equal(sp[i].row_end,
                         qv_reader_row_group_first_row(rd, last) + qv_reader_row_group_rows(rd, last));
        next = sp[i].row_group_end;
    }
    assert_int_equal(next, qv_reader_num_row_groups(rd));
}

/* Scans a split with the columns (no filter) and returns bytes_read. */
static int64_t scan_bytes(struct qv_file *f, const char *const *cols, int32_t n,
                          const struct qv_file_split *s) {
    struct qv_file_scan_options o = {.columns = cols, .n_columns = n,
                                      .scan = {.row_group_begin = s->row_group_begin,
                                               .row_group_end = s->row_group_end,
                                               .threads = QV_SCAN_SYNC}};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    if (qv_file_scan(f, &o, &st, &err)) fail_msg("scan: %s", err.message);
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), 0);
        if (!b.release) break;
        rows += b.length;
        b.release(&b);
    }
    assert_int_equal(rows, s->row_end - s->row_begin);
    struct qv_scan_stats stats;
    assert_int_equal(qv_scan_get_stats(&st, &stats), 0);
    st.release(&st);
    return stats.bytes_read;
}

static uint64_t total(const struct qv_file_split *sp, int64_t n) {
    uint64_t t = 0;
    for (int64_t i = 0; i < n; i++) t += sp[i].bytes;
    return t;
}

static void test_projected_splits(void **state) {
    (void)state;
    struct qv_file *f;
    struct qv_error err = {0};
    assert_int_equal(qv_file_open(path, NULL, &f, &err), 0);
    struct qv_file_split *all, *sp;
    int64_t n_all, n;
    assert_int_equal(qv_file_plan_splits_columns(f, NULL, 0, 1, &all, &n_all, &err), 0);
    assert_int_equal(n_all, NRG);
    uint64_t all_bytes = total(all, n_all);
    free(all);
    /* A target of about three row groups of every column. */
    uint64_t target = all_bytes / NRG * 3;
    assert_int_equal(qv_file_plan_splits_columns(f, NULL, 0, target, &all, &n_all, &err), 0);
    check_cover(f, all, n_all);
    /* The same as qv_file_plan_splits. */
    struct qv_file_split *plain;
    int64_t n_plain;
    assert_int_equal(qv_file_plan_splits(f, target, &plain, &n_plain, &err), 0);
    assert_int_equal(n_plain, n_all);
    assert_memory_equal(plain, all, (size_t)n_all * sizeof *all);
    free(plain);

    static const char *const one[] = {"id"};
    assert_int_equal(qv_file_plan_splits_columns(f, one, 1, target, &sp, &n, &err), 0);
    check_cover(f, sp, n);
    assert_true(n < n_all);          /* fewer ... */
    assert_int_equal(n, 1);          /* int8 ids weigh far less than a third of the file */
    assert_true(total(sp, n) < all_bytes / 10);
    for (int64_t i = 0; i < n; i++) assert_int_equal(scan_bytes(f, one, 1, &sp[i]), (int64_t)sp[i].bytes);
    free(sp);
    free(all);

    /* Each projection: a split's bytes are what scanning it reads. */
    static const char *const sa[] = {"s.a"}, *const s_[] = {"s"}, *const m[] = {"m"},
                             *const mk[] = {"m.key"}, *const two[] = {"text", "s.b"};
    struct {
        const char *const *cols;
        int32_t n;
    } projections[] = {{sa, 1}, {s_, 1}, {m, 1}, {mk, 1}, {two, 2}, {one, 1}};
    uint64_t weight[6];
    for (int p = 0; p < 6; p++) {
        uint64_t t = target / 4;
        assert_int_equal(qv_file_plan_splits_columns(f, projections[p].cols, projections[p].n, t,
                                                     &sp, &n, &err), 0);
        check_cover(f, sp, n);
        for (int64_t i = 0; i < n; i++)
            assert_int_equal(scan_bytes(f, projections[p].cols, projections[p].n, &sp[i]),
                             (int64_t)sp[i].bytes);
        weight[p] = total(sp, n);
        free(sp);
    }
    assert_true(weight[0] < weight[1]); /* s.a: only that field (and s's validity) */
    assert_true(weight[1] < all_bytes);
    assert_true(weight[3] <= weight[2]);
    qv_file_close(f);
}

static void test_no_column_and_errors(void **state) {
    (void)state;
    struct qv_file *f;
    struct qv_error err = {0};
    assert_int_equal(qv_file_open(path, NULL, &f, &err), 0);
    static const char *const none[1] = {NULL};
    struct qv_file_split *sp;
    int64_t n;
    /* No column: rows weigh, bytes are 0; RG * 2 rows per split. */
    assert_int_equal(qv_file_plan_splits_columns(f, none, 0, RG * 2, &sp, &n, &err), 0);
    check_cover(f, sp, n);
    assert_int_equal(n, NRG / 2);
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(sp[i].bytes, 0);
        assert_int_equal(sp[i].row_group_end - sp[i].row_group_begin, 2);
        assert_int_equal(scan_bytes(f, none, 0, &sp[i]), 0);
    }
    free(sp);
    /* Unknown names and bad counts. */
    static const char *const bad[] = {"nope"};
    assert_int_equal(qv_file_plan_splits_columns(f, bad, 1, 0, &sp, &n, &err), ENOENT);
    assert_null(sp);
    assert_int_equal(n, 0);
    assert_non_null(strstr(err.message, "nope"));
    assert_int_equal(qv_file_plan_splits_columns(f, bad, -1, 0, &sp, &n, &err), EINVAL);
    qv_file_close(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_projected_splits),
        cmocka_unit_test(test_no_column_and_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
