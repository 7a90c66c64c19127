/*
 * Shared by bench_format.c and bench_scan.c (header-only, static functions):
 * where the data lives, lineitem tables held in memory as Arrow batches
 * (from the real TPC-H generator's CSV, or from the built-in generator),
 * Arrow byte accounting over any array tree, and an in-memory sink so write
 * timings measure encoding, not the disk.
 *
 * Data: <repo>/data (git-ignored), or $QV_BENCH_DATA. The real TPC-H input
 * is data/tpch/lineitem.csv; when it is missing it is made with
 *   tpchgen-cli csv -s 1 --tables=lineitem --output-dir=data/tpch
 * Both that tool's CSV and pyarrow's are read: a header line, commas,
 * optional double quotes (RFC 4180), decimals as text ("17" or "17.00"),
 * dates as YYYY-MM-DD.
 */
#ifndef QV_BENCH_TPCH_H
#define QV_BENCH_TPCH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "io/csv_reader.h"
#include "io/csv_types.h"
#include "qvgen/lineitem.h"
#include "quiver/arrow.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/memory.h"

#ifndef QV_BENCH_ROOT
#define QV_BENCH_ROOT "."
#endif

#define BT_FN static __attribute__((unused))

static const char *bt_prog = "bench";

BT_FN void bt_die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "%s: %s%s%s\n", bt_prog, what, err ? ": " : "", err ? err->message : "");
    exit(1);
}

BT_FN double bt_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

BT_FN double bt_thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- paths ---- */

BT_FN const char *bt_data_dir(void) {
    static char dir[4096];
    if (!dir[0]) {
        const char *env = getenv("QV_BENCH_DATA");
        if (env && *env) snprintf(dir, sizeof dir, "%s", env);
        else snprintf(dir, sizeof dir, "%s/data", QV_BENCH_ROOT);
    }
    return dir;
}

BT_FN void bt_mkdirs(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(tmp, 0777);
        *p = '/';
    }
    mkdir(tmp, 0777);
}

/* <data>/<sub>/<name>, creating <data>/<sub>. */
BT_FN const char *bt_path(char *buf, size_t cap, const char *sub, const char *name) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%.3000s/%.1000s", bt_data_dir(), sub);
    bt_mkdirs(dir);
    snprintf(buf, cap, "%.3000s/%.1000s", dir, name);
    return buf;
}

BT_FN int bt_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

BT_FN uint64_t bt_file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* A cached file is fresh when it is newer than this executable (which is
 * relinked whenever the library changes). */
BT_FN int bt_cache_fresh(const char *path) {
    struct stat a, b;
    if (stat(path, &a) != 0) return 0;
    if (stat("/proc/self/exe", &b) != 0) return 1;
    return a.st_mtime > b.st_mtime ||
           (a.st_mtime == b.st_mtime && a.st_mtim.tv_nsec >= b.st_mtim.tv_nsec);
}

/* data/tpch/lineitem.csv, generated with tpchgen-cli when missing. NULL when
 * it cannot be had (the caller skips real data then). */
BT_FN const char *bt_tpch_csv(void) {
    static char path[4096];
    bt_path(path, sizeof path, "tpch", "lineitem.csv");
    if (bt_exists(path)) return path;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "tpchgen-cli csv -s 1 --tables=lineitem --output-dir='%s/tpch' >&2",
             bt_data_dir());
    fprintf(stderr, "%s: %s missing; running: %s\n", bt_prog, path, cmd);
    int rc = system(cmd);
    if (rc != 0 || !bt_exists(path)) {
        fprintf(stderr, "%s: tpchgen-cli failed (status %d); skipping real TPC-H data\n", bt_prog, rc);
        return NULL;
    }
    return path;
}

/* ---- Arrow bytes ---- */

typedef void (*bt_buf_fn)(void *ctx, int column, const void *p, size_t n);

BT_FN size_t bt_fixed_width(const struct qv_field *f) {
    switch (f->type) {
    case QV_TYPE_INT8: case QV_TYPE_UINT8: return 1;
    case QV_TYPE_INT16: case QV_TYPE_UINT16: case QV_TYPE_FLOAT16: return 2;
    case QV_TYPE_INT32: case QV_TYPE_UINT32: case QV_TYPE_FLOAT32: case QV_TYPE_DATE32: return 4;
    case QV_TYPE_INT64: case QV_TYPE_UINT64: case QV_TYPE_FLOAT64: case QV_TYPE_TIMESTAMP: return 8;
    case QV_TYPE_DECIMAL128: return 16;
    case QV_TYPE_FIXED_BINARY: return (size_t)f->byte_width;
    default: return 0;
    }
}

/* Calls fn for every buffer range that holds slots [start, start + len) of
 * `a` (relative to a->offset): validity (whole bytes), values, offsets and
 * data, recursing into children. Returns the bytes visited. Validity bitmaps
 * count only when present. */
BT_FN uint64_t bt_walk(const struct qv_field *f, const struct ArrowArray *a, int64_t start,
                        int64_t len, int column, bt_buf_fn fn, void *ctx) {
    uint64_t total = 0;
    int64_t s = a->offset + start;
#define BT_VISIT(p_, n_)                                       \
    do {                                                       \
        size_t n__ = (size_t)(n_);                             \
        if (fn && n__) fn(ctx, column, (p_), n__);             \
        total += n__;                                          \
    } while (0)
    if (f->type != QV_TYPE_NULL && a->n_buffers > 0 && a->buffers[0] && len > 0)
        BT_VISIT((const uint8_t *)a->buffers[0] + s / 8, (s + len + 7) / 8 - s / 8);
    switch (f->type) {
    case QV_TYPE_NULL: break;
    case QV_TYPE_BOOL:
        if (len > 0) BT_VISIT((const uint8_t *)a->buffers[1] + s / 8, (s + len + 7) / 8 - s / 8);
        break;
    case QV_TYPE_UTF8: case QV_TYPE_BINARY: {
        const int32_t *o = a->buffers[1];
        BT_VISIT(o + s, (size_t)(len + 1) * 4);
        BT_VISIT((const uint8_t *)a->buffers[2] + o[s], o[s + len] - o[s]);
        break;
    }
    case QV_TYPE_LARGE_UTF8: case QV_TYPE_LARGE_BINARY: {
        const int64_t *o = a->buffers[1];
        BT_VISIT(o + s, (size_t)(len + 1) * 8);
        BT_VISIT((const uint8_t *)a->buffers[2] + o[s], o[s + len] - o[s]);
        break;
    }
    case QV_TYPE_STRUCT:
        for (int64_t c = 0; c < a->n_children; c++)
            total += bt_walk(&f->children[c], a->children[c], s, len, column, fn, ctx);
        break;
    case QV_TYPE_LIST: case QV_TYPE_MAP: {
        const int32_t *o = a->buffers[1];
        BT_VISIT(o + s, (size_t)(len + 1) * 4);
        total += bt_walk(&f->children[0], a->children[0], o[s], o[s + len] - o[s], column, fn, ctx);
        break;
    }
    case QV_TYPE_LARGE_LIST: {
        const int64_t *o = a->buffers[1];
        BT_VISIT(o + s, (size_t)(len + 1) * 8);
        total += bt_walk(&f->children[0], a->children[0], o[s], o[s + len] - o[s], column, fn, ctx);
        break;
    }
    case QV_TYPE_FIXED_LIST:
        total += bt_walk(&f->children[0], a->children[0], s * f->list_size, len * f->list_size,
                         column, fn, ctx);
        break;
    default:
        BT_VISIT((const uint8_t *)a->buffers[1] + (size_t)s * bt_fixed_width(f),
                 (size_t)len * bt_fixed_width(f));
        break;
    }
#undef BT_VISIT
    return total;
}

/* Bytes of a STRUCT batch's columns (projected fields given in order). */
BT_FN uint64_t bt_batch_bytes(const struct qv_field *const *fields, const struct ArrowArray *b,
                               bt_buf_fn fn, void *ctx) {
    uint64_t total = 0;
    for (int64_t c = 0; c < b->n_children; c++)
        total += bt_walk(fields[c], b->children[c], b->offset, b->length, (int)c, fn, ctx);
    return total;
}

/* A consumer that reads every byte it is given (so a scan's output is
 * really touched, as a real consumer would). */
BT_FN void bt_touch(void *ctx, int column, const void *p, size_t n) {
    uint64_t *acc = ctx, x = 0;
    const uint8_t *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        x ^= w;
    }
    for (; i < n; i++) x ^= b[i];
    *acc ^= x + (uint64_t)column;
}

/* ---- tables in memory ---- */

struct bt_table {
    char name[64];
    struct qv_schema *schema;
    struct ArrowArray *batches;
    int64_t n, cap, rows;
    uint64_t bytes;          /* Arrow bytes of all columns */
    uint64_t col_bytes[64];  /* per top-level column */
    double load_s;
};

BT_FN void bt_table_push(struct bt_table *t, struct ArrowArray *b) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->batches = realloc(t->batches, (size_t)t->cap * sizeof *t->batches);
        if (!t->batches) bt_die("out of memory", NULL);
    }
    t->batches[t->n++] = *b;
    t->rows += b->length;
    const struct qv_field *root = &t->schema->root;
    for (int64_t c = 0; c < b->n_children && c < 64; c++) {
        uint64_t n = bt_walk(&root->children[c], b->children[c], b->offset, b->length, (int)c,
                             NULL, NULL);
        t->col_bytes[c] += n;
        t->bytes += n;
    }
}

BT_FN void bt_table_free(struct bt_table *t) {
    for (int64_t i = 0; i < t->n; i++) qv_arrow_array_release(&t->batches[i]);
    free(t->batches);
    qv_schema_destroy(t->schema);
    memset(t, 0, sizeof *t);
}

#define BT_BATCH_ROWS 131072

/* The built-in generator at `sf`, in batches of BT_BATCH_ROWS. */
BT_FN void bt_table_generate(struct bt_table *t, double sf, struct qv_reservation *r) {
    struct qv_error err;
    double t0 = qv_bench_now_s();
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "gen-sf%g", sf);
    if (qvgen_lineitem_schema(r, &t->schema, &err)) bt_die("lineitem schema", &err);
    struct qv_builder *b;
    struct qv_builder_options bo = {.initial_capacity = BT_BATCH_ROWS};
    if (qv_builder_create(t->schema, r, &bo, &b, &err)) bt_die("builder", &err);
    struct qvgen_lineitem_cursor cur;
    if (qvgen_lineitem_cursor_init(&cur, sf, 0, qvgen_lineitem_num_orders(sf), &err)) bt_die("cursor", &err);
    while (!qvgen_lineitem_cursor_done(&cur)) {
        int64_t got;
        if (qvgen_lineitem_append(&cur, b, BT_BATCH_ROWS, &got, &err)) bt_die("generate", &err);
        struct ArrowArray a;
        if (qv_builder_finish(b, &a, &err)) bt_die("builder finish", &err);
        bt_table_push(t, &a);
    }
    qv_builder_destroy(b);
    t->load_s = qv_bench_now_s() - t0;
}

/* Real TPC-H lineitem from CSV through the CLI's CSV reader and value
 * parser, into the exact lineitem schema. Returns 0, or -1 when the file
 * cannot be had. */
BT_FN int bt_table_load_csv(struct bt_table *t, const char *path, struct qv_reservation *r) {
    struct qv_error err;
    double t0 = qv_bench_now_s();
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "tpch-sf1");
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s: %s\n", bt_prog, path, strerror(errno));
        return -1;
    }
    static char iobuf[1 << 20];
    setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
    if (qvgen_lineitem_schema(r, &t->schema, &err)) bt_die("lineitem schema", &err);
    const struct qv_field *root = &t->schema->root;
    struct cli_csv_reader *cr = malloc(sizeof *cr);
    if (!cr) bt_die("out of memory", NULL);
    cli_csv_reader_init(cr, f, ',');
    if (cli_csv_next(cr) != 1 || cr->n_fields != (int)root->n_children) {
        fprintf(stderr, "%s: %s: expected a header of %lld columns\n", bt_prog, path,
                (long long)root->n_children);
        exit(1);
    }
    for (int i = 0; i < cr->n_fields; i++)
        if (strcmp(cr->fields[i].p, root->children[i].name) != 0) {
            fprintf(stderr, "%s: %s: header column %d is '%s', expected '%s'\n", bt_prog, path,
                    i + 1, cr->fields[i].p, root->children[i].name);
            exit(1);
        }
    struct qv_builder *b;
    struct qv_builder_options bo = {.initial_capacity = BT_BATCH_ROWS};
    if (qv_builder_create(t->schema, r, &bo, &b, &err)) bt_die("builder", &err);
    struct qv_appender *cols[QVGEN_LINEITEM_NUM_COLUMNS];
    for (int i = 0; i < QVGEN_LINEITEM_NUM_COLUMNS; i++) cols[i] = qv_builder_column(b, i);
    int rc;
    char msg[256];
    while ((rc = cli_csv_next(cr)) == 1) {
        if (cr->n_fields != QVGEN_LINEITEM_NUM_COLUMNS) {
            fprintf(stderr, "%s: %s line %lld: %d fields\n", bt_prog, path,
                    (long long)cr->record_line, cr->n_fields);
            exit(1);
        }
        for (int i = 0; i < QVGEN_LINEITEM_NUM_COLUMNS; i++) {
            int arc = cli_append_text(cols[i], &root->children[i], &cr->fields[i], msg, sizeof msg);
            if (arc) {
                fprintf(stderr, "%s: %s line %lld column %s: %s\n", bt_prog, path,
                        (long long)cr->record_line, root->children[i].name,
                        arc < 0 ? msg : qv_builder_error(b)->message);
                exit(1);
            }
        }
        if (qv_builder_num_rows(b) == BT_BATCH_ROWS) {
            struct ArrowArray a;
            if (qv_builder_finish(b, &a, &err)) bt_die("builder finish", &err);
            bt_table_push(t, &a);
        }
    }
    if (rc < 0) {
        fprintf(stderr, "%s: %s: %s\n", bt_prog, path, cr->error);
        exit(1);
    }
    if (qv_builder_num_rows(b)) {
        struct ArrowArray a;
        if (qv_builder_finish(b, &a, &err)) bt_die("builder finish", &err);
        bt_table_push(t, &a);
    }
    qv_builder_destroy(b);
    cli_csv_reader_free(cr);
    free(cr);
    fclose(f);
    t->load_s = qv_bench_now_s() - t0;
    /* SF1 has 6,001,215 rows; name other scales by their size. */
    double sf = (double)t->rows / 6001215.0;
    if (sf < 0.995 || sf > 1.005) snprintf(t->name, sizeof t->name, "tpch-sf%.3g", sf);
    return 0;
}

/* Writes a table to `path` (default writer options unless given). */
BT_FN void bt_table_write(const struct bt_table *t, const char *path,
                           const struct qv_writer_options *wo, struct qv_pool *pool) {
    struct qv_error err;
    struct qv_reservation *wr;
    struct qv_reservation_options ro = {.name = "bench writer"};
    if (qv_reservation_create(pool, &ro, &wr, &err)) bt_die("reservation", &err);
    struct qv_writer *w;
    if (qv_writer_open(path, t->schema, wo, wr, &w, &err)) bt_die("writer open", &err);
    for (int64_t i = 0; i < t->n; i++)
        if (qv_writer_write(w, &t->batches[i], &err)) bt_die("writer write", &err);
    if (qv_writer_finish(w, &err)) bt_die("writer finish", &err);
    qv_writer_close(w);
    qv_reservation_destroy(wr);
}

/* ---- a sink into memory (its buffer is reused across writes) ---- */

struct bt_memsink {
    uint8_t *p;
    size_t len, cap;
};

BT_FN int bt_memsink_write(void *ctx, const void *buf, size_t len, struct qv_error *err) {
    struct bt_memsink *m = ctx;
    if (m->len + len > m->cap) {
        size_t cap = m->cap ? m->cap : 1 << 20;
        while (cap < m->len + len) cap *= 2;
        uint8_t *p = realloc(m->p, cap);
        if (!p) return qv_error_set(err, ENOMEM, "memory sink: cannot grow to %zu bytes", cap);
        m->p = p;
        m->cap = cap;
    }
    memcpy(m->p + m->len, buf, len);
    m->len += len;
    return 0;
}
BT_FN int bt_memsink_finish(void *ctx, struct qv_error *err) { return 0; }
BT_FN void bt_memsink_abort(void *ctx) { ((struct bt_memsink *)ctx)->len = 0; }
BT_FN void bt_memsink_close(void *ctx) {}

/* A sink over `m`, emptied (capacity kept). */
BT_FN struct qv_sink bt_memsink_open(struct bt_memsink *m) {
    m->len = 0;
    struct qv_sink s = {.ctx = m, .name = "memory", .write = bt_memsink_write,
                        .finish = bt_memsink_finish, .abort = bt_memsink_abort,
                        .close = bt_memsink_close};
    return s;
}

#endif
