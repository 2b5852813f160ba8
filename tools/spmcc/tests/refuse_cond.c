/* Refused: a condition with two heap accesses (C leaves their order open). */
#include <stdlib.h>
struct v { int x; };
int main(void)
{
    struct v *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    a->x = 1;
    b->x = 2;
    int n = 0;
    while (a->x < b->x) { /* REFUSED: makes 2 heap accesses */
        a->x++;
        n++;
    }
    free(a);
    free(b);
    return n;
}
