/* The accounting allocator: 64-byte aligned blocks charged to a reservation. */
#include <stdlib.h>
#include <string.h>

#include "base/dcheck.h"
#include "memory/memory_internal.h"

void *qv_alloc(struct qv_reservation *r, size_t size, struct qv_error *err) {
    size_t padded = qv_align_up(size ? size : 1);
    struct qv_pool *p = r->pool;
    if (__builtin_expect(padded == 0, 0)) {
        qv_error_set(err, ENOMEM, "reservation '%s': allocation of %zu bytes is too large",
                     qv_reservation_name(r), size);
        return NULL;
    }
    if (__builtin_expect(qv__pool_inject_alloc(p), 0)) {
        qv_error_set(err, ENOMEM, "reservation '%s': injected failure allocating %zu bytes",
                     qv_reservation_name(r), size);
        return NULL;
    }
    /* Large blocks: one lock takes a cached block out of the cache and
     * makes the charge (its bytes leave the cache's share of the budget
     * first, so the charge neither evicts the block it is about to reuse
     * nor asks the host for memory the pool has). When the charge needs
     * the host or spilling, the ordinary grow does it. */
    void *ptr = NULL;
    int charged = padded >= QV_CACHE_MIN_BLOCK && p->cache_cap &&
                  qv__cache_take_charge(p, r, padded, &ptr) == 0;
    if (!charged && qv_reservation_grow(r, padded, err) != 0) {
        if (ptr && !qv__cache_put(p, ptr, padded)) free(ptr);
        return NULL;
    }
    if (!ptr) ptr = aligned_alloc(QV_ALIGNMENT, padded);
    if (__builtin_expect(!ptr, 0)) {
        qv_reservation_shrink(r, padded);
        qv_error_set(err, ENOMEM, "reservation '%s': system allocator failed for %zu bytes",
                     qv_reservation_name(r), size);
        return NULL;
    }
    r->allocs++;
    return ptr;
}

void *qv_calloc(struct qv_reservation *r, size_t size, struct qv_error *err) {
    void *ptr = qv_alloc(r, size, err);
    if (ptr) memset(ptr, 0, qv_align_up(size ? size : 1));
    return ptr;
}

void *qv_realloc(struct qv_reservation *r, void *ptr, size_t old_size, size_t new_size,
                 struct qv_error *err) {
    if (!ptr) return qv_alloc(r, new_size, err);
    size_t old_padded = qv_align_up(old_size ? old_size : 1);
    size_t new_padded = qv_align_up(new_size ? new_size : 1);
    if (new_padded == old_padded) return ptr;
    /* aligned_alloc blocks cannot be resized in place portably: allocate,
     * copy, free. The new block is charged before the old one is released,
     * because both exist at once. */
    void *n = qv_alloc(r, new_size, err);
    if (!n) return NULL;
    memcpy(n, ptr, old_padded < new_padded ? old_padded : new_padded);
    qv_free(r, ptr, old_size);
    return n;
}

void qv_free(struct qv_reservation *r, void *ptr, size_t size) {
    if (!ptr) return;
    size_t padded = qv_align_up(size ? size : 1);
    /* A block is charged when it is allocated; uncharging more than the
     * reservation holds means it was freed twice or under another one. */
    QV_DCHECK(padded <= r->used);
    if (padded >= QV_CACHE_MIN_BLOCK && r->pool->cache_cap) {
        qv__cache_put_uncharge(r->pool, r, ptr, padded);
        return;
    }
    qv_reservation_shrink(r, padded);
    free(ptr);
}
