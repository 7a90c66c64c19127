/* qv_pool_release_unused against other threads: it does not wait for a
 * grow that is inside the host's acquire, and it runs while other threads
 * grow, shrink and spill on the same pool, leaving the pool's books and the
 * host's in agreement. Runs under ThreadSanitizer (label concurrency). */
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
#define KiB (UINT64_C(1) << 10)

/* Waits until *flag is set (under lock/cond) for at most `seconds`; a
 * deadlock fails the test at once instead of hanging it (a thread stuck in
 * a deadlock cannot be joined, so the test aborts). */
static void wait_flag_or_abort(qv_mutex *lock, qv_cond *cond, const int *flag, int seconds,
                               const char *what) {
    qv_mutex_lock(lock);
    for (int i = 0; !*flag && i < seconds * 10; i++) qv_cond_timedwait_ms(cond, lock, 100);
    int ok = *flag;
    qv_mutex_unlock(lock);
    if (!ok) {
        print_error("%s did not happen within %d s\n", what, seconds);
        abort();
    }
}

/* ---- A grow in flight ---- */

struct gated_host {
    struct fake_host fake;
    qv_mutex lock;
    qv_cond cond;
    int inside; /* a thread is in acquire */
    int open;   /* acquire may return */
};

static uint64_t gated_acquire(void *ctx, uint64_t bytes) {
    struct gated_host *g = ctx;
    qv_mutex_lock(&g->lock);
    g->inside = 1;
    qv_cond_broadcast(&g->cond);
    /* Bounded: the test opens the gate long before; a bug that never opens
     * it must not hang the test. */
    for (int i = 0; !g->open && i < 300; i++) qv_cond_timedwait_ms(&g->cond, &g->lock, 100);
    qv_mutex_unlock(&g->lock);
    return g->fake.host.acquire(&g->fake, bytes);
}

static void gated_release(void *ctx, uint64_t bytes) {
    struct gated_host *g = ctx;
    g->fake.host.release(&g->fake, bytes);
}

struct grow_job {
    struct qv_reservation *r;
    int rc;
};

static void *grow_job(void *arg) {
    struct grow_job *j = arg;
    j->rc = qv_reservation_grow(j->r, 3 * MiB, NULL);
    return NULL;
}

struct release_job {
    struct qv_pool *pool;
    uint64_t got;
    qv_mutex lock;
    qv_cond cond;
    int done;
};

static void *release_job(void *arg) {
    struct release_job *j = arg;
    uint64_t got = qv_pool_release_unused(j->pool, 0);
    qv_mutex_lock(&j->lock);
    j->got = got;
    j->done = 1;
    qv_cond_broadcast(&j->cond);
    qv_mutex_unlock(&j->lock);
    return NULL;
}

static void test_does_not_wait_for_grow_in_flight(void **state) {
    (void)state;
    struct gated_host g = {0};
    fake_host_init(&g.fake, FAKE_FULL, 0);
    qv_mutex_init(&g.lock);
    qv_cond_init(&g.cond);
    g.open = 1; /* the first grow passes: surplus for the release to find */
    struct qv_pool_host host = {&g, gated_acquire, gated_release, NULL, NULL};
    struct qv_pool_options o = {.name = "gated", .host = &host, .block_size = 1 * MiB};
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    struct qv_reservation *a, *b;
    assert_int_equal(qv_reservation_create(p, NULL, &a, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &b, NULL), 0);
    assert_int_equal(qv_reservation_grow(a, 2 * MiB, NULL), 0);
    qv_reservation_shrink(a, 2 * MiB - 1000); /* leaves host memory the pool keeps */
    struct qv_pool_stats s;
    qv_pool_get_stats(p, &s);
    assert_true(s.host_held > s.reserved);

    /* b's grow enters the host and stays there. */
    qv_mutex_lock(&g.lock);
    g.open = 0;
    g.inside = 0;
    qv_mutex_unlock(&g.lock);
    struct grow_job gj = {b, -1};
    qv_thread gt;
    assert_int_equal(qv_thread_create(&gt, grow_job, &gj), 0);
    wait_flag_or_abort(&g.lock, &g.cond, &g.inside, 30, "the grow entering the host");

    /* Meanwhile the release returns, with the surplus it found. */
    struct release_job rj = {.pool = p};
    qv_mutex_init(&rj.lock);
    qv_cond_init(&rj.cond);
    qv_thread rt;
    assert_int_equal(qv_thread_create(&rt, release_job, &rj), 0);
    wait_flag_or_abort(&rj.lock, &rj.cond, &rj.done, 10,
                       "qv_pool_release_unused during a grow in flight");
    qv_thread_join(rt);
    qv_mutex_lock(&g.lock);
    int still_inside = !g.open;
    g.open = 1;
    qv_cond_broadcast(&g.cond);
    qv_mutex_unlock(&g.lock);
    assert_true(still_inside);
    assert_true(rj.got > 0);
    qv_thread_join(gt);
    assert_int_equal(gj.rc, 0);
    assert_true(qv_reservation_held(b) >= 3 * MiB);
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.host_bytes_acquired - s.host_bytes_released, s.host_held);
    assert_int_equal(fake_host_granted(&g.fake), s.host_held);
    qv_reservation_shrink(a, qv_reservation_used(a));
    qv_reservation_shrink(b, qv_reservation_used(b));
    qv_reservation_destroy(a);
    qv_reservation_destroy(b);
    qv_pool_destroy(p);
    assert_int_equal(fake_host_granted(&g.fake), 0);
    qv_cond_destroy(&rj.cond);
    qv_mutex_destroy(&rj.lock);
    qv_cond_destroy(&g.cond);
    qv_mutex_destroy(&g.lock);
    fake_host_destroy(&g.fake);
}

/* ---- Growing, shrinking and spilling on other threads ---- */

#define WORKERS 3

struct hammer {
    struct qv_pool *pool;
    unsigned seed;
    int errors;
};

static void *hammer(void *arg) {
    struct hammer *w = arg;
    struct qv_reservation *r;
    if (qv_reservation_create(w->pool, NULL, &r, NULL) != 0) {
        w->errors++;
        return NULL;
    }
    void *bufs[8] = {0};
    size_t sizes[8] = {0};
    for (int i = 0; i < 4000; i++) {
        int k = (int)(rand_r(&w->seed) % 8);
        if (bufs[k]) {
            qv_free(r, bufs[k], sizes[k]);
            bufs[k] = NULL;
        } else {
            /* Large enough for the block cache half of the time. */
            size_t sz = (size_t)(rand_r(&w->seed) % (512 * 1024)) + 1;
            struct qv_error err;
            bufs[k] = qv_alloc(r, sz, &err);
            if (bufs[k]) sizes[k] = sz;
            else if (err.code != ENOMEM) w->errors++;
        }
    }
    for (int k = 0; k < 8; k++) qv_free(r, bufs[k], sizes[k]);
    if (qv_reservation_used(r) != 0) w->errors++;
    qv_reservation_destroy(r);
    return NULL;
}

struct spiller {
    qv_mutex lock;
    struct qv_reservation *r;
    void *buf;
    size_t size;
    uint64_t spilled;
};

static _Thread_local int tl_owner_allocating;

static uint64_t spill_cb(void *ctx, struct qv_reservation *r, uint64_t wanted) {
    struct spiller *s = ctx;
    (void)wanted;
    /* The owner asked itself (it is the requester, asked last) while it
     * holds its lock: nothing of its own to give. */
    if (tl_owner_allocating) return 0;
    qv_mutex_lock(&s->lock);
    uint64_t freed = 0;
    if (s->buf) {
        qv_free(r, s->buf, s->size);
        s->buf = NULL;
        freed = s->size;
        s->spilled += freed;
        qv_reservation_release_slack(r);
    }
    qv_mutex_unlock(&s->lock);
    return freed;
}

static void *spill_owner(void *arg) {
    struct spiller *s = arg;
    for (int i = 0; i < 4000; i++) {
        qv_mutex_lock(&s->lock);
        if (!s->buf) {
            tl_owner_allocating = 1;
            s->buf = qv_alloc(s->r, s->size, NULL);
            tl_owner_allocating = 0;
            if (!s->buf) qv_reservation_release_slack(s->r);
        }
        qv_mutex_unlock(&s->lock);
    }
    return NULL;
}

struct releaser {
    struct qv_pool *pool;
    unsigned seed;
    uint64_t released, calls;
    qv_mutex lock;
    qv_cond cond;
    int done;
};

static void *releaser(void *arg) {
    struct releaser *rl = arg;
    for (int i = 0; i < 2000; i++) {
        uint64_t wanted = rand_r(&rl->seed) % 4 == 0 ? 0 : (uint64_t)(rand_r(&rl->seed) % (2 * MiB));
        rl->released += qv_pool_release_unused(rl->pool, wanted);
        rl->calls++;
    }
    qv_mutex_lock(&rl->lock);
    rl->done = 1;
    qv_cond_broadcast(&rl->cond);
    qv_mutex_unlock(&rl->lock);
    return NULL;
}

static void test_concurrent_grow_shrink_spill(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 16 * MiB);
    struct qv_pool_options o = {.name = "busy", .host = &h.host, .block_size = 256 * KiB};
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    struct spiller sp = {.size = 1 * MiB};
    qv_mutex_init(&sp.lock);
    struct qv_reservation_options ro = {"spillable", 1, spill_cb, &sp};
    assert_int_equal(qv_reservation_create(p, &ro, &sp.r, NULL), 0);

    qv_thread th[WORKERS + 2];
    struct hammer w[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (struct hammer){p, (unsigned)i * 7919u + 3, 0};
        assert_int_equal(qv_thread_create(&th[i], hammer, &w[i]), 0);
    }
    assert_int_equal(qv_thread_create(&th[WORKERS], spill_owner, &sp), 0);
    struct releaser rl = {.pool = p, .seed = 17};
    qv_mutex_init(&rl.lock);
    qv_cond_init(&rl.cond);
    assert_int_equal(qv_thread_create(&th[WORKERS + 1], releaser, &rl), 0);
    /* A deadlock between the release and the grows fails here. */
    wait_flag_or_abort(&rl.lock, &rl.cond, &rl.done, 120, "2000 release calls amid growing threads");
    for (int i = 0; i < WORKERS + 2; i++) qv_thread_join(th[i]);
    for (int i = 0; i < WORKERS; i++) assert_int_equal(w[i].errors, 0);
    assert_int_equal(rl.calls, 2000);
    assert_true(rl.released > 0);

    qv_mutex_lock(&sp.lock);
    if (sp.buf) qv_free(sp.r, sp.buf, sp.size);
    sp.buf = NULL;
    qv_mutex_unlock(&sp.lock);
    qv_reservation_destroy(sp.r);
    struct qv_pool_stats s;
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, 0);
    assert_int_equal(s.host_bytes_acquired - s.host_bytes_released, s.host_held);
    assert_int_equal(fake_host_granted(&h), s.host_held);
    assert_true(h.peak <= 16 * MiB);
    /* Quiescent now: everything the pool still holds can go. */
    qv_pool_release_unused(p, 0);
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.host_held, 0);
    assert_int_equal(s.cache_bytes, 0);
    assert_int_equal(fake_host_granted(&h), 0);
    qv_pool_destroy(p);
    assert_int_equal(h.finishes, 1);
    qv_cond_destroy(&rl.cond);
    qv_mutex_destroy(&rl.lock);
    qv_mutex_destroy(&sp.lock);
    fake_host_destroy(&h);
}

/* Pool references dropped from several threads at once: one destroy, one
 * finish, whoever is last. */
static void *drop_ref(void *arg) {
    qv_pool_destroy(arg);
    return NULL;
}

static void test_references_across_threads(void **state) {
    (void)state;
    for (int round = 0; round < 50; round++) {
        struct fake_host h;
        fake_host_init(&h, FAKE_FULL, 0);
        struct qv_pool_options o = {.name = "shared", .host = &h.host};
        struct qv_pool *p;
        assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
        struct qv_reservation *r;
        assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
        assert_int_equal(qv_reservation_grow(r, 100 * KiB, NULL), 0);
        qv_reservation_shrink(r, 100 * KiB);
        qv_reservation_destroy(r);
        qv_thread t[4];
        for (int i = 0; i < 3; i++) qv_pool_retain(p);
        for (int i = 0; i < 4; i++) assert_int_equal(qv_thread_create(&t[i], drop_ref, p), 0);
        for (int i = 0; i < 4; i++) qv_thread_join(t[i]);
        assert_int_equal(h.finishes, 1);
        assert_int_equal(fake_host_granted(&h), 0);
        fake_host_destroy(&h);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_does_not_wait_for_grow_in_flight),
        cmocka_unit_test(test_concurrent_grow_shrink_spill),
        cmocka_unit_test(test_references_across_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
