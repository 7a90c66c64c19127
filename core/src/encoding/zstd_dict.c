/*
 * zstd_dict: strings compressed by zstd in small frames that share one
 * dictionary trained on the chunk (by libzstd's own dictionary builder,
 * ZDICT's fastCover), so each frame compresses almost as well as the whole
 * chunk would while a random access decompresses only one frame.
 *
 * Why: free text (lineitem's l_comment, descriptions, URLs) repeats words
 * and phrases far beyond FSST's 255 symbols of at most 16 bytes. zstd on a
 * whole chunk finds them but loses random access; zstd on small frames
 * alone finds few of them (each frame starts with an empty window). A
 * dictionary gives every frame a window already full of the chunk's common
 * phrases and entropy tables already fitted to them, so frames of a few
 * KiB compress nearly like large ones.
 *
 * Node (docs/format.md, section 5.5.15), binary values only:
 *   no parameters;
 *   buffer 0: the dictionary (a zstd dictionary or raw content; empty: the
 *             frames are compressed without one);
 *   buffer 1: per frame two little-endian u32: the end offset of its
 *             compressed bytes in buffer 2 and the end of its values (the
 *             running count; the last equals the node's count);
 *   buffer 2: the frames back to back; a frame holds its strings' bytes
 *             concatenated, as one zstd frame that declares its content
 *             size, or nothing when those bytes are empty;
 *   child 0:  the n string lengths (u32), cascaded.
 * A range decode loads the lengths of each frame it touches and
 * decompresses that frame once; the decoder keeps the last frame, so
 * sequential scans and sorted takes decompress each frame once.
 *
 * Memory: zstd's contexts and tables are allocated through zstd's custom
 * allocator from the encoder's or decoder's arena (zstd_mem.c, shared
 * with the encoder's context in general.c), so they are charged to the
 * caller's reservation like every other buffer. The dictionary
 * builder (encode only) allocates on its own: its working memory is
 * bounded by the sample (SAMPLE_MAX) and its parameter f (about 6 x 2^f
 * bytes).
 */
#include "encoding/zstd_mem.h" /* zstd.h, with its custom allocators */
#ifndef QV_NO_ZDICT
#define ZDICT_STATIC_LINKING_ONLY /* ZDICT_trainFromBuffer_fastCover */
#include <zdict.h>
#endif

/* Raw bytes a frame aims at and values it holds at most: the take cost is
 * one such frame per touched row (a single longer string is a frame of its
 * own). zstd_dict is compact mode's, where size comes first. Measured on
 * lineitem's l_comment (dictionary 1/128 of the chunk), level 3: 4 KiB
 * frames 3.31x, 8 KiB 3.34x, 16 KiB 3.35x; level 15 (below): 8 KiB 4.55x,
 * 16 KiB 4.62x, 32 KiB 4.66x, 64 KiB 4.68x. */
#define FRAME_BYTES (32 << 10)
#define FRAME_VALUES 4096
/* Dictionary size (1/DICT_SHARE of the chunk's bytes, within bounds) and
 * training sample bounds. On l_comment 1/128 beat 1/64 by 1.7% of the
 * column and 1/256 lost 0.3% to it. */
#define DICT_SHARE 128
#define DICT_MAX (64 << 10)
#define DICT_MIN 1024
#define SAMPLE_MAX (1 << 20)
#define SAMPLE_PIECE (4 << 10)
/* Frames compressed to estimate the ratio. */
#define EST_FRAMES 8

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The level frames are compressed at: the writer's, at least ZD_LEVEL.
 * On l_comment's frames of 32 KiB (a row group's chunk, with its
 * dictionary; ratio, then compression speed of the chunk, dictionary
 * training included): level 3 3.71x at 18 MB/s, 9 4.23x at 12 MB/s, 12
 * 4.40x at 7 MB/s, 15 4.66x at 5.3 MB/s, 19 4.69x at 4.5 MB/s; decoding
 * is no slower at the higher levels (0.9-1.0 GB/s). Compact lineitem
 * SF1 needs level 15 to come under 0.70 of Parquet-zstd (0.692; level 12
 * 0.703), and its write takes about ten times the default mode's. */
#define ZD_LEVEL 15
static int zlevel(const struct qv__enc *e) { return e->zstd_level > ZD_LEVEL ? e->zstd_level : ZD_LEVEL; }

/* ---- Training ---- */

struct qv__zdict {
    uint8_t *dict; /* arena block, or NULL */
    size_t size;
};

/* Where frames end: at FRAME_BYTES of string bytes or FRAME_VALUES values
 * (a longer single value alone). ends[] has room for n entries. */
static int64_t frame_ends(const uint64_t *off, int64_t n, int64_t *ends) {
    int64_t nf = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i + 1;
        while (j < n && j - i < FRAME_VALUES && off[j + 1] - off[i] <= FRAME_BYTES) j++;
        ends[nf++] = j;
        i = j;
    }
    return nf;
}

/* The strings of [i, ...) that fit `cap` bytes (at least one). */
static int64_t piece_end(const uint64_t *off, int64_t n, int64_t i, uint64_t cap) {
    int64_t j = i + 1;
    while (j < n && off[j + 1] - off[i] <= cap) j++;
    return j;
}

int qv__zdict_train(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                    struct qv__zdict **out) {
    struct qv__zdict *zd = qv__mem_calloc(&e->mem, sizeof *zd, e->err);
    if (!zd) return ENOMEM;
    *out = zd;
#ifdef QV_NO_ZDICT
    /* Built without zstd's dictionary builder (the bundled static library
     * carries only zstd's compressor and decompressor): frames without a
     * dictionary, which the cascade never prefers. */
    (void)off;
    (void)data;
    (void)n;
    return 0;
#else
    const uint64_t total = off[n];
    if (n < 8 || total < 8 * DICT_MIN) return 0;
    /* Pieces of whole strings spread evenly over the chunk (all of it when
     * it is small): the dictionary must fit the whole chunk, not its
     * start. */
    const uint64_t want = total < SAMPLE_MAX ? total : SAMPLE_MAX;
    const int64_t npieces_max = (int64_t)(want / SAMPLE_PIECE) + 1;
    struct qv__mark mk = qv__stack_mark(&e->stack);
    uint8_t *buf = qv__stack_push(&e->stack, (size_t)(want + SAMPLE_PIECE), e->err);
    size_t *sizes = buf ? qv__stack_push(&e->stack, (size_t)(npieces_max + 1) * sizeof *sizes,
                                         e->err)
                        : NULL;
    if (!sizes) {
        qv__stack_release(&e->stack, mk);
        return ENOMEM;
    }
    size_t used = 0;
    unsigned npieces = 0;
    const int64_t stride = total <= SAMPLE_MAX ? 0 : (int64_t)(total / (want / SAMPLE_PIECE));
    for (int64_t i = 0; i < n && npieces < (unsigned)npieces_max && used < want;) {
        int64_t j = piece_end(off, n, i, SAMPLE_PIECE);
        uint64_t len = off[j] - off[i];
        if (len > SAMPLE_PIECE) len = SAMPLE_PIECE; /* a long string: its start */
        if (len > 0) {
            memcpy(buf + used, data + off[i], (size_t)len);
            sizes[npieces++] = (size_t)len;
            used += (size_t)len;
        }
        if (stride) {
            /* Jump to the string holding the next stride's first byte. */
            uint64_t target = off[i] + (uint64_t)stride;
            int64_t lo = j, hi = n;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (off[mid + 1] <= target) lo = mid + 1;
                else hi = mid;
            }
            i = lo;
        } else {
            i = j;
        }
    }
    size_t cap = (size_t)(total / DICT_SHARE);
    cap = cap > DICT_MAX ? DICT_MAX : cap < DICT_MIN ? DICT_MIN : cap;
    if (cap > used / 4) cap = used / 4;
    int rc = 0;
    if (npieces >= 8 && cap >= DICT_MIN) {
        uint8_t *dict = qv__mem_alloc(&e->mem, cap, e->err);
        if (!dict) {
            rc = ENOMEM;
        } else {
            /* Fixed parameters instead of the builder's search over them
             * (ZDICT_trainFromBuffer tries dozens of (k, d) pairs): one
             * pass, a few milliseconds per MiB of sample. */
            ZDICT_fastCover_params_t p;
            memset(&p, 0, sizeof p);
            p.k = 256;
            p.d = 8;
            p.f = 18;
            p.steps = 0;
            p.nbThreads = 0;
            p.splitPoint = 1.0;
            p.accel = 2;
            p.zParams.compressionLevel = zlevel(e);
            size_t got = ZDICT_trainFromBuffer_fastCover(dict, cap, buf, sizes, npieces, p);
            if (ZDICT_isError(got) || got == 0) {
                qv__mem_free(&e->mem, dict); /* too little to learn from: no dictionary */
            } else {
                zd->dict = dict;
                zd->size = got;
            }
        }
    }
    qv__stack_release(&e->stack, mk);
    return rc;
#endif
}

size_t qv__zdict_size(const struct qv__zdict *zd) { return zd ? zd->size : 0; }

void qv__zdict_free(struct qv__enc *e, struct qv__zdict *zd) {
    if (!zd) return;
    qv__mem_free(&e->mem, zd->dict);
    qv__mem_free(&e->mem, zd);
}

/* ---- Compression ---- */

struct zcomp {
    struct qv__zmem zm;
    ZSTD_CCtx *cctx;
    ZSTD_CDict *cdict; /* static, in cdict_ws */
    void *cdict_ws;
};

static int zcomp_open(struct qv__enc *e, const struct qv__zdict *zd, struct zcomp *z) {
    memset(z, 0, sizeof *z);
    z->zm.m = &e->mem;
    ZSTD_customMem cm = qv__zmem_custom(&z->zm);
    z->cctx = ZSTD_createCCtx_advanced(cm);
    if (!z->cctx) return qv_error_set(e->err, ENOMEM, "zstd_dict: out of memory for a zstd context");
    size_t r = ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, zlevel(e));
    /* The decoder knows the dictionary from the node: the 4-byte id in
     * every frame is waste. The content size stays: it is checked. */
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_dictIDFlag, 0);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 0);
    if (ZSTD_isError(r))
        return qv_error_set(e->err, EIO, "zstd_dict: zstd parameters: %s", ZSTD_getErrorName(r));
    if (zd && zd->size) {
        /* The dictionary's tables in a workspace of ours: zstd 1.5.4 crashes
         * when an allocation fails inside ZSTD_createCDict_advanced. */
        ZSTD_compressionParameters cp = ZSTD_getCParams(zlevel(e), FRAME_BYTES, zd->size);
        size_t ws = ZSTD_estimateCDictSize_advanced(zd->size, cp, ZSTD_dlm_byRef);
        void *w = qv__mem_alloc(&e->mem, ws, e->err);
        if (!w) return ENOMEM;
        z->cdict_ws = w;
        z->cdict = (ZSTD_CDict *)ZSTD_initStaticCDict(w, ws, zd->dict, zd->size, ZSTD_dlm_byRef,
                                                     ZSTD_dct_auto, cp);
        if (!z->cdict)
            return qv_error_set(e->err, EIO, "zstd_dict: the trained dictionary does not load");
        r = ZSTD_CCtx_refCDict(z->cctx, z->cdict);
        if (ZSTD_isError(r))
            return qv_error_set(e->err, EIO, "zstd_dict: %s", ZSTD_getErrorName(r));
    }
    return 0;
}

static void zcomp_close(struct zcomp *z) {
    ZSTD_freeCCtx(z->cctx);
    if (z->cdict_ws) qv__mem_free(z->zm.m, z->cdict_ws);
    memset(z, 0, sizeof *z);
}

static int zcomp_frame(struct qv__enc *e, struct zcomp *z, const uint8_t *src, size_t len,
                       uint8_t *dst, size_t cap, size_t *clen) {
    *clen = 0;
    if (!len) return 0; /* empty strings only: no frame */
    size_t c = ZSTD_compress2(z->cctx, dst, cap, src, len);
    if (ZSTD_isError(c) && z->zm.failed)
        return qv_error_set(e->err, ENOMEM, "zstd_dict: out of memory while compressing");
    if (ZSTD_isError(c))
        return qv_error_set(e->err, EIO, "zstd_dict: compression failed: %s", ZSTD_getErrorName(c));
    *clen = c;
    return 0;
}

int qv__zdict_sample_ratio(struct qv__enc *e, const struct qv__zdict *zd, const uint64_t *off,
                           const uint8_t *data, int64_t n, double *ratio) {
    *ratio = 1.0;
    const uint64_t total = off[n];
    if (!n || !total) return 0;
    struct zcomp z;
    int rc = zcomp_open(e, zd, &z);
    const size_t bound = ZSTD_compressBound(FRAME_BYTES);
    struct qv__mark mk = qv__stack_mark(&e->stack);
    uint8_t *dst = rc ? NULL : qv__stack_push(&e->stack, bound, e->err);
    if (!rc && !dst) rc = ENOMEM;
    uint64_t raw = 0, comp = 0;
    /* Frames starting halfway between the training pieces' strides, so
     * the estimate is not taken on text the dictionary was built from. */
    for (int k = 0; k < EST_FRAMES && !rc; k++) {
        uint64_t at = total / EST_FRAMES * (uint64_t)k + total / (2 * EST_FRAMES);
        int64_t i = qv__upper_bound(off, n + 1, at) - 1;
        if (i < 0) i = 0;
        if (i >= n) break;
        int64_t j = piece_end(off, n, i, FRAME_BYTES);
        size_t len = (size_t)(off[j] - off[i]);
        if (len > FRAME_BYTES) len = FRAME_BYTES;
        size_t c;
        rc = zcomp_frame(e, &z, data + off[i], len, dst, bound, &c);
        raw += len;
        comp += c;
    }
    qv__stack_release(&e->stack, mk);
    zcomp_close(&z);
    if (!rc && raw) *ratio = (double)comp / (double)raw;
    return rc;
}

int qv__zdict_encode(struct qv__enc *e, const struct qv__zdict *zd, const uint64_t *off,
                     const uint8_t *data, int64_t n, int depth, int forced,
                     struct qv__enode **out) {
    const uint64_t total = off[n];
    for (int64_t i = 0; i < n; i++)
        if (off[i + 1] - off[i] > UINT32_MAX)
            return forced ? qv_error_set(e->err, EINVAL,
                                         "encode: zstd_dict holds strings below 4 GiB, value %lld "
                                         "has %llu bytes",
                                         (long long)i, (unsigned long long)(off[i + 1] - off[i]))
                          : QV__DECLINED;
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_ZSTD_DICT, QV__PT_BIN, 0, n);
    if (!nd) return ENOMEM;
    int64_t *ends = qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * sizeof *ends, e->err);
    if (!ends) return ENOMEM;
    const int64_t nf = frame_ends(off, n, ends);
    uint8_t *table = qv__mem_alloc(&e->mem, (size_t)(nf ? nf : 1) * 8, e->err);
    uint64_t *lens = table ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    if (!lens) return ENOMEM;
    struct zcomp z;
    int rc = zcomp_open(e, zd, &z);
    uint8_t *comp = NULL;
    size_t comp_len = 0, comp_cap = 0;
    for (int64_t f = 0; f < nf && !rc; f++) {
        int64_t fs = f ? ends[f - 1] : 0;
        size_t len = (size_t)(off[ends[f]] - off[fs]);
        size_t bound = len ? ZSTD_compressBound(len) : 0;
        if (comp_cap - comp_len < bound) {
            size_t ncap = comp_cap ? comp_cap : (size_t)(total / 2 + 4096);
            while (ncap - comp_len < bound) ncap *= 2;
            uint8_t *nc = qv__mem_realloc(&e->mem, comp, comp_cap, ncap, e->err);
            if (!nc) {
                rc = ENOMEM;
                break;
            }
            comp = nc;
            comp_cap = ncap;
        }
        size_t c;
        if ((rc = zcomp_frame(e, &z, data + off[fs], len, comp + comp_len, bound, &c))) break;
        comp_len += c;
        if (comp_len > UINT32_MAX) {
            rc = forced ? qv_error_set(e->err, EINVAL,
                                       "encode: zstd_dict frames exceed 4 GiB compressed")
                        : QV__DECLINED;
            break;
        }
        put32(table + f * 8, (uint32_t)comp_len);
        put32(table + f * 8 + 4, (uint32_t)ends[f]);
    }
    zcomp_close(&z);
    qv__mem_free(&e->mem, ends);
    if (!rc && !forced && comp_len + (zd ? zd->size : 0) + (uint64_t)nf * 8 >= total)
        rc = QV__DECLINED;
    if (!rc) {
        for (int64_t i = 0; i < n; i++) lens[i] = off[i + 1] - off[i];
        rc = qv__cascade_int(e, lens, n, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    }
    qv__mem_free(&e->mem, lens);
    if (rc) {
        qv__mem_free(&e->mem, comp);
        qv__mem_free(&e->mem, table);
        qv__mem_free(&e->mem, nd);
        return rc;
    }
    nd->nchildren = 1;
    nd->nbufs = 3;
    if (zd && zd->size) {
        /* The node owns a copy: the trained dictionary is the cascade's. */
        uint8_t *dc = qv__mem_alloc(&e->mem, zd->size, e->err);
        if (!dc) return ENOMEM;
        memcpy(dc, zd->dict, zd->size);
        nd->buf[0] = dc;
        nd->buf_len[0] = zd->size;
    } else {
        nd->buf[0] = (const uint8_t *)"";
    }
    nd->buf[1] = table;
    nd->buf_len[1] = (uint64_t)nf * 8;
    nd->buf[2] = comp ? comp : (const uint8_t *)"";
    nd->buf_len[2] = comp_len;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decoding ---- */

/* Per node: the loaded dictionary, and the last frame: its bytes and the
 * offsets of its strings in them. The decompression context is the
 * thread's (qv__zstd_dctx_borrow): one per node cost a take ~10 us and a
 * ~100 KiB block per chunk it touched (lineitem SF1, 100 rows: 42 chunks
 * of l_comment). */
struct zd_cache {
    ZSTD_DDict *ddict;
    int64_t frame; /* -1: none */
    uint8_t *raw;
    size_t raw_cap;
    uint64_t *foff; /* frame values + 1 */
    int64_t foff_cap;
};

static int64_t nframes(const struct qv__node *nd) { return (int64_t)(nd->buf_len[1] / 8); }
static int64_t frame_first(const struct qv__node *nd, int64_t f) {
    return f ? (int64_t)get32(nd->buf[1] + (size_t)(f - 1) * 8 + 4) : 0;
}
static int64_t frame_end(const struct qv__node *nd, int64_t f) {
    return (int64_t)get32(nd->buf[1] + (size_t)f * 8 + 4);
}
/* The frame holding value pos (< count; the table is validated). */
static int64_t frame_of(const struct qv__node *nd, int64_t pos) {
    int64_t lo = 0, hi = nframes(nd) - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (frame_end(nd, mid) <= pos) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int cache_of(struct qv__dec *d, struct qv__node *nd, struct zd_cache **out,
                    struct qv_error *err) {
    struct zd_cache *c = nd->cache;
    if (c) {
        *out = c;
        return 0;
    }
    c = qv__mem_small(&d->mem, sizeof *c, err);
    if (!c) return ENOMEM;
    c->frame = -1;
    if (nd->buf_len[0]) {
        /* By reference: the node's bytes outlive the decoder's use. A
         * dictionary with zstd's magic number must be well formed; any
         * other bytes are raw content. The tables go in a workspace of
         * ours, so an allocation failure is ours to report. */
        size_t ws = ZSTD_estimateDDictSize((size_t)nd->buf_len[0], ZSTD_dlm_byRef);
        void *w = qv__mem_alloc(&d->mem, ws, err);
        if (!w) return ENOMEM;
        c->ddict = (ZSTD_DDict *)ZSTD_initStaticDDict(w, ws, nd->buf[0], (size_t)nd->buf_len[0],
                                                     ZSTD_dlm_byRef, ZSTD_dct_auto);
        if (!c->ddict)
            return qv__corrupt(err, nd, "dictionary of %llu bytes does not load",
                               (unsigned long long)nd->buf_len[0]);
    }
    nd->cache = c;
    *out = c;
    return 0;
}

/* Loads frame f: its lengths into c->foff (as offsets), then its bytes.
 * With `direct`, the caller wants the whole frame appended to o: the bytes
 * are decompressed straight into o's data (saving a copy of every string
 * in sequential scans) and the frame is not kept. Otherwise it becomes
 * the cached frame in c->raw. */
static int load_frame(struct qv__dec *d, struct qv__node *nd, struct zd_cache *c, int64_t f,
                      struct qv__binout *direct, struct qv_error *err) {
    if (c->frame == f) return 0;
    c->frame = -1;
    const int64_t fs = frame_first(nd, f), m = frame_end(nd, f) - fs;
    if (m + 1 > c->foff_cap) {
        int64_t ncap = m + 1 > 2 * c->foff_cap ? m + 1 : 2 * c->foff_cap;
        uint64_t *nf = qv__mem_realloc(&d->mem, c->foff, (size_t)c->foff_cap * 8, (size_t)ncap * 8,
                                       err);
        if (!nf) return ENOMEM;
        c->foff = nf;
        c->foff_cap = ncap;
    }
    int rc = qv__dec_u64(d, nd->child[0], fs, m, c->foff + 1, err);
    if (rc) return rc;
    /* Lengths to offsets; each length is a u32 and a frame holds at most
     * 2^20 values, so the sum cannot wrap. */
    c->foff[0] = 0;
    for (int64_t i = 1; i <= m; i++) c->foff[i] += c->foff[i - 1];
    const uint64_t raw_size = c->foff[m];
    const uint64_t cbeg = f ? get32(nd->buf[1] + (size_t)(f - 1) * 8) : 0;
    const uint64_t cend = get32(nd->buf[1] + (size_t)f * 8);
    const uint64_t clen = cend - cbeg; /* validated: non-decreasing, within buffer 2 */
    if ((raw_size == 0) != (clen == 0))
        return qv__corrupt(err, nd, "frame %lld: %llu compressed bytes for %llu bytes of strings",
                           (long long)f, (unsigned long long)clen, (unsigned long long)raw_size);
    /* Bound the allocation before decompressing: zstd cannot expand a
     * frame beyond its block limits (at most 128 KiB from 3 bytes), and
     * the chunk's decoded bytes have their own limit. */
    if (raw_size > QV_ENC_MAX_BYTES || raw_size > clen * 65536 + 65536)
        return qv__corrupt(err, nd, "frame %lld: lengths sum to an implausible %llu bytes for "
                           "%llu compressed", (long long)f, (unsigned long long)raw_size,
                           (unsigned long long)clen);
    if (raw_size) {
        const uint8_t *src = nd->buf[2] + cbeg;
        if (!nd->inner && (rc = qv__dec_touch_bytes(d, src, clen, err))) return rc;
        unsigned long long fcs = ZSTD_getFrameContentSize(src, (size_t)clen);
        if (fcs != raw_size)
            return qv__corrupt(err, nd, "frame %lld: zstd content size %lld, the lengths say %llu",
                               (long long)f, fcs >= ZSTD_CONTENTSIZE_ERROR ? -1LL : (long long)fcs,
                               (unsigned long long)raw_size);
        uint8_t *dst;
        if (direct) {
            if (direct->cap - direct->size < raw_size + 8 &&
                (rc = qv__binout_reserve(direct, (size_t)raw_size, err)))
                return rc;
            dst = direct->data + direct->size;
        } else {
            if (raw_size > c->raw_cap) {
                size_t ncap = raw_size > 2 * c->raw_cap ? (size_t)raw_size : 2 * c->raw_cap;
                uint8_t *nr = qv__mem_realloc(&d->mem, c->raw, c->raw_cap, ncap, err);
                if (!nr) return ENOMEM;
                c->raw = nr;
                c->raw_cap = ncap;
            }
            dst = c->raw;
        }
        ZSTD_DCtx *dctx = qv__zstd_dctx_borrow();
        if (!dctx) return qv_error_set(err, ENOMEM, "zstd_dict: out of memory for a zstd context");
        size_t got = c->ddict ? ZSTD_decompress_usingDDict(dctx, dst, (size_t)raw_size, src,
                                                           (size_t)clen, c->ddict)
                              : ZSTD_decompressDCtx(dctx, dst, (size_t)raw_size, src, (size_t)clen);
        qv__zstd_dctx_return(dctx);
        if (ZSTD_isError(got) || got != raw_size)
            return qv__corrupt(err, nd, "frame %lld: zstd: %s", (long long)f,
                               ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
    }
    if (!direct) c->frame = f;
    return 0;
}

static int zdict_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     struct qv__binout *o, struct qv_error *err) {
    struct zd_cache *c = NULL;
    int rc = cache_of(d, nd, &c, err);
    if (rc) return rc;
    for (int64_t pos = start, end = start + n; pos < end;) {
        const int64_t f = frame_of(nd, pos), fs = frame_first(nd, f);
        const int64_t fe = frame_end(nd, f), stop = fe < end ? fe : end;
        /* A whole frame not cached goes straight into o. */
        const int whole = pos == fs && stop == fe && c->frame != f;
        if ((rc = load_frame(d, nd, c, f, whole ? o : NULL, err))) return rc;
        const int64_t lo = pos - fs, m = stop - pos;
        const uint64_t b0 = c->foff[lo], bytes = c->foff[lo + m] - b0;
        if (!whole) {
            if (o->cap - o->size < bytes + 8 && (rc = qv__binout_reserve(o, (size_t)bytes, err)))
                return rc;
            /* The strings of one frame are contiguous: one copy, then
             * their offsets. */
            if (bytes) memcpy(o->data + o->size, c->raw + b0, (size_t)bytes);
        }
        const size_t base = o->size - (size_t)b0;
        if (o->off64) {
            int64_t *ov = (int64_t *)o->offsets + o->i + 1;
            for (int64_t i = 0; i < m; i++) ov[i] = (int64_t)(base + c->foff[lo + i + 1]);
        } else {
            if (o->size + bytes > (size_t)INT32_MAX)
                return qv_error_set(err, EOVERFLOW,
                                    "decode: binary data exceeds the int32 offset range");
            int32_t *ov = (int32_t *)o->offsets + o->i + 1;
            for (int64_t i = 0; i < m; i++) ov[i] = (int32_t)(base + c->foff[lo + i + 1]);
        }
        o->size += (size_t)bytes;
        o->i += m;
        pos = stop;
    }
    return 0;
}

/* Binary. No parameters; three buffers (dictionary, frame table, frames);
 * child 0: n u32 lengths. The table: u32 pairs, compressed ends
 * non-decreasing up to buffer 2's length, value ends strictly increasing
 * up to the count, no frame over FRAME_VALUES_MAX values. */
#define FRAME_VALUES_MAX (1 << 20)
static int zdict_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (nd->pt != QV__PT_BIN) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 0, 3, 1, err))) return rc;
    const uint64_t nf = nd->buf_len[1] / 8;
    if (nd->buf_len[1] % 8 || (nd->count > 0) != (nf > 0) || nf > (uint64_t)nd->count)
        return qv__corrupt(err, nd, "frame table of %llu bytes for %lld values",
                           (unsigned long long)nd->buf_len[1], (long long)nd->count);
    uint64_t pc = 0, pv = 0;
    for (uint64_t f = 0; f < nf; f++) {
        uint64_t ce = get32(nd->buf[1] + f * 8), ve = get32(nd->buf[1] + f * 8 + 4);
        if (ce < pc || ce > nd->buf_len[2] || (f + 1 == nf && ce != nd->buf_len[2]))
            return qv__corrupt(err, nd, "frame %llu ends at compressed byte %llu (previous %llu, "
                               "%llu bytes)", (unsigned long long)f, (unsigned long long)ce,
                               (unsigned long long)pc, (unsigned long long)nd->buf_len[2]);
        if (ve <= pv || ve - pv > FRAME_VALUES_MAX || ve > (uint64_t)nd->count ||
            (f + 1 == nf && ve != (uint64_t)nd->count))
            return qv__corrupt(err, nd, "frame %llu ends at value %llu (previous %llu, count "
                               "%lld)", (unsigned long long)f, (unsigned long long)ve,
                               (unsigned long long)pv, (long long)nd->count);
        pc = ce;
        pv = ve;
    }
    return qv__want_child(nd, 0, QV__PT_U32, nd->count, err);
}

/* Uses the dictionary the cascade trained while estimating, or trains
 * one. */
static int zdict_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (s->pt != QV__PT_BIN) return qv__enc_unsupported(e, QV_ENC_ZSTD_DICT, s->pt);
    struct qv__zdict *zd = s->zdict;
    int rc = 0;
    if (!zd && (rc = qv__zdict_train(e, s->off, s->data, s->n, &zd))) return rc;
    if (!zd->size && !s->forced) rc = QV__DECLINED;
    else rc = qv__zdict_encode(e, zd, s->off, s->data, s->n, s->depth, s->forced, out);
    if (!s->zdict) qv__zdict_free(e, zd);
    return rc;
}

const struct qv__encoding qv__enc_zstd_dict = {
    .id = QV_ENC_ZSTD_DICT,
    .name = "zstd_dict",
    .decode_cost = 8,
    .dec_bin = zdict_dec,
    .validate = zdict_validate,
    .build = zdict_build,
    .params = {NULL},
    .children = {"lengths"},
};
