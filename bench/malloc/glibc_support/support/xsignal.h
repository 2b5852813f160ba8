/*
 * bench/malloc/glibc_support/support/xsignal.h - dmmkit's stand-in for
 * glibc's support/xsignal.h: signal calls that end the test (status 1)
 * when they fail.  Not glibc code; implemented in ../support.c.
 */
#ifndef DMM_GLIBC_SUPPORT_XSIGNAL_H
#define DMM_GLIBC_SUPPORT_XSIGNAL_H

#include <signal.h>

/* signal(2); returns the previous handler. */
sighandler_t xsignal(int sig, sighandler_t handler);
void xsigaction(int sig, const struct sigaction *act, struct sigaction *old);
void xraise(int sig);
void xsigprocmask(int how, const sigset_t *set, sigset_t *old);

#endif
