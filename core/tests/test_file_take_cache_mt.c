/* The file's cache of column readers for takes (core/src/file/take_cache.c):
 * repeated takes exact and served by the readers already open, takes with
 * a bound so small that every reader is closed when given back, a file
 * without a cache, the memory of the cache returned to a caller's pool at
 * close, and takes from several threads on one file object at once (runs
 * under ThreadSanitizer: the _mt suffix). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/quiver.h"
#include "base/thread.h"
#include "file/file_internal.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 20000
#define RG 2048
#define N_TAKE 60
#define THREADS 4

static char path[512];

static int setup(void **state) {
    (void)state;
    struct qv_pool *pool;
    struct qv_reservation *res;
    if (qv_pool_create(NULL, &pool, NULL)) return -1;
    if (qv_reservation_create(pool, NULL, &res, NULL)) return -1;
    tu_path(path, sizeof path, "take_cache.qvr");
    int rc = fx_write(path, ROWS, RG, res);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return rc ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    return 0;
}

/* Rows spread over every row group, out of order, one duplicate. */
static void make_rows(int64_t *rows, int seed) {
    for (int i = 0; i < N_TAKE; i++) rows[i] = ((int64_t)i * 7919 + seed * 131) % ROWS;
    rows[N_TAKE - 1] = rows[3];
}

/* Takes rows[] of id, v, s and checks every value against the fixture.
 * Returns 0, or the take's error code (message in *err). */
static int take_exact(struct qv_file *f, const int64_t *rows, struct qv_error *err) {
    static const char *const cols[] = {"id", "v", "s"};
    struct qv_file_scan_options o = {.columns = cols, .n_columns = 3};
    struct ArrowArrayStream st;
    int rc = qv_file_take(f, rows, N_TAKE, &o, &st, err);
    if (rc) return rc;
    int64_t at = 0;
    for (;;) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc || !b.release) break;
        assert_int_equal(b.n_children, 3);
        const struct ArrowArray *id = b.children[0], *v = b.children[1], *s = b.children[2];
        for (int64_t i = 0; i < b.length; i++, at++) {
            int64_t r = rows[at];
            assert_int_equal(((const int64_t *)id->buffers[1])[id->offset + i], r);
            int64_t vi = v->offset + i;
            const uint8_t *vv = v->buffers[0];
            int valid = !vv || (vv[vi / 8] >> (vi % 8) & 1);
            assert_int_equal(valid, !fx_v_null(r));
            if (valid) assert_int_equal(((const int32_t *)v->buffers[1])[vi], fx_v(r));
            int64_t si = s->offset + i;
            const uint8_t *sv = s->buffers[0];
            if (!sv || (sv[si / 8] >> (si % 8) & 1)) {
                char want[32];
                snprintf(want, sizeof want, "s%d", (int)fx_v(r));
                const int32_t *off = s->buffers[1];
                const char *data = s->buffers[2];
                assert_int_equal(off[si + 1] - off[si], (int32_t)strlen(want));
                assert_memory_equal(data + off[si], want, strlen(want));
            }
        }
        b.release(&b);
    }
    if (rc && err) {
        const char *m = st.get_last_error(&st);
        qv_error_set(err, rc, "%s", m ? m : "take failed");
    }
    st.release(&st);
    if (!rc) assert_int_equal(at, N_TAKE);
    return rc;
}

static void test_repeated_takes_reuse_readers(void **state) {
    (void)state;
    alarm(120);
    struct qv_file *f;
    struct qv_error err = {0};
    if (qv_file_open(path, NULL, &f, &err)) fail_msg("%s", err.message);
    assert_non_null(f->tc);
    int64_t rows[N_TAKE];
    make_rows(rows, 1);
    if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
    size_t n1, n2;
    uint64_t h1, h2;
    qv__take_cache_counts(f->tc, &n1, &h1);
    /* Three columns in each row group the rows fall in. */
    assert_true(n1 >= 3 && n1 <= 3 * ((ROWS + RG - 1) / RG) && n1 % 3 == 0);
    assert_true(h1 > 0);
    for (int k = 0; k < 5; k++)
        if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
    qv__take_cache_counts(f->tc, &n2, &h2);
    assert_int_equal(n2, n1); /* every take after the first found its readers open */
    /* Other rows of the same row groups: still the same readers. */
    make_rows(rows, 2);
    if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
    qv__take_cache_counts(f->tc, &n2, &h2);
    assert_int_equal(n2, n1);
    qv_file_close(f);
}

static void test_takes_beyond_the_bound(void **state) {
    (void)state;
    alarm(120);
    struct qv_file *f;
    struct qv_error err = {0};
    /* One byte: every reader given back is closed at once. */
    struct qv_file_options fo = {.take_cache_bytes = 1};
    if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
    int64_t rows[N_TAKE];
    for (int k = 0; k < 3; k++) {
        make_rows(rows, k);
        if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
        size_t n;
        uint64_t h;
        qv__take_cache_counts(f->tc, &n, &h);
        assert_int_equal(n, 0);
        assert_int_equal(h, 0);
    }
    qv_file_close(f);
    /* A bound of a few readers: the cache stays at or under it between takes. */
    fo.take_cache_bytes = 4096;
    if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
    for (int k = 0; k < 3; k++) {
        make_rows(rows, k);
        if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
        size_t n;
        uint64_t h;
        qv__take_cache_counts(f->tc, &n, &h);
        assert_true(h <= 4096);
        assert_true(n < 3 * ((ROWS + RG - 1) / RG));
    }
    qv_file_close(f);
}

static void test_no_cache(void **state) {
    (void)state;
    alarm(120);
    struct qv_file *f;
    struct qv_error err = {0};
    struct qv_file_options fo = {.take_cache_bytes = -1};
    if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
    assert_null(f->tc);
    int64_t rows[N_TAKE];
    make_rows(rows, 3);
    for (int k = 0; k < 2; k++)
        if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
    qv_file_close(f);
}

static void test_close_returns_memory(void **state) {
    (void)state;
    alarm(120);
    struct qv_pool *pool;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    uint64_t before = qv_pool_used(pool);
    struct qv_file *f;
    struct qv_error err = {0};
    struct qv_file_options fo = {.pool = pool};
    if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
    uint64_t opened = qv_pool_used(pool);
    int64_t rows[N_TAKE];
    make_rows(rows, 4);
    if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
    /* The cache is full of readers (the whole fixture fits): the pool
     * is charged for them while the file is open. */
    assert_true(qv_pool_used(pool) > opened);
    qv_file_close(f);
    assert_int_equal(qv_pool_used(pool), before);
    qv_pool_destroy(pool);
}

/* A pool too small for every reader the takes open: a take that finds the
 * pool full closes the readers no take borrows and goes on. */
static void test_full_pool_trims_the_cache(void **state) {
    (void)state;
    alarm(120);
    struct qv_pool *pool;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    struct qv_file *f;
    struct qv_error err = {0};
    struct qv_file_options fo = {.pool = pool, .take_cache_bytes = INT64_MAX};
    if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
    uint64_t opened = qv_pool_used(pool);
    int64_t rows[N_TAKE];
    make_rows(rows, 5);
    if (take_exact(f, rows, &err)) fail_msg("%s", err.message);
    uint64_t full = qv_pool_used(pool) - opened;
    size_t n_full;
    uint64_t h;
    qv__take_cache_counts(f->tc, &n_full, &h);
    qv_file_close(f);
    qv_pool_destroy(pool);

    struct qv_pool_options po = {.limit = opened + full / 2};
    assert_int_equal(qv_pool_create(&po, &pool, NULL), 0);
    fo.pool = pool;
    if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
    for (int k = 0; k < 3; k++) {
        make_rows(rows, 5 + k);
        if (take_exact(f, rows, &err)) fail_msg("take %d: %s", k, err.message);
        size_t n;
        qv__take_cache_counts(f->tc, &n, &h);
        assert_true(n < n_full);
    }
    qv_file_close(f);
    qv_pool_destroy(pool);
}

struct worker {
    struct qv_file *file;
    int index;
    int rc;
    struct qv_error err;
};

static void *work(void *arg) {
    struct worker *w = arg;
    int64_t rows[N_TAKE];
    for (int k = 0; k < 8 && !w->rc; k++) {
        make_rows(rows, (w->index + k) % 3); /* threads overlap on chunks */
        w->rc = take_exact(w->file, rows, &w->err);
    }
    return NULL;
}

static void test_concurrent_takes(void **state) {
    (void)state;
    alarm(300);
    for (int round = 0; round < 2; round++) {
        struct qv_file *f;
        struct qv_error err = {0};
        /* Round 1 with a small bound: evictions while others borrow. */
        struct qv_file_options fo = {.take_cache_bytes = round ? 8192 : 0};
        if (qv_file_open(path, &fo, &f, &err)) fail_msg("%s", err.message);
        static struct worker w[THREADS];
        qv_thread t[THREADS];
        memset(w, 0, sizeof w);
        for (int i = 0; i < THREADS; i++) {
            w[i].file = f;
            w[i].index = i;
            assert_int_equal(qv_thread_create(&t[i], work, &w[i]), 0);
        }
        for (int i = 0; i < THREADS; i++) qv_thread_join(t[i]);
        for (int i = 0; i < THREADS; i++)
            if (w[i].rc) fail_msg("thread %d: %s", i, w[i].err.message);
        qv_file_close(f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeated_takes_reuse_readers),
        cmocka_unit_test(test_takes_beyond_the_bound),
        cmocka_unit_test(test_no_cache),
        cmocka_unit_test(test_close_returns_memory),
        cmocka_unit_test(test_full_pool_trims_the_cache),
        cmocka_unit_test(test_concurrent_takes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
