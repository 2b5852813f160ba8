/* Refused: a heap pointer read from the heap only under a condition (its
 * read could fault when the guard is false). */
#include <stdlib.h>
struct node { int key; struct node *next; };
int main(void)
{
    struct node *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    a->next = b;
    b->key = 4;
    int k = 0;
    if (b->key > 3 && a->next->key == 4) /* REFUSED: reads the heap pointer 'a->next' from the heap only under a condition */
        k = 1;
    free(a);
    free(b);
    return k;
}
