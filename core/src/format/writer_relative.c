/* Choosing and writing columns stored relative to another column of the
 * same row group (encoding 17, docs/format.md 5.5.16): l_receiptdate as
 * l_shipdate plus 1..30 days needs 5 bits a value where the dates alone
 * need 12.
 *
 * Candidates are the top-level integer columns (dates, timestamps, ints,
 * decimals of up to 18 digits in their int64 form) with no children; a
 * pair is two of them of the same value kind. For each row group, in
 * column order, a column is tried against every earlier candidate that is
 * not itself stored relative (so no chain forms): on a sample of the row
 * group (a few 1024-row windows), a quick screen keeps the references
 * whose differences span at least two bits fewer than the values (frame of
 * reference bits), and the cascade then encodes the sample's values and
 * the sample's differences of the screened references; the column is
 * stored relative to the reference whose differences encode smallest, if
 * that saves a sixth of the sample's bytes. The choice is made per row
 * group, so a row group where the columns do not move together keeps its
 * plain encoding.
 *
 * Pairs are chosen per row group at seal, on the caller's thread, and kept
 * with the row group (several row groups are in flight at once). The
 * columns of a row group are then encoded by independent tasks, on any
 * thread and in any order (writer_parallel.c), so a dependent column's task
 * computes its reference's values itself rather than wait for the
 * reference's task: the values a reader decodes from the reference's
 * segment are exactly the reference column's input after null fill
 * (null_fill.c; every integer encoding is lossless), so the task applies
 * qv__null_fill, with the writer's mode, to the reference column's input as
 * the reference's own task does, and takes the differences against that.
 * A dependent column's difference at its own null slots is 0 (its value
 * slot then reads as the reference's value, and zeros cost the least). No
 * task waits for another, so the bytes are the same for any thread count.
 *
 * Forcing QV_ENC_RELATIVE (format_testing.h) pairs every candidate with
 * the nearest earlier candidate of its kind that is not relative, whatever
 * the sample says, so tests reach every pairing. */
#include <string.h>

#include "encoding/relative.h"
#include "format/null_fill.h"
#include "format/writer_internal.h"

/* Rows per sample window, and windows per row group. */
#define REL_WINDOW 1024
#define REL_WINDOWS 4

struct qv__relplan {
    int32_t n_columns;
    struct rel_col {
        int32_t node;  /* physical node of the column */
        int candidate; /* a top-level integer column */
        int32_t ref;   /* column it is stored relative to, or -1 */
    } *cols;
    size_t cols_size;
};

static int is_int_kind(enum qv_value_kind k) {
    return k >= QV_KIND_INT8 && k <= QV_KIND_UINT64;
}

static int candidate(const struct qv__node *node) {
    if (node->parent != -1 || node->n_children) return 0;
    if (node->kind == QV__NODE_DECIMAL64) return 1;
    return node->kind == QV__NODE_PRIMITIVE && is_int_kind(node->value_kind);
}

static unsigned width_of(const struct qv__node *node) {
    return (unsigned)qv__kind_width(node->value_kind, node->fixed_width);
}

/* Values of column c at rows [row, row + m) of the row group, as uint64
 * bit patterns of the column's width (decimals: their low 8 bytes, what
 * the writer stores); valid (if not NULL) gets 1 per non-null row. */
static void gather(const struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c,
                   int64_t row, int64_t m, uint64_t *out, uint8_t *valid) {
    const struct qv__node *node = &w->nodes[w->col_node[c]];
    const unsigned width = width_of(node), stride = node->kind == QV__NODE_DECIMAL64 ? 16 : width;
    int64_t at = 0, done = 0;
    for (int32_t p = 0; p < rg->n_pieces && done < m; p++) {
        const struct qv__piece *pc = &rg->pieces[p];
        if (row + done >= at + pc->length) {
            at += pc->length;
            continue;
        }
        const struct ArrowArray *col = pc->held->array.children[c];
        const int64_t base = col->offset + pc->held->array.offset + pc->start;
        const uint8_t *vals = col->buffers[1];
        const uint8_t *bits = col->null_count != 0 && col->n_buffers > 0 ? col->buffers[0] : NULL;
        for (int64_t j = row + done - at; j < pc->length && done < m; j++, done++) {
            uint64_t v = 0;
            memcpy(&v, vals + (size_t)(base + j) * stride, width);
            out[done] = v;
            if (valid) valid[done] = bits ? (uint8_t)qv_bit_get(bits, base + j) : 1;
        }
        at += pc->length;
    }
}

/* The sample's null slots as null fill would mostly have them (its usual
 * choice on scattered nulls: the previous non-null value; leading nulls
 * the window's first), so a reference with nulls is judged on values near
 * what its segment will hold rather than on whatever the producer left
 * under its nulls. Only the choice depends on this; the differences
 * written are taken against the real fill (qv__relative_values). */
static void fill_previous(uint64_t *v, const uint8_t *valid, int64_t nwin, int64_t win) {
    for (int64_t w0 = 0; w0 < nwin; w0++) {
        uint64_t *x = v + w0 * win;
        const uint8_t *ok = valid + w0 * win;
        int64_t first = 0;
        while (first < win && !ok[first]) first++;
        if (first == win) continue;
        uint64_t prev = x[first];
        for (int64_t i = 0; i < win; i++) {
            if (ok[i]) prev = x[i];
            else x[i] = prev;
        }
    }
}

/* Frame-of-reference bits of m values of `bits` bits read as signed. */
static unsigned for_bits(const uint64_t *v, int64_t m, unsigned bits) {
    if (m == 0) return 0;
    const unsigned s = 64 - bits;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = 0; i < m; i++) {
        int64_t x = bits >= 64 ? (int64_t)v[i] : (int64_t)(v[i] << s) >> s;
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    return qv_bit_width64((uint64_t)hi - (uint64_t)lo);
}

/* Stores m uint64 values at `width` bytes each. */
static void narrow(const uint64_t *v, int64_t m, unsigned width, uint8_t *out) {
    for (int64_t i = 0; i < m; i++) memcpy(out + (size_t)i * width, &v[i], width);
}

/* Bytes the cascade spends on m values (of kind, width bytes each). */
static int sample_size(struct qv_writer *w, enum qv_value_kind kind, unsigned width,
                       const uint64_t *v, int64_t m, uint8_t *scratch, uint64_t *size,
                       struct qv_error *err) {
    narrow(v, m, width, scratch);
    struct qv_values vals = {.kind = kind, .count = m, .values = scratch};
    struct qv_encode_options eo = {.allowed = w->opts.allowed_encodings, .compact = w->opts.compact};
    struct qv_encoded enc = {0};
    int rc = qv_encode(&vals, &eo, w->r, &enc, err);
    if (rc) return rc;
    *size = enc.size;
    qv_encoded_release(w->r, &enc);
    return 0;
}

void qv__relative_free(struct qv_writer *w, struct qv__rowgroup *rg) {
    struct qv__relplan *p = rg->rel;
    if (!p) return;
    if (p->cols) qv_free(w->r, p->cols, p->cols_size);
    qv_free(w->r, p, sizeof *p);
    rg->rel = NULL;
}

/* Chooses c's reference from the sample (rows of every column at the same
 * sample rows; valid: c's validity there). */
static int choose(struct qv_writer *w, struct qv__relplan *p, int32_t c, uint64_t *const *sample,
                  const uint8_t *valid, int64_t m, uint64_t *diff, uint8_t *scratch,
                  struct qv_error *err) {
    const struct qv__node *node = &w->nodes[p->cols[c].node];
    const unsigned width = width_of(node), bits = 8 * width;
    const uint64_t mask = bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
    const unsigned own = for_bits(sample[c], m, bits);
    uint64_t own_size = 0, best = UINT64_MAX;
    int32_t best_ref = -1;
    int have_own = 0;
    for (int32_t r = 0; r < c; r++) {
        const struct qv__node *rn = &w->nodes[p->cols[r].node];
        if (!p->cols[r].candidate || p->cols[r].ref >= 0 || rn->value_kind != node->value_kind)
            continue;
        for (int64_t i = 0; i < m; i++) diff[i] = valid[i] ? (sample[c][i] - sample[r][i]) & mask : 0;
        if (for_bits(diff, m, bits) + 2 > own) continue;
        int rc;
        if (!have_own) {
            rc = sample_size(w, node->value_kind, width, sample[c], m, scratch, &own_size, err);
            if (rc) return rc;
            have_own = 1;
        }
        uint64_t size;
        rc = sample_size(w, node->value_kind, width, diff, m, scratch, &size, err);
        if (rc) return rc;
        if (size < best) {
            best = size;
            best_ref = r;
        }
    }
    if (best_ref >= 0 && best * 6 <= own_size * 5) p->cols[c].ref = best_ref;
    return 0;
}

int qv__relative_plan(struct qv_writer *w, struct qv__rowgroup *rg, struct qv_error *err) {
    rg->rel = NULL;
    const uint32_t allowed = w->opts.allowed_encodings;
    const int forced = w->force_encoding == QV_ENC_RELATIVE;
    if (!forced && (w->force_encoding != QV_ENC_AUTO ||
                    (allowed && !(allowed & QV_ENC_BIT(QV_ENC_RELATIVE)))))
        return 0;
    const int32_t n_columns = (int32_t)w->schema->root.n_children;
    int32_t n_cand = 0;
    for (int32_t c = 0, k = 0; c < n_columns; c++, k = w->nodes[k].subtree_end)
        n_cand += candidate(&w->nodes[k]);
    if (n_cand < 2 || rg->rows == 0) return 0;
    struct qv__relplan *p = qv_calloc(w->r, sizeof *p, err);
    if (!p) return ENOMEM;
    rg->rel = p;
    p->n_columns = n_columns;
    p->cols_size = (size_t)n_columns * sizeof *p->cols;
    p->cols = qv_calloc(w->r, p->cols_size, err);
    if (!p->cols) return ENOMEM;
    for (int32_t c = 0, k = 0; c < n_columns; c++, k = w->nodes[k].subtree_end) {
        p->cols[c].node = k;
        p->cols[c].candidate = candidate(&w->nodes[k]);
        p->cols[c].ref = -1;
    }
    int rc = 0;
    if (forced) {
        for (int32_t c = 0; c < n_columns; c++) {
            if (!p->cols[c].candidate) continue;
            for (int32_t r = c - 1; r >= 0; r--) {
                if (p->cols[r].candidate && p->cols[r].ref < 0 &&
                    w->nodes[p->cols[r].node].value_kind == w->nodes[p->cols[c].node].value_kind) {
                    p->cols[c].ref = r;
                    break;
                }
            }
        }
    } else {
        /* The sample: REL_WINDOWS windows spread over the row group. */
        int64_t win = rg->rows < REL_WINDOW ? rg->rows : REL_WINDOW;
        int64_t nwin = rg->rows / win < REL_WINDOWS ? rg->rows / win : REL_WINDOWS;
        const int64_t m = win * nwin;
        const size_t vsize = (size_t)m * 8;
        uint64_t **sample = qv_calloc(w->r, (size_t)n_columns * sizeof *sample, err);
        uint64_t *diff = sample ? qv_alloc(w->r, vsize, err) : NULL;
        uint8_t *scratch = diff ? qv_alloc(w->r, vsize, err) : NULL;
        uint8_t *valid = scratch ? qv_alloc(w->r, (size_t)m, err) : NULL;
        if (!valid) rc = ENOMEM;
        for (int32_t c = 0; !rc && c < n_columns; c++) {
            if (!p->cols[c].candidate) continue;
            sample[c] = qv_alloc(w->r, vsize, err);
            if (!sample[c]) {
                rc = ENOMEM;
                break;
            }
            for (int64_t i = 0; i < nwin; i++) {
                int64_t row = nwin > 1 ? (rg->rows - win) * i / (nwin - 1) : 0;
                gather(w, rg, c, row, win, sample[c] + i * win, valid + i * win);
            }
            fill_previous(sample[c], valid, nwin, win);
        }
        for (int32_t c = 1; !rc && c < n_columns; c++) {
            if (!p->cols[c].candidate) continue;
            for (int64_t i = 0; i < nwin; i++) {
                int64_t row = nwin > 1 ? (rg->rows - win) * i / (nwin - 1) : 0;
                gather(w, rg, c, row, win, diff, valid + i * win);
            }
            rc = choose(w, p, c, sample, valid, m, diff, scratch, err);
        }
        if (sample)
            for (int32_t c = 0; c < n_columns; c++)
                if (sample[c]) qv_free(w->r, sample[c], vsize);
        if (sample) qv_free(w->r, sample, (size_t)n_columns * sizeof *sample);
        if (diff) qv_free(w->r, diff, vsize);
        if (scratch) qv_free(w->r, scratch, vsize);
        if (valid) qv_free(w->r, valid, (size_t)m);
    }
    int any = 0;
    for (int32_t c = 0; c < n_columns; c++) any |= p->cols[c].ref >= 0;
    if (rc || !any) qv__relative_free(w, rg);
    return rc;
}

/* out[i] = a[i] - b[i] for n values of `width` bytes, wrapping: one
 * loop per width, which the compiler vectorizes. */
#define SUBTRACT(T)                                                                                \
    do {                                                                                           \
        const T *x = a, *y = b;                                                                    \
        T *o = (T *)out;                                                                           \
        for (int64_t i = 0; i < n; i++) o[i] = (T)(x[i] - y[i]);                                   \
    } while (0)
static void subtract(const void *a, const void *b, int64_t n, unsigned width, uint8_t *out) {
    switch (width) {
    case 1: SUBTRACT(uint8_t); break;
    case 2: SUBTRACT(uint16_t); break;
    case 4: SUBTRACT(uint32_t); break;
    default: SUBTRACT(uint64_t); break;
    }
}
#undef SUBTRACT

/* The values of top-level column c of the row group as its own task gives
 * them to null fill (writer_encode.c's put_node): in place (rg->whole: the
 * column's array as is, its null count as the array says) or joined from
 * the pieces (the joiner's copy: validity bits of pieces with nulls, the
 * count of their clear bits). Decimals: their low 8 bytes. Fills *v, the
 * validity (NULL: none) and the null count; buffers allocated on r are
 * returned in *vals / *bits with their sizes for the caller to free. */
static int column_input(const struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c,
                        struct qv_reservation *r, struct qv_values *v, const uint8_t **validity,
                        int64_t *nulls, void **vals, size_t *vals_size, uint8_t **bits,
                        size_t *bits_size, struct qv_error *err) {
    const struct qv__node *node = &w->nodes[w->col_node[c]];
    const unsigned width = width_of(node);
    const int dec = node->kind == QV__NODE_DECIMAL64;
    const int64_t n = rg->rows;
    memset(v, 0, sizeof *v);
    v->kind = node->value_kind;
    v->fixed_width = node->fixed_width;
    v->count = n;
    *vals = NULL;
    *bits = NULL;
    *vals_size = *bits_size = 0;
    *validity = NULL;
    *nulls = 0;
    if (rg->whole) {
        const struct ArrowArray *arr = rg->pieces[0].held->array.children[c];
        const uint8_t *vb = arr->n_buffers > 0 ? arr->buffers[0] : NULL;
        int64_t nn = arr->null_count;
        if (nn < 0 || (nn > 0 && !vb)) nn = vb ? n - qv_bits_count(vb, 0, n) : 0;
        if (nn) {
            *validity = vb;
            *nulls = nn;
        }
        if (!dec) {
            v->values = arr->buffers[1];
            return 0;
        }
    }
    *vals_size = (size_t)(n ? n : 1) * width;
    *vals = qv_alloc(r, *vals_size, err);
    if (!*vals) return ENOMEM;
    v->values = *vals;
    if (rg->whole) {
        /* A decimal in place: its low 8 bytes. */
        const uint8_t *src = rg->pieces[0].held->array.children[c]->buffers[1];
        for (int64_t i = 0; i < n; i++) memcpy((uint8_t *)*vals + (size_t)i * 8, src + (size_t)i * 16, 8);
        return 0;
    }
    const unsigned stride = dec ? 16 : width;
    int64_t at = 0, nn = 0;
    for (int32_t p = 0; p < rg->n_pieces; p++) {
        const struct qv__piece *pc = &rg->pieces[p];
        const struct ArrowArray *col = pc->held->array.children[c];
        const int64_t base = col->offset + pc->held->array.offset + pc->start;
        const uint8_t *src = col->buffers[1];
        for (int64_t j = 0; j < pc->length; j++)
            memcpy((uint8_t *)*vals + (size_t)(at + j) * width, src + (size_t)(base + j) * stride,
                   width);
        const uint8_t *sv = col->n_buffers > 0 ? col->buffers[0] : NULL;
        if (sv && col->null_count != 0 && pc->length > 0) {
            int64_t pn = pc->length - qv_bits_count(sv, base, pc->length);
            if (pn && !*bits) {
                *bits_size = (size_t)((n + 7) / 8);
                *bits = qv_alloc(r, *bits_size, err);
                if (!*bits) return ENOMEM;
                qv_bits_fill(*bits, 0, n, 1);
            }
            if (pn) qv_bits_copy(*bits, at, sv, base, pc->length);
            nn += pn;
        }
        at += pc->length;
    }
    if (nn) {
        *validity = *bits;
        *nulls = nn;
    }
    return 0;
}

int qv__relative_values(struct qv_writer *w, const struct qv__rowgroup *rg, int32_t c,
                        const struct qv_values *v, const uint8_t *validity,
                        struct qv_reservation *r, struct qv_encoded *out, int *done,
                        struct qv_error *err) {
    const struct qv__relplan *p = rg->rel;
    *done = 0;
    if (!p || c < 0 || c >= p->n_columns || p->cols[c].ref < 0) return 0;
    const int32_t rc_col = p->cols[c].ref;
    const int64_t n = v->count;
    if (n != rg->rows)
        return qv_error_set(err, EINVAL, "relative column of %lld values in a row group of %lld",
                            (long long)n, (long long)rg->rows);
    const unsigned width = width_of(&w->nodes[p->cols[c].node]);
    struct qv_values rv;
    const uint8_t *rvalid;
    int64_t rnulls;
    void *rvals;
    uint8_t *rbits;
    size_t rvals_size, rbits_size;
    int rc = column_input(w, rg, rc_col, r, &rv, &rvalid, &rnulls, &rvals, &rvals_size, &rbits,
                          &rbits_size, err);
    struct qv__filled filled;
    int have_filled = 0;
    if (!rc) {
        /* What readers decode from the reference's segment. */
        rc = qv__null_fill(&rv, rvalid, rnulls, w->null_fill, r, &filled, err);
        have_filled = !rc;
    }
    uint8_t *diff = NULL;
    size_t size = (size_t)(n ? n : 1) * width;
    if (!rc) {
        diff = qv_alloc(r, size, err);
        if (!diff) rc = ENOMEM;
    }
    if (!rc) {
        subtract(v->values, filled.v.values, n, width, diff);
        if (validity)
            for (int64_t i = 0; i < n; i++)
                if (!qv_bit_get(validity, i)) memset(diff + (size_t)i * width, 0, width);
        struct qv_values d = {.kind = v->kind, .count = n, .values = diff};
        struct qv_encode_options eo = {.allowed = w->opts.allowed_encodings,
                                       .compact = w->opts.compact};
        rc = qv__relative_encode(&d, p->cols[rc_col].node, &eo, r, out, err);
        if (!rc) *done = 1;
    }
    if (diff) qv_free(r, diff, size);
    if (have_filled) qv__null_fill_release(r, &filled);
    if (rbits) qv_free(r, rbits, rbits_size);
    if (rvals) qv_free(r, rvals, rvals_size);
    return rc;
}
