/* The batch builder: creation, growth, the row-at-a-time slow paths,
 * poisoning, export and reset.
 *
 * Every field of the schema (nested ones included) gets one appender, all in
 * one allocation, a node's children side by side; its kind is resolved here
 * once, so the inline fast paths in arrow.h only compare a kind and a
 * capacity.
 *
 * Poisoning costs the fast paths nothing: it sets every appender's `limit`
 * and `data_limit` to 0, so the next append of any kind falls into its slow
 * path, which finds the builder poisoned and returns the poisoning code.
 *
 * Capacity across batches. An exported batch takes its buffers with it, so
 * the next batch allocates fresh ones; the question is how big. Each buffer
 * remembers `need`: the capacity doubling from the configured start would
 * have reached for the batch just finished (start * 2^k >= what was used).
 * The next batch starts at
 *
 *     min(need_last, max(carry_limit, need_before_last))      (at least start)
 *
 * - Same-size batches: need_last is exactly what the batch needs, so from
 *   the second batch on nothing grows, i.e. no reallocation after the first
 *   batch (when need_last exceeds carry_limit, from the third: the size must
 *   be seen twice before it is trusted beyond the limit).
 * - One giant batch (a 50 MB string): the next batch starts at no more than
 *   carry_limit, and the one after that at what the small batch needed, so
 *   the giant size is never allocated again unless it recurs.
 * Reset (dropping a batch) applies the same rule and frees every buffer. */
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "arrow/builder_internal.h"

#define DEFAULT_INITIAL_CAPACITY 64
#define DEFAULT_CARRY_LIMIT (UINT64_C(4) << 20)

/* ---- sizes ---- */

static bool has_offsets32(int32_t k) { return k == QV__K_VAR32 || k == QV__K_LIST32 || k == QV__K_MAP; }
static bool has_offsets64(int32_t k) { return k == QV__K_VAR64 || k == QV__K_LIST64; }

/* Bytes of the values (or offsets) buffer for `cap` slots; 0 when the kind
 * has no such buffer. False when the size does not fit in memory at all. */
static bool values_bytes(const struct qv_appender *a, int64_t cap, size_t *out) {
    uint64_t per;
    switch (a->kind) {
    case QV__K_NULL:
    case QV__K_STRUCT:
    case QV__K_FIXLIST: *out = 0; return true;
    case QV__K_BOOL: *out = (size_t)qv_bytes_for_bits(cap); return true;
    default: {
        /* Offsets buffers hold one entry more than there are slots. */
        uint64_t slots = (uint64_t)cap, n;
        if (has_offsets32(a->kind)) per = 4, slots++;
        else if (has_offsets64(a->kind)) per = 8, slots++;
        else per = (uint64_t)a->width;
        if (qv_mul_overflow_u64(slots, per, &n) || n > (UINT64_C(1) << 62)) return false;
        *out = (size_t)n;
        return true;
    }
    }
}

/* Bits one slot costs in its main buffer, for turning the carry limit (in
 * bytes) into slots. */
static int64_t slot_bits(const struct qv_appender *a) {
    switch (a->kind) {
    case QV__K_NULL:
    case QV__K_BOOL:
    case QV__K_STRUCT:
    case QV__K_FIXLIST: return 1;
    default:
        if (has_offsets32(a->kind)) return 32;
        if (has_offsets64(a->kind)) return 64;
        return a->width > 0 ? (int64_t)a->width * 8 : 1;
    }
}

static size_t padded(size_t n) { return qv_align_up(n ? n : 1); }

/* ---- messages and poisoning ---- */

const char *qv__appender_path(const struct qv_appender *a, char *buf, size_t cap) {
    const struct qv_appender *chain[QV__MAX_NESTING + 2];
    int n = 0;
    for (const struct qv_appender *p = a; p && p->parent && n < QV__MAX_NESTING + 2; p = p->parent)
        chain[n++] = p;
    struct qv__path path;
    qv__path_init(&path);
    while (n > 0) qv__path_push(&path, chain[--n]->field->name);
    snprintf(buf, cap, "%s", qv__path_str(&path));
    return buf;
}

int qv__builder_poison(struct qv_builder *b, int code, const char *fmt, ...) {
    if (!b->poisoned) {
        char msg[QV_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        qv_error_set(&b->error, code, "builder: %s", msg);
        b->poisoned = code;
    }
    for (int64_t i = 0; i < b->n_nodes; i++) {
        b->nodes[i].limit = 0;
        b->nodes[i].data_limit = 0;
    }
    return b->poisoned;
}

static const char *kind_fn(int32_t k) {
    switch (k) {
    case QV__K_BOOL: return "bool";
    case QV__K_I8: return "int8";
    case QV__K_I16: return "int16";
    case QV__K_I32: return "int32/date32";
    case QV__K_I64: return "int64/timestamp";
    case QV__K_U8: return "uint8";
    case QV__K_U16: return "uint16";
    case QV__K_U32: return "uint32";
    case QV__K_U64: return "uint64";
    case QV__K_F16: return "float16";
    case QV__K_F32: return "float32";
    case QV__K_F64: return "float64";
    case QV__K_DEC: return "decimal";
    case QV__K_VAR32:
    case QV__K_VAR64: return "string/binary";
    case QV__K_FIXBIN: return "fixed_binary";
    case QV__K_STRUCT: return "struct";
    case QV__K_LIST32:
    case QV__K_LIST64:
    case QV__K_FIXLIST: return "list";
    case QV__K_MAP: return "map";
    default: return "null";
    }
}

/* Slow-path entry: poisoned? right kind? */
static int enter(struct qv_appender *a, bool kind_ok, const char *what) {
    struct qv_builder *b = a->builder;
    if (b->poisoned) return b->poisoned;
    if (!kind_ok) {
        char path[256];
        return qv__builder_poison(b, EINVAL, "column '%s': a %s value appended to a %s field",
                                  qv__appender_path(a, path, sizeof path), what,
                                  qv_type_name(a->field->type));
    }
    return 0;
}

static int poison_nomem(struct qv_appender *a, const char *what, size_t bytes,
                        const struct qv_error *why) {
    char path[256];
    return qv__builder_poison(a->builder, ENOMEM, "column '%s': growing the %s buffer to %zu bytes: %s",
                              qv__appender_path(a, path, sizeof path), what, bytes, why->message);
}

/* ---- growth ---- */

int qv__appender_reserve(struct qv_appender *a, int64_t need) {
    if (need <= a->capacity) return 0;
    struct qv_builder *b = a->builder;
    int64_t cap = a->capacity ? a->capacity : a->start_capacity;
    while (cap < need) {
        if (cap > INT64_MAX / 4) {
            char path[256];
            return qv__builder_poison(b, EOVERFLOW, "column '%s': %lld slots in one batch",
                                      qv__appender_path(a, path, sizeof path), (long long)need);
        }
        cap *= 2;
    }
    size_t raw;
    if (!values_bytes(a, cap, &raw)) {
        char path[256];
        return qv__builder_poison(b, EOVERFLOW, "column '%s': %lld slots of %s do not fit in memory",
                                  qv__appender_path(a, path, sizeof path), (long long)cap,
                                  qv_type_name(a->field->type));
    }
    struct qv_error e = {0};
    size_t vb = padded(raw);
    if (raw && vb > a->values_size) {
        uint8_t *p = qv_realloc(b->res, a->values, a->values_size, vb, &e);
        if (!p) return poison_nomem(a, "values", vb, &e);
        if (!a->values) {
            /* A fresh offsets buffer starts with offset 0; bool bits are
             * kept zero past `length` so that true only sets a bit. */
            if (a->kind == QV__K_BOOL) memset(p, 0, vb);
            else if (has_offsets32(a->kind)) memset(p, 0, 4);
            else if (has_offsets64(a->kind)) memset(p, 0, 8);
        } else if (a->kind == QV__K_BOOL) {
            memset(p + a->values_size, 0, vb - a->values_size);
        }
        a->values = p;
        a->values_size = vb;
    }
    if (a->validity) {
        size_t nb = padded((size_t)qv_bytes_for_bits(cap));
        if (nb > a->validity_size) {
            uint8_t *p = qv_realloc(b->res, a->validity, a->validity_size, nb, &e);
            if (!p) return poison_nomem(a, "validity", nb, &e);
            memset(p + a->validity_size, 0, nb - a->validity_size);
            a->validity = p;
            a->validity_size = nb;
        }
    }
    a->capacity = cap;
    a->limit = cap;
    return 0;
}

int qv__appender_reserve_data(struct qv_appender *a, int64_t need) {
    if (need <= a->data_capacity) return 0;
    struct qv_builder *b = a->builder;
    int64_t max = a->kind == QV__K_VAR32 ? INT32_MAX : INT64_MAX / 2;
    if (need > max) {
        char path[256];
        return qv__builder_poison(
            b, EOVERFLOW,
            "column '%s': %lld bytes of %s data in one batch exceed the %lld that its 32-bit "
            "offsets can address; use the large_ type or smaller batches",
            qv__appender_path(a, path, sizeof path), (long long)need,
            qv_type_name(a->field->type), (long long)max);
    }
    int64_t cap = a->data_capacity ? a->data_capacity : a->start_data;
    while (cap < need) cap = cap > max / 2 ? max : cap * 2;
    struct qv_error e = {0};
    size_t nb = padded((size_t)cap);
    uint8_t *p = qv_realloc(b->res, a->data, a->data_size, nb, &e);
    if (!p) return poison_nomem(a, "data", nb, &e);
    a->data = p;
    a->data_size = nb;
    a->data_capacity = cap;
    a->data_limit = cap;
    return 0;
}

int qv__appender_activate_validity(struct qv_appender *a) {
    struct qv_error e = {0};
    size_t nb = padded((size_t)qv_bytes_for_bits(a->capacity));
    uint8_t *p = qv_alloc(a->builder->res, nb, &e);
    if (!p) return poison_nomem(a, "validity", nb, &e);
    memset(p, 0, nb);
    qv_bits_fill(p, 0, a->length, 1);
    a->validity = p;
    a->validity_size = nb;
    return 0;
}

/* ---- slow paths of the inline appends ---- */

int qv__append_fixed_slow(struct qv_appender *a, int32_t kind, const void *value) {
    int rc = enter(a, a->kind == kind, kind_fn(kind));
    if (!rc) rc = qv__appender_reserve(a, a->length + 1);
    if (rc) return rc;
    if (kind == QV__K_BOOL) {
        if (*(const uint8_t *)value) qv_bit_set(a->values, a->length);
    } else if (a->width > 0) {
        memcpy(a->values + a->length * a->width, value, (size_t)a->width);
    }
    if (a->validity) qv_bit_set(a->validity, a->length);
    a->length++;
    return 0;
}

int qv__append_bytes_slow(struct qv_appender *a, const void *p, size_t n) {
    int rc = enter(a, a->kind == QV__K_VAR32 || a->kind == QV__K_VAR64, "string/binary");
    if (rc) return rc;
    /* A length past any buffer saturates, so reserve_data reports EOVERFLOW. */
    int64_t need = n > (uint64_t)(INT64_MAX / 2 - a->data_length) ? INT64_MAX / 2 + 1
                                                                  : a->data_length + (int64_t)n;
    rc = qv__appender_reserve(a, a->length + 1);
    if (!rc) rc = qv__appender_reserve_data(a, need);
    if (rc) return rc;
    if (n) memcpy(a->data + a->data_length, p, n);
    a->data_length += (int64_t)n;
    if (a->kind == QV__K_VAR32) ((int32_t *)(void *)a->values)[a->length + 1] = (int32_t)a->data_length;
    else ((int64_t *)(void *)a->values)[a->length + 1] = a->data_length;
    if (a->validity) qv_bit_set(a->validity, a->length);
    a->length++;
    return 0;
}

int qv__append_fixbin_slow(struct qv_appender *a, const void *p, size_t n) {
    int rc = enter(a, a->kind == QV__K_FIXBIN, "fixed_binary");
    if (rc) return rc;
    if (n != (size_t)a->width) {
        char path[256];
        return qv__builder_poison(a->builder, EINVAL,
                                  "column '%s': a %zu-byte value appended to fixed_size_binary[%d]",
                                  qv__appender_path(a, path, sizeof path), n, (int)a->width);
    }
    rc = qv__appender_reserve(a, a->length + 1);
    if (rc) return rc;
    if (n) memcpy(a->values + a->length * a->width, p, n);
    if (a->validity) qv_bit_set(a->validity, a->length);
    a->length++;
    return 0;
}

int qv_append_float16(struct qv_appender *a, uint16_t bits) {
    return qv__append_fixed_slow(a, QV__K_F16, &bits);
}

int qv_append_decimal128(struct qv_appender *a, uint64_t lo, int64_t hi) {
    int rc = enter(a, a->kind == QV__K_DEC, "decimal");
    if (rc) return rc;
    if (!qv__decimal_fits(lo, hi, a->field->precision)) {
        char path[256];
        return qv__builder_poison(a->builder, EINVAL,
                                  "column '%s': unscaled value (hi %lld, lo %llu) does not fit "
                                  "decimal128(%d, %d)",
                                  qv__appender_path(a, path, sizeof path), (long long)hi,
                                  (unsigned long long)lo, (int)a->field->precision,
                                  (int)a->field->scale);
    }
    rc = qv__appender_reserve(a, a->length + 1);
    if (rc) return rc;
    uint8_t *slot = a->values + a->length * 16;
    memcpy(slot, &lo, 8);
    memcpy(slot + 8, &hi, 8);
    if (a->validity) qv_bit_set(a->validity, a->length);
    a->length++;
    return 0;
}

/* ---- nulls ---- */

/* Appends one slot that is null (as_null) or the type's default value
 * (zero, empty, or a struct of defaults), recursing into struct and
 * fixed-size-list children, which must get a slot too. Nullable children of
 * a null parent get nulls, non-nullable ones defaults. */
static int fill_slot(struct qv_appender *a, bool as_null) {
    if (a->kind == QV__K_NULL) {
        a->length++;
        a->null_count++;
        return 0;
    }
    int rc = qv__appender_reserve(a, a->length + 1);
    if (!rc && as_null && !a->validity) rc = qv__appender_activate_validity(a);
    if (rc) return rc;
    int64_t i = a->length;
    if (has_offsets32(a->kind)) {
        int32_t *o = (int32_t *)(void *)a->values;
        o[i + 1] = o[i];
    } else if (has_offsets64(a->kind)) {
        int64_t *o = (int64_t *)(void *)a->values;
        o[i + 1] = o[i];
    } else if (a->kind == QV__K_STRUCT) {
        for (int64_t c = 0; c < a->n_children; c++) {
            rc = fill_slot(&a->children[c], a->children[c].nullable);
            if (rc) return rc;
        }
    } else if (a->kind == QV__K_FIXLIST) {
        struct qv_appender *c = &a->children[0];
        for (int32_t k = 0; k < a->field->list_size; k++) {
            rc = fill_slot(c, c->nullable);
            if (rc) return rc;
        }
    } else if (a->kind != QV__K_BOOL && a->width > 0) {
        /* Width 0 (fixed_size_binary(0)) has no values buffer at all. */
        memset(a->values + i * a->width, 0, (size_t)a->width);
    }
    if (as_null) a->null_count++; /* the bit is already 0 */
    else if (a->validity) qv_bit_set(a->validity, i);
    a->length++;
    return 0;
}

int qv_append_null(struct qv_appender *a) {
    struct qv_builder *b = a->builder;
    if (b->poisoned) return b->poisoned;
    if (!a->nullable) {
        char path[256];
        return qv__builder_poison(b, EINVAL, "column '%s': null appended to a non-nullable %s field",
                                  qv__appender_path(a, path, sizeof path),
                                  qv_type_name(a->field->type));
    }
    if (a->open_at >= 0) {
        char path[256];
        return qv__builder_poison(b, EINVAL, "column '%s': null appended inside an open %s value",
                                  qv__appender_path(a, path, sizeof path), kind_fn(a->kind));
    }
    return fill_slot(a, true);
}

/* ---- nested values ---- */

static int order_error(struct qv_appender *a, const char *what) {
    char path[256];
    return qv__builder_poison(a->builder, EINVAL, "column '%s': %s",
                              qv__appender_path(a, path, sizeof path), what);
}

static bool is_list(int32_t k) { return k == QV__K_LIST32 || k == QV__K_LIST64 || k == QV__K_FIXLIST; }

/* The out-of-line begin: every kind of list, growth, and the errors. `kind`
 * is what the caller asked for (QV__K_LIST32 standing for any list). */
int qv__append_begin_slow(struct qv_appender *a, int32_t kind) {
    bool ok = kind == QV__K_LIST32 ? is_list(a->kind) : a->kind == kind;
    int rc = enter(a, ok && a->parent != NULL, kind_fn(kind));
    if (rc) return rc;
    if (a->open_at >= 0) return order_error(a, "a nested value begun twice without its end");
    rc = qv__appender_reserve(a, a->length + 1);
    if (rc) return rc;
    if (a->validity) qv_bit_set(a->validity, a->length);
    a->open_at = a->n_children ? a->children[0].length : 0;
    a->length++;
    return 0;
}

static int end_check(struct qv_appender *a, bool kind_ok, const char *what) {
    int rc = enter(a, kind_ok, what);
    if (rc) return rc;
    if (a->open_at < 0) return order_error(a, "a nested value ended that was not begun");
    return 0;
}

/* Writes the end offset of the slot just closed. */
static int close_offsets(struct qv_appender *a, int64_t end) {
    if (a->kind == QV__K_LIST64) {
        ((int64_t *)(void *)a->values)[a->length] = end;
    } else {
        if (end > INT32_MAX) {
            char path[256];
            return qv__builder_poison(
                a->builder, EOVERFLOW,
                "column '%s': %lld %s in one batch exceed the 2147483647 that 32-bit offsets "
                "address; use large_list or smaller batches",
                qv__appender_path(a, path, sizeof path), (long long)end,
                a->kind == QV__K_MAP ? "map entries" : "list elements");
        }
        ((int32_t *)(void *)a->values)[a->length] = (int32_t)end;
    }
    a->open_at = -1;
    return 0;
}

int qv__append_struct_end_slow(struct qv_appender *a) {
    int rc = end_check(a, a->kind == QV__K_STRUCT, "struct");
    if (rc) return rc;
    for (int64_t c = 0; c < a->n_children; c++) {
        if (a->children[c].length != a->length) {
            char path[256];
            return qv__builder_poison(a->builder, EINVAL,
                                      "column '%s': struct child '%s' has %lld values, expected %lld",
                                      qv__appender_path(a, path, sizeof path),
                                      a->children[c].field->name,
                                      (long long)a->children[c].length, (long long)a->length);
        }
    }
    a->open_at = -1;
    return 0;
}

int qv__append_list_end_slow(struct qv_appender *a) {
    int rc = end_check(a, is_list(a->kind), "list");
    if (rc) return rc;
    int64_t end = a->children[0].length;
    if (a->kind == QV__K_FIXLIST) {
        if (end - a->open_at != a->field->list_size) {
            char path[256];
            return qv__builder_poison(a->builder, EINVAL,
                                      "column '%s': fixed_size_list[%d] value got %lld elements",
                                      qv__appender_path(a, path, sizeof path),
                                      (int)a->field->list_size, (long long)(end - a->open_at));
        }
        a->open_at = -1;
        return 0;
    }
    return close_offsets(a, end);
}

int qv__append_map_end_slow(struct qv_appender *a) {
    int rc = end_check(a, a->kind == QV__K_MAP, "map");
    if (rc) return rc;
    struct qv_appender *entries = &a->children[0];
    int64_t nk = entries->children[0].length, nv = entries->children[1].length;
    if (nk != nv) {
        char path[256];
        return qv__builder_poison(a->builder, EINVAL, "column '%s': map has %lld keys but %lld values",
                                  qv__appender_path(a, path, sizeof path), (long long)nk,
                                  (long long)nv);
    }
    entries->length = nk;
    return close_offsets(a, nk);
}

/* ---- creation ---- */

static void resolve(struct qv_builder *b, struct qv_appender *a, const struct qv_field *f,
                    struct qv_appender *parent, int64_t *next) {
    static const int8_t kinds[QV_TYPE_COUNT_] = {
        [QV_TYPE_NULL] = QV__K_NULL,     [QV_TYPE_BOOL] = QV__K_BOOL,
        [QV_TYPE_INT8] = QV__K_I8,       [QV_TYPE_INT16] = QV__K_I16,
        [QV_TYPE_INT32] = QV__K_I32,     [QV_TYPE_INT64] = QV__K_I64,
        [QV_TYPE_UINT8] = QV__K_U8,      [QV_TYPE_UINT16] = QV__K_U16,
        [QV_TYPE_UINT32] = QV__K_U32,    [QV_TYPE_UINT64] = QV__K_U64,
        [QV_TYPE_FLOAT16] = QV__K_F16,   [QV_TYPE_FLOAT32] = QV__K_F32,
        [QV_TYPE_FLOAT64] = QV__K_F64,   [QV_TYPE_DECIMAL128] = QV__K_DEC,
        [QV_TYPE_DATE32] = QV__K_I32,    [QV_TYPE_TIMESTAMP] = QV__K_I64,
        [QV_TYPE_UTF8] = QV__K_VAR32,    [QV_TYPE_LARGE_UTF8] = QV__K_VAR64,
        [QV_TYPE_BINARY] = QV__K_VAR32,  [QV_TYPE_LARGE_BINARY] = QV__K_VAR64,
        [QV_TYPE_FIXED_BINARY] = QV__K_FIXBIN, [QV_TYPE_STRUCT] = QV__K_STRUCT,
        [QV_TYPE_LIST] = QV__K_LIST32,   [QV_TYPE_LARGE_LIST] = QV__K_LIST64,
        [QV_TYPE_FIXED_LIST] = QV__K_FIXLIST, [QV_TYPE_MAP] = QV__K_MAP,
    };
    static const int8_t widths[QV_TYPE_COUNT_] = {
        [QV_TYPE_BOOL] = 0,  [QV_TYPE_INT8] = 1,    [QV_TYPE_INT16] = 2,   [QV_TYPE_INT32] = 4,
        [QV_TYPE_INT64] = 8, [QV_TYPE_UINT8] = 1,   [QV_TYPE_UINT16] = 2,  [QV_TYPE_UINT32] = 4,
        [QV_TYPE_UINT64] = 8, [QV_TYPE_FLOAT16] = 2, [QV_TYPE_FLOAT32] = 4, [QV_TYPE_FLOAT64] = 8,
        [QV_TYPE_DECIMAL128] = 16, [QV_TYPE_DATE32] = 4, [QV_TYPE_TIMESTAMP] = 8,
    };
    memset(a, 0, sizeof *a);
    a->builder = b;
    a->field = f;
    a->parent = parent;
    a->kind = kinds[f->type];
    a->width = f->type == QV_TYPE_FIXED_BINARY ? f->byte_width : widths[f->type];
    a->dec_bound = INT64_MAX;
    if (f->type == QV_TYPE_DECIMAL128 && f->precision <= 18) {
        uint64_t lo, hi;
        qv__pow10_128(f->precision, &lo, &hi);
        a->dec_bound = (int64_t)lo;
    }
    /* Map keys are never null, whatever the key field's flag says. */
    bool is_key = parent && parent->parent && parent->parent->kind == QV__K_MAP && a == &parent->children[0];
    a->nullable = f->nullable && !is_key && parent != NULL;
    a->top_level = parent && !parent->parent;
    a->open_at = -1;
    a->start_capacity = b->opts.initial_capacity;
    a->start_data = b->opts.initial_data_bytes;
    a->n_children = f->n_children;
    a->children = f->n_children ? &b->nodes[*next] : NULL;
    *next += f->n_children;
}

/* A node's children are contiguous, so `children` is an array; they are
 * placed when their parent is resolved. */
static void build(struct qv_builder *b, struct qv_appender *a, const struct qv_field *f,
                  struct qv_appender *parent, int64_t *next) {
    resolve(b, a, f, parent, next);
    for (int64_t c = 0; c < f->n_children; c++)
        build(b, &a->children[c], &f->children[c], a, next);
}

int qv_builder_create(const struct qv_schema *schema, struct qv_reservation *r,
                      const struct qv_builder_options *opts, struct qv_builder **out,
                      struct qv_error *err) {
    if (out) *out = NULL;
    if (!schema || !r || !out)
        return qv_error_set(err, EINVAL, "builder create: NULL %s",
                            !schema ? "schema" : !r ? "reservation" : "output");
    if (schema->root.type != QV_TYPE_STRUCT)
        return qv_error_set(err, EINVAL, "builder create: the schema root must be a struct, not %s",
                            qv_type_name(schema->root.type));
    struct qv_builder_options o = opts ? *opts : (struct qv_builder_options){0};
    if (o.initial_capacity < 0 || o.initial_data_bytes < 0 || o.initial_capacity > (INT64_C(1) << 40) ||
        o.initial_data_bytes > (INT64_C(1) << 30))
        return qv_error_set(err, EINVAL,
                            "builder create: initial capacity %lld / data bytes %lld out of range",
                            (long long)o.initial_capacity, (long long)o.initial_data_bytes);
    if (!o.initial_capacity) o.initial_capacity = DEFAULT_INITIAL_CAPACITY;
    if (!o.initial_data_bytes) o.initial_data_bytes = 8 * o.initial_capacity;
    if (!o.carry_limit_bytes) o.carry_limit_bytes = DEFAULT_CARRY_LIMIT;

    struct qv_schema *copy;
    int rc = qv_schema_copy(schema, r, &copy, err);
    if (rc) return qv_error_wrap(err, rc, "builder create: ");
    int64_t n = qv__field_count_nodes(&copy->root);
    size_t nodes_at = qv_align_up(sizeof(struct qv_builder));
    size_t size = nodes_at + (size_t)n * sizeof(struct qv_appender);
    char *mem = qv_alloc(r, size, err);
    if (!mem) {
        qv_schema_destroy(copy);
        return qv_error_wrap(err, ENOMEM, "builder create: ");
    }
    memset(mem, 0, size);
    struct qv_builder *b = (struct qv_builder *)mem;
    b->res = r;
    b->schema = copy;
    b->nodes = (struct qv_appender *)(mem + nodes_at);
    b->n_nodes = n;
    b->opts = o;
    b->alloc_size = size;
    int64_t next = 1;
    build(b, &b->nodes[0], &copy->root, NULL, &next);
    *out = b;
    return 0;
}

static void free_buffers(struct qv_builder *b, struct qv_appender *a) {
    if (a->values) qv_free(b->res, a->values, a->values_size);
    if (a->validity) qv_free(b->res, a->validity, a->validity_size);
    if (a->data) qv_free(b->res, a->data, a->data_size);
    a->values = a->validity = a->data = NULL;
    a->values_size = a->validity_size = a->data_size = 0;
}

void qv_builder_destroy(struct qv_builder *b) {
    if (!b) return;
    for (int64_t i = 0; i < b->n_nodes; i++) free_buffers(b, &b->nodes[i]);
    qv_schema_destroy(b->schema);
    qv_free(b->res, b, b->alloc_size);
}

const struct qv_schema *qv_builder_schema(const struct qv_builder *b) { return b ? b->schema : NULL; }

int64_t qv_builder_num_columns(const struct qv_builder *b) { return b ? b->nodes[0].n_children : 0; }

int64_t qv_builder_num_rows(const struct qv_builder *b) {
    if (!b) return 0;
    /* A schema without columns counts its rows at the root (append_batch). */
    return b->nodes[0].n_children ? b->nodes[0].children[0].length : b->nodes[0].length;
}

struct qv_appender *qv_builder_column(struct qv_builder *b, int64_t k) {
    if (!b || k < 0 || k >= b->nodes[0].n_children) return NULL;
    return &b->nodes[0].children[k];
}

struct qv_appender *qv_appender_child(struct qv_appender *a, int64_t i) {
    if (!a || i < 0 || i >= a->n_children) return NULL;
    return &a->children[i];
}

struct qv_appender *qv_appender_map_keys(struct qv_appender *map) {
    return map && map->kind == QV__K_MAP ? &map->children[0].children[0] : NULL;
}

struct qv_appender *qv_appender_map_values(struct qv_appender *map) {
    return map && map->kind == QV__K_MAP ? &map->children[0].children[1] : NULL;
}

const struct qv_error *qv_builder_error(const struct qv_builder *b) {
    static const struct qv_error none = {
        .code = EINVAL, .kind = QV_ERROR_INVALID_ARGUMENT, .message = "builder: NULL builder"};
    return b ? &b->error : &none;
}

int qv_builder_export_schema(struct qv_builder *b, struct ArrowSchema *out, struct qv_error *err) {
    if (!b) {
        if (out) out->release = NULL;
        return qv_error_set(err, EINVAL, "builder export schema: NULL builder");
    }
    return qv_schema_export(b->schema, b->res, out, err);
}

/* ---- finishing a batch ---- */

static int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t max64(int64_t x, int64_t y) { return x > y ? x : y; }

/* The smallest start * 2^k >= used: what doubling would have reached. */
static int64_t need_for(int64_t start, int64_t used) {
    int64_t n = start;
    while (n < used && n <= INT64_MAX / 2) n *= 2;
    return n;
}

/* The capacity rule of the file comment, applied at the end of a batch. */
static void carry_over(struct qv_builder *b, struct qv_appender *a) {
    int64_t init = b->opts.initial_capacity;
    int64_t need = need_for(init, a->length);
    uint64_t lim_slots = b->opts.carry_limit_bytes * 8 / (uint64_t)slot_bits(a);
    int64_t lim = lim_slots > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)lim_slots;
    a->start_capacity = max64(init, min64(need, max64(lim, a->prev_need)));
    a->prev_need = need;
    if (a->kind == QV__K_VAR32 || a->kind == QV__K_VAR64) {
        int64_t dinit = b->opts.initial_data_bytes;
        int64_t dneed = need_for(dinit, a->data_length);
        int64_t dlim = b->opts.carry_limit_bytes > (uint64_t)INT64_MAX ? INT64_MAX
                                                                        : (int64_t)b->opts.carry_limit_bytes;
        a->start_data = max64(dinit, min64(dneed, max64(dlim, a->prev_data_need)));
        a->prev_data_need = dneed;
    }
}

/* Empties an appender for the next batch; its buffers were moved or freed. */
static void clear(struct qv_appender *a) {
    a->values = a->validity = a->data = NULL;
    a->values_size = a->validity_size = a->data_size = 0;
    a->length = a->limit = a->capacity = 0;
    a->data_length = a->data_limit = a->data_capacity = 0;
    a->null_count = 0;
    a->open_at = -1;
}

static int consistency(struct qv_builder *b, struct qv_appender *a) {
    char path[256];
    if (a->open_at >= 0)
        return qv__builder_poison(b, EINVAL, "column '%s': a %s value was begun but not ended",
                                  qv__appender_path(a, path, sizeof path), kind_fn(a->kind));
    int64_t want = -1, have = 0;
    if (a->kind == QV__K_LIST32 || a->kind == QV__K_MAP) {
        want = a->length ? ((int32_t *)(void *)a->values)[a->length] : 0;
        have = a->children[0].length;
    } else if (a->kind == QV__K_LIST64) {
        want = a->length ? ((int64_t *)(void *)a->values)[a->length] : 0;
        have = a->children[0].length;
    } else if (a->kind == QV__K_FIXLIST) {
        want = a->length * a->field->list_size;
        have = a->children[0].length;
    } else if (a->kind == QV__K_STRUCT && a->parent) {
        for (int64_t c = 0; c < a->n_children; c++)
            if (a->children[c].length != a->length) {
                want = a->length;
                have = a->children[c].length;
                break;
            }
    }
    if (want >= 0 && want != have)
        return qv__builder_poison(b, EINVAL,
                                  "column '%s': children hold %lld values but the %s's slots "
                                  "account for %lld (values appended outside begin/end?)",
                                  qv__appender_path(a, path, sizeof path), (long long)have,
                                  kind_fn(a->kind), (long long)want);
    for (int64_t c = 0; c < a->n_children; c++) {
        int rc = consistency(b, &a->children[c]);
        if (rc) return rc;
    }
    return 0;
}

/* Hands every buffer of the subtree to the owned array (which mirrors the
 * appender tree node for node) and empties the appenders. Buffers never
 * allocated (no values yet, or a type without data) become the shared zero
 * buffer where the layout requires one. */
static void move_out(struct qv_builder *b, struct qv_appender *a, struct ArrowArray *node) {
    void *zero = (void *)qv_arrow_zero_buffer();
    node->length = a->length;
    node->null_count = a->kind == QV__K_NULL ? a->length : a->null_count;
    if (node->n_buffers > 0) qv__owned_set(node, 0, a->validity, a->validity_size);
    if (node->n_buffers > 1) qv__owned_set(node, 1, a->values ? a->values : zero, a->values_size);
    if (node->n_buffers > 2) qv__owned_set(node, 2, a->data ? a->data : zero, a->data_size);
    for (int64_t c = 0; c < a->n_children; c++) move_out(b, &a->children[c], node->children[c]);
    carry_over(b, a);
    clear(a);
}

int qv_builder_finish(struct qv_builder *b, struct ArrowArray *out, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "builder finish: NULL output");
    out->release = NULL;
    if (!b) return qv_error_set(err, EINVAL, "builder finish: NULL builder");
    if (b->poisoned)
        return qv_error_set(err, b->poisoned, "%s (reset the builder to continue)", b->error.message);
    struct qv_appender *root = &b->nodes[0];
    int64_t rows = root->n_children ? root->children[0].length : root->length;
    for (int64_t c = 0; c < root->n_children; c++) {
        if (root->children[c].length != rows) {
            qv__builder_poison(b, EINVAL,
                               "finish: column '%s' has %lld values but column '%s' has %lld "
                               "(a row is incomplete)",
                               root->children[c].field->name, (long long)root->children[c].length,
                               root->children[0].field->name, (long long)rows);
            return qv_error_set(err, b->poisoned, "%s", b->error.message);
        }
    }
    if (consistency(b, root)) return qv_error_set(err, b->poisoned, "%s", b->error.message);
    root->length = rows;

    struct qv_error e = {0};
    if (qv__owned_tree_create(out, &b->schema->root, b->res, NULL, &e)) {
        qv__builder_poison(b, ENOMEM, "finish: %s", e.message);
        return qv_error_set(err, b->poisoned, "%s", b->error.message);
    }
    move_out(b, root, out);
    return 0;
}

void qv__builder_restart(struct qv_builder *b) {
    if (!b) return;
    for (int64_t i = 0; i < b->n_nodes; i++) {
        struct qv_appender *a = &b->nodes[i];
        a->start_capacity = b->opts.initial_capacity;
        a->start_data = b->opts.initial_data_bytes;
        a->prev_need = a->prev_data_need = 0;
    }
}

void qv_builder_reset(struct qv_builder *b) {
    if (!b) return;
    for (int64_t i = 0; i < b->n_nodes; i++) {
        struct qv_appender *a = &b->nodes[i];
        carry_over(b, a);
        free_buffers(b, a);
        clear(a);
    }
    b->poisoned = 0;
    qv_error_clear(&b->error);
}
