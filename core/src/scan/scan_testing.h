/*
 * Test knobs of the scan part. Not public, not exported from libquiver.so;
 * the C tests include this header through the core/src include directory
 * and link the static library.
 */
#ifndef QV_SCAN_TESTING_H
#define QV_SCAN_TESTING_H

#include "quiver/scan.h"

/* Whether scans opened from now on gather projected filter columns from the
 * values their filter decoded (1, the default) or decode them again by a
 * take (0, the path before the reuse), so a test can compare both. Process
 * wide; set it before opening scans, not while they run. */
void qv__scan_testing_reuse(int on);
/* Rows of a scan's output columns gathered from its filter's decoded values
 * so far (summed over columns). */
int64_t qv__scan_testing_reused_rows(const struct ArrowArrayStream *scan);

#endif
