/* Arrays streamed beside a nested loop (docs/spm.md, "Loops", streamed
 * arrays).  A for loop that indexes an array only by the variable it steps
 * (`sums[i]`), and only outside its nested loops, while a nested loop
 * allocates and translates other pointers (list cells built and freed), gets
 * element translations (partial transfers) of that array in its regions
 * instead of one pin of the whole array across the loop.  `sums` holds 3,000
 * longs (24,000 bytes), more than the tests' local memories: the runtime
 * keeps it out of core and reaches it only in pieces, so the whole-array pin
 * the pass made before the rule fails (spmcc.stream.pinned_whole_fails).
 *
 * The loops after it must still pin their array whole (in-core sizes):
 * - `hot`: also indexed inside the nested loop;
 * - `perm`: indexed at the top level by a value read from the heap, not by
 *   the loop's own variable;
 * - `quiet`: the nested loop only reads a list (it allocates nothing and
 *   calls nothing of the program);
 * - `down`: stepped by a while loop, not a for loop;
 * - `inner`: read inside a nested loop that only reads, beside a nested loop
 *   that allocates.
 * spmcc.stream.choice checks the rewrite's text for those choices. */
#include <stdio.h>
#include <stdlib.h>

typedef struct cell {
    long v;
    struct cell *next;
} cell;

enum { BIG = 3000, SMALL = 64 };

static unsigned long streamed(void)
{
    long *sums = calloc(BIG, sizeof *sums);
    unsigned long bad = 0, total = 0;
    for (int i = 0; i < BIG; i++) {
        cell *head = NULL;
        long s = 0;
        for (int k = 0; k <= i % 3; k++) {
            cell *c = malloc(sizeof *c);
            c->v = (long)i * 7 + k;
            c->next = head;
            head = c;
        }
        while (head) {
            cell *next = head->next;
            s += head->v;
            free(head);
            head = next;
        }
        sums[i] = s;
    }
    /* the check rebuilds each list and compares its sum with sums[i] */
    for (int i = 0; i < BIG; i++) {
        cell *head = NULL;
        long s = 0;
        for (int k = 0; k <= i % 3; k++) {
            cell *c = malloc(sizeof *c);
            c->v = (long)i * 7 + k;
            c->next = head;
            head = c;
        }
        for (cell *c = head; c; c = c->next)
            s += c->v;
        while (head) {
            cell *next = head->next;
            free(head);
            head = next;
        }
        long got = sums[i];    /* one statement: one element translation */
        bad += got != s;
        total = total * 31 + (unsigned long)got;
    }
    free(sums);
    return bad ? bad : total;
}

static unsigned long still_pinned(void)
{
    long *hot = malloc(SMALL * sizeof *hot), *perm = malloc(SMALL * sizeof *perm);
    long *quiet = malloc(SMALL * sizeof *quiet), *down = malloc(SMALL * sizeof *down);
    long *inner = malloc(SMALL * sizeof *inner);
    cell *list = NULL;
    unsigned long total = 0;
    for (int i = 0; i < SMALL; i++) {
        hot[i] = i;
        perm[i] = (i * 29 + 5) % SMALL;
        quiet[i] = 3 * i;
        down[i] = SMALL - i;
        inner[i] = 5 * i + 1;
    }
    for (int i = 0; i < 8; i++) {
        cell *c = malloc(sizeof *c);
        c->v = i;
        c->next = list;
        list = c;
    }
    /* hot: indexed in the nested loop too */
    for (int i = 0; i < SMALL; i++) {
        cell *head = NULL;
        hot[i] += 1;
        for (int k = 0; k < 2; k++) {
            cell *c = malloc(sizeof *c);
            c->v = hot[(i + k) % SMALL];
            c->next = head;
            head = c;
        }
        while (head) {
            cell *next = head->next;
            total += head->v;
            free(head);
            head = next;
        }
    }
    /* perm: a data-dependent index at the top level */
    for (int i = 0; i < SMALL; i++) {
        cell *c = malloc(sizeof *c);
        long v;
        c->v = i;
        v = c->v;
        total = total * 3 + (unsigned long)perm[(v * 5) % SMALL];
        for (int k = 0; k < 2; k++) {
            cell *d = malloc(sizeof *d);
            d->v = k + v;
            total += d->v;
            free(d);
        }
        free(c);
    }
    /* quiet: the nested loop only reads */
    for (int i = 0; i < SMALL; i++) {
        long q = quiet[i] += i;
        for (cell *c = list; c; c = c->next)
            total += c->v * q;
    }
    /* down: a while loop */
    {
        int i = SMALL;
        while (i > 0) {
            i--;
            total += down[i];
            for (int k = 0; k < 2; k++) {
                cell *d = malloc(sizeof *d);
                d->v = k;
                total += d->v;
                free(d);
            }
        }
    }
    /* inner: read in a nested loop that only reads */
    for (int i = 0; i < SMALL; i++) {
        for (int k = 0; k < 2; k++)
            total = total * 5 + (unsigned long)inner[i] + (unsigned long)k;
        for (int k = 0; k < 2; k++) {
            cell *d = malloc(sizeof *d);
            d->v = k;
            total += d->v;
            free(d);
        }
    }
    while (list) {
        cell *next = list->next;
        free(list);
        list = next;
    }
    free(inner);
    free(down);
    free(quiet);
    free(perm);
    free(hot);
    return total;
}

int main(void)
{
    printf("streamed %lu\n", streamed());
    printf("pinned %lu\n", still_pinned());
    return 0;
}
