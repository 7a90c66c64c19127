/*
 * Run-end encoding: run i covers [ends[i-1], ends[i]) with values[i]. Ends
 * (u32, strictly increasing, the last equal to the count) and values are
 * cascaded (ends usually become delta + bit-packed run lengths). A large
 * range decode finds its first run by binary search over the decoded ends,
 * kept on the node; a small one searches the first end of each 1024-run
 * vector and decodes only the vectors of ends and the run values it needs.
 * Booleans store no values: runs alternate from param 0.
 */
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
 * Large ranges decode every run end once (kept on the ends child) and every
 * run value once (kept on the node). Small ranges - random access - touch
 * only the 1024-run vectors of ends they need and the run values they
 * cover, so a take costs what it reads, not the chunk. */

static int load_ends(struct qv__dec *d, struct qv__node *nd, const uint64_t **ends,
                     struct qv_error *err) {
    struct qv__node *en = nd->child[0];
    int rc = qv__dec_cached_u64(d, en, 1, (uint64_t)nd->count + 1, ends, err);
    if (rc) return rc;
    if (en->count && (*ends)[en->count - 1] != (uint64_t)nd->count)
        return qv__corrupt(err, nd, "last run ends at %llu, not at the count %lld",
                           (unsigned long long)(*ends)[en->count - 1], (long long)nd->count);
    return 0;
}

/* State on the node: the run values once a large range wanted them all,
 * and the one vector of run ends last touched by small ranges. */
struct rle_cache {
    void *vals;         /* all run values, or NULL */
    int64_t ev;         /* vector of ends held in `ev_ends`, -1 when none */
    int64_t ev_len;
    int64_t lazy_vecs;  /* vectors of ends decoded for small ranges */
    uint32_t ev_ends[QV__VEC]; /* ends are u32 */
};

#define FILL(T)                                                                                  \
    static void fill_##T(T *o, int64_t m, const void *src) {                                     \
        T x;                                                                                     \
        memcpy(&x, src, sizeof x);                                                               \
        for (int64_t i = 0; i < m; i++) o[i] = x;                                                \
    }
FILL(uint8_t)
FILL(uint16_t)
FILL(uint32_t)
FILL(uint64_t)

/* Writes values [pos, end) from decoded ends and run values, from run r. */
#define RUNS(T)                                                                                  \
    static void runs_##T(void *out, const uint64_t *ends, const void *vals, int64_t r,          \
                         int64_t pos, int64_t end) {                                             \
        T *o = out;                                                                              \
        const uint8_t *v = vals;                                                                 \
        for (; pos < end; r++) {                                                                 \
            int64_t stop = (int64_t)ends[r] < end ? (int64_t)ends[r] : end;                      \
            T x;                                                                                 \
            memcpy(&x, v + (size_t)r * sizeof(T), sizeof x);                                     \
            for (int64_t i = pos; i < stop; i++) *o++ = x;                                       \
            pos = stop;                                                                          \
        }                                                                                        \
    }
RUNS(uint8_t)
RUNS(uint16_t)
RUNS(uint32_t)
RUNS(uint64_t)

static void fill(void *o, unsigned w, int64_t m, const void *src) {
    switch (w) {
    case 1: fill_uint8_t(o, m, src); break;
    case 2: fill_uint16_t(o, m, src); break;
    case 4: fill_uint32_t(o, m, src); break;
    default: fill_uint64_t(o, m, src); break;
    }
}

static int get_cache(struct qv__dec *d, struct qv__node *nd, struct rle_cache **out,
                     struct qv_error *err) {
    struct rle_cache *c = nd->cache;
    if (!c) {
        c = qv__mem_small(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        c->ev = -1;
        nd->cache = c;
    }
    *out = c;
    return 0;
}

/* Whether a range of n values goes through the lazy path: the ends are
 * not decoded yet, the range is small, the call as a whole wants few of
 * the node's values (a lazy row costs about what decoding 2048 values of
 * the whole costs), and earlier small ranges have not already touched a
 * good part of the ends (then decoding them all once is cheaper). */
static int use_lazy(const struct qv__dec *d, const struct qv__node *nd,
                    const struct rle_cache *c, int64_t n) {
    const struct qv__node *en = nd->child[0];
    if (en->cache || n > 4 * QV__VEC) return 0;
    int64_t want = d->want > n ? d->want : n;
    if (want > nd->count / 2048) return 0;
    int64_t nvec = (en->count + QV__VEC - 1) >> QV__VEC_SHIFT;
    return !c || c->lazy_vecs <= 4 + nvec / 4;
}

/* Makes vector v of the run ends current, checking its ends increase and
 * stay within the count (and that the last run ends at the count). */
static int lazy_vec(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c, int64_t v,
                    struct qv_error *err) {
    if (c->ev == v) return 0;
    struct qv__node *en = nd->child[0];
    const int64_t runs = en->count, vs = v << QV__VEC_SHIFT;
    const int64_t len = runs - vs < QV__VEC ? runs - vs : QV__VEC;
    c->ev = -1;
    c->lazy_vecs++;
    int rc = qv__dec_word(d, en, vs, len, c->ev_ends, err);
    if (rc) return rc;
    const uint32_t *e = c->ev_ends;
    for (int64_t i = 0; i < len; i++)
        if (e[i] > (uint64_t)nd->count || (i && e[i] <= e[i - 1]))
            return qv__corrupt(err, en,
                               "position list not increasing or out of range at entry %lld",
                               (long long)(vs + i));
    if (vs + len == runs && e[len - 1] != (uint64_t)nd->count)
        return qv__corrupt(err, nd, "last run ends at %llu, not at the count %lld",
                           (unsigned long long)e[len - 1], (long long)nd->count);
    c->ev = v;
    c->ev_len = len;
    return 0;
}

/* End of run r (< runs) through the current vector. */
static int lazy_end(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c, int64_t r,
                    uint64_t *out, struct qv_error *err) {
    int rc = lazy_vec(d, nd, c, r >> QV__VEC_SHIFT, err);
    if (rc) return rc;
    *out = c->ev_ends[r & (QV__VEC - 1)];
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
    /* First end in the vector greater than the row. */
    int64_t lo = 0, hi = c->ev_len;
    while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        if (c->ev_ends[mid] <= (uint64_t)row) lo = mid + 1;
        else hi = mid;
    }
    *out = (v << QV__VEC_SHIFT) + lo;
    return 0;
}

static int bad_runs(struct qv_error *err, struct qv__node *nd, int64_t r) {
    return qv__corrupt(err, nd, "run ends do not cover the values (run %lld)", (long long)r);
}

static int lazy_word(struct qv__dec *d, struct qv__node *nd, struct rle_cache *c, int64_t start,
                     int64_t n, void *out, struct qv_error *err) {
    const int64_t runs = nd->child[0]->count;
    const unsigned w = nd->width;
    int64_t r0, r1;
    int rc = lazy_find(d, nd, c, start, &r0, err);
    if (!rc) rc = lazy_find(d, nd, c, start + n - 1, &r1, err);
    if (rc) return rc;
    if (r1 < r0 || r1 >= runs) return bad_runs(err, nd, r1);
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint8_t *vals = qv__stack_push(&d->stack, (size_t)(r1 - r0 + 1) * w, err);
    if (!vals) return ENOMEM;
    rc = qv__dec_word(d, nd->child[1], r0, r1 - r0 + 1, vals, err);
    uint8_t *o = out;
    for (int64_t pos = start, end = start + n, r = r0; !rc && pos < end; r++) {
        uint64_t e;
        if (r > r1) {
            rc = bad_runs(err, nd, r);
            break;
        }
        if ((rc = lazy_end(d, nd, c, r, &e, err))) break;
        if (e <= (uint64_t)pos) {
            rc = bad_runs(err, nd, r);
            break;
        }
        int64_t stop = (int64_t)e < end ? (int64_t)e : end, m = stop - pos;
        fill(o, w, m, vals + (size_t)(r - r0) * w);
        o += (size_t)m * w;
        pos = stop;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

int qv__rle_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     void *out, struct qv_error *err) {
    struct rle_cache *c;
    int rc = get_cache(d, nd, &c, err);
    if (rc) return rc;
    if (!c->vals && use_lazy(d, nd, c, n)) return lazy_word(d, nd, c, start, n, out, err);
    const uint64_t *ends;
    if ((rc = load_ends(d, nd, &ends, err))) return rc;
    const int64_t runs = nd->child[0]->count;
    const unsigned w = nd->width;
    if (!c->vals) {
        void *v = qv__mem_alloc(&d->mem, (size_t)(runs ? runs : 1) * w, err);
        if (!v) return ENOMEM;
        if ((rc = qv__dec_word(d, nd->child[1], 0, runs, v, err))) return rc;
        c->vals = v;
    }
    int64_t r = qv__upper_bound(ends, runs, (uint64_t)start);
    switch (w) {
    case 1: runs_uint8_t(out, ends, c->vals, r, start, start + n); break;
    case 2: runs_uint16_t(out, ends, c->vals, r, start, start + n); break;
    case 4: runs_uint32_t(out, ends, c->vals, r, start, start + n); break;
    default: runs_uint64_t(out, ends, c->vals, r, start, start + n); break;
    }
    return 0;
}

int qv__rle_dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     uint8_t *bits, int64_t bit_off, struct qv_error *err) {
    const int64_t runs = nd->child[0]->count;
    if (!nd->child[0]->cache && n <= 4 * QV__VEC) {
        struct rle_cache *c;
        int rc = get_cache(d, nd, &c, err);
        if (rc) return rc;
        if (use_lazy(d, nd, c, n)) {
            int64_t r;
            if ((rc = lazy_find(d, nd, c, start, &r, err))) return rc;
            for (int64_t pos = start, end = start + n; pos < end; r++) {
                uint64_t e;
                if (r >= runs) return bad_runs(err, nd, r);
                if ((rc = lazy_end(d, nd, c, r, &e, err))) return rc;
                if (e <= (uint64_t)pos) return bad_runs(err, nd, r);
                int64_t stop = (int64_t)e < end ? (int64_t)e : end;
                qv_bits_fill(bits, bit_off + (pos - start), stop - pos,
                             (int)((nd->params[0] ^ r) & 1));
                pos = stop;
            }
            return 0;
        }
    }
    const uint64_t *ends;
    int rc = load_ends(d, nd, &ends, err);
    if (rc) return rc;
    int64_t r = qv__upper_bound(ends, runs, (uint64_t)start);
    for (int64_t pos = start, end = start + n; pos < end; r++) {
        int64_t stop = (int64_t)ends[r] < end ? (int64_t)ends[r] : end;
        qv_bits_fill(bits, bit_off + (pos - start), stop - pos, (int)((nd->params[0] ^ r) & 1));
        pos = stop;
    }
    return 0;
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
    .validate = rle_validate,
    .build = rle_build,
    .bool_params = {"first"},
    .children = {"ends", "values"},
};
