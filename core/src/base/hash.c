/* Checksums through xxHash (XXH3, 64-bit), the library from the system packages. */
#include <xxhash.h>

#include "quiver/base.h"

uint64_t qv_hash64(const void *data, size_t len, uint64_t seed) {
    return (uint64_t)XXH3_64bits_withSeed(data, len, (XXH64_hash_t)seed);
}
