/* Private structures shared by the pool, reservation and allocator files. */
#ifndef QV_MEMORY_INTERNAL_H
#define QV_MEMORY_INTERNAL_H

#include <stdatomic.h>

#include "base/thread.h"
#include "quiver/memory.h"

#define QV_NAME_MAX 64
/* Blocks the block cache (cache.c) keeps at most: enough that its byte cap
 * (64 MiB by default) binds first for scan-sized blocks. With 64 slots, a
 * scan whose batches were all held (to_arrow) and then freed kept only 64
 * of its 92 half-MiB blocks of l_orderkey (lineitem SF1): every repeat of
 * that read faulted 10k fresh pages (37 ms of CPU against 13 ms without). */
#define QV_CACHE_SLOTS 256
#define QV_CACHE_MIN_BLOCK (64u * 1024)

/* A reservation as the pool sees it. The public part comes first so the
 * inline fast paths in memory.h work on the same object. Fields below it are
 * guarded by the pool lock. */
struct qv_res_impl {
    struct qv_reservation pub;
    char name[QV_NAME_MAX];
    int can_spill;
    qv_spill_fn spill;
    void *spill_ctx;
    uint64_t peak_held;
    int pins; /* spill callbacks in flight; free waits for 0 */
    struct qv_res_impl *prev, *next;
};

struct qv_pool {
    char name[QV_NAME_MAX];
    uint64_t limit;
    int has_host;
    struct qv_pool_host host;
    uint64_t block;
    uint64_t keep;      /* slack towards the host kept after shrinking */
    /* Reservation slack (reservation.c): each reservation holds at most
     * res_slack bytes beyond its use; a grow past what it holds takes an
     * eighth of its use more, between grain_min and grain_max. */
    uint64_t res_slack, grain_min, grain_max;

    /* References (qv_pool_retain); the last qv_pool_destroy destroys. */
    _Atomic long refs;

    qv_mutex lock;
    qv_cond cond;            /* host single-flight and spill pins */
    int acquiring;           /* a thread is inside host->acquire */
    int releasing;           /* qv_pool_release_unused calls running: the
                                hysteresis trim waits for them, so that what
                                their spill callbacks free is counted by them */
    struct qv_res_impl *head;
    uint64_t retired_allocs; /* allocation counts of freed reservations */

    /* Written under the lock, read lock-free. */
    _Atomic uint64_t reserved, peak_reserved, host_held;
    _Atomic uint64_t host_acquire_calls, host_release_calls;
    _Atomic uint64_t host_bytes_acquired, host_bytes_released;
    _Atomic uint64_t spill_calls, oom_count;
    _Atomic uint32_t nres;

    /* Large freed blocks kept for reuse (cache.c), guarded by `lock`. Their
     * bytes count against the budget (cache_bytes) like reserved bytes, and
     * are evicted before anyone is asked to spill or the host is called. */
    void *cache_ptr[QV_CACHE_SLOTS];
    size_t cache_size[QV_CACHE_SLOTS];
    int cache_n;
    uint64_t cache_cap;
    _Atomic uint64_t cache_bytes, cache_hits, cache_misses;

    /* Fault injection: armed flags are read with a plain relaxed load on the
     * hot path; counters move only while armed. */
    _Atomic uint64_t alloc_fail_at, alloc_seen;
    _Atomic uint64_t acquire_fail_at, acquire_seen;
};

static inline struct qv_res_impl *qv__res_impl(struct qv_reservation *r) {
    return (struct qv_res_impl *)r;
}

/* Counts an allocation for the injector; nonzero means "fail this one".
 * Inline so the unarmed case is one relaxed load on the allocation path. */
static inline int qv__pool_inject_alloc(struct qv_pool *pool) {
    uint64_t at = atomic_load_explicit(&pool->alloc_fail_at, memory_order_relaxed);
    if (__builtin_expect(at == 0, 1)) return 0;
    return atomic_fetch_add(&pool->alloc_seen, 1) + 1 == at;
}
/* The block cache (cache.c). put: keeps the block if the cache and the
 * budget have room (returns 1), else 0 and the caller frees it.
 * evict_locked: frees cached blocks until `need` more bytes fit the budget
 * (lock held). */
int qv__cache_put(struct qv_pool *pool, void *ptr, size_t size);
void qv__cache_evict_locked(struct qv_pool *pool, uint64_t need);
void qv__cache_clear(struct qv_pool *pool);
/* With the pool lock held (reservation.c), for the allocator's paths that
 * lock anyway for the block cache: grow_locked charges `bytes` from slack or
 * the pool's free space and returns 0, or ENOMEM when that needs the slow
 * path (the host, spilling, an error message), charging nothing (cached
 * blocks may have been evicted, as the slow path would).
 * shrink_locked uncharges like qv_reservation_shrink. should_trim_locked:
 * the pool holds more host memory than its hysteresis allows. */
int qv__reservation_grow_locked(struct qv_reservation *r, uint64_t bytes);
void qv__reservation_shrink_locked(struct qv_reservation *r, uint64_t bytes);
int qv__pool_should_trim_locked(struct qv_pool *pool);
/* The allocator's large-block paths (cache.c): one lock for the cache and
 * the charge. take_charge: takes a cached block of `size` into *ptr (or
 * NULL) and charges `size` to r; returns 0 when charged, else nonzero and
 * the caller charges through qv_reservation_grow (a block taken is still
 * in *ptr). put_uncharge: uncharges `size` from r and keeps the block in
 * the cache or frees it. */
int qv__cache_take_charge(struct qv_pool *pool, struct qv_reservation *r, size_t size, void **ptr);
void qv__cache_put_uncharge(struct qv_pool *pool, struct qv_reservation *r, void *ptr, size_t size);
/* Calls the host (no lock held); applies acquire injection; returns granted. */
uint64_t qv__pool_host_acquire(struct qv_pool *pool, uint64_t bytes);
/* Gives pool-level surplus back to the host, with hysteresis. Call with no
 * lock held. Returns the bytes given back. */
uint64_t qv__pool_trim_host(struct qv_pool *pool);
/* Runs r's spill callback (no lock held, r pinned by the caller) with
 * growing refused on this thread meanwhile; counts the call. Returns what
 * the callback says it freed. */
uint64_t qv__spill_call(struct qv_res_impl *r, uint64_t wanted);
/* qsort order of reservation pointers: the most held first. */
int qv__cmp_held_desc(const void *a, const void *b);
/* Frees the most recently cached block (lock held); returns its size, 0
 * when the cache is empty. */
uint64_t qv__cache_evict_one_locked(struct qv_pool *pool);
/* Raises peak_reserved to at least v (lock held). */
void qv__pool_note_peak(struct qv_pool *pool, uint64_t v);

#endif
