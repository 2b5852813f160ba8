/*
 * bench/malloc/glibc_support/support/support.h - dmmkit's stand-in for
 * glibc's support/support.h: allocation helpers that end the test on
 * failure, and memory shared with forked children.  Not glibc code;
 * implemented in ../support.c.
 */
#ifndef DMM_GLIBC_SUPPORT_SUPPORT_H
#define DMM_GLIBC_SUPPORT_SUPPORT_H

#include <stddef.h>

/* malloc, calloc, realloc, strdup that end the test (status 1) when they fail. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t s);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Reports an allocation failure and ends the test with status 1. */
void oom_error(const char *function, size_t size) __attribute__((noreturn));
/* Zeroed memory shared (MAP_SHARED) with the processes forked after it. */
void *support_shared_allocate(size_t size);
void support_shared_free(void *p);
/* Writes a string to stdout with write(2) (safe in a signal handler). */
void write_message(const char *message);

#endif
