/*
 * bench/malloc/glibc_support/support/test-driver.h - dmmkit's stand-in for
 * glibc's support/test-driver.h: the names a test may use beside the
 * driver (support/test-driver.c).  Not glibc code.
 */
#ifndef DMM_GLIBC_SUPPORT_TEST_DRIVER_H
#define DMM_GLIBC_SUPPORT_TEST_DRIVER_H

#include <stdio.h>

enum {
    EXIT_UNSUPPORTED = 77, /* the test's feature is missing */
    DEFAULT_TIMEOUT = 20,  /* seconds, times $TIMEOUTFACTOR */
};

/* The directory for temporary files ($TMPDIR, else /tmp). */
extern const char *test_dir;
/* How many --verbose (-v) arguments the test was given. */
extern unsigned int test_verbose;
#define verbose_printf(...)                                                        \
    do {                                                                           \
        if (test_verbose > 0)                                                      \
            printf(__VA_ARGS__);                                                   \
    } while (0)

#endif
