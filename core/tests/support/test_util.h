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

/* The whole file at `path` in a malloc'd buffer (*size bytes), or NULL. */
static inline unsigned char *tu_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = buf ? (size_t)n : 0;
    return buf;
}

#endif
