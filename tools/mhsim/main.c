/*
 * tools/mhsim/main.c - dmm-mhsim: command line, reports (text, JSON, Markdown),
 * the platform-size sweep and the self-test.  docs/multiheap-sim.md.
 *
 * Exit status: 0 success; 1 a run failed (allocation failures with --strict,
 * the multi-heap checker, a self-test mismatch, an output file); 2 bad usage.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/heap.h"
#include "mhsim.h"
#include "tcommon.h"

static const char *prog = "dmm-mhsim";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dmm-mhsim [options]\n"
            "Deterministic mesh network-on-chip simulation of the multi-heap (docs/multiheap-sim.md).\n"
            "  --mesh WxH            mesh size, 2..8 each (default 2x2)\n"
            "  --policy P[,P...]     lazy|central|private|priority (default lazy; a list with --sweep)\n"
            "  --remote-free M       locked|queue (default locked)\n"
            "  --final-pass          lazy: wait on each skipped heap after a full round\n"
            "  --per-node BYTES      memory per node (default 256k)\n"
            "  --heap CONFIG         node heap config text (default: the multi-heap default)\n"
            "  --workload W          fast|gaussian|integral|matrix|all|spill|probe (default fast;\n"
            "                        all = the four kernels, reported one by one and averaged;\n"
            "                        spill = every core overflows its heap: remote contention)\n"
            "  --trace FILE          replay a dmmkit trace instead (thread t on node t %% nodes;\n"
            "                        an operation waits for the earlier ones on its object)\n"
            "  --seed N              workload seed (default 1)\n"
            "  --t-hop C --inject C --flit-bytes B --msg-bytes B\n"
            "  --service-alloc C --service-free C   cost model (defaults 2, 4, 16, 16, 40, 30)\n"
            "  --think C             cycles between two operations of a core (default 10)\n"
            "  --depth N             tasks outstanding per worker (default 2)\n"
            "  --compute-scale PCT   scales the per-task compute time (default 100)\n"
            "  --probe-home N        probe workload: the probing node (default the last)\n"
            "  --offline N           node N's heap goes out of service (a fault) ...\n"
            "  --offline-at CYCLES   ... at this simulated time (default 0: from the start)\n"
            "  --sweep               run the square meshes of --sizes for every --policy\n"
            "  --sizes A-B           sweep sizes (default 2-8: 2x2 .. 8x8)\n"
            "  --json FILE           self-describing JSON (schema dmm-mhsim/1; - = stdout)\n"
            "  --md FILE             Markdown table (sweep)\n"
            "  --strict              exit 1 if any allocation failed\n"
            "  --quiet               no text report\n"
            "  --self-test           check hop counts and the analytic zero-contention costs\n"
            "  --help\n");
}

static int die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see --help)\n");
    exit(2);
}

static unsigned parse_uint(const char *opt, const char *v, unsigned lo, unsigned hi)
{
    uint64_t x;
    if (tc_parse_u64(v, &x) != 0 || x < lo || x > hi)
        die_usage("%s: '%s' is not a number in %u..%u", opt, v, lo, hi);
    return (unsigned)x;
}

typedef struct opts {
    mhsim_params p;
    dmm_mh_policy policies[4];
    unsigned npol;
    bool all_workloads;
    bool sweep, strict, quiet, self_test;
    unsigned size_lo, size_hi;
    const char *json, *md;
    const char *trace_path;
    dmm_trace trace;
} opts;

/* ---- derived figures ---------------------------------------------------------- */
static uint64_t events(const mhsim_result *r) { return r->alloc_events + r->free_events; }
static double per(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }
static double cpe(const mhsim_result *r) { return per(r->alloc_cycles + r->free_cycles, events(r)); }
static double mpe(const mhsim_result *r) { return per(r->alloc_msgs + r->free_msgs, events(r)); }
static double hpe(const mhsim_result *r) { return per(r->alloc_hops + r->free_hops, events(r)); }

static void json_params(tj *j, const mhsim_params *p, const char *workload, bool sweep, const opts *o)
{
    char heap[512];
    dmm_heap_config hc = dmm_mh_default_config(1).heap;
    if (p->heap[0])
        dmm_heap_config_parse(p->heap, &hc, NULL);
    dmm_heap_config_format(&hc, heap, sizeof heap);
    tj_obj(j, "params");
    if (sweep) {
        tj_arr_compact(j, "policies");
        for (unsigned i = 0; i < o->npol; i++)
            tj_str(j, NULL, dmm_mh_policy_name(o->policies[i]));
        tj_arr_end(j);
        tj_u64(j, "size_min", o->size_lo);
        tj_u64(j, "size_max", o->size_hi);
    } else {
        tj_u64(j, "mesh_width", p->width);
        tj_u64(j, "mesh_height", p->height);
        tj_u64(j, "nodes", (uint64_t)p->width * p->height);
        tj_str(j, "policy", dmm_mh_policy_name(p->policy));
    }
    tj_str(j, "remote_free", p->remote_free == DMM_MH_FREE_QUEUE ? "queue" : "locked");
    tj_bool(j, "final_pass", p->final_pass);
    tj_u64(j, "per_node", p->per_node);
    tj_str(j, "heap", heap);
    tj_str(j, "workload", workload);
    if (o->trace_path) {
        const char *base = strrchr(o->trace_path, '/');
        tj_str(j, "trace", base ? base + 1 : o->trace_path);
        tj_u64(j, "trace_hash", dmm_trace_hash(&o->trace));
        tj_u64(j, "trace_threads", o->trace.threads);
    }
    tj_u64(j, "seed", p->seed);
    tj_obj(j, "costs");
    tj_u64(j, "t_hop", p->t_hop);
    tj_u64(j, "inject", p->inject);
    tj_u64(j, "flit_bytes", p->flit_bytes);
    tj_u64(j, "msg_bytes", p->msg_bytes);
    tj_u64(j, "service_alloc", p->svc_alloc);
    tj_u64(j, "service_free", p->svc_free);
    tj_obj_end(j);
    tj_u64(j, "think", p->think);
    tj_u64(j, "depth", p->depth);
    tj_u64(j, "compute_scale_pct", p->compute_pct);
    if (p->offline != DMM_MH_NO_NODE)
        tj_u64(j, "offline", p->offline);
    else
        tj_null(j, "offline");
    tj_u64(j, "offline_at", p->offline_at);
    if (strcmp(workload, "probe") == 0)
        tj_u64(j, "probe_home", p->probe_home == DMM_MH_NO_NODE ? p->width * p->height - 1 : p->probe_home);
    tj_obj_end(j);
}

static void json_results(tj *j, const char *key, const mhsim_result *r)
{
    tj_obj(j, key);
    tj_u64(j, "events", events(r));
    tj_u64(j, "alloc_events", r->alloc_events);
    tj_u64(j, "free_events", r->free_events);
    tj_u64(j, "failures", r->failures);
    tj_dbl(j, "cycles_per_event", cpe(r));
    tj_dbl(j, "cycles_per_alloc", per(r->alloc_cycles, r->alloc_events));
    tj_dbl(j, "cycles_per_free", per(r->free_cycles, r->free_events));
    tj_u64(j, "event_cycles_total", r->alloc_cycles + r->free_cycles);
    tj_u64(j, "makespan_cycles", r->makespan);
    tj_u64(j, "offline_time", r->offline_time);
    tj_u64(j, "messages", r->alloc_msgs + r->free_msgs);
    tj_dbl(j, "messages_per_event", mpe(r));
    tj_u64(j, "hops", r->alloc_hops + r->free_hops);
    tj_dbl(j, "hops_per_event", hpe(r));
    tj_u64(j, "lock_wait_cycles", r->lock_wait);
    tj_u64(j, "busy_tries", r->busy_tries);
    tj_u64(j, "task_messages", r->task_msgs);
    tj_u64(j, "task_hops", r->task_hops);
    tj_u64(j, "unattributed_events", r->unattributed);
    tj_str(j, "check", r->check_detail);
    tj_obj_end(j);
}

static void json_nodes(tj *j, const mhsim_result *r, unsigned w)
{
    tj_arr(j, "nodes");
    for (unsigned i = 0; i < r->nodes; i++) {
        const dmm_mh_node_stats *st = &r->node[i].st;
        tj_obj(j, NULL);
        tj_u64(j, "node", i);
        tj_u64(j, "x", i % w);
        tj_u64(j, "y", i / w);
        tj_u64(j, "local_allocs", st->local_allocs);
        tj_u64(j, "remote_allocs", st->remote_allocs);
        tj_u64(j, "served_remote", st->served_remote);
        tj_u64(j, "skipped_busy", st->skipped_busy);
        tj_u64(j, "remote_frees", st->remote_frees);
        tj_u64(j, "queued_frees", st->queued_frees);
        tj_u64(j, "failures", st->failures);
        tj_u64(j, "offline_frees", st->offline_frees);
        tj_obj_end(j);
    }
    tj_arr_end(j);
}

static void text_report(const mhsim_params *p, const mhsim_result *r)
{
    printf("dmm-mhsim: mesh %ux%u (%u nodes), policy %s, remote free %s%s, workload %s, seed %" PRIu64
           ", %" PRIu64 " B per node\n",
           p->width, p->height, r->nodes, dmm_mh_policy_name(p->policy),
           p->remote_free == DMM_MH_FREE_QUEUE ? "queue" : "locked", p->final_pass ? ", final pass" : "",
           p->workload, p->seed, p->per_node);
    printf("events: %" PRIu64 " (%" PRIu64 " allocs, %" PRIu64 " frees), failures %" PRIu64 "\n", events(r),
           r->alloc_events, r->free_events, r->failures);
    printf("cycles/event %.2f (alloc %.2f, free %.2f); event cycles %" PRIu64 "; makespan %" PRIu64 " cycles\n",
           cpe(r), per(r->alloc_cycles, r->alloc_events), per(r->free_cycles, r->free_events),
           r->alloc_cycles + r->free_cycles, r->makespan);
    printf("messages/event %.3f, hops/event %.3f; lock wait %" PRIu64 " cycles; busy tries %" PRIu64
           "; task messages %" PRIu64 "\n",
           mpe(r), hpe(r), r->lock_wait, r->busy_tries, r->task_msgs);
    printf("%5s %7s %7s %7s %7s %7s %7s %7s %7s\n", "node", "local", "remote", "elsewh", "skipbsy", "rfrees",
           "queued", "offfree", "fail");
    for (unsigned i = 0; i < r->nodes; i++) {
        const dmm_mh_node_stats *st = &r->node[i].st;
        printf("%5u %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64
               "\n",
               i, st->local_allocs, st->remote_allocs, st->served_remote, st->skipped_busy, st->remote_frees,
               st->queued_frees, st->offline_frees, st->failures);
    }
    if (p->offline != DMM_MH_NO_NODE)
        printf("node %u out of service from cycle %" PRIu64 "\n", p->offline, p->offline_at ? r->offline_time : 0);
    printf("check: %s\n", r->check_detail);
}

static int open_out(tc_out *o, const char *path, tj *j)
{
    if (tc_out_open(o, prog, path) != 0)
        return -1;
    tj_init(j, o->f);
    return 0;
}

/* ---- single run ----------------------------------------------------------------- */
static int run_single(opts *o)
{
    const char *wl[5];
    unsigned nw = 0;
    if (o->all_workloads)
        for (unsigned i = 0; mhsim_workloads[i]; i++)
            wl[nw++] = mhsim_workloads[i];
    else
        wl[nw++] = o->p.workload;
    static mhsim_result res[4];
    int bad = 0;
    for (unsigned i = 0; i < nw; i++) {
        mhsim_params p = o->p;
        snprintf(p.workload, sizeof p.workload, "%s", wl[i]);
        const char *err = NULL;
        if (mhsim_run(&p, &res[i], &err) != 0) {
            fprintf(stderr, "%s: %s\n", prog, err);
            return 1;
        }
        if (!o->quiet) {
            text_report(&p, &res[i]);
            if (i + 1 < nw)
                printf("\n");
        }
        if (!res[i].check_ok || (o->strict && res[i].failures))
            bad = 1;
        if (!res[i].check_ok)
            fprintf(stderr, "%s: %s: multi-heap check failed: %s\n", prog, wl[i], res[i].check_detail);
        if (o->strict && res[i].failures)
            fprintf(stderr, "%s: %s: %" PRIu64 " allocations failed\n", prog, wl[i], res[i].failures);
    }
    if (o->json) {
        tc_out out;
        tj j;
        if (open_out(&out, o->json, &j) != 0)
            return 1;
        tj_obj(&j, NULL);
        tj_str(&j, "schema", "dmm-mhsim/1");
        tj_str(&j, "mode", "run");
        tj_str(&j, "commit", tc_commit());
        json_params(&j, &o->p, o->all_workloads ? "all" : o->p.workload, false, o);
        tj_arr(&j, "runs");
        for (unsigned i = 0; i < nw; i++) {
            tj_obj(&j, NULL);
            tj_str(&j, "workload", wl[i]);
            json_results(&j, "results", &res[i]);
            json_nodes(&j, &res[i], o->p.width);
            tj_obj_end(&j);
        }
        tj_arr_end(&j);
        tj_obj_end(&j);
        if (tc_out_close(&out, prog, tj_finish(&j) == 0) != 0)
            return 1;
    }
    return bad;
}

/* ---- sweep ---------------------------------------------------------------------- */
typedef struct cell {
    double cpe, mpe, hpe;
    uint64_t failures, makespan;
} cell;

static int run_sweep(opts *o)
{
    const char *wl[5];
    unsigned nw = 0;
    if (o->all_workloads)
        for (unsigned i = 0; mhsim_workloads[i]; i++)
            wl[nw++] = mhsim_workloads[i];
    else
        wl[nw++] = o->p.workload;
    unsigned nsz = o->size_hi - o->size_lo + 1;
    /* per policy, size, workload */
    size_t ncell = (size_t)o->npol * nsz * nw;
    cell *cells = calloc(ncell, sizeof *cells);
    mhsim_result *r = malloc(sizeof *r);
    if (!cells || !r) {
        fprintf(stderr, "%s: out of memory\n", prog);
        free(cells);
        free(r);
        return 1;
    }
    int bad = 0;
    tc_out out;
    tj j;
    bool js = o->json != NULL;
    if (js && open_out(&out, o->json, &j) != 0) {
        free(cells);
        free(r);
        return 1;
    }
    if (js) {
        tj_obj(&j, NULL);
        tj_str(&j, "schema", "dmm-mhsim/1");
        tj_str(&j, "mode", "sweep");
        tj_str(&j, "commit", tc_commit());
        json_params(&j, &o->p, o->all_workloads ? "all" : o->p.workload, true, o);
        tj_arr(&j, "runs");
    }
    for (unsigned pi = 0; pi < o->npol; pi++)
        for (unsigned si = 0; si < nsz; si++)
            for (unsigned wi = 0; wi < nw; wi++) {
                mhsim_params p = o->p;
                p.policy = o->policies[pi];
                p.width = p.height = o->size_lo + si;
                snprintf(p.workload, sizeof p.workload, "%s", wl[wi]);
                const char *err = NULL;
                if (mhsim_run(&p, r, &err) != 0) {
                    fprintf(stderr, "%s: %s\n", prog, err);
                    free(cells);
                    free(r);
                    if (js)
                        tc_out_close(&out, prog, 0);
                    return 1;
                }
                cell *c = &cells[((size_t)pi * nsz + si) * nw + wi];
                c->cpe = cpe(r);
                c->mpe = mpe(r);
                c->hpe = hpe(r);
                c->failures = r->failures;
                c->makespan = r->makespan;
                if (!r->check_ok) {
                    bad = 1;
                    fprintf(stderr, "%s: %s %ux%u %s: multi-heap check failed: %s\n", prog,
                            dmm_mh_policy_name(p.policy), p.width, p.height, wl[wi], r->check_detail);
                }
                if (o->strict && r->failures) {
                    bad = 1;
                    fprintf(stderr, "%s: %s %ux%u %s: %" PRIu64 " allocations failed\n", prog,
                            dmm_mh_policy_name(p.policy), p.width, p.height, wl[wi], r->failures);
                }
                if (js) {
                    tj_obj(&j, NULL);
                    tj_str(&j, "policy", dmm_mh_policy_name(p.policy));
                    tj_u64(&j, "mesh_width", p.width);
                    tj_u64(&j, "mesh_height", p.height);
                    tj_str(&j, "workload", wl[wi]);
                    json_results(&j, "results", r);
                    json_nodes(&j, r, p.width);
                    tj_obj_end(&j);
                }
            }
    /* summary: mean over workloads per (policy, size), growth per step */
    FILE *md = NULL;
    char growth[1024] = "";
    tc_out mdo;
    if (o->md) {
        if (tc_out_open(&mdo, prog, o->md) != 0)
            bad = 1;
        else
            md = mdo.f;
    }
    if (js) {
        tj_arr_end(&j);
        tj_arr(&j, "summary");
    }
    if (!o->quiet)
        printf("%-9s %-5s %12s %12s %10s %10s %9s %9s\n", "policy", "mesh", "cycles/evt", "growth", "msgs/evt",
               "hops/evt", "makespan", "failures");
    if (md) {
        fprintf(md, "Mean over the workloads (%s). growth = change of cycles/event from the previous size.\n\n",
                o->all_workloads ? "fast, gaussian, integral, matrix" : o->p.workload);
        fprintf(md, "| policy | mesh | cycles/event | growth | messages/event | hops/event | makespan (cycles) | "
                    "failures |");
        for (unsigned wi = 0; nw > 1 && wi < nw; wi++)
            fprintf(md, " %s c/e |", wl[wi]);
        fprintf(md, "\n|---|---|---:|---:|---:|---:|---:|---:|");
        for (unsigned wi = 0; nw > 1 && wi < nw; wi++)
            fprintf(md, "---:|");
        fprintf(md, "\n");
    }
    for (unsigned pi = 0; pi < o->npol; pi++) {
        double prev = 0, first = 0, last = 0;
        for (unsigned si = 0; si < nsz; si++) {
            double c = 0, m = 0, h = 0, ms = 0;
            uint64_t f = 0;
            for (unsigned wi = 0; wi < nw; wi++) {
                cell *ce = &cells[((size_t)pi * nsz + si) * nw + wi];
                c += ce->cpe;
                m += ce->mpe;
                h += ce->hpe;
                ms += (double)ce->makespan;
                f += ce->failures;
            }
            c /= nw;
            m /= nw;
            h /= nw;
            ms /= nw;
            double g = si ? (c / prev - 1.0) * 100.0 : 0.0;
            if (!si)
                first = c;
            last = c;
            unsigned sz = o->size_lo + si;
            const char *pn = dmm_mh_policy_name(o->policies[pi]);
            if (!o->quiet) {
                char gs[32] = "-";
                if (si)
                    snprintf(gs, sizeof gs, "%+.1f%%", g);
                printf("%-9s %ux%-3u %12.2f %12s %10.3f %10.3f %9.0f %9" PRIu64 "\n", pn, sz, sz, c, gs, m, h, ms,
                       f);
            }
            if (md) {
                char gs[32] = "-";
                if (si)
                    snprintf(gs, sizeof gs, "%+.1f%%", g);
                fprintf(md, "| %s | %ux%u | %.2f | %s | %.3f | %.3f | %.0f | %" PRIu64 " |", pn, sz, sz, c, gs, m, h,
                        ms, f);
                for (unsigned wi = 0; nw > 1 && wi < nw; wi++)
                    fprintf(md, " %.2f |", cells[((size_t)pi * nsz + si) * nw + wi].cpe);
                fprintf(md, "\n");
            }
            if (js) {
                tj_obj(&j, NULL);
                tj_str(&j, "policy", pn);
                tj_u64(&j, "size", sz);
                tj_dbl(&j, "cycles_per_event", c);
                tj_dbl(&j, "messages_per_event", m);
                tj_dbl(&j, "hops_per_event", h);
                tj_dbl(&j, "makespan_cycles", ms);
                tj_u64(&j, "failures", f);
                if (si)
                    tj_dbl(&j, "growth_pct", g);
                else
                    tj_null(&j, "growth_pct");
                tj_obj_end(&j);
            }
            prev = c;
        }
        if (nsz > 1 && first > 0) {
            /* geometric mean growth per step */
            double gm = pow(last / first, 1.0 / (double)(nsz - 1));
            if (!o->quiet)
                printf("%-9s mean growth per size step %+.1f%% (%.2f -> %.2f cycles/event)\n",
                       dmm_mh_policy_name(o->policies[pi]), (gm - 1) * 100, first, last);
            size_t used = strlen(growth);
            if (used < sizeof growth)
                snprintf(growth + used, sizeof growth - used,
                         "- %s: mean growth per size step %+.1f%% (geometric mean, %.2f -> %.2f cycles/event)\n",
                         dmm_mh_policy_name(o->policies[pi]), (gm - 1) * 100, first, last);
        }
    }
    if (md && growth[0])
        fprintf(md, "\n%s", growth);
    if (md && tc_out_close(&mdo, prog, 1) != 0)
        bad = 1;
    if (js) {
        tj_arr_end(&j);
        tj_obj_end(&j);
        if (tc_out_close(&out, prog, tj_finish(&j) == 0) != 0)
            bad = 1;
    }
    free(cells);
    free(r);
    return bad;
}

/* ---- self-test -------------------------------------------------------------------- */
static int st_fail;
static void st_expect(const char *what, double got, double want)
{
    if (got != want) {
        fprintf(stderr, "%s: self-test: %s: got %.3f, expected %.3f\n", prog, what, got, want);
        st_fail = 1;
    } else {
        printf("ok   %s = %.3f\n", what, got);
    }
}

static int self_test(const mhsim_params *base)
{
    /* 1. XY hops on a 4x4 mesh, against |dx|+|dy| and the library's distance */
    dmm_mh_config cfg = dmm_mh_default_config(16);
    cfg.mesh_width = 4;
    size_t bytes = dmm_mh_buffer_size(&cfg, 16384);
    void *buf = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    dmm_mh *mh = NULL;
    if (!buf || dmm_mh_init(&mh, buf, bytes, &cfg) != DMM_OK) {
        fprintf(stderr, "%s: self-test: cannot make a 4x4 multi-heap\n", prog);
        free(buf);
        return 1;
    }
    unsigned hop_bad = 0;
    for (unsigned a = 0; a < 16; a++)
        for (unsigned b = 0; b < 16; b++) {
            int dx = (int)(a % 4) - (int)(b % 4), dy = (int)(a / 4) - (int)(b / 4);
            unsigned want = (unsigned)((dx < 0 ? -dx : dx) + (dy < 0 ? -dy : dy));
            if (mhsim_hops(4, a, b) != want || dmm_mh_distance(mh, a, b) != want) {
                fprintf(stderr, "%s: self-test: hops %u->%u: sim %u, library %u, expected %u\n", prog, a, b,
                        mhsim_hops(4, a, b), dmm_mh_distance(mh, a, b), want);
                hop_bad++;
            }
        }
    dmm_mh_destroy(mh);
    free(buf);
    st_expect("4x4 hop table mismatches", hop_bad, 0);
    st_expect("4x4 hops 0->15", mhsim_hops(4, 0, 15), 6);
    st_expect("4x4 hops 3->12", mhsim_hops(4, 3, 12), 6);
    st_expect("4x4 hops 5->6", mhsim_hops(4, 5, 6), 1);

    /* 2. zero contention: one core allocates then frees, every other idles */
    mhsim_params p = *base;
    p.width = p.height = 4;
    snprintf(p.workload, sizeof p.workload, "probe");
    uint64_t flits = (p.msg_bytes + p.flit_bytes - 1) / p.flit_bytes;
    static mhsim_result r;
    const char *err = NULL;
    struct {
        dmm_mh_policy pol;
        dmm_mh_remote_free rf;
        unsigned home;
        unsigned target; /* the heap that serves the probe */
        unsigned offline;
        bool queued;     /* the free is one message to the owner's queue */
    } cases[] = {
        {DMM_MH_LAZY, DMM_MH_FREE_LOCKED, 15, 15, DMM_MH_NO_NODE, false},    /* local: service only */
        {DMM_MH_PRIVATE, DMM_MH_FREE_LOCKED, 5, 5, DMM_MH_NO_NODE, false},   /* local */
        {DMM_MH_CENTRAL, DMM_MH_FREE_LOCKED, 15, 0, DMM_MH_NO_NODE, false},  /* remote, 6 hops */
        {DMM_MH_CENTRAL, DMM_MH_FREE_LOCKED, 6, 0, DMM_MH_NO_NODE, false},   /* remote, 3 hops */
        {DMM_MH_PRIORITY, DMM_MH_FREE_LOCKED, 10, 10, DMM_MH_NO_NODE, false}, /* local */
        /* home heap out of service: the nearest heap (ties by id: 11 before 14) */
        {DMM_MH_LAZY, DMM_MH_FREE_LOCKED, 15, 11, 15, false},
        {DMM_MH_PRIORITY, DMM_MH_FREE_LOCKED, 15, 11, 15, false},
        {DMM_MH_LAZY, DMM_MH_FREE_QUEUE, 15, 11, 15, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        p.policy = cases[i].pol;
        p.remote_free = cases[i].rf;
        p.probe_home = cases[i].home;
        p.offline = cases[i].offline;
        if (mhsim_run(&p, &r, &err) != 0) {
            fprintf(stderr, "%s: self-test: %s\n", prog, err);
            return 1;
        }
        uint64_t hops = mhsim_hops(4, cases[i].home, cases[i].target);
        uint64_t msg = hops ? p.inject + hops * p.t_hop + flits : 0;
        uint64_t nmsg = hops ? 2 : 0;
        char what[128];
        printf("case: %s, home %u, %s remote free, offline %d\n", dmm_mh_policy_name(p.policy), cases[i].home,
               cases[i].queued ? "queued" : "locked", cases[i].offline == DMM_MH_NO_NODE ? -1 : (int)cases[i].offline);
        snprintf(what, sizeof what, "%s home %u: alloc cycles", dmm_mh_policy_name(p.policy), cases[i].home);
        st_expect(what, (double)r.alloc_cycles, (double)(2 * msg + p.svc_alloc));
        snprintf(what, sizeof what, "%s home %u: free cycles", dmm_mh_policy_name(p.policy), cases[i].home);
        uint64_t free_cost = cases[i].queued ? msg : 2 * msg + p.svc_free;
        uint64_t free_msgs = cases[i].queued ? 1 : nmsg;
        st_expect(what, (double)r.free_cycles, (double)free_cost);
        snprintf(what, sizeof what, "%s home %u: messages", dmm_mh_policy_name(p.policy), cases[i].home);
        st_expect(what, (double)(r.alloc_msgs + r.free_msgs), (double)(nmsg + free_msgs));
        snprintf(what, sizeof what, "%s home %u: hops", dmm_mh_policy_name(p.policy), cases[i].home);
        st_expect(what, (double)(r.alloc_hops + r.free_hops), (double)((nmsg + free_msgs) * hops));
        snprintf(what, sizeof what, "%s home %u: makespan", dmm_mh_policy_name(p.policy), cases[i].home);
        /* alloc, think, 1000 cycles of work, free, think */
        st_expect(what, (double)r.makespan,
                  (double)(2 * msg + p.svc_alloc + p.think + 1000 + free_cost + p.think));
        st_expect("lock wait", (double)r.lock_wait, 0);
        st_expect("failures", (double)r.failures, 0);
        st_expect("unattributed events", (double)r.unattributed, 0);
        if (!r.check_ok) {
            fprintf(stderr, "%s: self-test: check failed: %s\n", prog, r.check_detail);
            st_fail = 1;
        }
    }
    /* 3. contention: on 2x2, node 3's heap is out of service and node 1 (its
     * nearest heap) is allocating at time 0.  Lazy finds heap 1 busy, skips
     * it and is served by heap 2; priority waits for heap 1. */
    p = *base;
    p.width = p.height = 2;
    snprintf(p.workload, sizeof p.workload, "probe");
    p.probe_home = 3;
    p.probe_busy = 1;
    p.offline = 3;
    uint64_t m1 = p.inject + p.t_hop + flits; /* a one-hop message */
    for (int pri = 0; pri < 2; pri++) {
        p.policy = pri ? DMM_MH_PRIORITY : DMM_MH_LAZY;
        if (mhsim_run(&p, &r, &err) != 0) {
            fprintf(stderr, "%s: self-test: %s\n", prog, err);
            return 1;
        }
        printf("case: %s, node 3 offline, node 1 busy at time 0\n", dmm_mh_policy_name(p.policy));
        /* node 1's own allocation is local (svc_alloc); node 3's: */
        uint64_t want = pri ? (m1 > p.svc_alloc ? m1 : p.svc_alloc) + p.svc_alloc + m1 /* wait, serve, reply */
                            : 2 * m1 + 2 * m1 + p.svc_alloc;                            /* busy round trip, then heap 2 */
        st_expect(pri ? "priority: alloc cycles (1 local + 1 waiting)" : "lazy: alloc cycles (1 local + 1 skipping)",
                  (double)r.alloc_cycles, (double)(p.svc_alloc + want));
        st_expect("busy tries", (double)r.busy_tries, pri ? 0 : 1);
        st_expect("lock wait", (double)r.lock_wait, pri && p.svc_alloc > m1 ? (double)(p.svc_alloc - m1) : 0);
        st_expect("heap 1 remote allocs", (double)r.node[1].st.remote_allocs, pri ? 1 : 0);
        st_expect("heap 2 remote allocs", (double)r.node[2].st.remote_allocs, pri ? 0 : 1);
        st_expect("node 3 skipped busy", (double)r.node[3].st.skipped_busy, pri ? 0 : 1);
        if (!r.check_ok) {
            fprintf(stderr, "%s: self-test: check failed: %s\n", prog, r.check_detail);
            st_fail = 1;
        }
    }
    printf(st_fail ? "self-test FAILED\n" : "self-test passed\n");
    return st_fail;
}

/* ---- options ------------------------------------------------------------------------ */
enum {
    O_MESH = 256, O_POLICY, O_RFREE, O_FINAL, O_PERNODE, O_HEAP, O_WORKLOAD, O_SEED, O_THOP, O_INJECT, O_FLIT,
    O_MSG, O_SALLOC, O_SFREE, O_THINK, O_DEPTH, O_CSCALE, O_PROBE, O_OFFLINE, O_OFFAT, O_TRACE, O_SWEEP, O_SIZES, O_JSON, O_MD, O_STRICT,
    O_QUIET, O_SELFTEST, O_HELP
};

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"mesh", required_argument, 0, O_MESH},
        {"policy", required_argument, 0, O_POLICY},
        {"remote-free", required_argument, 0, O_RFREE},
        {"final-pass", no_argument, 0, O_FINAL},
        {"per-node", required_argument, 0, O_PERNODE},
        {"heap", required_argument, 0, O_HEAP},
        {"workload", required_argument, 0, O_WORKLOAD},
        {"seed", required_argument, 0, O_SEED},
        {"t-hop", required_argument, 0, O_THOP},
        {"inject", required_argument, 0, O_INJECT},
        {"flit-bytes", required_argument, 0, O_FLIT},
        {"msg-bytes", required_argument, 0, O_MSG},
        {"service-alloc", required_argument, 0, O_SALLOC},
        {"service-free", required_argument, 0, O_SFREE},
        {"think", required_argument, 0, O_THINK},
        {"depth", required_argument, 0, O_DEPTH},
        {"compute-scale", required_argument, 0, O_CSCALE},
        {"probe-home", required_argument, 0, O_PROBE},
        {"offline", required_argument, 0, O_OFFLINE},
        {"offline-at", required_argument, 0, O_OFFAT},
        {"trace", required_argument, 0, O_TRACE},
        {"sweep", no_argument, 0, O_SWEEP},
        {"sizes", required_argument, 0, O_SIZES},
        {"json", required_argument, 0, O_JSON},
        {"md", required_argument, 0, O_MD},
        {"strict", no_argument, 0, O_STRICT},
        {"quiet", no_argument, 0, O_QUIET},
        {"self-test", no_argument, 0, O_SELFTEST},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    static opts o;
    mhsim_default_params(&o.p);
    dmm_trace_init(&o.trace);
    o.policies[0] = DMM_MH_LAZY;
    o.npol = 1;
    o.size_lo = 2;
    o.size_hi = 8;
    bool mesh_given = false;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        const char *v = optarg;
        switch (ch) {
        case O_MESH: {
            unsigned w, h;
            char extra;
            if (sscanf(v, "%ux%u%c", &w, &h, &extra) != 2 || w < 2 || w > 8 || h < 2 || h > 8)
                die_usage("--mesh: '%s' is not WxH with W and H in 2..8", v);
            o.p.width = w;
            o.p.height = h;
            mesh_given = true;
            break;
        }
        case O_POLICY: {
            o.npol = 0;
            char tmp[128];
            snprintf(tmp, sizeof tmp, "%s", v);
            for (char *tok = strtok(tmp, ","); tok; tok = strtok(NULL, ",")) {
                dmm_mh_policy pol;
                if (dmm_mh_policy_from_name(tok, &pol) != DMM_OK)
                    die_usage("--policy: unknown policy '%s' (lazy, central, private, priority)", tok);
                if (o.npol == 4)
                    die_usage("--policy: at most 4 policies");
                o.policies[o.npol++] = pol;
            }
            if (!o.npol)
                die_usage("--policy: empty");
            break;
        }
        case O_RFREE:
            if (strcmp(v, "locked") == 0)
                o.p.remote_free = DMM_MH_FREE_LOCKED;
            else if (strcmp(v, "queue") == 0)
                o.p.remote_free = DMM_MH_FREE_QUEUE;
            else
                die_usage("--remote-free: '%s' is not locked or queue", v);
            break;
        case O_FINAL:
            o.p.final_pass = true;
            break;
        case O_PERNODE: {
            uint64_t b;
            if (dmm_parse_size(v, strlen(v), &b) != 0 || b < 4096 || b > (1ull << 30))
                die_usage("--per-node: '%s' is not a size in 4k..1g", v);
            o.p.per_node = b;
            break;
        }
        case O_HEAP: {
            dmm_heap_config hc = dmm_mh_default_config(1).heap;
            const char *perr = NULL;
            if (strlen(v) >= sizeof o.p.heap || dmm_heap_config_parse(v, &hc, &perr) != DMM_OK)
                die_usage("--heap: '%s': %s", v, perr ? perr : "too long");
            snprintf(o.p.heap, sizeof o.p.heap, "%s", v);
            break;
        }
        case O_WORKLOAD:
            if (strcmp(v, "all") == 0)
                o.all_workloads = true;
            else if (mhsim_workload_known(v)) {
                o.all_workloads = false;
                snprintf(o.p.workload, sizeof o.p.workload, "%s", v);
            } else
                die_usage("--workload: unknown workload '%s' (fast, gaussian, integral, matrix, all, probe)", v);
            break;
        case O_SEED: {
            uint64_t x;
            if (tc_parse_u64(v, &x) != 0)
                die_usage("--seed: '%s' is not a number", v);
            o.p.seed = x;
            break;
        }
        case O_THOP: o.p.t_hop = parse_uint("--t-hop", v, 0, 100000); break;
        case O_INJECT: o.p.inject = parse_uint("--inject", v, 0, 100000); break;
        case O_FLIT: o.p.flit_bytes = parse_uint("--flit-bytes", v, 1, 4096); break;
        case O_MSG: o.p.msg_bytes = parse_uint("--msg-bytes", v, 0, 65536); break;
        case O_SALLOC: o.p.svc_alloc = parse_uint("--service-alloc", v, 0, 1000000); break;
        case O_SFREE: o.p.svc_free = parse_uint("--service-free", v, 0, 1000000); break;
        case O_THINK: o.p.think = parse_uint("--think", v, 0, 1000000); break;
        case O_DEPTH: o.p.depth = parse_uint("--depth", v, 1, 1000); break;
        case O_CSCALE: o.p.compute_pct = parse_uint("--compute-scale", v, 0, 100000); break;
        case O_PROBE: o.p.probe_home = parse_uint("--probe-home", v, 0, 255); break;
        case O_TRACE: o.trace_path = v; break;
        case O_OFFLINE: o.p.offline = parse_uint("--offline", v, 0, 255); break;
        case O_OFFAT: o.p.offline_at = parse_uint("--offline-at", v, 0, 4000000000u); break;
        case O_SWEEP: o.sweep = true; break;
        case O_SIZES: {
            unsigned a, b;
            char extra;
            int k = sscanf(v, "%u-%u%c", &a, &b, &extra);
            if (k == 1)
                b = a;
            if ((k != 1 && k != 2) || a < 2 || b > 8 || a > b)
                die_usage("--sizes: '%s' is not A-B with 2 <= A <= B <= 8", v);
            o.size_lo = a;
            o.size_hi = b;
            break;
        }
        case O_JSON: o.json = v; break;
        case O_MD: o.md = v; break;
        case O_STRICT: o.strict = true; break;
        case O_QUIET: o.quiet = true; break;
        case O_SELFTEST: o.self_test = true; break;
        case O_HELP: usage(stdout); return 0;
        case '?':
        default:
            if (optopt)
                die_usage("option needs an argument or is unknown: '%s'", argv[optind - 1]);
            die_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die_usage("unexpected argument '%s'", argv[optind]);
    if (o.self_test)
        return self_test(&o.p);
    if (o.trace_path) {
        if (o.all_workloads || strcmp(o.p.workload, "fast") != 0)
            die_usage("--trace and --workload exclude each other");
        if (tc_load_trace(prog, o.trace_path, &o.trace) != 0)
            return 2;
        if (dmm_trace_compact(&o.trace, NULL) != 0) {
            fprintf(stderr, "%s: %s: out of memory\n", prog, o.trace_path);
            return 1;
        }
        snprintf(o.p.workload, sizeof o.p.workload, "trace");
        o.p.trace = &o.trace;
    }
    if (o.sweep) {
        if (mesh_given)
            die_usage("--mesh and --sweep exclude each other (use --sizes)");
        if (strcmp(o.p.workload, "probe") == 0 && !o.all_workloads)
            die_usage("--sweep runs the kernels or a trace, not the probe");
        int rc = run_sweep(&o);
        dmm_trace_free(&o.trace);
        return rc;
    }
    if (o.npol != 1)
        die_usage("--policy: a list needs --sweep");
    if (o.md)
        die_usage("--md is for --sweep");
    o.p.policy = o.policies[0];
    if (o.p.probe_home != DMM_MH_NO_NODE && o.p.probe_home >= o.p.width * o.p.height)
        die_usage("--probe-home: node %u is not on a %ux%u mesh", o.p.probe_home, o.p.width, o.p.height);
    if (o.p.offline != DMM_MH_NO_NODE && o.p.offline >= o.p.width * o.p.height)
        die_usage("--offline: node %u is not on a %ux%u mesh", o.p.offline, o.p.width, o.p.height);
    if (o.p.offline_at && o.p.offline == DMM_MH_NO_NODE)
        die_usage("--offline-at needs --offline N");
    int rc = run_single(&o);
    dmm_trace_free(&o.trace);
    return rc;
}
