/*
 * tools/replay/backends.h - the allocators dmm-replay drives: a dmm heap on
 * an mmap'd, prefaulted arena, and the process's own malloc family (whatever
 * LD_PRELOAD or the link put there), with detection of which allocator that
 * really is.
 */
#ifndef DMM_TOOLS_BACKENDS_H
#define DMM_TOOLS_BACKENDS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dmm/heap.h"
#include "replay.h"

/* ---- dmm heap ------------------------------------------------------------- */
typedef struct dmm_backend {
    rp_backend rb;          /* must stay first */
    dmm_heap_config cfg;    /* as run (stats / lock possibly forced) */
    char spec[512];         /* what the user gave after "dmm:" */
    int stats_forced;       /* stats was OFF, raised to COUNTERS */
    const char *variant; /* the heap code path init chose (dmm_heap_variant) */
    int lock_forced;        /* lock was NONE on a multi-threaded trace */
    unsigned char *arena;
    size_t arena_size;      /* bytes the heap is given */
    size_t map_size;        /* bytes mapped */
    dmm_heap *h;
    size_t ctrl_bytes;      /* footprint minus blocks and region overheads, at init */
    atomic_uint_fast64_t heap_errors; /* misuse reports from hardening */
    char last_error[160];
} dmm_backend;

/* Parses "PRESET" or "key=value,..." into *cfg (starting from the default
 * config, "preset=" resets).  Returns 0, or -1 with a reason in err. */
int dmmb_parse(const char *spec, dmm_heap_config *cfg, char *err, size_t cap);

/* Prepares b for cfg: checks it (reason in err), forces stats >= COUNTERS,
 * and a lock when threads > 1.  Returns 0 or -1. */
int dmmb_setup(dmm_backend *b, const char *spec, const dmm_heap_config *cfg, uint32_t threads, char *err,
               size_t cap);
/* Maps an arena of map bytes (page-rounded); prefault touches every page.
 * Returns 0 or -1 (errno-style reason in err). */
int dmmb_map(dmm_backend *b, size_t map, int prefault, char *err, size_t cap);
/* Creates a fresh heap on the first size bytes of the arena.  Returns the
 * dmm_status. */
int dmmb_init(dmm_backend *b, size_t size);
/* dmm_heap_reset. */
void dmmb_reset(dmm_backend *b);
/* Destroys the heap (arena stays mapped). */
void dmmb_fini(dmm_backend *b);
void dmmb_unmap(dmm_backend *b);

/* ---- system malloc --------------------------------------------------------- */
typedef struct sys_backend {
    rp_backend rb;          /* must stay first */
    char detected[32];      /* glibc, jemalloc, mimalloc, tcmalloc, tbbmalloc, asan, tsan */
    char malloc_object[512];/* the shared object malloc resolves to */
    char note[256];         /* detection remark, may be empty */
    const char *footprint_source;
    const char *used_source;
    const char *meta_source;
    uint64_t rss_base;      /* VmRSS when the backend was set up */
    void *fn_mallctl, *fn_tc_prop, *fn_mi_info, *fn_mallinfo2;
} sys_backend;

void sysb_setup(sys_backend *b);

#endif
