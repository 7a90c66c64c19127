/*
 * FSST (Fast Static Symbol Table, Boncz, Neumann, Leis, VLDB 2020),
 * implemented from the paper's description.
 *
 * A table of up to 255 symbols (1..16 bytes each) is trained on a sample of
 * the chunk's strings; each string is then compressed on its own into a
 * sequence of one-byte codes, code 255 being an escape followed by a
 * literal byte. Strings stay individually addressable: the compressed
 * offsets go to an integer child (cascaded, usually delta + bit-packed
 * compressed lengths), so a range decode touches only its own strings.
 *
 * Training: five rounds over the sample. Each round compresses the sample
 * with the current table, counts how often each symbol (and each single
 * byte) occurs and how often each pair of consecutive symbols occurs, and
 * builds the next table from the 255 candidates (symbols, and
 * concatenations of pairs up to 16 bytes) with the highest gain
 * (count x length).
 *
 * Deviation from the paper: symbols are up to 16 bytes, not 8. Text made of
 * words ("carefully ", "requests. ") then takes about one code per word
 * instead of two, at the price of 16-byte instead of 8-byte stores when
 * decoding (one SSE store either way).
 *
 * Lookup while compressing: symbols of 3+ bytes sit in a hash table keyed
 * by their first three bytes (one symbol per slot; a symbol that finds its
 * slot taken is dropped from the table rather than wasting a code), and a
 * 64K-entry table maps every two-byte prefix to the best symbol of length
 * 2 or 1 (or the escape). The longest candidate that matches wins.
 *
 * Node: params [symbol count, raw bytes]; buffer 0 = symbol lengths then
 * symbol bytes; buffer 1 = codes; child 0 = n + 1 offsets into the codes.
 */
#include <stdlib.h>

#include "encoding/enc_internal.h"

#define NSYM_MAX 255
#define ESC 255
#define HASH_BITS 12
#define HASH_SIZE (1 << HASH_BITS)
#define SAMPLE_BYTES (32 << 10)
#define ROUNDS 5

#define SYM_MAX 16

__extension__ typedef unsigned __int128 u128;

struct hslot {
    u128 val;    /* symbol bytes, zero padded */
    uint8_t len; /* 0 = empty */
    uint8_t code;
};

struct qv__fsst_table {
    int nsym;
    u128 sym[NSYM_MAX];
    uint8_t len[NSYM_MAX];
    /* (len << 8) | code of the best symbol of length <= 2 for a two-byte
     * prefix; escapes are (1 << 8) | ESC. */
    uint16_t short_code[65536];
    uint16_t byte_code[256];
    struct hslot hash[HASH_SIZE];
};

static inline u128 load16(const uint8_t *p, size_t rem) {
    u128 w = 0;
    memcpy(&w, p, rem < SYM_MAX ? rem : SYM_MAX);
    return w;
}

static inline u128 len_mask(unsigned len) {
    return len >= SYM_MAX ? ~(u128)0 : ((u128)1 << (8 * len)) - 1;
}

static inline unsigned hash3(u128 w) {
    uint32_t k = (uint32_t)w & 0xFFFFFF;
    return (unsigned)((k * 2654435761u) >> (32 - HASH_BITS));
}

/* Builds lookup structures; drops 3+ byte symbols whose hash slot is taken
 * (callers pass symbols in decreasing gain) and renumbers the codes. */
static void build_lookup(struct qv__fsst_table *t) {
    memset(t->hash, 0, sizeof t->hash);
    int keep = 0;
    for (int i = 0; i < t->nsym; i++) {
        if (t->len[i] >= 3) {
            struct hslot *h = &t->hash[hash3(t->sym[i])];
            if (h->len) continue;
            h->len = t->len[i];
            h->val = t->sym[i];
        }
        t->sym[keep] = t->sym[i];
        t->len[keep] = t->len[i];
        keep++;
    }
    t->nsym = keep;
    for (int i = 0; i < 256; i++) t->byte_code[i] = (1 << 8) | ESC;
    memset(t->hash, 0, sizeof t->hash);
    for (int i = 0; i < t->nsym; i++) {
        if (t->len[i] == 1) t->byte_code[(unsigned)t->sym[i] & 0xFF] = (uint16_t)((1 << 8) | i);
        if (t->len[i] >= 3) {
            struct hslot *h = &t->hash[hash3(t->sym[i])];
            h->len = t->len[i];
            h->val = t->sym[i];
            h->code = (uint8_t)i;
        }
    }
    for (int i = 0; i < 65536; i++) t->short_code[i] = t->byte_code[i & 0xFF];
    for (int i = 0; i < t->nsym; i++)
        if (t->len[i] == 2) t->short_code[(unsigned)t->sym[i] & 0xFFFF] = (uint16_t)((2 << 8) | i);
}

/* Finds the symbol at p (rem bytes left in the string, `room` readable
 * bytes from p): returns (len << 8) | code. */
static inline unsigned match(const struct qv__fsst_table *t, const uint8_t *p, size_t rem,
                             size_t room) {
    u128 w;
    if (room >= SYM_MAX) {
        memcpy(&w, p, SYM_MAX);
        if (rem < SYM_MAX) w &= len_mask((unsigned)rem);
    } else {
        w = load16(p, rem);
    }
    if (rem >= 3) {
        const struct hslot *h = &t->hash[hash3(w)];
        if (h->len && h->len <= rem && (w & len_mask(h->len)) == h->val)
            return ((unsigned)h->len << 8) | h->code;
    }
    if (rem >= 2) return t->short_code[(unsigned)w & 0xFFFF];
    return t->byte_code[(unsigned)w & 0xFF];
}

/* Compresses one string; returns bytes written (at most 2 * len). */
static size_t compress1(const struct qv__fsst_table *t, const uint8_t *s, size_t len,
                        size_t room, uint8_t *out) {
    size_t p = 0, o = 0;
    while (p < len) {
        unsigned m = match(t, s + p, len - p, room - p);
        unsigned code = m & 0xFF, l = m >> 8;
        out[o++] = (uint8_t)code;
        if (code == ESC) out[o++] = s[p];
        p += l;
    }
    return o;
}

/* ---- Training ---- */

struct cand {
    u128 val;
    uint8_t len;
    uint64_t gain;
};

struct cand_set {
    struct cand *v;
    int64_t n, cap;
    int32_t *slot; /* open addressing on (val, len) */
    int64_t slots;
};

static void cand_add(struct cand_set *cs, u128 val, unsigned len, uint64_t gain) {
    uint64_t h = ((uint64_t)val * UINT64_C(0x9E3779B97F4A7C15) ^
                  (uint64_t)(val >> 64) * UINT64_C(0xC2B2AE3D27D4EB4F)) + len;
    h ^= h >> 29;
    for (int64_t i = (int64_t)(h & (uint64_t)(cs->slots - 1));; i = (i + 1) & (cs->slots - 1)) {
        int32_t s = cs->slot[i];
        if (s < 0) {
            if (cs->n == cs->cap) return; /* full: drop (the set is sized generously) */
            cs->slot[i] = (int32_t)cs->n;
            cs->v[cs->n++] = (struct cand){val, (uint8_t)len, gain};
            return;
        }
        if (cs->v[s].val == val && cs->v[s].len == len) {
            cs->v[s].gain += gain;
            return;
        }
    }
}

static int cand_cmp(const void *a, const void *b) {
    const struct cand *x = a, *y = b;
    if (x->gain != y->gain) return x->gain < y->gain ? 1 : -1;
    if (x->len != y->len) return x->len < y->len ? 1 : -1;
    return (x->val > y->val) - (x->val < y->val);
}

/* Min-heap on "best first" order: the root is the worst kept candidate. */
static void heap_up(struct cand *h, int64_t i) {
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (cand_cmp(&h[i], &h[p]) <= 0) break;
        struct cand t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}
static void heap_down(struct cand *h, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && cand_cmp(&h[l], &h[w]) > 0) w = l;
        if (r < n && cand_cmp(&h[r], &h[w]) > 0) w = r;
        if (w == i) return;
        struct cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

int qv__fsst_train(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                   struct qv__fsst_table **out) {
    struct qv__fsst_table *t = qv__mem_calloc(&e->mem, sizeof *t, e->err);
    if (!t) return ENOMEM;
    struct qv__mark mk = qv__stack_mark(&e->stack);
    /* Sample: strings spread evenly until SAMPLE_BYTES. */
    uint64_t total = off[n] - off[0];
    int64_t step = 1;
    if (total > SAMPLE_BYTES && n > 0) {
        step = (int64_t)(total / SAMPLE_BYTES);
        if (step < 1) step = 1;
    }
    const int64_t NC = 512; /* 0..254 symbols, 256..511 single bytes */
    uint32_t *c1 = qv__stack_push(&e->stack, (size_t)NC * 4, e->err);
    uint16_t *c2 = c1 ? qv__stack_push(&e->stack, (size_t)NC * NC * 2, e->err) : NULL;
    struct cand_set cs = {0};
    cs.cap = 1 << 16;
    cs.slots = 1 << 17;
    cs.v = c2 ? qv__stack_push(&e->stack, (size_t)cs.cap * sizeof *cs.v, e->err) : NULL;
    cs.slot = cs.v ? qv__stack_push(&e->stack, (size_t)cs.slots * 4, e->err) : NULL;
    if (!cs.slot) {
        qv__stack_release(&e->stack, mk);
        qv__mem_free(&e->mem, t);
        return ENOMEM;
    }
    t->nsym = 0;
    build_lookup(t);
    for (int round = 0; round < ROUNDS; round++) {
        memset(c1, 0, (size_t)NC * 4);
        memset(c2, 0, (size_t)NC * NC * 2);
        for (int64_t i = 0; i < n; i += step) {
            const uint8_t *s = data + off[i];
            size_t len = (size_t)(off[i + 1] - off[i]), p = 0;
            int prev = -1;
            while (p < len) {
                unsigned m = match(t, s + p, len - p, len - p);
                unsigned code = m & 0xFF, l = m >> 8;
                int c = code == ESC ? 256 + s[p] : (int)code;
                c1[c]++;
                if (code != ESC && l > 1) c1[256 + s[p]]++; /* lets single bytes compete */
                if (prev >= 0 && c2[prev * NC + c] < UINT16_MAX) c2[prev * NC + c]++;
                prev = c;
                p += l;
            }
        }
        cs.n = 0;
        memset(cs.slot, 0xff, (size_t)cs.slots * 4);
        for (int c = 0; c < NC; c++) {
            if (!c1[c]) continue;
            u128 v = c >= 256 ? (u128)(c - 256) : t->sym[c];
            unsigned l = c >= 256 ? 1 : t->len[c];
            cand_add(&cs, v, l, (uint64_t)c1[c] * l);
        }
        for (int a = 0; a < NC; a++) {
            if (!c1[a]) continue;
            u128 va = a >= 256 ? (u128)(a - 256) : t->sym[a];
            unsigned la = a >= 256 ? 1 : t->len[a];
            if (la >= SYM_MAX) continue;
            for (int b = 0; b < NC; b++) {
                uint16_t cnt = c2[a * NC + b];
                if (!cnt) continue;
                u128 vb = b >= 256 ? (u128)(b - 256) : t->sym[b];
                unsigned lb = b >= 256 ? 1 : t->len[b];
                unsigned l = la + lb > SYM_MAX ? SYM_MAX : la + lb;
                u128 v = (va | (vb << (8 * la))) & len_mask(l);
                cand_add(&cs, v, l, (uint64_t)cnt * l);
            }
        }
        /* Only the best 255 matter: move them to the front (selection by
         * a min-heap of the current best), then sort just those. */
        int64_t keep = cs.n < NSYM_MAX ? cs.n : NSYM_MAX;
        for (int64_t i = 0; i < keep; i++) heap_up(cs.v, i);
        for (int64_t i = keep; i < cs.n; i++)
            if (cand_cmp(&cs.v[i], &cs.v[0]) < 0) {
                cs.v[0] = cs.v[i];
                heap_down(cs.v, keep, 0);
            }
        qsort(cs.v, (size_t)keep, sizeof *cs.v, cand_cmp);
        int k = 0;
        for (int64_t i = 0; i < keep; i++) {
            t->sym[k] = cs.v[i].val;
            t->len[k] = cs.v[i].len;
            k++;
        }
        t->nsym = k;
        build_lookup(t);
    }
    qv__stack_release(&e->stack, mk);
    *out = t;
    return 0;
}

int qv__fsst_nsym(const struct qv__fsst_table *t) { return t->nsym; }

double qv__fsst_sample_ratio(struct qv__fsst_table *t, const uint64_t *off, const uint8_t *data,
                             int64_t n) {
    uint64_t total = off[n] - off[0], raw = 0, comp = 0;
    int64_t step = total > SAMPLE_BYTES && n > 0 ? (int64_t)(total / SAMPLE_BYTES) : 1;
    if (step < 1) step = 1;
    uint8_t buf[512];
    for (int64_t i = 0; i < n; i += step) {
        const uint8_t *s = data + off[i];
        size_t len = (size_t)(off[i + 1] - off[i]);
        if (len > sizeof buf / 2) len = sizeof buf / 2; /* long strings: their head is enough */
        raw += len;
        comp += compress1(t, s, len, len, buf);
    }
    return raw ? (double)comp / (double)raw : 1.0;
}

int qv__fsst_encode(struct qv__enc *e, struct qv__fsst_table *t, const uint64_t *off,
                    const uint8_t *data, int64_t n, int depth, struct qv__enode **out) {
    uint64_t total = off[n] - off[0];
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_FSST, QV__PT_BIN, 0, n);
    uint8_t *tab = nd ? qv__mem_alloc(&e->mem, (size_t)t->nsym * (SYM_MAX + 1) + 1, e->err) : NULL;
    uint8_t *codes = tab ? qv__mem_alloc(&e->mem, (size_t)total * 2 + 16, e->err) : NULL;
    uint64_t *coff = codes ? qv__mem_alloc(&e->mem, (size_t)(n + 1) * 8, e->err) : NULL;
    if (!coff) {
        qv__mem_free(&e->mem, codes);
        qv__mem_free(&e->mem, tab);
        return ENOMEM;
    }
    size_t tl = 0;
    for (int i = 0; i < t->nsym; i++) tab[tl++] = t->len[i];
    for (int i = 0; i < t->nsym; i++) {
        memcpy(tab + tl, &t->sym[i], t->len[i]);
        tl += t->len[i];
    }
    uint64_t o = 0;
    coff[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        o += compress1(t, data + off[i], (size_t)(off[i + 1] - off[i]),
                       (size_t)(off[n] - off[i]), codes + o);
        coff[i + 1] = o;
    }
    int rc = qv__cascade_int(e, coff, n + 1, QV__PT_U64, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    qv__mem_free(&e->mem, coff);
    if (rc) {
        qv__mem_free(&e->mem, codes);
        qv__mem_free(&e->mem, tab);
        return rc;
    }
    nd->nparams = 2;
    nd->params[0] = t->nsym;
    nd->params[1] = (int64_t)total;
    nd->nbufs = 2;
    nd->buf[0] = tab;
    nd->buf_len[0] = tl;
    nd->buf[1] = codes;
    nd->buf_len[1] = o;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decoding ---- */

struct fsst_dec_table {
    uint8_t sym[256][SYM_MAX]; /* ESC and unused codes: length 0 */
    uint8_t len[256];
};

static int load_table(struct qv__dec *d, struct qv__node *nd, struct fsst_dec_table **out,
                      struct qv_error *err) {
    if (nd->cache) {
        *out = nd->cache;
        return 0;
    }
    struct fsst_dec_table *t = qv__mem_small(&d->mem, sizeof *t, err);
    if (!t) return ENOMEM;
    const int nsym = (int)nd->params[0];
    const uint8_t *b = nd->buf[0];
    uint64_t at = (uint64_t)nsym;
    for (int i = 0; i < nsym; i++) {
        unsigned l = b[i];
        if (l < 1 || l > SYM_MAX || at + l > nd->buf_len[0])
            return qv__corrupt(err, nd, "symbol %d has length %u", i, l);
        memcpy(t->sym[i], b + at, l);
        t->len[i] = (uint8_t)l;
        at += l;
    }
    if (at != nd->buf_len[0]) return qv__corrupt(err, nd, "symbol table has trailing bytes");
    nd->cache = t;
    *out = t;
    return 0;
}

int qv__fsst_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                 struct qv__binout *o, struct qv_error *err) {
    struct fsst_dec_table *t = NULL;
    int rc = load_table(d, nd, &t, err);
    if (rc) return rc;
    if (start == 0 && n == nd->count && (rc = qv__binout_reserve(o, (size_t)nd->params[1], err)))
        return rc;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    const int64_t blk = QV__VEC;
    uint64_t *off = qv__stack_push(&d->stack, (size_t)((n < blk ? n : blk) + 1) * 8, err);
    if (!off) return ENOMEM;
    const uint8_t *codes = nd->buf[1];
    const uint64_t limit = nd->buf_len[1];
    for (int64_t b = 0; b < n && !rc; b += blk) {
        int64_t m = n - b < blk ? n - b : blk;
        if ((rc = qv__dec_u64(d, nd->child[0], start + b, m + 1, off, err))) break;
        /* Validate the block's offsets, then make room for its worst case
         * once, so the per-code loop has no checks but the code's own. */
        for (int64_t i = 0; i < m; i++)
            if (off[i + 1] < off[i]) {
                rc = qv__corrupt(err, nd, "code offsets decrease at value %lld", (long long)(start + b + i));
                goto done;
            }
        if (off[m] > limit) {
            rc = qv__corrupt(err, nd, "code offset %llu beyond the %llu code bytes",
                             (unsigned long long)off[m], (unsigned long long)limit);
            goto done;
        }
        if (!nd->inner && (rc = qv__dec_touch_bytes(d, codes + off[0], off[m] - off[0], err))) goto done;
        size_t worst = (size_t)(off[m] - off[0]) * SYM_MAX + SYM_MAX;
        if (o->cap - o->size < worst + 8 && (rc = qv__binout_reserve(o, worst, err))) goto done;
        uint8_t *const base = o->data;
        uint8_t *dst = base + o->size;
        for (int64_t i = 0; i < m; i++) {
            uint64_t p = off[i];
            const uint64_t q = off[i + 1];
            while (p < q) {
                unsigned c = codes[p++];
                if (__builtin_expect(c == ESC, 0)) {
                    if (p >= q) {
                        rc = qv__corrupt(err, nd, "escape at the end of value %lld",
                                         (long long)(start + b + i));
                        goto done;
                    }
                    *dst++ = codes[p++];
                    continue;
                }
                unsigned l = t->len[c];
                if (__builtin_expect(l == 0, 0)) {
                    rc = qv__corrupt(err, nd, "code %u beyond the %lld symbols", c,
                                     (long long)nd->params[0]);
                    goto done;
                }
                memcpy(dst, t->sym[c], SYM_MAX);
                dst += l;
            }
            size_t at = (size_t)(dst - base);
            if (o->off64) {
                ((int64_t *)o->offsets)[o->i + 1 + i] = (int64_t)at;
            } else {
                if (at > (size_t)INT32_MAX) {
                    rc = qv_error_set(err, EOVERFLOW, "decode: binary data exceeds the int32 offset range");
                    goto done;
                }
                ((int32_t *)o->offsets)[o->i + 1 + i] = (int32_t)at;
            }
        }
        o->size = (size_t)(dst - base);
        o->i += m;
    }
done:
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ----
 * Dispatch around the kernels above: the record names the node-level
 * decoder (one call per range); the symbol loops stay in qv__fsst_dec. */

/* Binary. Params: symbol count (0..255), total raw bytes (at most 16 per
 * code byte); buffer 0: symbol table (nsym lengths 1..16, then the
 * symbols' bytes); buffer 1: codes; child 0: n + 1 u64 offsets into the
 * codes. */
static int fsst_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (nd->pt != QV__PT_BIN) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 2, 2, 1, err))) return rc;
    if (nd->params[0] < 0 || nd->params[0] > 255)
        return qv__corrupt(err, nd, "%lld symbols", (long long)nd->params[0]);
    if (nd->params[1] < 0 || (uint64_t)nd->params[1] > QV_ENC_MAX_BYTES ||
        (uint64_t)nd->params[1] > nd->buf_len[1] * 16)
        return qv__corrupt(err, nd, "raw size %lld for %llu code bytes", (long long)nd->params[1],
                           (unsigned long long)nd->buf_len[1]);
    if (nd->buf_len[0] < 2 * (uint64_t)nd->params[0] ||
        nd->buf_len[0] > 17 * (uint64_t)nd->params[0])
        return qv__corrupt(err, nd, "symbol table of %llu bytes for %lld symbols",
                           (unsigned long long)nd->buf_len[0], (long long)nd->params[0]);
    return qv__want_child(nd, 0, QV__PT_U64, nd->count + 1, err);
}

/* Uses the table the cascade trained while estimating, or trains one. */
static int fsst_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (s->pt != QV__PT_BIN) return qv__enc_unsupported(e, QV_ENC_FSST, s->pt);
    struct qv__fsst_table *t = s->fsst;
    int rc = 0;
    if (!t && (rc = qv__fsst_train(e, s->off, s->data, s->n, &t))) return rc;
    rc = qv__fsst_encode(e, t, s->off, s->data, s->n, s->depth, out);
    if (!s->fsst) qv__mem_free(&e->mem, t);
    return rc;
}

const struct qv__encoding qv__enc_fsst = {
    .id = QV_ENC_FSST,
    .name = "fsst",
    .decode_cost = 4,
    .dec_bin = qv__fsst_dec,
    .validate = fsst_validate,
    .build = fsst_build,
    .params = {"symbols", "raw_bytes"},
    .children = {"offsets"},
};
