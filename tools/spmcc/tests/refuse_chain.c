/* Refused: an access through a heap pointer read from the heap. */
#include <stdlib.h>
struct node { int key; struct node *next; };
int main(void)
{
    struct node *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    a->next = b;
    b->key = 4;
    int k = a->next->key; /* REFUSED: 'a->next', which is not a variable */
    free(a);
    free(b);
    return k;
}
