/*
 * src/heap/addrtree_check.c - dmm_heap_check's part for org=addrtree
 * (engine/addrtree.h): every free block is in its tree exactly once, and
 * each tree is in address order, AVL-balanced with balance bits that match
 * its heights, and (big tree) every node holds its subtree's largest size.
 * Nothing here writes to the heap.
 */
#include "engine/bins.h"

blk *dmm__addrtree_bad(dmm_heap *h, const void *where, const char *msg)
{
    (void)msg; /* unread where reports carry no text (DMM_HEAP_ERROR_TEXT 0) */
    dmm__heap_report(h, DMM_ERR_FREE_LIST, where, msg);
    return NULL;
}

typedef struct at_chk {
    const dmm_heap *h;
    dmm_heap_check_report *rep;
    size_t nodes, limit;
} at_chk;

static int at_fail(at_chk *k, dmm_heap_invariant inv, const void *where, const char *detail)
{
    if (k->rep) {
        k->rep->invariant = inv;
        k->rep->where = where;
        k->rep->detail = detail;
    }
    return -1;
}

/* Height of the subtree at c, whose keys must lie in (lo, hi), with its
 * largest block size in *max; -1 after filling the report. */
static int check_sub(at_chk *k, const blk *c, uintptr_t lo, uintptr_t hi, bool big, unsigned depth, size_t *max)
{
    const region *r;
    uintptr_t lw, rw;
    size_t s = 0, ml = 0, mr = 0;
    int hl, hr;
    *max = 0;
    if (!c)
        return 0;
    if (++k->nodes > k->limit)
        return at_fail(k, DMM_INV_LIST_LINK, c, "more free-tree nodes than free blocks (cycle or stale node)");
    if (depth > AT_DEPTH)
        return at_fail(k, DMM_INV_LIST_LINK, c, "a free tree is deeper than its balance allows");
    r = dmm__region_lookup(k->h, c); /* the header is read only inside a region */
    if (((uintptr_t)c & (GRAN - 1u)) || !r || c < rfirst(r) || c >= rsentinel(r) || (s = bsize(c)) < MINB ||
        s > (size_t)((const char *)rsentinel(r) - (const char *)c) || !blisted(c) || bnext(c)->foot != s)
        return at_fail(k, DMM_INV_LIST_LINK, c, "free-tree node is not a free block of this heap");
    if ((s > MINB) != big)
        return at_fail(k, DMM_INV_LIST_BIN, c, "free block in the wrong tree for its size");
    if ((uintptr_t)c <= lo || (uintptr_t)c >= hi)
        return at_fail(k, DMM_INV_LIST_ORDER, c, "free tree out of address order");
    lw = at_word(k->h, c, 0);
    rw = at_word(k->h, c, 1);
    if ((hl = check_sub(k, (const blk *)(lw & ~AT_HEAVY), lo, (uintptr_t)c, big, depth + 1u, &ml)) < 0 ||
        (hr = check_sub(k, (const blk *)(rw & ~AT_HEAVY), (uintptr_t)c, hi, big, depth + 1u, &mr)) < 0)
        return -1;
    if (hr - hl > 1 || hl - hr > 1)
        return at_fail(k, DMM_INV_LIST_LINK, c, "free tree out of balance (subtree heights differ by more than one)");
    if ((int)(rw & AT_HEAVY) - (int)(lw & AT_HEAVY) != hr - hl)
        return at_fail(k, DMM_INV_LIST_LINK, c, "a free-tree node's balance bits disagree with its subtrees' heights");
    *max = s > ml ? s : ml;
    if (mr > *max)
        *max = mr;
    if (big && *at_maxp(c) != *max)
        return at_fail(k, DMM_INV_LIST_LINK, c, "a free-tree node's subtree maximum is wrong");
    return 1 + (hl > hr ? hl : hr);
}

dmm_status dmm__addrtree_check(dmm_heap *h, size_t free_blocks, dmm_heap_check_report *rep)
{
    at_chk k = {h, rep, 0, free_blocks};
    size_t max;
    for (unsigned t = 0; t < 2; t++)
        if (check_sub(&k, *at_root(h, t == 1), 0, UINTPTR_MAX, t == 1, 1, &max) < 0)
            return DMM_E_CORRUPT;
    for (unsigned w = 0; w < h->nwords; w++)
        if (h->bitmap[w])
            return at_fail(&k, DMM_INV_BITMAP, &h->bitmap[w], "org=addrtree keeps no bitmap, but a bit is set"),
                   DMM_E_CORRUPT;
    if (h->summary)
        return at_fail(&k, DMM_INV_CONTROL, h, "org=addrtree keeps no bitmap summary, but it is set"), DMM_E_CORRUPT;
    if (k.nodes != free_blocks)
        return at_fail(&k, DMM_INV_FREE_COUNT, h, "free blocks in regions differ from nodes in the free trees"),
               DMM_E_CORRUPT;
    return DMM_OK;
}
