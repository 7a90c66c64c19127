/* The .qvr reader: open with at most two reads (the file's last
 * qv__first_read(size) bytes, then the footer only when it did not fit in them),
 * validate the footer, and answer questions about row groups, chunks and
 * segments. Decoding lives in column_reader.c. */
#include <stdio.h>
#include <string.h>

#include "base/corrupt.h"
#include "format/reader_internal.h"

int qv_reader_open(const char *path, const struct qv_reader_options *opts,
                   struct qv_reservation *r, struct qv_reader **out, struct qv_error *err) {
    struct qv_source src;
    *out = NULL;
    int rc = opts && opts->mmap ? qv_source_open_file_mapped(path, &src, err)
                                : qv_source_open_file(path, &src, err);
    if (rc) return rc;
    return qv_reader_open_source(&src, opts, r, out, err);
}

int qv_reader_open_source(struct qv_source *src, const struct qv_reader_options *opts,
                          struct qv_reservation *r, struct qv_reader **out,
                          struct qv_error *err) {
    *out = NULL;
    struct qv_reader *rd = qv_calloc(r, sizeof *rd, err);
    if (!rd) {
        qv_source_close(src);
        return ENOMEM;
    }
    rd->r = r;
    rd->src = *src;
    memset(src, 0, sizeof *src);
    if (opts) rd->opts = *opts;
    const char *name = rd->src.name;
    uint64_t size = rd->src.size;
    uint8_t *tailbuf = NULL;
    size_t first = 0;
    int rc = 0;
    if (size < QV__HEADER_SIZE + QV__TAIL_SIZE) {
        rc = qv__corrupt_set(err, "file '%s': %llu bytes is too small to be a Quiver file", name,
                          (unsigned long long)size);
        goto fail;
    }
    /* Read 1: the end of the file, which usually holds the whole footer. */
    first = (size_t)qv__first_read(size);
    tailbuf = qv_alloc(r, first, err);
    if (!tailbuf) {
        rc = ENOMEM;
        goto fail;
    }
    rc = qv_source_read(&rd->src, size - first, tailbuf, first, err);
    if (rc) goto fail;
    rd->open_reads = 1;
    const uint8_t *tail = tailbuf + first - QV__TAIL_SIZE;
    if (memcmp(tail + 28, QV__MAGIC, 4) != 0) {
        rc = qv__corrupt_set(err, "file '%s': not a Quiver file (no magic at the end, offset %llu)",
                          name, (unsigned long long)(size - 4));
        goto fail;
    }
    unsigned major = (unsigned)tail[24] | (unsigned)tail[25] << 8;
    unsigned minor = (unsigned)tail[26] | (unsigned)tail[27] << 8;
    if (major < QV__FORMAT_MAJOR_MIN || major > QV__FORMAT_MAJOR) {
        /* A later major version is a valid file this reader cannot read;
         * major 0 never existed, so those bytes are damaged. */
        int later = major > QV__FORMAT_MAJOR;
        rc = qv_error_set_kind(err, later ? ENOSYS : EIO,
                               later ? QV_ERROR_NOT_SUPPORTED : QV_ERROR_CORRUPT,
                               "file '%s': format version %u.%u; this reader (quiver %s) reads "
                               "versions %d.x to %d.x only",
                               name, major, minor, QV_VERSION_STRING, QV__FORMAT_MAJOR_MIN,
                               QV__FORMAT_MAJOR);
        goto fail;
    }
    uint64_t foff = qv__get_u64le(tail), flen = qv__get_u64le(tail + 8);
    uint64_t fsum = qv__get_u64le(tail + 16);
    if (foff < QV__HEADER_SIZE || flen > QV__MAX_FOOTER_BYTES || foff > size - QV__TAIL_SIZE ||
        flen != size - QV__TAIL_SIZE - foff) {
        rc = qv__corrupt_set(err, "file '%s': footer location %llu+%llu is corrupt (file size %llu)",
                          name, (unsigned long long)foff, (unsigned long long)flen,
                          (unsigned long long)size);
        goto fail;
    }
    const uint8_t *footer;
    uint8_t *big = NULL;
    if (flen + QV__TAIL_SIZE <= first) {
        footer = tailbuf + first - QV__TAIL_SIZE - flen;
    } else {
        /* Read 2: a footer larger than the first read. */
        big = qv_alloc(r, (size_t)flen, err);
        if (!big) {
            rc = ENOMEM;
            goto fail;
        }
        rc = qv_source_read(&rd->src, foff, big, (size_t)flen, err);
        if (rc) {
            qv_free(r, big, (size_t)flen);
            goto fail;
        }
        rd->open_reads = 2;
        footer = big;
    }
    if (qv_hash64(footer, (size_t)flen, 0) != fsum) {
        rc = qv__corrupt_set(err, "file '%s': footer checksum mismatch (footer at offset %llu, "
                             "%llu bytes)", name, (unsigned long long)foff, (unsigned long long)flen);
    } else {
        /* The leading magic is checked when read 1 covered it (the file is
         * no larger than QV__FIRST_READ); a larger file is identified by its
         * tail and the footer's checksum, and opening it does not spend a
         * third read on 4 bytes (docs/format.md, "Opening in at most two
         * reads"). */
        if (first == size && memcmp(tailbuf, QV__MAGIC, 4) != 0)
            rc = qv__corrupt_set(err, "file '%s': not a Quiver file (no magic at offset 0)", name);
        if (!rc) rc = qv__footer_parse(footer, (size_t)flen, foff, r, &rd->f, err);
        /* Format 2 verifies by block: a file of that version without its
         * block checksums is damaged (a format 1 file has none and is
         * verified by whole segments). */
        if (!rc && major >= 2 && !rd->f.block_shift) {
            qv__footer_free(&rd->f);
            rc = qv__corrupt_set(err, "footer: format %u.%u file without block checksums (section 5)",
                                 major, minor);
        }
        if (rc && rc != ENOMEM) qv_error_wrap(err, EIO, "file '%s': ", name);
    }
    if (big) qv_free(r, big, (size_t)flen);
    if (rc) goto fail;
    rd->footer_checksum = fsum;
    rd->major = major;
    /* In place: one bit per segment (format 1) or per block (format 2). */
    rd->verified_words = ((size_t)(rd->f.block_shift ? rd->f.n_blocks : (uint64_t)rd->f.n_segments) + 63) / 64 + 1;
    rd->verified = qv_calloc(r, rd->verified_words * sizeof(uint64_t), err);
    if (!rd->verified) {
        qv__footer_free(&rd->f);
        rc = ENOMEM;
        goto fail;
    }
    qv_free(r, tailbuf, first);
    *out = rd;
    return 0;
fail:
    if (tailbuf) qv_free(r, tailbuf, first);
    qv_source_close(&rd->src);
    qv_free(r, rd, sizeof *rd);
    return rc;
}

void qv_reader_close(struct qv_reader *rd) {
    if (!rd) return;
    if (rd->verified) qv_free(rd->r, rd->verified, rd->verified_words * sizeof(uint64_t));
    qv__footer_free(&rd->f);
    qv_source_close(&rd->src);
    qv_free(rd->r, rd, sizeof *rd);
}

const struct qv_schema *qv_reader_schema(const struct qv_reader *rd) { return rd->f.schema; }
int64_t qv_reader_num_rows(const struct qv_reader *rd) { return rd->f.num_rows; }
int64_t qv_reader_num_row_groups(const struct qv_reader *rd) { return rd->f.n_row_groups; }
int64_t qv_reader_row_group_rows(const struct qv_reader *rd, int64_t rg) {
    return rg >= 0 && rg < rd->f.n_row_groups ? rd->f.row_groups[rg].rows : 0;
}
int64_t qv_reader_row_group_first_row(const struct qv_reader *rd, int64_t rg) {
    return rg >= 0 && rg < rd->f.n_row_groups ? rd->f.row_groups[rg].first_row : 0;
}
uint64_t qv_reader_row_group_bytes(const struct qv_reader *rd, int64_t rg) {
    return rg >= 0 && rg < rd->f.n_row_groups ? rd->f.row_groups[rg].length : 0;
}
uint64_t qv_reader_file_size(const struct qv_reader *rd) { return rd->src.size; }
uint64_t qv_reader_footer_checksum(const struct qv_reader *rd) { return rd->footer_checksum; }
const char *qv_reader_writer_version(const struct qv_reader *rd) {
    return rd->f.writer ? rd->f.writer : "";
}
const char *qv_reader_path(const struct qv_reader *rd) { return rd->src.name; }
const struct qv_kv *qv_reader_metadata(const struct qv_reader *rd, int64_t *n) {
    *n = rd->f.n_metadata;
    return rd->f.metadata;
}
int qv_reader_open_reads(const struct qv_reader *rd) { return rd->open_reads; }
int32_t qv_reader_num_nodes(const struct qv_reader *rd) { return rd->f.n_nodes; }
const struct qv_field *qv_reader_node_field(const struct qv_reader *rd, int32_t node) {
    return node >= 0 && node < rd->f.n_nodes ? rd->f.nodes[node].field : NULL;
}
int32_t qv_reader_node_parent(const struct qv_reader *rd, int32_t node) {
    return node >= 0 && node < rd->f.n_nodes ? rd->f.nodes[node].parent : -1;
}
int32_t qv_reader_column_node(const struct qv_reader *rd, int32_t column) {
    if (column < 0 || column >= rd->f.n_columns) return -1;
    return rd->f.column_node[column];
}
void qv_reader_node_path(const struct qv_reader *rd, int32_t node, char *buf, size_t cap) {
    if (node < 0 || node >= rd->f.n_nodes) {
        if (cap) buf[0] = 0;
        return;
    }
    qv__node_path(rd->f.nodes, node, buf, cap);
}

const struct qv__chunk *qv__reader_chunk(const struct qv_reader *rd, int64_t rg, int32_t node) {
    return &rd->f.chunks[(uint64_t)rg * (uint64_t)rd->f.n_nodes + (uint64_t)node];
}

static int check_chunk_args(const struct qv_reader *rd, int64_t rg, int32_t node,
                            struct qv_error *err) {
    if (rg < 0 || rg >= rd->f.n_row_groups)
        return qv_error_set(err, EINVAL, "file '%s': row group %lld out of range (%lld)",
                            rd->src.name, (long long)rg, (long long)rd->f.n_row_groups);
    if (node < 0 || node >= rd->f.n_nodes)
        return qv_error_set(err, EINVAL, "file '%s': column node %d out of range (%d)",
                            rd->src.name, node, rd->f.n_nodes);
    return 0;
}

int qv_reader_chunk_info(const struct qv_reader *rd, int64_t rg, int32_t node,
                         struct qv_chunk_info *out, struct qv_error *err) {
    int rc = check_chunk_args(rd, rg, node, err);
    if (rc) return rc;
    const struct qv__chunk *ch = qv__reader_chunk(rd, rg, node);
    memset(out, 0, sizeof *out);
    out->length = ch->length;
    out->null_count = ch->null_count;
    out->raw_bytes = ch->raw_bytes;
    out->n_segments = (int)ch->n_segments;
    for (uint32_t i = 0; i < ch->n_segments; i++)
        out->encoded_bytes += rd->f.segments[ch->first_segment + i].length;
    const struct qv__stats *st = &ch->stats;
    out->has_min_max = (st->flags & QV__STAT_MINMAX) != 0;
    out->min_truncated = (st->flags & QV__STAT_MIN_TRUNCATED) != 0;
    out->max_truncated = (st->flags & QV__STAT_MAX_TRUNCATED) != 0;
    out->has_nan_count = (st->flags & QV__STAT_NAN_COUNT) != 0;
    out->nan_count = st->nan_count;
    out->min = st->min;
    out->max = st->max;
    out->min_len = st->min_len;
    out->max_len = st->max_len;
    return 0;
}

int qv_reader_segment_info(const struct qv_reader *rd, int64_t rg, int32_t node, int i,
                           struct qv_segment_info *out, struct qv_error *err) {
    int rc = check_chunk_args(rd, rg, node, err);
    if (rc) return rc;
    const struct qv__chunk *ch = qv__reader_chunk(rd, rg, node);
    if (i < 0 || (uint32_t)i >= ch->n_segments)
        return qv_error_set(err, EINVAL, "segment %d out of range (%u)", i, ch->n_segments);
    const struct qv__segment *s = &rd->f.segments[ch->first_segment + (uint32_t)i];
    out->role = (enum qv_segment_role)s->role;
    out->kind = (enum qv_value_kind)s->kind;
    out->count = s->count;
    out->offset = s->offset;
    out->length = s->length;
    out->checksum = s->checksum;
    return 0;
}

int qv__reader_verify(const struct qv_reader *rd, int64_t rg, int32_t node,
                      const struct qv__segment *s, const uint8_t *bytes, struct qv_error *err) {
    if (rd->opts.skip_checksums) return 0;
    /* In place (mapped file, memory), the bytes are the same ones every
     * time, so a segment is hashed once per reader. Read with pread, they
     * are a fresh copy that another process may have changed since the last
     * verification: those are hashed every time, so what is decoded is what
     * was verified. */
    int in_place = rd->src.base != NULL;
    size_t idx = (size_t)(s - rd->f.segments);
    uint64_t bit = UINT64_C(1) << (idx % 64);
    if (in_place && (__atomic_load_n(&rd->verified[idx / 64], __ATOMIC_ACQUIRE) & bit)) return 0;
    if (qv_hash64(bytes, (size_t)s->length, 0) == s->checksum) {
        if (in_place) __atomic_fetch_or(&rd->verified[idx / 64], bit, __ATOMIC_RELEASE);
        return 0;
    }
    char path[512];
    qv__node_path(rd->f.nodes, node, path, sizeof path);
    return qv__corrupt_set(err,
                        "file '%s': checksum mismatch in column '%s', row group %lld, %s segment "
                        "at offset %llu (%llu bytes)",
                        rd->src.name, path, (long long)rg, qv__role_name(s->role),
                        (unsigned long long)s->offset, (unsigned long long)s->length);
}

int qv_reader_segment_describe(const struct qv_reader *rd, int64_t rg, int32_t node, int i,
                               struct qv_reservation *r, char *buf, size_t cap,
                               qv_enc_visit_fn fn, void *ctx, struct qv_error *err) {
    struct qv_segment_info si;
    int rc = qv_reader_segment_info(rd, rg, node, i, &si, err);
    if (rc) return rc;
    const struct qv__chunk *ch = qv__reader_chunk(rd, rg, node);
    const struct qv__segment *s = &rd->f.segments[ch->first_segment + (uint32_t)i];
    size_t len = (size_t)s->length;
    uint8_t *bytes = qv_alloc(r, len ? len : 1, err);
    if (!bytes) return ENOMEM;
    rc = qv_source_read(&rd->src, s->offset, bytes, len, err);
    if (!rc) rc = qv__reader_verify(rd, rg, node, s, bytes, err);
    if (!rc && buf) rc = qv_enc_describe(bytes, len, r, buf, cap, err);
    if (rc == EOVERFLOW) rc = 0; /* a long description is truncated, not an error */
    if (!rc && fn) rc = qv_enc_walk(bytes, len, r, fn, ctx, err);
    qv_free(r, bytes, len ? len : 1);
    return rc;
}

/* A STRUCT template whose children are the projected top-level fields. */
int qv__projection_field(const struct qv_reader *rd, const int32_t *columns, int32_t n,
                         struct qv_reservation *r, struct qv_field *root,
                         struct qv_field **children, struct qv_error *err) {
    const struct qv_field *all = &rd->f.schema->root;
    int32_t count = columns ? n : (int32_t)all->n_children;
    *root = *all;
    *children = NULL;
    if (count == 0) {
        root->n_children = 0;
        root->children = NULL;
        return 0;
    }
    struct qv_field *kids = qv_alloc(r, (size_t)count * sizeof *kids, err);
    if (!kids) return ENOMEM;
    for (int32_t i = 0; i < count; i++) {
        int32_t c = columns ? columns[i] : i;
        if (c < 0 || c >= all->n_children) {
            qv_free(r, kids, (size_t)count * sizeof *kids);
            return qv_error_set(err, EINVAL, "file '%s': column %d out of range (%lld columns)",
                                rd->src.name, c, (long long)all->n_children);
        }
        kids[i] = all->children[c];
    }
    root->children = kids;
    root->n_children = count;
    *children = kids;
    return 0;
}

int qv_reader_export_schema(const struct qv_reader *rd, const int32_t *columns, int32_t n_columns,
                            struct qv_reservation *r, struct ArrowSchema *out,
                            struct qv_error *err) {
    struct qv_field root, *kids;
    out->release = NULL;
    int rc = qv__projection_field(rd, columns, n_columns, r, &root, &kids, err);
    if (rc) return rc;
    rc = qv_field_export(&root, r, out, err);
    if (kids) qv_free(r, kids, (size_t)root.n_children * sizeof *kids);
    return rc;
}

int qv_reader_read_row_group(const struct qv_reader *rd, int64_t rg, const int32_t *columns,
                             int32_t n_columns, struct qv_reservation *r, struct ArrowArray *out,
                             struct qv_error *err) {
    out->release = NULL;
    if (rg < 0 || rg >= rd->f.n_row_groups)
        return qv_error_set(err, EINVAL, "file '%s': row group %lld out of range (%lld)",
                            rd->src.name, (long long)rg, (long long)rd->f.n_row_groups);
    struct qv_field root, *kids;
    int rc = qv__projection_field(rd, columns, n_columns, r, &root, &kids, err);
    if (rc) return rc;
    rc = qv_owned_array_create(out, &root, r, err);
    int64_t rows = rd->f.row_groups[rg].rows;
    for (int64_t i = 0; !rc && i < root.n_children; i++) {
        int32_t c = columns ? columns[i] : (int32_t)i;
        struct qv_column_reader *cr;
        rc = qv_column_reader_open(rd, rg, c, r, &cr, err);
        if (rc) break;
        rc = qv_column_reader_read_into(cr, 0, rows, out->children[i], r, err);
        qv_column_reader_close(cr);
    }
    if (!rc) {
        out->length = rows;
        out->null_count = 0;
    } else if (out->release) {
        out->release(out);
    }
    if (kids) qv_free(r, kids, (size_t)root.n_children * sizeof *kids);
    return rc;
}
