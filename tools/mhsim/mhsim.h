/*
 * tools/mhsim/mhsim.h - the deterministic mesh network-on-chip simulator
 * behind dmm-mhsim (docs/multiheap-sim.md).
 *
 * A W x H mesh of cores, one per node (node id = y*W + x), XY routing.  Every
 * allocation and free a simulated core makes runs the REAL multi-heap code
 * (dmm_mh_malloc / dmm_mh_free with home = that node); the simulator supplies
 * the multi-heap's lock hooks and observer, which keep each node heap busy in
 * simulated time and charge network messages.  Only time is simulated.
 * Hosted code; not part of the library.
 */
#ifndef DMM_MHSIM_H
#define DMM_MHSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dmm/multiheap.h"
#include "dmm/trace.h"

/* Cost and run parameters (defaults: mhsim_default_params). */
typedef struct mhsim_params {
    unsigned width, height;      /* mesh, 2..8 each (probe: 1..16) */
    dmm_mh_policy policy;
    dmm_mh_remote_free remote_free;
    bool final_pass;
    uint64_t per_node;           /* bytes of memory per node */
    char heap[256];              /* node heap config text ("" = default) */
    uint64_t seed;
    char workload[16];           /* fast gaussian integral matrix spill probe trace */
    /* network */
    unsigned t_hop;              /* cycles per hop (router + link) */
    unsigned inject;             /* cycles to inject a message */
    unsigned flit_bytes;         /* bytes per flit */
    unsigned msg_bytes;          /* bytes of a request or reply message */
    /* heap service times (cycles a heap is busy per operation) */
    unsigned svc_alloc;
    unsigned svc_free;
    /* workload shape */
    unsigned think;              /* cycles between two operations of a core */
    unsigned depth;              /* tasks outstanding per worker */
    unsigned compute_pct;        /* scales the per-task compute time */
    unsigned probe_home;         /* probe: the probing node */
    const dmm_trace *trace;      /* workload "trace": a compacted trace (object
                                    ids dense), thread t on node t % nodes */
    unsigned probe_busy;         /* probe: a node that allocates at time 0 too
                                    (it is scheduled first: its heap is busy) */
    unsigned offline;            /* a node whose heap goes out of service
                                    (DMM_MH_NO_NODE: none) ... */
    uint64_t offline_at;         /* ... at this simulated time (0: from the
                                    start): before the first operation that
                                    starts at or after it */
} mhsim_params;

typedef struct mhsim_node_result {
    dmm_mh_node_stats st;
} mhsim_node_result;

typedef struct mhsim_result {
    uint64_t alloc_events, free_events, failures;
    uint64_t alloc_cycles, free_cycles;   /* summed event latencies */
    uint64_t alloc_msgs, free_msgs;       /* allocator messages */
    uint64_t alloc_hops, free_hops;
    uint64_t lock_wait;                   /* cycles spent waiting on heap locks */
    uint64_t busy_tries;                  /* try-locks that found a heap busy */
    uint64_t task_msgs, task_hops;        /* the workload's own messages */
    uint64_t makespan;                    /* last core's finish time */
    uint64_t offline_time;                /* when the fault struck (offline_at > 0) */
    uint64_t unattributed;                /* observer events outside a held lock
                                             that cost nothing (should be 0) */
    int check_ok;
    char check_detail[160];
    unsigned nodes;
    mhsim_node_result node[DMM_MH_MAX_NODES];
} mhsim_result;

void mhsim_default_params(mhsim_params *p);

/* Cycles of one message between nodes a and b of a mesh width w. */
uint64_t mhsim_msg_cycles(const mhsim_params *p, unsigned a, unsigned b);
/* XY hops between nodes a and b on a mesh of width w. */
unsigned mhsim_hops(unsigned w, unsigned a, unsigned b);

/* Runs one simulation.  0, or -1 with *err set (bad config, no memory). */
int mhsim_run(const mhsim_params *p, mhsim_result *r, const char **err);

/* The workload names, NULL-terminated (the four seed kernels; "all").
 * mhsim_workload_known also accepts spill (every core spills to remote
 * heaps: remote contention), probe and trace. */
extern const char *const mhsim_workloads[];
bool mhsim_workload_known(const char *name);

#endif
