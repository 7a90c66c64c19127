/* Writing batches as CSV. */
#include "io/csv_writer.h"

#include <errno.h>
#include <string.h>

#include "term/value_format.h"

void cli_csv_writer_init(struct cli_csv_writer *w, FILE *f, char delimiter) {
    w->f = f;
    w->delimiter = delimiter;
    cli_buf_init(&w->cell);
    cli_buf_init(&w->line);
}

void cli_csv_writer_free(struct cli_csv_writer *w) {
    cli_buf_free(&w->cell);
    cli_buf_free(&w->line);
}

void cli_csv_put_field(struct cli_buf *line, const char *p, size_t n, char delimiter,
                       int force_quotes) {
    int quote = force_quotes || n == 0 || p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' ||
                p[n - 1] == '\t';
    for (size_t i = 0; i < n && !quote; i++)
        if (p[i] == delimiter || p[i] == '"' || p[i] == '\n' || p[i] == '\r') quote = 1;
    if (!quote) {
        cli_buf_put(line, p, n);
        return;
    }
    cli_buf_putc(line, '"');
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '"') cli_buf_putc(line, '"');
        cli_buf_putc(line, p[i]);
    }
    cli_buf_putc(line, '"');
}

static int flush_line(struct cli_csv_writer *w) {
    if (w->line.failed) return ENOMEM;
    cli_buf_putc(&w->line, '\n');
    if (w->line.failed) return ENOMEM;
    if (fwrite(w->line.data, 1, w->line.len, w->f) != w->line.len) return EIO;
    cli_buf_clear(&w->line);
    return 0;
}

int cli_csv_write_header(struct cli_csv_writer *w, const struct qv_field *root) {
    cli_buf_clear(&w->line);
    for (int64_t c = 0; c < root->n_children; c++) {
        if (c) cli_buf_putc(&w->line, w->delimiter);
        const char *name = root->children[c].name ? root->children[c].name : "";
        cli_csv_put_field(&w->line, name, strlen(name), w->delimiter, 0);
    }
    return flush_line(w);
}

int cli_csv_write_batch(struct cli_csv_writer *w, const struct qv_field *root,
                        const struct ArrowArray *batch) {
    for (int64_t i = 0; i < batch->length; i++) {
        cli_buf_clear(&w->line);
        for (int64_t c = 0; c < root->n_children; c++) {
            if (c) cli_buf_putc(&w->line, w->delimiter);
            cli_buf_clear(&w->cell);
            const struct qv_field *f = &root->children[c];
            if (cli_format_value(&w->cell, f, batch->children[c], batch->offset + i)) continue;
            /* Only text can be empty; other types never format to "". */
            cli_csv_put_field(&w->line, cli_buf_str(&w->cell), w->cell.len, w->delimiter, 0);
        }
        if (w->cell.failed) return ENOMEM;
        int rc = flush_line(w);
        if (rc) return rc;
    }
    return 0;
}
