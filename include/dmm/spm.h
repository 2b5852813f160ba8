/*
 * dmm/spm.h - the scratchpad heap (seed 000): dynamic data for execution
 * cores that can only touch a small local memory.
 *
 *   dmm_spm_port    what the platform supplies: DMA get/put/wait between a
 *                   core's local memory and global memory, with its rules
 *                   (alignment, largest transfer), plus an optional
 *                   simulated clock.  dmm_spm_hostport is the host's port:
 *                   memcpy plus a cost model (issue, latency, bandwidth,
 *                   mailbox message) that counts simulated cycles.
 *   dmm_spm_global  the global memory and its service on the main core.
 *                   Dynamic mode: a manager thread (started by the library)
 *                   serves segment requests from N cores through mailboxes
 *                   of the Cell's shape (small bounded blocking queues of
 *                   32-bit words).  Static mode: a preallocated buffer split
 *                   among the cores; each core serves itself, no round trip.
 *   dmm_spm         one execution core's heap: S bytes of local memory split
 *                   into heap data H and management table T (S = H + T +
 *                   control).  malloc returns a GLOBAL address; p2s makes an
 *                   object resident and returns its LOCAL address; s2p maps
 *                   a local address back; free takes the global address.
 *
 * Global addresses (dmm_gaddr) are byte offsets into the global memory the
 * dmm_spm_global owns; 0 is never an object.  The main core can read and
 * write global memory through dmm_spm_global_host() (after the execution
 * core's dmm_spm_flush).
 *
 * THE LOCAL-ADDRESS RULE.  A local address returned by dmm_spm_p2s (or
 * p2s_ro) stays valid until the next dmm_spm_malloc, calloc, realloc, p2s,
 * p2s_ro or pin call on the same core (those may evict and move data);
 * dmm_spm_free, s2p, unpin and the queries never move anything.  An object
 * pinned with dmm_spm_pin stays at its local address until the matching
 * dmm_spm_unpin (pins count).  With harden=paranoid every call that may
 * move data evicts every unpinned resident unit and poisons (and, under
 * ASan, poisons for the sanitizer) the local bytes, so a stale local
 * address is caught in debug builds.
 *
 * The design, the table layout, the cost model and the measurements:
 * docs/spm.md.  Not thread-safe per core: one thread drives one dmm_spm
 * (as one SPE runs one thread); a dmm_spm_global serves many cores.
 */
#ifndef DMM_SPM_H
#define DMM_SPM_H

#include "dmm/common.h"
#include "dmm/heap.h" /* dmm_heap_harden */

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t dmm_gaddr;
#define DMM_GNULL ((dmm_gaddr)0)

typedef struct dmm_spm dmm_spm;
typedef struct dmm_spm_global dmm_spm_global;

#define DMM_SPM_MAX_CORES 64u
#define DMM_SPM_ENTRY_BYTES 16u   /* one management-table entry */
#define DMM_SPM_MAX_GRAN 16u      /* most objects in one transfer unit */
#define DMM_SPM_MAX_LOCAL (1u << 20) /* largest local memory S (1 MiB) */

/* ---- the platform port --------------------------------------------------- */

/* One DMA transfer as the platform allows it: both addresses and n are
 * multiples of `align`, and n <= max_transfer (the library splits and pads
 * larger or odd moves; it never asks for an illegal one).  Transfers with
 * the same tag complete in order; wait(mask) returns when every transfer
 * on the tags in mask (bit t = tag t, t < 32) has completed. */
typedef struct dmm_spm_port {
    void *ctx;
    void (*get)(void *ctx, void *local, dmm_gaddr src, size_t n, unsigned tag);
    void (*put)(void *ctx, dmm_gaddr dst, const void *local, size_t n, unsigned tag);
    void (*wait)(void *ctx, uint32_t tag_mask);
    /* Optional (may be NULL): the core's simulated clock in cycles, read by
     * the heap to attribute simulated time to its functions; and the
     * charge for `words` 32-bit mailbox messages exchanged with the main
     * core (the heap calls it after each manager round trip). */
    uint64_t (*clock)(void *ctx);
    void (*mailbox)(void *ctx, unsigned words);
    size_t align;        /* Cell: 16 */
    size_t max_transfer; /* Cell: 16384 */
} dmm_spm_port;

/* The host port's cost model, in simulated cycles.  A transfer of n bytes
 * costs issue + latency + ceil(n / bytes_per_cycle); a mailbox word costs
 * mailbox_word; a wait costs nothing beyond the transfers it waits for
 * (transfers are charged as if waited for at once: no overlap). */
typedef struct dmm_spm_cost {
    uint32_t issue;          /* cycles to enqueue one transfer */
    uint32_t latency;        /* cycles from issue to the first byte */
    uint32_t bytes_per_cycle;
    uint32_t mailbox_word;   /* one 32-bit mailbox message, either way */
} dmm_spm_cost;

/* Cell-BE-like defaults (docs/spm.md gives the sources): issue 10,
 * latency 400, 8 bytes/cycle, mailbox word 100. */
dmm_spm_cost dmm_spm_cell_cost(void);

/* The host port: memcpy between the local buffer and the global memory of
 * g, enforcing align / max_transfer / bounds (an illegal transfer is a bug
 * in the caller: it is reported through the port layer's abort), and
 * counting what it did. */
typedef struct dmm_spm_hostport {
    dmm_spm_port port;       /* hand &hp->port to dmm_spm_create */
    dmm_spm_global *global;
    dmm_spm_cost cost;
    uint64_t cycles;         /* simulated cycles charged so far */
    uint64_t gets, puts;     /* transfers */
    uint64_t bytes_in, bytes_out;
    uint64_t waits;
    uint64_t mailbox_words;
} dmm_spm_hostport;

/* Cell rules (align 16, max 16384); cost NULL = dmm_spm_cell_cost(). */
void dmm_spm_hostport_init(dmm_spm_hostport *hp, dmm_spm_global *g, const dmm_spm_cost *cost);

/* ---- global memory and the main core's service ---------------------------- */

typedef enum dmm_spm_mode {
    DMM_SPM_DYNAMIC = 0, /* a manager thread on the main core serves requests */
    DMM_SPM_STATIC       /* a preallocated buffer, each core serves itself */
} dmm_spm_mode;

typedef struct dmm_spm_global_config {
    dmm_spm_mode mode;
    unsigned cores;          /* execution cores, 1..DMM_SPM_MAX_CORES */
    const char *heap;        /* dmm heap config text for the global heap(s)
                                (NULL = the heap's defaults; docs/heap.md) */
    unsigned mailbox_depth;  /* inbound words per core (Cell: 4); the
                                outbound mailbox holds one word */
    bool manager_thread;     /* dynamic: start the library's manager thread
                                (needs the port's threads; DMM_E_UNSUPPORTED
                                without).  false: the caller runs
                                dmm_spm_global_serve on the main core. */
} dmm_spm_global_config;

/* dynamic, 1 core, default heap, mailbox 4, manager thread on. */
dmm_spm_global_config dmm_spm_global_default_config(void);

/* Global memory on [buf, buf+size) (global address a is buf + a).
 * Dynamic: one dmm heap over the buffer, used only by the manager.
 * Static: the buffer split into `cores` equal slices, one dmm heap each,
 * used by that core directly.  DMM_E_NULL, DMM_E_CONFIG, DMM_E_TOO_SMALL,
 * DMM_E_UNSUPPORTED. */
dmm_status dmm_spm_global_create(dmm_spm_global **out, void *buf, size_t size,
                                 const dmm_spm_global_config *cfg);

/* Stops the manager thread (after every core has been destroyed) and ends
 * the global memory; the buffer is the caller's again. */
void dmm_spm_global_destroy(dmm_spm_global *g);

/* The main core's view: the host pointer of global address a, or NULL if
 * [a, a+n) is not inside the global memory. */
void *dmm_spm_global_host(dmm_spm_global *g, dmm_gaddr a, size_t n);
size_t dmm_spm_global_size(const dmm_spm_global *g);
dmm_spm_mode dmm_spm_global_mode(const dmm_spm_global *g);

/* A core's request for global memory (a segment for its heap, or one
 * object for the software-cache baseline).  Dynamic: a blocking mailbox
 * round trip to the manager (request and reply words are counted in
 * *words when words != NULL, so the caller can charge them to its port);
 * static: the core's own slice, no words.  align is a power of two >= 16.
 * Returns DMM_GNULL when global memory is exhausted.  One thread per core. */
dmm_gaddr dmm_spm_global_alloc(dmm_spm_global *g, unsigned core, size_t bytes, size_t align,
                               unsigned *words);
/* Gives back what dmm_spm_global_alloc returned (a one-way message in
 * dynamic mode). */
void dmm_spm_global_free(dmm_spm_global *g, unsigned core, dmm_gaddr a, unsigned *words);

/* Without the manager thread: serves requests on the calling thread until
 * dmm_spm_global_stop is called (by any thread). */
void dmm_spm_global_serve(dmm_spm_global *g);
void dmm_spm_global_stop(dmm_spm_global *g);

typedef struct dmm_spm_global_stats {
    uint64_t allocs, frees, failures;   /* requests served */
    uint64_t words_in, words_out;       /* mailbox words (dynamic mode) */
    uint64_t mailbox_full_waits;        /* a core found its inbound box full */
    size_t bytes_in_use, peak_bytes;    /* global memory handed out */
    uint64_t errors;                    /* frees of addresses the global
                                           heap(s) did not hand out:
                                           reported and ignored */
} dmm_spm_global_stats;

dmm_spm_global_stats dmm_spm_global_get_stats(dmm_spm_global *g);

/* ---- one execution core's heap -------------------------------------------- */

typedef struct dmm_spm_config {
    size_t table_bytes;      /* T: bytes of local memory for resident table
                                pages (a multiple of 16 * table_frames) */
    unsigned table_frames;   /* K: table pages resident at once; each page is
                                T / K bytes.  1 = the seed's whole-table swap */
    unsigned gran;           /* objects per transfer unit, 1..DMM_SPM_MAX_GRAN:
                                that many equal-size allocations share one
                                unit and move together */
    size_t unit_bytes;       /* a unit of several objects holds at most this
                                many bytes; a larger object gets a unit of
                                its own */
    size_t segment;          /* bytes of global memory asked of the main core
                                at a time (power of two) */
    dmm_heap_harden harden;  /* OFF: addresses handed in are trusted;
                                CHECKED (default): free / p2s / s2p / realloc
                                validate them and report a bad one;
                                CANARY: as CHECKED (units carry no guard);
                                PARANOID: + the local-address rule enforced
                                (see above) */
    bool timing;             /* measure host nanoseconds per API function */
    dmm_error_policy on_error;
    dmm_error_fn error_fn;   /* may be NULL */
    void *error_ctx;
} dmm_spm_config;

/* T 4096, 1 frame, gran 1, unit 256, segment 16384, checked, no timing,
 * report errors. */
dmm_spm_config dmm_spm_default_config(void);

/* Text form (docs/spm.md):
 *   "table=4096,frames=1,gran=1,unit=256,segment=16384,harden=checked,
 *    timing=off,on_error=report"
 * parse starts from *cfg and writes it only when the whole text is valid;
 * *err (static) says why not. */
dmm_status dmm_spm_config_parse(const char *text, dmm_spm_config *cfg, const char **err);
size_t dmm_spm_config_format(const dmm_spm_config *cfg, char *buf, size_t cap);

/* How local memory is split (bytes). */
typedef struct dmm_spm_layout {
    size_t local_size;       /* S */
    size_t control_bytes;    /* the dmm_spm control block and its translation cache */
    size_t table_bytes;      /* T */
    size_t heap_bytes;       /* H = S - control - T */
    size_t page_entries;     /* entries per table page */
    size_t max_object;       /* largest object that can be resident whole (p2s) */
    size_t max_alloc;        /* largest object malloc accepts: above max_object, an
                              * object lives in global memory only and is reached
                              * in pieces (dmm_spm_p2s_part); p2s of it fails */
} dmm_spm_layout;

/* Formats core `core`'s heap on the local buffer [local, local+size)
 * (16-byte aligned, size <= DMM_SPM_MAX_LOCAL), talking to global memory
 * through g and port.  DMM_E_NULL, DMM_E_CONFIG, DMM_E_TOO_SMALL;
 * DMM_E_RANGE for a core g was not made for; DMM_E_OVERLAP while another
 * heap for the same core exists (until its dmm_spm_destroy). */
dmm_status dmm_spm_create(dmm_spm **out, void *local, size_t size, const dmm_spm_config *cfg,
                          dmm_spm_global *g, unsigned core, const dmm_spm_port *port);
/* Gives every global segment back and detaches the core. */
void dmm_spm_destroy(dmm_spm *s);

dmm_spm_layout dmm_spm_get_layout(const dmm_spm *s);

/* Allocation in global memory.  0 on failure: size 0, size > max_alloc,
 * global memory exhausted, or local memory full of pinned units
 * (dmm_spm_last_status says which). */
dmm_gaddr dmm_spm_malloc(dmm_spm *s, size_t size);
dmm_gaddr dmm_spm_calloc(dmm_spm *s, size_t n, size_t size);
/* realloc(0, n) = malloc; realloc(a, 0) frees and returns 0; on failure a
 * is untouched and 0 is returned.  The object may move (new address). */
dmm_gaddr dmm_spm_realloc(dmm_spm *s, dmm_gaddr a, size_t size);
void dmm_spm_free(dmm_spm *s, dmm_gaddr a);
/* Usable bytes of a live object (0 for a bad address). */
size_t dmm_spm_size(dmm_spm *s, dmm_gaddr a);

/* Makes the object holding global address a resident and returns the local
 * address of the byte a (a may point inside an object).  The unit is
 * written back when evicted.  p2s_ro: the same, but the caller promises not
 * to write, so the unit stays clean unless it already was dirty.  NULL for
 * a bad address (reported) or when local memory is full of pinned units.
 * s must not be NULL: a hit is answered from a small translation cache in
 * s in about ten instructions (docs/spm.md, "The hit path"). */
void *dmm_spm_p2s(dmm_spm *s, dmm_gaddr a);
const void *dmm_spm_p2s_ro(dmm_spm *s, dmm_gaddr a);
/* The global address of a resident local byte; 0 (reported) otherwise. */
dmm_gaddr dmm_spm_s2p(dmm_spm *s, const void *local);

/* Partial transfers: the local address of byte `at`, valid for the n bytes
 * [at, at + n) under the local-address rule.  a is an address of the same
 * live object (the pass gives the pointer it indexes; the object's start
 * serves the hit path best), and [at, at + n) must lie in that object (the
 * general path checks it).  When the object has a unit of its own larger
 * than unit_bytes and than a quarter of H, and that unit is not resident,
 * only the
 * unit_bytes-aligned pieces of it covering the span are fetched (a dirty
 * piece is written back when it leaves); otherwise this is p2s(at) /
 * p2s_ro(at).  Bytes outside the span must not be accessed through the
 * result.  No pin. */
void *dmm_spm_p2s_part(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n);
const void *dmm_spm_p2s_part_ro(dmm_spm *s, dmm_gaddr a, dmm_gaddr at, size_t n);

/* p2s plus a pin: the unit stays resident at that local address until the
 * matching unpin (pins nest). */
void *dmm_spm_pin(dmm_spm *s, dmm_gaddr a);
void dmm_spm_unpin(dmm_spm *s, dmm_gaddr a);

/* Writes every dirty resident unit and table page back to global memory
 * (the data stays resident), so the main core sees current data. */
dmm_status dmm_spm_flush(dmm_spm *s);

/* Why the last failing call failed (DMM_OK after a success). */
dmm_status dmm_spm_last_status(const dmm_spm *s);

/* Statistics.  The per-function figures follow the seed's Table II: for
 * each API function, how often it was called, the simulated cycles the
 * port's clock advanced inside it, and (timing=on) the host nanoseconds
 * spent inside it. */
typedef enum dmm_spm_fn {
    DMM_SPM_FN_MALLOC = 0, /* malloc, calloc */
    DMM_SPM_FN_FREE,
    DMM_SPM_FN_REALLOC,
    DMM_SPM_FN_P2S,        /* p2s, p2s_ro, pin */
    DMM_SPM_FN_S2P,        /* s2p, unpin */
    DMM_SPM_FN_COUNT
} dmm_spm_fn;

typedef struct dmm_spm_stats {
    uint64_t calls[DMM_SPM_FN_COUNT];
    uint64_t sim_cycles[DMM_SPM_FN_COUNT];
    uint64_t host_ns[DMM_SPM_FN_COUNT];
    uint64_t p2s_hits;          /* resident already */
    uint64_t unit_fetches;      /* units brought in */
    uint64_t unit_evictions;
    uint64_t unit_writebacks;   /* evicted or flushed units that were dirty */
    uint64_t page_fetches;      /* table pages brought in (table swaps) */
    uint64_t page_writebacks;
    uint64_t segment_requests;  /* global memory asked of the main core */
    uint64_t mailbox_words;
    uint64_t live_objects;
    uint64_t live_bytes;        /* bytes of live objects (sizes rounded to 16) */
    size_t local_peak;          /* most bytes of H in use at once */
    uint64_t errors;            /* bad addresses reported */
    uint64_t part_fetches;      /* of unit_fetches: pieces of large units (p2s_part) */
} dmm_spm_stats;

dmm_spm_stats dmm_spm_get_stats(const dmm_spm *s);
/* The stats as one JSON object; snprintf-like. */
size_t dmm_spm_stats_json(const dmm_spm_stats *st, char *buf, size_t cap);

/* Walks every table page (fetching non-resident ones through the port) and
 * the resident units and checks the invariants (docs/spm.md).  DMM_OK or
 * DMM_E_CORRUPT with *reason (static) set. */
dmm_status dmm_spm_check(dmm_spm *s, const char **reason);

#ifdef __cplusplus
}
#endif
#endif /* DMM_SPM_H */
