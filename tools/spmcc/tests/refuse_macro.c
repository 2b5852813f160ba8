/* A heap access spelt by a macro: the pass rewrites source text, and the
 * expansion has none of its own (it emitted `__l1SET(a, ...)` before). */
#include <stdio.h>
#include <stdlib.h>
#define SET(p, i, v) ((p)[i] = (v))
int main(void)
{
    int *a = malloc(8 * sizeof *a);
    for (int i = 0; i < 8; i++)
        SET(a, i, i * i); /* REFUSED: inside the expansion of the macro 'SET' */
    printf("%d\n", a[7]);
    free(a);
    return 0;
}
