/*
 * JNI_OnLoad and JNI_OnUnload, and the registry of the global class
 * references the shim's files take while loading (qvj.h, "Onload").
 *
 * Loading fails cleanly, never by a crash: when a class or member is missing
 * (a jar of another version on the class path, a class loader that cannot
 * see Quiver's classes), the onload function that looked it up returns -1
 * with the JVM's exception pending; JNI_OnLoad deletes the references taken
 * so far, replaces that exception with an UnsatisfiedLinkError naming the
 * part and the cause, and returns JNI_ERR. System.load then throws it.
 */
#include <stdio.h>
#include <string.h>

#include "qvj.h"

/* The JNI version the library needs: 1.8 (Java 8) or later. */
#define QVJ_JNI_VERSION JNI_VERSION_1_8

/* Every shim file with Java classes or method ids to resolve: one line each. */
static const struct {
    const char *part;
    int (*onload)(JNIEnv *env);
} parts[] = {
    {"errors", qvj_errors_onload},
    {"pool", qvj_pool_onload},
    {"scan", qvj_scan_onload},
};

/* Global class references taken by qvj_class; JNI_OnLoad and JNI_OnUnload
 * run once each per library instance and nothing else touches the table,
 * so it needs no lock. */
#define QVJ_MAX_CLASSES 64
static jclass classes[QVJ_MAX_CLASSES];
static int n_classes;
static JavaVM *java_vm;

JavaVM *qvj_vm(void) { return java_vm; }

jclass qvj_class(JNIEnv *env, const char *name) {
    if (n_classes == QVJ_MAX_CLASSES) {
        char msg[256];
        snprintf(msg, sizeof msg, "quiver_jni: more than %d classes to cache (raise QVJ_MAX_CLASSES in jni_onload.c); at %s",
                 QVJ_MAX_CLASSES, name);
        jclass err = (*env)->FindClass(env, "java/lang/InternalError");
        if (err) (*env)->ThrowNew(env, err, msg);
        return NULL;
    }
    jclass local = (*env)->FindClass(env, name);
    if (!local) return NULL; /* NoClassDefFoundError pending */
    jclass global = (*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    if (!global) return NULL; /* OutOfMemoryError pending */
    classes[n_classes++] = global;
    return global;
}

jmethodID qvj_method(JNIEnv *env, jclass cls, const char *name, const char *sig) {
    return (*env)->GetMethodID(env, cls, name, sig);
}

jmethodID qvj_static_method(JNIEnv *env, jclass cls, const char *name, const char *sig) {
    return (*env)->GetStaticMethodID(env, cls, name, sig);
}

jfieldID qvj_field(JNIEnv *env, jclass cls, const char *name, const char *sig) {
    return (*env)->GetFieldID(env, cls, name, sig);
}

static void release_classes(JNIEnv *env) {
    while (n_classes > 0) (*env)->DeleteGlobalRef(env, classes[--n_classes]);
}

/* Replaces the pending exception (the lookup's) by an UnsatisfiedLinkError
 * that says which part failed and carries the original as its cause. */
static void fail_loading(JNIEnv *env, const char *part) {
    jthrowable cause = (*env)->ExceptionOccurred(env);
    (*env)->ExceptionClear(env);
    char msg[512];
    snprintf(msg, sizeof msg,
             "libquiver_jni: JNI_OnLoad could not resolve the Java classes of its '%s' part; the "
             "library must be loaded by io.quiver.NativeLibrary, from a class loader that sees "
             "the quiver-jni classes of the same version (cause attached)", part);
    jclass ule = (*env)->FindClass(env, "java/lang/UnsatisfiedLinkError");
    if (!ule) return; /* that failure is pending instead */
    jmethodID ctor = (*env)->GetMethodID(env, ule, "<init>", "(Ljava/lang/String;)V");
    jmethodID init_cause = (*env)->GetMethodID(env, ule, "initCause",
                                               "(Ljava/lang/Throwable;)Ljava/lang/Throwable;");
    jstring text = ctor ? (*env)->NewStringUTF(env, msg) : NULL; /* ASCII: modified UTF-8 is fine */
    jobject ex = text ? (*env)->NewObject(env, ule, ctor, text) : NULL;
    if (ex && cause && init_cause) {
        jobject ignored = (*env)->CallObjectMethod(env, ex, init_cause, cause);
        if (ignored) (*env)->DeleteLocalRef(env, ignored);
        (*env)->ExceptionClear(env); /* initCause failing only loses the cause */
    }
    if (ex) (*env)->Throw(env, (jthrowable)ex);
    else if (!(*env)->ExceptionCheck(env)) (*env)->ThrowNew(env, ule, msg);
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **)&env, QVJ_JNI_VERSION) != JNI_OK) {
        /* No env to throw through: System.load reports the failure. */
        return JNI_ERR;
    }
    java_vm = vm;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i].onload(env) != 0 || (*env)->ExceptionCheck(env)) {
            if (!(*env)->ExceptionCheck(env)) {
                jclass ule = (*env)->FindClass(env, "java/lang/UnsatisfiedLinkError");
                if (ule) (*env)->ThrowNew(env, ule, "libquiver_jni: JNI_OnLoad failed");
            }
            fail_loading(env, parts[i].part);
            release_classes(env);
            java_vm = NULL;
            return JNI_ERR;
        }
    }
    return QVJ_JNI_VERSION;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM *vm, void *reserved) {
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **)&env, QVJ_JNI_VERSION) == JNI_OK) release_classes(env);
    java_vm = NULL;
}

/* io.quiver.NativeLibrary.nativeVersion(): the library's version, so a
 * loader can check the native half matches the Java half. */
JNIEXPORT jbyteArray JNICALL Java_io_quiver_NativeLibrary_nativeVersion(JNIEnv *env, jclass cls) {
    return qvj_bytes(env, QV_VERSION_STRING);
}
