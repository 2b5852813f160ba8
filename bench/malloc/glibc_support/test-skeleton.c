/*
 * bench/malloc/glibc_support/test-skeleton.c - dmmkit's stand-in for
 * glibc's older test-skeleton.c, which tests include as
 * "../test-skeleton.c" after defining TEST_FUNCTION (an expression such as
 * do_test ()): the same driver as support/test-driver.c, plus the headers
 * the older tests rely on it for.  Not glibc code.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <support/check.h>
#include <support/support.h>
#include <support/temp_file.h>
#include <support/test-driver.c>
