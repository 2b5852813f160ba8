/* qsort over heap arrays: an array of heap pointers whose comparator reads
 * the heap objects (the array stays pinned for the call while the
 * comparator translates), an array of ints in the heap whose comparator
 * touches only the elements, and a host array of heap pointers. */
#include <stdio.h>
#include <stdlib.h>

typedef struct rec {
    unsigned w;
    int id;
    struct rec *next;
} rec;

static int by_weight(const void *pa, const void *pb)
{
    const rec *a = *(const rec *const *)pa, *b = *(const rec *const *)pb;
    if (a->w != b->w)
        return a->w < b->w ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static int by_value(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

int main(void)
{
    enum { N = 300 };
    rec *list = NULL;
    unsigned x = 99;
    for (int i = 0; i < N; i++) {
        rec *r = malloc(sizeof *r);
        x = x * 1664525u + 1013904223u;
        r->w = (x >> 20) % 97;
        r->id = i;
        r->next = list;
        list = r;
    }
    rec **order = malloc(N * sizeof *order);
    int *vals = malloc(N * sizeof *vals);
    rec *few[16];
    int i = 0;
    for (rec *r = list; r; r = r->next) {
        order[i] = r;
        vals[i] = (int)(r->w * 1000) - r->id;
        if (i < 16)
            few[i] = r;
        i++;
    }
    qsort(order, N, sizeof *order, by_weight);
    qsort(vals, N, sizeof *vals, by_value);
    qsort(few, 16, sizeof few[0], by_weight);
    unsigned long s = 0;
    for (i = 0; i < N; i++) {
        rec *r = order[i];
        s = s * 131 + (unsigned long)r->id + (unsigned long)vals[i];
    }
    for (i = 0; i < 16; i++) {
        rec *r = few[i];
        s = s * 7 + r->w;
    }
    int last = N - 1;
    printf("sorted checksum %lu first %d last %d\n", s, order[0]->id, order[last]->id);
    free(vals);
    free(order);
    while (list) {
        rec *n = list->next;
        free(list);
        list = n;
    }
    return 0;
}
