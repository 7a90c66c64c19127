#include "random_batch.h"

#include <math.h>
#include <string.h>

uint64_t rb_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return (double)(rb_next(s) >> 11) / 9007199254740992.0; }

static int64_t pick_int(uint64_t *s, int64_t lo, int64_t hi, const struct rb_options *o) {
    uint64_t r = rb_next(s);
    if (o->low_cardinality) return lo + (int64_t)(r % 7);
    switch (r % 16) {
    case 0: return lo;
    case 1: return hi;
    case 2: return 0;
    default: {
        uint64_t span = (uint64_t)hi - (uint64_t)lo;
        return span == UINT64_MAX ? (int64_t)rb_next(s) : (int64_t)((uint64_t)lo + rb_next(s) % (span + 1));
    }
    }
}

static double pick_double(uint64_t *s, const struct rb_options *o) {
    uint64_t r = rb_next(s);
    if (o->low_cardinality) return (double)(r % 5) * 0.25;
    switch (r % 20) {
    case 0: return NAN;
    case 1: return -0.0;
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return 0.0;
    case 5: return 1e308;
    default: return (unit(s) - 0.5) * 2000.0;
    }
}

static const char *words[] = {"", "a", "quiver", "arrow", "héllo", "日本語", "spark",
                              "a much longer string that goes on for a while", "x\ty"};

static int append_value(struct qv_appender *a, uint64_t *s, const struct rb_options *o);

static int append_field(struct qv_appender *a, uint64_t *s, const struct rb_options *o) {
    const struct qv_field *f = qv_appender_field(a);
    if (f->type == QV_TYPE_NULL) return qv_append_null(a);
    if (f->nullable && unit(s) < o->null_prob) return qv_append_null(a);
    return append_value(a, s, o);
}


static int append_value(struct qv_appender *a, uint64_t *s, const struct rb_options *o) {
    const struct qv_field *f = qv_appender_field(a);
    char buf[128];
    switch (f->type) {
    case QV_TYPE_BOOL: return qv_append_bool(a, rb_next(s) & 1);
    case QV_TYPE_INT8: return qv_append_int8(a, (int8_t)pick_int(s, INT8_MIN, INT8_MAX, o));
    case QV_TYPE_INT16: return qv_append_int16(a, (int16_t)pick_int(s, INT16_MIN, INT16_MAX, o));
    case QV_TYPE_INT32: return qv_append_int32(a, (int32_t)pick_int(s, INT32_MIN, INT32_MAX, o));
    case QV_TYPE_DATE32: return qv_append_date32(a, (int32_t)pick_int(s, -100000, 100000, o));
    case QV_TYPE_INT64: return qv_append_int64(a, pick_int(s, INT64_MIN, INT64_MAX, o));
    case QV_TYPE_TIMESTAMP: return qv_append_timestamp(a, pick_int(s, -(INT64_C(1) << 50), INT64_C(1) << 50, o));
    case QV_TYPE_UINT8: return qv_append_uint8(a, (uint8_t)pick_int(s, 0, UINT8_MAX, o));
    case QV_TYPE_UINT16: return qv_append_uint16(a, (uint16_t)pick_int(s, 0, UINT16_MAX, o));
    case QV_TYPE_UINT32: return qv_append_uint32(a, (uint32_t)pick_int(s, 0, UINT32_MAX, o));
    case QV_TYPE_UINT64: return qv_append_uint64(a, (uint64_t)pick_int(s, INT64_MIN, INT64_MAX, o));
    case QV_TYPE_FLOAT16: return qv_append_float16(a, (uint16_t)rb_next(s));
    case QV_TYPE_FLOAT32: return qv_append_float32(a, (float)pick_double(s, o));
    case QV_TYPE_FLOAT64: return qv_append_float64(a, pick_double(s, o));
    case QV_TYPE_DECIMAL128:
        if (f->precision <= 18) {
            int64_t bound = 1;
            for (int i = 0; i < f->precision; i++) bound *= 10;
            return qv_append_decimal64(a, pick_int(s, -(bound - 1), bound - 1, o));
        }
        return qv_append_decimal128(a, rb_next(s), (int64_t)(rb_next(s) % 1000) - 500);
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY: {
        uint64_t r = rb_next(s);
        if (o->low_cardinality || r % 3 == 0) {
            const char *w = words[r % (sizeof words / sizeof words[0])];
            return qv_append_string(a, w, strlen(w));
        }
        int n = o->max_string ? (int)(rb_next(s) % (uint64_t)(o->max_string + 1)) : 0;
        if (n > (int)sizeof buf) n = sizeof buf;
        for (int i = 0; i < n; i++) buf[i] = (char)('a' + rb_next(s) % 26);
        return qv_append_binary(a, buf, (size_t)n);
    }
    case QV_TYPE_FIXED_BINARY: {
        for (int i = 0; i < f->byte_width && i < (int)sizeof buf; i++) buf[i] = (char)rb_next(s);
        return qv_append_fixed_binary(a, buf, (size_t)f->byte_width);
    }
    case QV_TYPE_STRUCT: {
        int rc = qv_append_struct_begin(a);
        for (int64_t i = 0; !rc && i < f->n_children; i++)
            rc = append_field(qv_appender_child(a, i), s, o);
        return rc ? rc : qv_append_struct_end(a);
    }
    case QV_TYPE_LIST: case QV_TYPE_LARGE_LIST: {
        int rc = qv_append_list_begin(a);
        int n = (int)(rb_next(s) % (uint64_t)(o->max_list + 1));
        for (int i = 0; !rc && i < n; i++) rc = append_field(qv_appender_child(a, 0), s, o);
        return rc ? rc : qv_append_list_end(a);
    }
    case QV_TYPE_FIXED_LIST: {
        int rc = qv_append_list_begin(a);
        for (int i = 0; !rc && i < f->list_size; i++) rc = append_field(qv_appender_child(a, 0), s, o);
        return rc ? rc : qv_append_list_end(a);
    }
    case QV_TYPE_MAP: {
        int rc = qv_append_map_begin(a);
        int n = (int)(rb_next(s) % (uint64_t)(o->max_list + 1));
        for (int i = 0; !rc && i < n; i++) {
            rc = append_value(qv_appender_map_keys(a), s, o);
            if (!rc) rc = append_field(qv_appender_map_values(a), s, o);
        }
        return rc ? rc : qv_append_map_end(a);
    }
    default: return qv_append_null(a);
    }
}

int rb_append_rows(struct qv_builder *b, int64_t rows, uint64_t *seed, const struct rb_options *o) {
    int64_t nc = qv_builder_num_columns(b);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < nc; c++) {
            int rc = append_field(qv_builder_column(b, c), seed, o);
            if (rc) return rc;
        }
    return 0;
}

int rb_batch(const struct qv_schema *schema, int64_t rows, uint64_t seed,
             const struct rb_options *o, struct qv_reservation *r, struct ArrowArray *out) {
    struct qv_builder *b;
    struct qv_error err;
    out->release = NULL;
    int rc = qv_builder_create(schema, r, NULL, &b, &err);
    if (rc) return rc;
    rc = rb_append_rows(b, rows, &seed, o);
    if (!rc) rc = qv_builder_finish(b, out, &err);
    qv_builder_destroy(b);
    return rc;
}

int rb_all_types_schema(struct qv_reservation *r, struct qv_schema **out) {
    static const struct qv_kv meta[] = {{"origin", "test", -1, -1}};
    static const struct qv_field point[] = {
        {.name = "x", .type = QV_TYPE_FLOAT64, .nullable = true},
        {.name = "label", .type = QV_TYPE_UTF8, .nullable = true},
    };
    static const struct qv_field item_i64 = {.name = "item", .type = QV_TYPE_INT64, .nullable = true};
    static const struct qv_field item_str = {.name = "item", .type = QV_TYPE_UTF8, .nullable = true};
    static const struct qv_field item_point = {.name = "item", .type = QV_TYPE_STRUCT, .nullable = true,
                                               .n_children = 2, .children = point};
    static const struct qv_field entry_kids[] = {
        {.name = "key", .type = QV_TYPE_UTF8, .nullable = false},
        {.name = "value", .type = QV_TYPE_INT32, .nullable = true},
    };
    static const struct qv_field entries = {.name = "entries", .type = QV_TYPE_STRUCT,
                                            .nullable = false, .n_children = 2, .children = entry_kids};
    static const struct qv_field item_f32 = {.name = "item", .type = QV_TYPE_FLOAT32, .nullable = true};
    static const struct qv_field cols[] = {
        {.name = "b", .type = QV_TYPE_BOOL, .nullable = true},
        {.name = "i8", .type = QV_TYPE_INT8, .nullable = true},
        {.name = "i16", .type = QV_TYPE_INT16, .nullable = true},
        {.name = "i32", .type = QV_TYPE_INT32, .nullable = true},
        {.name = "i64", .type = QV_TYPE_INT64, .nullable = false},
        {.name = "u8", .type = QV_TYPE_UINT8, .nullable = true},
        {.name = "u16", .type = QV_TYPE_UINT16, .nullable = true},
        {.name = "u32", .type = QV_TYPE_UINT32, .nullable = true},
        {.name = "u64", .type = QV_TYPE_UINT64, .nullable = true},
        {.name = "f16", .type = QV_TYPE_FLOAT16, .nullable = true},
        {.name = "f32", .type = QV_TYPE_FLOAT32, .nullable = true},
        {.name = "f64", .type = QV_TYPE_FLOAT64, .nullable = true, .n_metadata = 1, .metadata = meta},
        {.name = "d9", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 9, .scale = 2},
        {.name = "d38", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 38, .scale = 10},
        {.name = "day", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "ts", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_US, .timezone = "UTC"},
        {.name = "tsn", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_NS},
        {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
        {.name = "ls", .type = QV_TYPE_LARGE_UTF8, .nullable = true},
        {.name = "bin", .type = QV_TYPE_BINARY, .nullable = true},
        {.name = "lbin", .type = QV_TYPE_LARGE_BINARY, .nullable = true},
        {.name = "fb", .type = QV_TYPE_FIXED_BINARY, .nullable = true, .byte_width = 5},
        {.name = "nul", .type = QV_TYPE_NULL, .nullable = true},
        {.name = "pt", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = point},
        {.name = "li", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = &item_i64},
        {.name = "lls", .type = QV_TYPE_LARGE_LIST, .nullable = true, .n_children = 1, .children = &item_str},
        {.name = "lp", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = &item_point},
        {.name = "fl", .type = QV_TYPE_FIXED_LIST, .nullable = true, .list_size = 3, .n_children = 1, .children = &item_f32},
        {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = &entries},
    };
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT,
                                         .n_children = sizeof cols / sizeof cols[0], .children = cols};
    struct qv_error err;
    return qv_schema_create(&root, r, out, &err);
}
