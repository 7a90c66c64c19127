/* The scan stream: plans units, decodes filter columns, evaluates, decodes
 * projected columns for surviving rows, and hands out batches through an
 * ArrowArrayStream with bounded prefetch. See quiver/scan.h for the
 * contract; this comment explains the machinery.
 *
 * One producer (a thread, or the consumer itself in synchronous mode) makes
 * batches in file order. Each batch has up to two phases (filter columns,
 * projected columns); a phase is a set of column tasks on a task board that
 * the producer and the helper threads drain together, then the producer
 * waits for the last one. So workers share one batch, and memory in flight
 * does not grow with the number of workers. Completed batches go into a ring
 * of `prefetch` slots; the producer starts a batch only when a slot is free. */
#include <stdio.h>
#include <string.h>

#include "base/corrupt.h"
#include "base/dcheck.h"
#include "base/thread.h"
#include "format/reader_internal.h"
#include "scan/scan_internal.h"

#define QV_SCAN_SMALL_TAKE 4096

enum { T_FILTER = 0, T_PROJECT = 1 };

struct colstate {
    int32_t column;
    const uint8_t *keep;         /* fields read (nested projection), NULL = all */
    const struct qv_field *field; /* the type decoded: the column's, or pruned */
    struct qv_reservation *res; /* decoding state; used by one task at a time */
    struct qv_column_reader *cr;
    int64_t rg;
};

struct qv_scan {
    const struct qv_reader *rd;
    struct qv_reservation *r;
    struct qv_pool *pool;
    struct qv_expr *filter;
    struct qv__filter *flt;      /* the filter, conjunct by conjunct (filter.c) */
    struct qv__filter_ctx *fctx; /* the producer's context of it */
    struct qv__plan plan;
    int64_t batch_rows, max_rows;
    int prefetch, nthreads;
    int validate; /* enum qv_scan_validate */
    unsigned cast; /* enum qv_cast flags */

    /* Column states: one per column needed whole (projected or filtered),
     * plus one per column projected in part (a nested projection), which a
     * filter on the same column does not share: the filter reads the whole
     * column, as the predicate's paths index the full type. */
    int32_t n_cols;
    struct colstate *cols; /* room for 2 per schema column */
    struct qv__proj_col *pcols; /* the nested projection (paths), or NULL */
    int32_t n_proj, n_filter;
    int32_t *proj;           /* -> cols index */
    int32_t *filt;           /* -> cols index */
    int32_t *child_of_column;/* schema column -> child in the filter batch, or -1 */
    const struct qv_field **proj_fields;

    struct qv_reservation *prod; /* the producer's scratch */
    int64_t unit, pos, rows_out;
    /* The batch in the making. */
    int64_t cur_rg, cur_lo, cur_n;
    const int64_t *cur_rows;
    int64_t *sel;
    size_t sel_size;
    uint8_t *bits;
    size_t bits_size;
    struct ArrowArray *farr; /* filter arrays, per filter column */
    struct ArrowArray **fchildren; /* &farr[i]: the filter batch's children (n_filter) */
    struct ArrowArray *parr; /* projected arrays, per projected column */

    /* Threads. */
    qv_thread *threads;
    int started;
    qv_mutex mu;
    qv_cond cv_task, cv_done, cv_queue;
    int task_kind;
    int32_t n_tasks, next_task, done_tasks;
    int task_rc;
    struct qv_error task_err;
    int shutdown, cancel, sync_ready;
    struct ArrowArray *queue;
    int qhead, qcount, finished, prod_rc;
    struct qv_error prod_err;
    struct qv_scan_stats stats;  /* published under mu (threads) */
    struct qv_scan_stats pstats; /* the producer's own counts */
    /* Segment bytes loaded by column readers, counted by whichever thread
     * (producer or helper) loads them: atomic, read without the lock. */
    int64_t bytes_read;

    struct qv__scan_hooks hooks; /* of a front-end layer (qv__scan_open_hooked) */

    struct qv_error last; /* what get_last_error and qv_scan_last_error report */
};

/* ---- tasks ---- */

static int ensure_reader(struct qv_scan *s, struct colstate *c, int64_t rg, struct qv_error *err) {
    if (c->cr && c->rg == rg) return 0;
    /* Moving keeps the column's read buffer from one row group to the next. */
    int rc = c->cr ? qv_column_reader_move(&c->cr, rg, err)
                   : qv_column_reader_open_nodes(s->rd, rg, c->column, c->keep, c->res, &c->cr, err);
    c->rg = rc ? -1 : rg;
    if (!rc)
        __atomic_fetch_add(&s->bytes_read, (int64_t)qv__column_reader_loaded_bytes(c->cr),
                           __ATOMIC_RELAXED);
    return rc;
}

static int decode_into(struct qv_scan *s, struct colstate *c, struct ArrowArray *out,
                       struct qv_reservation *tree_r, struct qv_error *err) {
    int rc = qv_owned_array_create(out, c->field, tree_r, err);
    if (rc) return rc;
    rc = s->cur_rows ? qv_column_reader_take_into(c->cr, s->cur_rows, s->cur_n, out, tree_r, err)
                     : qv_column_reader_read_into(c->cr, s->cur_lo, s->cur_n, out, tree_r, err);
    if (rc) out->release(out);
    return rc;
}

/* Checks a decoded output column (opts->validate) on the thread that decoded
 * it; on failure releases it and returns EIO naming file, column and row
 * group. */
static int validate_column(struct qv_scan *s, const struct colstate *c, struct ArrowArray *a,
                           struct qv_error *err) {
    const struct qv_field *f = c->field;
    enum qv_validate_level lv =
        s->validate == QV_SCAN_VALIDATE_FULL ? QV_VALIDATE_FULL : QV_VALIDATE_CHEAP;
    int rc = qv_arrow_array_validate(a, f, lv, err);
    if (!rc) return 0;
    a->release(a);
    if (!err) return EIO;
    qv__corrupt_mark(err); /* the file is at fault, not an argument */
    qv_error_wrap(err, EIO,
                  "file '%.300s': column '%.200s', row group %lld is corrupt: it decoded to an "
                  "invalid array: ",
                  qv_reader_path(s->rd), f->name ? f->name : "", (long long)s->cur_rg);
    return EIO;
}

static int exec_task(struct qv_scan *s, int kind, int32_t i, struct qv_error *err) {
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE))
        return qv_error_set(err, ECANCELED, "scan cancelled");
    struct colstate *c = &s->cols[kind == T_FILTER ? s->filt[i] : s->proj[i]];
    int rc = ensure_reader(s, c, s->cur_rg, err);
    if (rc) return rc;
    if (kind == T_FILTER) return decode_into(s, c, &s->farr[i], c->res, err);
    /* An output column gets its own reservation, which travels with it. */
    struct qv_reservation *res;
    struct qv_reservation_options ro = {.name = "scan column"};
    rc = qv_reservation_create(s->pool, &ro, &res, err);
    if (rc) return rc;
    rc = decode_into(s, c, &s->parr[i], res, err);
    if (!rc && s->validate) rc = validate_column(s, c, &s->parr[i], err);
    if (!rc && s->cast) {
        struct qv__cast_where w = {qv_reader_path(s->rd), s->cur_rg, s->cur_lo, s->cur_rows};
        rc = qv__cast_column(&s->parr[i], c->field, s->cast, res, &w, err);
    }
    if (rc) {
        qv_reservation_destroy(res);
        return rc;
    }
    return qv__column_adopt(&s->parr[i], res, err);
}

static void note_task_error(struct qv_scan *s, int rc, const struct qv_error *err) {
    if (rc && !s->task_rc) {
        s->task_rc = rc;
        s->task_err = *err;
    }
}

/* Runs a phase: n tasks of `kind`, with the helpers when there are any. */
static int run_tasks(struct qv_scan *s, int kind, int32_t n, struct qv_error *err) {
    if (s->nthreads <= 1) {
        for (int32_t i = 0; i < n; i++) {
            int rc = exec_task(s, kind, i, err);
            if (rc) return rc;
        }
        return 0;
    }
    qv_mutex_lock(&s->mu);
    s->task_kind = kind;
    s->n_tasks = n;
    s->next_task = 0;
    s->done_tasks = 0;
    s->task_rc = 0;
    qv_cond_broadcast(&s->cv_task);
    while (s->next_task < s->n_tasks) {
        int32_t i = s->next_task++;
        int skip = s->task_rc != 0;
        qv_mutex_unlock(&s->mu);
        struct qv_error e;
        int rc = skip ? 0 : exec_task(s, kind, i, &e);
        qv_mutex_lock(&s->mu);
        note_task_error(s, rc, &e);
        s->done_tasks++;
    }
    while (s->done_tasks < s->n_tasks) qv_cond_wait(&s->cv_done, &s->mu);
    int rc = s->task_rc;
    if (rc && err) *err = s->task_err;
    s->n_tasks = 0;
    qv_mutex_unlock(&s->mu);
    return rc;
}

static void *helper_main(void *arg) {
    struct qv_scan *s = arg;
    qv_mutex_lock(&s->mu);
    for (;;) {
        while (!s->shutdown && s->next_task >= s->n_tasks) qv_cond_wait(&s->cv_task, &s->mu);
        if (s->shutdown && s->next_task >= s->n_tasks) break;
        int32_t i = s->next_task++;
        int kind = s->task_kind, skip = s->task_rc != 0;
        qv_mutex_unlock(&s->mu);
        struct qv_error e;
        int rc = skip ? 0 : exec_task(s, kind, i, &e);
        qv_mutex_lock(&s->mu);
        note_task_error(s, rc, &e);
        if (++s->done_tasks == s->n_tasks) qv_cond_signal(&s->cv_done);
    }
    qv_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- producing one batch ---- */

static void release_arrays(struct ArrowArray *a, int32_t n) {
    for (int32_t i = 0; i < n; i++)
        if (a[i].release) a[i].release(&a[i]);
}

static int grow_scratch(struct qv_scan *s, int64_t n, struct qv_error *err) {
    size_t need = (size_t)(n ? n : 1) * sizeof(int64_t);
    if (need > s->sel_size) {
        int64_t *p = qv_realloc(s->prod, s->sel, s->sel_size, need, err);
        if (!p) return ENOMEM;
        s->sel = p;
        s->sel_size = need;
    }
    size_t bneed = (size_t)qv_bytes_for_bits(n ? n : 1);
    if (bneed > s->bits_size) {
        uint8_t *b = qv_realloc(s->prod, s->bits, s->bits_size, bneed, err);
        if (!b) return ENOMEM;
        s->bits = b;
        s->bits_size = bneed;
    }
    return 0;
}

/* The filter reads its columns through the scan's column states, which
 * the projection shares: a column both filtered and projected is loaded
 * once per row group. */
static int filter_reader(void *arg, int32_t column, int64_t rg, struct qv_column_reader **cr,
                         struct qv_error *err) {
    struct qv_scan *s = arg;
    for (int32_t i = 0; i < s->n_filter; i++) {
        struct colstate *c = &s->cols[s->filt[i]];
        if (c->column != column) continue;
        int rc = ensure_reader(s, c, rg, err);
        *cr = rc ? NULL : c->cr;
        return rc;
    }
    return qv_error_set(err, EINVAL, "scan: column %d is not a filter column", (int)column);
}

/* Evaluates the filter on the current batch (filter.c decodes what it
 * needs) and narrows the batch to the rows where it is TRUE. */
static int apply_filter(struct qv_scan *s, struct qv_error *err) {
    int rc = grow_scratch(s, s->cur_n, err);
    if (rc) return rc;
    struct qv__filter_counts fc = {0};
    int64_t k = 0;
    rc = qv__filter_batch(s->fctx, s->cur_rg, s->cur_lo, s->cur_rows, s->cur_n, s->sel, &k, &fc,
                          &s->cancel, err);
    __atomic_fetch_add(&s->bytes_read, fc.bytes_read, __ATOMIC_RELAXED);
    if (rc) return rc;
    s->pstats.rows_decoded += s->cur_n;
    s->pstats.rows_filtered += s->cur_n - k;
    if (k < s->cur_n) {
        s->cur_rows = s->sel;
        s->cur_n = k;
    }
    return 0;
}

/* Makes the next batch into `out`, or leaves out->release NULL at the end. */
static int produce_one(struct qv_scan *s, struct ArrowArray *out, struct qv_error *err) {
    out->release = NULL;
    for (;;) {
        if (s->unit >= s->plan.n_units || (s->max_rows && s->rows_out >= s->max_rows)) return 0;
        const struct qv__unit *u = &s->plan.units[s->unit];
        int64_t total = u->take ? u->n_take : u->hi - u->lo;
        int64_t n = total - s->pos < s->batch_rows ? total - s->pos : s->batch_rows;
        s->cur_rg = u->rg;
        s->cur_n = n;
        s->cur_rows = u->take ? u->take + s->pos : NULL;
        s->cur_lo = u->take ? 0 : u->lo + s->pos;
        s->pos += n;
        if (s->pos >= total) {
            s->unit++;
            s->pos = 0;
        }
        if (n == 0) continue;
        if (s->filter) {
            int rc = apply_filter(s, err);
            if (rc) return rc;
            if (s->cur_n == 0) continue;
        } else {
            s->pstats.rows_decoded += n;
        }
        if (s->max_rows && s->cur_n > s->max_rows - s->rows_out) s->cur_n = s->max_rows - s->rows_out;
        int rc = run_tasks(s, T_PROJECT, s->n_proj, err);
        if (rc) {
            release_arrays(s->parr, s->n_proj);
            return rc;
        }
        rc = qv__batch_assemble(out, s->parr, s->n_proj, s->cur_n, s->pool, err);
        if (rc) return rc;
        s->rows_out += s->cur_n;
        s->pstats.rows_output += s->cur_n;
        s->pstats.batches++;
        return 0;
    }
}

static void *producer_main(void *arg) {
    struct qv_scan *s = arg;
    for (;;) {
        qv_mutex_lock(&s->mu);
        while (s->qcount >= s->prefetch && !__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE))
            qv_cond_wait(&s->cv_queue, &s->mu);
        int cancel = __atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE);
        qv_mutex_unlock(&s->mu);
        if (cancel) break;
        struct ArrowArray b;
        struct qv_error e;
        qv_error_clear(&e);
        int rc = produce_one(s, &b, &e);
        qv_mutex_lock(&s->mu);
        s->stats.rows_decoded = s->pstats.rows_decoded;
        s->stats.rows_output = s->pstats.rows_output;
        s->stats.batches = s->pstats.batches;
        s->stats.rows_filtered = s->pstats.rows_filtered;
        if (rc || !b.release) {
            s->prod_rc = rc;
            s->prod_err = e;
            s->finished = 1;
            qv_cond_broadcast(&s->cv_queue);
            qv_mutex_unlock(&s->mu);
            break;
        }
        /* The wait above left a free slot; the queue never holds more
         * than `prefetch` batches, and a queued batch is a live one. */
        QV_DCHECK(s->qcount >= 0 && s->qcount < s->prefetch);
        QV_DCHECK(b.release != NULL);
        s->queue[(s->qhead + s->qcount) % s->prefetch] = b;
        s->qcount++;
        if (s->qcount > s->stats.max_queued) s->stats.max_queued = s->qcount;
        qv_cond_broadcast(&s->cv_queue);
        qv_mutex_unlock(&s->mu);
    }
    qv_mutex_lock(&s->mu);
    s->shutdown = 1;
    qv_cond_broadcast(&s->cv_task);
    qv_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- the stream ---- */

/* The schema gets its own reservation, which travels with it: consumers
 * keep schemas after releasing the stream, and may release them on any
 * thread. */
/* Keeps the whole error record of a failed call (code, kind, message) for
 * get_last_error and qv_scan_last_error; a record without a code takes the
 * call's. */
static void set_last(struct qv_scan *s, int rc, const struct qv_error *e) {
    s->last = *e;
    if (!s->last.code) {
        s->last.code = rc;
        s->last.kind = qv_error_kind_of(rc);
    }
}

static int stream_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    struct qv_scan *s = st->private_data;
    struct qv_error err;
    out->release = NULL;
    int32_t n = s->n_proj;
    struct qv_reservation *res;
    struct qv_reservation_options ro = {.name = "scan schema"};
    int rc = qv_reservation_create(s->pool, &ro, &res, &err);
    /* The root with the projected (possibly pruned) columns as children;
     * any number of them: the list is charged like everything else. */
    size_t kids_size = (size_t)(n ? n : 1) * sizeof(struct qv_field);
    struct qv_field *kids = rc ? NULL : qv_alloc(res, kids_size, &err);
    if (!rc && !kids) {
        rc = ENOMEM;
        qv_reservation_destroy(res);
    }
    if (!rc) {
        struct qv_field root = qv_reader_schema(s->rd)->root;
        for (int32_t i = 0; i < n; i++) kids[i] = *s->cols[s->proj[i]].field;
        root.children = kids;
        root.n_children = n;
        rc = qv_field_export(&root, res, out, &err);
        qv_free(res, kids, kids_size);
        if (!rc) rc = qv__cast_schema(out, s->cast, res, &err);
        if (rc) qv_reservation_destroy(res);
        else rc = qv__schema_adopt(out, res, &err);
    }
    if (!rc && s->hooks.schema) {
        struct ArrowSchema tmp = *out;
        out->release = NULL;
        qv_error_clear(&err);
        rc = s->hooks.schema(s->hooks.ctx, &tmp, out, &err);
    }
    if (rc) set_last(s, rc, &err);
    return rc;
}

/* What get_next returns once qv_scan_cancel was called (queued batches are
 * dropped by release). */
static int scan_cancelled(struct qv_scan *s) {
    return qv_error_set(&s->last, ECANCELED, "scan cancelled");
}

int qv__scan_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    struct qv_scan *s = st->private_data;
    out->release = NULL;
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) return scan_cancelled(s);
    if (s->nthreads == 0) { /* synchronous */
        if (s->prod_rc) return s->prod_rc;
        struct qv_error e;
        qv_error_clear(&e);
        int rc = s->finished ? 0 : produce_one(s, out, &e);
        if (rc) {
            s->prod_rc = rc;
            set_last(s, rc, &e);
        } else if (!out->release) {
            s->finished = 1;
        }
        return rc;
    }
    qv_mutex_lock(&s->mu);
    int cancel;
    while (!(cancel = __atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) && s->qcount == 0 &&
           !s->finished)
        qv_cond_wait(&s->cv_queue, &s->mu);
    if (cancel) {
        qv_mutex_unlock(&s->mu);
        return scan_cancelled(s);
    }
    int rc = s->prod_rc;
    if (rc) {
        set_last(s, rc, &s->prod_err);
    } else if (s->qcount) {
        QV_DCHECK(s->qcount <= s->prefetch && s->qhead >= 0 && s->qhead < s->prefetch);
        /* A slot is handed out once: a released batch still queued would be
         * given to the consumer a second time. */
        QV_DCHECK(s->queue[s->qhead].release != NULL);
        *out = s->queue[s->qhead];
        s->queue[s->qhead].release = NULL;
        s->qhead = (s->qhead + 1) % s->prefetch;
        s->qcount--;
        qv_cond_broadcast(&s->cv_queue);
    }
    qv_mutex_unlock(&s->mu);
    return rc;
}

/* get_next: the scan's batches, through the hooks of a front-end layer
 * when it has some. */
static int stream_get_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    struct qv_scan *s = st->private_data;
    if (!s->hooks.next && !s->hooks.batch) return qv__scan_next(st, out);
    out->release = NULL;
    struct qv_error e;
    qv_error_clear(&e);
    int rc = s->hooks.next ? s->hooks.next(s->hooks.ctx, st, out, &e) : qv__scan_next(st, out);
    if (!rc && out->release && s->hooks.batch) rc = s->hooks.batch(s->hooks.ctx, out, &e);
    /* An error of the scan itself is already in s->last. */
    if (rc && e.message[0]) set_last(s, rc, &e);
    return rc;
}

static const char *stream_last_error(struct ArrowArrayStream *st) {
    struct qv_scan *s = st->private_data;
    return s->last.message[0] ? s->last.message : NULL;
}


static void scan_free(struct qv_scan *s) {
    if (s->started) {
        qv_mutex_lock(&s->mu);
        /* Atomic: tasks poll it without the lock to stop early. */
        __atomic_store_n(&s->cancel, 1, __ATOMIC_RELEASE);
        s->shutdown = 1;
        qv_cond_broadcast(&s->cv_queue);
        qv_cond_broadcast(&s->cv_task);
        qv_mutex_unlock(&s->mu);
        for (int i = 0; i < s->started; i++) qv_thread_join(s->threads[i]);
    }
    if (s->queue) {
        QV_DCHECK(s->qcount >= 0 && s->qcount <= s->prefetch);
        for (int i = 0; i < s->qcount; i++) {
            struct ArrowArray *a = &s->queue[(s->qhead + i) % s->prefetch];
            if (a->release) a->release(a);
        }
        qv_free(s->r, s->queue, (size_t)s->prefetch * sizeof *s->queue);
    }
    if (s->threads) qv_free(s->r, s->threads, (size_t)s->nthreads * sizeof *s->threads);
    for (int32_t i = 0; s->cols && i < s->n_cols; i++) {
        qv_column_reader_close(s->cols[i].cr);
        qv_reservation_destroy(s->cols[i].res);
    }
    if (s->prod) {
        if (s->sel) qv_free(s->prod, s->sel, s->sel_size);
        if (s->bits) qv_free(s->prod, s->bits, s->bits_size);
        qv_reservation_destroy(s->prod);
    }
    struct qv_reservation *r = s->r;
    int32_t ncol = (int32_t)qv_reader_schema(s->rd)->root.n_children;
    if (s->cols) qv_free(r, s->cols, 2 * (size_t)(ncol ? ncol : 1) * sizeof *s->cols);
    qv__projection_free(s->pcols, ncol, r);
    if (s->proj) qv_free(r, s->proj, (size_t)(ncol ? ncol : 1) * sizeof *s->proj);
    if (s->filt) qv_free(r, s->filt, (size_t)(ncol ? ncol : 1) * sizeof *s->filt);
    if (s->child_of_column) qv_free(r, s->child_of_column, (size_t)(ncol ? ncol : 1) * sizeof(int32_t));
    if (s->farr) qv_free(r, s->farr, (size_t)(ncol ? ncol : 1) * sizeof *s->farr);
    if (s->parr) qv_free(r, s->parr, (size_t)(ncol ? ncol : 1) * sizeof *s->parr);
    if (s->fchildren)
        qv_free(r, s->fchildren, (size_t)(s->n_filter ? s->n_filter : 1) * sizeof *s->fchildren);
    qv__plan_free(&s->plan, r);
    qv__filter_ctx_destroy(s->fctx);
    qv__filter_destroy(s->flt);
    qv_expr_destroy(s->filter);
    if (s->sync_ready) {
        qv_cond_destroy(&s->cv_queue);
        qv_cond_destroy(&s->cv_done);
        qv_cond_destroy(&s->cv_task);
        qv_mutex_destroy(&s->mu);
    }
    qv_free(r, s, sizeof *s);
}

static void stream_release(struct ArrowArrayStream *st) {
    if (!st->release) return;
    struct qv_scan *s = st->private_data;
    struct qv__scan_hooks hooks = s->hooks;
    scan_free(s);
    st->release = NULL;
    /* Last: the hooks may free what the scan's memory came from. */
    if (hooks.released) hooks.released(hooks.ctx);
}

/* Finds or adds the colstate of schema column c. */
static int32_t col_slot(struct qv_scan *s, int32_t c, int32_t *slot_of) {
    if (slot_of[c] < 0) {
        slot_of[c] = s->n_cols;
        s->cols[s->n_cols].column = c;
        s->cols[s->n_cols].field = &qv_reader_schema(s->rd)->root.children[c];
        s->cols[s->n_cols].rg = -1;
        s->n_cols++;
    }
    return slot_of[c];
}

int qv_scan_open(const struct qv_reader *reader, const struct qv_scan_options *opts,
                 struct qv_reservation *r, struct ArrowArrayStream *out, struct qv_error *err) {
    return qv__scan_open_hooked(reader, opts, r, NULL, out, err);
}

int qv__scan_open_hooked(const struct qv_reader *reader, const struct qv_scan_options *opts,
                         struct qv_reservation *r, const struct qv__scan_hooks *hooks,
                         struct ArrowArrayStream *out, struct qv_error *err) {
    static const struct qv_scan_options defaults = {0};
    memset(out, 0, sizeof *out);
    if (!opts) opts = &defaults;
    struct qv_expr *filter = opts->filter_expr;
    const struct qv_schema *schema = qv_reader_schema(reader);
    int32_t ncol = (int32_t)schema->root.n_children;
    size_t nc = (size_t)(ncol ? ncol : 1);
    struct qv_scan *s = qv_calloc(r, sizeof *s, err);
    if (!s) {
        qv_expr_destroy(filter);
        return ENOMEM;
    }
    s->rd = reader;
    s->r = r;
    if (hooks) s->hooks = *hooks;
    s->pool = qv_reservation_pool(r);
    s->filter = filter;
    s->batch_rows = opts->batch_rows > 0 ? opts->batch_rows : 65536;
    s->max_rows = opts->max_rows > 0 ? opts->max_rows : 0;
    s->prefetch = opts->prefetch > 0 ? opts->prefetch : 1;
    s->validate = opts->validate;
    s->cast = opts->cast;
    s->nthreads = opts->threads == QV_SCAN_SYNC ? 0
                  : opts->threads > 0          ? opts->threads
                  : (qv_cpu_count() < 4 ? qv_cpu_count() : 4);
    /* A small take is over before threads would have started: by default it
     * runs on the consumer's thread (a warm 100-row take of lineitem SF1:
     * ~1 ms synchronous, 3-4 ms with workers started and joined). */
    if (opts->threads == 0 && opts->take && opts->n_take <= QV_SCAN_SMALL_TAKE) s->nthreads = 0;
    if (s->nthreads > 64) s->nthreads = 64;
    int rc = 0;
    /* Negative counts are caller bugs, not defaults: refused rather than
     * read as 0 (a batch_rows of -5 gave batches of 65536 rows, a n_take of
     * -1 an allocation of 2^64 - 8 bytes). */
    if (opts->batch_rows < 0 || opts->max_rows < 0 || opts->prefetch < 0 ||
        opts->threads < QV_SCAN_SYNC || opts->n_take < 0) {
        rc = qv_error_set(err, EINVAL,
                          "scan: batch_rows %lld, max_rows %lld, prefetch %d, threads %d, n_take "
                          "%lld: counts must not be negative (threads: -1 = synchronous)",
                          (long long)opts->batch_rows, (long long)opts->max_rows, opts->prefetch,
                          opts->threads, (long long)opts->n_take);
        goto fail;
    }
    if (opts->prefetch > QV_SCAN_MAX_PREFETCH) {
        rc = qv_error_set(err, EINVAL,
                          "scan: prefetch %d exceeds the maximum of %d completed batches waiting",
                          opts->prefetch, QV_SCAN_MAX_PREFETCH);
        goto fail;
    }
    if (opts->validate < QV_SCAN_VALIDATE_NONE || opts->validate > QV_SCAN_VALIDATE_FULL) {
        rc = qv_error_set(err, EINVAL, "scan: validate %d is not a qv_scan_validate tier (0-2)",
                          opts->validate);
        goto fail;
    }
    if (opts->nan_order != QV_NAN_IEEE && opts->nan_order != QV_NAN_LARGEST) {
        rc = qv_error_set(err, EINVAL, "scan: nan_order %d is not a qv_nan_order (0 or 1)",
                          opts->nan_order);
        goto fail;
    }
    if (opts->cast & ~(unsigned)QV_CAST_SPARK) {
        rc = qv_error_set(err, EINVAL, "scan: unknown cast flags 0x%x", opts->cast & ~(unsigned)QV_CAST_SPARK);
        goto fail;
    }
    if (opts->filter && filter) {
        rc = qv_error_set(err, EINVAL, "scan: give a textual or a structured filter, not both");
        goto fail;
    }
    if (opts->filter) {
        rc = qv_expr_parse(opts->filter, r, &s->filter, err);
        if (rc) goto fail;
    }
    if (s->filter) {
        rc = qv_expr_bind_ex(s->filter, schema, opts->nan_order, err);
        if (rc) goto fail;
    }
    s->cols = qv_calloc(r, 2 * nc * sizeof *s->cols, err);
    s->proj = s->cols ? qv_calloc(r, nc * sizeof *s->proj, err) : NULL;
    s->filt = s->proj ? qv_calloc(r, nc * sizeof *s->filt, err) : NULL;
    s->child_of_column = s->filt ? qv_calloc(r, nc * sizeof(int32_t), err) : NULL;
    s->farr = s->child_of_column ? qv_calloc(r, nc * sizeof *s->farr, err) : NULL;
    s->parr = s->farr ? qv_calloc(r, nc * sizeof *s->parr, err) : NULL;
    if (!s->parr) {
        rc = ENOMEM;
        goto fail;
    }
    int32_t *slot_of = s->child_of_column; /* reused as scratch below, then filled */
    for (int32_t c = 0; c < ncol; c++) slot_of[c] = -1;
    if (opts->paths && opts->columns) {
        rc = qv_error_set(err, EINVAL, "scan: give columns or paths, not both");
        goto fail;
    }
    int32_t np = opts->columns ? opts->n_columns : ncol;
    if (opts->paths) {
        rc = qv__projection_build(schema, opts->paths, opts->n_paths, r, &s->pcols, &np, err);
        if (rc) goto fail;
        for (int32_t i = 0; i < np; i++) {
            const struct qv__proj_col *pc = &s->pcols[i];
            if (!pc->keep) {
                s->proj[s->n_proj++] = col_slot(s, pc->column, slot_of);
                continue;
            }
            /* Not in slot_of: a filter on this column gets a whole one. */
            struct colstate *c = &s->cols[s->n_cols];
            c->column = pc->column;
            c->keep = pc->keep;
            c->field = pc->field;
            c->rg = -1;
            s->proj[s->n_proj++] = s->n_cols++;
        }
        np = 0;
    }
    if (np < 0 || np > ncol) {
        rc = qv_error_set(err, EINVAL, "scan: %d projected columns of %d", np, ncol);
        goto fail;
    }
    for (int32_t i = 0; i < np; i++) {
        int32_t c = opts->columns ? opts->columns[i] : i;
        if (c < 0 || c >= ncol) {
            rc = qv_error_set(err, EINVAL, "scan: projected column %d out of range (%d columns)", c, ncol);
            goto fail;
        }
        /* Only projected columns have a slot yet: a slot means "twice". */
        if (slot_of[c] >= 0) {
            rc = qv_error_set(err, EINVAL, "scan: column '%s' projected twice",
                              schema->root.children[c].name);
            goto fail;
        }
        s->proj[s->n_proj++] = col_slot(s, c, slot_of);
    }
    if (s->filter) {
        /* Any number of filter columns (generated filters OR over hundreds):
         * the distinct columns are at most the schema's, and s->filt has room
         * for them all; each column index is replaced by its slot in place. */
        int32_t nf = qv_expr_columns(s->filter, NULL, 0);
        if (nf < 0 || nf > ncol) {
            rc = qv_error_set(err, EINVAL, "scan: the filter reads %d columns of %d", nf, ncol);
            goto fail;
        }
        qv_expr_columns(s->filter, s->filt, nf);
        for (int32_t i = 0; i < nf; i++) s->filt[i] = col_slot(s, s->filt[i], slot_of);
        s->n_filter = nf;
        s->fchildren = qv_calloc(r, (size_t)(nf ? nf : 1) * sizeof *s->fchildren, err);
        if (!s->fchildren) {
            rc = ENOMEM;
            goto fail;
        }
        for (int32_t i = 0; i < nf; i++) s->fchildren[i] = &s->farr[i];
    }
    /* child_of_column: schema column -> child index in the filter batch. */
    for (int32_t c = 0; c < ncol; c++) slot_of[c] = -1;
    for (int32_t i = 0; i < s->n_filter; i++) s->child_of_column[s->cols[s->filt[i]].column] = i;
    for (int32_t i = 0; i < s->n_cols; i++) {
        char name[96];
        snprintf(name, sizeof name, "scan column %.60s", schema->root.children[s->cols[i].column].name);
        struct qv_reservation_options ro = {.name = name};
        rc = qv_reservation_create(s->pool, &ro, &s->cols[i].res, err);
        if (rc) goto fail;
    }
    struct qv_reservation_options po = {.name = "scan producer"};
    rc = qv_reservation_create(s->pool, &po, &s->prod, err);
    if (rc) goto fail;
    rc = qv__plan_build(reader, opts, s->filter, r, &s->plan, err);
    if (rc) goto fail;
    if (s->filter) {
        rc = qv__filter_create(reader, s->filter, s->pool, r, &s->flt, err);
        if (!rc) rc = qv__filter_ctx_create(s->flt, s->pool, &s->fctx, err);
        if (rc) goto fail;
        qv__filter_ctx_set_readers(s->fctx, filter_reader, s);
    }
    s->stats.row_groups_total = s->plan.row_groups_total;
    s->stats.row_groups_pruned = s->plan.row_groups_pruned;
    s->stats.threads = s->nthreads;
    if (s->nthreads > 0) {
        s->queue = qv_calloc(r, (size_t)s->prefetch * sizeof *s->queue, err);
        s->threads = s->queue ? qv_calloc(r, (size_t)s->nthreads * sizeof *s->threads, err) : NULL;
        if (!s->threads) {
            rc = ENOMEM;
            goto fail;
        }
        qv_mutex_init(&s->mu);
        qv_cond_init(&s->cv_task);
        qv_cond_init(&s->cv_done);
        qv_cond_init(&s->cv_queue);
        s->sync_ready = 1;
        for (int i = 0; i < s->nthreads; i++) {
            if (qv_thread_create(&s->threads[i], i == 0 ? producer_main : helper_main, s) != 0) {
                rc = qv_error_set(err, ENOMEM, "scan: cannot start worker thread %d", i);
                goto fail;
            }
            s->started++;
        }
    }
    out->get_schema = stream_get_schema;
    out->get_next = stream_get_next;
    out->get_last_error = stream_last_error;
    out->release = stream_release;
    out->private_data = s;
    return 0;
fail:
    scan_free(s);
    return rc;
}

int qv_scan_cancel(struct ArrowArrayStream *stream) {
    if (!stream || stream->release != stream_release) return EINVAL;
    struct qv_scan *s = stream->private_data;
    /* The flag first: a synchronous get_next polls it between column tasks
     * (exec_task) and has no one to wake. */
    __atomic_store_n(&s->cancel, 1, __ATOMIC_RELEASE);
    if (s->sync_ready) {
        /* Under the lock, so a consumer or producer between its check of the
         * flag and its wait cannot miss the wake-up. */
        qv_mutex_lock(&s->mu);
        qv_cond_broadcast(&s->cv_queue);
        qv_cond_broadcast(&s->cv_task);
        qv_mutex_unlock(&s->mu);
    }
    return 0;
}

int qv_scan_wait(struct ArrowArrayStream *stream, int64_t timeout_ms) {
    if (!stream || stream->release != stream_release) return EINVAL;
    struct qv_scan *s = stream->private_data;
    if (s->nthreads == 0) return 0;
    qv_mutex_lock(&s->mu);
#define QV_SCAN_READY (s->qcount || s->finished || __atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE))
    if (!QV_SCAN_READY && timeout_ms > 0) qv_cond_timedwait_ms(&s->cv_queue, &s->mu, timeout_ms);
    int ready = QV_SCAN_READY;
#undef QV_SCAN_READY
    qv_mutex_unlock(&s->mu);
    return ready ? 0 : ETIMEDOUT;
}

int qv_scan_last_error(const struct ArrowArrayStream *stream, struct qv_error *out) {
    if (!stream || stream->release != stream_release || !out) return EINVAL;
    const struct qv_scan *s = stream->private_data;
    *out = s->last;
    return 0;
}

int qv_scan_get_stats(const struct ArrowArrayStream *stream, struct qv_scan_stats *out) {
    if (!stream || stream->release != stream_release) return EINVAL;
    struct qv_scan *s = stream->private_data;
    if (s->nthreads == 0) {
        *out = s->stats;
        out->rows_decoded = s->pstats.rows_decoded;
        out->rows_output = s->pstats.rows_output;
        out->batches = s->pstats.batches;
        out->rows_filtered = s->pstats.rows_filtered;
        out->bytes_read = __atomic_load_n(&s->bytes_read, __ATOMIC_RELAXED);
        return 0;
    }
    qv_mutex_lock(&s->mu);
    *out = s->stats;
    qv_mutex_unlock(&s->mu);
    out->bytes_read = __atomic_load_n(&s->bytes_read, __ATOMIC_RELAXED);
    return 0;
}
