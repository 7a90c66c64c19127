/*
 * A predicate on one top-level column of a row group, answered on its
 * encoded values (qv_decoder_filter) and its validity: bit i = row
 * start + i is non-null, selected and satisfies the predicate.
 *
 * The validity is decoded first and narrows the selection, so vectors
 * holding only nulls are not decoded; a chunk without nulls has no
 * validity segment and the selection passes as it is.
 */
#include <string.h>

#include "format/reader_internal.h"

static int unsupported(struct qv_column_reader *cr, struct qv_error *err, const char *why) {
    qv_error_set(err, ENOTSUP, "no encoded-domain filter: %s", why);
    return qv__column_reader_where(cr, QV_SEGMENT_VALUES, ENOTSUP, err);
}

int qv__column_reader_filter(struct qv_column_reader *cr, int64_t start, int64_t n,
                             const struct qv_enc_pred *pred, const uint64_t *sel, uint64_t *out,
                             struct qv_error *err) {
    if (!cr || !pred || (!out && n > 0))
        return qv_error_set(err, EINVAL, "qv__column_reader_filter: NULL argument");
    const struct qv_reader *rd;
    struct qv_reservation *r;
    int64_t rg;
    int32_t k;
    qv__column_reader_top(cr, &rd, &rg, &k, &r);
    const struct qv__node *node = &rd->f.nodes[k];
    const int64_t len = qv__reader_chunk(rd, rg, k)->length;
    if (start < 0 || n < 0 || start > len || n > len - start)
        return qv_error_set(err, EINVAL,
                            "file '%s': filter rows [%lld, +%lld) outside row group %lld of "
                            "%lld rows",
                            rd->src.name, (long long)start, (long long)n, (long long)rg,
                            (long long)len);
    if (n > 0 && sel == out) return qv_error_set(err, EINVAL, "qv__column_reader_filter: sel and out alias");
    if (node->n_children || (node->kind != QV__NODE_PRIMITIVE && node->kind != QV__NODE_DECIMAL64))
        return unsupported(cr, err, "not a primitive column");
    switch (node->value_kind) {
    case QV_KIND_BOOL: return unsupported(cr, err, "boolean values");
    case QV_KIND_FIXED_BINARY: return unsupported(cr, err, "fixed-size binary values");
    case QV_KIND_FLOAT32:
    case QV_KIND_FLOAT64:
        if (pred->op != QV_ENC_OP_EVAL) return unsupported(cr, err, "floats compare through EVAL");
        break;
    default: break;
    }
    /* A format-2 column reader opens its decoders and reads blocks on
     * demand, verifying what its decode paths read; the kernels read the
     * encoded buffers directly, so every block of the chunk is read and
     * verified first (once per reader: verified blocks are remembered). */
    int vrc = qv__column_reader_verify_all(cr, err);
    if (vrc) return vrc;
    struct qv_decoder *vd = qv__column_reader_decoder(cr, QV_SEGMENT_VALUES);
    if (!vd) return unsupported(cr, err, "no values segment");
    struct qv_decoder *nulls = qv__column_reader_decoder(cr, QV_SEGMENT_VALIDITY);
    if (!nulls || n == 0) {
        int rc = qv_decoder_filter(vd, start, n, pred, sel, out, err);
        return rc ? qv__column_reader_where(cr, QV_SEGMENT_VALUES, rc, err) : 0;
    }
    /* Non-null and selected rows become the selection. */
    const int64_t nw = (n + 63) >> 6;
    const size_t size = (size_t)nw * 8;
    uint64_t *valid = qv_alloc(r, size, err);
    if (!valid) return ENOMEM;
    valid[nw - 1] = 0;
    struct qv_decode_out o = {.values = valid};
    int rc = qv_decoder_decode_range(nulls, start, n, &o, err);
    if (rc) {
        qv_free(r, valid, size);
        return qv__column_reader_where(cr, QV_SEGMENT_VALIDITY, rc, err);
    }
    if (n & 63) valid[nw - 1] &= (UINT64_C(1) << (n & 63)) - 1;
    if (sel)
        for (int64_t i = 0; i < nw; i++) valid[i] &= sel[i];
    rc = qv_decoder_filter(vd, start, n, pred, valid, out, err);
    qv_free(r, valid, size);
    return rc ? qv__column_reader_where(cr, QV_SEGMENT_VALUES, rc, err) : 0;
}
