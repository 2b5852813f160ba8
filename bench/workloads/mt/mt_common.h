/*
 * bench/workloads/mt/mt_common.h - what the multi-threaded stress programs
 * share: options, a seeded PRNG, block fill patterns and their checks,
 * timing, peak RSS and the result lines.  Header-only, hosted C11 + POSIX
 * threads (README.md here describes the programs).
 *
 * The programs allocate only through the malloc family (malloc, calloc,
 * realloc, free, posix_memalign), called through volatile pointers so the
 * compiler cannot elide, merge or move any call: an allocator put in with
 * LD_PRELOAD sees exactly the calls the source makes.
 *
 * Exit status: 0 when every self-check passed, 1 on a failed check (the
 * message names what did not match) or out of memory, 2 on bad usage.
 */
#ifndef DMM_MT_COMMON_H
#define DMM_MT_COMMON_H

/* posix_memalign, clock_gettime, getrusage (include this header first) */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

/* ---- errors ---------------------------------------------------------------- */

static const char *mt_prog = "mt";

_Noreturn static inline void mt_die(int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", mt_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    exit(code);
}

/* A failed self-check: the allocator (or the program) broke a promise. */
#define mt_fail(...) mt_die(1, "CHECK FAILED: " __VA_ARGS__)

/* ---- the malloc family, never treated as builtins ---------------------------- */

static void *(*volatile mt_malloc_fn)(size_t) = malloc;
static void *(*volatile mt_calloc_fn)(size_t, size_t) = calloc;
static void *(*volatile mt_realloc_fn)(void *, size_t) = realloc;
static void (*volatile mt_free_fn)(void *) = free;
static int (*volatile mt_memalign_fn)(void **, size_t, size_t) = posix_memalign;

static inline void *mt_malloc(size_t n)
{
    void *p = mt_malloc_fn(n);
    if (!p)
        mt_die(1, "out of memory (malloc %zu)", n);
    return p;
}

/* calloc; the block must read as zeros (checked here). */
static inline void *mt_calloc(size_t n, size_t sz)
{
    unsigned char *p = mt_calloc_fn(n, sz);
    if (!p)
        mt_die(1, "out of memory (calloc %zu x %zu)", n, sz);
    for (size_t i = 0; i < n * sz; i++)
        if (p[i] != 0)
            mt_fail("calloc(%zu, %zu) = %p: byte %zu is 0x%02x, not zero", n, sz, (void *)p, i, p[i]);
    return p;
}

static inline void *mt_realloc(void *q, size_t n)
{
    void *p = mt_realloc_fn(q, n);
    if (!p)
        mt_die(1, "out of memory (realloc %zu)", n);
    return p;
}

static inline void mt_free(void *p) { mt_free_fn(p); }

/* posix_memalign; the block must be aligned as asked (checked here). */
static inline void *mt_memalign(size_t align, size_t n)
{
    void *p = NULL;
    int rc = mt_memalign_fn(&p, align, n);
    if (rc != 0 || !p)
        mt_die(1, "posix_memalign(%zu, %zu) failed (%d)", align, n, rc);
    if ((uintptr_t)p % align != 0)
        mt_fail("posix_memalign(%zu, %zu) = %p is not aligned", align, n, p);
    return p;
}

/* ---- PRNG (splitmix64 seeding + xorshift64*) ----------------------------------- */

typedef struct mt_rng {
    uint64_t s;
} mt_rng;

static inline uint64_t mt_mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static inline mt_rng mt_rng_make(uint64_t seed, uint64_t stream)
{
    mt_rng r;
    r.s = mt_mix(seed ^ mt_mix(stream + 1)) | 1u;
    return r;
}

static inline uint64_t mt_next(mt_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1du;
}

/* uniform in [0, n) (n > 0; the bias is irrelevant here) */
static inline uint64_t mt_below(mt_rng *r, uint64_t n) { return mt_next(r) % n; }

/* uniform in [lo, hi] */
static inline size_t mt_range(mt_rng *r, size_t lo, size_t hi) { return lo + (size_t)mt_below(r, hi - lo + 1); }

/* ---- block patterns ----------------------------------------------------------------
 * A checked block starts with a header (its size, a key and a magic word);
 * every byte after it is a function of the key and its offset.  The check
 * before each free reads the whole block, so a block the allocator handed
 * out twice, a block it wrote into (its own metadata on a live block) or a
 * block shorter than asked for shows as a mismatch with a clear message.
 */
#define MT_MAGIC 0x6d74626c6f636b21u /* "mtblock!" */

typedef struct mt_hdr {
    uint64_t magic;
    uint64_t size; /* bytes asked for, header included */
    uint64_t key;  /* who made it and when: unique per block */
    uint64_t owner; /* the thread (worker index) that allocated it */
} mt_hdr;

#define MT_MIN_BLOCK sizeof(mt_hdr)

static inline unsigned char mt_byte(uint64_t key, size_t i)
{
    uint64_t k = key ^ (i >> 3) * 0x9e3779b97f4a7c15u;
    return (unsigned char)(k >> (8 * (i & 7)));
}

/* Writes header and pattern into a block of size bytes (size >= MT_MIN_BLOCK). */
static inline void mt_fill(void *p, size_t size, uint64_t key, uint64_t owner)
{
    mt_hdr h = {MT_MAGIC, size, key, owner};
    unsigned char *b = p;
    memcpy(b, &h, sizeof h);
    for (size_t i = sizeof h; i < size; i++)
        b[i] = mt_byte(key, i);
}

/* Checks a block filled by mt_fill; returns its header.  what names the caller. */
static inline mt_hdr mt_check(const void *p, size_t expect_size, const char *what)
{
    mt_hdr h;
    const unsigned char *b = p;
    memcpy(&h, b, sizeof h);
    if (h.magic != MT_MAGIC)
        mt_fail("%s: block %p lost its header (magic %016" PRIx64 ")", what, p, h.magic);
    if (expect_size && h.size != expect_size)
        mt_fail("%s: block %p records size %" PRIu64 ", expected %zu", what, p, h.size, expect_size);
    for (size_t i = sizeof h; i < h.size; i++)
        if (b[i] != mt_byte(h.key, i))
            mt_fail("%s: block %p (size %" PRIu64 ", key %016" PRIx64 ") byte %zu is 0x%02x, expected 0x%02x",
                    what, p, h.size, h.key, i, b[i], mt_byte(h.key, i));
    return h;
}

/* Checks, then scribbles over the header (a later use of the block shows), then frees. */
static inline mt_hdr mt_check_free(void *p, size_t expect_size, const char *what)
{
    mt_hdr h = mt_check(p, expect_size, what);
    memset(p, 0xdd, sizeof h);
    mt_free(p);
    return h;
}

/* ---- options ------------------------------------------------------------------------ */

typedef struct mt_opts {
    uint64_t threads;
    uint64_t scale;
    uint64_t seed;
    int json;
} mt_opts;

static inline uint64_t mt_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-')
        mt_die(2, "option %s needs a non-negative number", opt);
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s || *end)
        mt_die(2, "option %s: '%s' is not a number", opt, s);
    if (v < min || v > max)
        mt_die(2, "option %s: %s is out of range [%" PRIu64 ", %" PRIu64 "]", opt, s, min, max);
    return (uint64_t)v;
}

/*
 * --threads N (1..256), --scale S (1..100000, work grows linearly with it;
 * 100 is the default and takes well under 2 s on 2 cores in a release
 * build), --seed X, --json.  about is printed by --help.
 */
static inline mt_opts mt_parse(int argc, char **argv, const char *name, const char *about)
{
    mt_opts o = {1, 100, 1, 0};
    mt_prog = name;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--threads") || !strcmp(a, "-t"))
            o.threads = mt_parse_u64(a, v, 1, 256), i++;
        else if (!strcmp(a, "--scale") || !strcmp(a, "-s"))
            o.scale = mt_parse_u64(a, v, 1, 100000), i++;
        else if (!strcmp(a, "--seed"))
            o.seed = mt_parse_u64(a, v, 0, UINT64_MAX), i++;
        else if (!strcmp(a, "--json"))
            o.json = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: %s [--threads N] [--scale S] [--seed X] [--json]\n%s\n"
                   "  --threads N  worker threads, 1..256 (default 1)\n"
                   "  --scale S    amount of work, 1..100000, linear (default 100)\n"
                   "  --seed X     PRNG seed (default 1)\n"
                   "  --json       also print a JSON line (schema dmm-mtbench/1)\n",
                   name, about);
            exit(0);
        } else
            mt_die(2, "unknown option '%s' (try --help)", a);
    }
    return o;
}

/* ---- threads, time, results ---------------------------------------------------------- */

static inline void mt_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    int rc = pthread_create(t, NULL, fn, arg);
    if (rc != 0)
        mt_die(1, "pthread_create failed (%s)", strerror(rc));
}

static inline void mt_join(pthread_t t)
{
    int rc = pthread_join(t, NULL);
    if (rc != 0)
        mt_die(1, "pthread_join failed (%s)", strerror(rc));
}

static inline uint64_t mt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Starts n threads, thread i running fn(args + i * arg_size), waits for all
 * of them, and returns the wall time from the first start to the last join
 * (the timed part of most programs). */
static inline uint64_t mt_run_all(pthread_t *th, size_t n, void *(*fn)(void *), void *args, size_t arg_size)
{
    uint64_t t0 = mt_now_ns();
    for (size_t i = 0; i < n; i++)
        mt_spawn(&th[i], fn, (unsigned char *)args + i * arg_size);
    for (size_t i = 0; i < n; i++)
        mt_join(th[i]);
    return mt_now_ns() - t0;
}

/* Peak resident set of the process in KiB (getrusage; Linux reports KiB). */
static inline long mt_peak_rss_kb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return ru.ru_maxrss;
}

/* Folds a value into a running checksum (order-sensitive). */
static inline uint64_t mt_sum(uint64_t sum, uint64_t v) { return mt_mix(sum ^ v); }

/* An order-insensitive checksum contribution (summed with +). */
static inline uint64_t mt_term(uint64_t v) { return mt_mix(v ^ 0x5bd1e9955bd1e995u); }

/*
 * The result: one human-readable line and, with --json, one JSON line.
 * extra is a preformatted list of additional figures, "name=value" pairs
 * separated by spaces (numbers only), or NULL.
 */
static inline void mt_report(const mt_opts *o, uint64_t ops, uint64_t wall_ns, uint64_t checksum, const char *extra)
{
    long rss = mt_peak_rss_kb();
    printf("%s: threads=%" PRIu64 " scale=%" PRIu64 " seed=%" PRIu64 " ops=%" PRIu64 " wall_ms=%.3f peak_rss_kb=%ld%s%s"
           " checksum=%016" PRIx64 " OK\n",
           mt_prog, o->threads, o->scale, o->seed, ops, (double)wall_ns / 1e6, rss, extra ? " " : "", extra ? extra : "",
           checksum);
    if (o->json) {
        printf("{\"schema\":\"dmm-mtbench/1\",\"program\":\"%s\",\"threads\":%" PRIu64 ",\"scale\":%" PRIu64
               ",\"seed\":%" PRIu64 ",\"ops\":%" PRIu64 ",\"wall_ns\":%" PRIu64 ",\"peak_rss_kb\":%ld,"
               "\"checksum\":\"%016" PRIx64 "\",\"extra\":{",
               mt_prog, o->threads, o->scale, o->seed, ops, wall_ns, rss, checksum);
        /* extra: "a=1 b=2" -> "a":1,"b":2 */
        const char *s = extra ? extra : "";
        int first = 1;
        while (*s) {
            while (*s == ' ')
                s++;
            if (!*s)
                break;
            const char *eq = strchr(s, '=');
            const char *sp = strchr(s, ' ');
            if (!sp)
                sp = s + strlen(s);
            if (!eq || eq > sp)
                break;
            printf("%s\"%.*s\":%.*s", first ? "" : ",", (int)(eq - s), s, (int)(sp - eq - 1), eq + 1);
            first = 0;
            s = sp;
        }
        printf("}}\n");
    }
    fflush(stdout);
}

#endif /* DMM_MT_COMMON_H */
