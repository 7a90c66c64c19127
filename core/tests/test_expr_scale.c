/* The predicate language at the sizes generated filters reach and against
 * hostile texts: 100,000 ORs and 200,000-value IN lists parse, bind and
 * evaluate to the right rows (the rewrite of OR / AND chains into sets
 * included), nesting a million levels deep is a clean error, a parse can
 * be interrupted, NUL bytes are data inside string literals only, and
 * huge or unterminated literals are handled. Timings are the benchmark's
 * business: nothing here asserts speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quiver/quiver.h"

struct env {
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_reservation *scratch;
    struct qv_schema *schema;
    struct ArrowArray batch;
    int64_t rows;
};

/* The batch: row i has
 *   x  int64   i, NULL when i % 10 == 9
 *   f  float64 i / 2, NaN when i % 7 == 3, -0.0 at row 0, NULL when i % 11 == 5
 *   s  utf8    "v<i>", NULL when i % 13 == 4; row 1 is "a\0b", row 2 is "a"
 *   b  bool    i % 3 == 0, NULL when i % 5 == 2
 *   u  uint64  2^63 + i
 *   d  decimal128(20, 2) i * 1.25 (unscaled 125 * i)
 *   dt date32  i days after the epoch */
#define ROWS 1000

static bool x_null(int64_t i) { return i % 10 == 9; }
static bool f_null(int64_t i) { return i % 11 == 5; }
static bool s_null(int64_t i) { return i % 13 == 4; }
static bool b_null(int64_t i) { return i % 5 == 2; }

static int setup(void **state) {
    struct env *E = calloc(1, sizeof *E);
    struct qv_error err;
    assert_int_equal(qv_pool_create(NULL, &E->pool, &err), 0);
    assert_int_equal(qv_reservation_create(E->pool, NULL, &E->r, &err), 0);
    struct qv_reservation_options so = {.name = "scratch"};
    assert_int_equal(qv_reservation_create(E->pool, &so, &E->scratch, &err), 0);
    static const struct qv_field kids[] = {
        {.name = "x", .type = QV_TYPE_INT64, .nullable = true},
        {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
        {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
        {.name = "b", .type = QV_TYPE_BOOL, .nullable = true},
        {.name = "u", .type = QV_TYPE_UINT64, .nullable = true},
        {.name = "d", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 20, .scale = 2},
        {.name = "dt", .type = QV_TYPE_DATE32, .nullable = true},
    };
    static const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 7, .children = kids};
    assert_int_equal(qv_schema_create(&root, E->r, &E->schema, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(E->schema, E->r, NULL, &b, &err), 0);
    for (int64_t i = 0; i < ROWS; i++) {
        struct qv_appender *a;
        a = qv_builder_column(b, 0);
        assert_int_equal(x_null(i) ? qv_append_null(a) : qv_append_int64(a, i), 0);
        a = qv_builder_column(b, 1);
        double fv = i == 0 ? -0.0 : i % 7 == 3 ? NAN : (double)i / 2;
        assert_int_equal(f_null(i) ? qv_append_null(a) : qv_append_float64(a, fv), 0);
        a = qv_builder_column(b, 2);
        char t[32];
        int n = snprintf(t, sizeof t, "v%lld", (long long)i);
        if (i == 1) memcpy(t, "a\0b", n = 3);
        if (i == 2) memcpy(t, "a", n = 1);
        assert_int_equal(s_null(i) ? qv_append_null(a) : qv_append_string(a, t, (size_t)n), 0);
        a = qv_builder_column(b, 3);
        assert_int_equal(b_null(i) ? qv_append_null(a) : qv_append_bool(a, i % 3 == 0), 0);
        assert_int_equal(qv_append_uint64(qv_builder_column(b, 4), (1ull << 63) + (uint64_t)i), 0);
        assert_int_equal(qv_append_decimal128(qv_builder_column(b, 5), (uint64_t)(125 * i), 0), 0);
        assert_int_equal(qv_append_date32(qv_builder_column(b, 6), (int32_t)i), 0);
    }
    assert_int_equal(qv_builder_finish(b, &E->batch, &err), 0);
    qv_builder_destroy(b);
    E->rows = ROWS;
    *state = E;
    return 0;
}

static int teardown(void **state) {
    struct env *E = *state;
    E->batch.release(&E->batch);
    qv_schema_destroy(E->schema);
    /* Every tree and binding was freed: nothing is left charged. */
    assert_int_equal(qv_reservation_used(E->r), 0);
    assert_int_equal(qv_reservation_used(E->scratch), 0);
    qv_reservation_destroy(E->scratch);
    qv_reservation_destroy(E->r);
    qv_pool_destroy(E->pool);
    free(E);
    return 0;
}

/* A growable text. */
struct text {
    char *p;
    size_t n, cap;
};

static void put(struct text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        assert_true(k >= 0);
        if (t->p && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        t->cap = (t->cap + (size_t)k + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
}

/* Parses (len bytes) and binds `text`; evaluates it on the batch into
 * sel[ROWS] (0/1 per row). Fails the test on any error. */
static void eval_n(struct env *E, const char *text, size_t len, uint8_t *sel) {
    struct qv_error err = {0};
    struct qv_expr *e = NULL;
    int rc = qv_expr_parse_n(text, len, NULL, E->r, &e, &err);
    if (rc) fail_msg("parse failed (%d): %s", rc, err.message);
    rc = qv_expr_bind(e, E->schema, &err);
    if (rc) fail_msg("bind failed (%d): %s", rc, err.message);
    uint8_t bits[(ROWS + 7) / 8];
    int64_t count = -1;
    rc = qv_expr_eval(e, &E->batch, NULL, bits, &count, E->scratch, &err);
    if (rc) fail_msg("eval failed (%d): %s", rc, err.message);
    int64_t ones = 0;
    for (int64_t i = 0; i < ROWS; i++) {
        sel[i] = (bits[i >> 3] >> (i & 7)) & 1;
        ones += sel[i];
    }
    assert_int_equal(count, ones);
    qv_expr_destroy(e);
}

static void eval_text(struct env *E, const char *text, uint8_t *sel) {
    eval_n(E, text, strlen(text), sel);
}

/* Two filters select the same rows. */
static void same_rows(struct env *E, const char *a, const char *b) {
    uint8_t sa[ROWS], sb[ROWS];
    eval_text(E, a, sa);
    eval_text(E, b, sb);
    for (int64_t i = 0; i < ROWS; i++)
        if (sa[i] != sb[i])
            fail_msg("row %lld: '%s' gives %d, '%s' gives %d", (long long)i, a, sa[i], b, sb[i]);
}

/* 100,000 ORs of equalities on one column: x = 0 OR x = 7 OR ... */
static void test_many_ors(void **state) {
    struct env *E = *state;
    struct text t = {0};
    const int64_t n = 100000;
    for (int64_t k = 0; k < n; k++) put(&t, "%sx = %lld", k ? " OR " : "", (long long)(k * 7));
    uint8_t sel[ROWS];
    eval_text(E, t.p, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], !x_null(i) && i % 7 == 0);
    /* The same chain with other operands mixed in keeps them. */
    t.n = 0;
    for (int64_t k = 0; k < n; k++) put(&t, "%sx = %lld", k ? " OR " : "", (long long)(k * 7));
    put(&t, " OR s = 'v500' OR x IS NULL");
    eval_text(E, t.p, sel);
    for (int64_t i = 0; i < ROWS; i++)
        assert_int_equal(sel[i], x_null(i) || i % 7 == 0 || i == 500);
    free(t.p);
}

/* 100,000 ANDs of inequalities: NOT IN in disguise. */
static void test_many_ands(void **state) {
    struct env *E = *state;
    struct text t = {0};
    const int64_t n = 100000;
    for (int64_t k = 0; k < n; k++)
        put(&t, "%sx != %lld", k ? " AND " : "", (long long)(k * 3 + 1));
    uint8_t sel[ROWS];
    eval_text(E, t.p, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], !x_null(i) && i % 3 != 1);
    free(t.p);
}

/* A 200,000-value IN list of integers and one of strings. */
static void test_big_in(void **state) {
    struct env *E = *state;
    struct text t = {0};
    const int64_t n = 200000;
    put(&t, "x IN (");
    for (int64_t k = 0; k < n; k++) put(&t, "%s%lld", k ? ", " : "", (long long)(n - 1 - k) * 5);
    put(&t, ")");
    uint8_t sel[ROWS];
    eval_text(E, t.p, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], !x_null(i) && i % 5 == 0);
    /* NOT IN with a NULL in the list is never TRUE. */
    t.n = 0;
    put(&t, "x NOT IN (NULL");
    for (int64_t k = 0; k < n; k++) put(&t, ", %lld", (long long)k * 5);
    put(&t, ")");
    eval_text(E, t.p, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], 0);
    t.n = 0;
    put(&t, "s IN (");
    for (int64_t k = 0; k < n; k++) put(&t, "%s'v%lld'", k ? ", " : "", (long long)k * 2);
    put(&t, ")");
    eval_text(E, t.p, sel);
    for (int64_t i = 0; i < ROWS; i++)
        assert_int_equal(sel[i], !s_null(i) && i % 2 == 0 && i != 2);
    free(t.p);
}

/* OR / AND chains rewritten into sets give exactly what the operands give
 * one by one, for every kind of column, NULLs, NaN and -0.0 included. */
static void test_set_rewrite(void **state) {
    struct env *E = *state;
    /* The same chains with a non-mergeable operand between: no rewrite of
     * the first (one equality per column) and a rewrite of the second. */
    static const char *const pairs[][2] = {
        {"x = 3 OR x = 5 OR x = 3 OR x = 2.5 OR x = 999", "x IN (3, 5, 999)"},
        {"f = 1.5 OR f = NaN OR f = 0 OR f = 2", "f IN (1.5, NaN, 0, 2)"},
        {"f = 0 OR f = 0.5", "(f >= 0 AND f <= 0) OR f = 0.5"},
        {"f != 0 AND f != 1 AND f != NaN", "f NOT IN (0, 1, NaN)"},
        {"s = 'v3' OR s = 'a' OR s = 'zz' OR s = X'610062'", "s IN ('v3', 'a', 'zz', X'610062')"},
        {"s != 'v3' AND s != 'a'", "s NOT IN ('v3', 'a')"},
        {"b = TRUE OR b = FALSE", "b IS NOT NULL"},
        {"b OR b OR b", "b = TRUE"},
        {"b != TRUE AND b != TRUE", "b = FALSE"},
        {"u = 9223372036854775808 OR u = 9223372036854775810 OR u = -1",
         "u IN (9223372036854775808, 9223372036854775810)"},
        {"d = 1.25 OR d = 2.5 OR d = 2.51 OR d = 1250", "d IN (1.25, 2.5, 1250)"},
        {"d != 1.25 AND d != 2.5", "d NOT IN (1.25, 2.5)"},
        {"dt = DATE '1970-01-05' OR dt = '1970-01-08' OR dt = TIMESTAMP '1970-01-09 01:00:00'",
         "dt IN (DATE '1970-01-05', DATE '1970-01-08')"},
        {"x = 1 OR s = 'v2' OR x = 4 OR s = 'v8' OR x IS NULL",
         "x IN (1, 4) OR s IN ('v2', 'v8') OR x IS NULL"},
        {"x != 1 AND (x = 2 OR x = 3) AND x != 2", "x = 3"},
        {"x = 2.5 OR x = 3.5 OR x = 1", "x = 1"},
        {"x != 2.5 AND x != 3.5", "x IS NOT NULL"},
        {"TRUE OR TRUE OR x = 1", "TRUE"},
        {"NULL OR NULL OR x = 1 OR x = 2", "x IN (1, 2, NULL)"},
        {"NOT (x = 1 OR x = 2 OR x IS NULL)", "x NOT IN (1, 2)"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) same_rows(E, pairs[i][0], pairs[i][1]);
    /* And the rows themselves, for one of each (not only agreement). */
    uint8_t sel[ROWS];
    eval_text(E, "x = 3 OR x = 5 OR x = 3 OR x = 2.5 OR x = 999", sel);
    for (int64_t i = 0; i < ROWS; i++)
        assert_int_equal(sel[i], (i == 3 || i == 5 || i == 999) && !x_null(i));
    eval_text(E, "f = 0 OR f = NaN", sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], i == 0);
    eval_text(E, "s = 'a' OR s = X'610062'", sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], i == 1 || i == 2);
}

/* A million levels of parentheses or NOTs: a clean error, no deep
 * recursion (parsing stops at the limit). */
static void test_deep_nesting(void **state) {
    struct env *E = *state;
    const size_t depth = 1000000;
    char *t = malloc(depth * 4 + 16);
    memset(t, '(', depth);
    strcpy(t + depth, "x = 1");
    struct qv_error err;
    struct qv_expr *e = (struct qv_expr *)1;
    assert_int_equal(qv_expr_parse(t, E->r, &e, &err), EINVAL);
    assert_null(e);
    assert_non_null(strstr(err.message, "nested too deeply"));
    assert_non_null(strstr(err.message, "at position 201"));
    t[0] = 0;
    for (size_t i = 0; i < depth; i++) memcpy(t + i * 4, "NOT ", 4);
    strcpy(t + depth * 4, "b");
    assert_int_equal(qv_expr_parse(t, E->r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "nested too deeply"));
    /* Parentheses that open and close do not add up. */
    t[0] = 0;
    size_t k = 0;
    for (size_t i = 0; i < 200000; i++) k += (size_t)sprintf(t + k, "(x = %zu) OR ", i);
    strcpy(t + k, "(x = 1)");
    uint8_t sel[ROWS];
    eval_text(E, t, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], !x_null(i));
    free(t);
}

/* The interruption hook: asked during long parses, stops with ECANCELED and
 * leaves nothing allocated. */
struct stopper {
    int calls, stop_at;
};

static int stop_after(void *arg) {
    struct stopper *s = arg;
    return ++s->calls >= s->stop_at;
}

static void test_interrupt(void **state) {
    struct env *E = *state;
    struct text t = {0};
    put(&t, "x IN (");
    for (int64_t k = 0; k < 100000; k++) put(&t, "%s%lld", k ? ", " : "", (long long)k);
    put(&t, ") OR x = 1");
    for (int64_t k = 0; k < 50000; k++) put(&t, " OR x = %lld", (long long)k);
    uint64_t before = qv_reservation_used(E->r);
    /* Stopped at each of the first few checks, and in the middle. */
    int stops[] = {1, 2, 10, 40};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct stopper st = {0, stops[i]};
        struct qv_expr_parse_options po = {.interrupted = stop_after, .interrupted_arg = &st};
        struct qv_error err;
        struct qv_expr *e = (struct qv_expr *)1;
        assert_int_equal(qv_expr_parse_n(t.p, t.n, &po, E->r, &e, &err), ECANCELED);
        assert_null(e);
        assert_int_equal(err.code, ECANCELED);
        assert_non_null(strstr(err.message, "interrupted"));
        assert_int_equal(st.calls, stops[i]);
        assert_int_equal(qv_reservation_used(E->r), before);
    }
    /* Never stopped: the callback is asked (every few thousand tokens) and
     * the parse completes. */
    struct stopper st = {0, 1 << 30};
    struct qv_expr_parse_options po = {.interrupted = stop_after, .interrupted_arg = &st};
    struct qv_error err;
    struct qv_expr *e = NULL;
    assert_int_equal(qv_expr_parse_n(t.p, t.n, &po, E->r, &e, &err), 0);
    assert_true(st.calls > 10);
    qv_expr_destroy(e);
    /* A short filter never reaches a check. */
    st.calls = 0;
    st.stop_at = 1;
    assert_int_equal(qv_expr_parse_n("x = 1", 5, &po, E->r, &e, &err), 0);
    assert_int_equal(st.calls, 0);
    qv_expr_destroy(e);
    free(t.p);
}

/* NUL bytes: data inside string literals, an error anywhere else. */
static void test_nul_bytes(void **state) {
    struct env *E = *state;
    uint8_t sel[ROWS];
    static const char f1[] = "s = 'a\0b'";
    eval_n(E, f1, sizeof f1 - 1, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], i == 1);
    static const char f2[] = "s IN ('a', 'a\0b') AND s STARTS WITH 'a\0'";
    eval_n(E, f2, sizeof f2 - 1, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], i == 1);
    /* The text form shows the NUL as hex and parses back. */
    struct qv_error err;
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse_n(f1, sizeof f1 - 1, NULL, E->r, &e, &err), 0);
    char buf[64];
    qv_expr_to_string(e, buf, sizeof buf);
    assert_string_equal(buf, "s = X'610062'");
    qv_expr_destroy(e);
    /* Outside a literal: a syntax error at the NUL, with a message that is
     * not cut short by it. */
    static const char f3[] = "x = 1 \0AND x = 2";
    assert_int_equal(qv_expr_parse_n(f3, sizeof f3 - 1, NULL, E->r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "NUL byte"));
    assert_non_null(strstr(err.message, "at position 7"));
    assert_non_null(strstr(err.message, "x = 1 ?AND x = 2"));
    /* In a quoted column name: refused, not cut to "x". */
    static const char f4[] = "\"x\0y\" = 1";
    assert_int_equal(qv_expr_parse_n(f4, sizeof f4 - 1, NULL, E->r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "column name cannot contain a NUL byte"));
    /* The NUL-terminated form stops at the first NUL, as C strings do. */
    assert_int_equal(qv_expr_parse(f3, E->r, &e, &err), 0);
    qv_expr_destroy(e);
    /* Length 0 (and NULL text with it) is the empty filter. */
    assert_int_equal(qv_expr_parse_n(NULL, 0, NULL, E->r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "empty filter"));
    assert_int_equal(qv_expr_parse_n(NULL, 3, NULL, E->r, &e, &err), EINVAL);
}

/* A 10 MB string literal, an unterminated one at the end of a 10 MB filter,
 * a long text of multi-byte characters (positions count characters), and
 * IN lists mixing literal types. */
static void test_hostile_literals(void **state) {
    struct env *E = *state;
    const size_t big = 10u << 20;
    char *t = malloc(big + 64);
    strcpy(t, "s = '");
    memset(t + 5, 'q', big);
    strcpy(t + 5 + big, "' OR s = 'v7'");
    uint8_t sel[ROWS];
    eval_text(E, t, sel);
    for (int64_t i = 0; i < ROWS; i++) assert_int_equal(sel[i], i == 7);
    /* Unterminated at the very end. */
    size_t k = 0;
    while (k < big) k += (size_t)sprintf(t + k, "x = %zu OR ", k % 1000);
    strcpy(t + k, "s = 'abc");
    struct qv_error err;
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse(t, E->r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "unterminated string literal"));
    char want[64];
    snprintf(want, sizeof want, "at position %zu\n", k + 5);
    assert_non_null(strstr(err.message, want));
    assert_true(strlen(err.message) < 600);
    /* Positions count characters, not bytes, far into the text. */
    k = 0;
    for (int i = 0; i < 20000; i++) k += (size_t)sprintf(t + k, "s = 'é' OR ");
    strcpy(t + k, "s = = 1");
    assert_int_equal(qv_expr_parse(t, E->r, &e, &err), EINVAL);
    snprintf(want, sizeof want, "at position %d\n", 20000 * 11 + 5);
    assert_non_null(strstr(err.message, want));
    free(t);
    /* Mixed literal types in IN: the first that does not fit the column is
     * named, with its position. */
    assert_int_equal(qv_expr_parse("x IN (1, 2, 'three', DATE '2020-01-01')", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, E->schema, &err), EINVAL);
    assert_non_null(strstr(err.message, "string literal 'three'"));
    assert_non_null(strstr(err.message, "at position 13"));
    qv_expr_destroy(e);
    assert_int_equal(qv_expr_parse("s IN ('a', 2)", E->r, &e, &err), 0);
    assert_int_equal(qv_expr_bind(e, E->schema, &err), EINVAL);
    assert_non_null(strstr(err.message, "number literal 2"));
    qv_expr_destroy(e);
    /* Mixed numbers are fine on a numeric column; so are dates and strings
     * that read as dates on a date column. */
    same_rows(E, "x IN (1, 2.0, 3e0, 4.5, NULL, Infinity)", "x IN (1, 2, 3, NULL)");
    same_rows(E, "dt IN (DATE '1970-01-02', '1970-01-03', TIMESTAMP '1970-01-04 00:00:00')",
              "dt BETWEEN DATE '1970-01-02' AND DATE '1970-01-04'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_many_ors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_ands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_rewrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deep_nesting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nul_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_literals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
