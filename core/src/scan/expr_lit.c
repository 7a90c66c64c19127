/* Literals of the predicate language as exact values: numbers as decimal
 * digits with a power of ten (so 0.05 is 5 * 10^-2, not a double), dates as
 * days, timestamps as nanoseconds; their conversion to column domains and
 * their text form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/expr_internal.h"

/* Exponents beyond this only ever mean "larger (or smaller) than anything a
 * column holds", so clamping keeps every comparison the same. */
#define EXP_CLAMP 100000000

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static bool word_eq(const char *s, size_t n, const char *w) {
    size_t m = strlen(w);
    if (n != m) return false;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s[i]) != w[i]) return false;
    return true;
}

void qv__lit_clear(struct qv_reservation *r, struct qv__lit *lit) {
    if (lit->digits) qv_free(r, lit->digits, (size_t)lit->ndigits + 1);
    if (lit->bytes) qv_free(r, lit->bytes, lit->len + 1);
    lit->digits = NULL;
    lit->bytes = NULL;
}

/* Stores digits d[0..n) (no leading zeros) with exponent exp, stripping
 * trailing zeros so every value has one form. */
static int set_digits(const char *d, size_t n, bool neg, int64_t exp, struct qv_reservation *r,
                      struct qv__lit *lit, struct qv_error *err) {
    while (n > 0 && d[n - 1] == '0') {
        n--;
        exp++;
    }
    memset(lit, 0, sizeof *lit);
    lit->kind = QV__LIT_NUM;
    if (n == 0) {
        lit->digits = NULL;
        return 0;
    }
    if (exp > EXP_CLAMP) exp = EXP_CLAMP;
    if (exp < -EXP_CLAMP) exp = -EXP_CLAMP;
    lit->digits = qv_alloc(r, n + 1, err);
    if (!lit->digits) return ENOMEM;
    memcpy(lit->digits, d, n);
    lit->digits[n] = 0;
    lit->ndigits = (int32_t)n;
    lit->exp = (int32_t)exp;
    lit->neg = neg;
    return 0;
}

int qv__lit_parse_number(const char *s, size_t n, struct qv_reservation *r, struct qv__lit *lit,
                         struct qv_error *err) {
    size_t i = 0;
    bool neg = false;
    memset(lit, 0, sizeof *lit);
    if (n > (1u << 28)) return qv_error_set(err, EINVAL, "filter: number literal too long");
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    if (word_eq(s + i, n - i, "nan")) {
        lit->kind = QV__LIT_DBL;
        lit->d = NAN;
        return 0;
    }
    if (word_eq(s + i, n - i, "inf") || word_eq(s + i, n - i, "infinity")) {
        lit->kind = QV__LIT_DBL;
        lit->d = neg ? -INFINITY : INFINITY;
        return 0;
    }
    /* Mantissa: the significant digits are a contiguous run of the text
     * once the decimal point is skipped, so they are gathered into a copy. */
    size_t start = i, int_digits = 0, frac_digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, int_digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++, frac_digits++;
    }
    if (int_digits + frac_digits == 0)
        return qv_error_set(err, EINVAL, "filter: malformed number '%.*s'", (int)(n > 64 ? 64 : n), s);
    int64_t e = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
        if (i >= n || s[i] < '0' || s[i] > '9')
            return qv_error_set(err, EINVAL, "filter: malformed exponent in '%.*s'",
                                (int)(n > 64 ? 64 : n), s);
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (e < EXP_CLAMP) e = e * 10 + (s[i] - '0');
            i++;
        }
        if (eneg) e = -e;
    }
    if (i != n)
        return qv_error_set(err, EINVAL, "filter: malformed number '%.*s'", (int)(n > 64 ? 64 : n), s);
    size_t total = int_digits + frac_digits;
    char stack[128];
    char *buf = stack;
    if (total > sizeof stack) {
        buf = qv_alloc(r, total, err);
        if (!buf) return ENOMEM;
    }
    size_t k = 0;
    for (size_t j = start; j < start + int_digits + (frac_digits ? frac_digits + 1 : 0); j++)
        if (s[j] != '.') buf[k++] = s[j];
    size_t lead = 0;
    while (lead < k && buf[lead] == '0') lead++;
    int rc = set_digits(buf + lead, k - lead, neg, e - (int64_t)frac_digits, r, lit, err);
    if (buf != stack) qv_free(r, buf, total);
    return rc;
}

int qv__lit_from_u128(qv__xu128 mag, bool neg, int32_t exp, struct qv_reservation *r,
                      struct qv__lit *lit, struct qv_error *err) {
    char tmp[48];
    size_t k = sizeof tmp;
    while (mag) {
        tmp[--k] = (char)('0' + (int)(mag % 10));
        mag /= 10;
    }
    return set_digits(tmp + k, sizeof tmp - k, neg, exp, r, lit, err);
}

void qv__lit_num_floor(const struct qv__lit *lit, int32_t scale, qv__xi128 *floor_out,
                       bool *exact) {
    if (lit->ndigits == 0) {
        *floor_out = 0;
        *exact = true;
        return;
    }
    int64_t t = (int64_t)lit->exp + scale;
    int64_t intlen = lit->ndigits + t; /* digits before the decimal point */
    qv__xu128 mag = 0;
    bool sat = intlen > 38; /* 10^38 exceeds every column domain */
    /* Trailing zeros were stripped, so a negative t always drops a nonzero
     * digit: the value is not an integer. */
    *exact = t >= 0;
    if (!sat) {
        int64_t take = intlen < lit->ndigits ? intlen : lit->ndigits;
        for (int64_t j = 0; j < take; j++) mag = mag * 10 + (qv__xu128)(lit->digits[j] - '0');
        for (int64_t j = 0; j < t; j++) mag *= 10;
    }
    if (sat) {
        *floor_out = lit->neg ? QV__X_I128_MIN : QV__X_I128_MAX;
        *exact = false;
        return;
    }
    qv__xi128 v = (qv__xi128)mag;
    *floor_out = lit->neg ? (*exact ? -v : -v - 1) : v;
}

double qv__lit_num_double(const struct qv__lit *lit) {
    if (lit->kind == QV__LIT_DBL) return lit->d;
    if (lit->ndigits == 0) return 0.0;
    /* Beyond 800 significant digits only whether more nonzero digits
     * follow can change the rounding, so a sticky 1 stands for them. */
    char buf[840];
    size_t k = 0, nd = (size_t)lit->ndigits;
    int64_t exp = lit->exp;
    if (lit->neg) buf[k++] = '-';
    if (nd > 800) {
        memcpy(buf + k, lit->digits, 800);
        k += 800;
        buf[k++] = '1';
        exp += (int64_t)nd - 801;
    } else {
        memcpy(buf + k, lit->digits, nd);
        k += nd;
    }
    snprintf(buf + k, sizeof buf - k, "e%lld", (long long)exp);
    return strtod(buf, NULL);
}

/* ---- Dates and timestamps ---- */

/* The text grammar is the library's one (arrow.h): a TIMESTAMP literal is
 * kept as exact nanoseconds in 128 bits, so that any timestamp the grammar
 * reads compares correctly with columns of every unit. */
int qv__lit_parse_timestamp(const char *s, size_t n, qv__xi128 *ns, struct qv_error *err) {
    struct qv_timestamp_parts p;
    int rc = qv_timestamp_parse_parts(s, n, &p, err);
    if (rc) return rc;
    *ns = (qv__xi128)p.seconds * 1000000000 + p.nanos;
    return 0;
}

/* ---- Text output ---- */

void qv__sb_putc(struct qv__sbuf *b, char c) {
    if (b->len + 1 < b->cap) {
        b->buf[b->len] = c;
        b->buf[b->len + 1] = 0;
    }
    b->len++;
}

void qv__sb_puts(struct qv__sbuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) qv__sb_putc(b, s[i]);
}

void qv__sb_printf(struct qv__sbuf *b, const char *fmt, ...) {
    char tmp[160];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) qv__sb_puts(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

static const char *const reserved[] = {"and", "or", "not", "is", "null", "in", "between",
                                       "true", "false", "nan", "inf", "infinity"};

bool qv__is_reserved(const char *s, size_t n) {
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (word_eq(s, n, reserved[i])) return true;
    return false;
}

static bool ident_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool ident_char(unsigned char c) {
    return ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}

void qv__name_print(struct qv__sbuf *b, const char *name, size_t n) {
    bool plain = n > 0 && ident_start((unsigned char)name[0]) && !qv__is_reserved(name, n);
    for (size_t i = 0; plain && i < n; i++) plain = ident_char((unsigned char)name[i]);
    if (plain) {
        qv__sb_puts(b, name, n);
        return;
    }
    qv__sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '"') qv__sb_putc(b, '"');
        qv__sb_putc(b, name[i]);
    }
    qv__sb_putc(b, '"');
}

/* Valid UTF-8 without control characters prints quoted; anything else
 * prints as X'hex' so the text stays readable and parses back. */
static bool printable(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f) return false;
            i++;
            continue;
        }
        size_t k;
        if (c >= 0xC2 && c <= 0xDF) k = 1;
        else if (c >= 0xE0 && c <= 0xEF) k = 2;
        else if (c >= 0xF0 && c <= 0xF4) k = 3;
        else return false;
        if (k > n - i - 1) return false;
        for (size_t j = 1; j <= k; j++)
            if ((p[i + j] & 0xC0) != 0x80) return false;
        i += k + 1;
    }
    return true;
}

void qv__dbl_shortest(double d, char *digits, struct qv__lit *out) {
    char tmp[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d) break;
    }
    /* tmp is [-]d.ddde[+-]X: value = (all digits) * 10^(X - (count - 1)). */
    int32_t nd = 0;
    const char *s = tmp;
    bool neg = *s == '-';
    if (neg) s++;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[nd++] = *s;
    int32_t e10 = *s == 'e' ? (int32_t)strtol(s + 1, NULL, 10) : 0;
    int32_t exp = e10 - (nd - 1);
    while (nd > 0 && digits[nd - 1] == '0') {
        nd--;
        exp++;
    }
    memset(out, 0, sizeof *out);
    out->kind = QV__LIT_NUM;
    if (nd == 0 || (nd == 1 && digits[0] == '0')) return; /* zero (either sign) */
    digits[nd] = 0;
    out->digits = digits;
    out->ndigits = nd;
    out->exp = exp;
    out->neg = neg;
}

static void print_number(struct qv__sbuf *b, const struct qv__lit *lit) {
    if (lit->ndigits == 0) {
        qv__sb_putc(b, '0');
        return;
    }
    if (lit->neg) qv__sb_putc(b, '-');
    int64_t nd = lit->ndigits, exp = lit->exp;
    if (exp >= 0 && nd + exp <= 40) {
        qv__sb_puts(b, lit->digits, (size_t)nd);
        for (int64_t i = 0; i < exp; i++) qv__sb_putc(b, '0');
    } else if (exp < 0 && -exp <= nd + 20) {
        int64_t intlen = nd + exp;
        if (intlen > 0) {
            qv__sb_puts(b, lit->digits, (size_t)intlen);
            qv__sb_putc(b, '.');
            qv__sb_puts(b, lit->digits + intlen, (size_t)(nd - intlen));
        } else {
            qv__sb_puts(b, "0.", 2);
            for (int64_t i = 0; i < -intlen; i++) qv__sb_putc(b, '0');
            qv__sb_puts(b, lit->digits, (size_t)nd);
        }
    } else {
        qv__sb_putc(b, lit->digits[0]);
        if (nd > 1) {
            qv__sb_putc(b, '.');
            qv__sb_puts(b, lit->digits + 1, (size_t)(nd - 1));
        }
        qv__sb_printf(b, "E%+lld", (long long)(exp + nd - 1));
    }
}

void qv__lit_print(struct qv__sbuf *b, const struct qv__lit *lit) {
    switch (lit->kind) {
    case QV__LIT_NULL: qv__sb_puts(b, "NULL", 4); return;
    case QV__LIT_BOOL: lit->b ? qv__sb_puts(b, "TRUE", 4) : qv__sb_puts(b, "FALSE", 5); return;
    case QV__LIT_NUM: print_number(b, lit); return;
    case QV__LIT_DBL: {
        double d = lit->d;
        if (isnan(d)) {
            qv__sb_puts(b, "NaN", 3);
        } else if (isinf(d)) {
            d < 0 ? qv__sb_puts(b, "-Infinity", 9) : qv__sb_puts(b, "Infinity", 8);
        } else {
            /* The shortest decimal that reads back as the same double,
             * printed like any exact number. */
            char digits[24];
            struct qv__lit num;
            qv__dbl_shortest(d, digits, &num);
            print_number(b, &num);
        }
        return;
    }
    case QV__LIT_STR:
        if (printable(lit->bytes, lit->len)) {
            qv__sb_putc(b, '\'');
            for (size_t i = 0; i < lit->len; i++) {
                if (lit->bytes[i] == '\'') qv__sb_putc(b, '\'');
                qv__sb_putc(b, (char)lit->bytes[i]);
            }
            qv__sb_putc(b, '\'');
        } else {
            qv__sb_puts(b, "X'", 2);
            for (size_t i = 0; i < lit->len; i++) qv__sb_printf(b, "%02X", lit->bytes[i]);
            qv__sb_putc(b, '\'');
        }
        return;
    case QV__LIT_DATE: {
        char text[32];
        qv_date32_format(lit->days, text, sizeof text);
        qv__sb_printf(b, "DATE '%s'", text);
        return;
    }
    case QV__LIT_TS: {
        qv__xi128 ns = lit->ns, q = 1000000000;
        qv__xi128 secs = ns / q, frac = ns % q;
        if (frac < 0) {
            frac += q;
            secs -= 1;
        }
        qv__xi128 days = secs / 86400, sod = secs % 86400;
        if (sod < 0) {
            sod += 86400;
            days -= 1;
        }
        char date[32];
        qv_date32_format((int64_t)days, date, sizeof date);
        qv__sb_printf(b, "TIMESTAMP '%s %02d:%02d:%02d", date, (int)(sod / 3600),
                      (int)(sod / 60 % 60), (int)(sod % 60));
        int64_t f = (int64_t)frac;
        if (f % 1000000 == 0 && f) qv__sb_printf(b, ".%03lld", (long long)(f / 1000000));
        else if (f % 1000 == 0 && f) qv__sb_printf(b, ".%06lld", (long long)(f / 1000));
        else if (f) qv__sb_printf(b, ".%09lld", (long long)f);
        qv__sb_putc(b, '\'');
        return;
    }
    default: qv__sb_puts(b, "?", 1); return;
    }
}
