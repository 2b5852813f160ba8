/*
 * tools/trace/dmm_trace_tool.c - dmm-trace: everyday operations on trace
 * files.
 *
 *   dmm-trace convert IN OUT            any readable format -> binary, or text
 *                                       when OUT ends in .txt
 *   dmm-trace validate IN               object discipline and SYNC references
 *   dmm-trace info IN                   ops, threads, hash, metadata
 *   dmm-trace randomize IN OUT --seed N the seed-001 randomised free points
 *
 * Errors print "dmm-trace: FILE: offset N: reason" (binary) or "... line N:
 * reason" (text formats) and exit 2; I/O failures writing OUT exit 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/tcommon.h"
#include "dmm/trace.h"

#define PROG "dmm-trace"

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " convert IN OUT\n"
               "       " PROG " validate IN\n"
               "       " PROG " info IN\n"
               "       " PROG " randomize IN OUT --seed N\n");
}

static int save(const dmm_trace *t, const char *out)
{
    if (dmm_trace_save(t, out) != 0) {
        fprintf(stderr, PROG ": cannot write %s: %s (nothing written)\n", out, errno ? strerror(errno) : "write error");
        return 1;
    }
    return 0;
}

static int validate_or_report(const char *path, const dmm_trace *t)
{
    dmm_trace_error e;
    memset(&e, 0, sizeof e);
    if (dmm_trace_validate(t, &e) != 0) {
        fprintf(stderr, PROG ": %s: operation %" PRIu64 ": %s\n", path, e.offset, e.reason);
        return -1;
    }
    return 0;
}

static int cmd_info(const char *path, const dmm_trace *t)
{
    uint64_t count[DMM_T_SYNC + 1] = {0};
    dmm_trace_error e;
    int valid;
    for (size_t i = 0; i < t->n; i++)
        if (t->ops[i].kind <= DMM_T_SYNC)
            count[t->ops[i].kind]++;
    memset(&e, 0, sizeof e);
    valid = dmm_trace_validate(t, &e) == 0;
    printf("file      %s\n", path);
    printf("version   %u\n", DMM_TRACE_VERSION);
    printf("ops       %zu (malloc %" PRIu64 ", calloc %" PRIu64 ", realloc %" PRIu64 ", aligned %" PRIu64
           ", free %" PRIu64 ", sync %" PRIu64 ")\n",
           t->n, count[DMM_T_MALLOC], count[DMM_T_CALLOC], count[DMM_T_REALLOC], count[DMM_T_ALIGNED],
           count[DMM_T_FREE], count[DMM_T_SYNC]);
    printf("threads   %u\n", t->threads);
    printf("hash      %016" PRIx64 "\n", dmm_trace_hash(t));
    printf("time      %s\n", t->has_time ? "yes" : "no");
    if (valid)
        printf("valid     yes\n");
    else
        printf("valid     no (operation %" PRIu64 ": %s)\n", e.offset, e.reason);
    if (t->meta && *t->meta) {
        const char *m = t->meta;
        printf("meta\n");
        while (*m) {
            size_t n = strcspn(m, "\n");
            printf("  %.*s\n", (int)n, m);
            m += n;
            if (*m)
                m++;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd;
    dmm_trace t;
    int rc = 0;
    /* a file-size limit fails the save with EFBIG (reported, no file left)
     * instead of killing the tool halfway through */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "convert")) {
        if (argc != 4) {
            usage(stderr);
            return 2;
        }
        if (tc_load_trace(PROG, argv[2], &t))
            return 2;
        rc = save(&t, argv[3]);
    } else if (!strcmp(cmd, "validate")) {
        if (argc != 3) {
            usage(stderr);
            return 2;
        }
        if (tc_load_trace(PROG, argv[2], &t))
            return 2;
        if (validate_or_report(argv[2], &t))
            rc = 2;
        else
            printf("%s: valid (%zu ops, %u thread%s)\n", argv[2], t.n, t.threads, t.threads == 1 ? "" : "s");
    } else if (!strcmp(cmd, "info")) {
        if (argc != 3) {
            usage(stderr);
            return 2;
        }
        if (tc_load_trace(PROG, argv[2], &t))
            return 2;
        rc = cmd_info(argv[2], &t);
    } else if (!strcmp(cmd, "randomize")) {
        const char *in = NULL, *out = NULL;
        uint64_t seed = 0;
        int have_seed = 0;
        dmm_trace r;
        for (int i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--seed")) {
                if (i + 1 >= argc || tc_parse_u64(argv[i + 1], &seed)) {
                    fprintf(stderr, PROG ": --seed needs a number\n");
                    return 2;
                }
                have_seed = 1;
                i++;
            } else if (!in) {
                in = argv[i];
            } else if (!out) {
                out = argv[i];
            } else {
                usage(stderr);
                return 2;
            }
        }
        if (!in || !out || !have_seed) {
            usage(stderr);
            return 2;
        }
        if (tc_load_trace(PROG, in, &t))
            return 2;
        if (validate_or_report(in, &t)) {
            dmm_trace_free(&t);
            return 2;
        }
        if (dmm_trace_randomize_frees(&t, &r, seed) != 0) {
            fprintf(stderr, PROG ": %s: randomize failed (out of memory)\n", in);
            dmm_trace_free(&t);
            return 1;
        }
        rc = save(&r, out);
        dmm_trace_free(&r);
    } else {
        fprintf(stderr, PROG ": unknown command '%s'\n", cmd);
        usage(stderr);
        return 2;
    }
    dmm_trace_free(&t);
    return rc;
}
