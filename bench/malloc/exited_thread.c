/*
 * bench/malloc/exited_thread.c - memory freed after the thread that
 * allocated it exited (issue 27), for any malloc (preload it).  Two cases:
 *
 *   exited  one thread allocates 120 MB (half of it in 2-5 KB blocks, half
 *           in 16-1024 B blocks, every byte written) and exits; main frees
 *           it all, then allocates and frees 120 MB of the same mix three
 *           times.
 *   churn   12 waves: 4 producer threads each allocate 6 MB of the same mix
 *           and exit; then 4 consumer threads free them all (each one
 *           producer's blocks, not its own index's) and exit.
 *
 * Prints one line: the case, peak RSS (getrusage, KiB) and mallinfo2's
 * uordblks after every block was freed minus uordblks at the start (bytes
 * the allocator still counts as in use: 0 for an allocator that keeps no
 * per-thread caches; it says nothing for one that does not implement
 * mallinfo2).  Deterministic sizes (xorshift, fixed seed).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define TOTAL ((size_t)120 << 20)

typedef struct {
    void **p;
    size_t n, cap;
    uint64_t seed;
    size_t bytes;
} batch;

static size_t next_size(uint64_t *x, int medium)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return medium ? 2048 + (size_t)(*x % 3073u) : 16 + (size_t)(*x % 1009u);
}

/* Fills b with blocks worth b->bytes: alternately half medium, half small. */
static void *fill(void *arg)
{
    batch *b = arg;
    size_t med = 0, small = 0;
    uint64_t x = b->seed;
    while (med + small < b->bytes) {
        int medium = med <= small;
        size_t n = next_size(&x, medium);
        void *p = malloc(n);
        if (!p) {
            fprintf(stderr, "exited_thread: malloc(%zu) failed\n", n);
            exit(1);
        }
        memset(p, 0x5a, n);
        if (b->n == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 4096;
            b->p = realloc(b->p, b->cap * sizeof *b->p);
            if (!b->p)
                exit(1);
        }
        b->p[b->n++] = p;
        if (medium)
            med += n;
        else
            small += n;
    }
    return NULL;
}

typedef struct {
    batch *b;
    size_t from, to;
} range;

static void *drain(void *arg)
{
    range *r = arg;
    for (size_t i = r->from; i < r->to; i++)
        free(r->b->p[i]);
    return NULL;
}

static void run_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0 || pthread_join(t, NULL) != 0)
        exit(1);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "exited";
    struct rusage ru;
    size_t base = mallinfo2().uordblks;
    if (!strcmp(mode, "exited")) {
        batch b = {.seed = 88172645463325252ull, .bytes = TOTAL};
        run_thread(fill, &b);
        for (size_t i = 0; i < b.n; i++)
            free(b.p[i]);
        b.n = 0;
        for (int round = 0; round < 3; round++) {
            b.seed += 7;
            fill(&b);
            for (size_t i = 0; i < b.n; i++)
                free(b.p[i]);
            b.n = 0;
        }
        free(b.p);
    } else if (!strcmp(mode, "churn")) {
        for (int wave = 0; wave < 12; wave++) {
            batch b[4];
            pthread_t t[4];
            range r[4];
            for (int k = 0; k < 4; k++) {
                memset(&b[k], 0, sizeof b[k]);
                b[k].seed = 88172645463325252ull + (uint64_t)(wave * 4 + k);
                b[k].bytes = (size_t)6 << 20;
                if (pthread_create(&t[k], NULL, fill, &b[k]))
                    return 1;
            }
            for (int k = 0; k < 4; k++)
                pthread_join(t[k], NULL);
            /* consumer k frees producer k+1's blocks */
            for (int k = 0; k < 4; k++) {
                r[k].b = &b[k];
                r[k].from = 0;
                r[k].to = b[k].n;
            }
            for (int k = 0; k < 4; k++)
                if (pthread_create(&t[k], NULL, drain, &r[(k + 1) % 4]))
                    return 1;
            for (int k = 0; k < 4; k++)
                pthread_join(t[k], NULL);
            for (int k = 0; k < 4; k++)
                free(b[k].p);
        }
    } else {
        fprintf(stderr, "usage: exited_thread [exited|churn]\n");
        return 2;
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("%s peak_rss_kib %ld uordblks_left %lld\n", mode, ru.ru_maxrss,
           (long long)mallinfo2().uordblks - (long long)base);
    return 0;
}
