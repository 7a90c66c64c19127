/*
 * Dictionary: distinct values once (sorted, so the dictionary itself
 * compresses well, or, when a few values dominate, by descending frequency
 * so the common values get small codes: frequency_pays below), plus a u32
 * code per value. Codes are
 * cascaded (usually bit-packed, or run-end encoded when values repeat in
 * runs); the dictionary is cascaded as values of the parent's type (ALP for
 * floats, FSST for strings, ...). Decoding keeps the decoded dictionary on
 * the node, so random access costs one code lookup per value; a few rows
 * of a large dictionary decode only the entries their codes name.
 */
#include <math.h>

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

#define EMPTY UINT32_MAX

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

/* Merge sort of uint32 indices with a comparator; stable, O(n log n). */
typedef int (*cmp_fn)(const void *ctx, uint32_t a, uint32_t b);
static void msort(uint32_t *a, uint32_t *tmp, int64_t n, cmp_fn cmp, const void *ctx) {
    if (n < 2) return;
    if (n <= 16) {
        for (int64_t i = 1; i < n; i++) {
            uint32_t x = a[i];
            int64_t j = i;
            while (j > 0 && cmp(ctx, a[j - 1], x) > 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return;
    }
    int64_t h = n / 2;
    msort(a, tmp, h, cmp, ctx);
    msort(a + h, tmp, n - h, cmp, ctx);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, (size_t)n * 4);
}

/* The same merge sort with the comparison written in (LESS(x, y): x sorts
 * before y), for the word dictionaries' two orders: the comparator call
 * per step was most of their sorting time. Same steps, so the same order. */
#define DEFINE_MSORT(name, ctx_t, LESS)                                                          \
    static void name(uint32_t *a, uint32_t *tmp, int64_t n, const ctx_t *c) {                    \
        if (n < 2) return;                                                                       \
        if (n <= 16) {                                                                           \
            for (int64_t i = 1; i < n; i++) {                                                    \
                uint32_t x = a[i];                                                               \
                int64_t j = i;                                                                   \
                while (j > 0 && LESS(c, x, a[j - 1])) {                                          \
                    a[j] = a[j - 1];                                                             \
                    j--;                                                                         \
                }                                                                                \
                a[j] = x;                                                                        \
            }                                                                                    \
            return;                                                                              \
        }                                                                                        \
        int64_t h = n / 2;                                                                       \
        name(a, tmp, h, c);                                                                      \
        name(a + h, tmp, n - h, c);                                                              \
        int64_t i = 0, j = h, k = 0;                                                             \
        while (i < h && j < n) tmp[k++] = LESS(c, a[j], a[i]) ? a[j++] : a[i++];                 \
        while (i < h) tmp[k++] = a[i++];                                                         \
        while (j < n) tmp[k++] = a[j++];                                                         \
        memcpy(a, tmp, (size_t)n * 4);                                                           \
    }
#define U64_LESS(v, x, y) ((v)[x] < (v)[y])
#define COUNT_DESC_LESS(cnt, x, y) ((cnt)[x] > (cnt)[y])
DEFINE_MSORT(msort_u64, uint64_t, U64_LESS)
DEFINE_MSORT(msort_count_desc, uint32_t, COUNT_DESC_LESS)

/* Reorders the dictionary: perm lists old indices in sorted order; codes
 * are rewritten to the new ranks. */
static void remap_codes(uint64_t *codes, int64_t n, const uint32_t *perm, uint32_t *rank,
                        int64_t d) {
    for (int64_t i = 0; i < d; i++) rank[perm[i]] = (uint32_t)i;
    for (int64_t i = 0; i < n; i++) codes[i] = rank[codes[i]];
}

/* Frequency order. A skewed dictionary (a few values account for most
 * rows) is reordered by descending count after the value sort (stable, so
 * equal counts keep value order): the frequent values get the small codes,
 * which the codes' cascade turns into fewer bits (patched packs the common
 * codes narrow, the entropy stage's byte-aligned codes give zstd small
 * symbols). Skewed means the counts' entropy is at least a bit below the
 * fixed code width; with a dictionary larger than an eighth of the values
 * the sorted order is kept, since the dictionary itself then weighs as
 * much as the codes and compresses better sorted (msort_count_desc). */

#define SMALL_COUNTS 256
static int frequency_pays(const uint64_t *codes, int64_t n, int64_t d, uint32_t *cnt) {
    if (d < 3 || d * 8 > n) return 0;
    memset(cnt, 0, (size_t)d * 4);
    for (int64_t i = 0; i < n; i++) cnt[codes[i]]++;
    /* c log2 c of the small counts from a table filled as they come up:
     * most entries of a dictionary of thousands share a few small counts,
     * and log2 for each entry was 3% of a flights write (tailnum's 3,800
     * entries a row group). The same sum, term for term. */
    double small[SMALL_COUNTS];
    for (int k = 0; k < SMALL_COUNTS; k++) small[k] = -1;
    double sum = 0;
    for (int64_t j = 0; j < d; j++) {
        const uint32_t c = cnt[j];
        if (c >= SMALL_COUNTS) {
            sum += (double)c * log2((double)c);
        } else if (c) {
            if (small[c] < 0) small[c] = (double)c * log2((double)c);
            sum += small[c];
        }
    }
    const double h = log2((double)n) - sum / (double)n;
    return h + 1.0 <= (double)qv__bits((uint64_t)d - 1);
}

static int64_t table_size(int64_t max_dict) {
    uint64_t t = qv_next_pow2_64((uint64_t)max_dict * 2);
    return t < 64 ? 64 : (int64_t)t;
}

/* The hash table a dictionary builder fills, from the stack: tsize slots
 * (the entry in the slot, all EMPTY) and their keys, then room for
 * max_dict entries of 8 bytes (*ent). NULL when out of memory. */
static uint32_t *table_push(struct qv__enc *e, int64_t tsize, int64_t max_dict, uint64_t **keys,
                            void **ent) {
    *keys = qv__stack_push(&e->stack, (size_t)tsize * 8, e->err);
    uint32_t *slot = *keys ? qv__stack_push(&e->stack, (size_t)tsize * 4, e->err) : NULL;
    *ent = slot ? qv__stack_push(&e->stack, (size_t)max_dict * 8, e->err) : NULL;
    if (!*ent) return NULL;
    memset(slot, 0xff, (size_t)tsize * 4);
    return slot;
}

/* The d entries in their order of entry (perm) and room for the sorts of
 * perm (*tmp), from the stack. NULL when out of memory. */
static uint32_t *perm_push(struct qv__enc *e, int64_t d, uint32_t **tmp) {
    uint32_t *perm = qv__stack_push(&e->stack, (size_t)(d ? d : 1) * 4, e->err);
    *tmp = perm ? qv__stack_push(&e->stack, (size_t)(d ? d : 1) * 4, e->err) : NULL;
    if (!*tmp) return NULL;
    for (int64_t i = 0; i < d; i++) perm[i] = (uint32_t)i;
    return perm;
}

/* Finishes a dictionary node: codes and values children via the cascade. */
static int finish(struct qv__enc *e, struct qv__enode *nd, const uint64_t *codes, int64_t n,
                  int depth) {
    int rc = qv__cascade_int(e, codes, n, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (rc) return rc;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    return 0;
}

int qv__dict_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                         int64_t max_dict, struct qv__enode **out) {
    if (max_dict > n) max_dict = n > 0 ? n : 1;
    const int64_t tsize = table_size(max_dict);
    const unsigned shift = 64 - (unsigned)__builtin_ctzll((uint64_t)tsize);
    struct qv__mark mk = qv__stack_mark(&e->stack);
    int rc = ENOMEM;
    uint64_t *keys;
    void *ent;
    uint32_t *slot = table_push(e, tsize, max_dict, &keys, &ent);
    uint64_t *vals = ent;
    uint64_t *codes = slot ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    if (!codes) goto out;
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        uint64_t h = (x * UINT64_C(0x9E3779B97F4A7C15)) >> shift;
        for (;;) {
            uint32_t s = slot[h];
            if (s == EMPTY) {
                if (d == max_dict) {
                    rc = QV__DECLINED;
                    goto out;
                }
                slot[h] = (uint32_t)d;
                keys[h] = x;
                vals[d] = x;
                codes[i] = (uint64_t)d++;
                break;
            }
            if (keys[h] == x) {
                codes[i] = s;
                break;
            }
            h = (h + 1) & (uint64_t)(tsize - 1);
        }
    }
    {
        uint32_t *tmp, *perm = perm_push(e, d, &tmp);
        uint64_t *sorted = perm ? qv__mem_alloc(&e->mem, (size_t)(d ? d : 1) * 8, e->err) : NULL;
        if (!sorted) goto out;
        msort_u64(perm, tmp, d, vals);
        if (frequency_pays(codes, n, d, slot)) msort_count_desc(perm, tmp, d, slot);
        for (int64_t i = 0; i < d; i++) sorted[i] = vals[perm[i]];
        remap_codes(codes, n, perm, tmp, d);
        struct qv__enode *nd = qv__enode_new(e, QV_ENC_DICT, pt, qv__pt_width(pt), n);
        if (!nd) {
            rc = ENOMEM;
            goto out;
        }
        if (qv__pt_is_float(pt)) {
            /* Floats go back to their own representation so the dictionary
             * can use ALP. */
            void *fv = qv__mem_alloc(&e->mem, (size_t)(d ? d : 1) * qv__pt_width(pt), e->err);
            if (!fv) {
                rc = ENOMEM;
                goto out;
            }
            qv__narrow(sorted, qv__pt_width(pt), d, fv);
            rc = qv__cascade_float(e, fv, d, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
            qv__mem_free(&e->mem, fv);
        } else {
            rc = qv__cascade_int(e, sorted, d, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
        }
        qv__mem_free(&e->mem, sorted);
        if (!rc) rc = finish(e, nd, codes, n, depth);
        if (!rc) *out = nd;
    }
out:
    qv__mem_free(&e->mem, codes);
    qv__stack_release(&e->stack, mk);
    return rc;
}

/* ---- Byte-string dictionaries (binary and fixed-size) ---- */

struct strs {
    const uint64_t *off; /* binary: offsets; fixed: NULL */
    const uint8_t *data;
    uint32_t width;      /* fixed width */
};
static inline const uint8_t *str_at(const struct strs *s, int64_t i, size_t *len) {
    if (s->off) {
        *len = (size_t)(s->off[i + 1] - s->off[i]);
        return s->data + s->off[i];
    }
    *len = s->width;
    return s->data + (size_t)i * s->width;
}

struct str_sort_ctx {
    const struct strs *s;
    const int64_t *first; /* dictionary entry -> first row holding it */
};
static int cmp_str(const void *ctx, uint32_t a, uint32_t b) {
    const struct str_sort_ctx *c = ctx;
    size_t la, lb;
    const uint8_t *pa = str_at(c->s, c->first[a], &la), *pb = str_at(c->s, c->first[b], &lb);
    int r = memcmp(pa, pb, la < lb ? la : lb);
    if (r) return r;
    return (la > lb) - (la < lb);
}

/* A string's key: strings of up to 7 bytes are packed into it exactly
 * (bytes, then the length in the top byte, which stays below 8); longer
 * ones are hashed with the top bit set, so the two kinds never collide and
 * short strings need no byte comparison. */
static inline uint64_t str_key(const uint8_t *p, size_t len, const uint8_t *end) {
    if (len <= 7) {
        uint64_t k = 0;
        if (end - p >= 8) {
            /* One load; the bytes past the string are masked off. */
            memcpy(&k, p, 8);
            k &= (UINT64_C(1) << (8 * len)) - 1;
        } else {
            for (size_t i = 0; i < len; i++) k |= (uint64_t)p[i] << (8 * i);
        }
        return k | (uint64_t)len << 56;
    }
    return qv_hash64(p, len, 0) | UINT64_C(1) << 63;
}

/* memcmp is a call; most dictionary strings are short. Strings of 8 to 32
 * bytes compare as words: the first and last 8 (or 16) bytes, which
 * overlap when shorter, cover every byte without reading past either
 * string. */
static inline int words_equal(const uint8_t *a, const uint8_t *b, size_t at) {
    uint64_t x, y;
    memcpy(&x, a + at, 8);
    memcpy(&y, b + at, 8);
    return x == y;
}
static inline int bytes_equal(const uint8_t *a, const uint8_t *b, size_t len) {
    if (len > 32) return memcmp(a, b, len) == 0;
    if (len >= 16)
        return words_equal(a, b, 0) && words_equal(a, b, 8) && words_equal(a, b, len - 16) &&
               words_equal(a, b, len - 8);
    if (len >= 8) return words_equal(a, b, 0) && words_equal(a, b, len - 8);
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* A small cache in front of the hash table: slot -> the dictionary entry
 * last seen there, with that string's length and its first and last eight
 * bytes (zero padded below eight bytes), found from exactly those (no hash
 * of the whole string). A string of 16 bytes or fewer is all in those
 * words, so a match is equality; a longer one also compares its bytes
 * with the entry's. Columns of few distinct strings (flags, modes) find
 * nearly every row there; the table, and so the entries and their order,
 * are as without it (it only answers for strings already entered). */
#define STR_CACHE 256
struct str_cache {
    uint64_t a, b;
    uint32_t len, code; /* code EMPTY: unused */
};
static inline void cache_words(const uint8_t *p, size_t len, const uint8_t *end, uint64_t *a,
                               uint64_t *b) {
    *a = *b = 0;
    if (len >= 8) {
        memcpy(a, p, 8);
        memcpy(b, p + len - 8, 8);
    } else if (end - p >= 8) {
        memcpy(a, p, 8);
        *a &= (UINT64_C(1) << (8 * len)) - 1;
    } else {
        for (size_t i = 0; i < len; i++) *a |= (uint64_t)p[i] << (8 * i);
    }
}
static inline unsigned cache_slot(uint64_t a, uint64_t b, size_t len) {
    uint64_t h = (a ^ (uint64_t)len) * UINT64_C(0x9E3779B97F4A7C15) + b * UINT64_C(0xC2B2AE3D27D4EB4F);
    return (unsigned)(h >> 56);
}

static int dict_encode_strs(struct qv__enc *e, const struct strs *s, int64_t n, int pt,
                            int depth, int64_t max_dict, struct qv__enode **out) {
    if (max_dict > n) max_dict = n > 0 ? n : 1;
    const int64_t tsize = table_size(max_dict);
    struct qv__mark mk = qv__stack_mark(&e->stack);
    int rc = ENOMEM;
    uint64_t *hashes;
    void *ent;
    uint32_t *slot = table_push(e, tsize, max_dict, &hashes, &ent);
    int64_t *first = ent;
    uint64_t *codes = slot ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    uint8_t *vdata = NULL;
    uint64_t *voff = NULL;
    if (!codes) goto out;
    struct str_cache cache[STR_CACHE];
    for (int k = 0; k < STR_CACHE; k++) cache[k].code = EMPTY;
    int64_t d = 0;
    const uint8_t *s_end = s->off ? s->data + s->off[n] : s->data + (size_t)n * s->width;
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *p = str_at(s, i, &len);
        uint64_t wa, wb;
        cache_words(p, len, s_end, &wa, &wb);
        struct str_cache *ce = &cache[cache_slot(wa, wb, len)];
        if (ce->code != EMPTY && ce->len == len && ce->a == wa && ce->b == wb) {
            size_t l2;
            if (len <= 16 || bytes_equal(p, str_at(s, first[ce->code], &l2), len)) {
                codes[i] = ce->code;
                continue;
            }
        }
        uint64_t hv = str_key(p, len, s_end);
        uint64_t h = mix64(hv) & (uint64_t)(tsize - 1);
        for (;;) {
            uint32_t sl = slot[h];
            if (sl == EMPTY) {
                if (d == max_dict) {
                    rc = QV__DECLINED;
                    goto out;
                }
                slot[h] = (uint32_t)d;
                hashes[h] = hv;
                first[d] = i;
                *ce = (struct str_cache){wa, wb, (uint32_t)len, (uint32_t)d};
                codes[i] = (uint64_t)d++;
                break;
            }
            if (hashes[h] == hv) {
                size_t l2;
                const uint8_t *q;
                /* Short keys are the string itself: equal keys, equal strings. */
                if (len <= 7 || ((q = str_at(s, first[sl], &l2)), l2 == len && bytes_equal(p, q, len))) {
                    *ce = (struct str_cache){wa, wb, (uint32_t)len, sl};
                    codes[i] = sl;
                    break;
                }
            }
            h = (h + 1) & (uint64_t)(tsize - 1);
        }
    }
    {
        uint32_t *tmp, *perm = perm_push(e, d, &tmp);
        if (!perm) goto out;
        struct str_sort_ctx sc = {s, first};
        msort(perm, tmp, d, cmp_str, &sc);
        if (depth == 0 && e->extremes && d > 0 && s->data == e->root_data && n == e->root_n) {
            /* Every value of the caller's input is in the dictionary, now
             * in value order: its ends are the input's extremes. */
            e->extremes->found = 1;
            e->extremes->min_row = first[perm[0]];
            e->extremes->max_row = first[perm[d - 1]];
        }
        if (frequency_pays(codes, n, d, slot)) msort_count_desc(perm, tmp, d, slot);
        uint64_t total = 0;
        for (int64_t i = 0; i < d; i++) {
            size_t len;
            str_at(s, first[perm[i]], &len);
            total += len;
        }
        vdata = qv__mem_alloc(&e->mem, total ? total : 1, e->err);
        voff = vdata && s->off ? qv__mem_alloc(&e->mem, (size_t)(d + 1) * 8, e->err) : NULL;
        if (!vdata || (s->off && !voff)) goto out;
        uint64_t at = 0;
        for (int64_t i = 0; i < d; i++) {
            size_t len;
            const uint8_t *p = str_at(s, first[perm[i]], &len);
            if (voff) voff[i] = at;
            memcpy(vdata + at, p, len);
            at += len;
        }
        if (voff) voff[d] = at;
        remap_codes(codes, n, perm, tmp, d);
        struct qv__enode *nd = qv__enode_new(e, QV_ENC_DICT, pt, s->off ? 0 : s->width, n);
        if (!nd) goto out;
        if (s->off) rc = qv__cascade_bin(e, voff, vdata, d, depth + 1, QV_ENC_AUTO, &nd->child[1]);
        else rc = qv__cascade_fixed(e, vdata, d, s->width, depth + 1, QV_ENC_AUTO, &nd->child[1]);
        if (!rc) rc = finish(e, nd, codes, n, depth);
        if (!rc) {
            /* A plain dictionary borrows vdata: keep it in the arena until
             * the encode call ends. */
            vdata = NULL;
            *out = nd;
        }
    }
out:
    qv__mem_free(&e->mem, voff);
    qv__mem_free(&e->mem, vdata);
    qv__mem_free(&e->mem, codes);
    qv__stack_release(&e->stack, mk);
    return rc;
}

int qv__dict_encode_bin(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                        int depth, int64_t max_dict, struct qv__enode **out) {
    struct strs s = {off, data, 0};
    return dict_encode_strs(e, &s, n, QV__PT_BIN, depth, max_dict, out);
}

int qv__dict_encode_fixed(struct qv__enc *e, const uint8_t *v, int64_t n, uint32_t width,
                          int depth, int64_t max_dict, struct qv__enode **out) {
    struct strs s = {NULL, v, width};
    return dict_encode_strs(e, &s, n, QV__PT_FIXED, depth, max_dict, out);
}

/* ---- Decoding ---- */

struct dict_cache {
    int loaded;
    int short16; /* binary: every entry <= 32 bytes, data has 32 bytes of slack */
    int fixed;   /* binary: every entry has this many bytes (1..8), entry k at k * fixed; 0: not so */
    uint64_t *lens; /* binary: each entry's length */
    /* binary, when every entry has at most 16 bytes and there are at most
     * SLOTS_MAX of them (not fixed): entry k's bytes at slots + 16 k
     * (zero-padded), its length at len8[k]; NULL: not so */
    uint8_t *slots, *len8;
    int64_t d;
    int64_t lazy;        /* entries decoded one by one before loading */
    void *vals;          /* word / fixed: d * width bytes */
    uint64_t *off;       /* binary: d + 1 offsets */
    uint8_t *data;       /* binary bytes */
};

static int get_cache(struct qv__dec *d, struct qv__node *nd, struct dict_cache **out,
                     struct qv_error *err) {
    struct dict_cache *c = nd->cache;
    if (!c) {
        c = qv__mem_small(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        c->d = nd->child[1]->count;
        nd->cache = c;
    }
    *out = c;
    return 0;
}

/* Random access into a large dictionary decodes just the entries its codes
 * name (each a point decode of the values child) instead of the whole
 * dictionary; once the entries so decoded reach a quarter of it, loading
 * it all is cheaper. Compressed dictionaries are loaded (a point decode
 * would decompress a frame per entry). */
static int use_lazy(const struct qv__dec *d, const struct qv__node *nd, struct dict_cache *c,
                    int64_t n) {
    const struct qv__node *vn = nd->child[1];
    if (c->loaded || c->d < 256 || vn->enc == QV_ENC_ZSTD || vn->enc == QV_ENC_LZ4 ||
        vn->enc == QV_ENC_ANS)
        return 0;
    int64_t want = d->want > n ? d->want : n;
    if ((uint64_t)want * 16 > (uint64_t)c->d || c->lazy + n > c->d / 4) return 0;
    c->lazy += n;
    return 1;
}

/* Short entries in slots of 16 bytes: emit_bin then copies an entry with
 * one 16-byte load and store from an address the code alone gives, and its
 * length from a byte table, instead of two offsets loaded first (20% less
 * time per value in a loop of its own, 3-7 byte entries, 7 and 4,000 of
 * them). At most SLOTS_MAX entries, so the table (16 bytes an entry, a few
 * times the entries' own bytes) stays small. */
#define SLOTS_MAX 4096
static int make_slots(struct qv__dec *d, struct dict_cache *c, struct qv_error *err) {
    uint8_t *t = qv__mem_buf(&d->mem, (size_t)c->d * 17, err);
    if (!t) return ENOMEM;
    memset(t, 0, (size_t)c->d * 16);
    for (int64_t i = 0; i < c->d; i++) {
        memcpy(t + i * 16, c->data + c->off[i], c->lens[i]);
        t[c->d * 16 + i] = (uint8_t)c->lens[i];
    }
    c->slots = t;
    c->len8 = t + c->d * 16;
    return 0;
}

static int load(struct qv__dec *d, struct qv__node *nd, struct dict_cache **out,
                struct qv_error *err) {
    struct dict_cache *c;
    int rc = get_cache(d, nd, &c, err);
    if (rc) return rc;
    *out = c;
    if (c->loaded) return 0;
    struct qv__node *vn = nd->child[1];
    if (nd->pt == QV__PT_BIN) {
        c->off = qv__mem_buf(&d->mem, (size_t)(c->d + 1) * 8, err);
        if (!c->off) return ENOMEM;
        struct qv__binout o;
        memset(&o, 0, sizeof o);
        o.off64 = 1;
        o.offsets = c->off;
        o.r = d->r;
        o.mem = &d->mem;
        if (vn->enc == QV_ENC_PLAIN && vn->buf_len[0] <= 2048) {
            /* A small plain dictionary: its bytes are at most the buffer,
             * so a block from the bump region holds them with the slack
             * below (the decode never needs to grow it). */
            o.cap = (size_t)vn->buf_len[0] + 48;
            uint8_t *p = qv__mem_small(&d->mem, o.cap + QV_ALIGNMENT, err);
            if (!p) return ENOMEM;
            o.data = (uint8_t *)qv_align_up((uintptr_t)p); /* as an allocation's */
        }
        c->off[0] = 0;
        rc = qv__dec_bin(d, vn, 0, c->d, &o, err);
        c->data = o.data;
        if (rc) return rc;
        /* 32 bytes of slack past the last entry for fixed-size copies. */
        if ((rc = qv__binout_reserve(&o, 32, err))) return rc;
        c->data = o.data;
        if (o.i != c->d) return qv__corrupt(err, vn, "dictionary decoded to %lld values", (long long)o.i);
        c->lens = qv__mem_buf(&d->mem, (size_t)(c->d ? c->d : 1) * 8, err);
        if (!c->lens) return ENOMEM;
        c->short16 = 1;
        const uint64_t first = c->d ? c->off[1] - c->off[0] : 0;
        int same = c->d > 0 && first >= 1 && first <= 8;
        for (int64_t i = 0; i < c->d; i++) {
            const uint64_t len = c->off[i + 1] - c->off[i];
            if (len > 32) c->short16 = 0;
            same &= len == first;
            c->lens[i] = len;
        }
        c->fixed = same ? (int)first : 0;
        if (!c->fixed && c->d > 0 && c->d <= SLOTS_MAX) {
            int fits = 1;
            for (int64_t i = 0; i < c->d; i++) fits &= c->lens[i] <= 16;
            if (fits && (rc = make_slots(d, c, err))) return rc;
        }
    } else {
        c->vals = qv__mem_buf(&d->mem, (size_t)(c->d ? c->d : 1) * nd->width, err);
        if (!c->vals) return ENOMEM;
        if ((rc = qv__dec_word(d, vn, 0, c->d, c->vals, err))) return rc;
    }
    c->loaded = 1;
    return 0;
}

int qv__dict_entries(struct qv__dec *d, struct qv__node *nd, const void **vals,
                     const uint64_t **off, const uint8_t **data, int64_t *dsize,
                     struct qv_error *err) {
    struct dict_cache *c;
    int rc = load(d, nd, &c, err);
    if (rc) return rc;
    *vals = c->vals;
    *off = c->off;
    *data = c->data;
    *dsize = c->d;
    return 0;
}

static int bad_code(struct qv_error *err, const struct qv__node *nd, uint32_t code, int64_t row,
                    int64_t dsize) {
    return qv__corrupt(err, nd, "code %u at value %lld is outside the dictionary of %lld",
                       code, (long long)row, (long long)dsize);
}

/* The first code of codes[0..m) at or above dsize, or -1. The whole block
 * is checked first with a vectorized maximum (AVX2 where the CPU has it),
 * so the gather below runs without a branch per value; only a block that
 * holds a bad code is searched again to name it. */
static QV__ALWAYS_INLINE uint32_t codes_max_body(const uint32_t *codes, int64_t m) {
    uint32_t mx = 0;
    for (int64_t i = 0; i < m; i++) mx = codes[i] > mx ? codes[i] : mx;
    return mx;
}
static uint32_t codes_max_generic(const uint32_t *codes, int64_t m) {
    return codes_max_body(codes, m);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 uint32_t codes_max_avx2(const uint32_t *codes, int64_t m) {
    return codes_max_body(codes, m);
}
#endif

uint32_t qv__codes_max(const uint32_t *codes, int64_t m) {
    return QV__DISPATCH2(codes_max, codes, m);
}

static int64_t first_bad(const uint32_t *codes, int64_t m, uint32_t dsize) {
    if (qv__codes_max(codes, m) < dsize) return -1;
    for (int64_t i = 0; i < m; i++)
        if (codes[i] >= dsize) return i;
    return -1;
}

/* Codes already checked: a plain indexed copy, four at a time so the
 * loads of independent entries overlap. */
#define GATHER(T)                                                                                \
    static void gather_##T(T *restrict o, const T *restrict vals,                              \
                           const uint32_t *restrict codes, int64_t m) {                         \
        int64_t i = 0;                                                                           \
        for (; i + 4 <= m; i += 4) {                                                             \
            T a = vals[codes[i]], b = vals[codes[i + 1]];                                        \
            T c = vals[codes[i + 2]], e = vals[codes[i + 3]];                                    \
            o[i] = a;                                                                            \
            o[i + 1] = b;                                                                        \
            o[i + 2] = c;                                                                        \
            o[i + 3] = e;                                                                        \
        }                                                                                        \
        for (; i < m; i++) o[i] = vals[codes[i]];                                                \
    }
GATHER(uint8_t)
GATHER(uint16_t)
GATHER(uint32_t)
GATHER(uint64_t)

/* A dictionary of at most four 64-bit or eight 32-bit entries fits one
 * 256-bit register: each code becomes a lane permutation instead of a load
 * (run values of sorted keys, flags and small enumerations); larger 32- and
 * 64-bit tables use the hardware gather. Codes checked by the caller;
 * returns 0 when no variant applies (the caller gathers with plain loads). */
static int table_gather_generic(void *o, const void *vals, const uint32_t *codes, int64_t m,
                                unsigned w, uint32_t dsize) {
    (void)o, (void)vals, (void)codes, (void)m, (void)w, (void)dsize;
    return 0;
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 int table_gather_avx2(void *o, const void *vals, const uint32_t *codes,
                                             int64_t m, unsigned w, uint32_t dsize) {
    uint32_t tab[8] = {0};
    if (w == 8 && dsize <= 4) {
        memcpy(tab, vals, (size_t)dsize * 8);
        const __m256i t = _mm256_loadu_si256((const __m256i *)(const void *)tab);
        const __m256i lo_hi = _mm256_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1);
        uint64_t *out = o;
        int64_t i = 0;
        for (; i + 4 <= m; i += 4) {
            /* Code c selects the 32-bit lanes 2c and 2c + 1. */
            __m256i c = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(codes + i)));
            __m256i idx = _mm256_or_si256(_mm256_slli_epi64(_mm256_or_si256(c, _mm256_slli_epi64(c, 32)), 1), lo_hi);
            _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_permutevar8x32_epi32(t, idx));
        }
        for (; i < m; i++) memcpy(out + i, tab + 2 * codes[i], 8);
        return 1;
    }
    if (w == 4 && dsize <= 8) {
        memcpy(tab, vals, (size_t)dsize * 4);
        const __m256i t = _mm256_loadu_si256((const __m256i *)(const void *)tab);
        uint32_t *out = o;
        int64_t i = 0;
        for (; i + 8 <= m; i += 8) {
            __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(codes + i));
            _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_permutevar8x32_epi32(t, c));
        }
        for (; i < m; i++) out[i] = tab[codes[i]];
        return 1;
    }
    /* Larger tables: the hardware gather, four 64-bit or eight 32-bit
     * entries an instruction (the baseline build's vectorized gather
     * assembles them from scalar loads and is slower than this). */
    if (dsize > (uint32_t)INT32_MAX) return 0; /* the gather's indices are signed */
    if (w == 8) {
        const long long *t = vals;
        uint64_t *out = o;
        int64_t i = 0;
        for (; i + 8 <= m; i += 8) {
            __m128i c0 = _mm_loadu_si128((const __m128i *)(const void *)(codes + i));
            __m128i c1 = _mm_loadu_si128((const __m128i *)(const void *)(codes + i + 4));
            _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_i32gather_epi64(t, c0, 8));
            _mm256_storeu_si256((__m256i *)(void *)(out + i + 4), _mm256_i32gather_epi64(t, c1, 8));
        }
        for (; i < m; i++) out[i] = ((const uint64_t *)vals)[codes[i]];
        return 1;
    }
    if (w == 4) {
        const int *t = vals;
        uint32_t *out = o;
        int64_t i = 0;
        for (; i + 8 <= m; i += 8) {
            __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(codes + i));
            _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_i32gather_epi32(t, c, 4));
        }
        for (; i < m; i++) out[i] = ((const uint32_t *)vals)[codes[i]];
        return 1;
    }
    return 0;
}
#endif

/* Codes of [start, start + n) (n <= QV__VEC) with each checked against
 * the dictionary size. */
static int codes_of(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                    uint32_t *codes, int64_t dsize, struct qv_error *err) {
    int rc = qv__dec_word(d, nd->child[0], start, n, codes, err);
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++)
        if (codes[i] >= (uint64_t)dsize) return bad_code(err, nd, codes[i], start + i, dsize);
    return 0;
}

/* The entries of m checked codes into o, w bytes each. */
static void lookup(const struct dict_cache *c, const uint32_t *codes, int64_t m, unsigned w,
                   uint8_t *o) {
    if (QV__DISPATCH2(table_gather, o, c->vals, codes, m, w, (uint32_t)c->d)) return;
    switch (w) {
    case 1: gather_uint8_t(o, c->vals, codes, m); break;
    case 2: gather_uint16_t((uint16_t *)(void *)o, c->vals, codes, m); break;
    case 4: gather_uint32_t((uint32_t *)(void *)o, c->vals, codes, m); break;
    case 8: gather_uint64_t((uint64_t *)(void *)o, c->vals, codes, m); break;
    default:
        for (int64_t i = 0; i < m; i++)
            memcpy(o + (size_t)i * w, (const uint8_t *)c->vals + (size_t)codes[i] * w, w);
        break;
    }
}

static int lazy_word(struct qv__dec *d, struct qv__node *nd, struct dict_cache *c,
                     int64_t start, int64_t n, void *out, struct qv_error *err) {
    uint32_t codes[64];
    const unsigned w = nd->width;
    uint8_t *o = out;
    for (int64_t b = 0; b < n; b += 64) {
        int64_t m = n - b < 64 ? n - b : 64;
        int rc = codes_of(d, nd, start + b, m, codes, c->d, err);
        for (int64_t i = 0; !rc && i < m; i++)
            rc = qv__dec_word(d, nd->child[1], codes[i], 1, o + (size_t)(b + i) * w, err);
        if (rc) return rc;
    }
    return 0;
}

int qv__dict_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                      void *out, struct qv_error *err) {
    struct dict_cache *c;
    int rc = get_cache(d, nd, &c, err);
    if (rc) return rc;
    if (use_lazy(d, nd, c, n)) return lazy_word(d, nd, c, start, n, out, err);
    if ((rc = load(d, nd, &c, err))) return rc;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint32_t *codes = qv__stack_push(&d->stack, QV__VEC * 4, err);
    if (!codes) return ENOMEM;
    const unsigned w = nd->width;
    const uint32_t dsize = (uint32_t)c->d;
    uint8_t *o = out;
    for (int64_t b = 0; b < n; b += QV__VEC) {
        /* Blocks aligned to the codes' vectors when the range is. */
        int64_t m = n - b < QV__VEC ? n - b : QV__VEC;
        if ((rc = qv__dec_word(d, nd->child[0], start + b, m, codes, err))) break;
        const int64_t bad = first_bad(codes, m, dsize);
        if (bad >= 0) {
            rc = bad_code(err, nd, codes[bad], start + b + bad, c->d);
            break;
        }
        lookup(c, codes, m, w, o);
        o += (size_t)m * w;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* The cache for a take of k values; *lazy when its entries are to be
 * decoded one by one, else the dictionary is loaded. */
static int take_open(struct qv__dec *d, struct qv__node *nd, int64_t k, struct dict_cache **c,
                     int *lazy, struct qv_error *err) {
    int rc = get_cache(d, nd, c, err);
    if (rc) return rc;
    *lazy = use_lazy(d, nd, *c, k);
    return *lazy ? 0 : load(d, nd, c, err);
}

/* The codes of rows[0..m) (sorted, m <= 1024) into codes[0..m), through
 * the codes' own take (a bit-packed or patched child reads a sparse
 * vector's codes in place; others decode each touched vector's span and
 * pick), and checked: only the codes of the rows taken are. */
static int take_codes(struct qv__dec *d, struct qv__node *nd, const struct dict_cache *c,
                      const int64_t *rows, int64_t m, uint32_t *codes, struct qv_error *err) {
    int rc = qv__take_word(d, nd->child[0], rows, m, 4, codes, err);
    if (rc) return rc;
    const int64_t bad = first_bad(codes, m, (uint32_t)c->d);
    return bad < 0 ? 0 : bad_code(err, nd, codes[bad], rows[bad], c->d);
}

/* Values at rows[0..k) (sorted, duplicates allowed), 1024 rows at a time:
 * the codes of just those rows (take_codes), looked up. The generic take
 * decodes the whole span of each vector to values and picks from them: a
 * lookup per row of the span rather than per row asked (a filter keeping
 * a tenth of the rows). */
static int dict_take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t k,
                          void *out, struct qv_error *err) {
    struct dict_cache *c;
    int lazy;
    int rc = take_open(d, nd, k, &c, &lazy, err);
    if (rc) return rc;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint32_t *codes = qv__stack_push(&d->stack, QV__VEC * 4, err);
    if (!codes) return ENOMEM;
    const unsigned w = nd->width;
    for (int64_t i = 0; i < k && !rc; i += QV__VEC) {
        const int64_t m = k - i < QV__VEC ? k - i : QV__VEC;
        uint8_t *dst = (uint8_t *)out + (size_t)i * w;
        if ((rc = take_codes(d, nd, c, rows + i, m, codes, err))) break;
        if (!lazy) {
            lookup(c, codes, m, w, dst);
            continue;
        }
        for (int64_t t = 0; t < m && !rc; t++)
            rc = qv__dec_word(d, nd->child[1], codes[t], 1, dst + (size_t)t * w, err);
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* The entries of codes[0..m) (checked) appended to o. */
static int emit_bin(const struct dict_cache *c, const uint32_t *codes, int64_t m,
                    struct qv__binout *o, struct qv_error *err) {
    const uint64_t *off = c->off;
    const uint64_t *lens = c->lens;
    uint64_t total = 0;
    if (c->fixed) {
        total = (uint64_t)m * (uint64_t)c->fixed;
    } else if (c->len8) {
        for (int64_t i = 0; i < m; i++) total += c->len8[codes[i]];
    } else {
        for (int64_t i = 0; i < m; i++) total += lens[codes[i]];
    }
    if (o->cap - o->size < total + 40) {
        int rc = qv__binout_reserve(o, total + 32, err);
        if (rc) return rc;
    }
    if (!o->off64 && o->size + total > (size_t)INT32_MAX)
        return qv_error_set(err, EOVERFLOW, "decode: binary data exceeds the int32 offset range");
    uint8_t *dst = o->data + o->size;
    size_t at = o->size;
    if (c->fixed) {
        /* Entries of one length (flags, codes of a few letters): the
         * offsets are an arithmetic sequence, entry k is at k * len,
         * and each value is one 8-byte copy (the output has 40 bytes
         * of slack, the dictionary 32). */
        const size_t len = (size_t)c->fixed;
        const uint8_t *base = c->data + off[0];
        if (len == 1) {
            for (int64_t i = 0; i < m; i++) dst[i] = base[codes[i]];
        } else {
            for (int64_t i = 0; i < m; i++) memcpy(dst + (size_t)i * len, base + (size_t)codes[i] * len, 8);
        }
        if (o->off64) {
            int64_t *w = (int64_t *)o->offsets + o->i + 1;
            for (int64_t i = 0; i < m; i++) w[i] = (int64_t)(at + (size_t)(i + 1) * len);
        } else {
            int32_t *w = (int32_t *)o->offsets + o->i + 1;
            for (int64_t i = 0; i < m; i++) w[i] = (int32_t)(at + (size_t)(i + 1) * len);
        }
        at += (size_t)m * len;
    } else if (c->slots) {
        const uint8_t *slots = c->slots, *len8 = c->len8;
        for (int64_t i = 0; i < m; i++) {
            const uint32_t k = codes[i];
            memcpy(dst, slots + (size_t)k * 16, 16);
            dst += len8[k];
            at += len8[k];
            if (o->off64) ((int64_t *)o->offsets)[o->i + 1 + i] = (int64_t)at;
            else ((int32_t *)o->offsets)[o->i + 1 + i] = (int32_t)at;
        }
    } else if (c->short16) {
        /* Every entry fits 32 bytes and is stored with 32 readable
         * bytes: one fixed-size copy per value, no length branch. */
        for (int64_t i = 0; i < m; i++) {
            uint64_t a = off[codes[i]], len = off[codes[i] + 1] - a;
            memcpy(dst, c->data + a, 32);
            dst += len;
            at += len;
            if (o->off64) ((int64_t *)o->offsets)[o->i + 1 + i] = (int64_t)at;
            else ((int32_t *)o->offsets)[o->i + 1 + i] = (int32_t)at;
        }
    } else {
        for (int64_t i = 0; i < m; i++) {
            uint64_t a = off[codes[i]], len = off[codes[i] + 1] - a;
            memcpy(dst, c->data + a, len);
            dst += len;
            at += len;
            if (o->off64) ((int64_t *)o->offsets)[o->i + 1 + i] = (int64_t)at;
            else ((int32_t *)o->offsets)[o->i + 1 + i] = (int32_t)at;
        }
    }
    o->size = at;
    o->i += m;
    return 0;
}

int qv__dict_dec_bin(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     struct qv__binout *o, struct qv_error *err) {
    struct dict_cache *c;
    int rc = get_cache(d, nd, &c, err);
    if (rc) return rc;
    if (use_lazy(d, nd, c, n)) {
        /* Each entry straight from the values child into the output. */
        uint32_t codes[64];
        for (int64_t b = 0; b < n; b += 64) {
            int64_t m = n - b < 64 ? n - b : 64;
            rc = codes_of(d, nd, start + b, m, codes, c->d, err);
            for (int64_t i = 0; !rc && i < m; i++) {
                int64_t before = o->i;
                rc = qv__dec_bin(d, nd->child[1], codes[i], 1, o, err);
                if (!rc && o->i != before + 1)
                    rc = qv__corrupt(err, nd->child[1], "dictionary entry %u not decoded", codes[i]);
            }
            if (rc) return rc;
        }
        return 0;
    }
    if ((rc = load(d, nd, &c, err))) return rc;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint32_t *codes = qv__stack_push(&d->stack, QV__VEC * 4, err);
    if (!codes) return ENOMEM;
    const uint32_t dsize = (uint32_t)c->d;
    for (int64_t b = 0; b < n && !rc; b += QV__VEC) {
        int64_t m = n - b < QV__VEC ? n - b : QV__VEC;
        if ((rc = qv__dec_word(d, nd->child[0], start + b, m, codes, err))) break;
        int64_t bad = first_bad(codes, m, dsize);
        if (bad >= 0) {
            rc = bad_code(err, nd, codes[bad], start + b + bad, c->d);
            break;
        }
        rc = emit_bin(c, codes, m, o, err);
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* Binary values at rows[0..k) (sorted, duplicates allowed) appended to o.
 * As dict_take_word: the codes of the rows asked for (take_codes), and
 * only their entries copied. The generic take decodes every string of
 * each vector's span and copies the ones asked for a second time: the
 * elements of a list column's rows that passed a filter. */
static int dict_take_bin(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t k,
                         struct qv__binout *o, struct qv_error *err) {
    struct dict_cache *c;
    int lazy;
    int rc = take_open(d, nd, k, &c, &lazy, err);
    if (rc) return rc;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint32_t *codes = qv__stack_push(&d->stack, QV__VEC * 4, err);
    if (!codes) return ENOMEM;
    for (int64_t i = 0; i < k && !rc; i += QV__VEC) {
        const int64_t m = k - i < QV__VEC ? k - i : QV__VEC;
        if ((rc = take_codes(d, nd, c, rows + i, m, codes, err))) break;
        if (!lazy) {
            rc = emit_bin(c, codes, m, o, err);
            continue;
        }
        for (int64_t t = 0; t < m && !rc; t++) {
            int64_t before = o->i;
            rc = qv__dec_bin(d, nd->child[1], codes[t], 1, o, err);
            if (!rc && o->i != before + 1)
                rc = qv__corrupt(err, nd->child[1], "dictionary entry %u not decoded", codes[t]);
        }
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ---- */

/* Word, fixed and binary. Child 0: the codes (u32, one per value); child 1:
 * the dictionary, same type, 1..count values (none for no values). */
static int dict_validate(const struct qv__node *nd, struct qv_error *err) {
    const int64_t n = nd->count;
    int rc;
    if (nd->pt == QV__PT_BOOL) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 0, 0, 2, err))) return rc;
    if ((rc = qv__want_child(nd, 0, QV__PT_U32, n, err))) return rc;
    if ((rc = qv__want_child(nd, 1, nd->pt, -1, err))) return rc;
    if (nd->child[1]->count > (n > 0 ? n : 0) || (n > 0 && nd->child[1]->count == 0))
        return qv__corrupt(err, nd, "dictionary of %lld values for %lld codes",
                           (long long)nd->child[1]->count, (long long)n);
    return 0;
}

static int dict_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    const int64_t n = s->n;
    if (qv__pt_is_word(s->pt)) {
        /* Room for twice the sampled distinct count; a dictionary that
         * grows beyond it is declined (the estimate was wrong). */
        const struct qv__istats *t = s->s;
        double est = qv__istats_distinct(t, n);
        int64_t max_dict = s->forced ? n : 2 * (int64_t)est + 1024;
        if (!s->forced && max_dict > n / 2 + 1) max_dict = n / 2 + 1;
        return qv__dict_encode_word(e, s->u64, n, s->pt, s->depth, max_dict, out);
    }
    int64_t max_dict = s->forced ? n : n / 2 + 1;
    if (s->pt == QV__PT_BIN)
        return qv__dict_encode_bin(e, s->off, s->data, n, s->depth, max_dict, out);
    if (s->pt == QV__PT_FIXED)
        return qv__dict_encode_fixed(e, s->raw, n, s->width, s->depth, max_dict, out);
    return qv__enc_unsupported(e, QV_ENC_DICT, s->pt);
}

const struct qv__encoding qv__enc_dict = {
    .id = QV_ENC_DICT,
    .name = "dict",
    .decode_cost = 2,
    .dec_word = qv__dict_dec_word,
    .dec_bin = qv__dict_dec_bin,
    .take_word = dict_take_word,
    .take_bin = dict_take_bin,
    .validate = dict_validate,
    .build = dict_build,
    .children = {"codes", "values"},
};
