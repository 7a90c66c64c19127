/*
 * zstd's allocations from an encoding arena (struct qv__mem), through zstd's
 * custom allocator: the encoder's compression context (general.c) and
 * zstd_dict's contexts (zstd_dict.c) are blocks of the encoder's or
 * decoder's arena, so they are charged to its reservation and freed with
 * it like every other buffer. The decompression context of the zstd
 * node's frames (general.c, one per thread) and the dictionary builder's
 * working memory (zstd_dict.c) are the zstd allocations that stay outside
 * the pools.
 */
#ifndef QV_ENCODING_ZSTD_MEM_H
#define QV_ENCODING_ZSTD_MEM_H

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem */
#include <zstd.h>

#include "encoding/enc_internal.h"

/* The allocator over z->m; z must outlive every zstd object made with it
 * (their last free included). */
ZSTD_customMem qv__zmem_custom(struct qv__zmem *z);

#endif /* QV_ENCODING_ZSTD_MEM_H */
