/* A condition's pin serves the first statements of its then-branch
 * (docs/spm.md, "If statements: the condition's pin"): an explicit-stack
 * depth-first walk over a tree, as bench/workloads/programs/dfs.c walks its
 * graph.  `if (top->next_child < top->n) { c = top->at->kids[...]; ...` pins top
 * in the condition; the branch's first run reads and advances it through
 * that pin and releases it, then mallocs a frame and reassigns top (which
 * the pin must not serve); the else branch releases the pin and pops,
 * freeing the frame. */
#include <stdio.h>
#include <stdlib.h>

typedef struct node {
    int key, n;
    struct node *kids[3];
} node;

typedef struct frame {
    node *at;
    int next_child, n;
    struct frame *below;
} frame;

static node *build(int depth, int *made)
{
    node *x = malloc(sizeof *x);
    x->key = (*made)++ * 7 % 31;
    x->n = depth > 0 ? 1 + x->key % 3 : 0;
    for (int i = 0; i < x->n; i++)
        x->kids[i] = build(depth - 1, made);
    return x;
}

static void drop(node *x)
{
    for (int i = 0; i < x->n; i++)
        drop(x->kids[i]);
    free(x);
}

int main(void)
{
    int made = 0;
    node *root = build(6, &made);
    frame *top = malloc(sizeof *top);
    top->at = root;
    top->next_child = 0;
    top->n = root->n;
    top->below = NULL;
    unsigned long order = 0;
    long visits = 0;
    int depth = 1, deepest = 1;
    while (top) {
        if (top->next_child < top->n) {
            node *c = top->at->kids[top->next_child];
            top->next_child++;
            order = order * 3 + (unsigned long)c->key;
            {
                frame *f = malloc(sizeof *f);
                f->at = c;
                f->next_child = 0;
                f->n = c->n;
                f->below = top;
                top = f;
                if (++depth > deepest)
                    deepest = depth;
            }
        } else {
            frame *f = top;
            visits += f->at->key;
            top = f->below;
            free(f);
            depth--;
        }
    }
    printf("nodes=%d order=%lu visits=%ld deepest=%d\n", made, order, visits, deepest);
    drop(root);
    return 0;
}
