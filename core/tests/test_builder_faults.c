/* Allocation failure at every allocation of a whole builder life cycle:
 * schema, builder, row appends (every buffer growth), finish, schema export
 * and import, a stream over the batch. For N = 1, 2, ... the Nth allocation
 * fails; each failure must be ENOMEM, export nothing half-made, poison the
 * builder if it hit an append (and reset must recover), and leak nothing. */
#include "test_builder_gen.h"

#include "quiver/memory.h"
#include "memory/memory_testing.h"

#define ROWS 150
#define SEED 31337

static void check_batch(const struct ArrowArray *batch, const struct qv_field *root) {
    struct qv_error err = {0};
    if (qv_arrow_array_validate(batch, root, QV_VALIDATE_FULL, &err)) fail_msg("%s", err.message);
    struct gen g = gen_make(SEED, 3);
    gen_check_rows(&g, batch, root, ROWS);
}

/* Runs the life cycle once; returns whether any step failed. */
static bool life_cycle(struct qv_pool *pool, struct qv_reservation *res, uint64_t nth) {
    struct qv_error err = {0};
    bool failed = false;
    qv_pool_inject_alloc_failure(pool, nth);

    struct qv_schema *schema = NULL;
    int rc = qv_schema_create(&gen_root, res, &schema, &err);
    if (rc) {
        assert_int_equal(rc, ENOMEM);
        assert_null(schema);
        return true;
    }
    struct qv_builder *b = NULL;
    struct qv_builder_options opts = {.initial_capacity = 4, .initial_data_bytes = 16};
    rc = qv_builder_create(schema, res, &opts, &b, &err);
    if (rc) {
        assert_int_equal(rc, ENOMEM);
        assert_null(b);
        qv_schema_destroy(schema);
        return true;
    }

    struct gen g = gen_make(SEED, 3);
    g.tolerant = true;
    gen_append_rows(&g, b, &schema->root, ROWS);
    struct ArrowArray batch = {0};
    rc = qv_builder_finish(b, &batch, &err);
    if (g.rc) {
        /* An append failed part-way through a row: poisoned, nothing out. */
        failed = true;
        assert_int_equal(g.rc, ENOMEM);
        assert_int_equal(rc, ENOMEM);
        assert_null(batch.release);
        assert_int_equal(qv_builder_error(b)->code, ENOMEM);
        qv_builder_reset(b);
        struct gen again = gen_make(SEED, 3);
        gen_append_rows(&again, b, &schema->root, ROWS); /* the one failure is spent */
        rc = qv_builder_finish(b, &batch, &err);
        assert_int_equal(rc, 0);
    } else if (rc) {
        /* The finish itself failed: nothing out, the builder poisoned. */
        failed = true;
        assert_int_equal(rc, ENOMEM);
        assert_null(batch.release);
        struct ArrowArray again = {0};
        assert_int_equal(qv_builder_finish(b, &again, &err), ENOMEM);
        assert_null(again.release);
        qv_builder_reset(b);
        qv_builder_destroy(b);
        qv_schema_destroy(schema);
        return true;
    }
    check_batch(&batch, &schema->root);

    struct ArrowSchema cs = {0};
    rc = qv_builder_export_schema(b, &cs, &err);
    qv_builder_destroy(b); /* the batch and the schema do not need the builder */
    if (rc) {
        assert_int_equal(rc, ENOMEM);
        assert_null(cs.release);
        qv_arrow_array_release(&batch);
        qv_schema_destroy(schema);
        return true;
    }
    struct qv_schema *imported = NULL;
    rc = qv_schema_import(&cs, res, &imported, &err);
    if (rc) {
        assert_int_equal(rc, ENOMEM);
        assert_null(imported);
        failed = true;
    } else {
        assert_true(qv_schema_equal(imported, schema, 0));
        qv_schema_destroy(imported);
    }

    struct ArrowArrayStream stream = {0};
    rc = qv_arrow_stream_from_batches(&stream, &cs, &batch, 1, res, &err);
    if (rc) {
        /* Nothing moved: we still own both. */
        assert_int_equal(rc, ENOMEM);
        assert_null(stream.release);
        assert_non_null(cs.release);
        assert_non_null(batch.release);
        qv_arrow_schema_release(&cs);
        qv_arrow_array_release(&batch);
        qv_schema_destroy(schema);
        return true;
    }
    struct ArrowSchema got_schema = {0};
    rc = stream.get_schema(&stream, &got_schema);
    if (rc) {
        failed = true;
        assert_int_equal(rc, ENOMEM);
        assert_null(got_schema.release);
        assert_non_null(stream.get_last_error(&stream));
    }
    qv_arrow_schema_release(&got_schema);
    struct ArrowArray got = {0};
    assert_int_equal(stream.get_next(&stream, &got), 0);
    assert_null(stream.get_last_error(&stream));
    qv_arrow_stream_release(&stream);
    check_batch(&got, &schema->root);
    qv_arrow_array_release(&got);
    qv_schema_destroy(schema);
    return failed;
}

static void test_every_allocation_fails_once(void **state) {
    (void)state;
    uint64_t nth;
    for (nth = 1; nth < 100000; nth++) {
        struct qv_pool *pool;
        struct qv_reservation *res;
        assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
        assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
        bool failed = life_cycle(pool, res, nth);
        qv_pool_inject_alloc_failure(pool, 0);
        assert_int_equal(qv_reservation_used(res), 0); /* no leak on any path */
        qv_reservation_destroy(res);
        qv_pool_destroy(pool);
        if (!failed) break;
    }
    /* The life cycle makes hundreds of allocations; all were exercised. */
    assert_true(nth > 50);
    print_message("allocation failure injected at each of %llu allocations\n",
                  (unsigned long long)(nth - 1));
}

/* A pool budget too small for the batch: ENOMEM from the budget (not the
 * injector) poisons the same way, and the message names the column. */
static void test_budget_exhaustion_poisons(void **state) {
    (void)state;
    struct qv_pool *pool;
    struct qv_reservation *res;
    struct qv_pool_options po = {.limit = 2u << 20, .block_size = 64u << 10};
    assert_int_equal(qv_pool_create(&po, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    static const struct qv_field cols[] = {{.name = "payload", .type = QV_TYPE_BINARY}};
    static const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = cols};
    struct qv_schema *s;
    struct qv_builder *b;
    assert_int_equal(qv_schema_create(&root, res, &s, NULL), 0);
    assert_int_equal(qv_builder_create(s, res, NULL, &b, NULL), 0);
    static uint8_t chunk[4096];
    int rc = 0;
    for (int i = 0; i < 10000 && rc == 0; i++) rc = qv_append_binary(qv_builder_column(b, 0), chunk, sizeof chunk);
    assert_int_equal(rc, ENOMEM);
    assert_non_null(strstr(qv_builder_error(b)->message, "'payload'"));
    struct ArrowArray out = {0};
    assert_int_equal(qv_builder_finish(b, &out, NULL), ENOMEM);
    assert_null(out.release);
    qv_builder_reset(b);
    assert_int_equal(qv_append_binary(qv_builder_column(b, 0), chunk, sizeof chunk), 0);
    assert_int_equal(qv_builder_finish(b, &out, NULL), 0);
    assert_int_equal(out.length, 1);
    qv_arrow_array_release(&out);
    qv_builder_destroy(b);
    qv_schema_destroy(s);
    assert_int_equal(qv_reservation_used(res), 0);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_fails_once),
        cmocka_unit_test(test_budget_exhaustion_poisons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
