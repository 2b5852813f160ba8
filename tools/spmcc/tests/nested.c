/* Constructs the pass once got wrong on bench/workloads/programs (matmul.c,
 * fast.c), each reduced to a few lines:
 *  - a heap pointer read from the heap, plus arithmetic, passed to memcpy
 *    (`memcpy(dst, tiles[j] + r * T, ...)`): the read of tiles[j] happens
 *    through its own translation, not as a second rewrite inside it (this
 *    was refused as "internal: overlapping rewrites");
 *  - two loops without braces that end together, the outer one's array
 *    pinned before it and the inner one walking a list: the inner loop's
 *    block must close first (the outer's unpin ran once per iteration);
 *  - free of memory a header allocated (hostalloc.h is not rewritten): it
 *    must stay the C library's free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hostalloc.h"

#define T 8
#define NT 6

typedef struct node {
    int v;
    struct node *next;
} node;

typedef struct grid {
    float **tiles;
    node **first;
    size_t n;
} grid;

int main(void)
{
    grid g;
    g.n = NT;
    g.tiles = malloc(g.n * sizeof *g.tiles);
    g.first = malloc(g.n * sizeof *g.first);
    for (size_t j = 0; j < g.n; j++) {
        g.tiles[j] = malloc(T * T * sizeof **g.tiles);
        for (size_t i = 0; i < T * T; i++)
            g.tiles[j][i] = (float)(j * 100 + i);
        g.first[j] = NULL;
        for (int k = 0; k < (int)j + 2; k++) {
            node *n = malloc(sizeof *n);
            n->v = (int)j * 10 + k;
            n->next = g.first[j];
            g.first[j] = n;
        }
    }
    /* a tile row copied out through a pointer read from the heap */
    float *res = malloc(NT * T * T * sizeof *res);
    for (size_t j = 0; j < g.n; j++)
        for (size_t r = 0; r < T; r++)
            memcpy(res + (j * T + r) * T, g.tiles[j] + r * T, T * sizeof *res);
    double sum = 0;
    for (size_t i = 0; i < NT * T * T; i++)
        sum += res[i] * (double)(i % 7 + 1);
    /* nested loops without braces ending together: res pinned around the
     * outer loop, each list walked by the inner one */
    size_t k = 0;
    for (size_t j = 0; j < g.n; j++)
        for (const node *q = g.first[j]; q; q = q->next)
            res[k++] = (float)q->v;
    long lsum = 0;
    for (size_t i = 0; i < k; i++)
        lsum = lsum * 3 + (long)res[i];
    /* memory from a header's malloc, freed here */
    unsigned char *hb = host_bytes(64, 5);
    unsigned hs = 0;
    for (size_t i = 0; i < 64; i++)
        hs = hs * 33u + hb[i];
    free(hb);
    printf("sum=%.1f lists=%zu lsum=%ld host=%u\n", sum, k, lsum, hs);
    for (size_t j = 0; j < g.n; j++) {
        while (g.first[j]) {
            node *n = g.first[j];
            g.first[j] = n->next;
            free(n);
        }
        free(g.tiles[j]);
    }
    free(res);
    free(g.tiles);
    free(g.first);
    return 0;
}
