/* Unit tests of the CLI's text handling: the CSV reader, type names,
 * inference, value parsing, value formatting and calendar arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "io/csv_reader.h"
#include "io/csv_types.h"
#include "io/csv_writer.h"
#include "term/value_format.h"

/* Parses `text` and returns the records as "a|b|c" lines ("" quoted shown
 * as <q>), or the error message prefixed with "ERROR: ". */
static char *parse_all(const char *text, size_t n, char delim) {
    FILE *f = fmemopen((void *)text, n, "r");
    assert_non_null(f);
    struct cli_csv_reader r;
    cli_csv_reader_init(&r, f, delim);
    struct cli_buf out;
    cli_buf_init(&out);
    int got;
    while ((got = cli_csv_next(&r)) > 0) {
        cli_buf_printf(&out, "%lld:", (long long)r.record_line);
        for (int i = 0; i < r.n_fields; i++) {
            if (i) cli_buf_putc(&out, '|');
            if (r.fields[i].quoted) cli_buf_puts(&out, "<q>");
            cli_buf_put(&out, r.fields[i].p, r.fields[i].n);
        }
        cli_buf_putc(&out, '\n');
    }
    if (got < 0) cli_buf_printf(&out, "ERROR: %s", r.error);
    cli_csv_reader_free(&r);
    fclose(f);
    /* A copy of the whole text: records may hold NUL bytes. */
    char *s = calloc(out.len + 1, 1);
    assert_non_null(s);
    memcpy(s, cli_buf_str(&out), out.len);
    cli_buf_free(&out);
    return s;
}

static void expect_parse(const char *text, const char *want) {
    char *got = parse_all(text, strlen(text), ',');
    if (strcmp(got, want) != 0) fail_msg("input [%s]\n got [%s]\nwant [%s]", text, got, want);
    free(got);
}

static void test_csv_reader(void **state) {
    (void)state;
    expect_parse("a,b\n1,2\n", "1:a|b\n2:1|2\n");
    expect_parse("a,b\r\n1,2\r\n", "1:a|b\n2:1|2\n");
    expect_parse("a,b\n1,2", "1:a|b\n2:1|2\n");              /* no final newline */
    expect_parse("a,b\n,\n", "1:a|b\n2:|\n");                /* empty fields */
    expect_parse("a\n\"\"\n", "1:a\n2:<q>\n");               /* quoted empty */
    expect_parse("x\n\"a,b\"\n", "1:x\n2:<q>a,b\n");
    expect_parse("x\n\"say \"\"hi\"\"\"\n", "1:x\n2:<q>say \"hi\"\n");
    expect_parse("x,y\n\"two\nlines\",z\nnext,1\n", "1:x|y\n2:<q>two\nlines|z\n4:next|1\n");
    expect_parse("\xEF\xBB\xBFid\n1\n", "1:id\n2:1\n");        /* BOM skipped */
    expect_parse("a\n\n1\n", "1:a\n2:\n3:1\n");               /* blank line is a record */
    expect_parse("a\rb\r", "1:a\n2:b\n");                      /* lone CR */
    expect_parse("a\nx\"y\n", "1:a\n2:x\"y\n");                /* quote inside: literal */
    expect_parse("", "");
    char *e = parse_all("a\n\"open\n", 8, ',');
    assert_non_null(strstr(e, "never closed"));
    assert_non_null(strstr(e, "starting on line 2"));
    free(e);
    e = parse_all("a,b\n1,2\n\"x\"y,3\n", 16, ',');
    assert_non_null(strstr(e, "line 3"));
    assert_non_null(strstr(e, "after a closing quote"));
    free(e);
    /* NUL bytes are data, not terminators */
    e = parse_all("a\nx\0y\n", 6, ',');
    assert_int_equal(memcmp(e, "1:a\n2:x\0y\n", 10), 0);
    free(e);
    e = parse_all("a;b\n1;\"2;3\"\n", 12, ';');
    assert_string_equal(e, "1:a|b\n2:1|<q>2;3\n");
    free(e);
}

static const char *infer(const char *const *values, int n) {
    static char buf[64];
    struct cli_infer s;
    cli_infer_init(&s);
    for (int i = 0; i < n; i++) {
        int quoted = values[i][0] == '"';
        const char *p = quoted ? values[i] + 1 : values[i];
        struct cli_csv_field f = {p, strlen(p), quoted};
        cli_infer_add(&s, &f);
    }
    struct cli_type t;
    cli_infer_result(&s, &t);
    qv_type_to_string(&t.field, buf, sizeof buf);
    return buf;
}
#define INFER(...) infer((const char *const[]){__VA_ARGS__}, \
                         (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)))

static void test_inference(void **state) {
    (void)state;
    assert_string_equal(INFER("1", "-2", "", "30"), "int64");
    assert_string_equal(INFER("1", "2.5", "1e3"), "float64");
    assert_string_equal(INFER("1", "NaN", "-inf"), "float64");
    assert_string_equal(INFER("true", "False", ""), "bool");
    assert_string_equal(INFER("2024-01-31", "1999-12-31"), "date32");
    assert_string_equal(INFER("2024-02-30"), "utf8"); /* not a real day */
    assert_string_equal(INFER("+10000-01-01", "-0001-12-31"), "date32"); /* what export writes */
    assert_string_equal(INFER("2024-1-31", "2024-12-1"), "date32"); /* one-digit fields too */
    assert_string_equal(INFER("1-2-3", "2024-1-31"), "utf8"); /* a year has four digits */
    assert_string_equal(INFER("2024-01-31T10:00:00", "2024-01-31 10:00"), "timestamp[us]");
    assert_string_equal(INFER("2024-01-31T10:00:00.123456789"), "timestamp[ns]");
    assert_string_equal(INFER("2024-01-31T10:00:00Z", "2024-01-31T10:00:00+02:00"),
                        "timestamp[us, UTC]");
    assert_string_equal(INFER("2024-01-31T10:00:00Z", "2024-01-31T10:00:00"), "utf8");
    assert_string_equal(INFER("2024-01-31", "2024-01-31T10:00:00"), "utf8");
    assert_string_equal(INFER("007", "8"), "utf8");       /* leading zeros: identifiers */
    assert_string_equal(INFER("1", "\""), "utf8");         /* "" is an empty string */
    assert_string_equal(INFER("", ""), "utf8");            /* nothing to go on */
    assert_string_equal(INFER(" 12 ", "3"), "int64");      /* blanks around numbers */
    /* Beyond int64: lossless types only, never float64 (which would round). */
    assert_string_equal(INFER("9223372036854775807", "-9223372036854775808"), "int64");
    assert_string_equal(INFER("9223372036854775808", "1"), "uint64");
    assert_string_equal(INFER("18446744073709551615", ""), "uint64");
    assert_string_equal(INFER("99999999999999999999"), "decimal128(38, 0)");
    assert_string_equal(INFER("9223372036854775808", "-1"), "decimal128(38, 0)");
    assert_string_equal(INFER("-9223372036854775809"), "decimal128(38, 0)");
    assert_string_equal(INFER("99999999999999999999999999999999999999"), "decimal128(38, 0)");
    assert_string_equal(INFER("999999999999999999999999999999999999999"), "utf8");
    assert_string_equal(INFER("-999999999999999999999999999999999999999", "5"), "utf8");
    /* With a fraction or an exponent among them, the column is floats. */
    assert_string_equal(INFER("99999999999999999999", "1.5"), "float64");
    assert_string_equal(INFER("99999999999999999999", "1e3"), "float64");
    assert_string_equal(INFER("099999999999999999999"), "utf8");
}

static void test_type_names(void **state) {
    (void)state;
    struct cli_type t;
    char msg[256], buf[64];
    const char *ok[][2] = {
        {"int32", "int32"}, {"INT64", "int64"}, {"double", "float64"}, {"string", "utf8"},
        {"decimal(10,2)", "decimal128(10, 2)"}, {"decimal128( 38 , 0 )", "decimal128(38, 0)"},
        {"timestamp", "timestamp[us]"}, {"timestamp[ms]", "timestamp[ms]"},
        {"timestamp[ns, UTC]", "timestamp[ns, UTC]"}, {"date", "date32"},
        {"fixed_size_binary[4]", "fixed_size_binary[4]"}, {"uint8", "uint8"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (cli_type_parse(ok[i][0], strlen(ok[i][0]), &t, msg, sizeof msg))
            fail_msg("%s: %s", ok[i][0], msg);
        qv_type_to_string(&t.field, buf, sizeof buf);
        assert_string_equal(buf, ok[i][1]);
    }
    const char *bad[] = {"int33", "decimal(40,2)", "decimal(5,6)", "decimal(5)", "timestamp[h]",
                         "list<int32>", "", "fixed_size_binary[0]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cli_type_parse(bad[i], strlen(bad[i]), &t, msg, sizeof msg), -1);
}

/* Appends each text to a one-column builder of `type` and returns the
 * formatted results joined by '|', or the first parse error. */
static char *append_all(const char *type, const char *const *values, int n) {
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_pool_options po = {0};
    struct qv_reservation_options ro = {0};
    assert_int_equal(qv_pool_create(&po, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, &ro, &r, NULL), 0);
    struct cli_type t;
    char msg[256];
    assert_int_equal(cli_type_parse(type, strlen(type), &t, msg, sizeof msg), 0);
    struct qv_field col = t.field;
    col.name = "c";
    struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = &col};
    struct qv_schema *s;
    struct qv_builder *b;
    assert_int_equal(qv_schema_create(&root, r, &s, NULL), 0);
    assert_int_equal(qv_builder_create(s, r, NULL, &b, NULL), 0);
    struct cli_buf out;
    cli_buf_init(&out);
    int failed = 0;
    for (int i = 0; i < n && !failed; i++) {
        int quoted = values[i][0] == '"';
        const char *p = quoted ? values[i] + 1 : values[i];
        struct cli_csv_field f = {p, strlen(p), quoted};
        int rc = cli_append_text(qv_builder_column(b, 0), &col, &f, msg, sizeof msg);
        if (rc) {
            cli_buf_printf(&out, "ERROR: %s", rc < 0 ? msg : qv_builder_error(b)->message);
            failed = 1;
        }
    }
    if (!failed) {
        struct ArrowArray a;
        assert_int_equal(qv_builder_finish(b, &a, NULL), 0);
        assert_int_equal(qv_arrow_array_validate(&a, &s->root, QV_VALIDATE_FULL, NULL), 0);
        for (int64_t i = 0; i < a.length; i++) {
            if (i) cli_buf_putc(&out, '|');
            if (cli_format_value(&out, &col, a.children[0], i)) cli_buf_puts(&out, "<null>");
        }
        a.release(&a);
    }
    qv_builder_destroy(b);
    qv_schema_destroy(s);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
    char *res = strdup(cli_buf_str(&out));
    cli_buf_free(&out);
    return res;
}
#define APPEND(type, want, ...)                                                              \
    do {                                                                                     \
        const char *const v_[] = {__VA_ARGS__};                                              \
        char *got_ = append_all(type, v_, (int)(sizeof v_ / sizeof v_[0]));                  \
        if (strncmp(got_, want, strlen(want)) != 0)                                          \
            fail_msg("%s: got [%s] want [%s]", type, got_, want);                            \
        free(got_);                                                                          \
    } while (0)

static void test_values(void **state) {
    (void)state;
    APPEND("int64", "1|-9223372036854775808|9223372036854775807|<null>|42", "1",
           "-9223372036854775808", "9223372036854775807", "", " 42 ");
    APPEND("int64", "ERROR: '9223372036854775808' is out of range", "9223372036854775808");
    APPEND("int8", "ERROR: '128' is out of range", "127", "128");
    APPEND("int32", "ERROR: 'abc' is not a valid int32", "abc");
    APPEND("uint8", "0|255", "0", "255");
    APPEND("uint16", "ERROR: '-1' is out of range", "-1");
    APPEND("decimal(10,2)", "1.50|-0.05|12345678.90|0.00|100.00", "1.5", "-0.05", "12345678.9",
           "0", "100.000");
    APPEND("decimal(10,2)", "ERROR: '1.234' has more decimal places", "1.234");
    APPEND("decimal(4,2)", "ERROR: '100' does not fit the column's precision", "100");
    APPEND("decimal(38,10)", "-1234567890123456789012345678.0123456789",
           "-1234567890123456789012345678.0123456789");
    APPEND("decimal(5,-2)", "12300", "12300");
    APPEND("float64", "0.1|-2.5|NaN|inf|-inf|1e+300", "0.1", "-2.5", "nan", "inf", "-inf", "1e300");
    APPEND("float32", "0.1|3.40282e+38", "0.1", "3.40282e+38");
    APPEND("float64", "1e+199", "1000000000000000000000000000000000000000000000000000000000000000"
                                "0000000000000000000000000000000000000000000000000000000000000000"
                                "000000000000000000000000000000000000000000000000000000000000000000"
                                "000000");
    APPEND("bool", "true|false|<null>|true", "TRUE", "false", "", "True");
    APPEND("bool", "ERROR: 'yes' is not a bool", "yes");
    APPEND("date32", "1970-01-01|2000-02-29|1900-03-01|0000-01-01", "1970-01-01", "2000-02-29",
           "1900-03-01", "0000-01-01");
    APPEND("date32", "ERROR: date '2001-02-29': February 2001 has no day 29", "2001-02-29");
    /* Years beyond 9999 are signed (the text export writes), both ways. */
    APPEND("date32", "+10000-01-01|-0001-12-31", "+10000-01-01", " -0001-12-31 ");
    APPEND("date32", "ERROR: date '10000-01-01': expected YYYY-MM-DD", "10000-01-01");
    APPEND("timestamp", "2024-01-31T12:00:00|1969-12-31T23:59:59.500000|2000-01-01T00:00:00",
           "2024-01-31T12:00:00", "1969-12-31 23:59:59.5", "2000-01-01");
    APPEND("timestamp[s, UTC]", "2024-01-31T10:00:00Z|2024-01-31T12:30:00Z",
           "2024-01-31T12:00:00+02:00", "2024-01-31T12:00:00-00:30");
    APPEND("timestamp[ms]", "ERROR: timestamp '2024-01-31T12:00:00.1234': has more sub-second digits",
           "2024-01-31T12:00:00.1234");
    APPEND("timestamp[ms]", "2024-01-31T12:00:00.123", "2024-01-31T12:00:00.123000");
    APPEND("timestamp[ns]", "ERROR: timestamp '2300-01-01T00:00:00' is outside the range of timestamp[ns]",
           "2300-01-01T00:00:00");
    APPEND("timestamp", "ERROR: timestamp '2024-01-31T12:00:60': 12:00:60 is not a time of day",
           "2024-01-31T12:00:60");
    APPEND("utf8", "a|<null>||ünï 🎉|  x  ", "a", "", "\"", "ünï 🎉", "  x  ");
    APPEND("utf8", "ERROR: '\xff' is not valid UTF-8", "\xff");
    APPEND("binary", "00ff10||<null>", "00FF10", "\"", "");
    APPEND("binary", "ERROR: 'zz' is not hex", "zz");
    APPEND("fixed_size_binary[2]", "ERROR: 'abcdef' is not the column's width", "abcdef");
}

static void test_format(void **state) {
    (void)state;
    char buf[64];
    cli_fmt_double(0.1, buf, sizeof buf);
    assert_string_equal(buf, "0.1");
    cli_fmt_double(1.0 / 3.0, buf, sizeof buf);
    assert_true(strtod(buf, NULL) == 1.0 / 3.0);
    cli_fmt_double(-0.0, buf, sizeof buf);
    assert_string_equal(buf, "-0");
    cli_fmt_float(0.1f, buf, sizeof buf);
    assert_string_equal(buf, "0.1");
    assert_true(cli_half_to_float(0x3c00) == 1.0f);
    assert_true(cli_half_to_float(0xc000) == -2.0f);
    struct cli_buf b;
    cli_buf_init(&b);
    cli_fmt_decimal64(&b, 5, 2);
    cli_buf_putc(&b, ' ');
    cli_fmt_decimal64(&b, -12345, 2);
    cli_buf_putc(&b, ' ');
    cli_fmt_decimal64(&b, 7, -3);
    cli_buf_putc(&b, ' ');
    cli_fmt_decimal64(&b, INT64_MIN, 0);
    assert_string_equal(cli_buf_str(&b), "0.05 -123.45 7000 -9223372036854775808");
    cli_buf_free(&b);
    /* CSV quoting */
    cli_buf_init(&b);
    cli_csv_put_field(&b, "a,b", 3, ',', 0);
    cli_buf_putc(&b, ' ');
    cli_csv_put_field(&b, "q\"", 2, ',', 0);
    cli_buf_putc(&b, ' ');
    cli_csv_put_field(&b, "", 0, ',', 0);
    cli_buf_putc(&b, ' ');
    cli_csv_put_field(&b, "plain", 5, ',', 0);
    assert_string_equal(cli_buf_str(&b), "\"a,b\" \"q\"\"\" \"\" plain");
    cli_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_reader), cmocka_unit_test(test_inference),
        cmocka_unit_test(test_type_names), cmocka_unit_test(test_values),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
