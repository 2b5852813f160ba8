/*
 * bench/malloc/glibc_support/support/check.h - dmmkit's stand-in for the
 * checking macros of glibc's test driver (support/check.h), written from
 * their documented meaning so glibc's malloc tests build outside glibc
 * (bench/malloc/glibc_tests.sh).  Not glibc code.
 *
 * A failed check prints "error: FILE:LINE: ..." on stdout; the non-exiting
 * ones record the failure, which turns the test's exit status into 1 when
 * it ends (the record lives in memory shared with forked children).
 */
#ifndef DMM_GLIBC_SUPPORT_CHECK_H
#define DMM_GLIBC_SUPPORT_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counts a failure; the test ends with status 1 if any was counted. */
void support_record_failure(void);
/* Nonzero once a failure was counted. */
int support_record_failure_is_failed(void);
void support_record_failure_reset(void);
/* Prints "error: FILE:LINE: " and the message; returns nothing useful. */
void dmm_support_print(const char *kind, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A failure: reported and counted, the test goes on. */
#define FAIL(...) \
    (dmm_support_print("error", __FILE__, __LINE__, __VA_ARGS__), support_record_failure())
/* A failure: reported and counted, the calling function returns. */
#define FAIL_RET(...) \
    do { FAIL(__VA_ARGS__); return; } while (0)
/* A failure that ends the test with the given exit status. */
#define FAIL_EXIT(status, ...) \
    do { dmm_support_print("error", __FILE__, __LINE__, __VA_ARGS__); fflush(NULL); exit(status); } while (0)
#define FAIL_EXIT1(...) FAIL_EXIT(1, __VA_ARGS__)
/* The feature under test is missing: the test ends as unsupported (77). */
#define FAIL_UNSUPPORTED(...) \
    do { dmm_support_print("warning", __FILE__, __LINE__, __VA_ARGS__); fflush(NULL); exit(77); } while (0)

/* EXPR must hold; a failure is counted and the test goes on. */
#define TEST_VERIFY(expr)                                                          \
    do {                                                                           \
        if (!(expr))                                                               \
            FAIL("not true: %s", #expr);                                           \
    } while (0)
/* EXPR must hold, or the test ends with status 1. */
#define TEST_VERIFY_EXIT(expr)                                                     \
    do {                                                                           \
        if (!(expr))                                                               \
            FAIL_EXIT1("not true: %s", #expr);                                     \
    } while (0)

void dmm_support_compare_failure(const char *file, int line, const char *lexpr, long long lval,
                                 unsigned long long luval, int lsigned, const char *rexpr,
                                 long long rval, unsigned long long ruval, int rsigned);
#define DMM_IS_SIGNED(x) ((__typeof__(x))-1 < (__typeof__(x))0)
/* Two integer expressions must be equal (compared as values, sign included). */
#define TEST_COMPARE(left, right)                                                  \
    do {                                                                           \
        __typeof__(left) dmm_l_ = (left);                                          \
        __typeof__(right) dmm_r_ = (right);                                        \
        int dmm_ls_ = DMM_IS_SIGNED(dmm_l_), dmm_rs_ = DMM_IS_SIGNED(dmm_r_);      \
        int dmm_eq_;                                                               \
        if (dmm_ls_ && (long long)dmm_l_ < 0)                                      \
            dmm_eq_ = dmm_rs_ && (long long)dmm_r_ == (long long)dmm_l_;           \
        else if (dmm_rs_ && (long long)dmm_r_ < 0)                                 \
            dmm_eq_ = 0;                                                           \
        else                                                                       \
            dmm_eq_ = (unsigned long long)dmm_l_ == (unsigned long long)dmm_r_;    \
        if (!dmm_eq_)                                                              \
            dmm_support_compare_failure(__FILE__, __LINE__, #left, (long long)dmm_l_, \
                                        (unsigned long long)dmm_l_, dmm_ls_, #right, \
                                        (long long)dmm_r_, (unsigned long long)dmm_r_, \
                                        dmm_rs_);                                  \
    } while (0)

/* Two byte ranges must be the same length and content. */
#define TEST_COMPARE_BLOB(l, llen, r, rlen)                                        \
    do {                                                                           \
        size_t dmm_ll_ = (llen), dmm_rl_ = (rlen);                                 \
        if (dmm_ll_ != dmm_rl_ || (dmm_ll_ && memcmp((l), (r), dmm_ll_) != 0))     \
            FAIL("blobs differ: %s (%zu bytes) and %s (%zu bytes)", #l, dmm_ll_, #r, dmm_rl_); \
    } while (0)
/* Two strings (NULL allowed) must be equal. */
#define TEST_COMPARE_STRING(l, r)                                                  \
    do {                                                                           \
        const char *dmm_ls_ = (l), *dmm_rs_ = (r);                                 \
        if ((dmm_ls_ == NULL) != (dmm_rs_ == NULL)                                 \
            || (dmm_ls_ != NULL && strcmp(dmm_ls_, dmm_rs_) != 0))                  \
            FAIL("strings differ: %s is \"%s\", %s is \"%s\"", #l,                 \
                 dmm_ls_ ? dmm_ls_ : "(null)", #r, dmm_rs_ ? dmm_rs_ : "(null)");  \
    } while (0)

#endif
