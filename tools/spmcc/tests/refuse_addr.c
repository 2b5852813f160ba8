/* Refused: the address of a heap pointer variable is taken, so writes
 * through it could change the pointer behind a translation. */
#include <stdlib.h>
static void set(int **pp) { *pp = malloc(sizeof(int)); }
int main(void)
{
    int *p = NULL;
    set(&p);
    *p = 1; /* REFUSED: the address of heap pointer 'p' is taken */
    free(p);
    return 0;
}
