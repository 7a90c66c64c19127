/* The batch builder's row-at-a-time API: round trips of every type through
 * builder -> export -> import -> full validation -> value checks, capacity
 * across batches, poisoning at every failure point, and the ownership of
 * exported batches. */
#include "test_builder_gen.h"

#include "quiver/memory.h"
#include "memory/memory_testing.h"

struct env {
    struct qv_pool *pool;
    struct qv_reservation *res;
    struct qv_schema *schema;
};

static void env_open(struct env *e, const struct qv_field *root) {
    struct qv_error err = {0};
    assert_int_equal(qv_pool_create(NULL, &e->pool, &err), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->res, &err), 0);
    assert_int_equal(qv_schema_create(root, e->res, &e->schema, &err), 0);
}

static void env_close(struct env *e) {
    qv_schema_destroy(e->schema);
    assert_int_equal(qv_reservation_used(e->res), 0); /* nothing leaked */
    qv_reservation_destroy(e->res);
    qv_pool_destroy(e->pool);
}

/* finish -> export schema -> import schema (equal) -> import array (FULL)
 * -> check every value with the generator seeded like the appends. */
static void finish_and_check(struct env *e, struct qv_builder *b, uint64_t seed, int null_one_in,
                             int64_t rows) {
    struct qv_error err = {0};
    struct ArrowArray batch = {0};
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    assert_non_null(batch.release);
    assert_int_equal(qv_builder_num_rows(b), 0);

    struct ArrowSchema cs = {0};
    assert_int_equal(qv_builder_export_schema(b, &cs, &err), 0);
    struct qv_schema *imported;
    int rc = qv_schema_import(&cs, e->res, &imported, &err);
    assert_int_equal(rc, 0);
    assert_true(qv_schema_equal(imported, e->schema, 0));
    qv_arrow_schema_release(&cs);

    struct ArrowArray arr = {0};
    rc = qv_arrow_array_import(&arr, &batch, &imported->root, QV_VALIDATE_FULL, &err);
    if (rc) fail_msg("%s", err.message);
    assert_null(batch.release); /* moved */
    struct gen g = gen_make(seed, null_one_in);
    gen_check_rows(&g, &arr, &imported->root, rows);
    qv_arrow_array_release(&arr);
    qv_arrow_array_release(&arr); /* a second release is harmless */
    qv_schema_destroy(imported);
}

static void test_roundtrip_all_types(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, &err), 0);
    assert_int_equal(qv_builder_num_columns(b), gen_root.n_children);
    static const int64_t sizes[] = {0, 1, 3, 100, 5000, 1, 0, 700};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t seed = 1000 + i;
        int nulls = i == 5 ? 0 : (i % 2 ? 5 : 2); /* no nulls, some, many */
        struct gen g = gen_make(seed, nulls);
        gen_append_rows(&g, b, &e.schema->root, sizes[i]);
        assert_int_equal(qv_builder_num_rows(b), sizes[i]);
        finish_and_check(&e, b, seed, nulls, sizes[i]);
    }
    qv_builder_destroy(b);
    env_close(&e);
}

/* Capacity 1 makes every buffer grow through every doubling. */
static void test_roundtrip_tiny_capacity(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct qv_builder *b;
    struct qv_builder_options o = {.initial_capacity = 1, .initial_data_bytes = 1};
    assert_int_equal(qv_builder_create(e.schema, e.res, &o, &b, NULL), 0);
    for (int i = 0; i < 3; i++) {
        struct gen g = gen_make(77 + (uint64_t)i, 3);
        gen_append_rows(&g, b, &e.schema->root, 257);
        finish_and_check(&e, b, 77 + (uint64_t)i, 3, 257);
    }
    qv_builder_destroy(b);
    env_close(&e);
}

/* Batches outlive the builder and the stream that carried them. */
static void test_batches_outlive_builder_and_stream(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, &err), 0);
    struct ArrowArray batches[3] = {{0}};
    for (int i = 0; i < 3; i++) {
        struct gen g = gen_make(500 + (uint64_t)i, 4);
        gen_append_rows(&g, b, &e.schema->root, 50 * (i + 1));
        assert_int_equal(qv_builder_finish(b, &batches[i], &err), 0);
    }
    struct ArrowSchema cs = {0};
    assert_int_equal(qv_builder_export_schema(b, &cs, &err), 0);
    qv_builder_destroy(b);

    struct ArrowArrayStream stream = {0};
    assert_int_equal(qv_arrow_stream_from_batches(&stream, &cs, batches, 3, e.res, &err), 0);
    assert_null(cs.release);
    for (int i = 0; i < 3; i++) assert_null(batches[i].release);
    struct ArrowArray got[3] = {{0}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(stream.get_next(&stream, &got[i]), 0);
        assert_non_null(got[i].release);
    }
    struct ArrowArray end = {0};
    assert_int_equal(stream.get_next(&stream, &end), 0);
    assert_null(end.release);
    qv_arrow_stream_release(&stream);
    for (int i = 0; i < 3; i++) {
        struct gen g = gen_make(500 + (uint64_t)i, 4);
        assert_int_equal(qv_arrow_array_validate(&got[i], &e.schema->root, QV_VALIDATE_FULL, &err), 0);
        gen_check_rows(&g, &got[i], &e.schema->root, 50 * (i + 1));
        qv_arrow_array_release(&got[i]);
    }
    env_close(&e);
}

/* A consumer may move a child out, release the parent, and use the child. */
static void test_child_moved_out(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
    struct gen g = gen_make(9, 3);
    gen_append_rows(&g, b, &e.schema->root, 40);
    struct ArrowArray batch = {0}, col = {0};
    assert_int_equal(qv_builder_finish(b, &batch, NULL), 0);
    qv_builder_destroy(b);
    int64_t k = qv_field_child_index(&e.schema->root, "m");
    assert_int_equal(qv_arrow_array_move(&col, batch.children[k], NULL), 0);
    assert_null(batch.children[k]->release);
    qv_arrow_array_release(&batch);
    assert_int_equal(qv_arrow_array_validate(&col, &e.schema->root.children[k], QV_VALIDATE_FULL, NULL), 0);
    assert_int_equal(col.length, 40);
    qv_arrow_array_release(&col);
    env_close(&e);
}

/* ---- capacity ---- */

static const struct qv_field str_cols[] = {{.name = "id", .type = QV_TYPE_INT64},
                                           {.name = "s", .type = QV_TYPE_UTF8, .nullable = true}};
static const struct qv_field str_root = {.type = QV_TYPE_STRUCT, .n_children = 2, .children = str_cols};

static void append_small_rows(struct qv_builder *b, int64_t rows) {
    for (int64_t r = 0; r < rows; r++) {
        assert_int_equal(qv_append_int64(qv_builder_column(b, 0), r), 0);
        assert_int_equal(qv_append_string(qv_builder_column(b, 1), "hello, world", 12), 0);
    }
}

static void test_capacity_returns_after_giant_string(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &str_root);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
    size_t big = 50u << 20;
    char *s = malloc(big);
    assert_non_null(s);
    memset(s, 'x', big);
    uint64_t base = qv_reservation_used(e.res);

    assert_int_equal(qv_append_int64(qv_builder_column(b, 0), 1), 0);
    assert_int_equal(qv_append_string(qv_builder_column(b, 1), s, big), 0);
    assert_true(qv_reservation_used(e.res) > base + big);
    struct ArrowArray batch = {0};
    assert_int_equal(qv_builder_finish(b, &batch, NULL), 0);
    assert_int_equal(qv_arrow_array_validate(&batch, &e.schema->root, QV_VALIDATE_FULL, NULL), 0);
    const int32_t *off = batch.children[1]->buffers[1];
    assert_int_equal(off[1], (int32_t)big);
    qv_arrow_array_release(&batch);
    free(s);
    /* The builder keeps nothing between batches... */
    assert_int_equal(qv_reservation_used(e.res), base);

    /* ...and the next batch starts at no more than the carry limit (4 MiB),
     * not at the 64 MiB the giant batch grew to. */
    append_small_rows(b, 100);
    uint64_t during2 = qv_reservation_used(e.res) - base;
    assert_true(during2 <= (5u << 20));
    assert_int_equal(qv_builder_finish(b, &batch, NULL), 0);
    qv_arrow_array_release(&batch);

    /* The batch after that starts at what the small batch needed. */
    append_small_rows(b, 100);
    uint64_t during3 = qv_reservation_used(e.res) - base;
    assert_true(during3 < (64u << 10));
    assert_true(during3 < during2);
    assert_int_equal(qv_builder_finish(b, &batch, NULL), 0);
    qv_arrow_array_release(&batch);
    qv_builder_destroy(b);
    env_close(&e);
}

static void test_same_size_batches_do_not_reallocate(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &str_root);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
    uint64_t counts[5];
    for (int i = 0; i < 5; i++) {
        uint64_t before = qv_reservation_alloc_count(e.res);
        append_small_rows(b, 8192);
        struct ArrowArray batch = {0};
        assert_int_equal(qv_builder_finish(b, &batch, NULL), 0);
        counts[i] = qv_reservation_alloc_count(e.res) - before;
        qv_arrow_array_release(&batch);
    }
    /* The first batch grows from 64 slots; afterwards every buffer is
     * allocated once at its final size: id values, s offsets, s data, plus
     * one control block for the exported tree. */
    assert_true(counts[0] > 4);
    for (int i = 1; i < 5; i++) assert_int_equal(counts[i], 4);
    qv_builder_destroy(b);
    env_close(&e);
}

/* ---- poisoning ---- */

static const struct qv_field p_list_item[] = {{.name = "item", .type = QV_TYPE_INT32, .nullable = true}};
static const struct qv_field p_flist_item[] = {{.name = "item", .type = QV_TYPE_INT8, .nullable = true}};
static const struct qv_field p_map_kv[] = {{.name = "key", .type = QV_TYPE_UTF8},
                                           {.name = "value", .type = QV_TYPE_INT32, .nullable = true}};
static const struct qv_field p_map_entries[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 2, .children = p_map_kv}};
static const struct qv_field p_struct_kids[] = {{.name = "x", .type = QV_TYPE_INT32},
                                                {.name = "y", .type = QV_TYPE_INT32, .nullable = true}};
static const struct qv_field p_null_item[] = {{.name = "item", .type = QV_TYPE_NULL, .nullable = true}};
static const struct qv_field p_cols[] = {
    {.name = "i64", .type = QV_TYPE_INT64, .nullable = false},
    {.name = "d5", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 5, .scale = 1},
    {.name = "d30", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 30, .scale = 1},
    {.name = "fb", .type = QV_TYPE_FIXED_BINARY, .nullable = true, .byte_width = 4},
    {.name = "lst", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = p_list_item},
    {.name = "fl", .type = QV_TYPE_FIXED_LIST, .nullable = true, .list_size = 2, .n_children = 1, .children = p_flist_item},
    {.name = "mp", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = p_map_entries},
    {.name = "st", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = p_struct_kids},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "nl", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = p_null_item},
};
static const struct qv_field p_root = {.type = QV_TYPE_STRUCT, .n_children = 10, .children = p_cols};

static void noop(struct ArrowArray *a) { (void)a; }

/* Appends one complete row; with close_list false the list in column 4 is
 * left open. */
static int some_row(struct qv_builder *b, bool close_list) {
    int rc = 0;
    rc |= qv_append_int64(qv_builder_column(b, 0), 7);
    rc |= qv_append_decimal64(qv_builder_column(b, 1), 9999);
    rc |= qv_append_decimal128(qv_builder_column(b, 2), 5, 0);
    rc |= qv_append_fixed_binary(qv_builder_column(b, 3), "abcd", 4);
    rc |= qv_append_list_begin(qv_builder_column(b, 4));
    rc |= qv_append_int32(qv_appender_child(qv_builder_column(b, 4), 0), 1);
    if (close_list) rc |= qv_append_list_end(qv_builder_column(b, 4));
    rc |= qv_append_null(qv_builder_column(b, 5));
    rc |= qv_append_map_begin(qv_builder_column(b, 6));
    rc |= qv_append_map_end(qv_builder_column(b, 6));
    rc |= qv_append_struct_begin(qv_builder_column(b, 7));
    rc |= qv_append_int32(qv_appender_child(qv_builder_column(b, 7), 0), 1);
    rc |= qv_append_null(qv_appender_child(qv_builder_column(b, 7), 1));
    rc |= qv_append_struct_end(qv_builder_column(b, 7));
    rc |= qv_append_string(qv_builder_column(b, 8), "", 0);
    rc |= qv_append_null(qv_builder_column(b, 9));
    return rc;
}

static int good_row(struct qv_builder *b) { return some_row(b, true); }

/* The poisoning contract after a failure with `code` mentioning `needle`:
 * every append (fast paths included) and finish fail; nothing is exported;
 * reset recovers and a clean batch goes through. */
static void expect_poisoned(struct env *e, struct qv_builder *b, int code, const char *needle) {
    const struct qv_error *pe = qv_builder_error(b);
    assert_int_equal(pe->code, code);
    if (!strstr(pe->message, needle)) fail_msg("'%s' not in '%s'", needle, pe->message);
    assert_int_equal(qv_append_int64(qv_builder_column(b, 0), 1), code);
    assert_int_equal(qv_append_string(qv_builder_column(b, 8), "x", 1), code);
    assert_int_equal(qv_append_decimal64(qv_builder_column(b, 1), 1), code);
    assert_int_equal(qv_append_null(qv_builder_column(b, 9)), code);
    assert_int_equal(qv_append_list_begin(qv_builder_column(b, 4)), code);
    struct ArrowArray out = {0};
    struct qv_error err = {0};
    assert_int_equal(qv_builder_finish(b, &out, &err), code);
    assert_null(out.release);
    assert_non_null(strstr(err.message, needle));
    assert_int_equal(qv_builder_append_batch(b, &out, 0, 0, &err), code);

    qv_builder_reset(b);
    assert_int_equal(qv_builder_error(b)->code, 0);
    assert_int_equal(good_row(b), 0);
    assert_int_equal(good_row(b), 0);
    assert_int_equal(qv_builder_finish(b, &out, &err), 0);
    assert_int_equal(out.length, 2);
    assert_int_equal(qv_arrow_array_validate(&out, &e->schema->root, QV_VALIDATE_FULL, &err), 0);
    qv_arrow_array_release(&out);
}

typedef int (*poison_fn)(struct qv_builder *b);

static int p_type_mismatch(struct qv_builder *b) { return qv_append_int32(qv_builder_column(b, 0), 1); }
static int p_null_non_nullable(struct qv_builder *b) { return qv_append_null(qv_builder_column(b, 0)); }
static int p_decimal64_range(struct qv_builder *b) { return qv_append_decimal64(qv_builder_column(b, 1), 100000); }
static int p_decimal64_neg(struct qv_builder *b) { return qv_append_decimal64(qv_builder_column(b, 1), -100000); }
static int p_decimal128_range(struct qv_builder *b) {
    return qv_append_decimal128(qv_builder_column(b, 2), 0, INT64_C(1) << 40); /* ~2e31 > 1e30 */
}
static int p_fixed_binary_size(struct qv_builder *b) { return qv_append_fixed_binary(qv_builder_column(b, 3), "abc", 3); }
static int p_list_end_unopened(struct qv_builder *b) { return qv_append_list_end(qv_builder_column(b, 4)); }
static int p_list_begin_twice(struct qv_builder *b) {
    qv_append_list_begin(qv_builder_column(b, 4));
    return qv_append_list_begin(qv_builder_column(b, 4));
}
static int p_fixed_list_count(struct qv_builder *b) {
    struct qv_appender *fl = qv_builder_column(b, 5);
    qv_append_list_begin(fl);
    qv_append_int8(qv_appender_child(fl, 0), 1);
    return qv_append_list_end(fl);
}
static int p_map_unbalanced(struct qv_builder *b) {
    struct qv_appender *m = qv_builder_column(b, 6);
    qv_append_map_begin(m);
    qv_append_string(qv_appender_map_keys(m), "k", 1);
    return qv_append_map_end(m);
}
static int p_map_null_key(struct qv_builder *b) {
    struct qv_appender *m = qv_builder_column(b, 6);
    qv_append_map_begin(m);
    return qv_append_null(qv_appender_map_keys(m));
}
static int p_struct_missing_child(struct qv_builder *b) {
    struct qv_appender *st = qv_builder_column(b, 7);
    qv_append_struct_begin(st);
    qv_append_int32(qv_appender_child(st, 0), 1);
    return qv_append_struct_end(st);
}
static int p_struct_end_unopened(struct qv_builder *b) { return qv_append_struct_end(qv_builder_column(b, 7)); }
static int p_null_inside_open_list(struct qv_builder *b) {
    qv_append_list_begin(qv_builder_column(b, 4));
    return qv_append_null(qv_builder_column(b, 4));
}
static int p_string_overflow(struct qv_builder *b) {
    /* Rejected before a byte is read, so the pointer need not be that long. */
    static const char tiny[1] = {0};
    const char *volatile p = tiny; /* hide the size from the optimizer's bounds checks */
    return qv_append_string(qv_builder_column(b, 8), p, (size_t)INT32_MAX + 1);
}
static int p_list_offset_overflow(struct qv_builder *b) {
    /* 2^31 null elements cost no memory: a null array has no buffers. */
    struct ArrowArray nulls = {.length = (int64_t)INT32_MAX + 1, .null_count = (int64_t)INT32_MAX + 1,
                               .release = noop};
    struct qv_appender *l = qv_builder_column(b, 9);
    int rc = qv_append_list_begin(l);
    if (!rc) rc = qv_append_array(qv_appender_child(l, 0), &nulls, 0, nulls.length);
    if (!rc) rc = qv_append_list_end(l);
    return rc;
}
static int p_bulk_released(struct qv_builder *b) {
    struct ArrowArray released = {0};
    return qv_append_array(qv_builder_column(b, 0), &released, 0, 0);
}
static int p_finish_incomplete_row(struct qv_builder *b) {
    good_row(b);
    qv_append_int64(qv_builder_column(b, 0), 1); /* a second row, one column only */
    struct ArrowArray out = {0};
    int rc = qv_builder_finish(b, &out, NULL);
    assert_null(out.release);
    return rc;
}
static int p_finish_open_list(struct qv_builder *b) {
    some_row(b, false);
    struct ArrowArray out = {0};
    return qv_builder_finish(b, &out, NULL);
}
static int p_finish_child_outside_list(struct qv_builder *b) {
    good_row(b);
    qv_append_int32(qv_appender_child(qv_builder_column(b, 4), 0), 5); /* no begin/end */
    struct ArrowArray out = {0};
    return qv_builder_finish(b, &out, NULL);
}

struct poison_case {
    const char *name;
    poison_fn fn;
    int code;
    const char *needle;
    bool half_row; /* fail part-way through a row (not for finish cases) */
};

static void test_poisoning(void **state) {
    (void)state;
    static const struct poison_case cases[] = {
        {"type mismatch", p_type_mismatch, EINVAL, "'i64'", true},
        {"null to non-nullable", p_null_non_nullable, EINVAL, "non-nullable", true},
        {"decimal64 out of precision", p_decimal64_range, EINVAL, "decimal128(5, 1)", true},
        {"negative decimal64 out of precision", p_decimal64_neg, EINVAL, "'d5'", true},
        {"decimal128 out of precision", p_decimal128_range, EINVAL, "'d30'", true},
        {"fixed binary size", p_fixed_binary_size, EINVAL, "'fb'", true},
        {"list end without begin", p_list_end_unopened, EINVAL, "'lst'", true},
        {"list begin twice", p_list_begin_twice, EINVAL, "'lst'", true},
        {"fixed list count", p_fixed_list_count, EINVAL, "'fl'", true},
        {"map unbalanced", p_map_unbalanced, EINVAL, "'mp'", true},
        {"map null key", p_map_null_key, EINVAL, "'mp.entries.key'", true},
        {"struct missing child", p_struct_missing_child, EINVAL, "'y'", true},
        {"struct end unopened", p_struct_end_unopened, EINVAL, "'st'", true},
        {"null inside open list", p_null_inside_open_list, EINVAL, "'lst'", true},
        {"string offset overflow", p_string_overflow, EOVERFLOW, "'s'", true},
        {"list offset overflow", p_list_offset_overflow, EOVERFLOW, "'nl'", true},
        {"bulk from released array", p_bulk_released, EINVAL, "released", true},
        {"finish incomplete row", p_finish_incomplete_row, EINVAL, "incomplete", false},
        {"finish open list", p_finish_open_list, EINVAL, "'lst'", false},
        {"finish child outside list", p_finish_child_outside_list, EINVAL, "'lst'", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct env e;
        env_open(&e, &p_root);
        struct qv_builder *b;
        assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
        /* Failures part-way through a row: a complete row, then half a row. */
        assert_int_equal(good_row(b), 0);
        if (cases[i].half_row) qv_append_int64(qv_builder_column(b, 0), 3);
        int rc = cases[i].fn(b);
        if (rc != cases[i].code)
            fail_msg("%s: rc %d (%s), message '%s'", cases[i].name, rc, qv_errno_name(rc),
                     qv_builder_error(b)->message);
        expect_poisoned(&e, b, cases[i].code, cases[i].needle);
        qv_builder_destroy(b);
        env_close(&e);
    }
}

static void test_poison_on_allocation_failure(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &p_root);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
    assert_int_equal(good_row(b), 0);
    qv_pool_inject_alloc_failure(e.pool, 1);
    /* The first string growth allocates: it fails and poisons. */
    char buf[1000] = {0};
    assert_int_equal(qv_append_string(qv_builder_column(b, 8), buf, sizeof buf), ENOMEM);
    qv_pool_inject_alloc_failure(e.pool, 0);
    expect_poisoned(&e, b, ENOMEM, "'s'");
    qv_builder_destroy(b);
    env_close(&e);
}

/* ---- nulls, defaults and edge values, checked by hand ---- */

static void test_null_struct_fills_children(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
    /* Row 0: every nullable column null; non-nullable ones get values. */
    for (int64_t c = 0; c < e.schema->root.n_children; c++) {
        const struct qv_field *f = &e.schema->root.children[c];
        struct qv_appender *a = qv_builder_column(b, c);
        if (f->nullable) {
            assert_int_equal(qv_append_null(a), 0);
        } else if (f->type == QV_TYPE_INT64) {
            assert_int_equal(qv_append_int64(a, INT64_MIN), 0);
        } else { /* nst: struct<p: int32 not null, q: utf8> not null */
            assert_int_equal(qv_append_struct_begin(a), 0);
            assert_int_equal(qv_append_int32(qv_appender_child(a, 0), -1), 0);
            assert_int_equal(qv_append_string(qv_appender_child(a, 1), "", 0), 0);
            assert_int_equal(qv_append_struct_end(a), 0);
        }
    }
    struct ArrowArray out = {0};
    struct qv_error err = {0};
    assert_int_equal(qv_builder_finish(b, &out, &err), 0);
    assert_int_equal(qv_arrow_array_validate(&out, &e.schema->root, QV_VALIDATE_FULL, &err), 0);
    int64_t st = qv_field_child_index(&e.schema->root, "st");
    const struct ArrowArray *sa = out.children[st];
    assert_int_equal(sa->null_count, 1);
    /* x is not nullable: a default 0, no bitmap; y and z nullable: null. */
    assert_int_equal(sa->children[0]->length, 1);
    assert_null(sa->children[0]->buffers[0]);
    assert_int_equal(((const int32_t *)sa->children[0]->buffers[1])[0], 0);
    assert_int_equal(sa->children[1]->null_count, 1);
    assert_int_equal(sa->children[2]->null_count, 1);
    assert_int_equal(sa->children[2]->children[0]->null_count, 1);
    /* A null list is empty. */
    const struct ArrowArray *la = out.children[qv_field_child_index(&e.schema->root, "l")];
    assert_int_equal(((const int32_t *)la->buffers[1])[1], 0);
    assert_int_equal(la->children[0]->length, 0);
    /* A null fixed-size list still has list_size child slots. */
    const struct ArrowArray *fla = out.children[qv_field_child_index(&e.schema->root, "fl")];
    assert_int_equal(fla->children[0]->length, 3);
    /* The null type column. */
    const struct ArrowArray *na = out.children[qv_field_child_index(&e.schema->root, "nul")];
    assert_int_equal(na->null_count, 1);
    assert_int_equal(na->n_buffers, 0);
    qv_arrow_array_release(&out);
    qv_builder_destroy(b);
    env_close(&e);
}

static void test_empty_and_zero_row_batches(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
    struct ArrowArray out = {0};
    assert_int_equal(qv_builder_finish(b, &out, &err), 0);
    assert_int_equal(out.length, 0);
    assert_int_equal(out.n_children, gen_root.n_children);
    assert_int_equal(qv_arrow_array_validate(&out, &e.schema->root, QV_VALIDATE_FULL, &err), 0);
    /* Zero-length variable-size arrays still have their one offset. */
    const struct ArrowArray *s = out.children[qv_field_child_index(&e.schema->root, "s")];
    assert_non_null(s->buffers[1]);
    assert_int_equal(((const int32_t *)s->buffers[1])[0], 0);
    qv_arrow_array_release(&out);

    /* A zero-column schema. */
    struct qv_field none = {.type = QV_TYPE_STRUCT};
    struct qv_schema *ns;
    assert_int_equal(qv_schema_create(&none, e.res, &ns, &err), 0);
    struct qv_builder *b0;
    assert_int_equal(qv_builder_create(ns, e.res, NULL, &b0, &err), 0);
    assert_int_equal(qv_builder_finish(b0, &out, &err), 0);
    assert_int_equal(out.length, 0);
    assert_int_equal(out.n_children, 0);
    qv_arrow_array_release(&out);
    qv_builder_destroy(b0);
    qv_schema_destroy(ns);
    qv_builder_destroy(b);
    env_close(&e);
}

static void test_create_errors(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &p_root);
    struct qv_error err = {0};
    struct qv_builder *b = (struct qv_builder *)&err;
    struct qv_field scalar = {.name = "x", .type = QV_TYPE_INT32};
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&scalar, e.res, &s, &err), 0);
    assert_int_equal(qv_builder_create(s, e.res, NULL, &b, &err), EINVAL);
    assert_null(b);
    assert_non_null(strstr(err.message, "struct"));
    qv_schema_destroy(s);
    struct qv_builder_options bad = {.initial_capacity = -1};
    assert_int_equal(qv_builder_create(e.schema, e.res, &bad, &b, &err), EINVAL);
    assert_int_equal(qv_builder_create(NULL, e.res, NULL, &b, &err), EINVAL);
    struct ArrowArray out = {.release = noop};
    assert_int_equal(qv_builder_finish(NULL, &out, &err), EINVAL);
    assert_null(out.release);
    env_close(&e);
}

/* Resetting after a big batch gives the memory back. */
static void test_reset_frees(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &str_root);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, NULL), 0);
    uint64_t base = qv_reservation_used(e.res);
    append_small_rows(b, 100000);
    assert_true(qv_reservation_used(e.res) > base + 1000000);
    qv_builder_reset(b);
    assert_int_equal(qv_reservation_used(e.res), base);
    assert_int_equal(qv_builder_num_rows(b), 0);
    append_small_rows(b, 10);
    struct ArrowArray out = {0};
    assert_int_equal(qv_builder_finish(b, &out, NULL), 0);
    assert_int_equal(out.length, 10);
    qv_arrow_array_release(&out);
    qv_builder_destroy(b);
    env_close(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_types),
        cmocka_unit_test(test_roundtrip_tiny_capacity),
        cmocka_unit_test(test_batches_outlive_builder_and_stream),
        cmocka_unit_test(test_child_moved_out),
        cmocka_unit_test(test_capacity_returns_after_giant_string),
        cmocka_unit_test(test_same_size_batches_do_not_reallocate),
        cmocka_unit_test(test_poisoning),
        cmocka_unit_test(test_poison_on_allocation_failure),
        cmocka_unit_test(test_null_struct_fills_children),
        cmocka_unit_test(test_empty_and_zero_row_batches),
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_reset_frees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
