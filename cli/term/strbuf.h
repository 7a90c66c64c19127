/*
 * A growable text buffer for formatting values, rows and messages. Text
 * scratch is small and short-lived, so it comes from malloc rather than the
 * pool; only Arrow data and file buffers are charged to reservations.
 * An allocation failure makes the buffer sticky-failed (`failed`), so
 * formatting code can append freely and check once.
 */
#ifndef QV_CLI_STRBUF_H
#define QV_CLI_STRBUF_H

#include <stddef.h>
#include <stdint.h>

struct cli_buf {
    char *data; /* always NUL-terminated once anything was appended */
    size_t len, cap;
    int failed;
};

void cli_buf_init(struct cli_buf *b);
void cli_buf_free(struct cli_buf *b);
void cli_buf_clear(struct cli_buf *b);
void cli_buf_put(struct cli_buf *b, const void *p, size_t n);
void cli_buf_puts(struct cli_buf *b, const char *s);
void cli_buf_putc(struct cli_buf *b, char c);
void cli_buf_printf(struct cli_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text ("" when empty). */
const char *cli_buf_str(const struct cli_buf *b);

#endif
