/*
 * Predicates evaluated once per value the tree holds rather than per row:
 * a constant (once), a dictionary (once per entry, then a table lookup per
 * code), run-end (once per run overlapping the range, then bit ranges),
 * sparse (once on the fill value, once per exception). These are also the
 * paths where the caller's EVAL callback runs: on the few values the
 * decoder produced itself.
 */
#include "encoding/enc_internal.h"

static int64_t words_of(int64_t nbits) { return (nbits + 63) >> 6; }

/* ---- Constant ---- */

int qv__filter_constant(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                        const uint64_t *sel, uint64_t *out, struct qv_error *err) {
    (void)start;
    const struct qv__node *root = d->root;
    uint64_t bit = 0, off[2] = {0, root->buf_len[0]};
    if (!fp->is_bin && root->buf_len[0] < fp->width)
        return qv__corrupt(err, root, "constant of %llu bytes",
                           (unsigned long long)root->buf_len[0]);
    int rc = qv__fpred_values(fp, &d->stack, root->buf[0], off, root->buf[0], 1, &bit, err);
    if (rc) return rc;
    if (bit & 1) qv__filter_fill(sel, n, out);
    return 0;
}

/* ---- Dictionary ---- */

/* Whether two predicates give the same answers on this kind (the operand
 * fields of other kinds are not looked at). */
static int same_pred(const struct qv__fpred *fp, const struct qv_enc_pred *a,
                     const struct qv_enc_pred *b) {
    if (a->op != b->op) return 0;
    /* EVAL: the same callback and context mean the same predicate while the
     * decoder is open (the contract in encoding.h). */
    if (a->op == QV_ENC_OP_EVAL) return a->eval == b->eval && a->eval_ctx == b->eval_ctx;
    if (fp->is_bin) return a->len == b->len && (a->len == 0 || !memcmp(a->bytes, b->bytes, a->len));
    return a->lo == b->lo && a->hi == b->hi && a->ulo == b->ulo && a->uhi == b->uhi;
}

struct dict_ctx {
    struct qv__dec *d;
    struct qv__node *root;
    const uint64_t *tab; /* a bit per entry */
    int64_t dsize;
    uint32_t *codes;
};

static int dict_block(void *vctx, int64_t pos, int64_t m, uint64_t *res, struct qv_error *err) {
    struct dict_ctx *c = vctx;
    int rc = qv__dec_word(c->d, c->root->child[0], pos, m, c->codes, err);
    if (rc) return rc;
    const uint32_t *codes = c->codes;
    if (qv__codes_max(codes, m) >= (uint64_t)c->dsize) {
        for (int64_t j = 0; j < m; j++)
            if (codes[j] >= (uint64_t)c->dsize)
                return qv__corrupt(err, c->root,
                                   "code %u at value %lld is outside the dictionary of %lld",
                                   codes[j], (long long)(pos + j), (long long)c->dsize);
    }
    if (c->dsize <= 32) qv__code_cmp32(codes, m, (uint32_t)c->tab[0], res);
    else qv__code_bits(codes, m, c->tab, c->dsize > UINT32_MAX ? UINT32_MAX : (uint32_t)c->dsize, res);
    return 0;
}

int qv__filter_dict(struct qv__dec *d, struct qv__fstate *st, const struct qv__fpred *fp,
                    int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                    struct qv_error *err) {
    struct qv__node *root = d->root;
    const void *vals = NULL;
    const uint64_t *off = NULL;
    const uint8_t *data = NULL;
    int64_t ds = 0;
    int rc = qv__dict_entries(d, root, &vals, &off, &data, &ds, err);
    if (rc) return rc;
    if (!(st->tab_node == root && same_pred(fp, &st->tab_key, fp->p))) {
        /* One answer bit per entry, and a zero word after them (the
         * kernels read the entries' words whole). */
        st->tab_node = NULL;
        const int64_t words = words_of(ds) + 1;
        if (st->tab_cap < words) {
            uint64_t *t = qv__mem_realloc(&d->mem, st->tab, (size_t)st->tab_cap * 8,
                                          (size_t)words * 8, err);
            if (!t) return ENOMEM;
            st->tab = t;
            st->tab_cap = words;
        }
        memset(st->tab, 0, (size_t)words * 8);
        if (ds && (rc = qv__fpred_values(fp, &d->stack, vals, off, data, ds, st->tab, err)))
            return rc;
        /* Bits past the entries are 0 (the kernels' contract); cleared
         * again in case an EVAL callback set them. */
        if (ds & 63) st->tab[ds >> 6] &= (UINT64_C(1) << (ds & 63)) - 1;
        if (fp->use_eval || !fp->is_bin || fp->p->len <= sizeof st->tab_bytes) {
            st->tab_key = *fp->p;
            if (!fp->is_bin || fp->use_eval) st->tab_key.len = 0;
            if (st->tab_key.len) memcpy(st->tab_bytes, fp->p->bytes, fp->p->len);
            st->tab_key.bytes = st->tab_bytes;
            st->tab_node = root;
        }
    }
    /* The codes are read even when no entry matches: reading them is what
     * checks them (a code outside the dictionary, a corrupt codes tree),
     * and a filter must refuse the corrupt bytes the decode refuses, also
     * with checksums off. */
    struct dict_ctx c = {d, root, st->tab, ds, qv__stack_push(&d->stack, QV__VEC * 4, err)};
    if (!c.codes) return ENOMEM;
    return qv__filter_blocks(start, n, sel, out, dict_block, &c, err);
}

/* ---- Run-end ---- */

/* Sets bits [b, e) (b < e) of a word bitmap. */
static inline void set_range(uint64_t *w, int64_t b, int64_t e) {
    const int64_t wb = b >> 6, we = (e - 1) >> 6;
    const uint64_t mb = ~UINT64_C(0) << (b & 63), me = ~UINT64_C(0) >> (63 - ((e - 1) & 63));
    if (wb == we) {
        w[wb] |= mb & me;
        return;
    }
    w[wb] |= mb;
    for (int64_t i = wb + 1; i < we; i++) w[i] = ~UINT64_C(0);
    w[we] |= me;
}

static void and_sel(const uint64_t *sel, int64_t n, uint64_t *out) {
    if (!sel) return;
    for (int64_t k = 0; k < words_of(n); k++) out[k] &= sel[k];
}

/* The run ends, decoded and checked once per decoder (qv__rle_read_ends)
 * and kept in the filter's state: the run-end decoder keeps its own form of
 * them, so the filter does not depend on its cache. */
static int rle_ends(struct qv__dec *d, struct qv__fstate *st, struct qv__node *nd,
                    const uint32_t **out, struct qv_error *err) {
    if (st->ends_node == nd) {
        *out = st->ends;
        return 0;
    }
    uint32_t *e;
    int rc = qv__rle_read_ends(d, nd, &e, err);
    if (rc) return rc;
    st->ends = e;
    st->ends_node = nd;
    *out = e;
    return 0;
}

int qv__filter_rle(struct qv__dec *d, struct qv__fstate *st, const struct qv__fpred *fp,
                   int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                   struct qv_error *err) {
    struct qv__node *root = d->root;
    const int64_t runs = root->child[0]->count, end = start + n;
    const uint32_t *ends = NULL;
    int rc = rle_ends(d, st, root, &ends, err);
    if (rc) return rc;
    /* Runs overlapping the range: the first ending after start through the
     * one holding the last row. */
    const int64_t r0 = qv__upper_bound32(ends, runs, start);
    const int64_t r1 = qv__upper_bound32(ends, runs, end - 1);
    if (r1 >= runs || r0 > r1)
        return qv__corrupt(err, root, "run ends do not cover value %lld", (long long)(end - 1));
    const int64_t k = r1 - r0 + 1;
    void *vals = qv__stack_push(&d->stack, (size_t)k * root->width, err);
    uint64_t *bits = vals ? qv__stack_push(&d->stack, (size_t)words_of(k) * 8, err) : NULL;
    if (!bits) return ENOMEM;
    if ((rc = qv__dec_word(d, root->child[1], r0, k, vals, err))) return rc;
    if ((rc = qv__fpred_values(fp, &d->stack, vals, NULL, NULL, k, bits, err))) return rc;
    /* Only the runs that pass, found a word of answers at a time. */
    for (int64_t wi = 0; wi < words_of(k); wi++) {
        for (uint64_t w = bits[wi]; w; w &= w - 1) {
            const int64_t r = r0 + wi * 64 + __builtin_ctzll(w);
            int64_t b = r ? (int64_t)ends[r - 1] : 0, e = (int64_t)ends[r];
            if (b < start) b = start;
            if (e > end) e = end;
            set_range(out, b - start, e - start);
        }
    }
    and_sel(sel, n, out);
    return 0;
}

/* ---- Sparse ---- */

int qv__filter_sparse(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                      const uint64_t *sel, uint64_t *out, struct qv_error *err) {
    struct qv__node *root = d->root;
    const int64_t ne = root->child[0]->count, end = start + n;
    const uint64_t *pos = NULL;
    int rc = qv__dec_cached_u64(d, root->child[0], 1, (uint64_t)root->count, &pos, err);
    if (rc) return rc;
    uint64_t fill = 0;
    if (root->buf_len[0] < fp->width)
        return qv__corrupt(err, root, "fill value of %llu bytes",
                           (unsigned long long)root->buf_len[0]);
    if ((rc = qv__fpred_values(fp, &d->stack, root->buf[0], NULL, NULL, 1, &fill, err))) return rc;
    const int64_t k0 = qv__lower_bound(pos, ne, (uint64_t)start);
    const int64_t k1 = qv__lower_bound(pos, ne, (uint64_t)end);
    const int64_t k = k1 - k0;
    if (fill & 1) qv__filter_fill(NULL, n, out);
    if (k > 0) {
        void *vals = qv__stack_push(&d->stack, (size_t)k * root->width, err);
        uint64_t *bits = vals ? qv__stack_push(&d->stack, (size_t)words_of(k) * 8, err) : NULL;
        if (!bits) return ENOMEM;
        if ((rc = qv__dec_word(d, root->child[1], k0, k, vals, err))) return rc;
        if ((rc = qv__fpred_values(fp, &d->stack, vals, NULL, NULL, k, bits, err))) return rc;
        for (int64_t i = 0; i < k; i++) {
            const int64_t j = (int64_t)pos[k0 + i] - start;
            const uint64_t b = UINT64_C(1) << (j & 63);
            if ((bits[i >> 6] >> (i & 63)) & 1) out[j >> 6] |= b;
            else out[j >> 6] &= ~b;
        }
    }
    and_sel(sel, n, out);
    return 0;
}
