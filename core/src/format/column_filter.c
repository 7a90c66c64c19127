/* Placeholder while the kernels land: every predicate falls back. */
#include "format/reader_internal.h"

int qv__column_reader_filter(struct qv_column_reader *cr, int64_t start, int64_t n,
                             const struct qv_enc_pred *pred, const uint64_t *sel, uint64_t *out,
                             struct qv_error *err) {
    (void)cr, (void)start, (void)n, (void)pred, (void)sel, (void)out;
    return qv_error_set(err, ENOTSUP, "column filter: no encoded-domain path yet");
}
