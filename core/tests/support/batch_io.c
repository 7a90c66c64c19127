#include "batch_io.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

void bio_borrowed_release(struct ArrowArray *a) { a->release = NULL; }

int bio_write_pieces(struct qv_writer *w, const struct ArrowArray *batch, const int64_t *cuts,
                     int n_cuts, struct qv_error *err) {
    int rc = 0;
    int64_t at = 0;
    for (int i = 0; i <= n_cuts && !rc; i++) {
        int64_t end = i < n_cuts ? cuts[i] : batch->length;
        struct ArrowArray part = *batch;
        part.offset += at;
        part.length = end - at;
        part.release = bio_borrowed_release;
        rc = qv_writer_write(w, &part, err);
        at = end;
    }
    return rc;
}

void bio_assert_slice_equal(const struct qv_schema *s, const struct ArrowArray *want, int64_t start,
                            const struct ArrowArray *got, int64_t rg) {
    assert_int_equal(got->length, want->length < start ? 0 : got->length);
    for (int64_t c = 0; c < s->root.n_children; c++) {
        struct ArrowArray view = *want->children[c];
        view.offset += start;
        view.length = got->length; /* a borrowed view: its release is never called */
        char why[512] = "";
        if (!qv_arrow_array_equal(&s->root.children[c], &view, got->children[c], why, sizeof why))
            fail_msg("rg %lld column %s: %s", (long long)rg, s->root.children[c].name, why);
    }
}

void bio_check_row_groups(struct qv_reader *rd, const struct qv_schema *s,
                          const struct ArrowArray *want, struct qv_reservation *r, int validate) {
    struct qv_error err;
    int64_t start = 0;
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++) {
        struct ArrowArray got;
        if (qv_reader_read_row_group(rd, g, NULL, 0, r, &got, &err))
            fail_msg("read rg %lld: %s", (long long)g, err.message);
        if (validate)
            assert_int_equal(qv_arrow_array_validate(&got, &s->root, QV_VALIDATE_FULL, &err), 0);
        bio_assert_slice_equal(s, want, start, &got, g);
        start += got.length;
        got.release(&got);
    }
    assert_int_equal(start, want->length);
}

void bio_check_take(struct qv_column_reader *cr, const struct qv_field *f,
                    const struct ArrowArray *want, int64_t first, const int64_t *rows, int64_t n,
                    int64_t rg) {
    struct qv_error err;
    struct ArrowArray got;
    if (qv_column_reader_take(cr, rows, n, &got, &err))
        fail_msg("take %s rg %lld: %s", f->name, (long long)rg, err.message);
    for (int64_t i = 0; i < n; i++) {
        struct ArrowArray one = got, w = *want;
        one.offset += i;
        one.length = 1;
        w.offset += first + rows[i];
        w.length = 1;
        char why[512];
        if (!qv_arrow_array_equal(f, &w, &one, why, sizeof why))
            fail_msg("take %s rg %lld row %lld: %s", f->name, (long long)rg, (long long)rows[i], why);
    }
    got.release(&got);
}

void bio_values_segment(struct qv_reader *rd, int64_t rg, int32_t c, int *index,
                        struct qv_segment_info *out) {
    struct qv_error err;
    int32_t node = qv_reader_column_node(rd, c);
    struct qv_chunk_info ci;
    assert_int_equal(qv_reader_chunk_info(rd, rg, node, &ci, &err), 0);
    for (int i = 0; i < ci.n_segments; i++) {
        assert_int_equal(qv_reader_segment_info(rd, rg, node, i, out, &err), 0);
        if (out->role == QV_SEGMENT_VALUES) {
            if (index) *index = i;
            return;
        }
    }
    fail_msg("rg %lld column %d: no values segment", (long long)rg, c);
}
