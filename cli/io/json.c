/* Streaming JSON writer. */
#include "io/json.h"

#include <math.h>
#include <string.h>

#include "term/strbuf.h"

void cli_json_init(struct cli_json *j, FILE *f) {
    memset(j, 0, sizeof *j);
    j->f = f;
}

static void indent(struct cli_json *j) {
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
}

/* Separator and indentation before a value or key at the current level. */
static void before_value(struct cli_json *j) {
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0) {
        if (j->count[j->depth]++) fputc(',', j->f);
        indent(j);
    }
}

void cli_json_key(struct cli_json *j, const char *key) {
    before_value(j);
    struct cli_buf b;
    cli_buf_init(&b);
    cli_json_escape(&b, key, strlen(key));
    fputs(cli_buf_str(&b), j->f);
    cli_buf_free(&b);
    fputs(": ", j->f);
    j->after_key = 1;
}

static void open_(struct cli_json *j, char c) {
    before_value(j);
    fputc(c, j->f);
    if (j->depth + 1 < CLI_JSON_MAX_DEPTH) j->depth++;
    j->count[j->depth] = 0;
}

static void close_(struct cli_json *j, char c) {
    int had = j->count[j->depth];
    if (j->depth > 0) j->depth--;
    if (had) indent(j);
    fputc(c, j->f);
}

void cli_json_object_begin(struct cli_json *j) { open_(j, '{'); }
void cli_json_object_end(struct cli_json *j) { close_(j, '}'); }
void cli_json_array_begin(struct cli_json *j) { open_(j, '['); }
void cli_json_array_end(struct cli_json *j) { close_(j, ']'); }

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    unsigned cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

void cli_json_escape(struct cli_buf *b, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    cli_buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            cli_buf_putc(b, '\\');
            cli_buf_putc(b, (char)c);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            switch (c) {
            case '\n': cli_buf_puts(b, "\\n"); break;
            case '\r': cli_buf_puts(b, "\\r"); break;
            case '\t': cli_buf_puts(b, "\\t"); break;
            default: cli_buf_printf(b, "\\u%04x", c); break;
            }
            i++;
        } else if (c < 0x80) {
            cli_buf_putc(b, (char)c);
            i++;
        } else {
            size_t len = utf8_seq(p + i, n - i);
            if (len) {
                cli_buf_put(b, p + i, len);
                i += len;
            } else {
                cli_buf_puts(b, "\\ufffd");
                i++;
            }
        }
    }
    cli_buf_putc(b, '"');
}

void cli_json_string_n(struct cli_json *j, const char *s, size_t n) {
    before_value(j);
    struct cli_buf b;
    cli_buf_init(&b);
    cli_json_escape(&b, s, n);
    fputs(cli_buf_str(&b), j->f);
    cli_buf_free(&b);
}

void cli_json_string(struct cli_json *j, const char *s) { cli_json_string_n(j, s, strlen(s)); }

void cli_json_int(struct cli_json *j, int64_t v) {
    before_value(j);
    fprintf(j->f, "%lld", (long long)v);
}

void cli_json_uint(struct cli_json *j, uint64_t v) {
    before_value(j);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void cli_json_double(struct cli_json *j, double v) {
    if (isnan(v)) {
        cli_json_string(j, "NaN");
    } else if (isinf(v)) {
        cli_json_string(j, v > 0 ? "inf" : "-inf");
    } else {
        before_value(j);
        fprintf(j->f, "%.17g", v);
    }
}

void cli_json_bool(struct cli_json *j, int v) {
    before_value(j);
    fputs(v ? "true" : "false", j->f);
}

void cli_json_null(struct cli_json *j) {
    before_value(j);
    fputs("null", j->f);
}

void cli_json_raw(struct cli_json *j, const char *text) {
    before_value(j);
    fputs(text, j->f);
}

void cli_json_end(struct cli_json *j) { fputc('\n', j->f); }
