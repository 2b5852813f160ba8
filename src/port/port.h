/*
 * src/port/port.h - the only contract between dmmkit's portable core and a
 * platform.  Exactly one implementation is linked:
 *   src/port/posix.c        - Linux/POSIX: mmap pages, pthread mutexes, libc
 *   src/port/freestanding.c - no OS: no pages, no mutex, trap on abort
 * Platform #ifdefs live in src/port/ and nowhere else.
 */
#ifndef DMM_PORT_H
#define DMM_PORT_H

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

/* Called when the error policy is DMM_ON_ERROR_ABORT.  Never returns. */
_Noreturn void dmm_port_abort(void);

/* A failed internal assertion (DMM_ASSERT_LEVEL >= 1): says what failed
 * and where if the platform can, then stops.  Never returns. */
_Noreturn void dmm_port_assert_fail(const char *expr, const char *file, int line);

/* Bulk memory (libc's on hosted ports, byte/word loops when freestanding). */
void dmm_port_memcpy(void *dst, const void *src, size_t n);
void dmm_port_memset(void *dst, int c, size_t n);

/* A pause hint for spin loops (may do nothing). */
void dmm_port_cpu_relax(void);

#endif /* DMM_PORT_H */
