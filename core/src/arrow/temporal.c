/* Dates and timestamps as text: the one parser and formatter of Arrow
 * temporal values (arrow.h, "Dates and timestamps as text"), used by the
 * predicate language and by every front end, so that a value written by one
 * reads back in all the others. */
#include <stdio.h>

#include "quiver/arrow.h"

/* Years are read with at most this many digits: enough for every value of
 * every date and timestamp type (int64 seconds reach year 292,277,026,596),
 * while the day count stays far inside int64. */
#define MAX_YEAR_DIGITS 12

/* Sums near the ends of int64 are exact in 128 bits and then checked: the
 * most negative values are a negative multiple plus a positive remainder,
 * whose product alone would not fit. */
__extension__ typedef __int128 i128;

static bool fits_int64(i128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

static const int64_t unit_per_s[] = {1, 1000, 1000000, 1000000000};
static const int unit_digits[] = {0, 3, 6, 9};
static const char *const unit_names[] = {"s", "ms", "us", "ns"};
static const char *const month_names[] = {"January", "February", "March",     "April",
                                          "May",     "June",     "July",      "August",
                                          "September", "October", "November", "December"};

/* Floor division, so days before the epoch land in the right era. */
static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Howard Hinnant's days_from_civil / civil_from_days: exact for the whole
 * proleptic Gregorian calendar, in 400-year eras. */
int64_t qv_date32_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t)d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void qv_date32_to_civil(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    /* The algorithm counts from 0000-03-01, 719468 days (4 eras and 135080
     * days) before the epoch; shifting the era and the day within it
     * separately keeps every int64 day count free of overflow (a corrupt
     * file's statistics can hold any bytes). */
    int64_t era = z / 146097, doe = z % 146097;
    if (doe < 0) {
        doe += 146097;
        era--;
    }
    era += 4;
    doe += 135080;
    if (doe >= 146097) {
        era++;
        doe -= 146097;
    }
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in_month(int64_t y, int64_t m) {
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* A cursor over the text, with what the messages quote. */
struct text {
    const char *s;
    size_t n, i;
    const char *what; /* "date" or "timestamp" */
};

static int malformed(const struct text *t, const char *why, struct qv_error *err) {
    int shown = t->n > 64 ? 64 : (int)t->n;
    return qv_error_set(err, EINVAL, "%s '%.*s'%s: %s", t->what, shown, t->s,
                        t->n > 64 ? "..." : "", why);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Exactly `count` digits at the cursor. */
static bool fixed_digits(struct text *t, int count, int64_t *out) {
    int64_t v = 0;
    if (t->i + (size_t)count > t->n) return false;
    for (int k = 0; k < count; k++) {
        char c = t->s[t->i + (size_t)k];
        if (!is_digit(c)) return false;
        v = v * 10 + (c - '0');
    }
    t->i += (size_t)count;
    *out = v;
    return true;
}

/* One or two digits at the cursor: months, days and hours are read as
 * the predicate language always read them ('1994-1-1', '9:30'). */
static bool short_number(struct text *t, int64_t *out) {
    if (t->i >= t->n || !is_digit(t->s[t->i])) return false;
    int64_t v = t->s[t->i++] - '0';
    if (t->i < t->n && is_digit(t->s[t->i])) v = v * 10 + (t->s[t->i++] - '0');
    *out = v;
    return true;
}

static bool accept(struct text *t, char c) {
    if (t->i < t->n && t->s[t->i] == c) {
        t->i++;
        return true;
    }
    return false;
}

static void skip_blanks(struct text *t) {
    while (t->i < t->n && (t->s[t->i] == ' ' || t->s[t->i] == '\t')) t->i++;
}

/* [sign]YYYY-MM-DD at the cursor into days (not range-checked). */
static int read_date(struct text *t, int64_t *days, struct qv_error *err) {
    bool neg = false, sign = false;
    if (t->i < t->n && (t->s[t->i] == '+' || t->s[t->i] == '-')) {
        sign = true;
        neg = t->s[t->i++] == '-';
    }
    size_t start = t->i;
    int64_t y = 0;
    while (t->i < t->n && is_digit(t->s[t->i]) && t->i - start < MAX_YEAR_DIGITS)
        y = y * 10 + (t->s[t->i++] - '0');
    size_t nd = t->i - start;
    if (nd < 4 || (!sign && nd != 4) || (t->i < t->n && is_digit(t->s[t->i])))
        return malformed(t,
                         sign ? "a signed year has 4 to 12 digits (expected [+-]YYYY-MM-DD)"
                              : "expected YYYY-MM-DD (a year beyond 9999 or before 0 carries "
                                "a sign: +10000, -0001)",
                         err);
    int64_t m, d;
    if (!accept(t, '-') || !short_number(t, &m) || !accept(t, '-') || !short_number(t, &d))
        return malformed(t, "expected YYYY-MM-DD", err);
    if (neg) y = -y;
    if (m < 1 || m > 12) {
        char why[64];
        snprintf(why, sizeof why, "month %02d is not 01..12", (int)m);
        return malformed(t, why, err);
    }
    if (d < 1 || d > days_in_month(y, m)) {
        char why[96];
        snprintf(why, sizeof why, "%s %lld has no day %02d", month_names[m - 1], (long long)y,
                 (int)d);
        return malformed(t, why, err);
    }
    *days = qv_date32_from_civil(y, (unsigned)m, (unsigned)d);
    return 0;
}

int qv_date32_parse(const char *s, size_t n, int32_t *out, struct qv_error *err) {
    struct text t = {s, n, 0, "date"};
    int64_t days;
    skip_blanks(&t);
    int rc = read_date(&t, &days, err);
    if (rc) return rc;
    skip_blanks(&t);
    if (t.i != t.n) return malformed(&t, "unexpected text after YYYY-MM-DD", err);
    if (days < INT32_MIN || days > INT32_MAX) {
        int shown = n > 64 ? 64 : (int)n;
        return qv_error_set(err, EOVERFLOW,
                            "date '%.*s' is outside the range of date32 "
                            "(-5877641-06-23 .. +5881580-07-11)",
                            shown, s);
    }
    *out = (int32_t)days;
    return 0;
}

size_t qv_date32_format(int64_t days, char *buf, size_t cap) {
    int64_t y;
    unsigned m, d;
    qv_date32_to_civil(days, &y, &m, &d);
    int k = y >= 0 && y <= 9999 ? snprintf(buf, cap, "%04lld-%02u-%02u", (long long)y, m, d)
                                : snprintf(buf, cap, "%+05lld-%02u-%02u", (long long)y, m, d);
    return k < 0 ? 0 : (size_t)k;
}

int qv_timestamp_parse_parts(const char *s, size_t n, struct qv_timestamp_parts *out,
                             struct qv_error *err) {
    struct text t = {s, n, 0, "timestamp"};
    struct qv_timestamp_parts p = {0};
    int64_t days, hh = 0, mm = 0, ss = 0, frac = 0, offset_s = 0;
    skip_blanks(&t);
    int rc = read_date(&t, &days, err);
    if (rc) return rc;
    if (t.i + 1 < t.n && (t.s[t.i] == 'T' || t.s[t.i] == 't' || t.s[t.i] == ' ') &&
        is_digit(t.s[t.i + 1])) {
        t.i++;
        p.has_time = true;
        if (!short_number(&t, &hh) || !accept(&t, ':') || !fixed_digits(&t, 2, &mm))
            return malformed(&t, "expected the time as HH:MM[:SS[.fffffffff]]", err);
        if (accept(&t, ':')) {
            if (!fixed_digits(&t, 2, &ss))
                return malformed(&t, "expected the seconds as two digits", err);
            if (accept(&t, '.')) {
                while (t.i < t.n && is_digit(t.s[t.i])) {
                    if (p.fraction_digits == 9)
                        return malformed(&t, "more than 9 digits after the seconds' point", err);
                    frac = frac * 10 + (t.s[t.i++] - '0');
                    p.fraction_digits++;
                }
                if (p.fraction_digits == 0)
                    return malformed(&t, "expected digits after the seconds' point", err);
            }
        }
        if (hh > 23 || mm > 59 || ss > 59) {
            char why[80];
            snprintf(why, sizeof why, "%02d:%02d:%02d is not a time of day (00:00:00..23:59:59)",
                     (int)hh, (int)mm, (int)ss);
            return malformed(&t, why, err);
        }
    }
    skip_blanks(&t);
    if (t.i < t.n && (t.s[t.i] == 'Z' || t.s[t.i] == 'z')) {
        t.i++;
        p.has_zone = true;
    } else if (t.i + 3 <= t.n && (t.s[t.i] | 32) == 'u' && (t.s[t.i + 1] | 32) == 't' &&
               (t.s[t.i + 2] | 32) == 'c') {
        t.i += 3;
        p.has_zone = true;
    } else if (t.i < t.n && (t.s[t.i] == '+' || t.s[t.i] == '-')) {
        int sign = t.s[t.i++] == '-' ? -1 : 1;
        int64_t oh, om = 0;
        if (!fixed_digits(&t, 2, &oh))
            return malformed(&t, "expected the offset as +HH[:MM]", err);
        bool colon = accept(&t, ':');
        if ((colon || (t.i < t.n && is_digit(t.s[t.i]))) && !fixed_digits(&t, 2, &om))
            return malformed(&t, "expected the offset as +HH[:MM]", err);
        if (oh > 23 || om > 59) return malformed(&t, "the offset is not below 24:00", err);
        offset_s = sign * (oh * 3600 + om * 60);
        p.has_zone = true;
    }
    skip_blanks(&t);
    if (t.i != t.n)
        return malformed(&t,
                         "unexpected text (expected YYYY-MM-DD[THH:MM[:SS[.fffffffff]]] and "
                         "an optional Z or +HH:MM)",
                         err);
    /* A 12-digit year can pass int64 seconds: checked, not wrapped. */
    i128 secs = (i128)days * 86400 + hh * 3600 + mm * 60 + ss - offset_s;
    if (!fits_int64(secs)) {
        int shown = n > 64 ? 64 : (int)n;
        return qv_error_set(err, EOVERFLOW, "timestamp '%.*s'%s is outside the range of int64 seconds",
                            shown, s, n > 64 ? "..." : "");
    }
    p.seconds = (int64_t)secs;
    for (int k = p.fraction_digits; k < 9; k++) frac *= 10;
    p.nanos = (int32_t)frac;
    *out = p;
    return 0;
}

int qv_timestamp_parse(const char *s, size_t n, enum qv_time_unit unit, int64_t *out,
                       struct qv_timestamp_parts *parts, struct qv_error *err) {
    if ((unsigned)unit > QV_TIME_NS)
        return qv_error_set(err, EINVAL, "timestamp: unknown time unit %d", (int)unit);
    struct qv_timestamp_parts p;
    int rc = qv_timestamp_parse_parts(s, n, &p, err);
    if (rc) return rc;
    int shown = n > 64 ? 64 : (int)n;
    const char *more = n > 64 ? "..." : "";
    int64_t per = unit_per_s[unit], sub_unit = 1000000000 / per;
    if (p.nanos % sub_unit)
        return qv_error_set(err, EINVAL,
                            "timestamp '%.*s'%s: has more sub-second digits than timestamp[%s] "
                            "holds (%d)",
                            shown, s, more, unit_names[unit], unit_digits[unit]);
    i128 v = (i128)p.seconds * per + p.nanos / sub_unit;
    if (!fits_int64(v))
        return qv_error_set(err, EOVERFLOW,
                            "timestamp '%.*s'%s is outside the range of timestamp[%s]", shown, s,
                            more, unit_names[unit]);
    *out = (int64_t)v;
    if (parts) *parts = p;
    return 0;
}

size_t qv_timestamp_format(int64_t value, enum qv_time_unit unit, bool utc, char *buf,
                           size_t cap) {
    unsigned u = (unsigned)unit & 3;
    int64_t per = unit_per_s[u];
    /* Quotient and remainder, then the remainder made positive: the
     * floored product (secs * per) would not fit int64 near its minimum. */
    int64_t secs = value / per, frac = value % per;
    if (frac < 0) {
        frac += per;
        secs--;
    }
    int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        days--;
    }
    char date[32], tail[24] = "";
    qv_date32_format(days, date, sizeof date);
    if (frac) snprintf(tail, sizeof tail, ".%0*lld", unit_digits[u], (long long)frac);
    int k = snprintf(buf, cap, "%sT%02d:%02d:%02d%s%s", date, (int)(sod / 3600),
                     (int)(sod / 60 % 60), (int)(sod % 60), tail, utc ? "Z" : "");
    return k < 0 ? 0 : (size_t)k;
}
