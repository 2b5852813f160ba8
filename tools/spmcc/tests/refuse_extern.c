/* Refused: a heap pointer handed to a function outside the file. */
#include <stdlib.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int main(void)
{
    int *v = malloc(8 * sizeof *v);
    for (int i = 0; i < 8; i++)
        v[i] = 8 - i;
    qsort(v, 8, sizeof *v, cmp); /* REFUSED: heap pointer passed to 'qsort' */
    int r = v[0];
    free(v);
    return r;
}
