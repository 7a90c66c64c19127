/* Dates and timestamps as text (core/src/arrow/temporal.c): the calendar,
 * the one grammar every front end reads, its errors, and the formatter whose
 * text reads back to the same value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "quiver/arrow.h"

static int32_t date_ok(const char *s) {
    int32_t d = 0;
    struct qv_error err = {0};
    int rc = qv_date32_parse(s, strlen(s), &d, &err);
    if (rc) fail_msg("date '%s': %d %s", s, rc, err.message);
    return d;
}

static void date_bad(const char *s, int code, const char *needle) {
    int32_t d = 12345;
    struct qv_error err = {0};
    int rc = qv_date32_parse(s, strlen(s), &d, &err);
    if (rc != code) fail_msg("date '%s': returned %d, expected %d", s, rc, code);
    assert_int_equal(d, 12345); /* untouched on failure */
    if (!strstr(err.message, needle)) fail_msg("date '%s': '%s' lacks '%s'", s, err.message, needle);
}

static int64_t ts_ok(const char *s, enum qv_time_unit unit) {
    int64_t v = 0;
    struct qv_error err = {0};
    int rc = qv_timestamp_parse(s, strlen(s), unit, &v, NULL, &err);
    if (rc) fail_msg("timestamp '%s': %d %s", s, rc, err.message);
    return v;
}

static void ts_bad(const char *s, enum qv_time_unit unit, int code, const char *needle) {
    int64_t v = 777;
    struct qv_error err = {0};
    int rc = qv_timestamp_parse(s, strlen(s), unit, &v, NULL, &err);
    if (rc != code) fail_msg("timestamp '%s': returned %d, expected %d", s, rc, code);
    assert_int_equal(v, 777);
    if (!strstr(err.message, needle))
        fail_msg("timestamp '%s': '%s' lacks '%s'", s, err.message, needle);
}

static void test_calendar(void **state) {
    (void)state;
    assert_int_equal(qv_date32_from_civil(1970, 1, 1), 0);
    assert_int_equal(qv_date32_from_civil(1969, 12, 31), -1);
    assert_int_equal(qv_date32_from_civil(1992, 1, 1), 8035);
    assert_int_equal(qv_date32_from_civil(2000, 3, 1), 11017);
    assert_int_equal(qv_date32_from_civil(0, 1, 1), -719528);
    /* Every day of a wide range (across era and year-0 boundaries) maps to
     * a date that maps back, and consecutive days are consecutive dates. */
    int64_t py = 0;
    unsigned pm = 0, pd = 0;
    for (int64_t z = -1000000; z <= 1000000; z++) {
        int64_t y;
        unsigned m, d;
        qv_date32_to_civil(z, &y, &m, &d);
        assert_int_equal(qv_date32_from_civil(y, m, d), z);
        if (z > -1000000) {
            int same_month = y == py && m == pm && d == pd + 1;
            int next_month = d == 1 && ((m == pm + 1 && y == py) || (m == 1 && pm == 12 && y == py + 1));
            assert_true(same_month || next_month);
        }
        py = y, pm = m, pd = d;
    }
    /* The extremes of int64 day counts (a corrupt file's statistics) give a
     * date, without overflow, and the formatter writes it. */
    const int64_t far[] = {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        int64_t y;
        unsigned m, d;
        qv_date32_to_civil(far[i], &y, &m, &d);
        assert_true(m >= 1 && m <= 12 && d >= 1 && d <= 31);
        assert_true(far[i] < 0 ? y < -25000000000000LL : y > 25000000000000LL);
        char buf[32];
        assert_true(qv_date32_format(far[i], buf, sizeof buf) < 32);
    }
}

static void test_date_parse(void **state) {
    (void)state;
    assert_int_equal(date_ok("1970-01-01"), 0);
    assert_int_equal(date_ok("1994-01-01"), 8766);
    assert_int_equal(date_ok("  1994-01-01\t"), 8766); /* blanks around */
    /* Leap years: every fourth, not centuries, but every fourth century. */
    assert_int_equal(date_ok("2000-02-29"), date_ok("2000-03-01") - 1);
    assert_int_equal(date_ok("2024-02-29"), date_ok("2024-03-01") - 1);
    assert_int_equal(date_ok("1600-02-29"), date_ok("1600-03-01") - 1);
    date_bad("1900-02-29", EINVAL, "February 1900 has no day 29");
    date_bad("2023-02-29", EINVAL, "February 2023 has no day 29");
    date_bad("2100-02-29", EINVAL, "no day 29");
    date_bad("2024-04-31", EINVAL, "April 2024 has no day 31");
    date_bad("2024-13-01", EINVAL, "month 13");
    date_bad("2024-00-10", EINVAL, "month 00");
    date_bad("2024-01-00", EINVAL, "no day 00");
    /* Year 0 exists (1 BC) and is a leap year; negative years count on. */
    assert_int_equal(date_ok("0000-01-01"), -719528);
    assert_int_equal(date_ok("0000-02-29"), -719528 + 59);
    assert_int_equal(date_ok("-0001-12-31"), -719529);
    assert_int_equal(date_ok("+0000-01-01"), -719528);
    assert_int_equal(date_ok("-0004-02-29"), date_ok("-0004-03-01") - 1);
    date_bad("-0001-02-29", EINVAL, "no day 29");
    /* Beyond 9999 a year is signed (ISO 8601's expanded form). */
    assert_int_equal(date_ok("9999-12-31") + 1, date_ok("+10000-01-01"));
    date_bad("10000-01-01", EINVAL, "carries a sign");
    assert_int_equal(date_ok("+5881580-07-11"), INT32_MAX);
    assert_int_equal(date_ok("-5877641-06-23"), INT32_MIN);
    date_bad("+5881580-07-12", EOVERFLOW, "outside the range of date32");
    date_bad("-5877641-06-22", EOVERFLOW, "outside the range of date32");
    date_bad("+99999999999-01-01", EOVERFLOW, "outside the range");
    date_bad("+999999999999-01-01", EOVERFLOW, "outside the range");
    date_bad("+9999999999999-01-01", EINVAL, "4 to 12 digits");
    /* Malformed: short fields, other separators, trailing text. */
    /* One-digit months and days read as the predicate language always
     * read them; three digits do not. */
    assert_int_equal(date_ok("1994-1-1"), 8766);
    assert_int_equal(date_ok("1994-01-1"), 8766);
    date_bad("1994-001-01", EINVAL, "expected YYYY-MM-DD");
    date_bad("1994-01-011", EINVAL, "unexpected text");
    date_bad("1994--01", EINVAL, "expected YYYY-MM-DD");
    date_bad("94-01-01", EINVAL, "expected YYYY-MM-DD");
    date_bad("1994/01/01", EINVAL, "expected YYYY-MM-DD");
    date_bad("1994-01-01T00:00", EINVAL, "unexpected text");
    date_bad("", EINVAL, "expected YYYY-MM-DD");
    date_bad("+-1994-01-01", EINVAL, "4 to 12 digits");
    /* The text is a length, not a C string: a NUL inside is an error. */
    int32_t d;
    assert_int_equal(qv_date32_parse("1994-01-01\0", 11, &d, NULL), EINVAL);
    assert_int_equal(qv_date32_parse("1994-01-01xyz", 10, &d, NULL), 0);
    assert_int_equal(d, 8766);
    /* A long text is quoted cut in the message. */
    char longtext[300];
    memset(longtext, '7', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = 0;
    date_bad(longtext, EINVAL, "...");
}

static void test_date_format(void **state) {
    (void)state;
    char buf[32];
    assert_int_equal(qv_date32_format(0, buf, sizeof buf), 10);
    assert_string_equal(buf, "1970-01-01");
    qv_date32_format(-719529, buf, sizeof buf);
    assert_string_equal(buf, "-0001-12-31");
    qv_date32_format(INT32_MAX, buf, sizeof buf);
    assert_string_equal(buf, "+5881580-07-11");
    qv_date32_format(INT32_MIN, buf, sizeof buf);
    assert_string_equal(buf, "-5877641-06-23");
    /* snprintf semantics: a short buffer gets what fits, the length is full. */
    assert_int_equal(qv_date32_format(0, buf, 5), 10);
    assert_string_equal(buf, "1970");
    assert_int_equal(qv_date32_format(0, NULL, 0), 10);
    /* Every text the formatter writes reads back to the same day. */
    for (int64_t z = -4000000; z <= 4000000; z += 997) {
        qv_date32_format(z, buf, sizeof buf);
        assert_int_equal(date_ok(buf), z);
    }
    const int32_t edges[] = {INT32_MIN, INT32_MIN + 1, -719529, -719528, -1, 0, 2932896, 2932897,
                             INT32_MAX};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        qv_date32_format(edges[i], buf, sizeof buf);
        assert_int_equal(date_ok(buf), edges[i]);
    }
}

static void test_timestamp_parse(void **state) {
    (void)state;
    assert_int_equal(ts_ok("1970-01-01T00:00:00", QV_TIME_S), 0);
    assert_int_equal(ts_ok("1970-01-01 00:00:01", QV_TIME_MS), 1000);
    assert_int_equal(ts_ok("1970-01-01t00:01", QV_TIME_S), 60);
    assert_int_equal(ts_ok("1970-01-02", QV_TIME_S), 86400); /* a bare date is midnight */
    assert_int_equal(ts_ok("1969-12-31T23:59:59", QV_TIME_S), -1);
    /* Fractions per unit: any digits the unit holds, zeros beyond it. */
    assert_int_equal(ts_ok("1970-01-01T00:00:00.5", QV_TIME_MS), 500);
    assert_int_equal(ts_ok("1970-01-01T00:00:00.123", QV_TIME_MS), 123);
    assert_int_equal(ts_ok("1970-01-01T00:00:00.123000000", QV_TIME_MS), 123);
    assert_int_equal(ts_ok("1970-01-01T00:00:00.000001", QV_TIME_US), 1);
    assert_int_equal(ts_ok("1970-01-01T00:00:00.000000001", QV_TIME_NS), 1);
    assert_int_equal(ts_ok("1970-01-01T00:00:00.0", QV_TIME_S), 0);
    ts_bad("1970-01-01T00:00:00.5", QV_TIME_S, EINVAL, "more sub-second digits than timestamp[s]");
    ts_bad("1970-01-01T00:00:00.1234", QV_TIME_MS, EINVAL, "timestamp[ms] holds (3)");
    ts_bad("1970-01-01T00:00:00.0000001", QV_TIME_US, EINVAL, "timestamp[us]");
    ts_bad("1970-01-01T00:00:00.1234567891", QV_TIME_NS, EINVAL, "more than 9 digits");
    ts_bad("1970-01-01T00:00:00.", QV_TIME_NS, EINVAL, "digits after the seconds' point");
    /* Before the epoch, the fraction counts forward from the second. */
    assert_int_equal(ts_ok("1969-12-31T23:59:59.999", QV_TIME_MS), -1);
    assert_int_equal(ts_ok("1969-12-31T23:59:59.5", QV_TIME_NS), -500000000);
    /* Zones: Z, UTC and offsets are applied (the value is UTC). */
    assert_int_equal(ts_ok("1970-01-01T00:00:00Z", QV_TIME_S), 0);
    assert_int_equal(ts_ok("1970-01-01T00:00:00z", QV_TIME_S), 0);
    assert_int_equal(ts_ok("1970-01-01 00:00:00 UTC", QV_TIME_S), 0);
    assert_int_equal(ts_ok("1970-01-01T01:00:00+01:00", QV_TIME_S), 0);
    assert_int_equal(ts_ok("1970-01-01T01:30:00+0130", QV_TIME_S), 0);
    assert_int_equal(ts_ok("1970-01-01T00:00:00-05", QV_TIME_S), 5 * 3600);
    assert_int_equal(ts_ok("1970-01-01T00:00:00 +00:00", QV_TIME_S), 0);
    assert_int_equal(ts_ok("1970-01-01T23:00:00-23:59", QV_TIME_S), 23 * 3600 + 23 * 3600 + 59 * 60);
    ts_bad("1970-01-01T00:00:00+24:00", QV_TIME_S, EINVAL, "below 24:00");
    ts_bad("1970-01-01T00:00:00+01:60", QV_TIME_S, EINVAL, "below 24:00");
    ts_bad("1970-01-01T00:00:00+1", QV_TIME_S, EINVAL, "+HH[:MM]");
    ts_bad("1970-01-01T00:00:00+01:", QV_TIME_S, EINVAL, "+HH[:MM]");
    ts_bad("1970-01-01T00:00:00 Europe/Paris", QV_TIME_S, EINVAL, "unexpected text");
    /* Times of day: two digits each, no 24:00, no leap second. */
    ts_bad("1970-01-01T24:00:00", QV_TIME_S, EINVAL, "not a time of day");
    ts_bad("1970-01-01T23:60", QV_TIME_S, EINVAL, "not a time of day");
    ts_bad("1970-01-01T23:59:60", QV_TIME_S, EINVAL, "not a time of day");
    assert_int_equal(ts_ok("1970-01-01 9:30", QV_TIME_S), 9 * 3600 + 30 * 60);
    ts_bad("1970-01-01T123:00", QV_TIME_S, EINVAL, "HH:MM");
    ts_bad("1970-01-01T10:0", QV_TIME_S, EINVAL, "HH:MM");
    ts_bad("1970-01-01T10:00:0", QV_TIME_S, EINVAL, "seconds");
    ts_bad("1970-02-30T00:00", QV_TIME_S, EINVAL, "February 1970 has no day 30");
    ts_bad("noon", QV_TIME_S, EINVAL, "timestamp 'noon'");
    /* Leap days and negative years in timestamps. */
    assert_int_equal(ts_ok("2000-02-29T00:00:00", QV_TIME_S), (int64_t)date_ok("2000-02-29") * 86400);
    assert_int_equal(ts_ok("-0001-12-31T23:59:59", QV_TIME_S), -719528LL * 86400 - 1);
    /* Ranges: int64 nanoseconds end in 2262; seconds reach far years. */
    assert_int_equal(ts_ok("2262-04-11T23:47:16.854775807", QV_TIME_NS), INT64_MAX);
    assert_int_equal(ts_ok("1677-09-21T00:12:43.145224192", QV_TIME_NS), INT64_MIN);
    ts_bad("2262-04-11T23:47:16.854775808", QV_TIME_NS, EOVERFLOW, "outside the range of timestamp[ns]");
    ts_bad("1677-09-21T00:12:43.145224191", QV_TIME_NS, EOVERFLOW, "timestamp[ns]");
    ts_bad("+10000-01-01T00:00:00", QV_TIME_NS, EOVERFLOW, "timestamp[ns]");
    assert_int_equal(ts_ok("+10000-01-01T00:00:00", QV_TIME_US),
                     (int64_t)date_ok("+10000-01-01") * 86400 * 1000000);
    assert_int_equal(ts_ok("+99999999999-12-31T23:59:59", QV_TIME_S) > 0, 1);
    ts_bad("+99999999999-12-31T23:59:59", QV_TIME_MS, EOVERFLOW, "timestamp[ms]");
    ts_bad("+999999999999-01-01T00:00:00", QV_TIME_S, EOVERFLOW, "int64 seconds");
    ts_bad("1970-01-01T00:00:00", (enum qv_time_unit)7, EINVAL, "unknown time unit");
}

static void test_timestamp_parts(void **state) {
    (void)state;
    struct qv_timestamp_parts p;
    const char *s = "1970-01-02 03:04:05.6+01:00";
    assert_int_equal(qv_timestamp_parse_parts(s, strlen(s), &p, NULL), 0);
    assert_int_equal(p.seconds, 86400 + 2 * 3600 + 4 * 60 + 5);
    assert_int_equal(p.nanos, 600000000);
    assert_int_equal(p.fraction_digits, 1);
    assert_true(p.has_time);
    assert_true(p.has_zone);
    s = "1969-12-31";
    assert_int_equal(qv_timestamp_parse_parts(s, strlen(s), &p, NULL), 0);
    assert_int_equal(p.seconds, -86400);
    assert_false(p.has_time);
    assert_false(p.has_zone);
    /* The parts of a value no unit holds (the predicate language keeps
     * 128-bit nanoseconds). */
    s = "+20000-01-01T00:00:00.000000001Z";
    assert_int_equal(qv_timestamp_parse_parts(s, strlen(s), &p, NULL), 0);
    assert_int_equal(p.seconds, (int64_t)date_ok("+20000-01-01") * 86400);
    assert_int_equal(p.nanos, 1);
    /* The unit parse fills the parts too. */
    int64_t v;
    assert_int_equal(qv_timestamp_parse("2024-01-31T10:00:00.123456789", 29, QV_TIME_NS, &v, &p, NULL), 0);
    assert_int_equal(p.fraction_digits, 9);
    assert_false(p.has_zone);
}

static void test_timestamp_format(void **state) {
    (void)state;
    char buf[64];
    qv_timestamp_format(-1, QV_TIME_MS, false, buf, sizeof buf);
    assert_string_equal(buf, "1969-12-31T23:59:59.999");
    qv_timestamp_format(0, QV_TIME_NS, true, buf, sizeof buf);
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    qv_timestamp_format(1500000, QV_TIME_US, false, buf, sizeof buf);
    assert_string_equal(buf, "1970-01-01T00:00:01.500000");
    assert_int_equal(qv_timestamp_format(INT64_MIN, QV_TIME_S, true, NULL, 0) < 48, 1);
    /* The formatter's text reads back to the same value in every unit. */
    const int64_t values[] = {INT64_MIN, INT64_MIN + 1, -86400000000001LL, -1, 0, 1,
                              1700000000123456789LL, INT64_MAX - 1, INT64_MAX};
    for (int u = QV_TIME_S; u <= QV_TIME_NS; u++)
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
            for (int utc = 0; utc < 2; utc++) {
                qv_timestamp_format(values[i], (enum qv_time_unit)u, utc, buf, sizeof buf);
                assert_int_equal(ts_ok(buf, (enum qv_time_unit)u), values[i]);
            }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar),        cmocka_unit_test(test_date_parse),
        cmocka_unit_test(test_date_format),     cmocka_unit_test(test_timestamp_parse),
        cmocka_unit_test(test_timestamp_parts), cmocka_unit_test(test_timestamp_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
