/* The footer: serialization on the writer side, and parsing with complete
 * validation on the reader side. Every count, offset and length read from a
 * file is checked before it is used or allocated for. */
#include <stdio.h>
#include <string.h>

#include "base/corrupt.h"
#include "format/format_internal.h"

/* ---- writing ---- */

void qv__dir_row_group(struct qv__wbuf *dir, int64_t rows, uint64_t offset, uint64_t length) {
    qv__wbuf_varint(dir, (uint64_t)rows);
    qv__wbuf_varint(dir, offset);
    qv__wbuf_varint(dir, length);
}

void qv__dir_chunk(struct qv__wbuf *dir, int64_t length, int64_t null_count, uint64_t raw_bytes,
                   const struct qv__segment *segs, uint32_t n_segs, const struct qv__stats *st) {
    qv__wbuf_varint(dir, (uint64_t)length);
    qv__wbuf_varint(dir, (uint64_t)null_count);
    qv__wbuf_varint(dir, raw_bytes);
    qv__wbuf_varint(dir, n_segs);
    for (uint32_t i = 0; i < n_segs; i++) {
        const struct qv__segment *s = &segs[i];
        qv__wbuf_u8(dir, s->role);
        qv__wbuf_u8(dir, s->kind);
        qv__wbuf_varint(dir, (uint64_t)s->fixed_width);
        qv__wbuf_varint(dir, (uint64_t)s->count);
        qv__wbuf_varint(dir, s->offset);
        qv__wbuf_varint(dir, s->length);
        qv__wbuf_u64le(dir, s->checksum);
    }
    uint32_t flags = st ? st->flags : 0;
    qv__wbuf_varint(dir, flags);
    if (flags & QV__STAT_MINMAX) {
        qv__wbuf_bytes(dir, st->min, st->min_len);
        qv__wbuf_bytes(dir, st->max, st->max_len);
    }
    if (flags & QV__STAT_NAN_COUNT) qv__wbuf_varint(dir, (uint64_t)st->nan_count);
}

static void put_kvs(struct qv__wbuf *b, const struct qv_kv *kv, int64_t n) {
    qv__wbuf_varint(b, (uint64_t)n);
    for (int64_t i = 0; i < n; i++) {
        qv__wbuf_bytes(b, kv[i].key, kv[i].key_len >= 0 ? (size_t)kv[i].key_len : strlen(kv[i].key));
        qv__wbuf_bytes(b, kv[i].value,
                       kv[i].value_len >= 0 ? (size_t)kv[i].value_len : strlen(kv[i].value));
    }
}

static void put_field(struct qv__wbuf *b, const struct qv_field *f) {
    /* The format string holds a time zone of any length: measure, then emit
     * in place, so nothing is ever cut. */
    if (b->failed) return;
    size_t flen = qv_arrow_format_emit(f, NULL, 0);
    char small[128], *fmt = small;
    if (flen >= sizeof small) {
        fmt = qv_alloc(b->r, flen + 1, &b->err);
        if (!fmt) {
            b->failed = 1;
            return;
        }
    }
    qv_arrow_format_emit(f, fmt, flen + 1);
    qv__wbuf_str(b, f->name);
    qv__wbuf_bytes(b, fmt, flen);
    if (fmt != small) qv_free(b->r, fmt, flen + 1);
    qv__wbuf_varint(b, (uint64_t)(f->nullable ? 1 : 0) | (uint64_t)(f->keys_sorted ? 2 : 0));
    put_kvs(b, f->metadata, f->n_metadata);
    qv__wbuf_varint(b, (uint64_t)f->n_children);
    for (int64_t i = 0; i < f->n_children; i++) put_field(b, &f->children[i]);
}

static void section(struct qv__wbuf *out, uint64_t tag, const struct qv__wbuf *body) {
    qv__wbuf_varint(out, tag);
    qv__wbuf_bytes(out, body->data, body->size);
    if (body->failed && !out->failed) {
        out->failed = 1;
        out->err = body->err;
    }
}

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void qv__footer_head(struct qv__wbuf *out, const struct qv_schema *schema, int32_t n_nodes,
                     const struct qv_kv *metadata, int64_t n_metadata) {
    struct qv__wbuf b;
    qv__wbuf_init(&b, out->r);
    qv__wbuf_str(&b, "quiver " QV_VERSION_STRING);
    section(out, QV__SEC_WRITER, &b);
    b.size = 0;
    /* Node count including the root first, so a reader can bound its work. */
    qv__wbuf_varint(&b, (uint64_t)n_nodes + 1);
    put_field(&b, &schema->root);
    section(out, QV__SEC_SCHEMA, &b);
    qv__wbuf_free(&b);
    /* File metadata can be large: measure its section and write it straight
     * into `out` rather than through a copy. */
    uint64_t body = varint_size((uint64_t)n_metadata);
    for (int64_t i = 0; i < n_metadata; i++) {
        uint64_t kl = metadata[i].key_len >= 0 ? (uint64_t)metadata[i].key_len
                                               : strlen(metadata[i].key);
        uint64_t vl = metadata[i].value_len >= 0 ? (uint64_t)metadata[i].value_len
                                                 : strlen(metadata[i].value);
        body += varint_size(kl) + kl + varint_size(vl) + vl;
    }
    qv__wbuf_varint(out, QV__SEC_METADATA);
    qv__wbuf_varint(out, body);
    put_kvs(out, metadata, n_metadata);
}

size_t qv__footer_rg_header(uint8_t *out, int64_t n_row_groups, int32_t n_nodes,
                            uint64_t dir_bytes) {
    uint64_t body = varint_size((uint64_t)n_row_groups) + varint_size((uint64_t)n_nodes) + dir_bytes;
    size_t n = qv__varint_put(out, QV__SEC_ROW_GROUPS);
    n += qv__varint_put(out + n, body);
    n += qv__varint_put(out + n, (uint64_t)n_row_groups);
    n += qv__varint_put(out + n, (uint64_t)n_nodes);
    return n;
}

uint64_t qv__footer_size(uint64_t head_bytes, int64_t n_row_groups, int32_t n_nodes,
                         uint64_t dir_bytes) {
    uint8_t hdr[QV__RG_HEADER_MAX];
    return head_bytes + qv__footer_rg_header(hdr, n_row_groups, n_nodes, dir_bytes) + dir_bytes;
}

void qv__dir_block_sums(struct qv__wbuf *out, const uint8_t *bytes, uint64_t length) {
    const uint64_t block = UINT64_C(1) << QV__BLOCK_SHIFT;
    for (uint64_t at = 0; at < length; at += block) {
        uint64_t n = length - at < block ? length - at : block;
        qv__wbuf_u64le(out, qv_hash64(bytes + at, (size_t)n, 0));
    }
}

uint64_t qv__footer_block_section_size(size_t sums_bytes) {
    uint64_t body = 1 + (uint64_t)sums_bytes; /* shift varint + sums */
    return qv__varint_size(QV__SEC_BLOCK_CHECKSUMS) + qv__varint_size(body) + body;
}

void qv__footer_block_section(struct qv__wbuf *out, const uint8_t *sums, size_t sums_bytes) {
    qv__wbuf_varint(out, QV__SEC_BLOCK_CHECKSUMS);
    qv__wbuf_varint(out, 1 + (uint64_t)sums_bytes);
    qv__wbuf_varint(out, QV__BLOCK_SHIFT);
    qv__wbuf_put(out, sums, sums_bytes);
}

/* ---- parsing ---- */

/* Every refusal below reports corruption (base/corrupt.h): EIO of kind
 * QV_ERROR_CORRUPT naming what in the footer is wrong. */

struct parse_ctx {
    struct qv__cursor c;
    char *scratch; /* NUL-terminated copies of names and formats */
    size_t scratch_used, scratch_cap;
    struct qv_error *err;
};

static const char *scratch_str(struct parse_ctx *p, const uint8_t *s, uint64_t n) {
    if (n + 1 > p->scratch_cap - p->scratch_used) return NULL;
    char *d = p->scratch + p->scratch_used;
    memcpy(d, s, n);
    d[n] = 0;
    p->scratch_used += n + 1;
    return d;
}

static int parse_kvs(struct parse_ctx *p, struct qv_kv **out, int64_t *n_out,
                     struct qv_reservation *r, const char *what) {
    struct qv_error *err = p->err;
    uint64_t n = qv__cur_varint(&p->c);
    if (p->c.bad || n > (uint64_t)(p->c.end - p->c.p) / 2)
        return qv__corrupt_set(err, "footer: %s metadata count %llu is corrupt", what, (unsigned long long)n);
    *out = NULL;
    *n_out = 0;
    if (n == 0) return 0;
    struct qv_kv *kv = qv_calloc(r, n * sizeof *kv, err);
    if (!kv) return ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t kl, vl;
        const uint8_t *k = qv__cur_bytes(&p->c, &kl);
        const uint8_t *v = qv__cur_bytes(&p->c, &vl);
        if (!k || !v || kl > INT32_MAX || vl > INT32_MAX) {
            qv_free(r, kv, n * sizeof *kv);
            return qv__corrupt_set(err, "footer: %s metadata entry %llu is corrupt", what, (unsigned long long)i);
        }
        kv[i].key = scratch_str(p, k, kl);
        kv[i].value = scratch_str(p, v, vl);
        kv[i].key_len = (int32_t)kl;
        kv[i].value_len = (int32_t)vl;
        if (!kv[i].key || !kv[i].value) {
            qv_free(r, kv, n * sizeof *kv);
            return qv__corrupt_set(err, "footer: %s metadata is larger than the footer", what);
        }
    }
    *out = kv;
    *n_out = (int64_t)n;
    return 0;
}

struct pending {
    int32_t base;
    int64_t remaining, next;
};

/* The schema section: pre-order nodes, children laid out contiguously in a
 * flat template array, then deep-copied and checked by qv_schema_create. */
static int parse_schema(struct parse_ctx *p, struct qv_reservation *r, struct qv_schema **out) {
    struct qv_error *err = p->err;
    uint64_t total = qv__cur_varint(&p->c);
    if (p->c.bad || total < 1 || total > QV__MAX_NODES + 1 ||
        total > (uint64_t)(p->c.end - p->c.p) / 4)
        return qv__corrupt_set(err, "footer: schema node count %llu is corrupt", (unsigned long long)total);
    size_t fsz = (size_t)total * sizeof(struct qv_field);
    size_t ksz = (size_t)total * sizeof(struct qv_kv *);
    size_t ssz = (QV__MAX_NESTING + 1) * sizeof(struct pending);
    struct qv_field *all = qv_calloc(r, fsz, err);
    struct qv_kv **kvs = all ? qv_calloc(r, ksz, err) : NULL;
    int64_t *nkv = kvs ? qv_calloc(r, (size_t)total * sizeof *nkv, err) : NULL;
    struct pending *stack = nkv ? qv_alloc(r, ssz, err) : NULL;
    int rc = 0;
    if (!stack) {
        rc = ENOMEM;
        goto done;
    }
    int depth = 0;
    uint64_t next_free = 1;
    for (uint64_t i = 0; i < total; i++) {
        int32_t slot;
        if (depth == 0) {
            if (i != 0) {
                rc = qv__corrupt_set(err, "footer: schema has nodes after the root is complete");
                goto done;
            }
            slot = 0;
        } else {
            struct pending *top = &stack[depth - 1];
            slot = (int32_t)(top->base + top->next);
            top->next++;
            top->remaining--;
        }
        uint64_t nl, fl;
        const uint8_t *name = qv__cur_bytes(&p->c, &nl);
        const uint8_t *fmt = qv__cur_bytes(&p->c, &fl);
        uint64_t flags = qv__cur_varint(&p->c);
        if (!name || !fmt) {
            rc = qv__corrupt_set(err, "footer: schema node %llu is corrupt", (unsigned long long)i);
            goto done;
        }
        if (nl > QV__MAX_NAME) {
            rc = qv__corrupt_set(err, "footer: schema node %llu: name of %llu bytes is longer than the format's "
                     "limit of %d bytes", (unsigned long long)i, (unsigned long long)nl,
                     QV__MAX_NAME);
            goto done;
        }
        struct qv_field *f = &all[slot];
        f->name = scratch_str(p, name, nl);
        const char *fmts = scratch_str(p, fmt, fl);
        if (!f->name || !fmts) {
            rc = qv__corrupt_set(err, "footer: schema strings exceed the footer");
            goto done;
        }
        rc = qv_arrow_format_parse(fmts, f, err);
        if (rc) {
            /* The format string is the file's: whatever the parser said
             * (EINVAL, ENOSYS), the file is corrupt. */
            qv_error_wrap(err, EIO, "footer: schema field '%s': ", f->name);
            rc = qv__corrupt_mark(err);
            goto done;
        }
        f->nullable = flags & 1;
        f->keys_sorted = (flags & 2) != 0;
        rc = parse_kvs(p, &kvs[slot], &nkv[slot], r, "field");
        if (rc) goto done;
        f->metadata = kvs[slot];
        f->n_metadata = nkv[slot];
        uint64_t nc = qv__cur_varint(&p->c);
        if (p->c.bad || nc > total - next_free) {
            rc = qv__corrupt_set(err, "footer: schema field '%s' child count %llu is corrupt", f->name,
                     (unsigned long long)nc);
            goto done;
        }
        f->n_children = (int64_t)nc;
        if (nc) {
            /* This node is at level `depth` (the root at 0); its children
             * would be one deeper. */
            if (depth + 1 > QV__MAX_NESTING) {
                rc = qv__corrupt_set(err, "footer: schema field '%.200s' has children at level %d, deeper than "
                         "the format's limit of %d levels", f->name, depth + 1, QV__MAX_NESTING);
                goto done;
            }
            f->children = &all[next_free];
            stack[depth++] = (struct pending){(int32_t)next_free, (int64_t)nc, 0};
            next_free += nc;
        }
        while (depth > 0 && stack[depth - 1].remaining == 0) depth--;
    }
    if (depth != 0 || next_free != total) {
        rc = qv__corrupt_set(err, "footer: schema tree is incomplete");
        goto done;
    }
    rc = qv_schema_create(&all[0], r, out, err);
    if (rc && rc != ENOMEM) {
        qv_error_wrap(err, EIO, "footer: schema: ");
        rc = qv__corrupt_mark(err);
    }
done:
    if (kvs)
        for (uint64_t i = 0; i < total; i++)
            if (kvs[i]) qv_free(r, kvs[i], (size_t)nkv[i] * sizeof(struct qv_kv));
    if (stack) qv_free(r, stack, ssz);
    if (nkv) qv_free(r, nkv, (size_t)total * sizeof *nkv);
    if (kvs) qv_free(r, kvs, ksz);
    if (all) qv_free(r, all, fsz);
    return rc;
}

/* Expected segments of a node's chunk: validity (optional), offsets, values. */
static int check_segment(const struct qv__node *node, const struct qv__chunk *ch,
                         const struct qv__segment *s, struct qv_error *err, const char *path) {
    switch (s->role) {
    case QV_SEGMENT_VALIDITY:
        if (s->kind != QV_KIND_BOOL || s->count != ch->length) break;
        return 0;
    case QV_SEGMENT_OFFSETS:
        if (node->kind != QV__NODE_LIST || s->kind != node->value_kind || s->count != ch->length + 1)
            break;
        return 0;
    case QV_SEGMENT_VALUES:
        if ((node->kind != QV__NODE_PRIMITIVE && node->kind != QV__NODE_DECIMAL64) ||
            s->kind != node->value_kind || s->count != ch->length ||
            (s->kind == QV_KIND_FIXED_BINARY && s->fixed_width != node->fixed_width))
            break;
        return 0;
    }
    return qv__corrupt_set(err, "footer: column '%s': segment (role %u, kind %u, %lld values) does not fit the "
               "column's type and length %lld",
               path, s->role, s->kind, (long long)s->count, (long long)ch->length);
}

static int parse_row_groups(struct parse_ctx *p, struct qv__footer *f, uint64_t data_end) {
    struct qv_error *err = p->err;
    struct qv_reservation *r = f->r;
    uint64_t nrg = qv__cur_varint(&p->c);
    uint64_t nn = qv__cur_varint(&p->c);
    uint64_t left = (uint64_t)(p->c.end - p->c.p);
    if (p->c.bad || nn != (uint64_t)f->n_nodes)
        return qv__corrupt_set(err, "footer: row-group directory has %llu columns, the schema %d",
                   (unsigned long long)nn, f->n_nodes);
    /* Every row group takes >= 3 bytes and every chunk >= 5: bound the
     * allocations by what the footer can actually describe. */
    if (nrg > left / 3 || (nn && nrg > left / (5 * nn)))
        return qv__corrupt_set(err, "footer: row-group count %llu is corrupt", (unsigned long long)nrg);
    f->n_row_groups = (int64_t)nrg;
    uint64_t nchunks = nrg * nn;
    f->row_groups = qv_calloc(r, (nrg ? nrg : 1) * sizeof *f->row_groups, err);
    if (!f->row_groups) return ENOMEM;
    f->chunks = qv_calloc(r, (nchunks ? nchunks : 1) * sizeof *f->chunks, err);
    if (!f->chunks) return ENOMEM;
    size_t seg_cap = 0;
    f->segments_cap = 0;
    int64_t rows_total = 0;
    char path[512];
    for (uint64_t g = 0; g < nrg; g++) {
        struct qv__row_group *rg = &f->row_groups[g];
        rg->rows = (int64_t)qv__cur_varint(&p->c);
        rg->offset = qv__cur_varint(&p->c);
        rg->length = qv__cur_varint(&p->c);
        rg->first_row = rows_total;
        if (p->c.bad || rg->rows < 0 || rg->rows > QV_ENC_MAX_COUNT || rg->offset < QV__HEADER_SIZE ||
            rg->offset > data_end || rg->length > data_end - rg->offset)
            return qv__corrupt_set(err, "footer: row group %llu: rows %lld or byte range %llu+%llu is corrupt "
                       "(data ends at %llu)",
                       (unsigned long long)g, (long long)rg->rows, (unsigned long long)rg->offset,
                       (unsigned long long)rg->length, (unsigned long long)data_end);
        rows_total += rg->rows;
        for (uint64_t k = 0; k < nn; k++) {
            const struct qv__node *node = &f->nodes[k];
            struct qv__chunk *ch = &f->chunks[g * nn + k];
            qv__node_path(f->nodes, (int32_t)k, path, sizeof path);
            ch->length = (int64_t)qv__cur_varint(&p->c);
            ch->null_count = (int64_t)qv__cur_varint(&p->c);
            ch->raw_bytes = qv__cur_varint(&p->c);
            uint64_t ns = qv__cur_varint(&p->c);
            if (p->c.bad || ch->length < 0 || ch->length > QV_ENC_MAX_COUNT || ch->null_count < 0 ||
                ch->null_count > ch->length || ns > 3)
                return qv__corrupt_set(err, "footer: row group %llu, column '%s': chunk header is corrupt",
                           (unsigned long long)g, path);
            /* Lengths the parent determines are checked here; list children
             * are checked against the decoded offsets. */
            int64_t want = -1;
            if (node->parent < 0) want = rg->rows;
            else {
                const struct qv__node *par = &f->nodes[node->parent];
                const struct qv__chunk *pc = &f->chunks[g * nn + (uint64_t)node->parent];
                if (par->kind == QV__NODE_STRUCT) want = pc->length;
                else if (par->kind == QV__NODE_FIXED_LIST) {
                    int64_t size = par->field->list_size;
                    if (size > 0 && pc->length > QV_ENC_MAX_COUNT / size)
                        return qv__corrupt_set(err, "footer: row group %llu, column '%s': length overflows",
                                   (unsigned long long)g, path);
                    want = pc->length * size;
                }
            }
            if (want >= 0 && ch->length != want)
                return qv__corrupt_set(err, "footer: row group %llu, column '%s': %lld slots, expected %lld",
                           (unsigned long long)g, path, (long long)ch->length, (long long)want);
            if ((size_t)f->n_segments + ns > seg_cap) {
                size_t cap = seg_cap ? seg_cap * 2 : 64;
                while (cap < (size_t)f->n_segments + ns) cap *= 2;
                if (cap > (left / 13) + 64) cap = (left / 13) + 64;
                if (cap < (size_t)f->n_segments + ns)
                    return qv__corrupt_set(err, "footer: segment count exceeds the footer");
                struct qv__segment *s2 = qv_realloc(r, f->segments, seg_cap * sizeof *s2,
                                                    cap * sizeof *s2, err);
                if (!s2) return ENOMEM;
                f->segments = s2;
                seg_cap = f->segments_cap = cap;
            }
            ch->first_segment = (uint32_t)f->n_segments;
            ch->n_segments = (uint32_t)ns;
            int seen = 0;
            for (uint64_t i = 0; i < ns; i++) {
                struct qv__segment *s = &f->segments[f->n_segments++];
                s->role = qv__cur_u8(&p->c);
                s->kind = qv__cur_u8(&p->c);
                uint64_t fw = qv__cur_varint(&p->c);
                s->count = (int64_t)qv__cur_varint(&p->c);
                s->offset = qv__cur_varint(&p->c);
                s->length = qv__cur_varint(&p->c);
                s->checksum = qv__cur_u64le(&p->c);
                s->fixed_width = (int32_t)(fw <= QV_ENC_MAX_FIXED_WIDTH ? fw : 0);
                if (p->c.bad || s->role > QV_SEGMENT_VALUES || (seen & (1 << s->role)) ||
                    fw > QV_ENC_MAX_FIXED_WIDTH || s->offset < rg->offset ||
                    s->offset > rg->offset + rg->length ||
                    s->length > rg->offset + rg->length - s->offset)
                    return qv__corrupt_set(err, "footer: row group %llu, column '%s': segment %llu is corrupt "
                               "(offset %llu, length %llu)",
                               (unsigned long long)g, path, (unsigned long long)i,
                               (unsigned long long)s->offset, (unsigned long long)s->length);
                seen |= 1 << s->role;
                int rc = check_segment(node, ch, s, err, path);
                if (rc) return rc;
            }
            /* Validity is present exactly when there are nulls; values and
             * offsets whenever the node kind has them. */
            int need = (ch->null_count ? 1 << QV_SEGMENT_VALIDITY : 0) |
                       (node->kind == QV__NODE_LIST ? 1 << QV_SEGMENT_OFFSETS : 0) |
                       ((node->kind == QV__NODE_PRIMITIVE || node->kind == QV__NODE_DECIMAL64)
                            ? 1 << QV_SEGMENT_VALUES : 0);
            if (seen != need)
                return qv__corrupt_set(err, "footer: row group %llu, column '%s': segments present (%#x) do not "
                           "match the column (%#x)", (unsigned long long)g, path, seen, need);
            struct qv__stats *st = &ch->stats;
            st->flags = (uint32_t)qv__cur_varint(&p->c);
            if (st->flags & QV__STAT_MINMAX) {
                uint64_t a, b;
                st->min = qv__cur_bytes(&p->c, &a);
                st->max = qv__cur_bytes(&p->c, &b);
                if (!st->min || !st->max || a > QV__MAX_STAT_BYTES || b > QV__MAX_STAT_BYTES)
                    return qv__corrupt_set(err, "footer: row group %llu, column '%s': statistics are corrupt",
                               (unsigned long long)g, path);
                st->min_len = (uint32_t)a;
                st->max_len = (uint32_t)b;
            }
            if (st->flags & QV__STAT_NAN_COUNT) st->nan_count = (int64_t)qv__cur_varint(&p->c);
            if (p->c.bad)
                return qv__corrupt_set(err, "footer: row group %llu, column '%s': statistics are truncated",
                           (unsigned long long)g, path);
        }
    }
    f->num_rows = rows_total;
    return 0;
}

/* Section 5: the block size, then exactly one checksum per block of every
 * segment, in segment order. */
static int parse_block_sums(struct qv__footer *f, const uint8_t *body, uint64_t len,
                            struct qv_error *err) {
    struct qv__cursor c = {body, body + len, 0};
    uint64_t shift = qv__cur_varint(&c);
    if (c.bad || shift < QV__BLOCK_SHIFT_MIN || shift > QV__BLOCK_SHIFT_MAX)
        return qv__corrupt_set(err, "footer: block checksums: block size 2^%llu is corrupt",
                               (unsigned long long)shift);
    uint64_t total = 0;
    for (int64_t i = 0; i < f->n_segments; i++) {
        f->segments[i].first_block = total;
        total += qv__blocks_of(f->segments[i].length, (unsigned)shift);
    }
    uint64_t have = (uint64_t)(c.end - c.p);
    if (have % 8 || have / 8 != total)
        return qv__corrupt_set(err, "footer: block checksums: %llu bytes for %llu blocks",
                               (unsigned long long)have, (unsigned long long)total);
    f->block_shift = (unsigned)shift;
    f->block_sums = c.p;
    f->n_blocks = total;
    return 0;
}

int qv__footer_parse(const uint8_t *bytes, size_t size, uint64_t data_end,
                     struct qv_reservation *r, struct qv__footer *f, struct qv_error *err) {
    memset(f, 0, sizeof *f);
    f->r = r;
    /* The footer is kept: statistics and metadata point into this copy. */
    f->arena_size = size * 2 + 64;
    f->arena = qv_alloc(r, f->arena_size, err);
    if (!f->arena) return ENOMEM;
    memcpy(f->arena, bytes, size);
    struct parse_ctx p = {{f->arena, f->arena + size, 0}, (char *)f->arena + size, 0, size + 64, err};
    int rc = 0, have_schema = 0, have_rg = 0;
    const uint8_t *block_body = NULL;
    uint64_t block_len = 0;
    while (p.c.p < p.c.end) {
        uint64_t tag = qv__cur_varint(&p.c);
        uint64_t len;
        const uint8_t *body = qv__cur_bytes(&p.c, &len);
        if (!body) {
            rc = qv__corrupt_set(err, "footer: section list is corrupt");
            break;
        }
        struct qv__cursor saved = p.c;
        p.c = (struct qv__cursor){body, body + len, 0};
        if (tag == QV__SEC_WRITER) {
            uint64_t n;
            const uint8_t *w = qv__cur_bytes(&p.c, &n);
            f->writer = w ? (char *)scratch_str(&p, w, n) : NULL;
        } else if (tag == QV__SEC_SCHEMA && !have_schema) {
            rc = parse_schema(&p, r, &f->schema);
            if (!rc) {
                /* A schema the writer would refuse is a corrupt file. */
                rc = qv__nodes_build(f->schema, r, &f->nodes, &f->n_nodes, err);
                if (rc && rc != ENOMEM) {
                    qv_error_wrap(err, EIO, "footer: schema: ");
                    rc = qv__corrupt_mark(err);
                }
            }
            if (!rc) {
                /* Column -> node in O(1): scans of wide files ask per column. */
                f->n_columns = (int32_t)f->schema->root.n_children;
                f->column_node = qv_alloc(r, (size_t)(f->n_columns ? f->n_columns : 1) *
                                                 sizeof *f->column_node, err);
                if (!f->column_node) rc = ENOMEM;
                for (int32_t c = 0, k = 0; !rc && c < f->n_columns; c++) {
                    f->column_node[c] = k;
                    k = f->nodes[k].subtree_end;
                }
            }
            have_schema = 1;
        } else if (tag == QV__SEC_METADATA) {
            rc = parse_kvs(&p, &f->metadata, &f->n_metadata, r, "file");
        } else if (tag == QV__SEC_ROW_GROUPS && !have_rg) {
            if (!have_schema) rc = qv__corrupt_set(err, "footer: row groups come before the schema");
            else rc = parse_row_groups(&p, f, data_end);
            have_rg = 1;
        } else if (tag == QV__SEC_BLOCK_CHECKSUMS && !block_body) {
            block_body = body;
            block_len = len;
            p.c.p = p.c.end; /* checked below, once the segments are known */
        } /* unknown sections (newer minor versions) are skipped */
        if (rc) break;
        if (p.c.bad) {
            rc = qv__corrupt_set(err, "footer: section %llu is corrupt", (unsigned long long)tag);
            break;
        }
        p.c = saved;
    }
    if (!rc && (!have_schema || !have_rg)) rc = qv__corrupt_set(err, "footer: schema or row groups missing");
    if (!rc && block_body) rc = parse_block_sums(f, block_body, block_len, err);
    if (rc) qv__footer_free(f);
    return rc;
}

void qv__footer_free(struct qv__footer *f) {
    struct qv_reservation *r = f->r;
    if (!r) return;
    uint64_t nchunks = (uint64_t)f->n_row_groups * (uint64_t)f->n_nodes;
    if (f->segments) qv_free(r, f->segments, f->segments_cap * sizeof *f->segments);
    if (f->chunks) qv_free(r, f->chunks, (nchunks ? nchunks : 1) * sizeof *f->chunks);
    if (f->row_groups)
        qv_free(r, f->row_groups,
                (f->n_row_groups ? (size_t)f->n_row_groups : 1) * sizeof *f->row_groups);
    if (f->metadata) qv_free(r, f->metadata, (size_t)f->n_metadata * sizeof *f->metadata);
    if (f->nodes) qv_free(r, f->nodes, (size_t)(f->n_nodes ? f->n_nodes : 1) * sizeof *f->nodes);
    if (f->column_node)
        qv_free(r, f->column_node, (size_t)(f->n_columns ? f->n_columns : 1) * sizeof *f->column_node);
    qv_schema_destroy(f->schema);
    if (f->arena) qv_free(r, f->arena, f->arena_size);
    memset(f, 0, sizeof *f);
}
