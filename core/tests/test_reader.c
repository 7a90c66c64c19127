/* Opening a file (reader.c): at most two reads, whatever the footer's size
 * (docs/format.md, "Opening in at most two reads"), and the leading magic
 * checked exactly when a read that is made anyway covers it. A counting
 * source over the file's bytes logs every read the open makes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_internal.h"
#include "quiver/format.h"
#include "scan_fixture.h"
#include "test_util.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

#define MAX_LOG 16

/* A memory source that logs each read. */
struct counting {
    struct qv_source inner;
    int n;
    uint64_t off[MAX_LOG], len[MAX_LOG];
};

static int counting_read_at(void *ctx, uint64_t offset, void *buf, size_t len,
                            struct qv_error *err) {
    struct counting *c = ctx;
    if (c->n < MAX_LOG) {
        c->off[c->n] = offset;
        c->len[c->n] = len;
    }
    c->n++;
    return c->inner.read_at(c->inner.ctx, offset, buf, len, err);
}

static void counting_close(void *ctx) {
    struct counting *c = ctx;
    qv_source_close(&c->inner);
}

/* Opens `bytes` through a counting source; returns the open's code. */
static int open_counted(const uint8_t *bytes, size_t size, struct counting *c,
                        struct qv_reader **rd, struct qv_error *err) {
    memset(c, 0, sizeof *c);
    assert_int_equal(qv_source_from_memory(bytes, size, "counted.qvr", &c->inner, NULL), 0);
    struct qv_source src = {.ctx = c, .name = c->inner.name, .size = c->inner.size,
                            .read_at = counting_read_at, .close = counting_close};
    return qv_reader_open_source(&src, NULL, res, rd, err);
}

/* Writes the scan fixture (n rows, row groups of rg rows) and returns its
 * bytes. */
static uint8_t *fixture(const char *name, int64_t n, int64_t rg, size_t *size) {
    char path[512];
    tu_path(path, sizeof path, name);
    assert_int_equal(fx_write(path, n, rg, res), 0);
    uint8_t *bytes = tu_read_file(path, size);
    assert_non_null(bytes);
    unlink(path);
    return bytes;
}

/* A file of `groups` row groups of 10 rows (ids, the rest null or empty),
 * so the footer grows with the row groups while the data stays small. */
static uint8_t *many_row_groups(const char *name, int64_t groups, size_t *size) {
    char path[512];
    tu_path(path, sizeof path, name);
    struct qv_schema *s;
    assert_int_equal(fx_schema(res, &s), 0);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = 10};
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, s, &o, res, &w, &err), 0);
    struct qv_builder *b = qv_writer_builder(w);
    int rc = 0;
    for (int64_t i = 0; i < groups * 10 && !rc; i++) {
        rc = qv_append_int64(qv_builder_column(b, 0), i);
        if (!rc) rc = qv_append_null(qv_builder_column(b, 1));
        if (!rc) rc = qv_append_null(qv_builder_column(b, 2));
        if (!rc) rc = qv_append_float64(qv_builder_column(b, 3), (double)i);
        if (!rc) rc = qv_append_list_begin(qv_builder_column(b, 4));
        if (!rc) rc = qv_append_list_end(qv_builder_column(b, 4));
        if (!rc && i % 10 == 9) rc = qv_writer_end_rows(w, &err);
    }
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("write: %s", err.message);
    qv_writer_close(w);
    qv_schema_destroy(s);
    uint8_t *bytes = tu_read_file(path, size);
    assert_non_null(bytes);
    unlink(path);
    return bytes;
}

static uint64_t footer_length(const uint8_t *bytes, size_t size) {
    return qv__get_u64le(bytes + size - QV__TAIL_SIZE + 8);
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    assert_int_equal(qv_reservation_used(res), 0);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return 0;
}

/* A file smaller than the first read: one read of the whole file, which
 * also covers the leading magic. */
static void test_small_file_one_read(void **state) {
    (void)state;
    size_t size = 0;
    uint8_t *bytes = fixture("open-small.qvr", 300, 100, &size);
    assert_true(size < QV__FIRST_READ);
    struct counting c;
    struct qv_reader *rd;
    assert_int_equal(open_counted(bytes, size, &c, &rd, NULL), 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.off[0], 0);
    assert_int_equal(c.len[0], size);
    assert_int_equal(qv_reader_open_reads(rd), 1);
    qv_reader_close(rd);

    /* The read covered offset 0, so a damaged leading magic is corruption. */
    bytes[1] ^= 0x20;
    struct qv_error err;
    assert_int_equal(open_counted(bytes, size, &c, &rd, &err), EIO);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    assert_non_null(strstr(err.message, "no magic at offset 0"));
    assert_non_null(strstr(err.message, "counted.qvr"));
    assert_int_equal(c.n, 1);
    free(bytes);
}

/* A large file whose footer fits in the first read: one read of the tail;
 * the leading magic is not read (it is outside every read the open makes),
 * so damage there does not stop the open. */
static void test_large_file_small_footer_one_read(void **state) {
    (void)state;
    size_t size = 0;
    uint8_t *bytes = fixture("open-large.qvr", 200000, 100000, &size);
    assert_true(size > qv__first_read(size));
    assert_true(footer_length(bytes, size) + QV__TAIL_SIZE <= qv__first_read(size));
    struct counting c;
    struct qv_reader *rd;
    assert_int_equal(open_counted(bytes, size, &c, &rd, NULL), 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.off[0], size - qv__first_read(size));
    assert_int_equal(c.len[0], qv__first_read(size));
    assert_int_equal(qv_reader_open_reads(rd), 1);
    qv_reader_close(rd);

    bytes[0] ^= 0x01;
    assert_int_equal(open_counted(bytes, size, &c, &rd, NULL), 0);
    assert_int_equal(c.n, 1);
    qv_reader_close(rd);
    free(bytes);
}

/* A footer larger than the first read: the tail, then exactly the footer. */
static void test_large_footer_two_reads(void **state) {
    (void)state;
    size_t size = 0;
    uint8_t *bytes = many_row_groups("open-footer.qvr", 2000, &size);
    uint64_t flen = footer_length(bytes, size);
    if (flen + QV__TAIL_SIZE <= qv__first_read(size)) fail_msg("footer of %llu bytes", (unsigned long long)flen);
    struct counting c;
    struct qv_reader *rd;
    struct qv_error err;
    int rc = open_counted(bytes, size, &c, &rd, &err);
    if (rc) fail_msg("open: %s", err.message);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.off[0], size - qv__first_read(size));
    assert_int_equal(c.off[1], size - QV__TAIL_SIZE - flen);
    assert_int_equal(c.len[1], flen);
    assert_int_equal(qv_reader_open_reads(rd), 2);
    assert_int_equal(qv_reader_num_row_groups(rd), 2000);
    qv_reader_close(rd);
    free(bytes);
}

/* A source whose reads fail is an I/O error, not a corrupt file. */
static int failing_read_at(void *ctx, uint64_t offset, void *buf, size_t len,
                           struct qv_error *err) {
    (void)ctx;
    (void)buf;
    return qv_error_set(err, EIO, "read of %zu bytes at offset %llu failed", len,
                        (unsigned long long)offset);
}

/* One that fails without a message. */
static int silent_read_at(void *ctx, uint64_t offset, void *buf, size_t len,
                          struct qv_error *err) {
    (void)ctx, (void)offset, (void)buf, (void)len, (void)err;
    return EIO;
}

/* The error names the source (its callback's message does not), once. */
static void test_failed_read_is_io(void **state) {
    (void)state;
    struct qv_source src = {.name = "failing.qvr", .size = 4096, .read_at = failing_read_at};
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open_source(&src, NULL, res, &rd, &err), EIO);
    assert_int_equal(err.kind, QV_ERROR_IO);
    const char *at = strstr(err.message, "file 'failing.qvr'");
    assert_non_null(at);
    if (strstr(at + strlen("file 'failing.qvr'"), "failing.qvr")) fail_msg("named twice: %s", err.message);
    assert_non_null(strstr(err.message, "failed"));
    /* (The failed open closed the source.) */
    struct qv_source silent = {.name = "failing.qvr", .size = 4096, .read_at = silent_read_at};
    qv_error_clear(&err);
    assert_int_equal(qv_reader_open_source(&silent, NULL, res, &rd, &err), EIO);
    assert_int_equal(err.kind, QV_ERROR_IO);
    assert_non_null(strstr(err.message, "file 'failing.qvr'"));
    assert_non_null(strstr(err.message, "failed"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_file_one_read),
        cmocka_unit_test(test_large_file_small_footer_one_read),
        cmocka_unit_test(test_large_footer_two_reads),
        cmocka_unit_test(test_failed_read_is_io),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
