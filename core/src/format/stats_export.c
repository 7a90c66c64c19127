/* Statistics of a file or of one row group as Arrow data, in the layout of
 * Arrow's statistics schema (format/StatisticsSchema, experimental):
 *
 *   struct<
 *     column: int32 (nullable),
 *     statistics: map<key: dictionary<values: utf8, indices: int32>,
 *                     items: dense_union<...>> (not nullable)
 *   >
 *
 * One row for the whole table or row group (column null: the row count),
 * then one row per field of the schema in depth-first pre-order, which is the
 * column numbering of Arrow IPC record batches (a map counts its entries
 * struct, key and value; a list its item) and the reader's node numbering.
 * docs/statistics.md lists the keys and the union types.
 *
 * The structs are built by hand: the Arrow layer's owned trees do not know
 * dictionaries or unions. Each exported struct (schema, array) is one control
 * block in a reservation of its own, created in the reader's pool and freed
 * with the last node released, so the result outlives the reader and may be
 * released on any thread; its nodes count references on the block, so a
 * consumer may move children out and release them in any order. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "format/reader_internal.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

enum {
    K_ROW_COUNT,
    K_NULL_COUNT,
    K_MIN_EXACT,
    K_MIN_APPROX,
    K_MAX_EXACT,
    K_MAX_APPROX,
    K_COUNT_
};
static const char *const key_names[K_COUNT_] = {
    "ARROW:row_count:exact",   "ARROW:null_count:exact", "ARROW:min_value:exact",
    "ARROW:min_value:approximate", "ARROW:max_value:exact", "ARROW:max_value:approximate"};

/* A union holds at most 128 type codes (int8). */
#define MAX_TYPES 127

/* How a column's bounds are stored in the footer and exported. */
enum vclass { V_NONE = 0, V_SIGNED, V_UNSIGNED, V_FLOAT, V_BOOL, V_DECIMAL, V_BYTES };

static enum vclass class_of(const struct qv_field *f) {
    switch (f->type) {
    case QV_TYPE_INT8: case QV_TYPE_INT16: case QV_TYPE_INT32: case QV_TYPE_INT64:
    case QV_TYPE_DATE32: case QV_TYPE_TIMESTAMP:
        return V_SIGNED;
    case QV_TYPE_UINT8: case QV_TYPE_UINT16: case QV_TYPE_UINT32: case QV_TYPE_UINT64:
        return V_UNSIGNED;
    case QV_TYPE_FLOAT32: case QV_TYPE_FLOAT64: return V_FLOAT;
    case QV_TYPE_BOOL: return V_BOOL;
    case QV_TYPE_DECIMAL128: return V_DECIMAL;
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY:
    case QV_TYPE_FIXED_BINARY:
        return V_BYTES;
    default: return V_NONE; /* float16 has no statistics; nested types none */
    }
}

/* The union member type of a column's bounds: integers widen to int64 /
 * uint64 and floats to float64 (as the specification's own examples do);
 * dates, timestamps and decimals keep their logical type; strings are utf8
 * and every binary kind binary. */
static struct qv_field value_type(const struct qv_field *f) {
    struct qv_field t = {.nullable = true};
    switch (f->type) {
    case QV_TYPE_DATE32: t.type = QV_TYPE_DATE32; break;
    case QV_TYPE_TIMESTAMP:
        t.type = QV_TYPE_TIMESTAMP;
        t.unit = f->unit;
        t.timezone = f->timezone && f->timezone[0] ? f->timezone : NULL;
        break;
    case QV_TYPE_DECIMAL128:
        t.type = QV_TYPE_DECIMAL128;
        t.precision = f->precision;
        t.scale = f->scale;
        break;
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: t.type = QV_TYPE_UTF8; break;
    case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY: case QV_TYPE_FIXED_BINARY:
        t.type = QV_TYPE_BINARY;
        break;
    default:
        switch (class_of(f)) {
        case V_UNSIGNED: t.type = QV_TYPE_UINT64; break;
        case V_FLOAT: t.type = QV_TYPE_FLOAT64; break;
        case V_BOOL: t.type = QV_TYPE_BOOL; break;
        default: t.type = QV_TYPE_INT64; break;
        }
    }
    return t;
}

static bool same_type(const struct qv_field *a, const struct qv_field *b) {
    if (a->type != b->type) return false;
    if (a->type == QV_TYPE_TIMESTAMP)
        return a->unit == b->unit && (a->timezone ? b->timezone && !strcmp(a->timezone, b->timezone)
                                                  : !b->timezone);
    if (a->type == QV_TYPE_DECIMAL128) return a->precision == b->precision && a->scale == b->scale;
    return true;
}

/* ---- growable buffers in the export's reservation ---- */

struct vbuf {
    uint8_t *p;
    size_t len, cap;
};

struct utype {
    struct qv_field f;
    struct vbuf values; /* fixed-width values, bool bits, or int32 offsets */
    struct vbuf data;   /* bytes of utf8 / binary */
    int64_t n;
};

struct sx {
    struct qv_reservation *res;
    struct qv_error *err;
    struct vbuf column, column_valid, map_off, keys, type_ids, uoff;
    int64_t n_rows, n_entries;
    struct utype types[MAX_TYPES];
    int n_types;
    int64_t dropped; /* bounds left out for want of union type codes */
};

static int vb_reserve(struct sx *x, struct vbuf *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + more) cap *= 2;
    uint8_t *p = qv_realloc(x->res, b->p, b->cap, cap, x->err);
    if (!p) return ENOMEM;
    memset(p + b->cap, 0, cap - b->cap);
    b->p = p;
    b->cap = cap;
    return 0;
}

static int vb_put(struct sx *x, struct vbuf *b, const void *v, size_t n) {
    int rc = vb_reserve(x, b, n);
    if (rc) return rc;
    if (n) memcpy(b->p + b->len, v, n);
    b->len += n;
    return 0;
}

/* Bit i of a bitmap (grown bytes are zero, so only set bits are written). */
static int bit_put(struct sx *x, struct vbuf *b, int64_t i, bool v) {
    size_t need = (size_t)(i / 8 + 1);
    if (need > b->len) {
        int rc = vb_reserve(x, b, need - b->len);
        if (rc) return rc;
        b->len = need;
    }
    if (v) qv_bit_set(b->p, i);
    return 0;
}

static void vb_free(struct sx *x, struct vbuf *b) {
    if (b->p) qv_free(x->res, b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- bounds ---- */

struct bound {
    int64_t i;
    uint64_t u;
    double d;
    i128 dec;
    uint8_t b;
    uint8_t bytes[QV__MAX_STAT_BYTES + 4];
    uint32_t n;
};

/* What is known of one node's bounds so far. */
struct agg {
    int64_t null_count;
    bool min_lost, max_lost;      /* some part had values but no usable bound */
    bool have_min, have_max;
    bool min_approx, max_approx;
    bool nan_seen;
    struct bound min, max;
};

static int cmp_bytes(const uint8_t *a, uint32_t an, const uint8_t *b, uint32_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int cmp_bound(enum vclass c, const struct bound *a, const struct bound *b) {
    switch (c) {
    case V_SIGNED: return (a->i > b->i) - (a->i < b->i);
    case V_UNSIGNED: return (a->u > b->u) - (a->u < b->u);
    case V_FLOAT: return (a->d > b->d) - (a->d < b->d);
    case V_BOOL: return (a->b > b->b) - (a->b < b->b);
    case V_DECIMAL: return (a->dec > b->dec) - (a->dec < b->dec);
    default: return cmp_bytes(a->bytes, a->n, b->bytes, b->n);
    }
}

static uint64_t get_u64le(const uint8_t *p) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

/* Length of the longest prefix of p[0, n) made of whole, valid UTF-8
 * characters (no overlongs, surrogates or code points past U+10FFFF). */
static uint32_t utf8_valid_prefix(const uint8_t *p, uint32_t n) {
    uint32_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        uint32_t len, cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1Fu;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0Fu;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07u;
        else return i;
        if (i + len > n) return i;
        for (uint32_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (p[i + k] & 0x3Fu);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return i;
        i += len;
    }
    return n;
}

static uint32_t utf8_encode(uint32_t cp, uint8_t *out) {
    if (cp < 0x80) { out[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* The smallest bound above every string that starts with the prefix b
 * (a truncated max): the prefix with its last character (byte, for binary)
 * incremented, dropping trailing characters that cannot be. Bytewise order
 * is code point order in UTF-8, and UTF-8 is prefix-free, so the result is
 * greater than any extension of the prefix. False when none exists (the
 * prefix is all U+10FFFF / 0xFF, or empty). */
static bool successor(struct bound *b, bool utf8) {
    if (!utf8) {
        while (b->n > 0) {
            if (b->bytes[b->n - 1] != 0xFF) {
                b->bytes[b->n - 1]++;
                return true;
            }
            b->n--;
        }
        return false;
    }
    b->n = utf8_valid_prefix(b->bytes, b->n);
    while (b->n > 0) {
        uint32_t start = b->n - 1;
        while (start > 0 && (b->bytes[start] & 0xC0) == 0x80) start--;
        uint32_t cp, len = b->n - start;
        uint8_t c = b->bytes[start];
        cp = len == 1 ? c : len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
        for (uint32_t k = 1; k < len; k++) cp = cp << 6 | (b->bytes[start + k] & 0x3Fu);
        b->n = start;
        if (cp == 0x10FFFF) continue;
        cp = cp + 1 == 0xD800 ? 0xE000 : cp + 1;
        b->n += utf8_encode(cp, b->bytes + start);
        return true;
    }
    return false;
}

/* Reads one footer bound of class c; false when its length does not fit the
 * column (a footer written by something else; the bound is not used). */
static bool read_bound(enum vclass c, const struct qv_field *f, const uint8_t *p, uint32_t n,
                       struct bound *out) {
    switch (c) {
    case V_SIGNED: if (n != 8) return false; out->i = (int64_t)get_u64le(p); return true;
    case V_UNSIGNED: if (n != 8) return false; out->u = get_u64le(p); return true;
    case V_FLOAT: {
        if (n != 8) return false;
        uint64_t bits = get_u64le(p);
        memcpy(&out->d, &bits, 8);
        return out->d == out->d; /* a NaN bound is not a bound */
    }
    case V_BOOL: if (n != 1 || p[0] > 1) return false; out->b = p[0]; return true;
    case V_DECIMAL:
        if (n == 8 && f->precision <= 18) {
            out->dec = (int64_t)get_u64le(p);
            return true;
        }
        if (n == 16) {
            uint64_t lo = get_u64le(p), hi = get_u64le(p + 8);
            out->dec = (i128)(((u128)hi << 64) | lo);
            return true;
        }
        return false;
    case V_BYTES:
        if (n > QV__MAX_STAT_BYTES) return false;
        if (n) memcpy(out->bytes, p, n);
        out->n = n;
        return true;
    default: return false;
    }
}

static void merge(enum vclass c, struct agg *a, const struct bound *b, bool is_min, bool approx) {
    struct bound *cur = is_min ? &a->min : &a->max;
    bool *have = is_min ? &a->have_min : &a->have_max;
    if (!*have || (is_min ? cmp_bound(c, b, cur) < 0 : cmp_bound(c, b, cur) > 0)) *cur = *b;
    *have = true;
    if (approx) *(is_min ? &a->min_approx : &a->max_approx) = true;
}

/* Adds one chunk's statistics to a node's aggregate. */
static void add_chunk(const struct qv_field *f, const struct qv_chunk_info *ci, struct agg *a) {
    /* A null-type field has no validity in the file (its chunks record no
     * nulls), yet every one of its slots is null. */
    a->null_count += f->type == QV_TYPE_NULL ? ci->length : ci->null_count;
    enum vclass c = class_of(f);
    if (c == V_NONE || ci->length - ci->null_count <= 0) return;
    bool utf8 = f->type == QV_TYPE_UTF8 || f->type == QV_TYPE_LARGE_UTF8;
    if (c == V_FLOAT) {
        /* NaN orders above every number (as in Arrow's sort, Spark, DuckDB,
         * PostgreSQL); the footer's bounds skip NaN and count them apart. */
        if (!ci->has_nan_count) a->max_lost = true;
        else if (ci->nan_count > 0) a->nan_seen = true;
        if (!ci->has_min_max) {
            if (!ci->has_nan_count || ci->nan_count < ci->length - ci->null_count)
                a->min_lost = a->max_lost = true;
            return;
        }
    } else if (!ci->has_min_max) {
        a->min_lost = a->max_lost = true;
        return;
    }
    struct bound b;
    memset(&b, 0, sizeof b);
    if (!read_bound(c, f, ci->min, ci->min_len, &b)) {
        a->min_lost = true;
    } else {
        bool approx = ci->min_truncated != 0;
        if (utf8) {
            /* A shorter prefix is still a lower bound. */
            uint32_t ok = utf8_valid_prefix(b.bytes, b.n);
            if (ok < b.n) approx = true, b.n = ok;
        }
        merge(c, a, &b, true, approx);
    }
    memset(&b, 0, sizeof b);
    if (!read_bound(c, f, ci->max, ci->max_len, &b)) {
        a->max_lost = true;
    } else {
        bool approx = ci->max_truncated != 0;
        if (utf8 && utf8_valid_prefix(b.bytes, b.n) < b.n) approx = true;
        /* A truncated max is a prefix of the true max, below it: the bound
         * exported is its successor, above every value. */
        if (approx && !successor(&b, utf8)) a->max_lost = true;
        else merge(c, a, &b, false, approx);
    }
}

/* ---- rows ---- */

static int type_code(struct sx *x, const struct qv_field *t) {
    for (int k = 0; k < x->n_types; k++)
        if (same_type(&x->types[k].f, t)) return k;
    if (x->n_types == MAX_TYPES) return -1;
    struct utype *u = &x->types[x->n_types];
    memset(u, 0, sizeof *u);
    u->f = *t;
    if (t->type == QV_TYPE_UTF8 || t->type == QV_TYPE_BINARY) {
        int32_t zero = 0;
        if (vb_put(x, &u->values, &zero, 4)) return -2;
    }
    return x->n_types++;
}

static int add_entry(struct sx *x, int key, int code) {
    int32_t k = key, off = (int32_t)x->types[code].n;
    int8_t tc = (int8_t)code;
    int rc = vb_put(x, &x->keys, &k, 4);
    if (!rc) rc = vb_put(x, &x->type_ids, &tc, 1);
    if (!rc) rc = vb_put(x, &x->uoff, &off, 4);
    if (!rc) x->n_entries++;
    return rc;
}

static int add_int64(struct sx *x, int key, int64_t v) {
    int rc = add_entry(x, key, 0);
    if (!rc) rc = vb_put(x, &x->types[0].values, &v, 8);
    if (!rc) x->types[0].n++;
    return rc;
}

/* A bound of class c as a value of union member `code`. */
static int add_bound(struct sx *x, int key, int code, enum vclass c, const struct bound *b) {
    struct utype *u = &x->types[code];
    int rc = add_entry(x, key, code);
    if (rc) return rc;
    switch (u->f.type) {
    case QV_TYPE_DATE32: {
        int32_t v = (int32_t)b->i;
        rc = vb_put(x, &u->values, &v, 4);
        break;
    }
    case QV_TYPE_BOOL:
        rc = bit_put(x, &u->values, u->n, b->b);
        break;
    case QV_TYPE_DECIMAL128: {
        uint64_t w[2] = {(uint64_t)b->dec, (uint64_t)((u128)b->dec >> 64)};
        rc = vb_put(x, &u->values, w, 16);
        break;
    }
    case QV_TYPE_UTF8: case QV_TYPE_BINARY: {
        rc = vb_put(x, &u->data, b->bytes, b->n);
        int32_t end = (int32_t)u->data.len;
        if (!rc) rc = u->data.len > INT32_MAX ? qv_error_set(x->err, EOVERFLOW, "statistics: "
                                                             "bounds over 2 GiB")
                                              : vb_put(x, &u->values, &end, 4);
        break;
    }
    default:
        rc = vb_put(x, &u->values, c == V_UNSIGNED ? (const void *)&b->u
                                   : c == V_FLOAT  ? (const void *)&b->d
                                                   : (const void *)&b->i, 8);
        break;
    }
    if (!rc) u->n++;
    return rc;
}

static int end_row(struct sx *x, int32_t column, bool valid) {
    int rc = vb_put(x, &x->column, &column, 4);
    if (!rc) rc = bit_put(x, &x->column_valid, x->n_rows, valid);
    if (rc) return rc;
    x->n_rows++;
    int32_t end = (int32_t)x->n_entries;
    return vb_put(x, &x->map_off, &end, 4);
}

static int node_row(struct sx *x, int32_t node, const struct qv_field *f, const struct agg *a) {
    int rc = add_int64(x, K_NULL_COUNT, a->null_count);
    enum vclass c = class_of(f);
    if (rc || c == V_NONE) return rc ? rc : end_row(x, node, true);
    struct bound nan;
    memset(&nan, 0, sizeof nan);
    nan.d = __builtin_nan("");
    /* With NaN present, NaN is the max (and the min when nothing else is). */
    const struct bound *mn = a->have_min ? &a->min : a->nan_seen ? &nan : NULL;
    const struct bound *mx = a->nan_seen ? &nan : a->have_max ? &a->max : NULL;
    bool min_ok = mn && !a->min_lost, max_ok = mx && (a->nan_seen || !a->max_lost);
    bool max_approx = !a->nan_seen && a->max_approx;
    if (min_ok || max_ok) {
        struct qv_field t = value_type(f);
        int code = type_code(x, &t);
        if (code == -2) return ENOMEM;
        if (code < 0) {
            x->dropped++;
        } else {
            if (min_ok) rc = add_bound(x, a->min_approx ? K_MIN_APPROX : K_MIN_EXACT, code, c, mn);
            if (!rc && max_ok) rc = add_bound(x, max_approx ? K_MAX_APPROX : K_MAX_EXACT, code, c, mx);
        }
    }
    return rc ? rc : end_row(x, node, true);
}

/* ---- export: one control block per struct ---- */

struct xblock {
    atomic_int refs;
    struct qv_reservation *res;
    size_t size;
    int n_bufs;
    void **bufs;
    size_t *sizes;
    /* Run after the reservation is destroyed (qv__stats_array_on_free). */
    void (*on_free)(void *);
    void *on_free_arg;
};

static void block_unref(struct xblock *b) {
    if (atomic_fetch_sub(&b->refs, 1) != 1) return;
    struct qv_reservation *res = b->res;
    void (*fn)(void *) = b->on_free;
    void *arg = b->on_free_arg;
    for (int i = 0; i < b->n_bufs; i++)
        if (b->bufs[i]) qv_free(res, b->bufs[i], b->sizes[i]);
    qv_free(res, b, b->size);
    qv_reservation_destroy(res);
    if (fn) fn(arg);
}

static void array_release(struct ArrowArray *a) {
    if (!a->release) return;
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release) a->children[i]->release(a->children[i]);
    if (a->dictionary && a->dictionary->release) a->dictionary->release(a->dictionary);
    struct xblock *b = a->private_data;
    a->release = NULL;
    block_unref(b);
}

bool qv__stats_array_on_free(struct ArrowArray *root, void (*fn)(void *), void *arg,
                             void (**prev_fn)(void *), void **prev_arg) {
    if (!root || root->release != array_release) return false;
    struct xblock *b = root->private_data;
    if (prev_fn) *prev_fn = b->on_free;
    if (prev_arg) *prev_arg = b->on_free_arg;
    b->on_free = fn;
    b->on_free_arg = arg;
    return true;
}

static void schema_release(struct ArrowSchema *s) {
    if (!s->release) return;
    for (int64_t i = 0; i < s->n_children; i++)
        if (s->children[i]->release) s->children[i]->release(s->children[i]);
    if (s->dictionary && s->dictionary->release) s->dictionary->release(s->dictionary);
    struct xblock *b = s->private_data;
    s->release = NULL;
    block_unref(b);
}

/* Node numbering of both trees: root, column, statistics, entries, key,
 * items, the key dictionary, then one per union member. */
enum { N_ROOT, N_COLUMN, N_STATS, N_ENTRIES, N_KEY, N_ITEMS, N_DICT, N_FIXED_ };

/* Union members are named by their type. Arrow Java keys a union's children
 * by name, so a later member of a type already present (another timestamp
 * unit or zone, another decimal precision) gets its type code appended
 * ("timestamp_3"); otherwise the importer merges them and finds fewer
 * children than the array has. */
#define MEMBER_NAME_CAP 48
static void member_name(const struct sx *x, int t, char buf[MEMBER_NAME_CAP]) {
    const char *base = qv_type_name(x->types[t].f.type);
    for (int u = 0; u < t; u++)
        if (x->types[u].f.type == x->types[t].f.type) {
            snprintf(buf, MEMBER_NAME_CAP, "%s_%d", base, t);
            return;
        }
    snprintf(buf, MEMBER_NAME_CAP, "%s", base);
}

static int new_res(const struct qv_reader *rd, const char *name, struct qv_reservation **out,
                   struct qv_error *err) {
    struct qv_reservation_options ro = {.name = name};
    return qv_reservation_create(qv_reservation_pool(rd->r), &ro, out, err);
}

static int export_schema(const struct qv_reader *rd, struct sx *x, struct ArrowSchema *out,
                         struct qv_error *err) {
    int n = N_FIXED_ + x->n_types;
    static const char *const names[N_FIXED_] = {"", "column", "statistics", "entries",
                                                 "key", "items", ""};
    char fmt_items[8 + 5 * MAX_TYPES];
    size_t k = (size_t)snprintf(fmt_items, sizeof fmt_items, "+ud:");
    for (int t = 0; t < x->n_types; t++)
        k += (size_t)snprintf(fmt_items + k, sizeof fmt_items - k, t ? ",%d" : "%d", t);
    const char *fmts[N_FIXED_] = {"+s", "i", "+m", "+s", "i", fmt_items, "u"};
    /* Strings first, to size the block. */
    size_t strings = 0;
    for (int i = 0; i < N_FIXED_; i++) strings += strlen(names[i]) + strlen(fmts[i]) + 2;
    char member[MEMBER_NAME_CAP];
    for (int t = 0; t < x->n_types; t++) {
        member_name(x, t, member);
        strings += strlen(member) + 1 + qv_arrow_format_emit(&x->types[t].f, NULL, 0) + 1;
    }
    size_t size = sizeof(struct xblock) + (size_t)n * (sizeof(struct ArrowSchema) +
                                                       sizeof(struct ArrowSchema *)) + strings;
    struct qv_reservation *res;
    int rc = new_res(rd, "statistics schema", &res, err);
    if (rc) return rc;
    struct xblock *b = qv_calloc(res, size, err);
    if (!b) {
        qv_reservation_destroy(res);
        return ENOMEM;
    }
    b->res = res;
    b->size = size;
    atomic_init(&b->refs, n);
    struct ArrowSchema *s = (struct ArrowSchema *)(b + 1);
    struct ArrowSchema **ptrs = (struct ArrowSchema **)(s + n);
    char *str = (char *)(ptrs + n);
    for (int i = 0; i < n; i++) {
        ptrs[i] = &s[i];
        const struct qv_field *t = i < N_FIXED_ ? NULL : &x->types[i - N_FIXED_].f;
        if (t) member_name(x, i - N_FIXED_, member);
        const char *name = t ? member : names[i];
        size_t ln = strlen(name) + 1;
        memcpy(str, name, ln);
        s[i].name = str;
        str += ln;
        /* A timestamp's format carries its zone, of any length. */
        size_t lf = t ? qv_arrow_format_emit(t, NULL, 0) + 1 : strlen(fmts[i]) + 1;
        if (t) qv_arrow_format_emit(t, str, lf);
        else memcpy(str, fmts[i], lf);
        s[i].format = str;
        str += lf;
        s[i].release = schema_release;
        s[i].private_data = b;
    }
    s[N_COLUMN].flags = ARROW_FLAG_NULLABLE;
    s[N_ROOT].n_children = 2;
    s[N_ROOT].children = &ptrs[N_COLUMN];
    s[N_STATS].n_children = 1;
    s[N_STATS].children = &ptrs[N_ENTRIES];
    s[N_ENTRIES].n_children = 2;
    s[N_ENTRIES].children = &ptrs[N_KEY];
    s[N_KEY].dictionary = &s[N_DICT];
    s[N_ITEMS].n_children = x->n_types;
    s[N_ITEMS].children = &ptrs[N_FIXED_];
    for (int t = 0; t < x->n_types; t++) s[N_FIXED_ + t].flags = ARROW_FLAG_NULLABLE;
    /* The dictionary's own name is not a field name. */
    s[N_DICT].name = NULL;
    /* The root moves to the caller's struct (its slot in the block is left
     * unused): n nodes in all hold a count. */
    *out = s[N_ROOT];
    return 0;
}

/* Moves a vbuf's memory into the block's buffer list (same reservation). */
static const void *take(struct xblock *b, struct vbuf *v) {
    b->bufs[b->n_bufs] = v->p;
    b->sizes[b->n_bufs] = v->cap;
    b->n_bufs++;
    const void *p = v->p ? (const void *)v->p : qv_arrow_zero_buffer();
    v->p = NULL;
    v->len = v->cap = 0;
    return p;
}

static int export_array(struct sx *x, struct ArrowArray *out, struct qv_error *err) {
    /* The key dictionary: the fixed list of key names. */
    struct vbuf dict_off = {0}, dict_data = {0};
    int32_t o = 0;
    int rc = vb_put(x, &dict_off, &o, 4);
    for (int k = 0; !rc && k < K_COUNT_; k++) {
        rc = vb_put(x, &dict_data, key_names[k], strlen(key_names[k]));
        o = (int32_t)dict_data.len;
        if (!rc) rc = vb_put(x, &dict_off, &o, 4);
    }
    int n = N_FIXED_ + x->n_types;
    int max_bufs = 12 + 2 * x->n_types;
    size_t size = sizeof(struct xblock) +
                  (size_t)n * (sizeof(struct ArrowArray) + sizeof(struct ArrowArray *) +
                               3 * sizeof(void *)) +
                  (size_t)max_bufs * (sizeof(void *) + sizeof(size_t));
    struct xblock *b = rc ? NULL : qv_calloc(x->res, size, err);
    if (!b) {
        vb_free(x, &dict_off);
        vb_free(x, &dict_data);
        return ENOMEM;
    }
    b->res = x->res;
    b->size = size;
    atomic_init(&b->refs, n);
    struct ArrowArray *a = (struct ArrowArray *)(b + 1);
    struct ArrowArray **ptrs = (struct ArrowArray **)(a + n);
    const void **bp = (const void **)(ptrs + n);
    b->bufs = (void **)(bp + 3 * n);
    b->sizes = (size_t *)(b->bufs + max_bufs);
    for (int i = 0; i < n; i++) {
        ptrs[i] = &a[i];
        a[i].buffers = bp + 3 * i;
        a[i].release = array_release;
        a[i].private_data = b;
    }
    a[N_ROOT].length = x->n_rows;
    a[N_ROOT].n_buffers = 1;
    a[N_ROOT].n_children = 2;
    a[N_ROOT].children = &ptrs[N_COLUMN];

    a[N_COLUMN].length = x->n_rows;
    a[N_COLUMN].null_count = x->n_rows - qv_bits_count(x->column_valid.p, 0, x->n_rows);
    a[N_COLUMN].n_buffers = 2;
    a[N_COLUMN].buffers[0] = take(b, &x->column_valid);
    a[N_COLUMN].buffers[1] = take(b, &x->column);

    a[N_STATS].length = x->n_rows;
    a[N_STATS].n_buffers = 2;
    a[N_STATS].buffers[1] = take(b, &x->map_off);
    a[N_STATS].n_children = 1;
    a[N_STATS].children = &ptrs[N_ENTRIES];

    a[N_ENTRIES].length = x->n_entries;
    a[N_ENTRIES].n_buffers = 1;
    a[N_ENTRIES].n_children = 2;
    a[N_ENTRIES].children = &ptrs[N_KEY];

    a[N_KEY].length = x->n_entries;
    a[N_KEY].n_buffers = 2;
    a[N_KEY].buffers[1] = take(b, &x->keys);
    a[N_KEY].dictionary = &a[N_DICT];

    a[N_ITEMS].length = x->n_entries;
    a[N_ITEMS].n_buffers = 2; /* type ids, offsets: unions have no validity */
    a[N_ITEMS].buffers[0] = take(b, &x->type_ids);
    a[N_ITEMS].buffers[1] = take(b, &x->uoff);
    a[N_ITEMS].n_children = x->n_types;
    a[N_ITEMS].children = &ptrs[N_FIXED_];

    a[N_DICT].length = K_COUNT_;
    a[N_DICT].n_buffers = 3;
    a[N_DICT].buffers[1] = take(b, &dict_off);
    a[N_DICT].buffers[2] = take(b, &dict_data);

    for (int t = 0; t < x->n_types; t++) {
        struct utype *u = &x->types[t];
        struct ArrowArray *c = &a[N_FIXED_ + t];
        c->length = u->n;
        bool var = u->f.type == QV_TYPE_UTF8 || u->f.type == QV_TYPE_BINARY;
        c->n_buffers = var ? 3 : 2;
        c->buffers[1] = take(b, &u->values);
        if (var) c->buffers[2] = take(b, &u->data);
    }
    *out = a[N_ROOT]; /* as for the schema: the root moves out of the block */
    return 0;
}

static void sx_free(struct sx *x) {
    vb_free(x, &x->column);
    vb_free(x, &x->column_valid);
    vb_free(x, &x->map_off);
    vb_free(x, &x->keys);
    vb_free(x, &x->type_ids);
    vb_free(x, &x->uoff);
    for (int t = 0; t < x->n_types; t++) {
        vb_free(x, &x->types[t].values);
        vb_free(x, &x->types[t].data);
    }
}

int qv_reader_export_statistics(const struct qv_reader *reader, int64_t row_group,
                                struct ArrowSchema *schema_out, struct ArrowArray *array_out,
                                struct qv_error *err) {
    if (schema_out) schema_out->release = NULL;
    if (array_out) array_out->release = NULL;
    if (!reader || !schema_out || !array_out)
        return qv_error_set(err, EINVAL, "export statistics: NULL %s",
                            !reader ? "reader" : !schema_out ? "schema" : "array");
    int64_t n_rg = qv_reader_num_row_groups(reader);
    if (row_group < -1 || row_group >= n_rg)
        return qv_error_set(err, EINVAL,
                            "file '%s': export statistics: row group %lld out of range (%lld row "
                            "groups; -1 is the whole file)",
                            qv_reader_path(reader), (long long)row_group, (long long)n_rg);
    struct sx *x = NULL;
    struct qv_reservation *res;
    int rc = new_res(reader, "statistics", &res, err);
    if (rc) return rc;
    x = qv_calloc(res, sizeof *x, err);
    if (!x) {
        qv_reservation_destroy(res);
        return ENOMEM;
    }
    x->res = res;
    x->err = err;
    struct qv_field i64 = {.type = QV_TYPE_INT64, .nullable = true};
    rc = type_code(x, &i64) == 0 ? 0 : ENOMEM; /* member 0: every count */
    int32_t zero = 0;
    if (!rc) rc = vb_put(x, &x->map_off, &zero, 4);
    int64_t rows = row_group < 0 ? qv_reader_num_rows(reader)
                                 : qv_reader_row_group_rows(reader, row_group);
    if (!rc) rc = add_int64(x, K_ROW_COUNT, rows);
    if (!rc) rc = end_row(x, 0, false);
    int64_t first = row_group < 0 ? 0 : row_group, last = row_group < 0 ? n_rg : row_group + 1;
    int32_t n_nodes = qv_reader_num_nodes(reader);
    for (int32_t node = 0; !rc && node < n_nodes; node++) {
        const struct qv_field *f = qv_reader_node_field(reader, node);
        struct agg a;
        memset(&a, 0, sizeof a);
        for (int64_t g = first; !rc && g < last; g++) {
            struct qv_chunk_info ci;
            rc = qv_reader_chunk_info(reader, g, node, &ci, err);
            if (!rc) add_chunk(f, &ci, &a);
        }
        if (!rc) rc = node_row(x, node, f, &a);
    }
    if (!rc) rc = export_schema(reader, x, schema_out, err);
    if (!rc) {
        rc = export_array(x, array_out, err);
        if (rc) schema_out->release(schema_out);
    }
    sx_free(x);
    qv_free(res, x, sizeof *x);
    /* On success the array's block holds the reservation. */
    if (rc) {
        if (rc == ENOMEM) qv_error_wrap(err, rc, "file '%s': export statistics: ", qv_reader_path(reader));
        qv_reservation_destroy(res);
    }
    return rc;
}
