/*
 * src/malloc/preload.c - libdmm as the C library's malloc: the standard
 * names, each calling its dmm_* function (include/dmm/malloc.h).  Linked
 * only into libdmm.so; the static dmm_* library (libdmm_malloc.a) never
 * claims these names.
 */
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/malloc.h"

void *malloc(size_t n) { return dmm_malloc(n); }
void free(void *p) { dmm_free(p); }
void *calloc(size_t nmemb, size_t size) { return dmm_calloc(nmemb, size); }
void *realloc(void *p, size_t n) { return dmm_realloc(p, n); }
void *reallocarray(void *p, size_t nmemb, size_t size) { return dmm_reallocarray(p, nmemb, size); }
int posix_memalign(void **out, size_t align, size_t n) { return dmm_posix_memalign(out, align, n); }
void *aligned_alloc(size_t align, size_t n) { return dmm_aligned_alloc(align, n); }
void *memalign(size_t align, size_t n) { return dmm_memalign(align, n); }
void *valloc(size_t n) { return dmm_valloc(n); }
void *pvalloc(size_t n) { return dmm_pvalloc(n); }
size_t malloc_usable_size(void *p) { return dmm_malloc_usable_size(p); }

/* glibc's statistics calls, answered from libdmm's counters:
 * arena = segment bytes mapped, hblkhd = large-block mappings,
 * uordblks = small and medium block bytes in use, fordblks = the rest of
 * the segments (mapped, not necessarily touched). */
struct mallinfo2 mallinfo2(void)
{
    struct mallinfo2 mi;
    dmm_malloc_stats st = dmm_malloc_get_stats();
    memset(&mi, 0, sizeof mi);
    mi.arena = st.mapped - st.large_bytes;
    mi.hblks = st.large_count;
    mi.hblkhd = st.large_bytes;
    mi.uordblks = st.live_bytes;
    mi.fordblks = mi.arena > mi.uordblks ? mi.arena - mi.uordblks : 0;
    return mi;
}

void malloc_stats(void) { dmm_malloc_print_stats(); }

/* DMM_SHOW_STATS=1: the statistics line when the program ends. */
__attribute__((destructor)) static void dmm_show_stats_at_exit(void)
{
    const char *e = getenv("DMM_SHOW_STATS");
    if (e && e[0] == '1')
        dmm_malloc_print_stats();
}
