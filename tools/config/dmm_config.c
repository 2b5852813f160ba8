/*
 * tools/config/dmm_config.c - dmm-config: the heap's configuration text,
 * checked, normalised, frozen into a header, and its field list, all from
 * the library (include/dmm/heap.h), so scripts and the Python front end
 * keep no tables of their own.
 *
 *   dmm-config check TEXT                 valid? prints the normalised text
 *   dmm-config format TEXT                prints the normalised text
 *   dmm-config header TEXT [--name NAME]  prints the frozen config header
 *   dmm-config fields --json              prints the field list as JSON
 *   --pool (with any command)             the same for the pool's config
 *                                         (include/dmm/pool.h, docs/pool.md)
 *
 * TEXT is a preset name or key=value pairs (docs/heap.md, "Text form");
 * fields it does not name keep dmm_heap_default_config's values.
 * Exit status: 0 ok, 1 the config is unreadable or refused (the reason on
 * stderr), 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/heap.h"
#include "dmm/pool.h"

#define PROG "dmm-config"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " check TEXT                 exit 0 and print the normalised config if\n"
            "                                          TEXT is valid, else exit 1 with the reason\n"
            "       " PROG " format TEXT                print TEXT normalised (every field, in order)\n"
            "       " PROG " header TEXT [--name NAME]  print a header freezing TEXT at build time\n"
            "                                          (configs/frozen/*.h; -DDMM_FROZEN_CONFIG=FILE)\n"
            "       " PROG " fields --json              print the fields: kinds, values, defaults\n"
            "       " PROG " --pool COMMAND ...         the same for a pool config (block=64,align=32,...;\n"
            "                                          docs/pool.md; headers for -DDMM_POOL_CONFIG_HEADER)\n"
            "       " PROG " --help\n"
            "TEXT: a preset name (");
    for (int i = 0; i < DMM_PRESET_COUNT; i++)
        fprintf(f, "%s%s", i ? ", " : "", dmm_heap_preset_name((dmm_heap_preset)i));
    fprintf(f, ") or key=value pairs,\n"
               "      e.g. preset=tlsf,fit=best,split_min=64 (keys: docs/heap.md or '" PROG " fields --json');\n"
               "      fields not named keep their defaults.\n"
               "exit status: 0 ok, 1 config unreadable or refused, 2 usage error\n");
}

/* TEXT -> *cfg; prints the error and returns -1 when it cannot be read. */
static int read_config(const char *text, dmm_heap_config *cfg)
{
    const char *why = NULL;
    dmm_heap_preset p;
    *cfg = dmm_heap_default_config();
    if (!*text) {
        fprintf(stderr, PROG ": empty config text (give a preset name or key=value pairs)\n");
        return -1;
    }
    if (!strchr(text, '=')) {
        if (dmm_heap_preset_from_name(text, &p) != DMM_OK) {
            fprintf(stderr, PROG ": '%s' is not a preset (", text);
            for (int i = 0; i < DMM_PRESET_COUNT; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", dmm_heap_preset_name((dmm_heap_preset)i));
            fprintf(stderr, ") and not key=value pairs\n");
            return -1;
        }
        *cfg = dmm_heap_preset_config(p);
        return 0;
    }
    if (dmm_heap_config_parse(text, cfg, &why) != DMM_OK) {
        fprintf(stderr, PROG ": cannot read '%s': %s\n", text, why ? why : "parse error");
        return -1;
    }
    return 0;
}

static int check_config(const dmm_heap_config *cfg)
{
    const char *why = NULL;
    if (dmm_heap_config_check(cfg, &why) != DMM_OK) {
        fprintf(stderr, PROG ": config refused: %s%s\n", why ? why : "invalid",
                dmm_heap_is_frozen() ? " (this dmm-config is linked with a frozen library)" : "");
        return -1;
    }
    return 0;
}

/* Writes what fn produces (snprintf-like) to stdout, plus a newline when
 * add_nl is set. */
typedef size_t (*writer_fn)(const void *arg, const char *name, char *buf, size_t cap);

static int print_written(writer_fn fn, const void *arg, const char *name, int add_nl)
{
    size_t n = fn(arg, name, NULL, 0);
    char *buf = malloc(n + 1);
    if (!buf) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    if (fn(arg, name, buf, n + 1) != n || fwrite(buf, 1, n, stdout) != n || (add_nl && putchar('\n') == EOF) ||
        fflush(stdout) != 0) {
        fprintf(stderr, PROG ": cannot write the output\n");
        free(buf);
        return 1;
    }
    free(buf);
    return 0;
}

static size_t w_format(const void *arg, const char *name, char *buf, size_t cap)
{
    (void)name;
    return dmm_heap_config_format(arg, buf, cap);
}

static size_t w_header(const void *arg, const char *name, char *buf, size_t cap)
{
    return dmm_heap_config_header(arg, name, buf, cap);
}

static size_t w_fields(const void *arg, const char *name, char *buf, size_t cap)
{
    (void)arg;
    (void)name;
    return dmm_heap_config_fields_json(buf, cap);
}

/* ---- the pool's config (--pool) ---- */

static int read_pool(const char *text, dmm_pool_config *cfg)
{
    const char *why = NULL;
    *cfg = dmm_pool_default_config();
    if (dmm_pool_config_parse(text, cfg, &why) != DMM_OK) {
        fprintf(stderr, PROG ": cannot read pool config '%s': %s\n", text, why ? why : "parse error");
        return -1;
    }
    return 0;
}

static size_t w_pool_format(const void *arg, const char *name, char *buf, size_t cap)
{
    (void)name;
    return dmm_pool_config_format(arg, buf, cap);
}

static size_t w_pool_header(const void *arg, const char *name, char *buf, size_t cap)
{
    return dmm_pool_config_header(arg, name, buf, cap);
}

static size_t w_pool_fields(const void *arg, const char *name, char *buf, size_t cap)
{
    (void)arg;
    (void)name;
    return dmm_pool_config_fields_json(buf, cap);
}

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run '" PROG " --help' for the usage)\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *cmd, *text = NULL, *name = NULL;
    int json = 0, pool = 0;
    dmm_heap_config cfg;
    dmm_pool_config pcfg;
    if (argc > 1 && !strcmp(argv[1], "--pool")) {
        pool = 1;
        argv++;
        argc--;
    }
    if (argc < 2)
        return bad_usage("%s", "no command given (check, format, header, fields)");
    cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "check") && strcmp(cmd, "format") && strcmp(cmd, "header") && strcmp(cmd, "fields"))
        return bad_usage("unknown command '%s' (check, format, header, fields)", cmd);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--name")) {
            if (strcmp(cmd, "header"))
                return bad_usage("--name is an option of 'header', not of '%s'", cmd);
            if (i + 1 >= argc)
                return bad_usage("%s needs a value", a);
            name = argv[++i];
        } else if (!strncmp(a, "--name=", 7) && !strcmp(cmd, "header")) {
            name = a + 7;
        } else if (!strcmp(a, "--json")) {
            if (strcmp(cmd, "fields"))
                return bad_usage("--json is an option of 'fields', not of '%s'", cmd);
            json = 1;
        } else if (a[0] == '-' && a[1] == '-') {
            return bad_usage("unknown option '%s'", a);
        } else if (!text && strcmp(cmd, "fields")) {
            text = a;
        } else {
            return bad_usage("unexpected argument '%s'", a);
        }
    }
    if (!strcmp(cmd, "fields")) {
        if (!json)
            return bad_usage("%s", "fields: give --json (the field list is written as JSON only)");
        return print_written(pool ? w_pool_fields : w_fields, NULL, NULL, 1);
    }
    if (!text)
        return bad_usage("%s: give the config TEXT (a preset name or key=value pairs)", cmd);
    if (pool) {
        /* parse also validates; "format" prints what was read */
        if (read_pool(text, &pcfg))
            return 1;
        return print_written(!strcmp(cmd, "header") ? w_pool_header : w_pool_format, &pcfg, name, strcmp(cmd, "header") != 0);
    }
    if (read_config(text, &cfg))
        return 1;
    if (!strcmp(cmd, "format"))
        return print_written(w_format, &cfg, NULL, 1);
    if (check_config(&cfg))
        return 1;
    if (!strcmp(cmd, "check"))
        return print_written(w_format, &cfg, NULL, 1);
    return print_written(w_header, &cfg, name, 0);
}
