/* Tracked arrays (tracked_array.h). */
#include "tracked_array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TRACKED_MAX 4096

/* Per-index release counts, shared by every tracker of the process (the
 * tests use one tracker at a time). */
static atomic_int release_counts[TRACKED_MAX];

struct tracked {
    struct ArrowArray inner;
    struct tracker *t;
    long long index;
};

void tracker_init(struct tracker *t) {
    atomic_init(&t->made, 0);
    atomic_init(&t->released, 0);
    atomic_init(&t->foreign_release, 0);
    atomic_init(&t->double_release, 0);
    t->owner = pthread_self();
    for (int i = 0; i < TRACKED_MAX; i++) atomic_store(&release_counts[i], 0);
}

long long tracker_live(struct tracker *t) {
    return atomic_load(&t->made) - atomic_load(&t->released);
}

static void tracked_release(struct ArrowArray *a) {
    struct tracked *tr = a->private_data;
    if (!a->release || !tr) return;
    struct tracker *t = tr->t;
    if (!pthread_equal(pthread_self(), t->owner)) atomic_store(&t->foreign_release, 1);
    if (tr->index < TRACKED_MAX && atomic_fetch_add(&release_counts[tr->index], 1) != 0)
        atomic_store(&t->double_release, 1);
    atomic_fetch_add(&t->released, 1);
    tr->inner.release(&tr->inner);
    free(tr);
    a->release = NULL;
    a->private_data = NULL;
}

int tracker_wrap(struct tracker *t, struct ArrowArray *inner, int64_t offset, int64_t length,
                 struct ArrowArray *out) {
    struct tracked *tr = malloc(sizeof *tr);
    if (!tr) {
        inner->release(inner);
        return ENOMEM;
    }
    tr->inner = *inner;
    inner->release = NULL;
    tr->t = t;
    tr->index = atomic_fetch_add(&t->made, 1);
    *out = tr->inner;
    out->offset = tr->inner.offset + offset;
    out->length = length;
    out->null_count = tr->inner.null_count == 0 ? 0 : -1;
    out->private_data = tr;
    out->release = tracked_release;
    return 0;
}

int tracker_release_count(struct tracker *t, long long index) {
    (void)t;
    return index < TRACKED_MAX ? atomic_load(&release_counts[index]) : -1;
}
