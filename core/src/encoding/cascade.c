/*
 * The sampling cascade: for each node, estimate the encoded size of every
 * allowed candidate from statistics (exact cheap ones over all values,
 * distinct counts and frequencies over a sample of whole vectors, ALP and
 * FSST parameters trained on a sample), try candidates from the best score
 * down, and keep the first that builds. Children are chosen the same way,
 * one level deeper; at the depth bound only leaf encodings remain (plain,
 * constant, bit-packing with frame of reference).
 *
 * Score = estimated bytes x (1 + 1% x decode cost), so when two candidates
 * are within a few percent the cheaper one to decode wins. A built node
 * larger than plain is replaced by plain, so an estimate gone wrong costs
 * encode time, never file size.
 */
#include <math.h>

#include "encoding/enc_internal.h"

/* Whether `enc` compresses finished subtrees in frames (zstd, lz4). */
static int is_frames(int enc) {
    const struct qv__encoding *c = enc > 0 ? qv__encoding_of((unsigned)enc) : NULL;
    return c && (c->flags & QV__ENC_FRAMES);
}

struct cand {
    int enc;
    double est, score;
    /* The estimate is counted from the sample's histogram, not a trial or
     * a bound, and comes out within a few percent (bucket's, and the
     * transforms' chains). */
    int counted;
    /* The estimate is a transform's chain (xform.c; ALP's digits), and
     * own_est the node's own estimate without it (< 0: none). */
    int chain;
    double own_est;
};

struct cands {
    struct cand v[QV_ENC_COUNT];
    int n;
};

/* Adds a candidate; returns it, or NULL when it is not allowed. */
static struct cand *add(struct cands *c, const struct qv__enc *e, int enc, double est) {
    if (!qv__allowed(e, enc) || !(est >= 0) || c->n == QV_ENC_COUNT) return NULL;
    struct cand *k = &c->v[c->n++];
    *k = (struct cand){.enc = enc, .est = est, .score = est * qv__cost_factor(e, enc)};
    return k;
}

/* Picks the best remaining candidate (and removes it); -1 when none. */
static int next_best(struct cands *c) {
    int bi = -1;
    for (int i = 0; i < c->n; i++)
        if (bi < 0 || c->v[i].score < c->v[bi].score) bi = i;
    if (bi < 0) return -1;
    int enc = c->v[bi].enc;
    c->v[bi] = c->v[--c->n];
    return enc;
}

static double packed(int64_t n, unsigned w) { return (double)qv__bitpack_bytes(n, w) + 24; }

int qv__enc_unsupported(struct qv__enc *e, int enc, int pt) {
    return qv_error_set(e->err, EINVAL, "encode: %s cannot encode %s values",
                        qv_encoding_name(enc), qv__pt_name(pt));
}

/* Builds candidate `enc` through its record. */
static int build(struct qv__enc *e, int enc, struct qv__src *src, int forced,
                 struct qv__enode **out) {
    const struct qv__encoding *c = qv__encoding_of((unsigned)enc);
    if (!c || !c->build) return qv__enc_unsupported(e, enc, src->pt);
    src->forced = forced;
    return c->build(e, src, out);
}

/* Replaces a built node by plain when plain is smaller. */
static int keep_smaller(struct qv__enc *e, struct qv__enode **nd, uint64_t plain_size,
                        int (*make_plain)(struct qv__enc *, void *, struct qv__enode **),
                        void *ctx) {
    if ((*nd)->size <= plain_size + 64 || (*nd)->enc == QV_ENC_PLAIN) return 0;
    struct qv__enode *p;
    int rc = make_plain(e, ctx, &p);
    if (rc) return rc;
    if (p->size < (*nd)->size) {
        qv__enode_drop(e, *nd);
        *nd = p;
    } else {
        qv__enode_drop(e, p);
    }
    return 0;
}

/* ---- Wrapping in zstd / lz4 ---- */

static int wrap_forced(struct qv__enc *e, int enc, struct qv__enode **nd) {
    struct qv__enode *w;
    int rc = qv__general_wrap(e, enc, *nd, 1, &w);
    if (rc) return rc;
    *nd = w; /* the inner tree's arena blocks stay until the call ends */
    return 0;
}

/* Compact mode: tries every frame compressor (zstd, lz4) over a finished
 * tree; not ans, an order-0 coder of bytes, which a serialized tree's
 * mixed headers and bit-packed words do not suit (the entropy stage gives
 * it the sequential bytes it is for). Highest id first, so lz4 is tried
 * before zstd as it always was.
 * A wrapped tree costs the wrap's decode and then the tree's own, so its
 * score adds both costs: a 1% smaller lz4 frame must not beat a root
 * that already compresses (zstd_dict, fsst) and keeps random access. */
static int try_general(struct qv__enc *e, struct qv__enode **nd) {
    const double inner = qv__cost_factor(e, (*nd)->enc) - 1.0;
    double best = (double)(*nd)->size * (1.0 + inner);
    struct qv__enode *chosen = NULL;
    for (int enc = (int)qv__encoding_slots() - 1; enc > 0; enc--) {
        if (!is_frames(enc) || enc == QV_ENC_ANS || !qv__allowed(e, enc)) continue;
        struct qv__enode *w;
        int rc = qv__general_wrap(e, enc, *nd, 0, &w);
        if (rc == QV__DECLINED) continue;
        if (rc) return rc;
        double s = (double)w->size * (qv__cost_factor(e, enc) + inner);
        if (s < best) {
            if (chosen) qv__enode_drop(e, chosen);
            chosen = w;
            best = s;
        } else {
            qv__enode_drop(e, w);
        }
    }
    if (chosen) *nd = chosen;
    return 0;
}

static int finish_root(struct qv__enc *e, int depth, int force, struct qv__enode **nd) {
    if (is_frames(force)) return wrap_forced(e, force, nd);
    if (depth == 0 && e->compact) return try_general(e, nd);
    return 0;
}

/* ---- Integers ---- */

struct int_ctx {
    const uint64_t *v;
    int64_t n;
    int pt;
};
static int int_plain(struct qv__enc *e, void *ctx, struct qv__enode **out) {
    struct int_ctx *c = ctx;
    return qv__plain_encode_word(e, c->v, c->n, c->pt, out);
}

/* Builds integer candidate `enc`: zstd over integers is the entropy stage
 * (entropy.c), everything else goes through its record. */
static int build_int(struct qv__enc *e, int enc, struct qv__src *src,
                     const struct qv__entropy_choice *ec, struct qv__enode **out) {
    if (enc == QV_ENC_ZSTD && ec->est_bytes >= 0)
        return qv__entropy_encode(e, src->u64, src->n, src->pt, src->s, ec, 0, out);
    return build(e, enc, src, 0, out);
}

/* An estimate from a sample can be wrong where the sample is not typical
 * (delta estimated on sorted vectors of otherwise unsorted data; zstd's
 * four 16 KiB samples of strings that repeat at a longer distance): when
 * the built node is larger than the next candidate's estimate by more than
 * a tenth, the next candidate is built too and the one of the better score
 * kept (bytes weighed by decode cost, as the estimates are: by bytes
 * alone, flights' departure times' codes took bucket, 12% smaller than
 * bit-packing and 15 times slower to decode, where the estimates had
 * chosen bit-packing). One retry only, so a bad estimate costs at most one
 * more build. `ec` is the integer cascade's entropy choice, NULL for
 * strings. */
static int second_opinion(struct qv__enc *e, struct cands *c, struct qv__src *src,
                          const struct qv__entropy_choice *ec, struct qv__enode **nd) {
    int bi = -1;
    for (int i = 0; i < c->n; i++)
        if (c->v[i].enc != QV_ENC_PLAIN && (bi < 0 || c->v[i].score < c->v[bi].score)) bi = i;
    if (bi < 0 || (double)(*nd)->size <= c->v[bi].est * 1.1 + 64) return 0;
    /* A counted estimate is not far off: such a candidate is not built when
     * even its estimate could not win (the write built bucket for nothing
     * wherever it was the runner-up, about 1% of flights' write). */
    if (c->v[bi].counted &&
        c->v[bi].score >= (double)(*nd)->size * qv__cost_factor(e, (*nd)->enc))
        return 0;
    struct qv__enode *alt;
    int rc = ec ? build_int(e, c->v[bi].enc, src, ec, &alt) : build(e, c->v[bi].enc, src, 0, &alt);
    if (rc == QV__DECLINED) return 0;
    if (rc) return rc;
    if ((double)alt->size * qv__cost_factor(e, alt->enc) <
        (double)(*nd)->size * qv__cost_factor(e, (*nd)->enc)) {
        qv__enode_drop(e, *nd);
        *nd = alt;
    } else {
        qv__enode_drop(e, alt);
    }
    return 0;
}

/* A transform's chain (delta, zig-zag, ALP's digits; xform.c) must
 * score under CHAIN_MARGIN of the best other candidate (plain aside)
 * outside compact mode, and under half of run-end's wherever run-end is
 * proposed; else it gives way: the candidate goes back to its own
 * estimate (delta's packed deltas, ALP's packed digits), or, without one
 * (zig-zag), is dropped. Its decode makes a pass per node of the
 * chain, a prefix sum among them, which the decode costs' percentages
 * undercount: on flights, the chains that won by less (sched_dep_time,
 * sched_arr_time, arr_delay) were up to 14% smaller and decoded 1.6 to
 * 1.8 times slower, while those that won by more (dep_time 368 -> 105
 * KiB, time_hour 144 -> 107) decode faster than what they replaced.
 * Run-end's estimate packs run lengths and values at fixed widths, which
 * its children beat by far on sorted keys (l_orderkey: 41 KB estimated,
 * 12 KB built, where delta's chain built 16 KB), and it decodes several
 * values a cycle. */
#define CHAIN_MARGIN 0.8
static void chains_give_way(const struct qv__enc *e, struct cands *c) {
    double rle = INFINITY, other = INFINITY;
    for (int i = 0; i < c->n; i++) {
        if (c->v[i].enc == QV_ENC_RLE) rle = c->v[i].score;
        if (!c->v[i].chain && c->v[i].enc != QV_ENC_PLAIN && c->v[i].score < other)
            other = c->v[i].score;
    }
    const double bar = e->compact ? INFINITY : other * CHAIN_MARGIN;
    for (int i = 0; i < c->n;) {
        struct cand *k = &c->v[i];
        if (!k->chain || (k->score * 2 <= rle && k->score <= bar)) {
            i++;
        } else if (k->own_est >= 0) { /* back to the node's own estimate */
            *k = (struct cand){.enc = k->enc, .est = k->own_est,
                               .score = k->own_est * qv__cost_factor(e, k->enc)};
            i++;
        } else {
            *k = c->v[--c->n];
        }
    }
}

/* The entropy stage (entropy.c): zstd over the packed values in small
 * frames, proposed when its sample beats the others by QV__ENTROPY_MARGIN
 * beyond zstd's decode cost. */
static int add_entropy(struct qv__enc *e, struct cands *c, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, struct qv__entropy_choice *ec) {
    if (!qv__allowed(e, QV_ENC_ZSTD) || s->umin == s->umax) return 0;
    double best = INFINITY;
    for (int i = 0; i < c->n; i++) best = fmin(best, c->v[i].score);
    int rc = qv__entropy_choose(e, v, n, pt, s, best / (QV__ENTROPY_MARGIN * qv__cost_factor(e, QV_ENC_ZSTD)), ec);
    /* The candidate goes by the stage's id (zstd), weighed by the decode
     * cost of what the stage chose (zstd, zstd + seqpack, ans). ans frames
     * take no margin: their estimate is computed from the sample's
     * histogram, not measured on a trial, and comes out within a few
     * percent (with the margin, flights' origin, 3 airports at 1.6 bits of
     * entropy, tied with 2-bit packing and flipped with 16 bytes more of
     * states per frame). */
    const double scale = qv__cost_weight(e, ec->cost) / qv__cost_factor(e, QV_ENC_ZSTD) *
                         (ec->codec == QV_ENC_ANS ? 1.0 : QV__ENTROPY_MARGIN);
    if (!rc && ec->est_bytes >= 0) add(c, e, QV_ENC_ZSTD, ec->est_bytes * scale);
    return rc;
}

/* Patched (bit-packing with exceptions): proposed when a narrower width
 * plus the outliers as patches is estimated below frame of reference. */
static int add_patched(struct qv__enc *e, struct cands *c, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, unsigned fb, struct qv__patched_choice *pc,
                       struct qv__src *src) {
    if (!qv__allowed(e, QV_ENC_PATCHED) || fb < 2) return 0;
    int rc = qv__patched_choose(e, v, n, pt, s, pc);
    /* Exceptions are outliers: with more than half of the values among
     * them, the patches are the column (sm-fair's 77 dictionary values, 76
     * of them "exceptions" over a constant base, came out 22% larger than
     * packed). */
    if (rc || pc->est_bytes < 0 || pc->width >= fb || pc->est_exceptions == 0 ||
        pc->est_exceptions * 2 > n)
        return rc;
    src->patched = pc;
    add(c, e, QV_ENC_PATCHED, pc->est_bytes);
    return 0;
}

/* Bucket (magnitude tokens in ans frames, extra bits): for values wider
 * than the 8 bits ans codes, where the sample is not mostly distinct (no
 * skew for the tokens to take). Not beside a dictionary of a column's
 * values (at the root; below it, values are mostly codes and residuals
 * already, and a dictionary of them rarely pays): the dictionary's estimate
 * packs its codes at a fixed width, while its codes' own cascade may take
 * bucket on codes in frequency order, which is where bucket pays (with
 * both proposed, flights' flight column went to bucket over the values,
 * 495 KiB against 455 KiB as dictionary codes). Nor below a zig-zag node
 * outside compact mode: zig-zag comes with the transforms' chains
 * (xform.c), which reach dates and times that are scanned and filtered,
 * where bucket would cost 15 times packing's decode (lineitem's commit
 * dates, deltas at 8.9 bits in bucket against 11.3 patched). */
static void add_bucket(struct qv__enc *e, struct cands *c, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, unsigned fb, struct qv__bucket_choice *bc,
                       struct qv__src *src) {
    if (fb <= 8 || n < QV__VEC || (e->under_zigzag && !e->compact) || !qv__allowed(e, QV_ENC_BUCKET) ||
        !qv__allowed(e, QV_ENC_ANS) || s->sample_distinct * 4 >= s->sample_n * 3)
        return;
    for (int i = 0; i < c->n && src->depth == 0; i++)
        if (c->v[i].enc == QV_ENC_DICT) return;
    qv__bucket_choose(v, n, pt, bc);
    if (bc->est_bytes < 0) return;
    src->bucket = bc;
    struct cand *k = add(c, e, QV_ENC_BUCKET, bc->est_bytes);
    if (k) k->counted = 1;
}

/* Radix (radix.c): the frame-of-reference residuals as base-b digits, k
 * to a group, where that is fewer bits a value than packing's fb; 8 bytes
 * more for the `for` node above it when the reference is not 0. */
static void add_radix(struct qv__enc *e, struct cands *c, const struct qv__istats *s, int64_t n,
                      unsigned fb, uint64_t ref) {
    uint64_t r;
    const uint64_t range = qv__istats_for_range(s, &r);
    if (range < 2 || range > 255 || !qv__allowed(e, QV_ENC_RADIX)) return;
    unsigned gw;
    const unsigned k = qv__radix_digits((uint32_t)range + 1, &gw);
    if (!k || gw >= fb * k) return;
    add(c, e, QV_ENC_RADIX, packed((n + k - 1) / k, gw) + 16 + (ref ? 8 : 0));
}

/* Delta and zig-zag: `est` (< 0: none) is the transform's own estimate
 * (delta's, packing its deltas at their range's width); with `chain` set,
 * its child's likely cascade is estimated on a transformed sample
 * (xform.c), and the candidate takes that chain's estimate, weighed by
 * the chain's decode costs, when it scores better. `extra`: the node's
 * bytes besides its child (delta's bases). */
static int add_xform(struct qv__enc *e, struct cands *c, int enc, double est, double extra,
                     int chain, const uint64_t *v, int64_t n, int pt, int depth) {
    if (!qv__allowed(e, enc)) return 0;
    struct qv__xform_choice xc = {.est_bytes = -1};
    if (chain) {
        int rc = qv__xform_estimate(e, v, n, pt, enc == QV_ENC_DELTA ? QV__XFORM_DELTA : QV__XFORM_ZIGZAG,
                                    depth, &xc);
        if (rc) return rc;
    }
    const double own = est >= 0 ? est * qv__cost_factor(e, enc) : INFINITY;
    const double chained = xc.est_bytes >= 0 ? (xc.est_bytes + extra) * qv__cost_weight(e, xc.cost) : INFINITY;
    if (chained < own) {
        struct cand *k = add(c, e, enc, xc.est_bytes + extra);
        if (k) {
            k->score = chained;
            k->counted = k->chain = 1;
            k->own_est = est;
        }
    } else if (est >= 0) {
        add(c, e, enc, est);
    }
    return 0;
}

int qv__cascade_int(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                    int force, struct qv__enode **out) {
    const unsigned w = qv__pt_width(pt);
    struct qv__istats s;
    qv__istats_compute(v, n, w * 8, &s);
    /* The sample's figures serve the nested candidates' estimates and
     * forced builds (sparse's top value); below the cascade's depth only
     * the entropy stage reads one of them, the distinct count, and only
     * on nodes it would sample. */
    const int nested = n > 0 && depth < e->max_depth && n >= 16;
    int rc = 0;
    if (force != QV_ENC_AUTO || nested)
        rc = qv__istats_sample(e, v, n, QV__SAMPLE_ALL, &s);
    else if (qv__entropy_samples(e, n, &s))
        rc = qv__istats_sample(e, v, n, QV__SAMPLE_DISTINCT, &s);
    if (rc) return rc;
    struct qv__src src = {.pt = pt, .width = w, .n = n, .depth = depth, .u64 = v, .s = &s};
    if (force != QV_ENC_AUTO) {
        if (is_frames(force))
            rc = qv__cascade_int(e, v, n, pt, depth, QV_ENC_AUTO, out);
        else
            rc = build(e, force, &src, 1, out);
        return rc ? rc : finish_root(e, depth, force, out);
    }
    const double plain = (double)n * w + 16;
    struct cands c = {.n = 0};
    struct qv__patched_choice pc;
    struct qv__bucket_choice bc;
    struct qv__entropy_choice ec = {.est_bytes = -1};
    add(&c, e, QV_ENC_PLAIN, plain);
    if (n > 0) {
        if (s.umin == s.umax) add(&c, e, QV_ENC_CONSTANT, w + 16);
        uint64_t ref;
        unsigned fb = qv__istats_for_bits(&s, &ref);
        if (ref == 0 || qv__allowed(e, QV_ENC_FOR)) add(&c, e, ref == 0 ? QV_ENC_BITPACK : QV_ENC_FOR, packed(n, fb));
        if (ref != 0) add(&c, e, QV_ENC_BITPACK, packed(n, qv__bits(s.umax)));
        if (nested) {
            const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
            unsigned db = qv__bits((uint64_t)s.dmax - (uint64_t)s.dmin);
            const double bases = (double)nvec * (fb + 7) / 8 + 48;
            if ((rc = add_xform(e, &c, QV_ENC_DELTA, packed(n, db) + bases, bases, db > 2, v, n, pt,
                                depth)))
                return rc;
            /* Zig-zag where the values straddle zero (deltas below a
             * delta node, mostly): its only estimate is its child's. */
            if (s.smin < 0 && s.smax >= 0 &&
                (rc = add_xform(e, &c, QV_ENC_ZIGZAG, -1, 16, 1, v, n, pt, depth)))
                return rc;
            unsigned vb = fb < db + 1 ? fb : db + 1; /* run values may delta-encode */
            if (s.runs * 2 <= n)
                add(&c, e, QV_ENC_RLE,
                    (double)s.runs * (qv__bits((uint64_t)s.max_run) + 1 + vb) / 8 + 64);
            double d = qv__istats_distinct(&s, n);
            /* Not when the sample holds every value of [umin, umax] (the
             * values are then their own codes, less umin, which frame of
             * reference takes off) below the root, where the values are
             * mostly a dictionary's codes, already in the order that
             * pays, or anywhere for two values, which any order codes
             * alike: another dictionary adds its entries and a level and
             * nothing else. sm-randhie's 0/1 columns were
             * dict(dict(dict(zstd))), three levels of the cascade for a
             * node zstd alone codes. At the root, a dictionary of more
             * values may still pay by its frequency order (dict.c). */
            const int dense = (uint64_t)s.sample_distinct - 1 == s.umax - s.umin &&
                              (depth > 0 || s.umax - s.umin == 1);
            if (d * 2 <= n && !dense) {
                unsigned cb = qv__bits((uint64_t)d - 1);
                double codes = fmin(packed(n, cb),
                                    (double)s.runs * (cb + qv__bits((uint64_t)s.max_run) + 1) / 8);
                add(&c, e, QV_ENC_DICT, codes + d * (fb + 7) / 8 + 64);
            }
            double frac = s.sample_n ? (double)s.top_count / (double)s.sample_n : 0;
            if (frac >= 0.9) {
                double exc = fmax(1.0, (double)n * (1.0 - frac));
                add(&c, e, QV_ENC_SPARSE,
                    exc * (qv__bits((uint64_t)(2 * n / exc)) + fb) / 8 + 64);
            }
            if ((rc = add_patched(e, &c, v, n, pt, &s, fb, &pc, &src))) return rc;
            add_bucket(e, &c, v, n, pt, &s, fb, &bc, &src);
            add_radix(e, &c, &s, n, fb, ref);
        }
        if ((rc = add_entropy(e, &c, v, n, pt, &s, &ec))) return rc;
        if (ec.est_bytes >= 0 && qv__entropy_forced()) {
            /* A test forced the entropy stage's layout: no comparison. */
            rc = build_int(e, QV_ENC_ZSTD, &src, &ec, out);
            if (rc != QV__DECLINED) return rc ? rc : finish_root(e, depth, QV_ENC_AUTO, out);
        }
    }
    chains_give_way(e, &c);
    struct int_ctx ic = {v, n, pt};
    for (;;) {
        int enc = next_best(&c);
        if (enc < 0) enc = QV_ENC_PLAIN;
        rc = build_int(e, enc, &src, &ec, out);
        if (rc == QV__DECLINED && enc != QV_ENC_PLAIN) continue;
        if (rc) return rc;
        if ((rc = second_opinion(e, &c, &src, &ec, out))) return rc;
        rc = keep_smaller(e, out, (uint64_t)plain + 64, int_plain, &ic);
        return rc ? rc : finish_root(e, depth, QV_ENC_AUTO, out);
    }
}

/* ---- Floats ---- */

struct float_ctx {
    const void *v;
    int64_t n;
    int pt;
};
static int float_plain(struct qv__enc *e, void *ctx, struct qv__enode **out) {
    struct float_ctx *c = ctx;
    return qv__plain_encode_raw(e, c->v, c->n, c->pt, qv__pt_width(c->pt), 0, out);
}

int qv__cascade_float(struct qv__enc *e, const void *v, int64_t n, int pt, int depth, int force,
                      struct qv__enode **out) {
    const unsigned w = qv__pt_width(pt);
    if (is_frames(force)) {
        int rc = qv__cascade_float(e, v, n, pt, depth, QV_ENC_AUTO, out);
        return rc ? rc : finish_root(e, depth, force, out);
    }
    uint64_t *bits = qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err);
    if (!bits) return ENOMEM;
    qv__widen(v, w, n, bits);
    struct qv__istats s;
    qv__istats_compute(bits, n, w * 8, &s);
    const int nested = depth < e->max_depth;
    /* The sample serves the nested candidates and forced builds only. */
    int rc = force != QV_ENC_AUTO || (n > 0 && nested)
                 ? qv__istats_sample(e, bits, n, QV__SAMPLE_ALL, &s)
                 : 0;
    struct qv__alp_choice alp = {0};
    struct qv__alprd_choice rd = {0};
    struct cands c = {.n = 0};
    const double plain = (double)n * w + 16;
    /* Word encoders see the bit patterns: exact for NaN and -0.0. */
    struct qv__src src = {.pt = pt, .width = w, .n = n, .depth = depth, .u64 = bits, .s = &s,
                          .raw = v};
    if (rc) goto out;
    if (force == QV_ENC_AUTO) {
        add(&c, e, QV_ENC_PLAIN, plain);
        if (n > 0 && s.umin == s.umax) add(&c, e, QV_ENC_CONSTANT, w + 16);
        if (n > 0 && nested) {
            if (qv__allowed(e, QV_ENC_ALP)) {
                qv__alp_choose(v, n, pt, &alp);
                src.alp = &alp;
                struct cand *k = add(&c, e, QV_ENC_ALP, alp.est_bytes);
                double cest = -1, cscore = 0;
                if (k && depth + 1 < e->max_depth &&
                    (rc = qv__alp_chain(e, v, n, pt, depth, &alp, &cest, &cscore)))
                    goto out;
                if (k && cest >= 0 && cscore < k->score) {
                    k->own_est = k->est;
                    k->est = cest;
                    k->score = cscore;
                    k->counted = k->chain = 1;
                }
            }
            /* ALP-RD keeps at least bits - 16 bits of each value: when ALP
             * already scores below that, it cannot win, and its search
             * (16 passes over the sample) is skipped. ALP never declines,
             * so the choice is the same as with it searched. */
            const double rd_floor = ((double)w * 8 - 16) / 8 * (double)n + 64;
            if (qv__allowed(e, QV_ENC_ALP_RD) &&
                !(src.alp && alp.est_bytes * qv__cost_factor(e, QV_ENC_ALP) <
                                 rd_floor * qv__cost_factor(e, QV_ENC_ALP_RD))) {
                qv__alprd_choose(v, n, pt, &rd);
                src.alprd = &rd;
                add(&c, e, QV_ENC_ALP_RD, rd.est_bytes);
            }
            if (s.runs * 2 <= n)
                add(&c, e, QV_ENC_RLE, (double)s.runs * (qv__bits((uint64_t)s.max_run) + 1 + w * 4) / 8 + 64);
            double d = qv__istats_distinct(&s, n);
            if (d * 2 <= n) {
                add(&c, e, QV_ENC_DICT, packed(n, qv__bits((uint64_t)d - 1)) + d * w + 64);
            }
            double frac = s.sample_n ? (double)s.top_count / (double)s.sample_n : 0;
            if (frac >= 0.9) {
                double exc = fmax(1.0, (double)n * (1.0 - frac));
                add(&c, e, QV_ENC_SPARSE, exc * (qv__bits((uint64_t)(2 * n / exc)) + w * 8) / 8 + 64);
            }
        }
    } else {
        c.v[0].enc = force;
        c.n = 1;
    }
    chains_give_way(e, &c);
    struct float_ctx fc = {v, n, pt};
    for (;;) {
        int enc = next_best(&c);
        if (enc < 0) enc = QV_ENC_PLAIN;
        rc = build(e, enc, &src, force != QV_ENC_AUTO, out);
        if (rc == QV__DECLINED && enc != QV_ENC_PLAIN) continue;
        if (rc) goto out;
        if (force == QV_ENC_AUTO) rc = keep_smaller(e, out, (uint64_t)plain + 64, float_plain, &fc);
        if (!rc) rc = finish_root(e, depth, force, out);
        goto out;
    }
out:
    qv__mem_free(&e->mem, bits);
    return rc;
}

/* ---- Booleans ---- */

struct bool_ctx {
    const uint8_t *bits;
    int64_t n;
    int borrow;
};
static int bool_plain(struct qv__enc *e, void *ctx, struct qv__enode **out) {
    struct bool_ctx *c = ctx;
    return qv__plain_encode_bool(e, c->bits, c->n, c->borrow, out);
}

int qv__cascade_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int depth, int force,
                     struct qv__enode **out) {
    struct bool_ctx bc = {bits, n, depth == 0};
    if (is_frames(force)) {
        int rc = qv__cascade_bool(e, bits, n, depth, QV_ENC_AUTO, out);
        return rc ? rc : finish_root(e, depth, force, out);
    }
    int64_t ones = qv_bits_count(bits, 0, n);
    struct qv__src src = {.pt = QV__PT_BOOL, .n = n, .depth = depth, .bits = bits, .ones = ones};
    struct cands c = {.n = 0};
    const double plain = (double)(n + 7) / 8 + 16;
    if (force == QV_ENC_AUTO) {
        add(&c, e, QV_ENC_PLAIN, plain);
        if (n > 0 && (ones == 0 || ones == n)) add(&c, e, QV_ENC_CONSTANT, 16);
        if (n > 0 && depth < e->max_depth) {
            int64_t minority = ones * 2 < n ? ones : n - ones;
            if (minority * 16 < n)
                add(&c, e, QV_ENC_SPARSE,
                    (double)minority * (qv__bits((uint64_t)(2 * n / (minority + 1))) + 1) / 8 + 48);
            /* Runs: estimated from the bytes that are not all-equal. */
            int64_t mixed = 0;
            for (int64_t i = 0; i + 8 <= n; i += 8) mixed += bits[i >> 3] != 0 && bits[i >> 3] != 0xff;
            int64_t runs_est = mixed * 2 + 1;
            if (runs_est * 16 < n)
                add(&c, e, QV_ENC_RLE,
                    (double)runs_est * (qv__bits((uint64_t)(2 * n / runs_est)) + 1) / 8 + 48);
        }
    } else {
        c.v[0].enc = force;
        c.n = 1;
    }
    for (;;) {
        int enc = next_best(&c);
        if (enc < 0) enc = QV_ENC_PLAIN;
        int rc = build(e, enc, &src, force != QV_ENC_AUTO, out);
        if (rc) return rc;
        if (force == QV_ENC_AUTO && (rc = keep_smaller(e, out, (uint64_t)plain + 64, bool_plain, &bc)))
            return rc;
        return finish_root(e, depth, force, out);
    }
}

/* ---- Binary ---- */

struct bin_ctx {
    const uint64_t *off;
    const uint8_t *data;
    int64_t n;
    int depth;
};
static int bin_plain(struct qv__enc *e, void *ctx, struct qv__enode **out) {
    struct bin_ctx *c = ctx;
    return qv__plain_encode_bin(e, c->off, c->data, c->n, c->depth, c->depth == 0, out);
}

#define BIN_SAMPLE_VECTORS 8
_Static_assert(BIN_SAMPLE_VECTORS <= QV__INC_MAX_VECTORS, "incidence keeps a sampled vector's index + 1");

/* Distinct strings among a sample of whole vectors of n strings, which
 * stand for `total` strings (n itself, or more when the n are already a
 * sample): qv__distinct_sample's counts, over the first half too, and
 * incidence over the vectors when the sample holds fewer than `total`.
 * With sym_rows, also the sampled rows holding one of the 255 most
 * frequent sampled strings of 1 to 16 bytes (fsst_bound), and in
 * code_cnt (256 counts) how often each distinct sampled string occurred,
 * in no order, when the sample holds at most 256 (a dictionary's codes of
 * at most 8 bits: the histogram the entropy stage codes them by); *skew =
 * 0 when it holds more. */
#define SHORT_STR (UINT32_C(1) << 31) /* cnt: the slot's string has 1 to 16 bytes */
static int bin_sample_distinct(struct qv__enc *e, const uint64_t *off, const uint8_t *data,
                               int64_t n, int64_t total, struct qv__distinct_sample *out,
                               int64_t *sym_rows, uint64_t *code_cnt, int *skew) {
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    const int64_t take = nvec < BIN_SAMPLE_VECTORS ? nvec : BIN_SAMPLE_VECTORS;
    int64_t sn = 0;
    for (int64_t k = 0; k < take; k++) {
        int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
        sn += vs + QV__VEC < n ? QV__VEC : n - vs;
    }
    const int incidence = sn < total;
    *out = (struct qv__distinct_sample){.sn = sn, .m = incidence ? take : 0};
    if (sym_rows) *sym_rows = 0;
    if (skew) *skew = 0;
    if (!sn) return 0;
    const int64_t tsize = (int64_t)qv_next_pow2_64((uint64_t)sn * 2);
    struct qv__mark mk = qv__stack_mark(&e->stack);
    uint64_t *keys = qv__stack_push(&e->stack, (size_t)tsize * 8, e->err);
    /* Per slot: the incidence of its string over the sampled vectors
     * (qv__inc_note); not kept when every vector is sampled (the count is
     * exact). */
    uint16_t *inc = keys ? qv__stack_push(&e->stack, (size_t)tsize * 2, e->err) : NULL;
    /* Per slot, the rows of its string, and SHORT_STR when that is 1 to
     * 16 bytes long. */
    uint32_t *cnt = inc && sym_rows ? qv__stack_push(&e->stack, (size_t)tsize * 4, e->err) : NULL;
    if (!inc || (sym_rows && !cnt)) {
        qv__stack_release(&e->stack, mk);
        return ENOMEM;
    }
    memset(keys, 0, (size_t)tsize * 8);
    if (cnt) memset(cnt, 0, (size_t)tsize * 4);
    if (incidence)
        memset(inc, 0, (size_t)tsize * 2);
    else
        inc = NULL;
    int64_t seen = 0, distinct = 0;
    for (int64_t k = 0; k < take; k++) {
        int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
        int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        if (k == take / 2) {
            out->hn = seen;
            out->hd = distinct;
        }
        seen += ve - vs;
        for (int64_t i = vs; i < ve; i++) {
            /* Hash equality stands for string equality: an estimate only. */
            uint64_t h = qv_hash64(data + off[i], (size_t)(off[i + 1] - off[i]), 0) | 1;
            uint64_t j = h & (uint64_t)(tsize - 1);
            while (keys[j] && keys[j] != h) j = (j + 1) & (uint64_t)(tsize - 1);
            if (!keys[j]) {
                keys[j] = h;
                distinct++;
            }
            if (inc) qv__inc_note(inc, j, k);
            if (cnt) cnt[j] = (cnt[j] + 1) | (off[i + 1] - off[i] - 1 < 16 ? SHORT_STR : 0);
        }
    }
    out->d = distinct;
    if (inc) qv__inc_count(inc, tsize, &out->q1, &out->q2);
    int rc = 0;
    if (cnt) {
        /* The 255 largest counts: a histogram of the counts (at most sn),
         * walked down from the largest. */
        uint32_t *hist = qv__stack_push(&e->stack, (size_t)(sn + 1) * 4, e->err);
        if (!hist) {
            rc = ENOMEM;
        } else {
            memset(hist, 0, (size_t)(sn + 1) * 4);
            const int codes = code_cnt && distinct <= 256;
            int64_t d = 0;
            for (int64_t j = 0; j < tsize; j++) {
                const uint32_t c = cnt[j] & ~SHORT_STR;
                if (cnt[j] & SHORT_STR) hist[c]++;
                if (c && codes) code_cnt[d++] = c;
            }
            if (codes) {
                memset(code_cnt + d, 0, (size_t)(256 - d) * sizeof *code_cnt);
                *skew = 1;
            }
            int64_t left = 255, rows = 0;
            for (int64_t c = sn; c > 0 && left > 0; c--) {
                int64_t k = hist[c] < left ? hist[c] : left;
                rows += k * c;
                left -= k;
            }
            *sym_rows = rows;
        }
    }
    qv__stack_release(&e->stack, mk);
    return rc;
}

static int bin_all_equal(const uint64_t *off, const uint8_t *data, int64_t n) {
    uint64_t l0 = off[1] - off[0];
    for (int64_t i = 1; i < n; i++)
        if (off[i + 1] - off[i] != l0 || memcmp(data + off[i], data + off[0], l0)) return 0;
    return 1;
}

#define ZSTD_SAMPLE_MIN (64 << 10)
#define ZSTD_SAMPLE_PART (16 << 10)
#define ZSTD_MARGIN 1.2 /* zstd must be 20% smaller (beyond its decode cost) */

/* Below this many bytes a string chunk is not offered to zstd: its frame
 * header and table would eat what it saves. */
#define ZSTD_SMALL_MIN 256

/* zstd ratio on four 16 KiB slices spread over the data; a chunk smaller
 * than the four slices is compressed whole (the exact figure, and cheap:
 * at most 64 KiB). Small string chunks are where FSST's symbol table does
 * not pay and a dictionary does not apply (120 distinct dates of 10 bytes:
 * plain 1,256 bytes, Parquet-zstd 328). */
static int zstd_sample_ratio(struct qv__enc *e, const uint8_t *data, uint64_t total,
                             double *ratio) {
    struct qv__mark mk = qv__stack_mark(&e->stack);
    const uint64_t in = total < ZSTD_SAMPLE_MIN ? total : 4 * ZSTD_SAMPLE_PART;
    size_t bound = qv__zstd_bound((size_t)in);
    uint8_t *buf = qv__stack_push(&e->stack, (size_t)in + bound, e->err);
    if (!buf) return ENOMEM;
    if (total < ZSTD_SAMPLE_MIN) {
        memcpy(buf, data, (size_t)total);
    } else {
        for (int k = 0; k < 4; k++) {
            uint64_t at = (total - ZSTD_SAMPLE_PART) / 3 * (uint64_t)k;
            memcpy(buf + k * ZSTD_SAMPLE_PART, data + at, ZSTD_SAMPLE_PART);
        }
    }
    size_t c;
    int rc = qv__zstd_compress(e, buf + in, bound, buf, (size_t)in, e->zstd_level, &c);
    *ratio = (double)c / (double)in;
    qv__stack_release(&e->stack, mk);
    return rc;
}

/* ---- Dictionary first ----
 * A dictionary of at most 256 entries has codes of at most 8 bits, and FSST
 * spends at least one 8-bit code per string, plus its offsets, plus a
 * symbol table that must hold whole strings to get down to one code each
 * (the dictionary holds each string once). So when the sample estimates
 * that few distinct strings, the dictionary is not larger than FSST can
 * be, and FSST's training (five rounds over up to 32 KiB of strings, on
 * every chunk) is skipped. The estimate comes from a sample; when the
 * dictionary actually built has more entries than that argument covers,
 * FSST is trained after all and the smaller node is kept. */
#define DICT_FIRST_MAX 256

static int dict_first(double distinct) { return distinct <= DICT_FIRST_MAX; }

/* ---- FSST's floor with many distinct strings ----
 * Past 256 distinct strings the argument above does not hold, but a
 * weaker one does: FSST writes every non-empty string as at least one
 * code byte, and as one byte only when the whole string is one of its at
 * most 255 symbols (1 to 16 bytes); any other string takes at least two
 * (two codes, or the escape and its byte), and at least one per 16 bytes.
 * So FSST's codes need at least sum(max(2, ceil(len / 16))) bytes less one
 * per row holding one of 255 strings, at best the 255 most frequent
 * short ones, whose rows the sample counts (its own most frequent ones
 * cover at least as many of its rows as any 255 strings do). When the
 * dictionary's estimate is within FSST_BOUND_SLACK of that floor
 * (scored), FSST's training is put off as with dict_first (flights'
 * tailnum: about 3,800 planes' registrations of 5-6 bytes, where the
 * dictionary, 12-bit codes, was built every time and FSST trained for
 * nothing); after the build, a node that scores below the floor stands
 * and anything else gets FSST's chance as before (dict_first_check). The
 * slack covers the dictionary's estimate, which counts its entries at
 * their raw size (the entries are then compressed themselves). Not in
 * compact mode, where zstd_dict has no such floor. */
#define FSST_BOUND_SLACK 1.1

/* FSST's floor (bytes, scored as FSST) for n strings whose lengths give
 * `min_codes` (the sum above) and whose sample of sn rows has sym_rows
 * rows among its 255 most frequent short strings. */
static double fsst_bound(const struct qv__enc *e, double min_codes, int64_t n, int64_t sn, int64_t sym_rows) {
    double covered = sn > 0 ? (double)sym_rows * (double)n / (double)sn : 0;
    double b = min_codes - covered;
    return (b > 0 ? b : 0) * qv__cost_factor(e, QV_ENC_FSST);
}

/* FSST's table for strings [0, n) and its sampled ratio (*ratio).
 *
 * Lessons (lesson.h). At the root of a chunk whose column has a lesson,
 * the lesson's table is tried first and kept when it compresses this
 * chunk's sample within LESSON_SLACK of what it did on the sample of the
 * chunk it was trained on; the samples are then LESSON_MEASURE bytes (at
 * 16 KiB, lineitem's l_comment chunks measured 0.293 to 0.309 with one
 * table: the noise was wider than any slack worth having). A table
 * trained at a root that teaches is trained on LESSON_SCALE times the
 * usual sample (large chunks only): it serves every row group after the
 * first, so it is worth more of the training time that the others save. */
#define LESSON_SLACK 1.03
#define LESSON_MEASURE (64 << 10)
#define LESSON_SCALE 8
/* A table that shrinks its own chunk's sample to no less than this is not
 * taught: measured against its own poor ratio, it would be kept for any
 * later chunk it does as badly on, however well a table of that chunk's
 * own would do (random bytes in row group 0 sent every later row group of
 * English-like text to zstd, 3.3% larger, in a hostile test). */
#define LESSON_TEACH_MAX 0.8
static int fsst_table(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                      struct qv__fsst_table **out, double *ratio) {
    const int root = data == e->root_data && n == e->root_n;
    const int teach = root && e->lesson_learn && e->lesson_learn->nsym == 0;
    const uint64_t measure = root && (e->lesson_use || teach) ? LESSON_MEASURE : QV__FSST_MEASURE;
    if (root && e->lesson_use) {
        struct qv__fsst_table *t;
        int rc = qv__fsst_from_lesson(e, e->lesson_use, &t);
        if (rc) return rc;
        double r = qv__fsst_sample_ratio(t, off, data, n, measure);
        if (r <= e->lesson_use->ratio * LESSON_SLACK) {
            *out = t;
            *ratio = r;
            return 0;
        }
        qv__mem_free(&e->mem, t);
    }
    int rc = qv__fsst_train(e, off, data, n, teach ? LESSON_SCALE : 1, out);
    if (rc) return rc;
    *ratio = qv__fsst_sample_ratio(*out, off, data, n, measure);
    if (teach && *ratio < LESSON_TEACH_MAX) qv__fsst_to_lesson(*out, *ratio, e->lesson_learn);
    return 0;
}

/* After the build loop, when FSST was not trained because of dict_first or
 * the floor: a dictionary of at most DICT_FIRST_MAX entries stands, and so
 * does a node that scores below FSST's floor (fsst_floor, 0 when not
 * known). Anything else (the sample saw fewer distinct strings than the
 * chunk has, or another encoding won) gets FSST's chance as it would have
 * had in the loop: FSST is trained, its size estimated as there, and built
 * only when that estimate beats the chosen node; the smaller of the two is
 * kept. */
static int dict_first_check(struct qv__enc *e, struct qv__src *src, double offsets_est,
                            double fsst_floor, struct qv__enode **out) {
    if ((*out)->enc == QV_ENC_DICT && (*out)->child[1]->count <= DICT_FIRST_MAX) return 0;
    if ((*out)->enc == QV_ENC_CONSTANT) return 0;
    if ((double)(*out)->size * qv__cost_factor(e, (*out)->enc) <= fsst_floor) return 0;
    struct qv__fsst_table *t;
    double ratio;
    int rc = fsst_table(e, src->off, src->data, src->n, &t, &ratio);
    if (rc) return rc;
    const uint64_t total = src->off[src->n];
    double est = (double)total * ratio + offsets_est + 4 * qv__fsst_nsym(t) + 64;
    if (est * qv__cost_factor(e, QV_ENC_FSST) < (double)(*out)->size * qv__cost_factor(e, (*out)->enc)) {
        struct qv__enode *f;
        src->fsst = t;
        rc = build(e, QV_ENC_FSST, src, 0, &f);
        src->fsst = NULL;
        if (!rc) {
            if (f->size < (*out)->size) {
                qv__enode_drop(e, *out);
                *out = f;
            } else {
                qv__enode_drop(e, f);
            }
        }
    }
    qv__mem_free(&e->mem, t);
    return rc == QV__DECLINED ? 0 : rc;
}

/* ---- Small chunks: zstd instead of FSST ----
 * A root chunk of fewer than ZSTD_SAMPLE_MIN string bytes (a small table's
 * column, or a row group of a few thousand rows) is compressed whole for
 * zstd's estimate, so that estimate is exact. On such chunks zstd's frame
 * was smaller than FSST's codes, offsets and table in every case measured
 * (notes of issue 15: the strings of the comparison's real tables, of
 * lineitem, nested and flights cut into 300 to 8,000 rows, and nine
 * synthetic shapes: zstd/FSST 0.44 to 0.99), while FSST's training (five
 * rounds over the sample) cost more than the rest of the column's write
 * (vega airports: 42% of the table's write). So FSST is not trained there,
 * and, unless the dictionary comes first (dict_first, FSST's floor), zstd
 * is built and competes at its exact size without ZSTD_MARGIN: the margin
 * trades size for decode speed, and decoding at most 64 KiB costs ~0.1 ms
 * (zstd ~600 MB/s against FSST's ~1 GB/s on these chunks). Dictionaries,
 * plain and constant still compete as everywhere. Only where zstd may be
 * used (else FSST is trained as before) and not when an encoding is
 * forced.
 * The exception: text of a small vocabulary, which FSST holds as whole
 * words of one code each (test_enc_cascade's 20-word text, 1,500 rows:
 * FSST 9,968 bytes, zstd 11,232). That text is highly compressible, so
 * where zstd's frame is under SMALL_FSST of the strings' bytes FSST is
 * trained too and the smaller wins. Measured real chunks sat at 0.35 to
 * 0.81 (nested's names 0.35, where zstd was 0.55 of FSST); a date column
 * at 0.30 trains for nothing (zstd 0.75 of FSST). */
#define SMALL_FSST 0.3
static int small_text(const struct qv__enc *e, int depth, uint64_t total) {
    return depth == 0 && total >= ZSTD_SMALL_MIN && total < ZSTD_SAMPLE_MIN &&
           qv__allowed(e, QV_ENC_ZSTD);
}

#define ZDICT_SAMPLE_MIN (64 << 10)

/* zstd_dict's candidate: trains the dictionary (kept in *zd for the build)
 * and estimates its frames on text outside the training sample. Only for
 * chunks with enough bytes that a dictionary pays for itself. */
static int zdict_candidate(struct qv__enc *e, struct cands *c, const uint64_t *off,
                           const uint8_t *data, int64_t n, double lengths_est,
                           struct qv__zdict **zd) {
    const uint64_t total = off[n];
    if (total < ZDICT_SAMPLE_MIN || !qv__allowed(e, QV_ENC_ZSTD_DICT)) return 0;
    int rc = qv__zdict_train(e, off, data, n, zd);
    if (rc || !qv__zdict_size(*zd)) return rc;
    double ratio;
    if ((rc = qv__zdict_sample_ratio(e, *zd, off, data, n, &ratio))) return rc;
    /* Frame table: 8 bytes per frame of about 8 KiB. */
    add(c, e, QV_ENC_ZSTD_DICT,
        (double)total * ratio + lengths_est + (double)qv__zdict_size(*zd) +
            (double)total / (8 << 10) * 8 + 64);
    return 0;
}

int qv__cascade_bin(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                    int depth, int force, struct qv__enode **out) {
    if (is_frames(force)) {
        int rc = qv__cascade_bin(e, off, data, n, depth, QV_ENC_AUTO, out);
        return rc ? rc : finish_root(e, depth, force, out);
    }
    const uint64_t total = off[n];
    uint64_t minlen = UINT64_MAX, maxlen = 0, fsst_floor = 0, fsst_codes = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t l = off[i + 1] - off[i];
        minlen = l < minlen ? l : minlen;
        maxlen = l > maxlen ? l : maxlen;
        fsst_floor += (l + 15) >> 4; /* FSST emits at least a code per 16 bytes */
        fsst_codes += l == 0 ? 0 : l > 32 ? (l + 15) >> 4 : 2; /* fsst_bound */
    }
    const double offsets_est = n ? packed(n + 1, qv__bits(maxlen - minlen)) + 64 : 16;
    const double plain = (double)total + offsets_est + 16;
    struct cands c = {.n = 0};
    struct qv__fsst_table *fsst = NULL;
    struct qv__zdict *zd = NULL;
    int rc = 0, equal = n > 0 && bin_all_equal(off, data, n), fsst_deferred = 0;
    const int small = force == QV_ENC_AUTO && n > 0 && !equal && small_text(e, depth, total);
    struct qv__enode *zleaf = NULL;
    double dict_distinct = INFINITY, fsst_scored_floor = 0, dict_codes_est = 0, dict_d = 0;
    struct bin_ctx bc = {off, data, n, depth};
    struct qv__src src = {.pt = QV__PT_BIN, .n = n, .depth = depth, .off = off, .data = data};
    if (force == QV_ENC_AUTO) {
        add(&c, e, QV_ENC_PLAIN, plain);
        if (equal) add(&c, e, QV_ENC_CONSTANT, (double)maxlen + 16);
        if (n > 0 && depth < e->max_depth && !equal) {
            struct qv__distinct_sample ds;
            int64_t sym_rows;
            uint64_t code_cnt[256];
            int skew;
            if ((rc = bin_sample_distinct(e, off, data, n, n, &ds, &sym_rows, code_cnt, &skew)))
                return rc;
            fsst_scored_floor = fsst_bound(e, (double)fsst_codes, n, ds.sn, sym_rows);
            double d = qv__distinct_estimate(n, &ds);
            /* The estimate extrapolates the sample's growth and so runs
             * high on skewed values (rare ones keep appearing); the
             * sample's own count is the better guide here, and an
             * underestimate costs only time (dict_first_check). */
            dict_distinct = fmin(d, (double)ds.d);
            if (d * 2 <= n) {
                double avg = (double)total / n;
                dict_codes_est = packed(n, qv__bits((uint64_t)d - 1));
                /* Skewed codes of at most 8 bits go to the entropy stage
                 * (the codes' own cascade, where it may run: it goes by
                 * zstd's id and codes with ans): without it, zstd over the
                 * strings won at 1.9 times the dictionary's size
                 * (test_enc_cascade's skewed codes, 230 distinct). */
                if (skew && qv__allowed(e, QV_ENC_ZSTD) && qv__allowed(e, QV_ENC_ANS))
                    dict_codes_est = fmin(dict_codes_est, qv__entropy_ans_bytes(code_cnt, ds.sn, n));
                dict_d = d;
                add(&c, e, QV_ENC_DICT, dict_codes_est + d * (avg + 2) + 64);
            }
        }
        /* FSST emits at least one code per 16 bytes of each string; skip
         * training it when a dictionary is estimated below that, or when
         * the sample says the dictionary is small (dict_first). */
        double dict_est = c.n && c.v[c.n - 1].enc == QV_ENC_DICT ? c.v[c.n - 1].est : INFINITY;
        if (dict_est > (double)fsst_floor && dict_est < INFINITY &&
            (dict_first(dict_distinct) ||
             (!e->compact &&
              dict_est * qv__cost_factor(e, QV_ENC_DICT) <= FSST_BOUND_SLACK * fsst_scored_floor)))
            fsst_deferred = 1;
        if (e->compact) fsst_scored_floor = 0;
        /* FSST would be trained here, were the chunk not small. */
        const int fsst_wanted = dict_est > (double)fsst_floor && !fsst_deferred;
        if (small && fsst_wanted) {
            /* Built rather than estimated: its size is then exact, and
             * the node is kept if it wins (a small chunk's estimate
             * compressed the whole chunk anyway). Where the dictionary
             * comes first or beats FSST's floor, zstd is estimated and
             * margined as in larger chunks: building it (its offsets'
             * cascade, their entropy trials) cost a column of a few
             * distinct strings a quarter of its write, for the same
             * bytes (seattle-weather's weather, 5 values: 0.22 -> 0.27
             * ms). */
            rc = build(e, QV_ENC_ZSTD, &src, 0, &zleaf);
            if (rc && rc != QV__DECLINED) return rc;
            rc = 0;
            if (zleaf) add(&c, e, QV_ENC_ZSTD, (double)zleaf->size);
        }
        if (n > 0 && !equal && total >= 2048 && fsst_wanted &&
            (!small || (zleaf && (double)zleaf->size < SMALL_FSST * total)) &&
            qv__allowed(e, QV_ENC_FSST)) {
            double ratio;
            if ((rc = fsst_table(e, off, data, n, &fsst, &ratio))) goto done;
            src.fsst = fsst;
            add(&c, e, QV_ENC_FSST, (double)total * ratio + offsets_est + 4 * qv__fsst_nsym(fsst) + 64);
            /* A dictionary's values are strings the cascade encodes in
             * turn, at least as well as FSST does the chunk (sorted, they
             * often do better): with them counted whole, FSST won on
             * nested's names, "user00000" to "user19999" (20,000 distinct
             * in 131,072), at 460 KiB against a dictionary of 294 KiB. */
            for (int i = 0; i < c.n; i++)
                if (c.v[i].enc == QV_ENC_DICT && ratio < 1) {
                    c.v[i].est = dict_codes_est + dict_d * ((double)total / n * ratio + 2) + 64;
                    c.v[i].score = c.v[i].est * qv__cost_factor(e, QV_ENC_DICT);
                }
        }
        /* zstd_dict only in compact mode: it is about a fifth smaller than
         * FSST on free text (l_comment: 3.34x against 2.58x) but decodes
         * about 3.5 times slower and a 100-row take costs about 10 times
         * more, which the default mode does not trade for size. Not where
         * the dictionary-first rule holds either (few distinct strings). */
        if (n > 0 && !equal && e->compact && fsst_wanted) {
            if ((rc = zdict_candidate(e, &c, off, data, n, offsets_est, &zd))) goto done;
            src.zdict = zd;
        }
        if (!zleaf && n > 0 && !equal && total >= ZSTD_SMALL_MIN && qv__allowed(e, QV_ENC_ZSTD)) {
            /* General-purpose compression only where it wins by a wide
             * margin: text with long repeats beats FSST's 8-byte symbols. */
            double ratio;
            if ((rc = zstd_sample_ratio(e, data, total, &ratio))) goto done;
            add(&c, e, QV_ENC_ZSTD, ((double)total * ratio + offsets_est + 64) * ZSTD_MARGIN);
        }
    } else {
        c.v[0].enc = force;
        c.n = 1;
    }
    for (;;) {
        int enc = next_best(&c);
        if (enc < 0) enc = QV_ENC_PLAIN;
        if (enc == QV_ENC_ZSTD && zleaf) {
            *out = zleaf;
            zleaf = NULL;
            rc = 0;
            break;
        }
        rc = build(e, enc, &src, force != QV_ENC_AUTO, out);
        if (rc == QV__DECLINED && enc != QV_ENC_PLAIN) continue;
        break;
    }
    if (!rc && force == QV_ENC_AUTO) rc = second_opinion(e, &c, &src, NULL, out);
done:
    if (zleaf) qv__enode_drop(e, zleaf);
    if (fsst) qv__mem_free(&e->mem, fsst);
    qv__zdict_free(e, zd);
    if (rc) return rc;
    if (fsst_deferred && !small && n > 0 && total >= 2048 && qv__allowed(e, QV_ENC_FSST) &&
        (rc = dict_first_check(e, &src, offsets_est, fsst_scored_floor, out)))
        return rc;
    if (force == QV_ENC_AUTO && (rc = keep_smaller(e, out, (uint64_t)plain + 64, bin_plain, &bc)))
        return rc;
    return finish_root(e, depth, force, out);
}

/* ---- Fixed-size binary ---- */

struct fixed_ctx {
    const uint8_t *v;
    int64_t n;
    uint32_t width;
    int depth;
};
static int fixed_plain(struct qv__enc *e, void *ctx, struct qv__enode **out) {
    struct fixed_ctx *c = ctx;
    return qv__plain_encode_raw(e, c->v, c->n, QV__PT_FIXED, c->width, c->depth == 0, out);
}

int qv__cascade_fixed(struct qv__enc *e, const uint8_t *v, int64_t n, uint32_t width, int depth,
                      int force, struct qv__enode **out) {
    /* Width 0 (Arrow's fixed_size_binary(0)): the values hold no bytes, so
     * plain (an empty buffer) is as small as anything can be. Readers accept
     * width 0 only under plain and constant, which keeps every other
     * decoder away from zero-sized values. */
    if (width == 0) {
        struct fixed_ctx zc = {v, n, 0, depth};
        if (force == QV_ENC_CONSTANT) return qv__constant_encode(e, QV__PT_FIXED, 0, n, v, 0, out);
        return fixed_plain(e, &zc, out);
    }
    if (is_frames(force)) {
        int rc = qv__cascade_fixed(e, v, n, width, depth, QV_ENC_AUTO, out);
        return rc ? rc : finish_root(e, depth, force, out);
    }
    int equal = 1;
    for (int64_t i = 1; i < n && equal; i++) equal = memcmp(v + (size_t)i * width, v, width) == 0;
    const double plain = (double)n * width + 16;
    struct cands c = {.n = 0};
    struct fixed_ctx fc = {v, n, width, depth};
    struct qv__src src = {.pt = QV__PT_FIXED, .width = width, .n = n, .depth = depth, .raw = v};
    int rc = 0;
    if (force == QV_ENC_AUTO) {
        add(&c, e, QV_ENC_PLAIN, plain);
        if (n > 0 && equal) add(&c, e, QV_ENC_CONSTANT, width + 16);
        if (n > 0 && !equal && depth < e->max_depth) {
            /* Estimate through the binary sampler with fixed offsets. */
            int64_t sn = n < 8 * QV__VEC ? n : 8 * QV__VEC;
            struct qv__mark mk = qv__stack_mark(&e->stack);
            uint64_t *off = qv__stack_push(&e->stack, (size_t)(sn + 1) * 8, e->err);
            if (!off) return ENOMEM;
            int64_t step = n / sn;
            const uint8_t *base = v;
            for (int64_t i = 0; i <= sn; i++) off[i] = (uint64_t)i * width;
            /* Contiguous strided sample: copy the sampled values together. */
            uint8_t *tmp = qv__stack_push(&e->stack, (size_t)sn * width, e->err);
            if (!tmp) {
                qv__stack_release(&e->stack, mk);
                return ENOMEM;
            }
            for (int64_t i = 0; i < sn; i++) memcpy(tmp + (size_t)i * width, base + (size_t)(i * step) * width, width);
            struct qv__distinct_sample ds;
            rc = bin_sample_distinct(e, off, tmp, sn, n, &ds, NULL, NULL, NULL);
            qv__stack_release(&e->stack, mk);
            if (rc) return rc;
            /* The strided sample stands for the whole column. */
            double d = qv__distinct_estimate(n, &ds);
            if (d * 2 <= n) {
                add(&c, e, QV_ENC_DICT, packed(n, qv__bits((uint64_t)d - 1)) + d * width + 64);
            }
        }
    } else {
        c.v[0].enc = force;
        c.n = 1;
    }
    for (;;) {
        int enc = next_best(&c);
        if (enc < 0) enc = QV_ENC_PLAIN;
        rc = build(e, enc, &src, force != QV_ENC_AUTO, out);
        if (rc == QV__DECLINED && enc != QV_ENC_PLAIN) continue;
        if (rc) return rc;
        if (force == QV_ENC_AUTO && (rc = keep_smaller(e, out, (uint64_t)plain + 64, fixed_plain, &fc)))
            return rc;
        return finish_root(e, depth, force, out);
    }
}
