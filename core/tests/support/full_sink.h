/* A sink that takes bytes up to a budget and then fails with ENOSPC, as a
 * full disk does; finish succeeds, abort and close have nothing to free.
 * For the writer tests of a full disk, inline and on the worker. */
#ifndef QV_TEST_FULL_SINK_H
#define QV_TEST_FULL_SINK_H

#include <stdint.h>

#include "quiver/format.h"

struct full_sink {
    uint64_t room, written;
};

/* Sets `f` to take `room` bytes and `out` to a sink named "full" writing
 * into it (its errors name "sink 'full'"). */
void full_sink_init(struct full_sink *f, uint64_t room, struct qv_sink *out);

#endif
