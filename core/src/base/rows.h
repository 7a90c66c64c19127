/*
 * Checks of row lists, the argument of every take: each row inside
 * [0, limit) and the list in order. Internal to the library.
 *
 * A take checks its rows at every level that is handed them (the column
 * reader, then each decoder), since each is also called on its own. The
 * check is one pass that reads every row; on a filter's projection of a
 * few hundred thousand rows the scalar loops were 9% of the scan, so an
 * AVX2 variant compares four rows a step (base/cpu_internal.h). Only when
 * a row is wrong is the list walked again to find the first one, for the
 * error message.
 */
#ifndef QV_BASE_ROWS_H
#define QV_BASE_ROWS_H

#include <stdbool.h>
#include <stdint.h>

/* The index of the first row of rows[0..n) outside [0, limit) or out of
 * order (strict: not above the row before it; otherwise below it), or -1
 * when there is none. */
int64_t qv__rows_first_bad(const int64_t *rows, int64_t n, int64_t limit, bool strict);

#endif
