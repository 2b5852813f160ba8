/* Refused: a do-while condition with two heap accesses (a do-while's
 * condition has no place before it for the translations). */
#include <stdlib.h>
struct v { int x; };
int main(void)
{
    struct v *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    a->x = 1;
    b->x = 2;
    int n = 0;
    do {
        a->x++;
        n++;
    } while (a->x < b->x); /* REFUSED: makes 2 heap accesses */
    free(a);
    free(b);
    return n;
}
