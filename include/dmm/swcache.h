/*
 * dmm/swcache.h - the software-cache baseline for the scratchpad heap
 * (seed 000, section 5): an execution core reaches heap data in global
 * memory through a set-associative, line-based cache kept in its local
 * memory, as the Cell SDK's software cache does, and every malloc / free
 * is a round trip to the main core's manager (seed Fig. 4).
 *
 *   dmm_swc   one core's cache on a caller buffer (control block, tag
 *             array, dirty masks, lines, bounce buffer).  Objects live in
 *             global memory (dmm_spm_global_alloc, align 16, one object
 *             per request, plus a 16-byte size header); data is read and
 *             written only through dmm_swc_read / write / map.
 *
 * Lines are filled with one DMA get of the whole line; dirty 16-byte
 * granules (not whole lines: a line also covers the global heap's headers
 * and other cores' objects) are written back when the line is evicted
 * (LRU within its set) and on dmm_swc_flush.  Write-through mode writes
 * the touched granules at once and never holds dirty data.
 *
 * THE MAP RULE.  dmm_swc_map returns a local pointer to n contiguous bytes
 * valid until the next dmm_swc_* call on the same cache other than the
 * queries (get_stats, get_layout, last_status).  Inside one line it points
 * into the line; across lines it points into the bounce buffer (copied in,
 * and, for a write map, copied back through the cache at that next call).
 *
 * Addresses handed to read / write / map must lie inside live objects of
 * this core (not checked beyond the global memory's bounds).  The design
 * and cost model: docs/swcache.md.  Not thread-safe: one thread per cache.
 */
#ifndef DMM_SWCACHE_H
#define DMM_SWCACHE_H

#include "dmm/common.h"
#include "dmm/spm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dmm_swc dmm_swc;

#define DMM_SWC_MIN_LINE 16u
#define DMM_SWC_MAX_LINE 16384u
#define DMM_SWC_HEADER 16u /* bytes of global memory in front of each object */

typedef struct dmm_swc_config {
    size_t line;             /* line bytes: a power of two, 16..16384, and
                                <= the port's max_transfer */
    unsigned ways;           /* lines per set, >= 1 */
    unsigned sets;           /* >= 1; 0 = as many as the buffer holds */
    size_t bounce;           /* bounce buffer bytes (multiple of 16, >= 16):
                                the largest map that crosses lines */
    bool write_back;         /* true: write-back; false: write-through */
    bool timing;             /* measure host nanoseconds per function */
    dmm_error_policy on_error;
    dmm_error_fn error_fn;   /* may be NULL */
    void *error_ctx;
} dmm_swc_config;

/* line 128, 4 ways, sets 0 (derived), bounce 512, write-back, no timing,
 * report errors. */
dmm_swc_config dmm_swc_default_config(void);

typedef struct dmm_swc_layout {
    size_t local_size;
    size_t control_bytes;    /* control block */
    size_t tag_bytes;        /* tag array and dirty masks */
    size_t line_bytes;       /* ways * sets * line */
    size_t bounce_bytes;
    unsigned sets, ways;
    size_t line;
} dmm_swc_layout;

/* Formats core `core`'s cache on [local, local+size) (16-byte aligned).
 * DMM_E_NULL; DMM_E_CONFIG (line not a power of two in range or above the
 * port's max_transfer, 0 ways, bad bounce, misaligned buffer);
 * DMM_E_TOO_SMALL (not even one set fits). */
dmm_status dmm_swc_create(dmm_swc **out, void *local, size_t size, const dmm_swc_config *cfg,
                          dmm_spm_global *g, unsigned core, const dmm_spm_port *port);
/* Flushes (dirty data reaches global memory) and ends the cache.  Live
 * objects stay allocated in global memory (free them first if needed). */
void dmm_swc_destroy(dmm_swc *c);
dmm_swc_layout dmm_swc_get_layout(const dmm_swc *c);

/* Allocation in global memory through the main core: DMM_GNULL on failure
 * (size 0, overflow, global memory exhausted; last_status says which). */
dmm_gaddr dmm_swc_malloc(dmm_swc *c, size_t size);
dmm_gaddr dmm_swc_calloc(dmm_swc *c, size_t n, size_t size);
/* realloc(0, n) = malloc; realloc(a, 0) frees, returns 0; on failure a is
 * untouched and 0 returned.  May move (copies through the cache). */
dmm_gaddr dmm_swc_realloc(dmm_swc *c, dmm_gaddr a, size_t size);
/* Drops the object's dirty granules from the cache and sends the free to
 * the main core.  An address whose header does not match is reported
 * (DMM_ERR_INVALID_POINTER) and still sent, so the global heap reports
 * it too; nothing in the cache changes. */
void dmm_swc_free(dmm_swc *c, dmm_gaddr a);
/* Requested bytes of a live object (0 for a bad address). */
size_t dmm_swc_size(dmm_swc *c, dmm_gaddr a);

/* Copies between global [a, a+n) and local memory through the cache (any
 * a, n; split across lines).  DMM_E_RANGE (nothing done) when [a, a+n) is
 * not inside the global memory. */
dmm_status dmm_swc_read(dmm_swc *c, dmm_gaddr a, void *dst, size_t n);
dmm_status dmm_swc_write(dmm_swc *c, dmm_gaddr a, const void *src, size_t n);
/* A local pointer to [a, a+n) under the map rule above; NULL when out of
 * range, n == 0, or the bytes cross lines and n > bounce. */
void *dmm_swc_map(dmm_swc *c, dmm_gaddr a, size_t n, bool write);

/* Writes every dirty granule back (lines stay resident). */
dmm_status dmm_swc_flush(dmm_swc *c);
dmm_status dmm_swc_last_status(const dmm_swc *c);

typedef enum dmm_swc_fn {
    DMM_SWC_FN_MALLOC = 0, /* malloc, calloc */
    DMM_SWC_FN_FREE,
    DMM_SWC_FN_REALLOC,
    DMM_SWC_FN_ACCESS,     /* read, write, map */
    DMM_SWC_FN_FLUSH,
    DMM_SWC_FN_COUNT
} dmm_swc_fn;

typedef struct dmm_swc_stats {
    uint64_t calls[DMM_SWC_FN_COUNT];
    uint64_t sim_cycles[DMM_SWC_FN_COUNT]; /* the port's clock inside each */
    uint64_t host_ns[DMM_SWC_FN_COUNT];    /* timing=on */
    uint64_t lookups;        /* line lookups: hits + misses */
    uint64_t hits, misses;
    uint64_t evictions;      /* valid lines replaced */
    uint64_t writebacks;     /* lines whose dirty granules were written */
    uint64_t lines_fetched;
    uint64_t gets, puts;     /* DMA transfers issued */
    uint64_t bytes_in, bytes_out;
    uint64_t bounce_maps;    /* maps served from the bounce buffer */
    uint64_t mailbox_words;
    uint64_t live_objects, live_bytes;
    uint64_t errors;
} dmm_swc_stats;

dmm_swc_stats dmm_swc_get_stats(const dmm_swc *c);
size_t dmm_swc_stats_json(const dmm_swc_stats *st, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* DMM_SWCACHE_H */
