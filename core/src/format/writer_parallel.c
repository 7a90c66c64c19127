/* The writer's encoding threads: which column of which sealed row group is
 * encoded next, and the committer that writes the encoded columns to the
 * file in order.
 *
 * Work is handed out by task: one top-level column of one row group. Row
 * groups are served oldest first (so the oldest is written, and its arrays
 * released, as early as can be), and within a row group the columns that
 * took longest in the previous row group go first: the slow column (a long
 * text column) then runs beside the others instead of after them, which
 * keeps the row group's last task from leaving the other threads idle.
 * That order only decides who encodes what when; the bytes do not depend on
 * it, because each task encodes into buffers of its own and the committer
 * writes tasks strictly in file order (row group, then column).
 *
 * The caller encoding inline (QV_WRITER_INLINE, or the last row group of a
 * writer without threads) takes the columns in file order and times none:
 * with one encoder there is nothing to overlap, and a column encoded ahead
 * of its turn would wait, its output charged, until the columns before it
 * are encoded and written. Ordered by time, which column that was depended
 * on the clock (a preempted short column looked slow), and so did the
 * inline writer's peak memory: the smallest memory_limit it succeeds under
 * moved from run to run (test_enc_zstd_mem.c). In file order every column
 * is written, and its output freed, before the next one is encoded.
 *
 * The committer is a role, not a thread: whoever marks a task done takes it
 * if no one holds it, and writes every task that is done and next in order,
 * then gives it back. Taking and giving back happen under `mu` together
 * with the check of the next task's state, so a task finished just as the
 * role is given back is never left unwritten.
 *
 * Failures. A task's failure is remembered as pending when it is the first
 * in file order so far; the committer, reaching a failed task, makes it the
 * writer's failure: so the error reported is the first in file order
 * whichever thread failed first in time. Tasks after a pending failure in
 * file order are skipped (those before it still run), as is every task not
 * yet started once the writer has failed or is aborted; row groups then
 * reach the done list unwritten for the caller to release. */
#include <stdlib.h>
#include <string.h>

#include "format/writer_internal.h"

/* ---- handing out tasks (under mu) ---- */

/* Orders the row group's columns by the time each took last, longest
 * first; columns never timed keep their schema order after the timed ones
 * (a stable insertion sort: the ordering is computed once per row group). */
static void order_columns(struct qv_writer *w, struct qv__rowgroup *rg) {
    int32_t n = rg->n_tasks;
    for (int32_t i = 0; i < n; i++) {
        int32_t c = i;
        uint64_t cost = w->col_ns[c];
        int32_t j = i;
        while (j > 0 && w->col_ns[rg->order[j - 1]] < cost) {
            rg->order[j] = rg->order[j - 1];
            j--;
        }
        rg->order[j] = c;
    }
}

void qv__writer_task_done(struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c,
                          struct qv__task *t) {
    t->state = QV__TASK_DONE;
    if (rg->index == 0 && !w->taught[c]) {
        w->taught[c] = 1;
        qv_cond_broadcast(&w->learned);
    }
}

/* Marks a task skipped: done, nothing to write. */
static void skip_task(struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c,
                      struct qv__task *t) {
    t->rc = ECANCELED;
    qv__writer_task_done(w, rg, c, t);
}

/* The next task to encode (marked running), or NULL: with `threaded`, the
 * columns of a row group in the order of order_columns, else in file order.
 * After a failure or an abort, tasks are skipped instead (*skipped counts
 * them: the caller then runs the committer for them). */
static struct qv__task *take_task(struct qv_writer *w, int threaded, struct qv__rowgroup **rg_out,
                                  int32_t *col_out, int *skipped) {
    for (;;) {
        struct qv__rowgroup *rg = w->dispatch;
        if (!rg) return NULL;
        if (rg->dispatched == rg->n_tasks) {
            w->dispatch = rg->next;
            continue;
        }
        if (rg->dispatched == 0 && threaded) order_columns(w, rg);
        int32_t c = threaded ? rg->order[rg->dispatched] : rg->dispatched;
        rg->dispatched++;
        struct qv__task *t = &rg->tasks[c];
        /* After a failure only the tasks before it in file order still
         * run: one of them may fail too, and that one is reported. */
        int after = w->pend_rc && (rg->index > w->pend_rg ||
                                   (rg->index == w->pend_rg && c > w->pend_col));
        if (w->worker_rc || after || atomic_load(&w->cancel)) {
            skip_task(w, rg, c, t);
            (*skipped)++;
            continue;
        }
        t->state = QV__TASK_RUNNING;
        *rg_out = rg;
        *col_out = c;
        return t;
    }
}

/* ---- the committer ---- */

/* Records the failure of task (rg, c) as pending when it is the first in
 * file order so far. Under mu. */
static void note_failure(struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c, int rc,
                         const struct qv_error *e) {
    if (w->pend_rc &&
        (w->pend_rg < rg->index || (w->pend_rg == rg->index && w->pend_col < c)))
        return;
    w->pend_rc = rc;
    w->pend_rg = rg->index;
    w->pend_col = c;
    w->pend_err = *e;
}

static void set_failure(struct qv_writer *w, int rc, const struct qv_error *e) {
    if (w->worker_rc) return;
    w->worker_rc = rc;
    w->worker_err = *e;
    qv_cond_signal(&w->done); /* a caller waiting for room returns the failure */
}

/* Called with mu held; returns with mu held. Takes the committer role if
 * it is free and writes every task that is done and next in file order,
 * ending row groups and moving them to the done list. */
static void commit_ready(struct qv_writer *w) {
    if (w->committing) return;
    w->committing = 1;
    for (;;) {
        struct qv__rowgroup *rg = w->queue_head;
        if (!rg) break;
        struct qv_error e;
        int rc = 0;
        if (rg->committed < rg->n_tasks) {
            int32_t c = rg->committed;
            struct qv__task *t = &rg->tasks[c];
            if (t->state != QV__TASK_DONE) break;
            int failed = w->worker_rc != 0;
            int trc = t->rc;
            if (trc && !failed) {
                /* Every task before it was written: it is the pending
                 * failure (tasks after a pending one are skipped, and one
                 * before it that fails becomes the pending one), or it was
                 * skipped by an abort. */
                if (w->pend_rc && w->pend_rg == rg->index && w->pend_col == c) {
                    rc = w->pend_rc;
                    e = w->pend_err;
                } else {
                    rc = trc;
                    qv_error_set(&e, trc, "writer '%s': row group %lld: aborted", w->sink.name,
                                 (long long)rg->index);
                }
            }
            qv_mutex_unlock(&w->mu);
            if (!failed && !trc) rc = qv__writer_commit_task(w, rg, t, &e);
            qv__writer_task_free(t);
            qv_mutex_lock(&w->mu);
            rg->committed++;
            if (rc) set_failure(w, rc, &e);
            continue;
        }
        /* Every column is written (or dropped): the row group ends. */
        int failed = w->worker_rc != 0;
        qv_mutex_unlock(&w->mu);
        if (!failed) rc = qv__writer_end_row_group(w, rg, &e);
        qv_mutex_lock(&w->mu);
        if (rc) set_failure(w, rc, &e);
        w->queue_head = rg->next;
        if (!w->queue_head) w->queue_tail = NULL;
        if (w->dispatch == rg) w->dispatch = rg->next;
        rg->next = NULL;
        if (w->done_tail) w->done_tail->next = rg;
        else w->done_head = rg;
        w->done_tail = rg;
        qv_cond_signal(&w->done);
    }
    w->committing = 0;
}

/* ---- the loop every encoding thread runs ---- */

/* Encodes tasks until none is left to hand out. `threaded` (an encoding
 * thread): the columns ordered and timed, then waits for more until told
 * to stop; else (the caller encoding inline) in file order, untimed, and
 * returns. Called and returns with mu held. */
static void work(struct qv_writer *w, struct qv__wworker *wk, int threaded) {
    for (;;) {
        struct qv__rowgroup *rg = NULL;
        int32_t c = 0;
        int skipped = 0;
        struct qv__task *t = take_task(w, threaded, &rg, &c, &skipped);
        if (skipped) commit_ready(w);
        if (!t) {
            if (!threaded || w->stop) return;
            qv_cond_wait(&w->work, &w->mu);
            continue;
        }
        qv_mutex_unlock(&w->mu);
        struct qv_error e;
        uint64_t t0 = threaded ? qv_now_ns() : 0;
        qv__writer_encode_task(wk, rg, c, t, &e);
        uint64_t ns = threaded ? qv_now_ns() - t0 : 0;
        qv_mutex_lock(&w->mu);
        if (threaded) w->col_ns[c] = ns;
        if (t->rc) note_failure(w, rg, c, t->rc, &e);
        qv__writer_task_done(w, rg, c, t);
        commit_ready(w);
    }
}

static void *thread_main(void *arg) {
    struct qv__wworker *wk = arg;
    struct qv_writer *w = wk->w;
    qv_mutex_lock(&w->mu);
    work(w, wk, 1);
    qv_mutex_unlock(&w->mu);
    return NULL;
}

int qv__writer_start_threads(struct qv_writer *w) {
    for (int i = 0; i < w->n_workers; i++) {
        struct qv__wworker *wk = &w->workers[i];
        if (wk->started) continue;
        int rc = qv_thread_create(&wk->thread, thread_main, wk);
        if (rc) return rc;
        wk->started = 1;
        w->has_thread = 1;
    }
    return 0;
}

/* Appends a sealed row group to the list in flight. Under mu. */
static void append(struct qv_writer *w, struct qv__rowgroup *rg) {
    rg->next = NULL;
    if (w->queue_tail) w->queue_tail->next = rg;
    else w->queue_head = rg;
    w->queue_tail = rg;
    if (!w->dispatch) w->dispatch = rg;
}

void qv__writer_enqueue(struct qv_writer *w, struct qv__rowgroup *rg) {
    qv_mutex_lock(&w->mu);
    w->stop = 0;
    append(w, rg);
    /* A row group of no columns has no task whose end would commit it:
     * it is ended here (when it is next in file order). */
    if (rg->n_tasks == 0) commit_ready(w);
    qv_cond_broadcast(&w->work);
    qv_mutex_unlock(&w->mu);
}

void qv__writer_encode_inline(struct qv_writer *w, struct qv__rowgroup *rg) {
    qv_mutex_lock(&w->mu);
    append(w, rg);
    /* No thread runs: the caller is the only encoder and the committer, and
     * every task of the row group is written when work returns (a row group
     * of no columns has none: commit_ready ends it). In file order, each
     * column written as soon as it is encoded (see the top of the file). */
    work(w, &w->workers[0], 0);
    commit_ready(w);
    qv_mutex_unlock(&w->mu);
}

void qv__writer_join_threads(struct qv_writer *w) {
    if (!w->has_thread) return;
    qv_mutex_lock(&w->mu);
    w->stop = 1;
    qv_cond_broadcast(&w->work);
    qv_mutex_unlock(&w->mu);
    for (int i = 0; i < w->n_workers; i++) {
        if (!w->workers[i].started) continue;
        qv_thread_join(w->workers[i].thread);
        w->workers[i].started = 0;
    }
    w->has_thread = 0;
}
