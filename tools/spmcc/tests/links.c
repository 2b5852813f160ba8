/* Pointers to pointers that may hold a heap address or the address of a
 * host object (the pass's _any translations): a sorted list and a binary
 * tree inserted through `T **link`, which starts at a local or a global
 * root and then walks the heap nodes' link fields; an int pointer that is
 * either a heap cell or a local; `&*link` handed on (s2p_any); a function
 * that takes the link. */
#include <stdio.h>
#include <stdlib.h>

typedef struct item {
    int key;
    struct item *next;
} item;

typedef struct bnode {
    int key, hits;
    struct bnode *left, *right;
} bnode;

typedef struct forest {
    bnode *root;
    int count;
} forest;

static item *global_head;

static void push_sorted(item **head, int key)
{
    item **link = head;
    while (*link && (*link)->key < key)
        link = &(*link)->next;
    item *n = malloc(sizeof *n);
    n->key = key;
    n->next = *link;
    *link = n;
}

/* the link after the last item (a host root when the list is empty) */
static item **tail_link(item **head)
{
    item **link = head;
    while (*link)
        link = &(*link)->next;
    return link;
}

static int bst_insert(forest *f, int key)
{
    bnode **link = &f->root, *p;
    while ((p = *link) != NULL) {
        if (p->key == key) {
            p->hits++;
            return 0;
        }
        link = key < p->key ? &p->left : &p->right;
    }
    p = malloc(sizeof *p);
    p->key = key;
    p->hits = 1;
    p->left = p->right = NULL;
    *link = p;
    f->count++;
    return 1;
}

static long walk(const bnode *n, int depth)
{
    long s = 0;
    while (n) {
        s += walk(n->left, depth + 1) * 3 + (long)n->key * n->hits + depth;
        n = n->right;
        depth++;
    }
    return s;
}

static void destroy(bnode *n)
{
    while (n) {
        bnode *r = n->right;
        destroy(n->left);
        free(n);
        n = r;
    }
}

int main(void)
{
    item *local_head = NULL;
    forest f = {NULL, 0};
    unsigned x = 12345;
    for (int i = 0; i < 400; i++) {
        x = x * 1103515245u + 12345u;
        int k = (int)(x >> 16) % 1000;
        push_sorted(i % 3 ? &local_head : &global_head, k);
        bst_insert(&f, k % 257);
    }
    item **end = tail_link(&local_head);
    *end = malloc(sizeof **end);
    (*end)->key = 5000;
    (*end)->next = NULL;
    item **empty_end = tail_link(&(item *){NULL});
    unsigned long s = 0;
    long prev = -1, sorted = 1;
    for (item *it = local_head; it; it = it->next) {
        sorted &= it->key >= prev;
        prev = it->key;
        s = s * 31 + (unsigned long)it->key;
    }
    for (item *it = global_head; it; it = it->next)
        s = s * 17 + (unsigned long)it->key;
    int local_cell = 7;
    int *cell = f.count > 1000 ? malloc(sizeof *cell) : &local_cell;
    *cell += f.count;
    int *heap_cell = f.count > 0 ? malloc(sizeof *heap_cell) : &local_cell;
    *heap_cell = 11;
    printf("sorted=%ld list=%lu tree=%ld count=%d cell=%d heap=%d empty_end_null=%d\n", sorted, s,
           walk(f.root, 0), f.count, local_cell, *heap_cell, *empty_end == NULL);
    if (heap_cell != &local_cell)
        free(heap_cell);
    while (local_head) {
        item *n = local_head->next;
        free(local_head);
        local_head = n;
    }
    while (global_head) {
        item *n = global_head->next;
        free(global_head);
        global_head = n;
    }
    destroy(f.root);
    return 0;
}
