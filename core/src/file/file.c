/* The file handle of the front-end layer: opening by path or source under
 * a memory budget, the file's identity, reference counting, and the
 * handle's accessors. See quiver/file.h for the contract. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file/file_internal.h"
#include "format/reader_internal.h"

struct qv__poolref *qv__poolref_retain(struct qv__poolref *p) {
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
    return p;
}

void qv__poolref_release(struct qv__poolref *p) {
    if (!p || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    qv_pool_destroy(p->pool); /* its own, or its reference to the caller's */
    free(p);
}

static int poolref_for(const char *name, const struct qv_file_options *o, struct qv__poolref **out,
                       struct qv_error *err) {
    struct qv__poolref *p = calloc(1, sizeof *p);
    if (!p) return qv_error_set(err, ENOMEM, "file '%.300s': out of memory", name);
    p->refs = 1;
    if (o && o->pool) {
        p->pool = qv_pool_retain(o->pool);
    } else {
        char pname[128];
        snprintf(pname, sizeof pname, "file %.100s", name);
        struct qv_pool_options po = {.name = pname, .limit = o ? o->memory_limit : 0};
        int rc = qv_pool_create(&po, &p->pool, err);
        if (rc) {
            free(p);
            return rc;
        }
    }
    *out = p;
    return 0;
}

static int changed(struct qv_error *err, const char *name, const struct qv_file_identity *want,
                   uint64_t size, const uint64_t *checksum) {
    char found[96];
    if (checksum)
        snprintf(found, sizeof found, "%llu bytes with footer checksum %016llx",
                 (unsigned long long)size, (unsigned long long)*checksum);
    else
        snprintf(found, sizeof found, "%llu bytes", (unsigned long long)size);
    return qv_error_set_kind(err, ESTALE, QV_ERROR_CHANGED,
                             "file '%.300s' changed since it was planned: expected %llu bytes with "
                             "footer checksum %016llx, found %s",
                             name, (unsigned long long)want->size,
                             (unsigned long long)want->footer_checksum, found);
}

int qv_file_open_source(struct qv_source *src, const struct qv_file_options *opts,
                        struct qv_file **out, struct qv_error *err) {
    *out = NULL;
    const char *name = src->name ? src->name : "";
    /* The size first: a replaced file of another size is ESTALE before its
     * footer is read (it may not even be a Quiver file any more). */
    if (opts && opts->expect && src->size != opts->expect->size) {
        int rc = changed(err, name, opts->expect, src->size, NULL);
        qv_source_close(src);
        return rc;
    }
    struct qv_file *f = calloc(1, sizeof *f);
    if (!f) {
        qv_source_close(src);
        return qv_error_set(err, ENOMEM, "file '%.300s': out of memory", name);
    }
    f->refs = 1;
    int rc = poolref_for(name, opts, &f->pool, err);
    if (!rc) {
        char rname[128];
        snprintf(rname, sizeof rname, "file reader %.100s", name);
        struct qv_reservation_options ro = {.name = rname};
        rc = qv_reservation_create(f->pool->pool, &ro, &f->res, err);
    }
    if (rc) {
        qv_source_close(src);
    } else {
        struct qv_reader_options rdo = {.skip_checksums = opts && opts->skip_checksums};
        rc = qv_reader_open_source(src, &rdo, f->res, &f->rd, err);
    }
    if (!rc) {
        f->id.size = qv_reader_file_size(f->rd);
        f->id.footer_checksum = qv_reader_footer_checksum(f->rd);
        if (opts && opts->expect && f->id.footer_checksum != opts->expect->footer_checksum)
            rc = changed(err, qv_reader_path(f->rd), opts->expect, f->id.size,
                         &f->id.footer_checksum);
    }
    int64_t tcb = opts ? opts->take_cache_bytes : 0;
    if (!rc && tcb >= 0)
        rc = qv__take_cache_create(f->rd, f->pool->pool, tcb ? (uint64_t)tcb : QV__TAKE_CACHE_DEFAULT,
                                   &f->tc, err);
    if (!rc && f->tc) {
        /* Column readers reading blocks on demand copy what the cache's
         * readers hold instead of reading it again (a relative column's
         * reference, taken with it). */
        f->rd->lend = qv__take_cache_lend;
        f->rd->lend_ctx = f->tc;
    }
    if (rc) {
        qv__take_cache_destroy(f->tc);
        qv_reader_close(f->rd);
        qv_reservation_destroy(f->res);
        qv__poolref_release(f->pool);
        free(f);
        return rc;
    }
    *out = f;
    return 0;
}

int qv_file_open(const char *path, const struct qv_file_options *opts, struct qv_file **out,
                 struct qv_error *err) {
    *out = NULL;
    if (!path) return qv_error_set(err, EINVAL, "open: no path given");
    struct qv_source src;
    int rc = opts && opts->mmap ? qv_source_open_file_mapped(path, &src, err)
                                : qv_source_open_file(path, &src, err);
    if (rc) return rc;
    return qv_file_open_source(&src, opts, out, err);
}

struct qv_file *qv_file_retain(struct qv_file *file) {
    __atomic_add_fetch(&file->refs, 1, __ATOMIC_RELAXED);
    return file;
}

void qv_file_close(struct qv_file *f) {
    if (!f || __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    f->rd->lend = NULL;
    qv__take_cache_destroy(f->tc);
    qv_reader_close(f->rd);
    qv_reservation_destroy(f->res);
    qv__poolref_release(f->pool);
    free(f);
}

const struct qv_reader *qv_file_reader(const struct qv_file *f) { return f->rd; }
struct qv_pool *qv_file_pool(const struct qv_file *f) { return f->pool->pool; }
void qv_file_identity(const struct qv_file *f, struct qv_file_identity *out) { *out = f->id; }

/* The reader's export charges the file's pool; the schema is copied to
 * malloc'd memory and the array holds a pool reference, so both outlive
 * the file as the contract says. */
int qv_file_statistics(const struct qv_file *f, int64_t row_group, struct ArrowSchema *schema_out,
                       struct ArrowArray *array_out, struct qv_error *err) {
    struct ArrowSchema sc;
    int rc = qv_reader_export_statistics(f->rd, row_group, &sc, array_out, err);
    if (rc) {
        schema_out->release = NULL;
        return rc;
    }
    rc = qv__schema_copy_malloc(schema_out, &sc);
    sc.release(&sc);
    if (rc) {
        array_out->release(array_out);
        return qv_error_set(err, ENOMEM, "file statistics: out of memory copying the schema");
    }
    rc = qv__batch_guard(array_out, f->pool, err);
    if (rc) schema_out->release(schema_out);
    return rc;
}

int qv_file_export_schema(const struct qv_file *f, struct ArrowSchema *out, struct qv_error *err) {
    out->release = NULL;
    struct qv_reservation *res;
    struct qv_reservation_options ro = {.name = "file schema"};
    int rc = qv_reservation_create(f->pool->pool, &ro, &res, err);
    if (rc) return rc;
    struct ArrowSchema tmp;
    rc = qv_schema_export(qv_reader_schema(f->rd), res, &tmp, err);
    if (!rc) {
        rc = qv__schema_copy_malloc(out, &tmp);
        tmp.release(&tmp);
        if (rc) qv_error_set(err, rc, "file '%.300s': out of memory copying the schema",
                             qv_reader_path(f->rd));
    }
    qv_reservation_destroy(res);
    return rc;
}
