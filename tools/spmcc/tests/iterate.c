/* Loops whose pointer changes only in the increment: one translation per
 * iteration (docs/spm.md, "Loops").  A list walked by a for loop that only
 * reads (p2s_ro in the condition), the same walk with a malloc in the body
 * (a pin, released by the increment; a continue goes there too; a break
 * leaves it to the release after the loop), a binary-tree search whose
 * while body ends with `n = k < n->key ? n->left : n->right`, and rows read
 * through a loop-invariant table beside a char store (the table is
 * translated before the loop, each row once per iteration); if statements
 * whose accesses all go through one pointer the condition reads (one
 * translation in the condition serves both branches, a return inside). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cell {
    int v;
    struct cell *next;
} cell;

typedef struct tn {
    int key;
    struct tn *left, *right;
} tn;

static tn *put(tn *root, int key)
{
    tn *n = malloc(sizeof *n);
    n->key = key;
    n->left = n->right = NULL;
    if (!root)
        return n;
    tn *p = root;
    for (;;) {
        tn **side = key < p->key ? &p->left : &p->right;
        if (!*side) {
            *side = n;
            return root;
        }
        p = *side;
    }
}

static int depth_of(const tn *n, int key)
{
    int d = 0;
    while (n && n->key != key) {
        d++;
        n = key < n->key ? n->left : n->right;
    }
    return n ? d : -1;
}

static int classify(const tn *n, int key)
{
    if (n && n->key == key) {
        if (n->left && n->right)
            return 3;
        return n->left ? 1 : n->right ? 2 : 0;
    } else if (n) {
        return key < n->key ? -1 : -2;
    }
    return -3;
}

static void drop(tn *n)
{
    if (!n)
        return;
    drop(n->left);
    drop(n->right);
    free(n);
}

int main(void)
{
    cell *list = NULL;
    for (int i = 0; i < 500; i++) {
        cell *c = malloc(sizeof *c);
        c->v = (i * 37) % 101;
        c->next = list;
        list = c;
    }
    long sum = 0;
    for (const cell *c = list; c; c = c->next)
        sum += c->v * 3 + (c->v & 1);
    cell *copies = NULL;
    int made = 0;
    for (cell *c = list; c; c = c->next) {
        if (c->v % 7 == 0)
            continue;
        if (made == 300)
            break;
        cell *d = malloc(sizeof *d);
        d->v = c->v + 1;
        d->next = copies;
        copies = d;
        c->v += made++;
    }
    tn *root = NULL;
    for (int i = 0; i < 200; i++)
        root = put(root, (i * 73) % 211);
    long depths = 0;
    for (int k = 0; k < 220; k++)
        depths += depth_of(root, k) * 8 + classify(root, k) + classify(root->left, k);
    char **rows = malloc(8 * sizeof *rows);
    for (int r = 0; r < 8; r++) {
        rows[r] = malloc(33);
        for (int j = 0; j < 32; j++)
            rows[r][j] = (char)('a' + (r * 5 + j) % 26);
        rows[r][32] = '\0';
    }
    char *low = malloc(8 * 32 + 1);
    int t = 3;
    for (int i = 0; i < 32; i++)
        low[i] = (char)(rows[t][i] - 32);
    low[32] = '\0';
    unsigned long csum = 0;
    for (const cell *c = copies; c; c = c->next)
        csum = csum * 7 + (unsigned long)c->v;
    for (const cell *c = list; c; c = c->next)
        csum = csum * 3 + (unsigned long)c->v;
    printf("sum=%ld made=%d csum=%lu depths=%ld low=%s\n", sum, made, csum, depths, low);
    free(low);
    for (int r = 0; r < 8; r++)
        free(rows[r]);
    free(rows);
    drop(root);
    while (list) {
        cell *n = list->next;
        free(list);
        list = n;
    }
    while (copies) {
        cell *n = copies->next;
        free(copies);
        copies = n;
    }
    return 0;
}
