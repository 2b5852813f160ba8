/* Loops that free (docs/spm.md, "Loops"): arrays that only ever hold an
 * object's start (set from malloc alone) are translated once before a loop
 * that mallocs and frees list cells (directly, or in pop(), a function of the
 * program), pinned for the loop, instead of once per region of every
 * iteration.  free drops such a pin when its object is the one freed (the
 * runtime's guard stack): the last loop frees the very array it read at the
 * top of the same iteration (`tab`), through a copy of the pointer
 * (`victim`) and inside a function of the program (release()). */
#include <stdio.h>
#include <stdlib.h>

typedef struct cell {
    int v;
    struct cell *next;
} cell;

static cell *pop(cell *top)
{
    cell *next = top->next;
    free(top);
    return next;
}

static void release(int *p) { free(p); }

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
    int *hist = malloc(8 * sizeof *hist);
    for (int i = 0; i < 8; i++)
        hist[i] = 0;
    while (stack) {
        sum += stack->v;
        hist[stack->v & 7]++;
        stack = pop(stack);
    }
    for (int i = 0; i < 8; i++)
        sum = sum * 3 + hist[i];
    free(hist);
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
            release(victim);
    }
    printf("sum=%ld mix=%lu tsum=%ld\n", sum, mix, tsum);
    free(last);
    free(seen);
    return 0;
}
