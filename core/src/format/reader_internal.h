/* The reader's private state, shared by reader.c and column_reader.c. */
#ifndef QV_READER_INTERNAL_H
#define QV_READER_INTERNAL_H

#include "format/format_internal.h"

struct qv_reader {
    struct qv_reservation *r;
    struct qv_source src;
    struct qv_reader_options opts;
    struct qv__footer f;
    int open_reads; /* reads the open made: 1, or 2 when the footer did not fit the first */
    uint64_t footer_checksum; /* from the tail: the file's identity with its size */
    unsigned major;           /* format version of the file */
    /* One bit per segment (format 1) or per block (format 2), set once its
     * checksum matched, used only when
     * decoding in place (src.base: a mapping or memory): a segment is then
     * hashed once, not on every read (warm takes would otherwise hash whole
     * chunks for a few rows). Bytes read with pread are hashed every time.
     * Updated with atomic OR; readers share it across threads. */
    uint64_t *verified;
    size_t verified_words;
    /* Optional (set by the file layer to its take cache, qv__take_cache_lend):
     * copies bytes [off, off + len) of the segment of `role` of node `node`
     * in row group rg into dst when another column reader of this file holds
     * them read (and verified) already, and returns 1; else 0. A column
     * reader reading blocks on demand asks it before it reads, and verifies
     * what it got as if it had read it: the reference column of a relative
     * one is read once for both. */
    int (*lend)(void *ctx, int64_t rg, int32_t node, int role, uint64_t off, uint64_t len,
                uint8_t *dst);
    void *lend_ctx;
};

const struct qv__chunk *qv__reader_chunk(const struct qv_reader *rd, int64_t rg, int32_t node);
/* Encoded bytes of the segments a column reader loaded for its current row
 * group (the kept fields' segments; 0 after a failed load). The scan counts
 * them as the bytes it read. */
uint64_t qv__column_reader_loaded_bytes(const struct qv_column_reader *cr);
/* Copies bytes [off, off + len) of the segment of `role` of node `node` into
 * dst and returns 1 when the column reader holds every block they span in
 * row group rg read by blocks (and verified, unless checksums are skipped);
 * else 0. For a take cache lending bytes (qv_reader.lend); the caller makes
 * sure nobody else uses cr meanwhile. */
int qv__column_reader_lend(const struct qv_column_reader *cr, int64_t rg, int32_t node, int role,
                           uint64_t off, uint64_t len, uint8_t *dst);
/* EIO of kind QV_ERROR_CORRUPT naming column, row group and offset when the
 * checksum does not match. */
/* Verifies every block of the segments the column reader loaded (format 2;
 * a no-op for format 1 files, verified whole at load). Code that reads a
 * loaded segment's bytes other than through its decoder's dispatch
 * (encoded-domain filters) calls it first. */
int qv__column_reader_verify_all(struct qv_column_reader *cr, struct qv_error *err);
/* Whether reads of `src` are the library's own (a file it opened, a mapping,
 * memory) rather than a caller's read_at, which may block for as long as
 * it likes (a network file). */
int qv__source_is_ours(const struct qv_source *src);
int qv__reader_verify(const struct qv_reader *rd, int64_t rg, int32_t node,
                      const struct qv__segment *s, const uint8_t *bytes, struct qv_error *err);
int qv__projection_field(const struct qv_reader *rd, const int32_t *columns, int32_t n,
                         struct qv_reservation *r, struct qv_field *root,
                         struct qv_field **children, struct qv_error *err);

/* For column_filter.c (column_reader.c owns the column reader): where it
 * reads (reader, row group, the column's top node, its reservation), the decoder of one of
 * the top node's segments (NULL when the chunk has none), and an error
 * prefixed with file, column, row group and segment as its other calls do. */
void qv__column_reader_top(const struct qv_column_reader *cr, const struct qv_reader **rd,
                           int64_t *rg, int32_t *node, struct qv_reservation **r);
struct qv_decoder *qv__column_reader_decoder(struct qv_column_reader *cr, int role);
int qv__column_reader_where(struct qv_column_reader *cr, int role, int rc, struct qv_error *err);

/* Where a take of a flat column (a top-level column without children:
 * primitive, decimal64 or binary) writes across row groups: one output
 * array's buffers, filled from position `pos` on, row group after row
 * group (qv__column_reader_take_flat). `validity`: bits set for every
 * row group without a validity segment; NULL only where no chunk has one. Binary values are copied into `data`, grown from
 * `data_r` (the output's reservation: the decoders' own buffers belong to
 * the column readers, which the take cache keeps). */
struct qv__flat_out {
    uint8_t *validity;
    void *values;  /* fixed: pos * width bytes in (decimal64: 16); bool: bits; binary: offsets */
    int64_t pos;   /* next output slot; advanced by each call */
    int64_t null_count;
    uint8_t *data; /* binary: bytes of the values so far */
    size_t data_size, data_cap;
    struct qv_reservation *data_r;
};
/* True when column `column` of rd is flat in the sense above. */
bool qv__column_is_flat(const struct qv_reader *rd, int32_t column);
/* Appends the values at rows[0..n) (strictly increasing, in the reader's
 * row group) of a flat column to `o`, each value decoded straight into its
 * output slot (no array per row group). Errors name file, column, row group
 * and segment as the reader's other calls do. */
int qv__column_reader_take_flat(struct qv_column_reader *cr, const int64_t *rows, int64_t n,
                                struct qv__flat_out *o, struct qv_error *err);

/* pred on rows [start, start + n) of the row group, for a column reader
 * opened on a top-level column without children whose values the encodings
 * can compare (integers of every width, dates, timestamps, decimals <= 18
 * digits in their stored int64 domain, binary kinds; not bool, floats
 * (unless op == EVAL), wide decimals, fixed binary): bit i of out = the row
 * is non-null and satisfies pred, for rows selected in sel (NULL = all);
 * unselected rows 0. ENOTSUP when it cannot (the caller decodes); errors
 * name file, column, row group, segment as the column reader's other calls
 * do. Defined in column_filter.c. */
int qv__column_reader_filter(struct qv_column_reader *cr, int64_t start, int64_t n,
                             const struct qv_enc_pred *pred, const uint64_t *sel, uint64_t *out,
                             struct qv_error *err);

#endif
