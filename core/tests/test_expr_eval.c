/* Predicate evaluation: a property test against an independent row-by-row
 * evaluator over random batches of every type (with nulls, offsets, and a
 * column mapping), and targeted tests of the semantics that are easy to get
 * wrong: exact decimals, NaN, three-valued IN, timestamps, strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_expr_gen.h"
#include "memory/memory_testing.h"

struct env {
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_reservation *scratch;
};

static int setup(void **state) {
    struct env *e = calloc(1, sizeof *e);
    struct qv_error err;
    assert_int_equal(qv_pool_create(NULL, &e->pool, &err), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->r, &err), 0);
    struct qv_reservation_options so = {.name = "scratch"};
    assert_int_equal(qv_reservation_create(e->pool, &so, &e->scratch, &err), 0);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    struct env *e = *state;
    assert_int_equal(qv_reservation_used(e->scratch), 0);
    qv_reservation_destroy(e->scratch);
    qv_reservation_destroy(e->r);
    qv_pool_destroy(e->pool);
    free(e);
    return 0;
}

/* A view of a batch: children permuted (with the mapping column -> child)
 * and shifted by a few slots each, and the batch itself offset. */
struct view {
    struct ArrowArray batch;
    struct ArrowArray kids[64];
    struct ArrowArray *ptrs[64];
    int map[64];
    int32_t map32[64];
    const void *bufs[64][1];
    uint8_t bits[64][48];
};

static void make_view(const struct ArrowArray *src, const struct qv_schema *s, uint64_t *seed,
                      int mode, struct view *v) {
    int64_t nc = src->n_children;
    v->batch = *src;
    if (mode == 0) return;
    int64_t shift_max = src->length > 8 ? 5 : 0, boff = 0;
    if (mode >= 1 && src->length > 3) boff = (int64_t)(rb_next(seed) % 3);
    for (int64_t i = 0; i < nc; i++) v->map[i] = (int)i;
    if (mode == 2)
        for (int64_t i = nc - 1; i > 0; i--) {
            int64_t j = (int64_t)(rb_next(seed) % (uint64_t)(i + 1));
            int t = v->map[i];
            v->map[i] = v->map[j];
            v->map[j] = t;
        }
    /* Column c goes to child map[c]. */
    for (int64_t c = 0; c < nc; c++) {
        struct ArrowArray *k = &v->kids[v->map[c]];
        *k = *src->children[c];
        int64_t sh = mode == 2 && shift_max ? (int64_t)(rb_next(seed) % (uint64_t)(shift_max + 1)) : 0;
        k->offset += sh;
        k->length -= sh;
        k->null_count = -1; /* unknown after slicing */
        /* Structs null where their fields are not: nested nullness must
         * combine both levels. */
        if (mode == 2 && s->root.children[c].type == QV_TYPE_STRUCT)
            g_scramble_validity(k, v->bufs[c], v->bits[c], seed);
        v->ptrs[v->map[c]] = k;
        v->map32[c] = v->map[c];
    }
    v->batch.children = v->ptrs;
    v->batch.offset = boff;
    v->batch.length = src->length - boff - (mode == 2 ? shift_max : 0);
    if (v->batch.length < 0) v->batch.length = 0;
}

static void check_one(struct env *E, const struct qv_schema *schema, const struct gcat *cat,
                      const struct gnode *root, const char *text, const struct ArrowArray *batch,
                      const int *map, const int32_t *map32, int64_t *selected_total,
                      int64_t *rows_total) {
    struct qv_error err = {0};
    struct qv_expr *e = NULL;
    int rc = qv_expr_parse(text, E->r, &e, &err);
    if (rc) fail_msg("parse failed for %s: %s", text, err.message);
    rc = qv_expr_bind(e, schema, &err);
    if (rc) fail_msg("bind failed for %s: %s", text, err.message);
    int64_t n = batch->length;
    uint8_t *sel = calloc((size_t)qv_bytes_for_bits(n) + 1, 1);
    int64_t count = -1;
    rc = qv_expr_eval(e, batch, map32, sel, &count, E->scratch, &err);
    if (rc) fail_msg("eval failed for %s: %s", text, err.message);
    int64_t expect_count = 0;
    for (int64_t i = 0; i < n; i++) {
        int tv = g_eval(cat, root, batch, map, i);
        int got = (sel[i >> 3] >> (i & 7)) & 1;
        if (got != (tv == TV_T)) {
            char norm[4096];
            qv_expr_to_string(e, norm, sizeof norm);
            fail_msg("row %lld: got %d, reference says %s\n  filter: %s\n  normalized: %s",
                     (long long)i, got, tv == TV_T ? "TRUE" : tv == TV_F ? "FALSE" : "NULL", text,
                     norm);
        }
        expect_count += tv == TV_T;
    }
    assert_int_equal(count, expect_count);
    if (n & 7) assert_int_equal(sel[n >> 3] >> (n & 7), 0); /* bits past the end are 0 */
    *selected_total += count;
    *rows_total += n;

    /* The normalized text means the same thing. */
    char norm[8192];
    size_t need = qv_expr_to_string(e, norm, sizeof norm);
    assert_true(need < sizeof norm);
    struct qv_expr *e2 = NULL;
    rc = qv_expr_parse(norm, E->r, &e2, &err);
    if (rc) fail_msg("reparse failed for %s: %s", norm, err.message);
    char norm2[8192];
    qv_expr_to_string(e2, norm2, sizeof norm2);
    assert_string_equal(norm, norm2);
    assert_int_equal(qv_expr_bind(e2, schema, &err), 0);
    uint8_t *sel2 = calloc((size_t)qv_bytes_for_bits(n) + 1, 1);
    assert_int_equal(qv_expr_eval(e2, batch, map32, sel2, NULL, E->scratch, &err), 0);
    assert_memory_equal(sel, sel2, (size_t)qv_bytes_for_bits(n));
    free(sel2);
    qv_expr_destroy(e2);
    free(sel);
    qv_expr_destroy(e);
}

static void test_property(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    assert_int_equal(rb_all_types_schema(E->r, &schema), 0);
    struct gcat cat;
    g_catalog(schema, &cat);
    int64_t predicates = 0, selected = 0, rows = 0;
    char *text = malloc(1 << 16);
    struct gnode *pool = malloc(64 * sizeof *pool);
    for (uint64_t bseed = 1; bseed <= 40; bseed++) {
        uint64_t seed = bseed * 7919;
        struct rb_options o = {.null_prob = (double)(rb_next(&seed) % 4) * 0.15,
                               .max_list = 3,
                               .max_string = (int)(rb_next(&seed) % 100),
                               .low_cardinality = (int)(rb_next(&seed) % 2)};
        int64_t nrows = (int64_t)(rb_next(&seed) % 260);
        struct ArrowArray src;
        assert_int_equal(rb_batch(schema, nrows, bseed, &o, E->r, &src), 0);
        for (int mode = 0; mode < 3; mode++) {
            struct view v;
            make_view(&src, schema, &seed, mode, &v);
            const int *map = mode ? v.map : NULL;
            const int32_t *map32 = mode ? v.map32 : NULL;
            for (int k = 0; k < 40; k++) {
                int used = 0;
                struct gnode *root = g_gen(&cat, &v.batch, map, &seed, 3, pool, &used, 64);
                char *t = text;
                g_text(&cat, root, &t, &seed);
                check_one(E, schema, &cat, root, text, &v.batch, map, map32, &selected, &rows);
                predicates++;
            }
        }
        src.release(&src);
    }
    free(pool);
    free(text);
    print_message("%lld predicates, %lld of %lld rows selected\n", (long long)predicates,
                  (long long)selected, (long long)rows);
    assert_true(predicates >= 4000);
    assert_true(selected > rows / 20 && selected < rows - rows / 20);
    qv_schema_destroy(schema);
}

/* ---- Targeted semantics ---- */

static const struct qv_field st_kids[] = {
    {.name = "a", .type = QV_TYPE_INT32, .nullable = true},
};
static const struct qv_field cols[] = {
    {.name = "price", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 9, .scale = 2},
    {.name = "i", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "t", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_S},
    {.name = "day", .type = QV_TYPE_DATE32, .nullable = true},
    {.name = "u", .type = QV_TYPE_UINT64, .nullable = true},
    {.name = "big", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 38, .scale = 10},
    {.name = "flag", .type = QV_TYPE_BOOL, .nullable = true},
    {.name = "st", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 1, .children = st_kids},
    {.name = "Mixed", .type = QV_TYPE_INT8, .nullable = true},
    {.name = "weird name", .type = QV_TYPE_INT8, .nullable = true},
    {.name = "lst", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = st_kids},
    {.name = "f32", .type = QV_TYPE_FLOAT32, .nullable = true},
};
static const struct qv_field root_field = {.type = QV_TYPE_STRUCT, .n_children = 14, .children = cols};

/* Rows: each entry fills one row; NAN etc. allowed. A null is marked by
 * the *_null flags. */
struct row {
    int64_t price; /* unscaled */
    int i;
    double f;
    const char *s;
    int64_t t;
    int day;
    uint64_t u;
    int64_t big; /* unscaled, fits int64 here */
    int flag;
    int st_null, a;
    int nulls; /* bit mask of null columns: 1 price, 2 i, 4 f, 8 s, 16 t, 32 day, 64 u, 128 big, 256 flag */
};

static const struct row rows_[] = {
    {.price = 5, .i = 1, .f = 0.5, .s = "ab", .t = 1, .day = 8766, .u = UINT64_MAX, .big = 500000000, .flag = 1, .a = 1},
    {.price = 6, .i = 2, .f = NAN, .s = "abc", .t = 2, .day = 8767, .u = 0, .big = -1, .flag = 0, .a = 2},
    {.price = -5, .i = -3, .f = -0.0, .s = "b", .t = -1, .day = -1, .u = 1, .big = 0, .flag = 1, .st_null = 1},
    {.price = 0, .i = 0, .f = INFINITY, .s = "", .t = 0, .day = 0, .u = 5, .big = 1, .flag = 0, .a = 0, .nulls = 511},
    {.price = 100, .i = 100, .f = 1e300, .s = "a\x01z", .t = 86400, .day = 1, .u = 9, .big = 55000000000, .flag = 1, .a = 7, .nulls = 2 | 8},
};
#define NROWS ((int64_t)(sizeof rows_ / sizeof rows_[0]))

static void build_fixture(struct env *E, struct qv_schema **schema, struct ArrowArray *out) {
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root_field, E->r, schema, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(*schema, E->r, NULL, &b, &err), 0);
    for (int64_t k = 0; k < NROWS; k++) {
        const struct row *w = &rows_[k];
        struct qv_appender *c;
#define COL(i) (c = qv_builder_column(b, i))
        assert_int_equal(w->nulls & 1 ? qv_append_null(COL(0)) : qv_append_decimal64(COL(0), w->price), 0);
        assert_int_equal(w->nulls & 2 ? qv_append_null(COL(1)) : qv_append_int32(COL(1), w->i), 0);
        assert_int_equal(w->nulls & 4 ? qv_append_null(COL(2)) : qv_append_float64(COL(2), w->f), 0);
        assert_int_equal(w->nulls & 8 ? qv_append_null(COL(3)) : qv_append_string(COL(3), w->s, strlen(w->s)), 0);
        assert_int_equal(w->nulls & 16 ? qv_append_null(COL(4)) : qv_append_timestamp(COL(4), w->t), 0);
        assert_int_equal(w->nulls & 32 ? qv_append_null(COL(5)) : qv_append_date32(COL(5), w->day), 0);
        assert_int_equal(w->nulls & 64 ? qv_append_null(COL(6)) : qv_append_uint64(COL(6), w->u), 0);
        assert_int_equal(w->nulls & 128 ? qv_append_null(COL(7)) : qv_append_decimal64(COL(7), w->big), 0);
        assert_int_equal(w->nulls & 256 ? qv_append_null(COL(8)) : qv_append_bool(COL(8), w->flag), 0);
        if (w->st_null) {
            assert_int_equal(qv_append_null(COL(9)), 0);
        } else {
            assert_int_equal(qv_append_struct_begin(COL(9)), 0);
            assert_int_equal(qv_append_int32(qv_appender_child(c, 0), w->a), 0);
            assert_int_equal(qv_append_struct_end(c), 0);
        }
        assert_int_equal(qv_append_int8(COL(10), (int8_t)k), 0);
        assert_int_equal(qv_append_int8(COL(11), (int8_t)(k * 2)), 0);
        assert_int_equal(qv_append_list_begin(COL(12)), 0);
        assert_int_equal(qv_append_list_end(c), 0);
        assert_int_equal(qv_append_float32(COL(13), (float)w->f), 0);
#undef COL
    }
    assert_int_equal(qv_builder_finish(b, out, &err), 0);
    qv_builder_destroy(b);
}

/* Evaluates `text` on the fixture and returns the selected rows as a bit
 * mask (row k -> bit k). */
static unsigned sel_of(struct env *E, const struct qv_schema *s, const struct ArrowArray *batch,
                       const char *text) {
    struct qv_error err = {0};
    struct qv_expr *e;
    if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("parse %s: %s", text, err.message);
    if (qv_expr_bind(e, s, &err)) fail_msg("bind %s: %s", text, err.message);
    uint8_t sel[8] = {0};
    if (qv_expr_eval(e, batch, NULL, sel, NULL, E->scratch, &err)) fail_msg("eval %s: %s", text, err.message);
    qv_expr_destroy(e);
    return sel[0];
}

#define SEL(text, mask)                                                                  \
    do {                                                                                 \
        unsigned got_ = sel_of(E, schema, &batch, text);                                 \
        if (got_ != (unsigned)(mask)) fail_msg("%s: selected 0x%x, expected 0x%x", text, got_, (unsigned)(mask)); \
    } while (0)

static void test_semantics(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    struct ArrowArray batch;
    build_fixture(E, &schema, &batch);
    /* price (scale 2): 0.05, 0.06, -0.05, NULL, 1.00 */
    SEL("price < 0.055", 1 | 4);
    SEL("price <= 0.05", 1 | 4);
    SEL("price > 0.055", 2 | 16);
    SEL("price >= 0.0500001", 2 | 16);
    SEL("price = 0.05", 1);
    SEL("price = 0.050", 1);
    SEL("price = 5e-2", 1);
    SEL("price = 0.055", 0);
    SEL("price != 0.055", 1 | 2 | 4 | 16);
    SEL("price < 1e30", 1 | 2 | 4 | 16);
    SEL("price > -1e30", 1 | 2 | 4 | 16);
    SEL("price < -1e30", 0);
    SEL("price IN (0.05, 1, 0.055)", 1 | 16);
    SEL("price BETWEEN 0.051 AND 1", 2 | 16);
    SEL("price = 1", 16);
    SEL("0.055 > price", 1 | 4);
    /* ints vs fractions and out-of-range literals */
    SEL("i < 1.5", 1 | 4);
    SEL("i > 1.5", 2);
    SEL("i = 2.0", 2);
    SEL("i = 2.5", 0);
    SEL("i != 2.5", 1 | 2 | 4);
    SEL("i > -99999999999999999999", 1 | 2 | 4);
    SEL("i <= 99999999999999999999", 1 | 2 | 4);
    SEL("i < NaN OR i = NaN OR i >= NaN", 0);
    SEL("i != NaN", 1 | 2 | 4);
    SEL("i < Infinity", 1 | 2 | 4);
    SEL("i > -inf", 1 | 2 | 4);
    /* uint64: the top of the range and negative literals */
    SEL("u = 18446744073709551615", 1);
    SEL("u > 18446744073709551614", 1);
    SEL("u > -1", 1 | 2 | 4 | 16);
    SEL("u < 0", 0);
    SEL("u IN (-1, 0, 9, 18446744073709551616)", 2 | 16);
    /* decimal(38, 10): 0.05, -1e-10, 0, NULL, 5.5 */
    SEL("big = 0.05", 1);
    SEL("big < 0", 2);
    SEL("big > -0.00000000005", 1 | 4 | 16);
    SEL("big < 0.000000000000001", 2 | 4);
    SEL("big >= 5.5", 16);
    /* floats: IEEE. f = 0.5, NaN, -0.0, NULL(inf), 1e300 */
    SEL("f = 0", 4);
    SEL("f = -0.0", 4);
    SEL("f < 1", 1 | 4);
    SEL("NOT (f < 1)", 2 | 16);
    SEL("f != 1", 1 | 2 | 4 | 16);
    SEL("f = NaN", 0);
    SEL("f != NaN", 1 | 2 | 4 | 16);
    SEL("f IN (NaN, 0.5)", 1);
    SEL("f NOT IN (NaN, 0.5)", 2 | 4 | 16);
    SEL("f = f", 1 | 4 | 16);
    SEL("f != f", 2);
    SEL("f > 1e299", 16);
    SEL("f < Infinity", 1 | 4 | 16);
    SEL("f32 = 0.5", 1);
    SEL("f32 = f", 1 | 4);
    SEL("f32 > 1e300", 8 | 16); /* rows 3, 4: (float)inf, (float)1e300 = inf */
    /* strings: bytewise, prefix first */
    SEL("s < 'abc'", 1);
    SEL("s <= 'abc'", 1 | 2);
    SEL("s > 'ab'", 2 | 4);
    SEL("s >= ''", 1 | 2 | 4);
    SEL("s STARTS WITH 'ab'", 1 | 2);
    SEL("s STARTS WITH ''", 1 | 2 | 4);
    SEL("s starts with 'abcd'", 0);
    SEL("s IN ('b', 'ab', 'zz')", 1 | 4);
    SEL("s = X'61'", 0);
    SEL("s = X'6162'", 1);
    SEL("s < s", 0);
    /* three-valued logic */
    SEL("i IN (1, NULL)", 1);
    SEL("i NOT IN (1, NULL)", 0);
    SEL("NOT (i IN (1, NULL))", 0);
    SEL("i NOT IN (1)", 2 | 4);
    SEL("i = NULL", 0);
    SEL("NOT (i = NULL)", 0);
    SEL("i IS NULL", 8 | 16);
    SEL("i IS NOT NULL", 1 | 2 | 4);
    SEL("i = 1 OR i IS NULL", 1 | 8 | 16);
    SEL("NOT (i = 1 AND i IS NOT NULL)", 2 | 4 | 8 | 16);
    SEL("NOT (i > 0)", 4);
    SEL("i > 0 OR TRUE", 31);
    SEL("i > 0 AND FALSE", 0);
    SEL("NOT (i > 0 AND NULL)", 4);
    SEL("NOT (i > 0 OR NULL)", 0);
    SEL("NULL", 0);
    SEL("NOT NULL", 0);
    SEL("TRUE", 31);
    SEL("NULL IS NULL", 31);
    SEL("1 IS NULL", 0);
    /* bools */
    SEL("flag", 1 | 4 | 16);
    SEL("NOT flag", 2);
    SEL("flag = false", 2);
    SEL("flag < true", 2);
    SEL("flag <= true", 1 | 2 | 4 | 16);
    SEL("flag > true", 0);
    SEL("flag IN (true)", 1 | 4 | 16);
    SEL("flag != flag", 0);
    /* timestamps (seconds) and dates: exact against sub-unit literals */
    SEL("t > TIMESTAMP '1970-01-01 00:00:01.5'", 2 | 16);
    SEL("t >= TIMESTAMP '1970-01-01 00:00:01.000000001'", 2 | 16);
    SEL("t = TIMESTAMP '1970-01-01 00:00:01.5'", 0);
    SEL("t = TIMESTAMP '1970-01-01T00:00:01Z'", 1);
    SEL("t = TIMESTAMP '1970-01-01 01:00:01+01:00'", 1);
    SEL("t < '1970-01-01'", 4);
    SEL("t = DATE '1970-01-02'", 16);
    SEL("t BETWEEN DATE '1970-01-01' AND '1970-01-01 00:00:02'", 1 | 2);
    SEL("day = DATE '1994-01-01'", 1);
    SEL("day > TIMESTAMP '1994-01-01 00:00:00.001'", 2);
    SEL("day >= TIMESTAMP '1994-01-01 00:00:00'", 1 | 2);
    SEL("day < '1970-01-01'", 4);
    SEL("day IN ('1970-01-02', DATE '1969-12-31', TIMESTAMP '1994-01-02 00:00:01')", 4 | 16);
    /* nested fields: NULL when the struct is NULL */
    SEL("st.a = 1", 1);
    SEL("st.a IS NULL", 4);
    SEL("st IS NULL", 4);
    SEL("st.a >= 0", 1 | 2 | 8 | 16);
    SEL("NOT (st.a >= 0)", 0);
    SEL("lst IS NOT NULL", 31);
    /* names: case-insensitive when unique, quoted exactly */
    SEL("mixed = 1", 2);
    SEL("MIXED < 2", 1 | 2);
    SEL("\"weird name\" = 4", 4);
    SEL("`weird name` = 4", 4);
    SEL("i = \"Mixed\"", 0);
    SEL("i BETWEEN mixed AND 1", 1);
    SEL("i NOT BETWEEN mixed AND 1", 2 | 4);
    batch.release(&batch);
    qv_schema_destroy(schema);
}

static void expect_bind_error(struct env *E, const struct qv_schema *s, const char *text,
                              const char *needle) {
    struct qv_error err = {0};
    struct qv_expr *e;
    if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("parse %s: %s", text, err.message);
    int rc = qv_expr_bind(e, s, &err);
    if (rc != EINVAL) fail_msg("%s: bind returned %d, expected EINVAL", text, rc);
    if (!strstr(err.message, needle)) fail_msg("%s: message '%s' lacks '%s'", text, err.message, needle);
    assert_false(qv_expr_is_bound(e));
    assert_int_equal(qv_expr_columns(e, NULL, 0), -1);
    qv_expr_destroy(e);
}

static void test_bind_errors(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    struct ArrowArray batch;
    build_fixture(E, &schema, &batch);
    expect_bind_error(E, schema, "i = 'abc'", "column 'i' (int32) cannot be compared with string literal 'abc' at position 5");
    expect_bind_error(E, schema, "s > 5", "column 's' (utf8) cannot be compared with number literal 5");
    expect_bind_error(E, schema, "price < 'x'", "decimal128(9, 2)");
    expect_bind_error(E, schema, "nope = 1", "no column 'nope'");
    expect_bind_error(E, schema, "i.x = 1", "not a struct");
    expect_bind_error(E, schema, "st.b = 1", "struct 'st' has no field 'b'");
    expect_bind_error(E, schema, "i STARTS WITH 'a'", "STARTS WITH needs a string");
    expect_bind_error(E, schema, "s STARTS WITH 1", "cannot start with");
    expect_bind_error(E, schema, "lst IN (1)", "cannot be used with IN");
    expect_bind_error(E, schema, "lst = 1", "only IS [NOT] NULL");
    expect_bind_error(E, schema, "st < 1", "only IS [NOT] NULL");
    expect_bind_error(E, schema, "i", "is not a boolean");
    expect_bind_error(E, schema, "5", "is not a condition");
    expect_bind_error(E, schema, "1 = 2", "needs a column");
    expect_bind_error(E, schema, "i = s", "cannot compare column 'i' (int32) with column 's' (utf8)");
    expect_bind_error(E, schema, "price = big", "cannot compare");
    expect_bind_error(E, schema, "t = day", "cannot compare");
    expect_bind_error(E, schema, "day = 'tomorrow'", "not a date");
    expect_bind_error(E, schema, "flag = 1", "cannot be compared with number literal");
    expect_bind_error(E, schema, "f = TRUE", "cannot be compared with boolean literal");
    expect_bind_error(E, schema, "\"mixed\" = 1", "no column 'mixed'");
    expect_bind_error(E, schema, "i IN (1, 'a')", "string literal 'a'");
    expect_bind_error(E, schema, "i BETWEEN 1 AND 'a'", "string literal 'a'");
    batch.release(&batch);
    qv_schema_destroy(schema);

    /* Ambiguity when only case differs. */
    static const struct qv_field two[] = {{.name = "Ab", .type = QV_TYPE_INT32},
                                          {.name = "aB", .type = QV_TYPE_INT32}};
    static const struct qv_field rt = {.type = QV_TYPE_STRUCT, .n_children = 2, .children = two};
    struct qv_error err;
    assert_int_equal(qv_schema_create(&rt, E->r, &schema, &err), 0);
    expect_bind_error(E, schema, "ab = 1", "ambiguous");
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse("Ab = 1 AND aB = 2", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, schema, &err), 0);
    int32_t c[4];
    assert_int_equal(qv_expr_columns(e, c, 4), 2);
    assert_int_equal(c[0], 0);
    assert_int_equal(c[1], 1);
    qv_expr_destroy(e);
    qv_schema_destroy(schema);
}

/* One rule for names that match several fields (as projection has it):
 * an error naming the fields, never the first of them; at the top level,
 * inside structs, in narrow structs and in wide ones (which bind through a
 * name index), exactly or ignoring case. */
static void test_duplicate_names(void **state) {
    struct env *E = *state;
    struct qv_error err;
    struct qv_schema *schema;
    static const struct qv_field inner[] = {{.name = "x", .type = QV_TYPE_INT32, .nullable = true},
                                            {.name = "y", .type = QV_TYPE_INT32, .nullable = true},
                                            {.name = "x", .type = QV_TYPE_INT64, .nullable = true}};
    static const struct qv_field dup_cols[] = {
        {.name = "a", .type = QV_TYPE_INT8, .nullable = true},
        {.name = "b", .type = QV_TYPE_INT8, .nullable = true},
        {.name = "a", .type = QV_TYPE_INT16, .nullable = true},
        {.name = "s", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 3, .children = inner},
        {.name = "C", .type = QV_TYPE_INT8, .nullable = true},
        {.name = "c", .type = QV_TYPE_INT8, .nullable = true},
    };
    static const struct qv_field rt = {.type = QV_TYPE_STRUCT, .n_children = 6, .children = dup_cols};
    assert_int_equal(qv_schema_create(&rt, E->r, &schema, &err), 0);
    expect_bind_error(E, schema, "a = 3", "ambiguous column name 'a': fields 0 and 2 both have that name at position 1");
    expect_bind_error(E, schema, "b = 1 OR \"a\" IS NULL", "ambiguous column name 'a': fields 0 and 2");
    expect_bind_error(E, schema, "A IN (1, 2)", "ambiguous column name 'A': fields 0 ('a') and 2 ('a')");
    expect_bind_error(E, schema, "s.x = 1", "ambiguous field name 'x' in struct 's': fields 0 and 2");
    expect_bind_error(E, schema, "b = 1 AND s.X > 0", "ambiguous field name 'X' in struct 's'");
    /* An exact match is not ambiguous even where another matches ignoring
     * case; without one, two case-insensitive matches are. */
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse("C = 1 AND c = 2 AND s.y = 3 AND S.Y = 3 AND b = 1", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, schema, &err), 0);
    int32_t c[8];
    assert_int_equal(qv_expr_columns(e, c, 8), 4);
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 3);
    assert_int_equal(c[2], 4);
    assert_int_equal(c[3], 5);
    assert_int_equal(qv_expr_num_refs(e), 4); /* s.y and S.Y are one reference */
    qv_expr_destroy(e);
    expect_bind_error(E, schema, "B = 1 AND \"s\".\"y\" = 1 AND \"C\" = 1 AND \"c\" = 1 AND \"b\" = 1 AND cc = 1",
                      "no column 'cc'");
    qv_schema_destroy(schema);

    /* A wide schema: 100 columns k0..k99 with k7 again at 100 and K5 / k5. */
    struct qv_field wide[102];
    char names[102][8];
    for (int i = 0; i < 100; i++) {
        snprintf(names[i], sizeof names[i], "k%d", i);
        wide[i] = (struct qv_field){.name = names[i], .type = QV_TYPE_INT32, .nullable = true};
    }
    wide[100] = (struct qv_field){.name = "k7", .type = QV_TYPE_INT64, .nullable = true};
    wide[101] = (struct qv_field){.name = "K5", .type = QV_TYPE_INT64, .nullable = true};
    const struct qv_field wrt = {.type = QV_TYPE_STRUCT, .n_children = 102, .children = wide};
    assert_int_equal(qv_schema_create(&wrt, E->r, &schema, &err), 0);
    expect_bind_error(E, schema, "k7 = 1", "ambiguous column name 'k7': fields 7 and 100 both have that name");
    expect_bind_error(E, schema, "K7 = 1", "ambiguous column name 'K7': fields 7 ('k7') and 100 ('k7')");
    expect_bind_error(E, schema, "k3 = 1 OR \"K3\" = 1", "no column 'K3'");
    assert_int_equal(qv_expr_parse("k5 = 1 OR K5 = 2 OR k99 = 3 OR K98 = 4 OR k0 = 5 OR K0 = 6", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, schema, &err), 0);
    assert_int_equal(qv_expr_columns(e, c, 8), 5);
    assert_int_equal(c[0], 0);
    assert_int_equal(c[1], 5);
    assert_int_equal(c[2], 98);
    assert_int_equal(c[3], 99);
    assert_int_equal(c[4], 101);
    qv_expr_destroy(e);
    /* Every allocation of binding through the name index can fail cleanly. */
    uint64_t before = qv_reservation_used(E->r);
    int failures = 0, n;
    for (n = 1; n < 200; n++) {
        assert_int_equal(qv_expr_parse("k5 = 1 OR k5 = 2 OR K98 = 4 OR k0 IN (5, 6) OR k1 != 1 AND k1 != 2", E->r, &e, &err), 0);
        qv_pool_inject_alloc_failure(E->pool, (uint64_t)n);
        int rc = qv_expr_bind(e, schema, &err);
        qv_pool_inject_alloc_failure(E->pool, 0);
        if (rc != 0 && rc != ENOMEM) fail_msg("allocation %d: bind returned %d (%s)", n, rc, err.message);
        assert_int_equal(qv_expr_is_bound(e), rc == 0);
        qv_expr_destroy(e);
        assert_int_equal(qv_reservation_used(E->r), before);
        if (rc == 0) break;
        failures++;
    }
    assert_true(failures > 5);
    assert_true(n < 200);
    qv_schema_destroy(schema);
}

static void test_refs_and_columns(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    struct ArrowArray batch;
    build_fixture(E, &schema, &batch);
    struct qv_error err;
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse("st.a > 1 OR s = 'x' OR st.a < 0 OR st IS NULL OR i = s2", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, schema, &err), EINVAL); /* s2 does not exist */
    qv_expr_destroy(e);
    assert_int_equal(qv_expr_parse("st.a > 1 OR s = 'x' OR st.a < 0 OR st IS NULL OR i = 2", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_num_refs(e), -1);
    assert_int_equal(qv_expr_bind(e, schema, &err), 0);
    assert_true(qv_expr_is_bound(e));
    int32_t cols_[8];
    assert_int_equal(qv_expr_columns(e, cols_, 8), 3);
    assert_int_equal(cols_[0], 1);
    assert_int_equal(cols_[1], 3);
    assert_int_equal(cols_[2], 9);
    assert_int_equal(qv_expr_columns(e, cols_, 1), 3); /* count even when cap is short */
    assert_int_equal(qv_expr_num_refs(e), 4);
    struct qv_expr_ref ref;
    assert_int_equal(qv_expr_ref(e, 0, &ref), 0);
    assert_int_equal(ref.column, 9);
    assert_int_equal(ref.depth, 1);
    assert_int_equal(ref.path[0], 0);
    assert_string_equal(ref.name, "st.a");
    assert_int_equal(ref.field->type, QV_TYPE_INT32);
    assert_int_equal(qv_expr_ref(e, 2, &ref), 0);
    assert_string_equal(ref.name, "st");
    assert_int_equal(ref.depth, 0);
    assert_int_equal(qv_expr_ref(e, 4, &ref), EINVAL);

    /* A batch holding only the filter's columns, in another order. */
    struct ArrowArray *kids[3] = {batch.children[9], batch.children[1], batch.children[3]};
    struct ArrowArray sub = batch;
    sub.n_children = 3;
    sub.children = kids;
    int32_t map[14];
    for (int i = 0; i < 14; i++) map[i] = -1;
    map[9] = 0;
    map[1] = 1;
    map[3] = 2;
    uint8_t sel[1];
    int64_t n;
    assert_int_equal(qv_expr_eval(e, &sub, map, sel, &n, E->scratch, &err), 0);
    assert_int_equal(sel[0], 2 | 4 | 16);
    assert_int_equal(n, 3);

    /* Missing and malformed inputs are errors, not crashes. */
    map[3] = -1;
    assert_int_equal(qv_expr_eval(e, &sub, map, sel, &n, E->scratch, &err), EINVAL);
    assert_non_null(strstr(err.message, "column 's'"));
    map[3] = 7;
    assert_int_equal(qv_expr_eval(e, &sub, map, sel, &n, E->scratch, &err), EINVAL);
    map[3] = 2;
    struct ArrowArray shortcol = *batch.children[3];
    shortcol.length = 2;
    kids[2] = &shortcol;
    assert_int_equal(qv_expr_eval(e, &sub, map, sel, &n, E->scratch, &err), EINVAL);
    shortcol = *batch.children[1]; /* an int32 where utf8 belongs */
    assert_int_equal(qv_expr_eval(e, &sub, map, sel, &n, E->scratch, &err), EINVAL);
    kids[2] = batch.children[3];
    struct ArrowArray released = sub;
    released.release = NULL;
    assert_int_equal(qv_expr_eval(e, &released, map, sel, &n, E->scratch, &err), EINVAL);
    assert_int_equal(qv_expr_eval(e, &sub, map, NULL, &n, E->scratch, &err), EINVAL);
    /* Zero rows: nothing written, nothing selected. */
    struct ArrowArray empty = sub;
    empty.length = 0;
    assert_int_equal(qv_expr_eval(e, &empty, map, NULL, &n, E->scratch, &err), 0);
    assert_int_equal(n, 0);

    /* Unbound filters are refused; rebinding replaces the binding. */
    struct qv_expr *u;
    assert_int_equal(qv_expr_parse("i > 0", E->r, &u, &err), 0);
    assert_int_equal(qv_expr_eval(u, &batch, NULL, sel, &n, E->scratch, &err), EINVAL);
    assert_int_equal(qv_expr_prune(u, NULL, 10), 1);
    assert_int_equal(qv_expr_bind(u, schema, &err), 0);
    assert_int_equal(qv_expr_bind(u, schema, &err), 0);
    assert_int_equal(qv_expr_eval(u, &batch, NULL, sel, &n, E->scratch, &err), 0);
    assert_int_equal(sel[0], 1 | 2);
    qv_expr_destroy(u);
    qv_expr_destroy(e);
    batch.release(&batch);
    qv_schema_destroy(schema);
}

/* The same filter evaluated on many slices of one batch agrees with the
 * whole-batch answer shifted: offsets in every position (not multiples of
 * 8) read the right bits. */
static void test_slices(void **state) {
    struct env *E = *state;
    struct qv_schema *schema;
    assert_int_equal(rb_all_types_schema(E->r, &schema), 0);
    struct rb_options o = {.null_prob = 0.3, .max_list = 2, .max_string = 10, .low_cardinality = 1};
    struct ArrowArray b;
    assert_int_equal(rb_batch(schema, 300, 99, &o, E->r, &b), 0);
    const char *filters[] = {"i32 >= 2 OR pt.x < 0.5 OR b", "s IN ('a', 'quiver') AND NOT (u8 = 3)",
                             "pt IS NULL OR pt.label STARTS WITH 'a'", "d9 BETWEEN -0.01 AND 0.03",
                             "f64 != 0.25 AND b IS NOT NULL"};
    struct qv_error err;
    for (size_t k = 0; k < sizeof filters / sizeof filters[0]; k++) {
        struct qv_expr *e;
        assert_int_equal(qv_expr_parse(filters[k], E->r, &e, &err), 0);
        assert_int_equal(qv_expr_bind(e, schema, &err), 0);
        uint8_t whole[64] = {0};
        assert_int_equal(qv_expr_eval(e, &b, NULL, whole, NULL, E->scratch, &err), 0);
        for (int64_t off = 0; off < 140; off += 3) {
            struct ArrowArray v = b;
            v.offset = off;
            v.length = 300 - off - (off % 17);
            uint8_t part[64] = {0};
            assert_int_equal(qv_expr_eval(e, &v, NULL, part, NULL, E->scratch, &err), 0);
            for (int64_t i = 0; i < v.length; i++)
                assert_int_equal((part[i >> 3] >> (i & 7)) & 1, (whole[(i + off) >> 3] >> ((i + off) & 7)) & 1);
        }
        qv_expr_destroy(e);
    }
    b.release(&b);
    qv_schema_destroy(schema);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_semantics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refs_and_columns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_property, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
