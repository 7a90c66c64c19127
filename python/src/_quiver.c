/*
 * quiver._quiver: the native half of the Python package, a CPython extension
 * over the file layer of libquiver (quiver/file.h), linked statically.
 *
 * The file layer owns the lifetimes: a File object holds one reference to a
 * qv_file, every stream it opens holds one of its own, and every batch keeps
 * the file's pool alive, so scans and batches outlive File.close() and the
 * File, whoever (pyarrow, Polars, DuckDB) releases them and on whatever
 * thread. Reads and writes are charged to the module's pool (never
 * destroyed) unless given a memory_limit, which gives them a pool of their
 * own. Schemas the layer hands out are self-contained and move into
 * capsules. Columns are chosen by name with the layer's one rule
 * (qv_file_select), rows taken with qv_file_take, files written with
 * qv_file_write_stream; errors become exceptions by their kind.
 *
 * The GIL is released around every call that can block: opening a file,
 * opening a scan, get_next, writing, releasing a stream (which joins its
 * workers). Signals are checked between batches and while a scan waits for
 * one, so Ctrl-C stops a scan or a write at the next batch boundary.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/file.h"
#include "memory/memory_testing.h"

/* ---------------------------------------------------------------- errors */

static PyObject *g_make_error; /* quiver.errors._make_error(code, name, message, kind, field) */

/* Raises the exception of an error of `kind` (enum qv_error_kind): its class
 * follows the kind (quiver/errors.py). `field`: the error came from choosing
 * columns, where QV_ERROR_NOT_FOUND means a field, not a file. */
static PyObject *raise_kind(int code, int kind, const char *msg, int field) {
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
    PyObject *exc = PyObject_CallFunction(g_make_error, "isOsi", code, qv_errno_name(code), m,
                                          qv_error_kind_name((enum qv_error_kind)kind), field);
    Py_DECREF(m);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* An error without a record: its kind is the one the library gives `code`. */
static PyObject *raise_qv(int code, const char *msg) {
    return raise_kind(code, qv_error_kind_of(code), msg, 0);
}

static PyObject *raise_err_in(const struct qv_error *e, int rc, int field) {
    if (!e->code) return raise_kind(rc, qv_error_kind_of(rc), NULL, field);
    return raise_kind(rc, e->kind, e->message, field);
}

static PyObject *raise_err(const struct qv_error *e, int rc) { return raise_err_in(e, rc, 0); }

/* ---------------------------------------------------------------- pools */

static struct qv_pool *g_pool; /* the module's pool; lives as long as the process */

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

/* ---------------------------------------------------------------- capsules
 * Capsule destructors run whenever the capsule dies, also while an
 * exception (a KeyboardInterrupt) is propagating: they must neither raise
 * nor clear one, hence PyCapsule_IsValid (which sets no error) before
 * PyCapsule_GetPointer. */

static void capsule_schema_free(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, "arrow_schema")) return;
    struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
    if (s->release) s->release(s);
    free(s);
}

static void capsule_array_free(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, "arrow_array")) return;
    struct ArrowArray *a = PyCapsule_GetPointer(cap, "arrow_array");
    if (a->release) a->release(a);
    free(a);
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

/* Capsules owning an Arrow struct, which moves in (its release is NULL
 * after, also on failure, when it was released). */
static PyObject *schema_capsule(struct ArrowSchema *src) {
    struct ArrowSchema *s = malloc(sizeof *s);
    PyObject *cap = s ? PyCapsule_New(s, "arrow_schema", capsule_schema_free) : PyErr_NoMemory();
    if (cap) {
        *s = *src;
    } else {
        free(s);
        src->release(src);
    }
    src->release = NULL;
    return cap;
}

static PyObject *array_capsule(struct ArrowArray *src) {
    struct ArrowArray *a = malloc(sizeof *a);
    PyObject *cap = a ? PyCapsule_New(a, "arrow_array", capsule_array_free) : PyErr_NoMemory();
    if (cap) {
        *a = *src;
    } else {
        free(a);
        src->release(src);
    }
    src->release = NULL;
    return cap;
}

/* ------------------------------------------- filters (parsed here, held by the scan)
 *
 * A filter is parsed here rather than by the scan: with its length (a NUL
 * inside a string literal is data) and with the GIL released but Ctrl-C
 * still heard (a million-term filter takes seconds). The tree lives in a
 * reservation of the file's pool for as long as the scan, so a filtered
 * scan's stream is wrapped: releasing it releases the scan, then the
 * reservation, then the file reference that kept the pool alive for it.
 * Cancel, wait and statistics go to the inner stream. */

struct signal_hook {
    PyThreadState *ts; /* the calling thread's state while the GIL is released */
};

/* Every few thousand tokens (or between batches of a write) the GIL is
 * taken back to run pending signal handlers; one that raises stops the
 * work and its exception stays set for the caller to return. */
static int hook_interrupted(void *arg) {
    struct signal_hook *h = arg;
    PyEval_RestoreThread(h->ts);
    int stop = PyErr_CheckSignals() < 0;
    h->ts = PyEval_SaveThread();
    return stop;
}

struct fstream {
    struct ArrowArrayStream inner;
    struct qv_reservation *res;
    struct qv_file *file;
};

static int fs_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    struct fstream *f = st->private_data;
    return f->inner.get_schema(&f->inner, out);
}

static int fs_get_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    struct fstream *f = st->private_data;
    return f->inner.get_next(&f->inner, out);
}

static const char *fs_last_error(struct ArrowArrayStream *st) {
    struct fstream *f = st->private_data;
    return f->inner.get_last_error(&f->inner);
}

static void fs_release(struct ArrowArrayStream *st) {
    if (!st->release) return;
    struct fstream *f = st->private_data;
    if (f->inner.release) f->inner.release(&f->inner);
    qv_reservation_destroy(f->res);
    qv_file_close(f->file);
    free(f);
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
    struct ArrowArrayStream stream; /* release == NULL when done */
    struct ArrowArrayStream *inner; /* the layer's own stream (cancel, wait, stats) */
    PyObject *importer;             /* callable(address) -> pyarrow.RecordBatch */
    PyObject *schema;               /* the batches' pyarrow.Schema */
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

/* Ends the scan: cancels a get_next running on another thread and waits for
 * it, then releases the stream (joining its workers) with the GIL released.
 * Idempotent; the stream is taken out of the object under the GIL first, so
 * two threads closing at once release it once. */
static void scan_close_stream(ScanObject *self) {
    self->done = 1;
    if (self->busy && self->stream.release) {
        self->closing = 1;
        qv_scan_cancel(self->inner);
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
    Py_XDECREF(self->schema);
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

/* The error record of the stream's failed call (qv_scan_last_error), so the
 * exception follows its kind: corrupt bytes and a failed read are both
 * EIO. */
static void scan_last_error(ScanObject *self, int rc, struct qv_error *e) {
    qv_error_clear(e);
    if (qv_scan_last_error(self->inner, e) || !e->code) {
        const char *m = self->stream.get_last_error(&self->stream);
        qv_error_set(e, rc, "%s", m ? m : "");
    }
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
        ready = qv_scan_wait(self->inner, SCAN_POLL_MS) != ETIMEDOUT;
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
    if (!rc && !interrupted) qv_scan_get_stats(self->inner, &self->last_stats);
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
        struct qv_error e;
        scan_last_error(self, rc, &e);
        scan_close_stream(self);
        return raise_err(&e, rc);
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
    else if (qv_scan_get_stats(self->inner, &s)) Py_RETURN_NONE;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:i,s:i,s:L,s:L}", "row_groups_total",
                         (long long)s.row_groups_total, "row_groups_pruned",
                         (long long)s.row_groups_pruned, "rows_decoded",
                         (long long)s.rows_decoded, "rows_output", (long long)s.rows_output,
                         "batches", (long long)s.batches, "max_queued", s.max_queued,
                         "threads", s.threads, "rows_filtered", (long long)s.rows_filtered,
                         "bytes_read", (long long)s.bytes_read);
}

/* The schema of the batches, also after the scan ended or was consumed
 * (DuckDB and other PyCapsule consumers ask for it separately). */
static PyObject *Scan_schema(ScanObject *self, void *Py_UNUSED(closure)) {
    return Py_NewRef(self->schema);
}

static PyObject *Scan_arrow_c_schema(ScanObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyObject_CallMethod(self->schema, "__arrow_c_schema__", NULL);
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
    PyObject *cap = PyCapsule_New(s, "arrow_array_stream", capsule_stream_free);
    if (!cap) {
        free(s);
        return NULL;
    }
    *s = self->stream;
    self->stream.release = NULL;
    self->done = 1;
    self->consumed = 1;
    return cap;
}

static PyMethodDef Scan_methods[] = {
    {"close", (PyCFunction)Scan_close, METH_NOARGS,
     "Cancel the scan and free it; from any thread (a read in progress on another thread "
     "then raises CancelledError)."},
    {"stats", (PyCFunction)Scan_stats, METH_NOARGS, "Scan statistics (dict) or None."},
    {"__arrow_c_schema__", (PyCFunction)Scan_arrow_c_schema, METH_NOARGS,
     "The batches' schema as an ArrowSchema capsule."},
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Scan_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS, "Export the scan as an ArrowArrayStream capsule (once)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Scan_getset[] = {
    {"schema", (getter)Scan_schema, NULL, "The batches' schema (pyarrow.Schema).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ScanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._quiver.Scan",
    .tp_basicsize = sizeof(ScanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open scan: an iterator of pyarrow.RecordBatch.",
    .tp_dealloc = (destructor)Scan_dealloc,
    .tp_iter = Scan_iter,
    .tp_iternext = (iternextfunc)Scan_next,
    .tp_methods = Scan_methods,
    .tp_getset = Scan_getset,
};

/* ---------------------------------------------------------------- File type */

typedef struct {
    PyObject_HEAD
    struct qv_file *file;
} FileObject;

static PyTypeObject FileType;

static struct qv_file *file_get(FileObject *self) {
    if (!self->file) PyErr_SetString(PyExc_ValueError, "I/O operation on a closed quiver file");
    return self->file;
}

static void File_dealloc(FileObject *self) {
    qv_file_close(self->file);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *File_close(FileObject *self, PyObject *Py_UNUSED(ignored)) {
    struct qv_file *f = self->file;
    self->file = NULL;
    qv_file_close(f);
    Py_RETURN_NONE;
}

/* Text from a file (names, the writer's version string) as str, whatever its
 * bytes: invalid UTF-8 is shown as \xNN. */
static PyObject *file_text(const char *s) {
    if (!s) s = "";
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "backslashreplace");
}

static PyObject *File_info(FileObject *self, PyObject *Py_UNUSED(ignored)) {
    struct qv_file *f = file_get(self);
    if (!f) return NULL;
    const struct qv_reader *rd = qv_file_reader(f);
    struct qv_file_identity id;
    qv_file_identity(f, &id);
    return Py_BuildValue("{s:L,s:L,s:K,s:N,s:K}", "num_rows", (long long)qv_reader_num_rows(rd),
                         "num_row_groups", (long long)qv_reader_num_row_groups(rd), "file_size",
                         (unsigned long long)id.size, "writer_version",
                         file_text(qv_reader_writer_version(rd)), "footer_checksum",
                         (unsigned long long)id.footer_checksum);
}

static PyObject *File_row_groups(FileObject *self, PyObject *Py_UNUSED(ignored)) {
    struct qv_file *f = file_get(self);
    if (!f) return NULL;
    const struct qv_reader *rd = qv_file_reader(f);
    int64_t n = qv_reader_num_row_groups(rd);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list) return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(LLK)", (long long)qv_reader_row_group_rows(rd, i),
                                    (long long)qv_reader_row_group_first_row(rd, i),
                                    (unsigned long long)qv_reader_row_group_bytes(rd, i));
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

static PyObject *File_metadata(FileObject *self, PyObject *Py_UNUSED(ignored)) {
    struct qv_file *f = file_get(self);
    if (!f) return NULL;
    int64_t n = 0;
    const struct qv_kv *kv = qv_reader_metadata(qv_file_reader(f), &n);
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

static PyObject *File_schema_capsule(FileObject *self, PyObject *Py_UNUSED(ignored)) {
    struct qv_file *f = file_get(self);
    if (!f) return NULL;
    struct qv_error err;
    qv_error_clear(&err);
    struct ArrowSchema s;
    memset(&s, 0, sizeof s);
    int rc = qv_file_export_schema(f, &s, &err);
    if (rc) return raise_err(&err, rc);
    return schema_capsule(&s);
}

static PyObject *File_pool_stats(FileObject *self, PyObject *Py_UNUSED(ignored)) {
    struct qv_file *f = file_get(self);
    if (!f) return NULL;
    return pool_stats_dict(qv_file_pool(f));
}

/* The Arrow statistics of row group `rg` (-1: the whole file), as a pair of
 * capsules (schema, array) for pyarrow.Array._import_from_c_capsule. Both
 * are self-contained: they outlive the file. */
static PyObject *File_statistics(FileObject *self, PyObject *args) {
    long long rg;
    if (!PyArg_ParseTuple(args, "L", &rg)) return NULL;
    struct qv_file *f = file_get(self);
    if (!f) return NULL;
    struct qv_error err;
    qv_error_clear(&err);
    struct ArrowSchema s;
    struct ArrowArray a;
    memset(&s, 0, sizeof s);
    memset(&a, 0, sizeof a);
    /* From the footer, no I/O: the GIL stays held, so close() on another
     * thread cannot drop the file under the call. */
    int rc = qv_file_statistics(f, (int64_t)rg, &s, &a, &err);
    if (rc) return raise_err(&err, rc);
    PyObject *sc = schema_capsule(&s);
    if (!sc) {
        a.release(&a);
        return NULL;
    }
    PyObject *ac = array_capsule(&a);
    if (!ac) {
        Py_DECREF(sc);
        return NULL;
    }
    return Py_BuildValue("(NN)", sc, ac);
}

/* Column names (bytes) as C strings pointing into the list's bytes objects,
 * which the caller keeps alive. */
static int parse_names(PyObject *obj, const char ***out, int32_t *n) {
    *out = NULL;
    *n = 0;
    if (obj == Py_None) return 0;
    if (!PyList_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "columns must be a list of bytes");
        return -1;
    }
    Py_ssize_t len = PyList_GET_SIZE(obj);
    if (len > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "columns: too many names");
        return -1;
    }
    const char **names = malloc((size_t)(len ? len : 1) * sizeof *names);
    if (!names) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *b = PyList_GET_ITEM(obj, i);
        if (!PyBytes_Check(b)) {
            free(names);
            PyErr_SetString(PyExc_TypeError, "columns must be a list of bytes");
            return -1;
        }
        if ((size_t)PyBytes_GET_SIZE(b) != strlen(PyBytes_AS_STRING(b))) {
            free(names);
            PyErr_SetString(PyExc_ValueError, "columns: a name contains a NUL character");
            return -1;
        }
        names[i] = PyBytes_AS_STRING(b);
    }
    *out = names;
    *n = (int32_t)len;
    return 0;
}

/* Opens a scan (or, with `take`, a take) of `file` on behalf of File.scan. */
static PyObject *file_scan(struct qv_file *file, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"make_importer", "columns", "filter", "take", "rows", "batch_rows",
                         "threads", "prefetch", "max_rows", "row_group_begin",
                         "row_group_end", "validate", "cast", "nan_order", NULL};
    PyObject *make_importer, *cols_obj = Py_None, *take_obj = Py_None, *filter_obj = Py_None;
    long long batch_rows = 0, max_rows = 0, rg_begin = 0, rg_end = 0;
    int threads = 0, prefetch = 0, validate = 1, by_rows = 0, nan_order = QV_NAN_IEEE;
    unsigned int cast = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOpLiiLLLpIi", kw, &make_importer,
                                     &cols_obj, &filter_obj, &take_obj, &by_rows, &batch_rows,
                                     &threads, &prefetch, &max_rows, &rg_begin, &rg_end,
                                     &validate, &cast, &nan_order))
        return NULL;
    /* Counts are validated (with the argument's name) by quiver._file; here
     * only what would otherwise change meaning in C: negative values mean
     * "default" to the scan. */
    if (batch_rows < 0 || max_rows < 0 || prefetch < 0 || rg_begin < 0 || rg_end < 0 ||
        (threads < 0 && threads != QV_SCAN_SYNC)) {
        PyErr_SetString(PyExc_ValueError, "scan: negative count");
        return NULL;
    }
    const char *filter = NULL;
    Py_ssize_t flen = 0;
    if (filter_obj != Py_None) {
        if (!PyBytes_Check(filter_obj)) {
            PyErr_SetString(PyExc_TypeError, "filter must be bytes or None");
            return NULL;
        }
        if (PyBytes_AsStringAndSize(filter_obj, (char **)&filter, &flen)) return NULL;
    }
    const char **names;
    int32_t n_names;
    if (parse_names(cols_obj, &names, &n_names)) return NULL;
    Py_buffer take = {0};
    int have_take = 0;
    if (take_obj != Py_None) {
        if (PyObject_GetBuffer(take_obj, &take, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) {
            free(names);
            return NULL;
        }
        have_take = 1;
        if (take.itemsize != 8 || !take.format ||
            (strcmp(take.format, "l") && strcmp(take.format, "q") && strcmp(take.format, "<q") &&
             strcmp(take.format, "=q"))) {
            PyBuffer_Release(&take);
            free(names);
            PyErr_SetString(PyExc_TypeError, "take must be a contiguous int64 buffer");
            return NULL;
        }
    }
    struct qv_error err;
    qv_error_clear(&err);
    struct fstream *fs = NULL;
    struct qv_expr *fx = NULL;
    int rc = 0;
    if (filter) {
        fs = calloc(1, sizeof *fs);
        if (!fs) {
            PyErr_NoMemory();
            goto fail;
        }
        struct qv_reservation_options ro = {.name = "python filter"};
        rc = qv_reservation_create(qv_file_pool(file), &ro, &fs->res, &err);
        if (rc) {
            raise_err(&err, rc);
            goto fail;
        }
        struct signal_hook h;
        struct qv_expr_parse_options po = {.interrupted = hook_interrupted,
                                           .interrupted_arg = &h};
        h.ts = PyEval_SaveThread();
        rc = qv_expr_parse_n(filter, (size_t)flen, &po, fs->res, &fx, &err);
        PyEval_RestoreThread(h.ts);
        if (rc) {
            /* The scan names the file in every refusal; the filter is
             * parsed here, before it, so this one is named here. */
            qv_error_wrap(&err, rc, "file '%.300s': ", qv_reader_path(qv_file_reader(file)));
            if (!PyErr_Occurred()) raise_err(&err, rc); /* else the handler's exception */
            goto fail;
        }
    }
    /* `take` holds rows: with `rows`, in any order, duplicates allowed
     * (qv_file_take); without, strictly increasing, a scan's own take (an
     * empty one is "no rows": it still checks the filter and the columns). */
    static const int64_t no_rows = 0;
    const int64_t *rows = !have_take ? NULL : take.buf ? (const int64_t *)take.buf : &no_rows;
    int64_t n_rows = have_take ? (int64_t)(take.len / 8) : 0;
    struct qv_file_scan_options fo = {
        .columns = names,
        .n_columns = n_names,
        .scan =
            {
                .filter_expr = fx, /* moves into the scan, also on failure */
                .take = by_rows ? NULL : rows,
                .n_take = by_rows ? 0 : n_rows,
                .row_group_begin = rg_begin,
                .row_group_end = rg_end,
                .batch_rows = batch_rows,
                .max_rows = max_rows,
                .threads = threads,
                .prefetch = prefetch,
                .cast = cast,
                .nan_order = nan_order, /* checked by the scan */
                /* Checksums prove the bytes are the ones written, not that
                 * they decode to valid Arrow (a crafted file can hold
                 * decimals beyond their precision or invalid UTF-8 under
                 * correct checksums). Python hands batches to pyarrow,
                 * Polars and DuckDB, which trust them: the scan checks
                 * every column, as `qv scan` does. */
                .validate = validate ? QV_SCAN_VALIDATE_FULL : QV_SCAN_VALIDATE_NONE,
            },
    };
    fx = NULL;
    struct ArrowArrayStream st;
    memset(&st, 0, sizeof st);
    Py_BEGIN_ALLOW_THREADS
    if (by_rows)
        rc = qv_file_take(file, rows ? rows : &no_rows, n_rows, &fo, &st, &err);
    else
        rc = qv_file_scan(file, &fo, &st, &err);
    Py_END_ALLOW_THREADS
    if (rc) {
        /* The file is open: what is not found is a column or a field. */
        raise_err_in(&err, rc, 1);
        goto fail;
    }
    if (have_take) PyBuffer_Release(&take);
    free(names);
    if (fs) {
        fs->inner = st;
        fs->file = qv_file_retain(file);
        st = (struct ArrowArrayStream){.get_schema = fs_get_schema,
                                       .get_next = fs_get_next,
                                       .get_last_error = fs_last_error,
                                       .release = fs_release,
                                       .private_data = fs};
    }

    ScanObject *s = PyObject_New(ScanObject, &ScanType);
    if (!s) {
        st.release(&st);
        return NULL;
    }
    memset((char *)s + sizeof(PyObject), 0, sizeof *s - sizeof(PyObject));
    s->stream = st;
    s->inner = fs ? &fs->inner : &s->stream;
    s->idle = PyThread_allocate_lock();
    if (!s->idle) {
        Py_DECREF(s);
        return PyErr_NoMemory();
    }
    struct qv_scan_stats st0;
    if (!qv_scan_get_stats(s->inner, &st0)) {
        s->last_stats = st0;
        s->threaded = st0.threads > 0;
    }
    struct ArrowSchema sch;
    memset(&sch, 0, sizeof sch);
    rc = s->stream.get_schema(&s->stream, &sch);
    if (rc) {
        struct qv_error e;
        scan_last_error(s, rc, &e);
        Py_DECREF(s);
        return raise_err(&e, rc);
    }
    PyObject *cap = schema_capsule(&sch);
    PyObject *pair = cap ? PyObject_CallOneArg(make_importer, cap) : NULL;
    Py_XDECREF(cap);
    if (!pair || !PyArg_ParseTuple(pair, "OO", &s->schema, &s->importer)) {
        s->schema = s->importer = NULL;
        Py_XDECREF(pair);
        Py_DECREF(s);
        return NULL;
    }
    Py_INCREF(s->schema);
    Py_INCREF(s->importer);
    Py_DECREF(pair);
    return (PyObject *)s;

fail:
    if (have_take) PyBuffer_Release(&take);
    free(names);
    qv_expr_destroy(fx);
    if (fs) {
        qv_reservation_destroy(fs->res);
        free(fs);
    }
    return NULL;
}

/* The file is held for the whole call: the scan opens without the GIL, and
 * close() on another thread must not drop the last reference under it. */
static PyObject *File_scan(FileObject *self, PyObject *args, PyObject *kwargs) {
    struct qv_file *f = file_get(self);
    if (!f) return NULL;
    qv_file_retain(f);
    PyObject *res = file_scan(f, args, kwargs);
    qv_file_close(f);
    return res;
}

static PyMethodDef File_methods[] = {
    {"close", (PyCFunction)File_close, METH_NOARGS, NULL},
    {"info", (PyCFunction)File_info, METH_NOARGS, NULL},
    {"row_groups", (PyCFunction)File_row_groups, METH_NOARGS, NULL},
    {"metadata", (PyCFunction)File_metadata, METH_NOARGS, NULL},
    {"schema_capsule", (PyCFunction)File_schema_capsule, METH_NOARGS, NULL},
    {"statistics", (PyCFunction)File_statistics, METH_VARARGS, NULL},
    {"pool_stats", (PyCFunction)File_pool_stats, METH_NOARGS, NULL},
    {"scan", (PyCFunction)(void (*)(void))File_scan, METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject FileType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quiver._quiver.File",
    .tp_basicsize = sizeof(FileObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open .qvr file (native handle).",
    .tp_dealloc = (destructor)File_dealloc,
    .tp_methods = File_methods,
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

static PyObject *mod_open_file(PyObject *mod, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"path", "memory_limit", "mmap", "verify_checksums", NULL};
    PyObject *path_obj;
    unsigned long long limit = 0;
    int use_mmap = 0, verify = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|O&pp", kw, PyUnicode_FSConverter,
                                     &path_obj, ull_arg, &limit, &use_mmap, &verify))
        return NULL;
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_file_options opts = {.pool = limit ? NULL : g_pool, .memory_limit = limit,
                                   .mmap = use_mmap, .skip_checksums = !verify};
    struct qv_file *f = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = qv_file_open(PyBytes_AS_STRING(path_obj), &opts, &f, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc) return raise_err(&err, rc);
    FileObject *o = PyObject_New(FileObject, &FileType);
    if (!o) {
        qv_file_close(f);
        return NULL;
    }
    o->file = f;
    return (PyObject *)o;
}

/* ---------------------------------------------------------------- writing */

/* Parses a list of (bytes, bytes) pairs into qv_kv entries pointing into the
 * list's bytes objects (which the caller keeps alive). */
static int parse_kv(PyObject *obj, struct qv_kv **out, int64_t *n) {
    *out = NULL;
    *n = 0;
    if (obj == Py_None) return 0;
    if (!PyList_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "metadata must be a list of (bytes, bytes)");
        return -1;
    }
    Py_ssize_t len = PyList_GET_SIZE(obj);
    struct qv_kv *kv = calloc((size_t)(len ? len : 1), sizeof *kv);
    if (!kv) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *pair = PyList_GET_ITEM(obj, i);
        char *k, *v;
        Py_ssize_t kl, vl;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            PyBytes_AsStringAndSize(PyTuple_GET_ITEM(pair, 0), &k, &kl) ||
            PyBytes_AsStringAndSize(PyTuple_GET_ITEM(pair, 1), &v, &vl)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "metadata must be a list of (bytes, bytes)");
            free(kv);
            return -1;
        }
        kv[i] = (struct qv_kv){.key = k, .value = v, .key_len = (int32_t)kl,
                               .value_len = (int32_t)vl};
    }
    *out = kv;
    *n = len;
    return 0;
}

static PyObject *mod_write_stream(PyObject *mod, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"path", "stream", "row_group_rows", "row_group_bytes", "compact",
                         "metadata", "memory_limit", "threads", "durable", "random_access", NULL};
    PyObject *path_obj, *cap, *meta_obj = Py_None;
    long long rg_rows = 0;
    unsigned long long rg_bytes = 0, limit = 0;
    int compact = 0, threads = 0, durable = 1, random_access = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|LO&pOO&ipp", kw, PyUnicode_FSConverter,
                                     &path_obj, &cap, &rg_rows, ull_arg, &rg_bytes, &compact,
                                     &meta_obj, ull_arg, &limit, &threads, &durable,
                                     &random_access))
        return NULL;
    if (rg_rows < 0) { /* the C writer would take it for "default" */
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_ValueError, "row_group_rows must not be negative");
        return NULL;
    }
    struct ArrowArrayStream *capst = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (!capst || !capst->release) {
        Py_DECREF(path_obj);
        if (capst) PyErr_SetString(PyExc_ValueError, "the Arrow stream was already consumed");
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
    struct signal_hook h;
    struct qv_file_write_options wo = {.pool = limit ? NULL : g_pool, .memory_limit = limit,
                                       .row_group_rows = rg_rows, .row_group_bytes = rg_bytes,
                                       .compact = compact, .random_access = random_access,
                                       .metadata = kv,
                                       .n_metadata = nkv, .interrupted = hook_interrupted,
                                       .interrupted_arg = &h, .threads = threads,
                                       .durability = durable ? QV_DURABLE : QV_NOT_DURABLE};
    struct qv_error err;
    qv_error_clear(&err);
    int64_t rows = 0;
    uint64_t bytes = 0;
    h.ts = PyEval_SaveThread();
    int rc = qv_file_write_stream(PyBytes_AS_STRING(path_obj), &st, &wo, &rows, &bytes, &err);
    st.release(&st);
    PyEval_RestoreThread(h.ts);
    free(kv);
    Py_DECREF(path_obj);
    if (PyErr_Occurred()) return NULL; /* KeyboardInterrupt (or the handler's exception) */
    if (rc) return raise_err(&err, rc);
    return Py_BuildValue("(LK)", (long long)rows, (unsigned long long)bytes);
}

/* ---------------------------------------------------------------- module */

static PyObject *mod_memory_stats(PyObject *mod, PyObject *Py_UNUSED(ignored)) {
    return pool_stats_dict(g_pool);
}

static PyObject *mod_set_error_factory(PyObject *mod, PyObject *fn) {
    Py_XINCREF(fn);
    Py_XSETREF(g_make_error, fn);
    Py_RETURN_NONE;
}

static PyObject *mod_inject_alloc_failure(PyObject *mod, PyObject *arg) {
    unsigned long long nth = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    qv_pool_inject_alloc_failure(g_pool, nth);
    Py_RETURN_NONE;
}

static PyObject *mod_cpu_count(PyObject *mod, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLong(qv_cpu_count());
}

static PyObject *mod_error_kind_of(PyObject *mod, PyObject *arg) {
    int code = (int)PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(qv_error_kind_name(qv_error_kind_of(code)));
}

static PyMethodDef module_methods[] = {
    {"open_file", (PyCFunction)(void (*)(void))mod_open_file, METH_VARARGS | METH_KEYWORDS,
     "open_file(path, memory_limit=0, mmap=False, verify_checksums=True) -> File"},
    {"write_stream", (PyCFunction)(void (*)(void))mod_write_stream, METH_VARARGS | METH_KEYWORDS,
     "write_stream(path, capsule, row_group_rows=0, row_group_bytes=0, compact=False, "
     "metadata=None, memory_limit=0, threads=0, durable=True, random_access=False) -> (rows, bytes)"},
    {"memory_stats", mod_memory_stats, METH_NOARGS, "Statistics of the default memory pool."},
    {"_set_error_factory", mod_set_error_factory, METH_O, NULL},
    {"_inject_alloc_failure", mod_inject_alloc_failure, METH_O,
     "Fail the Nth allocation of the default pool (tests)."},
    {"cpu_count", mod_cpu_count, METH_NOARGS, NULL},
    {"error_kind_of", mod_error_kind_of, METH_O,
     "error_kind_of(errno) -> the kind (qv_error_kind_name) the library gives that errno value."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "quiver._quiver",
    .m_doc = "Native part of the quiver package.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__quiver(void) {
    if (PyType_Ready(&ScanType) < 0 || PyType_Ready(&FileType) < 0) return NULL;
    if (!g_pool) {
        struct qv_error err;
        qv_error_clear(&err);
        struct qv_pool_options po = {.name = "python"};
        if (qv_pool_create(&po, &g_pool, &err)) {
            PyErr_SetString(PyExc_MemoryError, err.message);
            return NULL;
        }
    }
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&ScanType);
    Py_INCREF(&FileType);
    if (PyModule_AddObject(m, "Scan", (PyObject *)&ScanType) < 0 ||
        PyModule_AddObject(m, "File", (PyObject *)&FileType) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_SYNC", QV_SCAN_SYNC) < 0 ||
        PyModule_AddIntConstant(m, "CAST_TIMESTAMP_US", QV_CAST_TIMESTAMP_US) < 0 ||
        PyModule_AddIntConstant(m, "CAST_UNSIGNED_WIDEN", QV_CAST_UNSIGNED_WIDEN) < 0 ||
        PyModule_AddIntConstant(m, "CAST_FLOAT16_TO_32", QV_CAST_FLOAT16_TO_32) < 0 ||
        PyModule_AddIntConstant(m, "CAST_LARGE_LIST", QV_CAST_LARGE_LIST) < 0 ||
        PyModule_AddIntConstant(m, "CAST_SPARK", QV_CAST_SPARK) < 0 ||
        PyModule_AddStringConstant(m, "LIBRARY_VERSION", QV_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
