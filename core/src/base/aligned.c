/* Untracked 64-byte aligned allocation; the memory part charges on top of it. */
#include <stdlib.h>

#include "quiver/base.h"

void *qv_aligned_alloc(size_t size) {
    size_t padded = qv_align_up(size);
    if (padded == 0) return NULL;
    return aligned_alloc(QV_ALIGNMENT, padded);
}

void qv_aligned_free(void *ptr) { free(ptr); }
