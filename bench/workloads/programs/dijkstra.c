/*
 * bench/workloads/programs/dijkstra.c - single-source shortest paths
 * (seed 000's Dijkstra, after MiBench's network/dijkstra).
 *
 *   dijkstra -n 2000 [-d 6] [--sources 20] [--seed S]
 *
 * Allocation shape:
 *   - the graph: one adjacency-list node (malloc) per directed edge;
 *   - per source: a distance and a predecessor array, and a priority queue
 *     (pairing heap) with one malloc per push and one free per pop, the
 *     way MiBench's queue allocates one item per enqueue; stale entries are
 *     pushed again rather than decreased;
 *   - per source: the path to a target as a linked list (one node per hop),
 *     built, summed, freed.
 * Every result is checked: no edge can be relaxed further, and every
 * reached vertex but the source has a tight incoming edge.
 */
#include "prog_common.h"

typedef struct edge {
    uint32_t to;
    uint32_t w;
    struct edge *next;
} edge;

typedef struct pq_node {
    uint64_t key;
    uint32_t v;
    struct pq_node *child, *sibling;
} pq_node;

static pq_node *meld(pq_node *a, pq_node *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (b->key < a->key || (b->key == a->key && b->v < a->v)) {
        pq_node *t = a;
        a = b;
        b = t;
    }
    b->sibling = a->child;
    a->child = b;
    return a;
}

static pq_node *pq_push(pq_node *root, uint64_t key, uint32_t v, uint64_t *pushes)
{
    pq_node *n = xmalloc(sizeof *n);
    n->key = key;
    n->v = v;
    n->child = n->sibling = NULL;
    (*pushes)++;
    return meld(root, n);
}

/* Removes the root (caller has read it); two-pass pairing, iterative. */
static pq_node *pq_pop(pq_node *root)
{
    pq_node *list = root->child, *pairs = NULL, *res = NULL;
    free(root);
    /* pass 1: meld pairs left to right, stacking the results */
    while (list) {
        pq_node *a = list, *b = a->sibling;
        pq_node *m;
        if (b) {
            list = b->sibling;
            a->sibling = b->sibling = NULL;
            m = meld(a, b);
        } else {
            list = NULL;
            a->sibling = NULL;
            m = a;
        }
        m->sibling = pairs;
        pairs = m;
    }
    /* pass 2: meld right to left */
    while (pairs) {
        pq_node *next = pairs->sibling;
        pairs->sibling = NULL;
        res = meld(res, pairs);
        pairs = next;
    }
    return res;
}

typedef struct hop {
    uint32_t v;
    struct hop *next;
} hop;

int main(int argc, char **argv)
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
    edge **adj;
    uint64_t edges = 0, pushes = 0, pops = 0, path_hops = 0, reached_total = 0;

    prog_parse(argc, argv, "Dijkstra with a pairing-heap queue: one malloc per push, one node per edge.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);

    adj = xcalloc(n, sizeof *adj);
    for (uint32_t u = 0; u < n; u++) {
        for (uint64_t k = 0; k <= deg; k++) {
            edge *e = xmalloc(sizeof *e);
            e->to = k == 0 ? (uint32_t)((u + 1) % n) : (uint32_t)rng_below(&r, n);
            e->w = (uint32_t)(1 + rng_below(&r, maxw));
            e->next = adj[u];
            adj[u] = e;
            edges++;
        }
    }

    for (uint64_t run = 0; run < sources; run++) {
        uint32_t src = (uint32_t)rng_below(&r, n), dst = (uint32_t)((src + n / 2) % n);
        uint64_t *dist = xmalloc(n * sizeof *dist);
        uint32_t *pred = xmalloc(n * sizeof *pred);
        unsigned char *done = xcalloc(n, 1);
        pq_node *pq = NULL;
        hop *path = NULL;
        uint64_t reached = 0;
        for (uint64_t v = 0; v < n; v++) {
            dist[v] = UINT64_MAX;
            pred[v] = UINT32_MAX;
        }
        dist[src] = 0;
        pq = pq_push(pq, 0, src, &pushes);
        while (pq) {
            uint32_t u = pq->v;
            uint64_t d = pq->key;
            pq = pq_pop(pq);
            pops++;
            if (done[u] || d != dist[u])
                continue;
            done[u] = 1;
            reached++;
            for (const edge *e = adj[u]; e; e = e->next) {
                uint64_t nd = d + e->w;
                if (nd < dist[e->to]) {
                    dist[e->to] = nd;
                    pred[e->to] = u;
                    pq = pq_push(pq, nd, e->to, &pushes);
                }
            }
        }
        /* check optimality */
        for (uint32_t u = 0; u < n; u++) {
            int tight = u == src;
            if (dist[u] == UINT64_MAX)
                continue;
            for (const edge *e = adj[u]; e; e = e->next)
                if (dist[u] + e->w < dist[e->to])
                    prog_die(1, "self-check: edge %u->%u can still be relaxed", u, e->to);
            if (!tight && (pred[u] == UINT32_MAX || dist[pred[u]] == UINT64_MAX))
                prog_die(1, "self-check: vertex %u reached without a predecessor", u);
        }
        /* the path to dst, as MiBench prints it: a list built back to front */
        for (uint32_t v = dst; v != UINT32_MAX; v = v == src ? UINT32_MAX : pred[v]) {
            hop *h = xmalloc(sizeof *h);
            h->v = v;
            h->next = path;
            path = h;
            if (dist[v] == UINT64_MAX)
                break;
        }
        sum_u64(&s, src);
        sum_u64(&s, dst);
        sum_u64(&s, dist[dst]);
        while (path) {
            hop *h = path;
            sum_u64(&s, h->v);
            path_hops++;
            path = h->next;
            free(h);
        }
        for (uint32_t v = 0; v < n; v++)
            sum_u64(&s, dist[v]);
        reached_total += reached;
        free(done);
        free(pred);
        free(dist);
    }
    for (uint32_t u = 0; u < n; u++)
        while (adj[u]) {
            edge *e = adj[u];
            adj[u] = e->next;
            free(e);
        }
    free(adj);
    if (pushes != pops)
        prog_die(1, "self-check: %" PRIu64 " pushes but %" PRIu64 " pops", pushes, pops);
    printf("dijkstra n=%" PRIu64 " degree=%" PRIu64 " sources=%" PRIu64 " seed=%" PRIu64 ": edges=%" PRIu64
           " queue_pushes=%" PRIu64 " reached=%" PRIu64 " path_hops=%" PRIu64 "\n",
           n, deg, sources, seed, edges, pushes, reached_total, path_hops);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}
