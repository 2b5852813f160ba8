/*
 * dmm/common.h - types shared by every dmmkit component.
 *
 * Everything here is freestanding C11: no libc beyond <stddef.h>,
 * <stdint.h> and <stdbool.h>.
 */
#ifndef DMM_COMMON_H
#define DMM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes returned by init-style calls.  Allocation calls never
 * return a status: they return NULL on failure. */
typedef enum dmm_status {
    DMM_OK = 0,
    DMM_E_NULL,        /* a required pointer argument was NULL */
    DMM_E_TOO_SMALL,   /* the buffer cannot hold the control block and one block */
    DMM_E_CONFIG,      /* the configuration is invalid or inconsistent */
    DMM_E_UNSUPPORTED, /* the port layer lacks a feature the config needs */
    DMM_E_CORRUPT,     /* the integrity checker found a broken invariant */
    DMM_E_RANGE,       /* an argument is out of its documented range */
    DMM_E_OVERLAP      /* a region overlaps one the heap already owns */
} dmm_status;

/* Human-readable name of a status; never NULL. */
const char *dmm_status_str(dmm_status s);

/* Parses a byte count: decimal digits, optionally followed by a binary
 * unit k, m or g (2^10, 2^20, 2^30; either case), which may be followed by
 * "i" and then "b" ("64k", "64KiB", "1MB", "2g").  [s, s+n) need not be
 * NUL-terminated.  Returns 0, or -1 on anything else or on overflow.  The
 * one size grammar of dmmkit: configurations, every tool option and the
 * Python front end accept exactly this. */
int dmm_parse_size(const char *s, size_t n, uint64_t *out);

/* Kinds of misuse the hardening layer detects. */
typedef enum dmm_error_kind {
    DMM_ERR_FOREIGN_POINTER = 1, /* pointer not inside any region of this heap */
    DMM_ERR_MISALIGNED_POINTER,  /* pointer not on the heap's block alignment */
    DMM_ERR_INVALID_POINTER,     /* inside a region but not the start of a live block
                                    (interior pointer or corrupted header) */
    DMM_ERR_DOUBLE_FREE,         /* block is already free */
    DMM_ERR_CANARY,              /* the canary behind a block was overwritten */
    DMM_ERR_POISON,              /* a free block's poison pattern was overwritten
                                    (write after free) */
    DMM_ERR_HEADER,              /* a block header or boundary tag is inconsistent */
    DMM_ERR_FREE_LIST            /* a free-list link was overwritten (use after
                                    free): the block it names is not handed out */
} dmm_error_kind;

/* Which public operation detected the error. */
typedef enum dmm_op {
    DMM_OP_MALLOC = 0,
    DMM_OP_CALLOC,
    DMM_OP_REALLOC,
    DMM_OP_ALIGNED,
    DMM_OP_FREE,
    DMM_OP_USABLE_SIZE,
    DMM_OP_CHECK,
    DMM_OP_P2S,          /* scratchpad heap: global to local (dmm/spm.h) */
    DMM_OP_S2P           /* scratchpad heap: local to global */
} dmm_op;

typedef struct dmm_error {
    dmm_error_kind kind;
    dmm_op op;
    const void *ptr;     /* the pointer handed in, or the corrupted address */
    const char *message; /* static string, never NULL */
} dmm_error;

/* Error callback.  Called with the component's lock held; it must not call
 * back into the same heap. */
typedef void (*dmm_error_fn)(void *ctx, const dmm_error *err);

/* What to do after a detected misuse has been reported. */
typedef enum dmm_error_policy {
    DMM_ON_ERROR_REPORT = 0, /* report, leave the heap untouched, carry on
                                (free does nothing, realloc returns NULL) */
    DMM_ON_ERROR_ABORT       /* report, then stop the program through the port
                                layer's abort (a trap when freestanding) */
} dmm_error_policy;

/* User lock hooks (lock kind DMM_LOCK_USER). */
typedef struct dmm_lock_hooks {
    void (*lock)(void *ctx);
    void (*unlock)(void *ctx);
    void *ctx;
} dmm_lock_hooks;

/* ------------------------------------------------------------------------
 * The allocator interface: one small vtable every dmmkit component (heap,
 * pool, multiheap, spm, the system malloc) can be seen through, so that
 * replayers and benchmarks drive any of them with the same code.
 * Any function pointer except malloc and free may be NULL: callers then
 * fall back (realloc = malloc+copy+free, aligned = refused, usable = 0).
 * ---------------------------------------------------------------------- */
typedef struct dmm_allocator {
    const char *name;
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr);
    void *(*realloc)(void *ctx, void *ptr, size_t size);
    void *(*calloc)(void *ctx, size_t n, size_t size);
    void *(*aligned_alloc)(void *ctx, size_t align, size_t size);
    size_t (*usable_size)(void *ctx, const void *ptr);
} dmm_allocator;

#ifdef __cplusplus
}
#endif
#endif /* DMM_COMMON_H */
