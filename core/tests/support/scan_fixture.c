#include "scan_fixture.h"

#include <stdio.h>
#include <string.h>

int fx_schema(struct qv_reservation *r, struct qv_schema **out) {
    static const struct qv_field item = {.name = "item", .type = QV_TYPE_INT64, .nullable = true};
    static const struct qv_field cols[] = {
        {.name = "id", .type = QV_TYPE_INT64, .nullable = false},
        {.name = "v", .type = QV_TYPE_INT32, .nullable = true},
        {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
        {.name = "d", .type = QV_TYPE_FLOAT64, .nullable = true},
        {.name = "tags", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = &item},
    };
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 5,
                                         .children = cols};
    return qv_schema_create(&root, r, out, NULL);
}

int fx_write_err(const char *path, int64_t n, int64_t rg_rows, struct qv_reservation *r,
                 struct qv_error *err) {
    struct qv_schema *s;
    int rc = fx_schema(r, &s);
    if (rc) return rc;
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = rg_rows};
    rc = qv_writer_open(path, s, &o, r, &w, err);
    if (rc) {
        qv_schema_destroy(s);
        return rc;
    }
    struct qv_builder *b = qv_writer_builder(w);
    struct qv_appender *a[5];
    for (int c = 0; c < 5; c++) a[c] = qv_builder_column(b, c);
    for (int64_t i = 0; i < n && !rc; i++) {
        rc = qv_append_int64(a[0], i);
        if (!rc) rc = fx_v_null(i) ? qv_append_null(a[1]) : qv_append_int32(a[1], fx_v(i));
        if (!rc) {
            char buf[16];
            int len = snprintf(buf, sizeof buf, "s%d", fx_v(i));
            rc = fx_v_null(i) ? qv_append_null(a[2]) : qv_append_string(a[2], buf, (size_t)len);
        }
        if (!rc) rc = qv_append_float64(a[3], fx_d(i));
        if (!rc) rc = qv_append_list_begin(a[4]);
        for (int64_t k = 0; !rc && k < i % 3; k++) rc = qv_append_int64(qv_appender_child(a[4], 0), i + k);
        if (!rc) rc = qv_append_list_end(a[4]);
        if (!rc && i % 1000 == 999) rc = qv_writer_end_rows(w, err);
    }
    if (!rc) rc = qv_writer_end_rows(w, err);
    if (!rc) rc = qv_writer_finish(w, err);
    qv_writer_close(w);
    qv_schema_destroy(s);
    return rc;
}

int fx_write(const char *path, int64_t n, int64_t rg_rows, struct qv_reservation *r) {
    struct qv_error err;
    int rc = fx_write_err(path, n, rg_rows, r, &err);
    if (rc) fprintf(stderr, "fx_write: %s\n", err.message);
    return rc;
}
