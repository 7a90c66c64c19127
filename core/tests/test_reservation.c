/* Reservations under pressure: spill order, the requester last, fair share,
 * the out-of-memory report, and grow from inside a spill. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "quiver/memory.h"

#define MiB (UINT64_C(1) << 20)

static char spill_log[256];

struct consumer {
    const char *tag;
    struct qv_reservation *r;
    uint64_t freeable; /* what this consumer is able to spill */
    int try_grow_inside;
    int grow_rc;
};

static uint64_t spill_cb(void *ctx, struct qv_reservation *r, uint64_t wanted) {
    struct consumer *c = ctx;
    strcat(spill_log, c->tag);
    if (c->try_grow_inside) c->grow_rc = qv_reservation_grow(r, MiB, NULL);
    uint64_t f = c->freeable < qv_reservation_used(r) ? c->freeable : qv_reservation_used(r);
    qv_reservation_shrink(r, f);
    qv_reservation_release_slack(r);
    c->freeable -= f;
    (void)wanted;
    return f;
}

static void make(struct qv_pool *p, struct consumer *c, const char *name, const char *tag,
                 int can_spill, uint64_t charge) {
    c->tag = tag;
    struct qv_reservation_options o = {name, can_spill, can_spill ? spill_cb : NULL, c};
    assert_int_equal(qv_reservation_create(p, &o, &c->r, NULL), 0);
    if (charge) assert_int_equal(qv_reservation_grow(c->r, charge, NULL), 0);
    /* Exact figures: these tests are about who spills, not about slack. */
    qv_reservation_release_slack(c->r);
}

static struct qv_pool *pool_limit(uint64_t limit) {
    struct qv_pool *p = NULL;
    struct qv_pool_options o = {.name = "task-7", .limit = limit};
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    return p;
}

static void test_spill_largest_first_requester_last(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(10 * MiB);
    struct consumer a = {0}, b = {0}, c = {0}, req = {0};
    make(p, &a, "sort", "A", 1, 2 * MiB);
    make(p, &b, "hash", "B", 1, 3 * MiB);
    make(p, &c, "builder", "C", 0, 3 * MiB);
    make(p, &req, "agg", "R", 1, MiB);
    spill_log[0] = 0;
    /* 1 MiB free; needs 2 MiB more; nobody can free anything: B, A, then R. */
    assert_int_equal(qv_reservation_grow(req.r, 2 * MiB, NULL), ENOMEM);
    assert_string_equal(spill_log, "BAR");
    /* Now B can free 2 MiB: B alone is asked, then the grow succeeds. */
    spill_log[0] = 0;
    b.freeable = 2 * MiB;
    assert_int_equal(qv_reservation_grow(req.r, 2 * MiB, NULL), 0);
    assert_string_equal(spill_log, "B");
    assert_int_equal(qv_reservation_used(b.r), MiB);
    struct qv_pool_stats s;
    qv_pool_get_stats(p, &s);
    assert_int_equal(s.spill_calls, 4);
    assert_true(s.reserved <= 10 * MiB);
    qv_reservation_destroy(a.r);
    qv_reservation_destroy(b.r);
    qv_reservation_destroy(c.r);
    qv_reservation_destroy(req.r);
    qv_pool_destroy(p);
}

static void test_try_grow_never_spills(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(2 * MiB);
    struct consumer a = {0}, req = {0};
    make(p, &a, "a", "A", 1, 2 * MiB);
    a.freeable = 2 * MiB;
    make(p, &req, "req", "R", 0, 0);
    spill_log[0] = 0;
    assert_int_equal(qv_reservation_try_grow(req.r, 1, NULL), ENOMEM);
    assert_string_equal(spill_log, "");
    assert_int_equal(qv_reservation_grow(req.r, 1, NULL), 0);
    assert_string_equal(spill_log, "A");
    qv_reservation_destroy(a.r);
    qv_reservation_destroy(req.r);
    qv_pool_destroy(p);
}

static void test_fair_share(void **state) {
    (void)state;
    /* Limit 10 MiB, 2 MiB unspillable, two spillable consumers: fair share 4 MiB. */
    struct qv_pool *p = pool_limit(10 * MiB);
    struct consumer big = {0}, small = {0}, fixed = {0};
    make(p, &fixed, "fixed", "F", 0, 2 * MiB);
    make(p, &big, "big", "G", 1, 5 * MiB);
    make(p, &small, "small", "S", 1, 3 * MiB);
    big.freeable = small.freeable = 8 * MiB;
    spill_log[0] = 0;
    /* big is above its share: it may not take from small, only spill itself. */
    assert_int_equal(qv_reservation_grow(big.r, MiB, NULL), 0);
    assert_string_equal(spill_log, "G");
    assert_int_equal(qv_reservation_used(small.r), 3 * MiB);
    /* small within its share takes from the largest spillable consumer. */
    qv_reservation_destroy(big.r);
    make(p, &big, "big", "G", 1, 5 * MiB);
    big.freeable = 8 * MiB;
    spill_log[0] = 0;
    assert_int_equal(qv_reservation_grow(small.r, MiB, NULL), 0);
    assert_string_equal(spill_log, "G");
    assert_int_equal(qv_reservation_used(small.r), 4 * MiB);
    qv_reservation_destroy(big.r);
    qv_reservation_destroy(small.r);
    qv_reservation_destroy(fixed.r);
    qv_pool_destroy(p);
}

static void test_oom_message_exact(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(8 * MiB);
    struct qv_reservation *r[7];
    const char *names[7] = {"r0", "r1", "r2", "r3", "r4", "r5", "req"};
    uint64_t sizes[7] = {MiB, 2 * MiB, MiB, MiB, MiB, MiB, 0};
    for (int i = 0; i < 7; i++) {
        struct qv_reservation_options o = {.name = names[i]};
        assert_int_equal(qv_reservation_create(p, &o, &r[i], NULL), 0);
        if (sizes[i]) assert_int_equal(qv_reservation_grow(r[i], sizes[i], NULL), 0);
        qv_reservation_release_slack(r[i]);
    }
    /* r1 uses 1 MiB and keeps one grain (32 KiB) of slack; peaks are of
     * held bytes, the slack taken while growing included. */
    qv_reservation_shrink(r[1], MiB);
    struct qv_error err;
    assert_int_equal(qv_reservation_grow(r[6], 2 * MiB + 5, &err), ENOMEM);
    assert_int_equal(err.code, ENOMEM);
    assert_string_equal(err.message,
                        "pool 'task-7': reservation 'req' cannot grow by 2097157 bytes (using 0, "
                        "holding 0); pool has 6324224 bytes reserved, limit 8388608 bytes; top "
                        "consumers: 'r1' 1081344 reserved (peak 2129920), 'r5' 1048576 reserved "
                        "(peak 1081344), 'r4' 1048576 reserved (peak 1081344), 'r3' 1048576 "
                        "reserved (peak 1081344), 'r2' 1048576 reserved (peak 1081344)");
    for (int i = 0; i < 7; i++) qv_reservation_destroy(r[i]);
    qv_pool_destroy(p);
}

static void test_grow_inside_spill_refused(void **state) {
    (void)state;
    struct qv_pool *p = pool_limit(2 * MiB);
    struct consumer a = {0}, req = {0};
    make(p, &a, "a", "A", 1, 2 * MiB);
    a.freeable = 2 * MiB;
    a.try_grow_inside = 1;
    make(p, &req, "req", "R", 0, 0);
    spill_log[0] = 0;
    assert_int_equal(qv_reservation_grow(req.r, MiB, NULL), 0);
    assert_int_equal(a.grow_rc, EDEADLK);
    qv_reservation_destroy(a.r);
    qv_reservation_destroy(req.r);
    qv_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spill_largest_first_requester_last),
        cmocka_unit_test(test_try_grow_never_spills),
        cmocka_unit_test(test_fair_share),
        cmocka_unit_test(test_oom_message_exact),
        cmocka_unit_test(test_grow_inside_spill_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
