/* The pool: limits, block batching, hysteresis, hosts (full, partial, zero,
 * shared), statistics and acquire-failure injection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fake_host.h"
#include "quiver/memory.h"

#define MiB (UINT64_C(1) << 20)

static struct qv_pool *pool_limit(uint64_t limit) {
    struct qv_pool *p = NULL;
    struct qv_pool_options o = {.name = "test", .limit = limit};
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    return p;
}

static struct qv_pool *pool_host(struct fake_host *h, const char *name) {
    struct qv_pool *p = NULL;
    struct qv_pool_options o = {.name = name, .host = &h->host};
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    return p;
}

static struct qv_reservation *res(struct qv_pool *p, const char *name) {
    struct qv_reservation *r = NULL;
    struct qv_reservation_options o = {.name = name};
    assert_int_equal(qv_reservation_create(p, &o, &r, NULL), 0);
    return r;
}

static void test_create_rejects_bad_options(void **state) {
    (void)state;
    struct qv_pool *p = (struct qv_pool *)1;
    struct qv_error err;
    struct qv_pool_host bad = {NULL, NULL, NULL};
    struct qv_pool_options o = {.name = "bad", .host = &bad};
    assert_int_equal(qv_pool_create(&o, &p, &err), EINVAL);
    assert_null(p);
    assert_non_null(strstr(err.message, "'bad'"));
    assert_int_equal(qv_pool_create(NULL, NULL, &err), EINVAL);
}

static void test_block_batching(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(0);
    struct qv_reservation *r = res(p, "r");
    struct qv_pool_stats s;
    assert_int_equal(qv_reservation_grow(r, 100, NULL), 0);
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, MiB); /* one whole block */
    assert_int_equal(qv_reservation_held(r), MiB);
    /* Inside the block: the pool does not move. */
    for (int i = 0; i < 1000; i++) assert_int_equal(qv_reservation_grow(r, 1000, NULL), 0);
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, MiB);
    assert_int_equal(qv_reservation_used(r), 100 + 1000 * 1000);
    /* Crossing: exactly one more block. */
    assert_int_equal(qv_reservation_grow(r, 100000, NULL), 0);
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, 2 * MiB);
    assert_int_equal(s.peak_reserved, 2 * MiB);
    assert_int_equal(s.reservations, 1);
    qv_reservation_free(r);
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, 0);
    assert_int_equal(s.reservations, 0);
    qv_pool_destroy(p);
}

static void test_release_hysteresis(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(0);
    struct qv_reservation *r = res(p, "r");
    assert_int_equal(qv_reservation_grow(r, 8 * MiB, NULL), 0);
    assert_int_equal(qv_reservation_held(r), 8 * MiB);
    /* Slack up to two blocks is kept. */
    qv_reservation_shrink(r, 2 * MiB);
    assert_int_equal(qv_reservation_held(r), 8 * MiB);
    /* Past it, the reservation keeps one block above its use. */
    qv_reservation_shrink(r, MiB + 1);
    assert_int_equal(qv_reservation_used(r), 5 * MiB - 1);
    assert_int_equal(qv_reservation_held(r), 6 * MiB);
    /* Oscillating around a boundary does not touch the pool. */
    struct qv_pool_stats before, after;
    qv_pool_get_stats(p, &before);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(qv_reservation_grow(r, 2, NULL), 0);
        qv_reservation_shrink(r, 2);
    }
    qv_pool_get_stats(p, &after);
    assert_int_equal(before.reserved, after.reserved);
    assert_int_equal(qv_reservation_peak(r), 8 * MiB);
    qv_reservation_release_slack(r);
    assert_int_equal(qv_reservation_held(r), 5 * MiB - 1);
    qv_reservation_free(r);
    qv_pool_destroy(p);
}

static void test_limit_enforced(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(3 * MiB);
    struct qv_reservation *a = res(p, "a");
    struct qv_error err;
    assert_int_equal(qv_reservation_grow(a, 3 * MiB, &err), 0);
    assert_int_equal(qv_reservation_grow(a, 1, &err), ENOMEM);
    assert_int_equal(err.code, ENOMEM);
    assert_int_equal(qv_reservation_used(a), 3 * MiB); /* nothing charged on failure */
    struct qv_pool_stats s;
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.oom_count, 1);
    assert_int_equal(s.limit, 3 * MiB);
    qv_reservation_shrink(a, MiB);
    assert_int_equal(qv_reservation_try_grow(a, MiB, &err), 0);
    qv_reservation_free(a);
    qv_pool_destroy(p);
}

static void test_partial_grant_near_limit(void **state) {
    (void)state;
    /* Limit not a multiple of the block: the last partial block is granted
     * when it covers the real shortfall. */
    struct qv_pool *p = pool_limit(MiB + 1000);
    struct qv_reservation *r = res(p, "r");
    assert_int_equal(qv_reservation_grow(r, MiB + 500, NULL), 0);
    assert_int_equal(qv_reservation_held(r), MiB + 1000);
    assert_int_equal(qv_reservation_grow(r, 500, NULL), 0);
    assert_int_equal(qv_reservation_grow(r, 1, NULL), ENOMEM);
    qv_reservation_free(r);
    qv_pool_destroy(p);
}

static void test_host_full_grant(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    struct qv_pool *p = pool_host(&h, "task");
    struct qv_reservation *r = res(p, "scan");
    assert_int_equal(qv_reservation_grow(r, 100, NULL), 0);
    assert_int_equal(h.acquires, 1);
    assert_int_equal(fake_host_granted(&h), MiB);
    /* Within the pool's block: no host call. */
    assert_int_equal(qv_reservation_grow(r, 1000, NULL), 0);
    assert_int_equal(h.acquires, 1);
    assert_int_equal(qv_reservation_grow(r, 3 * MiB, NULL), 0);
    assert_int_equal(h.acquires, 2);
    assert_int_equal(fake_host_granted(&h), 4 * MiB);
    /* Free everything: the pool keeps slack of up to two blocks. */
    qv_reservation_shrink(r, qv_reservation_used(r));
    assert_true(fake_host_granted(&h) <= 2 * MiB);
    assert_int_equal(h.releases, 1);
    struct qv_pool_stats s;
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.host_acquire_calls, 2);
    assert_int_equal(s.host_release_calls, 1);
    assert_int_equal(s.host_bytes_acquired - s.host_bytes_released, fake_host_granted(&h));
    qv_reservation_free(r);
    qv_pool_destroy(p);
    assert_int_equal(fake_host_granted(&h), 0);
    fake_host_destroy(&h);
}

static void test_host_partial_grant(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_HALF, 0);
    struct qv_pool *p = pool_host(&h, "task");
    struct qv_reservation *r = res(p, "r");
    /* Asks one block, gets half: enough for 100 bytes, accepted. */
    assert_int_equal(qv_reservation_grow(r, 100, NULL), 0);
    assert_int_equal(h.acquires, 1);
    assert_int_equal(qv_reservation_held(r), MiB / 2);
    /* 1.5 MiB more: first grant short, retried once after spilling. */
    assert_int_equal(qv_reservation_grow(r, 3 * MiB / 2, NULL), 0);
    assert_int_equal(h.acquires, 3);
    qv_reservation_free(r);
    qv_pool_destroy(p);
    assert_int_equal(fake_host_granted(&h), 0);
    fake_host_destroy(&h);
}

static void test_host_zero_grant(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_ZERO, 0);
    struct qv_pool *p = pool_host(&h, "task");
    struct qv_reservation *r = res(p, "r");
    struct qv_error err;
    assert_int_equal(qv_reservation_grow(r, 10, &err), ENOMEM);
    assert_int_equal(h.acquires, 2); /* asked, spilled (nothing), asked once more */
    assert_non_null(strstr(err.message, "host granted 0 of 2097152 bytes asked"));
    assert_int_equal(qv_reservation_used(r), 0);
    qv_reservation_free(r);
    qv_pool_destroy(p);
    fake_host_destroy(&h);
}

static void test_two_pools_share_host(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 4 * MiB);
    struct qv_pool *p1 = pool_host(&h, "task1"), *p2 = pool_host(&h, "task2");
    struct qv_reservation *a = res(p1, "a"), *b = res(p2, "b");
    struct qv_error err;
    assert_int_equal(qv_reservation_grow(a, 3 * MiB, NULL), 0);
    assert_int_equal(qv_reservation_grow(b, MiB, NULL), 0);
    assert_int_equal(qv_reservation_grow(b, MiB, &err), ENOMEM);
    assert_non_null(strstr(err.message, "pool 'task2'"));
    qv_reservation_free(a); /* pool 1 keeps at most its slack */
    qv_pool_destroy(p1);    /* and gives everything back when destroyed */
    assert_int_equal(qv_reservation_grow(b, MiB, NULL), 0);
    qv_reservation_free(b);
    qv_pool_destroy(p2);
    assert_int_equal(fake_host_granted(&h), 0);
    assert_true(h.peak <= 4 * MiB);
    fake_host_destroy(&h);
}

static void test_acquire_failure_injection(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    struct qv_pool *p = pool_host(&h, "task");
    struct qv_reservation *r = res(p, "r");
    qv_pool_inject_acquire_failure(p, 2);
    assert_int_equal(qv_reservation_grow(r, MiB, NULL), 0);          /* 1st acquire */
    assert_int_equal(qv_reservation_grow(r, MiB, NULL), 0);          /* 2nd fails, 3rd ok */
    struct qv_pool_stats s;
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.host_acquire_calls, 3);
    assert_int_equal(s.host_held, 2 * MiB);
    qv_reservation_free(r);
    qv_pool_destroy(p);
    fake_host_destroy(&h);
}

static void test_split_and_resize(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(0);
    struct qv_reservation *r = res(p, "writer"), *s = NULL;
    struct qv_error err;
    assert_int_equal(qv_reservation_resize(r, 3 * MiB, NULL), 0);
    assert_int_equal(qv_reservation_split(r, 4 * MiB, NULL, &s, &err), EINVAL);
    assert_null(s);
    assert_int_equal(qv_reservation_split(r, MiB, "batch", &s, &err), 0);
    assert_string_equal(qv_reservation_name(s), "writer/batch");
    assert_int_equal(qv_reservation_used(r), 2 * MiB);
    assert_int_equal(qv_reservation_used(s), MiB);
    struct qv_pool_stats st;
    qv_pool_get_stats(p, &st);
    assert_int_equal(st.reserved, 3 * MiB);
    assert_int_equal(qv_reservation_resize(r, 10, NULL), 0);
    assert_int_equal(qv_reservation_used(r), 10);
    qv_reservation_free(s);
    qv_reservation_free(r);
    qv_pool_get_stats(p, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rejects_bad_options),
        cmocka_unit_test(test_block_batching),
        cmocka_unit_test(test_release_hysteresis),
        cmocka_unit_test(test_limit_enforced),
        cmocka_unit_test(test_partial_grant_near_limit),
        cmocka_unit_test(test_host_full_grant),
        cmocka_unit_test(test_host_partial_grant),
        cmocka_unit_test(test_host_zero_grant),
        cmocka_unit_test(test_two_pools_share_host),
        cmocka_unit_test(test_acquire_failure_injection),
        cmocka_unit_test(test_split_and_resize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
