/*
 * qv_encode: validates and normalizes the caller's view (integers widened
 * to uint64, bitmaps moved to bit offset 0, binary offsets rebased to 0),
 * runs the cascade, and serializes the chosen tree into one buffer.
 */
#include "encoding/enc_internal.h"

static int bad(struct qv_error *err, const char *what) {
    return qv_error_set(err, EINVAL, "qv_encode: %s", what);
}

static int kind_info(enum qv_value_kind k, int *pt) {
    switch (k) {
    case QV_KIND_BOOL: *pt = QV__PT_BOOL; return 0;
    case QV_KIND_INT8:
    case QV_KIND_UINT8: *pt = QV__PT_U8; return 0;
    case QV_KIND_INT16:
    case QV_KIND_UINT16: *pt = QV__PT_U16; return 0;
    case QV_KIND_INT32:
    case QV_KIND_UINT32: *pt = QV__PT_U32; return 0;
    case QV_KIND_INT64:
    case QV_KIND_UINT64: *pt = QV__PT_U64; return 0;
    case QV_KIND_FLOAT32: *pt = QV__PT_F32; return 0;
    case QV_KIND_FLOAT64: *pt = QV__PT_F64; return 0;
    case QV_KIND_BINARY:
    case QV_KIND_LARGE_BINARY: *pt = QV__PT_BIN; return 0;
    case QV_KIND_FIXED_BINARY: *pt = QV__PT_FIXED; return 0;
    default: return -1;
    }
}

static int run(struct qv__enc *e, const struct qv_values *in, int pt, int force,
               struct qv__enode **root) {
    const int64_t n = in->count;
    struct qv_error *err = e->err;
    switch (pt) {
    case QV__PT_BOOL: {
        const uint8_t *bits = in->values;
        if (n && !bits) return bad(err, "NULL bitmap");
        if (in->bit_offset < 0) return bad(err, "negative bit offset");
        if (in->bit_offset & 7) {
            uint8_t *copy = qv__mem_calloc(&e->mem, (size_t)(n + 7) / 8 + 8, err);
            if (!copy) return ENOMEM;
            qv__copy_bits(copy, 0, bits, in->bit_offset, n);
            bits = copy;
        } else if (bits) {
            bits += in->bit_offset >> 3;
        }
        return qv__cascade_bool(e, bits, n, 0, force, root);
    }
    case QV__PT_BIN: {
        if (n && (!in->values || !in->data)) return bad(err, "NULL offsets or data");
        if (n == 0 && !in->values) {
            static const uint64_t zero = 0;
            return qv__cascade_bin(e, &zero, (const uint8_t *)"", 0, 0, force, root);
        }
        uint64_t *off = qv__mem_alloc(&e->mem, (size_t)(n + 1) * 8, err);
        if (!off) return ENOMEM;
        int64_t base;
        if (in->kind == QV_KIND_BINARY) {
            const int32_t *o = in->values;
            base = o[0];
            if (base < 0) return bad(err, "negative offset");
            for (int64_t i = 0; i <= n; i++) {
                if (o[i] < (i ? o[i - 1] : 0)) return bad(err, "offsets decrease");
                off[i] = (uint64_t)(o[i] - base);
            }
        } else {
            const int64_t *o = in->values;
            base = o[0];
            if (base < 0) return bad(err, "negative offset");
            for (int64_t i = 0; i <= n; i++) {
                if (o[i] < (i ? o[i - 1] : 0)) return bad(err, "offsets decrease");
                off[i] = (uint64_t)(o[i] - base);
            }
        }
        if (off[n] > QV_ENC_MAX_BYTES)
            return qv_error_set(err, EINVAL, "qv_encode: %llu bytes of binary data exceed the "
                                "chunk limit", (unsigned long long)off[n]);
        const uint8_t *data = in->data ? in->data + base : (const uint8_t *)"";
        e->root_data = data;
        e->root_n = n;
        return qv__cascade_bin(e, off, data, n, 0, force, root);
    }
    case QV__PT_FIXED: {
        if (in->fixed_width < 0 || in->fixed_width > QV_ENC_MAX_FIXED_WIDTH)
            return bad(err, "bad fixed width");
        if (n && !in->values && in->fixed_width) return bad(err, "NULL values");
        if ((uint64_t)n * (uint64_t)in->fixed_width > QV_ENC_MAX_BYTES)
            return bad(err, "chunk exceeds the byte limit");
        const uint8_t *v = in->values;
        if (!v) v = qv__mem_calloc(&e->mem, (size_t)in->fixed_width + 1, err);
        if (!v) return ENOMEM;
        e->root_data = v;
        e->root_n = n;
        return qv__cascade_fixed(e, v, n, (uint32_t)in->fixed_width, 0, force, root);
    }
    case QV__PT_F32:
    case QV__PT_F64: {
        if (n && !in->values) return bad(err, "NULL values");
        const void *v = in->values ? in->values : (const void *)"\0\0\0\0\0\0\0";
        return qv__cascade_float(e, v, n, pt, 0, force, root);
    }
    default: {
        if (n && !in->values) return bad(err, "NULL values");
        /* 64-bit integers are cascaded where they are (int64 and uint64
         * may alias): widening them was a copy of the whole chunk. */
        if (n && qv__pt_width(pt) == 8 && ((uintptr_t)in->values & 7) == 0)
            return qv__cascade_int(e, in->values, n, pt, 0, force, root);
        uint64_t *w = qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, err);
        if (!w) return ENOMEM;
        if (n) qv__widen(in->values, qv__pt_width(pt), n, w);
        return qv__cascade_int(e, w, n, pt, 0, force, root);
    }
    }
}

int qv_encode(const struct qv_values *in, const struct qv_encode_options *opts,
              struct qv_reservation *r, struct qv_encoded *out, struct qv_error *err) {
    return qv__encode_taught(in, opts, NULL, NULL, NULL, r, out, err);
}

int qv__encode_taught(const struct qv_values *in, const struct qv_encode_options *opts,
                      const struct qv__lesson *use, struct qv__lesson *learn,
                      struct qv__zcache *zc, struct qv_reservation *r, struct qv_encoded *out,
                      struct qv_error *err) {
    if (learn) learn->nsym = 0;
    if (!out) return bad(err, "NULL output");
    memset(out, 0, sizeof *out);
    if (!in || !r) return bad(err, "NULL argument");
    int pt;
    if (kind_info(in->kind, &pt)) return bad(err, "unknown kind");
    if (in->count < 0 || in->count > QV_ENC_MAX_COUNT)
        return qv_error_set(err, EINVAL, "qv_encode: count %lld outside [0, %lld]",
                            (long long)in->count, (long long)QV_ENC_MAX_COUNT);
    struct qv_encode_options o = {0};
    if (opts) o = *opts;
    if (o.force < 0 || (o.force != QV_ENC_AUTO && !qv__encoding_of((unsigned)o.force)))
        return qv_error_set(err, EINVAL, "qv_encode: unknown encoding %d", o.force);
    struct qv__enc e;
    qv__enc_init(&e, &o, r, err);
    e.lesson_use = use && use->nsym > 0 ? use : NULL;
    e.lesson_learn = learn;
    e.zcache = zc;
    struct qv__enode *root = NULL;
    int rc = run(&e, in, pt, o.force, &root);
    return qv__enc_finish(&e, rc, root, out);
}

void qv__enc_init(struct qv__enc *e, const struct qv_encode_options *o, struct qv_reservation *r,
                  struct qv_error *err) {
    memset(e, 0, sizeof *e);
    e->mem.r = r;
    e->own_zc.mem.r = r;
    e->stack.r = r;
    e->r = r;
    e->err = err;
    e->allowed = (o->allowed ? o->allowed : ~UINT32_C(0)) | QV_ENC_BIT(QV_ENC_PLAIN);
    if (o->force != QV_ENC_AUTO) e->allowed |= QV_ENC_BIT(o->force);
    e->max_depth = o->max_depth > 0 ? o->max_depth : QV_ENC_DEFAULT_DEPTH;
    if (e->max_depth > QV__ENC_MAX_DEPTH - 4) e->max_depth = QV__ENC_MAX_DEPTH - 4;
    e->compact = o->compact;
    e->extremes = o->extremes;
    if (e->extremes) memset(e->extremes, 0, sizeof *e->extremes);
    /* Default level: fast (1) where zstd is picked for leaves by the
     * cascade, stronger (3) when the caller asked for compact output. */
    e->zstd_level = o->zstd_level ? o->zstd_level : o->compact ? 3 : 1;
}

int qv__enc_finish(struct qv__enc *e, int rc, const struct qv__enode *root,
                   struct qv_encoded *out) {
    struct qv_error *err = e->err;
    /* The zstd context first: its workspace (up to 1.25 MiB) is not
     * charged while the output is. */
    qv__zcache_free(&e->own_zc);
    if (!rc) {
        out->data = qv_alloc(e->r, (size_t)root->size, err);
        if (!out->data) {
            rc = ENOMEM;
        } else {
            qv__enode_write(root, out->data);
            out->size = (size_t)root->size;
            out->capacity = (size_t)root->size;
        }
    }
    qv__stack_free(&e->stack);
    qv__mem_free_all(&e->mem);
    if (rc && err && err->code == 0) qv_error_set(err, rc, "qv_encode: failed (%s)", qv_errno_name(rc));
    return rc;
}

void qv_encoded_release(struct qv_reservation *r, struct qv_encoded *out) {
    if (!out) return;
    if (out->data) qv_free(r, out->data, out->capacity);
    memset(out, 0, sizeof *out);
}
