/* Aligned table output. */
#include "term/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "term/value_format.h"

void cli_table_init(struct cli_table *t, FILE *f, const struct qv_field *root, int max_width) {
    memset(t, 0, sizeof *t);
    t->f = f;
    t->root = root;
    t->max_width = max_width < 4 ? 4 : max_width;
    cli_buf_init(&t->cell);
    cli_buf_init(&t->line);
}

void cli_table_free(struct cli_table *t) {
    free(t->widths);
    cli_buf_free(&t->cell);
    cli_buf_free(&t->line);
}

static int numeric(const struct qv_field *f) {
    return (f->type >= QV_TYPE_INT8 && f->type <= QV_TYPE_FLOAT64) || f->type == QV_TYPE_DECIMAL128;
}

/* Escapes control characters in place of a cell's text. */
static void sanitize(struct cli_buf *cell) {
    int needs = 0;
    for (size_t i = 0; i < cell->len; i++)
        if ((unsigned char)cell->data[i] < 0x20 || cell->data[i] == 0x7f) needs = 1;
    if (!needs) return;
    struct cli_buf out;
    cli_buf_init(&out);
    for (size_t i = 0; i < cell->len; i++) {
        unsigned char c = (unsigned char)cell->data[i];
        if (c == '\n') cli_buf_puts(&out, "\\n");
        else if (c == '\t') cli_buf_puts(&out, "\\t");
        else if (c == '\r') cli_buf_puts(&out, "\\r");
        else if (c < 0x20 || c == 0x7f) cli_buf_printf(&out, "\\x%02x", c);
        else cli_buf_putc(&out, (char)c);
    }
    cli_buf_clear(cell);
    cli_buf_put(cell, cli_buf_str(&out), out.len);
    cli_buf_free(&out);
}

/* Terminal columns a code point takes: 2 for East Asian wide and emoji
 * ranges, 0 for combining marks, else 1 (a small table in the spirit of
 * wcwidth, independent of the locale). */
static int cp_width(uint32_t cp) {
    if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x200B && cp <= 0x200F) ||
        (cp >= 0xFE00 && cp <= 0xFE0F))
        return 0;
    if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF && cp != 0x303F) ||
        (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
        (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
        (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
        (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD))
        return 2;
    return 1;
}

/* Decodes the code point at s[*i] (invalid bytes count as one column). */
static uint32_t next_cp(const char *s, size_t n, size_t *i) {
    const unsigned char *p = (const unsigned char *)s;
    uint32_t c = p[*i];
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (len == 1 || *i + len > n) {
        (*i)++;
        return c < 0x80 ? c : '?';
    }
    uint32_t cp = c & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) cp = (cp << 6) | (p[*i + k] & 0x3F);
    *i += len;
    return cp;
}

/* Display width of s[0, n). */
static int chars(const char *s, size_t n) {
    int w = 0;
    for (size_t i = 0; i < n;) w += cp_width(next_cp(s, n, &i));
    return w;
}

/* Byte length of the longest prefix at most `width` columns wide. */
static size_t prefix_bytes(const char *s, size_t n, int width) {
    size_t i = 0;
    int w = 0;
    while (i < n) {
        size_t j = i;
        int cw = cp_width(next_cp(s, n, &j));
        if (w + cw > width) break;
        w += cw;
        i = j;
    }
    return i;
}

static void put_cell(struct cli_table *t, const char *s, size_t n, int width, int right) {
    int w = chars(s, n);
    /* A number wider than its column (seen after the first page) overflows
     * the alignment rather than being cut into a different number. */
    if (w > width && !right) {
        size_t cut = prefix_bytes(s, n, width - 1);
        cli_buf_put(&t->line, s, cut);
        cli_buf_putc(&t->line, '~');
        /* A wide character that did not fit leaves a column to pad. */
        for (int i = chars(s, cut) + 1; i < width; i++) cli_buf_putc(&t->line, ' ');
        return;
    }
    if (right)
        for (int i = w; i < width; i++) cli_buf_putc(&t->line, ' ');
    cli_buf_put(&t->line, s, n);
    if (!right)
        for (int i = w; i < width; i++) cli_buf_putc(&t->line, ' ');
}

static int emit(struct cli_table *t) {
    /* No trailing blanks: trim the padding of the last column. */
    while (t->line.len && t->line.data[t->line.len - 1] == ' ') t->line.len--;
    cli_buf_putc(&t->line, '\n');
    if (t->line.failed) return ENOMEM;
    if (fwrite(t->line.data, 1, t->line.len, t->f) != t->line.len) return EIO;
    cli_buf_clear(&t->line);
    return 0;
}

static int format_cell(struct cli_table *t, const struct ArrowArray *batch, int64_t c, int64_t i) {
    cli_buf_clear(&t->cell);
    if (cli_format_value(&t->cell, &t->root->children[c], batch->children[c], batch->offset + i)) {
        cli_buf_puts(&t->cell, "null");
        return 1;
    }
    sanitize(&t->cell);
    return 0;
}

static int header(struct cli_table *t) {
    int64_t n = t->root->n_children;
    for (int64_t c = 0; c < n; c++) {
        const char *name = t->root->children[c].name ? t->root->children[c].name : "";
        if (c) cli_buf_puts(&t->line, " | ");
        put_cell(t, name, strlen(name), t->widths[c], numeric(&t->root->children[c]));
    }
    int rc = emit(t);
    if (rc) return rc;
    for (int64_t c = 0; c < n; c++) {
        if (c) cli_buf_puts(&t->line, "-+-");
        for (int i = 0; i < t->widths[c]; i++) cli_buf_putc(&t->line, '-');
    }
    return emit(t);
}

static int fix_widths(struct cli_table *t, const struct ArrowArray *batch) {
    int64_t n = t->root->n_children;
    t->widths = calloc((size_t)n + 1, sizeof *t->widths);
    if (!t->widths) return ENOMEM;
    for (int64_t c = 0; c < n; c++) {
        const char *name = t->root->children[c].name ? t->root->children[c].name : "";
        int w = chars(name, strlen(name));
        for (int64_t i = 0; batch && i < batch->length; i++) {
            format_cell(t, batch, c, i);
            int cw = chars(t->cell.data ? t->cell.data : "", t->cell.len);
            if (cw > w) w = cw;
        }
        /* Numbers keep their full width; a decimal128 needs at most 41. */
        int cap = numeric(&t->root->children[c]) ? 48 : t->max_width;
        if (w > cap) w = cap;
        if (w < 1) w = 1;
        t->widths[c] = w;
    }
    return header(t);
}

int cli_table_write(struct cli_table *t, const struct ArrowArray *batch) {
    int rc;
    if (!t->widths && (rc = fix_widths(t, batch))) return rc;
    for (int64_t i = 0; i < batch->length; i++) {
        for (int64_t c = 0; c < t->root->n_children; c++) {
            if (c) cli_buf_puts(&t->line, " | ");
            int null = format_cell(t, batch, c, i);
            put_cell(t, cli_buf_str(&t->cell), t->cell.len, t->widths[c],
                     !null && numeric(&t->root->children[c]));
        }
        if ((rc = emit(t))) return rc;
    }
    t->rows += batch->length;
    return 0;
}

int cli_table_finish(struct cli_table *t) {
    int rc;
    if (!t->widths && (rc = fix_widths(t, NULL))) return rc;
    fprintf(t->f, "(%lld row%s)\n", (long long)t->rows, t->rows == 1 ? "" : "s");
    return 0;
}
