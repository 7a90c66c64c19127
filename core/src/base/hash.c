/* Checksums through xxHash (XXH3, 64-bit), the library from the system
 * packages; in the bundled static build (QV_BUNDLED_STATIC) compiled into
 * this file from xxhash.h instead, so that build depends on no libxxhash
 * and no XXH_ symbol leaves this object. */
#ifdef QV_XXHASH_INLINE
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include "quiver/base.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QV_XXHASH_INLINE)
#define QV_XXH_DISPATCH 1
/* The shared libxxhash of the system packages is built for baseline x86-64
 * (SSE2, about 15 GB/s here) but also exports a variant that picks AVX2 or
 * AVX-512 at run time (about 39 GB/s). Readers hash every byte they read
 * with pread, so that is worth having. Weak, because a static libxxhash.a
 * does not carry the variant: then the address is null and the portable
 * function is used. Both compute the same XXH3 value. */
extern XXH64_hash_t XXH3_64bits_withSeed_dispatch(const void *data, size_t len, XXH64_hash_t seed)
    __attribute__((weak));
#endif

uint64_t qv_hash64(const void *data, size_t len, uint64_t seed) {
#ifdef QV_XXH_DISPATCH
    if (XXH3_64bits_withSeed_dispatch)
        return (uint64_t)XXH3_64bits_withSeed_dispatch(data, len, (XXH64_hash_t)seed);
#endif
    return (uint64_t)XXH3_64bits_withSeed(data, len, (XXH64_hash_t)seed);
}
