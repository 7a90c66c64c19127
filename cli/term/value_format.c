/* Rendering Arrow values as text. */
#include "term/value_format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"

__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

int cli_fmt_double(double v, char *buf, size_t cap) {
    if (isnan(v)) return snprintf(buf, cap, "NaN");
    if (isinf(v)) return snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    int n = 0;
    /* 15 significant digits read back exactly for most values that started
     * as decimal text; the rest need 16 or 17. */
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return n;
}

int cli_fmt_float(float v, char *buf, size_t cap) {
    if (isnan(v)) return snprintf(buf, cap, "NaN");
    if (isinf(v)) return snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    int n = 0;
    for (int prec = 6; prec <= 9; prec++) {
        n = snprintf(buf, cap, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    return n;
}

float cli_half_to_float(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0) v = ldexpf((float)mant, -24);
    else if (exp == 31) v = mant ? NAN : INFINITY;
    else v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

static void fmt_unscaled(struct cli_buf *b, int neg, u128 mag, int32_t scale) {
    char digits[48];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(mag % 10));
        mag /= 10;
    } while (mag);
    if (neg) cli_buf_putc(b, '-');
    if (scale <= 0) {
        for (int i = n - 1; i >= 0; i--) cli_buf_putc(b, digits[i]);
        for (int32_t i = 0; i < -scale; i++) cli_buf_putc(b, '0');
        return;
    }
    /* At least one digit before the point: 0.05, not .05. */
    while (n <= scale) digits[n++] = '0';
    for (int i = n - 1; i >= 0; i--) {
        cli_buf_putc(b, digits[i]);
        if (i == scale) cli_buf_putc(b, '.');
    }
}

void cli_fmt_decimal(struct cli_buf *b, const uint8_t *le16, int32_t scale) {
    i128 v;
    memcpy(&v, le16, 16);
    int neg = v < 0;
    u128 mag = neg ? (u128)0 - (u128)v : (u128)v;
    fmt_unscaled(b, neg, mag, scale);
}

void cli_fmt_decimal64(struct cli_buf *b, int64_t unscaled, int32_t scale) {
    int neg = unscaled < 0;
    u128 mag = neg ? (u128)0 - (u128)(i128)unscaled : (u128)unscaled;
    fmt_unscaled(b, neg, mag, scale);
}

void cli_fmt_hex(struct cli_buf *b, const uint8_t *p, size_t n) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        cli_buf_putc(b, hex[p[i] >> 4]);
        cli_buf_putc(b, hex[p[i] & 15]);
    }
}

int cli_value_is_null(const struct ArrowArray *a, int64_t i) {
    if (a->null_count == 0 || a->n_buffers == 0 || !a->buffers[0]) return 0;
    return !qv_bit_get(a->buffers[0], a->offset + i);
}

static void format_nested(struct cli_buf *b, const struct qv_field *f, const struct ArrowArray *a,
                          int64_t i);

/* A value inside a nested one: null as null, text-like values quoted. */
static void format_inner(struct cli_buf *b, const struct qv_field *f, const struct ArrowArray *a,
                         int64_t i) {
    if (f->type == QV_TYPE_NULL || cli_value_is_null(a, i)) {
        cli_buf_puts(b, "null");
        return;
    }
    switch (f->type) {
    case QV_TYPE_STRUCT: case QV_TYPE_LIST: case QV_TYPE_LARGE_LIST: case QV_TYPE_FIXED_LIST:
    case QV_TYPE_MAP:
        format_nested(b, f, a, i);
        return;
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY:
    case QV_TYPE_FIXED_BINARY: case QV_TYPE_DATE32: case QV_TYPE_TIMESTAMP: {
        if (f->type == QV_TYPE_UTF8 || f->type == QV_TYPE_LARGE_UTF8) {
            int64_t k = a->offset + i, s, e;
            if (f->type == QV_TYPE_UTF8) {
                s = ((const int32_t *)a->buffers[1])[k];
                e = ((const int32_t *)a->buffers[1])[k + 1];
            } else {
                s = ((const int64_t *)a->buffers[1])[k];
                e = ((const int64_t *)a->buffers[1])[k + 1];
            }
            cli_json_escape(b, (const char *)a->buffers[2] + s, (size_t)(e - s));
            return;
        }
        cli_buf_putc(b, '"');
        cli_format_value(b, f, a, i);
        cli_buf_putc(b, '"');
        return;
    }
    case QV_TYPE_FLOAT16: case QV_TYPE_FLOAT32: case QV_TYPE_FLOAT64: {
        size_t at = b->len;
        cli_format_value(b, f, a, i);
        const char *t = cli_buf_str(b) + at;
        if (!b->failed && (strcmp(t, "NaN") == 0 || strcmp(t, "inf") == 0 || strcmp(t, "-inf") == 0)) {
            char tmp[8];
            snprintf(tmp, sizeof tmp, "\"%s\"", t);
            b->len = at;
            cli_buf_puts(b, tmp);
        }
        return;
    }
    default:
        cli_format_value(b, f, a, i);
        return;
    }
}

static void format_nested(struct cli_buf *b, const struct qv_field *f, const struct ArrowArray *a,
                          int64_t i) {
    int64_t k = a->offset + i;
    switch (f->type) {
    case QV_TYPE_STRUCT:
        cli_buf_putc(b, '{');
        for (int64_t c = 0; c < f->n_children && c < a->n_children; c++) {
            if (c) cli_buf_puts(b, ", ");
            const char *name = f->children[c].name ? f->children[c].name : "";
            cli_json_escape(b, name, strlen(name));
            cli_buf_puts(b, ": ");
            format_inner(b, &f->children[c], a->children[c], k);
        }
        cli_buf_putc(b, '}');
        return;
    case QV_TYPE_LIST: case QV_TYPE_LARGE_LIST: case QV_TYPE_FIXED_LIST: {
        int64_t s, e;
        if (f->type == QV_TYPE_LIST) {
            s = ((const int32_t *)a->buffers[1])[k];
            e = ((const int32_t *)a->buffers[1])[k + 1];
        } else if (f->type == QV_TYPE_LARGE_LIST) {
            s = ((const int64_t *)a->buffers[1])[k];
            e = ((const int64_t *)a->buffers[1])[k + 1];
        } else {
            s = k * f->list_size;
            e = s + f->list_size;
        }
        cli_buf_putc(b, '[');
        for (int64_t j = s; j < e; j++) {
            if (j > s) cli_buf_puts(b, ", ");
            format_inner(b, &f->children[0], a->children[0], j);
        }
        cli_buf_putc(b, ']');
        return;
    }
    case QV_TYPE_MAP: {
        int64_t s = ((const int32_t *)a->buffers[1])[k];
        int64_t e = ((const int32_t *)a->buffers[1])[k + 1];
        const struct qv_field *entries = &f->children[0];
        const struct ArrowArray *ea = a->children[0];
        cli_buf_putc(b, '{');
        for (int64_t j = s; j < e; j++) {
            if (j > s) cli_buf_puts(b, ", ");
            int64_t ej = ea->offset + j;
            const struct qv_field *kf = &entries->children[0];
            /* JSON keys are strings: other key types are quoted text. */
            if (kf->type == QV_TYPE_UTF8 || kf->type == QV_TYPE_LARGE_UTF8) {
                format_inner(b, kf, ea->children[0], ej);
            } else {
                struct cli_buf kb;
                cli_buf_init(&kb);
                if (cli_format_value(&kb, kf, ea->children[0], ej)) cli_buf_puts(&kb, "null");
                cli_json_escape(b, cli_buf_str(&kb), kb.len);
                cli_buf_free(&kb);
            }
            cli_buf_puts(b, ": ");
            format_inner(b, &entries->children[1], ea->children[1], ej);
        }
        cli_buf_putc(b, '}');
        return;
    }
    default:
        return;
    }
}

int cli_format_value(struct cli_buf *b, const struct qv_field *f, const struct ArrowArray *a,
                     int64_t i) {
    if (f->type == QV_TYPE_NULL || cli_value_is_null(a, i)) return 1;
    int64_t k = a->offset + i;
    const void *v = a->n_buffers > 1 ? a->buffers[1] : NULL;
    char tmp[64];
    switch (f->type) {
    case QV_TYPE_BOOL: cli_buf_puts(b, qv_bit_get(v, k) ? "true" : "false"); break;
    case QV_TYPE_INT8: cli_buf_printf(b, "%d", ((const int8_t *)v)[k]); break;
    case QV_TYPE_INT16: cli_buf_printf(b, "%d", ((const int16_t *)v)[k]); break;
    case QV_TYPE_INT32: cli_buf_printf(b, "%d", ((const int32_t *)v)[k]); break;
    case QV_TYPE_INT64: cli_buf_printf(b, "%lld", (long long)((const int64_t *)v)[k]); break;
    case QV_TYPE_UINT8: cli_buf_printf(b, "%u", ((const uint8_t *)v)[k]); break;
    case QV_TYPE_UINT16: cli_buf_printf(b, "%u", ((const uint16_t *)v)[k]); break;
    case QV_TYPE_UINT32: cli_buf_printf(b, "%u", ((const uint32_t *)v)[k]); break;
    case QV_TYPE_UINT64:
        cli_buf_printf(b, "%llu", (unsigned long long)((const uint64_t *)v)[k]);
        break;
    case QV_TYPE_FLOAT16:
        cli_fmt_float(cli_half_to_float(((const uint16_t *)v)[k]), tmp, sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case QV_TYPE_FLOAT32:
        cli_fmt_float(((const float *)v)[k], tmp, sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case QV_TYPE_FLOAT64:
        cli_fmt_double(((const double *)v)[k], tmp, sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case QV_TYPE_DECIMAL128:
        cli_fmt_decimal(b, (const uint8_t *)v + k * 16, f->scale);
        break;
    case QV_TYPE_DATE32:
        qv_date32_format(((const int32_t *)v)[k], tmp, sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case QV_TYPE_TIMESTAMP:
        qv_timestamp_format(((const int64_t *)v)[k], f->unit, f->timezone && *f->timezone, tmp,
                            sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case QV_TYPE_UTF8: case QV_TYPE_BINARY: {
        int32_t s = ((const int32_t *)v)[k], e = ((const int32_t *)v)[k + 1];
        const uint8_t *d = (const uint8_t *)a->buffers[2] + s;
        if (f->type == QV_TYPE_UTF8) cli_buf_put(b, d, (size_t)(e - s));
        else cli_fmt_hex(b, d, (size_t)(e - s));
        break;
    }
    case QV_TYPE_LARGE_UTF8: case QV_TYPE_LARGE_BINARY: {
        int64_t s = ((const int64_t *)v)[k], e = ((const int64_t *)v)[k + 1];
        const uint8_t *d = (const uint8_t *)a->buffers[2] + s;
        if (f->type == QV_TYPE_LARGE_UTF8) cli_buf_put(b, d, (size_t)(e - s));
        else cli_fmt_hex(b, d, (size_t)(e - s));
        break;
    }
    case QV_TYPE_FIXED_BINARY:
        cli_fmt_hex(b, (const uint8_t *)v + k * f->byte_width, (size_t)f->byte_width);
        break;
    default:
        format_nested(b, f, a, i);
        break;
    }
    return 0;
}
