/* A heap pointer passed through a function pointer: the analysis does not
 * follow it into `get`, whose p[i] then read a global address as local. */
#include <stdio.h>
#include <stdlib.h>
static int get(int *p, int i) { return p[i]; }
int main(void)
{
    int (*g)(int *, int) = get;
    int *a = malloc(4 * sizeof *a);
    for (int i = 0; i < 4; i++)
        a[i] = i + 1;
    int t = 0;
    for (int i = 0; i < 4; i++)
        t += g(a, i); /* REFUSED: passed through a function pointer */
    printf("%d\n", t);
    free(a);
    return 0;
}
