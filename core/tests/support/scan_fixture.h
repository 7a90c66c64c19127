/* A small table for scan tests, written to a file: id int64 (0..n-1, sorted),
 * v int32 (nullable, 0..99), s utf8 (nullable, "s<v>"), d float64 (NaN
 * sometimes), tags list<int64>. Expected values are computable from the row
 * number, so tests check results without a second engine. */
#ifndef QV_TEST_SCAN_FIXTURE_H
#define QV_TEST_SCAN_FIXTURE_H

#include <math.h>
#include <stdint.h>

#include "quiver/format.h"

static inline int fx_v_null(int64_t i) { return i % 7 == 3; }
static inline int32_t fx_v(int64_t i) { return (int32_t)((i * 37) % 100); }
static inline double fx_d(int64_t i) { return i % 11 == 5 ? NAN : (double)(i % 1000) / 10.0; }

int fx_schema(struct qv_reservation *r, struct qv_schema **out);
/* Writes n rows to path with row groups of rg_rows (a failure's message on
 * stderr). */
int fx_write(const char *path, int64_t n, int64_t rg_rows, struct qv_reservation *r);
/* The same, keeping the writer's error in `err` (may be NULL). */
int fx_write_err(const char *path, int64_t n, int64_t rg_rows, struct qv_reservation *r,
                 struct qv_error *err);

#endif
