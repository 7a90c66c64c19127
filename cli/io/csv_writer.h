/*
 * CSV output (RFC 4180): a header of column names, then one record per row.
 * A field is quoted when it holds the delimiter, a quote, CR or LF, or
 * leading/trailing blanks; an empty string is written as "" so that it
 * stays distinct from a null, which is an empty field. `qv import` reads
 * both back the same way.
 */
#ifndef QV_CLI_CSV_WRITER_H
#define QV_CLI_CSV_WRITER_H

#include <stdio.h>

#include "quiver/arrow.h"
#include "term/strbuf.h"

struct cli_csv_writer {
    FILE *f;
    char delimiter;
    struct cli_buf cell, line;
};

void cli_csv_writer_init(struct cli_csv_writer *w, FILE *f, char delimiter);
void cli_csv_writer_free(struct cli_csv_writer *w);
/* Appends one field to a line buffer, quoted when needed. */
void cli_csv_put_field(struct cli_buf *line, const char *p, size_t n, char delimiter, int force_quotes);
/* Header line from the STRUCT root's children. Returns 0 or EIO. */
int cli_csv_write_header(struct cli_csv_writer *w, const struct qv_field *root);
/* Every row of a STRUCT batch of type `root`. Returns 0, EIO (write
 * failure) or ENOMEM. */
int cli_csv_write_batch(struct cli_csv_writer *w, const struct qv_field *root,
                        const struct ArrowArray *batch);

#endif
