/* Test helper for the builder tests: an all-types schema and a deterministic
 * value generator that runs in two modes over the same random sequence:
 * APPEND drives a builder appender, CHECK verifies an exported (or imported,
 * or bulk-copied) array value by value. Both modes consume the random stream
 * identically, so any batch built with a seed can be checked with it. */
#ifndef QV_TEST_BUILDER_GEN_H
#define QV_TEST_BUILDER_GEN_H

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quiver/arrow.h"

struct gen {
    uint64_t s;
    int null_one_in; /* 0: no nulls */
    bool tolerant;   /* APPEND: record the first failure in rc instead of asserting */
    int rc;
};

/* An append in APPEND mode must succeed, unless the generator tolerates
 * failures (fault injection), which then only records the first code. */
#define GEN_OK(g, call)                                      \
    do {                                                     \
        int gen_rc_ = (call);                                \
        if ((g)->tolerant) {                                 \
            if (gen_rc_ && !(g)->rc) (g)->rc = gen_rc_;      \
        } else {                                             \
            assert_int_equal(gen_rc_, 0);                    \
        }                                                    \
    } while (0)

static inline struct gen gen_make(uint64_t seed, int null_one_in) {
    struct gen g = {.s = seed, .null_one_in = null_one_in};
    return g;
}

static inline uint64_t gen_next(struct gen *g) {
    uint64_t z = (g->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static inline uint64_t gen_pick(struct gen *g, uint64_t n) { return gen_next(g) % n; }

/* ---- the all-types schema ---- */

static const struct qv_kv gen_meta_col[] = {{"unit", "meters", -1, -1}, {"k\x01", "v\0x", 2, 3}};
static const struct qv_kv gen_meta_root[] = {{"origin", "test_builder", -1, -1}};

static const struct qv_field gen_struct_inner[] = {{.name = "w", .type = QV_TYPE_FLOAT64, .nullable = true}};
static const struct qv_field gen_struct_kids[] = {
    {.name = "x", .type = QV_TYPE_INT32, .nullable = false},
    {.name = "y", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "z", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 1, .children = gen_struct_inner},
};
static const struct qv_field gen_list_i64[] = {{.name = "item", .type = QV_TYPE_INT64, .nullable = true}};
static const struct qv_field gen_llist_utf8[] = {{.name = "item", .type = QV_TYPE_UTF8, .nullable = true}};
static const struct qv_field gen_flist_i16[] = {{.name = "item", .type = QV_TYPE_INT16, .nullable = true}};
static const struct qv_field gen_list_i32[] = {{.name = "item", .type = QV_TYPE_INT32, .nullable = true}};
static const struct qv_field gen_map1_kv[] = {
    {.name = "key", .type = QV_TYPE_UTF8, .nullable = false},
    {.name = "value", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = gen_list_i32},
};
static const struct qv_field gen_map1_entries[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .nullable = false, .n_children = 2, .children = gen_map1_kv}};
static const struct qv_field gen_map2_kv[] = {
    {.name = "key", .type = QV_TYPE_INT32, .nullable = false},
    {.name = "value", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field gen_map2_entries[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .nullable = false, .n_children = 2, .children = gen_map2_kv}};
static const struct qv_field gen_deep_struct[] = {
    {.name = "a", .type = QV_TYPE_BOOL, .nullable = true},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = gen_map2_entries},
};
static const struct qv_field gen_deep_item[] = {
    {.name = "item", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = gen_deep_struct}};
static const struct qv_field gen_nn_struct[] = {
    {.name = "p", .type = QV_TYPE_INT32, .nullable = false},
    {.name = "q", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field gen_map3_kv[] = {
    {.name = "key", .type = QV_TYPE_INT64, .nullable = false},
    {.name = "value", .type = QV_TYPE_FLOAT32, .nullable = true},
};
static const struct qv_field gen_map3_entries[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .nullable = false, .n_children = 2, .children = gen_map3_kv}};

static const struct qv_field gen_columns[] = {
    {.name = "b", .type = QV_TYPE_BOOL, .nullable = true},
    {.name = "i8", .type = QV_TYPE_INT8, .nullable = true},
    {.name = "i16", .type = QV_TYPE_INT16, .nullable = true},
    {.name = "i32", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "i64", .type = QV_TYPE_INT64, .nullable = true, .n_metadata = 2, .metadata = gen_meta_col},
    {.name = "u8", .type = QV_TYPE_UINT8, .nullable = true},
    {.name = "u16", .type = QV_TYPE_UINT16, .nullable = true},
    {.name = "u32", .type = QV_TYPE_UINT32, .nullable = true},
    {.name = "u64", .type = QV_TYPE_UINT64, .nullable = true},
    {.name = "f16", .type = QV_TYPE_FLOAT16, .nullable = true},
    {.name = "f32", .type = QV_TYPE_FLOAT32, .nullable = true},
    {.name = "f64", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "dec9", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 9, .scale = 2},
    {.name = "dec18", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 18, .scale = 0},
    {.name = "dec38", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 38, .scale = 10},
    {.name = "date", .type = QV_TYPE_DATE32, .nullable = true},
    {.name = "ts_s", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_S},
    {.name = "ts_ms", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_MS, .timezone = "Europe/Paris"},
    {.name = "ts_us", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_US, .timezone = "UTC"},
    {.name = "ts_ns", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_NS},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "ls", .type = QV_TYPE_LARGE_UTF8, .nullable = true},
    {.name = "bin", .type = QV_TYPE_BINARY, .nullable = true},
    {.name = "lbin", .type = QV_TYPE_LARGE_BINARY, .nullable = true},
    {.name = "fbin", .type = QV_TYPE_FIXED_BINARY, .nullable = true, .byte_width = 5},
    {.name = "nul", .type = QV_TYPE_NULL, .nullable = true},
    {.name = "st", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 3, .children = gen_struct_kids},
    {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = gen_list_i64},
    {.name = "ll", .type = QV_TYPE_LARGE_LIST, .nullable = true, .n_children = 1, .children = gen_llist_utf8},
    {.name = "fl", .type = QV_TYPE_FIXED_LIST, .nullable = true, .list_size = 3, .n_children = 1, .children = gen_flist_i16},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = gen_map1_entries},
    {.name = "deep", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = gen_deep_item},
    {.name = "nn", .type = QV_TYPE_INT64, .nullable = false},
    {.name = "nst", .type = QV_TYPE_STRUCT, .nullable = false, .n_children = 2, .children = gen_nn_struct},
    {.name = "ms", .type = QV_TYPE_MAP, .nullable = true, .keys_sorted = true, .n_children = 1, .children = gen_map3_entries},
};

static const struct qv_field gen_root = {
    .name = "",
    .type = QV_TYPE_STRUCT,
    .n_children = sizeof gen_columns / sizeof gen_columns[0],
    .children = gen_columns,
    .n_metadata = 1,
    .metadata = gen_meta_root,
};

/* ---- value generation ---- */

__extension__ typedef __int128 gen_i128;

static inline gen_i128 gen_pow10(int p) {
    gen_i128 v = 1;
    while (p-- > 0) v *= 10;
    return v;
}

/* Integers: a quarter of the time an extreme of the width. */
static inline uint64_t gen_int_bits(struct gen *g, int bytes, bool is_signed) {
    uint64_t mask = bytes == 8 ? UINT64_MAX : (UINT64_C(1) << (bytes * 8)) - 1;
    uint64_t smin = UINT64_C(1) << (bytes * 8 - 1);
    switch (gen_pick(g, 8)) {
    case 0: return is_signed ? smin : 0;              /* MIN */
    case 1: return is_signed ? smin - 1 : mask;       /* MAX */
    case 2: return is_signed ? mask : 1;              /* -1 / 1 */
    case 3: return 0;
    default: return gen_next(g) & mask;
    }
}

static inline double gen_double(struct gen *g) {
    switch (gen_pick(g, 12)) {
    case 0: return NAN;
    case 1: return -0.0;
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return DBL_MIN / 4; /* subnormal */
    case 5: return DBL_MAX;
    default: return ((double)(int64_t)gen_next(g)) / 1e6;
    }
}

static inline float gen_float(struct gen *g) {
    switch (gen_pick(g, 12)) {
    case 0: return NAN;
    case 1: return -0.0f;
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return FLT_MIN / 4;
    case 5: return FLT_MAX;
    default: return (float)((int32_t)gen_next(g)) / 1000.0f;
    }
}

/* Unscaled decimal in range for precision p. */
static inline gen_i128 gen_decimal(struct gen *g, int p) {
    gen_i128 max = gen_pow10(p) - 1;
    switch (gen_pick(g, 6)) {
    case 0: return max;
    case 1: return -max;
    case 2: return 0;
    default: {
        gen_i128 v = ((gen_i128)(gen_next(g) >> 1) << 64) | gen_next(g);
        v %= max + 1;
        return (gen_next(g) & 1) ? -v : v;
    }
    }
}

/* Bytes of a string/binary value into buf (<= 256 bytes); UTF-8 when utf8. */
static inline int64_t gen_bytes(struct gen *g, bool utf8, uint8_t *buf) {
    static const char *const pieces[] = {"a", "Zz", "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac",
                                         "\xf0\x9f\x98\x80", " ", "0123456789"};
    int64_t n = 0;
    uint64_t k = gen_pick(g, 5) == 0 ? 0 : gen_pick(g, 20); /* empty strings often */
    for (uint64_t i = 0; i < k; i++) {
        if (utf8) {
            const char *p = pieces[gen_pick(g, sizeof pieces / sizeof pieces[0])];
            size_t l = strlen(p);
            memcpy(buf + n, p, l);
            n += (int64_t)l;
        } else {
            buf[n++] = (uint8_t)gen_next(g); /* includes NUL bytes */
        }
    }
    return n;
}

#define GEN_CHECK(cond, ...)                                                      \
    do {                                                                          \
        if (!(cond)) {                                                            \
            print_error("check failed: %s: ", #cond);                             \
            print_error(__VA_ARGS__);                                             \
            print_error("\n");                                                    \
            fail();                                                               \
        }                                                                         \
    } while (0)

static inline bool gen_valid(const struct ArrowArray *arr, int64_t phys) {
    const uint8_t *v = arr->n_buffers ? arr->buffers[0] : NULL;
    return !v || qv_bit_get(v, phys);
}

static inline int64_t gen_off(const struct ArrowArray *arr, bool wide, int64_t i) {
    return wide ? ((const int64_t *)arr->buffers[1])[i] : ((const int32_t *)arr->buffers[1])[i];
}

/* One value of field f: APPEND mode when `a` is non-NULL (asserts the
 * append succeeds), CHECK mode otherwise (arr, logical index idx). */
static inline void gen_value(struct gen *g, const struct qv_field *f, struct qv_appender *a,
                      const struct ArrowArray *arr, int64_t idx) {
    int64_t phys = arr ? arr->offset + idx : 0;
    const char *name = f->name;
    bool null = f->type == QV_TYPE_NULL ||
                (f->nullable && g->null_one_in && gen_pick(g, (uint64_t)g->null_one_in) == 0);
    if (a) {
        if (null) {
            GEN_OK(g, qv_append_null(a));
            return;
        }
    } else {
        if (f->type == QV_TYPE_NULL) {
            GEN_CHECK(arr->n_buffers == 0, "field %s", name);
            return;
        }
        GEN_CHECK(gen_valid(arr, phys) == !null, "field %s index %lld validity", name, (long long)idx);
        if (null) return;
    }
    static const uint8_t no_values[64];
    const uint8_t *vals = no_values; /* never NULL, so the optimizer sees no NULL memcpy */
    if (arr && arr->n_buffers > 1) {
        GEN_CHECK(arr->buffers[1] != NULL, "field %s: NULL values buffer", name);
        if (arr->buffers[1]) vals = arr->buffers[1];
    }
    switch (f->type) {
    case QV_TYPE_BOOL: {
        bool v = gen_next(g) & 1;
        if (a) GEN_OK(g, qv_append_bool(a, v));
        else GEN_CHECK(qv_bit_get(vals, phys) == (int)v, "field %s index %lld", name, (long long)idx);
        return;
    }
    case QV_TYPE_INT8: case QV_TYPE_UINT8: case QV_TYPE_INT16: case QV_TYPE_UINT16:
    case QV_TYPE_INT32: case QV_TYPE_UINT32: case QV_TYPE_INT64: case QV_TYPE_UINT64:
    case QV_TYPE_DATE32: case QV_TYPE_TIMESTAMP: case QV_TYPE_FLOAT16: {
        int w = f->type == QV_TYPE_INT8 || f->type == QV_TYPE_UINT8 ? 1
              : f->type == QV_TYPE_INT16 || f->type == QV_TYPE_UINT16 || f->type == QV_TYPE_FLOAT16 ? 2
              : f->type == QV_TYPE_INT32 || f->type == QV_TYPE_UINT32 || f->type == QV_TYPE_DATE32 ? 4 : 8;
        bool sgn = f->type == QV_TYPE_INT8 || f->type == QV_TYPE_INT16 || f->type == QV_TYPE_INT32 ||
                   f->type == QV_TYPE_INT64 || f->type == QV_TYPE_DATE32 || f->type == QV_TYPE_TIMESTAMP;
        uint64_t v = gen_int_bits(g, w, sgn);
        if (a) {
            int rc = -1;
            switch (f->type) {
            case QV_TYPE_INT8: rc = qv_append_int8(a, (int8_t)v); break;
            case QV_TYPE_UINT8: rc = qv_append_uint8(a, (uint8_t)v); break;
            case QV_TYPE_INT16: rc = qv_append_int16(a, (int16_t)v); break;
            case QV_TYPE_UINT16: rc = qv_append_uint16(a, (uint16_t)v); break;
            case QV_TYPE_FLOAT16: rc = qv_append_float16(a, (uint16_t)v); break;
            case QV_TYPE_INT32: rc = qv_append_int32(a, (int32_t)v); break;
            case QV_TYPE_DATE32: rc = qv_append_date32(a, (int32_t)v); break;
            case QV_TYPE_UINT32: rc = qv_append_uint32(a, (uint32_t)v); break;
            case QV_TYPE_INT64: rc = qv_append_int64(a, (int64_t)v); break;
            case QV_TYPE_TIMESTAMP: rc = qv_append_timestamp(a, (int64_t)v); break;
            default: rc = qv_append_uint64(a, v); break;
            }
            GEN_OK(g, rc);
        } else {
            uint64_t got = 0;
            memcpy(&got, vals + phys * w, (size_t)w);
            GEN_CHECK(got == v, "field %s index %lld: %llx != %llx", name, (long long)idx,
                      (unsigned long long)got, (unsigned long long)v);
        }
        return;
    }
    case QV_TYPE_FLOAT32: {
        float v = gen_float(g);
        if (a) GEN_OK(g, qv_append_float32(a, v));
        else GEN_CHECK(memcmp(vals + phys * 4, &v, 4) == 0, "field %s index %lld", name, (long long)idx);
        return;
    }
    case QV_TYPE_FLOAT64: {
        double v = gen_double(g);
        if (a) GEN_OK(g, qv_append_float64(a, v));
        else GEN_CHECK(memcmp(vals + phys * 8, &v, 8) == 0, "field %s index %lld", name, (long long)idx);
        return;
    }
    case QV_TYPE_DECIMAL128: {
        gen_i128 v = gen_decimal(g, f->precision);
        bool narrow = f->precision <= 18 || (v >= INT64_MIN && v <= INT64_MAX && (gen_next(g) & 1));
        if (a) {
            if (narrow) GEN_OK(g, qv_append_decimal64(a, (int64_t)v));
            else GEN_OK(g, qv_append_decimal128(a, (uint64_t)v, (int64_t)(v >> 64)));
        } else {
            gen_i128 got;
            memcpy(&got, vals + phys * 16, 16);
            GEN_CHECK(got == v, "field %s index %lld", name, (long long)idx);
        }
        return;
    }
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY: {
        uint8_t buf[256];
        bool utf8 = f->type == QV_TYPE_UTF8 || f->type == QV_TYPE_LARGE_UTF8;
        int64_t n = gen_bytes(g, utf8, buf);
        if (a) {
            GEN_OK(g, utf8 ? qv_append_string(a, (const char *)buf, (size_t)n)
                           : qv_append_binary(a, buf, (size_t)n));
        } else {
            bool wide = f->type == QV_TYPE_LARGE_UTF8 || f->type == QV_TYPE_LARGE_BINARY;
            int64_t s = gen_off(arr, wide, phys), e = gen_off(arr, wide, phys + 1);
            GEN_CHECK(e - s == n, "field %s index %lld length %lld != %lld", name, (long long)idx,
                      (long long)(e - s), (long long)n);
            GEN_CHECK(n == 0 || memcmp((const uint8_t *)arr->buffers[2] + s, buf, (size_t)n) == 0,
                      "field %s index %lld bytes", name, (long long)idx);
        }
        return;
    }
    case QV_TYPE_FIXED_BINARY: {
        uint8_t buf[64];
        for (int i = 0; i < f->byte_width; i++) buf[i] = (uint8_t)gen_next(g);
        if (a) GEN_OK(g, qv_append_fixed_binary(a, buf, (size_t)f->byte_width));
        else GEN_CHECK(memcmp(vals + phys * f->byte_width, buf, (size_t)f->byte_width) == 0,
                       "field %s index %lld", name, (long long)idx);
        return;
    }
    case QV_TYPE_STRUCT:
        if (a) GEN_OK(g, qv_append_struct_begin(a));
        for (int64_t c = 0; c < f->n_children; c++)
            gen_value(g, &f->children[c], a ? qv_appender_child(a, c) : NULL,
                      arr ? arr->children[c] : NULL, phys);
        if (a) GEN_OK(g, qv_append_struct_end(a));
        return;
    case QV_TYPE_LIST: case QV_TYPE_LARGE_LIST: case QV_TYPE_FIXED_LIST: {
        int64_t n = f->type == QV_TYPE_FIXED_LIST ? f->list_size
                  : (int64_t)(gen_pick(g, 3) == 0 ? 0 : gen_pick(g, 6));
        int64_t start = 0;
        if (a) {
            GEN_OK(g, qv_append_list_begin(a));
        } else if (f->type == QV_TYPE_FIXED_LIST) {
            start = phys * f->list_size;
        } else {
            bool wide = f->type == QV_TYPE_LARGE_LIST;
            start = gen_off(arr, wide, phys);
            GEN_CHECK(gen_off(arr, wide, phys + 1) - start == n, "field %s index %lld list size",
                      name, (long long)idx);
        }
        for (int64_t k = 0; k < n; k++)
            gen_value(g, &f->children[0], a ? qv_appender_child(a, 0) : NULL,
                      arr ? arr->children[0] : NULL, start + k);
        if (a) GEN_OK(g, qv_append_list_end(a));
        return;
    }
    case QV_TYPE_MAP: {
        int64_t n = (int64_t)(gen_pick(g, 3) == 0 ? 0 : gen_pick(g, 5));
        const struct qv_field *kf = &f->children[0].children[0], *vf = &f->children[0].children[1];
        const struct ArrowArray *entries = arr ? arr->children[0] : NULL;
        int64_t start = 0;
        if (a) {
            GEN_OK(g, qv_append_map_begin(a));
        } else {
            start = gen_off(arr, false, phys);
            GEN_CHECK(gen_off(arr, false, phys + 1) - start == n, "field %s index %lld map size",
                      name, (long long)idx);
            GEN_CHECK(gen_valid(entries, entries->offset + start) || n == 0, "map entries valid");
        }
        for (int64_t k = 0; k < n; k++) {
            gen_value(g, kf, a ? qv_appender_map_keys(a) : NULL,
                      entries ? entries->children[0] : NULL, entries ? entries->offset + start + k : 0);
            gen_value(g, vf, a ? qv_appender_map_values(a) : NULL,
                      entries ? entries->children[1] : NULL, entries ? entries->offset + start + k : 0);
        }
        if (a) GEN_OK(g, qv_append_map_end(a));
        return;
    }
    default:
        fail_msg("unexpected type %d", (int)f->type);
    }
}

/* Appends `rows` rows of the root struct `root` to builder b. */
static inline void gen_append_rows(struct gen *g, struct qv_builder *b, const struct qv_field *root,
                            int64_t rows) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < root->n_children; c++)
            gen_value(g, &root->children[c], qv_builder_column(b, c), NULL, 0);
}

/* Checks rows [0, rows) of batch (a struct array of `root`). */
static inline void gen_check_rows(struct gen *g, const struct ArrowArray *batch,
                           const struct qv_field *root, int64_t rows) {
    assert_int_equal(batch->length, rows);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < root->n_children; c++)
            gen_value(g, &root->children[c], NULL, batch->children[c], batch->offset + r);
}

#endif
