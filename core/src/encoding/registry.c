/*
 * The encodings by wire id: the one table that lists them. Each entry is
 * the record its encoding's file defines (enc_internal.h, struct
 * qv__encoding). Id 0 (auto) and ids without an entry have no record; a
 * file that names one is corrupt.
 */
#include "encoding/enc_internal.h"

static const struct qv__encoding *const table[] = {
    [QV_ENC_PLAIN] = &qv__enc_plain,   [QV_ENC_CONSTANT] = &qv__enc_constant,
    [QV_ENC_BITPACK] = &qv__enc_bitpack, [QV_ENC_FOR] = &qv__enc_for,
    [QV_ENC_DELTA] = &qv__enc_delta,   [QV_ENC_ZIGZAG] = &qv__enc_zigzag,
    [QV_ENC_DICT] = &qv__enc_dict,     [QV_ENC_RLE] = &qv__enc_rle,
    [QV_ENC_SPARSE] = &qv__enc_sparse, [QV_ENC_ALP] = &qv__enc_alp,
    [QV_ENC_ALP_RD] = &qv__enc_alp_rd, [QV_ENC_FSST] = &qv__enc_fsst,
    [QV_ENC_ZSTD] = &qv__enc_zstd,     [QV_ENC_LZ4] = &qv__enc_lz4,
    [QV_ENC_PATCHED] = &qv__enc_patched,
    [QV_ENC_ZSTD_DICT] = &qv__enc_zstd_dict,
    [QV_ENC_RELATIVE] = &qv__enc_relative,
    [QV_ENC_ANS] = &qv__enc_ans,
    [QV_ENC_BUCKET] = &qv__enc_bucket,
    [QV_ENC_SEQPACK] = &qv__enc_seqpack,
    [QV_ENC_RADIX] = &qv__enc_radix,
};

#define SLOTS (sizeof table / sizeof table[0])

/* The public id list (enum qv_encoding) and the table must agree: the enum
 * sizes arrays (QV_ENC_COUNT) and bit masks (QV_ENC_BIT). */
_Static_assert(SLOTS == QV_ENC_COUNT, "enum qv_encoding and the registry disagree");
_Static_assert(QV_ENC_COUNT <= 32, "QV_ENC_BIT masks are 32 bits");

const struct qv__encoding *qv__encoding_of(unsigned id) {
    return id < SLOTS ? table[id] : NULL;
}

unsigned qv__encoding_slots(void) { return (unsigned)SLOTS; }
