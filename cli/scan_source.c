/* Batches for the commands, through the scan engine: it prunes row groups
 * with statistics, decodes filter columns first and projected columns for
 * the surviving rows only, and (with --limit or --take) decodes only the
 * vectors those rows touch. */
#include "scan_source.h"

#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

struct cli_scan {
    const struct qv_reader *reader;
    struct qv_reservation *r;
    int validate;
    int64_t limit;
    struct qv_field root;   /* STRUCT template of the projection */
    struct qv_field *kids;
    struct ArrowArrayStream stream;
};

const struct qv_field *cli_scan_root(const struct cli_scan *s) { return &s->root; }

void cli_scan_close(struct cli_scan *s) {
    if (!s) return;
    if (s->stream.release) s->stream.release(&s->stream);
    free(s->kids);
    free(s);
}

int cli_scan_open(const struct qv_reader *reader, const struct cli_scan_options *opts,
                  struct qv_reservation *r, struct cli_scan **out, struct qv_error *err) {
    *out = NULL;
    const struct qv_field *all = &qv_reader_schema(reader)->root;
    struct cli_scan *s = calloc(1, sizeof *s);
    int32_t n = opts->columns ? opts->n_columns : (int32_t)all->n_children;
    if (s) s->kids = calloc((size_t)n + 1, sizeof *s->kids);
    if (!s || !s->kids) {
        cli_scan_close(s);
        return qv_error_set(err, ENOMEM, "scan: out of memory");
    }
    s->reader = reader;
    s->r = r;
    s->validate = opts->validate;
    s->limit = opts->limit;
    for (int32_t i = 0; i < n; i++) {
        int32_t c = opts->columns ? opts->columns[i] : i;
        if (c < 0 || c >= all->n_children) {
            cli_scan_close(s);
            return qv_error_set(err, EINVAL, "scan: column %d out of range", c);
        }
        s->kids[i] = all->children[c];
    }
    s->root = *all;
    s->root.children = s->kids;
    s->root.n_children = n;
    struct qv_scan_options so = {
        .columns = opts->columns,
        .n_columns = opts->n_columns,
        .filter = opts->filter,
        .take = opts->take,
        .n_take = opts->n_take,
        .batch_rows = opts->batch_rows,
        .max_rows = opts->limit > 0 ? opts->limit : 0,
        .threads = opts->threads,
        .prefetch = opts->prefetch,
    };
    int rc = qv_scan_open(reader, &so, r, &s->stream, err);
    if (rc) {
        cli_scan_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

int cli_scan_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err) {
    out->release = NULL;
    if (s->limit == 0) return 0;
    int rc = s->stream.get_next(&s->stream, out);
    if (rc) {
        const char *m = s->stream.get_last_error(&s->stream);
        return qv_error_set(err, rc, "%s", m ? m : qv_errno_name(rc));
    }
    if (out->release && s->validate) {
        rc = qv_arrow_array_validate(out, &s->root, QV_VALIDATE_FULL, err);
        if (rc) {
            out->release(out);
            qv_error_wrap(err, EIO, "file '%s': a batch decoded to an invalid array: ",
                          qv_reader_path(s->reader));
            return EIO;
        }
    }
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
