/*
 * src/port/port.h - the only contract between dmmkit's portable core and a
 * platform.  Exactly one implementation is linked:
 *   src/port/posix.c        - Linux/POSIX: mmap pages, pthread mutexes, libc,
 *                             CLOCK_MONOTONIC, sched_yield
 *   src/port/freestanding.c - no OS: no pages, no mutex, no clock, trap on abort
 * Platform #ifdefs live in src/port/ and nowhere else.
 *
 * Users: the heap (src/heap) uses pages, mutexes, abort/assert, bulk memory
 * and cpu_relax; the pool (src/pool) the same plus events; the scratchpad
 * heap's global memory (src/spm) mutexes, conditions and threads; the
 * multi-heap (src/multiheap) the spin lock, the thread token and remote
 * fences.  The heap must never use the clock or yield, so that it runs
 * on a port that has neither.  The LD_PRELOAD recorder (src/recorder, hosted
 * only) links src/port/posix.c and uses pages, the clock and the spin lock.
 * The malloc (src/malloc, hosted only) also uses aligned mappings, page
 * discarding, thread-exit keys, fork handlers, the environment and raw
 * error output (the section at the end).
 */
#ifndef DMM_PORT_H
#define DMM_PORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of opaque, max-aligned storage a port mutex needs (in the heap's
 * control block). */
#define DMM_PORT_MUTEX_BYTES 64

typedef struct dmm_port_mutex {
    union {
        unsigned char bytes[DMM_PORT_MUTEX_BYTES];
        long double align_ld;
        void *align_p;
        uint64_t align_u;
    } u;
} dmm_port_mutex;

/* OS memory.  page_size() is 0 when the port has no OS memory. */
size_t dmm_port_page_size(void);
void *dmm_port_pages_map(size_t bytes);         /* NULL on failure */
void dmm_port_pages_unmap(void *p, size_t bytes);

/* Mutexes.  has_mutex() false: DMM_LOCK_MUTEX is refused at init. */
bool dmm_port_has_mutex(void);
bool dmm_port_mutex_init(dmm_port_mutex *m);
void dmm_port_mutex_lock(dmm_port_mutex *m);
void dmm_port_mutex_unlock(dmm_port_mutex *m);
void dmm_port_mutex_destroy(dmm_port_mutex *m);

/* Events, for the pool's blocking allocation: a one-shot flag one thread
 * waits on and another sets.  has_wait() false (no threads): the pool
 * treats every timeout as 0 and never calls the others.  The storage is
 * the waiting thread's (on its stack); signal may be called with the
 * pool's lock held (it never blocks for long). */
#define DMM_PORT_EVENT_BYTES 192
typedef struct dmm_port_event {
    union {
        unsigned char bytes[DMM_PORT_EVENT_BYTES];
        long double align_ld;
        void *align_p;
        uint64_t align_u;
    } u;
} dmm_port_event;
bool dmm_port_has_wait(void);
bool dmm_port_event_init(dmm_port_event *e);
/* Waits until the event is set or timeout_ns passed (< 0: no limit).
 * Returns whether it was set; spurious wake-ups are absorbed. */
bool dmm_port_event_wait(dmm_port_event *e, int64_t timeout_ns);
void dmm_port_event_signal(dmm_port_event *e);
void dmm_port_event_destroy(dmm_port_event *e);

/* Condition variables, for the scratchpad heap's mailboxes (blocking
 * bounded queues): wait atomically releases the port mutex m (held by the
 * caller), sleeps until a broadcast (or spuriously) and takes m again, so
 * callers re-check their predicate in a loop.  has_mutex() false: init
 * fails.  The storage is the caller's (in a control block). */
#define DMM_PORT_COND_BYTES 64
typedef struct dmm_port_cond {
    union {
        unsigned char bytes[DMM_PORT_COND_BYTES];
        long double align_ld;
        void *align_p;
        uint64_t align_u;
    } u;
} dmm_port_cond;
bool dmm_port_cond_init(dmm_port_cond *c);
void dmm_port_cond_wait(dmm_port_cond *c, dmm_port_mutex *m);
void dmm_port_cond_broadcast(dmm_port_cond *c);
void dmm_port_cond_destroy(dmm_port_cond *c);

/* Threads, for the scratchpad heap's manager thread (the library starts
 * it, the application writes no thread).  has_threads() false (no OS):
 * start fails and the caller reports DMM_E_UNSUPPORTED.  The handle's
 * storage is the caller's and must stay in place until join returns (the
 * new thread reads fn and arg from it). */
#define DMM_PORT_THREAD_BYTES 32
typedef struct dmm_port_thread {
    void (*fn)(void *arg);
    void *arg;
    union {
        unsigned char bytes[DMM_PORT_THREAD_BYTES];
        void *align_p;
        uint64_t align_u;
    } u;
} dmm_port_thread;
bool dmm_port_has_threads(void);
/* Starts fn(arg) on a new thread; false when it cannot. */
bool dmm_port_thread_start(dmm_port_thread *t, void (*fn)(void *arg), void *arg);
/* Waits until the thread started on t has returned. */
void dmm_port_thread_join(dmm_port_thread *t);

/* Called when the error policy is DMM_ON_ERROR_ABORT.  Never returns. */
_Noreturn void dmm_port_abort(void);

/* A failed internal assertion (DMM_ASSERT_LEVEL >= 1): says what failed
 * and where if the platform can, then stops.  Never returns. */
_Noreturn void dmm_port_assert_fail(const char *expr, const char *file, int line);

/* Bulk memory (libc's on hosted ports, byte/word loops when freestanding). */
void dmm_port_memcpy(void *dst, const void *src, size_t n);
void dmm_port_memset(void *dst, int c, size_t n);

/* The address of the definition of the function `name` that the dynamic
 * linker would find after the calling library's own (dlsym(RTLD_NEXT)):
 * the C library's memcpy for libdmm.so, which exports one of its own.
 * NULL when there is none.  Only in the hosted shared libdmm
 * (src/port/posix_dl.c); a port without a dynamic linker has none. */
void *dmm_port_next_symbol(const char *name);

/* A pause hint for spin loops (may do nothing). */
void dmm_port_cpu_relax(void);

/* Gives the processor to another runnable thread (sched_yield); does nothing
 * on a port without a scheduler. */
void dmm_port_yield(void);

/* The calling thread's token: nonzero, even, and different for every thread
 * alive at the same time (the address of a thread-local object; a thread
 * that starts after another ended may get its token).  A constant on a port
 * without threads.  For the multi-heap's owned home caches. */
uintptr_t dmm_port_thread_token(void);
/* The posix port's library build (cmake/DmmLibrary.cmake defines
 * DMM_PORT_INLINE_TOKEN there) reads the same thread-local object inline: the
 * multi-heap asks for the token on every malloc and free, and a call there
 * makes the fast path save and restore registers around it.  Any other
 * build calls the function; both give the same token. */
#if defined(DMM_PORT_INLINE_TOKEN) && DMM_PORT_INLINE_TOKEN
extern _Thread_local uint16_t dmm_port_token_object;
#define dmm_port_thread_token() ((uintptr_t)&dmm_port_token_object)
#endif

/* Asymmetric fences, for a fast path that must not pay for an atomic
 * read-modify-write: remote_fence() returns after every other running thread
 * of the process has executed a full memory barrier (Linux membarrier), so a
 * thread that stores a flag and reads another with only a compiler barrier in
 * between pairs with one that stores, calls remote_fence() and reads (the
 * store-load order of Dekker's protocol).  has_remote_fence() is false when
 * the OS cannot (then remote_fence must not be relied on); it registers the
 * process on first use.  Without threads both are trivially true / nothing. */
bool dmm_port_has_remote_fence(void);
void dmm_port_remote_fence(void);

/* A monotonic clock: nanoseconds since an arbitrary origin fixed for the
 * process, never going back.  Always 0 on a port without a clock
 * (freestanding), so callers must treat 0 as "no time".  Not used by the
 * heap. */
uint64_t dmm_port_clock_ns(void);

/* Fills buf with n bytes from the OS's random source, without blocking and
 * without allocating; false when the port has none or it is not ready yet
 * (the caller then falls back on what it has, e.g. the clock).  On Linux the
 * getrandom system call, made directly: libc's getrandom and clock_gettime
 * wrappers lie in text pages no other call of the allocator touches, and a
 * first call faults in 64 KiB or more of libc around them. */
bool dmm_port_random(void *buf, size_t n);

/* A spin lock for short critical sections in code that must not block in the
 * OS or allocate (the recorder's own tables): test-and-set on an atomic flag,
 * a pause hint while it is held, and a yield every 64 failed looks so that a
 * holder that was preempted can run.  Not recursive.  Zero-initialised
 * storage is NOT a valid unlocked lock in C11: use DMM_PORT_SPINLOCK_INIT or
 * dmm_port_spin_init (which may also reset a lock left held, e.g. in a
 * child after fork). */
typedef struct dmm_port_spinlock {
    atomic_flag f;
} dmm_port_spinlock;
#define DMM_PORT_SPINLOCK_INIT {ATOMIC_FLAG_INIT}

static inline void dmm_port_spin_init(dmm_port_spinlock *l)
{
    atomic_flag_clear_explicit(&l->f, memory_order_release);
}

static inline void dmm_port_spin_lock(dmm_port_spinlock *l)
{
    unsigned spins = 0;
    while (atomic_flag_test_and_set_explicit(&l->f, memory_order_acquire)) {
        if (++spins >= 64) {
            dmm_port_yield();
            spins = 0;
        } else {
            dmm_port_cpu_relax();
        }
    }
}

static inline void dmm_port_spin_unlock(dmm_port_spinlock *l)
{
    atomic_flag_clear_explicit(&l->f, memory_order_release);
}

/* ---- for the malloc (src/malloc) -------------------------------------------
 * The heap never uses these.  On the freestanding port they fail (NULL,
 * false) or do nothing. */

/* Maps bytes (a multiple of the page size) of fresh zeroed memory at an
 * address that is a multiple of align (a power of two, at least the page
 * size).  NULL on failure.  Unmapped with dmm_port_pages_unmap. */
void *dmm_port_pages_map_aligned(size_t bytes, size_t align);

/* The pages [p, p+bytes) (page-aligned) stay mapped, but their contents
 * are no longer needed: the OS may take the memory back (madvise).  They
 * read as zero or as their old contents afterwards. */
void dmm_port_pages_discard(void *p, size_t bytes);

/* Makes the pages [p, p+bytes) (page-aligned, inside a mapping made by
 * dmm_port_pages_map*) inaccessible: any access faults.  A guard page
 * (libdmm's secure mode).  false when the port cannot (nothing changed). */
bool dmm_port_pages_guard(void *p, size_t bytes);

/* Makes pages that dmm_port_pages_guard made inaccessible readable and
 * writable again (their contents as they were: zero if never written).
 * false when the port cannot. */
bool dmm_port_pages_unguard(void *p, size_t bytes);

/* Moves the pages of the mapping [from, from+from_bytes) to `to`, the start
 * of a mapping of to_bytes >= from_bytes (page multiples) made by
 * dmm_port_pages_map*, which they replace, without copying: the contents
 * are at `to` afterwards, the rest of `to` reads as zero, and `from` is
 * unmapped.  false, with nothing changed, when the OS cannot (the caller
 * copies instead). */
bool dmm_port_pages_move(void *from, size_t from_bytes, void *to, size_t to_bytes);

/* Moves the pages of [from, from+bytes) (one mapping made by
 * dmm_port_pages_map*, readable and writable) to `to`, the start of such a
 * mapping of at least bytes, which they replace, without copying, and
 * leaves `from` mapped but empty (it reads as zero): its address stays
 * reserved, and dmm_port_pages_guard then makes it inaccessible at no cost
 * per page.  false, with nothing changed, when the OS cannot. */
bool dmm_port_pages_move_out(void *from, size_t bytes, void *to);

/* A per-thread slot whose destructor runs when a thread that set it to a
 * non-NULL value exits (pthread keys).  create: false when the port has
 * no threads.  set: no allocation (safe inside malloc). */
typedef struct dmm_port_tkey {
    unsigned v;
} dmm_port_tkey;
bool dmm_port_tkey_create(dmm_port_tkey *k, void (*destructor)(void *));
void dmm_port_tkey_set(dmm_port_tkey k, void *value);

/* Handlers around fork(): prepare runs in the parent before, parent and
 * child after.  false when the port has no fork. */
bool dmm_port_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* The value of an environment variable, NULL when unset (or no environment).
 * Never allocates. */
const char *dmm_port_getenv(const char *name);

/* Writes n bytes to the error stream without buffering or allocating (a
 * malloc cannot use stdio).  Does nothing when there is none. */
void dmm_port_write_err(const char *s, size_t n);

#endif /* DMM_PORT_H */
