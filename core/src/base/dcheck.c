/* The failure half of QV_DCHECK (base/dcheck.h): say where, then stop. */
#include <stdio.h>
#include <stdlib.h>

#include "base/dcheck.h"

#ifdef QV_DEBUG
void qv__dcheck_fail(const char *file, int line, const char *expr) {
    fprintf(stderr, "%s:%d: QV_DCHECK(%s) failed\n", file, line, expr);
    fflush(stderr);
    abort();
}
#else
/* ISO C forbids an empty translation unit. */
typedef int qv__dcheck_unused;
#endif
