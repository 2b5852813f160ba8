/*
 * bench/spm/rbtree.c - the managed red-black tree: the algorithm, options
 * and checksum of bench/workloads/programs/rbtree.c, with every node (and
 * the key array) in global memory and every heap access written by hand
 * through hm.h (p2s before, s2p after each access).  Nodes link to
 * each other by global address.
 */
#include "prog_common.h"
#include "hm.h"

typedef struct node {
    uint64_t key, value;
    hm_ref left, right, parent; /* global addresses */
    int32_t red;
} node;

typedef struct tree {
    hm_ref root;
    size_t count;
} tree;

#define KEY(n) HM_GET(node, n, key)
#define VALUE(n) HM_GET(node, n, value)
#define LEFT(n) HM_GET(node, n, left)
#define RIGHT(n) HM_GET(node, n, right)
#define PARENT(n) HM_GET(node, n, parent)
#define RED(n) HM_GET(node, n, red)
#define SET(n, f, v) HM_SET(node, n, f, v)

static void rotate_left(tree *t, hm_ref x)
{
    hm_ref y = RIGHT(x), xp = PARENT(x);
    SET(x, right, LEFT(y));
    if (LEFT(y))
        SET(LEFT(y), parent, x);
    SET(y, parent, xp);
    if (!xp)
        t->root = y;
    else if (x == LEFT(xp))
        SET(xp, left, y);
    else
        SET(xp, right, y);
    SET(y, left, x);
    SET(x, parent, y);
}

static void rotate_right(tree *t, hm_ref x)
{
    hm_ref y = LEFT(x), xp = PARENT(x);
    SET(x, left, RIGHT(y));
    if (RIGHT(y))
        SET(RIGHT(y), parent, x);
    SET(y, parent, xp);
    if (!xp)
        t->root = y;
    else if (x == RIGHT(xp))
        SET(xp, right, y);
    else
        SET(xp, left, y);
    SET(y, right, x);
    SET(x, parent, y);
}

static hm_ref find(const tree *t, uint64_t key)
{
    hm_ref n = t->root;
    while (n) {
        uint64_t k = KEY(n);
        if (k == key)
            break;
        n = key < k ? LEFT(n) : RIGHT(n);
    }
    return n;
}

/* Returns 1 when a node was allocated, 0 when the key existed. */
static int insert(tree *t, uint64_t key, uint64_t value)
{
    hm_ref p = HM_NULL, cur = t->root, z;
    int go_left = 0;
    while (cur) {
        uint64_t k = KEY(cur);
        p = cur;
        if (key == k) {
            SET(p, value, value);
            return 0;
        }
        go_left = key < k;
        cur = go_left ? LEFT(p) : RIGHT(p);
    }
    z = HM_MALLOC(sizeof(node));
    SET(z, key, key);
    SET(z, value, value);
    SET(z, left, HM_NULL);
    SET(z, right, HM_NULL);
    SET(z, parent, p);
    SET(z, red, 1);
    if (!p)
        t->root = z;
    else if (go_left)
        SET(p, left, z);
    else
        SET(p, right, z);
    t->count++;
    while (PARENT(z) && RED(PARENT(z))) {
        hm_ref zp = PARENT(z), g = PARENT(zp);
        if (zp == LEFT(g)) {
            hm_ref u = RIGHT(g);
            if (u && RED(u)) {
                SET(zp, red, 0);
                SET(u, red, 0);
                SET(g, red, 1);
                z = g;
            } else {
                if (z == RIGHT(zp)) {
                    z = zp;
                    rotate_left(t, z);
                }
                SET(PARENT(z), red, 0);
                SET(g, red, 1);
                rotate_right(t, g);
            }
        } else {
            hm_ref u = LEFT(g);
            if (u && RED(u)) {
                SET(zp, red, 0);
                SET(u, red, 0);
                SET(g, red, 1);
                z = g;
            } else {
                if (z == LEFT(zp)) {
                    z = zp;
                    rotate_right(t, z);
                }
                SET(PARENT(z), red, 0);
                SET(g, red, 1);
                rotate_left(t, g);
            }
        }
    }
    SET(t->root, red, 0);
    return 1;
}

static void transplant(tree *t, hm_ref u, hm_ref v)
{
    hm_ref up = PARENT(u);
    if (!up)
        t->root = v;
    else if (u == LEFT(up))
        SET(up, left, v);
    else
        SET(up, right, v);
    if (v)
        SET(v, parent, up);
}

static int is_red(hm_ref n) { return n && RED(n); }

static void erase(tree *t, hm_ref z)
{
    hm_ref y = z, x, xp;
    int y_red = RED(y);
    if (!LEFT(z)) {
        x = RIGHT(z);
        xp = PARENT(z);
        transplant(t, z, x);
    } else if (!RIGHT(z)) {
        x = LEFT(z);
        xp = PARENT(z);
        transplant(t, z, x);
    } else {
        y = RIGHT(z);
        while (LEFT(y))
            y = LEFT(y);
        y_red = RED(y);
        x = RIGHT(y);
        if (PARENT(y) == z) {
            xp = y;
        } else {
            xp = PARENT(y);
            transplant(t, y, RIGHT(y));
            SET(y, right, RIGHT(z));
            SET(RIGHT(y), parent, y);
        }
        transplant(t, z, y);
        SET(y, left, LEFT(z));
        SET(LEFT(y), parent, y);
        SET(y, red, RED(z));
    }
    HM_FREE(z);
    t->count--;
    if (y_red)
        return;
    while (x != t->root && !is_red(x)) {
        if (x == LEFT(xp)) {
            hm_ref w = RIGHT(xp);
            if (is_red(w)) {
                SET(w, red, 0);
                SET(xp, red, 1);
                rotate_left(t, xp);
                w = RIGHT(xp);
            }
            if (!is_red(LEFT(w)) && !is_red(RIGHT(w))) {
                SET(w, red, 1);
                x = xp;
                xp = PARENT(x);
            } else {
                if (!is_red(RIGHT(w))) {
                    SET(LEFT(w), red, 0);
                    SET(w, red, 1);
                    rotate_right(t, w);
                    w = RIGHT(xp);
                }
                SET(w, red, RED(xp));
                SET(xp, red, 0);
                if (RIGHT(w))
                    SET(RIGHT(w), red, 0);
                rotate_left(t, xp);
                x = t->root;
                xp = HM_NULL;
            }
        } else {
            hm_ref w = LEFT(xp);
            if (is_red(w)) {
                SET(w, red, 0);
                SET(xp, red, 1);
                rotate_right(t, xp);
                w = LEFT(xp);
            }
            if (!is_red(LEFT(w)) && !is_red(RIGHT(w))) {
                SET(w, red, 1);
                x = xp;
                xp = PARENT(x);
            } else {
                if (!is_red(LEFT(w))) {
                    SET(RIGHT(w), red, 0);
                    SET(w, red, 1);
                    rotate_left(t, w);
                    w = LEFT(xp);
                }
                SET(w, red, RED(xp));
                SET(xp, red, 0);
                if (LEFT(w))
                    SET(LEFT(w), red, 0);
                rotate_right(t, xp);
                x = t->root;
                xp = HM_NULL;
            }
        }
    }
    if (x)
        SET(x, red, 0);
}

/* Returns the black height, or -1 when an invariant is broken. */
static int check(hm_ref n, hm_ref parent, const uint64_t *lo, const uint64_t *hi, size_t *count, int *height,
                 int depth)
{
    int l, r;
    uint64_t key;
    if (!n) {
        if (depth > *height)
            *height = depth;
        return 1;
    }
    key = KEY(n);
    if (PARENT(n) != parent || (lo && key <= *lo) || (hi && key >= *hi))
        return -1;
    if (RED(n) && (is_red(LEFT(n)) || is_red(RIGHT(n))))
        return -1;
    (*count)++;
    l = check(LEFT(n), n, lo, &key, count, height, depth + 1);
    r = check(RIGHT(n), n, &key, hi, count, height, depth + 1);
    if (l < 0 || r < 0 || l != r)
        return -1;
    return l + (RED(n) ? 0 : 1);
}

static void walk(const tree *t, prog_sum *s)
{
    hm_ref n = t->root, prev = HM_NULL;
    while (n) {
        hm_ref next;
        if (prev == PARENT(n)) {
            if (LEFT(n)) {
                next = LEFT(n);
            } else {
                sum_u64(s, KEY(n));
                sum_u64(s, VALUE(n));
                next = RIGHT(n) ? RIGHT(n) : PARENT(n);
            }
        } else if (prev == LEFT(n)) {
            sum_u64(s, KEY(n));
            sum_u64(s, VALUE(n));
            next = RIGHT(n) ? RIGHT(n) : PARENT(n);
        } else {
            next = PARENT(n);
        }
        prev = n;
        n = next;
    }
}

static void destroy(tree *t)
{
    hm_ref n = t->root;
    while (n) {
        if (LEFT(n))
            n = LEFT(n);
        else if (RIGHT(n))
            n = RIGHT(n);
        else {
            hm_ref p = PARENT(n);
            if (p) {
                if (LEFT(p) == n)
                    SET(p, left, HM_NULL);
                else
                    SET(p, right, HM_NULL);
            }
            HM_FREE(n);
            t->count--;
            n = p;
        }
    }
    t->root = HM_NULL;
}

/* keys[]: the present keys, in global memory.  The unmanaged program keeps
 * one array grown by realloc; at 65,536 keys that is 512 KiB, more than a
 * scratchpad's heap region can hold as one object, so here it is chunked:
 * a directory (grown by realloc) of 4 KiB chunks.  Same keys in the same
 * order, so the same checksum. */
#define KCHUNK 512u
typedef struct keyarr {
    hm_ref dir;
    uint64_t chunks, dircap;
} keyarr;

static uint64_t kget(const keyarr *a, uint64_t j)
{
    hm_ref c = HM_AGET(hm_ref, a->dir, j / KCHUNK);
    return HM_AGET(uint64_t, c, j % KCHUNK);
}

static void kset(const keyarr *a, uint64_t j, uint64_t v)
{
    hm_ref c = HM_AGET(hm_ref, a->dir, j / KCHUNK);
    HM_ASET(uint64_t, c, j % KCHUNK, v);
}

static void push_key(keyarr *a, uint64_t *nkeys, uint64_t k)
{
    if (*nkeys == a->chunks * KCHUNK) {
        if (a->chunks == a->dircap) {
            a->dircap *= 2;
            a->dir = HM_REALLOC(a->dir, sizeof(hm_ref) * a->dircap);
        }
        hm_ref c = HM_MALLOC(sizeof(uint64_t) * KCHUNK);
        HM_ASET(hm_ref, a->dir, a->chunks++, c);
    }
    kset(a, (*nkeys)++, k);
}

static int prog_main(int argc, char **argv)
{
    uint64_t n = 65536, ops = 0, seed = 1;
    prog_opt opts[] = {
        {"-n", "--nodes", &n, 1, 1u << 26, "keys inserted in phase 1"},
        {NULL, "--ops", &ops, 0, 1u << 28, "mixed operations in phase 2 (0 = n)"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed"},
    };
    tree t = {HM_NULL, 0};
    prog_rng r;
    prog_sum s;
    uint64_t keyspace, nkeys = 0, hits = 0, allocs = 0, frees = 0;
    keyarr keys = {HM_NULL, 0, 16};
    size_t counted = 0;
    int height = 0, bh;

    prog_parse(argc, argv, "Red-black tree (managed): inserts, deletes, look-ups; one malloc per node.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    if (ops == 0)
        ops = n;
    rng_seed(&r, seed);
    keyspace = 4 * n;
    keys.dir = HM_MALLOC(sizeof(hm_ref) * keys.dircap);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = rng_below(&r, keyspace);
        if (insert(&t, k, rng_next(&r))) {
            push_key(&keys, &nkeys, k);
            allocs++;
        }
    }
    for (uint64_t i = 0; i < ops; i++) {
        unsigned pick = (unsigned)rng_below(&r, 100);
        if (pick < 50 && nkeys) {
            uint64_t j = rng_below(&r, nkeys), kj = kget(&keys, j);
            hm_ref z = find(&t, kj);
            if (!z)
                prog_die(1, "self-check: key %" PRIu64 " vanished", kj);
            erase(&t, z);
            nkeys--;
            kset(&keys, j, kget(&keys, nkeys));
            frees++;
        } else if (pick < 85) {
            uint64_t k = rng_below(&r, keyspace);
            if (insert(&t, k, rng_next(&r))) {
                push_key(&keys, &nkeys, k);
                allocs++;
            }
        } else {
            hits += find(&t, rng_below(&r, keyspace)) != HM_NULL;
        }
    }
    for (uint64_t i = 0; i < n; i++)
        hits += find(&t, rng_below(&r, keyspace)) != HM_NULL;

    sum_init(&s);
    walk(&t, &s);
    sum_u64(&s, hits);
    bh = check(t.root, HM_NULL, NULL, NULL, &counted, &height, 0);
    if (bh < 0 || counted != t.count || t.count != nkeys || (t.root && RED(t.root)))
        prog_die(1, "self-check failed: black height %d, %zu nodes counted, %zu in tree, %" PRIu64 " keys", bh,
                 counted, t.count, nkeys);
    hm_info("rbtree n=%" PRIu64 " ops=%" PRIu64 " seed=%" PRIu64 ": nodes=%zu height=%d black_height=%d "
            "allocs=%" PRIu64 " deletes=%" PRIu64 " hits=%" PRIu64,
            n, ops, seed, t.count, height, bh, allocs, frees, hits);
    destroy(&t);
    for (uint64_t c = 0; c < keys.chunks; c++)
        HM_FREE(HM_AGET(hm_ref, keys.dir, c));
    HM_FREE(keys.dir);
    if (t.count != 0)
        prog_die(1, "self-check failed: %zu nodes left after destroy", t.count);
    hm_checksum(s.h);
    return 0;
}

int main(int argc, char **argv) { return hm_run(argc, argv, "rbtree", prog_main); }
