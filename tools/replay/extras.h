/*
 * tools/replay/extras.h - dmm-replay's outputs for the Python front end
 * (python/dmmkit, docs/frontend.md): batch config checking, a memory
 * timeline, a heap map at peak live, and latency histograms in the JSON.
 * Everything here is untimed and only runs when its option is given.
 */
#ifndef DMM_TOOLS_REPLAY_EXTRAS_H
#define DMM_TOOLS_REPLAY_EXTRAS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/tcommon.h"
#include "backends.h"
#include "replay.h"

/* --check-configs FILE: one dmm config per input line ('-' = stdin); prints
 * "ok <normalised config>" or "error <reason>" per line, in order.  Returns
 * the exit status (0, or 2 when FILE cannot be read). */
int rpx_check_configs(const char *prog, const char *file);

/* --count-sweep FILE: replays the plan once per line "ARENA CONFIG" of FILE
 * (sequentially, in trace order, untimed, no sampling) on a fresh dmm heap,
 * calling rpx_sweep_mark(i) after config i.  Under
 *   valgrind --tool=callgrind --toggle-collect=a_malloc ... \
 *            --dump-after=rpx_sweep_mark dmm-replay TRACE --count-sweep FILE
 * every config gets its own profile with exactly its allocator
 * instructions: one valgrind start-up for many configs.  Prints
 * "ok I FAILED" or "error I REASON" per line.  Returns the exit status. */
int rpx_count_sweep(const char *prog, rp_plan *plan, const char *file);
void rpx_sweep_mark(unsigned long idx);

/* ---- heap map -------------------------------------------------------------- */
typedef struct rpx_block {
    uint64_t offset; /* from the first block of its region */
    uint64_t size;   /* block bytes, header included */
    uint64_t requested;
    uint32_t region;
    uint8_t state;   /* dmm_block_state */
} rpx_block;

typedef struct rpx_heapmap {
    dmm_backend *db;
    int taken, failed;
    int sequential;         /* taken in an extra sequential replay */
    uint64_t live;          /* live requested bytes when taken */
    rpx_block *b;
    size_t n, cap;
    uint64_t *region_base;  /* address of each region's first block */
    size_t nregions;
    dmm_heap_stats stats;   /* counters at that moment */
    int worst;              /* --heapmap-at worst-frag: taken at worst fragmentation */
    uint64_t op;            /* worst: the operation (1-based, trace order) it follows */
    uint64_t free_in_extent;/* worst: extent - bytes in used blocks then */
} rpx_heapmap;

/* rp_pass_opts.on_trace_peak callback; ctx is an rpx_heapmap. */
void rpx_heapmap_at_peak(void *ctx, uint64_t live);
/* Writes the map as JSON (DMM_SCHEMA_HEAPMAP) to f.  Returns 0 or -1. */
int rpx_heapmap_write(FILE *f, const rpx_heapmap *hm, const char *trace, uint64_t hash, const char *spec,
                      const char *cfgtext, uint64_t arena, uint64_t trace_peak_live, uint64_t peak_index);
void rpx_heapmap_free(rpx_heapmap *hm);
/* --heapmap-at worst-frag: two extra sequential untimed replays on fresh
 * heaps of b (a dmm backend): the first finds the moment of worst
 * fragmentation (see rpx_heapmap_write's "moment"), the second takes the
 * map there.  Leaves hm->taken 0 when it cannot. */
void rpx_heapmap_worst(rp_plan *plan, rp_backend *b, rpx_heapmap *hm);

/* ---- timeline -------------------------------------------------------------- */
/* Sets up tl for a plan of ops operations (about 1000 points). */
int rpx_timeline_init(rp_timeline *tl, uint64_t ops);
int rpx_timeline_write(FILE *f, const rp_timeline *tl, const char *trace, uint64_t hash,
                       const char *allocator, const char *footprint_source, uint64_t ops, uint64_t trace_peak_live);
void rpx_timeline_free(rp_timeline *tl);

/* ---- histograms ------------------------------------------------------------ */
/* Writes {kind: [[lo, width, count], ...], ..., "all": [...]} for the
 * non-empty buckets of h[RK_COUNT] (kinds with no samples are omitted). */
void rpx_json_hists(tj *j, const char *key, const rp_hist h[RK_COUNT]);

#endif
