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
 * Training: rounds over the sample, as in the paper (five, or twelve on
 * large chunks: see SAMPLE_BYTES), the early ones on a growing part of it,
 * the last on all of it. Each round compresses its part with the current
 * table, counts how often each symbol (and each single byte) occurs and
 * how often each pair of consecutive symbols occurs, and builds the next
 * table from the 255 candidates (symbols, and concatenations of pairs up
 * to 16 bytes) with the highest gain (count x length) that the lookup can
 * hold (below).
 *
 * Deviation from the paper: symbols are up to 16 bytes, not 8. Text made of
 * words ("carefully ", "requests. ") then takes about one code per word
 * instead of two, at the price of 16-byte instead of 8-byte stores when
 * decoding (one SSE store either way).
 *
 * Lookup while compressing: symbols of 3+ bytes sit in a hash table keyed
 * by their first three bytes (one symbol per slot: training skips a
 * candidate whose slot a better one took and gives its code to the next
 * candidate, so text whose words share their first bytes still fills the
 * table), and a 64K-entry table maps every two-byte prefix to the best
 * symbol of length 2 or 1 (or the escape). The longest candidate that
 * matches wins.
 *
 * Node: params [symbol count, raw bytes]; buffer 0 = symbol lengths then
 * symbol bytes; buffer 1 = codes; child 0 = n + 1 offsets into the codes.
 */
#include <stdlib.h>

#include "base/cpu_internal.h"
#include "base/dcheck.h"
#include "encoding/enc_internal.h"

#define NSYM_MAX 255
#define ESC 255
#define HASH_BITS 12
#define HASH_SIZE (1 << HASH_BITS)
/* The training budget. Chunks under 512 KiB: a sample of 16 KiB (the FSST
 * paper's size) and five rounds, where training would otherwise cost more
 * than compressing the chunk (vega airports' names, 3,376 strings:
 * training was half of the table's write). Larger chunks: 64 KiB and
 * twelve rounds, a small part of the time compressing the chunk takes,
 * and a smaller chunk: symbols grow by merging pairs, at most doubling
 * each round, so five rounds leave text's long symbols unfinished
 * (lineitem's l_comment, chunks of 3.5 MB: 53.9 MB with 32 KiB and five
 * rounds, 51.0 MB with these). */
#define SAMPLE_BYTES (64 << 10)
#define SAMPLE_BYTES_SMALL (16 << 10)
#define SMALL_CHUNK (512 << 10)
#define ROUNDS 12
#define ROUNDS_SMALL 5

/* Every step-th string is sampled. */
static int64_t sample_step(uint64_t total, int64_t n, int scale) {
    const uint64_t want = total < SMALL_CHUNK ? SAMPLE_BYTES_SMALL : SAMPLE_BYTES * (uint64_t)scale;
    if (total <= want || n <= 0) return 1;
    /* Rounded up, so the sample is at most `want` (rounded down, a chunk
     * of 1.9 x want bytes was sampled whole: vega airports' cities, 29 KiB,
     * trained on all of it; with the sample at 16 KiB the table writes 12%
     * faster and 0.9% larger). */
    int64_t step = (int64_t)((total + want - 1) / want);
    return step < 1 ? 1 : step;
}

#define SYM_MAX 16
/* Candidates first ranked per round to fill 255 codes past hash
 * collisions (more when they do not). */
#define FILL_FIRST (2 * NSYM_MAX)

__extension__ typedef unsigned __int128 u128;

/* A 3+ byte symbol as the hash lookup compares it: it matches at a
 * position whose next bytes w satisfy (w & mask) == val and whose string
 * has len or more bytes left; res is (len << 8) | code. Entry 0 stands for
 * an empty slot and never matches (mask 0, val 1). */
struct hent {
    u128 val;
    u128 mask;
    uint32_t len;
    uint32_t res;
};

struct qv__fsst_table {
    int nsym;
    u128 sym[NSYM_MAX];
    uint8_t len[NSYM_MAX];
    /* (len << 8) | code of the best symbol of length <= 2 for a two-byte
     * prefix; escapes are (1 << 8) | ESC. */
    uint16_t short_code[65536];
    uint16_t byte_code[256];
    /* Hash slot -> index into hent (code + 1; 0 = empty). One byte per
     * slot, so the slots and the entries (16 KiB together) stay in the L1
     * cache while compressing, where 32-byte slots (128 KiB) did not. */
    uint8_t slot[HASH_SIZE];
    struct hent hent[NSYM_MAX + 1];
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
    /* The first pass only needs to know which slots are taken: a bitmap of
     * 512 bytes instead of clearing the 64 KiB table twice per call (this
     * runs after every training round, on every string chunk). */
    uint64_t taken[HASH_SIZE / 64];
    memset(taken, 0, sizeof taken);
    int keep = 0;
    for (int i = 0; i < t->nsym; i++) {
        if (t->len[i] >= 3) {
            unsigned hs = hash3(t->sym[i]);
            uint64_t bit = UINT64_C(1) << (hs & 63);
            if (taken[hs >> 6] & bit) continue;
            taken[hs >> 6] |= bit;
        }
        t->sym[keep] = t->sym[i];
        t->len[keep] = t->len[i];
        keep++;
    }
    t->nsym = keep;
    for (int i = 0; i < 256; i++) t->byte_code[i] = (1 << 8) | ESC;
    memset(t->slot, 0, sizeof t->slot);
    t->hent[0] = (struct hent){.val = 1, .mask = 0, .len = 0, .res = 0};
    for (int i = 0; i < t->nsym; i++) {
        if (t->len[i] == 1) t->byte_code[(unsigned)t->sym[i] & 0xFF] = (uint16_t)((1 << 8) | i);
        if (t->len[i] >= 3) {
            t->slot[hash3(t->sym[i])] = (uint8_t)(i + 1);
            t->hent[i + 1] = (struct hent){.val = t->sym[i], .mask = len_mask(t->len[i]),
                                           .len = t->len[i], .res = ((unsigned)t->len[i] << 8) | (unsigned)i};
        }
    }
    /* short_code[(hi << 8) | lo] starts as byte_code[lo]: 256 copies of
     * the byte codes, row by row (a gather by i & 0xFF over all 65536
     * entries was 14% of writing a small table of strings). */
    for (int hi = 0; hi < 256; hi++) memcpy(&t->short_code[hi << 8], t->byte_code, sizeof t->byte_code);
    for (int i = 0; i < t->nsym; i++)
        if (t->len[i] == 2) t->short_code[(unsigned)t->sym[i] & 0xFFFF] = (uint16_t)((2 << 8) | i);
}

/* Finds the symbol at p (rem bytes left in the string, `room` readable
 * bytes from p): returns (len << 8) | code. The bytes of w past the
 * string's end (when room > rem) need no masking: the hash reads three
 * bytes only when rem >= 3, the short codes two when rem >= 2, and a hash
 * entry matches only when its length fits in rem, so its mask covers the
 * string's bytes alone. The hash hit is a select, not a branch: whether
 * the long symbol matches is what the data decides, and mispredicting it
 * cost more than the lookup. */
static QV__ALWAYS_INLINE unsigned match(const struct qv__fsst_table *t, const uint8_t *p,
                                        size_t rem, size_t room) {
    u128 w;
    if (room >= SYM_MAX) memcpy(&w, p, SYM_MAX);
    else w = load16(p, rem);
    if (rem < 3) return rem >= 2 ? t->short_code[(unsigned)w & 0xFFFF] : t->byte_code[(unsigned)w & 0xFF];
    unsigned sc = t->short_code[(unsigned)w & 0xFFFF];
    const struct hent *h = &t->hent[t->slot[hash3(w)]];
    unsigned hit = ((w & h->mask) == h->val) & (h->len <= rem);
    unsigned sel = 0u - hit;
    return (h->res & sel) | (sc & ~sel);
}

/* Compresses one string; returns bytes written (at most 2 * len). Writes
 * the literal after every code and keeps it only after an escape, so one
 * byte past the returned count may be written (within 2 * len). */
static size_t compress1(const struct qv__fsst_table *t, const uint8_t *s, size_t len,
                        size_t room, uint8_t *out) {
    size_t p = 0, o = 0;
    while (p < len) {
        unsigned m = match(t, s + p, len - p, room - p);
        unsigned code = m & 0xFF;
        out[o] = (uint8_t)code;
        out[o + 1] = s[p];
        o += 1 + (code == ESC);
        p += m >> 8;
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

/* A candidate's rank as one integer, larger is better: gain, then length,
 * then the earlier candidate (cs.n <= 2^16). Selecting on these instead
 * of on 32-byte candidates made the selection of 510 of them cheaper than
 * that of 255 had been. */
#define KEY_IDX_BITS 16
#define KEY_LEN_BITS 5
#define KEY_GAIN_MAX ((UINT64_C(1) << (64 - KEY_IDX_BITS - KEY_LEN_BITS)) - 1)
static inline uint64_t cand_key(const struct cand *c, int64_t i) {
    uint64_t g = c->gain < KEY_GAIN_MAX ? c->gain : KEY_GAIN_MAX;
    return g << (KEY_IDX_BITS + KEY_LEN_BITS) | (uint64_t)c->len << KEY_IDX_BITS |
           (uint64_t)((1 << KEY_IDX_BITS) - 1 - i);
}
static inline int64_t key_idx(uint64_t k) {
    return (1 << KEY_IDX_BITS) - 1 - (int64_t)(k & ((1 << KEY_IDX_BITS) - 1));
}

/* Min-heap of keys: the root is the worst kept. */
static void heap_down(uint64_t *h, int64_t n, int64_t i) {
    uint64_t x = h[i];
    for (;;) {
        int64_t l = 2 * i + 1, w = l;
        if (l >= n) break;
        if (l + 1 < n && h[l + 1] < h[l]) w = l + 1;
        if (h[w] >= x) break;
        h[i] = h[w];
        i = w;
    }
    h[i] = x;
}

int qv__fsst_train(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                   int scale, struct qv__fsst_table **out) {
    struct qv__fsst_table *t = qv__mem_calloc(&e->mem, sizeof *t, e->err);
    if (!t) return ENOMEM;
    struct qv__mark mk = qv__stack_mark(&e->stack);
    /* Sample: strings spread evenly (sample_step). */
    const int64_t step = sample_step(off[n] - off[0], n, scale);
    const int64_t NC = 512; /* 0..254 symbols, 256..511 single bytes */
    /* Pair counts: a 512 x 512 table read and cleared only where a bit of
     * `seen` says it was written. A sample touches a few thousand pairs;
     * clearing and scanning the whole 512 KiB table five times per chunk
     * was most of the training time of small string chunks. */
    const int64_t NW = NC * NC / 64;
    uint32_t *c1 = qv__stack_push(&e->stack, (size_t)NC * 4, e->err);
    uint16_t *c2 = c1 ? qv__stack_push(&e->stack, (size_t)NC * NC * 2, e->err) : NULL;
    uint64_t *seen = c2 ? qv__stack_push(&e->stack, (size_t)NW * 8, e->err) : NULL;
    /* A round adds at most one candidate per symbol it counts (a pair
     * with the one before) plus the 512 symbols and bytes, and counts at
     * most a symbol per sampled byte: the set is sized for that (never
     * dropping a candidate it would have kept at its largest, 2^16), not
     * at its largest for every chunk (3.5 MiB of scratch charged to the
     * writer for a few KiB of strings). */
    uint64_t sampled = 0;
    for (int64_t i = 0; i < n; i += step) sampled += off[i + 1] - off[i];
    struct cand_set cs = {0};
    cs.cap = sampled + NC < (1 << 16) ? (int64_t)sampled + NC : 1 << 16;
    const int64_t max_slots = (int64_t)qv_next_pow2_64((uint64_t)cs.cap * 2);
    cs.v = seen ? qv__stack_push(&e->stack, (size_t)cs.cap * sizeof *cs.v, e->err) : NULL;
    cs.slot = cs.v ? qv__stack_push(&e->stack, (size_t)max_slots * 4, e->err) : NULL;
    uint64_t *keys = cs.slot ? qv__stack_push(&e->stack, (size_t)cs.cap * sizeof *keys, e->err) : NULL;
    if (!keys) {
        qv__stack_release(&e->stack, mk);
        qv__mem_free(&e->mem, t);
        return ENOMEM;
    }
    t->nsym = 0;
    build_lookup(t);
    const int rounds = off[n] - off[0] < SMALL_CHUNK ? ROUNDS_SMALL : ROUNDS;
    for (int round = 0; round < rounds; round++) {
        memset(c1, 0, (size_t)NC * 4);
        memset(seen, 0, (size_t)NW * 8);
        int64_t pairs = 0;
        /* Early rounds count on a growing part of the sample (in each group
         * of 128 sampled strings, the first 8, growing to all of them in
         * the last round): their tables are rough anyway, and the rounds
         * then cost fewer passes over the sample. Five rounds grow their
         * part by 30 strings a round (2.7 passes; vega airports' names:
         * write 20% faster, 0.4% larger); twelve by the square of the
         * round (4.7 passes, as ten rounds of linear growth cost, and
         * lineitem's l_comment 0.6% smaller than those). Strings that the
         * early parts miss still get their symbols: test_enc_fsst_edges'
         * test_repetitive_compress. */
        const int64_t r1 = rounds - 1;
        const int64_t frac = round == r1                ? 128
                             : rounds == ROUNDS_SMALL ? 8 + 120 * round / r1
                                                      : 8 + 120 * round * round / (r1 * r1);
        int64_t nth = -1;
        for (int64_t i = 0; i < n; i += step) {
            if ((++nth & 127) >= frac) continue;
            const uint8_t *s = data + off[i];
            size_t len = (size_t)(off[i + 1] - off[i]), p = 0;
            /* Bytes readable from s (up to the end of the data): short
             * strings then match with one 16-byte load, not a copy of
             * their few bytes; the result is the same. */
            const size_t room = (size_t)(off[n] - off[i]);
            int prev = -1;
            while (p < len) {
                unsigned m = match(t, s + p, len - p, room - p);
                unsigned code = m & 0xFF, l = m >> 8;
                int c = code == ESC ? 256 + s[p] : (int)code;
                c1[c]++;
                if (code != ESC && l > 1) c1[256 + s[p]]++; /* lets single bytes compete */
                if (prev >= 0) {
                    int64_t at = prev * NC + c;
                    uint64_t bit = UINT64_C(1) << (at & 63);
                    if (!(seen[at >> 6] & bit)) {
                        seen[at >> 6] |= bit;
                        c2[at] = 1;
                        pairs++;
                    } else if (c2[at] < UINT16_MAX) {
                        c2[at]++;
                    }
                }
                prev = c;
                p += l;
            }
        }
        /* The slot table only needs room for this round's candidates (at
         * most every counted symbol and pair); the candidates, their order
         * and what a full set drops are as with the largest table. */
        int64_t ncand = pairs;
        for (int c = 0; c < NC; c++) ncand += c1[c] != 0;
        if (ncand > cs.cap) ncand = cs.cap;
        cs.slots = (int64_t)qv_next_pow2_64((uint64_t)ncand * 2);
        if (cs.slots < 64) cs.slots = 64;
        if (cs.slots > max_slots) cs.slots = max_slots;
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
            /* Pairs (a, b) in increasing b, as a scan of the row would. */
            for (int64_t wi = a * NC / 64; wi < (a + 1) * NC / 64; wi++) {
                for (uint64_t bits = seen[wi]; bits; bits &= bits - 1) {
                    int64_t at = wi * 64 + __builtin_ctzll(bits);
                    int b = (int)(at - a * NC);
                    uint16_t cnt = c2[at];
                    u128 vb = b >= 256 ? (u128)(b - 256) : t->sym[b];
                    unsigned lb = b >= 256 ? 1 : t->len[b];
                    unsigned l = la + lb > SYM_MAX ? SYM_MAX : la + lb;
                    u128 v = (va | (vb << (8 * la))) & len_mask(l);
                    cand_add(&cs, v, l, (uint64_t)cnt * l);
                }
            }
        }
        /* The best 255 whose hash slots are free: a 3+ byte symbol whose
         * slot a better one took would be dropped by build_lookup, so the
         * next candidate takes its code instead (on text, symbols sharing
         * their first three bytes -- "pending ", "pendin", ... -- left a
         * quarter of the codes unused). Only the best `want` candidates
         * are ranked (selected by a heap of their keys whose root is the
         * worst kept, then heap-sorted, best first): twice the codes, and
         * four times more while they fill fewer than 255 codes and
         * candidates remain. */
        int k = 0;
        for (int64_t want = FILL_FIRST;; want *= 4) {
            const int64_t keep = cs.n < want ? cs.n : want;
            for (int64_t i = 0; i < keep; i++) keys[i] = cand_key(&cs.v[i], i);
            for (int64_t i = keep / 2 - 1; i >= 0; i--) heap_down(keys, keep, i);
            for (int64_t i = keep; i < cs.n; i++) {
                uint64_t key = cand_key(&cs.v[i], i);
                if (key > keys[0]) {
                    keys[0] = key;
                    heap_down(keys, keep, 0);
                }
            }
            for (int64_t end = keep - 1; end > 0; end--) {
                uint64_t tmp = keys[0];
                keys[0] = keys[end];
                keys[end] = tmp;
                heap_down(keys, end, 0);
            }
            uint64_t taken[HASH_SIZE / 64];
            memset(taken, 0, sizeof taken);
            k = 0;
            for (int64_t i = 0; i < keep && k < NSYM_MAX; i++) {
                const struct cand *c = &cs.v[key_idx(keys[i])];
                if (c->len >= 3) {
                    unsigned hs = hash3(c->val);
                    uint64_t bit = UINT64_C(1) << (hs & 63);
                    if (taken[hs >> 6] & bit) continue;
                    taken[hs >> 6] |= bit;
                }
                t->sym[k] = c->val;
                t->len[k] = c->len;
                k++;
            }
            if (k == NSYM_MAX || keep == cs.n) break;
        }
        t->nsym = k;
        build_lookup(t);
    }
    qv__stack_release(&e->stack, mk);
    *out = t;
    return 0;
}

int qv__fsst_nsym(const struct qv__fsst_table *t) { return t->nsym; }

_Static_assert(QV__LESSON_SYMS == NSYM_MAX && QV__LESSON_SYM_BYTES == SYM_MAX,
               "a lesson holds a whole table");

int qv__fsst_from_lesson(struct qv__enc *e, const struct qv__lesson *l,
                         struct qv__fsst_table **out) {
    struct qv__fsst_table *t = qv__mem_calloc(&e->mem, sizeof *t, e->err);
    if (!t) return ENOMEM;
    t->nsym = l->nsym;
    for (int i = 0; i < l->nsym; i++) {
        t->len[i] = l->len[i];
        memcpy(&t->sym[i], l->sym[i], SYM_MAX);
    }
    /* The trained table's symbols have distinct hash slots already: the
     * lookup drops none of them, and the codes stay the trained ones. */
    build_lookup(t);
    *out = t;
    return 0;
}

void qv__fsst_to_lesson(const struct qv__fsst_table *t, double ratio, struct qv__lesson *l) {
    l->nsym = t->nsym;
    l->ratio = ratio;
    for (int i = 0; i < t->nsym; i++) {
        l->len[i] = t->len[i];
        memcpy(l->sym[i], &t->sym[i], SYM_MAX);
    }
}

double qv__fsst_sample_ratio(struct qv__fsst_table *t, const uint64_t *off, const uint8_t *data,
                             int64_t n, uint64_t budget) {
    uint64_t raw = 0, comp = 0;
    /* Measured on about `budget` bytes of strings between those the table was
     * trained on: a table is fitted to its sample, and measured on it, it
     * promised more than the chunk gave (nested's names "user00000" to
     * "user19999", 20,000 distinct in 131,072: the ratio on the sample
     * chose FSST at 460 KiB over a dictionary of 294 KiB). Chunks sampled
     * whole are measured on themselves. */
    const uint64_t total = off[n] - off[0];
    const int64_t step =
        total <= budget || n <= 0 ? 1 : (int64_t)((total + budget - 1) / budget);
    uint8_t buf[512];
    for (int64_t i = step / 2; i < n; i += step) {
        const uint8_t *s = data + off[i];
        size_t len = (size_t)(off[i + 1] - off[i]);
        if (len > sizeof buf / 2) len = sizeof buf / 2; /* long strings: their head is enough */
        raw += len;
        comp += compress1(t, s, len, (size_t)(off[n] - off[i]), buf);
    }
    return raw ? (double)comp / (double)raw : 1.0;
}

/* One of the independent streams compress_all runs side by side: strings
 * [i, hi) of the chunk, their codes written from `base` (`out` so far),
 * each string's end offset (relative to base) to coff[i + 1]. Pointers,
 * not offsets: a step is then one load and one add per field. */
struct lane {
    const uint8_t *p, *e; /* position and end of the current string */
    uint8_t *out;
    int64_t i, hi; /* current string, end of the lane's strings */
    uint8_t *base;
};

/* Ends the lane's finished strings (empty ones included); 0 when the lane
 * has no string left. */
static QV__ALWAYS_INLINE int lane_next(struct lane *l, const uint64_t *off, const uint8_t *data,
                                       uint64_t *coff) {
    while (l->p == l->e) {
        coff[l->i + 1] = (uint64_t)(l->out - l->base);
        if (++l->i == l->hi) return 0;
        l->e = data + off[l->i + 1];
    }
    return 1;
}

/* Writes the code of match's answer m and steps past its symbol. */
static QV__ALWAYS_INLINE void lane_put(struct lane *l, unsigned m) {
    unsigned code = m & 0xFF;
    l->out[0] = (uint8_t)code;
    l->out[1] = l->p[0];
    l->out += 1 + (code == ESC);
    l->p += m >> 8;
}
/* One code of the lane's current string (which has bytes left), the data
 * ending at dend. */
static QV__ALWAYS_INLINE void lane_step(struct lane *l, const struct qv__fsst_table *t,
                                        const uint8_t *dend) {
    lane_put(l, match(t, l->p, (size_t)(l->e - l->p), (size_t)(dend - l->p)));
}

/* lane_step with SYM_MAX or more readable bytes: match's 16-byte load
 * without the test of the room left. (An SSE2 compare of the hash entry
 * took fewer instructions but was slower: the move of the loaded bytes
 * from the vector register lengthens each lane's chain of lookups.) */
static QV__ALWAYS_INLINE void lane_step16(struct lane *l, const struct qv__fsst_table *t) {
    lane_put(l, match(t, l->p, (size_t)(l->e - l->p), SYM_MAX));
}

#define LANES 4

/* Compresses strings [0, n) into `codes` (room for 2 bytes per input byte
 * and 16 more) and their end offsets into coff[1..n] (coff[0] = 0); returns
 * the code bytes. Each string is compressed on its own (compress1's codes),
 * but the chunk is cut into LANES runs of strings compressed side by side:
 * a code's lookup waits on the previous code's length, and independent
 * chains of lookups keep the core busy where one leaves it waiting. Lane k
 * writes its codes from 2 x (its first string's byte offset), where they
 * cannot reach the next lane's (a string's codes and stray literal take at
 * most 2 bytes per byte); the runs are then moved together in order.
 *
 * The four lanes are four local structs, not an array, so that their
 * fields live in registers; they step together while every lane has a
 * string and the last lane (whose position is at or past every other
 * lane's, the offsets being monotone) has SYM_MAX bytes of data after it,
 * then each lane alone with match's bounded load. */
static uint64_t compress_all(const struct qv__fsst_table *t, const uint64_t *off,
                             const uint8_t *data, int64_t n, uint8_t *codes, uint64_t *coff) {
    const uint8_t *dend = data + off[n];
    struct lane l[LANES];
    int live[LANES];
    coff[0] = 0;
    for (int k = 0; k < LANES; k++) {
        int64_t lo = n * k / LANES, hi = n * (k + 1) / LANES;
        uint8_t *base = codes + 2 * (off[lo] - off[0]);
        l[k] = (struct lane){.p = data + off[lo], .e = data + (lo < hi ? off[lo + 1] : off[lo]),
                             .out = base, .i = lo, .hi = hi, .base = base};
        live[k] = lo < hi && lane_next(&l[k], off, data, coff);
    }
    _Static_assert(LANES == 4, "compress_all steps four named lanes");
    if (live[0] && live[1] && live[2] && live[3]) {
        struct lane a = l[0], b = l[1], c = l[2], d = l[3];
        int la = 1, lb = 1, lc = 1, ld = 1;
        while ((la & lb & lc & ld) && dend - d.p >= SYM_MAX) {
            lane_step16(&a, t);
            lane_step16(&b, t);
            lane_step16(&c, t);
            lane_step16(&d, t);
            if (a.p == a.e) la = lane_next(&a, off, data, coff);
            if (b.p == b.e) lb = lane_next(&b, off, data, coff);
            if (c.p == c.e) lc = lane_next(&c, off, data, coff);
            if (d.p == d.e) ld = lane_next(&d, off, data, coff);
        }
        l[0] = a, l[1] = b, l[2] = c, l[3] = d;
        live[0] = la, live[1] = lb, live[2] = lc, live[3] = ld;
    }
    for (int k = 0; k < LANES; k++)
        while (live[k]) {
            lane_step(&l[k], t, dend);
            live[k] = lane_next(&l[k], off, data, coff);
        }
    /* Lane 0 is in place; move the others down behind it and shift their
     * offsets by where they now start. */
    uint64_t o = (uint64_t)(l[0].out - l[0].base);
    for (int k = 1; k < LANES; k++) {
        int64_t lo = n * k / LANES, hi = n * (k + 1) / LANES;
        uint64_t len = (uint64_t)(l[k].out - l[k].base);
        if (len) memmove(codes + o, l[k].base, (size_t)len);
        for (int64_t i = lo; i < hi; i++) coff[i + 1] += o;
        o += len;
    }
#ifdef QV_DEBUG
    /* Each string's codes are compress1's, whatever lane compressed it. */
    uint8_t ref[2 * 256 + 2];
    for (int64_t i = 0; i < n; i++) {
        size_t len = (size_t)(off[i + 1] - off[i]);
        if (len > 256) continue;
        size_t rl = compress1(t, data + off[i], len, (size_t)(off[n] - off[i]), ref);
        QV_DCHECK(coff[i + 1] - coff[i] == rl && memcmp(codes + coff[i], ref, rl) == 0);
    }
#endif
    return o;
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
    uint64_t o = compress_all(t, off, data, n, codes, coff);
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

/* ---- Decoding ----
 * A code is one table lookup and one unconditional 16-byte copy of its
 * symbol, the output advancing by the symbol's length. Codes go four at a
 * time: one 4-byte load, one test whether any of them is the escape (then
 * the codes up to and including the escape go one by one), four
 * independent lookups and copies. A table entry is 32 bytes, the symbol
 * then its length, so a code's entry is its byte shifted into place: no
 * separate index arithmetic per table.
 *
 * Codes without a symbol (above the table: a corrupt chunk) are not tested
 * for in that loop: a pass over the block's code bytes first looks for any
 * byte in the unused range (it vectorizes), and only a block that has one -
 * usually an escaped literal that happens to fall there - takes a loop
 * that checks every code.
 *
 * Strings are decoded as one stream per block of consecutive strings (the
 * codes of a block are contiguous and so is their output), not one loop per
 * string: short strings - a comment, a URL - would otherwise spend their
 * time starting and ending loops. The stream loop notes the output offset
 * at every code, and a string's end offset is then the one noted at the
 * code its successor starts with. An escape whose literal would be the next
 * string's first code marks that code, and the block fails. */

#define POS_LIT UINT32_MAX /* noted for the literal byte of an escape */
/* Codes per stream block: the noted offsets (4 bytes each) stay in the L1
 * cache and in the decoder's inline scratch. */
#define STREAM_CODES 4096

struct fsst_entry {
    uint8_t sym[SYM_MAX]; /* unused codes: zeros */
    uint8_t len;          /* ESC and unused codes: 0 */
    uint8_t pad[15];
};

struct fsst_dec_table {
    struct fsst_entry e[256];
    int nsym;
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
        memcpy(t->e[i].sym, b + at, l);
        t->e[i].len = (uint8_t)l;
        at += l;
    }
    if (at != nd->buf_len[0]) return qv__corrupt(err, nd, "symbol table has trailing bytes");
    t->nsym = nsym;
    nd->cache = t;
    *out = t;
    return 0;
}

/* Whether [p, e) holds a byte that is neither a symbol's code nor the
 * escape (it may be an escaped literal). */
static int has_unused(const struct fsst_dec_table *t, const uint8_t *p, const uint8_t *e) {
    if (t->nsym >= ESC) return 0;
    const uint8_t lo = (uint8_t)t->nsym, span = (uint8_t)(ESC - t->nsym);
    unsigned bad = 0;
    for (; p < e; p++) bad |= (uint8_t)(*p - lo) < span;
    return bad != 0;
}

/* One code of [*cpp, ce) to ob + *dp, advancing *cpp, *dp and *ppp (when
 * positions are kept): 0 for a symbol, 1 for an escaped literal, -1 for an
 * escape without its literal or (with `check`) a code without a symbol. */
static QV__ALWAYS_INLINE int decode_code(const struct fsst_dec_table *restrict t,
                                         const uint8_t *restrict *cpp, const uint8_t *ce,
                                         uint8_t *restrict ob, uint64_t *dp, uint32_t *restrict *ppp,
                                         const int check) {
    const uint8_t *cp = *cpp;
    uint32_t *pp = *ppp;
    const unsigned c = *cp;
    if (pp) *pp = (uint32_t)*dp;
    if (c == ESC) {
        if (ce - cp < 2) return -1;
        if (pp) {
            pp[1] = POS_LIT;
            *ppp = pp + 2;
        }
        ob[(*dp)++] = cp[1];
        *cpp = cp + 2;
        return 1;
    }
    if (check && !t->e[c].len) return -1;
    memcpy(ob + *dp, t->e[c].sym, SYM_MAX);
    *dp += t->e[c].len;
    *cpp = cp + 1;
    if (pp) *ppp = pp + 1;
    return 0;
}

/* Decodes the codes [cp, ce) to ob + *dp (*dp advances). With `fast` the
 * codes hold no unused byte (has_unused) and go four at a time; without,
 * each is checked. With `pp`, pp[i] gets the output offset of code i (from
 * ob; POS_LIT for a literal). Returns 0, or -1 for a code without a symbol
 * or an escape whose literal is past ce. Writes up to SYM_MAX bytes per
 * code from the output position, which grows by at most SYM_MAX a code. */
static QV__ALWAYS_INLINE int decode_codes(const struct fsst_dec_table *restrict t,
                                          const uint8_t *restrict cp, const uint8_t *ce,
                                          uint8_t *restrict ob, uint64_t *dp,
                                          uint32_t *restrict pp, const int fast) {
    const uint8_t *tb = (const uint8_t *)t->e;
    uint64_t d = *dp;
    while (ce - cp >= 4) {
        uint32_t w4;
        memcpy(&w4, cp, 4);
        /* A zero byte in ~w4 is an escape in w4. */
        if (fast && !((~w4 - 0x01010101u) & w4 & 0x80808080u)) {
            const size_t i0 = (w4 << 5) & 0x1FE0, i1 = (w4 >> 3) & 0x1FE0,
                         i2 = (w4 >> 11) & 0x1FE0, i3 = (w4 >> 19) & 0x1FE0;
            const uint64_t d1 = d + tb[i0 + SYM_MAX], d2 = d1 + tb[i1 + SYM_MAX],
                           d3 = d2 + tb[i2 + SYM_MAX];
            if (pp) {
                pp[0] = (uint32_t)d;
                pp[1] = (uint32_t)d1;
                pp[2] = (uint32_t)d2;
                pp[3] = (uint32_t)d3;
                pp += 4;
            }
            memcpy(ob + d, tb + i0, SYM_MAX);
            memcpy(ob + d1, tb + i1, SYM_MAX);
            memcpy(ob + d2, tb + i2, SYM_MAX);
            memcpy(ob + d3, tb + i3, SYM_MAX);
            d = d3 + tb[i3 + SYM_MAX];
            cp += 4;
            continue;
        }
        /* Codes one by one, up to and including the first escape (all
         * four when not fast). */
        for (int k = 0; k < 4 && cp < ce; k++) {
            const int r = decode_code(t, &cp, ce, ob, &d, &pp, !fast);
            if (r < 0) return -1;
            if (r && fast) break;
        }
    }
    while (cp < ce)
        if (decode_code(t, &cp, ce, ob, &d, &pp, 1) < 0) return -1;
    *dp = d;
    return 0;
}

/* The four instantiations: stream or one string, fast or checked. */
static int decode_stream(const struct fsst_dec_table *t, const uint8_t *cp, const uint8_t *ce,
                         uint8_t *ob, uint64_t *dp, uint32_t *pp) {
    return has_unused(t, cp, ce) ? decode_codes(t, cp, ce, ob, dp, pp, 0)
                                 : decode_codes(t, cp, ce, ob, dp, pp, 1);
}
static int decode_one(const struct fsst_dec_table *t, const uint8_t *cp, const uint8_t *ce,
                      uint8_t *ob, uint64_t *dp) {
    return has_unused(t, cp, ce) ? decode_codes(t, cp, ce, ob, dp, NULL, 0)
                                 : decode_codes(t, cp, ce, ob, dp, NULL, 1);
}

/* A bound on what the codes [p, e) decode to, with room for the last
 * symbol copy's overhang: each code's symbol length, 1 for an escape with
 * its literal and for a code without a symbol (which fails the decode).
 * Taken when the 16 bytes per code of the fast loop do not fit the room
 * left. */
static size_t out_bound(const struct fsst_dec_table *t, const uint8_t *p, const uint8_t *e) {
    size_t n = SYM_MAX;
    while (p < e) {
        const unsigned c = *p;
        n += t->e[c].len ? t->e[c].len : 1;
        p += 1 + (c == ESC && e - p > 1);
    }
    return n;
}

/* Room for a range decode, made once: the chunk's raw bytes for a whole
 * chunk; for part of one, the raw bytes in proportion to the range's code
 * bytes (from its two end offsets), with 1/32 and 4 KiB to spare. A batch
 * of a scan is a part (64k rows of a chunk), and its output grew by
 * doubling, a copy at every step. A wrong estimate costs only that: the
 * blocks still make sure of their room. */
static int presize(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                   struct qv__binout *o, struct qv_error *err) {
    const uint64_t raw = (uint64_t)nd->params[1], codes = nd->buf_len[1];
    if (start == 0 && n == nd->count) return qv__binout_presize(o, (size_t)raw + SYM_MAX, err);
    uint64_t a, b;
    int rc = qv__dec_u64(d, nd->child[0], start, 1, &a, err);
    if (!rc) rc = qv__dec_u64(d, nd->child[0], start + n, 1, &b, err);
    if (rc || b <= a || b > codes) return rc; /* checked again as the blocks decode */
    const double est = (double)raw * (double)(b - a) / (double)codes;
    return qv__binout_presize(o, (size_t)(est + est / 32) + 4096, err);
}

/* The first corrupt code of [p, q), for the error message. */
static int bad_codes(struct qv_error *err, const struct qv__node *nd,
                     const struct fsst_dec_table *t, const uint8_t *codes, uint64_t p,
                     uint64_t q, int64_t value) {
    for (; p < q; p++) {
        unsigned c = codes[p];
        if (c == ESC) {
            if (p + 1 >= q) break;
            p++;
        } else if (!t->e[c].len) {
            return qv__corrupt(err, nd, "code %u beyond the %lld symbols (value %lld)", c,
                               (long long)nd->params[0], (long long)value);
        }
    }
    return qv__corrupt(err, nd, "escape at the end of value %lld", (long long)value);
}

static inline int put_offset(struct qv__binout *o, int64_t i, size_t at) {
    if (o->off64) {
        ((int64_t *)o->offsets)[i] = (int64_t)at;
        return 0;
    }
    if (at > (size_t)INT32_MAX) return EOVERFLOW;
    ((int32_t *)o->offsets)[i] = (int32_t)at;
    return 0;
}

int qv__fsst_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                 struct qv__binout *o, struct qv_error *err) {
    struct fsst_dec_table *t = NULL;
    int rc = load_table(d, nd, &t, err);
    if (rc) return rc;
    /* Below a vector the blocks' own room suffices (a take's small ranges
     * would pay two more offset decodes each). */
    if (n >= QV__VEC && (rc = presize(d, nd, start, n, o, err))) return rc;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    const int64_t blk = QV__VEC;
    uint64_t *off = qv__stack_push(&d->stack, (size_t)((n < blk ? n : blk) + 1) * 8, err);
    uint32_t *pos = off ? qv__stack_push(&d->stack, (STREAM_CODES + 1) * 4, err) : NULL;
    if (!pos) {
        qv__stack_release(&d->stack, mk);
        return ENOMEM;
    }
    const uint8_t *codes = nd->buf[1];
    const uint64_t limit = nd->buf_len[1];
    for (int64_t b = 0; b < n && !rc; b += blk) {
        int64_t m = n - b < blk ? n - b : blk;
        if ((rc = qv__dec_u64(d, nd->child[0], start + b, m + 1, off, err))) break;
        /* Validate the block's offsets, then make room for its worst case
         * once, so the per-code loop has no checks but the code's own. */
        unsigned dec = 0;
        for (int64_t i = 0; i < m; i++) dec |= off[i + 1] < off[i];
        if (dec) {
            int64_t i = 0;
            while (off[i + 1] >= off[i]) i++;
            rc = qv__corrupt(err, nd, "code offsets decrease at value %lld",
                             (long long)(start + b + i));
            break;
        }
        if (off[m] > limit) {
            rc = qv__corrupt(err, nd, "code offset %llu beyond the %llu code bytes",
                             (unsigned long long)off[m], (unsigned long long)limit);
            break;
        }
        if (!nd->inner && (rc = qv__dec_touch_bytes(d, codes + off[0], off[m] - off[0], err))) break;
        size_t worst = (size_t)(off[m] - off[0]) * SYM_MAX + SYM_MAX;
        if (o->cap - o->size < worst + 8) {
            worst = out_bound(t, codes + off[0], codes + off[m]);
            if (o->cap - o->size < worst + 8 && (rc = qv__binout_reserve(o, worst, err))) break;
        }
        uint8_t *const base = o->data;
        for (int64_t i = 0; i < m && !rc;) {
            uint8_t *ob = base + o->size;
            uint64_t dn = 0;
            /* The strings [i, j) whose codes fit one stream block. */
            int64_t j = i + qv__upper_bound(off + i, m + 1 - i, off[i] + STREAM_CODES) - 1;
            if (j == i) {
                /* One long string alone. */
                if (decode_one(t, codes + off[i], codes + off[i + 1], ob, &dn)) {
                    rc = bad_codes(err, nd, t, codes, off[i], off[i + 1], start + b + i);
                    break;
                }
                o->size += (size_t)dn;
                if (put_offset(o, o->i + 1, o->size)) rc = EOVERFLOW;
                o->i++;
                i++;
                continue;
            }
            if (decode_stream(t, codes + off[i], codes + off[j], ob, &dn, pos)) {
                rc = bad_codes(err, nd, t, codes, off[i], off[j], start + b + i);
                break;
            }
            pos[off[j] - off[i]] = (uint32_t)dn;
            /* Each string ends where its successor's first code starts. */
            uint32_t lit = 0;
            for (int64_t s = i + 1; s <= j; s++) {
                const uint32_t x = pos[off[s] - off[i]];
                lit |= x == POS_LIT;
                if (put_offset(o, o->i + (s - i), o->size + x)) rc = EOVERFLOW;
            }
            if (lit) {
                int64_t s = i + 1;
                while (pos[off[s] - off[i]] != POS_LIT) s++;
                rc = qv__corrupt(err, nd, "escape at the end of value %lld",
                                 (long long)(start + b + s - 1));
                break;
            }
            o->size += (size_t)dn;
            o->i += j - i;
            i = j;
        }
        if (rc == EOVERFLOW)
            rc = qv_error_set(err, EOVERFLOW, "decode: binary data exceeds the int32 offset range");
    }
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
    if (!t && (rc = qv__fsst_train(e, s->off, s->data, s->n, 1, &t))) return rc;
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
