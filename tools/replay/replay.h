/*
 * tools/replay/replay.h - the trace replay engine behind dmm-replay.
 *
 * A trace is first turned into a plan (untimed): per-thread operation
 * streams whose objects are named by a dense slot index (one slot per object
 * incarnation: allocation .. free), plus the figures the trace itself
 * determines (peak live bytes and objects).  A pass then replays the plan
 * against one allocator seen through the dmm_allocator vtable, timing every
 * call with a fenced TSC bracket, and optionally sampling the allocator's
 * memory at new live peaks and verifying block contents.
 */
#ifndef DMM_TOOLS_REPLAY_H
#define DMM_TOOLS_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "dmm/common.h"
#include "dmm/trace.h"

/* Timed operation kinds (index into per-kind histograms). */
enum { RK_MALLOC = 0, RK_CALLOC, RK_REALLOC, RK_ALIGNED, RK_FREE, RK_COUNT };
extern const char *const rp_kind_names[RK_COUNT];

/* ---- histogram ------------------------------------------------------------
 * Log-linear: exact below 1024, then 64 sub-buckets per power of two
 * (relative bucket width <= 1/64).  Count, sum, min and max are exact. */
#define RP_HIST_LINEAR 1024u
#define RP_HIST_SUB 64u
#define RP_HIST_BUCKETS (RP_HIST_LINEAR + (64u - 10u) * RP_HIST_SUB)

typedef struct rp_hist {
    uint64_t count, sum, min, max;
    uint64_t *b; /* RP_HIST_BUCKETS counters, allocated on first use */
} rp_hist;

int rp_hist_add(rp_hist *h, uint64_t v);
int rp_hist_merge(rp_hist *dst, const rp_hist *src);
/* Value at quantile q (0..1): exact below 1024, else the bucket midpoint. */
uint64_t rp_hist_quantile(const rp_hist *h, double q);
/* Lowest value and width of bucket i (0 <= i < RP_HIST_BUCKETS). */
void rp_hist_bucket_range(unsigned i, uint64_t *lo, uint64_t *width);
void rp_hist_free(rp_hist *h);

/* ---- plan ------------------------------------------------------------------ */
typedef struct rp_op {
    uint8_t kind;    /* DMM_T_* */
    uint8_t sub;     /* ALIGNED: which API */
    uint16_t tid;    /* the trace thread that makes the op (RP_MAX_THREADS
                        fits): a sequential replay names it to backends
                        that serve threads differently (set_thread) */
    uint32_t thread; /* SYNC: the thread waited for; other ops: position
                        among the non-SYNC ops (trace order) */
    uint64_t slot;   /* object incarnation (not for SYNC) */
    uint64_t size;   /* bytes; SYNC: operation count to wait for */
    uint64_t arg;    /* CALLOC nmemb, ALIGNED alignment */
    uint64_t index;  /* position in the trace (as replayed) */
} rp_op;

typedef struct rp_plan {
    uint32_t threads;
    rp_op **stream;   /* per thread, SYNCs included */
    size_t *len;
    rp_op *flat;      /* every non-SYNC op in trace order (rp_plan_flatten) */
    size_t flat_len;
    size_t nslots;    /* object incarnations */
    uint64_t ops;     /* non-SYNC operations */
    uint64_t syncs;
    uint64_t kind_count[DMM_T_SYNC + 1];
    uint64_t peak_live;     /* peak live requested bytes, in trace order */
    uint64_t peak_objects;  /* peak live objects */
    uint64_t peak_index;    /* trace index of the op that first reached peak_live */
    uint64_t total_requested;
    uint64_t max_request;
    uint64_t impossible;    /* requests no allocator can grant (dmm_trace_summary) */
    int syncs_derived;      /* the trace's SYNCs did not order every cross-thread
                               use, so dmm_trace_add_syncs was applied */
} rp_plan;

/* A replay runs one OS thread per trace thread: the most --max-threads
 * allows.  run.c refuses a trace with more threads before planning it
 * (thread ids are dense after loading, so this counts threads that do
 * something). */
#define RP_MAX_THREADS 1024u

/* Builds the plan.  The trace must have passed dmm_trace_validate.  Returns 0,
 * or -1 with a message in err. */
int rp_plan_build(const dmm_trace *t, rp_plan *p, char *err, size_t errcap);
/* Fills p->flat (trace order, no SYNCs) for sequential replays. */
int rp_plan_flatten(rp_plan *p);
/* Size classes bounded by bound[0] < bound[1] < ... < bound[n-1]: a request
 * of s bytes belongs to the first class with s <= bound (0 bytes: the
 * first), none when s > bound[n-1].  peak[i] = the most objects live at once
 * in class i, in trace order (a realloc moves its object to the class of
 * the new size).  Flattens the plan.  Returns 0, or -1 (out of memory, or
 * n > 255). */
int rp_plan_class_peaks(rp_plan *p, const uint64_t *bound, unsigned n, uint64_t *peak);
void rp_plan_free(rp_plan *p);

/* ---- memory samples ---------------------------------------------------------- */
typedef struct rp_mem {
    int valid;
    uint64_t live;      /* live requested bytes when sampled (replay-side) */
    uint64_t footprint; /* allocator footprint: dmm = extent (carved bytes,
                           control block included); system: see backend */
    uint64_t used;      /* bytes in used blocks (headers included where the
                           allocator counts them) */
    uint64_t meta;      /* control / metadata bytes */
    uint64_t rss;       /* process VmRSS */
    uint64_t regions;   /* dmm: bytes of all regions (stats footprint) */
    int used_known, meta_known;
} rp_mem;

/* What a backend's memory figures mean (backends.c fills it in). */
typedef struct rp_mem_info {
    const char *footprint_source; /* how footprint is obtained */
    const char *used_source;      /* NULL: not known */
    const char *meta_source;      /* NULL: not known */
    /* 1: footprint and used are the allocator's own counts of the memory it
     * holds and hands out, so footprint >= used >= live always, and the
     * fragmentation ratios mean what they mean for a dmm heap.  0: footprint
     * is only the growth of a process-wide quantity (resident set, committed
     * memory) over the pass: reported under its own name, never as
     * fragmentation. */
    int exact;
    const char *kind;             /* "allocator", "rss_growth", "commit_growth" */
    /* meta is a part of footprint, so external waste = footprint - used -
     * meta (dmm).  0: meta is counted apart and only partly resident
     * (jemalloc stats.metadata), external waste = footprint - used. */
    int meta_in_footprint;
} rp_mem_info;

struct rp_backend_class;

/* An allocator as the engine sees it. */
typedef struct rp_backend {
    dmm_allocator a;
    const struct rp_backend_class *cls; /* the table entry that made it */
    const char *detected;               /* "dmm", "glibc", "jemalloc", ... */
    rp_mem_info mem;
    /* Memory snapshot (may be NULL).  Must be safe to call from a replay
     * thread while others allocate. */
    int (*sample)(struct rp_backend *b, rp_mem *m);
    /* Samples are reported as growth over a baseline taken just before the
     * replay starts: only for backends whose figure is process-wide and not
     * the allocator's own count (rp_mem_info.exact == 0: RSS, committed
     * memory).  An exact backend is never net of a baseline: memory the
     * allocator held free before the pass is memory it may hand to the
     * replay, and its thread caches count as used, so a difference could
     * fall below what the replay itself holds. */
    int subtract_baseline;
    /* Which trace thread the calling OS thread replays from now on (may be
     * NULL): called by each replay thread before its first operation, and
     * in a sequential replay before every operation whose trace thread
     * differs from the previous one (outside the timing brackets).  For
     * backends that serve threads differently (multiheap: home nodes). */
    void (*set_thread)(struct rp_backend *b, uint32_t thread);
    /* The arena was mapped without touching its pages (a default arena
     * clamped by the machine's memory: dmmb_map, rpb_default_arena). */
    int lazy_arena;
} rp_backend;

/* One point of a memory timeline (--timeline): after `op` operations (all
 * threads together), live requested bytes and the backend's sample. */
typedef struct rp_tl_point {
    uint64_t op, live, footprint, used;
    int used_known;
} rp_tl_point;

typedef struct rp_timeline {
    uint64_t every;         /* sample after every `every` operations */
    size_t cap, n;          /* points kept (sampling stops at cap) */
    rp_tl_point *pt;        /* from rp_big_alloc */
} rp_timeline;

typedef struct rp_pass_opts {
    int timing;        /* bracket every call with the TSC */
    uint64_t bracket;  /* empty-bracket cost subtracted from each sample */
    int verify;        /* pattern fill / check */
    int sample_mem;    /* memory samples at new live peaks */
    int stop_on_fail;  /* stop at the first failed allocation */
    int sequential;    /* replay p->flat in the calling thread */
    /* Optional extras (front-end pictures; both untimed, may be NULL): */
    rp_timeline *timeline;  /* periodic memory samples (needs sample_mem) */
    /* Called once, under the sample lock, when live bytes first reach the
     * trace's peak (with sample_mem); used for the heap map. */
    void (*on_trace_peak)(void *ctx, uint64_t live);
    void *peak_ctx;
    /* Called after every operation of a single-threaded or sequential pass
     * (may be NULL): the operation's 1-based index and the live requested
     * bytes after it; used for the heap map at worst fragmentation. */
    void (*on_op)(void *ctx, uint64_t op, uint64_t live);
    void *op_ctx;
} rp_pass_opts;

typedef struct rp_thread_result {
    rp_hist h[RK_COUNT];
    uint64_t failed, skipped, ops;
    uint64_t nivcsw, nvcsw; /* context switches while replaying (RUSAGE_THREAD) */
} rp_thread_result;

typedef struct rp_pass_result {
    uint64_t wall_ns;
    uint32_t nthr;             /* entries in thr */
    rp_thread_result *thr;
    rp_hist merged[RK_COUNT];
    uint64_t failed, skipped;
    uint64_t nivcsw, nvcsw;    /* summed over threads */
    uint64_t first_failed_index; /* trace index of the first failure (UINT64_MAX none) */
    int verify_failed;
    uint64_t verify_index;     /* trace index of the op where the check failed */
    char verify_msg[256];
    uint64_t run_peak_live;    /* peak live requested bytes seen in this run */
    rp_mem at_peak;            /* the sample taken at the highest live */
    rp_mem peak;               /* per-field maximum over all samples */
    rp_mem end;                /* after the last op, before cleanup */
    rp_mem baseline;           /* before the first op (subtracted when the
                                  backend asks for it) */
    uint64_t samples, sample_ns;
    int oom;                   /* the engine itself ran out of memory */
} rp_pass_result;

int rp_run_pass(const rp_plan *p, rp_backend *b, const rp_pass_opts *o, rp_pass_result *r);
void rp_pass_result_free(rp_pass_result *r);

/* Zero-filled buffers from mmap (not malloc), freed with rp_big_free. */
void *rp_big_alloc(size_t bytes);
void rp_big_free(void *p);

/* Minimum over many runs of an empty timing bracket, in clock units. */
uint64_t rp_calibrate_bracket(void);
/* Clock ticks per second: the TSC frequency estimated against
 * CLOCK_MONOTONIC between rp_ticks_mark() at the start of a replay and
 * rp_ticks_per_sec() at its end (the passes themselves are the calibration
 * interval; only a replay shorter than RP_TPS_MIN_NS sleeps for the rest,
 * after its passes).  1e9 for the nanosecond fallback clock. */
typedef struct {
    uint64_t ns, ticks;
} rp_tick_mark;
#define RP_TPS_MIN_NS 10000000ull
void rp_ticks_mark(rp_tick_mark *m);
double rp_ticks_per_sec(const rp_tick_mark *start);

/* Physical memory of the machine in bytes (0 if unknown). */
uint64_t rp_phys_bytes(void);

/* VmRSS / VmHWM of this process in bytes (0 if unknown). */
uint64_t rp_rss_bytes(void);
uint64_t rp_hwm_bytes(void);

#endif
