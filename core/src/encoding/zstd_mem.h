/*
 * zstd's allocations from an encoding arena (struct qv__mem), through zstd's
 * custom allocator: the encoder's compression context (general.c; or the
 * one a writer's thread keeps across encodes, struct qv__zcache, blocks of
 * the cache's own arena) and
 * zstd_dict's contexts (zstd_dict.c) are blocks of the encoder's or
 * decoder's arena, so they are charged to its reservation and freed with
 * it like every other buffer. The decompression context (general.c, one
 * per thread, used by the zstd node's frames and zstd_dict's) and the
 * dictionary builder's working memory (zstd_dict.c) are the zstd
 * allocations that stay outside the pools.
 */
#ifndef QV_ENCODING_ZSTD_MEM_H
#define QV_ENCODING_ZSTD_MEM_H

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem */
#include <zstd.h>

#include "encoding/enc_internal.h"

/* The allocator over z->m; z must outlive every zstd object made with it
 * (their last free included). */
ZSTD_customMem qv__zmem_custom(struct qv__zmem *z);

/* The calling thread's decompression context (general.c), borrowed for one
 * decompression and given back; NULL when none can be made (out of
 * memory). A context borrowed while the thread's is out is a fresh one,
 * freed when given back. */
ZSTD_DCtx *qv__zstd_dctx_borrow(void);
void qv__zstd_dctx_return(ZSTD_DCtx *c);

#endif /* QV_ENCODING_ZSTD_MEM_H */
