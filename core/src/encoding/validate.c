/*
 * Shape checks every parsed node passes before a decoder sees it: the
 * limits every encoding shares here, then the encoding's own rules through
 * its record's validate hook (each encoding's file holds its rules, next
 * to the decoder that relies on them). Together with the structural checks
 * of the parser they guarantee that the decoders' buffer accesses stay in
 * bounds; what depends on decoded content (codes, run ends, offsets) is
 * checked where it is decoded.
 */
#include "encoding/enc_internal.h"

int qv__want_shape(const struct qv__node *nd, int nparams, int nbufs, int nchildren,
                   struct qv_error *err) {
    if (nd->nparams != nparams || nd->nbufs != nbufs || nd->nchildren != nchildren)
        return qv__corrupt(err, nd,
                           "expected %d parameters, %d buffers and %d children, found %d, %d "
                           "and %d",
                           nparams, nbufs, nchildren, nd->nparams, nd->nbufs, nd->nchildren);
    return 0;
}

int qv__want_child(const struct qv__node *nd, int i, int pt, int64_t count,
                   struct qv_error *err) {
    const struct qv__node *c = nd->child[i];
    if (c->pt != pt)
        return qv__corrupt(err, nd, "child %d has type %s, expected %s", i, qv__pt_name(c->pt),
                           qv__pt_name(pt));
    if (pt == QV__PT_FIXED && c->width != nd->width)
        return qv__corrupt(err, nd, "child %d has a different width", i);
    if (count >= 0 && c->count != count)
        return qv__corrupt(err, nd, "child %d holds %lld values, expected %lld", i,
                           (long long)c->count, (long long)count);
    return 0;
}

int qv__want_packed(const struct qv__node *nd, uint64_t need, struct qv_error *err) {
    if (nd->buf_len[0] != need)
        return qv__corrupt(err, nd,
                           "packed buffer holds %llu bytes, %lld values at width %lld need %llu",
                           (unsigned long long)nd->buf_len[0], (long long)nd->count,
                           (long long)nd->params[0], (unsigned long long)need);
    return 0;
}

uint64_t qv__node_value_bytes(const struct qv__node *nd) {
    if (nd->pt == QV__PT_BOOL) return ((uint64_t)nd->count + 7) / 8;
    return (uint64_t)nd->count * nd->width;
}

int qv__validate_node(const struct qv__node *nd, struct qv_error *err) {
    const int pt = nd->pt;
    const int64_t n = nd->count;
    if (n > QV_ENC_MAX_COUNT && !(pt == QV__PT_U64 || pt == QV__PT_U32))
        return qv__corrupt(err, nd, "value count %lld is too large", (long long)n);
    if ((pt == QV__PT_FIXED || qv__pt_is_word(pt)) &&
        (uint64_t)n * nd->width > QV_ENC_MAX_BYTES)
        return qv__corrupt(err, nd, "%lld values of %u bytes exceed the chunk limit",
                           (long long)n, nd->width);
    return nd->codec->validate(nd, err);
}
