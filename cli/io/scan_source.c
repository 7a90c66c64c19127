/* Batches for the commands, through the file layer: columns by name (its
 * rule, so `--columns` reads exactly what `--filter` and Python's
 * `columns=` read), the scan engine's pruning, filter and limit, and takes
 * in any order. The one thing the layer leaves to its callers is a filter
 * on rows taken in an order of their own: the filter's columns are taken
 * for the distinct rows first, the filter evaluated on them here, and the
 * rows that pass are taken in the order given. */
#include "io/scan_source.h"

#include <stdlib.h>
#include <string.h>

#include "term/strbuf.h"

struct cli_scan {
    int64_t limit, emitted;
    struct ArrowArrayStream stream;
    struct qv_schema *schema; /* the stream's */
};

const struct qv_field *cli_scan_root(const struct cli_scan *s) { return &s->schema->root; }

void cli_scan_close(struct cli_scan *s) {
    if (!s) return;
    if (s->stream.release) s->stream.release(&s->stream);
    qv_schema_destroy(s->schema);
    free(s);
}

/* The names of a --columns list: split at commas outside double quotes
 * (a quoted name may hold a comma), into `storage` (malloc'd, freed by the
 * caller with *names). */
static int split_columns(const char *text, char **storage, const char ***names, int32_t *n,
                         struct qv_error *err) {
    size_t len = strlen(text);
    int32_t cap = 1;
    for (size_t i = 0; i < len; i++) cap += text[i] == ',';
    *storage = malloc(len + 1);
    *names = malloc((size_t)cap * sizeof **names);
    if (!*storage || !*names) return qv_error_set(err, ENOMEM, "--columns: out of memory");
    memcpy(*storage, text, len + 1);
    int32_t k = 0;
    bool quoted = false;
    (*names)[k++] = *storage;
    for (char *p = *storage; *p; p++) {
        if (*p == '"') quoted = !quoted;
        else if (*p == ',' && !quoted) {
            *p = 0;
            (*names)[k++] = p + 1;
        }
    }
    *n = k;
    return 0;
}

/* The error of a failed call on a file stream, with its kind (a corrupt
 * segment and a failed read are both EIO; the record tells them apart). */
static int stream_error(const struct ArrowArrayStream *st, int rc, struct qv_error *err) {
    struct qv_error rec;
    if (qv_scan_last_error(st, &rec) == 0 && rec.code) {
        if (err) *err = rec;
        return rec.code;
    }
    return qv_error_set(err, rc, "scan: %s", qv_errno_name(rc));
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A column's name as an exact, quoted path ("a.b" -> "\"a.b\""). */
static char *quoted_name(const char *name) {
    struct cli_buf b;
    cli_buf_init(&b);
    cli_buf_putc(&b, '"');
    for (const char *p = name ? name : ""; *p; p++) {
        if (*p == '"') cli_buf_putc(&b, '"');
        cli_buf_putc(&b, *p);
    }
    cli_buf_putc(&b, '"');
    char *s = b.failed ? NULL : strdup(cli_buf_str(&b));
    cli_buf_free(&b);
    return s;
}

/* Which of the rows of a take in any order pass the filter: the filter's
 * columns are taken for the distinct rows, the filter evaluated on them.
 * *kept (malloc'd) gets the rows that pass, in the order given. */
static int filter_take(struct qv_file *file, const struct cli_scan_options *o,
                       struct qv_reservation *r, int64_t **kept, int64_t *n_kept,
                       struct qv_error *err) {
    const struct qv_schema *schema = qv_reader_schema(qv_file_reader(file));
    int64_t ncols = schema->root.n_children, n = o->n_take, nu = 0, seen = 0;
    struct qv_expr *e = NULL;
    int32_t nf = 0, *fcols = NULL, *map = NULL;
    char **fnames = NULL;
    int64_t *uniq = NULL;
    uint8_t *pass = NULL;
    struct ArrowArrayStream st = {0};
    int rc = qv_expr_parse(o->filter, r, &e, err);
    if (!rc) rc = qv_expr_bind(e, schema, err);
    if (!rc) {
        nf = qv_expr_columns(e, NULL, 0);
        fcols = calloc((size_t)nf + 1, sizeof *fcols);
        fnames = calloc((size_t)nf + 1, sizeof *fnames);
        map = malloc((size_t)(ncols ? ncols : 1) * sizeof *map);
        uniq = malloc((size_t)(n ? n : 1) * sizeof *uniq);
        pass = calloc((size_t)(n ? n : 1), 1);
        *kept = malloc((size_t)(n ? n : 1) * sizeof **kept);
        if (!fcols || !fnames || !map || !uniq || !pass || !*kept)
            rc = qv_error_set(err, ENOMEM, "scan: out of memory");
    }
    if (!rc) {
        qv_expr_columns(e, fcols, nf);
        for (int64_t c = 0; c < ncols; c++) map[c] = -1;
        for (int32_t j = 0; j < nf && !rc; j++) {
            map[fcols[j]] = j;
            fnames[j] = quoted_name(schema->root.children[fcols[j]].name);
            if (!fnames[j]) rc = qv_error_set(err, ENOMEM, "scan: out of memory");
        }
        memcpy(uniq, o->take, (size_t)n * sizeof *uniq);
        qsort(uniq, (size_t)n, sizeof *uniq, cmp_i64);
        for (int64_t i = 0; i < n; i++)
            if (nu == 0 || uniq[i] != uniq[nu - 1]) uniq[nu++] = uniq[i];
    }
    if (!rc) {
        /* The filter's columns, in ascending order as qv_expr_columns gives
         * them, are the batch's children in that order (map). */
        struct qv_file_scan_options fo = {.columns = (const char *const *)fnames, .n_columns = nf,
                                          .scan = {.validate = o->validate ? QV_SCAN_VALIDATE_FULL : 0,
                                                   .threads = o->threads}};
        rc = qv_file_take(file, uniq, nu, &fo, &st, err);
    }
    while (!rc) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc) {
            stream_error(&st, rc, err);
            break;
        }
        if (!b.release) break;
        uint8_t *bits = malloc((size_t)qv_bytes_for_bits(b.length) + 1);
        if (!bits || seen + b.length > nu) {
            rc = bits ? qv_error_set(err, EIO, "scan: the take returned more rows than asked")
                      : qv_error_set(err, ENOMEM, "scan: out of memory");
        } else {
            rc = qv_expr_eval(e, &b, map, bits, NULL, r, err);
            for (int64_t k = 0; !rc && k < b.length; k++)
                pass[seen + k] = (bits[k >> 3] >> (k & 7)) & 1;
            seen += b.length;
        }
        free(bits);
        b.release(&b);
    }
    if (!rc && seen != nu)
        rc = qv_error_set(err, EIO, "scan: the take of %lld rows returned %lld", (long long)nu,
                          (long long)seen);
    *n_kept = 0;
    for (int64_t i = 0; !rc && i < n; i++) {
        const int64_t *u = bsearch(&o->take[i], uniq, (size_t)nu, sizeof *uniq, cmp_i64);
        if (pass[u - uniq]) (*kept)[(*n_kept)++] = o->take[i];
    }
    if (st.release) st.release(&st);
    for (int32_t j = 0; fnames && j < nf; j++) free(fnames[j]);
    free(fnames);
    free(fcols);
    free(map);
    free(uniq);
    free(pass);
    qv_expr_destroy(e);
    return rc;
}

int cli_scan_open(struct qv_file *file, const struct cli_scan_options *opts,
                  struct qv_reservation *r, struct cli_scan **out, struct qv_error *err) {
    *out = NULL;
    struct cli_scan *s = calloc(1, sizeof *s);
    if (!s) return qv_error_set(err, ENOMEM, "scan: out of memory");
    s->limit = opts->limit;
    char *storage = NULL;
    const char **names = NULL;
    int32_t n = 0;
    int rc = opts->columns ? split_columns(opts->columns, &storage, &names, &n, err) : 0;
    struct qv_file_scan_options fo = {
        .columns = names,
        .n_columns = n,
        .scan = {
            .batch_rows = opts->batch_rows,
            .threads = opts->threads,
            .prefetch = opts->prefetch,
            /* Checksums prove the bytes are the ones written, not that they
             * decode to valid Arrow: the scan's workers check every column. */
            .validate = opts->validate ? QV_SCAN_VALIDATE_FULL : QV_SCAN_VALIDATE_NONE,
        },
    };
    bool increasing = true;
    for (int64_t i = 1; opts->take && i < opts->n_take && increasing; i++)
        increasing = opts->take[i] > opts->take[i - 1];
    if (rc) {
        /* nothing more */
    } else if (!opts->take || increasing) {
        /* The engine filters and limits rows it reads in file order. */
        static const int64_t none = 0;
        fo.scan.filter = opts->filter;
        fo.scan.take = opts->take ? (opts->n_take ? opts->take : &none) : NULL;
        fo.scan.n_take = opts->n_take;
        fo.scan.max_rows = opts->limit > 0 ? opts->limit : 0;
        rc = qv_file_scan(file, &fo, &s->stream, err);
    } else {
        /* Every row is checked against the file by the take, also those
         * beyond the limit (cli_scan_next stops at it). */
        int64_t *kept = NULL, n_kept = opts->n_take;
        if (opts->filter) rc = filter_take(file, opts, r, &kept, &n_kept, err);
        if (!rc) rc = qv_file_take(file, kept ? kept : opts->take, n_kept, &fo, &s->stream, err);
        free(kept);
    }
    free(storage);
    free(names);
    if (!rc) {
        struct ArrowSchema sc;
        rc = s->stream.get_schema(&s->stream, &sc);
        if (rc) {
            stream_error(&s->stream, rc, err);
        } else {
            rc = qv_schema_import(&sc, r, &s->schema, err);
            sc.release(&sc);
        }
    }
    if (rc) {
        cli_scan_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

int cli_scan_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err) {
    out->release = NULL;
    if (s->limit >= 0 && s->emitted >= s->limit) return 0;
    int rc = s->stream.get_next(&s->stream, out);
    if (rc) return stream_error(&s->stream, rc, err);
    if (!out->release) return 0;
    /* A take's rows past the limit: the batch ends early (a STRUCT batch
     * may be shorter than its children). */
    if (s->limit >= 0 && out->length > s->limit - s->emitted) out->length = s->limit - s->emitted;
    s->emitted += out->length;
    return 0;
}
