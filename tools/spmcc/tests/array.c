/* Heap arrays: calloc, indexing, pointer arithmetic (p + i, *q, q++ walks),
 * realloc growth, memcpy/memset/memcmp between heap arrays (two heap
 * pointers in one call: pinned). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long total(const int *v, int n)
{
    long s = 0;
    for (const int *q = v; q < v + n; q++)
        s += *q;
    return s;
}

static void fill(int *v, int n, int seed)
{
    for (int i = 0; i < n; i++)
        *(v + i) = (i * 31 + seed) % 101;
}

int main(void)
{
    int n = 120;
    int *a = calloc((size_t)n, sizeof *a);
    int *b = malloc((size_t)n * sizeof(int));
    fill(a, n, 7);
    memcpy(b, a, (size_t)n * sizeof *a);
    for (int i = 1; i < n; i++)
        b[i] = b[i] + a[i - 1];
    printf("a %ld b %ld eq %d\n", total(a, n), total(b, n), memcmp(a, b, sizeof(int)) == 0);
    for (int round = 0; round < 4; round++) {
        int m = n * 2;
        int *c = realloc(a, (size_t)m * sizeof *c);
        if (!c)
            return 1;
        a = c;
        fill(a + n, n, round);
        n = m;
        printf("round %d n %d sum %ld\n", round, n, total(a, n));
    }
    memset(b, 0, 120 * sizeof *b);
    int *mid = a + n / 2;
    mid[0] = 1000;
    mid[-1] = -1000;
    long tail = 0;
    int *end = a + n;
    for (int *q = mid; q != end; q += 3)
        tail += q[0] * 2 - *q;
    printf("mid %d %d tail %ld b %ld\n", mid[0], mid[-1], tail, total(b, 120));
    free(b);
    free(a);
    return 0;
}
