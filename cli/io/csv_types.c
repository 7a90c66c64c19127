/* Type names and text-to-value parsing for CSV import. */
#include "io/csv_types.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


__extension__ typedef __int128 i128;

static int word_is(const char *p, size_t n, const char *w) {
    return strlen(w) == n && strncasecmp(p, w, n) == 0;
}

static void trim(const char **p, size_t *n) {
    while (*n && (**p == ' ' || **p == '\t')) (*p)++, (*n)--;
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t')) (*n)--;
}

/* "(a, b)" or "[a, b]" after a type name: up to two comma-separated args. */
static int type_args(const char *p, size_t n, char open, char close, char args[2][CLI_TYPE_ARG_MAX], int *nargs) {
    *nargs = 0;
    trim(&p, &n);
    if (n == 0) return 0;
    if (p[0] != open || p[n - 1] != close) return -1;
    p++;
    n -= 2;
    while (n > 0 || *nargs == 0) {
        const char *c = memchr(p, ',', n);
        size_t len = c ? (size_t)(c - p) : n;
        const char *a = p;
        size_t an = len;
        trim(&a, &an);
        if (*nargs == 2 || an == 0 || an >= CLI_TYPE_ARG_MAX) return -1;
        memcpy(args[*nargs], a, an);
        args[*nargs][an] = 0;
        (*nargs)++;
        if (!c) break;
        p = c + 1;
        n -= len + 1;
    }
    return 0;
}

static int small_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int cli_type_parse(const char *text, size_t n, struct cli_type *out, char *msg, size_t cap) {
    static const struct {
        const char *name;
        enum qv_type type;
    } simple[] = {
        {"bool", QV_TYPE_BOOL},        {"boolean", QV_TYPE_BOOL},
        {"int8", QV_TYPE_INT8},        {"int16", QV_TYPE_INT16},
        {"int32", QV_TYPE_INT32},      {"int64", QV_TYPE_INT64},
        {"uint8", QV_TYPE_UINT8},      {"uint16", QV_TYPE_UINT16},
        {"uint32", QV_TYPE_UINT32},    {"uint64", QV_TYPE_UINT64},
        {"float32", QV_TYPE_FLOAT32},  {"float", QV_TYPE_FLOAT32},
        {"float64", QV_TYPE_FLOAT64},  {"double", QV_TYPE_FLOAT64},
        {"date", QV_TYPE_DATE32},      {"date32", QV_TYPE_DATE32},
        {"utf8", QV_TYPE_UTF8},        {"string", QV_TYPE_UTF8},
        {"large_utf8", QV_TYPE_LARGE_UTF8}, {"large_string", QV_TYPE_LARGE_UTF8},
        {"binary", QV_TYPE_BINARY},    {"large_binary", QV_TYPE_LARGE_BINARY},
    };
    memset(out, 0, sizeof *out);
    out->field.nullable = true;
    trim(&text, &n);
    size_t name_len = 0;
    while (name_len < n && (isalnum((unsigned char)text[name_len]) || text[name_len] == '_'))
        name_len++;
    const char *rest = text + name_len;
    size_t rest_n = n - name_len;
    char args[2][CLI_TYPE_ARG_MAX];
    int nargs = 0;
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (word_is(text, name_len, simple[i].name) && rest_n == 0) {
            out->field.type = simple[i].type;
            return 0;
        }
    }
    if (word_is(text, name_len, "decimal") || word_is(text, name_len, "decimal128")) {
        if (type_args(rest, rest_n, '(', ')', args, &nargs) || nargs != 2 ||
            small_int(args[0], 1, 38, &out->field.precision) ||
            small_int(args[1], -38, 38, &out->field.scale) || out->field.scale > out->field.precision) {
            snprintf(msg, cap, "'%.*s': write decimal(P,S) with precision P in 1..38 and scale "
                     "S <= P", (int)n, text);
            return -1;
        }
        out->field.type = QV_TYPE_DECIMAL128;
        return 0;
    }
    if (word_is(text, name_len, "timestamp")) {
        static const char *const units[] = {"s", "ms", "us", "ns"};
        out->field.type = QV_TYPE_TIMESTAMP;
        out->field.unit = QV_TIME_US;
        if (type_args(rest, rest_n, '[', ']', args, &nargs)) goto bad_ts;
        if (nargs >= 1) {
            int u = -1;
            for (int i = 0; i < 4; i++)
                if (strcmp(args[0], units[i]) == 0) u = i;
            if (u < 0) goto bad_ts;
            out->field.unit = (enum qv_time_unit)u;
        }
        if (nargs == 2) {
            snprintf(out->timezone, sizeof out->timezone, "%s", args[1]);
            out->field.timezone = out->timezone;
        }
        return 0;
    bad_ts:
        snprintf(msg, cap, "'%.*s': write timestamp, timestamp[UNIT] or timestamp[UNIT, TZ] with "
                 "UNIT one of s, ms, us, ns and TZ at most %d bytes", (int)n, text,
                 CLI_TYPE_ARG_MAX - 1);
        return -1;
    }
    if (word_is(text, name_len, "fixed_size_binary")) {
        if (type_args(rest, rest_n, '[', ']', args, &nargs) || nargs != 1 ||
            small_int(args[0], 1, 4096, &out->field.byte_width)) {
            snprintf(msg, cap, "'%.*s': write fixed_size_binary[N] with N in 1..4096", (int)n, text);
            return -1;
        }
        out->field.type = QV_TYPE_FIXED_BINARY;
        return 0;
    }
    snprintf(msg, cap,
             "unknown type '%.*s' (types: bool, int8..int64, uint8..uint64, float32, float64, "
             "decimal(P,S), date32, timestamp[UNIT, TZ], utf8, large_utf8, binary, large_binary, "
             "fixed_size_binary[N])",
             (int)n, text);
    return -1;
}

/* ---- value parsing ---- */

/* Optional sign then digits, no blanks: the magnitude in *mag. */
static int parse_uint_text(const char *p, size_t n, int *neg, uint64_t *mag, int canonical) {
    *neg = 0;
    size_t i = 0;
    if (i < n && (p[i] == '-' || p[i] == '+')) {
        if (canonical && p[i] == '+') return -1;
        *neg = p[i] == '-';
        i++;
    }
    if (i == n) return -1;
    /* Inference treats "007" as text: leading zeros are usually identifiers. */
    if (canonical && p[i] == '0' && n - i > 1) return -1;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        if (v > (UINT64_MAX - (uint64_t)(p[i] - '0')) / 10) return -2;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    *mag = v;
    return 0;
}

static int parse_int64(const char *p, size_t n, int64_t *out, int canonical) {
    int neg;
    uint64_t mag;
    int rc = parse_uint_text(p, n, &neg, &mag, canonical);
    if (rc) return rc;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX) return -2;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

static int is_float_text(const char *p, size_t n) {
    size_t i = 0, digits = 0;
    if (word_is(p, n, "nan") || word_is(p, n, "inf") || word_is(p, n, "-inf") ||
        word_is(p, n, "+inf") || word_is(p, n, "infinity") || word_is(p, n, "-infinity"))
        return 1;
    if (i < n && (p[i] == '-' || p[i] == '+')) i++;
    size_t int_start = i;
    while (i < n && p[i] >= '0' && p[i] <= '9') i++, digits++;
    if (digits > 1 && p[int_start] == '0') return 0; /* leading zeros: identifiers */
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && p[i] >= '0' && p[i] <= '9') i++, digits++;
    }
    if (!digits) return 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '-' || p[i] == '+')) i++;
        size_t e = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9') i++, e++;
        if (!e) return 0;
    }
    return i == n;
}

static int parse_double(const char *p, size_t n, double *out) {
    char small[128];
    if (n == 0 || !is_float_text(p, n)) return -1;
    /* strtod needs a terminator; fields are NUL-terminated but trimmed
     * views may not be, so parse a copy (on the heap for long digit runs,
     * which inference accepts as floats too). */
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) return -1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    *out = strtod(tmp, NULL);
    if (tmp != small) free(tmp);
    return 0;
}

static int parse_bool(const char *p, size_t n, int *out) {
    if (word_is(p, n, "true")) *out = 1;
    else if (word_is(p, n, "false")) *out = 0;
    else return -1;
    return 0;
}

/* "[-]digits[.digits]" with at most `scale` fraction digits (beyond that
 * only zeros), within `precision` digits. */
static int parse_decimal(const char *p, size_t n, int32_t precision, int32_t scale, i128 *out,
                         const char **why) {
    size_t i = 0;
    int neg = 0;
    if (i < n && (p[i] == '-' || p[i] == '+')) neg = p[i++] == '-';
    i128 v = 0;
    int digits = 0, frac = 0, seen_point = 0, any = 0;
    i128 limit = 1;
    for (int k = 0; k < precision; k++) limit *= 10;
    for (; i < n; i++) {
        char c = p[i];
        if (c == '.' && !seen_point) {
            seen_point = 1;
            continue;
        }
        if (c < '0' || c > '9') {
            *why = "is not a decimal number";
            return -1;
        }
        any = 1;
        if (seen_point) {
            if (frac >= scale) {
                if (c != '0') {
                    *why = "has more decimal places than the column's scale";
                    return -1;
                }
                continue;
            }
            frac++;
        }
        if (v || c != '0') digits++;
        if (digits > 38) {
            *why = "has too many digits";
            return -1;
        }
        v = v * 10 + (c - '0');
    }
    if (!any) {
        *why = "is not a decimal number";
        return -1;
    }
    for (; frac < scale; frac++) {
        if (v > (limit - 1) / 10) {
            *why = "does not fit the column's precision";
            return -1;
        }
        v *= 10;
    }
    /* A negative scale: the value must be a multiple of 10^-scale. */
    for (int32_t s = scale; s < 0; s++) {
        if (v % 10) {
            *why = "is not a multiple of the column's negative scale";
            return -1;
        }
        v /= 10;
    }
    if (v >= limit) {
        *why = "does not fit the column's precision";
        return -1;
    }
    *out = neg ? -v : v;
    return 0;
}

static int hex_val(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Hex text to bytes in place of a scratch buffer (malloc'd by the caller). */
static int parse_hex(const char *p, size_t n, unsigned char *out) {
    if (n % 2) return -1;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_val(p[i]), lo = hex_val(p[i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

int cli_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned min, cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000, cp = c & 0x07;
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

/* Types whose empty value is distinct from null ("" in CSV). */
static int has_empty_value(enum qv_type t) {
    return t == QV_TYPE_UTF8 || t == QV_TYPE_LARGE_UTF8 || t == QV_TYPE_BINARY ||
           t == QV_TYPE_LARGE_BINARY;
}

static int bad(char *msg, size_t cap, const struct qv_field *f, const char *p, size_t n,
               const char *why) {
    char type[96];
    qv_type_to_string(f, type, sizeof type);
    snprintf(msg, cap, "'%.*s' %s%s%s", (int)(n > 60 ? 60 : n), p, n > 60 ? "..." : "",
             why ? why : "is not a valid ", why ? "" : type);
    return -1;
}

int cli_append_text(struct qv_appender *a, const struct qv_field *f,
                    const struct cli_csv_field *v, char *msg, size_t cap) {
    const char *p = v->p;
    size_t n = v->n;
    if (n == 0 && (!v->quoted || !has_empty_value(f->type))) return qv_append_null(a);
    if (!has_empty_value(f->type) && f->type != QV_TYPE_FIXED_BINARY) {
        trim(&p, &n);
        if (n == 0) return qv_append_null(a);
    }
    int rc = 0;
    switch (f->type) {
    case QV_TYPE_BOOL: {
        int b;
        if (parse_bool(p, n, &b)) return bad(msg, cap, f, p, n, "is not a bool (true or false)");
        rc = qv_append_bool(a, b);
        break;
    }
    case QV_TYPE_INT8: case QV_TYPE_INT16: case QV_TYPE_INT32: case QV_TYPE_INT64: {
        static const int64_t lo[] = {INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN};
        static const int64_t hi[] = {INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX};
        int k = f->type - QV_TYPE_INT8;
        int64_t x;
        int prc = parse_int64(p, n, &x, 0);
        if (prc == -1) return bad(msg, cap, f, p, n, NULL);
        if (prc == -2 || x < lo[k] || x > hi[k]) return bad(msg, cap, f, p, n, "is out of range");
        if (f->type == QV_TYPE_INT8) rc = qv_append_int8(a, (int8_t)x);
        else if (f->type == QV_TYPE_INT16) rc = qv_append_int16(a, (int16_t)x);
        else if (f->type == QV_TYPE_INT32) rc = qv_append_int32(a, (int32_t)x);
        else rc = qv_append_int64(a, x);
        break;
    }
    case QV_TYPE_UINT8: case QV_TYPE_UINT16: case QV_TYPE_UINT32: case QV_TYPE_UINT64: {
        static const uint64_t hi[] = {UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX};
        int neg;
        uint64_t x;
        int prc = parse_uint_text(p, n, &neg, &x, 0);
        if (prc == -1) return bad(msg, cap, f, p, n, NULL);
        if (prc == -2 || (neg && x) || x > hi[f->type - QV_TYPE_UINT8])
            return bad(msg, cap, f, p, n, "is out of range");
        if (f->type == QV_TYPE_UINT8) rc = qv_append_uint8(a, (uint8_t)x);
        else if (f->type == QV_TYPE_UINT16) rc = qv_append_uint16(a, (uint16_t)x);
        else if (f->type == QV_TYPE_UINT32) rc = qv_append_uint32(a, (uint32_t)x);
        else rc = qv_append_uint64(a, x);
        break;
    }
    case QV_TYPE_FLOAT32: case QV_TYPE_FLOAT64: {
        double d;
        if (parse_double(p, n, &d)) return bad(msg, cap, f, p, n, NULL);
        rc = f->type == QV_TYPE_FLOAT32 ? qv_append_float32(a, (float)d) : qv_append_float64(a, d);
        break;
    }
    case QV_TYPE_DECIMAL128: {
        i128 x;
        const char *why = NULL;
        if (parse_decimal(p, n, f->precision, f->scale, &x, &why)) {
            char what[128];
            char type[64];
            qv_type_to_string(f, type, sizeof type);
            snprintf(what, sizeof what, "%s (%s)", why, type);
            return bad(msg, cap, f, p, n, what);
        }
        uint64_t lo = (uint64_t)x;
        int64_t hi = (int64_t)(x >> 64);
        rc = qv_append_decimal128(a, lo, hi);
        break;
    }
    case QV_TYPE_DATE32: case QV_TYPE_TIMESTAMP: {
        /* The library's grammar (arrow.h), whose message quotes the value
         * and says what is wrong with it. A bare date is a timestamp at
         * midnight. */
        struct qv_error err;
        int32_t d = 0;
        int64_t t = 0;
        qv_error_clear(&err);
        if (f->type == QV_TYPE_DATE32 ? qv_date32_parse(p, n, &d, &err)
                                      : qv_timestamp_parse(p, n, f->unit, &t, NULL, &err)) {
            snprintf(msg, cap, "%s", err.message);
            return -1;
        }
        rc = f->type == QV_TYPE_DATE32 ? qv_append_date32(a, d) : qv_append_timestamp(a, t);
        break;
    }
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8:
        if (!cli_utf8_valid(p, n))
            return bad(msg, cap, f, p, n, "is not valid UTF-8 (use type binary for raw bytes)");
        rc = qv_append_string(a, p, n);
        break;
    case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY: case QV_TYPE_FIXED_BINARY: {
        if (f->type == QV_TYPE_FIXED_BINARY && n != (size_t)f->byte_width * 2)
            return bad(msg, cap, f, p, n, "is not the column's width in hex digits");
        unsigned char *bytes = malloc(n / 2 + 1);
        if (!bytes) {
            snprintf(msg, cap, "out of memory");
            return ENOMEM;
        }
        if (parse_hex(p, n, bytes)) {
            free(bytes);
            return bad(msg, cap, f, p, n, "is not hex bytes (binary columns are hex in CSV)");
        }
        rc = f->type == QV_TYPE_FIXED_BINARY ? qv_append_fixed_binary(a, bytes, n / 2)
                                             : qv_append_binary(a, bytes, n / 2);
        free(bytes);
        break;
    }
    default:
        snprintf(msg, cap, "type %s cannot be read from CSV", qv_type_name(f->type));
        return -1;
    }
    return rc;
}

/* ---- inference ---- */

enum {
    CLI_INFER_BOOL = 1u,
    CLI_INFER_INT = 2u,     /* fits int64 */
    CLI_INFER_FLOAT = 4u,
    CLI_INFER_DATE = 8u,
    CLI_INFER_TS = 16u,
    CLI_INFER_UINT = 32u,   /* fits uint64 (no minus sign) */
    CLI_INFER_DEC38 = 64u,  /* an integer of at most 38 digits: decimal(38, 0) */
    CLI_INFER_DIGITS = 128u /* an integer of any length */
};

void cli_infer_init(struct cli_infer *s) {
    memset(s, 0, sizeof *s);
    s->possible = CLI_INFER_BOOL | CLI_INFER_INT | CLI_INFER_FLOAT | CLI_INFER_DATE | CLI_INFER_TS |
                  CLI_INFER_UINT | CLI_INFER_DEC38 | CLI_INFER_DIGITS;
}

/* Canonical integer text (as inference reads it: optional '-', no leading
 * zeros): its digit count, or -1. */
static int64_t integer_digits(const char *p, size_t n) {
    size_t i = p[0] == '-';
    if (i == n || (p[i] == '0' && n - i > 1)) return -1;
    for (size_t k = i; k < n; k++)
        if (p[k] < '0' || p[k] > '9') return -1;
    return (int64_t)(n - i);
}

void cli_infer_add(struct cli_infer *s, const struct cli_csv_field *v) {
    const char *p = v->p;
    size_t n = v->n;
    if (n == 0) {
        /* A quoted empty field is an empty string: only text holds that. */
        if (v->quoted) s->possible = 0, s->values++;
        return;
    }
    trim(&p, &n);
    if (n == 0) {
        s->possible = 0;
        s->values++;
        return;
    }
    s->values++;
    unsigned still = 0;
    int b;
    int64_t i;
    int32_t d;
    if ((s->possible & CLI_INFER_BOOL) && parse_bool(p, n, &b) == 0) still |= CLI_INFER_BOOL;
    if ((s->possible & CLI_INFER_INT) && parse_int64(p, n, &i, 1) == 0) still |= CLI_INFER_INT;
    if (s->possible & (CLI_INFER_UINT | CLI_INFER_DEC38 | CLI_INFER_DIGITS)) {
        /* Integers beyond int64 stay exact: uint64, decimal(38, 0), else
         * text; never a float that would round them. */
        int64_t nd = integer_digits(p, n);
        int neg;
        uint64_t mag;
        if (nd >= 0) still |= CLI_INFER_DIGITS;
        if (nd >= 0 && nd <= 38) still |= CLI_INFER_DEC38;
        if (nd >= 0 && parse_uint_text(p, n, &neg, &mag, 1) == 0 && !neg) still |= CLI_INFER_UINT;
    }
    if ((s->possible & CLI_INFER_FLOAT) && is_float_text(p, n)) still |= CLI_INFER_FLOAT;
    if ((s->possible & CLI_INFER_DATE) && qv_date32_parse(p, n, &d, NULL) == 0)
        still |= CLI_INFER_DATE;
    if (s->possible & CLI_INFER_TS) {
        /* A timestamp has a time of day (a bare date is a date) and fits
         * the unit inference would choose: ns, or us for values beyond
         * 2262 written with at most 6 fraction digits. */
        int64_t t;
        struct qv_timestamp_parts info;
        if ((qv_timestamp_parse(p, n, QV_TIME_NS, &t, &info, NULL) == 0 ||
             qv_timestamp_parse(p, n, QV_TIME_US, &t, &info, NULL) == 0) &&
            info.has_time) {
            still |= CLI_INFER_TS;
            if (info.fraction_digits > s->frac_digits) s->frac_digits = info.fraction_digits;
            if (info.has_zone) s->zoned++;
            else s->unzoned++;
        }
    }
    s->possible &= still;
}

void cli_infer_result(const struct cli_infer *s, struct cli_type *out) {
    memset(out, 0, sizeof *out);
    out->field.nullable = true;
    unsigned p = s->values ? s->possible : 0;
    if (s->zoned && s->unzoned) p &= ~(unsigned)CLI_INFER_TS;
    if (p & CLI_INFER_BOOL) out->field.type = QV_TYPE_BOOL;
    else if (p & CLI_INFER_INT) out->field.type = QV_TYPE_INT64;
    else if (p & CLI_INFER_UINT) out->field.type = QV_TYPE_UINT64;
    else if (p & CLI_INFER_DEC38) {
        out->field.type = QV_TYPE_DECIMAL128;
        out->field.precision = 38;
        out->field.scale = 0;
    } else if (p & CLI_INFER_DIGITS) out->field.type = QV_TYPE_UTF8;
    else if (p & CLI_INFER_FLOAT) out->field.type = QV_TYPE_FLOAT64;
    else if (p & CLI_INFER_DATE) out->field.type = QV_TYPE_DATE32;
    else if (p & CLI_INFER_TS) {
        out->field.type = QV_TYPE_TIMESTAMP;
        out->field.unit = s->frac_digits > 6 ? QV_TIME_NS : QV_TIME_US;
        if (s->zoned) {
            snprintf(out->timezone, sizeof out->timezone, "UTC");
            out->field.timezone = out->timezone;
        }
    } else {
        out->field.type = QV_TYPE_UTF8;
    }
}
