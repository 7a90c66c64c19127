/* Giving memory back on request (qv_pool_release_unused) and pool
 * references (qv_pool_retain, the host's finish): the block cache evicted,
 * surplus blocks returned, spill callbacks run largest first and their
 * bytes counted, "all that can go", an own-limit pool, a call from inside
 * the pool's own host acquire, and a pool outliving its creator's destroy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_host.h"
#include "base/thread.h"
#include "quiver/memory.h"

#define MiB (UINT64_C(1) << 20)
#define KiB (UINT64_C(1) << 10)

static struct qv_pool *pool_host(struct fake_host *h, uint64_t block, int no_cache) {
    struct qv_pool *p = NULL;
    struct qv_pool_options o = {.name = "task", .host = &h->host, .block_size = block,
                                .no_block_cache = no_cache};
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    return p;
}

static struct qv_pool_stats stats(struct qv_pool *p) {
    struct qv_pool_stats s;
    qv_pool_get_stats(p, &s);
    return s;
}

/* The pool's books and the host's agree: what the pool says it holds is
 * what the host has granted it. */
static void check_books(struct qv_pool *p, struct fake_host *h) {
    struct qv_pool_stats s = stats(p);
    assert_int_equal(s.host_bytes_acquired - s.host_bytes_released, s.host_held);
    assert_int_equal(fake_host_granted(h), s.host_held);
    assert_true(s.host_held >= s.reserved + s.cache_bytes);
}

static void test_cache_eviction_returns_bytes(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    struct qv_pool *p = pool_host(&h, 64 * KiB, 0);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    void *b[8];
    for (int i = 0; i < 8; i++) assert_non_null(b[i] = qv_alloc(r, 256 * KiB, NULL));
    for (int i = 0; i < 8; i++) qv_free(r, b[i], 256 * KiB);
    struct qv_pool_stats s = stats(p);
    /* Freed large blocks stay in the cache, charged to the host (as far
     * as the host memory the pool kept allows). */
    uint64_t cached = s.cache_bytes;
    assert_true(cached >= 1 * MiB);
    uint64_t before = s.host_held;
    assert_true(before >= s.reserved + cached);

    /* A little wanted: the cache goes only as far as needed, in whole blocks. */
    uint64_t got = qv_pool_release_unused(p, 100 * KiB);
    assert_true(got >= 100 * KiB);
    assert_true(got < before - s.reserved);
    s = stats(p);
    assert_true(s.cache_bytes >= cached - 256 * KiB); /* one block at most */
    assert_int_equal(s.host_held, before - got);
    check_books(p, &h);

    /* Everything: the cache is empty and only what the reservation holds stays. */
    uint64_t rest = qv_pool_release_unused(p, 0);
    s = stats(p);
    assert_int_equal(s.cache_bytes, 0);
    assert_int_equal(s.host_held, s.reserved);
    assert_int_equal(got + rest, before - s.reserved);
    check_books(p, &h);
    /* Nothing left to give: a second call returns 0 and calls nobody. */
    uint64_t calls = s.host_release_calls;
    assert_int_equal(qv_pool_release_unused(p, 0), 0);
    assert_int_equal(stats(p).host_release_calls, calls);
    /* The pool still works afterwards. */
    void *again = qv_alloc(r, 256 * KiB, NULL);
    assert_non_null(again);
    qv_free(r, again, 256 * KiB);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    assert_int_equal(fake_host_granted(&h), 0);
    fake_host_destroy(&h);
}

static void test_slack_returned(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    struct qv_pool *p = pool_host(&h, 1 * MiB, 1);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    /* 2.5 MiB used, then 2 MiB of it freed: the pool keeps host blocks it
     * does not need (its hysteresis) until someone asks for them. */
    assert_int_equal(qv_reservation_grow(r, 2 * MiB + 512 * KiB, NULL), 0);
    qv_reservation_shrink(r, 2 * MiB);
    struct qv_pool_stats s = stats(p);
    assert_true(s.host_held > s.reserved);
    uint64_t slack = s.host_held - s.reserved;
    assert_true(slack >= 1 * MiB);
    uint64_t calls = s.host_release_calls;
    assert_int_equal(qv_pool_release_unused(p, 0), slack);
    s = stats(p);
    assert_int_equal(s.host_held, s.reserved);
    assert_int_equal(s.host_release_calls, calls + 1); /* one call to the host */
    check_books(p, &h);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    fake_host_destroy(&h);
}

/* A spillable consumer holding one buffer, recording when it was asked. */
struct spillable {
    struct qv_reservation *r;
    void *buf;
    size_t size;
    int order; /* 0: not called; else the position it was called in */
    uint64_t asked;
};
static int g_calls;

static uint64_t spill_buf(void *ctx, struct qv_reservation *r, uint64_t wanted) {
    struct spillable *s = ctx;
    s->order = ++g_calls;
    s->asked = wanted;
    if (!s->buf) return 0;
    qv_free(r, s->buf, s->size);
    s->buf = NULL;
    qv_reservation_release_slack(r);
    return s->size;
}

static void make_spillable(struct qv_pool *p, struct spillable *s, const char *name, size_t size) {
    memset(s, 0, sizeof *s);
    struct qv_reservation_options o = {.name = name, .can_spill = 1, .spill = spill_buf,
                                       .spill_ctx = s};
    assert_int_equal(qv_reservation_create(p, &o, &s->r, NULL), 0);
    s->size = size;
    assert_non_null(s->buf = qv_alloc(s->r, size, NULL));
}

static void drop_spillable(struct spillable *s) {
    if (s->buf) qv_free(s->r, s->buf, s->size);
    qv_reservation_destroy(s->r);
}

static void test_spill_callbacks_largest_first(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    struct qv_pool *p = pool_host(&h, 1 * MiB, 1);
    struct spillable small, big, mid;
    make_spillable(p, &small, "small", 1 * MiB);
    make_spillable(p, &big, "big", 3 * MiB);
    make_spillable(p, &mid, "mid", 2 * MiB);
    /* An unspillable consumer is never asked. */
    struct qv_reservation *fixed;
    assert_int_equal(qv_reservation_create(p, NULL, &fixed, NULL), 0);
    assert_int_equal(qv_reservation_grow(fixed, 1 * MiB, NULL), 0);
    check_books(p, &h);
    g_calls = 0;
    uint64_t held_before = stats(p).host_held;
    uint64_t spills_before = stats(p).spill_calls;

    /* 2.5 MiB wanted: the largest consumer alone covers it. */
    uint64_t got = qv_pool_release_unused(p, 2 * MiB + 512 * KiB);
    assert_true(got >= 2 * MiB + 512 * KiB);
    assert_int_equal(big.order, 1);
    assert_true(big.asked >= 2 * MiB); /* told (about) what is still wanted */
    assert_int_equal(mid.order, 0);
    assert_int_equal(small.order, 0);
    assert_null(big.buf);
    assert_int_equal(stats(p).host_held, held_before - got);
    assert_int_equal(stats(p).spill_calls, spills_before + 1);
    check_books(p, &h);

    /* All: the rest, largest first; only the fixed consumer's memory stays. */
    uint64_t rest = qv_pool_release_unused(p, 0);
    assert_int_equal(mid.order, 2);
    assert_int_equal(small.order, 3);
    assert_true(rest >= 3 * MiB);
    struct qv_pool_stats s = stats(p);
    assert_int_equal(s.host_held, s.reserved);
    assert_int_equal(s.reserved, qv_reservation_held(fixed));
    check_books(p, &h);

    drop_spillable(&small);
    drop_spillable(&big);
    drop_spillable(&mid);
    qv_reservation_shrink(fixed, 1 * MiB);
    qv_reservation_destroy(fixed);
    qv_pool_destroy(p);
    assert_int_equal(fake_host_granted(&h), 0);
    fake_host_destroy(&h);
}

static void test_own_limit_pool(void **state) {
    (void)state;
    /* No host: nothing goes back anywhere (0), but the cache is freed and
     * no consumer is asked to spill. */
    struct qv_pool *p;
    struct qv_pool_options o = {.name = "own", .limit = 64 * MiB};
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    struct spillable s;
    make_spillable(p, &s, "s", 1 * MiB);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    void *b = qv_alloc(r, 512 * KiB, NULL);
    assert_non_null(b);
    qv_free(r, b, 512 * KiB);
    assert_int_equal(stats(p).cache_bytes, 512 * KiB);
    g_calls = 0;
    assert_int_equal(qv_pool_release_unused(p, 0), 0);
    assert_int_equal(stats(p).cache_bytes, 0);
    assert_int_equal(s.order, 0);
    assert_non_null(s.buf);
    qv_reservation_destroy(r);
    drop_spillable(&s);
    qv_pool_destroy(p);
    assert_int_equal(qv_pool_release_unused(NULL, 0), 0);
}

/* ---- From inside the pool's own host acquire ----
 * Spark's acquireMemory may ask the requesting consumer itself to spill, on
 * the requesting thread, while the pool is inside its host call. */
struct reentrant_host {
    struct fake_host fake;
    struct qv_pool *pool;
    uint64_t released_inside;
    int inside;
};

static uint64_t reentrant_acquire(void *ctx, uint64_t bytes) {
    struct reentrant_host *h = ctx;
    /* A budget of 4 MiB: short, it frees memory of its own consumer first. */
    uint64_t granted = fake_host_granted(&h->fake);
    if (granted + bytes > 4 * MiB) {
        h->inside++;
        h->released_inside += qv_pool_release_unused(h->pool, granted + bytes - 4 * MiB);
    }
    return h->fake.host.acquire(&h->fake, bytes);
}

static void reentrant_release(void *ctx, uint64_t bytes) {
    struct reentrant_host *h = ctx;
    h->fake.host.release(&h->fake, bytes);
}

struct grower {
    struct qv_pool *pool;
    struct qv_reservation *r;
    void *buf;
    qv_mutex lock;
    qv_cond cond;
    int done;
};

static void *grow_in_thread(void *arg) {
    struct grower *g = arg;
    g->buf = qv_alloc(g->r, 2 * MiB, NULL);
    qv_mutex_lock(&g->lock);
    g->done = 1;
    qv_cond_broadcast(&g->cond);
    qv_mutex_unlock(&g->lock);
    return NULL;
}

static void test_called_from_host_acquire(void **state) {
    (void)state;
    struct reentrant_host h = {0};
    fake_host_init(&h.fake, FAKE_FULL, 4 * MiB);
    struct qv_pool_host host = {&h, reentrant_acquire, reentrant_release, NULL, NULL};
    struct qv_pool_options o = {.name = "spark", .host = &host, .block_size = 1 * MiB};
    assert_int_equal(qv_pool_create(&o, &h.pool, NULL), 0);
    struct spillable s;
    make_spillable(h.pool, &s, "sorter", 3 * MiB);
    struct grower g = {.pool = h.pool};
    qv_mutex_init(&g.lock);
    qv_cond_init(&g.cond);
    assert_int_equal(qv_reservation_create(h.pool, NULL, &g.r, NULL), 0);
    g_calls = 0;
    /* The grow runs in a thread so that a deadlock fails the test instead
     * of hanging it: 10 s is thousands of times what it needs. */
    qv_thread t;
    assert_int_equal(qv_thread_create(&t, grow_in_thread, &g), 0);
    qv_mutex_lock(&g.lock);
    for (int waited = 0; !g.done && waited < 100; waited++) qv_cond_timedwait_ms(&g.cond, &g.lock, 100);
    int done = g.done;
    qv_mutex_unlock(&g.lock);
    if (!done) {
        print_error("qv_pool_release_unused from inside the host acquire did not return in 10 s\n");
        abort(); /* a deadlocked thread cannot be joined */
    }
    qv_thread_join(t);
    assert_non_null(g.buf);
    assert_true(h.inside >= 1);
    assert_int_equal(s.order, 1); /* the sorter spilled, from inside the acquire */
    assert_true(h.released_inside >= 1 * MiB);
    assert_true(fake_host_granted(&h.fake) <= 4 * MiB);
    struct qv_pool_stats st = stats(h.pool);
    assert_int_equal(st.host_bytes_acquired - st.host_bytes_released, st.host_held);
    assert_int_equal(fake_host_granted(&h.fake), st.host_held);
    qv_free(g.r, g.buf, 2 * MiB);
    qv_reservation_destroy(g.r);
    drop_spillable(&s);
    qv_pool_destroy(h.pool);
    assert_int_equal(fake_host_granted(&h.fake), 0);
    qv_cond_destroy(&g.cond);
    qv_mutex_destroy(&g.lock);
    fake_host_destroy(&h.fake);
}

/* A host that refuses with a reason: the reason is in the pool's
 * out-of-memory message. */
static uint64_t refusing_acquire(void *ctx, uint64_t bytes) {
    (void)ctx;
    (void)bytes;
    return 0;
}
static void refusing_release(void *ctx, uint64_t bytes) {
    (void)ctx;
    (void)bytes;
}
static void refusing_describe(void *ctx, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", (const char *)ctx);
}

static void test_host_reason_in_message(void **state) {
    (void)state;
    char reason[] = "IllegalStateException: budget closed";
    struct qv_pool_host host = {reason, refusing_acquire, refusing_release, NULL, refusing_describe};
    struct qv_pool_options o = {.name = "refused", .host = &host};
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    struct qv_error err;
    assert_int_equal(qv_reservation_grow(r, 1000, &err), ENOMEM);
    assert_non_null(strstr(err.message, "pool 'refused'"));
    assert_non_null(strstr(err.message, "(host: IllegalStateException: budget closed)"));
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

/* ---- References ---- */

static void test_retain_outlives_destroy(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    struct qv_pool *p = pool_host(&h, 1 * MiB, 0);
    assert_ptr_equal(qv_pool_retain(p), p);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    void *b = qv_alloc(r, 300 * KiB, NULL);
    assert_non_null(b);
    /* The creator drops its reference: the pool lives on for the other. */
    qv_pool_destroy(p);
    assert_int_equal(h.finishes, 0);
    assert_true(fake_host_granted(&h) > 0);
    qv_free(r, b, 300 * KiB);
    assert_non_null(b = qv_alloc(r, 100, NULL));
    qv_free(r, b, 100);
    qv_reservation_destroy(r);
    assert_int_equal(h.finishes, 0);
    /* The last reference: host memory goes back, then finish, once. */
    qv_pool_destroy(p);
    assert_int_equal(fake_host_granted(&h), 0);
    assert_int_equal(h.finishes, 1);
    fake_host_destroy(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_eviction_returns_bytes),
        cmocka_unit_test(test_slack_returned),
        cmocka_unit_test(test_spill_callbacks_largest_first),
        cmocka_unit_test(test_own_limit_pool),
        cmocka_unit_test(test_called_from_host_acquire),
        cmocka_unit_test(test_retain_outlives_destroy),
        cmocka_unit_test(test_host_reason_in_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
