/* The writer's state, shared by writer.c (the public calls and the input
 * paths), writer_pipeline.c (row groups in the making, sealing, handing
 * over and releasing on the caller's thread), writer_parallel.c (the
 * encoding threads: which column of which row group is encoded next, and
 * the in-order committer) and writer_encode.c (encoding one column of a
 * sealed row group into memory, and writing it to the file).
 *
 * Threads. A writer is used by one caller thread at a time. Sealed row
 * groups are encoded column by column ("tasks": one top-level column of one
 * row group) by `threads` encoding threads, each into buffers of its own
 * (a reservation per task), and written to the file strictly in order
 * (row group, then column) by the committer: whichever encoding thread
 * holds the committer role (`committing`, taken and given back under
 * `mu`). The sink, the footer buffers and the encoder's reservation (`er`)
 * belong to the committer while it commits and to the caller once the
 * threads are joined. The list of row groups in flight, the tasks' states,
 * the done list and the threads' failure are guarded by `mu`; a task's
 * buffers belong to the thread encoding it until it is marked done, then
 * to the committer. Held arrays, their reference counts, the builder and
 * its reservation (`br`), and the caller's reservation (`r`, which holds
 * the row-group records and their task arrays) are touched only by the
 * caller: the encoding threads read the arrays of the row groups in flight
 * and write nothing but their tasks, the file and the footer buffers. */
#ifndef QV_FORMAT_WRITER_INTERNAL_H
#define QV_FORMAT_WRITER_INTERNAL_H

#include <stdatomic.h>

#include "base/thread.h"
#include "format/format_internal.h"
struct qv__lesson;

/* An input array the writer holds: moved in by qv_writer_write_owned, or the
 * builder's output. Released (on the caller's thread) once no row group
 * that holds some of its rows is waiting to be written. */
struct qv__held {
    struct ArrowArray array;
    int64_t refs;       /* row groups holding rows of it; caller thread only */
    uint64_t bytes;     /* its rows' bytes: estimated (owned) or charged to br (builder's) */
    int from_builder;
};

/* Rows [start, start + length) of a held array (offsets relative to the
 * array's own top-level offset). */
struct qv__piece {
    struct qv__held *held;
    int64_t start, length;
};

/* One encoded segment of a task, waiting to be written. */
struct qv__wseg {
    struct qv_encoded enc;  /* on the task's reservation */
    struct qv__segment seg; /* offset: from the task's first byte */
};

/* One chunk record of a task (a node of the column's subtree, pre-order). */
struct qv__wchunk {
    int64_t length, nulls;
    uint64_t raw;
    uint32_t first_seg, n_segs;
    struct qv__stats_buf st; /* st.s.min / max re-pointed at commit (the array moves) */
};

enum qv__task_state { QV__TASK_WAITING = 0, QV__TASK_RUNNING, QV__TASK_DONE };

/* What a task's encoding produced, on the task's reservation. */
struct qv__taskout {
    struct qv__wseg *segs;
    int32_t n_segs, cap_segs;
    struct qv__wchunk *chunks;
    int32_t n_chunks, cap_chunks;
    struct qv__wbuf sums;     /* block checksums of its segments, in order */
    uint64_t bytes;           /* encoded bytes of its segments */
};

/* One top-level column of one sealed row group: encoded into memory by an
 * encoding thread, then written in order by the committer. Small, because
 * a row group has one per column: the output hangs off it, and a failure's
 * message goes to the writer's pending failure (writer_parallel.c). */
struct qv__task {
    struct qv_reservation *r; /* its scratch and output; NULL until it runs, or skipped */
    struct qv__taskout *o;    /* on r */
    int state;                /* enum qv__task_state, under mu */
    int rc;                   /* its failure, or ECANCELED when skipped */
};

/* A row group in the making, or sealed and in flight (being encoded and
 * written), or done (written or skipped) and waiting for the caller to
 * release it. Allocated from the caller's reservation. */
struct qv__rowgroup {
    struct qv__rowgroup *next;
    struct qv__piece *pieces;
    int32_t n_pieces, cap_pieces;
    int64_t rows;
    uint64_t bytes;         /* owned bytes (estimated) plus the builder's pieces' */
    int64_t index;          /* row group number in the file */
    int last;               /* sealed by finish: no row group follows it */
    uint64_t end_position;  /* file bytes once written (set by the committer) */
    int encoded;            /* written to the file (set by the committer) */
    /* Set at seal (caller), then under mu: */
    struct qv__task *tasks; /* one per top-level column */
    int32_t *order;         /* columns in the order they are handed out */
    int32_t n_tasks;
    int32_t dispatched;     /* tasks handed out (or skipped): order[0..dispatched) */
    int32_t committed;      /* tasks written (or dropped), in column order */
    int whole;              /* encoded in place from one array (writer_encode.c) */
    struct qv__relplan *rel; /* its relative columns (writer_relative.c), or NULL; on r */
    uint64_t start;         /* file position of its first byte (committer) */
};

/* An encoding thread's own state. Slot 0 is also the caller's when it
 * encodes inline. */
struct qv__wworker {
    struct qv_writer *w;
    qv_thread thread;
    int started;
    struct qv_reservation *jr; /* the joiner's buffers */
    struct qv_builder *joiner; /* joins a column of several pieces */
    struct qv__zcache *zc;     /* the thread's zstd context, lent to its encodes */
    char fail_path[512];       /* the field a failure happened at */
};

typedef int (*qv__writer_hook_fn)(void *ctx, int64_t row_group, int32_t column);

struct qv_writer {
    struct qv_reservation *r;   /* the caller's: the writer, schema, records */
    struct qv_reservation *br;  /* the builder's buffers and its outputs */
    struct qv_reservation *er;  /* the committer's: footer and chunk records */
    struct qv_sink sink;
    struct qv_schema *schema;
    struct qv__node *nodes;
    int32_t n_nodes;
    int32_t n_columns;          /* top-level columns */
    struct qv_builder *builder;
    struct qv_writer_options opts;
    int force_encoding;     /* QV_ENC_AUTO unless a test forced one (format_testing.h) */
    int null_fill;          /* enum qv__fill_mode: AUTO unless a test forced one (null_fill.h) */
    /* The footer in the making: the head (writer, schema and metadata
     * sections, serialized at open), QV__RG_HEADER_MAX bytes of room for the
     * row-group section's header, then the directory records appended as
     * row groups are written. Finish fills the room in place. */
    struct qv__wbuf dir;
    size_t head_size, dir_start;
    struct qv__wbuf rgdir;  /* the current row group's chunk records */
    /* Section 5: block checksums of the row groups written, then those of
     * the current row group (moved over when it is committed). */
    struct qv__wbuf blocks, rgblocks;
    int64_t enc_row_groups; /* row groups written to the file (committer side) */

    /* Caller side. */
    struct qv__rowgroup *open;  /* the row group in the making (NULL: none) */
    uint64_t br_base;           /* br's charge with an empty builder */
    uint64_t br_held;           /* br's charge of builder outputs still held */
    uint64_t owned_held;        /* estimated bytes of owned arrays still held */
    int64_t next_index;         /* number of the next row group sealed */
    int64_t rows_written;
    uint64_t bytes_written;
    int failed;             /* sticky error code */
    struct qv_error failure;
    int finished, aborted;

    /* The encoding threads (writer_parallel.c). */
    int max_in_flight;      /* QV_WRITER_INLINE or >= 1 */
    int n_workers;          /* encoding threads (slots of `workers`) */
    int has_thread, sync_ready;
    struct qv__wworker *workers;
    qv_mutex mu;
    qv_cond work, done;     /* work: the threads wait; done: the caller waits */
    struct qv__rowgroup *queue_head, *queue_tail; /* in flight, in order */
    struct qv__rowgroup *dispatch;                /* first in flight with tasks to hand out */
    struct qv__rowgroup *done_head, *done_tail;   /* written or skipped, to release */
    int64_t in_flight;      /* sealed and not yet released (caller side) */
    int committing;         /* a thread holds the committer role */
    int stop;               /* the threads end once nothing is left to hand out */
    atomic_int cancel;      /* abort: the threads stop between columns */
    int worker_rc;          /* the first failure, in file order (set by the committer) */
    struct qv_error worker_err;
    /* The failed task first in file order so far, and its message: the
     * committer reaches it before any later one (under mu). */
    int pend_rc;
    int64_t pend_rg;
    int32_t pend_col;
    struct qv_error pend_err;
    /* Lessons (encoding/lesson.h): the FSST tables row group 0's encoders
     * trained, per node (NULL: none), for the later row groups of the same
     * column to try before training their own. A task of row group 0 never
     * waits; a later one waits, before its first string segment, until
     * taught[c] says row group 0's task of its column is done (or skipped).
     * Row groups are handed out in order, so that task is running or done
     * by then: the wait always ends, and every row group sees the same
     * lessons however many threads there are (the bytes do not depend on
     * the thread count). Lessons are allocated from `lr` and never change
     * once taught; lessons, taught and lr under mu. */
    struct qv__lesson **lessons;
    uint8_t *taught;
    struct qv_reservation *lr;
    qv_cond learned;
    uint64_t *col_ns;       /* last encoding time of each column (ordering hint), under mu */
    int32_t *col_node;      /* first node of each top-level column */
    qv__writer_hook_fn hook;
    void *hook_ctx;
};

/* writer.c */
int qv__writer_fail(struct qv_writer *w, int rc, struct qv_error *err);

/* writer_encode.c */
/* Decides whether a sealed row group is encoded in place (rg->whole).
 * Caller's thread, at seal. */
void qv__writer_plan(struct qv_writer *w, struct qv__rowgroup *rg);
/* Encodes column c of a sealed row group into task t (its reservation is
 * created here); runs on an encoding thread with its own slot `wk`. On
 * failure t->rc is set, the task holds nothing and *err names the file, row
 * group and column. */
void qv__writer_encode_task(struct qv__wworker *wk, struct qv__rowgroup *rg, int32_t c,
                            struct qv__task *t, struct qv_error *err);
/* The committer: writes task t (the next in file order) to the sink and
 * records its chunks; the first task of a row group starts it, the last
 * ends it (qv__writer_end_row_group). On failure err names what failed. */
int qv__writer_commit_task(struct qv_writer *w, struct qv__rowgroup *rg, struct qv__task *t,
                           struct qv_error *err);
int qv__writer_end_row_group(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err);
/* Marks task (rg, c) done: a task of row group 0 makes its column's
 * lessons final and wakes the tasks waiting for them. Under mu. */
void qv__writer_task_done(struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c,
                          struct qv__task *t);
/* Frees a task's buffers and reservation (any thread that owns it). */
void qv__writer_task_free(struct qv__task *t);

/* writer_relative.c: columns stored relative to another column of the
 * row group (encoding 17). Plan chooses the pairs of a sealed row group
 * from a sample of its rows, on the caller's thread at seal (rg->rel, on
 * the caller's reservation; NULL when none; free releases it, with the row
 * group). Values is called by column c's task: when c is stored relative
 * to another column, it encodes c's values `v` (validity: its null slots,
 * or NULL) as differences against that column's values as readers will
 * decode them, into *out on r, and sets *done; otherwise *done == 0 and
 * nothing is allocated. It reads only the row group's input, so it waits
 * for no other task. */
int qv__relative_plan(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err);
int qv__relative_values(struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c,
                        const struct qv_values *v, const uint8_t *validity,
                        struct qv_reservation *r, struct qv_encoded *out, int *done,
                        struct qv_error *err);
void qv__relative_free(struct qv_writer *w, struct qv__rowgroup *rg);

/* writer_parallel.c */
/* Puts a sealed row group (tasks allocated) in flight and wakes the
 * threads (started before, qv__writer_start_threads). */
void qv__writer_enqueue(struct qv_writer *w, struct qv__rowgroup *rg);
/* Starts the encoding threads; 0 or the errno of the failed start (the
 * threads started before it keep running). */
int qv__writer_start_threads(struct qv_writer *w);
/* Encodes and writes a sealed row group on the calling thread (no
 * threads), then moves it to the done list. */
void qv__writer_encode_inline(struct qv_writer *w, struct qv__rowgroup *rg);
/* Tells the threads to end once nothing is left to hand out, and joins them. */
void qv__writer_join_threads(struct qv_writer *w);

/* writer_pipeline.c */
/* Bytes buffered in the row group in the making. */
uint64_t qv__writer_open_bytes(const struct qv_writer *w);
/* Moves the builder's rows, if any, into the row group in the making as a
 * held array (ENOMEM fails the writer). */
int qv__writer_take_builder(struct qv_writer *w, struct qv_error *err);
/* Drops a reference to a held array; the last releases it. */
void qv__writer_held_unref(struct qv_writer *w, struct qv__held *h);
/* Adds rows [start, start + n) of a held array to the row group in the
 * making (taking a reference). */
int qv__writer_add_piece(struct qv_writer *w, struct qv__held *h, int64_t start, int64_t n,
                         struct qv_error *err);
/* Seals the row group in the making (builder rows included) and encodes it
 * inline or hands it to the worker, waiting for room. */
int qv__writer_seal(struct qv_writer *w, struct qv_error *err);
/* Releases the arrays of row groups the worker is done with and returns the
 * worker's failure, if any (the writer is then failed). */
int qv__writer_reap(struct qv_writer *w, struct qv_error *err);
/* Waits until every sealed row group is written and released, then ends the
 * worker thread. Returns the worker's failure, if any. */
int qv__writer_drain(struct qv_writer *w, struct qv_error *err);
/* Stops the worker (between columns), joins it and releases everything the
 * writer holds. Idempotent. */
void qv__writer_stop(struct qv_writer *w);
/* Bytes of the buffers behind slots [start, start + n) of `arr`, an array
 * of node k (k == -1: a STRUCT batch of the whole schema), its own offset
 * honoured. Validated arrays only (cheap tier). */
uint64_t qv__array_bytes(const struct qv__node *nodes, int32_t n_nodes, int32_t k,
                         const struct ArrowArray *arr, int64_t start, int64_t n);

#endif
