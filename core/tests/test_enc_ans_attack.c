/*
 * Hostile tests of the ans codec (encoding 18, encoding/ans.c, general.c's
 * ans frames, the entropy stage's ans choice; docs/format.md 5.5.17):
 *  - arbitrary bytes as an ans block, for block lengths 0.. and output
 *    lengths 0, 1, 7, 8, 8191, 8192, 65536 and others, in heap buffers of
 *    exactly their size (ASan sees any read or write past them): 0 or -1
 *    with a reason, never anything else;
 *  - blocks with valid tables and hostile states and streams, and crafted
 *    blocks at every check (nsym 256 with a bitmap, 2-byte frequencies with
 *    a huge high byte, states at 0xFFFF and 0xFFFFFFFF, odd streams, words
 *    left over), each refused with its reason or decoded as the spec says;
 *  - the encoder on the histograms that cost it most (frequencies squeezed
 *    to 1 for common symbols): a destination of exactly the bound is never
 *    overrun and the block round-trips;
 *  - the decoder against the spec's words, step by step (spec_decode): the
 *    same verdict and bytes on the encoder's blocks changed, cut, extended
 *    and decoded to other lengths;
 *  - through qv_encode: every integer kind stored in ans frames, then each
 *    part of a frame's block and of the frame table damaged and decoded
 *    whole, by range and by take: a decode or EIO naming the corrupt node,
 *    and the frames not damaged still decode to their values;
 *  - a frame table damaged to claim gigabytes: EIO naming the node, with
 *    no output sized from it first (general.c's bin_presize did);
 *  - ans forced at the root over every kind, a file with nulls whose
 *    column is stored in ans frames (damaged with and without checksums),
 *    encoding id 18 under garbage, allocation failures at every step and
 *    small pool limits with the ans layout forced: ENOMEM with nothing
 *    left charged, or a correct result.
 */
#include <math.h>

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"
#include "encoding/encoding_testing.h"
#include "memory/memory_testing.h"
#include "quiver/format.h"
#include "mem_sink.h"
#include "test_enc_util.h"

#define ANS_L 0x10000u

/* ---- Blocks ---- */

/* Decodes blk[0, clen) into n bytes, both in heap blocks of exactly their
 * size; checks the contract (0 with no reason, or -1 with one) and copies
 * the output to `out` (when not NULL) on success. */
static int dec_exact(const uint8_t *blk, size_t clen, size_t n, uint8_t *out, const char **why_out) {
    uint8_t *src = malloc(clen ? clen : 1);
    uint8_t *dst = malloc(n ? n : 1);
    assert_non_null(src);
    assert_non_null(dst);
    if (clen) memcpy(src, blk, clen);
    const char *why = "unset";
    int rc = qv__ans_decompress(src, clen, dst, n, &why);
    if (rc != 0 && rc != -1) fail_msg("decompress returned %d", rc);
    if (rc == 0 && why) fail_msg("decoded with a reason: %s", why);
    if (rc == -1 && (!why || !*why)) fail_msg("refused without a reason");
    if (rc == 0 && out && n) memcpy(out, dst, n);
    if (why_out) *why_out = why;
    free(src);
    free(dst);
    return rc;
}

static void expect_refused(const uint8_t *blk, size_t clen, size_t n, const char *reason) {
    const char *why;
    if (dec_exact(blk, clen, n, NULL, &why) != -1)
        fail_msg("block of %zu bytes for %zu decoded; expected \"%s\"", clen, n, reason);
    if (strcmp(why, reason)) fail_msg("refused with \"%s\", expected \"%s\"", why, reason);
}

static uint8_t *put_freq(uint8_t *p, uint32_t f) {
    if (f < 128) {
        *p++ = (uint8_t)f;
    } else {
        *p++ = (uint8_t)((f & 127) | 0x80);
        *p++ = (uint8_t)(f >> 7);
    }
    return p;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

/* A coded block's head: kind 1, the table of nsym symbols (list or bitmap,
 * as the spec lays it out) with frequencies f (canonical), 8 states. */
static uint8_t *coded_head(uint8_t *p, const uint8_t *syms, const uint32_t *f, int nsym,
                           const uint32_t *states) {
    *p++ = 1;
    *p++ = (uint8_t)(nsym - 1);
    if (nsym < 32) {
        memcpy(p, syms, (size_t)nsym);
        p += nsym;
    } else {
        memset(p, 0, 32);
        for (int k = 0; k < nsym; k++) p[syms[k] >> 3] |= (uint8_t)(1u << (syms[k] & 7));
        p += 32;
    }
    for (int k = 0; k < nsym; k++) p = put_freq(p, f[k]);
    for (int j = 0; j < 8; j++) p = put_u32(p, states ? states[j] : ANS_L);
    return p;
}

/* nsym distinct random symbols in increasing order and random frequencies
 * (each >= 1) summing to 4096. */
static void random_table(uint64_t *s, int nsym, uint8_t *syms, uint32_t *f) {
    uint8_t perm[256];
    for (int i = 0; i < 256; i++) perm[i] = (uint8_t)i;
    for (int i = 0; i < nsym; i++) {
        int j = i + (int)(rng_next(s) % (uint64_t)(256 - i));
        uint8_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int mark[256] = {0};
    for (int i = 0; i < nsym; i++) mark[perm[i]] = 1;
    for (int v = 0, k = 0; v < 256; v++)
        if (mark[v]) syms[k++] = (uint8_t)v;
    for (int k = 0; k < nsym; k++) f[k] = 1;
    uint32_t left = 4096 - (uint32_t)nsym;
    while (left) {
        uint32_t chunk = 1 + (uint32_t)(rng_next(s) % (left < 700 ? left : 700));
        f[rng_next(s) % (uint64_t)nsym] += chunk;
        left -= chunk;
    }
}

static uint8_t skew_code(uint64_t *s);

static const size_t out_sizes[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 255, 1000, 8191, 8192, 65536};
#define NOUT (sizeof out_sizes / sizeof out_sizes[0])

/* Random bytes as a block: any kind byte, biased to 0 and 1; lengths from
 * 0 to a little over what the output could need. */
static void test_garbage_blocks(void **state) {
    (void)state;
    uint64_t s = 3301;
    uint8_t *blk = malloc(140000);
    int decoded = 0, refused = 0;
    for (size_t si = 0; si < NOUT; si++) {
        const size_t n = out_sizes[si];
        const int iters = n >= 8191 ? 120 : 1500;
        for (int it = 0; it < iters; it++) {
            size_t len;
            switch (it % 5) {
            case 0: len = (size_t)(rng_next(&s) % 64); break;
            case 1: len = (size_t)(rng_next(&s) % 700); break;
            case 2: len = n + 1; break; /* a stored block's size */
            case 3: len = (size_t)(rng_next(&s) % (2 * n + 64)); break;
            default: len = 40 + (size_t)(rng_next(&s) % (n + n / 2 + 8)); break;
            }
            for (size_t i = 0; i < len; i++) blk[i] = (uint8_t)rng_next(&s);
            if (len) blk[0] = it % 3 == 0 ? 0 : it % 3 == 1 ? 1 : blk[0];
            if (len > 1 && it % 7 == 0) blk[1] = 255; /* nsym 256: a bitmap */
            if (len > 1 && it % 11 == 0) blk[1] = 31;  /* nsym 32: the first bitmap */
            if (len > 1 && it % 13 == 0) blk[1] = 30;  /* nsym 31: the last list */
            if (dec_exact(blk, len, n, NULL, NULL)) refused++;
            else decoded++;
        }
    }
    /* A stored block of n + 1 bytes always decodes; almost nothing else. */
    assert_true(refused > 5000);
    assert_true(decoded > 0);
    free(blk);
}

/* Valid tables, hostile states and streams: the decode loop runs over
 * them, fast and careful paths both (streams longer and shorter than 16
 * bytes), and must stay inside the block and the output. */
static void test_valid_tables_hostile_states(void **state) {
    (void)state;
    uint64_t s = 77;
    uint8_t *blk = malloc(4096 + 4 * 65536);
    uint8_t syms[256];
    uint32_t f[256], st[8];
    int refused = 0, decoded = 0;
    for (size_t si = 0; si < NOUT; si++) {
        const size_t n = out_sizes[si];
        const int iters = n >= 8191 ? 60 : 400;
        for (int it = 0; it < iters; it++) {
            int nsym;
            switch (it % 6) {
            case 0: nsym = 1; break;
            case 1: nsym = 2; break;
            case 2: nsym = 31; break;
            case 3: nsym = 32; break;
            case 4: nsym = 256; break;
            default: nsym = 1 + (int)(rng_next(&s) % 256); break;
            }
            random_table(&s, nsym, syms, f);
            const int empty = it % 50 == 0; /* states 2^16, no words: valid for n = 0 */
            for (int j = 0; j < 8; j++) {
                uint64_t r = rng_next(&s);
                switch ((r >> 32) % 5) {
                case 0: st[j] = ANS_L; break;
                case 1: st[j] = 0xFFFFFFFFu; break;
                case 2: st[j] = (uint32_t)r | ANS_L; break;
                case 3: st[j] = ANS_L + (uint32_t)(r % 4096); break;
                default: st[j] = 0xFFFFFFFFu - (uint32_t)(r % 65536); break;
                }
                if (empty) st[j] = ANS_L;
            }
            uint8_t *p = coded_head(blk, syms, f, nsym, st);
            size_t words;
            switch (it % 4) {
            case 0: words = 0; break;
            case 1: words = (size_t)(rng_next(&s) % 12); break;
            case 2: words = n / 2 + (size_t)(rng_next(&s) % 64); break;
            default: words = (size_t)(rng_next(&s) % (n + n / 2 + 16)); break;
            }
            for (size_t w = 0; w < 2 * words; w++) p[w] = (uint8_t)rng_next(&s);
            if (empty) words = 0;
            const int odd = !empty && it % 9 == 4;
            size_t len = (size_t)(p - blk) + 2 * words + (size_t)odd; /* some odd */
            if (odd) p[2 * words] = 0x5A;
            const int rc = dec_exact(blk, len, n, NULL, NULL);
            if (empty && n == 0) assert_int_equal(rc, 0);
            if (rc) refused++;
            else decoded++;
        }
    }
    assert_true(refused > 3000);
    /* n = 0 with all states 2^16 and no words is a valid empty block. */
    assert_true(decoded > 0);
    free(blk);
}

/* The block's checks one by one, each with the spec's outcome. */
static void test_crafted_blocks(void **state) {
    (void)state;
    uint8_t b[8200] = {0}, out[65536];
    const char *why;

    /* Empty, unknown kinds, stored of the wrong size; stored of n + 1. */
    expect_refused(b, 0, 0, "empty block");
    for (int k = 3; k < 256; k += 37) {
        b[0] = (uint8_t)k;
        expect_refused(b, 1, 0, "unknown block kind");
    }
    b[0] = 0;
    assert_int_equal(dec_exact(b, 1, 0, NULL, NULL), 0);
    expect_refused(b, 2, 0, "stored block of the wrong size");
    expect_refused(b, 1, 1, "stored block of the wrong size");
    memset(b + 1, 0xEE, 8192);
    assert_int_equal(dec_exact(b, 8193, 8192, out, NULL), 0);
    assert_int_equal(out[0], 0xEE);
    assert_int_equal(out[8191], 0xEE);
    expect_refused(b, 8193, 8191, "stored block of the wrong size");
    expect_refused(b, 8193, 8193, "stored block of the wrong size");

    /* Truncated tables: count only, a list cut short, a bitmap cut short. */
    b[0] = 1;
    expect_refused(b, 1, 8, "truncated table");
    b[1] = 4; /* nsym 5 */
    b[2] = 1, b[3] = 2, b[4] = 3;
    expect_refused(b, 5, 8, "truncated table");
    b[1] = 255; /* nsym 256: bitmap */
    memset(b + 2, 0xFF, 31);
    expect_refused(b, 33, 8, "truncated table");
    /* List out of order and with a repeated symbol. */
    b[1] = 2, b[2] = 5, b[3] = 4, b[4] = 9;
    expect_refused(b, 5, 8, "symbols out of order");
    b[2] = 4, b[3] = 4;
    expect_refused(b, 5, 8, "symbols out of order");

    /* nsym 256, bitmap with 255 bits, with 256 bits and one frequency
     * short, then complete: 256 x 16 (a valid table). */
    b[1] = 255;
    memset(b + 2, 0xFF, 32);
    b[2 + 17] = 0xF7;
    memset(b + 34, 16, 256);
    expect_refused(b, 34 + 256, 8, "symbol bitmap disagrees with the count");
    b[2 + 17] = 0xFF;
    expect_refused(b, 34 + 255, 8, "truncated table");
    expect_refused(b, 34 + 256, 8, "truncated states");
    /* ... with eight states 2^16 and no words: an empty block, and for one
     * byte the state (slot 0: symbol 0, x = 16 x 16) wants a word. */
    for (int j = 0; j < 8; j++) put_u32(b + 290 + 4 * j, ANS_L);
    assert_int_equal(dec_exact(b, 322, 0, NULL, NULL), 0);
    expect_refused(b, 322, 1, "stream ends early");
    expect_refused(b, 322, 8, "stream ends early");
    /* A bitmap claiming nsym 32 with 33 bits (the first bitmap count). */
    b[1] = 31;
    memset(b + 2, 0, 32);
    for (int v = 0; v < 33; v++) b[2 + v / 8] |= (uint8_t)(1u << (v % 8));
    expect_refused(b, 34 + 64, 8, "symbol bitmap disagrees with the count");

    /* Two-byte frequencies: the high byte at 0xFF (32,640 and more), a
     * first byte with no second, 0 in two bytes, 4096 - 1 + 1, over 4096. */
    b[1] = 1, b[2] = 10, b[3] = 20;
    b[4] = 0x80 | 0x7F, b[5] = 0xFF;
    expect_refused(b, 6, 8, "frequencies do not sum to 4096");
    b[4] = 0x80, b[5] = 0xFF;
    expect_refused(b, 6, 8, "frequencies do not sum to 4096");
    expect_refused(b, 5, 8, "truncated table");
    b[4] = 0x80, b[5] = 0x00; /* 0 in two bytes: a two-byte frequency below 128 */
    expect_refused(b, 6, 8, "a frequency below 128 in two bytes");
    b[4] = 0;
    expect_refused(b, 6, 8, "frequencies do not sum to 4096");
    b[4] = 0xFF, b[5] = 0x1F, b[6] = 1; /* 4095 + 1 */
    expect_refused(b, 7, 8, "truncated states");
    b[6] = 2; /* 4095 + 2 */
    expect_refused(b, 7 + 32, 8, "frequencies do not sum to 4096");
    b[4] = 0x80, b[5] = 0x10, b[6] = 0x80, b[7] = 0x10; /* 2048 + 2048 */
    for (int j = 0; j < 8; j++) put_u32(b + 8 + 4 * j, ANS_L);
    assert_int_equal(dec_exact(b, 40, 0, NULL, NULL), 0);
    /* Frequencies summing below 4096. */
    b[6] = 0x7F;
    expect_refused(b, 40, 8, "frequencies do not sum to 4096");

    /* One symbol of frequency 4096 (0x80 0x20): the state never moves, so
     * 38 bytes decode any length, 65536 included (a reader bounds raw[f]
     * by the block's length, general.c). */
    b[1] = 0, b[2] = 0x7C, b[3] = 0x80, b[4] = 0x20;
    for (int j = 0; j < 8; j++) put_u32(b + 5 + 4 * j, ANS_L);
    for (size_t si = 0; si < NOUT; si++) {
        const size_t n = out_sizes[si];
        memset(out, 0, sizeof out);
        assert_int_equal(dec_exact(b, 37, n, out, NULL), 0);
        for (size_t i = 0; i < n; i++)
            if (out[i] != 0x7C) fail_msg("n=%zu: byte %zu is %u", n, i, out[i]);
    }
    /* ... a state at 0xFFFFFFFF or anything but 2^16 stays so: refused at
     * the end whatever the length, 0 included. */
    put_u32(b + 5 + 4 * 3, 0xFFFFFFFFu);
    expect_refused(b, 37, 0, "final state is not the initial one");
    expect_refused(b, 37, 65536, "final state is not the initial one");
    /* ... and one below 2^16 is out of range, as is 0. */
    put_u32(b + 5 + 4 * 3, 0xFFFFu);
    expect_refused(b, 37, 8, "state out of range");
    put_u32(b + 5 + 4 * 7, 0);
    expect_refused(b, 37, 8, "state out of range");
    put_u32(b + 5 + 4 * 3, ANS_L);
    put_u32(b + 5 + 4 * 7, ANS_L);
    /* ... states cut short; a stream of odd length; words left over. */
    expect_refused(b, 36, 8, "truncated states");
    expect_refused(b, 5, 8, "truncated states");
    b[37] = 1, b[38] = 2, b[39] = 3;
    expect_refused(b, 38, 8, "odd stream length");
    expect_refused(b, 40, 8, "odd stream length");
    expect_refused(b, 39, 8, "bytes left after the last symbol");
    expect_refused(b, 39, 0, "bytes left after the last symbol");

    /* A non-canonical two-byte frequency (0x85 0x00 = 5) decodes, if at
     * all, exactly as the canonical one. */
    {
        uint8_t src[600], o1[600], o2[600];
        uint8_t *canon = malloc(qv__ans_bound(600)), *alt = malloc(qv__ans_bound(600) + 1);
        for (int i = 0; i < 600; i++) src[i] = i % 100 == 7 ? 9 : 1;
        size_t clen = qv__ans_compress(src, 600, canon, qv__ans_bound(600));
        assert_int_equal(canon[0], 1);
        assert_int_equal(canon[1], 1); /* two symbols: 1 and 9 */
        assert_int_equal(canon[2], 1);
        assert_int_equal(canon[3], 9);
        /* symbol 1's frequency takes two bytes, symbol 9's one (< 128) */
        assert_true(canon[4] & 0x80);
        assert_false(canon[6] & 0x80);
        memcpy(alt, canon, 6);
        alt[6] = (uint8_t)(0x80 | canon[6]);
        alt[7] = 0;
        memcpy(alt + 8, canon + 7, clen - 7);
        assert_int_equal(dec_exact(canon, clen, 600, o1, NULL), 0);
        assert_memory_equal(o1, src, 600);
        if (dec_exact(alt, clen + 1, 600, o2, &why) == 0) assert_memory_equal(o2, src, 600);
        free(canon);
        free(alt);
    }
}

/* Where a coded block's states start. */
static size_t states_at(const uint8_t *b) {
    const int nsym = b[1] + 1;
    size_t p = 2 + (size_t)(nsym < 32 ? nsym : 32);
    for (int k = 0; k < nsym; k++) p += b[p] & 0x80 ? 2 : 1;
    return p;
}

/* Histograms the encoder pays most for, compressed into a heap block of
 * exactly qv__ans_bound(n) (ASan: never written past) and decoded back. */
static void fill_hostile(uint8_t *b, size_t n, int shape, uint64_t *s) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(s);
        switch (shape) {
        case 0: /* 16 symbols of 1/16 each less the 240 seen once: the
                 * frequencies (255 each, and 1 for the 240) sum over 4096,
                 * and the largest is squeezed */
            b[i] = i < 240 ? (uint8_t)(16 + i) : (uint8_t)(r % 16);
            break;
        case 1: /* 255 symbols seen about once per 4096, one the rest */
            b[i] = r % 4096 < 255 ? (uint8_t)(1 + r % 255) : 0;
            break;
        case 2: /* 240 symbols just under a 1/4096 share (frequency 1, cost
                 * 12 bits), 16 common */
            b[i] = r % 10000 < 580 ? (uint8_t)(16 + r % 240) : (uint8_t)(r % 16);
            break;
        case 3: /* uniform over 256 */
            b[i] = (uint8_t)r;
            break;
        case 4: /* uniform over 255 with one just above 1/4096 */
            b[i] = r % 2000 == 0 ? 255 : (uint8_t)(r % 255);
            break;
        case 5: /* random histogram */
            b[i] = (uint8_t)(r % (1 + (r >> 56)));
            break;
        default: /* ramp: every symbol once per 256, shuffled blocks */
            b[i] = (uint8_t)((i * 37) ^ (i >> 8));
            break;
        }
    }
}

static void test_encoder_worst_histograms(void **state) {
    (void)state;
    static const size_t sizes[] = {1, 2, 8, 9, 129, 300, 4097, 8320, 8192, 30000, 100000};
    uint64_t s = 5;
    int coded = 0;
    for (int shape = 0; shape < 7; shape++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const size_t n = sizes[si];
            uint8_t *src = malloc(n), *out = malloc(n);
            fill_hostile(src, n, shape, &s);
            const size_t bound = qv__ans_bound(n);
            uint8_t *dst = malloc(bound);
            memset(dst, 0xCC, bound);
            size_t clen = qv__ans_compress(src, n, dst, bound);
            if (clen < 1 || clen > n + 1) fail_msg("shape %d n=%zu: %zu bytes", shape, n, clen);
            coded += dst[0] != 0;
            const char *why;
            if (dec_exact(dst, clen, n, out, &why)) fail_msg("shape %d n=%zu: %s", shape, n, why);
            assert_memory_equal(out, src, n);
            /* The estimate's table size is the table written. */
            if (dst[0] != 0) {
                uint64_t cnt[256] = {0};
                for (size_t i = 0; i < n; i++) cnt[src[i]]++;
                double table;
                (void)qv__ans_estimate(cnt, n, &table);
                assert_int_equal((size_t)table, states_at(dst) + (dst[0] == 2 ? 128 : 32));
            }
            free(dst);
            free(src);
            free(out);
        }
    assert_true(coded > 10);
}

/* The block as docs/format.md 5.5.17 words it, step by step, one symbol
 * at a time: what a reader must accept and what it must decode. */
static int spec_decode(const uint8_t *b, size_t clen, uint8_t *dst, size_t n) {
    if (clen < 1) return -1;
    if (b[0] == 0) {
        if (clen != n + 1) return -1;
        if (n) memcpy(dst, b + 1, n);
        return 0;
    }
    if (b[0] != 1 && b[0] != 2) return -1;
    const int lanes = b[0] == 1 ? 8 : 32; /* kind 2: format 6.0 */
    size_t p = 1;
    if (p >= clen) return -1;
    const int nsym = b[p++] + 1;
    uint8_t syms[256];
    if (nsym < 32) {
        if (clen - p < (size_t)nsym) return -1;
        for (int k = 0; k < nsym; k++) {
            syms[k] = b[p + (size_t)k];
            if (k && syms[k] <= syms[k - 1]) return -1;
        }
        p += (size_t)nsym;
    } else {
        if (clen - p < 32) return -1;
        int k = 0;
        for (int v = 0; v < 256; v++)
            if (b[p + (size_t)v / 8] >> (v % 8) & 1) syms[k++] = (uint8_t)v;
        if (k != nsym) return -1;
        p += 32;
    }
    uint32_t f[256], cum[256], c = 0;
    for (int k = 0; k < nsym; k++) {
        if (p >= clen) return -1;
        uint32_t v = b[p++];
        if (v & 0x80) {
            if (p >= clen) return -1;
            v = (v & 127) | (uint32_t)b[p++] << 7;
        }
        if (v == 0) return -1;
        f[k] = v;
        cum[k] = c;
        c += v;
        if (c > 4096) return -1;
    }
    if (c != 4096) return -1;
    if (clen - p < 4 * (size_t)lanes) return -1;
    uint64_t x[32];
    for (int j = 0; j < lanes; j++) {
        x[j] = (uint64_t)b[p] | (uint64_t)b[p + 1] << 8 | (uint64_t)b[p + 2] << 16 |
               (uint64_t)b[p + 3] << 24;
        p += 4;
        if (x[j] < 65536) return -1;
    }
    const uint8_t *stream = b + p;
    const size_t len = clen - p;
    if (len % 2) return -1;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t *xs = &x[i % (size_t)lanes];
        const uint64_t slot = *xs % 4096;
        int k = 0;
        while (!(cum[k] <= slot && slot < cum[k] + f[k])) k++;
        dst[i] = syms[k];
        *xs = f[k] * (*xs / 4096) + slot - cum[k];
        assert_true(*xs < (UINT64_C(1) << 32));
        if (*xs < 65536) {
            if (w + 2 > len) return -1;
            *xs = *xs * 65536 + (uint64_t)(stream[w] | stream[w + 1] << 8);
            w += 2;
        }
    }
    if (w != len) return -1;
    for (int j = 0; j < lanes; j++)
        if (x[j] != 65536) return -1;
    return 0;
}

/* qv__ans_decompress against spec_decode: the same verdict and, when both
 * decode, the same bytes; on the encoder's blocks of every shape (which
 * must decode), of both kinds (8 and 32 states, and as the encoder
 * chooses), each with bytes changed, cut or extended, and decoded for
 * lengths around its own; each decoded with the generic kernels and with
 * the CPU's best (AVX2 where it has it), which must agree byte for byte. */
static void test_decoder_matches_spec(void **state) {
    (void)state;
    static const size_t sizes[] = {1, 7, 8, 9, 16, 17, 100, 1000, 8191, 8192, 20000};
    uint64_t s = 515;
    int both_decoded = 0, compared = 0;
    uint8_t *a = malloc(20000 + 64), *b = malloc(20000 + 64);
    for (int shape = 0; shape < 7; shape++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const size_t n = sizes[si];
            uint8_t *src = malloc(n);
            if (shape < 6) {
                for (size_t i = 0; i < n; i++) {
                    uint64_t r = rng_next(&s);
                    src[i] = shape == 0   ? (uint8_t)(r % 1000 ? 3 : 200)
                             : shape == 1 ? (uint8_t)__builtin_ctzll(r | (UINT64_C(1) << 40))
                             : shape == 2 ? skew_code(&s)
                             : shape == 3 ? (uint8_t)(r % 7)
                             : shape == 4 ? (uint8_t)(i < 256 ? i : 7)
                                          : (uint8_t)(r % 40 ? 0 : r >> 56);
                }
            } else {
                fill_hostile(src, n, 0, &s);
            }
            for (int lanes = 0; lanes <= 32; lanes += lanes ? 24 : 8) {
            const size_t bound = qv__ans_bound(n);
            uint8_t *blk = malloc(bound + 16), *bad = malloc(bound + 16);
            const size_t clen = qv__ans_compress_lanes(src, n, blk, bound, lanes);
            assert_true(clen > 0);
            assert_int_equal(spec_decode(blk, clen, a, n), 0);
            assert_memory_equal(a, src, n);
            const int trials = n >= 8191 ? 100 : 250;
            for (int t = 0; t < trials; t++) {
                size_t len = clen, m = n;
                memcpy(bad, blk, clen);
                const int what = t % 6;
                if (what <= 2) {
                    /* 1-3 bytes changed, mostly states and stream */
                    for (int k = 0; k <= what; k++) {
                        size_t at = (size_t)(rng_next(&s) % clen);
                        if (blk[0] != 0 && t % 2) {
                            size_t sa = states_at(blk);
                            at = sa + (size_t)(rng_next(&s) % (clen - sa));
                        }
                        bad[at] ^= (uint8_t)(1u << (rng_next(&s) % 8));
                    }
                } else if (what == 3) {
                    len = (size_t)(rng_next(&s) % (clen + 1));
                } else if (what == 4) {
                    const size_t extra = 1 + (size_t)(rng_next(&s) % 6);
                    for (size_t k = 0; k < extra; k++) bad[clen + k] = (uint8_t)rng_next(&s);
                    len = clen + extra;
                } else {
                    m = n + (size_t)(rng_next(&s) % 17) - 8;
                    if (m > 20000) m = n;
                }
                const char *why, *why_generic;
                const int old_level = qv__cpu_set_level(QV__CPU_BASELINE);
                const int generic = dec_exact(bad, len, m, b, &why_generic);
                qv__cpu_set_level(old_level);
                const int got = dec_exact(bad, len, m, a, &why);
                if (generic != got || (got && strcmp(why, why_generic)))
                    fail_msg("shape %d n=%zu lanes %d trial %d: %s %d (%s), generic %d (%s)",
                             shape, n, lanes, t, qv__cpu_level_name(old_level), got,
                             got ? why : "-", generic, generic ? why_generic : "-");
                if (got == 0) assert_memory_equal(a, b, m);
                const int want = spec_decode(bad, len, b, m);
                if (got != want)
                    fail_msg("shape %d n=%zu lanes %d trial %d (len %zu, m %zu): decoder %d (%s), "
                             "spec %d", shape, n, lanes, t, len, m, got, got ? why : "-", want);
                if (got == 0) {
                    assert_memory_equal(a, b, m);
                    both_decoded++;
                }
                compared++;
            }
            free(blk);
            free(bad);
            }
            free(src);
        }
    print_message("  %d blocks compared, %d damaged or resized ones decoded by both\n", compared,
                  both_decoded);
    assert_true(both_decoded > 100);
    free(a);
    free(b);
}

/* ---- Through the encoding API ---- */

/* The parsed node with encoding `enc` (pre-order, first), or NULL. */
static struct qv__node *find_enc(struct qv__node *nd, int enc) {
    if (nd->enc == enc) return nd;
    for (int i = 0; i < nd->nchildren; i++) {
        struct qv__node *c = find_enc(nd->child[i], enc);
        if (c) return c;
    }
    return NULL;
}

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Skewed codes 0..5 (fair-like survey answers), one in 997 a rare 7..12. */
static uint8_t skew_code(uint64_t *s) {
    static const uint8_t w[] = {1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    uint64_t r = rng_next(s);
    return r % 997 == 0 ? (uint8_t)(7 + r % 6) : w[r % 20];
}

/* Geometric codes 0..15 (4 bits wide, 2 bits of entropy). */
static uint8_t geo_code(uint64_t *s) {
    return (uint8_t)__builtin_ctzll(rng_next(s) | (UINT64_C(1) << 15));
}

struct kcase {
    enum qv_value_kind kind;
    int64_t base;
};

static const struct kcase kcases[] = {
    {QV_KIND_INT64, 1000},       {QV_KIND_UINT64, INT64_MIN}, {QV_KIND_INT32, -50},
    {QV_KIND_UINT32, 70000},     {QV_KIND_INT16, -300},       {QV_KIND_UINT16, 65000},
    {QV_KIND_INT8, -100},        {QV_KIND_UINT8, 3},
};
#define NKCASES (sizeof kcases / sizeof kcases[0])

static struct col skewed_col(const struct kcase *kc, int64_t n, uint64_t seed) {
    struct col c = col_words(kc->kind, n);
    const unsigned w = kind_width(kc->kind, 0);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)kc->base + skew_code(&s);
        memcpy((uint8_t *)c.values + (size_t)i * w, &v, w); /* little-endian */
    }
    return c;
}

/* The encoding's ans node and its frames, located in the encoded bytes. */
struct ans_loc {
    struct qv__mem m;
    struct qv__node *root, *nd;
    uint64_t node_off;  /* the node's offset (what its errors name) */
    size_t table_at;    /* buffer 0 (frame table) in the encoded bytes */
    size_t frames_at;   /* buffer 1 (blocks) */
    int64_t nframes;
    size_t stride;
};

static int ans_locate(struct enc_env *env, const struct qv_encoded *e, struct ans_loc *l) {
    struct qv_error err;
    memset(l, 0, sizeof *l);
    l->m.r = env->r;
    if (qv__tree_parse(&l->m, e->data, e->size, 0, 0, 0, &l->root, &err))
        fail_msg("parse: %s", err.message);
    l->nd = find_enc(l->root, QV_ENC_ANS);
    if (!l->nd) {
        qv__mem_free_all(&l->m);
        return 0;
    }
    assert_true(l->nd->buf[0] >= e->data && l->nd->buf[0] < e->data + e->size);
    assert_true(l->nd->buf[1] >= e->data && l->nd->buf[1] < e->data + e->size);
    l->node_off = l->nd->offset;
    l->table_at = (size_t)(l->nd->buf[0] - e->data);
    l->frames_at = (size_t)(l->nd->buf[1] - e->data);
    l->nframes = qv__general_nframes(l->nd);
    l->stride = l->nd->nparams == 2 ? 24 : 16;
    return 1;
}

static void ans_loc_free(struct ans_loc *l) { qv__mem_free_all(&l->m); }

/* Frame f's block [beg, end) in the encoded bytes and its first value and
 * value count. */
static void frame_bounds(const struct ans_loc *l, int64_t f, size_t *beg, size_t *end,
                         int64_t *first, int64_t *count) {
    const uint8_t *t = l->nd->buf[0];
    *beg = l->frames_at + (size_t)(f ? rd64(t + (size_t)(f - 1) * l->stride) : 0);
    *end = l->frames_at + (size_t)rd64(t + (size_t)f * l->stride);
    if (l->stride == 24) {
        *first = f ? (int64_t)rd64(t + (size_t)(f - 1) * 24 + 16) : 0;
        *count = (int64_t)rd64(t + (size_t)f * 24 + 16) - *first;
    } else {
        const int64_t fv = l->nd->params[0];
        *first = f * fv;
        *count = l->nd->count - *first < fv ? l->nd->count - *first : fv;
    }
}

static int visit_none(void *ctx, const struct qv_enc_node_info *info) {
    (void)ctx;
    (void)info;
    return 0;
}

static void check_err(int rc, const struct qv_error *err, const char *what) {
    if (rc == 0) return;
    if (rc != EIO) fail_msg("%s: rc %d (%s)", what, rc, err->message);
    if (!strstr(err->message, "corrupt")) fail_msg("%s: EIO without the node: %s", what, err->message);
}

/* The encoded chunk `bad` (a copy of a good one of `in`, damaged inside
 * frame `df` of the ans node, or its table entry when df < 0 means "any
 * frame") decoded whole, by ranges and by takes. Every call gives 0 or a
 * corrupt-node EIO; values of frames other than df decode exactly.
 * Returns the number of failed calls. `want` is an error substring every
 * failure must carry (NULL: any corrupt node). */
static int decode_damaged(struct enc_env *env, const uint8_t *bad, size_t size,
                          const struct qv_values *in, const struct ans_loc *l, int64_t df,
                          const char *want) {
    const unsigned w = kind_width(in->kind, 0);
    const int64_t n = in->count;
    struct qv_error err = {0};
    struct qv_decoder *d;
    int rc = qv_decoder_open(bad, size, in->kind, 0, n, env->r, &d, &err);
    check_err(rc, &err, "open");
    if (rc) return 1;
    int failed = 0;
    uint8_t *o = malloc((size_t)n * w + 8);
    struct qv_decode_out out = {0};
    out.values = o;
    size_t fb, fe;
    int64_t ffirst = 0, fcount = 0;
    if (df >= 0) frame_bounds(l, df, &fb, &fe, &ffirst, &fcount);
#define CHECK_OUT(rc_, what_)                                                                       \
    do {                                                                                            \
        check_err(rc_, &err, what_);                                                                \
        if (rc_) {                                                                                  \
            failed++;                                                                               \
            if (want && !strstr(err.message, want))                                                 \
                fail_msg("%s: \"%s\" lacks \"%s\"", what_, err.message, want);                      \
        }                                                                                           \
    } while (0)
    /* The damaged frame alone, by range and by take (first, middle, last). */
    if (df >= 0) {
        rc = qv_decoder_decode_range(d, ffirst, fcount, &out, &err);
        CHECK_OUT(rc, "range of the frame");
        int64_t rows[3] = {ffirst, ffirst + fcount / 2, ffirst + fcount - 1};
        rc = qv_decoder_take(d, rows, 3, &out, &err);
        CHECK_OUT(rc, "take in the frame");
        /* A range across its start, and one across its end. */
        if (ffirst > 0) {
            rc = qv_decoder_decode_range(d, ffirst - 1, 2, &out, &err);
            CHECK_OUT(rc, "range across the frame's start");
        }
        /* The other frames: exact. */
        for (int64_t g = 0; g < l->nframes; g++) {
            if (g == df) continue;
            size_t gb, ge;
            int64_t gfirst, gcount;
            frame_bounds(l, g, &gb, &ge, &gfirst, &gcount);
            rc = qv_decoder_decode_range(d, gfirst, gcount, &out, &err);
            if (rc) fail_msg("frame %lld (undamaged; %lld damaged): %s", (long long)g,
                             (long long)df, err.message);
            assert_memory_equal(o, (const uint8_t *)in->values + (size_t)gfirst * w,
                                (size_t)gcount * w);
            int64_t one = gfirst + gcount - 1;
            rc = qv_decoder_take(d, &one, 1, &out, &err);
            if (rc) fail_msg("take in frame %lld (undamaged): %s", (long long)g, err.message);
            assert_memory_equal(o, (const uint8_t *)in->values + (size_t)one * w, w);
        }
    }
    /* Takes coming back to the damaged frame and to undamaged ones (the
     * decoder keeps frames it meets again): the undamaged stay exact. */
    for (int round = 0; df >= 0 && l->nframes > 1 && round < 6; round++) {
        const int64_t g = (df + 1 + round / 2) % l->nframes;
        if (g == df) continue;
        size_t gb, ge;
        int64_t gfirst, gcount;
        frame_bounds(l, g, &gb, &ge, &gfirst, &gcount);
        int64_t two[2] = {gfirst, gfirst + gcount - 1};
        rc = qv_decoder_take(d, two, 2, &out, &err);
        if (rc) fail_msg("take in frame %lld (undamaged), round %d: %s", (long long)g, round,
                         err.message);
        assert_memory_equal(o, (const uint8_t *)in->values + (size_t)two[0] * w, w);
        assert_memory_equal(o + w, (const uint8_t *)in->values + (size_t)two[1] * w, w);
        int64_t mixed[4] = {ffirst, ffirst + fcount - 1, gfirst, gfirst + gcount - 1};
        if (g < df) {
            mixed[0] = gfirst, mixed[1] = gfirst + gcount - 1;
            mixed[2] = ffirst, mixed[3] = ffirst + fcount - 1;
        }
        rc = qv_decoder_take(d, mixed, 4, &out, &err);
        CHECK_OUT(rc, "take over the damaged frame and another");
    }
    /* Whole; a take over every frame. */
    rc = qv_decoder_decode_range(d, 0, n, &out, &err);
    CHECK_OUT(rc, "whole");
    if (!rc && df >= 0) {
        /* Outside the damaged frame, the values are right. */
        assert_memory_equal(o, in->values, (size_t)ffirst * w);
        assert_memory_equal(o + (size_t)(ffirst + fcount) * w,
                            (const uint8_t *)in->values + (size_t)(ffirst + fcount) * w,
                            (size_t)(n - ffirst - fcount) * w);
    }
    int64_t rows[40];
    for (int i = 0; i < 40; i++) rows[i] = (int64_t)i * (n - 1) / 39;
    rc = qv_decoder_take(d, rows, 40, &out, &err);
    CHECK_OUT(rc, "take");
    /* Predicates on the encoded values, whole and on a window with a
     * selection. */
    uint64_t *bits = calloc((size_t)n / 64 + 2, 16);
    uint64_t *sel = bits + n / 64 + 2;
    for (int64_t i = 0; i < n; i += 3) sel[i >> 6] |= UINT64_C(1) << (i & 63);
    struct qv_enc_pred pr = {.op = QV_ENC_OP_BETWEEN, .lo = -98, .hi = 1003, .ulo = 5, .uhi = 70003};
    rc = qv_decoder_filter(d, 0, n, &pr, NULL, bits, &err);
    CHECK_OUT(rc, "filter");
    pr.op = QV_ENC_OP_EQ;
    rc = qv_decoder_filter(d, n / 4, n - n / 4, &pr, sel, bits, &err);
    CHECK_OUT(rc, "filter with a selection");
    free(bits);
#undef CHECK_OUT
    free(o);
    qv_decoder_close(d);
    /* The inspection walk decompresses the first frame. */
    rc = qv_enc_walk(bad, size, env->r, visit_none, NULL, &err);
    check_err(rc, &err, "walk");
    char tree[512];
    rc = qv_enc_describe(bad, size, env->r, tree, sizeof tree, &err);
    if (rc != EOVERFLOW) check_err(rc, &err, "describe");
    return failed;
}

/* Damages each part of the ans frames of encoded chunk `e` of `in`: the
 * kind byte (to another kind: refused, naming the node), nsym, the table,
 * the states and the stream of the first, a middle and the last frame;
 * the frame table's ends and raw sizes. */
static void damage_ans_frames(struct enc_env *env, const struct qv_encoded *e,
                              const struct qv_values *in, uint64_t seed) {
    const uint64_t base0 = qv_reservation_used(env->r);
    struct ans_loc l;
    assert_true(ans_locate(env, e, &l));
    const uint64_t base = qv_reservation_used(env->r);
    uint8_t *bad = malloc(e->size);
    uint64_t s = seed;
    char node[64];
    snprintf(node, sizeof node, "corrupt ans node at byte %llu", (unsigned long long)l.node_off);
    int64_t pick[3] = {0, l.nframes / 2, l.nframes - 1};
    int failed = 0, tries = 0;
    for (int pi = 0; pi < 3; pi++) {
        const int64_t f = pick[pi];
        if (pi && f == pick[pi - 1]) continue;
        size_t beg, end;
        int64_t first, count;
        frame_bounds(&l, f, &beg, &end, &first, &count);
        assert_true(end > beg && end <= e->size);
        /* The kind: every unknown kind is refused with the node named, and
         * a coded block read as the other coded kind (8 states for 32 or
         * the other way) is refused too. */
        if (e->data[beg] == 1 || e->data[beg] == 2) {
            memcpy(bad, e->data, e->size);
            bad[beg] = (uint8_t)(3 - e->data[beg]);
            assert_true(decode_damaged(env, bad, e->size, in, &l, f, node) >= 3);
        }
        for (int k = 3; k < 256; k += 51) {
            memcpy(bad, e->data, e->size);
            bad[beg] = (uint8_t)k;
            int fl = decode_damaged(env, bad, e->size, in, &l, f, node);
            assert_true(fl >= 3);
            memcpy(bad, e->data, e->size);
            bad[beg] = (uint8_t)k;
            assert_true(decode_damaged(env, bad, e->size, in, &l, f, "unknown block kind") >= 3);
        }
        /* A coded block flipped to stored (kind 0): its length is not raw + 1. */
        if (e->data[beg] != 0) {
            memcpy(bad, e->data, e->size);
            bad[beg] = 0;
            assert_true(decode_damaged(env, bad, e->size, in, &l, f, "stored block of the wrong size") >= 3);
        }
        /* Positions: nsym, every table byte, each state byte, stream words
         * (first, last, random), each to complement, 0 and 0xFF. */
        size_t pos[64];
        int np = 0;
        const size_t sa = e->data[beg] != 0 ? beg + states_at(e->data + beg) : beg + 1;
        const size_t states = e->data[beg] == 2 ? 128 : 32;
        for (size_t p = beg + 1; p < sa && np < 24; p++) pos[np++] = p;
        for (size_t p = sa; p < sa + states && p < end && np < 40; p += states / 11) pos[np++] = p;
        if (sa + states < end) {
            pos[np++] = sa + states;
            pos[np++] = sa + states + 1;
            pos[np++] = end - 1;
            pos[np++] = end - 2;
            for (int r = 0; r < 10; r++)
                pos[np++] = sa + states + (size_t)(rng_next(&s) % (end - sa - states));
        }
        for (int pi2 = 0; pi2 < np; pi2++) {
            for (int v = 0; v < 3; v++) {
                memcpy(bad, e->data, e->size);
                const uint8_t was = e->data[pos[pi2]];
                bad[pos[pi2]] = v == 0 ? (uint8_t)~was : v == 1 ? 0 : 0xFF;
                if (bad[pos[pi2]] == was) continue;
                failed += decode_damaged(env, bad, e->size, in, &l, f, NULL) > 0;
                tries++;
                assert_int_equal(qv_reservation_used(env->r), base);
            }
        }
        /* Frame table: this frame's end beyond the blocks, before its
         * start; its raw size 0, odd, huge, one word more and less. */
        const size_t te = l.table_at + (size_t)f * l.stride;
        const uint64_t raw = rd64(e->data + te + 8);
        const uint64_t ends[] = {UINT64_MAX, (uint64_t)l.nd->buf_len[1] + 1,
                                 f ? rd64(e->data + te - l.stride) - 1 : 0};
        for (int i = 0; i < 3; i++) {
            if (f == 0 && i == 2) continue;
            memcpy(bad, e->data, e->size);
            memcpy(bad + te, &ends[i], 8);
            int fl = decode_damaged(env, bad, e->size, in, &l, -1, NULL);
            assert_true(fl >= 1);
        }
        const uint64_t raws[] = {0, 7, raw + 1, raw + 8, raw - 8, UINT64_MAX, UINT64_C(1) << 40,
                                 (end - beg) * 65536 + 65536 + 8};
        for (size_t i = 0; i < sizeof raws / sizeof raws[0]; i++) {
            memcpy(bad, e->data, e->size);
            memcpy(bad + te + 8, &raws[i], 8);
            int fl = decode_damaged(env, bad, e->size, in, &l, f, NULL);
            assert_true(fl >= 1);
            assert_int_equal(qv_reservation_used(env->r), base);
        }
    }
    /* Most damage is caught (a checksum-free decode; the file's block
     * checksums catch the rest). */
    print_message("  %-6s %6lld values, %2lld ans frames: %d of %d damaged blocks refused\n",
                  qv_value_kind_name(in->kind), (long long)in->count, (long long)l.nframes, failed,
                  tries);
    if (failed * 4 < tries * 3) fail_msg("%d of %d damaged blocks refused", failed, tries);
    free(bad);
    ans_loc_free(&l);
    assert_int_equal(qv_reservation_used(env->r), base0);
}

static void test_kinds_in_ans_frames_damaged(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1024, 8193, 20000};
    int autos = 0;
    for (int forced = 1; forced >= 0; forced--) {
        qv_encode_force_entropy_layout(forced ? QV__ENTROPY_ANS : 0);
        for (size_t ki = 0; ki < NKCASES; ki++)
            for (size_t si = 0; si < 3; si++) {
                const int64_t n = sizes[si];
                struct col c = skewed_col(&kcases[ki], n, 11 + ki * 5 + si);
                struct qv_encoded e = roundtrip(&env, &c.v, NULL, 4, (uint64_t)n + ki);
                struct ans_loc l;
                const int has = ans_locate(&env, &e, &l);
                if (has) ans_loc_free(&l);
                if (forced && !has) {
                    char tree[1024];
                    struct qv_error err;
                    qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err);
                    fail_msg("%s n=%lld: ans forced, got %s", qv_value_kind_name(c.v.kind),
                             (long long)n, tree);
                }
                /* Left to choose, the cascade stores the int64 codes in
                 * ans frames at this size (for some seeds patched, whose
                 * estimate wins with the rare codes as exceptions). */
                if (!forced && n == 20000 && ki == 0 && !has)
                    fail_msg("%s n=%lld: not in ans frames", qv_value_kind_name(c.v.kind),
                             (long long)n);
                autos += !forced && has;
                if (has && (forced || ki < 3)) damage_ans_frames(&env, &e, &c.v, 99 + ki);
                qv_encoded_release(env.r, &e);
                col_free(&c);
            }
    }
    qv_encode_force_entropy_layout(0);
    assert_true(autos >= 4);
    env_close(&env);
}

/* 100,000 int64 values (7 frames of 16,384) and a column with one value
 * of 8 bits in a thousand: round trips and damaged frames. */
static void test_large_and_nearly_constant(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = skewed_col(&kcases[0], 100000, 4242);
    struct qv_encoded e = roundtrip(&env, &c.v, NULL, 8, 1);
    struct ans_loc l;
    assert_true(ans_locate(&env, &e, &l));
    assert_int_equal(l.nframes, 7);
    ans_loc_free(&l);
    damage_ans_frames(&env, &e, &c.v, 5);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    /* Almost one value: the blocks are a table, states and a few words. */
    qv_encode_force_entropy_layout(QV__ENTROPY_ANS);
    c = col_words(QV_KIND_INT64, 50000);
    for (int64_t i = 0; i < 50000; i++) ((int64_t *)c.values)[i] = 7 + (i % 1000 == 999 ? 200 : 0);
    e = roundtrip(&env, &c.v, NULL, 8, 2);
    assert_true(ans_locate(&env, &e, &l));
    ans_loc_free(&l);
    damage_ans_frames(&env, &e, &c.v, 6);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    qv_encode_force_entropy_layout(0);
    env_close(&env);
}

/* A column the mask keeps from ans (ANS not allowed; zstd allowed) has no
 * ans node; the forced layout then gives no entropy stage at all. */
static void test_allowed_mask(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = skewed_col(&kcases[0], 20000, 8);
    for (int forced = 0; forced <= 1; forced++) {
        qv_encode_force_entropy_layout(forced ? QV__ENTROPY_ANS : 0);
        struct qv_encode_options o = {0};
        o.allowed = ~QV_ENC_BIT(QV_ENC_ANS) & (QV_ENC_BIT(QV_ENC_COUNT) - 1);
        struct qv_encoded e = roundtrip(&env, &c.v, &o, 3, 3);
        struct ans_loc l;
        assert_false(ans_locate(&env, &e, &l));
        qv_encoded_release(env.r, &e);
    }
    qv_encode_force_entropy_layout(0);
    col_free(&c);
    env_close(&env);
}

/* `trials` copies of chunk e (of `in`) with 1 to 3 bytes changed in
 * [lo, hi) (the ans blocks): opened, decoded whole, by a range and by a
 * take into outputs of the kind (binary: offsets and data grown from the
 * reservation), each 0 or a corrupt-node EIO, nothing left charged.
 * Returns the calls that failed. */
static int damage_region(struct enc_env *env, const struct qv_encoded *e, const struct qv_values *in,
                         size_t lo, size_t hi, int trials, uint64_t seed) {
    uint8_t *bad = malloc(e->size);
    uint64_t s = seed;
    int failed = 0;
    const uint64_t base = qv_reservation_used(env->r);
    const int64_t n = in->count;
    for (int t = 0; t < trials; t++) {
        memcpy(bad, e->data, e->size);
        for (int k = 0; k <= t % 3; k++) {
            size_t at = lo + (size_t)(rng_next(&s) % (hi - lo));
            bad[at] = t % 5 == 0 ? (uint8_t)rng_next(&s) : bad[at] ^ (uint8_t)(1u << (rng_next(&s) % 8));
        }
        struct qv_error err = {0};
        struct qv_decoder *d;
        int rc = qv_decoder_open(bad, e->size, in->kind, in->fixed_width, n, env->r, &d, &err);
        check_err(rc, &err, "open");
        if (rc) {
            failed++;
            continue;
        }
        struct qv_decode_out o;
        out_alloc(&o, in, n);
        rc = qv_decoder_decode_range(d, 0, n, &o, &err);
        check_err(rc, &err, "whole");
        failed += rc != 0;
        if (!rc && is_bin(in->kind)) assert_true(o.data_size <= o.data_capacity);
        out_free(&o, env->r);
        int64_t start = (int64_t)(rng_next(&s) % (uint64_t)n), len = n - start < 300 ? n - start : 300;
        out_alloc(&o, in, len);
        rc = qv_decoder_decode_range(d, start, len, &o, &err);
        check_err(rc, &err, "range");
        failed += rc != 0;
        out_free(&o, env->r);
        int64_t rows[16];
        for (int i = 0; i < 16; i++) rows[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        sort_rows(rows, 16);
        out_alloc(&o, in, 16);
        rc = qv_decoder_take(d, rows, 16, &o, &err);
        check_err(rc, &err, "take");
        failed += rc != 0;
        out_free(&o, env->r);
        qv_decoder_close(d);
        assert_int_equal(qv_reservation_used(env->r), base);
    }
    free(bad);
    return failed;
}

/* ans forced at the root (a whole-tree frame, or string frames): every
 * kind round-trips, and bit flips in the encoding decode or give EIO. */
static size_t g_words(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    static const char *w[] = {"yes", "no", "no", "maybe", "no", ""};
    const char *x = w[rng_next(s) % 6];
    memcpy(b, x, strlen(x));
    return strlen(x);
}

static void test_forced_root_every_kind(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 5000;
    struct col cols[8];
    int k = 0;
    uint64_t s = 17;
    cols[k] = col_words(QV_KIND_BOOL, n);
    for (int64_t i = 0; i < n; i++) qv_bit_put(cols[k].values, i, rng_next(&s) % 9 == 0);
    k++;
    cols[k] = col_words(QV_KIND_FLOAT64, n);
    for (int64_t i = 0; i < n; i++) ((double *)cols[k].values)[i] = (double)skew_code(&s) / 4;
    k++;
    cols[k] = col_words(QV_KIND_FLOAT32, n);
    for (int64_t i = 0; i < n; i++) ((float *)cols[k].values)[i] = (float)skew_code(&s) * 1.5f;
    k++;
    cols[k++] = skewed_col(&kcases[0], n, 3);
    cols[k++] = skewed_col(&kcases[7], n, 4);
    cols[k++] = col_strings(QV_KIND_BINARY, n, g_words, 5);
    cols[k++] = col_strings(QV_KIND_LARGE_BINARY, n, g_words, 6);
    cols[k] = col_words(QV_KIND_FIXED_BINARY, n);
    free(cols[k].values);
    cols[k].values = malloc((size_t)n * 4);
    cols[k].v.values = cols[k].values;
    cols[k].v.fixed_width = 4;
    for (int64_t i = 0; i < n * 4; i++) ((uint8_t *)cols[k].values)[i] = skew_code(&s);
    k++;
    for (int i = 0; i < k; i++) {
        struct qv_encode_options o = {0};
        o.force = QV_ENC_ANS;
        struct qv_encoded e = roundtrip(&env, &cols[i].v, &o, 5, (uint64_t)i);
        assert_int_equal(root_encoding(&e), QV_ENC_ANS);
        /* Flips anywhere (binary kinds too: corrupt_trials decodes them
         * into a values array only, so it is kept to fixed widths). */
        if (!is_bin(cols[i].v.kind) && cols[i].v.kind != QV_KIND_FIXED_BINARY)
            corrupt_trials(&env, &e, cols[i].v.kind, n, 300, 1 + (uint64_t)i, 100, 40);
        /* The first block's kind byte: refused, naming the root; bytes of
         * the blocks changed: refused or decoded, for every kind. */
        struct ans_loc l;
        assert_true(ans_locate(&env, &e, &l));
        size_t beg, end;
        int64_t first, cnt;
        frame_bounds(&l, 0, &beg, &end, &first, &cnt);
        const size_t blocks = l.frames_at, blocks_end = l.frames_at + l.nd->buf_len[1];
        const size_t table = l.table_at, table_end = l.table_at + l.nd->buf_len[0];
        ans_loc_free(&l);
        assert_true(damage_region(&env, &e, &cols[i].v, blocks, blocks_end, 300, 7 + (uint64_t)i) > 0);
        /* ... and of the frame table (ends, raw sizes, value ends). */
        assert_true(damage_region(&env, &e, &cols[i].v, table, table_end, 100, 8 + (uint64_t)i) > 0);
        uint8_t *bad = malloc(e.size);
        memcpy(bad, e.data, e.size);
        bad[beg] = 9;
        struct qv_error err = {0};
        struct qv_decoder *d;
        assert_int_equal(qv_decoder_open(bad, e.size, cols[i].v.kind, cols[i].v.fixed_width, n,
                                         env.r, &d, &err), 0);
        struct qv_decode_out o2;
        out_alloc(&o2, &cols[i].v, n);
        assert_int_equal(qv_decoder_decode_range(d, 0, n, &o2, &err), EIO);
        if (!strstr(err.message, "corrupt ans node at byte 0") ||
            !strstr(err.message, "unknown block kind"))
            fail_msg("%s: %s", qv_value_kind_name(cols[i].v.kind), err.message);
        out_free(&o2, env.r);
        qv_decoder_close(d);
        free(bad);
        qv_encoded_release(env.r, &e);
    }
    for (int i = 0; i < k; i++) col_free(&cols[i]);
    env_close(&env);
}

/* ans forced at the root of tiny chunks (0 to 9 values, no frame or a
 * frame of a few bytes, often a stored block) of each kind. */
static void test_forced_tiny_chunks(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t counts[] = {0, 1, 2, 7, 8, 9};
    static const enum qv_value_kind kinds[] = {QV_KIND_INT64, QV_KIND_UINT8, QV_KIND_BOOL,
                                               QV_KIND_FLOAT32, QV_KIND_BINARY,
                                               QV_KIND_LARGE_BINARY, QV_KIND_FIXED_BINARY};
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            const int64_t n = counts[ci];
            struct col c;
            if (is_bin(kinds[ki])) {
                c = col_strings(kinds[ki], n, g_words, 40 + ci);
            } else {
                c = col_words(kinds[ki], n);
                for (int64_t i = 0; i < n * 8; i++) ((uint8_t *)c.values)[i] = (uint8_t)(i * 7);
                if (kinds[ki] == QV_KIND_FIXED_BINARY) c.v.fixed_width = 3;
            }
            struct qv_encode_options o = {0};
            o.force = QV_ENC_ANS;
            struct qv_encoded e = roundtrip(&env, &c.v, &o, 3, (uint64_t)n);
            assert_int_equal(root_encoding(&e), QV_ENC_ANS);
            if (n > 0) {
                struct ans_loc l;
                assert_true(ans_locate(&env, &e, &l));
                const size_t lo = l.frames_at, hi = l.frames_at + l.nd->buf_len[1];
                ans_loc_free(&l);
                assert_true(damage_region(&env, &e, &c.v, lo, hi, 60, 3 + (uint64_t)n) > 0);
            }
            qv_encoded_release(env.r, &e);
            col_free(&c);
        }
    env_close(&env);
}

/* A string chunk's frame table damaged so that its last frame claims
 * compressed bytes far past the frames' buffer and gigabytes of raw bytes:
 * the decoder must find the frame corrupt (EIO naming the node) without
 * first sizing its output from those unchecked numbers. general.c's
 * bin_presize took the raw sizes as a hint, bounded by 64 bytes per
 * compressed byte of the frames' span, but took the span's end from the
 * table unchecked: a 270 KB chunk with its last frame's end at 2^40 and
 * raw size 3 GiB made the whole decode allocate a 3.5 GB output before
 * the frame's span was checked (ENOMEM under a pool limit), and at 5 GiB
 * it failed with "decode: binary data would exceed 4294967296 bytes",
 * naming no node. ans frames (forced) and the cascade's zstd string
 * frames (sized) share the path. */
static size_t g_text(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i;
    (void)cap;
    static const char *w[] = {"alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "};
    size_t want = 20 + rng_next(s) % 60, l = 0;
    while (l < want) {
        const char *x = w[rng_next(s) % 6];
        memcpy(b + l, x, strlen(x));
        l += strlen(x);
    }
    return want;
}

static void test_damaged_frame_table_output_size(void **state) {
    (void)state;
    struct enc_env env;
    struct qv_error err = {0};
    struct qv_pool_options po = {0};
    po.name = "ans-presize";
    po.limit = 256u << 20;
    assert_int_equal(qv_pool_create(&po, &env.pool, &err), 0);
    assert_int_equal(qv_reservation_create(env.pool, NULL, &env.r, &err), 0);
    const int64_t n = 40000;
    for (int variant = 0; variant < 2; variant++) {
        struct col c = col_strings(variant ? QV_KIND_BINARY : QV_KIND_LARGE_BINARY, n, g_text, 1);
        struct qv_encode_options o = {0};
        if (variant == 0) o.force = QV_ENC_ANS; /* one frame over the tree */
        else o.allowed = QV_ENC_BIT(QV_ENC_PLAIN) | QV_ENC_BIT(QV_ENC_ZSTD); /* string frames */
        struct qv_encoded e = roundtrip(&env, &c.v, &o, 2, 3);
        const int enc = variant ? QV_ENC_ZSTD : QV_ENC_ANS;
        assert_int_equal(root_encoding(&e), enc);
        struct qv__mem m = {.r = env.r};
        struct qv__node *root;
        assert_int_equal(qv__tree_parse(&m, e.data, e.size, 0, 0, 0, &root, &err), 0);
        const int64_t nf = qv__general_nframes(root);
        const size_t st = root->nparams == 2 ? 24 : 16;
        assert_int_equal(st, variant ? 24 : 16);
        const size_t te = (size_t)(root->buf[0] - e.data) + (size_t)(nf - 1) * st;
        const int64_t fv = root->params[0];
        qv__mem_free_all(&m);
        int64_t last_first = 0; /* the last frame's first value */
        if (st == 24 && nf > 1) memcpy(&last_first, e.data + te - st + 16, 8);
        else if (nf > 1) last_first = (nf - 1) * fv;
        static const uint64_t raws[] = {UINT64_C(3) << 30, UINT64_C(5) << 30, 0};
        uint8_t *bad = malloc(e.size);
        for (int k = 0; k < 3; k++) {
            memcpy(bad, e.data, e.size);
            const uint64_t cend = UINT64_C(1) << 40;
            memcpy(bad + te, &cend, 8);
            if (raws[k]) memcpy(bad + te + 8, &raws[k], 8);
            struct qv_decoder *d;
            assert_int_equal(qv_decoder_open(bad, e.size, c.v.kind, 0, n, env.r, &d, &err), 0);
            for (int call = 0; call < 2; call++) {
                struct qv_decode_out out;
                const int64_t start = call ? last_first : 0, len = n - start;
                out_alloc(&out, &c.v, len);
                const uint64_t before = qv_reservation_used(env.r);
                int rc = qv_decoder_decode_range(d, start, len, &out, &err);
                char want[64];
                snprintf(want, sizeof want, "corrupt %s node at byte 0", qv_encoding_name(enc));
                if (rc != EIO || !strstr(err.message, want))
                    fail_msg("%s, last frame's end 2^40, raw %llu, rows [%lld, %lld): rc %d (%s); "
                             "output of %zu bytes",
                             qv_encoding_name(enc), (unsigned long long)raws[k], (long long)start,
                             (long long)n, rc, err.message, out.data_capacity);
                /* No output sized from the damaged table: at most 64 bytes
                 * per byte of the chunk. */
                assert_true(out.data_capacity <= 64 * e.size);
                assert_true(qv_reservation_used(env.r) - before <= 64 * e.size);
                out_free(&out, env.r);
            }
            qv_decoder_close(d);
        }
        free(bad);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* A large chunk of one value under a one-frame ans wrap (plain only): the
 * block is far smaller than its frame, and the reader's bound (raw <=
 * clen x 65536 + 65536) must still accept what the writer wrote. */
static void test_forced_wrap_highly_compressible(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1 << 16, 1 << 20};
    for (int i = 0; i < 2; i++) {
        const int64_t n = sizes[i];
        struct col c = col_words(QV_KIND_INT64, n);
        for (int64_t j = 0; j < n; j++) ((int64_t *)c.values)[j] = j == n / 2 ? 1 : 0;
        struct qv_encode_options o = {0};
        o.force = QV_ENC_ANS;
        o.allowed = QV_ENC_BIT(QV_ENC_PLAIN) | QV_ENC_BIT(QV_ENC_ANS);
        struct qv_encoded e = roundtrip(&env, &c.v, &o, 2, 9);
        struct ans_loc l;
        assert_true(ans_locate(&env, &e, &l));
        size_t beg, end;
        int64_t first, cnt;
        frame_bounds(&l, 0, &beg, &end, &first, &cnt);
        const uint64_t raw = rd64(e.data + l.table_at + 8);
        assert_true(raw >= (uint64_t)n * 8);
        assert_true(raw <= (end - beg) * 65536 + 65536);
        ans_loc_free(&l);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* Garbage under encoding id 18 headers (test_enc_corrupt's test_garbage
 * draws ids 1..14): the parser and the frames' checks refuse it. */
static void test_garbage_id18(void **state) {
    (void)state;
    struct enc_env env;
    struct qv_error err;
    struct qv_pool_options po = {0};
    po.name = "ans-garbage";
    po.limit = 256u << 20;
    assert_int_equal(qv_pool_create(&po, &env.pool, &err), 0);
    assert_int_equal(qv_reservation_create(env.pool, NULL, &env.r, &err), 0);
    /* A real ans chunk's header, then random bytes after it. */
    qv_encode_force_entropy_layout(QV__ENTROPY_ANS);
    struct col c = skewed_col(&kcases[0], 3000, 1);
    struct qv_encoded good;
    assert_int_equal(qv_encode(&c.v, NULL, env.r, &good, &err), 0);
    qv_encode_force_entropy_layout(0);
    assert_int_equal(root_encoding(&good), QV_ENC_ANS);
    uint64_t s = 18;
    const uint64_t base = qv_reservation_used(env.r);
    uint8_t *buf = malloc(good.size + 512);
    int64_t *out = malloc(3000 * 8 + 64);
    for (int it = 0; it < 6000; it++) {
        size_t len;
        if (it % 2) {
            len = (size_t)(rng_next(&s) % 64) * 8;
            for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rng_next(&s);
            if (len >= 2) buf[0] = QV_ENC_ANS, buf[1] = (uint8_t)(1 + rng_next(&s) % 9);
        } else {
            /* The good chunk with its tail (the table, the blocks) partly
             * replaced. */
            len = good.size;
            memcpy(buf, good.data, len);
            size_t from = (size_t)(rng_next(&s) % len);
            for (size_t i = from; i < len && i < from + 1 + rng_next(&s) % 40; i++)
                buf[i] = (uint8_t)rng_next(&s);
        }
        const int64_t cnt = it % 3 ? 3000 : (int64_t)(rng_next(&s) % 3000);
        struct qv_decoder *d;
        int rc = qv_decoder_open(buf, len, QV_KIND_INT64, 0, cnt, env.r, &d, &err);
        check_err(rc, &err, "open");
        if (!rc) {
            struct qv_decode_out o = {0};
            o.values = out;
            rc = qv_decoder_decode_range(d, 0, cnt, &o, &err);
            check_err(rc, &err, "decode");
            if (cnt > 2) {
                int64_t rows[2] = {1, cnt - 1};
                rc = qv_decoder_take(d, rows, 2, &o, &err);
                check_err(rc, &err, "take");
            }
            qv_decoder_close(d);
        }
        assert_int_equal(qv_reservation_used(env.r), base);
    }
    free(buf);
    free(out);
    qv_encoded_release(env.r, &good);
    col_free(&c);
    env_close(&env);
}

/* ---- Memory ---- */

/* Allocation failure at every allocation of an encode with the ans layout
 * forced (then with the cascade's choice), and of a decode. */
static void test_alloc_failures_ans(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1024, 8193, 20000};
    for (int forced = 1; forced >= 0; forced--)
        for (size_t ki = 0; ki < NKCASES; ki += 7)
            for (size_t si = 0; si < 3; si++) {
                qv_encode_force_entropy_layout(forced ? QV__ENTROPY_ANS : 0);
                const int64_t n = sizes[si];
                struct col c = skewed_col(&kcases[ki], n, 5 + si);
                struct qv_error err;
                struct qv_encoded e;
                uint64_t before = qv_pool_alloc_count(env.pool);
                assert_int_equal(qv_encode(&c.v, NULL, env.r, &e, &err), 0);
                const uint64_t allocs = qv_pool_alloc_count(env.pool) - before;
                struct ans_loc l;
                const int has = ans_locate(&env, &e, &l);
                if (has) ans_loc_free(&l);
                if (forced) assert_true(has);
                qv_encoded_release(env.r, &e);
                int enomem = 0;
                for (uint64_t nth = 1; nth <= allocs; nth++) {
                    qv_pool_inject_alloc_failure(env.pool, nth);
                    int rc = qv_encode(&c.v, NULL, env.r, &e, &err);
                    qv_pool_inject_alloc_failure(env.pool, 0);
                    if (rc) {
                        if (rc != ENOMEM)
                            fail_msg("%s n=%lld: allocation %llu: rc %d (%s)",
                                     qv_value_kind_name(c.v.kind), (long long)n,
                                     (unsigned long long)nth, rc, err.message);
                        assert_null(e.data);
                        assert_int_equal(qv_reservation_used(env.r), 0);
                        enomem++;
                        continue;
                    }
                    /* A failure the encoder absorbed (a candidate dropped):
                     * the chunk is still right. */
                    struct qv_decoder *d;
                    assert_int_equal(qv_decoder_open(e.data, e.size, c.v.kind, 0, n, env.r, &d, &err), 0);
                    struct qv_decode_out o;
                    out_alloc(&o, &c.v, n);
                    assert_int_equal(qv_decoder_decode_range(d, 0, n, &o, &err), 0);
                    assert_memory_equal(o.values, c.v.values, (size_t)n * kind_width(c.v.kind, 0));
                    out_free(&o, env.r);
                    qv_decoder_close(d);
                    qv_encoded_release(env.r, &e);
                }
                assert_true(enomem > 0);
                /* Decode: open, whole, range in the middle, take. */
                qv_encode_force_entropy_layout(0);
                assert_int_equal(qv_encode(&c.v, NULL, env.r, &e, &err), 0);
                qv_encode_force_entropy_layout(forced ? QV__ENTROPY_ANS : 0);
                qv_encoded_release(env.r, &e);
                qv_encode_force_entropy_layout(forced ? QV__ENTROPY_ANS : 0);
                assert_int_equal(qv_encode(&c.v, NULL, env.r, &e, &err), 0);
                const uint64_t base = qv_reservation_used(env.r);
                for (uint64_t nth = 1;; nth++) {
                    qv_pool_inject_alloc_failure(env.pool, nth);
                    struct qv_decoder *d = NULL;
                    int rc = qv_decoder_open(e.data, e.size, c.v.kind, 0, n, env.r, &d, &err);
                    struct qv_decode_out o;
                    out_alloc(&o, &c.v, n);
                    if (!rc) rc = qv_decoder_decode_range(d, 0, n, &o, &err);
                    if (!rc) rc = qv_decoder_decode_range(d, n / 2, 100 < n / 2 ? 100 : n / 2, &o, &err);
                    int64_t rows[3] = {0, n / 3, n - 1};
                    if (!rc) rc = qv_decoder_take(d, rows, 3, &o, &err);
                    qv_pool_inject_alloc_failure(env.pool, 0);
                    out_free(&o, env.r);
                    qv_decoder_close(d);
                    assert_int_equal(qv_reservation_used(env.r), base);
                    if (!rc) break; /* past the decode's last allocation */
                    if (rc != ENOMEM) fail_msg("decode: allocation %llu gave %d (%s)",
                                               (unsigned long long)nth, rc, err.message);
                    assert_true(nth < 10000);
                }
                qv_encoded_release(env.r, &e);
                col_free(&c);
            }
    qv_encode_force_entropy_layout(0);
    env_close(&env);
}

/* Pools of small limits: ENOMEM (nothing left charged) or the right chunk;
 * some limit below 64 MiB encodes. Decoding under small limits likewise. */
static void test_small_pool_limits(void **state) {
    (void)state;
    qv_encode_force_entropy_layout(QV__ENTROPY_ANS);
    struct col c = skewed_col(&kcases[0], 20000, 31);
    struct enc_env ok;
    env_open(&ok);
    struct qv_encoded ref;
    struct qv_error err;
    assert_int_equal(qv_encode(&c.v, NULL, ok.r, &ref, &err), 0);
    int enomem = 0, encoded = 0;
    for (uint64_t limit = 4096; limit < (64u << 20) && encoded < 3; limit += limit / 4 + 1024) {
        struct enc_env env;
        struct qv_pool_options po = {0};
        po.name = "ans-small";
        po.limit = limit;
        assert_int_equal(qv_pool_create(&po, &env.pool, &err), 0);
        assert_int_equal(qv_reservation_create(env.pool, NULL, &env.r, &err), 0);
        struct qv_encoded e;
        int rc = qv_encode(&c.v, NULL, env.r, &e, &err);
        if (rc) {
            if (rc != ENOMEM) fail_msg("limit %llu: rc %d (%s)", (unsigned long long)limit, rc, err.message);
            assert_null(e.data);
            enomem++;
        } else {
            assert_int_equal(e.size, ref.size);
            assert_memory_equal(e.data, ref.data, e.size);
            encoded++;
            qv_encoded_release(env.r, &e);
        }
        assert_int_equal(qv_reservation_used(env.r), 0);
        /* Decode the reference chunk under the same limit. */
        struct qv_decoder *d;
        rc = qv_decoder_open(ref.data, ref.size, c.v.kind, 0, c.v.count, env.r, &d, &err);
        if (!rc) {
            struct qv_decode_out o;
            out_alloc(&o, &c.v, c.v.count);
            rc = qv_decoder_decode_range(d, 0, c.v.count, &o, &err);
            if (!rc) assert_memory_equal(o.values, c.v.values, (size_t)c.v.count * 8);
            int64_t rows[2] = {5, 19999};
            if (!rc) rc = qv_decoder_take(d, rows, 2, &o, &err);
            out_free(&o, env.r);
            qv_decoder_close(d);
        }
        if (rc && rc != ENOMEM) fail_msg("decode at limit %llu: %d (%s)", (unsigned long long)limit, rc, err.message);
        env_close(&env);
    }
    assert_true(enomem > 0);
    assert_true(encoded > 0);
    qv_encoded_release(ok.r, &ref);
    env_close(&ok);
    col_free(&c);
    qv_encode_force_entropy_layout(0);
}

/* ---- A file ---- */

/* A nullable int64 column of skewed codes with nulls (the writer fills the
 * null slots) is stored in ans frames; it reads back; bytes of its ans
 * blocks damaged in the file give EIO (checksums on) or, checksums off, a
 * decode or EIO, never a crash. */
static void test_file_with_nulls(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err = {0};
    static const struct qv_field cols[] = {{.name = "answer", .type = QV_TYPE_INT64, .nullable = true}};
    const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 1, .children = cols};
    struct qv_schema *schema;
    assert_int_equal(qv_schema_create(&root, env.r, &schema, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(schema, env.r, NULL, &b, &err), 0);
    const int64_t rows = 50000;
    int64_t *vals = malloc((size_t)rows * 8);
    uint64_t s = 2024;
    for (int64_t i = 0; i < rows; i++) {
        vals[i] = i % 7 == 3 ? -1 : 1000 + geo_code(&s);
        assert_int_equal(vals[i] < 0 ? qv_append_null(qv_builder_column(b, 0))
                                     : qv_append_int64(qv_builder_column(b, 0), vals[i]),
                         0);
    }
    struct ArrowArray batch = {0};
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    struct memsink ms = {0};
    struct qv_sink sink = memsink_open(&ms, 0);
    struct qv_writer *w;
    struct qv_writer_options wo = {.row_group_rows = 20000};
    assert_int_equal(qv_writer_open_sink(&sink, schema, &wo, env.r, &w, &err), 0);
    assert_int_equal(qv_writer_write(w, &batch, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(schema);
    const size_t fsize = ms.len;

    /* Where the first row group's values segment has its ans blocks. */
    struct qv_source src;
    assert_int_equal(qv_source_from_memory(ms.p, fsize, "ans.qvr", &src, &err), 0);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open_source(&src, NULL, env.r, &rd, &err), 0);
    assert_int_equal(qv_reader_num_row_groups(rd), 3);
    size_t hits[64];
    int nh = 0;
    for (int64_t rg = 0; rg < 3; rg++) {
        struct qv_chunk_info ci;
        assert_int_equal(qv_reader_chunk_info(rd, rg, 0, &ci, &err), 0);
        assert_true(ci.null_count > 0);
        int found = 0;
        for (int i = 0; i < ci.n_segments; i++) {
            struct qv_segment_info si;
            assert_int_equal(qv_reader_segment_info(rd, rg, 0, i, &si, &err), 0);
            if (si.role != QV_SEGMENT_VALUES) continue;
            char tree[1024];
            assert_int_equal(qv_reader_segment_describe(rd, rg, 0, i, env.r, tree, sizeof tree, NULL,
                                                        NULL, &err), 0);
            if (!strstr(tree, "ans(")) fail_msg("row group %lld: %s", (long long)rg, tree);
            /* The segment as a chunk: its ans node's blocks. */
            struct qv_encoded seg = {0};
            seg.data = malloc((size_t)si.length);
            seg.size = (size_t)si.length;
            memcpy(seg.data, ms.p + si.offset, (size_t)si.length);
            struct ans_loc l;
            assert_true(ans_locate(&env, &seg, &l));
            for (int64_t f = 0; f < l.nframes && nh < 60; f++) {
                size_t beg, end;
                int64_t first, cnt;
                frame_bounds(&l, f, &beg, &end, &first, &cnt);
                hits[nh++] = (size_t)si.offset + beg;                   /* kind */
                hits[nh++] = (size_t)si.offset + beg + 5;               /* table */
                hits[nh++] = (size_t)si.offset + (beg + end) / 2;       /* stream */
            }
            ans_loc_free(&l);
            free(seg.data);
            found = 1;
        }
        assert_true(found);
    }
    qv_reader_close(rd);

    /* Reads back: row groups whole, a take. */
    uint8_t *bad = malloc(fsize);
    for (int h = -1; h < nh; h++) {
        for (int skip = 0; skip <= 1; skip++) {
            if (h < 0 && skip) continue;
            memcpy(bad, ms.p, fsize);
            if (h >= 0) bad[hits[h]] ^= (uint8_t)(h % 3 == 0 ? 0xFF : 1u << (h % 8));
            assert_int_equal(qv_source_from_memory(bad, fsize, "ans.qvr", &src, &err), 0);
            struct qv_reader_options ro = {.skip_checksums = skip};
            assert_int_equal(qv_reader_open_source(&src, &ro, env.r, &rd, &err), 0);
            int failed = 0;
            for (int64_t rg = 0; rg < 3; rg++) {
                struct ArrowArray a;
                int rc = qv_reader_read_row_group(rd, rg, NULL, 0, env.r, &a, &err);
                if (rc) {
                    if (rc != EIO) fail_msg("hit %d skip %d: rc %d (%s)", h, skip, rc, err.message);
                    failed++;
                } else {
                    const struct ArrowArray *col = a.children[0];
                    const int64_t *v = col->buffers[1];
                    const uint8_t *valid = col->buffers[0];
                    int64_t first = qv_reader_row_group_first_row(rd, rg);
                    int bad_values = 0;
                    for (int64_t i = 0; i < col->length; i++) {
                        int64_t want = vals[first + i];
                        int isvalid = valid ? (valid[(i + col->offset) >> 3] >> ((i + col->offset) & 7)) & 1 : 1;
                        if (want < 0 ? isvalid : (!isvalid || v[i + col->offset] != want)) bad_values++;
                    }
                    if (h < 0 || !skip) assert_int_equal(bad_values, 0);
                    a.release(&a);
                }
                struct qv_column_reader *cr;
                rc = qv_column_reader_open(rd, rg, 0, env.r, &cr, &err);
                if (!rc) {
                    int64_t take[3] = {0, 9000, qv_reader_row_group_rows(rd, rg) - 1};
                    struct ArrowArray a2;
                    rc = qv_column_reader_take(cr, take, 3, &a2, &err);
                    if (!rc) a2.release(&a2);
                    qv_column_reader_close(cr);
                }
                if (rc && rc != EIO) fail_msg("hit %d skip %d: take rc %d (%s)", h, skip, rc, err.message);
                failed += rc != 0;
            }
            if (h < 0) assert_int_equal(failed, 0);
            /* Checksums on: the damaged row group is refused. */
            if (h >= 0 && !skip) assert_true(failed > 0);
            qv_reader_close(rd);
            assert_int_equal(qv_reservation_used(env.r), 0);
        }
    }
    free(bad);
    free(vals);
    free(ms.p);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_garbage_blocks),
        cmocka_unit_test(test_valid_tables_hostile_states),
        cmocka_unit_test(test_crafted_blocks),
        cmocka_unit_test(test_encoder_worst_histograms),
        cmocka_unit_test(test_decoder_matches_spec),
        cmocka_unit_test(test_kinds_in_ans_frames_damaged),
        cmocka_unit_test(test_large_and_nearly_constant),
        cmocka_unit_test(test_allowed_mask),
        cmocka_unit_test(test_forced_root_every_kind),
        cmocka_unit_test(test_forced_tiny_chunks),
        cmocka_unit_test(test_damaged_frame_table_output_size),
        cmocka_unit_test(test_forced_wrap_highly_compressible),
        cmocka_unit_test(test_garbage_id18),
        cmocka_unit_test(test_alloc_failures_ans),
        cmocka_unit_test(test_small_pool_limits),
        cmocka_unit_test(test_file_with_nulls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
