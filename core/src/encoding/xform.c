/*
 * Estimates for the cascade's transforms: what delta or zig-zag leaves to
 * its child, and what the child's own cascade would make of it.
 *
 * Delta's first estimate packs its deltas at the width of their whole
 * range, and zig-zag had none. Both miss data whose transformed values are
 * mostly small with a few large ones: flights' departure times, sorted
 * within each day, step by a few minutes and jump back once a day (deltas
 * of 2.4 bits of entropy a value where the times take 9 to 10), and
 * lineitem's ship dates, a base per order plus up to 121 days (deltas 9.4
 * bits against 11.3 for the dates). Their children would take patched or
 * bucket, which the range alone cannot see.
 *
 * So this takes a sample of whole vectors spread over the chunk (4: with
 * 8, the estimates alone cost flights' one-thread write 7 to 9 ms of 120,
 * with 4 about 4 ms, and the files came out 0.1% smaller), transforms it
 * as the encoder would, and asks
 * the same estimators the child's cascade asks: frame of reference,
 * patched, and bucket over the zig-zagged values (delta's negative steps
 * wrap to the top of the range, which bucket's magnitudes cannot code).
 * Each is scored with the decode costs of the whole chain, the transform
 * included; the best is returned, scaled to the chunk's count. The same
 * without a transform (frame of reference or patched over the values
 * themselves) serves ALP, whose digits are such a child (alp.c).
 */
#include "encoding/enc_internal.h"

#define XFORM_SAMPLE_VECTORS 4

/* Frame of reference's estimate over a sample of sn values, for n. */
static double for_bytes(const struct qv__istats *s, int64_t n) {
    uint64_t ref;
    return (double)qv__bitpack_bytes(n, qv__istats_for_bits(s, &ref)) + 24;
}

/* Patched as add_patched (cascade.c) proposes it: outliers, fewer than
 * half of the values, and a narrower width than frame of reference's. */
static int patched_pays(const struct qv__patched_choice *pc, int64_t sn) {
    return pc->est_bytes >= 0 && pc->width < pc->full && pc->est_exceptions > 0 &&
           pc->est_exceptions * 2 <= sn;
}

/* A screen before patched's estimate (three histograms and a selection
 * over the sample): nine in ten of the values lie within a width at least
 * two bits below frame of reference's. The widths are counted in four
 * histograms, so that runs of one width do not wait on one counter (a
 * store-to-load chain a value: 7% of a small table's write). */
static int narrow_bulk(const uint64_t *x, int64_t sn, const struct qv__istats *s) {
    uint64_t ref;
    const unsigned fb = qv__istats_for_bits(s, &ref);
    if (fb < 3) return 0;
    const uint64_t mask = qv__mask(s->bits);
#define WIDTH_OF(v) (((v) - ref) & mask ? 64 - __builtin_clzll(((v) - ref) & mask) : 0)
    int64_t h4[4][65] = {{0}}, h[65];
    int64_t i = 0;
    for (; i + 4 <= sn; i += 4) {
        h4[0][WIDTH_OF(x[i])]++;
        h4[1][WIDTH_OF(x[i + 1])]++;
        h4[2][WIDTH_OF(x[i + 2])]++;
        h4[3][WIDTH_OF(x[i + 3])]++;
    }
    for (; i < sn; i++) h4[0][WIDTH_OF(x[i])]++;
#undef WIDTH_OF
    for (int b = 0; b < 65; b++) h[b] = h4[0][b] + h4[1][b] + h4[2][b] + h4[3][b];
    int64_t acc = 0;
    unsigned w = 0;
    for (; w < 64; w++)
        if ((acc += h[w]) * 10 >= sn * 9) break;
    return w + 2 <= fb;
}

/* Considers one chain: bytes (already for n) at decode cost `cost`. */
static void consider(const struct qv__enc *e, struct qv__xform_choice *c, double bytes, int cost) {
    if (!(bytes >= 0)) return;
    const double score = bytes * qv__cost_weight(e, cost);
    if (c->est_bytes < 0 || score < c->score) {
        c->est_bytes = bytes;
        c->score = score;
        c->cost = cost;
    }
}

int qv__xform_estimate(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int kind,
                       int depth, struct qv__xform_choice *c) {
    c->est_bytes = -1;
    c->score = 0;
    c->cost = 0;
    const unsigned bits = qv__pt_width(pt) * 8;
    const uint64_t mask = qv__mask(bits);
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    const int64_t take = nvec < XFORM_SAMPLE_VECTORS ? nvec : XFORM_SAMPLE_VECTORS;
    if (n < QV__VEC || !bits) return 0;
    struct qv__mark mk = qv__stack_mark(&e->stack);
    uint64_t *smp = qv__stack_push(&e->stack, (size_t)take * QV__VEC * 8 * 2, e->err);
    if (!smp) {
        qv__stack_release(&e->stack, mk);
        return ENOMEM; /* as for the other estimates' scratch: not a smaller candidate set */
    }
    uint64_t *zz = smp + take * QV__VEC;
    int64_t sn = 0, dmin = INT64_MAX, dmax = INT64_MIN;
    for (int64_t k = 0; k < take; k++) {
        const int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
        const int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        if (kind != QV__XFORM_DELTA) {
            for (int64_t i = vs; i < ve; i++) smp[sn++] = v[i] & mask;
            continue;
        }
        smp[sn++] = 0; /* the vector's first slot: set below, as delta.c fills it */
        for (int64_t i = vs + 1; i < ve; i++) {
            const uint64_t d = (v[i] - v[i - 1]) & mask;
            const int64_t sd = qv__sext(d, bits);
            dmin = sd < dmin ? sd : dmin;
            dmax = sd > dmax ? sd : dmax;
            smp[sn++] = d;
        }
    }
    if (kind == QV__XFORM_DELTA) {
        const uint64_t fill = qv__delta_fill(dmin, dmax, bits);
        for (int64_t k = 0, at = 0; k < take; k++) {
            const int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
            smp[at] = fill;
            at += (vs + QV__VEC < n ? QV__VEC : n - vs);
        }
    }
    for (int64_t i = 0; i < sn; i++) zz[i] = qv_zigzag_encode64(qv__sext(smp[i], bits)) & mask;
    const double scale = (double)n / (double)sn;
    const int tcost = kind == QV__XFORM_NONE ? 0
                      : qv__encoding_of((unsigned)(kind == QV__XFORM_DELTA ? QV_ENC_DELTA : QV_ENC_ZIGZAG))
                            ->decode_cost;
    const int zcost = qv__encoding_of(QV_ENC_ZIGZAG)->decode_cost;
    const int pcost = qv__encoding_of(QV_ENC_PATCHED)->decode_cost;
    const int bcost = qv__encoding_of(QV_ENC_BUCKET)->decode_cost;
    /* The values the transform's node hands its child (delta's wrapped
     * deltas; zig-zag's own output) and, for delta, those zig-zagged once
     * more by a zig-zag child. The children's cascades run at depth + 1
     * and, below a zig-zag child, + 2: they nest (patched, bucket) only
     * above the depth bound. */
    const uint64_t *own = kind == QV__XFORM_ZIGZAG ? zz : smp;
    /* The statistics of the zig-zag codes (sz, computed once) and of the
     * values the node hands its child (s: the same for zig-zag). Whether
     * the values' bulk is narrow around zero (judged on their zig-zag
     * codes) is when patched can pay below a transform: over delta's
     * wrapped deltas, patched finds that bulk by its low percentile
     * references, which frame of reference's cannot. */
    struct qv__istats s, sz;
    int znarrow = 0;
    if (kind != QV__XFORM_NONE) {
        qv__istats_compute(zz, sn, bits, &sz);
        znarrow = narrow_bulk(zz, sn, &sz);
    }
    if (kind == QV__XFORM_ZIGZAG)
        s = sz;
    else
        qv__istats_compute(own, sn, bits, &s);
    consider(e, c, for_bytes(&s, n), tcost + 1);
    int rc = 0;
    struct qv__patched_choice pc;
    if (depth + 1 < e->max_depth && qv__allowed(e, QV_ENC_PATCHED) &&
        (kind == QV__XFORM_NONE ? narrow_bulk(own, sn, &s) : znarrow)) {
        if ((rc = qv__patched_choose(e, own, sn, pt, &s, &pc))) goto out;
        if (patched_pays(&pc, sn)) consider(e, c, pc.est_bytes * scale, tcost + pcost);
    }
    /* Bucket below a transform only in compact mode. In the default mode
     * lineitem's ship dates took it in some row groups (deltas at 9.4
     * bits a value against 12 packed): 15 times the decode time of
     * packing, on a column TPC-H's Q6 filters on. */
    const int bucket_ok = e->compact && qv__allowed(e, QV_ENC_BUCKET) && qv__allowed(e, QV_ENC_ANS) &&
                          bits > 8;
    struct qv__bucket_choice bc;
    if (kind == QV__XFORM_NONE) goto out;
    if (kind == QV__XFORM_ZIGZAG) {
        if (bucket_ok && depth + 1 < e->max_depth) {
            qv__bucket_choose(zz, sn, pt, &bc);
            if (bc.est_bytes >= 0) consider(e, c, bc.est_bytes * scale, tcost + bcost);
        }
        goto out;
    }
    if (!qv__allowed(e, QV_ENC_ZIGZAG) || depth + 1 >= e->max_depth) goto out;
    consider(e, c, for_bytes(&sz, n), tcost + zcost + 1);
    if (depth + 2 < e->max_depth && qv__allowed(e, QV_ENC_PATCHED) && znarrow) {
        if ((rc = qv__patched_choose(e, zz, sn, pt, &sz, &pc))) goto out;
        if (patched_pays(&pc, sn))
            consider(e, c, pc.est_bytes * scale, tcost + zcost + pcost);
    }
    if (bucket_ok && depth + 2 < e->max_depth) {
        qv__bucket_choose(zz, sn, pt, &bc);
        if (bc.est_bytes >= 0) consider(e, c, bc.est_bytes * scale, tcost + zcost + bcost);
    }
out:
    qv__stack_release(&e->stack, mk);
    return rc;
}
