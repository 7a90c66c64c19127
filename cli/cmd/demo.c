/* `qv demo`: Quiver's main job end to end on built-in data. Generates
 * TPC-H lineitem, writes it, shows what the file holds, scans it fully and
 * projected, and reports speed and memory: the numbers the README promises
 * (smaller than raw Arrow, fast scans, bounded accounted memory). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cmd/gen.h"
#include "cmd/inspect.h"
#include "qvgen/lineitem.h"
#include "term/units.h"
#include "quiver/file.h"
#include "term/value_format.h"

struct demo_args {
    const char *sf, *dir;
    int keep;
};

static const struct cli_option options[] = {
    CLI_VALUE(struct demo_args, sf, "sf", "SF", "scale factor (default 0.1: ~600K rows)"),
    CLI_VALUE(struct demo_args, dir, "dir", "DIR",
              "write lineitem.qvr into DIR and keep it (default: a temporary directory, removed "
              "afterwards)"),
    CLI_FLAG(struct demo_args, keep, "keep", "keep the temporary directory"),
};

static const struct cli_command_spec spec = {
    .name = "demo",
    .usage = "[--sf SF] [--dir DIR] [--keep]",
    .summary = "Generates TPC-H lineitem, writes it as .qvr, inspects it, scans it fully and\n"
               "projected (TPC-H Q6's columns, computing Q6's revenue), filtered through the\n"
               "scan engine (Q6 pushed down, checked against the projected scan), and reports sizes,\n"
               "times, throughput and peak memory.",
    .options = options,
    .n_options = (int)(sizeof options / sizeof options[0]),
    .min_positional = 0,
    .max_positional = 0,
};

/* Peak resident set of this process (VmHWM), in bytes; 0 if unknown. */
static uint64_t peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kb = strtoull(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb * 1024;
}

/* Raw Arrow bytes of the given top-level columns (all when cols is NULL). */
static uint64_t raw_bytes_of(const struct qv_reader *rd, const int32_t *cols, int n) {
    uint64_t total = 0;
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++)
        for (int32_t k = 0; k < qv_reader_num_nodes(rd); k++) {
            int32_t top = k;
            while (qv_reader_node_parent(rd, top) >= 0) top = qv_reader_node_parent(rd, top);
            int in = !cols;
            for (int i = 0; cols && i < n; i++) in |= qv_reader_column_node(rd, cols[i]) == top;
            struct qv_chunk_info ci;
            if (in && qv_reader_chunk_info(rd, rg, k, &ci, NULL) == 0) total += ci.raw_bytes;
        }
    return total;
}

struct scan_result {
    int64_t rows;
    uint64_t ns;
    int64_t q6_revenue; /* unscaled, scale 4 */
};

static int64_t dec_lo(const struct ArrowArray *a, int64_t i) {
    int64_t v;
    memcpy(&v, (const uint8_t *)a->buffers[1] + (a->offset + i) * 16, 8);
    return v;
}

/* Decodes every row group (projected to `cols`) into Arrow batches; with
 * q6 set, the columns are Q6's and its revenue is computed on the way. */
static int scan_file(const struct qv_reader *rd, const int32_t *cols, int n, int q6,
                     struct qv_reservation *r, struct scan_result *res, struct qv_error *err) {
    memset(res, 0, sizeof *res);
    const int32_t lo_date = (int32_t)qv_date32_from_civil(1994, 1, 1);
    const int32_t hi_date = (int32_t)qv_date32_from_civil(1995, 1, 1);
    uint64_t t0 = qv_now_ns();
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++) {
        struct ArrowArray batch;
        int rc = qv_reader_read_row_group(rd, rg, cols, n, r, &batch, err);
        if (rc) return rc;
        res->rows += batch.length;
        if (q6) {
            /* columns: shipdate, discount, quantity, extendedprice */
            const struct ArrowArray *ship = batch.children[0], *disc = batch.children[1];
            const struct ArrowArray *qty = batch.children[2], *price = batch.children[3];
            const int32_t *sd = (const int32_t *)ship->buffers[1] + ship->offset;
            for (int64_t i = 0; i < batch.length; i++) {
                if (sd[i] < lo_date || sd[i] >= hi_date) continue;
                int64_t d = dec_lo(disc, i);
                if (d < 5 || d > 7 || dec_lo(qty, i) >= 2400) continue;
                res->q6_revenue += dec_lo(price, i) * d;
            }
        }
        batch.release(&batch);
    }
    res->ns = qv_now_ns() - t0;
    return 0;
}

/* Scans are timed as the best of a few runs: one pass on a shared machine
 * measures the neighbours as much as the decoder. */
#define SCAN_RUNS 3

static int best_scan(const struct qv_reader *rd, const int32_t *cols, int n, int q6,
                     struct qv_reservation *r, struct scan_result *best, struct qv_error *err) {
    for (int run = 0; run < SCAN_RUNS; run++) {
        struct scan_result one;
        int rc = scan_file(rd, cols, n, q6, r, &one, err);
        if (rc) return rc;
        if (run == 0 || one.ns < best->ns) *best = one;
    }
    return 0;
}

static void rule(const char *title) { printf("\n== %s\n", title); }

static int run(struct cli_ctx *ctx, double sf, const char *dir) {
    char path[4200], a[32], b[32], c[32];
    snprintf(path, sizeof path, "%s/lineitem.qvr", dir);
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_reservation *wr = NULL, *sr = NULL;
    struct qv_file *file = NULL;
    const struct qv_reader *rd = NULL;
    int rc = cli_reservation(ctx, "demo writer", &wr);
    if (rc) return rc;

    printf("Quiver demo: TPC-H lineitem at SF %g -> %s\n", sf, path);
    rule("1. generate and write (rows appended one at a time through the batch builder)");
    struct cli_gen_options go = {.sf = sf, .path = path, .progress = 1};
    struct cli_gen_result gr;
    if (cli_gen_lineitem_file(&go, wr, &gr, &err)) {
        qv_reservation_destroy(wr);
        return cli_fail(ctx, &err);
    }
    uint64_t writer_peak = qv_reservation_peak(wr);
    qv_reservation_destroy(wr);
    if ((rc = cli_reservation(ctx, "demo scan", &sr)) || (rc = cli_open_file(ctx, path, 0, &file)))
        goto done;
    rd = qv_file_reader(file);
    uint64_t raw = raw_bytes_of(rd, NULL, 0);
    printf("   rows            %s (%s orders), %d columns, %lld row groups\n",
           cli_fmt_count(gr.rows, a, sizeof a), cli_fmt_count(gr.orders, b, sizeof b),
           QVGEN_LINEITEM_NUM_COLUMNS, (long long)qv_reader_num_row_groups(rd));
    printf("   file size       %s\n", cli_fmt_bytes(gr.file_bytes, a, sizeof a));
    printf("   raw Arrow size  %s  (file is %.2fx smaller)\n", cli_fmt_bytes(raw, a, sizeof a),
           cli_ratio(raw, gr.file_bytes));
    printf("   write time      %s  (%.1f MB/s of Arrow data, %.0f K rows/s)\n",
           cli_fmt_duration(gr.ns, a, sizeof a), cli_mb_per_s(raw, gr.ns),
           gr.ns ? (double)gr.rows / ((double)gr.ns / 1e9) / 1e3 : 0.0);
    printf("   writer peak     %s charged to its reservation\n",
           cli_fmt_bytes(writer_peak, a, sizeof a));

    rule("2. inspect (summary; 'qv inspect FILE' shows every encoding tree)");
    if (cli_inspect_summary(stdout, rd, "   ", &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }

    rule("3. full scan: every column of every row group decoded to Arrow (best of 3)");
    struct scan_result full;
    if (best_scan(rd, NULL, 0, 0, sr, &full, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    printf("   %s rows in %s: %.0f MB/s of Arrow data, %.1f M rows/s\n",
           cli_fmt_count(full.rows, a, sizeof a), cli_fmt_duration(full.ns, b, sizeof b),
           cli_mb_per_s(raw, full.ns), full.ns ? (double)full.rows / ((double)full.ns / 1e9) / 1e6 : 0.0);
    if (full.rows != gr.rows) {
        cli_errorf(ctx, "full scan returned %lld rows, %lld were written", (long long)full.rows,
                   (long long)gr.rows);
        rc = CLI_EXIT_ERROR;
        goto done;
    }

    rule("4. projected scan: TPC-H Q6's 4 of 16 columns, Q6 computed on the batches (best of 3)");
    const int32_t q6_cols[] = {QVGEN_L_SHIPDATE, QVGEN_L_DISCOUNT, QVGEN_L_QUANTITY, QVGEN_L_EXTENDEDPRICE};
    struct scan_result proj;
    if (best_scan(rd, q6_cols, 4, 1, sr, &proj, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    uint64_t proj_raw = raw_bytes_of(rd, q6_cols, 4);
    struct cli_buf rev;
    cli_buf_init(&rev);
    cli_fmt_decimal64(&rev, proj.q6_revenue, 4);
    printf("   columns         l_shipdate, l_discount, l_quantity, l_extendedprice (%s raw)\n",
           cli_fmt_bytes(proj_raw, a, sizeof a));
    printf("   %s rows in %s: %.0f MB/s of projected Arrow data, %.1f M rows/s\n",
           cli_fmt_count(proj.rows, a, sizeof a), cli_fmt_duration(proj.ns, b, sizeof b),
           cli_mb_per_s(proj_raw, proj.ns),
           proj.ns ? (double)proj.rows / ((double)proj.ns / 1e9) / 1e6 : 0.0);
    printf("   Q6 revenue      %s  (sum of l_extendedprice * l_discount where l_shipdate in 1994,\n"
           "                   l_discount between 0.05 and 0.07, l_quantity < 24)\n",
           cli_buf_str(&rev));
    cli_buf_free(&rev);

    rule("5. filtered scan: Q6 pushed into the scan engine (statistics, filter columns first)");
    {
        static const char q6[] = "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
                                 "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24";
        static const char *const out_cols[] = {"l_extendedprice", "l_discount"};
        struct qv_file_scan_options so = {.columns = out_cols, .n_columns = 2, .scan.filter = q6};
        struct ArrowArrayStream st;
        uint64_t t0 = qv_now_ns();
        if (qv_file_scan(file, &so, &st, &err)) {
            rc = cli_fail(ctx, &err);
            goto done;
        }
        int64_t rows = 0, revenue = 0;
        int src = 0;
        for (;;) {
            struct ArrowArray batch;
            if ((src = st.get_next(&st, &batch)) != 0 || !batch.release) break;
            for (int64_t i = 0; i < batch.length; i++)
                revenue += dec_lo(batch.children[0], i) * dec_lo(batch.children[1], i);
            rows += batch.length;
            batch.release(&batch);
        }
        uint64_t ns = qv_now_ns() - t0;
        struct qv_scan_stats ss;
        qv_scan_get_stats(&st, &ss);
        if (src) {
            qv_error_set(&err, src, "%s", st.get_last_error(&st));
            st.release(&st);
            rc = cli_fail(ctx, &err);
            goto done;
        }
        st.release(&st);
        struct cli_buf rv;
        cli_buf_init(&rv);
        cli_fmt_decimal64(&rv, revenue, 4);
        printf("   filter          %s\n", q6);
        printf("   %s matching rows in %s (%d threads); row groups pruned by statistics: %lld of %lld\n",
               cli_fmt_count(rows, a, sizeof a), cli_fmt_duration(ns, b, sizeof b), ss.threads,
               (long long)ss.row_groups_pruned, (long long)ss.row_groups_total);
        printf("   Q6 revenue      %s  (%s the projected scan's)\n", cli_buf_str(&rv),
               revenue == proj.q6_revenue ? "equal to" : "DIFFERENT FROM");
        cli_buf_free(&rv);
        if (revenue != proj.q6_revenue) {
            cli_errorf(ctx, "the filtered scan disagrees with the projected scan");
            rc = CLI_EXIT_ERROR;
            goto done;
        }
    }

    rule("6. memory");
    struct qv_pool_stats ps;
    qv_pool_get_stats(ctx->pool, &ps);
    printf("   process peak RSS (VmHWM)   %s\n", cli_fmt_bytes(peak_rss(), a, sizeof a));
    printf("   pool peak reserved         %s  (block size %s%s%s)\n",
           cli_fmt_bytes(ps.peak_reserved, a, sizeof a), cli_fmt_bytes(ps.block_size, b, sizeof b),
           ps.limit ? ", limit " : "", ps.limit ? cli_fmt_bytes(ps.limit, c, sizeof c) : "");
    printf("   scan reservation peak      %s\n", cli_fmt_bytes(qv_reservation_peak(sr), a, sizeof a));
done:
    qv_file_close(file);
    qv_reservation_destroy(sr);
    return rc;
}

int cli_cmd_demo(struct cli_ctx *ctx, int argc, char **argv) {
    const char *pos[CLI_MAX_POSITIONAL];
    int np;
    struct demo_args args = {0};
    int rc = cli_args_parse(&spec, ctx, argc, argv, &args, pos, &np);
    if (rc >= 0) return rc;
    double sf = 0.1;
    if (args.sf && (rc = cli_parse_double(ctx, "--sf", args.sf, 1e-6, QVGEN_LINEITEM_MAX_SF, &sf)))
        return rc;
    char dir[4096];
    int temp = !args.dir;
    if (args.dir) {
        snprintf(dir, sizeof dir, "%s", args.dir);
        if (mkdir(dir, 0777) && errno != EEXIST) {
            cli_errorf(ctx, "cannot create directory '%s': %s", dir, strerror(errno));
            return CLI_EXIT_ERROR;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/qv-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            cli_errorf(ctx, "cannot create a temporary directory under %s: %s",
                       tmp && *tmp ? tmp : "/tmp", strerror(errno));
            return CLI_EXIT_ERROR;
        }
    }
    if ((rc = cli_ctx_open(ctx))) return rc;
    rc = run(ctx, sf, dir);
    cli_ctx_close(ctx);
    if (temp && !args.keep) {
        char path[4200];
        snprintf(path, sizeof path, "%s/lineitem.qvr", dir);
        unlink(path);
        rmdir(dir);
    } else if (!rc) {
        printf("\nkept %s/lineitem.qvr\n", dir);
    }
    return rc;
}
