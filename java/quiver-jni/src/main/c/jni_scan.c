/* Scans and takes of a QuiverFile for io.quiver.ScanStream / QuiverScanReader.
 *
 * The ArrowArrayStream stays in C behind a handle instead of being handed to
 * Arrow Java's stream importer: each batch is fetched here into an
 * ArrowArray that Java allocated, so that a failure inside get_next is
 * thrown as the QuiverException of its kind (qv_scan_last_error) rather
 * than as an IOException wrapping the message text.
 *
 * A filter is parsed here, with its length (a NUL byte inside a string
 * literal is data) and with the calling thread's Java interrupt heard, into
 * a reservation of the file's pool; the parsed tree moves into the scan, so
 * the reservation must outlive the stream, and the handle keeps a reference
 * to the file so that the pool does too. Release order: the stream (which
 * cancels and joins its workers), the reservation, the file. */
#include <jni.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "qvj.h"
#include "quiver/file.h"

struct qvj_stream {
    struct ArrowArrayStream st;
    struct qv_reservation *filter_res; /* the parsed filter's memory, or NULL */
    struct qv_file *file;              /* keeps the pool of filter_res alive */
};

/* Streams opened and not yet released (ScanStream.liveCount, for tests). */
static atomic_llong live_streams;

/* How long getNext waits for the workers before it looks at the thread's
 * interrupt flag: a scan whose filter rejects every row for minutes must
 * still stop when Spark kills the task. */
#define QVJ_SCAN_POLL_MS 100

static jclass thread_class;
static jmethodID thread_current, thread_is_interrupted;

int qvj_scan_onload(JNIEnv *env) {
    thread_class = qvj_class(env, "java/lang/Thread");
    if (!thread_class) return -1;
    thread_current = qvj_static_method(env, thread_class, "currentThread", "()Ljava/lang/Thread;");
    if (!thread_current) return -1;
    thread_is_interrupted = qvj_method(env, thread_class, "isInterrupted", "()Z");
    return thread_is_interrupted ? 0 : -1;
}

/* Whether the calling Java thread is interrupted (the flag is left set), or
 * a Java exception is pending: either way the native work should stop. */
static int java_interrupted(JNIEnv *env) {
    if ((*env)->ExceptionCheck(env)) return 1;
    jobject t = (*env)->CallStaticObjectMethod(env, thread_class, thread_current);
    if (!t) return 1;
    jboolean b = (*env)->CallBooleanMethod(env, t, thread_is_interrupted);
    (*env)->DeleteLocalRef(env, t);
    return (*env)->ExceptionCheck(env) || b;
}

static int parse_interrupted(void *arg) { return java_interrupted(arg); }

static void throw_code(JNIEnv *env, int code, const char *msg) {
    qvj_throw(env, qv_error_kind_of(code), code, "%s", msg);
}

/* ---- arguments ---- */

void qvj_names_free(struct qvj_names *nm) {
    for (int32_t i = 0; i < nm->n; i++) free(nm->v[i]);
    free(nm->v);
    nm->v = NULL;
    nm->n = 0;
}

/* Copies a byte[][] of UTF-8 names into NUL-terminated strings (qvj.h). */
int qvj_names_get(JNIEnv *env, jobjectArray arr, struct qvj_names *nm) {
    nm->v = NULL;
    nm->n = 0;
    if (!arr) return 0;
    jsize n = (*env)->GetArrayLength(env, arr);
    nm->v = calloc(n ? (size_t)n : 1, sizeof *nm->v);
    if (!nm->v) {
        throw_code(env, ENOMEM, "scan: out of memory copying column names");
        return -1;
    }
    for (jsize i = 0; i < n; i++) {
        jbyteArray b = (*env)->GetObjectArrayElement(env, arr, i);
        if (!b) {
            if (!(*env)->ExceptionCheck(env)) throw_code(env, EINVAL, "scan: a column name is null");
            qvj_names_free(nm);
            return -1;
        }
        jsize len = (*env)->GetArrayLength(env, b);
        char *s = malloc((size_t)len + 1);
        if (!s) {
            (*env)->DeleteLocalRef(env, b);
            qvj_names_free(nm);
            throw_code(env, ENOMEM, "scan: out of memory copying column names");
            return -1;
        }
        (*env)->GetByteArrayRegion(env, b, 0, len, (jbyte *)s);
        (*env)->DeleteLocalRef(env, b);
        s[len] = 0;
        nm->v[nm->n++] = s;
        if (memchr(s, 0, (size_t)len)) {
            qvj_names_free(nm);
            qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "scan: column name %d holds a NUL byte",
                      (int)i);
            return -1;
        }
    }
    return 0;
}

static struct qvj_stream *stream_new(JNIEnv *env) {
    struct qvj_stream *s = calloc(1, sizeof *s);
    if (!s) throw_code(env, ENOMEM, "scan: out of memory");
    return s;
}

static void stream_free(struct qvj_stream *s) {
    if (!s) return;
    if (s->st.release) {
        s->st.release(&s->st);
        atomic_fetch_sub(&live_streams, 1);
    }
    qv_reservation_destroy(s->filter_res);
    qv_file_close(s->file);
    free(s);
}

/* A column list that is present but empty selects no column; the file
 * layer tells it from "every column" by a non-NULL pointer. */
static const char *const no_names[1] = {NULL};

JNIEXPORT jlong JNICALL Java_io_quiver_ScanStream_openScan(
    JNIEnv *env, jclass cls, jlong file_handle, jobjectArray columns, jbyteArray filter,
    jlong rg_begin, jlong rg_end, jlong row_begin, jlong row_end, jlong batch_rows, jlong limit,
    jint threads, jint prefetch, jint cast, jint validate, jint nan_order) {
    struct qv_file *file = qvj_ptr(file_handle);
    struct qvj_names nm;
    if (qvj_names_get(env, columns, &nm)) return 0;
    struct qvj_stream *s = stream_new(env);
    if (!s) {
        qvj_names_free(&nm);
        return 0;
    }
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_expr *fx = NULL;
    int rc = 0;
    if (filter) {
        jsize len = (*env)->GetArrayLength(env, filter);
        char *text = malloc(len ? (size_t)len : 1);
        if (!text) {
            rc = qv_error_set(&err, ENOMEM, "filter: out of memory copying the text");
        } else {
            (*env)->GetByteArrayRegion(env, filter, 0, len, (jbyte *)text);
            s->file = qv_file_retain(file);
            struct qv_reservation_options ro = {.name = "java filter"};
            rc = qv_reservation_create(qv_file_pool(file), &ro, &s->filter_res, &err);
            if (!rc) {
                struct qv_expr_parse_options po = {.interrupted = parse_interrupted,
                                                   .interrupted_arg = env};
                rc = qv_expr_parse_n(text, (size_t)len, &po, s->filter_res, &fx, &err);
            }
            free(text);
        }
    }
    if (!rc) {
        struct qv_file_scan_options fo = {
            .columns = columns ? (nm.n ? (const char *const *)nm.v : no_names) : NULL,
            .n_columns = nm.n,
            .scan = {.filter_expr = fx, /* moves into the scan, also on failure */
                     .row_begin = row_begin,
                     .row_end = row_end,
                     .row_group_begin = rg_begin,
                     .row_group_end = rg_end,
                     .batch_rows = batch_rows,
                     .max_rows = limit,
                     .threads = threads,
                     .prefetch = prefetch,
                     .cast = (unsigned)cast,
                     .validate = validate,
                     .nan_order = nan_order},
        };
        rc = qv_file_scan(file, &fo, &s->st, &err);
        if (!rc) atomic_fetch_add(&live_streams, 1);
    }
    qvj_names_free(&nm);
    if (rc) {
        stream_free(s);
        qvj_throw_error(env, &err); /* keeps an exception the interrupt check raised */
        return 0;
    }
    return qvj_handle(s);
}

JNIEXPORT jlong JNICALL Java_io_quiver_ScanStream_openTake(JNIEnv *env, jclass cls,
                                                           jlong file_handle, jlongArray rows,
                                                           jobjectArray columns, jlong batch_rows,
                                                           jint threads, jint prefetch, jint cast,
                                                           jint validate) {
    struct qv_file *file = qvj_ptr(file_handle);
    if (!rows) {
        throw_code(env, EINVAL, "take: no rows given");
        return 0;
    }
    struct qvj_names nm;
    if (qvj_names_get(env, columns, &nm)) return 0;
    struct qvj_stream *s = stream_new(env);
    jsize n = (*env)->GetArrayLength(env, rows);
    int64_t *r = s ? malloc(n ? (size_t)n * sizeof *r : 1) : NULL;
    if (!r) {
        if (s) throw_code(env, ENOMEM, "take: out of memory copying the rows");
        free(s);
        qvj_names_free(&nm);
        return 0;
    }
    (*env)->GetLongArrayRegion(env, rows, 0, n, (jlong *)r);
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_file_scan_options fo = {
        .columns = columns ? (nm.n ? (const char *const *)nm.v : no_names) : NULL,
        .n_columns = nm.n,
        .scan = {.batch_rows = batch_rows,
                 .threads = threads,
                 .prefetch = prefetch,
                 .cast = (unsigned)cast,
                 .validate = validate},
    };
    int rc = qv_file_take(file, r, (int64_t)n, &fo, &s->st, &err); /* copies the rows */
    free(r);
    qvj_names_free(&nm);
    if (rc) {
        stream_free(s);
        qvj_throw_error(env, &err);
        return 0;
    }
    atomic_fetch_add(&live_streams, 1);
    return qvj_handle(s);
}

/* Throws the error record of the stream's failed call. */
static void throw_stream_error(JNIEnv *env, struct qvj_stream *s, int rc) {
    struct qv_error e;
    qv_error_clear(&e);
    if (qv_scan_last_error(&s->st, &e) || !e.code) {
        const char *m = s->st.get_last_error ? s->st.get_last_error(&s->st) : NULL;
        qv_error_set(&e, rc, "%s", m ? m : qv_errno_name(rc));
    }
    qvj_throw_error(env, &e);
}

JNIEXPORT void JNICALL Java_io_quiver_ScanStream_getSchema(JNIEnv *env, jclass cls, jlong h,
                                                           jlong address) {
    struct qvj_stream *s = qvj_ptr(h);
    struct ArrowSchema *out = qvj_ptr(address);
    int rc = s->st.get_schema(&s->st, out);
    if (rc) throw_stream_error(env, s, rc);
}

JNIEXPORT jboolean JNICALL Java_io_quiver_ScanStream_getNext(JNIEnv *env, jclass cls, jlong h,
                                                             jlong address) {
    struct qvj_stream *s = qvj_ptr(h);
    struct ArrowArray *out = qvj_ptr(address);
    /* An interrupted thread cancels the scan: before the call, and while it
     * waits, in slices, for workers that produce nothing for long (a
     * synchronous scan returns from the wait at once: it decodes inside
     * get_next). The interrupt flag is left set for the caller. */
    if (java_interrupted(env)) {
        qv_scan_cancel(&s->st);
    } else {
        while (qv_scan_wait(&s->st, QVJ_SCAN_POLL_MS) == ETIMEDOUT) {
            if (java_interrupted(env)) {
                qv_scan_cancel(&s->st);
                break;
            }
        }
    }
    if ((*env)->ExceptionCheck(env)) return JNI_FALSE;
    int rc = s->st.get_next(&s->st, out);
    if (rc) {
        throw_stream_error(env, s, rc);
        return JNI_FALSE;
    }
    return out->release ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT void JNICALL Java_io_quiver_ScanStream_cancel(JNIEnv *env, jclass cls, jlong h) {
    struct qvj_stream *s = qvj_ptr(h);
    if (s) qv_scan_cancel(&s->st);
}

JNIEXPORT void JNICALL Java_io_quiver_ScanStream_release(JNIEnv *env, jclass cls, jlong h) {
    stream_free(qvj_ptr(h));
}

JNIEXPORT jlongArray JNICALL Java_io_quiver_ScanStream_stats(JNIEnv *env, jclass cls, jlong h) {
    struct qvj_stream *s = qvj_ptr(h);
    struct qv_scan_stats st;
    memset(&st, 0, sizeof st);
    int rc = qv_scan_get_stats(&s->st, &st);
    if (rc) {
        throw_code(env, rc, "scan: no statistics for this stream");
        return NULL;
    }
    jlong v[9] = {st.row_groups_total, st.row_groups_pruned, st.rows_decoded, st.rows_output,
                  st.batches, st.max_queued, st.threads, st.rows_filtered, st.bytes_read};
    jlongArray out = (*env)->NewLongArray(env, 9);
    if (out) (*env)->SetLongArrayRegion(env, out, 0, 9, v);
    return out;
}

JNIEXPORT jboolean JNICALL Java_io_quiver_ScanStream_onNativeWorker(JNIEnv *env, jclass cls) {
    return qvj_thread_attached_here() ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jlong JNICALL Java_io_quiver_ScanStream_nativeLiveCount(JNIEnv *env, jclass cls) {
    return (jlong)atomic_load(&live_streams);
}
