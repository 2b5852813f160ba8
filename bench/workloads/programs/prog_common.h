/*
 * bench/workloads/programs/prog_common.h - the little each workload program
 * shares: option parsing, a seeded PRNG, a checksum, checked malloc, and a
 * master-worker runner.  Header-only, hosted C11 + POSIX threads.
 *
 * Every program allocates through plain malloc/calloc/realloc/free (called
 * so that the compiler cannot elide or merge them, see xmalloc) so the
 * LD_PRELOAD recorder (scripts/record.sh) sees exactly what it does, prints
 * one "checksum=<16 hex digits>" line (plus a few figures) to stdout, and is
 * deterministic for a given --seed and size.  Exit status 0, or 2 on bad
 * usage, 1 on a failed self-check or out of memory.
 */
#ifndef DMM_PROG_COMMON_H
#define DMM_PROG_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

/* ---- errors, checked allocation ------------------------------------------ */

static const char *prog_name = "prog";

_Noreturn static inline void prog_die(int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/*
 * The allocation functions are called through volatile pointers so the
 * compiler cannot treat them as the builtins: otherwise it may drop a
 * malloc/free pair whose memory it can prove unused, keep a small block on
 * the stack, or fuse malloc + memset(0) into calloc, and the recorded trace
 * would depend on the compiler and the optimisation level (gcc -O2 and
 * clang -O2 gave different traces before this).
 */
static void *(*volatile prog_malloc_fn)(size_t) = malloc;
static void *(*volatile prog_calloc_fn)(size_t, size_t) = calloc;
static void *(*volatile prog_realloc_fn)(void *, size_t) = realloc;

static inline void *xmalloc(size_t n)
{
    void *p = prog_malloc_fn(n ? n : 1);
    if (!p)
        prog_die(1, "out of memory (malloc %zu)", n);
    return p;
}

static inline void *xcalloc(size_t n, size_t sz)
{
    void *p = prog_calloc_fn(n ? n : 1, sz ? sz : 1);
    if (!p)
        prog_die(1, "out of memory (calloc %zu x %zu)", n, sz);
    return p;
}

static inline void *xrealloc(void *q, size_t n)
{
    void *p = prog_realloc_fn(q, n ? n : 1);
    if (!p)
        prog_die(1, "out of memory (realloc %zu)", n);
    return p;
}

/* ---- options --------------------------------------------------------------- */

/* Parses an unsigned number with an optional k/m/g suffix (powers of 1024). */
static inline uint64_t prog_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-')
        prog_die(2, "option %s needs a non-negative number", opt);
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s)
        prog_die(2, "option %s: '%s' is not a number", opt, s);
    if (*end == 'k' || *end == 'K')
        v = v > ULLONG_MAX / 1024 ? ULLONG_MAX : v * 1024, end++;
    else if (*end == 'm' || *end == 'M')
        v = v > ULLONG_MAX / 1048576 ? ULLONG_MAX : v * 1048576, end++;
    else if (*end == 'g' || *end == 'G')
        v = v > ULLONG_MAX / 1073741824 ? ULLONG_MAX : v * 1073741824, end++;
    if (*end)
        prog_die(2, "option %s: '%s' is not a number", opt, s);
    if (v < min || v > max)
        prog_die(2, "option %s: %s is out of range [%" PRIu64 ", %" PRIu64 "]", opt, s, min, max);
    return (uint64_t)v;
}

/* A table-driven option parser: every option takes one numeric value. */
typedef struct prog_opt {
    const char *short_name; /* "-n" */
    const char *long_name;  /* "--nodes" */
    uint64_t *value;
    uint64_t min, max;
    const char *help;
} prog_opt;

static inline void prog_usage(FILE *f, const char *synopsis, const prog_opt *opts, size_t n)
{
    fprintf(f, "usage: %s [options]\n%s\n", prog_name, synopsis);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-4s %-14s %s (default %" PRIu64 ")\n", opts[i].short_name ? opts[i].short_name : "",
                opts[i].long_name, opts[i].help, *opts[i].value);
    fprintf(f, "  -h   --help         this text\n");
}

/* Parses argv; flags (options without a value) are matched in `flags`:
 * each entry's name sets *flag_vals[i] = 1. */
static inline void prog_parse(int argc, char **argv, const char *synopsis, const prog_opt *opts, size_t n,
                       const char *const *flags, int *const *flag_vals, size_t nflags)
{
    const char *slash = strrchr(argv[0], '/');
    prog_name = slash ? slash + 1 : argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        size_t k;
        int done = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            prog_usage(stdout, synopsis, opts, n);
            exit(0);
        }
        for (k = 0; k < nflags && !done; k++)
            if (!strcmp(a, flags[k])) {
                *flag_vals[k] = 1;
                done = 1;
            }
        for (k = 0; k < n && !done; k++) {
            const char *name = NULL, *val = NULL;
            size_t ll = strlen(opts[k].long_name);
            if (opts[k].short_name && !strcmp(a, opts[k].short_name))
                name = a;
            else if (!strcmp(a, opts[k].long_name))
                name = a;
            else if (!strncmp(a, opts[k].long_name, ll) && a[ll] == '=')
                name = a, val = a + ll + 1;
            if (!name)
                continue;
            if (!val) {
                if (i + 1 >= argc)
                    prog_die(2, "option %s needs a value", a);
                val = argv[++i];
            }
            *opts[k].value = prog_parse_u64(opts[k].long_name, val, opts[k].min, opts[k].max);
            done = 1;
        }
        if (!done) {
            fprintf(stderr, "%s: unknown option '%s'\n", prog_name, a);
            prog_usage(stderr, synopsis, opts, n);
            exit(2);
        }
    }
}

/* ---- randomness and checksums ---------------------------------------------- */

typedef struct prog_rng {
    uint64_t s;
} prog_rng;

static inline void rng_seed(prog_rng *r, uint64_t seed) { r->s = seed ^ 0x5DEECE66DA3B9F11ull; }

static inline uint64_t rng_next(prog_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias (n > 0). */
static inline uint64_t rng_below(prog_rng *r, uint64_t n)
{
    uint64_t lim, x;
    if (n <= 1)
        return 0;
    lim = UINT64_MAX - UINT64_MAX % n;
    do
        x = rng_next(r);
    while (x >= lim);
    return x % n;
}

typedef struct prog_sum {
    uint64_t h;
} prog_sum;

static inline void sum_init(prog_sum *s) { s->h = 0xcbf29ce484222325ull; }

static inline void sum_u64(prog_sum *s, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        s->h ^= (v >> (8 * i)) & 0xffu;
        s->h *= 0x100000001b3ull;
    }
}

static inline void sum_bytes(prog_sum *s, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        s->h ^= b[i];
        s->h *= 0x100000001b3ull;
    }
}

/* ---- master-worker runner ------------------------------------------------- */

/*
 * Runs fn(ctx, job, worker) for job = 0 .. njobs-1.  threads == 0: the
 * master runs every job itself, in order (the P2012 runtime's allocation
 * shape: one allocating core).  threads > 0: that many POSIX threads take
 * jobs from a shared counter; whatever a worker allocates and hands back is
 * freed by the master, as on a cluster whose workers allocate too.
 */
typedef void (*prog_job_fn)(void *ctx, size_t job, unsigned worker);

typedef struct prog_pool {
    prog_job_fn fn;
    void *ctx;
    size_t njobs, next;
    pthread_mutex_t lock;
    unsigned id;
} prog_pool;

typedef struct prog_worker {
    prog_pool *pool;
    unsigned id;
} prog_worker;

static inline void *prog_worker_main(void *arg)
{
    prog_worker *w = arg;
    for (;;) {
        size_t j;
        pthread_mutex_lock(&w->pool->lock);
        j = w->pool->next++;
        pthread_mutex_unlock(&w->pool->lock);
        if (j >= w->pool->njobs)
            break;
        w->pool->fn(w->pool->ctx, j, w->id);
    }
    return NULL;
}

static inline void prog_run_jobs(prog_job_fn fn, void *ctx, size_t njobs, unsigned threads)
{
    prog_pool pool;
    pthread_t *tids;
    prog_worker *ws;
    if (threads == 0) {
        for (size_t j = 0; j < njobs; j++)
            fn(ctx, j, 0);
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.njobs = njobs;
    pool.next = 0;
    pthread_mutex_init(&pool.lock, NULL);
    tids = xmalloc(threads * sizeof *tids);
    ws = xmalloc(threads * sizeof *ws);
    for (unsigned i = 0; i < threads; i++) {
        ws[i].pool = &pool;
        ws[i].id = i;
        if (pthread_create(&tids[i], NULL, prog_worker_main, &ws[i]) != 0)
            prog_die(1, "cannot create worker thread %u", i);
    }
    for (unsigned i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&pool.lock);
    free(ws);
    free(tids);
}

#endif
