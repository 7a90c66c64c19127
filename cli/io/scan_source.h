/*
 * Where `qv scan` and `qv export` get their batches: the file layer
 * (quiver/file.h) with columns chosen by name (its one rule, the filter's),
 * a filter, a take list in any order, a row limit, decode workers and
 * prefetch, yielding STRUCT batches.
 */
#ifndef QV_CLI_SCAN_SOURCE_H
#define QV_CLI_SCAN_SOURCE_H

#include <stdint.h>

#include "quiver/file.h"

struct cli_scan_options {
    const char *columns;    /* comma-separated column paths ("a,s.b,\"x,y\""), the file
                               layer's name rule; NULL = every column */
    int64_t limit;          /* rows; -1 = all */
    int64_t batch_rows;     /* rows per batch; 0 = 65536 */
    int validate;           /* the engine checks every column at the FULL tier */
    const char *filter;     /* predicate text (the shared predicate language), or NULL */
    const int64_t *take;    /* global row indices, or NULL. In any order, repeats allowed:
                               the rows come out in this order (after the filter, up to
                               the limit). */
    int64_t n_take;
    int threads;            /* decode workers; 0 = default */
    int prefetch;           /* completed batches waiting at most; 0 = 1 */
};

struct cli_scan;

/* Opens a scan of `file`; the projected schema and the filter's scratch
 * are charged to `r` (which must outlive the scan), the batches to the
 * file's pool. The options are copied. Errors are the file layer's (an
 * unknown column ENOENT, an ambiguous one EINVAL, a row out of range
 * EINVAL naming it and its position). */
int cli_scan_open(struct qv_file *file, const struct cli_scan_options *opts,
                  struct qv_reservation *r, struct cli_scan **out, struct qv_error *err);
/* The next batch (owned by the caller), or out->release == NULL at the end. */
int cli_scan_next(struct cli_scan *s, struct ArrowArray *out, struct qv_error *err);
/* The projected schema's STRUCT root (its children are the batch columns). */
const struct qv_field *cli_scan_root(const struct cli_scan *s);
void cli_scan_close(struct cli_scan *s);

#endif
