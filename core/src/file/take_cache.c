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
 * What counts against the bound is the memory a reader touched: a chunk
 * read by blocks (format 2, pread) has a buffer the size of the chunk but
 * only the blocks a take fetched are ever written; its untouched pages are
 * not counted (the pool is charged for them all the same). */
#include <stdlib.h>
#include <string.h>

#include "base/thread.h"
#include "file/file_internal.h"
#include "format/reader_internal.h"

struct entry {
    struct qv_column_reader *cr;
    struct qv_reservation *res;
    int64_t rg;
    int32_t column;
    int in_use;
    uint64_t charge; /* counted against the bound while not in use */
    uint64_t tick;   /* last given back */
};

struct qv__take_cache {
    const struct qv_reader *rd;
    struct qv_pool *pool;
    uint64_t bound, held;
    uint64_t clock;
    struct entry *e;
    size_t n, cap;
    qv_mutex mu;
};

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
}

void qv__take_cache_destroy(struct qv__take_cache *c) {
    if (!c) return;
    /* Readers still borrowed belong to a stream, which holds a file
     * reference: none is left when the file closes. */
    for (size_t i = 0; i < c->n; i++) entry_close(&c->e[i]);
    free(c->e);
    qv_mutex_destroy(&c->mu);
    free(c);
}

int qv__take_cache_get(struct qv__take_cache *c, int64_t rg, int32_t column,
                       struct qv_column_reader **out, int *fresh, struct qv_error *err) {
    *out = NULL;
    *fresh = 0;
    qv_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++) {
        struct entry *e = &c->e[i];
        if (!e->in_use && e->rg == rg && e->column == column) {
            e->in_use = 1;
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
    struct entry ne = {.rg = rg, .column = column, .in_use = 1};
    struct qv_reservation_options ro = {.name = "take cache reader"};
    int rc = qv_reservation_create(c->pool, &ro, &ne.res, err);
    if (!rc) rc = qv_column_reader_open_nodes(c->rd, rg, column, NULL, ne.res, &ne.cr, err);
    if (rc) {
        qv_reservation_destroy(ne.res);
        return rc;
    }
    qv_mutex_lock(&c->mu);
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct entry *p = realloc(c->e, cap * sizeof *p);
        if (!p) {
            qv_mutex_unlock(&c->mu);
            entry_close(&ne);
            return qv_error_set(err, ENOMEM, "file: out of memory for the take cache");
        }
        c->e = p;
        c->cap = cap;
    }
    c->e[c->n++] = ne;
    qv_mutex_unlock(&c->mu);
    *out = ne.cr;
    *fresh = 1;
    return 0;
}

void qv__take_cache_put(struct qv__take_cache *c, struct qv_column_reader *cr, int keep) {
    if (!cr) return;
    /* Evicted entries are closed after the lock is dropped; at most a few
     * per call in practice, collected in a small batch. */
    struct entry drop[16];
    size_t nd = 0;
    qv_mutex_lock(&c->mu);
    size_t at = c->n;
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].cr == cr) {
            at = i;
            break;
        }
    if (at == c->n) { /* not ours: cannot happen, but never leak */
        qv_mutex_unlock(&c->mu);
        qv_column_reader_close(cr);
        return;
    }
    struct entry *e = &c->e[at];
    if (!keep) {
        drop[nd++] = *e;
        c->e[at] = c->e[--c->n];
    } else {
        uint64_t used = qv_reservation_used(e->res), un = qv__column_reader_untouched_bytes(cr);
        e->charge = used > un ? used - un : 0;
        e->in_use = 0;
        e->tick = ++c->clock;
        c->held += e->charge;
        while (c->held > c->bound && nd < sizeof drop / sizeof *drop) {
            size_t lru = c->n;
            for (size_t i = 0; i < c->n; i++)
                if (!c->e[i].in_use && (lru == c->n || c->e[i].tick < c->e[lru].tick)) lru = i;
            if (lru == c->n) break;
            c->held -= c->e[lru].charge;
            drop[nd++] = c->e[lru];
            c->e[lru] = c->e[--c->n];
        }
    }
    qv_mutex_unlock(&c->mu);
    for (size_t i = 0; i < nd; i++) entry_close(&drop[i]);
}

void qv__take_cache_counts(struct qv__take_cache *c, size_t *readers, uint64_t *held) {
    qv_mutex_lock(&c->mu);
    *readers = c->n;
    *held = c->held;
    qv_mutex_unlock(&c->mu);
}
