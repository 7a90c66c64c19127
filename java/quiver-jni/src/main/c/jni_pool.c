/* io.quiver.memory.NativePool: a Quiver pool whose budget is its own limit
 * or a Java io.quiver.memory.MemoryBudget (Spark's task memory), and the
 * host callbacks that call that budget from native code.
 *
 * Threads. The pool calls its host from whichever thread crosses a pool
 * block: the Java thread inside a scan call, or a native scan worker the
 * JVM has never seen. Such a worker is attached here as a *daemon* thread
 * (a non-daemon attach would keep the JVM alive after main returns) and
 * detached when it exits, by the destructor of a pthread key set only on
 * threads attached here. Classes and method ids are resolved in
 * qvj_pool_onload, because an attached thread sees only the system class
 * loader.
 *
 * Locks. No lock of the shim or of Quiver is held across a call into Java
 * (the pool never calls its host with its lock held): a budget may block,
 * spill other consumers, or call back into Quiver (releaseUnused from a
 * spill). The only lock here guards the last refusal message, and it is
 * held for a string copy.
 *
 * Failures. An exception thrown by the budget's acquire is cleared (the
 * pool's caller is native code that cannot see it) and counts as a grant
 * of 0; its text is kept and the pool puts it into the out-of-memory error
 * it raises (qv_pool_host.describe), which reaches Java as a
 * QuiverOutOfMemoryException. An exception from release is cleared too:
 * the bytes are gone from the pool either way.
 *
 * Lifetime. Java's NativePool holds one reference to the pool; the file
 * layer retains the pool for each file, stream and batch charging it
 * (qv_pool_retain), so Java may close its NativePool while Arrow Java
 * still holds imported batches. The host context (with the global
 * reference to the budget) is freed by the pool's finish callback, after
 * its last release, whichever thread drops the last reference. */
#include <jni.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qvj.h"

#define QVJ_POOL_WHY_MAX 400

struct qvj_host {
    jobject budget; /* global reference to the MemoryBudget */
    pthread_mutex_t lock;
    char why[QVJ_POOL_WHY_MAX]; /* the last refusal, for the OOM message */
};

static jclass budget_class, throwable_class, string_class;
static jmethodID budget_acquire, budget_release, throwable_to_string, string_get_bytes;
static jstring utf8_name; /* "UTF-8", a global reference */

/* Threads attached by this file: the key's value is non-NULL only on them,
 * so the destructor detaches exactly those, at thread exit. */
static pthread_key_t attached_key;
static pthread_once_t attached_once = PTHREAD_ONCE_INIT;
static int attached_key_ok;

static void detach_at_exit(void *value) {
    (void)value;
    JavaVM *vm = qvj_vm();
    if (vm) (*vm)->DetachCurrentThread(vm);
}

static void make_key(void) { attached_key_ok = pthread_key_create(&attached_key, detach_at_exit) == 0; }

int qvj_thread_attached_here(void) {
    return attached_key_ok && pthread_getspecific(attached_key) != NULL;
}

int qvj_pool_onload(JNIEnv *env) {
    pthread_once(&attached_once, make_key);
    if (!attached_key_ok) {
        jclass err = (*env)->FindClass(env, "java/lang/InternalError");
        if (err) (*env)->ThrowNew(env, err, "quiver_jni: cannot create the thread-exit key");
        return -1;
    }
    budget_class = qvj_class(env, "io/quiver/memory/MemoryBudget");
    if (!budget_class) return -1;
    budget_acquire = qvj_method(env, budget_class, "acquire", "(J)J");
    if (!budget_acquire) return -1;
    budget_release = qvj_method(env, budget_class, "release", "(J)V");
    if (!budget_release) return -1;
    throwable_class = qvj_class(env, "java/lang/Throwable");
    if (!throwable_class) return -1;
    throwable_to_string = qvj_method(env, throwable_class, "toString", "()Ljava/lang/String;");
    if (!throwable_to_string) return -1;
    string_class = qvj_class(env, "java/lang/String");
    if (!string_class) return -1;
    string_get_bytes = qvj_method(env, string_class, "getBytes", "(Ljava/lang/String;)[B");
    if (!string_get_bytes) return -1;
    if (utf8_name) (*env)->DeleteGlobalRef(env, utf8_name); /* a reload */
    jstring local = (*env)->NewStringUTF(env, "UTF-8");
    if (!local) return -1;
    utf8_name = (*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    return utf8_name ? 0 : -1;
}

/* The calling thread's JNIEnv, attaching it as a daemon thread when the JVM
 * does not know it yet; NULL when that fails (or the library is unloaded). */
static JNIEnv *thread_env(void) {
    JavaVM *vm = qvj_vm();
    if (!vm) return NULL;
    JNIEnv *env = NULL;
    jint rc = (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8);
    if (rc == JNI_OK) return env;
    if (rc != JNI_EDETACHED) return NULL;
    JavaVMAttachArgs args = {JNI_VERSION_1_8, "quiver-native", NULL};
    if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, &args) != JNI_OK) return NULL;
    /* Any non-NULL value: it only makes the destructor run at thread exit. */
    if (pthread_setspecific(attached_key, (void *)1) != 0) {
        /* Without the key the thread would stay attached after it exits:
         * detach now and let this call fail instead. */
        (*vm)->DetachCurrentThread(vm);
        return NULL;
    }
    return env;
}

static void set_why(struct qvj_host *h, const char *s, size_t n) {
    if (n >= sizeof h->why) n = sizeof h->why - 1;
    pthread_mutex_lock(&h->lock);
    memcpy(h->why, s, n);
    h->why[n] = 0;
    pthread_mutex_unlock(&h->lock);
}

/* Clears the pending exception and keeps its text (Throwable.toString(),
 * as UTF-8 bytes: modified UTF-8 would mangle messages with NULs or
 * characters outside the BMP) as the host's last refusal. */
static void keep_exception(JNIEnv *env, struct qvj_host *h, const char *during) {
    jthrowable t = (*env)->ExceptionOccurred(env);
    (*env)->ExceptionClear(env);
    char prefix[96];
    int pn = snprintf(prefix, sizeof prefix, "MemoryBudget.%s threw ", during);
    char buf[QVJ_POOL_WHY_MAX];
    size_t n = (size_t)(pn > 0 ? pn : 0);
    memcpy(buf, prefix, n);
    jstring text = t ? (*env)->CallObjectMethod(env, t, throwable_to_string) : NULL;
    jbyteArray bytes = NULL;
    if (text && !(*env)->ExceptionCheck(env))
        bytes = (*env)->CallObjectMethod(env, text, string_get_bytes, utf8_name);
    if (bytes && !(*env)->ExceptionCheck(env)) {
        jsize len = (*env)->GetArrayLength(env, bytes);
        size_t room = sizeof buf - n - 1;
        size_t take = (size_t)len < room ? (size_t)len : room;
        (*env)->GetByteArrayRegion(env, bytes, 0, (jsize)take, (jbyte *)buf + n);
        n += take;
    } else {
        static const char unknown[] = "an exception whose text could not be read";
        memcpy(buf + n, unknown, sizeof unknown - 1);
        n += sizeof unknown - 1;
    }
    (*env)->ExceptionClear(env); /* toString throwing only loses the text */
    set_why(h, buf, n);
}

static uint64_t host_acquire(void *ctx, uint64_t bytes) {
    struct qvj_host *h = ctx;
    JNIEnv *env = thread_env();
    if (!env) {
        static const char msg[] = "the thread could not be attached to the JVM";
        set_why(h, msg, sizeof msg - 1);
        return 0;
    }
    /* Java cannot be called with an exception pending; that exception is
     * the caller's failure already and stays pending. */
    if ((*env)->ExceptionCheck(env)) {
        static const char msg[] = "a Java exception was pending on the asking thread";
        set_why(h, msg, sizeof msg - 1);
        return 0;
    }
    /* An attached worker has no native frame to collect local references:
     * a frame of our own frees them. */
    if ((*env)->PushLocalFrame(env, 8) != 0) {
        (*env)->ExceptionClear(env);
        static const char msg[] = "no room for JNI local references";
        set_why(h, msg, sizeof msg - 1);
        return 0;
    }
    jlong ask = bytes > (uint64_t)INT64_MAX ? INT64_MAX : (jlong)bytes;
    jlong got = (*env)->CallLongMethod(env, h->budget, budget_acquire, ask);
    uint64_t granted = 0;
    if ((*env)->ExceptionCheck(env)) {
        keep_exception(env, h, "acquire");
    } else {
        granted = got <= 0 ? 0 : (uint64_t)got > bytes ? bytes : (uint64_t)got;
        if (got > 0 && (uint64_t)got > bytes) {
            /* The budget counts all it returned as granted, but the pool
             * takes only what it asked for and will only ever release that:
             * the excess goes back now, or the budget's books would keep it
             * charged forever (a Spark task's leak check would fail). */
            (*env)->CallVoidMethod(env, h->budget, budget_release, (jlong)((uint64_t)got - bytes));
            if ((*env)->ExceptionCheck(env)) keep_exception(env, h, "release");
        }
        if (granted == bytes) set_why(h, "", 0);
        else {
            char msg[96];
            int n = snprintf(msg, sizeof msg, "MemoryBudget.acquire returned %lld", (long long)got);
            set_why(h, msg, n > 0 ? (size_t)n : 0);
        }
    }
    (*env)->PopLocalFrame(env, NULL);
    return granted;
}

static void host_release(void *ctx, uint64_t bytes) {
    struct qvj_host *h = ctx;
    JNIEnv *env = thread_env();
    if (!env) return; /* nothing to be done: the JVM is gone or refuses the thread */
    /* A pending exception (the caller's failure, with batches released on
     * the way out) must survive, and Java cannot be called over it: park
     * it, release, and throw it again. */
    jthrowable pending = (*env)->ExceptionOccurred(env);
    if (pending) (*env)->ExceptionClear(env);
    if ((*env)->PushLocalFrame(env, 8) == 0) {
        while (bytes) {
            jlong part = bytes > (uint64_t)INT64_MAX ? INT64_MAX : (jlong)bytes;
            (*env)->CallVoidMethod(env, h->budget, budget_release, part);
            if ((*env)->ExceptionCheck(env)) {
                keep_exception(env, h, "release");
                break;
            }
            bytes -= (uint64_t)part;
        }
        (*env)->PopLocalFrame(env, NULL);
    } else {
        (*env)->ExceptionClear(env);
    }
    if (pending) {
        (*env)->Throw(env, pending);
        (*env)->DeleteLocalRef(env, pending);
    }
}

static void host_describe(void *ctx, char *buf, size_t cap) {
    struct qvj_host *h = ctx;
    pthread_mutex_lock(&h->lock);
    snprintf(buf, cap, "%s", h->why);
    pthread_mutex_unlock(&h->lock);
}

/* After the pool's last release: the budget may be collected now. */
static void host_finish(void *ctx) {
    struct qvj_host *h = ctx;
    JNIEnv *env = thread_env();
    if (env) (*env)->DeleteGlobalRef(env, h->budget);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

struct qv_pool *qvj_pool_get(jlong handle) { return qvj_ptr(handle); }

JNIEXPORT jlong JNICALL Java_io_quiver_memory_NativePool_nativeCreate(JNIEnv *env, jclass cls,
                                                                      jbyteArray name, jlong limit,
                                                                      jobject budget,
                                                                      jlong block_size) {
    char *cname = qvj_utf8_dup(env, name);
    if (!cname) return 0;
    if (limit < 0 || block_size < 0) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL,
                  "NativePool '%s': negative %s", cname, limit < 0 ? "limit" : "block size");
        free(cname);
        return 0;
    }
    struct qv_pool_options o = {.name = cname, .limit = (uint64_t)limit,
                                .block_size = (uint64_t)block_size};
    struct qvj_host *h = NULL;
    struct qv_pool_host host;
    if (budget) {
        h = calloc(1, sizeof *h);
        if (!h || pthread_mutex_init(&h->lock, NULL) != 0) {
            free(h);
            qvj_throw(env, QV_ERROR_OUT_OF_MEMORY, ENOMEM, "NativePool '%s': out of memory", cname);
            free(cname);
            return 0;
        }
        h->budget = (*env)->NewGlobalRef(env, budget);
        if (!h->budget) { /* OutOfMemoryError pending */
            pthread_mutex_destroy(&h->lock);
            free(h);
            free(cname);
            return 0;
        }
        host = (struct qv_pool_host){h, host_acquire, host_release, host_finish, host_describe};
        o.host = &host;
    }
    struct qv_pool *pool = NULL;
    struct qv_error err = {0};
    int rc = qv_pool_create(&o, &pool, &err);
    free(cname);
    if (rc) {
        if (h) {
            (*env)->DeleteGlobalRef(env, h->budget);
            pthread_mutex_destroy(&h->lock);
            free(h);
        }
        qvj_throw_error(env, &err);
        return 0;
    }
    return qvj_handle(pool);
}

JNIEXPORT jlong JNICALL Java_io_quiver_memory_NativePool_nativeReleaseUnused(JNIEnv *env,
                                                                             jclass cls,
                                                                             jlong handle,
                                                                             jlong wanted) {
    uint64_t got = qv_pool_release_unused(qvj_ptr(handle), wanted <= 0 ? 0 : (uint64_t)wanted);
    return got > (uint64_t)INT64_MAX ? INT64_MAX : (jlong)got;
}

/* Fills `out` in the order of io.quiver.memory.PoolStats's components. */
JNIEXPORT void JNICALL Java_io_quiver_memory_NativePool_nativeStats(JNIEnv *env, jclass cls,
                                                                    jlong handle, jlongArray out) {
    struct qv_pool_stats s;
    qv_pool_get_stats(qvj_ptr(handle), &s);
    jlong v[] = {(jlong)s.reserved,           (jlong)s.peak_reserved,
                 (jlong)s.host_held,          (jlong)s.host_acquire_calls,
                 (jlong)s.host_release_calls, (jlong)s.host_bytes_acquired,
                 (jlong)s.host_bytes_released, (jlong)s.spill_calls,
                 (jlong)s.oom_count,          (jlong)s.limit,
                 (jlong)s.block_size,         (jlong)s.reservations,
                 (jlong)s.cache_bytes,        (jlong)s.cache_hits,
                 (jlong)s.cache_misses,       (jlong)qv_pool_used(qvj_ptr(handle))};
    jsize n = (jsize)(sizeof v / sizeof v[0]);
    if ((*env)->GetArrayLength(env, out) < n) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "NativePool.stats: array shorter than %d",
                  (int)n);
        return;
    }
    (*env)->SetLongArrayRegion(env, out, 0, n, v);
}

/* Drops Java's reference; files, streams and batches still charging the
 * pool keep it (and its host) until the last of them is released. */
JNIEXPORT void JNICALL Java_io_quiver_memory_NativePool_nativeDestroy(JNIEnv *env, jclass cls,
                                                                      jlong handle) {
    qv_pool_destroy(qvj_ptr(handle));
}
