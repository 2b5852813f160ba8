/* Refused: qsort over a heap array with a comparator reached through a
 * pointer, whose accesses the pass cannot see. */
#include <stdlib.h>
static int up(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int main(int argc, char **argv)
{
    (void)argv;
    int (*cmp)(const void *, const void *) = argc > 5 ? NULL : up;
    int *v = malloc(8 * sizeof *v);
    for (int i = 0; i < 8; i++)
        v[i] = 8 - i;
    qsort(v, 8, sizeof *v, cmp); /* REFUSED: with a comparator the pass cannot see */
    int r = v[0];
    free(v);
    return r;
}
