#include "pool_env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "quiver/memory.h"
#include "random_batch.h"

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

void schema_env_open(struct schema_env *e, const struct qv_field *cols, int64_t n_cols) {
    assert_int_equal(qv_pool_create(NULL, &e->pool, NULL), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->r, NULL), 0);
    if (!cols) {
        assert_int_equal(rb_all_types_schema(e->r, &e->schema), 0);
        return;
    }
    const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = n_cols,
                                  .children = cols};
    struct qv_error err;
    if (qv_schema_create(&root, e->r, &e->schema, &err)) fail_msg("schema: %s", err.message);
}

void schema_env_close(struct schema_env *e) {
    if (e->batch.release) e->batch.release(&e->batch);
    qv_schema_destroy(e->schema);
    assert_int_equal(qv_reservation_used(e->r), 0); /* nothing leaked */
    qv_reservation_destroy(e->r);
    qv_pool_destroy(e->pool);
}
