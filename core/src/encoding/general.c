/*
 * General-purpose compression (zstd, lz4, from their libraries) over
 * serialized subtrees, in frames.
 *
 * The node's values are cut into frames of `frame_values` values; each
 * frame is an ordinary subtree of the node's type holding that frame's
 * values, serialized and compressed on its own. A range decode decompresses
 * only the frames it touches, and the decoder keeps the frames it
 * decompressed (parsed) for the next calls (one for a range decode, a few
 * for takes; get_frame below), so sequential scans and sorted takes
 * decompress each frame once, and repeated takes not again. Compact mode
 * wraps a whole chunk's tree as a single frame; the cascade's zstd leaf for
 * strings uses frames of 16384 values, so a take of a few rows decompresses
 * a few hundred KiB, not the chunk.
 *
 * Two layouts (docs/format.md, section 5.5):
 *  - fixed frames (format 1, and whole-tree frames): param 0 = values per
 *    frame; buffer 0 = per frame two little-endian u64: end offset of its
 *    compressed bytes in buffer 1, and its decompressed size;
 *  - sized frames (format 2, the cascade's string frames): param 0 = most
 *    values in a frame, param 1 = 1; buffer 0 = per frame three u64:
 *    compressed end, decompressed size, and the end of its values (the
 *    running count). Frames end at QV__FRAME_BYTES of values or at param 0
 *    values, whichever comes first, so a row of long strings decompresses
 *    at most about QV__FRAME_BYTES (a single longer value is a frame of its
 *    own).
 * Buffer 1 = the compressed frames back to back.
 */
#include <lz4.h>
#include <pthread.h>

#include "encoding/zstd_mem.h"

size_t qv__zstd_bound(size_t n) { return ZSTD_compressBound(n); }

void qv__zcache_free(struct qv__zcache *z) {
    if (!z) return;
    ZSTD_freeCCtx(z->cctx); /* through z->zmem, so before the arena goes */
    z->cctx = NULL;
    qv__mem_free_all(&z->mem);
}

int qv__zcache_create(struct qv_pool *pool, struct qv__zcache **out, struct qv_error *err) {
    *out = NULL;
    struct qv_reservation *res;
    struct qv_reservation_options ro = {.name = "writer zstd context"};
    int rc = qv_reservation_create(pool, &ro, &res, err);
    if (rc) return rc;
    struct qv__zcache *z = qv_calloc(res, sizeof *z, err);
    if (!z) {
        qv_reservation_destroy(res);
        return ENOMEM;
    }
    z->res = res;
    z->mem.r = res;
    *out = z;
    return 0;
}

void qv__zcache_destroy(struct qv__zcache *z) {
    if (!z) return;
    struct qv_reservation *res = z->res;
    qv__zcache_free(z);
    qv_free(res, z, sizeof *z);
    qv_reservation_destroy(res);
}

/* The context (the encoder's own, or the lent cache's) is made from its
 * arena at the first compression; zstd allocates its workspace from there
 * too, inside ZSTD_compressCCtx, sized for the level and the input (and
 * made again when a larger input needs more). ZSTD_compressCCtx sets the context's parameters from the
 * level and the source size on every call, as ZSTD_compress does with its
 * own context, and the allocator does not change what zstd computes: the
 * same bytes come out. */
int qv__zstd_compress(struct qv__enc *e, void *dst, size_t cap, const void *src, size_t n,
                      int level, size_t *clen) {
    *clen = 0;
    struct qv__zcache *zc = e->zcache ? e->zcache : &e->own_zc;
    zc->zmem.m = &zc->mem;
    zc->zmem.err = e->err;
    zc->zmem.failed = 0;
    if (!zc->cctx) zc->cctx = ZSTD_createCCtx_advanced(qv__zmem_custom(&zc->zmem));
    const int made = zc->cctx != NULL;
    size_t c = made ? ZSTD_compressCCtx(zc->cctx, dst, cap, src, n, level) : 0;
    const int failed = zc->zmem.failed;
    if (!made || ZSTD_isError(c)) qv__zcache_free(zc);
    if (!made || (ZSTD_isError(c) && failed)) {
        /* The failed allocation set the reservation's message (the pool,
         * its limit and its top consumers). */
        if (!failed || !e->err || !e->err->code)
            qv_error_set(e->err, ENOMEM, "out of memory");
        return qv_error_wrap(e->err, ENOMEM, "zstd: compression context at level %d: ", level);
    }
    if (ZSTD_isError(c))
        return qv_error_set(e->err, EIO, "zstd compression failed: %s", ZSTD_getErrorName(c));
    *clen = c;
    return 0;
}

static int64_t nframes_of(int64_t count, int64_t fv) { return count ? (count + fv - 1) / fv : 0; }

/* Sized frames: two parameters, the second 1. */
static int sized(const struct qv__node *nd) { return nd->nparams == 2; }
static size_t stride(const struct qv__node *nd) { return sized(nd) ? 24 : 16; }

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t get64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

int qv__general_encode(struct qv__enc *e, int enc, int pt, uint32_t width, int64_t count,
                       int64_t frame_values, const int64_t *ends, int64_t n_ends, qv__frame_fn fn,
                       void *ctx, int force, struct qv__enode **out) {
    if (frame_values <= 0) frame_values = count > 0 ? count : 1;
    const int64_t nf = ends ? n_ends : nframes_of(count, frame_values);
    const size_t st = ends ? 24 : 16;
    struct qv__enode *nd = qv__enode_new(e, enc, pt, width, count);
    uint8_t *table = nd ? qv__mem_alloc(&e->mem, (size_t)(nf ? nf : 1) * st, e->err) : NULL;
    if (!table) return ENOMEM;
    uint8_t *comp = NULL;
    size_t comp_len = 0, comp_cap = 0;
    uint64_t raw_total = 0;
    int rc = 0;
    for (int64_t f = 0; f < nf && !rc; f++) {
        int64_t start = ends ? (f ? ends[f - 1] : 0) : f * frame_values;
        int64_t m = ends ? ends[f] - start
                         : count - start < frame_values ? count - start : frame_values;
        struct qv__enode *inner;
        int owned;
        if ((rc = fn(e, ctx, start, m, &inner, &owned))) break;
        uint64_t raw_size = inner->size;
        raw_total += raw_size;
        if (raw_size > QV_ENC_MAX_BYTES || (enc == QV_ENC_LZ4 && raw_size > (uint64_t)LZ4_MAX_INPUT_SIZE)) {
            rc = QV__DECLINED;
            break;
        }
        struct qv__mark mk = qv__stack_mark(&e->stack);
        uint8_t *raw = qv__stack_push(&e->stack, (size_t)raw_size, e->err);
        if (!raw) {
            rc = ENOMEM;
            break;
        }
        qv__enode_write(inner, raw);
        if (owned) qv__enode_drop(e, inner);
        size_t bound = enc == QV_ENC_ZSTD  ? ZSTD_compressBound((size_t)raw_size)
                       : enc == QV_ENC_ANS ? qv__ans_bound((size_t)raw_size)
                                           : (size_t)LZ4_compressBound((int)raw_size);
        if (comp_cap - comp_len < bound) {
            size_t ncap = comp_cap ? comp_cap : 4096;
            while (ncap - comp_len < bound) ncap *= 2;
            uint8_t *nc = qv__mem_realloc(&e->mem, comp, comp_cap, ncap, e->err);
            if (!nc) {
                qv__stack_release(&e->stack, mk);
                rc = ENOMEM;
                break;
            }
            comp = nc;
            comp_cap = ncap;
        }
        size_t clen;
        if (enc == QV_ENC_ZSTD) {
            rc = qv__zstd_compress(e, comp + comp_len, bound, raw, (size_t)raw_size,
                                   e->zstd_level, &clen);
        } else if (enc == QV_ENC_ANS) {
            clen = qv__ans_compress(raw, (size_t)raw_size, comp + comp_len, bound);
            if (!clen) rc = qv_error_set(e->err, EIO, "ans compression failed");
        } else {
            int c = LZ4_compress_default((const char *)raw, (char *)comp + comp_len, (int)raw_size,
                                         (int)bound);
            if (c <= 0) rc = qv_error_set(e->err, EIO, "lz4 compression failed");
            clen = c > 0 ? (size_t)c : 0;
        }
        qv__stack_release(&e->stack, mk);
        comp_len += clen;
        put64(table + f * st, comp_len);
        put64(table + f * st + 8, raw_size);
        if (ends) put64(table + f * st + 16, (uint64_t)ends[f]);
    }
    if (!rc && !force && comp_len + (uint64_t)nf * st + 32 >= raw_total) rc = QV__DECLINED;
    if (rc) {
        qv__mem_free(&e->mem, comp);
        qv__mem_free(&e->mem, table);
        qv__mem_free(&e->mem, nd);
        return rc;
    }
    nd->nparams = ends ? 2 : 1;
    nd->params[0] = frame_values;
    nd->params[1] = 1;
    nd->nbufs = 2;
    nd->buf[0] = table;
    nd->buf_len[0] = (uint64_t)nf * st;
    nd->buf[1] = comp ? comp : (const uint8_t *)"";
    nd->buf_len[1] = comp_len;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

static int wrap_one(struct qv__enc *e, void *ctx, int64_t start, int64_t n,
                    struct qv__enode **out, int *owned) {
    (void)e;
    (void)start;
    (void)n;
    *out = ctx;
    *owned = 0; /* the caller's tree */
    return 0;
}

int qv__general_wrap(struct qv__enc *e, int enc, const struct qv__enode *inner, int force,
                     struct qv__enode **out) {
    return qv__general_encode(e, enc, inner->pt, inner->width, inner->count,
                              inner->count > 0 ? inner->count : 1, NULL, 0, wrap_one,
                              (void *)inner, force, out);
}

/* ---- Decoding ---- */

int64_t qv__general_nframes(const struct qv__node *nd) {
    return sized(nd) ? (int64_t)(nd->buf_len[0] / 24) : nframes_of(nd->count, nd->params[0]);
}

/* First value of frame f and its value count (f < frames; validated). */
static int64_t frame_first(const struct qv__node *nd, int64_t f) {
    if (sized(nd)) return f ? (int64_t)get64(nd->buf[0] + (size_t)(f - 1) * 24 + 16) : 0;
    return f * nd->params[0];
}
static int64_t frame_count(const struct qv__node *nd, int64_t f) {
    if (sized(nd)) return (int64_t)get64(nd->buf[0] + (size_t)f * 24 + 16) - frame_first(nd, f);
    const int64_t fv = nd->params[0];
    return nd->count - f * fv < fv ? nd->count - f * fv : fv;
}
/* The frame holding value `pos` (< count). */
static int64_t frame_of(const struct qv__node *nd, int64_t pos) {
    if (!sized(nd)) return pos / nd->params[0];
    int64_t lo = 0, hi = qv__general_nframes(nd) - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((int64_t)get64(nd->buf[0] + (size_t)mid * 24 + 16) <= pos) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* zstd's decompression context, one per thread, kept from one frame to
 * the next. ZSTD_decompress makes (and frees) one per call, and making one
 * costs about 10 us (a ~100 KiB block allocated and set up): more than
 * decompressing a frame of the entropy stage, and a take of 100 rows of
 * lineitem decompresses ~150 such frames in as many decoders. A context
 * per decoder or per frame cache (as before) is made again for every row
 * group a scan or a take moves to; one per thread is made once. It is
 * borrowed for one decompression (so a nested use, which cannot happen
 * today, would only make a second one) and freed when the thread exits.
 * Like the per-decoder contexts it replaces, it is zstd's own allocation,
 * outside the pools: one per thread that ever decompressed a zstd frame. */
static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;
static int dctx_key_ok;

static void dctx_destroy(void *p) { ZSTD_freeDCtx(p); }
static void dctx_key_init(void) { dctx_key_ok = pthread_key_create(&dctx_key, dctx_destroy) == 0; }

ZSTD_DCtx *qv__zstd_dctx_borrow(void) {
    pthread_once(&dctx_once, dctx_key_init);
    if (dctx_key_ok) {
        ZSTD_DCtx *c = pthread_getspecific(dctx_key);
        if (c) {
            pthread_setspecific(dctx_key, NULL);
            return c;
        }
    }
    return ZSTD_createDCtx();
}

void qv__zstd_dctx_return(ZSTD_DCtx *c) {
    if (dctx_key_ok && !pthread_getspecific(dctx_key) && pthread_setspecific(dctx_key, c) == 0)
        return;
    ZSTD_freeDCtx(c);
}

int qv__general_decompress(struct qv__mem *m, const struct qv__node *nd, int64_t f,
                           uint8_t **out, size_t *out_size, struct qv_error *err) {
    const uint8_t *t = nd->buf[0];
    const size_t st = stride(nd);
    uint64_t cbeg = f ? get64(t + (size_t)(f - 1) * st) : 0, cend = get64(t + (size_t)f * st);
    uint64_t raw_size = get64(t + (size_t)f * st + 8);
    const int64_t vals = frame_count(nd, f);
    if (cend < cbeg || cend > nd->buf_len[1])
        return qv__corrupt(err, nd, "frame %lld spans compressed bytes [%llu, %llu) of %llu",
                           (long long)f, (unsigned long long)cbeg, (unsigned long long)cend,
                           (unsigned long long)nd->buf_len[1]);
    /* Bound the allocation before trusting the size: our subtrees are never
     * much larger than their plain values, lz4 cannot expand more than 255x,
     * and a zstd frame declares its size (checked below). */
    uint64_t clen = cend - cbeg;
    uint64_t plain = nd->pt == QV__PT_BOOL  ? ((uint64_t)vals + 7) / 8
                     : nd->pt == QV__PT_BIN ? QV_ENC_MAX_BYTES
                                            : (uint64_t)vals * nd->width;
    uint64_t limit = plain + plain / 2 + (1u << 16) + (uint64_t)vals * 16;
    uint64_t by_ratio = clen * (nd->enc == QV_ENC_LZ4 ? 256u : 65536u) + (1u << 16);
    if (raw_size < 8 || (raw_size & 7) || raw_size > limit || raw_size > by_ratio)
        return qv__corrupt(err, nd, "frame %lld declares an implausible %llu bytes for %llu "
                           "compressed", (long long)f, (unsigned long long)raw_size,
                           (unsigned long long)clen);
    const uint8_t *src = nd->buf[1] + cbeg;
    if (nd->enc == QV_ENC_ZSTD) {
        unsigned long long fcs = ZSTD_getFrameContentSize(src, (size_t)clen);
        if (fcs != raw_size)
            return qv__corrupt(err, nd, "frame %lld: zstd content size %llu, expected %llu",
                               (long long)f, fcs, (unsigned long long)raw_size);
    }
    uint8_t *raw = qv__mem_alloc(m, (size_t)raw_size, err);
    if (!raw) return ENOMEM;
    if (nd->enc == QV_ENC_ZSTD) {
        ZSTD_DCtx *dctx = qv__zstd_dctx_borrow();
        if (!dctx) {
            qv__mem_free(m, raw);
            return qv_error_set(err, ENOMEM, "zstd: out of memory for a decompression context");
        }
        size_t got = ZSTD_decompressDCtx(dctx, raw, (size_t)raw_size, src, (size_t)clen);
        qv__zstd_dctx_return(dctx);
        if (ZSTD_isError(got) || got != raw_size) {
            qv__mem_free(m, raw);
            return qv__corrupt(err, nd, "frame %lld: zstd: %s", (long long)f,
                               ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
        }
    } else if (nd->enc == QV_ENC_ANS) {
        const char *why;
        if (qv__ans_decompress(src, (size_t)clen, raw, (size_t)raw_size, &why)) {
            qv__mem_free(m, raw);
            return qv__corrupt(err, nd, "frame %lld: ans block of %llu bytes for %llu: %s",
                               (long long)f, (unsigned long long)clen,
                               (unsigned long long)raw_size, why);
        }
    } else {
        if (clen > (uint64_t)INT32_MAX || raw_size > (uint64_t)INT32_MAX) {
            qv__mem_free(m, raw);
            return qv__corrupt(err, nd, "lz4 frame too large");
        }
        int got = LZ4_decompress_safe((const char *)src, (char *)raw, (int)clen, (int)raw_size);
        if (got < 0 || (uint64_t)got != raw_size) {
            qv__mem_free(m, raw);
            return qv__corrupt(err, nd, "frame %lld: lz4 block does not decode to %llu bytes",
                               (long long)f, (unsigned long long)raw_size);
        }
    }
    *out = raw;
    *out_size = (size_t)raw_size;
    return 0;
}

/* The decoder keeps decompressed, parsed frames per node, each in an arena
 * of its own. A range decode (a scan: the call decodes at least a frame's
 * values) keeps only the frame it reads (decompressed or found), as a
 * sequential read never goes back. A call that decodes fewer values than
 * the frame holds (a take, a sparse filtered batch) keeps the frames it
 * comes back to, up to FRAME_SLOTS, least recently used replaced first,
 * while their decompressed bytes stay within FRAME_KEEP_BYTES (slot_for): a
 * take of a few rows per row group needs one frame per row, and a take
 * repeated on the same open file (the file layer's take cache keeps the
 * column readers, and with them these decoders) finds them again instead
 * of decompressing each row's frame once more (lineitem SF1, 100 random rows: ~370 frames per
 * take, three quarters of a warm take's instructions). Sixteen slots, not
 * four: a take visits a chunk's frames in a cycle, and a least recently
 * used cache smaller than the cycle misses every time (a row group of
 * lineitem holding 5 of the rows missed 5 of 5 with 4 slots). Sixty-four,
 * not sixteen: flights' 100-row take falls ~33 rows to a row group, ~23
 * frames of 4,096 values per chunk, and with 16 slots its warm take
 * decompressed every frame again (zstd was two thirds of it: 2.16 ms, 0.30
 * ms with 64). Small frames are what fill more slots; FRAME_KEEP_BYTES
 * bounds the bytes kept either way. The bytes
 * are charged to the decoder's reservation (not counted by
 * qv_decoder_memory, as before). */
#define FRAME_SLOTS 64
#define FRAME_KEEP_BYTES ((uint64_t)512 * 1024)

struct frame_slot {
    struct qv__mem mem;
    int64_t frame; /* -1: empty */
    struct qv__node *inner;
    uint64_t bytes; /* decompressed */
    uint64_t used;  /* the cache's clock at the last use */
};

/* Frames decompressed recently in the working slot (slot 0), to tell a
 * frame a take comes back to from one it visits once. */
#define FRAME_SEEN 64

struct qv__frame_cache {
    struct qv__frame_cache *next; /* the decoder's list, freed at close */
    uint64_t clock;
    struct qv__seen seen; /* FRAME_SEEN frames */
    struct frame_slot slot[FRAME_SLOTS];
};

static void slot_clear(struct frame_slot *s) {
    qv__mem_free_all(&s->mem);
    s->frame = -1;
    s->inner = NULL;
    s->bytes = 0;
}

void qv__frame_caches_free(struct qv__frame_cache *c) {
    for (; c; c = c->next)
        for (int i = 0; i < FRAME_SLOTS; i++) qv__mem_free_all(&c->slot[i].mem);
}

/* The slot frame f goes to. A range decode empties every slot but the
 * working one and uses it (one frame, as a sequential read needs). So does
 * a small decode the first time it meets the frame: a take that visits a
 * frame once (a cold take) decompresses into the same memory again and
 * again, as before, and does not hold more. A frame met again (qv__seen_before)
 * is kept: in an empty or the least recently used of the other slots,
 * after emptying the least recently used others while the frames kept and
 * this one (raw_size bytes) would pass FRAME_KEEP_BYTES. */
static struct frame_slot *slot_for(struct qv__frame_cache *c, int random, int64_t f,
                                   uint64_t raw_size) {
    if (!random) {
        for (int i = 1; i < FRAME_SLOTS; i++)
            if (c->slot[i].frame >= 0) slot_clear(&c->slot[i]);
        return &c->slot[0];
    }
    if (!qv__seen_before(&c->seen, FRAME_SEEN, f)) return &c->slot[0];
    struct frame_slot *victim = NULL;
    uint64_t kept = c->slot[0].bytes;
    for (int i = 1; i < FRAME_SLOTS; i++) {
        struct frame_slot *s = &c->slot[i];
        kept += s->bytes;
        if (!victim || (victim->frame >= 0 && (s->frame < 0 || s->used < victim->used)))
            victim = s;
    }
    kept -= victim->bytes;
    while (kept + raw_size > FRAME_KEEP_BYTES) {
        struct frame_slot *old = NULL;
        for (int i = 1; i < FRAME_SLOTS; i++) {
            struct frame_slot *s = &c->slot[i];
            if (s != victim && s->frame >= 0 && (!old || s->used < old->used)) old = s;
        }
        if (!old) break;
        kept -= old->bytes;
        slot_clear(old);
    }
    return victim;
}

/* Compressed bytes of frame f in buffer 1, checked against the buffer. */
static int frame_span(const struct qv__node *nd, int64_t f, uint64_t *beg, uint64_t *end,
                      struct qv_error *err) {
    const uint8_t *t = nd->buf[0];
    const size_t st = stride(nd);
    *beg = f ? get64(t + (size_t)(f - 1) * st) : 0;
    *end = get64(t + (size_t)f * st);
    if (*end < *beg || *end > nd->buf_len[1])
        return qv__corrupt(err, nd, "frame %lld spans compressed bytes [%llu, %llu) of %llu",
                           (long long)f, (unsigned long long)*beg, (unsigned long long)*end,
                           (unsigned long long)nd->buf_len[1]);
    return 0;
}

static int get_frame(struct qv__dec *d, struct qv__node *nd, int64_t f, struct qv__node **inner,
                     struct qv_error *err) {
    struct qv__frame_cache *c = nd->cache;
    uint64_t cbeg, cend;
    int rc0;
    if (!c) {
        c = qv__mem_small(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        for (int i = 0; i < FRAME_SLOTS; i++) {
            c->slot[i].mem.r = d->r;
            c->slot[i].frame = -1;
        }
        qv__seen_init(&c->seen);
        c->next = d->frames;
        d->frames = c;
        nd->cache = c;
    }
    c->clock++;
    for (int i = 0; i < FRAME_SLOTS; i++) {
        if (c->slot[i].frame == f) {
            /* A range decode keeps only the frame it reads, hit or miss:
             * a scan after takes does not go on holding what they kept. */
            if (d->want >= frame_count(nd, f))
                for (int j = 0; j < FRAME_SLOTS; j++)
                    if (j != i && c->slot[j].frame >= 0) slot_clear(&c->slot[j]);
            c->slot[i].used = c->clock;
            *inner = c->slot[i].inner;
            return 0;
        }
    }
    const int64_t vals = frame_count(nd, f);
    const uint64_t raw_hint = get64(nd->buf[0] + (size_t)f * stride(nd) + 8);
    struct frame_slot *s = slot_for(c, d->want < vals, f, raw_hint);
    slot_clear(s);
    if (d->vfn && !nd->inner) {
        /* Only this frame's compressed bytes (the table was verified with
         * the node's header). */
        rc0 = frame_span(nd, f, &cbeg, &cend, err);
        if (!rc0) rc0 = qv__dec_touch_bytes(d, nd->buf[1] + cbeg, cend - cbeg, err);
        if (rc0) return rc0;
    }
    uint8_t *raw;
    size_t raw_size;
    int rc = qv__general_decompress(&s->mem, nd, f, &raw, &raw_size, err);
    if (rc) {
        slot_clear(s);
        return rc;
    }
    struct qv__node *in;
    rc = qv__tree_parse(&s->mem, raw, raw_size, nd->depth + 1, 1, nd->offset, &in, err);
    if (!rc && (in->pt != nd->pt || in->count != vals || in->width != nd->width))
        rc = qv__corrupt(err, nd, "frame %lld holds %lld %s values, expected %lld %s",
                         (long long)f, (long long)in->count, qv__pt_name(in->pt),
                         (long long)vals, qv__pt_name(nd->pt));
    if (rc) {
        slot_clear(s);
        return rc;
    }
    s->frame = f;
    s->inner = in;
    s->bytes = raw_size;
    s->used = c->clock;
    *inner = in;
    return 0;
}

/* Walks the frames overlapping [start, start + n): calls back with each
 * frame's subtree and the local range. */
#define FOR_FRAMES(BODY)                                                                         \
    for (int64_t pos = start, end = start + n; pos < end;) {                                     \
        int64_t f = frame_of(nd, pos), fs = frame_first(nd, f);                                  \
        int64_t fe = fs + frame_count(nd, f);                                                    \
        int64_t stop = fe < end ? fe : end;                                                      \
        struct qv__node *in = NULL;                                                              \
        int rc = get_frame(d, nd, f, &in, err);                                                  \
        if (rc) return rc;                                                                       \
        int64_t lo = pos - fs, m = stop - pos;                                                   \
        BODY;                                                                                    \
        if (rc) return rc;                                                                       \
        pos = stop;                                                                              \
    }                                                                                            \
    return 0;

int qv__general_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                         void *out, struct qv_error *err) {
    FOR_FRAMES(rc = qv__dec_word(d, in, lo, m, (uint8_t *)out + (size_t)(pos - start) * nd->width, err))
}

int qv__general_dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                         uint8_t *bits, int64_t bit_off, struct qv_error *err) {
    FOR_FRAMES(rc = qv__dec_bool(d, in, lo, m, bits, bit_off + (pos - start), err))
}

/* Room for the bytes of the frames holding [start, start + n), made once
 * from their raw sizes in the frame table (a frame's raw bytes are its
 * serialized subtree: for plain strings their bytes plus encoded offsets
 * and headers, a bound a little above what they decode to), instead of
 * doubling as the frames decode: a batch of 64k strings of 1-4 KB grew
 * through a dozen copies and faulted in twice its pages. The table is
 * checked only as each frame is decompressed, so sizes above 64 bytes per
 * compressed byte are not used here (the output then grows as before),
 * nor spans past the compressed frames' buffer or sizes beyond a chunk's
 * limit: a damaged table's end of 2^40 had let 3 GiB of raw sizes through
 * (allocated before the frame was found corrupt) and 5 GiB failed the
 * decode with an error naming no node. A subtree that decodes to more
 * than its raw bytes (a dictionary) grows the output as before too. */
static int bin_presize(const struct qv__node *nd, int64_t start, int64_t n, struct qv__binout *o,
                       struct qv_error *err) {
    const uint8_t *t = nd->buf[0];
    const size_t st = stride(nd);
    const int64_t f0 = frame_of(nd, start), f1 = frame_of(nd, start + n - 1);
    const uint64_t cbeg = f0 ? get64(t + (size_t)(f0 - 1) * st) : 0,
                   cend = get64(t + (size_t)f1 * st);
    if (cend <= cbeg || cend > nd->buf_len[1] || cend - cbeg > UINT64_MAX / 64) return 0;
    const uint64_t by_span = (cend - cbeg) * 64,
                   most = by_span < QV_ENC_MAX_BYTES ? by_span : QV_ENC_MAX_BYTES;
    uint64_t raw = 0;
    for (int64_t f = f0; f <= f1; f++) {
        const uint64_t r = get64(t + (size_t)f * st + 8);
        if (r > most - raw) return 0;
        raw += r;
    }
    return o->cap - o->size >= raw + 8 ? 0 : qv__binout_presize(o, (size_t)raw, err);
}

int qv__general_dec_bin(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                        struct qv__binout *o, struct qv_error *err) {
    if (n > 0) {
        int rc = bin_presize(nd, start, n, o, err);
        if (rc) return rc;
    }
    FOR_FRAMES(rc = qv__dec_bin(d, in, lo, m, o, err))
}

/* ---- Records: zstd, lz4 and ans ---- */

/* Any type. Param 0: values per frame (1..2^31 - 1); buffer 0: per frame
 * (compressed end, raw size) as u64 pairs; buffer 1: the compressed
 * frames. Each frame's bytes and size are checked when it is
 * decompressed. */
static int general_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (nd->nparams == 2) {
        /* Sized frames: value ends strictly increasing up to the count, no
         * frame over param 0 values. */
        if ((rc = qv__want_shape(nd, 2, 2, 0, err))) return rc;
        if (nd->params[1] != 1 || nd->params[0] <= 0 || nd->params[0] > QV_ENC_MAX_COUNT)
            return qv__corrupt(err, nd, "frame layout %lld / %lld values", (long long)nd->params[1],
                               (long long)nd->params[0]);
        uint64_t nf = nd->buf_len[0] / 24;
        if (nd->buf_len[0] % 24 || (nd->count > 0) != (nf > 0) || nf > (uint64_t)nd->count)
            return qv__corrupt(err, nd, "frame table of %llu bytes for %lld values",
                               (unsigned long long)nd->buf_len[0], (long long)nd->count);
        uint64_t prev = 0;
        for (uint64_t f = 0; f < nf; f++) {
            uint64_t e = get64(nd->buf[0] + f * 24 + 16);
            if (e <= prev || e - prev > (uint64_t)nd->params[0] || e > (uint64_t)nd->count ||
                (f + 1 == nf && e != (uint64_t)nd->count))
                return qv__corrupt(err, nd, "frame %llu ends at value %llu (previous %llu, count "
                                   "%lld)", (unsigned long long)f, (unsigned long long)e,
                                   (unsigned long long)prev, (long long)nd->count);
            prev = e;
        }
        return 0;
    }
    if ((rc = qv__want_shape(nd, 1, 2, 0, err))) return rc;
    if (nd->params[0] <= 0 || nd->params[0] > QV_ENC_MAX_COUNT)
        return qv__corrupt(err, nd, "frame size %lld", (long long)nd->params[0]);
    if (nd->buf_len[0] != (uint64_t)qv__general_nframes(nd) * 16)
        return qv__corrupt(err, nd, "frame table of %llu bytes for %lld frames",
                           (unsigned long long)nd->buf_len[0],
                           (long long)qv__general_nframes(nd));
    return 0;
}

#define BIN_FRAME_VALUES (16 * QV__VEC) /* at most this many values per frame */

/* One frame of plain strings, offsets rebased to the frame. The frame's
 * plain node stands where a plain leaf would, at the zstd node's depth:
 * one level deeper, a dictionary's strings (depth 1) had their offsets at
 * the cascade's maximum, bit-packed at 17 bits where every length was 9
 * (nested's `name`: 53 KB a row group, 11 KB with delta). */
static int bin_frame(struct qv__enc *e, void *ctx, int64_t start, int64_t n,
                     struct qv__enode **out, int *owned) {
    const struct qv__src *s = ctx;
    *owned = 1;
    uint64_t *off = qv__mem_alloc(&e->mem, (size_t)(n + 1) * 8, e->err);
    if (!off) return ENOMEM;
    for (int64_t i = 0; i <= n; i++) off[i] = s->off[start + i] - s->off[start];
    /* Copied, not borrowed: the compressor drops each frame's node as soon as
     * it is serialized, and dropping frees buffers that are arena blocks, so
     * borrowing the first frame of an arena-held input (a dictionary's
     * distinct strings) would free that input while later frames read it. */
    int rc = qv__plain_encode_bin(e, off, s->data + s->off[start], n, s->depth, 0, out);
    qv__mem_free(&e->mem, off);
    return rc;
}

/* As a leaf the cascade picks (binary only): frames of plain strings. Any
 * other use wraps a finished tree (qv__general_wrap). */
static int general_build(struct qv__enc *e, int enc, const struct qv__src *s,
                         struct qv__enode **out) {
    if (s->pt != QV__PT_BIN) return qv__enc_unsupported(e, enc, s->pt);
    /* Frames end at BIN_FRAME_VALUES values or once they hold
     * QV__FRAME_BYTES of string bytes (a longer single value alone). */
    int64_t cap = s->n + 1;
    int64_t *ends = qv__mem_alloc(&e->mem, (size_t)cap * sizeof *ends, e->err);
    if (!ends) return ENOMEM;
    int64_t nf = 0;
    for (int64_t i = 0; i < s->n;) {
        int64_t j = i + 1;
        while (j < s->n && j - i < BIN_FRAME_VALUES && s->off[j + 1] - s->off[i] <= QV__FRAME_BYTES)
            j++;
        ends[nf++] = j;
        i = j;
    }
    int rc = qv__general_encode(e, enc, QV__PT_BIN, 0, s->n, BIN_FRAME_VALUES, ends, nf, bin_frame,
                                (void *)s, 0, out);
    qv__mem_free(&e->mem, ends);
    return rc;
}
static int zstd_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    return general_build(e, QV_ENC_ZSTD, s, out);
}
static int lz4_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    return general_build(e, QV_ENC_LZ4, s, out);
}
static int ans_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    return general_build(e, QV_ENC_ANS, s, out);
}

const struct qv__encoding qv__enc_zstd = {
    .id = QV_ENC_ZSTD,
    .name = "zstd",
    .decode_cost = 8,
    .flags = QV__ENC_FRAMES,
    .dec_word = qv__general_dec_word,
    .dec_bool = qv__general_dec_bool,
    .dec_bin = qv__general_dec_bin,
    .validate = general_validate,
    .build = zstd_build,
    .params = {"frame_values", "layout"},
    .children = {"frame0"},
};

const struct qv__encoding qv__enc_lz4 = {
    .id = QV_ENC_LZ4,
    .name = "lz4",
    .decode_cost = 5,
    .flags = QV__ENC_FRAMES,
    .dec_word = qv__general_dec_word,
    .dec_bool = qv__general_dec_bool,
    .dec_bin = qv__general_dec_bin,
    .validate = general_validate,
    .build = lz4_build,
    .params = {"frame_values", "layout"},
    .children = {"frame0"},
};

/* The entropy stage's frames for skewed bytes (qv__entropy_encode); as a
 * leaf only when forced (strings coded order-0 lose to FSST and zstd). */
const struct qv__encoding qv__enc_ans = {
    .id = QV_ENC_ANS,
    .name = "ans",
    .decode_cost = 10,
    .flags = QV__ENC_FRAMES,
    .dec_word = qv__general_dec_word,
    .dec_bool = qv__general_dec_bool,
    .dec_bin = qv__general_dec_bin,
    .validate = general_validate,
    .build = ans_build,
    .params = {"frame_values", "layout"},
    .children = {"frame0"},
};
