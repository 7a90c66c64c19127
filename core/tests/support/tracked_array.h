/* Arrays whose release is counted and whose releasing thread is recorded,
 * for the tests of the writer's ownership-taking write: a tracker counts
 * the arrays it made and the releases (atomically, as a release may run on
 * any thread) and remembers whether any release ran on another thread than
 * the one that made the tracker. */
#ifndef QV_TEST_TRACKED_ARRAY_H
#define QV_TEST_TRACKED_ARRAY_H

#include <pthread.h>
#include <stdatomic.h>

#include "quiver/arrow.h"

struct tracker {
    atomic_llong made, released;
    atomic_int foreign_release; /* releases on another thread than `owner` */
    atomic_int double_release;  /* a release of an already released array */
    pthread_t owner;
};

void tracker_init(struct tracker *t);
/* Arrays made and not yet released. */
long long tracker_live(struct tracker *t);
/* Moves `inner` (rows [offset, offset + length) of it: the top-level struct
 * is sliced, its children untouched) into `out`, a tracked array whose
 * release releases `inner` and counts. 0 or ENOMEM (inner released then). */
int tracker_wrap(struct tracker *t, struct ArrowArray *inner, int64_t offset, int64_t length,
                 struct ArrowArray *out);
/* Releases recorded for the array made `index`-th (0-based): exactly once
 * is 1. Indexes past 4096 are not recorded (returns -1). */
int tracker_release_count(struct tracker *t, long long index);

#endif
