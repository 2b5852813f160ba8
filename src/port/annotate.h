/*
 * src/port/annotate.h - tells AddressSanitizer and Valgrind which bytes of a
 * dmm heap the program may touch, so that a user's use-after-free or
 * overflow inside a dmm heap is still reported by their usual tools.
 *
 * Enabled by DMM_ANNOTATE=1.  The heap itself is then compiled without ASan
 * instrumentation (it must read headers and links in poisoned memory); the
 * ASan entry points are weak, so an un-sanitized program links and runs.
 * Valgrind: blocks are announced as malloc-like/free-like, and error
 * reporting is suspended while the heap's own code runs.
 * Without DMM_ANNOTATE every hook compiles to nothing.
 */
#ifndef DMM_PORT_ANNOTATE_H
#define DMM_PORT_ANNOTATE_H

#include <stddef.h>

#if defined(DMM_ANNOTATE) && DMM_ANNOTATE

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define DMM_HAVE_VALGRIND 1
#endif
#endif

void __asan_poison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));

static inline void dmm_ann_poison(const void *p, size_t n)
{
    if (__asan_poison_memory_region && n)
        __asan_poison_memory_region(p, n);
}

static inline void dmm_ann_unpoison(const void *p, size_t n)
{
    if (__asan_unpoison_memory_region && n)
        __asan_unpoison_memory_region(p, n);
}

#ifdef DMM_HAVE_VALGRIND
#define DMM_ANN_ENTER() VALGRIND_DISABLE_ERROR_REPORTING
#define DMM_ANN_LEAVE() VALGRIND_ENABLE_ERROR_REPORTING
#define DMM_ANN_VG_ALLOC(p, n) VALGRIND_MALLOCLIKE_BLOCK((p), (n), 0, 0)
#define DMM_ANN_VG_FREE(p) VALGRIND_FREELIKE_BLOCK((p), 0)
#define DMM_ANN_VG_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#define DMM_ANN_VG_NOACCESS(p, n) VALGRIND_MAKE_MEM_NOACCESS((p), (n))
#else
#define DMM_ANN_ENTER() ((void)0)
#define DMM_ANN_LEAVE() ((void)0)
#define DMM_ANN_VG_ALLOC(p, n) ((void)0)
#define DMM_ANN_VG_FREE(p) ((void)0)
#define DMM_ANN_VG_DEFINED(p, n) ((void)0)
#define DMM_ANN_VG_NOACCESS(p, n) ((void)0)
#endif

/* A new region: nothing in it belongs to the program yet. */
static inline void dmm_ann_region(const void *p, size_t n)
{
    dmm_ann_poison(p, n);
    DMM_ANN_VG_NOACCESS(p, n);
}

/* Payload p of block [.., end) handed to the program with n bytes requested. */
static inline void dmm_ann_alloc(void *p, size_t n, const void *end)
{
    dmm_ann_poison(p, (size_t)((const char *)end - (const char *)p));
    dmm_ann_unpoison(p, n);
    DMM_ANN_VG_ALLOC(p, n);
}

/* Payload p of block [.., end) given back by the program. */
static inline void dmm_ann_free(void *p, const void *end)
{
    dmm_ann_poison(p, (size_t)((const char *)end - (const char *)p));
    DMM_ANN_VG_FREE(p);
}

/* In-place resize: keep the first `kept` bytes' contents defined. */
static inline void dmm_ann_resize(void *p, size_t n, size_t kept, const void *end)
{
    dmm_ann_free(p, end);
    dmm_ann_alloc(p, n, end);
    DMM_ANN_VG_DEFINED(p, kept < n ? kept : n);
}

#else /* !DMM_ANNOTATE */

#define DMM_ANN_ENTER() ((void)0)
#define DMM_ANN_LEAVE() ((void)0)
static inline void dmm_ann_poison(const void *p, size_t n) { (void)p; (void)n; }
static inline void dmm_ann_unpoison(const void *p, size_t n) { (void)p; (void)n; }
static inline void dmm_ann_region(const void *p, size_t n) { (void)p; (void)n; }
static inline void dmm_ann_alloc(void *p, size_t n, const void *end) { (void)p; (void)n; (void)end; }
static inline void dmm_ann_free(void *p, const void *end) { (void)p; (void)end; }
static inline void dmm_ann_resize(void *p, size_t n, size_t kept, const void *end)
{
    (void)p; (void)n; (void)kept; (void)end;
}

#endif
#endif
