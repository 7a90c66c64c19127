#include "pool_env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "quiver/memory.h"

int pool_env_setup(void **state) {
    struct pool_env *e = calloc(1, sizeof *e);
    assert_non_null(e);
    assert_int_equal(qv_pool_create(NULL, &e->pool, NULL), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->r, NULL), 0);
    *state = e;
    return 0;
}

int pool_env_teardown(void **state) {
    struct pool_env *e = *state;
    assert_int_equal(qv_reservation_used(e->r), 0); /* nothing leaked */
    qv_reservation_destroy(e->r);
    qv_pool_destroy(e->pool);
    free(e);
    return 0;
}
