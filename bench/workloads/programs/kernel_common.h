/*
 * bench/workloads/programs/kernel_common.h - what the four seed-001 kernels
 * (integral, gaussian, fast, matmul) share: a synthetic 8-bit image and the
 * P2012 runtime's allocation shape around the kernel.
 *
 * The P2012 runtime (seed 001, section 3) runs the allocator on the cluster
 * controller: before the tasks start it allocates an application
 * descriptor, a task descriptor and a stack per worker processor and the
 * data buffers; after the tasks end it frees them in phases.  rt_start()
 * and rt_stop() reproduce the descriptor/stack part (the stacks are used:
 * a worker's scratch data lives in its stack block), each kernel the
 * buffers.  Options common to all four:
 *   --workers P   logical worker processors (descriptors and stacks), 16
 *   --threads T   POSIX threads that execute the jobs; 0 (default) = the
 *                 master runs every job itself, in order, like the single
 *                 allocating controller; T > 0 = workers allocate their
 *                 per-job records themselves and the master frees them
 *                 (cross-thread frees)
 */
#ifndef DMM_KERNEL_COMMON_H
#define DMM_KERNEL_COMMON_H

#include "prog_common.h"

#define RT_APP_BYTES 64
#define RT_TASK_BYTES 96
#define RT_STACK_BYTES 2048

typedef struct rt_worker {
    unsigned char *task;  /* task descriptor (RT_TASK_BYTES) */
    unsigned char *stack; /* stack (RT_STACK_BYTES): per-worker scratch */
} rt_worker;

typedef struct rt {
    unsigned char *app; /* application descriptor */
    rt_worker *w;       /* the worker table (one allocation) */
    unsigned nworkers;
} rt;

static inline void rt_start(rt *r, unsigned nworkers)
{
    /* zeroed memory is asked for with calloc: a compiler may turn
     * malloc + memset(0) into calloc, which would make the recorded
     * operation depend on the optimisation level */
    r->app = xcalloc(1, RT_APP_BYTES);
    r->nworkers = nworkers;
    r->w = xmalloc(nworkers * sizeof *r->w);
    for (unsigned i = 0; i < nworkers; i++) {
        r->w[i].task = xmalloc(RT_TASK_BYTES);
        memset(r->w[i].task, (int)i, RT_TASK_BYTES);
        r->w[i].stack = xmalloc(RT_STACK_BYTES);
    }
}

/* Frees the tasks and stacks (the first free phase). */
static inline void rt_stop_workers(rt *r)
{
    for (unsigned i = 0; i < r->nworkers; i++) {
        free(r->w[i].task);
        free(r->w[i].stack);
    }
    free(r->w);
    r->w = NULL;
}

static inline void rt_stop(rt *r) { free(r->app); }

/* A synthetic grey image: a smooth gradient, bright and dark rectangles
 * (corners for FAST) and light noise; deterministic for a seed. */
static inline unsigned char *make_image(size_t w, size_t h, uint64_t seed)
{
    unsigned char *img = xmalloc(w * h);
    prog_rng r;
    size_t nrect = (w * h) / 2048 + 4;
    rng_seed(&r, seed ^ 0x1A2B3C4Du);
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++)
            img[y * w + x] = (unsigned char)(40 + (x * 60) / (w ? w : 1) + (y * 40) / (h ? h : 1));
    for (size_t k = 0; k < nrect; k++) {
        size_t rw = 3 + (size_t)rng_below(&r, 24), rh = 3 + (size_t)rng_below(&r, 24);
        size_t x0 = (size_t)rng_below(&r, w), y0 = (size_t)rng_below(&r, h);
        unsigned char v = (unsigned char)(rng_below(&r, 2) ? 200 + rng_below(&r, 55) : rng_below(&r, 30));
        for (size_t y = y0; y < y0 + rh && y < h; y++)
            for (size_t x = x0; x < x0 + rw && x < w; x++)
                img[y * w + x] = v;
    }
    for (size_t i = 0; i < w * h; i++) {
        int v = img[i] + (int)rng_below(&r, 7) - 3;
        img[i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    return img;
}

#endif
