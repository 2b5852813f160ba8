/* A heap pointer as a variadic argument of the program's function: va_arg
 * received it untranslated. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
static int sum(int n, ...)
{
    va_list ap;
    int s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += *va_arg(ap, int *);
    va_end(ap);
    return s;
}
int main(void)
{
    int *a = malloc(sizeof *a);
    *a = 2;
    printf("%d\n", sum(1, a)); /* REFUSED: passed as a variadic argument of 'sum' */
    free(a);
    return 0;
}
