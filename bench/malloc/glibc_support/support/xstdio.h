/*
 * bench/malloc/glibc_support/support/xstdio.h - dmmkit's stand-in for
 * glibc's support/xstdio.h.  Not glibc code; implemented in ../support.c.
 */
#ifndef DMM_GLIBC_SUPPORT_XSTDIO_H
#define DMM_GLIBC_SUPPORT_XSTDIO_H

#include <stdio.h>

FILE *xfopen(const char *path, const char *mode);
void xfclose(FILE *f);

#endif
