/* Encoding one column of a sealed row group, and writing it. An encoding
 * thread (writer_parallel.c) encodes a top-level column's chunks (the
 * column and its subtree) through the sampling cascade into buffers of the
 * task's own reservation: segments, their block checksums and the chunk
 * records, offsets counted from the task's first byte. The committer then
 * writes the tasks strictly in file order (row group, then column), fixes
 * the offsets and appends the records to the footer's directory, so the
 * file is the same bytes whichever thread encoded which column and however
 * many threads there are.
 *
 * A row group of one array whose every node starts at offset 0 (and whose
 * offsets start at 0) is encoded in place: the producer's buffers are read
 * where they are. Anything else (several arrays, a slice, a nested offset)
 * is joined one top-level column at a time into the encoding thread's
 * joiner (a builder on that thread's reservation), and that column is
 * encoded from the joiner's buffers and dropped before the thread's next
 * column: the scratch is one column's per thread. The joiner copies exactly
 * as the builder does for qv_writer_write, so the same rows make the same
 * bytes whichever way they came in. */
#include <stdio.h>
#include <string.h>

#include "arrow/arrow_internal.h"
#include "encoding/lesson.h"
#include "format/null_fill.h"
#include "format/writer_internal.h"

/* What put_node and put_segment work with: the thread's slot and the task. */
struct ctx {
    struct qv_writer *w;
    struct qv__wworker *wk;
    struct qv__task *t;
    const struct qv__rowgroup *rg;
    int32_t c; /* the task's top-level column */
};

static void note_path(struct ctx *x, const char *path) {
    char *fp = x->wk->fail_path;
    if (fp[0]) return;
    size_t n = strlen(path);
    if (n >= sizeof x->wk->fail_path) n = sizeof x->wk->fail_path - 1;
    memcpy(fp, path, n);
    fp[n] = 0;
}

/* Encodes the values of string node k with the lessons of its column
 * (writer_internal.h): row group 0 learns and publishes them, a later row
 * group waits until they are final and encodes with them. */
static int encode_taught(struct ctx *x, const struct qv_values *v,
                         const struct qv_encode_options *eo, int32_t k, struct qv_encoded *out,
                         struct qv_error *err) {
    struct qv_writer *w = x->w;
    struct qv_reservation *r = x->t->r;
    if (x->rg->index > 0) {
        qv_mutex_lock(&w->mu);
        while (!w->taught[x->c]) qv_cond_wait(&w->learned, &w->mu);
        const struct qv__lesson *use = w->lessons[k];
        qv_mutex_unlock(&w->mu);
        return qv__encode_taught(v, eo, use, NULL, x->wk->zc, r, out, err);
    }
    /* The only row group has no one to teach. */
    if (x->rg->last) return qv__encode_taught(v, eo, NULL, NULL, x->wk->zc, r, out, err);
    struct qv__lesson *learn = qv_alloc(r, sizeof *learn, err);
    if (!learn) return ENOMEM;
    int rc = qv__encode_taught(v, eo, NULL, learn, x->wk->zc, r, out, err);
    if (!rc && learn->nsym > 0) {
        qv_mutex_lock(&w->mu);
        struct qv__lesson *kept = qv_alloc(w->lr, sizeof *kept, err);
        if (kept) {
            *kept = *learn;
            w->lessons[k] = kept;
        }
        qv_mutex_unlock(&w->mu);
        if (!kept) {
            qv_encoded_release(r, out);
            rc = ENOMEM;
        }
    }
    qv_free(r, learn, sizeof *learn);
    return rc;
}

/* Encodes one segment into the task: its bytes, its block checksums and
 * its record (offset from the task's first byte). With `pre`, the segment
 * is those bytes, already encoded on the task's reservation (moved in, or
 * released on failure). `ex` (or NULL) receives the encoder's extremes
 * (qv_encode_options.extremes). k >= 0: the segment holds the values of
 * string node k, encoded with its column's lessons (encode_taught); -1:
 * none (put_segment). */
static int put_taught(struct ctx *x, const struct qv_values *v, uint8_t role, int force,
                      struct qv_encoded *pre, struct qv_encode_extremes *ex, int32_t k,
                      const char *path, struct qv_error *err) {
    struct qv_writer *w = x->w;
    struct qv__task *tk = x->t;
    struct qv__taskout *t = tk->o;
    if (t->n_segs == t->cap_segs) {
        int32_t cap = t->cap_segs ? 2 * t->cap_segs : 4;
        struct qv__wseg *p = qv_realloc(tk->r, t->segs, (size_t)t->cap_segs * sizeof *p,
                                        (size_t)cap * sizeof *p, err);
        if (!p) {
            if (pre) qv_encoded_release(tk->r, pre);
            note_path(x, path);
            return ENOMEM;
        }
        t->segs = p;
        t->cap_segs = cap;
    }
    struct qv_encode_options eo = {
        .force = force,
        .allowed = w->opts.allowed_encodings,
        .compact = w->opts.compact,
        .extremes = ex,
    };
    struct qv__wseg *ws = &t->segs[t->n_segs];
    memset(ws, 0, sizeof *ws);
    int rc = 0;
    if (pre) {
        ws->enc = *pre;
    } else {
        /* The thread's compression context, made at its first encode. */
        if (!x->wk->zc) rc = qv__zcache_create(qv_reservation_pool(w->r), &x->wk->zc, err);
        if (!rc && k < 0)
            rc = qv__encode_taught(v, &eo, NULL, NULL, x->wk->zc, tk->r, &ws->enc, err);
        else if (!rc)
            rc = encode_taught(x, v, &eo, k, &ws->enc, err);
    }
    if (rc) {
        note_path(x, path);
        return rc;
    }
    t->n_segs++;
    struct qv__segment *seg = &ws->seg;
    seg->role = role;
    seg->kind = (uint8_t)v->kind;
    seg->fixed_width = v->kind == QV_KIND_FIXED_BINARY ? v->fixed_width : 0;
    seg->count = v->count;
    seg->offset = t->bytes;
    seg->length = ws->enc.size;
    seg->checksum = qv_hash64(ws->enc.data, ws->enc.size, 0);
    qv__dir_block_sums(&t->sums, ws->enc.data, ws->enc.size);
    t->bytes += ws->enc.size;
    if (t->sums.failed) {
        if (err) *err = t->sums.err;
        note_path(x, path);
        return ENOMEM;
    }
    return 0;
}

static int put_segment(struct ctx *x, const struct qv_values *v, uint8_t role, int force,
                       struct qv_encoded *pre, struct qv_encode_extremes *ex, const char *path,
                       struct qv_error *err) {
    return put_taught(x, v, role, force, pre, ex, -1, path, err);
}

/* Appends the chunk record of a node whose segments are the task's last
 * `n_segs`. */
static int put_chunk(struct ctx *x, int64_t n, int64_t nulls, uint64_t raw, uint32_t n_segs,
                     const struct qv__stats_buf *st, const char *path, struct qv_error *err) {
    struct qv__taskout *t = x->t->o;
    if (t->n_chunks == t->cap_chunks) {
        int32_t cap = t->cap_chunks ? 2 * t->cap_chunks : 1;
        struct qv__wchunk *p = qv_realloc(x->t->r, t->chunks, (size_t)t->cap_chunks * sizeof *p,
                                          (size_t)cap * sizeof *p, err);
        if (!p) {
            note_path(x, path);
            return ENOMEM;
        }
        t->chunks = p;
        t->cap_chunks = cap;
    }
    struct qv__wchunk *c = &t->chunks[t->n_chunks++];
    c->length = n;
    c->nulls = nulls;
    c->raw = raw;
    c->first_seg = (uint32_t)t->n_segs - n_segs;
    c->n_segs = n_segs;
    c->st = *st;
    return 0;
}

static uint64_t bitmap_bytes(int64_t n) { return (uint64_t)qv_bytes_for_bits(n); }

/* A decimal slot with more digits than its precision: invalid Arrow,
 * which the batch's cheap validation does not see (it reads no values) and
 * a precision <= 18 would store wrapped to int64, for every reader to call
 * corrupt. EINVAL naming the slot; 0 when such values sit only under
 * nulls. */
static int decimal_unfit(struct ctx *x, const struct ArrowArray *arr,
                         const struct qv__node *node, const char *path, struct qv_error *err) {
    const int64_t i = qv__decimal_first_unfit(arr, node->field->precision);
    if (i < 0) return 0;
    note_path(x, path);
    return qv_error_set(err, EINVAL, "slot %lld holds a value with more than %d digits "
                                     "(decimal128(%d, %d))",
                        (long long)i, (int)node->field->precision, (int)node->field->precision,
                        (int)node->field->scale);
}

/* Writes the chunk of node `k` (and its subtree) from `arr`: offset 0,
 * offsets starting at 0, children exactly as long as the node's slots say
 * (in_place_ok, or a view of the joiner). */
static int put_node(struct ctx *x, int32_t k, const struct ArrowArray *arr,
                    struct qv_error *err) {
    struct qv_writer *w = x->w;
    const struct qv__node *node = &w->nodes[k];
    uint32_t ns = 0;
    char path[512];
    qv__node_path(w->nodes, k, path, sizeof path);
    if (atomic_load_explicit(&w->cancel, memory_order_relaxed)) {
        note_path(x, path);
        return qv_error_set(err, ECANCELED, "aborted");
    }
    int64_t n = arr->length;
    int64_t nulls = node->kind == QV__NODE_NULL ? 0 : arr->null_count;
    const uint8_t *validity = arr->n_buffers > 0 ? arr->buffers[0] : NULL;
    if (nulls < 0 || (nulls > 0 && !validity)) nulls = validity ? n - qv_bits_count(validity, 0, n) : 0;
    if (arr->offset != 0) {
        note_path(x, path);
        return qv_error_set(err, EINVAL, "unexpected offset %lld in buffered batch",
                            (long long)arr->offset);
    }
    uint64_t raw = nulls ? bitmap_bytes(n) : 0;
    int rc = 0;
    if (nulls) {
        struct qv_values v = {.kind = QV_KIND_BOOL, .count = n, .values = validity};
        rc = put_segment(x, &v, QV_SEGMENT_VALIDITY, QV_ENC_AUTO, NULL, NULL, path, err);
        ns++;
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
            narrow = qv_alloc(x->t->r, narrow_size, err);
            if (!narrow) {
                note_path(x, path);
                return ENOMEM;
            }
            v.values = narrow;
            if (!qv__decimal_narrow64(arr->buffers[1], n, node->field->precision, narrow))
                rc = decimal_unfit(x, arr, node, path, err);
            if (rc) {
                qv_free(x->t->r, narrow, narrow_size);
                return rc;
            }
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
            if (node->field->type == QV_TYPE_DECIMAL128 &&
                (rc = decimal_unfit(x, arr, node, path, err)))
                return rc;
        }
        /* Strings without nulls: when the encoder builds a dictionary
         * over them, its ends are the statistics (no second pass over the
         * strings); otherwise they are computed after encoding. */
        const int late_stats = nulls == 0 && (v.kind == QV_KIND_BINARY ||
                                              v.kind == QV_KIND_LARGE_BINARY ||
                                              v.kind == QV_KIND_FIXED_BINARY);
        struct qv_encode_extremes ex = {0};
        if (!late_stats) qv__stats_compute(node, &v, validity, &st);
        /* Null slots get a fill value that costs next to nothing
         * (null_fill.c); statistics were taken from the input, masked. */
        /* A column stored relative to another (writer_relative.c) takes
         * differences, 0 at its null slots: no fill. Forcing relative (a
         * test knob) leaves the other columns to the cascade. */
        struct qv_encoded rel;
        int is_rel = 0;
        if (x->rg->rel && node->parent == -1) {
            memset(&rel, 0, sizeof rel);
            rc = qv__relative_values(w, x->rg, x->c, &v, validity, x->t->r, &rel, &is_rel, err);
            if (rc) note_path(x, path);
        }
        int force = w->force_encoding == QV_ENC_RELATIVE ? QV_ENC_AUTO : w->force_encoding;
        if (!rc && is_rel) {
            rc = put_segment(x, &v, QV_SEGMENT_VALUES, force, &rel, NULL, path, err);
        } else if (!rc) {
            struct qv__filled filled;
            rc = qv__null_fill(&v, validity, nulls, w->null_fill, x->t->r, &filled, err);
            if (rc) note_path(x, path);
            else rc = put_taught(x, &filled.v, QV_SEGMENT_VALUES, force, NULL,
                                 late_stats ? &ex : NULL,
                                 v.kind == QV_KIND_BINARY || v.kind == QV_KIND_LARGE_BINARY ? k : -1,
                                 path, err);
            qv__null_fill_release(x->t->r, &filled);
        }
        if (!rc && late_stats &&
            !(ex.found && qv__stats_from_extremes(node, &v, ex.min_row, ex.max_row, &st)))
            qv__stats_compute(node, &v, validity, &st);
        ns++;
        if (narrow) qv_free(x->t->r, narrow, narrow_size);
        if (rc) return rc;
    } else if (node->kind == QV__NODE_LIST) {
        struct qv_values v = {.kind = node->value_kind, .count = n + 1, .values = arr->buffers[1]};
        raw += (uint64_t)(n + 1) * (node->value_kind == QV_KIND_INT32 ? 4u : 8u);
        rc = put_segment(x, &v, QV_SEGMENT_OFFSETS, QV_ENC_AUTO, NULL, NULL, path, err);
        ns++;
        if (rc) return rc;
    }
    rc = put_chunk(x, n, nulls, raw, ns, &st, path, err);
    if (rc) return rc;
    /* Children of a node are the pre-order subtrees that follow it. */
    for (int32_t c = 0, child = node->first_child; c < node->n_children;
         c++, child = w->nodes[child].subtree_end) {
        if (c >= arr->n_children) {
            note_path(x, path);
            return qv_error_set(err, EINVAL, "batch lacks child %d", c);
        }
        rc = put_node(x, child, arr->children[c], err);
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

/* Joins column c of every piece in the thread's joiner and encodes it
 * from there. */
static int put_joined(struct ctx *x, const struct qv__rowgroup *rg, int64_t c, int32_t k,
                      struct qv_error *err) {
    struct qv_writer *w = x->w;
    struct qv__wworker *wk = x->wk;
    if (!wk->jr) {
        struct qv_reservation_options ro = {.name = "writer joiner"};
        int rc = qv_reservation_create(qv_reservation_pool(w->r), &ro, &wk->jr, err);
        if (rc) return rc;
    }
    if (!wk->joiner) {
        struct qv_builder_options bo = {.initial_capacity = 64};
        int rc = qv_builder_create(w->schema, wk->jr, &bo, &wk->joiner, err);
        if (rc) return rc;
    }
    struct qv_appender *a = qv_builder_column(wk->joiner, c);
    int rc = 0;
    for (int32_t i = 0; i < rg->n_pieces && !rc; i++) {
        const struct qv__piece *p = &rg->pieces[i];
        const struct ArrowArray *batch = &p->held->array;
        rc = qv_append_array(a, batch->children[c], batch->offset + p->start, p->length);
        if (rc) qv_error_set(err, rc, "joining: %s", qv_builder_error(wk->joiner)->message);
    }
    int32_t m = w->nodes[k].subtree_end - k;
    size_t size = (size_t)m * (sizeof(struct ArrowArray) + sizeof(struct ArrowArray *) +
                               3 * sizeof(void *));
    void *mem = NULL;
    if (!rc) {
        mem = qv_alloc(wk->jr, size, err);
        if (!mem) rc = ENOMEM;
    }
    if (!rc) {
        struct ArrowArray *nodes = mem;
        struct ArrowArray **ptrs = (struct ArrowArray **)(nodes + m);
        const void *(*bufs)[3] = (const void *(*)[3])(ptrs + m);
        struct ArrowArray *next = nodes + 1;
        view_of(a, &nodes[0], &next, &ptrs, &bufs);
        rc = put_node(x, k, &nodes[0], err);
    }
    if (mem) qv_free(wk->jr, mem, size);
    /* Drops this column's scratch before the thread's next column. */
    qv_builder_reset(wk->joiner);
    return rc;
}

/* A row group that is one slice of one batch (a batch longer than a row
 * group, cut at row group boundaries): a flat column is encoded from the
 * batch's buffers where they are, advanced to the slice's first row,
 * instead of from a copy joined out of it (flights from Python: one batch
 * of 336,776 rows in row groups of 131,072, every column copied once; the
 * copy and its fresh pages were 5-7% of the write). String offsets are
 * rebased into a copy of their own (4 or 8 bytes a row); a bitmap needs
 * the slice to start on one of its bytes. Returns -1 when the column
 * does not qualify (the caller joins it), else put_node's result. */
static int put_slice(struct ctx *x, const struct qv__rowgroup *rg, int64_t c, int32_t k,
                     struct qv_error *err) {
    const struct qv__node *node = &x->w->nodes[k];
    if (rg->n_pieces != 1 || node->subtree_end != k + 1 ||
        (node->kind != QV__NODE_PRIMITIVE && node->kind != QV__NODE_DECIMAL64))
        return -1;
    const struct qv__piece *p = &rg->pieces[0];
    const struct ArrowArray *b = &p->held->array;
    if (c >= b->n_children) return -1;
    const struct ArrowArray *arr = b->children[c];
    const int64_t n = p->length, at = arr->offset + b->offset + p->start;
    const enum qv_value_kind kind = node->value_kind;
    const int bin = kind == QV_KIND_BINARY || kind == QV_KIND_LARGE_BINARY;
    if (n <= 0 || arr->n_buffers < (bin ? 3 : 2) || b->offset + p->start + n > arr->length ||
        ((arr->buffers[0] || kind == QV_KIND_BOOL) && at % 8))
        return -1;
    const uint8_t *vals = arr->buffers[1], *data = bin ? arr->buffers[2] : NULL;
    void *rebased = NULL;
    size_t rebased_size = 0;
    if (bin) {
        const int w8 = kind == QV_KIND_BINARY ? 4 : 8;
        const int64_t first = w8 == 4 ? ((const int32_t *)(const void *)vals)[at]
                                      : ((const int64_t *)(const void *)vals)[at];
        if (first < 0 || (first && !data)) return -1;
        rebased_size = (size_t)(n + 1) * (size_t)w8;
        rebased = qv_alloc(x->t->r, rebased_size, err);
        if (!rebased) return ENOMEM;
        if (w8 == 4) {
            const int32_t *o = (const int32_t *)(const void *)vals + at;
            int32_t *r = rebased;
            for (int64_t i = 0; i <= n; i++) r[i] = (int32_t)(o[i] - first);
        } else {
            const int64_t *o = (const int64_t *)(const void *)vals + at;
            int64_t *r = rebased;
            for (int64_t i = 0; i <= n; i++) r[i] = o[i] - first;
        }
        if (first) data += first;
        vals = rebased;
    } else if (kind == QV_KIND_BOOL) {
        vals += at / 8;
    } else {
        size_t wd = node->kind == QV__NODE_DECIMAL64 ? 16 : qv__kind_width(kind, node->fixed_width);
        vals += (size_t)at * wd;
    }
    const void *bufs[3] = {arr->buffers[0] ? (const uint8_t *)arr->buffers[0] + at / 8 : NULL,
                           vals, data};
    /* The slice's own null count is not known: counted by put_node. */
    struct ArrowArray view = {.length = n, .null_count = arr->null_count == 0 ? 0 : -1,
                              .n_buffers = bin ? 3 : 2, .buffers = bufs};
    int rc = put_node(x, k, &view, err);
    if (rebased) qv_free(x->t->r, rebased, rebased_size);
    return rc;
}

void qv__writer_plan(struct qv_writer *w, struct qv__rowgroup *rg) {
    rg->whole = 0;
    if (rg->n_pieces == 1 && rg->pieces[0].start == 0 &&
        rg->pieces[0].length == rg->pieces[0].held->array.length) {
        const struct ArrowArray *b = &rg->pieces[0].held->array;
        int ok = b->offset == 0;
        for (int64_t c = 0; ok && c < b->n_children; c++) ok = b->children[c]->length == b->length;
        for (int32_t c = 0, k = 0; ok && c < (int32_t)b->n_children; c++, k = w->nodes[k].subtree_end)
            ok = in_place_ok(w, k, b->children[c]);
        rg->whole = ok;
    }
}

void qv__writer_task_free(struct qv__task *t) {
    if (!t->r) return;
    struct qv__taskout *o = t->o;
    if (o) {
        for (int32_t i = 0; i < o->n_segs; i++) qv_encoded_release(t->r, &o->segs[i].enc);
        if (o->segs) qv_free(t->r, o->segs, (size_t)o->cap_segs * sizeof *o->segs);
        if (o->chunks) qv_free(t->r, o->chunks, (size_t)o->cap_chunks * sizeof *o->chunks);
        qv__wbuf_free(&o->sums);
        qv_free(t->r, o, sizeof *o);
    }
    qv_reservation_destroy(t->r);
    t->r = NULL;
    t->o = NULL;
}

/* The top-level column c's first node. */
static int32_t column_node(const struct qv_writer *w, int32_t c) { return w->col_node[c]; }

void qv__writer_encode_task(struct qv__wworker *wk, struct qv__rowgroup *rg, int32_t c,
                            struct qv__task *t, struct qv_error *err) {
    struct qv_writer *w = wk->w;
    qv_error_clear(err);
    wk->fail_path[0] = 0;
    int32_t k = column_node(w, c);
    struct ctx x = {.w = w, .wk = wk, .t = t, .rg = rg, .c = c};
    int rc = 0;
    if (w->hook) {
        rc = w->hook(w->hook_ctx, rg->index, c);
        if (rc) {
            qv__node_path(w->nodes, k, wk->fail_path, sizeof wk->fail_path);
            qv_error_set(err, rc, "injected failure (%s)", qv_errno_name(rc));
        }
    }
    if (!rc) {
        struct qv_reservation_options ro = {.name = "writer column"};
        rc = qv_reservation_create(qv_reservation_pool(w->r), &ro, &t->r, err);
        if (!rc) {
            t->o = qv_calloc(t->r, sizeof *t->o, err);
            if (!t->o) rc = ENOMEM;
            else qv__wbuf_init(&t->o->sums, t->r);
        }
    }
    if (!rc) {
        const struct ArrowArray *whole = rg->whole ? &rg->pieces[0].held->array : NULL;
        rc = whole ? put_node(&x, k, whole->children[c], err) : put_slice(&x, rg, c, k, err);
        if (rc < 0) rc = put_joined(&x, rg, c, k, err);
    }
    if (rc) {
        if (!wk->fail_path[0]) qv__node_path(w->nodes, k, wk->fail_path, sizeof wk->fail_path);
        qv_error_wrap(err, rc, "writer '%s': row group %lld, column '%s': ", w->sink.name,
                      (long long)rg->index, wk->fail_path);
        qv__writer_task_free(t);
    } else {
        /* What waits for the committer is the output, not the scratch. */
        qv_reservation_release_slack(t->r);
    }
    if (wk->jr) qv_reservation_release_slack(wk->jr);
    t->rc = rc;
}

int qv__writer_commit_task(struct qv_writer *w, struct qv__rowgroup *rg, struct qv__task *tk,
                           struct qv_error *err) {
    struct qv__taskout *t = tk->o;
    if (rg->committed == 0) {
        rg->start = w->sink.position;
        w->rgdir.size = 0;
        w->rgblocks.size = 0;
    }
    uint64_t base = w->sink.position;
    int rc = 0;
    for (int32_t i = 0; i < t->n_segs && !rc; i++)
        rc = qv_sink_write(&w->sink, t->segs[i].enc.data, t->segs[i].enc.size, err);
    if (rc) {
        char path[512];
        qv__node_path(w->nodes, column_node(w, (int32_t)(tk - rg->tasks)), path, sizeof path);
        qv_error_wrap(err, rc, "writer '%s': row group %lld, column '%s': ", w->sink.name,
                      (long long)rg->index, path);
        return rc;
    }
    for (int32_t i = 0; i < t->n_chunks; i++) {
        struct qv__wchunk *ch = &t->chunks[i];
        struct qv__segment segs[3];
        for (uint32_t j = 0; j < ch->n_segs && j < 3; j++) {
            segs[j] = t->segs[ch->first_seg + j].seg;
            segs[j].offset += base;
        }
        ch->st.s.min = ch->st.minb;
        ch->st.s.max = ch->st.maxb;
        qv__dir_chunk(&w->rgdir, ch->length, ch->nulls, ch->raw, segs, ch->n_segs, &ch->st.s);
    }
    qv__wbuf_put(&w->rgblocks, t->sums.data, t->sums.size);
    if (w->rgdir.failed || w->rgblocks.failed) {
        if (err) *err = w->rgdir.failed ? w->rgdir.err : w->rgblocks.err;
        qv_error_wrap(err, ENOMEM, "writer '%s': row group %lld: ", w->sink.name,
                      (long long)rg->index);
        return ENOMEM;
    }
    return 0;
}

int qv__writer_end_row_group(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err) {
    if (rg->n_tasks == 0) {
        rg->start = w->sink.position;
        w->rgdir.size = 0;
        w->rgblocks.size = 0;
    }
    qv__dir_row_group(&w->dir, rg->rows, rg->start, w->sink.position - rg->start);
    qv__wbuf_put(&w->dir, w->rgdir.data, w->rgdir.size);
    qv__wbuf_put(&w->blocks, w->rgblocks.data, w->rgblocks.size);
    if (w->dir.failed || w->blocks.failed) {
        if (err) *err = w->dir.failed ? w->dir.err : w->blocks.err;
        qv_error_wrap(err, ENOMEM, "writer '%s': row group %lld: ", w->sink.name,
                      (long long)rg->index);
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
    /* The committer's buffers keep no slack between row groups. */
    qv_reservation_release_slack(w->er);
    return 0;
}
