/*
 * Run-end encoding: run i covers [ends[i-1], ends[i]) with values[i]. Ends
 * (u32, strictly increasing, the last equal to the count) and values are
 * cascaded (ends usually become delta + bit-packed run lengths). A large
 * range decode finds its first run by binary search over the decoded ends,
 * kept on the node; a small one searches the first end of each 1024-run
 * vector and decodes only the vectors of ends and the run values it needs.
 * Booleans store no values: runs alternate from param 0.
 */
#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

int qv__rle_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                        struct qv__enode **out) {
    int64_t runs = 0;
    for (int64_t i = 0; i < n; i++) runs += (i == 0 || v[i] != v[i - 1]);
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_RLE, pt, qv__pt_width(pt), n);
    uint64_t *ends = nd ? qv__mem_alloc(&e->mem, (size_t)(runs ? runs : 1) * 8, e->err) : NULL;
    uint64_t *vals = ends ? qv__mem_alloc(&e->mem, (size_t)(runs ? runs : 1) * 8, e->err) : NULL;
    int rc = ENOMEM;
    if (!vals) goto out;
    int64_t r = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || v[i] != v[i - 1]) {
            if (r) ends[r - 1] = (uint64_t)i;
            vals[r++] = v[i];
        }
    }
    if (r) ends[r - 1] = (uint64_t)n;
    rc = qv__cascade_int(e, ends, runs, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (rc) goto out;
    if (qv__pt_is_float(pt)) {
        /* Back to floats so the run values can use ALP. */
        if (pt == QV__PT_F32) qv__narrow(vals, 4, runs, vals);
        rc = qv__cascade_float(e, vals, runs, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    } else {
        rc = qv__cascade_int(e, vals, runs, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    }
    if (rc) goto out;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    *out = nd;
out:
    qv__mem_free(&e->mem, vals);
    qv__mem_free(&e->mem, ends);
    return rc;
}

/* Position of the first bit in [i, n) that differs from `cur`, or n. */
static int64_t next_change(const uint8_t *bits, int64_t i, int64_t n, int cur) {
    const uint64_t flip = cur ? ~UINT64_C(0) : 0;
    while (i < n && (i & 63)) {
        if (qv_bit_get(bits, i) != cur) return i;
        i++;
    }
    while (i + 64 <= n) {
        uint64_t w;
        memcpy(&w, bits + (i >> 3), 8);
        w ^= flip;
        if (w) return i + __builtin_ctzll(w);
        i += 64;
    }
    while (i < n) {
        if (qv_bit_get(bits, i) != cur) return i;
        i++;
    }
    return n;
}

int qv__rle_encode_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int depth,
                        struct qv__enode **out) {
    int64_t runs = 0;
    for (int64_t i = 0; i < n; runs++) i = next_change(bits, i, n, qv_bit_get(bits, i));
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_RLE, QV__PT_BOOL, 0, n);
    uint64_t *ends = nd ? qv__mem_alloc(&e->mem, (size_t)(runs ? runs : 1) * 8, e->err) : NULL;
    if (!ends) return ENOMEM;
    int64_t r = 0;
    for (int64_t i = 0; i < n;) ends[r++] = (uint64_t)(i = next_change(bits, i, n, qv_bit_get(bits, i)));
    int rc = qv__cascade_int(e, ends, runs, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    qv__mem_free(&e->mem, ends);
    if (rc) return rc;
    nd->nparams = 1;
    nd->params[0] = n ? qv_bit_get(bits, 0) : 0;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decoding ----
 * The run ends are decoded once, all of them (u32, kept on the node), the
 * first time a large range wants them; small ranges - random access - touch
 * only the 1024-run vectors of ends they need, so a take costs what it
 * reads, not the chunk. Run values likewise: all of them once, kept on the
 * node, for large ranges and takes; small ranges decode the values of
 * their own runs, 1024 at a time into scratch.
 *
 * Expansion writes each run as one unconditional block of 32 bytes (64 for
 * 8-byte values) holding its value repeated, at the run's first row, and
 * moves to the run's end: the next run overwrites what spilled past it. A
 * run is then a few instructions and no branch that depends on its length
 * unless it is longer than a block (rare for the short runs that make
 * run-end win over bit-packing; long runs add blocks). A block never goes
 * past the caller's buffer: the runs that start within one block of the end
 * of the output are written value by value. */

/* Vectors of run ends a node keeps for small ranges: a take visits a few
 * vectors per chunk (one per row), and a take repeated on one open file
 * (the file layer's take cache keeps the decoders) finds them again instead
 * of decoding each 1024 ends once more (lineitem SF1, 100 random rows, a
 * warm take: 3.6 -> 2.5 M instructions, callgrind, most of it
 * l_orderkey's). Only a vector decoded counts as touched for the switch to
 * decoding all ends (use_lazy). A vector is kept when a take comes back to
 * it (lazy_vec), least recently used replaced first; 4 KiB each, from the
 * decoder's arena, made as needed. */
#define EV_SLOTS 4
#define EV_SEEN 16

struct rle_cache {
    uint32_t *ends;     /* all run ends, checked, or NULL */
    void *vals;         /* all run values (decoded for a large take), or NULL */
    int64_t ev;         /* vector of ends held in `ev_ends`, -1 when none */
    int64_t ev_len;
    int64_t lazy_vecs;  /* vectors of ends decoded for small ranges */
    uint32_t *ev_ends;  /* the ends of vector ev: one of the slots' (ends are u32) */
    uint64_t clock;
    struct qv__seen seen; /* EV_SEEN vectors decoded into slot 0 */
    struct {
        int64_t v, len; /* v: -1 when empty */
        uint64_t used;
        uint32_t *ends; /* QV__VEC ends, or NULL until first used */
    } s[EV_SLOTS];
};

static int get_cache(struct qv__dec *d, struct qv__node *nd, struct rle_cache **out,
                     struct qv_error *err) {
    struct rle_cache *c = nd->cache;
    if (!c) {
        c = qv__mem_small(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        c->ev = -1;
        for (int i = 0; i < EV_SLOTS; i++) c->s[i].v = -1;
        qv__seen_init(&c->seen);
        nd->cache = c;
    }
    *out = c;
    return 0;
}

/* Decodes all run ends of nd into *out (memory of d) and checks them:
 * strictly increasing, the last at the count (so every end is within it).
 * The decoder below and the run-end filter (filter_values.c) both read the
 * ends this way, each keeping them in its own state. */
int qv__rle_read_ends(struct qv__dec *d, struct qv__node *nd, uint32_t **out,
                      struct qv_error *err) {
    struct qv__node *en = nd->child[0];
    const int64_t runs = en->count;
    uint32_t *e = qv__mem_buf(&d->mem, (size_t)(runs ? runs : 1) * 4, err);
    if (!e) return ENOMEM;
    int rc = qv__dec_word(d, en, 0, runs, e, err);
    if (rc) return rc;
    /* One pass without an early exit, so it vectorizes; where the fault is
     * gets looked up only when there is one. */
    unsigned bad = 0;
    for (int64_t i = 1; i < runs; i++) bad |= e[i] <= e[i - 1];
    if (bad) {
        int64_t i = 1;
        while (e[i] > e[i - 1]) i++;
        return qv__corrupt(err, en, "position list not increasing or out of range at entry %lld",
                           (long long)i);
    }
    if (runs && e[runs - 1] != (uint64_t)nd->count)
        return qv__corrupt(err, nd, "last run ends at %llu, not at the count %lld",
                           (unsigned long long)e[runs - 1], (long long)nd->count);
    *out = e;
    return 0;
}

/* Reads the run ends once per decoder. */
static int load_ends(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c,
                     struct qv_error *err) {
    return c->ends ? 0 : qv__rle_read_ends(d, nd, &c->ends, err);
}

/* Whether a range of n values goes through the lazy path: the ends are
 * not decoded yet, the range is small, the call as a whole wants few of
 * the node's values (a lazy row costs about what decoding 2048 values of
 * the whole costs), and earlier small ranges have not already decoded a
 * good part of the ends (then decoding them all once is cheaper). */
static int use_lazy(const struct qv__dec *d, const struct qv__node *nd,
                    const struct rle_cache *c, int64_t n) {
    const struct qv__node *en = nd->child[0];
    if (c->ends || n > 4 * QV__VEC) return 0;
    int64_t want = d->want > n ? d->want : n;
    if (want > nd->count / 2048) return 0;
    int64_t nvec = (en->count + QV__VEC - 1) >> QV__VEC_SHIFT;
    return c->lazy_vecs <= 4 + nvec / 4;
}

/* Makes vector v of the run ends current, checking its ends increase and
 * stay within the count (and that the last run ends at the count). */
static int lazy_vec(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c, int64_t v,
                    struct qv_error *err) {
    if (c->ev == v) return 0;
    c->clock++;
    int k = 1;
    for (int i = 0; i < EV_SLOTS; i++) {
        if (c->s[i].v == v) {
            c->s[i].used = c->clock;
            c->ev = v;
            c->ev_len = c->s[i].len;
            c->ev_ends = c->s[i].ends;
            return 0;
        }
        if (i && c->s[k].v >= 0 && (c->s[i].v < 0 || c->s[i].used < c->s[k].used)) k = i;
    }
    /* A vector met the first time goes to slot 0, the working one (a take
     * that visits it once, a cold take, holds no more than one vector, as
     * before); one met again to the least recently used other. */
    if (!qv__seen_before(&c->seen, EV_SEEN, v)) k = 0;
    struct qv__node *en = nd->child[0];
    const int64_t runs = en->count, vs = v << QV__VEC_SHIFT;
    const int64_t len = runs - vs < QV__VEC ? runs - vs : QV__VEC;
    c->ev = -1;
    c->s[k].v = -1;
    if (!c->s[k].ends) {
        c->s[k].ends = qv__mem_buf(&d->mem, (size_t)QV__VEC * 4, err);
        if (!c->s[k].ends) return ENOMEM;
    }
    c->lazy_vecs++;
    uint32_t *e = c->s[k].ends;
    int rc = qv__dec_word(d, en, vs, len, e, err);
    if (rc) return rc;
    for (int64_t i = 0; i < len; i++)
        if (e[i] > (uint64_t)nd->count || (i && e[i] <= e[i - 1]))
            return qv__corrupt(err, en,
                               "position list not increasing or out of range at entry %lld",
                               (long long)(vs + i));
    if (vs + len == runs && e[len - 1] != (uint64_t)nd->count)
        return qv__corrupt(err, nd, "last run ends at %llu, not at the count %lld",
                           (unsigned long long)e[len - 1], (long long)nd->count);
    c->s[k].v = v;
    c->s[k].len = len;
    c->s[k].used = c->clock;
    c->ev = v;
    c->ev_len = len;
    c->ev_ends = e;
    return 0;
}

/* Index of the run holding row `row` (< count): the first run ending
 * after it. */
static int lazy_find(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c, int64_t row,
                     int64_t *out, struct qv_error *err) {
    struct qv__node *en = nd->child[0];
    const int64_t nvec = (en->count + QV__VEC - 1) >> QV__VEC_SHIFT;
    int64_t v;
    if (c->ev >= 0 && c->ev_ends[0] <= (uint64_t)row &&
        (c->ev + 1 == nvec || c->ev_ends[c->ev_len - 1] > (uint64_t)row)) {
        v = c->ev; /* the current vector holds it */
    } else {
        /* Vectors whose first run ends at or before the row: the run is in
         * the last of them (or the next one, found below). */
        int64_t lo = 0, hi = nvec;
        while (lo < hi) {
            int64_t mid = lo + ((hi - lo) >> 1);
            uint32_t first;
            int rc = qv__dec_word(d, en, mid << QV__VEC_SHIFT, 1, &first, err);
            if (rc) return rc;
            if (first <= (uint64_t)row) lo = mid + 1;
            else hi = mid;
        }
        v = lo ? lo - 1 : 0;
    }
    int rc = lazy_vec(d, nd, c, v, err);
    if (rc) return rc;
    *out = (v << QV__VEC_SHIFT) + qv__upper_bound32(c->ev_ends, c->ev_len, row);
    return 0;
}

static int bad_runs(struct qv_error *err, struct qv__node *nd, int64_t r) {
    return qv__corrupt(err, nd, "run ends do not cover the values (run %lld)", (long long)r);
}

/* ---- Expansion kernels ----
 * One body, instantiated per value width and per CPU level (generic and
 * AVX2, base/cpu_internal.h): the blocks are GCC/Clang vector types, 32-byte
 * registers with AVX2 and pairs of 16-byte ones otherwise. */

typedef uint64_t rle_v4u64 __attribute__((vector_size(32)));

/* The run value repeated over 64 bits. */
static QV__ALWAYS_INLINE uint64_t pattern(const uint8_t *v, unsigned w) {
    if (w == 1) return v[0] * UINT64_C(0x0101010101010101);
    if (w == 2) {
        uint16_t x;
        memcpy(&x, v, 2);
        return x * UINT64_C(0x0001000100010001);
    }
    if (w == 4) {
        uint32_t x;
        memcpy(&x, v, 4);
        return x * UINT64_C(0x0000000100000001);
    }
    uint64_t x;
    memcpy(&x, v, 8);
    return x;
}

/* Fills o[a, e) (value width w) with the block *b: whole blocks, then the
 * rest value by value. The block comes by pointer: a 32-byte vector passed
 * by value changes the calling convention between the generic and AVX2
 * instantiations (clang's -Wpsabi). */
static QV__ALWAYS_INLINE void fill_exact(uint8_t *restrict o, int64_t a, int64_t e,
                                         const rle_v4u64 *b, const uint8_t *v, const unsigned w) {
    const int64_t bb = w == 8 ? 64 : 32, bv = bb / (int64_t)w;
    for (; a + bv <= e; a += bv) {
        memcpy(o + (size_t)a * w, b, 32);
        if (bb == 64) memcpy(o + (size_t)a * w + 32, b, 32);
    }
    for (; a < e; a++) memcpy(o + (size_t)a * w, v, w);
}

/* Writes the runs [0, k) (absolute ends ends[r], values vals[r]) into the
 * output o of n values of width w that starts at row `start`, the first of
 * them from position pos; returns the position after the last (never
 * beyond n). The caller guarantees each end is above the row its run
 * starts at, so positions only grow. */
static QV__ALWAYS_INLINE int64_t expand_body(uint8_t *restrict o, int64_t n,
                                             const uint32_t *restrict ends,
                                             const uint8_t *restrict vals, int64_t k, int64_t pos,
                                             int64_t start, const unsigned w) {
    const int64_t bb = w == 8 ? 64 : 32, bv = bb / (int64_t)w; /* block bytes, values */
    /* The runs that end at least one block before the end of the output:
     * a block at their first row stays inside it. */
    const int64_t kf = n >= bv ? qv__upper_bound32(ends, k, start + n - bv) : 0;
    int64_t prev = start + pos; /* first row of run r */
    uint8_t *p = o + (size_t)pos * w;
    for (int64_t r = 0; r < kf; r++) {
        const uint64_t x = pattern(vals + (size_t)r * w, w);
        const rle_v4u64 b = {x, x, x, x};
        const int64_t e = ends[r], len = e - prev;
        memcpy(p, &b, 32);
        if (bb == 64) memcpy(p + 32, &b, 32);
        if (__builtin_expect(len > bv, 0)) {
            /* A long run: more blocks, the last ending exactly at its end. */
            for (int64_t q = bv; q < len - bv; q += bv) {
                memcpy(p + (size_t)q * w, &b, 32);
                if (bb == 64) memcpy(p + (size_t)q * w + 32, &b, 32);
            }
            memcpy(p + (size_t)(len - bv) * w, &b, 32);
            if (bb == 64) memcpy(p + (size_t)(len - bv) * w + 32, &b, 32);
        }
        p += (size_t)len * w;
        prev = e;
    }
    pos = prev - start;
    for (int64_t r = kf; r < k; r++) {
        const uint64_t x = pattern(vals + (size_t)r * w, w);
        const rle_v4u64 b = {x, x, x, x};
        int64_t e = (int64_t)ends[r] - start;
        e = e < n ? e : n;
        fill_exact(o, pos, e, &b, vals + (size_t)r * w, w);
        pos = e;
    }
    return pos;
}

#define EXPAND(W)                                                                                \
    static int64_t expand##W##_generic(uint8_t *o, int64_t n, const uint32_t *ends,               \
                                       const uint8_t *vals, int64_t k, int64_t pos,              \
                                       int64_t start) {                                          \
        return expand_body(o, n, ends, vals, k, pos, start, W);                                  \
    }                                                                                            \
    EXPAND_AVX2(W)
#if QV__X86_DISPATCH
#define EXPAND_AVX2(W)                                                                           \
    static QV__TARGET_AVX2 int64_t expand##W##_avx2(uint8_t *o, int64_t n, const uint32_t *ends, \
                                                    const uint8_t *vals, int64_t k, int64_t pos, \
                                                    int64_t start) {                             \
        return expand_body(o, n, ends, vals, k, pos, start, W);                                  \
    }
#else
#define EXPAND_AVX2(W)
#endif
EXPAND(1)
EXPAND(2)
EXPAND(4)
EXPAND(8)

static int64_t expand(unsigned w, uint8_t *o, int64_t n, const uint32_t *ends,
                      const uint8_t *vals, int64_t k, int64_t pos, int64_t start) {
    switch (w) {
    case 1: return QV__DISPATCH2(expand1, o, n, ends, vals, k, pos, start);
    case 2: return QV__DISPATCH2(expand2, o, n, ends, vals, k, pos, start);
    case 4: return QV__DISPATCH2(expand4, o, n, ends, vals, k, pos, start);
    default: return QV__DISPATCH2(expand8, o, n, ends, vals, k, pos, start);
    }
}

/* Decodes all run values once, for ranges that wanted all the ends too
 * (a scan decodes each of them once either way; repeated ranges and takes
 * then cost only the expansion). */
static int load_vals(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c,
                     struct qv_error *err) {
    const int64_t runs = nd->child[0]->count;
    void *v = qv__mem_alloc(&d->mem, (size_t)(runs ? runs : 1) * nd->width, err);
    if (!v) return ENOMEM;
    int rc = qv__dec_word(d, nd->child[1], 0, runs, v, err);
    if (rc) {
        qv__mem_free(&d->mem, v);
        return rc;
    }
    c->vals = v;
    return 0;
}

/* Writes runs [r0, r1) into out (n values from row `start`) from *pos on;
 * ends[r - eoff] is the end of run r. Each end must exceed the row its run
 * starts at (callers check what the ends' decoding did not). */
static int expand_runs(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c, void *out,
                       int64_t *pos, int64_t n, const uint32_t *ends, int64_t eoff, int64_t r0,
                       int64_t r1, int64_t start, struct qv_error *err) {
    const unsigned w = nd->width;
    if (c->vals) {
        *pos = expand(w, out, n, ends + (r0 - eoff), (const uint8_t *)c->vals + (size_t)r0 * w,
                      r1 - r0, *pos, start);
        return 0;
    }
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint8_t *vals = qv__stack_push(&d->stack, (size_t)QV__VEC * w, err);
    if (!vals) return ENOMEM;
    int rc = 0;
    for (int64_t r = r0; r < r1;) {
        /* Whole 1024-run vectors of the values child where possible. */
        int64_t rb = ((r >> QV__VEC_SHIFT) + 1) << QV__VEC_SHIFT;
        if (rb > r1) rb = r1;
        if ((rc = qv__dec_word(d, nd->child[1], r, rb - r, vals, err))) break;
        *pos = expand(w, out, n, ends + (r - eoff), vals, rb - r, *pos, start);
        r = rb;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* A small range through the vectors of ends it touches. */
static int lazy_word(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c, int64_t start,
                     int64_t n, void *out, struct qv_error *err) {
    const int64_t runs = nd->child[0]->count, last = start + n - 1;
    int64_t r, pos = 0;
    int rc = lazy_find(d, nd, c, start, &r, err);
    while (!rc && pos < n) {
        if (r >= runs) return bad_runs(err, nd, r);
        if ((rc = lazy_vec(d, nd, c, r >> QV__VEC_SHIFT, err))) break;
        const int64_t vs = c->ev << QV__VEC_SHIFT, lo = r - vs;
        const uint32_t *e = c->ev_ends;
        /* Vectors are checked one at a time: across their boundary the
         * ends must still grow. */
        if ((int64_t)e[lo] <= start + pos) return bad_runs(err, nd, r);
        /* This vector's runs up to the one holding the last row. */
        int64_t hi = lo + qv__upper_bound32(e + lo, c->ev_len - lo, last);
        hi = hi < c->ev_len ? hi + 1 : c->ev_len;
        rc = expand_runs(d, nd, c, out, &pos, n, e, vs, r, vs + hi, start, err);
        r = vs + hi;
    }
    return rc;
}

int qv__rle_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     void *out, struct qv_error *err) {
    struct rle_cache *c;
    int rc = get_cache(d, nd, &c, err);
    if (rc) return rc;
    if (!c->ends && use_lazy(d, nd, c, n)) return lazy_word(d, nd, c, start, n, out, err);
    if ((rc = load_ends(d, nd, c, err))) return rc;
    const int64_t runs = nd->child[0]->count;
    if (!c->vals && (rc = load_vals(d, nd, c, err))) return rc;
    /* The ends are checked: the last is the count, so both runs exist. */
    const int64_t r0 = qv__upper_bound32(c->ends, runs, start);
    const int64_t r1 = r0 + qv__upper_bound32(c->ends + r0, runs - r0, start + n - 1);
    int64_t pos = 0;
    return expand_runs(d, nd, c, out, &pos, n, c->ends, 0, r0, r1 + 1, start, err);
}

int qv__rle_dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     uint8_t *bits, int64_t bit_off, struct qv_error *err) {
    const int64_t runs = nd->child[0]->count;
    struct rle_cache *c;
    int rc = get_cache(d, nd, &c, err);
    if (rc) return rc;
    if (!c->ends && use_lazy(d, nd, c, n)) {
        int64_t r;
        if ((rc = lazy_find(d, nd, c, start, &r, err))) return rc;
        for (int64_t pos = start, end = start + n; pos < end; r++) {
            if (r >= runs) return bad_runs(err, nd, r);
            if ((rc = lazy_vec(d, nd, c, r >> QV__VEC_SHIFT, err))) return rc;
            uint64_t e = c->ev_ends[r & (QV__VEC - 1)];
            if (e <= (uint64_t)pos) return bad_runs(err, nd, r);
            int64_t stop = (int64_t)e < end ? (int64_t)e : end;
            qv_bits_fill(bits, bit_off + (pos - start), stop - pos,
                         (int)((nd->params[0] ^ r) & 1));
            pos = stop;
        }
        return 0;
    }
    if ((rc = load_ends(d, nd, c, err))) return rc;
    const uint32_t *ends = c->ends;
    int64_t r = qv__upper_bound32(ends, runs, start);
    for (int64_t pos = start, end = start + n; pos < end; r++) {
        int64_t stop = (int64_t)ends[r] < end ? (int64_t)ends[r] : end;
        qv_bits_fill(bits, bit_off + (pos - start), stop - pos, (int)((nd->params[0] ^ r) & 1));
        pos = stop;
    }
    return 0;
}

/* ---- Take ----
 * A row's run by a walk forward from the previous row's run (rows are
 * sorted): the same run or the next one are checked first, a binary
 * search over the rest of the ends finds a run further on; small takes on
 * a large chunk search the vectors of ends lazily instead. The values come
 * from the node when a large take has decoded them all, else from the runs
 * each group of rows needs within one 1024-run vector of values. */

static void gather(void *out, const uint8_t *vals, const int64_t *ri, int64_t k, int64_t base,
                   unsigned w) {
    switch (w) {
    case 1:
        for (int64_t i = 0; i < k; i++) ((uint8_t *)out)[i] = vals[ri[i] - base];
        break;
    case 2:
        for (int64_t i = 0; i < k; i++)
            memcpy((uint8_t *)out + 2 * i, vals + 2 * (size_t)(ri[i] - base), 2);
        break;
    case 4:
        for (int64_t i = 0; i < k; i++)
            memcpy((uint8_t *)out + 4 * i, vals + 4 * (size_t)(ri[i] - base), 4);
        break;
    default:
        for (int64_t i = 0; i < k; i++)
            memcpy((uint8_t *)out + 8 * i, vals + 8 * (size_t)(ri[i] - base), 8);
        break;
    }
}

static int rle_take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t k,
                         void *out, struct qv_error *err) {
    struct rle_cache *c;
    int rc = get_cache(d, nd, &c, err);
    if (rc) return rc;
    const int64_t runs = nd->child[0]->count;
    const unsigned w = nd->width;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    int64_t *ri = qv__stack_push(&d->stack, (size_t)k * 8, err);
    if (!ri) return ENOMEM;
    if (!c->ends && use_lazy(d, nd, c, k)) {
        for (int64_t i = 0; i < k && !rc; i++) {
            if (i && rows[i] == rows[i - 1]) ri[i] = ri[i - 1];
            else rc = lazy_find(d, nd, c, rows[i], &ri[i], err);
        }
    } else if (!(rc = load_ends(d, nd, c, err))) {
        /* The last end is the count, above every row: the walk stays
         * within the runs. */
        const uint32_t *e = c->ends;
        int64_t r = 0;
        for (int64_t i = 0; i < k; i++) {
            const int64_t row = rows[i];
            if ((int64_t)e[r] <= row && (int64_t)e[++r] <= row)
                r += qv__upper_bound32(e + r, runs - r, row);
            ri[i] = r;
        }
        if (!c->vals) rc = load_vals(d, nd, c, err);
    }
    if (!rc && c->vals) {
        gather(out, c->vals, ri, k, 0, w);
    } else if (!rc) {
        uint8_t *vals = qv__stack_push(&d->stack, (size_t)QV__VEC * w, err);
        if (!vals) rc = ENOMEM;
        for (int64_t i = 0, j; !rc && i < k; i = j) {
            if (ri[i] >= runs) {
                rc = bad_runs(err, nd, ri[i]);
                break;
            }
            for (j = i + 1; j < k && ri[j] >> QV__VEC_SHIFT == ri[i] >> QV__VEC_SHIFT; j++) {}
            /* Lazily found runs increase with the rows unless the ends
             * are corrupt across vectors. */
            if (ri[j - 1] < ri[i] || ri[j - 1] >= runs) {
                rc = bad_runs(err, nd, ri[j - 1]);
                break;
            }
            rc = qv__dec_word(d, nd->child[1], ri[i], ri[j - 1] - ri[i] + 1, vals, err);
            if (!rc) gather((uint8_t *)out + (size_t)i * w, vals, ri + i, j - i, ri[i], w);
        }
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ---- */

/* bool: param 0 is the first run's value (runs alternate); child 0: the run
 * ends. Word types: child 0: run ends (exclusive, increasing, last ==
 * count); child 1: one value per run. Ends are u32, 1..count of them
 * (none for no values). */
static int rle_validate(const struct qv__node *nd, struct qv_error *err) {
    const int64_t n = nd->count;
    int rc;
    if (nd->pt == QV__PT_BOOL) {
        if ((rc = qv__want_shape(nd, 1, 0, 1, err))) return rc;
        if (nd->params[0] != 0 && nd->params[0] != 1)
            return qv__corrupt(err, nd, "first value %lld", (long long)nd->params[0]);
    } else {
        if (!qv__pt_is_word(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
        if ((rc = qv__want_shape(nd, 0, 0, 2, err))) return rc;
        if ((rc = qv__want_child(nd, 1, nd->pt, nd->child[0]->count, err))) return rc;
    }
    if ((rc = qv__want_child(nd, 0, QV__PT_U32, -1, err))) return rc;
    if (nd->child[0]->count > n || (n > 0 && nd->child[0]->count == 0))
        return qv__corrupt(err, nd, "%lld runs for %lld values", (long long)nd->child[0]->count,
                           (long long)n);
    return 0;
}

static int rle_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (qv__pt_is_word(s->pt)) return qv__rle_encode_word(e, s->u64, s->n, s->pt, s->depth, out);
    if (s->pt == QV__PT_BOOL) return qv__rle_encode_bool(e, s->bits, s->n, s->depth, out);
    return qv__enc_unsupported(e, QV_ENC_RLE, s->pt);
}

const struct qv__encoding qv__enc_rle = {
    .id = QV_ENC_RLE,
    .name = "rle",
    .decode_cost = 1,
    .dec_word = qv__rle_dec_word,
    .dec_bool = qv__rle_dec_bool,
    .take_word = rle_take_word,
    .validate = rle_validate,
    .build = rle_build,
    .bool_params = {"first"},
    .children = {"ends", "values"},
};
