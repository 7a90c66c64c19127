/* Splits of a file for engines that scan it from many tasks: byte-balanced
 * ranges of row groups, each with the rows and bytes it covers, so a
 * planner can hand out (path, identity, split) triples. A row group weighs
 * its whole length, or, for a projection, the encoded bytes of exactly the
 * column chunks a scan of those columns loads (the scan's own projection
 * rule decides which fields of a nested column are read). */
#include <stdlib.h>
#include <string.h>

#include "file/file_internal.h"
#include "scan/scan_internal.h"

/* Adds to w[g] the encoded bytes of the chunks of the projection's kept
 * nodes in every row group. */
static int weigh_projection(const struct qv_reader *rd, const struct qv__proj_col *cols,
                            int32_t n, uint64_t *w, struct qv_error *err) {
    const struct qv_schema *schema = qv_reader_schema(rd);
    int64_t nrg = qv_reader_num_row_groups(rd);
    for (int32_t i = 0; i < n; i++) {
        const struct qv__proj_col *c = &cols[i];
        int32_t node = qv_reader_column_node(rd, c->column);
        int64_t count = qv_field_count(&schema->root.children[c->column]);
        for (int64_t k = 0; k < count; k++) {
            if (c->keep && !c->keep[k]) continue;
            for (int64_t g = 0; g < nrg; g++) {
                struct qv_chunk_info ci;
                int rc = qv_reader_chunk_info(rd, g, node + (int32_t)k, &ci, err);
                if (rc) return rc;
                w[g] += ci.encoded_bytes;
            }
        }
    }
    return 0;
}

/* The weight of every row group: NULL columns = its length; no column = 0
 * (*by_rows set: the rows weigh instead); else the projected chunks. */
static int weigh(const struct qv_file *file, const char *const *columns, int32_t n_columns,
                 uint64_t *w, bool *by_rows, struct qv_error *err) {
    const struct qv_reader *rd = file->rd;
    int64_t nrg = qv_reader_num_row_groups(rd);
    *by_rows = false;
    if (!columns) {
        for (int64_t g = 0; g < nrg; g++) w[g] = qv_reader_row_group_bytes(rd, g);
        return 0;
    }
    memset(w, 0, (size_t)nrg * sizeof *w);
    if (n_columns == 0) {
        *by_rows = true;
        return 0;
    }
    struct qv_selection *sel = NULL;
    int rc = qv_file_select(file, columns, n_columns, &sel, err);
    if (rc) return rc;
    int32_t np = 0;
    const struct qv_column_path *paths = qv_selection_paths(sel, &np);
    struct qv_reservation *r = NULL;
    struct qv_reservation_options ro = {.name = "split planning"};
    rc = qv_reservation_create(qv_file_pool(file), &ro, &r, err);
    struct qv__proj_col *cols = NULL;
    int32_t ncols = 0;
    if (!rc) rc = qv__projection_build(qv_reader_schema(rd), paths, np, r, &cols, &ncols, err);
    if (!rc) {
        rc = weigh_projection(rd, cols, ncols, w, err);
        qv__projection_free(cols, (int32_t)qv_reader_schema(rd)->root.n_children, r);
    }
    qv_reservation_destroy(r);
    qv_selection_destroy(sel);
    return rc;
}

static int plan(const struct qv_file *file, const char *const *columns, int32_t n_columns,
                uint64_t target_bytes, struct qv_file_split **out, int64_t *n,
                struct qv_error *err) {
    *out = NULL;
    *n = 0;
    const struct qv_reader *rd = file->rd;
    if (n_columns < 0)
        return qv_error_set(err, EINVAL, "file '%.300s': splits: %d columns", qv_reader_path(rd),
                            (int)n_columns);
    int64_t nrg = qv_reader_num_row_groups(rd);
    if (nrg == 0 || qv_reader_num_rows(rd) == 0) return 0;
    if (target_bytes == 0) target_bytes = (uint64_t)128 << 20;
    /* At most one split per row group. */
    uint64_t *w = malloc((size_t)nrg * sizeof *w);
    struct qv_file_split *sp = w ? calloc((size_t)nrg, sizeof *sp) : NULL;
    if (!sp) {
        free(w);
        return qv_error_set(err, ENOMEM, "file '%.300s': splits: out of memory", qv_reader_path(rd));
    }
    bool by_rows = false;
    int rc = weigh(file, columns, n_columns, w, &by_rows, err);
    if (rc) {
        free(w);
        free(sp);
        return rc;
    }
    /* Greedy: a split closes once it weighs target_bytes (so each holds at
     * least one row group). */
    int64_t k = 0;
    uint64_t acc = 0;
    for (int64_t g = 0; g < nrg; g++) {
        if (g == 0 || acc >= target_bytes) {
            sp[k].row_group_begin = g;
            sp[k].row_begin = qv_reader_row_group_first_row(rd, g);
            k++;
            acc = 0;
        }
        struct qv_file_split *s = &sp[k - 1];
        s->row_group_end = g + 1;
        s->row_end = qv_reader_row_group_first_row(rd, g) + qv_reader_row_group_rows(rd, g);
        s->bytes += w[g];
        acc += by_rows ? (uint64_t)qv_reader_row_group_rows(rd, g) : w[g];
    }
    free(w);
    *out = sp;
    *n = k;
    return 0;
}

int qv_file_plan_splits(const struct qv_file *file, uint64_t target_bytes,
                        struct qv_file_split **out, int64_t *n, struct qv_error *err) {
    return plan(file, NULL, 0, target_bytes, out, n, err);
}

int qv_file_plan_splits_columns(const struct qv_file *file, const char *const *columns,
                                int32_t n_columns, uint64_t target_bytes,
                                struct qv_file_split **out, int64_t *n, struct qv_error *err) {
    return plan(file, columns, n_columns, target_bytes, out, n, err);
}
