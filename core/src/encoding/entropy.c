/*
 * The entropy stage for final integer codes (dictionary codes, residuals
 * about to be bit-packed): zstd over the residuals in small frames,
 * chosen by the cascade when a sample says it pays. Fixed-width packing
 * spends as many bits on a value seen a million times as on one seen once
 * and never exploits a repeating pattern (an hour column cycling 0..23);
 * zstd's Huffman literals and matches do both, and small frames (4 or 16
 * vectors) keep random access: a take decompresses one frame of a few KiB.
 *
 * Each frame is an ordinary subtree against the whole chunk's reference
 * (so every frame has the same shape), in one of three layouts the sample
 * tries, keeping the one zstd compressed smallest:
 *  - bit-packed at the values' own width: wins on repeating patterns of
 *    narrow values (few bits to match);
 *  - bit-packed at that width rounded up to whole bytes: in the packing's
 *    lane layout, 32-bit words of 4 values of 8 bits or 2 of 16, symbols
 *    zstd's byte-oriented literal coder can count (skewed data);
 *  - sequential (format 4.0): `for` over plain residuals of 8 or 16 bits,
 *    value after value. The lane layout interleaves 32 lanes, so zstd sees
 *    the histogram but not the order; sequential bytes also give it the
 *    sequence (l_linenumber cycling 1..7 per order, times of day rising
 *    through a day, codes repeating with the rows that carry them);
 *  - sequential bits (format 8.0), for residuals of at most 4 bits: `for`
 *    over seqpack residuals of 1, 2 or 4 bits, so a byte holds 8, 4 or 2
 *    neighbouring values: the order, without a byte a value (lineitem's
 *    l_linestatus and l_returnflag repeat along an order's lines: 24% and
 *    14% smaller than at one byte a value in ans frames or bit-packed, in
 *    a Python trial of the layout).
 */
#include "encoding/enc_internal.h"
#include "encoding/encoding_testing.h"

/* Values per frame: 4 vectors, so a take of one row decompresses at most
 * 4 KiB per byte of width (a take of 100 random rows of a column touches
 * up to 100 frames); 16 vectors when the sample compressed below a
 * quarter (repeating patterns: the frames are then mostly matches, which
 * decompress at memory speed, and larger frames find more of them). */
/* Smaller frames sharing one zstd dictionary per chunk were measured
 * (bench/bench_entropy_dict.c) and not taken: at these levels zstd reuses
 * a dictionary's tables unchecked and small frames grow; at level 6,
 * 2,048-value frames with a 4 KiB dictionary keep the size but most of
 * their cheaper takes come from the frame size alone, and loading a
 * dictionary per chunk makes cold takes 1.3x dearer. */
#define ENTROPY_FRAME (4 * QV__VEC)
#define ENTROPY_FRAME_REPETITIVE (16 * QV__VEC)
#define ENTROPY_REPETITIVE_RATIO 0.25
/* Sequential frames hold as many values as the other layouts' frames (4
 * vectors, 16 when repetitive): a take decompresses one frame per row it
 * touches, and 16,384-value frames made a 100-row take of lineitem's
 * l_linenumber 1.4-1.8 ms against 0.4-0.5 ms for the 4-vector frames of
 * l_tax (for 5% less than 4,096-value frames on l_linenumber at level 1
 * and 15% less at level 3, a Python trial of the layout). */
/* Sequential frames are compressed at level 3 at least, as zstd_dict's
 * frames are: on the same trial, level 3 took 11% less than level 1 in
 * 16 KiB frames (dfast's shorter matches find the short repeats of
 * sequences), while compressing a few MB of such residuals per column
 * costs milliseconds. */
#define ENTROPY_SEQ_LEVEL 3

static int seq_level(const struct qv__enc *e) {
    return e->zstd_level > ENTROPY_SEQ_LEVEL ? e->zstd_level : ENTROPY_SEQ_LEVEL;
}
/* Sequential bits take frames of 16 vectors: 2, 4 or 8 KiB of packed
 * bytes (what a take decompresses for a row: no more than a 4-vector
 * frame of 16-bit residuals), where 4 vectors would leave zstd 512 bytes
 * at 1 bit (in that trial, 16,384-value frames were 8-11% smaller than
 * 4,096-value ones on l_linestatus, l_returnflag and l_linenumber). */
#define ENTROPY_FRAME_SEQBITS (16 * QV__VEC)
/* Values per ans frame: 16 vectors, so each frame's table (a few bytes a
 * symbol) and states (128 bytes in a wide block) weigh little against its
 * coded values, and a take decodes at most 16 KiB of bytes for a row. With
 * 8 vectors (format 5.x) and wide blocks, lineitem, nested and flights were
 * 0.2-0.4% larger; with 16 they are 0.02-0.09% smaller than 5.x's kind 1
 * blocks of 8 vectors, and flights' cold take of 100 rows costs 5.1 ms
 * against 4.8 (5.6 before wide blocks). */
#define ENTROPY_FRAME_ANS (16 * QV__VEC)
/* Smallest node worth the sample's trial compressions. */
#define ENTROPY_MIN_VALUES 1024
/* The sample: up to 8 whole vectors spread over the node. */
#define ENTROPY_SAMPLE_VECTORS 8
/* Layouts whose quarter-sample trial is within this factor of the best's
 * get a whole trial too. */
#define RANK_SLACK 1.05
/* The stage is not proposed when the best quarter-sample trial estimates
 * it more than this factor above what it must beat (the best other
 * candidate's score, less the stage's margin and decode cost): the whole
 * trials would cost more write time than anything they could still
 * change. At 1.2 the files of lineitem SF1, flights and the 15 small real
 * tables of bench/compare came out byte-identical, and sm-fair's write
 * took 18% fewer instructions; at 1.0 flights grew 2.4%. */
#define BEAT_SLACK 1.2

static unsigned byte_width(unsigned w) { return w <= 8 ? 8 : w <= 16 ? 16 : w <= 32 ? 32 : 64; }
/* Sequential bits' width for residuals of w <= 4 bits. */
static unsigned seqbits_width(unsigned w) { return w <= 1 ? 1 : w <= 2 ? 2 : 4; }

/* The test knob (encoding_testing.h): a forced layout, 0 for none. */
static int forced_layout;

void qv_encode_force_entropy_layout(int layout) {
    __atomic_store_n(&forced_layout, layout, __ATOMIC_RELAXED);
}

int qv__entropy_forced(void) { return __atomic_load_n(&forced_layout, __ATOMIC_RELAXED); }

/* Lays out m residuals of v (from `ref`) as `layout` at width w into out;
 * returns bytes. */
static uint64_t lay_out(const uint64_t *v, int64_t m, uint64_t ref, uint64_t mask, int layout,
                        unsigned w, uint8_t *out, uint64_t *res, uint32_t *tmp) {
    if (layout == QV__ENTROPY_SEQ) {
        if (w == 8)
            for (int64_t j = 0; j < m; j++) out[j] = (uint8_t)(v[j] - ref);
        else
            for (int64_t j = 0; j < m; j++) {
                uint16_t x = (uint16_t)(v[j] - ref);
                memcpy(out + 2 * j, &x, 2);
            }
        return (uint64_t)m * (w / 8);
    }
    /* Bit-packed or sequential bits, vector by vector (a whole vector is
     * whole bytes either way). */
    uint64_t at = 0;
    for (int64_t i = 0; i < m; i += QV__VEC) {
        int64_t rem = m - i < QV__VEC ? m - i : QV__VEC;
        for (int64_t j = 0; j < rem; j++) res[j] = (v[i + j] - ref) & mask;
        if (layout == QV__ENTROPY_SEQBITS) {
            qv__seqpack_put(res, rem, w, out + at);
            at += qv__seqpack_bytes(rem, w);
        } else {
            qv__pack_vec(res, rem, w, out + at, tmp);
            at += qv__bitpack_vec_bytes(rem, w);
        }
    }
    return at;
}

/* One trial: the sampled vectors (every `stride`-th of the `take` spread
 * over the node) laid out as `layout` at width w and compressed at the
 * layout's level into *clen bytes; *sn is the values laid out. An error
 * of the compression (ENOMEM, see qv__zstd_compress) is returned. */
struct trial_ctx {
    struct qv__enc *e;
    const uint64_t *v;
    int64_t n, nvec, take;
    uint64_t ref, mask;
    uint8_t *packed, *dst;
    size_t bound;
    uint64_t *res;
    uint32_t *tmp;
};

static int trial_compress(const struct trial_ctx *t, int layout, unsigned w, int64_t stride,
                          size_t *clen, int64_t *sn) {
    uint64_t at = 0;
    *sn = 0;
    for (int64_t k = 0; k < t->take; k += stride) {
        int64_t vs = (t->take == t->nvec ? k : k * t->nvec / t->take) << QV__VEC_SHIFT;
        int64_t m = vs + QV__VEC < t->n ? QV__VEC : t->n - vs;
        at += lay_out(t->v + vs, m, t->ref, t->mask, layout, w, t->packed + at, t->res, t->tmp);
        *sn += m;
    }
    return qv__zstd_compress(t->e, t->dst, t->bound, t->packed, (size_t)at,
                             layout == QV__ENTROPY_SEQ || layout == QV__ENTROPY_SEQBITS
                                 ? seq_level(t->e)
                                 : t->e->zstd_level,
                             clen);
}

/* The stage's estimate for n values of fb bits whose sn sampled values
 * compressed to clen bytes in `layout`; *frame_values the frame size it
 * implies. Per frame: the table entry, zstd's frame header and the
 * subtree's headers. */
static double est_from(int64_t n, unsigned fb, int layout, double clen, int64_t sn,
                       int64_t *frame_values) {
    const double ratio = clen / (double)qv__bitpack_bytes(sn, fb);
    *frame_values = layout == QV__ENTROPY_SEQBITS            ? ENTROPY_FRAME_SEQBITS
                    : ratio < ENTROPY_REPETITIVE_RATIO ? ENTROPY_FRAME_REPETITIVE
                                                       : ENTROPY_FRAME;
    const int64_t frames = (n + *frame_values - 1) / *frame_values;
    return (double)qv__bitpack_bytes(n, fb) * ratio + (double)frames * 48 + 64;
}

/* The ans codec over sequential bytes. */
static void choose_ans(struct qv__entropy_choice *c, uint64_t ref, double est) {
    c->ref = ref;
    c->width = 8;
    c->layout = QV__ENTROPY_SEQ;
    c->codec = QV_ENC_ANS;
    c->cost = qv__enc_ans.decode_cost;
    c->frame_values = ENTROPY_FRAME_ANS;
    c->est_bytes = est;
}

int qv__entropy_ans_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                           const struct qv__istats *s, struct qv__enode **out) {
    struct qv__entropy_choice c;
    choose_ans(&c, s->umin, 0);
    return qv__entropy_encode(e, v, n, pt, s, &c, 0, out);
}

int qv__entropy_samples(const struct qv__enc *e, int64_t n, const struct qv__istats *s) {
    if (n < ENTROPY_MIN_VALUES || !qv__allowed(e, QV_ENC_ZSTD)) return 0;
    uint64_t ref;
    const unsigned fb = qv__istats_for_bits(s, &ref);
    return fb >= 1 && fb <= 32;
}

double qv__entropy_ans_bytes(const uint64_t *cnt, int64_t sampled, int64_t n) {
    /* Whole frames and the last one's rest: their blocks' states differ
     * (the wide blocks of large frames). */
    const int64_t whole = n / ENTROPY_FRAME_ANS, rest = n % ENTROPY_FRAME_ANS;
    double table = 0, rest_table = 0;
    /* One estimate for a chunk of one frame (a small table's column). */
    const double payload =
        qv__ans_estimate(cnt, whole ? ENTROPY_FRAME_ANS : (size_t)rest, whole ? &table : &rest_table);
    if (whole && rest) (void)qv__ans_estimate(cnt, (size_t)rest, &rest_table);
    return payload * (double)n / (double)sampled + (double)whole * (table + 48) +
           (rest ? rest_table + 48 : 0) + 64;
}

int qv__entropy_choose(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, double to_beat, struct qv__entropy_choice *c) {
    memset(c, 0, sizeof *c);
    c->est_bytes = -1;
    if (!qv__entropy_samples(e, n, s)) return 0;
    const int forced = qv__entropy_forced();
    uint64_t ref;
    const unsigned fb = qv__istats_for_bits(s, &ref);
    /* Mostly distinct values (three quarters of the sample or more): no
     * repeats for matches and near-uniform bytes for Huffman; the trial
     * compressions would only cost write time. */
    if (!forced && s->sample_distinct * 4 >= s->sample_n * 3) return 0;
    const unsigned bw = byte_width(fb);
    if (forced == QV__ENTROPY_SEQ && bw > 16) return 0;
    if (forced == QV__ENTROPY_SEQBITS && fb > 4) return 0;
    const uint64_t mask = qv__mask(s->bits);
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    const int64_t take = nvec < ENTROPY_SAMPLE_VECTORS ? nvec : ENTROPY_SAMPLE_VECTORS;
    struct qv__mark mk = qv__stack_mark(&e->stack);
    /* Every layout takes at most 128 x bw bytes a vector. */
    const size_t packed_cap = (size_t)take * 128 * bw;
    const size_t bound = qv__zstd_bound(packed_cap);
    uint8_t *packed = qv__stack_push(&e->stack, packed_cap, e->err);
    uint8_t *dst = packed ? qv__stack_push(&e->stack, bound, e->err) : NULL;
    uint64_t *res = dst ? qv__stack_push(&e->stack, QV__VEC * 8, e->err) : NULL;
    uint32_t *tmp = res ? qv__stack_push(&e->stack, QV__VEC * 4, e->err) : NULL;
    if (!tmp) {
        /* No scratch fails the encode, as a failed trial compression does
         * (qv__zstd_compress): dropping the candidate would make the
         * file depend on what else the pool held at the time. */
        qv__stack_release(&e->stack, mk);
        return ENOMEM;
    }
    /* The ans candidate (values of at most 8 bits): sequential bytes coded
     * order-0, sized from the sample's histogram with no trial. zstd's
     * layouts below must then beat it too. */
    double ans_est = -1;
    if (fb <= 8 && qv__allowed(e, QV_ENC_ANS) && (!forced || forced == QV__ENTROPY_ANS)) {
        uint64_t cnt[256] = {0};
        int64_t an = 0;
        for (int64_t k = 0; k < take; k++) {
            int64_t vs = (take == nvec ? k : k * nvec / take) << QV__VEC_SHIFT;
            int64_t ve = vs + QV__VEC < n ? vs + QV__VEC : n;
            for (int64_t i = vs; i < ve; i++) cnt[(uint8_t)((v[i] - ref) & mask)]++;
            an += ve - vs;
        }
        ans_est = qv__entropy_ans_bytes(cnt, an, n);
        /* As a bound for zstd's layouts: in zstd's units. */
        const double as_zstd = ans_est * qv__cost_factor(e, QV_ENC_ANS) / qv__cost_factor(e, QV_ENC_ZSTD);
        to_beat = to_beat < as_zstd ? to_beat : as_zstd;
    }
    if (forced == QV__ENTROPY_ANS) {
        qv__stack_release(&e->stack, mk);
        if (ans_est >= 0) choose_ans(c, ref, ans_est);
        return 0;
    }
    /* The layouts to try: bit-packed at the exact width, then at the byte
     * width, then sequential bytes, then (at most 4 bits) sequential bits.
     * Whole words (above 16 bits) only pay on data zstd compresses anyway
     * at its own width. */
    int lay[4];
    unsigned lw[4];
    int nlay = 0;
    for (int trial = 0; trial < 4; trial++) {
        static const int layouts[4] = {QV__ENTROPY_PACKED, QV__ENTROPY_PACKED, QV__ENTROPY_SEQ,
                                       QV__ENTROPY_SEQBITS};
        const int layout = layouts[trial];
        const unsigned w = trial == 3 ? seqbits_width(fb) : trial ? bw : fb;
        if (trial && trial < 3 && bw > 16) continue;
        if (trial == 1 && bw == fb) continue;
        if (trial == 3 && fb > 4) continue;
        if (forced && forced != (trial == 0   ? QV__ENTROPY_PACKED
                                 : trial == 1 ? QV__ENTROPY_BYTES
                                              : layout)) {
            /* A forced byte-width layout at a width that is already whole
             * bytes is the exact one. */
            if (!(forced == QV__ENTROPY_BYTES && trial == 0 && bw == fb)) continue;
        }
        lay[nlay] = layout;
        lw[nlay++] = w;
    }
    struct trial_ctx t = {e, v, n, nvec, take, ref, mask, packed, dst, bound, res, tmp};
    double best = -1; /* the best layout but sequential bits */
    unsigned best_w = fb;
    int best_layout = QV__ENTROPY_PACKED;
    int64_t sn = 0;
    /* With several layouts and a sample of 4 vectors or more, the layouts
     * are first ranked on a quarter of the sample (every 4th sampled
     * vector); only the best, and any within RANK_SLACK of it, are then
     * compressed whole for the estimate. The trials were a fifth of a
     * flights write; this takes 2.4% of its instructions off (callgrind),
     * lineitem's file is byte-identical, flights' 112 B larger. */
    int whole[4] = {1, 1, 1, 1};
    int rc = 0;
    if (nlay > 1 && take >= 4) {
        size_t q[4];
        size_t low = 0;
        int64_t qn = 0;
        for (int i = 0; i < nlay && !rc; i++) {
            rc = trial_compress(&t, lay[i], lw[i], 4, &q[i], &qn);
            if (!rc && (!low || q[i] < low)) low = q[i];
        }
        /* Whole trials for the best and for any within RANK_SLACK of it. */
        for (int i = 0; i < nlay && !rc; i++) whole[i] = (double)q[i] <= RANK_SLACK * (double)low;
        /* The quarter's estimate against what the stage must beat: more
         * than BEAT_SLACK above it, and the whole trials (which would have
         * to come out that much smaller than the quarter) are skipped. */
        int64_t fv;
        if (!rc && !forced && qn > 0 &&
            est_from(n, fb, QV__ENTROPY_PACKED, (double)low, qn, &fv) > to_beat * BEAT_SLACK)
            whole[0] = whole[1] = whole[2] = whole[3] = 0;
    }
    double seqbits = -1;
    int64_t seqbits_n = 0;
    for (int i = 0; i < nlay && !rc; i++) {
        if (!whole[i]) continue;
        int64_t m;
        size_t clen;
        rc = trial_compress(&t, lay[i], lw[i], 1, &clen, &m);
        if (rc) break;
        if (lay[i] == QV__ENTROPY_SEQBITS) {
            seqbits = (double)clen;
            seqbits_n = m;
        } else if (best < 0 || (double)clen < best) {
            best = (double)clen;
            best_w = lw[i];
            best_layout = lay[i];
            sn = m;
        }
    }
    qv__stack_release(&e->stack, mk);
    if (rc) return rc;
    int64_t fv = 0, seqbits_fv = 0;
    const double zstd_est = best >= 0 && qv__bitpack_bytes(sn, fb)
                                ? est_from(n, fb, best_layout, best, sn, &fv)
                                : -1;
    const double seqbits_est = seqbits >= 0 && qv__bitpack_bytes(seqbits_n, fb)
                                   ? est_from(n, fb, QV__ENTROPY_SEQBITS, seqbits, seqbits_n, &seqbits_fv)
                                   : -1;
    /* ans against zstd's other layouts, each at its decode cost (format
     * 7.0's choice: without the margin the cascade then puts on zstd, so
     * zstd can win here and lose to bit-packing there where ans would
     * not have; made consistent, lineitem's l_discount, 11 values at 3.46
     * bits of entropy, goes to ans for 11.5% of its bytes and Q6 takes
     * 28.4 ms against 15.3). */
    enum { NONE, ANS, ZSTD, SEQBITS } pick;
    pick = ans_est >= 0 && (zstd_est < 0 || ans_est * qv__cost_factor(e, QV_ENC_ANS) <=
                                                    zstd_est * qv__cost_factor(e, QV_ENC_ZSTD))
                   ? ANS
               : zstd_est >= 0 ? ZSTD
                               : NONE;
    /* Sequential bits replace that choice only where they would also win
     * in the cascade: against ans beyond zstd's margin, against zstd's
     * other layouts at seqpack's added decode cost. */
    const int seqbits_cost = qv__enc_zstd.decode_cost + qv__enc_seqpack.decode_cost;
    if (seqbits_est >= 0) {
        const double score = seqbits_est * qv__cost_weight(e, seqbits_cost);
        if (pick == NONE ||
            (pick == ANS && score * QV__ENTROPY_MARGIN < ans_est * qv__cost_factor(e, QV_ENC_ANS)) ||
            (pick == ZSTD && score < zstd_est * qv__cost_factor(e, QV_ENC_ZSTD)))
            pick = SEQBITS;
    }
    if (pick == ANS) {
        choose_ans(c, ref, ans_est);
        return 0;
    }
    if (pick == NONE) return 0;
    const int seq = pick == SEQBITS;
    c->ref = ref;
    c->width = seq ? seqbits_width(fb) : best_w;
    c->layout = seq ? QV__ENTROPY_SEQBITS : best_layout;
    c->codec = QV_ENC_ZSTD;
    c->cost = seq ? seqbits_cost : qv__enc_zstd.decode_cost;
    c->frame_values = seq ? seqbits_fv : fv;
    c->est_bytes = seq ? seqbits_est : zstd_est;
    return 0;
}

struct frame_ctx {
    const uint64_t *v;
    int pt;
    uint64_t ref, mask;
    unsigned w;
    int layout;
};

/* One frame: for(ref) over bitpack(w) or, sequential, over plain residuals
 * of w bits or seqpack residuals (u8) of w bits; the bare child when it can
 * stand for the frame (a zero reference at the node's type). */
static int build_frame(struct qv__enc *e, void *ctx, int64_t start, int64_t m,
                       struct qv__enode **out, int *owned) {
    const struct frame_ctx *f = ctx;
    *owned = 1;
    const int cpt = f->layout == QV__ENTROPY_SEQ       ? qv__pt_uint_of_width(f->w / 8)
                    : f->layout == QV__ENTROPY_SEQBITS ? QV__PT_U8
                                                       : f->pt;
    uint64_t *res = qv__mem_alloc(&e->mem, (size_t)(m ? m : 1) * 8, e->err);
    if (!res) return ENOMEM;
    for (int64_t i = 0; i < m; i++) res[i] = (f->v[start + i] - f->ref) & f->mask;
    struct qv__enode *ch = NULL, *nd = NULL;
    int rc = f->layout == QV__ENTROPY_SEQ       ? qv__plain_encode_word(e, res, m, cpt, &ch)
             : f->layout == QV__ENTROPY_SEQBITS ? qv__seqpack_encode(e, res, m, cpt, f->w, &ch)
                                                : qv__bitpack_encode(e, res, m, f->pt, f->w, &ch);
    qv__mem_free(&e->mem, res);
    if (rc) return rc;
    if (f->ref == 0 && cpt == f->pt) {
        *out = ch;
        return 0;
    }
    nd = qv__enode_new(e, QV_ENC_FOR, f->pt, qv__pt_width(f->pt), m);
    if (!nd) {
        qv__enode_drop(e, ch);
        return ENOMEM;
    }
    nd->nparams = 1;
    nd->params[0] = (int64_t)f->ref;
    nd->child[0] = ch;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

int qv__entropy_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                       const struct qv__istats *s, const struct qv__entropy_choice *c,
                       int forced, struct qv__enode **out) {
    struct frame_ctx f = {v, pt, c->ref, qv__mask(s->bits), c->width, c->layout};
    if (!qv__pt_is_int(pt)) return qv__enc_unsupported(e, QV_ENC_ZSTD, pt);
    /* The frames' level is the encoder's (general.c reads it per frame). */
    const int level = e->zstd_level;
    if (c->layout == QV__ENTROPY_SEQ || c->layout == QV__ENTROPY_SEQBITS) e->zstd_level = seq_level(e);
    const int codec = c->codec == QV_ENC_ANS ? QV_ENC_ANS : QV_ENC_ZSTD;
    int rc = qv__general_encode(e, codec, pt, qv__pt_width(pt), n, c->frame_values, NULL,
                                0, build_frame, &f, forced || qv__entropy_forced(), out);
    e->zstd_level = level;
    return rc;
}
