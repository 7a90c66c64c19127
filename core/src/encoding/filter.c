/* Placeholder while the kernels land: every predicate falls back. */
#include "encoding/enc_internal.h"

int qv_decoder_filter(struct qv_decoder *d, int64_t start, int64_t n,
                      const struct qv_enc_pred *pred, const uint64_t *sel, uint64_t *out,
                      struct qv_error *err) {
    (void)d, (void)start, (void)n, (void)pred, (void)sel, (void)out;
    return qv_error_set(err, ENOTSUP, "qv_decoder_filter: no encoded-domain path yet");
}
