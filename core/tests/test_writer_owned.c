/* qv_writer_write_owned with the encoder on the calling thread
 * (QV_WRITER_INLINE), where every step is deterministic: files identical to
 * the copying path's, many small batches in one row group, batches
 * straddling row groups released after both, refused batches released and
 * the writer still usable, close without finish, a full disk, encoding
 * failures naming file, row group and column, and the small start (the
 * memory of 200 writers holding one row each). The worker thread's cases
 * are in test_writer_owned_mt.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_testing.h"
#include "full_sink.h"
#include "owned_env.h"
#include "quiver/format.h"
#include "random_batch.h"
#include "test_util.h"
#include "tracked_array.h"

enum op_kind { OP_OWNED, OP_COPY, OP_ROWS };
struct op {
    enum op_kind kind;
    int64_t rows;   /* rows generated */
    int64_t slice_at, slice_len; /* slice_len 0: the whole batch */
    uint64_t seed;
};

/* Writes the ops; with `all_copy` every owned write is made a copying one
 * (the reference file). Tracked arrays count in `t`. */
static void write_ops(struct owned_env *e, const char *path, const struct qv_writer_options *o,
                      const struct op *ops, int n, int all_copy, struct tracker *t) {
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e->s, o, e->r, &w, &err), 0);
    for (int i = 0; i < n; i++) {
        const struct op *op = &ops[i];
        if (op->kind == OP_ROWS) {
            uint64_t seed = op->seed;
            assert_int_equal(rb_append_rows(qv_writer_builder(w), op->rows, &seed, &OWNED_RO), 0);
            assert_int_equal(qv_writer_end_rows(w, &err), 0);
            continue;
        }
        struct ArrowArray b, tracked;
        assert_int_equal(rb_batch(e->s, op->rows, op->seed, &OWNED_RO, e->r, &b), 0);
        int64_t at = op->slice_len ? op->slice_at : 0, len = op->slice_len ? op->slice_len : op->rows;
        assert_int_equal(tracker_wrap(t, &b, at, len, &tracked), 0);
        if (op->kind == OP_COPY || all_copy) {
            int rc = qv_writer_write(w, &tracked, &err);
            if (rc) fail_msg("write: %s", err.message);
            tracked.release(&tracked);
        } else {
            int rc = qv_writer_write_owned(w, &tracked, &err);
            if (rc) fail_msg("write_owned: %s", err.message);
            assert_null(tracked.release);
        }
    }
    int rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
}

static int64_t row_groups_of(struct owned_env *e, const char *path, int64_t *rows) {
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    int64_t n = qv_reader_num_row_groups(rd);
    *rows = qv_reader_num_rows(rd);
    qv_reader_close(rd);
    return n;
}

/* Compares the owned path with the copying one for a list of ops. */
static void check_identical(const struct op *ops, int n, int64_t rg_rows, int max_in_flight,
                            int64_t want_rgs, int64_t want_rows) {
    struct owned_env e;
    owned_env_init(&e);
    char pa[512], pb[512];
    tu_path(pa, sizeof pa, "owned_ref.qvr");
    tu_path(pb, sizeof pb, "owned_own.qvr");
    struct qv_writer_options ref = {.row_group_rows = rg_rows, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer_options own = {.row_group_rows = rg_rows, .max_in_flight = max_in_flight};
    struct tracker t;
    tracker_init(&t);
    write_ops(&e, pa, &ref, ops, n, 1, &t);
    write_ops(&e, pb, &own, ops, n, 0, &t);
    assert_int_equal(tracker_live(&t), 0);
    assert_int_equal(atomic_load(&t.double_release), 0);
    owned_assert_same_files(pa, pb);
    int64_t rows;
    assert_int_equal(row_groups_of(&e, pb, &rows), want_rgs);
    assert_int_equal(rows, want_rows);
    unlink(pa);
    unlink(pb);
    owned_env_done(&e);
}

static void test_identical_one_batch_per_row_group(void **state) {
    (void)state;
    /* Each row group is one whole batch: encoded in place. */
    const struct op ops[] = {{OP_OWNED, 1000, 0, 0, 1}, {OP_OWNED, 1000, 0, 0, 2},
                             {OP_OWNED, 1000, 0, 0, 3}, {OP_OWNED, 333, 0, 0, 4}};
    check_identical(ops, 4, 1000, QV_WRITER_INLINE, 4, 3333);
}

static void test_identical_straddling_and_slices(void **state) {
    (void)state;
    /* Batches straddle row groups, some are slices (offset != 0), and the
     * three input paths mix in one row group. */
    const struct op ops[] = {
        {OP_OWNED, 700, 0, 0, 11},  {OP_OWNED, 700, 0, 0, 12},  {OP_COPY, 250, 0, 0, 13},
        {OP_ROWS, 90, 0, 0, 14},    {OP_OWNED, 900, 100, 650, 15}, {OP_OWNED, 1, 0, 0, 16},
        {OP_OWNED, 2500, 0, 0, 17}, {OP_OWNED, 0, 0, 0, 18},   {OP_OWNED, 64, 3, 40, 19},
    };
    int64_t rows = 700 + 700 + 250 + 90 + 650 + 1 + 2500 + 0 + 40;
    check_identical(ops, 9, 1000, QV_WRITER_INLINE, (rows + 999) / 1000, rows);
}

static void test_identical_one_batch_cut_into_row_groups(void **state) {
    (void)state;
    /* A batch longer than a row group: its row groups are slices of it,
     * whose flat columns are encoded from its buffers where they are
     * (put_slice): at row 0, at rows a bitmap byte starts on (a slice of
     * the batch from row 8), and at rows none does (a slice from row 3),
     * where columns with a validity bitmap, and booleans, are joined. */
    const struct op ops[] = {{OP_OWNED, 3000, 0, 0, 31},
                             {OP_OWNED, 2600, 8, 2592, 32},
                             {OP_OWNED, 2100, 3, 2003, 33}};
    int64_t rows = 3000 + 2592 + 2003;
    check_identical(ops, 3, 1000, QV_WRITER_INLINE, (rows + 999) / 1000, rows);
    check_identical(ops, 3, 1000, 2, (rows + 999) / 1000, rows);
}

static void test_many_small_batches_one_row_group(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_small.qvr");
    struct qv_writer_options o = {.row_group_rows = 2000, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
    struct tracker t;
    tracker_init(&t);
    for (int i = 0; i < 100; i++) {
        struct ArrowArray tr;
        owned_tracked_batch(&e, &t, 20, 100 + (uint64_t)i, &tr);
        assert_int_equal(qv_writer_write_owned(w, &tr, &err), 0);
        /* Held, not copied, until the row group is written. */
        if (i < 99) {
            assert_int_equal(tracker_live(&t), i + 1);
            assert_true(qv_writer_buffered_bytes(w) > 0);
        }
    }
    /* The 100th batch filled the row group: written and all released. */
    assert_int_equal(tracker_live(&t), 0);
    assert_int_equal(qv_writer_rows_written(w), 2000);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    for (int i = 0; i < 100; i++) assert_int_equal(tracker_release_count(&t, i), 1);
    int64_t rows;
    assert_int_equal(row_groups_of(&e, path, &rows), 1);
    assert_int_equal(rows, 2000);
    unlink(path);
    owned_env_done(&e);
}

static void test_straddling_batch_released_after_both(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_straddle.qvr");
    struct qv_writer_options o = {.row_group_rows = 1000, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
    struct tracker t;
    tracker_init(&t);
    for (int i = 0; i < 6; i++) {
        struct ArrowArray tr;
        owned_tracked_batch(&e, &t, 700, 200 + (uint64_t)i, &tr);
        assert_int_equal(qv_writer_write_owned(w, &tr, &err), 0);
        /* Batch i (rows 700i..700i+699) is released once the row group
         * holding its last row is written: after call i, batches
         * 0..i-1 have ended in written row groups, except when a row group
         * boundary falls inside batch i-1's successor's range. */
        int64_t written = (700 * (int64_t)(i + 1)) / 1000 * 1000;
        long long want_released = 0;
        for (int j = 0; j <= i; j++)
            if (700 * (int64_t)(j + 1) <= written) want_released++;
        assert_int_equal(atomic_load(&t.released), want_released);
    }
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    assert_int_equal(tracker_live(&t), 0);
    for (int i = 0; i < 6; i++) assert_int_equal(tracker_release_count(&t, i), 1);
    int64_t rows;
    assert_int_equal(row_groups_of(&e, path, &rows), 5);
    assert_int_equal(rows, 4200);
    unlink(path);
    owned_env_done(&e);
}

static void test_refused_batch_released_writer_usable(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_refused.qvr");
    struct qv_writer_options o = {.row_group_rows = 100, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
    struct tracker t;
    tracker_init(&t);
    /* A batch of another schema. */
    static const struct qv_field cols[] = {{.name = "x", .type = QV_TYPE_INT64}};
    const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = cols};
    struct qv_schema *other;
    assert_int_equal(qv_schema_create(&root, e.r, &other, NULL), 0);
    struct ArrowArray b, tr;
    assert_int_equal(rb_batch(other, 10, 1, &OWNED_RO, e.r, &b), 0);
    assert_int_equal(tracker_wrap(&t, &b, 0, 10, &tr), 0);
    assert_int_equal(qv_writer_write_owned(w, &tr, &err), EINVAL);
    assert_null(tr.release);
    assert_non_null(strstr(err.message, "owned_refused.qvr"));
    assert_int_equal(tracker_live(&t), 0);
    /* A released batch and NULL are EINVAL too. */
    assert_int_equal(qv_writer_write_owned(w, &tr, &err), EINVAL);
    assert_int_equal(qv_writer_write_owned(w, NULL, &err), EINVAL);
    /* The writer is not failed: rows still go in. */
    assert_int_equal(rb_batch(e.s, 150, 2, &OWNED_RO, e.r, &b), 0);
    assert_int_equal(tracker_wrap(&t, &b, 0, 150, &tr), 0);
    assert_int_equal(qv_writer_write_owned(w, &tr, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    assert_int_equal(tracker_live(&t), 0);
    int64_t rows;
    assert_int_equal(row_groups_of(&e, path, &rows), 2);
    assert_int_equal(rows, 150);
    unlink(path);
    qv_schema_destroy(other);
    owned_env_done(&e);
}

static void test_close_without_finish_releases_all(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_close.qvr");
    unlink(path);
    struct qv_writer_options o = {.row_group_rows = 1000, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer *w;
    struct qv_error err;
    struct tracker t;
    tracker_init(&t);
    for (int abort_first = 0; abort_first < 2; abort_first++) {
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        for (int i = 0; i < 5; i++) {
            struct ArrowArray tr;
            owned_tracked_batch(&e, &t, 300, 300 + (uint64_t)i, &tr);
            assert_int_equal(qv_writer_write_owned(w, &tr, &err), 0);
        }
        assert_true(tracker_live(&t) > 0);
        if (abort_first) {
            qv_writer_abort(w);
            assert_int_equal(tracker_live(&t), 0);
            struct ArrowArray tr;
            owned_tracked_batch(&e, &t, 3, 9, &tr);
            assert_int_equal(qv_writer_write_owned(w, &tr, &err), ECANCELED);
            assert_null(tr.release);
        }
        qv_writer_close(w);
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(atomic_load(&t.double_release), 0);
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
    }
    owned_env_done(&e);
}

static void run_full_disk(int max_in_flight) {
    struct owned_env e;
    owned_env_init(&e);
    struct full_sink fs;
    struct qv_sink sink;
    full_sink_init(&fs, 20000, &sink);
    struct qv_writer_options o = {.row_group_rows = 500, .max_in_flight = max_in_flight};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open_sink(&sink, e.s, &o, e.r, &w, &err), 0);
    struct tracker t;
    tracker_init(&t);
    int rc = 0;
    for (int i = 0; i < 40 && !rc; i++) {
        struct ArrowArray tr;
        owned_tracked_batch(&e, &t, 250, 400 + (uint64_t)i, &tr);
        rc = qv_writer_write_owned(w, &tr, &err);
        assert_null(tr.release);
    }
    if (!rc) rc = qv_writer_finish(w, &err);
    assert_int_equal(rc, ENOSPC);
    assert_non_null(strstr(err.message, "full"));
    assert_non_null(strstr(err.message, "row group"));
    assert_non_null(strstr(err.message, "column"));
    /* Failed: every later call returns the same error. */
    assert_int_equal(qv_writer_finish(w, &err), ENOSPC);
    qv_writer_close(w);
    assert_int_equal(tracker_live(&t), 0);
    assert_int_equal(atomic_load(&t.double_release), 0);
    owned_env_done(&e);
}

static void test_full_disk(void **state) {
    (void)state;
    run_full_disk(QV_WRITER_INLINE);
}

static int fail_at(void *ctx, int64_t rg, int32_t column) {
    const int64_t *where = ctx;
    return rg == where[0] && column == where[1] ? EIO : 0;
}

static void test_encoding_failure_names_row_group_and_column(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_hook.qvr");
    struct qv_writer_options o = {.row_group_rows = 100, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
    int64_t where[2] = {2, 1};
    qv_writer_set_encode_hook(w, fail_at, where);
    struct tracker t;
    tracker_init(&t);
    int rc = 0, i;
    for (i = 0; i < 10 && !rc; i++) {
        struct ArrowArray tr;
        owned_tracked_batch(&e, &t, 100, 500 + (uint64_t)i, &tr);
        rc = qv_writer_write_owned(w, &tr, &err);
    }
    assert_int_equal(rc, EIO);
    assert_int_equal(i, 3); /* inline: the call that sealed row group 2 */
    assert_non_null(strstr(err.message, "owned_hook.qvr"));
    assert_non_null(strstr(err.message, "row group 2"));
    char col[300];
    snprintf(col, sizeof col, "column '%s'", e.s->root.children[1].name);
    assert_non_null(strstr(err.message, col));
    assert_int_equal(qv_writer_finish(w, &err), EIO);
    qv_writer_close(w);
    assert_int_equal(tracker_live(&t), 0);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    owned_env_done(&e);
}

/* Rows the row builder holds past a row group's size (no end_rows yet), then
 * an owned batch and a copied one: the builder's rows make one row group, in
 * order, and the batches go on from there. */
static void test_row_builder_past_row_group_then_batches(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_rows_past.qvr");
    struct qv_writer_options o = {.row_group_rows = 100, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer *w;
    struct qv_error err;
    struct tracker t;
    tracker_init(&t);
    for (int copy = 0; copy < 2; copy++) {
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        uint64_t seed = 3;
        assert_int_equal(rb_append_rows(qv_writer_builder(w), 150, &seed, &OWNED_RO), 0);
        struct ArrowArray tr;
        owned_tracked_batch(&e, &t, 50, 4, &tr);
        if (copy) {
            assert_int_equal(qv_writer_write(w, &tr, &err), 0);
            tr.release(&tr);
        } else {
            int rc = qv_writer_write_owned(w, &tr, &err);
            if (rc) fail_msg("write_owned: %s", err.message);
        }
        assert_int_equal(qv_writer_rows_written(w), 150);
        assert_int_equal(qv_writer_finish(w, &err), 0);
        qv_writer_close(w);
        struct qv_reader *rd;
        assert_int_equal(qv_reader_open(path, NULL, e.r, &rd, &err), 0);
        assert_int_equal(qv_reader_num_row_groups(rd), 2);
        assert_int_equal(qv_reader_row_group_rows(rd, 0), 150);
        assert_int_equal(qv_reader_row_group_rows(rd, 1), 50);
        qv_reader_close(rd);
    }
    assert_int_equal(tracker_live(&t), 0);
    unlink(path);
    owned_env_done(&e);
}

static void test_bad_max_in_flight(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_bad_opt.qvr");
    struct qv_writer_options o = {.max_in_flight = -2};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), EINVAL);
    assert_non_null(strstr(err.message, "max_in_flight"));
    owned_env_done(&e);
}

/* Small start: a writer holding one row holds a few KiB; after a full row
 * group the builder starts at 64 rows again. */
static void test_small_start(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    enum { WRITERS = 200 };
    struct qv_writer *ws[WRITERS];
    struct qv_error err;
    struct qv_pool_stats before, after;
    qv_pool_get_stats(e.p, &before);
    uint64_t used0 = qv_pool_used(e.p);
    for (int i = 0; i < WRITERS; i++) {
        char path[512], name[64];
        snprintf(name, sizeof name, "owned_small_start_%d.qvr", i);
        tu_path(path, sizeof path, name);
        assert_int_equal(qv_writer_open(path, e.s, NULL, e.r, &ws[i], &err), 0);
        uint64_t seed = (uint64_t)i;
        assert_int_equal(rb_append_rows(qv_writer_builder(ws[i]), 1, &seed, &OWNED_RO), 0);
        assert_int_equal(qv_writer_end_rows(ws[i], &err), 0);
    }
    qv_pool_get_stats(e.p, &after);
    uint64_t used = qv_pool_used(e.p) - used0;
    uint64_t reserved = after.reserved - before.reserved;
    print_message("200 writers of one row each (%d-column schema with nesting): pool used %llu "
                  "bytes (%llu per writer), reserved %llu bytes (%.2f MiB)\n",
                  (int)e.s->root.n_children, (unsigned long long)used,
                  (unsigned long long)(used / WRITERS), (unsigned long long)reserved,
                  (double)reserved / (1 << 20));
    /* A row group's worth would be 131072 rows per column: megabytes per
     * writer. A few KiB per column per writer is the small start. */
    assert_true(reserved / WRITERS < 96 * 1024);
    for (int i = 0; i < WRITERS; i++) qv_writer_close(ws[i]);

    /* After a full row group, the next row starts small again. */
    char path[512];
    tu_path(path, sizeof path, "owned_restart.qvr");
    struct qv_writer_options o = {.row_group_rows = 20000, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer *w;
    assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
    uint64_t seed = 7;
    assert_int_equal(rb_append_rows(qv_writer_builder(w), 1, &seed, &OWNED_RO), 0);
    assert_int_equal(qv_writer_end_rows(w, &err), 0);
    uint64_t one_row = qv_writer_buffered_bytes(w);
    assert_int_equal(rb_append_rows(qv_writer_builder(w), 19999, &seed, &OWNED_RO), 0);
    assert_int_equal(qv_writer_end_rows(w, &err), 0);
    assert_int_equal(qv_writer_rows_written(w), 20000);
    assert_int_equal(rb_append_rows(qv_writer_builder(w), 1, &seed, &OWNED_RO), 0);
    assert_int_equal(qv_writer_end_rows(w, &err), 0);
    print_message("one row buffered: %llu bytes at the start, %llu after a 20000-row row group\n",
                  (unsigned long long)one_row, (unsigned long long)qv_writer_buffered_bytes(w));
    assert_true(qv_writer_buffered_bytes(w) <= 2 * one_row);
    qv_writer_close(w);
    owned_env_done(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_one_batch_per_row_group),
        cmocka_unit_test(test_identical_straddling_and_slices),
        cmocka_unit_test(test_identical_one_batch_cut_into_row_groups),
        cmocka_unit_test(test_many_small_batches_one_row_group),
        cmocka_unit_test(test_straddling_batch_released_after_both),
        cmocka_unit_test(test_refused_batch_released_writer_usable),
        cmocka_unit_test(test_close_without_finish_releases_all),
        cmocka_unit_test(test_full_disk),
        cmocka_unit_test(test_encoding_failure_names_row_group_and_column),
        cmocka_unit_test(test_row_builder_past_row_group_then_batches),
        cmocka_unit_test(test_bad_max_in_flight),
        cmocka_unit_test(test_small_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
