/*
 * bench/malloc/glibc_support/support/test-driver.c - dmmkit's stand-in for
 * glibc's test driver, included at the end of a test's source; written from
 * its documented behaviour, not glibc code.
 *
 * The test provides do_test (void) (or the expression TEST_FUNCTION, or
 * TEST_FUNCTION_ARGV (argc, argv)) and may define TIMEOUT (seconds,
 * default 20), EXPECTED_STATUS, EXPECTED_SIGNAL, PREPARE (argc, argv, run
 * before the test) and CLEANUP_HANDLER (run if the test times out).
 *
 * main forks: the child runs the test (stdout unbuffered) and exits with its
 * result, 1 if a check failed along the way; the parent waits at most
 * TIMEOUT * $TIMEOUTFACTOR seconds, then kills the child's process group,
 * prints "Timed out: killed the child process" and exits 1.  The exit
 * status is 0 (pass), 77 (unsupported) or another value (fail); a child
 * killed by a signal fails unless EXPECTED_SIGNAL names it.  --direct runs
 * the test in this process, without the timeout; -v / --verbose counts
 * into test_verbose.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <support/check.h>
#include <support/test-driver.h>

void dmm_support_init(void);

#ifndef TIMEOUT
#define TIMEOUT DEFAULT_TIMEOUT
#endif

static int dmm_driver_argc;
static char **dmm_driver_argv;

static int dmm_driver_run(void)
{
    (void)dmm_driver_argc;
    (void)dmm_driver_argv;
#if defined(TEST_FUNCTION_ARGV)
    return TEST_FUNCTION_ARGV(dmm_driver_argc, dmm_driver_argv);
#elif defined(TEST_FUNCTION)
    return TEST_FUNCTION;
#else
    return do_test();
#endif
}

static int dmm_driver_finish(int status)
{
    if (status == 0 && support_record_failure_is_failed())
        status = 1;
    return status;
}

static volatile sig_atomic_t dmm_driver_timed_out;
static pid_t dmm_driver_child;

static void dmm_driver_alarm(int sig)
{
    (void)sig;
    dmm_driver_timed_out = 1;
    kill(-dmm_driver_child, SIGKILL);
    kill(dmm_driver_child, SIGKILL);
}

int main(int argc, char **argv)
{
    int direct = 0;
    int first = 1;
    for (; first < argc; first++) {
        if (strcmp(argv[first], "--direct") == 0)
            direct = 1;
        else if (strcmp(argv[first], "-v") == 0 || strcmp(argv[first], "--verbose") == 0)
            test_verbose++;
        else
            break;
    }
    /* the test sees its program name and the arguments after the driver's */
    argv[first - 1] = argv[0];
    dmm_driver_argc = argc - first + 1;
    dmm_driver_argv = argv + first - 1;
    dmm_support_init();
#ifdef PREPARE
    PREPARE(dmm_driver_argc, dmm_driver_argv);
#endif
    setvbuf(stdout, NULL, _IONBF, 0);
    if (direct || getenv("TEST_DIRECT") != NULL)
        return dmm_driver_finish(dmm_driver_run());

    unsigned int timeout = TIMEOUT;
    const char *factor = getenv("TIMEOUTFACTOR");
    if (factor != NULL && atoi(factor) > 0)
        timeout *= (unsigned int)atoi(factor);

    pid_t pid = fork();
    if (pid < 0) {
        printf("test-driver: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        setpgid(0, 0); /* so a timeout kills the test's own children too */
        exit(dmm_driver_finish(dmm_driver_run()));
    }
    setpgid(pid, pid);
    dmm_driver_child = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = dmm_driver_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(timeout);
    int status;
    pid_t r;
    do
        r = waitpid(pid, &status, 0);
    while (r < 0 && errno == EINTR);
    alarm(0);
    if (r < 0) {
        printf("test-driver: waitpid: %s\n", strerror(errno));
        return 1;
    }
    if (dmm_driver_timed_out) {
#ifdef CLEANUP_HANDLER
        CLEANUP_HANDLER();
#endif
        printf("Timed out: killed the child process\n");
        return 1;
    }
    if (WIFSIGNALED(status)) {
#ifdef EXPECTED_SIGNAL
        if (WTERMSIG(status) == EXPECTED_SIGNAL)
            return 0;
#endif
        printf("Didn't expect signal from child: got `%s'\n", strsignal(WTERMSIG(status)));
        return 1;
    }
    int code = WEXITSTATUS(status);
#ifdef EXPECTED_STATUS
    if (code == EXPECTED_STATUS)
        return 0;
    if (code != EXIT_UNSUPPORTED) {
        printf("Expected status %d, got %d\n", EXPECTED_STATUS, code);
        return 1;
    }
#endif
#ifdef EXPECTED_SIGNAL
    if (code != EXIT_UNSUPPORTED) {
        printf("Expected signal '%s' from child, got none\n", strsignal(EXPECTED_SIGNAL));
        return 1;
    }
#endif
    return code;
}
