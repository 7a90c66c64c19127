/* Choosing columns and nested fields by name: the one name rule of the
 * arrow part (qv_field_resolve_path), the same the predicate language
 * uses, applied to a file's schema. The result is a list of
 * qv_column_path for the scan's nested projection. */
#include <stdlib.h>
#include <string.h>

#include "file/file_internal.h"

struct qv_selection {
    int32_t n;
    struct qv_column_path *paths;
    int32_t *steps; /* the paths' child indices, QV_FIELD_PATH_MAX per path */
};

void qv_selection_destroy(struct qv_selection *sel) {
    if (!sel) return;
    free(sel->paths);
    free(sel->steps);
    free(sel);
}

const struct qv_column_path *qv_selection_paths(const struct qv_selection *sel, int32_t *n) {
    *n = sel->n;
    return sel->paths;
}

int qv_file_select(const struct qv_file *file, const char *const *names, int32_t n,
                   struct qv_selection **out, struct qv_error *err) {
    *out = NULL;
    const struct qv_schema *schema = qv_reader_schema(file->rd);
    const char *fname = qv_reader_path(file->rd);
    if (n < 0 || (n > 0 && !names))
        return qv_error_set(err, EINVAL, "file '%.300s': select: %d names", fname, (int)n);
    int32_t count = n ? n : (int32_t)schema->root.n_children;
    struct qv_selection *sel = calloc(1, sizeof *sel);
    if (sel) {
        sel->paths = calloc((size_t)(count ? count : 1), sizeof *sel->paths);
        sel->steps = calloc((size_t)(count ? count : 1) * QV_FIELD_PATH_MAX, sizeof *sel->steps);
    }
    if (!sel || !sel->paths || !sel->steps) {
        qv_selection_destroy(sel);
        return qv_error_set(err, ENOMEM, "file '%.300s': select: out of memory", fname);
    }
    for (int32_t i = 0; i < count; i++) {
        struct qv_column_path *p = &sel->paths[i];
        int32_t *steps = sel->steps + (size_t)i * QV_FIELD_PATH_MAX;
        p->path = steps;
        if (!n) {
            p->column = i;
            continue;
        }
        struct qv_field_ref ref;
        int rc = names[i] ? qv_field_resolve_path(&schema->root, names[i], &ref, err)
                          : qv_error_set(err, EINVAL, "name %d is NULL", (int)i);
        if (rc) {
            qv_error_wrap(err, rc, "file '%.300s': ", fname);
            qv_selection_destroy(sel);
            return rc;
        }
        p->column = ref.column;
        p->depth = ref.depth;
        memcpy(steps, ref.path, (size_t)ref.depth * sizeof *steps);
    }
    sel->n = count;
    *out = sel;
    return 0;
}
