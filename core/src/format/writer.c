/* The .qvr writer: buffers rows in a batch builder, encodes each row group's
 * column chunks with the cascade, writes segments with checksums, and the
 * footer and tail on finish. */
#include <stdio.h>
#include <string.h>

#include "format/format_internal.h"
#include "format/format_testing.h"

struct qv_writer {
    struct qv_reservation *r;
    struct qv_sink sink;
    struct qv_schema *schema;
    struct qv__node *nodes;
    int32_t n_nodes;
    struct qv_builder *builder;
    struct qv_writer_options opts;
    int force_encoding;     /* QV_ENC_AUTO unless a test forced one (format_testing.h) */
    /* The footer in the making: the head (writer, schema and metadata
     * sections, serialized at open), QV__RG_HEADER_MAX bytes of room for the
     * row-group section's header, then the directory records appended as
     * row groups are written. Finish fills the room in place. */
    struct qv__wbuf dir;
    size_t head_size, dir_start;
    struct qv__wbuf rgdir;  /* the current row group's chunk records */
    int64_t n_row_groups, rows_written;
    int failed;             /* sticky error code */
    struct qv_error failure;
    int finished, aborted;
};

static int fail(struct qv_writer *w, int rc, struct qv_error *err) {
    if (!w->failed) {
        w->failed = rc;
        if (err) w->failure = *err;
        else qv_error_set(&w->failure, rc, "writer failed (%s)", qv_errno_name(rc));
    }
    return rc;
}

static int check_usable(struct qv_writer *w, struct qv_error *err) {
    if (w->finished) return qv_error_set(err, EINVAL, "writer '%s': already finished", w->sink.name);
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
    int rc = check_metadata(name, opts->metadata, opts->n_metadata, err);
    if (rc) return rc;
    struct qv_writer *w = qv_calloc(r, sizeof *w, err);
    if (!w) return ENOMEM;
    w->r = r;
    w->opts = *opts;
    if (w->opts.row_group_rows == 0) w->opts.row_group_rows = 131072;
    if (!w->opts.row_group_bytes) w->opts.row_group_bytes = UINT64_C(256) << 20;
    w->opts.metadata = NULL;
    w->opts.n_metadata = 0;
    qv__wbuf_init(&w->dir, r);
    qv__wbuf_init(&w->rgdir, r);
    rc = qv_schema_copy(schema, r, &w->schema, err);
    if (!rc) rc = qv__nodes_build(w->schema, r, &w->nodes, &w->n_nodes, err);
    if (rc && rc != ENOMEM) qv_error_wrap(err, rc, "writer '%s': schema: ", name);
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
        uint64_t size = qv__footer_size(w->head_size, 0, w->n_nodes, 0);
        if (size > QV__MAX_FOOTER_BYTES) rc = footer_too_big(name, size, "", err);
    }
    if (!rc) {
        struct qv_builder_options bo = {.initial_capacity = 1024};
        rc = qv_builder_create(w->schema, r, &bo, &w->builder, err);
    }
    if (rc) {
        w->aborted = 1; /* no sink yet */
        qv_writer_close(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* Moves the sink into the writer and writes the header. */
static int attach_sink(struct qv_writer *w, struct qv_sink *sink, struct qv_error *err) {
    w->sink = *sink;
    memset(sink, 0, sizeof *sink);
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
    rc = qv_sink_open_file(path, &sink, err);
    if (rc) {
        qv_writer_close(w);
        return rc;
    }
    w->aborted = 0;
    rc = attach_sink(w, &sink, err);
    if (rc) {
        qv_writer_close(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* Encodes one segment and writes it. */
static int put_segment(struct qv_writer *w, const struct qv_values *v, uint8_t role,
                       int force, struct qv__segment *seg, const char *path,
                       struct qv_error *err) {
    struct qv_encode_options eo = {
        .force = force,
        .allowed = w->opts.allowed_encodings,
        .compact = w->opts.compact,
    };
    struct qv_encoded enc = {0};
    int rc = qv_encode(v, &eo, w->r, &enc, err);
    if (rc) {
        qv_error_wrap(err, rc, "writer '%s': row group %lld, column '%s': ", w->sink.name,
                      (long long)w->n_row_groups, path);
        return rc;
    }
    seg->role = role;
    seg->kind = (uint8_t)v->kind;
    seg->fixed_width = v->kind == QV_KIND_FIXED_BINARY ? v->fixed_width : 0;
    seg->count = v->count;
    seg->offset = w->sink.position;
    seg->length = enc.size;
    seg->checksum = qv_hash64(enc.data, enc.size, 0);
    rc = qv_sink_write(&w->sink, enc.data, enc.size, err);
    qv_encoded_release(w->r, &enc);
    return rc;
}

static uint64_t bitmap_bytes(int64_t n) { return (uint64_t)qv_bytes_for_bits(n); }

/* Writes the chunk of node `k` (and its subtree) from `arr`, an array of
 * the builder's output (offset 0, offsets starting at 0). */
static int put_node(struct qv_writer *w, int32_t k, const struct ArrowArray *arr,
                    struct qv_error *err) {
    const struct qv__node *node = &w->nodes[k];
    struct qv__segment segs[3];
    uint32_t ns = 0;
    char path[512];
    qv__node_path(w->nodes, k, path, sizeof path);
    int64_t n = arr->length;
    int64_t nulls = node->kind == QV__NODE_NULL ? 0 : arr->null_count;
    const uint8_t *validity = arr->n_buffers > 0 ? arr->buffers[0] : NULL;
    if (nulls < 0 || (nulls > 0 && !validity)) nulls = validity ? n - qv_bits_count(validity, 0, n) : 0;
    if (arr->offset != 0)
        return qv_error_set(err, EINVAL, "writer: column '%s': unexpected offset %lld in buffered batch",
                            path, (long long)arr->offset);
    uint64_t raw = nulls ? bitmap_bytes(n) : 0;
    int rc = 0;
    if (nulls) {
        struct qv_values v = {.kind = QV_KIND_BOOL, .count = n, .values = validity};
        rc = put_segment(w, &v, QV_SEGMENT_VALIDITY, QV_ENC_AUTO, &segs[ns++], path, err);
        if (rc) return rc;
    } else {
        validity = NULL;
    }
    struct qv__stats_buf st;
    memset(&st.s, 0, sizeof st.s);
    if (node->kind == QV__NODE_PRIMITIVE || node->kind == QV__NODE_DECIMAL64) {
        struct qv_values v = {.kind = node->value_kind, .fixed_width = node->fixed_width, .count = n};
        int64_t *narrow = NULL;
        size_t narrow_size = (size_t)(n ? n : 1) * 8;
        if (node->kind == QV__NODE_DECIMAL64) {
            /* Precision <= 18: the low 8 bytes of each 16-byte two's
             * complement value hold it exactly. */
            narrow = qv_alloc(w->r, narrow_size, err);
            if (!narrow) return ENOMEM;
            const uint8_t *src = arr->buffers[1];
            for (int64_t i = 0; i < n; i++) memcpy(&narrow[i], src + (size_t)i * 16, 8);
            v.values = narrow;
            raw += (uint64_t)n * 16;
        } else if (v.kind == QV_KIND_BINARY || v.kind == QV_KIND_LARGE_BINARY) {
            v.values = arr->buffers[1];
            v.data = arr->buffers[2];
            int w8 = v.kind == QV_KIND_BINARY ? 4 : 8;
            int64_t dlen = v.kind == QV_KIND_BINARY ? ((const int32_t *)v.values)[n]
                                                    : ((const int64_t *)v.values)[n];
            raw += (uint64_t)(n + 1) * (uint64_t)w8 + (uint64_t)dlen;
        } else if (v.kind == QV_KIND_BOOL) {
            v.values = arr->buffers[1];
            raw += bitmap_bytes(n);
        } else {
            v.values = arr->buffers[1];
            raw += (uint64_t)n * (uint64_t)qv__kind_width(v.kind, v.fixed_width);
        }
        qv__stats_compute(node, &v, validity, &st);
        rc = put_segment(w, &v, QV_SEGMENT_VALUES, w->force_encoding, &segs[ns++], path, err);
        if (narrow) qv_free(w->r, narrow, narrow_size);
        if (rc) return rc;
    } else if (node->kind == QV__NODE_LIST) {
        struct qv_values v = {.kind = node->value_kind, .count = n + 1, .values = arr->buffers[1]};
        raw += (uint64_t)(n + 1) * (node->value_kind == QV_KIND_INT32 ? 4u : 8u);
        rc = put_segment(w, &v, QV_SEGMENT_OFFSETS, QV_ENC_AUTO, &segs[ns++], path, err);
        if (rc) return rc;
    }
    qv__dir_chunk(&w->rgdir, n, nulls, raw, segs, ns, &st.s);
    /* Children of a node are the pre-order subtrees that follow it. */
    for (int32_t c = 0, child = node->first_child; c < node->n_children;
         c++, child = w->nodes[child].subtree_end) {
        if (c >= arr->n_children)
            return qv_error_set(err, EINVAL, "writer: column '%s': batch lacks child %d", path, c);
        rc = put_node(w, child, arr->children[c], err);
        if (rc) return rc;
    }
    return 0;
}

static int flush_row_group(struct qv_writer *w, struct qv_error *err) {
    if (qv_builder_num_rows(w->builder) == 0) return 0;
    struct ArrowArray batch;
    int rc = qv_builder_finish(w->builder, &batch, err);
    if (rc) return fail(w, rc, err);
    uint64_t start = w->sink.position;
    w->rgdir.size = 0;
    int32_t k = 0;
    for (int64_t c = 0; c < batch.n_children && !rc; c++) {
        rc = put_node(w, k, batch.children[c], err);
        k = w->nodes[k].subtree_end;
    }
    int64_t rows = batch.length;
    batch.release(&batch);
    if (!rc && (w->rgdir.failed || w->dir.failed)) {
        if (err) *err = w->rgdir.failed ? w->rgdir.err : w->dir.err;
        rc = ENOMEM;
    }
    if (rc) return fail(w, rc, err);
    qv__dir_row_group(&w->dir, rows, start, w->sink.position - start);
    qv__wbuf_put(&w->dir, w->rgdir.data, w->rgdir.size);
    if (w->dir.failed) {
        if (err) *err = w->dir.err;
        return fail(w, ENOMEM, err);
    }
    /* The footer grows with every row group: refuse the one that would make
     * it unreadable now, not at finish after more data. */
    uint64_t size = qv__footer_size(w->head_size, w->n_row_groups + 1, w->n_nodes,
                                    w->dir.size - w->dir_start);
    if (size > QV__MAX_FOOTER_BYTES) {
        char when[64];
        snprintf(when, sizeof when, "with row group %lld,", (long long)w->n_row_groups);
        footer_too_big(w->sink.name, size, when, err);
        return fail(w, EINVAL, err);
    }
    w->n_row_groups++;
    w->rows_written += rows;
    if (w->opts.on_row_group) w->opts.on_row_group(w->opts.progress_ctx, w->rows_written);
    return 0;
}

static int maybe_flush(struct qv_writer *w, struct qv_error *err) {
    if (qv_builder_num_rows(w->builder) >= w->opts.row_group_rows ||
        qv_reservation_used(w->r) >= w->opts.row_group_bytes)
        return flush_row_group(w, err);
    return 0;
}

int qv_writer_write(struct qv_writer *w, const struct ArrowArray *batch, struct qv_error *err) {
    int rc = check_usable(w, err);
    if (rc) return rc;
    rc = qv_arrow_array_validate(batch, &w->schema->root, QV_VALIDATE_CHEAP, err);
    if (rc) {
        qv_error_wrap(err, rc, "writer '%s': batch: ", w->sink.name);
        return rc; /* a rejected batch does not fail the writer: nothing was taken */
    }
    /* Slices of at most 64 Ki rows, so the byte budget is checked often. */
    for (int64_t done = 0; done < batch->length;) {
        int64_t room = w->opts.row_group_rows - qv_builder_num_rows(w->builder);
        int64_t n = batch->length - done;
        if (n > room) n = room;
        if (n > 65536) n = 65536;
        rc = qv_builder_append_batch(w->builder, batch, done, n, err);
        if (rc) return fail(w, rc, err);
        done += n;
        rc = maybe_flush(w, err);
        if (rc) return rc;
    }
    return 0;
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

int qv_writer_end_rows(struct qv_writer *w, struct qv_error *err) {
    int rc = check_usable(w, err);
    if (rc) return rc;
    const struct qv_error *be = qv_builder_error(w->builder);
    if (be->code) {
        if (err) *err = *be;
        return fail(w, be->code, err);
    }
    return maybe_flush(w, err);
}

int qv_writer_finish(struct qv_writer *w, struct qv_error *err) {
    int rc = check_usable(w, err);
    if (rc) return rc;
    rc = flush_row_group(w, err);
    if (rc) {
        abort_sink(w);
        return rc;
    }
    /* Complete the footer in place: the row-group section's header goes
     * right before the directory, and the head moves up against it. */
    uint64_t dir_bytes = w->dir.size - w->dir_start;
    uint8_t hdr[QV__RG_HEADER_MAX];
    size_t hlen = qv__footer_rg_header(hdr, w->n_row_groups, w->n_nodes, dir_bytes);
    size_t start = w->dir_start - hlen - w->head_size;
    memmove(w->dir.data + start, w->dir.data, w->head_size);
    memcpy(w->dir.data + w->dir_start - hlen, hdr, hlen);
    const uint8_t *footer = w->dir.data + start;
    size_t footer_size = w->dir.size - start;
    /* flush_row_group and open keep it within the limit; a file the reader
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
    w->finished = 1;
    return 0;
}

void qv_writer_abort(struct qv_writer *w) {
    if (!w || w->finished) return;
    abort_sink(w);
    if (!w->failed) {
        w->failed = ECANCELED;
        qv_error_set(&w->failure, ECANCELED, "writer '%s': aborted", w->sink.name);
    }
}

void qv_writer_close(struct qv_writer *w) {
    if (!w) return;
    if (!w->finished) abort_sink(w);
    qv_sink_close(&w->sink);
    qv_builder_destroy(w->builder);
    qv__wbuf_free(&w->dir);
    qv__wbuf_free(&w->rgdir);
    if (w->nodes) qv_free(w->r, w->nodes, (size_t)(w->n_nodes ? w->n_nodes : 1) * sizeof *w->nodes);
    qv_schema_destroy(w->schema);
    qv_free(w->r, w, sizeof *w);
}

int64_t qv_writer_rows_written(const struct qv_writer *w) { return w->rows_written; }
uint64_t qv_writer_bytes_written(const struct qv_writer *w) { return w->sink.position; }
