/*
 * Errors and strings across the boundary: a struct qv_error becomes the
 * QuiverException subclass of its kind, built in Java by
 * QuiverException.fromNative(kind, errno, messageBytes) so the message is
 * decoded there (UTF-8, malformed bytes replaced: building the exception
 * never fails on its text). Text goes both ways as byte arrays (qvj.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qvj.h"

static jclass exception_class;      /* io.quiver.QuiverException */
static jmethodID exception_from_native; /* static fromNative(II[B) */

int qvj_errors_onload(JNIEnv *env) {
    exception_class = qvj_class(env, "io/quiver/QuiverException");
    if (!exception_class) return -1;
    exception_from_native = qvj_static_method(env, exception_class, "fromNative",
                                              "(II[B)Lio/quiver/QuiverException;");
    return exception_from_native ? 0 : -1;
}

/* Builds and throws; any failure on the way (out of memory for the byte
 * array, say) leaves that failure pending instead, which is still an
 * exception for the caller. */
static void throw_kind(JNIEnv *env, int kind, int code, const char *msg, size_t len) {
    jbyteArray bytes = qvj_bytes_n(env, msg, len);
    if (!bytes) return;
    jobject ex = (*env)->CallStaticObjectMethod(env, exception_class, exception_from_native,
                                                (jint)kind, (jint)code, bytes);
    (*env)->DeleteLocalRef(env, bytes);
    if ((*env)->ExceptionCheck(env) || !ex) return;
    (*env)->Throw(env, (jthrowable)ex);
    (*env)->DeleteLocalRef(env, ex);
}

void qvj_throw_error(JNIEnv *env, const struct qv_error *err) {
    if ((*env)->ExceptionCheck(env)) return;
    if (!err || err->code == 0) {
        static const char bug[] = "quiver: a native call failed without an error record (a bug in the JNI library)";
        throw_kind(env, QV_ERROR_IO, EIO, bug, sizeof bug - 1);
        return;
    }
    int kind = err->kind != QV_ERROR_NONE ? err->kind : (int)qv_error_kind_of(err->code);
    /* The record is fixed-size; a message that filled it is not terminated. */
    size_t len = strnlen(err->message, sizeof err->message);
    if (len == 0) {
        const char *name = qv_errno_name(err->code);
        throw_kind(env, kind, err->code, name, strlen(name));
        return;
    }
    throw_kind(env, kind, err->code, err->message, len);
}

void qvj_throw(JNIEnv *env, enum qv_error_kind kind, int code, const char *fmt, ...) {
    if ((*env)->ExceptionCheck(env)) return;
    char msg[QV_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    throw_kind(env, (int)kind, code, msg, len);
}

char *qvj_utf8_dup(JNIEnv *env, jbyteArray bytes) {
    if (!bytes) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "a string argument is null");
        return NULL;
    }
    jsize n = (*env)->GetArrayLength(env, bytes);
    char *s = malloc((size_t)n + 1);
    if (!s) {
        qvj_throw(env, QV_ERROR_OUT_OF_MEMORY, ENOMEM, "copying a string of %ld bytes: out of memory",
                  (long)n);
        return NULL;
    }
    (*env)->GetByteArrayRegion(env, bytes, 0, n, (jbyte *)s);
    s[n] = '\0';
    /* A C string ends at its first NUL: a path cut there would name
     * another file, so such a string is refused, not truncated. */
    const char *nul = memchr(s, '\0', (size_t)n);
    if (nul) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL,
                  "a string argument contains a NUL byte at offset %ld: '%.*s...'",
                  (long)(nul - s), (int)(nul - s > 200 ? 200 : nul - s), s);
        free(s);
        return NULL;
    }
    return s;
}

jbyteArray qvj_bytes_n(JNIEnv *env, const char *s, size_t len) {
    if (len > INT32_MAX) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EOVERFLOW, "a string of %zu bytes is too long for a Java array", len);
        return NULL;
    }
    jbyteArray out = (*env)->NewByteArray(env, (jsize)len);
    if (!out) return NULL; /* OutOfMemoryError pending */
    (*env)->SetByteArrayRegion(env, out, 0, (jsize)len, (const jbyte *)s);
    return out;
}

jbyteArray qvj_bytes(JNIEnv *env, const char *s) {
    if (!s) return NULL;
    return qvj_bytes_n(env, s, strlen(s));
}
