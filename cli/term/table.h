/*
 * Aligned table output for `qv scan`. Column widths come from the header
 * and the first page of rows (text capped at max_width; numbers never, as
 * a cut number would read as a different one), so output streams without
 * holding the whole result; later values wider than their column are
 * truncated with "~". Widths are terminal columns (East Asian wide
 * characters and emoji count two), and control characters are shown
 * escaped (\n, \t) so a value cannot break the layout. Numbers are
 * right-aligned, everything else left-aligned; nulls show as "null".
 */
#ifndef QV_CLI_TABLE_H
#define QV_CLI_TABLE_H

#include <stdio.h>

#include "quiver/arrow.h"
#include "term/strbuf.h"

struct cli_table {
    FILE *f;
    const struct qv_field *root;
    int max_width;
    int *widths;   /* NULL until the first page fixed them */
    int64_t rows;
    struct cli_buf cell, line;
};

void cli_table_init(struct cli_table *t, FILE *f, const struct qv_field *root, int max_width);
/* Prints a batch; the first call also fixes the widths and prints the
 * header. Returns 0, ENOMEM or EIO. */
int cli_table_write(struct cli_table *t, const struct ArrowArray *batch);
/* Prints the header if no batch came, and the row count. */
int cli_table_finish(struct cli_table *t);
void cli_table_free(struct cli_table *t);

#endif
