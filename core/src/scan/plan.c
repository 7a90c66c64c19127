/* Scan planning: which row groups, which rows of them, and byte-balanced
 * splits for engines that scan one file from many tasks. */
#include <string.h>

#include "scan/scan_internal.h"

void qv__plan_free(struct qv__plan *p, struct qv_reservation *r) {
    if (p->units) qv_free(r, p->units, (size_t)p->units_cap * sizeof *p->units);
    if (p->take_local) qv_free(r, p->take_local, (size_t)(p->n_take_local ? p->n_take_local : 1) * sizeof(int64_t));
    memset(p, 0, sizeof *p);
}

int qv__plan_build(const struct qv_reader *rd, const struct qv_scan_options *o,
                   const struct qv_expr *filter, struct qv_reservation *r, struct qv__plan *p,
                   struct qv_error *err) {
    memset(p, 0, sizeof *p);
    int64_t nrg = qv_reader_num_row_groups(rd), rows = qv_reader_num_rows(rd);
    int64_t gb = o->row_group_begin, ge = o->row_group_end ? o->row_group_end : nrg;
    if (gb < 0 || ge > nrg || gb > ge)
        return qv_error_set(err, EINVAL, "scan: row groups [%lld, %lld) outside the file's %lld",
                            (long long)gb, (long long)ge, (long long)nrg);
    int64_t rb = o->row_begin, re = o->row_end ? o->row_end : rows;
    if (rb < 0 || re > rows || rb > re)
        return qv_error_set(err, EINVAL, "scan: rows [%lld, %lld) outside the file's %lld",
                            (long long)rb, (long long)re, (long long)rows);
    if (o->take && (o->row_begin || o->row_end))
        return qv_error_set(err, EINVAL, "scan: give a row range or rows to take, not both");
    if (o->take) {
        for (int64_t i = 0; i < o->n_take; i++) {
            if (o->take[i] < 0 || o->take[i] >= rows)
                return qv_error_set(err, EINVAL,
                                    "scan: take: row %lld at position %lld is out of range (%lld rows)",
                                    (long long)o->take[i], (long long)i, (long long)rows);
            if (i && o->take[i] <= o->take[i - 1])
                return qv_error_set(err, EINVAL,
                                    "scan: take: row %lld at position %lld is not above row %lld "
                                    "before it (a scan's rows to take are strictly increasing)",
                                    (long long)o->take[i], (long long)i, (long long)o->take[i - 1]);
        }
        p->n_take_local = o->n_take;
        p->take_local = qv_alloc(r, (size_t)(o->n_take ? o->n_take : 1) * sizeof(int64_t), err);
        if (!p->take_local) return ENOMEM;
    }
    p->units_cap = nrg ? nrg : 1;
    p->units = qv_alloc(r, (size_t)p->units_cap * sizeof *p->units, err);
    if (!p->units) {
        qv__plan_free(p, r);
        return ENOMEM;
    }
    p->row_groups_total = ge - gb;
    int64_t t = 0; /* position in o->take */
    for (int64_t g = gb; g < ge; g++) {
        int64_t first = qv_reader_row_group_first_row(rd, g);
        int64_t n = qv_reader_row_group_rows(rd, g);
        struct qv__unit u = {.rg = g, .lo = 0, .hi = n};
        if (o->take) {
            while (t < o->n_take && o->take[t] < first) t++;
            int64_t k = 0;
            u.take = p->take_local + t;
            while (t + k < o->n_take && o->take[t + k] < first + n) {
                p->take_local[t + k] = o->take[t + k] - first;
                k++;
            }
            u.n_take = k;
            t += k;
            if (k == 0) continue;
        } else {
            u.lo = rb > first ? rb - first : 0;
            u.hi = re < first + n ? re - first : n;
            if (u.lo >= u.hi) continue;
        }
        if (filter) {
            int may = 1;
            int rc = qv_expr_prune_row_group(filter, rd, g, &may, r, err);
            if (rc) {
                qv__plan_free(p, r);
                return rc;
            }
            if (!may) {
                p->row_groups_pruned++;
                continue;
            }
        }
        p->units[p->n_units++] = u;
    }
    return 0;
}

int qv_scan_plan_splits(const struct qv_reader *rd, uint64_t target_bytes, int64_t *bounds,
                        int64_t cap, int64_t *n, struct qv_error *err) {
    int64_t nrg = qv_reader_num_row_groups(rd);
    int64_t k = 0;
    uint64_t acc = 0;
    *n = 0;
    for (int64_t g = 0; g < nrg; g++) {
        if (g == 0 || acc >= target_bytes) {
            if (k + 1 >= cap)
                return qv_error_set(err, ENOSPC, "scan: more than %lld splits of %llu bytes",
                                    (long long)(cap - 1), (unsigned long long)target_bytes);
            bounds[k++] = g;
            acc = 0;
        }
        acc += qv_reader_row_group_bytes(rd, g);
    }
    if (k >= cap) return qv_error_set(err, ENOSPC, "scan: bounds array too small");
    bounds[k] = nrg;
    *n = k;
    return 0;
}
