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
    int32_t *steps; /* the paths' child indices, one after the other */
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
    if (sel) sel->paths = calloc((size_t)(count ? count : 1), sizeof *sel->paths);
    if (!sel || !sel->paths) {
        qv_selection_destroy(sel);
        return qv_error_set(err, ENOMEM, "file '%.300s': select: out of memory", fname);
    }
    /* Steps are appended to one growing array (a schema may have a million
     * columns: nothing is sized per path by the deepest possible path);
     * the paths point into it once it stops moving. */
    size_t used = 0, cap = 0;
    size_t *at = n ? malloc((size_t)n * sizeof *at) : NULL;
    if (n && !at) {
        qv_selection_destroy(sel);
        return qv_error_set(err, ENOMEM, "file '%.300s': select: out of memory", fname);
    }
    for (int32_t i = 0; i < count; i++) {
        struct qv_column_path *p = &sel->paths[i];
        if (!n) {
            p->column = i;
            continue;
        }
        struct qv_field_ref ref;
        int rc = names[i] ? qv_field_resolve_path(&schema->root, names[i], &ref, err)
                          : qv_error_set(err, EINVAL, "name %d is NULL", (int)i);
        if (!rc && used + (size_t)ref.depth > cap) {
            size_t ncap = cap ? cap * 2 : 64;
            while (ncap < used + (size_t)ref.depth) ncap *= 2;
            int32_t *ns = realloc(sel->steps, ncap * sizeof *ns);
            if (ns) {
                sel->steps = ns;
                cap = ncap;
            } else {
                rc = qv_error_set(err, ENOMEM, "select: out of memory");
            }
        }
        if (rc) {
            qv_error_wrap(err, rc, "file '%.300s': ", fname);
            qv_selection_destroy(sel);
            free(at);
            return rc;
        }
        p->column = ref.column;
        p->depth = ref.depth;
        at[i] = used;
        if (ref.depth) memcpy(sel->steps + used, ref.path, (size_t)ref.depth * sizeof *sel->steps);
        used += (size_t)ref.depth;
    }
    for (int32_t i = 0; i < count; i++)
        sel->paths[i].path = sel->paths[i].depth ? sel->steps + at[i] : NULL;
    free(at);
    sel->n = count;
    *out = sel;
    return 0;
}
