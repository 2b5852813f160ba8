/*
 * src/port/posix.c - the hosted port: mmap'd pages, pthread mutexes, libc
 * memcpy/memset, CLOCK_MONOTONIC, sched_yield.  In DMM_ANNOTATE builds the bulk-memory helpers are plain
 * volatile loops, because libc's versions are intercepted by AddressSanitizer
 * and would report the heap's own (legitimate) touches of poisoned memory.
 */
#define _DEFAULT_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include "port.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

_Static_assert(sizeof(pthread_mutex_t) <= DMM_PORT_MUTEX_BYTES, "DMM_PORT_MUTEX_BYTES too small for pthread_mutex_t");

size_t dmm_port_page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

void *dmm_port_pages_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void dmm_port_pages_unmap(void *p, size_t bytes) { munmap(p, bytes); }

bool dmm_port_has_mutex(void) { return true; }

bool dmm_port_mutex_init(dmm_port_mutex *m)
{
    return pthread_mutex_init((pthread_mutex_t *)(void *)m->u.bytes, NULL) == 0;
}

void dmm_port_mutex_lock(dmm_port_mutex *m) { pthread_mutex_lock((pthread_mutex_t *)(void *)m->u.bytes); }
void dmm_port_mutex_unlock(dmm_port_mutex *m) { pthread_mutex_unlock((pthread_mutex_t *)(void *)m->u.bytes); }
void dmm_port_mutex_destroy(dmm_port_mutex *m) { pthread_mutex_destroy((pthread_mutex_t *)(void *)m->u.bytes); }

typedef struct posix_event {
    pthread_mutex_t m;
    pthread_cond_t c;
    int set;
} posix_event;
_Static_assert(sizeof(posix_event) <= DMM_PORT_EVENT_BYTES, "DMM_PORT_EVENT_BYTES too small");

bool dmm_port_has_wait(void) { return true; }

bool dmm_port_event_init(dmm_port_event *e)
{
    posix_event *p = (posix_event *)(void *)e->u.bytes;
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return false;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    bool ok = pthread_mutex_init(&p->m, NULL) == 0;
    if (ok && pthread_cond_init(&p->c, &a) != 0) {
        pthread_mutex_destroy(&p->m);
        ok = false;
    }
    pthread_condattr_destroy(&a);
    p->set = 0;
    return ok;
}

bool dmm_port_event_wait(dmm_port_event *e, int64_t timeout_ns)
{
    posix_event *p = (posix_event *)(void *)e->u.bytes;
    struct timespec until;
    if (timeout_ns >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = (int64_t)until.tv_nsec + timeout_ns % 1000000000;
        until.tv_sec += (time_t)(timeout_ns / 1000000000 + ns / 1000000000);
        until.tv_nsec = (long)(ns % 1000000000);
    }
    pthread_mutex_lock(&p->m);
    while (!p->set) {
        int rc = timeout_ns < 0 ? pthread_cond_wait(&p->c, &p->m) : pthread_cond_timedwait(&p->c, &p->m, &until);
        if (rc != 0 && rc != EINTR)
            break; /* ETIMEDOUT */
    }
    bool set = p->set != 0;
    pthread_mutex_unlock(&p->m);
    return set;
}

void dmm_port_event_signal(dmm_port_event *e)
{
    posix_event *p = (posix_event *)(void *)e->u.bytes;
    pthread_mutex_lock(&p->m);
    p->set = 1;
    pthread_cond_signal(&p->c);
    pthread_mutex_unlock(&p->m);
}

void dmm_port_event_destroy(dmm_port_event *e)
{
    posix_event *p = (posix_event *)(void *)e->u.bytes;
    pthread_cond_destroy(&p->c);
    pthread_mutex_destroy(&p->m);
}

_Static_assert(sizeof(pthread_cond_t) <= DMM_PORT_COND_BYTES, "DMM_PORT_COND_BYTES too small");
_Static_assert(sizeof(pthread_t) <= DMM_PORT_THREAD_BYTES, "DMM_PORT_THREAD_BYTES too small");

bool dmm_port_cond_init(dmm_port_cond *c)
{
    return pthread_cond_init((pthread_cond_t *)(void *)c->u.bytes, NULL) == 0;
}

void dmm_port_cond_wait(dmm_port_cond *c, dmm_port_mutex *m)
{
    pthread_cond_wait((pthread_cond_t *)(void *)c->u.bytes, (pthread_mutex_t *)(void *)m->u.bytes);
}

void dmm_port_cond_broadcast(dmm_port_cond *c) { pthread_cond_broadcast((pthread_cond_t *)(void *)c->u.bytes); }
void dmm_port_cond_destroy(dmm_port_cond *c) { pthread_cond_destroy((pthread_cond_t *)(void *)c->u.bytes); }

bool dmm_port_has_threads(void) { return true; }

static void *posix_thread_main(void *p)
{
    dmm_port_thread *t = p;
    t->fn(t->arg);
    return NULL;
}

bool dmm_port_thread_start(dmm_port_thread *t, void (*fn)(void *arg), void *arg)
{
    t->fn = fn;
    t->arg = arg;
    return pthread_create((pthread_t *)(void *)t->u.bytes, NULL, posix_thread_main, t) == 0;
}

void dmm_port_thread_join(dmm_port_thread *t) { pthread_join(*(pthread_t *)(void *)t->u.bytes, NULL); }

_Noreturn void dmm_port_abort(void) { abort(); }

_Noreturn void dmm_port_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "dmmkit: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

#if defined(DMM_ANNOTATE) && DMM_ANNOTATE
void dmm_port_memcpy(void *dst, const void *src, size_t n)
{
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    while (n--)
        *d++ = *s++;
}

void dmm_port_memset(void *dst, int c, size_t n)
{
    volatile unsigned char *d = dst;
    while (n--)
        *d++ = (unsigned char)c;
}
#else
void dmm_port_memcpy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void dmm_port_memset(void *dst, int c, size_t n) { memset(dst, c, n); }
#endif

void dmm_port_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void dmm_port_yield(void) { sched_yield(); }

_Thread_local uint16_t dmm_port_token_object; /* its address is the token; 2-aligned, so even */

uintptr_t(dmm_port_thread_token)(void) { return (uintptr_t)&dmm_port_token_object; }

/* 0: not asked yet, 1: registered, -1: the OS cannot */
static atomic_int remote_fence_state;

bool dmm_port_has_remote_fence(void)
{
    int st = atomic_load_explicit(&remote_fence_state, memory_order_acquire);
    if (st == 0) {
#if defined(__linux__) && defined(SYS_membarrier)
        long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        st = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                     syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0
                 ? 1
                 : -1;
#else
        st = -1;
#endif
        atomic_store_explicit(&remote_fence_state, st, memory_order_release);
    }
    return st > 0;
}

void dmm_port_remote_fence(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
#endif
    dmm_port_abort(); /* has_remote_fence() said yes: the OS went back on it */
}

uint64_t dmm_port_clock_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool dmm_port_random(void *buf, size_t n)
{
#if defined(__linux__) && defined(SYS_getrandom)
    /* the caller's errno is kept: malloc's first call runs this, and a
     * kernel or filter without getrandom (ENOSYS, EPERM) must not leave a
     * successful malloc with errno changed */
    int saved = errno;
    unsigned char *b = buf;
    bool ok = true;
    while (n > 0) {
        long r = syscall(SYS_getrandom, b, n, 1 /* GRND_NONBLOCK */);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            ok = false;
            break;
        }
        b += r;
        n -= (size_t)r;
    }
    errno = saved;
    return ok;
#else
    (void)buf;
    (void)n;
    return false;
#endif
}

/* ---- for the malloc ------------------------------------------------------------ */

void *dmm_port_pages_map_aligned(size_t bytes, size_t align)
{
    size_t over = bytes + align;
    unsigned char *p, *a;
    if (over < bytes)
        return NULL;
    p = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    a = (unsigned char *)(((uintptr_t)p + align - 1u) & ~(uintptr_t)(align - 1u));
    if (a > p)
        munmap(p, (size_t)(a - p));
    if (a + bytes < p + over)
        munmap(a + bytes, (size_t)(p + over - (a + bytes)));
    return a;
}

void dmm_port_pages_discard(void *p, size_t bytes) { (void)madvise(p, bytes, MADV_DONTNEED); }

bool dmm_port_pages_guard(void *p, size_t bytes) { return mprotect(p, bytes, PROT_NONE) == 0; }

bool dmm_port_pages_unguard(void *p, size_t bytes) { return mprotect(p, bytes, PROT_READ | PROT_WRITE) == 0; }

bool dmm_port_pages_move_out(void *from, size_t bytes, void *to)
{
#if defined(__linux__) && defined(MREMAP_FIXED) && defined(MREMAP_DONTUNMAP)
    /* Linux 5.13 and later for any private anonymous mapping (EINVAL before) */
    return mremap(from, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to) != MAP_FAILED;
#else
    (void)from;
    (void)bytes;
    (void)to;
    return false;
#endif
}

bool dmm_port_pages_move(void *from, size_t from_bytes, void *to, size_t to_bytes)
{
#if defined(__linux__) && defined(MREMAP_FIXED)
    /* the page tables move; the old range is unmapped by the call */
    return mremap(from, from_bytes, to_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to) != MAP_FAILED;
#else
    (void)from;
    (void)from_bytes;
    (void)to;
    (void)to_bytes;
    return false;
#endif
}

_Static_assert(sizeof(pthread_key_t) <= sizeof(unsigned), "pthread_key_t does not fit dmm_port_tkey");

bool dmm_port_tkey_create(dmm_port_tkey *k, void (*destructor)(void *))
{
    pthread_key_t key;
    if (pthread_key_create(&key, destructor) != 0)
        return false;
    k->v = (unsigned)key;
    return true;
}

void dmm_port_tkey_set(dmm_port_tkey k, void *value) { (void)pthread_setspecific((pthread_key_t)k.v, value); }

#if defined(__GLIBC__)
/* glibc's pthread_atfork is a wrapper in libc_nonshared.a, which the
 * linker appends after every object of the library that calls it: in
 * libdmm.so, at the very end of a 1.4 MiB text whose hot code is at its
 * start, so its one call at load faulted in 64 KiB more of the library in
 * every process.  It passes the caller's __dso_handle to __register_atfork
 * (exported by libc.so.6 since glibc 2.3.2), which is called here directly:
 * the same registration, handlers dropped when the object is unloaded. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);
extern void *__dso_handle;
#endif

bool dmm_port_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
#if defined(__GLIBC__)
    return __register_atfork(prepare, parent, child, &__dso_handle) == 0;
#else
    return pthread_atfork(prepare, parent, child) == 0;
#endif
}

const char *dmm_port_getenv(const char *name) { return getenv(name); }

/* write(2) is a cancellation point, and this runs inside free and realloc
 * (misuse reports) and malloc_stats, which must not be cancellation
 * points: cancellation is disabled around it (pthread_setcancelstate
 * neither allocates nor blocks). */
void dmm_port_write_err(const char *s, size_t n)
{
    int old = 0;
    (void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    while (n) {
        ssize_t w = write(2, s, n);
        if (w <= 0)
            break;
        s += w;
        n -= (size_t)w;
    }
    (void)pthread_setcancelstate(old, NULL);
}
