/* The file's cache of column readers for takes. A take touches one chunk
 * (row group, column) per column for every row group holding one of its
 * rows; opening a chunk (its decoder tree parsed, its blocks read and
 * verified) is most of what a small take costs. Repeated takes on one file
 * object reuse the readers opened by the ones before: a take borrows the
 * reader of a chunk (checked out: no other take uses it meanwhile, so two
 * threads taking on one file never share decoder state; the second opens a
 * reader of its own for the same chunk) and gives it back when it moves to
 * another row group or ends. The readers given back stay open, least
 * recently used first out, while the bytes they hold stay within the
 * bound. Each reader has a reservation of its own in the file's pool, so
 * the pool sees what the cache holds, and gets it back at eviction and when
 * the file closes.
 *
 * What counts against the bound is what the pool is charged for the
 * readers kept, so the bound is a bound on the file's memory accounting. A
 * chunk read by blocks (format 2, pread) has a buffer the size of the chunk
 * of which only the blocks a take fetched are written: it is charged (and
 * counted) whole, though its untouched pages are never resident. */
#include <stdlib.h>
#include <string.h>

#include "base/thread.h"
#include "file/file_internal.h"
#include "format/reader_internal.h"

/* A reader, in its bucket's chain (by row group and column) and, while no
 * take borrows it, in the list of free readers, least recently used first. */
struct entry {
    struct qv_column_reader *cr;
    struct qv_reservation *res;
    int64_t rg;
    int32_t column;
    int in_use;
    uint64_t charge; /* counted against the bound while free */
    struct entry *chain;
    struct entry *older, *newer; /* the free list */
};

#define BUCKETS 4096 /* a power of 2; lineitem SF1 has 46 x 16 chunks */

struct qv__take_cache {
    const struct qv_reader *rd;
    struct qv_pool *pool;
    uint64_t bound, held;
    size_t n;
    struct entry **bucket; /* BUCKETS chains, allocated at the first take */
    struct entry *oldest, *newest;
    qv_mutex mu;
};

static size_t bucket_of(int64_t rg, int32_t column) {
    uint64_t h = (uint64_t)rg * 0x9E3779B97F4A7C15u ^ (uint64_t)(uint32_t)column * 0xC2B2AE3D27D4EB4Fu;
    return (size_t)(h >> 40) & (BUCKETS - 1);
}

int qv__take_cache_create(const struct qv_reader *rd, struct qv_pool *pool, uint64_t bound,
                          struct qv__take_cache **out, struct qv_error *err) {
    *out = NULL;
    struct qv__take_cache *c = calloc(1, sizeof *c);
    if (!c) return qv_error_set(err, ENOMEM, "file: out of memory for the take cache");
    if (qv_mutex_init(&c->mu)) {
        free(c);
        return qv_error_set(err, ENOMEM, "file: cannot create the take cache's lock");
    }
    c->rd = rd;
    c->pool = pool;
    c->bound = bound;
    *out = c;
    return 0;
}

static void entry_close(struct entry *e) {
    qv_column_reader_close(e->cr);
    qv_reservation_destroy(e->res);
    free(e);
}

void qv__take_cache_destroy(struct qv__take_cache *c) {
    if (!c) return;
    /* Readers still borrowed belong to a stream, which holds a file
     * reference: none is borrowed when the file closes. */
    for (size_t b = 0; c->bucket && b < BUCKETS; b++)
        for (struct entry *e = c->bucket[b], *next; e; e = next) {
            next = e->chain;
            entry_close(e);
        }
    free(c->bucket);
    qv_mutex_destroy(&c->mu);
    free(c);
}

static void free_unlink(struct qv__take_cache *c, struct entry *e) {
    if (e->older) e->older->newer = e->newer;
    else c->oldest = e->newer;
    if (e->newer) e->newer->older = e->older;
    else c->newest = e->older;
    e->older = e->newer = NULL;
}

static void chain_unlink(struct qv__take_cache *c, struct entry *e) {
    struct entry **p = &c->bucket[bucket_of(e->rg, e->column)];
    while (*p != e) p = &(*p)->chain;
    *p = e->chain;
    c->n--;
}

/* Takes the least recently used free reader out of the cache (lock held)
 * onto `*drop`, the readers to close once the lock is released. */
static void evict_oldest(struct qv__take_cache *c, struct entry **drop) {
    struct entry *o = c->oldest;
    free_unlink(c, o);
    chain_unlink(c, o);
    c->held -= o->charge;
    o->chain = *drop;
    *drop = o;
}

/* Closes the readers of a drop list; called after the lock is released,
 * so that other threads need not wait while readers close. */
static void close_dropped(struct entry *drop) {
    while (drop) {
        struct entry *next = drop->chain;
        entry_close(drop);
        drop = next;
    }
}

void qv__take_cache_trim(struct qv__take_cache *c) {
    struct entry *drop = NULL;
    qv_mutex_lock(&c->mu);
    while (c->oldest) evict_oldest(c, &drop);
    qv_mutex_unlock(&c->mu);
    close_dropped(drop);
}

int qv__take_cache_get(struct qv__take_cache *c, int64_t rg, int32_t column,
                       struct qv_column_reader **out, int *fresh, struct qv_error *err) {
    *out = NULL;
    *fresh = 0;
    size_t b = bucket_of(rg, column);
    qv_mutex_lock(&c->mu);
    for (struct entry *e = c->bucket ? c->bucket[b] : NULL; e; e = e->chain) {
        if (!e->in_use && e->rg == rg && e->column == column) {
            e->in_use = 1;
            free_unlink(c, e);
            c->held -= e->charge;
            e->charge = 0;
            *out = e->cr;
            qv_mutex_unlock(&c->mu);
            return 0;
        }
    }
    qv_mutex_unlock(&c->mu);
    /* Opened outside the lock: another take may open the same chunk
     * meanwhile; both readers are kept. */
    struct entry *ne = calloc(1, sizeof *ne);
    if (!ne) return qv_error_set(err, ENOMEM, "file: out of memory for the take cache");
    ne->rg = rg;
    ne->column = column;
    ne->in_use = 1;
    struct qv_reservation_options ro = {.name = "take cache reader"};
    int rc = qv_reservation_create(c->pool, &ro, &ne->res, err);
    if (!rc) rc = qv_column_reader_open_nodes(c->rd, rg, column, NULL, ne->res, &ne->cr, err);
    int have_free = 0;
    if (rc == ENOMEM) {
        /* Read under the lock: other takes give readers back meanwhile. */
        qv_mutex_lock(&c->mu);
        have_free = c->oldest != NULL;
        qv_mutex_unlock(&c->mu);
    }
    if (have_free) {
        /* The pool is full, perhaps of what the cache keeps: give the
         * free readers back and try once more (making the reservation
         * too when that was what failed). */
        qv_column_reader_close(ne->cr);
        ne->cr = NULL;
        qv__take_cache_trim(c);
        qv_error_clear(err);
        rc = ne->res ? 0 : qv_reservation_create(c->pool, &ro, &ne->res, err);
        if (!rc) rc = qv_column_reader_open_nodes(c->rd, rg, column, NULL, ne->res, &ne->cr, err);
    }
    if (rc) {
        entry_close(ne);
        return rc;
    }
    qv_mutex_lock(&c->mu);
    if (!c->bucket) c->bucket = calloc(BUCKETS, sizeof *c->bucket);
    if (!c->bucket) {
        qv_mutex_unlock(&c->mu);
        entry_close(ne);
        return qv_error_set(err, ENOMEM, "file: out of memory for the take cache");
    }
    ne->chain = c->bucket[b];
    c->bucket[b] = ne;
    c->n++;
    qv_mutex_unlock(&c->mu);
    *out = ne->cr;
    *fresh = 1;
    return 0;
}

void qv__take_cache_put(struct qv__take_cache *c, int64_t rg, int32_t column,
                        struct qv_column_reader *cr, int keep) {
    if (!cr) return;
    struct entry *drop = NULL; /* closed after the lock is dropped */
    qv_mutex_lock(&c->mu);
    struct entry *e = c->bucket ? c->bucket[bucket_of(rg, column)] : NULL;
    while (e && e->cr != cr) e = e->chain;
    if (!e) { /* not ours: cannot happen, but never leak */
        qv_mutex_unlock(&c->mu);
        qv_column_reader_close(cr);
        return;
    }
    if (!keep) {
        chain_unlink(c, e);
        e->chain = NULL;
        drop = e;
    } else {
        e->charge = qv_reservation_used(e->res);
        e->in_use = 0;
        e->older = c->newest;
        e->newer = NULL;
        if (c->newest) c->newest->newer = e;
        else c->oldest = e;
        c->newest = e;
        c->held += e->charge;
        while (c->held > c->bound && c->oldest) evict_oldest(c, &drop);
    }
    qv_mutex_unlock(&c->mu);
    close_dropped(drop);
    /* A failed decode may have found the pool full of what the cache keeps:
     * the caller tries once more with the free readers closed. */
    if (!keep) qv__take_cache_trim(c);
}

int qv__take_cache_lend(void *ctx, int64_t rg, int32_t node, int role, uint64_t off, uint64_t len,
                        uint8_t *dst) {
    struct qv__take_cache *c = ctx;
    if (node < 0 || node >= c->rd->f.n_nodes) return 0;
    int32_t column = c->rd->f.nodes[node].column;
    int lent = 0;
    qv_mutex_lock(&c->mu);
    /* A free reader only: one a take has borrowed is that take's alone. The
     * lock keeps it free while the bytes are copied. */
    for (struct entry *e = c->bucket ? c->bucket[bucket_of(rg, column)] : NULL; e && !lent;
         e = e->chain)
        if (!e->in_use && e->rg == rg && e->column == column)
            lent = qv__column_reader_lend(e->cr, rg, node, role, off, len, dst);
    qv_mutex_unlock(&c->mu);
    return lent;
}

void qv__take_cache_counts(struct qv__take_cache *c, size_t *readers, uint64_t *held) {
    qv_mutex_lock(&c->mu);
    *readers = c->n;
    *held = c->held;
    qv_mutex_unlock(&c->mu);
}
