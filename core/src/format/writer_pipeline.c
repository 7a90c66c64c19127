/* The writer's pipeline: rows from every input path gather in the row group
 * in the making as pieces of held arrays (the producer's, moved in by
 * qv_writer_write_owned, or the builder's output); a full row group is
 * sealed and encoded, inline or by the writer's encoding threads
 * (writer_parallel.c), with at most max_in_flight sealed row groups not yet
 * released; the caller releases what was written at its next call. See format.h and docs/format.md ("The
 * writer pipeline").
 *
 * Why release on the caller's thread: the arrays come from producers whose
 * release callbacks need their runtime (Arrow Java's JNI callback, Python's
 * GIL); the caller's thread is inside a call from that runtime, the worker
 * is not. Why a bound counted until release, not until written: the bound
 * is on memory, and an array is memory until it is released. */
#include <string.h>

#include "arrow/arrow_internal.h"
#include "format/writer_internal.h"

/* ---- bytes of an array's rows ---- */

static uint64_t node_bytes(const struct qv__node *nodes, int32_t k, const struct ArrowArray *arr,
                           int64_t start, int64_t n) {
    if (n <= 0) return 0;
    const struct qv__node *node = &nodes[k];
    int64_t s = arr->offset + start;
    uint64_t b = arr->n_buffers > 0 && arr->buffers[0] ? (uint64_t)qv_bytes_for_bits(n) : 0;
    int64_t cs = s, cn = n;
    switch (node->kind) {
    case QV__NODE_PRIMITIVE:
        if (node->value_kind == QV_KIND_BINARY) {
            const int32_t *off = arr->buffers[1];
            b += (uint64_t)(n + 1) * 4 + (uint64_t)(off[s + n] - off[s]);
        } else if (node->value_kind == QV_KIND_LARGE_BINARY) {
            const int64_t *off = arr->buffers[1];
            b += (uint64_t)(n + 1) * 8 + (uint64_t)(off[s + n] - off[s]);
        } else if (node->value_kind == QV_KIND_BOOL) {
            b += (uint64_t)qv_bytes_for_bits(n);
        } else {
            b += (uint64_t)n * (uint64_t)qv__kind_width(node->value_kind, node->fixed_width);
        }
        break;
    case QV__NODE_DECIMAL64: b += (uint64_t)n * 16; break;
    case QV__NODE_LIST:
        if (node->value_kind == QV_KIND_INT32) {
            const int32_t *off = arr->buffers[1];
            cs = off[s];
            cn = off[s + n] - off[s];
            b += (uint64_t)(n + 1) * 4;
        } else {
            const int64_t *off = arr->buffers[1];
            cs = off[s];
            cn = off[s + n] - off[s];
            b += (uint64_t)(n + 1) * 8;
        }
        break;
    case QV__NODE_FIXED_LIST:
        cs = s * node->field->list_size;
        cn = n * node->field->list_size;
        break;
    default: break;
    }
    for (int32_t c = 0, child = node->first_child; c < node->n_children && c < arr->n_children;
         c++, child = nodes[child].subtree_end)
        b += node_bytes(nodes, child, arr->children[c], cs, cn);
    return b;
}

uint64_t qv__array_bytes(const struct qv__node *nodes, int32_t n_nodes, int32_t k,
                         const struct ArrowArray *arr, int64_t start, int64_t n) {
    if (k >= 0) return node_bytes(nodes, k, arr, start, n);
    uint64_t b = 0;
    int32_t col = 0;
    for (int64_t c = 0; c < arr->n_children && col < n_nodes; c++, col = nodes[col].subtree_end)
        b += node_bytes(nodes, col, arr->children[c], arr->offset + start, n);
    return b;
}

/* ---- held arrays and row groups (caller's thread) ---- */

void qv__writer_held_unref(struct qv_writer *w, struct qv__held *h) {
    if (--h->refs > 0) return;
    if (h->from_builder) w->br_held -= h->bytes < w->br_held ? h->bytes : w->br_held;
    else w->owned_held -= h->bytes < w->owned_held ? h->bytes : w->owned_held;
    if (h->array.release) h->array.release(&h->array);
    qv_free(w->r, h, sizeof *h);
}

/* Releases a row group's arrays and frees it; counts it as written when it
 * was (and, with `notify`, tells the progress callback). */
static void rowgroup_retire(struct qv_writer *w, struct qv__rowgroup *rg, int notify) {
    if (rg->encoded) {
        w->rows_written += rg->rows;
        w->bytes_written = rg->end_position;
    }
    for (int32_t i = 0; i < rg->n_pieces; i++) qv__writer_held_unref(w, rg->pieces[i].held);
    if (rg->pieces) qv_free(w->r, rg->pieces, (size_t)rg->cap_pieces * sizeof *rg->pieces);
    if (rg->tasks) {
        for (int32_t i = 0; i < rg->n_tasks; i++) qv__writer_task_free(&rg->tasks[i]);
        qv_free(w->r, rg->tasks, (size_t)rg->n_tasks * sizeof *rg->tasks);
        qv_free(w->r, rg->order, (size_t)rg->n_tasks * sizeof *rg->order);
    }
    qv__relative_free(w, rg);
    if (rg->encoded && notify && w->opts.on_row_group)
        w->opts.on_row_group(w->opts.progress_ctx, w->rows_written);
    qv_free(w->r, rg, sizeof *rg);
}

uint64_t qv__writer_open_bytes(const struct qv_writer *w) {
    uint64_t used = qv_reservation_used(w->br), fixed = w->br_base + w->br_held;
    return (used > fixed ? used - fixed : 0) + (w->open ? w->open->bytes : 0);
}

int qv__writer_add_piece(struct qv_writer *w, struct qv__held *h, int64_t start, int64_t n,
                         struct qv_error *err) {
    if (!w->open) {
        w->open = qv_calloc(w->r, sizeof *w->open, err);
        if (!w->open) return qv__writer_fail(w, ENOMEM, err);
    }
    struct qv__rowgroup *rg = w->open;
    if (rg->n_pieces == rg->cap_pieces) {
        int32_t cap = rg->cap_pieces ? 2 * rg->cap_pieces : 4;
        struct qv__piece *p = qv_realloc(w->r, rg->pieces, (size_t)rg->cap_pieces * sizeof *p,
                                         (size_t)cap * sizeof *p, err);
        if (!p) return qv__writer_fail(w, ENOMEM, err);
        rg->pieces = p;
        rg->cap_pieces = cap;
    }
    rg->pieces[rg->n_pieces++] = (struct qv__piece){h, start, n};
    h->refs++;
    rg->rows += n;
    rg->bytes += h->from_builder ? h->bytes
                                 : qv__array_bytes(w->nodes, w->n_nodes, -1, &h->array, start, n);
    return 0;
}

int qv__writer_take_builder(struct qv_writer *w, struct qv_error *err) {
    if (qv_builder_num_rows(w->builder) == 0) return 0;
    struct qv__held *h = qv_calloc(w->r, sizeof *h, err);
    if (!h) return qv__writer_fail(w, ENOMEM, err);
    int rc = qv_builder_finish(w->builder, &h->array, err);
    if (rc) {
        qv_free(w->r, h, sizeof *h);
        return qv__writer_fail(w, rc, err);
    }
    /* Small start: the next row group's rows begin at the initial capacity
     * again, not at this row group's size. */
    qv__builder_restart(w->builder);
    /* The builder is empty now: what br holds beyond an empty builder and
     * the outputs already held is this output. */
    uint64_t used = qv_reservation_used(w->br), fixed = w->br_base + w->br_held;
    h->bytes = used > fixed ? used - fixed : 0;
    h->from_builder = 1;
    w->br_held += h->bytes;
    rc = qv__writer_add_piece(w, h, 0, h->array.length, err);
    if (rc) {
        h->refs = 1;
        qv__writer_held_unref(w, h);
    }
    return rc;
}

/* ---- handing over to the encoding threads ---- */

/* Takes the done list and the threads' failure (under the lock), then
 * releases outside it. */
static int reap(struct qv_writer *w, int notify, struct qv_error *err) {
    if (!w->has_thread && !w->done_head) return 0;
    qv_mutex_lock(&w->mu);
    struct qv__rowgroup *list = w->done_head;
    w->done_head = w->done_tail = NULL;
    int rc = w->worker_rc;
    struct qv_error e = w->worker_err;
    qv_mutex_unlock(&w->mu);
    while (list) {
        struct qv__rowgroup *next = list->next;
        rowgroup_retire(w, list, notify);
        w->in_flight--;
        list = next;
    }
    if (rc) {
        if (err) *err = e;
        return qv__writer_fail(w, rc, err);
    }
    return 0;
}

int qv__writer_reap(struct qv_writer *w, struct qv_error *err) { return reap(w, 1, err); }

static int encode_inline(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err) {
    w->in_flight++;
    qv__writer_encode_inline(w, rg);
    return reap(w, 1, err);
}

/* Whether the last row group, sealed by finish on a writer without threads,
 * is worth starting threads for: with one thread it is encoded on the
 * caller; with more, a row group of several columns and at least
 * QV__WRITER_PAR_MIN_BYTES is encoded by the threads, columns side by side
 * (starting them costs tens of microseconds; encoding 256 KiB about half a
 * millisecond). */
#define QV__WRITER_PAR_MIN_BYTES (UINT64_C(256) << 10)

static int worth_threads(const struct qv_writer *w, const struct qv__rowgroup *rg) {
    return w->n_workers > 1 && w->n_columns > 1 && rg->bytes >= QV__WRITER_PAR_MIN_BYTES;
}

/* Seals and encodes inline (finish without threads, or QV_WRITER_INLINE)
 * or hands over. */
static int seal(struct qv_writer *w, int inline_now, int last, struct qv_error *err) {
    int rc = qv__writer_take_builder(w, err);
    if (rc) return rc;
    struct qv__rowgroup *rg = w->open;
    if (!rg || rg->n_pieces == 0) return 0;
    w->open = NULL;
    rg->index = w->next_index++;
    rg->last = last;
    qv_reservation_release_slack(w->br);
    int32_t n = w->n_columns;
    if (n > 0) {
        rg->tasks = qv_calloc(w->r, (size_t)n * sizeof *rg->tasks, err);
        rg->order = rg->tasks ? qv_calloc(w->r, (size_t)n * sizeof *rg->order, err) : NULL;
        if (!rg->order) {
            if (rg->tasks) qv_free(w->r, rg->tasks, (size_t)n * sizeof *rg->tasks);
            rg->tasks = NULL;
            rowgroup_retire(w, rg, 0);
            return qv__writer_fail(w, ENOMEM, err);
        }
        rg->n_tasks = n;
    }
    qv__writer_plan(w, rg);
    rc = qv__relative_plan(w, rg, err);
    if (rc) {
        qv_error_wrap(err, rc, "writer '%s': row group %lld: choosing relative columns: ",
                      w->sink.name, (long long)rg->index);
        rowgroup_retire(w, rg, 0);
        return qv__writer_fail(w, rc, err);
    }
    if (w->max_in_flight == QV_WRITER_INLINE || (inline_now && !worth_threads(w, rg)))
        return encode_inline(w, rg, err);
    if (!w->has_thread) {
        rc = qv__writer_start_threads(w);
        if (rc && !w->has_thread) {
            /* No thread to be had: this writer encodes on the caller. */
            w->max_in_flight = QV_WRITER_INLINE;
            return encode_inline(w, rg, err);
        }
    }
    /* Waits for room, releasing what the threads finish meanwhile. */
    for (;;) {
        rc = reap(w, 1, err);
        if (rc) {
            rowgroup_retire(w, rg, 0);
            return rc;
        }
        if (w->in_flight < w->max_in_flight) break;
        qv_mutex_lock(&w->mu);
        if (!w->done_head && !w->worker_rc) qv_cond_wait(&w->done, &w->mu);
        qv_mutex_unlock(&w->mu);
    }
    w->in_flight++;
    qv__writer_enqueue(w, rg);
    return 0;
}

int qv__writer_seal(struct qv_writer *w, struct qv_error *err) { return seal(w, 0, 0, err); }

int qv__writer_drain(struct qv_writer *w, struct qv_error *err) {
    /* The last row group: a writer without threads encodes it here rather
     * than start threads for it, unless it is worth them. */
    int rc = seal(w, !w->has_thread, 1, err);
    if (rc) return rc;
    qv__writer_join_threads(w);
    return reap(w, 1, err);
}

void qv__writer_stop(struct qv_writer *w) {
    if (w->has_thread) {
        atomic_store(&w->cancel, 1);
        qv__writer_join_threads(w);
    }
    struct qv_error ignored;
    reap(w, 0, &ignored);
    if (w->open) {
        /* Retire the row group in the making unwritten. */
        struct qv__rowgroup *rg = w->open;
        w->open = NULL;
        rg->encoded = 0;
        rowgroup_retire(w, rg, 0);
    }
    qv_builder_reset(w->builder);
    qv__builder_restart(w->builder);
}
