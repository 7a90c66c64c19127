/* Schemas across the C Data Interface: format strings, ArrowSchema import
 * into an owned qv_schema, and export of a field tree as an ArrowSchema.
 *
 * An exported ArrowSchema tree is one allocation holding every child struct,
 * child pointer table and string. Each node counts one reference on it, so a
 * consumer can move a child out and release parent and child in any order;
 * the last release frees the block. */
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "arrow/arrow_internal.h"

/* ---- format strings ---- */

/* Strict decimal integer: optional '-', digits, no '+', no overflow. */
static bool parse_int(const char **p, int32_t *out) {
    const char *s = *p;
    bool neg = *s == '-';
    if (neg) s++;
    if (*s < '0' || *s > '9') return false;
    int64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > (int64_t)INT32_MAX + (neg ? 1 : 0)) return false;
        s++;
    }
    *out = (int32_t)(neg ? -v : v);
    *p = s;
    return true;
}

static int bad_format(const char *format, const char *why, struct qv_error *err) {
    return qv_error_set(err, EINVAL, "format '%s': %s", format, why);
}

static int unsupported(const char *format, const char *what, struct qv_error *err) {
    return qv_error_set(err, ENOSYS, "format '%s': %s is not supported by Quiver", format, what);
}

int qv_arrow_format_parse(const char *format, struct qv_field *out, struct qv_error *err) {
    if (!format || !out)
        return qv_error_set(err, EINVAL, "format parse: NULL %s", format ? "output" : "format");
    const char *f = format;
    /* Single-character primitive formats must be exactly one character. */
    static const char singles[] = "nbcCsSiIlLefguUzZ";
    static const enum qv_type single_types[] = {
        QV_TYPE_NULL,   QV_TYPE_BOOL,   QV_TYPE_INT8,    QV_TYPE_UINT8,      QV_TYPE_INT16,
        QV_TYPE_UINT16, QV_TYPE_INT32,  QV_TYPE_UINT32,  QV_TYPE_INT64,      QV_TYPE_UINT64,
        QV_TYPE_FLOAT16, QV_TYPE_FLOAT32, QV_TYPE_FLOAT64, QV_TYPE_UTF8, QV_TYPE_LARGE_UTF8,
        QV_TYPE_BINARY, QV_TYPE_LARGE_BINARY};
    const char *hit = f[0] ? strchr(singles, f[0]) : NULL;
    if (hit) {
        if (f[1] != '\0') return bad_format(format, "trailing characters", err);
        out->type = single_types[hit - singles];
        return 0;
    }
    int32_t a = 0, b = 0;
    const char *p;
    switch (f[0]) {
    case 'w':
        p = f + 2;
        if (f[1] != ':' || !parse_int(&p, &a) || *p || a < 0)
            return bad_format(format, "expected w:<byte width>", err);
        out->type = QV_TYPE_FIXED_BINARY;
        out->byte_width = a;
        return 0;
    case 'd': {
        p = f + 2;
        if (f[1] != ':' || !parse_int(&p, &a) || *p != ',') goto bad_decimal;
        p++;
        if (!parse_int(&p, &b)) goto bad_decimal;
        if (*p == ',') {
            int32_t bits;
            p++;
            if (!parse_int(&p, &bits) || *p) goto bad_decimal;
            if (bits == 32 || bits == 64 || bits == 256)
                return unsupported(format, "a decimal bit width other than 128", err);
            if (bits != 128) return bad_format(format, "decimal bit width must be 128", err);
        } else if (*p) {
            goto bad_decimal;
        }
        if (a < 1 || a > 38)
            return bad_format(format, "decimal128 precision must be 1..38", err);
        out->type = QV_TYPE_DECIMAL128;
        out->precision = a;
        out->scale = b;
        return 0;
    bad_decimal:
        return bad_format(format, "expected d:<precision>,<scale>[,128]", err);
    }
    case 't':
        if (strcmp(f, "tdD") == 0) {
            out->type = QV_TYPE_DATE32;
            return 0;
        }
        if (f[1] == 's' && f[2] && strchr("smun", f[2]) && f[3] == ':') {
            out->type = QV_TYPE_TIMESTAMP;
            out->unit = f[2] == 's' ? QV_TIME_S : f[2] == 'm' ? QV_TIME_MS
                      : f[2] == 'u' ? QV_TIME_US : QV_TIME_NS;
            out->timezone = f[4] ? f + 4 : NULL;
            return 0;
        }
        if (strcmp(f, "tdm") == 0 || (f[1] == 't' && f[2] && strchr("smun", f[2]) && !f[3]) ||
            (f[1] == 'D' && f[2] && strchr("smun", f[2]) && !f[3]) ||
            (f[1] == 'i' && f[2] && strchr("MDn", f[2]) && !f[3]))
            return unsupported(format, "this temporal type (date64/time/duration/interval)", err);
        return bad_format(format, "unknown temporal format", err);
    case '+':
        if (f[1] && !f[2] && strchr("slLm", f[1])) {
            out->type = f[1] == 's' ? QV_TYPE_STRUCT : f[1] == 'l' ? QV_TYPE_LIST
                      : f[1] == 'L' ? QV_TYPE_LARGE_LIST : QV_TYPE_MAP;
            return 0;
        }
        if (f[1] == 'w') {
            p = f + 3;
            if (f[2] != ':' || !parse_int(&p, &a) || *p || a < 0)
                return bad_format(format, "expected +w:<list size>", err);
            out->type = QV_TYPE_FIXED_LIST;
            out->list_size = a;
            return 0;
        }
        if (strcmp(f, "+vl") == 0 || strcmp(f, "+vL") == 0 || strcmp(f, "+r") == 0 ||
            strncmp(f, "+ud:", 4) == 0 || strncmp(f, "+us:", 4) == 0)
            return unsupported(format, "list views, run-end encoding and unions", err);
        return bad_format(format, "unknown nested format", err);
    case 'v':
        if ((f[1] == 'u' || f[1] == 'z') && !f[2])
            return unsupported(format, "string/binary views", err);
        return bad_format(format, "unknown format", err);
    default:
        return bad_format(format, f[0] ? "unknown format" : "empty format", err);
    }
}

size_t qv_arrow_format_emit(const struct qv_field *field, char *buf, size_t cap) {
    static const char units[] = "smun";
    const char *lit = NULL;
    int n;
    switch (field->type) {
    case QV_TYPE_NULL: lit = "n"; break;
    case QV_TYPE_BOOL: lit = "b"; break;
    case QV_TYPE_INT8: lit = "c"; break;
    case QV_TYPE_UINT8: lit = "C"; break;
    case QV_TYPE_INT16: lit = "s"; break;
    case QV_TYPE_UINT16: lit = "S"; break;
    case QV_TYPE_INT32: lit = "i"; break;
    case QV_TYPE_UINT32: lit = "I"; break;
    case QV_TYPE_INT64: lit = "l"; break;
    case QV_TYPE_UINT64: lit = "L"; break;
    case QV_TYPE_FLOAT16: lit = "e"; break;
    case QV_TYPE_FLOAT32: lit = "f"; break;
    case QV_TYPE_FLOAT64: lit = "g"; break;
    case QV_TYPE_DATE32: lit = "tdD"; break;
    case QV_TYPE_UTF8: lit = "u"; break;
    case QV_TYPE_LARGE_UTF8: lit = "U"; break;
    case QV_TYPE_BINARY: lit = "z"; break;
    case QV_TYPE_LARGE_BINARY: lit = "Z"; break;
    case QV_TYPE_STRUCT: lit = "+s"; break;
    case QV_TYPE_LIST: lit = "+l"; break;
    case QV_TYPE_LARGE_LIST: lit = "+L"; break;
    case QV_TYPE_MAP: lit = "+m"; break;
    case QV_TYPE_DECIMAL128:
        n = snprintf(buf, cap, "d:%d,%d", (int)field->precision, (int)field->scale);
        return n < 0 ? 0 : (size_t)n;
    case QV_TYPE_TIMESTAMP:
        n = snprintf(buf, cap, "ts%c:%s", units[(unsigned)field->unit & 3],
                     field->timezone ? field->timezone : "");
        return n < 0 ? 0 : (size_t)n;
    case QV_TYPE_FIXED_BINARY:
        n = snprintf(buf, cap, "w:%d", (int)field->byte_width);
        return n < 0 ? 0 : (size_t)n;
    case QV_TYPE_FIXED_LIST:
        n = snprintf(buf, cap, "+w:%d", (int)field->list_size);
        return n < 0 ? 0 : (size_t)n;
    default: lit = "?"; break;
    }
    n = snprintf(buf, cap, "%s", lit);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- import ---- */

static int32_t read_i32(const char *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Walks Arrow's binary metadata (int32 count, then per pair int32 length +
 * bytes for key and value); copies it when `md` is non-NULL. */
static int import_metadata(struct qv__arena *a, struct qv_kv *md, const char *src, int64_t *n_out,
                           const struct qv__path *path, struct qv_error *err) {
    *n_out = 0;
    if (!src) return 0;
    int32_t n = read_i32(src);
    if (n < 0)
        return qv_error_set(err, EINVAL, "schema import: field '%s': negative metadata count %d",
                            qv__path_str(path), (int)n);
    const char *p = src + 4;
    for (int32_t i = 0; i < n; i++) {
        int32_t kl = read_i32(p);
        if (kl < 0) goto bad;
        const char *k = p + 4;
        p = k + kl;
        int32_t vl = read_i32(p);
        if (vl < 0) goto bad;
        const char *v = p + 4;
        p = v + vl;
        const char *kc = qv__arena_str(a, k, (size_t)kl);
        const char *vc = qv__arena_str(a, v, (size_t)vl);
        if (md) md[i] = (struct qv_kv){kc, vc, kl, vl};
        continue;
    bad:
        return qv_error_set(err, EINVAL,
                            "schema import: field '%s': metadata pair %d has a negative length",
                            qv__path_str(path), (int)i);
    }
    *n_out = n;
    return 0;
}

/* Imports one node and its subtree; `dst` is NULL in the measuring pass,
 * which is also the pass that reports errors. */
static int import_node(struct qv__arena *a, struct qv_field *dst, const struct ArrowSchema *src,
                       struct qv__path *path, int depth, struct qv_error *err) {
    const char *where = qv__path_str(path);
    if (!src)
        return qv_error_set(err, EINVAL, "schema import: field '%s': NULL ArrowSchema", where);
    if (!src->release)
        return qv_error_set(err, EINVAL,
                            "schema import: field '%s': ArrowSchema is released (moved or freed)",
                            where);
    if (depth > QV__MAX_NESTING)
        return qv_error_set(err, EINVAL, "schema import: field '%s': nesting deeper than %d levels",
                            where, QV__MAX_NESTING);
    if (!src->format)
        return qv_error_set(err, EINVAL, "schema import: field '%s': NULL format", where);
    struct qv_field f = {0};
    int rc = qv_arrow_format_parse(src->format, &f, err);
    if (rc) return qv_error_wrap(err, rc, "schema import: field '%s': ", where);
    if (src->dictionary)
        return qv_error_set(err, ENOSYS,
                            "schema import: field '%s': dictionary-encoded fields are not supported",
                            where);
    if (src->n_children < 0 || (src->n_children > 0 && !src->children))
        return qv_error_set(err, EINVAL, "schema import: field '%s': %lld children but no child array",
                            where, (long long)src->n_children);
    int64_t want = qv__type_n_children(f.type);
    if (want >= 0 && src->n_children != want)
        return qv_error_set(err, EINVAL,
                            "schema import: field '%s': format '%s' needs %lld child(ren), has %lld",
                            where, src->format, (long long)want, (long long)src->n_children);
    if (f.type == QV_TYPE_MAP) {
        const struct ArrowSchema *e = src->children[0];
        if (e && e->release && e->format &&
            (strcmp(e->format, "+s") != 0 || e->n_children != 2))
            return qv_error_set(err, EINVAL,
                                "schema import: field '%s': a map's child must be a struct of key "
                                "and value, got format '%s' with %lld children",
                                where, e->format, (long long)e->n_children);
    }
    f.nullable = (src->flags & ARROW_FLAG_NULLABLE) != 0;
    f.keys_sorted = f.type == QV_TYPE_MAP && (src->flags & ARROW_FLAG_MAP_KEYS_SORTED);
    f.n_children = src->n_children;

    struct qv_field *kids = qv__arena_take(a, (size_t)f.n_children * sizeof *kids,
                                           alignof(struct qv_field));
    /* Count (and check) the metadata on a scratch arena first, so both
     * passes take exactly the same space from the real one. */
    int64_t n_md = 0;
    struct qv__arena scratch = {NULL, 0};
    rc = import_metadata(&scratch, NULL, src->metadata, &n_md, path, err);
    if (rc) return rc;
    struct qv_kv *md = qv__arena_take(a, (size_t)n_md * sizeof *md, alignof(struct qv_kv));
    rc = import_metadata(a, md, src->metadata, &n_md, path, err);
    if (rc) return rc;
    const char *name = src->name ? src->name : "";
    name = qv__arena_str(a, name, strlen(name));
    const char *tz = f.timezone ? qv__arena_str(a, f.timezone, strlen(f.timezone)) : NULL;
    for (int64_t i = 0; i < f.n_children; i++) {
        const struct ArrowSchema *c = src->children[i];
        /* A released struct's members are not to be trusted: name it by
         * position instead. */
        char pos[32];
        snprintf(pos, sizeof pos, "<child %lld>", (long long)i);
        size_t mark = qv__path_push(path, c && c->release && c->name && *c->name ? c->name : pos);
        rc = import_node(a, kids ? &kids[i] : NULL, c, path, depth + 1, err);
        qv__path_pop(path, mark);
        if (rc) return rc;
    }
    if (dst) {
        f.name = name;
        f.timezone = tz;
        f.children = f.n_children ? kids : NULL;
        f.n_metadata = n_md;
        f.metadata = n_md ? md : NULL;
        *dst = f;
    }
    return 0;
}

int qv_schema_import(const struct ArrowSchema *src, struct qv_reservation *r,
                     struct qv_schema **out, struct qv_error *err) {
    if (out) *out = NULL;
    if (!r || !out)
        return qv_error_set(err, EINVAL, "schema import: NULL %s", !r ? "reservation" : "output");
    struct qv__path path;
    qv__path_init(&path);
    struct qv__arena a = {NULL, 0};
    qv__arena_take(&a, sizeof(struct qv_schema), alignof(struct qv_schema));
    int rc = import_node(&a, NULL, src, &path, 0, err);
    if (rc) return rc;
    struct qv_schema *s = NULL;
    rc = qv__schema_alloc(&a, r, &s, err);
    if (rc) return rc;
    rc = import_node(&a, &s->root, src, &path, 0, err);
    if (rc) { /* cannot happen: the first pass checked the same input */
        qv_schema_destroy(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* ---- export ---- */

struct schema_block {
    struct qv_reservation *res;
    size_t size;
    _Atomic int64_t refs;
};

static void schema_release(struct ArrowSchema *s) {
    if (!s || !s->release) return;
    struct schema_block *blk = s->private_data;
    for (int64_t i = 0; i < s->n_children; i++) {
        struct ArrowSchema *c = s->children[i];
        if (c && c->release) c->release(c);
    }
    if (s->dictionary && s->dictionary->release) s->dictionary->release(s->dictionary);
    s->release = NULL;
    s->private_data = NULL;
    if (atomic_fetch_sub(&blk->refs, 1) == 1) qv_free(blk->res, blk, blk->size);
}

static void export_node(struct qv__arena *a, struct ArrowSchema *dst, const struct qv_field *f,
                        struct schema_block *blk) {
    struct ArrowSchema **ptrs = qv__arena_take(a, (size_t)f->n_children * sizeof *ptrs,
                                               alignof(struct ArrowSchema *));
    struct ArrowSchema *kids = qv__arena_take(a, (size_t)f->n_children * sizeof *kids,
                                              alignof(struct ArrowSchema));
    size_t flen = qv_arrow_format_emit(f, NULL, 0);
    char *fmt = qv__arena_take(a, flen + 1, 1);
    if (fmt) qv_arrow_format_emit(f, fmt, flen + 1);
    const char *name = qv__arena_str(a, f->name ? f->name : "", f->name ? strlen(f->name) : 0);
    char *md = NULL;
    if (f->n_metadata > 0) {
        size_t size = 4;
        for (int64_t i = 0; i < f->n_metadata; i++) {
            const struct qv_kv *kv = &f->metadata[i];
            size += 8 + (size_t)(kv->key_len >= 0 ? kv->key_len : (int32_t)strlen(kv->key));
            size += (size_t)(kv->value_len >= 0 ? kv->value_len
                                                : (kv->value ? (int32_t)strlen(kv->value) : 0));
        }
        md = qv__arena_take(a, size, 1);
        if (md) {
            char *p = md;
            int32_t n = (int32_t)f->n_metadata;
            memcpy(p, &n, 4);
            p += 4;
            for (int64_t i = 0; i < f->n_metadata; i++) {
                const struct qv_kv *kv = &f->metadata[i];
                int32_t kl = kv->key_len >= 0 ? kv->key_len : (int32_t)strlen(kv->key);
                int32_t vl = kv->value_len >= 0 ? kv->value_len
                                                : (kv->value ? (int32_t)strlen(kv->value) : 0);
                memcpy(p, &kl, 4);
                if (kl) memcpy(p + 4, kv->key, (size_t)kl);
                p += 4 + kl;
                memcpy(p, &vl, 4);
                if (vl) memcpy(p + 4, kv->value, (size_t)vl);
                p += 4 + vl;
            }
        }
    }
    for (int64_t i = 0; i < f->n_children; i++) {
        export_node(a, kids ? &kids[i] : NULL, &f->children[i], blk);
        if (ptrs) ptrs[i] = &kids[i];
    }
    if (!dst) return;
    int64_t flags = f->nullable ? ARROW_FLAG_NULLABLE : 0;
    if (f->type == QV_TYPE_MAP && f->keys_sorted) flags |= ARROW_FLAG_MAP_KEYS_SORTED;
    *dst = (struct ArrowSchema){
        .format = fmt,
        .name = name,
        .metadata = md,
        .flags = flags,
        .n_children = f->n_children,
        .children = f->n_children ? ptrs : NULL,
        .dictionary = NULL,
        .release = schema_release,
        .private_data = blk,
    };
}

int qv_field_export(const struct qv_field *field, struct qv_reservation *r,
                    struct ArrowSchema *out, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "schema export: NULL output");
    out->release = NULL;
    if (!field || !r)
        return qv_error_set(err, EINVAL, "schema export: NULL %s", field ? "reservation" : "field");
    struct qv__path path;
    qv__path_init(&path);
    int rc = qv__field_check_tree(field, &path, 0, err);
    if (rc) return rc;
    struct qv__arena a = {NULL, 0};
    qv__arena_take(&a, sizeof(struct schema_block), alignof(struct schema_block));
    export_node(&a, NULL, field, NULL);
    size_t size = a.off;
    struct schema_block *blk = qv_alloc(r, size, err);
    if (!blk) return qv_error_wrap(err, ENOMEM, "schema export: allocating %zu bytes: ", size);
    blk->res = r;
    blk->size = size;
    atomic_init(&blk->refs, qv__field_count_nodes(field));
    a.base = (char *)blk;
    a.off = 0;
    qv__arena_take(&a, sizeof *blk, alignof(struct schema_block));
    export_node(&a, out, field, blk);
    return 0;
}

int qv_schema_export(const struct qv_schema *schema, struct qv_reservation *r,
                     struct ArrowSchema *out, struct qv_error *err) {
    if (!schema) {
        if (out) out->release = NULL;
        return qv_error_set(err, EINVAL, "schema export: NULL schema");
    }
    return qv_field_export(&schema->root, r, out, err);
}
