/*
 * bench/workloads/workload.h - deterministic synthetic allocation workloads.
 *
 * A workload is an in-memory list of operations on object ids, in the
 * spirit of the CS:APP malloc-lab format:
 *     a <id> <size>     allocate object <id> of <size> bytes
 *     r <id> <size>     resize object <id> to <size> bytes
 *     f <id>            free object <id>
 * Naming objects instead of addresses keeps a workload replayable on any
 * allocator.  Every generator is seeded and uses only integer arithmetic,
 * so the same (name, seed) gives the same list on every platform.
 *
 * These workloads are SYNTHETIC SHAPES, not recorded traces: see
 * bench/workloads/README.md for the shape each one models and why.
 *
 * Benchmark code, hosted C11 (uses malloc and stdio).
 */
#ifndef DMM_BENCH_WORKLOAD_H
#define DMM_BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wl_kind {
    WL_ALLOC = 0,
    WL_FREE = 1,
    WL_REALLOC = 2
} wl_kind;

typedef struct wl_op {
    uint32_t kind; /* wl_kind */
    uint32_t id;   /* object id, 0 .. n_ids-1 */
    uint32_t size; /* bytes (alloc, realloc); 0 for free */
} wl_op;

typedef struct wl_trace {
    char name[40];
    uint64_t seed;
    wl_op *ops;
    size_t n_ops;
    size_t cap;
    uint32_t n_ids;          /* ids used are 0 .. n_ids-1 */
    int error;               /* set by the builders when memory ran out */

    /* Filled by wl_analyse(). */
    size_t n_alloc, n_free, n_realloc;
    size_t peak_live;        /* most requested bytes live at once */
    size_t peak_index;       /* index of the op after which peak_live is
                                first reached */
    size_t peak_objects;     /* most objects live at once */
    size_t max_size;         /* largest single request */
    size_t total_requested;  /* sum of alloc + realloc sizes */
} wl_trace;

typedef int (*wl_gen_fn)(wl_trace *t, uint64_t seed);

typedef struct wl_info {
    const char *name;
    const char *group;   /* "p2012", "p2012-random-free", "p2012-repeated",
                            "stress", "general" */
    const char *summary; /* one line */
    wl_gen_fn gen;
} wl_info;

/* The bundled workloads, in a fixed order. */
size_t wl_count(void);
const wl_info *wl_get(size_t i);
const wl_info *wl_find(const char *name); /* NULL if unknown */

/* Default seed used by the benchmark (any seed is valid). */
#define WL_DEFAULT_SEED 0x5eed2012u

/* Generates workload `name` with `seed` into *t (which must be zeroed or
 * released).  Returns 0, or -1 (unknown name, out of memory, or a generator
 * bug caught by wl_validate). */
int wl_generate(const char *name, uint64_t seed, wl_trace *t);

/* Appends one op (kind, id, size) to t, growing its list; sets t->error and
 * drops the op when memory runs out.  For generators outside workload.c. */
void wl_push(wl_trace *t, uint32_t kind, uint32_t id, uint32_t size);

/* Releases the op list. */
void wl_release(wl_trace *t);

/* Checks that the list is well formed: every id is allocated before it is
 * freed or resized, never allocated twice while live, never freed twice, all
 * sizes > 0.  Returns 0 if well formed, else the index of the first bad op
 * plus one. */
size_t wl_validate(const wl_trace *t);

/* Recomputes the counters and the peak figures of t. */
void wl_analyse(wl_trace *t);

/* The seed's section-5.3 transformation: keep the order and the sizes of the
 * allocations (and resizes), drop every free, and redraw each object's free
 * point uniformly between its last alloc/realloc and the end of the list.
 * Objects never freed in `in` stay unfreed.  Returns 0 or -1 (no memory). */
int wl_randomize_frees(const wl_trace *in, uint64_t seed, wl_trace *out);

/* Writes the text form ("a id size" / "r id size" / "f id", one per line,
 * after a "# dmmkit workload <name> seed <seed>" comment).  Returns 0 or -1. */
int wl_write_text(const wl_trace *t, FILE *f);

/* ---- deterministic random numbers (splitmix64) ----------------------- */

typedef struct wl_rng {
    uint64_t s;
} wl_rng;

void wl_rng_seed(wl_rng *r, uint64_t seed);
uint64_t wl_rng_next(wl_rng *r);
/* Uniform in [0, n); n > 0.  Uses rejection, so no modulo bias. */
uint64_t wl_rng_below(wl_rng *r, uint64_t n);
/* Uniform in [lo, hi]; lo <= hi. */
uint64_t wl_rng_range(wl_rng *r, uint64_t lo, uint64_t hi);
/* Approximately log-uniform in [lo, hi]: a uniformly chosen octave, then a
 * uniform value inside it (clipped to the range).  lo >= 1. */
uint64_t wl_rng_logu(wl_rng *r, uint64_t lo, uint64_t hi);

#ifdef __cplusplus
}
#endif
#endif /* DMM_BENCH_WORKLOAD_H */
