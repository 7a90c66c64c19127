/* Rows of the old-format fixtures (compat_fixtures.h). The every-type files
 * use random_batch.c's generator with fixed seeds: its output for a seed is
 * part of what these fixtures record, so a change to random_batch.c that
 * changes its values makes test_format_compat fail loudly (regenerate the
 * expectation, never the fixtures, in that case: the fixtures are what
 * old code wrote). The long strings are a formula of the row number. */
#include <stdio.h>
#include <string.h>

#include "compat_fixtures.h"
#include "random_batch.h"

const struct cf_spec cf_specs[] = {
    {"v1_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v1_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "every type in compact mode (whole chunks as zstd/lz4 frames where smaller), 2 row groups"},
    {"v1_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "id int64 + 100-700 byte strings (zstd frames of 16384 values: 2 frames in row group 0) "
     "+ a short tag, every 7th text null, 2 row groups"},
    /* The same rows as written by the format 2.0 writer (per-block checksums,
     * zstd frames sized by bytes as well as values). */
    {"v2_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "format 2.0: every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v2_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "format 2.0: every type in compact mode, 2 row groups"},
    {"v2_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "format 2.0: id int64 + 100-700 byte strings (zstd frames capped at 128 KiB) + a short tag, "
     "every 7th text null, 2 row groups"},
    /* The same rows as written by the format 3.0 writer (encodings 15-17,
     * the entropy stage's bit-packed frames), the last before 4.0. */
    {"v3_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "format 3.0: every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v3_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "format 3.0: every type in compact mode, 2 row groups"},
    {"v3_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "format 3.0: id int64 + 100-700 byte strings + a short tag, every 7th text null, 2 row "
     "groups"},
    /* The same rows as written by the format 4.0 writer (a for node's
     * residuals may be narrower than the node, sequential entropy frames),
     * the last before 5.0. */
    {"v4_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "format 4.0: every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v4_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "format 4.0: every type in compact mode, 2 row groups"},
    {"v4_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "format 4.0: id int64 + 100-700 byte strings + a short tag, every 7th text null, 2 row "
     "groups"},
    /* The same rows as written by the format 5.0 writer (encoding 18, ans
     * frames of 8,192 values, blocks of kind 1), the last before 6.0. */
    {"v5_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "format 5.0: every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v5_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "format 5.0: every type in compact mode, 2 row groups"},
    {"v5_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "format 5.0: id int64 + 100-700 byte strings + a short tag, every 7th text null, 2 row "
     "groups"},
    /* The same rows as written by the format 6.0 writer (ans blocks of 32
     * states), the last before 7.0. */
    {"v6_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "format 6.0: every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v6_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "format 6.0: every type in compact mode, 2 row groups"},
    {"v6_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "format 6.0: id int64 + 100-700 byte strings + a short tag, every 7th text null, 2 row "
     "groups"},
    /* The same rows as written by the format 7.0 writer (encoding 19,
     * bucket), the last before 8.0. */
    {"v7_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "format 7.0: every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v7_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "format 7.0: every type in compact mode, 2 row groups"},
    {"v7_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "format 7.0: id int64 + 100-700 byte strings + a short tag, every 7th text null, 2 row "
     "groups"},
    /* The same rows as written by the format 8.0 writer (encoding 20,
     * seqpack), the last before 9.0. */
    {"v8_0_all_types.qvr", 2500, 1024, 0, 0, 1401,
     "format 8.0: every type, nulls at every level, 3 row groups (1024, 1024, 452 rows)"},
    {"v8_0_compact.qvr", 1500, 1024, 1, 0, 1402,
     "format 8.0: every type in compact mode, 2 row groups"},
    {"v8_0_long_strings.qvr", 18000, 17000, 0, 1, 1403,
     "format 8.0: id int64 + 100-700 byte strings + a short tag, every 7th text null, 2 row "
     "groups"},
};
const int cf_n_specs = (int)(sizeof cf_specs / sizeof cf_specs[0]);

int cf_schema(const struct cf_spec *s, struct qv_reservation *r, struct qv_schema **out) {
    if (!s->strings) return rb_all_types_schema(r, out);
    static const struct qv_field cols[] = {
        {.name = "id", .type = QV_TYPE_INT64, .nullable = false},
        {.name = "text", .type = QV_TYPE_UTF8, .nullable = true},
        {.name = "tag", .type = QV_TYPE_UTF8, .nullable = true},
    };
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 3,
                                         .children = cols};
    struct qv_error err;
    return qv_schema_create(&root, r, out, &err);
}

/* Row i's text: "row <i>: " then phrase (i * 7) mod 8 repeated to a length
 * of 100 + (i * 37) mod 600 bytes. Distinct strings (no dictionary), long
 * repeats (zstd far ahead of fsst), so the cascade picks zstd frames. */
static size_t text_of(int64_t i, char *buf, size_t cap) {
    static const char *const phrases[8] = {
        "the quick brown fox jumps over the lazy dog; ",
        "lorem ipsum dolor sit amet, consectetur adipiscing elit. ",
        "pack my box with five dozen liquor jugs! ",
        "sphinx of black quartz, judge my vow. ",
        "how vexingly quick daft zebras jump; ",
        "the five boxing wizards jump quickly. ",
        "jackdaws love my big sphinx of quartz. ",
        "a wizard's job is to vex chumps quickly in fog. ",
    };
    size_t len = 100 + (size_t)((i * 37) % 600);
    if (len > cap) len = cap;
    int n = snprintf(buf, cap, "row %lld: ", (long long)i);
    size_t pos = n > 0 ? (size_t)n : 0;
    const char *p = phrases[(i * 7) % 8];
    size_t pl = strlen(p);
    for (size_t k = 0; pos < len; k++, pos++) buf[pos] = p[k % pl];
    return len;
}

int cf_batch(const struct cf_spec *s, const struct qv_schema *schema, struct qv_reservation *r,
             struct ArrowArray *out) {
    if (!s->strings) {
        struct rb_options o = {.null_prob = 0.2, .max_list = 4, .max_string = 40};
        return rb_batch(schema, s->rows, s->seed, &o, r, out);
    }
    struct qv_builder *b;
    struct qv_error err;
    out->release = NULL;
    int rc = qv_builder_create(schema, r, NULL, &b, &err);
    if (rc) return rc;
    char buf[1024];
    static const char *const tags[5] = {"alpha", "beta", "gamma", "delta", "epsilon"};
    for (int64_t i = 0; !rc && i < s->rows; i++) {
        rc = qv_append_int64(qv_builder_column(b, 0), (int64_t)(s->seed * 1000003u) + i * 3);
        if (!rc && i % 7 == 3) rc = qv_append_null(qv_builder_column(b, 1));
        else if (!rc) rc = qv_append_string(qv_builder_column(b, 1), buf, text_of(i, buf, sizeof buf));
        if (!rc && i % 11 == 5) rc = qv_append_null(qv_builder_column(b, 2));
        else if (!rc) rc = qv_append_string(qv_builder_column(b, 2), tags[i % 5], strlen(tags[i % 5]));
    }
    if (!rc) rc = qv_builder_finish(b, out, &err);
    qv_builder_destroy(b);
    return rc;
}
