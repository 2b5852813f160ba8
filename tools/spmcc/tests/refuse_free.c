/* Refused: a statement that would keep a heap object pinned across a call
 * of the program that may free it (consume frees its argument). */
#include <stdlib.h>
struct v { int x; };
static int consume(struct v *p)
{
    int x = p->x;
    free(p);
    return x;
}
int main(void)
{
    struct v *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
    a->x = 1;
    b->x = 2;
    c->x = 3;
    a->x = b->x + consume(c); /* REFUSED: across a call of the program that may free it */
    int r = a->x;
    free(a);
    free(b);
    return r;
}
