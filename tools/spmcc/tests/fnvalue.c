/* The program's function used as a value (a function pointer) and also
 * called directly with heap pointers: calls through the pointer pass host
 * pointers only (a heap one is refused, refuse_fnptr_arg.c), so its
 * parameter may hold either and is translated with the _any calls (before,
 * the host array reached p2s_ro as if it were a heap address). */
#include <stdio.h>
#include <stdlib.h>
static int twice(int x) { return 2 * x; }
static int add(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
int main(void) {
    int (*f)(int) = twice;
    int *h = malloc(4 * sizeof *h);
    for (int i = 0; i < 4; i++) h[i] = f(i);
    int loc[3] = {1, 2, 3};
    int (*g)(const int *, int) = add;
    printf("%d %d\n", add(h, 4), g(loc, 3));
    free(h);
    return 0;
}
