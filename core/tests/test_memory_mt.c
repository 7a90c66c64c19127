/* Concurrency: two tasks x several threads on pools sharing one host; a
 * blocking host asked by many threads at once; spill racing reservation
 * free. Runs under ThreadSanitizer in the test command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_host.h"
#include "base/thread.h"
#include "quiver/memory.h"

#define MiB (UINT64_C(1) << 20)
#define THREADS 4

struct worker {
    struct qv_pool *pool;
    unsigned seed;
    int iterations;
    int ooms;
    int errors;
};

static void *hammer(void *arg) {
    struct worker *w = arg;
    struct qv_reservation *r;
    if (qv_reservation_create(w->pool, NULL, &r, NULL) != 0) {
        w->errors++;
        return NULL;
    }
    void *bufs[16] = {0};
    size_t sizes[16] = {0};
    for (int i = 0; i < w->iterations; i++) {
        int k = (int)(rand_r(&w->seed) % 16);
        if (bufs[k]) {
            qv_free(r, bufs[k], sizes[k]);
            bufs[k] = NULL;
        } else {
            size_t sz = (size_t)(rand_r(&w->seed) % (256 * 1024)) + 1;
            struct qv_error err;
            bufs[k] = qv_alloc(r, sz, &err);
            if (bufs[k]) sizes[k] = sz;
            else if (err.code == ENOMEM) w->ooms++;
            else w->errors++;
        }
    }
    for (int k = 0; k < 16; k++) qv_free(r, bufs[k], sizes[k]);
    if (qv_reservation_used(r) != 0) w->errors++;
    qv_reservation_destroy(r);
    return NULL;
}

static void test_two_tasks_hammering(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 24 * MiB);
    struct qv_pool *pools[2];
    for (int t = 0; t < 2; t++) {
        struct qv_pool_options o = {.name = t ? "task-b" : "task-a", .host = &h.host};
        assert_int_equal(qv_pool_create(&o, &pools[t], NULL), 0);
    }
    qv_thread th[2 * THREADS];
    struct worker w[2 * THREADS];
    for (int i = 0; i < 2 * THREADS; i++) {
        w[i] = (struct worker){pools[i % 2], (unsigned)i * 7919u + 1, 20000, 0, 0};
        assert_int_equal(qv_thread_create(&th[i], hammer, &w[i]), 0);
    }
    for (int i = 0; i < 2 * THREADS; i++) qv_thread_join(th[i]);
    for (int i = 0; i < 2 * THREADS; i++) assert_int_equal(w[i].errors, 0);
    for (int t = 0; t < 2; t++) {
        struct qv_pool_stats s;
        qv_pool_get_stats(pools[t], &s);
        assert_int_equal(s.reserved, 0);
        assert_int_equal(s.reservations, 0);
        assert_true(s.peak_reserved <= 24 * MiB);
        assert_int_equal(s.host_bytes_acquired - s.host_bytes_released, s.host_held);
        qv_pool_destroy(pools[t]);
    }
    assert_int_equal(fake_host_granted(&h), 0);
    assert_true(h.peak <= 24 * MiB);
    fake_host_destroy(&h);
}

struct crosser {
    struct qv_pool *pool;
    struct qv_reservation *r;
    int rc;
};

static void *cross_once(void *arg) {
    struct crosser *c = arg;
    c->rc = qv_reservation_grow(c->r, 100, NULL);
    return NULL;
}

static void test_blocking_host_no_reask_storm(void **state) {
    (void)state;
    /* A host that takes 20 ms per acquire: threads arriving while it is being
     * asked wait for the answer and re-check instead of all asking at once. */
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    h.delay_ms = 20;
    struct qv_pool_options o = {.name = "slow", .host = &h.host};
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    uint64_t before = h.acquires;
    struct crosser c[THREADS];
    qv_thread th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        c[i].pool = p;
        assert_int_equal(qv_reservation_create(p, NULL, &c[i].r, NULL), 0);
    }
    for (int i = 0; i < THREADS; i++) assert_int_equal(qv_thread_create(&th[i], cross_once, &c[i]), 0);
    for (int i = 0; i < THREADS; i++) qv_thread_join(th[i]);
    for (int i = 0; i < THREADS; i++) assert_int_equal(c[i].rc, 0);
    /* The pool holds nothing: the first thread asks for a block; the others
     * wait for its answer and find room in that block, which the four
     * reservations share. Exactly one ask, however the threads interleave. */
    assert_int_equal(h.acquires - before, 1);
    for (int i = 0; i < THREADS; i++) qv_reservation_destroy(c[i].r);
    qv_pool_destroy(p);
    assert_int_equal(fake_host_granted(&h), 0);
    fake_host_destroy(&h);
}

struct spiller {
    qv_mutex lock;
    struct qv_reservation *r;
    void *buf;
    size_t size;
};

/* Set on the owner's thread while it allocates holding its lock. */
static _Thread_local int tl_owner_allocating;

static uint64_t spill_locked(void *ctx, struct qv_reservation *r, uint64_t wanted) {
    struct spiller *s = ctx;
    (void)wanted;
    /* The owner's own grow can ask it to spill (the requester is asked
     * last). It holds its lock then and owns no buffer: nothing to give,
     * and taking the lock again would deadlock the consumer on itself. */
    if (tl_owner_allocating) return 0;
    qv_mutex_lock(&s->lock);
    uint64_t freed = 0;
    if (s->buf) {
        qv_free(r, s->buf, s->size);
        s->buf = NULL;
        freed = qv_align_up(s->size);
        qv_reservation_release_slack(r);
    }
    qv_mutex_unlock(&s->lock);
    return freed;
}

static void *spill_owner(void *arg) {
    struct spiller *s = arg;
    for (int i = 0; i < 2000; i++) {
        qv_mutex_lock(&s->lock);
        if (!s->buf) {
            s->size = 512 * 1024;
            tl_owner_allocating = 1;
            s->buf = qv_alloc(s->r, s->size, NULL);
            tl_owner_allocating = 0;
            if (!s->buf) qv_reservation_release_slack(s->r);
        }
        qv_mutex_unlock(&s->lock);
    }
    return NULL;
}

static void test_spill_across_threads(void **state) {
    (void)state;
    struct qv_pool_options o = {.name = "tight", .limit = 2 * MiB, .block_size = 64 * 1024};
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    struct spiller s = {0};
    qv_mutex_init(&s.lock);
    struct qv_reservation_options ro = {"cache", 1, spill_locked, &s};
    assert_int_equal(qv_reservation_create(p, &ro, &s.r, NULL), 0);
    qv_thread owner;
    assert_int_equal(qv_thread_create(&owner, spill_owner, &s), 0);
    struct qv_reservation *req;
    assert_int_equal(qv_reservation_create(p, NULL, &req, NULL), 0);
    int ok = 0;
    for (int i = 0; i < 2000; i++) {
        void *b = qv_alloc(req, 1536 * 1024, NULL);
        if (b) {
            ok++;
            qv_free(req, b, 1536 * 1024);
            qv_reservation_release_slack(req);
        }
    }
    qv_thread_join(owner);
    assert_true(ok > 0);
    qv_mutex_lock(&s.lock);
    if (s.buf) qv_free(s.r, s.buf, s.size);
    qv_mutex_unlock(&s.lock);
    qv_reservation_destroy(s.r);
    qv_reservation_destroy(req);
    struct qv_pool_stats st;
    qv_pool_get_stats(p, &st);
    assert_int_equal(st.reserved, 0);
    assert_true(st.peak_reserved <= 2 * MiB);
    qv_pool_destroy(p);
    qv_mutex_destroy(&s.lock);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_tasks_hammering),
        cmocka_unit_test(test_blocking_host_no_reask_storm),
        cmocka_unit_test(test_spill_across_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
