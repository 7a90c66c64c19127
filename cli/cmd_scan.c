/* `qv scan`: rows of a .qvr file as an aligned table or CSV.
 *
 * Reading goes through scan_source.h. The scan engine's options (--filter,
 * --take, --threads, --prefetch) belong in the option table below and in
 * struct cli_scan_options; nothing else here needs to change for them. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "csv_writer.h"
#include "scan_source.h"
#include "table.h"

/* Rows per page in table mode: the first page fixes the column widths. */
#define TABLE_PAGE_ROWS 1000

static const char *columns_text, *limit_text, *format_text, *width_text;

static const struct cli_option options[] = {
    {"columns", CLI_OPT_VALUE, "A,B", "only these top-level columns, in this order",
     &columns_text, NULL},
    {"limit", CLI_OPT_VALUE, "N", "at most N rows (decodes only the vectors they need)",
     &limit_text, NULL},
    {"format", CLI_OPT_VALUE, "table|csv", "output format (default table)", &format_text, NULL},
    {"max-width", CLI_OPT_VALUE, "N", "table: widest column in characters (default 40)",
     &width_text, NULL},
    /* scan engine: --filter EXPR, --take ROWS, --threads N, --prefetch N */
};

static const struct cli_command_spec spec = {
    .name = "scan",
    .usage = "FILE.qvr [--columns A,B] [--limit N] [--format table|csv]",
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
    columns_text = limit_text = format_text = width_text = NULL;
    int rc = cli_args_parse(&spec, ctx, argc, argv, pos, &np);
    if (rc >= 0) return rc;
    int64_t limit = -1, max_width = 40;
    if (limit_text && (rc = cli_parse_int64(ctx, "--limit", limit_text, 0, INT64_MAX, &limit)))
        return rc;
    if (width_text && (rc = cli_parse_int64(ctx, "--max-width", width_text, 4, 100000, &max_width)))
        return rc;
    int csv = 0;
    if (format_text) {
        if (strcmp(format_text, "csv") == 0) csv = 1;
        else if (strcmp(format_text, "table") != 0)
            return cli_usage_error(ctx, "--format: '%s' is not one of table, csv", format_text);
    }
    if ((rc = cli_ctx_open(ctx))) return rc;
    struct qv_reservation *r = NULL;
    struct qv_reader *reader = NULL;
    struct cli_scan *scan = NULL;
    int32_t *cols = NULL, ncols = 0;
    struct qv_error err;
    qv_error_clear(&err);
    if ((rc = cli_reservation(ctx, "scan", &r))) goto done;
    if (qv_reader_open(pos[0], NULL, r, &reader, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    if (columns_text && cli_resolve_columns(reader, columns_text, &cols, &ncols, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    struct cli_scan_options so = {
        .columns = cols,
        .n_columns = ncols,
        .limit = limit,
        .batch_rows = csv ? 65536 : TABLE_PAGE_ROWS,
        .validate = 1,
    };
    if (cli_scan_open(reader, &so, r, &scan, &err)) {
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
    free(cols);
    qv_reader_close(reader);
    qv_reservation_free(r);
    cli_ctx_close(ctx);
    return rc;
}
