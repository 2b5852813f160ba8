/*
 * tests/recorder/rec_misc.c - small scenarios for the recorder test.
 *
 *   rec_misc fork       allocate 5 x 555 B, fork; the child allocates and
 *                       frees 7 x 777 B, frees one inherited block and calls
 *                       exit() (so destructors run); the parent waits, then
 *                       frees its blocks.  Prints "child=<pid>".
 *   rec_misc exec       fork; the child execs /proc/self/exe execchild.
 *                       Prints "child=<pid>".
 *   rec_misc execchild  allocate and free 9 x 999 B.
 *   rec_misc signal     allocate 3 x 333 B, raise SIGUSR2 (the recorder
 *                       writes a snapshot at the next call), allocate
 *                       4 x 444 B.
 *   rec_misc errno      many allocation calls, each made with errno set to
 *                       a sentinel that must survive every successful call
 *                       and every free; 60000 objects of 1234 B pass through.
 *   rec_misc extras     frees blocks of 4321, 4322 and 4323 B through cfree,
 *                       free_sized and free_aligned_sized (looked up with
 *                       dlsym: glibc 2.36 has only cfree, the recorder has
 *                       all three); prints "found=<n>" (functions found).
 *   rec_misc threads N  start N short-lived threads one after another; each
 *                       allocates and frees one 321-byte block.
 *   rec_misc spin N     allocate and free N small blocks (overhead runs).
 * Exit status 0 on success.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);

static int run_fork(void)
{
    void *keep[5];
    pid_t pid;
    int st;
    for (int i = 0; i < 5; i++)
        keep[i] = malloc(555);
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        for (int i = 0; i < 7; i++) {
            void *p = malloc(777);
            memset(p, 7, 777);
            free(p);
        }
        free(keep[0]); /* inherited: unknown to a following recorder */
        exit(0);
    }
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "rec_misc: child failed\n");
        return 1;
    }
    for (int i = 0; i < 5; i++)
        free(keep[i]);
    printf("child=%ld\n", (long)pid);
    return 0;
}

/* fork and exec rec_misc execchild, in directory dir when given (a script
 * that cd's before running a program) */
static int run_exec(const char *dir)
{
    pid_t pid;
    int st;
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        if (dir && chdir(dir) != 0) {
            perror("chdir");
            _exit(126);
        }
        execl("/proc/self/exe", "rec_misc", "execchild", (char *)NULL);
        perror("exec");
        _exit(127);
    }
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "rec_misc: exec child failed\n");
        return 1;
    }
    printf("child=%ld\n", (long)pid);
    return 0;
}

static int run_execchild(void)
{
    for (int i = 0; i < 9; i++) {
        void *p = malloc(999);
        if (!p)
            return 1;
        free(p);
    }
    return 0;
}

static int run_signal(void)
{
    void *p[7];
    for (int i = 0; i < 3; i++)
        p[i] = malloc(333);
    raise(SIGUSR2);
    for (int i = 3; i < 7; i++)
        p[i] = malloc(444);
    for (int i = 0; i < 7; i++)
        free(p[i]);
    return 0;
}

#define SENTINEL 4242
static int bad;
static void expect_errno(const char *what, int line)
{
    if (errno != SENTINEL) {
        if (bad++ < 10)
            fprintf(stderr, "rec_misc: errno changed to %d by %s (line %d)\n", errno, what, line);
    }
    errno = SENTINEL;
}
#define EXPECT(what) expect_errno(what, __LINE__)

static int run_errno(void)
{
    enum { LIVE = 500, TOTAL = 60000 };
    void *live[LIVE];
    void *u;
    memset(live, 0, sizeof live);
    errno = SENTINEL;
    for (int i = 0; i < TOTAL; i++) {
        int k = i % LIVE;
        if (live[k]) {
            free(live[k]);
            EXPECT("free");
        }
        live[k] = malloc(1234);
        EXPECT("malloc");
        if (!live[k])
            return 1;
    }
    for (int k = 0; k < LIVE; k++) {
        free(live[k]);
        EXPECT("free");
    }
    free(NULL);
    EXPECT("free(NULL)");
    u = __libc_malloc(100); /* unknown to the recorder */
    errno = SENTINEL;
    free(u);
    EXPECT("free(unknown)");
    u = calloc(3, 5);
    EXPECT("calloc");
    u = realloc(u, 100000);
    EXPECT("realloc");
    free(u);
    EXPECT("free after realloc");
    if (posix_memalign(&u, 64, 10) != 0)
        return 1;
    EXPECT("posix_memalign");
    free(u);
    EXPECT("free aligned");
    u = malloc(10);
    EXPECT("malloc");
    {
        void *r = realloc(u, 0); /* frees u; NULL */
        EXPECT("realloc(p, 0)");
        if (r)
            free(r);
    }
    return bad ? 1 : 0;
}

static int run_extras(void)
{
    static const char *names[3] = {"cfree", "free_sized", "free_aligned_sized"};
    int found = 0;
    for (int i = 0; i < 3; i++) {
        void *sym = dlsym(RTLD_DEFAULT, names[i]);
        void *p = i == 2 ? aligned_alloc(64, 4323) : malloc(4321 + (size_t)i);
        if (!p)
            return 1;
        if (!sym) {
            free(p);
            continue;
        }
        found++;
        if (i == 0) {
            void (*f)(void *);
            memcpy(&f, &sym, sizeof f);
            f(p);
        } else if (i == 1) {
            void (*f)(void *, size_t);
            memcpy(&f, &sym, sizeof f);
            f(p, 4322);
        } else {
            void (*f)(void *, size_t, size_t);
            memcpy(&f, &sym, sizeof f);
            f(p, 64, 4323);
        }
    }
    printf("found=%d\n", found);
    return 0;
}

static void *one_block(void *arg)
{
    void *p = malloc(321);
    (void)arg;
    if (!p)
        return (void *)1;
    memset(p, 3, 321);
    free(p);
    return NULL;
}

static int run_threads(long n)
{
    for (long i = 0; i < n; i++) {
        pthread_t t;
        void *ret = NULL;
        if (pthread_create(&t, NULL, one_block, NULL) != 0 || pthread_join(t, &ret) != 0 || ret)
            return 1;
    }
    return 0;
}

static int run_spin(long n)
{
    void *ring[64];
    memset(ring, 0, sizeof ring);
    for (long i = 0; i < n; i++) {
        int k = (int)(i & 63);
        free(ring[k]);
        ring[k] = malloc(16 + (size_t)(i % 200));
        if (!ring[k])
            return 1;
    }
    for (int k = 0; k < 64; k++)
        free(ring[k]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rec_misc fork|exec [DIR]|execchild|signal|errno|extras|threads N|spin N|exit N\n");
        return 2;
    }
    if (!strcmp(argv[1], "fork"))
        return run_fork();
    if (!strcmp(argv[1], "exec"))
        return run_exec(argc > 2 ? argv[2] : NULL);
    if (!strcmp(argv[1], "execchild"))
        return run_execchild();
    if (!strcmp(argv[1], "signal"))
        return run_signal();
    if (!strcmp(argv[1], "errno"))
        return run_errno();
    if (!strcmp(argv[1], "extras"))
        return run_extras();
    if (!strcmp(argv[1], "threads") && argc > 2)
        return run_threads(atol(argv[2]));
    if (!strcmp(argv[1], "spin") && argc > 2)
        return run_spin(atol(argv[2]));
    if (!strcmp(argv[1], "exit") && argc > 2) {
        /* a few hundred operations (a trace of some KB), then exit status N */
        for (int i = 0; i < 200; i++)
            free(malloc((size_t)(16 + i)));
        return atoi(argv[2]);
    }
    fprintf(stderr, "rec_misc: unknown mode '%s'\n", argv[1]);
    return 2;
}
