/*
 * bench/spm/harness.c - runs one managed program (bench/spm/<prog>.c) on a
 * backend of hm.h: sets the backend up, runs the program body on --cores
 * execution-core threads (the main thread plays the main core, as on the
 * Cell), checks that every core computed the same checksum, prints the
 * program's result line and "checksum=...", and writes --json.
 *
 * Harness options (removed from argv before the program parses the rest):
 *   --cores N        copies of the program, one per core thread (1)
 *   --json FILE      statistics as JSON (the library's per-function host
 *                    clocks on, unless --no-timing: they cost two clock
 *                    reads per call)
 *   raw:  --local-heap B   allocate from a dmm heap on a B-byte buffer
 *                          (0 = the C library); running out exits 1
 *   spm:  --local S --table T --frames K --gran G --unit B --segment B
 *         --global B --static
 *   swc:  --local S --cache-line B --cache-ways W --global B --static
 * Exit status: the program's (0 ok, 1 failed check or out of memory,
 * 2 bad usage).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hm.h"

/* The spm and swc backends share the global memory, its manager and the
 * host port (include/dmm/spm.h). */
#if defined(HM_BACKEND_SPM) || defined(HM_BACKEND_SWC)
#define HM_HAS_GLOBAL 1
#endif
#if defined(HM_BACKEND_SPM)
#define HM_STATS_JSON dmm_spm_stats_json
#elif defined(HM_BACKEND_SWC)
#define HM_STATS_JSON dmm_swc_stats_json
#endif

_Thread_local hm_core *hm_self;

static const char *hm_prog_name = "prog";

typedef struct hm_opts {
    unsigned cores;
    const char *json;
    uint64_t local_heap;                  /* raw */
    uint64_t local, table, frames, gran, unit, segment, global; /* spm, swc */
    int static_mode;
    int no_timing;                        /* --json without per-function clocks */
    uint64_t cache_line, cache_ways;      /* swc */
} hm_opts;

static hm_opts O = {1, NULL, 0, 65536, 4096, 1, 1, 256, 16384, 64u << 20, 0, 0, 128, 4};

_Noreturn void hm_fail(const char *what, hm_ref r, size_t n)
{
    hm_core *c = hm_self;
    fprintf(stderr, "%s (%s backend, core %u): ", hm_prog_name, HM_BACKEND_NAME, c ? c->id : 0u);
    if (!strcmp(what, "malloc") || !strcmp(what, "calloc") || !strcmp(what, "realloc")) {
        fprintf(stderr, "out of memory: %s of %zu bytes failed after %" PRIu64 " allocations", what, n,
                c ? c->objects : 0);
#if defined(HM_BACKEND_RAW)
        if (c && c->local_heap)
            fprintf(stderr, " (local heap of %zu bytes is full)", c->local_heap_bytes);
#elif defined(HM_BACKEND_SPM)
        if (c && c->spm)
            fprintf(stderr, " (%s)", dmm_status_str(dmm_spm_last_status(c->spm)));
#elif defined(HM_BACKEND_SWC)
        if (c && c->swc)
            fprintf(stderr, " (%s)", dmm_status_str(dmm_swc_last_status(c->swc)));
#endif
        fputc('\n', stderr);
    } else {
        fprintf(stderr, "%s failed on address 0x%" PRIx64, what, r);
#if defined(HM_BACKEND_SPM)
        if (c && c->spm)
            fprintf(stderr, " (%s)", dmm_status_str(dmm_spm_last_status(c->spm)));
#elif defined(HM_BACKEND_SWC)
        if (c && c->swc)
            fprintf(stderr, " (%s)", dmm_status_str(dmm_swc_last_status(c->swc)));
#endif
        fputc('\n', stderr);
    }
    exit(1);
}

void hm_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hm_self->info, sizeof hm_self->info, fmt, ap);
    va_end(ap);
}

void hm_checksum(uint64_t h)
{
    hm_self->checksum = h;
    hm_self->have_checksum = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t num(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-') {
        fprintf(stderr, "%s: option %s needs a non-negative number\n", hm_prog_name, opt);
        exit(2);
    }
    errno = 0;
    v = strtoull(s, &end, 0);
    if (*end == 'k' || *end == 'K')
        v *= 1024, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1048576, end++;
    if (errno || end == s || *end || v < min || v > max) {
        fprintf(stderr, "%s: option %s: '%s' is not a number in [%" PRIu64 ", %" PRIu64 "]\n", hm_prog_name, opt,
                s, min, max);
        exit(2);
    }
    return (uint64_t)v;
}

/* Takes the harness options out of argv; returns the new argc. */
static int strip_options(int argc, char **argv)
{
    struct {
        const char *name;
        uint64_t *v;
        uint64_t min, max;
    } nums[] = {
        {"--local-heap", &O.local_heap, 0, UINT64_C(1) << 40},
        {"--local", &O.local, 4096, 1u << 20},
        {"--table", &O.table, 16, 1u << 20},
        {"--frames", &O.frames, 1, 4096},
        {"--gran", &O.gran, 1, 16},
        {"--unit", &O.unit, 16, 1u << 20},
        {"--segment", &O.segment, 256, 1u << 30},
        {"--global", &O.global, 65536, UINT64_C(1) << 40},
        {"--cache-line", &O.cache_line, 16, 1u << 16},
        {"--cache-ways", &O.cache_ways, 1, 64},
    };
    uint64_t cores = O.cores;
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int done = 0;
        if (!strcmp(a, "--static")) {
            O.static_mode = 1;
            continue;
        }
        if (!strcmp(a, "--no-timing")) {
            O.no_timing = 1;
            continue;
        }
        if (!strcmp(a, "--cores") || !strcmp(a, "--json")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: option %s needs a value\n", hm_prog_name, a);
                exit(2);
            }
            if (!strcmp(a, "--cores"))
                cores = num(a, argv[++i], 1, 64);
            else
                O.json = argv[++i];
            continue;
        }
        for (size_t k = 0; k < sizeof nums / sizeof nums[0] && !done; k++)
            if (!strcmp(a, nums[k].name)) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "%s: option %s needs a value\n", hm_prog_name, a);
                    exit(2);
                }
                *nums[k].v = num(a, argv[++i], nums[k].min, nums[k].max);
                done = 1;
            }
        if (!done)
            argv[out++] = argv[i];
    }
    argv[out] = NULL;
    O.cores = (unsigned)cores;
    return out;
}

typedef struct core_run {
    hm_core core;
    int (*prog_main)(int, char **);
    int argc;
    char **argv;
    int rc;
    uint64_t ns;
#if defined(HM_HAS_GLOBAL)
    dmm_spm_global *g;
    dmm_spm_hostport hp;
    int have_stats;
#endif
    size_t peak_requested; /* raw with --local-heap: peak of the bytes requested */
#if defined(HM_BACKEND_SPM)
    dmm_spm_stats st;
#elif defined(HM_BACKEND_SWC)
    dmm_swc_stats st;
#endif
} core_run;

#if defined(HM_HAS_GLOBAL)
/* The library's error reports (a bad address, an object that does not
 * fit), printed as they happen: the failing call then ends the program. */
static void report_error(void *ctx, const dmm_error *e)
{
    const hm_core *c = ctx;
    fprintf(stderr, "%s (%s backend, core %u): the library reports: %s (operation %d, address 0x%" PRIxPTR ")\n",
            hm_prog_name, HM_BACKEND_NAME, c->id, e->message, (int)e->op, (uintptr_t)e->ptr);
}
#endif

static void *core_main(void *arg)
{
    core_run *cr = arg;
    uint64_t t0;
    char **argv = malloc(((size_t)cr->argc + 1) * sizeof *argv); /* the program may reorder it */
    if (!argv) {
        fprintf(stderr, "%s: out of host memory\n", hm_prog_name);
        exit(1);
    }
    memcpy(argv, cr->argv, ((size_t)cr->argc + 1) * sizeof *argv);
    hm_self = &cr->core;
#if defined(HM_BACKEND_RAW)
    void *buf = NULL;
    if (O.local_heap) {
        dmm_status st;
        cr->core.local_heap_bytes = (size_t)O.local_heap;
        /* FULL statistics: the JSON reports the peak of the bytes the
         * program asked for (the seed's Table I "maximum heap data"). */
        dmm_heap_config hc = dmm_heap_default_config();
        hc.stats = DMM_STATS_FULL;
        buf = malloc((size_t)O.local_heap);
        if (!buf || (st = dmm_heap_init(&cr->core.local_heap, buf, (size_t)O.local_heap, &hc)) != DMM_OK) {
            fprintf(stderr, "%s: cannot make a local heap of %" PRIu64 " bytes: %s\n", hm_prog_name, O.local_heap,
                    buf ? dmm_status_str(st) : "no host memory");
            exit(1);
        }
    }
#elif defined(HM_BACKEND_SPM)
    void *local = aligned_alloc(16, ((size_t)O.local + 15) & ~(size_t)15);
    dmm_spm_config cfg = dmm_spm_default_config();
    dmm_status st;
    cfg.table_bytes = (size_t)O.table;
    cfg.table_frames = (unsigned)O.frames;
    cfg.gran = (unsigned)O.gran;
    cfg.unit_bytes = (size_t)O.unit;
    cfg.segment = (size_t)O.segment;
    cfg.timing = O.json != NULL && !O.no_timing;
    cfg.error_fn = report_error;
    cfg.error_ctx = &cr->core;
    dmm_spm_hostport_init(&cr->hp, cr->g, NULL);
    if (!local || (st = dmm_spm_create(&cr->core.spm, local, (size_t)O.local, &cfg, cr->g, cr->core.id,
                                       &cr->hp.port)) != DMM_OK) {
        fprintf(stderr, "%s: cannot create the core %u heap (local %" PRIu64 ", table %" PRIu64 "): %s\n",
                hm_prog_name, cr->core.id, O.local, O.table, local ? dmm_status_str(st) : "no host memory");
        exit(1);
    }
#elif defined(HM_BACKEND_SWC)
    void *local = aligned_alloc(16, ((size_t)O.local + 15) & ~(size_t)15);
    dmm_swc_config cfg = dmm_swc_default_config();
    dmm_status st;
    cfg.line = (size_t)O.cache_line;
    cfg.ways = (unsigned)O.cache_ways;
    cfg.timing = O.json != NULL && !O.no_timing;
    cfg.error_fn = report_error;
    cfg.error_ctx = &cr->core;
    dmm_spm_hostport_init(&cr->hp, cr->g, NULL);
    if (!local || (st = dmm_swc_create(&cr->core.swc, local, (size_t)O.local, &cfg, cr->g, cr->core.id,
                                       &cr->hp.port)) != DMM_OK) {
        fprintf(stderr, "%s: cannot create the core %u cache (local %" PRIu64 ", line %" PRIu64 ", ways %" PRIu64
                        "): %s\n",
                hm_prog_name, cr->core.id, O.local, O.cache_line, O.cache_ways,
                local ? dmm_status_str(st) : "no host memory");
        exit(1);
    }
#endif
    t0 = now_ns();
    cr->rc = cr->prog_main(cr->argc, argv);
    cr->ns = now_ns() - t0;
#if defined(HM_BACKEND_RAW)
    if (cr->core.local_heap) {
        cr->peak_requested = dmm_heap_get_counters(cr->core.local_heap).peak_requested;
        dmm_heap_destroy(cr->core.local_heap);
    }
    free(buf);
#elif defined(HM_BACKEND_SPM)
    {
        const char *why = NULL;
        if (dmm_spm_check(cr->core.spm, &why) != DMM_OK) {
            fprintf(stderr, "%s: core %u heap check failed: %s\n", hm_prog_name, cr->core.id, why ? why : "?");
            exit(1);
        }
    }
    cr->st = dmm_spm_get_stats(cr->core.spm);
    cr->have_stats = 1;
    if (cr->st.live_objects != 0) {
        fprintf(stderr, "%s: core %u: %" PRIu64 " objects still live at the end\n", hm_prog_name, cr->core.id,
                cr->st.live_objects);
        exit(1);
    }
    dmm_spm_destroy(cr->core.spm);
    free(local);
#elif defined(HM_BACKEND_SWC)
    if (dmm_swc_flush(cr->core.swc) != DMM_OK) {
        fprintf(stderr, "%s: core %u: cache flush failed\n", hm_prog_name, cr->core.id);
        exit(1);
    }
    cr->st = dmm_swc_get_stats(cr->core.swc);
    cr->have_stats = 1;
    if (cr->st.live_objects != 0) {
        fprintf(stderr, "%s: core %u: %" PRIu64 " objects still live at the end\n", hm_prog_name, cr->core.id,
                cr->st.live_objects);
        exit(1);
    }
    dmm_swc_destroy(cr->core.swc);
    free(local);
#endif
    free(argv);
    return NULL;
}

/* ---- --json ------------------------------------------------------------------ */

static const char *hm_name = "prog";
static int hm_argc0;
static char **hm_argv0;

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* One self-describing object per run (schema "dmmkit.spm_program/1"):
 *   program, backend, argv (as given, harness options included), options
 *   (every harness option's value), exit_status, checksum, host_ns_total
 *   (wall clock from starting the core threads to joining them), per_core
 *   [{core, host_ns (wall clock of that core's program body), allocations,
 *   accesses, and per backend: spm = the library's stats JSON
 *   (dmm_spm_stats_json) + port = the host port's counters; swc = the
 *   software cache's stats JSON (dmm_swc_stats_json) + port}], and for spm
 *   and swc the global memory's stats.
 * Returns 0, or -1 (with a message) when the file cannot be written. */
static int write_json(const char *path, core_run *runs, uint64_t total_ns, int rc, void *gptr)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s: %s\n", hm_prog_name, path, strerror(errno));
        return -1;
    }
    (void)gptr;
    fputs("{\"schema\":\"dmmkit.spm_program/1\",\"program\":", f);
    json_str(f, hm_name);
    fputs(",\"executable\":", f);
    json_str(f, hm_prog_name);
    fprintf(f, ",\"backend\":\"%s\",\"argv\":[", HM_BACKEND_NAME);
    for (int i = 1; i < hm_argc0; i++) {
        if (i > 1)
            fputc(',', f);
        json_str(f, hm_argv0[i]);
    }
    fprintf(f,
            "],\"options\":{\"cores\":%u,\"mode\":\"%s\",\"local_heap\":%" PRIu64 ",\"local\":%" PRIu64
            ",\"table\":%" PRIu64 ",\"frames\":%" PRIu64 ",\"gran\":%" PRIu64 ",\"unit\":%" PRIu64
            ",\"segment\":%" PRIu64 ",\"global\":%" PRIu64 ",\"cache_line\":%" PRIu64 ",\"cache_ways\":%" PRIu64 "}",
            O.cores, O.static_mode ? "static" : "dynamic", O.local_heap, O.local, O.table, O.frames, O.gran, O.unit,
            O.segment, O.global, O.cache_line, O.cache_ways);
    fprintf(f, ",\"exit_status\":%d,\"checksum\":\"%016" PRIx64 "\",\"host_ns_total\":%" PRIu64 ",\"per_core\":[", rc,
            runs[0].core.checksum, total_ns);
    for (unsigned c = 0; c < O.cores; c++) {
        fprintf(f, "%s{\"core\":%u,\"rc\":%d,\"checksum\":\"%016" PRIx64 "\",\"host_ns\":%" PRIu64
                   ",\"allocations\":%" PRIu64 ",\"accesses\":%" PRIu64,
                c ? "," : "", c, runs[c].rc, runs[c].core.checksum, runs[c].ns, runs[c].core.objects,
                runs[c].core.accesses);
#if defined(HM_BACKEND_RAW)
        if (O.local_heap)
            fprintf(f, ",\"heap_peak_requested\":%zu", runs[c].peak_requested);
#endif
#if defined(HM_HAS_GLOBAL)
        if (runs[c].have_stats) {
            const dmm_spm_hostport *hp = &runs[c].hp;
            size_t need = HM_STATS_JSON(&runs[c].st, NULL, 0) + 1;
            char *sj = malloc(need);
            if (sj) {
                HM_STATS_JSON(&runs[c].st, sj, need);
                fprintf(f, ",\"%s\":%s", HM_BACKEND_NAME, sj);
                free(sj);
            }
            fprintf(f,
                    ",\"port\":{\"cycles\":%" PRIu64 ",\"gets\":%" PRIu64 ",\"puts\":%" PRIu64 ",\"bytes_in\":%" PRIu64
                    ",\"bytes_out\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"mailbox_words\":%" PRIu64 "}",
                    hp->cycles, hp->gets, hp->puts, hp->bytes_in, hp->bytes_out, hp->waits, hp->mailbox_words);
        }
#endif
        fputc('}', f);
    }
    fputc(']', f);
#if defined(HM_HAS_GLOBAL)
    {
        dmm_spm_global_stats gs = dmm_spm_global_get_stats((dmm_spm_global *)gptr);
        fprintf(f,
                ",\"global\":{\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"failures\":%" PRIu64
                ",\"words_in\":%" PRIu64 ",\"words_out\":%" PRIu64 ",\"mailbox_full_waits\":%" PRIu64
                ",\"bytes_in_use\":%zu,\"peak_bytes\":%zu}",
                gs.allocs, gs.frees, gs.failures, gs.words_in, gs.words_out, gs.mailbox_full_waits, gs.bytes_in_use,
                gs.peak_bytes);
    }
#endif
    fputs("}\n", f);
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", hm_prog_name, path, strerror(errno));
        return -1;
    }
    return 0;
}

int hm_run(int argc, char **argv, const char *name, int (*prog_main)(int argc, char **argv))
{
    core_run *runs;
    pthread_t *tids;
    uint64_t t0, total_ns;
    int rc = 0;
    const char *slash = strrchr(argv[0], '/');
    hm_prog_name = slash ? slash + 1 : argv[0];
    hm_name = name;
    hm_argv0 = malloc(((size_t)argc + 1) * sizeof *hm_argv0); /* for --json, before the harness options go */
    if (!hm_argv0) {
        fprintf(stderr, "%s: out of host memory\n", hm_prog_name);
        return 1;
    }
    memcpy(hm_argv0, argv, ((size_t)argc + 1) * sizeof *hm_argv0);
    hm_argc0 = argc;
    argc = strip_options(argc, argv);
    runs = calloc(O.cores, sizeof *runs);
    tids = calloc(O.cores, sizeof *tids);
    if (!runs || !tids) {
        fprintf(stderr, "%s: out of host memory\n", hm_prog_name);
        return 1;
    }
#if defined(HM_HAS_GLOBAL)
    void *gbuf = aligned_alloc(16, ((size_t)O.global + 15) & ~(size_t)15);
    dmm_spm_global *g = NULL;
    dmm_spm_global_config gc = dmm_spm_global_default_config();
    dmm_status gst;
    gc.mode = O.static_mode ? DMM_SPM_STATIC : DMM_SPM_DYNAMIC;
    gc.cores = O.cores;
    if (!gbuf || (gst = dmm_spm_global_create(&g, gbuf, (size_t)O.global, &gc)) != DMM_OK) {
        fprintf(stderr, "%s: cannot create global memory of %" PRIu64 " bytes: %s\n", hm_prog_name, O.global,
                gbuf ? dmm_status_str(gst) : "no host memory");
        return 1;
    }
#endif
    t0 = now_ns();
    for (unsigned c = 0; c < O.cores; c++) {
        runs[c].core.id = c;
        runs[c].prog_main = prog_main;
        runs[c].argc = argc;
        runs[c].argv = argv;
#if defined(HM_HAS_GLOBAL)
        runs[c].g = g;
#endif
        if (pthread_create(&tids[c], NULL, core_main, &runs[c]) != 0) {
            fprintf(stderr, "%s: cannot start core thread %u\n", hm_prog_name, c);
            return 1;
        }
    }
    for (unsigned c = 0; c < O.cores; c++)
        pthread_join(tids[c], NULL);
    total_ns = now_ns() - t0;
    for (unsigned c = 0; c < O.cores; c++) {
        if (runs[c].rc != 0 && rc == 0)
            rc = runs[c].rc;
        if (!runs[c].core.have_checksum || runs[c].core.checksum != runs[0].core.checksum) {
            fprintf(stderr, "%s: core %u computed checksum %016" PRIx64 ", core 0 %016" PRIx64 "\n", hm_prog_name, c,
                    runs[c].core.checksum, runs[0].core.checksum);
            rc = 1;
        }
    }
    if (rc == 0) {
        printf("%s\n", runs[0].core.info);
        printf("checksum=%016" PRIx64 "\n", runs[0].core.checksum);
    }
#if defined(HM_HAS_GLOBAL)
    void *json_global = g;
#else
    void *json_global = NULL;
#endif
    if (O.json && write_json(O.json, runs, total_ns, rc, json_global) != 0)
        rc = rc ? rc : 1;
#if defined(HM_HAS_GLOBAL)
    dmm_spm_global_destroy(g);
    free(gbuf);
#endif
    free(tids);
    free(runs);
    free(hm_argv0);
    return rc;
}
