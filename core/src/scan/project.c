/* Nested projection: qv_scan_options.paths turned into one entry per output
 * column, a mask of the column's fields to read (pre-order, as the reader
 * numbers its nodes) and the pruned type handed out. A path marks the
 * fields it passes through (a struct's validity, a list's offsets) and the
 * whole subtree it ends at; paths into one column merge. */
#include <string.h>

#include "scan/scan_internal.h"

void qv__projection_free(struct qv__proj_col *cols, int32_t cap, struct qv_reservation *r) {
    if (!cols) return;
    for (int32_t i = 0; i < cap; i++) {
        if (cols[i].keep) qv_free(r, cols[i].keep, cols[i].keep_size);
        if (cols[i].pruned) qv_free(r, cols[i].pruned, cols[i].pruned_size);
    }
    qv_free(r, cols, (size_t)(cap ? cap : 1) * sizeof *cols);
}

/* A map keeps both its key and its value (Arrow's map type has exactly
 * those two): a side no path reached is kept whole. */
static void complete_maps(const struct qv_field *f, uint8_t *keep) {
    int64_t off = 1;
    for (int64_t i = 0; i < f->n_children; i++) {
        const struct qv_field *c = &f->children[i];
        int64_t n = qv_field_count(c);
        if (keep[off]) {
            if (f->type == QV_TYPE_MAP) {
                /* c is the entries struct: key and value follow it. */
                int64_t o = off + 1;
                for (int64_t j = 0; j < c->n_children; j++) {
                    int64_t m = qv_field_count(&c->children[j]);
                    if (!keep[o]) memset(keep + o, 1, (size_t)m);
                    o += m;
                }
            }
            complete_maps(c, keep + off);
        }
        off += n;
    }
}

static int bad_path(const struct qv_schema *schema, int32_t i, const struct qv_column_path *p,
                    int32_t step, const char *why, struct qv_error *err) {
    const char *name = p->column >= 0 && p->column < schema->root.n_children
                           ? schema->root.children[p->column].name
                           : "?";
    return qv_error_set(err, EINVAL, "scan: path %d (column %d '%.200s', step %d): %s", (int)i,
                        (int)p->column, name ? name : "", (int)step, why);
}

int qv__projection_build(const struct qv_schema *schema, const struct qv_column_path *paths,
                         int32_t n, struct qv_reservation *r, struct qv__proj_col **out,
                         int32_t *n_out, struct qv_error *err) {
    *out = NULL;
    *n_out = 0;
    int32_t ncol = (int32_t)schema->root.n_children;
    if (n < 0) return qv_error_set(err, EINVAL, "scan: %d paths", (int)n);
    int32_t cap = ncol; /* one entry per distinct column at most */
    struct qv__proj_col *cols = qv_calloc(r, (size_t)(cap ? cap : 1) * sizeof *cols, err);
    if (!cols) return ENOMEM;
    /* Entry of each column, so that many paths over many columns stay linear. */
    size_t slot_size = (size_t)(cap ? cap : 1) * sizeof(int32_t);
    int32_t *slot = qv_alloc(r, slot_size, err);
    if (!slot) {
        qv__projection_free(cols, cap, r);
        return ENOMEM;
    }
    for (int32_t c = 0; c < ncol; c++) slot[c] = -1;
    int32_t count = 0;
    int rc = 0;
    for (int32_t i = 0; !rc && i < n; i++) {
        const struct qv_column_path *p = &paths[i];
        if (p->column < 0 || p->column >= ncol) {
            rc = qv_error_set(err, EINVAL, "scan: path %d: column %d out of range (%d columns)",
                              (int)i, (int)p->column, (int)ncol);
            break;
        }
        if (p->depth < 0 || (p->depth > 0 && !p->path)) {
            rc = bad_path(schema, i, p, 0, "depth negative or path missing", err);
            break;
        }
        const struct qv_field *f = &schema->root.children[p->column];
        struct qv__proj_col *c = slot[p->column] >= 0 ? &cols[slot[p->column]] : NULL;
        if (!c) {
            slot[p->column] = count;
            c = &cols[count++];
            c->column = p->column;
            c->keep_size = (size_t)qv_field_count(f);
            c->keep = qv_calloc(r, c->keep_size, err);
            if (!c->keep) {
                rc = ENOMEM;
                break;
            }
        }
        int64_t off = 0;
        c->keep[0] = 1;
        for (int32_t s = 0; s < p->depth; s++) {
            int32_t idx = p->path[s];
            bool ok = idx >= 0 && idx < f->n_children &&
                      (f->type == QV_TYPE_STRUCT ||
                       ((f->type == QV_TYPE_LIST || f->type == QV_TYPE_LARGE_LIST ||
                         f->type == QV_TYPE_FIXED_LIST || f->type == QV_TYPE_MAP) &&
                        idx == 0));
            if (!ok) {
                rc = bad_path(schema, i, p, s,
                              "no such child (structs: their fields; lists: 0, the element; "
                              "maps: 0, the entries, then 0 key / 1 value)",
                              err);
                break;
            }
            int64_t o = off + 1;
            for (int32_t j = 0; j < idx; j++) o += qv_field_count(&f->children[j]);
            off = o;
            f = &f->children[idx];
            c->keep[off] = 1;
        }
        if (rc) break;
        memset(c->keep + off, 1, (size_t)qv_field_count(f));
    }
    for (int32_t k = 0; !rc && k < count; k++) {
        struct qv__proj_col *c = &cols[k];
        const struct qv_field *f = &schema->root.children[c->column];
        complete_maps(f, c->keep);
        bool all = true;
        for (size_t j = 0; all && j < c->keep_size; j++) all = c->keep[j] != 0;
        if (all) {
            /* The whole column: read as a plain projection would. */
            qv_free(r, c->keep, c->keep_size);
            c->keep = NULL;
            c->field = f;
            continue;
        }
        rc = qv_field_prune(f, c->keep, r, &c->pruned, &c->pruned_size, err);
        c->field = c->pruned;
    }
    qv_free(r, slot, slot_size);
    if (rc) {
        qv__projection_free(cols, cap, r);
        return rc;
    }
    *out = cols;
    *n_out = count;
    return 0;
}
