/*
 * tools/spmcc/runtime/spmcc_rt.c - one execution core for a program rewritten
 * by dmm-spmcc (spmcc_rt.h says what the environment sets).
 */
#include "spmcc_rt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dmm_spm *spmcc_heap;
uintptr_t spmcc_gsize;
void *spmcc_guard[SPMCC_GUARDS];
unsigned spmcc_nguard;
const char *spmcc_lbase;
size_t spmcc_lsize;
static unsigned long spmcc_errors;

_Noreturn void spmcc_fail(const char *what, const void *g)
{
    fflush(stdout);
    dmm_status st = dmm_spm_last_status(spmcc_heap);
    const char *why = "";
    bool xlate = strncmp(what, "p2s", 3) == 0 || strcmp(what, "pin") == 0; /* g: a program's heap pointer */
    if (xlate && (uintptr_t)g < SPMCC_BIAS) /* not a heap pointer as the rewritten program holds them */
        why = ": not a heap address (a null pointer, or one from an allocation that returned NULL)";
    else if (xlate && st == DMM_E_RANGE)
        why = ": the object is larger than local memory (layout max_object); only its elements can be reached";
    fprintf(stderr, "spmcc: %s of %#lx failed (status %d, %s)%s\n", what, (unsigned long)(uintptr_t)g, (int)st,
            dmm_status_str(st), why);
    exit(3);
}

static void spmcc_report(void *ctx, const dmm_error *e)
{
    (void)ctx;
    spmcc_errors++;
    fprintf(stderr, "spmcc: the library reports: %s (address %#lx)\n", e->message,
            (unsigned long)(uintptr_t)e->ptr);
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long long x = strtoull(v, &end, 0);
    if (*end || x == 0) {
        fprintf(stderr, "spmcc: %s=%s is not a positive number\n", name, v);
        exit(2);
    }
    return (size_t)x;
}

int spmcc_run(int argc, char **argv, int (*fn)(int, char **))
{
    size_t lsize = env_size("SPMCC_LOCAL", 32768);
    size_t gsize = env_size("SPMCC_GLOBAL", (size_t)16 << 20);
    gsize = (gsize + 65535) & ~(size_t)65535;
    lsize = (lsize + 15) & ~(size_t)15;
    void *gbuf = aligned_alloc(65536, gsize);
    void *lbuf = aligned_alloc(16, lsize);
    if (!gbuf || !lbuf) {
        fprintf(stderr, "spmcc: cannot allocate the simulated memories\n");
        return 2;
    }
    /* Heap pointers are SPMCC_BIAS + global address; a host object there
     * could not be told from one by the _any translations (spmcc_rt.h).  The
     * stack, static data, the C heap and the simulated memories are checked
     * to lie below. */
    int on_stack = 0;
    void *c_heap = malloc(1);
    static const char rodata[] = "spmcc";
    const void *host[] = {&on_stack, &spmcc_heap, rodata, "literal", c_heap, gbuf, lbuf, argv};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        if ((uintptr_t)host[i] >= SPMCC_BIAS || gsize - 1 > UINTPTR_MAX - SPMCC_BIAS) {
            fprintf(stderr, "spmcc: host object %zu at %p lies in the range of heap pointers (%#lx + %#zx)\n", i,
                    host[i], (unsigned long)SPMCC_BIAS, gsize);
            return 2;
        }
    free(c_heap);
    spmcc_gsize = gsize;
    spmcc_lbase = lbuf;
    spmcc_lsize = lsize;
    dmm_spm_global *g;
    dmm_spm_global_config gc = dmm_spm_global_default_config();
    gc.cores = 1;
    /* SPMCC_STATIC=1: global memory in static mode (one slice, no manager
     * thread, no mailbox), for the seed's Table III comparison */
    const char *stat = getenv("SPMCC_STATIC");
    gc.mode = stat && *stat && strcmp(stat, "0") ? DMM_SPM_STATIC : DMM_SPM_DYNAMIC;
    dmm_status st = dmm_spm_global_create(&g, gbuf, gsize, &gc);
    if (st != DMM_OK) {
        fprintf(stderr, "spmcc: global memory of %zu bytes: status %d\n", gsize, (int)st);
        return 2;
    }
    static dmm_spm_hostport hp;
    dmm_spm_hostport_init(&hp, g, NULL);
    dmm_spm_config c = dmm_spm_default_config();
    const char *text = getenv("SPMCC_CONFIG");
    const char *why = NULL;
    if (text && *text && dmm_spm_config_parse(text, &c, &why) != DMM_OK) {
        fprintf(stderr, "spmcc: SPMCC_CONFIG=%s: %s\n", text, why ? why : "invalid");
        return 2;
    }
    c.error_fn = spmcc_report;
    st = dmm_spm_create(&spmcc_heap, lbuf, lsize, &c, g, 0, &hp.port);
    if (st != DMM_OK) {
        fprintf(stderr, "spmcc: local memory of %zu bytes: status %d\n", lsize, (int)st);
        return 2;
    }
    int rc = fn(argc, argv);
    fflush(stdout);
    const char *reason = NULL;
    if (dmm_spm_check(spmcc_heap, &reason) != DMM_OK) {
        fprintf(stderr, "spmcc: dmm_spm_check at exit: %s\n", reason ? reason : "?");
        rc = 3;
    }
    if (getenv("SPMCC_STATS")) {
        char buf[2048];
        dmm_spm_stats s = dmm_spm_get_stats(spmcc_heap);
        dmm_spm_stats_json(&s, buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
    }
    if (spmcc_errors) {
        fprintf(stderr, "spmcc: %lu error(s) reported by the library\n", spmcc_errors);
        rc = 3;
    }
    dmm_spm_destroy(spmcc_heap);
    spmcc_heap = NULL;
    dmm_spm_global_destroy(g);
    free(lbuf);
    free(gbuf);
    return rc;
}
