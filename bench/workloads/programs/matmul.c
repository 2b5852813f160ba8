/*
 * bench/workloads/programs/matmul.c - tiled matrix multiplication of an
 * input matrix by a constant matrix, with the P2012 master-worker
 * allocation shape (seed 001's Matrix kernel: many blocks of one size).
 *
 *   matmul [-n 128] [-T 8] [--workers 16] [--threads 0] [--runs 1] [--seed S]
 *
 * One run (C = A x K, n x n floats with small integer values, so the result
 * is exact):
 *   master: application descriptor, a job table (16 bytes per job, at
 *           least 2 KiB), a 48-byte descriptor per worker, and per output
 *           tile the C tile (T*T floats: 256 bytes for T = 8);
 *   jobs:   one per output tile: for each of the n/T steps the kernel
 *           allocates an A tile and a K tile (T*T floats each), copies them
 *           in (the DMA), multiplies-accumulates, frees both;
 *   master: copies the C tiles out; each worker's share (tiles w, w+P,
 *           w+2P, ...) is released worker by worker, so frees interleave
 *           across the allocation order; then the descriptors, the job
 *           table, the application descriptor.
 * Check: a naive product must be identical.
 */
#include "kernel_common.h"

typedef struct job {
    uint32_t ti, tj;
    uint32_t worker, done;
} job;

typedef struct wdesc {
    uint64_t id, jobs, flops;
    unsigned char pad[24];
} wdesc;

typedef struct ctx {
    size_t n, t, nt;
    const float *a, *k;
    float **c;
    job *jobs;
    wdesc **wd;
    unsigned nworkers;
} ctx;

static void tile_job(void *vc, size_t j, unsigned worker)
{
    ctx *c = vc;
    size_t t = c->t, n = c->n;
    size_t ti = c->jobs[j].ti, tj = c->jobs[j].tj;
    float *ct = c->c[j];
    wdesc *wd = c->wd[worker % c->nworkers];
    for (size_t i = 0; i < t * t; i++)
        ct[i] = 0;
    for (size_t tk = 0; tk < c->nt; tk++) {
        float *at = xmalloc(t * t * sizeof *at), *kt = xmalloc(t * t * sizeof *kt);
        for (size_t r = 0; r < t; r++) {
            memcpy(at + r * t, c->a + (ti * t + r) * n + tk * t, t * sizeof *at);
            memcpy(kt + r * t, c->k + (tk * t + r) * n + tj * t, t * sizeof *kt);
        }
        for (size_t r = 0; r < t; r++)
            for (size_t q = 0; q < t; q++) {
                float aq = at[r * t + q];
                for (size_t col = 0; col < t; col++)
                    ct[r * t + col] += aq * kt[q * t + col];
            }
        free(kt);
        free(at);
    }
    c->jobs[j].worker = worker;
    c->jobs[j].done = 1;
    wd->jobs++;
    wd->flops += 2 * (uint64_t)t * t * t * c->nt;
}

int main(int argc, char **argv)
{
    uint64_t n = 128, t = 8, workers = 16, threads = 0, runs = 1, seed = 1;
    prog_opt opts[] = {
        {"-n", "--size", &n, 1, 4096, "matrix side (a multiple of the tile side)"},
        {"-T", "--tile", &t, 1, 256, "tile side"},
        {NULL, "--workers", &workers, 1, 1024, "worker processors (descriptors)"},
        {NULL, "--threads", &threads, 0, 256, "threads running the jobs (0 = the master)"},
        {NULL, "--runs", &runs, 1, 1u << 16, "application runs, back to back"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed (input matrix)"},
    };
    prog_sum s;
    uint64_t flops = 0;

    prog_parse(argc, argv, "Tiled C = A x K; per step the kernel allocates two tiles of one size.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    if (n % t)
        prog_die(2, "--size (%" PRIu64 ") must be a multiple of --tile (%" PRIu64 ")", n, t);
    if (threads > workers)
        prog_die(2, "--threads (%" PRIu64 ") must not exceed --workers (%" PRIu64 ")", threads, workers);
    sum_init(&s);
    for (uint64_t run = 0; run < runs; run++) {
        prog_rng r;
        ctx c;
        float *a = xmalloc(n * n * sizeof *a), *k = xmalloc(n * n * sizeof *k), *res, *ref;
        unsigned char *app;
        size_t njobs, table_bytes;
        rng_seed(&r, seed + run);
        for (size_t i = 0; i < n * n; i++)
            a[i] = (float)rng_below(&r, 16);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                k[i * n + j] = (float)((int)((i * 7 + j * 3) % 5) - 2);

        app = xcalloc(1, RT_APP_BYTES); /* calloc, not malloc + memset: see kernel_common.h */
        c.n = n;
        c.t = t;
        c.nt = n / t;
        c.a = a;
        c.k = k;
        c.nworkers = (unsigned)workers;
        njobs = c.nt * c.nt;
        table_bytes = njobs * sizeof(job) > 2048 ? njobs * sizeof(job) : 2048;
        c.jobs = xmalloc(table_bytes);
        c.wd = xmalloc(workers * sizeof *c.wd);
        for (unsigned i = 0; i < workers; i++) {
            c.wd[i] = xcalloc(1, sizeof **c.wd);
            c.wd[i]->id = i;
        }
        c.c = xmalloc(njobs * sizeof *c.c);
        for (size_t j = 0; j < njobs; j++) {
            c.jobs[j].ti = (uint32_t)(j / c.nt);
            c.jobs[j].tj = (uint32_t)(j % c.nt);
            c.jobs[j].worker = 0;
            c.jobs[j].done = 0;
            c.c[j] = xmalloc(t * t * sizeof **c.c);
        }
        prog_run_jobs(tile_job, &c, njobs, (unsigned)threads);

        res = xmalloc(n * n * sizeof *res);
        for (size_t j = 0; j < njobs; j++)
            for (size_t rr = 0; rr < t; rr++)
                memcpy(res + (c.jobs[j].ti * t + rr) * n + c.jobs[j].tj * t, c.c[j] + rr * t, t * sizeof *res);
        /* each worker releases its share */
        for (size_t wi = 0; wi < workers; wi++)
            for (size_t j = wi; j < njobs; j += workers)
                free(c.c[j]);
        ref = xmalloc(n * sizeof *ref);
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < n; j++) {
                float acc = 0;
                for (size_t q = 0; q < n; q++)
                    acc += a[i * n + q] * k[q * n + j];
                ref[j] = acc;
            }
            if (memcmp(ref, res + i * n, n * sizeof *ref) != 0)
                prog_die(1, "self-check: row %zu of the product differs", i);
        }
        free(ref);
        for (size_t i = 0; i < n * n; i++)
            sum_u64(&s, (uint64_t)(int64_t)res[i]);
        for (unsigned i = 0; i < workers; i++) {
            flops += c.wd[i]->flops;
            free(c.wd[i]);
        }
        free(c.wd);
        free(c.jobs);
        free(c.c);
        free(app);
        free(res);
        free(k);
        free(a);
    }
    printf("matmul n=%" PRIu64 " tile=%" PRIu64 " workers=%" PRIu64 " threads=%" PRIu64 " runs=%" PRIu64
           " seed=%" PRIu64 ": tiles=%" PRIu64 " kernel_tile_allocs=%" PRIu64 " flops=%" PRIu64 "\n",
           n, t, workers, threads, runs, seed, (n / t) * (n / t), 2 * (n / t) * (n / t) * (n / t) * runs, flops);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}
