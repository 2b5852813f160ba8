/* Refused: a pointer that may hold a heap or a stack address handed to a
 * function outside the file, which needs one or the other. */
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    (void)argv;
    int local[4];
    int *p = argc > 1 ? malloc(sizeof local) : local;
    memset(p, 0, sizeof local); /* REFUSED: may point into the heap or elsewhere */
    return p[0];
}
