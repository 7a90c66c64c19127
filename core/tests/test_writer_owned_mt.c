/* qv_writer_write_owned with the background encoder (the worker thread):
 * files identical to the inline copying path's, arrays released exactly
 * once and on the caller's thread, the bound of sealed row groups in
 * flight (counted from the release callbacks, no timing), the worker's
 * failures surfacing at a later call or at finish, abort and close while
 * the worker is mid-encode, and a full disk. Runs under TSan (label
 * concurrency). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_testing.h"
#include "full_sink.h"
#include "owned_env.h"
#include "quiver/format.h"
#include "random_batch.h"
#include "test_util.h"
#include "tracked_array.h"

/* Writes `n` batches of `rows` rows (seeds from `seed`), owned or copied. */
static int write_batches(struct owned_env *e, struct qv_writer *w, struct tracker *t, int n,
                         int64_t rows, uint64_t seed, int owned, struct qv_error *err) {
    for (int i = 0; i < n; i++) {
        struct ArrowArray tr;
        owned_tracked_batch(e, t, rows, seed + (uint64_t)i, &tr);
        int rc = owned ? qv_writer_write_owned(w, &tr, err) : qv_writer_write(w, &tr, err);
        if (!owned) tr.release(&tr);
        assert_null(tr.release);
        if (rc) return rc;
    }
    return 0;
}

static void test_identical_to_inline_copy(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char pa[512], pb[512];
    tu_path(pa, sizeof pa, "owned_mt_ref.qvr");
    tu_path(pb, sizeof pb, "owned_mt_own.qvr");
    struct tracker t;
    tracker_init(&t);
    struct qv_error err;
    struct qv_writer *w;
    struct qv_writer_options ref = {.row_group_rows = 1000, .max_in_flight = QV_WRITER_INLINE};
    assert_int_equal(qv_writer_open(pa, e.s, &ref, e.r, &w, &err), 0);
    assert_int_equal(write_batches(&e, w, &t, 6, 700, 1, 0, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    for (int m = 0; m <= 1; m++) { /* the default (2) and 1 */
        struct qv_writer_options own = {.row_group_rows = 1000, .max_in_flight = m};
        assert_int_equal(qv_writer_open(pb, e.s, &own, e.r, &w, &err), 0);
        assert_int_equal(write_batches(&e, w, &t, 6, 700, 1, 1, &err), 0);
        assert_true(qv_writer_has_worker(w));
        assert_int_equal(qv_writer_finish(w, &err), 0);
        assert_int_equal(qv_writer_rows_written(w), 4200);
        qv_writer_close(w);
        assert_int_equal(tracker_live(&t), 0);
        owned_assert_same_files(pa, pb);
        /* The copying path through the worker makes the same file too. */
        assert_int_equal(qv_writer_open(pb, e.s, &own, e.r, &w, &err), 0);
        assert_int_equal(write_batches(&e, w, &t, 6, 700, 1, 0, &err), 0);
        assert_int_equal(qv_writer_finish(w, &err), 0);
        qv_writer_close(w);
        owned_assert_same_files(pa, pb);
    }
    assert_int_equal(atomic_load(&t.double_release), 0);
    unlink(pa);
    unlink(pb);
    owned_env_done(&e);
}

struct bound_probe {
    struct tracker *t;
    atomic_llong max_live;
};

/* Runs on the worker: the arrays alive while it encodes. */
static int probe_live(void *ctx, int64_t rg, int32_t column) {
    (void)rg;
    (void)column;
    struct bound_probe *b = ctx;
    long long live = tracker_live(b->t), m = atomic_load(&b->max_live);
    while (live > m && !atomic_compare_exchange_weak(&b->max_live, &m, live)) {
    }
    return 0;
}

static void test_release_on_caller_thread_and_bound(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_mt_bound.qvr");
    for (int m = 1; m <= 3; m++) {
        struct tracker t;
        tracker_init(&t);
        struct bound_probe probe = {.t = &t};
        atomic_init(&probe.max_live, 0);
        struct qv_writer_options o = {.row_group_rows = 100, .max_in_flight = m};
        struct qv_writer *w;
        struct qv_error err;
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        qv_writer_set_encode_hook(w, probe_live, &probe);
        for (int i = 0; i < 30; i++) {
            /* One batch per row group: each call seals one. Sealed row
             * groups not yet released are at most m, so at most m arrays
             * live when the call returns. */
            assert_int_equal(write_batches(&e, w, &t, 1, 100, 1000 + (uint64_t)i, 1, &err), 0);
            assert_true(tracker_live(&t) <= m);
        }
        assert_int_equal(qv_writer_finish(w, &err), 0);
        qv_writer_close(w);
        /* While encoding: the m in flight, plus the one the caller made
         * for its next call. */
        assert_true(atomic_load(&probe.max_live) <= m + 1);
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(atomic_load(&t.foreign_release), 0);
        assert_int_equal(atomic_load(&t.double_release), 0);
        for (int i = 0; i < 30; i++) assert_int_equal(tracker_release_count(&t, i), 1);
    }
    unlink(path);
    owned_env_done(&e);
}

static int fail_at(void *ctx, int64_t rg, int32_t column) {
    const int64_t *where = ctx;
    return rg == where[0] && column == where[1] ? EIO : 0;
}

static void test_worker_failure_surfaces(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_mt_fail.qvr");
    unlink(path);
    /* Fails mid-stream: a later write returns it (or finish, at the latest). */
    for (int late = 0; late < 2; late++) {
        struct tracker t;
        tracker_init(&t);
        struct qv_writer_options o = {.row_group_rows = 100};
        struct qv_writer *w;
        struct qv_error err;
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        int64_t where[2] = {late ? 4 : 2, 3};
        qv_writer_set_encode_hook(w, fail_at, where);
        int n = late ? 5 : 30;
        int rc = write_batches(&e, w, &t, n, 100, 77, 1, &err);
        if (!rc) rc = qv_writer_finish(w, &err);
        assert_int_equal(rc, EIO);
        assert_non_null(strstr(err.message, "owned_mt_fail.qvr"));
        char want[300];
        snprintf(want, sizeof want, "row group %d, column '%s'", late ? 4 : 2,
                 e.s->root.children[3].name);
        assert_non_null(strstr(err.message, want));
        /* The writer is failed: later calls repeat the error. */
        assert_int_equal(qv_writer_finish(w, &err), EIO);
        assert_int_equal(write_batches(&e, w, &t, 1, 10, 5, 1, &err), EIO);
        qv_writer_close(w);
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(atomic_load(&t.foreign_release), 0);
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
    }
    owned_env_done(&e);
}

/* Holds the worker in row group 0 until the writer is asked to stop. */
struct blocker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered, saw_cancel, gave_up;
    struct qv_writer *w;
};

static int block_until_cancel(void *ctx, int64_t rg, int32_t column) {
    struct blocker *b = ctx;
    if (rg != 0 || column != 0) return 0;
    pthread_mutex_lock(&b->mu);
    b->entered = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    /* Deadline: 20 s of 1 ms polls, then give up (the test fails). */
    for (int i = 0; i < 20000; i++) {
        if (qv_writer_cancel_requested(b->w)) {
            pthread_mutex_lock(&b->mu);
            b->saw_cancel = 1;
            pthread_mutex_unlock(&b->mu);
            return 0;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&b->mu);
    b->gave_up = 1;
    pthread_mutex_unlock(&b->mu);
    return ETIMEDOUT;
}

static void wait_entered(struct blocker *b) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 20;
    pthread_mutex_lock(&b->mu);
    while (!b->entered)
        if (pthread_cond_timedwait(&b->cv, &b->mu, &dl) == ETIMEDOUT) break;
    int entered = b->entered;
    pthread_mutex_unlock(&b->mu);
    assert_true(entered);
}

static void test_abort_or_close_while_worker_busy(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "owned_mt_abort.qvr");
    unlink(path);
    for (int use_close = 0; use_close < 2; use_close++) {
        struct tracker t;
        tracker_init(&t);
        struct blocker b = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
        struct qv_writer_options o = {.row_group_rows = 100, .max_in_flight = 2};
        struct qv_writer *w;
        struct qv_error err;
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        b.w = w;
        qv_writer_set_encode_hook(w, block_until_cancel, &b);
        /* Row group 0 goes to the worker, which blocks in it. */
        assert_int_equal(write_batches(&e, w, &t, 1, 100, 5, 1, &err), 0);
        wait_entered(&b);
        /* Row group 1 waits in the queue (2 in flight: the bound), and a
         * row group in the making holds 50 rows. */
        assert_int_equal(write_batches(&e, w, &t, 1, 100, 6, 1, &err), 0);
        assert_int_equal(write_batches(&e, w, &t, 1, 50, 7, 1, &err), 0);
        assert_int_equal(tracker_live(&t), 3);
        if (use_close) {
            qv_writer_close(w);
        } else {
            qv_writer_abort(w);
            assert_int_equal(tracker_live(&t), 0);
            assert_int_equal(qv_writer_finish(w, &err), ECANCELED);
            qv_writer_close(w);
        }
        pthread_mutex_lock(&b.mu);
        assert_true(b.saw_cancel);
        assert_false(b.gave_up);
        pthread_mutex_unlock(&b.mu);
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(atomic_load(&t.foreign_release), 0);
        assert_int_equal(atomic_load(&t.double_release), 0);
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
    }
    owned_env_done(&e);
}

static void test_full_disk_on_worker(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    struct full_sink fs;
    struct qv_sink sink;
    full_sink_init(&fs, 20000, &sink);
    struct qv_writer_options o = {.row_group_rows = 500};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open_sink(&sink, e.s, &o, e.r, &w, &err), 0);
    struct tracker t;
    tracker_init(&t);
    int rc = write_batches(&e, w, &t, 40, 250, 400, 1, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    assert_int_equal(rc, ENOSPC);
    assert_non_null(strstr(err.message, "full"));
    assert_non_null(strstr(err.message, "row group"));
    assert_int_equal(qv_writer_finish(w, &err), ENOSPC);
    qv_writer_close(w);
    assert_int_equal(tracker_live(&t), 0);
    assert_int_equal(atomic_load(&t.foreign_release), 0);
    owned_env_done(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_to_inline_copy),
        cmocka_unit_test(test_release_on_caller_thread_and_bound),
        cmocka_unit_test(test_worker_failure_surfaces),
        cmocka_unit_test(test_abort_or_close_while_worker_busy),
        cmocka_unit_test(test_full_disk_on_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
