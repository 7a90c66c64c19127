/*
 * The encoding tree: building nodes, serializing them, parsing them back
 * with full structural validation, and walking / describing them for
 * `qv inspect`. The byte layout is documented in enc_internal.h.
 */
#include <stdio.h>

#include "base/corrupt.h"
#include "encoding/enc_internal.h"

const char *qv_encoding_name(int encoding) {
    if (encoding == QV_ENC_AUTO) return "auto";
    const struct qv__encoding *c = encoding > 0 ? qv__encoding_of((unsigned)encoding) : NULL;
    return c ? c->name : "?";
}

int qv_encoding_from_name(const char *name) {
    if (!name) return -1;
    if (strcmp(name, "auto") == 0) return QV_ENC_AUTO;
    for (unsigned i = 1; i < qv__encoding_slots(); i++) {
        const struct qv__encoding *c = qv__encoding_of(i);
        if (c && strcmp(name, c->name) == 0) return (int)i;
    }
    return -1;
}

const char *qv_value_kind_name(enum qv_value_kind kind) {
    static const char *const names[] = {
        "?",      "bool",   "int8",    "uint8",   "int16",  "uint16",       "int32",
        "uint32", "int64",  "uint64",  "float32", "float64", "binary", "large_binary",
        "fixed_binary",
    };
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

const char *qv__pt_name(int pt) {
    static const char *const names[] = {"?",   "u8",  "u16",  "u32",    "u64",
                                        "f32", "f64", "bool", "binary", "fixed"};
    return pt >= 0 && pt <= QV__PT_FIXED ? names[pt] : "?";
}

/* Parameter names and child roles, for inspection, from the record. */
static const char *param_name(const struct qv__node *nd, int i) {
    const struct qv__encoding *c = nd->codec;
    const char *n = nd->pt == QV__PT_BOOL && c->bool_params[i] ? c->bool_params[i] : c->params[i];
    return n ? n : "p";
}

static const char *child_role(const struct qv__node *nd, int i) {
    const char *n = nd->codec->children[i];
    return n ? n : "child";
}

/* ---- Encoder-side nodes ---- */

struct qv__enode *qv__enode_new(struct qv__enc *e, int enc, int pt, uint32_t width,
                                int64_t count) {
    struct qv__enode *n = qv__mem_calloc(&e->mem, sizeof *n, e->err);
    if (!n) return NULL;
    n->enc = (uint8_t)enc;
    n->pt = (uint8_t)pt;
    n->width = width;
    n->count = count;
    return n;
}

static uint64_t zz(int64_t v) { return qv_zigzag_encode64(v); }

uint64_t qv__enode_header_size(const struct qv__enode *n) {
    uint64_t h = 2 + qv__varint_size((uint64_t)n->count) + 3;
    if (n->pt == QV__PT_FIXED) h += qv__varint_size(n->width);
    for (int i = 0; i < n->nparams; i++) h += qv__varint_size(zz(n->params[i]));
    for (int i = 0; i < n->nbufs; i++) h += qv__varint_size(n->buf_len[i]);
    for (int i = 0; i < n->nchildren; i++) h += qv__varint_size(n->child[i]->size);
    return (h + 7) & ~(uint64_t)7;
}

void qv__enode_finish(struct qv__enode *n) {
    uint64_t s = qv__enode_header_size(n);
    for (int i = 0; i < n->nbufs; i++) s += (n->buf_len[i] + 7) & ~(uint64_t)7;
    for (int i = 0; i < n->nchildren; i++) s += n->child[i]->size;
    n->size = s;
}

void qv__enode_write(const struct qv__enode *n, uint8_t *out) {
    uint64_t hs = qv__enode_header_size(n);
    size_t p = 0;
    out[p++] = n->enc;
    out[p++] = n->pt;
    if (n->pt == QV__PT_FIXED) p += qv__varint_put(out + p, n->width);
    p += qv__varint_put(out + p, (uint64_t)n->count);
    out[p++] = n->nparams;
    for (int i = 0; i < n->nparams; i++) p += qv__varint_put(out + p, zz(n->params[i]));
    out[p++] = n->nbufs;
    for (int i = 0; i < n->nbufs; i++) p += qv__varint_put(out + p, n->buf_len[i]);
    out[p++] = n->nchildren;
    for (int i = 0; i < n->nchildren; i++) p += qv__varint_put(out + p, n->child[i]->size);
    memset(out + p, 0, hs - p);
    p = hs;
    for (int i = 0; i < n->nbufs; i++) {
        uint64_t len = n->buf_len[i], padded = (len + 7) & ~(uint64_t)7;
        if (len) memcpy(out + p, n->buf[i], len);
        memset(out + p + len, 0, padded - len);
        p += padded;
    }
    for (int i = 0; i < n->nchildren; i++) {
        qv__enode_write(n->child[i], out + p);
        p += n->child[i]->size;
    }
}

void qv__enode_drop(struct qv__enc *e, struct qv__enode *n) {
    if (!n) return;
    for (int i = 0; i < n->nchildren; i++) qv__enode_drop(e, n->child[i]);
    /* Only arena blocks are freed; borrowed input pointers are not found in
     * the arena and are left alone. */
    for (int i = 0; i < n->nbufs; i++) qv__mem_free(&e->mem, (void *)n->buf[i]);
    qv__mem_free(&e->mem, n);
}

/* ---- Parsing ---- */

int qv__corrupt(struct qv_error *err, const struct qv__node *nd, const char *fmt, ...) {
    if (!err) return EIO;
    char msg[QV_ERROR_MESSAGE_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (nd->inner)
        return qv__corrupt_set(err,
                               "corrupt %s node at byte %llu of the subtree compressed at byte "
                               "%llu: %s",
                               qv_encoding_name(nd->enc), (unsigned long long)nd->offset,
                               (unsigned long long)nd->outer_offset, msg);
    return qv__corrupt_set(err, "corrupt %s node at byte %llu: %s", qv_encoding_name(nd->enc),
                           (unsigned long long)nd->offset, msg);
}

struct parse_ctx {
    struct qv__mem *m;
    const uint8_t *base;
    int inner;
    uint64_t outer_offset;
    uint64_t nodes; /* nodes parsed so far, bounded by the bytes available */
    struct qv_error *err;
    int (*vfn)(void *, uint64_t, uint64_t, struct qv_error *); /* dec_verify.h; may be NULL */
    void *vctx;
};

/* The most bytes a node header takes: two ids, width and count varints,
 * 8 parameters, 4 buffer and 4 child lengths with their counts. */
#define HEADER_MAX (2 + 10 + 10 + 1 + 8 * 10 + 1 + 4 * 10 + 1 + 4 * 10)

static int header_error(struct parse_ctx *c, uint64_t off, const char *what) {
    if (c->inner)
        return qv__corrupt_set(c->err,
                               "corrupt encoding header at byte %llu of the subtree compressed "
                               "at byte %llu: %s",
                               (unsigned long long)off, (unsigned long long)c->outer_offset, what);
    return qv__corrupt_set(c->err, "corrupt encoding header at byte %llu: %s",
                           (unsigned long long)off, what);
}

static int parse_node(struct parse_ctx *c, uint64_t off, uint64_t size, int depth,
                      struct qv__node **out) {
    if (depth > QV__ENC_MAX_DEPTH) return header_error(c, off, "tree nested too deeply");
    if (size < 8 || (size & 7) || (off & 7)) return header_error(c, off, "misaligned node span");
    const uint8_t *p = c->base + off;
    size_t pos = 0, end = (size_t)size;
    uint64_t v;
    if (c->vfn) {
        int vrc = c->vfn(c->vctx, off, size < HEADER_MAX ? size : HEADER_MAX, c->err);
        if (vrc) return vrc;
    }
    struct qv__node *nd = qv__mem_small(c->m, sizeof *nd, c->err);
    if (!nd) return ENOMEM;
    nd->offset = off;
    nd->size = size;
    nd->depth = depth;
    nd->inner = c->inner;
    nd->outer_offset = c->outer_offset;
    nd->enc = p[pos++];
    nd->pt = p[pos++];
    /* The id is a byte from the file: the lookup is bounds-checked, and
     * id 0 (auto) and reserved ids have no record. */
    nd->codec = qv__encoding_of(nd->enc);
    if (!nd->codec) return header_error(c, off, "unknown encoding id");
    if (nd->pt < QV__PT_U8 || nd->pt > QV__PT_FIXED) return qv__corrupt(c->err, nd, "bad type");
    if (nd->pt == QV__PT_FIXED) {
        if (qv__varint_get(p, end, &pos, &v) || v > QV_ENC_MAX_FIXED_WIDTH)
            return qv__corrupt(c->err, nd, "bad fixed width");
        /* Zero-width values hold no bytes: only plain and constant may carry
         * them, so no other decoder ever sees a zero-sized value. */
        if (v == 0 && !(nd->codec->flags & QV__ENC_ZERO_WIDTH))
            return qv__corrupt(c->err, nd, "fixed width 0 under an encoding other than plain "
                               "or constant");
        nd->width = (uint32_t)v;
    } else {
        nd->width = qv__pt_width(nd->pt);
    }
    if (qv__varint_get(p, end, &pos, &v) || v > (uint64_t)QV_ENC_MAX_COUNT + 1)
        return qv__corrupt(c->err, nd, "bad value count");
    nd->count = (int64_t)v;
    if (pos >= end) return qv__corrupt(c->err, nd, "truncated header");
    nd->nparams = p[pos++];
    if (nd->nparams > QV__MAX_PARAMS) return qv__corrupt(c->err, nd, "too many parameters");
    for (int i = 0; i < nd->nparams; i++) {
        if (qv__varint_get(p, end, &pos, &v)) return qv__corrupt(c->err, nd, "bad parameter");
        nd->params[i] = qv_zigzag_decode64(v);
    }
    if (pos >= end) return qv__corrupt(c->err, nd, "truncated header");
    nd->nbufs = p[pos++];
    if (nd->nbufs > QV__MAX_BUFS) return qv__corrupt(c->err, nd, "too many buffers");
    for (int i = 0; i < nd->nbufs; i++) {
        if (qv__varint_get(p, end, &pos, &v) || v > size)
            return qv__corrupt(c->err, nd, "bad buffer length");
        nd->buf_len[i] = v;
    }
    if (pos >= end) return qv__corrupt(c->err, nd, "truncated header");
    nd->nchildren = p[pos++];
    if (nd->nchildren > QV__MAX_CHILDREN) return qv__corrupt(c->err, nd, "too many children");
    uint64_t csize[QV__MAX_CHILDREN];
    for (int i = 0; i < nd->nchildren; i++) {
        if (qv__varint_get(p, end, &pos, &v) || v > size || v < 8 || (v & 7))
            return qv__corrupt(c->err, nd, "bad child size");
        csize[i] = v;
    }
    uint64_t at = (pos + 7) & ~(uint64_t)7;
    for (int i = 0; i < nd->nbufs; i++) {
        uint64_t padded = (nd->buf_len[i] + 7) & ~(uint64_t)7;
        if (at > size || padded > size - at)
            return qv__corrupt(c->err, nd, "buffer %d (%llu bytes) overruns the node", i,
                               (unsigned long long)nd->buf_len[i]);
        nd->buf[i] = p + at;
        at += padded;
    }
    for (int i = 0; c->vfn && i < nd->nbufs; i++) {
        if (qv__lazy_buffer(nd, i) || !nd->buf_len[i]) continue;
        int vrc = c->vfn(c->vctx, (uint64_t)(nd->buf[i] - c->base), nd->buf_len[i], c->err);
        if (vrc) return vrc;
    }
    /* Every node takes at least 8 bytes of its parent, so the node count is
     * bounded by the input size and nesting by QV__ENC_MAX_DEPTH. */
    for (int i = 0; i < nd->nchildren; i++) {
        if (at > size || csize[i] > size - at)
            return qv__corrupt(c->err, nd, "child %d (%llu bytes) overruns the node", i,
                               (unsigned long long)csize[i]);
        int rc = parse_node(c, off + at, csize[i], depth + 1, &nd->child[i]);
        if (rc) return rc;
        at += csize[i];
    }
    if (at != size)
        return qv__corrupt(c->err, nd, "node spans %llu bytes but its parts take %llu",
                           (unsigned long long)size, (unsigned long long)at);
    int rc = qv__validate_node(nd, c->err);
    if (rc) return rc;
    *out = nd;
    return 0;
}

int qv__tree_parse(struct qv__mem *m, const uint8_t *p, size_t size, int depth, int inner,
                   uint64_t outer_offset, struct qv__node **out, struct qv_error *err) {
    struct parse_ctx c = {m, p, inner, outer_offset, 0, err, NULL, NULL};
    return parse_node(&c, 0, size, depth, out);
}

int qv__tree_parse_checked(struct qv__mem *m, const uint8_t *p, size_t size,
                           int (*vfn)(void *, uint64_t, uint64_t, struct qv_error *), void *vctx,
                           struct qv__node **out, struct qv_error *err) {
    struct parse_ctx c = {m, p, 0, 0, 0, err, vfn, vctx};
    return parse_node(&c, 0, size, 0, out);
}

/* ---- Walking ---- */

struct walk_ctx {
    struct qv__mem m;
    int decompress;
    qv_enc_visit_fn fn;
    void *ctx;
    struct qv_error *err;
};

static int walk_node(struct walk_ctx *w, const struct qv__node *nd, const char *role) {
    struct qv_enc_node_info info;
    memset(&info, 0, sizeof info);
    info.depth = nd->depth;
    info.role = role;
    info.encoding = nd->enc;
    info.name = qv_encoding_name(nd->enc);
    info.type = qv__pt_name(nd->pt);
    info.fixed_width = nd->pt == QV__PT_FIXED ? nd->width : 0;
    info.count = nd->count;
    info.offset = nd->offset;
    info.compressed = nd->inner;
    info.size = nd->size;
    uint64_t own = nd->size;
    for (int i = 0; i < nd->nchildren; i++) own -= nd->child[i]->size;
    info.own_size = own;
    info.nparams = nd->nparams;
    for (int i = 0; i < nd->nparams; i++) {
        info.param_names[i] = param_name(nd, i);
        info.params[i] = nd->params[i];
    }
    int rc = w->fn(w->ctx, &info);
    if (rc) return rc;
    for (int i = 0; i < nd->nchildren; i++) {
        rc = walk_node(w, nd->child[i], child_role(nd, i));
        if (rc) return rc;
    }
    if ((nd->codec->flags & QV__ENC_FRAMES) && w->decompress &&
        qv__general_nframes(nd) > 0) {
        /* Frames share one shape in practice: show the first. */
        uint8_t *raw = NULL;
        size_t raw_size = 0;
        rc = qv__general_decompress(&w->m, nd, 0, &raw, &raw_size, w->err);
        if (rc) return rc;
        struct qv__node *inner;
        rc = qv__tree_parse(&w->m, raw, raw_size, nd->depth + 1, 1, nd->offset, &inner, w->err);
        if (rc) return rc;
        rc = walk_node(w, inner, child_role(nd, 0));
        if (rc) return rc;
    }
    return 0;
}

int qv_enc_walk(const void *bytes, size_t size, struct qv_reservation *r, qv_enc_visit_fn fn,
                void *ctx, struct qv_error *err) {
    if (!bytes || !fn) return qv_error_set(err, EINVAL, "qv_enc_walk: NULL bytes or visitor");
    struct walk_ctx w = {{0}, r != NULL, fn, ctx, err};
    struct qv_pool *tmp_pool = NULL;
    struct qv_reservation *tmp_r = NULL;
    int rc = 0;
    if (!r) {
        /* Parsed nodes still need memory; without a caller reservation use a
         * private pool (nodes only: compressed subtrees are not expanded). */
        struct qv_pool_options po = {0};
        po.name = "enc-walk";
        if ((rc = qv_pool_create(&po, &tmp_pool, err))) return rc;
        if ((rc = qv_reservation_create(tmp_pool, NULL, &tmp_r, err))) goto out;
    }
    w.m.r = r ? r : tmp_r;
    const uint8_t *p = bytes;
    if ((uintptr_t)bytes & 7) {
        /* The parser relies on 8-byte alignment of the segment. */
        uint8_t *copy = qv__mem_alloc(&w.m, size, err);
        if (!copy) {
            rc = ENOMEM;
            goto out;
        }
        memcpy(copy, bytes, size);
        p = copy;
    }
    struct qv__node *root;
    if ((rc = qv__tree_parse(&w.m, p, size, 0, 0, 0, &root, err))) goto out;
    rc = walk_node(&w, root, "");
out:
    qv__mem_free_all(&w.m);
    if (tmp_r) qv_reservation_destroy(tmp_r);
    if (tmp_pool) qv_pool_destroy(tmp_pool);
    return rc;
}

/* ---- Describe ---- */

struct desc_ctx {
    char *buf;
    size_t cap, len;
    int truncated;
    int last_depth;
    int open[QV__ENC_MAX_DEPTH * 2 + 4]; /* nodes still open per depth */
    int first_child[QV__ENC_MAX_DEPTH * 2 + 4];
};

static void dput(struct desc_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void dput(struct desc_ctx *c, const char *fmt, ...) {
    if (c->cap == 0) {
        c->truncated = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    size_t room = c->len < c->cap ? c->cap - c->len : 0;
    int n = vsnprintf(c->buf + (c->len < c->cap ? c->len : c->cap - 1), room ? room : 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= room) c->truncated = 1;
    c->len += (size_t)n;
}

#define DESC_MAXD (QV__ENC_MAX_DEPTH * 2 + 3)

static void close_to(struct desc_ctx *c, int depth) {
    /* Closes every node deeper than or at `depth`. */
    for (int d = c->last_depth; d >= depth; d--)
        if (d >= 0 && d <= DESC_MAXD && c->open[d]) {
            dput(c, ")");
            c->open[d] = 0;
        }
}

static int describe_visit(void *ctx, const struct qv_enc_node_info *info) {
    struct desc_ctx *c = ctx;
    int d = info->depth > DESC_MAXD ? DESC_MAXD : info->depth;
    if (c->last_depth >= d) close_to(c, d);
    if (d > 0) {
        int pd = d - 1;
        if (!c->first_child[pd]) dput(c, ",");
        c->first_child[pd] = 0;
        dput(c, "%s=", info->role);
    }
    dput(c, "%s(", info->name);
    c->open[d] = 1;
    c->first_child[d] = 1;
    for (int i = 0; i < info->nparams; i++) {
        if (!c->first_child[d]) dput(c, ",");
        c->first_child[d] = 0;
        dput(c, "%s=%lld", info->param_names[i], (long long)info->params[i]);
    }
    c->last_depth = d;
    return 0;
}

int qv_enc_describe(const void *bytes, size_t size, struct qv_reservation *r, char *buf,
                    size_t cap, struct qv_error *err) {
    struct desc_ctx c;
    memset(&c, 0, sizeof c);
    c.buf = buf;
    c.cap = cap;
    c.last_depth = -1;
    if (cap) buf[0] = 0;
    int rc = qv_enc_walk(bytes, size, r, describe_visit, &c, err);
    if (rc) return rc;
    close_to(&c, 0);
    if (cap) buf[c.len < cap ? c.len : cap - 1] = 0;
    if (c.truncated)
        return qv_error_set(err, EOVERFLOW, "qv_enc_describe: %zu bytes needed, %zu given",
                            c.len + 1, cap);
    return 0;
}
