/*
 * tests/malloc/preload_calls.c - run with libdmm.so preloaded (ctest
 * malloc_preload_calls): glibc's statistics and tuning calls must answer
 * about libdmm, not about glibc's unused arena (issue 27).  And libdmm's
 * start-up seeds its secrets from the OS's random bytes, not from
 * clock_gettime, whose libc text pages a small program would not touch
 * otherwise (issue 27, peak RSS; this program's clock_gettime, exported
 * with -rdynamic, is the one libdmm.so's call binds to).  Exit 0 when every
 * check holds, else 1 with one line per failed check.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int clock_calls;

/* Counts the calls, and answers as libc's would (the system call itself). */
int clock_gettime(clockid_t id, struct timespec *ts)
{
    clock_calls++;
    return (int)syscall(SYS_clock_gettime, id, ts);
}

static int failed;
#define CHECK(c)                                                                                                      \
    do {                                                                                                              \
        if (!(c)) {                                                                                                   \
            fprintf(stderr, "preload_calls: %s:%d: not true: %s\n", __FILE__, __LINE__, #c);                          \
            failed = 1;                                                                                               \
        }                                                                                                             \
    } while (0)

int main(void)
{
    struct mallinfo2 a = mallinfo2(), b, c;
    struct mallinfo old;
    void *p[1000];
    char *info = NULL;
    size_t info_len = 0;
    FILE *mem;
    for (int i = 0; i < 1000; i++)
        p[i] = malloc(100 + (size_t)i * 7);
    CHECK(clock_calls == 0); /* libdmm has started: its secrets are seeded */
    b = mallinfo2();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    old = mallinfo(); /* deprecated, still interposed */
#pragma GCC diagnostic pop
    CHECK(b.uordblks >= a.uordblks + 400000);
    CHECK((size_t)old.uordblks == b.uordblks);
    for (int i = 0; i < 1000; i++)
        free(p[i]);
    c = mallinfo2();
    CHECK(c.uordblks == a.uordblks); /* back to the baseline */
    CHECK(malloc_trim(0) == 1);      /* the emptied pages go back */
    CHECK(mallopt(M_ARENA_MAX, 1) == 1);
    CHECK(mallopt(12345, 1) == 0);
    mem = open_memstream(&info, &info_len);
    CHECK(mem && malloc_info(0, mem) == 0);
    if (mem)
        fclose(mem);
    CHECK(info && strstr(info, "<malloc version=\"libdmm-1\">"));
    free(info);
    return failed;
}
