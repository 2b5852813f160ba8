/*
 * tools/common/tcommon.c - see tcommon.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tcommon.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef DMM_TOOLS_COMPILER_FLAGS
#define DMM_TOOLS_COMPILER_FLAGS "unknown"
#endif
#ifndef DMM_TOOLS_BUILD_TYPE
#define DMM_TOOLS_BUILD_TYPE "unknown"
#endif
#ifndef DMM_TOOLS_GIT_COMMIT
#define DMM_TOOLS_GIT_COMMIT ""
#endif

/* ======================================================================
 * JSON
 * ====================================================================== */

void tj_init(tj *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

static void tj_indent(tj *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

static void tj_escape(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Separator, indentation and key before a value. */
static void tj_pre(tj *j, const char *key)
{
    if (j->depth > 0) {
        if (j->count[j->depth]++)
            fputc(',', j->f);
        if (j->compact[j->depth]) {
            if (j->count[j->depth] > 1)
                fputc(' ', j->f);
        } else
            tj_indent(j);
    }
    if (key) {
        tj_escape(j->f, key);
        fputs(": ", j->f);
    }
}

static void tj_open(tj *j, const char *key, char c, int compact)
{
    tj_pre(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < TJ_MAX_DEPTH) {
        j->depth++;
        j->count[j->depth] = 0;
        j->compact[j->depth] = compact || (j->depth > 1 && j->compact[j->depth - 1]);
    }
}

static void tj_close(tj *j, char c)
{
    int had = j->count[j->depth];
    int compact = j->compact[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (had && !compact)
        tj_indent(j);
    fputc(c, j->f);
}

void tj_obj(tj *j, const char *key) { tj_open(j, key, '{', 0); }
void tj_obj_end(tj *j) { tj_close(j, '}'); }
void tj_arr(tj *j, const char *key) { tj_open(j, key, '[', 0); }
void tj_arr_compact(tj *j, const char *key) { tj_open(j, key, '[', 1); }
void tj_arr_end(tj *j) { tj_close(j, ']'); }

void tj_str(tj *j, const char *key, const char *v)
{
    tj_pre(j, key);
    if (v)
        tj_escape(j->f, v);
    else
        fputs("null", j->f);
}

void tj_u64(tj *j, const char *key, uint64_t v)
{
    tj_pre(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void tj_i64(tj *j, const char *key, int64_t v)
{
    tj_pre(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void tj_dbl(tj *j, const char *key, double v)
{
    tj_pre(j, key);
    if (isnan(v) || isinf(v))
        fputs("null", j->f);
    else if (v == floor(v) && fabs(v) < 1e15)
        fprintf(j->f, "%.1f", v);
    else
        fprintf(j->f, "%.6g", v);
}

void tj_bool(tj *j, const char *key, int v)
{
    tj_pre(j, key);
    fputs(v ? "true" : "false", j->f);
}

void tj_null(tj *j, const char *key)
{
    tj_pre(j, key);
    fputs("null", j->f);
}

void tj_raw(tj *j, const char *key, const char *text)
{
    tj_pre(j, key);
    fputs(text, j->f);
}

int tj_finish(tj *j)
{
    fputc('\n', j->f);
    return ferror(j->f) ? -1 : 0;
}

/* ======================================================================
 * machine and build
 * ====================================================================== */

static char cpu_model[256];

const char *tc_cpu_model(void)
{
    FILE *f;
    char line[512];
    if (cpu_model[0])
        return cpu_model;
    snprintf(cpu_model, sizeof cpu_model, "unknown");
    if (!(f = fopen("/proc/cpuinfo", "r")))
        return cpu_model;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                size_t n;
                c++;
                while (*c == ' ' || *c == '\t')
                    c++;
                n = strcspn(c, "\n");
                snprintf(cpu_model, sizeof cpu_model, "%.*s", (int)n, c);
            }
            break;
        }
    }
    fclose(f);
    return cpu_model;
}

void tc_json_machine(tj *j, const char *key)
{
    char host[256];
    struct utsname u;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    tj_obj(j, key);
    tj_str(j, "hostname", host);
    tj_str(j, "cpu_model", tc_cpu_model());
    tj_i64(j, "cores", cores > 0 ? cores : 0);
    if (uname(&u) == 0) {
        tj_str(j, "kernel", u.release);
        tj_str(j, "arch", u.machine);
    } else {
        tj_str(j, "kernel", "unknown");
        tj_str(j, "arch", "unknown");
    }
    tj_obj_end(j);
}

const char *tc_commit(void)
{
    const char *e = getenv("DMM_COMMIT");
    if (e && *e)
        return e;
    if (DMM_TOOLS_GIT_COMMIT[0])
        return DMM_TOOLS_GIT_COMMIT;
    return "unknown";
}

void tc_json_build(tj *j, const char *key)
{
    char comp[128];
#if defined(__clang__)
    snprintf(comp, sizeof comp, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(comp, sizeof comp, "gcc %s", __VERSION__);
#else
    snprintf(comp, sizeof comp, "unknown");
#endif
    tj_obj(j, key);
    tj_str(j, "compiler", comp);
    tj_str(j, "flags", DMM_TOOLS_COMPILER_FLAGS);
    tj_str(j, "build_type", DMM_TOOLS_BUILD_TYPE);
    tj_str(j, "commit", tc_commit());
    tj_obj_end(j);
}

/* ======================================================================
 * output files
 * ====================================================================== */

int tc_out_open(tc_out *o, const char *prog, const char *path)
{
    size_t n = strlen(path);
    int fd;
    memset(o, 0, sizeof *o);
    o->path = path;
    /* A file-size limit (RLIMIT_FSIZE) must fail the write with EFBIG, not
     * kill the tool with SIGXFSZ and leave the temporary file behind. */
    signal(SIGXFSZ, SIG_IGN);
    if (!strcmp(path, "-")) {
        o->f = stdout;
        return 0;
    }
    {
        /* /dev/null, a FIFO, a terminal: written in place.  A temporary
         * file renamed over it would replace the device with a plain file
         * (as root, /dev is writable). */
        struct stat st;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            if (!(o->f = fopen(path, "w"))) {
                fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
                return -1;
            }
            return 0;
        }
    }
    if (!(o->tmp = malloc(n + 8))) {
        fprintf(stderr, "%s: cannot write %s: out of memory\n", prog, path);
        return -1;
    }
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".XXXXXX", 8);
    if ((fd = mkstemp(o->tmp)) < 0 || !(o->f = fdopen(fd, "w"))) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    {
        mode_t mask = umask(0); /* mkstemp made it 0600: give it a new file's mode */
        umask(mask);
        (void)fchmod(fd, 0666 & ~mask);
    }
    return 0;
}

int tc_out_close(tc_out *o, const char *prog, int ok)
{
    int rc = 0, err = 0;
    if (!o->f)
        return -1;
    if (fflush(o->f) != 0 || ferror(o->f))
        err = errno ? errno : EIO;
    if (o->f == stdout) {
        o->f = NULL;
        if (err)
            fprintf(stderr, "%s: error writing standard output: %s\n", prog, strerror(err));
        return err ? -1 : 0;
    }
    if (fclose(o->f) != 0 && !err)
        err = errno ? errno : EIO;
    o->f = NULL;
    if (!o->tmp) { /* written in place (not a regular file) */
        if (err)
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->path, strerror(err));
        return err ? -1 : 0;
    }
    if (ok && !err && rename(o->tmp, o->path) != 0)
        err = errno;
    if (!ok || err) {
        unlink(o->tmp);
        rc = -1;
        if (err)
            fprintf(stderr, "%s: cannot write %s: %s (nothing written)\n", prog, o->path, strerror(err));
    }
    free(o->tmp);
    o->tmp = NULL;
    return rc;
}

/* ======================================================================
 * misc
 * ====================================================================== */

int tc_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

void tc_print_trace_error(const char *prog, const char *file, const dmm_trace_error *e)
{
    const char *r = e->reason;
    size_t fl = strlen(file);
    if (strncmp(r, "cannot open ", 12) == 0) {
        /* "cannot open PATH: why" - no offset to name */
        fprintf(stderr, "%s: %s\n", prog, r);
        return;
    }
    /* the loader sometimes repeats the path at the start of its reason */
    if (strncmp(r, file, fl) == 0 && r[fl] == ':' && r[fl + 1] == ' ')
        r += fl + 2;
    fprintf(stderr, "%s: %s: %s %" PRIu64 ": %s\n", prog, file, e->is_line ? "line" : "offset", e->offset, r);
}

int tc_load_trace(const char *prog, const char *path, dmm_trace *t)
{
    dmm_trace_error e;
    memset(&e, 0, sizeof e);
    if (dmm_trace_load(t, path, &e) != 0) {
        tc_print_trace_error(prog, path, &e);
        return -1;
    }
    return 0;
}

const char *tc_kind_name(unsigned kind)
{
    switch (kind) {
    case DMM_T_MALLOC: return "malloc";
    case DMM_T_CALLOC: return "calloc";
    case DMM_T_REALLOC: return "realloc";
    case DMM_T_ALIGNED: return "aligned";
    case DMM_T_FREE: return "free";
    case DMM_T_SYNC: return "sync";
    default: return "?";
    }
}

uint64_t tc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
