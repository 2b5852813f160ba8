/*
 * bench/malloc/glibc_support/libc-diag.h - dmmkit's stand-in for glibc's
 * include/libc-diag.h: push, pop and ignore a compiler warning around code
 * that provokes it on purpose (a huge size, a use after free).  The version
 * argument (the compiler version that needs it) is not checked: the warning
 * is ignored on every GCC and Clang.  Not glibc code.
 */
#ifndef DMM_GLIBC_LIBC_DIAG_H
#define DMM_GLIBC_LIBC_DIAG_H

#define DMM_DIAG_PRAGMA(x) _Pragma(#x)
#define DIAG_PUSH_NEEDS_COMMENT DMM_DIAG_PRAGMA(GCC diagnostic push)
#define DIAG_POP_NEEDS_COMMENT DMM_DIAG_PRAGMA(GCC diagnostic pop)
#define DIAG_IGNORE_NEEDS_COMMENT(version, option) DMM_DIAG_PRAGMA(GCC diagnostic ignored option)
#define DIAG_PUSH_NEEDS_COMMENT_CLANG DIAG_PUSH_NEEDS_COMMENT
#define DIAG_POP_NEEDS_COMMENT_CLANG DIAG_POP_NEEDS_COMMENT
#define DIAG_IGNORE_NEEDS_COMMENT_CLANG(version, option) DIAG_IGNORE_NEEDS_COMMENT(version, option)
#define DIAG_IGNORE_Os_NEEDS_COMMENT(version, option) DIAG_IGNORE_NEEDS_COMMENT(version, option)

#endif
