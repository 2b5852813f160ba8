/*
 * tools/replay/main.c - dmm-replay: replays an allocation trace against an
 * allocator chosen by prefix (backends.h: dmm:CONFIG, system) and reports
 * speed, footprint and fragmentation (docs/replay.md).  The steps live in
 * options.c, run.c and report.c (run.h).
 *
 * Exit status: 0 done, 1 run-time failure (memory, threads, output files),
 * 2 bad usage, bad trace or bad configuration, 3 --expect mismatch, 4
 * --verify found a corrupted block (or the allocator's check failed).
 */
#include <stdio.h>
#include <string.h>

#include "../common/tcommon.h"
#include "run.h"

int main(int argc, char **argv)
{
    rp_options o;
    rp_run r;
    int rc;
    if ((rc = rp_parse_options(argc, argv, &o)) >= 0)
        return rc;
    if (o.check_configs)
        return rpx_check_configs(PROG, o.check_configs);
    if (o.build_info) {
        tj j;
        tj_init(&j, stdout);
        tj_obj(&j, NULL);
        tc_json_build(&j, "build");
        tj_obj_end(&j);
        return tj_finish(&j) ? RP_EXIT_RUNTIME : RP_EXIT_OK;
    }
    if ((rc = rp_run_setup(&r, &o)) >= 0) {
        rp_run_free(&r);
        return rc;
    }
    rc = rp_run_measure(&r);
    if (!o.count_sweep && (rc == RP_EXIT_OK || rc == RP_EXIT_VERIFY)) {
        FILE *console = o.quiet ? NULL : o.json && !strcmp(o.json, "-") ? stderr : stdout;
        if (rp_report(&r, console) && rc == RP_EXIT_OK)
            rc = RP_EXIT_RUNTIME;
    }
    rp_run_free(&r);
    return rc;
}
