/*
 * tools/replay/backends.c - see backends.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backends.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
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
    b->rb.lazy_arena = !prefault;
    return 0;
}

uint64_t rpb_default_arena(uint64_t peak_live, uint64_t mult, uint64_t least, int *clamped)
{
    uint64_t a = peak_live > UINT64_MAX / mult ? UINT64_MAX : peak_live * mult;
    uint64_t lim = rp_phys_bytes() / 2;
    if (a < ((uint64_t)1 << 20))
        a = (uint64_t)1 << 20;
    if (a < least)
        a = least;
    *clamped = 0;
    if (lim >= ((uint64_t)1 << 20) && a > lim) {
        a = lim > least ? lim : least;
        *clamped = 1;
    }
    return a;
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
    } else if ((!strcmp(b->detected, "dmmgen") || !strcmp(b->detected, "libdmm")) && b->fn_mallinfo2) {
        /* libdmm's mallinfo2: uordblks + hblkhd are the bytes of the blocks
         * in use (exact); arena is mapped segment address space, mostly
         * untouched, so the footprint is the resident set (its growth) */
        mallinfo2_fn f;
        struct mallinfo2 mi;
        *(void **)&f = b->fn_mallinfo2;
        mi = f();
        m->footprint = rss;
        m->used = mi.uordblks + mi.hblkhd;
        m->used_known = 1;
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
    else if (dlsym(RTLD_DEFAULT, "dmmgen_config"))
        name = "dmmgen"; /* a `dmmkit generate` malloc library (libdmm with a generated policy) */
    else if (dlsym(RTLD_DEFAULT, "dmm_malloc_get_stats"))
        name = "libdmm"; /* dmmkit's malloc (src/malloc) */

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
        } else if (!strcmp(name, "glibc") && !obj_is_libc(di.dli_fname)) {
            /* malloc comes from an object no probe recognises (a generated
             * dmm .so, a custom allocator): glibc's counters say nothing
             * about it */
            snprintf(b->note, sizeof b->note, "malloc resolves to %s, an allocator without known statistics",
                     di.dli_fname);
            name = "other";
        }
    }
    snprintf(b->detected, sizeof b->detected, "%s", name);

    b->rb.detected = b->detected;
    b->fn_tc_prop = dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
    b->fn_mi_info = dlsym(RTLD_DEFAULT, "mi_process_info");
    b->fn_mallinfo2 = dlsym(RTLD_DEFAULT, "mallinfo2");
    if (strcmp(name, "jemalloc") != 0)
        b->fn_mallctl = NULL;

    b->rb.mem.kind = "allocator";
    b->rb.mem.exact = 1;
    if (!strcmp(name, "jemalloc")) {
        b->rb.mem.footprint_source = "jemalloc stats.resident";
        b->rb.mem.used_source = "jemalloc stats.allocated";
        b->rb.mem.meta_source = "jemalloc stats.metadata";
    } else if (!strcmp(name, "tcmalloc") && b->fn_tc_prop) {
        b->rb.mem.footprint_source = "tcmalloc generic.heap_size - tcmalloc.pageheap_unmapped_bytes";
        b->rb.mem.used_source = "tcmalloc generic.current_allocated_bytes";
        b->fn_release = dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory");
    } else if (!strcmp(name, "glibc") && b->fn_mallinfo2) {
        b->rb.mem.footprint_source = "glibc mallinfo2 arena + hblkhd (every arena)";
        b->rb.mem.used_source = "glibc mallinfo2 uordblks + hblkhd";
        b->fn_release = dlsym(RTLD_DEFAULT, "malloc_trim");
    } else if ((!strcmp(name, "dmmgen") || !strcmp(name, "libdmm")) && b->fn_mallinfo2) {
        /* The used bytes are libdmm's own exact count, but its mapped bytes
         * are address space, so the footprint is the resident set's growth.
         * The report has one exactness flag per allocator (fragmentation
         * needs an exact footprint and used bytes together): both figures
         * are growth over the baseline and marked not exact. */
        b->rb.mem.footprint_source = "growth of the process's resident set (VmRSS) over the pass";
        b->rb.mem.used_source = "libdmm's mallinfo2 uordblks + hblkhd (bytes of blocks in use), growth over the pass";
        b->rb.mem.exact = 0;
        b->rb.subtract_baseline = 1;
        b->rb.mem.kind = "rss_growth";
    } else if (!strcmp(name, "mimalloc") && b->fn_mi_info) {
        /* mimalloc 2.0 has no count of allocated bytes: its committed memory
         * grows with the replay, but how much of it is free is unknown. */
        b->rb.mem.footprint_source = "growth of mimalloc mi_process_info current_commit over the pass";
        b->rb.mem.exact = 0;
        b->rb.subtract_baseline = 1;
        b->rb.mem.kind = "commit_growth";
        b->fn_release = dlsym(RTLD_DEFAULT, "mi_collect");
    } else {
        b->rb.mem.footprint_source = "growth of the process's resident set (VmRSS) over the pass";
        b->rb.mem.exact = 0;
        b->rb.subtract_baseline = 1;
        b->rb.mem.kind = "rss_growth";
    }
}

void sysb_release_free(sys_backend *b)
{
    if (!strcmp(b->detected, "jemalloc") && b->fn_mallctl) {
        mallctl_fn f;
        *(void **)&f = b->fn_mallctl;
        (void)f("arena.4096.purge", NULL, NULL, NULL, 0); /* MALLCTL_ARENAS_ALL */
    } else if (b->fn_release && !strcmp(b->detected, "glibc")) {
        int (*f)(size_t);
        *(void **)&f = b->fn_release;
        (void)f(0);
    } else if (b->fn_release && !strcmp(b->detected, "tcmalloc")) {
        void (*f)(void);
        *(void **)&f = b->fn_release;
        f();
    } else if (b->fn_release && !strcmp(b->detected, "mimalloc")) {
        void (*f)(int);
        *(void **)&f = b->fn_release;
        f(1);
    }
}

/* ======================================================================
 * the table
 * ====================================================================== */

/* ---- dmm ---- */

static rp_backend *dmm_create(const char *spec, const rp_setup *s, char *err, size_t cap)
{
    dmm_heap_config cfg;
    dmm_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    if (dmmb_parse(spec, &cfg, err, cap) || dmmb_setup(b, spec, &cfg, s->threads, err, cap)) {
        free(b);
        return NULL;
    }
    (void)dmm_heap_config_format(&b->cfg, b->cfgtext, sizeof b->cfgtext);
    if (s->arena) {
        if (s->arena < dmm_heap_min_buffer(&b->cfg)) {
            snprintf(err, cap, "--arena %" PRIu64 " is below the minimum %zu bytes for this configuration", s->arena,
                     dmm_heap_min_buffer(&b->cfg));
            free(b);
            return NULL;
        }
        b->want = s->arena;
    } else {
        /* 4 x peak live, at least 1 MiB, at most half the machine's memory
         * (prefaulted unless clamped): a trace whose requests cannot fit is
         * replayed with those allocations failing and counted, not refused. */
        uint64_t a = rpb_default_arena(s->peak_live, 4, 0, &b->arena_clamped);
        b->want = (a + 4095u) & ~(uint64_t)4095u;
    }
    b->rb.detected = "dmm";
    b->rb.mem.kind = "allocator";
    b->rb.mem.exact = 1;
    b->rb.mem.footprint_source = "dmm extent (regions minus untouched top blocks, control block included)";
    b->rb.mem.used_source = "dmm used blocks (headers and tail words included)";
    b->rb.mem.meta_source = "dmm control block + region descriptors and sentinels";
    b->rb.mem.meta_in_footprint = 1;
    return &b->rb;
}

static int dmm_prepare(rp_backend *rb, char *err, size_t cap)
{
    dmm_backend *b = (dmm_backend *)rb;
    int st;
    if (dmmb_map(b, (size_t)b->want, !b->arena_clamped, err, cap))
        return -1;
    if ((st = dmmb_init(b, (size_t)b->want)) != DMM_OK) {
        snprintf(err, cap, "cannot create the heap on a %" PRIu64 "-byte arena: %s", b->want,
                 dmm_status_str((dmm_status)st));
        return -1;
    }
    dmmb_fini(b);
    return 0;
}

static int dmm_begin_pass(rp_backend *rb, int cold, char *err, size_t cap)
{
    dmm_backend *b = (dmm_backend *)rb;
    if (!cold && b->h) {
        dmmb_reset(b);
        return 0;
    }
    dmmb_fini(b);
    if (dmmb_init(b, (size_t)b->want) != DMM_OK) {
        snprintf(err, cap, "heap init failed");
        return -1;
    }
    return 0;
}

static int dmm_check(rp_backend *rb, char *msg, size_t cap)
{
    dmm_backend *b = (dmm_backend *)rb;
    dmm_heap_check_report rep;
    if (!b->h || dmm_heap_check(b->h, &rep) == DMM_OK)
        return 0;
    snprintf(msg, cap, "%s", rep.detail ? rep.detail : "corrupt");
    return -1;
}

static void dmm_after_first(rp_backend *rb)
{
    dmm_backend *b = (dmm_backend *)rb;
    if (b->h) {
        b->stats = dmm_heap_get_stats(b->h);
        b->have_stats = 1;
    }
}

static int dmm_peak_footprint(rp_backend *rb, uint64_t *v, const char **method)
{
    dmm_backend *b = (dmm_backend *)rb;
    if (!b->have_stats)
        return 0;
    *v = b->stats.peak_extent;
    *method = "exact (heap statistics peak_extent)";
    return 1;
}

const char *rpb_stats_name(dmm_heap_stats_level s)
{
    return s == DMM_STATS_FULL ? "full" : s == DMM_STATS_COUNTERS ? "counters" : "off";
}

static void dmm_json(rp_backend *rb, tj *j)
{
    dmm_backend *b = (dmm_backend *)rb;
    tj_str(j, "kind", "dmm");
    tj_str(j, "name", b->spec);
    tj_str(j, "config", b->cfgtext);
    tj_str(j, "detected", "dmm");
    tj_str(j, "stats", rpb_stats_name(b->cfg.stats));
    tj_bool(j, "stats_forced", b->stats_forced);
    tj_bool(j, "lock_forced", b->lock_forced);
    tj_str(j, "variant", b->variant ? b->variant : "");
    tj_u64(j, "arena", b->want);
    tj_bool(j, "arena_clamped", b->arena_clamped);
    tj_u64(j, "heap_errors", atomic_load(&b->heap_errors));
}

static void dmm_memory_json(rp_backend *rb, tj *j)
{
    dmm_backend *b = (dmm_backend *)rb;
    tj_u64(j, "arena", b->want);
    tj_u64(j, "regions_peak", b->have_stats ? b->stats.peak_footprint : 0);
    tj_u64(j, "peak_block_bytes", b->have_stats ? b->stats.peak_block_bytes : 0);
    if (b->have_stats) {
        char buf[4096];
        size_t n = dmm_heap_stats_json(&b->stats, buf, sizeof buf);
        if (n < sizeof buf)
            tj_raw(j, "heap_stats", buf);
    }
}

static void dmm_text(rp_backend *rb, FILE *f)
{
    dmm_backend *b = (dmm_backend *)rb;
    fprintf(f, "allocator  dmm:%s\n           %s%s%s\n", b->spec, b->cfgtext,
            b->stats_forced ? "  [stats raised to counters]" : "", b->lock_forced ? "  [lock=mutex for threads]" : "");
}

static void dmm_destroy(rp_backend *rb)
{
    dmm_backend *b = (dmm_backend *)rb;
    dmmb_unmap(b);
    free(b);
}

/* --min-arena: 1 = replays with no failed allocation, 0 = fails (or init
 * refused), -1 = engine error, -4 = verify failure.  ext (may be NULL):
 * after a pass that worked, the heap's footprint and extent high-water. */
static int try_arena(const rpb_arena_ops *ops, rp_plan *p, size_t size, int verify, rp_pass_result *keep,
                     uint64_t *replays, uint64_t ext[2])
{
    rp_pass_opts po;
    rp_pass_result r;
    int rc;
    if (ops->init(ops->rb, size) != DMM_OK)
        return 0;
    memset(&po, 0, sizeof po);
    po.sequential = 1;
    po.stop_on_fail = 1;
    po.verify = verify;
    (*replays)++;
    if (rp_run_pass(p, ops->rb, &po, &r)) {
        rp_pass_result_free(&r);
        ops->fini(ops->rb);
        return -1;
    }
    if (ext && ops->extent && r.failed == 0 && !r.verify_failed)
        ops->extent(ops->rb, &ext[0], &ext[1]);
    ops->fini(ops->rb);
    if (r.verify_failed) {
        fprintf(stderr, "dmm-replay: verify failed at operation %" PRIu64 " with a %zu-byte arena: %s\n",
                r.verify_index, size, r.verify_msg);
        rp_pass_result_free(&r);
        return -4;
    }
    rc = r.failed == 0;
    if (keep && rc) /* kept only for a replay that worked: the caller tries again otherwise */
        *keep = r;
    else
        rp_pass_result_free(&r);
    return rc;
}

/* The bin range, and with it the control block, is derived from the arena
 * size and steps up at powers of two, so success is not monotonic across
 * those steps.  Try the largest size below each power of two first: the
 * first that works becomes *khi (with its extents in ext, when given), the
 * ones that fail raise *klo, so the search goes on inside one segment (one
 * control-block size throughout).  Sizes are k granules.  Returns 0 or the
 * negative status of try_arena. */
static int pow2_segment(const rpb_arena_ops *ops, rp_plan *p, int verify, rp_min_result *mr, uint64_t *klo,
                        uint64_t *khi, uint64_t ext[2])
{
    const uint64_t G = DMM_HEAP_ALIGN, top = *khi * G;
    for (uint64_t pw = 1; pw && pw / 2 < top; pw <<= 1) {
        uint64_t k = (pw - G) / G, e2[2] = {0, 0};
        int rc;
        if (pw <= G || k <= *klo)
            continue;
        if (k >= *khi)
            break;
        rc = try_arena(ops, p, (size_t)(ops->base + k * G), verify, NULL, &mr->replays, ext ? e2 : NULL);
        if (rc < 0)
            return rc;
        if (rc) {
            *khi = k;
            if (ext) {
                ext[0] = e2[0];
                ext[1] = e2[1];
            }
            return 0;
        }
        *klo = k;
    }
    return 0;
}

/* Bisection between *klo granules (fails) and *khi granules (works) until
 * they are one granule apart.  Returns the number of replays it made, or
 * the negative status of try_arena. */
static int bisect_granules(const rpb_arena_ops *ops, rp_plan *p, int verify, rp_min_result *mr, uint64_t *klo,
                           uint64_t *khi)
{
    const uint64_t G = DMM_HEAP_ALIGN;
    int steps = 0;
    while (*khi - *klo > 1) {
        uint64_t k = *klo + (*khi - *klo) / 2;
        int rc = try_arena(ops, p, (size_t)(ops->base + k * G), verify, NULL, &mr->replays, NULL);
        if (rc < 0)
            return rc;
        if (rc)
            *khi = k;
        else
            *klo = k;
        steps++;
    }
    return steps;
}

/* The minimum arena from the extent high-water (--min-arena=extent).
 *
 * Why one replay can tell: a dmm heap on a fixed arena (no growth) carves
 * its top block only when no listed block fits (src/heap/engine/alloc.h,
 * obtain_fast), so the top's size never enters a decision as long as every
 * carve fits.  What else could see the arena size:
 *   - the bin range (and the control block) when max_block_log2 = 0: it is
 *     log2_ceil of the heap's bytes (layout.c, dmm__heap_layout_for), so it is one
 *     figure inside a power-of-two segment; the prediction is made from a
 *     replay in the same segment (the lowest segment whose largest size
 *     works) and never crosses a segment boundary;
 *   - quick-list flushes and deferred sweeps: they run when the bins AND
 *     the top fail (obtain_slow), so a tighter arena flushes where a larger
 *     one carved, and may then need less: for such configs
 *     (fixed_policy = 0) the prediction is only the upper bound of a
 *     bisection;
 *   - growth from OS pages (grow_granularity > 0): not fixed either.
 * With the footprint F and extent high-water E of a replay on k granules,
 * the same decisions need k - (F - E) / G granules (the top exhausted at
 * the high-water).  The prediction is confirmed: it must replay without a
 * failure and one granule less must fail (the contract of the bisection);
 * otherwise a bisection between the bounds known so far decides.  Returns
 * 0 (mr filled) or the negative status of try_arena. */
static int min_by_extent(const rpb_arena_ops *ops, rp_plan *p, int verify, rp_min_result *mr, uint64_t klo,
                         uint64_t khi, const uint64_t gext[2])
{
    const uint64_t G = DMM_HEAP_ALIGN, base = ops->base;
    uint64_t ext[2] = {gext[0], gext[1]}, kp, seg = 0;
    int rc, bisect = !ops->fixed_policy;
    /* an arena of peak-live bytes cannot hold the live bytes and the control
     * block: a known failure (the tight lower bound) */
    if (base == 0 && p->peak_live / G > klo)
        klo = p->peak_live / G < khi ? p->peak_live / G : khi - 1;
    mr->lower = base + (klo + 1) * G;
    if (ops->pow2_steps) {
        if ((rc = pow2_segment(ops, p, verify, mr, &klo, &khi, ext)) < 0)
            return rc;
        /* sizes above 2^(r-1) share khi's bin range r */
        seg = 1;
        while (seg * 2 < khi * G)
            seg *= 2; /* 2^(r-1) for the range r = log2_ceil(khi * G) */
        seg /= G;
    }
    if (ext[0] >= ext[1] && ext[0] - ext[1] < khi * G) {
        kp = khi - (ext[0] - ext[1]) / G;
        if (kp <= seg)
            kp = seg + 1;
        if (kp <= klo)
            kp = klo + 1;
        mr->predicted = base + kp * G;
        if (kp < khi) {
            rc = try_arena(ops, p, (size_t)(base + kp * G), verify, NULL, &mr->replays, NULL);
            if (rc < 0)
                return rc;
            if (rc)
                khi = kp;
            else {
                /* a few granules short (a top too small to split is handed
                 * out whole near the high-water): gallop up from the
                 * prediction, then bisect the last step */
                klo = kp;
                for (uint64_t step = 1; kp + step < khi; step *= 2) {
                    rc = try_arena(ops, p, (size_t)(base + (kp + step) * G), verify, NULL, &mr->replays, NULL);
                    if (rc < 0)
                        return rc;
                    if (rc) {
                        khi = kp + step;
                        break;
                    }
                    klo = kp + step;
                }
            }
        }
        if (!bisect && khi - 1 > klo) {
            rc = try_arena(ops, p, (size_t)(base + (khi - 1) * G), verify, NULL, &mr->replays, NULL);
            if (rc < 0)
                return rc;
            if (rc) {
                khi--;
                bisect = 1;
            } else
                klo = khi - 1;
        }
    } else
        bisect = 1;
    if ((rc = bisect_granules(ops, p, verify, mr, &klo, &khi)) < 0)
        return rc;
    bisect += rc;
    /* "extent": the prediction (or a step of the gallop above it) confirmed */
    mr->method = ops->fixed_policy && mr->predicted && bisect <= 1 ? "extent" : "tight-bisect";
    mr->bytes = base + khi * G;
    mr->found = 1;
    return 0;
}

int rpb_min_arena(const rpb_arena_ops *ops, rp_plan *p, int verify, rp_min_result *mr)
{
    const uint64_t G = DMM_HEAP_ALIGN, base = ops->base;
    uint64_t minbuf = ops->heap_min;
    uint64_t hi = ops->want > base ? ops->want - base : 0, klo, khi, gext[2] = {0, 0};
    int method = mr->method_req == RP_MIN_BISECT || !ops->extent ? RP_MIN_BISECT : RP_MIN_EXTENT;
    char err[200];
    rp_pass_result gr;
    int rc;
    memset(mr, 0, sizeof *mr);
    mr->method = "bisect";
    mr->gran = G;
    mr->lower = base + minbuf;
    if (rp_plan_flatten(p)) {
        snprintf(mr->why, sizeof mr->why, "out of memory");
        return -1;
    }
    if (p->impossible) {
        snprintf(mr->why, sizeof mr->why,
                 "the trace makes %" PRIu64 " request%s no allocator can grant (live bytes past PTRDIFF_MAX)",
                 p->impossible, p->impossible == 1 ? "" : "s");
        return 0;
    }
    /* hi, klo, khi, k * G: bytes of the heap's part (after `base`) */
    if (hi < minbuf)
        hi = minbuf;
    hi = (hi + G - 1) / G * G;
    /* a generous arena that works: double until it does */
    for (;;) {
        if (dmmb_map(ops->map, (size_t)(base + hi), 0, err, sizeof err)) {
            snprintf(mr->why, sizeof mr->why, "no arena up to %" PRIu64 " bytes replays without failures (%s)",
                     base + hi, err);
            return 0;
        }
        rc = try_arena(ops, p, (size_t)(base + hi), verify, &gr, &mr->replays, gext);
        if (rc == 1)
            break;
        dmmb_unmap(ops->map);
        if (rc < 0)
            return rc;
        if (hi > ((uint64_t)1 << 42)) {
            snprintf(mr->why, sizeof mr->why, "no arena up to %" PRIu64 " bytes replays without failures",
                     base + hi);
            return 0;
        }
        hi *= 2;
    }
    mr->upper = base + hi;
    /* Sizes are multiples of the granule: k * G.  Everything below minbuf
     * is refused by init, so (ceil(minbuf/G) - 1) * G is a known failure. */
    klo = (minbuf + G - 1) / G - 1;
    khi = hi / G;
    rp_pass_result_free(&gr);
    if (method == RP_MIN_EXTENT)
        return min_by_extent(ops, p, verify, mr, klo, khi, gext);
    if (ops->pow2_steps && (rc = pow2_segment(ops, p, verify, mr, &klo, &khi, NULL)) < 0)
        return rc;
    if ((rc = bisect_granules(ops, p, verify, mr, &klo, &khi)) < 0)
        return rc;
    mr->bytes = base + khi * G;
    mr->found = 1;
    return 0;
}

static int dmm_arena_init(rp_backend *rb, size_t size) { return dmmb_init((dmm_backend *)rb, size); }
static void dmm_arena_fini(rp_backend *rb) { dmmb_fini((dmm_backend *)rb); }
static void dmm_arena_extent(rp_backend *rb, uint64_t *footprint, uint64_t *peak_extent)
{
    dmm_heap_stats st = dmm_heap_get_stats(((dmm_backend *)rb)->h);
    *footprint = st.footprint;
    *peak_extent = st.peak_extent;
}

static int dmm_min_arena(rp_backend *rb, rp_plan *p, int verify, rp_min_result *mr)
{
    dmm_backend *b = (dmm_backend *)rb;
    rpb_arena_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.rb = rb;
    ops.map = b;
    ops.init = dmm_arena_init;
    ops.fini = dmm_arena_fini;
    ops.heap_min = dmm_heap_min_buffer(&b->cfg);
    ops.pow2_steps = b->cfg.max_block_log2 == 0;
    ops.want = b->want;
    ops.extent = dmm_arena_extent;
    /* no flush or sweep that runs only when the top cannot serve, no growth */
    ops.fixed_policy = b->cfg.quick_max == 0 && b->cfg.coalesce != DMM_COALESCE_DEFERRED &&
                       b->cfg.grow_granularity == 0;
    return rpb_min_arena(&ops, p, verify, mr);
}

static const rp_backend_class dmm_class = {
    .prefix = "dmm:",
    .usage = "  --alloc dmm:CONFIG  a dmm heap: a preset name (dlmalloc, tlsf, halffit, firstfit, p2012, ...)\n"
             "                      or key=value pairs (e.g. dmm:preset=tlsf,fit=best); the default, dmm:tlsf\n",
    .caps = RPB_ARENA | RPB_MIN_ARENA | RPB_HEAPMAP | RPB_FRESH,
    .create = dmm_create,
    .prepare = dmm_prepare,
    .begin_pass = dmm_begin_pass,
    .check = dmm_check,
    .after_first = dmm_after_first,
    .peak_footprint = dmm_peak_footprint,
    .json = dmm_json,
    .memory_json = dmm_memory_json,
    .text = dmm_text,
    .destroy = dmm_destroy,
    .min_arena = dmm_min_arena,
};

/* ---- system ---- */

static rp_backend *sys_create(const char *spec, const rp_setup *s, char *err, size_t cap)
{
    sys_backend *b = calloc(1, sizeof *b);
    (void)spec;
    (void)s;
    if (!b) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    sysb_setup(b);
    return &b->rb;
}

static int sys_prepare(rp_backend *rb, char *err, size_t cap)
{
    (void)err;
    (void)cap;
    sysb_release_free((sys_backend *)rb);
    return 0;
}

static int sys_begin_pass(rp_backend *rb, int cold, char *err, size_t cap)
{
    (void)rb;
    (void)cold;
    (void)err;
    (void)cap;
    return 0;
}

static void sys_json(rp_backend *rb, tj *j)
{
    sys_backend *b = (sys_backend *)rb;
    tj_str(j, "kind", "system");
    tj_str(j, "name", b->detected);
    tj_str(j, "detected", b->detected);
    tj_str(j, "malloc_object", b->malloc_object);
    tj_str(j, "note", b->note[0] ? b->note : NULL);
}

static void sys_text(rp_backend *rb, FILE *f)
{
    sys_backend *b = (sys_backend *)rb;
    fprintf(f, "allocator  system: %s (malloc from %s)%s%s\n", b->detected, b->malloc_object,
            b->note[0] ? "\n           note: " : "", b->note);
}

static void sys_destroy(rp_backend *rb) { free(rb); }

static const rp_backend_class system_class = {
    .prefix = "system",
    .usage = "  --alloc system      the process's malloc family (LD_PRELOAD picks jemalloc, mimalloc, ...)\n",
    .caps = 0,
    .create = sys_create,
    .prepare = sys_prepare,
    .begin_pass = sys_begin_pass,
    .json = sys_json,
    .text = sys_text,
    .destroy = sys_destroy,
};

const rp_backend_class *const rp_backend_classes[] = {&dmm_class, &rp_pool_class, &rp_multiheap_class, &system_class,
                                                       NULL};

const rp_backend_class *rp_backend_find(const char *alloc, const char **spec, char *err, size_t cap)
{
    size_t n = 0;
    for (unsigned i = 0; rp_backend_classes[i]; i++) {
        const rp_backend_class *c = rp_backend_classes[i];
        size_t pl = strlen(c->prefix);
        if (c->prefix[pl - 1] == ':' ? !strncmp(alloc, c->prefix, pl) : !strcmp(alloc, c->prefix)) {
            *spec = alloc + pl;
            return c;
        }
    }
    n = (size_t)snprintf(err, cap, "--alloc: unknown allocator '%s' (known:", alloc);
    for (unsigned i = 0; rp_backend_classes[i] && n < cap; i++)
        n += (size_t)snprintf(err + n, cap - n, " %s%s", rp_backend_classes[i]->prefix,
                              rp_backend_classes[i]->prefix[strlen(rp_backend_classes[i]->prefix) - 1] == ':' ? "..."
                                                                                                              : "");
    if (n < cap)
        snprintf(err + n, cap - n, ")");
    return NULL;
}
