/*
 * src/port/posix_dl.c - the dynamic linker's part of the hosted port, linked
 * only into libdmm.so (src/malloc/CMakeLists.txt): the next definition of a
 * symbol, for the C library functions libdmm.so exports in front of the C
 * library's own (src/malloc/preload_mem.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>

#include "port.h"

/* dlsym runs an IFUNC's resolver, so the address is that of the variant
 * the C library chose for this processor. */
void *dmm_port_next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }
