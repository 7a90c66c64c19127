/* `qv inspect`: what is inside a .qvr file, as a tree for people or JSON
 * for tests and benchmarks. Both views print the same facts: schema, row
 * groups, every node's chunk (sizes before and after encoding, statistics)
 * and every segment's encoding tree, then a summary. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd/inspect.h"
#include "quiver/file.h"
#include "term/units.h"

struct inspect_args {
    const char *row_group;
    int json, summary, no_encodings, mmap;
};

static const struct cli_option options[] = {
    CLI_FLAG(struct inspect_args, json, "json", "machine-readable output (the same facts)"),
    CLI_FLAG(struct inspect_args, summary, "summary", "only the file header, schema and summary"),
    CLI_VALUE(struct inspect_args, row_group, "row-group", "N", "detail only row group N"),
    CLI_FLAG(struct inspect_args, no_encodings, "no-encodings",
             "skip the encoding trees (reads only the footer, so it is instant on large files)"),
    CLI_FLAG(struct inspect_args, mmap, "mmap",
             "map the file instead of reading it into verified buffers (see the caveat in "
             "cli/README.md)"),
};

/* What the views print, from the options. */
struct view {
    int64_t only_rg; /* -1 = every row group */
    int summary;     /* header, schema and summary only */
    int encodings;   /* read and print each segment's encoding tree */
};

static const struct cli_command_spec spec = {
    .name = "inspect",
    .usage = "FILE.qvr [--json] [--summary] [--row-group N] [--no-encodings] [--mmap]",
    .summary = "Shows a .qvr file's schema, row groups, and for every column node in every row\n"
               "group: sizes before (raw Arrow) and after encoding, statistics, and the encoding\n"
               "tree of each segment; then a summary with per-column totals.",
    .options = options,
    .n_options = (int)(sizeof options / sizeof options[0]),
    .min_positional = 1,
    .max_positional = 1,
};

static const char *role_name(enum qv_segment_role r) {
    return r == QV_SEGMENT_VALIDITY ? "validity" : r == QV_SEGMENT_OFFSETS ? "offsets" : "values";
}

static int node_depth(const struct qv_reader *rd, int32_t node) {
    int d = 0;
    for (int32_t p = qv_reader_node_parent(rd, node); p >= 0 && d < 1000;
         p = qv_reader_node_parent(rd, p))
        d++;
    return d;
}

static int32_t node_column(const struct qv_reader *rd, int32_t node) {
    int32_t top = node;
    for (int guard = 0; qv_reader_node_parent(rd, top) >= 0 && guard < 1000; guard++)
        top = qv_reader_node_parent(rd, top);
    int64_t ncols = qv_reader_schema(rd)->root.n_children;
    for (int32_t c = 0; c < ncols; c++)
        if (qv_reader_column_node(rd, c) == top) return c;
    return -1;
}

static const char *type_text(const struct qv_field *f, char *buf, size_t cap) {
    /* Nested types print their children in full; the tree shows those
     * below, so the node line keeps just the outer type. */
    if (f->type == QV_TYPE_STRUCT || f->type == QV_TYPE_LIST || f->type == QV_TYPE_LARGE_LIST ||
        f->type == QV_TYPE_MAP) {
        snprintf(buf, cap, "%s", qv_type_name(f->type));
        return buf;
    }
    if (f->type == QV_TYPE_FIXED_LIST) {
        snprintf(buf, cap, "fixed_size_list[%d]", f->list_size);
        return buf;
    }
    qv_type_to_string(f, buf, cap);
    return buf;
}

int cli_file_totals(const struct qv_reader *rd, uint64_t *raw, uint64_t *encoded,
                    struct qv_error *err) {
    *raw = *encoded = 0;
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++)
        for (int32_t k = 0; k < qv_reader_num_nodes(rd); k++) {
            struct qv_chunk_info ci;
            int rc = qv_reader_chunk_info(rd, rg, k, &ci, err);
            if (rc) return rc;
            *raw += ci.raw_bytes;
            *encoded += ci.encoded_bytes;
        }
    return 0;
}

/* Per top-level column totals over every row group and every node. */
struct col_totals {
    uint64_t raw, encoded;
};

static int column_totals(const struct qv_reader *rd, struct col_totals **out,
                         struct qv_error *err) {
    int64_t ncols = qv_reader_schema(rd)->root.n_children;
    int32_t nn = qv_reader_num_nodes(rd);
    struct col_totals *t = calloc((size_t)ncols + 1, sizeof *t);
    int32_t *col = calloc((size_t)nn + 1, sizeof *col);
    if (!t || !col) {
        free(t);
        free(col);
        return qv_error_set(err, ENOMEM, "out of memory");
    }
    for (int32_t k = 0; k < nn; k++) col[k] = node_column(rd, k);
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++)
        for (int32_t k = 0; k < nn; k++) {
            struct qv_chunk_info ci;
            int rc = qv_reader_chunk_info(rd, rg, k, &ci, err);
            if (rc) {
                free(t);
                free(col);
                return rc;
            }
            if (col[k] < 0) continue;
            t[col[k]].raw += ci.raw_bytes;
            t[col[k]].encoded += ci.encoded_bytes;
        }
    free(col);
    *out = t;
    return 0;
}

int cli_inspect_summary(FILE *f, const struct qv_reader *rd, const char *ind,
                        struct qv_error *err) {
    uint64_t raw, enc;
    int rc = cli_file_totals(rd, &raw, &enc, err);
    struct col_totals *ct = NULL;
    if (!rc) rc = column_totals(rd, &ct, err);
    if (rc) return rc;
    const struct qv_field *root = &qv_reader_schema(rd)->root;
    uint64_t size = qv_reader_file_size(rd);
    char a[32], b[32];
    fprintf(f, "%srows            %s\n", ind, cli_fmt_count(qv_reader_num_rows(rd), a, sizeof a));
    fprintf(f, "%srow groups      %lld\n", ind, (long long)qv_reader_num_row_groups(rd));
    fprintf(f, "%scolumns         %lld (%d nodes)\n", ind, (long long)root->n_children,
            qv_reader_num_nodes(rd));
    fprintf(f, "%sfile size       %s (%s bytes)\n", ind, cli_fmt_bytes(size, a, sizeof a),
            cli_fmt_count((int64_t)size, b, sizeof b));
    fprintf(f, "%sraw Arrow size  %s (%s bytes)\n", ind, cli_fmt_bytes(raw, a, sizeof a),
            cli_fmt_count((int64_t)raw, b, sizeof b));
    fprintf(f, "%sratio           %.2fx (raw Arrow / file size)\n", ind, cli_ratio(raw, size));
    fprintf(f, "%sencoded data    %s; footer and headers %s\n", ind,
            cli_fmt_bytes(enc, a, sizeof a), cli_fmt_bytes(size > enc ? size - enc : 0, b, sizeof b));
    int w = 6;
    for (int64_t c = 0; c < root->n_children; c++) {
        int len = (int)strlen(root->children[c].name ? root->children[c].name : "");
        if (len > w) w = len;
    }
    if (w > 40) w = 40;
    fprintf(f, "%s%-*s  %-20s %11s %11s %8s %7s\n", ind, w, "column", "type", "encoded", "raw",
            "ratio", "share");
    for (int64_t c = 0; c < root->n_children; c++) {
        char type[64], e[32], r[32];
        const struct qv_field *cf = &root->children[c];
        fprintf(f, "%s%-*.*s  %-20.20s %11s %11s %7.2fx %6.1f%%\n", ind, w, w,
                cf->name ? cf->name : "", type_text(cf, type, sizeof type),
                cli_fmt_bytes(ct[c].encoded, e, sizeof e), cli_fmt_bytes(ct[c].raw, r, sizeof r),
                cli_ratio(ct[c].raw, ct[c].encoded),
                enc ? 100.0 * (double)ct[c].encoded / (double)enc : 0.0);
    }
    free(ct);
    return 0;
}

/* ---- text view ---- */

static void print_tree_text(FILE *f, const struct cli_enc_tree *t, int indent) {
    for (int i = 0; i < t->n; i++) {
        const struct cli_enc_node *n = &t->nodes[i];
        char sz[32], cnt[32];
        fprintf(f, "%*s", indent + 2 * n->depth, "");
        if (n->role[0]) fprintf(f, "%s: ", n->role);
        fprintf(f, "%s", n->name);
        if (n->nparams) {
            fputc('(', f);
            for (int p = 0; p < n->nparams; p++)
                fprintf(f, "%s%s=%lld", p ? ", " : "", n->param_names[p], (long long)n->params[p]);
            fputc(')', f);
        }
        fprintf(f, "  %s", n->type);
        if (strcmp(n->type, "fixed") == 0) fprintf(f, "[%u]", n->fixed_width);
        fprintf(f, " x %s  %s%s\n", cli_fmt_count(n->count, cnt, sizeof cnt),
                cli_fmt_bytes(n->size, sz, sizeof sz), n->compressed ? "  (inside compressed)" : "");
    }
}

static int print_chunk_text(FILE *f, const struct qv_reader *rd, int64_t rg, int32_t k,
                            const struct view *v, struct qv_reservation *r, struct qv_error *err) {
    const struct qv_field *fld = qv_reader_node_field(rd, k);
    struct qv_chunk_info ci;
    int rc = qv_reader_chunk_info(rd, rg, k, &ci, err);
    if (rc) return rc;
    int ind = 2 + 2 * node_depth(rd, k);
    char type[128], a[32], b[32], c[32], d[32];
    fprintf(f, "%*s%s: %s%s\n", ind, "", fld->name ? fld->name : "",
            type_text(fld, type, sizeof type), fld->nullable ? "" : " not null");
    fprintf(f, "%*s  %s values, %s nulls; %s raw -> %s encoded", ind, "",
            cli_fmt_count(ci.length, a, sizeof a), cli_fmt_count(ci.null_count, b, sizeof b),
            cli_fmt_bytes(ci.raw_bytes, c, sizeof c), cli_fmt_bytes(ci.encoded_bytes, d, sizeof d));
    if (ci.encoded_bytes) fprintf(f, " (%.2fx)", cli_ratio(ci.raw_bytes, ci.encoded_bytes));
    fputc('\n', f);
    if (ci.has_min_max || ci.has_nan_count) {
        struct cli_buf sb;
        cli_buf_init(&sb);
        if (ci.has_min_max) {
            cli_buf_puts(&sb, "min ");
            cli_stat_text(&sb, fld, ci.min, ci.min_len, ci.min_truncated);
            cli_buf_puts(&sb, ", max ");
            cli_stat_text(&sb, fld, ci.max, ci.max_len, ci.max_truncated);
            if (ci.min_truncated || ci.max_truncated)
                cli_buf_printf(&sb, " (truncated:%s%s)", ci.min_truncated ? " min" : "",
                               ci.max_truncated ? " max" : "");
        }
        if (ci.has_nan_count)
            cli_buf_printf(&sb, "%sNaN count %lld", ci.has_min_max ? ", " : "",
                           (long long)ci.nan_count);
        fprintf(f, "%*s  %s\n", ind, "", cli_buf_str(&sb));
        cli_buf_free(&sb);
    }
    for (int s = 0; s < ci.n_segments; s++) {
        struct qv_segment_info si;
        rc = qv_reader_segment_info(rd, rg, k, s, &si, err);
        if (rc) return rc;
        fprintf(f, "%*s  %s segment: %s x %s, %s at offset %llu\n", ind, "", role_name(si.role),
                qv_value_kind_name(si.kind), cli_fmt_count(si.count, a, sizeof a),
                cli_fmt_bytes(si.length, b, sizeof b), (unsigned long long)si.offset);
        if (!v->encodings) continue;
        struct cli_enc_tree t;
        rc = cli_enc_tree_read(rd, rg, k, s, r, &t, err);
        if (!rc) print_tree_text(f, &t, ind + 4);
        cli_enc_tree_free(&t);
        if (rc) return rc;
    }
    return 0;
}

static void print_header_text(FILE *f, const struct qv_reader *rd) {
    char a[32], b[32];
    const struct qv_schema *schema = qv_reader_schema(rd);
    fprintf(f, "file %s\n", qv_reader_path(rd));
    int64_t nrg = qv_reader_num_row_groups(rd);
    fprintf(f, "  %s, %s rows, %lld row group%s, writer '%s'\n",
            cli_fmt_bytes(qv_reader_file_size(rd), a, sizeof a),
            cli_fmt_count(qv_reader_num_rows(rd), b, sizeof b), (long long)nrg,
            nrg == 1 ? "" : "s", qv_reader_writer_version(rd));
    int64_t nmeta = 0;
    const struct qv_kv *meta = qv_reader_metadata(rd, &nmeta);
    if (nmeta > 0) {
        fprintf(f, "metadata:\n");
        for (int64_t i = 0; i < nmeta; i++) {
            struct cli_buf kb;
            cli_buf_init(&kb);
            cli_json_escape(&kb, meta[i].key, (size_t)meta[i].key_len);
            cli_buf_puts(&kb, ": ");
            cli_json_escape(&kb, meta[i].value ? meta[i].value : "",
                            meta[i].value ? (size_t)meta[i].value_len : 0);
            fprintf(f, "  %s\n", cli_buf_str(&kb));
            cli_buf_free(&kb);
        }
    }
    size_t need = qv_schema_to_string(schema, NULL, 0) + 1;
    char *text = malloc(need);
    fprintf(f, "schema:\n");
    if (text) {
        qv_schema_to_string(schema, text, need);
        for (char *line = text, *nl; *line; line = nl + 1) {
            nl = strchr(line, '\n');
            if (!nl) {
                fprintf(f, "  %s\n", line);
                break;
            }
            fprintf(f, "  %.*s\n", (int)(nl - line), line);
        }
        free(text);
    }
}

static int inspect_text(FILE *f, const struct qv_reader *rd, const struct view *v,
                        struct qv_reservation *r, struct qv_error *err) {
    print_header_text(f, rd);
    int64_t nrg = qv_reader_num_row_groups(rd);
    for (int64_t rg = 0; rg < nrg && !v->summary; rg++) {
        if (v->only_rg >= 0 && rg != v->only_rg) continue;
        char a[32], b[32], c[32], d[32];
        int64_t rows = qv_reader_row_group_rows(rd, rg);
        int64_t first = qv_reader_row_group_first_row(rd, rg);
        fprintf(f, "\nrow group %lld: %s rows (rows %s..%s), %s\n", (long long)rg,
                cli_fmt_count(rows, a, sizeof a), cli_fmt_count(first, b, sizeof b),
                cli_fmt_count(first + rows - (rows > 0), c, sizeof c),
                cli_fmt_bytes(qv_reader_row_group_bytes(rd, rg), d, sizeof d));
        for (int32_t k = 0; k < qv_reader_num_nodes(rd); k++) {
            int rc = print_chunk_text(f, rd, rg, k, v, r, err);
            if (rc) return rc;
        }
    }
    fprintf(f, "\nsummary:\n");
    return cli_inspect_summary(f, rd, "  ", err);
}

/* ---- JSON view ---- */

static void json_field(struct cli_json *j, const struct qv_field *fl) {
    char type[256];
    cli_json_object_begin(j);
    cli_json_key(j, "name");
    cli_json_string(j, fl->name ? fl->name : "");
    cli_json_key(j, "type");
    cli_json_string(j, qv_type_name(fl->type));
    qv_type_to_string(fl, type, sizeof type);
    cli_json_key(j, "type_text");
    cli_json_string(j, type);
    cli_json_key(j, "nullable");
    cli_json_bool(j, fl->nullable);
    if (fl->type == QV_TYPE_DECIMAL128) {
        cli_json_key(j, "precision");
        cli_json_int(j, fl->precision);
        cli_json_key(j, "scale");
        cli_json_int(j, fl->scale);
    }
    if (fl->n_children > 0) {
        cli_json_key(j, "children");
        cli_json_array_begin(j);
        for (int64_t i = 0; i < fl->n_children; i++) json_field(j, &fl->children[i]);
        cli_json_array_end(j);
    }
    cli_json_object_end(j);
}

static void json_tree(struct cli_json *j, const struct cli_enc_tree *t) {
    cli_json_array_begin(j);
    for (int i = 0; i < t->n; i++) {
        const struct cli_enc_node *n = &t->nodes[i];
        cli_json_object_begin(j);
        cli_json_key(j, "depth");
        cli_json_int(j, n->depth);
        cli_json_key(j, "role");
        cli_json_string(j, n->role);
        cli_json_key(j, "encoding");
        cli_json_string(j, n->name);
        cli_json_key(j, "type");
        cli_json_string(j, n->type);
        if (n->fixed_width) {
            cli_json_key(j, "fixed_width");
            cli_json_uint(j, n->fixed_width);
        }
        cli_json_key(j, "count");
        cli_json_int(j, n->count);
        cli_json_key(j, "offset");
        cli_json_uint(j, n->offset);
        cli_json_key(j, "size");
        cli_json_uint(j, n->size);
        cli_json_key(j, "own_size");
        cli_json_uint(j, n->own_size);
        cli_json_key(j, "compressed");
        cli_json_bool(j, n->compressed);
        cli_json_key(j, "params");
        cli_json_object_begin(j);
        for (int p = 0; p < n->nparams; p++) {
            cli_json_key(j, n->param_names[p]);
            cli_json_int(j, n->params[p]);
        }
        cli_json_object_end(j);
        cli_json_object_end(j);
    }
    cli_json_array_end(j);
}

static int json_chunk(struct cli_json *j, const struct qv_reader *rd, int64_t rg, int32_t k,
                      const struct view *v, struct qv_reservation *r, struct qv_error *err) {
    const struct qv_field *fld = qv_reader_node_field(rd, k);
    struct qv_chunk_info ci;
    int rc = qv_reader_chunk_info(rd, rg, k, &ci, err);
    if (rc) return rc;
    char path[1024], type[256];
    qv_reader_node_path(rd, k, path, sizeof path);
    cli_json_object_begin(j);
    cli_json_key(j, "node");
    cli_json_int(j, k);
    cli_json_key(j, "path");
    cli_json_string(j, path);
    cli_json_key(j, "column");
    cli_json_int(j, node_column(rd, k));
    cli_json_key(j, "depth");
    cli_json_int(j, node_depth(rd, k));
    cli_json_key(j, "type");
    cli_json_string(j, qv_type_name(fld->type));
    qv_type_to_string(fld, type, sizeof type);
    cli_json_key(j, "type_text");
    cli_json_string(j, type);
    cli_json_key(j, "length");
    cli_json_int(j, ci.length);
    cli_json_key(j, "null_count");
    cli_json_int(j, ci.null_count);
    cli_json_key(j, "raw_bytes");
    cli_json_uint(j, ci.raw_bytes);
    cli_json_key(j, "encoded_bytes");
    cli_json_uint(j, ci.encoded_bytes);
    cli_json_key(j, "ratio");
    cli_json_double(j, cli_ratio(ci.raw_bytes, ci.encoded_bytes));
    cli_json_key(j, "statistics");
    cli_json_object_begin(j);
    cli_json_key(j, "has_min_max");
    cli_json_bool(j, ci.has_min_max);
    if (ci.has_min_max) {
        cli_json_key(j, "min");
        cli_stat_json(j, fld, ci.min, ci.min_len);
        cli_json_key(j, "max");
        cli_stat_json(j, fld, ci.max, ci.max_len);
        cli_json_key(j, "min_truncated");
        cli_json_bool(j, ci.min_truncated);
        cli_json_key(j, "max_truncated");
        cli_json_bool(j, ci.max_truncated);
    }
    cli_json_key(j, "null_count");
    cli_json_int(j, ci.null_count);
    if (ci.has_nan_count) {
        cli_json_key(j, "nan_count");
        cli_json_int(j, ci.nan_count);
    }
    cli_json_object_end(j);
    cli_json_key(j, "segments");
    cli_json_array_begin(j);
    for (int s = 0; s < ci.n_segments && !rc; s++) {
        struct qv_segment_info si;
        rc = qv_reader_segment_info(rd, rg, k, s, &si, err);
        if (rc) break;
        cli_json_object_begin(j);
        cli_json_key(j, "role");
        cli_json_string(j, role_name(si.role));
        cli_json_key(j, "kind");
        cli_json_string(j, qv_value_kind_name(si.kind));
        cli_json_key(j, "count");
        cli_json_int(j, si.count);
        cli_json_key(j, "offset");
        cli_json_uint(j, si.offset);
        cli_json_key(j, "length");
        cli_json_uint(j, si.length);
        char sum[24];
        snprintf(sum, sizeof sum, "%016llx", (unsigned long long)si.checksum);
        cli_json_key(j, "checksum");
        cli_json_string(j, sum);
        if (v->encodings) {
            struct cli_enc_tree t;
            rc = cli_enc_tree_read(rd, rg, k, s, r, &t, err);
            if (!rc) {
                cli_json_key(j, "encoding");
                cli_json_string(j, t.n ? t.nodes[0].name : "?");
                cli_json_key(j, "describe");
                cli_json_string(j, t.describe);
                cli_json_key(j, "tree");
                json_tree(j, &t);
            }
            cli_enc_tree_free(&t);
        }
        cli_json_object_end(j);
    }
    cli_json_array_end(j);
    cli_json_object_end(j);
    return rc;
}

static int inspect_json(FILE *f, const struct qv_reader *rd, const struct view *v,
                        struct qv_reservation *r, struct qv_error *err) {
    struct cli_json j;
    cli_json_init(&j, f);
    const struct qv_field *root = &qv_reader_schema(rd)->root;
    uint64_t raw, enc;
    struct col_totals *ct = NULL;
    int rc = cli_file_totals(rd, &raw, &enc, err);
    if (!rc) rc = column_totals(rd, &ct, err);
    if (rc) return rc;
    cli_json_object_begin(&j);
    cli_json_key(&j, "file");
    cli_json_string(&j, qv_reader_path(rd));
    cli_json_key(&j, "file_size");
    cli_json_uint(&j, qv_reader_file_size(rd));
    cli_json_key(&j, "writer");
    cli_json_string(&j, qv_reader_writer_version(rd));
    cli_json_key(&j, "num_rows");
    cli_json_int(&j, qv_reader_num_rows(rd));
    cli_json_key(&j, "num_row_groups");
    cli_json_int(&j, qv_reader_num_row_groups(rd));
    cli_json_key(&j, "num_columns");
    cli_json_int(&j, root->n_children);
    cli_json_key(&j, "num_nodes");
    cli_json_int(&j, qv_reader_num_nodes(rd));
    int64_t nmeta = 0;
    const struct qv_kv *meta = qv_reader_metadata(rd, &nmeta);
    cli_json_key(&j, "metadata");
    cli_json_object_begin(&j);
    for (int64_t i = 0; i < nmeta; i++) {
        /* Keys with NUL bytes cannot be object keys as C strings: escape
         * through the string writer instead. */
        char key[256];
        snprintf(key, sizeof key, "%.*s", meta[i].key_len < 255 ? meta[i].key_len : 255,
                 meta[i].key);
        cli_json_key(&j, key);
        cli_json_string_n(&j, meta[i].value ? meta[i].value : "",
                          meta[i].value ? (size_t)meta[i].value_len : 0);
    }
    cli_json_object_end(&j);
    cli_json_key(&j, "schema");
    cli_json_array_begin(&j);
    for (int64_t c = 0; c < root->n_children; c++) json_field(&j, &root->children[c]);
    cli_json_array_end(&j);
    cli_json_key(&j, "row_groups");
    cli_json_array_begin(&j);
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd) && !v->summary && !rc; rg++) {
        if (v->only_rg >= 0 && rg != v->only_rg) continue;
        cli_json_object_begin(&j);
        cli_json_key(&j, "index");
        cli_json_int(&j, rg);
        cli_json_key(&j, "rows");
        cli_json_int(&j, qv_reader_row_group_rows(rd, rg));
        cli_json_key(&j, "first_row");
        cli_json_int(&j, qv_reader_row_group_first_row(rd, rg));
        cli_json_key(&j, "bytes");
        cli_json_uint(&j, qv_reader_row_group_bytes(rd, rg));
        cli_json_key(&j, "chunks");
        cli_json_array_begin(&j);
        for (int32_t k = 0; k < qv_reader_num_nodes(rd) && !rc; k++)
            rc = json_chunk(&j, rd, rg, k, v, r, err);
        cli_json_array_end(&j);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);
    cli_json_key(&j, "summary");
    cli_json_object_begin(&j);
    cli_json_key(&j, "rows");
    cli_json_int(&j, qv_reader_num_rows(rd));
    cli_json_key(&j, "row_groups");
    cli_json_int(&j, qv_reader_num_row_groups(rd));
    cli_json_key(&j, "file_size");
    cli_json_uint(&j, qv_reader_file_size(rd));
    cli_json_key(&j, "raw_bytes");
    cli_json_uint(&j, raw);
    cli_json_key(&j, "encoded_bytes");
    cli_json_uint(&j, enc);
    cli_json_key(&j, "ratio");
    cli_json_double(&j, cli_ratio(raw, qv_reader_file_size(rd)));
    cli_json_key(&j, "columns");
    cli_json_array_begin(&j);
    for (int64_t c = 0; c < root->n_children; c++) {
        cli_json_object_begin(&j);
        cli_json_key(&j, "name");
        cli_json_string(&j, root->children[c].name ? root->children[c].name : "");
        cli_json_key(&j, "type");
        cli_json_string(&j, qv_type_name(root->children[c].type));
        cli_json_key(&j, "raw_bytes");
        cli_json_uint(&j, ct[c].raw);
        cli_json_key(&j, "encoded_bytes");
        cli_json_uint(&j, ct[c].encoded);
        cli_json_key(&j, "ratio");
        cli_json_double(&j, cli_ratio(ct[c].raw, ct[c].encoded));
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);
    cli_json_object_end(&j);
    cli_json_object_end(&j);
    cli_json_end(&j);
    free(ct);
    return rc;
}

int cli_cmd_inspect(struct cli_ctx *ctx, int argc, char **argv) {
    const char *pos[CLI_MAX_POSITIONAL];
    int np;
    struct inspect_args args = {0};
    int rc = cli_args_parse(&spec, ctx, argc, argv, &args, pos, &np);
    if (rc >= 0) return rc;
    struct view v = {.only_rg = -1, .summary = args.summary, .encodings = !args.no_encodings};
    if (args.row_group &&
        (rc = cli_parse_int64(ctx, "--row-group", args.row_group, 0, INT64_MAX, &v.only_rg)))
        return rc;
    if ((rc = cli_ctx_open(ctx))) return rc;
    struct qv_reservation *r = NULL;
    struct qv_file *file = NULL;
    struct qv_error err;
    qv_error_clear(&err);
    if ((rc = cli_reservation(ctx, "inspect", &r))) goto done;
    if ((rc = cli_open_file(ctx, pos[0], args.mmap, &file))) goto done;
    /* Inspect shows what the format stores: the reader's footer, chunks
     * and segments. */
    const struct qv_reader *rd = qv_file_reader(file);
    if (v.only_rg >= qv_reader_num_row_groups(rd)) {
        cli_errorf(ctx, "--row-group %lld: %s has %lld row groups", (long long)v.only_rg, pos[0],
                   (long long)qv_reader_num_row_groups(rd));
        rc = CLI_EXIT_ERROR;
        goto done;
    }
    if ((args.json ? inspect_json : inspect_text)(stdout, rd, &v, r, &err))
        rc = cli_fail(ctx, &err);
    else if (fflush(stdout)) {
        cli_errorf(ctx, "writing the output: %s", strerror(errno));
        rc = CLI_EXIT_ERROR;
    }
done:
    qv_file_close(file);
    qv_reservation_destroy(r);
    cli_ctx_close(ctx);
    return rc;
}
