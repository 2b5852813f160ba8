/* A translation made in a condition serving the statements after it
 * (docs/spm.md, "If statements through one pointer" and "While loops: the
 * condition's translation"): a binary-tree insert through `node **link`
 * (`while (*link) { p = *link; if (key == p->key) {...; return} link =
 * ... &p->left ...; }`: link translated once per iteration in the
 * condition, p once in the if's condition, and both reused by the run that
 * follows).  The runs where reuse would be WRONG must translate again and
 * print what the original prints:
 *   - a malloc between the if and the next access (paranoid mode evicts
 *     every unpinned unit at each malloc);
 *   - a call of the program that allocates;
 *   - an access through another pointer (its translation may evict);
 *   - the pointer changed in the run (`p = p->next; ... p->v`);
 *   - a while body whose first run allocates before it reads;
 *   - two pointers swapped in a branch: reused (link_min), but not when a
 *     branch sets one from an untranslated pointer (pick), when a malloc
 *     follows the if (pair_then_alloc) or when a branch without braces
 *     copies (swap_or_take).
 * --unsafe-tail (a test-only flag) reuses the translation in those runs
 * too: the paranoid run must then fail or print something else. */
#include <stdio.h>
#include <stdlib.h>

typedef struct node {
    long key, hits;
    struct node *left, *right;
} node;

typedef struct cell {
    long v;
    struct cell *next;
} cell;

static node *root;
static long spare_total;

static int insert(node **top, long key)
{
    node *p = NULL, **link = top;
    while (*link) {
        p = *link;
        if (key == p->key) {
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
    return 1;
}

static long walk(const node *n)
{
    long s = 0;
    while (n) {
        s += walk(n->left) * 3 + n->key * n->hits;
        n = n->right;
    }
    return s;
}

static void destroy(node *n)
{
    if (!n)
        return;
    destroy(n->left);
    destroy(n->right);
    free(n);
}

static cell *spare(long v)
{
    cell *c = malloc(sizeof *c);
    c->v = v;
    c->next = NULL;
    spare_total += v;
    return c;
}

static long probe(cell *c, cell *d, cell **keep, int *nkeep)
{
    long sum = 0;
    /* reused: nothing between the if and the next access through c */
    if (c->v % 7 == 0) {
        sum += 100;
    }
    sum += c->v * 5;
    /* WRONG to reuse: a malloc before the next access through c */
    if (c->v % 5 == 0) {
        sum += c->v;
    }
    keep[(*nkeep)++] = malloc(sizeof(cell));
    sum += c->v * 2;
    /* WRONG to reuse: a call of the program that allocates */
    if (c->v % 3 == 0) {
        sum -= c->v;
    }
    keep[(*nkeep)++] = spare(c->v);
    sum += c->v;
    /* WRONG to reuse: d's translation comes between */
    if (c->v > 10) {
        sum ^= c->v;
    }
    sum += d->v + c->v;
    /* WRONG to reuse: the pointer changes in the run */
    cell *e = c;
    if (e->v & 1) {
        sum += 7;
    }
    e = e->next;
    sum += e->v;
    return sum;
}

/* two pointers read in the condition, swapped in the branch, both used
 * after it (dijkstra's meld): translated once, the swap mirrored */
static cell *link_min(cell *a, cell *b)
{
    if (b->v < a->v || (b->v == a->v && b->v > 100)) {
        cell *t = a;
        a = b;
        b = t;
    }
    b->next = a->next;
    a->next = b;
    return a;
}

/* WRONG to mirror: an else branch without braces (`else a = b;` followed
 * by the mirror would run it unconditionally) */
static long swap_or_take(cell *a, cell *b)
{
    if (b->v < a->v) {
        cell *t = a;
        a = b;
        b = t;
    } else
        a = b;
    a->v += 1;
    b->v += 2;
    return a->v * 5 + b->v;
}

/* WRONG to reuse after the if: the branch sets a from a pointer the
 * condition did not translate */
static long pick(cell *a, cell *b, cell *other)
{
    if (a->v > b->v) {
        a = other;
    }
    a->v += b->v;
    return a->v;
}

/* WRONG to reuse: a malloc after the if, before the accesses */
static long pair_then_alloc(cell *a, cell *b, cell **keep, int *nkeep)
{
    if (a->v < b->v) {
        cell *t = a;
        a = b;
        b = t;
    }
    keep[(*nkeep)++] = malloc(sizeof(cell));
    a->v -= 1;
    return a->v * 2 + b->v;
}

int main(void)
{
    long made = 0;
    for (long i = 0; i < 400; i++)
        made += insert(&root, (i * 7919) % 257);
    cell *head = NULL;
    for (long i = 0; i < 60; i++) {
        cell *c = malloc(sizeof *c);
        c->v = i * 3 + 1;
        c->next = head;
        head = c;
    }
    cell *keep[400];
    int nkeep = 0;
    long sum = 0;
    for (cell *c = head; c && c->next; c = c->next)
        sum += probe(c, c->next, keep, &nkeep);
    cell *x = malloc(sizeof *x), *y = malloc(sizeof *y), *z = malloc(sizeof *z);
    x->v = 5;
    y->v = 3;
    z->v = 11;
    x->next = y->next = z->next = NULL;
    for (int i = 0; i < 40; i++) {
        cell *m = link_min(i & 1 ? x : y, i & 1 ? y : x);
        sum += m->v * 3 + m->next->v;
        m->next->v += i % 5;
        sum += pick(x, y, z) + pair_then_alloc(y, z, keep, &nkeep) + swap_or_take(z, x);
        x->next = y->next = z->next = NULL;
        if (nkeep > 170)
            break;
    }
    free(x);
    free(y);
    free(z);
    /* WRONG to reuse in a while body: the body allocates before it reads */
    cell *w = head;
    while (w->next) {
        keep[nkeep++] = malloc(sizeof(cell));
        w = w->next;
        if (nkeep >= 390)
            break;
    }
    sum += w->v;
    for (int i = 0; i < nkeep; i++)
        free(keep[i]);
    while (head) {
        cell *n = head->next;
        free(head);
        head = n;
    }
    printf("made=%ld walk=%ld sum=%ld spare=%ld\n", made, walk(root), sum, spare_total);
    destroy(root);
    return 0;
}
