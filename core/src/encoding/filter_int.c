/*
 * Integer predicates by vectors: bit-packed residuals compared in their own
 * domain, and other integer trees decoded one vector at a time.
 *
 * Bitpack and FOR: a value is (ref + r) mod 2^B for a residual r < 2^w.
 * The raw arc of the predicate shifted by -ref is an arc of residuals on
 * the B-bit circle; its intersection with [0, 2^w) is empty, everything,
 * or again one arc of the w-bit circle (two pieces of it touch the ends
 * 0 and 2^w - 1, which the w-bit circle joins). So each residual needs
 * one subtraction, one mask and one comparison, in the residuals' own
 * width: the base is never added and nothing is widened.
 *
 * Why unpack then compare: the unpack kernels are the tuned,
 * width-specialized ones (AVX2 when the CPU has it) and a vector's 1024
 * residuals stay in L1, so the compare pass costs little beside them; the
 * scan reads them once either way.
 */
#include "encoding/enc_internal.h"

/* The residual arc of a raw arc (see above); w <= bits. */
static struct qv__arc residual_arc(const struct qv__arc *raw, uint64_t ref, unsigned w) {
    __extension__ typedef unsigned __int128 u128;
    struct qv__arc r = {0};
    const uint64_t M = qv__mask(w);
    r.mask = M;
    if (raw->none || raw->all) {
        r.none = raw->none;
        r.all = raw->all;
        return r;
    }
    const uint64_t s = (raw->a - ref) & raw->mask;
    if (w >= 64 || M == raw->mask) {
        r.a = s;
        r.d = raw->d;
    } else {
        const u128 top = (u128)raw->mask + 1, e = (u128)s + raw->d;
        if (e < top) {
            if (s > M) {
                r.none = 1;
                return r;
            }
            r.a = s;
            r.d = ((uint64_t)e < M ? (uint64_t)e : M) - s;
        } else {
            const u128 e2 = e - top; /* the part that wrapped, from 0 */
            if (s > M) {
                r.a = 0;
                r.d = e2 < M ? (uint64_t)e2 : M;
            } else if (e2 + 1 >= s) {
                r.all = 1;
                return r;
            } else {
                r.a = s;
                r.d = (M - s) + 1 + (uint64_t)e2;
            }
        }
    }
    if (r.d >= M) r.all = 1;
    return r;
}

struct packed_ctx {
    const struct qv__node *bp;
    unsigned w;
    struct qv__arc arc;
    struct qv__dec *d;
    uint32_t *buf32;
    uint64_t *buf64;
    uint8_t *pad;
};

static int packed_block(void *vctx, int64_t pos, int64_t m, uint64_t *res,
                        struct qv_error *err) {
    struct packed_ctx *c = vctx;
    const unsigned w = c->w;
    const int64_t vec = pos >> QV__VEC_SHIFT, vstart = vec << QV__VEC_SHIFT;
    const int64_t vrem = c->bp->count - vstart < QV__VEC ? c->bp->count - vstart : QV__VEC;
    const unsigned lo = (unsigned)(pos - vstart);
    const uint8_t *vin = c->bp->buf[0] + (uint64_t)vec * 128 * w;
    const uint64_t a = c->arc.a, dd = c->arc.d, M = c->arc.mask;
    if (m < 64) {
        /* A few values: read them in place (inside the truncated tail). */
        res[0] = 0;
        for (unsigned j = 0; j < (unsigned)m; j++)
            res[0] |= (uint64_t)(((qv__bitpack_get(vin, w, lo + j) - a) & M) <= dd) << j;
        return 0;
    }
    if (vrem < QV__VEC) {
        /* The partial tail vector is stored truncated: unpack a zero-padded
         * copy. */
        if (!c->pad && !(c->pad = qv__stack_push(&c->d->stack, (size_t)128 * w, err)))
            return ENOMEM;
        uint64_t have = qv__bitpack_vec_bytes(vrem, w);
        memcpy(c->pad, vin, have);
        memset(c->pad + have, 0, 128 * w - have);
        vin = c->pad;
    }
    if (w <= 32) {
        qv__unpack32((const uint32_t *)(const void *)vin, w, c->buf32, 0);
        qv__arc_cmp(c->buf32 + lo, 4, m, a, dd, M, res);
    } else {
        qv__unpack64(vin, w, c->buf64, 0);
        qv__arc_cmp(c->buf64 + lo, 8, m, a, dd, M, res);
    }
    return 0;
}

int qv__filter_packed(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                      const uint64_t *sel, uint64_t *out, struct qv_error *err) {
    struct qv__node *root = d->root;
    struct packed_ctx c = {0};
    uint64_t ref = 0;
    c.bp = root;
    if (root->enc == QV_ENC_FOR) {
        ref = (uint64_t)root->params[0];
        c.bp = root->child[0];
    }
    c.w = (unsigned)c.bp->params[0];
    c.d = d;
    c.arc = residual_arc(&fp->arc, ref & fp->arc.mask, c.w);
    if (c.arc.none) return 0;
    if (c.arc.all) {
        qv__filter_fill(sel, n, out);
        return 0;
    }
    if (c.w <= 32) c.buf32 = qv__stack_push(&d->stack, QV__VEC * 4, err);
    else c.buf64 = qv__stack_push(&d->stack, QV__VEC * 8, err);
    if (!c.buf32 && !c.buf64) return ENOMEM;
    return qv__filter_blocks(start, n, sel, out, packed_block, &c, err);
}

/* Radix (radix.c) under an optional FOR: its digits are residuals of 8
 * bits at most, compared against the residual arc as bit-packed ones are.
 * Pairs (k = 2) are split and compared in one pass over the groups
 * (qv__radix_pairs_cmp: no digit is stored; bench/run small_ints, 11
 * values, 0.42 -> 0.15-0.17 ns a value, bit-packing's 0.19-0.20).
 * Otherwise the digits are split into bytes and compared. With 4 or more
 * digits a group and at most RADIX_TAB_MAX possible groups (b^k), the
 * predicate is evaluated once per possible group instead: a table gives
 * the k bits of each group, and a vector's answer is its groups' entries
 * laid end to end. bench/run small_ints, filter ns a value, split against
 * table: 3 values in groups of 5, 0.70 against 0.48; 5 values in groups of
 * 3, 0.72-0.77 against 0.77-0.79; pairs (11 values), 0.4 against 1.0. */
#define RADIX_TAB_MAX 4096
struct radix_ctx {
    struct qv__dec *d;
    struct qv__node *rx;
    struct qv__arc arc;
    uint8_t *buf;   /* digits, or */
    uint16_t *tab;  /* the bits of each group, and */
    uint16_t *grp;  /* a vector's groups (and one more), or with pairs */
    int pairs;      /* compared as they are split (pc), into grp and: */
    uint64_t *bits; /* QV__VEC / 64 + 1 words */
    struct qv__pairs_cmp pc;
};

/* Pairs: the groups of values [pos, pos + m) split and compared at once,
 * from the group holding pos. */
static int pairs_block(struct radix_ctx *c, int64_t pos, int64_t m, uint64_t *res,
                       struct qv_error *err) {
    const int64_t g0 = pos / 2, ng = (pos + m - 1) / 2 + 1 - g0;
    int rc = qv__radix_groups(c->d, c->rx, g0, ng, c->grp, 0, err);
    if (rc) return rc;
    if (qv__radix_pairs_cmp(&c->pc, c->grp, ng, c->bits))
        return qv__radix_bad_group(c->rx, g0, c->grp, ng, err);
    qv__bits_extract(c->bits, 2 * ng, pos & 1, m, res);
    return 0;
}

static int radix_block(void *vctx, int64_t pos, int64_t m, uint64_t *res, struct qv_error *err) {
    struct radix_ctx *c = vctx;
    if (c->pairs) return pairs_block(c, pos, m, res, err);
    if (!c->tab) {
        int rc = qv__radix_dec_digits(c->d, c->rx, pos, m, c->buf, err);
        if (!rc) qv__arc_cmp(c->buf, 1, m, c->arc.a, c->arc.d, c->arc.mask, res);
        return rc;
    }
    const unsigned k = (unsigned)c->rx->params[1];
    const int64_t g0 = pos / k, ng = (pos + m - 1) / k + 1 - g0;
    int rc = qv__radix_groups(c->d, c->rx, g0, ng, c->grp, 1, err);
    if (rc) return rc;
    for (int64_t w = 0; w < (m + 63) / 64; w++) res[w] = 0;
    /* Bit cursor at; the first group's digits before pos dropped, the last
     * group's past pos + m masked off. */
    int64_t at = 0;
    unsigned skip = (unsigned)(pos - g0 * k);
    for (int64_t j = 0; j < ng; j++) {
        unsigned nb = k - skip;
        if ((int64_t)nb > m - at) nb = (unsigned)(m - at);
        const uint64_t bits = ((uint64_t)c->tab[c->grp[j]] >> skip) & ((UINT64_C(1) << nb) - 1);
        const unsigned sh = (unsigned)(at & 63);
        res[at >> 6] |= bits << sh;
        if (sh + nb > 64) res[(at >> 6) + 1] |= bits >> (64 - sh);
        at += nb;
        skip = 0;
    }
    return 0;
}

int qv__filter_radix(struct qv__dec *d, const struct qv__fpred *fp, int64_t start, int64_t n,
                     const uint64_t *sel, uint64_t *out, struct qv_error *err) {
    struct qv__node *root = d->root;
    struct radix_ctx c = {.d = d, .rx = root};
    uint64_t ref = 0;
    if (root->enc == QV_ENC_FOR) {
        ref = (uint64_t)root->params[0];
        c.rx = root->child[0];
    }
    c.arc = residual_arc(&fp->arc, ref & fp->arc.mask, 8);
    if (c.arc.none) return 0;
    if (c.arc.all) {
        qv__filter_fill(sel, n, out);
        return 0;
    }
    const uint32_t b = (uint32_t)c.rx->params[0];
    const unsigned k = (unsigned)c.rx->params[1];
    const uint32_t top = qv__radix_power(b, k);
    if (k == 2 && qv__radix_pairs_cmp_init(b, (uint8_t)c.arc.a, (uint8_t)c.arc.d, &c.pc)) {
        c.pairs = 1;
        c.grp = qv__stack_push(&d->stack, (size_t)(QV__VEC / 2 + 2) * 2, err);
        c.bits = c.grp ? qv__stack_push(&d->stack, (QV__VEC / 64 + 1) * 8, err) : NULL;
        if (!c.bits) return ENOMEM;
    } else if (k < 4 || top > RADIX_TAB_MAX) {
        if (!(c.buf = qv__stack_push(&d->stack, QV__VEC, err))) return ENOMEM;
    } else {
        c.tab = qv__stack_push(&d->stack, (size_t)top * 2, err);
        c.grp = c.tab ? qv__stack_push(&d->stack, (size_t)(QV__VEC / 2 + 2) * 2, err) : NULL;
        if (!c.grp) return ENOMEM;
        for (uint32_t x = 0; x < top; x++) {
            uint16_t bits = 0;
            for (unsigned t = 0, y = x; t < k; t++, y /= b)
                bits |= (uint16_t)((((y % b) - c.arc.a) & c.arc.mask) <= c.arc.d) << t;
            c.tab[x] = bits;
        }
    }
    return qv__filter_blocks(start, n, sel, out, radix_block, &c, err);
}

struct decoded_ctx {
    struct qv__dec *d;
    const struct qv__fpred *fp;
    void *buf;
};

static int decoded_block(void *vctx, int64_t pos, int64_t m, uint64_t *res,
                         struct qv_error *err) {
    struct decoded_ctx *c = vctx;
    int rc = qv__dec_word(c->d, c->d->root, pos, m, c->buf, err);
    if (rc) return rc;
    qv__arc_cmp(c->buf, c->fp->width, m, c->fp->arc.a, c->fp->arc.d, c->fp->arc.mask, res);
    return 0;
}

int qv__filter_decoded_int(struct qv__dec *d, const struct qv__fpred *fp, int64_t start,
                           int64_t n, const uint64_t *sel, uint64_t *out, struct qv_error *err) {
    struct decoded_ctx c = {d, fp, qv__stack_push(&d->stack, (size_t)QV__VEC * fp->width, err)};
    if (!c.buf) return ENOMEM;
    return qv__filter_blocks(start, n, sel, out, decoded_block, &c, err);
}
