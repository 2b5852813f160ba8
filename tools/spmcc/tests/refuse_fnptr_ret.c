/* A heap pointer returned through a function pointer: it was taken for a
 * host address and dereferenced untranslated. */
#include <stdio.h>
#include <stdlib.h>
static int *mk(int v)
{
    int *p = malloc(sizeof *p);
    *p = v;
    return p;
}
int main(void)
{
    int *(*f)(int) = mk;
    int *q = f(3); /* REFUSED: a pointer returned through a function pointer */
    printf("%d\n", *q);
    free(q);
    return 0;
}
