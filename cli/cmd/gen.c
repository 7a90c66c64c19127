/* `qv gen`: built-in TPC-H data, written row by row through the writer's
 * batch builder. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cmd/gen.h"
#include "qvgen/lineitem.h"
#include "term/progress.h"
#include "term/units.h"

/* Rows appended between calls to qv_writer_end_rows: small enough that row
 * groups end exactly where asked, large enough to be invisible in cost. */
#define CHUNK_ROWS 65536

#define DEFAULT_ROW_GROUP_ROWS 131072

int cli_gen_lineitem_file(const struct cli_gen_options *o, struct qv_reservation *r,
                          struct cli_gen_result *res, struct qv_error *err) {
    memset(res, 0, sizeof *res);
    uint64_t t0 = qv_now_ns();
    struct qvgen_lineitem_cursor cur;
    int rc = qvgen_lineitem_cursor_init(&cur, o->sf, 0, INT64_MAX, err);
    if (rc) return rc;
    struct qv_schema *schema = NULL;
    rc = qvgen_lineitem_schema(r, &schema, err);
    if (rc) return rc;
    char sf_text[32];
    snprintf(sf_text, sizeof sf_text, "%g", o->sf);
    const struct qv_kv meta[] = {
        {"quiver.generator", "qv gen lineitem", -1, -1},
        {"tpch.table", "lineitem", -1, -1},
        {"tpch.scale_factor", sf_text, -1, -1},
    };
    int64_t rg_rows = o->row_group_rows > 0 ? o->row_group_rows : DEFAULT_ROW_GROUP_ROWS;
    struct qv_writer_options wo = {
        .row_group_rows = rg_rows,
        .row_group_bytes = o->row_group_bytes,
        .compact = o->compact,
        .random_access = o->random_access,
        .metadata = meta,
        .n_metadata = 3,
    };
    struct qv_writer *w = NULL;
    rc = qv_writer_open(o->path, schema, &wo, r, &w, err);
    qv_schema_destroy(schema);
    if (rc) return rc;
    struct qv_builder *b = qv_writer_builder(w);
    struct cli_progress bar;
    cli_progress_start(&bar, "generating lineitem", (uint64_t)cur.end_order);
    if (!o->progress) bar.enabled = 0;
    int64_t rows = 0;
    /* With a byte budget, hand rows over in small chunks so the writer
     * sees the budget approach before it is exceeded. */
    const int64_t chunk = o->row_group_bytes ? 1024 : CHUNK_ROWS;
    while (!rc && !qvgen_lineitem_cursor_done(&cur)) {
        if (cli_interrupted()) {
            rc = qv_error_set(err, ECANCELED, "file '%s': interrupted; nothing was written",
                              o->path);
            break;
        }
        int64_t room = rg_rows - qv_builder_num_rows(b);
        if (room <= 0) room = rg_rows;
        int64_t n = 0;
        rc = qvgen_lineitem_append(&cur, b, room < chunk ? room : chunk, &n, err);
        rows += n;
        if (!rc) rc = qv_writer_end_rows(w, err);
        cli_progress_update(&bar, (uint64_t)cur.order);
    }
    if (!rc) rc = qv_writer_finish(w, err);
    cli_progress_finish(&bar);
    if (!rc) {
        res->rows = rows;
        res->orders = cur.end_order;
        res->file_bytes = qv_writer_bytes_written(w);
    }
    qv_writer_close(w);
    res->ns = qv_now_ns() - t0;
    return rc;
}

struct gen_args {
    const char *sf, *row_group_rows;
    int compact, random_access;
};

static const struct cli_option options[] = {
    CLI_VALUE(struct gen_args, sf, "sf", "SF",
              "scale factor: 1,500,000 x SF orders, ~6M x SF rows (default 1)"),
    CLI_VALUE(struct gen_args, row_group_rows, "row-group-rows", "N",
              "rows per row group (default 131072)"),
    CLI_FLAG(struct gen_args, compact, "compact", "smallest files: size first, slower writes of text"),
    CLI_FLAG(struct gen_args, random_access, "random-access",
             "files for point lookups: no frames, cheaper takes, larger files"),
};

static const struct cli_command_spec spec = {
    .name = "gen",
    .usage = "lineitem OUT.qvr [--sf SF] [--row-group-rows N] [--compact | --random-access]",
    .summary = "Generates TPC-H lineitem data (the spec's columns, types and value distributions)\n"
               "with a deterministic, counter-based generator: the same scale factor always\n"
               "gives the same file, byte for byte. Rows are appended one at a time through\n"
               "the writer's batch builder.",
    .details = "tables: lineitem\n"
               "example: qv gen lineitem --sf 0.1 lineitem.qvr",
    .options = options,
    .n_options = (int)(sizeof options / sizeof options[0]),
    .min_positional = 2,
    .max_positional = 2,
};

int cli_cmd_gen(struct cli_ctx *ctx, int argc, char **argv) {
    const char *pos[CLI_MAX_POSITIONAL];
    int np;
    struct gen_args args = {0};
    int rc = cli_args_parse(&spec, ctx, argc, argv, &args, pos, &np);
    if (rc >= 0) return rc;
    if (strcmp(pos[1], "-") == 0)
        return cli_usage_error(ctx, "a .qvr file cannot go to stdout: give a path");
    if (strcmp(pos[0], "lineitem") != 0)
        return cli_usage_error(ctx, "unknown table '%s' (tables: lineitem)", pos[0]);
    /* A sixth of the budget for buffered rows leaves room for encoding
     * them (encoded buffers and scratch) and for the builder's doubling. */
    if (args.compact && args.random_access)
        return cli_usage_error(ctx, "--compact and --random-access exclude each other");
    struct cli_gen_options o = {.sf = 1, .path = pos[1], .compact = args.compact,
                                .random_access = args.random_access, .progress = 1,
                                .row_group_bytes = ctx->memory_limit / 6};
    if (args.sf && (rc = cli_parse_double(ctx, "--sf", args.sf, 1e-6, QVGEN_LINEITEM_MAX_SF, &o.sf)))
        return rc;
    if (args.row_group_rows &&
        (rc = cli_parse_int64(ctx, "--row-group-rows", args.row_group_rows, 1, INT32_MAX / 2, &o.row_group_rows)))
        return rc;
    if ((rc = cli_ctx_open(ctx))) return rc;
    cli_trap_interrupts();
    struct qv_reservation *r = NULL;
    if ((rc = cli_reservation(ctx, "gen", &r))) {
        cli_ctx_close(ctx);
        return rc;
    }
    struct qv_error err;
    qv_error_clear(&err);
    struct cli_gen_result res;
    rc = cli_gen_lineitem_file(&o, r, &res, &err);
    if (rc) {
        cli_fail(ctx, &err);
    } else {
        char a[32], b[32], c[32], d[32];
        printf("wrote %s rows (%s orders, SF %g) to %s: %s in %s\n",
               cli_fmt_count(res.rows, a, sizeof a), cli_fmt_count(res.orders, b, sizeof b), o.sf,
               o.path, cli_fmt_bytes(res.file_bytes, c, sizeof c),
               cli_fmt_duration(res.ns, d, sizeof d));
    }
    qv_reservation_destroy(r);
    cli_ctx_close(ctx);
    return rc ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
