/*
 * bench/workloads/gen/gen_larson.c - a Larson-like server workload written
 * directly as a dmm trace (include/dmm/trace.h).
 *
 *   gen-larson --threads T --rounds R --chunks C --min S --max S --seed N
 *              [--epochs E] [--keep] -o OUT
 *
 * The Larson & Krishnan benchmark models a server: every thread owns an
 * array of C blocks; in each round it frees a randomly chosen block and
 * allocates a new one of a size drawn uniformly from [min, max]; after a
 * while the thread exits and a new thread inherits its array, so blocks
 * allocated by one thread are freed by another.  This generator produces
 * that allocation stream without running it:
 *
 *   - start: each thread t allocates its C blocks;
 *   - E epochs: in each epoch every thread does R rounds (free a random
 *     block of its array, allocate a replacement); the rounds of all
 *     threads are interleaved in a random global order (one random thread
 *     with work left goes next), as if they ran at once;
 *   - between epochs the arrays rotate: thread t takes over the array of
 *     thread t-1, so every free in epochs 2.. is a cross-thread free of a
 *     block that thread did not allocate (as long as T > 1);
 *   - end: each thread frees the blocks in its array (unless --keep).
 *
 * The threads persist (ids 0..T-1) instead of being recreated: a replay
 * needs a fixed number of streams.  dmm_trace_add_syncs() then orders every
 * cross-thread free after the allocation it releases, and the trace is
 * validated before it is written (binary, or text if OUT ends in .txt).
 * Deterministic: the same arguments give the same trace (same hash).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/trace.h"

static const char *usage_text =
    "usage: gen-larson --threads T --rounds R --chunks C --min S --max S --seed N\n"
    "                  [--epochs E] [--keep] -o OUT\n"
    "  --threads T   threads (1 .. 4096), default 4\n"
    "  --rounds R    free+malloc rounds per thread per epoch, default 10000\n"
    "  --chunks C    blocks each thread's array holds, default 1000\n"
    "  --min S       smallest block, bytes (>= 1), default 8\n"
    "  --max S       largest block, bytes (>= min), default 512\n"
    "  --seed N      random seed, default 1\n"
    "  --epochs E    epochs; between two, every array moves to the next thread; default 4\n"
    "  --keep        leave the last blocks allocated (no final frees)\n"
    "  -o OUT        output trace (binary; text if the name ends in .txt)\n";

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("gen-larson: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (code == 2)
        fputs(usage_text, stderr);
    exit(code);
}

static uint64_t num(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-')
        die(2, "%s needs a non-negative number", opt);
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || *end)
        die(2, "%s: '%s' is not a number", opt, s);
    if (v < min || v > max)
        die(2, "%s: %llu is out of range [%" PRIu64 ", %" PRIu64 "]", opt, v, min, max);
    return v;
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t n)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
    do
        x = rnd();
    while (x >= lim);
    return x % n;
}

static void op(dmm_trace *t, uint8_t kind, uint32_t tid, uint64_t id, uint64_t size)
{
    dmm_trace_op o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.tid = tid;
    o.id = id;
    o.size = size;
    if (dmm_trace_push(t, &o) != 0)
        die(1, "out of memory after %zu operations", t->n);
}

int main(int argc, char **argv)
{
    uint64_t threads = 4, rounds = 10000, chunks = 1000, min = 8, max = 512, seed = 1, epochs = 4;
    int keep = 0;
    const char *out = NULL;
    static const struct option lo[] = {
        {"threads", required_argument, 0, 't'}, {"rounds", required_argument, 0, 'r'},
        {"chunks", required_argument, 0, 'c'},  {"min", required_argument, 0, 'm'},
        {"max", required_argument, 0, 'M'},     {"seed", required_argument, 0, 's'},
        {"epochs", required_argument, 0, 'e'},  {"keep", no_argument, 0, 'k'},
        {"output", required_argument, 0, 'o'},  {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int ch;
    dmm_trace t;
    dmm_trace_error err;
    uint64_t **arr, *left, next_id = 1, cross = 0, frees = 0, allocs = 0;
    uint32_t *owner_of_slot; /* which thread allocated each live id (by array/slot) */
    char meta[512];

    while ((ch = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (ch) {
        case 't': threads = num("--threads", optarg, 1, 4096); break;
        case 'r': rounds = num("--rounds", optarg, 0, (uint64_t)1 << 32); break;
        case 'c': chunks = num("--chunks", optarg, 1, (uint64_t)1 << 24); break;
        case 'm': min = num("--min", optarg, 1, (uint64_t)1 << 40); break;
        case 'M': max = num("--max", optarg, 1, (uint64_t)1 << 40); break;
        case 's': seed = num("--seed", optarg, 0, UINT64_MAX); break;
        case 'e': epochs = num("--epochs", optarg, 1, 1u << 20); break;
        case 'k': keep = 1; break;
        case 'o': out = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: die(2, "bad usage");
        }
    }
    if (optind < argc)
        die(2, "unexpected argument '%s'", argv[optind]);
    if (!out)
        die(2, "no output file (-o OUT)");
    if (min > max)
        die(2, "--min (%" PRIu64 ") is larger than --max (%" PRIu64 ")", min, max);
    {
        long double total = (long double)threads * chunks * 2 + (long double)threads * rounds * epochs * 2;
        if (total > 2e8L)
            die(2, "that is %.0Lf operations; keep it under 200 million", total);
    }
    rng_state = seed * 0x2545F4914F6CDD1Dull + 0x1234567ull;
    dmm_trace_init(&t);
    snprintf(meta, sizeof meta,
             "generator=gen-larson\nthreads=%" PRIu64 "\nrounds=%" PRIu64 "\nchunks=%" PRIu64 "\nmin=%" PRIu64
             "\nmax=%" PRIu64 "\nseed=%" PRIu64 "\nepochs=%" PRIu64 "\nkeep=%d\n",
             threads, rounds, chunks, min, max, seed, epochs, keep);
    if (dmm_trace_set_meta(&t, meta))
        die(1, "out of memory");

    arr = calloc(threads, sizeof *arr);
    left = calloc(threads, sizeof *left);
    owner_of_slot = calloc(threads * chunks, sizeof *owner_of_slot);
    if (!arr || !left || !owner_of_slot)
        die(1, "out of memory");
    /* start: every thread fills its array; interleaved like the rounds */
    for (uint64_t i = 0; i < threads; i++) {
        if (!(arr[i] = malloc(chunks * sizeof **arr)))
            die(1, "out of memory");
        left[i] = chunks;
    }
    {
        uint64_t busy = threads;
        uint64_t *active = malloc(threads * sizeof *active);
        if (!active)
            die(1, "out of memory");
        for (uint64_t i = 0; i < threads; i++)
            active[i] = i;
        while (busy) {
            uint64_t k = below(busy), th = active[k];
            uint64_t slot = chunks - left[th];
            arr[th][slot] = next_id;
            owner_of_slot[th * chunks + slot] = (uint32_t)th;
            op(&t, DMM_T_MALLOC, (uint32_t)th, next_id++, min + below(max - min + 1));
            allocs++;
            if (--left[th] == 0)
                active[k] = active[--busy];
        }
        /* epochs: thread th works on array (th - e) mod T */
        for (uint64_t e = 0; e < epochs; e++) {
            for (uint64_t i = 0; i < threads; i++) {
                left[i] = rounds;
                active[i] = i;
            }
            busy = rounds ? threads : 0;
            while (busy) {
                uint64_t k = below(busy), th = active[k];
                uint64_t a = (th + threads - e % threads) % threads;
                uint64_t slot = below(chunks);
                if (owner_of_slot[a * chunks + slot] != th)
                    cross++;
                op(&t, DMM_T_FREE, (uint32_t)th, arr[a][slot], 0);
                frees++;
                arr[a][slot] = next_id;
                owner_of_slot[a * chunks + slot] = (uint32_t)th;
                op(&t, DMM_T_MALLOC, (uint32_t)th, next_id++, min + below(max - min + 1));
                allocs++;
                if (--left[th] == 0)
                    active[k] = active[--busy];
            }
        }
        /* end: the thread holding each array frees it (the last epoch's owner) */
        if (!keep)
            for (uint64_t th = 0; th < threads; th++) {
                uint64_t a = (th + threads - (epochs - 1) % threads) % threads;
                for (uint64_t slot = 0; slot < chunks; slot++) {
                    if (owner_of_slot[a * chunks + slot] != th)
                        cross++;
                    op(&t, DMM_T_FREE, (uint32_t)th, arr[a][slot], 0);
                    frees++;
                }
            }
        free(active);
    }
    if (dmm_trace_add_syncs(&t) != 0)
        die(1, "out of memory deriving synchronisation");
    if (dmm_trace_validate(&t, &err) != 0)
        die(1, "internal error: generated trace is invalid at operation %" PRIu64 ": %s", err.offset, err.reason);
    if (dmm_trace_save(&t, out) != 0)
        die(1, "cannot write %s: %s", out, strerror(errno));
    {
        size_t syncs = 0;
        for (size_t i = 0; i < t.n; i++)
            syncs += t.ops[i].kind == DMM_T_SYNC;
        printf("gen-larson: %s: %zu operations (%" PRIu64 " mallocs, %" PRIu64 " frees, %zu syncs), %u threads, "
               "%" PRIu64 " cross-thread frees, hash %016" PRIx64 "\n",
               out, t.n, allocs, frees, syncs, t.threads, cross, dmm_trace_hash(&t));
    }
    for (uint64_t i = 0; i < threads; i++)
        free(arr[i]);
    free(arr);
    free(left);
    free(owner_of_slot);
    dmm_trace_free(&t);
    return 0;
}
