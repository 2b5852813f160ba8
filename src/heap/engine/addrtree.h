/*
 * src/heap/engine/addrtree.h - org=addrtree: address-ordered first fit in
 * O(log n).  Included by bins.h (after the link encoding and node checks,
 * before the lists); engine part (see variant.h).
 *
 * The free blocks (not the top) live in two AVL trees keyed by address,
 * their nodes inside the free blocks themselves:
 *   big tree    blocks larger than MINB (root: heads[0]).  Node words:
 *               left, right, and the largest block size in the node's
 *               subtree (the augmentation).
 *   small tree  blocks of exactly MINB (root: the rover's word, unused
 *               since next fit is refused), which have room for two words
 *               only: left and right, no augmentation (every one fits any
 *               request a MINB block can serve).
 * So the control block is org=single's (one list head).
 * The left and right words are links like the lists' (encoded with the
 * same lencode/ldecode from hardening CHECKED up); bit 0 of the value
 * before encoding is the AVL balance: set in the left word when the left
 * subtree is one taller, in the right word when the right one is.
 *
 * malloc(s): the leftmost block of the big tree whose size is >= s (descend
 * left while the left subtree's maximum is >= s, else take the node if it
 * fits, else go right); for s == MINB the lower of that and the leftmost
 * block of the small tree.  That is exactly the block an address-ordered list
 * scanned from its head would take (tests/heap/test_addrtree.cpp replays
 * traces on both and compares every offset).  free: coalesce as before
 * (each neighbour leaves its tree by address), insert the result.  Every
 * operation is one descent plus AVL rebalancing along the path, which is
 * kept in a stack of AT_DEPTH entries: an AVL tree of n nodes is less than
 * 1.45 log2(n + 2) high, and no heap holds more than 2^(bits - 4) blocks.
 *
 * Hardening (CHECKED up), the lists' level: every decoded child must be a
 * listed free block of its tree's size class where its node words lie
 * inside a region (at_in and the header's state and size), and
 * on a descent it must lie strictly between the addresses of the ancestors
 * that bound it (so a forged link can neither form a cycle nor make a node
 * reachable twice); a bad link is reported and read as an empty subtree
 * (the blocks behind it are lost to the tree, none is handed out).  At
 * every level a descent stops at AT_DEPTH nodes (with a report), so no
 * damage can overrun the path stack.
 */
#ifndef DMM_ENGINE_ADDRTREE_H
#define DMM_ENGINE_ADDRTREE_H

#define AT_DEPTH ((unsigned)(12u * sizeof(void *))) /* > 1.45 log2(max nodes + 2) */
#define AT_HEAVY ((uintptr_t)1)

typedef struct at_path {
    unsigned k;                  /* entries */
    unsigned char d[AT_DEPTH];   /* direction taken from n[i]: 0 left, 1 right */
    blk *n[AT_DEPTH];
} at_path;

typedef struct at_node {
    blk *c[2];
    int bal; /* -1 left taller, 0, +1 right taller */
} at_node;

/* The root of the big tree (big) or of the small tree. */
static inline blk **at_root(dmm_heap *h, bool big) { return big ? &h->heads[0] : &h->rover; }

/* The checker (addrtree_check.c). */
dmm_status dmm__addrtree_check(dmm_heap *h, size_t free_blocks, dmm_heap_check_report *rep);

static inline blk **at_slot(const blk *b, unsigned dir) { return dir ? lprev(b) : lnext(b); }
static inline size_t *at_maxp(const blk *b) { return (size_t *)bpayload(b) + 2; }
static inline uintptr_t at_word(const dmm_heap *h, const blk *b, unsigned dir)
{
    return (uintptr_t)ldecode(h, b, *at_slot(b, dir));
}

/* Reports damage found in a free tree (out of line, cold); returns NULL. */
blk *dmm__addrtree_bad(dmm_heap *h, const void *where, const char *msg);
#if DMM_HEAP_ERROR_TEXT
#define at_bad(h, where, msg) dmm__addrtree_bad((h), (where), (msg))
#else
#define at_bad(h, where, msg) dmm__addrtree_bad((h), (where), "")
#endif

/* Can c's node words (up to the subtree maximum) be read: granule-aligned,
 * inside a region, a minimum block before its sentinel?  One compare in the
 * region of the last look-up. */
static DMM_ALWAYS_INLINE bool at_in(dmm_heap *h, const blk *c)
{
    const blk *sen;
    if (DMM_LIKELY((uintptr_t)c - h->hint_lo < h->hint_span - MINB && !((uintptr_t)c & (GRAN - 1u))))
        return true;
    sen = block_room_slow(h, c);
    return sen && (const char *)c + MINB <= (const char *)sen;
}

/* c (decoded from a link of b, non-NULL) checked as a node of tree `big`
 * lying strictly inside (lo, hi) where its words can be read: c itself, or
 * NULL after a report. */
static DMM_ALWAYS_INLINE blk *at_ok(dmm_heap *h, const blk *b, blk *c, bool big, uintptr_t lo, uintptr_t hi)
{
    if (HARDENED(h) && DMM_UNLIKELY((uintptr_t)c <= lo || (uintptr_t)c >= hi || !at_in(h, c) ||
                                    (c->head & F_STATE) ||
                                    (big ? bsize(c) <= MINB : bsize(c) != MINB)))
        return at_bad(h, b, "a free-tree link was overwritten (use after free?)");
    return c;
}

/* Child dir of b, checked (within (lo, hi) on a descent). */
static DMM_ALWAYS_INLINE blk *at_child(dmm_heap *h, const blk *b, unsigned dir, bool big, uintptr_t lo, uintptr_t hi)
{
    blk *c = (blk *)(at_word(h, b, dir) & ~AT_HEAVY);
    return c ? at_ok(h, b, c, big, lo, hi) : NULL;
}

static DMM_ALWAYS_INLINE at_node at_read(dmm_heap *h, const blk *b, bool big)
{
    uintptr_t l = at_word(h, b, 0), r = at_word(h, b, 1);
    at_node n;
    n.c[0] = (l & ~AT_HEAVY) ? at_ok(h, b, (blk *)(l & ~AT_HEAVY), big, 0, (uintptr_t)b) : NULL;
    n.c[1] = (r & ~AT_HEAVY) ? at_ok(h, b, (blk *)(r & ~AT_HEAVY), big, (uintptr_t)b, UINTPTR_MAX) : NULL;
    n.bal = (int)(r & AT_HEAVY) - (int)(l & AT_HEAVY);
    return n;
}

/* b's balance from its two link words (no child is followed). */
static DMM_ALWAYS_INLINE int at_bal(const dmm_heap *h, const blk *b)
{
    return (int)(at_word(h, b, 1) & AT_HEAVY) - (int)(at_word(h, b, 0) & AT_HEAVY);
}

/* Toggles the balance bit of b's link dir, keeping its child. */
static DMM_ALWAYS_INLINE void at_flip(const dmm_heap *h, blk *b, unsigned dir)
{
    *at_slot(b, dir) = lencode(h, b, (blk *)(at_word(h, b, dir) ^ AT_HEAVY));
}

static DMM_ALWAYS_INLINE void at_write(const dmm_heap *h, blk *b, blk *l, blk *r, int bal)
{
    *lnext(b) = lencode(h, b, (blk *)((uintptr_t)l | (uintptr_t)(bal < 0)));
    *lprev(b) = lencode(h, b, (blk *)((uintptr_t)r | (uintptr_t)(bal > 0)));
}

/* b's children given as (child on side dir, child on the other side). */
static DMM_ALWAYS_INLINE void at_put(const dmm_heap *h, blk *b, unsigned dir, blk *cd, blk *co, int bal)
{
    if (dir)
        at_write(h, b, co, cd, bal);
    else
        at_write(h, b, cd, co, bal);
}

static DMM_ALWAYS_INLINE void at_set_child(const dmm_heap *h, blk *b, unsigned dir, blk *c)
{
    uintptr_t heavy = at_word(h, b, dir) & AT_HEAVY;
    *at_slot(b, dir) = lencode(h, b, (blk *)((uintptr_t)c | heavy));
}

/* Recomputes b's subtree maximum from its size and its children's (tree
 * the big tree only). */
static DMM_ALWAYS_INLINE size_t at_fix(blk *b, const at_node *n)
{
    size_t m = bsize(b);
    if (n->c[0] && *at_maxp(n->c[0]) > m)
        m = *at_maxp(n->c[0]);
    if (n->c[1] && *at_maxp(n->c[1]) > m)
        m = *at_maxp(n->c[1]);
    *at_maxp(b) = m;
    return m;
}

/* Makes c the subtree at path level i (the root when i == 0). */
static DMM_ALWAYS_INLINE void at_relink(dmm_heap *h, const at_path *p, unsigned i, blk *c, bool big)
{
    if (i == 0)
        *at_root(h, big) = c;
    else
        at_set_child(h, p->n[i - 1], p->d[i - 1], c);
}

static DMM_ALWAYS_INLINE bool at_push(dmm_heap *h, at_path *p, blk *c, unsigned dir)
{
    if (DMM_UNLIKELY(p->k >= AT_DEPTH)) {
        at_bad(h, c, "a free tree is deeper than its balance allows (links overwritten)");
        return false;
    }
    p->n[p->k] = c;
    p->d[p->k++] = (unsigned char)dir;
    return true;
}

/* Rebalances the subtree at a whose side dir is two levels taller than the
 * other.  Returns its new root (NULL if a node it needs was lost to a bad
 * link: the subtree is then left as it is); *shorter: the subtree is one
 * level lower than before the insertion or deletion that unbalanced it. */
static inline blk *at_rotate(dmm_heap *h, blk *a, unsigned dir, bool big, bool *shorter)
{
    const int sd = dir ? 1 : -1;
    at_node A = at_read(h, a, big), X;
    blk *x = A.c[dir];
    if (!x)
        return NULL;
    X = at_read(h, x, big);
    if (X.bal == -sd) { /* x leans the other way: double rotation through y */
        blk *y = X.c[!dir];
        at_node Y;
        if (!y)
            return NULL;
        Y = at_read(h, y, big);
        at_put(h, a, dir, Y.c[!dir], A.c[!dir], Y.bal == sd ? -sd : 0);
        at_put(h, x, dir, X.c[dir], Y.c[dir], Y.bal == -sd ? sd : 0);
        at_put(h, y, dir, x, a, 0);
        if (big) {
            A.c[dir] = Y.c[!dir];
            X.c[!dir] = Y.c[dir];
            Y.c[dir] = x;
            Y.c[!dir] = a;
            at_fix(a, &A);
            at_fix(x, &X);
            at_fix(y, &Y);
        }
        *shorter = true;
        return y;
    }
    /* single rotation: x leans toward dir (insertion or deletion) or is
     * balanced (deletion only: the height stays) */
    *shorter = X.bal != 0;
    at_put(h, a, dir, X.c[!dir], A.c[!dir], X.bal ? 0 : sd);
    at_put(h, x, dir, X.c[dir], a, X.bal ? 0 : -sd);
    if (big) {
        A.c[dir] = X.c[!dir];
        X.c[!dir] = a;
        at_fix(a, &A);
        at_fix(x, &X);
    }
    return x;
}

/* Inserts free block b (state bits clear, not in a tree). */
static inline void at_insert_in(dmm_heap *h, blk *b, bool big)
{
    at_path p;
    size_t s = bsize(b);
    uintptr_t lo = 0, hi = UINTPTR_MAX;
    blk *c = *at_root(h, big);
    p.k = 0;
    if (c && HARDENED(h))
        c = at_ok(h, b, c, big, lo, hi);
    while (c) {
        unsigned dir = b > c;
        if (DMM_UNLIKELY(c == b)) {
            at_bad(h, b, "a block being freed is already in the free tree");
            return;
        }
        if (!at_push(h, &p, c, dir))
            return;
        if (big && *at_maxp(c) < s)
            *at_maxp(c) = s;
        if (dir)
            lo = (uintptr_t)c;
        else
            hi = (uintptr_t)c;
        c = at_child(h, c, dir, big, lo, hi);
    }
    at_write(h, b, NULL, NULL, 0);
    if (big)
        *at_maxp(b) = s;
    at_relink(h, &p, p.k, b, big);
    for (unsigned i = p.k; i-- > 0;) { /* the side d[i] of n[i] grew */
        blk *a = p.n[i], *r;
        const int sd = p.d[i] ? 1 : -1;
        const int bal = at_bal(h, a);
        bool shorter;
        if (bal == -sd) {
            at_flip(h, a, !p.d[i]); /* balanced, as high as before */
            return;
        }
        if (bal == 0) {
            at_flip(h, a, p.d[i]); /* taller on the side that grew */
            continue;
        }
        if ((r = at_rotate(h, a, p.d[i], big, &shorter)) != NULL)
            at_relink(h, &p, i, r, big);
        return;
    }
}

/* Removes b, reached through path p (p->n[p->k - 1] is its parent). */
static inline void at_delete_at(dmm_heap *h, at_path *p, blk *b, bool big)
{
    at_node B = at_read(h, b, big);
    const unsigned j = p->k;
    size_t gone = bsize(b), ys = 0; /* the sizes that left the subtrees on the path */
    bool balancing = true, two = B.c[0] && B.c[1];
    if (!two) {
        at_relink(h, p, j, B.c[0] ? B.c[0] : B.c[1], big);
    } else {
        /* b's successor y (leftmost of its right subtree) takes its place */
        blk *y = B.c[1], *yl;
        at_node Y;
        if (!at_push(h, p, b, 1))
            return;
        while ((yl = at_child(h, y, 0, big, (uintptr_t)b, (uintptr_t)y)) != NULL) {
            if (!at_push(h, p, y, 0))
                return;
            y = yl;
        }
        Y = at_read(h, y, big);
        ys = bsize(y);
        if (p->k - 1u == j) {
            at_write(h, y, B.c[0], Y.c[1], B.bal);
        } else {
            at_set_child(h, p->n[p->k - 1u], 0, Y.c[1]);
            at_write(h, y, B.c[0], B.c[1], B.bal);
        }
        p->n[j] = y;
        at_relink(h, p, j, y, big);
    }
    for (unsigned i = p->k; i-- > 0;) { /* the side d[i] of n[i] got lower */
        blk *a = p->n[i];
        if (balancing) {
            const unsigned dir = p->d[i];
            const int sd = dir ? 1 : -1, bal = at_bal(h, a);
            if (bal == 0) {
                at_flip(h, a, !dir); /* now taller on the other side, as high as before */
                balancing = false;
            } else if (bal == sd) {
                at_flip(h, a, dir); /* balanced, one lower */
            } else {
                blk *r = at_rotate(h, a, !dir, big, &balancing);
                if (!r)
                    return;
                at_relink(h, p, i, r, big);
                continue; /* at_rotate fixed the maxima of what it moved */
            }
        }
        if (big) {
            /* below level j the subtrees lost y, from j up they lost b; y's
             * own maximum (at j) is stale */
            if ((two && i == j) || *at_maxp(a) <= (i > j ? ys : gone)) {
                at_node A = at_read(h, a, true);
                at_fix(a, &A);
            } else if (!balancing && i < j) {
                return; /* nothing above changes */
            }
        } else if (!balancing) {
            return;
        }
    }
}

/* Node c0 of tree `big` with its path in p (c0 is not in it), or false
 * after a report when c0 is not where its address says. */
static DMM_ALWAYS_INLINE bool at_find(dmm_heap *h, at_path *p, blk *c0, bool big)
{
    blk *c = *at_root(h, big);
    uintptr_t lo = 0, hi = UINTPTR_MAX;
    p->k = 0;
    if (c && HARDENED(h))
        c = at_ok(h, c0, c, big, lo, hi);
    while (c != c0) {
        unsigned dir = c0 > c;
        if (!c) {
            at_bad(h, c0, "a free block is missing from its free tree (link overwritten?)");
            return false;
        }
        if (!at_push(h, p, c, dir))
            return false;
        if (dir)
            lo = (uintptr_t)c;
        else
            hi = (uintptr_t)c;
        c = at_child(h, c, dir, big, lo, hi);
    }
    return true;
}

/* Unlinks free block b from its tree; false (after a report) when b is not
 * where its address says it must be. */
static inline bool at_remove(dmm_heap *h, blk *b)
{
    bool big = bsize(b) > MINB;
    at_path p;
    if (!at_find(h, &p, b, big))
        return false;
    at_delete_at(h, &p, b, big);
    return true;
}

static inline void at_insert(dmm_heap *h, blk *b) { at_insert_in(h, b, bsize(b) > MINB); }

/* The subtree maxima on path p after a block of its subtree grew to s. */
static DMM_ALWAYS_INLINE void at_raise(at_path *p, size_t s)
{
    for (unsigned i = p->k; i-- > 0 && *at_maxp(p->n[i]) < s;)
        *at_maxp(p->n[i]) = s;
}

/* The subtree maxima on path p after a block of size `was` there shrank or
 * left: an ancestor whose maximum is above `was` keeps it (and so do all
 * above it); the others are recomputed from their children. */
static DMM_ALWAYS_INLINE void at_lower(dmm_heap *h, at_path *p, size_t was)
{
    for (unsigned i = p->k; i-- > 0 && *at_maxp(p->n[i]) == was;) {
        at_node A = at_read(h, p->n[i], true);
        at_fix(p->n[i], &A);
    }
}

/* nb takes node c's place (same neighbours in address order: no block lies
 * between them), reached by path p; the big tree only. */
static DMM_ALWAYS_INLINE void at_replace(dmm_heap *h, at_path *p, blk *c, blk *nb)
{
    at_node C = at_read(h, c, true);
    at_write(h, nb, C.c[0], C.c[1], C.bal);
    at_relink(h, p, p->k, nb, true);
    at_fix(nb, &C);
}

/* Immediate coalescing (coalesce_max 0, no poisoning, no release of empty
 * regions): frees b (state bits clear) merging it with its free neighbours
 * without restructuring the tree where the merged block keeps a
 * neighbour's place: b absorbing the next block takes its node, the
 * previous block absorbing b (and the next) grows in place.  Returns false,
 * having changed nothing, where release_block must do it: a neighbour is
 * the top or a minimum block (the merge moves it to the other tree), or
 * neither neighbour is free. */
static DMM_ALWAYS_INLINE bool at_release(dmm_heap *h, blk *b)
{
    at_path p;
    size_t s = bsize(b), ns;
    blk *nx = bat(b, s), *pv;
    if (!bpused(b)) {
        pv = bprev(b);
        if (!blisted(pv) || bsize(pv) == MINB || btop(nx))
            return false;
        if (blisted(nx) && at_remove(h, nx))
            s += bsize(nx);
        if (!at_find(h, &p, pv, true)) {
            mark_free(b, s, 0);
            at_insert(h, b);
            return true;
        }
        s += bsize(pv);
        mark_free(pv, s, 0);
        if (*at_maxp(pv) < s)
            *at_maxp(pv) = s;
        at_raise(&p, s);
        return true;
    }
    if (!blisted(nx) || (ns = bsize(nx)) == MINB || !at_find(h, &p, nx, true))
        return false;
    at_replace(h, &p, nx, b);
    mark_free(b, s + ns, 0);
    *at_maxp(b) = *at_maxp(b) > s + ns ? *at_maxp(b) : s + ns;
    at_raise(&p, s + ns);
    return true;
}

/* The leftmost node of tree `big` with its path in p, or NULL. */
static DMM_ALWAYS_INLINE blk *at_leftmost(dmm_heap *h, at_path *p, bool big, uint64_t *steps)
{
    blk *c = *at_root(h, big), *l;
    p->k = 0;
    if (c && HARDENED(h))
        c = at_ok(h, c, c, big, 0, UINTPTR_MAX);
    while (c && (l = at_child(h, c, 0, big, 0, (uintptr_t)c)) != NULL) {
        ++*steps;
        if (!at_push(h, p, c, 0))
            return NULL;
        c = l;
    }
    return c;
}

/* First fit: unlinks and returns the lowest-addressed free block of at
 * least s bytes, or NULL.  With `split` (a plain request: finish_alloc
 * splits what it gets at s), a tail that stays in the big tree is split off
 * here and takes the block's node, which saves the delete and the insert. */
static DMM_ALWAYS_INLINE blk *at_take(dmm_heap *h, size_t s, bool split)
{
    at_path p;
    uint64_t steps = 1;
    blk *f = NULL, *c;
    bool big = true;
    if (s <= MINB) {
        /* any block fits: the lower of the two trees' leftmost blocks */
        blk *a = at_leftmost(h, &p, false, &steps);
        c = *at_root(h, true);
        if (c && HARDENED(h))
            c = at_ok(h, c, c, true, 0, UINTPTR_MAX);
        for (blk *l; c && (l = at_child(h, c, 0, true, 0, (uintptr_t)c)) != NULL; c = l)
            ++steps;
        if (a && (!c || a < c)) {
            f = a;
            big = false;
        } else if (c) {
            f = at_leftmost(h, &p, true, &steps);
        }
    } else {
        uintptr_t lo = 0, hi = UINTPTR_MAX;
        c = *at_root(h, true);
        p.k = 0;
        if (c && HARDENED(h))
            c = at_ok(h, c, c, true, lo, hi);
        if (c && *at_maxp(c) >= s) {
            for (;;) {
                blk *l = at_child(h, c, 0, true, lo, (uintptr_t)c);
                ++steps;
                if (l && *at_maxp(l) >= s) {
                    if (!at_push(h, &p, c, 0))
                        break;
                    hi = (uintptr_t)c;
                    c = l;
                    continue;
                }
                if (bsize(c) >= s) {
                    f = c;
                    break;
                }
                if (!at_push(h, &p, c, 1))
                    break;
                lo = (uintptr_t)c;
                c = at_child(h, c, 1, true, lo, hi);
                if (!c || *at_maxp(c) < s) {
                    at_bad(h, p.n[p.k - 1u], "a free-tree node's subtree maximum was overwritten");
                    break;
                }
            }
        }
    }
    st_steps(h, steps);
    if (!f)
        return NULL;
    if (HARDENED(h) && DMM_UNLIKELY(bsize(f) < s || !node_ok(h, f, 0)))
        return at_bad(h, f, "a free-tree link names a block too small for the request");
    if (split && big && P_SPLIT(h) && P_COALESCE(h) == DMM_COALESCE_IMMEDIATE && h->cfg.coalesce_max == 0 && !P_POISON(h) &&
        bsize(f) - s >= h->split_min && bsize(f) - s > MINB) {
        /* what finish_alloc would split off and release_split insert */
        size_t bs = bsize(f);
        blk *rem = bat(f, s);
        rem->head = (bs - s) | F_PUSED; /* f is about to be used */
        at_replace(h, &p, f, rem);
        mark_free(rem, bs - s, 0);
        f->head = s | (f->head & F_PUSED);
        at_lower(h, &p, bs);
        return f;
    }
    at_delete_at(h, &p, f, big);
    return f;
}

#endif
