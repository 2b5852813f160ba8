/* Loops that free (docs/spm.md, "Loops"): arrays that only ever hold an
 * object's start (set from malloc alone) are translated once before a loop
 * that mallocs and frees list cells, pinned for the loop, instead of once per
 * region of every iteration.  Before each free inside such a loop the pass
 * drops a hoisted pin whose object is the one freed: the last loop frees the
 * very array it read at the top of the same iteration (`tab`), and the
 * program frees through a copy of that pointer (`victim`). */
#include <stdio.h>
#include <stdlib.h>

typedef struct cell {
    int v;
    struct cell *next;
} cell;

int main(void)
{
    int n = 300;
    int *seen = malloc(n * sizeof *seen), *last = malloc(n * sizeof *last);
    cell *stack = NULL;
    long sum = 0;
    for (int i = 0; i < n; i++) {
        seen[i] = 0;
        last[i] = -1;
    }
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < n; i++) {
            int k = (i * 37 + round * 11) % n;
            if (seen[k] > round) {
                cell *c = malloc(sizeof *c);
                c->v = k;
                c->next = stack;
                stack = c;
            } else if (stack) {
                cell *top = stack;
                last[top->v] = i;
                stack = top->next;
                free(top);
            }
            seen[k] += 1 + (i & 1);
        }
    }
    while (stack) {
        cell *top = stack;
        sum += top->v;
        stack = top->next;
        free(top);
    }
    unsigned long mix = 0;
    for (int i = 0; i < n; i++)
        mix = mix * 31 + (unsigned long)(seen[i] * 7 + last[i]);
    /* the pinned array freed inside the loop that pins it */
    int *tab = malloc(64 * sizeof *tab);
    for (int i = 0; i < 64; i++)
        tab[i] = i * 3;
    long tsum = 0;
    for (int i = 0; i < 64; i++) {
        cell *c = malloc(sizeof *c);
        c->v = tab[i];
        tsum += c->v;
        int *victim = tab;
        free(c);
        if (i == 63)
            free(victim);
    }
    printf("sum=%ld mix=%lu tsum=%ld\n", sum, mix, tsum);
    free(last);
    free(seen);
    return 0;
}
