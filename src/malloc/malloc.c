/*
 * src/malloc/malloc.c - libdmm: per-thread heaps of size-class pages with
 * atomic remote frees, large blocks from the OS (docs/malloc.md).
 *
 * Memory comes in segments: SEG_SIZE-aligned mappings whose first bytes are
 * a header, so the segment of any block is its address rounded down.  A
 * small segment is cut into PAGES pages of PAGE_SIZE bytes; page 0 holds
 * the header (page descriptors and the hardening bitmaps), the others hold
 * blocks of one size class each.  A large block is a segment of its own,
 * as big as it needs, with the block after the header.
 *
 * Medium requests (up to MEDIUM_MAX) go to the thread heap's dmm policy
 * heap (include/dmm/heap.h; TLSF unless DMM_MEDIUM says otherwise), which
 * lives in medium segments: the first one holds its control block, more are
 * added as regions.  Another thread's free of a medium block goes onto the
 * owner's atomic mxfree list, drained by the owner on its next medium call.
 *
 * A thread heap (theap) owns pages.  Only the thread bound to it touches
 * its pages' local free lists and counts; any other thread frees into the
 * page's xfree list with a compare-and-swap, and the owner takes that list
 * whole when it runs out of local blocks.  A thread that exits gives back
 * what it can, then parks its heap on the abandoned list; a new thread
 * adopts a parked heap before making one.  A heap is never destroyed, so a
 * late remote free always finds its page; it frees straight into the
 * parked heap (taking it for the moment, HEAP_BUSY), so memory freed after
 * its owner exited is reusable and returned at once.
 *
 * A detected misuse aborts by default (DMM_ABORT_ON_ERROR=0: report and
 * continue).  DMM_SECURE=1 adds canaries, a quarantine and guard pages
 * ("secure mode" below).  Freed large mappings are cached (LC).
 *
 * Platform services come from the port (src/port/port.h): aligned pages,
 * discarding, thread keys, fork handlers, the environment, error output.
 *
 * Compile-time hooks (`dmmkit generate` sets them in the header named by
 * DMM_MALLOC_CONFIG_HEADER; docs/malloc.md, "Generated allocators"):
 *   DMM_MALLOC_MEDIUM_DEFAULT  string: the medium heaps' configuration when
 *                              DMM_MEDIUM is unset (a preset name or a
 *                              key=value config); "tlsf" by default.
 *   DMM_MALLOC_SMALL_MAX       the largest size served from size-class pages
 *                              (2048 by default, at most 8192); 0 = "whole"
 *                              mode: every request up to MEDIUM_MAX goes to
 *                              the thread's medium (policy) heap.
 *   DMM_HEAP_CONFIG_HEADER     (read by the heap, src/heap/heap_internal.h)
 *                              the heap compiled into libdmm frozen to one
 *                              configuration; its lock/stats/harden/grow
 *                              fields must be what medium_config() asks for
 *                              (lock none, stats counters or more, harden as
 *                              the configuration's but at least checked,
 *                              grow 0), else the default is refused.
 *   DMM_MALLOC_GENERATED       string (preload.c): the generated library's
 *                              configuration, exported as dmmgen_config.
 */
#include "dmm/malloc.h"

#include "dmm/heap.h"

/* DMM_MALLOC_CONFIG_HEADER: a header that sets the compile-time hooks
 * (written by `dmmkit generate`, see malloc.c's opening comment). */
#ifdef DMM_MALLOC_CONFIG_HEADER
#include DMM_MALLOC_CONFIG_HEADER
#endif

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../core/bits.h"
#include "../core/text.h"
#include "family.h"
#include "guard.h"
#include "slot.h"
#include "../port/port.h"

#define SEG_SHIFT 22u
#define SEG_SIZE ((size_t)1 << SEG_SHIFT) /* 4 MiB */
#define PAGE_SHIFT 16u
#define PAGE_SIZE ((size_t)1 << PAGE_SHIFT) /* 64 KiB */
#define PAGES (SEG_SIZE / PAGE_SIZE)      /* 64, page 0 = header */
#define MIN_BLOCK 16u
#define BITS_WORDS (PAGE_SIZE / MIN_BLOCK / 64u) /* 64 words: one bit per 16-byte slot */
#ifndef DMM_MALLOC_SMALL_MAX
/* 2048: above it, the medium heap's exact-fit blocks cost less resident
 * memory than pages of 25 %-wide classes do (bench/results/study_mt). */
#define DMM_MALLOC_SMALL_MAX 2048u
#endif
#define SMALL_MAX ((size_t)DMM_MALLOC_SMALL_MAX)
#ifndef DMM_MALLOC_MEDIUM_DEFAULT
#define DMM_MALLOC_MEDIUM_DEFAULT "tlsf"
#endif
/* Requests above medium_max() are large blocks.  With size-class pages on,
 * that is 128 KiB in every mode (glibc's default mmap threshold): a large
 * block's own mapping is what lets a stale pointer or a far overflow fault
 * (large_free).  "Whole" mode (SMALL_MAX 0, generated allocators) keeps
 * its policy heap serving up to 1 MiB unless secure. */
#define MEDIUM_MAX (SMALL_MAX ? (size_t)128 << 10 : (size_t)1 << 20)
#define medium_max() (G.secure ? SECURE_MEDIUM_MAX : MEDIUM_MAX)
#define LARGE_HDR 64u
#define SEG_MAGIC 0x444d4d5345474d31ull /* "DMMSEGM1" */
#define FRESH_BYTES 4096u /* fresh blocks threaded per refill: about one OS page */

enum { SEG_SMALL = 1, SEG_LARGE = 2, SEG_MEDIUM = 3, SEG_ZERO = 4 };
/* Registry bytes of small segments: heap tags (see reg_small). */
#define TAG_FIRST 16u
#define TAG_LAST 254u
#define TAG_NONE 255u
/* Secure mode: requests above this are large blocks (their own mapping,
 * a guard page after, discarded and made inaccessible when freed), as
 * glibc maps blocks above its default mmap threshold. */
#define SECURE_MEDIUM_MAX ((size_t)128 << 10)

typedef struct mblock {
    struct mblock *next;
} mblock;

struct theap;

typedef struct mpage {
    mblock *free;              /* owner only: what malloc takes from */
    mblock *local_free;        /* owner only: what the owner's frees give
                                  back, made the free list when that runs
                                  dry (page_collect): a block just freed is
                                  not the next one handed out */
    _Atomic uintptr_t xfree;   /* frees from other threads: the list's head,
                                  and its length above XCOUNT_SHIFT (xptr) */
    struct theap *heap;        /* owner heap; NULL = page unused */
    struct mpage *next, *prev; /* the owner's list for this class */
    uint32_t mul;              /* dmm_slot_mul(block_size): the boundary
                                  test's multiplier (slot.h, page_slot_in) */
    uint32_t lim;              /* dmm_slot_limit(block_size, nthr): the
                                  boundary test's limit for the blocks
                                  threaded so far, [0, nthr) (handed to the
                                  free list at least once; the rest never);
                                  0 on a page not in use.  The owner's copy
                                  (written and read by the thread holding
                                  the heap: the free fast path compares it
                                  straight from memory) */
    uint16_t block_size;       /* at most the largest class, 8 KiB */
    uint16_t used;             /* blocks out (owner's count; at most
                                  PAGE_SIZE / MIN_BLOCK) */
    _Atomic uint16_t nthr_x;   /* nthr, the count of blocks threaded so far,
                                  for every reader (page_nthr) */
    uint16_t step;             /* dmm_slot_step(block_size): lim per block */
} mpage;

_Static_assert(sizeof(mpage) == 64u || sizeof(void *) != 8u, "a page descriptor is 64 bytes: free indexes them with a shift");

/* A page's remote list (xfree) is one word: the head block's address and,
 * on 64-bit targets, the list's length in the bits above the registry's 48
 * (every small block lies below 2^48: reg_set refuses a segment above; a
 * page holds at most 4,096 blocks).  So the owner takes the list in without
 * walking it (page_collect): the walk read every block another thread had
 * just written, a cache miss each, one after the other, and it was 28 % of
 * mimalloc-bench's xmalloc-test's CPU samples (perf, cpu-clock), where the
 * remote free's push costs a mask, an add and an or more.  On 32-bit
 * targets the word is the pointer alone (XONE is 0) and the list is
 * walked. */
#define XCOUNT_SHIFT 48u
#define XCOUNTED (UINTPTR_MAX > 0xffffffffu)
#define XMASK ((uintptr_t)(((uint64_t)1 << XCOUNT_SHIFT) - 1u))
#define XONE ((uintptr_t)((uint64_t)1 << XCOUNT_SHIFT))
static inline mblock *xptr(uintptr_t w) { return (mblock *)(w & XMASK); }
_Static_assert(PAGE_SIZE / MIN_BLOCK <= 0xffffu, "a page's used and threaded counts fit 16 bits");

/* Sets pg's count of threaded blocks, both copies (the caller holds the
 * page's heap; its block size is set). */
static inline void page_set_nthr(mpage *pg, uint32_t n)
{
    pg->lim = n * pg->step;
    atomic_store_explicit(&pg->nthr_x, (uint16_t)n, memory_order_relaxed);
}

/* pg's count of threaded blocks, for any thread. */
static inline uint32_t page_nthr(const mpage *pg) { return atomic_load_explicit(&pg->nthr_x, memory_order_relaxed); }

/* Page offset off (< PAGE_SIZE) is a block boundary among the first n
 * blocks of pg (slot.h: one multiply and one compare, "a block boundary"
 * and "among the blocks threaded so far" at once).  A page not in use has
 * n = 0.  For a thread other than the owner, n is page_nthr's; the owner's
 * fast path compares with pg->lim, the limit for its own copy. */
static inline bool page_slot_in(const mpage *pg, uint32_t off, uint32_t n)
{
    return dmm_slot_in(off, pg->mul, n * pg->step);
}

/* Sets pg's block size bs (a multiple of MIN_BLOCK) and its boundary test's
 * terms; the count of threaded blocks is set after (page_set_nthr). */
static void page_set_size(mpage *pg, uint32_t bs)
{
    pg->block_size = (uint16_t)bs;
    pg->mul = dmm_slot_mul(bs);
    pg->step = (uint16_t)dmm_slot_step(bs);
}

typedef struct segment {
    uint64_t magic;
    uint32_t kind;
    uint32_t pages_used;       /* small: pages in use (owner only) */
    uint32_t pages_open;       /* small: pages [0, pages_open) are accessible,
                                  the rest guarded until first used (owner
                                  only) */
    size_t map_bytes;          /* large: whole mapping */
    size_t mtop;               /* medium: [MEDIUM_OFF, mtop) is its heap's, the
                                  rest inaccessible (medium_segment) */
    size_t large_off;          /* large: where the block starts (from the
                                  header; SEG_SIZE for an alignment of a
                                  segment or more: see large_alloc) */
    size_t large_guard;        /* large, secure mode: guard bytes at the end */
    bool large_front;          /* large: the bytes before the block hold a
                                  keyed fill (large_front_fill) */
    bool large_dirty;          /* large: reused from the cache, not zero */
    uint64_t dirty;            /* small, default mode: bit i set = page i is
                                  retired but its memory not yet discarded
                                  (owner only; see page_retire) */
    struct theap *heap;        /* small, medium: owner */
    struct segment *next;      /* small, medium: the owner's segments */
    _Alignas(64) mpage page[PAGES]; /* one cache line each */
    _Atomic uint64_t bits[PAGES][BITS_WORDS]; /* hardening: slot allocated */
} segment;

_Static_assert(sizeof(segment) <= PAGE_SIZE, "segment header must fit page 0");

/* ---- size classes: 16..128 by 16, then 4 per power of two up to 8 KiB ---- */
#define NCLASS 32u
static const uint32_t class_size[NCLASS] = {
    16,   32,   48,   64,   80,   96,   112,  128,  160,  192,  224,  256,  320,  384,  448,  512,
    640,  768,  896,  1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192};

_Static_assert(DMM_MALLOC_SMALL_MAX <= 8192u, "DMM_MALLOC_SMALL_MAX: at most the largest size class");
_Static_assert(8192u <= DMM_SLOT_MAX_BLOCK && PAGE_SHIFT == DMM_SLOT_OFF_BITS,
               "the boundary test (slot.h) holds for every class and page offset");

/* Served from size-class pages (never, in whole mode: SMALL_MAX 0). */
static inline bool small_size(size_t n) { return SMALL_MAX != 0 && n <= SMALL_MAX; }

static unsigned size_class(size_t n)
{
    unsigned lg, step;
    if (n <= 128)
        return n == 0 ? 0u : (unsigned)((n + 15u) >> 4) - 1u;
    lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1u)); /* 2^lg < n <= 2^(lg+1) */
    step = (unsigned)(((n - 1u) >> (lg - 2u)) & 3u);                    /* quarter of that power */
    return 8u + (lg - 7u) * 4u + step;
}

#define QUAR 256u   /* secure mode: freed small blocks held back per thread */
#define MQUAR 16u   /* secure mode: freed medium blocks held back per thread */
/* The medium cache (see mc_take): classes above MC_LO, 8 per power of two
 * (the largest 128 KiB, MEDIUM_MAX), MC_SLOTS blocks per class at most and
 * G.mc_max bytes in all per thread (DMM_MEDIUM_CACHE; MC_BYTES unset). */
#define MC_LO 2048u
#define MC_NCLASS 48u
#define MC_SLOTS 32u
#define MC_BYTES ((size_t)1 << 20)
/* ... and at most 1 / 2^MC_FOOT_SHIFT of the memory its medium heap has
 * been given (mc_cap) */
#ifndef MC_FOOT_SHIFT
#define MC_FOOT_SHIFT 3u
#endif
/* ... and 1 / 2^MC_FIRST_SHIFT while the heap has only its first chunk
 * (MCHUNK): a thread with few medium blocks (mc_cap) */
#ifndef MC_FIRST_SHIFT
#define MC_FIRST_SHIFT 5u
#endif
#define CANARY 8u   /* secure mode: canary bytes at a small block's end */
#define POISON_BYTE 0x00u /* secure mode: freed small blocks are zero-filled */

/* The size class of every request up to the largest class, by 16-byte
 * step (class boundaries are multiples of 16): one load on the fast path
 * instead of size_class()'s arithmetic.  Filled by global_init, which runs
 * before any thread has a heap (and so before any fast path). */
static uint8_t class_by16[8192u / 16u + 1u];

static void class_table_init(void)
{
    for (size_t i = 0; i < sizeof class_by16; i++)
        class_by16[i] = (uint8_t)size_class(i * 16u);
}

static inline unsigned class_of(size_t n) { return class_by16[(n + 15u) >> 4]; }

/* A fork-safe spin lock (see olock_lock). */
typedef struct olock {
    _Atomic uintptr_t holder;
} olock;

typedef struct theap {
    mpage *fast[NCLASS];       /* per class: the head of pages[] or, when the
                                  class has no page, &empty_page (never NULL:
                                  the fast path tests no pointer but the
                                  block) */
    mpage *pages[NCLASS];      /* per class: list of pages, head first */
    mpage *tails[NCLASS];      /* per class: the list's last page */
    segment *segs;             /* small segments owned */
    dmm_heap *mheap;           /* medium requests; NULL until the first */
    segment *msegs;            /* its segments */
    _Atomic(mblock *) mxfree;  /* medium blocks freed by other threads */
    struct theap *next_parked; /* abandoned list */
    struct theap *next_all;    /* every heap ever made (statistics) */
    _Atomic int64_t live;      /* medium block bytes allocated minus freed by
                                  the thread bound to this heap, and the small
                                  blocks' corrections (see small_live);
                                  written by that thread (or the holder of
                                  the parked heap) only */
    _Atomic int pstate;        /* HEAP_OWNED, _PARKED, _BUSY, _LOST */
    olock lists;               /* held by the owner while it
                                  changes its page lists, pages' states and
                                  segments (not on the fast paths), and by a
                                  thread reclaiming its idle pages
                                  (heap_reclaim_idle) */
    uint8_t tag;               /* its small segments' registry byte (see
                                  reg_kind): TAG_FIRST.. for the first heaps,
                                  SEG_SMALL for the others */
    _Atomic bool warm;         /* parked with its memory kept (WARM_HEAPS;
                                  set and cleared under parked_lock) */
    _Atomic bool has_mheap;    /* mheap is set: read by a thread that may
                                  adopt the heap (small_release_remote) */
    size_t mfreed;             /* parked: medium bytes freed since the last
                                  discard walk */
    uint32_t dirty_pages;      /* retired small pages of its segments not
                                  yet discarded (the segments' dirty bits) */
    _Atomic uint32_t epoch;    /* small_slow calls of its owner (heap_reclaim_idle) */
    _Atomic uint32_t seen;     /* epoch when another thread last looked */
    uint32_t idle_looks;       /* looks since, that found it unchanged (both
                                  under G.reclaim_lock) */
    uint32_t fresh;            /* its owner's calls for a page never used
                                  (heap_reclaim_idle looks every RECLAIM_EVERY) */
    uint32_t classes_seen;     /* bit c: class c has had a page
                                  (page_lend_idle).  Here, not after the
                                  medium cache: every heap's first page_new
                                  writes it, and at the end it made the
                                  heap's 4th OS page resident in every thread */
    uint32_t qhead, qcount;    /* secure mode: the quarantine ring */
    struct mblock *quar[QUAR];
    uint32_t mqhead, mqcount;  /* secure mode: the medium blocks' ring */
    void *mquar[MQUAR];
    size_t mfoot;              /* bytes its medium heap has been given (the
                                  medium cache's bound: mc_cap) */
    size_t mc_bytes;           /* the medium cache (see mc_take): usable */
    uint8_t mc_n[MC_NCLASS];   /* bytes held, blocks per class, the blocks */
    void *mc[MC_NCLASS][MC_SLOTS];
} theap;

/* Every field but the medium cache's blocks lies in a heap's first OS page
 * (the secure mode's rings too, untouched in the default mode): a thread
 * that caches no medium block keeps one resident page of heap. */
_Static_assert(offsetof(theap, mc) <= 4096u && offsetof(theap, classes_seen) < offsetof(theap, mc),
               "a heap's fields but the medium cache fit its first 4 KiB");

/* Who may touch a heap's owner-only state.  OWNED: the thread bound to it.
 * PARKED: its thread exited; nobody, until a thread takes it: a new thread
 * adopting it (PARKED -> OWNED) or a thread freeing one of its blocks
 * (PARKED -> BUSY -> PARKED), which frees straight into the heap, so memory
 * freed after its owner exited is reusable and returnable without waiting
 * for an adoption.  LOST: in a fork child, a heap that was BUSY in the
 * parent (its holder does not exist here): never touched again. */
enum { HEAP_OWNED = 0, HEAP_PARKED = 1, HEAP_BUSY = 2, HEAP_LOST = 3 };

/* ---- fork-safe locks ----
 * A spin lock that knows its holder (the address of a thread-local byte,
 * unique per thread; 0 = free).  fork() runs the prepare handler on the
 * forking thread, which may be a signal handler that interrupted this very
 * thread inside a critical section (or inside another fork's prepare): a
 * lock held by the calling thread is then left as it is instead of being
 * waited for (it would never be released), and the child resets every
 * lock.  Locks held by other threads are waited for as usual, so a child
 * never sees a half-done update by a thread that does not exist in it. */

static _Thread_local char tl_self;

static inline uintptr_t self_id(void) { return (uintptr_t)&tl_self; }

static inline void olock_lock(olock *l)
{
    uintptr_t me = self_id();
    unsigned spins = 0;
    for (;;) {
        uintptr_t v = 0;
        if (atomic_compare_exchange_weak_explicit(&l->holder, &v, me, memory_order_acquire, memory_order_relaxed))
            return;
        if (++spins >= 64) {
            dmm_port_yield();
            spins = 0;
        } else {
            dmm_port_cpu_relax();
        }
    }
}

static inline void olock_unlock(olock *l) { atomic_store_explicit(&l->holder, 0, memory_order_release); }

static inline bool olock_mine(olock *l) { return atomic_load_explicit(&l->holder, memory_order_relaxed) == self_id(); }

static inline bool olock_try(olock *l)
{
    uintptr_t v = 0;
    return atomic_compare_exchange_strong_explicit(&l->holder, &v, self_id(), memory_order_acquire,
                                                   memory_order_relaxed);
}

/* The owner's hold on its heap's lists (h->lists), around what changes them
 * (small_slow, page_retire, heap_tidy_keep): taken unless the calling
 * thread holds it already (a nested call; a fork child's thread that forked
 * from a signal handler inside one).  Returns whether it took it. */
static inline bool lists_lock(theap *h)
{
    if (olock_mine(&h->lists))
        return false;
    olock_lock(&h->lists);
    return true;
}

static inline void lists_unlock(theap *h, bool took)
{
    if (took)
        olock_unlock(&h->lists);
}

/* Warm parking (default mode).  mimalloc-bench's mstress starts and ends
 * threads all the time, and a thread adopts the heap the last one left:
 * when every exit gave back the heap's free pages and its medium heap's
 * free memory at once, the next thread faulted all of it in again (35,000
 * page faults a run where mimalloc took 3,800).  So the WARM_HEAPS heaps
 * parked last are tidied with their memory kept (heap_tidy_keep: within
 * DIRTY_PAGES_MAX retired pages and WARM_MEDIUM_BYTES of free medium
 * memory each), and the next threads adopt them first (the parked list is
 * last in, first out).  The purge is delayed, not dropped: parking one more
 * heap tidies the oldest warm one in full, as malloc_trim tidies them all;
 * a free into a parked heap gives back what it empties, as before.  One
 * warm heap: with two, the exited-thread churn of bench/malloc/
 * exited_thread.c peaked at 1.23x glibc's RSS (with one 1.05x), and
 * mstress's faults were the same. */
#define WARM_HEAPS 1u
#define WARM_MEDIUM_BYTES ((size_t)8 << 20)

/* ---- process state ---- */
static struct {
    _Atomic int state; /* 0 none, 1 initialising, 2 ready */
    int harden;
    int secure;      /* DMM_SECURE=1: canaries, quarantine, guard pages */
    uint64_t secret; /* secure mode: canary key */
    uint64_t rkey;   /* the free tag's key (ftag) */
    _Atomic int abort_on_error; /* 1 (default): a detected misuse aborts */
    int verbose;
    dmm_port_tkey key;
    bool have_key;
    olock parked_lock;
    olock seg_lock;  /* every heap's list of small segments (segs): changed
                        by the owner under it, walked by the statistics */
    olock reclaim_lock; /* held by the thread in heap_reclaim_idle (a fork
                           waits for it: no heap is half reclaimed in a child) */
    theap *parked;
    struct theap *warm[WARM_HEAPS]; /* the heaps parked last with their memory kept */
    unsigned warm_next; /* warm[warm_next]: the oldest (under parked_lock) */
    dmm_heap_config mcfg;       /* the medium heaps' configuration */
    size_t mc_max;              /* the medium cache's bytes per thread; 0 = off
                                   (secure and whole modes: always) */
    _Atomic uint64_t mapped, segments, large_bytes, large_count, heaps, adopted, errors;
    _Atomic uint64_t retired;     /* pages retired (malloc_trim's answer) */
    _Atomic uint64_t large_count_max, large_bytes_max; /* high-water marks */
    _Atomic(struct theap *) all;  /* every heap, newest first */
    _Atomic int64_t live_orphan;  /* bytes freed by threads without a heap */
} G = {.harden = 1, .abort_on_error = 1};


static _Thread_local theap *tl_heap;
/* The thread's heap was parked (its exit has begun): a free from a later
 * destructor must not bind it a heap again. */
static _Thread_local bool tl_exited;

/* The fast paths' view of the calling thread's heap (dmm_malloc through
 * tl_fastv, dmm_free through tl_tag, both set by fast_view): its heap in
 * the default and unhardened modes; empty_heap before the thread has one,
 * after it exited, and always in secure mode, whose every call takes the
 * slow paths.  empty_heap's classes all point at empty_page, which has no
 * free block, so the fast paths test neither the heap nor the page for
 * NULL: malloc finds no block and free finds no segment with the tag
 * TAG_NONE, and both fall through to the slow paths. */
static mpage empty_page;
/* Zero (.bss) until global_init points its classes at empty_page: with an
 * initialiser, its 15 KiB (mostly the medium cache's and the quarantines'
 * zeros) were libdmm.so's .data, 4 pages of the file mapped in every
 * process; fast_view, the only reader of its contents, runs after
 * global_init. */
static theap empty_heap;
static _Thread_local theap *tl_fast = &empty_heap;
/* The free fast path's view: the tag of tl_fast's segments, TAG_NONE when
 * tl_fast is empty_heap or its heap has the shared tag SEG_SMALL. */
static _Thread_local uint8_t tl_tag = TAG_NONE;
static inline uint8_t fast_tag(const theap *h) { return h->tag >= TAG_FIRST ? h->tag : (uint8_t)TAG_NONE; }
/* The malloc fast path's view: tl_fast's fast[] itself, by 16-byte step
 * of the request (tl_fastv[(n + 15) / 16] = fast[class_of(n)]) for
 * requests up to FAST_MAX, kept in the thread's own storage (a copy: the
 * heap's array stays the truth, for the next thread to adopt it), so that
 * the fast path loads the class's page with no class lookup and no load of
 * the heap pointer first.  Written by heap_set_head when its heap is
 * tl_fast (the calling thread's: no other thread changes an owned heap's
 * lists), and whole by fast_view.  1 KiB of each thread's static TLS;
 * requests above FAST_MAX (DMM_MALLOC_SMALL_MAX above 2048) take
 * alloc_aligned's path to the same pages. */
#define FAST_MAX (SMALL_MAX < 2048u ? SMALL_MAX : (size_t)2048u)
#define FAST_STEPS 129u /* 2048 / 16 + 1 */
#define EMPTY8 &empty_page, &empty_page, &empty_page, &empty_page, &empty_page, &empty_page, &empty_page, &empty_page
#define EMPTY64 EMPTY8, EMPTY8, EMPTY8, EMPTY8, EMPTY8, EMPTY8, EMPTY8, EMPTY8
static _Thread_local mpage *tl_fastv[FAST_STEPS] = {EMPTY64, EMPTY64, &empty_page};
#undef EMPTY64
#undef EMPTY8

/* Makes h (empty_heap: none) the calling thread's fast paths' heap; the
 * class table is set (global_init has run). */
static void fast_view(theap *h)
{
    tl_fast = h;
    tl_tag = fast_tag(h);
    for (unsigned i = 0; i < FAST_STEPS; i++)
        tl_fastv[i] = h->fast[class_by16[i]];
}

/* Sets the head of h's page list of class cls (NULL: none). */
static inline void heap_set_head(theap *h, unsigned cls, mpage *pg)
{
    h->pages[cls] = pg;
    h->fast[cls] = pg ? pg : &empty_page;
    if (h == tl_fast) /* the steps of class cls: (class_size[cls - 1], class_size[cls]] */
        for (size_t i = cls ? class_size[cls - 1u] / 16u + 1u : 0u; i < FAST_STEPS && i <= class_size[cls] / 16u; i++)
            tl_fastv[i] = h->fast[cls];
}

/* Freed large mappings kept for reuse (large_free, large_alloc): at most
 * LCACHE of them and lcache_budget() bytes in all (LCACHE_BYTES, or a
 * quarter of the large bytes in use when that is more, up to
 * LCACHE_BYTES_MAX), each at most half the budget; one that LCACHE_DECAY
 * later large frees did not reuse is unmapped.  A mapping and unmapping
 * per call (and the page faults on every reuse) made a program that cycles
 * large blocks spend its time in the kernel.  A request takes the smallest
 * cached mapping that holds it and is at most LREUSE times its size (whole:
 * its pages are resident already); when none holds it, the largest cached
 * one below it (of at least a quarter of it) is grown by moving its pages
 * into a new mapping of the size (lcache_take_grow): only the pages added
 * fault.  On mimalloc-bench's malloc-large (5-25 MiB blocks, 20 live) the
 * old rule (a mapping at most 1.5 times the request, no growing) reused so
 * few that it faulted in 3.1 M pages, 2,433 munmap.
 * While cached, a mapping of at most LGUARD_MAX is inaccessible (its pages
 * stay resident), so a read or write through a stale pointer faults (an
 * mprotect each way; on bigger ones its cost grows with the resident pages:
 * mimalloc-bench's malloc-large, 5-25 MiB blocks, spent 3 s more in the
 * kernel per 2,000 blocks).  Nor is such a mapping handed out again before
 * another large block has been freed (es[] < tick), so the block freed last
 * is never the next one's address (on bigger ones that cost malloc-large
 * 1.5 s more: it frees each block after making the next, and the newest
 * entry is the likeliest fit). */
#define LCACHE 8u
#define LCACHE_BYTES ((size_t)64 << 20)
#define LCACHE_BYTES_MAX ((size_t)1 << 30)
#define LCACHE_DECAY 32u
#define LREUSE 4u
#define LGUARD_MAX ((size_t)1 << 20)
#define lcache_guarded(bytes) (!G.secure && G.harden && (bytes) <= LGUARD_MAX)
static struct {
    olock lock;
    struct segment *e[LCACHE]; /* inaccessible while cached (large_free): */
    size_t eb[LCACHE];         /* so their sizes */
    uint64_t es[LCACHE];       /* and free ticks are kept here */
    unsigned n;
    _Atomic unsigned peek; /* n, for a look without the lock */
    size_t bytes;
    uint64_t tick;
} LC;

/* Books block bytes on h, the calling thread's heap or one it holds (an
 * owner-only counter: a relaxed load and store, no read-modify-write), or
 * globally when the thread has none (h NULL).  The fast paths book
 * nothing: small blocks in use are counted by their pages (small_live). */
static inline void book_on(theap *h, int64_t delta)
{
    if (h)
        atomic_store_explicit(&h->live, atomic_load_explicit(&h->live, memory_order_relaxed) + delta,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&G.live_orphan, delta, memory_order_relaxed);
}

static inline void book(int64_t delta) { book_on(tl_heap, delta); }

/* ---- the segment registry: which SEG_SIZE units are dmm's, and of what kind ----
 * One byte per SEG_SIZE unit of the address space (48 bits on 64-bit
 * targets: 2^26 bytes of zero-filled static memory of which only the pages
 * covering mapped segments are ever touched; 1 KiB on 32-bit ones): 0, or
 * the kind of the segment whose header starts the unit.  A lookup is a
 * shift, a bound test and one byte compare: on every free it tells at once
 * that the pointer is in a segment of small pages, before its header is
 * read. */
#define REG_ADDR_BITS (UINTPTR_MAX > 0xffffffffu ? 48u : 32u)
#define REG_UNITS ((uint64_t)1 << (REG_ADDR_BITS - SEG_SHIFT))
static _Atomic uint8_t reg_kind[REG_UNITS];
_Static_assert(!XCOUNTED || REG_ADDR_BITS <= XCOUNT_SHIFT, "small blocks lie below the remote list's count bits (xptr)");

/* A small segment's registry byte is its heap's tag, not SEG_SMALL, for
 * the first TAG_LAST - TAG_FIRST + 1 heaps made (a heap is never destroyed,
 * and a segment never changes heap, so the tag is for good): the free fast
 * path's one byte compare, the registry's byte against the calling thread's
 * tag (tl_tag), tells at once that the block is in a segment of small pages
 * and that the segment is this thread's heap's, with no look at the page's
 * owner.  Heaps made after those have the tag SEG_SMALL, and tl_tag
 * TAG_NONE (matches no registry byte): their frees take free_slow. */
static inline bool reg_small(unsigned k) { return k == SEG_SMALL || k >= TAG_FIRST; }

/* Registers seg as a segment of kind (0: unregisters it); false when seg is
 * outside the registry's range. */
static bool reg_set(uintptr_t seg, uint32_t kind)
{
    uint64_t u = (uint64_t)seg >> SEG_SHIFT;
    if (u >= REG_UNITS)
        return kind == 0;
    atomic_store_explicit(&reg_kind[u], (uint8_t)kind, memory_order_release);
    return true;
}

/* The registered kind of the unit holding address a (0: not dmm's). */
static inline unsigned reg_kind_of(uintptr_t a)
{
    uint64_t u = (uint64_t)a >> SEG_SHIFT;
    return u < REG_UNITS ? atomic_load_explicit(&reg_kind[u], memory_order_acquire) : 0u;
}

static inline bool reg_has(uintptr_t seg) { return reg_kind_of(seg) != 0; }

/* ---- errors ---- */
/* Error and statistics lines go through the core's text builder
 * (src/core/text.h): no stdio, no allocation, truncated to the buffer. */
static void text_hex(dmm_text *t, uintptr_t v)
{
    static const char hx[] = "0123456789abcdef";
    int shift = (int)(sizeof v * 8u) - 4;
    dmm_text_str(t, "0x");
    while (shift > 0 && !((v >> shift) & 15u))
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        dmm_text_char(t, hx[(v >> shift) & 15u]);
}

static void write_text(const dmm_text *t)
{
    dmm_port_write_err(t->buf, t->len < t->cap ? t->len : t->cap - 1u);
}

/* Reports made on this thread (mfree: a medium free the heap refused). */
static _Thread_local uint64_t tl_reports;

/* what: a static message of libdmm's or the medium heap's (short). */
static void report(const char *what, const void *p)
{
    char b[200];
    dmm_text t;
    tl_reports++;
    atomic_fetch_add_explicit(&G.errors, 1, memory_order_relaxed);
    dmm_text_init(&t, b, sizeof b);
    dmm_text_str(&t, "libdmm: ");
    dmm_text_str(&t, what);
    dmm_text_char(&t, ' ');
    text_hex(&t, (uintptr_t)p);
    dmm_text_str(&t, G.abort_on_error ? " (aborting)\n" : " (ignored)\n");
    write_text(&t);
    if (G.abort_on_error)
        dmm_port_abort();
}

/* ---- init, thread exit, fork ---- */
static void heap_abandon(void *h);
static void medium_release_if_empty(struct theap *h);
static void medium_drain(struct theap *h);
static void medium_drain_as(struct theap *h, bool cache);

/* The locks a fork takes (olock above).  A fork from a signal handler can
 * nest inside another fork's handlers on the same thread: each level
 * pushes four bits (which of the four locks it took) on a per-thread stack,
 * and its parent/child handler pops them. */
static _Thread_local uint64_t tl_fork_taken;

static void fork_prepare(void)
{
    unsigned took = 0;
    if (!olock_mine(&G.reclaim_lock)) { /* first: its holder takes seg_lock */
        olock_lock(&G.reclaim_lock);
        took |= 8u;
    }
    if (!olock_mine(&G.parked_lock)) {
        olock_lock(&G.parked_lock);
        took |= 1u;
    }
    if (!olock_mine(&LC.lock)) {
        olock_lock(&LC.lock);
        took |= 2u;
    }
    if (!olock_mine(&G.seg_lock)) {
        olock_lock(&G.seg_lock);
        took |= 4u;
    }
    tl_fork_taken = tl_fork_taken << 4 | took;
}
static void fork_parent(void)
{
    unsigned took = (unsigned)(tl_fork_taken & 15u);
    tl_fork_taken >>= 4;
    if (took & 8u)
        olock_unlock(&G.reclaim_lock);
    if (took & 4u)
        olock_unlock(&G.seg_lock);
    if (took & 2u) { /* not when an interrupted caller on this thread holds it */
        atomic_store_explicit(&LC.peek, LC.n, memory_order_relaxed);
        olock_unlock(&LC.lock);
    }
    if (took & 1u)
        olock_unlock(&G.parked_lock);
}
static void heaps_after_fork(void);
static void fork_child(void)
{
    tl_fork_taken >>= 4;
    atomic_store_explicit(&G.reclaim_lock.holder, 0, memory_order_relaxed);
    atomic_store_explicit(&G.seg_lock.holder, 0, memory_order_relaxed);
    atomic_store_explicit(&LC.lock.holder, 0, memory_order_relaxed);
    atomic_store_explicit(&G.parked_lock.holder, 0, memory_order_relaxed);
    heaps_after_fork();
}

static void on_heap_error(void *ctx, const dmm_error *e)
{
    (void)ctx;
    report(e->message, e->ptr);
}

/* One candidate for the medium heaps' configuration: a preset name or
 * key=value pairs (dmm_heap_config_parse), with libdmm's fields imposed:
 * no lock (one owner), counters at least (thread exit asks whether the
 * heap is empty), regions added here (grow 0), reports through report(),
 * hardening at least checked, or off with DMM_HARDEN=0 (not in a frozen
 * build: its hardening is compiled in).  false: not understood, or refused
 * by the heap (a frozen heap refuses other policies). */
static bool medium_try(const char *spec, dmm_heap_config *out)
{
    dmm_heap_preset pr;
    dmm_heap_config c;
    const char *why = NULL;
    if (dmm_heap_preset_from_name(spec, &pr) == DMM_OK)
        c = dmm_heap_preset_config(pr);
    else if ((c = dmm_heap_default_config(), dmm_heap_config_parse(spec, &c, &why)) != DMM_OK)
        return false;
    c.lock = DMM_LOCK_NONE;
    if (c.stats == DMM_STATS_OFF)
        c.stats = DMM_STATS_COUNTERS;
    c.grow_granularity = 0;
    c.release_empty = false;
    c.on_error = DMM_ON_ERROR_REPORT; /* report() aborts, or not (G.abort_on_error) */
    c.error_fn = on_heap_error;
    c.error_ctx = NULL;
    if (!G.harden && !dmm_heap_is_frozen())
        c.harden = DMM_HARDEN_OFF;
    else if (c.harden == DMM_HARDEN_OFF)
        c.harden = DMM_HARDEN_CHECKED;
    if (G.secure) { /* canaries behind used blocks, poisoned free ones */
        if (c.harden < DMM_HARDEN_CANARY)
            c.harden = DMM_HARDEN_CANARY;
        c.poison = true;
    }
    if (dmm_heap_config_check(&c, &why) != DMM_OK)
        return false;
    *out = c;
    return true;
}

/* The medium heaps: DMM_MEDIUM, else DMM_MALLOC_MEDIUM_DEFAULT (the
 * compiled-in choice), else TLSF. */
static void medium_config(const char *spec)
{
    static const char bad[] = "libdmm: DMM_MEDIUM not understood or refused by the heap, using the default\n";
    static const char bad_default[] = "libdmm: the built-in medium configuration is refused, using tlsf\n";
    if (spec && *spec) {
        if (medium_try(spec, &G.mcfg))
            return;
        dmm_port_write_err(bad, sizeof bad - 1u);
    }
    if (medium_try(DMM_MALLOC_MEDIUM_DEFAULT, &G.mcfg))
        return;
    dmm_port_write_err(bad_default, sizeof bad_default - 1u);
    if (!medium_try("tlsf", &G.mcfg)) { /* a heap frozen to something else: its own default */
        G.mcfg = dmm_heap_default_config();
        G.mcfg.error_fn = on_heap_error;
    }
}

/* DMM_VERBOSE=1: what this process's libdmm runs with, once, at start. */
static void say_config(void)
{
    char b[768], cfg[512];
    dmm_text t;
    dmm_text_init(&t, b, sizeof b);
    dmm_text_str(&t, "libdmm: hardening ");
    dmm_text_str(&t, G.harden ? "on" : "off");
    dmm_text_str(&t, G.abort_on_error ? " (abort on error)" : "");
    if (small_size(1)) {
        dmm_text_str(&t, "; small blocks up to ");
        dmm_text_u64(&t, SMALL_MAX);
        dmm_text_str(&t, " B in size classes");
    } else {
        dmm_text_str(&t, "; no size classes (whole mode)");
    }
    dmm_text_str(&t, "; medium up to ");
    dmm_text_u64(&t, MEDIUM_MAX);
    dmm_text_str(&t, " B from a per-thread heap [");
    (void)dmm_heap_config_format(&G.mcfg, cfg, sizeof cfg);
    dmm_text_str(&t, cfg);
    dmm_text_str(&t, dmm_heap_is_frozen() ? "] (frozen at compile time)" : "]");
    dmm_text_str(&t, "; larger blocks mapped from the OS\n");
    write_text(&t);
}

/* A per-process secret: the OS's random bytes (dmm_port_random), else the
 * clock, mixed with the addresses the loader and the kernel chose (no
 * allocation, no syscall the port does not have).  The clock only when the
 * OS gives no random bytes: glibc's clock_gettime lies in libc text pages
 * that nothing else of a small program touches, and its first call made
 * 64-128 KB more of libc resident in every process (docs/malloc.md, "The
 * library's own pages"). */
static uint64_t canary_seed(void)
{
    uint64_t r = 0;
    if (!dmm_port_random(&r, sizeof r))
        r = dmm_port_clock_ns();
    uint64_t x = r ^ (uint64_t)(uintptr_t)&G ^ ((uint64_t)(uintptr_t)&tl_self << 17) ^ 0x6a09e667f3bcc909ull;
    for (int i = 0; i < 3; i++) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
    }
    return x | 1u;
}

/* The medium cache's bound: DMM_MEDIUM_CACHE bytes (decimal, an optional
 * k or m suffix; 0 turns it off), MC_BYTES when unset or not understood.
 * Off in secure mode (freed medium blocks wait in its quarantine instead,
 * and are never handed out again at once) and in whole mode (the policy
 * heap serves every size: what is measured there is that heap). */
static size_t mc_config(const char *e)
{
    size_t v = 0;
    if (G.secure || SMALL_MAX == 0)
        return 0;
    if (!e || *e < '0' || *e > '9')
        return MC_BYTES;
    for (; *e >= '0' && *e <= '9'; e++)
        if ((v = v * 10u + (size_t)(*e - '0')) > ((size_t)1 << 30))
            return MC_BYTES;
    if (*e == 'k' || *e == 'K')
        v = v > ((size_t)1 << 20) ? (size_t)1 << 30 : v << 10;
    else if (*e == 'm' || *e == 'M')
        v = v > ((size_t)1 << 10) ? (size_t)1 << 30 : v << 20;
    return v;
}

static void global_init(void)
{
    int s = 0;
    if (atomic_load_explicit(&G.state, memory_order_acquire) == 2)
        return;
    if (atomic_compare_exchange_strong(&G.state, &s, 1)) {
        const char *e = dmm_port_getenv("DMM_HARDEN");
        if (e && e[0] == '0')
            G.harden = 0;
        e = dmm_port_getenv("DMM_SECURE");
        if (e && e[0] == '1') {
            G.secure = 1;
            G.harden = 1;
            dmm_malloc_guard_on = 1; /* the exported copies check (guard.h) */
        } else {
            dmm_malloc_guard_on = 0; /* decided: they need not look again */
        }
        G.secret = canary_seed(); /* canaries (secure) and large blocks' front fill (hardened) */
        G.rkey = canary_seed() * 0x9e3779b97f4a7c15ull | 1u; /* never 0: malloc clears the tag to 0 */
        e = dmm_port_getenv("DMM_ABORT_ON_ERROR");
        G.abort_on_error = !(e && e[0] == '0'); /* abort unless asked to report and continue */
        e = dmm_port_getenv("DMM_VERBOSE");
        G.verbose = e && e[0] == '1';
        class_table_init();
        for (unsigned c = 0; c < NCLASS; c++)
            empty_heap.fast[c] = &empty_page;
        empty_heap.tag = SEG_SMALL;
        medium_config(dmm_port_getenv("DMM_MEDIUM"));
        G.mc_max = mc_config(dmm_port_getenv("DMM_MEDIUM_CACHE"));
        if (G.verbose)
            say_config();
        G.have_key = dmm_port_tkey_create(&G.key, heap_abandon);
        (void)dmm_port_atfork(fork_prepare, fork_parent, fork_child);
        atomic_store_explicit(&G.state, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&G.state, memory_order_acquire) != 2)
        dmm_port_cpu_relax();
}

/* Initialise while the process still has one thread.  A fork() taken while
 * another thread is inside global_init (state 1) would leave the child
 * spinning forever on a state that no thread of its own will ever finish
 * (MallocThreads.ForkChildAllocates hung so under load); after this
 * constructor, only code that runs before constructors (still single
 * threaded) can meet a state other than 2. */
__attribute__((constructor)) static void global_init_at_load(void) { global_init(); }

void dmm_malloc_set_harden(int on)
{
    G.harden = on != 0;
}

int dmm_malloc_set_abort_on_error(int on)
{
    global_init();
    return atomic_exchange_explicit(&G.abort_on_error, on != 0, memory_order_relaxed);
}

/* ---- segments and pages ---- */
/* Maps and registers a segment of kind owned by h, pushed on *list (the
 * heap's small or medium segments). */
static segment *segment_map(theap *h, uint32_t kind, segment **list)
{
    segment *s = dmm_port_pages_map_aligned(SEG_SIZE, SEG_SIZE);
    if (!s)
        return NULL;
    if (!reg_set((uintptr_t)s, kind == SEG_SMALL ? h->tag : kind)) {
        dmm_port_pages_unmap(s, SEG_SIZE);
        return NULL;
    }
    s->magic = SEG_MAGIC;
    s->kind = kind;
    s->heap = h;
    s->next = *list;
    *list = s;
    atomic_fetch_add_explicit(&G.mapped, SEG_SIZE, memory_order_relaxed);
    atomic_fetch_add_explicit(&G.segments, 1, memory_order_relaxed);
    return s;
}

/* Unregisters and unmaps a segment already unlinked from its list. */
static void segment_unmap(segment *s)
{
    reg_set((uintptr_t)s, 0);
    s->magic = 0;
    dmm_port_pages_unmap(s, SEG_SIZE);
    atomic_fetch_sub_explicit(&G.mapped, SEG_SIZE, memory_order_relaxed);
    atomic_fetch_sub_explicit(&G.segments, 1, memory_order_relaxed);
}

/* A new small segment's pages after the header are inaccessible until
 * page_new first gives them out (in order, lowest first), so a stray access
 * far past the blocks in use (a 1 MiB overflow of a small block, in a
 * program that uses a few pages) faults instead of landing in mapped,
 * unused memory.  An mprotect per page on its first use only. */
static segment *segment_new(theap *h)
{
    segment *s;
    olock_lock(&G.seg_lock);
    s = segment_map(h, SEG_SMALL, &h->segs);
    olock_unlock(&G.seg_lock);
    if (s)
        s->pages_open = dmm_port_pages_guard((unsigned char *)s + PAGE_SIZE, SEG_SIZE - PAGE_SIZE) ? 1u : (uint32_t)PAGES;
    return s;
}

static void segment_free(theap *h, segment *s)
{
    segment **pp = &h->segs;
    olock_lock(&G.seg_lock);
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (*pp)
        *pp = s->next;
    segment_unmap(s);
    olock_unlock(&G.seg_lock);
}

static inline unsigned char *page_start(segment *s, size_t i) { return (unsigned char *)s + i * PAGE_SIZE; }

static mpage *page_new(theap *h, unsigned cls)
{
    segment *s;
    for (s = h->segs; s; s = s->next)
        if (s->pages_used < PAGES - 1u)
            break;
    if (!s && !(s = segment_new(h)))
        return NULL;
    for (size_t i = s->dirty ? (size_t)__builtin_ctzll(s->dirty) : 1u; i < PAGES; i++) {
        mpage *pg = &s->page[i]; /* a retired page still resident first */
        if (pg->heap)
            continue;
        if (s->dirty >> i & 1u) {
            s->dirty &= ~((uint64_t)1 << i);
            h->dirty_pages--;
            if (G.secure) /* secure mode hands pages out zero-filled (a discarded page is) */
                memset(page_start(s, i), 0, PAGE_SIZE);
        }
        if (i >= s->pages_open) { /* first use: accessible from now on */
            if (!dmm_port_pages_unguard(page_start(s, s->pages_open), (i + 1u - s->pages_open) * PAGE_SIZE))
                return NULL;
            s->pages_open = (uint32_t)i + 1u;
        }
        pg->heap = h;
        h->classes_seen |= (uint32_t)1 << cls;
        page_set_size(pg, class_size[cls]);
        page_set_nthr(pg, 0);
        pg->used = 0;
        pg->free = NULL;
        pg->local_free = NULL;
        atomic_store_explicit(&pg->xfree, 0, memory_order_relaxed);
        pg->prev = NULL;
        pg->next = h->pages[cls];
        if (pg->next)
            pg->next->prev = pg;
        else
            h->tails[cls] = pg;
        heap_set_head(h, cls, pg);
        s->pages_used++;
        return pg;
    }
    return NULL; /* not reached: pages_used said there was room */
}

static inline segment *seg_of(const void *p) { return (segment *)((uintptr_t)p & ~(uintptr_t)(SEG_SIZE - 1u)); }
/* The segment of a block handed out: no block starts at a segment's first
 * byte (the header is there) except a large block aligned to SEG_SIZE or
 * more, whose header is one SEG_SIZE before it (large_alloc). */
static inline segment *block_seg(const void *p)
{
    segment *s = seg_of(p);
    return (const void *)s == p ? (segment *)((uintptr_t)s - SEG_SIZE) : s;
}
static inline size_t page_index(segment *s, const void *p) { return ((uintptr_t)p - (uintptr_t)s) >> PAGE_SHIFT; }

/* Default mode: a retired page's memory is discarded on a schedule, not at
 * once: a program whose pages empty and fill again (threads that free each
 * other's blocks, a burst of frees then of mallocs) would otherwise pay an
 * madvise and a fault per 4 KiB every time (larson: about 2,000 madvise
 * calls a second).  A heap keeps at most this many retired pages resident;
 * one more, and all of them are discarded (runs of adjacent pages in one
 * call); page_new takes a resident one first; thread exit and malloc_trim
 * (heap_tidy) discard all. */
#define DIRTY_PAGES_MAX 32u
_Static_assert(PAGES == 64u, "a segment's dirty pages are one 64-bit mask");

static void heap_discard_dirty(theap *h)
{
    for (segment *s = h->segs; s && h->dirty_pages; s = s->next) {
        while (s->dirty) {
            unsigned lo = (unsigned)__builtin_ctzll(s->dirty), hi = lo;
            while (hi + 1u < PAGES && (s->dirty >> (hi + 1u) & 1u))
                hi++;
            dmm_port_pages_discard(page_start(s, lo), (size_t)(hi - lo + 1u) * PAGE_SIZE);
            s->dirty &= ~((((uint64_t)1 << (hi - lo + 1u)) - 1u) << lo); /* lo >= 1: page 0 is the header */
            h->dirty_pages -= hi - lo + 1u;
        }
    }
}

/* A heap's small segments without a page in use: in default mode one of
 * them stays mapped (its pages retired, so resident only within
 * DIRTY_PAGES_MAX), and the heap's next page_new takes it instead of
 * mapping a new one.  mimalloc-bench's mstress, whose threads empty and
 * fill segments again, paid an munmap, an aligned mmap (an 8 MiB mapping
 * trimmed by two munmaps) and a page fault per 4 KiB every time.  Keeps
 * the first `keep` of them and unmaps the others. */
static void heap_free_empty_segs(theap *h, unsigned keep)
{
    segment *s = h->segs;
    while (s) {
        segment *nx = s->next;
        if (s->pages_used == 0) {
            if (keep) {
                keep--;
            } else {
                for (uint64_t d = s->dirty; d; d &= d - 1u) /* no popcount: libgcc's, at the text's end */
                    h->dirty_pages--;
                segment_free(h, s);
            }
        }
        s = nx;
    }
}

/* Gives an empty page back to its segment (and the segment to the OS when
 * it has no page left, but for the one kept: heap_free_empty_segs).  The
 * page's memory is discarded on a schedule (heap_discard_dirty); in secure
 * mode too, where each page was discarded at once (an madvise, and a fault
 * per 4 KiB when used again: mimalloc-bench's mstress faulted 4.4 times as
 * often as in the default mode) and page_new now zero-fills it instead. */
static void page_retire_in(theap *h, mpage *pg, bool free_segs);

static DMM_NOINLINE void page_retire(theap *h, mpage *pg)
{
    page_retire_in(h, pg, true);
}

/* page_retire, and when free_segs, the segment given back if it emptied.
 * heap_reclaim_idle passes false: it holds G.reclaim_lock, which a fork
 * waits for first, and segment_free waits for G.seg_lock, which a thread
 * interrupted by a signal whose handler forks may hold (statistics,
 * segment_new): the two would wait for each other for ever.  The owner's
 * next retire or tidy gives such a segment back; its pages are discarded
 * meanwhile. */
static void page_retire_in(theap *h, mpage *pg, bool free_segs)
{
    segment *s = seg_of(pg);
    size_t i = (size_t)(pg - s->page);
    if (pg->prev)
        pg->prev->next = pg->next;
    else
        heap_set_head(h, class_of(pg->block_size), pg->next);
    if (pg->next)
        pg->next->prev = pg->prev;
    else
        h->tails[class_of(pg->block_size)] = pg->prev;
    pg->heap = NULL;
    pg->block_size = 0;
    /* no block threaded: the free fast path, which does not read the
     * page's owner, refuses a page not in use (see dmm_free) */
    page_set_nthr(pg, 0);
    atomic_fetch_add_explicit(&G.retired, 1, memory_order_relaxed);
    if (G.secure)
        memset((void *)s->bits[i], 0, sizeof s->bits[i]);
    s->pages_used--;
    s->dirty |= (uint64_t)1 << i; /* (in secure mode too: page_new zero-fills it) */
    if (++h->dirty_pages > DIRTY_PAGES_MAX)
        heap_discard_dirty(h);
    if (s->pages_used == 0 && free_segs)
        heap_free_empty_segs(h, 1u);
}

/* A page of h that its owner's free just emptied: retired unless it is
 * its class's current page, under the owner's hold on its lists
 * (heap_reclaim_idle may unlink a neighbour). */
static DMM_NOINLINE void page_retire_emptied(theap *h, mpage *pg)
{
    if (pg != h->pages[class_of(pg->block_size)]) {
        bool took = lists_lock(h);
        page_retire(h, pg);
        lists_unlock(h, took);
    }
}

/* How a free knows that the block is allocated.  It depends on the mode:
 *
 * default and unhardened: a free block carries the free tag (ftag: a
 *   random per-process key, never 0, as glibc's tcache key is) in its
 *   second word (blocks are at least 16 bytes), written by every free,
 *   local or remote, and by
 *   page_extend on blocks it threads; malloc clears it when it hands the
 *   block out.  A free that finds the tag is a double free (of a block on a
 *   local or a remote list alike); one past the page's threaded blocks
 *   (nthr) is of a block never handed out.  One load and one store on each
 *   path, no bitmap, no read-modify-write.  A program that stores the tag's
 *   exact 64-bit value in the second word of a live block would see its free
 *   reported (the key is random per process).
 * secure mode: a bitmap in the segment header, one bit per 16-byte slot,
 *   set and cleared with atomic read-modify-writes (mark), so that of two
 *   racing frees only one wins; the quarantine keeps blocks away from
 *   their owner's lists for a while. */
/* (The key alone, not mixed with the block's address: one instruction
 * less on every free's fast path, docs/malloc.md "The fast paths".) */
static inline uint64_t ftag(const void *b)
{
    (void)b;
    return G.rkey;
}
static inline uint64_t *tag_slot(void *b) { return (uint64_t *)b + 1; }
static inline bool tagged_free(const void *b) { return *tag_slot((void *)(uintptr_t)b) == ftag(b); }

static inline bool bit_is_set(segment *s, size_t pi, const void *p)
{
    size_t slot = ((uintptr_t)p & (PAGE_SIZE - 1u)) / MIN_BLOCK;
    return (atomic_load_explicit(&s->bits[pi][slot / 64u], memory_order_relaxed) >> (slot % 64u) & 1u) != 0;
}

/* Puts remote list x before pg's local list, both lists of pg being in use:
 * the exit's and the parked heap's paths, never small_slow's (out of line:
 * inlined, it kept page_collect from being inlined there). */
static DMM_NOINLINE void xsplice(mpage *pg, mblock *x)
{
    mblock *t = x;
    while (t->next)
        t = t->next;
    t->next = pg->local_free;
    pg->local_free = x;
}

/* Takes the page's remote frees in.  64-bit targets (XCOUNTED): the list
 * as it is becomes the free list when that is empty, else the local list
 * when that is, else goes before the local list (xsplice).  32-bit: its
 * blocks are moved onto the free list one by one.  Then the owner's frees
 * (local_free) become the free list if it is still empty.  Returns how
 * many remote frees it took. */
static DMM_ALWAYS_INLINE uint32_t page_collect(mpage *pg)
{
    /* a plain load first: no locked exchange on a page without remote frees
     * (small_slow looks at every page of a class whose head ran dry) */
    uintptr_t w = atomic_load_explicit(&pg->xfree, memory_order_relaxed) ?
                      atomic_exchange_explicit(&pg->xfree, 0, memory_order_acquire) : 0;
    mblock *x = (mblock *)w; /* (walked below on 32-bit targets only) */
    uint32_t n = 0;
    if (XCOUNTED && w) { /* the list as it is, its length from the word: no walk */
        x = xptr(w);
        n = (uint32_t)((uint64_t)w >> XCOUNT_SHIFT);
        if (!pg->free) {
            pg->free = x; /* the owner's own frees (local_free) stay for later */
        } else if (!pg->local_free) {
            pg->local_free = x;
        } else {
            xsplice(pg, x);
        }
        x = NULL;
    }
    if (!pg->free) { /* the owner's own frees become the free list */
        pg->free = pg->local_free;
        pg->local_free = NULL;
    }
    while (x) { /* the blocks keep their free tags */
        mblock *nx = x->next;
        x->next = pg->free;
        pg->free = x;
        x = nx;
        n++;
    }
    pg->used -= n;
    if (n) /* out of the page's count, no longer booked as pending (see small_live) */
        book_on(pg->heap, (int64_t)n * pg->block_size);
    return n;
}

/* Threads never-used blocks onto the free list, about FRESH_BYTES of them
 * (at least one block): threading writes into every block, so a bigger
 * batch would make a page of a large class resident all at once, and a
 * thread that uses a few blocks of many classes would pay a whole page per
 * class in resident memory. */
static bool page_extend(mpage *pg)
{
    segment *s;
    unsigned char *base;
    uint32_t k = 0, batch, n = page_nthr(pg), bump = n * pg->block_size, end;
    /* every block threaded already (the common case in small_slow's walk
     * over the full pages of a class: mimalloc-bench's alloc-test): no
     * division */
    if (bump + pg->block_size > PAGE_SIZE)
        return false;
    s = seg_of(pg);
    base = page_start(s, (size_t)(pg - s->page));
    batch = pg->block_size >= FRESH_BYTES ? 1u : FRESH_BYTES / pg->block_size;
    end = (uint32_t)(PAGE_SIZE / pg->block_size * pg->block_size);
    while (bump < end && k < batch) {
        mblock *b = (mblock *)(base + bump);
        b->next = pg->free;
        if (!G.secure) /* (secure mode keeps the canary in the last word) */
            *tag_slot(b) = ftag(b);
        pg->free = b;
        bump += pg->block_size;
        k++;
    }
    page_set_nthr(pg, n + k);
    return k != 0;
}

/* Secure mode: sets or clears the block's "allocated" bit atomically;
 * returns whether it was set. */
static inline bool mark(segment *s, size_t pi, const void *p, bool on)
{
    size_t slot = ((uintptr_t)p & (PAGE_SIZE - 1u)) / MIN_BLOCK;
    uint64_t bit = (uint64_t)1 << (slot % 64u), old;
    if (on)
        old = atomic_fetch_or_explicit(&s->bits[pi][slot / 64u], bit, memory_order_relaxed);
    else
        old = atomic_fetch_and_explicit(&s->bits[pi][slot / 64u], ~bit, memory_order_relaxed);
    return (old & bit) != 0;
}

/* Secure mode: the same bits in a medium segment's header (unused there:
 * one per 16 bytes of the whole segment) mark where the blocks handed out
 * start, set by malloc and cleared by free, so a copy into the segment can
 * find the block it writes (dmm_malloc_guard_write). */
static inline void mstart_mark(const void *p, bool on)
{
    segment *s = seg_of(p);
    (void)mark(s, page_index(s, p), p, on);
}

/* ---- thread heaps ---- */
/* Takes a parked heap for a short piece of work (a free into it): true with
 * h BUSY, false when h is owned (or lost).  Waits while another thread
 * holds it BUSY, which is never long (one free, a page retired). */
static bool heap_take_parked(theap *h)
{
    for (;;) {
        int st = HEAP_PARKED;
        if (atomic_compare_exchange_weak_explicit(&h->pstate, &st, HEAP_BUSY, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
        if (st == HEAP_OWNED || st == HEAP_LOST)
            return false;
        dmm_port_cpu_relax();
    }
}

static void heap_put_parked(theap *h) { atomic_store_explicit(&h->pstate, HEAP_PARKED, memory_order_seq_cst); }

static void heap_tidy(theap *h);
static void heap_tidy_keep(theap *h, bool warm);
static void quarantine_flush(theap *h);
static size_t medium_free_bytes(theap *h);
static void mc_flush(theap *h);


/* A warm parked heap (held BUSY) whose free memory went over its bound
 * while others freed into it: no longer warm, so the frees that follow
 * give memory back as into any parked heap (a discard walk every
 * PARKED_DISCARD_BYTES freed), not a walk on every free. */
static void heap_cool(theap *h)
{
    olock_lock(&G.parked_lock);
    for (unsigned i = 0; i < WARM_HEAPS; i++)
        if (G.warm[i] == h)
            G.warm[i] = NULL;
    atomic_store_explicit(&h->warm, false, memory_order_relaxed);
    olock_unlock(&G.parked_lock);
}

/* Takes `owner` when it is parked and take_owner, else the heap parked
 * last other than `owner` (NULL: any). */
static theap *heap_adopt(const theap *owner, bool take_owner)
{
    for (;;) {
        theap *h, **pp;
        olock_lock(&G.parked_lock);
        for (pp = &G.parked; take_owner && *pp && *pp != owner;)
            pp = &(*pp)->next_parked;
        if (!take_owner || !*pp)
            for (pp = &G.parked; *pp && *pp == owner;)
                pp = &(*pp)->next_parked;
        h = *pp;
        if (h) {
            *pp = h->next_parked;
            for (unsigned i = 0; i < WARM_HEAPS; i++) /* no longer parked: not for a purge */
                if (G.warm[i] == h)
                    G.warm[i] = NULL;
            atomic_store_explicit(&h->warm, false, memory_order_relaxed);
        }
        olock_unlock(&G.parked_lock);
        if (!h)
            return NULL;
        for (;;) {
            int st = HEAP_PARKED;
            if (atomic_compare_exchange_weak_explicit(&h->pstate, &st, HEAP_OWNED, memory_order_acquire,
                                                      memory_order_relaxed))
                return h;
            if (st == HEAP_LOST)
                break; /* dropped from the list for good */
            dmm_port_cpu_relax();
        }
    }
}

/* Binds the calling thread a heap: `owner` if it is parked and
 * take_owner, else a parked one other than `owner` if there is one (the
 * first malloc: any; the first remote free: see small_release_remote),
 * else a new one. */
static theap *heap_bind(const theap *owner, bool take_owner)
{
    theap *h = tl_heap;
    if (h)
        return h;
    global_init();
    if ((h = heap_adopt(owner, take_owner))) {
        atomic_fetch_add_explicit(&G.adopted, 1, memory_order_relaxed);
    } else {
        size_t pg = dmm_port_page_size();
        size_t bytes = (sizeof(theap) + pg - 1u) / pg * pg;
        if (!(h = dmm_port_pages_map(bytes)))
            return NULL;
        atomic_fetch_add_explicit(&G.heaps, 1, memory_order_relaxed);
        for (unsigned c = 0; c < NCLASS; c++)
            h->fast[c] = &empty_page;
        {
            static _Atomic unsigned next_tag = TAG_FIRST;
            unsigned t = atomic_fetch_add_explicit(&next_tag, 1u, memory_order_relaxed);
            h->tag = (uint8_t)(t <= TAG_LAST ? t : SEG_SMALL);
        }
        h->next_all = atomic_load_explicit(&G.all, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&G.all, &h->next_all, h, memory_order_release,
                                                      memory_order_relaxed))
            ;
    }
    h->next_parked = NULL;
    tl_heap = h;
    fast_view(G.secure ? &empty_heap : h);
    if (G.have_key)
        dmm_port_tkey_set(G.key, h);
    return h;
}

static theap *heap_get(void) { return heap_bind(NULL, false); }

/* Gives back what a heap not in use can: every page that is empty once
 * remote frees are in, and the medium heap (whole when empty, else the
 * pages inside its free blocks).  The caller owns h or holds it BUSY. */
static void heap_tidy(theap *h)
{
    heap_tidy_keep(h, false);
}

/* heap_tidy, or when warm, the part of it that keeps the heap's memory for
 * the next thread (see WARM_HEAPS): empty pages retired but resident
 * (within DIRTY_PAGES_MAX), one empty segment mapped, and the medium heap
 * as it is unless its free space is over WARM_MEDIUM_BYTES. */
static void heap_tidy_keep_in(theap *h, bool warm);

static void heap_tidy_keep(theap *h, bool warm)
{
    bool took = lists_lock(h);
    heap_tidy_keep_in(h, warm);
    lists_unlock(h, took);
}

static void heap_tidy_keep_in(theap *h, bool warm)
{
    quarantine_flush(h);
    if (h->mheap)
        mc_flush(h);
    for (unsigned c = 0; c < NCLASS; c++) {
        mpage *pg = h->pages[c];
        while (pg) {
            mpage *nx = pg->next;
            page_collect(pg);
            if (pg->used == 0)
                page_retire(h, pg);
            pg = nx;
        }
    }
    if (warm) {
        heap_free_empty_segs(h, 1u);
        if (h->mheap && medium_free_bytes(h) > WARM_MEDIUM_BYTES)
            medium_release_if_empty(h);
        return;
    }
    heap_discard_dirty(h);
    heap_free_empty_segs(h, 0);
    medium_release_if_empty(h);
}

/* Thread exit: tidy the heap, then park it for the next new thread.  It is
 * BUSY while being tidied, so that a free racing with the exit (which saw
 * the heap owned and pushed its block on a remote list) notices and takes
 * its block back in (see remote_recheck). */
static void heap_abandon(void *arg)
{
    theap *h = arg;
    if (!h)
        return;
    theap *cold = NULL;
    /* The quarantine first, while h is still owned: it holds blocks of
     * other threads' heaps, and one of those may be exiting too, busy with
     * its own quarantine, which holds blocks of h.  With h busy here, each
     * would wait for the other's heap for good. */
    quarantine_flush(h);
    atomic_store_explicit(&h->pstate, HEAP_BUSY, memory_order_seq_cst);
    heap_tidy_keep(h, true); /* (secure mode too, which purged every exiting heap: mimalloc-bench's
                              * mstress, whose threads come and go, faulted 5 times as often) */
    if (tl_heap == h) {
        tl_heap = NULL;
        fast_view(&empty_heap);
        tl_exited = true;
    }
    heap_put_parked(h);
    olock_lock(&G.parked_lock);
    h->next_parked = G.parked;
    G.parked = h;
    cold = G.warm[G.warm_next]; /* h takes the oldest warm heap's place */
    G.warm[G.warm_next] = h;
    G.warm_next = (G.warm_next + 1u) % WARM_HEAPS;
    atomic_store_explicit(&h->warm, true, memory_order_relaxed);
    if (cold)
        atomic_store_explicit(&cold->warm, false, memory_order_relaxed);
    olock_unlock(&G.parked_lock);
    /* still parked (not adopted since, nor lost in a fork child): its purge */
    if (cold && cold != h && heap_take_parked(cold)) {
        heap_tidy(cold);
        heap_put_parked(cold);
    }
}

/* A free that pushed its block on a remote list of h, which it saw owned:
 * if h has been parked since (its thread exited in between and may have
 * tidied before the push), the block would wait for an adoption; take it
 * in now.  (Both sides store then load with sequential consistency: the
 * exiting thread's tidy sees the push, or the freer sees the heap parked.) */
static void remote_recheck(theap *h)
{
    if (atomic_load_explicit(&h->pstate, memory_order_seq_cst) == HEAP_OWNED)
        return;
    if (heap_take_parked(h)) {
        heap_tidy(h);
        heap_put_parked(h);
    }
}

/* fork child: only the forking thread exists.  A heap some other thread
 * held BUSY may be half-updated: it is never touched again. */
static void heaps_after_fork(void)
{
    for (theap *h = atomic_load_explicit(&G.all, memory_order_acquire); h; h = h->next_all) {
        int st = HEAP_BUSY;
        (void)atomic_compare_exchange_strong_explicit(&h->pstate, &st, HEAP_LOST, memory_order_relaxed,
                                                      memory_order_relaxed);
    }
}

/* ---- small blocks ---- */
/* A class's current page stays with it when it empties (page_retire takes
 * only the others), so that a class whose blocks are all freed and taken
 * again does not retire and re-thread its page every time.  But a program
 * that uses one size for a while, frees it all and moves to another size
 * (mimalloc-bench's glibc-simple: 1,600 blocks of 16, then of 32, then of
 * 64 bytes) kept every class's page resident as far as it had been used:
 * the sum of the sizes' peaks where a heap of merged blocks holds their
 * maximum.  So before a class takes a page never used, an empty current
 * page of another class is retired, and page_new takes it (its memory
 * resident already).  Only a page with at least LEND_MIN_BYTES threaded:
 * one that emptied after a burst, not one a program takes one block of at
 * a time (a malloc and free of one size then another would otherwise pass
 * a page back and forth on every call).  And only for a class's first
 * page (classes_seen): lent to any class that ran out of pages, a page
 * went round the classes of a program that uses many sizes at once, each
 * class it left taking a fresh one later (mimalloc-bench's larson, peak
 * RSS +0.8 MB, median of 5).  No block of an empty page is out (used
 * counts the remote frees not yet taken in too). */
#define LEND_MIN_BYTES 16384u
static DMM_NOINLINE void page_lend_idle(theap *h, unsigned cls)
{
    for (unsigned c = 0; c < NCLASS; c++) {
        mpage *q = h->pages[c];
        if (c != cls && q && q->used == 0 && page_nthr(q) * q->block_size >= LEND_MIN_BYTES) {
            page_retire(h, q);
            return;
        }
    }
}

static void heap_reclaim_idle(theap *me);
#define RECLAIM_EVERY 8u
#define RECLAIM_IDLE_LOOKS 4u

static void *small_slow_in(theap *h, unsigned cls)
{
    mpage *pg = h->pages[cls];
    /* medium blocks other threads freed are taken in here too, so that they
     * count as freed (and are reusable) even if this thread makes no more
     * medium calls (into its cache: the owner's) */
    if (atomic_load_explicit(&h->mxfree, memory_order_relaxed))
        medium_drain_as(h, true);
    /* the head first, then the others: remote frees, then fresh blocks.  A
     * page with nothing to give goes to the tail, so the next walk looks
     * first at the pages looked at longest ago, which had the most time to
     * get blocks back: before, the full pages near the head were looked at
     * again on every walk (mimalloc-bench's alloc-test and larson, which
     * free at random among many live blocks: 3.6 to 4 pages per walk). */
    mpage *first_moved = NULL;
    for (mpage *q = pg, *nx; q && q != first_moved; q = nx) {
        nx = q->next;
        page_collect(q);
        if (q->free || page_extend(q)) {
            if (q != h->pages[cls]) { /* move to the head */
                if (h->tails[cls] == q)
                    h->tails[cls] = q->prev;
                q->prev->next = q->next;
                if (q->next)
                    q->next->prev = q->prev;
                q->prev = NULL;
                q->next = h->pages[cls];
                h->pages[cls]->prev = q;
                heap_set_head(h, cls, q);
            }
            return q;
        }
        if (nx) { /* not the tail: to the tail */
            mpage *t = h->tails[cls];
            if (q->prev)
                q->prev->next = nx;
            else
                heap_set_head(h, cls, nx);
            nx->prev = q->prev;
            q->prev = t;
            q->next = NULL;
            t->next = q;
            h->tails[cls] = q;
            if (!first_moved)
                first_moved = q;
        }
    }
    if (!h->dirty_pages && !(h->classes_seen >> cls & 1u)) /* a class's first page: an idle one of another */
        page_lend_idle(h, cls);
    if (!h->dirty_pages && ++h->fresh % RECLAIM_EVERY == 0) /* before a page never used: give back
                                                                what idle heaps hold for nothing */
        heap_reclaim_idle(h);
    pg = page_new(h, cls);
    if (pg && !page_extend(pg))
        return NULL;
    return pg;
}

/* small_slow_in under the owner's hold on its lists; its calls counted,
 * for heap_reclaim_idle. */
static void *small_slow(theap *h, unsigned cls)
{
    bool took = lists_lock(h);
    void *r;
    atomic_store_explicit(&h->epoch, atomic_load_explicit(&h->epoch, memory_order_relaxed) + 1u,
                          memory_order_relaxed);
    r = small_slow_in(h, cls);
    lists_unlock(h, took);
    return r;
}

/* Reclaiming an idle heap's pages.  A page's blocks freed by other
 * threads wait on its remote list until the owner takes them in, in its
 * own small_slow: a thread that made blocks, handed them to others and
 * then makes no allocation (mimalloc-bench's larson: the main thread makes
 * 10,000 blocks, starts the workers, which free them all, and sleeps) kept
 * their pages resident and counted in use for good (there, at the peak,
 * 101 pages, 6 MB, of which every block had been freed).  So a thread about
 * to take a page never used looks at the heaps owned by other threads: one
 * whose owner has made no small_slow call since the last look (epoch) is
 * taken for the moment (its lists' lock, tried, not waited for), and each
 * page of it whose every block out is on its remote list is retired for
 * the owner (then its memory discarded).  The owner touches a page other
 * than its classes' current ones only under that lock, or to free a block
 * of it, which it cannot hold when every block out is on the remote list;
 * the current pages, which its fast path takes blocks from, are left. */

/* pg's blocks out, if every one of them is on its remote list: takes the
 * list and clears the page's counts (the caller holds the owner's lists);
 * else 0.  Reads the owner's count, which its fast path writes without a
 * lock: when the count equals the remote list's length, the owner holds no
 * block of the page and will not write it again before page_new, so the
 * stale value this may read is only larger (the owner's frees lower it),
 * never a wrong match; hence not instrumented by ThreadSanitizer. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("thread")))
#endif
#endif
static uint32_t page_take_all_remote(mpage *pg)
{
    uintptr_t w = atomic_load_explicit(&pg->xfree, memory_order_acquire);
    mblock *x = xptr(w);
    uint32_t used = pg->used, n = 0;
    if (!x || !used)
        return 0;
    if (XCOUNTED) /* the list's length from its word (xptr) */
        n = (uint32_t)((uint64_t)w >> XCOUNT_SHIFT);
    else
        for (; x && n <= used; x = x->next)
            n++;
    if (n != used)
        return 0;
    if (!atomic_compare_exchange_strong_explicit(&pg->xfree, &w, 0, memory_order_acquire, memory_order_relaxed))
        return 0; /* (cannot happen while the count holds: no block of it is out to free) */
    pg->used = 0;
    pg->free = NULL;
    pg->local_free = NULL;
    return n;
}

/* Retires every page of h, but its classes' current ones, whose blocks out
 * were all freed by other threads; me (the calling thread's heap) books
 * them back in, as page_collect would have on h. */
static void heap_reclaim_pages(theap *me, theap *h)
{
    bool any = false;
    for (unsigned c = 0; c < NCLASS; c++) {
        mpage *pg = h->pages[c];
        for (pg = pg ? pg->next : NULL; pg;) {
            mpage *nx = pg->next; /* (in use: not in a segment page_retire may unmap) */
            uint32_t bs = pg->block_size, n = page_take_all_remote(pg);
            if (n) {
                book_on(me, (int64_t)n * bs);
                page_retire_in(h, pg, false); /* no segment_free: see page_retire_in */
                any = true;
            }
            pg = nx;
        }
    }
    if (any)
        heap_discard_dirty(h);
}

/* me: the calling thread's heap, whose lists it holds.  At most one thread
 * at a time (G.reclaim_lock, tried), every RECLAIM_EVERY calls of its
 * owner for a page never used; a heap is idle when RECLAIM_IDLE_LOOKS
 * looks in a row found its epoch unchanged (one was not enough: on two
 * cores shared by mimalloc-bench's xmalloc-test's four threads, a writer
 * off the CPU for a while had the pages its readers emptied discarded, and
 * faulted them in again: system time 0.37-0.42 s, 0.51-0.57 s with one
 * look, 3 runs each). */
static DMM_NOINLINE void heap_reclaim_idle(theap *me)
{
    if (!olock_try(&G.reclaim_lock))
        return;
    for (theap *h = atomic_load_explicit(&G.all, memory_order_acquire); h; h = h->next_all) {
        uint32_t e;
        if (h == me)
            continue;
        if (atomic_load_explicit(&h->pstate, memory_order_relaxed) != HEAP_OWNED) {
            h->idle_looks = 0; /* the thread that adopts it starts afresh */
            continue;
        }
        e = atomic_load_explicit(&h->epoch, memory_order_relaxed);
        if (atomic_load_explicit(&h->seen, memory_order_relaxed) != e) {
            atomic_store_explicit(&h->seen, e, memory_order_relaxed);
            h->idle_looks = 0;
            continue; /* its owner has been in small_slow since the last look */
        }
        if (++h->idle_looks < RECLAIM_IDLE_LOOKS || !olock_try(&h->lists))
            continue;
        h->idle_looks = 0;
        if (atomic_load_explicit(&h->pstate, memory_order_relaxed) == HEAP_OWNED)
            heap_reclaim_pages(me, h);
        olock_unlock(&h->lists);
    }
    olock_unlock(&G.reclaim_lock);
}

/* Takes the first block of pg's local free list (not empty), h being the
 * calling thread's heap and pg's owner: the fast path and the slow one. */
static inline void *page_pop(theap *h, mpage *pg)
{
    mblock *b = pg->free;
    pg->free = b->next;
    pg->used++;
    (void)h;
    *tag_slot(b) = 0; /* allocated: no free tag */
    if (G.secure) {
        segment *s = seg_of(b);
        b->next = NULL; /* handed out zero-filled, but for the canary */
        (void)mark(s, page_index(s, b), b, true);
    }
    return b;
}

static void *small_alloc(theap *h, unsigned cls)
{
    mpage *pg = h->pages[cls];
    if (!pg || !pg->free) {
        if (!(pg = small_slow(h, cls)))
            return NULL;
    }
    return page_pop(h, pg);
}

/* ---- large blocks ---- */
static void large_unmap_bytes(void *s, size_t bytes)
{
    atomic_fetch_sub_explicit(&G.mapped, bytes, memory_order_relaxed);
    dmm_port_pages_unmap(s, bytes);
}
static void large_unmap(segment *s) { large_unmap_bytes(s, s->map_bytes); }

/* Takes the cache's entries out that decayed (all of them when all is
 * set) into out (their sizes into outb); returns how many.  LC.lock held. */
static unsigned lcache_expire(segment **out, size_t *outb, bool all)
{
    unsigned k = 0, j = 0;
    for (unsigned i = 0; i < LC.n; i++) {
        if (all || LC.tick - LC.es[i] > LCACHE_DECAY) {
            out[k] = LC.e[i];
            outb[k++] = LC.eb[i];
            LC.bytes -= LC.eb[i];
        } else {
            LC.e[j] = LC.e[i];
            LC.eb[j] = LC.eb[i];
            LC.es[j++] = LC.es[i];
        }
    }
    LC.n = j;
    return k;
}

/* Unmaps every cached mapping (malloc_trim).  1 when there was one. */
static int lcache_flush(void)
{
    segment *out[LCACHE];
    size_t outb[LCACHE];
    unsigned k;
    olock_lock(&LC.lock);
    k = lcache_expire(out, outb, true);
    atomic_store_explicit(&LC.peek, LC.n, memory_order_relaxed);
    olock_unlock(&LC.lock);
    for (unsigned i = 0; i < k; i++)
        large_unmap_bytes(out[i], outb[i]);
    return k != 0;
}

/* Secure mode: malloc(0) returns a distinct pointer into an inaccessible
 * range, so any read or write through it faults.  Such pointers are cut
 * ZERO_STEP apart from segments of kind SEG_ZERO whose pages after the
 * header are guarded; free accepts them and never hands them out again. */
#define ZERO_STEP 16u
static struct {
    unsigned char *seg; /* the current zero segment */
    size_t next;        /* its next offset */
} ZS; /* under LC.lock */

static void *zero_alloc(void)
{
    void *p = NULL;
    olock_lock(&LC.lock);
    if (!ZS.seg || ZS.next >= SEG_SIZE) {
        segment *s = dmm_port_pages_map_aligned(SEG_SIZE, SEG_SIZE);
        if (s && (!dmm_port_pages_guard((unsigned char *)s + PAGE_SIZE, SEG_SIZE - PAGE_SIZE) ||
                  !reg_set((uintptr_t)s, SEG_ZERO))) {
            dmm_port_pages_unmap(s, SEG_SIZE);
            s = NULL;
        }
        if (s) {
            s->magic = SEG_MAGIC;
            s->kind = SEG_ZERO;
            ZS.seg = (unsigned char *)s;
            ZS.next = PAGE_SIZE;
            atomic_fetch_add_explicit(&G.mapped, SEG_SIZE, memory_order_relaxed);
        }
    }
    if (ZS.seg && ZS.next < SEG_SIZE) {
        p = ZS.seg + ZS.next;
        ZS.next += ZERO_STEP;
    }
    olock_unlock(&LC.lock);
    if (!p)
        errno = ENOMEM;
    return p;
}

/* Secure mode: a freed large block's range is made inaccessible, empty
 * (its pages moved out for the cache by large_move_out, or discarded), and
 * kept so for the next LQUAR large frees before it is unmapped: a stale
 * pointer's read or write faults, and the next large blocks get other
 * addresses (an unmapped range is what the kernel hands out next). */
#define LQUAR 64u
static struct {
    segment *e[LQUAR];
    size_t bytes[LQUAR]; /* (their headers are inaccessible) */
    unsigned head;
} LQ; /* under LC.lock */

static inline uint64_t canary_of(const void *b);

/* Puts an inaccessible mapping of bytes in the ring, its pages discarded
 * (when it still has any: discard), and unmaps the one it pushes out. */
static void lq_push(segment *s, size_t bytes, bool discard)
{
    segment *old;
    size_t old_bytes;
    if (discard)
        dmm_port_pages_discard(s, bytes);
    olock_lock(&LC.lock);
    old = LQ.e[LQ.head];
    old_bytes = LQ.bytes[LQ.head];
    LQ.e[LQ.head] = s;
    LQ.bytes[LQ.head] = bytes;
    LQ.head = (LQ.head + 1u) % LQUAR;
    olock_unlock(&LC.lock);
    if (old) {
        atomic_fetch_sub_explicit(&G.mapped, old_bytes, memory_order_relaxed);
        dmm_port_pages_unmap(old, old_bytes);
    }
}

static void large_retire_secure(segment *s)
{
    size_t bytes = s->map_bytes;
    if (!dmm_port_pages_guard(s, bytes)) {
        large_unmap(s);
        return;
    }
    lq_push(s, bytes, true);
}

/* Secure mode: a freed large block's pages (its mapping s of bytes, a
 * guard page at the end) moved to a new mapping, which is returned for the
 * cache, while s stays reserved, empty and inaccessible in the ring, as
 * large_retire_secure leaves it (a stale pointer faults, and the next large
 * blocks get other addresses), at a cost that does not grow with the pages
 * (an mprotect or madvise of resident pages does: on mimalloc-bench's
 * malloc-large, 5-25 MiB blocks, an mprotect took 0.28 ms).  NULL, with s
 * untouched, when the port cannot move pages; NULL with s retired when the
 * new mapping cannot be guarded (*done set). */
static segment *large_move_out(segment *s, size_t bytes, bool *done)
{
    size_t g = dmm_port_page_size(), end = bytes - s->large_guard;
    segment *t;
    if (end + g < bytes && !dmm_port_pages_unguard((unsigned char *)s + end, g))
        return NULL; /* (a mapping reused for a smaller block: its guard after the block goes) */
    if (!(t = dmm_port_pages_map_aligned(bytes, SEG_SIZE)))
        return NULL;
    if (!dmm_port_pages_move_out(s, bytes - g, t)) {
        dmm_port_pages_unmap(t, bytes);
        return NULL;
    }
    *done = true;
    atomic_fetch_add_explicit(&G.mapped, bytes, memory_order_relaxed); /* t; s stays counted in the ring */
    if (dmm_port_pages_guard(s, bytes - g))
        lq_push(s, bytes, false);
    else
        large_unmap_bytes(s, bytes); /* (s's header moved out with its pages: s reads as zeros) */
    if (!dmm_port_pages_guard((unsigned char *)t + bytes - g, g)) {
        large_unmap_bytes(t, bytes);
        return NULL;
    }
    return t;
}

/* Secure mode: the bytes just before a large block (between its header and
 * the block, which ends at the guard page) are filled with a keyed pattern
 * when it is handed out and checked when it is freed: an underflow that
 * stays inside the mapping is caught. */
#define LARGE_FRONT 64u
static inline size_t large_front_start(const segment *s)
{
    return s->large_off >= LARGE_HDR + LARGE_FRONT ? s->large_off - LARGE_FRONT : LARGE_HDR;
}

static void large_front_fill(segment *s)
{
    unsigned char *b = (unsigned char *)s;
    for (size_t i = large_front_start(s); i + 8u <= s->large_off; i += 8u) {
        uint64_t w = canary_of(b + i);
        memcpy(b + i, &w, 8u);
    }
}

static bool large_front_intact(segment *s)
{
    unsigned char *b = (unsigned char *)s;
    for (size_t i = large_front_start(s); i + 8u <= s->large_off; i += 8u) {
        uint64_t w;
        memcpy(&w, b + i, 8u);
        if (w != canary_of(b + i))
            return false;
    }
    return true;
}

/* The cache's byte bound: LCACHE_BYTES, or a quarter of the large bytes
 * in use when that is more (a program with many big blocks live reuses
 * them), at most LCACHE_BYTES_MAX. */
static size_t lcache_budget(void)
{
    uint64_t q = atomic_load_explicit(&G.large_bytes, memory_order_relaxed) / 4u;
    return q <= LCACHE_BYTES ? LCACHE_BYTES : q >= LCACHE_BYTES_MAX ? LCACHE_BYTES_MAX : (size_t)q;
}

static void large_free(segment *s)
{
    size_t bytes = s->map_bytes, outb[LCACHE + 1u], budget;
    segment *out[LCACHE + 1u];
    unsigned k = 0;
    reg_set((uintptr_t)s, 0);
    s->magic = 0;
    atomic_fetch_sub_explicit(&G.large_bytes, bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&G.large_count, 1, memory_order_relaxed);
    budget = lcache_budget();
    if (G.secure && s->large_off < SEG_SIZE) {
        bool done = false;
        segment *t = s->large_guard && bytes <= budget / 2u ? large_move_out(s, bytes, &done) : NULL;
        if (!t) {
            if (!done)
                large_retire_secure(s);
            return;
        }
        s = t; /* its pages are cached, at an address never handed out */
    } else if (s->large_off >= SEG_SIZE || bytes > budget / 2u || s->large_guard) {
        large_unmap(s);
        return;
    }
    if (lcache_guarded(bytes) && !dmm_port_pages_guard(s, bytes)) { /* stale pointers fault while it waits */
        large_unmap_bytes(s, bytes);
        return;
    }
    olock_lock(&LC.lock);
    LC.tick++;
    k = lcache_expire(out, outb, false);
    while (LC.n && (LC.n == LCACHE || LC.bytes + bytes > budget)) { /* the oldest go */
        out[k] = LC.e[0];
        outb[k++] = LC.eb[0];
        LC.bytes -= LC.eb[0];
        memmove(&LC.e[0], &LC.e[1], (LC.n - 1u) * sizeof LC.e[0]);
        memmove(&LC.eb[0], &LC.eb[1], (LC.n - 1u) * sizeof LC.eb[0]);
        memmove(&LC.es[0], &LC.es[1], (LC.n - 1u) * sizeof LC.es[0]);
        LC.n--;
    }
    LC.e[LC.n] = s;
    LC.eb[LC.n] = bytes;
    LC.es[LC.n++] = LC.tick;
    LC.bytes += bytes;
    atomic_store_explicit(&LC.peek, LC.n, memory_order_relaxed);
    olock_unlock(&LC.lock);
    for (unsigned i = 0; i < k; i++)
        large_unmap_bytes(out[i], outb[i]);
}

/* Removes cache entry i (LC.lock held). */
static void lcache_remove(unsigned i)
{
    LC.bytes -= LC.eb[i];
    memmove(&LC.e[i], &LC.e[i + 1u], (LC.n - 1u - i) * sizeof LC.e[0]);
    memmove(&LC.eb[i], &LC.eb[i + 1u], (LC.n - 1u - i) * sizeof LC.eb[0]);
    memmove(&LC.es[i], &LC.es[i + 1u], (LC.n - 1u - i) * sizeof LC.es[0]);
    LC.n--;
}

/* A new mapping of bytes (SEG_SIZE-aligned) for a large request, need of
 * whose bytes are fresh pages (all of them, or the part a grown mapping
 * adds); first, cached mappings of at most LGUARD_MAX, the oldest first,
 * are taken out until as many bytes went, and unmapped once the new one is
 * mapped (so the kernel cannot hand their addresses out as the new block's:
 * the block freed last is not the next one, Hardening), or, when it could
 * not be mapped, before it is tried once more.  The request could
 * not use them (none held it, none was big enough to grow), and they stay
 * resident beside the new pages: mimalloc-bench's mstress, whose large
 * blocks are mostly 156 KB to 625 KB with a few of 1.2 to 5 MB, held 2 to
 * 4 MB of them at its peak.  Only the small ones: they cost few faults when
 * made afresh, while a big one a later request takes saves many (unmapping
 * any cached mapping here made mimalloc-bench's malloc-large, 5-25 MiB
 * blocks, fault 2.4 times as often). */
static segment *large_map_shedding(size_t bytes, size_t need)
{
    segment *out[LCACHE], *s;
    size_t outb[LCACHE], got = 0;
    unsigned k = 0;
    if (atomic_load_explicit(&LC.peek, memory_order_relaxed)) {
        olock_lock(&LC.lock);
        for (unsigned i = 0; i < LC.n && got < need;) {
            /* not the guarded mapping the last large free put there: the
             * request was refused it for its address, not its size (a loop
             * of one block's malloc and free would map afresh each time),
             * and unmapped, its address could come back as a block before
             * another large free (Hardening) */
            if (LC.eb[i] > LGUARD_MAX || (lcache_guarded(LC.eb[i]) && LC.es[i] == LC.tick)) {
                i++;
                continue;
            }
            out[k] = LC.e[i];
            outb[k] = LC.eb[i];
            got += outb[k++];
            lcache_remove(i);
        }
        atomic_store_explicit(&LC.peek, LC.n, memory_order_relaxed);
        olock_unlock(&LC.lock);
    }
    s = dmm_port_pages_map_aligned(bytes, SEG_SIZE);
    for (unsigned i = 0; i < k; i++)
        large_unmap_bytes(out[i], outb[i]);
    if (!s && k) /* the room the shed mappings held may be what the kernel lacked (RLIMIT_AS, overcommit) */
        s = dmm_port_pages_map_aligned(bytes, SEG_SIZE);
    return s;
}

/* Takes out of the cache the entry the rule picks for a request of bytes,
 * or NULL; *have: its size.  grow false: the smallest mapping that holds
 * bytes and is at most LREUSE times as much (not a guarded one the last
 * large free put there); grow true: the largest unguarded one below bytes
 * and at least a quarter of it.  The newest first among equals: its pages
 * are the warmest. */
static segment *lcache_pick(size_t bytes, bool grow, size_t *have)
{
    segment *s = NULL;
    unsigned best = LCACHE;
    if (!atomic_load_explicit(&LC.peek, memory_order_relaxed)) /* an empty cache costs no lock */
        return NULL;
    olock_lock(&LC.lock);
    for (unsigned i = LC.n; i-- > 0;) {
        size_t eb = LC.eb[i];
        bool fits = grow ? eb < bytes && eb >= bytes / 4u && !lcache_guarded(eb) &&
                               (best == LCACHE || eb > LC.eb[best])
                         : eb >= bytes && eb / LREUSE <= bytes && (best == LCACHE || eb < LC.eb[best]) &&
                               !(lcache_guarded(eb) && LC.es[i] == LC.tick);
        if (fits)
            best = i;
    }
    if (best != LCACHE) {
        s = LC.e[best];
        *have = LC.eb[best];
        lcache_remove(best);
    }
    atomic_store_explicit(&LC.peek, LC.n, memory_order_relaxed);
    olock_unlock(&LC.lock);
    return s;
}

/* The smallest cached mapping of at least bytes (and at most LREUSE times
 * as much; the newest of equal ones), made accessible again, or NULL.  Not
 * a guarded one the last large free put there: a freed block's address is
 * not the next block's. */
static segment *lcache_take(size_t bytes)
{
    size_t have = 0;
    segment *s = lcache_pick(bytes, false, &have);
    if (s && lcache_guarded(have) && !dmm_port_pages_unguard(s, have)) {
        large_unmap_bytes(s, have);
        s = NULL;
    }
    return s;
}

/* Secure mode: a cached mapping for a request that would map bytes (the
 * block, its header and one guard page of guard bytes), or NULL: one of
 * at least bytes (*have), whose page at bytes - guard becomes a guard (one
 * page made inaccessible: no cost per resident page), so the block ends
 * where a new mapping's would; the pages past it stay as they are (they
 * hold an old block's data, out of the block's reach) and go with the
 * mapping when it is freed.  The block's bytes are zeroed (blocks are
 * handed out zero, as from a new mapping).  Its address was never handed
 * out (large_move_out). */
static segment *lcache_take_secure(size_t bytes, size_t guard, size_t *have)
{
    unsigned char *b = (unsigned char *)lcache_pick(bytes, false, have);
    if (!b)
        return NULL;
    if (*have > bytes && !dmm_port_pages_guard(b + bytes - guard, guard)) {
        large_unmap_bytes(b, *have);
        return NULL;
    }
    memset(b + LARGE_HDR, 0, bytes - guard - LARGE_HDR);
    return (segment *)b;
}

/* When no cached mapping holds bytes: the largest unguarded one below it
 * (at least a quarter of it), its pages moved to the start of a new
 * mapping of bytes, so only the pages added fault; NULL when there is none
 * or the port cannot move pages.  The mapping's header moved with it. */
static segment *lcache_take_grow(size_t bytes, size_t guard)
{
    size_t have = 0;
    segment *t, *s = lcache_pick(bytes, true, &have);
    if (!s)
        return NULL;
    if (!(t = large_map_shedding(bytes, bytes - have))) {
        large_unmap_bytes(s, have);
        return NULL;
    }
    if (!dmm_port_pages_move(s, have - guard, t, bytes)) { /* secure: not its guard page */
        large_unmap_bytes(s, have);
        dmm_port_pages_unmap(t, bytes);
        return NULL;
    }
    if (guard) {
        dmm_port_pages_unmap((unsigned char *)s + have - guard, guard);
        memset((unsigned char *)t + LARGE_HDR, 0, have - guard - LARGE_HDR); /* the old block's pages */
        t->large_guard = 0; /* large_alloc puts it at the end */
    }
    atomic_fetch_sub_explicit(&G.mapped, have, memory_order_relaxed); /* large_alloc counts t */
    return t;
}

static void raise_to(_Atomic uint64_t *m, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(m, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak_explicit(m, &cur, v, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* The most large blocks and large-block bytes held at once (malloc_stats's
 * "max mmap" lines). */
static void large_high_water(uint64_t count, uint64_t bytes)
{
    raise_to(&G.large_count_max, count);
    raise_to(&G.large_bytes_max, bytes);
}

static void *large_alloc(size_t n, size_t align)
{
    size_t off = G.harden ? LARGE_HDR + LARGE_FRONT : LARGE_HDR, pgsz = dmm_port_page_size(), bytes, body;
    segment *s;
    if (align > LARGE_HDR)
        off = align > off ? align : off;
    if (align >= SEG_SIZE) {
        /* The block starts on a SEG_SIZE boundary, where a header would be:
         * the header goes one SEG_SIZE before it (block_seg).  Over-map by
         * the alignment, keep [block - SEG_SIZE, block + n). */
        unsigned char *raw, *blk;
        if (n > SIZE_MAX - pgsz || (body = (n + pgsz - 1u) / pgsz * pgsz) > SIZE_MAX - align - SEG_SIZE ||
            !(raw = dmm_port_pages_map_aligned(align + body, align))) {
            errno = ENOMEM;
            return NULL;
        }
        blk = raw + align;
        s = (segment *)(blk - SEG_SIZE);
        if ((unsigned char *)s > raw)
            dmm_port_pages_unmap(raw, (size_t)((unsigned char *)s - raw));
        off = SEG_SIZE;
        bytes = SEG_SIZE + body;
    } else {
        size_t guard = G.secure ? pgsz : 0u, have = 0;
        if (n > SIZE_MAX - off - pgsz - guard) {
            errno = ENOMEM;
            return NULL;
        }
        bytes = (off + n + pgsz - 1u) / pgsz * pgsz + guard;
        if (guard && (s = lcache_take_secure(bytes, guard, &have))) {
            off = (bytes - guard - n) & ~((align < DMM_MALLOC_ALIGN ? DMM_MALLOC_ALIGN : align) - 1u);
            s->large_guard = have - (bytes - guard); /* the block ends at the new guard page */
            bytes = have; /* still counted as mapped */
            atomic_fetch_sub_explicit(&G.mapped, bytes, memory_order_relaxed);
            s->large_dirty = false;
        } else if (!guard && (s = lcache_take(bytes))) {
            bytes = s->map_bytes; /* still registered as mapped */
            atomic_fetch_sub_explicit(&G.mapped, bytes, memory_order_relaxed);
            s->large_dirty = true;
        } else if ((s = lcache_take_grow(bytes, guard))) {
            s->large_dirty = !guard; /* its front holds the old mapping's pages (zeroed in secure mode) */
        } else if (!(s = large_map_shedding(bytes, bytes))) {
            errno = ENOMEM;
            return NULL;
        }
        if (guard && (s->large_guard || dmm_port_pages_guard((unsigned char *)s + bytes - guard, guard))) {
            /* secure: the block ends at the guard page (to its alignment) */
            size_t a = align < DMM_MALLOC_ALIGN ? DMM_MALLOC_ALIGN : align;
            if (!s->large_guard) {
                off = (bytes - guard - n) & ~(a - 1u);
                s->large_guard = guard;
            }
        }
        s->large_off = off;
        s->large_front = G.harden;
        if (s->large_front)
            large_front_fill(s);
    }
    if (!reg_set((uintptr_t)s, SEG_LARGE)) {
        dmm_port_pages_unmap(s, bytes);
        errno = ENOMEM;
        return NULL;
    }
    s->magic = SEG_MAGIC;
    s->kind = SEG_LARGE;
    s->map_bytes = bytes;
    s->large_off = off;
    atomic_fetch_add_explicit(&G.mapped, bytes, memory_order_relaxed);
    large_high_water(atomic_fetch_add_explicit(&G.large_count, 1, memory_order_relaxed) + 1u,
                     atomic_fetch_add_explicit(&G.large_bytes, bytes, memory_order_relaxed) + bytes);
    return (unsigned char *)s + off;
}


/* A large block grown by moving its pages into a bigger mapping: no copy,
 * and no fault on the pages already written (a buffer grown by realloc
 * would otherwise be copied, and made resident afresh, at every step).
 * NULL when the port cannot move pages: the caller copies. */
static void *large_grow(segment *s, void *p, size_t n)
{
    size_t off = (size_t)((unsigned char *)p - (unsigned char *)s), pgsz = dmm_port_page_size(), bytes, old;
    segment *t;
    if (n > SIZE_MAX - off - pgsz || (s->large_front && !large_front_intact(s)))
        return NULL; /* (a damaged front is reported by the free after the copy) */
    bytes = (off + n + pgsz - 1u) / pgsz * pgsz;
    old = s->map_bytes;
    /* as a fresh mapping for a new block does: the small cached mappings
     * the growth could not use go, as many bytes as it adds */
    if (!(t = large_map_shedding(bytes, bytes > old ? bytes - old : 0u))) /* (never below old: realloc keeps a large block it shrinks) */
        return NULL;
    if (!reg_set((uintptr_t)t, SEG_LARGE)) {
        dmm_port_pages_unmap(t, bytes);
        return NULL;
    }
    reg_set((uintptr_t)s, 0);
    if (!dmm_port_pages_move(s, old, t, bytes)) {
        reg_set((uintptr_t)s, SEG_LARGE);
        reg_set((uintptr_t)t, 0);
        dmm_port_pages_unmap(t, bytes);
        return NULL;
    }
    t->map_bytes = bytes;
    t->large_off = off;
    if (t->large_front)
        large_front_fill(t); /* the fill is keyed by address */
    atomic_fetch_add_explicit(&G.mapped, bytes - old, memory_order_relaxed);
    raise_to(&G.large_bytes_max,
             atomic_fetch_add_explicit(&G.large_bytes, bytes - old, memory_order_relaxed) + bytes - old);
    return (unsigned char *)t + off;
}

/* ---- medium blocks ---- */
#define MEDIUM_OFF PAGE_SIZE /* the heap's memory starts after the segment header */

/* A medium segment is given to its heap MCHUNK bytes at a time, in address
 * order (medium_alloc); the rest stays inaccessible until the heap needs
 * it, so a far overflow of a medium block (mimalloc-bench's
 * one_mbyte_overflow of a 4 KiB block) faults in a segment that is not yet
 * full, as it does past small pages (segment_new).  One mprotect per chunk,
 * once.  Whole mode keeps whole segments: its blocks go up to 1 MiB. */
#define MCHUNK (SMALL_MAX ? (size_t)512 << 10 : SEG_SIZE)

static segment *medium_segment(theap *h)
{
    segment *s = segment_map(h, SEG_MEDIUM, &h->msegs);
    if (!s)
        return NULL;
    s->mtop = SEG_SIZE;
    if (MCHUNK < SEG_SIZE && dmm_port_pages_guard((unsigned char *)s + MCHUNK, SEG_SIZE - MCHUNK))
        s->mtop = MCHUNK; /* (a port that cannot guard gives the heap the whole segment) */
    return s;
}

/* The heap's next chunk of its newest segment, or a new segment's first,
 * added to it.  false when there is none. */
static bool medium_extend(theap *h)
{
    segment *s = h->msegs;
    if (s && s->mtop < SEG_SIZE) {
        unsigned char *lo = (unsigned char *)s + s->mtop;
        if (!dmm_port_pages_unguard(lo, MCHUNK))
            return false;
        s->mtop += MCHUNK;
        h->mfoot += MCHUNK;
        return dmm_heap_add_region(h->mheap, lo, MCHUNK) == DMM_OK;
    }
    if (!(s = medium_segment(h)))
        return false;
    h->mfoot += s->mtop - MEDIUM_OFF;
    return dmm_heap_add_region(h->mheap, (unsigned char *)s + MEDIUM_OFF, s->mtop - MEDIUM_OFF) == DMM_OK;
}

/* Block bytes the medium heap has handed out (its own O(1) counter): the
 * medium booking is the change of this around each call, so a bad pointer
 * is validated (and reported) by the heap once, never by a size query. */
/* Medium blocks are booked by their usable size, read from the block's
 * header (the same at malloc and at free: dmm_heap_block_usable_size),
 * not by the heap's live-bytes counter before and after the call: that is
 * a locked copy of the heap's statistics, twice per call, which was 13 %
 * of mimalloc-bench rptest's instructions (58 M of 457 M). */
static inline int64_t musable(theap *h, const void *p) { return (int64_t)dmm_heap_block_usable_size(h->mheap, p); }

/* Frees medium block p into h's heap; the bytes to book off (0 when the
 * heap refused the free and reported it). */
static inline int64_t mfree(theap *h, void *p)
{
    int64_t u = musable(h, p);
    uint64_t r = tl_reports;
    dmm_heap_free(h->mheap, p);
    return tl_reports == r ? u : 0;
}

/* ---- the medium cache ----
 * Freed medium blocks of up to 128 KiB wait in their owner thread's cache,
 * by size class, before the medium heap gets them: a malloc of the class
 * takes the newest (mc_take), with no call into the heap, and a free of a
 * live block puts it there (mc_put), so a program that frees and allocates
 * medium sizes in turn (mimalloc-bench's rptest, alloc-test) runs neither
 * the heap's entry checks nor its split and merge.  A request that misses
 * is rounded up to its class's size, so that its block serves the class
 * again.  Bounded: MC_SLOTS blocks per class, G.mc_max bytes in all; a free
 * beyond either goes to the heap.  The cache is emptied into the heap at
 * thread exit and by malloc_trim (mc_flush), before anything asks the heap
 * whether it is empty.  Cached blocks are not in use for the statistics
 * (booked out at mc_put, back in at mc_take).  Off in secure mode.
 *
 * What stands for the heap's checks: a bit per 16-byte slot of the medium
 * segment's header (the bits secure mode uses for its block starts), set
 * when a block is handed out and cleared when it is freed, by the owner
 * only (another thread's free goes to mxfree; the owner clears the bit
 * when it drains it, or the thread holding a parked heap does).  Kept
 * whenever secure mode is off, cache or not: another thread's free reads
 * the bit before it writes mxfree's link into the block (medium_free).  A free
 * whose bit is clear is not a live block's start: a cached block (found by
 * a scan of the cache: a double free, reported) or a pointer the heap
 * validates and reports as before.  The cache is an array: nothing of it
 * lives in the blocks, so a write after free cannot redirect it. */
static inline _Atomic uint64_t *mbit_word(const void *p, uint64_t *bit)
{
    segment *s = seg_of(p);
    size_t slot = ((uintptr_t)p & (PAGE_SIZE - 1u)) / MIN_BLOCK;
    *bit = (uint64_t)1 << (slot % 64u);
    return &s->bits[page_index(s, p)][slot / 64u];
}

/* The owner's (or the parked heap holder's) plain load and store. */
static inline void mlive_set(const void *p)
{
    uint64_t bit;
    _Atomic uint64_t *w = mbit_word(p, &bit);
    atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) | bit, memory_order_relaxed);
}

static inline bool mlive_is(const void *p)
{
    uint64_t bit;
    return (atomic_load_explicit(mbit_word(p, &bit), memory_order_relaxed) & bit) != 0;
}

/* Clears p's bit; whether it was set. */
static inline bool mlive_take(const void *p)
{
    uint64_t bit, v;
    _Atomic uint64_t *w = mbit_word(p, &bit);
    v = atomic_load_explicit(w, memory_order_relaxed);
    if (!(v & bit))
        return false;
    atomic_store_explicit(w, v & ~bit, memory_order_relaxed);
    return true;
}

/* n > MC_LO: the smallest class of at least n bytes (MC_NCLASS or more:
 * none); mc_size: a class's size. */
static inline unsigned mc_up(size_t n)
{
    size_t m = n - 1u;
    unsigned k = dmm_log2_floor(m); /* 2^k <= m < 2^(k+1), k >= 11 */
    return (k - 11u) * 8u + (unsigned)(m >> (k - 3u)) - 8u;
}

static inline size_t mc_size(unsigned c) { return (size_t)(c % 8u + 9u) << (c / 8u + 8u); }

/* Is p in h's cache? (the misuse path: a scan of all of it) */
static bool mc_holds(const theap *h, const void *p)
{
    for (unsigned c = 0; c < MC_NCLASS; c++)
        for (unsigned i = 0; i < h->mc_n[c]; i++)
            if (h->mc[c][i] == p)
                return true;
    return false;
}

/* A block of class c from the calling thread's cache (h is its heap), or
 * NULL. */
static inline void *mc_take(theap *h, unsigned c)
{
    void *p;
    int64_t u;
    if (!h->mc_n[c])
        return NULL;
    p = h->mc[c][--h->mc_n[c]];
    *tag_slot(p) = 0; /* (another thread's free may have left its tag: medium_free) */
    u = musable(h, p);
    h->mc_bytes -= (size_t)u;
    book(u);
    mlive_set(p);
    return p;
}

/* The medium cache's bound for h: G.mc_max (DMM_MEDIUM_CACHE), and no more
 * than 1 / 2^MC_FOOT_SHIFT of the memory h's medium heap has been given.
 * Blocks held in the cache serve only their class, so the heap grows for
 * the other requests: with a fixed 1 MiB, a thread with a small medium heap
 * (mimalloc-bench's espresso: peak RSS 3.8 MB, 2.7 MB with the cache off,
 * glibc 2.4) kept a cache the size of the heap.  A thread with many medium
 * blocks (rptest, alloc-test: heaps of several MiB) keeps the full bound. */
static inline size_t mc_cap(const theap *h)
{
    size_t f = h->mfoot >> (h->mfoot > MCHUNK - MEDIUM_OFF ? MC_FOOT_SHIFT : MC_FIRST_SHIFT);
    return f < G.mc_max ? f : G.mc_max;
}

/* Live medium block p (its bit cleared) into the owner's cache; the bytes
 * booked off, or -1 when it does not fit (the caller frees it into the
 * heap).  Its usable size is read from the heap's header, bounded by the
 * segment's end. */
static inline int64_t mc_put(theap *h, void *p)
{
    size_t u = (size_t)musable(h, p), room = (size_t)((unsigned char *)seg_of(p) + SEG_SIZE - (unsigned char *)p);
    unsigned c;
    if (u <= MC_LO || u > room || h->mc_bytes + u > mc_cap(h))
        return -1;
    if ((c = mc_up(u + 1u)) == 0)
        return -1; /* below the first class */
    if (--c >= MC_NCLASS)
        c = MC_NCLASS - 1u; /* the largest class: 128 KiB */
    if (h->mc_n[c] >= MC_SLOTS)
        return -1;
    h->mc[c][h->mc_n[c]++] = p;
    h->mc_bytes += u;
    return (int64_t)u;
}

/* A free of medium block p of h, by its owner (cache: true) or the thread
 * holding the parked heap h, or the owner draining other threads' frees:
 * the bytes to book off. */
static int64_t mrelease(theap *h, void *p, bool cache)
{
    if (!G.secure) { /* (secure mode's bits are its block starts, cleared by its free) */
        int64_t u;
        if (!mlive_take(p)) {
            if (G.mc_max && mc_holds(h, p)) {
                report("double free of", p);
                return 0;
            }
            return mfree(h, p); /* not a live block's start: the heap reports it */
        }
        if (G.mc_max && cache && (u = mc_put(h, p)) >= 0)
            return u;
    }
    return mfree(h, p);
}

/* The cache into the heap (thread exit, malloc_trim, a heap tidied). */
static void mc_flush(theap *h)
{
    for (unsigned c = 0; c < MC_NCLASS; c++)
        while (h->mc_n[c])
            dmm_heap_free(h->mheap, h->mc[c][--h->mc_n[c]]); /* booked off when cached */
    h->mc_bytes = 0;
}

/* The calling thread's cached bytes (tests/malloc: not in the public API). */
size_t dmm__malloc_mcache_bytes(void);
size_t dmm__malloc_mcache_bytes(void) { return tl_heap ? tl_heap->mc_bytes : 0; }

/* Frees what other threads handed back: into the cache when the owner
 * drains (cache: mimalloc-bench's rptest with 2 threads frees half its
 * blocks on the other thread), else into the heap. */
static void medium_drain_as(theap *h, bool cache)
{
    mblock *x = atomic_exchange_explicit(&h->mxfree, NULL, memory_order_acquire);
    int64_t freed = 0;
    if (!x)
        return;
    while (x) { /* booked here: the freeing threads did not know the sizes */
        mblock *nx = x->next;
        freed += mrelease(h, x, cache);
        x = nx;
    }
    book(-freed);
}

/* A heap tidied or held parked: into the heap. */
static void medium_drain(theap *h) { medium_drain_as(h, false); }

static void *medium_alloc(theap *h, size_t n, size_t align)
{
    void *p;
    segment *s;
    if (atomic_load_explicit(&h->mxfree, memory_order_relaxed))
        medium_drain_as(h, true);
    /* room for what another thread's free writes (mxfree's link, then the
     * free tag in the second 8 bytes: medium_free): a small request with a
     * large alignment comes here, and on a 32-bit target the heap would
     * give it 8 bytes */
    if (n < 2u * sizeof(uint64_t))
        n = 2u * sizeof(uint64_t);
    if (G.mc_max && n > MC_LO && align <= DMM_MALLOC_ALIGN) {
        unsigned c = mc_up(n);
        if (c < MC_NCLASS) {
            if ((p = mc_take(h, c)) != NULL)
                return p;
            n = mc_size(c); /* its block serves the class when it comes back */
        }
    }
    if (!h->mheap) {
        if (!(s = medium_segment(h)))
            return NULL;
        if (dmm_heap_init(&h->mheap, (unsigned char *)s + MEDIUM_OFF, s->mtop - MEDIUM_OFF, &G.mcfg) != DMM_OK) {
            h->mheap = NULL;
            return NULL;
        }
        h->mfoot = s->mtop - MEDIUM_OFF;
        atomic_store_explicit(&h->has_mheap, true, memory_order_relaxed);
    }
    /* every request fits a chunk: at worst the rest of a segment's chunks
     * and one new segment are tried */
    for (unsigned tries = 0; tries <= SEG_SIZE / MCHUNK + 1u; tries++) {
        /* the heap aligns to two words: 8 bytes on 32-bit targets, below
         * malloc's 16, which such a target then asks for (folded away
         * where the heap's alignment is malloc's) */
        const size_t a = align > DMM_MALLOC_ALIGN ? align : DMM_MALLOC_ALIGN;
        p = a > DMM_HEAP_ALIGN ? dmm_heap_aligned_alloc(h->mheap, a, n) : dmm_heap_malloc(h->mheap, n);
        if (p) {
            book(musable(h, p));
            *tag_slot(p) = 0; /* (no stale free tag: medium_free) */
            if (!G.secure)
                mlive_set(p);
        }
        if (p || !medium_extend(h))
            return p;
    }
    return NULL;
}

/* Walk callback: the whole OS pages inside a free block are discarded
 * (given back to the OS).  The block's first and last MIN_KEEP bytes
 * (free-list links, boundary tag) are left alone: the range starts past
 * MIN_KEEP bytes of the payload and ends before the block's last MIN_KEEP
 * bytes, rounded inwards to OS pages. */
#define MIN_KEEP 64u
static int medium_discard_free(void *ctx, const dmm_heap_block_info *b)
{
    size_t pg = *(const size_t *)ctx;
    uintptr_t lo, hi;
    if (b->state != DMM_BLOCK_FREE && b->state != DMM_BLOCK_TOP)
        return 0;
    if (b->block_size < 2u * MIN_KEEP + pg)
        return 0;
    lo = ((uintptr_t)b->payload + MIN_KEEP + pg - 1u) & ~(uintptr_t)(pg - 1u);
    hi = ((uintptr_t)b->block + b->block_size - MIN_KEEP) & ~(uintptr_t)(pg - 1u);
    if (hi > lo)
        dmm_port_pages_discard((void *)lo, hi - lo);
    return 0;
}

/* The OS pages inside the heap's free blocks go back to the OS.  Not with
 * poison on: the heap checks that free blocks still hold its pattern (when
 * it hands one out, and in full checks after every call in assertion
 * builds), and a discarded page reads back as zeros, which would be
 * reported as written after free.  So a poisoning heap keeps its free
 * pages until it is empty and destroyed whole. */
static void medium_discard(theap *h)
{
    size_t pg = dmm_port_page_size();
    h->mfreed = 0;
    if (!G.mcfg.poison)
        (void)dmm_heap_walk(h->mheap, medium_discard_free, &pg);
}

/* The whole medium heap goes back to the OS with its segments. */
static void medium_destroy(theap *h)
{
    dmm_heap_destroy(h->mheap);
    h->mheap = NULL;
    atomic_store_explicit(&h->has_mheap, false, memory_order_relaxed);
    h->mfreed = 0;
    h->mfoot = 0;
    while (h->msegs) {
        segment *s = h->msegs;
        h->msegs = s->next;
        segment_unmap(s);
    }
}

/* The usable size of medium block p of segment s.  The owning thread asks
 * its heap (which validates p); any other thread reads p's header alone
 * (dmm_heap_block_usable_size): the heap has no lock, and its validation
 * reads p's neighbours, which the owner may be merging or splitting at
 * that moment (before, a realloc, malloc_usable_size, guarded copy or
 * secure free of another thread's medium block could read a torn
 * neighbour and abort with a false "size tag" report, and it stored into
 * the owner's heap).  The header's size is bounded by the segment's end.
 * The head word read here is also where the owner clears or sets the
 * previous-used bit when p's predecessor is freed or allocated: the size
 * bits read are the same either way, but it is a data race in C11's terms
 * (ThreadSanitizer reports it); a race-free answer would need libdmm to
 * record medium sizes itself. */
static size_t medium_usable(segment *s, const void *p)
{
    size_t n, room;
    if (s->heap == tl_heap)
        return dmm_heap_usable_size(s->heap->mheap, p);
    n = dmm_heap_block_usable_size(s->heap->mheap, p);
    room = (size_t)((const unsigned char *)s + SEG_SIZE - (const unsigned char *)p);
    return n <= room ? n : 0;
}

/* A parked heap's medium memory is returned on a schedule as it is freed:
 * the heap whole when it is empty, else a discard walk every time this many
 * bytes have been freed into it. */
#define PARKED_DISCARD_BYTES ((size_t)4 << 20)

/* A free into the medium heap of a parked heap (held BUSY). */
static void medium_free_parked(theap *h, void *p)
{
    int64_t freed;
    medium_drain(h);
    freed = mrelease(h, p, false);
    book(-freed);
    if (atomic_load_explicit(&h->warm, memory_order_relaxed)) {
        if (medium_free_bytes(h) <= WARM_MEDIUM_BYTES)
            return; /* kept, within its bound */
        heap_cool(h); /* over it: a parked heap like any other from now on */
    }
    if (dmm_heap_get_counters(h->mheap).live_block_bytes == 0)
        medium_destroy(h);
    else if ((h->mfreed += (size_t)freed) >= PARKED_DISCARD_BYTES)
        medium_discard(h);
}

static void medium_free(segment *s, void *p)
{
    theap *h = s->heap;
    mblock *b = p, *head;
    if (h == tl_heap) {
        book(-mrelease(h, p, true));
        return;
    }
    /* Not the owner: p goes onto a list through its first 8 bytes, so it
     * must be a live block's start before anything is written.  Its bit
     * (set by the owner when it handed p out, cleared when it takes a free
     * of p in) is stable while p is live, whatever the owner does to the
     * other bits of the word; a pointer inside a block has a clear bit, or
     * shares its block's slot and is not 16-byte aligned.  (Secure mode's
     * free cleared the bit already and checked it: secure_free_medium.)
     * Before, the link was written into the block and the misuse reported
     * when the owner drained its list, if it ever did. */
    if (!G.secure && ((uintptr_t)p % DMM_MALLOC_ALIGN || !mlive_is(p))) {
        report("free of a pointer that is not the start of a live block:", p);
        return;
    }
    /* Its bit stays set until the owner takes the free in, so a block
     * another thread pushed already is told by the free tag (ftag, as on
     * small pages) that the push leaves in its second word, cleared when
     * the block is handed out again (mc_take, medium_alloc).  Before, a
     * second push stored the block's link to itself, and the owner's
     * drain walked that loop for ever. */
    if (*tag_slot(p) == ftag(p)) {
        report("double free of", p);
        return;
    }
    if (atomic_load_explicit(&h->pstate, memory_order_relaxed) != HEAP_OWNED && heap_take_parked(h)) {
        medium_free_parked(h, p);
        heap_put_parked(h);
        return;
    }
    *tag_slot(p) = ftag(p);
    head = atomic_load_explicit(&h->mxfree, memory_order_relaxed);
    do
        b->next = head;
    while (!atomic_compare_exchange_weak_explicit(&h->mxfree, &head, b, memory_order_seq_cst, memory_order_relaxed));
    remote_recheck(h);
}

/* The bytes of h's medium segments not handed out as blocks (h->mheap
 * set): an upper bound of its free memory (heap overhead included). */
static size_t medium_free_bytes(theap *h)
{
    size_t region = 0, live;
    medium_drain(h);
    for (segment *s = h->msegs; s; s = s->next)
        region += SEG_SIZE - MEDIUM_OFF;
    live = (size_t)dmm_heap_get_counters(h->mheap).live_block_bytes;
    return region > live ? region - live : 0;
}

/* A heap not in use (thread exit, a parked heap being tidied): the medium
 * heap is given back whole when it is empty, else the memory of its free
 * blocks goes back to the OS (the heap stays parked until a new thread
 * adopts it, possibly for a long time). */
static void medium_release_if_empty(theap *h)
{
    if (!h->mheap)
        return;
    medium_drain(h);
    if (dmm_heap_get_counters(h->mheap).live_block_bytes != 0)
        medium_discard(h);
    else
        medium_destroy(h);
}

/* secure mode's canary (see "secure mode" below) */
/* The address xor a per-process secret: every secure malloc and free
 * computes several, and a keyed mix would be no stronger (it was an
 * invertible one: a single canary read by an attacker gave the secret
 * either way); an overflow with data that does not know the secret still
 * misses it but for a chance of 2^-64. */
static inline uint64_t canary_of(const void *b) { return (uint64_t)(uintptr_t)b ^ G.secret; }

static inline uint64_t *canary_slot(const mpage *pg, void *b)
{
    return (uint64_t *)((unsigned char *)b + pg->block_size - CANARY);
}

/* ---- the API ---- */
/* Every allocation but the fast path: a size class whose blocks the
 * alignment divides (pages are PAGE_SIZE-aligned), else the medium heap,
 * else the OS. */
static DMM_NOINLINE void *alloc_general(size_t n, size_t align)
{
    theap *h;
    void *p = NULL;
    if (G.secure && n == 0 && align <= DMM_MALLOC_ALIGN) {
        global_init();
        return zero_alloc();
    }
    if (n <= medium_max() && align <= PAGE_SIZE) {
        unsigned c = NCLASS;
        size_t need;
        if (!(h = heap_get())) { /* first: it runs global_init (the class table, G.secure) */
            errno = ENOMEM;
            return NULL;
        }
        need = G.secure ? n + CANARY : n; /* room for the canary */
        if (small_size(need) && small_size(align)) /* the table covers sizes up to the largest class */
            for (c = class_of(need < align ? align : need); c < NCLASS && class_size[c] % align; c++)
                ;
        p = c < NCLASS ? small_alloc(h, c) : medium_alloc(h, n, align);
        if (!p)
            errno = ENOMEM;
        else if (G.secure && c < NCLASS) {
            segment *s = seg_of(p);
            mpage *pg = &s->page[page_index(s, p)];
            *canary_slot(pg, p) = canary_of(p);
        } else if (G.secure) {
            memset(p, 0, n); /* zeroed like small blocks: the heap's poison and links, not old data */
            mstart_mark(p, true);
        }
        return p;
    }
    global_init();
    return large_alloc(n, align);
}

/* The smallest request of the default alignment that medium_alloc serves
 * and its cache can hold (above the size-class pages and MC_LO). */
#define MQ_LO (SMALL_MAX > MC_LO ? SMALL_MAX : (size_t)MC_LO)

/* Default and unhardened modes: a medium request of the default alignment
 * (MQ_LO < n <= MEDIUM_MAX) that the calling thread's medium cache holds a
 * block for, when no other thread's frees wait to be taken in (mxfree,
 * which medium_alloc drains first), served as medium_alloc would serve it
 * (mc_take), without alloc_general's dispatch and frame; anything else goes
 * there (mimalloc-bench's rptest, 8 B to 16 KB: most requests are medium,
 * and the cache serves about 38 % of those, docs/malloc.md). */
static DMM_NOINLINE void *medium_quick(size_t n)
{
    theap *h = tl_heap;
    if (h && G.mc_max && !atomic_load_explicit(&h->mxfree, memory_order_relaxed)) {
        unsigned c = mc_up(n);
        if (c < MC_NCLASS && h->mc_n[c])
            return mc_take(h, c);
    }
    return alloc_general(n, DMM_MALLOC_ALIGN);
}

/* Secure mode's fast path (its tl_fast is empty_heap, so every dmm_malloc
 * comes here): a small request of the default alignment from the class's
 * current page when it has a free block, as alloc_general would serve it
 * but without its dispatch; anything else goes there.  The default modes'
 * medium requests of the default alignment: medium_quick. */
static void *alloc_aligned(size_t n, size_t align)
{
    if (G.secure && SMALL_MAX > CANARY && align <= DMM_MALLOC_ALIGN && n - 1u < SMALL_MAX - CANARY) {
        theap *h = tl_heap;
        mpage *pg;
        if (h && (pg = h->pages[class_of(n + CANARY)]) != NULL && pg->free) {
            void *p = page_pop(h, pg);
            *canary_slot(pg, p) = canary_of(p);
            return p;
        }
    } else if (!G.secure && align <= DMM_MALLOC_ALIGN && n - (MQ_LO + 1u) < MEDIUM_MAX - MQ_LO) {
        return medium_quick(n);
    }
    return alloc_general(n, align);
}

/* The fast path: the first block of the class's current page (when its
 * free list is empty, the blocks this thread freed into it become the free
 * list: page_collect does the same, with the remote frees, on the slow
 * path), its free tag cleared; the page from tl_fastv (empty_page when
 * this thread has no heap or in secure mode: it never has a block). */
static DMM_ALWAYS_INLINE void *malloc_fast(size_t n)
{
    if (n <= FAST_MAX) {
        mpage *pg = tl_fastv[(n + 15u) >> 4];
        mblock *b = pg->free;
        if (!b && (b = pg->local_free)) /* the owner's frees become the free list */
            pg->local_free = NULL;
        if (b) {
            pg->free = b->next;
            pg->used++;
            *tag_slot(b) = 0;
            return b;
        }
    }
    return NULL; /* not on the fast path */
}

void *dmm_malloc(size_t n)
{
    void *p = malloc_fast(n);
    return p ? p : alloc_aligned(n, DMM_MALLOC_ALIGN);
}

/* C++'s operator new (preload_cxx.c, guard.h): dmm_malloc's fast path in
 * the operator itself, so that a new costs what a malloc does, not a call
 * to dmm_malloc and a test of its result more (mimalloc-bench's alloc-test,
 * callgrind: 7 instructions of 22 per new); on_null(n) when dmm_malloc
 * would return NULL. */
static DMM_NOINLINE void *malloc_or_slow(size_t n, void *(*on_null)(size_t))
{
    void *p = alloc_aligned(n, DMM_MALLOC_ALIGN);
    return p ? p : on_null(n);
}

void *dmm__malloc_or(size_t n, void *(*on_null)(size_t))
{
    void *p = malloc_fast(n);
    return p ? p : malloc_or_slow(n, on_null);
}

/* Validates p (hardening) and finds its segment: a dmm segment, a block
 * boundary of a page in use, and (when check_live) a block currently
 * allocated.  NULL: report made. */
static inline segment *check_free(const void *p, const char *what, bool check_live)
{
    segment *s = seg_of(p);
    if ((const void *)s == p) { /* only a large block aligned to SEG_SIZE or more starts there */
        s = block_seg(p);
        if (!reg_has((uintptr_t)s) || s->magic != SEG_MAGIC || s->kind != SEG_LARGE || s->large_off != SEG_SIZE) {
            report(what, p);
            return NULL;
        }
        return s;
    }
    if (!reg_has((uintptr_t)s) || s->magic != SEG_MAGIC) {
        report(what, p);
        return NULL;
    }
    if (s->kind == SEG_MEDIUM) {
        /* no block in the header's page: another thread's free there
         * would push it on the remote list over the header's fields */
        if ((uintptr_t)p - (uintptr_t)s < MEDIUM_OFF) {
            report(what, p);
            return NULL;
        }
        /* the medium heap validates its own blocks, but for those in the
         * calling thread's cache (used, for the heap) */
        if (check_live && G.mc_max && s->heap == tl_heap && !mlive_is(p) && mc_holds(s->heap, p)) {
            report("use of a freed block:", p);
            return NULL;
        }
        return s;
    }
    if (s->kind == SEG_ZERO) {
        if ((uintptr_t)p - (uintptr_t)s < PAGE_SIZE || (uintptr_t)p % ZERO_STEP) {
            report(what, p);
            return NULL;
        }
        return s;
    }
    if (s->kind == SEG_LARGE) {
        if ((uintptr_t)p - (uintptr_t)s != s->large_off) {
            report(what, p);
            return NULL;
        }
        return s;
    }
    {
        size_t pi = page_index(s, p);
        mpage *pg = &s->page[pi];
        if (pi == 0 || !pg->heap || !pg->block_size) {
            report(what, p);
            return NULL;
        }
        /* a block boundary among the threaded blocks */
        if (!page_slot_in(pg, (uint32_t)((uintptr_t)p & (PAGE_SIZE - 1u)), page_nthr(pg))) {
            report(what, p);
            return NULL;
        }
        if (check_live && (G.secure ? !bit_is_set(s, pi, p) : tagged_free(p))) {
            report("use of a freed block:", p);
            return NULL;
        }
    }
    return s;
}

/* Pushes block b of page pg, of owner heap o (held by another thread, or
 * parked and not taken), on the page's remote list, its bytes booked off h
 * (the freeing thread's heap; NULL: none); if o is parked now, takes the
 * block in (remote_recheck).  The remote free's one push, for free_remote
 * (inline: mimalloc-bench's xmalloc-test and larson) and
 * small_release_remote. */
static DMM_ALWAYS_INLINE void remote_push(theap *h, theap *o, mpage *pg, mblock *b)
{
    uintptr_t head = atomic_load_explicit(&pg->xfree, memory_order_relaxed);
    book_on(h, -(int64_t)pg->block_size); /* still in the page's count until collected */
    do
        b->next = xptr(head);
    while (!atomic_compare_exchange_weak_explicit(&pg->xfree, &head, (uintptr_t)b | ((head & ~XMASK) + XONE),
                                                  memory_order_seq_cst, memory_order_relaxed));
    if (DMM_UNLIKELY(atomic_load_explicit(&o->pstate, memory_order_seq_cst) != HEAP_OWNED))
        remote_recheck(o);
}

/* A small block of page pg freed by a thread that does not own the page
 * (in default mode, already tagged free): straight into a parked owner,
 * else on the page's remote list. */
static inline void owner_push(theap *h, mpage *pg, mblock *b);

static DMM_NOINLINE void small_release_remote(mpage *pg, mblock *b)
{
    /* A thread without a heap books on one of its own (book).  Its first
     * free adopts the block's owner when that one is parked and holds no
     * medium heap: a thread that carries on an exited thread's work
     * (mimalloc-bench's larson starts a thread for every one that ends
     * and hands it the blocks) then frees into pages of its own and
     * allocates from them, where adopting another heap made it free the
     * old heap's pages empty one by one, each discarded at once (a cold
     * parked heap), and fault in the other heap's.  What it frees of an
     * adopted heap's small pages goes back as an owner's does (empty
     * segments unmapped but one, at most DIRTY_PAGES_MAX retired pages
     * resident); an owner's free medium memory would stay until the
     * thread exits, so a heap with a medium heap is left parked and the
     * thread adopts another (MallocThreads.
     * BlocksFreedAfterOwnerExitAreReturned; docs/malloc.md, "Thread
     * exit"). */
    if (!tl_heap && !tl_exited &&
        heap_bind(pg->heap, !atomic_load_explicit(&pg->heap->has_mheap, memory_order_relaxed)) == pg->heap) {
        owner_push(tl_heap, pg, b);
        return;
    }
    {
        theap *o = pg->heap;
        if (atomic_load_explicit(&o->pstate, memory_order_relaxed) != HEAP_OWNED && heap_take_parked(o)) {
            /* its thread exited: free straight into the page */
            b->next = pg->free;
            pg->free = b;
            pg->used--;
            page_collect(pg);
            if (pg->used == 0) {
                page_retire(o, pg);
                if (!atomic_load_explicit(&o->warm, memory_order_relaxed)) {
                    heap_discard_dirty(o); /* a cold parked heap keeps no free page resident */
                    heap_free_empty_segs(o, 0);
                }
            }
            heap_put_parked(o);
            return;
        }
        remote_push(tl_heap, o, pg, b);
    }
}

/* A small block of page pg, which h (the calling thread's heap) owns, onto
 * the page's local list. */
static inline void owner_push(theap *h, mpage *pg, mblock *b)
{
    b->next = pg->local_free;
    pg->local_free = b;
    if (--pg->used == 0)
        page_retire_emptied(h, pg);
}

/* Puts a small block of page pg back, h being the calling thread's heap
 * (NULL when it has none): on the page's local list when h owns it. */
static DMM_ALWAYS_INLINE void small_release(theap *h, mpage *pg, mblock *b)
{
    if (pg->heap == h) {
        owner_push(h, pg, b);
        return;
    }
    small_release_remote(pg, b);
}

/* ---- secure mode (DMM_SECURE=1, docs/malloc.md) ----
 * Small blocks carry a canary in their last CANARY bytes (the address mixed
 * with a per-process secret), checked when the block is freed: a write past
 * the end of the request reaches it.  A freed small block is filled with
 * POISON_BYTE (zero) and waits in the freeing thread's quarantine (a ring
 * of QUAR blocks) before it can be reused; when it leaves, the fill and the
 * canary are checked, so a write after free is caught.  A double free
 * during the quarantine is caught by the allocated bit as always.  When the
 * freeing thread owns the page, the 32 bytes on each side of the block are
 * checked too (neighbours_intact).  Large blocks end at a guard page,
 * medium heaps run with canaries and poison. */
/* The bytes of a quarantined block that are poisoned and checked: its
 * first POISON_MAX (where stale pointers mostly write: headers, links,
 * counts), not all of it, which cost secure mode half again the
 * instructions of the default mode on a Python JSON workload. */
#define POISON_MAX 64u

/* The words of a block of bs bytes (a multiple of 16: every class) that
 * are poisoned and checked: its first min(bs - CANARY, POISON_MAX) bytes.
 * Written as a jump on bs into a run of word accesses (8 words from 80
 * bytes, 7 for 64, 5 for 48, 3 for 32, 1 for 16), with no branch per word
 * and no length computed: poisoning and checking are on every secure free. */
#define POISON_WORDS(X) \
    switch (bs >> 4) { \
    default: X(56); /* fall through */ \
    case 4: X(48); X(40); /* fall through */ \
    case 3: X(32); X(24); /* fall through */ \
    case 2: X(16); X(8); /* fall through */ \
    case 1: X(0); /* fall through */ \
    case 0: break; \
    }
_Static_assert(POISON_MAX == 64u && CANARY == 8u, "POISON_WORDS covers 8 words");

static DMM_ALWAYS_INLINE bool poison_intact(const unsigned char *q, size_t bs)
{
    const uint64_t pat = 0x0101010101010101ull * POISON_BYTE;
    uint64_t acc = 0, w;
#define POISON_CHECK(i) (memcpy(&w, q + (i), 8u), acc |= w ^ pat)
    POISON_WORDS(POISON_CHECK)
#undef POISON_CHECK
    return acc == 0;
}

static DMM_ALWAYS_INLINE void poison_fill(unsigned char *q, size_t bs)
{
    const uint64_t pat = 0x0101010101010101ull * POISON_BYTE;
#define POISON_SET(i) memcpy(q + (i), &pat, 8u)
    POISON_WORDS(POISON_SET)
#undef POISON_SET
}

/* A block leaving the quarantine: checked, then really freed.  Returns
 * its size when it went back (for the caller to book: it was unbooked
 * when it came in), 0 when it was withheld. */
static DMM_ALWAYS_INLINE size_t quarantine_out(theap *h, mblock *b)
{
    segment *s = seg_of(b);
    mpage *pg = &s->page[page_index(s, b)];
    size_t bs = pg->block_size;
    if (!poison_intact((const unsigned char *)b, bs) || *canary_slot(pg, b) != canary_of(b)) {
        report("write after free to", b);
        return 0; /* withheld: never handed out again */
    }
    small_release(h, pg, b);
    return bs;
}

static void quarantine_release(theap *h, mblock *b) { book((int64_t)quarantine_out(h, b)); }

/* Secure mode, a block of a page the calling thread owns being freed: the
 * NEIGHBOURHOOD bytes before and after it hold only what they may.  Blocks
 * past the page's threaded end were never written: zero.  Every threaded
 * block's canary slot (its last word) is written only when the owner hands
 * it out: zero or its canary.  (Other words of the neighbours belong to
 * their users, or to free lists that other threads may be pushing on.)  So
 * an overflow or underflow that misses the block's own canary but lands in
 * untouched memory or on a neighbour's canary is caught at this free. */
#define NEIGHBOURHOOD 32u
/* The canary slot of the block at q (a threaded one): zero or its canary. */
static inline bool slot_ok(const unsigned char *q, size_t bs)
{
    uint64_t w;
    memcpy(&w, q + bs - CANARY, 8u);
    return !w || w == canary_of(q);
}

/* n bytes from q (a multiple of 8, at most NEIGHBOURHOOD): all zero. */
static inline bool words_zero(const unsigned char *q, size_t n)
{
    uint64_t acc = 0, w;
    for (size_t i = 0; i < n; i += 8u) {
        memcpy(&w, q + i, 8u);
        acc |= w;
    }
    return acc == 0;
}

/* Written out for the block sizes that reach NEIGHBOURHOOD (classes are
 * multiples of 16: the block before, and the one before that for 16-byte
 * blocks; the block after, whose canary slot is within reach for 16- and
 * 32-byte blocks, and the one after that for 16-byte ones), with no
 * division (a block fits when it ends within the page). */
static DMM_ALWAYS_INLINE bool neighbours_intact(segment *s, mpage *pg, const unsigned char *b)
{
    const unsigned char *base = page_start(s, (size_t)(pg - s->page));
    size_t bs = pg->block_size, off = (size_t)(b - base), q = off + bs;
    size_t bump = (size_t)page_nthr(pg) * bs;
    /* the blocks before: threaded (b is), so only their canary slots */
    if (off && (!slot_ok(b - bs, bs) || (bs + CANARY < NEIGHBOURHOOD && off >= 2u * bs && !slot_ok(b - 2u * bs, bs))))
        return false;
    /* the blocks after: canary slots below the threaded end, every word past it */
    if (q + bs > PAGE_SIZE)
        return true;
    if (q >= bump)
        return words_zero(base + q, PAGE_SIZE - q < NEIGHBOURHOOD ? PAGE_SIZE - q : NEIGHBOURHOOD);
    if (bs + NEIGHBOURHOOD <= bs + bs - CANARY) /* its canary slot is out of reach */
        return true;
    if (!slot_ok(base + q, bs))
        return false;
    q += bs;
    if (q >= off + bs + NEIGHBOURHOOD || q + bs > PAGE_SIZE)
        return true;
    if (q >= bump)
        return words_zero(base + q, off + bs + NEIGHBOURHOOD - q);
    return bs + bs - CANARY >= NEIGHBOURHOOD || slot_ok(base + q, bs);
}

/* Secure mode: a small block being freed (its allocated bit cleared), h
 * the calling thread's heap or NULL, owned when h owns the page.  Its
 * bytes are unbooked as it comes in (one booking with the block that
 * leaves the quarantine for it). */
static DMM_ALWAYS_INLINE void secure_free_small(theap *h, mpage *pg, mblock *b, bool owned)
{
    int64_t bs = (int64_t)pg->block_size;
    if (*canary_slot(pg, b) != canary_of(b)) {
        book_on(h, -bs);
        report("write past the end of", b);
        return; /* withheld */
    }
    if (owned && !neighbours_intact(seg_of(b), pg, (const unsigned char *)b))
        report("write out of the bounds of a block next to", b); /* (reported; freed as usual) */
    poison_fill((unsigned char *)b, pg->block_size);
    if (!h && !(h = heap_get())) {
        book_on(NULL, -bs);
        quarantine_release(NULL, b);
        return;
    }
    if (h->qcount == QUAR) {
        mblock *old = h->quar[h->qhead];
        h->quar[h->qhead] = b;
        h->qhead = (h->qhead + 1u) % QUAR;
        book_on(h, (int64_t)quarantine_out(h, old) - bs);
        return;
    }
    h->quar[(h->qhead + h->qcount) % QUAR] = b;
    h->qcount++;
    book_on(h, -bs);
}

/* Secure mode: a freed medium block is zero-filled and waits in the
 * freeing thread's ring of MQUAR before the medium heap gets it (which
 * then poisons it, and checks its canaries): it is not handed out again at
 * once, and a write after free to its first bytes is caught when it leaves.
 * While it waits it counts as in use. */
static void mquarantine_release(void *p)
{
    if (!poison_intact((const unsigned char *)p, POISON_MAX + 16u)) { /* (any size from 80: the first POISON_MAX bytes) */
        report("write after free to", p);
        return; /* withheld */
    }
    medium_free(seg_of(p), p);
}

static DMM_NOINLINE void secure_free_medium(theap *h, segment *s, void *p)
{
    size_t n;
    /* no longer a block that copies may write; and p must have been one
     * (a block start handed out and not freed since) before its size is
     * read from its header and the block zero-filled: a pointer inside a
     * block, or a block already freed, is reported and nothing written */
    if ((uintptr_t)p % DMM_MALLOC_ALIGN || !mark(s, page_index(s, p), p, false)) {
        if (h || (h = heap_get()))
            for (uint32_t i = 0; i < h->mqcount; i++)
                if (h->mquar[(h->mqhead + i) % MQUAR] == p) {
                    report("double free of", p);
                    return;
                }
        report("free of a pointer that is not the start of a live block:", p);
        return;
    }
    n = medium_usable(s, p);
    if (!h && !(h = heap_get())) {
        medium_free(s, p);
        return;
    }
    if (n < POISON_MAX) { /* medium blocks are far larger; a damaged header is the heap's to report */
        medium_free(s, p);
        return;
    }
    memset(p, POISON_BYTE, n);
    if (h->mqcount == MQUAR) {
        void *old = h->mquar[h->mqhead];
        h->mquar[h->mqhead] = p;
        h->mqhead = (h->mqhead + 1u) % MQUAR;
        mquarantine_release(old);
        return;
    }
    h->mquar[(h->mqhead + h->mqcount) % MQUAR] = p;
    h->mqcount++;
}

/* Thread exit, malloc_trim: the quarantine is emptied (checked). */
static void quarantine_flush(theap *h)
{
    while (h->mqcount) {
        void *p = h->mquar[h->mqhead];
        h->mqhead = (h->mqhead + 1u) % MQUAR;
        h->mqcount--;
        mquarantine_release(p);
    }
    while (h->qcount) {
        mblock *b = h->quar[h->qhead];
        h->qhead = (h->qhead + 1u) % QUAR;
        h->qcount--;
        quarantine_release(h, b);
    }
}

/* Everything free does but the fast paths (dmm_free, secure_free_owned):
 * null, foreign and misused pointers (reported), large and medium blocks,
 * blocks of pages another thread owns, secure and unhardened modes. */
static DMM_NOINLINE void free_general(void *p)
{
    segment *s;
    mpage *pg;
    mblock *b = p;
    theap *h = tl_heap;
    if (!p)
        return;
    if (G.harden) {
        if (!(s = check_free(p, "free of a pointer libdmm never gave out:", false)))
            return;
    } else {
        s = block_seg(p);
    }
    if (s->kind == SEG_LARGE) {
        if (s->large_front && !large_front_intact(s)) {
            report("write before the start of", p);
            if (G.abort_on_error)
                return;
        }
        large_free(s);
        return;
    }
    if (s->kind == SEG_MEDIUM) {
        if (G.secure)
            secure_free_medium(h, s, p);
        else
            medium_free(s, p);
        return;
    }
    if (s->kind == SEG_ZERO)
        return; /* never reused: every zero-size block stays inaccessible */
    {
        size_t pi = page_index(s, p);
        pg = &s->page[pi];
        if (!G.secure) {
            /* a block not tagged free (see ftag) */
            if (G.harden && tagged_free(p)) {
                report("double free of", p);
                return;
            }
            *tag_slot(p) = ftag(p);
            small_release(h, pg, b);
            return;
        }
        /* secure mode: clearing the bit is the test: of two racing frees
         * only one wins */
        if (G.harden && !mark(s, pi, p, false)) {
            report("double free of", p);
            return;
        }
    }
    if (G.secure) {
        secure_free_small(h, pg, b, pg->heap == h);
        return;
    }
    book_on(h, -(int64_t)pg->block_size);
    small_release(h, pg, b);
}

/* Secure mode's fast path: a small block of a page the calling thread owns
 * (the common case; its tl_fast is empty_heap, so dmm_free's path never
 * takes it), with check_free's checks for such a block (a segment of small
 * pages, a page in use, a block boundary below the threaded end) and
 * free_slow's, without their dispatch on kind and mode.  false, with
 * nothing done, for any other pointer. */
static inline bool secure_free_owned(void *p, unsigned kind)
{
    uintptr_t u = (uintptr_t)p;
    theap *h = tl_heap;
    segment *s;
    size_t pi;
    mpage *pg;
    uint32_t off;
    if (!reg_small(kind) || !h)
        return false;
    s = seg_of(p);
    pi = page_index(s, p);
    pg = &s->page[pi];
    off = (uint32_t)(u & (PAGE_SIZE - 1u));
    if (pi == 0 || pg->heap != h || !page_slot_in(pg, off, page_nthr(pg)))
        return false;
    if (!mark(s, pi, p, false)) { /* clearing the bit is the test, as in free_general */
        report("double free of", p);
        return true;
    }
    secure_free_small(h, pg, p, true);
    return true;
}

/* Default and unhardened modes: a block of a small page in use by another
 * heap, with the fast path's checks, straight to the remote free, not
 * through free_general's dispatch and check_free's second look
 * (mimalloc-bench's xmalloc-test and larson, whose frees are mostly of
 * other threads' blocks).  false, with nothing done, for any other
 * pointer. */
static DMM_ALWAYS_INLINE bool free_remote(void *p, unsigned kind)
{
    uintptr_t u = (uintptr_t)p;
    mpage *pg;
    uint32_t off;
    if (!reg_small(kind))
        return false;
    pg = &seg_of(p)->page[(u >> PAGE_SHIFT) & (PAGES - 1u)];
    off = (uint32_t)(u & (PAGE_SIZE - 1u));
    theap *me = tl_heap, *o = pg->heap;
    if (!o || o == me || !page_slot_in(pg, off, page_nthr(pg)) || tagged_free(p))
        return false;
    *tag_slot(p) = ftag(p);
    /* the common case here, a block of a running thread's page freed by a
     * thread with a heap: remote_push, inline (one call and
     * its frame less per remote free: mimalloc-bench's xmalloc-test and
     * larson, docs/malloc.md "Remote frees"); the rest, there */
    if (DMM_LIKELY(me != NULL) && atomic_load_explicit(&o->pstate, memory_order_relaxed) == HEAP_OWNED) {
        remote_push(me, o, pg, p);
        return true;
    }
    small_release_remote(pg, p);
    return true;
}

/* kind: the registry byte of p's unit as dmm_free read it (0 for a
 * pointer past the registry), so that the paths below need not read it
 * again. */
static DMM_NOINLINE void free_slow_secure(void *p, unsigned kind)
{
    if (!secure_free_owned(p, kind))
        free_general(p);
}

/* (Secure mode's path apart, reached by a jump: inlined here, its registers
 * made free_slow save four on the default mode's remote free too.) */
static DMM_NOINLINE void free_slow(void *p, unsigned kind)
{
    if (DMM_UNLIKELY(G.secure)) {
        free_slow_secure(p, kind);
        return;
    }
    if (kind == SEG_MEDIUM) {
        /* the registry's byte says p's unit starts a medium segment: the
         * rest of check_free's test for such a block (not in the header's
         * page, the header intact) and free_general's dispatch, without
         * its second registry read, its walk over the kinds and its frame
         * (mimalloc-bench's rptest: 8 B to 16 KB, most of them medium) */
        segment *s = seg_of(p);
        if ((uintptr_t)p - (uintptr_t)s >= MEDIUM_OFF && s->magic == SEG_MAGIC) {
            medium_free(s, p);
            return;
        }
    } else if (free_remote(p, kind)) {
        return;
    }
    free_general(p);
}

/* dmm_free's fast path emptied the page of block p (freed): retires it
 * unless it is the class's current page.  Out of line, from p alone, so
 * that the fast path keeps nothing for it. */
static DMM_NOINLINE void free_emptied(void *p)
{
    segment *s = seg_of(p);
    mpage *pg = &s->page[page_index(s, p)];
    theap *h = pg->heap;
    page_retire_emptied(h, pg);
}

/* The fast path, default and unhardened modes: a small block of a page the
 * calling thread owns, validated on one path, cheapest checks first: the
 * registry's byte for the pointer's unit is the calling thread's tag
 * (tl_tag), so the unit starts a segment of small pages of this thread's
 * heap (NULL and foreign pointers, other heaps' segments: no; in secure
 * mode, after the thread's exit and before it has a heap, tl_tag is
 * TAG_NONE, which no unit has), the pointer is a block boundary among the
 * blocks threaded so far (slot.h: the offset times the page's multiplier
 * below its limit, one multiply and one compare: page 0, the header, and
 * pages not in use have limit 0,
 * so the page is in use and, its segment being this heap's, owned by it;
 * the segment's address is the registry's unit shifted back), and the
 * block does not carry
 * the free tag.  Any check that fails goes to free_slow, which sends a
 * block of a page another heap owns, past the same checks, to the remote
 * free, and anything else to free_general, which checks again and
 * reports. */
void dmm_free(void *p)
{
    uintptr_t u = (uintptr_t)p;
    uint64_t unit = (uint64_t)u >> SEG_SHIFT;
    unsigned kind = 0; /* (no unit: no segment) */
    if (unit < REG_UNITS && (kind = atomic_load_explicit(&reg_kind[unit], memory_order_acquire)) == tl_tag) {
        mpage *pg = &seg_of(p)->page[(u >> PAGE_SHIFT) & (PAGES - 1u)];
        if (dmm_slot_in((uint32_t)(u & (PAGE_SIZE - 1u)), pg->mul, pg->lim) && !tagged_free(p)) {
            mblock *b = p;
            *tag_slot(p) = ftag(p);
            b->next = pg->local_free;
            pg->local_free = b;
            if (DMM_UNLIKELY(--pg->used == 0))
                free_emptied(p);
            return;
        }
    }
    free_slow(p, kind);
}

/* DMM_MALLOC_LIBC_NAMES (libdmm.so, src/malloc/CMakeLists.txt): the C
 * library's malloc and free are dmm_malloc and dmm_free themselves, other
 * names for the same code, not wrappers that jump to it; preload.c then
 * leaves these two out.  (A generated library keeps preload.c's.) */
#ifdef DMM_MALLOC_LIBC_NAMES
void *malloc(size_t n) __attribute__((alias("dmm_malloc"), visibility("default")));
void free(void *p) __attribute__((alias("dmm_free"), visibility("default")));
#endif

size_t dmm_malloc_usable_size(const void *p)
{
    segment *s;
    if (!p)
        return 0;
    s = block_seg(p);
    if (G.harden && (!reg_has((uintptr_t)s) || s->magic != SEG_MAGIC))
        return 0;
    if (s->kind == SEG_LARGE)
        return s->map_bytes - s->large_guard - (size_t)((uintptr_t)p - (uintptr_t)s);
    if (s->kind == SEG_MEDIUM)
        return medium_usable(s, p);
    if (s->kind == SEG_ZERO)
        return 0;
    return s->page[page_index(s, p)].block_size - (G.secure ? CANARY : 0u);
}

/* ---- secure mode: guarded copies and sized deletes (guard.h) ---- */
int dmm_malloc_guard_on = -1; /* undecided (guard.h) */

/* The start of the last block that starts at or below off (a multiple of
 * MIN_BLOCK) and not below lo, in medium segment s; 0 when none.  Reads the
 * start bits a word at a time. */
static size_t mstart_below(segment *s, size_t off, size_t lo)
{
    const _Atomic uint64_t *w = &s->bits[0][0];
    size_t g = off / MIN_BLOCK, glo = lo / MIN_BLOCK;
    uint64_t x = atomic_load_explicit(&w[g / 64u], memory_order_relaxed) & (~(uint64_t)0 >> (63u - g % 64u));
    for (size_t i = g / 64u;;) {
        if (x) {
            size_t b = i * 64u + 63u - (size_t)__builtin_clzll(x);
            return b >= glo ? b * MIN_BLOCK : 0u;
        }
        if (i == 0 || i * 64u <= glo)
            return 0;
        x = atomic_load_explicit(&w[--i], memory_order_relaxed);
    }
}

/* dmm_malloc_guard_write's large and medium blocks (out of line: the
 * small blocks' path, the common one, then saves no registers). */
static DMM_NOINLINE void guard_write_big(segment *s, unsigned k, size_t off, const void *d, size_t n)
{
    if (k == SEG_LARGE) {
        /* the header and the keyed fill before the block, or past the
         * block's usable end (the guard page would fault a little later) */
        unsigned char *blk = (unsigned char *)s + s->large_off;
        size_t lim = s->map_bytes - s->large_guard;
        if (off >= s->map_bytes)
            return; /* past the mapping: the rest of its 4 MiB unit is not libdmm's */
        if (off < s->large_off)
            report("copy before the start of", blk);
        else if (off >= lim || n > lim - off)
            report("copy past the end of", blk);
        return;
    }
    if (k == SEG_MEDIUM) {
        size_t st, end;
        if (off < MEDIUM_OFF) {
            report("copy into the header of the segment at", s);
            return;
        }
        st = mstart_below(s, off, MEDIUM_OFF);
        if (st) {
            end = st + medium_usable(s, (unsigned char *)s + st);
            if (off < end) { /* inside a block: must end in it */
                if (n > end - off)
                    report("copy past the end of", (unsigned char *)s + st);
                return;
            }
        }
        /* in no block handed out: a block's header or canary, a free
         * block, the heap's own data */
        report("copy outside the blocks in use, to", d);
    }
}

void dmm_malloc_guard_write(const void *d, size_t n)
{
    uintptr_t a = (uintptr_t)d;
    unsigned k;
    segment *s;
    if (!G.secure || n == 0 || !(k = reg_kind_of(a)))
        return; /* not libdmm's memory (or not a segment's first unit) */
    s = seg_of(d);
    if (s->magic != SEG_MAGIC)
        return;
    if (reg_small(k)) {
        size_t pi = page_index(s, d), bs, in;
        mpage *pg = &s->page[pi];
        if (pi == 0 || !(bs = pg->block_size))
            return; /* the header; a page not in use (guarded or empty) */
        in = (size_t)(a & (PAGE_SIZE - 1u)) % bs; /* offset in its slot */
        if (in >= bs - CANARY || n > bs - CANARY - in)
            report("copy past the end of", (unsigned char *)d - in);
        else if (!bit_is_set(s, pi, (const unsigned char *)d - in)) /* secure mode's allocated bit */
            report("copy into a free block at", (unsigned char *)d - in);
        return;
    }
    guard_write_big(s, k, (size_t)(a - (uintptr_t)s), d, n);
}

void dmm_malloc_guard_sized(const void *p, size_t n)
{
    segment *s;
    bool fits;
    if (!G.secure || !p)
        return;
    s = block_seg(p);
    if (!reg_has((uintptr_t)s) || s->magic != SEG_MAGIC)
        return; /* not libdmm's: free reports it */
    switch (s->kind) {
    case SEG_ZERO:
        fits = n == 0;
        break;
    case SEG_LARGE:
        fits = n > medium_max() && n <= dmm_malloc_usable_size(p);
        break;
    case SEG_MEDIUM:
        fits = !small_size(n + CANARY) && n <= medium_max() && n <= dmm_malloc_usable_size(p);
        break;
    default: {
        mpage *pg = &s->page[page_index(s, p)];
        fits = n != 0 && n <= SMALL_MAX && small_size(n + CANARY) && class_size[size_class(n + CANARY)] == pg->block_size;
        break;
    }
    }
    if (!fits)
        report("sized delete whose size does not fit", p);
}

void *dmm_calloc(size_t nmemb, size_t size)
{
    void *p;
    size_t n;
    if (!dmm_family_mul(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    p = dmm_malloc(n);
    if (p && (n <= medium_max() || block_seg(p)->large_dirty))
        memset(p, 0, n); /* large blocks are fresh mappings, zero already, unless reused */
    return p;
}

void *dmm_realloc(void *p, size_t n)
{
    size_t have;
    void *q;
    if (!p)
        return dmm_malloc(n);
    if (n == 0) {
        dmm_free(p);
        return NULL;
    }
    if (G.harden && !check_free(p, "realloc of a pointer libdmm never gave out:", true)) {
        errno = EINVAL;
        return NULL;
    }
    have = dmm_malloc_usable_size(p);
    if (have == 0 && block_seg(p)->kind == SEG_MEDIUM && block_seg(p)->heap == tl_heap) {
        errno = EINVAL; /* the owner's heap refused p (reported): a freed block, not copied from nor freed again */
        return NULL;
    }
    if (n <= have && (n > medium_max() || n >= have / 2))
        return p; /* fits, and not wastefully */
    {
        segment *s = block_seg(p);
        if (s->kind == SEG_LARGE && n > medium_max() && !s->large_guard && (q = large_grow(s, p, n)))
            return q;
        /* (not where the heap's alignment is below malloc's: a block the
         * heap moves would lose malloc's alignment) */
        if (DMM_HEAP_ALIGN >= DMM_MALLOC_ALIGN && s->kind == SEG_MEDIUM && s->heap == tl_heap && !small_size(n) &&
            n <= medium_max()) {
            int64_t before;
            medium_drain_as(s->heap, true);
            before = musable(s->heap, p);
            if ((q = dmm_heap_realloc(s->heap->mheap, p, n))) { /* in place when it can */
                book(musable(s->heap, q) - before);
                if (G.secure && q != p) {
                    mstart_mark(p, false);
                    mstart_mark(q, true);
                } else if (!G.secure && q != p) { /* (p's bit was set: check_free passed, and the heap took p) */
                    (void)mlive_take(p);
                    mlive_set(q);
                }
                return q;
            }
        }
    }
    if (!(q = dmm_malloc(n)))
        return NULL;
    memcpy(q, p, n < have ? n : have);
    dmm_free(p);
    return q;
}

void *dmm_reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t n;
    if (!dmm_family_mul(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return dmm_realloc(p, n);
}

int dmm_posix_memalign(void **out, size_t align, size_t n)
{
    void *p;
    if (!dmm_family_posix_align_ok(align))
        return EINVAL;
    p = alloc_aligned(n, align < DMM_MALLOC_ALIGN ? DMM_MALLOC_ALIGN : align);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *dmm_aligned_alloc(size_t align, size_t n)
{
    if (!dmm_family_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_aligned(n, align < DMM_MALLOC_ALIGN ? DMM_MALLOC_ALIGN : align);
}

/* glibc's memalign: any alignment, rounded up to a power of two; one that
 * has no power of two to round to (above SIZE_MAX / 2 + 1) is EINVAL. */
void *dmm_memalign(size_t align, size_t n)
{
    if (align > SIZE_MAX / 2u + 1u) {
        errno = EINVAL;
        return NULL;
    }
    return dmm_aligned_alloc(dmm_family_norm_align(align), n);
}

void *dmm_valloc(size_t n) { return alloc_aligned(n, dmm_port_page_size()); }

void *dmm_pvalloc(size_t n)
{
    size_t pg = dmm_port_page_size();
    if (n > SIZE_MAX - pg) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_aligned(n ? (n + pg - 1u) / pg * pg : pg, pg);
}

/* malloc_trim: the calling thread's heap and every parked heap give back
 * what they can now (heap_tidy): pages that are empty once remote frees are
 * in, segments without pages, empty medium heaps with their segments, the
 * pages inside free medium blocks.  Heaps bound to other live threads are
 * theirs to touch: their owners give back as they go (empty pages on a
 * schedule, heap_discard_dirty; everything at thread exit).  1 when memory went back to the OS. */
int dmm_malloc_trim(void)
{
    uint64_t before = atomic_load_explicit(&G.mapped, memory_order_relaxed);
    uint64_t retired = atomic_load_explicit(&G.retired, memory_order_relaxed);
    bool discarded = false;
    theap *me = tl_heap;
    global_init();
    if (me) {
        discarded |= me->mheap != NULL || me->dirty_pages != 0;
        heap_tidy(me);
    }
    for (theap *h = atomic_load_explicit(&G.all, memory_order_acquire); h; h = h->next_all) {
        if (h == me || atomic_load_explicit(&h->pstate, memory_order_relaxed) != HEAP_PARKED || !heap_take_parked(h))
            continue;
        discarded |= h->mheap != NULL || h->dirty_pages != 0;
        heap_tidy(h);
        heap_put_parked(h);
    }
    discarded |= lcache_flush() != 0;
    return discarded || atomic_load_explicit(&G.mapped, memory_order_relaxed) < before ||
           atomic_load_explicit(&G.retired, memory_order_relaxed) != retired;
}

/* The bytes of the small blocks out, as the pages count them: every page's
 * used blocks (a block freed by another thread stays in the count until
 * the owner collects it; the freeing thread books it out at once, and the
 * collection books it back: page_collect, small_release_remote).  So the
 * fast paths keep no statistics counter: they update the page's count,
 * which they need anyway.  The segment lists are walked under seg_lock, so
 * no segment is unmapped meanwhile; the counts are read while their owners
 * may be changing them (a snapshot, exact when the other threads are not
 * allocating), hence no instrumentation by ThreadSanitizer. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("thread")))
#endif
#endif
static int64_t small_live(void)
{
    int64_t live = 0;
    olock_lock(&G.seg_lock);
    for (theap *h = atomic_load_explicit(&G.all, memory_order_acquire); h; h = h->next_all)
        for (segment *s = h->segs; s; s = s->next)
            for (size_t i = 1; i < PAGES; i++)
                live += (int64_t)s->page[i].used * s->page[i].block_size;
    olock_unlock(&G.seg_lock);
    return live;
}

dmm_malloc_stats dmm_malloc_get_stats(void)
{
    dmm_malloc_stats st;
    st.mapped = atomic_load_explicit(&G.mapped, memory_order_relaxed);
    st.segments = atomic_load_explicit(&G.segments, memory_order_relaxed);
    st.large_bytes = atomic_load_explicit(&G.large_bytes, memory_order_relaxed);
    st.large_count = atomic_load_explicit(&G.large_count, memory_order_relaxed);
    st.heaps = atomic_load_explicit(&G.heaps, memory_order_relaxed);
    st.heaps_adopted = atomic_load_explicit(&G.adopted, memory_order_relaxed);
    st.errors = atomic_load_explicit(&G.errors, memory_order_relaxed);
    st.large_count_max = atomic_load_explicit(&G.large_count_max, memory_order_relaxed);
    st.large_bytes_max = atomic_load_explicit(&G.large_bytes_max, memory_order_relaxed);
    {
        int64_t live = atomic_load_explicit(&G.live_orphan, memory_order_relaxed) + small_live();
        for (theap *h = atomic_load_explicit(&G.all, memory_order_acquire); h; h = h->next_all)
            live += atomic_load_explicit(&h->live, memory_order_relaxed);
        st.live_bytes = live > 0 ? (uint64_t)live : 0;
    }
    return st;
}

/* ---- statistics on stderr (DMM_SHOW_STATS=1 at exit, preload.c) ---- */
void dmm_malloc_print_stats(void)
{
    dmm_malloc_stats st = dmm_malloc_get_stats();
    char b[320];
    dmm_text t;
    dmm_text_init(&t, b, sizeof b);
    dmm_text_str(&t, "libdmm statistics: mapped ");
    dmm_text_u64(&t, st.mapped);
    dmm_text_str(&t, " B in ");
    dmm_text_u64(&t, st.segments);
    dmm_text_str(&t, " segments + ");
    dmm_text_u64(&t, st.large_count);
    dmm_text_str(&t, " large blocks (");
    dmm_text_u64(&t, st.large_bytes);
    dmm_text_str(&t, " B); small+medium blocks in use ");
    dmm_text_u64(&t, st.live_bytes);
    dmm_text_str(&t, " B; thread heaps ");
    dmm_text_u64(&t, st.heaps);
    dmm_text_str(&t, " (adopted ");
    dmm_text_u64(&t, st.heaps_adopted);
    dmm_text_str(&t, " times); bad frees reported ");
    dmm_text_u64(&t, st.errors);
    dmm_text_char(&t, '\n');
    write_text(&t);
}

/* malloc_stats (preload.c): glibc's layout (one "arena": the segments),
 * then libdmm's own line.  Programs and tests read glibc's labels. */
static void stat_row(dmm_text *t, const char *label, uint64_t v)
{
    char num[24];
    dmm_text n;
    dmm_text_init(&n, num, sizeof num);
    dmm_text_u64(&n, v);
    dmm_text_str(t, label);
    for (size_t w = n.len; w < 10u; w++)
        dmm_text_char(t, ' ');
    dmm_text_str(t, num);
    dmm_text_char(t, '\n');
}

void dmm_malloc_print_glibc_stats(void)
{
    dmm_malloc_stats st = dmm_malloc_get_stats();
    char b[512];
    dmm_text t;
    dmm_text_init(&t, b, sizeof b);
    dmm_text_str(&t, "Arena 0:\n");
    stat_row(&t, "system bytes     = ", st.mapped - st.large_bytes);
    stat_row(&t, "in use bytes     = ", st.live_bytes);
    dmm_text_str(&t, "Total (incl. mmap):\n");
    stat_row(&t, "system bytes     = ", st.mapped);
    stat_row(&t, "in use bytes     = ", st.live_bytes + st.large_bytes);
    stat_row(&t, "max mmap regions = ", st.large_count_max);
    stat_row(&t, "max mmap bytes   = ", st.large_bytes_max);
    write_text(&t);
    dmm_malloc_print_stats();
}
