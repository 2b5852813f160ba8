/*
 * bench/multiheap/mh_threads.c - the multi-heap on real threads (issue 12):
 * throughput of the lazy multi-heap (locked and queued remote frees) against
 * the centralised heap (one dmm heap behind one lock, the same framework) and
 * the process's malloc, with 1..8 threads.
 *
 * Workload per thread: a table of 256 slots; each step picks a slot, frees
 * what is there (or hands it to another thread, one step in ten, through
 * that thread's mailbox: a cross-node free) and allocates 16..512 bytes into
 * it, touching the first and last byte.  Each thread's home node is its
 * index modulo the node count; the multi-heap has one node per thread
 * (at least 4).  The allocators run interleaved, repetition by repetition,
 * in one process; the figures are million operations (alloc + free) per
 * second of wall time, median and best over the repetitions, and per second
 * of the workers' CPU time (summed), median: on a machine shared with other
 * load the wall-time median moves with it, the CPU-time rate much less.
 *
 * Columns: the seed's design (lazy, remote frees under the owner's lock, no
 * home cache); lazy with queued remote frees and no cache; the default
 * configuration (dmm_mh_default_config: queued remote frees, a home cache of
 * --cache blocks per size class, tlsf node heaps as shipped, hardened); the
 * default with lean node heaps (tlsf with stats and hardening off); the
 * centralised heap; malloc.
 *
 *   mh_threads [--threads 1,2,4,8] [--steps N] [--reps R]
 *              [--cache N] [--only KEY] [--json FILE]
 *
 * --only KEY runs one column (lazy, lazy_queue, default, lean, central,
 * malloc), e.g. under callgrind to count instructions per operation.
 *
 * The machine may have fewer cores than threads: runs beyond the core count
 * measure contention, not scaling (the output says how many cores there are).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmm/multiheap.h"

#define SLOTS 256
#define MAXT 64
#define BOX 1024

enum { A_LAZY, A_LAZY_QUEUE, A_DEFAULT, A_LEAN, A_CENTRAL, A_MALLOC, A_COUNT };
static const char *const a_name[A_COUNT] = {
    "multiheap seed design (locked free, no cache)", "multiheap queued free, no cache", "multiheap default",
    "multiheap default, lean node heaps", "dmm central heap (one lock)", "malloc (glibc)"};
static const char *const a_key[A_COUNT] = {"lazy", "lazy_queue", "default", "lean", "central", "malloc"};

/* The default and lean columns' home cache (blocks per size class). */
static unsigned cache_blocks = DMM_MH_DEFAULT_HOME_CACHE;

typedef struct mailbox {
    atomic_flag lock;
    unsigned n;
    void *p[BOX];
} mailbox;

typedef struct run {
    int alloc;
    unsigned threads;
    long steps;
    dmm_mh *mh;
    mailbox box[MAXT];
    atomic_int start;
} run;

typedef struct targ {
    run *r;
    unsigned id;
    double cpu_s; /* the worker's CPU time after the start flag */
} targ;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *a_malloc(run *r, unsigned home, size_t n)
{
    return r->alloc == A_MALLOC ? malloc(n) : dmm_mh_malloc(r->mh, home, n);
}

static void a_free(run *r, unsigned home, void *p)
{
    if (r->alloc == A_MALLOC)
        free(p);
    else
        dmm_mh_free(r->mh, home, p);
}

static void box_lock(mailbox *b)
{
    while (atomic_flag_test_and_set_explicit(&b->lock, memory_order_acquire))
        ;
}

static void *worker(void *arg)
{
    targ *t = arg;
    run *r = t->r;
    unsigned id = t->id, home = id;
    void *slot[SLOTS] = {0};
    uint64_t x = 0x9E3779B97F4A7C15ull * (id + 1);
    while (!atomic_load(&r->start))
        ;
    double cpu0 = thread_cpu_s();
    for (long s = 0; s < r->steps; s++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned k = (unsigned)(x % SLOTS);
        if (slot[k]) {
            unsigned to = (unsigned)((x >> 20) % r->threads);
            mailbox *b = &r->box[to];
            int handed = 0;
            if (r->threads > 1 && (x >> 40) % 10 == 0 && to != id) {
                box_lock(b);
                if (b->n < BOX) {
                    b->p[b->n++] = slot[k];
                    handed = 1;
                }
                atomic_flag_clear_explicit(&b->lock, memory_order_release);
            }
            if (!handed)
                a_free(r, home, slot[k]);
        }
        size_t n = 16 + (size_t)((x >> 32) % 497);
        unsigned char *p = a_malloc(r, home, n);
        if (p) {
            p[0] = (unsigned char)s;
            p[n - 1] = (unsigned char)s;
        }
        slot[k] = p;
        if ((s & 63) == 0) { /* free what others handed to us */
            mailbox *b = &r->box[id];
            box_lock(b);
            for (unsigned i = 0; i < b->n; i++)
                a_free(r, home, b->p[i]);
            b->n = 0;
            atomic_flag_clear_explicit(&b->lock, memory_order_release);
        }
    }
    for (unsigned k = 0; k < SLOTS; k++)
        if (slot[k])
            a_free(r, home, slot[k]);
    t->cpu_s = thread_cpu_s() - cpu0;
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One measured run: Mops/s, or -1 on failure. */
/* Million operations per second of wall time; *per_cpu: per second of the
 * workers' CPU time (summed), which preemption by other load does not
 * dilute. */
static double one_run(int alloc, unsigned threads, long steps, size_t per_node, double *per_cpu)
{
    static run r;
    memset(&r, 0, sizeof r);
    r.alloc = alloc;
    r.threads = threads;
    r.steps = steps;
    for (unsigned i = 0; i < MAXT; i++)
        atomic_flag_clear(&r.box[i].lock);
    void *mem = NULL;
    unsigned nodes = threads < 4 ? 4 : threads;
    if (alloc != A_MALLOC) {
        dmm_mh_config c = dmm_mh_default_config(nodes); /* the default column as it is */
        if (alloc == A_LAZY || alloc == A_LAZY_QUEUE || alloc == A_CENTRAL) {
            c.remote_free = alloc == A_LAZY_QUEUE ? DMM_MH_FREE_QUEUE : DMM_MH_FREE_LOCKED;
            c.home_cache = 0;
        } else {
            c.home_cache = cache_blocks;
        }
        if (alloc == A_CENTRAL)
            c.policy = DMM_MH_CENTRAL;
        if (alloc == A_LEAN) {
            c.heap.stats = DMM_STATS_OFF;
            c.heap.harden = DMM_HARDEN_OFF;
        }
        size_t bytes = dmm_mh_buffer_size(&c, per_node);
        mem = malloc(bytes);
        if (!mem)
            return -1;
        memset(mem, 0, bytes); /* prefault: no page faults inside the timing */
        if (dmm_mh_init(&r.mh, mem, bytes, &c) != DMM_OK) {
            free(mem);
            return -1;
        }
    }
    pthread_t th[MAXT];
    targ ta[MAXT];
    for (unsigned i = 0; i < threads; i++) {
        ta[i].r = &r;
        ta[i].id = i;
        pthread_create(&th[i], NULL, worker, &ta[i]);
    }
    double t0 = now_s();
    atomic_store(&r.start, 1);
    for (unsigned i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double t = now_s() - t0, cpu = 0;
    for (unsigned i = 0; i < threads; i++)
        cpu += ta[i].cpu_s;
    for (unsigned i = 0; i < threads; i++) /* leftovers in mailboxes */
        for (unsigned k = 0; k < r.box[i].n; k++)
            a_free(&r, i, r.box[i].p[k]);
    int ok = 1;
    if (r.mh) {
        const char *d = NULL;
        ok = dmm_mh_check(r.mh, &d) == DMM_OK;
        if (!ok)
            fprintf(stderr, "mh_threads: check failed: %s\n", d);
        dmm_mh_destroy(r.mh);
        free(mem);
    }
    *per_cpu = cpu > 0 ? (2.0 * (double)steps * threads) / cpu / 1e6 : 0;
    return ok ? (2.0 * (double)steps * threads) / t / 1e6 : -1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    unsigned tl[16] = {1, 2, 4, 8}, nt = 4;
    long steps = 200000;
    int reps = 5;
    const char *json = NULL;
    int only = -1; /* --only KEY: run one column (for profiling) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            nt = 0;
            for (char *s = argv[++i]; *s && nt < 16;) {
                long v = strtol(s, &s, 10);
                if (v < 1 || v > MAXT) {
                    fprintf(stderr, "mh_threads: thread counts must be 1..%d\n", MAXT);
                    return 2;
                }
                tl[nt++] = (unsigned)v;
                if (*s == ',')
                    s++;
                else if (*s) {
                    fprintf(stderr, "mh_threads: bad --threads list\n");
                    return 2;
                }
            }
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            i++;
            for (int a = 0; a < A_COUNT; a++)
                if (!strcmp(argv[i], a_key[a]))
                    only = a;
            if (only < 0) {
                fprintf(stderr, "mh_threads: --only takes lazy, lazy_queue, default, lean, central or malloc\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--cache") && i + 1 < argc) {
            cache_blocks = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json = argv[++i];
        } else {
            fprintf(stderr, "usage: mh_threads [--threads 1,2,4,8] [--steps N] [--reps R] [--cache N] "
                            "[--only KEY] [--json FILE]\n");
            return 2;
        }
    }
    if (steps < 1 || reps < 1 || reps > 101) {
        fprintf(stderr, "mh_threads: --steps must be >= 1 and --reps 1..101\n");
        return 2;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t per_node = 4u << 20;
    static double res[16][A_COUNT][101], rcpu[16][A_COUNT][101];
    for (unsigned ti = 0; ti < nt; ti++)
        for (int rep = 0; rep < reps; rep++)
            for (int a = 0; a < A_COUNT; a++) {
                int aa = (a + rep) % A_COUNT; /* rotate the order per repetition */
                if (only >= 0 && aa != only) {
                    res[ti][aa][rep] = rcpu[ti][aa][rep] = 0;
                    continue;
                }
                res[ti][aa][rep] = one_run(aa, tl[ti], steps, per_node, &rcpu[ti][aa][rep]);
                if (res[ti][aa][rep] < 0) {
                    fprintf(stderr, "mh_threads: %s failed at %u threads\n", a_name[aa], tl[ti]);
                    return 1;
                }
            }
    double med[16][A_COUNT], mcpu[16][A_COUNT];
    for (unsigned ti = 0; ti < nt; ti++)
        for (int a = 0; a < A_COUNT; a++) {
            qsort(res[ti][a], (size_t)reps, sizeof(double), cmp_d);
            med[ti][a] = res[ti][a][reps / 2];
            qsort(rcpu[ti][a], (size_t)reps, sizeof(double), cmp_d);
            mcpu[ti][a] = rcpu[ti][a][reps / 2];
        }
    printf("# Multi-heap on real threads (bench/multiheap/mh_threads.c)\n\n");
    printf("Million operations (malloc + free) per second, median of %d interleaved repetitions of %ld steps per "
           "thread; one node per thread (at least 4), 4 MiB per node; this machine has %ld cores, so runs with "
           "more threads measure contention, not scaling.\n\n",
           reps, steps, cores);
    printf("Default: dmm_mh_default_config (lazy, queued remote frees, a home cache of %u blocks per size class, "
           "tlsf node heaps as shipped: checked hardening, counters). Lean: the same with the node heaps' stats and "
           "hardening off. The seed design (remote frees under the owner's lock), queued-free and central columns "
           "run without a home cache, node heaps as shipped.\n\n",
           cache_blocks);
    double best[16][A_COUNT];
    for (unsigned ti = 0; ti < nt; ti++)
        for (int a = 0; a < A_COUNT; a++)
            best[ti][a] = res[ti][a][reps - 1];
    for (int t = 0; t < 3; t++) {
        double(*m)[A_COUNT] = t == 2 ? mcpu : t ? best : med;
        if (t == 1)
            printf("\nThe fastest repetition of each (other load on the machine only slows a run down):\n\n");
        if (t == 2)
            printf("\nMillion operations per second of the worker threads' CPU time (CLOCK_THREAD_CPUTIME_ID, "
                   "summed over the workers, from the start flag to their last free), median of the same "
                   "repetitions: time a worker spends preempted by other load is not counted, its waits for "
                   "locks held by a preempted thread are (spinning).\n\n");
        printf("| threads |");
        for (int a = 0; a < A_COUNT; a++)
            printf(" %s |", a_name[a]);
        printf(" default / malloc | lean / malloc | default / central |\n|---:|");
        for (int a = 0; a < A_COUNT + 3; a++)
            printf("---:|");
        printf("\n");
        for (unsigned ti = 0; ti < nt; ti++) {
            printf("| %u |", tl[ti]);
            for (int a = 0; a < A_COUNT; a++)
                printf(" %.1f |", m[ti][a]);
            printf(" %.2fx | %.2fx | %.2fx |\n", m[ti][A_DEFAULT] / m[ti][A_MALLOC], m[ti][A_LEAN] / m[ti][A_MALLOC],
                   m[ti][A_DEFAULT] / m[ti][A_CENTRAL]);
        }
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\"schema\":\"dmm-mh-threads/1\",\"cores\":%ld,\"steps\":%ld,\"reps\":%d,\"per_node\":%zu,"
                   "\"default\":{\"remote_free\":\"queue\",\"home_cache\":%u,\"node_heap\":\"tlsf as shipped\"},"
                   "\"unit\":\"Mops/s (malloc+free), median\",\"rows\":[",
                steps > 0 ? cores : 0, steps, reps, per_node, cache_blocks);
        for (unsigned ti = 0; ti < nt; ti++) {
            fprintf(f, "%s{\"threads\":%u", ti ? "," : "", tl[ti]);
            for (int a = 0; a < A_COUNT; a++) {
                fprintf(f, ",\"%s\":{\"median\":%.3f,\"best\":%.3f,\"runs\":[", a_key[a], med[ti][a],
                        best[ti][a]);
                for (int rep = 0; rep < reps; rep++)
                    fprintf(f, "%s%.3f", rep ? "," : "", res[ti][a][rep]);
                fprintf(f, "],\"per_cpu_s_median\":%.3f,\"per_cpu_s_runs\":[", mcpu[ti][a]);
                for (int rep = 0; rep < reps; rep++)
                    fprintf(f, "%s%.3f", rep ? "," : "", rcpu[ti][a][rep]);
                fprintf(f, "]}");
            }
            fprintf(f, "}");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    return 0;
}
