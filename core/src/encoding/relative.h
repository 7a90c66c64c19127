/* The writer's entry point to the relative encoding (relative.c), for the
 * format part, which cannot include enc_internal.h (both parts name their
 * own tree nodes struct qv__node). */
#ifndef QV_ENC_RELATIVE_H
#define QV_ENC_RELATIVE_H

#include "quiver/encoding.h"

/* Encodes a chunk as a relative root: `diffs` holds the differences
 * (value - reference value, wrapping) of an integer kind, and ref_node is
 * the physical node number of the reference column. The differences go
 * through the cascade as a root's values would (compact mode included;
 * opts->force is ignored). Same contract as qv_encode otherwise. */
int qv__relative_encode(const struct qv_values *diffs, int64_t ref_node,
                        const struct qv_encode_options *opts, struct qv_reservation *r,
                        struct qv_encoded *out, struct qv_error *err);

#endif
