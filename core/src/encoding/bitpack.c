/*
 * Bit-packing over 1024-value vectors in an interleaved lane layout
 * (FastLanes-style; see enc_internal.h for the layout).
 *
 * Why interleaved: row r of every lane starts at the same bit offset, so a
 * row is unpacked for all 32 lanes with the same shift and mask. The inner
 * loop over lanes is contiguous in memory and the compiler turns it into
 * plain SIMD shifts, ors and ands; with the width a compile-time constant
 * and the 32 rows unrolled, every shift is an immediate. No transposition,
 * no gather.
 *
 * The unpack kernels are compiled twice, generic and AVX2, because 256-bit
 * loads and stores nearly double them; base/cpu_internal.h picks one per
 * vector from the CPU (QUIVER_SIMD=baseline forces the generic one).
 *
 * Node: BITPACK, integer types; param 0 = width w (0..bits of the type);
 * buffer 0 = packed vectors, qv__bitpack_bytes(count, w) bytes.
 */
#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* ---- Sizes ---- */

uint64_t qv__bitpack_vec_bytes(int64_t rem, unsigned w) {
    if (w == 0 || rem <= 0) return 0;
    if (rem >= QV__VEC) return (uint64_t)128 * w;
    unsigned lanes = w <= 32 ? 32 : 16, lane_bits = w <= 32 ? 32 : 64;
    uint64_t rows = ((uint64_t)rem + lanes - 1) / lanes;
    uint64_t words = (rows * w + lane_bits - 1) / lane_bits;
    return words * lanes * (lane_bits / 8);
}

uint64_t qv__bitpack_bytes(int64_t n, unsigned w) {
    if (n <= 0) return 0;
    uint64_t full = (uint64_t)(n >> QV__VEC_SHIFT);
    return full * 128 * w + qv__bitpack_vec_bytes(n & (QV__VEC - 1), w);
}

/* ---- Pack kernels (encode side) ---- */

/* Packing runs once per encode and is far above the encode targets with
 * the width known only at run time (the lane loop still vectorizes), so it
 * is not specialized per width: that keeps this file quick to compile. */
static void pack32(const uint32_t *restrict in, unsigned w, uint32_t *restrict out) {
    const uint32_t mask = w == 32 ? ~0u : (1u << w) - 1;
    for (unsigned r = 0; r < 32; r++) {
        const unsigned bit = r * w, word = bit / 32, shift = bit % 32;
        uint32_t *o = out + word * 32;
        const uint32_t *x = in + r * 32;
        if (shift == 0)
            for (unsigned l = 0; l < 32; l++) o[l] = x[l] & mask;
        else
            for (unsigned l = 0; l < 32; l++) o[l] |= (x[l] & mask) << shift;
        if (shift + w > 32)
            for (unsigned l = 0; l < 32; l++) o[32 + l] = (x[l] & mask) >> (32 - shift);
    }
}

/* Widths above 32 are rare (hashes, random 64-bit keys); a loop with the
 * width at run time keeps the code small and still vectorizes over lanes. */
static void pack64(const uint64_t *restrict in, unsigned w, uint64_t *restrict out) {
    const uint64_t mask = qv__mask(w);
    for (unsigned r = 0; r < 64; r++) {
        const unsigned bit = r * w, word = bit / 64, shift = bit % 64;
        for (unsigned l = 0; l < 16; l++) {
            uint64_t v = in[r * 16 + l] & mask;
            if (shift == 0) out[word * 16 + l] = v;
            else out[word * 16 + l] |= v << shift;
            if (shift && shift + w > 64) out[(word + 1) * 16 + l] = v >> (64 - shift);
        }
    }
}

void qv__pack_vec(const uint64_t *v, int64_t rem, unsigned w, uint8_t *out, uint32_t *tmp) {
    if (w == 0 || rem <= 0) return;
    uint64_t nbytes = qv__bitpack_vec_bytes(rem, w);
    if (w <= 32) {
        /* Narrow to a full, zero-padded vector of 32-bit values first. */
        int64_t i = 0;
        for (; i < rem; i++) tmp[i] = (uint32_t)v[i];
        for (; i < QV__VEC; i++) tmp[i] = 0;
        if (rem == QV__VEC) {
            pack32(tmp, w, (uint32_t *)(void *)out);
        } else {
            uint32_t full[QV__VEC]; /* 4 KiB; partial vectors only */
            pack32(tmp, w, full);
            memcpy(out, full, nbytes);
        }
        return;
    }
    if (rem == QV__VEC) {
        pack64(v, w, (uint64_t *)(void *)out);
        return;
    }
    uint64_t in[QV__VEC], full[QV__VEC];
    memcpy(in, v, (size_t)rem * 8);
    memset(in + rem, 0, (size_t)(QV__VEC - rem) * 8);
    pack64(in, w, full);
    memcpy(out, full, nbytes);
}

/* ---- Unpack kernels (decode side) ---- */

static ALWAYS_INLINE void unpack32_body(const uint32_t *restrict in, uint32_t *restrict out,
                                        uint32_t base, const unsigned W) {
    const uint32_t mask = W == 32 ? ~0u : (1u << W) - 1;
#pragma GCC unroll 32
    for (unsigned r = 0; r < 32; r++) {
        const unsigned bit = r * W, word = bit / 32, shift = bit % 32;
        for (unsigned l = 0; l < 32; l++) {
            uint32_t v = in[word * 32 + l] >> shift;
            if (shift + W > 32) v |= in[(word + 1) * 32 + l] << (32 - shift);
            out[r * 32 + l] = (v & mask) + base;
        }
    }
}

#define CASES(M)                                                                                 \
    M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) M(16)     \
    M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30)     \
    M(31) M(32)

#define U32_CASE(W)                                                                              \
    case W: unpack32_body(in, out, base, W); return;
static ALWAYS_INLINE void unpack32_widths(const uint32_t *restrict in, unsigned w,
                                          uint32_t *restrict out, uint32_t base) {
    switch (w) {
        CASES(U32_CASE)
    default:
        for (unsigned i = 0; i < QV__VEC; i++) out[i] = base;
        return;
    }
}

static ALWAYS_INLINE void unpack64_wide(const uint64_t *restrict in, unsigned w,
                                        uint64_t *restrict out, uint64_t base) {
    const uint64_t mask = qv__mask(w);
    for (unsigned r = 0; r < 64; r++) {
        const unsigned bit = r * w, word = bit / 64, shift = bit % 64;
        for (unsigned l = 0; l < 16; l++) {
            uint64_t v = in[word * 16 + l] >> shift;
            if (shift && shift + w > 64) v |= in[(word + 1) * 16 + l] << (64 - shift);
            out[r * 16 + l] = (v & mask) + base;
        }
    }
}

/* 64-bit outputs at widths <= 32 unpack through 32-bit lanes (u32, the
 * variant of the same level) into an L1 temporary and widen: a fused kernel
 * per width would double this file's code for little gain. */
static ALWAYS_INLINE void unpack64_body(const void *restrict in, unsigned w,
                                        uint64_t *restrict out, uint64_t base,
                                        void (*u32)(const uint32_t *restrict, unsigned,
                                                    uint32_t *restrict, uint32_t)) {
    if (w > 32) {
        unpack64_wide((const uint64_t *)in, w, out, base);
        return;
    }
    uint32_t tmp[QV__VEC] __attribute__((aligned(64)));
    u32((const uint32_t *)in, w, tmp, 0);
    for (unsigned i = 0; i < QV__VEC; i++) out[i] = (uint64_t)tmp[i] + base;
}

static void unpack32_generic(const uint32_t *restrict in, unsigned w, uint32_t *restrict out,
                             uint32_t base) {
    unpack32_widths(in, w, out, base);
}
static void unpack64_generic(const void *restrict in, unsigned w, uint64_t *restrict out,
                             uint64_t base) {
    unpack64_body(in, w, out, base, unpack32_generic);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void unpack32_avx2(const uint32_t *restrict in, unsigned w,
                                          uint32_t *restrict out, uint32_t base) {
    unpack32_widths(in, w, out, base);
}
static QV__TARGET_AVX2 void unpack64_avx2(const void *restrict in, unsigned w,
                                          uint64_t *restrict out, uint64_t base) {
    unpack64_body(in, w, out, base, unpack32_avx2);
}
#endif

void qv__unpack32(const uint32_t *restrict in, unsigned w, uint32_t *restrict out,
                  uint32_t base) {
    QV__DISPATCH2(unpack32, in, w, out, base);
}

void qv__unpack64(const void *restrict in, unsigned w, uint64_t *restrict out, uint64_t base) {
    QV__DISPATCH2(unpack64, in, w, out, base);
}

/* ---- Node encode ---- */

int qv__bitpack_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, unsigned w,
                       struct qv__enode **out) {
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_BITPACK, pt, qv__pt_width(pt), n);
    if (!nd) return ENOMEM;
    nd->nparams = 1;
    nd->params[0] = w;
    uint64_t bytes = qv__bitpack_bytes(n, w);
    nd->nbufs = 1;
    nd->buf_len[0] = bytes;
    if (bytes) {
        uint8_t *p = qv__mem_alloc(&e->mem, bytes, e->err);
        if (!p) return ENOMEM;
        struct qv__mark mk = qv__stack_mark(&e->stack);
        uint32_t *tmp = qv__stack_push(&e->stack, QV__VEC * 4, e->err);
        if (!tmp) {
            qv__mem_free(&e->mem, p);
            return ENOMEM;
        }
        uint8_t *o = p;
        for (int64_t i = 0; i < n; i += QV__VEC) {
            int64_t rem = n - i < QV__VEC ? n - i : QV__VEC;
            qv__pack_vec(v + i, rem, w, o, tmp);
            o += qv__bitpack_vec_bytes(rem, w);
        }
        qv__stack_release(&e->stack, mk);
        nd->buf[0] = p;
    }
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Node decode ---- */

int qv__bitpack_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                    uint64_t base, struct qv_error *err) {
    const unsigned w = (unsigned)nd->params[0], ow = nd->width;
    const uint8_t *buf = nd->buf[0];
    const int64_t count = nd->count;
    /* Reached from `for` without the dispatch: verify the vectors here. */
    int vrc = qv__dec_check(d, nd, start, n, err);
    if (vrc) return vrc;
    uint8_t *o = out;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint64_t *tmp64 = NULL;
    uint8_t *pad = NULL;
    int64_t pos = start, end = start + n;
    while (pos < end) {
        int64_t vec = pos >> QV__VEC_SHIFT, vstart = vec << QV__VEC_SHIFT;
        int64_t vrem = count - vstart < QV__VEC ? count - vstart : QV__VEC;
        int64_t lo = pos - vstart, hi = (end - vstart < vrem ? end - vstart : vrem);
        const uint8_t *vin = buf + (uint64_t)vec * 128 * w;
        int64_t take = hi - lo;
        if (vrem < QV__VEC && w && take >= 64) {
            /* The partial tail vector is stored truncated: unpack it from a
             * zero-padded full-size copy. */
            if (!pad) {
                pad = qv__stack_push(&d->stack, (size_t)128 * w, err);
                if (!pad) goto oom;
            }
            uint64_t have = qv__bitpack_vec_bytes(vrem, w);
            memcpy(pad, vin, have);
            memset(pad + have, 0, 128 * w - have);
            vin = pad;
        }
        if (lo == 0 && take == QV__VEC && ow == 4 && w <= 32) {
            qv__unpack32((const uint32_t *)(const void *)vin, w, (uint32_t *)(void *)o,
                         (uint32_t)base);
        } else if (lo == 0 && take == QV__VEC && ow == 8) {
            qv__unpack64(vin, w, (uint64_t *)(void *)o, base);
        } else if (take < 64) {
            /* A few values: extract them one by one instead of a vector
             * (reads stay inside the truncated tail: rows < rem only). */
            for (int64_t i = 0; i < take; i++) {
                uint64_t v = qv__bitpack_get(vin, w, (unsigned)(lo + i)) + base;
                switch (ow) {
                case 1: o[i] = (uint8_t)v; break;
                case 2: ((uint16_t *)(void *)o)[i] = (uint16_t)v; break;
                case 4: ((uint32_t *)(void *)o)[i] = (uint32_t)v; break;
                default: ((uint64_t *)(void *)o)[i] = v; break;
                }
            }
        } else {
            if (!tmp64) {
                tmp64 = qv__stack_push(&d->stack, QV__VEC * 8, err);
                if (!tmp64) goto oom;
            }
            if (w <= 32 && ow <= 4) {
                uint32_t *t32 = (uint32_t *)tmp64;
                qv__unpack32((const uint32_t *)(const void *)vin, w, t32, (uint32_t)base);
                if (ow == 4) memcpy(o, t32 + lo, (size_t)take * 4);
                else if (ow == 2)
                    for (int64_t i = 0; i < take; i++)
                        ((uint16_t *)(void *)o)[i] = (uint16_t)t32[lo + i];
                else
                    for (int64_t i = 0; i < take; i++) o[i] = (uint8_t)t32[lo + i];
            } else {
                qv__unpack64(vin, w, tmp64, base);
                qv__narrow(tmp64 + lo, ow, take, o);
            }
        }
        o += (size_t)take * ow;
        pos += take;
    }
    qv__stack_release(&d->stack, mk);
    return 0;
oom:
    qv__stack_release(&d->stack, mk);
    return err ? err->code : ENOMEM;
}

/* ---- Record ----
 * Dispatch around the kernels above: the record's decoder is a node-level
 * entry (one call per range); the loops stay in qv__bitpack_dec. */

/* Integers. Param 0: the bit width w, 0..8 x width. Buffer 0: the packed
 * vectors, exactly qv__bitpack_bytes(count, w). */
static int bitpack_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 1, 1, 0, err))) return rc;
    if (nd->params[0] < 0 || nd->params[0] > (int64_t)nd->width * 8)
        return qv__corrupt(err, nd, "bit width %lld for %s values", (long long)nd->params[0],
                           qv__pt_name(nd->pt));
    return qv__want_packed(nd, qv__bitpack_bytes(nd->count, (unsigned)nd->params[0]), err);
}

static int bitpack_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                            void *out, struct qv_error *err) {
    return qv__bitpack_dec(d, nd, start, n, out, 0, err);
}

/* Values at rows[0..k): per 1024-value vector, a sparse take (fewer rows
 * than a sixteenth of their span: a cold take's one row, a selective
 * filter's survivors) reads each value in place, checking the vector's
 * bytes as a range decode would; a denser one unpacks the span and
 * gathers (qv__take_span). */
static int bitpack_take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows,
                             int64_t k, void *out, struct qv_error *err) {
    const unsigned w = (unsigned)nd->params[0], ow = nd->width;
    int rc = 0;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint32_t *t32 = NULL;
    for (int64_t i = 0, j; i < k && !rc; i = j) {
        const int64_t vec = rows[i] >> QV__VEC_SHIFT, vstart = vec << QV__VEC_SHIFT;
        for (j = i + 1; j < k && (rows[j] >> QV__VEC_SHIFT) == vec; j++) {}
        const int64_t span = rows[j - 1] + 1 - rows[i];
        uint8_t *o = (uint8_t *)out + (size_t)i * ow;
        if ((j - i) * 16 >= span && span >= 64 && w <= 32 && ow <= 4 &&
            nd->count - vstart >= QV__VEC) {
            /* Dense rows over 64 or more of a whole vector of narrow
             * words, where the range decode would unpack the vector too:
             * unpacked once, the rows picked from it (through the range
             * decode, its part was copied out first and narrowed: a
             * filter's projection of one row in eight spent 18% there).
             * Shorter spans are read value by value by the range decode. */
            if (!t32 && !(t32 = qv__stack_push(&d->stack, QV__VEC * 4, err))) {
                rc = ENOMEM;
                break;
            }
            if ((rc = qv__dec_check(d, nd, vstart, QV__VEC, err))) break;
            qv__unpack32((const uint32_t *)(const void *)(nd->buf[0] + (uint64_t)vec * 128 * w), w,
                         t32, 0);
            switch (ow) {
            case 1:
                for (int64_t t = i; t < j; t++) o[t - i] = (uint8_t)t32[rows[t] - vstart];
                break;
            case 2:
                for (int64_t t = i; t < j; t++)
                    ((uint16_t *)(void *)o)[t - i] = (uint16_t)t32[rows[t] - vstart];
                break;
            default:
                for (int64_t t = i; t < j; t++)
                    ((uint32_t *)(void *)o)[t - i] = t32[rows[t] - vstart];
                break;
            }
            continue;
        }
        if ((j - i) * 16 >= span) {
            rc = qv__take_span(d, nd, rows + i, j - i, ow, o, err);
            continue;
        }
        if ((rc = qv__dec_check(d, nd, rows[i], span, err))) break;
        const uint8_t *vin = nd->buf[0] + (uint64_t)vec * 128 * w;
        for (int64_t t = i; t < j; t++) {
            const uint64_t v = qv__bitpack_get(vin, w, (unsigned)(rows[t] - vstart));
            switch (ow) {
            case 1: o[t - i] = (uint8_t)v; break;
            case 2: ((uint16_t *)(void *)o)[t - i] = (uint16_t)v; break;
            case 4: ((uint32_t *)(void *)o)[t - i] = (uint32_t)v; break;
            default: ((uint64_t *)(void *)o)[t - i] = v; break;
            }
        }
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

static int bitpack_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_BITPACK, s->pt);
    return qv__bitpack_encode(e, s->u64, s->n, s->pt, qv__bits(s->s->umax), out);
}

const struct qv__encoding qv__enc_bitpack = {
    .id = QV_ENC_BITPACK,
    .name = "bitpack",
    .decode_cost = 1,
    .dec_word = bitpack_dec_word,
    .take_word = bitpack_take_word,
    .validate = bitpack_validate,
    .build = bitpack_build,
    .params = {"w"},
};
