/* The builder's bulk API: slices of existing arrays, with non-zero offsets at
 * the top and in children, copied into batches; mixed with the row API;
 * and hostile sources rejected without writing a bad batch. */
#include "test_builder_gen.h"

#include "quiver/memory.h"

struct env {
    struct qv_pool *pool;
    struct qv_reservation *res;
    struct qv_schema *schema;
};

static void env_open(struct env *e, const struct qv_field *root) {
    assert_int_equal(qv_pool_create(NULL, &e->pool, NULL), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->res, NULL), 0);
    assert_int_equal(qv_schema_create(root, e->res, &e->schema, NULL), 0);
}

static void env_close(struct env *e) {
    qv_schema_destroy(e->schema);
    assert_int_equal(qv_reservation_used(e->res), 0);
    qv_reservation_destroy(e->res);
    qv_pool_destroy(e->pool);
}

static void noop(struct ArrowArray *a) { (void)a; }

/* A borrowed view of `a`: same buffers, its own offset/length. */
static struct ArrowArray view(const struct ArrowArray *a, int64_t skip, int64_t length) {
    struct ArrowArray v = *a;
    v.offset = a->offset + skip;
    v.length = length;
    v.null_count = -1; /* unknown for a slice */
    v.release = noop;
    return v;
}

/* A source batch of `rows` generated rows. */
static void make_source(struct env *e, uint64_t seed, int64_t rows, struct ArrowArray *out) {
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e->schema, e->res, NULL, &b, NULL), 0);
    struct gen g = gen_make(seed, 3);
    gen_append_rows(&g, b, &e->schema->root, rows);
    assert_int_equal(qv_builder_finish(b, out, NULL), 0);
    qv_builder_destroy(b);
}

static void expect_equal(struct env *e, const struct ArrowArray *got, const struct ArrowArray *want) {
    char why[512];
    struct qv_error err = {0};
    if (qv_arrow_array_validate(got, &e->schema->root, QV_VALIDATE_FULL, &err)) fail_msg("%s", err.message);
    if (!qv_arrow_array_equal(&e->schema->root, got, want, why, sizeof why)) fail_msg("%s", why);
}

static void test_append_batch_sliced(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct ArrowArray src;
    make_source(&e, 42, 600, &src);
    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, &err), 0);

    /* The source itself sliced (offset 37), and a slice of that (start 13). */
    struct ArrowArray v = view(&src, 37, 500);
    assert_int_equal(qv_builder_append_batch(b, &v, 13, 400, &err), 0);
    struct ArrowArray got = {0};
    assert_int_equal(qv_builder_finish(b, &got, &err), 0);
    struct ArrowArray want = view(&src, 50, 400);
    expect_equal(&e, &got, &want);
    assert_int_equal(got.offset, 0);
    qv_arrow_array_release(&got);

    /* Every slice boundary, in pieces: the result is the source again. */
    static const int64_t cuts[] = {0, 1, 2, 7, 64, 65, 300, 599, 600};
    for (size_t i = 0; i + 1 < sizeof cuts / sizeof cuts[0]; i++)
        assert_int_equal(qv_builder_append_batch(b, &src, cuts[i], cuts[i + 1] - cuts[i], &err), 0);
    assert_int_equal(qv_builder_finish(b, &got, &err), 0);
    expect_equal(&e, &got, &src);
    qv_arrow_array_release(&got);
    qv_builder_destroy(b);
    qv_arrow_array_release(&src);
    env_close(&e);
}

/* Columns that are themselves slices (children with their own offsets, as
 * when a struct is assembled from sliced arrays). */
static void test_children_with_offsets(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct ArrowArray src;
    make_source(&e, 7, 300, &src);
    int64_t n = src.n_children;
    struct ArrowArray kids[64], *kid_ptrs[64];
    assert_true(n <= 64);
    for (int64_t c = 0; c < n; c++) {
        kids[c] = view(src.children[c], 21, 300 - 21);
        kid_ptrs[c] = &kids[c];
    }
    struct ArrowArray top = src;
    top.children = kid_ptrs;
    top.length = 300 - 21;
    top.release = noop;

    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, &err), 0);
    assert_int_equal(qv_builder_append_batch(b, &top, 4, 200, &err), 0);
    struct ArrowArray got = {0};
    assert_int_equal(qv_builder_finish(b, &got, &err), 0);
    struct ArrowArray want = view(&src, 25, 200);
    expect_equal(&e, &got, &want);
    qv_arrow_array_release(&got);
    qv_builder_destroy(b);
    qv_arrow_array_release(&src);
    env_close(&e);
}

/* qv_append_array column by column, after rows appended one at a time. */
static void test_mixed_row_and_bulk(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &gen_root);
    struct ArrowArray src;
    make_source(&e, 99, 250, &src);
    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, &err), 0);
    struct gen g = gen_make(1234, 4);
    gen_append_rows(&g, b, &e.schema->root, 10);
    for (int64_t c = 0; c < src.n_children; c++) {
        struct qv_appender *a = qv_builder_column(b, c);
        assert_int_equal(qv_append_array(a, src.children[c], 0, 100), 0);
        assert_int_equal(qv_append_array(a, src.children[c], 100, 0), 0);
        assert_int_equal(qv_append_array(a, src.children[c], 100, 150), 0);
    }
    struct gen g2 = gen_make(5678, 4);
    gen_append_rows(&g2, b, &e.schema->root, 5);
    struct ArrowArray got = {0};
    assert_int_equal(qv_builder_finish(b, &got, &err), 0);
    assert_int_equal(got.length, 265);
    assert_int_equal(qv_arrow_array_validate(&got, &e.schema->root, QV_VALIDATE_FULL, &err), 0);
    struct gen c1 = gen_make(1234, 4);
    gen_check_rows(&c1, &(struct ArrowArray){.length = 10, .n_children = got.n_children,
                                             .children = got.children, .release = noop},
                   &e.schema->root, 10);
    struct ArrowArray mid = view(&got, 10, 250);
    char why[512];
    if (!qv_arrow_array_equal(&e.schema->root, &mid, &src, why, sizeof why)) fail_msg("%s", why);
    struct ArrowArray tail = view(&got, 260, 5);
    struct gen c2 = gen_make(5678, 4);
    gen_check_rows(&c2, &tail, &e.schema->root, 5);
    qv_arrow_array_release(&got);
    qv_builder_destroy(b);
    qv_arrow_array_release(&src);
    env_close(&e);
}

/* List elements in bulk between list_begin and list_end. */
static const struct qv_field l_item[] = {{.name = "item", .type = QV_TYPE_INT64, .nullable = true}};
static const struct qv_field l_cols[] = {
    {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = l_item},
    {.name = "v", .type = QV_TYPE_INT64, .nullable = false},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field l_root = {.type = QV_TYPE_STRUCT, .n_children = 3, .children = l_cols};

static void test_bulk_list_elements(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &l_root);
    int64_t vals[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    uint8_t valid = 0xFB; /* index 2 null */
    uint8_t valid2[2] = {0xFF, 0x03};
    const void *bufs[2] = {&valid, vals};
    const void *bufs2[2] = {valid2, vals};
    struct ArrowArray items = {.length = 8, .null_count = 1, .offset = 1, .n_buffers = 2,
                               .buffers = bufs, .release = noop};
    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, &err), 0);
    struct qv_appender *l = qv_builder_column(b, 0);
    assert_int_equal(qv_append_list_begin(l), 0);
    assert_int_equal(qv_append_array(qv_appender_child(l, 0), &items, 0, 3), 0); /* 1, null, 3 */
    assert_int_equal(qv_append_int64(qv_appender_child(l, 0), 100), 0);
    assert_int_equal(qv_append_list_end(l), 0);
    assert_int_equal(qv_append_int64(qv_builder_column(b, 1), 1), 0);
    assert_int_equal(qv_append_null(qv_builder_column(b, 2)), 0);
    struct ArrowArray got = {0};
    assert_int_equal(qv_builder_finish(b, &got, &err), 0);
    assert_int_equal(qv_arrow_array_validate(&got, &e.schema->root, QV_VALIDATE_FULL, &err), 0);
    const struct ArrowArray *child = got.children[0]->children[0];
    assert_int_equal(child->length, 4);
    assert_int_equal(child->null_count, 1);
    const int64_t *cv = child->buffers[1];
    assert_int_equal(cv[0], 1);
    assert_int_equal(cv[2], 3);
    assert_int_equal(cv[3], 100);
    assert_false(qv_bit_get(child->buffers[0], 1));
    qv_arrow_array_release(&got);

    /* A source without nulls after one with nulls keeps the bitmap right. */
    struct ArrowArray items2 = {.length = 10, .null_count = 0, .n_buffers = 2,
                                .buffers = bufs2, .release = noop};
    assert_int_equal(qv_append_list_begin(l), 0);
    assert_int_equal(qv_append_array(qv_appender_child(l, 0), &items, 0, 3), 0);
    assert_int_equal(qv_append_array(qv_appender_child(l, 0), &items2, 0, 10), 0);
    assert_int_equal(qv_append_list_end(l), 0);
    assert_int_equal(qv_append_int64(qv_builder_column(b, 1), 1), 0);
    assert_int_equal(qv_append_null(qv_builder_column(b, 2)), 0);
    assert_int_equal(qv_builder_finish(b, &got, &err), 0);
    assert_int_equal(qv_arrow_array_validate(&got, &e.schema->root, QV_VALIDATE_FULL, &err), 0);
    child = got.children[0]->children[0];
    assert_int_equal(child->null_count, 1);
    for (int i = 3; i < 13; i++) assert_true(qv_bit_get(child->buffers[0], i));
    qv_arrow_array_release(&got);
    qv_builder_destroy(b);
    env_close(&e);
}

/* Hostile or wrong sources: an error and a poisoned builder, never a bad
 * batch. */
static void test_bulk_rejects_bad_sources(void **state) {
    (void)state;
    struct env e;
    env_open(&e, &l_root);
    struct qv_builder *b;
    struct qv_error err = {0};
    assert_int_equal(qv_builder_create(e.schema, e.res, NULL, &b, &err), 0);
    struct qv_appender *s = qv_builder_column(b, 2);

    /* Offsets that pass the cheap tier (first 0, last 6) but go backwards
     * and past the end in between. */
    int32_t offs[4] = {0, 5, 2, 6};
    const char *data = "abcdef";
    const void *sb[3] = {NULL, offs, data};
    struct ArrowArray bad = {.length = 3, .n_buffers = 3, .buffers = sb, .release = noop};
    assert_int_equal(qv_append_array(s, &bad, 0, 3), EINVAL);
    assert_non_null(strstr(qv_builder_error(b)->message, "'s'"));
    struct ArrowArray out = {0};
    assert_int_equal(qv_builder_finish(b, &out, &err), EINVAL);
    assert_null(out.release);
    qv_builder_reset(b);

    int32_t offs2[4] = {0, 5, 9, 6};
    sb[1] = offs2;
    assert_int_equal(qv_append_array(s, &bad, 0, 3), EINVAL);
    qv_builder_reset(b);

    /* The offsets are rebased in one pass that only notes a bad one; the
     * message still names the first (slot 2 above and here), and extreme
     * values in between (a rebase that would overflow) are refused the
     * same way. */
    int32_t offs3[5] = {0, 1, INT32_MIN, INT32_MAX, 6};
    sb[1] = offs3;
    bad.length = 4;
    assert_int_equal(qv_append_array(s, &bad, 0, 4), EINVAL);
    assert_non_null(strstr(qv_builder_error(b)->message, "at slot 2 is out of order"));
    qv_builder_reset(b);
    sb[1] = offs;
    bad.length = 3;
    assert_int_equal(qv_append_array(s, &bad, 0, 3), EINVAL);
    assert_non_null(strstr(qv_builder_error(b)->message, "offset 2 at slot 2 is out of order"));
    qv_builder_reset(b);

    /* Slice outside the array. */
    int32_t good_offs[4] = {0, 1, 2, 3};
    sb[1] = good_offs;
    assert_int_equal(qv_append_array(s, &bad, 2, 2), EINVAL);
    assert_non_null(strstr(qv_builder_error(b)->message, "outside"));
    qv_builder_reset(b);
    assert_int_equal(qv_append_array(s, &bad, -1, 1), EINVAL);
    qv_builder_reset(b);

    /* Wrong shape for the column's type (two buffers for utf8). */
    struct ArrowArray shape = bad;
    shape.n_buffers = 2;
    assert_int_equal(qv_append_array(s, &shape, 0, 1), EINVAL);
    assert_non_null(strstr(qv_builder_error(b)->message, "buffers"));
    qv_builder_reset(b);

    /* Nulls into a non-nullable top-level column. */
    int64_t vals[2] = {1, 2};
    uint8_t valid = 0x1;
    const void *vb[2] = {&valid, vals};
    struct ArrowArray nulls = {.length = 2, .null_count = 1, .n_buffers = 2, .buffers = vb,
                               .release = noop};
    assert_int_equal(qv_append_array(qv_builder_column(b, 1), &nulls, 0, 2), EINVAL);
    assert_non_null(strstr(qv_builder_error(b)->message, "non-nullable"));
    qv_builder_reset(b);
    /* ...but a slice without the null is fine. */
    assert_int_equal(qv_append_array(qv_builder_column(b, 1), &nulls, 0, 1), 0);
    qv_builder_reset(b);

    /* A whole batch whose column count does not match. */
    struct ArrowArray *kids[1] = {&nulls};
    struct ArrowArray batch = {.length = 2, .n_buffers = 1, .n_children = 1,
                               .buffers = (const void *[1]){NULL}, .children = kids, .release = noop};
    assert_int_equal(qv_builder_append_batch(b, &batch, 0, 2, &err), EINVAL);
    assert_non_null(strstr(err.message, "children"));
    qv_builder_reset(b);

    /* A struct array with null rows is not a record batch. */
    struct ArrowArray src = {0};
    {
        struct qv_builder *sb2;
        struct qv_schema *ps;
        static const struct qv_field inner = {.name = "rec", .type = QV_TYPE_STRUCT, .nullable = true,
                                              .n_children = 3, .children = l_cols};
        static const struct qv_field outer = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = &inner};
        assert_int_equal(qv_schema_create(&outer, e.res, &ps, &err), 0);
        assert_int_equal(qv_builder_create(ps, e.res, NULL, &sb2, &err), 0);
        struct qv_appender *rec = qv_builder_column(sb2, 0);
        assert_int_equal(qv_append_null(rec), 0);
        assert_int_equal(qv_append_struct_begin(rec), 0);
        assert_int_equal(qv_append_null(qv_appender_child(rec, 0)), 0);
        assert_int_equal(qv_append_int64(qv_appender_child(rec, 1), 5), 0);
        assert_int_equal(qv_append_string(qv_appender_child(rec, 2), "x", 1), 0);
        assert_int_equal(qv_append_struct_end(rec), 0);
        struct ArrowArray whole;
        assert_int_equal(qv_builder_finish(sb2, &whole, &err), 0);
        qv_builder_destroy(sb2);
        qv_schema_destroy(ps);
        assert_int_equal(qv_arrow_array_move(&src, whole.children[0], &err), 0);
        qv_arrow_array_release(&whole);
    }
    assert_int_equal(qv_builder_append_batch(b, &src, 0, 2, &err), EINVAL);
    assert_non_null(strstr(err.message, "null rows"));
    qv_builder_reset(b);
    assert_int_equal(qv_builder_append_batch(b, &src, 1, 1, &err), 0); /* the valid row */
    struct ArrowArray one = {0};
    assert_int_equal(qv_builder_finish(b, &one, &err), 0);
    assert_int_equal(one.length, 1);
    assert_int_equal(((const int64_t *)one.children[1]->buffers[1])[0], 5);
    qv_arrow_array_release(&one);
    qv_arrow_array_release(&src);
    qv_builder_destroy(b);
    env_close(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_batch_sliced),
        cmocka_unit_test(test_children_with_offsets),
        cmocka_unit_test(test_mixed_row_and_bulk),
        cmocka_unit_test(test_bulk_list_elements),
        cmocka_unit_test(test_bulk_rejects_bad_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
