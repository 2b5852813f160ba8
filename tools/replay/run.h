/*
 * tools/replay/run.h - dmm-replay split by concern:
 *   options.c  the command line (getopt_long) -> rp_options
 *   run.c      trace -> plan -> backend (backends.c's table) -> passes
 *   report.c   the console summary and the dmm-replay JSON document
 *   main.c     the order of those steps and the exit status
 * The engine itself (plans, passes, histograms) is replay.c; the front-end
 * extras (timeline, heap map, config checking, callgrind sweeps) extras.c.
 */
#ifndef DMM_TOOLS_REPLAY_RUN_H
#define DMM_TOOLS_REPLAY_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "backends.h"
#include "extras.h"
#include "replay.h"

#define PROG "dmm-replay"
#define NK (RK_COUNT + 1) /* kinds + "all" */
extern const char *const rp_kind_labels[NK];

/* Exit statuses. */
enum {
    RP_EXIT_OK = 0,
    RP_EXIT_RUNTIME = 1, /* memory, threads, output files */
    RP_EXIT_USAGE = 2,   /* bad usage, bad trace, bad configuration */
    RP_EXIT_EXPECT = 3,  /* --expect mismatch */
    RP_EXIT_VERIFY = 4   /* --verify found a corrupted block */
};

typedef struct rp_options {
    const char *trace;
    const char *alloc;
    const char *json;
    const char *expect;
    const char *timeline;      /* --timeline FILE */
    const char *heapmap;       /* --heapmap FILE */
    int heapmap_worst;         /* --heapmap-at worst-frag (default: peak) */
    const char *check_configs; /* --check-configs FILE */
    int build_info;            /* --build-info */
    const char *count_sweep;   /* --count-sweep FILE */
    int hist;                  /* --hist */
    uint64_t arena;            /* 0 = default */
    unsigned reps;
    unsigned max_threads;
    uint64_t ops_limit;        /* --ops N: replay the first N trace entries (0 = all) */
    int warm, verify, quiet, min_arena, timing;
} rp_options;

/* rp_options.min_arena: RP_MIN_OFF, or the search method (backends.h:
 * RP_MIN_EXTENT, RP_MIN_BISECT; --min-arena[=extent|bisect]) */

/* Parses argv.  Returns -1 to go on, or an exit status (0 after --help,
 * RP_EXIT_USAGE after printing one line naming what is wrong). */
int rp_parse_options(int argc, char **argv, rp_options *o);

/* ---- per-pass summaries ---- */
typedef struct ksum {
    uint64_t count, p50, p99, max, min;
    double avg;
} ksum;

typedef struct pass_sum {
    uint64_t wall_ns;
    ksum k[NK];
    uint32_t nthr;
    ksum *thr; /* nthr * NK */
    uint64_t failed, skipped, nivcsw, nvcsw;
} pass_sum;

typedef struct pass_set {
    unsigned n;
    pass_sum *s;
} pass_set;

/* Per-figure medians over the set; *rep is the median-wall rep, which
 * gives the per-thread figures. */
void rp_median_of(const pass_set *ps, pass_sum *m, unsigned *rep);

/* Everything one invocation measured. */
typedef struct rp_run {
    const rp_options *o;
    rp_plan plan;
    uint64_t hash;
    uint64_t file_ops;  /* non-SYNC operations in the whole file (--ops replays a prefix) */
    uint64_t file_entries; /* entries in the file, SYNCs included */
    const rp_backend_class *cls;
    rp_backend *b;
    pass_set cold, warm;
    rp_pass_result first; /* the first cold pass: memory figures */
    int have_first;
    uint64_t bracket, rss_before, hwm_after;
    int hwm_reset;
    double tps;
    rp_min_result mr;
    int verify_failed;
    uint64_t verify_index;
    char verify_msg[300];
    rp_timeline tl;
    rpx_heapmap hm;
    rp_hist hacc[2][RK_COUNT]; /* --hist: every rep of a pass kind summed */
} rp_run;

/* Loads and checks the trace, builds the plan, creates the backend.
 * Returns -1 to go on, or an exit status (message printed). */
int rp_run_setup(rp_run *r, const rp_options *o);
/* The passes (or the min-arena search).  Returns the exit status. */
int rp_run_measure(rp_run *r);
void rp_run_free(rp_run *r);

/* ---- report ---- */
/* Prints the console summary on console (unless NULL), then writes --json,
 * --timeline and --heapmap (each complete or not at all); the memory
 * figures are worked out once for both.  Returns 0, or -1 after printing
 * why a file could not be written. */
int rp_report(const rp_run *r, FILE *console);

#endif
