/* The scan's scheduler (issue 14, item 3): workers take (batch, column)
 * tasks across consecutive batches, with no barrier at the end of a batch.
 * Checked here under every mix of workers, prefetch and batch size: batches
 * arrive in file order with the right rows; slow and fast consumers; the
 * stream released at every point; an error in one task (a corrupt segment of
 * column c in row group g) surfaces where that batch would have been handed
 * out, naming file, column and row group, after every earlier batch arrived
 * intact; cancellation; max_rows; takes; small reads without threads. This
 * file runs under ThreadSanitizer (label "concurrency"); every test is under
 * the deadline set in setup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/thread.h"
#include "canceller.h"
#include "quiver/scan.h"
#include "fx_file.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 12000
#define RG 2048

static struct fx_file fx;
static struct qv_reader *rd;

static int setup(void **state) {
    (void)state;
    alarm(600); /* a hang fails the test instead of stalling CI */
    fx_file_open(&fx, "scan_sched_mt.qvr", ROWS, RG);
    assert_int_equal(qv_reader_open(fx.path, NULL, fx.res, &rd, NULL), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    qv_reader_close(rd);
    fx_file_close(&fx);
    alarm(0);
    return 0;
}

static void pool_is_clean(void) { fx_file_pool_is_clean(&fx); }

static void nap_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t rs = 12345;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* The filter the tests use, evaluated by hand: v > 20 (NULL is not TRUE). */
static int passes(int64_t i) { return !fx_v_null(i) && fx_v(i) > 20; }

/* Checks one batch projected as (id, v, s): ids are the expected rows in
 * order (*next: the next candidate row; `filtered`: skip rows that fail),
 * and v and s match the fixture for each. Returns the rows checked. */
static int64_t check_batch(const struct ArrowArray *b, int64_t *next, int filtered,
                           const int64_t *take, int64_t n_take) {
    assert_int_equal(b->n_children, 3);
    const int64_t *id = b->children[0]->buffers[1];
    const struct ArrowArray *v = b->children[1];
    const int32_t *vv = v->buffers[1];
    const uint8_t *vvalid = v->buffers[0];
    const struct ArrowArray *sa = b->children[2];
    const int32_t *soff = sa->buffers[1];
    const char *sdata = sa->buffers[2];
    for (int64_t r = 0; r < b->length; r++) {
        int64_t want;
        for (;;) {
            want = take ? (*next < n_take ? take[*next] : -1) : *next;
            assert_true(want >= 0 && want < ROWS);
            if (!filtered || passes(want)) break;
            (*next)++;
        }
        (*next)++;
        assert_int_equal(id[r + b->children[0]->offset], want);
        int64_t vi = r + v->offset;
        int valid = !vvalid || (vvalid[vi / 8] >> (vi % 8)) & 1;
        assert_int_equal(valid, !fx_v_null(want));
        if (valid) {
            assert_int_equal(vv[vi], fx_v(want));
            char s[16];
            int len = snprintf(s, sizeof s, "s%d", fx_v(want));
            int64_t si = r + sa->offset;
            assert_int_equal(soff[si + 1] - soff[si], len);
            assert_memory_equal(sdata + soff[si], s, (size_t)len);
        }
    }
    return b->length;
}

static int64_t expected_rows(int filtered, const int64_t *take, int64_t n_take, int64_t max_rows) {
    int64_t n = 0, m = take ? n_take : ROWS;
    for (int64_t i = 0; i < m; i++) n += !filtered || passes(take ? take[i] : i);
    return max_rows && n > max_rows ? max_rows : n;
}

static const int32_t proj3[] = {0, 1, 2};

/* Drains a scan of (id, v, s), checking every batch; a consumer that naps
 * up to `nap` microseconds per batch. Returns the rows. */
static int64_t drain_checked(struct ArrowArrayStream *st, int filtered, const int64_t *take,
                             int64_t n_take, long nap) {
    int64_t next = 0, rows = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) fail_msg("get_next: %d %s", rc, st->get_last_error(st));
        if (!b.release) break;
        assert_true(b.length > 0); /* an empty batch is never handed out */
        rows += check_batch(&b, &next, filtered, take, n_take);
        if (nap) nap_us((long)(rnd() % (uint64_t)nap));
        b.release(&b);
    }
    return rows;
}

static void test_order_and_rows_every_mix(void **state) {
    (void)state;
    int threads[] = {QV_SCAN_SYNC, 1, 2, 3, 4};
    int64_t batch_rows[] = {333, 1000, 2048, 5000};
    for (int t = 0; t < 5; t++)
        for (int p = 1; p <= 3; p++)
            for (int br = 0; br < 4; br++)
                for (int filtered = 0; filtered < 2; filtered++) {
                    struct qv_scan_options o = {.columns = proj3, .n_columns = 3,
                                                .threads = threads[t], .prefetch = p,
                                                .batch_rows = batch_rows[br],
                                                .filter = filtered ? "v > 20" : NULL};
                    struct ArrowArrayStream st;
                    struct qv_error err;
                    assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, &err), 0);
                    int64_t rows = drain_checked(&st, filtered, NULL, 0, 0);
                    assert_int_equal(rows, expected_rows(filtered, NULL, 0, 0));
                    struct qv_scan_stats ss;
                    assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
                    assert_true(ss.max_queued <= p);
                    assert_int_equal(ss.rows_output, rows);
                    assert_int_equal(ss.rows_decoded, ROWS);
                    if (filtered) assert_int_equal(ss.rows_filtered + ss.rows_output, ROWS);
                    assert_int_equal(ss.threads, threads[t] < 0 ? 0 : threads[t]);
                    struct ArrowArray b;
                    assert_int_equal(st.get_next(&st, &b), 0); /* the end stays the end */
                    assert_null(b.release);
                    st.release(&st);
                    pool_is_clean();
                }
}

static void test_slow_and_fast_consumers(void **state) {
    (void)state;
    for (int slow = 0; slow < 3; slow++)
        for (int threads = 2; threads <= 4; threads += 2)
            for (int filtered = 0; filtered < 2; filtered++) {
                struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .threads = threads,
                                            .prefetch = 1 + slow, .batch_rows = 700,
                                            .filter = filtered ? "v > 20" : NULL};
                struct ArrowArrayStream st;
                assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
                long nap = slow == 0 ? 0 : slow == 1 ? 300 : 3000;
                assert_int_equal(drain_checked(&st, filtered, NULL, 0, nap),
                                 expected_rows(filtered, NULL, 0, 0));
                struct qv_scan_stats ss;
                qv_scan_get_stats(&st, &ss);
                assert_true(ss.max_queued <= 1 + slow);
                st.release(&st);
                pool_is_clean();
            }
}

/* Releases after 0, 1, ..., all batches, right away or after a nap of up to
 * 2 ms so that workers are caught mid-batch (a filter, a column, an
 * assembly), with batches kept past the release. */
static void test_release_at_every_point(void **state) {
    (void)state;
    int threads[] = {1, 2, 4};
    for (int t = 0; t < 3; t++)
        for (int stop = 0; stop <= ROWS / 900 + 2; stop++)
            for (int mid = 0; mid < 2; mid++) {
                struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 900,
                                            .threads = threads[t], .prefetch = 1 + stop % 3,
                                            .filter = stop % 2 ? "v > 20" : NULL,
                                            .max_rows = stop % 4 == 3 ? 5000 : 0};
                struct ArrowArrayStream st;
                assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
                struct ArrowArray kept[32];
                int nk = 0;
                int64_t next = 0;
                for (int i = 0; i < stop; i++) {
                    struct ArrowArray b;
                    assert_int_equal(st.get_next(&st, &b), 0);
                    if (!b.release) break;
                    check_batch(&b, &next, stop % 2, NULL, 0);
                    kept[nk++] = b;
                }
                if (mid) nap_us((long)(rnd() % 2000));
                st.release(&st); /* cancels and joins */
                for (int i = 0; i < nk; i++) {
                    assert_true(kept[i].length > 0); /* still readable after release */
                    kept[i].release(&kept[i]);
                }
                pool_is_clean();
            }
}

/* A corrupt segment in column c of row group g, for every (c, g): the scan
 * hands out exactly the rows of the row groups before g (filtered or not),
 * in order and intact, then fails with EIO naming the file, the column and
 * the row group, and keeps failing. */
static void test_error_per_task(void **state) {
    (void)state;
    uint8_t *copy = malloc(fx.size);
    assert_non_null(copy);
    int32_t ncol = (int32_t)qv_reader_schema(rd)->root.n_children;
    int64_t nrg = qv_reader_num_row_groups(rd);
    int config = 0;
    for (int64_t g = 0; g < nrg; g++)
        for (int32_t c = 0; c < ncol; c++) {
            int32_t node = qv_reader_column_node(rd, c);
            struct qv_segment_info si;
            if (qv_reader_segment_info(rd, g, node, 0, &si, NULL) || si.length < 2) continue;
            memcpy(copy, fx.bytes, fx.size);
            copy[si.offset + si.length / 2] ^= 0x5a;
            struct qv_source src;
            assert_int_equal(qv_source_from_memory(copy, fx.size, "bad.qvr", &src, NULL), 0);
            struct qv_reader *bad;
            assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &bad, NULL), 0);
            int filtered = config % 2, prefetch = 1 + config % 3;
            config++;
            /* Every column is read: v by the filter, the others projected.
             * Checksums may cover parts of a segment, so the error may come
             * at a later batch of row group g than its first: the reference
             * is the synchronous scan, and every mix of workers must stop
             * at the same batch. */
            int threads[] = {QV_SCAN_SYNC, 1, 2, 3, 4};
            int64_t ref = -1;
            for (int t = 0; t < 5; t++) {
            struct qv_scan_options o = {.batch_rows = 700, .threads = threads[t],
                                        .prefetch = prefetch, .filter = filtered ? "v > 20" : NULL};
            struct ArrowArrayStream st;
            assert_int_equal(qv_scan_open(bad, &o, fx.res, &st, NULL), 0);
            int64_t next = 0, rows = 0;
            int rc = 0;
            for (;;) {
                struct ArrowArray b;
                rc = st.get_next(&st, &b);
                if (rc || !b.release) break;
                const int64_t *id = b.children[0]->buffers[1];
                for (int64_t r = 0; r < b.length; r++) {
                    while (filtered && !passes(next)) next++;
                    assert_int_equal(id[r], next);
                    next++;
                }
                rows += b.length;
                b.release(&b);
            }
            if (rc != EIO) fail_msg("column %d, row group %lld: rc %d", c, (long long)g, rc);
            /* All of the row groups before g arrived, none after it. */
            int64_t lo = 0, hi = 0, first = qv_reader_row_group_first_row(bad, g);
            for (int64_t i = 0; i < first + qv_reader_row_group_rows(bad, g); i++) {
                int p = !filtered || passes(i);
                lo += i < first && p;
                hi += p;
            }
            if (ref < 0) ref = rows;
            if (rows != ref || rows < lo || rows >= hi)
                fail_msg("column %d, row group %lld, filtered %d, threads %d: %lld rows before the "
                         "error; synchronous %lld, row groups before it %lld, with it %lld: %s", c,
                         (long long)g, filtered, threads[t], (long long)rows, (long long)ref,
                         (long long)lo, (long long)hi, st.get_last_error(&st));
            const char *msg = st.get_last_error(&st);
            char rgs[64], col[160];
            snprintf(rgs, sizeof rgs, "row group %lld", (long long)g);
            qv_reader_node_path(rd, node, col, sizeof col);
            if (!strstr(msg, rgs) || !strstr(msg, col) || !strstr(msg, "bad.qvr"))
                fail_msg("column %s, %s: message '%s'", col, rgs, msg);
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), EIO); /* the error stays */
            assert_null(b.release);
            st.release(&st);
            pool_is_clean();
            }
            qv_reader_close(bad);
        }
    free(copy);
}

/* Cancelled from another thread at random points: the consumer sees whole,
 * ordered batches and then ECANCELED; nothing leaks or hangs. */
static void test_cancel_at_random_points(void **state) {
    (void)state;
    for (int i = 0; i < 40; i++) {
        struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 500,
                                    .threads = 2 + i % 3, .prefetch = 1 + i % 2,
                                    .filter = i % 2 ? "v > 20" : NULL};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        struct canceller c = {.st = &st, .after_us = (long)(rnd() % 3000)};
        qv_thread th;
        assert_int_equal(qv_thread_create(&th, cancel_main, &c), 0);
        int64_t next = 0;
        int rc;
        for (;;) {
            struct ArrowArray b;
            rc = st.get_next(&st, &b);
            if (rc || !b.release) break;
            check_batch(&b, &next, i % 2, NULL, 0);
            b.release(&b);
            nap_us(100);
        }
        qv_thread_join(th);
        assert_true(rc == 0 || rc == ECANCELED);
        if (rc == ECANCELED) {
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), ECANCELED);
        }
        st.release(&st);
        pool_is_clean();
    }
}

/* max_rows counts rows in file order, after the filter, whatever the
 * workers do: exactly the first max_rows rows. */
static void test_max_rows(void **state) {
    (void)state;
    int64_t limits[] = {1, 699, 700, 701, 5555, ROWS - 1, ROWS, ROWS + 5};
    for (int l = 0; l < 8; l++)
        for (int threads = 1; threads <= 4; threads++)
            for (int filtered = 0; filtered < 2; filtered++) {
                struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 700,
                                            .threads = threads, .prefetch = 1 + l % 3,
                                            .max_rows = limits[l],
                                            .filter = filtered ? "v > 20" : NULL};
                struct ArrowArrayStream st;
                assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
                assert_int_equal(drain_checked(&st, filtered, NULL, 0, 0),
                                 expected_rows(filtered, NULL, 0, limits[l]));
                st.release(&st);
                pool_is_clean();
            }
}

/* Takes: rows in increasing order across row groups, filtered or not; a
 * large take runs on the workers, a small one on the consumer's thread. */
static void test_takes(void **state) {
    (void)state;
    static int64_t take[ROWS];
    for (int round = 0; round < 12; round++) {
        int64_t n = 0;
        uint64_t keep = round < 6 ? 2 : 60; /* about half, or about 100 rows */
        for (int64_t i = 0; i < ROWS; i++)
            if (rnd() % keep == 0) take[n++] = i;
        int filtered = round % 2;
        int threads = 1 + round % 4;
        struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .take = take, .n_take = n,
                                    .batch_rows = 400, .threads = threads, .prefetch = 1 + round % 3,
                                    .max_rows = round % 3 == 2 ? n / 3 : 0,
                                    .filter = filtered ? "v > 20" : NULL};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        assert_int_equal(drain_checked(&st, filtered, take, n, 0),
                         expected_rows(filtered, take, n, o.max_rows));
        struct qv_scan_stats ss;
        qv_scan_get_stats(&st, &ss);
        /* Planned work of at most 4096 rows (max_rows counts without a
         * filter) runs without threads. */
        int64_t planned = !filtered && o.max_rows && o.max_rows < n ? o.max_rows : n;
        assert_int_equal(ss.threads, planned <= 4096 ? 0 : threads);
        st.release(&st);
        pool_is_clean();
    }
}

/* Small reads do not start threads, whatever `threads` says: one batch, or
 * few rows; a scan of several batches does. */
static void test_small_reads_without_threads(void **state) {
    (void)state;
    struct {
        int64_t begin, end, batch_rows, max_rows;
        int want_threads;
    } cases[] = {
        {0, 500, 0, 0, 0},          /* one batch */
        {0, 4096, 1000, 0, 0},      /* five batches, few rows */
        {0, 9000, 0, 0, 1},         /* 9000 rows: five row groups, five batches */
        {0, 9000, 1000, 0, 1},      /* nine batches */
        {0, 0, 1000, 100, 0},       /* max_rows without a filter bounds the work */
        {0, 0, 1000, 0, 1},         /* the whole table */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int threads = 0; threads <= 4; threads += 2) {
            struct qv_scan_options o = {.columns = proj3, .n_columns = 3,
                                        .row_begin = cases[i].begin, .row_end = cases[i].end,
                                        .batch_rows = cases[i].batch_rows,
                                        .max_rows = cases[i].max_rows, .threads = threads};
            struct ArrowArrayStream st;
            assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
            int64_t want = (cases[i].end ? cases[i].end : ROWS) - cases[i].begin;
            if (cases[i].max_rows && want > cases[i].max_rows) want = cases[i].max_rows;
            assert_int_equal(drain_checked(&st, 0, NULL, 0, 0), want);
            struct qv_scan_stats ss;
            qv_scan_get_stats(&st, &ss);
            if (!cases[i].want_threads) assert_int_equal(ss.threads, 0);
            else if (threads > 0) assert_int_equal(ss.threads, threads);
            else assert_true(ss.threads >= 1);
            st.release(&st);
            pool_is_clean();
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_rows_every_mix),
        cmocka_unit_test(test_slow_and_fast_consumers),
        cmocka_unit_test(test_release_at_every_point),
        cmocka_unit_test(test_error_per_task),
        cmocka_unit_test(test_cancel_at_random_points),
        cmocka_unit_test(test_max_rows),
        cmocka_unit_test(test_takes),
        cmocka_unit_test(test_small_reads_without_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
