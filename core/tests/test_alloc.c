/* The accounting allocator: alignment, exact charges, realloc, and failure
 * injection at every allocation of a multi-step operation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "quiver/memory.h"
#include "memory/memory_testing.h"

static void test_alignment_and_charge(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    void *a = qv_alloc(r, 1, NULL), *b = qv_alloc(r, 65, NULL), *z = qv_alloc(r, 0, NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(z);
    assert_int_equal((uintptr_t)a % 64, 0);
    assert_int_equal((uintptr_t)b % 64, 0);
    assert_int_equal(qv_reservation_used(r), 64 + 128 + 64);
    assert_int_equal(qv_reservation_alloc_count(r), 3);
    unsigned char *c = qv_calloc(r, 200, NULL);
    for (int i = 0; i < 256; i++) assert_int_equal(c[i], 0);
    qv_free(r, c, 200);
    qv_free(r, a, 1);
    qv_free(r, b, 65);
    qv_free(r, z, 0);
    qv_free(r, NULL, 10);
    assert_int_equal(qv_reservation_used(r), 0);
    assert_int_equal(qv_reservation_peak(r), 64 + 128 + 64 + 256);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

static void test_realloc_keeps_content(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    unsigned char *buf = qv_realloc(r, NULL, 0, 100, NULL);
    for (int i = 0; i < 100; i++) buf[i] = (unsigned char)i;
    buf = qv_realloc(r, buf, 100, 5000, NULL);
    assert_non_null(buf);
    for (int i = 0; i < 100; i++) assert_int_equal(buf[i], i);
    assert_int_equal(qv_reservation_used(r), qv_align_up(5000));
    buf = qv_realloc(r, buf, 5000, 10, NULL);
    for (int i = 0; i < 10; i++) assert_int_equal(buf[i], i);
    assert_int_equal(qv_reservation_used(r), 64);
    /* A failed realloc leaves the old block and its charge in place. */
    struct qv_error err;
    qv_pool_inject_alloc_failure(p, 1);
    assert_null(qv_realloc(r, buf, 10, 1 << 20, &err));
    assert_int_equal(err.code, ENOMEM);
    assert_non_null(strstr(err.message, "injected"));
    assert_int_equal(qv_reservation_used(r), 64);
    assert_int_equal(buf[9], 9);
    qv_pool_inject_alloc_failure(p, 0);
    qv_free(r, buf, 10);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

static void test_budget_failure_charges_nothing(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_pool_options o = {.name = "small", .limit = 4096, .block_size = 1024};
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    struct qv_error err;
    void *a = qv_alloc(r, 4000, &err);
    assert_non_null(a);
    assert_null(qv_alloc(r, 200, &err));
    assert_int_equal(err.code, ENOMEM);
    assert_non_null(strstr(err.message, "pool 'small'"));
    assert_int_equal(qv_reservation_used(r), 4032);
    qv_free(r, a, 4000);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

/* A multi-step operation: a reservation and a ragged array of buffers. It
 * cleans up after itself on any failure. */
static int build_table(struct qv_pool *p, struct qv_reservation **out_r, void ***out_rows) {
    struct qv_reservation *r;
    int rc = qv_reservation_create(p, NULL, &r, NULL);
    if (rc) return rc;
    void **rows = qv_calloc(r, 16 * sizeof(void *), NULL);
    if (!rows) goto fail_res;
    for (int i = 0; i < 16; i++) {
        rows[i] = qv_alloc(r, (size_t)(i + 1) * 1000, NULL);
        if (!rows[i]) {
            for (int j = 0; j < i; j++) qv_free(r, rows[j], (size_t)(j + 1) * 1000);
            qv_free(r, rows, 16 * sizeof(void *));
            goto fail_res;
        }
    }
    *out_r = r;
    *out_rows = rows;
    return 0;
fail_res:
    qv_reservation_destroy(r);
    return ENOMEM;
}

static void test_injection_at_every_allocation(void **state) {
    (void)state;
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    int steps = 0;
    for (uint64_t n = 1;; n++) {
        qv_pool_inject_alloc_failure(p, n);
        struct qv_reservation *r = NULL;
        void **rows = NULL;
        int rc = build_table(p, &r, &rows);
        struct qv_pool_stats s;
        if (rc == 0) {
            for (int i = 0; i < 16; i++) qv_free(r, rows[i], (size_t)(i + 1) * 1000);
            qv_free(r, rows, 16 * sizeof(void *));
            assert_int_equal(qv_reservation_used(r), 0);
            qv_reservation_destroy(r);
            qv_pool_get_stats(p, &s);
            assert_int_equal(s.reserved, 0);
            break;
        }
        assert_int_equal(rc, ENOMEM);
        qv_pool_get_stats(p, &s);
        assert_int_equal(s.reserved, 0); /* nothing leaked at this step */
        assert_int_equal(s.reservations, 0);
        steps++;
    }
    assert_int_equal(steps, 18); /* reservation + index + 16 rows */
    qv_pool_inject_alloc_failure(p, 0);
    qv_pool_destroy(p);
}

/* Large freed blocks are reused, counted against the budget, and evicted
 * before a grow would fail. */
static void test_block_cache(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_pool_options o = {.name = "cache", .limit = 16u << 20};
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    void *a = qv_alloc(r, 1u << 20, NULL);
    assert_non_null(a);
    qv_free(r, a, 1u << 20);
    struct qv_pool_stats st;
    qv_pool_get_stats(p, &st);
    assert_int_equal(st.cache_bytes, 1u << 20);
    void *b = qv_alloc(r, 1u << 20, NULL);
    assert_ptr_equal(a, b); /* the same block came back */
    qv_pool_get_stats(p, &st);
    assert_int_equal(st.cache_bytes, 0);
    assert_int_equal(st.cache_hits, 1);
    qv_free(r, b, 1u << 20);
    /* The cache holds 1 MiB of a 16 MiB budget; 15.5 MiB more must still fit. */
    void *c = qv_alloc(r, (15u << 20) + (1u << 19), NULL);
    assert_non_null(c);
    qv_pool_get_stats(p, &st);
    assert_int_equal(st.cache_bytes, 0); /* evicted to make room */
    qv_free(r, c, (15u << 20) + (1u << 19));
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    /* Opt-out. */
    o.no_block_cache = 1;
    assert_int_equal(qv_pool_create(&o, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    a = qv_alloc(r, 1u << 20, NULL);
    qv_free(r, a, 1u << 20);
    qv_pool_get_stats(p, &st);
    assert_int_equal(st.cache_bytes, 0);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment_and_charge),
        cmocka_unit_test(test_realloc_keeps_content),
        cmocka_unit_test(test_budget_failure_charges_nothing),
        cmocka_unit_test(test_injection_at_every_allocation),
        cmocka_unit_test(test_block_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
