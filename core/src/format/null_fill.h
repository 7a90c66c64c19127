/* What the writer stores under null slots (null_fill.c).
 *
 * A values segment holds one value per slot, nulls included; readers mask
 * the null slots with the validity segment, so the bytes under them are the
 * writer's to choose. Whatever the producer left there (random bytes, a
 * sentinel, the previous batch's data) costs as much as real data, so the
 * writer replaces it with a fill value that the cascade then encodes for
 * almost nothing. Non-null slots are never touched. */
#ifndef QV_FORMAT_NULL_FILL_H
#define QV_FORMAT_NULL_FILL_H

#include "quiver/encoding.h"

/* How null slots are filled. The writer uses QV__FILL_AUTO; the others are
 * for tests and measurements (bench_nulls). */
enum qv__fill_mode {
    QV__FILL_AUTO = 0,  /* choose per chunk (null_fill.c says how) */
    QV__FILL_KEEP,      /* leave the producer's bytes: what format 2.0 writers did */
    QV__FILL_ZERO,      /* zero bits; binary: empty values */
    QV__FILL_PREVIOUS,  /* the previous non-null value (leading nulls: the first) */
    QV__FILL_FREQUENT,  /* the chunk's most frequent non-null value (majority vote) */
    QV__FILL_MODES
};

/* Values ready to encode: `v` is either the input view (nothing to fill or
 * KEEP) or a view of copies owned here. */
struct qv__filled {
    struct qv_values v;
    void *values;        /* owned copy of the values / offsets, or NULL */
    size_t values_size;
    uint8_t *data;       /* owned copy of binary bytes, or NULL */
    size_t data_size;
    int mode;            /* the fill used (never AUTO) */
};

/* Fills the null slots of `in` (validity: LSB-first, bit i for value i, 1 =
 * valid; nulls = the number of clear bits among the first in->count) per
 * `mode`, into copies charged to `r`. `in` is a writer's view: BOOL values
 * at bit_offset 0. With nulls == 0 or a NULL validity `out->v` is `in`.
 * ENOMEM (err set) leaves nothing allocated. Release with
 * qv__null_fill_release. */
int qv__null_fill(const struct qv_values *in, const uint8_t *validity, int64_t nulls, int mode,
                  struct qv_reservation *r, struct qv__filled *out, struct qv_error *err);
void qv__null_fill_release(struct qv_reservation *r, struct qv__filled *f);

#endif
