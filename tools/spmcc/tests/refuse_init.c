/* Refused: a heap pointer inside an initializer list. */
#include <stdlib.h>
struct pair { int *a; int n; };
int main(void)
{
    struct pair pr = { malloc(4 * sizeof(int)), 4 }; /* REFUSED: a heap pointer in an initializer list */
    pr.a[0] = 1;
    free(pr.a);
    return 0;
}
