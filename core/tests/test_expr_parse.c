/* The predicate language's text form and structured constructors: every
 * construct, precedence (checked by evaluation, not only by printing),
 * errors that point at the right position, random mutations of valid
 * filters (never a crash, always a clean error or a round-trippable tree),
 * ownership on failure and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quiver/scan.h"
#include "memory/memory_testing.h"
#include "random_batch.h"

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
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->scratch, &err), 0);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    struct env *e = *state;
    /* Every tree was freed: nothing is left charged. */
    assert_int_equal(qv_reservation_used(e->r), 0);
    assert_int_equal(qv_reservation_used(e->scratch), 0);
    qv_reservation_destroy(e->scratch);
    qv_reservation_destroy(e->r);
    qv_pool_destroy(e->pool);
    free(e);
    return 0;
}

/* parse(text) prints as `want`, and `want` parses back to itself. */
static void roundtrip(struct env *E, const char *text, const char *want) {
    struct qv_error err = {0};
    struct qv_expr *e;
    if (qv_expr_parse(text, E->r, &e, &err)) fail_msg("parse '%s': %s", text, err.message);
    char buf[2048];
    size_t n = qv_expr_to_string(e, buf, sizeof buf);
    assert_int_equal(n, strlen(buf));
    if (strcmp(buf, want)) fail_msg("'%s' printed as '%s', expected '%s'", text, buf, want);
    qv_expr_destroy(e);
    assert_int_equal(qv_expr_parse(want, E->r, &e, &err), 0);
    char again[2048];
    qv_expr_to_string(e, again, sizeof again);
    assert_string_equal(again, want);
    qv_expr_destroy(e);
}

static void test_constructs(void **state) {
    struct env *E = *state;
    roundtrip(E, "x=1", "x = 1");
    roundtrip(E, "x==1", "x = 1");
    roundtrip(E, "x<>1 and x!=2", "x != 1 AND x != 2");
    roundtrip(E, "x<1 or x<=2 or x>3 or x>=4", "x < 1 OR x <= 2 OR x > 3 OR x >= 4");
    roundtrip(E, "5 < x", "5 < x");
    roundtrip(E, "a.b.c = 'it''s'", "a.b.c = 'it''s'");
    roundtrip(E, "\"weird name\" = \"a\"\"b\"", "\"weird name\" = \"a\"\"b\"");
    roundtrip(E, "`back tick`.x > 0", "\"back tick\".x > 0");
    roundtrip(E, "\"and\" = 1 AND \"NULL\".\"in\" = 2", "\"and\" = 1 AND \"NULL\".\"in\" = 2");
    roundtrip(E, "x IS NULL", "x IS NULL");
    roundtrip(E, "x is not null", "x IS NOT NULL");
    roundtrip(E, "x IN (1,2 , 3)", "x IN (1, 2, 3)");
    roundtrip(E, "x not in ('a', NULL)", "x NOT IN ('a', NULL)");
    roundtrip(E, "x BETWEEN -1 AND +2.50", "x BETWEEN -1 AND 2.5");
    roundtrip(E, "x not between 1 and 2", "x NOT BETWEEN 1 AND 2");
    roundtrip(E, "s starts with 'ab'", "s STARTS WITH 'ab'");
    roundtrip(E, "flag", "flag");
    roundtrip(E, "not flag", "NOT flag");
    roundtrip(E, "TRUE", "TRUE");
    roundtrip(E, "false OR null", "FALSE OR NULL");
    roundtrip(E, "x = 0.05", "x = 0.05");
    roundtrip(E, "x = .5", "x = 0.5");
    roundtrip(E, "x = 5.", "x = 5");
    roundtrip(E, "x = 00012.3400", "x = 12.34");
    roundtrip(E, "x = 1e3", "x = 1000");
    roundtrip(E, "x = 1.5E+3", "x = 1500");
    roundtrip(E, "x = 25e-1", "x = 2.5");
    roundtrip(E, "x = -0", "x = 0");
    roundtrip(E, "x = 1e-400", "x = 1E-400");
    roundtrip(E, "x = 1e400", "x = 1E+400");
    roundtrip(E, "x = 123456789012345678901234567890123456789012345",
              "x = 1.23456789012345678901234567890123456789012345E+44");
    roundtrip(E, "x = 0.000000000000000000000000000000001", "x = 1E-33");
    roundtrip(E, "x = 0.00000000000000000001", "x = 0.00000000000000000001");
    roundtrip(E, "x IN (nan, -NaN, inf, -Infinity, +infinity)",
              "x IN (NaN, NaN, Infinity, -Infinity, Infinity)");
    roundtrip(E, "d = date '1994-1-1'", "d = DATE '1994-01-01'");
    roundtrip(E, "d = DATE '1969-12-31'", "d = DATE '1969-12-31'");
    roundtrip(E, "d = DATE '2000-02-29'", "d = DATE '2000-02-29'");
    roundtrip(E, "t = TIMESTAMP '1994-01-01 12:00:00'", "t = TIMESTAMP '1994-01-01 12:00:00'");
    roundtrip(E, "t = timestamp '1994-01-01T12:00:00.5Z'", "t = TIMESTAMP '1994-01-01 12:00:00.500'");
    roundtrip(E, "t = TIMESTAMP '1994-01-01 12:00:00.000001+02:00'",
              "t = TIMESTAMP '1994-01-01 10:00:00.000001'");
    roundtrip(E, "t = TIMESTAMP '1969-12-31 23:59:59.999999999'",
              "t = TIMESTAMP '1969-12-31 23:59:59.999999999'");
    roundtrip(E, "t = TIMESTAMP '1994-01-01'", "t = TIMESTAMP '1994-01-01 00:00:00'");
    roundtrip(E, "b = X'00fF'", "b = X'00FF'");
    roundtrip(E, "b = x''", "b = ''");
    roundtrip(E, "s = 'héllo'", "s = 'héllo'");
    roundtrip(E, "名前 = 'x'", "名前 = 'x'");
    /* DATE, TIMESTAMP, X, STARTS and WITH name columns where no literal follows */
    roundtrip(E, "date = DATE '2020-01-01' AND timestamp > 1 AND x = 2 AND starts = with",
              "date = DATE '2020-01-01' AND timestamp > 1 AND x = 2 AND starts = with");
    /* parentheses only where needed */
    roundtrip(E, "((x = 1))", "x = 1");
    roundtrip(E, "(a OR b) AND c", "(a OR b) AND c");
    roundtrip(E, "a OR (b AND c)", "a OR b AND c");
    roundtrip(E, "(a AND b) AND (c AND d)", "a AND b AND c AND d");
    roundtrip(E, "a OR (b OR (c OR d))", "a OR b OR c OR d");
    roundtrip(E, "NOT (a AND b)", "NOT (a AND b)");
    roundtrip(E, "NOT a = 1", "NOT (a = 1)");
    roundtrip(E, "NOT NOT a", "NOT NOT a");
    roundtrip(E, "not (a) or not (b and c)", "NOT a OR NOT (b AND c)");
    roundtrip(E, " \t\nx\n=\r1 ", "x = 1");
}

/* Precedence, checked by evaluation: three nullable bools a, b, c take all
 * 27 combinations of TRUE / FALSE / NULL, and every filter must select
 * exactly the rows its intended reading selects. */
enum { F_ = 0, T_ = 1, N_ = 2 };
static int and3(int x, int y) { return x == F_ || y == F_ ? F_ : x == N_ || y == N_ ? N_ : T_; }
static int or3(int x, int y) { return x == T_ || y == T_ ? T_ : x == N_ || y == N_ ? N_ : F_; }
static int not3(int x) { return x == N_ ? N_ : !x; }
static int eq3(int x, int y) { return x == N_ || y == N_ ? N_ : x == y; }

static void test_precedence(void **state) {
    struct env *E = *state;
    static const struct qv_field kids[] = {{.name = "a", .type = QV_TYPE_BOOL, .nullable = true},
                                           {.name = "b", .type = QV_TYPE_BOOL, .nullable = true},
                                           {.name = "c", .type = QV_TYPE_BOOL, .nullable = true}};
    static const struct qv_field rt = {.type = QV_TYPE_STRUCT, .n_children = 3, .children = kids};
    struct qv_error err;
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&rt, E->r, &s, &err), 0);
    struct qv_builder *bl;
    assert_int_equal(qv_builder_create(s, E->r, NULL, &bl, &err), 0);
    for (int row = 0; row < 27; row++)
        for (int k = 0, v = row; k < 3; k++, v /= 3) {
            struct qv_appender *ap = qv_builder_column(bl, k);
            assert_int_equal(v % 3 == N_ ? qv_append_null(ap) : qv_append_bool(ap, v % 3 == T_), 0);
        }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(bl, &batch, &err), 0);
    qv_builder_destroy(bl);
    struct {
        const char *text;
        int id;
    } cases[] = {
        {"a OR b AND c", 0},          {"a AND b OR c", 1},         {"NOT a AND b", 2},
        {"NOT a OR b", 3},            {"NOT a = TRUE OR b", 4},    {"a OR NOT b AND c", 5},
        {"NOT (a OR b) AND c", 6},    {"a = b = c", -1},           {"a AND (b OR c)", 7},
        {"NOT NOT a AND NOT b", 8},   {"a = NOT b", -1},           {"a OR b OR NOT c AND a", 9},
        {"c IS NULL OR a AND b IS NOT NULL", 10}, {"NOT a IS NULL", 11},
        {"a IN (TRUE) AND NOT b IN (FALSE, NULL)", 12},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qv_expr *e;
        int rc = qv_expr_parse(cases[k].text, E->r, &e, &err);
        if (cases[k].id < 0) {
            assert_int_equal(rc, EINVAL); /* comparisons do not chain */
            continue;
        }
        if (rc) fail_msg("%s: %s", cases[k].text, err.message);
        assert_int_equal(qv_expr_bind(e, s, &err), 0);
        uint8_t sel[4] = {0};
        assert_int_equal(qv_expr_eval(e, &batch, NULL, sel, NULL, E->scratch, &err), 0);
        for (int row = 0; row < 27; row++) {
            int a = row % 3, b = row / 3 % 3, c = row / 9 % 3, want;
            switch (cases[k].id) {
            case 0: want = or3(a, and3(b, c)); break;
            case 1: want = or3(and3(a, b), c); break;
            case 2: want = and3(not3(a), b); break;
            case 3: want = or3(not3(a), b); break;
            case 4: want = or3(not3(eq3(a, T_)), b); break;
            case 5: want = or3(a, and3(not3(b), c)); break;
            case 6: want = and3(not3(or3(a, b)), c); break;
            case 7: want = and3(a, or3(b, c)); break;
            case 8: want = and3(a, not3(b)); break;
            case 9: want = or3(or3(a, b), and3(not3(c), a)); break;
            case 10: want = or3(c == N_, and3(a, b != N_)); break;
            case 11: want = a != N_; break;
            case 12: want = and3(eq3(a, T_), not3(b == N_ ? N_ : b == F_ ? T_ : N_)); break;
            default: want = N_; break;
            }
            int got = (sel[row >> 3] >> (row & 7)) & 1;
            if (got != (want == T_))
                fail_msg("%s: row a=%d b=%d c=%d selected %d, want %d", cases[k].text, a, b, c, got, want);
        }
        qv_expr_destroy(e);
    }
    batch.release(&batch);
    qv_schema_destroy(s);
}

/* The error names what was expected, at which 1-based character position,
 * and draws a caret under it. */
static void expect_error(struct env *E, const char *text, const char *needle, int pos) {
    struct qv_error err = {0};
    struct qv_expr *e = (struct qv_expr *)(uintptr_t)1;
    int rc = qv_expr_parse(text, E->r, &e, &err);
    if (rc != EINVAL) fail_msg("'%s': returned %d, expected EINVAL", text, rc);
    assert_null(e);
    assert_int_equal(err.code, EINVAL);
    if (!strstr(err.message, needle)) fail_msg("'%s': message '%s' lacks '%s'", text, err.message, needle);
    char where[48];
    snprintf(where, sizeof where, "at position %d\n", pos);
    if (!strstr(err.message, where)) fail_msg("'%s': message '%s' lacks '%s'", text, err.message, where);
    /* Line 2 shows the text (or a window of it), line 3 the caret. */
    const char *l2 = strchr(err.message, '\n');
    assert_non_null(l2);
    const char *l3 = strchr(l2 + 1, '\n');
    assert_non_null(l3);
    const char *caret = strchr(l3, '^');
    assert_non_null(caret);
    if (strlen(text) < 100 && !strstr(text, "名")) assert_int_equal(caret - (l3 + 1) - 2, pos - 1);
}

static void test_errors(void **state) {
    struct env *E = *state;
    expect_error(E, "x >", "expected a column or a literal, found end of filter", 4);
    expect_error(E, "x = 1 AND", "expected a column or a literal, found end of filter", 10);
    expect_error(E, "x > 5 AND y IN (,3)", "expected a literal, found ','", 17);
    expect_error(E, "x IN ()", "expected a literal, found ')'", 7);
    expect_error(E, "x IN (1 2)", "expected ',' or ')' in the IN list, found '2'", 9);
    expect_error(E, "x IN (y)", "expected a literal, found 'y'", 7);
    expect_error(E, "x IN 1", "expected '(' after IN", 6);
    expect_error(E, "x BETWEEN 1 5", "expected AND in BETWEEN, found '5'", 13);
    expect_error(E, "x IS 5", "expected NULL or NOT NULL, found '5'", 6);
    expect_error(E, "x IS NOT 5", "expected NULL, found '5'", 10);
    expect_error(E, "x NOT 5", "expected IN or BETWEEN after NOT", 7);
    expect_error(E, "x STARTS 'a'", "expected WITH after STARTS", 10);
    expect_error(E, "x STARTS WITH y", "expected a literal, found 'y'", 15);
    expect_error(E, "x = 'abc", "unterminated string literal", 5);
    expect_error(E, "\"abc = 1", "unterminated quoted name", 1);
    expect_error(E, "x = 1.2.3", "malformed number", 5);
    expect_error(E, "x = 12abc", "malformed number", 5);
    expect_error(E, "x = 1e", "malformed number", 5);
    expect_error(E, "x = DATE '2020-02-30'", "invalid DATE literal", 10);
    expect_error(E, "x = DATE '2021-02-29'", "invalid DATE literal", 10);
    expect_error(E, "x = DATE '2020-13-01'", "invalid DATE literal", 10);
    expect_error(E, "x = TIMESTAMP '2020-01-01 25:00'", "invalid TIMESTAMP literal", 15);
    expect_error(E, "x = TIMESTAMP '2020-01-01 12:00:00.1234567891'", "invalid TIMESTAMP", 15);
    expect_error(E, "x = TIMESTAMP 'noon'", "invalid TIMESTAMP literal", 15);
    expect_error(E, "x = X'abc'", "even number of hexadecimal digits", 6);
    expect_error(E, "x = X'zz'", "even number of hexadecimal digits", 6);
    expect_error(E, "x = 1 )", "unbalanced ')'", 7);
    expect_error(E, "((x = 1)", "expected ')', found end of filter", 9);
    expect_error(E, "x ! 1", "unexpected '!'", 3);
    expect_error(E, "x # 1", "unexpected character", 3);
    expect_error(E, "AND x = 1", "expected a column or a literal, found 'AND'", 1);
    expect_error(E, "x = -'a'", "expected a number after the sign", 6);
    expect_error(E, "x = - y", "expected a number after the sign", 7);
    expect_error(E, "x. = 1", "expected a field name, found '='", 4);
    expect_error(E, "x = 1 y = 2", "expected AND, OR or the end of the filter, found 'y'", 7);
    expect_error(E, "x = 1 OR", "expected a column or a literal", 9);
    expect_error(E, "", "empty filter", 1);
    expect_error(E, "   ", "empty filter", 1);
    expect_error(E, "x = = 1", "expected a column or a literal, found '='", 5);
    expect_error(E, "()", "expected a column or a literal, found ')'", 2);
    expect_error(E, "x = NOT", "expected a column or a literal, found 'NOT'", 5);
    expect_error(E, "名前 = 'x' AND", "found end of filter", 13);
    expect_error(E, "x = 1 AND\n  y ===", "expected a column or a literal, found '='", 17);

    /* Nesting is bounded: no stack exhaustion on hostile input. */
    char deep[2048];
    memset(deep, '(', 300);
    strcpy(deep + 300, "x");
    expect_error(E, deep, "nested too deeply (more than 200 levels)", 201);
    char nots[2048] = "";
    for (int i = 0; i < 300; i++) strcat(nots, "NOT ");
    strcat(nots, "x");
    expect_error(E, nots, "nested too deeply (more than 200 levels)", 801);

    /* A long text shows a window around the position. */
    char longtext[4096] = "";
    for (int i = 0; i < 60; i++) strcat(longtext, "x = 1 AND ");
    strcat(longtext, "y IN (1,,2)");
    struct qv_error err;
    struct qv_expr *e;
    assert_int_equal(qv_expr_parse(longtext, E->r, &e, &err), EINVAL);
    assert_non_null(strstr(err.message, "at position 609"));
    assert_non_null(strstr(err.message, "\n  ..."));
    assert_true(strlen(err.message) < 400);
    /* NULL arguments */
    assert_int_equal(qv_expr_parse(NULL, E->r, &e, &err), EINVAL);
    assert_int_equal(qv_expr_parse("x", NULL, &e, &err), EINVAL);
    assert_int_equal(qv_expr_parse("x", E->r, NULL, NULL), EINVAL);
    assert_int_equal(qv_expr_parse("x =", E->r, &e, NULL), EINVAL);
}

/* Random mutations of valid filters never crash: each either parses to a
 * tree whose text round-trips, or fails with EINVAL and a positioned
 * message. */
static void test_fuzz(void **state) {
    struct env *E = *state;
    static const char *seeds[] = {
        "x > 5 AND (y < 3 OR y IS NULL) AND NOT z IN (1, 2.5, NULL)",
        "a.\"b c\".d BETWEEN -1e3 AND 0.05 OR s STARTS WITH 'it''s'",
        "d = DATE '1994-01-01' AND t < TIMESTAMP '1994-01-01 12:00:00.5Z' AND b = X'00ff'",
        "NOT (f != NaN) OR f IN (-Infinity, inf) OR flag OR `q` <> 'x'",
        "u NOT BETWEEN 1 AND 18446744073709551616 AND v NOT IN ('a', 'b')",
    };
    static const char inserts[] = "()'\",.=<>!-+ eE0123456789aAnNdDoOrRX`\t\\";
    uint64_t seed = 12345;
    char buf[1024];
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 30000; iter++) {
        const char *src = seeds[rb_next(&seed) % (sizeof seeds / sizeof seeds[0])];
        strcpy(buf, src);
        int muts = 1 + (int)(rb_next(&seed) % 4);
        for (int m = 0; m < muts; m++) {
            size_t n = strlen(buf);
            size_t at = n ? (size_t)(rb_next(&seed) % n) : 0;
            switch (rb_next(&seed) % 5) {
            case 0: memmove(buf + at, buf + at + 1, n - at); break; /* delete */
            case 1:                                                 /* insert */
                if (n + 2 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, n - at + 1);
                    buf[at] = inserts[rb_next(&seed) % (sizeof inserts - 1)];
                }
                break;
            case 2: buf[at] = inserts[rb_next(&seed) % (sizeof inserts - 1)]; break;
            case 3: buf[at] = (char)(1 + rb_next(&seed) % 255); break; /* any byte */
            default: {                                                /* duplicate a span */
                size_t len = (size_t)(rb_next(&seed) % 12);
                if (at + len <= n && n + len + 1 < sizeof buf) {
                    memmove(buf + at + len, buf + at, n - at + 1);
                }
                break;
            }
            }
        }
        struct qv_error err = {0};
        struct qv_expr *e;
        int rc = qv_expr_parse(buf, E->r, &e, &err);
        if (rc == 0) {
            char t1[4096], t2[4096];
            qv_expr_to_string(e, t1, sizeof t1);
            qv_expr_destroy(e);
            if (qv_expr_parse(t1, E->r, &e, &err)) fail_msg("'%s' printed as '%s', which fails: %s", buf, t1, err.message);
            qv_expr_to_string(e, t2, sizeof t2);
            assert_string_equal(t1, t2);
            qv_expr_destroy(e);
            ok++;
        } else {
            if (rc != EINVAL) fail_msg("'%s': returned %d", buf, rc);
            assert_null(e);
            if (!strstr(err.message, "filter: ") || !strstr(err.message, "position"))
                fail_msg("'%s': message '%s'", buf, err.message);
            bad++;
        }
    }
    print_message("%d mutants parsed, %d rejected\n", ok, bad);
    assert_true(ok > 1000 && bad > 1000);
}

static void test_constructors(void **state) {
    struct env *E = *state;
    struct qv_reservation *r = E->r;
    struct qv_error err;
    char buf[1024];
    struct qv_expr *x, *five, *s, *ab, *d, *vals[3], *cmp, *sw, *in, *e;

    assert_int_equal(qv_expr_column(r, "x", &x, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 5, &five, &err), 0);
    assert_int_equal(qv_expr_compare(QV_CMP_GT, x, five, &cmp, &err), 0);
    assert_int_equal(qv_expr_column(r, "s", &s, &err), 0);
    assert_int_equal(qv_expr_literal_string(r, "ab", 2, &ab, &err), 0);
    assert_int_equal(qv_expr_starts_with(s, ab, &sw, &err), 0);
    assert_int_equal(qv_expr_column(r, "a . \"b.c\" . d", &d, &err), 0);
    assert_int_equal(qv_expr_literal_number(r, "1.5", &vals[0], &err), 0);
    assert_int_equal(qv_expr_literal_null(r, &vals[1], &err), 0);
    assert_int_equal(qv_expr_literal_decimal(r, (uint64_t)-5, -1, 2, &vals[2], &err), 0);
    assert_int_equal(qv_expr_in(d, vals, 3, true, &in, &err), 0);
    assert_int_equal(qv_expr_and(cmp, sw, &e, &err), 0);
    assert_int_equal(qv_expr_or(e, in, &e, &err), 0);
    qv_expr_to_string(e, buf, sizeof buf);
    assert_string_equal(buf, "x > 5 AND s STARTS WITH 'ab' OR a.\"b.c\".d NOT IN (1.5, NULL, -0.05)");
    /* snprintf semantics */
    char small[8];
    size_t need = qv_expr_to_string(e, small, sizeof small);
    assert_int_equal(need, strlen(buf));
    assert_string_equal(small, "x > 5 A");
    assert_int_equal(qv_expr_to_string(e, NULL, 0), strlen(buf));
    qv_expr_destroy(e);

    /* Literals print as they read back. */
    struct {
        int kind;
        const char *want;
    } lits[] = {{0, "-9223372036854775808"}, {1, "18446744073709551615"}, {2, "0.1"},
                {3, "NaN"},                  {4, "-Infinity"},           {5, "1E-300"},
                {6, "DATE '1994-01-01'"},    {7, "TIMESTAMP '1970-01-01 00:00:00.001'"},
                {8, "'it''s'"},              {9, "X'0061FF'"},           {10, "TRUE"},
                {11, "0.05"},                {12, "-170141183460469231731687303715884105728"},
                {13, "1.25E+1000"},          {14, "TIMESTAMP '1969-12-31 23:59:59'"},
                {15, "DATE '-0001-12-31'"}};
    for (size_t k = 0; k < sizeof lits / sizeof lits[0]; k++) {
        struct qv_expr *l = NULL;
        int rc = -1;
        switch (lits[k].kind) {
        case 0: rc = qv_expr_literal_int64(r, INT64_MIN, &l, &err); break;
        case 1: rc = qv_expr_literal_uint64(r, UINT64_MAX, &l, &err); break;
        case 2: rc = qv_expr_literal_double(r, 0.1, &l, &err); break;
        case 3: rc = qv_expr_literal_double(r, NAN, &l, &err); break;
        case 4: rc = qv_expr_literal_double(r, -INFINITY, &l, &err); break;
        case 5: rc = qv_expr_literal_double(r, 1e-300, &l, &err); break;
        case 6: rc = qv_expr_literal_date32(r, 8766, &l, &err); break;
        case 7: rc = qv_expr_literal_timestamp(r, 1, QV_TIME_MS, &l, &err); break;
        case 8: rc = qv_expr_literal_string(r, "it's", 4, &l, &err); break;
        case 9: rc = qv_expr_literal_string(r, "\0a\xff", 3, &l, &err); break;
        case 10: rc = qv_expr_literal_bool(r, true, &l, &err); break;
        case 11: rc = qv_expr_literal_decimal(r, 5, 0, 2, &l, &err); break;
        case 12: rc = qv_expr_literal_decimal(r, 0, INT64_MIN, 0, &l, &err); break;
        case 13: rc = qv_expr_literal_number(r, "125e998", &l, &err); break;
        case 14: rc = qv_expr_literal_timestamp(r, -1, QV_TIME_S, &l, &err); break;
        case 15: rc = qv_expr_literal_date32(r, -719529, &l, &err); break;
        }
        assert_int_equal(rc, 0);
        qv_expr_to_string(l, buf, sizeof buf);
        if (strcmp(buf, lits[k].want)) fail_msg("literal %zu printed '%s', want '%s'", k, buf, lits[k].want);
        /* and reads back as itself */
        char text[1200];
        snprintf(text, sizeof text, "c = %s", buf);
        struct qv_expr *p;
        assert_int_equal(qv_expr_parse(text, r, &p, &err), 0);
        char back[1200];
        qv_expr_to_string(p, back, sizeof back);
        assert_string_equal(back, text);
        qv_expr_destroy(p);
        qv_expr_destroy(l);
    }

    /* Column paths */
    const char *names[] = {"x y", "z", "AND"};
    assert_int_equal(qv_expr_column_names(r, names, 3, &x, &err), 0);
    qv_expr_to_string(x, buf, sizeof buf);
    assert_string_equal(buf, "\"x y\".z.\"AND\"");
    qv_expr_destroy(x);
    assert_int_equal(qv_expr_column(r, "a..b", &x, &err), EINVAL);
    assert_null(x);
    assert_non_null(strstr(err.message, "position 3"));
    assert_int_equal(qv_expr_column(r, "", &x, &err), EINVAL);
    assert_int_equal(qv_expr_column(r, "\"open", &x, &err), EINVAL);
    assert_int_equal(qv_expr_column(r, "a b", &x, &err), EINVAL);
    assert_int_equal(qv_expr_column_names(r, names, 0, &x, &err), EINVAL);
    assert_int_equal(qv_expr_literal_number(r, "1.2.3", &x, &err), EINVAL);
    assert_int_equal(qv_expr_literal_number(r, "abc", &x, &err), EINVAL);
    assert_int_equal(qv_expr_literal_decimal(r, 1, 0, 5000, &x, &err), EINVAL);
    assert_int_equal(qv_expr_literal_timestamp(r, 1, (enum qv_time_unit)9, &x, &err), EINVAL);
    assert_int_equal(qv_expr_literal_string(r, NULL, 3, &x, &err), EINVAL);
    assert_int_equal(qv_expr_literal_int64(NULL, 1, &x, &err), EINVAL);
}

/* Combining constructors own their operands on failure too: nothing leaks
 * (teardown checks the reservation is back to zero). */
static void test_ownership(void **state) {
    struct env *E = *state;
    struct qv_reservation *r = E->r;
    struct qv_error err;
    struct qv_expr *a, *b, *c, *out = (struct qv_expr *)(uintptr_t)1;

    assert_int_equal(qv_expr_column(r, "a", &a, &err), 0);
    assert_int_equal(qv_expr_and(a, NULL, &out, &err), EINVAL);
    assert_null(out);
    assert_non_null(strstr(err.message, "operand 2 is missing"));
    assert_int_equal(qv_expr_column(r, "a", &a, &err), 0);
    assert_int_equal(qv_expr_or(NULL, a, &out, &err), EINVAL);
    assert_int_equal(qv_expr_not(NULL, &out, &err), EINVAL);

    /* One check at the end for a whole nested construction. */
    struct qv_expr *bad = NULL; /* as if a constructor had failed */
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 1, &b, &err), 0);
    assert_int_equal(qv_expr_compare(QV_CMP_EQ, a, b, &c, &err), 0);
    struct qv_expr *t1 = NULL, *t2 = NULL;
    qv_expr_and(c, bad, &t1, &err);
    int rc = qv_expr_not(t1, &t2, &err);
    assert_int_equal(rc, EINVAL);
    assert_null(t2);

    /* Operands of the wrong kind */
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 1, &b, &err), 0);
    assert_int_equal(qv_expr_compare(QV_CMP_EQ, a, b, &c, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 2, &b, &err), 0);
    assert_int_equal(qv_expr_compare(QV_CMP_EQ, c, b, &out, &err), EINVAL); /* (x = 1) = 2 */
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 1, &b, &err), 0);
    assert_int_equal(qv_expr_compare((enum qv_cmp_op)42, a, b, &out, &err), EINVAL);
    struct qv_expr *vals[3];
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 1, &vals[0], &err), 0);
    assert_int_equal(qv_expr_column(r, "y", &vals[1], &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 3, &vals[2], &err), 0);
    assert_int_equal(qv_expr_in(a, vals, 3, false, &out, &err), EINVAL);
    assert_non_null(strstr(err.message, "IN values must be literals"));
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 1, &vals[0], &err), 0);
    vals[1] = NULL;
    assert_int_equal(qv_expr_in(a, vals, 2, false, &out, &err), EINVAL);
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_in(a, vals, 0, false, &out, &err), EINVAL);
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 1, &b, &err), 0);
    assert_int_equal(qv_expr_column(r, "y", &c, &err), 0);
    assert_int_equal(qv_expr_compare(QV_CMP_EQ, a, b, &a, &err), 0);
    assert_int_equal(qv_expr_between(c, a, NULL, false, &out, &err), EINVAL);
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_column(r, "y", &b, &err), 0);
    assert_int_equal(qv_expr_starts_with(a, b, &out, &err), EINVAL);
    assert_int_equal(qv_expr_column(r, "x", &a, &err), 0);
    assert_int_equal(qv_expr_literal_int64(r, 1, &b, &err), 0);
    assert_int_equal(qv_expr_compare(QV_CMP_EQ, a, b, &a, &err), 0);
    assert_int_equal(qv_expr_is_null(a, false, &out, &err), EINVAL);
    qv_expr_destroy(NULL);

    /* Depth is bounded for built trees too; the whole chain is freed. */
    assert_int_equal(qv_expr_column(r, "flag", &a, &err), 0);
    rc = 0;
    int k;
    for (k = 0; k < 300 && !rc; k++) rc = qv_expr_not(a, &a, &err);
    assert_int_equal(rc, EINVAL);
    assert_int_equal(k, QV_EXPR_MAX_DEPTH);
    assert_null(a);
    assert_non_null(strstr(err.message, "nested too deeply"));

    /* Long AND / OR chains stay flat: 100000 operands, depth 2. */
    struct qv_expr *chain = NULL;
    assert_int_equal(qv_expr_column(r, "flag", &chain, &err), 0);
    for (k = 0; k < 100000; k++) {
        assert_int_equal(qv_expr_column(r, "flag", &a, &err), 0);
        assert_int_equal(qv_expr_or(chain, a, &chain, &err), 0);
    }
    static const struct qv_field f1[] = {{.name = "flag", .type = QV_TYPE_BOOL, .nullable = true}};
    static const struct qv_field rt = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = f1};
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&rt, r, &s, &err), 0);
    assert_int_equal(qv_expr_bind(chain, s, &err), 0);
    assert_int_equal(qv_expr_num_refs(chain), 1);
    /* Combining a bound tree drops its binding. */
    assert_int_equal(qv_expr_column(r, "flag", &a, &err), 0);
    assert_int_equal(qv_expr_and(chain, a, &chain, &err), 0);
    assert_false(qv_expr_is_bound(chain));
    qv_expr_destroy(chain);
    qv_schema_destroy(s);
}

/* Every allocation of parse and bind can fail: the result is ENOMEM (or
 * success), never a leak or a crash. */
static void test_alloc_failures(void **state) {
    struct env *E = *state;
    struct qv_error err;
    struct qv_schema *s;
    assert_int_equal(rb_all_types_schema(E->r, &s), 0);
    const char *text =
        "(i32 > 5 AND s STARTS WITH 'abc' OR pt.x IN (1.5, NULL, 2, 3, 4, 5, 6, 7, 8, 9)) AND "
        "NOT (d38 BETWEEN -1e-3 AND 123456789.0123 OR s IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', "
        "'h', 'i', 'j')) OR day = '1994-01-01' OR i8 = i64";
    uint64_t before = qv_reservation_used(E->r);
    int failures = 0, n;
    for (n = 1; n < 400; n++) {
        qv_pool_inject_alloc_failure(E->pool, (uint64_t)n);
        struct qv_expr *e = NULL;
        int rc = qv_expr_parse(text, E->r, &e, &err);
        if (!rc) rc = qv_expr_bind(e, s, &err);
        qv_pool_inject_alloc_failure(E->pool, 0);
        qv_expr_destroy(e);
        assert_int_equal(qv_reservation_used(E->r), before);
        if (rc == 0) break;
        if (rc != ENOMEM) fail_msg("allocation %d: returned %d (%s)", n, rc, err.message);
        failures++;
    }
    print_message("%d allocation failures handled\n", failures);
    assert_true(failures > 20);
    assert_true(n < 400);
    qv_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_constructs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuzz, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constructors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ownership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
