/*
 * src/heap/heap.c - the policy heap: init and regions, free lists and bins,
 * the fit policies, allocation, free, realloc, aligned allocation, locks and
 * pointer validation.  The checker, walker and statistics output live in
 * check.c; the configuration space in config.c.
 */
#include "../port/annotate.h"
#include "heap_internal.h"

/* ======================================================================
 * locks
 * ====================================================================== */

void dmm__heap_lock(dmm_heap *h)
{
    switch (P_LOCK(h)) {
    case DMM_LOCK_NONE:
        break;
    case DMM_LOCK_SPIN:
        while (atomic_flag_test_and_set_explicit(&h->spin, memory_order_acquire))
            dmm_port_cpu_relax();
        break;
    case DMM_LOCK_MUTEX:
        dmm_port_mutex_lock(&h->mutex);
        break;
    case DMM_LOCK_USER:
        h->cfg.lock_hooks.lock(h->cfg.lock_hooks.ctx);
        break;
    }
}

void dmm__heap_unlock(dmm_heap *h)
{
    switch (P_LOCK(h)) {
    case DMM_LOCK_NONE:
        break;
    case DMM_LOCK_SPIN:
        atomic_flag_clear_explicit(&h->spin, memory_order_release);
        break;
    case DMM_LOCK_MUTEX:
        dmm_port_mutex_unlock(&h->mutex);
        break;
    case DMM_LOCK_USER:
        h->cfg.lock_hooks.unlock(h->cfg.lock_hooks.ctx);
        break;
    }
}

static void enter(dmm_heap *h)
{
    DMM_ANN_ENTER();
    dmm__heap_lock(h);
#if DMM_ASSERT_LEVEL >= 3
    h->errors_at_enter = h->errors_seen;
#endif
}

static void leave(dmm_heap *h)
{
#if DMM_ASSERT_LEVEL >= 3
    /* a misuse this call reported may have left the heap damaged on
     * purpose (the REPORT policy carries on): only a silent break aborts */
    if (h->errors_seen == h->errors_at_enter && dmm__heap_check_locked(h, NULL) != DMM_OK)
        dmm_port_abort();
#endif
    dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
}

/* ======================================================================
 * error reporting
 * ====================================================================== */

static void report(dmm_heap *h, dmm_error_kind kind, dmm_op op, const void *ptr, const char *msg)
{
    dmm_error e;
    if (P_STATS(h) != DMM_STATS_OFF)
        h->st.error_count++;
    h->errors_seen++;
    e.kind = kind;
    e.op = op;
    e.ptr = ptr;
    e.message = msg;
    if (h->cfg.error_fn)
        h->cfg.error_fn(h->cfg.error_ctx, &e);
    if (h->cfg.on_error == DMM_ON_ERROR_ABORT)
        dmm_port_abort();
}

/* ======================================================================
 * statistics
 * ====================================================================== */

static void st_add_live(dmm_heap *h, size_t bs, size_t req)
{
    if (P_STATS(h) == DMM_STATS_OFF)
        return;
    h->st.live_count++;
    h->st.live_block_bytes += bs;
    if (h->st.live_block_bytes > h->st.peak_block_bytes)
        h->st.peak_block_bytes = h->st.live_block_bytes;
    if (P_STATS(h) == DMM_STATS_FULL) {
        h->st.live_requested += req;
        if (h->st.live_requested > h->st.peak_requested)
            h->st.peak_requested = h->st.live_requested;
    }
}

static void st_sub_live(dmm_heap *h, size_t bs, size_t req)
{
    if (P_STATS(h) == DMM_STATS_OFF)
        return;
    h->st.live_count--;
    h->st.live_block_bytes -= bs;
    if (P_STATS(h) == DMM_STATS_FULL)
        h->st.live_requested -= req;
}

static void st_request(dmm_heap *h, size_t req)
{
    if (P_STATS(h) == DMM_STATS_FULL) {
        unsigned i = req ? dmm_log2_floor(req) + 1u : 0u;
        if (i >= DMM_HEAP_HIST_BUCKETS)
            i = DMM_HEAP_HIST_BUCKETS - 1u;
        h->st.size_hist[i]++;
    }
}

static void st_failed(dmm_heap *h)
{
    if (P_STATS(h) != DMM_STATS_OFF)
        h->st.failed_count++;
}

static void st_steps(dmm_heap *h, uint64_t steps)
{
    if (P_STATS(h) == DMM_STATS_OFF)
        return;
    h->st.search_steps += steps;
    if (steps > h->st.search_max)
        h->st.search_max = steps;
}

/* Top bytes went down or the footprint up: keep the extent's high-water. */
static void note_extent(dmm_heap *h)
{
    size_t ext = h->st.footprint - h->st.top_bytes;
    if (ext > h->st.peak_extent)
        h->st.peak_extent = ext;
}

/* ======================================================================
 * bitmap over bins: one bit per bin, one summary bit per bitmap word
 * ====================================================================== */

static inline void bm_set(dmm_heap *h, unsigned i)
{
    h->bitmap[i / DMM_WORD_BITS] |= (size_t)1 << (i % DMM_WORD_BITS);
    h->summary |= (size_t)1 << (i / DMM_WORD_BITS);
}

static inline void bm_clear(dmm_heap *h, unsigned i)
{
    unsigned w = (unsigned)(i / DMM_WORD_BITS);
    h->bitmap[w] &= ~((size_t)1 << (i % DMM_WORD_BITS));
    if (!h->bitmap[w])
        h->summary &= ~((size_t)1 << w);
}

/* Smallest non-empty bin >= i, or -1. */
static inline int bm_find(const dmm_heap *h, unsigned i)
{
    unsigned w;
    size_t m, s;
    if (i >= h->nbins)
        return -1;
    w = (unsigned)(i / DMM_WORD_BITS);
    m = h->bitmap[w] & (~(size_t)0 << (i % DMM_WORD_BITS));
    if (m)
        return (int)(w * DMM_WORD_BITS + dmm_ctz(m));
    if (w + 1u >= DMM_WORD_BITS)
        return -1;
    s = h->summary & (~(size_t)0 << (w + 1u));
    if (!s)
        return -1;
    w = dmm_ctz(s);
    return (int)(w * DMM_WORD_BITS + dmm_ctz(h->bitmap[w]));
}

/* ======================================================================
 * free lists
 * ====================================================================== */

static void poison_fill(dmm_heap *h, void *from, const void *to)
{
    if (P_POISON(h) && (const char *)to > (char *)from)
        dmm_port_memset(from, (int)POISON_BYTE, (size_t)((const char *)to - (char *)from));
}

/* Link b after pred (NULL: at the head) in bin n. */
static void list_insert_after(dmm_heap *h, unsigned n, blk *pred, blk *b)
{
    bin *bn = &h->bins[n];
    blk *nx = pred ? *lnext(pred) : bn->head;
    *lnext(b) = nx;
    if (DOUBLY(h)) {
        *lprev(b) = pred;
        if (nx)
            *lprev(nx) = b;
    }
    if (pred)
        *lnext(pred) = b;
    else
        bn->head = b;
    if (!nx)
        bn->tail = b;
    bm_set(h, n);
    h->free_nodes++;
}

/* Insert free block b into its bin, honouring the ordering policy. */
static void bin_insert(dmm_heap *h, blk *b)
{
    unsigned n = bin_of(h, bsize(b));
    bin *bn = &h->bins[n];
    blk *pred = NULL, *c;
    switch (P_ORDER(h)) {
    case DMM_ORDER_LIFO:
        break;
    case DMM_ORDER_FIFO:
        pred = bn->tail;
        break;
    case DMM_ORDER_ADDRESS:
        for (c = bn->head; c && c < b; c = *lnext(c))
            pred = c;
        break;
    case DMM_ORDER_SIZE: {
        size_t s = bsize(b);
        for (c = bn->head; c && bsize(c) <= s; c = *lnext(c))
            pred = c;
        break;
    }
    }
    list_insert_after(h, n, pred, b);
}

/* Unlink b from bin n given its list predecessor (NULL: b is the head). */
static void list_remove(dmm_heap *h, unsigned n, blk *pred, blk *b)
{
    bin *bn = &h->bins[n];
    blk *nx = *lnext(b);
    if (pred)
        *lnext(pred) = nx;
    else
        bn->head = nx;
    if (DOUBLY(h) && nx)
        *lprev(nx) = pred;
    if (bn->tail == b)
        bn->tail = pred;
    if (!bn->head)
        bm_clear(h, n);
    if (h->rover == b)
        h->rover = nx;
    h->free_nodes--;
}

/* Unlink an arbitrary free block: O(1) doubly, a walk of its bin singly. */
static void bin_remove(dmm_heap *h, blk *b)
{
    unsigned n = bin_of(h, bsize(b));
    blk *pred;
    if (DOUBLY(h)) {
        pred = *lprev(b);
    } else {
        uint64_t steps = 0;
        pred = NULL;
        for (blk *c = h->bins[n].head; c != b; c = *lnext(c)) {
            DMM_ASSERT(c != NULL);
            pred = c;
            steps++;
        }
        st_steps(h, steps);
    }
    list_remove(h, n, pred, b);
}

/* ======================================================================
 * searching
 * ====================================================================== */

typedef struct found {
    blk *b;
    blk *pred;
    bool pred_known;
    unsigned bin;
} found;

/* Scan bin n for a block of at least s bytes under fit policy fit. */
static bool scan_bin(dmm_heap *h, unsigned n, size_t s, dmm_heap_fit fit, found *f, uint64_t *steps)
{
    blk *pred = NULL, *best = NULL, *best_pred = NULL;
    for (blk *c = h->bins[n].head; c; pred = c, c = *lnext(c)) {
        size_t cs = bsize(c);
        (*steps)++;
        if (cs < s)
            continue;
        if (cs == s || fit == DMM_FIT_FIRST || fit == DMM_FIT_NEXT || fit == DMM_FIT_GOOD ||
            (fit == DMM_FIT_BEST && P_ORDER(h) == DMM_ORDER_SIZE)) {
            best = c;
            best_pred = pred;
            break;
        }
        if (fit == DMM_FIT_EXACT) {
            if (!best) {
                best = c;
                best_pred = pred;
            }
            continue;
        }
        if (!best || cs < bsize(best)) { /* best fit */
            best = c;
            best_pred = pred;
        }
    }
    if (!best)
        return false;
    f->b = best;
    f->pred = best_pred;
    f->pred_known = true;
    f->bin = n;
    return true;
}

/* Next fit over the single list: from the rover to the end, then from the
 * head up to the rover. */
static bool scan_next_fit(dmm_heap *h, size_t s, found *f, uint64_t *steps)
{
    blk *start = h->rover;
    blk *c;
    for (c = start; c; c = *lnext(c)) {
        (*steps)++;
        if (bsize(c) >= s) {
            f->b = c;
            f->pred_known = DOUBLY(h);
            f->pred = DOUBLY(h) ? *lprev(c) : NULL;
            f->bin = 0;
            return true;
        }
    }
    return scan_bin(h, 0, s, DMM_FIT_FIRST, f, steps);
}

/* Finds a free block of at least s bytes and unlinks it; NULL if none. */
static blk *take_block(dmm_heap *h, size_t s)
{
    uint64_t steps = 0;
    found f;
    bool ok = false;
    dmm_heap_fit fit = P_FIT(h);
    f.b = NULL;

    if (fit == DMM_FIT_NEXT) {
        ok = scan_next_fit(h, s, &f, &steps);
    } else if (fit == DMM_FIT_GOOD) {
        unsigned n = bin_of_roundup(h, s);
        int j = bm_find(h, n);
        steps++;
        if (j >= 0) {
            if ((unsigned)j == h->nbins - 1u && bin_of(h, s) == h->nbins - 1u) {
                ok = scan_bin(h, (unsigned)j, s, DMM_FIT_FIRST, &f, &steps);
            } else {
                f.b = h->bins[j].head;
                f.pred = NULL;
                f.pred_known = true;
                f.bin = (unsigned)j;
                ok = true;
            }
        }
    } else {
        unsigned n = bin_of(h, s);
        ok = scan_bin(h, n, s, fit, &f, &steps);
        if (!ok) {
            int j = bm_find(h, n + 1u);
            steps++;
            if (j >= 0) {
                if (fit == DMM_FIT_BEST && P_ORDER(h) != DMM_ORDER_SIZE) {
                    ok = scan_bin(h, (unsigned)j, s, fit, &f, &steps);
                } else {
                    f.b = h->bins[j].head;
                    f.pred = NULL;
                    f.pred_known = true;
                    f.bin = (unsigned)j;
                    ok = true;
                }
            }
        }
    }
    st_steps(h, steps);
    if (!ok)
        return NULL;
    if (fit == DMM_FIT_NEXT)
        h->rover = *lnext(f.b);
    if (f.pred_known)
        list_remove(h, f.bin, f.pred, f.b);
    else
        bin_remove(h, f.b);
    if (fit == DMM_FIT_NEXT && h->rover == NULL)
        h->rover = h->bins[0].head;
    return f.b;
}

/* ======================================================================
 * releasing blocks: coalescing, quick lists, region release
 * ====================================================================== */

static void region_unlink(dmm_heap *h, region *r)
{
    region **pp = &h->regions;
    while (*pp != r)
        pp = &(*pp)->next;
    *pp = r->next;
    h->nregions--;
    h->st.footprint -= r->size;
}

static bool can_merge(const dmm_heap *h, size_t a, size_t b)
{
    return h->cfg.coalesce_max == 0 || a + b <= h->cfg.coalesce_max;
}

/* Gives region r back to the OS if it is a grown region that is now one
 * free block b.  Returns true if it did. */
static bool maybe_release(dmm_heap *h, blk *b)
{
    region *r;
    if (!P_GROW(h) || !h->cfg.release_empty || b->prev != 0)
        return false;
    r = (region *)(void *)((char *)b - RHDR);
    if (!(r->flags & REGION_GROWN) || bnext(b) != rsentinel(r))
        return false;
    if (btop(b))
        h->st.top_bytes -= bsize(b);
    region_unlink(h, r);
    h->st.release_count++;
    dmm_port_pages_unmap(r, r->size);
    return true;
}

/* b (not in any list, flags ignored) becomes free memory: under immediate
 * coalescing merged with its free neighbours (and into the top block when
 * it borders it), then inserted in its bin, or given back when it now spans
 * a whole grown region.  `fresh` is where the bytes that still need
 * poisoning start. */
static void release_block(dmm_heap *h, blk *b, char *fresh)
{
    size_t s = bsize(b);
    char *end = (char *)b + s;
    char *fill_from = fresh;
    bool top = false;
    size_t old_top = 0;
    if (P_COALESCE(h) == DMM_COALESCE_IMMEDIATE) {
        blk *nx = bnext(b);
        if (btop(nx)) {
            old_top = bsize(nx);
            s += bsize(nx);
            top = true;
            end = (char *)nx + HDR + LINKS; /* the rest of nx is poisoned already */
        } else if (blisted(nx) && can_merge(h, s, bsize(nx))) {
            bin_remove(h, nx);
            s += bsize(nx);
            end = (char *)nx + HDR + LINKS;
        }
        /* coalesce_max bounds merges of listed blocks only; the top absorbs
         * every free block before it, so none is ever left beside it */
        while (b->prev) {
            blk *pv = bprev(b);
            if (!blisted(pv) || !(top || can_merge(h, s, bsize(pv))))
                break;
            bin_remove(h, pv);
            s += bsize(pv);
            fill_from = (char *)b;
            b = pv;
            if (!top)
                break;
        }
    }
    b->head = s | (top ? F_TOP : 0);
    bnext(b)->prev = s;
    if (top)
        h->st.top_bytes += s - old_top;
    if (P_POISON(h)) {
        char *lo = (char *)bpayload(b) + LINKS;
        if (fill_from < lo)
            fill_from = lo;
        poison_fill(h, fill_from, end > (char *)bnext(b) ? (char *)bnext(b) : end);
    }
    if (maybe_release(h, b) || top)
        return;
    bin_insert(h, b);
}

/* Carves a block of s bytes from the start of some region's top block.
 * The remainder stays the top unless it is below a minimum block, in which
 * case the whole top is taken.  O(r). */
static blk *carve_top(dmm_heap *h, size_t s)
{
    uint64_t steps = 0;
    for (region *r = h->regions; r; r = r->next) {
        blk *sen = rsentinel(r), *t;
        size_t ts;
        steps++;
        if (!sen->prev)
            continue;
        t = bprev(sen);
        ts = bsize(t);
        if (!btop(t) || ts < s)
            continue;
        if (ts - s >= MINB) {
            blk *nt = (blk *)(void *)((char *)t + s);
            nt->prev = s;
            nt->head = (ts - s) | F_TOP;
            sen->prev = ts - s;
            t->head = s;
            h->st.top_bytes -= s;
        } else {
            t->head = ts;
            h->st.top_bytes -= ts;
        }
        note_extent(h);
        st_steps(h, steps);
        return t;
    }
    st_steps(h, steps);
    return NULL;
}

static void quick_push(dmm_heap *h, blk *b)
{
    unsigned q = (unsigned)((bsize(b) - MINB) / GRAN);
    b->head = bsize(b) | F_USED | F_QUICK;
    *lnext(b) = h->quick[q];
    h->quick[q] = b;
    h->quick_len[q]++;
    h->quick_nodes++;
}

static blk *quick_pop(dmm_heap *h, size_t s)
{
    unsigned q;
    blk *b;
    if (s > h->quick_bmax)
        return NULL;
    q = (unsigned)((s - MINB) / GRAN);
    b = h->quick[q];
    if (!b)
        return NULL;
    h->quick[q] = *lnext(b);
    h->quick_len[q]--;
    h->quick_nodes--;
    st_steps(h, 1);
    b->head = bsize(b);
    return b;
}

/* Gives every quick-list block back to the bins.  Returns true if any. */
static bool quick_flush(dmm_heap *h)
{
    bool any = false;
    for (unsigned q = 0; q < h->nquick; q++) {
        blk *b = h->quick[q];
        h->quick[q] = NULL;
        h->quick_len[q] = 0;
        while (b) {
            blk *nx = *lnext(b);
            h->quick_nodes--;
            b->head = bsize(b);
            release_block(h, b, (char *)bnext(b));
            any = true;
            b = nx;
        }
    }
    return any;
}

/* Deferred coalescing: merge every run of adjacent free blocks (a run that
 * reaches the top block joins it). */
static void sweep(dmm_heap *h)
{
    region *r = h->regions;
    h->st.sweep_count++;
    while (r) {
        region *rn = r->next; /* r may be released below */
        blk *b = rfirst(r);
        while (bsize(b) != 0) {
            blk *c = bnext(b);
            if (blisted(b) && !bused(c) && (btop(c) || can_merge(h, bsize(b), bsize(c)))) {
                size_t s = bsize(b), old_top = 0;
                bool top = false;
                bin_remove(h, b);
                while (!bused(c) && (btop(c) || can_merge(h, s, bsize(c)))) {
                    size_t cs = bsize(c);
                    top = btop(c);
                    if (top)
                        old_top = cs;
                    else
                        bin_remove(h, c);
                    poison_fill(h, c, (char *)c + HDR + LINKS);
                    s += cs;
                    c = (blk *)(void *)((char *)c + cs);
                    if (top)
                        break;
                }
                b->head = s | (top ? F_TOP : 0);
                c->prev = s;
                if (top)
                    h->st.top_bytes += s - old_top;
                if (maybe_release(h, b))
                    break;
                if (!top)
                    bin_insert(h, b);
            }
            b = c;
        }
        r = rn;
    }
}

/* ======================================================================
 * regions
 * ====================================================================== */

/* Formats [p, p+size) (GRAN-aligned, size a multiple of GRAN) as a region
 * holding one free block, and links it. */
static void region_format(dmm_heap *h, void *p, size_t size, uintptr_t flags)
{
    region *r = (region *)p;
    blk *b, *sen;
    size_t bs = size - RHDR - HDR;
    dmm_ann_region(p, size);
    r->size = size;
    r->flags = flags;
    r->spare = 0;
    r->next = h->regions;
    h->regions = r;
    h->nregions++;
    b = rfirst(r);
    b->prev = 0;
    b->head = bs | F_TOP;
    sen = rsentinel(r);
    sen->prev = bs;
    sen->head = F_USED;
    poison_fill(h, (char *)bpayload(b) + LINKS, sen);
    h->st.footprint += size;
    h->st.top_bytes += bs;
    if (h->st.footprint > h->st.peak_footprint)
        h->st.peak_footprint = h->st.footprint;
    note_extent(h);
}

static bool overlaps(const dmm_heap *h, uintptr_t lo, uintptr_t hi)
{
    uintptr_t clo = (uintptr_t)h->buf, chi = (uintptr_t)h->buf + h->ctrl_size;
    if (lo < chi && clo < hi)
        return true;
    for (const region *r = h->regions; r; r = r->next) {
        uintptr_t rlo = (uintptr_t)r, rhi = rlo + r->size;
        if (lo < rhi && rlo < hi)
            return true;
    }
    return false;
}

static bool grow(dmm_heap *h, size_t s)
{
    size_t gran = h->cfg.grow_granularity, page = dmm_port_page_size();
    size_t need, chunk;
    void *p;
    if (s > (SIZE_MAX >> 2))
        return false;
    if (P_FIT(h) == DMM_FIT_GOOD && s >= h->lin_max)
        s += (size_t)1 << (dmm_log2_floor(s) - h->sub); /* reach the good-fit bin */
    if (s > SIZE_MAX - RHDR - HDR - gran - page)
        return false;
    need = s + RHDR + HDR;
    chunk = ((need + gran - 1u) / gran) * gran;
    chunk = dmm_align_up(chunk, page);
    p = dmm_port_pages_map(chunk);
    if (!p)
        return false;
    h->st.grow_count++;
    region_format(h, p, chunk, REGION_GROWN);
    return true;
}

/* ======================================================================
 * allocation
 * ====================================================================== */

/* Hands b (unlinked, head = size) out for a request of req bytes needing a
 * block of s bytes: splits the tail off, marks it used, writes tail words. */
static void *finish_alloc(dmm_heap *h, blk *b, size_t s, size_t req)
{
    size_t bs = bsize(b);
    void *p = bpayload(b);
    if (P_POISON(h)) {
        size_t n = req < s - HDR - h->tail_bytes ? req : s - HDR - h->tail_bytes;
        const unsigned char *q = (const unsigned char *)p + LINKS;
        const unsigned char *e = q + (n > LINKS ? dmm_align_up(n - LINKS, WORD) : 0);
        if ((q = poison_mismatch(q, e)) != NULL)
            report(h, DMM_ERR_POISON, DMM_OP_MALLOC, q, "freed memory was written after free");
    }
    if (P_SPLIT(h) && bs - s >= h->split_min) {
        blk *rem = (blk *)(void *)((char *)b + s);
        rem->prev = s;
        rem->head = bs - s;
        bnext(rem)->prev = bs - s;
        bs = s;
        b->head = bs | F_USED; /* before the remainder is released: no merge back */
        release_block(h, rem, (char *)bpayload(rem) + LINKS);
    }
    b->head = bs | F_USED;
    if (P_STATS(h) == DMM_STATS_FULL)
        *req_slot(h, b) = req;
    if (P_HARDEN(h) >= DMM_HARDEN_CANARY)
        *canary_slot(b) = canary_of(h, b);
    st_add_live(h, bs, req);
    st_request(h, req);
    dmm_ann_alloc(p, req, bnext(b));
    return p;
}

/* Finds a block of s bytes, trying quick lists, the bins, a quick-list
 * flush plus deferred sweep, and growth, in that order. */
static blk *obtain(dmm_heap *h, size_t s, bool quick_ok)
{
    blk *b = NULL;
    if (P_QUICK(h) && quick_ok)
        b = quick_pop(h, s);
    if (!b)
        b = take_block(h, s);
    if (!b)
        b = carve_top(h, s);
    if (!b) {
        bool retry = P_QUICK(h) && h->quick_nodes && quick_flush(h);
        if (P_COALESCE(h) == DMM_COALESCE_DEFERRED) {
            sweep(h);
            retry = true;
        }
        if (retry && !(b = take_block(h, s)))
            b = carve_top(h, s);
    }
    if (!b && P_GROW(h) && grow(h, s) && !(b = take_block(h, s)))
        b = carve_top(h, s);
    return b;
}

static void *alloc_locked(dmm_heap *h, size_t req)
{
    size_t s = req2size(h, req);
    blk *b;
    if (!s || !(b = obtain(h, s, true))) {
        st_failed(h);
        return NULL;
    }
    if (P_STATS(h) != DMM_STATS_OFF)
        h->st.malloc_count++;
    return finish_alloc(h, b, s, req);
}

static void *aligned_locked(dmm_heap *h, size_t align, size_t req)
{
    size_t s, want;
    blk *b;
    char *p;
    if (!dmm_is_pow2(align) || align > (SIZE_MAX >> 2)) {
        st_failed(h);
        return NULL;
    }
    if (align <= GRAN) {
        void *p0 = alloc_locked(h, req);
        if (p0 && P_STATS(h) != DMM_STATS_OFF)
            h->st.aligned_count++;
        return p0;
    }
    s = req2size(h, req);
    if (!s || s > SIZE_MAX - align - MINB) {
        st_failed(h);
        return NULL;
    }
    want = s + align + MINB;
    if (!(b = obtain(h, want, false))) {
        st_failed(h);
        return NULL;
    }
    p = (char *)bpayload(b);
    if ((uintptr_t)p & (align - 1u)) {
        char *q = (char *)dmm_align_up_ptr((uintptr_t)p + MINB, align);
        blk *nb = bfrom(q);
        size_t gap = (size_t)((char *)nb - (char *)b);
        size_t bs = bsize(b);
        nb->prev = gap;
        nb->head = (bs - gap) | F_USED; /* keeps the gap from merging forward */
        bnext(nb)->prev = bs - gap;
        b->head = gap;
        release_block(h, b, (char *)bpayload(b) + LINKS);
        nb->head = bs - gap;
        b = nb;
    }
    if (P_STATS(h) != DMM_STATS_OFF) {
        h->st.malloc_count++;
        h->st.aligned_count++;
    }
    return finish_alloc(h, b, s, req);
}

/* ======================================================================
 * pointer validation (hardening)
 * ====================================================================== */

static blk *validate(dmm_heap *h, const void *ptr, dmm_op op)
{
    const char *p = (const char *)ptr;
    region *r;
    blk *b, *nx, *sen, *first;
    size_t s;
    if (P_HARDEN(h) == DMM_HARDEN_OFF)
        return bfrom(ptr);
    for (r = h->regions; r; r = r->next)
        if (p >= (const char *)r && p < (const char *)r + r->size)
            break;
    if (!r) {
        report(h, DMM_ERR_FOREIGN_POINTER, op, ptr, "pointer is not inside any region of this heap");
        return NULL;
    }
    if ((uintptr_t)p & (GRAN - 1u)) {
        report(h, DMM_ERR_MISALIGNED_POINTER, op, ptr, "pointer is not aligned like a block payload");
        return NULL;
    }
    first = rfirst(r);
    sen = rsentinel(r);
    b = bfrom(ptr);
    if (b < first || b >= sen) {
        report(h, DMM_ERR_INVALID_POINTER, op, ptr, "pointer is not the start of a block");
        return NULL;
    }
    s = bsize(b);
    if (s < MINB || (s & F_MASK) || s > (size_t)((char *)sen - (char *)b) ||
        (b->prev == 0 && b != first) || (b->prev != 0 && (b->prev > (size_t)((char *)b - (char *)first) ||
                                                          bsize(bprev(b)) != b->prev))) {
        report(h, DMM_ERR_INVALID_POINTER, op, ptr, "pointer is not the start of a block (interior pointer or corrupted header)");
        return NULL;
    }
    if (!bused(b) || (b->head & F_QUICK)) {
        report(h, DMM_ERR_DOUBLE_FREE, op, ptr, "block is already free");
        return NULL;
    }
    nx = bnext(b);
    if (P_HARDEN(h) >= DMM_HARDEN_CANARY && *canary_slot(b) != canary_of(h, b)) {
        report(h, DMM_ERR_CANARY, op, ptr, "canary behind the block was overwritten (buffer overflow)");
        return NULL;
    }
    if (nx->prev != s) {
        report(h, DMM_ERR_HEADER, op, ptr, "boundary tag of the next block does not match (overflow?)");
        return NULL;
    }
    if (P_HARDEN(h) >= DMM_HARDEN_PARANOID) {
        blk *c = first;
        while (c < b && bsize(c))
            c = bnext(c);
        if (c != b) {
            report(h, DMM_ERR_INVALID_POINTER, op, ptr, "pointer is not the start of any block of its region");
            return NULL;
        }
    }
    return b;
}

static size_t requested_of(const dmm_heap *h, const blk *b)
{
    return P_STATS(h) == DMM_STATS_FULL ? *req_slot(h, b) : 0;
}

/* Frees validated used block b. */
static void free_block(dmm_heap *h, blk *b)
{
    size_t s = bsize(b);
    st_sub_live(h, s, requested_of(h, b));
    if (P_STATS(h) != DMM_STATS_OFF)
        h->st.free_count++;
    if (P_POISON(h))
        poison_fill(h, (char *)bpayload(b) + LINKS, bnext(b));
    dmm_ann_free(bpayload(b), bnext(b));
    if (P_QUICK(h) && s <= h->quick_bmax &&
        (h->cfg.quick_limit == 0 || h->quick_len[(s - MINB) / GRAN] < h->cfg.quick_limit)) {
        quick_push(h, b);
        return;
    }
    b->head = s;
    release_block(h, b, (char *)bnext(b));
}

/* Shrinks used block b to s bytes in place if the tail is worth splitting. */
static void shrink_in_place(dmm_heap *h, blk *b, size_t s)
{
    size_t bs = bsize(b);
    if (P_SPLIT(h) && bs - s >= h->split_min) {
        blk *rem = (blk *)(void *)((char *)b + s);
        rem->prev = s;
        rem->head = bs - s;
        bnext(rem)->prev = bs - s;
        b->head = s | F_USED;
        release_block(h, rem, (char *)bpayload(rem) + LINKS);
    }
}

static void *realloc_locked(dmm_heap *h, void *ptr, size_t align, size_t req)
{
    blk *b;
    size_t s, bs, old_bs, old_req, old_usable;
    void *q;
    if (!ptr)
        return align > GRAN ? aligned_locked(h, align, req) : alloc_locked(h, req);
    if (align > GRAN && !dmm_is_pow2(align)) {
        st_failed(h);
        return NULL;
    }
    if (!(b = validate(h, ptr, DMM_OP_REALLOC)))
        return NULL;
    if (P_STATS(h) != DMM_STATS_OFF)
        h->st.realloc_count++;
    if (req == 0) {
        free_block(h, b);
        return NULL;
    }
    s = req2size(h, req);
    if (!s) {
        st_failed(h);
        return NULL;
    }
    bs = old_bs = bsize(b);
    old_req = requested_of(h, b);
    old_usable = usable_of(h, b);
    if (align <= GRAN || ((uintptr_t)ptr & (align - 1u)) == 0) {
        bool fits = s <= bs;
        blk *nx = bnext(b);
        if (!fits && btop(nx) && bs + bsize(nx) >= s) {
            /* grow into the top block */
            size_t total = bs + bsize(nx);
            h->st.top_bytes -= bsize(nx);
            if (total - s >= MINB) {
                blk *nt = (blk *)(void *)((char *)b + s);
                nt->prev = s;
                nt->head = (total - s) | F_TOP;
                bnext(nt)->prev = total - s;
                bs = s;
                h->st.top_bytes += total - s;
            } else {
                bs = total;
            }
            note_extent(h);
            b->head = bs | F_USED;
            bnext(b)->prev = bs;
            fits = true;
        }
        if (!fits && P_COALESCE(h) != DMM_COALESCE_OFF) {
            if (blisted(nx) && bs + bsize(nx) >= s && can_merge(h, bs, bsize(nx))) {
                bin_remove(h, nx);
                bs += bsize(nx);
                b->head = bs | F_USED;
                bnext(b)->prev = bs;
                fits = true;
            }
        }
        if (fits) {
            st_sub_live(h, old_bs, old_req);
            shrink_in_place(h, b, s);
            if (P_STATS(h) == DMM_STATS_FULL)
                *req_slot(h, b) = req;
            if (P_HARDEN(h) >= DMM_HARDEN_CANARY)
                *canary_slot(b) = canary_of(h, b);
            st_add_live(h, bsize(b), req);
            st_request(h, req);
            dmm_ann_resize(ptr, req, old_usable, bnext(b));
            return ptr;
        }
    }
    q = align > GRAN ? aligned_locked(h, align, req) : alloc_locked(h, req);
    if (!q)
        return NULL;
    if (P_STATS(h) != DMM_STATS_OFF)
        h->st.malloc_count--; /* counted as a realloc, not a malloc */
    dmm_port_memcpy(q, ptr, old_usable < req ? old_usable : req);
    free_block(h, b);
    if (P_STATS(h) != DMM_STATS_OFF)
        h->st.free_count--;
    return q;
}

/* ======================================================================
 * public entry points
 * ====================================================================== */

dmm_status dmm_heap_init(dmm_heap **out, void *buf, size_t size, const dmm_heap_config *cfg_in)
{
    dmm_heap_config cfg;
    uintptr_t start, end;
    unsigned range;
    size_t ctrl, rest;
    dmm_heap *h;
    dmm_status st;
    if (out)
        *out = NULL;
    if (!out || !buf)
        return DMM_E_NULL;
#if DMM_HEAP_FROZEN
    {
        /* a frozen build defaults to its own preset-derived config */
        cfg = dmm_heap_default_config();
        cfg.org = (dmm_heap_org)DMM_FROZEN_ORG;
        cfg.links = (dmm_heap_links)DMM_FROZEN_LINKS;
        cfg.order = (dmm_heap_order)DMM_FROZEN_ORDER;
        cfg.fit = (dmm_heap_fit)DMM_FROZEN_FIT;
        cfg.split = (bool)DMM_FROZEN_SPLIT;
        cfg.coalesce = (dmm_heap_coalesce)DMM_FROZEN_COALESCE;
        cfg.quick_max = DMM_FROZEN_QUICK_MAX;
        cfg.lock = (dmm_heap_lock)DMM_FROZEN_LOCK;
        cfg.stats = (dmm_heap_stats_level)DMM_FROZEN_STATS;
        cfg.harden = (dmm_heap_harden)DMM_FROZEN_HARDEN;
        cfg.poison = (bool)DMM_FROZEN_POISON;
        cfg.grow_granularity = DMM_FROZEN_GROW_GRANULARITY;
        cfg.sl_bits = DMM_FROZEN_SL_BITS;
        cfg.exact_max = DMM_FROZEN_EXACT_MAX;
    }
#else
    cfg = dmm_heap_default_config();
#endif
    if (cfg_in)
        cfg = *cfg_in;
    if ((st = dmm__config_verdict(&cfg)) != DMM_OK)
        return st;
    start = dmm_align_up_ptr((uintptr_t)buf, GRAN);
    if ((uintptr_t)buf + size < (uintptr_t)buf) /* wraps the address space */
        return DMM_E_RANGE;
    end = dmm_align_down((uintptr_t)buf + size, GRAN);
    if (end <= start)
        return DMM_E_TOO_SMALL;
    /* The bin range follows the buffer size; when the larger control block
     * of a larger range would not leave room for a block, fall back to a
     * smaller range, so that a larger buffer is never refused where a
     * smaller one is accepted. */
    range = dmm__heap_range_for(&cfg, (size_t)(end - start));
    for (;;) {
        ctrl = dmm__heap_ctrl_size(&cfg, range, NULL);
        if ((size_t)(end - start) >= ctrl && (size_t)(end - start) - ctrl >= RHDR + dmm__req2size(&cfg, 1) + HDR)
            break;
        if (cfg.max_block_log2 || range <= dmm__heap_range_for(&cfg, 1))
            return DMM_E_TOO_SMALL;
        range--;
    }
    rest = (size_t)(end - start) - ctrl;
    if (cfg.lock == DMM_LOCK_MUTEX) {
        dmm_port_mutex m;
        if (!dmm_port_mutex_init(&m))
            return DMM_E_UNSUPPORTED;
        dmm_port_mutex_destroy(&m);
    }

    h = (dmm_heap *)(void *)start;
    dmm_port_memset(h, 0, ctrl);
    h->magic = HEAP_MAGIC;
    dmm__heap_derive(h, &cfg, range);
    h->buf = buf;
    h->buf_size = size;
    h->ctrl_size = ctrl + (size_t)(start - (uintptr_t)buf);
    h->cookie = cfg.cookie ? cfg.cookie : (((uintptr_t)h * (uintptr_t)0x9E3779B97F4A7C15ull) ^ (uintptr_t)0xA5A5F00Dul);
    atomic_flag_clear(&h->spin);
    if (cfg.lock == DMM_LOCK_MUTEX)
        dmm_port_mutex_init(&h->mutex);
    h->st.footprint = ctrl;
    DMM_ANN_ENTER();
    region_format(h, (char *)h + ctrl, rest, 0);
    DMM_ANN_LEAVE();
    *out = h;
    return DMM_OK;
}

dmm_status dmm_heap_add_region(dmm_heap *h, void *buf, size_t size)
{
    uintptr_t start, end;
    dmm_status st = DMM_OK;
    if (!h || !buf)
        return DMM_E_NULL;
    if ((uintptr_t)buf + size < (uintptr_t)buf)
        return DMM_E_RANGE;
    start = dmm_align_up_ptr((uintptr_t)buf, GRAN);
    end = dmm_align_down((uintptr_t)buf + size, GRAN);
    if (end <= start || (size_t)(end - start) < RHDR + dmm__req2size(&h->cfg, 1) + HDR)
        return DMM_E_TOO_SMALL;
    enter(h);
    if (overlaps(h, (uintptr_t)buf, (uintptr_t)buf + size))
        st = DMM_E_OVERLAP;
    else
        region_format(h, (void *)start, (size_t)(end - start), 0);
    leave(h);
    return st;
}

void dmm_heap_reset(dmm_heap *h)
{
    region *r, *keep = NULL;
    if (!h)
        return;
    enter(h);
    r = h->regions;
    while (r) {
        region *n = r->next;
        if (r->flags & REGION_GROWN) {
            dmm_port_pages_unmap(r, r->size);
        } else {
            r->next = keep;
            keep = r;
        }
        r = n;
    }
    for (unsigned i = 0; i < h->nbins; i++)
        h->bins[i].head = h->bins[i].tail = NULL;
    for (unsigned i = 0; i < h->nwords; i++)
        h->bitmap[i] = 0;
    for (unsigned i = 0; i < h->nquick; i++) {
        h->quick[i] = NULL;
        h->quick_len[i] = 0;
    }
    h->summary = 0;
    h->rover = NULL;
    h->free_nodes = h->quick_nodes = 0;
    h->regions = NULL;
    h->nregions = 0;
    dmm_port_memset(&h->st, 0, sizeof h->st);
    h->st.footprint = ctrl_bytes(h);
    while (keep) {
        region *n = keep->next;
        region_format(h, keep, keep->size, 0);
        keep = n;
    }
    leave(h);
}

void dmm_heap_destroy(dmm_heap *h)
{
    region *r;
    if (!h)
        return;
    DMM_ANN_ENTER();
    dmm__heap_lock(h);
    r = h->regions;
    while (r) {
        region *n = r->next;
        if (r->flags & REGION_GROWN)
            dmm_port_pages_unmap(r, r->size);
        r = n;
    }
    h->regions = NULL;
    h->magic = 0;
    dmm__heap_unlock(h);
    DMM_ANN_LEAVE();
    if (P_LOCK(h) == DMM_LOCK_MUTEX)
        dmm_port_mutex_destroy(&h->mutex);
}

void *dmm_heap_malloc(dmm_heap *h, size_t size)
{
    void *p;
    enter(h);
    p = alloc_locked(h, size);
    leave(h);
    return p;
}

void *dmm_heap_calloc(dmm_heap *h, size_t n, size_t size)
{
    void *p = NULL;
    enter(h);
    if (size && n > SIZE_MAX / size) {
        st_failed(h);
    } else if ((p = alloc_locked(h, n * size)) != NULL) {
        if (P_STATS(h) != DMM_STATS_OFF)
            h->st.calloc_count++;
        dmm_port_memset(p, 0, n * size);
    }
    leave(h);
    return p;
}

void *dmm_heap_realloc(dmm_heap *h, void *ptr, size_t size)
{
    void *p;
    enter(h);
    p = realloc_locked(h, ptr, 0, size);
    leave(h);
    return p;
}

void *dmm_heap_aligned_alloc(dmm_heap *h, size_t align, size_t size)
{
    void *p;
    enter(h);
    p = aligned_locked(h, align, size);
    leave(h);
    return p;
}

void *dmm_heap_realloc_aligned(dmm_heap *h, void *ptr, size_t align, size_t size)
{
    void *p = NULL;
    enter(h);
    if (!dmm_is_pow2(align) || align > (SIZE_MAX >> 2))
        st_failed(h);
    else
        p = realloc_locked(h, ptr, align, size);
    leave(h);
    return p;
}

void dmm_heap_free(dmm_heap *h, void *ptr)
{
    blk *b;
    if (!ptr)
        return;
    enter(h);
    if ((b = validate(h, ptr, DMM_OP_FREE)) != NULL)
        free_block(h, b);
    leave(h);
}

size_t dmm_heap_usable_size(dmm_heap *h, const void *ptr)
{
    blk *b;
    size_t n = 0;
    if (!ptr)
        return 0;
    enter(h);
    if ((b = validate(h, ptr, DMM_OP_USABLE_SIZE)) != NULL)
        n = usable_of(h, b);
    leave(h);
    return n;
}

dmm_heap_config dmm_heap_get_config(const dmm_heap *h) { return h->cfg; }

/* ---- the allocator interface ---- */

static void *a_malloc(void *c, size_t n) { return dmm_heap_malloc((dmm_heap *)c, n); }
static void a_free(void *c, void *p) { dmm_heap_free((dmm_heap *)c, p); }
static void *a_realloc(void *c, void *p, size_t n) { return dmm_heap_realloc((dmm_heap *)c, p, n); }
static void *a_calloc(void *c, size_t n, size_t s) { return dmm_heap_calloc((dmm_heap *)c, n, s); }
static void *a_aligned(void *c, size_t a, size_t n) { return dmm_heap_aligned_alloc((dmm_heap *)c, a, n); }
static size_t a_usable(void *c, const void *p) { return dmm_heap_usable_size((dmm_heap *)c, p); }

void dmm_heap_as_allocator(dmm_heap *h, dmm_allocator *a)
{
    a->name = "dmm_heap";
    a->ctx = h;
    a->malloc = a_malloc;
    a->free = a_free;
    a->realloc = a_realloc;
    a->calloc = a_calloc;
    a->aligned_alloc = a_aligned;
    a->usable_size = a_usable;
}
