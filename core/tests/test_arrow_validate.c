/* Import validation: a valid batch passes both tiers, and every check, when
 * broken one at a time, yields EINVAL with the field path and the problem in
 * the message; FULL-only checks pass the CHEAP tier. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "quiver/arrow.h"

static const struct qv_field l_item[] = {{.name = "item", .type = QV_TYPE_INT64, .nullable = true}};
static const struct qv_field st_kids[] = {{.name = "y", .type = QV_TYPE_UTF8, .nullable = true}};
static const struct qv_field m_kv[] = {{.name = "key", .type = QV_TYPE_UTF8},
                                       {.name = "value", .type = QV_TYPE_INT32, .nullable = true}};
static const struct qv_field m_entries[] = {{.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 2, .children = m_kv}};
static const struct qv_field fl_item[] = {{.name = "item", .type = QV_TYPE_INT8, .nullable = true}};
static const struct qv_field ll_struct[] = {{.name = "q", .type = QV_TYPE_UTF8, .nullable = true}};
static const struct qv_field ll_item[] = {{.name = "item", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 1, .children = ll_struct}};
static const struct qv_field cols[] = {
    {.name = "i", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = l_item},
    {.name = "st", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 1, .children = st_kids},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = m_entries},
    {.name = "fl", .type = QV_TYPE_FIXED_LIST, .nullable = true, .list_size = 2, .n_children = 1, .children = fl_item},
    {.name = "d", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 5, .scale = 2},
    {.name = "n", .type = QV_TYPE_NULL, .nullable = true},
    {.name = "ll", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = ll_item},
    {.name = "fb", .type = QV_TYPE_FIXED_BINARY, .nullable = true, .byte_width = 3},
};
static const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 10, .children = cols};
enum { I, S, L, ST, M, FL, D, N, LL, FB };

struct fixture {
    struct qv_pool *pool;
    struct qv_reservation *res;
    struct ArrowArray batch;
};

#define OK(x) assert_int_equal((x), 0)

static void build(struct fixture *fx) {
    struct qv_schema *schema;
    struct qv_builder *b;
    OK(qv_pool_create(NULL, &fx->pool, NULL));
    OK(qv_reservation_create(fx->pool, NULL, &fx->res, NULL));
    OK(qv_schema_create(&root, fx->res, &schema, NULL));
    OK(qv_builder_create(schema, fx->res, NULL, &b, NULL));
    struct qv_appender *c[10];
    for (int k = 0; k < 10; k++) c[k] = qv_builder_column(b, k);
    struct qv_appender *mk = qv_appender_map_keys(c[M]), *mv = qv_appender_map_values(c[M]);
    struct qv_appender *llq = qv_appender_child(qv_appender_child(c[LL], 0), 0);
    /* row 0 */
    OK(qv_append_int32(c[I], 1));
    OK(qv_append_string(c[S], "ab", 2));
    OK(qv_append_list_begin(c[L]));
    OK(qv_append_int64(qv_appender_child(c[L], 0), 1));
    OK(qv_append_int64(qv_appender_child(c[L], 0), 2));
    OK(qv_append_list_end(c[L]));
    OK(qv_append_struct_begin(c[ST]));
    OK(qv_append_string(qv_appender_child(c[ST], 0), "x", 1));
    OK(qv_append_struct_end(c[ST]));
    OK(qv_append_map_begin(c[M]));
    OK(qv_append_string(mk, "k1", 2));
    OK(qv_append_int32(mv, 1));
    OK(qv_append_map_end(c[M]));
    OK(qv_append_list_begin(c[FL]));
    OK(qv_append_int8(qv_appender_child(c[FL], 0), 1));
    OK(qv_append_int8(qv_appender_child(c[FL], 0), 2));
    OK(qv_append_list_end(c[FL]));
    OK(qv_append_decimal64(c[D], 123));
    OK(qv_append_null(c[N]));
    OK(qv_append_list_begin(c[LL]));
    OK(qv_append_struct_begin(qv_appender_child(c[LL], 0)));
    OK(qv_append_string(llq, "\xc3\xa9", 2));
    OK(qv_append_struct_end(qv_appender_child(c[LL], 0)));
    OK(qv_append_list_end(c[LL]));
    OK(qv_append_fixed_binary(c[FB], "abc", 3));
    /* row 1: nulls and empties */
    for (int k = 0; k < 10; k++) {
        if (k == L || k == M || k == LL) {
            OK(k == M ? qv_append_map_begin(c[k]) : qv_append_list_begin(c[k]));
            OK(k == M ? qv_append_map_end(c[k]) : qv_append_list_end(c[k]));
        } else {
            OK(qv_append_null(c[k]));
        }
    }
    /* row 2 */
    OK(qv_append_int32(c[I], 3));
    OK(qv_append_string(c[S], "cd\xc3\xa9", 4));
    OK(qv_append_list_begin(c[L]));
    OK(qv_append_int64(qv_appender_child(c[L], 0), 3));
    OK(qv_append_list_end(c[L]));
    OK(qv_append_struct_begin(c[ST]));
    OK(qv_append_null(qv_appender_child(c[ST], 0)));
    OK(qv_append_struct_end(c[ST]));
    OK(qv_append_map_begin(c[M]));
    OK(qv_append_string(mk, "k2", 2));
    OK(qv_append_null(mv));
    OK(qv_append_string(mk, "k3", 2));
    OK(qv_append_int32(mv, 3));
    OK(qv_append_map_end(c[M]));
    OK(qv_append_list_begin(c[FL]));
    OK(qv_append_int8(qv_appender_child(c[FL], 0), 3));
    OK(qv_append_null(qv_appender_child(c[FL], 0)));
    OK(qv_append_list_end(c[FL]));
    OK(qv_append_decimal64(c[D], -99999));
    OK(qv_append_null(c[N]));
    OK(qv_append_list_begin(c[LL]));
    OK(qv_append_struct_begin(qv_appender_child(c[LL], 0)));
    OK(qv_append_string(llq, "zz", 2));
    OK(qv_append_struct_end(qv_appender_child(c[LL], 0)));
    OK(qv_append_null(qv_appender_child(c[LL], 0)));
    OK(qv_append_list_end(c[LL]));
    OK(qv_append_fixed_binary(c[FB], "xyz", 3));
    struct qv_error err = {0};
    OK(qv_builder_finish(b, &fx->batch, &err));
    qv_builder_destroy(b);
    qv_schema_destroy(schema);
}

static int setup(void **state) {
    static struct fixture fx;
    memset(&fx, 0, sizeof fx);
    build(&fx);
    *state = &fx;
    return 0;
}

static int teardown(void **state) {
    struct fixture *fx = *state;
    qv_arrow_array_release(&fx->batch);
    uint64_t used = qv_reservation_used(fx->res);
    qv_reservation_destroy(fx->res);
    qv_pool_destroy(fx->pool);
    return used == 0 ? 0 : -1;
}

static void expect_bad_at(const struct ArrowArray *batch, enum qv_validate_level level,
                          const char *path, const char *problem, int line) {
    struct qv_error err = {0};
    int rc = qv_arrow_array_validate(batch, &root, level, &err);
    if (rc != EINVAL) fail_msg("line %d: want EINVAL, got %s", line, qv_errno_name(rc));
    if (!strstr(err.message, path)) fail_msg("line %d: path %s not in '%s'", line, path, err.message);
    if (!strstr(err.message, problem)) fail_msg("line %d: '%s' not in '%s'", line, problem, err.message);
}
#define EXPECT_BAD(level, path, problem) expect_bad_at(batch, level, path, problem, __LINE__)
/* Both tiers catch it. */
#define EXPECT_BAD_ALL(path, problem)                          \
    do {                                                       \
        EXPECT_BAD(QV_VALIDATE_CHEAP, path, problem);          \
        EXPECT_BAD(QV_VALIDATE_FULL, path, problem);           \
    } while (0)
/* Only the full tier catches it. */
#define EXPECT_BAD_FULL(path, problem)                                            \
    do {                                                                          \
        assert_int_equal(qv_arrow_array_validate(batch, &root, QV_VALIDATE_CHEAP, NULL), 0); \
        EXPECT_BAD(QV_VALIDATE_FULL, path, problem);                              \
    } while (0)
/* Sets an lvalue for one check and puts it back (WITH2 nests inside WITH). */
#define WITH_(saved, lvalue, value, check) \
    do {                                   \
        __typeof__(lvalue) saved = lvalue; \
        lvalue = value;                    \
        check;                             \
        lvalue = saved;                    \
    } while (0)
#define WITH(lvalue, value, check) WITH_(saved_outer_, lvalue, value, check)
#define WITH2(lvalue, value, check) WITH_(saved_inner_, lvalue, value, check)

static struct ArrowArray *col(struct ArrowArray *batch, int k) { return batch->children[k]; }
static void noop(struct ArrowArray *a) { (void)a; }

static void test_valid_batch_passes(void **state) {
    struct fixture *fx = *state;
    struct ArrowArray *batch = &fx->batch;
    struct qv_error err = {0};
    if (qv_arrow_array_validate(batch, &root, QV_VALIDATE_FULL, &err)) fail_msg("%s", err.message);
    OK(qv_arrow_array_validate(batch, &root, QV_VALIDATE_CHEAP, &err));
    /* A slice, unknown null counts. */
    struct ArrowArray v = *batch;
    v.offset = 1;
    v.length = 2;
    OK(qv_arrow_array_validate(&v, &root, QV_VALIDATE_FULL, &err));
    WITH(col(batch, S)->null_count, -1, OK(qv_arrow_array_validate(batch, &root, QV_VALIDATE_FULL, &err)));
    WITH(col(batch, N)->null_count, -1, OK(qv_arrow_array_validate(batch, &root, QV_VALIDATE_FULL, &err)));

    /* A foreign producer's empty arrays with no buffers at all. */
    const void *none[3] = {NULL, NULL, NULL};
    struct ArrowArray e_s = {.n_buffers = 3, .buffers = none, .release = noop};
    OK(qv_arrow_array_validate(&e_s, &cols[S], QV_VALIDATE_FULL, &err));
    struct ArrowArray e_i = {.n_buffers = 2, .buffers = none, .release = noop};
    OK(qv_arrow_array_validate(&e_i, &cols[I], QV_VALIDATE_FULL, &err));
}

static void test_structure_checks(void **state) {
    struct fixture *fx = *state;
    struct ArrowArray *batch = &fx->batch;
    struct ArrowArray *s = col(batch, S);
    WITH(batch->release, NULL, EXPECT_BAD_ALL("'<root>'", "released"));
    WITH(s->release, NULL, EXPECT_BAD_ALL("'s'", "released"));
    WITH(s->length, -1, EXPECT_BAD_ALL("'s'", "negative"));
    WITH(s->offset, -1, EXPECT_BAD_ALL("'s'", "negative"));
    WITH(s->null_count, -2, EXPECT_BAD_ALL("'s'", "negative"));
    WITH(s->offset, INT64_MAX - 1, EXPECT_BAD_ALL("'s'", "overflows"));
    WITH(s->null_count, 4, EXPECT_BAD_ALL("'s'", "exceeds length"));
    WITH(s->n_buffers, 2, EXPECT_BAD_ALL("'s'", "needs 3 buffers"));
    WITH(s->buffers, NULL, EXPECT_BAD_ALL("'s'", "buffer table"));
    WITH(col(batch, ST)->n_children, 0, EXPECT_BAD_ALL("'st'", "needs 1 children"));
    WITH(col(batch, L)->children, NULL, EXPECT_BAD_ALL("'l'", "child table"));
    WITH(col(batch, L)->children[0], NULL, EXPECT_BAD_ALL("'l'", "child 0 is NULL"));
    WITH(col(batch, L)->children[0]->release, NULL, EXPECT_BAD_ALL("'l.item'", "released"));
    struct ArrowArray dict = {.release = noop};
    WITH(s->dictionary, &dict, EXPECT_BAD_ALL("'s'", "dictionary"));
    WITH(col(batch, N)->null_count, 1, EXPECT_BAD_ALL("'n'", "null array"));
    WITH(col(batch, N)->n_buffers, 1, EXPECT_BAD_ALL("'n'", "needs 0 buffers"));
    WITH(batch->n_children, 9, EXPECT_BAD_ALL("'<root>'", "needs 10 children"));
}

static void test_buffer_checks(void **state) {
    struct fixture *fx = *state;
    struct ArrowArray *batch = &fx->batch;
    struct ArrowArray *s = col(batch, S);
    WITH(col(batch, I)->buffers[0], NULL, EXPECT_BAD_ALL("'i'", "no validity bitmap"));
    WITH(s->buffers[1], NULL, EXPECT_BAD_ALL("'s'", "offsets buffer is NULL"));
    WITH(s->buffers[2], NULL, EXPECT_BAD_ALL("'s'", "data buffer is NULL"));
    WITH(col(batch, D)->buffers[1], NULL, EXPECT_BAD_ALL("'d'", "values buffer is NULL"));
    WITH(col(batch, FB)->offset, (INT64_C(1) << 62) - 10, EXPECT_BAD_ALL("'fb'", "overflows"));
    int32_t *so = (int32_t *)s->buffers[1]; /* offsets 0 2 2 6 */
    WITH(so[0], -1, EXPECT_BAD_ALL("'s'", "first offset -1"));
    WITH(so[0], 7, EXPECT_BAD_ALL("'s'", "last offset 6 is below the first offset 7"));
}

static void test_child_length_checks(void **state) {
    struct fixture *fx = *state;
    struct ArrowArray *batch = &fx->batch;
    WITH(col(batch, ST)->children[0]->length, 2, EXPECT_BAD_ALL("'st.y'", "shorter"));
    WITH(col(batch, L)->children[0]->length, 2, EXPECT_BAD_ALL("'l'", "past the child"));
    WITH(col(batch, FL)->children[0]->length, 5,
         WITH2(col(batch, FL)->children[0]->null_count, -1, EXPECT_BAD_ALL("'fl'", "shorter")));
    WITH(col(batch, M)->children[0]->null_count, 1, EXPECT_BAD_ALL("'m'", "map entries"));
    WITH(col(batch, M)->children[0]->children[1]->length, 2,
         EXPECT_BAD_ALL("'m.entries.value'", "shorter"));
    WITH(col(batch, LL)->children[0]->children[0]->n_buffers, 2,
         EXPECT_BAD_ALL("'ll.item.q'", "needs 3 buffers"));
    WITH(batch->children[S]->length, 2, EXPECT_BAD_ALL("'s'", "shorter"));
}

static void test_full_checks(void **state) {
    struct fixture *fx = *state;
    struct ArrowArray *batch = &fx->batch;
    struct ArrowArray *s = col(batch, S);
    int32_t *so = (int32_t *)s->buffers[1]; /* 0 2 2 6 */
    WITH(so[1], 3, EXPECT_BAD_FULL("'s'", "not monotone at index 2"));
    WITH(so[2], 7, EXPECT_BAD_FULL("'s'", "not monotone"));
    WITH(col(batch, I)->null_count, 2, EXPECT_BAD_FULL("'i'", "does not match"));
    uint8_t *sd = (uint8_t *)s->buffers[2];
    WITH(sd[0], 0xFF, EXPECT_BAD_FULL("'s'", "not valid UTF-8"));
    WITH(sd[5], 0x41, EXPECT_BAD_FULL("'s'", "index 2 is not valid UTF-8")); /* truncated é */
    /* A character straddling two values is invalid in each. */
    const struct ArrowArray *q = col(batch, LL)->children[0]->children[0];
    uint8_t *qd = (uint8_t *)q->buffers[2]; /* "é" "zz" */
    WITH(qd[1], 'z', EXPECT_BAD_FULL("'ll.item.q'", "UTF-8"));
    /* Overlong and surrogate encodings. */
    WITH(sd[4], 0xC0, EXPECT_BAD_FULL("'s'", "UTF-8"));
    uint8_t *li = (uint8_t *)col(batch, L)->buffers[1];
    int32_t *lo = (int32_t *)li; /* 0 2 2 3 */
    WITH(lo[1], 3, EXPECT_BAD_FULL("'l'", "not monotone"));
    /* A null map key (keys carry no bitmap; give them one). */
    struct ArrowArray *keys = col(batch, M)->children[0]->children[0];
    uint8_t kb = 0x5; /* entries 0 and 2 valid, 1 (k2) null */
    WITH(keys->buffers[0], &kb,
         WITH2(keys->null_count, 1, EXPECT_BAD_FULL("'m'", "map key at entry 1 is null")));
    int64_t *dv = (int64_t *)col(batch, D)->buffers[1];
    WITH(dv[0], 100000, EXPECT_BAD_FULL("'d'", "does not fit decimal128(5, 2)"));
    WITH(dv[4], -100000, WITH2(dv[5], -1, EXPECT_BAD_FULL("'d'", "index 2")));
    /* Under a null slot nothing is checked. */
    WITH(dv[2], 100000, OK(qv_arrow_array_validate(batch, &root, QV_VALIDATE_FULL, NULL)));
    /* The edges of the whole-buffer fast check (then the exact walk). */
    WITH(dv[0], 99999, OK(qv_arrow_array_validate(batch, &root, QV_VALIDATE_FULL, NULL)));
    WITH(dv[0], -99999, WITH2(dv[1], -1,
         OK(qv_arrow_array_validate(batch, &root, QV_VALIDATE_FULL, NULL))));
    WITH(dv[1], 1, EXPECT_BAD_FULL("'d'", "index 0 does not fit")); /* hi not lo's sign */
    WITH(dv[1], -1, EXPECT_BAD_FULL("'d'", "index 0 does not fit")); /* positive lo, hi -1 */
}

/* Decimals of precision 18, the widest the fast check takes: the bounds
 * are +-(10^18 - 1); INT64_MIN as lo (its negation overflows) is refused. */
static void test_decimal18_bounds(void **state) {
    (void)state;
    static const struct qv_field d18 = {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 18,
                                        .scale = 0};
    const int64_t max = INT64_C(999999999999999999);
    int64_t v[8] = {max, 0, -max, -1, 0, 0, 7, 0};
    const void *bufs[2] = {NULL, v};
    struct ArrowArray a = {.length = 4, .null_count = 0, .n_buffers = 2, .buffers = bufs,
                           .release = (void (*)(struct ArrowArray *))1};
    OK(qv_arrow_array_validate(&a, &d18, QV_VALIDATE_FULL, NULL));
    struct qv_error err;
    v[4] = max + 1;
    assert_int_equal(qv_arrow_array_validate(&a, &d18, QV_VALIDATE_FULL, &err), EINVAL);
    assert_non_null(strstr(err.message, "index 2 does not fit decimal128(18, 0)"));
    v[4] = -max - 1;
    v[5] = -1;
    assert_int_equal(qv_arrow_array_validate(&a, &d18, QV_VALIDATE_FULL, &err), EINVAL);
    assert_non_null(strstr(err.message, "index 2"));
    v[4] = INT64_MIN;
    assert_int_equal(qv_arrow_array_validate(&a, &d18, QV_VALIDATE_FULL, &err), EINVAL);
    v[4] = 0;
    v[5] = 0;
    a.offset = 1; /* slots 1..3: -max, 0, 7 */
    a.length = 3;
    OK(qv_arrow_array_validate(&a, &d18, QV_VALIDATE_FULL, NULL));
}

static void test_import(void **state) {
    struct fixture *fx = *state;
    struct ArrowArray dst = {0};
    struct qv_error err = {0};
    struct ArrowArray *s = col(&fx->batch, S);
    /* Failure: nothing moves. */
    s->length = 1;
    assert_int_equal(qv_arrow_array_import(&dst, &fx->batch, &root, QV_VALIDATE_CHEAP, &err), EINVAL);
    assert_non_null(strstr(err.message, "array import"));
    assert_null(dst.release);
    assert_non_null(fx->batch.release);
    s->length = 3;
    OK(qv_arrow_array_import(&dst, &fx->batch, &root, QV_VALIDATE_FULL, &err));
    assert_null(fx->batch.release);
    /* Use after move is caught. */
    struct ArrowArray dst2 = {0};
    assert_int_equal(qv_arrow_array_import(&dst2, &fx->batch, &root, QV_VALIDATE_CHEAP, &err), EINVAL);
    assert_non_null(strstr(err.message, "released"));
    /* A destination that still owns data is refused. */
    struct ArrowArray keep = {.release = noop};
    assert_int_equal(qv_arrow_array_import(&keep, &dst, &root, QV_VALIDATE_CHEAP, &err), EINVAL);
    OK(qv_arrow_array_move(&fx->batch, &dst, &err)); /* back, for teardown */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_valid_batch_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_structure_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffer_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_child_length_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import, setup, teardown),
        cmocka_unit_test(test_decimal18_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
