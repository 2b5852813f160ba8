/*
 * bench/malloc/glibc_support/support/xthread.h - dmmkit's stand-in for
 * glibc's support/xthread.h: pthread calls that end the test (status 1)
 * with a message when they fail.  Not glibc code; implemented in
 * ../support.c.
 */
#ifndef DMM_GLIBC_SUPPORT_XTHREAD_H
#define DMM_GLIBC_SUPPORT_XTHREAD_H

#include <pthread.h>
#include <signal.h>

pthread_t xpthread_create(pthread_attr_t *attr, void *(*fn)(void *), void *arg);
void *xpthread_join(pthread_t thr);
void xpthread_detach(pthread_t thr);
void xpthread_cancel(pthread_t thr);
void xpthread_kill(pthread_t thr, int sig);
void xpthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr);
void xpthread_mutex_destroy(pthread_mutex_t *m);
void xpthread_mutex_lock(pthread_mutex_t *m);
void xpthread_mutex_unlock(pthread_mutex_t *m);
void xpthread_barrier_init(pthread_barrier_t *b, pthread_barrierattr_t *attr, unsigned int count);
void xpthread_barrier_destroy(pthread_barrier_t *b);
/* Returns pthread_barrier_wait's result: 0 or PTHREAD_BARRIER_SERIAL_THREAD. */
int xpthread_barrier_wait(pthread_barrier_t *b);
void xpthread_barrierattr_init(pthread_barrierattr_t *a);
void xpthread_barrierattr_destroy(pthread_barrierattr_t *a);
void xpthread_barrierattr_setpshared(pthread_barrierattr_t *a, int pshared);
void xpthread_attr_init(pthread_attr_t *a);
void xpthread_attr_destroy(pthread_attr_t *a);
void xpthread_attr_setstacksize(pthread_attr_t *a, size_t size);
void xpthread_attr_setdetachstate(pthread_attr_t *a, int state);
void xpthread_sigmask(int how, const sigset_t *set, sigset_t *old);

#endif
