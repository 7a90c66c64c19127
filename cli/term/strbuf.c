/* Growable text buffer. */
#include "term/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_buf_init(struct cli_buf *b) { memset(b, 0, sizeof *b); }

void cli_buf_free(struct cli_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

void cli_buf_clear(struct cli_buf *b) {
    b->len = 0;
    if (b->data) b->data[0] = 0;
}

static int reserve(struct cli_buf *b, size_t extra) {
    if (b->failed) return -1;
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void cli_buf_put(struct cli_buf *b, const void *p, size_t n) {
    if (reserve(b, n)) return;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

void cli_buf_puts(struct cli_buf *b, const char *s) { cli_buf_put(b, s, strlen(s)); }

void cli_buf_putc(struct cli_buf *b, char c) {
    if (reserve(b, 1)) return;
    b->data[b->len++] = c;
    b->data[b->len] = 0;
}

void cli_buf_printf(struct cli_buf *b, const char *fmt, ...) {
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        cli_buf_put(b, small, (size_t)n);
        return;
    }
    if (reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *cli_buf_str(const struct cli_buf *b) { return b->data ? b->data : ""; }
