/*
 * tools/mhsim/sim.c - the simulation engine and the workloads of dmm-mhsim.
 *
 * Engine: one event queue ordered by (time, sequence number); each event lets
 * one core execute its next operation.  An allocator operation is executed
 * at once by calling the real multi-heap; while it runs, the lock hooks and
 * the observer below move the calling core's clock (s->cur_t) through
 * messages, lock waits and heap service, and keep each heap busy until its
 * service ends (busy_until).  So a heap lock is held in simulated time, and
 * a later core that reaches the heap while it is busy waits (lock) or skips
 * it (try_lock).  Everything is integer arithmetic on a fixed event order:
 * the same parameters give the same numbers.
 *
 * Approximation (documented in docs/multiheap-sim.md): an operation is
 * executed whole when its core's event is taken, so a heap's busy interval
 * is visible to operations that start later in simulated time even if they
 * would reach the heap before it was taken.
 */
#include "mhsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/heap.h"

const char *const mhsim_workloads[] = {"fast", "gaussian", "integral", "matrix", NULL};

bool mhsim_workload_known(const char *name)
{
    for (unsigned i = 0; mhsim_workloads[i]; i++)
        if (strcmp(name, mhsim_workloads[i]) == 0)
            return true;
    return strcmp(name, "probe") == 0 || strcmp(name, "trace") == 0 || strcmp(name, "spill") == 0;
}

void mhsim_default_params(mhsim_params *p)
{
    memset(p, 0, sizeof *p);
    p->width = 2;
    p->height = 2;
    p->policy = DMM_MH_LAZY;
    p->remote_free = DMM_MH_FREE_LOCKED;
    p->per_node = 256u * 1024u;
    p->seed = 1;
    strcpy(p->workload, "fast");
    p->t_hop = 2;
    p->inject = 4;
    p->flit_bytes = 16;
    p->msg_bytes = 16;
    p->svc_alloc = 40;
    p->svc_free = 30;
    p->think = 10;
    p->depth = 2;
    p->compute_pct = 100;
    p->probe_home = DMM_MH_NO_NODE;
    p->offline = DMM_MH_NO_NODE;
    p->offline_at = 0;
    p->probe_busy = DMM_MH_NO_NODE;
}

unsigned mhsim_hops(unsigned w, unsigned a, unsigned b)
{
    unsigned ax = a % w, ay = a / w, bx = b % w, by = b / w;
    return (ax > bx ? ax - bx : bx - ax) + (ay > by ? ay - by : by - ay);
}

uint64_t mhsim_msg_cycles(const mhsim_params *p, unsigned a, unsigned b)
{
    uint64_t flits = (p->msg_bytes + p->flit_bytes - 1) / p->flit_bytes;
    return (uint64_t)p->inject + (uint64_t)mhsim_hops(p->width, a, b) * p->t_hop + flits;
}

/* ---- programs ----------------------------------------------------------------
 * Each core runs a list of operations.  Slots hold the core's own pointers;
 * task buffers (allocated by the master, freed by the worker) live in a
 * shared table indexed by task * MAXBUF + j. */
enum {
    OP_ALLOC,     /* a: slot, size */
    OP_FREE,      /* a: slot */
    OP_BUF_ALLOC, /* a: task, b: j, size (master) */
    OP_BUF_FREE,  /* a: task, b: j (worker) */
    OP_COMPUTE,   /* a: cycles */
    OP_SEND,      /* a: task (master hands it to its worker) */
    OP_RECV,      /* a: task (worker waits for it) */
    OP_DONE,      /* a: task (worker tells the master) */
    OP_WAIT_ALL,  /* master waits until no task is outstanding */
    OP_T_ALLOC,   /* trace: a: object, b: its ordinal, size */
    OP_T_REALLOC, /* trace: a: object, b: its ordinal, size */
    OP_T_FREE     /* trace: a: object, b: its ordinal */
};
#define MAXBUF 4u

typedef struct op {
    uint8_t kind;
    uint32_t a, b, size;
} op;

enum { ST_READY, ST_BLOCKED, ST_DONE };

typedef struct core {
    op *ops;
    size_t n, cap, pc;
    uint64_t time;
    void **slot;
    uint32_t nslots;
    int state;
} core;

typedef struct qent {
    uint64_t t, seq;
    unsigned core;
} qent;

typedef struct sim {
    const mhsim_params *p;
    unsigned n;
    dmm_mh *mh;
    core *cores;
    /* tasks */
    uint32_t ntasks;
    unsigned *task_worker;
    bool *task_sent;
    uint64_t *task_arrival;
    void **bufs;
    unsigned *outstanding; /* per worker */
    unsigned total_outstanding;
    uint64_t last_done_arrival;
    unsigned master_wait_worker; /* DMM_MH_NO_NODE: waiting for all */
    /* event queue */
    qent *q;
    size_t qn, qcap;
    uint64_t seq;
    /* heaps in simulated time */
    uint64_t busy_until[DMM_MH_MAX_NODES];
    uint64_t acq_t[DMM_MH_MAX_NODES];
    uint64_t svc[DMM_MH_MAX_NODES];
    bool held[DMM_MH_MAX_NODES];
    /* the operation in progress */
    unsigned cur_home;
    uint64_t cur_t, cur_msgs, cur_hops;
    unsigned pending; /* node unlocked, its report not yet seen */
    mhsim_result *r;
    int oom;
    /* trace replay: per object its pointer, operations done, last finish */
    void **obj;
    uint32_t *obj_done;
    uint64_t *obj_time;
    size_t nobj;
} sim;

static void q_push(sim *s, uint64_t t, unsigned c)
{
    if (s->qn == s->qcap) {
        size_t nc = s->qcap ? s->qcap * 2 : 64;
        qent *nq = realloc(s->q, nc * sizeof *nq);
        if (!nq) {
            s->oom = 1;
            return;
        }
        s->q = nq;
        s->qcap = nc;
    }
    qent e = {t, s->seq++, c};
    size_t i = s->qn++;
    while (i > 0) {
        size_t pa = (i - 1) / 2;
        qent *q = &s->q[pa];
        if (q->t < e.t || (q->t == e.t && q->seq < e.seq))
            break;
        s->q[i] = *q;
        i = pa;
    }
    s->q[i] = e;
}

static qent q_pop(sim *s)
{
    qent top = s->q[0];
    qent last = s->q[--s->qn];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        qent *best = &last;
        if (l < s->qn && (s->q[l].t < best->t || (s->q[l].t == best->t && s->q[l].seq < best->seq))) {
            best = &s->q[l];
            m = l;
        }
        if (l + 1 < s->qn &&
            (s->q[l + 1].t < best->t || (s->q[l + 1].t == best->t && s->q[l + 1].seq < best->seq))) {
            best = &s->q[l + 1];
            m = l + 1;
        }
        if (m == i)
            break;
        s->q[i] = *best;
        i = m;
    }
    if (s->qn)
        s->q[i] = last;
    return top;
}

static void emit(sim *s, core *c, uint8_t kind, uint32_t a, uint32_t b, uint32_t size)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 32;
        op *no = realloc(c->ops, nc * sizeof *no);
        if (!no) {
            s->oom = 1;
            return;
        }
        c->ops = no;
        c->cap = nc;
    }
    c->ops[c->n++] = (op){kind, a, b, size};
    if ((kind == OP_ALLOC) && a + 1 > c->nslots)
        c->nslots = a + 1;
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *st, uint32_t n)
{
    /* rejection sampling: no modulo bias, integer only */
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do
        v = rng_next(st);
    while (v >= lim);
    return (uint32_t)(v % n);
}

/* The shapes (docs/multiheap-sim.md has the table).  Sizes follow the
 * P2012-shaped kernels of bench/workloads (384x256 image in 96 32x32 tiles;
 * 128x128 float product in 256 8x8 output tiles). */
typedef struct shape {
    const char *name;
    uint32_t tasks;
    uint32_t master_pre[2];    /* master: app descriptor, job table (0 = none) */
    uint32_t per_worker_desc;  /* master: one descriptor per worker */
    uint32_t buf[MAXBUF];      /* per task, by the master, freed by the worker */
    uint32_t worker_pre[3];    /* per worker, at its start, freed at its end */
    uint32_t temp[2];          /* per task, by the worker, freed in the task */
    uint32_t compute;          /* cycles of work per task */
    bool corners;              /* FAST: 0..48 corner records of 16 B per task */
} shape;

static const shape shapes[] = {
    {"fast", 96, {64, 0}, 96, {1444, 0, 0, 0}, {0, 0, 0}, {1024, 0}, 3000, true},
    {"gaussian", 96, {64, 0}, 96, {64, 1444, 1024, 0}, {28, 28, 196}, {2432, 0}, 4000, false},
    {"integral", 96, {64, 0}, 96, {1024, 4096, 0, 0}, {1024, 0, 0}, {1536, 0}, 2500, false},
    {"matrix", 256, {2048, 0}, 48, {256, 256, 256, 0}, {0, 0, 0}, {256, 0}, 1600, false},
};

/* A trace: thread t runs on node t % nodes, its operations in trace order.
 * An operation on an object waits until the object's earlier operations
 * (in trace order, on any node) are done, so a free never overtakes its
 * allocation; SYNC records are not needed for that and are skipped. */
static int build_trace_programs(sim *s)
{
    const dmm_trace *t = s->p->trace;
    uint64_t maxid = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->ops[i].kind != DMM_T_SYNC && t->ops[i].id > maxid)
            maxid = t->ops[i].id;
    if (maxid >= UINT32_MAX)
        return -1;
    s->nobj = (size_t)maxid + 1;
    s->obj = calloc(s->nobj, sizeof *s->obj);
    s->obj_done = calloc(s->nobj, sizeof *s->obj_done);
    s->obj_time = calloc(s->nobj, sizeof *s->obj_time);
    uint32_t *ord = calloc(s->nobj, sizeof *ord);
    if (!s->obj || !s->obj_done || !s->obj_time || !ord) {
        free(ord);
        return -1;
    }
    for (size_t i = 0; i < t->n; i++) {
        const dmm_trace_op *o = &t->ops[i];
        core *c = &s->cores[o->tid % s->n];
        uint32_t id = (uint32_t)o->id;
        uint32_t size = o->size > UINT32_MAX ? UINT32_MAX : (uint32_t)o->size;
        switch (o->kind) {
        case DMM_T_MALLOC:
        case DMM_T_CALLOC:
        case DMM_T_ALIGNED: /* the multi-heap has no aligned entry: plain malloc */
            emit(s, c, OP_T_ALLOC, id, ord[id]++, size);
            break;
        case DMM_T_REALLOC:
            emit(s, c, OP_T_REALLOC, id, ord[id]++, size);
            break;
        case DMM_T_FREE:
            emit(s, c, OP_T_FREE, id, ord[id]++, 0);
            break;
        default:
            break;
        }
    }
    free(ord);
    return s->oom ? -1 : 0;
}

static int build_programs(sim *s)
{
    const mhsim_params *p = s->p;
    unsigned n = s->n;
    core *m = &s->cores[0];
    if (strcmp(p->workload, "trace") == 0)
        return p->trace ? build_trace_programs(s) : -1;
    if (strcmp(p->workload, "probe") == 0) {
        /* One core allocates 64 B, waits, frees it; every other core idles. */
        unsigned h = p->probe_home == DMM_MH_NO_NODE ? n - 1 : p->probe_home;
        core *c = &s->cores[h];
        emit(s, c, OP_ALLOC, 0, 0, 64);
        emit(s, c, OP_COMPUTE, 1000, 0, 0);
        emit(s, c, OP_FREE, 0, 0, 0);
        if (p->probe_busy != DMM_MH_NO_NODE && p->probe_busy < n && p->probe_busy != h) {
            core *b = &s->cores[p->probe_busy];
            emit(s, b, OP_ALLOC, 0, 0, 64);
            emit(s, b, OP_COMPUTE, 1000, 0, 0);
            emit(s, b, OP_FREE, 0, 0, 0);
        }
        s->ntasks = 0;
        return s->oom ? -1 : 0;
    }
    if (strcmp(p->workload, "spill") == 0) {
        /* Remote contention: no master; every core runs SPILL_ROUNDS rounds
         * of SPILL_BLOCKS allocations, computes, then frees them in
         * allocation order.  Heavy cores (a checkerboard: x + y even) ask 2..6 KiB a block (about 48 KiB live: with 32 KiB per
         * node a third spills to remote heaps), light cores 256 B..1 KiB
         * (about 8 KiB), so there is room elsewhere, but the neighbours are
         * busy with their own allocations when a spill comes.  Core i's
         * sizes come from its own seeded stream. */
        enum { SPILL_ROUNDS = 16, SPILL_BLOCKS = 12 };
        for (unsigned i = 0; i < n; i++) {
            core *c = &s->cores[i];
            uint64_t rng = p->seed ^ (0x7370696c6c000000ull + i); /* "spill" */
            bool heavy = (i % p->width + i / p->width) % 2 == 0;
            for (unsigned r = 0; r < SPILL_ROUNDS; r++) {
                for (unsigned b = 0; b < SPILL_BLOCKS; b++)
                    emit(s, c, OP_ALLOC, b, 0,
                         heavy ? 2048u + rng_below(&rng, 4097u) : 256u + rng_below(&rng, 769u));
                emit(s, c, OP_COMPUTE, 1000u + rng_below(&rng, 1000u), 0, 0);
                for (unsigned b = 0; b < SPILL_BLOCKS; b++)
                    emit(s, c, OP_FREE, b, 0, 0);
            }
        }
        s->ntasks = 0;
        return s->oom ? -1 : 0;
    }
    const shape *sh = NULL;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (strcmp(shapes[i].name, p->workload) == 0)
            sh = &shapes[i];
    if (!sh)
        return -1;
    unsigned workers = n - 1;
    s->ntasks = sh->tasks;
    s->task_worker = calloc(sh->tasks, sizeof *s->task_worker);
    s->task_sent = calloc(sh->tasks, sizeof *s->task_sent);
    s->task_arrival = calloc(sh->tasks, sizeof *s->task_arrival);
    s->bufs = calloc((size_t)sh->tasks * MAXBUF, sizeof *s->bufs);
    s->outstanding = calloc(n, sizeof *s->outstanding);
    if (!s->task_worker || !s->task_sent || !s->task_arrival || !s->bufs || !s->outstanding)
        return -1;
    uint64_t rng = p->seed ^ 0x6d6873696d000000ull; /* "mhsim" */
    uint32_t compute = (uint32_t)(((uint64_t)sh->compute * p->compute_pct) / 100u);

    /* master: descriptors, then the tasks round-robin, then the wrap-up */
    uint32_t ms = 0;
    for (unsigned i = 0; i < 2; i++)
        if (sh->master_pre[i])
            emit(s, m, OP_ALLOC, ms++, 0, sh->master_pre[i]);
    for (unsigned w = 0; w < workers; w++)
        emit(s, m, OP_ALLOC, ms++, 0, sh->per_worker_desc);
    uint32_t *wslots = calloc(n, sizeof *wslots);
    uint32_t *kept_first = calloc(n, sizeof *kept_first);
    if (!wslots || !kept_first) {
        free(wslots);
        free(kept_first);
        return -1;
    }
    /* worker prologues */
    for (unsigned w = 1; w < n; w++) {
        for (unsigned i = 0; i < 3; i++)
            if (sh->worker_pre[i])
                emit(s, &s->cores[w], OP_ALLOC, wslots[w]++, 0, sh->worker_pre[i]);
    }
    uint64_t total_corners = 0;
    for (uint32_t t = 0; t < sh->tasks; t++) {
        unsigned w = 1 + t % workers;
        core *c = &s->cores[w];
        s->task_worker[t] = w;
        for (unsigned j = 0; j < MAXBUF; j++)
            if (sh->buf[j])
                emit(s, m, OP_BUF_ALLOC, t, j, sh->buf[j]);
        emit(s, m, OP_SEND, t, 0, 0);
        /* the worker's side of the task */
        emit(s, c, OP_RECV, t, 0, 0);
        uint32_t tbase = wslots[w];
        for (unsigned i = 0; i < 2; i++)
            if (sh->temp[i])
                emit(s, c, OP_ALLOC, tbase + i, 0, sh->temp[i]);
        emit(s, c, OP_COMPUTE, compute / 2, 0, 0);
        for (unsigned i = 0; i < 2; i++)
            if (sh->temp[i])
                emit(s, c, OP_FREE, tbase + i, 0, 0);
        if (sh->corners) {
            /* corners found in this tile: sum of four uniforms 0..12 */
            uint32_t k = 0;
            for (unsigned i = 0; i < 4; i++)
                k += rng_below(&rng, 13);
            total_corners += k;
            /* kept until the worker's end: slots after the temporaries */
            if (!kept_first[w])
                kept_first[w] = 0;
            for (uint32_t i = 0; i < k; i++)
                emit(s, c, OP_ALLOC, tbase + 2 + kept_first[w]++, 0, 16);
        }
        emit(s, c, OP_COMPUTE, compute - compute / 2, 0, 0);
        for (unsigned j = 0; j < MAXBUF; j++)
            if (sh->buf[j])
                emit(s, c, OP_BUF_FREE, t, j, 0);
        emit(s, c, OP_DONE, t, 0, 0);
    }
    /* worker epilogues: corner records, then the prologue's blocks */
    for (unsigned w = 1; w < n; w++) {
        core *c = &s->cores[w];
        for (uint32_t i = 0; i < kept_first[w]; i++)
            emit(s, c, OP_FREE, wslots[w] + 2 + i, 0, 0);
        for (uint32_t i = 0; i < wslots[w]; i++)
            emit(s, c, OP_FREE, i, 0, 0);
    }
    emit(s, m, OP_WAIT_ALL, 0, 0, 0);
    if (sh->corners && total_corners) {
        emit(s, m, OP_ALLOC, ms, 0, (uint32_t)(16u * total_corners));
        emit(s, m, OP_FREE, ms, 0, 0);
    }
    for (uint32_t i = ms; i-- > 0;)
        emit(s, m, OP_FREE, i, 0, 0);
    free(wslots);
    free(kept_first);
    return s->oom ? -1 : 0;
}

/* ---- lock hooks and observer: the cost model -------------------------------- */

static void finish_unlock(sim *s);

static void count_msg(sim *s, unsigned a, unsigned b)
{
    s->cur_msgs++;
    s->cur_hops += mhsim_hops(s->p->width, a, b);
}

static bool sim_try_lock(void *ctx, unsigned node)
{
    sim *s = ctx;
    finish_unlock(s);
    unsigned h = s->cur_home;
    uint64_t t = s->cur_t;
    if (node != h) {
        t += mhsim_msg_cycles(s->p, h, node);
        count_msg(s, h, node);
    }
    if (s->busy_until[node] > t) {
        /* the heap is busy when the request arrives: a "busy" reply */
        if (node != h) {
            t += mhsim_msg_cycles(s->p, node, h);
            count_msg(s, node, h);
        }
        s->cur_t = t;
        s->r->busy_tries++;
        return false;
    }
    s->held[node] = true;
    s->acq_t[node] = t;
    s->svc[node] = 0;
    s->cur_t = t;
    return true;
}

static void sim_lock(void *ctx, unsigned node)
{
    sim *s = ctx;
    finish_unlock(s);
    unsigned h = s->cur_home;
    uint64_t t = s->cur_t;
    if (node != h) {
        t += mhsim_msg_cycles(s->p, h, node);
        count_msg(s, h, node);
    }
    uint64_t start = s->busy_until[node] > t ? s->busy_until[node] : t;
    s->r->lock_wait += start - t;
    s->held[node] = true;
    s->acq_t[node] = start;
    s->svc[node] = 0;
    s->cur_t = start;
}

/* The multi-heap reports what it did at a heap (ALLOC, FREE) just after
 * unlocking it, so an unlock is kept pending until that report (or any other
 * hook call, or the end of the operation) and only then ends the heap's busy
 * interval and sends the reply. */
static void finish_unlock(sim *s)
{
    unsigned node = s->pending;
    if (node == DMM_MH_NO_NODE)
        return;
    s->pending = DMM_MH_NO_NODE;
    unsigned h = s->cur_home;
    uint64_t end = s->acq_t[node] + s->svc[node];
    s->busy_until[node] = end;
    if (s->cur_t < end)
        s->cur_t = end;
    if (node != h) {
        s->cur_t += mhsim_msg_cycles(s->p, node, h);
        count_msg(s, node, h);
    }
}

static void sim_unlock(void *ctx, unsigned node)
{
    sim *s = ctx;
    finish_unlock(s);
    s->held[node] = false;
    s->pending = node;
}

static void add_service(sim *s, unsigned node, uint64_t cyc)
{
    if (s->pending == node) {
        s->svc[node] += cyc;
        finish_unlock(s);
    } else if (s->held[node]) {
        s->svc[node] += cyc;
        s->cur_t += cyc;
    } else if (cyc) {
        /* not under a lock we saw: charge it to the caller and the heap */
        s->r->unattributed++;
        if (s->busy_until[node] < s->cur_t)
            s->busy_until[node] = s->cur_t;
        s->busy_until[node] += cyc;
        s->cur_t += cyc;
    }
}

static void sim_event(void *ctx, unsigned home, unsigned node, dmm_mh_event ev, size_t ok)
{
    sim *s = ctx;
    (void)home;
    if (node >= s->n)
        return;
    switch (ev) {
    case DMM_MH_EV_ALLOC:
        add_service(s, node, s->p->svc_alloc);
        break;
    case DMM_MH_EV_FREE:
        add_service(s, node, s->p->svc_free);
        break;
    case DMM_MH_EV_DRAIN:
        add_service(s, node, (uint64_t)ok * s->p->svc_free);
        break;
    case DMM_MH_EV_QUEUE:
        finish_unlock(s);
        /* one message to the owner's queue; the sender goes on */
        s->cur_t += mhsim_msg_cycles(s->p, s->cur_home, node);
        count_msg(s, s->cur_home, node);
        break;
    case DMM_MH_EV_BUSY:
        finish_unlock(s);
        break; /* charged by try_lock */
    }
}

/* ---- running ------------------------------------------------------------------ */

static void begin_op(sim *s, unsigned home, uint64_t t)
{
    s->cur_home = home;
    s->cur_t = t;
    s->cur_msgs = 0;
    s->cur_hops = 0;
    s->pending = DMM_MH_NO_NODE;
}

static void schedule(sim *s, unsigned c, uint64_t t)
{
    s->cores[c].state = ST_READY;
    if (s->cores[c].time < t)
        s->cores[c].time = t;
    q_push(s, s->cores[c].time, c);
}

static void do_alloc(sim *s, unsigned id, core *c, void **slot, uint32_t size)
{
    begin_op(s, id, c->time);
    void *ptr = dmm_mh_malloc(s->mh, id, size);
    finish_unlock(s);
    *slot = ptr;
    s->r->alloc_events++;
    s->r->alloc_cycles += s->cur_t - c->time;
    s->r->alloc_msgs += s->cur_msgs;
    s->r->alloc_hops += s->cur_hops;
    if (!ptr)
        s->r->failures++;
    else
        memset(ptr, (int)(id & 0xff), size < 64 ? size : 64); /* the block is really used */
    c->time = s->cur_t + s->p->think;
}

static void do_free(sim *s, unsigned id, core *c, void **slot)
{
    if (!*slot)
        return; /* its allocation failed (counted there) */
    begin_op(s, id, c->time);
    dmm_mh_free(s->mh, id, *slot);
    finish_unlock(s);
    *slot = NULL;
    s->r->free_events++;
    s->r->free_cycles += s->cur_t - c->time;
    s->r->free_msgs += s->cur_msgs;
    s->r->free_hops += s->cur_hops;
    c->time = s->cur_t + s->p->think;
}

/* Runs core id's operations until it has done one timed step or blocks. */
static void step(sim *s, unsigned id)
{
    core *c = &s->cores[id];
    const mhsim_params *p = s->p;
    while (c->pc < c->n) {
        op *o = &c->ops[c->pc];
        switch (o->kind) {
        case OP_ALLOC:
            do_alloc(s, id, c, &c->slot[o->a], o->size);
            c->pc++;
            schedule(s, id, c->time);
            return;
        case OP_FREE:
            do_free(s, id, c, &c->slot[o->a]);
            c->pc++;
            schedule(s, id, c->time);
            return;
        case OP_BUF_ALLOC:
            do_alloc(s, id, c, &s->bufs[(size_t)o->a * MAXBUF + o->b], o->size);
            c->pc++;
            schedule(s, id, c->time);
            return;
        case OP_BUF_FREE:
            do_free(s, id, c, &s->bufs[(size_t)o->a * MAXBUF + o->b]);
            c->pc++;
            schedule(s, id, c->time);
            return;
        case OP_COMPUTE:
            c->time += o->a;
            c->pc++;
            schedule(s, id, c->time);
            return;
        case OP_SEND: {
            unsigned w = s->task_worker[o->a];
            if (s->outstanding[w] >= p->depth) {
                c->state = ST_BLOCKED;
                s->master_wait_worker = w;
                return;
            }
            s->outstanding[w]++;
            s->total_outstanding++;
            s->task_sent[o->a] = true;
            s->task_arrival[o->a] = c->time + mhsim_msg_cycles(p, id, w);
            s->r->task_msgs++;
            s->r->task_hops += mhsim_hops(p->width, id, w);
            c->time += p->inject;
            c->pc++;
            core *wc = &s->cores[w];
            if (wc->state == ST_BLOCKED && wc->pc < wc->n && wc->ops[wc->pc].kind == OP_RECV &&
                wc->ops[wc->pc].a == o->a)
                schedule(s, w, s->task_arrival[o->a]);
            schedule(s, id, c->time);
            return;
        }
        case OP_RECV:
            if (!s->task_sent[o->a]) {
                c->state = ST_BLOCKED;
                return;
            }
            if (c->time < s->task_arrival[o->a])
                c->time = s->task_arrival[o->a];
            c->pc++;
            break;
        case OP_DONE: {
            uint64_t arr = c->time + mhsim_msg_cycles(p, id, 0);
            s->outstanding[id]--;
            s->total_outstanding--;
            if (arr > s->last_done_arrival)
                s->last_done_arrival = arr;
            s->r->task_msgs++;
            s->r->task_hops += mhsim_hops(p->width, id, 0);
            c->time += p->inject;
            c->pc++;
            core *mc = &s->cores[0];
            if (mc->state == ST_BLOCKED) {
                const op *mo = &mc->ops[mc->pc];
                if (mo->kind == OP_SEND && s->master_wait_worker == id)
                    schedule(s, 0, arr);
                else if (mo->kind == OP_WAIT_ALL && s->total_outstanding == 0)
                    schedule(s, 0, s->last_done_arrival);
            }
            break;
        }
        case OP_T_ALLOC:
        case OP_T_REALLOC:
        case OP_T_FREE: {
            if (s->obj_done[o->a] != o->b) {
                c->state = ST_BLOCKED; /* an earlier operation on the object is not done */
                return;
            }
            if (c->time < s->obj_time[o->a])
                c->time = s->obj_time[o->a];
            void **slot = &s->obj[o->a];
            if (o->kind == OP_T_ALLOC) {
                do_alloc(s, id, c, slot, o->size);
            } else if (o->kind == OP_T_FREE) {
                do_free(s, id, c, slot);
            } else {
                begin_op(s, id, c->time);
                void *q = dmm_mh_realloc(s->mh, id, *slot, o->size);
                finish_unlock(s);
                s->r->alloc_events++;
                s->r->alloc_cycles += s->cur_t - c->time;
                s->r->alloc_msgs += s->cur_msgs;
                s->r->alloc_hops += s->cur_hops;
                if (!q && o->size)
                    s->r->failures++; /* the old block stays live */
                else
                    *slot = q;
                c->time = s->cur_t + p->think;
            }
            s->obj_done[o->a]++;
            s->obj_time[o->a] = c->time;
            c->pc++;
            /* wake whoever waits for this object's next operation */
            for (unsigned k = 0; k < s->n; k++) {
                core *w = &s->cores[k];
                if (w->state == ST_BLOCKED && w->pc < w->n && w->ops[w->pc].kind >= OP_T_ALLOC &&
                    w->ops[w->pc].a == o->a && w->ops[w->pc].b == s->obj_done[o->a])
                    schedule(s, k, s->obj_time[o->a]);
            }
            schedule(s, id, c->time);
            return;
        }
        case OP_WAIT_ALL:
            if (s->total_outstanding) {
                c->state = ST_BLOCKED;
                return;
            }
            if (c->time < s->last_done_arrival)
                c->time = s->last_done_arrival;
            c->pc++;
            break;
        }
    }
    c->state = ST_DONE;
}

static void sim_release(sim *s)
{
    if (s->cores) {
        for (unsigned i = 0; i < s->n; i++) {
            free(s->cores[i].ops);
            free(s->cores[i].slot);
        }
    }
    free(s->cores);
    free(s->task_worker);
    free(s->task_sent);
    free(s->task_arrival);
    free(s->bufs);
    free(s->outstanding);
    free(s->q);
    free(s->obj);
    free(s->obj_done);
    free(s->obj_time);
}

int mhsim_run(const mhsim_params *p, mhsim_result *r, const char **err)
{
    static sim s; /* large (per-node arrays): not on the stack */
    memset(&s, 0, sizeof s);
    memset(r, 0, sizeof *r);
    s.p = p;
    s.r = r;
    s.n = p->width * p->height;
    r->nodes = s.n;
    if (s.n < 1 || s.n > DMM_MH_MAX_NODES) {
        *err = "mesh too large";
        return -1;
    }
    if (strcmp(p->workload, "probe") != 0 && strcmp(p->workload, "trace") != 0 && s.n < 2) {
        *err = "the workloads need a master and at least one worker";
        return -1;
    }
    dmm_mh_config cfg = dmm_mh_default_config(s.n);
    cfg.mesh_width = p->width;
    cfg.policy = p->policy;
    cfg.remote_free = p->remote_free;
    cfg.home_cache = 0; /* cache hits visit no heap and raise no event to charge */
    cfg.final_blocking_pass = p->final_pass;
    if (p->heap[0]) {
        const char *perr = NULL;
        if (dmm_heap_config_parse(p->heap, &cfg.heap, &perr) != DMM_OK) {
            *err = perr ? perr : "bad heap config";
            return -1;
        }
    }
    cfg.lock_ops.try_lock = sim_try_lock;
    cfg.lock_ops.lock = sim_lock;
    cfg.lock_ops.unlock = sim_unlock;
    cfg.lock_ops.ctx = &s;
    cfg.observer.event = sim_event;
    cfg.observer.ctx = &s;
    const char *reason = NULL;
    if (dmm_mh_config_check(&cfg, &reason) != DMM_OK) {
        *err = reason ? reason : "multi-heap config refused";
        return -1;
    }
    size_t bytes = dmm_mh_buffer_size(&cfg, (size_t)p->per_node);
    if (!bytes) {
        *err = "--per-node too large";
        return -1;
    }
    size_t alloc_bytes = (bytes + 4095u) & ~(size_t)4095u;
    void *buf = aligned_alloc(4096, alloc_bytes);
    if (!buf) {
        *err = "out of memory for the multi-heap buffer";
        return -1;
    }
    int rc = -1;
    dmm_status st = dmm_mh_init(&s.mh, buf, bytes, &cfg);
    if (st != DMM_OK) {
        *err = "dmm_mh_init failed (is --per-node big enough for a node heap?)";
        free(buf);
        return -1;
    }
    if (p->offline != DMM_MH_NO_NODE && p->offline_at == 0 && dmm_mh_set_offline(s.mh, p->offline, true) != DMM_OK) {
        *err = "--offline: the node cannot be taken out of service (central has one heap)";
        goto out;
    }
    s.cores = calloc(s.n, sizeof *s.cores);
    if (!s.cores || build_programs(&s) != 0) {
        *err = "out of memory building the workload";
        goto out;
    }
    for (unsigned i = 0; i < s.n; i++) {
        core *c = &s.cores[i];
        if (c->nslots) {
            c->slot = calloc(c->nslots, sizeof *c->slot);
            if (!c->slot) {
                *err = "out of memory";
                goto out;
            }
        }
        if (c->n)
            schedule(&s, i, 0);
        else
            c->state = ST_DONE;
    }
    bool fault_pending = p->offline != DMM_MH_NO_NODE && p->offline_at > 0;
    while (s.qn && !s.oom) {
        qent e = q_pop(&s);
        if (fault_pending && e.t >= p->offline_at) {
            /* the fault strikes between two operations: no heap lock is held */
            fault_pending = false;
            if (dmm_mh_set_offline(s.mh, p->offline, true) != DMM_OK) {
                *err = "--offline: the node cannot be taken out of service (central has one heap)";
                goto out;
            }
            r->offline_time = e.t;
        }
        step(&s, e.core);
    }
    if (s.oom) {
        *err = "out of memory in the event queue";
        goto out;
    }
    for (unsigned i = 0; i < s.n; i++) {
        if (s.cores[i].state != ST_DONE) {
            *err = "simulation deadlock: a core never finished (bug)";
            goto out;
        }
        if (s.cores[i].time > r->makespan)
            r->makespan = s.cores[i].time;
    }
    const char *detail = NULL;
    /* the checker takes the locks: keep its costs out of the results */
    uint64_t keep_busy = r->busy_tries, keep_wait = r->lock_wait, keep_un = r->unattributed;
    begin_op(&s, 0, r->makespan);
    r->check_ok = dmm_mh_check(s.mh, &detail) == DMM_OK;
    r->busy_tries = keep_busy;
    r->lock_wait = keep_wait;
    r->unattributed = keep_un;
    snprintf(r->check_detail, sizeof r->check_detail, "%s", detail ? detail : (r->check_ok ? "ok" : "corrupt"));
    for (unsigned i = 0; i < s.n; i++)
        r->node[i].st = dmm_mh_get_node_stats(s.mh, i);
    rc = 0;
out:
    if (s.mh)
        dmm_mh_destroy(s.mh);
    free(buf);
    sim_release(&s);
    return rc;
}
