/* Several contexts of one filter running at once (core/src/scan/filter.c):
 * each thread evaluates its share of the batches with a context of its own
 * while the shared ranking of the conjuncts moves under it; every batch must
 * select the same rows as a lone context did. Also a threaded scan with a
 * filter, end to end. Run under ThreadSanitizer by the concurrency label. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/thread.h"
#include "scan/scan_internal.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 30000
#define RG 4096
#define BS 1000
#define THREADS 4

static const char *const filter_text =
    "v < 60 AND d > 10.5 AND s >= 's2' AND id BETWEEN 100 AND 29000 AND v != 7";

static struct qv_pool *pool;
static struct qv_reservation *res;
static struct qv_reader *rd;
static struct qv_expr *expr;

static int setup(void **state) {
    (void)state;
    struct qv_error err;
    char path[512];
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "scan_filter_mt.qvr");
    assert_int_equal(fx_write(path, ROWS, RG, res), 0);
    assert_int_equal(qv_reader_open(path, NULL, res, &rd, &err), 0);
    unlink(path);
    assert_int_equal(qv_expr_parse(filter_text, res, &expr, &err), 0);
    assert_int_equal(qv_expr_bind(expr, qv_reader_schema(rd), &err), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    qv_expr_destroy(expr);
    qv_reader_close(rd);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return 0;
}

struct job {
    int64_t rg, lo, n;
    int64_t sel[BS];
    int64_t k;
};

struct worker {
    struct qv__filter *f;
    struct job *jobs;
    int n_jobs, first, step;
    int rc;
    char msg[256];
};

static void *work(void *arg) {
    struct worker *w = arg;
    struct qv__filter_ctx *c;
    struct qv_error err;
    w->rc = qv__filter_ctx_create(w->f, pool, &c, &err);
    if (w->rc) return NULL;
    for (int i = w->first; i < w->n_jobs; i += w->step) {
        struct job *j = &w->jobs[i];
        w->rc = qv__filter_batch(c, j->rg, j->lo, NULL, j->n, j->sel, &j->k, NULL, NULL, &err);
        if (w->rc) {
            snprintf(w->msg, sizeof w->msg, "%.200s", err.message);
            break;
        }
    }
    qv__filter_ctx_destroy(c);
    return NULL;
}

static int make_jobs(struct job *jobs) {
    int n = 0;
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++) {
        int64_t rows = qv_reader_row_group_rows(rd, rg);
        for (int64_t lo = 0; lo < rows; lo += BS) {
            jobs[n].rg = rg;
            jobs[n].lo = lo;
            jobs[n].n = rows - lo < BS ? rows - lo : BS;
            n++;
        }
    }
    return n;
}

static void test_contexts_at_once(void **state) {
    (void)state;
    struct qv_error err;
    int cap = ROWS / BS + 16;
    struct job *want = calloc((size_t)cap, sizeof *want), *got = calloc((size_t)cap, sizeof *got);
    int n = make_jobs(want);
    struct qv__filter *f;
    assert_int_equal(qv__filter_create(rd, expr, pool, res, &f, &err), 0);
    struct worker one = {.f = f, .jobs = want, .n_jobs = n, .first = 0, .step = 1};
    work(&one);
    assert_int_equal(one.rc, 0);
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += want[i].k;
    assert_true(total > 0 && total < ROWS);
    for (int round = 0; round < 6; round++) {
        memcpy(got, want, (size_t)n * sizeof *got);
        for (int i = 0; i < n; i++) got[i].k = -1;
        struct worker w[THREADS];
        qv_thread t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            w[i] = (struct worker){.f = f, .jobs = got, .n_jobs = n, .first = i, .step = THREADS};
            assert_int_equal(qv_thread_create(&t[i], work, &w[i]), 0);
        }
        for (int i = 0; i < THREADS; i++) qv_thread_join(t[i]);
        for (int i = 0; i < THREADS; i++)
            if (w[i].rc) fail_msg("worker %d: %s", i, w[i].msg);
        for (int i = 0; i < n; i++) {
            assert_int_equal(got[i].k, want[i].k);
            assert_memory_equal(got[i].sel, want[i].sel, (size_t)want[i].k * sizeof(int64_t));
        }
    }
    qv__filter_destroy(f);
    free(got);
    free(want);
}

/* The scan with workers and the filter: the same rows as without. */
static void test_threaded_scan(void **state) {
    (void)state;
    int64_t counts[2];
    int modes[2] = {QV_SCAN_SYNC, 2};
    for (int m = 0; m < 2; m++) {
        struct qv_scan_options o = {.filter = filter_text, .threads = modes[m], .batch_rows = 3000,
                                    .prefetch = 2};
        struct ArrowArrayStream st;
        struct qv_error err;
        assert_int_equal(qv_scan_open(rd, &o, res, &st, &err), 0);
        int64_t sum = 0;
        counts[m] = 0;
        for (;;) {
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), 0);
            if (!b.release) break;
            const int64_t *id = b.children[0]->buffers[1];
            for (int64_t i = 0; i < b.length; i++) sum += id[b.children[0]->offset + i];
            counts[m] += b.length;
            b.release(&b);
        }
        st.release(&st);
        assert_true(sum > 0);
    }
    assert_int_equal(counts[0], counts[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contexts_at_once),
        cmocka_unit_test(test_threaded_scan),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
