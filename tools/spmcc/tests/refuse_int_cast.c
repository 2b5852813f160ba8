/* A heap pointer converted to an integer and back: the pointer made from
 * the integer was taken for a host address. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    int *p = malloc(4 * sizeof *p);
    uintptr_t u = (uintptr_t)p; /* REFUSED: converted to an integer */
    int *q = (int *)u;
    q[1] = 5;
    printf("%d\n", p[1]);
    free(p);
    return 0;
}
