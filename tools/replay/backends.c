/*
 * tools/replay/backends.c - see backends.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backends.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ======================================================================
 * dmm heap
 * ====================================================================== */

int dmmb_parse(const char *spec, dmm_heap_config *cfg, char *err, size_t cap)
{
    const char *why = NULL;
    dmm_heap_preset pr;
    *cfg = dmm_heap_default_config();
    if (!spec || !*spec) {
        snprintf(err, cap, "empty dmm configuration (give a preset name or key=value pairs)");
        return -1;
    }
    if (!strchr(spec, '=')) {
        if (dmm_heap_preset_from_name(spec, &pr) != DMM_OK) {
            size_t n = (size_t)snprintf(err, cap, "unknown preset '%s' (known:", spec);
            for (int i = 0; i < DMM_PRESET_COUNT && n < cap; i++)
                n += (size_t)snprintf(err + n, cap - n, " %s", dmm_heap_preset_name((dmm_heap_preset)i));
            if (n < cap)
                snprintf(err + n, cap - n, ")");
            return -1;
        }
        *cfg = dmm_heap_preset_config(pr);
        return 0;
    }
    if (dmm_heap_config_parse(spec, cfg, &why) != DMM_OK) {
        snprintf(err, cap, "bad dmm configuration '%s': %s", spec, why ? why : "parse error");
        return -1;
    }
    return 0;
}

static void on_heap_error(void *ctx, const dmm_error *e)
{
    dmm_backend *b = ctx;
    if (atomic_fetch_add(&b->heap_errors, 1) == 0)
        snprintf(b->last_error, sizeof b->last_error, "%s", e->message ? e->message : "heap error");
}

/* ---- memory sample ---- */

/* O(1): the heap keeps extent, top bytes and live block bytes itself. */
static int dmmb_sample(rp_backend *rb, rp_mem *m)
{
    dmm_backend *b = (dmm_backend *)rb;
    dmm_heap_stats st;
    size_t regions;
    if (!b->h)
        return -1;
    st = dmm_heap_get_counters(b->h);
    regions = 1u + (size_t)(st.grow_count - st.release_count);
    m->regions = st.footprint;
    m->footprint = st.extent;
    m->used = st.live_block_bytes;
    m->used_known = 1;
    m->meta = b->ctrl_bytes + regions * dmm_heap_region_overhead();
    m->meta_known = 1;
    m->rss = rp_rss_bytes();
    return 0;
}

int dmmb_setup(dmm_backend *b, const char *spec, const dmm_heap_config *cfg, uint32_t threads, char *err,
               size_t cap)
{
    const char *why = NULL;
    memset(b, 0, sizeof *b);
    atomic_init(&b->heap_errors, 0);
    snprintf(b->spec, sizeof b->spec, "%s", spec ? spec : "");
    b->cfg = *cfg;
    if (b->cfg.stats == DMM_STATS_OFF) {
        b->cfg.stats = DMM_STATS_COUNTERS;
        b->stats_forced = 1;
    }
    if (threads > 1 && b->cfg.lock == DMM_LOCK_NONE) {
        b->cfg.lock = DMM_LOCK_MUTEX;
        b->lock_forced = 1;
    }
    b->cfg.error_fn = on_heap_error;
    b->cfg.error_ctx = b;
    if (dmm_heap_config_check(&b->cfg, &why) != DMM_OK) {
        snprintf(err, cap, "invalid dmm configuration '%s': %s", b->spec, why ? why : "rejected");
        return -1;
    }
    b->rb.sample = dmmb_sample;
    b->rb.bctx = b;
    return 0;
}

int dmmb_map(dmm_backend *b, size_t map, int prefault, char *err, size_t cap)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096u;
    void *p;
    if (map > SIZE_MAX - page) {
        snprintf(err, cap, "arena of %zu bytes is too large", map);
        return -1;
    }
    map = (map + page - 1u) & ~(page - 1u);
    p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(err, cap, "cannot map a %zu-byte arena: %s", map, strerror(errno));
        return -1;
    }
    if (prefault)
        for (size_t off = 0; off < map; off += page)
            ((volatile unsigned char *)p)[off] = 0;
    b->arena = p;
    b->map_size = map;
    b->rb.base = (uintptr_t)p;
    return 0;
}

int dmmb_init(dmm_backend *b, size_t size)
{
    dmm_status st;
    if (size > b->map_size)
        return DMM_E_RANGE;
    b->arena_size = size;
    b->h = NULL;
    st = dmm_heap_init(&b->h, b->arena, size, &b->cfg);
    if (st != DMM_OK) {
        b->h = NULL;
        return st;
    }
    dmm_heap_as_allocator(b->h, &b->rb.a);
    b->ctrl_bytes = dmm_heap_control_overhead(b->h);
    b->variant = dmm_heap_variant(b->h);
    return DMM_OK;
}

void dmmb_reset(dmm_backend *b)
{
    if (b->h)
        dmm_heap_reset(b->h);
}

void dmmb_fini(dmm_backend *b)
{
    if (b->h)
        dmm_heap_destroy(b->h);
    b->h = NULL;
}

void dmmb_unmap(dmm_backend *b)
{
    dmmb_fini(b);
    if (b->arena)
        munmap(b->arena, b->map_size);
    b->arena = NULL;
    b->map_size = 0;
}

/* ======================================================================
 * system malloc
 * ====================================================================== */

static void *s_malloc(void *c, size_t n)
{
    (void)c;
    return malloc(n);
}
static void s_free(void *c, void *p)
{
    (void)c;
    free(p);
}
static void *s_realloc(void *c, void *p, size_t n)
{
    (void)c;
    return realloc(p, n);
}
static void *s_calloc(void *c, size_t n, size_t s)
{
    (void)c;
    return calloc(n, s);
}
static void *s_aligned(void *c, size_t a, size_t n)
{
    void *p = NULL;
    (void)c;
    if (a < sizeof(void *))
        a = sizeof(void *);
    if (posix_memalign(&p, a, n) != 0)
        return NULL;
    return p;
}
static size_t s_usable(void *c, const void *p)
{
    (void)c;
    return malloc_usable_size((void *)p);
}

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*tc_prop_fn)(const char *, size_t *);
typedef void (*mi_info_fn)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *);
typedef struct mallinfo2 (*mallinfo2_fn)(void);

static int je_get(sys_backend *b, const char *name, uint64_t *v)
{
    size_t x = 0, len = sizeof x;
    mallctl_fn f;
    *(void **)&f = b->fn_mallctl;
    if (f(name, &x, &len, NULL, 0) != 0)
        return -1;
    *v = x;
    return 0;
}

static int sysb_sample(rp_backend *rb, rp_mem *m)
{
    sys_backend *b = (sys_backend *)rb;
    uint64_t rss = rp_rss_bytes();
    m->rss = rss;
    if (!strcmp(b->detected, "jemalloc") && b->fn_mallctl) {
        uint64_t epoch = 1, v;
        mallctl_fn f;
        *(void **)&f = b->fn_mallctl;
        (void)f("epoch", NULL, NULL, &epoch, sizeof epoch);
        if (je_get(b, "stats.resident", &v) == 0) {
            m->footprint = v;
            if (je_get(b, "stats.allocated", &v) == 0) {
                m->used = v;
                m->used_known = 1;
            }
            if (je_get(b, "stats.metadata", &v) == 0) {
                m->meta = v;
                m->meta_known = 1;
            }
            return 0;
        }
    } else if (!strcmp(b->detected, "tcmalloc") && b->fn_tc_prop) {
        size_t heap = 0, unmapped = 0, alloc = 0;
        tc_prop_fn f;
        *(void **)&f = b->fn_tc_prop;
        if (f("generic.heap_size", &heap)) {
            (void)f("tcmalloc.pageheap_unmapped_bytes", &unmapped);
            m->footprint = heap - (unmapped < heap ? unmapped : heap);
            if (f("generic.current_allocated_bytes", &alloc)) {
                m->used = alloc;
                m->used_known = 1;
            }
            return 0;
        }
    } else if (!strcmp(b->detected, "mimalloc") && b->fn_mi_info) {
        size_t el, us, sy, crss, prss, commit = 0, pcommit, pf;
        mi_info_fn f;
        *(void **)&f = b->fn_mi_info;
        f(&el, &us, &sy, &crss, &prss, &commit, &pcommit, &pf);
        m->footprint = commit;
        return 0;
    } else if (!strcmp(b->detected, "glibc") && b->fn_mallinfo2) {
        mallinfo2_fn f;
        struct mallinfo2 mi;
        *(void **)&f = b->fn_mallinfo2;
        mi = f();
        m->footprint = mi.arena + mi.hblkhd;
        m->used = mi.uordblks + mi.hblkhd;
        m->used_known = 1;
        return 0;
    }
    /* fallback: the resident set (the engine subtracts its baseline) */
    m->footprint = rss;
    return 0;
}

static int obj_is_libc(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0;
}

void sysb_setup(sys_backend *b)
{
    void *mal;
    Dl_info di;
    const char *name = "glibc";
    memset(b, 0, sizeof *b);
    b->rb.a.name = "system";
    b->rb.a.ctx = b;
    b->rb.a.malloc = s_malloc;
    b->rb.a.free = s_free;
    b->rb.a.realloc = s_realloc;
    b->rb.a.calloc = s_calloc;
    b->rb.a.aligned_alloc = s_aligned;
    b->rb.a.usable_size = s_usable;
    b->rb.sample = sysb_sample;
    b->rb.bctx = b;
    b->rb.subtract_baseline = 1;

    if (dlsym(RTLD_DEFAULT, "__asan_init"))
        name = "asan";
    else if (dlsym(RTLD_DEFAULT, "__tsan_init"))
        name = "tsan";
    else if ((b->fn_mallctl = dlsym(RTLD_DEFAULT, "mallctl")) || (b->fn_mallctl = dlsym(RTLD_DEFAULT, "je_mallctl")))
        name = "jemalloc";
    else if (dlsym(RTLD_DEFAULT, "mi_version"))
        name = "mimalloc";
    else if (dlsym(RTLD_DEFAULT, "tc_version") || dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"))
        name = "tcmalloc";
    else if (dlsym(RTLD_DEFAULT, "scalable_malloc"))
        name = "tbbmalloc";

    snprintf(b->malloc_object, sizeof b->malloc_object, "unknown");
    mal = dlsym(RTLD_DEFAULT, "malloc");
    if (mal && dladdr(mal, &di) && di.dli_fname) {
        snprintf(b->malloc_object, sizeof b->malloc_object, "%s", di.dli_fname);
        /* symbols of another allocator may be present without it serving
         * malloc (linked with a prefix, or loaded but not interposed) */
        if (obj_is_libc(di.dli_fname) && strcmp(name, "glibc") != 0 && strcmp(name, "asan") != 0 &&
            strcmp(name, "tsan") != 0) {
            snprintf(b->note, sizeof b->note, "%s symbols are present but malloc resolves to %s", name,
                     di.dli_fname);
            name = "glibc";
        }
    }
    snprintf(b->detected, sizeof b->detected, "%s", name);

    b->fn_tc_prop = dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
    b->fn_mi_info = dlsym(RTLD_DEFAULT, "mi_process_info");
    b->fn_mallinfo2 = dlsym(RTLD_DEFAULT, "mallinfo2");
    if (strcmp(name, "jemalloc") != 0)
        b->fn_mallctl = NULL;
    b->rss_base = rp_rss_bytes();

    if (!strcmp(name, "jemalloc")) {
        b->footprint_source = "jemalloc stats.resident";
        b->used_source = "jemalloc stats.allocated";
        b->meta_source = "jemalloc stats.metadata";
    } else if (!strcmp(name, "tcmalloc") && b->fn_tc_prop) {
        b->footprint_source = "tcmalloc generic.heap_size - tcmalloc.pageheap_unmapped_bytes";
        b->used_source = "tcmalloc generic.current_allocated_bytes";
    } else if (!strcmp(name, "mimalloc") && b->fn_mi_info) {
        b->footprint_source = "mimalloc mi_process_info current_commit";
    } else if (!strcmp(name, "glibc") && b->fn_mallinfo2) {
        b->footprint_source = "glibc mallinfo2 arena + hblkhd";
        b->used_source = "glibc mallinfo2 uordblks + hblkhd";
    } else {
        b->footprint_source = "VmRSS";
    }
}
