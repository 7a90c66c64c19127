/*
 * An order-0 entropy coder over bytes: range asymmetric numeral systems
 * (rANS) with 12-bit frequencies, eight or 32 interleaved 32-bit states and
 * renormalization 16 bits at a time. It is the `ans` codec of the framed encodings
 * (general.c, docs/format.md 5.5.17): the entropy stage (entropy.c) uses it
 * for frames of 8-bit residuals whose symbols are skewed, where a value
 * seen most of the time costs a fraction of a bit. zstd's Huffman literals
 * spend at least one bit per symbol and its matches cost more than they
 * save on such data: on sm-fair's survey answers (5 to 7 values, 1.8 to
 * 2.6 bits of entropy) zstd came out 20-35% above the entropy, this coder
 * within a few percent of it.
 *
 * A block codes n bytes (n known to the caller: the frame's raw size):
 *   byte 0: kind. 0 = stored: the n bytes follow. 1 = rANS with eight
 *   states, 2 = with 32 (format 6.0; "wide", below); with L the states:
 *   u8 nsym - 1; the symbols in increasing order, as nsym bytes when nsym
 *   < 32, else as a 32-byte bitmap (bit s of byte s / 8: symbol s present);
 *   each symbol's frequency (1..4096, summing to 4096) in the symbols'
 *   order, one byte when below 128, else two (low 7 bits | 0x80, then the
 *   rest, which is not 0); L u32 little-endian decoder states, each in
 *   [2^16, 2^32); then the renormalization words, u16 little-endian. Byte i
 *   of the output is decoded by state i mod L: slot = x mod 4096 names the
 *   symbol s whose cumulative range [cum_s, cum_s + f_s) holds it, x
 *   becomes f_s * (x >> 12) + slot - cum_s (at least 16 f_s, as x >= 2^16),
 *   and when x < 2^16 the next word comes in (x = x << 16 | word, then at
 *   least 2^20: one word always suffices). After the last byte the stream
 *   is used up and every state is 2^16 again; anything else is a corrupt
 *   block. One renormalization step at most per symbol keeps the decoder
 *   free of loops: eight independent states step side by side.
 */
#include <math.h>

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

#define ANS_BITS 12
#define ANS_M (1u << ANS_BITS)
#define ANS_L (1u << 16)
#define ANS_LANES 8
#define ANS_WIDE 32   /* states of a wide block (kind 2) */
#define LIST_MAX 32   /* symbols listed below this count, a bitmap from it */
/* A block is wide when it codes at least ANS_WIDE_MIN bytes into at least
 * ANS_WIDE_CODED: it decodes 1.55-1.8 times as fast with AVX2, and its 24
 * more states cost some 72 bytes, less than 1% of its bytes and at most
 * 3.5% of its coded ones (on lineitem, nested and flights the wide blocks
 * came out smaller in all; the small tables' frames of a few thousand
 * bytes stay as they were: docs/benchmarks.md). */
#define ANS_WIDE_MIN 8192
#define ANS_WIDE_CODED 2048

static int lanes_for(size_t n, double coded) {
    return n >= ANS_WIDE_MIN && coded >= ANS_WIDE_CODED ? ANS_WIDE : ANS_LANES;
}

__extension__ typedef unsigned __int128 u128;
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint32_t v8u __attribute__((vector_size(32)));

size_t qv__ans_bound(size_t n) {
    /* A stored block, or the coded one it replaces while being written: at
     * most 12 bits a byte (a frequency of 1), the table and the states. */
    return 1 + 1 + 32 + 2 * 256 + 4 * ANS_WIDE + n + n / 2 + 2 * ANS_WIDE + 8;
}

/* Frequencies summing to ANS_M for counts cnt[0..256) of n > 0 bytes, each
 * present symbol at least 1: proportional, rounded down, then the
 * difference given to (or taken from) the largest, deterministically. */
static void quantize(const uint64_t *cnt, uint64_t n, uint32_t *f) {
    int64_t sum = 0;
    for (int s = 0; s < 256; s++) {
        f[s] = 0;
        if (!cnt[s]) continue;
        uint64_t q = cnt[s] * ANS_M / n;
        f[s] = q ? (uint32_t)q : 1;
        sum += f[s];
    }
    int64_t diff = (int64_t)ANS_M - sum;
    while (diff != 0) {
        int big = -1;
        for (int s = 0; s < 256; s++)
            if (f[s] && (big < 0 || f[s] > f[big])) big = s;
        if (diff > 0) {
            f[big] += (uint32_t)diff;
            diff = 0;
        } else {
            /* Every present symbol keeps at least 1: the largest has room
             * (ANS_M spread over at most 256 symbols leaves it >= 16 while
             * the sum is over), and it gives what it can. */
            int64_t take = (int64_t)f[big] - 1 < -diff ? (int64_t)f[big] - 1 : -diff;
            f[big] -= (uint32_t)take;
            diff += take;
            if (take == 0) break; /* cannot happen: every f is 1 and the sum is over */
        }
    }
}

/* The bits of the symbols counted in cnt at the frequencies f. */
static double coded_bits(const uint64_t *cnt, const uint32_t *f) {
    double bits = 0;
    for (int s = 0; s < 256; s++)
        if (cnt[s]) bits += (double)cnt[s] * (ANS_BITS - log2((double)f[s]));
    return bits;
}

double qv__ans_estimate(const uint64_t *cnt, size_t frame, double *table_out) {
    uint64_t n = 0;
    int nsym = 0;
    for (int s = 0; s < 256; s++) n += cnt[s], nsym += cnt[s] != 0;
    *table_out = 1;
    if (!n) return 0;
    uint32_t f[256];
    quantize(cnt, n, f);
    const double bits = coded_bits(cnt, f);
    double table = 1 + (nsym < LIST_MAX ? nsym : 32);
    for (int s = 0; s < 256; s++)
        if (cnt[s]) table += f[s] < 128 ? 1 : 2;
    *table_out = 1 + table + 4 * lanes_for(frame, bits / 8 * (double)frame / (double)n);
    return bits / 8;
}

static uint8_t *put_table(uint8_t *p, const uint32_t *f, int nsym) {
    *p++ = (uint8_t)(nsym - 1);
    if (nsym < LIST_MAX) {
        for (int s = 0; s < 256; s++)
            if (f[s]) *p++ = (uint8_t)s;
    } else {
        memset(p, 0, 32);
        for (int s = 0; s < 256; s++)
            if (f[s]) p[s >> 3] |= (uint8_t)(1u << (s & 7));
        p += 32;
    }
    for (int s = 0; s < 256; s++) {
        if (!f[s]) continue;
        if (f[s] < 128) {
            *p++ = (uint8_t)f[s];
        } else {
            *p++ = (uint8_t)(f[s] & 127) | 0x80;
            *p++ = (uint8_t)(f[s] >> 7);
        }
    }
    return p;
}

size_t qv__ans_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
    return qv__ans_compress_lanes(src, n, dst, cap, 0);
}

size_t qv__ans_compress_lanes(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, int lanes) {
    if (cap < qv__ans_bound(n) || (lanes && lanes != ANS_WIDE && lanes != ANS_LANES)) return 0;
    /* Four partial counts: skewed data increments one counter over and
     * over, and each increment waited on the previous one's store (a third
     * of the coder's time with one). */
    uint64_t part[4][256], cnt[256];
    memset(part, 0, sizeof part);
    size_t i4 = 0;
    for (; i4 + 4 <= n; i4 += 4) {
        part[0][src[i4]]++;
        part[1][src[i4 + 1]]++;
        part[2][src[i4 + 2]]++;
        part[3][src[i4 + 3]]++;
    }
    for (; i4 < n; i4++) part[0][src[i4]]++;
    for (int s = 0; s < 256; s++) cnt[s] = part[0][s] + part[1][s] + part[2][s] + part[3][s];
    int nsym = 0;
    for (int s = 0; s < 256; s++) nsym += cnt[s] != 0;
    if (n == 0 || nsym == 0) {
        dst[0] = 0;
        return 1;
    }
    uint32_t f[256];
    quantize(cnt, n, f);
    if (!lanes) lanes = lanes_for(n, n >= ANS_WIDE_MIN ? coded_bits(cnt, f) / 8 : 0);
    /* Per symbol: the state limit past which a word goes out first, and
     * x / f as a multiply: with m = ceil(2^44 / f), floor(x m / 2^44) =
     * floor(x / f) for every x < 2^32 (m f exceeds 2^44 by e < f <= 2^12,
     * so x e / (f 2^44) < 1 / f). The step is then x + q (4096 - f) + cum,
     * the same as (q << 12) + x mod f + cum. */
    struct esym {
        uint64_t m, xmax; /* xmax: 2^32 for a frequency of 4096 */
        uint32_t cmpl, cum;
    } es[256];
    uint32_t c = 0;
    for (int s = 0; s < 256; s++) {
        if (!f[s]) continue; /* never looked up */
        es[s].m = ((UINT64_C(1) << 44) + f[s] - 1) / f[s];
        es[s].xmax = (uint64_t)((ANS_L >> ANS_BITS) << 16) * f[s];
        es[s].cmpl = ANS_M - f[s];
        es[s].cum = c;
        c += f[s];
    }
    uint8_t *p = dst;
    *p++ = lanes == ANS_WIDE ? 2 : 1;
    p = put_table(p, f, nsym);
    uint8_t *states = p;
    p += 4 * lanes;
    /* The renormalization words are written backwards from the end of the
     * bound, then moved to follow the states. A step always stores the
     * word below w and moves w only when it went out (a select: skewed
     * data renormalizes every few symbols, in no pattern a predictor
     * finds); the store lands inside the bound, above the header. */
    uint8_t *const end = dst + cap;
    uint8_t *w = end;
#define ANS_ENC(xv, sym)                                                                       \
    do {                                                                                       \
        const struct esym *e_ = &es[sym];                                                      \
        uint32_t v_ = (xv);                                                                    \
        const uint32_t out_ = v_ >= e_->xmax;                                                  \
        w[-2] = (uint8_t)v_;                                                                   \
        w[-1] = (uint8_t)(v_ >> 8);                                                            \
        w -= 2 * out_;                                                                         \
        v_ = out_ ? v_ >> 16 : v_;                                                             \
        const uint32_t q_ = (uint32_t)(((u128)v_ * e_->m) >> 44);                              \
        (xv) = v_ + q_ * e_->cmpl + e_->cum;                                                   \
    } while (0)
    uint32_t x[ANS_WIDE];
    if (lanes == ANS_WIDE) {
        /* Last symbol first; symbol i goes to state i mod 32. */
        for (int j = 0; j < ANS_WIDE; j++) x[j] = ANS_L;
        for (size_t i = n; i-- > 0;) ANS_ENC(x[i & (ANS_WIDE - 1)], src[i]);
    } else {
        uint32_t x0 = ANS_L, x1 = ANS_L, x2 = ANS_L, x3 = ANS_L, x4 = ANS_L, x5 = ANS_L,
                 x6 = ANS_L, x7 = ANS_L;
        /* Last symbol first; symbol i goes to state i mod 8. The tail past the
         * last whole group of eight, then the groups. */
        size_t i = n;
        while (i & (ANS_LANES - 1)) {
            i--;
            switch (i & (ANS_LANES - 1)) {
            case 0: ANS_ENC(x0, src[i]); break;
            case 1: ANS_ENC(x1, src[i]); break;
            case 2: ANS_ENC(x2, src[i]); break;
            case 3: ANS_ENC(x3, src[i]); break;
            case 4: ANS_ENC(x4, src[i]); break;
            case 5: ANS_ENC(x5, src[i]); break;
            case 6: ANS_ENC(x6, src[i]); break;
            default: ANS_ENC(x7, src[i]); break; /* not reached: the tail is under 8 */
            }
        }
        while (i > 0) {
            i -= ANS_LANES;
            ANS_ENC(x7, src[i + 7]);
            ANS_ENC(x6, src[i + 6]);
            ANS_ENC(x5, src[i + 5]);
            ANS_ENC(x4, src[i + 4]);
            ANS_ENC(x3, src[i + 3]);
            ANS_ENC(x2, src[i + 2]);
            ANS_ENC(x1, src[i + 1]);
            ANS_ENC(x0, src[i]);
        }
        x[0] = x0, x[1] = x1, x[2] = x2, x[3] = x3, x[4] = x4, x[5] = x5, x[6] = x6, x[7] = x7;
    }
#undef ANS_ENC
    const size_t stream = (size_t)(end - w);
    if ((size_t)(p - dst) + stream >= n + 1 || w < p) {
        /* No gain (or, impossibly, the stream met the header): stored. */
        dst[0] = 0;
        memcpy(dst + 1, src, n);
        return n + 1;
    }
    for (int j = 0; j < lanes; j++)
        memcpy(states + 4 * j, &x[j], 4); /* little-endian hosts only, as the format */
    memmove(p, w, stream);
    return (size_t)(p - dst) + stream;
}

/* The block's `lanes` states into x, each at least 2^16, and an even
 * stream after them: the stream's start, or NULL with *why. */
static const uint8_t *read_states(const uint8_t *p, const uint8_t *end, uint32_t *x, int lanes,
                                  const char **why) {
    if (end - p < 4 * lanes) return (*why = "truncated states", NULL);
    for (int j = 0; j < lanes; j++) {
        memcpy(&x[j], p + 4 * j, 4); /* little-endian hosts only, as the format */
        if (x[j] < ANS_L) return (*why = "state out of range", NULL);
    }
    p += 4 * lanes;
    if ((size_t)(end - p) & 1) return (*why = "odd stream length", NULL);
    return p;
}

/* After the last byte: the stream used up and every state 2^16 again. */
static int check_end(const uint8_t *p, const uint8_t *end, const uint32_t *x, int lanes,
                     const char **why) {
    if (p != end) return (*why = "bytes left after the last symbol", -1);
    for (int j = 0; j < lanes; j++)
        if (x[j] != ANS_L) return (*why = "final state is not the initial one", -1);
    return 0;
}

/* ---- Wide blocks (kind 2): 32 states ----
 *
 * Byte i is decoded by state i mod 32, otherwise as a kind 1 block. Eight
 * states step as one chain of table lookups, multiplies and word feeds, so
 * vector instructions over them would wait on the chain's latency; 32
 * states are four independent chains of eight, which AVX2 steps side by
 * side (a gather for the table, a multiply, a word feed by a shuffle). One
 * 32-bit table entry holds everything a step needs: the symbol (bits 0-7),
 * slot - cum (bits 8-19) and the frequency (bits 20-31; below 4096, since
 * a block of one symbol is handled apart). */
#define WIDE_ENTRY(f, j, s) ((f) << 20 | (j) << 8 | (s))

/* The fast part of a wide block: whole groups of 32 bytes while at least
 * 64 bytes of stream are left (four groups of eight states can take at
 * most that many), no check needed. Returns the bytes decoded; x and *pp
 * move on. Both variants compute the same, byte for byte. */
static QV__ALWAYS_INLINE size_t wide_fast_body(const uint32_t *tab, uint32_t *x,
                                               const uint8_t **pp, const uint8_t *end,
                                               uint8_t *dst, size_t n) {
    const uint8_t *p = *pp;
    size_t i = 0;
    for (; i + ANS_WIDE <= n && end - p >= 64; i += ANS_WIDE) {
        /* Four groups of eight states, each as a kind 1 block's eight:
         * the bytes out, then the words fed without a branch at offsets
         * summed from the states' needs. */
        for (int g = 0; g < ANS_WIDE; g += 8) {
            uint32_t need[8], at = 0;
            for (int j = 0; j < 8; j++) {
                uint32_t xv = x[g + j];
                const uint32_t e = tab[xv & (ANS_M - 1)];
                dst[i + (size_t)(g + j)] = (uint8_t)e;
                xv = (e >> 20) * (xv >> ANS_BITS) + (e >> 8 & (ANS_M - 1));
                need[j] = xv < ANS_L;
                x[g + j] = xv;
            }
            for (int j = 0; j < 8; j++) {
                uint16_t word;
                memcpy(&word, p + 2 * at, 2); /* little-endian hosts, as the format */
                x[g + j] = x[g + j] << (need[j] << 4) | ((uint32_t)word & (0u - need[j]));
                at += need[j];
            }
            p += 2 * at;
        }
    }
    *pp = p;
    return i;
}

static size_t wide_fast_generic(const uint32_t *tab, uint32_t *x, const uint8_t **pp,
                                const uint8_t *end, uint8_t *dst, size_t n) {
    return wide_fast_body(tab, x, pp, end, dst, n);
}

#if QV__X86_DISPATCH
/* For each mask of the lanes that take a word, the index of the word
 * each such lane takes: how many lanes below it take one. */
#define FEED_I(m, j) ((uint8_t)__builtin_popcount((unsigned)(m) & ((1u << (j)) - 1)))
#define FEED_ROW(m)                                                                            \
    {FEED_I(m, 0), FEED_I(m, 1), FEED_I(m, 2), FEED_I(m, 3),                                   \
     FEED_I(m, 4), FEED_I(m, 5), FEED_I(m, 6), FEED_I(m, 7)}
#define FEED_4(m) FEED_ROW(m), FEED_ROW((m) + 1), FEED_ROW((m) + 2), FEED_ROW((m) + 3)
#define FEED_16(m) FEED_4(m), FEED_4((m) + 4), FEED_4((m) + 8), FEED_4((m) + 12)
#define FEED_64(m) FEED_16(m), FEED_16((m) + 16), FEED_16((m) + 32), FEED_16((m) + 48)
static const uint8_t feed_index[256][8] = {FEED_64(0), FEED_64(64), FEED_64(128), FEED_64(192)};

/* One step of eight states: the entries, the new states, the feed. */
#define WIDE_STEP8(X, E)                                                                       \
    do {                                                                                       \
        E = _mm256_i32gather_epi32((const int *)tab, _mm256_and_si256(X, slot_mask), 4);       \
        X = _mm256_add_epi32(                                                                  \
            _mm256_mullo_epi32(_mm256_srli_epi32(E, 20), _mm256_srli_epi32(X, ANS_BITS)),     \
            _mm256_and_si256(_mm256_srli_epi32(E, 8), slot_mask));                             \
        const __m256i need_ = _mm256_cmpeq_epi32(_mm256_srli_epi32(X, 16), zero);             \
        const unsigned m_ = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(need_));          \
        const __m256i words_ = _mm256_permutevar8x32_epi32(                                    \
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)),          \
            _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)feed_index[m_]))); \
        X = _mm256_blendv_epi8(X, _mm256_or_si256(_mm256_slli_epi32(X, 16), words_), need_);   \
        p += 2 * (unsigned)__builtin_popcount(m_);                                             \
    } while (0)

static QV__TARGET_AVX2 size_t wide_fast_avx2(const uint32_t *tab, uint32_t *x, const uint8_t **pp,
                                             const uint8_t *end, uint8_t *dst, size_t n) {
    const uint8_t *p = *pp;
    const __m256i slot_mask = _mm256_set1_epi32(ANS_M - 1), zero = _mm256_setzero_si256();
    const __m256i low8 = _mm256_set1_epi32(0xFF), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)x);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(x + 8));
    __m256i x2 = _mm256_loadu_si256((const __m256i *)(const void *)(x + 16));
    __m256i x3 = _mm256_loadu_si256((const __m256i *)(const void *)(x + 24));
    size_t i = 0;
    for (; i + ANS_WIDE <= n && end - p >= 64; i += ANS_WIDE) {
        __m256i e0, e1, e2, e3;
        WIDE_STEP8(x0, e0);
        WIDE_STEP8(x1, e1);
        WIDE_STEP8(x2, e2);
        WIDE_STEP8(x3, e3);
        /* The symbols (low bytes) of the 32 entries, in order. */
        const __m256i a = _mm256_packus_epi32(_mm256_and_si256(e0, low8), _mm256_and_si256(e1, low8));
        const __m256i b = _mm256_packus_epi32(_mm256_and_si256(e2, low8), _mm256_and_si256(e3, low8));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i),
                            _mm256_permutevar8x32_epi32(_mm256_packus_epi16(a, b), order));
    }
    _mm256_storeu_si256((__m256i *)(void *)x, x0);
    _mm256_storeu_si256((__m256i *)(void *)(x + 8), x1);
    _mm256_storeu_si256((__m256i *)(void *)(x + 16), x2);
    _mm256_storeu_si256((__m256i *)(void *)(x + 24), x3);
    *pp = p;
    return i;
}
#undef WIDE_STEP8
#endif

static int decode_wide(const uint8_t *p, const uint8_t *end, const uint8_t *syms,
                       const uint32_t *fr, int nsym, uint8_t *dst, size_t n, const char **why) {
    uint32_t x[ANS_WIDE];
    if (!(p = read_states(p, end, x, ANS_WIDE, why))) return -1;
    size_t i = 0;
    if (nsym == 1) {
        /* A frequency of 4096: every step leaves its state as it was and
         * takes no word. */
        memset(dst, syms[0], n);
    } else {
        /* Eight entries a store, the last one running past the symbol's
         * slots into the next symbol's (which it then fills) or into the
         * slack: one loop, none for remainders. (The fill is about a
         * quarter of an 8 KiB block's decode in the AVX2 kernel; four
         * entries a store and a loop for the rest were no faster.) */
        uint32_t tab[ANS_M + 8];
        uint32_t c = 0;
        for (int k = 0; k < nsym; k++) {
            const uint32_t v = fr[k], s = syms[k];
            v8u e = {WIDE_ENTRY(v, 0u, s), WIDE_ENTRY(v, 1u, s), WIDE_ENTRY(v, 2u, s),
                     WIDE_ENTRY(v, 3u, s), WIDE_ENTRY(v, 4u, s), WIDE_ENTRY(v, 5u, s),
                     WIDE_ENTRY(v, 6u, s), WIDE_ENTRY(v, 7u, s)};
            for (uint32_t j = 0; j < v; j += 8, e += 8u << 8) memcpy(tab + c + j, &e, sizeof e);
            c += v;
        }
        i = QV__DISPATCH2(wide_fast, tab, x, &p, end, dst, n);
        /* The last stream bytes (under 64) followed by zeros, for the fast
         * loop to go on with: it stops once it has read past them, which
         * is then a stream that ends early, as the checked steps below
         * would have found. */
        uint8_t pad[4 * 64];
        const size_t rest = (size_t)(end - p);
        if (i + ANS_WIDE <= n && rest < 64) {
            memset(pad, 0, sizeof pad);
            memcpy(pad, p, rest);
            const uint8_t *q = pad;
            i += QV__DISPATCH2(wide_fast, tab, x, &q, pad + rest + 64, dst + i, n - i);
            if (q > pad + rest) return (*why = "stream ends early", -1);
            p += q - pad;
        }
        for (; i < n; i++) {
            uint32_t *xs = &x[i & (ANS_WIDE - 1)];
            const uint32_t e = tab[*xs & (ANS_M - 1)];
            dst[i] = (uint8_t)e;
            *xs = (e >> 20) * (*xs >> ANS_BITS) + (e >> 8 & (ANS_M - 1));
            if (*xs < ANS_L) {
                if (end - p < 2) return (*why = "stream ends early", -1);
                *xs = *xs << 16 | (uint32_t)p[0] | (uint32_t)p[1] << 8;
                p += 2;
            }
        }
    }
    return check_end(p, end, x, ANS_WIDE, why);
}

int qv__ans_decompress(const uint8_t *src, size_t clen, uint8_t *dst, size_t n,
                       const char **why) {
    *why = NULL;
    if (clen < 1) return (*why = "empty block", -1);
    if (src[0] == 0) {
        if (clen != n + 1) return (*why = "stored block of the wrong size", -1);
        memcpy(dst, src + 1, n);
        return 0;
    }
    if (src[0] != 1 && src[0] != 2) return (*why = "unknown block kind", -1);
    const int wide = src[0] == 2;
    const uint8_t *p = src + 1, *const end = src + clen;
    if (p >= end) return (*why = "truncated table", -1);
    const int nsym = *p++ + 1;
    uint8_t syms[256];
    if (nsym < LIST_MAX) {
        if ((size_t)(end - p) < (size_t)nsym) return (*why = "truncated table", -1);
        for (int k = 0; k < nsym; k++) {
            syms[k] = p[k];
            if (k && syms[k] <= syms[k - 1]) return (*why = "symbols out of order", -1);
        }
        p += nsym;
    } else {
        if (end - p < 32) return (*why = "truncated table", -1);
        int k = 0;
        for (int s = 0; s < 256; s++)
            if (p[s >> 3] >> (s & 7) & 1) syms[k++] = (uint8_t)s;
        if (k != nsym) return (*why = "symbol bitmap disagrees with the count", -1);
        p += 32;
    }
    /* slot -> frequency << 16 | (slot - cumulative start), and its symbol:
     * the step needs no unpacking beyond a shift and a mask. */
    uint32_t fr[256];
    uint32_t c = 0;
    for (int k = 0; k < nsym; k++) {
        if (p >= end) return (*why = "truncated table", -1);
        uint32_t v = *p++;
        if (v & 0x80) {
            if (p >= end) return (*why = "truncated table", -1);
            if (*p == 0) return (*why = "a frequency below 128 in two bytes", -1);
            v = (v & 127) | (uint32_t)*p++ << 7;
        }
        if (v == 0 || v > ANS_M - c) return (*why = "frequencies do not sum to 4096", -1);
        fr[k] = v;
        c += v;
    }
    if (c != ANS_M) return (*why = "frequencies do not sum to 4096", -1);
    if (wide) return decode_wide(p, end, syms, fr, nsym, dst, n, why);
    uint32_t tab[ANS_M];
    uint8_t sym[ANS_M];
    c = 0;
    for (int k = 0; k < nsym; k++) {
        const uint32_t v = fr[k];
        /* Four entries a store (the fill was a tenth of a frame's decode). */
        v4u e = {v << 16, v << 16 | 1, v << 16 | 2, v << 16 | 3};
        uint32_t j = 0;
        for (; j + 4 <= v; j += 4, e += 4) memcpy(tab + c + j, &e, sizeof e);
        for (; j < v; j++) tab[c + j] = v << 16 | j;
        memset(sym + c, syms[k], v);
        c += v;
    }
    uint32_t x[ANS_LANES];
    if (!(p = read_states(p, end, x, ANS_LANES, why))) return -1;
    /* One step of a state: its byte out (ANS_DECODE), then a word in when
     * it fell below 2^16: ANS_STEP branches on that, ANS_FEED takes the
     * word without a branch at an offset the needs of the states before it
     * give (written as a select, gcc 12 still branched, and skewed data
     * renormalizes every few symbols in no pattern a predictor finds). The
     * fast loops run while eight steps cannot run out of words (16 bytes
     * left); the rest checks each word. */
#define ANS_DECODE(xv, i)                                                                      \
    do {                                                                                       \
        const uint32_t slot_ = (xv) & (ANS_M - 1), e_ = tab[slot_];                            \
        dst[i] = sym[slot_];                                                                   \
        (xv) = (e_ >> 16) * ((xv) >> ANS_BITS) + (e_ & 0xFFFF);                                \
    } while (0)
#define ANS_FEED(xv, need, at)                                                                 \
    do {                                                                                       \
        uint16_t word_;                                                                        \
        memcpy(&word_, p + 2 * (at), 2); /* little-endian hosts, as the format */              \
        (xv) = (xv) << ((need) << 4) | ((uint32_t)word_ & (0u - (need)));                      \
    } while (0)
#define ANS_STEP(xv, i)                                                                        \
    do {                                                                                       \
        ANS_DECODE(xv, i);                                                                     \
        if ((xv) < ANS_L) {                                                                    \
            uint16_t word_;                                                                    \
            memcpy(&word_, p, 2); /* little-endian hosts, as the format */                     \
            (xv) = (xv) << 16 | word_;                                                         \
            p += 2;                                                                            \
        }                                                                                      \
    } while (0)
    uint32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x4 = x[4], x5 = x[5], x6 = x[6],
             x7 = x[7];
    size_t i = 0;
    /* Below a word per 16 symbols (under a bit a symbol: one value seen
     * most of the time) the branch on renormalization is rarely taken and
     * costs less than the branch-free feed; above, mispredictions cost
     * more (order-0 coded frames with 3 to 250 symbols: 1.2 to 2.1 times
     * faster branch-free, and 0.8 to 0.9 times on 95/5 data). */
    /* M on the eight states, each with its byte of the eight from i. */
#define ANS_EACH(M)                                                                            \
    do {                                                                                       \
        M(x0, i);                                                                              \
        M(x1, i + 1);                                                                          \
        M(x2, i + 2);                                                                          \
        M(x3, i + 3);                                                                          \
        M(x4, i + 4);                                                                          \
        M(x5, i + 5);                                                                          \
        M(x6, i + 6);                                                                          \
        M(x7, i + 7);                                                                          \
    } while (0)
    if ((size_t)(end - p) / 2 * 16 < n) {
        for (; i + 8 <= n && end - p >= 16; i += 8) ANS_EACH(ANS_STEP);
    }
    for (; i + 8 <= n && end - p >= 16; i += 8) {
        ANS_EACH(ANS_DECODE);
        /* Where each state's word starts: the words go to the states that
         * need one, in state order; the offsets are sums of the needs, not
         * a chain of pointer updates through every step. */
        const uint32_t n0 = x0 < ANS_L, n1 = x1 < ANS_L, n2 = x2 < ANS_L, n3 = x3 < ANS_L,
                       n4 = x4 < ANS_L, n5 = x5 < ANS_L, n6 = x6 < ANS_L, n7 = x7 < ANS_L;
        const uint32_t a1 = n0, a2 = n0 + n1, a3 = a2 + n2, a4 = a2 + (n2 + n3);
        const uint32_t a5 = a4 + n4, a6 = a4 + (n4 + n5), a7 = a6 + n6, a8 = a6 + (n6 + n7);
        ANS_FEED(x0, n0, 0);
        ANS_FEED(x1, n1, a1);
        ANS_FEED(x2, n2, a2);
        ANS_FEED(x3, n3, a3);
        ANS_FEED(x4, n4, a4);
        ANS_FEED(x5, n5, a5);
        ANS_FEED(x6, n6, a6);
        ANS_FEED(x7, n7, a7);
        p += 2 * a8;
    }
    x[0] = x0, x[1] = x1, x[2] = x2, x[3] = x3, x[4] = x4, x[5] = x5, x[6] = x6, x[7] = x7;
    for (; i < n; i++) {
        uint32_t *xs = &x[i & (ANS_LANES - 1)];
        ANS_DECODE(*xs, i);
        if (*xs < ANS_L) {
            if (end - p < 2) return (*why = "stream ends early", -1);
            *xs = *xs << 16 | (uint32_t)p[0] | (uint32_t)p[1] << 8;
            p += 2;
        }
    }
#undef ANS_EACH
#undef ANS_FEED
#undef ANS_STEP
#undef ANS_DECODE
    return check_end(p, end, x, ANS_LANES, why);
}
