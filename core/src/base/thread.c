/* Thin POSIX thread wrappers (base/thread.h), and the CPU count and clock of base.h. */
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "base/thread.h"

int qv_mutex_init(qv_mutex *m) { return pthread_mutex_init(m, NULL); }
void qv_mutex_destroy(qv_mutex *m) { pthread_mutex_destroy(m); }
void qv_mutex_lock(qv_mutex *m) { pthread_mutex_lock(m); }
void qv_mutex_unlock(qv_mutex *m) { pthread_mutex_unlock(m); }

int qv_cond_init(qv_cond *c) {
    /* Timed waits use the monotonic clock so wall-clock jumps do not stall them. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}
void qv_cond_destroy(qv_cond *c) { pthread_cond_destroy(c); }
void qv_cond_wait(qv_cond *c, qv_mutex *m) { pthread_cond_wait(c, m); }

int qv_cond_timedwait_ms(qv_cond *c, qv_mutex *m, int64_t ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(c, m, &ts) == 0 ? 0 : ETIMEDOUT;
}
void qv_cond_signal(qv_cond *c) { pthread_cond_signal(c); }
void qv_cond_broadcast(qv_cond *c) { pthread_cond_broadcast(c); }

int qv_thread_create(qv_thread *t, void *(*fn)(void *), void *arg) {
    return pthread_create(t, NULL, fn, arg);
}
void qv_thread_join(qv_thread t) { pthread_join(t, NULL); }

/* Asked once per process: glibc's sysconf opens and parses
 * /sys/devices/system/cpu/online on every call, which every write and scan
 * paid (CPUs brought online later are not seen; the count only sizes
 * default thread pools). A race only asks twice. */
int qv_cpu_count(void) {
    static _Atomic int cached;
    int n = atomic_load_explicit(&cached, memory_order_relaxed);
    if (n) return n;
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c < 1 ? 1 : (int)c;
    atomic_store_explicit(&cached, n, memory_order_relaxed);
    return n;
}

uint64_t qv_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
