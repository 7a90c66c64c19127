/* The filtered scan under hostile concurrency: two threads scanning one
 * reader at once, each with workers; 1 to 8 workers and prefetch 1 to 4
 * with a slow consumer; cancels from another thread and releases after a
 * random number of batches, with the filter's contexts running. The rows
 * of every completed scan are those of a synchronous scan of the same
 * filter; nothing is left charged to the reservation. Run under TSan
 * (label concurrency). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "canceller.h"
#include "quiver/quiver.h"
#include "test_util.h"

#define ROWS 30000

static const struct qv_field cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "a", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
};

static const char *const filters[] = {
    "a > 10 AND s STARTS WITH 'k1'",
    "a BETWEEN 5 AND 60 AND f < 0.5 AND s != 'k3'",
    "(a = 3 OR s = 'k7') AND f IS NOT NULL",
    "a IN (1, 2, 3, NULL) AND NOT (f > 0.9)",
    "s IN ('k10', 'k11') OR a < 0",
};
#define N_FILTERS ((int)(sizeof filters / sizeof *filters))

struct shared {
    struct qv_pool *pool;
    struct qv_reader *rd;
    int64_t *want[N_FILTERS];
    int64_t n_want[N_FILTERS];
};

static struct shared S;

static void make_file(struct qv_reservation *r, char *path, size_t cap) {
    struct qv_field root = {.type = QV_TYPE_STRUCT, .children = cols, .n_children = 4};
    struct qv_schema *schema;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, r, &schema, NULL), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(schema, r, NULL, &b, &err), 0);
    uint64_t x = 7;
    for (int64_t i = 0; i < ROWS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        assert_int_equal(qv_append_int64(qv_builder_column(b, 0), i), 0);
        if ((x >> 60) == 0) assert_int_equal(qv_append_null(qv_builder_column(b, 1)), 0);
        else assert_int_equal(qv_append_int32(qv_builder_column(b, 1), (int32_t)((x >> 20) % 100)), 0);
        char s[8];
        int n = snprintf(s, sizeof s, "k%d", (int)((x >> 30) % 16));
        if ((x >> 58) == 1) assert_int_equal(qv_append_null(qv_builder_column(b, 2)), 0);
        else assert_int_equal(qv_append_string(qv_builder_column(b, 2), s, (size_t)n), 0);
        assert_int_equal(qv_append_float64(qv_builder_column(b, 3), (double)((x >> 40) % 1000) / 1000), 0);
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    tu_path(path, cap, "attack_mt.qvr");
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = 7000};
    assert_int_equal(qv_writer_open(path, schema, &o, r, &w, &err), 0);
    assert_int_equal(qv_writer_write(w, &batch, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(schema);
}

/* Scans filter k; returns the ids into out (may be NULL), the count, or -1
 * when cancelled / stopped early. stop_after >= 0: release after that many
 * batches. cancel_at >= 0: cancel from another thread after that many
 * microseconds (a canceller, canceller.h). */
static int64_t scan(struct qv_reservation *r, int k, int threads, int prefetch, int64_t batch_rows,
                    int slow_us, int64_t stop_after, int64_t cancel_us, int64_t *out) {
    int32_t proj[2] = {0, 2};
    struct qv_scan_options o = {.columns = proj, .n_columns = 2, .filter = filters[k],
                                .threads = threads, .prefetch = prefetch, .batch_rows = batch_rows};
    struct ArrowArrayStream st;
    struct qv_error err;
    int rc = qv_scan_open(S.rd, &o, r, &st, &err);
    if (rc) fail_msg("scan_open %s: %s", filters[k], err.message);
    pthread_t th;
    struct canceller cc = {.st = &st, .after_us = (long)cancel_us};
    if (cancel_us >= 0) assert_int_equal(pthread_create(&th, NULL, cancel_main, &cc), 0);
    int64_t n = 0, batches = 0;
    bool stopped = false;
    for (;;) {
        if (stop_after >= 0 && batches >= stop_after) {
            stopped = true;
            break;
        }
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc == ECANCELED) {
            stopped = true;
            break;
        }
        if (rc) fail_msg("get_next %s: %d %s", filters[k], rc, st.get_last_error(&st));
        if (!b.release) break;
        const int64_t *ids = b.children[0]->buffers[1];
        for (int64_t i = 0; i < b.length; i++) {
            if (out) out[n] = ids[b.children[0]->offset + i];
            n++;
        }
        batches++;
        b.release(&b);
        if (slow_us) usleep((useconds_t)slow_us);
    }
    if (cancel_us >= 0) pthread_join(th, NULL);
    st.release(&st);
    return stopped ? -1 : n;
}

static int setup(void **state) {
    (void)state;
    alarm(1200); /* the deadline of the whole group */
    assert_int_equal(qv_pool_create(NULL, &S.pool, NULL), 0);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(S.pool, NULL, &r, NULL), 0);
    char path[512];
    make_file(r, path, sizeof path);
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, r, &S.rd, &err), 0);
    unlink(path);
    for (int k = 0; k < N_FILTERS; k++) {
        S.want[k] = malloc(ROWS * sizeof(int64_t));
        S.n_want[k] = scan(r, k, QV_SCAN_SYNC, 1, 4096, 0, -1, -1, S.want[k]);
        assert_true(S.n_want[k] > 0 && S.n_want[k] < ROWS);
    }
    *state = r;
    return 0;
}

static int teardown(void **state) {
    struct qv_reservation *r = *state;
    for (int k = 0; k < N_FILTERS; k++) free(S.want[k]);
    qv_reader_close(S.rd);
    assert_int_equal(qv_reservation_used(r), 0);
    qv_reservation_destroy(r);
    qv_pool_destroy(S.pool);
    return 0;
}

static void compare(int k, const int64_t *got, int64_t n, const char *what) {
    if (n != S.n_want[k]) fail_msg("%s, %s: %lld rows, want %lld", what, filters[k], (long long)n, (long long)S.n_want[k]);
    for (int64_t i = 0; i < n; i++)
        if (got[i] != S.want[k][i])
            fail_msg("%s, %s: row %lld is %lld, want %lld", what, filters[k], (long long)i,
                     (long long)got[i], (long long)S.want[k][i]);
}

/* Every worker count and prefetch, a slow consumer on some. */
static void test_threads_prefetch(void **state) {
    (void)state;
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(S.pool, NULL, &r, NULL), 0);
    int64_t *got = malloc(ROWS * sizeof *got);
    for (int t = 1; t <= 8; t++)
        for (int p = 1; p <= 4; p++) {
            int k = (t * 4 + p) % N_FILTERS;
            int64_t n = scan(r, k, t, p, 1000 + 333 * p, (t + p) % 3 == 0 ? 300 : 0, -1, -1, got);
            char what[64];
            snprintf(what, sizeof what, "threads %d prefetch %d", t, p);
            compare(k, got, n, what);
            assert_int_equal(qv_reservation_used(r), 0);
        }
    free(got);
    qv_reservation_destroy(r);
}

/* Releases after 0..n batches and cancels after random delays. */
static void test_release_and_cancel(void **state) {
    (void)state;
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(S.pool, NULL, &r, NULL), 0);
    uint64_t x = 99;
    for (int i = 0; i < 120; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((x >> 33) % N_FILTERS), t = 1 + (int)((x >> 40) % 8), p = 1 + (int)((x >> 44) % 4);
        int64_t stop = (int64_t)((x >> 48) % 6), cancel = i % 2 ? (int64_t)((x >> 20) % 3000) : -1;
        scan(r, k, t, p, 800, (x >> 10) % 2 ? 200 : 0, cancel >= 0 ? -1 : stop, cancel, NULL);
        assert_int_equal(qv_reservation_used(r), 0);
    }
    qv_reservation_destroy(r);
}

/* Two threads scan the same reader at once, each with its own workers. */
struct twin {
    int id;
    int64_t *got;
    int failures;
};
static void *twin_main(void *arg) {
    struct twin *tw = arg;
    struct qv_reservation *r;
    if (qv_reservation_create(S.pool, NULL, &r, NULL)) {
        tw->failures++;
        return NULL;
    }
    for (int i = 0; i < 12; i++) {
        int k = (i + tw->id) % N_FILTERS;
        int64_t n = scan(r, k, 1 + (i + tw->id) % 3, 1 + i % 4, 1500, 0, -1, -1, tw->got);
        if (n != S.n_want[k] || memcmp(tw->got, S.want[k], (size_t)n * 8) != 0) tw->failures++;
    }
    if (qv_reservation_used(r) != 0) tw->failures++;
    qv_reservation_destroy(r);
    return NULL;
}

static void test_two_threads_one_reader(void **state) {
    (void)state;
    struct twin tw[2] = {{0, malloc(ROWS * 8), 0}, {1, malloc(ROWS * 8), 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, twin_main, &tw[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(tw[i].failures, 0);
        free(tw[i].got);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_prefetch),
        cmocka_unit_test(test_release_and_cancel),
        cmocka_unit_test(test_two_threads_one_reader),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
