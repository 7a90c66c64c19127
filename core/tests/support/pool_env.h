/* The fixture most C tests start from: a pool and a reservation on it, made
 * before each test and checked empty after it, so that every test shows it
 * returned all the memory it took. */
#ifndef QV_TEST_POOL_ENV_H
#define QV_TEST_POOL_ENV_H

#include "quiver/format.h"
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

/* The same with a schema, and a batch of it that the test may make: the
 * fixture of the tests that write and read one table. */
struct schema_env {
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_schema *schema;
    struct ArrowArray batch; /* the test's, or none (release NULL) */
};

/* Creates the pool, the reservation and the schema: a struct of the n_cols
 * columns `cols`, or every type (rb_all_types_schema) when cols is NULL. */
void schema_env_open(struct schema_env *e, const struct qv_field *cols, int64_t n_cols);
/* Releases the batch if there is one, destroys the schema, asserts the
 * reservation holds nothing, then destroys it and the pool. */
void schema_env_close(struct schema_env *e);

#endif
