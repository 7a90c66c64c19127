/* The push writer behind io.quiver.QuiverWriter: the JVM hands batches one
 * at a time (Arrow C Data structs exported by Java), so the shim drives the
 * format's writer directly (qv_writer_open / write / write_owned / finish)
 * rather than qv_file_write_stream, which pulls from a stream. Row groups
 * are encoded on the native writer's worker thread (maxInFlight); arrays
 * moved in by writeOwned are released by a later call on the calling Java
 * thread, never on the worker.
 *
 * The file is written as a temporary file (unnamed where the file system
 * allows, docs/format.md "Writing.") and given its name by finish; abort,
 * or a close without finish, removes it, so nothing appears under the
 * final name unless finish succeeded. After a failure the native writer
 * refuses everything but abort and close (format.h). */
#include <jni.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qvj.h"
#include "quiver/file.h"

struct qvj_writer {
    struct qv_pool *pool;        /* one reference: the caller's pool, or the writer's own */
    struct qv_reservation *res;  /* its buffering and schema */
    struct qv_schema *schema;
    struct qv_writer *w;
};

/* Writers opened and not yet closed (QuiverWriter.liveCount, for tests). */
static atomic_llong live_writers;

static void writer_free(struct qvj_writer *q) {
    if (!q) return;
    qv_writer_close(q->w); /* aborts an unfinished file */
    qv_schema_destroy(q->schema);
    qv_reservation_destroy(q->res);
    qv_pool_destroy(q->pool);
    free(q);
}

/* Key-value metadata from two byte[][] of equal length (bytes, not strings:
 * qv_kv carries lengths). The arrays hold the copies. */
struct kvs {
    struct qv_kv *kv;
    jbyte **bufs; /* 2 * cap slots, NULL where not copied */
    int64_t n, cap;
};

static void kvs_free(struct kvs *k) {
    for (int64_t i = 0; k->bufs && i < 2 * k->cap; i++) free(k->bufs[i]);
    free(k->bufs);
    free(k->kv);
}

static int kvs_get(JNIEnv *env, jobjectArray keys, jobjectArray values, struct kvs *k) {
    memset(k, 0, sizeof *k);
    if (!keys) return 0;
    jsize n = (*env)->GetArrayLength(env, keys);
    if (!values || (*env)->GetArrayLength(env, values) != n) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "write: metadata keys and values differ in number");
        return -1;
    }
    k->kv = calloc(n ? (size_t)n : 1, sizeof *k->kv);
    k->bufs = calloc(n ? 2 * (size_t)n : 1, sizeof *k->bufs);
    if (!k->kv || !k->bufs) goto oom;
    k->cap = n;
    for (jsize i = 0; i < n; i++) {
        for (int side = 0; side < 2; side++) {
            jbyteArray b = (*env)->GetObjectArrayElement(env, side ? values : keys, i);
            if (!b) {
                qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "write: metadata entry %d is null", (int)i);
                kvs_free(k);
                return -1;
            }
            jsize len = (*env)->GetArrayLength(env, b);
            jbyte *buf = malloc(len ? (size_t)len : 1);
            if (!buf) {
                (*env)->DeleteLocalRef(env, b);
                goto oom;
            }
            (*env)->GetByteArrayRegion(env, b, 0, len, buf);
            (*env)->DeleteLocalRef(env, b);
            k->bufs[2 * i + side] = buf;
            if (side) {
                k->kv[i].value = (const char *)buf;
                k->kv[i].value_len = (int32_t)len;
            } else {
                k->kv[i].key = (const char *)buf;
                k->kv[i].key_len = (int32_t)len;
            }
        }
        k->n = i + 1;
    }
    return 0;
oom:
    kvs_free(k);
    qvj_throw(env, QV_ERROR_OUT_OF_MEMORY, ENOMEM, "write: out of memory copying the metadata");
    return -1;
}

JNIEXPORT jlong JNICALL Java_io_quiver_QuiverWriter_nativeOpen(
    JNIEnv *env, jclass cls, jbyteArray path_bytes, jlong schema_address, jlong row_group_rows,
    jlong row_group_bytes, jboolean compact, jboolean random_access, jobjectArray meta_keys, jobjectArray meta_values,
    jlong memory_limit, jlong pool_handle, jint max_in_flight) {
    struct qv_error err;
    qv_error_clear(&err);
    if (row_group_rows < 0 || row_group_bytes < 0 || memory_limit < 0) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "write: negative row group size or memory limit");
        return 0;
    }
    if (max_in_flight < QV_WRITER_INLINE) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL,
                  "write: maxInFlight %d is below -1 (-1 = encode on the calling thread)",
                  (int)max_in_flight);
        return 0;
    }
    char *path = qvj_utf8_dup(env, path_bytes);
    if (!path) return 0;
    struct kvs kv;
    if (kvs_get(env, meta_keys, meta_values, &kv)) {
        free(path);
        return 0;
    }
    struct qvj_writer *q = calloc(1, sizeof *q);
    int rc = 0;
    if (!q) {
        rc = qv_error_set(&err, ENOMEM, "write '%.300s': out of memory", path);
    } else if (pool_handle) {
        /* A caller's pool (a Spark task's): the writer holds a reference
         * until it is closed, so closing the Java NativePool first is safe. */
        q->pool = qv_pool_retain(qvj_pool_get(pool_handle));
    } else {
        char pname[160];
        snprintf(pname, sizeof pname, "write %.140s", path);
        struct qv_pool_options po = {.name = pname, .limit = (uint64_t)memory_limit};
        rc = qv_pool_create(&po, &q->pool, &err);
    }
    if (!rc) {
        struct qv_reservation_options ro = {.name = "java writer"};
        rc = qv_reservation_create(q->pool, &ro, &q->res, &err);
    }
    if (!rc) {
        rc = qv_schema_import(qvj_ptr(schema_address), q->res,
                              &q->schema, &err);
        if (rc) qv_error_wrap(&err, rc, "write '%.300s': ", path);
    }
    if (!rc) {
        struct qv_writer_options wo = {.row_group_rows = row_group_rows,
                                       .row_group_bytes = (uint64_t)row_group_bytes,
                                       .compact = compact ? 1 : 0,
                                       .random_access = random_access ? 1 : 0,
                                       .metadata = kv.kv,
                                       .n_metadata = kv.n,
                                       .max_in_flight = (int)max_in_flight,
                                       /* One encoding thread per writer, as
                                        * before the parallel writer: Spark
                                        * runs a writer per task, one task
                                        * per core, so more threads would
                                        * only oversubscribe the executor
                                        * and add scratch per thread. */
                                       .threads = 1};
        rc = qv_writer_open(path, q->schema, &wo, q->res, &q->w, &err); /* copies the metadata */
    }
    kvs_free(&kv);
    free(path);
    if (rc) {
        writer_free(q);
        qvj_throw_error(env, &err);
        return 0;
    }
    atomic_fetch_add(&live_writers, 1);
    return qvj_handle(q);
}

/* Appends the batch at `address` and releases it, whatever the outcome
 * (the writer copies what it keeps). */
JNIEXPORT void JNICALL Java_io_quiver_QuiverWriter_nativeWrite(JNIEnv *env, jclass cls, jlong h,
                                                               jlong address) {
    struct qvj_writer *q = qvj_ptr(h);
    struct ArrowArray *a = qvj_ptr(address);
    struct qv_error err;
    qv_error_clear(&err);
    int rc = qv_writer_write(q->w, a, &err);
    if (a->release) a->release(a);
    if (rc) qvj_throw_error(env, &err);
}

/* Moves the batch at `address` into the writer, which holds its buffers
 * (no copy) until its row group is written and then releases it on this
 * thread, inside a later call from Java (Arrow Java's release callback then
 * runs on a thread the JVM knows). On return the struct at `address` is
 * released (release == NULL) whatever the outcome: the caller only frees
 * the struct itself. */
JNIEXPORT void JNICALL Java_io_quiver_QuiverWriter_nativeWriteOwned(JNIEnv *env, jclass cls,
                                                                    jlong h, jlong address) {
    struct qvj_writer *q = qvj_ptr(h);
    struct ArrowArray *a = qvj_ptr(address);
    struct qv_error err;
    qv_error_clear(&err);
    int rc = qv_writer_write_owned(q->w, a, &err);
    if (rc) qvj_throw_error(env, &err);
}

/* Bytes buffered for rows not yet written (native buffers and the arrays
 * held). */
JNIEXPORT jlong JNICALL Java_io_quiver_QuiverWriter_nativeBufferedBytes(JNIEnv *env, jclass cls,
                                                                        jlong h) {
    struct qvj_writer *q = qvj_ptr(h);
    return (jlong)qv_writer_buffered_bytes(q->w);
}

/* Publishes the file; returns {rows, bytes}. */
JNIEXPORT jlongArray JNICALL Java_io_quiver_QuiverWriter_nativeFinish(JNIEnv *env, jclass cls,
                                                                      jlong h) {
    struct qvj_writer *q = qvj_ptr(h);
    struct qv_error err;
    qv_error_clear(&err);
    int rc = qv_writer_finish(q->w, &err);
    if (rc) {
        qvj_throw_error(env, &err);
        return NULL;
    }
    jlong v[2] = {qv_writer_rows_written(q->w), (jlong)qv_writer_bytes_written(q->w)};
    jlongArray out = (*env)->NewLongArray(env, 2);
    if (out) (*env)->SetLongArrayRegion(env, out, 0, 2, v);
    return out;
}

JNIEXPORT void JNICALL Java_io_quiver_QuiverWriter_nativeAbort(JNIEnv *env, jclass cls, jlong h) {
    struct qvj_writer *q = qvj_ptr(h);
    qv_writer_abort(q->w);
}

JNIEXPORT void JNICALL Java_io_quiver_QuiverWriter_nativeClose(JNIEnv *env, jclass cls, jlong h) {
    struct qvj_writer *q = qvj_ptr(h);
    if (!q) return;
    writer_free(q);
    atomic_fetch_sub(&live_writers, 1);
}

JNIEXPORT jlong JNICALL Java_io_quiver_QuiverWriter_nativeLiveCount(JNIEnv *env, jclass cls) {
    return (jlong)atomic_load(&live_writers);
}
