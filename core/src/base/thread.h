/*
 * Thin wrappers over POSIX threads, so the library names one API for locks,
 * condition variables and threads.
 *
 * Internal: they are no part of the library's public surface (they are not
 * exported from libquiver.so, and no public header mentions pthread), so a
 * front end or an embedding host never depends on how the library locks.
 * The library's own tests and benchmarks include this header through the
 * core/src include directory and resolve the functions from the static
 * library. They keep their qv_ names (not qv__) because their header, not
 * their prefix, marks them internal; see docs/conventions.md.
 */
#ifndef QV_BASE_THREAD_H
#define QV_BASE_THREAD_H

#include <pthread.h>
#include <stdint.h>

#include "quiver/base.h"

typedef pthread_mutex_t qv_mutex;
typedef pthread_cond_t qv_cond;
typedef pthread_t qv_thread;

int qv_mutex_init(qv_mutex *m);
void qv_mutex_destroy(qv_mutex *m);
void qv_mutex_lock(qv_mutex *m);
void qv_mutex_unlock(qv_mutex *m);
/* Condition variables wait on the monotonic clock, so a wall-clock jump
 * neither stalls nor shortens a timed wait. */
int qv_cond_init(qv_cond *c);
void qv_cond_destroy(qv_cond *c);
void qv_cond_wait(qv_cond *c, qv_mutex *m);
/* Waits at most `ms` milliseconds; returns 0 when signalled, ETIMEDOUT otherwise. */
int qv_cond_timedwait_ms(qv_cond *c, qv_mutex *m, int64_t ms);
void qv_cond_signal(qv_cond *c);
void qv_cond_broadcast(qv_cond *c);
int qv_thread_create(qv_thread *t, void *(*fn)(void *), void *arg);
void qv_thread_join(qv_thread t);

#endif /* QV_BASE_THREAD_H */
