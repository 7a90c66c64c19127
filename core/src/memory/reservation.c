/* Reservations: charges against a pool with a small slack of their own,
 * spilling and the out-of-memory report. The fast paths (inside slack
 * already held) are inline in memory.h; this file is what runs when a
 * reservation runs out of slack or holds too much of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dcheck.h"
#include "memory/memory_internal.h"

#define RELAXED memory_order_relaxed

/* Set while this thread runs a spill callback: growing then would let a
 * consumer take memory back while the pool is trying to free it. */
static _Thread_local int tl_in_spill;

static uint64_t round_up(uint64_t v, uint64_t block) {
    return (v + block - 1) / block * block;
}

/* The slack a reservation takes when it grows past what it holds: an eighth
 * of its use, so a growing consumer comes back about log(size) times, not
 * once per allocation; at least grain_min (16 KiB) so small consumers do not
 * lock for every allocation (a column of a 1000-row batch crosses once),
 * and at most grain_max (half of res_slack) so there is a band for shrink
 * hysteresis below the cap. A reservation never takes whole pool blocks:
 * thousands of small ones (a column of every batch held) would otherwise be
 * charged a block each. */
static uint64_t grain(const struct qv_pool *p, uint64_t used) {
    uint64_t g = (used / 8) & ~(uint64_t)(QV_ALIGNMENT - 1);
    if (g < p->grain_min) g = p->grain_min;
    if (g > p->grain_max) g = p->grain_max;
    return g;
}

int qv_reservation_create(struct qv_pool *pool, const struct qv_reservation_options *opts,
                          struct qv_reservation **out, struct qv_error *err) {
    static const struct qv_reservation_options defaults = {0};
    if (!pool || !out)
        return qv_error_set(err, EINVAL, "qv_reservation_create: pool or out is NULL");
    *out = NULL;
    if (!opts) opts = &defaults;
    const char *name = opts->name ? opts->name : "reservation";
    struct qv_res_impl *r = NULL;
    if (!qv__pool_inject_alloc(pool)) r = calloc(1, sizeof *r);
    if (!r)
        return qv_error_set(err, ENOMEM, "pool '%s': cannot allocate reservation '%s'",
                            pool->name, name);
    /* Copied, not printed: a take creates a reservation per chunk it
     * reads, and snprintf's "%s" was ~1% of a cold take (perf). */
    size_t nlen = strnlen(name, sizeof r->name - 1);
    memcpy(r->name, name, nlen);
    r->name[nlen] = 0;
    r->can_spill = opts->can_spill != 0;
    r->spill = opts->spill;
    r->spill_ctx = opts->spill_ctx;
    r->pub.pool = pool;
    r->pub.keep = pool->res_slack;
    qv_mutex_lock(&pool->lock);
    r->next = pool->head;
    if (pool->head) pool->head->prev = r;
    pool->head = r;
    atomic_fetch_add_explicit(&pool->nres, 1, RELAXED);
    qv_mutex_unlock(&pool->lock);
    *out = &r->pub;
    return 0;
}

void qv_reservation_destroy(struct qv_reservation *pub) {
    if (!pub) return;
    struct qv_res_impl *r = qv__res_impl(pub);
    struct qv_pool *p = pub->pool;
    qv_mutex_lock(&p->lock);
    while (r->pins > 0) qv_cond_wait(&p->cond, &p->lock);
    if (r->prev) r->prev->next = r->next;
    else p->head = r->next;
    if (r->next) r->next->prev = r->prev;
    /* The pool's total is the sum of what its reservations hold. */
    QV_DCHECK(pub->used <= pub->held);
    QV_DCHECK(atomic_load_explicit(&p->reserved, RELAXED) >= pub->held);
    atomic_store_explicit(&p->reserved, atomic_load_explicit(&p->reserved, RELAXED) - pub->held,
                          RELAXED);
    p->retired_allocs += pub->allocs;
    atomic_fetch_sub_explicit(&p->nres, 1, RELAXED);
    int trim = qv__pool_should_trim_locked(p);
    qv_mutex_unlock(&p->lock);
    free(r);
    if (trim) qv__pool_trim_host(p);
}

const char *qv_reservation_name(const struct qv_reservation *r) {
    return ((const struct qv_res_impl *)r)->name;
}

/* Moves `take` bytes from the pool's free space into r (lock held). */
static void commit_locked(struct qv_pool *p, struct qv_res_impl *r, uint64_t take) {
    uint64_t reserved = atomic_load_explicit(&p->reserved, RELAXED) + take;
    QV_DCHECK(reserved >= take); /* no wrap-around */
    atomic_store_explicit(&p->reserved, reserved, RELAXED);
    qv__pool_note_peak(p, reserved);
    r->pub.held += take;
    if (r->pub.held > r->peak_held) r->peak_held = r->pub.held;
}

/* Bytes the pool can still hand out without asking anyone (lock held);
 * cached blocks are evicted first when they stand in the way. */
static uint64_t available_locked(struct qv_pool *p, uint64_t need) {
    if (atomic_load_explicit(&p->cache_bytes, RELAXED)) qv__cache_evict_locked(p, need);
    uint64_t reserved = atomic_load_explicit(&p->reserved, RELAXED) +
                        atomic_load_explicit(&p->cache_bytes, RELAXED);
    uint64_t cap = p->has_host ? atomic_load_explicit(&p->host_held, RELAXED)
                               : (p->limit ? p->limit : UINT64_MAX);
    return cap > reserved ? cap - reserved : 0;
}

uint64_t qv__spill_call(struct qv_res_impl *r, uint64_t wanted) {
    tl_in_spill = 1;
    uint64_t freed = r->spill(r->spill_ctx, &r->pub, wanted);
    tl_in_spill = 0;
    atomic_fetch_add_explicit(&r->pub.pool->spill_calls, 1, RELAXED);
    return freed;
}

int qv__cmp_held_desc(const void *a, const void *b) {
    const struct qv_res_impl *x = *(struct qv_res_impl *const *)a;
    const struct qv_res_impl *y = *(struct qv_res_impl *const *)b;
    return (x->pub.held < y->pub.held) - (x->pub.held > y->pub.held);
}

/* Asks spillable consumers to free `shortfall` bytes: the largest first and
 * the requester last. A spillable requester already above its fair share,
 * (budget - unspillable) / spillable consumers, may only spill itself: it
 * cannot take memory from consumers that hold less than it does. Called with
 * no lock held; callbacks run unlocked with their reservations pinned. */
static void spill_for(struct qv_pool *p, struct qv_res_impl *req, uint64_t shortfall) {
    qv_mutex_lock(&p->lock);
    uint64_t budget = p->has_host ? atomic_load_explicit(&p->host_held, RELAXED) : p->limit;
    uint64_t unspillable = 0, nspill = 0, n = 0;
    for (struct qv_res_impl *r = p->head; r; r = r->next) {
        n++;
        if (r->can_spill) nspill++;
        else unspillable += r->pub.held;
    }
    int over_fair = 0;
    if (req->can_spill && nspill && budget) {
        uint64_t fair = budget > unspillable ? (budget - unspillable) / nspill : 0;
        over_fair = req->pub.held + shortfall > fair;
    }
    struct qv_res_impl **cand = malloc((size_t)n * sizeof *cand);
    size_t nc = 0;
    if (cand) {
        for (struct qv_res_impl *r = p->head; r && !over_fair; r = r->next)
            if (r != req && r->can_spill && r->spill && r->pub.held > 0) cand[nc++] = r;
        qsort(cand, nc, sizeof *cand, qv__cmp_held_desc);
        if (req->can_spill && req->spill) cand[nc++] = req;
        for (size_t i = 0; i < nc; i++) cand[i]->pins++;
    }
    qv_mutex_unlock(&p->lock);

    uint64_t freed = 0;
    for (size_t i = 0; i < nc && freed < shortfall; i++) freed += qv__spill_call(cand[i], shortfall - freed);

    if (nc) {
        qv_mutex_lock(&p->lock);
        for (size_t i = 0; i < nc; i++) cand[i]->pins--;
        qv_cond_broadcast(&p->cond);
        qv_mutex_unlock(&p->lock);
    }
    free(cand);
}

/* Formats the out-of-memory report (lock held): who asked, how much, the
 * budget, and the five largest consumers with reserved and peak bytes. */
static int oom_locked(struct qv_pool *p, struct qv_res_impl *req, uint64_t bytes,
                      uint64_t asked, uint64_t granted, struct qv_error *err) {
    atomic_fetch_add_explicit(&p->oom_count, 1, RELAXED);
    if (!err) return ENOMEM;
    char budget[400];
    if (p->has_host) {
        /* The host's own reason (an exception its budget threw) belongs in
         * the message: it is often the real cause. */
        char why[200] = "";
        if (p->host.describe) {
            p->host.describe(p->host.ctx, why, sizeof why);
            why[sizeof why - 1] = 0;
        }
        snprintf(budget, sizeof budget,
                 "host-backed, %llu bytes acquired; host granted %llu of %llu bytes asked%s%s%s",
                 (unsigned long long)atomic_load_explicit(&p->host_held, RELAXED),
                 (unsigned long long)granted, (unsigned long long)asked, why[0] ? " (host: " : "",
                 why, why[0] ? ")" : "");
    }
    else if (p->limit)
        snprintf(budget, sizeof budget, "limit %llu bytes", (unsigned long long)p->limit);
    else
        snprintf(budget, sizeof budget, "no limit");
    struct qv_res_impl *top[5] = {0};
    for (struct qv_res_impl *r = p->head; r; r = r->next) {
        for (int i = 0; i < 5; i++) {
            if (!top[i] || r->pub.held > top[i]->pub.held) {
                memmove(&top[i + 1], &top[i], (size_t)(4 - i) * sizeof top[0]);
                top[i] = r;
                break;
            }
        }
    }
    char consumers[600] = "";
    size_t off = 0;
    for (int i = 0; i < 5 && top[i]; i++) {
        int w = snprintf(consumers + off, sizeof consumers - off, "%s'%s' %llu reserved (peak %llu)",
                         i ? ", " : "", top[i]->name, (unsigned long long)top[i]->pub.held,
                         (unsigned long long)top[i]->peak_held);
        if (w < 0 || (size_t)w >= sizeof consumers - off) break;
        off += (size_t)w;
    }
    return qv_error_set(err, ENOMEM,
                        "pool '%s': reservation '%s' cannot grow by %llu bytes (using %llu, "
                        "holding %llu); pool has %llu bytes reserved, %s; top consumers: %s",
                        p->name, req->name, (unsigned long long)bytes,
                        (unsigned long long)req->pub.used, (unsigned long long)req->pub.held,
                        (unsigned long long)atomic_load_explicit(&p->reserved, RELAXED), budget,
                        consumers);
}

int qv__reservation_grow_slow(struct qv_reservation *pub, uint64_t bytes, int try_only,
                              struct qv_error *err) {
    struct qv_res_impl *r = qv__res_impl(pub);
    struct qv_pool *p = pub->pool;
    if (tl_in_spill)
        return qv_error_set(err, EDEADLK,
                            "pool '%s': reservation '%s' asked for %llu bytes from inside a "
                            "spill callback; spill callbacks may only free memory",
                            p->name, r->name, (unsigned long long)bytes);
    uint64_t new_used;
    if (qv_add_overflow_u64(pub->used, bytes, &new_used) || new_used > UINT64_MAX / 2)
        return qv_error_set(err, ENOMEM, "pool '%s': reservation '%s' asked for %llu bytes, "
                            "more than can be addressed", p->name, r->name,
                            (unsigned long long)bytes);
    int spilled = 0, asked_host = 0;
    uint64_t asked = 0, granted = 0;
    qv_mutex_lock(&p->lock);
    for (;;) {
        /* Recomputed each round: a spill callback may have shrunk r itself. */
        new_used = pub->used + bytes;
        if (new_used <= pub->held) break;
        uint64_t want = new_used + grain(p, new_used) - pub->held; /* with some slack */
        uint64_t need = new_used - pub->held;                      /* the real shortfall */
        uint64_t avail = available_locked(p, need);
        if (avail >= need) {
            /* A short grant that still covers the real shortfall is accepted
             * (the reservation then holds less slack). */
            commit_locked(p, r, want <= avail ? want : avail);
            break;
        }
        if (p->has_host && !asked_host) {
            if (p->acquiring) {
                /* Another thread is already asking the host: wait for its
                 * answer and re-check instead of asking again (no re-ask storm). */
                qv_cond_wait(&p->cond, &p->lock);
                continue;
            }
            p->acquiring = 1;
            /* Whole blocks covering the real shortfall: the reservation's
             * slack is taken from what the blocks leave over, never a
             * block more on its own account. */
            uint64_t ask = round_up(need - avail, p->block);
            qv_mutex_unlock(&p->lock);
            uint64_t got = qv__pool_host_acquire(p, ask);
            qv_mutex_lock(&p->lock);
            atomic_store_explicit(&p->host_held, atomic_load_explicit(&p->host_held, RELAXED) + got,
                                  RELAXED);
            p->acquiring = 0;
            qv_cond_broadcast(&p->cond);
            /* Other reservations may take what the host granted while the
             * lock was released (the free space this ask was sized against,
             * or the grant itself): while the host grants all it is asked,
             * it is asked again. Only a host that grants less ends the
             * asking (then spilling, once more, then ENOMEM); each full
             * grant grows what the pool holds, so this ends at the host's
             * budget. */
            asked_host = got < ask;
            asked += ask;
            granted += got;
            continue;
        }
        if (try_only || spilled) {
            int rc = oom_locked(p, r, bytes, asked, granted, err);
            qv_mutex_unlock(&p->lock);
            qv__pool_trim_host(p);
            return rc;
        }
        qv_mutex_unlock(&p->lock);
        spill_for(p, r, need - avail);
        spilled = 1;
        asked_host = 0; /* after spilling, the host may be asked once more */
        qv_mutex_lock(&p->lock);
    }
    /* Evicting cached blocks to make room can leave the pool holding more of
     * the host's memory than its hysteresis allows: give that back. */
    int trim = qv__pool_should_trim_locked(p);
    qv_mutex_unlock(&p->lock);
    pub->used = new_used;
    if (new_used > pub->peak) pub->peak = new_used;
    QV_DCHECK(pub->used <= pub->held);
    if (trim) qv__pool_trim_host(p);
    return 0;
}

/* Returns held bytes above `target` to the pool (lock held). */
static void give_back_locked(struct qv_res_impl *r, uint64_t target) {
    struct qv_pool *p = r->pub.pool;
    /* Only slack goes back: never below what is charged. */
    QV_DCHECK(target >= r->pub.used && target <= r->pub.held);
    uint64_t give = r->pub.held - target;
    QV_DCHECK(atomic_load_explicit(&p->reserved, RELAXED) >= give);
    r->pub.held = target;
    atomic_store_explicit(&p->reserved, atomic_load_explicit(&p->reserved, RELAXED) - give,
                          RELAXED);
}

int qv__pool_should_trim_locked(struct qv_pool *p) {
    return p->has_host && atomic_load_explicit(&p->host_held, RELAXED) >
                              atomic_load_explicit(&p->reserved, RELAXED) +
                                  atomic_load_explicit(&p->cache_bytes, RELAXED) + p->keep;
}

/* give_back_locked, then trims the host when the pool now holds more of the
 * host's memory than its hysteresis allows (checked under the same lock, so
 * the common case locks once). */
static void give_back(struct qv_res_impl *r, uint64_t target) {
    struct qv_pool *p = r->pub.pool;
    if (target >= r->pub.held) return;
    qv_mutex_lock(&p->lock);
    give_back_locked(r, target);
    int trim = qv__pool_should_trim_locked(p);
    qv_mutex_unlock(&p->lock);
    if (trim) qv__pool_trim_host(p);
}

/* Hysteresis: shrinking only reaches here once slack exceeds `keep` (the
 * reservation's cap, res_slack); it then keeps one grain above its use, so
 * a consumer oscillating by less than the band between the two settles and
 * stops calling the pool. */
void qv__reservation_shrink_slow(struct qv_reservation *pub) {
    give_back(qv__res_impl(pub), pub->used + grain(pub->pool, pub->used));
}

int qv__reservation_grow_locked(struct qv_reservation *pub, uint64_t bytes) {
    struct qv_res_impl *r = qv__res_impl(pub);
    struct qv_pool *p = pub->pool;
    uint64_t new_used;
    if (tl_in_spill || qv_add_overflow_u64(pub->used, bytes, &new_used) ||
        new_used > UINT64_MAX / 2)
        return ENOMEM; /* the slow path says why */
    if (new_used > pub->held) {
        uint64_t need = new_used - pub->held;
        uint64_t avail = available_locked(p, need);
        if (avail < need) return ENOMEM;
        uint64_t want = new_used + grain(p, new_used) - pub->held;
        commit_locked(p, r, want <= avail ? want : avail);
    }
    pub->used = new_used;
    if (new_used > pub->peak) pub->peak = new_used;
    QV_DCHECK(pub->used <= pub->held);
    return 0;
}

void qv__reservation_shrink_locked(struct qv_reservation *pub, uint64_t bytes) {
    /* The allocator uncharges exactly what it charged: more is a block
     * released twice (or under the wrong reservation). */
    QV_DCHECK(bytes <= pub->used);
    pub->used -= bytes < pub->used ? bytes : pub->used;
    if (pub->held - pub->used > pub->keep)
        give_back_locked(qv__res_impl(pub), pub->used + grain(pub->pool, pub->used));
}

void qv_reservation_release_slack(struct qv_reservation *pub) {
    give_back(qv__res_impl(pub), pub->used);
}

int qv_reservation_resize(struct qv_reservation *r, uint64_t bytes, struct qv_error *err) {
    if (bytes >= r->used) return qv_reservation_grow(r, bytes - r->used, err);
    qv_reservation_shrink(r, r->used - bytes);
    return 0;
}

int qv_reservation_transfer(struct qv_reservation *from, struct qv_reservation *to,
                            uint64_t bytes, struct qv_error *err) {
    if (from == to) return 0;
    if (bytes > from->used)
        return qv_error_set(err, EINVAL, "reservation '%s': cannot transfer %llu bytes of %llu charged",
                            qv_reservation_name(from), (unsigned long long)bytes,
                            (unsigned long long)from->used);
    int rc = qv_reservation_grow(to, bytes, err);
    if (rc) return rc;
    qv_reservation_shrink(from, bytes);
    return 0;
}

int qv_reservation_split(struct qv_reservation *pub, uint64_t bytes, const char *name_suffix,
                         struct qv_reservation **out, struct qv_error *err) {
    struct qv_res_impl *r = qv__res_impl(pub);
    if (!out) return qv_error_set(err, EINVAL, "qv_reservation_split: out is NULL");
    *out = NULL;
    if (bytes > pub->used)
        return qv_error_set(err, EINVAL,
                            "reservation '%s': cannot split %llu bytes off %llu charged", r->name,
                            (unsigned long long)bytes, (unsigned long long)pub->used);
    char name[QV_NAME_MAX];
    snprintf(name, sizeof name, "%.40s/%s", r->name, name_suffix ? name_suffix : "split");
    struct qv_reservation_options o = {name, r->can_spill, r->spill, r->spill_ctx};
    struct qv_reservation *n;
    int rc = qv_reservation_create(pub->pool, &o, &n, err);
    if (rc) return rc;
    struct qv_pool *p = pub->pool;
    /* The charge and the memory behind it move together; the pool total is unchanged. */
    qv_mutex_lock(&p->lock);
    pub->used -= bytes;
    pub->held -= bytes;
    n->used = n->held = n->peak = bytes;
    qv__res_impl(n)->peak_held = bytes;
    qv_mutex_unlock(&p->lock);
    *out = n;
    return 0;
}
