/*
 * src/port/freestanding.c - the port for bare-metal targets: no OS pages
 * (growth is refused), no mutex (DMM_LOCK_MUTEX is refused; spin and user
 * locks work), no clock (always 0), no scheduler to yield to, a trap for
 * abort, word-wise copy loops.
 */
#include "port.h"

size_t dmm_port_page_size(void) { return 0; }

void *dmm_port_pages_map(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void dmm_port_pages_unmap(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
}

bool dmm_port_has_mutex(void) { return false; }
bool dmm_port_mutex_init(dmm_port_mutex *m)
{
    (void)m;
    return false;
}
void dmm_port_mutex_lock(dmm_port_mutex *m) { (void)m; }
void dmm_port_mutex_unlock(dmm_port_mutex *m) { (void)m; }
void dmm_port_mutex_destroy(dmm_port_mutex *m) { (void)m; }

bool dmm_port_has_wait(void) { return false; }
bool dmm_port_event_init(dmm_port_event *e)
{
    (void)e;
    return false;
}
bool dmm_port_event_wait(dmm_port_event *e, int64_t timeout_ns)
{
    (void)e;
    (void)timeout_ns;
    return false;
}
void dmm_port_event_signal(dmm_port_event *e) { (void)e; }
void dmm_port_event_destroy(dmm_port_event *e) { (void)e; }

bool dmm_port_cond_init(dmm_port_cond *c)
{
    (void)c;
    return false;
}
void dmm_port_cond_wait(dmm_port_cond *c, dmm_port_mutex *m)
{
    (void)c;
    (void)m;
}
void dmm_port_cond_broadcast(dmm_port_cond *c) { (void)c; }
void dmm_port_cond_destroy(dmm_port_cond *c) { (void)c; }

/* No scheduler: the scratchpad heap's manager thread is refused. */
bool dmm_port_has_threads(void) { return false; }
bool dmm_port_thread_start(dmm_port_thread *t, void (*fn)(void *arg), void *arg)
{
    (void)t;
    (void)fn;
    (void)arg;
    return false;
}
void dmm_port_thread_join(dmm_port_thread *t) { (void)t; }

/* No console: the expression, file and line are visible to a debugger in
 * this frame's arguments before the trap. */
_Noreturn void dmm_port_assert_fail(const char *expr, const char *file, int line)
{
    (void)expr;
    (void)file;
    (void)line;
    dmm_port_abort();
}

_Noreturn void dmm_port_abort(void)
{
    for (;;)
        __builtin_trap();
}

/* volatile keeps the compiler from turning these loops back into calls to
 * memcpy/memset, which a freestanding image may not have. */
void dmm_port_memcpy(void *dst, const void *src, size_t n)
{
    volatile unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--)
        *d++ = *s++;
}

void dmm_port_memset(void *dst, int c, size_t n)
{
    volatile unsigned char *d = dst;
    while (n--)
        *d++ = (unsigned char)c;
}

void dmm_port_cpu_relax(void) {}

void dmm_port_yield(void) {}

/* one thread: one token, and no other thread to fence */
uintptr_t dmm_port_thread_token(void) { return 2u; }
bool dmm_port_has_remote_fence(void) { return true; }
void dmm_port_remote_fence(void) {}

uint64_t dmm_port_clock_ns(void) { return 0; }

bool dmm_port_random(void *buf, size_t n)
{
    (void)buf;
    (void)n;
    return false;
}

/* ---- for the malloc: nothing here ------------------------------------------------ */

void *dmm_port_pages_map_aligned(size_t bytes, size_t align)
{
    (void)bytes;
    (void)align;
    return NULL;
}

void dmm_port_pages_discard(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
}

bool dmm_port_pages_guard(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    return false;
}

bool dmm_port_pages_unguard(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    return false;
}

bool dmm_port_pages_move_out(void *from, size_t bytes, void *to)
{
    (void)from;
    (void)bytes;
    (void)to;
    return false;
}

bool dmm_port_pages_move(void *from, size_t from_bytes, void *to, size_t to_bytes)
{
    (void)from;
    (void)from_bytes;
    (void)to;
    (void)to_bytes;
    return false;
}

bool dmm_port_tkey_create(dmm_port_tkey *k, void (*destructor)(void *))
{
    (void)k;
    (void)destructor;
    return false;
}

void dmm_port_tkey_set(dmm_port_tkey k, void *value)
{
    (void)k;
    (void)value;
}

bool dmm_port_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    (void)prepare;
    (void)parent;
    (void)child;
    return false;
}

const char *dmm_port_getenv(const char *name)
{
    (void)name;
    return NULL;
}

void dmm_port_write_err(const char *s, size_t n)
{
    (void)s;
    (void)n;
}
