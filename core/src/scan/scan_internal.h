/* Private pieces of the scan: the plan (work units after pruning), the
 * filter hooks, and the self-contained output batches. */
#ifndef QV_SCAN_INTERNAL_H
#define QV_SCAN_INTERNAL_H

#include "quiver/format.h"
#include "quiver/scan.h"

/* A contiguous piece of one row group to scan: rows [lo, hi) or, when take
 * is set, the n_take (row-group local, increasing) rows of `take`. */
struct qv__unit {
    int64_t rg;
    int64_t lo, hi;
    const int64_t *take;
    int64_t n_take;
};

struct qv__plan {
    struct qv__unit *units;
    int64_t n_units, units_cap;
    int64_t *take_local; /* storage for the units' take lists */
    int64_t n_take_local;
    int64_t row_groups_total, row_groups_pruned;
};

/* Plans the units of a scan over `reader` under `opts`, skipping row groups
 * the filter proves empty (filter may be NULL). Storage from `r`. */
int qv__plan_build(const struct qv_reader *reader, const struct qv_scan_options *opts,
                   const struct qv_expr *filter, struct qv_reservation *r, struct qv__plan *out,
                   struct qv_error *err);
void qv__plan_free(struct qv__plan *plan, struct qv_reservation *r);

/* One output column of a nested projection: the fields of `column` to read
 * (keep[], pre-order over its subtree; NULL = all of them) and the type
 * handed out (`field`: the schema's, or `pruned`). */
struct qv__proj_col {
    int32_t column;
    uint8_t *keep;
    size_t keep_size;
    const struct qv_field *field;
    struct qv_field *pruned;
    size_t pruned_size;
};
/* Builds the output columns of qv_scan_options.paths against `schema`, in
 * the order of first appearance of their column. *out has room for one
 * entry per schema column (free with qv__projection_free(*out, number of
 * schema columns, r)); *n_out entries are used. EINVAL naming the path for
 * a column or child out of range. */
int qv__projection_build(const struct qv_schema *schema, const struct qv_column_path *paths,
                         int32_t n, struct qv_reservation *r, struct qv__proj_col **out,
                         int32_t *n_out, struct qv_error *err);
void qv__projection_free(struct qv__proj_col *cols, int32_t cap, struct qv_reservation *r);

/* What a front-end layer (core/src/file) adds to a scan stream, so that
 * the stream it hands out is still a scan stream (qv_scan_cancel,
 * qv_scan_wait and qv_scan_get_stats work on it) and nothing forwards. All
 * optional.
 *  - next: makes the batch get_next hands out, calling qv__scan_next for
 *    the scan's own batches (a take in any order reorders them here);
 *  - batch: adjusts each batch handed out (keeps a pool alive until it is
 *    released); on failure it releases the batch;
 *  - schema: turns the schema the scan exported (moved in) into the one
 *    handed out (a self-contained copy); on failure *in is released;
 *  - released: called by the stream's release after the scan is freed;
 *  - reader_get / reader_put (both or neither): the column readers of whole
 *    projected columns are borrowed from the front end (a file's take cache)
 *    instead of opened by the scan, and given back when the column moves to
 *    another row group, when the scan is freed (keep = 1), or after a failed
 *    decode (keep = 0). *fresh says the reader was just opened (its bytes
 *    count as read).
 * Errors: rc and a message in err, which becomes get_last_error. */
struct qv__scan_hooks {
    void *ctx;
    int (*next)(void *ctx, struct ArrowArrayStream *scan, struct ArrowArray *out,
                struct qv_error *err);
    int (*batch)(void *ctx, struct ArrowArray *batch, struct qv_error *err);
    int (*schema)(void *ctx, struct ArrowSchema *in, struct ArrowSchema *out, struct qv_error *err);
    void (*released)(void *ctx);
    int (*reader_get)(void *ctx, int64_t rg, int32_t column, struct qv_column_reader **out,
                      int *fresh, struct qv_error *err);
    void (*reader_put)(void *ctx, int64_t rg, int32_t column, struct qv_column_reader *cr,
                       int keep);
};
/* qv_scan_open with hooks (copied; NULL = none). On failure `released` is
 * not called: the caller still owns what ctx holds. */
int qv__scan_open_hooked(const struct qv_reader *reader, const struct qv_scan_options *opts,
                         struct qv_reservation *r, const struct qv__scan_hooks *hooks,
                         struct ArrowArrayStream *out, struct qv_error *err);
/* The scan's own get_next (no hooks); its errors are in get_last_error. */
int qv__scan_next(struct ArrowArrayStream *scan, struct ArrowArray *out);

/* Wraps a column array (an owned tree allocated from `res`) so that its
 * release also frees `res`: each column of a batch is self-contained and may
 * be moved out and released on its own. On failure the array and `res` are
 * released. */
int qv__column_adopt(struct ArrowArray *col, struct qv_reservation *res, struct qv_error *err);
/* The same for a schema: its release also frees `res`, so a schema handed
 * out by a stream outlives the stream. */
int qv__schema_adopt(struct ArrowSchema *sc, struct qv_reservation *res, struct qv_error *err);
/* Assembles a STRUCT batch of `n` adopted columns (moved in) with `length`
 * rows. Control memory comes from a new reservation in `pool`, freed when the
 * batch is released. On failure the columns are released. */
int qv__batch_assemble(struct ArrowArray *out, struct ArrowArray *cols, int64_t n, int64_t length,
                       struct qv_pool *pool, struct qv_error *err);

/* The filter, evaluated conjunct by conjunct (filter.c). The top-level AND
 * of the bound predicate is split into conjuncts; each batch evaluates them
 * one after another on the rows still selected, cheapest and most selective
 * first (an order from estimates and row-group statistics, then from the
 * measured cost and pass rate), comparing in the encoded domain where the
 * column's encodings allow and decoding a column only for the 1024-row
 * vectors that still hold selected rows. The set of rows selected never
 * depends on the order. */
struct qv__filter;      /* the bound filter, its conjuncts, their order and measured selectivity */
struct qv__filter_ctx;  /* per-worker state: column readers of the filter columns, scratch */
/* `filter` is bound to rd's schema and stays the caller's (it must outlive
 * the filter); the filter's own memory comes from r. */
int qv__filter_create(const struct qv_reader *rd, struct qv_expr *filter, struct qv_pool *pool,
                      struct qv_reservation *r, struct qv__filter **out, struct qv_error *err);
void qv__filter_destroy(struct qv__filter *f);
/* Per-worker state, charged to a reservation of its own in `pool`. A ctx is
 * used by one thread at a time; several ctxs of one filter may run at once on
 * different batches (the measured selectivity they share is updated
 * thread-safely). */
int qv__filter_ctx_create(struct qv__filter *f, struct qv_pool *pool, struct qv__filter_ctx **out,
                          struct qv_error *err);
void qv__filter_ctx_destroy(struct qv__filter_ctx *c);
/* What one batch cost: rows_in rows evaluated, rows_out selected;
 * rows_decoded of them had a value of some filter column decoded to Arrow
 * (rows compared in the encoded domain, or skipped, are not counted),
 * values_decoded values were decoded over all filter columns, bytes_loaded
 * encoded bytes of segments were loaded by the ctx's own column readers
 * (qv_scan_stats.bytes_read). */
struct qv__filter_counts {
    int64_t rows_decoded, values_decoded, rows_in, rows_out;
    int64_t bytes_loaded;
};
/* Evaluates the filter on one batch: rows [lo, lo + n) of row group rg, or,
 * when rows != NULL, the n row-group-local increasing rows[0..n). On success
 * sel[0..*k) holds the surviving row-group-local row numbers, increasing (sel
 * has room for n; it may be `rows` itself). Counts are added to *counts (may
 * be NULL). Errors name file, column, row group. ECANCELED if *cancel (may be
 * NULL) becomes nonzero (checked between conjuncts). */
int qv__filter_batch(struct qv__filter_ctx *c, int64_t rg, int64_t lo, const int64_t *rows,
                     int64_t n, int64_t *sel, int64_t *k, struct qv__filter_counts *counts,
                     const int *cancel, struct qv_error *err);
/* Where a ctx gets the reader of a filter column (schema column `column`)
 * positioned on row group rg: by default it opens and owns its own; a scan
 * that reads the same column for its projection hands its own reader, so
 * that the column is loaded (and its bytes counted) once per row group.
 * fn counts the bytes it loads itself; the reader stays the caller's and is
 * used only during qv__filter_batch, by the ctx's thread. */
typedef int (*qv__filter_reader_fn)(void *arg, int32_t column, int64_t rg,
                                    struct qv_column_reader **cr, struct qv_error *err);
void qv__filter_ctx_set_readers(struct qv__filter_ctx *c, qv__filter_reader_fn fn, void *arg);
/* Decoded values a filter hands to the projection (qv__filter_ctx_want):
 * `arr`, an owned array of the whole column's type whose buffers come from
 * `res` (a reservation of its own, so that another thread may use and free
 * it), holds the rows [first, first + n) of the row group, or, when rows is
 * set, the n increasing row-group-local rows[0..n) (allocated from res).
 * Every row the filter selected is among them. qv__decoded_free releases
 * the array and destroys res; NULL-safe and idempotent. */
struct qv__decoded {
    struct ArrowArray arr;
    struct qv_reservation *res;
    int64_t first, n;
    int64_t *rows;
};
void qv__decoded_free(struct qv__decoded *d);
/* Asks the ctx to keep what it decodes of schema column `column` (a filter
 * column: no effect otherwise) for the batch it filters, instead of
 * releasing it after the conjunct. After qv__filter_batch,
 * qv__filter_ctx_take_decoded moves it out: 1 when the column was decoded
 * to Arrow for this batch (then *out is set), 0 when it was not (compared in
 * the encoded domain, skipped by the row group's statistics, or not reached
 * because no row was left). What is not taken is freed by the next batch. */
void qv__filter_ctx_want(struct qv__filter_ctx *c, int32_t column);
int qv__filter_ctx_take_decoded(struct qv__filter_ctx *c, int32_t column, struct qv__decoded *out);
/* Gathers rows idx[0..n) (increasing, within src) of src, an array of type
 * f as qv_column_reader_read_into / take_into produce it, into `out` (a new
 * owned array from res): the same buffers, byte for byte, that a take of
 * those rows from the column reader gives. Flat types only (booleans,
 * fixed-width values, decimals, strings and binaries); ENOTSUP for others
 * (qv__gather_supported says which). */
bool qv__gather_supported(const struct qv_field *f);
int qv__array_gather(const struct ArrowArray *src, const struct qv_field *f, const int64_t *idx,
                     int64_t n, struct ArrowArray *out, struct qv_reservation *res,
                     struct qv_error *err);
/* Whether a batch of row group rg would read nothing: the ctx's own readers
 * of every filter column are already in rg (the caller's readers: no). */
int qv__filter_ctx_loaded(const struct qv__filter_ctx *c, int64_t rg);
/* For tests: the number of conjuncts, and an order of them to run from now
 * on (a permutation of 0..n-1; the measured ranking stops). */
int32_t qv__filter_conjuncts(const struct qv__filter *f);
void qv__filter_set_order(struct qv__filter *f, const int32_t *order);

/* Casts (qv_scan_options.cast, cast.c). */

/* Rewrites an exported output schema `sc` to the types the cast flags give
 * (recursively; names, nullability and metadata kept), allocating from `r`.
 * Nothing changes when no field is affected. On failure `sc` is released. */
int qv__cast_schema(struct ArrowSchema *sc, unsigned cast, struct qv_reservation *r,
                    struct qv_error *err);

/* Where a column's rows come from, for messages: row i of the column is row
 * rows[i] (or first_row + i) of row group rg. */
struct qv__cast_where {
    const char *file;
    int64_t rg;
    int64_t first_row;
    const int64_t *rows;
};
/* Converts `col`, an owned tree of type `field` whose buffers come from
 * `res`, to the cast types in place (new buffers from `res`). EOVERFLOW
 * names the file, column (and nested field), row group and row of a value
 * that does not fit. On failure `col` is released. */
int qv__cast_column(struct ArrowArray *col, const struct qv_field *field, unsigned cast,
                    struct qv_reservation *res, const struct qv__cast_where *where,
                    struct qv_error *err);

#endif
