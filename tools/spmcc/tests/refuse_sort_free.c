/* Refused: qsort over a heap array (pinned for the call) whose comparator
 * may free, which could drop the pinned copy. */
#include <stdlib.h>
static int *spare;
static int cmp(const void *a, const void *b)
{
    free(spare);
    spare = NULL;
    return *(const int *)a - *(const int *)b;
}
int main(void)
{
    int *v = malloc(8 * sizeof *v);
    spare = malloc(4);
    for (int i = 0; i < 8; i++)
        v[i] = 8 - i;
    qsort(v, 8, sizeof *v, cmp); /* REFUSED: with a comparator that may free */
    int r = v[0];
    free(v);
    return r;
}
