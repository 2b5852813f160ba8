/*
 * bench/spm/dijkstra.c - the managed Dijkstra (bench/workloads/programs/
 * dijkstra.c): edge lists, per-source arrays, the pairing-heap queue (one
 * malloc per push) and the path list in global memory; every access
 * through hm.h (p2s before, s2p after).
 */
#include "prog_common.h"
#include "hm.h"

typedef struct edge {
    uint32_t to;
    uint32_t w;
    hm_ref next;
} edge;

typedef struct pq_node {
    uint64_t key;
    uint32_t v;
    hm_ref child, sibling;
} pq_node;

typedef struct hop {
    uint32_t v;
    hm_ref next;
} hop;

#define PQ(n, f) HM_GET(pq_node, n, f)

static hm_ref meld(hm_ref a, hm_ref b)
{
    uint64_t ka, kb;
    if (!a)
        return b;
    if (!b)
        return a;
    ka = PQ(a, key);
    kb = PQ(b, key);
    if (kb < ka || (kb == ka && PQ(b, v) < PQ(a, v))) {
        hm_ref t = a;
        a = b;
        b = t;
    }
    HM_SET(pq_node, b, sibling, PQ(a, child));
    HM_SET(pq_node, a, child, b);
    return a;
}

static hm_ref pq_push(hm_ref root, uint64_t key, uint32_t v, uint64_t *pushes)
{
    hm_ref n = HM_MALLOC(sizeof(pq_node));
    HM_SET(pq_node, n, key, key);
    HM_SET(pq_node, n, v, v);
    HM_SET(pq_node, n, child, HM_NULL);
    HM_SET(pq_node, n, sibling, HM_NULL);
    (*pushes)++;
    return meld(root, n);
}

static hm_ref pq_pop(hm_ref root)
{
    hm_ref list = PQ(root, child), pairs = HM_NULL, res = HM_NULL;
    HM_FREE(root);
    while (list) {
        hm_ref a = list, b = PQ(a, sibling), m;
        if (b) {
            list = PQ(b, sibling);
            HM_SET(pq_node, a, sibling, HM_NULL);
            HM_SET(pq_node, b, sibling, HM_NULL);
            m = meld(a, b);
        } else {
            list = HM_NULL;
            HM_SET(pq_node, a, sibling, HM_NULL);
            m = a;
        }
        HM_SET(pq_node, m, sibling, pairs);
        pairs = m;
    }
    while (pairs) {
        hm_ref next = PQ(pairs, sibling);
        HM_SET(pq_node, pairs, sibling, HM_NULL);
        res = meld(res, pairs);
        pairs = next;
    }
    return res;
}

static int prog_main(int argc, char **argv)
{
    uint64_t n = 2000, deg = 6, sources = 20, maxw = 1000, seed = 1;
    prog_opt opts[] = {
        {"-n", "--nodes", &n, 2, 1u << 24, "vertices"},
        {"-d", "--degree", &deg, 0, 1000, "random out-edges per vertex (plus a ring edge)"},
        {NULL, "--sources", &sources, 1, 1u << 20, "shortest-path runs (source, target pairs)"},
        {NULL, "--max-weight", &maxw, 1, 1u << 30, "edge weights are 1 .. this"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed"},
    };
    prog_rng r;
    prog_sum s;
    hm_ref adj;
    uint64_t edges = 0, pushes = 0, pops = 0, path_hops = 0, reached_total = 0;

    prog_parse(argc, argv, "Dijkstra (managed) with a pairing-heap queue: one malloc per push, one node per edge.",
               opts, sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);

    adj = HM_CALLOC(n, sizeof(hm_ref));
    for (uint32_t u = 0; u < n; u++) {
        for (uint64_t k = 0; k <= deg; k++) {
            hm_ref e = HM_MALLOC(sizeof(edge));
            uint32_t to = k == 0 ? (uint32_t)((u + 1) % n) : (uint32_t)rng_below(&r, n);
            uint32_t w = (uint32_t)(1 + rng_below(&r, maxw));
            HM_SET(edge, e, to, to);
            HM_SET(edge, e, w, w);
            HM_SET(edge, e, next, HM_AGET(hm_ref, adj, u));
            HM_ASET(hm_ref, adj, u, e);
            edges++;
        }
    }

    for (uint64_t run = 0; run < sources; run++) {
        uint32_t src = (uint32_t)rng_below(&r, n), dst = (uint32_t)((src + n / 2) % n);
        hm_ref dist = HM_MALLOC(n * sizeof(uint64_t));
        hm_ref pred = HM_MALLOC(n * sizeof(uint32_t));
        hm_ref done = HM_CALLOC(n, 1);
        hm_ref pq = HM_NULL, path = HM_NULL;
        uint64_t reached = 0;
        for (uint64_t v = 0; v < n; v++) {
            HM_ASET(uint64_t, dist, v, UINT64_MAX);
            HM_ASET(uint32_t, pred, v, UINT32_MAX);
        }
        HM_ASET(uint64_t, dist, src, 0);
        pq = pq_push(pq, 0, src, &pushes);
        while (pq) {
            uint32_t u = PQ(pq, v);
            uint64_t d = PQ(pq, key);
            pq = pq_pop(pq);
            pops++;
            if (HM_AGET(uint8_t, done, u) || d != HM_AGET(uint64_t, dist, u))
                continue;
            HM_ASET(uint8_t, done, u, 1);
            reached++;
            for (hm_ref e = HM_AGET(hm_ref, adj, u); e; e = HM_GET(edge, e, next)) {
                uint64_t nd = d + HM_GET(edge, e, w);
                uint32_t to = HM_GET(edge, e, to);
                if (nd < HM_AGET(uint64_t, dist, to)) {
                    HM_ASET(uint64_t, dist, to, nd);
                    HM_ASET(uint32_t, pred, to, u);
                    pq = pq_push(pq, nd, to, &pushes);
                }
            }
        }
        for (uint32_t u = 0; u < n; u++) {
            int tight = u == src;
            uint64_t du = HM_AGET(uint64_t, dist, u);
            uint32_t pu;
            if (du == UINT64_MAX)
                continue;
            for (hm_ref e = HM_AGET(hm_ref, adj, u); e; e = HM_GET(edge, e, next)) {
                uint32_t to = HM_GET(edge, e, to);
                if (du + HM_GET(edge, e, w) < HM_AGET(uint64_t, dist, to))
                    prog_die(1, "self-check: edge %u->%u can still be relaxed", u, to);
            }
            pu = HM_AGET(uint32_t, pred, u);
            if (!tight && (pu == UINT32_MAX || HM_AGET(uint64_t, dist, pu) == UINT64_MAX))
                prog_die(1, "self-check: vertex %u reached without a predecessor", u);
        }
        for (uint32_t v = dst; v != UINT32_MAX; v = v == src ? UINT32_MAX : HM_AGET(uint32_t, pred, v)) {
            hm_ref h = HM_MALLOC(sizeof(hop));
            HM_SET(hop, h, v, v);
            HM_SET(hop, h, next, path);
            path = h;
            if (HM_AGET(uint64_t, dist, v) == UINT64_MAX)
                break;
        }
        sum_u64(&s, src);
        sum_u64(&s, dst);
        sum_u64(&s, HM_AGET(uint64_t, dist, dst));
        while (path) {
            hm_ref h = path;
            sum_u64(&s, HM_GET(hop, h, v));
            path_hops++;
            path = HM_GET(hop, h, next);
            HM_FREE(h);
        }
        for (uint32_t v = 0; v < n; v++)
            sum_u64(&s, HM_AGET(uint64_t, dist, v));
        reached_total += reached;
        HM_FREE(done);
        HM_FREE(pred);
        HM_FREE(dist);
    }
    for (uint32_t u = 0; u < n; u++) {
        hm_ref e;
        while ((e = HM_AGET(hm_ref, adj, u)) != HM_NULL) {
            HM_ASET(hm_ref, adj, u, HM_GET(edge, e, next));
            HM_FREE(e);
        }
    }
    HM_FREE(adj);
    if (pushes != pops)
        prog_die(1, "self-check: %" PRIu64 " pushes but %" PRIu64 " pops", pushes, pops);
    hm_info("dijkstra n=%" PRIu64 " degree=%" PRIu64 " sources=%" PRIu64 " seed=%" PRIu64 ": edges=%" PRIu64
            " queue_pushes=%" PRIu64 " reached=%" PRIu64 " path_hops=%" PRIu64,
            n, deg, sources, seed, edges, pushes, reached_total, path_hops);
    hm_checksum(s.h);
    return 0;
}

int main(int argc, char **argv) { return hm_run(argc, argv, "dijkstra", prog_main); }
