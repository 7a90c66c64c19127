/* Batches for the commands, through the scan engine: it prunes row groups
 * with statistics, decodes filter columns first and projected columns for
 * the surviving rows only, and (with --limit or --take) decodes only the
 * vectors those rows touch. */
#include "io/scan_source.h"

#include <stdlib.h>
#include <string.h>

#include "term/strbuf.h"

struct cli_scan {
    const struct qv_reader *reader;
    struct qv_reservation *r;
    int64_t limit;
    struct qv_field root;   /* STRUCT template of the projection */
    struct qv_field *kids;
    struct ArrowArrayStream stream;
    /* A take in any order (see cli_scan_options): the engine reads the
     * distinct rows sorted, without the filter, into `batches`; the filter is
     * evaluated here, and the rows go out in the order given through a
     * builder. The engine's projection is the output columns followed by the
     * columns only the filter reads. */
    int reorder;
    int64_t *order, n_order;  /* the rows as given */
    int64_t *uniq, n_uniq;    /* sorted, distinct: what the engine reads */
    struct qv_field eng_root; /* the engine's projection */
    struct qv_field *eng_kids;
    int32_t *eng_cols, n_eng;
    struct qv_expr *filter;
    struct ArrowArray *batches;
    int64_t n_batches, cap_batches;
    int64_t *batch_start;     /* first uniq index of each batch */
    uint8_t *pass;            /* per uniq row: the filter is TRUE */
    struct qv_schema *out_schema;
    struct qv_builder *builder;
    int64_t batch_rows, next, emitted;
    int drained, drain_rc;
};

const struct qv_field *cli_scan_root(const struct cli_scan *s) { return &s->root; }

void cli_scan_close(struct cli_scan *s) {
    if (!s) return;
    if (s->stream.release) s->stream.release(&s->stream);
    for (int64_t i = 0; i < s->n_batches; i++)
        if (s->batches[i].release) s->batches[i].release(&s->batches[i]);
    free(s->batches);
    free(s->batch_start);
    free(s->pass);
    qv_builder_destroy(s->builder);
    qv_schema_destroy(s->out_schema);
    qv_expr_destroy(s->filter);
    free(s->order);
    free(s->uniq);
    free(s->eng_kids);
    free(s->eng_cols);
    free(s->kids);
    free(s);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sets up a take in any order: the sorted distinct rows, the filter bound
 * to the file's schema and the engine's projection. */
static int reorder_setup(struct cli_scan *s, const struct cli_scan_options *opts,
                         const int32_t *out_cols, int32_t n_out, struct qv_error *err) {
    const struct qv_schema *schema = qv_reader_schema(s->reader);
    const struct qv_field *all = &schema->root;
    s->reorder = 1;
    s->n_order = s->n_uniq = opts->n_take;
    s->order = malloc((size_t)(opts->n_take ? opts->n_take : 1) * sizeof *s->order);
    s->uniq = malloc((size_t)(opts->n_take ? opts->n_take : 1) * sizeof *s->uniq);
    int32_t n_filter = 0;
    if (opts->filter) {
        int rc = qv_expr_parse(opts->filter, s->r, &s->filter, err);
        if (!rc) rc = qv_expr_bind(s->filter, schema, err);
        if (rc) return rc;
        n_filter = qv_expr_columns(s->filter, NULL, 0);
    }
    s->eng_cols = malloc(((size_t)n_out + (size_t)n_filter + 1) * sizeof *s->eng_cols);
    s->eng_kids = calloc((size_t)n_out + (size_t)n_filter + 1, sizeof *s->eng_kids);
    if (!s->order || !s->uniq || !s->eng_cols || !s->eng_kids)
        return qv_error_set(err, ENOMEM, "scan: out of memory");
    memcpy(s->order, opts->take, (size_t)opts->n_take * sizeof *s->order);
    memcpy(s->uniq, opts->take, (size_t)opts->n_take * sizeof *s->uniq);
    qsort(s->uniq, (size_t)s->n_uniq, sizeof *s->uniq, cmp_i64);
    int64_t k = 0;
    for (int64_t i = 0; i < s->n_uniq; i++)
        if (k == 0 || s->uniq[i] != s->uniq[k - 1]) s->uniq[k++] = s->uniq[i];
    s->n_uniq = k;
    for (int32_t i = 0; i < n_out; i++) s->eng_cols[s->n_eng++] = out_cols[i];
    if (n_filter > 0) {
        int32_t *fc = malloc((size_t)n_filter * sizeof *fc);
        if (!fc) return qv_error_set(err, ENOMEM, "scan: out of memory");
        qv_expr_columns(s->filter, fc, n_filter);
        for (int32_t i = 0; i < n_filter; i++) {
            int have = 0;
            for (int32_t j = 0; j < n_out && !have; j++) have = out_cols[j] == fc[i];
            if (!have) s->eng_cols[s->n_eng++] = fc[i];
        }
        free(fc);
    }
    for (int32_t i = 0; i < s->n_eng; i++) s->eng_kids[i] = all->children[s->eng_cols[i]];
    s->eng_root = *all;
    s->eng_root.children = s->eng_kids;
    s->eng_root.n_children = s->n_eng;
    int rc = qv_schema_create(&s->root, s->r, &s->out_schema, err);
    if (!rc) rc = qv_builder_create(s->out_schema, s->r, NULL, &s->builder, err);
    return rc;
}

int cli_scan_open(const struct qv_reader *reader, const struct cli_scan_options *opts,
                  struct qv_reservation *r, struct cli_scan **out, struct qv_error *err) {
    *out = NULL;
    const struct qv_field *all = &qv_reader_schema(reader)->root;
    struct cli_scan *s = calloc(1, sizeof *s);
    int32_t n = opts->columns ? opts->n_columns : (int32_t)all->n_children;
    if (s) s->kids = calloc((size_t)n + 1, sizeof *s->kids);
    int32_t *out_cols = malloc(((size_t)n + 1) * sizeof *out_cols);
    if (!s || !s->kids || !out_cols) {
        free(out_cols);
        cli_scan_close(s);
        return qv_error_set(err, ENOMEM, "scan: out of memory");
    }
    s->reader = reader;
    s->r = r;
    s->limit = opts->limit;
    s->batch_rows = opts->batch_rows > 0 ? opts->batch_rows : 65536;
    for (int32_t i = 0; i < n; i++) {
        int32_t c = opts->columns ? opts->columns[i] : i;
        if (c < 0 || c >= all->n_children) {
            free(out_cols);
            cli_scan_close(s);
            return qv_error_set(err, EINVAL, "scan: column %d out of range", c);
        }
        s->kids[i] = all->children[c];
        out_cols[i] = c;
    }
    s->root = *all;
    s->root.children = s->kids;
    s->root.n_children = n;
    int sorted = 1;
    for (int64_t i = 1; opts->take && i < opts->n_take && sorted; i++)
        sorted = opts->take[i] > opts->take[i - 1];
    int rc = 0;
    if (!sorted) rc = reorder_setup(s, opts, out_cols, n, err);
    free(out_cols);
    if (rc) {
        cli_scan_close(s);
        return rc;
    }
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
        /* Checksums prove the bytes are the ones written, not that they
         * decode to valid Arrow: the scan's workers check every column. */
        .validate = opts->validate ? QV_SCAN_VALIDATE_FULL : QV_SCAN_VALIDATE_NONE,
    };
    if (s->reorder) {
        so.columns = s->eng_cols;
        so.n_columns = s->n_eng;
        so.filter = NULL;
        so.take = s->uniq;
        so.n_take = s->n_uniq;
        so.max_rows = 0;
    }
    rc = qv_scan_open(reader, &so, r, &s->stream, err);
    if (rc) {
        cli_scan_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* The next batch of the engine (validated by the engine when asked). */
static int engine_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err) {
    int rc = s->stream.get_next(&s->stream, out);
    if (rc) {
        const char *m = s->stream.get_last_error(&s->stream);
        return qv_error_set(err, rc, "%s", m ? m : qv_errno_name(rc));
    }
    return 0;
}

/* Reads every taken row (sorted, distinct) and evaluates the filter on
 * them; the stream is released afterwards, so the filter's scratch memory
 * and the builder use the reservation on this thread alone. */
static int reorder_drain(struct cli_scan *s, struct qv_error *err) {
    int64_t rows = 0;
    s->pass = malloc((size_t)(s->n_uniq ? s->n_uniq : 1));
    if (!s->pass) return qv_error_set(err, ENOMEM, "scan: out of memory");
    for (;;) {
        struct ArrowArray b;
        int rc = engine_next(s, &b, err);
        if (rc) return rc;
        if (!b.release) break;
        if (s->n_batches == s->cap_batches) {
            int64_t cap = s->cap_batches ? s->cap_batches * 2 : 16;
            struct ArrowArray *nb = realloc(s->batches, (size_t)cap * sizeof *nb);
            int64_t *ns = nb ? realloc(s->batch_start, (size_t)(cap + 1) * sizeof *ns) : NULL;
            if (nb) s->batches = nb;
            if (!ns) {
                b.release(&b);
                return qv_error_set(err, ENOMEM, "scan: out of memory");
            }
            s->batch_start = ns;
            s->cap_batches = cap;
        }
        s->batch_start[s->n_batches] = rows;
        s->batches[s->n_batches++] = b;
        rows += b.length;
        if (rows > s->n_uniq) break;
    }
    s->stream.release(&s->stream);
    if (rows != s->n_uniq)
        return qv_error_set(err, EIO, "file '%s': the take of %lld rows returned %lld",
                            qv_reader_path(s->reader), (long long)s->n_uniq, (long long)rows);
    s->batch_start[s->n_batches] = rows;
    memset(s->pass, 1, (size_t)(s->n_uniq ? s->n_uniq : 1));
    if (!s->filter) return 0;
    int64_t ncols = qv_reader_schema(s->reader)->root.n_children;
    int32_t *map = malloc((size_t)(ncols ? ncols : 1) * sizeof *map);
    if (!map) return qv_error_set(err, ENOMEM, "scan: out of memory");
    for (int64_t c = 0; c < ncols; c++) map[c] = -1;
    for (int32_t j = s->n_eng - 1; j >= 0; j--) map[s->eng_cols[j]] = j;
    int rc = 0;
    for (int64_t i = 0; i < s->n_batches && !rc; i++) {
        const struct ArrowArray *b = &s->batches[i];
        uint8_t *bits = malloc((size_t)qv_bytes_for_bits(b->length) + 1);
        if (!bits) {
            rc = qv_error_set(err, ENOMEM, "scan: out of memory");
            break;
        }
        rc = qv_expr_eval(s->filter, b, map, bits, NULL, s->r, err);
        for (int64_t k = 0; !rc && k < b->length; k++)
            s->pass[s->batch_start[i] + k] = (bits[k >> 3] >> (k & 7)) & 1;
        free(bits);
    }
    free(map);
    return rc;
}

/* The next page of rows in the order given. */
static int reorder_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err) {
    int rc;
    if (!s->drained) {
        s->drained = 1;
        if ((rc = s->drain_rc = reorder_drain(s, err))) return rc;
    }
    if (s->drain_rc)
        return qv_error_set(err, s->drain_rc, "scan: the take already failed (%s)",
                            qv_errno_name(s->drain_rc));
    int64_t n = 0;
    while (s->next < s->n_order && n < s->batch_rows && (s->limit < 0 || s->emitted < s->limit)) {
        int64_t row = s->order[s->next++];
        const int64_t *u = bsearch(&row, s->uniq, (size_t)s->n_uniq, sizeof row, cmp_i64);
        int64_t k = u - s->uniq;
        if (!s->pass[k]) continue;
        int64_t lo = 0, hi = s->n_batches - 1; /* the batch holding uniq row k */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo + 1) / 2;
            if (s->batch_start[mid] <= k) lo = mid;
            else hi = mid - 1;
        }
        const struct ArrowArray *b = &s->batches[lo];
        int64_t at = b->offset + (k - s->batch_start[lo]);
        for (int64_t c = 0; c < s->root.n_children; c++) {
            rc = qv_append_array(qv_builder_column(s->builder, c), b->children[c], at, 1);
            if (rc) return qv_error_set(err, rc, "%s", qv_builder_error(s->builder)->message);
        }
        n++;
        s->emitted++;
    }
    if (n == 0) return 0;
    return qv_builder_finish(s->builder, out, err);
}

int cli_scan_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err) {
    out->release = NULL;
    if (s->limit == 0) return 0;
    if (s->reorder) return reorder_next(s, out, err);
    return engine_next(s, out, err);
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
        /* The filter's rule: a name matching several columns selects none. */
        int64_t idx = -1, other = -1;
        for (int64_t c = 0; c < root->n_children && other < 0; c++)
            if (root->children[c].name && strcmp(root->children[c].name, p) == 0) {
                if (idx < 0) idx = c;
                else other = c;
            }
        if (other >= 0) {
            rc = qv_error_set(err, EINVAL,
                              "file '%s': ambiguous column name '%s': fields %lld and %lld both "
                              "have that name",
                              qv_reader_path(reader), p, (long long)idx, (long long)other);
            break;
        }
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
