/*
 * Test knobs of the memory part: the allocation-failure injector and the
 * allocation counter. They exist so that every failure path can be driven
 * by a test (docs/conventions.md, "Memory"); they are no part of the public
 * surface and are not exported from libquiver.so.
 *
 * Users: the C tests (core/tests), the benchmarks, and the Python
 * extension's `_inject_alloc_failure` and `memory_stats()["allocations"]`,
 * all of which link the library statically and include this header through
 * the core/src include directory.
 */
#ifndef QV_MEMORY_TESTING_H
#define QV_MEMORY_TESTING_H

#include "quiver/memory.h"

/* Fail the Nth (1-based) allocation made through this pool (qv_alloc,
 * qv_realloc growth, and internal allocations of reservations), or the Nth
 * host acquire (which then grants 0). 0 disables. Counting starts at the call. */
void qv_pool_inject_alloc_failure(struct qv_pool *pool, uint64_t nth);
void qv_pool_inject_acquire_failure(struct qv_pool *pool, uint64_t nth);

/* Allocations made through the pool since creation: the sum of every
 * reservation's counter. Exact when the reservations are quiescent (tests,
 * benchmarks); it reads counters their owners update without atomics. */
uint64_t qv_pool_alloc_count(const struct qv_pool *pool);

#endif /* QV_MEMORY_TESTING_H */
