/* ArrowArrayStream producers: a wrapper over Quiver-style callbacks (errno
 * plus qv_error) that keeps the message for get_last_error and enforces the
 * protocol, and a stream over batches already in memory.
 *
 * Batches outlive streams: get_next moves an array out whole, so releasing
 * the stream never touches arrays the consumer already holds. */
#include <string.h>

#include "arrow/arrow_internal.h"

struct stream_state {
    struct qv_reservation *res;
    struct qv_arrow_stream_ops ops;
    void *ctx;
    struct qv_error last; /* code != 0 after a failed call */
};

static struct stream_state *state_of(struct ArrowArrayStream *s) {
    return s && s->release ? s->private_data : NULL;
}

static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
    struct stream_state *st = state_of(s);
    if (!st) return EINVAL; /* released: there is nowhere to put a message */
    qv_error_clear(&st->last);
    if (!out) return qv_error_set(&st->last, EINVAL, "stream get_schema: NULL output");
    out->release = NULL;
    int rc = st->ops.get_schema(st->ctx, out, &st->last);
    if (rc) {
        qv_arrow_schema_release(out);
        if (!st->last.code) qv_error_set(&st->last, rc, "stream get_schema failed (%s)", qv_errno_name(rc));
        /* The returned code wins; a kind recorded for another code goes with it. */
        if (st->last.code != rc) {
            st->last.code = rc;
            st->last.kind = qv_error_kind_of(rc);
        }
    }
    return rc;
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
    struct stream_state *st = state_of(s);
    if (!st) return EINVAL;
    qv_error_clear(&st->last);
    if (!out) return qv_error_set(&st->last, EINVAL, "stream get_next: NULL output");
    out->release = NULL;
    int rc = st->ops.get_next(st->ctx, out, &st->last);
    if (rc) {
        qv_arrow_array_release(out);
        if (!st->last.code) qv_error_set(&st->last, rc, "stream get_next failed (%s)", qv_errno_name(rc));
        /* The returned code wins; a kind recorded for another code goes with it. */
        if (st->last.code != rc) {
            st->last.code = rc;
            st->last.kind = qv_error_kind_of(rc);
        }
    }
    return rc;
}

static const char *stream_last_error(struct ArrowArrayStream *s) {
    struct stream_state *st = state_of(s);
    return st && st->last.code ? st->last.message : NULL;
}

static void stream_release(struct ArrowArrayStream *s) {
    struct stream_state *st = state_of(s);
    if (!st) return;
    if (st->ops.release) st->ops.release(st->ctx);
    qv_free(st->res, st, sizeof *st);
    s->release = NULL;
    s->private_data = NULL;
}

int qv_arrow_stream_create(struct ArrowArrayStream *out, const struct qv_arrow_stream_ops *ops,
                           void *ctx, struct qv_reservation *r, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "stream create: NULL output");
    out->release = NULL;
    if (!ops || !ops->get_schema || !ops->get_next || !r)
        return qv_error_set(err, EINVAL, "stream create: NULL %s",
                            !r ? "reservation" : "operations");
    struct stream_state *st = qv_alloc(r, sizeof *st, err);
    if (!st) return qv_error_wrap(err, ENOMEM, "stream create: ");
    memset(st, 0, sizeof *st);
    st->res = r;
    st->ops = *ops;
    st->ctx = ctx;
    *out = (struct ArrowArrayStream){
        .get_schema = stream_get_schema,
        .get_next = stream_get_next,
        .get_last_error = stream_last_error,
        .release = stream_release,
        .private_data = st,
    };
    return 0;
}

/* ---- a stream over in-memory batches ---- */

struct batches {
    struct qv_reservation *res;
    size_t size;
    struct qv_schema *schema;
    int64_t n, next;
    struct ArrowArray arrays[];
};

static int batches_schema(void *ctx, struct ArrowSchema *out, struct qv_error *err) {
    struct batches *b = ctx;
    return qv_schema_export(b->schema, b->res, out, err);
}

static int batches_next(void *ctx, struct ArrowArray *out, struct qv_error *err) {
    struct batches *b = ctx;
    if (b->next == b->n) return 0; /* end: out->release stays NULL */
    return qv_arrow_array_move(out, &b->arrays[b->next++], err);
}

static void batches_release(void *ctx) {
    struct batches *b = ctx;
    for (int64_t i = b->next; i < b->n; i++) qv_arrow_array_release(&b->arrays[i]);
    qv_schema_destroy(b->schema);
    qv_free(b->res, b, b->size);
}

int qv_arrow_stream_from_batches(struct ArrowArrayStream *out, struct ArrowSchema *schema,
                                 struct ArrowArray *batches, int64_t n,
                                 struct qv_reservation *r, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "stream from batches: NULL output");
    out->release = NULL;
    if (!r || n < 0 || (n > 0 && !batches) || n > (INT64_MAX / (int64_t)sizeof(struct ArrowArray)) / 2)
        return qv_error_set(err, EINVAL, "stream from batches: bad arguments (%lld batches)",
                            (long long)n);
    struct qv_schema *s = NULL;
    int rc = qv_schema_import(schema, r, &s, err);
    if (rc) return qv_error_wrap(err, rc, "stream from batches: ");
    for (int64_t i = 0; i < n; i++) {
        rc = qv_arrow_array_validate(&batches[i], &s->root, QV_VALIDATE_CHEAP, err);
        if (rc) {
            qv_schema_destroy(s);
            return qv_error_wrap(err, rc, "stream from batches: batch %lld: ", (long long)i);
        }
    }
    size_t size = sizeof(struct batches) + (size_t)n * sizeof(struct ArrowArray);
    struct batches *b = qv_alloc(r, size, err);
    if (!b) {
        qv_schema_destroy(s);
        return qv_error_wrap(err, ENOMEM, "stream from batches: ");
    }
    memset(b, 0, size);
    b->res = r;
    b->size = size;
    b->schema = s;
    b->n = n;
    static const struct qv_arrow_stream_ops ops = {batches_schema, batches_next, batches_release};
    rc = qv_arrow_stream_create(out, &ops, b, r, err);
    if (rc) {
        qv_schema_destroy(s);
        qv_free(r, b, size);
        return rc;
    }
    /* Nothing can fail from here on: take ownership of everything. */
    for (int64_t i = 0; i < n; i++) {
        b->arrays[i] = batches[i];
        batches[i].release = NULL;
        batches[i].private_data = NULL;
    }
    qv_arrow_schema_release(schema);
    return 0;
}
