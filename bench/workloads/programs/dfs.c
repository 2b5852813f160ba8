/*
 * bench/workloads/programs/dfs.c - iterative depth-first search (seed 000's
 * DFS).
 *
 *   dfs -n 20000 [-d 3] [--rounds 4] [--seed S]
 *
 * Allocation shape:
 *   - an undirected random graph as adjacency lists: two list nodes (one
 *     malloc each) per edge;
 *   - per round: a visiting order (a random permutation) and the
 *     discovery/finish arrays;
 *   - the DFS stack as a linked list: one malloc per push, one free per pop
 *     (deep searches hold thousands of frames live at once).
 * Computes connected components, discovery/finish times, the deepest stack,
 * and checks that every vertex is discovered once and that the tree edges
 * number n - components.
 */
#include "prog_common.h"

typedef struct adjn {
    uint32_t to;
    struct adjn *next;
} adjn;

typedef struct frame {
    uint32_t v;
    const adjn *it; /* next neighbour to look at */
    struct frame *below;
} frame;

int main(int argc, char **argv)
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
    adjn **adj;
    uint64_t m, pushes = 0, max_depth = 0, comps_first = 0;

    prog_parse(argc, argv, "Iterative DFS; a list node per edge end, a malloc'ed stack frame per push.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);
    m = n * deg / 2;
    adj = xcalloc(n, sizeof *adj);
    for (uint64_t e = 0; e < m; e++) {
        uint32_t a = (uint32_t)rng_below(&r, n), b = (uint32_t)rng_below(&r, n);
        adjn *x = xmalloc(sizeof *x), *y = xmalloc(sizeof *y);
        x->to = b;
        x->next = adj[a];
        adj[a] = x;
        y->to = a;
        y->next = adj[b];
        adj[b] = y;
    }

    for (uint64_t round = 0; round < rounds; round++) {
        uint32_t *order = xmalloc(n * sizeof *order);
        uint32_t *disc = xmalloc(n * sizeof *disc), *fin = xmalloc(n * sizeof *fin);
        uint64_t clock = 0, comps = 0, tree_edges = 0;
        for (uint32_t i = 0; i < n; i++) {
            order[i] = i;
            disc[i] = UINT32_MAX;
        }
        for (uint64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
            uint64_t j = rng_below(&r, i + 1);
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (uint64_t i = 0; i < n; i++) {
            uint32_t root = order[i];
            frame *top;
            uint64_t depth = 1;
            if (disc[root] != UINT32_MAX)
                continue;
            comps++;
            top = xmalloc(sizeof *top);
            pushes++;
            top->v = root;
            top->it = adj[root];
            top->below = NULL;
            disc[root] = (uint32_t)clock++;
            if (depth > max_depth)
                max_depth = depth;
            while (top) {
                if (top->it) {
                    uint32_t w = top->it->to;
                    top->it = top->it->next;
                    if (disc[w] == UINT32_MAX) {
                        frame *f = xmalloc(sizeof *f);
                        pushes++;
                        f->v = w;
                        f->it = adj[w];
                        f->below = top;
                        top = f;
                        disc[w] = (uint32_t)clock++;
                        tree_edges++;
                        if (++depth > max_depth)
                            max_depth = depth;
                    }
                } else {
                    frame *f = top;
                    fin[f->v] = (uint32_t)clock++;
                    top = f->below;
                    free(f);
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
            if (fin[v] <= disc[v])
                prog_die(1, "self-check: vertex %u finishes before it is discovered", v);
            sum_u64(&s, (uint64_t)disc[v] << 32 | fin[v]);
        }
        free(fin);
        free(disc);
        free(order);
    }
    for (uint32_t v = 0; v < n; v++)
        while (adj[v]) {
            adjn *x = adj[v];
            adj[v] = x->next;
            free(x);
        }
    free(adj);
    printf("dfs n=%" PRIu64 " degree=%" PRIu64 " rounds=%" PRIu64 " seed=%" PRIu64 ": edges=%" PRIu64
           " components=%" PRIu64 " stack_pushes=%" PRIu64 " max_depth=%" PRIu64 "\n",
           n, deg, rounds, seed, m, comps_first, pushes, max_depth);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}
