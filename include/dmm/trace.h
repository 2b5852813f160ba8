/*
 * dmm/trace.h - allocation traces: the in-memory form, the versioned binary
 * and text files (docs/trace-format.md), importers, and the transforms the
 * tools need.  Hosted only (uses stdio and malloc); not part of the
 * freestanding core.
 *
 * A trace is a sequence of operations in one global order.  Operations name
 * objects by id, never by address, so a trace replays on any allocator.
 * Every operation carries the thread that issued it; where an object made or
 * last touched by one thread is freed or resized by another, a SYNC
 * operation in the second thread's stream says which operation of the first
 * thread must have happened before (dmm_trace_add_syncs derives them).
 */
#ifndef DMM_TRACE_H
#define DMM_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DMM_TRACE_VERSION 1u
#define DMM_TRACE_MAX_THREADS 65536u /* readers refuse thread ids at or above this */

typedef enum dmm_trace_op_kind {
    DMM_T_MALLOC = 1,  /* id size */
    DMM_T_CALLOC,      /* id size (= nmemb * size), arg = nmemb */
    DMM_T_REALLOC,     /* id size: resize object id (same id afterwards) */
    DMM_T_ALIGNED,     /* id size, arg = alignment, sub = which API */
    DMM_T_FREE,        /* id */
    DMM_T_SYNC         /* wait until thread `arg` has done `size` operations */
} dmm_trace_op_kind;

/* Which aligned API an ALIGNED operation came from. */
typedef enum dmm_trace_aligned_api {
    DMM_TA_POSIX_MEMALIGN = 0,
    DMM_TA_ALIGNED_ALLOC,
    DMM_TA_MEMALIGN,
    DMM_TA_VALLOC,
    DMM_TA_PVALLOC
} dmm_trace_aligned_api;

typedef struct dmm_trace_op {
    uint8_t kind;    /* dmm_trace_op_kind */
    uint8_t sub;     /* ALIGNED: dmm_trace_aligned_api */
    uint16_t pad;
    uint32_t tid;    /* thread index, 0-based; dense after any reader */
    uint64_t id;     /* object id (unused for SYNC) */
    uint64_t size;   /* bytes; SYNC: operation count of thread `arg` */
    uint64_t arg;    /* CALLOC nmemb, ALIGNED alignment, SYNC thread */
    uint64_t t_ns;   /* timestamp, ns since trace start (0 if absent) */
} dmm_trace_op;

typedef struct dmm_trace {
    dmm_trace_op *ops;
    size_t n, cap;
    uint32_t threads;    /* max tid + 1 */
    int has_time;        /* timestamps meaningful */
    char *meta;          /* NUL-terminated "key=value\n" lines, may be NULL */
} dmm_trace;

/* Error from readers: offset (byte in a binary file, line in a text file)
 * and a static or internal reason. */
typedef struct dmm_trace_error {
    uint64_t offset;
    int is_line;         /* offset is a 1-based line number */
    char reason[160];
} dmm_trace_error;

void dmm_trace_init(dmm_trace *t);
void dmm_trace_free(dmm_trace *t);
/* Appends an operation; returns 0, or -1 when out of memory. */
int dmm_trace_push(dmm_trace *t, const dmm_trace_op *op);
/* Sets (replaces) metadata text. */
int dmm_trace_set_meta(dmm_trace *t, const char *meta);

/* Removes SYNC operations, then inserts one before every operation whose
 * object was last touched by another thread.  Returns 0 or -1 (memory). */
int dmm_trace_add_syncs(dmm_trace *t);

/* Do the trace's SYNCs order every cross-thread use of an object?  True
 * when each operation on an object last touched by another thread follows
 * (in its own thread) a SYNC covering that touch: direct synchronisation,
 * which is what dmm_trace_add_syncs produces.  The one rule the replayer
 * and the analyser apply.  Returns 1 yes, 0 no, -1 out of memory. */
int dmm_trace_syncs_cover(const dmm_trace *t);

/* Renumbers threads densely (0, 1, ... in increasing order of the old ids)
 * and SYNC arguments with them; a SYNC naming a thread that has no
 * operations gets an argument no thread has (validation refuses it).  Every
 * reader applies it, so a trace whose only thread is 65535 has one thread.
 * Returns 0 or -1 (memory). */
int dmm_trace_compact_threads(dmm_trace *t);

/* What the trace itself determines, from one pass in trace order: the one
 * definition of live bytes and of object incarnations every tool uses. */
typedef struct dmm_trace_summary {
    uint64_t ops;            /* non-SYNC operations */
    uint64_t syncs;
    uint64_t kind_count[DMM_T_SYNC + 1];
    uint64_t objects;        /* object incarnations (allocation .. free) */
    uint64_t peak_live;      /* peak live requested bytes */
    uint64_t peak_objects;   /* peak live objects */
    uint64_t peak_index;     /* trace index of the op that first reached peak_live */
    uint64_t total_requested;/* bytes asked for by allocations and growing reallocs */
    uint64_t max_request;    /* largest single request */
    uint64_t impossible;     /* requests that would take live bytes past
                                PTRDIFF_MAX: no allocator can grant them, so
                                they add no live bytes (a replay counts
                                them as failed) */
    uint64_t end_live;       /* live requested bytes after the last operation */
    uint64_t end_objects;
} dmm_trace_summary;

/* Fills *s.  When slot is not NULL it must hold t->n entries: slot[i] is
 * the object incarnation (0 .. objects-1, in order of allocation) that
 * operation i acts on (UINT64_MAX for SYNC).  Sizes are per-incarnation:
 * a realloc keeps its incarnation, realloc to 0 ends it.  The trace must
 * have passed dmm_trace_validate.  Returns 0, or -1 with *err. */
int dmm_trace_summarize(const dmm_trace *t, dmm_trace_summary *s, uint64_t *slot, dmm_trace_error *err);

/* Checks object discipline: ids allocated before use, not freed twice, not
 * allocated while live, SYNCs refer to existing thread operations.  Returns
 * 0, or -1 with *err describing the first violation (offset = op index). */
int dmm_trace_validate(const dmm_trace *t, dmm_trace_error *err);

/* Binary form.  Readers never crash or hang on malformed input: they return
 * -1 with *err naming the offset and reason. */
int dmm_trace_write_binary(const dmm_trace *t, FILE *f);
int dmm_trace_read_binary(dmm_trace *t, const uint8_t *data, size_t len, dmm_trace_error *err);

/* Text form (docs/trace-format.md). */
int dmm_trace_write_text(const dmm_trace *t, FILE *f);
int dmm_trace_read_text(dmm_trace *t, const char *text, size_t len, dmm_trace_error *err);

/* Importers: CS:APP malloc-lab .rep, glibc mtrace() output.  In .rep,
 * "f -1" (free of NULL) is a no-op and is dropped (meta rep_free_null=N
 * counts them); "r ID SIZE" on an id that is not live is realloc(NULL),
 * i.e. an allocation (meta rep_realloc_null=N). */
int dmm_trace_import_rep(dmm_trace *t, const char *text, size_t len, dmm_trace_error *err);
int dmm_trace_import_mtrace(dmm_trace *t, const char *text, size_t len, dmm_trace_error *err);

/* Loads any supported file, choosing the reader by content (binary magic,
 * text header, .rep, mtrace).  Returns 0 or -1 with *err. */
int dmm_trace_load(dmm_trace *t, const char *path, dmm_trace_error *err);
/* Saves binary unless path ends in ".txt", safe against partial files:
 * writes a new temporary file beside path (PATH.tmp.<pid>.<n>) and renames
 * it over path only after every byte was written and the file closed.
 * Returns 0, or -1 with errno set to the cause (ENOSPC, EFBIG, EACCES,
 * ENOENT, ...); then the temporary file is removed and path is left as it
 * was (absent, or its previous contents).  The caller decides what to do
 * about SIGXFSZ (a process over RLIMIT_FSIZE is killed by it unless it is
 * ignored or handled; then the write fails with EFBIG). */
int dmm_trace_save(const dmm_trace *t, const char *path);

/* Renumbers a trace collected by its producer's own numbering (addresses,
 * sequence numbers, OS thread ids): object ids become 1, 2, 3 ... in
 * allocation order (every MALLOC/CALLOC/ALIGNED starts a new object; a FREE
 * or a REALLOC to size 0 ends it), thread indices 0, 1, 2 ... in order of
 * each thread's first kept operation, and t->threads is set.  Dropped (and
 * counted in *dropped, which may be NULL): REALLOC and FREE of an id that is
 * not live, operations of an unknown kind, and operations of threads beyond
 * the first DMM_TRACE_MAX_THREADS.  SYNC operations are removed without
 * being counted (their thread and count would be stale: run
 * dmm_trace_add_syncs afterwards).  Returns 0, or -1 with errno = ENOMEM;
 * then the operations are in an unspecified (but freeable) state. */
int dmm_trace_compact(dmm_trace *t, uint64_t *dropped);

/* 64-bit FNV-1a of the canonical binary encoding (identifies a trace). */
uint64_t dmm_trace_hash(const dmm_trace *t);

/* The seed-001 transform: keep allocation order and sizes, redraw each
 * object's free point uniformly between its allocation (or last realloc)
 * and the end; realloc chains stay one object.  Single-threaded result. */
int dmm_trace_randomize_frees(const dmm_trace *in, dmm_trace *out, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
