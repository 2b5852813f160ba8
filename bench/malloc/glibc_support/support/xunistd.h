/*
 * bench/malloc/glibc_support/support/xunistd.h - dmmkit's stand-in for
 * glibc's support/xunistd.h: process and file calls that end the test
 * (status 1) when they fail.  Not glibc code; implemented in ../support.c.
 */
#ifndef DMM_GLIBC_SUPPORT_XUNISTD_H
#define DMM_GLIBC_SUPPORT_XUNISTD_H

#include <sys/types.h>
#include <unistd.h>

pid_t xfork(void);
pid_t xwaitpid(pid_t pid, int *status, int flags);
void xpipe(int fds[2]);
void xclose(int fd);
void xwrite(int fd, const void *buf, size_t n);

#endif
