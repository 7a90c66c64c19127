/*
 * Arrow C Data structs that cross the boundary: one malloc'd, zeroed block
 * (struct qvj_cdata) holding an ArrowSchema, an ArrowArray and an
 * ArrowArrayStream, which a native call fills and Arrow Java imports
 * through ArrowSchema.wrap / ArrowArray.wrap / ArrowArrayStream.wrap
 * (io.quiver.CData). Arrow Java's importers move what they import and mark
 * the struct released (release = NULL); destroying the block releases
 * whatever is still unreleased, so a failed or partial import leaks
 * nothing and never releases twice. Malloc'd rather than charged to an
 * Arrow allocator: the block is 200 bytes and lives for one call.
 */
#include <stddef.h>
#include <stdlib.h>

#include "qvj.h"

struct qvj_cdata *qvj_cdata_get(jlong handle) { return qvj_ptr(handle); }

JNIEXPORT jlong JNICALL Java_io_quiver_CData_nativeCreate(JNIEnv *env, jclass cls) {
    struct qvj_cdata *c = calloc(1, sizeof *c);
    if (!c) {
        qvj_throw(env, QV_ERROR_OUT_OF_MEMORY, ENOMEM, "Arrow C Data structs: out of memory (%zu bytes)",
                  sizeof *c);
        return 0;
    }
    return qvj_handle(c);
}

JNIEXPORT void JNICALL Java_io_quiver_CData_nativeDestroy(JNIEnv *env, jclass cls, jlong handle) {
    struct qvj_cdata *c = qvj_ptr(handle);
    if (!c) return;
    if (c->stream.release) c->stream.release(&c->stream);
    if (c->array.release) c->array.release(&c->array);
    if (c->schema.release) c->schema.release(&c->schema);
    free(c);
}

/* The offsets of the three structs in the block, for Java's wrap(address). */
JNIEXPORT jlongArray JNICALL Java_io_quiver_CData_nativeOffsets(JNIEnv *env, jclass cls) {
    jlong offsets[3] = {(jlong)offsetof(struct qvj_cdata, schema), (jlong)offsetof(struct qvj_cdata, array),
                        (jlong)offsetof(struct qvj_cdata, stream)};
    jlongArray out = (*env)->NewLongArray(env, 3);
    if (out) (*env)->SetLongArrayRegion(env, out, 0, 3, offsets);
    return out;
}
