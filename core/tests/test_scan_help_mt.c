/* The consumer helps (scan.c, help_or_wait): a get_next or qv_scan_wait whose
 * head batch is not ready runs the oldest runnable task itself. Attacked
 * here as a hostile caller would: two threads in get_next at once; waits of
 * 1-2 ms in a loop beside a consumer; cancel and waits while every read of
 * the source blocks (the consumer must not be inside one); release right
 * after a wait; a corrupt segment
 * and a full memory budget in tasks the consumer runs; filter + max_rows
 * with every mix of workers and prefetch against the synchronous scan byte
 * for byte; absurd timeouts. This file runs under ThreadSanitizer (label
 * "concurrency"); every test is under the deadline set in setup. Worker
 * threads never call cmocka assertions: they record, the main thread
 * asserts. */
#include <pthread.h>
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
static struct qv_reader *rd;

static int setup(void **state) {
    (void)state;
    alarm(900); /* a hang fails the test instead of stalling CI */
    fx_file_open(&fx, "scan_help_mt.qvr", ROWS, RG);
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
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static const int32_t proj3[] = {0, 1, 2};

/* The filters the tests use, evaluated by hand (NULL is never TRUE). */
static const char *const filters[] = {NULL, "v > 20", "v < 5 OR s STARTS WITH 's9'",
                                      "v IN (3, 7, 41) AND id >= 1000"};
static int passes(int f, int64_t i) {
    int vn = fx_v_null(i);
    int32_t v = fx_v(i);
    switch (f) {
    case 0: return 1;
    case 1: return !vn && v > 20;
    case 2: return !vn && (v < 5 || v == 9 || (v >= 90 && v <= 99));
    default: return !vn && (v == 3 || v == 7 || v == 41) && i >= 1000;
    }
}

/* Checks batch b of (id, v, s) without asserting (for any thread): its ids
 * are the rows passing filter f from *next on, v and s match. 0 when right. */
static int batch_wrong(const struct ArrowArray *b, int f, int64_t *next) {
    if (b->n_children != 3 || b->length <= 0) return 1;
    const int64_t *id = b->children[0]->buffers[1];
    const struct ArrowArray *v = b->children[1], *sa = b->children[2];
    const int32_t *vv = v->buffers[1];
    const uint8_t *vvalid = v->buffers[0];
    const int32_t *soff = sa->buffers[1];
    const char *sdata = sa->buffers[2];
    for (int64_t r = 0; r < b->length; r++) {
        while (*next < ROWS && !passes(f, *next)) (*next)++;
        if (*next >= ROWS) return 2;
        int64_t want = (*next)++;
        if (id[r + b->children[0]->offset] != want) return 3;
        int64_t vi = r + v->offset;
        int valid = !vvalid || (vvalid[vi / 8] >> (vi % 8)) & 1;
        if (valid != !fx_v_null(want)) return 4;
        if (!valid) continue;
        if (vv[vi] != fx_v(want)) return 5;
        char s[16];
        int len = snprintf(s, sizeof s, "s%d", fx_v(want));
        int64_t si = r + sa->offset;
        if (soff[si + 1] - soff[si] != len || memcmp(sdata + soff[si], s, (size_t)len)) return 6;
    }
    return 0;
}

static int64_t expected_rows(int f, int64_t max_rows) {
    int64_t n = 0;
    for (int64_t i = 0; i < ROWS; i++) n += passes(f, i);
    return max_rows && n > max_rows ? max_rows : n;
}

/* What drain_checked does before each get_next (k counts them from 0). */
enum drain_wait {
    WAIT_NONE,
    WAIT_ONCE,       /* qv_scan_wait(wait_ms) returns 0 or ETIMEDOUT */
    WAIT_READY,      /* qv_scan_wait(wait_ms) returns 0: long enough to be ready */
    WAIT_TINY_STEPS, /* qv_scan_wait(1 + k % 2) until not ETIMEDOUT, then 0 */
};

struct drain {
    int f; /* the filter every batch is checked against */
    enum drain_wait wait;
    int64_t wait_ms;
    int64_t next, rows; /* batch_wrong's next row; rows received so far */
};

/* Drains st to its end or its first error (main thread only: it asserts).
 * Every batch must be the rows passing filter d->f from d->next on
 * (batch_wrong), d->rows counts them, and each is released before the next
 * get_next. Returns get_next's error, 0 at the end: the caller says which
 * one it expects. */
static int drain_checked(struct ArrowArrayStream *st, struct drain *d) {
    for (int k = 0;; k++) {
        int rc;
        switch (d->wait) {
        case WAIT_NONE: break;
        case WAIT_ONCE:
            rc = qv_scan_wait(st, d->wait_ms);
            assert_true(rc == 0 || rc == ETIMEDOUT);
            break;
        case WAIT_READY: assert_int_equal(qv_scan_wait(st, d->wait_ms), 0); break;
        case WAIT_TINY_STEPS:
            /* Wait until ready in tiny steps, as a front end checking for
             * Ctrl-C does. */
            while ((rc = qv_scan_wait(st, 1 + k % 2)) == ETIMEDOUT) {}
            assert_int_equal(rc, 0);
            break;
        }
        struct ArrowArray b;
        rc = st->get_next(st, &b);
        if (rc) return rc;
        if (!b.release) return 0;
        assert_int_equal(batch_wrong(&b, d->f, &d->next), 0);
        d->rows += b.length;
        b.release(&b);
    }
}

/* ---- two threads in get_next at once ---- */

#define MAXB 256
struct taker {
    struct ArrowArrayStream *st;
    int f;
    long nap;        /* a slow consumer: up to this many us per batch */
    int rc, bad, ended, n;
    int64_t first[MAXB], len[MAXB];
    uint64_t rs;
};

static void *take_main(void *arg) {
    struct taker *t = arg;
    for (;;) {
        struct ArrowArray b;
        int rc = t->st->get_next(t->st, &b);
        if (rc) {
            t->rc = rc;
            return NULL;
        }
        if (!b.release) {
            t->ended = 1;
            return NULL;
        }
        if (t->n >= MAXB || b.n_children != 3 || b.length <= 0) t->bad = 1;
        else {
            int64_t first = ((const int64_t *)b.children[0]->buffers[1])[b.children[0]->offset];
            /* A batch starts at a row that passes; check it from there. */
            int64_t next = first;
            if (batch_wrong(&b, t->f, &next)) t->bad = 1;
            /* Each thread sees its batches in file order. */
            if (t->n && first <= t->first[t->n - 1]) t->bad = 1;
            t->first[t->n] = first;
            t->len[t->n++] = b.length;
        }
        b.release(&b);
        if (t->nap) {
            t->rs ^= t->rs << 13, t->rs ^= t->rs >> 7, t->rs ^= t->rs << 17;
            nap_us((long)(t->rs % (uint64_t)t->nap));
        }
    }
}

static int cmp_first(const void *a, const void *b) {
    int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return (x > y) - (x < y);
}

/* Both threads help; together they must receive every batch exactly once,
 * each in file order: none lost, none twice, none torn. (Beyond the
 * contract, which has one thread read a stream at a time, as Arrow streams
 * are; this pins that the scheduler's lock makes it safe anyway.) */
static void test_two_consumers_at_once(void **state) {
    (void)state;
    int config = 0;
    for (int threads = 1; threads <= 4; threads++)
        for (int prefetch = 1; prefetch <= 3; prefetch++)
            for (int f = 0; f < 2; f++, config++) {
                struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 400,
                                            .threads = threads, .prefetch = prefetch,
                                            .filter = filters[f]};
                struct ArrowArrayStream st;
                assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
                struct taker a = {.st = &st, .f = f, .nap = config % 3 == 1 ? 500 : 0, .rs = 7},
                             b = {.st = &st, .f = f, .nap = config % 3 == 2 ? 500 : 0, .rs = 9};
                qv_thread ta, tb;
                assert_int_equal(qv_thread_create(&ta, take_main, &a), 0);
                assert_int_equal(qv_thread_create(&tb, take_main, &b), 0);
                qv_thread_join(ta);
                qv_thread_join(tb);
                if (a.rc || b.rc || a.bad || b.bad || !a.ended || !b.ended)
                    fail_msg("threads %d prefetch %d filter %d: rc %d/%d bad %d/%d ended %d/%d: %s",
                             threads, prefetch, f, a.rc, b.rc, a.bad, b.bad, a.ended, b.ended,
                             st.get_last_error(&st) ? st.get_last_error(&st) : "");
                /* Merge by first row: the batches tile the expected rows. */
                int64_t all[2 * MAXB][2];
                int n = 0;
                for (int i = 0; i < a.n; i++) all[n][0] = a.first[i], all[n++][1] = a.len[i];
                for (int i = 0; i < b.n; i++) all[n][0] = b.first[i], all[n++][1] = b.len[i];
                qsort(all, (size_t)n, sizeof all[0], cmp_first);
                int64_t next = 0, rows = 0;
                for (int i = 0; i < n; i++) {
                    while (next < ROWS && !passes(f, next)) next++;
                    assert_int_equal(all[i][0], next); /* no gap, no overlap */
                    for (int64_t k = 0; k < all[i][1]; k++) {
                        while (!passes(f, next)) next++;
                        next++;
                    }
                    rows += all[i][1];
                }
                assert_int_equal(rows, expected_rows(f, 0));
                struct qv_scan_stats ss;
                assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
                assert_int_equal(ss.rows_output, rows);
                assert_int_equal(ss.batches, n);
                st.release(&st);
                pool_is_clean();
            }
}

/* ---- waits of a millisecond or two ---- */

struct waiter {
    struct ArrowArrayStream *st;
    int stop; /* atomic */
    int bad, calls;
};

static void *wait_main(void *arg) {
    struct waiter *w = arg;
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        int calls = __atomic_load_n(&w->calls, __ATOMIC_RELAXED);
        int rc = qv_scan_wait(w->st, 1 + calls % 2);
        if (rc != 0 && rc != ETIMEDOUT) w->bad = 1;
        __atomic_store_n(&w->calls, calls + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* One thread waits 1-2 ms in a loop (helping each time) while another
 * drains the stream: every row arrives once, in order; nothing hangs. And
 * the documented use: one thread alternating tiny waits with get_next. */
static void test_tiny_waits(void **state) {
    (void)state;
    for (int threads = 1; threads <= 4; threads++)
        for (int prefetch = 1; prefetch <= 3; prefetch += 2)
            for (int f = 0; f < 2; f++)
                for (int beside = 0; beside < 2; beside++) {
                    struct qv_scan_options o = {.columns = proj3, .n_columns = 3,
                                                .batch_rows = 500, .threads = threads,
                                                .prefetch = prefetch, .filter = filters[f]};
                    struct ArrowArrayStream st;
                    assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
                    struct waiter w = {.st = &st};
                    qv_thread th;
                    if (beside) {
                        assert_int_equal(qv_thread_create(&th, wait_main, &w), 0);
                        /* The waiter is in the scan before the drain starts. */
                        for (int i = 0; i < 60000 && !__atomic_load_n(&w.calls, __ATOMIC_ACQUIRE); i++)
                            nap_us(100);
                    }
                    struct drain d = {.f = f, .wait = beside ? WAIT_NONE : WAIT_TINY_STEPS};
                    int rc = drain_checked(&st, &d);
                    if (rc) fail_msg("get_next: %d %s", rc, st.get_last_error(&st));
                    assert_int_equal(d.rows, expected_rows(f, 0));
                    /* After the end, a wait does not block. */
                    assert_int_equal(qv_scan_wait(&st, 1), 0);
                    assert_int_equal(qv_scan_wait(&st, 0), 0);
                    if (beside) {
                        __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
                        qv_thread_join(th);
                        assert_int_equal(w.bad, 0);
                        assert_true(w.calls > 0);
                    }
                    st.release(&st);
                    pool_is_clean();
                }
}

/* Absurd timeouts: negative and zero return at once; the largest ones are a
 * wait until ready, not an overflow of the deadline (UBSan). */
static void test_absurd_timeouts(void **state) {
    (void)state;
    int64_t tms[] = {-1, INT64_MIN, 0, INT64_MAX, INT64_MAX / 1000, INT64_MAX / 1000000 + 1};
    for (size_t i = 0; i < sizeof tms / sizeof tms[0]; i++) {
        struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 500,
                                    .threads = 2, .filter = filters[1]};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        struct drain d = {.f = 1, .wait = tms[i] > 0 ? WAIT_READY : WAIT_ONCE, .wait_ms = tms[i]};
        assert_int_equal(drain_checked(&st, &d), 0);
        assert_int_equal(d.rows, expected_rows(1, 0));
        st.release(&st);
        pool_is_clean();
    }
}

/* Release right after a wait, at every point of the scan, batches kept past
 * the release: nothing leaks, nothing hangs. */
static void test_release_after_wait(void **state) {
    (void)state;
    for (int stop = 0; stop < 30; stop++) {
        struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 600,
                                    .threads = 1 + stop % 4, .prefetch = 1 + stop % 3,
                                    .filter = filters[stop % 4]};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        struct ArrowArray kept[4];
        int nk = 0;
        int64_t next = 0;
        for (int i = 0; i < stop / 4; i++) {
            int wrc = qv_scan_wait(&st, 1);
            assert_true(wrc == 0 || wrc == ETIMEDOUT);
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), 0);
            if (!b.release) break;
            assert_int_equal(batch_wrong(&b, stop % 4, &next), 0);
            if (nk < 4) kept[nk++] = b;
            else b.release(&b);
        }
        int rc = qv_scan_wait(&st, 1 + stop % 3);
        assert_true(rc == 0 || rc == ETIMEDOUT);
        st.release(&st);
        for (int i = 0; i < nk; i++) kept[i].release(&kept[i]);
        pool_is_clean();
    }
}

/* ---- a source that blocks or slows reads by thread ---- */

struct hsrc {
    qv_mutex mu;
    qv_cond cv;
    const uint8_t *bytes;
    size_t size;
    pthread_t consumer;
    int have_consumer;
    int block_all; /* every read blocks until `open` */
    int blocked, open;
    int gave_up; /* reads that left the gate closed after 60 s */
    long worker_nap_us; /* reads on other threads nap first */
    int consumer_reads;
};

static int hsrc_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    struct hsrc *h = ctx;
    qv_mutex_lock(&h->mu);
    int mine = h->have_consumer && pthread_equal(pthread_self(), h->consumer);
    long nap = mine ? 0 : h->worker_nap_us;
    if (mine) h->consumer_reads++;
    if (h->block_all) {
        h->blocked++;
        qv_cond_broadcast(&h->cv);
        /* Bounded: a lost wake-up fails an assertion, never hangs. */
        for (int i = 0; i < 600 && !h->open; i++) qv_cond_timedwait_ms(&h->cv, &h->mu, 100);
        if (!h->open) h->gave_up++;
    }
    qv_mutex_unlock(&h->mu);
    if (nap) nap_us(nap);
    if (off + len > h->size) return qv_error_set(err, EIO, "hsrc: read past the end");
    memcpy(buf, h->bytes + off, len);
    return 0;
}

static void hsrc_init(struct hsrc *h, const uint8_t *bytes, size_t size) {
    memset(h, 0, sizeof *h);
    qv_mutex_init(&h->mu);
    qv_cond_init(&h->cv);
    h->bytes = bytes;
    h->size = size;
}

static void hsrc_fini(struct hsrc *h) {
    qv_cond_destroy(&h->cv);
    qv_mutex_destroy(&h->mu);
}

static void hsrc_set_consumer(struct hsrc *h, pthread_t t, long worker_nap) {
    qv_mutex_lock(&h->mu);
    h->consumer = t;
    h->have_consumer = 1;
    h->worker_nap_us = worker_nap;
    qv_mutex_unlock(&h->mu);
}

static struct qv_reader *hsrc_reader(struct hsrc *h, const char *name) {
    struct qv_source src = {.ctx = h, .name = name, .size = h->size, .read_at = hsrc_read};
    struct qv_reader *r;
    assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &r, NULL), 0);
    return r;
}

struct consumer {
    struct ArrowArrayStream *st;
    struct hsrc *h;
    int rc, bad, ended, f;
    int poll;     /* waits of 50 ms until ready before each get_next, as Python does */
    int finished; /* under h->mu */
    int64_t rows;
};

static void consumer_done(struct consumer *c) {
    qv_mutex_lock(&c->h->mu);
    c->finished = 1;
    qv_cond_broadcast(&c->h->cv);
    qv_mutex_unlock(&c->h->mu);
}

static void *consume_main(void *arg) {
    struct consumer *c = arg;
    int64_t next = 0;
    for (;;) {
        if (c->poll) {
            int wrc;
            while ((wrc = qv_scan_wait(c->st, 50)) == ETIMEDOUT) {}
            if (wrc) c->bad = 1;
        }
        struct ArrowArray b;
        int rc = c->st->get_next(c->st, &b);
        if (rc) {
            c->rc = rc;
            consumer_done(c);
            return NULL;
        }
        if (!b.release) {
            c->ended = 1;
            consumer_done(c);
            return NULL;
        }
        if (batch_wrong(&b, c->f, &next)) c->bad = 1;
        c->rows += b.length;
        b.release(&b);
    }
}

/* Cancel while every read of the source blocks (a stuck network file): the
 * consumer, in get_next or in qv_scan_wait (Python's loop), helps only with
 * tasks that read nothing, so it is never inside a read: it returns
 * ECANCELED with the reads still blocked, every later call too, and release
 * joins cleanly once they return. (Before, the consumer took a column task
 * whose read blocked, and cancel could not reach it.) */
static void test_cancel_while_reads_block(void **state) {
    (void)state;
    for (int poll = 0; poll < 2; poll++)
        for (int threads = 1; threads <= 4; threads++)
            for (int f = 0; f < 2; f++) {
                struct hsrc h;
                hsrc_init(&h, fx.bytes, fx.size);
                struct qv_reader *r = hsrc_reader(&h, "hsrc.qvr");
                struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 700,
                                            .threads = threads, .prefetch = 1 + f,
                                            .filter = filters[f]};
                struct ArrowArrayStream st;
                assert_int_equal(qv_scan_open(r, &o, fx.res, &st, NULL), 0);
                struct consumer c = {.st = &st, .h = &h, .f = f, .poll = poll};
                qv_thread th;
                /* The consumer thread is named before it can read anything:
                 * it is created under the source's lock. */
                qv_mutex_lock(&h.mu);
                h.block_all = 1;
                assert_int_equal(qv_thread_create(&th, consume_main, &c), 0);
                h.consumer = th;
                h.have_consumer = 1;
                for (int i = 0; i < 600 && !h.blocked; i++) qv_cond_timedwait_ms(&h.cv, &h.mu, 100);
                int blocked = h.blocked;
                qv_mutex_unlock(&h.mu);
                assert_true(blocked > 0); /* a worker is inside a read */
                nap_us(5000);             /* the consumer is waiting (or helping) */
                assert_int_equal(qv_scan_cancel(&st), 0);
                qv_thread_join(th); /* with every read still blocked */
                qv_mutex_lock(&h.mu);
                int gave_up = h.gave_up, consumer_reads = h.consumer_reads;
                h.open = 1;
                qv_cond_broadcast(&h.cv);
                qv_mutex_unlock(&h.mu);
                assert_int_equal(gave_up, 0);        /* nobody waited out the gate */
                assert_int_equal(consumer_reads, 0); /* reads are the workers' */
                assert_int_equal(c.rc, ECANCELED);
                /* Rows before the cancel (the reader may hold some bytes
                 * from its open) arrived intact. */
                assert_int_equal(c.bad, 0);
                assert_true(c.rows <= expected_rows(f, 0));
                assert_non_null(strstr(st.get_last_error(&st), "cancelled"));
                struct ArrowArray b;
                assert_int_equal(st.get_next(&st, &b), ECANCELED);
                assert_null(b.release);
                assert_int_equal(qv_scan_wait(&st, 5), 0); /* cancelled: does not block */
                st.release(&st);
                pool_is_clean();
                qv_reader_close(r);
                hsrc_fini(&h);
            }
}

/* qv_scan_wait(1 ms) while every read blocks returns ETIMEDOUT without
 * reading itself (it used to take a column task and block in its read for
 * as long as the source did). */
static void test_wait_while_reads_block(void **state) {
    (void)state;
    for (int threads = 1; threads <= 4; threads++) {
        struct hsrc h;
        hsrc_init(&h, fx.bytes, fx.size);
        struct qv_reader *r = hsrc_reader(&h, "hsrc.qvr");
        struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 700,
                                    .threads = threads, .prefetch = 2};
        struct ArrowArrayStream st;
        qv_mutex_lock(&h.mu);
        h.block_all = 1;
        h.consumer = pthread_self();
        h.have_consumer = 1;
        qv_mutex_unlock(&h.mu);
        assert_int_equal(qv_scan_open(r, &o, fx.res, &st, NULL), 0);
        struct drain d = {.f = 0};
        for (int i = 0; i < 20; i++) {
            int rc = qv_scan_wait(&st, 1);
            if (rc == ETIMEDOUT) continue;
            /* Ready: bytes the reader kept from its open made a batch. */
            assert_int_equal(rc, 0);
            struct ArrowArray b;
            assert_int_equal(st.get_next(&st, &b), 0);
            if (!b.release) break;
            assert_int_equal(batch_wrong(&b, 0, &d.next), 0);
            d.rows += b.length;
            b.release(&b);
        }
        qv_mutex_lock(&h.mu);
        int gave_up = h.gave_up, consumer_reads = h.consumer_reads;
        h.open = 1;
        qv_cond_broadcast(&h.cv);
        qv_mutex_unlock(&h.mu);
        assert_int_equal(gave_up, 0);
        assert_int_equal(consumer_reads, 0);
        assert_int_equal(drain_checked(&st, &d), 0); /* and then the scan completes */
        assert_int_equal(d.rows, ROWS);
        st.release(&st);
        pool_is_clean();
        qv_reader_close(r);
        hsrc_fini(&h);
    }
}

/* A corrupt segment (column c of row group 2 of 6) while the consumer
 * helps (the workers' reads are slowed, so the consumer takes the decode
 * tasks of readers already loaded): every batch before the row group
 * arrives intact, the error comes at the synchronous scan's position naming
 * file, column and row group, nothing after it, and it stays; the consumer
 * never reads the source itself. */
static void test_error_in_a_consumer_task(void **state) {
    (void)state;
    uint8_t *copy = malloc(fx.size);
    assert_non_null(copy);
    int32_t ncol = (int32_t)qv_reader_schema(rd)->root.n_children;
    const int64_t g = 2;
    int consumer_reads = 0;
    for (int32_t c = 0; c < 3 && c < ncol; c++) {
        int32_t node = qv_reader_column_node(rd, c);
        struct qv_segment_info si;
        assert_int_equal(qv_reader_segment_info(rd, g, node, 0, &si, NULL), 0);
        assert_true(si.length >= 2);
        memcpy(copy, fx.bytes, fx.size);
        copy[si.offset + si.length / 2] ^= 0x5a;
        for (int f = 0; f < 2; f++) {
            int64_t ref = -1;
            int threads[] = {QV_SCAN_SYNC, 1, 2, 4};
            for (int t = 0; t < 4; t++) {
                struct hsrc h;
                hsrc_init(&h, copy, fx.size);
                struct qv_reader *bad = hsrc_reader(&h, "bad.qvr");
                hsrc_set_consumer(&h, pthread_self(), threads[t] > 0 ? 3000 : 0);
                struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 700,
                                            .threads = threads[t], .prefetch = 1 + c % 2,
                                            .filter = filters[f]};
                struct ArrowArrayStream st;
                assert_int_equal(qv_scan_open(bad, &o, fx.res, &st, NULL), 0);
                struct drain d = {.f = f};
                int rc = drain_checked(&st, &d);
                int64_t rows = d.rows;
                if (rc != EIO) fail_msg("column %d threads %d: rc %d", c, threads[t], rc);
                int64_t lo = 0, hi = 0, first = qv_reader_row_group_first_row(bad, g);
                for (int64_t i = 0; i < first + qv_reader_row_group_rows(bad, g); i++) {
                    lo += i < first && passes(f, i);
                    hi += passes(f, i);
                }
                if (ref < 0) ref = rows;
                if (rows != ref || rows < lo || rows >= hi)
                    fail_msg("column %d filter %d threads %d: %lld rows before the error, "
                             "synchronous %lld, row groups before %lld, with it %lld",
                             c, f, threads[t], (long long)rows, (long long)ref, (long long)lo,
                             (long long)hi);
                const char *msg = st.get_last_error(&st);
                char rgs[64];
                snprintf(rgs, sizeof rgs, "row group %lld", (long long)g);
                if (!msg || !strstr(msg, rgs) || !strstr(msg, "bad.qvr") ||
                    !strstr(msg, qv_reader_schema(rd)->root.children[c].name))
                    fail_msg("column %d: message '%s'", c, msg ? msg : "(none)");
                struct qv_error e;
                assert_int_equal(qv_scan_last_error(&st, &e), 0);
                assert_int_equal(e.code, EIO);
                struct ArrowArray b;
                assert_int_equal(st.get_next(&st, &b), EIO);
                assert_null(b.release);
                st.release(&st);
                pool_is_clean();
                qv_reader_close(bad);
                if (threads[t] > 0) consumer_reads += h.consumer_reads;
                hsrc_fini(&h);
            }
        }
    }
    assert_int_equal(consumer_reads, 0); /* reads are the workers' */
    free(copy);
}

/* A memory budget that runs out in a task (the consumer's or a worker's):
 * the scan either delivers every row correctly or fails with ENOMEM (kind
 * "out of memory") after intact batches; nothing leaks, nothing hangs. */
static void test_budget_full_in_a_task(void **state) {
    (void)state;
    int failed = 0, whole = 0;
    for (uint64_t limit = 64 << 10; limit <= (uint64_t)6 << 20; limit += limit / 3) {
        for (int threads = 1; threads <= 4; threads++) {
            struct qv_pool_options po = {.name = "tight", .limit = limit};
            struct qv_pool *pool;
            assert_int_equal(qv_pool_create(&po, &pool, NULL), 0);
            struct qv_reservation *res;
            assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
            int f = threads % 2;
            struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 1500,
                                        .threads = threads, .prefetch = 1 + threads % 3,
                                        .filter = filters[f]};
            struct ArrowArrayStream st;
            struct qv_error err;
            int rc = qv_scan_open(rd, &o, res, &st, &err);
            if (rc) {
                assert_int_equal(rc, ENOMEM);
            } else {
                /* Each batch is freed at once: only the scan's own bytes count. */
                struct drain d = {.f = f};
                rc = drain_checked(&st, &d);
                if (rc) {
                    if (rc != ENOMEM)
                        fail_msg("limit %llu threads %d: rc %d %s", (unsigned long long)limit,
                                 threads, rc, st.get_last_error(&st));
                    struct qv_error e;
                    assert_int_equal(qv_scan_last_error(&st, &e), 0);
                    assert_int_equal(e.kind, qv_error_kind_of(ENOMEM));
                    assert_non_null(st.get_last_error(&st));
                    struct ArrowArray b;
                    assert_int_equal(st.get_next(&st, &b), ENOMEM);
                    assert_null(b.release);
                    failed++;
                } else {
                    assert_int_equal(d.rows, expected_rows(f, 0));
                    whole++;
                }
                st.release(&st);
            }
            qv_reservation_destroy(res);
            struct qv_pool_stats ps;
            qv_pool_get_stats(pool, &ps);
            assert_int_equal(ps.reserved, 0); /* nothing leaked */
            assert_int_equal(ps.reservations, 0);
            qv_pool_destroy(pool);
        }
    }
    assert_true(failed > 0); /* the budget did run out somewhere */
    assert_true(whole > 0);  /* and sufficed somewhere */
}

/* ---- filter + max_rows against the synchronous scan, byte for byte ---- */

struct buf {
    uint8_t *p;
    size_t n, cap;
};

static void put(struct buf *b, const void *x, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}

static int bit(const uint8_t *bm, int64_t i) { return !bm || (bm[i / 8] >> (i % 8)) & 1; }

/* Every batch as bytes: its length, then per row id, v's validity and
 * value, s's validity and bytes. */
static void serialize(const struct ArrowArray *b, struct buf *out) {
    put(out, &b->length, sizeof b->length);
    const struct ArrowArray *ia = b->children[0], *v = b->children[1], *sa = b->children[2];
    for (int64_t r = 0; r < b->length; r++) {
        put(out, (const int64_t *)ia->buffers[1] + ia->offset + r, 8);
        uint8_t vb = (uint8_t)bit(v->buffers[0], v->offset + r);
        put(out, &vb, 1);
        if (vb) put(out, (const int32_t *)v->buffers[1] + v->offset + r, 4);
        uint8_t sb = (uint8_t)bit(sa->buffers[0], sa->offset + r);
        put(out, &sb, 1);
        if (sb) {
            const int32_t *o = (const int32_t *)sa->buffers[1] + sa->offset + r;
            int32_t len = o[1] - o[0];
            put(out, &len, 4);
            put(out, (const char *)sa->buffers[2] + o[0], (size_t)len);
        }
    }
}

static void scan_bytes(int threads, int prefetch, int f, int64_t max_rows, struct buf *out,
                       int wait_first) {
    struct qv_scan_options o = {.columns = proj3, .n_columns = 3, .batch_rows = 700,
                                .threads = threads, .prefetch = prefetch, .filter = filters[f],
                                .max_rows = max_rows};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
    out->n = 0;
    for (;;) {
        if (wait_first) {
            int rc = qv_scan_wait(&st, 1);
            assert_true(rc == 0 || rc == ETIMEDOUT);
        }
        struct ArrowArray b;
        int rc = st.get_next(&st, &b);
        if (rc) fail_msg("get_next: %d %s", rc, st.get_last_error(&st));
        if (!b.release) break;
        serialize(&b, out);
        b.release(&b);
    }
    struct qv_scan_stats ss;
    assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
    assert_true(ss.max_queued <= prefetch); /* the consumer's help keeps the bound */
    st.release(&st);
    pool_is_clean();
}

static void test_same_bytes_as_sync(void **state) {
    (void)state;
    const int64_t limits[] = {0, 1, 700, 701, 4321, ROWS};
    struct buf ref = {0}, got = {0};
    int k = 0;
    for (int f = 0; f < 4; f++)
        for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
            scan_bytes(QV_SCAN_SYNC, 1, f, limits[l], &ref, 0);
            int64_t rows = expected_rows(f, limits[l]);
            assert_true(ref.n >= (size_t)rows * 10);
            for (int threads = 1; threads <= 4; threads++)
                for (int prefetch = 1; prefetch <= 4; prefetch++, k++) {
                    scan_bytes(threads, prefetch, f, limits[l], &got, k % 3 == 0);
                    if (got.n != ref.n || memcmp(got.p, ref.p, ref.n))
                        fail_msg("filter %d max_rows %lld threads %d prefetch %d: %zu bytes, "
                                 "synchronous %zu, or different", f, (long long)limits[l],
                                 threads, prefetch, got.n, ref.n);
                }
        }
    free(ref.p);
    free(got.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_consumers_at_once),
        cmocka_unit_test(test_tiny_waits),
        cmocka_unit_test(test_absurd_timeouts),
        cmocka_unit_test(test_release_after_wait),
        cmocka_unit_test(test_cancel_while_reads_block),
        cmocka_unit_test(test_wait_while_reads_block),
        cmocka_unit_test(test_error_in_a_consumer_task),
        cmocka_unit_test(test_budget_full_in_a_task),
        cmocka_unit_test(test_same_bytes_as_sync),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
