/* Builder internals shared by builder.c (row API, export) and
 * builder_bulk.c (slice copies). */
#ifndef QV_BUILDER_INTERNAL_H
#define QV_BUILDER_INTERNAL_H

#include "arrow/arrow_internal.h"

struct qv_builder {
    struct qv_reservation *res;
    struct qv_schema *schema;    /* the builder's own copy */
    struct qv_appender *nodes;   /* every field in preorder; nodes[0] is the root */
    int64_t n_nodes;
    struct qv_builder_options opts;
    size_t alloc_size;
    int poisoned;                /* the errno that poisoned the builder, or 0 */
    struct qv_error error;
};

/* Records the first failure, diverts every fast path (limits to 0) and
 * returns the poisoning code. */
int qv__builder_poison(struct qv_builder *b, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Dotted path of an appender's field, for messages. */
const char *qv__appender_path(const struct qv_appender *a, char *buf, size_t cap);
/* Makes room for `need` slots in total (values/offsets and, if active, the
 * validity bitmap). Poisons on failure. */
int qv__appender_reserve(struct qv_appender *a, int64_t need);
/* Makes room for `need` bytes of string data in total; EOVERFLOW past what
 * 32-bit offsets address. Poisons on failure. */
int qv__appender_reserve_data(struct qv_appender *a, int64_t need);
/* Starts a validity bitmap for this batch: earlier slots valid. Needs
 * capacity > length. Poisons on failure. */
int qv__appender_activate_validity(struct qv_appender *a);

#endif
