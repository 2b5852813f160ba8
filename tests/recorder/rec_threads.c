/*
 * tests/recorder/rec_threads.c - four threads allocate, hand objects to each
 * other through shared queues (worker i feeds the queue of worker i+1) and
 * free what they receive, so many frees (and some reallocs) happen in a
 * thread other than the allocating one.  After a barrier every worker
 * drains its own queue, so cross-thread frees happen even when the
 * scheduler runs the workers one after another.
 *
 *   rec_threads [rounds]
 *
 * The main thread allocates a marker (size REC_MARK_MAIN) before starting
 * the workers and makes no other allocation until they are joined; every
 * allocation call of the workers is counted, and the totals are printed as
 * "malloc=.. calloc=.. realloc=.. aligned=.. free=.. xfree=.. xrealloc=.."
 * (xfree / xrealloc: on an object allocated by another worker).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_MARK_MAIN 519891u
#define NTHREADS 4
#define QCAP 65536

typedef struct item {
    void *p;
    int owner;
} item;

typedef struct queue {
    pthread_mutex_t lock;
    size_t head, tail; /* ring buffer */
    item slot[QCAP];
} queue;

static queue queues[NTHREADS];
static pthread_barrier_t barrier;
static int rounds = 400;

typedef struct counters {
    unsigned long malloc_, calloc_, realloc_, aligned, free_, xfree, xrealloc;
} counters;
static counters per[NTHREADS];

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int push(queue *q, item it)
{
    int ok;
    pthread_mutex_lock(&q->lock);
    ok = q->tail - q->head < QCAP;
    if (ok)
        q->slot[q->tail++ % QCAP] = it;
    pthread_mutex_unlock(&q->lock);
    return ok;
}

static int pop(queue *q, item *it)
{
    int ok;
    pthread_mutex_lock(&q->lock);
    ok = q->tail != q->head;
    if (ok)
        *it = q->slot[q->head++ % QCAP];
    pthread_mutex_unlock(&q->lock);
    return ok;
}

static void release(int self, item it, uint64_t *s)
{
    counters *c = &per[self];
    if (rnd(s) % 8 == 0) {
        void *q = realloc(it.p, 16 + rnd(s) % 3000);
        if (!q)
            abort();
        it.p = q;
        c->realloc_++;
        if (it.owner != self)
            c->xrealloc++;
    }
    free(it.p);
    c->free_++;
    if (it.owner != self)
        c->xfree++;
}

static void *worker(void *arg)
{
    int self = (int)(intptr_t)arg;
    counters *c = &per[self];
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(self + 1);
    queue *mine = &queues[self], *next = &queues[(self + 1) % NTHREADS];
    item it;
    pthread_barrier_wait(&barrier);
    for (int r = 0; r < rounds; r++) {
        int k = 1 + (int)(rnd(&s) % 16);
        for (int j = 0; j < k; j++) {
            size_t sz = 1 + rnd(&s) % 2000;
            void *p = NULL;
            switch (rnd(&s) % 4) {
            case 0:
                p = malloc(sz);
                c->malloc_++;
                break;
            case 1:
                p = calloc(1 + sz % 7, 16);
                c->calloc_++;
                break;
            case 2:
                p = malloc(sz);
                c->malloc_++;
                p = realloc(p, sz * 2);
                c->realloc_++;
                break;
            default:
                if (posix_memalign(&p, 64, sz) != 0)
                    p = NULL;
                c->aligned++;
                break;
            }
            if (!p)
                abort();
            memset(p, self, 1);
            it.p = p;
            it.owner = self;
            if (!push(next, it))
                release(self, it, &s);
        }
        for (int j = 0; j < k && pop(mine, &it); j++)
            release(self, it, &s);
    }
    pthread_barrier_wait(&barrier);
    while (pop(mine, &it))
        release(self, it, &s);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[NTHREADS];
    counters sum;
    void *m;
    if (argc > 1)
        rounds = atoi(argv[1]);
    m = malloc(REC_MARK_MAIN);
    free(m);
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        pthread_mutex_init(&queues[i].lock, NULL);
    for (int i = 0; i < NTHREADS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "rec_threads: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < NTHREADS; i++) {
        sum.malloc_ += per[i].malloc_;
        sum.calloc_ += per[i].calloc_;
        sum.realloc_ += per[i].realloc_;
        sum.aligned += per[i].aligned;
        sum.free_ += per[i].free_;
        sum.xfree += per[i].xfree;
        sum.xrealloc += per[i].xrealloc;
    }
    printf("malloc=%lu calloc=%lu realloc=%lu aligned=%lu free=%lu xfree=%lu xrealloc=%lu\n",
           sum.malloc_, sum.calloc_, sum.realloc_, sum.aligned, sum.free_, sum.xfree, sum.xrealloc);
    return 0;
}
