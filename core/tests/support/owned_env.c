#include "owned_env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "test_util.h"

const struct rb_options OWNED_RO = {.null_prob = 0.15, .max_list = 3, .max_string = 12};

void owned_env_init(struct owned_env *e) {
    assert_int_equal(qv_pool_create(NULL, &e->p, NULL), 0);
    assert_int_equal(qv_reservation_create(e->p, NULL, &e->r, NULL), 0);
    assert_int_equal(rb_all_types_schema(e->r, &e->s), 0);
}

void owned_env_done(struct owned_env *e) {
    qv_schema_destroy(e->s);
    assert_int_equal(qv_reservation_used(e->r), 0);
    qv_reservation_destroy(e->r);
    assert_int_equal(qv_pool_used(e->p), 0);
    qv_pool_destroy(e->p);
}

void owned_tracked_batch(struct owned_env *e, struct tracker *t, int64_t rows, uint64_t seed,
                         struct ArrowArray *out) {
    struct ArrowArray b;
    assert_int_equal(rb_batch(e->s, rows, seed, &OWNED_RO, e->r, &b), 0);
    assert_int_equal(tracker_wrap(t, &b, 0, rows, out), 0);
}

void owned_assert_same_files(const char *a, const char *b) {
    size_t na, nb;
    unsigned char *da = tu_read_file(a, &na), *db = tu_read_file(b, &nb);
    assert_non_null(da);
    assert_non_null(db);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    free(da);
    free(db);
}
