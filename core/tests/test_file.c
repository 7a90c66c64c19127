/* The file layer (quiver/file.h): opening, identity and replaced files
 * (ESTALE), scans and takes by name, streams outliving the file and batches
 * outliving the stream, memory limits, cancelling a file-layer stream,
 * splits and writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/quiver.h"
#include "memory/memory_testing.h"
#include "fake_host.h"
#include "scan_fixture.h"
#include "test_util.h"

#define ROWS 20000
#define RG 4096

static struct qv_pool *pool;
static struct qv_reservation *res;
static char path[512];

static int setup(void **state) {
    (void)state;
    alarm(300); /* a hang fails the test */
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "file.qvr");
    assert_int_equal(fx_write(path, ROWS, RG, res), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return 0;
}

static struct qv_file *open_ok(const char *p, const struct qv_file_options *o) {
    struct qv_file *f;
    struct qv_error err = {0};
    if (qv_file_open(p, o, &f, &err)) fail_msg("open %s: %s", p, err.message);
    return f;
}

/* Reads every batch; checks `id` (child id_col) and `v` (child v_col, -1:
 * absent) against the fixture; writes ids to out (cap). Returns rows. */
static int64_t drain(struct ArrowArrayStream *st, int id_col, int v_col, int64_t *out, int64_t cap) {
    int64_t n = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) fail_msg("get_next: %d %s", rc, st->get_last_error(st));
        if (!b.release) break;
        const struct ArrowArray *ida = b.children[id_col];
        for (int64_t i = 0; i < b.length; i++) {
            int64_t row = ((const int64_t *)ida->buffers[1])[ida->offset + i];
            if (n < cap) out[n] = row;
            n++;
            if (v_col >= 0) {
                const struct ArrowArray *v = b.children[v_col];
                int valid = !v->buffers[0] || qv_bit_get(v->buffers[0], v->offset + i);
                assert_int_equal(valid, !fx_v_null(row));
                if (valid) assert_int_equal(((const int32_t *)v->buffers[1])[v->offset + i], fx_v(row));
            }
        }
        b.release(&b);
    }
    return n;
}

static void test_open_identity_schema(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    struct qv_file_identity id, id2;
    qv_file_identity(f, &id);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(id.size, (uint64_t)sb.st_size);
    assert_int_equal(id.footer_checksum, qv_reader_footer_checksum(qv_file_reader(f)));
    assert_true(id.footer_checksum != 0);
    assert_int_equal(qv_reader_num_rows(qv_file_reader(f)), ROWS);
    struct ArrowSchema sc;
    struct qv_error err = {0};
    assert_int_equal(qv_file_export_schema(f, &sc, &err), 0);
    /* Self-contained: valid after the file is closed. */
    struct qv_file *again = qv_file_retain(f);
    qv_file_close(f);
    qv_file_close(again);
    assert_int_equal(sc.n_children, 5);
    assert_string_equal(sc.children[0]->name, "id");
    assert_string_equal(sc.children[4]->name, "tags");
    sc.release(&sc);
    /* The same file, opened again with its identity expected. */
    struct qv_file_options o = {.expect = &id};
    f = open_ok(path, &o);
    qv_file_identity(f, &id2);
    assert_memory_equal(&id, &id2, sizeof id);
    qv_file_close(f);
    qv_file_close(NULL);
    /* Missing files and bad paths keep their errno. */
    char missing[512];
    tu_path(missing, sizeof missing, "file_missing.qvr");
    assert_int_equal(qv_file_open(missing, NULL, &f, &err), ENOENT);
    assert_null(f);
}

/* A planner records splits and the identity; the file is replaced (another
 * file renamed over its path); a task opening it with the identity gets
 * ESTALE naming the file and both identities. */
static void test_replaced_file_is_stale(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    struct qv_file_identity planned;
    qv_file_identity(f, &planned);
    struct qv_file_split *sp;
    int64_t nsp;
    struct qv_error err = {0};
    assert_int_equal(qv_file_plan_splits(f, 1, &sp, &nsp, &err), 0);
    assert_int_equal(nsp, qv_reader_num_row_groups(qv_file_reader(f)));
    qv_file_close(f);
    char other[512];
    tu_path(other, sizeof other, "file_other.qvr");
    assert_int_equal(fx_write(other, ROWS + 7, RG, res), 0);
    assert_int_equal(rename(other, path), 0);
    struct qv_file_options o = {.expect = &planned};
    qv_error_clear(&err);
    assert_int_equal(qv_file_open(path, &o, &f, &err), ESTALE);
    assert_null(f);
    assert_int_equal(err.kind, QV_ERROR_CHANGED);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "changed since it was planned"));
    char want[64];
    snprintf(want, sizeof want, "%llu bytes", (unsigned long long)planned.size);
    assert_non_null(strstr(err.message, want));
    /* Without an expectation the new file opens. */
    f = open_ok(path, NULL);
    assert_int_equal(qv_reader_num_rows(qv_file_reader(f)), ROWS + 7);
    qv_file_close(f);
    free(sp);
    assert_int_equal(fx_write(path, ROWS, RG, res), 0); /* restore for the other tests */
}

/* Copies the file through a file-layer scan into `to` with one metadata
 * pair. */
static void copy_with_metadata(const char *to, const char *value) {
    struct qv_file *f = open_ok(path, NULL);
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    if (qv_file_scan(f, NULL, &st, &err)) fail_msg("%s", err.message);
    struct qv_kv kv = {.key = "k", .value = value, .key_len = -1, .value_len = -1};
    struct qv_file_write_options wo = {.row_group_rows = RG, .metadata = &kv, .n_metadata = 1};
    int64_t rows = 0;
    uint64_t bytes = 0;
    if (qv_file_write_stream(to, &st, &wo, &rows, &bytes, &err)) fail_msg("%s", err.message);
    assert_int_equal(rows, ROWS);
    struct stat sb;
    assert_int_equal(stat(to, &sb), 0);
    assert_int_equal(bytes, (uint64_t)sb.st_size);
    st.release(&st);
    qv_file_close(f);
}

static void test_same_size_other_footer_is_stale(void **state) {
    (void)state;
    char a[512], b[512];
    tu_path(a, sizeof a, "file_meta_a.qvr");
    tu_path(b, sizeof b, "file_meta_b.qvr");
    copy_with_metadata(a, "aaaa");
    copy_with_metadata(b, "bbbb");
    struct qv_file *fa = open_ok(a, NULL);
    struct qv_file_identity ia, ib;
    qv_file_identity(fa, &ia);
    qv_file_close(fa);
    struct qv_file *fb = open_ok(b, NULL);
    qv_file_identity(fb, &ib);
    qv_file_close(fb);
    assert_int_equal(ia.size, ib.size);
    assert_true(ia.footer_checksum != ib.footer_checksum);
    assert_int_equal(rename(b, a), 0);
    struct qv_file_options o = {.expect = &ia};
    struct qv_error err = {0};
    struct qv_file *f;
    assert_int_equal(qv_file_open(a, &o, &f, &err), ESTALE);
    char want[64];
    snprintf(want, sizeof want, "footer checksum %016llx", (unsigned long long)ib.footer_checksum);
    assert_non_null(strstr(err.message, want));
    snprintf(want, sizeof want, "footer checksum %016llx", (unsigned long long)ia.footer_checksum);
    assert_non_null(strstr(err.message, want));
    /* The same through a source (open_source closes it on failure). */
    struct qv_source src;
    assert_int_equal(qv_source_open_file(a, &src, &err), 0);
    assert_int_equal(qv_file_open_source(&src, &o, &f, &err), ESTALE);
    unlink(a);
}

static void test_scan_by_name(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    static const char *const cols[] = {"v", "ID"};
    struct qv_file_scan_options o = {.columns = cols, .n_columns = 2,
                                     .scan = {.filter = "id >= 100 AND id < 5100", .threads = 2}};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    if (qv_file_scan(f, &o, &st, &err)) fail_msg("%s", err.message);
    struct ArrowSchema sc;
    assert_int_equal(st.get_schema(&st, &sc), 0);
    assert_int_equal(sc.n_children, 2);
    assert_string_equal(sc.children[0]->name, "v");
    assert_string_equal(sc.children[1]->name, "id");
    sc.release(&sc);
    static int64_t ids[ROWS];
    assert_int_equal(drain(&st, 1, 0, ids, ROWS), 5000);
    for (int64_t i = 0; i < 5000; i++) assert_int_equal(ids[i], 100 + i);
    st.release(&st);
    /* A selection made once, used twice. */
    struct qv_selection *sel;
    static const char *const one[] = {"id"};
    assert_int_equal(qv_file_select(f, one, 1, &sel, &err), 0);
    struct qv_file_scan_options o2 = {.selection = sel, .scan = {.row_begin = 10, .row_end = 20}};
    for (int k = 0; k < 2; k++) {
        if (qv_file_scan(f, &o2, &st, &err)) fail_msg("%s", err.message);
        assert_int_equal(drain(&st, 0, -1, ids, ROWS), 10);
        assert_int_equal(ids[0], 10);
        st.release(&st);
    }
    qv_selection_destroy(sel);
    /* Misuse. */
    static const char *const unknown[] = {"nope"};
    struct qv_file_scan_options bad = {.columns = unknown, .n_columns = 1};
    assert_int_equal(qv_file_scan(f, &bad, &st, &err), ENOENT);
    assert_null(st.release);
    assert_non_null(strstr(err.message, "no column 'nope'"));
    static const int32_t c0[] = {0};
    struct qv_file_scan_options bad2 = {.scan = {.columns = c0, .n_columns = 1}};
    assert_int_equal(qv_file_scan(f, &bad2, &st, &err), EINVAL);
    qv_file_close(f);
}

static void check_take(struct qv_file *f, const int64_t *rows, int64_t n, int64_t batch_rows) {
    static const char *const cols[] = {"id", "v"};
    struct qv_file_scan_options o = {.columns = cols, .n_columns = 2, .scan = {.batch_rows = batch_rows}};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    if (qv_file_take(f, rows, n, &o, &st, &err)) fail_msg("%s", err.message);
    int64_t *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    assert_int_equal(drain(&st, 0, 1, got, n), n);
    for (int64_t i = 0; i < n; i++)
        if (got[i] != rows[i]) fail_msg("take position %lld: row %lld, asked %lld", (long long)i,
                                        (long long)got[i], (long long)rows[i]);
    free(got);
    st.release(&st);
}

static void test_take_any_order(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    int64_t rows[3000];
    uint64_t seed = 12345;
    for (int i = 0; i < 3000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        rows[i] = (int64_t)((seed >> 33) % ROWS);
    }
    rows[10] = rows[11] = rows[12] = 7; /* duplicates, side by side and apart */
    rows[2999] = 7;
    check_take(f, rows, 3000, 0);
    check_take(f, rows, 3000, 100); /* many output batches */
    static const int64_t inc[] = {0, 1, 5, 4095, 4096, 19999};
    check_take(f, inc, 6, 0);
    static const int64_t rev[] = {19999, 4096, 4095, 5, 1, 0, 0};
    check_take(f, rev, 7, 2);
    check_take(f, rows, 0, 0);
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    static const int64_t bad[] = {3, -1};
    assert_int_equal(qv_file_take(f, bad, 2, NULL, &st, &err), EINVAL);
    assert_non_null(strstr(err.message, "row -1 at position 1"));
    static const int64_t big[] = {ROWS};
    assert_int_equal(qv_file_take(f, big, 1, NULL, &st, &err), EINVAL);
    struct qv_file_scan_options filt = {.scan = {.filter = "id > 3"}};
    assert_int_equal(qv_file_take(f, rev, 7, &filt, &st, &err), EINVAL);
    qv_file_close(f);
}

/* A take of no columns still hands out one row per index asked, in any
 * order and with duplicates (it counts rows): the reordering path used to
 * build its batches with a builder that counted rows by its first column,
 * and with no column handed out nothing. */
static void test_take_no_columns(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    static const int64_t orders[][5] = {{5, 1, 1, 19999, 0}, {1, 5, 7, 8, 9}, {3, 3, 3, 3, 3}};
    static const char *const none[1] = {NULL};
    for (int o = 0; o < 3; o++) {
        for (int64_t batch = 0; batch <= 2; batch += 2) {
            struct qv_file_scan_options opts = {.columns = none, .n_columns = 0,
                                                .scan = {.batch_rows = batch}};
            struct ArrowArrayStream st;
            struct qv_error err = {0};
            if (qv_file_take(f, orders[o], 5, &opts, &st, &err)) fail_msg("take: %s", err.message);
            int64_t rows = 0;
            for (;;) {
                struct ArrowArray b;
                int rc = st.get_next(&st, &b);
                if (rc) fail_msg("get_next: %d %s", rc, st.get_last_error(&st));
                if (!b.release) break;
                assert_int_equal(b.n_children, 0);
                if (batch) assert_true(b.length <= batch);
                rows += b.length;
                b.release(&b);
            }
            assert_int_equal(rows, 5);
            st.release(&st);
        }
    }
    qv_file_close(f);
}

/* Children moved out of a batch (as the C Data Interface allows, at any
 * depth) and released after the batch, the stream and the file: of a scan
 * batch, of a reordered take's batch and of the statistics. They stay
 * readable, and the file's own pool is destroyed only with the last of
 * them (it was destroyed with the batch, under live reservations, and a
 * moved grandchild was freed with its column). */
static void test_moved_children_outlive(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    struct qv_error err = {0};
    struct ArrowArrayStream st;
    struct qv_file_scan_options o = {.scan = {.batch_rows = 1000, .threads = QV_SCAN_SYNC}};
    if (qv_file_scan(f, &o, &st, &err)) fail_msg("scan: %s", err.message);
    struct ArrowArray b;
    assert_int_equal(st.get_next(&st, &b), 0);
    assert_non_null(b.release);
    struct ArrowArray v = *b.children[1], item = *b.children[4]->children[0];
    b.children[1]->release = NULL;
    b.children[4]->children[0]->release = NULL;
    b.release(&b);
    st.release(&st);
    static const int64_t rows[] = {7, 2, 7};
    if (qv_file_take(f, rows, 3, NULL, &st, &err)) fail_msg("take: %s", err.message);
    struct ArrowArray tb;
    assert_int_equal(st.get_next(&st, &tb), 0);
    assert_non_null(tb.release);
    struct ArrowArray tid = *tb.children[0];
    tb.children[0]->release = NULL;
    tb.release(&tb);
    st.release(&st);
    struct ArrowSchema sc;
    struct ArrowArray sa;
    if (qv_file_statistics(f, -1, &sc, &sa, &err)) fail_msg("statistics: %s", err.message);
    struct ArrowArray stats_map = *sa.children[1];
    sa.children[1]->release = NULL;
    sa.release(&sa);
    sc.release(&sc);
    qv_file_close(f);
    /* Everything else is gone; the moved parts are still whole. */
    for (int64_t i = 0; i < v.length; i++) {
        int valid = !v.buffers[0] || qv_bit_get(v.buffers[0], v.offset + i);
        assert_int_equal(valid, !fx_v_null(i));
        if (valid) assert_int_equal(((const int32_t *)v.buffers[1])[v.offset + i], fx_v(i));
    }
    /* tags of rows 0..999: row i holds i, ..., i + i % 3 - 1. */
    assert_int_equal(item.length, 999);
    assert_int_equal(((const int64_t *)item.buffers[1])[item.offset + 0], 1);
    assert_int_equal(tid.length, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(((const int64_t *)tid.buffers[1])[tid.offset + i], rows[i]);
    assert_true(stats_map.length > 0);
    v.release(&v);
    item.release(&item);
    tid.release(&tid);
    stats_map.release(&stats_map);
}

/* The file closed before its stream, the stream released before its
 * batches, on a pool of the file's own: every batch stays readable. */
static void test_lifetimes(void **state) {
    (void)state;
    for (int take = 0; take < 2; take++) {
        struct qv_file_options fo = {.memory_limit = 256u << 20};
        struct qv_file *f = open_ok(path, &fo);
        struct ArrowArrayStream st;
        struct qv_error err = {0};
        static const int64_t rows[] = {500, 3, 9000, 3};
        struct qv_file_scan_options o = {.scan = {.threads = 2, .batch_rows = 3000}};
        int rc = take ? qv_file_take(f, rows, 4, &o, &st, &err) : qv_file_scan(f, &o, &st, &err);
        if (rc) fail_msg("%s", err.message);
        qv_file_close(f);
        struct ArrowSchema sc;
        assert_int_equal(st.get_schema(&st, &sc), 0);
        struct ArrowArray held[16];
        int n = 0;
        for (;;) {
            assert_int_equal(st.get_next(&st, &held[n]), 0);
            if (!held[n].release) break;
            n++;
            assert_true(n < 16);
        }
        st.release(&st);
        int64_t total = 0;
        for (int i = 0; i < n; i++) {
            const struct ArrowArray *id = held[i].children[0];
            for (int64_t k = 0; k < held[i].length; k++) {
                int64_t v = ((const int64_t *)id->buffers[1])[id->offset + k];
                assert_int_equal(v, take ? rows[total + k] : total + k);
            }
            total += held[i].length;
        }
        assert_int_equal(total, take ? 4 : ROWS);
        /* Release in reverse; the last one destroys the pool. */
        for (int i = n - 1; i >= 0; i--) held[i].release(&held[i]);
        assert_string_equal(sc.children[0]->name, "id");
        sc.release(&sc);
    }
}

/* A caller's pool (a front end's: Java's NativePool) is retained by the
 * file: its creator may drop it while a batch of a closed file lives on
 * (Arrow Java holds imported batches as long as it likes); the pool, and
 * the host behind it, go with the batch. */
static void test_caller_pool_outlives_its_creator(void **state) {
    (void)state;
    struct fake_host h;
    fake_host_init(&h, FAKE_FULL, 0);
    struct qv_pool_options po = {.name = "java", .host = &h.host, .block_size = 64 << 10};
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(&po, &p, NULL), 0);
    struct qv_file_options fo = {.pool = p};
    struct qv_file *f = open_ok(path, &fo);
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    struct qv_file_scan_options o = {.scan = {.threads = 2, .batch_rows = 3000}};
    if (qv_file_scan(f, &o, &st, &err)) fail_msg("%s", err.message);
    qv_file_close(f);
    struct ArrowArray b;
    assert_int_equal(st.get_next(&st, &b), 0);
    assert_non_null(b.release);
    st.release(&st);
    qv_pool_destroy(p); /* the creator's reference */
    assert_int_equal(h.finishes, 0);
    assert_true(fake_host_granted(&h) > 0);
    const struct ArrowArray *id = b.children[0];
    for (int64_t k = 0; k < b.length; k++)
        assert_int_equal(((const int64_t *)id->buffers[1])[id->offset + k], k);
    b.release(&b);
    /* The batch was the last user: host memory returned, host finished. */
    assert_int_equal(fake_host_granted(&h), 0);
    assert_int_equal(h.finishes, 1);
    fake_host_destroy(&h);
}

static void test_memory_limit(void **state) {
    (void)state;
    struct qv_file_options fo = {.memory_limit = 48 * 1024};
    struct qv_file *f;
    struct qv_error err = {0};
    int rc = qv_file_open(path, &fo, &f, &err);
    if (rc == 0) {
        struct ArrowArrayStream st;
        rc = qv_file_scan(f, NULL, &st, &err);
        if (rc == 0) {
            struct ArrowArray b;
            for (;;) {
                rc = st.get_next(&st, &b);
                if (rc || !b.release) break;
                b.release(&b);
            }
            if (rc) snprintf(err.message, sizeof err.message, "%s", st.get_last_error(&st));
            st.release(&st);
        }
        qv_file_close(f);
    }
    assert_int_equal(rc, ENOMEM);
    assert_non_null(strstr(err.message, "limit"));
    /* A caller's pool is charged and left alive. */
    struct qv_pool *mine;
    struct qv_pool_options po = {.name = "mine"};
    assert_int_equal(qv_pool_create(&po, &mine, NULL), 0);
    struct qv_file_options fo2 = {.pool = mine};
    f = open_ok(path, &fo2);
    assert_ptr_equal(qv_file_pool(f), mine);
    struct qv_pool_stats ps;
    qv_pool_get_stats(mine, &ps);
    assert_true(ps.reserved > 0);
    qv_file_close(f);
    qv_pool_get_stats(mine, &ps);
    assert_int_equal(ps.reserved, 0);
    qv_pool_destroy(mine);
}

static void test_cancel_and_stats(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    struct qv_file_scan_options o = {.scan = {.threads = 2, .batch_rows = 1000}};
    assert_int_equal(qv_file_scan(f, &o, &st, &err), 0);
    struct ArrowArray b;
    assert_int_equal(qv_scan_wait(&st, 10000), 0);
    assert_int_equal(st.get_next(&st, &b), 0);
    assert_non_null(b.release);
    struct qv_scan_stats ss;
    assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
    assert_int_equal(ss.threads, 2);
    assert_true(ss.rows_output >= 1000);
    assert_int_equal(qv_scan_cancel(&st), 0);
    struct ArrowArray c;
    assert_int_equal(st.get_next(&st, &c), ECANCELED);
    assert_null(c.release);
    assert_string_equal(st.get_last_error(&st), "scan cancelled");
    st.release(&st);
    b.release(&b); /* a batch handed out before the cancel stays valid */
    /* A take in any order is a scan stream too. */
    static const int64_t rows[] = {5, 1};
    assert_int_equal(qv_file_take(f, rows, 2, NULL, &st, &err), 0);
    assert_int_equal(qv_scan_cancel(&st), 0);
    assert_int_equal(st.get_next(&st, &b), ECANCELED);
    st.release(&st);
    qv_file_close(f);
}

static void test_splits(void **state) {
    (void)state;
    struct qv_file *f = open_ok(path, NULL);
    const struct qv_reader *rd = qv_file_reader(f);
    struct qv_file_split *sp;
    int64_t n;
    struct qv_error err = {0};
    uint64_t target = qv_reader_row_group_bytes(rd, 0) * 2;
    assert_int_equal(qv_file_plan_splits(f, target, &sp, &n, &err), 0);
    assert_true(n >= 2);
    int64_t next_rg = 0, next_row = 0, total = 0;
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(sp[i].row_group_begin, next_rg);
        assert_int_equal(sp[i].row_begin, next_row);
        assert_true(sp[i].bytes > 0);
        struct qv_file_scan_options o = {.scan = {.row_group_begin = sp[i].row_group_begin,
                                                  .row_group_end = sp[i].row_group_end}};
        struct ArrowArrayStream st;
        assert_int_equal(qv_file_scan(f, &o, &st, &err), 0);
        static int64_t ids[ROWS];
        int64_t got = drain(&st, 0, 1, ids, ROWS);
        assert_int_equal(got, sp[i].row_end - sp[i].row_begin);
        assert_int_equal(ids[0], sp[i].row_begin);
        st.release(&st);
        total += got;
        next_rg = sp[i].row_group_end;
        next_row = sp[i].row_end;
    }
    assert_int_equal(next_rg, qv_reader_num_row_groups(rd));
    assert_int_equal(total, ROWS);
    free(sp);
    assert_int_equal(qv_file_plan_splits(f, 0, &sp, &n, &err), 0);
    assert_int_equal(n, 1); /* a small file is one 128 MiB split */
    free(sp);
    qv_file_close(f);
}

/* A stream over another stream's batches that counts them: each batch it
 * hands out wraps one of the inner stream's, and its release counts, so a
 * test sees how many the consumer still holds. It can fail at batch
 * `fail_at` (EIO), or hand out that batch with null rows at the top level. */
struct counting {
    struct ArrowArrayStream inner;
    int64_t handed, released, most_held;
    int64_t fail_at, nulls_at;
    uint8_t null_rows[1]; /* all 0: a top-level validity bitmap of 8 null rows */
};

struct counted_box {
    struct ArrowArray inner;
    struct counting *c;
};

static void counted_release(struct ArrowArray *a) {
    struct counted_box *b = a->private_data;
    b->inner.release(&b->inner);
    b->c->released++;
    free(b);
    free(a->buffers); /* the outer's own buffer list */
    a->release = NULL;
}

static int counting_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    struct counting *c = st->private_data;
    return c->inner.get_schema(&c->inner, out);
}

static int counting_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    struct counting *c = st->private_data;
    out->release = NULL;
    if (c->handed - c->released > c->most_held) c->most_held = c->handed - c->released;
    if (c->handed == c->fail_at) return EIO;
    struct counted_box *b = malloc(sizeof *b);
    assert_non_null(b);
    int rc = c->inner.get_next(&c->inner, &b->inner);
    if (rc || !b->inner.release) {
        free(b);
        return rc;
    }
    b->c = c;
    *out = b->inner;
    out->buffers = malloc(sizeof(void *) * (size_t)(b->inner.n_buffers ? b->inner.n_buffers : 1));
    assert_non_null(out->buffers);
    memcpy(out->buffers, b->inner.buffers, sizeof(void *) * (size_t)b->inner.n_buffers);
    if (c->handed == c->nulls_at) {
        out->buffers[0] = c->null_rows;
        out->length = out->length < 8 ? out->length : 8;
        out->null_count = out->length;
    }
    out->private_data = b;
    out->release = counted_release;
    c->handed++;
    return 0;
}

static const char *counting_error(struct ArrowArrayStream *st) {
    (void)st;
    return "the counting stream failed on purpose";
}

static void counting_stream_release(struct ArrowArrayStream *st) { st->release = NULL; }

static void counting_open(struct counting *c, struct ArrowArrayStream *st, struct qv_file *f,
                          int64_t batch_rows) {
    memset(c, 0, sizeof *c);
    c->fail_at = c->nulls_at = -1;
    struct qv_error err = {0};
    struct qv_file_scan_options o = {.scan = {.batch_rows = batch_rows}};
    if (qv_file_scan(f, &o, &c->inner, &err)) fail_msg("%s", err.message);
    *st = (struct ArrowArrayStream){.get_schema = counting_schema,
                                    .get_next = counting_next,
                                    .get_last_error = counting_error,
                                    .release = counting_stream_release,
                                    .private_data = c};
}

/* The batches of a written stream are moved into the writer: it holds them
 * until their row groups are written (so a bounded number at a time), and
 * releases each exactly once, whether the write succeeds, the stream fails
 * or a batch is refused; the file equals the one written before from the
 * same rows. */
static void test_write_stream_holds_batches(void **state) {
    (void)state;
    char out[512];
    tu_path(out, sizeof out, "file_held.qvr");
    struct qv_file *f = open_ok(path, NULL);
    struct qv_error err = {0};
    struct counting c;
    struct ArrowArrayStream st;
    for (int threads = QV_WRITER_INLINE; threads <= 2; threads += 3) {
        counting_open(&c, &st, f, 500);
        struct qv_file_write_options wo = {.row_group_rows = RG, .threads = threads};
        int64_t rows = 0;
        if (qv_file_write_stream(out, &st, &wo, &rows, NULL, &err)) fail_msg("%s", err.message);
        assert_int_equal(rows, ROWS);
        assert_int_equal(c.handed, (ROWS + 499) / 500);
        assert_int_equal(c.released, c.handed);
        /* The open row group's batches, plus those of the (at most 2)
         * sealed ones in flight, plus the one straddling a boundary. */
        assert_true(c.most_held <= 3 * (RG / 500 + 2));
        assert_true(c.most_held >= RG / 500); /* held, not copied and dropped */
        c.inner.release(&c.inner);
        /* Every row, in order, in row groups of RG rows. */
        struct qv_file *g = open_ok(out, NULL);
        assert_int_equal(qv_reader_num_row_groups(qv_file_reader(g)), (ROWS + RG - 1) / RG);
        struct ArrowArrayStream s2;
        assert_int_equal(qv_file_scan(g, NULL, &s2, &err), 0);
        static int64_t ids[ROWS];
        assert_int_equal(drain(&s2, 0, 1, ids, ROWS), ROWS);
        for (int64_t i = 0; i < ROWS; i++) assert_int_equal(ids[i], i);
        s2.release(&s2);
        qv_file_close(g);
        unlink(out);
    }
    /* The stream fails after more than a row group: every batch handed out
     * is released, nothing is left under the name. */
    counting_open(&c, &st, f, 500);
    c.fail_at = RG / 500 + 3;
    struct qv_file_write_options wo = {.row_group_rows = RG};
    qv_error_clear(&err);
    assert_int_equal(qv_file_write_stream(out, &st, &wo, NULL, NULL, &err), EIO);
    assert_non_null(strstr(err.message, "failed on purpose"));
    assert_non_null(strstr(err.message, out));
    assert_int_equal(c.released, c.handed);
    assert_int_equal(access(out, F_OK), -1);
    c.inner.release(&c.inner);
    /* A batch with null rows at the top level is refused and released. */
    counting_open(&c, &st, f, 500);
    c.nulls_at = 2;
    qv_error_clear(&err);
    assert_int_equal(qv_file_write_stream(out, &st, &wo, NULL, NULL, &err), EINVAL);
    assert_non_null(strstr(err.message, "null rows at the top level"));
    assert_int_equal(c.released, c.handed);
    assert_int_equal(access(out, F_OK), -1);
    c.inner.release(&c.inner);
    qv_file_close(f);
}

static int stop_now(void *arg) { return ++*(int *)arg > 2; }

static void test_write_stream(void **state) {
    (void)state;
    char out[512];
    tu_path(out, sizeof out, "file_written.qvr");
    struct qv_file *f = open_ok(path, NULL);
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    struct qv_file_scan_options o = {.scan = {.batch_rows = 1000}};
    assert_int_equal(qv_file_scan(f, &o, &st, &err), 0);
    int calls = 0;
    struct qv_file_write_options wo = {.interrupted = stop_now, .interrupted_arg = &calls};
    assert_int_equal(qv_file_write_stream(out, &st, &wo, NULL, NULL, &err), ECANCELED);
    assert_int_equal(access(out, F_OK), -1); /* nothing left under the name */
    st.release(&st);
    assert_int_equal(qv_file_scan(f, &o, &st, &err), 0);
    struct qv_file_write_options wo2 = {.memory_limit = 64u << 20, .row_group_rows = 3000};
    int64_t rows;
    if (qv_file_write_stream(out, &st, &wo2, &rows, NULL, &err)) fail_msg("%s", err.message);
    assert_int_equal(rows, ROWS);
    assert_non_null(st.release); /* still the caller's */
    st.release(&st);
    struct qv_file *g = open_ok(out, NULL);
    assert_int_equal(qv_reader_num_row_groups(qv_file_reader(g)), (ROWS + 2999) / 3000);
    assert_int_equal(qv_file_scan(g, NULL, &st, &err), 0);
    static int64_t ids[ROWS];
    assert_int_equal(drain(&st, 0, 1, ids, ROWS), ROWS);
    st.release(&st);
    qv_file_close(g);
    qv_file_close(f);
    unlink(out);
}

static void test_open_source_memory(void **state) {
    (void)state;
    size_t size = 0;
    unsigned char *bytes = tu_read_file(path, &size);
    assert_non_null(bytes);
    struct qv_source src;
    assert_int_equal(qv_source_from_memory(bytes, size, "in memory", &src, NULL), 0);
    struct qv_file *f;
    struct qv_error err = {0};
    assert_int_equal(qv_file_open_source(&src, NULL, &f, &err), 0);
    static const int64_t rows[] = {42};
    struct ArrowArrayStream st;
    assert_int_equal(qv_file_take(f, rows, 1, NULL, &st, &err), 0);
    int64_t id;
    assert_int_equal(drain(&st, 0, 1, &id, 1), 1);
    assert_int_equal(id, 42);
    st.release(&st);
    qv_file_close(f);
    free(bytes);
}

/* Every allocation of a scan, a nested scan and a reordering take failing
 * in turn: ENOMEM or success, nothing leaked (ASan), the pool empty. */
/* Statistics through the file layer outlive the file and its own pool:
 * the file (with a pool of its own) is closed first, then both outputs are
 * read and released, in either order; ASan sees no use after free. */
static void test_statistics_outlive_file(void **state) {
    (void)state;
    for (int order = 0; order < 2; order++) {
        struct qv_file_options fo = {.memory_limit = 64u << 20};
        struct qv_file *f = open_ok(path, &fo);
        int64_t nrg = qv_reader_num_row_groups(qv_file_reader(f));
        struct ArrowSchema sc;
        struct ArrowArray arr;
        struct qv_error err = {0};
        assert_int_equal(qv_file_statistics(f, nrg, &sc, &arr, &err), EINVAL);
        assert_null(sc.release);
        assert_null(arr.release);
        if (qv_file_statistics(f, -1, &sc, &arr, &err)) fail_msg("%s", err.message);
        qv_file_close(f);
        assert_string_equal(sc.n_children == 2 ? sc.children[0]->name : "", "column");
        assert_string_equal(sc.children[1]->name, "statistics");
        /* Row 0 describes the whole file (null column), then one row per
         * field of the schema, depth-first. */
        assert_true(arr.length >= 2);
        const struct ArrowArray *col = arr.children[0];
        assert_non_null(col->buffers[0]);
        assert_int_equal(qv_bit_get(col->buffers[0], col->offset), 0);
        assert_int_equal(((const int32_t *)col->buffers[1])[col->offset + 1], 0);
        if (order) {
            sc.release(&sc);
            arr.release(&arr);
        } else {
            arr.release(&arr);
            sc.release(&sc);
        }
    }
}

static int run_once(struct qv_file *f, int kind) {
    static const char *const cols[] = {"tags.item", "v", "id"};
    static const int64_t rows[] = {9, 2, 9, 4100};
    struct qv_file_scan_options o = {.columns = cols, .n_columns = 3,
                                     .scan = {.threads = QV_SCAN_SYNC, .batch_rows = 3000,
                                              .row_end = kind == 0 ? 7000 : 0}};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    int rc = kind == 1 ? qv_file_take(f, rows, 4, &o, &st, &err) : qv_file_scan(f, &o, &st, &err);
    if (rc) return rc;
    struct ArrowSchema sc;
    rc = st.get_schema(&st, &sc);
    if (!rc) sc.release(&sc);
    while (!rc) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc || !b.release) break;
        b.release(&b);
    }
    st.release(&st);
    return rc;
}

static void test_allocation_failures(void **state) {
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        int failed = 0, passed = 0;
        for (uint64_t nth = 1; nth < 400 && passed < 3; nth++) {
            struct qv_pool *p;
            assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
            struct qv_file_options fo = {.pool = p};
            struct qv_file *f = open_ok(path, &fo);
            qv_pool_inject_alloc_failure(p, nth);
            int rc = run_once(f, kind);
            qv_pool_inject_alloc_failure(p, 0);
            if (rc != 0 && rc != ENOMEM) fail_msg("allocation %llu: rc %d", (unsigned long long)nth, rc);
            if (rc) failed++;
            else passed++;
            qv_file_close(f);
            struct qv_pool_stats ps;
            qv_pool_get_stats(p, &ps);
            assert_int_equal(ps.reserved, 0);
            qv_pool_destroy(p);
        }
        assert_true(failed > 10);
        assert_true(passed > 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_identity_schema),
        cmocka_unit_test(test_replaced_file_is_stale),
        cmocka_unit_test(test_same_size_other_footer_is_stale),
        cmocka_unit_test(test_scan_by_name),
        cmocka_unit_test(test_take_any_order),
        cmocka_unit_test(test_take_no_columns),
        cmocka_unit_test(test_lifetimes),
        cmocka_unit_test(test_moved_children_outlive),
        cmocka_unit_test(test_caller_pool_outlives_its_creator),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_cancel_and_stats),
        cmocka_unit_test(test_splits),
        cmocka_unit_test(test_write_stream),
        cmocka_unit_test(test_write_stream_holds_batches),
        cmocka_unit_test(test_open_source_memory),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_statistics_outlive_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
