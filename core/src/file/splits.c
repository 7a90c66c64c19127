/* Splits of a file for engines that scan it from many tasks: byte-balanced
 * ranges of row groups (qv_scan_plan_splits), each with the rows and bytes
 * it covers, so a planner can hand out (path, identity, split) triples. */
#include <stdlib.h>

#include "file/file_internal.h"

int qv_file_plan_splits(const struct qv_file *file, uint64_t target_bytes,
                        struct qv_file_split **out, int64_t *n, struct qv_error *err) {
    *out = NULL;
    *n = 0;
    const struct qv_reader *rd = file->rd;
    int64_t nrg = qv_reader_num_row_groups(rd);
    if (nrg == 0 || qv_reader_num_rows(rd) == 0) return 0;
    if (target_bytes == 0) target_bytes = (uint64_t)128 << 20;
    /* At most one split per row group, plus the closing bound. */
    int64_t *bounds = malloc((size_t)(nrg + 1) * sizeof *bounds);
    if (!bounds)
        return qv_error_set(err, ENOMEM, "file '%.300s': splits: out of memory", qv_reader_path(rd));
    int64_t k = 0;
    int rc = qv_scan_plan_splits(rd, target_bytes, bounds, nrg + 1, &k, err);
    struct qv_file_split *sp = NULL;
    if (!rc) {
        sp = calloc((size_t)(k ? k : 1), sizeof *sp);
        if (!sp) rc = qv_error_set(err, ENOMEM, "file '%.300s': splits: out of memory", qv_reader_path(rd));
    }
    for (int64_t i = 0; !rc && i < k; i++) {
        struct qv_file_split *s = &sp[i];
        s->row_group_begin = bounds[i];
        s->row_group_end = bounds[i + 1];
        s->row_begin = qv_reader_row_group_first_row(rd, s->row_group_begin);
        int64_t last = s->row_group_end - 1;
        s->row_end = qv_reader_row_group_first_row(rd, last) + qv_reader_row_group_rows(rd, last);
        for (int64_t g = s->row_group_begin; g < s->row_group_end; g++)
            s->bytes += qv_reader_row_group_bytes(rd, g);
    }
    free(bounds);
    if (rc) {
        free(sp);
        return rc;
    }
    *out = sp;
    *n = k;
    return 0;
}
