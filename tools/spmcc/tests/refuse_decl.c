/* Refused: a declaration that accesses the heap through a pointer it
 * declares itself (the translation would come before the declaration). */
#include <stdlib.h>
struct node { int key; struct node *next; };
int main(void)
{
    struct node *list = malloc(sizeof *list);
    list->key = 1;
    list->next = NULL;
    struct node *a = list, *b = a->next; /* REFUSED: which it declares itself */
    int k = a->key + (b != NULL);
    free(list);
    return k;
}
