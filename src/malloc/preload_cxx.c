/*
 * src/malloc/preload_cxx.c - libdmm as C++'s global operator new and
 * delete (the Itanium C++ ABI's names for a 64-bit size_t), linked into
 * libdmm.so only (src/malloc/CMakeLists.txt).  Without them a C++
 * program's every new and delete went through libstdc++'s operators, a
 * call and a jump through the PLT more per block (mimalloc-bench's larson:
 * a fifth of the allocator's instructions).
 *
 * The throwing operator new must call the new-handler and throw
 * std::bad_alloc when memory runs out, which C cannot do: when dmm_malloc
 * fails, the request goes to the next definition of the same operator
 * (libstdc++'s, found with dlsym(RTLD_NEXT)), which calls malloc (libdmm
 * again) in its new-handler loop and throws.  The aligned forms are left
 * to libstdc++, which serves them with aligned_alloc and free (libdmm's).
 */
#ifndef _GNU_SOURCE /* (the build may define it) */
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#include "dmm/malloc.h"
#include "guard.h"

#define EXPORT __attribute__((visibility("default")))

typedef void *(*new_fn)(size_t);
typedef void *(*new_nothrow_fn)(size_t, const void *);

/* The next definition of operator new `name` (libstdc++'s): it runs the
 * new-handler loop and throws.  abort() if there is none (a throwing new
 * must not return NULL). */
static void *next_new(const char *name, size_t n)
{
    new_fn f;
    void *sym = dlsym(RTLD_NEXT, name);
    if (!sym)
        abort();
    *(void **)&f = sym;
    return f(n);
}

static void *next_new_nothrow(const char *name, size_t n, const void *tag)
{
    new_nothrow_fn f;
    void *sym = dlsym(RTLD_NEXT, name);
    if (!sym)
        return NULL;
    *(void **)&f = sym;
    return f(n, tag);
}

/* operator new(size_t), new[](size_t) */
EXPORT void *_Znwm(size_t n);
EXPORT void *_Znam(size_t n);
/* operator new(size_t, const std::nothrow_t &), new[] */
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag);
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *tag);
/* operator delete(void *), delete[], the sized and the nothrow forms */
EXPORT void _ZdlPv(void *p);
EXPORT void _ZdaPv(void *p);
EXPORT void _ZdlPvm(void *p, size_t n);
EXPORT void _ZdaPvm(void *p, size_t n);
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *tag);
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *tag);

static void *next_new_single(size_t n) { return next_new("_Znwm", n); }
static void *next_new_array(size_t n) { return next_new("_Znam", n); }

void *_Znwm(size_t n) { return dmm__malloc_or(n, next_new_single); }
void *_Znam(size_t n) { return dmm__malloc_or(n, next_new_array); }

void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag)
{
    void *p = dmm_malloc(n);
    return p ? p : next_new_nothrow("_ZnwmRKSt9nothrow_t", n, tag);
}

void *_ZnamRKSt9nothrow_t(size_t n, const void *tag)
{
    void *p = dmm_malloc(n);
    return p ? p : next_new_nothrow("_ZnamRKSt9nothrow_t", n, tag);
}

void _ZdlPv(void *p) { dmm_free(p); }
void _ZdaPv(void *p) { dmm_free(p); }
/* Every block knows its size; secure mode checks that the size given is one
 * libdmm would have served with this block (guard.h), which catches a
 * delete through a pointer of another type and a delete of a new[] block
 * (or the reverse) whose sizes differ. */
void _ZdlPvm(void *p, size_t n)
{
    if (__builtin_expect(dmm_malloc_guard_on > 0, 0))
        dmm_malloc_guard_sized(p, n);
    dmm_free(p);
}
void _ZdaPvm(void *p, size_t n)
{
    if (__builtin_expect(dmm_malloc_guard_on > 0, 0))
        dmm_malloc_guard_sized(p, n);
    dmm_free(p);
}
void _ZdlPvRKSt9nothrow_t(void *p, const void *tag)
{
    (void)tag;
    dmm_free(p);
}
void _ZdaPvRKSt9nothrow_t(void *p, const void *tag)
{
    (void)tag;
    dmm_free(p);
}
