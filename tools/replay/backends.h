/*
 * tools/replay/backends.h - the allocators dmm-replay drives, registered in
 * one table (rp_backend_classes) and chosen by the prefix of --alloc:
 *   dmm:CONFIG  a dmm heap on an mmap'd, prefaulted arena;
 *   pool:SPEC   size-class pools in front of a dmm heap (dmm_pool_front) on
 *               the same kind of arena (backend_pool.c);
 *   multiheap:SPEC  per-node dmm heaps on one range (dmm_mh), trace threads
 *               on home nodes, on the same kind of arena
 *               (backend_multiheap.c);
 *   system      the process's own malloc family (whatever LD_PRELOAD or the
 *               link put there), with detection of which allocator that is.
 * A new component (pool:, multiheap:, spm:, libdmm) adds one class here:
 * the run (run.c) and the report (report.c) only use the class's hooks and
 * capability bits, never the backend's type.
 */
#ifndef DMM_TOOLS_BACKENDS_H
#define DMM_TOOLS_BACKENDS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/tcommon.h"
#include "dmm/heap.h"
#include "replay.h"

/* ---- the backend table ------------------------------------------------------ */
enum {
    RPB_ARENA = 1u,      /* --arena sizes its memory */
    RPB_MIN_ARENA = 2u,  /* --min-arena can bisect it (class has min_arena) */
    RPB_HEAPMAP = 4u,    /* --heapmap can walk it */
    RPB_FRESH = 8u       /* every cold rep starts on a fresh allocator (else
                            only the first: the process's malloc cannot be
                            renewed, so one cold pass is run) */
};

/* --min-arena's search (rp_options.min_arena, rp_min_result.method_req) */
enum { RP_MIN_OFF = 0, RP_MIN_EXTENT = 1, RP_MIN_BISECT = 2 };

typedef struct rp_min_result {
    uint64_t bytes, replays, lower, upper, gran;
    int found;
    int method_req;       /* in: RP_MIN_EXTENT or RP_MIN_BISECT (run.h) */
    const char *method;   /* out: "extent", "tight-bisect" or "bisect" */
    uint64_t predicted;   /* extent: the arena the high-water predicted (0: none) */
    char why[600];
} rp_min_result;

/* What the run knows when a backend is created. */
typedef struct rp_setup {
    uint32_t threads;      /* replay threads (1 for --min-arena) */
    uint64_t arena;        /* --arena, 0 when not given */
    uint64_t peak_live;    /* the trace's peak live bytes */
    rp_plan *plan;         /* the trace's plan (profile-sized backends read it) */
} rp_setup;

typedef struct rp_backend_class {
    const char *prefix;    /* "dmm:" (a spec follows) or "system" (the whole word) */
    const char *usage;     /* the --alloc line(s) of the usage text */
    unsigned caps;         /* RPB_* */
    /* spec: what follows the prefix.  Returns the backend, or NULL with a
     * one-line reason in err (bad configuration: exit 2). */
    rp_backend *(*create)(const char *spec, const rp_setup *s, char *err, size_t cap);
    /* Before the first pass: memory mapped, the allocator shown to work.
     * Returns 0, or -1 with err (exit 1). */
    int (*prepare)(rp_backend *b, char *err, size_t cap);
    /* Before each pass: a fresh allocator for a cold pass, a reset one for a
     * warm pass (when RPB_FRESH).  Returns 0 or -1 with err. */
    int (*begin_pass)(rp_backend *b, int cold, char *err, size_t cap);
    /* After a pass with --verify: the allocator's own integrity check.
     * Returns 0, or -1 with a reason in msg.  May be NULL. */
    int (*check)(rp_backend *b, char *msg, size_t cap);
    /* After the first pass: keep what the report needs (statistics). */
    void (*after_first)(rp_backend *b);
    /* An exact peak footprint, when the allocator keeps one: returns 1 and
     * sets *v and *method, else 0.  May be NULL. */
    int (*peak_footprint)(rp_backend *b, uint64_t *v, const char **method);
    /* The "allocator" JSON members, and the console lines. */
    void (*json)(rp_backend *b, tj *j);
    /* Backend-specific members of the "memory" object.  May be NULL. */
    void (*memory_json)(rp_backend *b, tj *j);
    void (*text)(rp_backend *b, FILE *f);
    /* Frees everything (the arena included). */
    void (*destroy)(rp_backend *b);
    /* --min-arena (RPB_MIN_ARENA): bisects the smallest arena with no failed
     * allocation.  Returns 0 (mr->found says whether one was), -1 engine
     * error, -4 verify failure. */
    int (*min_arena)(rp_backend *b, rp_plan *p, int verify, struct rp_min_result *mr);
} rp_backend_class;

extern const rp_backend_class *const rp_backend_classes[];

/* The class whose prefix starts alloc ("dmm:..."), or equals it ("system");
 * NULL when none (err lists the known ones). */
const rp_backend_class *rp_backend_find(const char *alloc, const char **spec, char *err, size_t cap);

/* ---- dmm heap ------------------------------------------------------------- */
typedef struct dmm_backend {
    rp_backend rb;          /* must stay first */
    dmm_heap_config cfg;    /* as run (stats / lock possibly forced) */
    char spec[512];         /* what the user gave after "dmm:" */
    char cfgtext[1024];     /* the configuration as run, normalised */
    uint64_t want;          /* arena bytes: --arena, or the default */
    int arena_clamped;      /* the default arena was capped by the machine's memory */
    int stats_forced;       /* stats was OFF, raised to COUNTERS */
    const char *variant; /* the heap code path init chose (dmm_heap_variant) */
    int lock_forced;        /* lock was NONE on a multi-threaded trace */
    unsigned char *arena;
    size_t arena_size;      /* bytes the heap is given */
    size_t map_size;        /* bytes mapped */
    dmm_heap *h;
    dmm_heap_stats stats;   /* after the first pass (after_first) */
    int have_stats;
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
/* The default arena (no --arena): mult x the trace's peak live bytes, at
 * least 1 MiB and at least `least`, at most half the machine's memory (then
 * *clamped = 1: the trace's live bytes cannot all be granted; such an arena
 * is mapped lazily, not prefaulted, so a trace asking for 2^62 bytes is
 * replayed with that allocation failing instead of touching half the
 * machine page by page). */
uint64_t rpb_default_arena(uint64_t peak_live, uint64_t mult, uint64_t least, int *clamped);
/* Creates a fresh heap on the first size bytes of the arena.  Returns the
 * dmm_status. */
int dmmb_init(dmm_backend *b, size_t size);
/* dmm_heap_reset. */
void dmmb_reset(dmm_backend *b);
/* Destroys the heap (arena stays mapped). */
void dmmb_fini(dmm_backend *b);
void dmmb_unmap(dmm_backend *b);

/* --min-arena for an allocator with a dmm heap on (part of) a mapped arena:
 * finds (mr->method_req: from the extent high-water, or by the plain
 * bisection) the smallest total size base + k * DMM_HEAP_ALIGN (k * G for the
 * heap's part, at least heap_min) with no failed allocation. */
typedef struct rpb_arena_ops {
    rp_backend *rb;     /* the backend replayed */
    dmm_backend *map;   /* whose arena is mapped (dmmb_map / dmmb_unmap) */
    int (*init)(rp_backend *rb, size_t size); /* allocator on the first size bytes; a dmm_status */
    void (*fini)(rp_backend *rb);
    uint64_t base;      /* bytes in front of the heap (pools), 0 for a plain heap */
    uint64_t heap_min;  /* dmm_heap_min_buffer of the heap's config */
    int pow2_steps;     /* the heap sizes its control block from the arena (max_block_log2 = 0) */
    uint64_t want;      /* the arena a normal run uses (start of the search) */
    /* After a pass that worked, before fini: the heap's footprint and its
     * extent high-water (dmm_heap_stats).  NULL: the plain bisection. */
    void (*extent)(rp_backend *rb, uint64_t *footprint, uint64_t *peak_extent);
    /* The policy's decisions cannot depend on the arena size inside one bin
     * range (see rpb_min_arena): the extent prediction is the answer once
     * it is confirmed, with no bisection. */
    int fixed_policy;
} rpb_arena_ops;
int rpb_min_arena(const rpb_arena_ops *ops, rp_plan *p, int verify, rp_min_result *mr);

/* A heap statistics level as the config text spells it (the JSON's "stats"). */
const char *rpb_stats_name(dmm_heap_stats_level s);

/* ---- pools in front of a dmm heap (backend_pool.c) ---------------------------- */
extern const rp_backend_class rp_pool_class;
/* Checks a pool spec (after "pool:") without sizing it: classes, pool keys
 * and heap config.  Returns 0, or -1 with the reason in err. */
int rp_pool_check_spec(const char *spec, char *err, size_t cap);

/* ---- the distributed multi-heap (backend_multiheap.c) ----------------------- */
extern const rp_backend_class rp_multiheap_class;
/* Checks a multiheap spec (after "multiheap:"): node count, policy, free
 * mode and heap config.  Returns 0, or -1 with the reason in err. */
int rp_multiheap_check_spec(const char *spec, char *err, size_t cap);

/* ---- system malloc --------------------------------------------------------- */
typedef struct sys_backend {
    rp_backend rb;          /* must stay first */
    char detected[32];      /* glibc, jemalloc, mimalloc, tcmalloc, tbbmalloc, dmmgen, libdmm, asan, tsan, other */
    char malloc_object[512];/* the shared object malloc resolves to */
    char note[256];         /* detection remark, may be empty */
    void *fn_mallctl, *fn_tc_prop, *fn_mi_info, *fn_mallinfo2;
    void *fn_release;       /* gives free memory back before the baseline */
    const char *expect;     /* --expect NAME */
} sys_backend;

void sysb_setup(sys_backend *b);
/* Returns the free memory the allocator holds to the system where it has a
 * call for that (malloc_trim, arena purge, ReleaseFreeMemory, mi_collect),
 * so the baseline holds little free memory the replay could reuse. */
void sysb_release_free(sys_backend *b);

#endif
