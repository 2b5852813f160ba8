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
 * same keys from hardening CHECKED up); bit 0 of the value before encoding
 * is the AVL balance: set in the left word when the left subtree is one
 * taller, in the right word when the right one is.  An empty link holds
 * at_nil (the node itself from CHECKED up) with its balance bit.
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
 * Hardening (CHECKED up), the lists' level: every decoded child must lie
 * where its node words can be read, inside a region (at_in), and strictly
 * between the addresses of the ancestors that bound it (so a forged link
 * can neither form a cycle nor make a node reachable twice); a bad link is
 * reported and read as an empty subtree (the blocks behind it are lost to
 * the tree, none is handed out).  A child read only for its subtree
 * maximum (at_rchild) takes the region test alone: nothing is written to it
 * and nothing follows it.  The header (a listed free block of the
 * tree's size class) is read only for the nodes the operation writes
 * (at_need, before the first write) and for the block it hands out: reading
 * a used block's payload as a node is harmless, writing it is not.  At
 * every level a descent stops at AT_DEPTH nodes (with a report), so no
 * damage can overrun the path stack.
 */
#ifndef DMM_ENGINE_ADDRTREE_H
#define DMM_ENGINE_ADDRTREE_H

#define AT_DEPTH ((unsigned)(12u * sizeof(void *))) /* > 1.45 log2(max nodes + 2) */
#define AT_HEAVY ((uintptr_t)1)
/* Node helpers used at many sites: inlined where speed comes first, one
 * shared copy at -Os (code size first: the compiler would inline them). */
#ifdef __OPTIMIZE_SIZE__
#define AT_SHARED DMM_NOINLINE
#define AT_SIZE_FIRST 1
#else
#define AT_SHARED DMM_ALWAYS_INLINE
#define AT_SIZE_FIRST 0
#endif

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

/* Link dir of b: lnext (left) or lprev (right).  Lean, indexed (a
 * direction in a register costs one addressing mode); hardened, selected
 * (the descents branch on the direction for their order windows anyway,
 * and each branch then has its slot as a constant). */
static inline blk **at_slot(const dmm_heap *h, const blk *b, unsigned dir)
{
    return HARDENED(h) ? (dir ? lprev(b) : lnext(b)) : lnext(b) + dir;
}
static inline size_t *at_maxp(const blk *b) { return (size_t *)bpayload(b) + 2; }
/* An empty link of b holds, with the balance bit, b itself from hardening
 * CHECKED up (like an empty list link: a zeroed word does not decode to
 * "empty"), else NULL.  Links are stored as (child or at_nil) | balance bit,
 * encoded from CHECKED up with the lists' keys ((v ^ key2) * key); decoding
 * keeps the balance bit, so one compare of the word without it against
 * at_nil tells an empty link. */
static inline uintptr_t at_nil(const dmm_heap *h, const blk *b) { return HARDENED(h) ? (uintptr_t)b : 0; }
static inline uintptr_t at_raw(const dmm_heap *h, const blk *b, unsigned dir)
{
    uintptr_t e = (uintptr_t)*at_slot(h, b, dir);
    return HARDENED(h) ? (e * h->link_kinv) ^ h->link_key2 : e;
}
/* b's link dir decoded: the child (NULL when empty) | the balance bit. */
static inline uintptr_t at_word(const dmm_heap *h, const blk *b, unsigned dir)
{
    uintptr_t x = at_raw(h, b, dir);
    return (x & ~AT_HEAVY) == at_nil(h, b) ? (x & AT_HEAVY) : x;
}

/* The balance bit of b's link dir, read without decoding: the key is odd,
 * so bit 0 of an encoded word is bit 0 of (v ^ key2). */
static DMM_ALWAYS_INLINE uintptr_t at_heavy(const dmm_heap *h, const blk *b, unsigned dir)
{
    const uintptr_t e = (uintptr_t)*at_slot(h, b, dir);
    return (HARDENED(h) ? e ^ h->link_key2 : e) & AT_HEAVY;
}

/* The hinted region (the region of the last look-up), read from the heap
 * once per tree operation: its first block and the granules from there
 * where a node's three words fit.  The link keys are read where a link is
 * decoded or encoded (a memory operand costs no extra instruction). */
typedef struct at_keys {
    uintptr_t lo;
    size_t node_g;
} at_keys;
static DMM_ALWAYS_INLINE at_keys at_keys_of(const dmm_heap *h)
{
    at_keys k = {0, 0};
    if (HARDENED(h)) {
        k.lo = h->hint_lo;
        k.node_g = (h->hint_span >> GRAN_LOG2) - MINB / GRAN; /* a region holds a block: no wrap */
    }
    return k;
}
static DMM_ALWAYS_INLINE uintptr_t at_wd(const dmm_heap *h, at_keys k, const blk *b, unsigned dir)
{
    (void)k;
    return at_raw(h, b, dir);
}
/* The stored form of v (a child or at_nil, | the balance bit). */
static DMM_ALWAYS_INLINE blk *at_enc(const dmm_heap *h, at_keys k, const blk *b, uintptr_t v)
{
    (void)k;
    (void)b;
    return (blk *)(HARDENED(h) ? (v ^ h->link_key2) * h->link_key : v);
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
 * region of the last look-up (a misaligned c rotates its low bits to the
 * top and fails it too). */
static DMM_ALWAYS_INLINE bool at_in(dmm_heap *h, at_keys k, const blk *c)
{
    const blk *sen;
    if (DMM_LIKELY(rotr_w((uintptr_t)c - k.lo, GRAN_LOG2) < k.node_g))
        return true;
    sen = block_room_slow(h, c);
    return sen && (const char *)c + MINB <= (const char *)sen;
}

/* Is c's header that of a free node of tree `big` (listed, of the tree's
 * size class)? */
static DMM_ALWAYS_INLINE bool at_live(const blk *c, bool big)
{
    const size_t hd = c->head;
    /* the size is a multiple of GRAN above the flag bits: size > MINB is
     * hd > MINB | F_MASK (no mask); size == MINB with no state bit is one
     * masked compare */
    return big ? !(hd & F_STATE) && hd > (MINB | F_MASK) : (hd & (~F_MASK | F_STATE)) == MINB;
}

/* Can f (reached through checked links: granule-aligned, in a region) be
 * handed out for s bytes: a free node of tree `big` (at_live), at least s
 * bytes, ending before its region's sentinel?  node_ok's test, without the
 * region and alignment compare the links' checks already made. */
static DMM_ALWAYS_INLINE bool at_fits(dmm_heap *h, const blk *f, size_t s, bool big)
{
    const size_t fs = bsize(f);
    const blk *sen;
    /* a node of the small tree is a minimum block (at_live), which serves
     * any request taken there (s <= MINB), and its links' checks put it a
     * minimum block before its region's sentinel: its header is all there
     * is to read */
    if (!big)
        return at_live(f, false);
    if (!at_live(f, big) || fs < s)
        return false;
    /* the hinted region as it is now (a slow check on the way may have
     * moved the hint since k was read) */
    if (DMM_LIKELY((uintptr_t)f - h->hint_lo < h->hint_span))
        return fs <= h->hint_lo + h->hint_span - (uintptr_t)f;
    sen = block_room_slow(h, f);
    return sen && fs <= (size_t)((const char *)sen - (const char *)f);
}

/* c (decoded from a link of b, non-NULL) lying strictly inside (lo, hi)
 * where its node words can be read: c itself, or NULL after a report.  Its
 * header is not read here: a node a descent only passes through or reads is
 * safe to read once it is in order and in a region; at_need checks the
 * header of each node before the operation writes it, and at_take the block
 * it hands out. */
static DMM_ALWAYS_INLINE blk *at_ok(dmm_heap *h, at_keys k, const blk *b, blk *c, uintptr_t lo, uintptr_t hi)
{
    if (HARDENED(h) && DMM_UNLIKELY((uintptr_t)c <= lo || (uintptr_t)c >= hi || !at_in(h, k, c)))
        return at_bad(h, b, "a free-tree link was overwritten (use after free?)");
    return c;
}

/* Before the operation writes node c (reached through links at_ok
 * checked): false after a report when c's header is not that of a free
 * node of tree `big` (a forged link led to a used block or to the other
 * tree). */
static DMM_ALWAYS_INLINE bool at_need(dmm_heap *h, blk *c, bool big)
{
    if (HARDENED(h) && DMM_UNLIKELY(!at_live(c, big))) {
        at_bad(h, c, "a free-tree link names a block that is not a free node (use after free?)");
        return false;
    }
    return true;
}

/* Child dir of b, checked (within (lo, hi) on a descent). */
static DMM_ALWAYS_INLINE blk *at_child(dmm_heap *h, at_keys k, const blk *b, unsigned dir, uintptr_t lo, uintptr_t hi)
{
    uintptr_t c = at_wd(h, k, b, dir) & ~AT_HEAVY;
    return c != at_nil(h, b) ? at_ok(h, k, b, (blk *)c, lo, hi) : NULL;
}

/* A descent's window (CHECKED up): N granules from L where the node at the
 * current position may lie (the hinted region cut to the interval its
 * ancestors bound, as far as they lie in that region), and t, the current
 * node's granule offset in it.  A child is then checked with one subtract,
 * rotate and compare (order, region and alignment at once): its window is
 * [L, node) on the left, [node + GRAN, L + N granules) on the right.  The
 * ancestors' bounds themselves are not kept on the way down (no register
 * and no move per level): a child outside the window (damage, or a node in
 * another region of the heap) is checked by at_wslow, which derives them
 * from the path, and gets the window of its own region cut to them. */
typedef struct at_win {
    uintptr_t L;
    size_t N, t;
} at_win;

/* The slow half of a descent's check (cold, out of line): c was decoded
 * from link dir of b (b NULL: c is a root), whose ancestors are the first n
 * nodes pn of the descent's path (b may be the last of them: its bound then
 * counts twice, which changes nothing), pd the directions taken from them.
 * A descent by address passes pn and pd NULL, its tree and its key (the
 * address sought) instead: its first n nodes are found again from the root
 * (links it has followed already), so its path never escapes and the
 * compiler need not store what nothing else reads.  c
 * must lie strictly between the bounds the path sets (the highest node it
 * went right from, the lowest it went left from), granule-aligned, in a
 * region with room for a minimum block before its sentinel; it is then
 * returned with the window of that region cut to those bounds, else NULL
 * after a report naming `where`. */
typedef struct at_wres {
    blk *c;
    at_win w;
} at_wres;
static DMM_COLD at_wres at_wslow(dmm_heap *h, blk *const *pn, const unsigned char *pd, unsigned n, bool big,
                                 uintptr_t key, const blk *b, unsigned dir, uintptr_t c, const void *where)
{
    uintptr_t lo = 0, hi = UINTPTR_MAX, L, E;
    region *r;
    at_wres x = {NULL, {0, 0, 0}};
    const blk *root = *at_root(h, big);
    for (unsigned i = 0; i < n; i++) {
        const uintptr_t a = pn ? (uintptr_t)pn[i] : (uintptr_t)root;
        const bool right = pd ? pd[i] != 0 : key > a;
        if (right ? a > lo : a < hi)
            *(right ? &lo : &hi) = a;
        if (!pn)
            root = (const blk *)(at_raw(h, root, right) & ~AT_HEAVY);
    }
    if (b && (dir ? (uintptr_t)b > lo : (uintptr_t)b < hi))
        *(dir ? &lo : &hi) = (uintptr_t)b;
    if (c <= lo || c >= hi || (c & (GRAN - 1u)) || !(r = region_of(h, (const void *)c)) ||
        c < (uintptr_t)rfirst(r) || c > (uintptr_t)rsentinel(r) - MINB) {
        at_bad(h, where, "a free-tree link was overwritten (use after free?)");
        return x;
    }
    /* lo < c and hi > c are granule-aligned nodes (or 0 and UINTPTR_MAX):
     * no wrap, and the window holds c */
    L = lo + GRAN > (uintptr_t)rfirst(r) ? lo + GRAN : (uintptr_t)rfirst(r);
    E = (uintptr_t)rsentinel(r) - MINB + GRAN;
    if (hi < E)
        E = hi;
    x.c = (blk *)c;
    x.w.L = L;
    x.w.N = (E - L) >> GRAN_LOG2;
    x.w.t = (c - L) >> GRAN_LOG2;
    return x;
}

/* Root c (non-NULL) of a descent checked, with its window in *w: the
 * hinted region's (c in it), else at_wslow's. */
static DMM_ALWAYS_INLINE blk *at_wroot(dmm_heap *h, at_keys k, blk *c, const void *where, at_win *w)
{
    w->L = k.lo;
    w->N = k.node_g;
    w->t = rotr_w((uintptr_t)c - k.lo, GRAN_LOG2);
    if (DMM_LIKELY(w->t < w->N))
        return c;
    {
        const at_wres y = at_wslow(h, NULL, NULL, 0, false, 0, NULL, 0, (uintptr_t)c, where); /* by value: *w stays in registers */
        *w = y.w;
        return y.c;
    }
}

/* Child dir of b, whose window is *w and whose ancestors are the first n
 * nodes of the descent's path (b may be the last; pn, pd, big, key: as
 * at_wslow says), checked as at_wslow says, into *out (NULL: none); *cw
 * (may be w) receives the child's window.  True when there is a child: a
 * loop that goes on while it is true tests no pointer on the fast path. */
static DMM_ALWAYS_INLINE bool at_wstep(dmm_heap *h, at_keys k, blk *const *pn, const unsigned char *pd, unsigned n,
                                       bool big, uintptr_t key, const blk *b, unsigned dir, const at_win *w,
                                       at_win *cw, blk **out)
{
    uintptr_t c = at_wd(h, k, b, dir) & ~AT_HEAVY;
    at_win x;
    if (!HARDENED(h)) {
        *out = (blk *)c;
        return c != at_nil(h, b);
    }
    /* the window test first: an empty link (b itself) never passes it (b
     * is the end of its left window and lies before its right one), so the
     * test for it is paid off the fast path */
    x.L = dir ? (uintptr_t)b + GRAN : w->L;
    x.N = dir ? w->N - w->t - 1u : w->t;
    x.t = rotr_w(c - x.L, GRAN_LOG2);
    if (DMM_LIKELY(x.t < x.N)) {
        *cw = x;
        *out = (blk *)c;
        return true;
    }
    if (c == at_nil(h, b)) {
        *out = NULL;
        return false;
    }
    {
        const at_wres y = at_wslow(h, pn, pd, n, big, key, b, dir, c, b); /* by value: the window stays in registers */
        *cw = y.w;
        *out = y.c;
        return y.c != NULL;
    }
}

/* b's child on side dir from its decoded word c (without the balance
 * bit), checked as at_ok does: the order and region tests first, the
 * empty link (b itself fails the order test) only when they fail. */
static DMM_ALWAYS_INLINE blk *at_kid(dmm_heap *h, at_keys k, const blk *b, uintptr_t c, unsigned dir)
{
    if (!HARDENED(h))
        return c == at_nil(h, b) ? NULL : (blk *)c;
    if (DMM_LIKELY((dir ? c > (uintptr_t)b : c < (uintptr_t)b) && rotr_w(c - k.lo, GRAN_LOG2) < k.node_g))
        return (blk *)c;
    if (c == at_nil(h, b))
        return NULL;
    return at_ok(h, k, b, (blk *)c, dir ? (uintptr_t)b : 0, dir ? UINTPTR_MAX : (uintptr_t)b);
}

/* b's children (checked by at_ok) and balance. */
static AT_SHARED at_node at_read(dmm_heap *h, at_keys k, const blk *b)
{
    uintptr_t l = at_wd(h, k, b, 0), r = at_wd(h, k, b, 1);
    at_node n;
    if (AT_SIZE_FIRST) { /* -Os: one compare against the empty link, one at_ok (84 B less on Cortex-M4) */
        n.c[0] = (l & ~AT_HEAVY) != at_nil(h, b) ? at_ok(h, k, b, (blk *)(l & ~AT_HEAVY), 0, (uintptr_t)b) : NULL;
        n.c[1] = (r & ~AT_HEAVY) != at_nil(h, b) ? at_ok(h, k, b, (blk *)(r & ~AT_HEAVY), (uintptr_t)b, UINTPTR_MAX) : NULL;
    } else {
        n.c[0] = at_kid(h, k, b, l & ~AT_HEAVY, 0);
        n.c[1] = at_kid(h, k, b, r & ~AT_HEAVY, 1);
    }
    n.bal = (int)(r & AT_HEAVY) - (int)(l & AT_HEAVY);
    return n;
}

/* b's balance from its two link words (no child is followed). */
static DMM_ALWAYS_INLINE int at_bal(const dmm_heap *h, at_keys k, const blk *b)
{
    (void)k;
    return (int)at_heavy(h, b, 1) - (int)at_heavy(h, b, 0);
}

/* Toggles the balance bit of b's link dir, keeping its child. */
static AT_SHARED void at_flip(const dmm_heap *h, at_keys k, blk *b, unsigned dir)
{
    blk **sl = at_slot(h, b, dir);
    const uintptr_t e = (uintptr_t)*sl;
    (void)k;
    /* encoded, without decoding: the word is u * key with u = v ^ key2, and
     * (u ^ 1) * key is e + key for an even u (an even e: key is odd), e - key
     * for an odd one */
    *sl = (blk *)(HARDENED(h) ? ((e & AT_HEAVY) ? e - h->link_key : e + h->link_key) : e ^ AT_HEAVY);
}

static DMM_ALWAYS_INLINE void at_write(const dmm_heap *h, at_keys k, blk *b, blk *l, blk *r, int bal)
{
    *lnext(b) = at_enc(h, k, b, (l ? (uintptr_t)l : at_nil(h, b)) | (uintptr_t)(bal < 0));
    *lprev(b) = at_enc(h, k, b, (r ? (uintptr_t)r : at_nil(h, b)) | (uintptr_t)(bal > 0));
}

/* b's children given as (child on side dir, child on the other side). */
static DMM_ALWAYS_INLINE void at_put(const dmm_heap *h, at_keys k, blk *b, unsigned dir, blk *cd, blk *co, int bal)
{
    if (dir)
        at_write(h, k, b, co, cd, bal);
    else
        at_write(h, k, b, cd, co, bal);
}

static DMM_ALWAYS_INLINE void at_set_child(const dmm_heap *h, at_keys k, blk *b, unsigned dir, blk *c)
{
    uintptr_t heavy = at_heavy(h, b, dir);
    *at_slot(h, b, dir) = at_enc(h, k, b, (c ? (uintptr_t)c : at_nil(h, b)) | heavy);
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

/* Child dir of b whose subtree maximum alone is read (nothing is written
 * to it, no descent follows it): the region test alone (its words can be
 * read), no order test.  A forged link there can only make b's maximum
 * wrong, which misleads no check: the next descent that takes the link
 * meets it in its window test (AddrTreeDamage.ForgedLinkBesideALoweredPath). */
static DMM_ALWAYS_INLINE const blk *at_rchild(dmm_heap *h, at_keys k, const blk *b, unsigned dir)
{
    const uintptr_t c = at_wd(h, k, b, dir) & ~AT_HEAVY;
    if (c == at_nil(h, b))
        return NULL;
    if (!HARDENED(h) || DMM_LIKELY(rotr_w(c - k.lo, GRAN_LOG2) < k.node_g))
        return (const blk *)c;
    return at_in(h, k, (const blk *)c) ? (const blk *)c : at_bad(h, b, "a free-tree link was overwritten (use after free?)");
}

/* The same where b's child on side dir is `below` (NULL or a node already
 * checked, whose maximum is current): only the other child is read. */
static DMM_ALWAYS_INLINE size_t at_fix_below(dmm_heap *h, at_keys k, blk *b, unsigned dir, const blk *below)
{
    size_t m = bsize(b);
    const blk *o = at_rchild(h, k, b, !dir);
    if (below && *at_maxp(below) > m)
        m = *at_maxp(below);
    if (o && *at_maxp(o) > m)
        m = *at_maxp(o);
    *at_maxp(b) = m;
    return m;
}

/* Makes c the subtree at path level i (the root when i == 0); the parent
 * it writes is checked first (at_need). */
static DMM_ALWAYS_INLINE void at_relink(dmm_heap *h, at_keys k, const at_path *p, unsigned i, blk *c, bool big)
{
    if (i == 0)
        *at_root(h, big) = c;
    else if (at_need(h, p->n[i - 1], big))
        at_set_child(h, k, p->n[i - 1], p->d[i - 1], c);
}

/* The direction stored at level i of an insertion's path, whose block is
 * b.  From hardening CHECKED up it is not stored: it is b's address
 * against the node's (b lies in the subtree below), recomputed on the way
 * up where it is read, which saves a store per level on the way down where
 * registers are short (in the lean form the stored byte measured cheaper
 * than the compare on the way up: scripts/bench_heap_v2.py; at -Os it is
 * stored too, so the insert shares at_relink: less code). */
static DMM_ALWAYS_INLINE unsigned at_ins_dir(const dmm_heap *h, const at_path *p, unsigned i, const blk *b)
{
    return HARDENED(h) && !AT_SIZE_FIRST ? b > p->n[i] : p->d[i];
}

/* at_relink on an insertion's path (its directions as at_ins_dir says). */
static DMM_ALWAYS_INLINE void at_relink_ins(dmm_heap *h, at_keys k, const at_path *p, unsigned i, blk *c, bool big,
                                            const blk *b)
{
    if (AT_SIZE_FIRST || !HARDENED(h)) { /* the directions are stored: one copy of at_relink */
        at_relink(h, k, p, i, c, big);
        return;
    }
    if (i == 0)
        *at_root(h, big) = c;
    else if (at_need(h, p->n[i - 1], big))
        at_set_child(h, k, p->n[i - 1], at_ins_dir(h, p, i - 1, b), c);
}

/* Appends (c, dir) to path p whose length is *n (a local of the descent,
 * stored in p->k when it ends: kept in a register, not reloaded after every
 * store). */
static DMM_ALWAYS_INLINE bool at_push(dmm_heap *h, at_path *p, unsigned *n, blk *c, unsigned dir)
{
    if (DMM_UNLIKELY(*n >= AT_DEPTH)) {
        at_bad(h, c, "a free tree is deeper than its balance allows (links overwritten)");
        return false;
    }
    p->n[*n] = c;
    p->d[(*n)++] = (unsigned char)dir;
    return true;
}

/* at_push on an insertion's path (the direction stored in the lean form
 * only, at_ins_dir). */
static DMM_ALWAYS_INLINE bool at_push_ins(dmm_heap *h, at_path *p, unsigned *n, blk *c, unsigned dir)
{
    if (DMM_UNLIKELY(*n >= AT_DEPTH)) {
        at_bad(h, c, "a free tree is deeper than its balance allows (links overwritten)");
        return false;
    }
    if (!HARDENED(h) || AT_SIZE_FIRST)
        p->d[*n] = (unsigned char)dir;
    p->n[(*n)++] = c;
    return true;
}

/* Rebalances the subtree at a (checked by at_need) whose side dir is two
 * levels taller than the other.  Returns its new root (NULL if a node it
 * needs was lost to a bad link or is not a node: the subtree is then left
 * as it is); *shorter: the subtree is one level lower than before the
 * insertion or deletion that unbalanced it. */
static inline blk *at_rotate(dmm_heap *h, blk *a, unsigned dir, bool big, bool *shorter)
{
    const at_keys k = at_keys_of(h);
    const int sd = dir ? 1 : -1;
    at_node A = at_read(h, k, a), X;
    blk *x = A.c[dir];
    if (!x || !at_need(h, x, big))
        return NULL;
    X = at_read(h, k, x);
    if (X.bal == -sd) { /* x leans the other way: double rotation through y */
        blk *y = X.c[!dir];
        at_node Y;
        if (!y || !at_need(h, y, big))
            return NULL;
        Y = at_read(h, k, y);
        at_put(h, k, a, dir, Y.c[!dir], A.c[!dir], Y.bal == sd ? -sd : 0);
        at_put(h, k, x, dir, X.c[dir], Y.c[dir], Y.bal == -sd ? sd : 0);
        at_put(h, k, y, dir, x, a, 0);
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
    at_put(h, k, a, dir, X.c[!dir], A.c[!dir], X.bal ? 0 : sd);
    at_put(h, k, x, dir, X.c[dir], a, X.bal ? 0 : -sd);
    if (big) {
        A.c[dir] = X.c[!dir];
        X.c[!dir] = a;
        at_fix(a, &A);
        at_fix(x, &X);
    }
    return x;
}

/* Inserts free block b (state bits clear, not in a tree). */
static DMM_ALWAYS_INLINE void at_insert_in(dmm_heap *h, blk *b, bool big)
{
    const at_keys k = at_keys_of(h);
    at_path p;
    size_t s = bsize(b);
    blk *c = *at_root(h, big);
    at_win w = {0, 0, 0};
    unsigned n = 0;
    if (c && HARDENED(h))
        c = at_wroot(h, k, c, b, &w);
    if (c) for (;;) { /* ends where at_wstep finds no child */
        const unsigned dir = b > c;
        if (DMM_UNLIKELY(c == b)) {
            at_bad(h, b, "a block being freed is already in the free tree");
            return;
        }
        if (!at_push_ins(h, &p, &n, c, dir))
            return;
        if (big && *at_maxp(c) < s) {
            if (!at_need(h, c, big))
                return;
            *at_maxp(c) = s;
        }
        if (!at_wstep(h, k, NULL, NULL, n, big, (uintptr_t)b, c, dir, &w, &w, &c))
            break;
    }
    at_write(h, k, b, NULL, NULL, 0);
    if (big)
        *at_maxp(b) = s;
    p.k = n;
    at_relink_ins(h, k, &p, p.k, b, big, b);
    for (unsigned i = p.k; i-- > 0;) { /* the side of n[i] that holds b grew */
        blk *a = p.n[i], *r;
        const unsigned dir = at_ins_dir(h, &p, i, b);
        bool shorter;
        if (!at_need(h, a, big))
            return;
        if (at_heavy(h, a, !dir)) {
            at_flip(h, k, a, !dir); /* balanced, as high as before */
            return;
        }
        if (!at_heavy(h, a, dir)) {
            at_flip(h, k, a, dir); /* taller on the side that grew */
            continue;
        }
        if ((r = at_rotate(h, a, dir, big, &shorter)) != NULL)
            at_relink_ins(h, k, &p, i, r, big, b);
        return;
    }
}

/* Removes b, reached through path p (p->n[p->k - 1] is its parent). */
static DMM_ALWAYS_INLINE void at_delete_at(dmm_heap *h, at_keys k, at_path *p, blk *b, bool big)
{
    at_node B = at_read(h, k, b);
    const unsigned j = p->k;
    size_t gone = bsize(b), ys = 0; /* the sizes that left the subtrees on the path */
    bool balancing = true, two = B.c[0] && B.c[1];
    if (!two) {
        at_relink(h, k, p, j, B.c[0] ? B.c[0] : B.c[1], big);
    } else {
        /* b's successor y (leftmost of its right subtree) takes its place */
        blk *y = B.c[1], *yl;
        at_node Y;
        unsigned n = p->k;
        if (!at_push(h, p, &n, b, 1))
            return;
        while ((yl = at_child(h, k, y, 0, (uintptr_t)b, (uintptr_t)y)) != NULL) {
            if (!at_push(h, p, &n, y, 0))
                return;
            y = yl;
        }
        p->k = n;
        if (!at_need(h, y, big))
            return;
        Y = at_read(h, k, y);
        ys = bsize(y);
        if (p->k - 1u == j) {
            at_write(h, k, y, B.c[0], Y.c[1], B.bal);
        } else {
            if (!at_need(h, p->n[p->k - 1u], big))
                return;
            at_set_child(h, k, p->n[p->k - 1u], 0, Y.c[1]);
            at_write(h, k, y, B.c[0], B.c[1], B.bal);
        }
        p->n[j] = y;
        at_relink(h, k, p, j, y, big);
    }
    for (unsigned i = p->k; i-- > 0;) { /* the side d[i] of n[i] got lower */
        blk *a = p->n[i];
        const bool writes = balancing; /* the header is checked before a's first write */
        if (balancing) {
            const unsigned dir = p->d[i];
            const int sd = dir ? 1 : -1, bal = at_bal(h, k, a);
            if (!at_need(h, a, big))
                return;
            if (bal == 0) {
                at_flip(h, k, a, !dir); /* now taller on the other side, as high as before */
                balancing = false;
            } else if (bal == sd) {
                at_flip(h, k, a, dir); /* balanced, one lower */
            } else {
                blk *r = at_rotate(h, a, !dir, big, &balancing);
                if (!r)
                    return;
                at_relink(h, k, p, i, r, big);
                continue; /* at_rotate fixed the maxima of what it moved */
            }
        }
        if (big) {
            /* below level j the subtrees lost y, from j up they lost b; y's
             * own maximum (at j) is stale */
            if ((two && i == j) || *at_maxp(a) <= (i > j ? ys : gone)) {
                at_node A;
                if (!writes && !at_need(h, a, true))
                    return;
                A = at_read(h, k, a);
                at_fix(a, &A);
            } else if (!balancing && i < j) {
                return; /* nothing above changes */
            }
        } else if (!balancing) {
            return;
        }
    }
}

/* at_delete_at with one copy per tree. */
static inline void at_unlink(dmm_heap *h, at_keys k, at_path *p, blk *b, bool big)
{
    if (big)
        at_delete_at(h, k, p, b, true);
    else
        at_delete_at(h, k, p, b, false);
}

/* Node c0 of tree `big` with its path in p (c0 is not in it), or false
 * after a report when c0 is not where its address says. */
static DMM_ALWAYS_INLINE bool at_find(dmm_heap *h, at_keys k, at_path *p, blk *c0, bool big)
{
    blk *c = *at_root(h, big);
    at_win w = {0, 0, 0};
    unsigned n = 0;
    if (c && HARDENED(h))
        c = at_wroot(h, k, c, c0, &w);
    if (!c)
        goto missing;
    while (c != c0) {
        const unsigned dir = c0 > c;
        if (!at_push(h, p, &n, c, dir))
            return false;
        if (!at_wstep(h, k, NULL, NULL, n, big, (uintptr_t)c0, c, dir, &w, &w, &c))
            goto missing;
    }
    p->k = n;
    return true;
missing:
    at_bad(h, c0, "a free block is missing from its free tree (link overwritten?)");
    return false;
}

/* Unlinks free block b from its tree; false (after a report) when b is not
 * where its address says it must be. */
static inline bool at_remove(dmm_heap *h, blk *b)
{
    const at_keys k = at_keys_of(h);
    bool big = bsize(b) > MINB;
    at_path p;
    if (!at_find(h, k, &p, b, big))
        return false;
    if (big)
        at_delete_at(h, k, &p, b, true);
    else
        at_delete_at(h, k, &p, b, false);
    return true;
}

/* Inserts free block b into the tree of its size (one copy per tree). */
static inline void at_insert_any(dmm_heap *h, blk *b)
{
    if (bsize(b) > MINB)
        at_insert_in(h, b, true);
    else
        at_insert_in(h, b, false);
}

/* at_insert_any, with the insertion into an empty tree (b becomes its
 * root: what at_insert_in does there, without the call) inline: a heap
 * whose blocks of one size are freed and taken back in turn (a node pool)
 * frees most of them into an empty tree. */
static DMM_ALWAYS_INLINE void at_insert(dmm_heap *h, blk *b)
{
    const size_t s = bsize(b);
    blk **root = at_root(h, s > MINB);
    if (!AT_SIZE_FIRST && !*root) {
        const at_keys k = {0};
        at_write(h, k, b, NULL, NULL, 0);
        if (s > MINB)
            *at_maxp(b) = s;
        *root = b;
        return;
    }
    at_insert_any(h, b);
}


/* The subtree maxima on path p after a block of its subtree grew to s. */
static DMM_ALWAYS_INLINE void at_raise(dmm_heap *h, at_path *p, size_t s)
{
    for (unsigned i = p->k; i-- > 0 && *at_maxp(p->n[i]) < s;) {
        if (!at_need(h, p->n[i], true))
            return;
        *at_maxp(p->n[i]) = s;
    }
}

/* The subtree maxima on path p after a block of size `was` there shrank or
 * left, `below` being the subtree below the path (the child on side
 * d[k - 1] of its last node): an ancestor whose maximum is not `was` keeps
 * it (and so do all above it); the others are recomputed from their size,
 * the maximum below them on the path and their other child's (read and
 * checked). */
static DMM_ALWAYS_INLINE void at_lower(dmm_heap *h, at_keys k, at_path *p, size_t was, const blk *below)
{
    for (unsigned i = p->k; i-- > 0 && *at_maxp(p->n[i]) == was; below = p->n[i]) {
        if (!at_need(h, p->n[i], true))
            return;
        at_fix_below(h, k, p->n[i], p->d[i], below);
    }
}

/* nb takes node c's place (same neighbours in address order: no block lies
 * between them), reached by path p; the big tree only.  Returns nb's
 * subtree maximum. */
static DMM_ALWAYS_INLINE size_t at_replace(dmm_heap *h, at_keys k, at_path *p, blk *c, blk *nb)
{
    at_node C = at_read(h, k, c);
    at_write(h, k, nb, C.c[0], C.c[1], C.bal);
    at_relink(h, k, p, p->k, nb, true);
    return at_fix(nb, &C);
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
    at_keys k; /* read where a merge needs them, not on the frees that merge nothing */
    at_path p;
    size_t s = bsize(b), ns;
    blk *nx = bat(b, s), *pv;
    if (!bpused(b)) {
        pv = bprev(b);
        if (!blisted(pv) || bsize(pv) == MINB || btop(nx))
            return false;
        if (blisted(nx) && at_remove(h, nx))
            s += bsize(nx);
        k = at_keys_of(h);
        if (!at_find(h, k, &p, pv, true)) {
            mark_free(b, s, 0);
            at_insert(h, b);
            return true;
        }
        s += bsize(pv);
        mark_free(pv, s, 0);
        if (*at_maxp(pv) < s)
            *at_maxp(pv) = s;
        at_raise(h, &p, s);
        return true;
    }
    if (!blisted(nx) || (ns = bsize(nx)) == MINB)
        return false;
    k = at_keys_of(h);
    if (!at_find(h, k, &p, nx, true))
        return false;
    at_replace(h, k, &p, nx, b);
    mark_free(b, s + ns, 0);
    *at_maxp(b) = *at_maxp(b) > s + ns ? *at_maxp(b) : s + ns;
    at_raise(h, &p, s + ns);
    return true;
}

/* The leftmost node of tree `big` with its path in p, or NULL. */
static DMM_ALWAYS_INLINE blk *at_leftmost(dmm_heap *h, at_keys k, at_path *p, bool big, uint64_t *steps)
{
    blk *c = *at_root(h, big), *l;
    at_win w = {0, 0, 0};
    unsigned n = 0;
    if (c && HARDENED(h))
        c = at_wroot(h, k, c, c, &w);
    while (c && at_wstep(h, k, p->n, p->d, n, big, 0, c, 0, &w, &w, &l)) {
        ++*steps;
        if (!at_push(h, p, &n, c, 0))
            return NULL;
        c = l;
    }
    p->k = n;
    return c;
}

/* First fit: unlinks and returns the lowest-addressed free block of at
 * least s bytes, or NULL.  With `split` (a plain request: finish_alloc
 * splits what it gets at s), a tail that stays in the big tree is split off
 * here and takes the block's node, which saves the delete and the insert. */
static DMM_ALWAYS_INLINE blk *at_take(dmm_heap *h, size_t s, bool split)
{
    const at_keys k = at_keys_of(h);
    at_path p;
    uint64_t steps = 1;
    blk *f = NULL, *c;
    bool big = true;
    if (s <= MINB) {
        /* any block fits: the lower of the two trees' leftmost blocks */
        blk *a = *at_root(h, false);
        /* A node pool's case, inline: the small tree is one node whose
         * links are both empty (balance bits clear) and the big tree is
         * empty.  That node, in the hinted region and a free minimum block
         * by its header, is what the search below takes, leaving both trees
         * empty; anything else (damage included) takes the search. */
        if (!AT_SIZE_FIRST && a && !*at_root(h, true) && at_wd(h, k, a, 0) == at_nil(h, a) &&
            at_wd(h, k, a, 1) == at_nil(h, a) &&
            (!HARDENED(h) || (rotr_w((uintptr_t)a - k.lo, GRAN_LOG2) < k.node_g && at_live(a, false)))) {
            *at_root(h, false) = NULL;
            st_steps(h, steps);
            return a;
        }
        a = at_leftmost(h, k, &p, false, &steps);
        at_win w = {0, 0, 0};
        c = *at_root(h, true);
        if (c && HARDENED(h))
            c = at_wroot(h, k, c, c, &w);
        /* all left: the bound of each node is its parent's (no path kept) */
        for (blk *l; c && at_wstep(h, k, NULL, NULL, 0, true, 0, c, 0, &w, &w, &l); c = l)
            ++steps;
        if (a && (!c || a < c)) {
            f = a;
            big = false;
        } else if (c) {
            f = at_leftmost(h, k, &p, true, &steps);
        }
    } else {
        at_win w = {0, 0, 0}, lw = {0, 0, 0};
        unsigned n = 0;
        c = *at_root(h, true);
        if (c && HARDENED(h))
            c = at_wroot(h, k, c, c, &w);
        if (c && *at_maxp(c) >= s) {
            for (;;) {
                blk *l;
                ++steps;
                if (at_wstep(h, k, p.n, p.d, n, true, 0, c, 0, &w, &lw, &l) && *at_maxp(l) >= s) {
                    if (!at_push(h, &p, &n, c, 0))
                        break;
                    c = l;
                    w = lw;
                    continue;
                }
                if (bsize(c) >= s) {
                    f = c;
                    break;
                }
                if (!at_push(h, &p, &n, c, 1))
                    break;
                if (!at_wstep(h, k, p.n, p.d, n, true, 0, c, 1, &w, &w, &c) || *at_maxp(c) < s) {
                    at_bad(h, p.n[n - 1u], "a free-tree node's subtree maximum was overwritten");
                    break;
                }
            }
        }
        p.k = n;
    }
    st_steps(h, steps);
    if (!f)
        return NULL;
    if (HARDENED(h) && DMM_UNLIKELY(!at_fits(h, f, s, big)))
        return at_bad(h, f, "a free-tree link names a block too small for the request");
    if (split && big && P_SPLIT(h) && P_COALESCE(h) == DMM_COALESCE_IMMEDIATE && h->cfg.coalesce_max == 0 && !P_POISON(h) &&
        bsize(f) - s >= h->split_min && bsize(f) - s > MINB) {
        /* what finish_alloc would split off and release_split insert */
        size_t bs = bsize(f);
        blk *rem = bat(f, s);
        rem->head = (bs - s) | F_PUSED; /* f is about to be used */
        at_replace(h, k, &p, f, rem);
        mark_free(rem, bs - s, 0);
        f->head = s | (f->head & F_PUSED);
        at_lower(h, k, &p, bs, rem);
        return f;
    }
    if (big || AT_SIZE_FIRST)
        at_unlink(h, k, &p, f, big);
    else
        at_delete_at(h, k, &p, f, false); /* the small tree's leftmost: inline (every minimum-size malloc) */
    return f;
}

#endif
