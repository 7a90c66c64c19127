/* Writing an Arrow stream to a new file: the loop every front end would
 * otherwise write around the writer (schema import, batches, interruption,
 * publish or abort). */
#include <stdio.h>

#include "file/file_internal.h"

/* The stream's error as a message naming the file. */
static int stream_failed(struct ArrowArrayStream *st, int rc, const char *path, const char *what,
                         struct qv_error *err) {
    const char *m = st->get_last_error ? st->get_last_error(st) : NULL;
    return qv_error_set(err, rc, "write '%.300s': input stream %s: %s", path, what,
                        m ? m : qv_errno_name(rc));
}

int qv_file_write_stream(const char *path, struct ArrowArrayStream *st,
                         const struct qv_file_write_options *opts, int64_t *rows_out,
                         uint64_t *bytes_out, struct qv_error *err) {
    static const struct qv_file_write_options defaults = {0};
    if (!opts) opts = &defaults;
    if (rows_out) *rows_out = 0;
    if (bytes_out) *bytes_out = 0;
    if (!path) return qv_error_set(err, EINVAL, "write: no path given");
    if (!st || !st->release) return qv_error_set(err, EINVAL, "write '%.300s': the stream is released", path);
    if (opts->row_group_rows < 0)
        return qv_error_set(err, EINVAL, "write '%.300s': row_group_rows %lld is negative", path,
                            (long long)opts->row_group_rows);
    struct qv_pool *pool = opts->pool, *own = NULL;
    int rc = 0;
    if (!pool) {
        char pname[128];
        snprintf(pname, sizeof pname, "write %.100s", path);
        struct qv_pool_options po = {.name = pname, .limit = opts->memory_limit};
        rc = qv_pool_create(&po, &own, err);
        pool = own;
    }
    struct qv_reservation *res = NULL;
    if (!rc) {
        struct qv_reservation_options ro = {.name = "file writer"};
        rc = qv_reservation_create(pool, &ro, &res, err);
    }
    struct qv_schema *schema = NULL;
    if (!rc) {
        struct ArrowSchema sch;
        sch.release = NULL;
        rc = st->get_schema(st, &sch);
        if (rc) {
            stream_failed(st, rc, path, "schema", err);
        } else {
            rc = qv_schema_import(&sch, res, &schema, err);
            sch.release(&sch);
            if (rc) qv_error_wrap(err, rc, "write '%.300s': ", path);
        }
    }
    struct qv_writer *w = NULL;
    if (!rc) {
        struct qv_writer_options wo = {.row_group_rows = opts->row_group_rows,
                                       .row_group_bytes = opts->row_group_bytes,
                                       .compact = opts->compact,
                                       .random_access = opts->random_access,
                                       .metadata = opts->metadata,
                                       .n_metadata = opts->n_metadata,
                                       .durability = opts->durability};
        if (opts->threads == QV_WRITER_INLINE) wo.max_in_flight = QV_WRITER_INLINE;
        else wo.threads = opts->threads;
        rc = qv_writer_open(path, schema, &wo, res, &w, err);
    }
    while (!rc) {
        if (opts->interrupted && opts->interrupted(opts->interrupted_arg)) {
            rc = qv_error_set(err, ECANCELED, "write '%.300s': interrupted", path);
            break;
        }
        struct ArrowArray b;
        b.release = NULL;
        rc = st->get_next(st, &b);
        if (rc) {
            stream_failed(st, rc, path, "batch", err);
            break;
        }
        if (!b.release) break;
        /* Moved in, not copied: the writer holds the stream's buffers until
         * the row groups holding their rows are written, and releases them
         * on this thread (docs/format.md, "The writer pipeline"). Copying
         * each batch into the writer's builder first made a one-thread
         * write 1.08-1.10x slower and held a copy of every row group in
         * flight (docs/file.md; bench/bench_write_paths.c). */
        rc = qv_writer_write_owned(w, &b, err);
    }
    if (!rc) rc = qv_writer_finish(w, err);
    if (!rc) {
        if (rows_out) *rows_out = qv_writer_rows_written(w);
        if (bytes_out) *bytes_out = qv_writer_bytes_written(w);
    }
    qv_writer_close(w); /* aborts an unfinished file: nothing is left under `path` */
    qv_schema_destroy(schema);
    qv_reservation_destroy(res);
    qv_pool_destroy(own);
    return rc;
}
