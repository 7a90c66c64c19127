/* Dates and timestamps: calendar conversion and ISO 8601 text. */
#include "civil.h"

#include <stdio.h>

/* Floor division, so days before the epoch land in the right era. */
static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t cli_days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (int64_t)(m + (m > 2 ? -3 : 9)) + 2) / 5 + (int64_t)d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void cli_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

int cli_fmt_date(int64_t days, char *buf, size_t cap) {
    int64_t y;
    unsigned m, d;
    cli_civil_from_days(days, &y, &m, &d);
    if (y >= 0 && y <= 9999) return snprintf(buf, cap, "%04lld-%02u-%02u", (long long)y, m, d);
    return snprintf(buf, cap, "%+05lld-%02u-%02u", (long long)y, m, d);
}

static const int64_t unit_per_s[] = {1, 1000, 1000000, 1000000000};
static const int unit_digits[] = {0, 3, 6, 9};

int cli_fmt_timestamp(int64_t value, enum qv_time_unit unit, int utc, char *buf, size_t cap) {
    unsigned u = (unsigned)unit & 3;
    int64_t per = unit_per_s[u];
    int64_t secs = floor_div(value, per);
    int64_t frac = value - secs * per;
    int64_t days = floor_div(secs, 86400);
    int64_t sod = secs - days * 86400;
    char date[32];
    cli_fmt_date(days, date, sizeof date);
    int n = snprintf(buf, cap, "%sT%02d:%02d:%02d", date, (int)(sod / 3600), (int)(sod / 60 % 60),
                     (int)(sod % 60));
    if (frac && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, ".%0*lld", unit_digits[u], (long long)frac);
    if (utc && n >= 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, "Z");
    return n;
}

static int digits(const char *s, size_t n, size_t at, size_t count, int64_t *out) {
    if (at + count > n) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < count; i++) {
        char c = s[at + i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return 0;
}

static int days_in_month(int64_t y, int64_t m) {
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dm[m - 1];
}

/* YYYY-MM-DD at the start of s; returns days or -1 via ok. */
static int parse_ymd(const char *s, size_t n, int64_t *days) {
    int64_t y, m, d;
    if (n < 10 || s[4] != '-' || s[7] != '-') return -1;
    if (digits(s, n, 0, 4, &y) || digits(s, n, 5, 2, &m) || digits(s, n, 8, 2, &d)) return -1;
    if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) return -1;
    *days = cli_days_from_civil(y, (unsigned)m, (unsigned)d);
    return 0;
}

int cli_parse_date(const char *s, size_t n, int32_t *out) {
    int64_t days;
    if (n != 10 || parse_ymd(s, n, &days)) return -1;
    *out = (int32_t)days;
    return 0;
}

int cli_parse_timestamp(const char *s, size_t n, enum qv_time_unit unit, int64_t *out,
                        struct cli_ts_parse *info) {
    int64_t days, hh, mm, ss = 0, frac = 0;
    int fd = 0, zone = 0;
    int64_t offset_s = 0;
    if (parse_ymd(s, n, &days) || n < 16 || (s[10] != 'T' && s[10] != ' ')) return -1;
    if (digits(s, n, 11, 2, &hh) || s[13] != ':' || digits(s, n, 14, 2, &mm)) return -1;
    size_t p = 16;
    if (p < n && s[p] == ':') {
        if (digits(s, n, p + 1, 2, &ss)) return -1;
        p += 3;
        if (p < n && s[p] == '.') {
            p++;
            while (p < n && s[p] >= '0' && s[p] <= '9') {
                if (fd == 9) return -1;
                frac = frac * 10 + (s[p] - '0');
                fd++;
                p++;
            }
            if (fd == 0) return -1;
        }
    }
    if (hh > 23 || mm > 59 || ss > 60) return -1; /* 60: a leap second as written */
    if (p < n && (s[p] == 'Z' || s[p] == 'z')) {
        zone = 1;
        p++;
    } else if (p < n && (s[p] == '+' || s[p] == '-')) {
        int64_t oh, om = 0;
        int sign = s[p] == '-' ? -1 : 1;
        if (digits(s, n, p + 1, 2, &oh)) return -1;
        p += 3;
        if (p < n && s[p] == ':') p++;
        if (p < n) {
            if (digits(s, n, p, 2, &om)) return -1;
            p += 2;
        }
        if (oh > 23 || om > 59) return -1;
        zone = 1;
        offset_s = sign * (oh * 3600 + om * 60);
    }
    if (p != n) return -1;
    unsigned u = (unsigned)unit & 3;
    if (fd > unit_digits[u]) {
        /* Trailing zeros carry no precision; anything else would be lost. */
        int64_t scale = 1;
        for (int i = unit_digits[u]; i < fd; i++) scale *= 10;
        if (frac % scale) return -2;
        frac /= scale;
        fd = unit_digits[u];
    }
    for (int i = fd; i < unit_digits[u]; i++) frac *= 10;
    int64_t secs = days * 86400 + hh * 3600 + mm * 60 + ss - offset_s, v;
    if (__builtin_mul_overflow(secs, unit_per_s[u], &v) || __builtin_add_overflow(v, frac, &v))
        return -3;
    *out = v;
    if (info) {
        info->frac_digits = fd;
        info->has_zone = zone;
    }
    return 0;
}
