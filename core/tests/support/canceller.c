#include "canceller.h"

#include <time.h>

void *cancel_main(void *arg) {
    struct canceller *c = arg;
    struct timespec ts = {c->after_us / 1000000, (c->after_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    c->rc = qv_scan_cancel(c->st);
    return NULL;
}
