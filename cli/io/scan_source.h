/*
 * Where `qv scan` and `qv export` get their batches: the scan engine
 * (quiver/scan.h) with a projection, a filter, a take list, a row limit,
 * decode workers and prefetch, yielding STRUCT batches.
 */
#ifndef QV_CLI_SCAN_SOURCE_H
#define QV_CLI_SCAN_SOURCE_H

#include <stdint.h>

#include "quiver/arrow.h"
#include "quiver/base.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/memory.h"
#include "quiver/scan.h"

struct cli_scan_options {
    const int32_t *columns; /* top-level column indices; NULL = all */
    int32_t n_columns;
    int64_t limit;          /* rows; -1 = all */
    int64_t batch_rows;     /* rows per batch; 0 = 65536 */
    int validate;           /* the engine checks every column at the FULL tier */
    const char *filter;     /* predicate text (the shared predicate language), or NULL */
    const int64_t *take;    /* global row indices, or NULL. In any order, repeats allowed:
                               the rows come out in this order (after the filter, up to
                               the limit). Strictly increasing lists stream through the
                               engine; others are read (sorted, once) and held in memory
                               before the first batch, the filter evaluated on them. */
    int64_t n_take;
    int threads;            /* decode workers; 0 = default */
    int prefetch;           /* completed batches waiting at most; 0 = 1 */
};

struct cli_scan;

/* Opens a scan over `reader`; everything it decodes is charged to `r`
 * (which must outlive the batches). The options are copied. */
int cli_scan_open(const struct qv_reader *reader, const struct cli_scan_options *opts,
                  struct qv_reservation *r, struct cli_scan **out, struct qv_error *err);
/* The next batch (owned by the caller), or out->release == NULL at the end. */
int cli_scan_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err);
/* The projected schema's STRUCT root (its children are the batch columns). */
const struct qv_field *cli_scan_root(const struct cli_scan *s);
void cli_scan_close(struct cli_scan *s);

/* Resolves a comma-separated list of top-level column names against the
 * file's schema into indices (*out allocated with malloc, caller frees).
 * EINVAL naming the unknown column and listing the available ones. */
int cli_resolve_columns(const struct qv_reader *reader, const char *list, int32_t **out,
                        int32_t *n_out, struct qv_error *err);

#endif
