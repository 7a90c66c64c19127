/*
 * Test knobs of the scan part. Not public, not exported from libquiver.so;
 * the C tests include this header through the core/src include directory
 * and link the static library.
 */
#ifndef QV_SCAN_TESTING_H
#define QV_SCAN_TESTING_H

#include <stdint.h>

#include "quiver/scan.h"

/* Whether scans opened from now on gather projected filter columns from the
 * values their filter decoded (1, the default) or decode them again by a
 * take (0, the path before the reuse), so a test can compare both. Process
 * wide; set it before opening scans, not while they run. */
void qv__scan_testing_reuse(int on);
/* Rows of a scan's output columns gathered from its filter's decoded values
 * so far (summed over columns). */
int64_t qv__scan_testing_reused_rows(const struct ArrowArrayStream *scan);

/* The next n creations of a second column reader (a twin, scan.c) fail with
 * ENOMEM as if the pool had refused them, in any scan of the process. Set
 * it with __atomic_store_n while no scan runs; it counts down. */
extern int qv__scan_twin_open_fail;

/* Columns of a filtered scan whose smoothed task time is below this many
 * nanoseconds get no twin (QV_SCAN_TWIN_MIN_NS in scan.c; narrow scans
 * ignore it); tests set 0 so that their small columns have twins too, or
 * INT64_MAX to make every column cheap. Set it with __atomic_store_n. */
extern int64_t qv__scan_twin_min_ns;

/* How many twins a scan (a stream of qv_scan_open) has made so far, and
 * how many it gave up for lack of memory (each then falls back to the
 * column's one reader). EINVAL for a stream that is not a scan's. */
int qv__scan_twin_counts(const struct ArrowArrayStream *stream, int32_t *opened, int32_t *dropped);

/* Whether a scan holds second readers at all (1: a narrow scan; 0: any
 * other, which allocates none); -1 for a stream that is not a scan's. */
int qv__scan_testing_has_twins(const struct ArrowArrayStream *stream);

#endif
