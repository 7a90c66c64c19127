/* A batch written in pieces and read back: the writes of borrowed slices
 * of it, and the checks of a file's row groups, and of takes from a
 * column, against it (the format tests' round trips). */
#ifndef QV_TEST_BATCH_IO_H
#define QV_TEST_BATCH_IO_H

#include "quiver/format.h"

/* The release of a borrowed view: marks it released, frees nothing. */
void bio_borrowed_release(struct ArrowArray *a);

/* Writes `batch` to w as n_cuts + 1 borrowed slices, cut at the ascending
 * row numbers cuts[0..n_cuts) (none: the whole batch at once). Returns 0
 * or the first write's error (err set). */
int bio_write_pieces(struct qv_writer *w, const struct ArrowArray *batch, const int64_t *cuts,
                     int n_cuts, struct qv_error *err);

/* Asserts `got` (row group rg, a struct batch of schema s) equals rows
 * [start, start + got->length) of `want`, column by column. */
void bio_assert_slice_equal(const struct qv_schema *s, const struct ArrowArray *want, int64_t start,
                            const struct ArrowArray *got, int64_t rg);

/* Reads every row group of rd whole (validated in full first when
 * `validate`) and asserts they hold the rows of `want` in order, all of
 * them. */
void bio_check_row_groups(struct qv_reader *rd, const struct qv_schema *s,
                          const struct ArrowArray *want, struct qv_reservation *r, int validate);

/* Takes rows[0..n) (sorted) of row group rg through cr, a reader of column
 * f, and asserts each row equals row first + rows[i] of `want` (the
 * column's array of the batch written). */
void bio_check_take(struct qv_column_reader *cr, const struct qv_field *f,
                    const struct ArrowArray *want, int64_t first, const int64_t *rows, int64_t n,
                    int64_t rg);

/* The segment info of the values segment of column c's chunk in row group
 * rg (fails the test when it has none). */
void bio_values_segment(struct qv_reader *rd, int64_t rg, int32_t c, int *index,
                        struct qv_segment_info *out);

#endif
