/* A thread that cancels a scan from outside: it naps after_us
 * microseconds, then calls qv_scan_cancel on the stream and keeps what it
 * returned in rc. Start it with qv_thread_create(&th, cancel_main, &c) (or
 * pthread_create) and join it before reading rc or releasing the stream. */
#ifndef QV_TEST_CANCELLER_H
#define QV_TEST_CANCELLER_H

#include "quiver/scan.h"

struct canceller {
    struct ArrowArrayStream *st;
    long after_us;
    int rc; /* qv_scan_cancel's result, once joined */
};

void *cancel_main(void *arg);

#endif
