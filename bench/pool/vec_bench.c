/*
 * bench/pool/vec_bench.c - dmm_vec_memset / dmm_vec_memcpy on pool-sized
 * blocks (64 B .. 4 KB, aligned to the widest vector unit) against the
 * seed's baseline (a scalar byte loop) and glibc's memset/memcpy.
 *
 *   vec_bench [--reps N] [--bytes B] [--json FILE] [--commit ID]
 *
 * For every repetition, size and operation the candidates run one after the
 * other (interleaved, so drift of the clock or the machine hits them alike),
 * each for enough calls to touch about B bytes (default 1 MiB) on the same
 * L1-resident buffers; the reported figure per candidate is the median over
 * the repetitions of ns per call (and TSC ticks per call on x86-64).
 * Ratios: speedup = candidate's time / vec time, so > 1 means the vector
 * routine is faster ("vs_scalar" against the byte loop, "vs_glibc" against
 * libc).  Every candidate's result is checked once against the byte loop's
 * before timing.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "dmm/vec.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

#define MAX_SIZE 4096u
#define MAX_CAND 8
#define MAX_REPS 1001

static const size_t sizes[] = {64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
#define NSIZES (sizeof sizes / sizeof sizes[0])

#include "vec_baselines.h" /* scalar_memset/memcpy (the seed's baseline), glibc_memset/memcpy */

typedef struct cand {
    char name[32];
    int is_vec;
    void (*set)(void *, int, size_t);
    void (*cpy)(void *, const void *, size_t);
    double ns[2][NSIZES][MAX_REPS];
    double tsc[2][NSIZES][MAX_REPS];
} cand;

static cand cands[MAX_CAND];
static unsigned ncand;

static _Alignas(64) unsigned char buf_dst[MAX_SIZE];
static _Alignas(64) unsigned char buf_src[MAX_SIZE];
static _Alignas(64) unsigned char buf_ref[MAX_SIZE];

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t ticks(void)
{
#if HAVE_TSC
    return __rdtsc();
#else
    return 0;
#endif
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, unsigned n)
{
    double tmp[MAX_REPS];
    memcpy(tmp, v, n * sizeof *v);
    qsort(tmp, n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static void add_cand(const char *name, int is_vec, void (*set)(void *, int, size_t),
                     void (*cpy)(void *, const void *, size_t))
{
    cand *c = &cands[ncand++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->is_vec = is_vec;
    c->set = set;
    c->cpy = cpy;
}

/* Each candidate's result equals the byte loop's on every benchmarked size. */
static int check(void)
{
    for (unsigned k = 0; k < ncand; k++)
        for (size_t i = 0; i < NSIZES; i++) {
            size_t n = sizes[i];
            for (size_t j = 0; j < MAX_SIZE; j++)
                buf_src[j] = (unsigned char)(j * 7 + k);
            memset(buf_dst, 0xee, MAX_SIZE);
            cands[k].set(buf_dst, 0x3c, n);
            for (size_t j = 0; j < MAX_SIZE; j++)
                if (buf_dst[j] != (j < n ? 0x3c : 0xee)) {
                    fprintf(stderr, "vec_bench: %s memset of %zu B wrong at byte %zu\n", cands[k].name, n, j);
                    return 0;
                }
            memset(buf_dst, 0xee, MAX_SIZE);
            memset(buf_ref, 0xee, MAX_SIZE);
            scalar_memcpy(buf_ref, buf_src, n);
            cands[k].cpy(buf_dst, buf_src, n);
            if (memcmp(buf_dst, buf_ref, MAX_SIZE) != 0) {
                fprintf(stderr, "vec_bench: %s memcpy of %zu B wrong\n", cands[k].name, n);
                return 0;
            }
        }
    return 1;
}

static void time_one(cand *c, int op, size_t si, unsigned rep, unsigned long calls)
{
    size_t n = sizes[si];
    double t0 = now_ns();
    uint64_t k0 = ticks();
    if (op == 0) {
        for (unsigned long i = 0; i < calls; i++) {
            c->set(buf_dst, (int)i, n);
            __asm__ volatile("" ::: "memory");
        }
    } else {
        for (unsigned long i = 0; i < calls; i++) {
            c->cpy(buf_dst, buf_src, n);
            __asm__ volatile("" ::: "memory");
        }
    }
    uint64_t k1 = ticks();
    double t1 = now_ns();
    c->ns[op][si][rep] = (t1 - t0) / (double)calls;
    c->tsc[op][si][rep] = (double)(k1 - k0) / (double)calls;
}

static void cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "CPU part", 8) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                p[strcspn(p, "\n")] = 0;
                snprintf(out, cap, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

int main(int argc, char **argv)
{
    unsigned reps = 31;
    unsigned long bytes = 1ul << 20;
    const char *json = NULL, *commit = "unknown";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            bytes = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc)
            commit = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--reps N] [--bytes B] [--json FILE] [--commit ID]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || bytes < 1) {
        fprintf(stderr, "vec_bench: --reps must be 1..%u and --bytes > 0\n", MAX_REPS);
        return 2;
    }

    const dmm_vec_impl *impls[MAX_CAND - 2];
    unsigned nimpl = dmm_vec_impls(impls, MAX_CAND - 2);
    if (nimpl > MAX_CAND - 2)
        nimpl = MAX_CAND - 2;
    for (unsigned i = 0; i < nimpl; i++)
        add_cand(impls[i]->name, 1, impls[i]->memset, impls[i]->memcpy);
    add_cand("scalar", 0, scalar_memset, scalar_memcpy);
    add_cand("glibc", 0, glibc_memset, glibc_memcpy);
    if (!check())
        return 1;

    for (unsigned r = 0; r < reps; r++)
        for (size_t si = 0; si < NSIZES; si++) {
            unsigned long calls = bytes / sizes[si];
            if (calls < 1)
                calls = 1;
            for (int op = 0; op < 2; op++)
                for (unsigned k = 0; k < ncand; k++) {
                    /* rotate the order every repetition */
                    cand *c = &cands[(k + r) % ncand];
                    time_one(c, op, si, r, calls);
                }
        }

    static const char *opname[2] = {"memset", "memcpy"};
    const char *best = impls[0]->name;
    unsigned scalar = nimpl, glibc = nimpl + 1;
    printf("vec_bench: %u repetitions, ~%lu bytes per timing, median ns per call; best vector routine: %s\n",
           reps, bytes, best);
    printf("%-6s %6s", "op", "size");
    for (unsigned k = 0; k < ncand; k++)
        printf(" %10s", cands[k].name);
    printf(" %10s %10s\n", "vs_scalar", "vs_glibc");
    for (int op = 0; op < 2; op++)
        for (size_t si = 0; si < NSIZES; si++) {
            printf("%-6s %6zu", opname[op], sizes[si]);
            for (unsigned k = 0; k < ncand; k++)
                printf(" %10.2f", median(cands[k].ns[op][si], reps));
            double v = median(cands[0].ns[op][si], reps);
            printf(" %9.2fx %9.2fx\n", median(cands[scalar].ns[op][si], reps) / v,
                   median(cands[glibc].ns[op][si], reps) / v);
        }

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        struct utsname u;
        uname(&u);
        char model[256];
        cpu_model(model, sizeof model);
        fprintf(f, "{\n  \"schema\": \"dmmkit.pool_vec/1\",\n");
        fprintf(f, "  \"description\": \"dmm_vec_memset/memcpy vs a scalar byte loop and glibc on L1-resident "
                   "blocks aligned to 64 B; ns per call, median over repetitions; speedup = other / vec\",\n");
        fprintf(f, "  \"machine\": {\"sysname\": ");
        json_str(f, u.sysname);
        fprintf(f, ", \"release\": ");
        json_str(f, u.release);
        fprintf(f, ", \"arch\": ");
        json_str(f, u.machine);
        fprintf(f, ", \"cpu\": ");
        json_str(f, model);
        fprintf(f, "},\n  \"compiler\": ");
#ifdef __VERSION__
        json_str(f, __VERSION__);
#else
        json_str(f, "unknown");
#endif
        fprintf(f, ",\n  \"commit\": ");
        json_str(f, commit);
        fprintf(f, ",\n  \"cpu_flags\": {");
#if defined(__x86_64__)
        __builtin_cpu_init();
        fprintf(f, "\"sse2\": %s, \"avx\": %s, \"avx2\": %s, \"avx512f\": %s, \"avx512bw\": %s",
                __builtin_cpu_supports("sse2") ? "true" : "false", __builtin_cpu_supports("avx") ? "true" : "false",
                __builtin_cpu_supports("avx2") ? "true" : "false",
                __builtin_cpu_supports("avx512f") ? "true" : "false",
                __builtin_cpu_supports("avx512bw") ? "true" : "false");
#endif
        fprintf(f, "},\n  \"vec_impls\": [");
        for (unsigned i = 0; i < nimpl; i++)
            fprintf(f, "%s{\"name\": \"%s\", \"width\": %zu}", i ? ", " : "", impls[i]->name, impls[i]->width);
        fprintf(f, "],\n  \"selected\": \"%s\",\n", best);
        fprintf(f, "  \"params\": {\"reps\": %u, \"bytes_per_timing\": %lu, \"alignment\": 64, \"tsc\": %s},\n", reps,
                bytes, HAVE_TSC ? "true" : "false");
        fprintf(f, "  \"results\": [\n");
        for (int op = 0; op < 2; op++)
            for (size_t si = 0; si < NSIZES; si++) {
                fprintf(f, "    {\"op\": \"%s\", \"size\": %zu, \"ns\": {", opname[op], sizes[si]);
                for (unsigned k = 0; k < ncand; k++)
                    fprintf(f, "%s\"%s\": %.3f", k ? ", " : "", cands[k].name, median(cands[k].ns[op][si], reps));
                fprintf(f, "}, \"tsc\": {");
                for (unsigned k = 0; k < ncand; k++)
                    fprintf(f, "%s\"%s\": %.2f", k ? ", " : "", cands[k].name,
                            HAVE_TSC ? median(cands[k].tsc[op][si], reps) : 0.0);
                double v = median(cands[0].ns[op][si], reps);
                fprintf(f, "}, \"speedup_vs_scalar\": %.3f, \"speedup_vs_glibc\": %.3f}%s\n",
                        median(cands[scalar].ns[op][si], reps) / v, median(cands[glibc].ns[op][si], reps) / v,
                        op == 1 && si == NSIZES - 1 ? "" : ",");
            }
        fprintf(f, "  ]\n}\n");
        fclose(f);
    }
    printf("vec_bench: done\n");
    return 0;
}
