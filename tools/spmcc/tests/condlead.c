/* A condition's last translation serves the first run of statements of each
 * branch (docs/spm.md, "Conditions: the last translation serves the
 * branches"): nothing between the end of an if or while condition and the
 * first statement of its branch moves data, so that statement may read
 * through the condition's local address instead of translating again, as
 * long as nothing in the run moves data, translates another pointer or
 * changes the pointer before its last use.  The first functions are the
 * right cases (rbtree's rotation and fix-up shapes); the ones marked WRONG
 * would read a dead local address if the condition's translation served
 * them: the pass must translate again there.  The paranoid run (every p2s,
 * pin and malloc evicts every unpinned unit and poisons its bytes) reads
 * poison where a dead local address is used, and the test run with
 * --unsafe-lead (the run's moves and other translations ignored) must fail
 * for that reason. */
#include <stdio.h>
#include <stdlib.h>

typedef struct node {
    long key, val;
    int red;
    struct node *left, *right, *parent, *other;
} node;

static long sum;
static node *gone;     /* freed before guarded(0, gone) */

static node *make(long k, node *parent)
{
    node *n = malloc(sizeof *n);
    n->key = k;
    n->val = k * 7;
    n->red = (int)(k & 1);
    n->left = n->right = n->other = NULL;
    n->parent = parent;
    return n;
}

/* right: x->parent (the condition's last translation) serves both branches */
static void relink(node *x, node *y)
{
    if (x == x->parent->left)
        x->parent->left = y;
    else
        x->parent->right = y;
}

/* right: the branch reads y->left through the condition's y */
static void adopt(node *y, node *x)
{
    if (y->left)
        y->left->parent = x;
}

/* right: a while condition's last translation serves the body's first run
 * (rbtree's fix-up: `while (z->parent && z->parent->red) { g = ...`) */
static long climb(node *z)
{
    long n = 0;
    while (z->parent && z->parent->red) {
        node *g = z->parent->parent;
        n += z->parent->key;
        z = g ? g : z->parent;
        if (!g)
            break;
    }
    return n;
}

/* right: a run of several statements, written through, the pointer changed
 * only by the last (`n = n->left`) */
static long descend(node *n)
{
    long s = 0;
    while (n->left) {
        n->val += 1;
        s += n->val;
        n = n->left;
    }
    return s + n->key;
}

/* WRONG: an allocation before the branch's use of p */
static node *alloc_first(node *p, long k)
{
    node *q = NULL;
    if (p->key > 0) {
        q = make(k, p);
        p->other = q;
        p->val += q->key;
    }
    return q;
}

/* WRONG: another pointer's translation before the branch's use of p */
static void other_first(node *p, node *q)
{
    if (p->red) {
        q->val += 3;
        p->val += q->val;
    }
    q->val -= 1;
}

/* WRONG: a call of the program (which translates) before the use of p */
static void call_first(node *p, node *q)
{
    if (p->key) {
        relink(q, p);
        p->val++;
    }
}

/* WRONG: p->left translated (through p) before p is used directly again */
static void chain_first(node *p)
{
    if (p->left) {
        p->left->val += 5;
        p->val += 2;
    }
}

/* WRONG: p->left->left (read through p->left, read through p) used after
 * another pointer's translation: its translation would start from p's dead
 * local address */
static long deep_after_other(node *p, node *q)
{
    long s = 0;
    if (p->key > 0) {
        p->val += 1;
        q->val += 2;
        s = p->left->left->key;
    }
    return s;
}

/* WRONG: the condition's one access runs only when n > 0; translated before
 * the condition to serve the branch, p would be translated also when it is
 * dangling (main passes a freed node with n == 0) */
static void guarded(int n, node *p)
{
    if (n > 0 && p->key)
        p->val++;
}

/* WRONG: the pointer changes before its last use */
static long moved_first(node *p)
{
    long s = 0;
    if (p->right) {
        p = p->right;
        s = p->key;
    }
    return s;
}

int main(void)
{
    unsigned long h = 1469598103934665603ul;
    for (long round = 0; round < 40; round++) {
        node *root = make(round + 100, NULL);
        node *a = make(round + 1, root), *b = make(round + 2, root);
        root->left = a;
        root->right = b;
        node *c = make(round + 3, a), *d = make(round + 4, b);
        a->left = c;
        b->left = d;
        c->red = 1;
        a->red = 1;
        relink(c, d);          /* c is a's left: a->left = d */
        relink(d, c);          /* d is b's left: b->left = c */
        adopt(a, b);           /* a->left (d) gets parent b */
        adopt(c, a);           /* c has no left */
        sum += climb(c) + climb(d);
        sum += descend(root);
        node *q = alloc_first(a, round * 3 + 5);
        if (q)
            sum += q->val + a->val;
        other_first(a, b);
        other_first(b, a);
        call_first(b, a);      /* a is root's left: root->left = b */
        chain_first(root);
        chain_first(b);
        sum += moved_first(root) + moved_first(c);
        sum += deep_after_other(root, d);   /* root->left->left is c */
        gone = make(round, NULL);
        guarded(1, gone);
        sum += gone->val;
        free(gone);
        guarded(0, gone);          /* never read: n == 0 */
        node *all[5];
        all[0] = root;
        all[1] = a;
        all[2] = b;
        all[3] = c;
        all[4] = d;
        for (int i = 0; i < 5; i++) {
            node *n = all[i];
            h = (h ^ (unsigned long)n->val) * 1099511628211ul;
            h = (h ^ (unsigned long)n->key) * 1099511628211ul;
            h ^= (unsigned long)(n->left == c) << 1 | (unsigned long)(n->left == d) << 2 |
                 (unsigned long)(n->right == b) << 3 | (unsigned long)(n->parent == b) << 4;
        }
        for (int i = 0; i < 5; i++) {
            node *n = all[i];
            if (n->other)
                free(n->other);
            free(n);
        }
    }
    printf("sum=%ld hash=%lx\n", sum, h);
    return 0;
}
