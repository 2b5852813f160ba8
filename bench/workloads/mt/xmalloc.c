/*
 * mt-xmalloc - producer/consumer in the style of Lever and Boreham's
 * xmalloc-test (README.md here).  Threads form a ring: thread i allocates
 * batches of blocks and passes each batch to thread i+1, which checks and
 * frees every block in it.  Every free is therefore a cross-thread free, and
 * the allocator must send memory back from the consumer to the producer.
 * With --threads 1 a separate consumer thread is added, so the frees are
 * still made by a thread that did not allocate.
 *
 * Checks: every block's pattern before its free, the consumer is never the
 * producer, and per producer the blocks made, the blocks freed and the
 * batches passed balance.  The checksum (a sum over all blocks made) does
 * not depend on the scheduling.
 */
#include "mt_common.h"

#define BATCH 64

typedef struct batch {
    struct batch *next;
    void *p[BATCH];
    size_t n[BATCH];
} batch;

/* A FIFO of at most QMAX batches (the program's lock, not the
 * allocator's).  Bounded, so the blocks in flight, and with them the peak
 * resident set, depend on the allocator and not on how far the scheduler
 * lets a producer run ahead of its consumer (on an oversubscribed machine
 * an unbounded queue grew to tens of MiB in some runs and not in others).
 * A producer facing a full queue drains its own input while it waits, so
 * the ring cannot deadlock. */
#define QMAX 8u
typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* a batch came, or the queue was closed */
    pthread_cond_t space; /* a batch left */
    batch *head, *tail;
    unsigned count;
    int done;
} queue;

typedef struct thr {
    uint64_t id;
    queue *in, *out; /* consume from in, produce into out (either may be NULL) */
    uint64_t nbatches;
    mt_rng rng;
    uint64_t made, freed, cross, batches_in, sum;
} thr;

/* Pushes b when the queue has room; false (nothing done) when it is full
 * and stays full for a short wait. */
static int q_try_push(queue *q, batch *b)
{
    b->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->count >= QMAX) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200000; /* 0.2 ms */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        (void)pthread_cond_timedwait(&q->space, &q->mu, &until);
        if (q->count >= QMAX) {
            pthread_mutex_unlock(&q->mu);
            return 0;
        }
    }
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    q->count++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return 1;
}

static void q_close(queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->done = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Returns a batch, or NULL when the queue is empty; with wait set, waits
 * until a batch comes or the producer closes the queue. */
static batch *q_pop(queue *q, int wait)
{
    batch *b = NULL;
    pthread_mutex_lock(&q->mu);
    while (wait && q->head == NULL && !q->done)
        pthread_cond_wait(&q->cv, &q->mu);
    if (q->head) {
        b = q->head;
        q->head = b->next;
        if (!q->head)
            q->tail = NULL;
        q->count--;
        pthread_cond_signal(&q->space);
    }
    pthread_mutex_unlock(&q->mu);
    return b;
}

static void consume(thr *t, batch *b)
{
    for (size_t i = 0; i < BATCH; i++) {
        mt_hdr h = mt_check_free(b->p[i], b->n[i], "xmalloc consumer");
        if (h.owner == t->id)
            mt_fail("xmalloc: thread %" PRIu64 " got its own block back", t->id);
        t->freed++;
        t->cross++;
    }
    mt_free(b);
    t->batches_in++;
}

static batch *produce(thr *t)
{
    batch *b = mt_malloc(sizeof *b);
    for (size_t i = 0; i < BATCH; i++) {
        /* sizes 32..4096, smaller ones more likely */
        size_t n = mt_range(&t->rng, MT_MIN_BLOCK, (size_t)32 << mt_below(&t->rng, 8));
        uint64_t key = mt_next(&t->rng);
        b->p[i] = mt_malloc(n);
        b->n[i] = n;
        mt_fill(b->p[i], n, key, t->id);
        t->sum += mt_term(key ^ n);
        t->made++;
    }
    return b;
}

static void *run(void *arg)
{
    thr *t = arg;
    for (uint64_t k = 0; k < t->nbatches; k++) {
        if (t->out) {
            batch *b = produce(t), *c;
            while (!q_try_push(t->out, b)) /* full: make room upstream meanwhile */
                while (t->in && (c = q_pop(t->in, 0)) != NULL)
                    consume(t, c);
        }
        if (t->in) {
            batch *b;
            /* a consumer-only thread waits; a ring member takes what is there */
            while ((b = q_pop(t->in, t->out == NULL)) != NULL)
                consume(t, b);
        }
    }
    if (t->out)
        q_close(t->out);
    if (t->in) {
        batch *b;
        while ((b = q_pop(t->in, 1)) != NULL)
            consume(t, b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    mt_opts o = mt_parse(argc, argv, "xmalloc",
                         "xmalloc-test-like producer/consumer ring: every block is freed by another thread.");
    size_t np = (size_t)o.threads;          /* producers */
    size_t nt = np == 1 ? 2 : np;            /* threads */
    uint64_t nbatches = o.scale * 32;
    queue *qs = mt_calloc(np, sizeof *qs);
    thr *ts = mt_calloc(nt, sizeof *ts);
    pthread_t *th = mt_calloc(nt, sizeof *th);
    for (size_t i = 0; i < np; i++) {
        pthread_mutex_init(&qs[i].mu, NULL);
        pthread_cond_init(&qs[i].cv, NULL);
        pthread_cond_init(&qs[i].space, NULL);
    }
    for (size_t i = 0; i < nt; i++) {
        ts[i].id = i + 1;
        ts[i].rng = mt_rng_make(o.seed, i);
        ts[i].nbatches = nbatches;
        if (np == 1) {
            ts[i].out = i == 0 ? &qs[0] : NULL;
            ts[i].in = i == 1 ? &qs[0] : NULL;
        } else {
            ts[i].out = &qs[i];
            ts[i].in = &qs[(i + np - 1) % np];
        }
    }
    uint64_t wall = mt_run_all(th, nt, run, ts, sizeof ts[0]);

    uint64_t made = 0, freed = 0, cross = 0, batches = 0, sum = 0;
    for (size_t i = 0; i < nt; i++) {
        made += ts[i].made;
        freed += ts[i].freed;
        cross += ts[i].cross;
        batches += ts[i].batches_in;
        sum += ts[i].sum;
    }
    for (size_t i = 0; i < np; i++)
        if (qs[i].count != 0 || qs[i].head != NULL)
            mt_fail("xmalloc: queue %zu still holds %u batches", i, qs[i].count);
    if (made != (uint64_t)np * nbatches * BATCH)
        mt_fail("xmalloc: %" PRIu64 " blocks made, expected %" PRIu64, made, (uint64_t)np * nbatches * BATCH);
    if (freed != made || cross != made || batches != (uint64_t)np * nbatches)
        mt_fail("xmalloc: %" PRIu64 " blocks made, %" PRIu64 " freed (%" PRIu64 " by another thread), %" PRIu64
                " of %" PRIu64 " batches consumed",
                made, freed, cross, batches, (uint64_t)np * nbatches);
    char extra[128];
    snprintf(extra, sizeof extra, "allocs=%" PRIu64 " cross_thread_frees=%" PRIu64, made + batches, cross + batches);
    mt_report(&o, 2 * (made + batches), wall, sum, extra);
    for (size_t i = 0; i < np; i++) {
        pthread_mutex_destroy(&qs[i].mu);
        pthread_cond_destroy(&qs[i].cv);
        pthread_cond_destroy(&qs[i].space);
    }
    mt_free(th);
    mt_free(ts);
    mt_free(qs);
    return 0;
}
