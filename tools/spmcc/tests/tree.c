/* A binary search tree: recursive functions that take and return heap
 * pointers, several pointers live in one region (pins), a parent pointer
 * per node, in-order walks, deletion of the whole tree. */
#include <stdio.h>
#include <stdlib.h>

typedef struct tnode {
    int key;
    int count;
    struct tnode *left, *right, *parent;
} tnode;

static tnode *make(int key, tnode *parent)
{
    tnode *t = malloc(sizeof *t);
    t->key = key;
    t->count = 1;
    t->left = NULL;
    t->right = NULL;
    t->parent = parent;
    return t;
}

static tnode *insert(tnode *root, int key)
{
    if (!root)
        return make(key, NULL);
    tnode *cur = root;
    for (;;) {
        int k = cur->key;
        if (k == key) {
            cur->count++;
            return root;
        }
        tnode *next = key < k ? cur->left : cur->right;
        if (!next) {
            tnode *leaf = make(key, cur);
            if (key < k)
                cur->left = leaf;
            else
                cur->right = leaf;
            return root;
        }
        cur = next;
    }
}

static long walk(const tnode *t, int depth, int *maxdepth)
{
    if (!t)
        return 0;
    if (depth > *maxdepth)
        *maxdepth = depth;
    long s = walk(t->left, depth + 1, maxdepth);
    s = s * 3 + t->key * t->count;
    return s + walk(t->right, depth + 1, maxdepth);
}

static int check_parents(const tnode *t)
{
    if (!t)
        return 1;
    const tnode *l = t->left, *r = t->right;
    if (l && l->parent != t)
        return 0;
    if (r && r->parent != t)
        return 0;
    return check_parents(l) && check_parents(r);
}

static const tnode *find(const tnode *t, int key)
{
    while (t) {
        int k = t->key;
        if (k == key)
            return t;
        t = key < k ? t->left : t->right;
    }
    return NULL;
}

static void destroy(tnode *t)
{
    if (!t)
        return;
    destroy(t->left);
    destroy(t->right);
    free(t);
}

int main(void)
{
    tnode *root = NULL;
    unsigned x = 99;
    for (int i = 0; i < 1500; i++) {
        x = x * 1664525u + 1013904223u;
        root = insert(root, (int)((x >> 8) % 2000));
    }
    int maxdepth = 0;
    long s = walk(root, 0, &maxdepth);
    int found = 0;
    for (int k = 0; k < 2000; k += 7) {
        const tnode *f = find(root, k);
        if (f)
            found += f->count;
    }
    printf("walk %ld depth %d parents %d found %d\n", s, maxdepth, check_parents(root), found);
    destroy(root);
    return 0;
}
