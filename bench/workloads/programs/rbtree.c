/*
 * bench/workloads/programs/rbtree.c - a red-black tree (seed 000's rbTree).
 *
 *   rbtree -n 65536 [--ops N] [--seed S]
 *
 * One malloc per node, one free per deleted node, as a pointer-based tree
 * does.  Phases:
 *   1. insert n random keys (a key already present only updates its value);
 *   2. --ops mixed operations: 50% delete a random present key, 35% insert a
 *      new key, 15% look a key up;
 *   3. n look-ups, an in-order walk (checksum), a full invariant check
 *      (BST order, red nodes have black children, equal black heights,
 *      parent links, the node count);
 *   4. free every node (post-order).
 * Prints the checksum, the node count and the tree height.
 */
#include "prog_common.h"

typedef struct node {
    uint64_t key, value;
    struct node *left, *right, *parent;
    int red;
} node;

typedef struct tree {
    node *root;
    size_t count;
} tree;

static void rotate_left(tree *t, node *x)
{
    node *y = x->right;
    x->right = y->left;
    if (y->left)
        y->left->parent = x;
    y->parent = x->parent;
    if (!x->parent)
        t->root = y;
    else if (x == x->parent->left)
        x->parent->left = y;
    else
        x->parent->right = y;
    y->left = x;
    x->parent = y;
}

static void rotate_right(tree *t, node *x)
{
    node *y = x->left;
    x->left = y->right;
    if (y->right)
        y->right->parent = x;
    y->parent = x->parent;
    if (!x->parent)
        t->root = y;
    else if (x == x->parent->right)
        x->parent->right = y;
    else
        x->parent->left = y;
    y->right = x;
    x->parent = y;
}

static node *find(const tree *t, uint64_t key)
{
    node *n = t->root;
    while (n && n->key != key)
        n = key < n->key ? n->left : n->right;
    return n;
}

/* Returns 1 when a node was allocated, 0 when the key existed. */
static int insert(tree *t, uint64_t key, uint64_t value)
{
    node *p = NULL, **link = &t->root, *z;
    while (*link) {
        p = *link;
        if (key == p->key) {
            p->value = value;
            return 0;
        }
        link = key < p->key ? &p->left : &p->right;
    }
    z = xmalloc(sizeof *z);
    z->key = key;
    z->value = value;
    z->left = z->right = NULL;
    z->parent = p;
    z->red = 1;
    *link = z;
    t->count++;
    /* fix-up */
    while (z->parent && z->parent->red) {
        node *g = z->parent->parent;
        if (z->parent == g->left) {
            node *u = g->right;
            if (u && u->red) {
                z->parent->red = 0;
                u->red = 0;
                g->red = 1;
                z = g;
            } else {
                if (z == z->parent->right) {
                    z = z->parent;
                    rotate_left(t, z);
                }
                z->parent->red = 0;
                g->red = 1;
                rotate_right(t, g);
            }
        } else {
            node *u = g->left;
            if (u && u->red) {
                z->parent->red = 0;
                u->red = 0;
                g->red = 1;
                z = g;
            } else {
                if (z == z->parent->left) {
                    z = z->parent;
                    rotate_right(t, z);
                }
                z->parent->red = 0;
                g->red = 1;
                rotate_left(t, g);
            }
        }
    }
    t->root->red = 0;
    return 1;
}

static void transplant(tree *t, node *u, node *v)
{
    if (!u->parent)
        t->root = v;
    else if (u == u->parent->left)
        u->parent->left = v;
    else
        u->parent->right = v;
    if (v)
        v->parent = u->parent;
}

static int is_red(const node *n) { return n && n->red; }

/* Deletes node z and frees it.  x may be NULL (a nil leaf), so its parent
 * is tracked separately. */
static void erase(tree *t, node *z)
{
    node *y = z, *x, *xp;
    int y_red = y->red;
    if (!z->left) {
        x = z->right;
        xp = z->parent;
        transplant(t, z, z->right);
    } else if (!z->right) {
        x = z->left;
        xp = z->parent;
        transplant(t, z, z->left);
    } else {
        y = z->right;
        while (y->left)
            y = y->left;
        y_red = y->red;
        x = y->right;
        if (y->parent == z) {
            xp = y;
        } else {
            xp = y->parent;
            transplant(t, y, y->right);
            y->right = z->right;
            y->right->parent = y;
        }
        transplant(t, z, y);
        y->left = z->left;
        y->left->parent = y;
        y->red = z->red;
    }
    free(z);
    t->count--;
    if (y_red)
        return;
    while (x != t->root && !is_red(x)) {
        if (x == xp->left) {
            node *w = xp->right;
            if (is_red(w)) {
                w->red = 0;
                xp->red = 1;
                rotate_left(t, xp);
                w = xp->right;
            }
            if (!is_red(w->left) && !is_red(w->right)) {
                w->red = 1;
                x = xp;
                xp = x->parent;
            } else {
                if (!is_red(w->right)) {
                    w->left->red = 0;
                    w->red = 1;
                    rotate_right(t, w);
                    w = xp->right;
                }
                w->red = xp->red;
                xp->red = 0;
                if (w->right)
                    w->right->red = 0;
                rotate_left(t, xp);
                x = t->root;
                xp = NULL;
            }
        } else {
            node *w = xp->left;
            if (is_red(w)) {
                w->red = 0;
                xp->red = 1;
                rotate_right(t, xp);
                w = xp->left;
            }
            if (!is_red(w->left) && !is_red(w->right)) {
                w->red = 1;
                x = xp;
                xp = x->parent;
            } else {
                if (!is_red(w->left)) {
                    w->right->red = 0;
                    w->red = 1;
                    rotate_left(t, w);
                    w = xp->left;
                }
                w->red = xp->red;
                xp->red = 0;
                if (w->left)
                    w->left->red = 0;
                rotate_right(t, xp);
                x = t->root;
                xp = NULL;
            }
        }
    }
    if (x)
        x->red = 0;
}

/* Returns the black height, or -1 when an invariant is broken. */
static int check(const node *n, const node *parent, const uint64_t *lo, const uint64_t *hi, size_t *count,
                 int *height, int depth)
{
    int l, r;
    if (!n) {
        if (depth > *height)
            *height = depth;
        return 1;
    }
    if (n->parent != parent || (lo && n->key <= *lo) || (hi && n->key >= *hi))
        return -1;
    if (n->red && (is_red(n->left) || is_red(n->right)))
        return -1;
    (*count)++;
    l = check(n->left, n, lo, &n->key, count, height, depth + 1);
    r = check(n->right, n, &n->key, hi, count, height, depth + 1);
    if (l < 0 || r < 0 || l != r)
        return -1;
    return l + (n->red ? 0 : 1);
}

/* In-order walk with an explicit parent-pointer iteration (no recursion). */
static void walk(const tree *t, prog_sum *s)
{
    const node *n = t->root, *prev = NULL;
    while (n) {
        const node *next;
        if (prev == n->parent) {
            if (n->left) {
                next = n->left;
            } else {
                sum_u64(s, n->key);
                sum_u64(s, n->value);
                next = n->right ? n->right : n->parent;
            }
        } else if (prev == n->left) {
            sum_u64(s, n->key);
            sum_u64(s, n->value);
            next = n->right ? n->right : n->parent;
        } else {
            next = n->parent;
        }
        prev = n;
        n = next;
    }
}

static void destroy(tree *t)
{
    node *n = t->root;
    while (n) {
        if (n->left)
            n = n->left;
        else if (n->right)
            n = n->right;
        else {
            node *p = n->parent;
            if (p) {
                if (p->left == n)
                    p->left = NULL;
                else
                    p->right = NULL;
            }
            free(n);
            t->count--;
            n = p;
        }
    }
    t->root = NULL;
}

int main(int argc, char **argv)
{
    uint64_t n = 65536, ops = 0, seed = 1;
    prog_opt opts[] = {
        {"-n", "--nodes", &n, 1, 1u << 26, "keys inserted in phase 1"},
        {NULL, "--ops", &ops, 0, 1u << 28, "mixed operations in phase 2 (0 = n)"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed"},
    };
    tree t = {NULL, 0};
    prog_rng r;
    prog_sum s;
    uint64_t keyspace, *keys, nkeys = 0, hits = 0, allocs = 0, frees = 0;
    size_t counted = 0;
    int height = 0, bh;

    prog_parse(argc, argv, "Red-black tree: inserts, deletes, look-ups; one malloc per node.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    if (ops == 0)
        ops = n;
    rng_seed(&r, seed);
    keyspace = 4 * n;
    /* the keys present, for choosing deletion victims (one array, grown by realloc) */
    keys = xmalloc(sizeof *keys * 1024);
    {
        uint64_t cap = 1024;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = rng_below(&r, keyspace);
            if (insert(&t, k, rng_next(&r))) {
                if (nkeys == cap) {
                    cap *= 2;
                    keys = xrealloc(keys, sizeof *keys * cap);
                }
                keys[nkeys++] = k;
                allocs++;
            }
        }
        for (uint64_t i = 0; i < ops; i++) {
            unsigned pick = (unsigned)rng_below(&r, 100);
            if (pick < 50 && nkeys) {
                uint64_t j = rng_below(&r, nkeys);
                node *z = find(&t, keys[j]);
                if (!z)
                    prog_die(1, "self-check: key %" PRIu64 " vanished", keys[j]);
                erase(&t, z);
                keys[j] = keys[--nkeys];
                frees++;
            } else if (pick < 85) {
                uint64_t k = rng_below(&r, keyspace);
                if (insert(&t, k, rng_next(&r))) {
                    if (nkeys == cap) {
                        cap *= 2;
                        keys = xrealloc(keys, sizeof *keys * cap);
                    }
                    keys[nkeys++] = k;
                    allocs++;
                }
            } else {
                hits += find(&t, rng_below(&r, keyspace)) != NULL;
            }
        }
    }
    for (uint64_t i = 0; i < n; i++)
        hits += find(&t, rng_below(&r, keyspace)) != NULL;

    sum_init(&s);
    walk(&t, &s);
    sum_u64(&s, hits);
    bh = check(t.root, NULL, NULL, NULL, &counted, &height, 0);
    if (bh < 0 || counted != t.count || t.count != nkeys || (t.root && t.root->red))
        prog_die(1, "self-check failed: black height %d, %zu nodes counted, %zu in tree, %" PRIu64 " keys", bh,
                 counted, t.count, nkeys);
    printf("rbtree n=%" PRIu64 " ops=%" PRIu64 " seed=%" PRIu64 ": nodes=%zu height=%d black_height=%d "
           "allocs=%" PRIu64 " deletes=%" PRIu64 " hits=%" PRIu64 "\n",
           n, ops, seed, t.count, height, bh, allocs, frees, hits);
    destroy(&t);
    free(keys);
    if (t.count != 0)
        prog_die(1, "self-check failed: %zu nodes left after destroy", t.count);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}
