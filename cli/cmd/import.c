/* `qv import`: CSV to .qvr. Types come from --schema or are inferred from a
 * sample of the first rows; the sample is kept in memory and written first,
 * so input can be a pipe (read once, never rewound). The rows become an
 * Arrow stream of batches that the file layer writes (qv_file_write_stream:
 * interruption, publish on success, nothing left behind on failure). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "quiver/file.h"
#include "io/csv_reader.h"
#include "io/csv_types.h"
#include "term/progress.h"
#include "term/units.h"

#define DEFAULT_SAMPLE_ROWS 10000

/* Rows per batch handed to the writer: small next to a row group (the
 * writer holds each batch until its row group is written, then releases
 * it), large enough that the per-batch cost disappears. */
#define BATCH_ROWS 4096

/* A record kept from the sample: its fields copied into one block. */
struct sample_rec {
    int64_t line;
    int n;
    struct cli_csv_field *fields;
};

/* One import: its settings (from the options) and its state. */
struct import {
    struct cli_ctx *ctx;
    const char *in_path, *out_path;
    const char *schema_spec; /* --schema, or NULL */
    char delimiter;
    int64_t row_group_rows, sample_rows;
    int compact, random_access;
    struct cli_csv_reader csv;
    int ncols;
    char **names;
    struct cli_type *types;
    int *given;
    struct sample_rec *sample;
    int64_t n_sample, sample_cap;
};

/* The options as given (text; parsed in cli_cmd_import). */
struct import_args {
    const char *schema, *delimiter, *row_group_rows, *sample_rows;
    int compact, random_access;
};

static const struct cli_option options[] = {
    CLI_VALUE(struct import_args, schema, "schema", "SPEC",
              "column types as 'name:type,...' (others are inferred), e.g. "
              "'id:int32,price:decimal(10,2)'"),
    CLI_VALUE(struct import_args, delimiter, "delimiter", "C",
              "field delimiter: one character, or 'tab' (default ,)"),
    CLI_VALUE(struct import_args, row_group_rows, "row-group-rows", "N",
              "rows per row group (default 131072)"),
    CLI_VALUE(struct import_args, sample_rows, "sample-rows", "N",
              "rows read to infer types (default 10000; the whole file is still checked)"),
    CLI_FLAG(struct import_args, compact, "compact",
             "smallest files: size first, slower writes of text"),
    CLI_FLAG(struct import_args, random_access, "random-access",
             "files for point lookups: no frames, cheaper takes, larger files"),
};

static const struct cli_command_spec spec = {
    .name = "import",
    .usage = "IN.csv|- OUT.qvr [--schema SPEC] [--delimiter C] [--row-group-rows N] [--sample-rows N]\n"
             "       [--compact | --random-access]",
    .summary = "Converts CSV (RFC 4180, with a header row) to a .qvr file.",
    .details =
        "Types not given with --schema are inferred from the first rows: bool (true/false),\n"
        "int64 (beyond it: uint64, decimal(38,0), else utf8; never a rounding float64),\n"
        "float64, date32 (YYYY-MM-DD), timestamp (ISO 8601; UTC when values carry a\n"
        "zone), else utf8. An empty field is null; a quoted empty field (\"\") is an empty\n"
        "string. Binary columns are hex. Every column is nullable; an empty header name\n"
        "becomes column_N.\n"
        "types: bool, int8..int64, uint8..uint64, float32, float64, decimal(P,S), date32,\n"
        "       timestamp[UNIT, TZ], utf8, large_utf8, binary, large_binary, fixed_size_binary[N]",
    .options = options,
    .n_options = (int)(sizeof options / sizeof options[0]),
    .min_positional = 2,
    .max_positional = 2,
};

static void import_free(struct import *im) {
    for (int i = 0; i < im->ncols && im->names; i++) free(im->names[i]);
    free(im->names);
    free(im->types);
    free(im->given);
    for (int64_t i = 0; i < im->n_sample; i++) free(im->sample[i].fields);
    free(im->sample);
    cli_csv_reader_free(&im->csv);
}

/* A problem of the input, reported like the library's errors (with its
 * kind); returns the runtime exit code. */
static int input_fail(struct import *im, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int input_fail(struct import *im, int code, const char *fmt, ...) {
    struct qv_error err;
    char msg[QV_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qv_error_set(&err, code, "%s", msg);
    return cli_fail(im->ctx, &err);
}

static int csv_error(struct import *im) {
    return input_fail(im, EINVAL, "%s: %s", im->in_path, im->csv.error);
}

/* Whether the record is a blank line to skip: with several columns, an
 * empty line cannot be a row; with one it is a null. */
static int blank(const struct import *im, const struct cli_csv_reader *c) {
    return im->ncols > 1 && c->n_fields == 1 && c->fields[0].n == 0 && !c->fields[0].quoted;
}


static int read_header(struct import *im) {
    int got = cli_csv_next(&im->csv);
    if (got < 0) return csv_error(im);
    if (got == 0) return input_fail(im, EINVAL, "%s: empty input: expected a header row", im->in_path);
    if (im->csv.n_fields == 1 && im->csv.fields[0].n == 0 && !im->csv.fields[0].quoted)
        return input_fail(im, EINVAL, "%s: line 1: the header row is empty", im->in_path);
    im->ncols = im->csv.n_fields;
    im->names = calloc((size_t)im->ncols, sizeof *im->names);
    im->types = calloc((size_t)im->ncols, sizeof *im->types);
    im->given = calloc((size_t)im->ncols, sizeof *im->given);
    if (!im->names || !im->types || !im->given) goto oom;
    for (int i = 0; i < im->ncols; i++) {
        const struct cli_csv_field *f = &im->csv.fields[i];
        if (!cli_utf8_valid(f->p, f->n) || memchr(f->p, 0, f->n))
            return input_fail(im, EINVAL,
                              "%s: line 1, column %d: the header name is not valid UTF-8 text",
                              im->in_path, i + 1);
        /* A column needs a name to be selected by (--columns, --schema). */
        im->names[i] = malloc(f->n ? f->n + 1 : 24);
        if (!im->names[i]) goto oom;
        if (f->n) memcpy(im->names[i], f->p, f->n + 1);
        else snprintf(im->names[i], 24, "column_%d", i + 1);
    }
    return 0;
oom:
    return input_fail(im, ENOMEM, "%s: out of memory reading the header", im->in_path);
}

/* Applies --schema: each entry names a header column (in `header`, a
 * struct whose fields are the CSV's columns) and gives its type. */
static int apply_schema_to(struct import *im, const struct qv_field *header, const char *text) {
    const char *p = text;
    while (*p) {
        /* Entries end at a comma outside parentheses and brackets, since
         * decimal(10,2) and timestamp[us, UTC] hold commas of their own. */
        const char *e = p;
        int depth = 0;
        while (*e && (depth > 0 || *e != ',')) {
            if (*e == '(' || *e == '[') depth++;
            if ((*e == ')' || *e == ']') && depth > 0) depth--;
            e++;
        }
        const char *colon = memchr(p, ':', (size_t)(e - p));
        if (!colon)
            return cli_usage_error(im->ctx, "--schema: '%.*s' is not 'name:type'", (int)(e - p), p);
        size_t nlen = (size_t)(colon - p);
        /* The library's name rule (the filter's, --columns'): an exact
         * match, else one ignoring case; a name several columns match
         * selects none of them. */
        char name[CLI_TYPE_ARG_MAX];
        snprintf(name, sizeof name, "%.*s", (int)nlen, p);
        int64_t hits[2];
        bool folded;
        int64_t col = qv_field_find_child(header, name, false, hits, &folded);
        if (col == -2)
            return input_fail(im, EINVAL,
                              "--schema: ambiguous column name '%s': columns %lld and %lld of the "
                              "CSV header of %s both have that name%s",
                              name, (long long)hits[0] + 1, (long long)hits[1] + 1, im->in_path,
                              folded ? " (ignoring case)" : "");
        if (col < 0)
            return input_fail(im, ENOENT, "--schema: the CSV header of %s has no column '%s'",
                              im->in_path, name);
        if (im->given[col])
            return cli_usage_error(im->ctx, "--schema: column '%.*s' is given twice", (int)nlen, p);
        char msg[512];
        if (cli_type_parse(colon + 1, (size_t)(e - colon - 1), &im->types[col], msg, sizeof msg))
            return cli_usage_error(im->ctx, "--schema: column '%.*s': %s", (int)nlen, p, msg);
        if (im->types[col].field.timezone) im->types[col].field.timezone = im->types[col].timezone;
        im->given[col] = 1;
        p = *e ? e + 1 : e;
    }
    return 0;
}

static int apply_schema(struct import *im, const char *text) {
    struct qv_field *kids = calloc((size_t)im->ncols + 1, sizeof *kids);
    if (!kids) return input_fail(im, ENOMEM, "--schema: out of memory");
    for (int i = 0; i < im->ncols; i++) kids[i].name = im->names[i];
    const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = im->ncols, .children = kids};
    int rc = apply_schema_to(im, &root, text);
    free(kids);
    return rc;
}

static int keep_sample(struct import *im) {
    struct cli_csv_reader *c = &im->csv;
    size_t bytes = 0;
    for (int i = 0; i < c->n_fields; i++) bytes += c->fields[i].n + 1;
    struct cli_csv_field *copy = malloc((size_t)c->n_fields * sizeof *copy + bytes);
    if (!copy) return -1;
    char *d = (char *)(copy + c->n_fields);
    for (int i = 0; i < c->n_fields; i++) {
        memcpy(d, c->fields[i].p, c->fields[i].n + 1);
        copy[i] = (struct cli_csv_field){d, c->fields[i].n, c->fields[i].quoted};
        d += c->fields[i].n + 1;
    }
    if (im->n_sample == im->sample_cap) {
        int64_t grown = im->sample_cap ? im->sample_cap * 2 : 256;
        struct sample_rec *s = realloc(im->sample, (size_t)grown * sizeof *s);
        if (!s) {
            free(copy);
            return -1;
        }
        im->sample = s;
        im->sample_cap = grown;
    }
    im->sample[im->n_sample++] = (struct sample_rec){c->record_line, c->n_fields, copy};
    return 0;
}

/* Appends one record's fields as a row; an error names the line, the
 * column and the value. */
static int append_row(struct import *im, struct qv_builder *b, int64_t line,
                      const struct cli_csv_field *fields, int n, struct qv_error *err) {
    if (n != im->ncols)
        return qv_error_set(err, EINVAL, "%s: line %lld: %d field%s, but the header has %d column%s",
                            im->in_path, (long long)line, n, n == 1 ? "" : "s", im->ncols,
                            im->ncols == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        char msg[512];
        struct qv_appender *a = qv_builder_column(b, i);
        int rc = cli_append_text(a, qv_appender_field(a), &fields[i], msg, sizeof msg);
        if (rc) {
            const struct qv_error *be = qv_builder_error(b);
            return qv_error_set(err, rc < 0 ? EINVAL : rc, "%s: line %lld, column %d ('%s'): %s",
                                im->in_path, (long long)line, i + 1, im->names[i],
                                rc < 0 ? msg : be->code ? be->message : qv_errno_name(rc));
        }
    }
    return 0;
}

/* The rows as an Arrow stream: the sample first, then the rest of the
 * input, in batches of BATCH_ROWS. Its errors are kept here too, so that
 * they are reported as the input's, not wrapped in the writer's words. */
struct rows {
    struct import *im;
    const struct qv_schema *schema;
    struct qv_reservation *r;
    struct qv_builder *b;
    int64_t next_sample, read;
    struct cli_progress *bar;
    struct qv_error err;
};

static int rows_schema(void *ctx, struct ArrowSchema *out, struct qv_error *err) {
    struct rows *p = ctx;
    return qv_schema_export(p->schema, p->r, out, err);
}

static int rows_next(void *ctx, struct ArrowArray *out, struct qv_error *err) {
    struct rows *p = ctx;
    struct import *im = p->im;
    int rc = 0, got = 1;
    while (!rc && qv_builder_num_rows(p->b) < BATCH_ROWS) {
        if (p->next_sample < im->n_sample) {
            const struct sample_rec *s = &im->sample[p->next_sample++];
            rc = append_row(im, p->b, s->line, s->fields, s->n, &p->err);
            continue;
        }
        if ((got = cli_csv_next(&im->csv)) <= 0) break;
        if (blank(im, &im->csv)) continue;
        rc = append_row(im, p->b, im->csv.record_line, im->csv.fields, im->csv.n_fields, &p->err);
        if ((++p->read & 4095) == 0) cli_progress_update(p->bar, (uint64_t)p->read);
    }
    if (!rc && got < 0)
        rc = qv_error_set(&p->err, EINVAL, "%s: %s", im->in_path, im->csv.error);
    if (!rc && qv_builder_num_rows(p->b) > 0) rc = qv_builder_finish(p->b, out, &p->err);
    if (rc && err) *err = p->err;
    return rc;
}

static void rows_release(void *ctx) { (void)ctx; }

static int interrupted(void *arg) {
    (void)arg;
    return cli_interrupted();
}

static int parse_delimiter(struct cli_ctx *ctx, const char *t, char *out) {
    if (!t) {
        *out = ',';
        return 0;
    }
    if (strcmp(t, "tab") == 0 || strcmp(t, "\\t") == 0) {
        *out = '\t';
        return 0;
    }
    if (strlen(t) != 1 || t[0] == '"' || t[0] == '\n' || t[0] == '\r')
        return cli_usage_error(ctx, "--delimiter: '%s' must be one character other than a quote "
                               "or line break (or 'tab')", t);
    *out = t[0];
    return 0;
}

static int run(struct import *im, struct qv_reservation *r, FILE *in) {
    int rc;
    const char *out_path = im->out_path;
    cli_csv_reader_init(&im->csv, in, im->delimiter);
    if ((rc = read_header(im))) return rc;
    if (im->schema_spec && (rc = apply_schema(im, im->schema_spec))) return rc;
    /* The sample: records kept in memory for inference, written first. */
    struct cli_infer *inf = calloc((size_t)im->ncols, sizeof *inf);
    if (!inf) {
        return input_fail(im, ENOMEM, "%s: out of memory", im->in_path);
    }
    for (int i = 0; i < im->ncols; i++) cli_infer_init(&inf[i]);
    int got = 0, need_sample = 0;
    for (int i = 0; i < im->ncols; i++) need_sample |= !im->given[i];
    while (need_sample && im->n_sample < im->sample_rows && (got = cli_csv_next(&im->csv)) > 0) {
        if (blank(im, &im->csv)) continue;
        if (im->csv.n_fields != im->ncols) {
            free(inf);
            struct qv_error err;
            append_row(im, NULL, im->csv.record_line, im->csv.fields, im->csv.n_fields, &err);
            return cli_fail(im->ctx, &err);
        }
        for (int i = 0; i < im->ncols; i++) cli_infer_add(&inf[i], &im->csv.fields[i]);
        if (keep_sample(im)) {
            free(inf);
            return input_fail(im, ENOMEM, "%s: out of memory keeping the type-inference sample",
                              im->in_path);
        }
    }
    for (int i = 0; i < im->ncols; i++)
        if (!im->given[i]) cli_infer_result(&inf[i], &im->types[i]);
    free(inf);
    if (got < 0) return csv_error(im);

    struct qv_field *cols = calloc((size_t)im->ncols + 1, sizeof *cols);
    if (!cols) {
        return input_fail(im, ENOMEM, "%s: out of memory", im->in_path);
    }
    for (int i = 0; i < im->ncols; i++) {
        cols[i] = im->types[i].field;
        cols[i].name = im->names[i];
        cols[i].nullable = true;
    }
    struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = im->ncols,
                            .children = cols};
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_schema *schema = NULL;
    rc = qv_schema_create(&root, r, &schema, &err);
    free(cols);
    struct cli_progress bar;
    struct rows p = {.im = im, .schema = schema, .r = r, .bar = &bar};
    qv_error_clear(&p.err);
    struct ArrowArrayStream st = {0};
    if (!rc) rc = qv_builder_create(schema, r, NULL, &p.b, &err);
    const struct qv_arrow_stream_ops ops = {rows_schema, rows_next, rows_release};
    if (!rc) rc = qv_arrow_stream_create(&st, &ops, &p, r, &err);
    if (rc) {
        qv_builder_destroy(p.b);
        qv_schema_destroy(schema);
        return cli_fail(im->ctx, &err);
    }
    const struct qv_kv meta[] = {{"quiver.generator", "qv import", -1, -1}};
    /* Under --memory-limit, cut row groups by bytes too (see cmd/gen.c). */
    struct qv_file_write_options wo = {.pool = im->ctx->pool,
                                       .row_group_rows = im->row_group_rows,
                                       .row_group_bytes = im->ctx->memory_limit / 6,
                                       .compact = im->compact,
                                       .random_access = im->random_access,
                                       .metadata = meta,
                                       .n_metadata = 1,
                                       .interrupted = interrupted};
    cli_progress_start(&bar, "importing, rows read:", 0);
    int64_t rows = 0;
    uint64_t bytes = 0, t0 = qv_now_ns();
    rc = qv_file_write_stream(out_path, &st, &wo, &rows, &bytes, &err);
    cli_progress_finish(&bar);
    st.release(&st);
    qv_builder_destroy(p.b);
    if (rc == ECANCELED && cli_interrupted()) {
        cli_errorf(im->ctx, "interrupted; nothing was written to '%s'", out_path);
        rc = CLI_EXIT_ERROR;
    } else if (rc) {
        /* The input's own error (a bad value, a CSV error) in its words. */
        rc = cli_fail(im->ctx, p.err.code ? &p.err : &err);
    } else {
        char a[32], sz[32], t[32];
        printf("imported %s row%s, %d column%s from %s to %s: %s in %s\n",
               cli_fmt_count(rows, a, sizeof a), rows == 1 ? "" : "s", im->ncols,
               im->ncols == 1 ? "" : "s", im->in_path, out_path, cli_fmt_bytes(bytes, sz, sizeof sz),
               cli_fmt_duration(qv_now_ns() - t0, t, sizeof t));
        size_t need = qv_schema_to_string(schema, NULL, 0) + 1;
        char *text = malloc(need);
        if (text) {
            qv_schema_to_string(schema, text, need);
            printf("schema:\n");
            for (char *line = text, *nl; *line; line = nl + 1) {
                nl = strchr(line, '\n');
                if (!nl) break;
                printf("  %.*s\n", (int)(nl - line), line);
            }
            free(text);
        }
    }
    qv_schema_destroy(schema);
    return rc;
}

int cli_cmd_import(struct cli_ctx *ctx, int argc, char **argv) {
    const char *pos[CLI_MAX_POSITIONAL];
    int np;
    struct import_args args = {0};
    int rc = cli_args_parse(&spec, ctx, argc, argv, &args, pos, &np);
    if (rc >= 0) return rc;
    if (strcmp(pos[1], "-") == 0)
        return cli_usage_error(ctx, "a .qvr file cannot go to stdout: give a path");
    if (strcmp(pos[0], "-") != 0 && (rc = cli_refuse_same_file(ctx, pos[0], pos[1]))) return rc;
    struct import im;
    memset(&im, 0, sizeof im);
    im.ctx = ctx;
    im.in_path = strcmp(pos[0], "-") == 0 ? "<stdin>" : pos[0];
    im.out_path = pos[1];
    im.schema_spec = args.schema;
    im.compact = args.compact;
    im.random_access = args.random_access;
    if (im.compact && im.random_access)
        return cli_usage_error(ctx, "--compact and --random-access exclude each other");
    im.sample_rows = DEFAULT_SAMPLE_ROWS;
    if ((rc = parse_delimiter(ctx, args.delimiter, &im.delimiter))) return rc;
    if (args.row_group_rows && (rc = cli_parse_int64(ctx, "--row-group-rows", args.row_group_rows, 1,
                                                  INT32_MAX / 2, &im.row_group_rows)))
        return rc;
    if (args.sample_rows &&
        (rc = cli_parse_int64(ctx, "--sample-rows", args.sample_rows, 1, 10000000, &im.sample_rows)))
        return rc;
    FILE *in = stdin;
    if (strcmp(pos[0], "-") != 0) {
        in = fopen(pos[0], "rb");
        if (!in) {
            cli_errorf(ctx, "cannot open '%s': %s", pos[0], strerror(errno));
            return CLI_EXIT_ERROR;
        }
    }
    struct qv_reservation *r = NULL;
    rc = cli_ctx_open(ctx);
    if (!rc) rc = cli_reservation(ctx, "import", &r);
    if (!rc) cli_trap_interrupts();
    if (!rc) rc = run(&im, r, in);
    import_free(&im);
    if (in != stdin) fclose(in);
    qv_reservation_destroy(r);
    cli_ctx_close(ctx);
    return rc;
}
