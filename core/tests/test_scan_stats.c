/* The scan's counters rows_filtered and bytes_read (qv_scan_stats), exact
 * with and without workers: filtered plus output rows are the rows the
 * filter evaluated; bytes_read is the sum of the segment lengths of the
 * column chunks the scan loaded, which is also what the source was asked
 * for (a counting source checks it), and it shrinks with fewer projected
 * columns and with row groups pruned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "quiver/scan.h"
#include "scan_fixture.h"
#include "test_util.h"

#define RG 4000
#define NRG 4
#define ROWS (RG * NRG)

static struct qv_pool *pool;
static char path[512];

struct counting {
    struct qv_source inner;
    uint64_t bytes;
};

static int counting_read_at(void *ctx, uint64_t offset, void *buf, size_t len, struct qv_error *err) {
    struct counting *c = ctx;
    __atomic_fetch_add(&c->bytes, (uint64_t)len, __ATOMIC_RELAXED); /* workers read too */
    return c->inner.read_at(c->inner.ctx, offset, buf, len, err);
}

static void counting_close(void *ctx) {
    struct counting *c = ctx;
    qv_source_close(&c->inner);
}

static struct qv_reader *open_counting(struct counting *c, struct qv_reservation *r) {
    memset(c, 0, sizeof *c);
    assert_int_equal(qv_source_open_file(path, &c->inner, NULL), 0);
    struct qv_source src = {.ctx = c, .name = c->inner.name, .size = c->inner.size,
                            .read_at = counting_read_at, .close = counting_close};
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open_source(&src, NULL, r, &rd, NULL), 0);
    assert_int_equal(qv_reader_num_row_groups(rd), NRG);
    c->bytes = 0; /* the footer reads are not the scan's */
    return rd;
}

/* Sum of the segment lengths of every node of top-level column `col` in rg. */
static uint64_t column_bytes(const struct qv_reader *rd, int64_t rg, int32_t col) {
    int32_t first = qv_reader_column_node(rd, col);
    int32_t ncols = (int32_t)qv_reader_schema(rd)->root.n_children;
    int32_t end = col + 1 < ncols ? qv_reader_column_node(rd, col + 1) : qv_reader_num_nodes(rd);
    uint64_t sum = 0;
    for (int32_t node = first; node < end; node++) {
        struct qv_chunk_info ci;
        assert_int_equal(qv_reader_chunk_info(rd, rg, node, &ci, NULL), 0);
        for (int i = 0; i < ci.n_segments; i++) {
            struct qv_segment_info si;
            assert_int_equal(qv_reader_segment_info(rd, rg, node, i, &si, NULL), 0);
            sum += si.length;
        }
    }
    return sum;
}

static int setup(void **state) {
    (void)state;
    tu_path(path, sizeof path, "scan_stats.qvr");
    struct qv_error err;
    if (qv_pool_create(NULL, &pool, &err)) return -1;
    struct qv_reservation *r;
    if (qv_reservation_create(pool, NULL, &r, &err)) return -1;
    int rc = fx_write(path, ROWS, RG, r);
    qv_reservation_destroy(r);
    return rc;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    qv_pool_destroy(pool);
    return 0;
}

/* Runs a scan to its end and returns its statistics. */
static struct qv_scan_stats run(const struct qv_reader *rd, struct qv_scan_options *o,
                                struct qv_reservation *r) {
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    if (qv_scan_open(rd, o, r, &st, &err)) fail_msg("scan: %s", err.message);
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), 0);
        if (!b.release) break;
        rows += b.length;
        b.release(&b);
    }
    struct qv_scan_stats s;
    assert_int_equal(qv_scan_get_stats(&st, &s), 0);
    assert_int_equal(s.rows_output, rows);
    st.release(&st);
    return s;
}

static const int thread_modes[] = {QV_SCAN_SYNC, 3};

static void test_rows_filtered(void **state) {
    (void)state;
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    struct counting c;
    struct qv_reader *rd = open_counting(&c, r);
    for (int t = 0; t < 2; t++) {
        /* v = (i * 37) % 100, NULL where i % 7 == 3: < 30 is TRUE for 30% of
         * the non-null rows; NULL rows are filtered too. */
        struct qv_scan_options o = {.filter = "v < 30", .threads = thread_modes[t], .batch_rows = 1500};
        struct qv_scan_stats s = run(rd, &o, r);
        int64_t want = 0;
        for (int64_t i = 0; i < ROWS; i++) want += !fx_v_null(i) && fx_v(i) < 30;
        assert_int_equal(s.rows_output, want);
        assert_int_equal(s.rows_decoded, ROWS);
        assert_int_equal(s.rows_filtered + s.rows_output, s.rows_decoded);
        assert_int_equal(s.rows_filtered, ROWS - want);
        /* No filter: nothing filtered. */
        struct qv_scan_options all = {.threads = thread_modes[t]};
        s = run(rd, &all, r);
        assert_int_equal(s.rows_filtered, 0);
        assert_int_equal(s.rows_output, ROWS);
        /* A filter that prunes row groups: rows of pruned groups are neither
         * decoded nor filtered. */
        struct qv_scan_options pr = {.filter = "id >= 6000 AND id < 6100 AND v != 0",
                                     .threads = thread_modes[t]};
        s = run(rd, &pr, r);
        assert_int_equal(s.row_groups_pruned, NRG - 1);
        assert_int_equal(s.rows_decoded, RG);
        assert_int_equal(s.rows_filtered + s.rows_output, RG);
        assert_true(s.rows_output > 0 && s.rows_output < 100);
    }
    qv_reader_close(rd);
    qv_reservation_destroy(r);
}

static void test_bytes_read(void **state) {
    (void)state;
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    struct counting c;
    struct qv_reader *rd = open_counting(&c, r);
    int32_t ncols = (int32_t)qv_reader_schema(rd)->root.n_children;
    uint64_t all = 0, id_only = 0, id_rg1 = 0;
    for (int64_t rg = 0; rg < NRG; rg++) {
        for (int32_t col = 0; col < ncols; col++) all += column_bytes(rd, rg, col);
        id_only += column_bytes(rd, rg, 0);
    }
    /* The filter reads through contexts of its own (qv__filter_ctx), so id,
     * filtered and projected, is loaded by both. */
    id_rg1 = 2 * column_bytes(rd, 1, 0) + column_bytes(rd, 1, 1);
    for (int t = 0; t < 2; t++) {
        /* Every column of every row group. */
        struct qv_scan_options o = {.threads = thread_modes[t]};
        c.bytes = 0;
        struct qv_scan_stats s = run(rd, &o, r);
        assert_int_equal(s.bytes_read, all);
        assert_int_equal(c.bytes, all); /* what the source was asked for */
        /* One projected column: its chunks only. */
        int32_t id = 0;
        struct qv_scan_options p = {.columns = &id, .n_columns = 1, .threads = thread_modes[t]};
        c.bytes = 0;
        s = run(rd, &p, r);
        assert_int_equal(s.bytes_read, id_only);
        assert_int_equal(c.bytes, id_only);
        assert_true(id_only < all);
        /* Pruned to row group 1: the filter column v and projected id there. */
        struct qv_scan_options f = {.columns = &id, .n_columns = 1, .threads = thread_modes[t],
                                    .filter = "id >= 4500 AND id < 4600 AND v >= 0"};
        c.bytes = 0;
        s = run(rd, &f, r);
        assert_int_equal(s.row_groups_pruned, NRG - 1);
        assert_int_equal(s.bytes_read, id_rg1);
        assert_int_equal(c.bytes, id_rg1);
        assert_true(id_rg1 < id_only + column_bytes(rd, 1, 0) + column_bytes(rd, 1, 1));
        /* A filter no row passes, which statistics cannot prune (v = 50
         * holds where s is "s50"): the filter columns are loaded in every
         * row group, the projected column never. */
        struct qv_scan_options none = {.columns = &id, .n_columns = 1, .threads = thread_modes[t],
                                       .filter = "v = 50 AND s STARTS WITH 's1'"};
        c.bytes = 0;
        s = run(rd, &none, r);
        assert_int_equal(s.rows_output, 0);
        assert_int_equal(s.row_groups_pruned, 0);
        uint64_t filt = 0;
        for (int64_t rg = 0; rg < NRG; rg++) filt += column_bytes(rd, rg, 1) + column_bytes(rd, rg, 2);
        assert_int_equal(s.bytes_read, filt);
        assert_int_equal(c.bytes, filt);
        assert_true((uint64_t)s.bytes_read < all);
    }
    qv_reader_close(rd);
    qv_reservation_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_filtered),
        cmocka_unit_test(test_bytes_read),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
