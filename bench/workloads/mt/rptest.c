/*
 * mt-rptest - in the style of rpmalloc's benchmark (rptest, README.md here).
 * Every thread runs loops; in each loop it allocates a working set of
 * blocks with sizes drawn from a distribution weighted to small sizes, then
 * replaces random blocks (free + allocate, some grown or shrunk with
 * realloc, some aligned with posix_memalign, some zeroed with calloc), and
 * at the end of the loop frees the set, except a share of it (the cross
 * rate, 1 in 4) that it sends as a parcel to the next thread, which frees it
 * in its next loop.  The main thread frees the parcels left at the end.
 *
 * Checks: every block's pattern before its free and after each realloc (the
 * kept prefix); aligned blocks are aligned, calloc'd ones zero; every parcel
 * sent is received and every block in it freed by another thread; the
 * counts balance.  The checksum, a sum over every block made, does not
 * depend on the scheduling.
 */
#include "mt_common.h"

#include <sched.h>

#define SET 256
#define MAX_SIZE 16384

typedef struct parcel {
    struct parcel *next;
    size_t count;
    uint64_t from;
    void *p[SET];
    size_t n[SET];
} parcel;

typedef struct inbox {
    pthread_mutex_t mu;
    parcel *head;
} inbox;

typedef struct thr {
    uint64_t id, loops, ops_per_loop;
    mt_rng rng;
    inbox *in, *next; /* own inbox, the next thread's */
    uint64_t allocs, frees, cross, sent, received, reallocs, ops, sum;
} thr;

/* sizes 32..MAX_SIZE: 3 in 4 at most 256 B, a few up to 16 KiB */
static size_t pick_size(mt_rng *r)
{
    uint64_t c = mt_below(r, 16);
    if (c < 12)
        return mt_range(r, MT_MIN_BLOCK, 256);
    if (c < 15)
        return mt_range(r, 257, 2048);
    return mt_range(r, 2049, MAX_SIZE);
}

static void *make(thr *t, size_t n, uint64_t key)
{
    void *p;
    switch (key & 15) {
    case 0:
        p = mt_calloc(1, n);
        break;
    case 1:
        p = mt_memalign((size_t)64 << (key >> 8 & 3), n); /* 64..512 */
        break;
    default:
        p = mt_malloc(n);
    }
    mt_fill(p, n, key, t->id);
    t->sum += mt_term(key ^ n);
    t->allocs++;
    t->ops++;
    return p;
}

static void drop(thr *t, void *p, size_t n)
{
    mt_hdr h = mt_check_free(p, n, "rptest");
    if (h.owner != t->id)
        t->cross++;
    t->frees++;
    t->ops++;
}

static void take_inbox(thr *t)
{
    pthread_mutex_lock(&t->in->mu);
    parcel *q = t->in->head;
    t->in->head = NULL;
    pthread_mutex_unlock(&t->in->mu);
    while (q) {
        parcel *nx = q->next;
        if (q->from == t->id)
            mt_fail("rptest: thread %" PRIu64 " received its own parcel", t->id);
        for (size_t i = 0; i < q->count; i++)
            drop(t, q->p[i], q->n[i]);
        mt_free(q);
        t->frees++;
        t->received++;
        q = nx;
    }
}

static atomic_uint g_senders; /* threads still running their loops */

static void *run(void *arg)
{
    thr *t = arg;
    if (t->loops == 0) {
        /* the partner of a single thread: receives until the sender is done */
        while (atomic_load(&g_senders) > 0) {
            take_inbox(t);
            sched_yield();
        }
        take_inbox(t);
        return NULL;
    }
    void *p[SET];
    size_t n[SET];
    for (uint64_t l = 0; l < t->loops; l++) {
        take_inbox(t);
        for (size_t i = 0; i < SET; i++) {
            n[i] = pick_size(&t->rng);
            p[i] = make(t, n[i], mt_next(&t->rng));
        }
        for (uint64_t k = 0; k < t->ops_per_loop; k++) {
            size_t i = (size_t)mt_below(&t->rng, SET);
            uint64_t key = mt_next(&t->rng);
            size_t m = pick_size(&t->rng);
            if ((key & 7) == 7) {
                /* realloc: the kept prefix must survive, then refill */
                mt_hdr h = mt_check(p[i], n[i], "rptest before realloc");
                p[i] = mt_realloc(p[i], m);
                size_t keep = m < n[i] ? m : n[i];
                const unsigned char *b = p[i];
                for (size_t j = sizeof h; j < keep; j++)
                    if (b[j] != mt_byte(h.key, j))
                        mt_fail("rptest: realloc(%zu -> %zu) lost byte %zu", n[i], m, j);
                mt_fill(p[i], m, key, t->id);
                t->sum += mt_term(key ^ m);
                n[i] = m;
                t->reallocs++;
                t->ops++;
            } else {
                drop(t, p[i], n[i]);
                n[i] = m;
                p[i] = make(t, m, key);
            }
        }
        /* a quarter of the set goes to the next thread, the rest is freed */
        parcel *q = mt_malloc(sizeof *q);
        t->allocs++;
        q->count = 0;
        q->from = t->id;
        for (size_t i = 0; i < SET; i++) {
            if (i % 4 == 0) {
                q->p[q->count] = p[i];
                q->n[q->count++] = n[i];
            } else {
                drop(t, p[i], n[i]);
            }
        }
        pthread_mutex_lock(&t->next->mu);
        q->next = t->next->head;
        t->next->head = q;
        pthread_mutex_unlock(&t->next->mu);
        t->sent++;
    }
    atomic_fetch_sub(&g_senders, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    mt_opts o = mt_parse(argc, argv, "rptest",
                         "rptest-like working sets: mixed sizes, realloc, aligned and zeroed blocks, a quarter freed by the next thread.");
    size_t np = (size_t)o.threads;
    size_t nt = np == 1 ? 2 : np; /* one thread alone gets a partner that only receives */
    inbox *boxes = mt_calloc(nt, sizeof *boxes);
    thr *ts = mt_calloc(nt, sizeof *ts);
    pthread_t *th = mt_calloc(nt, sizeof *th);
    for (size_t i = 0; i < nt; i++) {
        pthread_mutex_init(&boxes[i].mu, NULL);
        ts[i].id = i + 1;
        ts[i].rng = mt_rng_make(o.seed, i);
        ts[i].loops = i < np ? o.scale / 5 + 1 : 0;
        ts[i].ops_per_loop = 2000;
        ts[i].in = &boxes[i];
        ts[i].next = &boxes[(i + 1) % nt];
    }
    atomic_init(&g_senders, (unsigned)np);
    uint64_t t0 = mt_now_ns();
    for (size_t i = 0; i < nt; i++)
        mt_spawn(&th[i], run, &ts[i]);
    for (size_t i = 0; i < nt; i++)
        mt_join(th[i]);
    /* the parcels still in the inboxes: the main thread (id 0) frees them */
    thr m = {0};
    for (size_t i = 0; i < nt; i++) {
        m.in = &boxes[i];
        m.id = 0;
        take_inbox(&m);
    }
    uint64_t wall = mt_now_ns() - t0;
    uint64_t allocs = 0, frees = m.frees, cross = m.cross, sent = 0, received = m.received, reallocs = 0,
             ops = m.ops, sum = 0;
    for (size_t i = 0; i < nt; i++) {
        allocs += ts[i].allocs;
        frees += ts[i].frees;
        cross += ts[i].cross;
        sent += ts[i].sent;
        received += ts[i].received;
        reallocs += ts[i].reallocs;
        ops += ts[i].ops;
        sum += ts[i].sum;
    }
    if (allocs != frees)
        mt_fail("rptest: %" PRIu64 " allocations but %" PRIu64 " frees", allocs, frees);
    if (sent != received)
        mt_fail("rptest: %" PRIu64 " parcels sent, %" PRIu64 " received", sent, received);
    uint64_t per_parcel = (SET + 3) / 4;
    if (cross != sent * per_parcel)
        mt_fail("rptest: %" PRIu64 " cross-thread frees, expected %" PRIu64 " (%" PRIu64 " parcels of %" PRIu64 ")", cross,
                sent * per_parcel, sent, per_parcel);
    char extra[160];
    snprintf(extra, sizeof extra, "allocs=%" PRIu64 " reallocs=%" PRIu64 " cross_thread_frees=%" PRIu64, allocs,
             reallocs, cross);
    mt_report(&o, ops, wall, sum, extra);
    for (size_t i = 0; i < nt; i++)
        pthread_mutex_destroy(&boxes[i].mu);
    mt_free(th);
    mt_free(ts);
    mt_free(boxes);
    return 0;
}
