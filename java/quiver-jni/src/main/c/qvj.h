/*
 * qvj.h: the internal header of the JNI shim (libquiver_jni.so). Every
 * jni_<concept>.c includes it; nothing here is visible outside the library
 * (the shim is built with -fvisibility=hidden and exports only the JNI entry
 * points, jni.map).
 *
 * Conventions every shim file follows (docs/java.md says why):
 *
 * Onload. A file jni_X.c that needs Java classes or method ids defines
 *     int qvj_X_onload(JNIEnv *env);
 * which looks them up with qvj_class / qvj_method / qvj_static_method /
 * qvj_field and keeps them in its own statics, and returns 0, or -1 with a
 * Java exception pending. jni_onload.c calls each one from JNI_OnLoad, in
 * the order of its table (one line per file). They are resolved there, and
 * never later, because a thread the library attaches to the JVM (a scan
 * worker calling a pool's host) sees only the system class loader, not the
 * loader that loaded Quiver's classes (Spark's --jars). Classes are held as
 * global references that the registry in jni_onload.c owns: JNI_OnUnload,
 * and a JNI_OnLoad that fails half-way, delete all of them, so no part needs
 * an unload function of its own.
 *
 * Errors. A native function that fails throws before it returns, with
 * qvj_throw_error (a struct qv_error from the library) or qvj_throw (a
 * message of the shim's own); both construct the QuiverException subclass of
 * the kind (io.quiver.QuiverException.fromNative) and never replace a Java
 * exception that is already pending (the first failure is the one the caller
 * sees). After a JNI call that can throw (allocating arrays, calling Java),
 * check (*env)->ExceptionCheck and return: the exception is on its way.
 *
 * Strings. Text crosses the boundary as UTF-8 bytes (jbyteArray), never
 * through NewStringUTF / GetStringUTFChars: those speak modified UTF-8,
 * while Quiver's paths, names and messages are arbitrary bytes (a file name
 * need not be UTF-8). Java encodes and decodes (malformed bytes replaced).
 *
 * Handles. A native object is handed to Java as a jlong (qvj_handle) and
 * taken back with qvj_ptr; 0 is never a live handle. The Java side
 * (io.quiver.NativeHandle) guarantees that a handle is not used after it was
 * freed and is freed exactly once, so the shim does not re-check.
 */
#ifndef QVJ_H
#define QVJ_H

#include <jni.h>
#include <stdint.h>

#include "quiver/quiver.h"

/* JNIEXPORT is visibility("default") on Linux; jni.map exports Java_* and
 * the two JNI_On* functions only, so a stray JNIEXPORT cannot leak. */

/* ---- Handles ---- */

static inline jlong qvj_handle(const void *ptr) { return (jlong)(intptr_t)ptr; }
static inline void *qvj_ptr(jlong handle) { return (void *)(intptr_t)handle; }

/* ---- The JVM ----
 * The JavaVM the library was loaded into (set by JNI_OnLoad before any
 * onload function runs; NULL before). For threads the library creates:
 * they attach themselves with (*vm)->AttachCurrentThreadAsDaemon. */
JavaVM *qvj_vm(void);

/* ---- Class and member lookup (for qvj_X_onload functions only) ----
 * Each returns NULL with a Java exception pending (NoClassDefFoundError,
 * NoSuchMethodError, OutOfMemoryError) when the lookup fails. qvj_class
 * returns a global reference owned by the registry: never delete it. */
jclass qvj_class(JNIEnv *env, const char *name);
jmethodID qvj_method(JNIEnv *env, jclass cls, const char *name, const char *sig);
jmethodID qvj_static_method(JNIEnv *env, jclass cls, const char *name, const char *sig);
jfieldID qvj_field(JNIEnv *env, jclass cls, const char *name, const char *sig);

/* ---- Errors ---- */

/* Throws the QuiverException subclass of err->kind (of err->code when the
 * kind is unset) with err's message. Does nothing when a Java exception is
 * already pending. An err without a code (a bug) throws an IO-kind error
 * saying so rather than nothing. */
void qvj_throw_error(JNIEnv *env, const struct qv_error *err);

/* Throws a QuiverException of `kind` with errno `code` and a printf-style
 * message (formatted into a QV_ERROR_MESSAGE_MAX buffer). Does nothing when
 * a Java exception is already pending. */
void qvj_throw(JNIEnv *env, enum qv_error_kind kind, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- Strings (UTF-8 bytes both ways) ---- */

/* A malloc'd, NUL-terminated copy of `bytes` (free() it). NULL with an
 * exception pending when `bytes` is null or contains a NUL byte
 * (QuiverInvalidArgumentException: a C string cannot hold it, and cutting
 * it short would name another file), or on allocation failure. */
char *qvj_utf8_dup(JNIEnv *env, jbyteArray bytes);

/* A new byte[] holding the bytes of `s` (without its NUL). NULL for s ==
 * NULL (no exception), or NULL with an exception pending on failure. */
jbyteArray qvj_bytes(JNIEnv *env, const char *s);
/* As qvj_bytes, for `len` bytes at `s`. */
jbyteArray qvj_bytes_n(JNIEnv *env, const char *s, size_t len);

/* ---- Arrow C Data structs (jni_cdata.c) ----
 * The block behind an io.quiver.CData: Java creates it (CData.create()),
 * passes cdata.address() to a native call that fills one of the structs,
 * imports it with Arrow Java and closes the CData, which releases whatever
 * the import did not take. A native call given a block fills a struct only
 * on success; on failure the struct stays released (release == NULL). */
struct qvj_cdata {
    struct ArrowSchema schema;
    struct ArrowArray array;
    struct ArrowArrayStream stream;
};
struct qvj_cdata *qvj_cdata_get(jlong handle);

/* ---- Pools (jni_pool.c) ----
 * The struct qv_pool of an io.quiver.memory.NativePool, from the handle its
 * nativeHandle() / withAddress() gives; NULL for 0. The NativePool holds
 * one reference to the pool; a native object that outlives the call must
 * take its own (qv_file_open does: a file retains its pool until its last
 * stream and batch are gone), and the Java caller keeps the address valid
 * during the call (NativePool.withAddress). */
struct qv_pool *qvj_pool_get(jlong handle);
/* Whether the calling thread is one the library attached to the JVM (a
 * native scan worker calling a pool's host). Such a thread must not release
 * a scan: the release joins the scan's workers, this thread among them. */
int qvj_thread_attached_here(void);

/* ---- Column names (jni_scan.c) ----
 * A Java byte[][] of UTF-8 column names copied into NUL-terminated strings
 * (scans and split planning take names as qv_file_scan does). */
struct qvj_names {
    char **v;
    int32_t n;
};
/* Returns 0, or -1 with a Java exception pending. A null array leaves *nm
 * empty (n 0, v NULL). */
int qvj_names_get(JNIEnv *env, jobjectArray arr, struct qvj_names *nm);
void qvj_names_free(struct qvj_names *nm);

/* ---- Onload functions (one per shim file; jni_onload.c calls them) ---- */
int qvj_errors_onload(JNIEnv *env);
int qvj_pool_onload(JNIEnv *env);   /* jni_pool.c: MemoryBudget, for pool hosts */
int qvj_scan_onload(JNIEnv *env);   /* jni_scan.c: java.lang.Thread, for interrupts */

#endif /* QVJ_H */
