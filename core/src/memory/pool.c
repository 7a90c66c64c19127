/* The pool: a byte budget of its own or a host's, shared by reservations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dcheck.h"
#include "memory/memory_internal.h"
#include "memory/memory_testing.h"

#define QV_CACHE_DEFAULT (UINT64_C(64) << 20)

#define RELAXED memory_order_relaxed

int qv_pool_create(const struct qv_pool_options *opts, struct qv_pool **out,
                   struct qv_error *err) {
    static const struct qv_pool_options defaults = {0};
    if (!out) return qv_error_set(err, EINVAL, "qv_pool_create: out is NULL");
    *out = NULL;
    if (!opts) opts = &defaults;
    if (opts->host && (!opts->host->acquire || !opts->host->release))
        return qv_error_set(err, EINVAL,
                            "qv_pool_create: host of pool '%s' lacks acquire or release",
                            opts->name ? opts->name : "pool");
    uint64_t block = opts->block_size ? opts->block_size : QV_DEFAULT_BLOCK_SIZE;
    block = (block + QV_ALIGNMENT - 1) & ~(uint64_t)(QV_ALIGNMENT - 1);
    if (block == 0 || block > (UINT64_C(1) << 40))
        return qv_error_set(err, EINVAL, "qv_pool_create: block size %llu out of range",
                            (unsigned long long)opts->block_size);
    struct qv_pool *p = calloc(1, sizeof *p);
    if (!p) return qv_error_set(err, ENOMEM, "qv_pool_create: out of memory");
    snprintf(p->name, sizeof p->name, "%s", opts->name ? opts->name : "pool");
    p->block = block;
    p->keep = block * (opts->release_blocks ? opts->release_blocks : 2);
    /* Reservations share the pool's blocks: each keeps at most a small
     * slack of its own, so reserved bytes follow used bytes however many
     * reservations there are (one per column of every batch held). */
    p->res_slack = block < QV_RESERVATION_SLACK_MAX ? block : QV_RESERVATION_SLACK_MAX;
    p->grain_max = (p->res_slack / 2) & ~(uint64_t)(QV_ALIGNMENT - 1);
    if (p->grain_max < QV_ALIGNMENT) p->grain_max = QV_ALIGNMENT;
    p->grain_min = p->grain_max < 16384 ? p->grain_max : 16384;
    p->cache_cap = opts->no_block_cache ? 0
                   : opts->limit && !opts->host ? (opts->limit / 8 < QV_CACHE_DEFAULT ? opts->limit / 8
                                                                                       : QV_CACHE_DEFAULT)
                                                : QV_CACHE_DEFAULT;
    if (opts->host) {
        p->has_host = 1;
        p->host = *opts->host;
    } else {
        p->limit = opts->limit;
    }
    if (qv_mutex_init(&p->lock) != 0) {
        free(p);
        return qv_error_set(err, ENOMEM, "qv_pool_create: cannot create lock");
    }
    if (qv_cond_init(&p->cond) != 0) {
        qv_mutex_destroy(&p->lock);
        free(p);
        return qv_error_set(err, ENOMEM, "qv_pool_create: cannot create condition");
    }
    atomic_init(&p->refs, 1);
    *out = p;
    return 0;
}

struct qv_pool *qv_pool_retain(struct qv_pool *pool) {
    atomic_fetch_add_explicit(&pool->refs, 1, RELAXED);
    return pool;
}

void qv_pool_destroy(struct qv_pool *pool) {
    if (!pool) return;
    /* Acquire-release: the last holder sees every other holder's writes
     * (their reservations' final charges) before it tears the pool down. */
    if (atomic_fetch_sub_explicit(&pool->refs, 1, memory_order_acq_rel) != 1) return;
    /* The contract: every reservation is gone, and with it every charge. */
    QV_DCHECK(atomic_load(&pool->nres) == 0 && pool->head == NULL);
    QV_DCHECK(atomic_load(&pool->reserved) == 0);
    qv__cache_clear(pool);
    uint64_t held = atomic_load(&pool->host_held);
    if (pool->has_host && held) {
        pool->host.release(pool->host.ctx, held);
        atomic_fetch_add(&pool->host_release_calls, 1);
        atomic_fetch_add(&pool->host_bytes_released, held);
    }
    qv_cond_destroy(&pool->cond);
    qv_mutex_destroy(&pool->lock);
    if (pool->has_host && pool->host.finish) pool->host.finish(pool->host.ctx);
    free(pool);
}

const char *qv_pool_name(const struct qv_pool *pool) { return pool->name; }

void qv_pool_get_stats(const struct qv_pool *pool, struct qv_pool_stats *out) {
    struct qv_pool *p = (struct qv_pool *)pool;
    memset(out, 0, sizeof *out);
    out->reserved = atomic_load_explicit(&p->reserved, RELAXED);
    out->peak_reserved = atomic_load_explicit(&p->peak_reserved, RELAXED);
    out->host_held = atomic_load_explicit(&p->host_held, RELAXED);
    out->host_acquire_calls = atomic_load_explicit(&p->host_acquire_calls, RELAXED);
    out->host_release_calls = atomic_load_explicit(&p->host_release_calls, RELAXED);
    out->host_bytes_acquired = atomic_load_explicit(&p->host_bytes_acquired, RELAXED);
    out->host_bytes_released = atomic_load_explicit(&p->host_bytes_released, RELAXED);
    out->spill_calls = atomic_load_explicit(&p->spill_calls, RELAXED);
    out->oom_count = atomic_load_explicit(&p->oom_count, RELAXED);
    out->limit = p->limit;
    out->block_size = p->block;
    out->reservations = atomic_load_explicit(&p->nres, RELAXED);
    out->cache_bytes = atomic_load_explicit(&p->cache_bytes, RELAXED);
    out->cache_hits = atomic_load_explicit(&p->cache_hits, RELAXED);
    out->cache_misses = atomic_load_explicit(&p->cache_misses, RELAXED);
}

uint64_t qv_pool_alloc_count(const struct qv_pool *pool) {
    struct qv_pool *p = (struct qv_pool *)pool;
    qv_mutex_lock(&p->lock);
    uint64_t n = p->retired_allocs;
    for (struct qv_res_impl *r = p->head; r; r = r->next) n += r->pub.allocs;
    qv_mutex_unlock(&p->lock);
    return n;
}

uint64_t qv_pool_used(const struct qv_pool *pool) {
    struct qv_pool *p = (struct qv_pool *)pool;
    qv_mutex_lock(&p->lock);
    uint64_t n = 0;
    for (struct qv_res_impl *r = p->head; r; r = r->next) n += r->pub.used;
    qv_mutex_unlock(&p->lock);
    return n;
}

void qv_pool_inject_alloc_failure(struct qv_pool *pool, uint64_t nth) {
    atomic_store(&pool->alloc_seen, 0);
    atomic_store(&pool->alloc_fail_at, nth);
}

void qv_pool_inject_acquire_failure(struct qv_pool *pool, uint64_t nth) {
    atomic_store(&pool->acquire_seen, 0);
    atomic_store(&pool->acquire_fail_at, nth);
}

uint64_t qv__pool_host_acquire(struct qv_pool *pool, uint64_t bytes) {
    atomic_fetch_add(&pool->host_acquire_calls, 1);
    uint64_t at = atomic_load_explicit(&pool->acquire_fail_at, RELAXED);
    if (at && atomic_fetch_add(&pool->acquire_seen, 1) + 1 == at) return 0;
    uint64_t got = pool->host.acquire(pool->host.ctx, bytes);
    if (got > bytes) got = bytes; /* a host granting more than asked is clamped */
    atomic_fetch_add(&pool->host_bytes_acquired, got);
    return got;
}

void qv__pool_note_peak(struct qv_pool *pool, uint64_t v) {
    if (v > atomic_load_explicit(&pool->peak_reserved, RELAXED))
        atomic_store_explicit(&pool->peak_reserved, v, RELAXED);
}

/* The pool keeps up to `keep` bytes acquired but unreserved, so usage that
 * oscillates near a block boundary does not call the host each time; past
 * that it returns everything above one block of slack in a single call. */
uint64_t qv__pool_trim_host(struct qv_pool *pool) {
    if (!pool->has_host) return 0;
    uint64_t give = 0;
    qv_mutex_lock(&pool->lock);
    uint64_t held = atomic_load_explicit(&pool->host_held, RELAXED);
    uint64_t reserved = atomic_load_explicit(&pool->reserved, RELAXED) +
                        atomic_load_explicit(&pool->cache_bytes, RELAXED);
    if (!pool->acquiring && !pool->releasing && held > reserved && held - reserved > pool->keep) {
        uint64_t target = (reserved + pool->block - 1) / pool->block * pool->block + pool->block;
        if (target < held) {
            give = held - target;
            atomic_store_explicit(&pool->host_held, target, RELAXED);
        }
    }
    qv_mutex_unlock(&pool->lock);
    if (give) {
        pool->host.release(pool->host.ctx, give);
        atomic_fetch_add(&pool->host_release_calls, 1);
        atomic_fetch_add(&pool->host_bytes_released, give);
    }
    return give;
}
