/* Memory from an allocator the pass does not rewrite, freed beside the
 * rewritten malloc's: the heap's free got a host address. */
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    void *v[2];
    v[0] = malloc(16);
    v[1] = aligned_alloc(64, 128); /* REFUSED: 'aligned_alloc' is not rewritten */
    for (int i = 0; i < 2; i++)
        free(v[i]);
    puts("ok");
    return 0;
}
