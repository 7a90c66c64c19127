/*
 * Quiver memory: the pool (a byte budget, or a host such as Spark's
 * TaskMemoryManager), reservations held by consumers, and the accounting
 * allocator every data buffer goes through.
 *
 * Accounting is batched at two levels. A reservation holds a little more
 * than it uses (its slack); growing inside that slack is a compare and an
 * add on fields only its owner touches (no atomic, no lock). Running out of
 * slack takes the pool lock and a new slack of an eighth of the use (16 KiB
 * to 32 KiB). The pool alone talks to the host, in whole blocks (default
 * 1 MiB): reservations share the pool's blocks, so a thousand small
 * reservations are charged their bytes, not a thousand blocks. Surplus goes
 * back with hysteresis at both levels: a reservation returns slack once it
 * exceeds its cap, the pool returns host memory once it holds
 * `release_blocks` blocks more than it needs.
 *
 * The bound, for any pattern of use (stated also in docs/memory.md):
 *  - each reservation: held - used <= min(block, QV_RESERVATION_SLACK_MAX),
 *    and right after it grows, held - used <= max(16 KiB, used / 8) as well;
 *  - the pool: reserved = the sum of held, so reserved <= the sum of used +
 *    reservations * min(block, QV_RESERVATION_SLACK_MAX);
 *  - towards a host: host_held <= reserved + cache_bytes
 *    + max(release_blocks, 2) * block, apart from a grow in flight.
 *
 * Threading: a pool is thread-safe. A reservation belongs to one thread at a
 * time (its owner); different reservations of one pool may be used from
 * different threads concurrently. Pool statistics are readable lock-free.
 */
#ifndef QUIVER_MEMORY_H
#define QUIVER_MEMORY_H

#include "quiver/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QV_DEFAULT_BLOCK_SIZE (UINT64_C(1) << 20)
/* The most slack (held - used) one reservation keeps, when the pool's block
 * is not smaller. */
#define QV_RESERVATION_SLACK_MAX (UINT64_C(64) << 10)

/* A host budget: the pool asks it for bytes in whole pool blocks.
 * `acquire` returns how many of `bytes` it grants, 0..bytes; it may block.
 * `release` gives bytes back. Both are called with no Quiver lock held, from
 * whichever thread needs the memory. `finish`, optional, is called once when
 * the pool is destroyed, after its last `release` and on the thread that
 * dropped the last reference: the host may free `ctx` then. A pool outlives
 * the call that destroys it while others hold references (qv_pool_retain),
 * so `finish` is how a host whose ctx must stay valid until then (a JNI
 * global reference) learns when it may let go. */
struct qv_pool_host {
    void *ctx;
    uint64_t (*acquire)(void *ctx, uint64_t bytes);
    void (*release)(void *ctx, uint64_t bytes);
    void (*finish)(void *ctx);
    /* Optional: writes (NUL-terminated, at most cap bytes) why the host
     * last granted less than asked, or an empty string, for the pool's
     * out-of-memory message: a JNI host keeps the message of the exception
     * its budget threw. Called with the pool lock held, so it may only read
     * what ctx already holds (no call into the host's runtime). */
    void (*describe)(void *ctx, char *buf, size_t cap);
};

struct qv_pool_options {
    const char *name;          /* for messages; copied. NULL: "pool" */
    uint64_t limit;            /* own byte limit; 0 = unlimited. Ignored with a host. */
    const struct qv_pool_host *host; /* optional; copied */
    /* The unit in which the pool acquires from its host; also caps a
     * reservation's slack (min(block_size, QV_RESERVATION_SLACK_MAX)).
     * 0 = QV_DEFAULT_BLOCK_SIZE; rounded up to 64. */
    uint64_t block_size;
    /* Host memory, in blocks, the pool keeps beyond what its reservations
     * hold before it gives memory back to the host. 0 = default (2). */
    uint32_t release_blocks;
    /* Nonzero: no block cache. By default blocks of 64 KiB and more freed
     * through the pool are kept for reuse, up to 64 MiB (an eighth of an
     * own limit), charged to the budget and evicted before any grow has to
     * wait, spill or fail. */
    int no_block_cache;
};

struct qv_pool;

/* Creates a pool. On success *out holds its one reference; release with
 * qv_pool_destroy. */
QV_API int qv_pool_create(const struct qv_pool_options *opts, struct qv_pool **out,
                   struct qv_error *err);
/* Takes another reference to the pool, for a user whose life is not bounded
 * by its creator's: the file layer retains a caller's pool for as long as a
 * file, stream or batch of it charges the pool, so a front end may drop its
 * own pool (Java's NativePool.close) while batches it handed out live on.
 * Thread-safe; returns `pool`. */
QV_API struct qv_pool *qv_pool_retain(struct qv_pool *pool);
/* Drops a reference (NULL-safe); the last one destroys the pool: every
 * reservation must have been freed by then, remaining host bytes are
 * released to the host, and the host's `finish` is called. */
QV_API void qv_pool_destroy(struct qv_pool *pool);

struct qv_pool_stats {
    uint64_t reserved;       /* bytes held by reservations: their use plus at most
                                min(block, QV_RESERVATION_SLACK_MAX) slack each */
    uint64_t peak_reserved;
    uint64_t host_held;      /* bytes currently acquired from the host */
    uint64_t host_acquire_calls;
    uint64_t host_release_calls;
    uint64_t host_bytes_acquired;
    uint64_t host_bytes_released;
    uint64_t spill_calls;
    uint64_t oom_count;
    uint64_t limit;          /* 0 = unlimited (or host-backed) */
    uint64_t block_size;
    uint32_t reservations;   /* live reservations */
    uint64_t cache_bytes;    /* freed large blocks kept for reuse (counted in the budget) */
    uint64_t cache_hits, cache_misses;
};
/* Lock-free snapshot (each field is read atomically; the set is not a
 * transaction). */
QV_API void qv_pool_get_stats(const struct qv_pool *pool, struct qv_pool_stats *out);
QV_API const char *qv_pool_name(const struct qv_pool *pool);

/* Bytes charged through the pool now: the sum of every live reservation's
 * `used` (what qv_alloc handed out, padded to 64, plus direct grows). Exact
 * when the reservations are quiescent (it reads counters their owners update
 * without atomics); compare it with stats.reserved to see the slack. The
 * test knobs (failure injection, allocation count) are internal:
 * core/src/memory/memory_testing.h. */
QV_API uint64_t qv_pool_used(const struct qv_pool *pool);

/* Gives memory back to the host now, for a host that was asked to free
 * memory (Spark's MemoryConsumer.spill). In order, until `wanted` bytes have
 * gone back: evicts the block cache, returns the pool's surplus host blocks
 * (host_held beyond what reservations hold, whole blocks), then runs the
 * spill callbacks of spillable reservations (largest first) and returns what
 * they freed. Returns the bytes actually released to the host by this call
 * (0 for a pool without a host: nothing is then returned anywhere, though
 * the cache is still evicted). `wanted` of 0 means "all that can go".
 *
 * It may be called from any thread, including from inside this pool's own
 * host acquire (Spark spills the requesting consumer itself last, on the
 * thread that asked): it takes no lock across a host call and never waits
 * for a grow in flight, so it cannot deadlock with one; what a grow in
 * flight holds is simply not released. */
QV_API uint64_t qv_pool_release_unused(struct qv_pool *pool, uint64_t wanted);

/* ---- Reservations ---- */

struct qv_reservation;

/* A spill callback frees memory of a spillable consumer when the pool runs
 * short. It is called on the thread that asked for memory, with no pool lock
 * held. It gives memory back with qv_reservation_shrink (or qv_free) on `r`,
 * its own reservation, then qv_reservation_release_slack(r), and returns the
 * number of bytes it freed. It must not grow any reservation: a grow from
 * inside a spill callback fails with EDEADLK. A consumer whose reservation is
 * used from another thread synchronizes the callback with that thread. */
typedef uint64_t (*qv_spill_fn)(void *ctx, struct qv_reservation *r, uint64_t wanted);

struct qv_reservation_options {
    const char *name;        /* copied; NULL: "reservation" */
    int can_spill;
    qv_spill_fn spill;       /* optional; only used when can_spill */
    void *spill_ctx;
};

/* The hot fields are public so that the in-block fast paths inline. Treat
 * them as read-only; only the functions below change them. */
struct qv_reservation {
    uint64_t used;   /* exact bytes charged */
    uint64_t held;   /* bytes held from the pool (>= used, <= used + keep) */
    uint64_t peak;   /* peak of used */
    uint64_t keep;   /* most slack held: min(block, QV_RESERVATION_SLACK_MAX) */
    uint64_t allocs; /* allocations made through qv_alloc/qv_realloc */
    struct qv_pool *pool;
};

/* Creates a reservation in `pool` holding nothing. On success *out is owned by
 * the caller; release with qv_reservation_destroy. */
QV_API int qv_reservation_create(struct qv_pool *pool, const struct qv_reservation_options *opts,
                          struct qv_reservation **out, struct qv_error *err);
/* Gives everything back and destroys the reservation. NULL-safe. Bytes still
 * charged are a caller bug: they are returned anyway and counted in the
 * pool's stats as released. */
QV_API void qv_reservation_destroy(struct qv_reservation *r);
QV_API const char *qv_reservation_name(const struct qv_reservation *r);

/* The out-of-line halves of the inline functions below: exported because
 * those inline functions call them from the user's code, but not for direct
 * use (the qv__ prefix says so; their contract is the inline callers'). */
QV_API int qv__reservation_grow_slow(struct qv_reservation *r, uint64_t bytes, int try_only,
                              struct qv_error *err);
QV_API void qv__reservation_shrink_slow(struct qv_reservation *r);

/* Charges `bytes`. ENOMEM with the pool's message when the budget (after
 * spilling) cannot cover it; nothing is charged then. */
static inline int qv_reservation_grow(struct qv_reservation *r, uint64_t bytes,
                                      struct qv_error *err) {
    if (bytes <= r->held - r->used) {
        r->used += bytes;
        if (r->used > r->peak) r->peak = r->used;
        return 0;
    }
    return qv__reservation_grow_slow(r, bytes, 0, err);
}
/* Like grow, but never spills other consumers or blocks on a host beyond one
 * acquire; ENOMEM (with a message) when the memory is not there now. */
static inline int qv_reservation_try_grow(struct qv_reservation *r, uint64_t bytes,
                                          struct qv_error *err) {
    if (bytes <= r->held - r->used) {
        r->used += bytes;
        if (r->used > r->peak) r->peak = r->used;
        return 0;
    }
    return qv__reservation_grow_slow(r, bytes, 1, err);
}
/* Uncharges `bytes` (clamped to what is charged). Once slack exceeds
 * `keep`, all but a small grain of it goes back to the pool. */
static inline void qv_reservation_shrink(struct qv_reservation *r, uint64_t bytes) {
    r->used -= bytes < r->used ? bytes : r->used;
    if (r->held - r->used > r->keep) qv__reservation_shrink_slow(r);
}
/* Sets the charge to exactly `bytes` (grow or shrink). */
QV_API int qv_reservation_resize(struct qv_reservation *r, uint64_t bytes, struct qv_error *err);
/* Moves `bytes` of charge (and the held memory behind it) from `r` into a new
 * reservation with the same options and name suffixed with `name_suffix`
 * (NULL: "split"). EINVAL when r has less than `bytes` charged. */
QV_API int qv_reservation_split(struct qv_reservation *r, uint64_t bytes, const char *name_suffix,
                         struct qv_reservation **out, struct qv_error *err);
/* Moves `bytes` of charge from `from` to `to`, for a block allocated under
 * one reservation whose ownership passes to a consumer of another (a
 * decoder's scratch becoming a batch's buffer). `to` is charged first; on
 * failure (ENOMEM) nothing changes. The caller must own both reservations.
 * The block's size for qv_free is unchanged; free it under `to` afterwards. */
QV_API int qv_reservation_transfer(struct qv_reservation *from, struct qv_reservation *to,
                            uint64_t bytes, struct qv_error *err);
/* Returns all slack (held - used) to the pool now: for a consumer that is
 * done growing and keeps what it has (a finished batch column). */
QV_API void qv_reservation_release_slack(struct qv_reservation *r);

static inline uint64_t qv_reservation_used(const struct qv_reservation *r) { return r->used; }
static inline uint64_t qv_reservation_peak(const struct qv_reservation *r) { return r->peak; }
static inline uint64_t qv_reservation_held(const struct qv_reservation *r) { return r->held; }
static inline uint64_t qv_reservation_alloc_count(const struct qv_reservation *r) {
    return r->allocs;
}
static inline struct qv_pool *qv_reservation_pool(const struct qv_reservation *r) {
    return r->pool;
}

/* ---- The accounting allocator ----
 * 64-byte aligned, sizes padded to 64; the padded size is charged to `r`.
 * Frees are sized (the caller passes the size it asked for), as in Arrow's
 * memory pools, so no header is stored next to the data. */

/* Returns a block owned by the caller (free with qv_free), or NULL with
 * ENOMEM in err when the budget or malloc fails (or a test injected a failure);
 * nothing is charged then. A size of 0 is treated as 1 (a valid, freeable
 * block), so a NULL return always means failure. */
QV_API void *qv_alloc(struct qv_reservation *r, size_t size, struct qv_error *err);
/* Like qv_alloc, zero-filled. */
QV_API void *qv_calloc(struct qv_reservation *r, size_t size, struct qv_error *err);
/* Resizes a block from qv_alloc (or NULL with old_size 0). On failure returns
 * NULL and the old block is untouched and still owned by the caller. */
QV_API void *qv_realloc(struct qv_reservation *r, void *ptr, size_t old_size, size_t new_size,
                 struct qv_error *err);
/* Frees a block from qv_alloc; `size` is the size it was allocated with. */
QV_API void qv_free(struct qv_reservation *r, void *ptr, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_MEMORY_H */
