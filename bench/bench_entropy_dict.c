/*
 * bench/run entropy_dict [--quick] [--json FILE] FILE.qvr [FILE.qvr ...]
 *                        [--repeats N] [--level L] [--lazy] [--magicless]
 *
 * Issues 14/15: would the entropy stage's zstd frames (entropy.c,
 * general.c) take cheaper as small frames sharing one dictionary per node
 * (per column chunk), without making files larger? A measurement: nothing
 * here changes the format or the writer.
 *
 * Every integer zstd node with fixed frames in the files is the entropy
 * stage (each frame a serialized for(ref) -> bitpack(w) or -> plain
 * subtree; the program stops on any other frame). The program decompresses
 * the frames the writer wrote, decodes their residuals and rebuilds the
 * frame payloads with the encoder's own node builders; at the file's frame
 * size the rebuilt payloads must equal the file's byte for byte, and their
 * zstd sizes at the writer's level are compared with the file's (a
 * difference is printed to stderr). Then, per node, the variants:
 *   file       today's frames (4,096 or 16,384 values), as written
 *   today@L    the same frames compressed as the variants are (below)
 *   fN         N-value frames (1,024 or 2,048), no dictionary
 *   fN+tab     N-value frames sharing a dictionary made by
 *              ZDICT_finalizeDictionary: entropy tables fitted to the
 *              node's frames and 256 bytes of content (the first frame's
 *              start: the subtree headers every frame repeats)
 *   fN+cK      N-value frames sharing a dictionary of at most K KiB
 *              trained by ZDICT_trainFromBuffer_fastCover on all the
 *              node's frames (zstd_dict.c's parameters)
 *   pick-small per node, the smallest of the fN variants
 *   pick-nolrg per node, the smallest fN variant no larger than the
 *              file's frames, else the file's frames
 *   pick-2048  per node, the smallest 2,048-value variant
 * The variants are compressed at the writer's levels (1; 3 for the
 * sequential layout) or at --level L; --lazy keeps the level's parameters
 * but uses zstd's lazy strategy at search depth 1; --magicless drops zstd's
 * 4-byte magic number (ZSTD_f_zstd1_magicless). Frames carry their content
 * size and no checksum; with a dictionary, no dictionary id (as
 * zstd_dict.c writes them), the CDict's parameters chosen for the first
 * frame's size.
 *
 * Reported per column and in total: bytes = compressed frames + frame
 * table (16 B a frame, today's fixed-frame table) + dictionaries, and the
 * change of the files' total size (also with an 8 B/frame table); the time
 * to decompress one frame (the frames holding up to 2,000 random rows of
 * the column, in that order, so frames and dictionaries come from all the
 * column's nodes as in a take; min and median over repeats, the variants
 * alternating within each repeat); the DDict creation per node, which a
 * decoder pays once per node it touches; a 100-row take's zstd time:
 * 100 frames, plus (cold) one DDict per node up to 100; and the write side:
 * dictionary building and compression (MB/s of payload).
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#define ZDICT_STATIC_LINKING_ONLY
#include <zdict.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "encoding/enc_internal.h"
#include "quiver/format.h"
#include "quiver/memory.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "bench_entropy_dict: %s: %s\n", what, err ? err->message : "");
    exit(1);
}
static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory", NULL);
    return p;
}

/* ---- Variants ---- */

enum dict_kind { D_NONE, D_TABLES, D_COVER };
/* Per-chunk choices among the built variants (pseudo-variants). */
enum pick { P_NONE, P_SMALL, P_NOLARGER, P_2048 };
struct variant {
    const char *name;
    int64_t fv; /* 0: the file's own frames as written; -1: their size, recompressed */
    enum dict_kind dk;
    size_t dict_cap;
    enum pick pick;
};
static const struct variant VARIANTS[] = {
    {"file", 0, D_NONE, 0, P_NONE},
    {"today@L", -1, D_NONE, 0, P_NONE},
    {"f1024", 1024, D_NONE, 0, P_NONE},
    {"f2048", 2048, D_NONE, 0, P_NONE},
    {"f1024+tab", 1024, D_TABLES, 2048, P_NONE},
    {"f1024+c1K", 1024, D_COVER, 1024, P_NONE},
    {"f1024+c4K", 1024, D_COVER, 4096, P_NONE},
    {"f1024+c8K", 1024, D_COVER, 8192, P_NONE},
    {"f1024+c16K", 1024, D_COVER, 16384, P_NONE},
    {"f2048+tab", 2048, D_TABLES, 2048, P_NONE},
    {"f2048+c1K", 2048, D_COVER, 1024, P_NONE},
    {"f2048+c4K", 2048, D_COVER, 4096, P_NONE},
    {"f2048+c8K", 2048, D_COVER, 8192, P_NONE},
    /* Per chunk: the smallest of the 1,024- and 2,048-value variants; the
     * smallest of those no larger than the file's frames, else the file's;
     * the smallest 2,048-value one. */
    {"pick-small", 0, D_NONE, 0, P_SMALL},
    {"pick-nolrg", 0, D_NONE, 0, P_NOLARGER},
    {"pick-2048", 0, D_NONE, 0, P_2048},
};
#define NV ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))
#define TABLE_CONTENT 256

/* One chunk's frames under one variant. */
struct frames {
    int64_t nf;
    uint8_t **raw;
    size_t *raw_len;
    uint8_t **comp;
    size_t *comp_len;
    uint8_t *dict;
    size_t dict_len;
    double build_s, comp_s; /* dictionary building, compression */
    int magicless, lazy;
};

/* One entropy node (one column chunk's stage). */
struct chunk {
    int col;
    int pt, layout, level;
    unsigned w;
    uint64_t ref;
    int64_t n, file_fv;
    uint64_t *res;
    struct frames v[NV];
    ZSTD_DDict *ddict[NV];
    int pick[NV]; /* pseudo-variants: the variant chosen */
};

static int real_of(const struct chunk *c, int vi) { return VARIANTS[vi].pick ? c->pick[vi] : vi; }
static int64_t fv_of(const struct chunk *c, int vi) {
    int64_t fv = VARIANTS[real_of(c, vi)].fv;
    return fv > 0 ? fv : c->file_fv;
}
static const struct frames *frames_of(const struct chunk *c, int vi) {
    return &c->v[real_of(c, vi)];
}
/* A chunk's bytes under a built variant: frames, 16 B/frame table, dictionary. */
static uint64_t chunk_bytes(const struct chunk *c, int vi) {
    const struct frames *fr = frames_of(c, vi);
    uint64_t b = (uint64_t)fr->nf * 16 + fr->dict_len;
    for (int64_t f = 0; f < fr->nf; f++) b += fr->comp_len[f];
    return b;
}
static void choose(struct chunk *c) {
    for (int vi = 0; vi < NV; vi++) {
        if (!VARIANTS[vi].pick) continue;
        int best = -1;
        uint64_t bb = 0, file = chunk_bytes(c, 0);
        for (int k = 0; k < NV; k++) {
            const struct variant *v = &VARIANTS[k];
            if (v->pick || v->fv <= 0 || (VARIANTS[vi].pick == P_2048 && v->fv != 2048)) continue;
            uint64_t b = chunk_bytes(c, k);
            if (VARIANTS[vi].pick == P_NOLARGER && b > file) continue;
            if (best < 0 || b < bb) best = k, bb = b;
        }
        c->pick[vi] = best < 0 ? 0 : best;
    }
}

struct column {
    char name[200];
    int nchunks;
};

static struct chunk *chunks;
static int nchunks, chunks_cap;
static struct column cols[256];
static double file_bytes;
static int ncols;

/* ---- Reading the file's entropy nodes ---- */

static uint64_t widen(const uint8_t *p, unsigned w) {
    switch (w) {
    case 1: return p[0];
    case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
    default: { uint64_t x; memcpy(&x, p, 8); return x; }
    }
}

/* A frame's payload as the writer builds it (entropy.c, build_frame). */
static void build_payload(struct qv__enc *e, const struct chunk *c, int64_t start, int64_t m,
                          uint8_t **out, size_t *out_len) {
    const int cpt = c->layout == QV__ENTROPY_SEQ ? qv__pt_uint_of_width(c->w / 8) : c->pt;
    struct qv__enode *ch = NULL, *nd;
    int rc = c->layout == QV__ENTROPY_SEQ ? qv__plain_encode_word(e, c->res + start, m, cpt, &ch)
                                          : qv__bitpack_encode(e, c->res + start, m, c->pt, c->w, &ch);
    if (rc) die("rebuilding a frame", e->err);
    if (c->ref == 0 && cpt == c->pt) {
        nd = ch;
    } else {
        nd = qv__enode_new(e, QV_ENC_FOR, c->pt, qv__pt_width(c->pt), m);
        if (!nd) die("rebuilding a frame", e->err);
        nd->nparams = 1;
        nd->params[0] = (int64_t)c->ref;
        nd->child[0] = ch;
        nd->nchildren = 1;
        qv__enode_finish(nd);
    }
    *out_len = (size_t)nd->size;
    *out = xmalloc(*out_len);
    qv__enode_write(nd, *out);
    qv__enode_drop(e, nd);
}

static void take_node(struct qv__dec *d, struct qv__node *nd, int col) {
    struct qv_error err = {0};
    const int64_t nf = qv__general_nframes(nd);
    if (nchunks == chunks_cap) {
        chunks_cap = chunks_cap ? 2 * chunks_cap : 64;
        chunks = realloc(chunks, (size_t)chunks_cap * sizeof *chunks);
        if (!chunks) die("out of memory", NULL);
    }
    struct chunk *c = &chunks[nchunks];
    memset(c, 0, sizeof *c);
    c->col = col;
    c->pt = nd->pt;
    c->n = nd->count;
    c->file_fv = nd->params[0];
    c->res = xmalloc((size_t)nd->count * 8);
    struct frames *fr = &c->v[0];
    fr->nf = nf;
    fr->raw = xmalloc((size_t)nf * sizeof *fr->raw);
    fr->raw_len = xmalloc((size_t)nf * sizeof *fr->raw_len);
    fr->comp = xmalloc((size_t)nf * sizeof *fr->comp);
    fr->comp_len = xmalloc((size_t)nf * sizeof *fr->comp_len);
    int64_t at = 0;
    for (int64_t f = 0; f < nf; f++) {
        struct qv__mem m = {.r = res};
        uint8_t *raw;
        size_t raw_size;
        if (qv__general_decompress(&m, nd, f, &raw, &raw_size, &err)) die("decompressing", &err);
        uint64_t cb = f ? widen(nd->buf[0] + (f - 1) * 16, 8) : 0, ce = widen(nd->buf[0] + f * 16, 8);
        fr->raw[f] = xmalloc(raw_size);
        memcpy(fr->raw[f], raw, raw_size);
        fr->raw_len[f] = raw_size;
        fr->comp[f] = xmalloc((size_t)(ce - cb));
        memcpy(fr->comp[f], nd->buf[1] + cb, (size_t)(ce - cb));
        fr->comp_len[f] = (size_t)(ce - cb);
        struct qv__node *in;
        if (qv__tree_parse(&m, raw, raw_size, nd->depth + 1, 1, nd->offset, &in, &err))
            die("parsing a frame", &err);
        struct qv__node *ch = in;
        uint64_t ref = 0;
        if (in->enc == QV_ENC_FOR) {
            ref = (uint64_t)in->params[0];
            ch = in->child[0];
        }
        int layout;
        unsigned w;
        if (ch->enc == QV_ENC_BITPACK) {
            layout = QV__ENTROPY_PACKED;
            w = (unsigned)ch->params[0];
        } else if (ch->enc == QV_ENC_PLAIN) {
            layout = QV__ENTROPY_SEQ;
            w = 8 * ch->width;
        } else {
            fprintf(stderr, "bench_entropy_dict: frame of encoding %d, not the entropy stage\n",
                    ch->enc);
            exit(1);
        }
        if (f == 0) {
            c->ref = ref;
            c->layout = layout;
            c->w = w;
        } else if (c->ref != ref || c->layout != layout || c->w != w) {
            die("frames of one node differ in layout", NULL);
        }
        uint8_t *tmp = xmalloc((size_t)ch->count * ch->width);
        if (qv__dec_word(d, ch, 0, ch->count, tmp, &err)) die("decoding residuals", &err);
        for (int64_t i = 0; i < ch->count; i++) c->res[at + i] = widen(tmp + i * ch->width, ch->width);
        at += ch->count;
        free(tmp);
        qv__mem_free_all(&m);
    }
    if (at != c->n) die("frames do not add up to the node's count", NULL);
    c->level = c->layout == QV__ENTROPY_SEQ ? 3 : 1;
    nchunks++;
}

static void walk(struct qv__dec *d, struct qv__node *nd, int col) {
    if (nd->enc == QV_ENC_ZSTD && nd->nparams == 1 && qv__pt_is_int(nd->pt) && nd->count > 0) {
        take_node(d, nd, col);
        return;
    }
    for (int i = 0; i < nd->nchildren; i++) walk(d, nd->child[i], col);
}

static void read_file(const char *path) {
    struct qv_error err = {0};
    struct qv_reader *rd;
    if (qv_reader_open(path, NULL, res, &rd, &err)) die(path, &err);
    int fd = open(path, O_RDONLY);
    if (fd < 0) die(path, NULL);
    file_bytes += (double)lseek(fd, 0, SEEK_END);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (int32_t node = 0; node < qv_reader_num_nodes(rd); node++) {
        char p[128];
        qv_reader_node_path(rd, node, p, sizeof p);
        int col = -1;
        for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++) {
            struct qv_chunk_info ci;
            if (qv_reader_chunk_info(rd, rg, node, &ci, &err)) die("chunk info", &err);
            for (int s = 0; s < ci.n_segments; s++) {
                struct qv_segment_info si;
                if (qv_reader_segment_info(rd, rg, node, s, &si, &err)) die("segment", &err);
                uint8_t *bytes = aligned_alloc(64, (si.length + 64) & ~(uint64_t)63);
                if (!bytes || pread(fd, bytes, si.length, (off_t)si.offset) != (ssize_t)si.length)
                    die("reading a segment", NULL);
                struct qv__dec d;
                memset(&d, 0, sizeof d);
                d.mem.r = res;
                d.stack.r = res;
                d.r = res;
                struct qv__node *root;
                if (qv__tree_parse(&d.mem, bytes, si.length, 0, 0, 0, &root, &err))
                    die("parsing a segment", &err);
                int before = nchunks;
                walk(&d, root, ncols);
                if (nchunks > before) {
                    if (col < 0) {
                        col = ncols++;
                        snprintf(cols[col].name, sizeof cols[col].name, "%.40s:%.100s%s", base, p,
                                 s ? (si.role == QV_SEGMENT_OFFSETS ? ".off" : ".val") : "");
                    }
                    cols[col].nchunks += nchunks - before;
                    for (int k = before; k < nchunks; k++) chunks[k].col = col;
                }
                qv__frame_caches_free(d.frames);
                qv__stack_free(&d.stack);
                qv__mem_free_all(&d.mem);
                free(bytes);
            }
        }
    }
    close(fd);
    qv_reader_close(rd);
}

/* ---- Building the variants ---- */

static ZSTD_CCtx *cctx;
/* --level L: the level of the variants' frames (0: the writer's). */
static int var_level;
/* --magicless: the variants' frames without zstd's magic number (ZSTD_c_format). */
static int magicless;
/* --lazy: the variants' frames with the level's parameters but zstd's lazy
 * strategy at search depth 1 (from lazy on, zstd weighs a dictionary's
 * entropy tables against new ones; faster strategies reuse them unchecked
 * for small literal sections). */
static int lazy;

static int level_of(const struct chunk *c, int vi) {
    return vi && var_level ? var_level : c->level;
}

static void compress_all(struct chunk *c, struct frames *fr, int level) {
    ZSTD_CDict *cd = NULL;
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_format,
                           fr->magicless ? ZSTD_f_zstd1_magicless : ZSTD_f_zstd1);
    if (fr->lazy) {
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_strategy, ZSTD_lazy);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_searchLog, 1);
    }
    double t0 = qv_bench_now_s();
    if (fr->dict_len) {
        /* As zstd_dict.c: parameters for frames of this size (a CDict's
         * parameters supersede the context's). */
        ZSTD_compressionParameters cp = ZSTD_getCParams(level, fr->raw_len[0], fr->dict_len);
        if (fr->lazy) {
            cp.strategy = ZSTD_lazy;
            cp.searchLog = 1;
        }
        cd = ZSTD_createCDict_advanced(fr->dict, fr->dict_len, ZSTD_dlm_byCopy, ZSTD_dct_auto, cp,
                                       ZSTD_defaultCMem);
        if (!cd) die("dictionary does not load", NULL);
        ZSTD_CCtx_refCDict(cctx, cd);
    }
    for (int64_t f = 0; f < fr->nf; f++) {
        size_t cap = ZSTD_compressBound(fr->raw_len[f]);
        fr->comp[f] = xmalloc(cap);
        size_t got = ZSTD_compress2(cctx, fr->comp[f], cap, fr->raw[f], fr->raw_len[f]);
        if (ZSTD_isError(got)) die(ZSTD_getErrorName(got), NULL);
        fr->comp_len[f] = got;
    }
    fr->comp_s = qv_bench_now_s() - t0;
    ZSTD_freeCDict(cd);
    /* Only the sizes of the payloads are needed from now on. */
    for (int64_t f = 0; f < fr->nf; f++) {
        free(fr->raw[f]);
        fr->raw[f] = NULL;
    }
}

static void build_variant(struct qv__enc *e, struct chunk *c, int vi) {
    const struct variant *v = &VARIANTS[vi];
    struct frames *fr = &c->v[vi];
    if (v->pick) return;
    const int64_t fv = v->fv > 0 ? v->fv : c->file_fv;
    if (vi == 0) {
        /* The file's frames: check that the rebuild and our compression
         * give what the writer wrote, then time our own compression. */
        struct frames chk = {0};
        chk.nf = fr->nf;
        chk.raw = xmalloc((size_t)chk.nf * sizeof *chk.raw);
        chk.raw_len = xmalloc((size_t)chk.nf * sizeof *chk.raw_len);
        chk.comp = xmalloc((size_t)chk.nf * sizeof *chk.comp);
        chk.comp_len = xmalloc((size_t)chk.nf * sizeof *chk.comp_len);
        for (int64_t f = 0; f < chk.nf; f++) {
            int64_t s = f * c->file_fv, m = c->n - s < c->file_fv ? c->n - s : c->file_fv;
            build_payload(e, c, s, m, &chk.raw[f], &chk.raw_len[f]);
            if (chk.raw_len[f] != fr->raw_len[f] || memcmp(chk.raw[f], fr->raw[f], fr->raw_len[f]))
                die("a rebuilt frame differs from the file's", NULL);
        }
        compress_all(c, &chk, c->level);
        for (int64_t f = 0; f < chk.nf; f++) {
            if (chk.comp_len[f] != fr->comp_len[f]) {
                fprintf(stderr, "note: %s frame %lld: zstd here %zu B, file %zu B\n",
                        cols[c->col].name, (long long)f, chk.comp_len[f], fr->comp_len[f]);
            }
            free(chk.raw[f]);
            free(chk.comp[f]);
        }
        fr->comp_s = chk.comp_s;
        for (int64_t f = 0; f < fr->nf; f++) {
            free(fr->raw[f]);
            fr->raw[f] = NULL;
        }
        free(chk.raw), free(chk.raw_len), free(chk.comp), free(chk.comp_len);
        return;
    }
    fr->nf = (c->n + fv - 1) / fv;
    fr->raw = xmalloc((size_t)fr->nf * sizeof *fr->raw);
    fr->raw_len = xmalloc((size_t)fr->nf * sizeof *fr->raw_len);
    fr->comp = xmalloc((size_t)fr->nf * sizeof *fr->comp);
    fr->comp_len = xmalloc((size_t)fr->nf * sizeof *fr->comp_len);
    for (int64_t f = 0; f < fr->nf; f++) {
        int64_t s = f * fv, m = c->n - s < fv ? c->n - s : fv;
        build_payload(e, c, s, m, &fr->raw[f], &fr->raw_len[f]);
    }
    fr->magicless = magicless;
    fr->lazy = lazy;
    if (v->dk != D_NONE) {
        /* Samples: the chunk's frames back to back. */
        size_t total = 0;
        for (int64_t f = 0; f < fr->nf; f++) total += fr->raw_len[f];
        uint8_t *buf = xmalloc(total);
        size_t *sizes = xmalloc((size_t)fr->nf * sizeof *sizes);
        size_t at = 0;
        for (int64_t f = 0; f < fr->nf; f++) {
            memcpy(buf + at, fr->raw[f], fr->raw_len[f]);
            sizes[f] = fr->raw_len[f];
            at += fr->raw_len[f];
        }
        fr->dict = xmalloc(v->dict_cap);
        double t0 = qv_bench_now_s();
        size_t got;
        if (v->dk == D_TABLES) {
            ZDICT_params_t zp;
            memset(&zp, 0, sizeof zp);
            zp.compressionLevel = level_of(c, vi);
            size_t content = fr->raw_len[0] < TABLE_CONTENT ? fr->raw_len[0] : TABLE_CONTENT;
            got = ZDICT_finalizeDictionary(fr->dict, v->dict_cap, fr->raw[0], content, buf, sizes,
                                           (unsigned)fr->nf, zp);
        } else {
            ZDICT_fastCover_params_t p;
            memset(&p, 0, sizeof p);
            p.k = 256;
            p.d = 8;
            p.f = 18;
            p.accel = 2;
            p.splitPoint = 1.0;
            p.zParams.compressionLevel = level_of(c, vi);
            got = ZDICT_trainFromBuffer_fastCover(fr->dict, v->dict_cap, buf, sizes,
                                                  (unsigned)fr->nf, p);
        }
        fr->build_s = qv_bench_now_s() - t0;
        if (ZDICT_isError(got)) {
            /* Too little to learn from: no dictionary (as zstd_dict does). */
            fr->dict_len = 0;
        } else {
            fr->dict_len = got;
        }
        free(buf);
        free(sizes);
    }
    compress_all(c, fr, level_of(c, vi));
}

/* ---- Timing ---- */

static ZSTD_DCtx *dctx_std;
static uint8_t *dst;
static size_t dst_cap;

static ZSTD_DDict *make_ddict(const struct frames *fr, void **ws) {
    size_t n = ZSTD_estimateDDictSize(fr->dict_len, ZSTD_dlm_byRef);
    *ws = xmalloc(n);
    ZSTD_DDict *dd = (ZSTD_DDict *)ZSTD_initStaticDDict(*ws, n, fr->dict, fr->dict_len,
                                                       ZSTD_dlm_byRef, ZSTD_dct_auto);
    if (!dd) die("DDict does not load", NULL);
    return dd;
}

static ZSTD_DCtx *dctx_ml;

static void decompress(const struct frames *fr, ZSTD_DDict *dd, int64_t f) {
    ZSTD_DCtx *dctx = fr->magicless ? dctx_ml : dctx_std;
    size_t got = dd ? ZSTD_decompress_usingDDict(dctx, dst, dst_cap, fr->comp[f], fr->comp_len[f], dd)
                    : ZSTD_decompressDCtx(dctx, dst, dst_cap, fr->comp[f], fr->comp_len[f]);
    if (ZSTD_isError(got) || got != fr->raw_len[f]) die("decompression", NULL);
}

/* Per column and variant: frame time samples (ns), DDict samples (ns). */
struct timing {
    double *frame_ns, *ddict_ns;
};

static uint64_t rs = 15;
static uint64_t rnd(void) {
    uint64_t z = (rs += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#define PICKS 2000

static void time_column(int col, int repeats, struct timing *t) {
    /* Random rows of the column: (node, row) pairs; each variant
     * decompresses the frame holding each row. */
    int ck[256];
    int nck = 0;
    for (int k = 0; k < nchunks && nck < 256; k++)
        if (chunks[k].col == col) ck[nck++] = k;
    int64_t rows = 0;
    for (int i = 0; i < nck; i++) rows += chunks[ck[i]].n;
    int npick = rows / 1024 < PICKS ? (int)(rows / 1024) + 1 : PICKS;
    int *pc = xmalloc((size_t)npick * sizeof *pc);
    int64_t *pr = xmalloc((size_t)npick * sizeof *pr);
    for (int i = 0; i < npick; i++) {
        /* A row of the column, uniformly: nodes weigh by their values. */
        int64_t row = (int64_t)(rnd() % (uint64_t)rows);
        int k = 0;
        while (row >= chunks[ck[k]].n) row -= chunks[ck[k++]].n;
        pc[i] = ck[k];
        pr[i] = row;
    }
    for (int r = 0; r < repeats; r++) {
        for (int vi = 0; vi < NV; vi++) {
            /* DDicts of this column's chunks, timed. */
            double t0 = qv_bench_now_s();
            void *ws[256] = {0};
            int made = 0;
            for (int i = 0; i < nck; i++) {
                struct chunk *c = &chunks[ck[i]];
                const struct frames *fr = frames_of(c, vi);
                c->ddict[vi] = fr->dict_len ? make_ddict(fr, &ws[i]) : NULL;
                made += c->ddict[vi] != NULL;
            }
            double t1 = qv_bench_now_s();
            /* Per chunk of the column (0 for chunks without a dictionary). */
            t->ddict_ns[vi * repeats + r] = made ? (t1 - t0) * 1e9 / nck : 0;
            t0 = qv_bench_now_s();
            for (int i = 0; i < npick; i++) {
                struct chunk *c = &chunks[pc[i]];
                decompress(frames_of(c, vi), c->ddict[vi], pr[i] / fv_of(c, vi));
            }
            t1 = qv_bench_now_s();
            t->frame_ns[vi * repeats + r] = (t1 - t0) * 1e9 / npick;
            for (int i = 0; i < nck; i++) {
                free(ws[i]);
                chunks[ck[i]].ddict[vi] = NULL;
            }
        }
    }
    free(pc);
    free(pr);
}

int main(int argc, char **argv) {
    struct qv_bench *b = qv_bench_open("entropy_dict", argc, argv);
    int repeats = qv_bench_quick(b) ? 3 : 9;
    struct qv_error err = {0};
    struct qv_pool_options po = {0};
    po.name = "bench";
    if (qv_pool_create(&po, &pool, &err) || qv_reservation_create(pool, NULL, &res, &err))
        die("pool", &err);
    int nfiles = 0;
    for (int i = 0; i < qv_bench_argc(b); i++) {
        const char *a = qv_bench_argv(b)[i];
        if (!strcmp(a, "--repeats") && i + 1 < qv_bench_argc(b)) {
            repeats = atoi(qv_bench_argv(b)[++i]);
            continue;
        }
        if (!strcmp(a, "--level") && i + 1 < qv_bench_argc(b)) {
            var_level = atoi(qv_bench_argv(b)[++i]);
            continue;
        }
        if (!strcmp(a, "--magicless")) {
            magicless = 1;
            continue;
        }
        if (!strcmp(a, "--lazy")) {
            lazy = 1;
            continue;
        }
        read_file(a);
        nfiles++;
    }
    if (!nfiles) {
        fprintf(stderr, "usage: bench_entropy_dict [--quick] [--json FILE] FILE.qvr ... "
                        "[--repeats N]\n");
        return 2;
    }
    if (repeats < 1) repeats = 1;
    cctx = ZSTD_createCCtx();
    dctx_std = ZSTD_createDCtx();
    dctx_ml = ZSTD_createDCtx();
    ZSTD_DCtx_setParameter(dctx_ml, ZSTD_d_format, ZSTD_f_zstd1_magicless);
    struct qv_encode_options eo;
    memset(&eo, 0, sizeof eo);
    struct qv__enc e;
    qv__enc_init(&e, &eo, res, &err);
    size_t maxraw = 0;
    for (int k = 0; k < nchunks; k++) {
        for (int vi = 0; vi < NV; vi++) build_variant(&e, &chunks[k], vi);
        choose(&chunks[k]);
        for (int vi = 0; vi < NV; vi++)
            for (int64_t f = 0; f < chunks[k].v[vi].nf; f++)
                if (chunks[k].v[vi].raw_len[f] > maxraw) maxraw = chunks[k].v[vi].raw_len[f];
    }
    dst_cap = maxraw;
    dst = xmalloc(dst_cap);

    printf("entropy-stage zstd nodes: %d in %d columns; %d repeats; file: level 1 (sequential "
           "3), variants: %s%d%s%s\n", nchunks, ncols, repeats, var_level ? "level " : "as file ",
           var_level, magicless ? ", magicless" : "", lazy ? ", lazy strategy" : "");
    printf("bytes = frames + 16 B/frame table + dictionaries; ns/frame = one random frame "
           "decompressed (min/median);\nddict = DDict creation per node of the column (min/median); take100 = "
           "100 x frame median + nodes (<= 100) x ddict median\n");
    double tot_bytes[NV] = {0}, tot_take[NV] = {0}, tot_build[NV] = {0}, tot_comp[NV] = {0},
           tot_raw[NV] = {0}, tot_nf[NV] = {0}, tot_take_min[NV] = {0}, tot_warm[NV] = {0},
           tot_warm_min[NV] = {0};
    double *fs = xmalloc(sizeof(double) * (size_t)(NV * repeats));
    double *ds = xmalloc(sizeof(double) * (size_t)(NV * repeats));
    for (int col = 0; col < ncols; col++) {
        struct timing t = {fs, ds};
        time_column(col, repeats, &t);
        int64_t vals = 0;
        uint64_t base = 0;
        for (int k = 0; k < nchunks; k++)
            if (chunks[k].col == col) vals += chunks[k].n;
        int64_t file_fv = 0;
        const char *layout = "?";
        unsigned width = 0;
        for (int k = 0; k < nchunks; k++)
            if (chunks[k].col == col) {
                file_fv = chunks[k].file_fv;
                layout = chunks[k].layout == QV__ENTROPY_SEQ ? "seq" : "packed";
                width = chunks[k].w;
            }
        printf("\n%s: %d node(s), %lld values, file frames %lld values, layout %s w=%u\n",
               cols[col].name, cols[col].nchunks, (long long)vals, (long long)file_fv, layout,
               width);
        printf("  %-10s %10s %7s %8s %9s %9s %8s %8s %9s %9s %9s\n", "variant", "bytes", "ratio",
               "frames", "ns/fr min", "ns/fr med", "ddict mn", "ddict md", "take100us", "dict B",
               "build ms");
        for (int vi = 0; vi < NV; vi++) {
            uint64_t bytes = 0, nf = 0, dict = 0, raw = 0;
            double build = 0, comp = 0;
            for (int k = 0; k < nchunks; k++) {
                if (chunks[k].col != col) continue;
                const struct frames *fr = frames_of(&chunks[k], vi);
                for (int64_t f = 0; f < fr->nf; f++) {
                    bytes += fr->comp_len[f];
                    raw += fr->raw_len[f];
                }
                nf += (uint64_t)fr->nf;
                dict += fr->dict_len;
                build += fr->build_s;
                comp += fr->comp_s;
            }
            bytes += nf * 16 + dict;
            if (vi == 0) base = bytes;
            double fmin = qv_bench_min(fs + vi * repeats, repeats);
            double fmed = qv_bench_median(fs + vi * repeats, repeats);
            double dmin = qv_bench_min(ds + vi * repeats, repeats);
            double dmed = qv_bench_median(ds + vi * repeats, repeats);
            int touched = cols[col].nchunks < 100 ? cols[col].nchunks : 100;
            double take = (100 * fmed + (dict ? touched * dmed : 0)) / 1000;
            printf("  %-10s %10llu %7.4f %8llu %9.0f %9.0f %8.0f %8.0f %9.1f %9llu %9.2f\n",
                   VARIANTS[vi].name, (unsigned long long)bytes, (double)bytes / (double)base,
                   (unsigned long long)nf, fmin, fmed, dmin, dmed, take, (unsigned long long)dict,
                   build * 1e3);
            tot_bytes[vi] += (double)bytes;
            tot_take[vi] += take;
            tot_take_min[vi] += (100 * fmin + (dict ? touched * dmin : 0)) / 1000;
            tot_warm[vi] += 100 * fmed / 1000;
            tot_warm_min[vi] += 100 * fmin / 1000;
            tot_nf[vi] += (double)nf;
            tot_build[vi] += build;
            tot_comp[vi] += comp;
            tot_raw[vi] += (double)raw;
            const char *case_name = cols[col].name;
            qv_bench_record(b, case_name, VARIANTS[vi].name, "bytes", "value", (double)bytes, "B");
            qv_bench_record_samples(b, case_name, VARIANTS[vi].name, "frame_decompress",
                                    fs + vi * repeats, repeats, "ns");
        }
    }
    printf("\nTOTAL over %d columns of %d file(s), %.0f bytes in all; the stage's payloads: %.1f MB\n",
           ncols, nfiles, file_bytes, tot_raw[0] / 1e6);
    printf("take100: sum over the columns of a 100-row take's frames (+ DDicts: cold) in us, "
           "from the median (med) or min of the per-frame times\n");
    printf("d%%file: change of the files' total size; @8B: the same with an 8 B/frame table\n");
    printf("  %-10s %11s %7s %7s %7s %7s %9s %9s %9s %9s %9s %8s\n", "variant", "bytes", "ratio",
           "d%file", "@8B", "frames", "cold med", "cold min", "warm med", "warm min", "build ms",
           "MB/s");
    for (int vi = 0; vi < NV; vi++) {
        double d = tot_bytes[vi] - tot_bytes[0];
        double d8 = d - 8 * tot_nf[vi] + 8 * tot_nf[0];
        printf("  %-10s %11.0f %7.4f %+7.3f %+7.3f %7.0f %9.1f %9.1f %9.1f %9.1f %9.2f %8.1f\n",
               VARIANTS[vi].name, tot_bytes[vi], tot_bytes[vi] / tot_bytes[0],
               100 * d / file_bytes, 100 * d8 / file_bytes, tot_nf[vi], tot_take[vi],
               tot_take_min[vi], tot_warm[vi], tot_warm_min[vi], tot_build[vi] * 1e3,
               tot_comp[vi] > 0 ? tot_raw[vi] / tot_comp[vi] / 1e6 : 0);
        qv_bench_record(b, "total", VARIANTS[vi].name, "bytes", "value", tot_bytes[vi], "B");
    }
    return qv_bench_close(b);
}
