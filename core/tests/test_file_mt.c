/* The file layer across threads: one qv_file scanned and taken from
 * several threads at once, the handle closed while they run, and batches
 * released on threads other than the one that read them, the last release
 * destroying the file's own pool. Runs under ThreadSanitizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/quiver.h"
#include "base/thread.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 20000
#define RG 4096
#define THREADS 4
#define HELD 64

static char path[512];

struct worker {
    struct qv_file *file; /* a reference of the worker's own */
    int index;
    int64_t rows;
    int rc;
    struct ArrowArray held[HELD];
    int n_held;
};

static void *work(void *arg) {
    struct worker *w = arg;
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    static const char *const cols[] = {"id", "tags"};
    struct qv_file_scan_options o = {.columns = cols, .n_columns = 2,
                                     .scan = {.threads = 2, .batch_rows = 2000}};
    int64_t rows[50];
    for (int i = 0; i < 50; i++) rows[i] = (i * 7919 + w->index * 13) % ROWS;
    w->rc = w->index % 2 ? qv_file_take(w->file, rows, 50, &o, &st, &err)
                         : qv_file_scan(w->file, &o, &st, &err);
    qv_file_close(w->file); /* the stream holds its own reference */
    if (w->rc) return NULL;
    for (;;) {
        struct ArrowArray b;
        w->rc = st.get_next(&st, &b);
        if (w->rc || !b.release) break;
        w->rows += b.length;
        if (w->n_held < HELD) w->held[w->n_held++] = b;
        else b.release(&b);
    }
    st.release(&st);
    return NULL;
}

static void *release_all(void *arg) {
    struct worker *w = arg;
    for (int i = 0; i < w->n_held; i++) w->held[i].release(&w->held[i]);
    return NULL;
}

static void test_concurrent_scans(void **state) {
    (void)state;
    alarm(300);
    struct qv_pool *pool;
    struct qv_reservation *res;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "file_mt.qvr");
    assert_int_equal(fx_write(path, ROWS, RG, res), 0);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    for (int round = 0; round < 3; round++) {
        struct qv_file *f;
        struct qv_file_options fo = {.memory_limit = 512u << 20};
        struct qv_error err = {0};
        if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
        static struct worker w[THREADS];
        qv_thread t[THREADS];
        memset(w, 0, sizeof w);
        for (int i = 0; i < THREADS; i++) {
            w[i].file = qv_file_retain(f);
            w[i].index = i;
            assert_int_equal(qv_thread_create(&t[i], work, &w[i]), 0);
        }
        qv_file_close(f); /* while the workers run */
        for (int i = 0; i < THREADS; i++) qv_thread_join(t[i]);
        for (int i = 0; i < THREADS; i++) {
            assert_int_equal(w[i].rc, 0);
            assert_int_equal(w[i].rows, i % 2 ? 50 : ROWS);
        }
        /* Batches released from other threads, all at once. */
        for (int i = 0; i < THREADS; i++)
            assert_int_equal(qv_thread_create(&t[i], release_all, &w[(i + 1) % THREADS]), 0);
        for (int i = 0; i < THREADS; i++) qv_thread_join(t[i]);
    }
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_scans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
