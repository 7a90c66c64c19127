/* `qv export`: .qvr to CSV. A file destination is written through the
 * library's file sink (a temporary name renamed when complete, symlinks
 * followed to their target, anything but a regular file refused), so a
 * failed export never leaves a truncated CSV under the final name. A FIFO
 * or a character device (a terminal, /dev/stdout) is written to directly:
 * streaming into it is what is meant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "io/csv_writer.h"
#include "term/progress.h"
#include "io/scan_source.h"

struct export_args {
    const char *columns, *delimiter;
    int mmap;
};

static const struct cli_option options[] = {
    CLI_VALUE(struct export_args, columns, "columns", "A,B",
              "export only these top-level columns, in this order"),
    CLI_VALUE(struct export_args, delimiter, "delimiter", "C",
              "field delimiter: one character, or 'tab' (default ,)"),
    CLI_FLAG(struct export_args, mmap, "mmap",
             "map the file instead of reading it into verified buffers (see the caveat in "
             "cli/README.md)"),
};

static const struct cli_command_spec spec = {
    .name = "export",
    .usage = "IN.qvr [OUT.csv|-] [--columns A,B] [--delimiter C] [--mmap]",
    .summary = "Writes a .qvr file as CSV with a header row (to stdout when OUT is - or absent).",
    .details = "Values: decimals with their scale, dates YYYY-MM-DD, timestamps ISO 8601 (Z when\n"
               "the column has a time zone), binary as hex, nested values as JSON-like text,\n"
               "nulls as empty fields and empty strings as \"\".",
    .options = options,
    .n_options = (int)(sizeof options / sizeof options[0]),
    .min_positional = 1,
    .max_positional = 2,
};

/* A stdio stream over a qv_sink, so the CSV writer's FILE goes through
 * the library's atomic, destination-checked file sink. */
struct sink_stream {
    struct qv_sink sink;
    struct qv_error err;
    int rc;
};

static ssize_t sink_stream_write(void *cookie, const char *buf, size_t len) {
    struct sink_stream *s = cookie;
    if (s->rc) return -1;
    s->rc = qv_sink_write(&s->sink, buf, len, &s->err);
    if (s->rc) {
        errno = s->rc;
        return -1;
    }
    return (ssize_t)len;
}

int cli_cmd_export(struct cli_ctx *ctx, int argc, char **argv) {
    const char *pos[CLI_MAX_POSITIONAL];
    int np;
    struct export_args args = {0};
    int rc = cli_args_parse(&spec, ctx, argc, argv, &args, pos, &np);
    if (rc >= 0) return rc;
    char delim = ',';
    if (args.delimiter) {
        if (strcmp(args.delimiter, "tab") == 0 || strcmp(args.delimiter, "\\t") == 0) delim = '\t';
        else if (strlen(args.delimiter) == 1 && args.delimiter[0] != '"' && args.delimiter[0] != '\n' &&
                 args.delimiter[0] != '\r')
            delim = args.delimiter[0];
        else
            return cli_usage_error(ctx, "--delimiter: '%s' must be one character other than a "
                                   "quote or line break (or 'tab')", args.delimiter);
    }
    const char *out_path = np > 1 && strcmp(pos[1], "-") != 0 ? pos[1] : NULL;
    if ((rc = cli_refuse_same_file(ctx, pos[0], out_path))) return rc;
    if ((rc = cli_ctx_open(ctx))) return rc;
    cli_trap_interrupts();
    struct qv_reservation *r = NULL;
    struct qv_file *file = NULL;
    struct cli_scan *scan = NULL;
    FILE *out = stdout;
    struct sink_stream ss = {.rc = 0};
    int have_sink = 0;
    struct cli_csv_writer cw;
    cli_csv_writer_init(&cw, NULL, delim);
    struct qv_error err;
    qv_error_clear(&err);
    if ((rc = cli_reservation(ctx, "export", &r))) goto done;
    if ((rc = cli_open_file(ctx, pos[0], args.mmap, &file))) goto done;
    struct cli_scan_options so = {.columns = args.columns, .limit = -1, .validate = 1};
    if (cli_scan_open(file, &so, r, &scan, &err)) {
        rc = cli_fail(ctx, &err);
        goto done;
    }
    if (out_path) {
        struct stat st;
        if (stat(out_path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
            out = fopen(out_path, "wb");
            if (!out) {
                cli_errorf(ctx, "cannot open '%s': %s", out_path, strerror(errno));
                out = stdout;
                rc = CLI_EXIT_ERROR;
                goto done;
            }
        } else {
            if (qv_sink_open_file(out_path, &ss.sink, &err)) {
                rc = cli_fail(ctx, &err);
                goto done;
            }
            have_sink = 1;
            cookie_io_functions_t io = {.write = sink_stream_write};
            out = fopencookie(&ss, "wb", io);
            if (!out) {
                cli_errorf(ctx, "writing %s: out of memory", out_path);
                out = stdout;
                rc = CLI_EXIT_ERROR;
                goto done;
            }
        }
    }
    cw.f = out;
    const struct qv_field *root = cli_scan_root(scan);
    int wrc = cli_csv_write_header(&cw, root);
    struct cli_progress bar;
    cli_progress_start(&bar, "exporting", (uint64_t)qv_reader_num_rows(qv_file_reader(file)));
    if (out == stdout) bar.enabled = 0; /* the terminal shows the data itself */
    uint64_t done_rows = 0;
    while (!wrc) {
        if (cli_interrupted()) {
            cli_errorf(ctx, "interrupted; %s", out_path && have_sink
                                                   ? "the CSV file was not written"
                                                   : "the output is incomplete");
            rc = CLI_EXIT_ERROR;
            break;
        }
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
        if (ss.rc) rc = cli_fail(ctx, &ss.err);
        else {
            cli_errorf(ctx, "writing %s: %s", out_path ? out_path : "<stdout>",
                       wrc == ENOMEM ? "out of memory" : strerror(errno));
            rc = CLI_EXIT_ERROR;
        }
    }
done:
    if (out != stdout) {
        if (fclose(out) && !rc) {
            if (ss.rc) rc = cli_fail(ctx, &ss.err);
            else {
                cli_errorf(ctx, "writing %s: %s", out_path, strerror(errno));
                rc = CLI_EXIT_ERROR;
            }
        }
    }
    if (have_sink) {
        /* Publishes the CSV; closing an unfinished sink removes it. */
        if (!rc && qv_sink_finish(&ss.sink, &err)) rc = cli_fail(ctx, &err);
        qv_sink_close(&ss.sink);
    }
    cli_csv_writer_free(&cw);
    cli_scan_close(scan);
    qv_file_close(file);
    qv_reservation_destroy(r);
    cli_ctx_close(ctx);
    return rc;
}
