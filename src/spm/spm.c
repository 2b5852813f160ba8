/*
 * src/spm/spm.c - one execution core's scratchpad heap (include/dmm/spm.h,
 * docs/spm.md): objects live in global memory in size-class segments
 * whose table pages describe their units; units are copied into the local
 * dmm heap on demand (p2s) and evicted least-recently-used.
 *
 * Which copy is authoritative: a table page is current in its frame while
 * resident and in global memory otherwise; a resident unit's local header
 * (resident list, clock bit, pins, dirty) is authoritative for residency, the entry's
 * RESIDENT/DIRTY flags and local offset mirror it.  When an entry has to
 * change while its page is not resident (a unit evicted or flushed) the
 * 16-byte entry line is read, patched and written back with one get and one
 * put (a legal Cell transfer).
 */
#include "spm_internal.h"

#include "../core/bits.h"
#include "../core/report.h"
#include "../core/text.h"
#include "../port/annotate.h"
#include "../port/port.h"

static size_t r16(size_t n) { return (n + 15u) & ~(size_t)15u; }

/* ---- DMA ----------------------------------------------------------------- */

/* The port's clock is read around each port call (not around each API
 * call): only port calls advance a simulated clock, and a p2s that hits
 * makes none.  The cycles pile up in s->cyc until t_end charges them to the
 * API function that made the calls. */
static uint64_t clock_now(dmm_spm *s) { return s->port.clock ? s->port.clock(s->port.ctx) : 0; }

static void dma_get(dmm_spm *s, void *local, dmm_gaddr g, size_t n)
{
    uint64_t c0 = clock_now(s);
    size_t max = s->port.max_transfer & ~(s->port.align - 1);
    for (size_t o = 0; o < n;) {
        size_t c = n - o < max ? n - o : max;
        s->port.get(s->port.ctx, (uint8_t *)local + o, g + o, c, 0);
        o += c;
    }
    s->port.wait(s->port.ctx, 1u);
    s->cyc += clock_now(s) - c0;
}

static void dma_put(dmm_spm *s, dmm_gaddr g, const void *local, size_t n)
{
    uint64_t c0 = clock_now(s);
    size_t max = s->port.max_transfer & ~(s->port.align - 1);
    for (size_t o = 0; o < n;) {
        size_t c = n - o < max ? n - o : max;
        s->port.put(s->port.ctx, g + o, (const uint8_t *)local + o, c, 0);
        o += c;
    }
    s->port.wait(s->port.ctx, 1u);
    s->cyc += clock_now(s) - c0;
}

static void charge(dmm_spm *s, unsigned words)
{
    s->st.mailbox_words += words;
    if (words && s->port.mailbox) {
        uint64_t c0 = clock_now(s);
        s->port.mailbox(s->port.ctx, words);
        s->cyc += clock_now(s) - c0;
    }
}

/* ---- errors --------------------------------------------------------------- */

static void report(dmm_spm *s, dmm_op op, dmm_error_kind kind, dmm_gaddr a, const char *msg)
{
    s->st.errors++;
    s->last = DMM_E_RANGE;
    dmm__report_error(s->cfg.error_fn, s->cfg.error_ctx, s->cfg.on_error, kind, op, (const void *)(uintptr_t)a, msg);
}

/* ---- table pages ----------------------------------------------------------- */

static int frame_of(dmm_spm *s, dmm_gaddr seg)
{
    if (s->frames[s->last_frame].seg == seg)
        return (int)s->last_frame;
    for (unsigned i = 0; i < s->cfg.table_frames; i++)
        if (s->frames[i].seg == seg)
            return (int)i;
    return -1;
}

/* Frame f is about to hold another page (or none): the unit hint, whose
 * entry pointer points into the frame it names, goes with the old page, so
 * that the hint's users need not compare the frame's segment on every use
 * (dmm_spm_check verifies that a set hint's frame holds its page). */
static void frame_repurpose(dmm_spm *s, const spm_frame *f)
{
    if (s->uh_u && &s->frames[s->uh_f] == f)
        s->uh_u = NULL;
}

static void frame_writeback(dmm_spm *s, spm_frame *f)
{
    if (f->seg && f->dirty) {
        dma_put(s, f->seg, f->mem, s->page);
        s->st.page_writebacks++;
    }
    f->dirty = false;
}

/* seg's frame hint (fhint): its segment number xor that number shifted by
 * 2, modulo SPM_FHINT.  The manager hands a core segments two segment sizes
 * apart (each block of its heap has a header before the aligned segment), so
 * the segment number alone put the first four segments on two hints, which
 * they overwrote in turn (the rewritten dfs at the Table II size: ~80 k
 * instructions of frame searches in its malloc, free and miss path). */
static inline unsigned fhint_index(const dmm_spm *s, dmm_gaddr seg)
{
    size_t n = (size_t)(seg >> s->seg_shift); /* its low bits are all that count */
    return (unsigned)((n ^ (n >> 2)) & (SPM_FHINT - 1u));
}

/* ---- the translation cache's place (xc) -------------------------------------
 * Its home is the 8-64 entries carved after the table frames at create (one
 * per 256 bytes of what is left for H: more would take H's bytes).  A table
 * frame that holds no page is local memory nobody uses (Table II's
 * configuration: 16 frames of 4 KiB for the 1-3 segments a program has), so
 * while one is idle the cache lives there instead, P / 8 entries (512 for a
 * 4 KiB page), and the resident objects that missed the hit path's 8 entries
 * find their translation in it instead of decoding their table page
 * (resident_in_frame).  page_frame takes another idle frame first, and the
 * cache's frame only when none is left (no page written back for it); the
 * cache then goes home, empty (a cache: every entry may be dropped).
 * segment_release's freed frame takes it again. */
static spm_xc *xc_home(dmm_spm *s)
{
    return s->xc_home_bits ? (spm_xc *)(void *)(s->table + s->cfg.table_bytes) : &s->xc_one;
}

static unsigned xc_frame_bits(const dmm_spm *s)
{
    unsigned b = 0;
    while (((size_t)2 << b) * sizeof(spm_xc) <= s->page && b < 16u)
        b++;
    return b;
}

/* Empties the cache and puts it at `to` with 2^bits entries (frame: the
 * frame's index + 1, or 0 for home). */
static void xc_move(dmm_spm *s, spm_xc *to, unsigned bits, unsigned frame)
{
    dmm_port_memset(to, 0, sizeof(spm_xc) << bits);
    s->xc = to;
    s->xc_bits = bits;
    s->xc_frame = (uint8_t)frame;
}

/* Idle frame v (no page) takes the cache, where it holds more than home. */
static void xc_to_frame(dmm_spm *s, unsigned v)
{
    unsigned b = xc_frame_bits(s);
    if (!s->xc_frame && b > s->xc_home_bits && s->frames[v].seg == 0)
        xc_move(s, (spm_xc *)(void *)s->frames[v].mem, b, v + 1u);
}

/* A frame for seg's page: the resident one, or an idle one, or the least
 * recently used one after writing it back; fetch = false leaves the new
 * frame's bytes as they are (a new segment's page is written by the
 * caller).  The translation cache's frame is taken last (see xc_home). */
static spm_frame *page_frame(dmm_spm *s, dmm_gaddr seg, bool fetch)
{
    int i = frame_of(s, seg);
    if (i < 0) {
        unsigned v = 0;
        bool any = false, idle = false;
        for (unsigned k = 0; k < s->cfg.table_frames; k++) {
            if (k + 1u == s->xc_frame)
                continue;
            if (!s->frames[k].seg) {
                v = k;
                idle = true;
                break;
            }
            if (!any || s->frames[k].stamp < s->frames[v].stamp)
                v = k;
            any = true;
        }
        if (!idle && s->xc_frame) {
            v = s->xc_frame - 1u;
            xc_move(s, xc_home(s), s->xc_home_bits, 0);
        }
        spm_frame *f = &s->frames[v];
        frame_writeback(s, f);
        frame_repurpose(s, f);
        f->seg = seg;
        if (fetch) {
            dma_get(s, f->mem, seg, s->page);
            s->st.page_fetches++;
        }
        i = (int)v;
    }
    s->last_frame = (unsigned)i;
    s->fhint[fhint_index(s, seg)] = (uint8_t)i; /* frame_hint */
    s->frames[i].stamp = (uint32_t)++s->tick;
    return &s->frames[i];
}

static inline unsigned frame_hint(const dmm_spm *s, dmm_gaddr seg)
{
    return s->fhint[fhint_index(s, seg)];
}

/* Whether the hinted frame holds the page of a's segment (the cheap first
 * test of resident_in_frame, inline where it is called). */
static inline bool page_hinted(const dmm_spm *s, dmm_gaddr a)
{
    dmm_gaddr seg = a & ~(dmm_gaddr)(s->cfg.segment - 1);
    return seg && s->frames[frame_hint(s, seg)].seg == seg; /* a free frame has seg 0 */
}

static spm_seghdr *hdr_of(spm_frame *f) { return (spm_seghdr *)(void *)f->mem; }
static spm_entry *entry_of(spm_frame *f, unsigned i)
{
    return (spm_entry *)(void *)(f->mem + SPM_HDR_BYTES + (size_t)i * DMM_SPM_ENTRY_BYTES);
}

/* Opens the 16-byte line at global address ga for a patch: in its resident
 * frame, or fetched into the scratch line.  line_close writes it back. */
static uint8_t *line_open(dmm_spm *s, dmm_gaddr ga)
{
    dmm_gaddr seg = ga & ~(dmm_gaddr)(s->cfg.segment - 1);
    int i = frame_of(s, seg);
    if (i >= 0)
        return s->frames[i].mem + (ga - seg);
    dma_get(s, s->scratch, ga, 16);
    return s->scratch;
}

static void line_close(dmm_spm *s, dmm_gaddr ga, uint8_t *p)
{
    if (p == s->scratch) {
        dma_put(s, ga, s->scratch, 16);
        return;
    }
    dmm_gaddr seg = ga & ~(dmm_gaddr)(s->cfg.segment - 1);
    s->frames[frame_of(s, seg)].dirty = true;
}

static size_t stride_of(const spm_seghdr *h) { return (size_t)h->slot_size * h->slots; }

/* The offset of seg's first unit: its table page, then its colour, 0-7
 * 32-byte blocks from the segment's number (s->colours): the first objects
 * of different segments, which the pass asks for by their start, then use
 * different entries of the hit path's cache, which is indexed by the
 * 32-byte block of the address (without colours, they all shared one).  A
 * colour costs a small segment at most one unit. */
static size_t data_off(const dmm_spm *s, dmm_gaddr seg)
{
    return s->page + ((size_t)((seg >> s->seg_shift) & s->colours) << 5);
}

/* The most a colour shifts a segment's units. */
static size_t colour_max(const dmm_spm *s) { return (size_t)s->colours << 5; }

/* ---- resident units --------------------------------------------------------- */

static uint8_t *udata(spm_unit *u) { return (uint8_t *)u + SPM_UHDR; }

static void lru_unlink(dmm_spm *s, spm_unit *u)
{
    if (u->prev)
        u->prev->next = u->next;
    else
        s->lru_head = u->next;
    if (u->next)
        u->next->prev = u->prev;
    else
        s->lru_tail = u->prev;
    u->prev = u->next = NULL;
    s->resident--;
}

static void lru_front(dmm_spm *s, spm_unit *u)
{
    u->prev = NULL;
    u->next = s->lru_head;
    if (s->lru_head)
        s->lru_head->prev = u;
    else
        s->lru_tail = u;
    s->lru_head = u;
    s->resident++;
}

/* ---- translations -------------------------------------------------------- */

static unsigned xc_index(const dmm_spm *s, dmm_gaddr a)
{
    uint32_t h = (uint32_t)(a >> 4) * 0x9E3779B1u; /* Fibonacci hashing */
    /* h's top xc_bits bits, without a branch for xc_bits == 0 (then 0) */
    return (unsigned)(((uint64_t)h << s->xc_bits) >> 32);
}

/* Forgets every translation into unit u (it is leaving local memory). */
static void xc_drop_unit(dmm_spm *s, spm_unit *u)
{
    if (s->uh_u == u)
        s->uh_u = NULL;
    for (unsigned i = 0; i < SPM_RECENT; i++)
        if (s->recent[i].u == u)
            s->recent[i].n = 0;
    uint16_t u4 = (uint16_t)(((uint8_t *)u - s->local) >> 4);
    unsigned entries = 1u << s->xc_bits;
    if (u->slots >= entries) {
        /* as many slots as entries: a scan of the entries is cheaper than
         * hashing each slot's address (an entry names u only where xc_put
         * put it, so clearing every entry that names u is the same) */
        for (unsigned i = 0; i < entries; i++)
            if (s->xc[i].u4 == u4)
                s->xc[i].n4 = 0;
        return;
    }
    /* the hashes (xc_index) of the slots xc_put marked in u->xcm: slot i's
     * is the unit's plus i times the slot size's */
    uint32_t h = (uint32_t)(u->gaddr >> 4) * 0x9E3779B1u;
    uint32_t step = (uint32_t)((u->bytes / u->slots) >> 4) * 0x9E3779B1u;
    unsigned shift = 32u - s->xc_bits;
    for (unsigned m = u->xcm; m; m &= m - 1u) {
        spm_xc *x = &s->xc[(uint32_t)(h + (uint32_t)dmm_ctz(m) * step) >> shift];
        if (x->u4 == u4)
            x->n4 = 0;
    }
}

static spm_unit *xc_unit(const dmm_spm *s, const spm_xc *x)
{
    return (spm_unit *)(void *)(s->local + (size_t)x->u4 * 16u);
}

/* Forgets the translation of the object that starts at a (it is freed). */
static void xc_drop_object(dmm_spm *s, dmm_gaddr a)
{
    for (unsigned i = 0; i < SPM_RECENT; i++)
        if (s->recent[i].g == a) /* an empty one (n 0) stays empty */
            s->recent[i].n = 0;
    spm_xc *x = &s->xc[xc_index(s, a)];
    if (x->g4 == (uint32_t)(a >> 4))
        x->n4 = 0;
}

/* ---- the hit path's translation cache (spm_tc) ---------------------------- */

/* Folds what entry e counted into its unit (written: dirty; used: clock
 * bit) and into the stats, and zeroes the counts. */
static void tc_fold(dmm_spm *s, spm_tc *e)
{
    if (e->w)
        e->u->dirty = 1;
    if (e->w | e->r) {
        e->u->ref = 1;
        s->st.p2s_hits += e->w + e->r;
        s->st.calls[DMM_SPM_FN_P2S] += e->w + e->r;
    }
    e->w = e->r = 0;
}

static void tc_retire(dmm_spm *s, spm_tc *e)
{
    if (e->n) {
        tc_fold(s, e);
        e->n = 0;
    }
}

/* Folds every entry (before a victim search or a flush reads the units'
 * clock bits and dirty flags). */
static void tc_sweep(dmm_spm *s)
{
    for (unsigned i = 0; i < SPM_TC; i++)
        if (s->tc[i].n)
            tc_fold(s, &s->tc[i]);
}

static void tc_clear(dmm_spm *s)
{
    for (unsigned i = 0; i < SPM_TC; i++)
        tc_retire(s, &s->tc[i]);
}

static void tc_drop_unit(dmm_spm *s, spm_unit *u)
{
    for (unsigned i = 0; i < SPM_TC; i++)
        if (s->tc[i].n && s->tc[i].u == u)
            tc_retire(s, &s->tc[i]);
}

static inline spm_tc *tc_slot(dmm_spm *s, dmm_gaddr a);

/* Forgets the hit path's entries of the object [a, a + n) (it is freed).
 * An entry naming it sits at the slot of an address inside it (every
 * tc_put's key lies in the object it names; dmm_spm_check verifies it), so
 * only the slots of the object's 32-byte blocks are looked at: one or two
 * for the small objects the programs free, where the sweep of all 8 entries
 * was ~25 of do_free's ~185 own instructions (dijkstra, Table II size). */
static DMM_ALWAYS_INLINE void tc_drop_object(dmm_spm *s, dmm_gaddr a, size_t n)
{
    if (((a + n - 1u) >> 5) - (a >> 5) <= 1u) { /* one or two blocks */
        spm_tc *e = tc_slot(s, a), *l = tc_slot(s, a + n - 1u);
        if (e->g == a) /* tc_retire leaves an empty entry (n 0) alone */
            tc_retire(s, e);
        if (l != e && l->g == a)
            tc_retire(s, l);
        return;
    }
    for (unsigned i = 0; i < SPM_TC; i++) /* a larger object: the sweep is cheaper */
        if (s->tc[i].n && s->tc[i].g == a)
            tc_retire(s, &s->tc[i]);
}

/* The entry address a maps to: its 32-byte block modulo SPM_TC, scaled by 64
 * (one shift and one mask).  32 bytes, not the 16-byte line: the pass asks
 * for objects by their start, and objects of 32 or 64 bytes, whose starts
 * are 32 or 64 bytes apart, then used only half or a quarter of the entries
 * (Table II: dijkstra 1,916 -> 1,812 Kcycles, rbtree 1,075 -> 1,018). */
static inline spm_tc *tc_slot(dmm_spm *s, dmm_gaddr a)
{
    return (spm_tc *)(void *)((uint8_t *)s->tc + ((size_t)(a << 1) & ((SPM_TC - 1u) << 6)));
}

/* The entry of address a (the one the next p2s of a looks at), its old
 * contents retired, now saying the live object [g, g + n) is resident at l
 * in unit u.  Returned for a caller that counts a hit in it. */
static inline spm_tc *tc_put(dmm_spm *s, dmm_gaddr a, dmm_gaddr g, size_t n, uint8_t *l, spm_unit *u)
{
    spm_tc *e = tc_slot(s, a);
    tc_retire(s, e);
    e->g = g;
    e->l = l;
    e->u = u;
    e->n = n;
    return e;
}

/* tc_put, where the hit path's cache is on. */
static void tc_fill(dmm_spm *s, dmm_gaddr a, dmm_gaddr g, size_t n, uint8_t *l, spm_unit *u)
{
    if (s->tc_on)
        (void)tc_put(s, a, g, n, l, u);
}

/* Gives an evicted unit's block back to the local heap (evict_core, which
 * every caller ran first, dropped its translations: a second drop here cost
 * dfs ~80 instructions per eviction). */
static void local_release(dmm_spm *s, spm_unit *u)
{
    s->local_in_use -= SPM_UHDR + u->bytes;
    u->magic = 0;
    dmm_heap_free(s->heap, u);
}

/* The block of a unit whose objects are all freed (evict with drop): kept as
 * a spare when there is room (not under paranoid, whose blocks go through
 * the quarantine and the local heap's poisoning), else given back.  A
 * program that frees an object and allocates one of the same class next
 * (stringsearch's 2 KiB buffers and search records, a queue's nodes) then
 * places the new unit without the local heap's search and coalescing. */
static spm_unit *spare_first(const dmm_spm *s)
{
    return s->spare4 ? (spm_unit *)(void *)(s->local + (size_t)s->spare4 * 16u) : NULL;
}

static void spare_put(dmm_spm *s, spm_unit *u)
{
    if (s->nspare >= SPM_SPARE || s->cfg.harden == DMM_HARDEN_PARANOID) {
        local_release(s, u);
        return;
    }
    s->local_in_use -= SPM_UHDR + u->bytes;
    u->magic = 0;
    u->prev = NULL;
    u->next = spare_first(s);
    s->spare4 = (uint16_t)((size_t)((uint8_t *)u - s->local) >> 4);
    s->nspare++;
}

/* A spare block for a unit of exactly `bytes` (unlinked), or NULL. */
static void *spare_take(dmm_spm *s, size_t bytes)
{
    spm_unit *prev = NULL;
    for (spm_unit *u = spare_first(s); u; prev = u, u = u->next)
        if (u->bytes == bytes) {
            if (prev)
                prev->next = u->next;
            else
                s->spare4 = u->next ? (uint16_t)((size_t)((uint8_t *)u->next - s->local) >> 4) : 0;
            s->nspare--;
            return u;
        }
    return NULL;
}

/* Gives every spare block back to the local heap (before an allocation that
 * would otherwise evict, and none at create). */
static void spare_flush(dmm_spm *s)
{
    spm_unit *u = spare_first(s);
    while (u) {
        spm_unit *n = u->next;
        dmm_heap_free(s->heap, u);
        u = n;
    }
    s->spare4 = 0;
    s->nspare = 0;
}

static void quarantine_release(dmm_spm *s)
{
    while (s->quarantine) {
        spm_unit *u = s->quarantine;
        s->quarantine = u->next;
        local_release(s, u);
    }
}

/* Gives up a resident unit's local copy: written back when dirty (unless
 * `drop`: its objects are gone), its entry updated.  Paranoid: the bytes are
 * poisoned and the block kept until the next moving call, so a stale local
 * address reads the poison pattern instead of a newer unit. */
static void evict_core(dmm_spm *s, spm_unit *u, bool drop)
{
    if (u->piece) { /* a piece: only in the hit path's cache, tagged; its entry says non-resident */
        tc_drop_unit(s, u); /* folds its last writes into u->dirty first */
        if (u->dirty && !drop) {
            dma_put(s, u->gaddr, udata(u), u->bytes);
            s->st.unit_writebacks++;
        }
        if (!drop)
            s->st.unit_evictions++;
        if (s->piece4 && (uint8_t *)u == s->local + (size_t)s->piece4 * 16u)
            s->piece4 = 0;
        s->pieces--;
        lru_unlink(s, u);
        return;
    }
    if (drop) {
        /* the free of its last object: each free dropped its object's
         * translations (tc_drop_object, xc_drop_object: the hit path's
         * entries, the recent ones and the translation cache name live
         * objects by their start), so none names u now; only the unit hint
         * names a unit (stringsearch drops 187 units at the Table II size,
         * ~70 instructions each for the two sweeps) */
        if (s->uh_u == u)
            s->uh_u = NULL;
    } else {
        tc_drop_unit(s, u); /* folds its last writes into u->dirty first */
        xc_drop_unit(s, u);
    }
    if (u->dirty && !drop) {
        dma_put(s, u->gaddr, udata(u), u->bytes);
        s->st.unit_writebacks++;
    }
    if (!drop) {
        uint8_t *l = line_open(s, u->entry);
        spm_entry *e = (spm_entry *)(void *)l;
        e->flags = (uint8_t)(e->flags & ~SPM_E_RESIDENT);
        e->local4 = 0;
        line_close(s, u->entry, l);
        s->st.unit_evictions++;
    }
    lru_unlink(s, u);
}

static void evict(dmm_spm *s, spm_unit *u, bool drop)
{
    evict_core(s, u, drop);
    if (s->cfg.harden == DMM_HARDEN_PARANOID) {
        dmm_port_memset(udata(u), SPM_POISON, u->bytes);
        dmm_ann_poison(udata(u), u->bytes); /* DMM_ANNOTATE: ASan sees a stale access */
        u->magic = 0;
        u->next = s->quarantine;
        s->quarantine = u;
    } else if (drop) {
        spare_put(s, u);
    } else {
        local_release(s, u);
    }
}

/* The unit to evict: second chance (clock) over the resident list, oldest
 * first.  A hit sets only the unit's clock bit (the hit path moves no list
 * entry); here an unpinned unit whose bit is set loses it and goes to the
 * head, and the first unpinned unit without it is the victim. */
static spm_unit *lru_victim(dmm_spm *s)
{
    tc_sweep(s);
    for (unsigned pass = 0; pass < 2; pass++) {
        spm_unit *u = s->lru_tail;
        while (u) {
            spm_unit *p = u->prev;
            if (!u->pins) {
                if (!u->ref)
                    return u;
                u->ref = 0;
                if (u != s->lru_head) {
                    lru_unlink(s, u);
                    lru_front(s, u);
                }
            }
            u = p;
        }
    }
    return NULL;
}

static void paranoid_sweep(dmm_spm *s)
{
    if (s->cfg.harden != DMM_HARDEN_PARANOID)
        return;
    quarantine_release(s);
    spm_unit *u = s->lru_head;
    while (u) {
        spm_unit *n = u->next;
        if (!u->pins)
            evict(s, u, false);
        u = n;
    }
}

/* Local space for a unit of `bytes`, evicting unpinned units (clock) until the
 * dmm heap can serve it.  NULL (status set) when only pinned units remain. */
static spm_unit *local_alloc(dmm_spm *s, size_t bytes, unsigned slots, dmm_gaddr unit, dmm_gaddr entry)
{
    void *p;
    size_t evicted = 0;
    bool failed = false;
    if (s->spare4 && (p = spare_take(s, bytes)) != NULL)
        goto placed;
    for (;;) {
        /* Local memory full (in steady state it always is): when the unit
         * the clock would evict next has the size wanted, its block is
         * taken over as it is, which saves the local heap a failing search,
         * a free and an allocation per fetch.  Not under paranoid, whose
         * evicted blocks go to the quarantine.  "Full" means the last unit
         * placed needed evictions that left no spare bytes, and no unit was
         * freed since. */
        if (s->heap_full && s->cfg.harden != DMM_HARDEN_PARANOID) {
            spm_unit *v = lru_victim(s);
            if (v && v->bytes == bytes) {
                evict_core(s, v, false);
                p = v;
                s->local_in_use -= SPM_UHDR + bytes; /* counted again below */
                break;
            }
        }
        p = dmm_heap_aligned_alloc(s->heap, 16, SPM_UHDR + bytes);
        if (p) {
            if (failed) /* full only when evictions made the room, and no
                           more than this unit's: a failure that giving back
                           the spares (or the quarantine) cured leaves their
                           bytes free, and the takeover would evict while
                           they are (dfs's second round: 303 fetches with
                           3.6 KB of its 7.7 KB H unused) */
                s->heap_full = evicted != 0 && evicted <= SPM_UHDR + bytes;
            break;
        }
        failed = true;
        if (s->quarantine) {
            quarantine_release(s);
            continue;
        }
        if (s->spare4) { /* spares of other sizes go back before any eviction */
            spare_flush(s);
            continue;
        }
        spm_unit *v = lru_victim(s);
        if (!v) {
            s->last = DMM_E_UNSUPPORTED;
            return NULL;
        }
        evicted += SPM_UHDR + v->bytes;
        evict(s, v, false);
    }
placed:;
    spm_unit *u = (spm_unit *)p;
    dmm_port_memset(u, 0, SPM_UHDR);
    u->gaddr = unit;
    u->entry = entry;
    u->bytes = (uint32_t)bytes;
    u->slots = (uint8_t)slots;
    u->magic = SPM_UNIT_MAGIC;
    lru_front(s, u);
    s->local_in_use += SPM_UHDR + bytes;
    if (s->local_in_use > s->st.local_peak)
        s->st.local_peak = s->local_in_use;
    return u;
}

static spm_unit *unit_at(dmm_spm *s, const spm_entry *e)
{
    return (spm_unit *)(void *)(s->local + (size_t)e->local4 * 16u - SPM_UHDR);
}

/* ---- address lookup ------------------------------------------------------- */

typedef struct spm_ref {
    dmm_gaddr seg, unit;
    unsigned idx, slot;
    spm_frame *f;
} spm_ref;

/* Resolves global address a.  start: a must be the start of a live object.
 * Reports and returns false on a bad address; nothing is changed except
 * which table page is resident. */
/* Whether the 16-byte line at seg (resident frame, else fetched into the
 * scratch line) is a segment header of this core; *large and *bytes (the
 * object's rounded size) describe a large run. */
static bool header_at(dmm_spm *s, dmm_gaddr seg, bool *large, uint32_t *bytes)
{
    const uint8_t *l = line_open(s, seg);
    spm_seghdr h;
    dmm_port_memcpy(&h, l, 16);
    *large = h.kind == SPM_KIND_LARGE;
    *bytes = h.slot_size;
    return h.magic == (SPM_MAGIC ^ (uint32_t)(seg >> 4)) && h.core == s->core;
}

/* The segment whose page describes address a.  A large object spans several
 * segments and only its first carries a header: for an address past that,
 * walk back segment by segment (at most the largest object's length) to the
 * run's header, fetching 16 bytes per step; a header of another segment on
 * the way ends the walk.  0 when a lies in no segment of this core.  The
 * header is peeked before any page is fetched, so object data never enters
 * a table frame. */
static dmm_gaddr segment_of(dmm_spm *s, dmm_gaddr a)
{
    dmm_gaddr seg = a & ~(dmm_gaddr)(s->cfg.segment - 1);
    /* global address 0 starts no segment (the global heap puts a header
     * before each), and an idle frame (seg 0, perhaps the translation
     * cache's: xc_home) must not be read as its page */
    if (seg == 0 || seg + s->page > s->gsize)
        return 0;
    bool large;
    uint32_t bytes;
    if (header_at(s, seg, &large, &bytes)) /* reads a resident page's frame, else 16 bytes */
        return seg;
    for (dmm_gaddr back = s->cfg.segment;
         back < seg && back < s->page + colour_max(s) + SPM_MAX_ALLOC + s->cfg.segment;
         back += s->cfg.segment) {
        dmm_gaddr s0 = seg - back;
        if (header_at(s, s0, &large, &bytes))
            return large && a < s0 + data_off(s, s0) + bytes ? s0 : 0;
    }
    return 0;
}

static bool lookup(dmm_spm *s, dmm_gaddr a, dmm_op op, bool start, spm_ref *r)
{
    if (a == 0 || a >= s->gsize) {
        report(s, op, DMM_ERR_FOREIGN_POINTER, a, "address outside global memory");
        return false;
    }
    /* the page of a's segment in the hinted frame: a segment with a page
     * (validated below), no header to peek */
    dmm_gaddr seg = page_hinted(s, a) ? a & ~(dmm_gaddr)(s->cfg.segment - 1) : segment_of(s, a);
    if (!seg) {
        report(s, op, DMM_ERR_FOREIGN_POINTER, a, "address not in a segment of this core");
        return false;
    }
    spm_frame *f = page_frame(s, seg, true);
    spm_seghdr *h = hdr_of(f);
    if (h->magic != (SPM_MAGIC ^ (uint32_t)(seg >> 4)) || h->core != s->core || h->units == 0 ||
        h->units > s->page_entries || h->slots == 0 || h->slot_size == 0) {
        report(s, op, DMM_ERR_FOREIGN_POINTER, a, "address not in a segment of this core");
        return false;
    }
    uint64_t off = a - seg;
    size_t stride = stride_of(h), d = data_off(s, seg);
    if (off < d || (off - d) / stride >= h->units) {
        report(s, op, DMM_ERR_INVALID_POINTER, a, "address inside a segment but not in a unit");
        return false;
    }
    unsigned i = (unsigned)((off - d) / stride);
    uint64_t in = off - d - (uint64_t)i * stride;
    unsigned slot = (unsigned)(in / h->slot_size);
    bool boundary = in % h->slot_size == 0;
    spm_entry *e = entry_of(f, i);
    bool live = (e->flags & SPM_E_VALID) && (e->live >> slot & 1u);
    if (start && !boundary) {
        report(s, op, DMM_ERR_INVALID_POINTER, a, "address inside an object, not its start");
        return false;
    }
    if (!live) {
        if (start && op == DMM_OP_FREE)
            report(s, op, DMM_ERR_DOUBLE_FREE, a, "object already freed");
        else
            report(s, op, DMM_ERR_INVALID_POINTER, a, "address of no live object");
        return false;
    }
    r->seg = seg;
    r->idx = i;
    r->slot = slot;
    r->unit = seg + d + (dmm_gaddr)i * stride;
    r->f = f;
    return true;
}

/* ---- partial transfers (dmm_spm_p2s_part) ---------------------------------- */

/* A piece is a unit_bytes-aligned (from the unit's start) run of a unit that
 * holds one object larger than unit_bytes, resident on its own while the
 * unit is not: a resident unit (own local block, in the resident list, on
 * the clock) with `piece` set, whose gaddr and bytes are the piece's.  The
 * unit's entry stays non-resident and no translation cache names a piece
 * (they promise whole objects).  Pieces of one unit never overlap; a whole
 * fetch of the unit evicts its pieces first (dirty ones written back), and
 * a piece is made only while the unit is not resident, so every byte has at
 * most one local copy. */
static size_t part_bytes(const dmm_spm *s) { return r16(s->cfg.unit_bytes); }

/* Pieces only for a unit of one object larger than unit_bytes that would
 * also fill more than a quarter of H: a smaller array is cheaper to keep
 * whole, since a program that indexes it element by element in one place
 * usually loops over it whole in another, and each switch between pieces and
 * the whole copy writes back and fetches again (the rewritten stringsearch on
 * its large input: 9,169 unit fetches with whole copies, 9,881 with pieces of
 * its 1-4 KiB buffers in a 28 KiB H). */
static bool part_ok(const dmm_spm *s, const spm_seghdr *h)
{
    size_t st = stride_of(h);
    return h->slots == 1 && st > part_bytes(s) && st > s->heap_bytes / 4u;
}

/* Whether malloc takes an object of class cls that is larger than any
 * resident copy can be (cls > max_object): it lives in global memory only
 * and is reached in pieces (p2s_part), so it must be a unit of its own that
 * part_ok accepts.  Such a unit is never made resident whole. */
static bool out_of_core_ok(const dmm_spm *s, size_t cls)
{
    return cls > s->max_object && cls <= SPM_MAX_ALLOC && cls > part_bytes(s);
}

/* Clears [g, g + n) in global memory (n a multiple of 16): calloc of an
 * object born out of core, which has no local copy to clear. */
static void zero_global(dmm_spm *s, dmm_gaddr g, size_t n)
{
    dmm_port_memset(s->bounce, 0, SPM_BOUNCE);
    for (size_t o = 0; o < n; o += SPM_BOUNCE)
        dma_put(s, g + o, s->bounce, n - o < SPM_BOUNCE ? n - o : SPM_BOUNCE);
}

/* Among the pieces of the unit [unit, unit + bytes): returns one covering
 * [lo, hi) if there is one (find); evicts (written back unless drop) those
 * that overlap [lo, hi) otherwise.  A walk of the resident list: only for
 * units that may have pieces. */
static DMM_NOINLINE spm_unit *pieces_sweep(dmm_spm *s, dmm_gaddr unit, size_t bytes, dmm_gaddr lo, dmm_gaddr hi, bool drop,
                              bool find)
{
    if (!s->pieces)
        return NULL;
    spm_unit *u = s->lru_head;
    if (find)
        for (spm_unit *v = u; v; v = v->next)
            if (v->piece && v->gaddr <= lo && hi <= v->gaddr + v->bytes)
                return v;
    while (u) {
        spm_unit *n = u->next;
        if (u->piece && u->gaddr >= unit && u->gaddr < unit + bytes && u->gaddr < hi && lo < u->gaddr + u->bytes) {
            evict(s, u, drop);
            s->heap_full = false;
        }
        u = n;
    }
    return NULL;
}

/* Makes r's unit resident; NULL (status set) when local memory is full of
 * pinned units.  The page of r stays resident.  Inlined into both callers
 * (p2s_core's miss path was built around it inline; a call costs dfs ~1 %). */
static DMM_ALWAYS_INLINE spm_unit *make_resident(dmm_spm *s, spm_ref *r, bool dirty)
{
    spm_entry *e = entry_of(r->f, r->idx);
    spm_unit *u;
    if (e->flags & SPM_E_RESIDENT) {
        u = unit_at(s, e);
        s->st.p2s_hits++;
        u->ref = 1;
    } else {
        size_t bytes = stride_of(hdr_of(r->f));
        if (bytes > s->max_object) { /* out of core: never whole, nothing evicted for it */
            s->last = DMM_E_RANGE;
            return NULL;
        }
        if (part_ok(s, hdr_of(r->f))) /* its pieces go first: one local copy per byte */
            pieces_sweep(s, r->unit, bytes, r->unit, r->unit + bytes, false, false);
        u = local_alloc(s, bytes, hdr_of(r->f)->slots, r->unit,
                        r->seg + SPM_HDR_BYTES + (dmm_gaddr)r->idx * DMM_SPM_ENTRY_BYTES);
        if (!u)
            return NULL;
        dma_get(s, udata(u), r->unit, bytes);
        s->st.unit_fetches++;
        e->flags |= SPM_E_RESIDENT;
        e->local4 = (uint16_t)((size_t)(udata(u) - s->local) >> 4);
        e->stamp = (uint32_t)++s->tick;
        r->f->dirty = true;
    }
    if (dirty)
        u->dirty = 1; /* local only: the entry carries no dirty bit */
    return u;
}

/* ---- timing --------------------------------------------------------------- */

typedef struct spm_clock {
    uint64_t t0;
} spm_clock;

static DMM_ALWAYS_INLINE spm_clock t_begin(dmm_spm *s)
{
    spm_clock c;
    c.t0 = s->cfg.timing ? dmm_port_clock_ns() : 0;
    s->cyc = 0;
    s->last = DMM_OK;
    return c;
}

static DMM_ALWAYS_INLINE void t_end(dmm_spm *s, dmm_spm_fn fn, spm_clock c)
{
    /* The hit path leaves the status alone: after a failure the cache is
     * emptied, so the next p2s takes the general path and says DMM_OK. */
    if (s->last != DMM_OK)
        tc_clear(s);
    s->st.calls[fn]++;
    s->st.sim_cycles[fn] += s->cyc;
    if (s->cfg.timing)
        s->st.host_ns[fn] += dmm_port_clock_ns() - c.t0;
}

/* ---- create / destroy ----------------------------------------------------- */

dmm_status dmm_spm_create(dmm_spm **out, void *local, size_t size, const dmm_spm_config *cfg,
                          dmm_spm_global *g, unsigned core, const dmm_spm_port *port)
{
    if (!out || !local || !g || !port || !port->get || !port->put || !port->wait)
        return DMM_E_NULL;
    *out = NULL;
    dmm_spm_config c = cfg ? *cfg : dmm_spm_default_config();
    if (dmm_spm_config_check_(&c, NULL) != DMM_OK)
        return DMM_E_CONFIG;
    if (((uintptr_t)local & 15u) || size > DMM_SPM_MAX_LOCAL || port->align == 0 ||
        (port->align & (port->align - 1)) || port->align > 16 || port->max_transfer < port->align)
        return DMM_E_CONFIG;
    if (core >= DMM_SPM_MAX_CORES || core > 0xffffu)
        return DMM_E_RANGE;
    uint64_t gsize = dmm_spm_global_size(g);
    if (gsize == 0 || gsize > ((uint64_t)1 << 36))
        return DMM_E_CONFIG;
    size_t control = r16(sizeof(dmm_spm));
    if (size < control + c.table_bytes + 256)
        return DMM_E_TOO_SMALL;
    dmm_status at = dmm_spm_global_attach_(g, core);
    if (at != DMM_OK)
        return at;
    dmm_spm *s = (dmm_spm *)local;
    dmm_port_memset(s, 0, sizeof *s);
    s->cfg = c;
    s->tc_on = c.harden != DMM_HARDEN_PARANOID && !c.timing;
    s->g = g;
    s->core = core;
    s->port = *port;
    s->gsize = gsize;
    s->local = (uint8_t *)local;
    s->size = size;
    s->control_bytes = control;
    while (((size_t)1 << s->seg_shift) < c.segment)
        s->seg_shift++;
    s->page = c.table_bytes / c.table_frames;
    /* Colours (data_off) where a segment holds at least 16 of the largest
     * units, so that one unit less is at most a sixteenth of it. */
    s->colours = c.segment - s->page >= 16u * c.unit_bytes ? 7u : 0u;
    s->page_entries = s->page / DMM_SPM_ENTRY_BYTES - 2u;
    s->table = s->local + control;
    for (unsigned i = 0; i < c.table_frames; i++)
        s->frames[i].mem = s->table + (size_t)i * s->page;
    size_t region = size - control - c.table_bytes, xc_n = 1;
    while (xc_n < (1u << SPM_XC_MAX_BITS) && xc_n * 2 * SPM_XC_H_PER_ENTRY <= region)
        xc_n *= 2;
    if (xc_n < 8) { /* a tiny heap region: one entry, kept in the control block */
        s->xc = &s->xc_one;
        s->xc_bits = 0;
    } else {
        s->xc = (spm_xc *)(void *)(s->table + c.table_bytes);
        dmm_port_memset(s->xc, 0, xc_n * sizeof(spm_xc));
        while ((1u << s->xc_bits) < xc_n)
            s->xc_bits++;
        region -= r16(xc_n * sizeof(spm_xc));
        s->control_bytes += r16(xc_n * sizeof(spm_xc));
    }
    s->xc_home_bits = (uint8_t)s->xc_bits;
    xc_to_frame(s, c.table_frames - 1u); /* all frames are idle: the last one */
    s->heap_mem = s->local + size - region;
    s->heap_bytes = region;
    /* A first-fit, address-ordered, coalescing heap: its control block is a
     * few words (a binned heap's bin table would eat a 2-4 KiB local memory)
     * and the resident set is small, so its O(n) search is short. */
    dmm_heap_config hc = dmm_heap_preset_config(DMM_PRESET_FIRSTFIT);
    hc.stats = DMM_STATS_OFF;
    hc.lock = DMM_LOCK_NONE;
    hc.on_error = DMM_ON_ERROR_REPORT;
    hc.error_fn = NULL;
    hc.grow_granularity = 0;
    if (dmm_heap_init(&s->heap, s->heap_mem, s->heap_bytes, &hc) != DMM_OK) {
        dmm_spm_global_detach_(g, core);
        return DMM_E_TOO_SMALL;
    }
    /* The largest object: the largest unit the empty local heap can hold. */
    size_t lo = 0, hi = s->heap_bytes / 16u;
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        void *p = dmm_heap_aligned_alloc(s->heap, 16, SPM_UHDR + mid * 16u);
        if (p) {
            dmm_heap_free(s->heap, p);
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    s->max_object = lo * 16u;
    if (s->max_object > 65535u * 16u)
        s->max_object = 65535u * 16u;
    if (s->max_object < 16) {
        dmm_heap_destroy(s->heap);
        dmm_spm_global_detach_(g, core);
        return DMM_E_TOO_SMALL;
    }
    s->magic = SPM_MAGIC;
    *out = s;
    return DMM_OK;
}

void dmm_spm_destroy(dmm_spm *s)
{
    if (!s || s->magic != SPM_MAGIC)
        return;
    dmm_gaddr seg = s->seg_head;
    uint64_t guard = s->gsize / s->cfg.segment + 1;
    while (seg && guard--) {
        spm_frame *f = page_frame(s, seg, true);
        dmm_gaddr next = hdr_of(f)->next;
        frame_repurpose(s, f);
        f->seg = 0;
        f->dirty = false;
        unsigned w = 0;
        dmm_spm_global_free(s->g, s->core, seg, &w);
        charge(s, w);
        seg = next;
    }
    s->nkept = 0; /* the idle segments were in the list: given back above */
    dmm_heap_destroy(s->heap);
    dmm_spm_global_detach_(s->g, s->core);
    s->magic = 0;
}

dmm_spm_layout dmm_spm_get_layout(const dmm_spm *s)
{
    dmm_spm_layout l;
    dmm_port_memset(&l, 0, sizeof l);
    if (!s)
        return l;
    l.local_size = s->size;
    l.control_bytes = s->control_bytes;
    l.table_bytes = s->cfg.table_bytes;
    l.heap_bytes = s->heap_bytes;
    l.page_entries = s->page_entries;
    l.max_object = s->max_object;
    l.max_alloc = out_of_core_ok(s, SPM_MAX_ALLOC) ? SPM_MAX_ALLOC : s->max_object;
    return l;
}

/* ---- segments ------------------------------------------------------------- */

static void open_add(dmm_spm *s, uint32_t cls, dmm_gaddr seg)
{
    for (unsigned i = 0; i < SPM_OPEN; i++)
        if (s->open[i].seg == seg)
            return;
    for (unsigned i = 0; i < SPM_OPEN; i++)
        if (!s->open[i].seg) {
            s->open[i].seg = seg;
            s->open[i].cls = cls;
            s->open[i].from = 0;
            return;
        }
    s->open[s->open_next].seg = seg;
    s->open[s->open_next].cls = cls;
    s->open[s->open_next].from = 0;
    s->open_next = (s->open_next + 1) % SPM_OPEN;
}

static void open_remove(dmm_spm *s, dmm_gaddr seg)
{
    for (unsigned i = 0; i < SPM_OPEN; i++)
        if (s->open[i].seg == seg)
            s->open[i].seg = 0;
}

static void link_patch(dmm_spm *s, dmm_gaddr seg, bool set_prev, dmm_gaddr v)
{
    dmm_gaddr ga = seg + 16u;
    uint8_t *l = line_open(s, ga);
    uint64_t *w = (uint64_t *)(void *)l;
    w[set_prev ? 0 : 1] = v;
    line_close(s, ga, l);
}

/* Forgets idle segment seg (it is in use again, or given back). */
static void kept_remove(dmm_spm *s, dmm_gaddr seg)
{
    for (unsigned i = 0; i < s->nkept; i++)
        if (s->kept[i] == seg) {
            s->kept[i] = s->kept[--s->nkept];
            return;
        }
}

/* A new segment (or large run of `bytes`) with its page in a frame.  An idle
 * segment (kept[]: still in the core's list, its header valid, no valid
 * entry) serves a one-segment request without a request to the main core:
 * its header is rewritten for the new class in place, so its links, and
 * those of its neighbours, stay as they are. */
static spm_frame *segment_new(dmm_spm *s, size_t bytes, uint8_t kind, uint32_t slot_size,
                              unsigned slots, dmm_gaddr *seg_out)
{
    unsigned w = 0;
    dmm_gaddr seg;
    bool idle = bytes == s->cfg.segment && s->nkept;
    if (idle) {
        seg = s->kept[--s->nkept]; /* an idle one: no request */
        open_remove(s, seg);        /* its record names its old class */
    } else {
        seg = dmm_spm_global_alloc(s->g, s->core, bytes, s->cfg.segment, &w);
        charge(s, w);
        s->st.segment_requests++;
    }
    if (!seg || (seg & (s->cfg.segment - 1)) || seg + bytes > s->gsize) {
        if (seg) {
            dmm_spm_global_free(s->g, s->core, seg, &w);
            charge(s, w);
        }
        s->last = DMM_E_TOO_SMALL;
        return NULL;
    }
    spm_frame *f = page_frame(s, seg, idle); /* an idle page keeps its links: fetched */
    size_t m = kind == SPM_KIND_LARGE ? 1 : (s->cfg.segment - data_off(s, seg)) / ((size_t)slot_size * slots);
    if (m > s->page_entries)
        m = s->page_entries;
    spm_seghdr *h = hdr_of(f);
    dmm_gaddr prev = idle ? h->prev : 0, next = idle ? h->next : s->seg_head;
    /* Only the header and the page's first m entries are ever read (every
     * reader stops at h->units), so only they are zeroed: a large object's
     * page was zeroed whole (P = 4 KiB in Table II) for its one entry, which
     * was most of stringsearch's malloc (callgrind, spm6). */
    dmm_port_memset(f->mem, 0, SPM_HDR_BYTES + m * DMM_SPM_ENTRY_BYTES);
    h->magic = SPM_MAGIC ^ (uint32_t)(seg >> 4);
    h->core = (uint16_t)s->core;
    h->kind = kind;
    h->slots = (uint8_t)slots;
    h->slot_size = slot_size;
    h->units = (uint16_t)m;
    h->used = 0;
    h->prev = prev;
    h->next = next;
    f->dirty = true;
    if (!idle) {
        if (s->seg_head)
            link_patch(s, s->seg_head, true, seg);
        s->seg_head = seg;
    }
    *seg_out = seg;
    return f;
}

static void segment_release(dmm_spm *s, spm_frame *f)
{
    kept_remove(s, f->seg);
    spm_seghdr *h = hdr_of(f);
    dmm_gaddr seg = f->seg, prev = h->prev, next = h->next;
    if (prev)
        link_patch(s, prev, false, next);
    else
        s->seg_head = next;
    if (next)
        link_patch(s, next, true, prev);
    frame_repurpose(s, f);
    f->seg = 0;
    f->dirty = false;
    xc_to_frame(s, (unsigned)(f - s->frames));
    open_remove(s, seg);
    /* Clear the header line in global memory: a later free or p2s of a stale
     * address must not find a page that still looks like ours. */
    dmm_port_memset(s->scratch, 0, 16);
    dma_put(s, seg, s->scratch, 16);
    unsigned w = 0;
    dmm_spm_global_free(s->g, s->core, seg, &w);
    charge(s, w);
}

/* Segment f's last unit went.  A small segment stays as it is, idle (at most
 * SPM_KEEP of them): in the core's list with its header, and in the
 * open-segment cache, so the next object of its class, or the next segment
 * the core needs, takes it without a request to the main core and without
 * unlinking, clearing and linking a header again (stringsearch at Table II
 * size emptied and refilled a segment on 187 of its 493 mallocs).  A stale
 * address into an idle segment finds no valid entry, so it is still
 * reported (double free / no live object).  Others go back at once. */
static void segment_empty(dmm_spm *s, spm_frame *f)
{
    spm_seghdr *h = hdr_of(f);
    if (h->kind == SPM_KIND_SMALL && s->nkept < SPM_KEEP) {
        s->kept[s->nkept++] = f->seg;
        open_add(s, h->slot_size, f->seg);
        return;
    }
    segment_release(s, f);
}

/* ---- malloc / free -------------------------------------------------------- */

static void xc_put(dmm_spm *s, const spm_xlate *t, unsigned slot);

/* The frame of open record o's page when that page is in the last frame
 * used or its hinted frame and the unit at o's scan start is valid with a
 * free slot: what the record's scan would find first, without page_frame's
 * frame search and the scan.  page_frame's bookkeeping is done; NULL
 * otherwise (nothing changed). */
static DMM_ALWAYS_INLINE spm_frame *open_ready(dmm_spm *s, const spm_open *o)
{
    dmm_gaddr seg = o->seg;
    unsigned fi = s->frames[s->last_frame].seg == seg ? s->last_frame : frame_hint(s, seg);
    spm_frame *f = &s->frames[fi];
    if (!seg || f->seg != seg || o->from >= hdr_of(f)->units) /* a free frame has seg 0 */
        return NULL;
    const spm_entry *e = entry_of(f, o->from);
    if (!(e->flags & SPM_E_VALID) || e->live == (uint16_t)((1u << e->slots) - 1u))
        return NULL;
    s->last_frame = fi;
    s->fhint[fhint_index(s, seg)] = (uint8_t)fi;
    f->stamp = (uint32_t)++s->tick;
    return f;
}

/* An object of class cls larger than any resident copy (out_of_core_ok):
 * a unit of its own in a new segment (or run), valid and not resident, so
 * it is reached in pieces; its global bytes are whatever the segment held
 * (calloc clears them there, with DMA). */
static DMM_NOINLINE dmm_gaddr malloc_out_of_core(dmm_spm *s, size_t cls, bool zero)
{
    bool large = s->page + colour_max(s) + cls > s->cfg.segment;
    size_t bytes = s->cfg.segment;
    if (large)
        bytes = ((s->page + colour_max(s) + cls + s->cfg.segment - 1) / s->cfg.segment) * s->cfg.segment;
    dmm_gaddr seg = 0;
    spm_frame *f = segment_new(s, bytes, large ? SPM_KIND_LARGE : SPM_KIND_SMALL, (uint32_t)cls, 1, &seg);
    if (!f)
        return 0;
    dmm_gaddr unit = seg + data_off(s, seg); /* unit 0; not an open record: the class has no short path */
    if (zero)
        zero_global(s, unit, cls);
    spm_entry *e = entry_of(f, 0);
    e->gaddr4 = (uint32_t)(unit >> 4);
    e->stamp = (uint32_t)++s->tick;
    e->local4 = 0;
    e->size4 = (uint16_t)(cls >> 4);
    e->live = 1;
    e->slots = 1;
    e->flags = SPM_E_VALID;
    hdr_of(f)->used = 1;
    if (s->nkept)
        kept_remove(s, seg);
    f->dirty = true;
    s->st.live_objects++;
    s->st.live_bytes += cls;
    return unit;
}

static dmm_gaddr do_malloc(dmm_spm *s, size_t size, bool zero)
{
    if (size == 0 || size > s->max_object) {
        if (size > s->max_object && size <= SPM_MAX_ALLOC && out_of_core_ok(s, r16(size)))
            return malloc_out_of_core(s, r16(size), zero);
        s->last = DMM_E_RANGE;
        return 0;
    }
    size_t cls = r16(size);
    bool large = s->page + colour_max(s) + cls > s->cfg.segment;
    unsigned slots = 1;
    if (!large && cls <= s->cfg.unit_bytes) {
        size_t n = s->cfg.unit_bytes / cls;
        slots = (unsigned)(n < 1 ? 1 : n > s->cfg.gran ? s->cfg.gran : n);
    }
    size_t stride = cls * slots;
    spm_frame *f = NULL;
    dmm_gaddr seg = 0;
    unsigned idx = 0;
    bool found = false, fresh = false;
    if (!large) {
        /* The record the last malloc took a unit from, when it has this
         * class, its page is in the last frame used and the unit at its
         * scan start has room: what the scan below would find first (the
         * scan start is the unit it stopped at), without the search for
         * the record, the frame and the scan (objects of one class in a
         * row: dfs's stack frames, dijkstra's queue nodes). */
        const spm_open *o = &s->open[s->open_hot];
        if (o->seg && o->cls == cls && (f = open_ready(s, o)) != NULL) {
            seg = o->seg;
            idx = o->from;
            found = true;
        }
        for (unsigned k = 0; k < SPM_OPEN && !found; k++) {
            if (!s->open[k].seg || s->open[k].cls != cls)
                continue;
            seg = s->open[k].seg;
            /* the same for every record of the class (classes allocated in
             * turn, as dijkstra's edges and queue nodes, where the hot
             * record names the other class) */
            if ((f = open_ready(s, &s->open[k])) != NULL) {
                idx = s->open[k].from;
                found = true;
                s->open_hot = (uint8_t)k;
                break;
            }
            f = page_frame(s, seg, true);
            spm_seghdr *h = hdr_of(f);
            int free_idx = -1;
            unsigned i = s->open[k].from;
            /* valid units at or after the scan start: those before it are
             * valid (and full), h->used counts all valid ones */
            unsigned left = h->used > i ? h->used - i : 0;
            for (; i < h->units; i++) {
                spm_entry *e = entry_of(f, i);
                if (e->flags & SPM_E_VALID) {
                    if (e->live != (uint16_t)((1u << e->slots) - 1u)) {
                        idx = i;
                        found = true;
                        s->open_hot = (uint8_t)k;
                        break;
                    }
                    left--;
                } else if (free_idx < 0) {
                    free_idx = (int)i;
                }
                /* every valid unit passed, all full, and a free entry
                 * found: the rest of the page is free entries (the scan
                 * walked to the end of the page before: ~1,300
                 * instructions per malloc in a page of 254 entries) */
                if (left == 0 && free_idx >= 0)
                    break;
            }
            /* the units scanned before the first free entry or the unit
             * found are full */
            s->open[k].from = (uint16_t)(free_idx >= 0 && (unsigned)free_idx < i ? (unsigned)free_idx : i);
            if (!found && free_idx >= 0) {
                idx = (unsigned)free_idx;
                found = true;
                s->open_hot = (uint8_t)k;
            }
            if (!found)
                s->open[k].seg = 0;
        }
    }
    if (!found) {
        size_t bytes = s->cfg.segment;
        if (large)
            bytes = ((s->page + colour_max(s) + cls + s->cfg.segment - 1) / s->cfg.segment) * s->cfg.segment;
        f = segment_new(s, bytes, large ? SPM_KIND_LARGE : SPM_KIND_SMALL, (uint32_t)cls, slots,
                        &seg);
        if (!f)
            return 0;
        if (!large)
            open_add(s, (uint32_t)cls, seg);
        idx = 0;
        fresh = true;
    }
    spm_entry *e = entry_of(f, idx);
    dmm_gaddr unit = seg + data_off(s, seg) + (dmm_gaddr)idx * stride;
    unsigned slot = 0;
    spm_unit *res = NULL; /* the unit when it is resident (fills the hit path's cache below) */
    if (e->flags & SPM_E_VALID) {
        slot = dmm_ctz(~(size_t)e->live); /* the first free slot (the unit has room) */
        e->live = (uint16_t)(e->live | 1u << slot);
        f->dirty = true;
        if ((e->flags & SPM_E_RESIDENT) && e->local4)
            res = unit_at(s, e);
    } else {
        /* A new unit: nothing to read, it is born resident and dirty. */
        dmm_gaddr ega = seg + SPM_HDR_BYTES + (dmm_gaddr)idx * DMM_SPM_ENTRY_BYTES;
        spm_unit *u = local_alloc(s, stride, slots, unit, ega);
        if (!u) {
            if (fresh)
                segment_empty(s, f);
            return 0;
        }
        /* Not cleared: malloc's contents are unspecified, and the other
         * slots get their bytes from the malloc that takes them; calloc
         * clears its own slot (slot 0 of a new unit) here, where the copy is
         * at hand.  (Clearing the whole stride cost every new unit a
         * memset of up to unit_bytes.) */
        if (zero)
            dmm_port_memset(udata(u), 0, cls);
        u->dirty = 1;
        e->gaddr4 = (uint32_t)(unit >> 4);
        e->stamp = (uint32_t)++s->tick;
        e->local4 = (uint16_t)((size_t)(udata(u) - s->local) >> 4);
        e->size4 = (uint16_t)(cls >> 4);
        e->live = 1;
        e->slots = (uint8_t)slots;
        e->flags = SPM_E_VALID | SPM_E_RESIDENT;
        if (hdr_of(f)->used++ == 0 && s->nkept)
            kept_remove(s, seg); /* an idle segment in use again */
        f->dirty = true;
        zero = false; /* cleared above when asked */
        res = u;
    }
    dmm_gaddr a = unit + (dmm_gaddr)slot * cls;
    s->st.live_objects++;
    s->st.live_bytes += cls;
    if (zero) {
        spm_ref r;
        r.seg = seg;
        r.idx = idx;
        r.slot = slot;
        r.unit = unit;
        r.f = f;
        spm_unit *u = make_resident(s, &r, true);
        if (!u) {
            /* cannot zero it: undo the allocation */
            e->live = (uint16_t)(e->live & ~(1u << slot));
            s->st.live_objects--;
            s->st.live_bytes -= cls;
            s->last = DMM_E_UNSUPPORTED;
            return 0;
        }
        dmm_port_memset(udata(u) + (size_t)slot * cls, 0, cls);
        res = u;
    }
    /* The program translates a new object next, nearly always (the pass
     * initialises it): put it in the hit path's cache now, so that the
     * translation is a hit instead of a miss that resolves it through its
     * table page (~200 instructions; dijkstra's pq_push pins every node
     * it allocates).  A resident unit only (never a piece: those are parts
     * of large units, which hold one object and are born whole). */
    if (res && !res->piece) {
        tc_fill(s, a, a, cls, udata(res) + (size_t)slot * cls, res);
        /* and in the translation cache: once the hit path's 8 entries
         * have moved on, a p2s (miss_hit) or the free (free_ref, through
         * resident_unit) still finds the object without walking its page
         * (the rewritten stringsearch at the Table II size walked it in
         * 245 of its 493 frees; callgrind on the program body: -63 k
         * instructions there, -14 k dijkstra, +12 k dfs, whose translation
         * cache entries for older objects it replaces) */
        spm_xlate t;
        t.g = a;
        t.l = udata(res) + (size_t)slot * cls;
        t.u = res;
        t.n = cls;
        xc_put(s, &t, slot);
    }
    return a;
}

/* The reference of the live object that starts at a, for a free, without a
 * walk of its page (lookup's ~170 instructions) when a lies in a resident
 * unit that the translations name: the unit hint (s->uh_u: the unit the miss
 * path resolved last, its entry in a frame), else the hit path's
 * entry of a or the recent translations and the translation cache (each
 * names a live object of a resident unit, whose local header holds its
 * entry's address).  The unit's page must be in a frame (then its entry is
 * current there).  Anything else (an interior address, a dead slot, a page
 * not in a frame) is left to lookup, which reports. */
static spm_unit *resident_unit(const dmm_spm *s, dmm_gaddr a);

static bool free_ref(dmm_spm *s, dmm_gaddr a, spm_ref *r)
{
    dmm_gaddr seg, unit;
    spm_frame *f;
    const spm_entry *e;
    uint32_t ss, bytes;
    unsigned fi;
    if (s->uh_u && a - s->uh_g < s->uh_bytes) {
        unit = s->uh_g;
        seg = unit & ~(dmm_gaddr)(s->cfg.segment - 1);
        fi = s->uh_f;
        e = s->uh_e;
        ss = s->uh_slot;
        bytes = s->uh_bytes;
    } else {
        const spm_tc *t = tc_slot(s, a);
        spm_unit *u = t->n && t->g == a ? t->u : resident_unit(s, a); /* a piece's tagged g never equals a */
        if (!u)
            return false;
        unit = u->gaddr;
        bytes = u->bytes;
        ss = u->bytes / u->slots;
        seg = u->entry & ~(dmm_gaddr)(s->cfg.segment - 1);
        fi = frame_hint(s, seg);
        if (s->frames[fi].seg != seg) {
            fi = s->last_frame;
            if (s->frames[fi].seg != seg)
                return false;
        }
        e = (const spm_entry *)(const void *)(s->frames[fi].mem + (u->entry - seg));
    }
    f = &s->frames[fi];
    dmm_gaddr o = a - unit;
    if (o >= bytes || o % ss || f->seg != seg)
        return false;
    unsigned slot = (unsigned)(o / ss);
    if (!(e->live >> slot & 1u))
        return false;
    s->last_frame = fi; /* lookup's bookkeeping (page_frame) */
    f->stamp = (uint32_t)++s->tick;
    r->seg = seg;
    r->idx = (unsigned)(((const uint8_t *)e - (f->mem + SPM_HDR_BYTES)) / DMM_SPM_ENTRY_BYTES);
    r->slot = slot;
    r->unit = unit;
    r->f = f;
    return true;
}

/* The reference of the live object that starts at a, decoded from its
 * table page when that page is in the last frame used or the hinted one, the
 * unit resident or not: lookup's checks without its search for the segment
 * and without reporting (a is left to lookup when anything is not as a live
 * object's start needs it).  The translations (free_ref) do not name an
 * object whose unit left local memory, nor one they forgot: dfs frees 206 of
 * its 1,001 objects, dijkstra 58 of 422, through lookup, ~240 instructions
 * each, at the Table II size. */
static DMM_NOINLINE bool free_in_frame(dmm_spm *s, dmm_gaddr a, spm_ref *r)
{
    dmm_gaddr seg = a & ~(dmm_gaddr)(s->cfg.segment - 1);
    unsigned fi = s->frames[s->last_frame].seg == seg ? s->last_frame : frame_hint(s, seg);
    spm_frame *f = &s->frames[fi];
    if (!seg || f->seg != seg) /* a free frame has seg 0 */
        return false;
    const spm_seghdr *h = hdr_of(f);
    if (h->magic != (SPM_MAGIC ^ (uint32_t)(seg >> 4)) || h->core != s->core || h->units == 0 ||
        h->units > s->page_entries || h->slots == 0 || h->slot_size == 0)
        return false;
    size_t off = (size_t)(a - seg); /* below cfg.segment (at most 1 GiB) */
    size_t stride = stride_of(h), d = data_off(s, seg);
    if (off < d)
        return false;
    size_t i = (off - d) / stride;
    if (i >= h->units)
        return false;
    size_t in = off - d - i * stride;
    if (in % h->slot_size)
        return false;
    unsigned slot = (unsigned)(in / h->slot_size);
    const spm_entry *e = entry_of(f, (unsigned)i);
    if (!(e->flags & SPM_E_VALID) || !(e->live >> slot & 1u))
        return false;
    s->last_frame = fi; /* page_frame's bookkeeping, as lookup's */
    s->fhint[fhint_index(s, seg)] = (uint8_t)fi;
    f->stamp = (uint32_t)++s->tick;
    r->seg = seg;
    r->idx = (unsigned)i;
    r->slot = slot;
    r->unit = seg + d + i * stride;
    r->f = f;
    return true;
}

/* known: the object's reference when free_fast resolved it (r.f set: the
 * free of its unit's last object, free_last), else r.f NULL. */
static void do_free(dmm_spm *s, dmm_gaddr a, const spm_ref *known)
{
    spm_ref r;
    if (known->f)
        r = *known;
    else if (!free_ref(s, a, &r) && !free_in_frame(s, a, &r) && !lookup(s, a, DMM_OP_FREE, true, &r))
        return;
    spm_seghdr *h = hdr_of(r.f);
    tc_drop_object(s, a, h->slot_size);
    xc_drop_object(s, a);
    spm_entry *e = entry_of(r.f, r.idx);
    e->live = (uint16_t)(e->live & ~(1u << r.slot));
    r.f->dirty = true;
    for (unsigned k = 0; k < SPM_OPEN; k++) /* unit idx has room now */
        if (s->open[k].seg == r.seg) { /* one record per segment (open_add) */
            if (s->open[k].from > r.idx)
                s->open[k].from = (uint16_t)r.idx;
            break;
        }
    s->st.live_objects--;
    s->st.live_bytes -= h->slot_size;
    if (e->live)
        return;
    if (e->flags & SPM_E_RESIDENT) {
        evict(s, unit_at(s, e), true);
        s->heap_full = false; /* its bytes are free now */
    } else if (part_ok(s, h)) { /* its pieces: dropped, not written back */
        pieces_sweep(s, r.unit, stride_of(h), r.unit, r.unit + stride_of(h), true, false);
    }
    dmm_port_memset(e, 0, sizeof *e);
    h->used--;
    if (h->used == 0)
        segment_empty(s, r.f);
    else
        open_add(s, h->slot_size, r.seg);
}

/* malloc's common case without do_malloc (~200 instructions on its shortest
 * path, callgrind, dijkstra at the Table II size): an open record of the
 * class (the one the last malloc took a unit from, else the first other one
 * of the class) whose unit at its scan start is valid, resident and has a free slot, and whose
 * page is in the last frame used or its hinted frame.  Everything it reads
 * is checked against the page in its frame (the entry's flags, live bits
 * and local copy; the header's class), so no other state has to be kept
 * coherent with it: any doubt returns 0 and do_malloc decides.  The result
 * is what do_malloc's own first choice would have been (that record, that
 * unit, its first free slot), with the same bookkeeping (the frame's use
 * stamp and hint, the stats, the hit path's cache and the translation cache
 * filled with the new object).  Only where the hit path's cache is on (not
 * under paranoid or timing). */
static DMM_ALWAYS_INLINE dmm_gaddr malloc_fast(dmm_spm *s, size_t size)
{
    size_t cls = r16(size);
    if (!s->tc_on || size - 1u >= s->max_object) /* size 0 wraps */
        return 0;
    unsigned k = s->open_hot;
    const spm_open *o = &s->open[k];
    if (o->cls != cls || !o->seg) {
        for (k = 0; k < SPM_OPEN; k++)
            if (s->open[k].cls == cls && s->open[k].seg)
                break;
        if (k == SPM_OPEN)
            return 0;
        o = &s->open[k];
    }
    dmm_gaddr seg = o->seg;
    unsigned fi = s->last_frame;
    if (s->frames[fi].seg != seg) {
        fi = frame_hint(s, seg);
        if (s->frames[fi].seg != seg)
            return 0;
    }
    spm_frame *f = &s->frames[fi];
    const spm_seghdr *h = hdr_of(f);
    if (h->slot_size != cls || o->from >= h->units)
        return 0;
    spm_entry *e = entry_of(f, o->from);
    if ((e->flags & (SPM_E_VALID | SPM_E_RESIDENT)) != (SPM_E_VALID | SPM_E_RESIDENT) || !e->local4 ||
        e->live == (uint16_t)((1u << e->slots) - 1u))
        return 0;
    spm_unit *u = unit_at(s, e);
    unsigned slot = dmm_ctz(~(size_t)e->live);
    e->live = (uint16_t)(e->live | 1u << slot);
    f->dirty = true;
    s->open_hot = (uint8_t)k;
    s->last_frame = fi;
    f->stamp = (uint32_t)++s->tick;
    s->st.live_objects++;
    s->st.live_bytes += cls;
    s->st.calls[DMM_SPM_FN_MALLOC]++;
    s->last = DMM_OK;
    size_t o_ = (size_t)slot * cls;
    dmm_gaddr a = u->gaddr + o_;
    uint8_t *l = udata(u) + o_;
    (void)tc_put(s, a, a, cls, l, u);
    xc_put(s, &(spm_xlate){.g = a, .l = l, .u = u, .n = cls}, slot);
    return a;
}

/* The general path out of line: dmm_spm_malloc's short path then saves and
 * restores no registers for it. */
static DMM_NOINLINE dmm_gaddr malloc_slow(dmm_spm *s, size_t size)
{
    spm_clock c = t_begin(s);
    paranoid_sweep(s);
    dmm_gaddr a = do_malloc(s, size, false);
    t_end(s, DMM_SPM_FN_MALLOC, c);
    return a;
}

dmm_gaddr dmm_spm_malloc(dmm_spm *s, size_t size)
{
    if (!s)
        return 0;
    dmm_gaddr fast = malloc_fast(s, size);
    if (fast)
        return fast;
    return malloc_slow(s, size);
}

dmm_gaddr dmm_spm_calloc(dmm_spm *s, size_t n, size_t size)
{
    if (!s)
        return 0;
    spm_clock c = t_begin(s);
    paranoid_sweep(s);
    dmm_gaddr a = 0;
    if (size && n > (size_t)-1 / size)
        s->last = DMM_E_RANGE;
    else
        a = do_malloc(s, n * size, true);
    t_end(s, DMM_SPM_FN_MALLOC, c);
    return a;
}

/* The general path out of line (as malloc_slow). */
static DMM_NOINLINE void free_slow(dmm_spm *s, dmm_gaddr a)
{
    spm_clock c = t_begin(s);
    do_free(s, a, &(spm_ref){.f = NULL});
    t_end(s, DMM_SPM_FN_FREE, c);
}

/* The free of the last object of resident unit u, whose page is in frame f
 * (free_fast found it live): do_free without resolving it again. */
static DMM_NOINLINE void free_last(dmm_spm *s, dmm_gaddr a, spm_unit *u, spm_frame *f)
{
    spm_ref r;
    r.seg = u->entry & ~(dmm_gaddr)(s->cfg.segment - 1);
    r.idx = (unsigned)((u->entry - r.seg - SPM_HDR_BYTES) / DMM_SPM_ENTRY_BYTES);
    r.slot = u->slots == 1 ? 0u : (unsigned)((a - u->gaddr) / (u->bytes / u->slots));
    r.unit = u->gaddr;
    r.f = f;
    spm_clock c = t_begin(s);
    do_free(s, a, &r);
    t_end(s, DMM_SPM_FN_FREE, c);
}

/* free's common case without do_free: the object that starts at a is named
 * by its start in the hit path's cache or the translation cache (so it is
 * live, in a resident unit that is not a piece: the caches' invariant,
 * dmm_spm_check), its page is in the last frame used or its hinted frame,
 * and its unit keeps another live object (so no unit is dropped and no
 * segment empties).  It does what do_free does for that case, with the
 * object's translations dropped where the caches name it and the live bit
 * checked in the entry in its frame.  When the object is its unit's last,
 * free_last hands the unit and frame it found to do_free (the page's
 * bookkeeping done, as free_ref's), so that do_free does not resolve it
 * again; in any other doubt nothing is changed and free_slow's do_free
 * resolves and reports.  The general paths are tail calls with their
 * arguments in registers, so the short path needs no stack frame (an
 * spm_ref passed by address cost dijkstra's frees ~11 instructions each).
 * Only where the hit path's cache is on (not under paranoid or timing). */
static DMM_ALWAYS_INLINE void free_fast(dmm_spm *s, dmm_gaddr a)
{
    if (!s->tc_on) {
        free_slow(s, a);
        return;
    }
    spm_tc *t = tc_slot(s, a);
    spm_unit *u;
    size_t n;
    if (t->n && t->g == a) { /* a piece's tagged g never equals a */
        u = t->u;
        n = (size_t)t->n;
    } else {
        const spm_xc *x = &s->xc[xc_index(s, a)];
        if (!x->n4 || ((dmm_gaddr)x->g4 << 4) != a) {
            free_slow(s, a);
            return;
        }
        u = xc_unit(s, x);
        n = (size_t)x->n4 << 4;
    }
    dmm_gaddr seg = u->entry & ~(dmm_gaddr)(s->cfg.segment - 1);
    unsigned fi = s->last_frame;
    if (s->frames[fi].seg != seg) {
        fi = frame_hint(s, seg);
        if (s->frames[fi].seg != seg) {
            free_slow(s, a);
            return;
        }
    }
    spm_frame *f = &s->frames[fi];
    spm_entry *e = (spm_entry *)(void *)(f->mem + (u->entry - seg));
    unsigned slot = u->slots == 1 ? 0u : (unsigned)((a - u->gaddr) / n);
    unsigned idx = (unsigned)((u->entry - seg - SPM_HDR_BYTES) / DMM_SPM_ENTRY_BYTES);
    uint16_t bit = (uint16_t)(1u << slot), live = e->live;
    if (!(live & bit)) { /* cannot be (the caches name live objects): do_free reports */
        free_slow(s, a);
        return;
    }
    s->last_frame = fi; /* page_frame's bookkeeping, as free_ref's */
    f->stamp = (uint32_t)++s->tick;
    if (live == bit) { /* its unit's last object: do_free drops the unit */
        free_last(s, a, u, f);
        return;
    }
    tc_drop_object(s, a, n);
    xc_drop_object(s, a);
    e->live = (uint16_t)(live & ~bit);
    f->dirty = true;
    /* unit idx has room now: the segment's record (one per segment,
     * open_add), first asked where the last malloc took a unit from (a
     * program that frees what it allocated last) */
    unsigned k = s->open_hot;
    if (s->open[k].seg != seg)
        for (k = 0; k < SPM_OPEN && s->open[k].seg != seg; k++)
            ;
    if (k < SPM_OPEN && s->open[k].from > idx)
        s->open[k].from = (uint16_t)idx;
    s->st.live_objects--;
    s->st.live_bytes -= n;
    s->st.calls[DMM_SPM_FN_FREE]++;
    s->last = DMM_OK;
}

void dmm_spm_free(dmm_spm *s, dmm_gaddr a)
{
    if (!s || a == 0)
        return;
    free_fast(s, a);
}

size_t dmm_spm_size(dmm_spm *s, dmm_gaddr a)
{
    spm_ref r;
    if (!s)
        return 0;
    s->last = DMM_OK;
    if (!lookup(s, a, DMM_OP_USABLE_SIZE, true, &r))
        return 0;
    return hdr_of(r.f)->slot_size;
}

/* Remembers t, the object in slot `slot` of its unit, in the translation
 * cache (its entry by start address). */
static void xc_put(dmm_spm *s, const spm_xlate *t, unsigned slot)
{
    spm_xc *x = &s->xc[xc_index(s, t->g)];
    x->g4 = (uint32_t)(t->g >> 4);
    x->u4 = (uint16_t)(((uint8_t *)t->u - s->local) >> 4);
    x->n4 = (uint16_t)(t->n >> 4);
    t->u->xcm = (uint16_t)(t->u->xcm | 1u << slot); /* for xc_drop_unit */
}

/* Remembers x as the last translation, in the next recent slot. */
static void recent_add(dmm_spm *s, const spm_xlate *x)
{
    unsigned i = s->recent_next;
    s->recent_next = i + 1 < SPM_RECENT ? i + 1 : 0;
    s->recent[i] = *x;
    s->recent_last = i;
}

/* Remembers r's object (resident in u) as the last one resolved and in
 * the translation cache. */
static void tlb_fill(dmm_spm *s, const spm_ref *r, spm_unit *u)
{
    size_t n = hdr_of(r->f)->slot_size;
    spm_xlate t;
    t.g = r->unit + (dmm_gaddr)r->slot * n;
    t.l = udata(u) + (size_t)r->slot * n;
    t.u = u;
    t.n = n;
    recent_add(s, &t);
    xc_put(s, &t, r->slot);
}

/* A live object of a resident unit, found through its table page when that
 * page is in a frame (reading a frame is a local access, as reading the
 * translations is): the segment of a, its frame, the entry and the slot, a
 * few dozen instructions and no port call, where the general path peeks the
 * segment header, looks the frame up twice and resolves the translations
 * again.  Nothing is reported and nothing changes but the frame's use stamp
 * (as the general path's lookup sets it): any doubt (a's page not resident,
 * a header that is not ours, no live object at a, its unit not resident)
 * returns NULL and the general path decides and reports.  *x describes the
 * object. */
static DMM_NOINLINE spm_unit *resident_in_frame(dmm_spm *s, dmm_gaddr a, spm_xlate *x, spm_ref *m)
{
    dmm_gaddr seg = a & ~(dmm_gaddr)(s->cfg.segment - 1);
    unsigned fi = frame_hint(s, seg);
    if (!seg)
        return NULL;
    if (s->frames[fi].seg != seg) {
        /* segments share hint slots (SPM_FHINT of them): the page may be in
         * another frame, found by one compare per frame, where the general
         * path (lookup) costs a few hundred instructions for the same answer */
        int k = frame_of(s, seg);
        if (k < 0)
            return NULL;
        fi = (unsigned)k;
        s->fhint[fhint_index(s, seg)] = (uint8_t)fi;
    }
    spm_frame *f = &s->frames[fi];
    const spm_seghdr *h = hdr_of(f);
    size_t stride = stride_of(h);
    uint64_t off = a - seg;
    size_t d = data_off(s, seg);
    if (h->magic != (SPM_MAGIC ^ (uint32_t)(seg >> 4)) || h->core != s->core || stride == 0 || off < d)
        return NULL;
    uint64_t k = off - d, i = k / stride;
    if (i >= h->units || i >= s->page_entries)
        return NULL;
    const spm_entry *e = entry_of(f, (unsigned)i);
    uint64_t in = k - i * stride;
    unsigned slot = (unsigned)(in / h->slot_size);
    if ((e->flags & (SPM_E_VALID | SPM_E_RESIDENT)) != (SPM_E_VALID | SPM_E_RESIDENT) || !(e->live >> slot & 1u) ||
        e->local4 == 0) {
        if (m && (e->flags & (SPM_E_VALID | SPM_E_RESIDENT)) == SPM_E_VALID && (e->live >> slot & 1u)) {
            /* a live object of a unit that is not resident: everything the
             * general path's lookup would check for a p2s has been checked
             * (the header is this core's, a lies in a unit, its slot is
             * live), so the miss path takes this instead of walking the
             * page again (dfs: 1,181 fetches at the Table II size, ~160
             * instructions each); the bookkeeping is lookup's
             * (page_frame: the frame's use stamp, the last frame) */
            s->last_frame = fi;
            f->stamp = (uint32_t)++s->tick;
            m->seg = seg;
            m->idx = (unsigned)i;
            m->slot = slot;
            m->unit = seg + d + i * stride;
            m->f = f;
        }
        return NULL;
    }
    spm_unit *u = unit_at(s, e);
    s->last_frame = fi;
    f->stamp = (uint32_t)++s->tick;
    s->uh_u = u;
    s->uh_e = e;
    s->uh_g = seg + d + i * stride;
    s->uh_bytes = (uint32_t)stride;
    s->uh_slot = h->slot_size;
    s->uh_f = (uint8_t)fi;
    size_t o = (size_t)slot * h->slot_size;
    x->g = seg + d + i * stride + o;
    x->n = h->slot_size;
    x->l = udata(u) + o;
    x->u = u;
    return u;
}

/* The hit path: a live resident object found among the translations
 * (recent ones by range; the table page in its frame, resident_in_frame;
 * then the cache by start address); NULL when it is
 * not there.  Marks the unit dirty (p2s, pin), sets its clock bit.  asked:
 * the caller's miss_hit asked the unit hint and the translation cache
 * already, so they are not asked again. */
/* The unit of a live resident object containing a, found among the
 * translations (recent ones by range, then the cache by start address)
 * without reading a table page; NULL when it is not there. */
static spm_unit *resident_unit(const dmm_spm *s, dmm_gaddr a)
{
    for (unsigned i = 0; i < SPM_RECENT; i++)
        if (s->recent[i].n && a - s->recent[i].g < s->recent[i].n)
            return s->recent[i].u;
    const spm_xc *x = &s->xc[xc_index(s, a)];
    dmm_gaddr g = (dmm_gaddr)x->g4 << 4;
    return x->n4 && a - g < (dmm_gaddr)x->n4 << 4 ? xc_unit(s, x) : NULL;
}

static inline void *p2s_hit(dmm_spm *s, dmm_gaddr a, bool dirty, unsigned pin, spm_ref *m, bool asked)
{
    const spm_xlate *r = NULL;
    spm_xlate t;
    for (unsigned i = 0; !r && i < SPM_RECENT; i++)
        if (s->recent[i].n && a - s->recent[i].g < s->recent[i].n) {
            s->recent_last = i;
            r = &s->recent[i];
        }
    if (!r && !asked && s->uh_u && a - s->uh_g < s->uh_bytes) {
        /* in the unit last resolved through its page, that page still in its
         * frame (so its entry is current): a live slot of the unit is the
         * answer (the unit is resident: xc_drop_unit clears the hint when it
         * leaves, as it clears the unit's xc entries) */
        unsigned slot = (unsigned)((a - s->uh_g) / s->uh_slot);
        const spm_entry *e = s->uh_e;
        if (e->live >> slot & 1u) {
            spm_frame *f = &s->frames[s->uh_f];
            s->last_frame = s->uh_f;
            f->stamp = (uint32_t)++s->tick;
            size_t o = (size_t)slot * s->uh_slot;
            t.g = s->uh_g + o;
            t.n = s->uh_slot;
            t.l = udata(s->uh_u) + o;
            t.u = s->uh_u;
            xc_put(s, &t, slot);
            recent_add(s, &t);
            r = &s->recent[s->recent_last];
        }
    }
    if (!r && !asked) {
        /* the translation cache before the page: one hashed entry against
         * resident_in_frame's decode of the page (~120 instructions) */
        const spm_xc *x = &s->xc[xc_index(s, a)];
        dmm_gaddr g = (dmm_gaddr)x->g4 << 4;
        if (x->n4 && a - g < (dmm_gaddr)x->n4 << 4) {
            t.u = xc_unit(s, x);
            t.g = g;
            t.n = (size_t)x->n4 << 4;
            t.l = udata(t.u) + (g - t.u->gaddr);
            recent_add(s, &t);
            r = &s->recent[s->recent_last];
        }
    }
    if (!r) {
        if (!resident_in_frame(s, a, &t, m))
            return NULL;
        /* for when its page has left the frames (t.n is the slot size) */
        xc_put(s, &t, t.u->slots == 1 ? 0u : (unsigned)((t.g - t.u->gaddr) / t.n));
        recent_add(s, &t);
        r = &s->recent[s->recent_last];
    }
    spm_unit *u = r->u;
    if (dirty)
        u->dirty = 1;
    s->st.p2s_hits++;
    u->ref = 1;
    u->pins += pin;
    tc_fill(s, a, r->g, r->n, r->l, u);
    return r->l + (a - r->g);
}

/* tried: the caller's p2s_hit found nothing just before (the miss path), so
 * it is not asked again. */
static void *p2s_core(dmm_spm *s, dmm_gaddr a, bool dirty, unsigned pin, bool tried, const spm_ref *m)
{
    void *hit = tried ? NULL : p2s_hit(s, a, dirty, pin, NULL, false);
    if (hit)
        return hit;
    spm_ref r;
    spm_unit *u;
    if (m && m->f) /* the hit path found a's entry, valid and live, not resident */
        r = *m;
    else if (!lookup(s, a, DMM_OP_P2S, false, &r))
        return NULL;
    u = make_resident(s, &r, dirty);
    if (!u)
        return NULL;
    u->pins += pin;
    tlb_fill(s, &r, u);
    const spm_xlate *x = &s->recent[s->recent_last];
    tc_fill(s, a, x->g, x->n, x->l, u);
    return udata(u) + (a - r.unit);
}

static void *part_core(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n, bool dirty, const spm_ref *m);

dmm_gaddr dmm_spm_realloc(dmm_spm *s, dmm_gaddr a, size_t size)
{
    if (!s)
        return 0;
    if (a == 0) {
        spm_clock c = t_begin(s);
        paranoid_sweep(s);
        dmm_gaddr b = do_malloc(s, size, false);
        t_end(s, DMM_SPM_FN_REALLOC, c);
        return b;
    }
    spm_clock c = t_begin(s);
    dmm_gaddr out = 0;
    spm_ref r;
    if (size == 0) {
        do_free(s, a, &(spm_ref){.f = NULL});
    } else if (lookup(s, a, DMM_OP_REALLOC, true, &r)) {
        size_t old = hdr_of(r.f)->slot_size;
        if (size <= old) {
            out = a; /* fits its slot: stays */
        } else {
            paranoid_sweep(s);
            dmm_gaddr b = do_malloc(s, size, false);
            if (b) {
                size_t n = old < size ? old : size;
                bool ok = true;
                for (size_t o = 0; o < n && ok; o += SPM_BOUNCE) {
                    size_t k = n - o < SPM_BOUNCE ? n - o : SPM_BOUNCE;
                    /* an object out of core only in pieces, others whole */
                    const uint8_t *src = old > s->max_object ? part_core(s, a, a + o, k, false, NULL)
                                                             : p2s_core(s, a + o, false, 0, false, NULL);
                    ok = src != NULL;
                    if (ok)
                        dmm_port_memcpy(s->bounce, src, k);
                    uint8_t *dst = !ok ? NULL
                                   : size > s->max_object ? part_core(s, b, b + o, k, true, NULL)
                                                          : p2s_core(s, b + o, true, 0, false, NULL);
                    ok = dst != NULL;
                    if (ok)
                        dmm_port_memcpy(dst, s->bounce, k);
                }
                if (ok) {
                    do_free(s, a, &(spm_ref){.f = NULL});
                    out = b;
                } else {
                    dmm_status st = s->last;
                    do_free(s, b, &(spm_ref){.f = NULL});
                    s->last = st;
                }
            }
        }
    }
    t_end(s, DMM_SPM_FN_REALLOC, c);
    return out;
}

/* A p2s that hits moves no data and makes no port call: without paranoid
 * sweeps or host timing, it is counted and answered here, before the
 * general path (which the compiler then keeps out of the caller's way). */
static inline bool fast_ok(const dmm_spm *s)
{
    return s->tc_on; /* set at create: harden != PARANOID && !timing (one load, not two) */
}

static inline void *fast_p2s(dmm_spm *s, dmm_gaddr a, bool dirty, unsigned pin, spm_ref *m, bool asked)
{
    void *p = fast_ok(s) ? p2s_hit(s, a, dirty, pin, m, asked) : NULL;
    if (p) {
        s->st.calls[DMM_SPM_FN_P2S]++;
        s->last = DMM_OK;
    }
    return p;
}

/* The general path of p2s, p2s_ro and pin (out of line: the hit path
 * above stays small). */
static DMM_NOINLINE void *p2s_slow(dmm_spm *s, dmm_gaddr a, bool dirty, unsigned pin, bool tried, const spm_ref *m)
{
    spm_clock c = t_begin(s);
    paranoid_sweep(s);
    void *p = p2s_core(s, a, dirty, pin, tried, m);
    t_end(s, DMM_SPM_FN_P2S, c);
    return p;
}

/* The second level of the hit path, for the misses of its 8-entry cache
 * (in the rewritten dijkstra at the Table II size, 2,890 of 7,413
 * translations missed it, all of resident objects, at ~175 instructions
 * each; rbtree and stringsearch alike): the two answers that need no search
 * come first, then p2s_hit's full search (recent translations by range, the
 * page in its frame).
 * - The translation cache's entry of a, when its object contains a: asked
 *   inline in dmm_spm_p2s, p2s_ro and pin (xc_hit, below), before this.
 * - The unit hint (the unit resolved last through its page, that page still
 *   in its frame, so its entry is current): a live slot of the unit is a
 *   live object of a resident unit (xc_drop_unit clears the hint when the
 *   unit leaves).  Here, out of line: with the cache in an idle frame it
 *   answers few (dijkstra: 16 of 2,890).
 * Either is a hit as in p2s_hit: the unit gets its dirty flag (p2s, pin),
 * clock bit and pins, the stats count it, the hit path's entry of a is
 * filled; the recent translations are left as they are (only p2s_hit's
 * callers read the slot it fills; the miss functions below return).  Only
 * where the hit path's cache is on (not under paranoid or timing, whose
 * every call takes the general path). */
static inline void *miss_hit(dmm_spm *s, dmm_gaddr a, bool dirty, unsigned pin)
{
    /* the translation cache was asked first, inline in the caller (xc_hit);
     * only the unit hint is left here */
    if (!fast_ok(s) || !s->uh_u || a - s->uh_g >= s->uh_bytes)
        return NULL;
    unsigned slot = (unsigned)((a - s->uh_g) / s->uh_slot);
    if (!(s->uh_e->live >> slot & 1u))
        return NULL;
    spm_frame *f = &s->frames[s->uh_f];
    s->last_frame = s->uh_f;
    f->stamp = (uint32_t)++s->tick;
    size_t n = s->uh_slot;
    dmm_gaddr g = s->uh_g + (dmm_gaddr)slot * n;
    spm_unit *u = s->uh_u;
    uint8_t *l = udata(u) + (g - u->gaddr);
    u->pins += pin;
    s->last = DMM_OK;
    /* the hit path's entry of a takes the object, and this call is counted
     * in it as one hit of the kind asked (written or read): folding the
     * entry (tc_fold, when it is replaced or dropped, before a victim
     * search or a flush, and in dmm_spm_get_stats) marks the unit dirty
     * and used and counts the call, as for the hits the entry answers
     * itself; ~10 instructions fewer than setting them here */
    spm_tc *e = tc_put(s, a, g, n, l, u);
    e->w = dirty;
    e->r = !dirty;
    return l + (a - g);
}

/* The first question after a miss of the hit path's 8 entries, asked inline
 * in dmm_spm_p2s, p2s_ro and pin (e: a's entry there, which missed): the
 * translation cache's entry of a, when its object contains a (each entry
 * names a live object of a resident unit: entries go when their unit
 * leaves or their object is freed; dmm_spm_check verifies them).  Such a
 * miss is answered as miss_hit answers one: the entry e takes the object
 * (its old counts folded first) with this call counted in it, the unit
 * gets its pin.  Leaf code that needs no register saves or stack frame, so
 * the compiler keeps it in the caller's miss branch without touching the
 * 10-instruction hit path; before, these misses went through p2s_miss's
 * call, prologue and epilogue (~20 instructions each; in the rewritten
 * dijkstra at the Table II size 2,848 of its 2,890 misses are answered
 * here).  NULL: not answered (or the hit path's cache is off: paranoid,
 * timing), the caller goes on out of line. */
static DMM_ALWAYS_INLINE void *xc_hit(dmm_spm *s, dmm_gaddr a, spm_tc *e, bool dirty, unsigned pin)
{
    if (!fast_ok(s))
        return NULL;
    const spm_xc *x = &s->xc[xc_index(s, a)];
    dmm_gaddr g = (dmm_gaddr)x->g4 << 4;
    size_t n = (size_t)x->n4 << 4;
    if (a - g >= n) /* n == 0: empty */
        return NULL;
    spm_unit *u = xc_unit(s, x);
    uint8_t *l = udata(u) + (g - u->gaddr);
    u->pins += pin;
    s->last = DMM_OK;
    /* the old contents retired: an empty entry counts nothing (tc_retire
     * zeroes the counts it empties; dmm_spm_check verifies it), so the fold
     * needs no test of n, and the hit path keeps comparing n in memory */
    tc_fold(s, e);
    e->g = g;
    e->l = l;
    e->u = u;
    e->n = n;
    e->w = dirty;
    e->r = !dirty;
    return l + (a - g);
}

/* p2s and p2s_ro that the translation cache cannot answer.  (The search
 * after miss_hit stays inline: moved out of line behind a tail call, it
 * saved the answered misses a few register saves but cost each full search
 * a call, and dfs, whose misses are real, 11 k instructions more.) */
static DMM_NOINLINE void *p2s_miss(dmm_spm *s, dmm_gaddr a, bool dirty)
{
    void *l = miss_hit(s, a, dirty, 0);
    if (l)
        return l;
    spm_ref m;
    m.f = NULL;
    void *hit = fast_p2s(s, a, dirty, 0, &m, true);
    return hit ? hit : p2s_slow(s, a, dirty, 0, fast_ok(s), &m);
}

/* pin that the translation cache cannot answer: a resident object among the
 * translations needs no table walk either (out of line: pin's hit path
 * stays as short as before). */
static DMM_NOINLINE void *pin_miss(dmm_spm *s, dmm_gaddr a)
{
    void *l = miss_hit(s, a, true, 1);
    if (l)
        return l;
    spm_ref m;
    m.f = NULL;
    void *hit = fast_p2s(s, a, true, 1, &m, true);
    return hit ? hit : p2s_slow(s, a, true, 1, fast_ok(s), &m);
}

/* The hit path (docs/spm.md): the entry of a's 32-byte block holds a live
 * resident object containing a: count the hit in the entry (folded into the
 * unit's dirty flag and clock bit and into the stats later) and answer.
 * Ten instructions on x86-64 (callgrind: scripts/spm_hitpath.sh).  s must
 * not be NULL (it is read first). */
void *dmm_spm_p2s(dmm_spm *s, dmm_gaddr a)
{
    spm_tc *e = tc_slot(s, a);
    dmm_gaddr off = a - e->g;
    if (DMM_LIKELY(off < e->n)) {
        e->w++;
        return e->l + off;
    }
    void *l = xc_hit(s, a, e, true, 0);
    return l ? l : p2s_miss(s, a, true);
}

const void *dmm_spm_p2s_ro(dmm_spm *s, dmm_gaddr a)
{
    spm_tc *e = tc_slot(s, a);
    dmm_gaddr off = a - e->g;
    if (DMM_LIKELY(off < e->n)) {
        e->r++;
        return e->l + off;
    }
    const void *l = xc_hit(s, a, e, false, 0);
    return l ? l : p2s_miss(s, a, false);
}

/* pin and unpin of an object the hit path's cache holds (its entry of a
 * covers a): pin is a p2s hit plus a pin (counted as a p2s hit: the entry's
 * write count marks the unit dirty when folded); unpin of a pinned unit only
 * drops a pin.  Anything else takes the general path, as under paranoid and
 * timing, which never fill the cache. */
void *dmm_spm_pin(dmm_spm *s, dmm_gaddr a)
{
    if (!s)
        return NULL;
    spm_tc *e = tc_slot(s, a);
    dmm_gaddr off = a - e->g;
    if (off < e->n) {
        e->w++;
        e->u->pins++;
        return e->l + off;
    }
    void *l = xc_hit(s, a, e, true, 1);
    return l ? l : pin_miss(s, a);
}

static DMM_NOINLINE void unpin_slow(dmm_spm *s, dmm_gaddr a);

/* The hit path of unpin: the object's entry of the hit path's cache, its
 * unit pinned.  The rest is out of line (unpin_slow), so that this path
 * saves no registers and sets up no frame (28 instructions before, the
 * prologue and stack frame of the general path included). */
void dmm_spm_unpin(dmm_spm *s, dmm_gaddr a)
{
    if (!s)
        return;
    spm_tc *e = tc_slot(s, a);
    if (a - e->g < e->n && e->u->pins) {
        e->u->pins--;
        s->st.calls[DMM_SPM_FN_S2P]++;
        s->last = DMM_OK;
        return;
    }
    /* the translation cache's entry of a, inline as xc_hit asks it (its
     * unit, pinned, loses the pin): no call, register saves or frame */
    if (fast_ok(s)) {
        const spm_xc *x = &s->xc[xc_index(s, a)];
        if (a - ((dmm_gaddr)x->g4 << 4) < (dmm_gaddr)x->n4 << 4) {
            spm_unit *u = xc_unit(s, x);
            if (u->pins) {
                u->pins--;
                s->st.calls[DMM_SPM_FN_S2P]++;
                s->last = DMM_OK;
                return;
            }
        }
    }
    unpin_slow(s, a);
}

static DMM_NOINLINE void unpin_slow(dmm_spm *s, dmm_gaddr a)
{
    /* a pinned object among the translations (the hit path's entry went to
     * another address since the pin): drop the pin without a table walk */
    spm_xlate x;
    spm_unit *pu = NULL;
    /* the translation cache was asked first, inline in dmm_spm_unpin (it
     * answers most: dijkstra and stringsearch at the Table II size); when
     * its entry named a's object, that unit holds no pin, and the others
     * find the same unit (each names the one resident unit holding a live
     * object at a), so the general path below reports */
    if (fast_ok(s) && s->uh_u && a - s->uh_g < s->uh_bytes &&
        (s->uh_e->live >> (unsigned)((a - s->uh_g) / s->uh_slot) & 1u))
        pu = s->uh_u; /* a live object of the unit hint's unit (as miss_hit) */
    if (!pu && fast_ok(s))
        pu = resident_unit(s, a);
    if (!pu && fast_ok(s))
        pu = resident_in_frame(s, a, &x, NULL);
    if (pu && pu->pins) {
        pu->pins--;
        s->st.calls[DMM_SPM_FN_S2P]++;
        s->last = DMM_OK;
        return;
    }
    spm_clock c = t_begin(s);
    spm_ref r;
    if (lookup(s, a, DMM_OP_S2P, false, &r)) {
        spm_entry *e = entry_of(r.f, r.idx);
        spm_unit *u = (e->flags & SPM_E_RESIDENT) ? unit_at(s, e) : NULL;
        if (!u || !u->pins)
            report(s, DMM_OP_S2P, DMM_ERR_INVALID_POINTER, a, "unpin of an object that is not pinned");
        else
            u->pins--;
    }
    t_end(s, DMM_SPM_FN_S2P, c);
}

/* p2s_part's general path: the object of a, then either the whole unit (as
 * p2s: it is resident already, or it is not a large unit of its own) or the
 * pieces covering [at, at + n), fetched as one local block. */
static void *part_core(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n, bool dirty, const spm_ref *m)
{
    spm_ref r;
    if (m && m->f) /* the hit path found a's entry, valid and live, not resident (as p2s_core) */
        r = *m;
    else if (!lookup(s, a, DMM_OP_P2S, false, &r))
        return NULL;
    const spm_seghdr *h = hdr_of(r.f);
    dmm_gaddr obj = r.unit + (dmm_gaddr)r.slot * h->slot_size;
    if (at < obj || n > h->slot_size || at - obj > h->slot_size - n) {
        report(s, DMM_OP_P2S, DMM_ERR_INVALID_POINTER, at, "p2s_part span outside the object");
        return NULL;
    }
    const spm_entry *e = entry_of(r.f, r.idx);
    if ((e->flags & SPM_E_RESIDENT) || !part_ok(s, h)) {
        spm_unit *u = make_resident(s, &r, dirty);
        if (!u)
            return NULL;
        tlb_fill(s, &r, u);
        const spm_xlate *x = &s->recent[s->recent_last];
        tc_fill(s, a, x->g, x->n, x->l, u);
        return udata(u) + (at - r.unit);
    }
    size_t pb = part_bytes(s), stride = stride_of(h);
    dmm_gaddr lo = r.unit + (at - r.unit) / pb * pb;
    dmm_gaddr hi = r.unit + (at + n - r.unit + pb - 1) / pb * pb;
    if (hi > r.unit + stride)
        hi = r.unit + stride;
    spm_unit *u = pieces_sweep(s, r.unit, stride, lo, hi, false, true);
    if (u) {
        s->st.p2s_hits++;
    } else {
        pieces_sweep(s, r.unit, stride, lo, hi, false, false);
        u = local_alloc(s, (size_t)(hi - lo), 1, lo, r.seg + SPM_HDR_BYTES + (dmm_gaddr)r.idx * DMM_SPM_ENTRY_BYTES);
        if (!u)
            return NULL;
        u->piece = 1;
        s->pieces++;
        dma_get(s, udata(u), lo, (size_t)(hi - lo));
        s->st.unit_fetches++;
        s->st.part_fetches++;
    }
    u->ref = 1;
    if (dirty)
        u->dirty = 1;
    s->piece4 = (uint16_t)(((uint8_t *)u - s->local) >> 4);
    /* in the entry of at, not a: the pieces of one object then take
     * different entries (rbtree's key array: every switch between two
     * pieces missed, at ~500 instructions, while both stayed resident) */
    tc_fill(s, at, u->gaddr | SPM_PIECE_TAG, u->bytes, SPM_PIECE_L, u);
    return udata(u) + (at - u->gaddr);
}

static DMM_NOINLINE void *part_slow(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n, bool dirty)
{
    /* the piece answered last (piece4, resident while set) covers the span:
     * a hit as part_fast's, with the same trust (a piece covering [at,
     * at + n) is of the object holding at), counted in the hit path's entry
     * of at, which takes the piece (as miss_hit does) */
    if (fast_ok(s) && s->piece4) {
        spm_unit *u = (spm_unit *)(void *)(s->local + (size_t)s->piece4 * 16u);
        dmm_gaddr off = at - u->gaddr;
        if (off < u->bytes && n <= u->bytes - off) {
            s->last = DMM_OK;
            spm_tc *e = tc_put(s, at, u->gaddr | SPM_PIECE_TAG, u->bytes, SPM_PIECE_L, u);
            e->w = dirty;
            e->r = !dirty;
            return udata(u) + off;
        }
    }
    /* a's object resident whole, among the translations: as p2s's hit;
     * else m holds its reference when the hit path decoded it from its page
     * (a large object in pieces: its unit is not resident), which spares
     * part_core the page walk (lookup, ~160 instructions) */
    spm_ref m;
    m.f = NULL;
    uint8_t *hit = fast_p2s(s, a, dirty, 0, &m, false);
    const spm_xlate *x = &s->recent[s->recent_last]; /* the object p2s_hit answered with */
    if (hit && at >= x->g && n <= x->n && at - x->g <= x->n - n)
        return hit + (at - a);
    spm_clock c = t_begin(s);
    paranoid_sweep(s);
    void *p = part_core(s, a, at, n, dirty, &m);
    t_end(s, DMM_SPM_FN_P2S, c);
    return p;
}

/* p2s_part's hit path: the hit path's entry of at holds a piece (tagged:
 * part_core fills pieces there) or an object that covers the span, or the
 * entry of a holds the whole object (p2s fills objects in their start's
 * entry).  An object that covers [at, at + n) is a's, as objects do not
 * overlap. */
static inline void *part_fast(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n, bool dirty)
{
    spm_tc *e = tc_slot(s, at);
    dmm_gaddr off = at - (e->g & ~SPM_PIECE_TAG);
    if (!(off < e->n && n <= e->n - off)) {
        e = tc_slot(s, a);
        off = at - (e->g & ~SPM_PIECE_TAG);
    }
    if (off < e->n && n <= e->n - off) {
        if (dirty)
            e->w++;
        else
            e->r++;
        return e->g & SPM_PIECE_TAG ? udata(e->u) + off : e->l + off;
    }
    return NULL;
}

void *dmm_spm_p2s_part(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n)
{
    if (!s)
        return NULL;
    n = n ? n : 1;
    void *p = part_fast(s, a, at, n, true);
    return p ? p : part_slow(s, a, at, n, true);
}

const void *dmm_spm_p2s_part_ro(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n)
{
    if (!s)
        return NULL;
    n = n ? n : 1;
    const void *p = part_fast(s, a, at, n, false);
    return p ? p : part_slow(s, a, at, n, false);
}

static DMM_NOINLINE dmm_gaddr s2p_slow(dmm_spm *s, const void *local);

dmm_gaddr dmm_spm_s2p(dmm_spm *s, const void *local)
{
    if (!s)
        return 0;
    const spm_xlate *x = &s->recent[s->recent_last];
    const uint8_t *q = (const uint8_t *)local;
    if (!s->cfg.timing && x->n && q >= x->l && (size_t)(q - x->l) < x->n) {
        s->st.calls[DMM_SPM_FN_S2P]++; /* the object resolved last */
        s->last = DMM_OK;
        return x->g + (dmm_gaddr)(q - x->l);
    }
    if (!s->cfg.timing) /* an object the p2s hit path answered for */
        for (unsigned i = 0; i < SPM_TC; i++) {
            const spm_tc *e = &s->tc[i];
            if (e->n && q >= e->l && (size_t)(q - e->l) < e->n) {
                s->st.calls[DMM_SPM_FN_S2P]++;
                s->last = DMM_OK;
                return e->g + (dmm_gaddr)(q - e->l);
            }
        }
    return s2p_slow(s, local);
}

static DMM_NOINLINE dmm_gaddr s2p_slow(dmm_spm *s, const void *local)
{
    spm_clock c = t_begin(s);
    dmm_gaddr out = 0;
    const uint8_t *p = (const uint8_t *)local;
    dmm_gaddr as_g = (dmm_gaddr)(uintptr_t)local;
    if (!p || p < s->heap_mem || p >= s->heap_mem + s->heap_bytes) {
        report(s, DMM_OP_S2P, DMM_ERR_FOREIGN_POINTER, as_g, "not a local address of this heap");
    } else if (s->recent[s->recent_last].n && p >= s->recent[s->recent_last].l &&
               (size_t)(p - s->recent[s->recent_last].l) < s->recent[s->recent_last].n) {
        const spm_xlate *x = &s->recent[s->recent_last]; /* the object resolved last */
        out = x->g + (dmm_gaddr)(p - x->l);
    } else {
        spm_unit *u = s->lru_head;
        while (u && !(p >= udata(u) && p < udata(u) + u->bytes))
            u = u->next;
        if (!u) {
            report(s, DMM_OP_S2P, DMM_ERR_INVALID_POINTER, as_g, "not inside a resident unit");
        } else {
            dmm_gaddr a = u->gaddr + (dmm_gaddr)(p - udata(u));
            spm_ref r;
            /* the slot must hold a live object (lookup reports it if not) */
            if (lookup(s, a, DMM_OP_S2P, false, &r)) {
                out = a;
                if (!u->piece) /* the caches name whole objects only */
                    tlb_fill(s, &r, u);
            }
        }
    }
    t_end(s, DMM_SPM_FN_S2P, c);
    return out;
}

dmm_status dmm_spm_flush(dmm_spm *s)
{
    if (!s)
        return DMM_E_NULL;
    tc_sweep(s);
    for (spm_unit *u = s->lru_head; u; u = u->next) {
        if (!u->dirty)
            continue;
        /* The unit stays dirty: a p2s address survives a flush (flush moves
         * nothing), so the core may go on writing through it. */
        dma_put(s, u->gaddr, udata(u), u->bytes);
        s->st.unit_writebacks++;
    }
    for (unsigned i = 0; i < s->cfg.table_frames; i++)
        frame_writeback(s, &s->frames[i]);
    return DMM_OK;
}

dmm_status dmm_spm_last_status(const dmm_spm *s) { return s ? s->last : DMM_E_NULL; }

dmm_spm_stats dmm_spm_get_stats(const dmm_spm *s)
{
    dmm_spm_stats st;
    if (s) {
        st = s->st;
        for (unsigned i = 0; i < SPM_TC; i++) /* hits the cache has not folded yet */
            if (s->tc[i].n) {
                st.p2s_hits += s->tc[i].w + s->tc[i].r;
                st.calls[DMM_SPM_FN_P2S] += s->tc[i].w + s->tc[i].r;
            }
        return st;
    }
    dmm_port_memset(&st, 0, sizeof st);
    return st;
}

size_t dmm_spm_stats_json(const dmm_spm_stats *st, char *buf, size_t cap)
{
    static const char *const fn[DMM_SPM_FN_COUNT] = {"malloc", "free", "realloc", "p2s", "s2p"};
    dmm_text t;
    dmm_text_init(&t, buf, cap);
    if (!st)
        return 0;
    dmm_text_str(&t, "{\"functions\":{");
    for (unsigned i = 0; i < DMM_SPM_FN_COUNT; i++) {
        dmm_text_str(&t, i ? ",\"" : "\"");
        dmm_text_str(&t, fn[i]);
        dmm_text_str(&t, "\":{\"calls\":");
        dmm_text_u64(&t, st->calls[i]);
        dmm_text_str(&t, ",\"sim_cycles\":");
        dmm_text_u64(&t, st->sim_cycles[i]);
        dmm_text_str(&t, ",\"host_ns\":");
        dmm_text_u64(&t, st->host_ns[i]);
        dmm_text_char(&t, '}');
    }
    dmm_text_char(&t, '}');
    const char *names[] = {"p2s_hits",        "unit_fetches",   "unit_evictions", "unit_writebacks",
                           "page_fetches",    "page_writebacks", "segment_requests",
                           "mailbox_words",   "live_objects",   "live_bytes",     "local_peak",
                           "errors",          "part_fetches"};
    uint64_t vals[] = {st->p2s_hits,       st->unit_fetches,    st->unit_evictions,
                       st->unit_writebacks, st->page_fetches,   st->page_writebacks,
                       st->segment_requests, st->mailbox_words, st->live_objects,
                       st->live_bytes,     st->local_peak,      st->errors,
                       st->part_fetches};
    for (unsigned i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        dmm_text_str(&t, ",\"");
        dmm_text_str(&t, names[i]);
        dmm_text_str(&t, "\":");
        dmm_text_u64(&t, vals[i]);
    }
    dmm_text_char(&t, '}');
    return t.len;
}

/* ---- checker -------------------------------------------------------------- */

static spm_unit *resident_by_gaddr(dmm_spm *s, dmm_gaddr g)
{
    for (spm_unit *u = s->lru_head; u; u = u->next)
        if (u->gaddr == g && !u->piece)
            return u;
    return NULL;
}

/* dmm_spm_check's two tests of a local block (a resident unit or a spare
 * block: a header of SPM_UHDR bytes, then u->bytes of data), shared by its
 * walks of the resident list and of the spare list: the block lies in the
 * local heap, in a local block that holds it; and whether it overlaps any
 * block of the list that starts at o (linked through next). */
static bool block_in_heap(const dmm_spm *s, spm_unit *u)
{
    return (uint8_t *)u >= s->heap_mem && udata(u) + u->bytes <= s->heap_mem + s->heap_bytes &&
           dmm_heap_usable_size(s->heap, u) >= SPM_UHDR + u->bytes;
}

static bool block_overlaps(spm_unit *u, spm_unit *o)
{
    for (; o; o = o->next)
        if ((uint8_t *)o < udata(u) + u->bytes && (uint8_t *)u < udata(o) + o->bytes)
            return true;
    return false;
}

dmm_status dmm_spm_check(dmm_spm *s, const char **reason)
{
    const char *r = NULL;
    if (!s || s->magic != SPM_MAGIC) {
        r = "not a scratchpad heap";
        goto out;
    }
    /* resident units */
    size_t n = 0;
    for (spm_unit *u = s->lru_head, *p = NULL; u; p = u, u = u->next) {
        if (++n > s->resident) {
            r = "LRU list longer than the resident count";
            goto out;
        }
        if (u->magic != SPM_UNIT_MAGIC || u->prev != p) {
            r = "resident unit header or LRU link broken";
            goto out;
        }
        if (!block_in_heap(s, u)) {
            r = "resident unit outside the local heap or larger than its local block";
            goto out;
        }
        if (block_overlaps(u, u->next)) {
            r = "resident units overlap";
            goto out;
        }
    }
    if (n != s->resident) {
        r = "resident count differs from the LRU list";
        goto out;
    }
    /* spare blocks: at most SPM_SPARE (none under paranoid), no header
     * magic, inside the local heap, each a local block that holds its size,
     * none overlapping a resident unit or another spare */
    n = 0;
    for (spm_unit *u = spare_first(s); u; u = u->next) {
        if (++n > s->nspare || n > SPM_SPARE || s->cfg.harden == DMM_HARDEN_PARANOID) {
            r = "spare list longer than its count or its bound";
            goto out;
        }
        if (u->magic != 0 || !block_in_heap(s, u)) {
            r = "spare block broken or outside the local heap";
            goto out;
        }
        if (block_overlaps(u, s->lru_head)) {
            r = "spare block overlaps a resident unit";
            goto out;
        }
        if (block_overlaps(u, u->next)) {
            r = "spare blocks overlap";
            goto out;
        }
    }
    if (n != s->nspare) {
        r = "spare count differs from the spare list";
        goto out;
    }
    /* table pages */
    uint64_t live = 0, resident_entries = 0;
    unsigned kept_found = 0;
    uint64_t guard = s->gsize / s->cfg.segment + 1;
    dmm_gaddr prev = 0;
    for (dmm_gaddr seg = s->seg_head; seg; guard--) {
        if (!guard || (seg & (s->cfg.segment - 1)) || seg + s->page > s->gsize) {
            r = "segment list broken";
            goto out;
        }
        spm_frame *f = page_frame(s, seg, true);
        spm_seghdr *h = hdr_of(f);
        if (h->magic != (SPM_MAGIC ^ (uint32_t)(seg >> 4)) || h->core != s->core ||
            h->prev != prev || h->units == 0 || h->units > s->page_entries || h->slots == 0 ||
            h->slots > DMM_SPM_MAX_GRAN || h->slot_size == 0 || (h->slot_size & 15u) ||
            (h->kind == SPM_KIND_LARGE && (h->units != 1 || h->slots != 1))) {
            r = "segment header broken";
            goto out;
        }
        unsigned used = 0, from = 0;
        for (unsigned k = 0; k < SPM_OPEN; k++)
            if (s->open[k].seg == seg && s->open[k].from > from)
                from = s->open[k].from;
        for (unsigned i = 0; i < h->units; i++) {
            spm_entry *e = entry_of(f, i);
            dmm_gaddr unit = seg + data_off(s, seg) + (dmm_gaddr)i * stride_of(h);
            if (i < from && (!(e->flags & SPM_E_VALID) || e->live != (uint16_t)((1u << e->slots) - 1u))) {
                r = "a unit with room before its open segment's scan start";
                goto out;
            }
            if (!(e->flags & SPM_E_VALID)) {
                if (e->flags || e->live) {
                    r = "free entry not clear";
                    goto out;
                }
                continue;
            }
            used++;
            if (e->gaddr4 != (uint32_t)(unit >> 4) || e->size4 != (uint16_t)(h->slot_size >> 4) ||
                e->slots != h->slots || e->live == 0 || (e->live >> e->slots)) {
                r = "entry fields disagree with its segment";
                goto out;
            }
            for (unsigned b = 0; b < e->slots; b++)
                live += e->live >> b & 1u;
            spm_unit *u = resident_by_gaddr(s, unit);
            if (e->flags & SPM_E_RESIDENT) {
                resident_entries++;
                if (!u || unit_at(s, e) != u || u->bytes != stride_of(h) ||
                    (e->flags & SPM_E_DIRTY) ||
                    u->entry != seg + SPM_HDR_BYTES + (dmm_gaddr)i * DMM_SPM_ENTRY_BYTES) {
                    r = "resident entry disagrees with its local unit";
                    goto out;
                }
            } else if (u || (e->flags & SPM_E_DIRTY) || e->local4) {
                r = "non-resident entry has a local copy";
                goto out;
            }
        }
        if (used != h->used) {
            r = "segment used count wrong";
            goto out;
        }
        /* an empty segment is an idle one (segment_empty), and vice versa */
        bool is_kept = false;
        for (unsigned k = 0; k < s->nkept; k++)
            is_kept |= s->kept[k] == seg;
        if ((used == 0) != is_kept || (is_kept && h->kind != SPM_KIND_SMALL)) {
            r = "an empty segment that is not idle, or an idle one in use";
            goto out;
        }
        kept_found += is_kept;
        prev = seg;
        seg = h->next;
    }
    /* pieces (partial transfers): inside a valid, live, non-resident unit
     * of one object larger than unit_bytes, aligned to unit_bytes from its
     * start, never overlapping another piece; the last ones translated are
     * among them */
    size_t pieces = 0;
    bool piece_hint = s->piece4 == 0; /* p2s_part's last piece: a resident piece */
    for (spm_unit *u = s->lru_head; u; u = u->next) {
        if (!u->piece)
            continue;
        pieces++;
        piece_hint |= (uint8_t *)u == s->local + (size_t)s->piece4 * 16u;
        spm_entry e;
        dmm_port_memcpy(&e, line_open(s, u->entry), sizeof e);
        dmm_gaddr unit = (dmm_gaddr)e.gaddr4 << 4;
        size_t ub = (size_t)e.size4 * 16u;
        if (!(e.flags & SPM_E_VALID) || (e.flags & SPM_E_RESIDENT) || e.slots != 1 || e.live != 1u ||
            ub <= part_bytes(s) || u->gaddr < unit || u->gaddr - unit >= ub || u->bytes > ub - (u->gaddr - unit) ||
            (u->gaddr - unit) % part_bytes(s) || u->bytes == 0 || u->pins) {
            r = "a piece names no large non-resident object";
            goto out;
        }
        for (spm_unit *o = u->next; o; o = o->next)
            if (o->piece && o->gaddr < u->gaddr + u->bytes && u->gaddr < o->gaddr + o->bytes) {
                r = "pieces overlap";
                goto out;
            }
    }
    if (pieces != s->pieces) {
        r = "piece count differs from the resident list";
        goto out;
    }
    if (!piece_hint) {
        r = "the last piece names no resident piece";
        goto out;
    }
    for (unsigned i = 0; i < SPM_TC; i++) { /* pieces in the hit path's cache: tagged, whole */
        const spm_tc *c = &s->tc[i];
        if (!c->n && (c->w | c->r)) { /* xc_hit folds an entry without asking whether it is empty */
            r = "an empty entry of the hit path's cache counts hits";
            goto out;
        }
        if (!c->n || !(c->g & SPM_PIECE_TAG))
            continue;
        spm_unit *u = s->lru_head;
        while (u && u != c->u)
            u = u->next;
        if (!u || !u->piece || (c->g & ~SPM_PIECE_TAG) != u->gaddr || c->n != u->bytes || c->l != SPM_PIECE_L) {
            r = "a piece translation names no resident piece";
            goto out;
        }
    }
    if (resident_entries != s->resident - s->pieces) {
        r = "a resident unit has no entry";
        goto out;
    }
    if (kept_found != s->nkept) {
        r = "an idle segment is not in the segment list";
        goto out;
    }
    if (live != s->st.live_objects) {
        r = "live objects differ from the live bits";
        goto out;
    }
    /* the unit hint names a resident unit (not a piece), its range and slot
     * size, and its entry's place in its frame */
    if (s->uh_u) {
        spm_unit *u = s->lru_head;
        while (u && u != s->uh_u)
            u = u->next;
        if (!u || u->piece || u->slots == 0 || s->uh_g != u->gaddr || s->uh_bytes != u->bytes ||
            s->uh_slot != u->bytes / u->slots || s->uh_f >= s->cfg.table_frames) {
            r = "unit hint names no resident unit";
            goto out;
        }
        /* its users trust the entry in its frame without comparing the
         * frame's segment (frame_repurpose clears the hint) */
        if (s->frames[s->uh_f].seg != (s->uh_g & ~(dmm_gaddr)(s->cfg.segment - 1))) {
            r = "unit hint names a frame that holds another page";
            goto out;
        }
    }
    /* the translation cache's place: home, or an idle frame (xc_home) */
    if (s->xc_frame ? s->xc_frame > s->cfg.table_frames || s->frames[s->xc_frame - 1u].seg != 0 ||
                          s->xc != (spm_xc *)(void *)s->frames[s->xc_frame - 1u].mem ||
                          s->xc_bits != xc_frame_bits(s)
                    : s->xc != xc_home(s) || s->xc_bits != s->xc_home_bits) {
        r = "translation cache misplaced (its frame holds a page, or a wrong size)";
        goto out;
    }
    /* translations: each names a live object at its place in a resident unit */
    /* (the translation cache, the recent ones, the hit path's cache) */
    for (unsigned i = 0; i < (1u << s->xc_bits) + SPM_RECENT + SPM_TC; i++) {
        unsigned j = i - (1u << s->xc_bits);
        spm_xlate y, *x = &s->recent[i < (1u << s->xc_bits) || j >= SPM_RECENT ? 0 : j];
        if (j >= SPM_RECENT && i >= (1u << s->xc_bits)) {
            const spm_tc *c = &s->tc[j - SPM_RECENT];
            y.g = c->g;
            y.n = c->g & SPM_PIECE_TAG ? 0 : (size_t)c->n; /* pieces: checked above */
            y.u = c->u;
            y.l = c->l;
            x = &y;
        } else if (i < (1u << s->xc_bits)) {
            const spm_xc *c = &s->xc[i];
            y.g = (dmm_gaddr)c->g4 << 4;
            y.n = (size_t)c->n4 << 4;
            y.u = xc_unit(s, c);
            y.l = y.n && y.g >= y.u->gaddr ? udata(y.u) + (y.g - y.u->gaddr) : NULL;
            x = &y;
        }
        if (!x->n)
            continue;
        spm_unit *u = s->lru_head;
        while (u && u != x->u)
            u = u->next;
        if (!u || u->slots == 0 || x->n != u->bytes / u->slots || x->g < u->gaddr ||
            x->g - u->gaddr >= u->bytes || (x->g - u->gaddr) % x->n ||
            x->l != udata(u) + (x->g - u->gaddr) ||
            (i < (1u << s->xc_bits) && xc_index(s, x->g) != i) ||
            /* xc_drop_unit looks only at the slots u->xcm marks */
            (i < (1u << s->xc_bits) && !(u->xcm >> (unsigned)((x->g - u->gaddr) / x->n) & 1u)) ||
            /* a hit-path entry sits at the slot of an address inside its
             * object (tc_drop_object and free_fast look only there) */
            (x == &y && i >= (1u << s->xc_bits) + SPM_RECENT &&
             ((x->g + x->n - 1u) >> 5) - (x->g >> 5) < SPM_TC - 1u &&
             (((j - SPM_RECENT) - (unsigned)(x->g >> 5)) & (SPM_TC - 1u)) > (unsigned)(((x->g + x->n - 1u) >> 5) - (x->g >> 5)))) {
            r = "translation cache entry names no object of a resident unit";
            goto out;
        }
        spm_entry e;
        dmm_port_memcpy(&e, line_open(s, u->entry), sizeof e);
        if (!(e.live >> ((x->g - u->gaddr) / x->n) & 1u)) {
            r = "translation cache entry names a freed object";
            goto out;
        }
    }
out:
    if (reason)
        *reason = r;
    return r ? DMM_E_CORRUPT : DMM_OK;
}

