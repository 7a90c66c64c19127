/* A scriptable host budget for tests: grants fully, partially, nothing, after
 * a delay, up to a capacity shared by every pool attached to it. */
#ifndef QV_TEST_FAKE_HOST_H
#define QV_TEST_FAKE_HOST_H

#include <stdint.h>

#include "base/thread.h"
#include "quiver/memory.h"

enum fake_host_mode { FAKE_FULL, FAKE_HALF, FAKE_ZERO };

struct fake_host {
    qv_mutex lock;
    enum fake_host_mode mode;
    uint64_t capacity;  /* 0 = unlimited */
    uint64_t granted;   /* currently granted to all pools */
    uint64_t peak;
    uint64_t acquires, releases;
    int finishes;       /* pools destroyed (qv_pool_host.finish) */
    int delay_ms;       /* each acquire sleeps this long (a blocking host) */
    struct qv_pool_host host;
};

void fake_host_init(struct fake_host *h, enum fake_host_mode mode, uint64_t capacity);
void fake_host_destroy(struct fake_host *h);
uint64_t fake_host_granted(struct fake_host *h);

#endif
