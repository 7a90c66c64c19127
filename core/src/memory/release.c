/* Giving memory back to the host on request (qv_pool_release_unused): what
 * a host calls when it is itself asked for memory, as Spark asks a
 * MemoryConsumer to spill. The pool's own hysteresis keeps a few blocks for
 * the next grow and the block cache keeps freed blocks for reuse; both are
 * right while memory is plentiful and wrong once someone else needs it, so
 * this call drops them first and only then asks consumers to spill.
 *
 * It must work from inside the pool's own host acquire (Spark asks the
 * requesting consumer to spill last, on the thread that asked, and that
 * consumer is this pool's host), so it never waits for the grow in flight:
 * host_held does not yet include what that grow is being granted, and
 * anything beyond reserved and cached bytes is surplus now whatever the
 * grow gets. The grow re-checks what is available when its host call
 * returns, as it does after every wait. */
#include <stdlib.h>

#include "memory/memory_internal.h"

#define RELAXED memory_order_relaxed

/* Host memory the pool holds beyond its reservations and its cache (lock held). */
static uint64_t surplus_locked(struct qv_pool *p) {
    uint64_t held = atomic_load_explicit(&p->host_held, RELAXED);
    uint64_t in_use = atomic_load_explicit(&p->reserved, RELAXED) +
                      atomic_load_explicit(&p->cache_bytes, RELAXED);
    return held > in_use ? held - in_use : 0;
}

/* Takes up to `want` bytes of surplus off host_held, in whole blocks unless
 * the surplus is smaller (lock held). The caller releases them to the host
 * after unlocking. */
static uint64_t take_surplus_locked(struct qv_pool *p, uint64_t want) {
    uint64_t surplus = surplus_locked(p);
    uint64_t give = surplus;
    if (want < surplus) {
        uint64_t blocks = want / p->block + (want % p->block != 0);
        give = blocks <= surplus / p->block ? blocks * p->block : surplus;
    }
    atomic_store_explicit(&p->host_held, atomic_load_explicit(&p->host_held, RELAXED) - give,
                          RELAXED);
    return give;
}

/* The hysteresis trim (pool.c) is held off while this runs: a spill
 * callback's free would otherwise hand its memory to the host under the
 * trim's account, and this call could not say what it released. */
static void to_host(struct qv_pool *p, uint64_t bytes) {
    if (!bytes) return;
    p->host.release(p->host.ctx, bytes);
    atomic_fetch_add(&p->host_release_calls, 1);
    atomic_fetch_add(&p->host_bytes_released, bytes);
}

uint64_t qv_pool_release_unused(struct qv_pool *p, uint64_t wanted) {
    if (!p) return 0;
    uint64_t want = wanted ? wanted : UINT64_MAX;
    qv_mutex_lock(&p->lock);
    if (!p->has_host) {
        /* Nothing goes back to anyone, but cached blocks are real process
         * memory: free them (malloc's memory, not a budget's). Spilling
         * consumers of an own-limit pool would only trade their data for
         * room nobody asked for, so it stops here. */
        uint64_t freed = 0;
        while (freed < want && p->cache_n > 0) freed += qv__cache_evict_one_locked(p);
        qv_mutex_unlock(&p->lock);
        return 0;
    }
    p->releasing++;
    /* 1. The block cache, until the surplus covers what is wanted. */
    while (p->cache_n > 0 && surplus_locked(p) < want) qv__cache_evict_one_locked(p);
    /* 2. The surplus: hysteresis blocks, and what the eviction left unused. */
    uint64_t released = take_surplus_locked(p, want);
    if (released >= want) {
        p->releasing--;
        qv_mutex_unlock(&p->lock);
        to_host(p, released);
        return released;
    }
    /* 3. Spillable consumers, the largest first, pinned so that none is
     * destroyed while its callback runs; each callback's memory goes back
     * to the host as soon as it returns. */
    uint64_t n = atomic_load_explicit(&p->nres, RELAXED);
    struct qv_res_impl **cand = n ? malloc((size_t)n * sizeof *cand) : NULL;
    size_t nc = 0;
    if (cand) {
        for (struct qv_res_impl *r = p->head; r && nc < n; r = r->next)
            if (r->can_spill && r->spill && r->pub.held > 0) cand[nc++] = r;
        qsort(cand, nc, sizeof *cand, qv__cmp_held_desc);
        for (size_t i = 0; i < nc; i++) cand[i]->pins++;
    }
    qv_mutex_unlock(&p->lock);
    to_host(p, released);
    for (size_t i = 0; i < nc && released < want; i++) {
        qv__spill_call(cand[i], want - released);
        qv_mutex_lock(&p->lock);
        uint64_t give = take_surplus_locked(p, want - released);
        qv_mutex_unlock(&p->lock);
        to_host(p, give);
        released += give;
    }
    qv_mutex_lock(&p->lock);
    for (size_t i = 0; i < nc; i++) cand[i]->pins--;
    if (nc) qv_cond_broadcast(&p->cond);
    p->releasing--;
    qv_mutex_unlock(&p->lock);
    free(cand);
    /* Trims skipped meanwhile (by the callbacks' frees, or other threads)
     * happen now; what they return was released during this call too. */
    return released + qv__pool_trim_host(p);
}
