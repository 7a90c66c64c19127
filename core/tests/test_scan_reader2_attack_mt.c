/* Second column readers (twins, scan.c) attacked as a hostile user would,
 * in narrow scans (few projected columns, no filter, 1-4 workers, prefetch
 * 1-3): every type of random_batch.c, alone and in pairs and through nested
 * paths, over files of many row groups, one row group and 7-row row groups,
 * with dictionary, FSST and zstd forced, with row ranges, takes, splits and
 * max_rows, validation and casts, read with pread or mapped; each output
 * equals the synchronous scan's (qv_arrow_array_equal per column of each
 * batch). Then: a column reader reused after a decode that failed for
 * memory (what a narrow scan does with the task of a batch beyond prefetch)
 * decodes the same rows right; a pool limit at every size, and a failure at
 * every allocation, end in the synchronous output or a clean ENOMEM; the
 * batch built beyond prefetch is never failed for memory (its assembly
 * included); completed batches waiting stay within what scan.h states; a
 * caller's source whose reads fail once, return short, block, or cancel the
 * scan from inside; release and cancel from other threads at random
 * moments; a file-layer take mixing lent readers and an own one. Every test
 * is under the deadline set in setup; no timing assertions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/thread.h"
#include "canceller.h"
#include "memory/memory_internal.h" /* the injector's count (struct qv_pool) */
#include "memory/memory_testing.h"
#include "quiver/encoding.h"
#include "quiver/file.h"
#include "quiver/format.h"
#include "quiver/scan.h"
#include "random_batch.h"
#include "scan/scan_testing.h"
#include "test_util.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

/* The files: every type of random_batch.c, written several ways. */
enum { F_MANY, F_ONE, F_TINY, F_DICT, F_FSST, F_ZSTD, NFILES };
static const struct {
    const char *name;
    int64_t rows, rg_rows;
    uint32_t allowed;
    int compact, low_card;
} spec[NFILES] = {
    {"r2a_many.qvr", 9000, 1000, 0, 0, 0},
    {"r2a_one.qvr", 9000, 0, 0, 0, 0},
    {"r2a_tiny.qvr", 5000, 7, 0, 0, 0},
    {"r2a_dict.qvr", 9000, 2048, QV_ENC_BIT(QV_ENC_DICT) | QV_ENC_BIT(QV_ENC_BITPACK), 0, 1},
    {"r2a_fsst.qvr", 9000, 3000, QV_ENC_BIT(QV_ENC_FSST), 0, 0},
    {"r2a_zstd.qvr", 9000, 1500, QV_ENC_BIT(QV_ENC_ZSTD) | QV_ENC_BIT(QV_ENC_ZSTD_DICT), 1, 0},
};

struct file {
    char path[512];
    uint8_t *bytes;
    size_t size;
    struct qv_reader *rd;
    struct qv_reader *rd_map; /* the same file mapped (qv_reader_options.mmap) */
    int32_t ncol;
};
static struct file files[NFILES];

static void nap_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t rs = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static void write_file(int k) {
    struct qv_error err = {0};
    struct qv_schema *s;
    assert_int_equal(rb_all_types_schema(res, &s), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(s, res, NULL, &b, &err), 0);
    struct rb_options o = {.null_prob = 0.1, .max_list = 3, .max_string = 20,
                           .low_cardinality = spec[k].low_card};
    uint64_t seed = 1000 + (uint64_t)k;
    assert_int_equal(rb_append_rows(b, spec[k].rows, &seed, &o), 0);
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    tu_path(files[k].path, sizeof files[k].path, spec[k].name);
    struct qv_writer_options wo = {.row_group_rows = spec[k].rg_rows ? spec[k].rg_rows : spec[k].rows,
                                   .allowed_encodings = spec[k].allowed,
                                   .compact = spec[k].compact};
    struct qv_writer *w;
    if (qv_writer_open(files[k].path, s, &wo, res, &w, &err) || qv_writer_write(w, &batch, &err) ||
        qv_writer_finish(w, &err))
        fail_msg("write %s: %s", spec[k].name, err.message);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(s);
    files[k].bytes = tu_read_file(files[k].path, &files[k].size);
    assert_non_null(files[k].bytes);
    assert_int_equal(qv_reader_open(files[k].path, NULL, res, &files[k].rd, &err), 0);
    struct qv_reader_options mo = {.mmap = 1};
    assert_int_equal(qv_reader_open(files[k].path, &mo, res, &files[k].rd_map, &err), 0);
    files[k].ncol = (int32_t)qv_reader_schema(files[k].rd)->root.n_children;
}

static int setup(void **state) {
    (void)state;
    alarm(1500); /* a hang fails the test instead of stalling CI */
    __atomic_store_n(&qv__scan_twin_min_ns, 0, __ATOMIC_RELAXED); /* twins for small columns too */
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    for (int k = 0; k < NFILES; k++) write_file(k);
    assert_int_equal(qv_reader_num_row_groups(files[F_ONE].rd), 1);
    /* The encodings forced are there: column s's values (its last segment). */
    const char *enc[NFILES] = {[F_DICT] = "dict", [F_FSST] = "fsst", [F_ZSTD] = "zstd"};
    for (int k = 0; k < NFILES; k++) {
        if (!enc[k]) continue;
        int32_t node = qv_reader_column_node(files[k].rd, 17);
        char d[2048] = "";
        for (int i = 0; i < 3; i++) {
            struct qv_segment_info si;
            if (qv_reader_segment_info(files[k].rd, 0, node, i, &si, NULL)) break;
            if (si.role != QV_SEGMENT_VALUES) continue;
            assert_int_equal(qv_reader_segment_describe(files[k].rd, 0, node, i, res, d, sizeof d, NULL,
                                                        NULL, NULL), 0);
        }
        for (char *q = d; *q; q++) *q = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q);
        if (!strstr(d, enc[k])) fail_msg("%s: column s is '%s', not %s", spec[k].name, d, enc[k]);
    }
    assert_true(qv_reader_num_row_groups(files[F_TINY].rd) > 700);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int k = 0; k < NFILES; k++) {
        qv_reader_close(files[k].rd);
        qv_reader_close(files[k].rd_map);
        unlink(files[k].path);
        free(files[k].bytes);
    }
    qv_reservation_destroy(res);
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(pool);
    alarm(0);
    return 0;
}

static uint32_t reservations(void) {
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    return st.reservations;
}

static void pool_is_clean(void) { assert_int_equal(reservations(), 1); /* only the test's own */ }

/* ---- a scan's output, kept batch by batch ---- */

struct out {
    struct ArrowArray *b;
    int64_t n, cap;
    int rc;             /* get_next's error at the end, or 0 */
    char msg[512];
    struct qv_schema *schema; /* the output schema (for comparisons) */
};

static void out_free(struct out *o) {
    for (int64_t i = 0; i < o->n; i++) o->b[i].release(&o->b[i]);
    free(o->b);
    if (o->schema) qv_schema_destroy(o->schema);
    memset(o, 0, sizeof *o);
}

static void out_push(struct out *o, struct ArrowArray *a) {
    if (o->n == o->cap) {
        o->cap = o->cap * 2 + 16;
        o->b = realloc(o->b, (size_t)o->cap * sizeof *o->b);
        assert_non_null(o->b);
    }
    o->b[o->n++] = *a;
}

/* Drains st into o (kept batches); stops at the first error. */
static void drain(struct ArrowArrayStream *st, struct out *o) {
    struct ArrowSchema sc;
    assert_int_equal(st->get_schema(st, &sc), 0);
    assert_int_equal(qv_schema_import(&sc, res, &o->schema, NULL), 0);
    sc.release(&sc);
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) {
            o->rc = rc;
            const char *m = st->get_last_error(st);
            snprintf(o->msg, sizeof o->msg, "%s", m ? m : "");
            assert_null(b.release);
            return;
        }
        if (!b.release) return;
        assert_true(b.length > 0);
        out_push(o, &b);
    }
}

static int64_t twins_opened; /* by the scans of scan(), summed */

static void scan(const struct qv_reader *r, const struct qv_scan_options *opts, struct out *o) {
    memset(o, 0, sizeof *o);
    struct ArrowArrayStream st;
    struct qv_error err;
    if (qv_scan_open(r, opts, res, &st, &err)) fail_msg("open: %s", err.message);
    drain(&st, o);
    int32_t opened, dropped;
    assert_int_equal(qv__scan_twin_counts(&st, &opened, &dropped), 0);
    twins_opened += opened;
    st.release(&st);
}

/* Asserts got's first `n` batches equal want's (same lengths, every column
 * equal); n = -1: all of them, and as many. */
static void same_batches(const struct out *got, const struct out *want, int64_t n, const char *what) {
    if (n < 0) {
        if (got->n != want->n)
            fail_msg("%s: %lld batches against %lld", what, (long long)got->n, (long long)want->n);
        n = got->n;
    }
    assert_true(n <= got->n && n <= want->n);
    for (int64_t i = 0; i < n; i++) {
        const struct ArrowArray *a = &got->b[i], *b = &want->b[i];
        if (a->length != b->length || a->n_children != b->n_children)
            fail_msg("%s: batch %lld: %lld rows, %lld columns against %lld, %lld", what, (long long)i,
                     (long long)a->length, (long long)a->n_children, (long long)b->length,
                     (long long)b->n_children);
        for (int64_t c = 0; c < a->n_children; c++) {
            char why[256] = "";
            const struct qv_field *f = &want->schema->root.children[c];
            if (!qv_arrow_array_equal(f, a->children[c], b->children[c], why, sizeof why))
                fail_msg("%s: batch %lld column %s: %s", what, (long long)i, f->name, why);
        }
    }
}

/* The synchronous scan of the same options. */
static void reference(const struct qv_reader *r, struct qv_scan_options o, struct out *want) {
    o.threads = QV_SCAN_SYNC;
    scan(r, &o, want);
    if (want->rc) fail_msg("reference: %s", want->msg);
}

/* Options of a random narrow scan of cols[0..n) over file k (the row range,
 * take, split or max_rows drawn from `variant`). */
static int64_t take_rows[20000];
static struct qv_scan_options narrow_opts(int k, const int32_t *cols, int32_t n, int variant) {
    static const int64_t brs[] = {333, 1000, 1024, 4097, 64};
    int64_t rows = spec[k].rows;
    struct qv_scan_options o = {.columns = cols, .n_columns = n,
                                .batch_rows = brs[rnd() % (k == F_TINY ? 5 : 4)],
                                .threads = 1 << (rnd() % 3), .prefetch = 1 + (int)(rnd() % 3)};
    switch (variant) {
    case 1: /* a row range cutting row groups */
        o.row_begin = 1 + (int64_t)(rnd() % 500);
        o.row_end = rows - (int64_t)(rnd() % 500);
        break;
    case 2: { /* a take: runs and gaps, whole row groups skipped */
        int64_t m = 0;
        for (int64_t i = 0; i < rows; i++) {
            uint64_t x = rnd() % 16;
            if ((i / 1500) % 3 == 1) continue; /* skip some row groups whole */
            if (x < 9) take_rows[m++] = i;
        }
        o.take = take_rows;
        o.n_take = m;
        break;
    }
    case 3: { /* a split */
        int64_t nrg = qv_reader_num_row_groups(files[k].rd);
        if (nrg > 2) {
            o.row_group_begin = 1;
            o.row_group_end = nrg - 1;
        }
        break;
    }
    case 4: /* max_rows, not a multiple of batch_rows */
        o.max_rows = 4097 + (int64_t)(rnd() % 3000);
        break;
    default:
        break;
    }
    return o;
}

static int64_t casts_failed; /* scans whose cast failed (both ways alike) */

static void check_narrow(int k, struct qv_scan_options o, const char *what) {
    struct out want, got;
    /* Validation and casts run on the thread that decoded, twins too. */
    o.validate = (int)(rnd() % 3);
    o.cast = rnd() % 3 == 0 ? QV_CAST_SPARK : 0;
    struct qv_scan_options so = o;
    so.threads = QV_SCAN_SYNC;
    int mapped = (int)(rnd() % 2); /* the threaded scan over the file mapped */
    scan(files[k].rd, &so, &want);
    scan(mapped ? files[k].rd_map : files[k].rd, &o, &got);
    char w[256];
    snprintf(w, sizeof w, "%s: file %s%s, threads %d, prefetch %d, batch_rows %lld, validate %d, cast %u",
             what, spec[k].name, mapped ? " (mapped)" : "", o.threads, o.prefetch, (long long)o.batch_rows,
             o.validate, o.cast);
    if (want.rc) {
        /* A value the cast cannot carry: the same error after the same
         * batches. */
        if (got.rc != want.rc || strcmp(got.msg, want.msg))
            fail_msg("%s: %d '%s' against the synchronous %d '%s'", w, got.rc, got.msg, want.rc, want.msg);
        casts_failed++;
    } else if (got.rc) {
        fail_msg("%s: %s", w, got.msg);
    }
    same_batches(&got, &want, -1, w);
    out_free(&want);
    out_free(&got);
    pool_is_clean();
}

/* Every column alone, and pairs, over every file and option variant. */
static void test_every_type_equals_sync(void **state) {
    (void)state;
    twins_opened = 0;
    for (int k = 0; k < NFILES; k++)
        for (int32_t c = 0; c < files[k].ncol; c++) {
            int32_t one[1] = {c};
            char what[64];
            snprintf(what, sizeof what, "column %d", c);
            check_narrow(k, narrow_opts(k, one, 1, (int)(rnd() % 5)), what);
            int32_t two[2] = {c, (c * 7 + 3) % files[k].ncol};
            if (two[1] == c) continue;
            snprintf(what, sizeof what, "columns %d, %d", two[0], two[1]);
            struct qv_scan_options o = narrow_opts(k, two, 2, (int)(rnd() % 5));
            o.threads = 2 + 2 * (int)(rnd() % 2); /* narrow with 2 columns */
            check_narrow(k, o, what);
        }
    assert_true(twins_opened > 0); /* the twins were there */
}

/* Nested paths into struct, list of struct and map, projected narrow. */
static void test_nested_paths_equal_sync(void **state) {
    (void)state;
    const struct qv_schema *s = qv_reader_schema(files[F_MANY].rd);
    int32_t pt = -1, lp = -1, m = -1, lls = -1;
    for (int32_t c = 0; c < (int32_t)s->root.n_children; c++) {
        const char *nm = s->root.children[c].name;
        if (!strcmp(nm, "pt")) pt = c;
        if (!strcmp(nm, "lp")) lp = c;
        if (!strcmp(nm, "m")) m = c;
        if (!strcmp(nm, "lls")) lls = c;
    }
    assert_true(pt >= 0 && lp >= 0 && m >= 0 && lls >= 0);
    static const int32_t x[] = {0}, item_label[] = {0, 1}, entries_value[] = {0, 1};
    const struct qv_column_path sets[][2] = {
        {{pt, 1, x}, {0}},
        {{lp, 2, item_label}, {0}},
        {{m, 2, entries_value}, {0}},
        {{pt, 1, x}, {lp, 2, item_label}},
        {{lls, 0, NULL}, {m, 2, entries_value}},
    };
    const int32_t nset[] = {1, 1, 1, 2, 2};
    for (int k = 0; k < NFILES; k++)
        for (int i = 0; i < 5; i++)
            for (int rep = 0; rep < 2; rep++) {
                struct qv_scan_options o = narrow_opts(k, NULL, 0, (int)(rnd() % 5));
                o.columns = NULL;
                o.n_columns = 0;
                o.paths = sets[i];
                o.n_paths = nset[i];
                if (nset[i] == 2 && o.threads < 2) o.threads = 2;
                char what[64];
                snprintf(what, sizeof what, "path set %d", i);
                check_narrow(k, o, what);
            }
}

/* ---- a column reader reused after a decode that failed for memory ----
 * A narrow scan gives the task of a batch beyond prefetch that found no
 * memory back to its batch and runs it again later, on the same first
 * reader (scan.c, run_task): the reader must decode the same rows right
 * after a failed decode. */
/* Decodes rows [lo, lo + n) through cr the way a scan's task does: into an
 * owned array of a reservation of its own (then adopted by the caller). */
static int read_like_scan(struct qv_column_reader *cr, int64_t lo, int64_t n, struct ArrowArray *out,
                          struct qv_reservation **ores, struct qv_error *err) {
    int rc = qv_reservation_create(pool, NULL, ores, err);
    if (rc) return rc;
    rc = qv_owned_array_create(out, qv_column_reader_field(cr), *ores, err);
    if (!rc) {
        rc = qv_column_reader_read_into(cr, lo, n, out, *ores, err);
        if (rc) out->release(out);
    }
    if (rc) {
        out->release = NULL;
        qv_reservation_destroy(*ores);
        *ores = NULL;
    }
    return rc;
}

static void release_read(struct ArrowArray *a, struct qv_reservation *r) {
    a->release(a);
    qv_reservation_destroy(r);
}

static void test_reader_reused_after_enomem(void **state) {
    (void)state;
    for (int k = 0; k < NFILES; k++) {
        if (k == F_TINY) continue;
        const struct qv_reader *rd = files[k].rd;
        int64_t nrg = qv_reader_num_row_groups(rd);
        for (int32_t c = 0; c < files[k].ncol; c++) {
            int64_t rg = nrg > 1 ? 1 : 0, rows = qv_reader_row_group_rows(rd, rg);
            int64_t lo = rows / 3, n = rows / 3;
            /* The rows decoded by a reader that never failed. */
            struct qv_column_reader *ok;
            struct qv_reservation *r1;
            assert_int_equal(qv_reservation_create(pool, NULL, &r1, NULL), 0);
            assert_int_equal(qv_column_reader_open(rd, rg, c, r1, &ok, NULL), 0);
            struct ArrowArray want;
            struct qv_reservation *wr;
            assert_int_equal(read_like_scan(ok, lo, n, &want, &wr, NULL), 0);
            const struct qv_field *f = qv_column_reader_field(ok);
            int done = 0;
            for (uint64_t nth = 1; nth < 2000 && !done; nth++) {
                struct qv_reservation *r2;
                assert_int_equal(qv_reservation_create(pool, NULL, &r2, NULL), 0);
                struct qv_column_reader *cr;
                assert_int_equal(qv_column_reader_open(rd, rg, c, r2, &cr, NULL), 0);
                /* A first decode elsewhere in the row group, then the one
                 * that fails, then again. */
                struct ArrowArray a;
                struct qv_reservation *ar;
                assert_int_equal(read_like_scan(cr, 0, lo / 2 + 1, &a, &ar, NULL), 0);
                release_read(&a, ar);
                qv_pool_inject_alloc_failure(pool, nth);
                struct qv_error err;
                int rc = read_like_scan(cr, lo, n, &a, &ar, &err);
                qv_pool_inject_alloc_failure(pool, 0);
                if (!rc) {
                    done = 1;
                    release_read(&a, ar);
                } else {
                    if (rc != ENOMEM) fail_msg("column %d nth %llu: %d %s", c, (unsigned long long)nth, rc, err.message);
                    struct ArrowArray again;
                    struct qv_reservation *gr;
                    rc = read_like_scan(cr, lo, n, &again, &gr, &err);
                    if (rc) fail_msg("%s column %d: read after ENOMEM (nth %llu): %s", spec[k].name, c,
                                     (unsigned long long)nth, err.message);
                    char why[256] = "";
                    if (!qv_arrow_array_equal(f, &want, &again, why, sizeof why))
                        fail_msg("%s column %s: after a failed decode (allocation %llu) the same rows "
                                 "decode differently: %s",
                                 spec[k].name, f->name, (unsigned long long)nth, why);
                    release_read(&again, gr);
                }
                qv_column_reader_close(cr);
                qv_reservation_destroy(r2);
            }
            assert_true(done);
            release_read(&want, wr);
            qv_column_reader_close(ok);
            qv_reservation_destroy(r1);
        }
    }
    pool_is_clean();
}

/* ---- a pool with a byte limit ---- */

/* Drains st comparing each batch with want's as it comes, releasing it at
 * once (a consumer within a budget); returns get_next's error or 0, with
 * *nb the batches that came before. */
static int drain_cmp(struct ArrowArrayStream *st, const struct out *want, int64_t *nb, const char *what) {
    *nb = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) {
            assert_null(b.release);
            return rc;
        }
        if (!b.release) return 0;
        if (*nb >= want->n) fail_msg("%s: more batches than the synchronous scan", what);
        struct out one = {.b = &b, .n = 1, .schema = want->schema};
        struct out ref1 = {.b = &want->b[*nb], .n = 1, .schema = want->schema};
        same_batches(&one, &ref1, 1, what);
        b.release(&b);
        (*nb)++;
    }
}

/* Runs the scan o of file k within a pool of `limit` bytes: 0 when it
 * handed out exactly the synchronous output, ENOMEM when it stopped for
 * memory after a start of it (with a message); nothing leaks. */
static int run_limited(int k, struct qv_scan_options o, const struct out *want, uint64_t limit,
                       int no_cache, uint64_t *peak) {
    struct qv_pool_options po = {.name = "limited", .limit = limit, .no_block_cache = no_cache};
    struct qv_pool *lp;
    struct qv_reservation *lr;
    assert_int_equal(qv_pool_create(&po, &lp, NULL), 0);
    assert_int_equal(qv_reservation_create(lp, NULL, &lr, NULL), 0);
    char what[160];
    snprintf(what, sizeof what, "limit %llu, threads %d, prefetch %d", (unsigned long long)limit,
             o.threads, o.prefetch);
    struct ArrowArrayStream st;
    struct qv_error err;
    int rc = qv_scan_open(files[k].rd, &o, lr, &st, &err);
    if (rc) {
        if (rc != ENOMEM) fail_msg("%s: open: %s", what, err.message);
    } else {
        int64_t nb;
        rc = drain_cmp(&st, want, &nb, what);
        if (rc == 0 && nb != want->n) fail_msg("%s: %lld batches of %lld", what, (long long)nb, (long long)want->n);
        if (rc && rc != ENOMEM) fail_msg("%s: %d %s", what, rc, st.get_last_error(&st));
        if (rc) assert_non_null(st.get_last_error(&st));
        st.release(&st);
    }
    struct qv_pool_stats ps;
    qv_pool_get_stats(lp, &ps);
    assert_int_equal(ps.reservations, 1);
    if (peak) *peak = ps.peak_reserved;
    qv_reservation_destroy(lr);
    qv_pool_destroy(lp);
    return rc;
}

/* Limits from well above the scan's peak down to a quarter of it: each
 * run ends in the synchronous output or a clean ENOMEM. Also finds the
 * smallest limit (on the grid) each scan gets through with, against the
 * synchronous scan's, for the report (printed, not asserted: the narrow
 * scan is documented to need more). */
static void test_pool_limit_sweep(void **state) {
    (void)state;
    const struct qv_schema *s = qv_reader_schema(files[F_MANY].rd);
    int32_t col_s = -1, col_m = -1, col_i64 = -1;
    for (int32_t c = 0; c < (int32_t)s->root.n_children; c++) {
        if (!strcmp(s->root.children[c].name, "s")) col_s = c;
        if (!strcmp(s->root.children[c].name, "m")) col_m = c;
        if (!strcmp(s->root.children[c].name, "i64")) col_i64 = c;
    }
    const int32_t one_s[] = {col_s}, one_m[] = {col_m}, two[] = {col_i64, col_s};
    const struct {
        const int32_t *c;
        int32_t n;
    } pr[] = {{one_s, 1}, {one_m, 1}, {two, 2}};
    for (int k = 0; k < NFILES; k += 4) { /* F_MANY, F_FSST */
        for (int p = 0; p < 3; p++) {
            struct qv_scan_options o = {.columns = pr[p].c, .n_columns = pr[p].n, .batch_rows = 700};
            struct out want;
            reference(files[k].rd, o, &want);
            o.threads = QV_SCAN_SYNC;
            uint64_t peak_sync;
            assert_int_equal(run_limited(k, o, &want, 0, 1, &peak_sync), 0);
            uint64_t min_ok[4][4] = {{0}};
            for (int t = 1; t <= 4; t *= 2)
                for (int pf = 1; pf <= 3; pf++) {
                    o.threads = t;
                    o.prefetch = pf;
                    if (pr[p].n == 2 && t == 1) continue; /* not narrow */
                    /* Peak without a limit, against scan.h: about
                     * max(prefetch, 2) + 2 batches and two readers per
                     * column, where the synchronous scan holds one of each
                     * (and the batch it hands out): within that many times
                     * its peak. */
                    uint64_t peak;
                    assert_int_equal(run_limited(k, o, &want, 0, 1, &peak), 0);
                    uint64_t times = (uint64_t)(pf > 2 ? pf : 2) + 2;
                    if (peak > times * peak_sync)
                        fail_msg("%s projection %d threads %d prefetch %d: peak %llu > %llu x %llu",
                                 spec[k].name, p, t, pf, (unsigned long long)peak,
                                 (unsigned long long)times, (unsigned long long)peak_sync);
                    printf("# %s projection %d threads %d prefetch %d: peak %.2f x the sync scan's\n",
                           spec[k].name, p, t, pf, (double)peak / (double)peak_sync);
                    for (uint64_t lim = peak_sync * 4; lim > peak_sync / 4; lim = lim * 15 / 16)
                        if (run_limited(k, o, &want, lim, (int)(lim & 1), NULL) == 0) min_ok[t - 1][pf] = lim;
                }
            o.threads = QV_SCAN_SYNC;
            o.prefetch = 0;
            uint64_t sync_min = 0;
            for (uint64_t lim = peak_sync * 4; lim > peak_sync / 4; lim = lim * 15 / 16)
                if (run_limited(k, o, &want, lim, (int)(lim & 1), NULL) == 0) sync_min = lim;
            printf("# %s projection %d: sync peak %llu, smallest limit passed: sync %llu", spec[k].name, p,
                   (unsigned long long)peak_sync, (unsigned long long)sync_min);
            for (int t = 1; t <= 4; t *= 2)
                for (int pf = 1; pf <= 3; pf++)
                    printf(", t%d/p%d %llu", t, pf, (unsigned long long)min_ok[t - 1][pf]);
            printf("\n");
            out_free(&want);
        }
    }
    pool_is_clean();
}

/* ---- the bound: completed batches waiting ---- */

/* scan.h: at most `prefetch` completed batches wait, one more for a narrow
 * projection at prefetch 1. The consumer takes `taken` batches (holding
 * them), then stops; once the workers have nothing left to do (the count
 * of assembled batches stays put for a while: waiting too little only
 * weakens the check), the batches assembled and not taken are counted. */
static void test_completed_batches_within_bound(void **state) {
    (void)state;
    const int32_t cols1[] = {17}, cols2[] = {4, 17}; /* s; i64 + s */
    for (int t = 1; t <= 4; t *= 2)
        for (int pf = 1; pf <= 3; pf++)
            for (int n = 1; n <= 2; n++)
                for (int taken = 0; taken <= 3; taken += 3) {
                    if (n == 2 && t == 1) continue; /* not narrow */
                    struct qv_scan_options o = {.columns = n == 1 ? cols1 : cols2, .n_columns = n,
                                                .batch_rows = 333, .threads = t, .prefetch = pf};
                    struct ArrowArrayStream st;
                    assert_int_equal(qv_scan_open(files[F_MANY].rd, &o, res, &st, NULL), 0);
                    struct ArrowArray held[3];
                    for (int i = 0; i < taken; i++) {
                        assert_int_equal(st.get_next(&st, &held[i]), 0);
                        assert_non_null(held[i].release);
                    }
                    struct qv_scan_stats ss;
                    int64_t last = -1;
                    for (int still = 0, i = 0; still < 25 && i < 2000; i++) {
                        nap_us(2000);
                        assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
                        still = ss.batches == last ? still + 1 : 0;
                        last = ss.batches;
                    }
                    int64_t waiting = ss.batches - taken;
                    int bound = pf + (pf == 1); /* narrow: one more at prefetch 1 */
                    if (waiting > bound)
                        fail_msg("threads %d, prefetch %d, %d columns: %lld completed batches wait "
                                 "(bound %d)",
                                 t, pf, n, (long long)waiting, bound);
                    assert_true(ss.max_queued <= pf);
                    for (int i = 0; i < taken; i++) held[i].release(&held[i]);
                    st.release(&st);
                    pool_is_clean();
                }
}

/* ---- a caller's source that fails, returns short, blocks or cancels ---- */

enum { S_PASS, S_FAIL, S_SHORT, S_CANCEL, S_GATE };

struct src {
    const struct file *f;
    int mode;
    long nth;            /* S_FAIL, S_SHORT, S_CANCEL: the read (counted from arm) it hits */
    long calls;          /* atomic */
    int armed;           /* atomic: count reads from now on */
    struct ArrowArrayStream *st; /* atomic: S_CANCEL's stream once open */
    /* S_GATE: reads overlapping one of the ranges wait while closed. */
    qv_mutex mu;
    qv_cond cv;
    uint64_t lo[2], hi[2];
    int open; /* bit i: range i is open */
    int blocked, gave_up;
};

static int src_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    struct src *c = ctx;
    if (off + len > c->f->size) return qv_error_set(err, EIO, "src: read past the end");
    long n = __atomic_load_n(&c->armed, __ATOMIC_ACQUIRE) ? __atomic_add_fetch(&c->calls, 1, __ATOMIC_ACQ_REL) : 0;
    if (c->mode == S_FAIL && n == c->nth) return qv_error_set(err, EIO, "src: read %ld fails (test)", n);
    if (c->mode == S_SHORT && n == c->nth) {
        /* A source that breaks its contract: says it read everything,
         * filled half. */
        memcpy(buf, c->f->bytes + off, len / 2);
        memset((uint8_t *)buf + len / 2, 0xa5, len - len / 2);
        return 0;
    }
    if (c->mode == S_CANCEL && n == c->nth) {
        struct ArrowArrayStream *st = NULL;
        for (int i = 0; i < 10000 && !(st = __atomic_load_n(&c->st, __ATOMIC_ACQUIRE)); i++) nap_us(1000);
        assert_non_null(st);
        assert_int_equal(qv_scan_cancel(st), 0);
    }
    if (c->mode == S_GATE) {
        qv_mutex_lock(&c->mu);
        int hit = 0;
        for (int i = 0; i < 2; i++) hit |= (off < c->hi[i] && off + len > c->lo[i]) << i;
        if (hit) {
            c->blocked++;
            qv_cond_broadcast(&c->cv);
            for (int i = 0; i < 600 && (c->open & hit) != hit; i++) qv_cond_timedwait_ms(&c->cv, &c->mu, 100);
            if ((c->open & hit) != hit) c->gave_up++;
        }
        qv_mutex_unlock(&c->mu);
    }
    memcpy(buf, c->f->bytes + off, len);
    return 0;
}

static void src_open(struct src *c, int k, int mode, long nth, struct qv_reader **r) {
    memset(c, 0, sizeof *c);
    c->f = &files[k];
    c->mode = mode;
    c->nth = nth;
    qv_mutex_init(&c->mu);
    qv_cond_init(&c->cv);
    struct qv_source source = {.ctx = c, .name = "hostile.qvr", .size = files[k].size, .read_at = src_read};
    assert_int_equal(qv_reader_open_source(&source, NULL, res, r, NULL), 0);
}

static void src_close(struct src *c, struct qv_reader *r) {
    qv_reader_close(r);
    assert_int_equal(c->gave_up, 0);
    qv_cond_destroy(&c->cv);
    qv_mutex_destroy(&c->mu);
}

/* One read of the scan's (the n-th) fails, returns short or cancels the
 * scan from the worker inside it, for every n: what arrives before the
 * error is the synchronous output's start, then EIO naming the row group (a
 * short read fails its segment's checksum), or ECANCELED; or, with a read
 * past the scan's last, all of it. Readers of both kinds meet it (batches
 * of 333 rows: both readers load most row groups). */
static void test_source_fails_short_or_cancels_at_every_read(void **state) {
    (void)state;
    const int32_t cols1[] = {17}, cols2[] = {26, 17}; /* s; lp + s */
    for (int mode = S_FAIL; mode <= S_CANCEL; mode++)
        for (int n = 1; n <= 2; n++)
            for (int t = 2; t <= 4; t += 2) {
                struct qv_scan_options o = {.columns = n == 1 ? cols1 : cols2, .n_columns = n,
                                            .batch_rows = 333, .threads = t, .prefetch = 1 + (t == 4)};
                struct out want;
                reference(files[F_MANY].rd, o, &want);
                uint32_t base = reservations(); /* the test's and the reference's */
                int ended_whole = 0;
                for (long nth = 1; nth < 400 && !ended_whole; nth++) {
                    struct src c;
                    struct qv_reader *r;
                    src_open(&c, F_MANY, mode, nth, &r);
                    __atomic_store_n(&c.armed, 1, __ATOMIC_RELEASE);
                    struct ArrowArrayStream st;
                    assert_int_equal(qv_scan_open(r, &o, res, &st, NULL), 0);
                    __atomic_store_n(&c.st, &st, __ATOMIC_RELEASE);
                    char what[128];
                    snprintf(what, sizeof what, "mode %d, %d columns, threads %d, read %ld", mode, n, t, nth);
                    int64_t nb;
                    int rc = drain_cmp(&st, &want, &nb, what);
                    long calls = __atomic_load_n(&c.calls, __ATOMIC_ACQUIRE);
                    if (rc == 0) {
                        if (nb != want.n) fail_msg("%s: %lld batches of %lld", what, (long long)nb, (long long)want.n);
                        /* Only when the read was never made. */
                        if (calls >= nth && mode == S_FAIL)
                            fail_msg("%s: read %ld of %ld went wrong, the scan did not fail", what, nth, calls);
                        ended_whole = calls < nth;
                    } else {
                        int want_rc = mode == S_CANCEL ? ECANCELED : EIO;
                        const char *m = st.get_last_error(&st);
                        if (rc != want_rc) fail_msg("%s: %d (%s)", what, rc, m ? m : "");
                        /* The failed read's column and row group, and the source's
                         * name (src_read's own message does not give it). */
                        if (mode != S_CANCEL && (!m || !strstr(m, "row group") || !strstr(m, "file '")))
                            fail_msg("%s: message '%s'", what, m ? m : "");
                        struct ArrowArray b;
                        assert_int_equal(st.get_next(&st, &b), want_rc); /* it stays */
                        assert_null(b.release);
                    }
                    st.release(&st);
                    src_close(&c, r);
                    assert_int_equal(reservations(), base);
                }
                assert_true(ended_whole);
                out_free(&want);
            }
}

/* Both readers of s wait inside their reads (row groups 0 and 1, one batch
 * each): the consumer's waits time out (it leaves a caller's reads to the
 * workers), then qv_scan_cancel from another thread ends its get_next with
 * ECANCELED while the reads still wait; release joins them once they end. */
struct consumer {
    struct ArrowArrayStream *st;
    int timeouts, rc, done; /* timeouts, done: atomic */
};

static void *consume(void *arg) {
    struct consumer *c = arg;
    for (int i = 0; i < 5; i++)
        if (qv_scan_wait(c->st, 5) == ETIMEDOUT) __atomic_add_fetch(&c->timeouts, 1, __ATOMIC_RELEASE);
    struct ArrowArray b;
    c->rc = c->st->get_next(c->st, &b);
    if (!c->rc && b.release) b.release(&b);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_cancel_while_both_readers_block(void **state) {
    (void)state;
    const struct qv_reader *rd = files[F_MANY].rd;
    int32_t col = 17;
    int64_t rg_rows = qv_reader_row_group_rows(rd, 0);
    for (int t = 2; t <= 4; t += 2)
        for (int pf = 1; pf <= 3; pf++) {
            struct src c;
            struct qv_reader *r;
            src_open(&c, F_MANY, S_GATE, 0, &r);
            for (int g = 0; g < 2; g++) {
                struct qv_segment_info si;
                assert_int_equal(qv_reader_segment_info(rd, g, qv_reader_column_node(rd, col), 0, &si, NULL), 0);
                c.lo[g] = si.offset;
                c.hi[g] = si.offset + si.length;
            }
            struct qv_scan_options o = {.columns = &col, .n_columns = 1, .batch_rows = rg_rows,
                                        .threads = t, .prefetch = pf};
            struct ArrowArrayStream st;
            assert_int_equal(qv_scan_open(r, &o, res, &st, NULL), 0);
            /* Both readers inside a read (at most 60 s). */
            int blocked = 0;
            for (int i = 0; i < 6000 && blocked < 2; i++) {
                qv_mutex_lock(&c.mu);
                blocked = c.blocked;
                qv_mutex_unlock(&c.mu);
                if (blocked < 2) nap_us(10000);
            }
            if (blocked < 2) fail_msg("threads %d, prefetch %d: %d reads waiting, not 2", t, pf, blocked);
            int32_t opened, dropped;
            assert_int_equal(qv__scan_twin_counts(&st, &opened, &dropped), 0);
            assert_int_equal(opened, 1);
            struct consumer cons = {.st = &st};
            qv_thread th;
            assert_int_equal(qv_thread_create(&th, consume, &cons), 0);
            /* Its waits cannot end otherwise: the head batch's read waits. */
            for (int i = 0; i < 6000 && __atomic_load_n(&cons.timeouts, __ATOMIC_ACQUIRE) < 5; i++) {
                nap_us(10000);
                if (__atomic_load_n(&cons.done, __ATOMIC_ACQUIRE)) break;
            }
            assert_int_equal(qv_scan_cancel(&st), 0);
            int done = 0;
            for (int i = 0; i < 6000 && !done; i++) {
                done = __atomic_load_n(&cons.done, __ATOMIC_ACQUIRE);
                if (!done) nap_us(10000);
            }
            qv_mutex_lock(&c.mu);
            int still_closed = !c.open;
            c.open = 3; /* let the reads go, whatever happened */
            qv_cond_broadcast(&c.cv);
            qv_mutex_unlock(&c.mu);
            qv_thread_join(th);
            if (!done) fail_msg("threads %d, prefetch %d: get_next did not return after cancel", t, pf);
            assert_true(still_closed);
            assert_int_equal(cons.timeouts, 5);
            assert_int_equal(cons.rc, ECANCELED);
            st.release(&st);
            src_close(&c, r);
            pool_is_clean();
        }
}

/* The n-th allocation of the pool fails, for every n, in narrow scans of
 * the types with the most decoding state (strings, list of struct, map,
 * decimal) over the dictionary, FSST and zstd files: a twin refused, a
 * task of the batch beyond prefetch put off and run again on its reader,
 * or a failed batch; each run hands out the synchronous output, or its
 * start and then ENOMEM with a message; nothing leaks. */
static void test_alloc_failure_at_every_allocation(void **state) {
    (void)state;
    const int32_t cols[] = {17, 26, 28, 13}; /* s, lp, m, d38 */
    const int fs[] = {F_MANY, F_DICT, F_FSST, F_ZSTD};
    for (int fi = 0; fi < 4; fi++)
        for (int ci = 0; ci < 4; ci++)
            for (int t = 1; t <= 2; t++) {
                int k = fs[fi];
                struct qv_scan_options o = {.columns = &cols[ci], .n_columns = 1, .batch_rows = 700,
                                            .threads = t, .prefetch = 1};
                struct out want;
                reference(files[k].rd, o, &want);
                uint32_t base = reservations();
                int ok = 0, failed = 0;
                for (uint64_t nth = 1; nth < 100000 && !ok; nth++) {
                    char what[128];
                    snprintf(what, sizeof what, "%s column %d threads %d allocation %llu", spec[k].name,
                             cols[ci], t, (unsigned long long)nth);
                    qv_pool_inject_alloc_failure(pool, nth);
                    struct ArrowArrayStream st;
                    struct qv_error err;
                    int rc = qv_scan_open(files[k].rd, &o, res, &st, &err);
                    if (rc) {
                        qv_pool_inject_alloc_failure(pool, 0);
                        if (rc != ENOMEM) fail_msg("%s: open: %s", what, err.message);
                        failed++;
                        assert_int_equal(reservations(), base);
                        continue;
                    }
                    int64_t nb;
                    rc = drain_cmp(&st, &want, &nb, what);
                    qv_pool_inject_alloc_failure(pool, 0);
                    if (rc) {
                        const char *m = st.get_last_error(&st);
                        if (rc != ENOMEM || !m) fail_msg("%s: %d %s", what, rc, m ? m : "");
                        failed++;
                    } else {
                        if (nb != want.n) fail_msg("%s: %lld batches of %lld", what, (long long)nb, (long long)want.n);
                        ok = 1;
                    }
                    st.release(&st);
                    assert_int_equal(reservations(), base);
                }
                assert_true(ok && failed > 0);
                out_free(&want);
            }
    pool_is_clean();
}

/* Lets the reads of gate range i go. */
static void src_open_range(struct src *c, int i) {
    qv_mutex_lock(&c->mu);
    c->open |= 1 << i;
    qv_cond_broadcast(&c->cv);
    qv_mutex_unlock(&c->mu);
}

static int src_blocked(struct src *c) {
    qv_mutex_lock(&c->mu);
    int b = c->blocked;
    qv_mutex_unlock(&c->mu);
    return b;
}

/* A scan of s over the gated source, one batch per row group, threads 2,
 * prefetch 1 (narrow: 2 batches building): batch 0's read of row group 0
 * on the first reader and batch 1's of row group 1 on the twin both wait;
 * returns once they do (at most 60 s). */
static void open_two_blocked(struct src *c, struct qv_reader **r, struct ArrowArrayStream *st) {
    const struct qv_reader *rd = files[F_MANY].rd;
    static const int32_t col = 17;
    src_open(c, F_MANY, S_GATE, 0, r);
    for (int g = 0; g < 2; g++) {
        struct qv_segment_info si;
        assert_int_equal(qv_reader_segment_info(rd, g, qv_reader_column_node(rd, col), 0, &si, NULL), 0);
        c->lo[g] = si.offset;
        c->hi[g] = si.offset + si.length;
    }
    struct qv_scan_options o = {.columns = &col, .n_columns = 1,
                                .batch_rows = qv_reader_row_group_rows(rd, 0), .threads = 2,
                                .prefetch = 1};
    assert_int_equal(qv_scan_open(*r, &o, res, st, NULL), 0);
    for (int i = 0; i < 6000 && src_blocked(c) < 2; i++) nap_us(10000);
    assert_int_equal(src_blocked(c), 2);
}

/* Allocations of the pool since the injector was armed (it counts them
 * atomically while armed). */
static uint64_t injector_seen(void) {
    return atomic_load(&(pool)->alloc_seen);
}

/* The batch a narrow scan builds beyond prefetch (batch 1, on the twin,
 * while batch 0 waits in its read) finds no memory at each of its
 * allocations in turn, the one of its assembly included: scan.c says such
 * a batch is not failed for it (its task waits for its turn, or goes back
 * to the first reader), so every run hands out the whole output. */
static void test_batch_beyond_prefetch_never_fails_for_memory(void **state) {
    (void)state;
    static const int32_t col = 17;
    struct qv_scan_options ro = {.columns = &col, .n_columns = 1,
                                 .batch_rows = qv_reader_row_group_rows(files[F_MANY].rd, 0)};
    struct out want;
    reference(files[F_MANY].rd, ro, &want);
    uint32_t base = reservations();
    /* How many allocations batch 1 makes while batch 0 waits. */
    struct src c;
    struct qv_reader *r;
    struct ArrowArrayStream st;
    open_two_blocked(&c, &r, &st);
    qv_pool_inject_alloc_failure(pool, UINT64_MAX); /* counts, never fails */
    src_open_range(&c, 1);
    struct qv_scan_stats ss = {0};
    for (int i = 0; i < 6000 && ss.batches < 1; i++) {
        nap_us(10000);
        assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
    }
    assert_int_equal(ss.batches, 1); /* batch 1, while batch 0 waits */
    uint64_t n_alloc = injector_seen();
    qv_pool_inject_alloc_failure(pool, 0);
    src_open_range(&c, 0);
    int64_t nb;
    assert_int_equal(drain_cmp(&st, &want, &nb, "no failure"), 0);
    st.release(&st);
    src_close(&c, r);
    assert_true(n_alloc > 0);
    int failed_batches = 0;
    for (uint64_t nth = 1; nth <= n_alloc; nth++) {
        open_two_blocked(&c, &r, &st);
        qv_pool_inject_alloc_failure(pool, nth);
        src_open_range(&c, 1);
        /* Until batch 1's worker has met the failure (at most 60 s). */
        for (int i = 0; i < 6000 && injector_seen() < nth; i++) nap_us(10000);
        assert_true(injector_seen() >= nth);
        qv_pool_inject_alloc_failure(pool, 0);
        src_open_range(&c, 0);
        char what[96];
        snprintf(what, sizeof what, "allocation %llu of %llu of batch 1", (unsigned long long)nth,
                 (unsigned long long)n_alloc);
        int rc = drain_cmp(&st, &want, &nb, what);
        if (rc) {
            print_message("%s: %d after %lld batches: %s\n", what, rc, (long long)nb, st.get_last_error(&st));
            failed_batches++;
        } else {
            assert_int_equal(nb, want.n);
        }
        st.release(&st);
        src_close(&c, r);
        assert_int_equal(reservations(), base);
    }
    out_free(&want);
    assert_int_equal(failed_batches, 0);
}

/* ---- release and cancel at any point, from other threads ---- */

struct taker {
    struct ArrowArrayStream *st;
    int want;           /* batches to take */
    struct out got;     /* what it took (held) */
    int rc;
};

static void *take_some(void *arg) {
    struct taker *t = arg;
    for (int i = 0; i < t->want; i++) {
        struct ArrowArray b;
        int rc = t->st->get_next(t->st, &b);
        if (rc) {
            t->rc = rc;
            return NULL;
        }
        if (!b.release) return NULL;
        out_push(&t->got, &b);
    }
    return NULL;
}

/* A thread takes some batches (holding them), another may cancel meanwhile;
 * then the main thread releases the stream at a random moment (workers
 * still building, twins in any row group); the batches taken stay valid
 * after the release and are the synchronous output's start. Files of 7-row
 * row groups (twins move all the time), dictionary and zstd columns. */
static void test_release_and_cancel_from_other_threads(void **state) {
    (void)state;
    const int fs[] = {F_TINY, F_DICT, F_ZSTD, F_ONE};
    const int32_t cols[] = {17, 26, 28, 25}; /* s, lp, m, lls */
    for (int i = 0; i < 64; i++) {
        int k = fs[i % 4];
        int32_t col = cols[(i / 4) % 4];
        struct qv_scan_options o = {.columns = &col, .n_columns = 1,
                                    .batch_rows = k == F_TINY ? 5 : 333, .threads = 1 << (i % 3),
                                    .prefetch = 1 + (i / 3) % 3};
        struct out want;
        reference(files[k].rd, o, &want);
        uint32_t base = reservations();
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(files[k].rd, &o, res, &st, NULL), 0);
        struct taker tk = {.st = &st, .want = (int)(rnd() % 7)};
        tk.got.schema = want.schema;
        qv_thread th, tc;
        struct canceller cc = {.st = &st, .after_us = (long)(rnd() % 2000)};
        int cancel = i % 3 == 1;
        assert_int_equal(qv_thread_create(&th, take_some, &tk), 0);
        if (cancel) assert_int_equal(qv_thread_create(&tc, cancel_main, &cc), 0);
        qv_thread_join(th);
        if (cancel) {
            qv_thread_join(tc);
            assert_int_equal(cc.rc, 0);
        }
        if (tk.rc) assert_int_equal(tk.rc, ECANCELED);
        assert_true(!tk.rc || cancel);
        if (rnd() % 2) nap_us((long)(rnd() % 3000));
        st.release(&st); /* cancels and joins */
        char what[96];
        snprintf(what, sizeof what, "%s column %d, round %d", spec[k].name, col, i);
        same_batches(&tk.got, &want, tk.got.n, what);
        tk.got.schema = NULL;
        out_free(&tk.got);
        assert_int_equal(reservations(), base);
        out_free(&want);
    }
    pool_is_clean();
}

/* A take through the file layer borrows whole columns' readers from the
 * file's cache (no twin); a nested path keeps its own reader, which may
 * have a twin: both in one narrow take, equal to the synchronous scan. */
static void test_file_take_borrowed_and_own_readers(void **state) {
    (void)state;
    struct qv_file *f;
    struct qv_file_options fo = {.pool = pool};
    assert_int_equal(qv_file_open(files[F_MANY].path, &fo, &f, NULL), 0);
    int64_t n = 0;
    for (int64_t i = 0; i < spec[F_MANY].rows; i += 1 + (int64_t)(rnd() % 3)) take_rows[n++] = i;
    static const char *const names[] = {"pt.x", "lls"}; /* pt.x: own reader; lls: lent */
    struct qv_selection *sel;
    struct qv_error err;
    if (qv_file_select(f, names, 2, &sel, &err)) fail_msg("select: %s", err.message);
    int32_t np;
    const struct qv_column_path *paths = qv_selection_paths(sel, &np);
    assert_int_equal(np, 2);
    for (int t = 2; t <= 4; t += 2)
        for (int pf = 1; pf <= 3; pf++) {
            struct qv_scan_options so = {.paths = paths, .n_paths = np, .take = take_rows, .n_take = n,
                                         .batch_rows = 400, .threads = QV_SCAN_SYNC};
            struct out want;
            scan(files[F_MANY].rd, &so, &want);
            assert_int_equal(want.rc, 0);
            struct qv_file_scan_options fso = {.selection = sel,
                                               .scan = {.batch_rows = 400, .threads = t, .prefetch = pf}};
            struct ArrowArrayStream st;
            if (qv_file_take(f, take_rows, n, &fso, &st, &err)) fail_msg("take: %s", err.message);
            struct out got = {0};
            drain(&st, &got);
            if (got.rc) fail_msg("take: %s", got.msg);
            int32_t opened, dropped;
            assert_int_equal(qv__scan_twin_counts(&st, &opened, &dropped), 0);
            assert_true(opened <= 1); /* pt.x's only */
            st.release(&st);
            char what[64];
            snprintf(what, sizeof what, "file take, threads %d, prefetch %d", t, pf);
            same_batches(&got, &want, -1, what);
            out_free(&got);
            out_free(&want);
        }
    qv_selection_destroy(sel);
    qv_file_close(f);
    pool_is_clean();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_equals_sync),
        cmocka_unit_test(test_nested_paths_equal_sync),
        cmocka_unit_test(test_reader_reused_after_enomem),
        cmocka_unit_test(test_pool_limit_sweep),
        cmocka_unit_test(test_alloc_failure_at_every_allocation),
        cmocka_unit_test(test_completed_batches_within_bound),
        cmocka_unit_test(test_source_fails_short_or_cancels_at_every_read),
        cmocka_unit_test(test_cancel_while_both_readers_block),
        cmocka_unit_test(test_batch_beyond_prefetch_never_fails_for_memory),
        cmocka_unit_test(test_release_and_cancel_from_other_threads),
        cmocka_unit_test(test_file_take_borrowed_and_own_readers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
