/*
 * bench/spm/mst.c - the managed MST (bench/workloads/programs/mst.c):
 * edges, adjacency entries, Kruskal's sorted array and union-find nodes,
 * Prim's heap array and its malloc'ed entries all in global memory; every
 * access through hm.h (p2s before, s2p after).  The unmanaged program
 * sorts with qsort, whose comparator would hold local addresses across
 * heap accesses; here a merge sort over the global array does the same
 * ordering (equal keys are the same edge end points, so the result does
 * not depend on the sort's stability).
 */
#include "prog_common.h"
#include "hm.h"

typedef struct edge {
    uint32_t a, b;
    uint64_t w;
    hm_ref next;
} edge;

typedef struct adjn {
    hm_ref e;
    hm_ref next;
} adjn;

typedef struct uf {
    hm_ref parent;
    uint32_t rank;
} uf;

typedef struct chosen {
    hm_ref e;
    hm_ref next;
} chosen;

typedef struct pqe {
    uint64_t w;
    uint32_t v;
} pqe;

#define E(x, f) HM_GET(edge, x, f)

static hm_ref uf_find(hm_ref x)
{
    hm_ref root = x;
    while (HM_GET(uf, root, parent) != root)
        root = HM_GET(uf, root, parent);
    while (x != root) {
        hm_ref next = HM_GET(uf, x, parent);
        HM_SET(uf, x, parent, root);
        x = next;
    }
    return root;
}

static int edge_less(hm_ref x, hm_ref y)
{
    uint64_t wx = E(x, w), wy = E(y, w);
    uint32_t ax, ay;
    if (wx != wy)
        return wx < wy;
    ax = E(x, a);
    ay = E(y, a);
    if (ax != ay)
        return ax < ay;
    return E(x, b) < E(y, b);
}

/* Bottom-up merge sort of m edge addresses in arr (tmp: scratch of m). */
static void sort_edges(hm_ref arr, hm_ref tmp, size_t m)
{
    for (size_t width = 1; width < m; width *= 2) {
        for (size_t lo = 0; lo < m; lo += 2 * width) {
            size_t mid = lo + width < m ? lo + width : m, hi = lo + 2 * width < m ? lo + 2 * width : m;
            size_t i = lo, j = mid, k = lo;
            while (i < mid || j < hi) {
                hm_ref pick;
                if (j >= hi || (i < mid && !edge_less(HM_AGET(hm_ref, arr, j), HM_AGET(hm_ref, arr, i))))
                    pick = HM_AGET(hm_ref, arr, i++);
                else
                    pick = HM_AGET(hm_ref, arr, j++);
                HM_ASET(hm_ref, tmp, k++, pick);
            }
        }
        for (size_t i = 0; i < m; i++)
            HM_ASET(hm_ref, arr, i, HM_AGET(hm_ref, tmp, i));
    }
}

static int pq_less(hm_ref x, hm_ref y)
{
    uint64_t wx = HM_GET(pqe, x, w), wy = HM_GET(pqe, y, w);
    return wx < wy || (wx == wy && HM_GET(pqe, x, v) < HM_GET(pqe, y, v));
}

static int prog_main(int argc, char **argv)
{
    uint64_t n = 2000, deg = 4, rounds = 4, maxw = 1u << 20, seed = 1;
    prog_opt opts[] = {
        {"-n", "--nodes", &n, 2, 1u << 24, "vertices"},
        {"-d", "--degree", &deg, 0, 1000, "random edges per vertex (plus a ring)"},
        {"-r", "--rounds", &rounds, 1, 1u << 16, "re-weightings, each solved twice"},
        {NULL, "--max-weight", &maxw, 1, UINT32_MAX, "weights are 1 .. this"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed"},
    };
    prog_rng r;
    prog_sum s;
    hm_ref edges = HM_NULL, adj;
    uint64_t m = 0, pq_pushes = 0, total_weight = 0;

    prog_parse(argc, argv, "Kruskal (union-find nodes) and Prim (heap entries malloc'ed per push), managed.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);
    adj = HM_CALLOC(n, sizeof(hm_ref));
    for (uint32_t u = 0; u < n; u++)
        for (uint64_t k = 0; k <= deg; k++) {
            hm_ref e = HM_MALLOC(sizeof(edge));
            hm_ref x = HM_MALLOC(sizeof(adjn)), y = HM_MALLOC(sizeof(adjn));
            uint32_t b = k == 0 ? (uint32_t)((u + 1) % n) : (uint32_t)rng_below(&r, n);
            HM_SET(edge, e, a, u);
            HM_SET(edge, e, b, b);
            HM_SET(edge, e, w, 0);
            HM_SET(edge, e, next, edges);
            edges = e;
            HM_SET(adjn, x, e, e);
            HM_SET(adjn, x, next, HM_AGET(hm_ref, adj, u));
            HM_ASET(hm_ref, adj, u, x);
            HM_SET(adjn, y, e, e);
            HM_SET(adjn, y, next, HM_AGET(hm_ref, adj, b));
            HM_ASET(hm_ref, adj, b, y);
            m++;
        }

    for (uint64_t round = 0; round < rounds; round++) {
        uint64_t wk = 0, wp = 0, nk = 0, np = 0;
        for (hm_ref e = edges; e; e = E(e, next))
            HM_SET(edge, e, w, 1 + rng_below(&r, maxw));

        { /* Kruskal */
            hm_ref sorted = HM_MALLOC(m * sizeof(hm_ref)), tmp;
            hm_ref sets = HM_MALLOC(n * sizeof(hm_ref));
            hm_ref tree = HM_NULL;
            size_t i = 0;
            for (hm_ref e = edges; e; e = E(e, next))
                HM_ASET(hm_ref, sorted, i++, e);
            tmp = HM_MALLOC(m * sizeof(hm_ref));
            sort_edges(sorted, tmp, m);
            HM_FREE(tmp);
            for (uint32_t v = 0; v < n; v++) {
                hm_ref x = HM_MALLOC(sizeof(uf));
                HM_ASET(hm_ref, sets, v, x);
                HM_SET(uf, x, parent, x);
                HM_SET(uf, x, rank, 0);
            }
            for (i = 0; i < m && nk + 1 < n; i++) {
                hm_ref se = HM_AGET(hm_ref, sorted, i);
                hm_ref x = uf_find(HM_AGET(hm_ref, sets, E(se, a))), y = uf_find(HM_AGET(hm_ref, sets, E(se, b)));
                hm_ref c;
                uint32_t rx, ry;
                if (x == y)
                    continue;
                rx = HM_GET(uf, x, rank);
                ry = HM_GET(uf, y, rank);
                if (rx < ry) {
                    hm_ref t = x;
                    x = y;
                    y = t;
                }
                HM_SET(uf, y, parent, x);
                if (rx == ry)
                    HM_SET(uf, x, rank, HM_GET(uf, x, rank) + 1);
                c = HM_MALLOC(sizeof(chosen));
                HM_SET(chosen, c, e, se);
                HM_SET(chosen, c, next, tree);
                tree = c;
                nk++;
                wk += E(se, w);
            }
            while (tree) {
                hm_ref c = tree, ce = HM_GET(chosen, c, e);
                sum_u64(&s, (uint64_t)E(ce, a) << 32 | E(ce, b));
                tree = HM_GET(chosen, c, next);
                HM_FREE(c);
            }
            for (uint32_t v = 0; v < n; v++)
                HM_FREE(HM_AGET(hm_ref, sets, v));
            HM_FREE(sets);
            HM_FREE(sorted);
        }

        { /* Prim, lazy: a binary heap of malloc'ed entries */
            hm_ref in = HM_CALLOC(n, 1);
            size_t cap = 64, len = 0;
            hm_ref heap = HM_MALLOC(cap * sizeof(hm_ref));
            uint32_t v = 0;
            HM_ASET(uint8_t, in, 0, 1);
            for (;;) {
                for (hm_ref x = HM_AGET(hm_ref, adj, v); x; x = HM_GET(adjn, x, next)) {
                    hm_ref xe = HM_GET(adjn, x, e), q;
                    uint32_t o = E(xe, a) == v ? E(xe, b) : E(xe, a);
                    size_t k;
                    if (HM_AGET(uint8_t, in, o))
                        continue;
                    if (len == cap) {
                        cap *= 2;
                        heap = HM_REALLOC(heap, cap * sizeof(hm_ref));
                    }
                    q = HM_MALLOC(sizeof(pqe));
                    HM_SET(pqe, q, w, E(xe, w));
                    HM_SET(pqe, q, v, o);
                    pq_pushes++;
                    for (k = len++; k > 0 && pq_less(q, HM_AGET(hm_ref, heap, (k - 1) / 2)); k = (k - 1) / 2)
                        HM_ASET(hm_ref, heap, k, HM_AGET(hm_ref, heap, (k - 1) / 2));
                    HM_ASET(hm_ref, heap, k, q);
                }
                v = UINT32_MAX;
                while (len) {
                    hm_ref top = HM_AGET(hm_ref, heap, 0), last = HM_AGET(hm_ref, heap, --len);
                    size_t k = 0;
                    uint32_t tv;
                    for (;;) {
                        size_t c = 2 * k + 1;
                        if (c >= len)
                            break;
                        if (c + 1 < len && pq_less(HM_AGET(hm_ref, heap, c + 1), HM_AGET(hm_ref, heap, c)))
                            c++;
                        if (!pq_less(HM_AGET(hm_ref, heap, c), last))
                            break;
                        HM_ASET(hm_ref, heap, k, HM_AGET(hm_ref, heap, c));
                        k = c;
                    }
                    if (len)
                        HM_ASET(hm_ref, heap, k, last);
                    tv = HM_GET(pqe, top, v);
                    if (!HM_AGET(uint8_t, in, tv)) {
                        v = tv;
                        wp += HM_GET(pqe, top, w);
                        np++;
                        HM_ASET(uint8_t, in, v, 1);
                        HM_FREE(top);
                        break;
                    }
                    HM_FREE(top);
                }
                if (v == UINT32_MAX)
                    break;
            }
            while (len)
                HM_FREE(HM_AGET(hm_ref, heap, --len));
            HM_FREE(heap);
            HM_FREE(in);
        }
        if (wk != wp || nk != n - 1 || np != n - 1)
            prog_die(1, "self-check: Kruskal %" PRIu64 " (%" PRIu64 " edges), Prim %" PRIu64 " (%" PRIu64 " edges)",
                     wk, nk, wp, np);
        sum_u64(&s, wk);
        total_weight += wk;
    }
    while (edges) {
        hm_ref e = edges;
        edges = E(e, next);
        HM_FREE(e);
    }
    for (uint32_t v = 0; v < n; v++) {
        hm_ref x;
        while ((x = HM_AGET(hm_ref, adj, v)) != HM_NULL) {
            HM_ASET(hm_ref, adj, v, HM_GET(adjn, x, next));
            HM_FREE(x);
        }
    }
    HM_FREE(adj);
    hm_info("mst n=%" PRIu64 " degree=%" PRIu64 " rounds=%" PRIu64 " seed=%" PRIu64 ": edges=%" PRIu64
            " total_weight=%" PRIu64 " prim_queue_pushes=%" PRIu64,
            n, deg, rounds, seed, m, total_weight, pq_pushes);
    hm_checksum(s.h);
    return 0;
}

int main(int argc, char **argv) { return hm_run(argc, argv, "mst", prog_main); }
