/*
 * src/malloc/preload.c - libdmm as the C library's malloc: the standard
 * names, each calling its dmm_* function (include/dmm/malloc.h).  Linked
 * only into libdmm.so (and the .so `dmmkit generate` builds); the static
 * dmm_* library (libdmm_malloc.a) never claims these names.  The list of
 * names and their argument rules are shared with the recorder
 * (src/malloc/family.h).  Names are exported explicitly, so a library
 * built with hidden visibility (the generated one) exports only these.
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/malloc.h"
#include "family.h"

/* DMM_MALLOC_CONFIG_HEADER: a header that sets the compile-time hooks
 * (written by `dmmkit generate`, see malloc.c's opening comment). */
#ifdef DMM_MALLOC_CONFIG_HEADER
#include DMM_MALLOC_CONFIG_HEADER
#endif

#define EXPORT __attribute__((visibility("default")))

/* DMM_MALLOC_GENERATED: the configuration text of a library written by
 * `dmmkit generate`, exported as dmmgen_config so tools (dmm-replay)
 * recognise the library and name its policy. */
#ifdef DMM_MALLOC_GENERATED
EXPORT const char dmmgen_config[] = DMM_MALLOC_GENERATED;
#endif

/* not declared by every C library's headers */
void cfree(void *p);
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

#ifndef DMM_MALLOC_LIBC_NAMES /* else malloc.c names dmm_malloc and dmm_free so */
EXPORT void *malloc(size_t n) { return dmm_malloc(n); }
EXPORT void free(void *p) { dmm_free(p); }
#endif
EXPORT void *calloc(size_t nmemb, size_t size) { return dmm_calloc(nmemb, size); }
EXPORT void *realloc(void *p, size_t n) { return dmm_realloc(p, n); }
EXPORT void *reallocarray(void *p, size_t nmemb, size_t size) { return dmm_reallocarray(p, nmemb, size); }
EXPORT int posix_memalign(void **out, size_t align, size_t n) { return dmm_posix_memalign(out, align, n); }
EXPORT void *aligned_alloc(size_t align, size_t n) { return dmm_aligned_alloc(align, n); }
EXPORT void *memalign(size_t align, size_t n) { return dmm_memalign(align, n); }
EXPORT void *valloc(size_t n) { return dmm_valloc(n); }
EXPORT void *pvalloc(size_t n) { return dmm_pvalloc(n); }
EXPORT size_t malloc_usable_size(void *p) { return dmm_malloc_usable_size(p); }
/* glibc's compatibility name for free, and C23's frees with size hints
 * (the hints are not needed: every block knows its size). */
EXPORT void cfree(void *p) { dmm_free(p); }
EXPORT void free_sized(void *p, size_t size)
{
    (void)size;
    dmm_free(p);
}
EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
    (void)align;
    (void)size;
    dmm_free(p);
}

/* glibc's statistics calls, answered from libdmm's counters:
 * arena = segment bytes mapped, hblkhd = large-block mappings,
 * uordblks = small and medium block bytes in use, fordblks = the rest of
 * the segments (mapped, not necessarily touched). */
EXPORT struct mallinfo2 mallinfo2(void)
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

EXPORT void malloc_stats(void) { dmm_malloc_print_glibc_stats(); }

/* The old mallinfo: the same figures, cut to int as glibc does. */
EXPORT struct mallinfo mallinfo(void)
{
    struct mallinfo2 m = mallinfo2();
    struct mallinfo mi;
    memset(&mi, 0, sizeof mi);
    mi.arena = (int)m.arena;
    mi.hblks = (int)m.hblks;
    mi.hblkhd = (int)m.hblkhd;
    mi.uordblks = (int)m.uordblks;
    mi.fordblks = (int)m.fordblks;
    return mi;
}

EXPORT int malloc_trim(size_t pad)
{
    (void)pad; /* libdmm keeps no top pad: what is unused goes back */
    return dmm_malloc_trim();
}

/* mallopt: M_CHECK_ACTION sets what a detected misuse does (bit 1, as in
 * glibc's value 2 or 3, aborts; without it libdmm reports and continues).
 * glibc's tuning parameters that have no counterpart in libdmm (its arenas,
 * top pad, trim and mmap thresholds, fastbins, perturb byte) are accepted
 * and change nothing; anything else is refused (0).  docs/malloc.md. */
EXPORT int mallopt(int param, int value)
{
    switch (param) {
    case M_CHECK_ACTION:
        (void)dmm_malloc_set_abort_on_error((value & 2) != 0);
        return 1;
    case M_MXFAST:
    case M_TRIM_THRESHOLD:
    case M_TOP_PAD:
    case M_MMAP_THRESHOLD:
    case M_MMAP_MAX:
    case M_PERTURB:
    case M_ARENA_TEST:
    case M_ARENA_MAX:
        return 1;
    default:
        return 0;
    }
}

/* malloc_info: libdmm's figures in glibc's XML outline (one <heap> for the
 * whole process; options must be 0, as in glibc). */
EXPORT int malloc_info(int options, FILE *fp)
{
    dmm_malloc_stats st;
    if (options != 0) {
        errno = EINVAL;
        return -1;
    }
    st = dmm_malloc_get_stats();
    fprintf(fp, "<malloc version=\"libdmm-1\">\n<heap nr=\"0\">\n<sizes>\n</sizes>\n");
    fprintf(fp, "<total type=\"mmap\" count=\"%llu\" size=\"%llu\"/>\n", (unsigned long long)st.large_count,
            (unsigned long long)st.large_bytes);
    fprintf(fp, "<system type=\"current\" size=\"%llu\"/>\n", (unsigned long long)st.mapped);
    fprintf(fp, "<aspace type=\"total\" size=\"%llu\"/>\n", (unsigned long long)(st.mapped - st.large_bytes));
    fprintf(fp, "<used size=\"%llu\"/>\n<segments count=\"%llu\"/>\n<threadheaps count=\"%llu\"/>\n",
            (unsigned long long)st.live_bytes, (unsigned long long)st.segments, (unsigned long long)st.heaps);
    fprintf(fp, "</heap>\n<total type=\"mmap\" count=\"%llu\" size=\"%llu\"/>\n",
            (unsigned long long)st.large_count, (unsigned long long)st.large_bytes);
    fprintf(fp, "<system type=\"current\" size=\"%llu\"/>\n</malloc>\n", (unsigned long long)st.mapped);
    return 0;
}

/* DMM_SHOW_STATS=1 (or DMM_VERBOSE=1): the statistics line when the
 * program ends. */
__attribute__((destructor)) static void dmm_show_stats_at_exit(void)
{
    const char *e = getenv("DMM_SHOW_STATS"), *v = getenv("DMM_VERBOSE");
    if ((e && e[0] == '1') || (v && v[0] == '1'))
        dmm_malloc_print_stats();
}
