/*
 * Shape checks for every encoding's node: parameter ranges, buffer sizes
 * and children's types and counts. Together with the structural checks of
 * the parser they guarantee that the decoders' buffer accesses stay in
 * bounds; what depends on decoded content (codes, run ends, offsets) is
 * checked where it is decoded.
 *
 * This file is also the reference for each node's layout.
 */
#include "encoding/enc_internal.h"

#define BAD(...) return qv__corrupt(err, nd, __VA_ARGS__)

static int want_shape(const struct qv__node *nd, int nparams, int nbufs, int nchildren,
                      struct qv_error *err) {
    if (nd->nparams != nparams || nd->nbufs != nbufs || nd->nchildren != nchildren)
        BAD("expected %d parameters, %d buffers and %d children, found %d, %d and %d", nparams,
            nbufs, nchildren, nd->nparams, nd->nbufs, nd->nchildren);
    return 0;
}

static int want_child(const struct qv__node *nd, int i, int pt, int64_t count,
                      struct qv_error *err) {
    const struct qv__node *c = nd->child[i];
    if (c->pt != pt) BAD("child %d has type %s, expected %s", i, qv__pt_name(c->pt), qv__pt_name(pt));
    if (pt == QV__PT_FIXED && c->width != nd->width) BAD("child %d has a different width", i);
    if (count >= 0 && c->count != count)
        BAD("child %d holds %lld values, expected %lld", i, (long long)c->count,
            (long long)count);
    return 0;
}

/* Bytes per value the node decodes to, for plausibility bounds. */
static uint64_t value_bytes(const struct qv__node *nd) {
    if (nd->pt == QV__PT_BOOL) return ((uint64_t)nd->count + 7) / 8;
    return (uint64_t)nd->count * nd->width;
}

int qv__validate_node(const struct qv__node *nd, struct qv_error *err) {
    const int pt = nd->pt;
    const int64_t n = nd->count;
    int rc;
    if (n > QV_ENC_MAX_COUNT && !(pt == QV__PT_U64 || pt == QV__PT_U32))
        BAD("value count %lld is too large", (long long)n);
    if ((pt == QV__PT_FIXED || qv__pt_is_word(pt)) &&
        (uint64_t)n * nd->width > QV_ENC_MAX_BYTES)
        BAD("%lld values of %u bytes exceed the chunk limit", (long long)n, nd->width);
    switch (nd->enc) {
    case QV_ENC_PLAIN:
        if (pt == QV__PT_BIN) {
            /* buffer 0: bytes; child 0: n + 1 offsets into them (u64). */
            if ((rc = want_shape(nd, 0, 1, 1, err))) return rc;
            return want_child(nd, 0, QV__PT_U64, n + 1, err);
        }
        /* buffer 0: raw values (bitmap for bool). */
        if ((rc = want_shape(nd, 0, 1, 0, err))) return rc;
        if (nd->buf_len[0] != value_bytes(nd))
            BAD("buffer holds %llu bytes, %lld values need %llu",
                (unsigned long long)nd->buf_len[0], (long long)n,
                (unsigned long long)value_bytes(nd));
        return 0;
    case QV_ENC_CONSTANT:
        if (pt == QV__PT_BOOL) {
            /* param 0: the value. */
            if ((rc = want_shape(nd, 1, 0, 0, err))) return rc;
            if (nd->params[0] != 0 && nd->params[0] != 1) BAD("boolean value %lld", (long long)nd->params[0]);
            return 0;
        }
        /* buffer 0: the value's bytes. */
        if ((rc = want_shape(nd, 0, 1, 0, err))) return rc;
        if (pt != QV__PT_BIN && nd->buf_len[0] != nd->width)
            BAD("value has %llu bytes, expected %u", (unsigned long long)nd->buf_len[0], nd->width);
        if (pt == QV__PT_BIN && nd->buf_len[0] && (uint64_t)n > QV_ENC_MAX_BYTES / nd->buf_len[0])
            BAD("%lld copies of %llu bytes exceed the chunk limit", (long long)n,
                (unsigned long long)nd->buf_len[0]);
        return 0;
    case QV_ENC_BITPACK: {
        /* param 0: width; buffer 0: packed vectors. */
        if (!qv__pt_is_int(pt)) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 1, 1, 0, err))) return rc;
        if (nd->params[0] < 0 || nd->params[0] > (int64_t)nd->width * 8)
            BAD("bit width %lld for %s values", (long long)nd->params[0], qv__pt_name(pt));
        uint64_t need = qv__bitpack_bytes(n, (unsigned)nd->params[0]);
        if (nd->buf_len[0] != need)
            BAD("packed buffer holds %llu bytes, %lld values at width %lld need %llu",
                (unsigned long long)nd->buf_len[0], (long long)n, (long long)nd->params[0],
                (unsigned long long)need);
        return 0;
    }
    case QV_ENC_FOR:
        /* param 0: reference; child 0: residuals. */
        if (!qv__pt_is_int(pt)) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 1, 0, 1, err))) return rc;
        return want_child(nd, 0, pt, n, err);
    case QV_ENC_ZIGZAG:
        /* child 0: zig-zagged values. */
        if (!qv__pt_is_int(pt)) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 0, 0, 1, err))) return rc;
        return want_child(nd, 0, pt, n, err);
    case QV_ENC_DELTA:
        /* child 0: first value of each 1024-value vector; child 1: deltas
         * to the previous value (the slot at a vector start is ignored). */
        if (!qv__pt_is_int(pt)) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 0, 0, 2, err))) return rc;
        if ((rc = want_child(nd, 0, pt, (n + QV__VEC - 1) >> QV__VEC_SHIFT, err))) return rc;
        return want_child(nd, 1, pt, n, err);
    case QV_ENC_DICT:
        /* child 0: codes (u32); child 1: dictionary values. */
        if (pt == QV__PT_BOOL) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 0, 0, 2, err))) return rc;
        if ((rc = want_child(nd, 0, QV__PT_U32, n, err))) return rc;
        if ((rc = want_child(nd, 1, pt, -1, err))) return rc;
        if (nd->child[1]->count > (n > 0 ? n : 0) || (n > 0 && nd->child[1]->count == 0))
            BAD("dictionary of %lld values for %lld codes", (long long)nd->child[1]->count,
                (long long)n);
        return 0;
    case QV_ENC_RLE:
        if (pt == QV__PT_BOOL) {
            /* param 0: value of the first run (runs alternate); child 0: run ends. */
            if ((rc = want_shape(nd, 1, 0, 1, err))) return rc;
            if (nd->params[0] != 0 && nd->params[0] != 1) BAD("first value %lld", (long long)nd->params[0]);
        } else {
            /* child 0: run ends (exclusive, increasing, last == count); child 1: values. */
            if (!qv__pt_is_word(pt)) BAD("type %s", qv__pt_name(pt));
            if ((rc = want_shape(nd, 0, 0, 2, err))) return rc;
            if ((rc = want_child(nd, 1, pt, nd->child[0]->count, err))) return rc;
        }
        if ((rc = want_child(nd, 0, QV__PT_U32, -1, err))) return rc;
        if (nd->child[0]->count > n || (n > 0 && nd->child[0]->count == 0))
            BAD("%lld runs for %lld values", (long long)nd->child[0]->count, (long long)n);
        return 0;
    case QV_ENC_SPARSE:
        if (pt == QV__PT_BOOL) {
            /* param 0: fill value; child 0: positions of the other value. */
            if ((rc = want_shape(nd, 1, 0, 1, err))) return rc;
            if (nd->params[0] != 0 && nd->params[0] != 1) BAD("fill value %lld", (long long)nd->params[0]);
        } else {
            /* buffer 0: fill value; child 0: positions (increasing); child 1: values. */
            if (!qv__pt_is_word(pt)) BAD("type %s", qv__pt_name(pt));
            if ((rc = want_shape(nd, 0, 1, 2, err))) return rc;
            if (nd->buf_len[0] != nd->width) BAD("fill value of %llu bytes", (unsigned long long)nd->buf_len[0]);
            if ((rc = want_child(nd, 1, pt, nd->child[0]->count, err))) return rc;
        }
        if ((rc = want_child(nd, 0, QV__PT_U32, -1, err))) return rc;
        if (nd->child[0]->count > n)
            BAD("%lld exceptions for %lld values", (long long)nd->child[0]->count, (long long)n);
        return 0;
    case QV_ENC_ALP: {
        /* params: exponent e, factor f; child 0: integer digits; child 1:
         * exception positions (u32, increasing); child 2: exception values. */
        if (!qv__pt_is_float(pt)) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 2, 0, 3, err))) return rc;
        int64_t emax = pt == QV__PT_F64 ? 18 : 10;
        if (nd->params[0] < 0 || nd->params[0] > emax || nd->params[1] < 0 ||
            nd->params[1] > nd->params[0])
            BAD("exponent %lld / factor %lld", (long long)nd->params[0], (long long)nd->params[1]);
        if ((rc = want_child(nd, 0, pt == QV__PT_F64 ? QV__PT_U64 : QV__PT_U32, n, err))) return rc;
        if ((rc = want_child(nd, 1, QV__PT_U32, -1, err))) return rc;
        if (nd->child[1]->count > n) BAD("%lld exceptions for %lld values", (long long)nd->child[1]->count, (long long)n);
        return want_child(nd, 2, pt, nd->child[1]->count, err);
    }
    case QV_ENC_ALP_RD: {
        /* param 0: right bits; child 0: left parts (u16); child 1: right parts. */
        if (!qv__pt_is_float(pt)) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 1, 0, 2, err))) return rc;
        int64_t bits = pt == QV__PT_F64 ? 64 : 32;
        if (nd->params[0] < bits - 16 || nd->params[0] >= bits)
            BAD("right bits %lld", (long long)nd->params[0]);
        if ((rc = want_child(nd, 0, QV__PT_U16, n, err))) return rc;
        return want_child(nd, 1, pt == QV__PT_F64 ? QV__PT_U64 : QV__PT_U32, n, err);
    }
    case QV_ENC_FSST:
        /* params: symbol count, total raw bytes; buffer 0: symbol table;
         * buffer 1: codes; child 0: n + 1 offsets into the codes (u64). */
        if (pt != QV__PT_BIN) BAD("type %s", qv__pt_name(pt));
        if ((rc = want_shape(nd, 2, 2, 1, err))) return rc;
        if (nd->params[0] < 0 || nd->params[0] > 255) BAD("%lld symbols", (long long)nd->params[0]);
        if (nd->params[1] < 0 || (uint64_t)nd->params[1] > QV_ENC_MAX_BYTES ||
            (uint64_t)nd->params[1] > nd->buf_len[1] * 16)
            BAD("raw size %lld for %llu code bytes", (long long)nd->params[1],
                (unsigned long long)nd->buf_len[1]);
        /* symbol table: nsym lengths (1..16), then the symbols' bytes. */
        if (nd->buf_len[0] < 2 * (uint64_t)nd->params[0] ||
            nd->buf_len[0] > 17 * (uint64_t)nd->params[0])
            BAD("symbol table of %llu bytes for %lld symbols", (unsigned long long)nd->buf_len[0],
                (long long)nd->params[0]);
        return want_child(nd, 0, QV__PT_U64, n + 1, err);
    case QV_ENC_ZSTD:
    case QV_ENC_LZ4: {
        /* param 0: values per frame; buffer 0: per frame (compressed end,
         * raw size) as u64 pairs; buffer 1: compressed frames. Each frame's
         * bytes and size are checked when it is decompressed. */
        if ((rc = want_shape(nd, 1, 2, 0, err))) return rc;
        if (nd->params[0] <= 0 || nd->params[0] > QV_ENC_MAX_COUNT)
            BAD("frame size %lld", (long long)nd->params[0]);
        if (nd->buf_len[0] != (uint64_t)qv__general_nframes(nd) * 16)
            BAD("frame table of %llu bytes for %lld frames", (unsigned long long)nd->buf_len[0],
                (long long)qv__general_nframes(nd));
        return 0;
    }
    default: BAD("unknown encoding");
    }
}
