/* Small helpers shared by the format and scan tests. */
#ifndef QV_TEST_UTIL_H
#define QV_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

/* A path under the test's temporary directory (QV_TEST_TMPDIR or /tmp). */
static inline const char *tu_path(char *buf, size_t cap, const char *name) {
    const char *dir = getenv("QV_TEST_TMPDIR");
    snprintf(buf, cap, "%s/%s", dir ? dir : "/tmp", name);
    return buf;
}

#endif
