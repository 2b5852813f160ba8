/*
 * dmm_malloc_shim.c - the malloc family over one global dmm heap, for
 * LD_PRELOAD or linking (written by `dmmkit generate`; see README.md).
 *
 * One heap, created on first use on an mmap'd region of DMMGEN_INITIAL_BYTES,
 * growing by whole regions of at least DMMGEN_GROW_BYTES when nothing fits
 * (the heap asks the port layer for pages).  Every call holds one global
 * pthread mutex, so the heap itself runs with lock=none.
 *
 * Correctness notes
 *  - Bootstrap: nothing here allocates.  The mutex is statically
 *    initialised, the first region comes from mmap, and the heap keeps all of
 *    its metadata inside its regions, so the first malloc (even one made by
 *    the dynamic loader or by pthread itself) cannot recurse.
 *  - fork: pthread_atfork handlers (registered from a constructor, outside
 *    the lock, because registering may itself call malloc) take the lock
 *    before fork and release it in both processes.
 *  - errno: ENOMEM on every failed allocation, EINVAL for bad alignments
 *    (aligned_alloc, memalign); posix_memalign returns the code instead and
 *    leaves errno alone; free leaves errno as it found it.
 *  - Pointers the heap did not hand out (memory from before the preload):
 *    with hardening at `checked` or above the heap recognises them as foreign
 *    and ignores them; realloc of such a pointer gives NULL/ENOMEM, and
 *    malloc_usable_size gives 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dmm/heap.h"
#include "dmm_config_malloc.h" /* DMMGEN_MALLOC_CONFIG, DMMGEN_INITIAL_BYTES */

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static dmm_heap *g_heap;
static int g_init_failed;

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

/* Called with g_lock held. */
static dmm_heap *heap_locked(void)
{
    dmm_heap_config cfg;
    const char *why = NULL;
    size_t n;
    void *buf;
    if (g_heap || g_init_failed)
        return g_heap;
    cfg = dmm_heap_default_config();
    if (dmm_heap_config_parse(DMMGEN_MALLOC_CONFIG, &cfg, &why) != DMM_OK) {
        g_init_failed = 1;
        return NULL;
    }
    n = DMMGEN_INITIAL_BYTES;
    n = (n + page_size() - 1u) & ~(page_size() - 1u);
    buf = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        g_init_failed = 1;
        return NULL;
    }
    if (dmm_heap_init(&g_heap, buf, n, &cfg) != DMM_OK) {
        munmap(buf, n);
        g_heap = NULL;
        g_init_failed = 1;
    }
    return g_heap;
}

static void at_prepare(void) { pthread_mutex_lock(&g_lock); }
static void at_parent(void) { pthread_mutex_unlock(&g_lock); }
static void at_child(void) { pthread_mutex_unlock(&g_lock); }

__attribute__((constructor)) static void shim_ctor(void)
{
    /* may call malloc: done outside the lock */
    pthread_atfork(at_prepare, at_parent, at_child);
}

static int is_pow2(size_t x) { return x && !(x & (x - 1u)); }

static void *alloc_aligned(size_t align, size_t size)
{
    dmm_heap *h;
    void *p;
    pthread_mutex_lock(&g_lock);
    h = heap_locked();
    if (!h)
        p = NULL;
    else if (align <= DMM_HEAP_ALIGN)
        p = dmm_heap_malloc(h, size);
    else
        p = dmm_heap_aligned_alloc(h, align, size);
    pthread_mutex_unlock(&g_lock);
    if (!p)
        errno = ENOMEM;
    return p;
}

EXPORT void *malloc(size_t size) { return alloc_aligned(0, size); }

EXPORT void free(void *p)
{
    int saved;
    if (!p)
        return;
    saved = errno;
    pthread_mutex_lock(&g_lock);
    if (g_heap)
        dmm_heap_free(g_heap, p);
    pthread_mutex_unlock(&g_lock);
    errno = saved;
}

EXPORT void cfree(void *p) { free(p); }

EXPORT void *calloc(size_t n, size_t size)
{
    dmm_heap *h;
    void *p;
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&g_lock);
    h = heap_locked();
    p = h ? dmm_heap_calloc(h, n, size) : NULL;
    pthread_mutex_unlock(&g_lock);
    if (!p)
        errno = ENOMEM;
    return p;
}

EXPORT void *realloc(void *old, size_t size)
{
    dmm_heap *h;
    void *p;
    if (!old)
        return malloc(size);
    if (size == 0) { /* glibc: frees and returns NULL */
        free(old);
        return NULL;
    }
    pthread_mutex_lock(&g_lock);
    h = heap_locked();
    p = h ? dmm_heap_realloc(h, old, size) : NULL;
    pthread_mutex_unlock(&g_lock);
    if (!p)
        errno = ENOMEM;
    return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, n * size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    void *p;
    int saved = errno;
    if (!is_pow2(align) || align % sizeof(void *) != 0)
        return EINVAL;
    p = alloc_aligned(align, size);
    errno = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (!is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_aligned(align, size);
}

EXPORT void *memalign(size_t align, size_t size)
{
    size_t a = 1;
    if (align > SIZE_MAX / 4) {
        errno = EINVAL;
        return NULL;
    }
    while (a < align) /* glibc rounds a non-power-of-two up */
        a <<= 1;
    return alloc_aligned(a, size);
}

EXPORT void *valloc(size_t size) { return alloc_aligned(page_size(), size); }

EXPORT void *pvalloc(size_t size)
{
    size_t ps = page_size();
    if (size > SIZE_MAX - ps) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_aligned(ps, size ? (size + ps - 1u) & ~(ps - 1u) : ps);
}

EXPORT size_t malloc_usable_size(void *p)
{
    size_t n = 0;
    if (!p)
        return 0;
    pthread_mutex_lock(&g_lock);
    if (g_heap)
        n = dmm_heap_usable_size(g_heap, p);
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* glibc's statistics call, answered from the heap: arena = the heap's
 * extent (what it has carved from its regions, control block included),
 * uordblks = bytes of used blocks, fordblks = the rest of the extent. */
EXPORT struct mallinfo2 mallinfo2(void)
{
    struct mallinfo2 mi;
    memset(&mi, 0, sizeof mi);
    pthread_mutex_lock(&g_lock);
    if (g_heap) {
        dmm_heap_stats st = dmm_heap_get_counters(g_heap);
        mi.arena = st.extent;
        mi.uordblks = st.live_block_bytes;
        mi.fordblks = st.extent > st.live_block_bytes ? st.extent - st.live_block_bytes : 0;
        mi.usmblks = st.peak_extent;
        mi.keepcost = st.top_bytes;
    }
    pthread_mutex_unlock(&g_lock);
    return mi;
}

/* Marker: lets tools see which allocator this is (dlsym). */
EXPORT const char *dmmgen_config(void) { return DMMGEN_MALLOC_CONFIG; }
