/*
 * tools/common/tcommon.h - small helpers shared by the native tools
 * (dmm-replay, dmm-analyse, dmm-trace): a streaming JSON writer, machine and
 * build descriptions, output files that appear only when complete, trace
 * error printing.  Hosted code (POSIX/GNU); not part of the library.
 */
#ifndef DMM_TOOLS_COMMON_H
#define DMM_TOOLS_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dmm/trace.h"

/* ---- JSON writer ----------------------------------------------------------
 * Writes one JSON document to a FILE, two-space indented.  Every value call
 * takes the member key (NULL inside arrays and for the top-level value).
 * Arrays opened with tj_arr_compact() keep their elements on one line. */
#define TJ_MAX_DEPTH 32

typedef struct tj {
    FILE *f;
    int depth;
    int count[TJ_MAX_DEPTH];   /* elements written at each level */
    int compact[TJ_MAX_DEPTH]; /* level prints on one line */
} tj;

void tj_init(tj *j, FILE *f);
void tj_obj(tj *j, const char *key);
void tj_obj_end(tj *j);
void tj_arr(tj *j, const char *key);
void tj_arr_compact(tj *j, const char *key);
void tj_arr_end(tj *j);
void tj_str(tj *j, const char *key, const char *v); /* NULL -> null */
void tj_u64(tj *j, const char *key, uint64_t v);
void tj_i64(tj *j, const char *key, int64_t v);
void tj_dbl(tj *j, const char *key, double v);      /* NaN/inf -> null */
void tj_bool(tj *j, const char *key, int v);
void tj_null(tj *j, const char *key);
/* Writes text verbatim as the value (it must be valid JSON). */
void tj_raw(tj *j, const char *key, const char *text);
/* Finishes the document (newline).  Returns 0, or -1 on a write error. */
int tj_finish(tj *j);

/* "machine": hostname, cpu model, cores, kernel. */
void tc_json_machine(tj *j, const char *key);
/* "build": compiler, flags, build type, commit (env DMM_COMMIT first, then
 * the configure-time git commit). */
void tc_json_build(tj *j, const char *key);
/* The commit string used by tc_json_build ("unknown" when none). */
const char *tc_commit(void);
/* CPU model name from /proc/cpuinfo ("unknown" when absent). */
const char *tc_cpu_model(void);

/* ---- output files ------------------------------------------------------------
 * Every file a tool writes goes to a temporary file beside the destination
 * and is renamed over it only when everything was written: a full disk, a
 * size limit or a crash leaves the old file (or none), never a partial one.
 * "-" means standard output (written directly). */
typedef struct tc_out {
    FILE *f;
    const char *path; /* as given */
    char *tmp;        /* temporary file (NULL: stdout, or a path that is not a regular file such as
                       * /dev/null or a FIFO, written in place) */
} tc_out;

/* Opens the temporary file.  Returns 0, or -1 after printing
 * "<prog>: cannot write <path>: <reason>". */
int tc_out_open(tc_out *o, const char *prog, const char *path);
/* ok: flush, close and rename into place; !ok: discard.  Returns 0, or -1
 * after printing the reason (a write error, ENOSPC, EFBIG, ...). */
int tc_out_close(tc_out *o, const char *prog, int ok);

/* ---- misc ------------------------------------------------------------------ */
/* Sizes: dmm_parse_size (dmm/common.h), the one size grammar. */
/* Parses a decimal or 0x-hex unsigned number; 0 or -1. */
int tc_parse_u64(const char *s, uint64_t *out);

/* 64-bit mixer (splitmix64 finaliser). */
static inline uint64_t tc_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Prints "<prog>: <file>: offset N: reason" or "... line N: reason". */
void tc_print_trace_error(const char *prog, const char *file, const dmm_trace_error *e);

/* Loads a trace (any format dmm_trace_load reads).  On failure prints the
 * error as above and returns -1. */
int tc_load_trace(const char *prog, const char *path, dmm_trace *t);

/* Name of an operation kind ("malloc", ..., "sync"); "?" if unknown. */
const char *tc_kind_name(unsigned kind);

/* Monotonic clock in nanoseconds. */
uint64_t tc_now_ns(void);

#endif
