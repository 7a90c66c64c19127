/* qv_scan_cancel from another thread (issue 9, item 3): a consumer blocked
 * in get_next returns ECANCELED promptly, also while the producer is stuck
 * in a read; cancels at random points never lose a batch, leak, hang or
 * race (this file runs under ThreadSanitizer: label "concurrency"). */
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
#include "quiver/scan.h"
#include "fx_file.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 12000
#define RG 2048

static struct fx_file fx;

static int setup(void **state) {
    (void)state;
    alarm(300); /* a hang fails the test instead of stalling CI */
    fx_file_open(&fx, "scan_cancel_mt.qvr", ROWS, RG);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    fx_file_close(&fx);
    alarm(0);
    return 0;
}

static void pool_is_clean(void) { fx_file_pool_is_clean(&fx); }

/* ---- a source whose reads block on a gate once armed ---- */

struct gated {
    qv_mutex mu;
    qv_cond cv;
    int armed, open, blocked;
    int gave_up; /* reads that left the gate closed after 60 s: something waited on it */
};

static int gated_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    struct gated *g = ctx;
    qv_mutex_lock(&g->mu);
    if (g->armed) {
        g->blocked++;
        qv_cond_broadcast(&g->cv);
        /* Bounded: a lost wake-up shows up as a failed assertion, not a hang. */
        for (int i = 0; i < 600 && !g->open; i++) qv_cond_timedwait_ms(&g->cv, &g->mu, 100);
        if (!g->open) g->gave_up++;
    }
    qv_mutex_unlock(&g->mu);
    if (off + len > fx.size) return qv_error_set(err, EIO, "gated: read past the end");
    memcpy(buf, fx.bytes + off, len);
    return 0;
}

static void gated_wait_blocked(struct gated *g) {
    qv_mutex_lock(&g->mu);
    for (int i = 0; i < 600 && !g->blocked; i++) qv_cond_timedwait_ms(&g->cv, &g->mu, 100);
    int blocked = g->blocked;
    qv_mutex_unlock(&g->mu);
    assert_true(blocked > 0);
}

static void gated_open(struct gated *g) {
    qv_mutex_lock(&g->mu);
    g->open = 1;
    qv_cond_broadcast(&g->cv);
    qv_mutex_unlock(&g->mu);
}

struct consumer {
    struct ArrowArrayStream *st;
    int rc;       /* the first non-zero get_next result */
    int64_t rows; /* rows received before it */
    int ended;    /* saw the end of the stream instead */
    int calls;    /* get_next calls at most (0: until rc or end) */
};

static void *consume(void *arg) {
    struct consumer *c = arg;
    for (int i = 0; !c->calls || i < c->calls; i++) {
        struct ArrowArray b;
        int rc = c->st->get_next(c->st, &b);
        if (rc) {
            c->rc = rc;
            return NULL;
        }
        if (!b.release) {
            c->ended = 1;
            return NULL;
        }
        c->rows += b.length;
        b.release(&b);
    }
    return NULL;
}

/* The consumer waits in get_next while the producer is stuck in a read:
 * cancel must return it ECANCELED without the producer making progress. */
static void test_cancel_wakes_waiting_consumer(void **state) {
    (void)state;
    int threads[] = {1, 2, 4};
    for (int t = 0; t < 3; t++) {
        struct gated g = {0};
        qv_mutex_init(&g.mu);
        qv_cond_init(&g.cv);
        struct qv_source src = {.ctx = &g, .name = "gated.qvr", .size = fx.size,
                                .read_at = gated_read};
        struct qv_reader *rd;
        struct qv_reader_options ro = {0};
        assert_int_equal(qv_reader_open_source(&src, &ro, fx.res, &rd, NULL), 0);
        qv_mutex_lock(&g.mu);
        g.armed = 1; /* only data reads block, not the footer */
        qv_mutex_unlock(&g.mu);
        struct qv_scan_options o = {.batch_rows = 1000, .threads = threads[t]};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        struct consumer c = {.st = &st};
        qv_thread th;
        assert_int_equal(qv_thread_create(&th, consume, &c), 0);
        gated_wait_blocked(&g); /* a worker is inside a read */
        assert_int_equal(qv_scan_cancel(&st), 0);
        qv_thread_join(th); /* returns with the gate still closed */
        /* Nobody needed the gate to give up: the consumer was not inside
         * a read (reads are the workers'), so cancel reached it at once. */
        qv_mutex_lock(&g.mu);
        assert_int_equal(g.gave_up, 0);
        qv_mutex_unlock(&g.mu);
        assert_int_equal(c.rc, ECANCELED);
        assert_int_equal(c.rows, 0);
        assert_non_null(strstr(st.get_last_error(&st), "cancelled"));
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), ECANCELED); /* it stays cancelled */
        assert_null(b.release);
        assert_int_equal(qv_scan_cancel(&st), 0); /* idempotent */
        gated_open(&g);
        st.release(&st); /* joins the workers, now unblocked */
        qv_reader_close(rd);
        qv_cond_destroy(&g.cv);
        qv_mutex_destroy(&g.mu);
        pool_is_clean();
    }
}

/* Synchronous scans decode on the consumer's thread: a cancel during a
 * blocked read takes effect at the next column task. */
static void test_cancel_synchronous_scan(void **state) {
    (void)state;
    struct gated g = {0};
    qv_mutex_init(&g.mu);
    qv_cond_init(&g.cv);
    struct qv_source src = {.ctx = &g, .name = "gated.qvr", .size = fx.size,
                            .read_at = gated_read};
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &rd, NULL), 0);
    qv_mutex_lock(&g.mu);
    g.armed = 1;
    qv_mutex_unlock(&g.mu);
    struct qv_scan_options o = {.batch_rows = 1000, .threads = QV_SCAN_SYNC};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
    struct consumer c = {.st = &st, .calls = 2};
    qv_thread th;
    assert_int_equal(qv_thread_create(&th, consume, &c), 0);
    gated_wait_blocked(&g);
    assert_int_equal(qv_scan_cancel(&st), 0);
    gated_open(&g);
    qv_thread_join(th);
    /* At most the batch being decoded completes; the next call is cancelled. */
    assert_int_equal(c.rc, ECANCELED);
    assert_true(c.rows <= 1000);
    st.release(&st);
    qv_reader_close(rd);
    qv_cond_destroy(&g.cv);
    qv_mutex_destroy(&g.mu);
    pool_is_clean();
}

static void nap_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Cancels at random moments of a running scan (threads and prefetch
 * varied): the consumer ends with ECANCELED or, when the cancel came after
 * the last batch, with the end of the stream; rows are never duplicated
 * (each batch continues the ids). */
static void test_cancel_at_random_points(void **state) {
    (void)state;
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(fx.path, NULL, fx.res, &rd, NULL), 0);
    unsigned seed = 12345;
    int cancelled = 0;
    for (int round = 0; round < 60; round++) {
        seed = seed * 1103515245u + 12345u;
        int threads = (int)(seed >> 16) % 5; /* 0: default, 1..4 */
        if (threads == 0 && round % 2) threads = QV_SCAN_SYNC;
        struct qv_scan_options o = {.batch_rows = 300 + (int64_t)(seed % 700),
                                    .threads = threads, .prefetch = 1 + (int)(seed % 3),
                                    .filter = round % 3 ? NULL : "v >= 0 OR v IS NULL"};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        struct consumer c = {.st = &st};
        qv_thread th;
        assert_int_equal(qv_thread_create(&th, consume, &c), 0);
        nap_us((long)((seed >> 8) % 3000));
        assert_int_equal(qv_scan_cancel(&st), 0);
        qv_thread_join(th);
        if (c.ended) {
            assert_int_equal(c.rows, ROWS);
        } else {
            assert_int_equal(c.rc, ECANCELED);
            assert_true(c.rows <= ROWS);
            cancelled++;
        }
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), ECANCELED);
        st.release(&st);
        pool_is_clean();
    }
    assert_true(cancelled > 0);
    qv_reader_close(rd);
}

/* qv_scan_wait: times out while nothing is produced, is ready at once
 * after a cancel, for a queued batch, and always for a synchronous scan. */
static void test_wait(void **state) {
    (void)state;
    struct gated g = {0};
    qv_mutex_init(&g.mu);
    qv_cond_init(&g.cv);
    struct qv_source src = {.ctx = &g, .name = "gated.qvr", .size = fx.size,
                            .read_at = gated_read};
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &rd, NULL), 0);
    qv_mutex_lock(&g.mu);
    g.armed = 1;
    qv_mutex_unlock(&g.mu);
    struct qv_scan_options o = {.batch_rows = 1000, .threads = 2};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
    gated_wait_blocked(&g);
    assert_int_equal(qv_scan_wait(&st, 1), ETIMEDOUT); /* the producer is stuck */
    assert_int_equal(qv_scan_wait(&st, 0), ETIMEDOUT);
    /* The waits did not read (and block) themselves. */
    qv_mutex_lock(&g.mu);
    assert_int_equal(g.gave_up, 0);
    qv_mutex_unlock(&g.mu);
    gated_open(&g);
    int rc = ETIMEDOUT;
    for (int i = 0; i < 600 && rc == ETIMEDOUT; i++) rc = qv_scan_wait(&st, 100);
    assert_int_equal(rc, 0); /* a batch is queued */
    struct ArrowArray b;
    assert_int_equal(st.get_next(&st, &b), 0);
    assert_non_null(b.release);
    b.release(&b);
    assert_int_equal(qv_scan_cancel(&st), 0);
    assert_int_equal(qv_scan_wait(&st, 100000), 0); /* cancelled: ready at once */
    assert_int_equal(st.get_next(&st, &b), ECANCELED);
    st.release(&st);

    struct qv_scan_options so = {.threads = QV_SCAN_SYNC};
    assert_int_equal(qv_scan_open(rd, &so, fx.res, &st, NULL), 0);
    assert_int_equal(qv_scan_wait(&st, 100000), 0);
    st.release(&st);
    assert_int_equal(qv_scan_wait(NULL, 0), EINVAL);
    qv_reader_close(rd);
    qv_cond_destroy(&g.cv);
    qv_mutex_destroy(&g.mu);
    pool_is_clean();
}

static void test_cancel_rejects_other_streams(void **state) {
    (void)state;
    assert_int_equal(qv_scan_cancel(NULL), EINVAL);
    struct ArrowArrayStream st;
    memset(&st, 0, sizeof st);
    assert_int_equal(qv_scan_cancel(&st), EINVAL); /* released / not a scan */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cancel_wakes_waiting_consumer),
        cmocka_unit_test(test_cancel_synchronous_scan),
        cmocka_unit_test(test_cancel_at_random_points),
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_cancel_rejects_other_streams),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
