/* Decoding one top-level column of one row group to Arrow: a row range, or
 * a set of rows touching only the vectors that hold them.
 *
 * A column whose values segment is stored relative to another column
 * (encoding 17, docs/format.md 5.5.16) reads that column's values too: the
 * column reader opens a second column reader on the reference column of
 * the same row group (its own buffer, verification and lazy block reads,
 * so a take reads only the reference's blocks the taken rows touch) and
 * attaches its values decoder to the relative one. The reference reader
 * is kept across row groups like the read buffer. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/dcheck.h"
#include "base/rows.h"
#include "base/corrupt.h"
#include "arrow/arrow_internal.h"
#include "encoding/dec_verify.h"
#include "format/reader_internal.h"

struct qv_column_reader;

/* What a decoder's verifier needs to check blocks of one segment (format
 * 2; dec_verify.h). */
struct seg_check {
    struct qv_column_reader *cr;
    const struct qv__segment *seg;
    const uint8_t *bytes;
    int32_t node;
    int role;
    uint64_t local_first; /* first bit of the segment's blocks in cr->vbits (pread) */
};

struct node_dec {
    struct qv_decoder *dec[3]; /* by role */
    const struct qv__segment *seg[3];
    const uint8_t *bytes[3];   /* the segment's bytes: in the mapping, or in `owned` */
    struct seg_check check[3];
};

struct qv_column_reader {
    const struct qv_reader *rd;
    struct qv_reservation *r;
    int64_t rg;
    int32_t first, end; /* node range of the column's subtree */
    struct qv_reservation *tree_r; /* of the array being filled by the current call */
    /* Which nodes of the subtree are read (keep[k - first]); NULL: all. A
     * struct's children that are not kept are left out of the arrays. */
    uint8_t *keep;
    struct qv_field *pruned; /* the column's field without what is not kept */
    size_t pruned_size;
    uint8_t *owned;        /* the read buffer, kept across row groups (qv_column_reader_move) */
    size_t owned_cap;
    size_t bytes_size; /* bytes of the kept segments of the current row group */
    struct node_dec *nd;
    /* Format 2 read with pread: one bit per block of the loaded segments,
     * set once verified. The copy is fresh at every load, so the bits are
     * cleared then (a mapping shares the reader's bits instead). */
    uint64_t *vbits;
    size_t vbits_words;
    int lazy;         /* format 2 with pread: blocks are read on demand */
    int placed;       /* the read buffer is laid out for the current row group (place()) */
    int all_present;  /* lazy, and every block has been read since the load */
    int opened;       /* the decoders of the current row group are open */
    uint64_t fetched; /* bytes read on demand since the load */
    /* The reader of the column the values are stored relative to (NULL:
     * none); is_ref: this reader is such a reference, which may not be
     * relative itself. */
    struct qv_column_reader *ref;
    int is_ref;
    /* Rows of the take being decoded (0: a range read), for how the
     * reference column's chunk is read (take_mode). */
    int64_t take_rows;
    /* The row list of that take, checked (check_take_rows: in the row
     * group, strictly increasing); NULL outside a take. Decoders handed
     * this very list skip their own pass over it (dec_take). */
    const int64_t *checked_rows;
};

/* Prefixes a decoder error with where it happened (a relative column's
 * error names its reference column too). */
static int where(struct qv_column_reader *cr, int32_t k, int role, int rc, struct qv_error *err) {
    char path[512], rel[560] = "";
    qv__node_path(cr->rd->f.nodes, k, path, sizeof path);
    const struct qv__segment *s = cr->nd[k - cr->first].seg[role];
    int64_t ref = qv_decoder_reference_node(cr->nd[k - cr->first].dec[QV_SEGMENT_VALUES]);
    if (ref >= 0 && ref < cr->rd->f.n_nodes) {
        char rpath[512];
        qv__node_path(cr->rd->f.nodes, (int32_t)ref, rpath, sizeof rpath);
        snprintf(rel, sizeof rel, " (stored relative to column '%s')", rpath);
    }
    return qv_error_wrap(err, rc, "file '%s': column '%s'%s, row group %lld, %s segment at offset %llu: ",
                         cr->rd->src.name, path, rel, (long long)cr->rg, qv__role_name(role),
                         (unsigned long long)(s ? s->offset : 0));
}

static int corrupt(struct qv_column_reader *cr, int32_t k, int role, struct qv_error *err,
                   const char *what) {
    qv__corrupt_set(err, "%s", what);
    return where(cr, k, role, EIO, err);
}

/* Closes the decoders of the current row group; the read buffer stays. */
static void drop_decoders(struct qv_column_reader *cr) {
    int32_t n = cr->end - cr->first;
    for (int32_t i = 0; i < n; i++) {
        for (int j = 0; j < 3; j++) qv_decoder_close(cr->nd[i].dec[j]);
        memset(&cr->nd[i], 0, sizeof cr->nd[i]);
    }
}

void qv_column_reader_close(struct qv_column_reader *cr) {
    if (!cr) return;
    if (cr->nd) {
        drop_decoders(cr);
        qv_free(cr->r, cr->nd, (size_t)(cr->end - cr->first) * sizeof *cr->nd);
    }
    qv_column_reader_close(cr->ref);
    if (cr->owned) qv_free(cr->r, cr->owned, cr->owned_cap);
    if (cr->vbits) qv_free(cr->r, cr->vbits, cr->vbits_words * sizeof(uint64_t));
    if (cr->keep) qv_free(cr->r, cr->keep, (size_t)(cr->end - cr->first));
    if (cr->pruned) qv_free(cr->r, cr->pruned, cr->pruned_size);
    qv_free(cr->r, cr, sizeof *cr);
}

/* A read buffer for `need` bytes. A scan moves one column reader through
 * the row groups of its column: a fresh buffer per row group cost a
 * malloc/free of a large block each time (glibc consolidating, sometimes
 * mapping and faulting in new pages; about 5% of a full scan's CPU) and
 * missed the pool's same-size block cache, whose sizes spans rarely match.
 * So the buffer is kept (rounded up to 64 KiB steps from 256 KiB on) and
 * replaced only when too small (it soon holds the column's largest span:
 * keeping only near-exact fits lost the gain, as spans differ by more than
 * that) or four times too large (a large span's buffer is not held while
 * reading small ones). No proportional headroom: it is charged to the pool
 * (an eighth raised single-scan pool peaks by up to 3%). */
static int ensure_buffer(struct qv_column_reader *cr, size_t need, struct qv_error *err) {
    if (cr->owned && need <= cr->owned_cap && need >= cr->owned_cap / 4) return 0;
    if (cr->owned) qv_free(cr->r, cr->owned, cr->owned_cap);
    cr->owned = NULL;
    cr->owned_cap = 0;
    size_t step = (size_t)64 * 1024, cap = need;
    if (cap >= 4 * step && cap <= SIZE_MAX - step) cap = (cap + step - 1) / step * step;
    cr->owned = qv_alloc(cr->r, cap, err);
    if (!cr->owned) return ENOMEM;
    cr->owned_cap = cap;
    return 0;
}

/* The page the read buffer's largest segment is aligned to when read by
 * blocks (load()). */
#define QV__READ_PAGE ((size_t)4096)

static bool kept(const struct qv_column_reader *cr, int32_t k) {
    return !cr->keep || cr->keep[k - cr->first];
}

/* Reads `len` bytes at `off` of the source into `dst`, naming the column on
 * failure. */
static int read_run(struct qv_column_reader *cr, uint64_t off, size_t len, uint8_t *dst,
                    struct qv_error *err) {
    int rc = qv_source_read(&cr->rd->src, off, dst, len, err);
    if (rc) {
        char path[512];
        qv__node_path(cr->rd->f.nodes, cr->first, path, sizeof path);
        qv_error_wrap(err, rc, "column '%s', row group %lld (%zu bytes at offset %llu): ", path,
                      (long long)cr->rg, len, (unsigned long long)off);
    }
    return rc;
}

/* Block b of a segment, bytes [at, at + n), against section 5. */
static int block_mismatch(struct qv_column_reader *cr, const struct seg_check *sc, uint64_t b,
                          uint64_t at, uint64_t n, struct qv_error *err) {
    const struct qv_reader *rd = cr->rd;
    const struct qv__segment *s = sc->seg;
    uint64_t want = qv__get_u64le(rd->f.block_sums + (s->first_block + b) * 8);
    if (qv_hash64(sc->bytes + at, (size_t)n, 0) == want) return 0;
    char path[512];
    qv__node_path(rd->f.nodes, sc->node, path, sizeof path);
    return qv__corrupt_set(err,
                           "file '%s': checksum mismatch in column '%s', row group %lld, %s "
                           "segment at offset %llu (%llu bytes), block %llu (bytes %llu..%llu "
                           "of the segment)",
                           rd->src.name, path, (long long)cr->rg, qv__role_name(s->role),
                           (unsigned long long)s->offset, (unsigned long long)s->length,
                           (unsigned long long)b, (unsigned long long)at,
                           (unsigned long long)(at + n));
}

/* The verifier of a format 2 segment: checks every block of [off, off +
 * len) not checked before against section 5's checksums; read with pread,
 * it first reads the blocks not read yet (a column reader of a format 2
 * file reads its blocks on demand). With checksums skipped it is called
 * only when reading with pread, and only reads. */
static int check_blocks(void *ctx, uint64_t off, uint64_t len, struct qv_error *err) {
    struct seg_check *sc = ctx;
    struct qv_column_reader *cr = sc->cr;
    const struct qv_reader *rd = cr->rd;
    const struct qv__segment *s = sc->seg;
    const unsigned shift = rd->f.block_shift;
    const int verify = !rd->opts.skip_checksums;
    if (!len) return 0;
    if (off > s->length || len > s->length - off) {
        qv__corrupt_set(err, "bytes %llu+%llu outside the segment of %llu bytes",
                        (unsigned long long)off, (unsigned long long)len,
                        (unsigned long long)s->length);
        return where(cr, sc->node, sc->role, EIO, err);
    }
    uint64_t *bits = rd->src.base ? rd->verified : cr->vbits;
    uint64_t first = rd->src.base ? s->first_block : sc->local_first;
    for (uint64_t b = off >> shift, last = (off + len - 1) >> shift; b <= last; b++) {
        uint64_t i = first + b, bit = UINT64_C(1) << (i % 64);
        if (__atomic_load_n(&bits[i / 64], __ATOMIC_ACQUIRE) & bit) continue;
        uint64_t at = b << shift, n = s->length - at;
        if (n > (UINT64_C(1) << shift)) n = UINT64_C(1) << shift;
        if (cr->lazy && !cr->all_present) {
            /* Read on demand (pread): this block and the neighbours the same
             * request asks for that are not here yet, with one read. */
            uint64_t e = b + 1;
            while (e <= last && !(bits[(first + e) / 64] & (UINT64_C(1) << ((first + e) % 64))))
                e++;
            uint64_t span = (e << shift) < s->length ? (e << shift) - at : s->length - at;
            uint8_t *dst = (uint8_t *)sc->bytes + at;
            if (!rd->lend || !rd->lend(rd->lend_ctx, cr->rg, sc->node, sc->role, at, span, dst)) {
                int rc = read_run(cr, s->offset + at, (size_t)span, dst, err);
                if (rc) return rc;
            }
            cr->fetched += span;
            for (uint64_t k = b; k < e; k++) {
                uint64_t a = k << shift, m = s->length - a;
                if (m > (UINT64_C(1) << shift)) m = UINT64_C(1) << shift;
                int vrc = verify ? block_mismatch(cr, sc, k, a, m, err) : 0;
                if (vrc) return vrc;
                cr->vbits[(first + k) / 64] |= UINT64_C(1) << ((first + k) % 64);
            }
            b = e - 1;
            continue;
        }
        if (!verify) continue; /* present: nothing to check */
        int vrc = block_mismatch(cr, sc, b, at, n, err);
        if (vrc) return vrc;
        __atomic_fetch_or(&bits[i / 64], bit, __ATOMIC_RELEASE);
    }
    return 0;
}

/* Format 2 read with pread: room for one bit per block of the kept
 * segments, cleared. */
static int reset_vbits(struct qv_column_reader *cr, uint64_t blocks, struct qv_error *err) {
    size_t words = (size_t)((blocks + 63) / 64) + 1;
    if (words > cr->vbits_words || words < cr->vbits_words / 4) {
        if (cr->vbits) qv_free(cr->r, cr->vbits, cr->vbits_words * sizeof(uint64_t));
        cr->vbits_words = 0;
        cr->vbits = qv_alloc(cr->r, words * sizeof(uint64_t), err);
        if (!cr->vbits) return ENOMEM;
        cr->vbits_words = words;
    }
    memset(cr->vbits, 0, cr->vbits_words * sizeof(uint64_t));
    return 0;
}

/* Reads the kept segments not read yet, each run of neighbouring segments
 * with one read (a column's segments are contiguous: one read). */
static int read_runs(struct qv_column_reader *cr, struct qv_error *err) {
    uint64_t run_off = 0;
    size_t run_len = 0;
    uint8_t *run_dst = NULL;
    int rc = 0;
    for (int32_t k = cr->first; !rc && k < cr->end; k++) {
        for (int role = 0; !rc && role < 3; role++) {
            const struct qv__segment *sg = cr->nd[k - cr->first].seg[role];
            if (!sg) continue;
            uint8_t *dst = (uint8_t *)cr->nd[k - cr->first].bytes[role];
            /* Held whole by another reader of the file (verified as used,
             * like bytes read): copied. */
            if (cr->lazy && cr->rd->lend && sg->length &&
                cr->rd->lend(cr->rd->lend_ctx, cr->rg, k, role, 0, sg->length, dst))
                continue;
            if (run_len && sg->offset == run_off + run_len && dst == run_dst + run_len) {
                run_len += (size_t)sg->length;
                continue;
            }
            if (run_len) rc = read_run(cr, run_off, run_len, run_dst, err);
            run_off = sg->offset;
            run_len = (size_t)sg->length;
            run_dst = dst;
        }
    }
    if (!rc && run_len) rc = read_run(cr, run_off, run_len, run_dst, err);
    return rc;
}

/* How ensure_open reads a lazily loaded column. */
enum {
    READ_BLOCKS = 0, /* block by block as the decoders ask (a take) */
    READ_WHOLE = 1,  /* whole, and the reference column's chunk too (a range) */
    READ_OWN = 2,    /* its own chunk whole, the reference's by blocks (a small take) */
};

static int ensure_open(struct qv_column_reader *cr, int whole, struct qv_error *err);
static int place(struct qv_column_reader *cr, size_t pad_room, struct qv_error *err);
static int take_mode(const struct qv_column_reader *cr, int64_t n);
static int open_reader(const struct qv_reader *rd, int64_t rg, int32_t column, const uint8_t *keep,
                       struct qv_reservation *r, int is_ref, struct qv_column_reader **out,
                       struct qv_error *err);

/* A relative values decoder of node k: moves (or opens) the reader of its
 * reference column to this row group, opens its decoders and attaches its
 * values decoder. The reference must be another top-level column with a
 * values segment; a reference reader never opens a reference of its own,
 * so no chain (and no cycle) is followed. */
static int attach_reference(struct qv_column_reader *cr, int32_t k, struct qv_decoder *dec,
                            struct qv_error *err) {
    const struct qv_reader *rd = cr->rd;
    int64_t ref = qv_decoder_reference_node(dec);
    char why[160] = "";
    if (cr->is_ref)
        snprintf(why, sizeof why, "it is the reference of another column and is itself stored "
                                  "relative to node %lld (the format allows no chains)",
                 (long long)ref);
    else if (k != cr->first)
        snprintf(why, sizeof why, "a nested field is stored relative to node %lld", (long long)ref);
    else if (ref >= rd->f.n_nodes || ref == k || rd->f.nodes[ref].parent != -1)
        snprintf(why, sizeof why, "reference node %lld is not another top-level column",
                 (long long)ref);
    if (why[0]) {
        qv__corrupt_set(err, "%s", why);
        return where(cr, k, QV_SEGMENT_VALUES, EIO, err);
    }
    int32_t col = rd->f.nodes[ref].column;
    int rc;
    if (cr->ref && cr->ref->first == (int32_t)ref) {
        rc = cr->ref->rg == cr->rg && cr->ref->opened ? 0 : qv_column_reader_move(&cr->ref, cr->rg, err);
    } else {
        qv_column_reader_close(cr->ref);
        cr->ref = NULL;
        rc = open_reader(rd, cr->rg, col, NULL, cr->r, 1, &cr->ref, err);
    }
    /* A take reads the reference's chunk by the same rule as its own. */
    if (!rc) rc = ensure_open(cr->ref, cr->take_rows ? take_mode(cr->ref, cr->take_rows) : READ_BLOCKS,
                              err);
    struct qv_decoder *rdec = rc ? NULL : cr->ref->nd[0].dec[QV_SEGMENT_VALUES];
    if (!rc && !rdec) {
        qv__corrupt_set(err, "the reference column has no values segment in this row group");
        rc = EIO;
    }
    if (!rc) rc = qv_decoder_set_reference(dec, rdec, err);
    return rc ? where(cr, k, QV_SEGMENT_VALUES, rc, err) : 0;
}

/* Opens the decoders of the loaded segments (format 1: verifying each
 * segment whole first; format 2: with the block verifier, which also reads
 * the blocks on demand when reading with pread, checksums or not). */
static int open_decoders(struct qv_column_reader *cr, struct qv_error *err) {
    const struct qv_reader *rd = cr->rd;
    const int by_block = rd->f.block_shift && (!rd->opts.skip_checksums || cr->lazy);
    int rc = 0;
    for (int32_t k = cr->first; !rc && k < cr->end; k++) {
        for (int role = 0; role < 3 && !rc; role++) {
            const struct qv__segment *sg = cr->nd[k - cr->first].seg[role];
            if (!sg) continue;
            const uint8_t *b = cr->nd[k - cr->first].bytes[role];
            struct seg_check *sc = &cr->nd[k - cr->first].check[role];
            if (!by_block) rc = qv__reader_verify(rd, cr->rg, k, sg, b, err);
            if (rc) break;
            struct qv_decoder **dp = &cr->nd[k - cr->first].dec[role];
            /* A retry after a failed open (a relative column whose
             * reference failed) must not lose the decoders it opened. */
            qv_decoder_close(*dp);
            *dp = NULL;
            /* An unaligned in-memory source is copied by the decoder:
             * verify all of it first. */
            int checked = by_block && !((uintptr_t)b & 7);
            if (by_block && !checked) rc = check_blocks(sc, 0, sg->length, err);
            if (!rc)
                rc = qv__decoder_open_checked(b, (size_t)sg->length, (enum qv_value_kind)sg->kind,
                                              sg->fixed_width, sg->count, cr->r,
                                              checked ? check_blocks : NULL, sc, dp, err);
            /* A checksum error names its block already. */
            if (rc && !(by_block && err && strstr(err->message, "checksum mismatch")))
                where(cr, k, role, rc, err);
            if (!rc && role == QV_SEGMENT_VALUES && qv_decoder_reference_node(*dp) >= 0)
                rc = attach_reference(cr, k, *dp, err);
        }
    }
    cr->opened = !rc;
    return rc;
}

/* Before a decode: a lazily loaded column (format 2 with pread) is read
 * whole with one read (`whole`: READ_WHOLE when a range is read, so a scan
 * reads as it always did; READ_OWN for a take that take_mode() finds
 * cheaper so), or left to be read block by block as a take's decoders ask;
 * then its decoders are opened. Either way the decoders verify every block
 * they use against its checksum before they use it. */
static int ensure_open(struct qv_column_reader *cr, int whole, struct qv_error *err) {
    int rc = 0;
    if (cr->lazy && !cr->placed) rc = place(cr, whole == READ_BLOCKS ? QV__READ_PAGE : 0, err);
    if (rc) return rc;
    if (cr->lazy && whole && !cr->all_present) {
        if (cr->fetched == 0) {
            rc = read_runs(cr, err);
        } else {
            for (int32_t k = cr->first; !rc && k < cr->end; k++)
                for (int role = 0; !rc && role < 3; role++) {
                    struct seg_check *sc = &cr->nd[k - cr->first].check[role];
                    if (cr->nd[k - cr->first].seg[role] && sc->seg->length)
                        rc = check_blocks(sc, 0, sc->seg->length, err);
                }
        }
        if (!rc) cr->all_present = 1;
    }
    if (!rc && !cr->opened) rc = open_decoders(cr, err);
    /* A range read reads the reference's chunk whole too. */
    if (!rc && cr->ref && whole == READ_WHOLE) {
        rc = ensure_open(cr->ref, READ_WHOLE, err);
        if (rc) where(cr, cr->first, QV_SEGMENT_VALUES, rc, err);
    }
    return rc;
}

/* Lays the kept segments of the current row group out in the read buffer
 * (pread: owned, so the bytes verified are the bytes decoded, even if the
 * file changes while the column reader is open), contiguous so that a
 * whole chunk is one read. With `pad_room` (a chunk read by blocks), the
 * largest segment starts on a page: a block of 4 KiB then lands in one
 * page of the buffer instead of straddling two, and a take that reads a
 * block per row faults in one fresh page per block, not two (a page fault
 * costs more than the read itself; lineitem SF1, 100 rows: ~2,200 reads of
 * 4-8 KiB). The pad before the segments (under a page) is never touched.
 * A chunk read whole (a scan) gets no pad: its buffer is what it was. */
static int place(struct qv_column_reader *cr, size_t pad_room, struct qv_error *err) {
    size_t total = 0, at = 0, largest = 0;
    for (int32_t k = cr->first; k < cr->end; k++)
        for (int role = 0; role < 3; role++) {
            const struct qv__segment *sg = cr->nd[k - cr->first].seg[role];
            if (!sg) continue;
            if ((size_t)sg->length > largest) {
                largest = (size_t)sg->length;
                at = total;
            }
            total += (size_t)sg->length;
        }
    if (!total) pad_room = 0;
    if (total) {
        int rc = ensure_buffer(cr, total + pad_room, err);
        if (rc) return rc;
    }
    size_t pos = 0;
    if (pad_room) {
        uintptr_t start = (uintptr_t)cr->owned + at;
        pos = (size_t)((QV__READ_PAGE - start % QV__READ_PAGE) % QV__READ_PAGE);
    }
    for (int32_t k = cr->first; k < cr->end; k++)
        for (int role = 0; role < 3; role++) {
            const struct qv__segment *sg = cr->nd[k - cr->first].seg[role];
            if (!sg) continue;
            const uint8_t *b = cr->owned + pos;
            pos += (size_t)sg->length;
            cr->nd[k - cr->first].bytes[role] = b;
            cr->nd[k - cr->first].check[role].bytes = b;
        }
    cr->placed = 1;
    return 0;
}

/* Loads row group rg (no decoders open): finds the kept segments and
 * where their bytes go, reads them (pread, format 1) and opens their
 * decoders, except for a format 2 file read with pread, whose reads and
 * decoders wait for the first decode (ensure_open). Only the segments of
 * kept nodes are read. A column's segments are contiguous, so reading all
 * of them is one read; a nested projection reads each run of neighbouring
 * kept segments with one read, and the segments of the fields left out
 * are never fetched. */
static int load(struct qv_column_reader *cr, int64_t rg, struct qv_error *err) {
    const struct qv_reader *rd = cr->rd;
    int32_t first = cr->first;
    cr->rg = rg;
    cr->bytes_size = 0;
    cr->opened = 0;
    cr->all_present = 0;
    cr->fetched = 0;
    size_t total = 0;
    for (int32_t k = first; k < cr->end; k++) {
        if (!kept(cr, k)) continue;
        const struct qv__chunk *ch = qv__reader_chunk(rd, rg, k);
        for (uint32_t i = 0; i < ch->n_segments; i++) {
            const struct qv__segment *sg = &rd->f.segments[ch->first_segment + i];
            cr->nd[k - first].seg[sg->role] = sg;
            total += (size_t)sg->length;
        }
    }
    int rc = 0;
    /* Format 2 read with pread: blocks are read as the decoders touch them
     * (checked unless checksums are skipped), so a take reads only the
     * blocks of its rows: with checksums skipped, reading each touched
     * chunk whole made a take of 100 rows of lineitem slower than with
     * them. Its read buffer is laid out at the first decode (place()),
     * once it is known whether the chunk is read whole or by blocks. */
    const int by_block = rd->f.block_shift && !rd->src.base;
    cr->lazy = by_block;
    cr->placed = 0;
    uint64_t local = 0;
    for (int32_t k = first; k < cr->end; k++) {
        for (int role = 0; role < 3; role++) {
            const struct qv__segment *sg = cr->nd[k - first].seg[role];
            if (!sg) continue;
            /* Mapped (an opt-in) or memory: decode in place; only the pages
             * a decode touches are read. A mapped file changed by someone
             * else is decoded as it is now (or faults): the documented
             * caveat. Read: place() sets where the bytes go. */
            const uint8_t *b = rd->src.base ? (const uint8_t *)rd->src.base + sg->offset : NULL;
            cr->nd[k - first].bytes[role] = b;
            cr->nd[k - first].check[role] = (struct seg_check){cr, sg, b, k, role, local};
            if (by_block) local += qv__blocks_of(sg->length, rd->f.block_shift);
        }
    }
    /* Format 2 read with pread: a bit per block of the kept segments. */
    if (cr->lazy) rc = reset_vbits(cr, local, err);
    if (!rc && !rd->src.base && !cr->lazy) rc = place(cr, 0, err);
    if (!rc && !rd->src.base && !cr->lazy) rc = read_runs(cr, err);
    cr->bytes_size = rc ? 0 : total;
    if (!rc && !cr->lazy) rc = open_decoders(cr, err);
    return rc;
}

void qv__column_reader_top(const struct qv_column_reader *cr, const struct qv_reader **rd,
                           int64_t *rg, int32_t *node, struct qv_reservation **r) {
    *rd = cr->rd;
    *rg = cr->rg;
    *node = cr->first;
    *r = cr->r;
}

struct qv_decoder *qv__column_reader_decoder(struct qv_column_reader *cr, int role) {
    return cr->nd[0].dec[role];
}

int qv__column_reader_where(struct qv_column_reader *cr, int role, int rc, struct qv_error *err) {
    return where(cr, cr->first, role, rc, err);
}

int qv__column_reader_verify_all(struct qv_column_reader *cr, struct qv_error *err) {
    int orc = ensure_open(cr, READ_WHOLE, err);
    if (orc) return orc;
    for (int32_t k = cr->first; k < cr->end; k++)
        for (int role = 0; role < 3; role++) {
            struct qv_decoder *d = cr->nd[k - cr->first].dec[role];
            int rc = d ? qv__decoder_verify_all(d, err) : 0;
            if (rc) return rc;
        }
    return 0;
}

uint64_t qv__column_reader_loaded_bytes(const struct qv_column_reader *cr) {
    if (!cr) return 0;
    /* A relative column reads its reference's segments too. */
    uint64_t ref = cr->ref && cr->ref->rg == cr->rg ? qv__column_reader_loaded_bytes(cr->ref) : 0;
    return (uint64_t)cr->bytes_size + ref;
}

/* A node subset must be closed upwards (a kept node's parent is kept), the
 * column itself kept, and a kept list's element kept: otherwise the arrays
 * would have holes the decoders cannot fill. */
static int check_keep(const struct qv_reader *rd, int32_t first, int32_t end, const uint8_t *keep,
                      struct qv_error *err) {
    const char *why = NULL;
    int32_t bad = first;
    if (!keep[0]) why = "the column itself is not kept";
    for (int32_t k = first + 1; !why && k < end; k++) {
        const struct qv__node *nd = &rd->f.nodes[k];
        if (keep[k - first] && !keep[nd->parent - first]) {
            why = "a kept field's parent is not kept";
            bad = k;
        }
    }
    for (int32_t k = first; !why && k < end; k++) {
        const struct qv__node *nd = &rd->f.nodes[k];
        if (keep[k - first] && (nd->kind == QV__NODE_LIST || nd->kind == QV__NODE_FIXED_LIST) &&
            !keep[nd->first_child - first]) {
            why = "a kept list's element is not kept";
            bad = k;
        }
    }
    if (!why) return 0;
    char path[512];
    qv__node_path(rd->f.nodes, bad, path, sizeof path);
    return qv_error_set(err, EINVAL, "file '%s': column reader of '%s': %s", rd->src.name, path, why);
}

int qv_column_reader_open(const struct qv_reader *rd, int64_t rg, int32_t column,
                          struct qv_reservation *r, struct qv_column_reader **out,
                          struct qv_error *err) {
    return qv_column_reader_open_nodes(rd, rg, column, NULL, r, out, err);
}

int qv_column_reader_open_nodes(const struct qv_reader *rd, int64_t rg, int32_t column,
                                const uint8_t *keep, struct qv_reservation *r,
                                struct qv_column_reader **out, struct qv_error *err) {
    return open_reader(rd, rg, column, keep, r, 0, out, err);
}

/* is_ref: opened as the reference of a relative column (set before its
 * decoders open, which a format 1 or mapped file does at once). */
static int open_reader(const struct qv_reader *rd, int64_t rg, int32_t column, const uint8_t *keep,
                       struct qv_reservation *r, int is_ref, struct qv_column_reader **out,
                       struct qv_error *err) {
    *out = NULL;
    int32_t first = qv_reader_column_node(rd, column);
    if (first < 0 || rg < 0 || rg >= rd->f.n_row_groups)
        return qv_error_set(err, EINVAL, "file '%s': column %d / row group %lld out of range",
                            rd->src.name, column, (long long)rg);
    struct qv_column_reader *cr = qv_calloc(r, sizeof *cr, err);
    if (!cr) return ENOMEM;
    cr->rd = rd;
    cr->r = r;
    cr->rg = rg;
    cr->first = first;
    cr->end = rd->f.nodes[first].subtree_end;
    cr->is_ref = is_ref;
    int32_t n = cr->end - first;
    cr->nd = qv_calloc(r, (size_t)n * sizeof *cr->nd, err);
    int rc = cr->nd ? 0 : ENOMEM;
    if (!rc && keep) {
        rc = check_keep(rd, first, cr->end, keep, err);
        if (!rc) {
            cr->keep = qv_alloc(r, (size_t)n, err);
            if (cr->keep) memcpy(cr->keep, keep, (size_t)n);
            else rc = ENOMEM;
        }
        if (!rc)
            rc = qv_field_prune(rd->f.nodes[first].field, keep, r, &cr->pruned, &cr->pruned_size, err);
    }
    if (!rc) rc = load(cr, rg, err);
    if (rc) {
        qv_column_reader_close(cr);
        return rc;
    }
    *out = cr;
    return 0;
}

int qv_column_reader_move(struct qv_column_reader **crp, int64_t rg, struct qv_error *err) {
    struct qv_column_reader *cr = crp ? *crp : NULL;
    if (!cr) return qv_error_set(err, EINVAL, "qv_column_reader_move: no column reader");
    if (rg < 0 || rg >= cr->rd->f.n_row_groups) {
        int rc = qv_error_set(err, EINVAL, "file '%s': row group %lld out of range (%lld)",
                              cr->rd->src.name, (long long)rg, (long long)cr->rd->f.n_row_groups);
        qv_column_reader_close(cr);
        *crp = NULL;
        return rc;
    }
    drop_decoders(cr);
    int rc = load(cr, rg, err);
    if (rc) {
        qv_column_reader_close(cr);
        *crp = NULL;
    }
    return rc;
}

/* The first child of node k: lists and fixed lists have exactly one. */
static int32_t child_node(const struct qv_column_reader *cr, int32_t k) {
    return cr->rd->f.nodes[k].first_child;
}

/* A decoder's take: the checked list (the take's own rows, as a flat
 * column and a struct's children get them) needs no second pass; rows
 * made from the file's offsets (a list's child rows) get every check. */
static int dec_take(const struct qv_column_reader *cr, struct qv_decoder *d, const int64_t *rows,
                    int64_t n, struct qv_decode_out *o, struct qv_error *err) {
    return rows == cr->checked_rows ? qv__decoder_take_sorted(d, rows, n, o, err)
                                    : qv_decoder_take(d, rows, n, o, err);
}

/* Validity for n slots: from the decoder by range or by rows. */
static int fill_validity(struct qv_column_reader *cr, int32_t k, struct ArrowArray *out,
                         int64_t start, const int64_t *rows, int64_t n, struct qv_error *err) {
    struct qv_decoder *d = cr->nd[k - cr->first].dec[QV_SEGMENT_VALIDITY];
    out->null_count = 0;
    if (!d || n == 0) return 0;
    uint8_t *bits = qv_owned_array_alloc_buffer(out, 0, (size_t)qv_bytes_for_bits(n), err);
    if (!bits) return err ? err->code : ENOMEM;
    struct qv_decode_out o = {.values = bits};
    int rc = rows ? dec_take(cr, d, rows, n, &o, err) : qv_decoder_decode_range(d, start, n, &o, err);
    if (rc) return where(cr, k, QV_SEGMENT_VALIDITY, rc, err);
    out->null_count = n - qv_bits_count(bits, 0, n);
    QV_DCHECK(out->null_count >= 0 && out->null_count <= n);
    return 0;
}

/* decimal(<=18) values (int64 in the file) into 128-bit slots. A take's
 * rows are taken in pieces into a buffer on the stack, each widened at
 * once into its slots, so the slots are written once, first to last, and
 * the int64s never leave the L1 cache: taking all n into the slots' first
 * half, then widening in place from the last, read them back from L2 or
 * memory (14% of a filter on two decimal columns; 7% faster in pieces). A
 * range is decoded whole and widened in place: decoders' setup per call
 * made lineitem's four decimal columns read in pieces 10% slower. */
#define DECIMAL_PIECE 2048
static int decode_decimals(struct qv_column_reader *cr, struct qv_decoder *d, int64_t start,
                           const int64_t *rows, int64_t n, void *slots, struct qv_error *err) {
    if (!rows) {
        struct qv_decode_out o = {.values = slots};
        int rc = qv_decoder_decode_range(d, start, n, &o, err);
        if (!rc) qv__decimal_widen64(slots, n);
        return rc;
    }
    int64_t piece[DECIMAL_PIECE];
    const bool checked = rows == cr->checked_rows;
    for (int64_t i = 0; i < n; i += DECIMAL_PIECE) {
        const int64_t m = n - i < DECIMAL_PIECE ? n - i : DECIMAL_PIECE;
        struct qv_decode_out o = {.values = piece};
        int rc = checked ? qv__decoder_take_sorted(d, rows + i, m, &o, err)
                         : qv_decoder_take(d, rows + i, m, &o, err);
        if (rc) return rc;
        qv__decimal_widen64_to(piece, m, (uint8_t *)slots + (size_t)i * 16);
    }
    return 0;
}

/* Values of a primitive / decimal node. */
static int fill_values(struct qv_column_reader *cr, int32_t k, struct ArrowArray *out,
                       int64_t start, const int64_t *rows, int64_t n, struct qv_error *err) {
    const struct qv__node *node = &cr->rd->f.nodes[k];
    struct qv_decoder *d = cr->nd[k - cr->first].dec[QV_SEGMENT_VALUES];
    enum qv_value_kind kind = node->value_kind;
    struct qv_decode_out o = {0};
    int rc;
    if (kind == QV_KIND_BINARY || kind == QV_KIND_LARGE_BINARY) {
        int w = kind == QV_KIND_BINARY ? 4 : 8;
        o.values = qv_owned_array_alloc_buffer(out, 1, (size_t)(n + 1) * (size_t)w, err);
        if (!o.values) return err ? err->code : ENOMEM;
        rc = rows ? dec_take(cr, d, rows, n, &o, err) : qv_decoder_decode_range(d, start, n, &o, err);
        if (rc) {
            if (o.data) qv_free(cr->r, o.data, o.data_capacity);
            return where(cr, k, QV_SEGMENT_VALUES, rc, err);
        }
        /* The decoder wrote n + 1 offsets within the bytes it produced. */
        QV_DCHECK(o.data_size <= o.data_capacity);
        if (o.data) {
            /* The decoder grew the bytes under the column reader's
             * reservation; the batch's tree owns them from now on. */
            rc = qv_reservation_transfer(cr->r, cr->tree_r, qv_align_up(o.data_capacity), err);
            if (rc) {
                qv_free(cr->r, o.data, o.data_capacity);
                return rc;
            }
            return qv_owned_array_set_buffer(out, 2, o.data, o.data_capacity, err);
        }
        return qv_owned_array_set_buffer(out, 2, (void *)qv_arrow_zero_buffer(), 0, err);
    }
    if (kind == QV_KIND_BOOL) {
        o.values = qv_owned_array_alloc_buffer(out, 1, (size_t)qv_bytes_for_bits(n), err);
    } else if (node->kind == QV__NODE_DECIMAL64) {
        o.values = qv_owned_array_alloc_buffer(out, 1, (size_t)n * 16, err);
    } else {
        o.values = qv_owned_array_alloc_buffer(out, 1, (size_t)n * (size_t)qv__kind_width(kind, node->fixed_width), err);
    }
    if (!o.values) return err ? err->code : ENOMEM;
    if (n == 0) return 0;
    if (node->kind == QV__NODE_DECIMAL64) rc = decode_decimals(cr, d, start, rows, n, o.values, err);
    else rc = rows ? dec_take(cr, d, rows, n, &o, err) : qv_decoder_decode_range(d, start, n, &o, err);
    if (rc) return where(cr, k, QV_SEGMENT_VALUES, rc, err);
    return 0;
}

static int64_t get_off(const void *o, int w, int64_t i) {
    return w == 4 ? ((const int32_t *)o)[i] : ((const int64_t *)o)[i];
}
static void set_off(void *o, int w, int64_t i, int64_t v) {
    if (w == 4) ((int32_t *)o)[i] = (int32_t)v;
    else ((int64_t *)o)[i] = v;
}

static int read_node(struct qv_column_reader *cr, int32_t k, int64_t start, const int64_t *rows,
                     int64_t n, struct ArrowArray *out, struct qv_error *err);

/* A list take's (start, end) offset pairs of n rows, per offset width: the
 * child elements they cover (-1 when a pair is corrupt), and the child's
 * rows with the output's offsets. One function per width, the sums in
 * registers: written through get_off inside the reader, the total lived on
 * the stack and its chain of stores was 13% of a filtered scan of nested
 * lists (nested's Q6). A row's child rows are written eight at a time,
 * whatever its length (crow has QV__CROW_SLACK entries of room beyond the
 * total): lists are short and of random length, and a loop that stopped
 * at each list's end mispredicted its exit on most rows (11% of nested's
 * Q6, two thirds of it in this loop). */
#define QV__CROW_SLACK 8
typedef int64_t qv__v2i64 __attribute__((vector_size(16), aligned(8)));
#define QV__LIST_PAIRS(W, T)                                                                   \
    static int64_t pairs_total##W(const void *pairs, int64_t n, int64_t child_len) {           \
        const T *p = pairs;                                                                    \
        int64_t total = 0;                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                      \
            const int64_t a = p[2 * i], b = p[2 * i + 1];                                      \
            if (a < 0 || b < a || b > child_len) return -1;                                    \
            total += b - a;                                                                    \
        }                                                                                      \
        return total;                                                                          \
    }                                                                                          \
    static void pairs_rows##W(const void *pairs, int64_t n, void *offs, int64_t *crow) {       \
        const T *p = pairs;                                                                    \
        T *o = offs;                                                                           \
        int64_t pos = 0;                                                                       \
        const qv__v2i64 two = {2, 2};                                                          \
        o[0] = 0;                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                      \
            const int64_t a = p[2 * i], len = p[2 * i + 1] - a;                                \
            qv__v2i64 v = {a, a + 1};                                                          \
            qv__v2i64 *dst = (qv__v2i64 *)(crow + pos);                                        \
            dst[0] = v;                                                                        \
            dst[1] = v + two;                                                                  \
            dst[2] = v + two + two;                                                            \
            dst[3] = v + two + two + two;                                                      \
            for (int64_t j = QV__CROW_SLACK; j < len; j++) crow[pos + j] = a + j;              \
            pos += len;                                                                        \
            o[i + 1] = (T)pos;                                                                 \
        }                                                                                      \
    }
QV__LIST_PAIRS(32, int32_t)
QV__LIST_PAIRS(64, int64_t)
#undef QV__LIST_PAIRS

/* Lists and maps: offsets by range, or for rows: the offsets at r and r + 1
 * of every row, then the child's rows are the union of those ranges. */
static int read_list(struct qv_column_reader *cr, int32_t k, int64_t start, const int64_t *rows,
                     int64_t n, struct ArrowArray *out, struct qv_error *err) {
    const struct qv__node *node = &cr->rd->f.nodes[k];
    struct qv_decoder *d = cr->nd[k - cr->first].dec[QV_SEGMENT_OFFSETS];
    int w = node->value_kind == QV_KIND_INT32 ? 4 : 8;
    int32_t child = child_node(cr, k);
    int64_t child_len = qv__reader_chunk(cr->rd, cr->rg, child)->length;
    void *offs = qv_owned_array_alloc_buffer(out, 1, (size_t)(n + 1) * (size_t)w, err);
    if (!offs) return err ? err->code : ENOMEM;
    int rc;
    if (!rows) {
        struct qv_decode_out o = {.values = offs};
        rc = qv_decoder_decode_range(d, start, n + 1, &o, err);
        if (rc) return where(cr, k, QV_SEGMENT_OFFSETS, rc, err);
        int64_t base = get_off(offs, w, 0);
        if (base < 0 || get_off(offs, w, n) > child_len)
            return corrupt(cr, k, QV_SEGMENT_OFFSETS, err, "list offsets point outside the child");
        for (int64_t i = 0; i < n; i++)
            if (get_off(offs, w, i + 1) < get_off(offs, w, i))
                return corrupt(cr, k, QV_SEGMENT_OFFSETS, err, "list offsets decrease");
        for (int64_t i = 0; i <= n; i++) set_off(offs, w, i, get_off(offs, w, i) - base);
        return read_node(cr, child, base, NULL, get_off(offs, w, n), out->children[0], err);
    }
    /* Take: 2n offsets (each row's start and end). */
    size_t idx_size = (size_t)(2 * n + 1) * 8, pair_size = (size_t)(2 * n + 1) * 8;
    int64_t *idx = qv_alloc(cr->r, idx_size, err);
    void *pairs = idx ? qv_alloc(cr->r, pair_size, err) : NULL;
    int64_t *crow = NULL;
    size_t crow_size = 0;
    rc = pairs ? 0 : ENOMEM;
    if (!rc) {
        for (int64_t i = 0; i < n; i++) {
            idx[2 * i] = rows[i];
            idx[2 * i + 1] = rows[i] + 1;
        }
        struct qv_decode_out o = {.values = pairs};
        rc = n ? dec_take(cr, d, idx, 2 * n, &o, err) : 0;
        if (rc) where(cr, k, QV_SEGMENT_OFFSETS, rc, err);
    }
    int64_t total = 0;
    if (!rc && (total = w == 4 ? pairs_total32(pairs, n, child_len)
                               : pairs_total64(pairs, n, child_len)) < 0)
        rc = corrupt(cr, k, QV_SEGMENT_OFFSETS, err, "list offsets are corrupt");
    if (!rc) {
        crow_size = (size_t)(total + QV__CROW_SLACK) * 8;
        crow = qv_alloc(cr->r, crow_size, err);
        if (!crow) rc = ENOMEM;
    }
    if (!rc) {
        if (w == 4) pairs_rows32(pairs, n, offs, crow);
        else pairs_rows64(pairs, n, offs, crow);
        rc = read_node(cr, child, 0, crow, total, out->children[0], err);
    }
    if (crow) qv_free(cr->r, crow, crow_size);
    if (pairs) qv_free(cr->r, pairs, pair_size);
    if (idx) qv_free(cr->r, idx, idx_size);
    return rc;
}

static int read_node(struct qv_column_reader *cr, int32_t k, int64_t start, const int64_t *rows,
                     int64_t n, struct ArrowArray *out, struct qv_error *err) {
    const struct qv__node *node = &cr->rd->f.nodes[k];
    out->length = n;
    out->offset = 0;
    if (node->kind == QV__NODE_NULL) {
        out->null_count = n;
        return 0;
    }
    int rc = fill_validity(cr, k, out, start, rows, n, err);
    if (rc) return rc;
    switch (node->kind) {
    case QV__NODE_PRIMITIVE:
    case QV__NODE_DECIMAL64:
        return fill_values(cr, k, out, start, rows, n, err);
    case QV__NODE_STRUCT:
        for (int32_t c = 0, o = 0, child = node->first_child; c < node->n_children;
             c++, child = cr->rd->f.nodes[child].subtree_end) {
            if (!kept(cr, child)) continue;
            rc = read_node(cr, child, start, rows, n, out->children[o++], err);
            if (rc) return rc;
        }
        return 0;
    case QV__NODE_FIXED_LIST: {
        int64_t size = node->field->list_size;
        if (!rows) return read_node(cr, child_node(cr, k), start * size, NULL, n * size,
                                    out->children[0], err);
        size_t sz = (size_t)((n * size) != 0 ? n * size : 1) * 8;
        int64_t *crow = qv_alloc(cr->r, sz, err);
        if (!crow) return ENOMEM;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < size; j++) crow[i * size + j] = rows[i] * size + j;
        rc = read_node(cr, child_node(cr, k), 0, crow, n * size, out->children[0], err);
        qv_free(cr->r, crow, sz);
        return rc;
    }
    case QV__NODE_LIST:
        return read_list(cr, k, start, rows, n, out, err);
    default:
        return 0;
    }
}

static int64_t rg_rows(const struct qv_column_reader *cr) {
    return cr->rd->f.row_groups[cr->rg].rows;
}

int qv_column_reader_read_into(struct qv_column_reader *cr, int64_t start, int64_t n,
                               struct ArrowArray *node, struct qv_reservation *tree_r,
                               struct qv_error *err) {
    cr->tree_r = tree_r;
    if (start < 0 || n < 0 || start > rg_rows(cr) || n > rg_rows(cr) - start)
        return qv_error_set(err, EINVAL, "file '%s': rows %lld+%lld outside row group %lld (%lld rows)",
                            cr->rd->src.name, (long long)start, (long long)n, (long long)cr->rg,
                            (long long)rg_rows(cr));
    int rc = ensure_open(cr, n > 0 ? READ_WHOLE : READ_BLOCKS, err);
    if (rc) return rc;
    return read_node(cr, cr->first, start, NULL, n, node, err);
}

/* A take's rows: inside the row group and strictly increasing. */
static int check_take_rows(const struct qv_column_reader *cr, const int64_t *rows, int64_t n,
                           struct qv_error *err) {
    const int64_t i = qv__rows_first_bad(rows, n, rg_rows(cr), true);
    if (i < 0) return 0;
    return qv_error_set(err, EINVAL,
                        "file '%s': take: row %lld at position %lld is out of range of row "
                        "group %lld (%lld rows) or not strictly increasing",
                        cr->rd->src.name, (long long)rows[i], (long long)i, (long long)cr->rg,
                        (long long)rg_rows(cr));
}

int qv_column_reader_take_into(struct qv_column_reader *cr, const int64_t *rows, int64_t n,
                               struct ArrowArray *node, struct qv_reservation *tree_r,
                               struct qv_error *err) {
    cr->tree_r = tree_r;
    int rc = check_take_rows(cr, rows, n, err);
    if (rc) return rc;
    cr->take_rows = n;
    rc = ensure_open(cr, take_mode(cr, n), err);
    cr->take_rows = 0;
    if (rc) return rc;
    cr->checked_rows = rows;
    rc = read_node(cr, cr->first, 0, rows, n, node, err);
    cr->checked_rows = NULL;
    return rc;
}

/* How a take of n rows reads a chunk loaded lazily (format 2, pread). By
 * blocks, it reads the blocks of the tree's headers (one read or two) and
 * then about one block per row and tree level the rows' values sit in, a
 * read each: lineitem SF1, 100 random rows (2-3 per row group), made 2,787
 * reads of 4-8 KiB. One read of the whole chunk costs a system call and the
 * bytes copied (and the pages they fault in); a read of a 4 KiB block costs
 * about what 8 KiB more of a whole read does (an estimate from perf shares
 * of pread from the page cache: the call against the copy and the faults,
 * lineitem and flights; not a tuned figure). So a
 * chunk not read yet of at most 8 KiB per row taken, plus 8 KiB for its
 * headers, is read whole, with one read: flights, whose 100 rows fall ~33
 * to a row group, made 921 reads for 4.2 MB and makes 58 for 5.5 MB (its
 * cold take ~10% cheaper; lineitem's, few rows a chunk, unchanged). The
 * blocks are still verified one by one as the decoders use them, so a
 * damaged block no row needs is not an error, as before. A reader of a
 * chunk already read in part (from the take cache) goes on by blocks. */
static int take_mode(const struct qv_column_reader *cr, int64_t n) {
    const uint64_t per_row = 8192;
    if (!cr->lazy || cr->all_present || cr->fetched) return READ_BLOCKS;
    uint64_t budget = n < 0 || (uint64_t)n >= UINT64_MAX / per_row - 1 ? UINT64_MAX
                                                                         : ((uint64_t)n + 1) * per_row;
    return (uint64_t)cr->bytes_size <= budget ? READ_OWN : READ_BLOCKS;
}

int qv__column_reader_lend(const struct qv_column_reader *cr, int64_t rg, int32_t node, int role,
                           uint64_t off, uint64_t len, uint8_t *dst) {
    if (!cr->lazy || cr->rg != rg || node < cr->first || node >= cr->end || role < 0 || role > 2 ||
        !len)
        return 0;
    const struct seg_check *sc = &cr->nd[node - cr->first].check[role];
    const struct qv__segment *s = cr->nd[node - cr->first].seg[role];
    if (!s || sc->seg != s || off > s->length || len > s->length - off) return 0;
    /* Read whole, or these blocks read (and verified) on demand. The
     * borrower verifies what it gets either way. */
    const unsigned shift = cr->rd->f.block_shift;
    for (uint64_t b = off >> shift, last = (off + len - 1) >> shift; !cr->all_present && b <= last;
         b++) {
        uint64_t i = sc->local_first + b;
        if (!(cr->vbits[i / 64] & (UINT64_C(1) << (i % 64)))) return 0;
    }
    memcpy(dst, sc->bytes + off, (size_t)len);
    return 1;
}

bool qv__column_is_flat(const struct qv_reader *rd, int32_t column) {
    int32_t k = qv_reader_column_node(rd, column);
    if (k < 0) return false;
    const struct qv__node *nd = &rd->f.nodes[k];
    return nd->subtree_end == k + 1 &&
           (nd->kind == QV__NODE_PRIMITIVE || nd->kind == QV__NODE_DECIMAL64);
}

/* Binary values of one row group: the decoder writes offsets from 0 into
 * the output's offsets at o->pos and its bytes into a buffer of the column
 * reader's; they are appended to o->data and the offsets moved by what it
 * held before. */
static int take_flat_binary(struct qv_column_reader *cr, struct qv_decoder *d, int w,
                            const int64_t *rows, int64_t n, struct qv__flat_out *o,
                            struct qv_error *err) {
    uint8_t *offs = (uint8_t *)o->values + (size_t)o->pos * (size_t)w;
    /* The decoder writes offset 0 over the previous row group's end: kept. */
    int64_t base = (int64_t)o->data_size;
    struct qv_decode_out t = {.values = offs};
    int rc = dec_take(cr, d, rows, n, &t, err);
    if (rc) {
        if (t.data) qv_free(cr->r, t.data, t.data_capacity);
        return where(cr, cr->first, QV_SEGMENT_VALUES, rc, err);
    }
    if (t.data_size) {
        if (w == 4 && t.data_size > (size_t)INT32_MAX - o->data_size)
            rc = qv_error_set(err, EOVERFLOW, "file '%s': take: %zu bytes of values exceed int32 "
                              "offsets", cr->rd->src.name, o->data_size + t.data_size);
        if (!rc && o->data_size + t.data_size > o->data_cap) {
            size_t cap = o->data_cap ? o->data_cap : 256;
            while (cap < o->data_size + t.data_size) cap *= 2;
            uint8_t *p = qv_realloc(o->data_r, o->data, o->data_cap, cap, err);
            if (p) {
                o->data = p;
                o->data_cap = cap;
            } else {
                rc = ENOMEM;
            }
        }
        if (!rc) memcpy(o->data + o->data_size, t.data, t.data_size);
    }
    if (t.data) qv_free(cr->r, t.data, t.data_capacity);
    if (rc) return rc;
    o->data_size += t.data_size;
    for (int64_t i = 0; i <= n; i++) set_off(offs, w, i, get_off(offs, w, i) + base);
    return 0;
}

/* qv__column_reader_take_flat once the rows are checked and the decoders
 * open. */
static int take_flat_rows(struct qv_column_reader *cr, const struct qv__node *node,
                          const int64_t *rows, int64_t n, struct qv__flat_out *o,
                          struct qv_error *err) {
    int rc;
    /* A failure leaves o as it was (the caller may try the same rows
     * again): the nulls counted before the values failed are taken back. */
    const int64_t nulls_before = o->null_count;
    struct qv_decoder *vd = cr->nd[0].dec[QV_SEGMENT_VALIDITY];
    if (vd && !o->validity)
        return qv_error_set(err, EINVAL, "file '%s': take: no validity bitmap to write",
                            cr->rd->src.name);
    if (o->validity) {
        if (vd) {
            struct qv_decode_out t = {.values = o->validity, .bit_offset = o->pos};
            rc = dec_take(cr, vd, rows, n, &t, err);
            if (rc) return where(cr, cr->first, QV_SEGMENT_VALIDITY, rc, err);
            o->null_count += n - qv_bits_count(o->validity, o->pos, n);
        } else {
            for (int64_t i = 0; i < n; i++) qv_bit_set(o->validity, o->pos + i);
        }
    }
    struct qv_decoder *d = cr->nd[0].dec[QV_SEGMENT_VALUES];
    enum qv_value_kind kind = node->value_kind;
    if (!d) {
        o->null_count = nulls_before;
        return corrupt(cr, cr->first, QV_SEGMENT_VALUES, err, "the values segment is missing");
    }
    if (kind == QV_KIND_BINARY || kind == QV_KIND_LARGE_BINARY) {
        rc = take_flat_binary(cr, d, kind == QV_KIND_BINARY ? 4 : 8, rows, n, o, err);
    } else if (kind == QV_KIND_BOOL) {
        struct qv_decode_out t = {.values = o->values, .bit_offset = o->pos};
        rc = dec_take(cr, d, rows, n, &t, err);
        if (rc) where(cr, cr->first, QV_SEGMENT_VALUES, rc, err);
    } else if (node->kind == QV__NODE_DECIMAL64) {
        rc = decode_decimals(cr, d, 0, rows, n, (uint8_t *)o->values + (size_t)o->pos * 16, err);
        if (rc) where(cr, cr->first, QV_SEGMENT_VALUES, rc, err);
    } else {
        size_t wd = (size_t)qv__kind_width(kind, node->fixed_width);
        struct qv_decode_out t = {.values = (uint8_t *)o->values + (size_t)o->pos * wd};
        rc = dec_take(cr, d, rows, n, &t, err);
        if (rc) where(cr, cr->first, QV_SEGMENT_VALUES, rc, err);
    }
    if (!rc) o->pos += n;
    else o->null_count = nulls_before;
    return rc;
}

int qv__column_reader_take_flat(struct qv_column_reader *cr, const int64_t *rows, int64_t n,
                                struct qv__flat_out *o, struct qv_error *err) {
    const struct qv__node *node = &cr->rd->f.nodes[cr->first];
    if (node->subtree_end != cr->first + 1 || cr->keep ||
        (node->kind != QV__NODE_PRIMITIVE && node->kind != QV__NODE_DECIMAL64))
        return qv_error_set(err, EINVAL, "file '%s': take: column %d is not flat",
                            cr->rd->src.name, (int)node->column);
    int rc = check_take_rows(cr, rows, n, err);
    if (rc) return rc;
    if (n == 0) return 0;
    cr->take_rows = n;
    rc = ensure_open(cr, take_mode(cr, n), err);
    cr->take_rows = 0;
    if (rc) return rc;
    cr->checked_rows = rows;
    rc = take_flat_rows(cr, node, rows, n, o, err);
    cr->checked_rows = NULL;
    return rc;
}

const struct qv_field *qv_column_reader_field(const struct qv_column_reader *cr) {
    return cr->pruned ? cr->pruned : cr->rd->f.nodes[cr->first].field;
}

static int with_new_array(struct qv_column_reader *cr, int64_t start, const int64_t *rows,
                          int64_t n, struct ArrowArray *out, struct qv_error *err) {
    int rc = qv_owned_array_create(out, qv_column_reader_field(cr), cr->r, err);
    if (rc) return rc;
    rc = rows ? qv_column_reader_take_into(cr, rows, n, out, cr->r, err)
              : qv_column_reader_read_into(cr, start, n, out, cr->r, err);
    if (rc) out->release(out);
    return rc;
}

int qv_column_reader_read(struct qv_column_reader *cr, int64_t start, int64_t n,
                          struct ArrowArray *out, struct qv_error *err) {
    return with_new_array(cr, start, NULL, n, out, err);
}

int qv_column_reader_take(struct qv_column_reader *cr, const int64_t *rows, int64_t n,
                          struct ArrowArray *out, struct qv_error *err) {
    static const int64_t none = 0;
    return with_new_array(cr, 0, rows ? rows : &none, n, out, err);
}
