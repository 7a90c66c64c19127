/*
 * io.quiver.QuiverFile's native half: a struct qv_file (file.h) behind a
 * jlong handle. Every function takes the handle the Java side holds open
 * (io.quiver.NativeHandle: a call never runs after the free), returns
 * primitives or arrays, and throws a QuiverException on failure. The path
 * arrives as UTF-8 bytes and is handed to the file layer as they are.
 */
#include <stdlib.h>

#include "qvj.h"

/* Files open through this library, for QuiverFile.liveHandles() (the
 * Cleaner test sees an unclosed file freed). */
static int64_t live_files;

JNIEXPORT jlong JNICALL Java_io_quiver_QuiverFile_nativeOpen(JNIEnv *env, jclass cls, jbyteArray path_bytes,
                                                             jlong memory_limit, jboolean mmap,
                                                             jboolean skip_checksums, jboolean has_expect,
                                                             jlong expect_size, jlong expect_checksum, jlong pool) {
    if (memory_limit < 0) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "open: memory limit %lld is negative",
                  (long long)memory_limit);
        return 0;
    }
    char *path = qvj_utf8_dup(env, path_bytes);
    if (!path) return 0;
    struct qv_file_identity expect = {.size = (uint64_t)expect_size,
                                      .footer_checksum = (uint64_t)expect_checksum};
    struct qv_file_options opts = {.pool = qvj_pool_get(pool), .memory_limit = (uint64_t)memory_limit,
                                   .mmap = mmap == JNI_TRUE,
                                   .skip_checksums = skip_checksums == JNI_TRUE,
                                   .expect = has_expect ? &expect : NULL};
    struct qv_file *file = NULL;
    struct qv_error err = {0};
    int rc = qv_file_open(path, &opts, &file, &err);
    free(path);
    if (rc) {
        qvj_throw_error(env, &err);
        return 0;
    }
    __atomic_add_fetch(&live_files, 1, __ATOMIC_RELAXED);
    return qvj_handle(file);
}

JNIEXPORT void JNICALL Java_io_quiver_QuiverFile_nativeClose(JNIEnv *env, jclass cls, jlong handle) {
    struct qv_file *file = qvj_ptr(handle);
    if (!file) return;
    qv_file_close(file);
    __atomic_sub_fetch(&live_files, 1, __ATOMIC_RELAXED);
}

JNIEXPORT jlong JNICALL Java_io_quiver_QuiverFile_nativeLiveFiles(JNIEnv *env, jclass cls) {
    return (jlong)__atomic_load_n(&live_files, __ATOMIC_RELAXED);
}

JNIEXPORT jlong JNICALL Java_io_quiver_QuiverFile_nativeNumRows(JNIEnv *env, jclass cls, jlong handle) {
    return (jlong)qv_reader_num_rows(qv_file_reader(qvj_ptr(handle)));
}

JNIEXPORT jlong JNICALL Java_io_quiver_QuiverFile_nativeNumRowGroups(JNIEnv *env, jclass cls, jlong handle) {
    return (jlong)qv_reader_num_row_groups(qv_file_reader(qvj_ptr(handle)));
}

/* {size, footer checksum} as a long[2] (unsigned values, same bits). */
JNIEXPORT jlongArray JNICALL Java_io_quiver_QuiverFile_nativeIdentity(JNIEnv *env, jclass cls, jlong handle) {
    struct qv_file_identity id;
    qv_file_identity(qvj_ptr(handle), &id);
    jlong v[2] = {(jlong)id.size, (jlong)id.footer_checksum};
    jlongArray out = (*env)->NewLongArray(env, 2);
    if (out) (*env)->SetLongArrayRegion(env, out, 0, 2, v);
    return out;
}

JNIEXPORT void JNICALL Java_io_quiver_QuiverFile_nativeExportSchema(JNIEnv *env, jclass cls, jlong handle,
                                                                    jlong cdata) {
    struct qvj_cdata *c = qvj_cdata_get(cdata);
    struct qv_error err = {0};
    if (qv_file_export_schema(qvj_ptr(handle), &c->schema, &err)) qvj_throw_error(env, &err);
}

JNIEXPORT void JNICALL Java_io_quiver_QuiverFile_nativeStatistics(JNIEnv *env, jclass cls, jlong handle,
                                                                  jlong row_group, jlong cdata) {
    struct qvj_cdata *c = qvj_cdata_get(cdata);
    struct qv_error err = {0};
    if (qv_file_statistics(qvj_ptr(handle), row_group, &c->schema, &c->array, &err))
        qvj_throw_error(env, &err);
}

/* The splits as a long[5 * n]: row group begin, end, row begin, end, bytes.
 * `columns` (UTF-8 names) weighs only those columns; null weighs them all. */
JNIEXPORT jlongArray JNICALL Java_io_quiver_QuiverFile_nativePlanSplits(JNIEnv *env, jclass cls, jlong handle,
                                                                        jlong target_bytes,
                                                                        jobjectArray columns) {
    if (target_bytes < 0) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EINVAL, "file '%s': splits: target size %lld is negative",
                  qv_reader_path(qv_file_reader(qvj_ptr(handle))), (long long)target_bytes);
        return NULL;
    }
    struct qvj_names nm;
    if (qvj_names_get(env, columns, &nm)) return NULL;
    /* Present but empty is "no column", told from "every column" by a
     * non-NULL pointer. */
    static const char *const no_names[1] = {NULL};
    const char *const *names = columns ? (nm.n ? (const char *const *)nm.v : no_names) : NULL;
    struct qv_file_split *splits = NULL;
    int64_t n = 0;
    struct qv_error err = {0};
    int rc = qv_file_plan_splits_columns(qvj_ptr(handle), names, nm.n, (uint64_t)target_bytes,
                                         &splits, &n, &err);
    qvj_names_free(&nm);
    if (rc) {
        qvj_throw_error(env, &err);
        return NULL;
    }
    jlongArray out = NULL;
    if (n > INT32_MAX / 5) {
        qvj_throw(env, QV_ERROR_INVALID_ARGUMENT, EOVERFLOW, "splits: %lld splits are too many for a Java array",
                  (long long)n);
    } else {
        out = (*env)->NewLongArray(env, (jsize)(5 * n));
        for (int64_t i = 0; out && i < n; i++) {
            jlong v[5] = {splits[i].row_group_begin, splits[i].row_group_end, splits[i].row_begin,
                          splits[i].row_end, (jlong)splits[i].bytes};
            (*env)->SetLongArrayRegion(env, out, (jsize)(5 * i), 5, v);
        }
    }
    free(splits);
    return out;
}
