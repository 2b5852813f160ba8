/*
 * bench/malloc/glibc_support/array_length.h - dmmkit's stand-in for
 * glibc's include/array_length.h: the number of elements of an array
 * (not a pointer).  Not glibc code.
 */
#ifndef DMM_GLIBC_ARRAY_LENGTH_H
#define DMM_GLIBC_ARRAY_LENGTH_H

#define array_length(a) (sizeof(a) / sizeof((a)[0]))
#define array_end(a) (&(a)[array_length(a)])

#endif
