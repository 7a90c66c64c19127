/* A writer's sink into memory, for the writer tests that compare the bytes
 * of many writes (no file, no fsync on a busy machine): it can fail its
 * k-th write, and records whether finish or abort was called. */
#ifndef QV_TEST_MEM_SINK_H
#define QV_TEST_MEM_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "quiver/format.h"

struct memsink {
    uint8_t *p; /* the bytes written (free() it when done) */
    size_t len, cap;
    int finished, aborted; /* finish / abort was called */
    int writes, fail_at;   /* writes so far; the one to fail (0: none) */
};

/* Empties m (keeping its buffer) and returns a sink writing into it that
 * fails its fail_at-th write with EIO (0: never). */
struct qv_sink memsink_open(struct memsink *m, int fail_at);

#endif
