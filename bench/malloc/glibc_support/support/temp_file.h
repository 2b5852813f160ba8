/*
 * bench/malloc/glibc_support/support/temp_file.h - dmmkit's stand-in for
 * glibc's support/temp_file.h.  Not glibc code; implemented in
 * ../support.c.
 */
#ifndef DMM_GLIBC_SUPPORT_TEMP_FILE_H
#define DMM_GLIBC_SUPPORT_TEMP_FILE_H

/* Creates a new file named after BASE in test_dir and opens it for
   reading and writing; returns its descriptor (or -1 with errno set) and,
   if FILENAME is not NULL, its name (malloc'd) in *FILENAME.  The file is
   removed when the process that created it exits. */
int create_temp_file(const char *base, char **filename);
/* Removes NAME when the process exits. */
void add_temp_file(const char *name);

#endif
