/*
 * tests/malloc/preload_guard.c - run with libdmm.so preloaded (ctest
 * malloc_preload_guard_secure with DMM_SECURE=1, malloc_preload_guard_default
 * without): secure mode's guarded memcpy, memmove and memset and its checked
 * C++ sized delete (docs/malloc.md, "Secure mode").
 *
 *   preload_guard secure   every misuse below must stop its child process
 *                          with SIGABRT and libdmm's report on stderr;
 *                          every copy inside bounds must pass and copy
 *   preload_guard default  the same in-bounds copies pass; the misuses are
 *                          not looked at (the child returns normally): the
 *                          default mode is unchanged
 *
 * Each case runs in a child (fork).  The copies go through a volatile
 * function pointer, so the compiler emits real calls to the exported
 * functions (as mimalloc-bench's noinline wrapper does).  Exit 0 when every
 * check holds, else 1 with a line per failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *(*volatile cp)(void *, const void *, size_t) = memcpy;
static void *(*volatile mv)(void *, const void *, size_t) = memmove;
static void *(*volatile st)(void *, int, size_t) = memset;

static int failed, secure;
static unsigned char src[(256u << 10) + 64u];

/* The sizes of mimalloc-bench's small, medium and large cases. */
static const size_t sizes[] = {8u, 4096u, 256u << 10};

/* Runs fn(arg) in a child with stderr captured: misuse = true expects
 * SIGABRT and "libdmm: " plus want on stderr in secure mode, a normal exit
 * (0) in the default mode; misuse = false expects exit 0 in both. */
static void run(const char *name, void (*fn)(size_t), size_t arg, int misuse, const char *want)
{
    int fd[2], status;
    char buf[4096];
    ssize_t len, got = 0;
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0) {
        perror("pipe");
        exit(1);
    }
    pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        fn(arg);
        _exit(0);
    }
    close(fd[1]);
    while (got < (ssize_t)sizeof buf - 1 && (len = read(fd[0], buf + got, sizeof buf - 1u - (size_t)got)) > 0)
        got += len;
    buf[got] = '\0';
    close(fd[0]);
    waitpid(pid, &status, 0);
    if (misuse && secure) {
        char line[256];
        snprintf(line, sizeof line, "libdmm: %s", want);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || !strstr(buf, line)) {
            fprintf(stderr, "preload_guard: %s (size %zu): expected an abort with \"%s\", got status 0x%x, stderr: %s\n",
                    name, arg, line, status, buf);
            failed = 1;
        }
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(buf, "libdmm: ")) {
        fprintf(stderr, "preload_guard: %s (size %zu): expected a normal exit, got status 0x%x, stderr: %s\n", name,
                arg, status, buf);
        failed = 1;
    }
}

static unsigned char *block(size_t n)
{
    unsigned char *p = malloc(n);
    if (!p)
        _exit(3);
    return p;
}

/* misuses */
static void over1(size_t n) { cp(block(n), src, n + 1u); }
static void over32(size_t n) { cp(block(n), src, n + 32u); }
static void under1(size_t n) { cp(block(n) - 1, src, n); }
static void under32(size_t n) { cp(block(n) - 32, src, n); }
static void move_over(size_t n) { mv(block(n), src, n + 1u); }
static void set_over(size_t n) { st(block(n), 'x', n + 1u); }
static void set_under(size_t n) { st(block(n) - 1, 'x', 1u); }

static void set_after_free(size_t n)
{
    unsigned char *p = block(n);
    free(p);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wuse-after-free"
    st(p, 'A', n); /* the misuse under test */
#pragma GCC diagnostic pop
}

/* in bounds: copies land, then the block is freed (secure mode checks it) */
static void inside(size_t n)
{
    unsigned char *p = block(n), *q = block(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 7u + 1u);
    cp(p, src, n);
    if (memcmp(p, src, n) != 0)
        _exit(4);
    cp(p + 1, src, n - 1u);
    cp(p + n - 1u, src, 1u);
    mv(p + 1, p, n - 1u);
    st(q, 0x5a, n);
    cp(q + n / 2u, p, n - n / 2u);
    if (q[0] != 0x5a || q[n / 2u] != p[0])
        _exit(5);
    cp(p, src, 0);
    free(p);
    free(q);
}

/* memcpy of 16..4096 bytes between blocks and into stack memory, then
 * realloc growing a block step by step (libdmm's own copies) */
static void busy(size_t n)
{
    unsigned char stack[4096], *p = NULL;
    (void)n;
    for (size_t k = 16; k <= 4096; k += 16) {
        unsigned char *a = block(k), *b = block(k);
        st(a, (int)k, k);
        cp(b, a, k);
        cp(stack, b, k);
        if (stack[k - 1u] != (unsigned char)k)
            _exit(6);
        free(a);
        free(b);
    }
    for (size_t k = 1; k <= (512u << 10); k = k * 3u / 2u + 1u) {
        unsigned char *q = realloc(p, k);
        if (!q)
            _exit(7);
        p = q;
        st(p, 1, k);
    }
    free(p);
}

/* C++'s sized delete (libdmm's _Znwm/_ZdlPvm, found at run time) */
static void *(*cxx_new)(size_t);
static void (*cxx_delete)(void *, size_t);

static void delete_bigger(size_t n) { cxx_delete(cxx_new(n), 72u * n); }
static void delete_smaller(size_t n) { cxx_delete(cxx_new(n), 1u); }
static void delete_right(size_t n) { cxx_delete(cxx_new(n), n); }

int main(int argc, char **argv)
{
    void *sym;
    if (argc != 2 || (strcmp(argv[1], "secure") != 0 && strcmp(argv[1], "default") != 0)) {
        fprintf(stderr, "usage: preload_guard secure|default (with libdmm.so preloaded)\n");
        return 2;
    }
    secure = strcmp(argv[1], "secure") == 0;
    if (!dlsym(RTLD_DEFAULT, "dmm_malloc")) {
        fprintf(stderr, "preload_guard: libdmm is not preloaded\n");
        return 1;
    }
    sym = dlsym(RTLD_DEFAULT, "_Znwm");
    memcpy(&cxx_new, &sym, sizeof sym);
    sym = dlsym(RTLD_DEFAULT, "_ZdlPvm");
    memcpy(&cxx_delete, &sym, sizeof sym);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        run("in bounds", inside, n, 0, NULL);
        run("memcpy 1 byte past the end", over1, n, 1, "copy past the end of");
        run("memcpy 32 bytes past the end", over32, n, 1, "copy past the end of");
        run("memcpy from 1 byte before the start", under1, n, 1, "copy ");
        run("memcpy from 32 bytes before the start", under32, n, 1, "copy ");
        run("memmove 1 byte past the end", move_over, n, 1, "copy past the end of");
        run("memset 1 byte past the end", set_over, n, 1, "copy past the end of");
        run("memset of the byte before the start", set_under, n, 1, "copy ");
        if (cxx_new && cxx_delete) {
            run("sized delete, size too big", delete_bigger, n, 1, "sized delete whose size does not fit");
            if (n > 16u) /* (1 and 8 share the smallest size class) */
                run("sized delete, size too small", delete_smaller, n, 1, "sized delete whose size does not fit");
            run("sized delete, right size", delete_right, n, 0, NULL);
        } else {
            fprintf(stderr, "preload_guard: libdmm exports no _Znwm/_ZdlPvm\n");
            failed = 1;
        }
    }
    run("memset of a freed small block", set_after_free, 8u, 1, "copy into a free block at");
    run("memset of a freed medium block", set_after_free, 4096u, 1, "copy outside the blocks in use");
    run("copies and reallocs in bounds", busy, 0, 0, NULL);
    if (!failed)
        printf("preload_guard %s: ok\n", argv[1]);
    return failed;
}
