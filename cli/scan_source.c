/* A projected, limited walk over row groups through column readers, which
 * decode only the vectors a range touches (so --limit 10 decodes ~1024 rows
 * per column, not whole row groups). */
#include "scan_source.h"

#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

struct cli_scan {
    const struct qv_reader *reader;
    struct qv_reservation *r;
    struct cli_scan_options opts;
    int32_t *columns;                 /* copy of the projection (all when none given) */
    struct qv_field root;             /* STRUCT template of the projection */
    struct qv_field *kids;
    struct qv_column_reader **readers; /* open for row group `rg` */
    int64_t rg, row, emitted;
};

const struct qv_field *cli_scan_root(const struct cli_scan *s) { return &s->root; }

static void close_readers(struct cli_scan *s) {
    for (int32_t i = 0; i < s->opts.n_columns; i++) {
        qv_column_reader_close(s->readers[i]);
        s->readers[i] = NULL;
    }
}

void cli_scan_close(struct cli_scan *s) {
    if (!s) return;
    if (s->readers) close_readers(s);
    free(s->readers);
    free(s->kids);
    free(s->columns);
    free(s);
}

int cli_scan_open(const struct qv_reader *reader, const struct cli_scan_options *opts,
                  struct qv_reservation *r, struct cli_scan **out, struct qv_error *err) {
    *out = NULL;
    const struct qv_field *all = &qv_reader_schema(reader)->root;
    struct cli_scan *s = calloc(1, sizeof *s);
    if (!s) return qv_error_set(err, ENOMEM, "scan: out of memory");
    s->reader = reader;
    s->r = r;
    s->opts = *opts;
    if (s->opts.batch_rows <= 0) s->opts.batch_rows = 65536;
    int32_t n = opts->columns ? opts->n_columns : (int32_t)all->n_children;
    s->opts.n_columns = n;
    s->columns = calloc((size_t)n + 1, sizeof *s->columns);
    s->kids = calloc((size_t)n + 1, sizeof *s->kids);
    s->readers = calloc((size_t)n + 1, sizeof *s->readers);
    if (!s->columns || !s->kids || !s->readers) {
        cli_scan_close(s);
        return qv_error_set(err, ENOMEM, "scan: out of memory");
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t c = opts->columns ? opts->columns[i] : i;
        if (c < 0 || c >= all->n_children) {
            cli_scan_close(s);
            return qv_error_set(err, EINVAL, "scan: column %d out of range", c);
        }
        s->columns[i] = c;
        s->kids[i] = all->children[c];
    }
    s->opts.columns = s->columns;
    s->root = *all;
    s->root.children = s->kids;
    s->root.n_children = n;
    *out = s;
    return 0;
}

int cli_scan_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err) {
    out->release = NULL;
    int64_t nrg = qv_reader_num_row_groups(s->reader);
    for (;;) {
        if (s->opts.limit >= 0 && s->emitted >= s->opts.limit) return 0;
        if (s->rg >= nrg) return 0;
        int64_t rows = qv_reader_row_group_rows(s->reader, s->rg);
        if (s->row < rows) break;
        close_readers(s);
        s->rg++;
        s->row = 0;
    }
    int64_t rows = qv_reader_row_group_rows(s->reader, s->rg);
    int64_t n = rows - s->row;
    if (n > s->opts.batch_rows) n = s->opts.batch_rows;
    if (s->opts.limit >= 0 && n > s->opts.limit - s->emitted) n = s->opts.limit - s->emitted;
    int rc = qv_owned_array_create(out, &s->root, s->r, err);
    for (int32_t i = 0; !rc && i < s->opts.n_columns; i++) {
        if (!s->readers[i])
            rc = qv_column_reader_open(s->reader, s->rg, s->columns[i], s->r, &s->readers[i], err);
        if (!rc) rc = qv_column_reader_read_into(s->readers[i], s->row, n, out->children[i],
                                                    s->r, err);
    }
    if (!rc) {
        out->length = n;
        out->null_count = 0;
        if (s->opts.validate) {
            rc = qv_arrow_array_validate(out, &s->root, QV_VALIDATE_FULL, err);
            if (rc) {
                qv_error_wrap(err, EIO, "file '%s': row group %lld rows %lld..%lld decoded to an "
                              "invalid array: ",
                              qv_reader_path(s->reader), (long long)s->rg, (long long)s->row,
                              (long long)(s->row + n));
                rc = EIO;
            }
        }
    }
    if (rc) {
        if (out->release) out->release(out);
        out->release = NULL;
        return rc;
    }
    s->row += n;
    s->emitted += n;
    return 0;
}

int cli_resolve_columns(const struct qv_reader *reader, const char *list, int32_t **out,
                        int32_t *n_out, struct qv_error *err) {
    const struct qv_field *root = &qv_reader_schema(reader)->root;
    *out = NULL;
    *n_out = 0;
    size_t len = strlen(list);
    int32_t cap = 1;
    for (size_t i = 0; i < len; i++) cap += list[i] == ',';
    int32_t *cols = calloc((size_t)cap, sizeof *cols);
    char *copy = malloc(len + 1);
    if (!cols || !copy) {
        free(cols);
        free(copy);
        return qv_error_set(err, ENOMEM, "out of memory");
    }
    memcpy(copy, list, len + 1);
    int32_t n = 0;
    int rc = 0;
    for (char *p = copy, *next; p; p = next) {
        next = strchr(p, ',');
        if (next) *next++ = 0;
        int64_t idx = qv_field_child_index(root, p);
        if (idx < 0) {
            struct cli_buf names;
            cli_buf_init(&names);
            for (int64_t c = 0; c < root->n_children && c < 40; c++)
                cli_buf_printf(&names, "%s%s", c ? ", " : "",
                               root->children[c].name ? root->children[c].name : "");
            if (root->n_children > 40) cli_buf_puts(&names, ", ...");
            rc = qv_error_set(err, EINVAL, "file '%s' has no column '%s' (columns: %s)",
                              qv_reader_path(reader), p, cli_buf_str(&names));
            cli_buf_free(&names);
            break;
        }
        cols[n++] = (int32_t)idx;
    }
    free(copy);
    if (rc) {
        free(cols);
        return rc;
    }
    *out = cols;
    *n_out = n;
    return 0;
}
