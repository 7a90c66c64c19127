/*
 * Patched: bit-packing with exceptions. A column whose values mostly fit in
 * a few bits but that holds a few outliers (a 16-bit id among 4-bit ones, a
 * sentinel far below the rest) pays the outliers' width on every value
 * under frame of reference. Patched stores a base child in which each
 * outlier is replaced by the reference (so the base packs at the narrow
 * width), plus the outliers' positions (u32, strictly increasing) and
 * values. Value i is the patch value when i is a patch position, else the
 * base's value i: a range decode decodes the base, then overwrites the
 * positions inside the range, found by binary search over the positions
 * kept on the node (as sparse does).
 *
 * The width is chosen to minimize packed bits plus the estimated cost of
 * the exceptions, from a histogram of residual widths; the reference is
 * the minimum, or a low percentile (1%, 10%) of a sample when a few
 * values far below the rest would otherwise widen every value.
 */
#include "base/cpu_internal.h"
#include "base/dcheck.h"
#include "encoding/enc_internal.h"

#define SAMPLE_VECTORS 8

/* Key of a value in the chosen order: signed order is unsigned order with
 * the sign bit flipped. */
static inline uint64_t order_key(uint64_t x, uint64_t flip) { return x ^ flip; }

/* k-th smallest of a[0..n) (a is reordered): Hoare selection, O(n) expected
 * on the sample sizes used here; the middle element as pivot keeps sorted
 * samples linear too. */
static uint64_t select_kth(uint64_t *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint64_t p = a[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < p) i++;
            while (a[j] > p) j--;
            if (i <= j) {
                uint64_t t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return a[k];
    }
    return a[k];
}

/* Gathers into out the keys of smp[0..n) less kmin (offsets from it) that
 * lie in [off, off + span]; returns how many. */
static int64_t gather(const uint64_t *smp, int64_t n, uint64_t flip, uint64_t kmin, uint64_t off,
                      uint64_t span, uint64_t *out) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t d = order_key(smp[i], flip) - kmin;
        out[c] = d;
        c += d - off <= span;
    }
    return c;
}

/* The 10% and 1% values of a sample are its k2-th and k1-th smallest keys
 * (k1 <= k2). Selection over the whole sample (a copy in key order) cost a
 * write more than the histograms: instead, hist (the sample's histogram
 * against its minimum, ref_min) says which bucket holds each rank, and a
 * bucket is a key range (bucket 0 the minimum, bucket b the keys from
 * kmin + 2^(b-1) to kmin + 2^b - 1: residual widths rise with the key), so
 * only that bucket's keys are gathered (into keys, room for n) and
 * selected among: the same order statistics, refs[0] the k1-th value and
 * refs[1] the k2-th. */
static void percentile_refs(const uint64_t *smp, int64_t n, uint64_t ref_min, uint64_t flip,
                            const int64_t *hist, int64_t k1, int64_t k2, uint64_t *keys,
                            uint64_t refs[2]) {
    uint64_t kmin = order_key(ref_min, flip);
    const int64_t k[2] = {k1, k2};
    int b[2] = {-1, -1};
    int64_t lo[2] = {0, 0}, at = 0;
    uint64_t off[2] = {0, 0}, span[2] = {~UINT64_C(0), ~UINT64_C(0)};
    for (int bb = 0; bb <= 64 && b[1] < 0; bb++) {
        for (int j = 0; j < 2; j++)
            if (b[j] < 0 && k[j] < at + hist[bb]) {
                b[j] = bb;
                lo[j] = at;
                off[j] = bb == 0 ? 0 : UINT64_C(1) << (bb - 1);
                span[j] = bb <= 1 ? 0 : off[j] - 1;
            }
        at += hist[bb];
    }
    QV_DCHECK(hist[65] == 0 && b[1] >= 0);
    if (hist[65] != 0 || b[1] < 0) {
        /* Not a histogram against the minimum: select among all keys. */
        b[0] = b[1] = -1;
        kmin = 0;
        off[0] = off[1] = lo[0] = lo[1] = 0;
        span[0] = span[1] = ~UINT64_C(0);
    }
    if (b[1] == 0) {
        refs[0] = refs[1] = ref_min;
        return;
    }
    int64_t c = gather(smp, n, flip, kmin, off[1], span[1], keys);
    QV_DCHECK(b[1] < 0 || c == hist[b[1]]);
    refs[1] = order_key(kmin + select_kth(keys, c, k2 - lo[1]), flip);
    if (b[0] == b[1]) {
        /* Selection left the smaller keys in keys[0..k2 - lo). */
        refs[0] = order_key(kmin + select_kth(keys, k2 - lo[1] + 1, k1 - lo[1]), flip);
    } else if (b[0] == 0) {
        refs[0] = ref_min;
    } else {
        c = gather(smp, n, flip, kmin, off[0], span[0], keys);
        refs[0] = order_key(kmin + select_kth(keys, c, k1 - lo[0]), flip);
    }
#ifdef QV_DEBUG
    /* The same order statistics as selection over the whole sample. */
    for (int j = 0; j < 2; j++) {
        gather(smp, n, flip, 0, 0, ~UINT64_C(0), keys);
        QV_DCHECK(order_key(select_kth(keys, n, k[j]), flip) == refs[j]);
    }
#endif
}

/* Exceptions from which their positions are delta-encoded even below the
 * cascade's depth bound (qv__patched_encode). */
#define POS_DELTA_MIN 64

/* Bytes an exception costs, estimated: its position (cascaded, usually
 * delta-packed gaps of about n / E) and its value at the full width. */
static double exc_bytes(int64_t n, int64_t e, unsigned full) {
    if (e <= 0) return 0;
    return (double)e * (double)(qv__bits((uint64_t)(2 * n / e)) + 1 + full) / 8.0;
}

/* The best width for a histogram hist[b] = values whose residual needs b
 * bits (b = 65: below the reference), scaled by `scale` to n values. */
static void best_width(const int64_t *hist, int64_t n, double scale, unsigned full,
                       unsigned *w_out, double *bytes_out, int64_t *exc_out) {
    double best = -1;
    int64_t above = 0;
    for (int b = 0; b <= 65; b++) above += hist[b];
    unsigned bw = full;
    int64_t bexc = 0;
    for (unsigned w = 0; w <= full; w++) {
        above -= hist[w];
        int64_t e = (int64_t)((double)above * scale + 0.5);
        double bytes = (double)qv__bitpack_bytes(n, w) + exc_bytes(n, e, full) + 48;
        if (best < 0 || bytes < best) {
            best = bytes;
            bw = w;
            bexc = e;
        }
    }
    *w_out = bw;
    *bytes_out = best;
    *exc_out = bexc;
}

/* The residual width slot of key x against kref (65: below it). With
 * `narrow` (values below 2^63, as every width under 64 bits has), a key
 * below the reference wraps to a difference of width 64, which no residual
 * has: its slot is 64, and the caller moves those counts to 65. */
#define QV__PATCHED_SLOT(x, narrow)                                                                \
    ((narrow) ? qv__bits((x) - kref) : (x) < kref ? 65 : qv__bits(((x) - kref) & mask))

/* Values v[0..n) (n < 2^32) into the four partial histograms h. */
static QV__ALWAYS_INLINE void histogram4(const uint64_t *v, int64_t n, uint64_t kref,
                                         uint64_t flip, uint64_t mask, int narrow,
                                         uint32_t h[4][66]) {
    for (int64_t i = 0; i < n; i += 4) {
        uint64_t k0 = order_key(v[i], flip), k1 = order_key(v[i + 1], flip);
        uint64_t k2 = order_key(v[i + 2], flip), k3 = order_key(v[i + 3], flip);
        h[0][QV__PATCHED_SLOT(k0, narrow)]++;
        h[1][QV__PATCHED_SLOT(k1, narrow)]++;
        h[2][QV__PATCHED_SLOT(k2, narrow)]++;
        h[3][QV__PATCHED_SLOT(k3, narrow)]++;
    }
}

/* Adds the values' residual widths to hist (65: below the reference). Four
 * partial histograms, so runs of equal widths do not wait on one counter
 * (a store-to-load chain per value). */
static void histogram(const uint64_t *v, int64_t n, uint64_t ref, uint64_t flip, unsigned bits,
                      int64_t *hist) {
    const uint64_t mask = qv__mask(bits), kref = order_key(ref, flip);
    uint32_t h[4][66];
    memset(h, 0, sizeof h);
    const int narrow = bits < 64;
    int64_t m = n < (INT64_C(1) << 32) - 4 ? n & ~INT64_C(3) : (INT64_C(1) << 32) - 4;
    if (narrow) {
        histogram4(v, m, kref, flip, mask, 1, h);
        for (int j = 0; j < 4; j++) h[j][65] += h[j][64], h[j][64] = 0;
#ifdef QV_DEBUG
        /* The same counts as the slots that compare with the reference. */
        uint32_t g[4][66];
        memset(g, 0, sizeof g);
        histogram4(v, m, kref, flip, mask, 0, g);
        QV_DCHECK(memcmp(g, h, sizeof g) == 0);
#endif
    } else {
        histogram4(v, m, kref, flip, mask, 0, h);
    }
    for (int64_t i = m; i < n; i++) hist[QV__PATCHED_SLOT(order_key(v[i], flip), 0)]++;
    for (int b = 0; b < 66; b++) hist[b] += (int64_t)h[0][b] + h[1][b] + h[2][b] + h[3][b];
}
#undef QV__PATCHED_SLOT

int qv__patched_choose(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, struct qv__patched_choice *c) {
    memset(c, 0, sizeof *c);
    c->est_bytes = -1;
    const unsigned bits = qv__pt_width(pt) * 8;
    if (n < 16 || bits == 0) return 0;
    const uint64_t urange = s->umax - s->umin;
    const uint64_t srange = (uint64_t)s->smax - (uint64_t)s->smin;
    const int sgn = srange < urange;
    const uint64_t flip = sgn ? UINT64_C(1) << (bits - 1) : 0;
    const unsigned full = qv__bits(sgn ? srange : urange);
    if (full < 2) return 0;
    /* The sample: whole vectors spread over the chunk. */
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    const int64_t take = nvec < SAMPLE_VECTORS ? nvec : SAMPLE_VECTORS;
    struct qv__mark mk = qv__stack_mark(&e->stack);
    int64_t sn = 0;
    for (int64_t k = 0; k < take; k++) {
        int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
        sn += vs + QV__VEC < n ? QV__VEC : n - vs;
    }
    uint64_t *smp = qv__stack_push(&e->stack, (size_t)sn * 8, e->err);
    if (!smp) {
        /* No scratch fails the encode: dropping the candidate would make
         * the file depend on what else the pool held at the time. */
        qv__stack_release(&e->stack, mk);
        return ENOMEM;
    }
    int64_t at = 0;
    for (int64_t k = 0; k < take; k++) {
        int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
        int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        for (int64_t i = vs; i < ve; i++) smp[at++] = v[i];
    }
    const double scale = (double)n / (double)sn;
    /* Reference 1: the minimum (as frame of reference uses). */
    const uint64_t ref_min = sgn ? (uint64_t)s->smin & qv__mask(bits) : s->umin;
    int64_t hist[66] = {0};
    histogram(smp, sn, ref_min, flip, bits, hist);
    unsigned w;
    double bytes;
    int64_t exc;
    best_width(hist, n, scale, full, &w, &bytes, &exc);
    c->ref = ref_min;
    c->width = w;
    c->est_bytes = bytes;
    c->est_exceptions = exc;
    /* References 2 and 3: low percentiles of the sample, for outliers
     * below the rest (1% and 10% of the values), selected among the keys
     * of the histogram's bucket that holds them (percentile_refs), so the
     * histograms still see the sample's values. */
    uint64_t *keys = qv__stack_push(&e->stack, (size_t)sn * 8, e->err);
    if (!keys) {
        qv__stack_release(&e->stack, mk);
        return ENOMEM;
    } else {
        static const int64_t per_mille[] = {10, 100};
        uint64_t refs[2];
        percentile_refs(smp, sn, ref_min, flip, hist, sn * per_mille[0] / 1000,
                        sn * per_mille[1] / 1000, keys, refs);
        for (size_t pi = 0; pi < sizeof per_mille / sizeof per_mille[0]; pi++) {
            uint64_t ref_p = refs[pi];
            if (ref_p == c->ref) continue;
            memset(hist, 0, sizeof hist);
            histogram(smp, sn, ref_p, flip, bits, hist);
            best_width(hist, n, scale, full, &w, &bytes, &exc);
            if (bytes < c->est_bytes) {
                c->ref = ref_p;
                c->width = w;
                c->est_bytes = bytes;
                c->est_exceptions = exc;
            }
        }
    }
    c->flip = flip;
    c->full = full;
    qv__stack_release(&e->stack, mk);
    return 0;
}

int qv__patched_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                       const struct qv__patched_choice *c, int forced, struct qv__enode **out) {
    const unsigned bits = qv__pt_width(pt) * 8;
    /* The exact width for this reference over all values. */
    int64_t hist[66] = {0};
    histogram(v, n, c->ref, c->flip, bits, hist);
    unsigned w;
    double bytes;
    int64_t ne;
    best_width(hist, n, 1.0, c->full, &w, &bytes, &ne);
    if (!forced && (ne == 0 || w >= c->full)) return QV__DECLINED; /* frame of reference does as well */
    if (forced && ne == 0 && w > 0) w--; /* a forced node still patches something when it can */
    const uint64_t mask = qv__mask(bits), kref = order_key(c->ref, c->flip);
    const uint64_t lim = w >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
    /* The exceptions, counted by the histogram: values below the reference
     * and those whose residual needs more than w bits (> lim). */
    ne = hist[65];
    for (unsigned b = w + 1; b <= 64; b++) ne += hist[b];
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_PATCHED, pt, qv__pt_width(pt), n);
    uint64_t *base = nd ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    uint64_t *pos = base ? qv__mem_alloc(&e->mem, (size_t)(ne ? ne : 1) * 8, e->err) : NULL;
    uint64_t *vals = pos ? qv__mem_alloc(&e->mem, (size_t)(ne ? ne : 1) * 8, e->err) : NULL;
    int rc = ENOMEM;
    if (!vals) goto out;
    for (int64_t i = 0, k = 0; i < n; i++) {
        uint64_t kk = order_key(v[i], c->flip);
        if (kk < kref || ((kk - kref) & mask) > lim) {
            pos[k] = (uint64_t)i;
            vals[k++] = v[i];
            base[i] = c->ref;
        } else {
            base[i] = v[i];
        }
    }
    rc = qv__cascade_int(e, base, n, pt, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    /* The positions increase, by gaps of about n / E, which is what the
     * estimate (exc_bytes) counts. A patched node just above the depth
     * bound leaves its children no level to choose delta in, and their
     * positions were packed whole: 18 bits each instead of about 6 for
     * FSST's lengths in lineitem's l_comment (its offsets are delta, then
     * patched). There delta is built too, its own children packed as they
     * are (one level past the bound, which encode.c keeps 4 levels below
     * the format's), and the smaller kept. */
    if (!rc) rc = qv__cascade_int(e, pos, ne, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    if (!rc && depth + 1 >= e->max_depth && ne >= POS_DELTA_MIN) {
        struct qv__enode *alt;
        rc = qv__cascade_int(e, pos, ne, QV__PT_U32, depth + 1, QV_ENC_DELTA, &alt);
        if (rc == QV__DECLINED) {
            rc = 0;
        } else if (!rc && alt->size < nd->child[1]->size) {
            qv__enode_drop(e, nd->child[1]);
            nd->child[1] = alt;
        } else if (!rc) {
            qv__enode_drop(e, alt);
        }
    }
    if (!rc) rc = qv__cascade_int(e, vals, ne, pt, depth + 1, QV_ENC_AUTO, &nd->child[2]);
    if (rc) goto out;
    nd->nchildren = 3;
    qv__enode_finish(nd);
    *out = nd;
out:
    qv__mem_free(&e->mem, vals);
    qv__mem_free(&e->mem, pos);
    qv__mem_free(&e->mem, base);
    return rc;
}

/* ---- Decoding ---- */

struct patched_cache {
    void *vals; /* the patch values, width bytes each */
};

static int load(struct qv__dec *d, struct qv__node *nd, const uint64_t **pos,
                struct patched_cache **out, struct qv_error *err) {
    int rc = qv__dec_cached_u64(d, nd->child[1], 1, (uint64_t)nd->count, pos, err);
    if (rc) return rc;
    struct patched_cache *c = nd->cache;
    if (!c) {
        const int64_t ne = nd->child[1]->count;
        c = qv__mem_small(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        c->vals = qv__mem_buf(&d->mem, (size_t)(ne ? ne : 1) * nd->width, err);
        if (!c->vals) return ENOMEM;
        if ((rc = qv__dec_word(d, nd->child[2], 0, ne, c->vals, err))) return rc;
        nd->cache = c;
    }
    *out = c;
    return 0;
}

static int patched_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                            void *out, struct qv_error *err) {
    const uint64_t *pos;
    struct patched_cache *c;
    int rc = load(d, nd, &pos, &c, err);
    if (rc) return rc;
    if ((rc = qv__dec_word(d, nd->child[0], start, n, out, err))) return rc;
    const int64_t ne = nd->child[1]->count;
    const unsigned w = nd->width;
    uint8_t *o = out;
    const uint8_t *vals = c->vals;
    for (int64_t k = qv__lower_bound(pos, ne, (uint64_t)start);
         k < ne && pos[k] < (uint64_t)(start + n); k++)
        memcpy(o + (pos[k] - (uint64_t)start) * w, vals + (size_t)k * w, w);
    return 0;
}

/* Values at rows[0..n): the base's own take (a bit-packed base reads a
 * sparse take's values in place), then the patches at those rows, found
 * by a doubling search of the positions from the last one found (rows are
 * sorted). */
static int patched_take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows,
                             int64_t n, void *out, struct qv_error *err) {
    const uint64_t *pos;
    struct patched_cache *c;
    int rc = load(d, nd, &pos, &c, err);
    if (rc) return rc;
    const unsigned w = nd->width;
    if ((rc = qv__take_word(d, nd->child[0], rows, n, w, out, err))) return rc;
    const int64_t ne = nd->child[1]->count;
    const uint8_t *vals = c->vals;
    for (int64_t t = 0, k = 0; t < n && k < ne; t++) {
        if (pos[k] < (uint64_t)rows[t]) k += qv__gallop(pos + k, ne - k, (uint64_t)rows[t]);
        if (k < ne && pos[k] == (uint64_t)rows[t])
            memcpy((uint8_t *)out + (size_t)t * w, vals + (size_t)k * w, w);
    }
    return 0;
}

/* ---- Record ---- */

/* Integer word types. No parameters or buffers; children base (same type,
 * count), positions (u32, E <= count, strictly increasing and below count:
 * checked when decoded) and values (same type, E). */
static int patched_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 0, 0, 3, err))) return rc;
    if ((rc = qv__want_child(nd, 0, nd->pt, nd->count, err))) return rc;
    if ((rc = qv__want_child(nd, 1, QV__PT_U32, -1, err))) return rc;
    if (nd->child[1]->count > nd->count)
        return qv__corrupt(err, nd, "%lld patches for %lld values",
                           (long long)nd->child[1]->count, (long long)nd->count);
    return qv__want_child(nd, 2, nd->pt, nd->child[1]->count, err);
}

static int patched_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_PATCHED, s->pt);
    struct qv__patched_choice c;
    if (s->patched && s->patched->est_bytes >= 0) {
        c = *s->patched;
    } else {
        int rc = qv__patched_choose(e, s->u64, s->n, s->pt, s->s, &c);
        if (rc) return rc;
        if (c.est_bytes < 0) {
            if (!s->forced) return QV__DECLINED;
            /* Forced on data too short or narrow to estimate: patch
             * against the minimum at the full width less one. */
            const unsigned bits = s->width * 8;
            const uint64_t urange = s->s->umax - s->s->umin;
            const uint64_t srange = (uint64_t)s->s->smax - (uint64_t)s->s->smin;
            const int sgn = srange < urange;
            c.flip = sgn ? UINT64_C(1) << (bits - 1) : 0;
            c.ref = sgn ? (uint64_t)s->s->smin & qv__mask(bits) : s->s->umin;
            c.full = qv__bits(sgn ? srange : urange);
        }
    }
    return qv__patched_encode(e, s->u64, s->n, s->pt, s->depth, &c, s->forced, out);
}

const struct qv__encoding qv__enc_patched = {
    .id = QV_ENC_PATCHED,
    .name = "patched",
    .decode_cost = 2,
    .dec_word = patched_dec_word,
    .take_word = patched_take_word,
    .validate = patched_validate,
    .build = patched_build,
    .children = {"base", "positions", "values"},
};
