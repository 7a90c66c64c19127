/* Encoding one sealed row group into the file: every column chunk through
 * the sampling cascade, segments written with their checksums, the chunk
 * records appended to the footer's directory. Runs on the encoding thread
 * (the writer's worker, or the caller with QV_WRITER_INLINE) and uses only
 * the encoder's reservation, the sink and the footer buffers, which belong
 * to that thread while it encodes (writer_internal.h).
 *
 * A row group of one array whose every node starts at offset 0 (and whose
 * offsets start at 0) is encoded in place: the producer's buffers are read
 * where they are. Anything else (several arrays, a slice, a nested offset)
 * is joined one top-level column at a time into the joiner, a builder on
 * the encoder's reservation, and that column is encoded from the joiner's
 * buffers and dropped before the next: the scratch is one column's. The
 * joiner copies exactly as the builder does for qv_writer_write, so the
 * same rows make the same bytes whichever way they came in. */
#include <stdio.h>
#include <string.h>

#include "format/writer_internal.h"

static void note_path(struct qv_writer *w, const char *path) {
    if (w->fail_path[0]) return;
    size_t n = strlen(path);
    if (n >= sizeof w->fail_path) n = sizeof w->fail_path - 1;
    memcpy(w->fail_path, path, n);
    w->fail_path[n] = 0;
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
    int rc = qv_encode(v, &eo, w->er, &enc, err);
    if (rc) {
        note_path(w, path);
        return rc;
    }
    rc = qv__writer_put_encoded(w, v, role, &enc, seg, err);
    if (rc) note_path(w, path);
    return rc;
}

int qv__writer_put_encoded(struct qv_writer *w, const struct qv_values *v, uint8_t role,
                           struct qv_encoded *encp, struct qv__segment *seg,
                           struct qv_error *err) {
    struct qv_encoded enc = *encp;
    int rc;
    seg->role = role;
    seg->kind = (uint8_t)v->kind;
    seg->fixed_width = v->kind == QV_KIND_FIXED_BINARY ? v->fixed_width : 0;
    seg->count = v->count;
    seg->offset = w->sink.position;
    seg->length = enc.size;
    seg->checksum = qv_hash64(enc.data, enc.size, 0);
    qv__dir_block_sums(&w->rgblocks, enc.data, enc.size);
    rc = qv_sink_write(&w->sink, enc.data, enc.size, err);
    qv_encoded_release(w->er, encp);
    return rc;
}

static uint64_t bitmap_bytes(int64_t n) { return (uint64_t)qv_bytes_for_bits(n); }

/* Writes the chunk of node `k` (and its subtree) from `arr`: offset 0,
 * offsets starting at 0, children exactly as long as the node's slots say
 * (in_place_ok, or a view of the joiner). */
static int put_node(struct qv_writer *w, int32_t k, const struct ArrowArray *arr,
                    struct qv_error *err) {
    const struct qv__node *node = &w->nodes[k];
    struct qv__segment segs[3];
    uint32_t ns = 0;
    char path[512];
    qv__node_path(w->nodes, k, path, sizeof path);
    if (atomic_load_explicit(&w->cancel, memory_order_relaxed)) {
        note_path(w, path);
        return qv_error_set(err, ECANCELED, "aborted");
    }
    int64_t n = arr->length;
    int64_t nulls = node->kind == QV__NODE_NULL ? 0 : arr->null_count;
    const uint8_t *validity = arr->n_buffers > 0 ? arr->buffers[0] : NULL;
    if (nulls < 0 || (nulls > 0 && !validity)) nulls = validity ? n - qv_bits_count(validity, 0, n) : 0;
    if (arr->offset != 0) {
        note_path(w, path);
        return qv_error_set(err, EINVAL, "unexpected offset %lld in buffered batch",
                            (long long)arr->offset);
    }
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
            narrow = qv_alloc(w->er, narrow_size, err);
            if (!narrow) {
                note_path(w, path);
                return ENOMEM;
            }
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
        /* A column stored relative to another, or the reference of one,
         * is written by writer_relative.c. Forcing relative (a test knob)
         * leaves the other columns to the cascade. */
        int done = 0;
        if (w->rel) rc = qv__relative_put(w, k, &v, validity, &segs[ns], &done, err);
        if (rc) note_path(w, path);
        int force = w->force_encoding == QV_ENC_RELATIVE ? QV_ENC_AUTO : w->force_encoding;
        if (!rc && !done) rc = put_segment(w, &v, QV_SEGMENT_VALUES, force, &segs[ns], path, err);
        ns++;
        if (narrow) qv_free(w->er, narrow, narrow_size);
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
        if (c >= arr->n_children) {
            note_path(w, path);
            return qv_error_set(err, EINVAL, "batch lacks child %d", c);
        }
        rc = put_node(w, child, arr->children[c], err);
        if (rc) return rc;
    }
    return 0;
}

/* Whether node k can be encoded from `arr` where it is (put_node's shape). */
static int in_place_ok(const struct qv_writer *w, int32_t k, const struct ArrowArray *arr) {
    const struct qv__node *node = &w->nodes[k];
    int64_t n = arr->length;
    if (arr->offset != 0) return 0;
    int64_t child_len = n;
    if ((node->kind == QV__NODE_PRIMITIVE &&
         (node->value_kind == QV_KIND_BINARY || node->value_kind == QV_KIND_LARGE_BINARY)) ||
        node->kind == QV__NODE_LIST) {
        int wide = node->value_kind == QV_KIND_LARGE_BINARY || node->value_kind == QV_KIND_INT64;
        if (node->kind == QV__NODE_PRIMITIVE) wide = node->value_kind == QV_KIND_LARGE_BINARY;
        const void *off = arr->buffers[1];
        int64_t first = wide ? ((const int64_t *)off)[0] : ((const int32_t *)off)[0];
        if (first != 0) return 0;
        child_len = wide ? ((const int64_t *)off)[n] : ((const int32_t *)off)[n];
    } else if (node->kind == QV__NODE_FIXED_LIST) {
        child_len = n * node->field->list_size;
    }
    for (int32_t c = 0, child = node->first_child; c < node->n_children;
         c++, child = w->nodes[child].subtree_end) {
        if (c >= arr->n_children || arr->children[c]->length != child_len) return 0;
        if (!in_place_ok(w, child, arr->children[c])) return 0;
    }
    return 1;
}

/* A read-only ArrowArray view of an appender subtree (the joiner's column),
 * in the nodes at *next; put_node reads nothing else. */
static void view_of(struct qv_appender *a, struct ArrowArray *out, struct ArrowArray **next,
                    struct ArrowArray ***ptrs, const void *(**bufs)[3]) {
    const void *zero = qv_arrow_zero_buffer();
    const void **b = (const void **)**bufs;
    (*bufs)++;
    b[0] = a->validity;
    b[1] = a->values ? a->values : zero;
    b[2] = a->data ? a->data : zero;
    memset(out, 0, sizeof *out);
    out->length = a->length;
    out->null_count = a->kind == QV__K_NULL ? a->length : a->null_count;
    out->n_buffers = 3;
    out->buffers = b;
    out->n_children = a->n_children;
    out->children = *ptrs;
    *ptrs += a->n_children;
    for (int64_t c = 0; c < a->n_children; c++) out->children[c] = (*next)++;
    for (int64_t c = 0; c < a->n_children; c++)
        view_of(&a->children[c], out->children[c], next, ptrs, bufs);
}

/* Joins column c of every piece in the joiner and encodes it from there. */
static int put_joined(struct qv_writer *w, const struct qv__rowgroup *rg, int64_t c, int32_t k,
                      struct qv_error *err) {
    if (!w->joiner) {
        struct qv_builder_options bo = {.initial_capacity = 64};
        int rc = qv_builder_create(w->schema, w->er, &bo, &w->joiner, err);
        if (rc) return rc;
    }
    struct qv_appender *a = qv_builder_column(w->joiner, c);
    int rc = 0;
    for (int32_t i = 0; i < rg->n_pieces && !rc; i++) {
        const struct qv__piece *p = &rg->pieces[i];
        const struct ArrowArray *batch = &p->held->array;
        rc = qv_append_array(a, batch->children[c], batch->offset + p->start, p->length);
        if (rc) qv_error_set(err, rc, "joining: %s", qv_builder_error(w->joiner)->message);
    }
    int32_t m = w->nodes[k].subtree_end - k;
    size_t size = (size_t)m * (sizeof(struct ArrowArray) + sizeof(struct ArrowArray *) +
                               3 * sizeof(void *));
    void *mem = NULL;
    if (!rc) {
        mem = qv_alloc(w->er, size, err);
        if (!mem) rc = ENOMEM;
    }
    if (!rc) {
        struct ArrowArray *nodes = mem;
        struct ArrowArray **ptrs = (struct ArrowArray **)(nodes + m);
        const void *(*bufs)[3] = (const void *(*)[3])(ptrs + m);
        struct ArrowArray *next = nodes + 1;
        view_of(a, &nodes[0], &next, &ptrs, &bufs);
        rc = put_node(w, k, &nodes[0], err);
    }
    if (mem) qv_free(w->er, mem, size);
    /* Drops this column's scratch before the next column is joined. */
    qv_builder_reset(w->joiner);
    return rc;
}

static int encode_row_group(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err);

int qv__writer_encode(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err) {
    int rc = qv__relative_plan(w, rg, err);
    if (rc)
        qv_error_wrap(err, rc, "writer '%s': row group %lld: choosing relative columns: ",
                      w->sink.name, (long long)rg->index);
    else
        rc = encode_row_group(w, rg, err);
    qv__relative_end(w);
    return rc;
}

static int encode_row_group(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err) {
    uint64_t start = w->sink.position;
    w->rgdir.size = 0;
    w->rgblocks.size = 0;
    w->fail_path[0] = 0;
    const struct ArrowArray *whole = NULL;
    if (rg->n_pieces == 1 && rg->pieces[0].start == 0 &&
        rg->pieces[0].length == rg->pieces[0].held->array.length) {
        const struct ArrowArray *b = &rg->pieces[0].held->array;
        int ok = b->offset == 0;
        for (int64_t c = 0; ok && c < b->n_children; c++) ok = b->children[c]->length == b->length;
        for (int32_t c = 0, k = 0; ok && c < (int32_t)b->n_children; c++, k = w->nodes[k].subtree_end)
            ok = in_place_ok(w, k, b->children[c]);
        if (ok) whole = b;
    }
    int rc = 0;
    int64_t n_columns = w->schema->root.n_children;
    for (int32_t c = 0, k = 0; c < n_columns && !rc; c++, k = w->nodes[k].subtree_end) {
        if (w->hook) {
            rc = w->hook(w->hook_ctx, rg->index, c);
            if (rc) {
                qv__node_path(w->nodes, k, w->fail_path, sizeof w->fail_path);
                qv_error_set(err, rc, "injected failure (%s)", qv_errno_name(rc));
                break;
            }
        }
        rc = whole ? put_node(w, k, whole->children[c], err) : put_joined(w, rg, c, k, err);
        if (rc && !w->fail_path[0]) qv__node_path(w->nodes, k, w->fail_path, sizeof w->fail_path);
    }
    if (!rc && (w->rgdir.failed || w->dir.failed || w->rgblocks.failed)) {
        if (err) *err = w->rgdir.failed ? w->rgdir.err : w->rgblocks.failed ? w->rgblocks.err : w->dir.err;
        rc = ENOMEM;
    }
    if (rc) {
        if (w->fail_path[0])
            qv_error_wrap(err, rc, "writer '%s': row group %lld, column '%s': ", w->sink.name,
                          (long long)rg->index, w->fail_path);
        else
            qv_error_wrap(err, rc, "writer '%s': row group %lld: ", w->sink.name,
                          (long long)rg->index);
        return rc;
    }
    qv__dir_row_group(&w->dir, rg->rows, start, w->sink.position - start);
    qv__wbuf_put(&w->dir, w->rgdir.data, w->rgdir.size);
    qv__wbuf_put(&w->blocks, w->rgblocks.data, w->rgblocks.size);
    if (w->dir.failed || w->blocks.failed) {
        if (err) *err = w->dir.failed ? w->dir.err : w->blocks.err;
        return ENOMEM;
    }
    /* The footer grows with every row group: refuse the one that would make
     * it unreadable now, not at finish after more data. */
    uint64_t size = qv__footer_size(w->head_size, w->enc_row_groups + 1, w->n_nodes,
                                    w->dir.size - w->dir_start) +
                    qv__footer_block_section_size(w->blocks.size);
    if (size > QV__MAX_FOOTER_BYTES) {
        qv_error_set(err, EINVAL,
                     "writer '%s': with row group %lld, the footer would take %llu bytes, more "
                     "than the format's limit of %llu bytes (write fewer, larger row groups or "
                     "fewer columns per file)",
                     w->sink.name, (long long)rg->index, (unsigned long long)size,
                     (unsigned long long)QV__MAX_FOOTER_BYTES);
        return EINVAL;
    }
    w->enc_row_groups++;
    rg->end_position = w->sink.position;
    rg->encoded = 1;
    /* The encoder's buffers are dropped between row groups: a writer waiting
     * for its next row group keeps no encoding slack. */
    qv_reservation_release_slack(w->er);
    return 0;
}
