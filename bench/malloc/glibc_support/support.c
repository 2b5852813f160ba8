/*
 * bench/malloc/glibc_support/support.c - the functions behind dmmkit's
 * stand-in for glibc's test support headers (the headers under support/ here), written
 * from their documented meaning.  Compiled with every glibc test that
 * bench/malloc/glibc_tests.sh builds; not glibc code.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/check.h"
#include "support/support.h"
#include "support/temp_file.h"
#include "support/test-driver.h"
#include "support/xsignal.h"
#include "support/xstdio.h"
#include "support/xthread.h"
#include "support/xunistd.h"

const char *test_dir = "/tmp";
unsigned int test_verbose;

/* The failure count: in a shared mapping once dmm_support_init ran (the
   driver calls it before forking the test), so failures counted in the
   test's own children count too. */
static int local_failures;
static volatile int *failures = &local_failures;

void dmm_support_init(void)
{
    void *p = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED)
        failures = p;
    const char *t = getenv("TMPDIR");
    if (t != NULL && *t != '\0')
        test_dir = t;
}

void support_record_failure(void) { __atomic_add_fetch(failures, 1, __ATOMIC_SEQ_CST); }
int support_record_failure_is_failed(void) { return __atomic_load_n(failures, __ATOMIC_SEQ_CST) != 0; }
void support_record_failure_reset(void) { __atomic_store_n(failures, 0, __ATOMIC_SEQ_CST); }

void dmm_support_print(const char *kind, const char *file, int line, const char *fmt, ...)
{
    int saved = errno; /* a message may use %m */
    fflush(stdout);
    printf("%s: %s:%d: ", kind, file, line);
    va_list ap;
    va_start(ap, fmt);
    errno = saved;
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

void dmm_support_compare_failure(const char *file, int line, const char *lexpr, long long lval,
                                 unsigned long long luval, int lsigned, const char *rexpr,
                                 long long rval, unsigned long long ruval, int rsigned)
{
    char l[64], r[64];
    if (lsigned)
        snprintf(l, sizeof l, "%lld", lval);
    else
        snprintf(l, sizeof l, "%llu", luval);
    if (rsigned)
        snprintf(r, sizeof r, "%lld", rval);
    else
        snprintf(r, sizeof r, "%llu", ruval);
    FAIL("%s == %s: %s is %s (0x%llx), %s is %s (0x%llx)", lexpr, rexpr, lexpr, l, luval, rexpr, r, ruval);
    (void)file;
    (void)line;
}

void oom_error(const char *function, size_t size)
{
    printf("%s: unable to allocate %zu bytes: %s\n", function, size, strerror(errno));
    fflush(NULL);
    exit(1);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL)
        oom_error("malloc", n);
    return p;
}

void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n, s);
    if (p == NULL)
        oom_error("calloc", n * s);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL && n != 0)
        oom_error("realloc", n);
    return q;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (p == NULL)
        oom_error("strdup", strlen(s) + 1);
    return p;
}

/* A shared block keeps its mapping's length in front of the caller's bytes. */
void *support_shared_allocate(size_t size)
{
    size_t total = size + 16;
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL_EXIT1("support_shared_allocate: mmap of %zu bytes: %m", total);
    *(size_t *)p = total;
    return (char *)p + 16;
}

void support_shared_free(void *q)
{
    char *p = (char *)q - 16;
    if (munmap(p, *(size_t *)p) != 0)
        FAIL_EXIT1("support_shared_free: munmap: %m");
}

void write_message(const char *message)
{
    size_t n = strlen(message);
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, message, n);
        if (w <= 0)
            return;
        message += w;
        n -= (size_t)w;
    }
}

/* pthread calls: they return an error number instead of setting errno. */
#define DMM_XPT(call, what)                                                        \
    do {                                                                           \
        int e_ = (call);                                                           \
        if (e_ != 0) {                                                             \
            errno = e_;                                                            \
            FAIL_EXIT1("%s: %m", what);                                            \
        }                                                                          \
    } while (0)

pthread_t xpthread_create(pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    pthread_t t;
    DMM_XPT(pthread_create(&t, attr, fn, arg), "pthread_create");
    return t;
}

void *xpthread_join(pthread_t thr)
{
    void *r;
    DMM_XPT(pthread_join(thr, &r), "pthread_join");
    return r;
}

void xpthread_detach(pthread_t thr) { DMM_XPT(pthread_detach(thr), "pthread_detach"); }
void xpthread_cancel(pthread_t thr) { DMM_XPT(pthread_cancel(thr), "pthread_cancel"); }
void xpthread_kill(pthread_t thr, int sig) { DMM_XPT(pthread_kill(thr, sig), "pthread_kill"); }
void xpthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) { DMM_XPT(pthread_mutex_init(m, a), "pthread_mutex_init"); }
void xpthread_mutex_destroy(pthread_mutex_t *m) { DMM_XPT(pthread_mutex_destroy(m), "pthread_mutex_destroy"); }
void xpthread_mutex_lock(pthread_mutex_t *m) { DMM_XPT(pthread_mutex_lock(m), "pthread_mutex_lock"); }
void xpthread_mutex_unlock(pthread_mutex_t *m) { DMM_XPT(pthread_mutex_unlock(m), "pthread_mutex_unlock"); }
void xpthread_barrier_init(pthread_barrier_t *b, pthread_barrierattr_t *a, unsigned int count)
{
    DMM_XPT(pthread_barrier_init(b, a, count), "pthread_barrier_init");
}
void xpthread_barrier_destroy(pthread_barrier_t *b) { DMM_XPT(pthread_barrier_destroy(b), "pthread_barrier_destroy"); }
int xpthread_barrier_wait(pthread_barrier_t *b)
{
    int r = pthread_barrier_wait(b);
    if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) {
        errno = r;
        FAIL_EXIT1("pthread_barrier_wait: %m");
    }
    return r;
}
void xpthread_barrierattr_init(pthread_barrierattr_t *a) { DMM_XPT(pthread_barrierattr_init(a), "pthread_barrierattr_init"); }
void xpthread_barrierattr_destroy(pthread_barrierattr_t *a) { DMM_XPT(pthread_barrierattr_destroy(a), "pthread_barrierattr_destroy"); }
void xpthread_barrierattr_setpshared(pthread_barrierattr_t *a, int pshared)
{
    DMM_XPT(pthread_barrierattr_setpshared(a, pshared), "pthread_barrierattr_setpshared");
}
void xpthread_attr_init(pthread_attr_t *a) { DMM_XPT(pthread_attr_init(a), "pthread_attr_init"); }
void xpthread_attr_destroy(pthread_attr_t *a) { DMM_XPT(pthread_attr_destroy(a), "pthread_attr_destroy"); }
void xpthread_attr_setstacksize(pthread_attr_t *a, size_t s) { DMM_XPT(pthread_attr_setstacksize(a, s), "pthread_attr_setstacksize"); }
void xpthread_attr_setdetachstate(pthread_attr_t *a, int s) { DMM_XPT(pthread_attr_setdetachstate(a, s), "pthread_attr_setdetachstate"); }
void xpthread_sigmask(int how, const sigset_t *set, sigset_t *old) { DMM_XPT(pthread_sigmask(how, set, old), "pthread_sigmask"); }

pid_t xfork(void)
{
    pid_t p = fork();
    if (p < 0)
        FAIL_EXIT1("fork: %m");
    return p;
}

pid_t xwaitpid(pid_t pid, int *status, int flags)
{
    pid_t r;
    do
        r = waitpid(pid, status, flags);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        FAIL_EXIT1("waitpid: %m");
    return r;
}

void xpipe(int fds[2])
{
    if (pipe(fds) != 0)
        FAIL_EXIT1("pipe: %m");
}

void xclose(int fd)
{
    if (close(fd) != 0 && errno != EINTR)
        FAIL_EXIT1("close (%d): %m", fd);
}

void xwrite(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            FAIL_EXIT1("write of %zu bytes: %m", n);
        p += w;
        n -= (size_t)w;
    }
}

sighandler_t xsignal(int sig, sighandler_t handler)
{
    sighandler_t old = signal(sig, handler);
    if (old == SIG_ERR)
        FAIL_EXIT1("signal (%d): %m", sig);
    return old;
}

void xsigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sigaction(sig, act, old) != 0)
        FAIL_EXIT1("sigaction (%d): %m", sig);
}

void xraise(int sig)
{
    if (raise(sig) != 0)
        FAIL_EXIT1("raise (%d): %m", sig);
}

void xsigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (sigprocmask(how, set, old) != 0)
        FAIL_EXIT1("sigprocmask: %m");
}

FILE *xfopen(const char *path, const char *mode)
{
    FILE *f = fopen(path, mode);
    if (f == NULL)
        FAIL_EXIT1("fopen (\"%s\", \"%s\"): %m", path, mode);
    return f;
}

void xfclose(FILE *f)
{
    if (fclose(f) != 0)
        FAIL_EXIT1("fclose: %m");
}

/* Temporary files: removed at exit by the process that registered them
   (not by its forked children). */
#define DMM_MAX_TEMP 64
static char *temp_names[DMM_MAX_TEMP];
static int temp_count;
static pid_t temp_owner;

static void remove_temp_files(void)
{
    if (getpid() != temp_owner)
        return;
    for (int i = 0; i < temp_count; i++)
        unlink(temp_names[i]);
}

void add_temp_file(const char *name)
{
    if (temp_count == DMM_MAX_TEMP)
        FAIL_EXIT1("add_temp_file: more than %d files", DMM_MAX_TEMP);
    if (temp_count == 0) {
        temp_owner = getpid();
        atexit(remove_temp_files);
    }
    temp_names[temp_count++] = xstrdup(name);
}

int create_temp_file(const char *base, char **filename)
{
    size_t n = strlen(test_dir) + strlen(base) + 16;
    char *name = xmalloc(n);
    snprintf(name, n, "%s/%sXXXXXX", test_dir, base);
    int fd = mkstemp(name);
    if (fd < 0) {
        int e = errno;
        free(name);
        errno = e;
        return -1;
    }
    add_temp_file(name);
    if (filename != NULL)
        *filename = name;
    else
        free(name);
    return fd;
}
