/* Refused: one statement both changes a pointer and accesses through it
 * outside the right-hand side of a plain assignment. */
#include <stdlib.h>
struct node { int key; struct node *next; };
int main(void)
{
    struct node *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    a->key = 1;
    b->key = 2;
    struct node *p = a;
    int k = p->key + ((p = b) != NULL); /* REFUSED: both changes 'p' and accesses the heap through it */
    free(a);
    free(b);
    return k;
}
