/*
 * quiver._quiver: the native half of the Python package, a CPython extension
 * over libquiver (compiled into this module from ../core/src).
 *
 * What crosses the boundary, and who owns it:
 *  - Pools are reference counted (struct poolref): the module's default pool
 *    lives as long as the process; a pool made for a memory_limit lives until
 *    the last reader, scan, writer and exported batch that uses it is gone,
 *    because qv_pool_destroy needs every reservation freed first and batches
 *    are freed whenever their consumer (pyarrow, Polars, DuckDB) lets go.
 *  - Readers are reference counted too (struct readerref): a scan needs its
 *    reader for as long as the stream lives, and a stream handed to a
 *    consumer can outlive the File object that made it.
 *  - Every scan gets a reservation of its own for its control data, so the
 *    stream can be driven and released from any one thread at a time.
 *  - Schemas handed to Python are deep copies in malloc'd memory, so they do
 *    not depend on a reservation's lifetime (they are tiny control data).
 *
 * The GIL is released around every call that can block: opening a file,
 * get_next of a scan, writing a batch, finishing a file, releasing a stream
 * (which joins its workers). Signals are checked between batches, so Ctrl-C
 * stops a scan or a write at the next batch boundary.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/base.h"
#include "quiver/memory.h"
#include "quiver/arrow.h"
#include "quiver/format.h"
#include "quiver/scan.h"
#include "memory/memory_testing.h"

/* ---------------------------------------------------------------- errors */

static PyObject *g_make_error; /* quiver.errors._make_error(code, name, message) */

static PyObject *raise_qv(int code, const char *msg) {
    if (!msg || !msg[0]) msg = qv_errno_name(code);
    /* Messages quote paths and names, which need not be UTF-8: show such
     * bytes as \xNN rather than fail or lose them. */
    PyObject *m = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
    if (!m) return NULL;
    if (!g_make_error) {
        PyErr_SetObject(PyExc_RuntimeError, m);
        Py_DECREF(m);
        return NULL;
    }
    PyObject *exc = PyObject_CallFunction(g_make_error, "isO", code, qv_errno_name(code), m);
    Py_DECREF(m);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static PyObject *raise_err(const struct qv_error *e, int rc) {
    return raise_qv(rc, e->code ? e->message : NULL);
}

/* ---------------------------------------------------------------- pools */

struct poolref {
    struct qv_pool *pool;
    atomic_long refs;
};

static struct poolref *g_default_pool;

static int poolref_new(const char *name, uint64_t limit, struct poolref **out,
                       struct qv_error *err) {
    struct poolref *p = calloc(1, sizeof *p);
    if (!p) return qv_error_set(err, ENOMEM, "pool '%s': out of memory", name);
    struct qv_pool_options po = {.name = name, .limit = limit};
    int rc = qv_pool_create(&po, &p->pool, err);
    if (rc) {
        free(p);
        return rc;
    }
    atomic_init(&p->refs, 1);
    *out = p;
    return 0;
}

static struct poolref *poolref_incref(struct poolref *p) {
    atomic_fetch_add(&p->refs, 1);
    return p;
}

static void poolref_decref(struct poolref *p) {
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
        qv_pool_destroy(p->pool);
        free(p);
    }
}

/* The pool for an object: the default one, or a new one with `limit`. */
static int pool_for(const char *name, unsigned long long limit, struct poolref **out,
                    struct qv_error *err) {
    if (!limit) {
        *out = poolref_incref(g_default_pool);
        return 0;
    }
    return poolref_new(name, limit, out, err);
}

static PyObject *pool_stats_dict(const struct qv_pool *pool) {
    struct qv_pool_stats s;
    qv_pool_get_stats(pool, &s);
    return Py_BuildValue(
        "{s:s,s:K,s:K,s:K,s:I,s:K,s:K,s:K,s:K}", "name", qv_pool_name(pool), "reserved",
        (unsigned long long)s.reserved, "peak_reserved", (unsigned long long)s.peak_reserved,
        "limit", (unsigned long long)s.limit, "reservations", (unsigned)s.reservations,
        "oom_count", (unsigned long long)s.oom_count, "block_size",
        (unsigned long long)s.block_size, "allocations",
        (unsigned long long)qv_pool_alloc_count(pool), "spill_calls",
        (unsigned long long)s.spill_calls);
}

/* ------------------------------------------------- schema deep copy (malloc) */

struct schema_copy {
    char *format, *name, *metadata;
    struct ArrowSchema **children;
    struct ArrowSchema *child_structs;
    struct ArrowSchema *dictionary;
};

static void schema_copy_release(struct ArrowSchema *s) {
    if (!s->release) return;
    struct schema_copy *p = s->private_data;
    for (int64_t i = 0; i < s->n_children; i++)
        if (p->child_structs[i].release) p->child_structs[i].release(&p->child_structs[i]);
    if (p->dictionary && p->dictionary->release) p->dictionary->release(p->dictionary);
    free(p->format);
    free(p->name);
    free(p->metadata);
    free(p->children);
    free(p->child_structs);
    free(p->dictionary);
    free(p);
    s->release = NULL;
}

static size_t metadata_size(const char *m) {
    if (!m) return 0;
    int32_t n, len;
    memcpy(&n, m, 4);
    size_t off = 4;
    for (int32_t i = 0; i < n * 2; i++) {
        memcpy(&len, m + off, 4);
        off += 4 + (size_t)len;
    }
    return off;
}

static char *dup_str(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is not one
 * (overlongs, surrogates and code points past U+10FFFF included). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    if (s[0] < 0x80) return 1;
    size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (!len || len > n || s[0] > 0xF4) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (len == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
    if (len == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
    return len;
}

/* A name for pyarrow, which requires UTF-8 field names: a copy of `s`, with
 * every byte that is not part of valid UTF-8 written as the four characters
 * \xNN (a file written by another tool, or `qv import` of a Latin-1 CSV
 * header, can hold such names). Select such a column by index. Thread-safe,
 * no GIL: streams ask for schemas from any thread. */
static char *dup_name(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s), bad = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (!k) {
            bad++;
            k = 1;
        }
        i += k;
    }
    if (!bad) return dup_str(s);
    char *d = malloc(n + 3 * bad + 1), *o = d;
    if (!d) return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (k) {
            memcpy(o, s + i, k);
            o += k;
            i += k;
        } else {
            o += sprintf(o, "\\x%02x", (unsigned char)s[i]);
            i++;
        }
    }
    *o = 0;
    return d;
}

/* Deep-copies `src` into `dst` (released on failure). 0 or ENOMEM. */
static int schema_copy(struct ArrowSchema *dst, const struct ArrowSchema *src) {
    memset(dst, 0, sizeof *dst);
    struct schema_copy *p = calloc(1, sizeof *p);
    if (!p) return ENOMEM;
    dst->private_data = p;
    dst->release = schema_copy_release;
    dst->flags = src->flags;
    p->format = dup_str(src->format);
    p->name = dup_name(src->name);
    if (!p->format || (src->name && !p->name)) goto oom;
    dst->format = p->format;
    dst->name = p->name;
    if (src->metadata) {
        size_t n = metadata_size(src->metadata);
        p->metadata = malloc(n);
        if (!p->metadata) goto oom;
        memcpy(p->metadata, src->metadata, n);
        dst->metadata = p->metadata;
    }
    if (src->n_children > 0) {
        p->children = calloc((size_t)src->n_children, sizeof *p->children);
        p->child_structs = calloc((size_t)src->n_children, sizeof *p->child_structs);
        if (!p->children || !p->child_structs) goto oom;
        dst->children = p->children;
        for (int64_t i = 0; i < src->n_children; i++) {
            if (schema_copy(&p->child_structs[i], src->children[i])) goto oom;
            dst->n_children = i + 1;
            p->children[i] = &p->child_structs[i];
        }
    }
    if (src->dictionary) {
        p->dictionary = calloc(1, sizeof *p->dictionary);
        if (!p->dictionary || schema_copy(p->dictionary, src->dictionary)) goto oom;
        dst->dictionary = p->dictionary;
    }
    return 0;
oom:
    schema_copy_release(dst);
    return ENOMEM;
}

/* Capsule destructors run whenever the capsule dies, also while an
 * exception (a KeyboardInterrupt) is propagating: they must neither raise nor
 * clear one, hence PyCapsule_IsValid (which sets no error) before
 * PyCapsule_GetPointer. */
static void capsule_schema_free(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, "arrow_schema")) return;
    struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
    if (s->release) s->release(s);
    free(s);
}

static void capsule_stream_free(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, "arrow_array_stream")) return;
    struct ArrowArrayStream *s = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (s->release) {
        Py_BEGIN_ALLOW_THREADS
        s->release(s);
        Py_END_ALLOW_THREADS
    }
    free(s);
}

/* A capsule owning a malloc'd copy of `src`; `src` stays the caller's. */
static PyObject *schema_capsule_from(const struct ArrowSchema *src) {
    struct ArrowSchema *s = malloc(sizeof *s);
    if (!s) return PyErr_NoMemory();
    if (schema_copy(s, src)) {
        free(s);
        return PyErr_NoMemory();
    }
    PyObject *cap = PyCapsule_New(s, "arrow_schema", capsule_schema_free);
    if (!cap) {
        s->release(s);
        free(s);
    }
    return cap;
}

/* ---------------------------------------------------------------- readers */

struct readerref {
    struct qv_reader *rd;
    struct qv_reservation *res;
    struct poolref *pool;
    atomic_long refs;
};

static struct readerref *readerref_incref(struct readerref *r) {
    atomic_fetch_add(&r->refs, 1);
    return r;
}

static void readerref_decref(struct readerref *r) {
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        qv_reader_close(r->rd);
        qv_reservation_destroy(r->res);
        poolref_decref(r->pool);
        free(r);
    }
}

/* ------------------------------------------ batches keep their pool alive */

struct batch_guard {
    void (*release)(struct ArrowArray *);
    void *private_data;
    struct poolref *pool;
};

static void guarded_release(struct ArrowArray *a) {
    struct batch_guard *g = a->private_data;
    struct poolref *pool = g->pool;
    a->release = g->release;
    a->private_data = g->private_data;
    free(g);
    a->release(a);
    poolref_decref(pool);
}

/* ------------------------------------------------ the wrapped scan stream
 * The scan's stream plus what it depends on: its reader and its own
 * reservation. get_schema hands out a malloc'd copy, get_next guards each
 * batch with a pool reference, release frees everything. Batches are
 * validated by the scan itself (qv_scan_options.validate), on its workers. */

struct wstream {
    struct ArrowArrayStream inner;
    struct qv_reservation *res;
    struct readerref *reader;
    char last_error[QV_ERROR_MESSAGE_MAX];
};

static int ws_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    struct wstream *w = st->private_data;
    struct ArrowSchema tmp;
    memset(&tmp, 0, sizeof tmp);
    int rc = w->inner.get_schema(&w->inner, &tmp);
    if (rc) {
        const char *m = w->inner.get_last_error(&w->inner);
        snprintf(w->last_error, sizeof w->last_error, "%s", m ? m : qv_errno_name(rc));
        return rc;
    }
    rc = schema_copy(out, &tmp);
    tmp.release(&tmp);
    if (rc) snprintf(w->last_error, sizeof w->last_error, "scan: out of memory copying the schema");
    return rc;
}

static int ws_get_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    struct wstream *w = st->private_data;
    int rc = w->inner.get_next(&w->inner, out);
    if (rc) {
        const char *m = w->inner.get_last_error(&w->inner);
        snprintf(w->last_error, sizeof w->last_error, "%s", m ? m : qv_errno_name(rc));
        return rc;
    }
    if (!out->release) return 0;
    struct batch_guard *g = malloc(sizeof *g);
    if (!g) {
        out->release(out);
        snprintf(w->last_error, sizeof w->last_error, "scan: out of memory");
        return ENOMEM;
    }
    g->release = out->release;
    g->private_data = out->private_data;
    g->pool = poolref_incref(w->reader->pool);
    out->release = guarded_release;
    out->private_data = g;
    return 0;
}

static const char *ws_last_error(struct ArrowArrayStream *st) {
    struct wstream *w = st->private_data;
    return w->last_error[0] ? w->last_error : NULL;
}

static void ws_release(struct ArrowArrayStream *st) {
    if (!st->release) return;
    struct wstream *w = st->private_data;
    if (w->inner.release) w->inner.release(&w->inner);
    qv_reservation_destroy(w->res);
    readerref_decref(w->reader);
    free(w);
    st->release = NULL;
    st->private_data = NULL;
}

/* ---------------------------------------------------------------- Scan type
 *
 * Threads. A scan is an iterator: one thread reads it at a time. `busy` is
 * set (under the GIL) while a thread waits in get_next with the GIL
 * released; another thread's next() then raises RuntimeError instead of
 * entering the C stream concurrently (which the Arrow stream contract
 * forbids). close() from another thread cancels the stream (qv_scan_cancel,
 * thread-safe), waits on `idle` (held by the reading thread for exactly the
 * busy window) until that get_next returned, and then releases the stream;
 * the reading thread gets CancelledError. The busy window runs Python code
 * only when get_next is not running: signal handlers, between the bounded
 * waits for the next batch. A handler that closes the scan on the reading
 * thread itself (`owner`) cannot wait for itself: it only cancels, and the
 * reading thread releases the stream when the handler returns. */

typedef struct {
    PyObject_HEAD
    struct ArrowArrayStream stream; /* a wstream; release == NULL when done */
    PyObject *importer;             /* callable(address) -> pyarrow.RecordBatch */
    struct ArrowSchema schema;      /* the batches' schema (a malloc'd copy) */
    struct qv_scan_stats last_stats;/* as of the last get_next (see Scan_stats) */
    int threaded;                   /* the scan has workers (stats are locked) */
    int done;
    int busy;                       /* a thread is in get_next, GIL released */
    int closing;                    /* close() waits for that thread */
    int consumed;                   /* moved out by __arrow_c_stream__ */
    int closer_waits;               /* a close() on another thread waits on idle */
    unsigned long owner;            /* the thread in the busy window */
    PyThread_type_lock idle;        /* held by the thread in the busy window */
} ScanObject;

static PyTypeObject ScanType;

static struct wstream *scan_ws(ScanObject *self) { return self->stream.private_data; }

/* Ends the scan: cancels a get_next running on another thread and waits for
 * it, then releases the stream (joining its workers) with the GIL released.
 * Idempotent; the stream is taken out of the object under the GIL first, so
 * two threads closing at once release it once. */
static void scan_close_stream(ScanObject *self) {
    self->done = 1;
    if (self->busy && self->stream.release) {
        self->closing = 1;
        qv_scan_cancel(&scan_ws(self)->inner);
        if (self->owner == PyThread_get_thread_ident()) return; /* see above */
        self->closer_waits = 1;
        while (self->busy) {
            Py_BEGIN_ALLOW_THREADS
            PyThread_acquire_lock(self->idle, WAIT_LOCK);
            PyThread_release_lock(self->idle);
            Py_END_ALLOW_THREADS
        }
    }
    if (self->stream.release) {
        struct ArrowArrayStream st = self->stream;
        self->stream.release = NULL;
        Py_BEGIN_ALLOW_THREADS
        st.release(&st);
        Py_END_ALLOW_THREADS
    }
}

static void Scan_dealloc(ScanObject *self) {
    scan_close_stream(self); /* never busy here: the reading thread holds a reference */
    Py_XDECREF(self->importer);
    if (self->schema.release) self->schema.release(&self->schema);
    if (self->idle) PyThread_free_lock(self->idle);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Scan_iter(PyObject *self) {
    Py_INCREF(self);
    return self;
}

static PyObject *scan_busy_error(void) {
    PyErr_SetString(PyExc_RuntimeError,
                    "scan is being read by another thread (a scan is an iterator: read it "
                    "from one thread at a time, or open one scan per thread; a signal "
                    "handler must not read the scan its thread is reading)");
    return NULL;
}

/* How long a get_next waits before the GIL is taken back to check for
 * Ctrl-C: a scan whose filter rejects every row for minutes must still be
 * interruptible. */
#define SCAN_POLL_MS 50

static PyObject *scan_consumed_error(void) {
    PyErr_SetString(PyExc_ValueError,
                    "this scan was already exported by __arrow_c_stream__: a scan can be "
                    "consumed once (open a new scan to read the data again)");
    return NULL;
}

static PyObject *Scan_next(ScanObject *self) {
    if (self->busy) return scan_busy_error();
    /* Its batches went to another consumer: ending quietly would look like
     * an empty (or finished) scan. */
    if (self->consumed) return scan_consumed_error();
    if (self->done || !self->stream.release) return NULL; /* StopIteration */
    if (PyErr_CheckSignals() < 0) {
        scan_close_stream(self);
        return NULL;
    }
    /* A signal handler may have closed or exported the scan just now. */
    if (self->done || !self->stream.release) return NULL;
    struct wstream *w = scan_ws(self);
    struct ArrowArray b; /* on the stack: another thread may start the next get_next
                            while this one's batch is being imported */
    memset(&b, 0, sizeof b);
    int rc = 0, interrupted = 0;
    self->busy = 1;
    self->owner = PyThread_get_thread_ident();
    PyThread_acquire_lock(self->idle, NOWAIT_LOCK); /* free: busy was 0 */
    for (;;) {
        int ready;
        Py_BEGIN_ALLOW_THREADS
        ready = qv_scan_wait(&w->inner, SCAN_POLL_MS) != ETIMEDOUT;
        if (ready) rc = self->stream.get_next(&self->stream, &b);
        Py_END_ALLOW_THREADS
        if (ready) break;
        /* Nothing produced yet: a signal handler may run now (another thread
         * may run too, but it only finds the scan busy). */
        if (PyErr_CheckSignals() < 0) {
            interrupted = 1;
            break;
        }
        if (self->closing) break; /* a handler closed it: no get_next ran */
    }
    if (!rc && !interrupted) qv_scan_get_stats(&w->inner, &self->last_stats);
    self->busy = 0;
    PyThread_release_lock(self->idle);
    if (self->closing) {
        if (b.release) b.release(&b);
        /* Closed by another thread: it releases the stream once it sees this
         * thread idle (so its close() returns with the stream freed). Closed
         * by a signal handler on this thread: release it here. */
        if (!self->closer_waits) scan_close_stream(self);
        if (interrupted) return NULL;
        return raise_qv(ECANCELED, self->closer_waits ? "scan: closed by another thread"
                                                      : "scan: closed while being read");
    }
    if (interrupted) {
        scan_close_stream(self);
        return NULL;
    }
    if (rc) {
        const char *m = self->stream.get_last_error(&self->stream);
        char msg[QV_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", m ? m : "");
        scan_close_stream(self);
        return raise_qv(rc, msg);
    }
    if (!b.release) {
        scan_close_stream(self);
        return NULL;
    }
    if (PyErr_CheckSignals() < 0) {
        b.release(&b);
        scan_close_stream(self);
        return NULL;
    }
    PyObject *addr = PyLong_FromVoidPtr(&b);
    PyObject *res = addr ? PyObject_CallOneArg(self->importer, addr) : NULL;
    Py_XDECREF(addr);
    if (b.release) b.release(&b); /* not moved by the importer (it failed) */
    return res;
}

static PyObject *Scan_close(ScanObject *self, PyObject *Py_UNUSED(ignored)) {
    scan_close_stream(self);
    Py_RETURN_NONE;
}

static PyObject *Scan_stats(ScanObject *self, PyObject *Py_UNUSED(ignored)) {
    if (!self->stream.release) Py_RETURN_NONE;
    struct qv_scan_stats s;
    /* A synchronous scan's counters belong to the thread decoding in
     * get_next: while one is, report them as of its last batch. */
    if (self->busy && !self->threaded) s = self->last_stats;
    else if (qv_scan_get_stats(&scan_ws(self)->inner, &s)) Py_RETURN_NONE;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:i,s:i}", "row_groups_total",
                         (long long)s.row_groups_total, "row_groups_pruned",
                         (long long)s.row_groups_pruned, "rows_decoded",
                         (long long)s.rows_decoded, "rows_output", (long long)s.rows_output,
                         "batches", (long long)s.batches, "max_queued", s.max_queued,
                         "threads", s.threads);
}

/* The schema of the batches, also after the scan ended or was consumed
 * (DuckDB and other PyCapsule consumers ask for it separately). */
static PyObject *Scan_schema_capsule(ScanObject *self, PyObject *Py_UNUSED(ignored)) {
    return schema_capsule_from(&self->schema);
}

/* Moves the stream out to a consumer: the scan object is exhausted after.
 * A scan reads the file once; a second call is an error naming that. */
static PyObject *Scan_arrow_c_stream(ScanObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", kw, &requested)) return NULL;
    if (self->busy) return scan_busy_error();
    if (self->consumed) return scan_consumed_error();
    if (!self->stream.release) {
        PyErr_SetString(PyExc_ValueError, "scan is closed or was already read to the end");
        return NULL;
    }
    struct ArrowArrayStream *s = malloc(sizeof *s);
    if (!s) return PyErr_NoMemory();
    *s = self->stream;
    self->stream.release = NULL;
    self->done = 1;
    self->consumed = 1;
    PyObject *cap = PyCapsule_New(s, "arrow_array_stream", capsule_stream_free);
    if (!cap) {
        s->release(s);
        free(s);
    }
    return cap;
}

static PyMethodDef Scan_methods[] = {
    {"close", (PyCFunction)Scan_close, METH_NOARGS,
     "Cancel the scan and free it; from any thread (a read in progress on another thread "
     "then raises CancelledError)."},
    {"stats", (PyCFunction)Scan_stats, METH_NOARGS, "Scan statistics (dict) or None."},
    {"schema_capsule", (PyCFunction)Scan_schema_capsule, METH_NOARGS, NULL},
    {"__arrow_c_schema__", (PyCFunction)Scan_schema_capsule, METH_NOARGS,
     "The batches' schema as an ArrowSchema capsule."},
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Scan_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS, "Export the scan as an ArrowArrayStream capsule (once)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ScanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._quiver.Scan",
    .tp_basicsize = sizeof(ScanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open scan: an iterator of pyarrow.RecordBatch.",
    .tp_dealloc = (destructor)Scan_dealloc,
    .tp_iter = Scan_iter,
    .tp_iternext = (iternextfunc)Scan_next,
    .tp_methods = Scan_methods,
};

/* ---------------------------------------------------------------- Reader type */

typedef struct {
    PyObject_HEAD
    struct readerref *ref;
} ReaderObject;

static PyTypeObject ReaderType;

static struct readerref *reader_get(ReaderObject *self) {
    if (!self->ref) PyErr_SetString(PyExc_ValueError, "I/O operation on a closed quiver file");
    return self->ref;
}

static void Reader_dealloc(ReaderObject *self) {
    struct readerref *r = self->ref;
    self->ref = NULL;
    readerref_decref(r);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Reader_close(ReaderObject *self, PyObject *Py_UNUSED(ignored)) {
    struct readerref *r = self->ref;
    self->ref = NULL;
    readerref_decref(r);
    Py_RETURN_NONE;
}

/* Text from a file (names, the writer's version string) as str, whatever its
 * bytes: invalid UTF-8 is shown as \xNN, the way schema names are (dup_name),
 * so a name looks the same in the schema, the nodes and the statistics. */
static PyObject *file_text(const char *s) {
    if (!s) s = "";
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "backslashreplace");
}

static PyObject *Reader_info(ReaderObject *self, PyObject *Py_UNUSED(ignored)) {
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    const char *path = qv_reader_path(r->rd);
    /* The path as os.fsdecode gives it (round-trips through os.fsencode). */
    return Py_BuildValue("{s:L,s:L,s:K,s:N,s:N,s:i}", "num_rows",
                         (long long)qv_reader_num_rows(r->rd), "num_row_groups",
                         (long long)qv_reader_num_row_groups(r->rd), "file_size",
                         (unsigned long long)qv_reader_file_size(r->rd), "writer_version",
                         file_text(qv_reader_writer_version(r->rd)), "path",
                         PyUnicode_DecodeFSDefault(path ? path : ""), "open_reads",
                         qv_reader_open_reads(r->rd));
}

static PyObject *Reader_row_groups(ReaderObject *self, PyObject *Py_UNUSED(ignored)) {
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    int64_t n = qv_reader_num_row_groups(r->rd);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list) return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(LLK)", (long long)qv_reader_row_group_rows(r->rd, i),
                                    (long long)qv_reader_row_group_first_row(r->rd, i),
                                    (unsigned long long)qv_reader_row_group_bytes(r->rd, i));
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

static PyObject *Reader_metadata(ReaderObject *self, PyObject *Py_UNUSED(ignored)) {
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    int64_t n = 0;
    const struct qv_kv *kv = qv_reader_metadata(r->rd, &n);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list) return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(y#y#)", kv[i].key, (Py_ssize_t)kv[i].key_len, kv[i].value,
                                    (Py_ssize_t)kv[i].value_len);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

/* Parses an optional sequence of column indexes into a malloc'd array. */
static int parse_columns(PyObject *obj, int32_t **cols, int32_t *n) {
    *cols = NULL;
    *n = 0;
    if (obj == Py_None) return 0;
    PyObject *seq = PySequence_Fast(obj, "columns must be a sequence of column indexes");
    if (!seq) return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    *cols = malloc((size_t)(len ? len : 1) * sizeof **cols);
    if (!*cols) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (!(v == -1 && PyErr_Occurred()) && (v < 0 || v > INT32_MAX))
            PyErr_Format(PyExc_IndexError, "column index %ld out of range", v);
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            free(*cols);
            *cols = NULL;
            return -1;
        }
        (*cols)[i] = (int32_t)v;
    }
    *n = (int32_t)len;
    Py_DECREF(seq);
    return 0;
}

static PyObject *Reader_schema_capsule(ReaderObject *self, PyObject *args) {
    PyObject *cols_obj = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &cols_obj)) return NULL;
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    int32_t *cols, n;
    if (parse_columns(cols_obj, &cols, &n)) return NULL;
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_reservation *res;
    struct qv_reservation_options ro = {.name = "python schema"};
    int rc = qv_reservation_create(r->pool->pool, &ro, &res, &err);
    if (rc) {
        free(cols);
        return raise_err(&err, rc);
    }
    struct ArrowSchema s;
    memset(&s, 0, sizeof s);
    rc = qv_reader_export_schema(r->rd, cols, cols_obj == Py_None ? 0 : n, res, &s, &err);
    free(cols);
    PyObject *cap = NULL;
    if (rc) {
        raise_err(&err, rc);
    } else {
        cap = schema_capsule_from(&s);
        s.release(&s);
    }
    qv_reservation_destroy(res);
    return cap;
}

static PyObject *Reader_nodes(ReaderObject *self, PyObject *Py_UNUSED(ignored)) {
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    int32_t n = qv_reader_num_nodes(r->rd);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int32_t i = 0; i < n; i++) {
        char path[1024], type[512];
        qv_reader_node_path(r->rd, i, path, sizeof path);
        const struct qv_field *f = qv_reader_node_field(r->rd, i);
        qv_type_to_string(f, type, sizeof type);
        PyObject *t = Py_BuildValue("{s:N,s:N,s:i,s:N,s:i,s:i,s:i,s:i,s:i,s:N}", "path",
                                    file_text(path), "name", file_text(f->name), "type_id",
                                    (int)f->type, "type", file_text(type), "parent",
                                    qv_reader_node_parent(r->rd, i), "precision", f->precision,
                                    "scale", f->scale, "unit", (int)f->unit, "nullable",
                                    (int)f->nullable, "timezone", file_text(f->timezone));
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static PyObject *Reader_chunk_stats(ReaderObject *self, PyObject *args) {
    long long rg;
    if (!PyArg_ParseTuple(args, "L", &rg)) return NULL;
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    int32_t n = qv_reader_num_nodes(r->rd);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int32_t i = 0; i < n; i++) {
        struct qv_chunk_info ci;
        struct qv_error err;
        qv_error_clear(&err);
        int rc = qv_reader_chunk_info(r->rd, (int64_t)rg, i, &ci, &err);
        if (rc) {
            Py_DECREF(list);
            return raise_err(&err, rc);
        }
        PyObject *t = PyDict_New();
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
        PyObject *vals[10];
        vals[0] = PyLong_FromLongLong(ci.length);
        vals[1] = PyLong_FromLongLong(ci.null_count);
        vals[2] = PyLong_FromUnsignedLongLong(ci.raw_bytes);
        vals[3] = PyLong_FromUnsignedLongLong(ci.encoded_bytes);
        vals[4] = PyLong_FromLong(ci.n_segments);
        vals[5] = ci.has_min_max ? PyBytes_FromStringAndSize((const char *)ci.min, ci.min_len)
                                 : Py_NewRef(Py_None);
        vals[6] = ci.has_min_max ? PyBytes_FromStringAndSize((const char *)ci.max, ci.max_len)
                                 : Py_NewRef(Py_None);
        vals[7] = PyBool_FromLong(ci.min_truncated);
        vals[8] = PyBool_FromLong(ci.max_truncated);
        vals[9] = ci.has_nan_count ? PyLong_FromLongLong(ci.nan_count) : Py_NewRef(Py_None);
        static const char *keys[10] = {"length", "null_count", "raw_bytes", "encoded_bytes",
                                       "segments", "min", "max", "min_truncated",
                                       "max_truncated", "nan_count"};
        int bad = 0;
        for (int k = 0; k < 10; k++) {
            if (!vals[k] || PyDict_SetItemString(t, keys[k], vals[k])) bad = 1;
            Py_XDECREF(vals[k]);
        }
        if (bad) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

static PyObject *Reader_pool_stats(ReaderObject *self, PyObject *Py_UNUSED(ignored)) {
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    return pool_stats_dict(r->pool->pool);
}

/* The interrupt hook of filter parsing. The parse runs with the GIL released
 * (a million-term filter takes seconds, and other Python threads keep
 * running meanwhile); every few thousand tokens this takes the GIL back to
 * run pending signal handlers (PyErr_CheckSignals needs the GIL). A handler
 * that raises (Ctrl-C: KeyboardInterrupt) stops the parse; its exception
 * stays set for the caller to return. */
struct parse_hook {
    PyThreadState *ts; /* the parsing thread's state while the GIL is released */
};

static int parse_interrupted(void *arg) {
    struct parse_hook *h = arg;
    PyEval_RestoreThread(h->ts);
    int stop = PyErr_CheckSignals() < 0;
    h->ts = PyEval_SaveThread();
    return stop;
}

/* Parses a filter's bytes (any length, NUL bytes in string literals are
 * data) into *out, from the scan's reservation `res`. Returns 0, or -1 with a
 * Python exception set (the handler's own one when a signal stopped it). */
static int parse_filter(const char *text, Py_ssize_t len, struct qv_reservation *res,
                        struct qv_expr **out) {
    struct qv_error err;
    qv_error_clear(&err);
    struct parse_hook h;
    struct qv_expr_parse_options po = {.interrupted = parse_interrupted, .interrupted_arg = &h};
    h.ts = PyEval_SaveThread();
    int rc = qv_expr_parse_n(text, (size_t)len, &po, res, out, &err);
    PyEval_RestoreThread(h.ts);
    if (!rc) return 0;
    *out = NULL;
    if (!PyErr_Occurred()) raise_err(&err, rc);
    return -1;
}

static PyObject *reader_scan(struct readerref *r, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"importer", "columns", "filter", "take", "batch_rows", "threads",
                         "prefetch", "max_rows", "row_begin", "row_end", "row_group_begin",
                         "row_group_end", "validate", NULL};
    PyObject *importer, *cols_obj = Py_None, *take_obj = Py_None, *filter_obj = Py_None;
    long long batch_rows = 0, max_rows = 0, row_begin = 0, row_end = 0, rg_begin = 0, rg_end = 0;
    int threads = 0, prefetch = 0, validate = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOLiiLLLLLp", kw, &importer, &cols_obj,
                                     &filter_obj, &take_obj, &batch_rows, &threads, &prefetch,
                                     &max_rows, &row_begin, &row_end, &rg_begin, &rg_end,
                                     &validate))
        return NULL;
    /* Counts are validated (with the argument's name) by quiver._file; here
     * only what would otherwise change meaning in C: negative values mean
     * "default" to qv_scan_open. */
    if (batch_rows < 0 || max_rows < 0 || prefetch < 0 || row_begin < 0 || row_end < 0 ||
        rg_begin < 0 || rg_end < 0 || (threads < 0 && threads != QV_SCAN_SYNC)) {
        PyErr_SetString(PyExc_ValueError, "scan: negative count");
        return NULL;
    }
    /* The filter's bytes (the Python layer encodes str as UTF-8 with
     * surrogateescape, so names read back from a non-UTF-8 file match),
     * parsed with their length: a NUL inside a string literal is data. */
    const char *filter = NULL;
    Py_ssize_t flen = 0;
    if (filter_obj != Py_None) {
        if (!PyBytes_Check(filter_obj)) {
            PyErr_SetString(PyExc_TypeError, "filter must be bytes or None");
            return NULL;
        }
        if (PyBytes_AsStringAndSize(filter_obj, (char **)&filter, &flen)) return NULL;
    }
    int32_t *cols, ncols;
    if (parse_columns(cols_obj, &cols, &ncols)) return NULL;
    Py_buffer take = {0};
    int have_take = 0;
    if (take_obj != Py_None) {
        if (PyObject_GetBuffer(take_obj, &take, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) {
            free(cols);
            return NULL;
        }
        have_take = 1;
        if (take.itemsize != 8 || !take.format ||
            (strcmp(take.format, "l") && strcmp(take.format, "q") && strcmp(take.format, "<q") &&
             strcmp(take.format, "=q"))) {
            PyBuffer_Release(&take);
            free(cols);
            PyErr_SetString(PyExc_TypeError, "take must be a contiguous int64 buffer");
            return NULL;
        }
    }
    struct qv_error err;
    qv_error_clear(&err);
    struct wstream *w = calloc(1, sizeof *w);
    if (!w) {
        if (have_take) PyBuffer_Release(&take);
        free(cols);
        return PyErr_NoMemory();
    }
    static const int64_t no_rows = 0;
    struct qv_reservation_options ro = {.name = "python scan"};
    int rc = qv_reservation_create(r->pool->pool, &ro, &w->res, &err);
    struct qv_expr *fx = NULL;
    if (!rc && filter && parse_filter(filter, flen, w->res, &fx)) {
        if (have_take) PyBuffer_Release(&take);
        free(cols);
        qv_reservation_destroy(w->res);
        free(w);
        return NULL;
    }
    if (!rc) {
        struct qv_scan_options so = {
            .columns = cols_obj == Py_None ? NULL : cols,
            .n_columns = ncols,
            .filter_expr = fx, /* moves into the scan, also on failure */
            .row_begin = row_begin,
            .row_end = row_end,
            /* An empty take is "no rows": never let it become NULL ("no take"). */
            .take = !have_take ? NULL : take.buf ? (const int64_t *)take.buf : &no_rows,
            .n_take = have_take ? (int64_t)(take.len / 8) : 0,
            .row_group_begin = rg_begin,
            .row_group_end = rg_end,
            .batch_rows = batch_rows,
            .max_rows = max_rows,
            .threads = threads,
            .prefetch = prefetch,
            /* Checksums prove the bytes are the ones written, not that they
             * decode to valid Arrow (a crafted file can hold decimals beyond
             * their precision or invalid UTF-8 under correct checksums).
             * Python hands batches to pyarrow, Polars and DuckDB, which trust
             * them: the scan checks every column, as `qv scan` does. */
            .validate = validate ? QV_SCAN_VALIDATE_FULL : QV_SCAN_VALIDATE_NONE,
        };
        Py_BEGIN_ALLOW_THREADS
        rc = qv_scan_open(r->rd, &so, w->res, &w->inner, &err);
        Py_END_ALLOW_THREADS
    }
    if (have_take) PyBuffer_Release(&take);
    if (rc) {
        free(cols);
        qv_reservation_destroy(w->res);
        free(w);
        return raise_err(&err, rc);
    }
    w->reader = readerref_incref(r);
    free(cols);
    struct ArrowArrayStream tmp = {.get_schema = ws_get_schema, .get_next = ws_get_next,
                                   .get_last_error = ws_last_error, .release = ws_release,
                                   .private_data = w};
    ScanObject *s = PyObject_New(ScanObject, &ScanType);
    if (!s) {
        ws_release(&tmp);
        return NULL;
    }
    memset((char *)s + sizeof(PyObject), 0, sizeof *s - sizeof(PyObject));
    s->stream = tmp;
    s->idle = PyThread_allocate_lock();
    struct qv_scan_stats st0;
    if (!qv_scan_get_stats(&w->inner, &st0)) {
        s->last_stats = st0;
        s->threaded = st0.threads > 0;
    }
    Py_INCREF(importer);
    s->importer = importer;
    int src = s->idle ? ws_get_schema(&s->stream, &s->schema) : ENOMEM;
    if (src) {
        char msg[QV_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", s->idle ? w->last_error : "scan: out of memory");
        Py_DECREF(s);
        return raise_qv(src, msg);
    }
    return (PyObject *)s;
}

/* The reader is held for the whole call: qv_scan_open runs without the GIL,
 * and close() on another thread must not free the reader under it. */
static PyObject *Reader_scan(ReaderObject *self, PyObject *args, PyObject *kwargs) {
    struct readerref *r = reader_get(self);
    if (!r) return NULL;
    readerref_incref(r);
    PyObject *res = reader_scan(r, args, kwargs);
    readerref_decref(r);
    return res;
}

static PyMethodDef Reader_methods[] = {
    {"close", (PyCFunction)Reader_close, METH_NOARGS, NULL},
    {"info", (PyCFunction)Reader_info, METH_NOARGS, NULL},
    {"row_groups", (PyCFunction)Reader_row_groups, METH_NOARGS, NULL},
    {"metadata", (PyCFunction)Reader_metadata, METH_NOARGS, NULL},
    {"schema_capsule", (PyCFunction)Reader_schema_capsule, METH_VARARGS, NULL},
    {"nodes", (PyCFunction)Reader_nodes, METH_NOARGS, NULL},
    {"chunk_stats", (PyCFunction)Reader_chunk_stats, METH_VARARGS, NULL},
    {"pool_stats", (PyCFunction)Reader_pool_stats, METH_NOARGS, NULL},
    {"scan", (PyCFunction)(void (*)(void))Reader_scan, METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._quiver.Reader",
    .tp_basicsize = sizeof(ReaderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open .qvr file (native handle).",
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
};

/* An O& converter for byte counts: PyArg's "K" wraps negative numbers to
 * huge unsigned ones without a word; this raises OverflowError instead (and
 * TypeError for non-integers). */
static int ull_arg(PyObject *o, void *out) {
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return 0;
    *(unsigned long long *)out = v;
    return 1;
}

static PyObject *mod_open_reader(PyObject *mod, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"path", "memory_limit", "verify_checksums", "mmap", NULL};
    PyObject *path_obj;
    unsigned long long limit = 0;
    int verify = 1, use_mmap = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|O&pp", kw, PyUnicode_FSConverter,
                                     &path_obj, ull_arg, &limit, &verify, &use_mmap))
        return NULL;
    const char *path = PyBytes_AS_STRING(path_obj);
    struct qv_error err;
    qv_error_clear(&err);
    struct readerref *r = calloc(1, sizeof *r);
    if (!r) {
        Py_DECREF(path_obj);
        return PyErr_NoMemory();
    }
    atomic_init(&r->refs, 1);
    int rc = pool_for(path, limit, &r->pool, &err);
    if (!rc) {
        struct qv_reservation_options ro = {.name = "python reader"};
        rc = qv_reservation_create(r->pool->pool, &ro, &r->res, &err);
    }
    if (!rc) {
        struct qv_reader_options opts = {.skip_checksums = !verify, .mmap = use_mmap};
        Py_BEGIN_ALLOW_THREADS
        rc = qv_reader_open(path, &opts, r->res, &r->rd, &err);
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(path_obj);
    if (rc) {
        qv_reservation_destroy(r->res);
        if (r->pool) poolref_decref(r->pool);
        free(r);
        return raise_err(&err, rc);
    }
    ReaderObject *o = PyObject_New(ReaderObject, &ReaderType);
    if (!o) {
        readerref_decref(r);
        return NULL;
    }
    o->ref = r;
    return (PyObject *)o;
}

/* ---------------------------------------------------------------- writing */

/* Parses a list of (bytes, bytes) pairs into qv_kv entries pointing into the
 * list's bytes objects (which the caller keeps alive). */
static int parse_kv(PyObject *obj, struct qv_kv **out, int64_t *n) {
    *out = NULL;
    *n = 0;
    if (obj == Py_None) return 0;
    PyObject *seq = PySequence_Fast(obj, "metadata must be a list of (bytes, bytes)");
    if (!seq) return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    struct qv_kv *kv = calloc((size_t)(len ? len : 1), sizeof *kv);
    if (!kv) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        char *k, *v;
        Py_ssize_t kl, vl;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            PyBytes_AsStringAndSize(PyTuple_GET_ITEM(pair, 0), &k, &kl) ||
            PyBytes_AsStringAndSize(PyTuple_GET_ITEM(pair, 1), &v, &vl)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "metadata must be a list of (bytes, bytes)");
            free(kv);
            Py_DECREF(seq);
            return -1;
        }
        kv[i] = (struct qv_kv){.key = k, .value = v, .key_len = (int32_t)kl,
                               .value_len = (int32_t)vl};
    }
    Py_DECREF(seq); /* the pairs stay alive through the caller's list */
    *out = kv;
    *n = len;
    return 0;
}

static PyObject *mod_write_stream(PyObject *mod, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"path", "stream", "row_group_rows", "row_group_bytes", "compact",
                         "metadata", "memory_limit", NULL};
    PyObject *path_obj, *cap, *meta_obj = Py_None;
    long long rg_rows = 0;
    unsigned long long rg_bytes = 0, limit = 0;
    int compact = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|LO&pOO&", kw, PyUnicode_FSConverter,
                                     &path_obj, &cap, &rg_rows, ull_arg, &rg_bytes, &compact,
                                     &meta_obj, ull_arg, &limit))
        return NULL;
    if (rg_rows < 0) { /* the C writer would take it for "default" */
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_ValueError, "row_group_rows must not be negative");
        return NULL;
    }
    struct ArrowArrayStream *capst = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (!capst) {
        Py_DECREF(path_obj);
        return NULL;
    }
    if (!capst->release) {
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_ValueError, "the Arrow stream was already consumed");
        return NULL;
    }
    struct qv_kv *kv;
    int64_t nkv;
    if (parse_kv(meta_obj, &kv, &nkv)) {
        Py_DECREF(path_obj);
        return NULL;
    }
    /* Take the stream out of the capsule (the PyCapsule protocol's move). */
    struct ArrowArrayStream st = *capst;
    capst->release = NULL;
    const char *path = PyBytes_AS_STRING(path_obj);

    struct qv_error err;
    qv_error_clear(&err);
    struct poolref *pool = NULL;
    struct qv_reservation *res = NULL;
    struct qv_schema *schema = NULL;
    struct qv_writer *w = NULL;
    struct ArrowSchema sch;
    memset(&sch, 0, sizeof sch);
    int rc = pool_for(path, limit, &pool, &err);
    if (!rc) {
        struct qv_reservation_options ro = {.name = "python writer"};
        rc = qv_reservation_create(pool->pool, &ro, &res, &err);
    }
    if (!rc) {
        Py_BEGIN_ALLOW_THREADS
        rc = st.get_schema(&st, &sch);
        Py_END_ALLOW_THREADS
        if (rc) {
            const char *m = st.get_last_error ? st.get_last_error(&st) : NULL;
            qv_error_set(&err, rc, "write '%s': input stream schema: %s", path,
                         m ? m : qv_errno_name(rc));
        }
    }
    if (!rc) {
        rc = qv_schema_import(&sch, res, &schema, &err);
        sch.release(&sch);
        if (rc) qv_error_wrap(&err, rc, "write '%s': ", path);
    }
    if (!rc) {
        struct qv_writer_options wo = {.row_group_rows = rg_rows, .row_group_bytes = rg_bytes,
                                       .compact = compact, .metadata = kv, .n_metadata = nkv};
        Py_BEGIN_ALLOW_THREADS
        rc = qv_writer_open(path, schema, &wo, res, &w, &err);
        Py_END_ALLOW_THREADS
    }
    int interrupted = 0;
    while (!rc) {
        struct ArrowArray b;
        memset(&b, 0, sizeof b);
        int end = 0;
        Py_BEGIN_ALLOW_THREADS
        rc = st.get_next(&st, &b);
        if (rc) {
            const char *m = st.get_last_error ? st.get_last_error(&st) : NULL;
            qv_error_set(&err, rc, "write '%s': input stream: %s", path,
                         m ? m : qv_errno_name(rc));
        } else if (!b.release) {
            end = 1;
        } else {
            rc = qv_writer_write(w, &b, &err);
            b.release(&b);
        }
        Py_END_ALLOW_THREADS
        if (rc || end) break;
        if (PyErr_CheckSignals() < 0) {
            interrupted = 1;
            break;
        }
    }
    long long rows = 0;
    unsigned long long bytes = 0;
    if (!rc && !interrupted) {
        Py_BEGIN_ALLOW_THREADS
        rc = qv_writer_finish(w, &err);
        Py_END_ALLOW_THREADS
        if (!rc) {
            rows = (long long)qv_writer_rows_written(w);
            bytes = (unsigned long long)qv_writer_bytes_written(w);
        }
    }
    Py_BEGIN_ALLOW_THREADS
    qv_writer_close(w); /* aborts an unfinished file */
    if (st.release) st.release(&st);
    Py_END_ALLOW_THREADS
    qv_schema_destroy(schema);
    qv_reservation_destroy(res);
    if (pool) poolref_decref(pool);
    free(kv);
    Py_DECREF(path_obj);
    if (interrupted) return NULL; /* KeyboardInterrupt (or the handler's exception) is set */
    if (rc) return raise_err(&err, rc);
    return Py_BuildValue("(LK)", rows, bytes);
}

/* ---------------------------------------------------------------- module */

static PyObject *mod_memory_stats(PyObject *mod, PyObject *Py_UNUSED(ignored)) {
    return pool_stats_dict(g_default_pool->pool);
}

static PyObject *mod_set_error_factory(PyObject *mod, PyObject *fn) {
    Py_XINCREF(fn);
    Py_XSETREF(g_make_error, fn);
    Py_RETURN_NONE;
}

static PyObject *mod_inject_alloc_failure(PyObject *mod, PyObject *arg) {
    unsigned long long nth = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    qv_pool_inject_alloc_failure(g_default_pool->pool, nth);
    Py_RETURN_NONE;
}

static PyObject *mod_cpu_count(PyObject *mod, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLong(qv_cpu_count());
}

static PyMethodDef module_methods[] = {
    {"open_reader", (PyCFunction)(void (*)(void))mod_open_reader, METH_VARARGS | METH_KEYWORDS,
     "open_reader(path, memory_limit=0, verify_checksums=True, mmap=False) -> Reader"},
    {"write_stream", (PyCFunction)(void (*)(void))mod_write_stream, METH_VARARGS | METH_KEYWORDS,
     "write_stream(path, capsule, row_group_rows=0, row_group_bytes=0, compact=False, "
     "metadata=None, memory_limit=0) -> (rows, bytes)"},
    {"memory_stats", mod_memory_stats, METH_NOARGS, "Statistics of the default memory pool."},
    {"_set_error_factory", mod_set_error_factory, METH_O, NULL},
    {"_inject_alloc_failure", mod_inject_alloc_failure, METH_O,
     "Fail the Nth allocation of the default pool (tests)."},
    {"cpu_count", mod_cpu_count, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "quiver._quiver",
                                       "Native part of the quiver package.", -1,
                                       module_methods};

PyMODINIT_FUNC PyInit__quiver(void) {
    if (PyType_Ready(&ScanType) < 0 || PyType_Ready(&ReaderType) < 0) return NULL;
    if (!g_default_pool) {
        struct qv_error err;
        qv_error_clear(&err);
        int rc = poolref_new("python", 0, &g_default_pool, &err);
        if (rc) {
            PyErr_SetString(PyExc_MemoryError, err.message);
            return NULL;
        }
    }
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&ScanType);
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Scan", (PyObject *)&ScanType) < 0 ||
        PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_SYNC", QV_SCAN_SYNC) < 0 ||
        PyModule_AddStringConstant(m, "LIBRARY_VERSION", QV_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
