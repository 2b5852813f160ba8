/*
 * tools/replay/options.c - dmm-replay's command line (getopt_long).  A bad
 * option gives one line naming it and what it takes, and exit status 2; the
 * usage text is printed only for --help.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/schemas.h"
#include "run.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " TRACE [--alloc ALLOCATOR] [--arena BYTES] [--reps N] [--warm | --no-warm]\n"
               "                  [--verify] [--json FILE] [--quiet] [--min-arena[=extent|bisect]]\n"
               "                  [--no-timing] [--ops N]\n"
               "                  [--expect NAME] [--hist] [--timeline FILE] [--heapmap FILE]\n"
               "                  [--heapmap-at peak|worst-frag] [--max-threads N]\n"
               "       " PROG " TRACE --count-sweep FILE\n"
               "       " PROG " --check-configs FILE\n"
               "       " PROG " --build-info\n"
               "allocators (--alloc, chosen by prefix):\n");
    for (unsigned i = 0; rp_backend_classes[i]; i++)
        fputs(rp_backend_classes[i]->usage, f);
    fprintf(f, "options:\n"
               "  --arena BYTES       arena size (k/m/g suffixes; allocators that take one);\n"
               "                      default 4x peak live, >= 1 MiB, <= half the machine's memory\n"
               "  --reps N            repetitions, 1..1000; figures are medians over them (default 1)\n"
               "  --no-warm           skip the warm pass\n"
               "  --verify            fill blocks with a pattern and check it before realloc/free\n"
               "  --json FILE         write every figure as JSON (schema " DMM_SCHEMA_REPLAY "); '-' = stdout\n"
               "  --min-arena[=M]     the smallest arena with no failed allocation (dmm:, pool:, multiheap:);\n"
               "                      M = extent (default: from the extent high-water of one replay where\n"
               "                      the policy cannot depend on the arena size, else a bisection between\n"
               "                      tight bounds) or bisect (bisection from the doubled default arena)\n"
               "  --ops N             replay only the first N entries of the trace (a prefix, for screening)\n"
               "  --no-timing         no rdtsc (for valgrind/callgrind runs)\n"
               "  --expect NAME       exit 3 unless the allocator detected is NAME\n"
               "  --hist              add the latency histograms (non-empty buckets) to the JSON\n"
               "  --timeline FILE     write live bytes and footprint over the first cold pass (JSON)\n"
               "  --heapmap FILE      write every block of the heap when live bytes first reach the\n"
               "                      trace's peak (JSON; dmm only)\n"
               "  --heapmap-at WHEN   peak (default, as above) or worst-frag: the first moment, among\n"
               "                      those with live bytes >= half the trace's peak, at which the heap\n"
               "                      holds the most bytes of its extent not in used blocks (found and\n"
               "                      taken in two extra sequential untimed replays)\n"
               "  --max-threads N     refuse traces with more than N threads (default and limit %u);\n"
               "                      a replay runs one thread per trace thread\n"
               "  --count-sweep FILE  replay once per line 'ARENA CONFIG' (sequential, untimed), calling\n"
               "                      rpx_sweep_mark() after each: callgrind --dump-after=rpx_sweep_mark\n"
               "                      then gives every config its own instruction count\n"
               "  --check-configs FILE  check one dmm config per line ('-' = stdin), print\n"
               "                      'ok CONFIG' (normalised) or 'error REASON' per line; no trace\n"
               "  --build-info        print how this dmm-replay was built (compiler, flags, build\n"
               "                      type, commit) as one JSON object; no trace\n"
               "Outputs appear only when complete (written to a temporary file, then renamed).\n"
               "Exit status: 0 done, 1 run-time failure, 2 bad usage/trace/configuration,\n"
               "3 --expect mismatch, 4 --verify found corruption.\n",
            RP_MAX_THREADS);
}

static int bad(const char *opt, const char *what, const char *got)
{
    fprintf(stderr, PROG ": %s: %s, got '%s'\n", opt, what, got);
    return RP_EXIT_USAGE;
}

static int parse_count(const char *s, uint64_t lo, uint64_t hi, unsigned *out)
{
    char *end;
    unsigned long long v;
    if (!s || *s < '0' || *s > '9')
        return -1;
    v = strtoull(s, &end, 10);
    if (*end || v < lo || v > hi)
        return -1;
    *out = (unsigned)v;
    return 0;
}

enum {
    O_ALLOC = 256, O_ARENA, O_REPS, O_WARM, O_NO_WARM, O_VERIFY, O_JSON, O_QUIET, O_MIN_ARENA, O_NO_TIMING,
    O_EXPECT, O_HIST, O_TIMELINE, O_HEAPMAP, O_HEAPMAP_AT, O_COUNT_SWEEP, O_CHECK_CONFIGS, O_MAX_THREADS, O_OPS,
    O_BUILD_INFO, O_HELP
};

int rp_parse_options(int argc, char **argv, rp_options *o)
{
    static const struct option longopts[] = {
        {"alloc", required_argument, NULL, O_ALLOC},
        {"arena", required_argument, NULL, O_ARENA},
        {"reps", required_argument, NULL, O_REPS},
        {"warm", no_argument, NULL, O_WARM},
        {"no-warm", no_argument, NULL, O_NO_WARM},
        {"verify", no_argument, NULL, O_VERIFY},
        {"json", required_argument, NULL, O_JSON},
        {"quiet", no_argument, NULL, O_QUIET},
        {"min-arena", optional_argument, NULL, O_MIN_ARENA},
        {"ops", required_argument, NULL, O_OPS},
        {"no-timing", no_argument, NULL, O_NO_TIMING},
        {"expect", required_argument, NULL, O_EXPECT},
        {"hist", no_argument, NULL, O_HIST},
        {"timeline", required_argument, NULL, O_TIMELINE},
        {"heapmap", required_argument, NULL, O_HEAPMAP},
        {"heapmap-at", required_argument, NULL, O_HEAPMAP_AT},
        {"count-sweep", required_argument, NULL, O_COUNT_SWEEP},
        {"check-configs", required_argument, NULL, O_CHECK_CONFIGS},
        {"max-threads", required_argument, NULL, O_MAX_THREADS},
        {"build-info", no_argument, NULL, O_BUILD_INFO},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    memset(o, 0, sizeof *o);
    o->alloc = "dmm:tlsf";
    o->reps = 1;
    o->warm = 1;
    o->timing = 1;
    o->max_threads = RP_MAX_THREADS;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *v = optarg;
        switch (c) {
        case O_ALLOC: o->alloc = v; break;
        case O_ARENA:
            if (dmm_parse_size(v, strlen(v), &o->arena) || o->arena == 0)
                return bad("--arena", "expected a size in bytes such as 65536, 64k or 16m", v);
            break;
        case O_REPS:
            if (parse_count(v, 1, 1000, &o->reps))
                return bad("--reps", "expected a count from 1 to 1000", v);
            break;
        case O_MAX_THREADS:
            if (parse_count(v, 1, RP_MAX_THREADS, &o->max_threads)) {
                char what[64];
                snprintf(what, sizeof what, "expected a count from 1 to %u", RP_MAX_THREADS);
                return bad("--max-threads", what, v);
            }
            break;
        case O_WARM: o->warm = 1; break;
        case O_NO_WARM: o->warm = 0; break;
        case O_VERIFY: o->verify = 1; break;
        case O_JSON: o->json = v; break;
        case O_QUIET: o->quiet = 1; break;
        case O_MIN_ARENA:
            if (!v || strcmp(v, "extent") == 0)
                o->min_arena = RP_MIN_EXTENT;
            else if (strcmp(v, "bisect") == 0)
                o->min_arena = RP_MIN_BISECT;
            else
                return bad("--min-arena", "expected extent or bisect", v);
            break;
        case O_OPS: {
            char *end;
            if (*v < '0' || *v > '9' || (o->ops_limit = strtoull(v, &end, 10), *end) || o->ops_limit == 0)
                return bad("--ops", "expected a positive count of trace entries", v);
            break;
        }
        case O_NO_TIMING: o->timing = 0; break;
        case O_EXPECT: o->expect = v; break;
        case O_HIST: o->hist = 1; break;
        case O_TIMELINE: o->timeline = v; break;
        case O_HEAPMAP: o->heapmap = v; break;
        case O_HEAPMAP_AT:
            if (!strcmp(v, "peak"))
                o->heapmap_worst = 0;
            else if (!strcmp(v, "worst-frag"))
                o->heapmap_worst = 1;
            else
                return bad("--heapmap-at", "expected peak or worst-frag", v);
            break;
        case O_COUNT_SWEEP: o->count_sweep = v; break;
        case O_CHECK_CONFIGS: o->check_configs = v; break;
        case O_BUILD_INFO: o->build_info = 1; break;
        case 'h':
        case O_HELP: usage(stdout); return RP_EXIT_OK;
        case ':':
            fprintf(stderr, PROG ": %s needs a value\n", argv[optind - 1]);
            return RP_EXIT_USAGE;
        default:
            if (optopt && optopt < 256)
                fprintf(stderr, PROG ": unknown option '-%c' (see " PROG " --help)\n", optopt);
            else
                fprintf(stderr, PROG ": unknown option '%s' (see " PROG " --help)\n", argv[optind - 1]);
            return RP_EXIT_USAGE;
        }
    }
    for (int i = optind; i < argc; i++) {
        if (o->trace) {
            fprintf(stderr, PROG ": more than one trace given ('%s', '%s')\n", o->trace, argv[i]);
            return RP_EXIT_USAGE;
        }
        o->trace = argv[i];
    }
    if (o->build_info && (o->trace || o->check_configs)) {
        fprintf(stderr, PROG ": --build-info takes no trace and no other mode\n");
        return RP_EXIT_USAGE;
    }
    if (!o->trace && !o->check_configs && !o->build_info) {
        fprintf(stderr, PROG ": no trace given (see " PROG " --help)\n");
        return RP_EXIT_USAGE;
    }
    return -1;
}
