#include "fx_file.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "scan_fixture.h"
#include "test_util.h"

void fx_file_open(struct fx_file *f, const char *name, int64_t rows, int64_t rg_rows) {
    assert_int_equal(qv_pool_create(NULL, &f->pool, NULL), 0);
    assert_int_equal(qv_reservation_create(f->pool, NULL, &f->res, NULL), 0);
    tu_path(f->path, sizeof f->path, name);
    assert_int_equal(fx_write(f->path, rows, rg_rows, f->res), 0);
    f->bytes = tu_read_file(f->path, &f->size);
    assert_non_null(f->bytes);
}

void fx_file_close(struct fx_file *f) {
    unlink(f->path);
    free(f->bytes);
    qv_reservation_destroy(f->res);
    struct qv_pool_stats st;
    qv_pool_get_stats(f->pool, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(f->pool);
}

void fx_file_pool_is_clean(const struct fx_file *f) {
    struct qv_pool_stats st;
    qv_pool_get_stats(f->pool, &st);
    assert_int_equal(st.reservations, 1); /* only the test's own */
}
