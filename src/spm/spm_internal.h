/*
 * src/spm/spm_internal.h - the per-core scratchpad heap's private layout
 * (include/dmm/spm.h, docs/spm.md).  Shared by spm.c and config.c.
 *
 * Local memory [local, local+S):
 *   control block (struct dmm_spm, rounded to 16) | K table frames of P = T/K
 *   bytes | H: a dmm heap holding resident unit copies.
 * Global memory: segments of cfg.segment bytes aligned to their size.  A
 * segment starts with its table page (P bytes): a 32-byte segment header
 * (two 16-byte lines) and then M <= P/16 - 2 entries of 16 bytes, one per
 * unit; unit i lives at seg + P + colour + i * stride (colour: 0-7 32-byte
 * blocks, from the segment's number; spm.c, data_off).
 */
#ifndef DMM_SPM_INTERNAL_H
#define DMM_SPM_INTERNAL_H

#include "dmm/spm.h"

#define SPM_MAGIC 0x53504d43u      /* "SPMC"; the header stores it ^ (seg >> 4) */
#define SPM_UNIT_MAGIC 0x554eu     /* "UN" in a resident unit's local header (16 bits: xcm has the rest) */
#define SPM_HDR_BYTES 32u          /* segment header: two 16-byte lines */
#define SPM_UHDR 48u               /* local header in front of a resident unit */
#define SPM_MAX_FRAMES 16u
#define SPM_OPEN 8u               /* open-segment cache records */
#define SPM_BOUNCE 64u            /* realloc copies through this many bytes */
#define SPM_POISON 0xA5u           /* stale local bytes under paranoid */
#define SPM_RECENT 4u              /* objects resolved last, searched by range */
#define SPM_XC_MAX_BITS 6u         /* translation cache: at most 64 entries of 8 bytes */
#define SPM_XC_H_PER_ENTRY 256u    /* and one entry per 256 bytes of heap region */
#define SPM_KEEP 4u                /* empty segments kept for reuse, at most */
#define SPM_MAX_ALLOC (65535u * 16u) /* largest object: an entry holds its size in 16-byte steps */
#define SPM_SPARE 8u               /* freed units' local blocks kept for reuse, at most */
#define SPM_FHINT 4u              /* miss path: segment -> frame hints (a power of two) */
#define SPM_TC 8u                  /* hit-path translation cache: entries (a power of two) */
/* A hit-path cache entry (spm_tc) for a piece of a large unit (partial
 * transfers, dmm_spm_p2s_part) holds the piece's address with this bit set,
 * so p2s, pin and unpin never match it (global addresses are far below), and
 * SPM_PIECE_L as its local address, which no local address reaches, so s2p's
 * search never matches it either (s2p of a piece takes the general path);
 * only p2s_part uses it, with the piece's data found through its unit. */
#define SPM_PIECE_TAG ((dmm_gaddr)1 << 63)
#define SPM_PIECE_L ((uint8_t *)(uintptr_t)UINTPTR_MAX)

enum { SPM_KIND_SMALL = 0, SPM_KIND_LARGE = 1 };
/* SPM_E_DIRTY is reserved and always clear: whether a resident unit was
 * written is kept only in its local header, so the first write to a unit
 * touches no table page. */
enum { SPM_E_VALID = 1u, SPM_E_RESIDENT = 2u, SPM_E_DIRTY = 4u };

/* Segment header, the first 32 bytes of a table page. */
typedef struct spm_seghdr {
    uint32_t magic;     /* SPM_MAGIC ^ (uint32_t)(seg >> 4) */
    uint16_t core;      /* owner core */
    uint8_t kind;       /* SPM_KIND_SMALL / SPM_KIND_LARGE */
    uint8_t slots;      /* objects per unit */
    uint32_t slot_size; /* bytes per object (large: the object, rounded to 16) */
    uint16_t units;     /* M */
    uint16_t used;      /* valid entries */
    uint64_t prev;      /* the core's segment list (global addresses, 0 = none) */
    uint64_t next;
} spm_seghdr;

/* Table entry: 16 bytes, the seed's _HMDSEntry extended. */
typedef struct spm_entry {
    uint32_t gaddr4; /* unit global address >> 4 */
    uint32_t stamp;  /* fetch / creation stamp (the core's tick, low 32 bits) */
    uint16_t local4; /* resident: local offset of the unit's data >> 4 (0 = none) */
    uint16_t size4;  /* slot size >> 4 */
    uint16_t live;   /* bit i: slot i holds a live object */
    uint8_t slots;   /* slots in this unit */
    uint8_t flags;   /* SPM_E_VALID | SPM_E_RESIDENT (SPM_E_DIRTY: reserved, 0) */
} spm_entry;

/* Local header of a resident unit (inside a block of the local dmm heap). */
typedef struct spm_unit {
    uint64_t gaddr; /* the unit's global address */
    uint64_t entry; /* global address of its table entry */
    struct spm_unit *prev, *next; /* resident list, oldest at the tail (clock order) */
    uint32_t bytes; /* unit bytes (the stride) */
    uint32_t pins;
    uint16_t magic;
    /* bit i: slot i may have a translation-cache entry (xc_put sets it; it
     * is never cleared while the unit is resident, so it is a superset), so
     * that xc_drop_unit hashes only those slots' addresses instead of all
     * (dfs at the Table II size: 16 slots a unit, ~136 instructions per
     * eviction).  dmm_spm_check verifies it covers every entry. */
    uint16_t xcm;
    uint8_t dirty;
    uint8_t slots; /* objects per unit (bytes / slots = the slot size) */
    uint8_t ref;   /* clock bit: used since the victim search last passed it */
    uint8_t piece; /* a piece of a large unit (partial transfer): gaddr/bytes
                      are the piece's; the unit's entry stays non-resident */
} spm_unit;

_Static_assert(sizeof(spm_unit) <= SPM_UHDR, "a resident unit's local header outgrew SPM_UHDR");

/* One translation: the live object at global [g, g + n) is resident at
 * local l, in unit u (n == 0: empty). */
typedef struct spm_xlate {
    dmm_gaddr g;
    uint8_t *l;
    spm_unit *u;
    size_t n;
} spm_xlate;

/* The same, packed for the translation cache (it lives in local memory):
 * g = g4 * 16, n = n4 * 16, u at local offset u4 * 16 (S <= 1 MiB). */
typedef struct spm_xc {
    uint32_t g4;
    uint16_t u4;
    uint16_t n4;
} spm_xc;

/* One entry of the hit-path translation cache (dmm_spm_p2s / p2s_ro answer
 * from it without a call): the live resident object [g, g + n) is at local
 * l in unit u; w and r count the p2s and p2s_ro hits answered from it since
 * they were last folded into u (dirty, clock bit) and the stats.  Indexed by
 * the 32-byte block of the address asked for (tc_slot); 64 bytes, so that the index
 * is one shift and one mask.  n == 0: empty. */
typedef union spm_tc {
    struct {
        dmm_gaddr g;
        uint64_t n;
        uint8_t *l;
        uint64_t w, r;
        spm_unit *u;
    };
    unsigned char line[64]; /* 64 bytes whatever the pointer size (32-bit targets too) */
} spm_tc;

_Static_assert(sizeof(spm_tc) == 64, "spm_tc must stay 64 bytes (the hit path's index scale)");

typedef struct spm_frame {
    dmm_gaddr seg; /* the segment whose page is here (0 = free frame) */
    uint8_t *mem;
    /* the core's tick when the frame was last used (its low 32 bits, as the
     * entries' stamps: the LRU frame choice may be wrong once per 2^32
     * ticks, nothing else depends on it); 24 bytes a frame instead of 32
     * leave room for the unit hint in the control block */
    uint32_t stamp;
    bool dirty;
} spm_frame;

/* A segment with room for objects of class cls.  Every unit before index
 * `from` is valid and full (do_malloc raises it past the units its scan
 * found full, do_free lowers it to a unit it frees a slot in), so the scan
 * for a free slot starts there.  from sits in the padding after cls. */
typedef struct spm_open {
    uint32_t cls;
    uint16_t from;
    dmm_gaddr seg;
} spm_open;

struct dmm_spm {
    _Alignas(16) uint8_t scratch[16];     /* a 16-byte DMA line */
    _Alignas(16) uint8_t bounce[SPM_BOUNCE];
    spm_tc tc[SPM_TC]; /* see spm_tc; filled only without paranoid and timing */
    bool tc_on;
    /* The translation cache in an idle table frame (spm.c, xc_to_frame):
     * xc_frame = that frame's index + 1 (0 = the cache is at its home, the
     * entries carved after the frames or xc_one); xc_home_bits = log2 of
     * the home's entries (0: xc_one).  In tc_on's padding: the control
     * block does not grow. */
    uint8_t xc_frame, xc_home_bits;
    uint32_t magic;
    dmm_spm_config cfg;
    dmm_spm_global *g;
    unsigned core;
    dmm_spm_port port;
    uint64_t gsize;
    uint8_t *local;
    size_t size, control_bytes;
    size_t page, page_entries;
    uint8_t *table;
    dmm_heap *heap;
    uint8_t *heap_mem;
    size_t heap_bytes, max_object;
    spm_frame frames[SPM_MAX_FRAMES];
    unsigned last_frame;
    uint32_t pieces; /* resident units that are pieces (counted in `resident` too; in padding) */
    /* Translations of live resident objects, so that a p2s of a resident
     * object reads no table page: `recent` holds the SPM_RECENT objects p2s
     * or s2p resolved last (replaced in turn, recent_next; recent_last is
     * the very last), searched by address range (so they serve interior
     * addresses, as in a loop over an array, and the s2p that follows a p2s);
     * xc is direct-mapped by the object's start address, 2^xc_bits
     * entries carved from local memory after the table frames (one per
     * SPM_XC_H_PER_ENTRY bytes of heap region, at most 2^SPM_XC_MAX_BITS;
     * xc_bits = 0: the single entry xc_one).  An entry goes
     * when its unit leaves local memory or its object is freed, so a hit is
     * always a live, resident object. */
    spm_xlate recent[SPM_RECENT];
    /* The unit the miss path last resolved through its table page (uh_u,
     * resident; NULL = none): its slots [uh_g, uh_g + uh_bytes) of uh_slot
     * bytes, its entry uh_e in frame uh_f, which holds the page of uh_g's
     * segment while frames[uh_f].seg says so.  A translation that misses
     * the hit path's cache and falls in this unit (the next object of a
     * list allocated in a row: dijkstra's edges, dfs's adjacency nodes)
     * checks its slot's live bit in that entry instead of walking the page
     * again.  Cleared when the unit leaves local memory (xc_drop_unit).
     * These 32 bytes come from the frame descriptors (32 -> 24 bytes each:
     * a 32-bit stamp) and uh_f sits in padding: the control block, which
     * comes out of H, does not grow. */
    spm_unit *uh_u;
    const spm_entry *uh_e;
    dmm_gaddr uh_g;
    uint32_t uh_bytes, uh_slot;
    unsigned recent_next, recent_last;

    spm_xc *xc;
    unsigned xc_bits;
    spm_xc xc_one;
    uint8_t uh_f; /* see uh_u (in the padding after xc_one) */
    uint8_t open_hot; /* the open[] record the last malloc took a unit from (do_malloc; in the same padding) */
    /* The piece (partial transfer) p2s_part answered last, as its unit's
     * local offset / 16 (0 = none; S <= 1 MiB), so that the next access to
     * that piece finds it when the hit path's entry went to another address
     * (rbtree's key array: 2 pieces resident, 99 of its 143 part calls took
     * the general path, ~450 instructions each).  Cleared when the piece
     * leaves (evict_core).  In the same padding: the control block does not
     * grow. */
    uint16_t piece4;
    uint64_t cyc;    /* port cycles of the running API call (t_end charges them) */
    bool heap_full;  /* the local heap refused a unit and nothing was freed since */
    /* fhint[(seg >> seg_shift) % SPM_FHINT]: the frame that last held the
     * page of a segment with that index (page_frame sets it), so that the
     * miss path finds a resident page with one compare; a hint, checked
     * against the frame's seg, never trusted.  These 5 bytes sit in the
     * padding after heap_full: the control block (which comes out of local
     * memory, so out of H) does not grow. */
    uint8_t seg_shift; /* log2 cfg.segment */
    uint8_t fhint[SPM_FHINT];
    /* Units start at seg + P + colour: ((seg >> seg_shift) & colours) 32-byte
     * blocks (data_off), so objects at the same place of different segments
     * fall on different entries of the hit path's cache.  colours = 7, or 0
     * when a segment has no room to spare for it.  Also in the padding. */
    uint8_t colours;
    uint8_t nspare; /* spare blocks (see spare4), in the last byte of this padding */
    spm_unit *lru_head, *lru_tail;
    size_t resident;
    spm_unit *quarantine; /* paranoid: evicted, poisoned, not yet freed */
    spm_open open[SPM_OPEN];
    unsigned open_next;
    /* Spare local blocks (spm.c, spare_put / spare_take): the blocks of units
     * whose last object was freed, kept out of the local heap (at most
     * SPM_SPARE, nspare of them, linked through their headers' next, magic
     * 0), so that the next unit of the same byte size takes one without the
     * local heap's search and free (~300 + ~240 instructions).  Given back
     * to the local heap before any eviction (local_alloc); never under
     * paranoid.  The first one as its local offset / 16 (0 = none; S <= 1
     * MiB), here in open_next's padding, nspare after colours: the control
     * block does not grow (16 bytes more raised the rewritten fft's minimum
     * heap region at -n 1024 from 42 to 43 KiB). */
    uint16_t spare4;
    dmm_gaddr seg_head;
    /* Empty small segments kept for the next segment_new instead of being
     * handed back to the main core at once (at most SPM_KEEP; their header
     * line is cleared, so stale addresses into them are still reported). */
    dmm_gaddr kept[SPM_KEEP];
    unsigned nkept;
    dmm_status last; /* here, in nkept's padding (the control block: 1,888 bytes on x86-64) */
    uint64_t tick;
    size_t local_in_use;
    dmm_spm_stats st;
};

dmm_status dmm_spm_config_check_(const dmm_spm_config *cfg, const char **reason);

/* global.c: one per-core heap per core.  attach: DMM_OK, DMM_E_RANGE (no such
 * core), DMM_E_OVERLAP (a heap for that core exists); detach undoes it. */
dmm_status dmm_spm_global_attach_(dmm_spm_global *g, unsigned core);
void dmm_spm_global_detach_(dmm_spm_global *g, unsigned core);

#endif
