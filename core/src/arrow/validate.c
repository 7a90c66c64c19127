/* Import validation of ArrowArray trees against a qv_field, in two tiers.
 *
 * CHEAP is what every import pays: it touches each node and reads O(1)
 * values per node (first and last offsets), enough to guarantee that every
 * slice a consumer derives from lengths, offsets and child lengths stays
 * inside what the producer claims to hold. FULL reads all the data, for
 * input nobody vouches for. The C Data Interface carries no buffer sizes,
 * so neither tier can prove a buffer is as long as its array says; they
 * prove the description is self-consistent. */
#include <stdio.h>
#include <string.h>

#include "arrow/arrow_internal.h"
#include "base/cpu_internal.h"

struct vctx {
    enum qv_validate_level level;
    struct qv_error *err;
    struct qv__path path;
};

static int fail(struct vctx *v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int fail(struct vctx *v, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return qv_error_set(v->err, EINVAL, "array validate: field '%s': %s", qv__path_str(&v->path),
                        msg);
}

/* ---- UTF-8 ---- */

bool qv__utf8_valid(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        if (i + 8 <= n) { /* ASCII runs eight bytes at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & UINT64_C(0x8080808080808080))) {
                i += 8;
                continue;
            }
        }
        int64_t k = qv__utf8_seq(s + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

/* ---- the walk ---- */

static int64_t off_at(const void *offsets, bool wide, int64_t i) {
    return wide ? ((const int64_t *)offsets)[i] : ((const int32_t *)offsets)[i];
}

static bool is_valid(const struct ArrowArray *a, int64_t phys) {
    const uint8_t *v = a->buffers[0];
    return !v || qv_bit_get(v, phys);
}

/* The full tier's hot loops first check a whole buffer without a branch per
 * value (which the compiler can vectorize), and only when that finds a fault
 * walk it again to name the first one: scans validate everything they hand
 * out, so the common, valid case is the one to make fast. Each loop is also
 * compiled for AVX2 and chosen at run time (base/cpu.c): the baseline build
 * has no 64-bit vector compare (SSE2), so 64-bit offsets and decimals ran
 * one value at a time, and a lineitem scan spent 14% of its CPU here. */
static QV__ALWAYS_INLINE bool monotone_body(const void *o, bool wide, int64_t off, int64_t n,
                                            int64_t hi) {
    uint64_t bad = 0;
    if (wide) {
        const int64_t *p = (const int64_t *)o + off;
        for (int64_t i = 1; i <= n; i++) bad |= (uint64_t)(p[i] < p[i - 1]) | (uint64_t)(p[i] > hi);
    } else {
        /* 32-bit lanes throughout (hi is one of these offsets, so it fits):
         * a 64-bit accumulator made the compiler widen every comparison,
         * and the loop ran 2.5x slower (0.40 against 0.16 ns an offset,
         * AVX2, in cache); it was 8% of a nested scan's CPU from Python. */
        const int32_t *p = (const int32_t *)o + off;
        const int32_t h = (int32_t)hi;
        uint32_t bad32 = 0;
        for (int64_t i = 1; i <= n; i++) bad32 |= (uint32_t)(p[i] < p[i - 1]) | (uint32_t)(p[i] > h);
        bad = bad32;
    }
    return !bad;
}

/* Every slot's decimal (nulls included: a value under a null is usually 0
 * and fits) within the bound b1 = 10^precision - 1: hi is lo's sign
 * extension (hi + sign bit wraps to 0) and -b1 <= lo <= b1, i.e.
 * lo + b1 <= 2 b1 in unsigned arithmetic. */
static QV__ALWAYS_INLINE bool decimals_body(const uint8_t *vals, int64_t off, int64_t n,
                                            uint64_t b1) {
    uint64_t bad = 0;
    for (int64_t i = off; i < off + n; i++) {
        uint64_t lo, hi;
        memcpy(&lo, vals + i * 16, 8);
        memcpy(&hi, vals + i * 16 + 8, 8);
        bad |= qv__decimal_unfit_bits(lo, hi, b1);
    }
    return !bad;
}

static QV__ALWAYS_INLINE bool ascii_body(const uint8_t *s, int64_t n) {
    uint8_t acc = 0; /* a byte-wide OR the compiler turns into vector ORs */
    for (int64_t i = 0; i < n; i++) acc |= s[i];
    return !(acc & 0x80);
}

static bool monotone_generic(const void *o, bool wide, int64_t off, int64_t n, int64_t hi) {
    return monotone_body(o, wide, off, n, hi);
}
static bool decimals_generic(const uint8_t *vals, int64_t off, int64_t n, uint64_t b1) {
    return decimals_body(vals, off, n, b1);
}
static bool ascii_generic(const uint8_t *s, int64_t n) { return ascii_body(s, n); }
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 bool monotone_avx2(const void *o, bool wide, int64_t off, int64_t n,
                                          int64_t hi) {
    return monotone_body(o, wide, off, n, hi);
}
static QV__TARGET_AVX2 bool decimals_avx2(const uint8_t *vals, int64_t off, int64_t n,
                                          uint64_t b1) {
    return decimals_body(vals, off, n, b1);
}
static QV__TARGET_AVX2 bool ascii_avx2(const uint8_t *s, int64_t n) { return ascii_body(s, n); }
#endif

static bool offsets_monotone(const void *o, bool wide, int64_t off, int64_t n, int64_t hi) {
    return QV__DISPATCH2(monotone, o, wide, off, n, hi);
}

/* false means "look closer" (also for a precision above 18). */
static bool decimals_fit_fast(const uint8_t *vals, int64_t off, int64_t n, int precision) {
    if (precision < 1 || precision > 18) return false;
    uint64_t bound, unused;
    qv__pow10_128(precision, &bound, &unused); /* < 2^63 for precision <= 18 */
    return QV__DISPATCH2(decimals, vals, off, n, bound - 1);
}

int64_t qv__decimal_first_unfit(const struct ArrowArray *a, int precision) {
    if (a->length <= 0 || decimals_fit_fast(a->buffers[1], a->offset, a->length, precision))
        return -1;
    const uint8_t *vals = a->buffers[1];
    for (int64_t i = 0; i < a->length; i++) {
        if (!is_valid(a, a->offset + i)) continue;
        uint64_t lo;
        int64_t hi;
        memcpy(&lo, vals + (a->offset + i) * 16, 8);
        memcpy(&hi, vals + (a->offset + i) * 16 + 8, 8);
        if (!qv__decimal_fits(lo, hi, precision)) return i;
    }
    return -1;
}

/* First/last offsets (cheap) or all of them (full) of slots
 * [offset, offset + length); the covered range goes to *first / *last. */
static int check_offsets(struct vctx *v, const struct ArrowArray *a, bool wide, int64_t *first,
                         int64_t *last) {
    *first = *last = 0;
    if (a->length == 0) return 0;
    const void *o = a->buffers[1];
    if (!o) return fail(v, "offsets buffer is NULL for %lld values", (long long)a->length);
    int64_t lo = off_at(o, wide, a->offset), hi = off_at(o, wide, a->offset + a->length);
    if (lo < 0) return fail(v, "first offset %lld is negative", (long long)lo);
    if (hi < lo)
        return fail(v, "last offset %lld is below the first offset %lld", (long long)hi,
                    (long long)lo);
    if (v->level == QV_VALIDATE_FULL && !offsets_monotone(o, wide, a->offset, a->length, hi)) {
        int64_t prev = lo; /* find the first bad one, for the message */
        for (int64_t i = 1; i <= a->length; i++) {
            int64_t cur = off_at(o, wide, a->offset + i);
            if (cur < prev || cur > hi)
                return fail(v, "offsets not monotone at index %lld (%lld after %lld)",
                            (long long)i, (long long)cur, (long long)prev);
            prev = cur;
        }
    }
    *first = lo;
    *last = hi;
    return 0;
}

static int validate_node(struct vctx *v, const struct ArrowArray *a, const struct qv_field *f,
                         int depth);

static int validate_child(struct vctx *v, const struct ArrowArray *c, const struct qv_field *f,
                          int depth) {
    size_t mark = qv__path_push(&v->path, f->name);
    int rc = validate_node(v, c, f, depth + 1);
    qv__path_pop(&v->path, mark);
    return rc;
}

static bool ascii_only(const uint8_t *s, int64_t n) { return QV__DISPATCH2(ascii, s, n); }

/* UTF-8 is a property of each value (a character must not straddle two),
 * so only all-ASCII data is accepted in one pass over the range. */
static int check_utf8(struct vctx *v, const struct ArrowArray *a, bool wide, int64_t first,
                      int64_t last) {
    const uint8_t *data = a->buffers[2];
    if (last == first || ascii_only(data + first, last - first)) return 0;
    const void *o = a->buffers[1];
    for (int64_t i = 0; i < a->length; i++) {
        if (!is_valid(a, a->offset + i)) continue;
        int64_t s = off_at(o, wide, a->offset + i), e = off_at(o, wide, a->offset + i + 1);
        if (!qv__utf8_valid(data + s, e - s))
            return fail(v, "value at index %lld is not valid UTF-8", (long long)i);
    }
    return 0;
}

static int validate_node(struct vctx *v, const struct ArrowArray *a, const struct qv_field *f,
                         int depth) {
    if (!a) return fail(v, "ArrowArray is NULL");
    if (!a->release) return fail(v, "ArrowArray is released (moved or freed)");
    if (depth > QV__MAX_NESTING) return fail(v, "nesting deeper than %d levels", QV__MAX_NESTING);
    if (a->length < 0 || a->offset < 0 || a->null_count < -1)
        return fail(v, "negative length %lld, offset %lld or null_count %lld", (long long)a->length,
                    (long long)a->offset, (long long)a->null_count);
    if (a->offset > INT64_MAX / 2 - a->length)
        return fail(v, "offset %lld + length %lld overflows", (long long)a->offset,
                    (long long)a->length);
    if (a->null_count > a->length)
        return fail(v, "null_count %lld exceeds length %lld", (long long)a->null_count,
                    (long long)a->length);
    int64_t nb = qv__type_n_buffers(f->type);
    if (a->n_buffers != nb)
        return fail(v, "%s needs %lld buffers, got %lld", qv_type_name(f->type), (long long)nb,
                    (long long)a->n_buffers);
    if (nb > 0 && !a->buffers) return fail(v, "buffer table is NULL");
    int64_t nc = f->type == QV_TYPE_STRUCT ? f->n_children : qv__type_n_children(f->type);
    if (a->n_children != nc)
        return fail(v, "%s needs %lld children, got %lld", qv_type_name(f->type), (long long)nc,
                    (long long)a->n_children);
    if (nc > 0 && !a->children) return fail(v, "child table is NULL");
    for (int64_t i = 0; i < nc; i++)
        if (!a->children[i]) return fail(v, "child %lld is NULL", (long long)i);
    if (a->dictionary) return fail(v, "unexpected dictionary (dictionary encoding is not supported)");

    int64_t end = a->offset + a->length;
    /* Slot counts scaled by a width must fit before anything is read. */
    int32_t scale = f->type == QV_TYPE_FIXED_BINARY ? f->byte_width
                  : f->type == QV_TYPE_FIXED_LIST   ? f->list_size : 1;
    uint64_t scaled;
    if (qv_mul_overflow_u64((uint64_t)end, (uint64_t)scale, &scaled) || scaled > (uint64_t)INT64_MAX / 2)
        return fail(v, "offset + length %lld times %s %d overflows", (long long)end,
                    f->type == QV_TYPE_FIXED_LIST ? "list size" : "byte width", (int)scale);
    if (f->type == QV_TYPE_NULL) {
        if (a->null_count != -1 && a->null_count != a->length)
            return fail(v, "a null array of length %lld has null_count %lld", (long long)a->length,
                        (long long)a->null_count);
        return 0;
    }
    const uint8_t *validity = a->buffers[0];
    if (!validity && a->null_count > 0)
        return fail(v, "null_count %lld but no validity bitmap", (long long)a->null_count);
    if (v->level == QV_VALIDATE_FULL && validity && a->null_count >= 0) {
        int64_t nulls = a->length - qv_bits_count(validity, a->offset, a->length);
        if (nulls != a->null_count)
            return fail(v, "null_count %lld does not match the validity bitmap (%lld nulls)",
                        (long long)a->null_count, (long long)nulls);
    }

    int64_t first, last;
    int rc;
    switch (f->type) {
    case QV_TYPE_UTF8:
    case QV_TYPE_LARGE_UTF8:
    case QV_TYPE_BINARY:
    case QV_TYPE_LARGE_BINARY: {
        bool wide = f->type == QV_TYPE_LARGE_UTF8 || f->type == QV_TYPE_LARGE_BINARY;
        if ((rc = check_offsets(v, a, wide, &first, &last))) return rc;
        if (last > first && !a->buffers[2])
            return fail(v, "data buffer is NULL but offsets span %lld bytes",
                        (long long)(last - first));
        if (v->level == QV_VALIDATE_FULL &&
            (f->type == QV_TYPE_UTF8 || f->type == QV_TYPE_LARGE_UTF8))
            return check_utf8(v, a, wide, first, last);
        return 0;
    }
    case QV_TYPE_STRUCT:
        for (int64_t i = 0; i < nc; i++) {
            const struct ArrowArray *c = a->children[i];
            /* A child too broken to have a length is reported by its own
             * validation below. */
            if (c && c->release && c->length >= 0 && c->length < end) {
                size_t mark = qv__path_push(&v->path, f->children[i].name);
                rc = fail(v, "child length %lld is shorter than the parent's offset + length %lld",
                          (long long)c->length, (long long)end);
                qv__path_pop(&v->path, mark);
                return rc;
            }
            if ((rc = validate_child(v, c, &f->children[i], depth))) return rc;
        }
        return 0;
    case QV_TYPE_LIST:
    case QV_TYPE_LARGE_LIST:
    case QV_TYPE_MAP: {
        const struct ArrowArray *c = a->children[0];
        if ((rc = check_offsets(v, a, f->type == QV_TYPE_LARGE_LIST, &first, &last))) return rc;
        if (f->type == QV_TYPE_MAP && c->release && c->null_count > 0)
            return fail(v, "map entries must not be null (null_count %lld)", (long long)c->null_count);
        if ((rc = validate_child(v, c, &f->children[0], depth))) return rc;
        if (last > c->length)
            return fail(v, "last offset %lld is past the child's length %lld", (long long)last,
                        (long long)c->length);
        if (f->type != QV_TYPE_MAP) return 0;
        if (v->level == QV_VALIDATE_FULL) {
            const struct ArrowArray *keys = c->children[0];
            if (keys->buffers && keys->n_buffers > 0 && keys->buffers[0] && keys->null_count != 0) {
                for (int64_t i = first; i < last; i++)
                    if (!is_valid(keys, keys->offset + c->offset + i))
                        return fail(v, "map key at entry %lld is null", (long long)i);
            }
        }
        return 0;
    }
    case QV_TYPE_FIXED_LIST: {
        const struct ArrowArray *c = a->children[0];
        uint64_t need = (uint64_t)end * (uint64_t)f->list_size; /* checked above */
        if ((rc = validate_child(v, c, &f->children[0], depth))) return rc;
        if ((uint64_t)c->length < need)
            return fail(v, "child length %lld is shorter than (offset + length) * %d = %lld",
                        (long long)c->length, (int)f->list_size, (long long)need);
        return 0;
    }
    default: /* fixed width: bool, numbers, decimal, date, timestamp, fixed binary */
        if (a->length > 0 && !a->buffers[1] &&
            !(f->type == QV_TYPE_FIXED_BINARY && f->byte_width == 0))
            return fail(v, "values buffer is NULL for %lld values", (long long)a->length);
        if (v->level == QV_VALIDATE_FULL && f->type == QV_TYPE_DECIMAL128) {
            const int64_t i = qv__decimal_first_unfit(a, f->precision);
            if (i >= 0)
                return fail(v, "value at index %lld does not fit decimal128(%d, %d)",
                            (long long)i, (int)f->precision, (int)f->scale);
        }
        return 0;
    }
}

int qv_arrow_array_validate(const struct ArrowArray *array, const struct qv_field *field,
                            enum qv_validate_level level, struct qv_error *err) {
    if (!field) return qv_error_set(err, EINVAL, "array validate: NULL field");
    struct vctx v = {.level = level, .err = err};
    qv__path_init(&v.path);
    return validate_node(&v, array, field, 0);
}

int qv_arrow_array_import(struct ArrowArray *dst, struct ArrowArray *src,
                          const struct qv_field *field, enum qv_validate_level level,
                          struct qv_error *err) {
    if (!dst) return qv_error_set(err, EINVAL, "array import: NULL destination");
    if (dst->release)
        return qv_error_set(err, EINVAL, "array import: the destination still owns data");
    int rc = qv_arrow_array_validate(src, field, level, err);
    if (rc) return qv_error_wrap(err, rc, "array import: ");
    return qv_arrow_array_move(dst, src, err);
}
