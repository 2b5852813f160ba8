/*
 * dmm/malloc.h - libdmm, dmmkit's general-purpose multi-threaded malloc
 * (docs/malloc.md).  Hosted only.
 *
 * Every thread allocates from its own heap: small requests from size-class
 * pages with a thread-local free list and no lock, large ones straight from
 * the OS.  A block freed by another thread goes to its page's atomic
 * remote-free list, which the owner collects; the owner's state is never
 * locked.  When a thread exits its heap is emptied of what it can give back
 * and parked, and the next new thread adopts it.
 *
 * The dmm_* functions below are the library's API; linked as libdmm.so (or
 * preloaded), the same functions also answer the C library's malloc, free,
 * calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc and malloc_usable_size, and so C++ new/delete, and
 * the statistics calls mallinfo, mallinfo2, malloc_stats, malloc_info,
 * malloc_trim and mallopt (docs/malloc.md).
 */
#ifndef DMM_MALLOC_H
#define DMM_MALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every block is aligned to at least this many bytes. */
#define DMM_MALLOC_ALIGN 16u

void *dmm_malloc(size_t size);
void dmm_free(void *p);
void *dmm_calloc(size_t nmemb, size_t size);
void *dmm_realloc(void *p, size_t size);
void *dmm_reallocarray(void *p, size_t nmemb, size_t size);
/* 0, EINVAL (alignment not a power of two multiple of sizeof(void *)) or
 * ENOMEM; *out untouched on failure. */
int dmm_posix_memalign(void **out, size_t alignment, size_t size);
/* NULL with errno EINVAL when alignment is not a power of two. */
void *dmm_aligned_alloc(size_t alignment, size_t size);
void *dmm_memalign(size_t alignment, size_t size);
void *dmm_valloc(size_t size);
void *dmm_pvalloc(size_t size);
size_t dmm_malloc_usable_size(const void *p);

/* What the whole process holds and hands out, from every thread's heap
 * (counters kept with relaxed atomics: exact when no thread allocates). */
typedef struct dmm_malloc_stats {
    uint64_t mapped;      /* bytes of OS memory held (segments and large blocks) */
    uint64_t segments;    /* small-page segments mapped */
    uint64_t large_bytes; /* bytes mapped for large blocks */
    uint64_t large_count;
    uint64_t heaps;       /* thread heaps created */
    uint64_t heaps_adopted;
    uint64_t errors;      /* invalid or double frees reported */
    uint64_t live_bytes;  /* bytes of small and medium blocks handed out and
                             not freed (block sizes with the medium heap's
                             headers, not requests; a remote medium free
                             counts when its owner collects it, at once
                             when its owner has exited) */
    uint64_t large_count_max; /* the most large blocks held at once */
    uint64_t large_bytes_max; /* and the most bytes mapped for them */
} dmm_malloc_stats;

dmm_malloc_stats dmm_malloc_get_stats(void);

/* One line of those figures on stderr (no allocation).  Preloaded or
 * linked as libdmm.so, it runs at exit when DMM_SHOW_STATS=1. */
void dmm_malloc_print_stats(void);

/* malloc_stats's output: glibc's layout (Arena 0 = the segments; Total;
 * max mmap regions and bytes = large blocks), then the line above. */
void dmm_malloc_print_glibc_stats(void);

/* Hardening: 1 (the default, environment DMM_HARDEN=0 turns it off)
 * validates every free in O(1) (inside a dmm segment, on a block boundary,
 * currently allocated); 0 trusts the caller.  Set before the first
 * allocation. */
void dmm_malloc_set_harden(int on);

/* What a detected misuse (a bad or double free, a corrupted medium block)
 * does after its one-line report on stderr: 1 (the default; environment
 * DMM_ABORT_ON_ERROR=0 makes it 0) aborts the process, as glibc and Scudo
 * do; 0 ignores the call and continues, corrupting nothing.  Returns the
 * previous setting; may be called at any time. */
int dmm_malloc_set_abort_on_error(int on);

/* Gives back to the OS what the calling thread's heap and every parked heap
 * (of threads that exited) hold and no longer use: empty pages and
 * segments, empty medium heaps, the pages inside free medium blocks.  1 when
 * memory was given back, else 0 (malloc_trim answers with it). */
int dmm_malloc_trim(void);

#ifdef __cplusplus
}
#endif
#endif
