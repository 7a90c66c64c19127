/* zstd's allocations from an encoding arena (zstd_mem.h). */
#include "encoding/zstd_mem.h"

static void *zmem_alloc(void *opaque, size_t n) {
    struct qv__zmem *z = opaque;
    void *p = qv__mem_alloc(z->m, n, z->err);
    z->failed |= !p;
    return p;
}

static void zmem_free(void *opaque, void *p) { qv__mem_free(((struct qv__zmem *)opaque)->m, p); }

ZSTD_customMem qv__zmem_custom(struct qv__zmem *z) {
    ZSTD_customMem cm = {zmem_alloc, zmem_free, z};
    return cm;
}
