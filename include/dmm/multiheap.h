/*
 * dmm/multiheap.h - the distributed multi-heap (seed 004): per-node dmm heaps
 * joined into one continuous address range, with lazy heap selection.
 *
 * The caller's buffer is cut into `nodes` equal ranges, one dmm heap each
 * (any policy).  A pointer's owner node is (p - base) / node_bytes: O(1).
 * Each caller names its home node on every call (a thread's home node, a
 * core's id, a simulated node), so the same code runs on real threads and
 * inside the mesh simulator.
 *
 * Selection policies (the seed's design and its baselines, in one framework):
 *   LAZY      local heap first; when it cannot serve, the remote heaps in
 *             the try order (nearest first by mesh distance by default),
 *             each with a try-lock: a busy heap is skipped; NULL only after
 *             every heap was tried (optionally a final pass that waits on
 *             each heap's lock in turn).
 *   CENTRAL   one heap over the whole range behind one lock.
 *   PRIVATE   the home heap only.
 *   PRIORITY  the try order as a fixed priority table: each heap's lock is
 *             waited for in turn (no skipping).
 *
 * Free and realloc go to the owner node: directly under its lock (config
 * remote_free = LOCKED), or (QUEUE, the default) a free from another node is
 * pushed on the owner's lock-free queue, which whoever next holds the
 * owner's lock drains.
 *
 * Fault tolerance: dmm_mh_set_offline takes a node's heap out of service at
 * run time.  Allocation skips it; a free of one of its blocks is reported
 * and the block is kept (never written, never reused); other nodes' blocks
 * are unaffected.
 *
 * Thread-safety: every call may come from any thread; each node heap has
 * its own lock (config lock_ops, default spin locks).  Complexity: as the
 * node heap's policy, times the number of heaps tried.
 */
#ifndef DMM_MULTIHEAP_H
#define DMM_MULTIHEAP_H

#include "dmm/common.h"
#include "dmm/heap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dmm_mh dmm_mh;

#define DMM_MH_MAX_NODES 256u
#define DMM_MH_NO_NODE 0xFFFFFFFFu

typedef enum dmm_mh_policy {
    DMM_MH_LAZY = 0,
    DMM_MH_CENTRAL,
    DMM_MH_PRIVATE,
    DMM_MH_PRIORITY
} dmm_mh_policy;

typedef enum dmm_mh_remote_free {
    DMM_MH_FREE_LOCKED = 0, /* a remote free takes the owner's lock */
    DMM_MH_FREE_QUEUE       /* a remote free is queued for the owner (lock-free) */
} dmm_mh_remote_free;

/* How node heaps are locked.  All NULL: built-in spin locks.  The mesh
 * simulator supplies its own, which keep heaps busy in simulated time. */
typedef struct dmm_mh_lock_ops {
    bool (*try_lock)(void *ctx, unsigned node);
    void (*lock)(void *ctx, unsigned node);
    void (*unlock)(void *ctx, unsigned node);
    void *ctx;
} dmm_mh_lock_ops;

/* What a call did at one heap, for observers (the simulator charges
 * messages and service time from these).  ALLOC and FREE are reported just
 * after the heap's lock was released, DRAIN while it is held.  The lock
 * hooks are not told the calling home node: an observer that needs it
 * tracks the call it is making. */
typedef enum dmm_mh_event {
    DMM_MH_EV_ALLOC = 0,  /* an allocation attempt at `node` (ok: served) */
    DMM_MH_EV_BUSY,       /* `node` skipped: its lock was busy */
    DMM_MH_EV_FREE,       /* a free performed at `node` */
    DMM_MH_EV_QUEUE,      /* a free queued for `node` */
    DMM_MH_EV_DRAIN       /* `node` drained its queue (ok = blocks drained) */
} dmm_mh_event;

typedef struct dmm_mh_observer {
    void (*event)(void *ctx, unsigned home, unsigned node, dmm_mh_event ev, size_t ok);
    void *ctx;
} dmm_mh_observer;

typedef struct dmm_mh_config {
    unsigned nodes;                 /* 1..DMM_MH_MAX_NODES */
    unsigned mesh_width;            /* nodes sit row-major on a mesh this wide
                                       (0 = the smallest w with w*w >= nodes);
                                       the default try order is nearest first
                                       by XY (Manhattan) distance, ties by id */
    dmm_mh_policy policy;
    dmm_mh_remote_free remote_free;
    bool final_blocking_pass;       /* LAZY: after all heaps were tried, wait on
                                       each skipped heap's lock in turn */
    dmm_heap_config heap;           /* every node heap's policy (its lock field is
                                       ignored: the multi-heap locks) */
    dmm_mh_lock_ops lock_ops;
    dmm_mh_observer observer;       /* optional */
    const uint16_t *order;          /* optional nodes x nodes table: row h is the
                                       try order of home h (h first); NULL =
                                       nearest first */
    dmm_error_policy on_error;
    dmm_error_fn error_fn;
    void *error_ctx;
    unsigned home_cache;            /* blocks per size class in each home node's
                                       cache of freed blocks (0 = no cache; default
                                       DMM_MH_DEFAULT_HOME_CACHE; at most
                                       DMM_MH_CACHE_MAX_BLOCKS).  CENTRAL ignores
                                       it.  See "Home cache" below */
} dmm_mh_config;

/* Home cache (cfg.home_cache > 0; docs/multiheap.md).  Each home node keeps
 * the blocks of its own heap that it freed, by size class (16-byte classes,
 * blocks up to DMM_MH_CACHE_MAX_SIZE bytes), and serves its own requests of
 * those sizes from them without taking the node heap's lock.  A free of a
 * home's own block is parked in the home's cache (at most
 * DMM_MH_CACHE_PENDING of them, unvalidated and unwritten) and sorted into
 * the classes, validated by the node heap, the next time the home holds its
 * heap's lock; a class that is full sends the block back to the heap.
 * Remote frees still go to the owner (locked or queued).  A cache is guarded
 * by its own lock, which its home only tries (busy: the call bypasses the
 * cache), so several threads may still share a home.  Blocks in a cache are
 * used blocks to the node heap (its live_count includes them) and are
 * counted in the node's `cached`.  A cache never serves an offline node's
 * requests; its blocks stay parked until the node is back. */
#define DMM_MH_CACHE_MAX_SIZE 1024u
#define DMM_MH_CACHE_MAX_BLOCKS 256u
#define DMM_MH_CACHE_PENDING 32u
#define DMM_MH_DEFAULT_HOME_CACHE 16u

/* The configuration that measured best on real threads
 * (bench/results/mh_threads.md): nodes nodes, LAZY, queued remote frees, a
 * home cache of DMM_MH_DEFAULT_HOME_CACHE blocks per class, the tlsf preset
 * per node as shipped (checked hardening, counters).  The seed's own design
 * (and the mesh simulator's): remote_free = DMM_MH_FREE_LOCKED and
 * home_cache = 0. */
dmm_mh_config dmm_mh_default_config(unsigned nodes);

/* DMM_OK or DMM_E_CONFIG with *reason. */
dmm_status dmm_mh_config_check(const dmm_mh_config *cfg, const char **reason);

/* Policy names ("lazy", "central", "private", "priority"); NULL if out of range. */
const char *dmm_mh_policy_name(dmm_mh_policy p);
dmm_status dmm_mh_policy_from_name(const char *name, dmm_mh_policy *out);

/* Formats the multi-heap on [buf, buf+size): the control block first, then
 * nodes equal node ranges.  The try order table (if any) is copied. */
dmm_status dmm_mh_init(dmm_mh **out, void *buf, size_t size, const dmm_mh_config *cfg);
void dmm_mh_destroy(dmm_mh *mh);

/* Bytes of buffer for nodes ranges of per_node bytes each (0 on overflow). */
size_t dmm_mh_buffer_size(const dmm_mh_config *cfg, size_t per_node);

void *dmm_mh_malloc(dmm_mh *mh, unsigned home, size_t size);
void *dmm_mh_calloc(dmm_mh *mh, unsigned home, size_t n, size_t size);
/* size bytes at a multiple of align (a power of two), chosen by the policy
 * as malloc is; NULL for a bad align. */
void *dmm_mh_aligned_alloc(dmm_mh *mh, unsigned home, size_t align, size_t size);
void *dmm_mh_realloc(dmm_mh *mh, unsigned home, void *ptr, size_t size);
void dmm_mh_free(dmm_mh *mh, unsigned home, void *ptr);
size_t dmm_mh_usable_size(dmm_mh *mh, const void *ptr);

/* The node whose range holds ptr, or DMM_MH_NO_NODE.  O(1). */
unsigned dmm_mh_owner(const dmm_mh *mh, const void *ptr);
unsigned dmm_mh_nodes(const dmm_mh *mh);
/* Mesh distance (hops under XY routing) between two nodes. */
unsigned dmm_mh_distance(const dmm_mh *mh, unsigned a, unsigned b);
/* The try order of home (its length is the node count). */
const uint16_t *dmm_mh_try_order(const dmm_mh *mh, unsigned home);

/* Takes a node's heap out of service (offline = true) or back.  DMM_E_RANGE
 * for a bad node; CENTRAL refuses (DMM_E_UNSUPPORTED: it has one heap). */
dmm_status dmm_mh_set_offline(dmm_mh *mh, unsigned node, bool offline);

typedef struct dmm_mh_node_stats {
    uint64_t local_allocs;   /* served by the home heap */
    uint64_t remote_allocs;  /* served here for another home node */
    uint64_t served_remote;  /* this home's requests served by another node */
    uint64_t skipped_busy;   /* this home's tries that found a heap busy */
    uint64_t remote_frees;   /* frees of this node's blocks from other nodes */
    uint64_t queued_frees;   /* of those, queued (remote_free = QUEUE) */
    uint64_t failures;       /* this home's requests that returned NULL */
    uint64_t offline_frees;  /* frees refused because this node is offline */
    uint64_t cache_hits;     /* of local_allocs, served by the home cache */
    size_t cached;           /* blocks in this home's cache (used blocks to
                                the node heap: heap.live_count includes them) */
    bool offline;
    dmm_heap_stats heap;     /* the node heap's counters (O(1) snapshot) */
} dmm_mh_node_stats;

dmm_mh_node_stats dmm_mh_get_node_stats(dmm_mh *mh, unsigned node);

/* Gives the blocks in home's cache back to its node heap (a thread that
 * stops using a home calls it; nothing to do without a cache).  An offline
 * node's cache keeps its blocks. */
void dmm_mh_cache_flush(dmm_mh *mh, unsigned home);

/* Checks every node heap (under its lock), the home caches, the queues and
 * the counters.
 * DMM_OK or DMM_E_CORRUPT with *detail. */
dmm_status dmm_mh_check(dmm_mh *mh, const char **detail);

/* A dmm_allocator bound to one home node (h lives as long as a is used). */
typedef struct dmm_mh_handle {
    dmm_mh *mh;
    unsigned home;
} dmm_mh_handle;
void dmm_mh_as_allocator(dmm_mh_handle *h, dmm_allocator *a);

#ifdef __cplusplus
}
#endif
#endif /* DMM_MULTIHEAP_H */
