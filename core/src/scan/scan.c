/* The scan stream: plans units, cuts them into batches, filters each batch,
 * decodes the projected columns of its surviving rows, and hands batches out
 * in file order through an ArrowArrayStream with bounded prefetch. See
 * quiver/scan.h for the contract; this comment explains the machinery.
 *
 * Batches and tasks. Batch number `seq` (in file order) lives in slot
 * seq % cap of a window of `cap` slots (`prefetch`, below), from the moment
 * it is started until the consumer takes it. A batch is a set of tasks: one
 * filter task (the whole filter, on a filter context), then, once it is
 * known how many of its rows survive, one task per projected column, then
 * one assembly task. Workers take the oldest runnable task of any batch in
 * the window, so the slow column of batch N (l_comment) runs while the fast
 * columns of batch N + 1 are decoded: there is no barrier at the end of a
 * batch. A worker that finds nothing to run starts the next batch, when the
 * window allows it.
 *
 * The bound. At most W batches are being built at once (W = 2 with two or
 * more workers and prefetch >= 2, else 1), and at most cap = prefetch
 * batches are started and not yet taken by the consumer (completed or being
 * built): the bound of the scheduler this one replaced, whatever the number
 * of workers. So batches overlap from prefetch = 2 on; at prefetch = 1 the
 * workers share one batch, its slowest columns first. (QV_SCAN_EXTRA = 1
 * allows one more batch with two or more workers, for overlap at prefetch
 * 1, at a measured cost in memory.) A narrow scan (below) builds W = 2
 * batches at once with one worker or at prefetch 1 too: cap is then
 * max(prefetch, 2). A task of a batch beyond prefetch that finds no memory
 * does not fail it: the task waits until its batch is within prefetch of
 * the consumer, and no batch beyond prefetch is started again (extra_off).
 *
 * Columns. Each projected column has one column reader (one read buffer),
 * used by one task at a time: a column's tasks run one after another, in
 * batch order (tasks are taken oldest batch first, and a column that is busy
 * is skipped). In a narrow scan (fewer projected columns than workers + 1,
 * the consumer helping, and no filter; workers alone with a caller's source,
 * whose reads the consumer leaves to them) that makes a column's tasks the
 * scan's critical path, so each projected column there also gets a second
 * reader, its twin (twins[j], with a read buffer and decoders of its own,
 * kept on its own row group), and batch N + 1's task of the column runs
 * beside batch N's, however cheap the column (twin_wanted). A filtered
 * scan with two or more workers, whose window is two batches already, gets
 * twins on the same condition (fewer projected columns than workers + 1),
 * except for columns measured cheap (QV_SCAN_TWIN_MIN_NS); other scans have
 * none (twins is NULL). A task takes the first reader when it is free, the twin when it
 * is not (pick_reader); the twin is made the first time it is used. A twin
 * that finds no memory (its reservation, read buffer or decoding state) is
 * closed and its task goes back to the first reader, whose memory is held
 * already: the column has one reader from then on, and the scan goes on.
 * Any other task that finds no memory while twins hold some makes the scan
 * give up all its twins and runs again (give_up_twins): a scan never fails
 * for memory a twin holds. Readers a front end
 * lends (hooks.reader_get, a take's) have no twin. So decoding state is at
 * most two readers per projected column, each loading a row group once per
 * run of batches it takes there. Filter contexts (qv__filter_ctx) hold their
 * own readers; there are W of them, one per batch being built.
 *
 * Order of what the consumer sees. The projected rows of batch N are cut by
 * max_rows only after the filters of every batch before it have run
 * (`decided`), so max_rows counts rows in file order. A failed task fails
 * its batch; batches after it are abandoned, batches before it are finished
 * and handed out, and the error is returned where batch N would have been:
 * the first error in batch order wins.
 *
 * Synchronous scans (threads = QV_SCAN_SYNC, and scans whose planned work is
 * small) run the same tasks one after another inside get_next. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/corrupt.h"
#include "base/dcheck.h"
#include "base/thread.h"
#include "format/reader_internal.h"
#include "scan/scan_internal.h"
#include "scan/scan_testing.h"

/* Planned work at or below this many rows runs on the consumer's thread:
 * starting and joining workers costs more than decoding it (a warm 100-row
 * take of lineitem SF1: ~1 ms synchronous, 3-4 ms with workers). */
#define QV_SCAN_SMALL_ROWS 4096

/* Batches started ahead of the consumer beyond `prefetch` with two or more
 * workers. 0: the bound of the single-batch scheduler (prefetch batches
 * started and not taken), so batches overlap from prefetch = 2 on. 1 let
 * them overlap at prefetch = 1 too, but measured on lineitem SF1 (flat read,
 * prefetch 1) it raised peak anonymous RSS from 50.8 to 54.1 MB with 2
 * workers and from 56.8 to 70.5 MB with 4 (pool peak 31.6 to 38.4 and 43.7):
 * the memory bound comes first. */
#ifndef QV_SCAN_EXTRA
#define QV_SCAN_EXTRA 0
#endif

/* Second readers (twins) of projected columns, where they pay (1), or one
 * reader per column (0). */
#ifndef QV_SCAN_TWINS
#define QV_SCAN_TWINS 1
#endif

/* In a filtered scan, a column whose smoothed task time is below this gets
 * no twin: handing its next batch to another thread (a wake-up, tens of
 * microseconds on a loaded machine) and loading its row group a second
 * time would cost more than running the tasks one after another
 * (l_partkey of lineitem: ~50 us a 64k-row batch; l_comment: ~2.5 ms).
 * Narrow scans give every column its twin: there the consumer and a worker
 * then decode alternate batches of a cheap column, and a single int64
 * column read into a table with two workers took about half the time it
 * took without (lineitem's l_partkey 11 -> 6 ms, nested's id 4.1 -> 2.2
 * ms, Python, docs/scan.md), where the threshold had made two workers
 * slower than one. */
#ifndef QV_SCAN_TWIN_MIN_NS
#define QV_SCAN_TWIN_MIN_NS 250000
#endif

/* For tests (scan_testing.h): twin reader creations that fail with ENOMEM
 * as if the pool refused them, process-wide; the cheap-task threshold. */
int qv__scan_twin_open_fail;
int64_t qv__scan_twin_min_ns = QV_SCAN_TWIN_MIN_NS;

/* Filter tasks of consecutive batches may run at once, each on its own
 * context (1), or one at a time on one context (0). */
#ifndef QV_SCAN_FILTERS_AT_ONCE
#define QV_SCAN_FILTERS_AT_ONCE 1
#endif

enum bstate {
    B_FREE = 0,
    B_FILTER,   /* its filter task is pending or running */
    B_FILTERED, /* filtered, waiting for the batches before it (max_rows) */
    B_PROJECT,  /* projection tasks, then assembly */
    B_DONE,     /* assembled in `out` */
    B_EMPTY,    /* no row survived (or max_rows was reached): nothing to hand out */
    B_DEAD      /* abandoned after a failure or cancellation */
};

struct colstate {
    int32_t column;
    const uint8_t *keep;         /* fields read (nested projection), NULL = all */
    const struct qv_field *field; /* the type decoded: the column's, or pruned */
    struct qv_reservation *res; /* decoding state; used by one task at a time */
    struct qv_column_reader *cr;
    int borrowed; /* cr is the front end's (hooks.reader_get) */
    int64_t rg;
    int busy;        /* a task is using cr (under the lock) */
    int reuse;       /* a filter column too: the filter's decoded values are reused */
    int64_t cost_ns; /* smoothed time of one task: slow columns go first */
    /* The second reader of a projected column (twin[j] of projection j):
     * `no_twin` on the first one says it may not have one (a reader the
     * front end lends, or the second one failed for memory). */
    int no_twin;
};

/* Scratch of a batch being built: returned when it is assembled or dropped. */
struct work {
    struct qv_reservation *res;
    int64_t *sel;
    size_t sel_size;
    struct ArrowArray *parr; /* projected columns, n_proj */
    struct qv__decoded *dec; /* per projection task: what the filter decoded of its column */
    int32_t *order;          /* projection tasks in the order they are taken */
    uint8_t *claimed;        /* per projection task */
    int in_use;
};

struct batch {
    int state;
    int64_t seq;
    int64_t rg, lo, n;   /* rows [lo, lo + n) of row group rg, or rows[0..n) */
    const int64_t *rows;
    struct work *w;
    int filter_claimed, fctx;
    int32_t first_open;  /* order[] before it are all claimed */
    int32_t running, done;
    int assembling;
    int rc;              /* the batch failed: returned where it is handed out */
    struct qv_error err;
    struct ArrowArray out;
};

struct qv_scan {
    const struct qv_reader *rd;
    struct qv_reservation *r;
    struct qv_pool *pool;
    struct qv_expr *filter;
    struct qv__plan plan;
    int64_t batch_rows, max_rows;
    int prefetch, nthreads;
    int consumer_reads; /* the consumer may take tasks that read (claim_task) */
    int validate; /* enum qv_scan_validate */
    unsigned cast; /* enum qv_cast flags */

    /* Column states: one per projected column (whole, or in part for a
     * nested projection). The filter reads through its own contexts. */
    int32_t n_cols;
    struct colstate *cols; /* room for 2 per schema column */
    struct qv__proj_col *pcols; /* the nested projection (paths), or NULL */
    int32_t n_proj;
    int32_t *proj;           /* -> cols index */
    const struct qv_field **proj_fields;
    /* Second readers (twins), one per projection task, in a narrow scan
     * or a filtered one like it (below), else NULL: a column may then be decoded by two tasks at once
     * (batches N and N + 1), each on its own reader (twin_wanted). Their
     * reservations and readers are made the first time one is used. */
    struct colstate *twins;
    int narrow;      /* fewer projected columns than threads (workers + consumer), no filter */
    int extra_off;   /* a narrow scan's batch beyond prefetch found no memory: none any more */
    int32_t twins_opened, twins_dropped; /* for tests (qv__scan_twin_counts) */
    int64_t twin_frees; /* atomic: twins whose memory went back, counted after the free */

    struct qv__filter *flt;
    struct qv__filter_ctx **fctx;
    int n_fctx;
    uint8_t *fctx_busy;
    int64_t *fctx_rg;      /* the row group each context filtered last */
    int filters_running;

    /* The window (all under mu when there are threads). */
    int window, cap;
    struct batch *slots;   /* cap */
    struct work *works;    /* window */
    int64_t unit, pos;     /* planning: the next batch's rows */
    int64_t head;          /* the next batch handed out */
    int64_t next_start;    /* the next batch started */
    int64_t decided;       /* batches before it have their output rows fixed */
    int64_t rows_decided;
    int64_t fail_seq;      /* the first failed batch, or INT64_MAX */
    int building;
    int planned_all;       /* no batch will be started any more */

    /* Threads. */
    qv_thread *threads;
    int started;
    qv_mutex mu;
    qv_cond cv_task, cv_queue;
    int shutdown, cancel, sync_ready;
    int idle;    /* workers waiting for work */
    int waiting; /* consumers waiting in get_next or qv_scan_wait */
    int prod_rc;
    struct qv_error prod_err;
    struct qv_scan_stats stats; /* under mu (threads) */
    /* Segment bytes loaded by column readers, counted by whichever thread
     * loads them: atomic, read without the lock. */
    int64_t bytes_read;
    int64_t reused_rows; /* atomic: rows gathered from the filter's values */

    struct qv__scan_hooks hooks; /* of a front-end layer (qv__scan_open_hooked) */

    struct qv_error last; /* what get_last_error and qv_scan_last_error report */
};

static int reuse_on = 1; /* qv__scan_testing_reuse */

void qv__scan_testing_reuse(int on) { __atomic_store_n(&reuse_on, on, __ATOMIC_RELAXED); }

int64_t qv__scan_testing_reused_rows(const struct ArrowArrayStream *scan) {
    const struct qv_scan *s = scan->private_data;
    return __atomic_load_n(&s->reused_rows, __ATOMIC_RELAXED);
}

static struct batch *slot_of_seq(struct qv_scan *s, int64_t seq) { return &s->slots[seq % s->cap]; }

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- tasks (run without the lock) ---- */

static int ensure_reader(struct qv_scan *s, struct colstate *c, int64_t rg, struct qv_error *err) {
    if (c->cr && c->rg == rg) return 0;
    if (s->hooks.reader_get && !c->keep) {
        /* A take: the front end keeps readers across takes. */
        if (c->cr) s->hooks.reader_put(s->hooks.ctx, c->rg, c->column, c->cr, 1);
        c->cr = NULL;
        c->rg = -1;
        int fresh = 0;
        int rc = s->hooks.reader_get(s->hooks.ctx, rg, c->column, &c->cr, &fresh, err);
        if (rc) return rc;
        c->borrowed = 1;
        c->rg = rg;
        if (fresh)
            __atomic_fetch_add(&s->bytes_read, (int64_t)qv__column_reader_loaded_bytes(c->cr),
                               __ATOMIC_RELAXED);
        return 0;
    }
    if (!c->res) { /* a twin's first use */
        int rc = 0;
        if (__atomic_load_n(&qv__scan_twin_open_fail, __ATOMIC_RELAXED) > 0 &&
            __atomic_fetch_sub(&qv__scan_twin_open_fail, 1, __ATOMIC_RELAXED) > 0)
            rc = qv_error_set(err, ENOMEM, "scan: second reader of column %d refused (test)",
                              (int)c->column);
        char name[96];
        snprintf(name, sizeof name, "scan column %.60s (2nd reader)",
                 qv_reader_schema(s->rd)->root.children[c->column].name);
        struct qv_reservation_options ro = {.name = name};
        if (!rc) rc = qv_reservation_create(s->pool, &ro, &c->res, err);
        if (rc) return rc;
        __atomic_fetch_add(&s->twins_opened, 1, __ATOMIC_RELAXED);
    }
    /* Moving keeps the column's read buffer from one row group to the next. */
    int rc = c->cr ? qv_column_reader_move(&c->cr, rg, err)
                   : qv_column_reader_open_nodes(s->rd, rg, c->column, c->keep, c->res, &c->cr, err);
    c->rg = rc ? -1 : rg;
    if (!rc)
        __atomic_fetch_add(&s->bytes_read, (int64_t)qv__column_reader_loaded_bytes(c->cr),
                           __ATOMIC_RELAXED);
    return rc;
}

/* Checks a decoded output column (opts->validate) on the thread that decoded
 * it; on failure releases it and returns EIO naming file, column and row
 * group. */
static int validate_column(struct qv_scan *s, const struct colstate *c, int64_t rg,
                           struct ArrowArray *a, struct qv_error *err) {
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
                  qv_reader_path(s->rd), f->name ? f->name : "", (long long)rg);
    return EIO;
}

/* The rows of batch b gathered from what its filter decoded of projection
 * j's column (w->dec[j], freed here) into b->w->parr[j], from a new
 * reservation *res. ENOTSUP (nothing allocated) when a row of the batch is
 * not among those decoded, which the filter rules out; the caller then
 * decodes by itself. */
static int reuse_decoded(struct qv_scan *s, struct batch *b, int32_t j,
                         struct qv_reservation **res, struct qv_error *err) {
    struct qv__decoded *d = &b->w->dec[j];
    const struct colstate *c = &s->cols[s->proj[j]];
    *res = NULL;
    struct qv_reservation_options ro = {.name = "scan column"};
    int rc = qv_reservation_create(s->pool, &ro, res, err);
    size_t isz = (size_t)(b->n ? b->n : 1) * 8;
    int64_t *idx = rc ? NULL : qv_alloc(*res, isz, err);
    if (!idx) {
        qv__decoded_free(d);
        qv_reservation_destroy(*res); /* NULL-safe; the caller destroys *res too */
        *res = NULL;
        return rc ? rc : ENOMEM;
    }
    /* Position in the decoded rows of each row of the batch. */
    rc = 0;
    for (int64_t i = 0, p = 0; i < b->n && !rc; i++) {
        int64_t row = b->rows ? b->rows[i] : b->lo + i;
        if (!d->rows) {
            idx[i] = row - d->first;
        } else {
            while (p < d->n && d->rows[p] < row) p++;
            idx[i] = p;
            if (p == d->n || d->rows[p] != row) rc = ENOTSUP;
        }
        if (!rc && (idx[i] < 0 || idx[i] >= d->arr.length)) rc = ENOTSUP;
    }
    if (!rc) rc = qv__array_gather(&d->arr, c->field, idx, b->n, &b->w->parr[j], *res, err);
    if (!rc) __atomic_fetch_add(&s->reused_rows, b->n, __ATOMIC_RELAXED);
    qv_free(*res, idx, isz);
    qv__decoded_free(d);
    if (rc) {
        qv_reservation_destroy(*res);
        *res = NULL;
        if (rc != ENOTSUP) return rc;
        return qv_error_set(err, ENOTSUP, "scan: the filter's values do not cover the batch");
    }
    return 0;
}

/* Projection task j of batch b: decodes its rows of column proj[j] into
 * b->w->parr[j], an adopted array with a reservation of its own, with the
 * column's reader c (its first, or its twin). */
static int exec_project(struct qv_scan *s, struct batch *b, int32_t j, struct colstate *c,
                        struct qv_error *err) {
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE))
        return qv_error_set(err, ECANCELED, "scan cancelled");
    struct ArrowArray *out = &b->w->parr[j];
    struct qv_reservation *res;
    int rc;
    if (b->w->dec[j].arr.release) {
        rc = reuse_decoded(s, b, j, &res, err);
        if (rc != ENOTSUP) goto decoded;
        qv_error_clear(err);
    }
    for (int attempt = 0;; attempt++) {
        rc = ensure_reader(s, c, b->rg, err);
        if (rc) return rc;
        struct qv_reservation_options ro = {.name = "scan column"};
        rc = qv_reservation_create(s->pool, &ro, &res, err);
        if (rc) return rc;
        rc = qv_owned_array_create(out, c->field, res, err);
        if (!rc) {
            rc = b->rows ? qv_column_reader_take_into(c->cr, b->rows, b->n, out, res, err)
                         : qv_column_reader_read_into(c->cr, b->lo, b->n, out, res, err);
            if (rc) out->release(out);
        }
        if (!rc || !c->borrowed) break;
        /* A borrowed reader's state after a failed decode is unknown: it is
         * closed. The front end then also closes the readers no take
         * borrows, so when the pool was full of what its cache kept, one
         * more attempt has room. */
        s->hooks.reader_put(s->hooks.ctx, c->rg, c->column, c->cr, 0);
        c->cr = NULL;
        c->rg = -1;
        if (rc != ENOMEM || attempt) break;
        out->release = NULL;
        qv_reservation_destroy(res);
        qv_error_clear(err);
    }
decoded:
    if (!rc && s->validate) rc = validate_column(s, c, b->rg, out, err);
    if (!rc && s->cast) {
        struct qv__cast_where w = {qv_reader_path(s->rd), b->rg, b->lo, b->rows};
        rc = qv__cast_column(out, c->field, s->cast, res, &w, err);
    }
    if (rc) {
        out->release = NULL;
        qv_reservation_destroy(res);
        return rc;
    }
    return qv__column_adopt(out, res, err);
}

/* The filter task of batch b on context fc: narrows b to its surviving rows. */
static int exec_filter(struct qv_scan *s, struct batch *b, struct qv__filter_ctx *fc,
                       struct qv__filter_counts *counts, struct qv_error *err) {
    struct work *w = b->w;
    size_t need = (size_t)(b->n ? b->n : 1) * sizeof(int64_t);
    if (need > w->sel_size) {
        int64_t *p = qv_realloc(w->res, w->sel, w->sel_size, need, err);
        if (!p) return ENOMEM;
        w->sel = p;
        w->sel_size = need;
    }
    int64_t k = 0;
    int rc = qv__filter_batch(fc, b->rg, b->lo, b->rows, b->n, w->sel, &k, counts, &s->cancel, err);
    if (rc) return rc;
    /* Projected columns the filter decoded for this batch: their values are
     * gathered from there (exec_project), not decoded again. */
    for (int32_t j = 0; j < s->n_proj && k > 0; j++)
        if (s->cols[s->proj[j]].reuse)
            qv__filter_ctx_take_decoded(fc, s->cols[s->proj[j]].column, &w->dec[j]);
    if (k < b->n) {
        b->rows = w->sel;
        b->n = k;
    }
    return 0;
}

static void release_dec(struct qv_scan *s, struct work *w) {
    for (int32_t i = 0; w->dec && i < s->n_proj; i++) qv__decoded_free(&w->dec[i]);
}

static void release_parr(struct qv_scan *s, struct work *w) {
    for (int32_t i = 0; i < s->n_proj; i++)
        if (w->parr[i].release) w->parr[i].release(&w->parr[i]);
    release_dec(s, w);
}

/* ---- planning (under the lock) ---- */

/* Takes the next batch's rows from the plan into b; 0 when there is none. */
static int plan_next(struct qv_scan *s, struct batch *b) {
    for (;;) {
        if (s->unit >= s->plan.n_units || (s->max_rows && s->rows_decided >= s->max_rows)) return 0;
        const struct qv__unit *u = &s->plan.units[s->unit];
        int64_t total = u->take ? u->n_take : u->hi - u->lo;
        int64_t n = total - s->pos < s->batch_rows ? total - s->pos : s->batch_rows;
        b->rg = u->rg;
        b->n = n;
        b->rows = u->take ? u->take + s->pos : NULL;
        b->lo = u->take ? 0 : u->lo + s->pos;
        s->pos += n;
        if (s->pos >= total) {
            s->unit++;
            s->pos = 0;
        }
        if (n > 0) return 1;
    }
}

static struct work *work_get(struct qv_scan *s) {
    for (int i = 0; i < s->window; i++)
        if (!s->works[i].in_use) {
            s->works[i].in_use = 1;
            return &s->works[i];
        }
    QV_DCHECK(0 && "more batches building than the window");
    return NULL;
}

/* The batch no longer needs its scratch (assembled, empty or dropped). */
static void work_put(struct qv_scan *s, struct batch *b) {
    if (!b->w) return;
    release_dec(s, b->w); /* an empty batch's, or one max_rows cut */
    b->w->in_use = 0;
    b->w = NULL;
    s->building--;
}

/* Slowest column first (smoothed task times), so that the tail of a batch is
 * its fast columns; column order for wide projections. */
static void order_tasks(struct qv_scan *s, int32_t *order) {
    for (int32_t i = 0; i < s->n_proj; i++) order[i] = i;
    if (s->nthreads < 2 || s->n_proj > 64) return;
    for (int32_t i = 1; i < s->n_proj; i++) {
        int32_t v = order[i], k = i;
        int64_t cv = s->cols[s->proj[v]].cost_ns;
        while (k > 0 && s->cols[s->proj[order[k - 1]]].cost_ns < cv) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = v;
    }
}

/* Fixes the output rows of filtered batches in batch order (max_rows) and
 * opens their projection tasks. */
static void decide(struct qv_scan *s) {
    while (s->decided < s->next_start) {
        struct batch *b = slot_of_seq(s, s->decided);
        if (b->state != B_FILTERED || b->rc) break;
        if (s->max_rows && b->n > s->max_rows - s->rows_decided) b->n = s->max_rows - s->rows_decided;
        s->rows_decided += b->n;
        if (s->max_rows && s->rows_decided >= s->max_rows) s->planned_all = 1;
        if (b->n == 0) {
            work_put(s, b);
            b->state = B_EMPTY;
        } else {
            b->state = B_PROJECT;
            b->first_open = 0;
            b->running = b->done = 0;
            b->assembling = 0;
            memset(b->w->claimed, 0, (size_t)(s->n_proj ? s->n_proj : 1));
            memset(b->w->parr, 0, (size_t)(s->n_proj ? s->n_proj : 1) * sizeof *b->w->parr);
            order_tasks(s, b->w->order);
        }
        s->decided++;
    }
}

/* Starts the next batch if the window allows; 1 when it did (or when it
 * found the plan exhausted, which also changes what waiters see). */
static int can_start(const struct qv_scan *s);

static int start_batch(struct qv_scan *s) {
    if (!can_start(s)) return 0;
    struct batch *b = slot_of_seq(s, s->next_start);
    QV_DCHECK(b->state == B_FREE);
    memset(b, 0, sizeof *b);
    if (!plan_next(s, b)) {
        s->planned_all = 1;
        return 1;
    }
    b->seq = s->next_start++;
    b->w = work_get(s);
    s->building++;
    if (s->flt) {
        b->state = B_FILTER;
    } else {
        b->state = B_FILTERED;
        s->stats.rows_decoded += b->n;
        decide(s);
    }
    return 1;
}

/* After a failure at fail_seq: drops every batch from there on whose tasks
 * are not running (the failed one keeps its error for the consumer). */
static void drop_failed(struct qv_scan *s) {
    for (int64_t q = s->fail_seq; q < s->next_start; q++) {
        struct batch *b = slot_of_seq(s, q);
        int idle = (b->state == B_FILTER && !b->filter_claimed) || b->state == B_FILTERED ||
                   (b->state == B_PROJECT && b->running == 0 && !b->assembling);
        if (!idle) continue;
        if (b->w) release_parr(s, b->w);
        work_put(s, b);
        b->state = B_DEAD;
    }
}

static void fail_batch(struct qv_scan *s, struct batch *b, int rc, const struct qv_error *err) {
    if (!b->rc) {
        b->rc = rc;
        b->err = *err;
    }
    if (b->seq < s->fail_seq) s->fail_seq = b->seq;
}

/* ---- workers ---- */

enum { T_NONE, T_FILTER, T_PROJECT, T_ASSEMBLE };

struct task {
    int kind;
    struct batch *b;
    int32_t j; /* projection task, or filter context */
    struct colstate *c; /* the reader of a projection task */
    int64_t twin_frees; /* s->twin_frees when it was claimed */
};

/* Whether projection j's column may run on its twin (under the lock): in a
 * scan with twins (narrow, or filtered like one), unless the column has none (lent,
 * or given up for memory) or, in a filtered scan, its tasks are measured
 * cheap (QV_SCAN_TWIN_MIN_NS). */
static int twin_wanted(const struct qv_scan *s, int32_t j) {
    const struct colstate *c = &s->cols[s->proj[j]];
    if (!s->twins || c->no_twin) return 0;
    if (!s->flt) return 1;
    return !(c->cost_ns && c->cost_ns < __atomic_load_n(&qv__scan_twin_min_ns, __ATOMIC_RELAXED));
}

/* The reader a task of projection j in row group rg runs on (under the
 * lock): the column's first reader when it is free (unless only the twin is
 * in rg already), the twin when the first is busy and twin_wanted; NULL
 * when neither may run now. A twin is made the first time it is used. */
static struct colstate *pick_reader(struct qv_scan *s, int32_t j, int64_t rg) {
    struct colstate *c = &s->cols[s->proj[j]];
    struct colstate *t = twin_wanted(s, j) ? &s->twins[j] : NULL;
    if (t && t->busy) t = NULL;
    if (c->busy) return t;
    if (t && t->cr && t->rg == rg && !(c->cr && c->rg == rg)) return t;
    return c;
}

/* Claims the oldest runnable task (under the lock); with `dry`, only
 * returns the kind of the one it would claim (T_NONE: none). With
 * `consumer` and a source of the caller's (qv_reader_open_source with its
 * own read_at), only a task that reads nothing from it (its column readers
 * are already in the batch's row group, or an assembly): such a read may
 * block for as long as the source likes (a network file), and a consumer
 * inside one could not answer qv_scan_cancel or the timeout of
 * qv_scan_wait; those reads stay with the workers. Reads of a file the
 * library opened (pread or a mapping) or of memory the consumer does too:
 * handing those to a worker cost 25-33% of wall time (bench_scan --sched,
 * lineitem SF1, 1 worker). */
static int claim_task(struct qv_scan *s, struct task *t, int dry, int consumer) {
    for (int64_t q = s->head; q < s->next_start && q <= s->fail_seq; q++) {
        if (s->extra_off && q >= s->head + s->prefetch) break; /* waits for its turn */
        struct batch *b = slot_of_seq(s, q);
        if (b->rc) continue;
        if (b->state == B_FILTER && !b->filter_claimed) {
            /* The context already in this row group takes it (when busy,
             * the batch waits for it), so that each row group's filter
             * columns are loaded and verified once; otherwise any free one. */
            int i = -1;
            for (int k = 0; k < s->n_fctx && i < 0; k++)
                if (s->fctx_rg[k] == b->rg) i = k;
            if (i >= 0 && s->fctx_busy[i]) continue;
            if (consumer && !s->consumer_reads &&
                (i < 0 || !qv__filter_ctx_loaded(s->fctx[i], b->rg)))
                continue;
            for (int k = 0; k < s->n_fctx && i < 0; k++)
                if (!s->fctx_busy[k]) i = k;
            if (i < 0) continue;
            if (dry) return T_FILTER;
            s->fctx_rg[i] = b->rg;
            s->fctx_busy[i] = 1;
            s->filters_running++;
            b->filter_claimed = 1;
            b->fctx = i;
            *t = (struct task){T_FILTER, b, i, NULL, 0};
            return 1;
        }
        if (b->state != B_PROJECT) continue;
        struct work *w = b->w;
        while (b->first_open < s->n_proj && w->claimed[w->order[b->first_open]]) b->first_open++;
        for (int32_t i = b->first_open; i < s->n_proj; i++) {
            int32_t j = w->order[i];
            if (w->claimed[j]) continue;
            struct colstate *c = pick_reader(s, j, b->rg);
            if (!c) continue;
            if (consumer && !s->consumer_reads && !(c->cr && c->rg == b->rg))
                continue; /* it would read */
            if (dry) return T_PROJECT;
            w->claimed[j] = 1;
            c->busy = 1;
            b->running++;
            *t = (struct task){T_PROJECT, b, j, c, 0};
            return 1;
        }
        if (b->done == s->n_proj && !b->assembling) {
            if (dry) return T_ASSEMBLE;
            b->assembling = 1;
            *t = (struct task){T_ASSEMBLE, b, 0, NULL, 0};
            return 1;
        }
    }
    return 0;
}

/* Runs a claimed task without the lock, then records its outcome under it. */
/* Whether a task of batch b that failed with rc is put off rather than
 * failing the batch (under the lock): ENOMEM in the batch a narrow scan
 * started beyond prefetch, which runs again once it is within prefetch of
 * the consumer (extra_off). */
static int put_off_for_memory(const struct qv_scan *s, const struct batch *b, int rc) {
    return rc == ENOMEM && s->narrow && b->seq >= s->head + s->prefetch;
}

/* A twin that no task is using gives its memory back (under the lock). */
static void close_twin(struct qv_scan *s, struct colstate *t) {
    if (t->busy || !t->res) return;
    qv_column_reader_close(t->cr);
    qv_reservation_destroy(t->res);
    t->cr = NULL;
    t->res = NULL;
    t->rg = -1;
    s->twins_dropped++;
    __atomic_fetch_add(&s->twin_frees, 1, __ATOMIC_RELEASE);
}

/* A task that found no memory while twins held some (under the lock): the
 * scan gives up its twins (idle ones are closed now, busy ones when their
 * task ends) and the task runs again instead of failing its batch, so a
 * scan never fails for memory a twin holds. Held at the failure: a twin
 * holds memory now (or is busy), or one gave it back since the task was
 * claimed (twin_frees counts after the free, so a twin that held memory
 * when the task failed is seen one way or the other). Each twin is freed
 * once and none is made again, so a task runs again a bounded number of
 * times; once no twin holds memory, ENOMEM fails the batch as before. */
static int give_up_twins(struct qv_scan *s, const struct task *t, int rc) {
    if (rc != ENOMEM || !s->twins) return 0;
    int held = __atomic_load_n(&s->twin_frees, __ATOMIC_ACQUIRE) != t->twin_frees;
    /* A busy twin is its task's, which may be making its reader: counted
     * as holding memory without looking. */
    for (int32_t j = 0; j < s->n_proj; j++) held |= s->twins[j].busy || s->twins[j].res != NULL;
    if (!held) return 0;
    for (int32_t j = 0; j < s->n_proj; j++) {
        s->cols[s->proj[j]].no_twin = 1;
        close_twin(s, &s->twins[j]);
    }
    return 1;
}

static void run_task(struct qv_scan *s, struct task *t) {
    struct batch *b = t->b;
    struct qv_error e;
    qv_error_clear(&e);
    struct qv__filter_counts counts = {0};
    int64_t n_in = b->n, t0 = 0;
    int rc = 0, twin_lost = 0;
    qv_mutex_unlock(&s->mu);
    switch (t->kind) {
    case T_FILTER:
        rc = exec_filter(s, b, s->fctx[t->j], &counts, &e);
        break;
    case T_PROJECT:
        t0 = now_ns();
        rc = exec_project(s, b, t->j, t->c, &e);
        t0 = now_ns() - t0;
        if (rc == ENOMEM && t->c != &s->cols[s->proj[t->j]]) {
            /* The twin found no memory (its reader, read buffer or decoding
             * state): it is given up, and the task goes back to the
             * column's first reader, whose memory is held already. The
             * twin is still ours (busy), so it is freed without the lock. */
            qv_column_reader_close(t->c->cr);
            qv_reservation_destroy(t->c->res);
            t->c->cr = NULL;
            t->c->res = NULL;
            t->c->rg = -1;
            __atomic_fetch_add(&s->twin_frees, 1, __ATOMIC_RELEASE);
            twin_lost = 1;
        }
        break;
    default:
        rc = qv__batch_assemble(&b->out, b->w->parr, s->n_proj, b->n, s->pool, &e);
        break;
    }
    qv_mutex_lock(&s->mu);
    __atomic_fetch_add(&s->bytes_read, counts.bytes_loaded, __ATOMIC_RELAXED);
    switch (t->kind) {
    case T_FILTER:
        s->fctx_busy[t->j] = 0;
        s->filters_running--;
        if (rc) {
            /* Idle again: drop_failed takes it, or it runs again when
             * giving up the twins frees memory (a filter context starts
             * every batch afresh). */
            if (!give_up_twins(s, t, rc)) fail_batch(s, b, rc, &e);
            b->filter_claimed = 0;
            break;
        }
        s->stats.rows_decoded += n_in;
        s->stats.rows_filtered += n_in - b->n;
        b->state = B_FILTERED;
        decide(s);
        break;
    case T_PROJECT: {
        struct colstate *c = &s->cols[s->proj[t->j]];
        t->c->busy = 0;
        b->running--;
        if (t->c != c && c->no_twin) close_twin(s, t->c); /* given up while it ran */
        int put_off = !twin_lost && put_off_for_memory(s, b, rc);
        if (twin_lost || put_off || give_up_twins(s, t, rc)) {
            /* Not a failure: the task is open again, for the first reader;
             * or, when the batch is the one a narrow scan starts beyond
             * prefetch and there was no memory for it, for when it is
             * within prefetch of the consumer (no such batch is started
             * any more): it fails only if it finds none then either. */
            if (twin_lost) {
                c->no_twin = 1;
                s->twins_dropped++;
            } else if (put_off) {
                s->extra_off = 1;
            }
            b->w->claimed[t->j] = 0;
            b->first_open = 0;
            break;
        }
        c->cost_ns = c->cost_ns ? (c->cost_ns * 3 + t0) / 4 : t0;
        b->done++;
        if (rc) fail_batch(s, b, rc, &e);
        break;
    }
    default:
        /* qv__batch_assemble moved the columns in (or released them). */
        memset(b->w->parr, 0, (size_t)(s->n_proj ? s->n_proj : 1) * sizeof *b->w->parr);
        b->assembling = 0;
        int put_off = put_off_for_memory(s, b, rc);
        if (put_off || give_up_twins(s, t, rc)) {
            /* As for a projection task above: the batch beyond prefetch
             * is not failed for memory, nor one that ran out while twins
             * held memory. Its columns are gone (the failed assembly
             * released them): its projection tasks run again, when it is
             * within prefetch of the consumer. */
            if (put_off) s->extra_off = 1;
            b->done = 0;
            b->first_open = 0;
            memset(b->w->claimed, 0, (size_t)(s->n_proj ? s->n_proj : 1));
            break;
        }
        if (rc) {
            fail_batch(s, b, rc, &e);
            break;
        }
        work_put(s, b);
        b->state = B_DONE;
        s->stats.rows_output += b->n;
        s->stats.batches++;
        break;
    }
    if (s->fail_seq != INT64_MAX) drop_failed(s);
}

/* Completed batches among the first `prefetch` positions: the queue. */
static void note_queued(struct qv_scan *s) {
    int32_t q = 0;
    for (int64_t i = s->head; i < s->next_start && i < s->head + s->prefetch; i++)
        if (slot_of_seq(s, i)->state == B_DONE) q++;
    if (q > s->stats.max_queued) s->stats.max_queued = q;
}

static void skip_empty(struct qv_scan *s);

/* Whether a batch could be started now (under the lock). */
static int can_start(const struct qv_scan *s) {
    return !s->planned_all && s->fail_seq == INT64_MAX && s->building < s->window &&
           s->next_start - s->head < (s->extra_off ? s->prefetch : s->cap);
}

/* Wakes one idle worker when there is work worth a wake-up (under the
 * lock): a filter or column task, or a batch to start whose first tasks can
 * run beside the busy ones (it has a filter, or more than one column); any
 * work when no worker is running. One at a time: a worker that takes a
 * task wakes the next if more is left. An assembly alone, or a batch of one
 * column whose reader is busy, is left to a worker that is running (it
 * looks for work when its task ends): handing it to another thread costs
 * more than it saves (a single-column projection with 2 workers would be
 * slower than with 1). */
static void wake_worker(struct qv_scan *s) {
    if (!s->idle) return;
    struct task t;
    int kind = claim_task(s, &t, 1, 0);
    /* A worker that is not waiting is running a task and looks for more
     * when it is done; with none, whatever there is needs a wake-up. */
    int running = s->nthreads - s->idle; /* one not started yet will look */
    if (kind == T_FILTER || kind == T_PROJECT ||
        ((kind == T_ASSEMBLE || can_start(s)) && running == 0) ||
        (kind == T_NONE && can_start(s) && (s->flt || s->n_proj > 1 || s->narrow)))
        qv_cond_signal(&s->cv_task);
}

static int head_ready(struct qv_scan *s);

/* Wakes the consumer when what it waits for happened (under the lock). */
static void wake_consumer(struct qv_scan *s) {
    if (s->waiting && head_ready(s)) qv_cond_broadcast(&s->cv_queue);
}

/* Runs the oldest runnable task, or starts the next batch (under the
 * lock); 0 when there is nothing to do. Workers loop on it; so does a
 * consumer whose next batch is not ready (help_or_wait), which leaves the
 * reads of a caller's source to the workers (claim_task). */
static int work_once(struct qv_scan *s, int consumer) {
    struct task t;
    if (claim_task(s, &t, 0, consumer)) {
        t.twin_frees = __atomic_load_n(&s->twin_frees, __ATOMIC_ACQUIRE);
        wake_worker(s);
        run_task(s, &t);
        skip_empty(s); /* empty batches never reach the consumer: free their slots */
        note_queued(s);
        wake_consumer(s);
        return 1;
    }
    if (start_batch(s)) {
        wake_consumer(s);
        return 1;
    }
    return 0;
}

static void *worker_main(void *arg) {
    struct qv_scan *s = arg;
    qv_mutex_lock(&s->mu);
    while (!s->shutdown && !__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) {
        if (work_once(s, 0)) continue;
        s->idle++;
        qv_cond_wait(&s->cv_task, &s->mu);
        s->idle--;
    }
    qv_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- synchronous batches ---- */

/* Makes the next batch into `out` on the calling thread, or leaves
 * out->release NULL at the end. */
static int produce_sync(struct qv_scan *s, struct ArrowArray *out, struct qv_error *err) {
    out->release = NULL;
    for (;;) {
        struct batch *b = &s->slots[0];
        memset(b, 0, sizeof *b);
        if (!plan_next(s, b)) return 0;
        b->w = &s->works[0];
        int64_t n_in = b->n;
        if (s->flt) {
            struct qv__filter_counts counts = {0};
            int rc = exec_filter(s, b, s->fctx[0], &counts, err);
            s->bytes_read += counts.bytes_loaded;
            if (rc) return rc;
            s->stats.rows_filtered += n_in - b->n;
        }
        s->stats.rows_decoded += n_in;
        if (s->max_rows && b->n > s->max_rows - s->rows_decided) b->n = s->max_rows - s->rows_decided;
        s->rows_decided += b->n;
        if (b->n == 0) {
            release_dec(s, b->w);
            continue;
        }
        memset(b->w->parr, 0, (size_t)(s->n_proj ? s->n_proj : 1) * sizeof *b->w->parr);
        for (int32_t j = 0; j < s->n_proj; j++) {
            int rc = exec_project(s, b, j, &s->cols[s->proj[j]], err);
            if (rc) {
                release_parr(s, b->w);
                return rc;
            }
        }
        int rc = qv__batch_assemble(out, b->w->parr, s->n_proj, b->n, s->pool, err);
        if (rc) return rc;
        s->stats.rows_output += b->n;
        s->stats.batches++;
        return 0;
    }
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

/* Drops the empty batches at the head of the window (under the lock). */
static void skip_empty(struct qv_scan *s) {
    while (s->head < s->next_start && slot_of_seq(s, s->head)->state == B_EMPTY) {
        slot_of_seq(s, s->head)->state = B_FREE;
        s->head++;
        wake_worker(s); /* a window slot is free */
    }
}

/* Whether get_next would not block (under the lock). */
static int head_ready(struct qv_scan *s) {
    skip_empty(s);
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE) || s->prod_rc) return 1;
    if (s->head == s->next_start) return s->planned_all || s->fail_seq != INT64_MAX;
    const struct batch *b = slot_of_seq(s, s->head);
    return b->state == B_DONE || b->rc;
}

/* What a consumer does while the head batch is not ready (under the lock):
 * runs a task itself (the oldest, so the head batch's first) or starts a
 * batch the window allows, else waits for a wake-up, at most `ms`
 * milliseconds when ms > 0. The consumer's thread would sit idle otherwise,
 * and handing a batch over costs a wake-up per batch (tens of microseconds
 * on a loaded machine: more than decoding one column of a batch takes): a
 * consumer that helps never waits on a batch whose tasks nobody has taken.
 * It only takes work inside the window, so the bound on batches started and
 * not taken is the same. */
static void help_or_wait(struct qv_scan *s, int64_t ms) {
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) return;
    if (work_once(s, 1)) {
        /* The task may have made work (a filtered batch's columns) that a
         * worker would have taken next itself; the consumer now leaves
         * with its batch, so an idle worker takes it. */
        if (head_ready(s)) wake_worker(s);
        return;
    }
    /* What is left is running, or reads a caller's source: a worker's.
     * The consumer may have started the batch it belongs to itself. */
    wake_worker(s);
    s->waiting++;
    if (ms > 0) qv_cond_timedwait_ms(&s->cv_queue, &s->mu, ms);
    else qv_cond_wait(&s->cv_queue, &s->mu);
    s->waiting--;
}

int qv__scan_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    struct qv_scan *s = st->private_data;
    out->release = NULL;
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) return scan_cancelled(s);
    if (s->nthreads == 0) { /* synchronous */
        if (s->prod_rc) return s->prod_rc;
        struct qv_error e;
        qv_error_clear(&e);
        int rc = produce_sync(s, out, &e);
        if (rc) {
            s->prod_rc = rc;
            set_last(s, rc, &e);
        }
        return rc;
    }
    qv_mutex_lock(&s->mu);
    while (!head_ready(s)) help_or_wait(s, 0);
    int rc = s->prod_rc;
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) {
        qv_mutex_unlock(&s->mu);
        return scan_cancelled(s);
    }
    if (!rc && s->head < s->next_start) {
        struct batch *b = slot_of_seq(s, s->head);
        if (b->rc) {
            /* Batches before it were handed out intact; this one and all
             * after it are not: the error is the scan's from now on. */
            rc = s->prod_rc = b->rc;
            s->prod_err = b->err;
        } else {
            QV_DCHECK(b->state == B_DONE && b->out.release != NULL);
            *out = b->out;
            b->out.release = NULL;
            b->state = B_FREE;
            s->head++;
            wake_worker(s); /* a window slot is free */
        }
    }
    if (rc) set_last(s, rc, &s->prod_err);
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
    struct qv_reservation *r = s->r;
    int32_t ncol = (int32_t)qv_reader_schema(s->rd)->root.n_children;
    size_t np = (size_t)(ncol ? ncol : 1);
    /* The workers are gone: whatever is in the window is ours to release. */
    for (int i = 0; s->slots && i < s->cap; i++) {
        struct batch *b = &s->slots[i];
        if (b->out.release) b->out.release(&b->out);
        if (b->w) release_parr(s, b->w);
    }
    if (s->slots) qv_free(r, s->slots, (size_t)s->cap * sizeof *s->slots);
    for (int i = 0; s->works && i < s->window; i++) {
        struct work *w = &s->works[i];
        if (!w->res) continue;
        if (w->sel) qv_free(w->res, w->sel, w->sel_size);
        if (w->parr) qv_free(w->res, w->parr, np * sizeof *w->parr);
        if (w->order) qv_free(w->res, w->order, np * sizeof *w->order);
        if (w->claimed) qv_free(w->res, w->claimed, np);
        if (w->dec) qv_free(w->res, w->dec, np * sizeof *w->dec);
        qv_reservation_destroy(w->res);
    }
    if (s->works) qv_free(r, s->works, (size_t)s->window * sizeof *s->works);
    for (int i = 0; s->fctx && i < s->n_fctx; i++) qv__filter_ctx_destroy(s->fctx[i]);
    if (s->fctx) qv_free(r, s->fctx, (size_t)s->n_fctx * sizeof *s->fctx);
    if (s->fctx_busy) qv_free(r, s->fctx_busy, (size_t)s->n_fctx);
    if (s->fctx_rg) qv_free(r, s->fctx_rg, (size_t)s->n_fctx * sizeof *s->fctx_rg);
    qv__filter_destroy(s->flt);
    if (s->threads) qv_free(r, s->threads, (size_t)s->nthreads * sizeof *s->threads);
    for (int32_t i = 0; s->cols && i < s->n_cols; i++) {
        if (s->cols[i].borrowed)
            s->hooks.reader_put(s->hooks.ctx, s->cols[i].rg, s->cols[i].column, s->cols[i].cr, 1);
        else qv_column_reader_close(s->cols[i].cr);
        qv_reservation_destroy(s->cols[i].res);
    }
    if (s->cols) qv_free(r, s->cols, 2 * np * sizeof *s->cols);
    for (int32_t j = 0; s->twins && j < s->n_proj; j++) {
        qv_column_reader_close(s->twins[j].cr);
        qv_reservation_destroy(s->twins[j].res);
    }
    if (s->twins) qv_free(r, s->twins, (size_t)s->n_proj * sizeof *s->twins);
    qv__projection_free(s->pcols, ncol, r);
    if (s->proj) qv_free(r, s->proj, np * sizeof *s->proj);
    qv__plan_free(&s->plan, r);
    qv_expr_destroy(s->filter);
    if (s->sync_ready) {
        qv_cond_destroy(&s->cv_queue);
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
    s->consumer_reads = qv__source_is_ours(&reader->src);
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
    int32_t *slot_of = s->proj ? qv_alloc(r, nc * sizeof *slot_of, err) : NULL;
    if (!slot_of) {
        rc = ENOMEM;
        goto fail;
    }
    for (int32_t c = 0; c < ncol; c++) slot_of[c] = -1;
    if (opts->paths && opts->columns) {
        rc = qv_error_set(err, EINVAL, "scan: give columns or paths, not both");
        goto fail_slots;
    }
    int32_t np = opts->columns ? opts->n_columns : ncol;
    if (opts->paths) {
        rc = qv__projection_build(schema, opts->paths, opts->n_paths, r, &s->pcols, &np, err);
        if (rc) goto fail_slots;
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
        goto fail_slots;
    }
    for (int32_t i = 0; i < np; i++) {
        int32_t c = opts->columns ? opts->columns[i] : i;
        if (c < 0 || c >= ncol) {
            rc = qv_error_set(err, EINVAL, "scan: projected column %d out of range (%d columns)", c, ncol);
            goto fail_slots;
        }
        /* Only projected columns have a slot yet: a slot means "twice". */
        if (slot_of[c] >= 0) {
            rc = qv_error_set(err, EINVAL, "scan: column '%s' projected twice",
                              schema->root.children[c].name);
            goto fail_slots;
        }
        s->proj[s->n_proj++] = col_slot(s, c, slot_of);
    }
    qv_free(r, slot_of, nc * sizeof *slot_of);
    slot_of = NULL;
    for (int32_t i = 0; i < s->n_cols; i++) {
        char name[96];
        snprintf(name, sizeof name, "scan column %.60s", schema->root.children[s->cols[i].column].name);
        struct qv_reservation_options ro = {.name = name};
        rc = qv_reservation_create(s->pool, &ro, &s->cols[i].res, err);
        if (rc) goto fail;
    }
    rc = qv__plan_build(reader, opts, s->filter, r, &s->plan, err);
    if (rc) goto fail;
    s->stats.row_groups_total = s->plan.row_groups_total;
    s->stats.row_groups_pruned = s->plan.row_groups_pruned;
    /* Small reads run on the consumer's thread: one batch cannot be shared
     * out across batches, and a few thousand rows decode in less time than
     * starting and joining workers takes. */
    int64_t planned_rows = 0, planned_batches = 0;
    for (int64_t u = 0; u < s->plan.n_units; u++) {
        const struct qv__unit *pu = &s->plan.units[u];
        int64_t n = pu->take ? pu->n_take : pu->hi - pu->lo;
        planned_rows += n;
        planned_batches += (n + s->batch_rows - 1) / s->batch_rows;
    }
    if (!s->filter && s->max_rows && planned_rows > s->max_rows) {
        planned_rows = s->max_rows;
        planned_batches = (s->max_rows + s->batch_rows - 1) / s->batch_rows;
    }
    if (planned_batches <= 1 || planned_rows <= QV_SCAN_SMALL_ROWS) s->nthreads = 0;
    s->stats.threads = s->nthreads;
    /* A reader the front end lends (a take's) has no twin: the front end's
     * cache holds one per (row group, column). */
    int32_t n_twin = 0;
    for (int32_t j = 0; j < s->n_proj; j++) {
        struct colstate *c = &s->cols[s->proj[j]];
        if (s->hooks.reader_get && !c->keep) c->no_twin = 1;
        else n_twin++;
    }
    /* Narrow: fewer projected columns than threads that decode (the
     * workers and the consumer, which helps, unless the source is the
     * caller's: then it leaves the reads to the workers), so a column's
     * tasks one at a time leave threads idle. Such a scan builds two batches at once even
     * at prefetch 1 or with one worker, so that batch N + 1's columns run
     * on their twins beside batch N's. Not with a filter: each batch being
     * built would hold a filter context of its own. */
    const int few = QV_SCAN_TWINS && n_twin > 0 && s->n_proj < s->nthreads + s->consumer_reads;
    s->narrow = s->nthreads >= 1 && !s->filter && few;
    s->cap = s->nthreads ? s->prefetch + (s->nthreads >= 2 ? QV_SCAN_EXTRA : 0) : 1;
    if (s->narrow && s->cap < 2) s->cap = 2;
    s->window = (s->nthreads >= 2 || s->narrow) && s->cap >= 2 ? 2 : 1;
    /* A filtered scan with two or more workers builds two batches at once
     * anyway (one filter context each): with fewer projected columns than
     * threads, its columns get twins too, so that batch N + 1's slow column
     * is decoded beside batch N's instead of after it (nested's Q6, two
     * workers: 17.4 -> 13.0 ms; its list<string> column was decoded one
     * batch at a time). It needs no more filter contexts or batches. */
    int twins = s->narrow || (s->filter && s->nthreads >= 2 && s->window == 2 && few);
    if (twins) { /* window is 2: cap >= 2 and a worker */
        s->twins = qv_calloc(r, (size_t)s->n_proj * sizeof *s->twins, err);
        if (!s->twins) {
            rc = ENOMEM;
            goto fail;
        }
        for (int32_t j = 0; j < s->n_proj; j++) {
            const struct colstate *c = &s->cols[s->proj[j]];
            s->twins[j] = (struct colstate){.column = c->column, .keep = c->keep,
                                            .field = c->field, .rg = -1, .no_twin = 1};
        }
    }
    s->slots = qv_calloc(r, (size_t)s->cap * sizeof *s->slots, err);
    s->works = s->slots ? qv_calloc(r, (size_t)s->window * sizeof *s->works, err) : NULL;
    if (!s->works) {
        rc = ENOMEM;
        goto fail;
    }
    for (int i = 0; i < s->window; i++) {
        struct work *w = &s->works[i];
        struct qv_reservation_options wo = {.name = "scan batch"};
        rc = qv_reservation_create(s->pool, &wo, &w->res, err);
        if (rc) goto fail;
        w->parr = qv_calloc(w->res, nc * sizeof *w->parr, err);
        w->order = w->parr ? qv_calloc(w->res, nc * sizeof *w->order, err) : NULL;
        w->claimed = w->order ? qv_calloc(w->res, nc, err) : NULL;
        w->dec = w->claimed ? qv_calloc(w->res, nc * sizeof *w->dec, err) : NULL;
        if (!w->dec) {
            rc = ENOMEM;
            goto fail;
        }
    }
    if (s->filter) {
        rc = qv__filter_create(reader, s->filter, s->pool, r, &s->flt, err);
        if (rc) goto fail;
        s->n_fctx = QV_SCAN_FILTERS_AT_ONCE ? s->window : 1;
        s->fctx = qv_calloc(r, (size_t)s->n_fctx * sizeof *s->fctx, err);
        s->fctx_busy = s->fctx ? qv_calloc(r, (size_t)s->n_fctx, err) : NULL;
        s->fctx_rg = s->fctx_busy ? qv_calloc(r, (size_t)s->n_fctx * sizeof *s->fctx_rg, err) : NULL;
        if (!s->fctx_rg) {
            rc = ENOMEM;
            goto fail;
        }
        for (int i = 0; i < s->n_fctx; i++) {
            s->fctx_rg[i] = -1;
            rc = qv__filter_ctx_create(s->flt, s->pool, &s->fctx[i], err);
            if (rc) goto fail;
        }
        /* A whole projected column that the filter reads too: what the
         * filter decodes of it is gathered for the projection. */
        for (int32_t j = 0; j < s->n_proj; j++) {
            struct colstate *c = &s->cols[s->proj[j]];
            if (c->keep || !qv__gather_supported(c->field) ||
                !__atomic_load_n(&reuse_on, __ATOMIC_RELAXED))
                continue;
            c->reuse = 1;
            for (int i = 0; i < s->n_fctx; i++) qv__filter_ctx_want(s->fctx[i], c->column);
        }
    }
    s->fail_seq = INT64_MAX;
    if (s->nthreads > 0) {
        s->threads = qv_calloc(r, (size_t)s->nthreads * sizeof *s->threads, err);
        if (!s->threads) {
            rc = ENOMEM;
            goto fail;
        }
        qv_mutex_init(&s->mu);
        qv_cond_init(&s->cv_task);
        qv_cond_init(&s->cv_queue);
        s->sync_ready = 1;
        for (int i = 0; i < s->nthreads; i++) {
            if (qv_thread_create(&s->threads[i], worker_main, s) != 0) {
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
fail_slots:
    qv_free(r, slot_of, nc * sizeof *slot_of);
fail:
    scan_free(s);
    return rc;
}

int qv_scan_cancel(struct ArrowArrayStream *stream) {
    if (!stream || stream->release != stream_release) return EINVAL;
    struct qv_scan *s = stream->private_data;
    /* The flag first: a synchronous get_next polls it between column tasks
     * (exec_project) and has no one to wake. */
    __atomic_store_n(&s->cancel, 1, __ATOMIC_RELEASE);
    if (s->sync_ready) {
        /* Under the lock, so a consumer or worker between its check of the
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
    /* The condition is broadcast for other events too (and waits may wake
     * spuriously): help or wait again until the head batch is ready or the
     * whole timeout has passed (a task the consumer runs may outlast it:
     * tasks are one column of one batch). */
    /* A timeout past ~290 years (INT64_MAX ns) would overflow the deadline
     * (and then time out at once): taken as ~146 years, i.e. no timeout. */
    if (timeout_ms > INT64_MAX / 2 / 1000000) timeout_ms = INT64_MAX / 2 / 1000000;
    const int64_t deadline = timeout_ms > 0 ? now_ns() + timeout_ms * 1000000 : 0;
    while (!head_ready(s) && timeout_ms > 0) {
        int64_t left_ms = (deadline - now_ns() + 999999) / 1000000;
        if (left_ms <= 0) break;
        help_or_wait(s, left_ms);
    }
    int ready = head_ready(s);
    qv_mutex_unlock(&s->mu);
    return ready ? 0 : ETIMEDOUT;
}

int qv_scan_last_error(const struct ArrowArrayStream *stream, struct qv_error *out) {
    if (!stream || stream->release != stream_release || !out) return EINVAL;
    const struct qv_scan *s = stream->private_data;
    *out = s->last;
    return 0;
}

int qv__scan_twin_counts(const struct ArrowArrayStream *stream, int32_t *opened, int32_t *dropped) {
    if (!stream || stream->release != stream_release) return EINVAL;
    struct qv_scan *s = stream->private_data;
    if (s->sync_ready) qv_mutex_lock(&s->mu);
    *opened = __atomic_load_n(&s->twins_opened, __ATOMIC_RELAXED);
    *dropped = s->twins_dropped;
    if (s->sync_ready) qv_mutex_unlock(&s->mu);
    return 0;
}

int qv__scan_testing_has_twins(const struct ArrowArrayStream *stream) {
    if (!stream || stream->release != stream_release) return -1;
    const struct qv_scan *s = stream->private_data;
    return s->twins != NULL; /* set in open, never changed */
}

int qv_scan_get_stats(const struct ArrowArrayStream *stream, struct qv_scan_stats *out) {
    if (!stream || stream->release != stream_release) return EINVAL;
    struct qv_scan *s = stream->private_data;
    if (s->sync_ready) qv_mutex_lock(&s->mu);
    *out = s->stats;
    if (s->sync_ready) qv_mutex_unlock(&s->mu);
    out->bytes_read = __atomic_load_n(&s->bytes_read, __ATOMIC_RELAXED);
    return 0;
}
