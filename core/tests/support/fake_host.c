#include "fake_host.h"

#include <time.h>

static uint64_t fake_acquire(void *ctx, uint64_t bytes) {
    struct fake_host *h = ctx;
    if (h->delay_ms) {
        struct timespec ts = {h->delay_ms / 1000, (long)(h->delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    qv_mutex_lock(&h->lock);
    h->acquires++;
    uint64_t want = bytes;
    if (h->mode == FAKE_HALF) want = bytes / 2;
    if (h->mode == FAKE_ZERO) want = 0;
    if (h->capacity && h->granted + want > h->capacity)
        want = h->capacity > h->granted ? h->capacity - h->granted : 0;
    h->granted += want;
    if (h->granted > h->peak) h->peak = h->granted;
    qv_mutex_unlock(&h->lock);
    return want;
}

static void fake_release(void *ctx, uint64_t bytes) {
    struct fake_host *h = ctx;
    qv_mutex_lock(&h->lock);
    h->releases++;
    h->granted -= bytes;
    qv_mutex_unlock(&h->lock);
}

static void fake_finish(void *ctx) {
    struct fake_host *h = ctx;
    qv_mutex_lock(&h->lock);
    h->finishes++;
    qv_mutex_unlock(&h->lock);
}

void fake_host_init(struct fake_host *h, enum fake_host_mode mode, uint64_t capacity) {
    *h = (struct fake_host){0};
    qv_mutex_init(&h->lock);
    h->mode = mode;
    h->capacity = capacity;
    h->host = (struct qv_pool_host){h, fake_acquire, fake_release, fake_finish, NULL};
}

void fake_host_destroy(struct fake_host *h) { qv_mutex_destroy(&h->lock); }

uint64_t fake_host_granted(struct fake_host *h) {
    qv_mutex_lock(&h->lock);
    uint64_t g = h->granted;
    qv_mutex_unlock(&h->lock);
    return g;
}
