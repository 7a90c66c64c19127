/* Random Arrow batches of any schema, through the batch builder: values of
 * every type with extremes mixed in, nulls at every nullable level. */
#ifndef QV_TEST_RANDOM_BATCH_H
#define QV_TEST_RANDOM_BATCH_H

#include "quiver/arrow.h"

struct rb_options {
    double null_prob;   /* per nullable slot */
    int max_list;       /* list / map lengths 0..max_list */
    int max_string;     /* string lengths 0..max_string */
    int low_cardinality;/* draw values from a small set (dictionary-friendly) */
};

/* Appends `rows` random rows to builder `b`. Returns 0 or the builder's error. */
int rb_append_rows(struct qv_builder *b, int64_t rows, uint64_t *seed,
                   const struct rb_options *o);
/* Builds one batch of `rows` rows for `schema`; `out` owns it on success. */
int rb_batch(const struct qv_schema *schema, int64_t rows, uint64_t seed,
             const struct rb_options *o, struct qv_reservation *r, struct ArrowArray *out);
/* A schema with every supported type, nested ones included. */
int rb_all_types_schema(struct qv_reservation *r, struct qv_schema **out);
uint64_t rb_next(uint64_t *s);

#endif
