/* `qv scan`: rows of a .qvr file, projected, filtered or taken, as an
 * aligned table or CSV. Reading goes through scan_source.h (the engine). */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "io/csv_writer.h"
#include "io/scan_source.h"
#include "term/table.h"

/* Rows per page in table mode: the first page fixes the column widths. */
#define TABLE_PAGE_ROWS 1000

/* The options as given (text; parsed in cli_cmd_scan). */
struct scan_args {
    const char *columns, *limit, *format, *max_width, *filter, *take, *threads, *prefetch;
    int mmap;
};

static const struct cli_option options[] = {
    CLI_VALUE(struct scan_args, columns, "columns", "A,B",
              "only these top-level columns, in this order"),
    CLI_VALUE(struct scan_args, limit, "limit", "N",
              "at most N rows (decodes only the vectors they need)"),
    CLI_VALUE(struct scan_args, format, "format", "table|csv", "output format (default table)"),
    CLI_VALUE(struct scan_args, max_width, "max-width", "N",
              "table: widest column in characters (default 40)"),
    CLI_VALUE(struct scan_args, filter, "filter", "EXPR",
              "only rows where EXPR is true, e.g. \"l_quantity < 24 AND l_shipmode IN ('AIR', "
              "'RAIL')\""),
    CLI_VALUE(struct scan_args, take, "take", "R1,R2,...",
              "only these rows, printed in this order (0-based; repeats print again)"),
    CLI_VALUE(struct scan_args, threads, "threads", "N",
              "decode workers (default: cores, at most 4; 0 = none)"),
    CLI_VALUE(struct scan_args, prefetch, "prefetch", "N",
              "completed batches decoded ahead (default 1)"),
    CLI_FLAG(struct scan_args, mmap, "mmap",
             "map the file instead of reading it into verified buffers (see the caveat in "
             "cli/README.md)"),
};

/* Parses --take into the rows as given: the scan source prints them in
 * this order, repeats included (the engine reads them sorted, once). */
static int parse_take(struct cli_ctx *ctx, const char *text, int64_t **out, int64_t *n_out) {
    size_t len = strlen(text), cap = 1;
    for (size_t i = 0; i < len; i++) cap += text[i] == ',';
    int64_t *rows = malloc(cap * sizeof *rows);
    char *copy = strdup(text);
    if (!rows || !copy) {
        free(rows);
        free(copy);
        cli_errorf(ctx, "out of memory");
        return CLI_EXIT_ERROR;
    }
    int64_t n = 0;
    int rc = 0;
    for (char *p = copy, *next; p && !rc; p = next) {
        next = strchr(p, ',');
        if (next) *next++ = 0;
        rc = cli_parse_int64(ctx, "--take", p, 0, INT64_MAX, &rows[n++]);
    }
    free(copy);
    if (rc) {
        free(rows);
        return rc;
    }
    *out = rows;
    *n_out = n;
    return 0;
}

static const struct cli_command_spec spec = {
    .name = "scan",
    .usage = "FILE.qvr [--columns A,B] [--filter EXPR] [--take ROWS] [--limit N]\n"
             "       [--threads N] [--prefetch N] [--format table|csv] [--mmap]",
    .summary = "Prints rows of a .qvr file: an aligned table (wide values truncated with ~) or\n"
               "CSV with a header.",
    .options = options,
    .n_options = (int)(sizeof options / sizeof options[0]),
    .min_positional = 1,
    .max_positional = 1,
};

int cli_cmd_scan(struct cli_ctx *ctx, int argc, char **argv) {
    const char *pos[CLI_MAX_POSITIONAL];
    int np;
    struct scan_args args = {0};
    int rc = cli_args_parse(&spec, ctx, argc, argv, &args, pos, &np);
    if (rc >= 0) return rc;
    int64_t limit = -1, max_width = 40;
    if (args.limit && (rc = cli_parse_int64(ctx, "--limit", args.limit, 0, INT64_MAX, &limit)))
        return rc;
    if (args.max_width && (rc = cli_parse_int64(ctx, "--max-width", args.max_width, 4, 100000, &max_width)))
        return rc;
    int64_t threads = 0, prefetch = 0;
    if (args.threads && (rc = cli_parse_int64(ctx, "--threads", args.threads, 0, 64, &threads)))
        return rc;
    if (args.prefetch && (rc = cli_parse_int64(ctx, "--prefetch", args.prefetch, 1, 64, &prefetch)))
        return rc;
    int64_t *take = NULL, n_take = 0;
    if (args.take && (rc = parse_take(ctx, args.take, &take, &n_take))) return rc;
    int csv = 0;
    if (args.format) {
        if (strcmp(args.format, "csv") == 0) csv = 1;
        else if (strcmp(args.format, "table") != 0) {
            free(take);
            return cli_usage_error(ctx, "--format: '%s' is not one of table, csv", args.format);
        }
    }
    if ((rc = cli_ctx_open(ctx))) {
        free(take);
        return rc;
    }
    struct qv_reservation *r = NULL;
    struct qv_file *file = NULL;
    struct cli_scan *scan = NULL;
    struct qv_error err;
    qv_error_clear(&err);
    if ((rc = cli_reservation(ctx, "scan", &r))) goto done;
    if ((rc = cli_open_file(ctx, pos[0], args.mmap, &file))) goto done;
    struct cli_scan_options so = {
        .columns = args.columns,
        .limit = limit,
        .batch_rows = csv ? 65536 : TABLE_PAGE_ROWS,
        .validate = 1,
        .filter = args.filter,
        .take = take,
        .n_take = n_take,
        .threads = args.threads ? (threads == 0 ? QV_SCAN_SYNC : (int)threads) : 0,
        .prefetch = (int)prefetch,
    };
    if (cli_scan_open(file, &so, r, &scan, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    const struct qv_field *root = cli_scan_root(scan);
    struct cli_table table;
    struct cli_csv_writer cw;
    cli_table_init(&table, stdout, root, (int)max_width);
    cli_csv_writer_init(&cw, stdout, ',');
    int wrc = csv ? cli_csv_write_header(&cw, root) : 0;
    while (!wrc) {
        struct ArrowArray batch;
        if (cli_scan_next(scan, &batch, &err)) {
            rc = cli_fail(ctx, &err);
            break;
        }
        if (!batch.release) break;
        wrc = csv ? cli_csv_write_batch(&cw, root, &batch) : cli_table_write(&table, &batch);
        batch.release(&batch);
    }
    if (!rc && !wrc && !csv) wrc = cli_table_finish(&table);
    if (!rc && !wrc && fflush(stdout)) wrc = EIO;
    if (!rc && wrc) {
        cli_errorf(ctx, "writing the output: %s", wrc == ENOMEM ? "out of memory" : strerror(errno));
        rc = CLI_EXIT_ERROR;
    }
    cli_table_free(&table);
    cli_csv_writer_free(&cw);
done:
    cli_scan_close(scan);
    free(take);
    qv_file_close(file);
    qv_reservation_destroy(r);
    cli_ctx_close(ctx);
    return rc;
}
