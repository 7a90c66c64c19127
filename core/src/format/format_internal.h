/* Private layout of .qvr files shared by the writer, the footer codec and
 * the reader. docs/format.md is the specification; this is its C mirror.
 * Its names are internal, so they carry the internal prefix (QV__ for
 * constants, qv__ for types and functions; docs/conventions.md). */
#ifndef QV_FORMAT_INTERNAL_H
#define QV_FORMAT_INTERNAL_H

#include "base/limits.h"
#include "base/varint.h"
#include "quiver/arrow.h"
#include "quiver/encoding.h"
#include "quiver/format.h"

#define QV__MAGIC "QVR1"
#define QV__HEADER_SIZE 8          /* magic + u16 major + u16 minor */
#define QV__TAIL_SIZE 32           /* u64 footer offset, u64 length, u64 xxh3, u16 major, u16 minor, magic */
/* The version this writer writes. 2.0 added per-block checksums (section
 * 5) and byte-capped zstd/lz4 frames, 3.0 encodings 15-17, 4.0 for nodes
 * over narrower residuals (the entropy stage's sequential frames), 5.0
 * encoding 18 (ans frames), 6.0 ans blocks of 32 states (kind 2), 7.0
 * encoding 19 (bucket), 8.0 encoding 20 (seqpack), 9.0 encoding 21
 * (radix); a reader reads majors 1 to 9 (docs/format.md, "Compatibility"). */
#define QV__FORMAT_MAJOR 9
#define QV__FORMAT_MINOR 0
#define QV__FORMAT_MAJOR_MIN 1 /* oldest major this reader reads */
/* Blocks of per-block checksums (section 5): 2^QV__BLOCK_SHIFT bytes of a
 * segment each, the last one shorter. The reader takes any shift in
 * [QV__BLOCK_SHIFT_MIN, QV__BLOCK_SHIFT_MAX] from the file. 4 KiB by
 * measurement: a take of 100 random rows of lineitem SF1 (16 columns, 46
 * row groups) from Python read 41 MB in 1,256 blocks of 32 KiB (44 ms) and
 * 10.6 MB in 4 KiB blocks (26 ms); the checksums add 0.2% to the file
 * (8 bytes per 4 KiB) and put lineitem's footer at 330 KB (two reads to
 * open, section 1). */
#define QV__BLOCK_SHIFT 12
#define QV__BLOCK_SHIFT_MIN 10
#define QV__BLOCK_SHIFT_MAX 26
#define QV__FIRST_READ (64u * 1024) /* bytes read from the end on open, at least */
/* Bytes the open reads from the end of a file of `size` bytes: 64 KiB plus
 * 1/512 of the file, the share of format 2's block checksums (8 bytes per
 * 4 KiB block), so that a large file's footer, which holds them, is read
 * with the tail in one read (docs/format.md, section 1). */
static inline uint64_t qv__first_read(uint64_t size) {
    uint64_t want = QV__FIRST_READ + size / 512;
    return size < want ? size : want;
}

/* The format's limits: one definition each, enforced by the writer at
 * qv_writer_open (schema, names, metadata) or before it writes the footer
 * (footer size), and by the reader, which refuses a file beyond them as
 * corrupt. So every file the writer publishes opens. docs/format.md,
 * "Limits of the format", lists them. They bound what a hostile footer can
 * make a reader allocate; none is reachable with ordinary data. */
#define QV__MAX_FOOTER_BYTES (UINT64_C(256) << 20) /* footer bytes */
#define QV__MAX_NODES 1000000 /* schema fields, root excluded */
/* Nesting: QV__MAX_NESTING (base/limits.h), shared with the Arrow layer. */
#define QV__MAX_NAME 65536 /* bytes of a field name */
#define QV__MAX_STAT_BYTES 64      /* string statistics are truncated to this */

/* Footer sections: tag, byte length, payload. Readers skip unknown tags. */
enum qv__section {
    QV__SEC_WRITER = 1,
    QV__SEC_SCHEMA = 2,
    QV__SEC_METADATA = 3,
    QV__SEC_ROW_GROUPS = 4,
    QV__SEC_BLOCK_CHECKSUMS = 5, /* format 2.0 on */
};

/* Segment roles inside a column chunk are format.h's enum qv_segment_role
 * (QV_SEGMENT_VALIDITY, _OFFSETS, _VALUES): their values are the role ids
 * of the file. */

/* Physical kind of a schema node: what segments its chunks carry. */
enum qv__node_kind {
    QV__NODE_NULL,      /* nothing but a length */
    QV__NODE_PRIMITIVE, /* values: fixed width, bool, binary */
    QV__NODE_DECIMAL64, /* decimal128 with precision <= 18, stored as int64 */
    QV__NODE_STRUCT,    /* validity only */
    QV__NODE_LIST,      /* validity + offsets (n + 1) */
    QV__NODE_FIXED_LIST /* validity only; child has n * list_size slots */
};

#define QV__STAT_MINMAX 1u
#define QV__STAT_MIN_TRUNCATED 2u
#define QV__STAT_MAX_TRUNCATED 4u
#define QV__STAT_NAN_COUNT 8u

struct qv__segment {
    uint64_t offset, length, checksum;
    uint64_t first_block; /* reader, format 2: index of its first block checksum */
    int64_t count;
    uint8_t role, kind;
    int32_t fixed_width;
};

/* Min and max are little-endian int64 / uint64 / float64 (8 bytes) for
 * numbers, dates and decimals up to precision 18, one byte for booleans, 16
 * bytes for wider decimals, and at most QV__MAX_STAT_BYTES raw bytes for
 * strings and binary (truncated: flagged). In the reader they point into the
 * footer copy; in the writer into a qv__stats_buf. */
struct qv__stats {
    uint32_t flags;
    int64_t nan_count;
    uint32_t min_len, max_len;
    const uint8_t *min, *max;
};

struct qv__stats_buf {
    struct qv__stats s;
    uint8_t minb[QV__MAX_STAT_BYTES], maxb[QV__MAX_STAT_BYTES];
};

struct qv__chunk {
    int64_t length;     /* slots at this node in this row group */
    int64_t null_count;
    uint64_t raw_bytes; /* Arrow bytes of this node's own buffers before encoding */
    uint32_t first_segment, n_segments;
    struct qv__stats stats;
};

struct qv__row_group {
    int64_t rows, first_row;
    uint64_t offset, length; /* byte span of the row group's segments */
};

/* One schema node in pre-order (the root struct excluded). */
struct qv__node {
    const struct qv_field *field;
    enum qv__node_kind kind;
    enum qv_value_kind value_kind; /* PRIMITIVE/DECIMAL64 values; LIST offsets */
    int32_t fixed_width;
    int32_t parent;  /* node index, -1 for top-level columns */
    int32_t column;  /* top-level column this node belongs to */
    int32_t depth;
    int32_t first_child, n_children; /* children are nodes first_child.. in pre-order subtrees */
    int32_t subtree_end;             /* one past the last node of this subtree */
};

/* Resolves the physical nodes of a schema (pre-order, root excluded). EINVAL
 * (or ENOSYS) for types the format cannot store. *out is allocated from r. */
int qv__nodes_build(const struct qv_schema *schema, struct qv_reservation *r,
                    struct qv__node **out, int32_t *n_out, struct qv_error *err);
/* Name of a segment role ("validity", "offsets", "values") for messages. */
const char *qv__role_name(int role);
/* Bytes per value of a fixed-width kind (FIXED_BINARY: fixed_width). */
int qv__kind_width(enum qv_value_kind kind, int32_t fixed_width);
/* Dotted path of node i ("a.b.item") for messages. */
void qv__node_path(const struct qv__node *nodes, int32_t i, char *buf, size_t cap);

/* ---- growable byte buffer charged to a reservation ---- */
struct qv__wbuf {
    struct qv_reservation *r;
    uint8_t *data;
    size_t size, cap;
    int failed; /* sticky: an allocation failed; err holds why */
    struct qv_error err;
};
void qv__wbuf_init(struct qv__wbuf *b, struct qv_reservation *r);
void qv__wbuf_free(struct qv__wbuf *b);
void qv__wbuf_put(struct qv__wbuf *b, const void *p, size_t n);
void qv__wbuf_u8(struct qv__wbuf *b, uint8_t v);
void qv__wbuf_u64le(struct qv__wbuf *b, uint64_t v);
void qv__wbuf_varint(struct qv__wbuf *b, uint64_t v);
void qv__wbuf_svarint(struct qv__wbuf *b, int64_t v);
void qv__wbuf_bytes(struct qv__wbuf *b, const void *p, size_t n); /* varint length + bytes */
void qv__wbuf_str(struct qv__wbuf *b, const char *s);

/* ---- bounded reader over footer bytes: every read is checked ---- */
struct qv__cursor {
    const uint8_t *p, *end;
    int bad;
};
uint8_t qv__cur_u8(struct qv__cursor *c);
uint64_t qv__cur_u64le(struct qv__cursor *c);
uint64_t qv__cur_varint(struct qv__cursor *c);
int64_t qv__cur_svarint(struct qv__cursor *c);
/* Returns a pointer to `n` bytes (varint length first) or NULL when bad. */
const uint8_t *qv__cur_bytes(struct qv__cursor *c, uint64_t *n);

static inline void qv__put_u64le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t qv__get_u64le(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ---- the parsed footer ----
 * The writer does not build one: it serializes each row group's directory
 * as soon as the row group is written (qv__dir_* below) behind the head it
 * serialized at open, and completes the footer in place on finish. */
struct qv__footer {
    struct qv_reservation *r;
    char *writer;
    struct qv_schema *schema;
    struct qv__node *nodes;
    int32_t n_nodes, n_columns;
    int32_t *column_node;        /* first node of each top-level column */
    int64_t n_metadata;
    struct qv_kv *metadata;      /* strings point into `arena` */
    int64_t num_rows;
    int64_t n_row_groups;
    struct qv__row_group *row_groups;
    struct qv__chunk *chunks;    /* n_row_groups * n_nodes, row-group major */
    struct qv__segment *segments;
    int64_t n_segments;
    size_t segments_cap;
    uint8_t *arena;              /* copy of the footer bytes metadata points into */
    size_t arena_size;
    /* Section 5 (format 2): block_shift 0 when the file has none (format
     * 1 files: whole-segment checksums only). block_sums points into the
     * arena: n_blocks little-endian u64, segment by segment. */
    unsigned block_shift;
    const uint8_t *block_sums;
    uint64_t n_blocks;
};

/* Blocks of a segment of `length` bytes at 2^shift bytes per block. */
static inline uint64_t qv__blocks_of(uint64_t length, unsigned shift) {
    return (length + (UINT64_C(1) << shift) - 1) >> shift;
}

/* Writer side: one row group's directory record, then per node a chunk
 * record with its segments and statistics. */
void qv__dir_row_group(struct qv__wbuf *dir, int64_t rows, uint64_t offset, uint64_t length);
void qv__dir_chunk(struct qv__wbuf *dir, int64_t length, int64_t null_count, uint64_t raw_bytes,
                   const struct qv__segment *segs, uint32_t n_segs, const struct qv__stats *st);
/* The footer is the "head" (writer, schema and metadata sections), known
 * when the writer opens, then the row-group section: a header of at most
 * QV__RG_HEADER_MAX bytes (tag, body length, row-group count, node count)
 * and the directory accumulated in qv__dir_* records. */
/* Writer side: the block checksums of one segment's bytes (section 5),
 * appended to `out` as little-endian u64. */
void qv__dir_block_sums(struct qv__wbuf *out, const uint8_t *bytes, uint64_t length);
/* Section 5 with the given checksums bytes, appended to `out`; its size. */
void qv__footer_block_section(struct qv__wbuf *out, const uint8_t *sums, size_t sums_bytes);
uint64_t qv__footer_block_section_size(size_t sums_bytes);
void qv__footer_head(struct qv__wbuf *out, const struct qv_schema *schema, int32_t n_nodes,
                     const struct qv_kv *metadata, int64_t n_metadata);
#define QV__RG_HEADER_MAX 40
size_t qv__footer_rg_header(uint8_t *out, int64_t n_row_groups, int32_t n_nodes,
                            uint64_t dir_bytes);
/* Exact footer bytes for a head, a row-group count and a directory size. */
uint64_t qv__footer_size(uint64_t head_bytes, int64_t n_row_groups, int32_t n_nodes,
                         uint64_t dir_bytes);
/* Parses and validates footer bytes against a file of `file_size` bytes whose
 * segments must lie in [QV__HEADER_SIZE, data_end). On success `f` owns
 * everything it holds (qv__footer_free). EIO naming the problem otherwise. */
int qv__footer_parse(const uint8_t *bytes, size_t size, uint64_t data_end,
                     struct qv_reservation *r, struct qv__footer *f, struct qv_error *err);
void qv__footer_free(struct qv__footer *f);

/* Statistics of a chunk from dense values + validity (NULL = all valid).
 * Decimal64 nodes pass their values as INT64. */
void qv__stats_compute(const struct qv__node *node, const struct qv_values *values,
                       const uint8_t *validity, struct qv__stats_buf *out);
/* The same statistics for a chunk without nulls of a byte-ordered binary
 * kind whose smallest and largest values are rows min_row and max_row (as
 * the encoder's dictionary found them: qv_encode_options.extremes).
 * Returns 0, leaving *out alone, for other kinds (the caller then runs
 * qv__stats_compute). Debug builds check the result against it. */
int qv__stats_from_extremes(const struct qv__node *node, const struct qv_values *values,
                            int64_t min_row, int64_t max_row, struct qv__stats_buf *out);

/* When `root` is the array of qv_reader_export_statistics (not yet
 * released), makes fn(arg) run once its last node is released (children a
 * consumer moved out included), after its reservation is destroyed, and
 * returns true; the previous callback goes to *prev_fn / *prev_arg so that
 * callers can chain. False for any other array (stats_export.c). */
bool qv__stats_array_on_free(struct ArrowArray *root, void (*fn)(void *), void *arg,
                             void (**prev_fn)(void *), void **prev_arg);

#endif
