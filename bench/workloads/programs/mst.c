/*
 * bench/workloads/programs/mst.c - minimum spanning tree, Kruskal and Prim
 * (seed 000's MST).
 *
 *   mst -n 2000 [-d 4] [--rounds 4] [--seed S]
 *
 * Allocation shape:
 *   - the edge list: one malloc'ed record per edge, chained; adjacency
 *     entries (one malloc per edge end) for Prim;
 *   - per round, Kruskal: an array of edge pointers (sorted), one
 *     union-find set node per vertex (malloc each), and one result node per
 *     chosen tree edge;
 *   - per round, Prim: a binary heap of pointers to queue entries, one
 *     malloc per push and one free per pop, the heap array grown by realloc.
 * Both algorithms must find the same total weight and n - 1 tree edges (the
 * graph contains a ring, so it is connected).
 */
#include "prog_common.h"

typedef struct edge {
    uint32_t a, b;
    uint64_t w;
    struct edge *next;
} edge;

typedef struct adjn {
    const edge *e;
    struct adjn *next;
} adjn;

typedef struct uf {
    struct uf *parent;
    uint32_t rank;
} uf;

typedef struct chosen {
    const edge *e;
    struct chosen *next;
} chosen;

typedef struct pqe {
    uint64_t w;
    uint32_t v;
} pqe;

static uf *uf_find(uf *x)
{
    uf *root = x;
    while (root->parent != root)
        root = root->parent;
    while (x != root) { /* path compression */
        uf *next = x->parent;
        x->parent = root;
        x = next;
    }
    return root;
}

static int cmp_edge(const void *pa, const void *pb)
{
    const edge *a = *(const edge *const *)pa, *b = *(const edge *const *)pb;
    if (a->w != b->w)
        return a->w < b->w ? -1 : 1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : (a->b > b->b);
}

static int pq_less(const pqe *x, const pqe *y) { return x->w < y->w || (x->w == y->w && x->v < y->v); }

int main(int argc, char **argv)
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
    edge *edges = NULL;
    adjn **adj;
    uint64_t m = 0, pq_pushes = 0, total_weight = 0;

    prog_parse(argc, argv, "Kruskal (union-find nodes) and Prim (heap entries malloc'ed per push).", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);
    adj = xcalloc(n, sizeof *adj);
    for (uint32_t u = 0; u < n; u++)
        for (uint64_t k = 0; k <= deg; k++) {
            edge *e = xmalloc(sizeof *e);
            adjn *x = xmalloc(sizeof *x), *y = xmalloc(sizeof *y);
            e->a = u;
            e->b = k == 0 ? (uint32_t)((u + 1) % n) : (uint32_t)rng_below(&r, n);
            e->w = 0;
            e->next = edges;
            edges = e;
            x->e = e;
            x->next = adj[e->a];
            adj[e->a] = x;
            y->e = e;
            y->next = adj[e->b];
            adj[e->b] = y;
            m++;
        }

    for (uint64_t round = 0; round < rounds; round++) {
        uint64_t wk = 0, wp = 0, nk = 0, np = 0;
        for (edge *e = edges; e; e = e->next)
            e->w = 1 + rng_below(&r, maxw);

        /* Kruskal */
        {
            edge **sorted = xmalloc(m * sizeof *sorted);
            uf **sets = xmalloc(n * sizeof *sets);
            chosen *tree = NULL;
            size_t i = 0;
            for (edge *e = edges; e; e = e->next)
                sorted[i++] = e;
            qsort(sorted, m, sizeof *sorted, cmp_edge);
            for (uint32_t v = 0; v < n; v++) {
                sets[v] = xmalloc(sizeof **sets);
                sets[v]->parent = sets[v];
                sets[v]->rank = 0;
            }
            for (i = 0; i < m && nk + 1 < n; i++) {
                uf *x = uf_find(sets[sorted[i]->a]), *y = uf_find(sets[sorted[i]->b]);
                chosen *c;
                if (x == y)
                    continue;
                if (x->rank < y->rank) {
                    uf *t = x;
                    x = y;
                    y = t;
                }
                y->parent = x;
                if (x->rank == y->rank)
                    x->rank++;
                c = xmalloc(sizeof *c);
                c->e = sorted[i];
                c->next = tree;
                tree = c;
                nk++;
                wk += sorted[i]->w;
            }
            while (tree) {
                chosen *c = tree;
                sum_u64(&s, (uint64_t)c->e->a << 32 | c->e->b);
                tree = c->next;
                free(c);
            }
            for (uint32_t v = 0; v < n; v++)
                free(sets[v]);
            free(sets);
            free(sorted);
        }

        /* Prim, lazy: a binary heap of malloc'ed entries */
        {
            unsigned char *in = xcalloc(n, 1);
            size_t cap = 64, len = 0;
            pqe **heap = xmalloc(cap * sizeof *heap);
            uint32_t v = 0;
            in[0] = 1;
            for (;;) {
                for (const adjn *x = adj[v]; x; x = x->next) {
                    uint32_t o = x->e->a == v ? x->e->b : x->e->a;
                    pqe *q;
                    size_t k;
                    if (in[o])
                        continue;
                    if (len == cap) {
                        cap *= 2;
                        heap = xrealloc(heap, cap * sizeof *heap);
                    }
                    q = xmalloc(sizeof *q);
                    q->w = x->e->w;
                    q->v = o;
                    pq_pushes++;
                    for (k = len++; k > 0 && pq_less(q, heap[(k - 1) / 2]); k = (k - 1) / 2)
                        heap[k] = heap[(k - 1) / 2];
                    heap[k] = q;
                }
                v = UINT32_MAX;
                while (len) {
                    pqe *top = heap[0], *last = heap[--len];
                    size_t k = 0;
                    for (;;) {
                        size_t c = 2 * k + 1;
                        if (c >= len)
                            break;
                        if (c + 1 < len && pq_less(heap[c + 1], heap[c]))
                            c++;
                        if (!pq_less(heap[c], last))
                            break;
                        heap[k] = heap[c];
                        k = c;
                    }
                    if (len)
                        heap[k] = last;
                    if (!in[top->v]) {
                        v = top->v;
                        wp += top->w;
                        np++;
                        in[v] = 1;
                        free(top);
                        break;
                    }
                    free(top);
                }
                if (v == UINT32_MAX)
                    break;
            }
            while (len)
                free(heap[--len]);
            free(heap);
            free(in);
        }
        if (wk != wp || nk != n - 1 || np != n - 1)
            prog_die(1, "self-check: Kruskal %" PRIu64 " (%" PRIu64 " edges), Prim %" PRIu64 " (%" PRIu64 " edges)",
                     wk, nk, wp, np);
        sum_u64(&s, wk);
        total_weight += wk;
    }
    while (edges) {
        edge *e = edges;
        edges = e->next;
        free(e);
    }
    for (uint32_t v = 0; v < n; v++)
        while (adj[v]) {
            adjn *x = adj[v];
            adj[v] = x->next;
            free(x);
        }
    free(adj);
    printf("mst n=%" PRIu64 " degree=%" PRIu64 " rounds=%" PRIu64 " seed=%" PRIu64 ": edges=%" PRIu64
           " total_weight=%" PRIu64 " prim_queue_pushes=%" PRIu64 "\n",
           n, deg, rounds, seed, m, total_weight, pq_pushes);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}
