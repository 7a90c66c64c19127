/* The block cache: large blocks freed through a pool are kept for the next
 * allocation of the same size instead of going back to the system
 * allocator. Without it every batch's buffers were new pages (glibc maps
 * and unmaps big blocks), and with glibc tuned to keep them instead, each
 * decode thread's arena kept its own free memory, so process memory grew
 * with the number of workers. Cached bytes count against the pool's budget
 * and are evicted first when memory runs short, so the cache never makes a
 * grow fail or a consumer spill. */
#include <stdlib.h>

#include "memory/memory_internal.h"

#define RELAXED memory_order_relaxed

/* Bytes the budget still allows beyond reservations and the cache (lock held). */
static uint64_t room_locked(struct qv_pool *p) {
    uint64_t used = atomic_load_explicit(&p->reserved, RELAXED) +
                    atomic_load_explicit(&p->cache_bytes, RELAXED);
    uint64_t cap = p->has_host ? atomic_load_explicit(&p->host_held, RELAXED)
                               : (p->limit ? p->limit : UINT64_MAX);
    return cap > used ? cap - used : 0;
}

/* Removes a cached block of exactly `size` bytes (lock held), or NULL. */
static void *take_locked(struct qv_pool *p, size_t size) {
    for (int i = p->cache_n - 1; i >= 0; i--) {
        if (p->cache_size[i] != size) continue;
        void *ptr = p->cache_ptr[i];
        p->cache_n--;
        p->cache_ptr[i] = p->cache_ptr[p->cache_n];
        p->cache_size[i] = p->cache_size[p->cache_n];
        atomic_store_explicit(&p->cache_bytes, atomic_load_explicit(&p->cache_bytes, RELAXED) - size,
                              RELAXED);
        return ptr;
    }
    return NULL;
}

/* Keeps the block if the cache and the budget have room (lock held). */
static int put_locked(struct qv_pool *p, void *ptr, size_t size) {
    uint64_t cached = atomic_load_explicit(&p->cache_bytes, RELAXED);
    if (cached + size > p->cache_cap && p->cache_n > 0) {
        /* Make room by dropping the oldest block: recent sizes are the
         * ones the workload is repeating. */
        free(p->cache_ptr[0]);
        cached -= p->cache_size[0];
        p->cache_n--;
        for (int i = 0; i < p->cache_n; i++) {
            p->cache_ptr[i] = p->cache_ptr[i + 1];
            p->cache_size[i] = p->cache_size[i + 1];
        }
        atomic_store_explicit(&p->cache_bytes, cached, RELAXED);
    }
    if (p->cache_n < QV_CACHE_SLOTS && cached + size <= p->cache_cap && room_locked(p) >= size) {
        p->cache_ptr[p->cache_n] = ptr;
        p->cache_size[p->cache_n] = size;
        p->cache_n++;
        atomic_store_explicit(&p->cache_bytes, cached + size, RELAXED);
        return 1;
    }
    return 0;
}

int qv__cache_put(struct qv_pool *p, void *ptr, size_t size) {
    if (!p->cache_cap || size < QV_CACHE_MIN_BLOCK) return 0;
    qv_mutex_lock(&p->lock);
    int kept = put_locked(p, ptr, size);
    qv_mutex_unlock(&p->lock);
    return kept;
}

/* A large allocation locks the pool for the cache anyway; the charge is
 * made under the same lock. The cached block leaves the cache first, so
 * its bytes make room for the charge instead of being evicted by it. */
int qv__cache_take_charge(struct qv_pool *p, struct qv_reservation *r, size_t size, void **ptr) {
    *ptr = NULL;
    if (!p->cache_cap || size < QV_CACHE_MIN_BLOCK) return ENOMEM;
    qv_mutex_lock(&p->lock);
    *ptr = take_locked(p, size);
    int rc = qv__reservation_grow_locked(r, size);
    int trim = !rc && qv__pool_should_trim_locked(p); /* after evicting cached blocks */
    qv_mutex_unlock(&p->lock);
    atomic_fetch_add_explicit(*ptr ? &p->cache_hits : &p->cache_misses, 1, RELAXED);
    if (trim) qv__pool_trim_host(p);
    return rc;
}

/* Uncharges first, under the same lock, so the cache can take the room the
 * block leaves. */
void qv__cache_put_uncharge(struct qv_pool *p, struct qv_reservation *r, void *ptr, size_t size) {
    qv_mutex_lock(&p->lock);
    qv__reservation_shrink_locked(r, size);
    int kept = p->cache_cap && size >= QV_CACHE_MIN_BLOCK && put_locked(p, ptr, size);
    int trim = qv__pool_should_trim_locked(p);
    qv_mutex_unlock(&p->lock);
    if (!kept) free(ptr);
    if (trim) qv__pool_trim_host(p);
}

void qv__cache_evict_locked(struct qv_pool *p, uint64_t need) {
    while (p->cache_n > 0 && room_locked(p) < need) {
        p->cache_n--;
        free(p->cache_ptr[p->cache_n]);
        atomic_store_explicit(&p->cache_bytes,
                              atomic_load_explicit(&p->cache_bytes, RELAXED) - p->cache_size[p->cache_n],
                              RELAXED);
    }
}

uint64_t qv__cache_evict_one_locked(struct qv_pool *p) {
    if (p->cache_n == 0) return 0;
    p->cache_n--;
    uint64_t size = p->cache_size[p->cache_n];
    free(p->cache_ptr[p->cache_n]);
    atomic_store_explicit(&p->cache_bytes, atomic_load_explicit(&p->cache_bytes, RELAXED) - size,
                          RELAXED);
    return size;
}

void qv__cache_clear(struct qv_pool *p) {
    qv_mutex_lock(&p->lock);
    qv__cache_evict_locked(p, UINT64_MAX);
    qv_mutex_unlock(&p->lock);
}
