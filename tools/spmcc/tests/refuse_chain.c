/* Refused: a condition that reads a heap pointer from the heap and accesses
 * through it (a statement may; a condition has nowhere to put the pointer). */
#include <stdlib.h>
struct node { int key; struct node *next; };
int main(void)
{
    struct node *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    a->next = b;
    b->key = 4;
    int k = 0;
    if (a->next->key == 4) /* REFUSED: reads the heap pointer 'a->next' from the heap */
        k = 1;
    free(a);
    free(b);
    return k;
}
