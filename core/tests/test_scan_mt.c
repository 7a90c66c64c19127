/* Scan stream lifecycle under ThreadSanitizer: release at every point,
 * slow and fast consumers, worker errors at every row group, allocation
 * failures at every step. No leak, no hang, no lost error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_internal.h"
#include "quiver/scan.h"
#include "memory/memory_testing.h"
#include "fx_file.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 12000
#define RG 2048

static struct fx_file fx;

static int setup(void **state) {
    (void)state;
    fx_file_open(&fx, "scan_mt.qvr", ROWS, RG);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    fx_file_close(&fx);
    return 0;
}

static void pool_is_clean(void) { fx_file_pool_is_clean(&fx); }

static void test_release_at_every_point(void **state) {
    (void)state;
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(fx.path, NULL, fx.res, &rd, NULL), 0);
    int threads[] = {1, 2, 4};
    for (int t = 0; t < 3; t++)
        for (int stop = 0; stop <= ROWS / 1000 + 1; stop++) {
            struct qv_scan_options o = {.batch_rows = 1000, .threads = threads[t],
                                        .prefetch = 1 + stop % 3, .filter = stop % 2 ? "v > 20" : NULL};
            struct ArrowArrayStream st;
            assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
            struct ArrowArray kept[16];
            int nk = 0;
            for (int i = 0; i < stop; i++) {
                struct ArrowArray b;
                assert_int_equal(st.get_next(&st, &b), 0);
                if (!b.release) break;
                if (nk < 16) kept[nk++] = b;
                else b.release(&b);
            }
            st.release(&st); /* cancels and joins */
            for (int i = 0; i < nk; i++) {
                assert_true(kept[i].length > 0); /* still readable after release */
                kept[i].release(&kept[i]);
            }
            pool_is_clean();
        }
    qv_reader_close(rd);
}

static void nap_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void test_slow_and_fast_consumers(void **state) {
    (void)state;
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(fx.path, NULL, fx.res, &rd, NULL), 0);
    for (int slow = 0; slow < 2; slow++) {
        struct qv_scan_options o = {.batch_rows = 700, .threads = 4, .prefetch = 2};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        int64_t rows = 0, next = 0;
        for (;;) {
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), 0);
            if (!b.release) break;
            const int64_t *id = b.children[0]->buffers[1];
            assert_int_equal(id[0], next);
            next += b.length;
            rows += b.length;
            if (slow) nap_us(2000);
            b.release(&b);
        }
        assert_int_equal(rows, ROWS);
        struct qv_scan_stats ss;
        qv_scan_get_stats(&st, &ss);
        assert_true(ss.max_queued <= 2);
        st.release(&st);
        pool_is_clean();
    }
    qv_reader_close(rd);
}

/* Corrupts one byte inside row group g's first segment with checksums on,
 * and expects the error from get_next, naming the row group. */
static void test_worker_errors_every_row_group(void **state) {
    (void)state;
    uint8_t *copy = malloc(fx.size);
    struct qv_reader *clean;
    assert_int_equal(qv_reader_open(fx.path, NULL, fx.res, &clean, NULL), 0);
    for (int64_t g = 0; g < qv_reader_num_row_groups(clean); g++) {
        for (int32_t node = 0; node < qv_reader_num_nodes(clean); node++) {
            struct qv_segment_info si;
            if (qv_reader_segment_info(clean, g, node, 0, &si, NULL)) continue;
            memcpy(copy, fx.bytes, fx.size);
            copy[si.offset + si.length / 2] ^= 0x5a;
            struct qv_source src;
            assert_int_equal(qv_source_from_memory(copy, fx.size, "bad.qvr", &src, NULL), 0);
            struct qv_reader *rd;
            assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &rd, NULL), 0);
            struct qv_scan_options o = {.batch_rows = 1000, .threads = 1 + (int)(node % 3)};
            struct ArrowArrayStream st;
            assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
            int rc = 0;
            for (;;) {
                struct ArrowArray b;
                rc = st.get_next(&st, &b);
                if (rc || !b.release) break;
                b.release(&b);
            }
            assert_int_equal(rc, EIO);
            char want[64];
            snprintf(want, sizeof want, "row group %lld", (long long)g);
            assert_non_null(strstr(st.get_last_error(&st), want));
            assert_non_null(strstr(st.get_last_error(&st), "checksum"));
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), EIO); /* the error stays */
            st.release(&st);
            qv_reader_close(rd);
            pool_is_clean();
            break; /* one node per row group keeps the test quick */
        }
    }
    qv_reader_close(clean);
    free(copy);
}

static void test_allocation_failures_during_scan(void **state) {
    (void)state;
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(fx.path, NULL, fx.res, &rd, NULL), 0);
    int ok = 0;
    for (uint64_t n = 1; n < 400 && !ok; n += 1 + n / 16) {
        qv_pool_inject_alloc_failure(fx.pool, n);
        struct qv_scan_options o = {.batch_rows = 3000, .threads = 2, .filter = "v < 50"};
        struct ArrowArrayStream st;
        struct qv_error err;
        int rc = qv_scan_open(rd, &o, fx.res, &st, &err);
        if (rc) {
            if (rc != ENOMEM) fail_msg("open at %llu: %d %s", (unsigned long long)n, rc, err.message);
            continue;
        }
        for (;;) {
            struct ArrowArray b;
            rc = st.get_next(&st, &b);
            if (rc || !b.release) break;
            b.release(&b);
        }
        if (rc && rc != ENOMEM) fail_msg("next at %llu: %d %s", (unsigned long long)n, rc, st.get_last_error(&st));
        if (!rc) ok = 1;
        st.release(&st);
        qv_pool_inject_alloc_failure(fx.pool, 0);
        pool_is_clean();
    }
    qv_pool_inject_alloc_failure(fx.pool, 0);
    qv_reader_close(rd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_release_at_every_point),
        cmocka_unit_test(test_slow_and_fast_consumers),
        cmocka_unit_test(test_worker_errors_every_row_group),
        cmocka_unit_test(test_allocation_failures_during_scan),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
