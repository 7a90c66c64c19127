/* What the encoder learned from one chunk of a column that later chunks of
 * the same column may reuse instead of learning it again: FSST's symbol
 * table, trained on the column's first chunk. The writer (format part,
 * writer_encode.c) keeps one per string column, learned from row group 0,
 * and hands it to the encoder of every later row group; the encoder uses
 * it only when it compresses that chunk's sample within LESSON_SLACK of
 * what it did on the chunk it was trained on, and trains its own table
 * otherwise (docs/format.md, "The cascade": FSST's training budgets).
 * A lesson changes which table a chunk is encoded with, never how it is
 * encoded: the file holds each chunk's table as it always did, and readers
 * know nothing of lessons. */
#ifndef QV_ENC_LESSON_H
#define QV_ENC_LESSON_H

#include <stdint.h>

#include "quiver/encoding.h"

#define QV__LESSON_SYMS 255
#define QV__LESSON_SYM_BYTES 16

struct qv__lesson {
    int nsym;                  /* 0: nothing learned */
    double ratio;              /* compressed / raw on the sample it was measured on */
    uint8_t len[QV__LESSON_SYMS];
    uint8_t sym[QV__LESSON_SYMS][QV__LESSON_SYM_BYTES]; /* bytes past len: 0 */
};

/* A zstd compression context an encoding thread keeps across its encodes
 * (enc_internal.h, struct qv__zcache): made with a reservation of its own
 * in `pool`; destroy frees the context, its workspace and the reservation.
 * One thread at a time uses a cache. */
struct qv__zcache;
int qv__zcache_create(struct qv_pool *pool, struct qv__zcache **out, struct qv_error *err);
void qv__zcache_destroy(struct qv__zcache *z);

/* qv_encode, with a lesson to reuse (`use`, or NULL) and one to learn
 * (`learn`, or NULL: set to what a string root's FSST training produced,
 * nsym 0 when none ran), and a compression context to compress through
 * (`zc`, or NULL: the encode makes its own). Binary kinds only look at the
 * lessons. The bytes out are the same with or without `zc`. */
int qv__encode_taught(const struct qv_values *in, const struct qv_encode_options *opts,
                      const struct qv__lesson *use, struct qv__lesson *learn,
                      struct qv__zcache *zc, struct qv_reservation *r, struct qv_encoded *out,
                      struct qv_error *err);

#endif
