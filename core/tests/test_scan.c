/* The scan: projection, row ranges, takes, filters with pruning, splits,
 * memory limits and worker errors, in every threading mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/scan.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 20000
#define RG 4096

static struct qv_pool *pool;
static struct qv_reservation *res;
static struct qv_reader *rd;
static char path[512];

static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "scan.qvr");
    assert_int_equal(fx_write(path, ROWS, RG, res), 0);
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
    assert_int_equal(st.reserved, 0); /* every scan reservation is gone */
    qv_pool_destroy(pool);
    return 0;
}

/* Collects the `id` column (column 0 of the projection) of every batch;
 * checks v and s against the fixture where projected. Returns row count. */
static int64_t drain(struct ArrowArrayStream *st, int64_t *ids, int64_t cap, int with_vs) {
    int64_t n = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) fail_msg("get_next: %d %s", rc, st->get_last_error(st));
        if (!b.release) break;
        const int64_t *id = b.children[0]->buffers[1];
        for (int64_t i = 0; i < b.length; i++) {
            int64_t row = id[b.children[0]->offset + i];
            if (n < cap) ids[n] = row;
            n++;
            if (with_vs) {
                const struct ArrowArray *v = b.children[1];
                int valid = !v->buffers[0] || qv_bit_get(v->buffers[0], v->offset + i);
                assert_int_equal(valid, !fx_v_null(row));
                if (valid) assert_int_equal(((const int32_t *)v->buffers[1])[v->offset + i], fx_v(row));
            }
        }
        b.release(&b);
    }
    return n;
}

static void test_full_scan_all_modes(void **state) {
    (void)state;
    static int64_t ids[ROWS];
    int modes[] = {QV_SCAN_SYNC, 1, 2, 4};
    for (size_t m = 0; m < 4; m++)
        for (int prefetch = 1; prefetch <= 3; prefetch += 2) {
            struct qv_scan_options o = {.threads = modes[m], .prefetch = prefetch, .batch_rows = 3000};
            struct ArrowArrayStream st;
            struct qv_error err;
            assert_int_equal(qv_scan_open(rd, &o, res, &st, &err), 0);
            struct ArrowSchema sc;
            assert_int_equal(st.get_schema(&st, &sc), 0);
            assert_int_equal(sc.n_children, 5);
            sc.release(&sc);
            assert_int_equal(drain(&st, ids, ROWS, 1), ROWS);
            for (int64_t i = 0; i < ROWS; i++) assert_int_equal(ids[i], i); /* in file order */
            struct qv_scan_stats ss;
            assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
            assert_true(ss.max_queued <= prefetch);
            assert_int_equal(ss.rows_output, ROWS);
            st.release(&st);
        }
}

static void test_projection_range_take(void **state) {
    (void)state;
    static int64_t ids[ROWS];
    int32_t cols[] = {0, 1};
    struct qv_scan_options o = {.columns = cols, .n_columns = 2, .row_begin = 4000,
                                .row_end = 9001, .threads = 2};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
    assert_int_equal(drain(&st, ids, ROWS, 1), 5001);
    assert_int_equal(ids[0], 4000);
    assert_int_equal(ids[5000], 9000);
    st.release(&st);

    int64_t take[] = {0, 5, 4095, 4096, 12345, 19999};
    struct qv_scan_options t = {.columns = cols, .n_columns = 2, .take = take, .n_take = 6,
                                .threads = QV_SCAN_SYNC};
    assert_int_equal(qv_scan_open(rd, &t, res, &st, NULL), 0);
    assert_int_equal(drain(&st, ids, ROWS, 1), 6);
    for (int i = 0; i < 6; i++) assert_int_equal(ids[i], take[i]);
    st.release(&st);

    int64_t bad[] = {3, 2};
    t.take = bad;
    t.n_take = 2;
    struct qv_error err;
    assert_int_equal(qv_scan_open(rd, &t, res, &st, &err), EINVAL);
    assert_null(st.release);
    /* Negative counts are refused, not read as defaults. */
    t.take = take;
    t.n_take = -1;
    assert_int_equal(qv_scan_open(rd, &t, res, &st, &err), EINVAL);
    assert_null(st.release);
    assert_int_equal(err.kind, QV_ERROR_INVALID_ARGUMENT);
    struct qv_scan_options neg[] = {{.batch_rows = -5}, {.max_rows = -1}, {.prefetch = -2},
                                    {.threads = -7}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(qv_scan_open(rd, &neg[i], res, &st, &err), EINVAL);
        assert_null(st.release);
        assert_non_null(strstr(err.message, "must not be negative"));
    }
    /* A prefetch depth beyond the maximum is refused by name (INT_MAX once
     * failed as a 160 GB allocation of the queue, naming no option). */
    struct qv_scan_options deep = {.prefetch = INT_MAX, .threads = 2};
    assert_int_equal(qv_scan_open(rd, &deep, res, &st, &err), EINVAL);
    assert_null(st.release);
    assert_int_equal(err.kind, QV_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "prefetch 2147483647"));
    deep.prefetch = QV_SCAN_MAX_PREFETCH;
    assert_int_equal(qv_scan_open(rd, &deep, res, &st, &err), 0);
    st.release(&st);
    struct qv_scan_options lim = {.max_rows = 7, .threads = 2};
    assert_int_equal(qv_scan_open(rd, &lim, res, &st, NULL), 0);
    assert_int_equal(drain(&st, ids, ROWS, 1), 7);
    st.release(&st);
}

static int64_t expect_count(int (*pred)(int64_t)) {
    int64_t n = 0;
    for (int64_t i = 0; i < ROWS; i++) n += pred(i);
    return n;
}
static int p1(int64_t i) { return i >= 15000; }
static int p2(int64_t i) { return !fx_v_null(i) && fx_v(i) < 10 && i < 5000; }
static int p3(int64_t i) { return fx_v_null(i); }

static void check_filter(const char *filter, int (*pred)(int64_t), int64_t min_pruned) {
    static int64_t ids[ROWS];
    int32_t cols[] = {0, 1};
    int modes[] = {QV_SCAN_SYNC, 2};
    for (int m = 0; m < 2; m++) {
        struct qv_scan_options o = {.columns = cols, .n_columns = 2, .filter = filter,
                                    .threads = modes[m], .batch_rows = 1500};
        struct ArrowArrayStream st;
        struct qv_error err;
        int rc = qv_scan_open(rd, &o, res, &st, &err);
        if (rc) fail_msg("%s: %s", filter, err.message);
        int64_t n = drain(&st, ids, ROWS, 1);
        assert_int_equal(n, expect_count(pred));
        for (int64_t i = 0; i < n; i++) assert_true(pred(ids[i]));
        struct qv_scan_stats ss;
        qv_scan_get_stats(&st, &ss);
        assert_true(ss.row_groups_pruned >= min_pruned);
        st.release(&st);
    }
}

/* Takes and filters of a list column (tags: row i holds i, i + 1, ...
 * i % 3 of them). Rows r, r + 3, r + 4 make the list reader ask for the
 * offsets at {r, r+1, r+3, r+4, r+4, r+5}: sorted, with a duplicate making
 * up for a gap, which the decoder once took for a contiguous run, so row
 * r + 3 came out with row r + 2's elements. */
static void check_tags(struct ArrowArrayStream *st, const int64_t *want, int64_t n) {
    int64_t seen = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) fail_msg("get_next: %d %s", rc, st->get_last_error(st));
        if (!b.release) break;
        const struct ArrowArray *id = b.children[0], *tags = b.children[1];
        const struct ArrowArray *item = tags->children[0];
        const int32_t *off = tags->buffers[1];
        for (int64_t i = 0; i < b.length; i++, seen++) {
            int64_t row = ((const int64_t *)id->buffers[1])[id->offset + i];
            assert_true(seen < n);
            assert_int_equal(row, want[seen]);
            int64_t lo = off[tags->offset + i], hi = off[tags->offset + i + 1];
            assert_int_equal(hi - lo, row % 3);
            for (int64_t k = lo; k < hi; k++)
                assert_int_equal(((const int64_t *)item->buffers[1])[item->offset + k], row + (k - lo));
        }
        b.release(&b);
    }
    assert_int_equal(seen, n);
}

static void test_take_and_filter_lists(void **state) {
    (void)state;
    int32_t cols[] = {0, 4};
    static const int64_t rows[] = {0, 3, 4, 10, 12, 13, 4095, 4096, 4099, 4100, 19990, 19993, 19994};
    const int64_t n = (int64_t)(sizeof rows / sizeof rows[0]);
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    for (int threads = QV_SCAN_SYNC; threads <= 2; threads += 3) {
        struct qv_scan_options t = {.columns = cols, .n_columns = 2, .take = rows, .n_take = n,
                                    .threads = threads};
        if (qv_scan_open(rd, &t, res, &st, &err)) fail_msg("open: %s", err.message);
        check_tags(&st, rows, n);
        st.release(&st);
    }
    static const int64_t frows[] = {0, 3, 4, 10, 12, 13};
    struct qv_scan_options f = {.columns = cols, .n_columns = 2, .threads = QV_SCAN_SYNC,
                                .filter = "id IN (0, 3, 4, 10, 12, 13)"};
    if (qv_scan_open(rd, &f, res, &st, &err)) fail_msg("open: %s", err.message);
    check_tags(&st, frows, 6);
    st.release(&st);
}

static void test_filters_and_pruning(void **state) {
    (void)state;
    check_filter("id >= 15000", p1, 3);          /* row groups 0..2 end before 15000 */
    check_filter("v < 10 AND id < 5000", p2, 3);
    check_filter("v IS NULL", p3, 0);
    struct qv_scan_options o = {.filter = "id >", .threads = 1};
    struct ArrowArrayStream st;
    struct qv_error err;
    assert_int_equal(qv_scan_open(rd, &o, res, &st, &err), EINVAL);
    assert_non_null(strstr(err.message, "position"));
    o.filter = "nosuch = 1";
    assert_int_equal(qv_scan_open(rd, &o, res, &st, &err), EINVAL);
    assert_non_null(strstr(err.message, "nosuch"));
}

static void test_splits(void **state) {
    (void)state;
    int64_t bounds[16], n;
    assert_int_equal(qv_scan_plan_splits(rd, 1, bounds, 16, &n, NULL), 0);
    assert_int_equal(n, qv_reader_num_row_groups(rd));
    assert_int_equal(qv_scan_plan_splits(rd, UINT64_MAX, bounds, 16, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(bounds[1], qv_reader_num_row_groups(rd));
    /* Scanning every split gives every row once. */
    assert_int_equal(qv_scan_plan_splits(rd, qv_reader_row_group_bytes(rd, 0) * 2, bounds, 16, &n, NULL), 0);
    int64_t total = 0;
    static int64_t ids[ROWS];
    for (int64_t k = 0; k < n; k++) {
        struct qv_scan_options o = {.row_group_begin = bounds[k], .row_group_end = bounds[k + 1]};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
        total += drain(&st, ids, ROWS, 0);
        st.release(&st);
    }
    assert_int_equal(total, ROWS);
    assert_int_equal(qv_scan_plan_splits(rd, 1, bounds, 2, &n, NULL), ENOSPC);
}

static void test_memory_limits(void **state) {
    (void)state;
    /* A budget below the file's decoded size: streaming keeps within it. */
    struct qv_pool *small;
    struct qv_pool_options po = {.name = "small", .limit = 2u << 20, .block_size = 64 * 1024};
    assert_int_equal(qv_pool_create(&po, &small, NULL), 0);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(small, NULL, &r, NULL), 0);
    struct qv_scan_options o = {.batch_rows = 2048, .threads = 2};
    struct ArrowArrayStream st;
    static int64_t ids[ROWS];
    assert_int_equal(qv_scan_open(rd, &o, r, &st, NULL), 0);
    assert_int_equal(drain(&st, ids, ROWS, 1), ROWS);
    st.release(&st);
    qv_reservation_destroy(r);
    qv_pool_destroy(small);
    /* A budget too small for one batch: the pool's ENOMEM message. */
    struct qv_pool_options tiny = {.name = "tiny", .limit = 48 * 1024, .block_size = 4096};
    assert_int_equal(qv_pool_create(&tiny, &small, NULL), 0);
    assert_int_equal(qv_reservation_create(small, NULL, &r, NULL), 0);
    struct qv_error err;
    int rc = qv_scan_open(rd, &o, r, &st, &err);
    if (rc == 0) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        assert_int_equal(rc, ENOMEM);
        assert_non_null(strstr(st.get_last_error(&st), "pool 'tiny'"));
        assert_int_equal(st.get_next(&st, &b), ENOMEM); /* sticky */
        st.release(&st);
    } else {
        assert_int_equal(rc, ENOMEM);
        assert_non_null(strstr(err.message, "pool 'tiny'"));
    }
    qv_reservation_destroy(r);
    qv_pool_destroy(small);
}

static void test_batches_outlive_stream(void **state) {
    (void)state;
    struct qv_scan_options o = {.batch_rows = 5000, .threads = 2, .prefetch = 2};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
    struct ArrowArray b[2];
    struct ArrowSchema sc;
    assert_int_equal(st.get_schema(&st, &sc), 0);
    assert_int_equal(st.get_next(&st, &b[0]), 0);
    assert_int_equal(st.get_next(&st, &b[1]), 0);
    st.release(&st);
    assert_string_equal(sc.children[0]->name, "id"); /* the schema outlives the stream too */
    sc.release(&sc);
    int64_t first = qv_reader_row_group_rows(rd, 0); /* a batch never spans row groups */
    assert_int_equal(((const int64_t *)b[1].children[0]->buffers[1])[0], first);
    /* A column moved out of a batch lives on its own. */
    struct ArrowArray col = {0};
    assert_int_equal(qv_arrow_array_move(&col, b[0].children[2], NULL), 0);
    b[0].release(&b[0]);
    assert_int_equal(col.length, first);
    col.release(&col);
    /* So does a grandchild (the items of tags) moved out of its column:
     * its column's reservation lives until the last node of the column is
     * released (it was destroyed with the column, under the moved items). */
    struct ArrowArray items = {0};
    assert_int_equal(qv_arrow_array_move(&items, b[1].children[4]->children[0], NULL), 0);
    b[1].release(&b[1]);
    /* The batch starts at row `first`; row i holds i % 3 items from i on,
     * so the first item is the first row of the batch not divisible by 3. */
    assert_true(items.length > 0);
    int64_t row = first;
    while (row % 3 == 0) row++;
    assert_int_equal(((const int64_t *)items.buffers[1])[items.offset], row);
    items.release(&items);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_scan_all_modes),
        cmocka_unit_test(test_projection_range_take),
        cmocka_unit_test(test_take_and_filter_lists),
        cmocka_unit_test(test_filters_and_pruning),
        cmocka_unit_test(test_splits),
        cmocka_unit_test(test_memory_limits),
        cmocka_unit_test(test_batches_outlive_stream),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
