/* Casts of a scan's output columns (qv_scan_options.cast): the output schema
 * with the target types, and the conversion of a decoded column in place.
 *
 * Every cast keeps the Arrow layout of its source (a validity bitmap and one
 * values or offsets buffer), so a column is converted node by node inside
 * the owned tree the decoder made: a node's values buffer is replaced by a
 * converted one from the column's own reservation, and its validity, offset,
 * length and children stay as they are. A node converts its own slots
 * [offset, offset + length); children are converted over their own range,
 * which covers every slot their parent can reference, so sliced arrays need
 * no special case. Slots before `offset` are zero in the new buffer.
 *
 * Values under nulls may be anything: they are converted like the others
 * where that cannot fail, and a multiplying cast that overflows under a
 * null writes 0 there instead of failing. Offsets of lists are structure,
 * not values: every one of them is converted, null lists included. */
#include <stdio.h>
#include <string.h>

#include "scan/scan_internal.h"

#define CAST_MAX_DEPTH 64

/* The type `src` has under the cast flags (its own type only). Returns true
 * when it changes. */
static bool cast_type(const struct qv_field *src, unsigned cast, struct qv_field *dst) {
    *dst = *src;
    switch (src->type) {
    case QV_TYPE_TIMESTAMP:
        if (!(cast & QV_CAST_TIMESTAMP_US) || src->unit == QV_TIME_US) return false;
        dst->unit = QV_TIME_US;
        return true;
    case QV_TYPE_UINT8:
    case QV_TYPE_UINT16:
    case QV_TYPE_UINT32:
    case QV_TYPE_UINT64:
        if (!(cast & QV_CAST_UNSIGNED_WIDEN)) return false;
        dst->type = src->type == QV_TYPE_UINT8    ? QV_TYPE_INT16
                    : src->type == QV_TYPE_UINT16 ? QV_TYPE_INT32
                    : src->type == QV_TYPE_UINT32 ? QV_TYPE_INT64
                                                  : QV_TYPE_DECIMAL128;
        if (dst->type == QV_TYPE_DECIMAL128) {
            dst->precision = 20; /* UINT64_MAX has 20 digits */
            dst->scale = 0;
        }
        return true;
    case QV_TYPE_FLOAT16:
        if (!(cast & QV_CAST_FLOAT16_TO_32)) return false;
        dst->type = QV_TYPE_FLOAT32;
        return true;
    case QV_TYPE_LARGE_LIST:
        if (!(cast & QV_CAST_LARGE_LIST)) return false;
        dst->type = QV_TYPE_LIST;
        return true;
    default:
        return false;
    }
}

static int32_t count_fields(const struct qv_field *f) {
    int32_t n = 1;
    for (int64_t i = 0; i < f->n_children; i++) n += count_fields(&f->children[i]);
    return n;
}

/* Lays out the cast copy of `src` at *dst, its children from *next on. */
static bool build_template(const struct qv_field *src, unsigned cast, struct qv_field *dst,
                           struct qv_field **next) {
    bool changed = cast_type(src, cast, dst);
    if (src->n_children) {
        struct qv_field *kids = *next;
        *next += src->n_children;
        for (int64_t i = 0; i < src->n_children; i++)
            changed |= build_template(&src->children[i], cast, &kids[i], next);
        dst->children = kids;
    }
    return changed;
}

int qv__cast_schema(struct ArrowSchema *sc, unsigned cast, struct qv_reservation *r,
                    struct qv_error *err) {
    if (!cast) return 0;
    struct qv_schema *in = NULL;
    int rc = qv_schema_import(sc, r, &in, err);
    if (rc) {
        sc->release(sc);
        return rc;
    }
    /* A template tree (the timezone and name strings point into `in`),
     * exported as the new schema; the old one is released. */
    size_t size = (size_t)count_fields(&in->root) * sizeof(struct qv_field);
    struct qv_field *tree = qv_alloc(r, size, err);
    if (!tree) {
        qv_schema_destroy(in);
        sc->release(sc);
        return ENOMEM;
    }
    struct qv_field *next = tree + 1;
    if (build_template(&in->root, cast, tree, &next)) {
        struct ArrowSchema out;
        rc = qv_field_export(tree, r, &out, err);
        sc->release(sc);
        if (!rc) *sc = out;
    }
    qv_free(r, tree, size);
    qv_schema_destroy(in);
    return rc;
}

/* ---- arrays ---- */

struct cast_ctx {
    unsigned cast;
    struct qv_reservation *res;
    /* The failing node, for the message: the fields from the column down. */
    const struct qv_field *stack[CAST_MAX_DEPTH];
    int depth;
    char what[256];
    char path[512];
};

static int valid_at(const struct ArrowArray *a, int64_t i) {
    const uint8_t *v = a->buffers[0];
    return !v || qv_bit_get(v, i);
}

/* Records the dotted path of the failing node. */
static void note_path(struct cast_ctx *c) {
    size_t n = 0;
    c->path[0] = '\0';
    for (int d = 0; d < c->depth && n < sizeof c->path; d++) {
        int k = snprintf(c->path + n, sizeof c->path - n, "%s%s", d ? "." : "",
                         c->stack[d]->name ? c->stack[d]->name : "");
        if (k < 0) break;
        n += (size_t)k;
    }
}

/* float16 bits -> float32 bits, exactly: every half value (subnormals,
 * infinities, NaN payloads and signs included) is a float value. The
 * magnitude bits shifted into place read as a float 2^112 times too small
 * (the exponent biases are 15 and 127), and a half subnormal reads as a
 * float subnormal with the same scale; multiplying by 2^112 is exact for
 * both. Infinities and NaNs get the float's all-ones exponent and keep their
 * payload. No branch, so the loop over a column vectorises. */
static uint32_t half_to_float_bits(uint16_t h) {
    uint32_t m = (uint32_t)(h & 0x7FFFu) << 13;
    float f;
    memcpy(&f, &m, 4);
    f *= 0x1p112f;
    uint32_t r;
    memcpy(&r, &f, 4);
    r = (h & 0x7C00u) == 0x7C00u ? (m | 0x7F800000u) : r;
    return r | (uint32_t)(h & 0x8000u) << 16;
}

/* Floor division by a positive divisor: rounds toward -inf, so an instant
 * before the epoch stays at or before itself. */
static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Allocates the converted values buffer of `a` with `width` bytes a slot;
 * slots before the array's offset are zeroed (they are never read). NULL
 * (ENOMEM in err) on failure. */
static void *new_values(struct cast_ctx *c, const struct ArrowArray *a, size_t width, size_t *size,
                        struct qv_error *err) {
    *size = (size_t)(a->offset + a->length) * width;
    if (*size == 0) *size = 1;
    uint8_t *p = qv_alloc(c->res, *size, err);
    if (p && a->offset) memset(p, 0, (size_t)a->offset * width);
    return p;
}

/* Every slot is converted, nulls included, in loops without a branch per
 * slot (the compiler vectorises them): the values under a null are
 * arbitrary bits, which every cast but the multiplying ones converts
 * without failing. Those detect overflow over the whole range and only
 * then look at validity, so a garbage value under a null is zeroed, never
 * reported. */
static int cast_timestamp(struct cast_ctx *c, struct ArrowArray *a, const struct qv_field *f,
                          int64_t *bad, struct qv_error *err) {
    size_t size;
    int64_t *out = new_values(c, a, 8, &size, err);
    if (!out) return ENOMEM;
    const int64_t *in = a->buffers[1];
    int64_t lo = a->offset, hi = a->offset + a->length;
    if (f->unit == QV_TIME_NS) {
        for (int64_t i = lo; i < hi; i++) out[i] = floor_div(in[i], 1000);
        return qv_owned_array_set_buffer(a, 1, out, size, err);
    }
    int64_t mul = f->unit == QV_TIME_S ? 1000000 : 1000;
    int overflow = 0;
    for (int64_t i = lo; i < hi; i++) overflow |= __builtin_mul_overflow(in[i], mul, &out[i]);
    for (int64_t i = lo; overflow && i < hi; i++) {
        int64_t t;
        if (!__builtin_mul_overflow(in[i], mul, &t)) continue;
        if (!valid_at(a, i)) {
            out[i] = 0;
            continue;
        }
        *bad = i;
        snprintf(c->what, sizeof c->what, "timestamp[%s] value %lld does not fit timestamp[us]",
                 f->unit == QV_TIME_S ? "s" : "ms", (long long)in[i]);
        qv_free(c->res, out, size);
        return EOVERFLOW;
    }
    return qv_owned_array_set_buffer(a, 1, out, size, err);
}

static int cast_unsigned(struct cast_ctx *c, struct ArrowArray *a, const struct qv_field *f,
                         struct qv_error *err) {
    size_t size;
    size_t width = f->type == QV_TYPE_UINT8 ? 2 : f->type == QV_TYPE_UINT16 ? 4
                 : f->type == QV_TYPE_UINT32 ? 8 : 16;
    void *out = new_values(c, a, width, &size, err);
    if (!out) return ENOMEM;
    const void *in = a->buffers[1];
    int64_t lo = a->offset, hi = a->offset + a->length;
    switch (f->type) {
    case QV_TYPE_UINT8:
        for (int64_t i = lo; i < hi; i++) ((int16_t *)out)[i] = ((const uint8_t *)in)[i];
        break;
    case QV_TYPE_UINT16:
        for (int64_t i = lo; i < hi; i++) ((int32_t *)out)[i] = ((const uint16_t *)in)[i];
        break;
    case QV_TYPE_UINT32:
        for (int64_t i = lo; i < hi; i++) ((int64_t *)out)[i] = ((const uint32_t *)in)[i];
        break;
    default:
        /* decimal128: the value as the low word and 0 as the high word
         * (little-endian two's complement, as Arrow lays it out). */
        for (int64_t i = lo; i < hi; i++) {
            ((uint64_t *)out)[2 * i] = ((const uint64_t *)in)[i];
            ((uint64_t *)out)[2 * i + 1] = 0;
        }
        break;
    }
    return qv_owned_array_set_buffer(a, 1, out, size, err);
}

static int cast_float16(struct cast_ctx *c, struct ArrowArray *a, struct qv_error *err) {
    size_t size;
    uint32_t *out = new_values(c, a, 4, &size, err);
    if (!out) return ENOMEM;
    const uint16_t *in = a->buffers[1];
    for (int64_t i = a->offset; i < a->offset + a->length; i++) out[i] = half_to_float_bits(in[i]);
    return qv_owned_array_set_buffer(a, 1, out, size, err);
}

static int cast_large_list(struct cast_ctx *c, struct ArrowArray *a, int64_t *bad,
                           struct qv_error *err) {
    size_t size = (size_t)(a->offset + a->length + 1) * sizeof(int32_t);
    int32_t *out = qv_alloc(c->res, size, err);
    if (!out) return ENOMEM;
    const int64_t *in = a->buffers[1];
    for (int64_t i = a->offset; i <= a->offset + a->length; i++) {
        if (in[i] < 0 || in[i] > INT32_MAX) {
            *bad = i < a->offset + a->length ? i : i - 1;
            snprintf(c->what, sizeof c->what,
                     "large_list offset %lld does not fit the 32-bit offsets of list",
                     (long long)in[i]);
            qv_free(c->res, out, size);
            return EOVERFLOW;
        }
        out[i] = (int32_t)in[i];
    }
    /* Slots before the array's offset are never read; they repeat its first
     * offset so the buffer is monotone throughout. */
    for (int64_t i = 0; i < a->offset; i++) out[i] = out[a->offset];
    return qv_owned_array_set_buffer(a, 1, out, size, err);
}

/* The slot of list-like `a` (physical index) holding element `e` of its
 * child (child-relative index), or -1. Offsets are 64-bit for large lists. */
static int64_t list_slot_of(const struct ArrowArray *a, bool large, int64_t e) {
    int64_t lo = a->offset, hi = a->offset + a->length; /* search [lo, hi) */
    const void *off = a->buffers[1];
#define OFF(k) (large ? ((const int64_t *)off)[k] : (int64_t)((const int32_t *)off)[k])
    if (a->length <= 0 || e < OFF(lo) || e >= OFF(hi)) return -1;
    while (hi - lo > 1) { /* the last slot whose start is <= e */
        int64_t mid = lo + (hi - lo) / 2;
        if (OFF(mid) <= e) lo = mid;
        else hi = mid;
    }
#undef OFF
    return lo;
}

static int cast_node(struct cast_ctx *c, struct ArrowArray *a, const struct qv_field *f,
                     int64_t *bad, struct qv_error *err) {
    if (c->depth >= CAST_MAX_DEPTH)
        return qv_error_set(err, EINVAL, "cast: nested deeper than %d levels", CAST_MAX_DEPTH);
    c->stack[c->depth++] = f;
    int rc = 0;
    /* Children first: a failure below is mapped to a slot of this node
     * through its offsets as decoded (64-bit for a large list). */
    for (int64_t k = 0; k < f->n_children && k < a->n_children && !rc; k++) {
        const struct ArrowArray *ch = a->children[k];
        int64_t cb = -1;
        rc = cast_node(c, a->children[k], &f->children[k], &cb, err);
        if (rc != EOVERFLOW) continue;
        int64_t e = cb < 0 ? -1 : cb - ch->offset;
        switch (f->type) {
        case QV_TYPE_STRUCT: *bad = e; break;
        case QV_TYPE_LIST: case QV_TYPE_MAP: *bad = e < 0 ? -1 : list_slot_of(a, false, e); break;
        case QV_TYPE_LARGE_LIST: *bad = e < 0 ? -1 : list_slot_of(a, true, e); break;
        case QV_TYPE_FIXED_LIST: *bad = e < 0 || f->list_size <= 0 ? -1 : e / f->list_size; break;
        default: *bad = -1; break;
        }
    }
    if (!rc && a->offset + a->length > 0) {
        struct qv_field to;
        if (cast_type(f, c->cast, &to) && (a->n_buffers < 2 || !a->buffers[1])) {
            rc = qv_error_set(err, EINVAL, "cast: field '%s' has no values buffer",
                              f->name ? f->name : "");
        } else if (cast_type(f, c->cast, &to)) {
            switch (f->type) {
            case QV_TYPE_TIMESTAMP: rc = cast_timestamp(c, a, f, bad, err); break;
            case QV_TYPE_FLOAT16: rc = cast_float16(c, a, err); break;
            case QV_TYPE_LARGE_LIST: rc = cast_large_list(c, a, bad, err); break;
            default: rc = cast_unsigned(c, a, f, err); break;
            }
            if (rc == EOVERFLOW) note_path(c);
        }
    }
    c->depth--;
    return rc;
}

int qv__cast_column(struct ArrowArray *col, const struct qv_field *field, unsigned cast,
                    struct qv_reservation *res, const struct qv__cast_where *where,
                    struct qv_error *err) {
    if (!cast) return 0;
    struct cast_ctx ctx = {.cast = cast, .res = res}, *c = &ctx;
    int64_t bad = -1;
    int rc = cast_node(c, col, field, &bad, err);
    if (rc == EOVERFLOW) {
        int64_t i = bad < 0 ? -1 : bad - col->offset;
        char row[48] = "row unknown";
        if (i >= 0 && i < col->length)
            snprintf(row, sizeof row, "row %lld",
                     (long long)(where->rows ? where->rows[i] : where->first_row + i));
        char field_part[560] = "";
        if (strchr(c->path, '.')) snprintf(field_part, sizeof field_part, " (field '%s')", c->path);
        qv_error_set(err, EOVERFLOW, "file '%.300s': column '%.200s'%s, row group %lld, %s: %s",
                     where->file ? where->file : "", field->name ? field->name : "", field_part,
                     (long long)where->rg, row, c->what);
    }
    if (rc) col->release(col);
    return rc;
}
