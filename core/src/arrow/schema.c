/* The owned schema tree: create from a template, copy, free, compare.
 *
 * An owned schema is one allocation: the qv_schema header, then every
 * qv_field, metadata table and string, laid out by a measuring pass and a
 * filling pass of the same walk. One allocation keeps the fault injector's
 * story simple (a schema either exists whole or not at all) and makes free a
 * single sized qv_free. */
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "arrow/arrow_internal.h"

size_t qv__path_push(struct qv__path *p, const char *name) {
    size_t old = p->len;
    if (!name || !*name) name = "<unnamed>";
    size_t room = sizeof p->buf - p->len;
    int n = snprintf(p->buf + p->len, room, "%s%s", p->len ? "." : "", name);
    if (n < 0 || (size_t)n >= room) {
        /* Keep what fits and mark the cut; messages stay useful. */
        memcpy(p->buf + sizeof p->buf - 4, "...", 4);
        p->len = sizeof p->buf - 1;
    } else {
        p->len += (size_t)n;
    }
    return old;
}

int qv__field_fixed_width(const struct qv_field *f) {
    switch (f->type) {
    case QV_TYPE_INT8: case QV_TYPE_UINT8: return 1;
    case QV_TYPE_INT16: case QV_TYPE_UINT16: case QV_TYPE_FLOAT16: return 2;
    case QV_TYPE_INT32: case QV_TYPE_UINT32: case QV_TYPE_FLOAT32: case QV_TYPE_DATE32: return 4;
    case QV_TYPE_INT64: case QV_TYPE_UINT64: case QV_TYPE_FLOAT64: case QV_TYPE_TIMESTAMP: return 8;
    case QV_TYPE_DECIMAL128: return 16;
    case QV_TYPE_FIXED_BINARY: return f->byte_width;
    default: return -1;
    }
}

int64_t qv__type_n_buffers(enum qv_type type) {
    switch (type) {
    case QV_TYPE_NULL: return 0;
    case QV_TYPE_UTF8:
    case QV_TYPE_LARGE_UTF8:
    case QV_TYPE_BINARY:
    case QV_TYPE_LARGE_BINARY: return 3;
    case QV_TYPE_STRUCT:
    case QV_TYPE_FIXED_LIST: return 1;
    default: return 2;  /* validity + values, or validity + offsets */
    }
}

int64_t qv__type_n_children(enum qv_type type) {
    switch (type) {
    case QV_TYPE_STRUCT: return -1;
    case QV_TYPE_LIST:
    case QV_TYPE_LARGE_LIST:
    case QV_TYPE_FIXED_LIST:
    case QV_TYPE_MAP: return 1;
    default: return 0;
    }
}

int64_t qv__field_count_nodes(const struct qv_field *f) {
    int64_t n = 1;
    for (int64_t i = 0; i < f->n_children; i++) n += qv__field_count_nodes(&f->children[i]);
    return n;
}

const char *qv_type_name(enum qv_type type) {
    static const char *const names[QV_TYPE_COUNT_] = {
        [QV_TYPE_NULL] = "null",           [QV_TYPE_BOOL] = "bool",
        [QV_TYPE_INT8] = "int8",           [QV_TYPE_INT16] = "int16",
        [QV_TYPE_INT32] = "int32",         [QV_TYPE_INT64] = "int64",
        [QV_TYPE_UINT8] = "uint8",         [QV_TYPE_UINT16] = "uint16",
        [QV_TYPE_UINT32] = "uint32",       [QV_TYPE_UINT64] = "uint64",
        [QV_TYPE_FLOAT16] = "float16",     [QV_TYPE_FLOAT32] = "float32",
        [QV_TYPE_FLOAT64] = "float64",     [QV_TYPE_DECIMAL128] = "decimal128",
        [QV_TYPE_DATE32] = "date32",       [QV_TYPE_TIMESTAMP] = "timestamp",
        [QV_TYPE_UTF8] = "utf8",           [QV_TYPE_LARGE_UTF8] = "large_utf8",
        [QV_TYPE_BINARY] = "binary",       [QV_TYPE_LARGE_BINARY] = "large_binary",
        [QV_TYPE_FIXED_BINARY] = "fixed_size_binary",
        [QV_TYPE_STRUCT] = "struct",       [QV_TYPE_LIST] = "list",
        [QV_TYPE_LARGE_LIST] = "large_list", [QV_TYPE_FIXED_LIST] = "fixed_size_list",
        [QV_TYPE_MAP] = "map",
    };
    return (unsigned)type < QV_TYPE_COUNT_ ? names[type] : "?";
}

/* ---- checks shared by templates and imports ---- */

int qv__field_check_node(const struct qv_field *f, const struct qv__path *path, int depth,
                         struct qv_error *err) {
    const char *where = qv__path_str(path);
    if (depth > QV__MAX_NESTING)
        return qv_error_set(err, EINVAL, "schema: field '%s': nesting deeper than %d levels",
                            where, QV__MAX_NESTING);
    if ((unsigned)f->type >= QV_TYPE_COUNT_)
        return qv_error_set(err, EINVAL, "schema: field '%s': unknown type %d", where,
                            (int)f->type);
    switch (f->type) {
    case QV_TYPE_DECIMAL128:
        if (f->precision < 1 || f->precision > 38)
            return qv_error_set(err, EINVAL,
                                "schema: field '%s': decimal128 precision %d is outside 1..38",
                                where, (int)f->precision);
        break;
    case QV_TYPE_FIXED_BINARY:
        if (f->byte_width < 0)
            return qv_error_set(err, EINVAL, "schema: field '%s': negative byte width %d",
                                where, (int)f->byte_width);
        break;
    case QV_TYPE_FIXED_LIST:
        if (f->list_size < 0)
            return qv_error_set(err, EINVAL, "schema: field '%s': negative list size %d",
                                where, (int)f->list_size);
        break;
    case QV_TYPE_TIMESTAMP:
        if ((unsigned)f->unit > QV_TIME_NS)
            return qv_error_set(err, EINVAL, "schema: field '%s': unknown time unit %d",
                                where, (int)f->unit);
        break;
    default: break;
    }
    int64_t want = qv__type_n_children(f->type);
    if (f->n_children < 0 || (f->n_children > 0 && !f->children))
        return qv_error_set(err, EINVAL, "schema: field '%s': %lld children but no child array",
                            where, (long long)f->n_children);
    if (want >= 0 && f->n_children != want)
        return qv_error_set(err, EINVAL, "schema: field '%s': %s needs %lld child(ren), has %lld",
                            where, qv_type_name(f->type), (long long)want,
                            (long long)f->n_children);
    if (f->type == QV_TYPE_MAP &&
        (f->children[0].type != QV_TYPE_STRUCT || f->children[0].n_children != 2))
        return qv_error_set(err, EINVAL,
                            "schema: field '%s': a map's child must be a struct of key and value",
                            where);
    if (f->n_metadata < 0 || (f->n_metadata > 0 && !f->metadata))
        return qv_error_set(err, EINVAL, "schema: field '%s': %lld metadata pairs but no table",
                            where, (long long)f->n_metadata);
    for (int64_t i = 0; i < f->n_metadata; i++) {
        const struct qv_kv *kv = &f->metadata[i];
        if (!kv->key || (!kv->value && kv->value_len != 0))
            return qv_error_set(err, EINVAL, "schema: field '%s': metadata pair %lld has a NULL %s",
                                where, (long long)i, kv->key ? "value" : "key");
        /* Lengths are int32 (as in Arrow's metadata encoding): a longer
         * NUL-terminated string could not be stored whole. */
        if ((kv->key_len < 0 && strlen(kv->key) > INT32_MAX) ||
            (kv->value && kv->value_len < 0 && strlen(kv->value) > INT32_MAX))
            return qv_error_set(err, EINVAL,
                                "schema: field '%s': metadata pair %lld is longer than %d bytes",
                                where, (long long)i, INT32_MAX);
    }
    return 0;
}

/* ---- the arena: measure with base == NULL, then fill ---- */

void *qv__arena_take(struct qv__arena *a, size_t size, size_t align) {
    a->off = (a->off + align - 1) & ~(align - 1);
    void *p = a->base ? a->base + a->off : NULL;
    a->off += size;
    return p;
}

const char *qv__arena_str(struct qv__arena *a, const char *s, size_t n) {
    char *p = qv__arena_take(a, n + 1, 1);
    if (p) {
        if (n) memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static size_t kv_len(const char *s, int32_t len) { return len >= 0 ? (size_t)len : strlen(s); }

/* Copies a checked template node and its subtree. `dst` is NULL when
 * measuring. */
static void copy_tree(struct qv__arena *a, struct qv_field *dst, const struct qv_field *src) {
    struct qv_field *kids =
        qv__arena_take(a, (size_t)src->n_children * sizeof *kids, alignof(struct qv_field));
    struct qv_kv *md = qv__arena_take(a, (size_t)src->n_metadata * sizeof *md, alignof(struct qv_kv));
    const char *name = src->name ? src->name : "";
    name = qv__arena_str(a, name, strlen(name));
    const char *tz = NULL;
    if (src->type == QV_TYPE_TIMESTAMP && src->timezone && *src->timezone)
        tz = qv__arena_str(a, src->timezone, strlen(src->timezone));
    for (int64_t i = 0; i < src->n_metadata; i++) {
        const struct qv_kv *s = &src->metadata[i];
        size_t kl = kv_len(s->key, s->key_len);
        size_t vl = s->value ? kv_len(s->value, s->value_len) : 0;
        const char *k = qv__arena_str(a, s->key, kl);
        const char *v = qv__arena_str(a, s->value, vl);
        if (md) md[i] = (struct qv_kv){k, v, (int32_t)kl, (int32_t)vl};
    }
    for (int64_t i = 0; i < src->n_children; i++)
        copy_tree(a, kids ? &kids[i] : NULL, &src->children[i]);
    if (!dst) return;
    *dst = *src;
    dst->name = name;
    dst->timezone = tz;
    dst->children = src->n_children ? kids : NULL;
    dst->metadata = src->n_metadata ? md : NULL;
    /* Parameters that do not belong to the type are zeroed so that equality
     * and printing never see stale template values. */
    if (dst->type != QV_TYPE_DECIMAL128) dst->precision = dst->scale = 0;
    if (dst->type != QV_TYPE_FIXED_BINARY) dst->byte_width = 0;
    if (dst->type != QV_TYPE_FIXED_LIST) dst->list_size = 0;
    if (dst->type != QV_TYPE_TIMESTAMP) dst->unit = QV_TIME_S;
    if (dst->type != QV_TYPE_MAP) dst->keys_sorted = false;
}

int qv__field_check_tree(const struct qv_field *f, struct qv__path *path, int depth,
                         struct qv_error *err) {
    int rc = qv__field_check_node(f, path, depth, err);
    for (int64_t i = 0; rc == 0 && i < f->n_children; i++) {
        size_t mark = qv__path_push(path, f->children[i].name);
        rc = qv__field_check_tree(&f->children[i], path, depth + 1, err);
        qv__path_pop(path, mark);
    }
    return rc;
}

int qv__schema_alloc(struct qv__arena *a, struct qv_reservation *r, struct qv_schema **out,
                     struct qv_error *err) {
    size_t size = a->off;
    struct qv_schema *s = qv_alloc(r, size, err);
    if (!s) return qv_error_wrap(err, ENOMEM, "schema: allocating %zu bytes: ", size);
    memset(s, 0, size);
    s->reservation = r;
    s->alloc_size = size;
    a->base = (char *)s;
    a->off = 0;
    qv__arena_take(a, sizeof *s, alignof(struct qv_schema));
    *out = s;
    return 0;
}

int qv_schema_create(const struct qv_field *root, struct qv_reservation *r,
                     struct qv_schema **out, struct qv_error *err) {
    if (out) *out = NULL;
    if (!root || !r || !out)
        return qv_error_set(err, EINVAL, "schema create: NULL %s",
                            !root ? "root field" : !r ? "reservation" : "output");
    struct qv__path path;
    qv__path_init(&path);
    int rc = qv__field_check_tree(root, &path, 0, err);
    if (rc) return rc;
    struct qv__arena a = {NULL, 0};
    qv__arena_take(&a, sizeof(struct qv_schema), alignof(struct qv_schema));
    copy_tree(&a, NULL, root);
    struct qv_schema *s = NULL;
    rc = qv__schema_alloc(&a, r, &s, err);
    if (rc) return rc;
    copy_tree(&a, &s->root, root);
    *out = s;
    return 0;
}

int qv_schema_copy(const struct qv_schema *src, struct qv_reservation *r,
                   struct qv_schema **out, struct qv_error *err) {
    if (out) *out = NULL;
    if (!src) return qv_error_set(err, EINVAL, "schema copy: NULL source");
    return qv_schema_create(&src->root, r, out, err);
}

void qv_schema_destroy(struct qv_schema *schema) {
    if (schema) qv_free(schema->reservation, schema, schema->alloc_size);
}

/* ---- equality and lookup ---- */

static bool str_eq(const char *a, const char *b) {
    if (!a || !*a) return !b || !*b;
    return b && strcmp(a, b) == 0;
}

static bool kv_eq(const struct qv_kv *a, const struct qv_kv *b) {
    size_t akl = kv_len(a->key, a->key_len), bkl = kv_len(b->key, b->key_len);
    size_t avl = a->value ? kv_len(a->value, a->value_len) : 0;
    size_t bvl = b->value ? kv_len(b->value, b->value_len) : 0;
    return akl == bkl && avl == bvl && memcmp(a->key, b->key, akl) == 0 &&
           (avl == 0 || memcmp(a->value, b->value, avl) == 0);
}

bool qv_field_equal(const struct qv_field *a, const struct qv_field *b, unsigned flags) {
    if (a == b) return true;
    if (!a || !b || a->type != b->type || a->n_children != b->n_children) return false;
    if (!(flags & QV_EQUAL_IGNORE_NAMES) && !str_eq(a->name, b->name)) return false;
    if (!(flags & QV_EQUAL_IGNORE_NULLABILITY) && a->nullable != b->nullable) return false;
    switch (a->type) {
    case QV_TYPE_DECIMAL128:
        if (a->precision != b->precision || a->scale != b->scale) return false;
        break;
    case QV_TYPE_FIXED_BINARY:
        if (a->byte_width != b->byte_width) return false;
        break;
    case QV_TYPE_FIXED_LIST:
        if (a->list_size != b->list_size) return false;
        break;
    case QV_TYPE_TIMESTAMP:
        if (a->unit != b->unit || !str_eq(a->timezone, b->timezone)) return false;
        break;
    case QV_TYPE_MAP:
        if (a->keys_sorted != b->keys_sorted) return false;
        break;
    default: break;
    }
    if (!(flags & QV_EQUAL_IGNORE_METADATA)) {
        if (a->n_metadata != b->n_metadata) return false;
        for (int64_t i = 0; i < a->n_metadata; i++)
            if (!kv_eq(&a->metadata[i], &b->metadata[i])) return false;
    }
    for (int64_t i = 0; i < a->n_children; i++)
        if (!qv_field_equal(&a->children[i], &b->children[i], flags)) return false;
    return true;
}

bool qv_schema_equal(const struct qv_schema *a, const struct qv_schema *b, unsigned flags) {
    if (a == b) return true;
    return a && b && qv_field_equal(&a->root, &b->root, flags);
}

int64_t qv_field_child_index(const struct qv_field *field, const char *name) {
    if (!field || !name) return -1;
    for (int64_t i = 0; i < field->n_children; i++)
        if (str_eq(field->children[i].name, name)) return i;
    return -1;
}
