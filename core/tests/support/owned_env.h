/* What the tests of the writer's ownership-taking write share (inline in
 * test_writer_owned.c, on the worker in test_writer_owned_mt.c): a pool, a
 * reservation and the all-types schema, the random batches' options, the
 * tracked random batches made with them, and the byte-for-byte comparison
 * of two files, so that both test the same data the same way. */
#ifndef QV_TEST_OWNED_ENV_H
#define QV_TEST_OWNED_ENV_H

#include "quiver/format.h"
#include "random_batch.h"
#include "tracked_array.h"

struct owned_env {
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_schema *s;
};

/* Options of the random batches: nulls, short lists and strings. */
extern const struct rb_options OWNED_RO;

void owned_env_init(struct owned_env *e);
/* Destroys the environment, asserting the reservation and the pool hold
 * nothing any more (every batch and writer released its memory). */
void owned_env_done(struct owned_env *e);
/* Makes a random batch of `rows` rows (from `seed`, with OWNED_RO) of the
 * environment's schema and moves it into `out`, tracked by `t`. */
void owned_tracked_batch(struct owned_env *e, struct tracker *t, int64_t rows, uint64_t seed,
                         struct ArrowArray *out);
/* Asserts files `a` and `b` hold the same bytes. */
void owned_assert_same_files(const char *a, const char *b);

#endif
