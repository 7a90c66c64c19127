/* `qv export`: .qvr to CSV. A file destination is written under a
 * temporary name and renamed when complete, like the library's writer, so
 * a failed export never leaves a truncated CSV under the final name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "csv_writer.h"
#include "progress.h"
#include "scan_source.h"

static const char *columns_text, *delim_text;

static const struct cli_option options[] = {
    {"columns", CLI_OPT_VALUE, "A,B", "export only these top-level columns, in this order",
     &columns_text, NULL},
    {"delimiter", CLI_OPT_VALUE, "C", "field delimiter: one character, or 'tab' (default ,)",
     &delim_text, NULL},
};

static const struct cli_command_spec spec = {
    .name = "export",
    .usage = "IN.qvr [OUT.csv|-] [--columns A,B] [--delimiter C]",
    .summary = "Writes a .qvr file as CSV with a header row (to stdout when OUT is - or absent).",
    .details = "Values: decimals with their scale, dates YYYY-MM-DD, timestamps ISO 8601 (Z when\n"
               "the column has a time zone), binary as hex, nested values as JSON-like text,\n"
               "nulls as empty fields and empty strings as \"\".",
    .options = options,
    .n_options = (int)(sizeof options / sizeof options[0]),
    .min_positional = 1,
    .max_positional = 2,
};

int cli_cmd_export(struct cli_ctx *ctx, int argc, char **argv) {
    const char *pos[CLI_MAX_POSITIONAL];
    int np;
    columns_text = delim_text = NULL;
    int rc = cli_args_parse(&spec, ctx, argc, argv, pos, &np);
    if (rc >= 0) return rc;
    char delim = ',';
    if (delim_text) {
        if (strcmp(delim_text, "tab") == 0 || strcmp(delim_text, "\\t") == 0) delim = '\t';
        else if (strlen(delim_text) == 1 && delim_text[0] != '"' && delim_text[0] != '\n' &&
                 delim_text[0] != '\r')
            delim = delim_text[0];
        else
            return cli_usage_error(ctx, "--delimiter: '%s' must be one character other than a "
                                   "quote or line break (or 'tab')", delim_text);
    }
    const char *out_path = np > 1 && strcmp(pos[1], "-") != 0 ? pos[1] : NULL;
    if ((rc = cli_ctx_open(ctx))) return rc;
    struct qv_reservation *r = NULL;
    struct qv_reader *reader = NULL;
    struct cli_scan *scan = NULL;
    int32_t *cols = NULL, ncols = 0;
    FILE *out = stdout;
    char tmp_path[4096] = "";
    struct cli_csv_writer cw;
    cli_csv_writer_init(&cw, NULL, delim);
    struct qv_error err;
    qv_error_clear(&err);
    if ((rc = cli_reservation(ctx, "export", &r))) goto done;
    if (qv_reader_open(pos[0], NULL, r, &reader, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    if (columns_text && cli_resolve_columns(reader, columns_text, &cols, &ncols, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    struct cli_scan_options so = {.columns = cols, .n_columns = ncols, .limit = -1, .validate = 1};
    if (cli_scan_open(reader, &so, r, &scan, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    if (out_path) {
        snprintf(tmp_path, sizeof tmp_path, "%s.tmp.%ld", out_path, (long)getpid());
        out = fopen(tmp_path, "wb");
        if (!out) {
            cli_errorf(ctx, "cannot create '%s': %s", tmp_path, strerror(errno));
            out = stdout;
            tmp_path[0] = 0;
            rc = CLI_EXIT_ERROR;
            goto done;
        }
    }
    cw.f = out;
    const struct qv_field *root = cli_scan_root(scan);
    int wrc = cli_csv_write_header(&cw, root);
    struct cli_progress bar;
    cli_progress_start(&bar, "exporting", (uint64_t)qv_reader_num_rows(reader));
    if (out == stdout) bar.enabled = 0; /* the terminal shows the data itself */
    uint64_t done_rows = 0;
    while (!wrc) {
        struct ArrowArray batch;
        if (cli_scan_next(scan, &batch, &err)) {
            rc = cli_fail(ctx, &err);
            break;
        }
        if (!batch.release) break;
        wrc = cli_csv_write_batch(&cw, root, &batch);
        done_rows += (uint64_t)batch.length;
        batch.release(&batch);
        cli_progress_update(&bar, done_rows);
    }
    cli_progress_finish(&bar);
    if (!rc && !wrc && fflush(out)) wrc = EIO;
    if (!rc && wrc) {
        cli_errorf(ctx, "writing %s: %s", out_path ? out_path : "<stdout>",
                   wrc == ENOMEM ? "out of memory" : strerror(errno));
        rc = CLI_EXIT_ERROR;
    }
done:
    if (out != stdout) {
        if (fclose(out) && !rc) {
            cli_errorf(ctx, "writing %s: %s", out_path, strerror(errno));
            rc = CLI_EXIT_ERROR;
        }
        if (!rc && rename(tmp_path, out_path)) {
            cli_errorf(ctx, "cannot rename '%s' to '%s': %s", tmp_path, out_path, strerror(errno));
            rc = CLI_EXIT_ERROR;
        }
        if (rc) unlink(tmp_path);
    }
    cli_csv_writer_free(&cw);
    cli_scan_close(scan);
    free(cols);
    qv_reader_close(reader);
    qv_reservation_free(r);
    cli_ctx_close(ctx);
    return rc;
}
