/* The format's limits (docs/format.md, "Limits of the format"): the writer
 * refuses at open, before any file exists, exactly what the reader would
 * refuse; what is within them round-trips. Also: wide files scan in full,
 * strings are stored whole or refused (never cut), fixed_size_binary(0)
 * works end to end, row_group_rows is honoured exactly, and a footer that
 * claims huge counts is refused before anything is allocated for them. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_internal.h"
#include "quiver/format.h"
#include "quiver/scan.h"
#include "random_batch.h"
#include "test_util.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

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

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Files (temporaries included) whose name starts with `path`'s base name. */
static int files_like(const char *path) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *slash = 0;
    const char *base = slash + 1;
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, base, strlen(base)) == 0) n++;
    closedir(d);
    return n;
}

static struct qv_schema *make_schema(const struct qv_field *cols, int64_t n) {
    struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = n, .children = cols};
    struct qv_schema *s = NULL;
    assert_int_equal(qv_schema_create(&root, res, &s, NULL), 0);
    return s;
}

/* Writes `batch` (or `rows` random rows when batch is NULL) with `opts`. */
static void write_file(const char *path, const struct qv_schema *s, const struct ArrowArray *batch,
                       const struct qv_writer_options *opts) {
    struct qv_writer *w;
    struct qv_error err;
    int rc = qv_writer_open(path, s, opts, res, &w, &err);
    if (rc) fail_msg("open: %s", err.message);
    rc = qv_writer_write(w, batch, &err);
    if (rc) fail_msg("write: %s", err.message);
    rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
}

/* Scans every row of the file (all columns, threads on) and checks each
 * batch against the matching rows of `expect` (a struct batch). */
static void scan_equals(const struct qv_reader *rd, const struct ArrowArray *expect,
                        const struct qv_scan_options *opts_in) {
    struct qv_scan_options opts = opts_in ? *opts_in : (struct qv_scan_options){0};
    struct ArrowArrayStream st;
    struct qv_error err;
    int rc = qv_scan_open(rd, &opts, res, &st, &err);
    if (rc) fail_msg("scan open: %s", err.message);
    struct ArrowSchema sch;
    rc = st.get_schema(&st, &sch);
    if (rc) fail_msg("get_schema: %s", st.get_last_error(&st));
    assert_int_equal(sch.n_children, qv_reader_schema(rd)->root.n_children);
    sch.release(&sch);
    int64_t seen = 0;
    for (;;) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc) fail_msg("get_next: %s", st.get_last_error(&st));
        if (!b.release) break;
        /* The expected rows of this batch: a view of `expect` at an offset. */
        struct ArrowArray view = *expect;
        view.offset = expect->offset + seen;
        view.length = b.length;
        view.null_count = -1;
        char why[256];
        if (!qv_arrow_array_equal(&qv_reader_schema(rd)->root, &view, &b, why, sizeof why))
            fail_msg("rows from %lld: %s", (long long)seen, why);
        seen += b.length;
        b.release(&b);
    }
    assert_int_equal(seen, expect->length);
    st.release(&st);
}

static struct qv_reader *open_reader(const char *path) {
    struct qv_reader *rd;
    struct qv_error err;
    int rc = qv_reader_open(path, NULL, res, &rd, &err);
    if (rc) fail_msg("reader open: %s", err.message);
    return rd;
}

/* ---- many columns ---- */

static void wide_roundtrip(int32_t ncols, int64_t rows) {
    struct qv_field *cols = calloc((size_t)ncols, sizeof *cols);
    char (*names)[16] = calloc((size_t)ncols, sizeof *names);
    for (int32_t i = 0; i < ncols; i++) {
        snprintf(names[i], sizeof names[i], "c%d", (int)i);
        cols[i] = (struct qv_field){.name = names[i], .nullable = true,
                                    .type = i % 3 == 0 ? QV_TYPE_INT64 : i % 3 == 1 ? QV_TYPE_UTF8
                                                                                    : QV_TYPE_BOOL};
    }
    struct qv_schema *s = make_schema(cols, ncols);
    free(cols);
    free(names);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.2, .max_string = 4};
    assert_int_equal(rb_batch(s, rows, 7, &ro, res, &b), 0);
    char path[512];
    tu_path(path, sizeof path, "limits-wide.qvr");
    write_file(path, s, &b, NULL);
    struct qv_reader *rd = open_reader(path);
    assert_int_equal(qv_reader_schema(rd)->root.n_children, ncols);
    scan_equals(rd, &b, NULL);
    /* A projection of every column in reverse order, synchronous. */
    int32_t *proj = malloc((size_t)ncols * sizeof *proj);
    for (int32_t i = 0; i < ncols; i++) proj[i] = ncols - 1 - i;
    struct qv_scan_options so = {.columns = proj, .n_columns = ncols, .threads = QV_SCAN_SYNC};
    struct ArrowArrayStream st;
    struct qv_error err;
    int rc = qv_scan_open(rd, &so, res, &st, &err);
    if (rc) fail_msg("scan open: %s", err.message);
    struct ArrowArray got;
    assert_int_equal(st.get_next(&st, &got), 0);
    assert_int_equal(got.n_children, ncols);
    assert_int_equal(got.length, rows);
    char why[256];
    const struct qv_field *f0 = &qv_reader_schema(rd)->root.children[0];
    if (!qv_arrow_array_equal(f0, b.children[0], got.children[ncols - 1], why, sizeof why))
        fail_msg("reversed projection: %s", why);
    got.release(&got);
    st.release(&st);
    /* A column projected twice is still refused. */
    proj[1] = proj[0];
    assert_int_equal(qv_scan_open(rd, &so, res, &st, &err), EINVAL);
    assert_non_null(strstr(err.message, "projected twice"));
    free(proj);
    /* A take of a few rows across every column. */
    int64_t take[] = {0, rows / 2, rows - 1};
    struct qv_scan_options to = {.take = take, .n_take = 3};
    assert_int_equal(qv_scan_open(rd, &to, res, &st, &err), 0);
    assert_int_equal(st.get_next(&st, &got), 0);
    assert_int_equal(got.length, 3);
    assert_int_equal(got.n_children, ncols);
    got.release(&got);
    st.release(&st);
    qv_reader_close(rd);
    unlink(path);
    b.release(&b);
    qv_schema_destroy(s);
}

static void test_20000_columns_scan_in_full(void **state) {
    (void)state;
    wide_roundtrip(20000, 5);
}

/* ---- names ---- */

static void test_name_over_limit_refused_at_open(void **state) {
    (void)state;
    char *name = malloc(QV__MAX_NAME + 2);
    memset(name, 'n', QV__MAX_NAME + 1);
    name[QV__MAX_NAME + 1] = 0; /* 65,537 bytes */
    struct qv_field col = {.name = name, .type = QV_TYPE_INT32};
    struct qv_schema *s = make_schema(&col, 1);
    char path[512];
    tu_path(path, sizeof path, "limits-longname.qvr");
    unlink(path);
    struct qv_writer *w = (void *)1;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, s, NULL, res, &w, &err), EINVAL);
    assert_null(w);
    assert_non_null(strstr(err.message, "65537 bytes"));
    assert_non_null(strstr(err.message, "limit of 65536 bytes"));
    /* Refused before anything was created: no file, no temporary. */
    assert_int_equal(files_like(path), 0);
    qv_schema_destroy(s);

    /* Exactly at the limit: stored and read back whole. */
    name[QV__MAX_NAME] = 0;
    s = make_schema(&col, 1);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.1};
    assert_int_equal(rb_batch(s, 10, 3, &ro, res, &b), 0);
    write_file(path, s, &b, NULL);
    struct qv_reader *rd = open_reader(path);
    assert_string_equal(qv_reader_schema(rd)->root.children[0].name, name);
    scan_equals(rd, &b, NULL);
    qv_reader_close(rd);
    b.release(&b);
    qv_schema_destroy(s);
    unlink(path);
    free(name);
}

/* Names are bytes: invalid UTF-8, control characters and the like are
 * stored and read back exactly. */
static void test_names_are_bytes(void **state) {
    (void)state;
    const char *names[] = {"\xff\xfe", "a\x01\x7f", "\xc3(", "é", " "};
    struct qv_field cols[5];
    for (int i = 0; i < 5; i++) cols[i] = (struct qv_field){.name = names[i], .type = QV_TYPE_INT8};
    struct qv_schema *s = make_schema(cols, 5);
    struct ArrowArray b;
    struct rb_options ro = {0};
    assert_int_equal(rb_batch(s, 3, 5, &ro, res, &b), 0);
    char path[512];
    tu_path(path, sizeof path, "limits-bytes.qvr");
    write_file(path, s, &b, NULL);
    struct qv_reader *rd = open_reader(path);
    for (int i = 0; i < 5; i++)
        assert_string_equal(qv_reader_schema(rd)->root.children[i].name, names[i]);
    scan_equals(rd, &b, NULL);
    qv_reader_close(rd);
    b.release(&b);
    qv_schema_destroy(s);
    unlink(path);
}

/* ---- nesting depth ---- */

/* A column of `levels` levels: lists down to an int32 at level `levels`. */
static struct qv_schema *nested_schema(int levels) {
    struct qv_field *f = calloc((size_t)levels, sizeof *f);
    for (int i = 0; i < levels; i++) {
        int leaf = i == levels - 1;
        f[i] = (struct qv_field){.name = i ? "item" : "deep", .nullable = true,
                                 .type = leaf ? QV_TYPE_INT32 : QV_TYPE_LIST,
                                 .n_children = leaf ? 0 : 1, .children = leaf ? NULL : &f[i + 1]};
    }
    struct qv_schema *s = make_schema(f, 1);
    free(f);
    return s;
}

static void test_depth_at_limit_roundtrips_beyond_refused(void **state) {
    (void)state;
    char path[512];
    tu_path(path, sizeof path, "limits-deep.qvr");
    unlink(path);
    struct qv_schema *s = nested_schema(QV__MAX_NESTING);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.2, .max_list = 2};
    assert_int_equal(rb_batch(s, 20, 9, &ro, res, &b), 0);
    write_file(path, s, &b, NULL);
    struct qv_reader *rd = open_reader(path);
    assert_true(qv_schema_equal(qv_reader_schema(rd), s, 0));
    scan_equals(rd, &b, NULL);
    /* The exported schema has QV__MAX_NESTING + 1 levels with the root: what
     * Arrow C++ imports. */
    struct ArrowSchema sch;
    assert_int_equal(qv_reader_export_schema(rd, NULL, 0, res, &sch, NULL), 0);
    int levels = 0;
    for (const struct ArrowSchema *p = &sch; p; p = p->n_children ? p->children[0] : NULL) levels++;
    assert_int_equal(levels, QV__MAX_NESTING + 1);
    sch.release(&sch);
    qv_reader_close(rd);
    b.release(&b);
    qv_schema_destroy(s);
    unlink(path);

    /* One level more is refused where the schema is made: the Arrow layer
     * and the format share the limit (base/limits.h), so no schema the
     * writer would refuse can exist. */
    struct qv_field *f = calloc(QV__MAX_NESTING + 1, sizeof *f);
    for (int i = 0; i <= QV__MAX_NESTING; i++) {
        int leaf = i == QV__MAX_NESTING;
        f[i] = (struct qv_field){.name = i ? "item" : "deep", .nullable = true,
                                 .type = leaf ? QV_TYPE_INT32 : QV_TYPE_LIST,
                                 .n_children = leaf ? 0 : 1, .children = leaf ? NULL : &f[i + 1]};
    }
    struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 1, .children = f};
    struct qv_error err;
    s = NULL;
    assert_int_equal(qv_schema_create(&root, res, &s, &err), EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.message, "nesting deeper than 63 levels"));
    free(f);
    assert_int_equal(files_like(path), 0);
}

/* A footer whose schema nests deeper than the limit is corrupt (the file
 * cannot come from our writer; build the section by hand). */
static void put_node(struct qv__wbuf *b, const char *name, const char *fmt, int children) {
    qv__wbuf_str(b, name);
    qv__wbuf_str(b, fmt);
    qv__wbuf_varint(b, 1); /* nullable */
    qv__wbuf_varint(b, 0); /* no metadata */
    qv__wbuf_varint(b, (uint64_t)children);
}

static int parse_schema_only(const struct qv__wbuf *schema_body, struct qv_reservation *r,
                             struct qv_error *err) {
    struct qv__wbuf f;
    qv__wbuf_init(&f, r);
    qv__wbuf_varint(&f, QV__SEC_SCHEMA);
    qv__wbuf_bytes(&f, schema_body->data, schema_body->size);
    qv__wbuf_varint(&f, QV__SEC_ROW_GROUPS);
    qv__wbuf_bytes(&f, "\0\0", 2);
    struct qv__footer ft;
    int rc = qv__footer_parse(f.data, f.size, 8, r, &ft, err);
    if (!rc) qv__footer_free(&ft);
    qv__wbuf_free(&f);
    return rc;
}

static void test_reader_refuses_deep_footer(void **state) {
    (void)state;
    for (int levels = QV__MAX_NESTING; levels <= QV__MAX_NESTING + 1; levels++) {
        struct qv__wbuf b;
        qv__wbuf_init(&b, res);
        qv__wbuf_varint(&b, (uint64_t)levels + 1);
        put_node(&b, "", "+s", 1);
        for (int i = 1; i <= levels; i++)
            put_node(&b, "x", i == levels ? "i" : "+l", i == levels ? 0 : 1);
        struct qv_error err;
        int rc = parse_schema_only(&b, res, &err);
        qv__wbuf_free(&b);
        if (levels == QV__MAX_NESTING) {
            /* Well-formed apart from the empty directory's node count. */
            assert_int_equal(rc, EIO);
            assert_non_null(strstr(err.message, "row-group directory"));
        } else {
            assert_int_equal(rc, EIO);
            assert_non_null(strstr(err.message, "limit of 63 levels"));
        }
    }
}

/* A footer claiming huge counts is refused from the bytes it has, before
 * anything is allocated for the counts: a 64 KiB budget is never hit. */
static void test_huge_counts_refused_without_allocating(void **state) {
    (void)state;
    struct qv_pool *small;
    struct qv_reservation *r;
    struct qv_pool_options po = {.name = "small", .limit = 1u << 20, .block_size = 64 * 1024};
    assert_int_equal(qv_pool_create(&po, &small, NULL), 0);
    assert_int_equal(qv_reservation_create(small, NULL, &r, NULL), 0);
    const uint64_t claims[] = {QV__MAX_NODES + 1, UINT64_C(1) << 40, 1000};
    for (int i = 0; i < 3; i++) {
        struct qv__wbuf b;
        qv__wbuf_init(&b, r);
        qv__wbuf_varint(&b, claims[i]); /* node count */
        put_node(&b, "", "+s", 1);
        put_node(&b, "x", "i", 0);
        struct qv_error err;
        assert_int_equal(parse_schema_only(&b, r, &err), EIO);
        assert_non_null(strstr(err.message, "node count"));
        qv__wbuf_free(&b);
    }
    /* A row-group count of 2^50 over a valid schema. */
    struct qv__wbuf b, f;
    qv__wbuf_init(&b, r);
    qv__wbuf_varint(&b, 2);
    put_node(&b, "", "+s", 1);
    put_node(&b, "x", "i", 0);
    qv__wbuf_init(&f, r);
    qv__wbuf_varint(&f, QV__SEC_SCHEMA);
    qv__wbuf_bytes(&f, b.data, b.size);
    struct qv__wbuf rg;
    qv__wbuf_init(&rg, r);
    qv__wbuf_varint(&rg, UINT64_C(1) << 50);
    qv__wbuf_varint(&rg, 1);
    qv__wbuf_put(&rg, "\1\1\1\1\1\1\1\1", 8);
    qv__wbuf_varint(&f, QV__SEC_ROW_GROUPS);
    qv__wbuf_bytes(&f, rg.data, rg.size);
    struct qv__footer ft;
    struct qv_error err;
    assert_int_equal(qv__footer_parse(f.data, f.size, 8, r, &ft, &err), EIO);
    assert_non_null(strstr(err.message, "row-group count"));
    qv__wbuf_free(&rg);
    qv__wbuf_free(&f);
    qv__wbuf_free(&b);
    assert_int_equal(qv_reservation_used(r), 0);
    qv_reservation_destroy(r);
    qv_pool_destroy(small);
}

/* ---- metadata and footer size ---- */

static void test_oversized_metadata_refused_at_open(void **state) {
    (void)state;
    struct qv_field col = {.name = "a", .type = QV_TYPE_INT32};
    struct qv_schema *s = make_schema(&col, 1);
    /* Never touched: the writer refuses from the lengths, before copying. */
    size_t big = (size_t)QV__MAX_FOOTER_BYTES + 1;
    char *value = malloc(big);
    assert_non_null(value);
    struct qv_kv kv[2] = {{"k", "v", 1, 1}, {"big", value, 3, (int32_t)big}};
    struct qv_writer_options o = {.metadata = kv, .n_metadata = 2};
    char path[512];
    tu_path(path, sizeof path, "limits-meta.qvr");
    unlink(path);
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, s, &o, res, &w, &err), EINVAL);
    assert_non_null(strstr(err.message, "metadata"));
    assert_non_null(strstr(err.message, "268435456"));
    assert_int_equal(files_like(path), 0);
    /* NULL keys and values are refused too, not dereferenced. */
    struct qv_kv bad = {NULL, "v", -1, -1};
    o.metadata = &bad;
    o.n_metadata = 1;
    assert_int_equal(qv_writer_open(path, s, &o, res, &w, &err), EINVAL);
    assert_non_null(strstr(err.message, "NULL key"));
    o.n_metadata = -1;
    assert_int_equal(qv_writer_open(path, s, &o, res, &w, &err), EINVAL);
    assert_int_equal(files_like(path), 0);
    free(value);
    qv_schema_destroy(s);
}

/* The footer grows with each row group. With metadata that brings the
 * footer exactly to its limit at open, the first row group pushes it over:
 * the writer fails before it writes a footer, and nothing is published. */
static void test_footer_over_limit_fails_before_publishing(void **state) {
    (void)state;
    struct qv_field col = {.name = "a", .type = QV_TYPE_INT32};
    struct qv_schema *s = make_schema(&col, 1);
    /* The head's bytes beyond the metadata value are the same for every
     * value length in [2^21, 2^28) (same varint sizes): measure them on a
     * small one. */
    size_t probe = (size_t)1 << 21;
    char *value = calloc(1, (size_t)QV__MAX_FOOTER_BYTES); /* zero pages: never written */
    assert_non_null(value);
    struct qv_kv kv = {"big", value, 3, (int32_t)probe};
    struct qv__wbuf head;
    qv__wbuf_init(&head, res);
    qv__footer_head(&head, s, 1, &kv, 1);
    assert_false(head.failed);
    uint64_t overhead = head.size - probe;
    qv__wbuf_free(&head);
    /* The row-group section with none, and the block checksums with none. */
    uint64_t empty = qv__footer_size(0, 0, 1, 0) + qv__footer_block_section_size(0);
    kv.value_len = (int32_t)(QV__MAX_FOOTER_BYTES - overhead - empty);
    struct qv_writer_options o = {.metadata = &kv, .n_metadata = 1};
    char path[512];
    tu_path(path, sizeof path, "limits-bigfooter.qvr");
    unlink(path);
    struct qv_writer *w;
    struct qv_error err;
    int rc = qv_writer_open(path, s, &o, res, &w, &err);
    if (rc) fail_msg("open at the limit: %s", err.message);
    /* One byte more is refused at open. */
    kv.value_len++;
    struct qv_writer *w2;
    assert_int_equal(qv_writer_open(path, s, &o, res, &w2, &err), EINVAL);
    assert_non_null(strstr(err.message, "schema and metadata"));
    struct ArrowArray b;
    struct rb_options ro = {0};
    assert_int_equal(rb_batch(s, 10, 1, &ro, res, &b), 0);
    /* The writer's buffers already exceed row_group_bytes (the footer in
     * the making counts), so the write itself flushes the row group; either
     * way the row group fails the writer, and finish repeats the error. */
    rc = qv_writer_write(w, &b, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    assert_int_equal(rc, EINVAL);
    assert_non_null(strstr(err.message, "footer would take"));
    assert_int_equal(qv_writer_finish(w, &err), EINVAL);
    assert_non_null(strstr(err.message, "268435456"));
    /* Nothing under the final name; the temporary goes with the writer. */
    assert_false(exists(path));
    qv_writer_close(w);
    assert_int_equal(files_like(path), 0);
    /* The same with the row group left to finish: a failing finish removes
     * the temporary at once and says why. */
    kv.value_len--;
    o.row_group_bytes = UINT64_MAX;
    rc = qv_writer_open(path, s, &o, res, &w, &err);
    if (rc) fail_msg("open at the limit: %s", err.message);
    assert_int_equal(qv_writer_write(w, &b, NULL), 0);
    assert_int_equal(qv_writer_finish(w, &err), EINVAL);
    assert_non_null(strstr(err.message, "footer would take"));
    assert_int_equal(files_like(path), 0);
    qv_writer_close(w);
    b.release(&b);
    free(value);
    qv_schema_destroy(s);
}

/* The footer assembled in place (head moved up against the row-group
 * section) reads back: several row groups, binary-safe metadata. */
static void test_footer_assembled_in_place(void **state) {
    (void)state;
    struct qv_schema *s;
    assert_int_equal(rb_all_types_schema(res, &s), 0);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.2, .max_list = 2, .max_string = 70};
    assert_int_equal(rb_batch(s, 3000, 1, &ro, res, &b), 0);
    struct qv_kv kv[1] = {{"key", "value\0with nul", 3, 15}};
    struct qv_writer_options o = {.row_group_rows = 700, .metadata = kv, .n_metadata = 1};
    char path[512];
    tu_path(path, sizeof path, "limits-footer.qvr");
    write_file(path, s, &b, &o);
    struct qv_reader *rd = open_reader(path);
    int64_t n;
    const struct qv_kv *md = qv_reader_metadata(rd, &n);
    assert_int_equal(n, 1);
    assert_int_equal(md[0].value_len, 15);
    assert_memory_equal(md[0].value, "value\0with nul", 15);
    scan_equals(rd, &b, NULL);
    qv_reader_close(rd);
    b.release(&b);
    qv_schema_destroy(s);
    unlink(path);
}

/* ---- strings are stored whole or refused ---- */

static void test_long_time_zones_roundtrip(void **state) {
    (void)state;
    size_t lens[] = {123, 124, 300, 70000};
    for (int i = 0; i < 4; i++) {
        char *tz = malloc(lens[i] + 1);
        for (size_t j = 0; j < lens[i]; j++) tz[j] = (char)('A' + j % 26);
        tz[lens[i]] = 0;
        struct qv_field col = {.name = "ts", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_US,
                               .timezone = tz, .nullable = true};
        struct qv_schema *s = make_schema(&col, 1);
        struct ArrowArray b;
        struct rb_options ro = {.null_prob = 0.1};
        assert_int_equal(rb_batch(s, 5, 2, &ro, res, &b), 0);
        char path[512];
        tu_path(path, sizeof path, "limits-tz.qvr");
        write_file(path, s, &b, NULL);
        struct qv_reader *rd = open_reader(path);
        const struct qv_field *f = &qv_reader_schema(rd)->root.children[0];
        assert_non_null(f->timezone);
        assert_int_equal(strlen(f->timezone), lens[i]);
        assert_string_equal(f->timezone, tz);
        /* And through the exported ArrowSchema. */
        struct ArrowSchema sch;
        assert_int_equal(qv_reader_export_schema(rd, NULL, 0, res, &sch, NULL), 0);
        assert_int_equal(strlen(sch.children[0]->format), 4 + lens[i]);
        assert_string_equal(sch.children[0]->format + 4, tz);
        sch.release(&sch);
        scan_equals(rd, &b, NULL);
        qv_reader_close(rd);
        b.release(&b);
        qv_schema_destroy(s);
        unlink(path);
        free(tz);
    }
}

/* ---- fixed_size_binary(0) ---- */

static void test_fixed_size_binary_zero_end_to_end(void **state) {
    (void)state;
    struct qv_field cols[3] = {
        {.name = "z", .type = QV_TYPE_FIXED_BINARY, .byte_width = 0, .nullable = true},
        {.name = "zz", .type = QV_TYPE_FIXED_BINARY, .byte_width = 0},
        {.name = "i", .type = QV_TYPE_INT32, .nullable = true},
    };
    struct qv_schema *s = make_schema(cols, 3);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.3};
    assert_int_equal(rb_batch(s, 5000, 4, &ro, res, &b), 0);
    assert_true(b.children[0]->null_count > 0);
    char path[512];
    tu_path(path, sizeof path, "limits-fsb0.qvr");
    struct qv_writer_options o = {.row_group_rows = 2048};
    write_file(path, s, &b, &o);
    struct qv_reader *rd = open_reader(path);
    assert_true(qv_schema_equal(qv_reader_schema(rd), s, 0));
    assert_int_equal(qv_reader_num_row_groups(rd), 3);
    scan_equals(rd, &b, NULL);
    /* Statistics: empty min and max, null count as written. */
    struct qv_chunk_info ci;
    assert_int_equal(qv_reader_chunk_info(rd, 0, 0, &ci, NULL), 0);
    assert_true(ci.null_count > 0);
    if (ci.has_min_max) {
        assert_int_equal(ci.min_len, 0);
        assert_int_equal(ci.max_len, 0);
    }
    /* Take and filter over it. */
    int64_t take[] = {1, 2047, 2048, 4999};
    struct qv_scan_options to = {.take = take, .n_take = 4};
    struct ArrowArrayStream st;
    struct qv_error err;
    int rc = qv_scan_open(rd, &to, res, &st, &err);
    if (rc) fail_msg("take: %s", err.message);
    int64_t got_rows = 0;
    for (;;) {
        struct ArrowArray g;
        assert_int_equal(st.get_next(&st, &g), 0);
        if (!g.release) break;
        for (int64_t k = 0; k < g.length; k++) {
            int64_t row = take[got_rows + k];
            const uint8_t *ev = b.children[0]->buffers[0];
            const uint8_t *gv = g.children[0]->buffers[0];
            int e_valid = !ev || (ev[row >> 3] >> (row & 7) & 1);
            int g_valid = !gv || (gv[(g.children[0]->offset + k) >> 3] >> ((g.children[0]->offset + k) & 7) & 1);
            assert_int_equal(e_valid, g_valid);
        }
        got_rows += g.length;
        g.release(&g);
    }
    assert_int_equal(got_rows, 4);
    st.release(&st);
    struct qv_scan_options fo = {.filter = "z IS NULL"};
    rc = qv_scan_open(rd, &fo, res, &st, &err);
    if (rc) fail_msg("filter: %s", err.message);
    int64_t nulls = 0;
    for (;;) {
        struct ArrowArray g;
        assert_int_equal(st.get_next(&st, &g), 0);
        if (!g.release) break;
        nulls += g.length;
        g.release(&g);
    }
    st.release(&st);
    assert_int_equal(nulls, b.children[0]->null_count);
    qv_reader_close(rd);
    b.release(&b);
    qv_schema_destroy(s);
    unlink(path);

    /* Wider than the format holds: refused at open, naming the field. */
    struct qv_field wide = {.name = "w", .type = QV_TYPE_FIXED_BINARY,
                            .byte_width = QV_ENC_MAX_FIXED_WIDTH + 1};
    s = make_schema(&wide, 1);
    struct qv_writer *w;
    assert_int_equal(qv_writer_open(path, s, NULL, res, &w, &err), EINVAL);
    assert_non_null(strstr(err.message, "'w'"));
    assert_non_null(strstr(err.message, "4096"));
    assert_int_equal(files_like(path), 0);
    qv_schema_destroy(s);
}

/* The encoding layer: width 0 encodes under every requested encoding as
 * plain (or constant when asked), decodes by range and by rows, and a tree
 * with width 0 under any other encoding is corrupt. */
static void test_fixed_width_zero_encoding(void **state) {
    (void)state;
    const int forces[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_CONSTANT, QV_ENC_ZSTD, QV_ENC_DICT};
    for (int f = 0; f < 5; f++) {
        for (int64_t count = 0; count <= 3000; count += 1500) {
            struct qv_values v = {.kind = QV_KIND_FIXED_BINARY, .fixed_width = 0, .count = count};
            struct qv_encode_options eo = {.force = forces[f], .compact = 1};
            struct qv_encoded enc = {0};
            struct qv_error err;
            int rc = qv_encode(&v, &eo, res, &enc, &err);
            if (rc) fail_msg("encode (force %d): %s", forces[f], err.message);
            assert_int_equal(enc.data[0], forces[f] == QV_ENC_CONSTANT ? QV_ENC_CONSTANT : QV_ENC_PLAIN);
            struct qv_decoder *d;
            rc = qv_decoder_open(enc.data, enc.size, QV_KIND_FIXED_BINARY, 0, count, res, &d, &err);
            if (rc) fail_msg("decoder open: %s", err.message);
            uint8_t one;
            struct qv_decode_out o = {.values = &one};
            assert_int_equal(qv_decoder_decode_range(d, 0, count, &o, NULL), 0);
            int64_t rows[] = {0, 1, 1499};
            if (count >= 1500) assert_int_equal(qv_decoder_take(d, rows, 3, &o, NULL), 0);
            qv_decoder_close(d);
            /* The same tree claiming another encoding is refused. */
            if (f == 0 && count) {
                for (int e = QV_ENC_PLAIN + 2; e < QV_ENC_COUNT; e++) {
                    enc.data[0] = (uint8_t)e;
                    assert_int_equal(qv_decoder_open(enc.data, enc.size, QV_KIND_FIXED_BINARY, 0,
                                                     count, res, &d, &err), EIO);
                }
            }
            qv_encoded_release(res, &enc);
        }
    }
}

/* ---- row_group_rows ---- */

static void test_row_group_rows_honoured_exactly(void **state) {
    (void)state;
    struct qv_field cols[2] = {{.name = "a", .type = QV_TYPE_INT64, .nullable = true},
                               {.name = "s", .type = QV_TYPE_UTF8, .nullable = true}};
    struct qv_schema *s = make_schema(cols, 2);
    struct ArrowArray b;
    struct rb_options ro = {.null_prob = 0.1, .max_string = 6};
    assert_int_equal(rb_batch(s, 3500, 8, &ro, res, &b), 0);
    char path[512];
    tu_path(path, sizeof path, "limits-rg.qvr");
    const int64_t sizes[] = {1000, 1, 7, 3500, 5000};
    for (int i = 0; i < 5; i++) {
        struct qv_writer_options o = {.row_group_rows = sizes[i]};
        write_file(path, s, &b, &o);
        struct qv_reader *rd = open_reader(path);
        int64_t want = (3500 + sizes[i] - 1) / sizes[i];
        assert_int_equal(qv_reader_num_row_groups(rd), want);
        for (int64_t g = 0; g < want; g++) {
            int64_t rows = g < want - 1 ? sizes[i] : 3500 - sizes[i] * (want - 1);
            assert_int_equal(qv_reader_row_group_rows(rd, g), rows);
        }
        scan_equals(rd, &b, NULL);
        qv_reader_close(rd);
        unlink(path);
    }
    /* Negative and oversized values are refused, not replaced. */
    const int64_t bad[] = {-1, -131072, QV_WRITER_MAX_ROW_GROUP_ROWS + 1, INT64_MAX};
    for (int i = 0; i < 4; i++) {
        struct qv_writer_options o = {.row_group_rows = bad[i]};
        struct qv_writer *w;
        struct qv_error err;
        assert_int_equal(qv_writer_open(path, s, &o, res, &w, &err), EINVAL);
        assert_non_null(strstr(err.message, "row_group_rows"));
        assert_false(exists(path));
    }
    b.release(&b);
    qv_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_20000_columns_scan_in_full),
        cmocka_unit_test(test_name_over_limit_refused_at_open),
        cmocka_unit_test(test_names_are_bytes),
        cmocka_unit_test(test_depth_at_limit_roundtrips_beyond_refused),
        cmocka_unit_test(test_reader_refuses_deep_footer),
        cmocka_unit_test(test_huge_counts_refused_without_allocating),
        cmocka_unit_test(test_oversized_metadata_refused_at_open),
        cmocka_unit_test(test_footer_over_limit_fails_before_publishing),
        cmocka_unit_test(test_footer_assembled_in_place),
        cmocka_unit_test(test_long_time_zones_roundtrip),
        cmocka_unit_test(test_fixed_size_binary_zero_end_to_end),
        cmocka_unit_test(test_fixed_width_zero_encoding),
        cmocka_unit_test(test_row_group_rows_honoured_exactly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
