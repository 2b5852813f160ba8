/*
 * src/recorder/recorder.c - dmmrec, the LD_PRELOAD allocation recorder.
 *
 *   LD_PRELOAD=libdmmrec.so DMM_TRACE_OUT=prog.trace prog args...
 *
 * Interposes the whole malloc family, names every allocation by a fresh
 * object id, and writes a dmm trace (include/dmm/trace.h) when the process
 * exits, or on demand when DMM_TRACE_SIGNAL arrives.  Usage, environment
 * variables and limitations: docs/recorder.md.
 *
 * Design
 *  - The real allocator is glibc's, reached through its exported
 *    __libc_malloc / __libc_calloc / __libc_realloc / __libc_free /
 *    __libc_memalign / __libc_valloc / __libc_pvalloc entry points, so no
 *    dlsym() is needed to bootstrap malloc (dlsym itself allocates).
 *    posix_memalign and aligned_alloc are built on __libc_memalign (in glibc
 *    2.36 aligned_alloc *is* memalign; posix_memalign only adds the argument
 *    check, done here).  malloc_usable_size is passed through to the next
 *    definition (looked up once with dlsym(RTLD_NEXT), under the reentrancy
 *    guard); it is counted but not recorded as an operation.
 *  - Every recorded operation takes a number from one global atomic
 *    sequence; that number gives the global order of the trace.  An
 *    allocation takes it after the real call returned, a free before the
 *    real free (so an address freed by one thread and reused by another is
 *    always seen in the right order).  The object id of an allocation is
 *    its sequence number + 1; ids are renumbered densely when the trace is
 *    written.
 *  - Address -> id lives in a sharded open-addressing hash table (64
 *    shards, each with its own spin lock, backward-shift deletion) whose
 *    storage comes from the port's page mapping, never from malloc.
 *  - Platform services come from the port layer (src/port/port.h, the
 *    posix port is compiled into this library): pages, the monotonic clock,
 *    the spin lock.  The trace is built and written through the trace
 *    component's public API only (include/dmm/trace.h).
 *  - Each thread appends fixed-size 40-byte records to its own chain of
 *    page-mapped chunks (64 KiB first, then 1 MiB) (no lock; the record count of a chunk is published
 *    with a release store).  The thread state pointer is an initial-exec
 *    thread-local.  The thread index is a dense number assigned at the
 *    thread's first recorded operation.
 *  - A thread-local "busy" flag is the reentrancy guard: while it is set
 *    (the recorder is working, writing a trace, or a signal handler
 *    interrupted it) every call goes straight to glibc and nothing is
 *    recorded.
 *  - Writing: the per-thread buffers are merged by sequence number into a
 *    dmm_trace (holes left by operations still in flight are dropped),
 *    dmm_trace_compact() renumbers ids and thread indices densely,
 *    dmm_trace_add_syncs() derives the cross-thread synchronisation (skipped
 *    when only one thread allocated: it would add nothing),
 *    dmm_trace_validate() checks the result (its verdict goes into the
 *    metadata), and dmm_trace_save() writes a temporary file beside
 *    OUT, renamed to OUT only when complete.  A failure is reported once,
 *    with its cause, as a line ending in "(trace not written)": into the
 *    DMM_TRACE_SUMMARY file when there is one (record.sh prints it), else on
 *    stderr.
 *  - fork (pthread_atfork child handler): by default the child stops
 *    recording and never writes; with DMM_TRACE_FORK=follow it drops the
 *    parent's records and address map and records its own trace into
 *    OUT.<childpid>.  exec: the new image loads the recorder afresh; when
 *    DMM_TRACE_OUT is given, only the process that first saw it (pid kept in
 *    DMM_TRACE_ROOT) writes OUT, every other process writes OUT.<pid>.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmm/trace.h"
#include "malloc/family.h" /* the argument rules, shared with libdmm */
#include "port/port.h"

#define DMMREC_VERSION "1.0"
#define API __attribute__((visibility("default")))

/* glibc's own entry points (exported by libc.so.6 for this purpose). */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* ======================================================================
 * state
 * ====================================================================== */

enum { ST_UNINIT = 0, ST_INIT, ST_ON, ST_OFF };

/* One operation in a thread buffer.  seqk = seq | kind << 56 | sub << 60. */
typedef struct rec {
    uint64_t seqk, id, size, arg, t_ns;
} rec;
_Static_assert(sizeof(rec) == 40, "record layout");
#define SEQ_MASK ((UINT64_C(1) << 56) - 1u)

/* A thread's first mapping is small (many short-lived threads stay cheap);
 * later chunks are 1 MiB (about 26000 records). */
#define FIRST_BYTES ((size_t)64 << 10)
#define CHUNK_BYTES ((size_t)1 << 20)
typedef struct chunk {
    struct chunk *_Atomic next;
    _Atomic uint32_t n; /* records published */
    uint32_t cap;
    size_t bytes;       /* size of the mapping that holds this chunk */
    rec recs[];
} chunk;

typedef struct rthread {
    struct rthread *next;  /* list of all threads (set before publishing) */
    uint32_t tid;
    chunk *head, *tail;
} rthread;

typedef struct tstate {
    rthread *t;
    int busy;    /* reentrancy guard */
    int norec;   /* this thread is never recorded (thread limit) */
    int writing; /* inside write_trace */
} tstate;

static _Thread_local tstate tls __attribute__((tls_model("initial-exec")));

static _Atomic int g_state;
static _Atomic uint64_t g_seq;
static _Atomic uint32_t g_ntids;
static rthread *_Atomic g_threads;
static int g_time;    /* DMM_TRACE_TIME=1 */
static int g_follow;  /* DMM_TRACE_FORK=follow */
static int g_verbose; /* DMM_TRACE_VERBOSE=1 */
static uint64_t g_t0; /* port clock (monotonic ns) at start */
static struct timespec g_wall0;
static size_t g_page = 4096;
static pid_t g_pid, g_forked_from;

/* Sized so that joining never truncates (a directory, a name, a suffix). */
#define DIR_MAX PATH_MAX
#define NAME_MAX_ (2 * PATH_MAX + 8)
#define OUT_MAX (NAME_MAX_ + 64)
static char g_out[OUT_MAX];          /* this process's trace file */
static char g_out_base[NAME_MAX_];   /* explicit DMM_TRACE_OUT, absolute; "" if default */
static char g_out_dir[DIR_MAX];      /* the working directory at start */
static char g_summary[NAME_MAX_];    /* DMM_TRACE_SUMMARY, absolute */

static _Atomic uint64_t g_unknown_free, g_unknown_realloc, g_implicit_free, g_usable_calls,
    g_lost, g_dropped_threads;
static _Atomic int g_snap_req;
static _Atomic unsigned g_snap_no;
static dmm_port_spinlock g_write_lock = DMM_PORT_SPINLOCK_INIT;

/* ---- small helpers ---------------------------------------------------- */

/* Wall-clock time (C11 timespec_get) for the start_time metadata. */
static void wall_now(struct timespec *ts)
{
    if (timespec_get(ts, TIME_UTC) != TIME_UTC)
        ts->tv_sec = 0, ts->tv_nsec = 0;
}

/* Writes a whole string to fd (used for messages; no stdio, no malloc).
 * Returns 0 when all of it was written, -1 otherwise. */
static int put_fd(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static int env_true(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "no") != 0 && strcmp(v, "off") != 0;
}

/* ======================================================================
 * address -> id map: 64 shards of linear probing, storage from port pages
 * ====================================================================== */

#define NSHARD 64u
#define SHARD_INIT_CAP 1024u

typedef struct slot {
    uint64_t key, val; /* key 0 = empty */
} slot;

/* one cache line per shard: no false sharing between shard locks */
typedef struct shard {
    _Alignas(64) dmm_port_spinlock lock;
    slot *s;
    size_t cap, n;
} shard;
_Static_assert(sizeof(shard) == 64, "one shard per cache line");

static shard g_map[NSHARD];

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static size_t home_of(uint64_t key, size_t cap) { return (size_t)(mix(key) >> 6) & (cap - 1u); }

/* Puts every entry of old into the (empty) table n. */
static void rehash_into(slot *n, size_t ncap, const slot *old, size_t ocap)
{
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key) {
            size_t j = home_of(old[i].key, ncap);
            while (n[j].key)
                j = (j + 1) & (ncap - 1u);
            n[j] = old[i];
        }
}

static int shard_reserve(shard *sh)
{
    if (!sh->s) {
        if (!(sh->s = dmm_port_pages_map(SHARD_INIT_CAP * sizeof(slot))))
            return -1;
        sh->cap = SHARD_INIT_CAP;
        sh->n = 0;
    }
    if ((sh->n + 1) * 2 > sh->cap) {
        size_t ncap = sh->cap * 2;
        slot *ns = dmm_port_pages_map(ncap * sizeof(slot));
        if (!ns)
            return -1;
        rehash_into(ns, ncap, sh->s, sh->cap);
        dmm_port_pages_unmap(sh->s, sh->cap * sizeof(slot));
        sh->s = ns;
        sh->cap = ncap;
    }
    return 0;
}

/* Inserts key -> val.  Returns 0 when the key was new, 1 when it replaced a
 * stale entry (old id in *old), -1 when out of memory. */
static int map_put(uint64_t key, uint64_t val, uint64_t *old)
{
    shard *sh = &g_map[mix(key) & (NSHARD - 1u)];
    int rc = 0;
    dmm_port_spin_lock(&sh->lock);
    if (shard_reserve(sh)) {
        rc = -1;
    } else {
        size_t i = home_of(key, sh->cap);
        while (sh->s[i].key && sh->s[i].key != key)
            i = (i + 1) & (sh->cap - 1u);
        if (sh->s[i].key == key) {
            *old = sh->s[i].val;
            rc = 1;
        } else {
            sh->s[i].key = key;
            sh->n++;
        }
        sh->s[i].val = val;
    }
    dmm_port_spin_unlock(&sh->lock);
    return rc;
}

/* Removes key; returns its id or 0 when unknown. */
static uint64_t map_del(uint64_t key)
{
    shard *sh = &g_map[mix(key) & (NSHARD - 1u)];
    uint64_t val = 0;
    dmm_port_spin_lock(&sh->lock);
    if (sh->s) {
        size_t mask = sh->cap - 1u, i = home_of(key, sh->cap);
        while (sh->s[i].key && sh->s[i].key != key)
            i = (i + 1) & mask;
        if (sh->s[i].key == key) {
            size_t j = i;
            val = sh->s[i].val;
            /* backward-shift deletion keeps probe chains intact */
            for (;;) {
                size_t k;
                j = (j + 1) & mask;
                if (!sh->s[j].key)
                    break;
                k = home_of(sh->s[j].key, sh->cap);
                /* move j into the hole i unless its home lies cyclically in (i, j] */
                if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
                    sh->s[i] = sh->s[j];
                    i = j;
                }
            }
            sh->s[i].key = 0;
            sh->s[i].val = 0;
            sh->n--;
        }
    }
    dmm_port_spin_unlock(&sh->lock);
    return val;
}

static void map_reset(void)
{
    for (unsigned i = 0; i < NSHARD; i++) {
        if (g_map[i].s)
            dmm_port_pages_unmap(g_map[i].s, g_map[i].cap * sizeof(slot));
        g_map[i].s = NULL;
        g_map[i].cap = g_map[i].n = 0;
        dmm_port_spin_init(&g_map[i].lock);
    }
}

/* ======================================================================
 * per-thread buffers
 * ====================================================================== */

static chunk *chunk_init(void *mem, size_t bytes, size_t map_bytes)
{
    chunk *c = mem;
    atomic_store_explicit(&c->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&c->n, 0, memory_order_relaxed);
    c->cap = (uint32_t)((bytes - sizeof(chunk)) / sizeof(rec));
    c->bytes = map_bytes;
    return c;
}

_Static_assert(sizeof(rthread) <= 64, "thread header fits before its first chunk");

static rthread *get_thread(tstate *ts)
{
    rthread *t;
    void *mem;
    uint32_t tid;
    if (ts->t)
        return ts->t;
    if (ts->norec)
        return NULL;
    if (!(mem = dmm_port_pages_map(FIRST_BYTES))) {
        atomic_fetch_add_explicit(&g_lost, 1, memory_order_relaxed);
        return NULL;
    }
    tid = atomic_fetch_add(&g_ntids, 1);
    if (tid >= DMM_TRACE_MAX_THREADS) {
        dmm_port_pages_unmap(mem, FIRST_BYTES);
        ts->norec = 1;
        atomic_fetch_add(&g_dropped_threads, 1);
        return NULL;
    }
    /* the thread header and its first chunk share one mapping */
    t = mem;
    t->tid = tid;
    t->head = t->tail = chunk_init((char *)mem + 64, FIRST_BYTES - 64, FIRST_BYTES);
    t->next = atomic_load(&g_threads);
    while (!atomic_compare_exchange_weak(&g_threads, &t->next, t))
        ;
    ts->t = t;
    return t;
}

/* Appends one record; returns 0 or -1 (no memory for a new chunk). */
static int emit(rthread *t, uint64_t seq, unsigned kind, unsigned sub, uint64_t id, uint64_t size,
                uint64_t arg)
{
    chunk *c = t->tail;
    uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
    rec *r;
    if (n == c->cap) {
        void *mem = dmm_port_pages_map(CHUNK_BYTES);
        chunk *nc;
        if (!mem) {
            atomic_fetch_add_explicit(&g_lost, 1, memory_order_relaxed);
            return -1;
        }
        nc = chunk_init(mem, CHUNK_BYTES, CHUNK_BYTES);
        atomic_store_explicit(&c->next, nc, memory_order_release);
        t->tail = c = nc;
        n = 0;
    }
    r = &c->recs[n];
    r->seqk = (seq & SEQ_MASK) | ((uint64_t)kind << 56) | ((uint64_t)sub << 60);
    r->id = id;
    r->size = size;
    r->arg = arg;
    r->t_ns = g_time ? dmm_port_clock_ns() - g_t0 : 0;
    atomic_store_explicit(&c->n, n + 1, memory_order_release);
    return 0;
}

/* Release: a writer that loads g_seq (acquire) and finds this operation below
 * its limit also sees every record published before it, such as the
 * allocation of the object a cross-thread free names. */
static uint64_t next_seq(void) { return atomic_fetch_add_explicit(&g_seq, 1, memory_order_release); }

/* ======================================================================
 * initialisation
 * ====================================================================== */

static void read_env_options(void)
{
    const char *v = getenv("DMM_TRACE_FORK");
    g_time = env_true("DMM_TRACE_TIME");
    g_verbose = env_true("DMM_TRACE_VERBOSE");
    g_follow = v && strcmp(v, "follow") == 0;
}

static void lazy_init(void)
{
    int expect = ST_UNINIT;
    if (!atomic_compare_exchange_strong(&g_state, &expect, ST_INIT))
        return; /* someone else is initialising (or done): pass through meanwhile */
    tls.busy = 1;
    for (unsigned i = 0; i < NSHARD; i++)
        dmm_port_spin_init(&g_map[i].lock);
    g_pid = getpid();
    g_t0 = dmm_port_clock_ns();
    wall_now(&g_wall0);
    if (dmm_port_page_size())
        g_page = dmm_port_page_size();
    /* The environment may not be readable yet when the dynamic loader makes
     * the first call; the constructor reads it again. */
    read_env_options();
    atomic_store(&g_state, ST_ON);
    tls.busy = 0;
}

/* Joins dir and name into out (absolute path). */
static void abs_path(char *out, size_t cap, const char *dir, const char *name)
{
    if (name[0] == '/' || !dir[0])
        snprintf(out, cap, "%s", name);
    else
        snprintf(out, cap, "%s/%s", dir, name);
}

static void set_default_out(void)
{
    char name[64];
    snprintf(name, sizeof name, "dmm-%ld.trace", (long)g_pid);
    abs_path(g_out, sizeof g_out, g_out_dir, name);
}

static void snap_handler(int sig)
{
    (void)sig;
    atomic_store(&g_snap_req, 1);
}

static int parse_signal(const char *s)
{
    if (!s || !*s)
        return 0;
    if (strncmp(s, "SIG", 3) == 0)
        s += 3;
    if (strcmp(s, "USR1") == 0)
        return SIGUSR1;
    if (strcmp(s, "USR2") == 0)
        return SIGUSR2;
    if (strcmp(s, "HUP") == 0)
        return SIGHUP;
    if (strcmp(s, "PROF") == 0)
        return SIGPROF;
    {
        char *end;
        long n = strtol(s, &end, 10);
        if (*end == '\0' && n > 0 && n < NSIG)
            return (int)n;
    }
    return -1;
}

static void atfork_child(void);

__attribute__((constructor)) static void dmmrec_ctor(void)
{
    const char *out, *sum, *sig;
    if (atomic_load(&g_state) == ST_UNINIT)
        lazy_init();
    if (atomic_load(&g_state) != ST_ON)
        return;
    tls.busy = 1;
    read_env_options();
    if (env_true("DMM_TRACE_DISABLE")) {
        atomic_store(&g_state, ST_OFF);
        tls.busy = 0;
        return;
    }
    if (!getcwd(g_out_dir, sizeof g_out_dir))
        g_out_dir[0] = '\0';
    out = getenv("DMM_TRACE_OUT");
    if (out && *out) {
        const char *root = getenv("DMM_TRACE_ROOT");
        abs_path(g_out_base, sizeof g_out_base, g_out_dir, out);
        /* A relative name means this process's start directory: programs it
         * runs may start elsewhere (a shell script that cd's, pyenv's shims),
         * so they inherit the absolute name. */
        if (out[0] != '/' && g_out_dir[0])
            setenv("DMM_TRACE_OUT", g_out_base, 1);
        if (!root || !*root) {
            char pid[32];
            snprintf(pid, sizeof pid, "%ld", (long)g_pid);
            setenv("DMM_TRACE_ROOT", pid, 1);
            snprintf(g_out, sizeof g_out, "%s", g_out_base);
        } else if (strtol(root, NULL, 10) == (long)g_pid) {
            snprintf(g_out, sizeof g_out, "%s", g_out_base); /* exec'd in place */
        } else {
            snprintf(g_out, sizeof g_out, "%s.%ld", g_out_base, (long)g_pid);
        }
    } else {
        set_default_out();
    }
    sum = getenv("DMM_TRACE_SUMMARY");
    if (sum && *sum) {
        abs_path(g_summary, sizeof g_summary, g_out_dir, sum);
        if (sum[0] != '/' && g_out_dir[0])
            setenv("DMM_TRACE_SUMMARY", g_summary, 1);
    }
    sig = getenv("DMM_TRACE_SIGNAL");
    if (sig && *sig) {
        int s = parse_signal(sig);
        if (s > 0) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = snap_handler;
            sa.sa_flags = SA_RESTART;
            sigemptyset(&sa.sa_mask);
            sigaction(s, &sa, NULL);
        } else {
            put_fd(2, "dmmrec: DMM_TRACE_SIGNAL: unknown signal name (use USR1, USR2, HUP, PROF or a number)\n");
        }
    }
    pthread_atfork(NULL, NULL, atfork_child);
    tls.busy = 0;
}

/* ======================================================================
 * writing a trace
 * ====================================================================== */

static void read_cmdline(char *buf, size_t cap)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = 0;
    buf[0] = '\0';
    if (fd >= 0) {
        n = read(fd, buf, cap - 1);
        close(fd);
    }
    if (n <= 0) {
        snprintf(buf, cap, "?");
        return;
    }
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
        else if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
            buf[i] = '?';
    buf[n] = '\0';
}

typedef struct counts {
    uint64_t k[DMM_T_SYNC + 1];
    uint64_t dropped;
} counts;

/* Merges every thread buffer into t (in sequence order, holes dropped), then
 * renumbers objects and threads densely (dmm_trace_compact).  Returns 0 or
 * -1 (memory). */
static int merge(dmm_trace *t, counts *cnt)
{
    uint64_t lim = atomic_load(&g_seq), dropped = 0;
    dmm_trace_op *ops;
    size_t k = 0;
    if (lim > SIZE_MAX / sizeof *ops)
        return -1;
    if (!(ops = calloc(lim ? (size_t)lim : 1, sizeof *ops)))
        return -1;
    for (rthread *th = atomic_load(&g_threads); th; th = th->next)
        for (chunk *c = th->head; c; c = atomic_load_explicit(&c->next, memory_order_acquire)) {
            uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
            for (uint32_t i = 0; i < n; i++) {
                const rec *r = &c->recs[i];
                uint64_t seq = r->seqk & SEQ_MASK;
                dmm_trace_op *o;
                if (seq >= lim)
                    continue;
                o = &ops[seq];
                o->kind = (uint8_t)((r->seqk >> 56) & 0x0fu);
                o->sub = (uint8_t)(r->seqk >> 60);
                o->tid = th->tid;
                o->id = r->id;
                o->size = r->size;
                o->arg = r->arg;
                o->t_ns = r->t_ns;
            }
        }
    /* close the holes (sequence numbers taken by operations still in flight) */
    for (size_t i = 0; i < (size_t)lim; i++)
        if (ops[i].kind != 0)
            ops[k++] = ops[i];
    dmm_trace_init(t);
    t->ops = ops;
    t->n = k;
    t->cap = lim ? (size_t)lim : 1;
    t->has_time = g_time;
    if (dmm_trace_compact(t, &dropped) != 0) {
        dmm_trace_free(t);
        return -1;
    }
    memset(cnt, 0, sizeof *cnt);
    cnt->dropped = dropped;
    for (size_t i = 0; i < t->n; i++)
        cnt->k[t->ops[i].kind]++;
    return 0;
}

/* Appends one line to the DMM_TRACE_SUMMARY file; returns 0 when the whole
 * line is there, -1 when there is no such file or it cannot be written. */
static int append_summary(const char *line)
{
    int fd, rc;
    if (!g_summary[0])
        return -1;
    if ((fd = open(g_summary, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
        return -1;
    rc = put_fd(fd, line);
    if (close(fd) != 0)
        rc = -1;
    return rc;
}

/* A trace was written: its summary line goes to the summary file, and to
 * stderr in verbose mode. */
static void report_written(const char *line)
{
    append_summary(line);
    if (g_verbose)
        put_fd(2, line);
}

/* A trace could not be written.  The line names the path and the cause and
 * ends in "(trace not written)"; it is said once: into the summary file when
 * there is one (whoever set DMM_TRACE_SUMMARY, record.sh, prints it), on
 * stderr when there is none, when the summary file cannot take it (the same
 * full disk), or in verbose mode. */
static void report_failure(const char *line)
{
    if (append_summary(line) != 0 || g_verbose)
        put_fd(2, line);
}

/* Writing past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the
 * process: at exit that would turn "trace not written" into a program killed
 * by a signal.  While the recorder writes, a default disposition is replaced
 * by "ignore", so the write fails with EFBIG instead; a handler or "ignore"
 * the program set is left alone.  Returns 1 when it changed the disposition. */
static int xfsz_ignore(struct sigaction *old)
{
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGXFSZ, NULL, old) != 0 || old->sa_handler != SIG_DFL || (old->sa_flags & SA_SIGINFO))
        return 0;
    return sigaction(SIGXFSZ, &ign, NULL) == 0;
}

/* Writes the trace to path; snapshot = 0 for the final trace, else its number.
 * Must be called with tls.busy set. */
static void write_trace(const char *path, unsigned snapshot)
{
    dmm_trace t;
    counts cnt;
    dmm_trace_error verr;
    char *meta, cmd[1024], when[64], line[OUT_MAX + 1024];
    struct tm tm;
    struct sigaction old_xfsz;
    int valid, saved, xfsz;
    size_t mcap = 4096;
    uint64_t w0 = dmm_port_clock_ns();
    tls.writing = 1;
    dmm_port_spin_lock(&g_write_lock);
    /* from here to the end: the trace, and the summary file, may hit the file
     * size limit */
    xfsz = xfsz_ignore(&old_xfsz);
    if (merge(&t, &cnt)) {
        snprintf(line, sizeof line, "dmmrec: cannot write %s: out of memory merging the records (trace not written)\n",
                 path);
        report_failure(line);
        goto out;
    }
    /* with one thread there is nothing to synchronise: skip the pass */
    if (t.threads > 1 && dmm_trace_add_syncs(&t)) {
        dmm_trace_free(&t);
        snprintf(line, sizeof line, "dmmrec: cannot write %s: out of memory adding syncs (trace not written)\n",
                 path);
        report_failure(line);
        goto out;
    }
    for (size_t i = 0; i < t.n; i++)
        if (t.ops[i].kind == DMM_T_SYNC)
            cnt.k[DMM_T_SYNC]++;
    valid = dmm_trace_validate(&t, &verr) == 0;
    read_cmdline(cmd, sizeof cmd);
    gmtime_r(&g_wall0.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if ((meta = malloc(mcap))) {
        int n = snprintf(meta, mcap,
                         "source=dmmrec\n"
                         "recorder_version=%s\n"
                         "program=%s\n"
                         "pid=%ld\n"
                         "ppid=%ld\n"
                         "start_time=%s\n"
                         "start_unix_ns=%" PRIu64 "\n"
                         "fork_mode=%s\n"
                         "timestamps=%s\n"
                         "threads=%" PRIu32 "\n"
                         "ops=%zu\n"
                         "unknown_frees=%" PRIu64 "\n"
                         "unknown_reallocs=%" PRIu64 "\n"
                         "implicit_frees=%" PRIu64 "\n"
                         "usable_size_calls=%" PRIu64 "\n"
                         "lost_ops=%" PRIu64 "\n"
                         "dropped_ops=%" PRIu64 "\n"
                         "dropped_threads=%" PRIu64 "\n"
                         "validate=%s%s\n",
                         DMMREC_VERSION, cmd, (long)g_pid, (long)getppid(), when,
                         (uint64_t)g_wall0.tv_sec * 1000000000u + (uint64_t)g_wall0.tv_nsec,
                         g_follow ? "follow" : "stop", g_time ? "on" : "off", t.threads, t.n,
                         atomic_load(&g_unknown_free), atomic_load(&g_unknown_realloc),
                         atomic_load(&g_implicit_free), atomic_load(&g_usable_calls),
                         atomic_load(&g_lost), cnt.dropped, atomic_load(&g_dropped_threads),
                         valid ? "ok" : "error: ", valid ? "" : verr.reason);
        if (n > 0 && (size_t)n < mcap && g_forked_from)
            n += snprintf(meta + n, mcap - (size_t)n, "forked_from=%ld\n", (long)g_forked_from);
        if (n > 0 && (size_t)n < mcap && snapshot)
            snprintf(meta + n, mcap - (size_t)n, "snapshot=%u\n", snapshot);
        dmm_trace_set_meta(&t, meta);
        free(meta);
    }
    /* a temporary file beside path, renamed over it only when complete */
    saved = dmm_trace_save(&t, path) == 0;
    if (!saved) {
        snprintf(line, sizeof line, "dmmrec: cannot write %s: %s (trace not written)\n", path, strerror(errno));
        report_failure(line);
    } else {
        snprintf(line, sizeof line,
                 "dmmrec: %s: %zu ops (%" PRIu64 " malloc, %" PRIu64 " calloc, %" PRIu64
                 " realloc, %" PRIu64 " aligned, %" PRIu64 " free, %" PRIu64
                 " sync), %" PRIu32 " threads, pid %ld, written in %.0f ms%s%s: %.200s\n",
                 path, t.n, cnt.k[DMM_T_MALLOC], cnt.k[DMM_T_CALLOC], cnt.k[DMM_T_REALLOC],
                 cnt.k[DMM_T_ALIGNED], cnt.k[DMM_T_FREE], cnt.k[DMM_T_SYNC], t.threads,
                 (long)g_pid, (double)(dmm_port_clock_ns() - w0) / 1e6, snapshot ? ", snapshot" : "",
                 valid ? "" : ", INVALID", cmd);
        report_written(line);
        if (!valid) {
            snprintf(line, sizeof line, "dmmrec: warning: trace %s does not validate at op %" PRIu64 ": %s\n",
                     path, verr.offset, verr.reason);
            put_fd(2, line);
        }
    }
    dmm_trace_free(&t);
out:
    if (xfsz)
        sigaction(SIGXFSZ, &old_xfsz, NULL);
    dmm_port_spin_unlock(&g_write_lock);
    tls.writing = 0;
}

static void maybe_snapshot(void)
{
    if (atomic_exchange(&g_snap_req, 0)) {
        char path[OUT_MAX + 16];
        unsigned n = atomic_fetch_add(&g_snap_no, 1) + 1;
        snprintf(path, sizeof path, "%s.%u", g_out, n);
        write_trace(path, n);
    }
}

__attribute__((destructor)) static void dmmrec_dtor(void)
{
    int expect = ST_ON, busy = tls.busy;
    /* exit() from a signal handler that interrupted our own writing: the
     * write lock is ours, give up rather than deadlock.  (Interrupting any
     * other recorder work is fine: writing needs no other lock, and the
     * interrupted operation is simply not published yet.) */
    if (tls.writing)
        return;
    /* stop recording everywhere, then write what was recorded */
    if (!atomic_compare_exchange_strong(&g_state, &expect, ST_OFF))
        return;
    tls.busy = 1;
    if (!g_out[0])
        set_default_out(); /* the constructor did not run */
    write_trace(g_out, 0);
    tls.busy = busy;
}

/* fork: runs in the child (only the forking thread exists). */
static void atfork_child(void)
{
    rthread *th;
    if (atomic_load(&g_state) != ST_ON)
        return;
    if (!g_follow) {
        atomic_store(&g_state, ST_OFF);
        return;
    }
    tls.busy = 1;
    th = atomic_load(&g_threads);
    while (th) {
        rthread *nx = th->next;
        chunk *c = atomic_load(&th->head->next);
        while (c) {
            chunk *cn = atomic_load(&c->next);
            dmm_port_pages_unmap(c, c->bytes);
            c = cn;
        }
        dmm_port_pages_unmap(th, th->head->bytes);
        th = nx;
    }
    atomic_store(&g_threads, NULL);
    atomic_store(&g_ntids, 0);
    atomic_store(&g_seq, 0);
    map_reset();
    atomic_store(&g_unknown_free, 0);
    atomic_store(&g_unknown_realloc, 0);
    atomic_store(&g_implicit_free, 0);
    atomic_store(&g_usable_calls, 0);
    atomic_store(&g_lost, 0);
    atomic_store(&g_dropped_threads, 0);
    atomic_store(&g_snap_req, 0);
    atomic_store(&g_snap_no, 0);
    dmm_port_spin_init(&g_write_lock);
    g_forked_from = g_pid;
    g_pid = getpid();
    g_t0 = dmm_port_clock_ns();
    wall_now(&g_wall0);
    if (g_out_base[0])
        snprintf(g_out, sizeof g_out, "%s.%ld", g_out_base, (long)g_pid);
    else
        set_default_out();
    tls.t = NULL;
    tls.norec = 0;
    tls.busy = 0;
}

/* ======================================================================
 * recording an operation
 * ====================================================================== */

/* Enters the recorder; NULL means "pass through, do not record". */
static inline tstate *rec_begin(void)
{
    tstate *ts = &tls;
    int st;
    if (ts->busy)
        return NULL;
    st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (st != ST_ON) {
        if (st != ST_UNINIT)
            return NULL;
        lazy_init();
        if (atomic_load(&g_state) != ST_ON)
            return NULL;
    }
    if (ts->norec)
        return NULL;
    ts->busy = 1;
    if (atomic_load_explicit(&g_snap_req, memory_order_relaxed))
        maybe_snapshot();
    return ts;
}

static inline void rec_end(tstate *ts) { ts->busy = 0; }

/* Records an allocation that already happened.  id is taken from seq. */
static void note_alloc(rthread *t, void *p, unsigned kind, unsigned sub, uint64_t size, uint64_t arg)
{
    uint64_t seq = next_seq(), id = seq + 1, old = 0;
    int r = map_put((uint64_t)(uintptr_t)p, id, &old);
    if (r < 0) {
        atomic_fetch_add_explicit(&g_lost, 1, memory_order_relaxed);
        return;
    }
    if (emit(t, seq, kind, sub, id, size, arg) != 0) {
        map_del((uint64_t)(uintptr_t)p);
        return;
    }
    if (r == 1) {
        /* the address was still mapped: its object was freed behind our back */
        atomic_fetch_add_explicit(&g_implicit_free, 1, memory_order_relaxed);
        emit(t, next_seq(), DMM_T_FREE, 0, old, 0, 0);
    }
}

static void record_alloc(void *p, unsigned kind, unsigned sub, uint64_t size, uint64_t arg)
{
    tstate *ts = rec_begin();
    int e;
    rthread *t;
    if (!ts)
        return;
    e = errno;
    if ((t = get_thread(ts)))
        note_alloc(t, p, kind, sub, size, arg);
    errno = e;
    rec_end(ts);
}

static void do_free(void *p)
{
    int e = errno;
    tstate *ts;
    if (!p)
        return;
    if ((ts = rec_begin())) {
        rthread *t = get_thread(ts);
        if (t) {
            uint64_t id = map_del((uint64_t)(uintptr_t)p);
            if (id)
                emit(t, next_seq(), DMM_T_FREE, 0, id, 0, 0);
            else
                atomic_fetch_add_explicit(&g_unknown_free, 1, memory_order_relaxed);
        }
        rec_end(ts);
    }
    __libc_free(p);
    errno = e;
}

static void *do_realloc(void *p, size_t n)
{
    tstate *ts;
    rthread *t;
    uint64_t id;
    void *q;
    int e;
    if (!p) {
        q = __libc_realloc(NULL, n);
        if (q)
            record_alloc(q, DMM_T_MALLOC, 0, n, 0);
        return q;
    }
    if (!(ts = rec_begin()))
        return __libc_realloc(p, n);
    e = errno;
    if (!(t = get_thread(ts))) {
        rec_end(ts);
        return __libc_realloc(p, n);
    }
    /* take the object out of the map before the real call: once realloc
     * has freed p, another thread may be handed the same address */
    id = map_del((uint64_t)(uintptr_t)p);
    if (n == 0) {
        /* glibc frees p and returns NULL: the object ends here */
        if (id)
            emit(t, next_seq(), DMM_T_REALLOC, 0, id, 0, 0);
        else
            atomic_fetch_add_explicit(&g_unknown_free, 1, memory_order_relaxed);
        rec_end(ts);
        errno = e;
        return __libc_realloc(p, 0);
    }
    rec_end(ts);
    q = __libc_realloc(p, n);
    ts->busy = 1;
    if (!q) {
        int e2 = errno;
        uint64_t old;
        if (id)
            map_put((uint64_t)(uintptr_t)p, id, &old); /* p is still the object */
        errno = e2;
        rec_end(ts);
        return NULL;
    }
    if (id) {
        uint64_t old = 0;
        int r = map_put((uint64_t)(uintptr_t)q, id, &old);
        if (r < 0) {
            atomic_fetch_add_explicit(&g_lost, 1, memory_order_relaxed);
        } else {
            emit(t, next_seq(), DMM_T_REALLOC, 0, id, n, 0);
            if (r == 1) {
                atomic_fetch_add_explicit(&g_implicit_free, 1, memory_order_relaxed);
                emit(t, next_seq(), DMM_T_FREE, 0, old, 0, 0);
            }
        }
    } else {
        /* p was allocated before the recorder saw it: a fresh object */
        atomic_fetch_add_explicit(&g_unknown_realloc, 1, memory_order_relaxed);
        note_alloc(t, q, DMM_T_MALLOC, 0, n, 0);
    }
    errno = e;
    rec_end(ts);
    return q;
}


/* ======================================================================
 * the interposed API
 * ====================================================================== */

API void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    if (p)
        record_alloc(p, DMM_T_MALLOC, 0, n, 0);
    return p;
}

API void *calloc(size_t nmemb, size_t size)
{
    void *p = __libc_calloc(nmemb, size);
    if (p)
        record_alloc(p, DMM_T_CALLOC, 0, (uint64_t)nmemb * size, nmemb);
    return p;
}

API void *realloc(void *p, size_t n) { return do_realloc(p, n); }

API void free(void *p) { do_free(p); }

/* cfree: gone from glibc's headers, still a compat symbol.  free_sized and
 * free_aligned_sized (C23, glibc >= 2.39) are frees with a size hint: the
 * hint is ignored and the object is freed through glibc's free. */
void cfree(void *p);
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);
API void cfree(void *p) { do_free(p); }
API void free_sized(void *p, size_t size)
{
    (void)size;
    do_free(p);
}
API void free_aligned_sized(void *p, size_t align, size_t size)
{
    (void)align;
    (void)size;
    do_free(p);
}

API void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t n;
    if (!dmm_family_mul(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return do_realloc(p, n);
}

API int posix_memalign(void **out, size_t align, size_t size)
{
    int e = errno;
    void *p;
    if (!dmm_family_posix_align_ok(align))
        return EINVAL;
    p = __libc_memalign(align, size);
    errno = e;
    if (!p)
        return ENOMEM;
    record_alloc(p, DMM_T_ALIGNED, DMM_TA_POSIX_MEMALIGN, size, align);
    *out = p;
    return 0;
}

API void *aligned_alloc(size_t align, size_t size)
{
    void *p = __libc_memalign(align, size);
    if (p)
        record_alloc(p, DMM_T_ALIGNED, DMM_TA_ALIGNED_ALLOC, size, dmm_family_norm_align(align));
    return p;
}

API void *memalign(size_t align, size_t size)
{
    void *p = __libc_memalign(align, size);
    if (p)
        record_alloc(p, DMM_T_ALIGNED, DMM_TA_MEMALIGN, size, dmm_family_norm_align(align));
    return p;
}

API void *valloc(size_t size)
{
    void *p = __libc_valloc(size);
    if (p)
        record_alloc(p, DMM_T_ALIGNED, DMM_TA_VALLOC, size, g_page);
    return p;
}

API void *pvalloc(size_t size)
{
    void *p = __libc_pvalloc(size);
    if (p)
        record_alloc(p, DMM_T_ALIGNED, DMM_TA_PVALLOC, size, g_page);
    return p;
}

/* The C library's own malloc_usable_size: the blocks come from
 * __libc_malloc, so only libc can size them.  dlsym(RTLD_NEXT) is not
 * enough: a program linked with another allocator (redis with jemalloc)
 * has that allocator's malloc_usable_size next in line, which would be
 * handed a pointer it never made. */
static void *libc_usable_size(void)
{
    Dl_info di;
    void *h, *sym = NULL, *addr;
    void *(*lm)(size_t) = __libc_malloc;
    memcpy(&addr, &lm, sizeof addr); /* a function's address as data (POSIX) */
    if (dladdr(addr, &di) && di.dli_fname &&
        (h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD))) {
        sym = dlsym(h, "malloc_usable_size");
        dlclose(h);
    }
    return sym;
}

typedef size_t (*usable_fn)(void *);
static usable_fn g_usable;

API size_t malloc_usable_size(void *p)
{
    usable_fn f;
    atomic_fetch_add_explicit(&g_usable_calls, 1, memory_order_relaxed);
    if (!p)
        return 0;
    f = __atomic_load_n(&g_usable, __ATOMIC_ACQUIRE);
    if (!f) {
        int busy = tls.busy;
        void *sym;
        tls.busy = 1; /* dlsym may allocate */
        sym = libc_usable_size();
        tls.busy = busy;
        memcpy(&f, &sym, sizeof f);
        if (f == malloc_usable_size)
            f = NULL;
        if (f)
            __atomic_store_n(&g_usable, f, __ATOMIC_RELEASE);
    }
    if (f)
        return f(p);
    {
        /* fallback: glibc's chunk header (size | flags) just before p */
        size_t h = ((const size_t *)p)[-1], cs = h & ~(size_t)7;
        return (h & 2u) ? cs - 2 * sizeof(size_t) : cs - sizeof(size_t);
    }
}
