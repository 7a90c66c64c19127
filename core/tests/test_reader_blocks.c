/* Format 2's per-block checksums: a byte flipped in block k of a segment
 * fails exactly the reads that touch block k (takes and whole reads, pread
 * and mmap, column readers and the file layer's take), with EIO naming
 * file, column, row group, segment and block; reads elsewhere succeed and
 * are exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pool_env.h"
#include "format/format_internal.h"
#include "format/format_testing.h"
#include "memory/memory_testing.h"
#include "quiver/file.h"
#include "quiver/format.h"
#include "test_util.h"

#define ROWS 131072
#define WIDTH 40 /* bits per value: 5120 bytes per 1024-value vector */

static uint64_t value_of(int64_t i) {
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15u;
    x ^= x >> 29;
    return i == 0 ? (UINT64_C(1) << WIDTH) - 1 : x & ((UINT64_C(1) << WIDTH) - 1);
}

/* One row group: column "v" (int64, bit-packed at WIDTH bits, forced) and
 * column "w" (int64, the same values, as a neighbour that stays intact). */
static void write_file_forced(struct pool_env *e, const char *path, int encoding) {
    static const struct qv_field cols[] = {
        {.name = "v", .type = QV_TYPE_INT64, .nullable = false},
        {.name = "w", .type = QV_TYPE_INT64, .nullable = false},
    };
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2,
                                         .children = cols};
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, e->r, &s, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(s, e->r, NULL, &b, &err), 0);
    for (int64_t i = 0; i < ROWS; i++) {
        assert_int_equal(qv_append_int64(qv_builder_column(b, 0), (int64_t)value_of(i)), 0);
        assert_int_equal(qv_append_int64(qv_builder_column(b, 1), (int64_t)value_of(i)), 0);
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = ROWS};
    assert_int_equal(qv_writer_open(path, s, &o, e->r, &w, &err), 0);
    qv_writer_force_encoding(w, encoding);
    assert_int_equal(qv_writer_write(w, &batch, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(s);
}

static void write_file(struct pool_env *e, const char *path) {
    write_file_forced(e, path, QV_ENC_BITPACK);
}

/* Flips one byte at `at` bytes into column 0's values segment of row
 * group 0. Returns the segment's offset. */
static uint64_t flip(struct pool_env *e, const char *path, uint64_t at) {
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 0), 0, &si, &err), 0);
    assert_true(at < si.length);
    qv_reader_close(rd);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)(si.offset + at), SEEK_SET), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, (long)(si.offset + at), SEEK_SET), 0);
    fputc(c ^ 0x10, f);
    fclose(f);
    return si.offset;
}

static int take_rows(struct pool_env *e, struct qv_reader *rd, int32_t column, const int64_t *rows,
                     int64_t n, struct qv_error *err) {
    struct qv_column_reader *cr;
    int rc = qv_column_reader_open(rd, 0, column, e->r, &cr, err);
    if (rc) return rc;
    struct ArrowArray out;
    rc = qv_column_reader_take(cr, rows, n, &out, err);
    if (!rc) {
        const int64_t *v = out.children ? NULL : (const int64_t *)out.buffers[1];
        for (int64_t i = 0; i < n; i++) assert_int_equal((uint64_t)v[i], value_of(rows[i]));
        out.release(&out);
    }
    qv_column_reader_close(cr);
    return rc;
}

static int read_all(struct pool_env *e, struct qv_reader *rd, int32_t column,
                    struct qv_error *err) {
    struct qv_column_reader *cr;
    int rc = qv_column_reader_open(rd, 0, column, e->r, &cr, err);
    if (rc) return rc;
    struct ArrowArray out;
    rc = qv_column_reader_read(cr, 0, ROWS, &out, err);
    if (!rc) out.release(&out);
    qv_column_reader_close(cr);
    return rc;
}

static void check_corrupt_block(struct pool_env *e, int mapped) {
    char path[512];
    tu_path(path, sizeof path, mapped ? "blocks_mapped.qvr" : "blocks.qvr");
    write_file(e, path);
    /* Block 5 (bytes [5 B, 6 B) of the segment, B = 2^QV__BLOCK_SHIFT, a
     * multiple of 1024), 2560 bytes in: with the root's header under 2560
     * bytes, that byte is in vector vec = (5 B + 2560) / 5120 (5120 bytes per
     * vector at 40 bits). Vectors vec - 1 and vec + 1 may share block 5 with
     * it; the good rows below keep two vectors away. */
    const uint64_t B = UINT64_C(1) << QV__BLOCK_SHIFT;
    const int64_t vec = (int64_t)((5 * B + 2560) / 5120);
    flip(e, path, 5 * B + 2560);
    struct qv_reader_options ro = {.mmap = mapped};
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, &ro, e->r, &rd, &err), 0);
    /* Rows far from the block: fine, and exact. */
    int64_t good[] = {0, 1, (vec - 2) * 1024 + 7, (vec + 2) * 1024 + 5, 100000, ROWS - 1};
    assert_true(vec >= 2 && (vec + 2) * 1024 + 5 < 100000);
    assert_int_equal(take_rows(e, rd, 0, good, 6, &err), 0);
    /* A row in the damaged vector. */
    int64_t bad[] = {1, vec * 1024 + 17};
    assert_int_equal(take_rows(e, rd, 0, bad, 2, &err), EIO);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "column 'v'"));
    assert_non_null(strstr(err.message, "row group 0"));
    assert_non_null(strstr(err.message, "values segment"));
    assert_non_null(strstr(err.message, "block 5 "));
    /* A full read of the column touches the block; the other column reads. */
    assert_int_equal(read_all(e, rd, 0, &err), EIO);
    assert_non_null(strstr(err.message, "block 5 "));
    assert_int_equal(read_all(e, rd, 1, &err), 0);
    assert_int_equal(take_rows(e, rd, 1, bad, 2, &err), 0);
    /* Again after the failure: still refused, still fine elsewhere. */
    assert_int_equal(take_rows(e, rd, 0, bad + 1, 1, &err), EIO);
    assert_int_equal(take_rows(e, rd, 0, good, 6, &err), 0);
    qv_reader_close(rd);
    /* Through the file layer's take and scan. */
    struct qv_file *f;
    struct qv_file_options fo = {.pool = e->pool, .mmap = mapped};
    assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
    struct ArrowArrayStream st;
    assert_int_equal(qv_file_take(f, good, 6, NULL, &st, &err), 0);
    struct ArrowArray b;
    int64_t got = 0;
    for (;;) {
        assert_int_equal(st.get_next(&st, &b), 0);
        if (!b.release) break;
        got += b.length;
        b.release(&b);
    }
    assert_int_equal(got, 6);
    st.release(&st);
    assert_int_equal(qv_file_take(f, bad, 2, NULL, &st, &err), 0);
    int rc = st.get_next(&st, &b);
    assert_int_equal(rc, EIO);
    const char *msg = st.get_last_error(&st);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "block 5 "));
    st.release(&st);
    qv_file_close(f);
    remove(path);
}

static void test_corrupt_block_pread(void **state) { check_corrupt_block(*state, 0); }
static void test_corrupt_block_mapped(void **state) { check_corrupt_block(*state, 1); }

/* The footer of a format 2 file: one checksum per block of every segment,
 * each the hash of its block. */
static void test_block_sums_match(void **state) {
    struct pool_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "blocks_sums.qvr");
    write_file(e, path);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    size_t size = 0;
    unsigned char *bytes = tu_read_file(path, &size);
    assert_non_null(bytes);
    assert_int_equal(bytes[size - 8], QV__FORMAT_MAJOR); /* the major version in the tail */
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 0), 0, &si, &err), 0);
    assert_true(si.length > 6 * (UINT64_C(1) << QV__BLOCK_SHIFT));
    assert_int_equal(qv_hash64(bytes + si.offset, (size_t)si.length, 0), si.checksum);
    free(bytes);
    qv_reader_close(rd);
    remove(path);
}

/* Encodings that read a child's packed bytes themselves (delta fused with
 * its bit-packed deltas) verify and, reading on demand, fetch them first: a
 * take on a freshly opened pread reader decodes only bytes it read. */
static void test_fused_child_reads_its_blocks(void **state) {
    struct pool_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "blocks_delta.qvr");
    write_file_forced(e, path, QV_ENC_DELTA);
    struct qv_error err;
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    int64_t rows[64];
    for (int i = 0; i < 64; i++) rows[i] = (int64_t)i * 2039 + 1000; /* late in their vectors */
    for (int32_t c = 0; c < 2; c++) assert_int_equal(take_rows(e, rd, c, rows, 64, &err), 0);
    assert_int_equal(read_all(e, rd, 0, &err), 0);
    qv_reader_close(rd);
    remove(path);
}


/* A source over a file opened with pread that counts the bytes read
 * through it (no `base`: the reader reads with read_at, as from a file). */
struct counting {
    struct qv_source inner;
    uint64_t bytes;
    uint64_t reads;
};

static int counting_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    struct counting *c = ctx;
    __atomic_fetch_add(&c->bytes, (uint64_t)len, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->reads, 1, __ATOMIC_RELAXED);
    return qv_source_read(&c->inner, off, buf, len, err);
}

static void counting_close(void *ctx) {
    struct counting *c = ctx;
    qv_source_close(&c->inner);
}

static struct qv_reader *open_counting(struct pool_env *e, const char *path, int skip,
                                       struct counting *c) {
    struct qv_error err;
    memset(c, 0, sizeof *c);
    assert_int_equal(qv_source_open_file(path, &c->inner, &err), 0);
    struct qv_source src = {.ctx = c, .name = path, .size = c->inner.size,
                            .read_at = counting_read, .close = counting_close};
    struct qv_reader_options ro = {.skip_checksums = skip};
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open_source(&src, &ro, e->r, &rd, &err), 0);
    return rd;
}

/* With checksums skipped, a take on a pread reader still reads only the
 * blocks its rows touch (it used to read every touched chunk whole, which
 * made small takes slower than with checksums), and returns exactly the
 * rows asked for through every encoding below, the reference column of a
 * relative one included. A damaged block is then not detected (nothing is
 * checked), but rows elsewhere are still exact. */
static void test_skip_checksums_reads_on_demand(void **state) {
    struct pool_env *e = *state;
    static const int encs[] = {QV_ENC_BITPACK, QV_ENC_DELTA, QV_ENC_PATCHED, QV_ENC_ZSTD,
                               QV_ENC_RELATIVE, QV_ENC_AUTO};
    const uint64_t B = UINT64_C(1) << QV__BLOCK_SHIFT;
    int64_t rows[] = {0, 1, 1023, 1024, 40000, 77777, ROWS - 1024, ROWS - 1};
    const int64_t n = (int64_t)(sizeof rows / sizeof rows[0]);
    for (size_t i = 0; i < sizeof encs / sizeof encs[0]; i++) {
        char path[512];
        tu_path(path, sizeof path, "blocks_skip.qvr");
        write_file_forced(e, path, encs[i]);
        for (int skip = 0; skip < 2; skip++) {
            struct counting c;
            struct qv_reader *rd = open_counting(e, path, skip, &c);
            struct qv_error err;
            struct qv_segment_info si;
            assert_int_equal(
                qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 0), 0, &si, &err), 0);
            uint64_t before = c.bytes;
            for (int32_t col = 0; col < 2; col++)
                assert_int_equal(take_rows(e, rd, col, rows, n, &err), 0);
            /* Two rows of the column's first block: far less than the
             * chunk when the chunk spans many blocks. Not for the forced
             * zstd (the chunk is one frame) nor the forced patched (on
             * these values every value is an exception, and a decoder
             * reads all of a node's exceptions). */
            if (encs[i] != QV_ENC_ZSTD && encs[i] != QV_ENC_PATCHED && si.length > 16 * B) {
                uint64_t one = c.bytes;
                assert_int_equal(take_rows(e, rd, 0, rows, 2, &err), 0);
                assert_true(c.bytes - one < si.length / 4);
            }
            assert_true(c.bytes > before);
            assert_int_equal(read_all(e, rd, 0, &err), 0);
            qv_reader_close(rd);
        }
        remove(path);
    }
    /* A damaged block: refused with checksums, not looked at without, and
     * rows away from it exact either way. */
    char path[512];
    tu_path(path, sizeof path, "blocks_skip_bad.qvr");
    write_file(e, path);
    const int64_t vec = (int64_t)((5 * B + 2560) / 5120);
    flip(e, path, 5 * B + 2560);
    int64_t good[] = {0, (vec + 2) * 1024 + 5, ROWS - 1};
    int64_t bad[] = {vec * 1024 + 17};
    for (int skip = 0; skip < 2; skip++) {
        struct counting c;
        struct qv_reader *rd = open_counting(e, path, skip, &c);
        struct qv_error err;
        assert_int_equal(take_rows(e, rd, 0, good, 3, &err), 0);
        struct qv_column_reader *cr;
        assert_int_equal(qv_column_reader_open(rd, 0, 0, e->r, &cr, &err), 0);
        struct ArrowArray out;
        int rc = qv_column_reader_take(cr, bad, 1, &out, &err);
        if (skip) {
            assert_int_equal(rc, 0);
            out.release(&out);
        } else {
            assert_int_equal(rc, EIO);
            assert_non_null(strstr(err.message, "block 5 "));
        }
        qv_column_reader_close(cr);
        qv_reader_close(rd);
    }
    remove(path);
}


/* A source that records where each read lands (offset in the file, the
 * buffer it fills), over a file opened with pread. */
#define MAX_RECORDED 4096
struct recording {
    struct qv_source inner;
    int n;
    uint64_t off[MAX_RECORDED];
    uintptr_t dst[MAX_RECORDED];
};

static int recording_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    struct recording *c = ctx;
    if (c->n < MAX_RECORDED) {
        c->off[c->n] = off;
        c->dst[c->n] = (uintptr_t)buf;
        c->n++;
    }
    return qv_source_read(&c->inner, off, buf, len, err);
}

static void recording_close(void *ctx) {
    struct recording *c = ctx;
    qv_source_close(&c->inner);
}

/* A take by blocks places the segment so that its blocks start on pages of
 * the read buffer: every block a read fetches is at the segment's start
 * plus a multiple of 4 KiB, and the segment's start is on a 4 KiB page, so
 * a 4 KiB block faults in one page, not two. The rows are exact. The rest
 * of such a chunk, read whole afterwards, lands in the same layout; a
 * chunk read whole from the start (a scan) is one read. */
static void test_block_reads_land_on_pages(void **state) {
    struct pool_env *e = *state;
    const uint64_t B = UINT64_C(1) << QV__BLOCK_SHIFT;
    char path[512];
    tu_path(path, sizeof path, "blocks_pages.qvr");
    write_file(e, path);
    static struct recording c;
    memset(&c, 0, sizeof c);
    struct qv_error err;
    assert_int_equal(qv_source_open_file(path, &c.inner, &err), 0);
    struct qv_source src = {.ctx = &c, .name = path, .size = c.inner.size,
                            .read_at = recording_read, .close = recording_close};
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open_source(&src, NULL, e->r, &rd, &err), 0);
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 0), 0, &si, &err), 0);
    assert_true(si.length > 16 * B);
    int64_t few[] = {3, 40000, 70001, ROWS - 1};
    /* By blocks, then the rest whole, through one column reader. */
    struct qv_column_reader *cr;
    assert_int_equal(qv_column_reader_open(rd, 0, 0, e->r, &cr, &err), 0);
    for (int pass = 0; pass < 2; pass++) {
        int first = c.n;
        struct ArrowArray out;
        if (pass == 0) assert_int_equal(qv_column_reader_take(cr, few, 4, &out, &err), 0);
        else assert_int_equal(qv_column_reader_read(cr, 0, ROWS, &out, &err), 0);
        const uint64_t *v = out.buffers[1];
        for (int64_t i = 0; i < (pass ? ROWS : 4); i++)
            assert_int_equal(v[i], value_of(pass ? i : few[i]));
        out.release(&out);
        int seen = 0;
        for (int i = first; i < c.n; i++) {
            if (c.off[i] < si.offset || c.off[i] >= si.offset + si.length) continue;
            uint64_t rel = c.off[i] - si.offset;
            assert_int_equal(rel % B, 0); /* a block's start */
            assert_int_equal((c.dst[i] - (uintptr_t)rel) % 4096, 0);
            seen++;
        }
        assert_true(seen >= 3);
    }
    qv_column_reader_close(cr);
    /* Whole from the start: one read of the segment. */
    int first0 = c.n;
    assert_int_equal(read_all(e, rd, 0, &err), 0);
    int whole = 0;
    for (int i = first0; i < c.n; i++)
        if (c.off[i] >= si.offset && c.off[i] < si.offset + si.length) whole++;
    assert_int_equal(whole, 1);
    /* Column 1 by blocks: aligned too. */
    assert_int_equal(qv_column_reader_open(rd, 0, 1, e->r, &cr, &err), 0);
    struct ArrowArray out;
    int first = c.n;
    assert_int_equal(qv_column_reader_take(cr, few, 4, &out, &err), 0);
    for (int64_t i = 0; i < 4; i++)
        assert_int_equal(((const uint64_t *)out.buffers[1])[i], value_of(few[i]));
    out.release(&out);
    struct qv_segment_info sw;
    assert_int_equal(qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 1), 0, &sw, &err), 0);
    int seen_w = 0;
    for (int i = first; i < c.n; i++)
        if (c.off[i] >= sw.offset && c.off[i] < sw.offset + sw.length) {
            assert_int_equal((c.dst[i] - (uintptr_t)(c.off[i] - sw.offset)) % 4096, 0);
            seen_w++;
        }
    assert_true(seen_w >= 3);
    qv_column_reader_close(cr);
    qv_reader_close(rd);
    remove(path);
}

/* A take of rows[0..n) through the file layer: its error, or 0 with the
 * rows checked exact. */
static int file_take_exact(struct qv_file *f, const int64_t *rows, int64_t n) {
    struct qv_error err;
    struct ArrowArrayStream st;
    int rc = qv_file_take(f, rows, n, NULL, &st, &err);
    if (rc) return rc;
    struct ArrowArray b;
    rc = st.get_next(&st, &b);
    if (rc) {
        assert_non_null(st.get_last_error(&st));
    } else {
        assert_non_null(b.release);
        assert_int_equal(b.length, n);
        const uint64_t *v = b.children[0]->buffers[1];
        for (int64_t i = 0; i < n; i++) assert_int_equal(v[i], value_of(rows[i]));
        b.release(&b);
    }
    st.release(&st);
    return rc;
}

/* Takes by blocks under a memory limit hit at every step: each allocation
 * of a take through the file layer (reader, buffers, decoders, output)
 * failing in turn is ENOMEM (never a crash, a leak or wrong rows), and the
 * same take afterwards is exact. */
static void test_block_take_enomem_each_step(void **state) {
    struct pool_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "blocks_enomem.qvr");
    write_file(e, path);
    int64_t few[] = {3, 40000, 70001, ROWS - 1};
    struct qv_error err;
    int ok = 0;
    for (uint64_t nth = 1; nth < 400 && !ok; nth++) {
        struct qv_file *f;
        struct qv_file_options fo = {.pool = e->pool};
        assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
        qv_pool_inject_alloc_failure(e->pool, nth);
        int rc = file_take_exact(f, few, 4);
        qv_pool_inject_alloc_failure(e->pool, 0);
        if (rc) assert_int_equal(rc, ENOMEM);
        else ok = 1;
        assert_int_equal(file_take_exact(f, few, 4), 0); /* nothing injected: exact */
        qv_file_close(f);
    }
    assert_true(ok);
    remove(path);
}

/* A file cut short after it was opened: the blocks a take reads past the
 * new end are a clear EIO (a short read, naming the file), never a signal
 * or rows of zeros; rows before the cut are exact. */
static void test_block_take_truncated_after_open(void **state) {
    struct pool_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "blocks_cut.qvr");
    write_file(e, path);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 0), 0, &si, &err), 0);
    /* Cut in the middle of column 0's values. */
    assert_int_equal(truncate(path, (off_t)(si.offset + si.length / 2)), 0);
    int64_t early[] = {0, 5};
    assert_int_equal(take_rows(e, rd, 0, early, 2, &err), 0);
    int64_t late[] = {ROWS - 2};
    assert_int_equal(take_rows(e, rd, 0, late, 1, &err), EIO);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "short read"));
    qv_reader_close(rd);
    remove(path);
}

/* `n` distinct rows spread over the column, none within two vectors of
 * vector `avoid` (-1: none), in increasing order. */
static int64_t spread_rows(int64_t *rows, int64_t n, int64_t avoid) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i * (ROWS / n) + (i * 37) % 1000;
        if (avoid >= 0 && r / 1024 >= avoid - 2 && r / 1024 <= avoid + 2) continue;
        rows[k++] = r;
    }
    rows[k++] = ROWS - 1; /* the chunk's last row */
    return k;
}

/* A take of many rows from a chunk not read yet reads it whole with one
 * read (its headers and a block or so per row would cost more reads than
 * the chunk is worth); a take of few rows reads its blocks. Either way each
 * block is verified as it is used: a damaged block in the middle of the
 * whole read fails exactly the takes whose rows use it, naming the block,
 * and rows around it are exact. */
static void test_dense_take_reads_chunk_once(void **state) {
    struct pool_env *e = *state;
    const uint64_t B = UINT64_C(1) << QV__BLOCK_SHIFT;
    char path[512];
    tu_path(path, sizeof path, "blocks_dense.qvr");
    write_file(e, path);
    const int64_t vec = (int64_t)((5 * B + 2560) / 5120);
    flip(e, path, 5 * B + 2560);
    int64_t rows[200];
    int64_t n = spread_rows(rows, 128, vec);
    struct counting c;
    struct qv_reader *rd = open_counting(e, path, 0, &c);
    struct qv_error err;
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 0), 0, &si, &err), 0);
    /* The bit-packed chunk is 40 bits x ROWS: well within 8 KiB a row. */
    assert_true(si.length <= (uint64_t)(n + 1) * 8192);
    uint64_t r0 = c.reads, b0 = c.bytes;
    assert_int_equal(take_rows(e, rd, 0, rows, n, &err), 0);
    assert_int_equal(c.reads - r0, 1);
    assert_int_equal(c.bytes - b0, si.length);
    /* The damaged vector among many rows: the chunk is read whole, the
     * block is refused when its row is decoded. */
    int64_t with_bad[200];
    int64_t m = spread_rows(with_bad, 128, -1);
    int found = 0;
    for (int64_t i = 0; i < m; i++) found |= with_bad[i] / 1024 == vec;
    if (!found) { /* put a row of the damaged vector in, in order */
        int64_t i = 0;
        while (i < m && with_bad[i] < vec * 1024 + 17) i++;
        memmove(with_bad + i + 1, with_bad + i, (size_t)(m - i) * sizeof *with_bad);
        with_bad[i] = vec * 1024 + 17;
        if (i > 0 && with_bad[i - 1] == with_bad[i]) memmove(with_bad + i, with_bad + i + 1, (size_t)(m - i) * sizeof *with_bad);
        else m++;
    }
    r0 = c.reads;
    assert_int_equal(take_rows(e, rd, 0, with_bad, m, &err), EIO);
    assert_int_equal(c.reads - r0, 1);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    assert_non_null(strstr(err.message, "column 'v'"));
    assert_non_null(strstr(err.message, "row group 0"));
    assert_non_null(strstr(err.message, "block 5 "));
    /* Few rows: by blocks, far less than the chunk. */
    int64_t few[] = {3, 70000};
    b0 = c.bytes;
    assert_int_equal(take_rows(e, rd, 0, few, 2, &err), 0);
    assert_true(c.bytes - b0 < si.length / 4);
    qv_reader_close(rd);
    remove(path);
}

/* Dense takes through every kind of tree: each chunk (and the reference
 * column's chunk of a relative one) not read yet is read with one read,
 * and the rows are exact. */
static void test_dense_take_encodings(void **state) {
    struct pool_env *e = *state;
    static const int encs[] = {QV_ENC_BITPACK, QV_ENC_DELTA, QV_ENC_PATCHED, QV_ENC_ZSTD,
                               QV_ENC_RELATIVE, QV_ENC_AUTO};
    int64_t rows[200];
    int64_t n = spread_rows(rows, 128, -1);
    for (size_t i = 0; i < sizeof encs / sizeof encs[0]; i++) {
        char path[512];
        tu_path(path, sizeof path, "blocks_dense_enc.qvr");
        write_file_forced(e, path, encs[i]);
        for (int32_t col = 0; col < 2; col++) {
            struct counting c;
            struct qv_reader *rd = open_counting(e, path, 0, &c);
            struct qv_error err;
            uint64_t total = 0;
            for (int32_t k = 0; k < 2; k++) {
                struct qv_segment_info si;
                assert_int_equal(
                    qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, k), 0, &si, &err), 0);
                assert_true(si.length <= (uint64_t)(n + 1) * 8192);
                total += si.length;
            }
            uint64_t r0 = c.reads, b0 = c.bytes;
            assert_int_equal(take_rows(e, rd, col, rows, n, &err), 0);
            /* One read of its chunk, and one of its reference's if any. */
            assert_true(c.reads - r0 >= 1 && c.reads - r0 <= 2);
            assert_true(c.bytes - b0 <= total);
            qv_reader_close(rd);
        }
        remove(path);
    }
}

/* Drains a take of the file layer into the values of column `col`; the
 * stream's error when it fails. */
static int file_take_opts(struct qv_file *f, const int64_t *rows, int64_t n, int32_t col,
                          const struct qv_file_scan_options *opts, char *msg, size_t cap) {
    struct qv_error err;
    struct ArrowArrayStream st;
    int rc = qv_file_take(f, rows, n, opts, &st, &err);
    if (rc) {
        snprintf(msg, cap, "%s", err.message);
        return rc;
    }
    int64_t got = 0;
    for (;;) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc) {
            const char *m = st.get_last_error(&st);
            snprintf(msg, cap, "%s", m ? m : "");
            break;
        }
        if (!b.release) break;
        const int64_t *v = (const int64_t *)b.children[col]->buffers[1];
        for (int64_t i = 0; i < b.length; i++)
            assert_int_equal((uint64_t)v[i + b.children[col]->offset], value_of(rows[got + i]));
        got += b.length;
        b.release(&b);
    }
    st.release(&st);
    if (!rc) assert_int_equal(got, n);
    return rc;
}

static int file_take(struct qv_file *f, const int64_t *rows, int64_t n, int32_t col, char *msg,
                     size_t cap) {
    return file_take_opts(f, rows, n, col, NULL, msg, cap);
}

/* A file object over a counting source; take_cache_bytes as given. */
static struct qv_file *open_file_counting(struct pool_env *e, const char *path, int64_t cache,
                                          struct counting *c) {
    struct qv_error err;
    memset(c, 0, sizeof *c);
    assert_int_equal(qv_source_open_file(path, &c->inner, &err), 0);
    struct qv_source src = {.ctx = c, .name = path, .size = c->inner.size,
                            .read_at = counting_read, .close = counting_close};
    struct qv_file_options fo = {.pool = e->pool, .take_cache_bytes = cache};
    struct qv_file *f;
    assert_int_equal(qv_file_open_source(&src, &fo, &f, &err), 0);
    return f;
}

/* Column w stored relative to column v: a take of both reads v's blocks
 * once (w's reference reader copies them from v's reader in the take
 * cache, sparse or dense), and what it copies is verified as if read: a
 * damaged block of v lent to w's reference fails, naming the block. */
static void test_reference_blocks_lent(void **state) {
    struct pool_env *e = *state;
    const uint64_t B = UINT64_C(1) << QV__BLOCK_SHIFT;
    char path[512], msg[1024];
    tu_path(path, sizeof path, "blocks_lend.qvr");
    write_file_forced(e, path, QV_ENC_RELATIVE);
    int64_t sparse[] = {77777, 5, 40000, 5, ROWS - 1}; /* unsorted, a duplicate */
    int64_t dense[200];
    int64_t nd = spread_rows(dense, 128, -1);
    for (int pass = 0; pass < 2; pass++) {
        const int64_t *rows = pass ? dense : sparse;
        int64_t n = pass ? nd : 5;
        uint64_t bytes[2];
        for (int cached = 0; cached < 2; cached++) {
            struct counting c;
            struct qv_file *f = open_file_counting(e, path, cached ? 0 : -1, &c);
            uint64_t b0 = c.bytes;
            assert_int_equal(file_take(f, rows, n, 0, msg, sizeof msg), 0);
            bytes[cached] = c.bytes - b0;
            /* Again: everything is in the cache's readers now. */
            assert_int_equal(file_take(f, rows, n, 1, msg, sizeof msg), 0);
            qv_file_close(f);
        }
        /* Without the cache, v's bytes are read twice (v's reader and w's
         * reference reader); with it, once. */
        assert_true(bytes[1] < bytes[0]);
    }
    /* v damaged in block 5, after a dense take left v's reader (read whole,
     * block 5 unused and unchecked) in the cache: a take of w alone at a
     * row of that block gets the block lent, and refuses it. */
    const int64_t vec = (int64_t)((5 * B + 2560) / 5120);
    struct counting c;
    struct qv_file *f = open_file_counting(e, path, 0, &c);
    flip(e, path, 5 * B + 2560);
    int64_t away[200];
    int64_t m = spread_rows(away, 128, vec);
    assert_int_equal(file_take(f, away, m, 0, msg, sizeof msg), 0);
    static const char *const w_only[] = {"w"};
    struct qv_file_scan_options wo = {.columns = w_only, .n_columns = 1};
    int64_t bad[] = {vec * 1024 + 17};
    assert_int_equal(file_take_opts(f, bad, 1, 0, &wo, msg, sizeof msg), EIO);
    assert_non_null(strstr(msg, "column 'v'"));
    assert_non_null(strstr(msg, "block 5 "));
    /* Rows of w away from the block are exact. */
    assert_int_equal(file_take_opts(f, away, m, 0, &wo, msg, sizeof msg), 0);
    qv_file_close(f);
    remove(path);
}

/* Through the file layer, on a chunk read whole: rows in any order with
 * duplicates, rows at the chunk's edges, a reader a sparse take left in the
 * cache (it goes on by blocks), and a file changed or truncated after it was
 * opened (the whole read fails with a clear EIO, never wrong data). */
static void test_dense_file_take(void **state) {
    struct pool_env *e = *state;
    const uint64_t B = UINT64_C(1) << QV__BLOCK_SHIFT;
    char path[512], msg[1024];
    tu_path(path, sizeof path, "blocks_dense_file.qvr");
    write_file(e, path);
    int64_t rows[300];
    int64_t n = spread_rows(rows, 128, -1);
    /* Unsorted, duplicates, both edges of the chunk. */
    for (int64_t i = 0; i < n / 2; i++) {
        int64_t t = rows[i];
        rows[i] = rows[n - 1 - i];
        rows[n - 1 - i] = t;
    }
    rows[n++] = 0;
    rows[n++] = ROWS - 1;
    rows[n++] = rows[5];
    rows[n++] = 0;
    struct qv_error err;
    struct qv_file *f;
    struct qv_file_options fo = {.pool = e->pool};
    /* A sparse take first: the cache keeps a reader that read some blocks;
     * the dense take after it goes on by blocks from there. */
    assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
    int64_t few[] = {ROWS - 1, 1};
    assert_int_equal(file_take(f, few, 2, 0, msg, sizeof msg), 0);
    assert_int_equal(file_take(f, rows, n, 0, msg, sizeof msg), 0);
    assert_int_equal(file_take(f, rows, n, 1, msg, sizeof msg), 0);
    qv_file_close(f);
    /* Fresh: the dense take reads the chunks whole. */
    assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
    assert_int_equal(file_take(f, rows, n, 0, msg, sizeof msg), 0);
    qv_file_close(f);
    /* Changed after the open: a byte of block 3 flipped. Rows away from it
     * read (the chunk read whole, the block not used); then a take using
     * it (the same reader, from the cache) fails naming the block. */
    assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
    flip(e, path, 3 * B + 100);
    const int64_t vec = (int64_t)((3 * B + 100) / 5120);
    int64_t away[200];
    int64_t m = spread_rows(away, 128, vec);
    assert_int_equal(file_take(f, away, m, 0, msg, sizeof msg), 0);
    int64_t near[] = {ROWS - 1, vec * 1024 + 1, 0}; /* unsorted, one in the damaged vector */
    assert_int_equal(file_take(f, near, 3, 0, msg, sizeof msg), EIO);
    assert_non_null(strstr(msg, "block 3 "));
    qv_file_close(f);
    /* The same on a fresh file object: one dense take over the block. */
    assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
    m = spread_rows(away, 128, -1);
    away[m++] = vec * 1024 + 1;
    assert_int_equal(file_take(f, away, m, 0, msg, sizeof msg), EIO);
    assert_non_null(strstr(msg, "block 3 "));
    qv_file_close(f);
    write_file(e, path); /* intact again */
    /* Truncated after the open, inside column v's chunk: the whole read
     * comes up short. */
    assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 0, qv_reader_column_node(rd, 0), 0, &si, &err), 0);
    qv_reader_close(rd);
    assert_int_equal(truncate(path, (off_t)(si.offset + si.length / 2)), 0);
    assert_int_equal(file_take(f, rows, n, 0, msg, sizeof msg), EIO);
    assert_non_null(strstr(msg, "truncated"));
    assert_non_null(strstr(msg, "row group 0"));
    qv_file_close(f);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_corrupt_block_pread, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_block_mapped, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_block_sums_match, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_block_reads_land_on_pages, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_block_take_enomem_each_step, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_block_take_truncated_after_open, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_skip_checksums_reads_on_demand, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_fused_child_reads_its_blocks, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_dense_take_reads_chunk_once, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_dense_take_encodings, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_dense_file_take, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_reference_blocks_lent, pool_env_setup,
                                        pool_env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
