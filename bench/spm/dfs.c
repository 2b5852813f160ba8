/*
 * bench/spm/dfs.c - the managed iterative DFS (bench/workloads/programs/dfs.c):
 * adjacency nodes, per-round arrays and the malloc'ed stack frames all in
 * global memory; every access through hm.h (p2s before, s2p after).
 */
#include "prog_common.h"
#include "hm.h"

typedef struct adjn {
    uint32_t to;
    hm_ref next;
} adjn;

typedef struct frame {
    uint32_t v;
    hm_ref it;    /* next neighbour to look at (an adjn) */
    hm_ref below; /* the frame below */
} frame;

static int prog_main(int argc, char **argv)
{
    uint64_t n = 20000, deg = 3, rounds = 4, seed = 1;
    prog_opt opts[] = {
        {"-n", "--nodes", &n, 1, 1u << 24, "vertices"},
        {"-d", "--degree", &deg, 0, 1000, "average degree (edges = n * degree / 2)"},
        {"-r", "--rounds", &rounds, 1, 1u << 16, "searches of the whole graph"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed"},
    };
    prog_rng r;
    prog_sum s;
    hm_ref adj; /* n hm_refs */
    uint64_t m, pushes = 0, max_depth = 0, comps_first = 0;

    prog_parse(argc, argv, "Iterative DFS (managed); a list node per edge end, a malloc'ed stack frame per push.",
               opts, sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);
    m = n * deg / 2;
    adj = HM_CALLOC(n, sizeof(hm_ref));
    for (uint64_t e = 0; e < m; e++) {
        uint32_t a = (uint32_t)rng_below(&r, n), b = (uint32_t)rng_below(&r, n);
        hm_ref x = HM_MALLOC(sizeof(adjn)), y = HM_MALLOC(sizeof(adjn));
        HM_SET(adjn, x, to, b);
        HM_SET(adjn, x, next, HM_AGET(hm_ref, adj, a));
        HM_ASET(hm_ref, adj, a, x);
        HM_SET(adjn, y, to, a);
        HM_SET(adjn, y, next, HM_AGET(hm_ref, adj, b));
        HM_ASET(hm_ref, adj, b, y);
    }

    for (uint64_t round = 0; round < rounds; round++) {
        hm_ref order = HM_MALLOC(n * sizeof(uint32_t));
        hm_ref disc = HM_MALLOC(n * sizeof(uint32_t)), fin = HM_MALLOC(n * sizeof(uint32_t));
        uint64_t clock = 0, comps = 0, tree_edges = 0;
        for (uint32_t i = 0; i < n; i++) {
            HM_ASET(uint32_t, order, i, i);
            HM_ASET(uint32_t, disc, i, UINT32_MAX);
        }
        for (uint64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
            uint64_t j = rng_below(&r, i + 1);
            uint32_t t = HM_AGET(uint32_t, order, i);
            HM_ASET(uint32_t, order, i, HM_AGET(uint32_t, order, j));
            HM_ASET(uint32_t, order, j, t);
        }
        for (uint64_t i = 0; i < n; i++) {
            uint32_t root = HM_AGET(uint32_t, order, i);
            hm_ref top;
            uint64_t depth = 1;
            if (HM_AGET(uint32_t, disc, root) != UINT32_MAX)
                continue;
            comps++;
            top = HM_MALLOC(sizeof(frame));
            pushes++;
            HM_SET(frame, top, v, root);
            HM_SET(frame, top, it, HM_AGET(hm_ref, adj, root));
            HM_SET(frame, top, below, HM_NULL);
            HM_ASET(uint32_t, disc, root, (uint32_t)clock++);
            if (depth > max_depth)
                max_depth = depth;
            while (top) {
                hm_ref it = HM_GET(frame, top, it);
                if (it) {
                    uint32_t w = HM_GET(adjn, it, to);
                    HM_SET(frame, top, it, HM_GET(adjn, it, next));
                    if (HM_AGET(uint32_t, disc, w) == UINT32_MAX) {
                        hm_ref f = HM_MALLOC(sizeof(frame));
                        pushes++;
                        HM_SET(frame, f, v, w);
                        HM_SET(frame, f, it, HM_AGET(hm_ref, adj, w));
                        HM_SET(frame, f, below, top);
                        top = f;
                        HM_ASET(uint32_t, disc, w, (uint32_t)clock++);
                        tree_edges++;
                        if (++depth > max_depth)
                            max_depth = depth;
                    }
                } else {
                    hm_ref f = top;
                    HM_ASET(uint32_t, fin, HM_GET(frame, f, v), (uint32_t)clock++);
                    top = HM_GET(frame, f, below);
                    HM_FREE(f);
                    depth--;
                }
            }
        }
        if (clock != 2 * n || tree_edges != n - comps)
            prog_die(1, "self-check: clock %" PRIu64 " (want %" PRIu64 "), tree edges %" PRIu64 " (want %" PRIu64 ")",
                     clock, 2 * n, tree_edges, n - comps);
        if (round == 0)
            comps_first = comps;
        else if (comps != comps_first)
            prog_die(1, "self-check: %" PRIu64 " components in round %" PRIu64 ", %" PRIu64 " in round 0", comps,
                     round, comps_first);
        for (uint32_t v = 0; v < n; v++) {
            uint32_t dv = HM_AGET(uint32_t, disc, v), fv = HM_AGET(uint32_t, fin, v);
            if (fv <= dv)
                prog_die(1, "self-check: vertex %u finishes before it is discovered", v);
            sum_u64(&s, (uint64_t)dv << 32 | fv);
        }
        HM_FREE(fin);
        HM_FREE(disc);
        HM_FREE(order);
    }
    for (uint32_t v = 0; v < n; v++) {
        hm_ref x;
        while ((x = HM_AGET(hm_ref, adj, v)) != HM_NULL) {
            HM_ASET(hm_ref, adj, v, HM_GET(adjn, x, next));
            HM_FREE(x);
        }
    }
    HM_FREE(adj);
    hm_info("dfs n=%" PRIu64 " degree=%" PRIu64 " rounds=%" PRIu64 " seed=%" PRIu64 ": edges=%" PRIu64
            " components=%" PRIu64 " stack_pushes=%" PRIu64 " max_depth=%" PRIu64,
            n, deg, rounds, seed, m, comps_first, pushes, max_depth);
    hm_checksum(s.h);
    return 0;
}

int main(int argc, char **argv) { return hm_run(argc, argv, "dfs", prog_main); }
