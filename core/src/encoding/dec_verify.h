/* Verification of the bytes a decoder reads, as it reads them. A file of
 * format 2 has a checksum per block of every segment (docs/format.md,
 * section 4); a column reader gives each decoder a verifier, and the
 * decoder calls it with every byte range of the segment it is about to use
 * (every node's header and buffers as the tree is parsed, except the
 * buffers that hold values: the vectors of a range of a bit-packed or plain
 * node, the codes of an fsst range, the compressed bytes of one zstd/lz4
 * frame are verified when a decode reads them), so a take checks the blocks
 * it touches and no others. A verifier may also fetch the bytes it is
 * asked about (a column reader that reads blocks on demand). */
#ifndef QV_ENC_DEC_VERIFY_H
#define QV_ENC_DEC_VERIFY_H

#include <stdint.h>

#include "quiver/encoding.h"

/* Checks bytes [off, off + len) of the segment (offsets from its first
 * byte). 0, or EIO (of kind corrupt) with err naming where. */
typedef int (*qv__verify_fn)(void *ctx, uint64_t off, uint64_t len, struct qv_error *err);

/* qv_decoder_open with a verifier: the decoder calls fn(ctx, off, len) on
 * every byte range of `bytes` before it reads it, from the parse on, so
 * `bytes` may even be unread memory the verifier fills (8-aligned). */
int qv__decoder_open_checked(const void *bytes, size_t size, enum qv_value_kind kind,
                             int32_t fixed_width, int64_t count, struct qv_reservation *r,
                             qv__verify_fn fn, void *ctx, struct qv_decoder **out,
                             struct qv_error *err);
/* Verifies every byte of the segment's tree that a decode may read (for
 * users of the tree that do not go through the decoder's dispatch). */
int qv__decoder_verify_all(struct qv_decoder *d, struct qv_error *err);

/* qv_decoder_take of rows its caller has checked are in order (the column
 * reader's take of a row list): only the first row is checked against 0
 * and the last against the chunk's count. A filter's projection hands the same
 * list to every decoder of every column, where the full check's pass over
 * the rows was 2% of the scan. Debug builds check every row. */
int qv__decoder_take_sorted(struct qv_decoder *d, const int64_t *rows, int64_t n,
                            struct qv_decode_out *out, struct qv_error *err);

#endif
