/* Rendering zone statistics (min / max as stored in the footer). */
#include <string.h>

#include "cmd/inspect.h"
#include "term/value_format.h"

static int64_t le_i64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return (int64_t)v;
}

static uint64_t le_u64(const uint8_t *p) { return (uint64_t)le_i64(p); }

static double le_f64(const uint8_t *p) {
    uint64_t u = le_u64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* Which stored form a type's statistics use, and their expected length. */
enum stat_form { SF_BOOL, SF_INT, SF_UINT, SF_FLOAT, SF_DEC, SF_DATE, SF_TS, SF_TEXT, SF_BYTES };

static enum stat_form form_of(const struct qv_field *f) {
    switch (f->type) {
    case QV_TYPE_BOOL: return SF_BOOL;
    case QV_TYPE_INT8: case QV_TYPE_INT16: case QV_TYPE_INT32: case QV_TYPE_INT64: return SF_INT;
    case QV_TYPE_UINT8: case QV_TYPE_UINT16: case QV_TYPE_UINT32: case QV_TYPE_UINT64:
        return SF_UINT;
    case QV_TYPE_FLOAT32: case QV_TYPE_FLOAT64: return SF_FLOAT;
    case QV_TYPE_DECIMAL128: return SF_DEC;
    case QV_TYPE_DATE32: return SF_DATE;
    case QV_TYPE_TIMESTAMP: return SF_TS;
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: return SF_TEXT;
    default: return SF_BYTES;
    }
}

static int len_ok(enum stat_form sf, uint32_t len) {
    switch (sf) {
    case SF_BOOL: return len == 1;
    case SF_DEC: return len == 8 || len == 16;
    case SF_TEXT: case SF_BYTES: return 1;
    default: return len == 8;
    }
}

void cli_stat_text(struct cli_buf *b, const struct qv_field *f, const uint8_t *p, uint32_t len,
                   int truncated) {
    enum stat_form sf = form_of(f);
    char tmp[64];
    if (!len_ok(sf, len)) {
        cli_buf_printf(b, "<%u bytes: ", len);
        cli_fmt_hex(b, p, len);
        cli_buf_putc(b, '>');
        return;
    }
    switch (sf) {
    case SF_BOOL: cli_buf_puts(b, p[0] ? "true" : "false"); break;
    case SF_INT: cli_buf_printf(b, "%lld", (long long)le_i64(p)); break;
    case SF_UINT: cli_buf_printf(b, "%llu", (unsigned long long)le_u64(p)); break;
    case SF_FLOAT:
        cli_fmt_double(le_f64(p), tmp, sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case SF_DEC:
        if (len == 8) cli_fmt_decimal64(b, le_i64(p), f->scale);
        else cli_fmt_decimal(b, p, f->scale);
        break;
    case SF_DATE:
        qv_date32_format(le_i64(p), tmp, sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case SF_TS:
        qv_timestamp_format(le_i64(p), f->unit, f->timezone && *f->timezone, tmp, sizeof tmp);
        cli_buf_puts(b, tmp);
        break;
    case SF_TEXT:
        cli_json_escape(b, (const char *)p, len);
        if (truncated) cli_buf_puts(b, "...");
        break;
    case SF_BYTES:
        cli_buf_puts(b, "0x");
        cli_fmt_hex(b, p, len);
        if (truncated) cli_buf_puts(b, "...");
        break;
    }
}

void cli_stat_json(struct cli_json *j, const struct qv_field *f, const uint8_t *p, uint32_t len) {
    enum stat_form sf = form_of(f);
    if (!len_ok(sf, len)) {
        struct cli_buf b;
        cli_buf_init(&b);
        cli_fmt_hex(&b, p, len);
        cli_json_string(j, cli_buf_str(&b));
        cli_buf_free(&b);
        return;
    }
    switch (sf) {
    case SF_BOOL: cli_json_bool(j, p[0] != 0); return;
    case SF_INT: cli_json_int(j, le_i64(p)); return;
    case SF_UINT: cli_json_uint(j, le_u64(p)); return;
    case SF_FLOAT: cli_json_double(j, le_f64(p)); return;
    case SF_TEXT: cli_json_string_n(j, (const char *)p, len); return;
    default: {
        struct cli_buf b;
        cli_buf_init(&b);
        if (sf == SF_BYTES) cli_fmt_hex(&b, p, len);
        else cli_stat_text(&b, f, p, len, 0);
        cli_json_string(j, cli_buf_str(&b));
        cli_buf_free(&b);
        return;
    }
    }
}
