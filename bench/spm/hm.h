/*
 * bench/spm/hm.h - the heap-access backend of the managed programs.
 *
 * The seven programs of bench/spm/ are written once against this header and
 * built three times, one backend each (-DHM_BACKEND_RAW / _SPM / _SWC):
 *
 *   raw  an hm_ref is a host pointer; accesses are plain loads and stores;
 *        allocation is the C library's, or (--local-heap B) a dmm heap on a
 *        local buffer of B bytes: the unmanaged program on a core with B
 *        bytes of local memory (seed 000, Fig. 8).
 *   spm  an hm_ref is a global address (dmm_gaddr); every heap access is
 *        written by hand as p2s of the address just before the access and
 *        s2p of the local address right after it: one translation per
 *        scalar access, finer than the seed's compiler pass (section 6.2)
 *        and tools/spmcc, which translate once per pointer per access
 *        region.  The local address is never kept.
 *   swc  the software-cache baseline (include/dmm/swcache.h).
 *
 * Rules the programs follow (they are what makes one source serve all three):
 *   - Heap objects hold hm_ref values (uint64_t fields), never local
 *     pointers.  A program variable that "points" to a heap object is an
 *     hm_ref.
 *   - Scalar reads and writes go through HM_GET / HM_SET (struct fields) and
 *     HM_AGET / HM_ASET (array elements).  They are function calls, so their
 *     arguments (which may themselves access the heap) are evaluated before
 *     the p2s inside: no local address ever outlives the access it was made
 *     for, whatever order the compiler picks.
 *   - HM_W / HM_R give a local pointer for a bulk access; it is valid only
 *     until the next hm_* call (the local-address rule of dmm/spm.h).
 *     HM_PIN / HM_UNPIN keep one object resident when two are needed at
 *     once; hm_copy / hm_read / hm_write move bytes between objects and the
 *     caller's stack.
 *
 * The per-thread state (which core, which heap) lives in hm_self, set up by
 * the harness (harness.c) on each core thread before the program body runs.
 */
#ifndef HM_H
#define HM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(HM_BACKEND_SPM)
#include "dmm/spm.h"
#elif defined(HM_BACKEND_SWC)
#include "dmm/swcache.h"
#elif defined(HM_BACKEND_RAW)
#include "dmm/heap.h"
#else
#error "define one of HM_BACKEND_RAW, HM_BACKEND_SPM, HM_BACKEND_SWC"
#endif

typedef uint64_t hm_ref;
#define HM_NULL ((hm_ref)0)

/* One execution core's state (a thread of the harness). */
typedef struct hm_core {
    unsigned id;
    uint64_t checksum;       /* what the program reported */
    int have_checksum;
    char info[512];          /* the program's result line */
#if defined(HM_BACKEND_SPM)
    dmm_spm *spm;
#elif defined(HM_BACKEND_SWC)
    dmm_swc *swc;
#else
    dmm_heap *local_heap;    /* --local-heap: NULL = the C library */
    size_t local_heap_bytes;
#endif
    uint64_t objects;        /* successful allocations (for messages) */
    uint64_t accesses;       /* heap accesses through the accessors */
} hm_core;

extern _Thread_local hm_core *hm_self;

/* Ends the program with exit status 1 and a message naming the failing
 * operation (implemented in harness.c). */
_Noreturn void hm_fail(const char *what, hm_ref r, size_t n);

/* ---- the backend primitives --------------------------------------------- */

#if defined(HM_BACKEND_RAW)
#define HM_BACKEND_NAME "raw"
static void *(*volatile hm_libc_malloc)(size_t) = malloc;
static void *(*volatile hm_libc_calloc)(size_t, size_t) = calloc;
static void *(*volatile hm_libc_realloc)(void *, size_t) = realloc;
static inline hm_ref hm_malloc(size_t n)
{
    void *p = hm_self->local_heap ? dmm_heap_malloc(hm_self->local_heap, n) : hm_libc_malloc(n);
    return (hm_ref)(uintptr_t)p;
}
static inline hm_ref hm_calloc(size_t n, size_t sz)
{
    void *p = hm_self->local_heap ? dmm_heap_calloc(hm_self->local_heap, n, sz) : hm_libc_calloc(n, sz);
    return (hm_ref)(uintptr_t)p;
}
static inline hm_ref hm_realloc(hm_ref r, size_t n)
{
    void *q = (void *)(uintptr_t)r;
    void *p = hm_self->local_heap ? dmm_heap_realloc(hm_self->local_heap, q, n) : hm_libc_realloc(q, n);
    return (hm_ref)(uintptr_t)p;
}
static inline void hm_free(hm_ref r)
{
    if (hm_self->local_heap)
        dmm_heap_free(hm_self->local_heap, (void *)(uintptr_t)r);
    else
        free((void *)(uintptr_t)r);
}
static inline void *hm_w(hm_ref r) { return (void *)(uintptr_t)r; }
static inline const void *hm_r(hm_ref r) { return (const void *)(uintptr_t)r; }
static inline hm_ref hm_s2p(const void *p) { return (hm_ref)(uintptr_t)p; }
static inline void *hm_pin(hm_ref r) { return (void *)(uintptr_t)r; }
static inline void hm_unpin(hm_ref r) { (void)r; }
static inline void *hm_wn(hm_ref r, size_t n) { (void)n; return hm_w(r); }
static inline const void *hm_rn(hm_ref r, size_t n) { (void)n; return hm_r(r); }

#elif defined(HM_BACKEND_SPM)
#define HM_BACKEND_NAME "spm"
static inline hm_ref hm_malloc(size_t n) { return dmm_spm_malloc(hm_self->spm, n); }
static inline hm_ref hm_calloc(size_t n, size_t sz) { return dmm_spm_calloc(hm_self->spm, n, sz); }
static inline hm_ref hm_realloc(hm_ref r, size_t n) { return dmm_spm_realloc(hm_self->spm, r, n); }
static inline void hm_free(hm_ref r) { dmm_spm_free(hm_self->spm, r); }
static inline void *hm_w(hm_ref r)
{
    void *p = dmm_spm_p2s(hm_self->spm, r);
    if (!p)
        hm_fail("p2s", r, 0);
    return p;
}
static inline const void *hm_r(hm_ref r)
{
    const void *p = dmm_spm_p2s_ro(hm_self->spm, r);
    if (!p)
        hm_fail("p2s_ro", r, 0);
    return p;
}
static inline hm_ref hm_s2p(const void *p) { return dmm_spm_s2p(hm_self->spm, p); }
static inline void *hm_pin(hm_ref r)
{
    void *p = dmm_spm_pin(hm_self->spm, r);
    if (!p)
        hm_fail("pin", r, 0);
    return p;
}
static inline void hm_unpin(hm_ref r) { dmm_spm_unpin(hm_self->spm, r); }
static inline void *hm_wn(hm_ref r, size_t n) { (void)n; return hm_w(r); }
static inline const void *hm_rn(hm_ref r, size_t n) { (void)n; return hm_r(r); }

#elif defined(HM_BACKEND_SWC)
#define HM_BACKEND_NAME "swc"
#include "hm_swc.h" /* the software-cache mapping, next to this header */
#endif

/* ---- checked allocation ---------------------------------------------------- */

static inline hm_ref hm_xmalloc(size_t n)
{
    hm_ref r = hm_malloc(n ? n : 1);
    if (!r)
        hm_fail("malloc", 0, n);
    hm_self->objects++;
    return r;
}
static inline hm_ref hm_xcalloc(size_t n, size_t sz)
{
    hm_ref r = hm_calloc(n ? n : 1, sz ? sz : 1);
    if (!r)
        hm_fail("calloc", 0, n * sz);
    hm_self->objects++;
    return r;
}
static inline hm_ref hm_xrealloc(hm_ref q, size_t n)
{
    hm_ref r = hm_realloc(q, n ? n : 1);
    if (!r)
        hm_fail("realloc", q, n);
    return r;
}

/* ---- one access: p2s before, s2p after ---------------------------------- */

/* After the access the local address is mapped back (the seed's s2p); it
 * must give the address we started from, else the library moved data it
 * promised to keep (checked, cheap). */
#if !defined(HM_BACKEND_SWC)
static inline void hm_after(const void *p, hm_ref a)
{
    hm_self->accesses++;
    if (hm_s2p(p) != a)
        hm_fail("s2p (local address does not map back)", a, 0);
}
#endif

#if defined(HM_BACKEND_SWC)
/* The software cache has no local addresses to map back: a scalar access
 * is one read or write call through the cache (the Cell SDK's shape,
 * seed section 5). */
#define HM_DEF_ACCESS(name, T)                                                                                         \
    static inline T hm_get_##name(hm_ref r, size_t off)                                                               \
    {                                                                                                                  \
        T v;                                                                                                           \
        hm_swc_read_bytes(r + off, &v, sizeof v);                                                                      \
        hm_self->accesses++;                                                                                           \
        return v;                                                                                                      \
    }                                                                                                                  \
    static inline void hm_set_##name(hm_ref r, size_t off, T v)                                                       \
    {                                                                                                                  \
        hm_swc_write_bytes(r + off, &v, sizeof v);                                                                     \
        hm_self->accesses++;                                                                                           \
    }
#else
#define HM_DEF_ACCESS(name, T)                                                                                         \
    static inline T hm_get_##name(hm_ref r, size_t off)                                                               \
    {                                                                                                                  \
        const T *p = (const T *)hm_r(r + off);                                                                         \
        T v = *p;                                                                                                      \
        hm_after(p, r + off);                                                                                          \
        return v;                                                                                                      \
    }                                                                                                                  \
    static inline void hm_set_##name(hm_ref r, size_t off, T v)                                                       \
    {                                                                                                                  \
        T *p = (T *)hm_w(r + off);                                                                                     \
        *p = v;                                                                                                        \
        hm_after(p, r + off);                                                                                          \
    }
#endif
HM_DEF_ACCESS(u8, uint8_t)
HM_DEF_ACCESS(i8, char)
HM_DEF_ACCESS(u32, uint32_t)
HM_DEF_ACCESS(i32, int32_t)
HM_DEF_ACCESS(u64, uint64_t)
HM_DEF_ACCESS(i64, int64_t)
HM_DEF_ACCESS(f64, double)
#undef HM_DEF_ACCESS

#define HM_GETFN_(x)                                                                                                  \
    _Generic((x), uint8_t: hm_get_u8, char: hm_get_i8, uint32_t: hm_get_u32, int32_t: hm_get_i32,                   \
             uint64_t: hm_get_u64, int64_t: hm_get_i64, double: hm_get_f64)
#define HM_SETFN_(x)                                                                                                  \
    _Generic((x), uint8_t: hm_set_u8, char: hm_set_i8, uint32_t: hm_set_u32, int32_t: hm_set_i32,                   \
             uint64_t: hm_set_u64, int64_t: hm_set_i64, double: hm_set_f64)

/* Field f of the struct T at r. */
#define HM_GET(T, r, f) HM_GETFN_(((T *)0)->f)((r), offsetof(T, f))
#define HM_SET(T, r, f, v) HM_SETFN_(((T *)0)->f)((r), offsetof(T, f), (v))
/* Element i of an array of scalar T at r; HM_IDX: address of element i. */
#define HM_IDX(T, r, i) ((r) + (hm_ref)(i) * (hm_ref)sizeof(T))
#define HM_AGET(T, r, i) HM_GETFN_((T)0)((r), (size_t)(i) * sizeof(T))
#define HM_ASET(T, r, i, v) HM_SETFN_((T)0)((r), (size_t)(i) * sizeof(T), (v))

/* Bulk local pointers to one T (valid until the next hm_* call).  The
 * size matters to the software cache, which maps exactly those bytes. */
#define HM_W(T, r) ((T *)hm_wn((r), sizeof(T)))
#define HM_R(T, r) ((const T *)hm_rn((r), sizeof(T)))
#define HM_S2P(p) hm_s2p(p)
#define HM_PIN(T, r) ((T *)hm_pin(r))
#define HM_UNPIN(r) hm_unpin(r)
#define HM_MALLOC(n) hm_xmalloc(n)
#define HM_CALLOC(n, s) hm_xcalloc((n), (s))
#define HM_REALLOC(r, n) hm_xrealloc((r), (n))
#define HM_FREE(r) hm_free(r)

/* Bytes between heap objects and the caller's memory, through a small
 * bounce buffer (never two local addresses at once). */
static inline void hm_read(void *dst, hm_ref src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)dst)[i] = hm_get_u8(src, i);
}
static inline void hm_write(hm_ref dst, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hm_set_u8(dst, i, ((const unsigned char *)src)[i]);
}
static inline void hm_copy(hm_ref dst, hm_ref src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t b = hm_get_u8(src, i);
        hm_set_u8(dst, i, b);
    }
}
static inline size_t hm_strlen(hm_ref s)
{
    size_t n = 0;
    while (hm_get_u8(s, n))
        n++;
    return n;
}

/* ---- what the program reports (harness.c) ----------------------------------- */

/* The result line (printed once, by core 0) and the checksum (the harness
 * prints "checksum=" after checking every core got the same). */
void hm_info(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void hm_checksum(uint64_t h);

/* The harness's entry point: strips the harness options, sets the backend
 * up, runs prog_main on --cores core threads, prints the result, writes
 * --json.  Returns the exit status. */
int hm_run(int argc, char **argv, const char *name, int (*prog_main)(int argc, char **argv));

#endif
