/* The .qvr writer: its public calls, the input paths (copying into the
 * builder, the row builder, arrays moved in) and the footer and tail on
 * finish. Row groups are sealed and encoded by writer_pipeline.c and
 * writer_encode.c. */
#include <stdio.h>
#include <string.h>

#include "encoding/lesson.h"
#include "format/format_testing.h"
#include "format/writer_internal.h"

int qv__writer_fail(struct qv_writer *w, int rc, struct qv_error *err) {
    if (!w->failed) {
        w->failed = rc;
        if (err) w->failure = *err;
        else qv_error_set(&w->failure, rc, "writer failed (%s)", qv_errno_name(rc));
    }
    return rc;
}

static int fail(struct qv_writer *w, int rc, struct qv_error *err) {
    return qv__writer_fail(w, rc, err);
}

/* Every call starts here: arrays of row groups the worker has written are
 * released now, on the caller's thread, and a failure of the worker
 * surfaces. */
static int check_usable(struct qv_writer *w, struct qv_error *err) {
    if (w->finished) return qv_error_set(err, EINVAL, "writer '%s': already finished", w->sink.name);
    if (!w->failed) qv__writer_reap(w, err);
    if (w->failed) {
        if (err) *err = w->failure;
        return w->failed;
    }
    return 0;
}

static int write_bytes(struct qv_writer *w, const void *p, size_t n, struct qv_error *err) {
    int rc = qv_sink_write(&w->sink, p, n, err);
    return rc ? fail(w, rc, err) : 0;
}

static void abort_sink(struct qv_writer *w) {
    if (!w->aborted) qv_sink_abort(&w->sink);
    w->aborted = 1;
}

/* Checks the file metadata table and bounds its serialized size before
 * anything is copied. */
static int check_metadata(const char *name, const struct qv_kv *kv, int64_t n,
                          struct qv_error *err) {
    if (n < 0 || (n > 0 && !kv))
        return qv_error_set(err, EINVAL, "writer '%s': %lld metadata pairs but no table", name,
                            (long long)n);
    uint64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!kv[i].key || (!kv[i].value && kv[i].value_len != 0))
            return qv_error_set(err, EINVAL, "writer '%s': metadata pair %lld has a NULL %s", name,
                                (long long)i, kv[i].key ? "value" : "key");
        total += (kv[i].key_len >= 0 ? (uint64_t)kv[i].key_len : strlen(kv[i].key)) +
                 (kv[i].value_len >= 0 ? (uint64_t)kv[i].value_len
                                       : (kv[i].value ? strlen(kv[i].value) : 0));
        if (total > QV__MAX_FOOTER_BYTES)
            return qv_error_set(err, EINVAL,
                                "writer '%s': file metadata of more than %llu bytes (at pair "
                                "%lld) exceeds the format's footer limit of %llu bytes",
                                name, (unsigned long long)total, (long long)i,
                                (unsigned long long)QV__MAX_FOOTER_BYTES);
    }
    return 0;
}

static int footer_too_big(const char *name, uint64_t size, const char *when,
                          struct qv_error *err) {
    if (!*when)
        return qv_error_set(err, EINVAL,
                            "writer '%s': the schema and metadata alone make a footer of %llu "
                            "bytes, more than the format's limit of %llu bytes",
                            name, (unsigned long long)size,
                            (unsigned long long)QV__MAX_FOOTER_BYTES);
    return qv_error_set(err, EINVAL,
                        "writer '%s': %s the footer would take %llu bytes, more than the "
                        "format's limit of %llu bytes (write fewer, larger row groups or fewer "
                        "columns per file)",
                        name, when, (unsigned long long)size,
                        (unsigned long long)QV__MAX_FOOTER_BYTES);
}

/* The encoding threads' slots (none started yet) and the per-column
 * tables they use. `threads` 0 is the cores, at most 4, like the scan. */
static int threads_new(struct qv_writer *w, struct qv_error *err) {
    int n = w->opts.threads;
    if (n == 0) {
        n = qv_cpu_count();
        if (n > 4) n = 4;
    }
    w->n_workers = n;
    w->n_columns = (int32_t)w->schema->root.n_children;
    size_t nc = (size_t)(w->n_columns ? w->n_columns : 1);
    w->workers = qv_calloc(w->r, (size_t)n * sizeof *w->workers, err);
    w->col_ns = w->workers ? qv_calloc(w->r, nc * sizeof *w->col_ns, err) : NULL;
    w->col_node = w->col_ns ? qv_calloc(w->r, nc * sizeof *w->col_node, err) : NULL;
    w->taught = w->col_node ? qv_calloc(w->r, nc, err) : NULL;
    w->lessons = w->taught ? qv_calloc(w->r, (size_t)(w->n_nodes ? w->n_nodes : 1) *
                                                 sizeof *w->lessons, err)
                           : NULL;
    if (!w->lessons) return ENOMEM;
    for (int i = 0; i < n; i++) w->workers[i].w = w;
    for (int32_t c = 0, k = 0; c < w->n_columns; c++, k = w->nodes[k].subtree_end)
        w->col_node[c] = k;
    return 0;
}

/* Everything but the sink: options, schema limits, the footer's head. A
 * schema or metadata the reader would refuse is refused here, before any
 * byte (or file) is written. `name` is for messages. */
static int writer_new(const char *name, const struct qv_schema *schema,
                      const struct qv_writer_options *opts, struct qv_reservation *r,
                      struct qv_writer **out, struct qv_error *err) {
    static const struct qv_writer_options defaults = {0};
    *out = NULL;
    if (!opts) opts = &defaults;
    if (!schema || !r)
        return qv_error_set(err, EINVAL, "writer '%s': NULL %s", name, !r ? "reservation" : "schema");
    /* Row groups hold exactly row_group_rows rows (the last one fewer);
     * a chunk must hold its rows and a list's children. */
    if (opts->row_group_rows < 0 || opts->row_group_rows > QV_WRITER_MAX_ROW_GROUP_ROWS)
        return qv_error_set(err, EINVAL,
                            "writer '%s': row_group_rows %lld is outside 1..%lld (0 = default)",
                            name, (long long)opts->row_group_rows,
                            (long long)QV_WRITER_MAX_ROW_GROUP_ROWS);
    if (opts->max_in_flight < QV_WRITER_INLINE)
        return qv_error_set(err, EINVAL,
                            "writer '%s': max_in_flight %d is negative (0 = 2, -1 = encode inline)",
                            name, opts->max_in_flight);
    if (opts->threads < 0 || opts->threads > QV_WRITER_MAX_THREADS)
        return qv_error_set(err, EINVAL,
                            "writer '%s': threads %d is outside 1..%d (0 = the cores, at most 4)",
                            name, opts->threads, QV_WRITER_MAX_THREADS);
    if (opts->durability != QV_DURABLE && opts->durability != QV_NOT_DURABLE)
        return qv_error_set(err, EINVAL,
                            "writer '%s': durability %d is neither %d (durable) nor %d (not durable)",
                            name, opts->durability, QV_DURABLE, QV_NOT_DURABLE);
    if (opts->compact && opts->random_access)
        return qv_error_set(err, EINVAL,
                            "writer '%s': compact and random_access exclude each other (compact "
                            "files are small by their frames, which random_access leaves out)",
                            name);
    uint32_t allowed = opts->allowed_encodings;
    if (opts->random_access) {
        allowed = (allowed ? allowed : QV_ENC_ALL_MASK) & ~QV_ENC_FRAMED_MASK;
        if (!(allowed & QV_ENC_ALL_MASK))
            return qv_error_set(err, EINVAL,
                                "writer '%s': allowed_encodings 0x%x holds only frame encodings, "
                                "which random_access leaves out",
                                name, opts->allowed_encodings);
    }
    int rc = check_metadata(name, opts->metadata, opts->n_metadata, err);
    if (rc) return rc;
    struct qv_writer *w = qv_calloc(r, sizeof *w, err);
    if (!w) return ENOMEM;
    w->r = r;
    w->opts = *opts;
    w->opts.allowed_encodings = allowed;
    w->max_in_flight = opts->max_in_flight ? opts->max_in_flight : 2;
    atomic_init(&w->cancel, 0);
    w->aborted = 1; /* no sink yet */
    if (qv_mutex_init(&w->mu) || qv_cond_init(&w->work) || qv_cond_init(&w->done) ||
        qv_cond_init(&w->learned)) {
        qv_free(r, w, sizeof *w);
        return qv_error_set(err, ENOMEM, "writer '%s': cannot create its locks", name);
    }
    w->sync_ready = 1;
    /* The builder's buffers and the encoder's memory are charged to
     * reservations of their own in r's pool: the encoder's belongs to the
     * worker while it runs, and the builder's tells how much the row group
     * in the making holds. */
    struct qv_reservation_options bro = {.name = "writer builder"}, ero = {.name = "writer encoder"},
                                  lro = {.name = "writer lessons"};
    rc = qv_reservation_create(qv_reservation_pool(r), &bro, &w->br, err);
    if (!rc) rc = qv_reservation_create(qv_reservation_pool(r), &ero, &w->er, err);
    if (!rc) rc = qv_reservation_create(qv_reservation_pool(r), &lro, &w->lr, err);
    if (rc) {
        qv_writer_close(w);
        return rc;
    }
    if (w->opts.row_group_rows == 0) w->opts.row_group_rows = 131072;
    if (!w->opts.row_group_bytes) w->opts.row_group_bytes = UINT64_C(256) << 20;
    w->opts.metadata = NULL;
    w->opts.n_metadata = 0;
    qv__wbuf_init(&w->dir, w->er);
    qv__wbuf_init(&w->rgdir, w->er);
    qv__wbuf_init(&w->blocks, w->er);
    qv__wbuf_init(&w->rgblocks, w->er);
    rc = qv_schema_copy(schema, r, &w->schema, err);
    if (!rc) rc = qv__nodes_build(w->schema, r, &w->nodes, &w->n_nodes, err);
    if (rc && rc != ENOMEM) qv_error_wrap(err, rc, "writer '%s': schema: ", name);
    if (!rc) rc = threads_new(w, err);
    if (!rc) {
        qv__footer_head(&w->dir, w->schema, w->n_nodes, opts->metadata, opts->n_metadata);
        static const uint8_t room[QV__RG_HEADER_MAX];
        w->head_size = w->dir.size;
        qv__wbuf_put(&w->dir, room, sizeof room);
        w->dir_start = w->dir.size;
        if (w->dir.failed) {
            if (err) *err = w->dir.err;
            rc = ENOMEM;
        }
    }
    if (!rc) {
        uint64_t size = qv__footer_size(w->head_size, 0, w->n_nodes, 0) +
                        qv__footer_block_section_size(0);
        if (size > QV__MAX_FOOTER_BYTES) rc = footer_too_big(name, size, "", err);
    }
    if (!rc) {
        /* Small start: 64 rows, doubling (builder.c); back to 64 after
         * each row group (qv__builder_restart). */
        struct qv_builder_options bo = {.initial_capacity = 64};
        rc = qv_builder_create(w->schema, w->br, &bo, &w->builder, err);
    }
    if (rc) {
        qv_writer_close(w);
        return rc;
    }
    w->br_base = qv_reservation_used(w->br);
    qv_reservation_release_slack(w->br);
    qv_reservation_release_slack(w->er);
    *out = w;
    return 0;
}

/* Moves the sink into the writer and writes the header. */
static int attach_sink(struct qv_writer *w, struct qv_sink *sink, struct qv_error *err) {
    w->sink = *sink;
    memset(sink, 0, sizeof *sink);
    w->aborted = 0;
    uint8_t header[QV__HEADER_SIZE] = {'Q', 'V', 'R', '1', QV__FORMAT_MAJOR, 0, QV__FORMAT_MINOR, 0};
    return qv_sink_write(&w->sink, header, sizeof header, err);
}

int qv_writer_open_sink(struct qv_sink *sink, const struct qv_schema *schema,
                        const struct qv_writer_options *opts, struct qv_reservation *r,
                        struct qv_writer **out, struct qv_error *err) {
    *out = NULL;
    struct qv_writer *w;
    int rc = writer_new(sink->name ? sink->name : "", schema, opts, r, &w, err);
    if (rc) {
        qv_sink_abort(sink);
        qv_sink_close(sink);
        return rc;
    }
    rc = attach_sink(w, sink, err);
    if (rc) {
        qv_writer_close(w);
        return rc;
    }
    *out = w;
    return 0;
}

int qv_writer_open(const char *path, const struct qv_schema *schema,
                   const struct qv_writer_options *opts, struct qv_reservation *r,
                   struct qv_writer **out, struct qv_error *err) {
    *out = NULL;
    if (!path) return qv_error_set(err, EINVAL, "writer: NULL path");
    /* Everything that can be refused is refused before the file exists. */
    struct qv_writer *w;
    int rc = writer_new(path, schema, opts, r, &w, err);
    if (rc) return rc;
    struct qv_sink sink;
    rc = qv_sink_open_file_durability(path, w->opts.durability, &sink, err);
    if (rc) {
        qv_writer_close(w);
        return rc;
    }
    rc = attach_sink(w, &sink, err);
    if (rc) {
        qv_writer_close(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* Seals the row group in the making when it holds row_group_rows rows or
 * row_group_bytes bytes (builder buffers and owned arrays alike). */
static int maybe_seal(struct qv_writer *w, struct qv_error *err) {
    int64_t rows = qv_builder_num_rows(w->builder) + (w->open ? w->open->rows : 0);
    if (rows >= w->opts.row_group_rows || qv__writer_open_bytes(w) >= w->opts.row_group_bytes)
        return qv__writer_seal(w, err);
    return 0;
}

/* Of the n rows of `batch` from `done`, as many as fill the row group's
 * byte budget (at least 1; the rest go to the next row group; rows of one
 * batch are about alike in size). Both input paths cut batches this way. */
static int64_t rows_in_budget(struct qv_writer *w, const struct ArrowArray *batch, int64_t done,
                              int64_t n) {
    uint64_t have = qv__writer_open_bytes(w), limit = w->opts.row_group_bytes;
    uint64_t bytes = qv__array_bytes(w->nodes, w->n_nodes, -1, batch, done, n);
    if (n > 1 && have < limit && bytes > limit - have) {
        long double part = (long double)(limit - have) / (long double)bytes;
        int64_t m = (int64_t)(part * (long double)n) + 1;
        if (m < n) n = m;
    }
    return n;
}

int qv_writer_write(struct qv_writer *w, const struct ArrowArray *batch, struct qv_error *err) {
    int rc = check_usable(w, err);
    if (rc) return rc;
    rc = qv_arrow_array_validate(batch, &w->schema->root, QV_VALIDATE_CHEAP, err);
    if (rc) {
        qv_error_wrap(err, rc, "writer '%s': batch: ", w->sink.name);
        return rc; /* a rejected batch does not fail the writer: nothing was taken */
    }
    /* Slices up to the row group's room, and no more rows than fill the byte
     * budget (as write_owned cuts): the builder then grows to a row group
     * with one reservation instead of doubling from 64 Ki rows (a copy of
     * half a row group per column). */
    for (int64_t done = 0; done < batch->length;) {
        int64_t room = w->opts.row_group_rows - qv_builder_num_rows(w->builder) -
                       (w->open ? w->open->rows : 0);
        if (room <= 0) {
            /* Rows the row builder appended past the row group's size. */
            rc = qv__writer_seal(w, err);
            if (rc) return rc;
            continue;
        }
        int64_t n = batch->length - done;
        if (n > room) n = room;
        n = rows_in_budget(w, batch, done, n);
        rc = qv_builder_append_batch(w->builder, batch, done, n, err);
        if (rc) return fail(w, rc, err);
        done += n;
        rc = maybe_seal(w, err);
        if (rc) return rc;
    }
    return 0;
}

int qv_writer_write_owned(struct qv_writer *w, struct ArrowArray *batch, struct qv_error *err) {
    if (!batch || !batch->release) {
        if (batch) batch->release = NULL;
        return qv_error_set(err, EINVAL, "writer '%s': write_owned: %s batch",
                            w ? w->sink.name : "", batch ? "a released" : "a NULL");
    }
    struct ArrowArray moved = *batch;
    batch->release = NULL;
    int rc = w ? check_usable(w, err) : qv_error_set(err, EINVAL, "write_owned: NULL writer");
    if (!rc) {
        rc = qv_arrow_array_validate(&moved, &w->schema->root, QV_VALIDATE_CHEAP, err);
        if (!rc && moved.buffers[0] && moved.null_count != 0 && moved.length > 0 &&
            qv_bits_count(moved.buffers[0], moved.offset, moved.length) != moved.length)
            rc = qv_error_set(err, EINVAL, "the batch has null rows at the top level");
        /* A refused batch does not fail the writer: it is released and the
         * writer goes on. */
        if (rc) qv_error_wrap(err, rc, "writer '%s': batch: ", w->sink.name);
    }
    if (rc) {
        moved.release(&moved);
        return rc;
    }
    struct qv__held *h = qv_calloc(w->r, sizeof *h, err);
    if (!h) {
        moved.release(&moved);
        return fail(w, ENOMEM, err);
    }
    h->array = moved;
    h->refs = 1; /* this call's, so the rows not yet placed keep it alive */
    h->bytes = qv__array_bytes(w->nodes, w->n_nodes, -1, &moved, 0, moved.length);
    w->owned_held += h->bytes;
    /* Rows buffered in the builder come first. */
    rc = qv__writer_take_builder(w, err);
    for (int64_t done = 0; !rc && done < moved.length;) {
        int64_t n = moved.length - done;
        int64_t room = w->opts.row_group_rows - (w->open ? w->open->rows : 0);
        if (room <= 0) {
            /* The builder's rows filled the row group already. */
            rc = qv__writer_seal(w, err);
            continue;
        }
        if (n > room) n = room;
        n = rows_in_budget(w, &moved, done, n);
        rc = qv__writer_add_piece(w, h, done, n, err);
        if (!rc) rc = maybe_seal(w, err);
        done += n;
    }
    /* Drops this call's reference: a batch no row group took (no rows, or
     * a failure) is released now. */
    qv__writer_held_unref(w, h);
    return rc;
}

int qv_writer_write_stream(struct qv_writer *w, struct ArrowArrayStream *stream,
                           struct qv_error *err) {
    int rc = check_usable(w, err);
    if (rc) return rc;
    struct ArrowSchema sch;
    rc = stream->get_schema(stream, &sch);
    if (rc) {
        const char *m = stream->get_last_error ? stream->get_last_error(stream) : NULL;
        return qv_error_set(err, rc, "writer '%s': input stream schema: %s", w->sink.name,
                            m ? m : qv_errno_name(rc));
    }
    struct qv_schema *in = NULL;
    rc = qv_schema_import(&sch, w->r, &in, err);
    sch.release(&sch);
    if (rc) return rc;
    int same = qv_schema_equal(in, w->schema, QV_EQUAL_IGNORE_METADATA);
    qv_schema_destroy(in);
    if (!same)
        return qv_error_set(err, EINVAL, "writer '%s': input stream schema differs from the file's",
                            w->sink.name);
    for (;;) {
        struct ArrowArray b;
        memset(&b, 0, sizeof b);
        rc = stream->get_next(stream, &b);
        if (rc) {
            const char *m = stream->get_last_error ? stream->get_last_error(stream) : NULL;
            return qv_error_set(err, rc, "writer '%s': input stream: %s", w->sink.name,
                                m ? m : qv_errno_name(rc));
        }
        if (!b.release) return 0;
        rc = qv_writer_write(w, &b, err);
        b.release(&b);
        if (rc) return rc;
    }
}

struct qv_builder *qv_writer_builder(struct qv_writer *w) { return w->builder; }

void qv_writer_force_encoding(struct qv_writer *w, int encoding) { w->force_encoding = encoding; }

void qv_writer_set_encode_hook(struct qv_writer *w, int (*hook)(void *, int64_t, int32_t),
                               void *ctx) {
    w->hook = hook;
    w->hook_ctx = ctx;
}

int qv_writer_cancel_requested(struct qv_writer *w) { return atomic_load(&w->cancel); }

int qv_writer_has_worker(const struct qv_writer *w) { return w->has_thread; }

int qv_writer_end_rows(struct qv_writer *w, struct qv_error *err) {
    int rc = check_usable(w, err);
    if (rc) return rc;
    const struct qv_error *be = qv_builder_error(w->builder);
    if (be->code) {
        if (err) *err = *be;
        return fail(w, be->code, err);
    }
    return maybe_seal(w, err);
}

int qv_writer_finish(struct qv_writer *w, struct qv_error *err) {
    int rc = check_usable(w, err);
    if (rc) return rc;
    rc = qv__writer_drain(w, err);
    if (rc) {
        qv__writer_stop(w);
        abort_sink(w);
        return rc;
    }
    /* Complete the footer in place: the row-group section's header goes
     * right before the directory, and the head moves up against it. */
    uint64_t dir_bytes = w->dir.size - w->dir_start;
    uint8_t hdr[QV__RG_HEADER_MAX];
    size_t hlen = qv__footer_rg_header(hdr, w->enc_row_groups, w->n_nodes, dir_bytes);
    size_t start = w->dir_start - hlen - w->head_size;
    memmove(w->dir.data + start, w->dir.data, w->head_size);
    memcpy(w->dir.data + w->dir_start - hlen, hdr, hlen);
    /* Section 5 last: a reader finds every segment's first block by
     * counting the blocks of the segments before it. */
    qv__footer_block_section(&w->dir, w->blocks.data, w->blocks.size);
    if (w->dir.failed || w->blocks.failed) {
        if (err) *err = w->dir.failed ? w->dir.err : w->blocks.err;
        rc = fail(w, ENOMEM, err);
        abort_sink(w);
        return rc;
    }
    const uint8_t *footer = w->dir.data + start;
    size_t footer_size = w->dir.size - start;
    /* Encoding each row group and open keep it within the limit; a file the reader
     * would refuse is never published. */
    if (footer_size > QV__MAX_FOOTER_BYTES) {
        footer_too_big(w->sink.name, footer_size, "at finish,", err);
        rc = fail(w, EINVAL, err);
        abort_sink(w);
        return rc;
    }
    uint8_t tail[QV__TAIL_SIZE];
    qv__put_u64le(tail, w->sink.position);
    qv__put_u64le(tail + 8, footer_size);
    qv__put_u64le(tail + 16, qv_hash64(footer, footer_size, 0));
    tail[24] = QV__FORMAT_MAJOR;
    tail[25] = 0;
    tail[26] = QV__FORMAT_MINOR;
    tail[27] = 0;
    memcpy(tail + 28, QV__MAGIC, 4);
    rc = write_bytes(w, footer, footer_size, err);
    if (!rc) rc = write_bytes(w, tail, sizeof tail, err);
    if (!rc) rc = qv_sink_finish(&w->sink, err);
    if (rc) {
        rc = fail(w, rc, err);
        abort_sink(w);
        return rc;
    }
    w->bytes_written = w->sink.position;
    w->finished = 1;
    return 0;
}

void qv_writer_abort(struct qv_writer *w) {
    if (!w || w->finished) return;
    /* The worker first (it may be writing to the sink), then the file. */
    qv__writer_stop(w);
    abort_sink(w);
    if (!w->failed) {
        w->failed = ECANCELED;
        qv_error_set(&w->failure, ECANCELED, "writer '%s': aborted", w->sink.name);
    }
}

void qv_writer_close(struct qv_writer *w) {
    if (!w) return;
    if (w->builder) qv__writer_stop(w); /* joins the worker, releases every held array */
    if (!w->finished) abort_sink(w);
    qv_sink_close(&w->sink);
    qv_builder_destroy(w->builder);
    if (w->workers) {
        for (int i = 0; i < w->n_workers; i++) {
            qv_builder_destroy(w->workers[i].joiner);
            qv_reservation_destroy(w->workers[i].jr);
            qv__zcache_destroy(w->workers[i].zc);
        }
        qv_free(w->r, w->workers, (size_t)w->n_workers * sizeof *w->workers);
    }
    size_t nc = (size_t)(w->n_columns ? w->n_columns : 1);
    if (w->col_ns) qv_free(w->r, w->col_ns, nc * sizeof *w->col_ns);
    if (w->col_node) qv_free(w->r, w->col_node, nc * sizeof *w->col_node);
    if (w->taught) qv_free(w->r, w->taught, nc);
    if (w->lessons) {
        for (int32_t k = 0; k < w->n_nodes; k++)
            if (w->lessons[k]) qv_free(w->lr, w->lessons[k], sizeof *w->lessons[k]);
        qv_free(w->r, w->lessons, (size_t)(w->n_nodes ? w->n_nodes : 1) * sizeof *w->lessons);
    }
    qv__wbuf_free(&w->dir);
    qv__wbuf_free(&w->rgdir);
    qv__wbuf_free(&w->blocks);
    qv__wbuf_free(&w->rgblocks);
    if (w->nodes) qv_free(w->r, w->nodes, (size_t)(w->n_nodes ? w->n_nodes : 1) * sizeof *w->nodes);
    qv_schema_destroy(w->schema);
    qv_reservation_destroy(w->br);
    qv_reservation_destroy(w->er);
    qv_reservation_destroy(w->lr);
    if (w->sync_ready) {
        qv_cond_destroy(&w->work);
        qv_cond_destroy(&w->done);
        qv_cond_destroy(&w->learned);
        qv_mutex_destroy(&w->mu);
    }
    qv_free(w->r, w, sizeof *w);
}

int64_t qv_writer_rows_written(const struct qv_writer *w) { return w->rows_written; }
/* With a worker the sink's position moves on another thread: the figure is
 * the one of the last row group released (or of finish). */
uint64_t qv_writer_bytes_written(const struct qv_writer *w) {
    return w->has_thread || w->finished ? w->bytes_written : w->sink.position;
}

uint64_t qv_writer_buffered_bytes(const struct qv_writer *w) {
    return w->owned_held + w->br_held + qv__writer_open_bytes(w) -
           (w->open ? w->open->bytes : 0);
}
