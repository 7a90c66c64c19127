/*
 * Relative (17): a values segment stored as differences against the values
 * segment of another column of the same row group. Dates that follow a
 * date (a receipt a few days after a shipment), timestamps that follow a
 * timestamp, keys that follow a key: the differences span a few bits where
 * the values span many, and the usual cascade encodes them.
 *
 * The node is a segment's root only (docs/format.md 5.5.16): its value i
 * pairs with the reference segment's value i, so it cannot sit under a
 * dictionary, a frame or any node that renumbers values. The reference is
 * another decoder, attached by whoever opened both segments (the format
 * layer's column reader); this file never finds or reads it itself. A
 * relative decoder without one refuses to decode with a message naming
 * the reference node, and never reads anything.
 *
 * Value i = reference[i] + diffs[i], wrapping at the width: the reference's
 * value is whatever its segment decodes to, null slots included, so the
 * writer computes the differences against exactly those values.
 */
#include "encoding/enc_internal.h"
#include "encoding/relative.h"

/* Values per step of a range decode: the differences of one step sit in
 * scratch while they are added to the reference's values in the output. */
#define REL_STEP 4096

static int kind_int_pt(enum qv_value_kind k) {
    switch (k) {
    case QV_KIND_INT8:
    case QV_KIND_UINT8: return QV__PT_U8;
    case QV_KIND_INT16:
    case QV_KIND_UINT16: return QV__PT_U16;
    case QV_KIND_INT32:
    case QV_KIND_UINT32: return QV__PT_U32;
    case QV_KIND_INT64:
    case QV_KIND_UINT64: return QV__PT_U64;
    default: return 0;
    }
}

/* ---- Encoding (the writer's entry point) ---- */

int qv__relative_encode(const struct qv_values *diffs, int64_t ref_node,
                        const struct qv_encode_options *opts, struct qv_reservation *r,
                        struct qv_encoded *out, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "relative encode: NULL output");
    memset(out, 0, sizeof *out);
    if (!diffs || !r) return qv_error_set(err, EINVAL, "relative encode: NULL argument");
    const int pt = kind_int_pt(diffs->kind);
    if (!pt)
        return qv_error_set(err, EINVAL, "relative encode: %s values cannot be stored relative",
                            qv_value_kind_name(diffs->kind));
    const int64_t n = diffs->count;
    if (n < 0 || n > QV_ENC_MAX_COUNT || (n && !diffs->values))
        return qv_error_set(err, EINVAL, "relative encode: bad count %lld or NULL values",
                            (long long)n);
    if (ref_node < 0 || ref_node >= INT32_MAX)
        return qv_error_set(err, EINVAL, "relative encode: bad reference node %lld",
                            (long long)ref_node);
    struct qv_encode_options o = {0};
    if (opts) o = *opts;
    o.force = QV_ENC_AUTO;
    struct qv__enc e;
    qv__enc_init(&e, &o, r, err);
    const unsigned w = qv__pt_width(pt);
    struct qv__enode *root = NULL;
    int rc = 0;
    uint64_t *v = qv__mem_alloc(&e.mem, (size_t)(n ? n : 1) * 8, err);
    if (!v) rc = ENOMEM;
    if (!rc && n) qv__widen(diffs->values, w, n, v);
    struct qv__enode *child = NULL;
    /* The differences are chosen for as a root's values are (depth 0), so
     * compact mode's frame compressors are tried over them too; the tree
     * is then one level deeper than the cascade's own bound, well inside
     * the format's (QV__ENC_MAX_DEPTH). */
    if (!rc) rc = qv__cascade_int(&e, v, n, pt, 0, QV_ENC_AUTO, &child);
    if (!rc) {
        root = qv__enode_new(&e, QV_ENC_RELATIVE, pt, w, n);
        if (!root) {
            rc = ENOMEM;
        } else {
            root->nparams = 1;
            root->params[0] = ref_node;
            root->nchildren = 1;
            root->child[0] = child;
            qv__enode_finish(root);
        }
    }
    return qv__enc_finish(&e, rc, root, out);
}

/* ---- Decoding ---- */

static int no_reference(const struct qv__node *nd, struct qv_error *err) {
    return qv_error_set(err, EINVAL,
                        "relative node at byte %llu: the chunk is stored relative to the column "
                        "of node %lld, whose decoder is not attached (qv_decoder_set_reference)",
                        (unsigned long long)nd->offset, (long long)nd->params[0]);
}

static int ref_error(const struct qv__node *nd, int rc, struct qv_error *err) {
    return qv_error_wrap(err, rc, "reference column (node %lld) of a relative chunk: ",
                         (long long)nd->params[0]);
}

/* out[i] += add[i] for m values of width w, wrapping. */
static void add_words(void *out, const void *add, int64_t m, unsigned w) {
    switch (w) {
    case 1: {
        uint8_t *o = out;
        const uint8_t *a = add;
        for (int64_t i = 0; i < m; i++) o[i] = (uint8_t)(o[i] + a[i]);
        break;
    }
    case 2: {
        uint16_t *o = out;
        const uint16_t *a = add;
        for (int64_t i = 0; i < m; i++) o[i] = (uint16_t)(o[i] + a[i]);
        break;
    }
    case 4: {
        uint32_t *o = out;
        const uint32_t *a = add;
        for (int64_t i = 0; i < m; i++) o[i] += a[i];
        break;
    }
    default: {
        uint64_t *o = out;
        const uint64_t *a = add;
        for (int64_t i = 0; i < m; i++) o[i] += a[i];
        break;
    }
    }
}

static int relative_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                        void *out, struct qv_error *err) {
    if (!d->ref) return no_reference(nd, err);
    const unsigned w = nd->width;
    struct qv_decode_out o = {.values = out};
    int rc = qv_decoder_decode_range(d->ref, start, n, &o, err);
    if (rc) return ref_error(nd, rc, err);
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint8_t *tmp = qv__stack_push(&d->stack, (size_t)(n < REL_STEP ? n : REL_STEP) * w, err);
    if (!tmp) return ENOMEM;
    for (int64_t pos = start, end = start + n; pos < end && !rc;) {
        /* Steps end at multiples of REL_STEP, so no vector of the
         * differences is decoded in two steps. */
        int64_t stop = (pos / REL_STEP + 1) * REL_STEP;
        if (stop > end) stop = end;
        rc = qv__dec_word(d, nd->child[0], pos, stop - pos, tmp, err);
        if (!rc) add_words((uint8_t *)out + (size_t)(pos - start) * w, tmp, stop - pos, w);
        pos = stop;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* A take: the reference's values through its own take (run-end or a
 * dictionary reach a row without decoding its vector), then the
 * differences of each touched vector. */
static int relative_take(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t k,
                         void *out, struct qv_error *err) {
    if (!d->ref) return no_reference(nd, err);
    const unsigned w = nd->width;
    struct qv_decode_out o = {.values = out};
    int rc = qv_decoder_take(d->ref, rows, k, &o, err);
    if (rc) return ref_error(nd, rc, err);
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint8_t *tmp = qv__stack_push(&d->stack, (size_t)QV__VEC * w, err);
    if (!tmp) return ENOMEM;
    for (int64_t i = 0; i < k && !rc;) {
        int64_t vec = rows[i] >> QV__VEC_SHIFT, j = i + 1;
        while (j < k && (rows[j] >> QV__VEC_SHIFT) == vec) j++;
        int64_t lo = rows[i], hi = rows[j - 1] + 1;
        rc = qv__dec_word(d, nd->child[0], lo, hi - lo, tmp, err);
        for (int64_t t = i; !rc && t < j; t++) {
            uint8_t *dst = (uint8_t *)out + (size_t)t * w;
            add_words(dst, tmp + (size_t)(rows[t] - lo) * w, 1, w);
        }
        i = j;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

int64_t qv_decoder_reference_node(const struct qv_decoder *dc) {
    if (!dc) return -1;
    const struct qv__node *root = qv__decoder_dec((struct qv_decoder *)dc)->root;
    return root->enc == QV_ENC_RELATIVE ? root->params[0] : -1;
}

int qv_decoder_set_reference(struct qv_decoder *dc, struct qv_decoder *ref, struct qv_error *err) {
    if (!dc) return qv_error_set(err, EINVAL, "qv_decoder_set_reference: NULL decoder");
    struct qv__dec *d = qv__decoder_dec(dc);
    const struct qv__node *root = d->root;
    if (root->enc != QV_ENC_RELATIVE)
        return qv_error_set(err, EINVAL, "qv_decoder_set_reference: the chunk is %s, not relative",
                            qv_encoding_name(root->enc));
    if (!ref || ref == dc)
        return qv_error_set(err, EINVAL, "qv_decoder_set_reference: %s reference decoder",
                            ref ? "the chunk's own" : "NULL");
    const struct qv__node *rr = qv__decoder_dec(ref)->root;
    if (rr->enc == QV_ENC_RELATIVE)
        return qv__corrupt(err, root,
                           "its reference (node %lld) is itself stored relative to node %lld: "
                           "the format allows no chains",
                           (long long)root->params[0], (long long)rr->params[0]);
    if (qv__decoder_kind(ref) != qv__decoder_kind(dc) || rr->pt != root->pt ||
        rr->count != root->count)
        return qv__corrupt(err, root,
                           "its reference (node %lld) holds %lld %s values, the chunk %lld %s "
                           "values",
                           (long long)root->params[0], (long long)rr->count,
                           qv_value_kind_name(qv__decoder_kind(ref)), (long long)root->count,
                           qv_value_kind_name(qv__decoder_kind(dc)));
    d->ref = ref;
    return 0;
}

/* ---- Record ---- */

/* Integers, at a segment's root only. One parameter, ref: a physical node
 * number (below the schema's 1,000,000 fields). Child 0: the differences,
 * same type and count. */
static int relative_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if (nd->depth != 0 || nd->inner)
        return qv__corrupt(err, nd, "a relative node must be a segment's root");
    if ((rc = qv__want_shape(nd, 1, 0, 1, err))) return rc;
    if (nd->params[0] < 0 || nd->params[0] >= 1000000)
        return qv__corrupt(err, nd, "reference node %lld out of range", (long long)nd->params[0]);
    return qv__want_child(nd, 0, nd->pt, nd->count, err);
}

/* The cascade never proposes it (it has no reference column); forcing it
 * through qv_encode is an error that says where it comes from. */
static int relative_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    (void)out;
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_RELATIVE, s->pt);
    if (!s->forced) return QV__DECLINED;
    return qv_error_set(e->err, EINVAL,
                        "encode: relative needs a reference column of the same row group; only "
                        "the writer builds it");
}

const struct qv__encoding qv__enc_relative = {
    .id = QV_ENC_RELATIVE,
    .name = "relative",
    .decode_cost = 4,
    .dec_word = relative_dec,
    .take_word = relative_take,
    .validate = relative_validate,
    .build = relative_build,
    .params = {"ref"},
    .children = {"diffs"},
};
