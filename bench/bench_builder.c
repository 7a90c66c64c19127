/*
 * bench/run builder: the batch builder, rows appended one value at a time,
 * against memcpy of the same number of output bytes measured in the same run.
 *
 * Four schemas: 5 int64; 100 numeric (int32/int64/float64); int64 + 4 strings;
 * struct + list + map. Batches of 8192 rows; each finished batch is released
 * right away, as a consumer (writer) would. Reported per schema: wall time,
 * rows/s, output bytes/s and the ratio to memcpy, bytes allocated per row
 * (from the reservation's accounting) next to the Arrow payload per row, and
 * allocation calls per batch after the first next to the number of buffers a
 * batch has (equal means: no reallocation).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "quiver/arrow.h"

#define BATCH 8192
#define RUNS 5

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "bench builder: %s: %s\n", what, err ? err->message : "");
    exit(1);
}

/* ---- schemas ---- */

static const struct qv_field c5[] = {
    {.name = "a", .type = QV_TYPE_INT64}, {.name = "b", .type = QV_TYPE_INT64},
    {.name = "c", .type = QV_TYPE_INT64}, {.name = "d", .type = QV_TYPE_INT64},
    {.name = "e", .type = QV_TYPE_INT64},
};
static struct qv_field c100[100];
static char c100_names[100][8];
static const struct qv_field cstr[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "s1", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "s2", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "s3", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "s4", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field n_struct[] = {{.name = "x", .type = QV_TYPE_INT32},
                                           {.name = "y", .type = QV_TYPE_FLOAT64}};
static const struct qv_field n_item[] = {{.name = "item", .type = QV_TYPE_INT64}};
static const struct qv_field n_kv[] = {{.name = "key", .type = QV_TYPE_UTF8},
                                       {.name = "value", .type = QV_TYPE_INT32}};
static const struct qv_field n_entries[] = {{.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 2, .children = n_kv}};
static const struct qv_field cnest[] = {
    {.name = "st", .type = QV_TYPE_STRUCT, .n_children = 2, .children = n_struct},
    {.name = "l", .type = QV_TYPE_LIST, .n_children = 1, .children = n_item},
    {.name = "m", .type = QV_TYPE_MAP, .n_children = 1, .children = n_entries},
};

enum schema_id { S_INT64X5, S_NUMERIC100, S_STRINGS, S_NESTED, S_COUNT };
static const char *const case_names[S_COUNT] = {"5_int64", "100_numeric", "int64_4_strings",
                                                "struct_list_map"};
static struct qv_field roots[S_COUNT];

static void init_schemas(void) {
    for (int i = 0; i < 100; i++) {
        snprintf(c100_names[i], sizeof c100_names[i], "n%d", i);
        c100[i] = (struct qv_field){.name = c100_names[i],
                                    .type = i % 3 == 0 ? QV_TYPE_INT32 : i % 3 == 1 ? QV_TYPE_INT64
                                                                                 : QV_TYPE_FLOAT64};
    }
    roots[S_INT64X5] = (struct qv_field){.type = QV_TYPE_STRUCT, .n_children = 5, .children = c5};
    roots[S_NUMERIC100] = (struct qv_field){.type = QV_TYPE_STRUCT, .n_children = 100, .children = c100};
    roots[S_STRINGS] = (struct qv_field){.type = QV_TYPE_STRUCT, .n_children = 5, .children = cstr};
    roots[S_NESTED] = (struct qv_field){.type = QV_TYPE_STRUCT, .n_children = 3, .children = cnest};
}

/* A pool of short strings (4..27 bytes) so generating a value is an index. */
#define NSTR 1024
static char str_pool[NSTR][32];
static size_t str_len[NSTR];

static void init_strings(void) {
    uint64_t s = 42;
    for (int i = 0; i < NSTR; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        str_len[i] = 4 + (s >> 59) % 24;
        for (size_t k = 0; k < str_len[i]; k++) str_pool[i][k] = (char)('a' + (s >> (k % 50)) % 26);
    }
}

/* ---- appending rows ---- */

static int append_rows(enum schema_id id, struct qv_builder *b, struct qv_appender **col,
                       int64_t first, int64_t n) {
    int rc = 0;
    switch (id) {
    case S_INT64X5:
        for (int64_t r = first; r < first + n; r++) {
            rc |= qv_append_int64(col[0], r);
            rc |= qv_append_int64(col[1], r * 3);
            rc |= qv_append_int64(col[2], r ^ 0x5555);
            rc |= qv_append_int64(col[3], -r);
            rc |= qv_append_int64(col[4], r << 4);
        }
        break;
    case S_NUMERIC100:
        for (int64_t r = first; r < first + n; r++)
            for (int c = 0; c < 100; c += 3) {
                rc |= qv_append_int32(col[c], (int32_t)(r + c));
                if (c + 1 < 100) rc |= qv_append_int64(col[c + 1], r * c);
                if (c + 2 < 100) rc |= qv_append_float64(col[c + 2], (double)r * 0.5);
            }
        break;
    case S_STRINGS:
        for (int64_t r = first; r < first + n; r++) {
            rc |= qv_append_int64(col[0], r);
            for (int c = 1; c <= 4; c++) {
                int k = (int)((r * 7 + c * 131) & (NSTR - 1));
                rc |= qv_append_string(col[c], str_pool[k], str_len[k]);
            }
        }
        break;
    case S_NESTED: {
        struct qv_appender *x = qv_appender_child(col[0], 0), *y = qv_appender_child(col[0], 1);
        struct qv_appender *item = qv_appender_child(col[1], 0);
        struct qv_appender *keys = qv_appender_map_keys(col[2]), *vals = qv_appender_map_values(col[2]);
        for (int64_t r = first; r < first + n; r++) {
            rc |= qv_append_struct_begin(col[0]);
            rc |= qv_append_int32(x, (int32_t)r);
            rc |= qv_append_float64(y, (double)r);
            rc |= qv_append_struct_end(col[0]);
            rc |= qv_append_list_begin(col[1]);
            for (int k = 0; k < (int)(r & 7); k++) rc |= qv_append_int64(item, r + k); /* avg 3.5 */
            rc |= qv_append_list_end(col[1]);
            rc |= qv_append_map_begin(col[2]);
            for (int k = 0; k < (int)(r & 3); k++) { /* avg 1.5 */
                int s = (int)((r + k) & (NSTR - 1));
                rc |= qv_append_string(keys, str_pool[s], str_len[s]);
                rc |= qv_append_int32(vals, k);
            }
            rc |= qv_append_map_end(col[2]);
        }
        break;
    }
    default: break;
    }
    (void)b;
    return rc;
}

/* Arrow payload of an exported array: the bytes its layout needs for its
 * length (no capacity slack, no padding). */
static uint64_t payload(const struct ArrowArray *a, const struct qv_field *f) {
    uint64_t n = 0, len = (uint64_t)a->length;
    if (a->n_buffers > 0 && a->buffers[0]) n += (len + 7) / 8;
    switch (f->type) {
    case QV_TYPE_INT32: n += len * 4; break;
    case QV_TYPE_INT64:
    case QV_TYPE_FLOAT64: n += len * 8; break;
    case QV_TYPE_UTF8: n += (len + 1) * 4 + (uint64_t)((const int32_t *)a->buffers[1])[len]; break;
    case QV_TYPE_LIST:
    case QV_TYPE_MAP: n += (len + 1) * 4; break;
    default: break;
    }
    for (int64_t c = 0; c < a->n_children; c++) n += payload(a->children[c], &f->children[c]);
    return n;
}

static int64_t count_buffers(const struct ArrowArray *a) {
    int64_t n = 0;
    for (int64_t i = 0; i < a->n_buffers; i++)
        n += a->buffers[i] && a->buffers[i] != qv_arrow_zero_buffer();
    for (int64_t c = 0; c < a->n_children; c++) n += count_buffers(a->children[c]);
    return n;
}

struct result {
    double seconds;
    uint64_t payload_bytes;       /* over all batches */
    uint64_t batch_held_bytes;    /* one steady batch, as charged to the reservation */
    uint64_t batch_payload_bytes; /* the same batch's payload */
    uint64_t allocs_min, allocs_max; /* allocation calls per batch after the first */
    int64_t buffers;              /* buffers of one batch */
};

static void run_builder(enum schema_id id, int64_t rows, struct result *res) {
    struct qv_error err = {0};
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_schema *schema;
    struct qv_builder *b;
    if (qv_pool_create(NULL, &pool, &err)) die("pool", &err);
    if (qv_reservation_create(pool, NULL, &r, &err)) die("reservation", &err);
    if (qv_schema_create(&roots[id], r, &schema, &err)) die("schema", &err);
    if (qv_builder_create(schema, r, NULL, &b, &err)) die("builder", &err);
    int64_t ncol = qv_builder_num_columns(b);
    struct qv_appender *col[100];
    for (int64_t c = 0; c < ncol; c++) col[c] = qv_builder_column(b, c);

    memset(res, 0, sizeof *res);
    res->allocs_min = UINT64_MAX;
    double t0 = qv_bench_now_s();
    int64_t batch_no = 0;
    for (int64_t first = 0; first < rows; first += BATCH, batch_no++) {
        int64_t n = rows - first < BATCH ? rows - first : BATCH;
        uint64_t allocs0 = qv_reservation_alloc_count(r), used0 = qv_reservation_used(r);
        if (append_rows(id, b, col, first, n)) die("append", qv_builder_error(b));
        struct ArrowArray batch;
        if (qv_builder_finish(b, &batch, &err)) die("finish", &err);
        uint64_t p = payload(&batch, &schema->root);
        res->payload_bytes += p;
        if (batch_no > 0 && n == BATCH) {
            uint64_t a = qv_reservation_alloc_count(r) - allocs0;
            if (a < res->allocs_min) res->allocs_min = a;
            if (a > res->allocs_max) res->allocs_max = a;
            res->batch_held_bytes = qv_reservation_used(r) - used0;
            res->batch_payload_bytes = p;
            res->buffers = count_buffers(&batch);
        }
        qv_arrow_array_release(&batch);
    }
    res->seconds = qv_bench_now_s() - t0;
    qv_builder_destroy(b);
    qv_schema_destroy(schema);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
}

/* The physical references: memcpy of the same output bytes.
 * - "memcpy_batch": batch by batch between two warm buffers of one batch's
 *   size, the builder's own situation (a batch is written, consumed and
 *   released, so its memory is reused while still in cache);
 * - "memcpy_stream": the same total through 64 MiB buffers, twice the L3 of
 *   most servers, i.e. memory bandwidth. */
static double run_memcpy(uint64_t total, uint64_t per_batch) {
    uint8_t *src = aligned_alloc(64, qv_align_up(per_batch));
    uint8_t *dst = aligned_alloc(64, qv_align_up(per_batch));
    if (!src || !dst) die("aligned_alloc", NULL);
    memset(src, 1, per_batch);
    memset(dst, 0, per_batch);
    double t0 = qv_bench_now_s();
    for (uint64_t done = 0; done < total; done += per_batch) {
        uint64_t n = total - done < per_batch ? total - done : per_batch;
        memcpy(dst, src, n);
        qv_bench_sink(dst);
    }
    double s = qv_bench_now_s() - t0;
    free(src);
    free(dst);
    return s;
}

/* A third reference for the fixed-width schemas: the same values stored row
 * by row with plain indexed stores into per-batch malloc'd column arrays, no
 * checks, no builder: the floor for any row-at-a-time producer, whose cost is
 * the transposition (one write stream per column) more than the copying.
 * OPAQUE makes each row's value come from "outside", as a producer's rows
 * do, so the compiler cannot turn the loop into column-wise SIMD. */
#define OPAQUE(x) __asm__ volatile("" : "+r"(x))
static double run_rowwise(enum schema_id id, int64_t rows) {
    int ncol = id == S_INT64X5 ? 5 : 100;
    void *cols[100];
    double t0 = qv_bench_now_s();
    for (int64_t first = 0; first < rows; first += BATCH) {
        int64_t n = rows - first < BATCH ? rows - first : BATCH;
        for (int c = 0; c < ncol; c++) cols[c] = aligned_alloc(64, BATCH * 8);
        if (id == S_INT64X5) {
            int64_t **v = (int64_t **)cols;
            for (int64_t i = 0, r = first; i < n; i++, r++) {
                OPAQUE(r);
                v[0][i] = r;
                v[1][i] = r * 3;
                v[2][i] = r ^ 0x5555;
                v[3][i] = -r;
                v[4][i] = r << 4;
            }
        } else {
            for (int64_t i = 0, r = first; i < n; i++, r++) {
                OPAQUE(r);
                for (int c = 0; c < 100; c += 3) {
                    ((int32_t *)cols[c])[i] = (int32_t)(r + c);
                    if (c + 1 < 100) ((int64_t *)cols[c + 1])[i] = r * c;
                    if (c + 2 < 100) ((double *)cols[c + 2])[i] = (double)r * 0.5;
                }
            }
        }
        for (int c = 0; c < ncol; c++) {
            qv_bench_sink(cols[c]);
            free(cols[c]);
        }
    }
    return qv_bench_now_s() - t0;
}

#define STREAM_BUF (UINT64_C(64) << 20)
static uint8_t *stream_src, *stream_dst;

static double run_memcpy_stream(uint64_t total) {
    if (!stream_src) {
        stream_src = aligned_alloc(64, STREAM_BUF);
        stream_dst = aligned_alloc(64, STREAM_BUF);
        if (!stream_src || !stream_dst) die("aligned_alloc", NULL);
        memset(stream_src, 1, STREAM_BUF); /* fault the pages in outside the timing */
        memset(stream_dst, 0, STREAM_BUF);
    }
    double t0 = qv_bench_now_s();
    for (uint64_t done = 0; done < total; done += STREAM_BUF) {
        uint64_t n = total - done < STREAM_BUF ? total - done : STREAM_BUF;
        memcpy(stream_dst, stream_src, n);
        qv_bench_sink(stream_dst);
    }
    return qv_bench_now_s() - t0;
}

int main(int argc, char **argv) {
    struct qv_bench *bench = qv_bench_open("builder", argc, argv);
    int64_t rows = qv_bench_quick(bench) ? 200000 : 2000000;
    init_schemas();
    init_strings();
    printf("Quiver builder benchmark: %lld rows, batches of %d, rows appended one value at a time,\n"
           "median of %d runs; baselines = memcpy of the same output bytes, same run.\n\n",
           (long long)rows, BATCH, RUNS);
    printf("%-16s %8s %7s %9s | %9s %6s | %9s %6s | %12s | %9s %9s %13s\n", "schema", "Mrows/s",
           "ns/row", "out MB/s", "mc_batch", "ratio", "mc_stream", "ratio", "rowwise ns %",
           "alloc B/r", "payload B/r", "allocs/batch");
    for (int id = 0; id < S_COUNT; id++) {
        /* Extra arguments select cases by name (all when none). */
        bool selected = qv_bench_argc(bench) == 0;
        for (int i = 0; i < qv_bench_argc(bench); i++)
            selected |= strcmp(qv_bench_argv(bench)[i], case_names[id]) == 0;
        if (!selected) continue;
        double secs[RUNS], rps[RUNS], bps[RUNS], mc[RUNS], mbps[RUNS], ms[RUNS], msbps[RUNS];
        double rw[RUNS], rwrps[RUNS];
        bool fixed = id == S_INT64X5 || id == S_NUMERIC100;
        struct result res = {0};
        for (int k = 0; k < RUNS; k++) {
            run_builder((enum schema_id)id, rows, &res);
            secs[k] = res.seconds;
            rps[k] = (double)rows / res.seconds;
            bps[k] = (double)res.payload_bytes / res.seconds;
            mc[k] = run_memcpy(res.payload_bytes, res.batch_payload_bytes);
            mbps[k] = (double)res.payload_bytes / mc[k];
            ms[k] = run_memcpy_stream(res.payload_bytes);
            msbps[k] = (double)res.payload_bytes / ms[k];
            if (fixed) {
                rw[k] = run_rowwise((enum schema_id)id, rows);
                rwrps[k] = (double)rows / rw[k];
            }
        }
        double rowwise = 0;
        if (fixed) {
            qv_bench_record_samples(bench, case_names[id], "rowwise_stores", "wall_time", rw, RUNS, "s");
            rowwise = qv_bench_record_samples(bench, case_names[id], "rowwise_stores", "rows_per_s",
                                              rwrps, RUNS, "rows/s");
        }
        const char *cn = case_names[id];
        qv_bench_record_samples(bench, cn, "builder", "wall_time", secs, RUNS, "s");
        double rate = qv_bench_record_samples(bench, cn, "builder", "rows_per_s", rps, RUNS, "rows/s");
        double out = qv_bench_record_samples(bench, cn, "builder", "output_bytes_per_s", bps, RUNS, "B/s");
        qv_bench_record_samples(bench, cn, "memcpy_batch", "wall_time", mc, RUNS, "s");
        double ref = qv_bench_record_samples(bench, cn, "memcpy_batch", "output_bytes_per_s", mbps,
                                             RUNS, "B/s");
        qv_bench_record_samples(bench, cn, "memcpy_stream", "wall_time", ms, RUNS, "s");
        double sref = qv_bench_record_samples(bench, cn, "memcpy_stream", "output_bytes_per_s",
                                              msbps, RUNS, "B/s");
        double alloc_pr = (double)res.batch_held_bytes / BATCH;
        double pay_pr = (double)res.batch_payload_bytes / BATCH;
        qv_bench_record(bench, cn, "builder", "ratio_to_memcpy_batch", "value", out / ref, "x");
        qv_bench_record(bench, cn, "builder", "ratio_to_memcpy_stream", "value", out / sref, "x");
        qv_bench_record(bench, cn, "builder", "alloc_bytes_per_row", "value", alloc_pr, "B");
        qv_bench_record(bench, cn, "builder", "payload_bytes_per_row", "value", pay_pr, "B");
        qv_bench_record(bench, cn, "builder", "allocs_per_batch_after_first", "min",
                        (double)res.allocs_min, "calls");
        qv_bench_record(bench, cn, "builder", "allocs_per_batch_after_first", "max",
                        (double)res.allocs_max, "calls");
        qv_bench_record(bench, cn, "builder", "buffers_per_batch", "value", (double)res.buffers,
                        "buffers");
        char rwtxt[32] = "      -";
        if (fixed) {
            qv_bench_record(bench, cn, "builder", "ratio_to_rowwise_stores", "value", rate / rowwise, "x");
            snprintf(rwtxt, sizeof rwtxt, "%6.2f %4.0f%%", 1e9 / rowwise, 100 * rate / rowwise);
        }
        printf("%-16s %8.2f %7.2f %9.0f | %9.0f %5.0f%% | %9.0f %5.0f%% | %12s | %9.1f %9.1f %6llu (%lld+1)\n",
               cn, rate / 1e6, 1e9 / rate, out / 1e6, ref / 1e6, 100 * out / ref, sref / 1e6,
               100 * out / sref, rwtxt, alloc_pr, pay_pr, (unsigned long long)res.allocs_max,
               (long long)res.buffers);
        fflush(stdout);
    }
    printf("\nout MB/s: Arrow payload written per second (values, offsets, string bytes).\n"
           "mc_batch: memcpy of the same bytes batch by batch between warm batch-sized buffers;\n"
           "mc_stream: the same bytes through 64 MiB buffers (memory bandwidth).\n"
           "rowwise: the same values stored row by row with plain unchecked stores into\n"
           "per-batch arrays (fixed-width schemas): ns/row, and the builder's speed as %%.\n"
           "alloc B/r: bytes a steady batch holds in the reservation per row (buffers at\n"
           "capacity + one control block); payload B/r: what the Arrow layout needs.\n"
           "allocs/batch: allocation calls per batch after the first, max over batches\n"
           "(buffers + 1 control block = no reallocation).\n");
    free(stream_src);
    free(stream_dst);
    return qv_bench_close(bench) ? 1 : 0;
}
