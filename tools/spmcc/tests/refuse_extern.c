/* Refused: a heap pointer handed to a function outside the file whose
 * accesses the pass cannot see (bsearch returns a pointer into it). */
#include <stdlib.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int main(void)
{
    int *v = malloc(8 * sizeof *v), key = 3;
    for (int i = 0; i < 8; i++)
        v[i] = i;
    int *hit = bsearch(&key, v, 8, sizeof *v, cmp); /* REFUSED: heap pointer passed to 'bsearch' */
    int r = hit != NULL;
    free(v);
    return r;
}
