/* The writer's state, shared by writer.c (the public calls and the input
 * paths), writer_pipeline.c (row groups in the making, sealing, the
 * background encoder and releasing on the caller's thread) and
 * writer_encode.c (encoding one sealed row group into the file).
 *
 * Threads. A writer is used by one caller thread at a time. With a worker,
 * the sink, the footer buffers and the encoder's reservation (`er`) belong
 * to the worker while it runs and to the caller once it is joined; the
 * queue, the done list and the worker's failure are guarded by `mu`. Held
 * arrays, their reference counts, the builder and its reservation (`br`),
 * and the caller's reservation (`r`, which holds the row-group records) are
 * touched only by the caller: the worker reads the arrays of the row group
 * it encodes and writes nothing but the file and the encoder's buffers. */
#ifndef QV_FORMAT_WRITER_INTERNAL_H
#define QV_FORMAT_WRITER_INTERNAL_H

#include <stdatomic.h>

#include "base/thread.h"
#include "format/format_internal.h"

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

/* A row group in the making, or sealed and waiting for (or done with) the
 * encoder. Allocated from the caller's reservation. */
struct qv__rowgroup {
    struct qv__rowgroup *next;
    struct qv__piece *pieces;
    int32_t n_pieces, cap_pieces;
    int64_t rows;
    uint64_t bytes;         /* owned bytes (estimated) plus the builder's pieces' */
    int64_t index;          /* row group number in the file */
    uint64_t end_position;  /* file bytes once written (set by the encoder) */
    int encoded;            /* written to the file (set by the encoder) */
};

typedef int (*qv__writer_hook_fn)(void *ctx, int64_t row_group, int32_t column);

struct qv_writer {
    struct qv_reservation *r;   /* the caller's: the writer, schema, records */
    struct qv_reservation *br;  /* the builder's buffers and its outputs */
    struct qv_reservation *er;  /* the encoder's: footer, chunk records, scratch */
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
    /* Section 5: block checksums of the row groups written, then those of
     * the current row group (moved over when it is committed). */
    struct qv__wbuf blocks, rgblocks;
    int64_t enc_row_groups; /* row groups written to the file (encoder side) */
    struct qv_builder *joiner; /* joins a column of several pieces; on er */
    char fail_path[512];    /* the field an encoding failure happened at */

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

    /* The background encoder. */
    int max_in_flight;      /* QV_WRITER_INLINE or >= 1 */
    int has_thread, sync_ready;
    qv_thread thread;
    qv_mutex mu;
    qv_cond work, done;     /* work: the worker waits; done: the caller waits */
    struct qv__rowgroup *queue_head, *queue_tail; /* sealed, not yet taken */
    struct qv__rowgroup *done_head, *done_tail;   /* written or skipped, to release */
    int64_t in_flight;      /* sealed and not yet released (caller side) */
    int stop;               /* the worker ends once the queue is empty */
    atomic_int cancel;      /* abort: the worker stops between columns */
    int worker_rc;          /* the worker's first failure */
    struct qv_error worker_err;
    qv__writer_hook_fn hook;
    void *hook_ctx;
    /* The current row group's relative columns (writer_relative.c), on
     * the encoding thread; NULL when none. */
    struct qv__relplan *rel;
};

/* writer.c */
int qv__writer_fail(struct qv_writer *w, int rc, struct qv_error *err);

/* writer_encode.c: writes a sealed row group's chunks and records them in the
 * footer. Runs on the encoding thread (the worker, or the caller inline);
 * on failure err names the file, row group and column. */
int qv__writer_encode(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err);
/* Fills *seg for the encoded bytes of `v` (role), appends their block
 * checksums to the row group's and writes them to the sink; enc is
 * released in every case. */
int qv__writer_put_encoded(struct qv_writer *w, const struct qv_values *v, uint8_t role,
                           struct qv_encoded *enc, struct qv__segment *seg,
                           struct qv_error *err);

/* writer_relative.c: columns stored relative to another column of the
 * row group (encoding 17). Plan chooses the pairs of a row group from a
 * sample of its rows (w->rel; NULL when none); the encoding thread then
 * encodes columns in order, and relative_put writes the values segment of
 * a column that is a reference (keeping what its segment decodes to) or a
 * dependent (the differences), setting *done; columns with no part in a
 * pair are left to the caller (*done == 0). A reference always comes
 * before its dependents, and is never itself relative. End frees the
 * plan (every path). */
int qv__relative_plan(struct qv_writer *w, const struct qv__rowgroup *rg, struct qv_error *err);
int qv__relative_put(struct qv_writer *w, int32_t node, const struct qv_values *v,
                     const uint8_t *validity, struct qv__segment *seg, int *done,
                     struct qv_error *err);
void qv__relative_end(struct qv_writer *w);

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
