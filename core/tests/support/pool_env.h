/* The fixture most C tests start from: a pool and a reservation on it, made
 * before each test and checked empty after it, so that every test shows it
 * returned all the memory it took. */
#ifndef QV_TEST_POOL_ENV_H
#define QV_TEST_POOL_ENV_H

#include "quiver/memory.h"

struct pool_env {
    struct qv_pool *pool;
    struct qv_reservation *r;
};

/* cmocka setup: *state becomes a new struct pool_env. */
int pool_env_setup(void **state);
/* cmocka teardown: asserts the reservation holds nothing, then destroys it,
 * the pool and the struct. */
int pool_env_teardown(void **state);

#endif
