/* Refused: a pointer that may hold a heap or a stack address. */
#include <stdlib.h>
int main(int argc, char **argv)
{
    (void)argv;
    int local = 3;
    int *p = argc > 1 ? malloc(sizeof *p) : &local;
    *p = 5; /* REFUSED: may point into the heap or elsewhere */
    return 0;
}
