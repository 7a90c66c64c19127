/* The C Data / C Stream interface life cycle: release and move.
 *
 * The interface's only ownership signal is a non-NULL `release`. Releasing
 * through these helpers is idempotent, and a move is a bitwise copy followed
 * by marking the source released, exactly as the specification describes, so
 * a use after move finds release == NULL and is refused instead of freeing
 * twice. */
#include "arrow/arrow_internal.h"

void qv_arrow_schema_release(struct ArrowSchema *schema) {
    if (schema && schema->release) schema->release(schema);
    /* A conforming release sets this itself; a sloppy producer's must not
     * let us call it twice. */
    if (schema) schema->release = NULL;
}

void qv_arrow_array_release(struct ArrowArray *array) {
    if (array && array->release) array->release(array);
    if (array) array->release = NULL;
}

void qv_arrow_stream_release(struct ArrowArrayStream *stream) {
    if (stream && stream->release) stream->release(stream);
    if (stream) stream->release = NULL;
}

/* The three moves differ only in the struct; a macro keeps them identical. */
#define QV_MOVE_BODY(what)                                                                 \
    if (!dst || !src)                                                                      \
        return qv_error_set(err, EINVAL, what " move: %s is NULL", dst ? "source" : "destination"); \
    if (!src->release)                                                                     \
        return qv_error_set(err, EINVAL,                                                   \
                            what " move: the source is released (already moved or freed)"); \
    if (dst == src) return 0;                                                              \
    if (dst->release)                                                                      \
        return qv_error_set(err, EINVAL,                                                   \
                            what " move: the destination still owns data; release it first"); \
    *dst = *src;                                                                           \
    src->release = NULL;                                                                   \
    src->private_data = NULL;                                                              \
    return 0

int qv_arrow_schema_move(struct ArrowSchema *dst, struct ArrowSchema *src, struct qv_error *err) {
    QV_MOVE_BODY("ArrowSchema");
}

int qv_arrow_array_move(struct ArrowArray *dst, struct ArrowArray *src, struct qv_error *err) {
    QV_MOVE_BODY("ArrowArray");
}

int qv_arrow_stream_move(struct ArrowArrayStream *dst, struct ArrowArrayStream *src,
                         struct qv_error *err) {
    QV_MOVE_BODY("ArrowArrayStream");
}

static const _Alignas(64) uint8_t qv__zeros[64];

const void *qv_arrow_zero_buffer(void) { return qv__zeros; }
