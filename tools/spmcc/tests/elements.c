/* Element translations (docs/spm.md, "The compiler pass"): a large array
 * indexed one element per statement, as rbtree's key array is, beside a list
 * that pushes it out of local memory.  Each access translates only its
 * element (spmcc_p2s_part), so the runtime fetches only the piece that holds
 * it: an append (`keys[n++] = k`), an element read as the argument of a call
 * that allocates (`push(&list, keys[j])`), a swap-delete (`keys[j] =
 * keys[--n]`, also with j == n - 1), and an argument beside another call,
 * which keeps the whole-array translation. */
#include <stdio.h>
#include <stdlib.h>

typedef struct node {
    unsigned v;
    unsigned pad[13]; /* 64-byte nodes: the list soon outgrows local memory */
    struct node *next;
} node;

static unsigned rng_state = 12345u;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

static void push(node **list, unsigned v)
{
    node *x = malloc(sizeof *x);
    x->v = v;
    for (unsigned i = 0; i < 13; i++)
        x->pad[i] = v + i;
    x->next = *list;
    *list = x;
}

static unsigned mix(unsigned a, unsigned b) { return a * 31u + b; }

int main(void)
{
    unsigned cap = 1024, n = 0, sum = 0;
    unsigned *keys = malloc(cap * sizeof *keys);
    node *list = NULL;
    for (unsigned round = 0; round < 3000; round++) {
        unsigned op = rnd(10);
        if (op < 4) {
            if (n == cap) { /* grown by realloc, as rbtree's: no translation is hoisted over the loop */
                cap *= 2;
                keys = realloc(keys, cap * sizeof *keys);
            }
            keys[n++] = rnd(100000);
        } else if (op < 6 && n) {
            unsigned j = rnd(n);
            push(&list, keys[j]);
        } else if (op < 8 && n) {
            unsigned j = op == 6 ? rnd(n) : n - 1;
            keys[j] = keys[--n];
        } else if (n) {
            unsigned j = rnd(n);
            sum = mix(keys[j], rnd(7)) + sum;
        }
    }
    for (unsigned i = 0; i < n; i++)
        sum = sum * 7u + keys[i];
    unsigned len = 0;
    while (list) {
        node *x = list;
        sum = sum * 3u + x->v + x->pad[12];
        list = x->next;
        free(x);
        len++;
    }
    free(keys);
    printf("n=%u list=%u sum=%u\n", n, len, sum);
    return 0;
}
