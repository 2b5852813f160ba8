/* Heap pointers read from the heap and accessed at once (pointer chasing in
 * one expression): x->left->parent, p->next->next->key, rows[i][j]; a store
 * to the field a chain reads (p->next = ...) ends the chain's translation;
 * a declaration accessing through a pointer it declares itself. */
#include <stdio.h>
#include <stdlib.h>

struct node {
    int key;
    struct node *next, *left, *right, *parent;
};

static struct node *mk(int key)
{
    struct node *n = calloc(1, sizeof *n);
    n->key = key;
    return n;
}

int main(void)
{
    struct node *x = mk(10);
    x->left = mk(5);
    x->right = mk(15);
    x->left->parent = x;
    x->right->parent = x;
    x->left->left = mk(2);
    x->left->left->parent = x->left;
    int s = x->left->parent->key + x->right->parent->key + x->left->left->parent->key;
    x->left->left->key += x->right->key;
    printf("s %d deep %d\n", s, x->left->left->key);

    struct node *head = mk(0);
    struct node *p = head;
    for (int i = 1; i < 50; i++) {
        p->next = mk(i * 3);
        p->next->parent = p;
        p = p->next;
    }
    long sum = 0;
    for (p = head; p; p = p->next) {
        struct node *q = p->next;
        if (!q || !q->next)
            break;
        sum += p->next->next->key - p->next->parent->key;
        p->next->key += 1;
        sum += p->next->key;
    }
    printf("sum %ld\n", sum);
    /* a declaration that accesses through a pointer it declares itself */
    struct node *h1 = head, *h2 = h1->next, *h3 = h2->next;
    int k3 = h3->key + h2->key * 2 + h1->next->next->next->key;
    printf("k3 %d\n", k3);

    int n = 12;
    int **rows = malloc((size_t)n * sizeof *rows);
    for (int i = 0; i < n; i++) {
        rows[i] = malloc((size_t)n * sizeof(int));
        for (int j = 0; j < n; j++)
            rows[i][j] = i * j - j;
    }
    long t = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            t += rows[i][j] * rows[j][i];
    printf("t %ld\n", t);
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);

    while (head) {
        struct node *nx = head->next;
        free(head);
        head = nx;
    }
    free(x->left->left);
    free(x->left);
    free(x->right);
    free(x);
    return 0;
}
