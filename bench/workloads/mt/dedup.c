/*
 * mt-dedup - a compression pipeline in the style of PARSEC's dedup, as the
 * seed describes it (README.md here): five stages, the middle three
 * parallel with N threads each, connected by queues.
 *
 *   1 fragment  (1 thread)  cuts a synthetic input stream (records drawn
 *                           from a small dictionary, so content repeats)
 *                           into coarse chunks of 64..256 KiB, each a new
 *                           malloc'd buffer;
 *   2 refine    (N threads) splits a coarse chunk at content-defined
 *                           boundaries (a rolling hash) into fine chunks of
 *                           128 B..8 KiB, copies each into its own buffer and
 *                           frees the coarse chunk;
 *   3 dedup     (N threads) hashes each fine chunk and looks it up in a
 *                           shared table; a duplicate's buffer is freed here,
 *                           a new chunk goes on;
 *   4 compress  (N threads) run-length encodes a new chunk into a worst-case
 *                           buffer, shrinks it with realloc and frees the
 *                           fine chunk;
 *   5 output    (1 thread)  decodes every compressed chunk again, checks it
 *                           against the chunk's hash and frees both.
 *
 * The allocator sees what the seed says matters: buffers made by one thread
 * and freed by another (every buffer crosses a stage), sizes from a few
 * bytes to 256 KiB, and large buffers.  The input grows with the thread count
 * (each stage thread has the same amount of work).
 *
 * Checks: each chunk's content hash is recomputed by every stage that
 * receives it, and the output stage decodes the compressed form and compares;
 * every work item carries a magic word and a key; a realloc must keep the
 * compressed bytes; the table comes from calloc and must read as zero; at
 * the end the chunks, bytes and unique chunks balance.  The checksum (a sum
 * over every fine chunk's position, length and hash, and every unique
 * chunk's compressed length) does not depend on the scheduling: which copy
 * of a repeated chunk counts as the first varies, but not what is counted.
 */
#include "mt_common.h"

#define COARSE_MIN (64u << 10)
#define COARSE_MAX (256u << 10)
#define FINE_MIN 128u
#define FINE_MAX 8192u
#define FINE_MASK 0x3ffu /* boundary when the rolling hash's low bits are 0: ~1 KiB average */
#define RECORDS 48       /* dictionary of repeated records */
#define QCAP 64          /* queue capacity (items) */
#define IMAGIC 0x6465647570697465u /* "dedupite" */

/* ---- the input stream ---------------------------------------------------------- */

/* Record r's byte i: short runs over a 16-letter alphabet, so RLE has work. */
static unsigned char rec_byte(uint64_t seed, unsigned r, size_t i)
{
    uint64_t k = mt_mix(seed ^ ((uint64_t)r << 32) ^ (i >> 3));
    return (unsigned char)('a' + (k >> ((i & 7) * 4) & 15));
}

static size_t rec_len(uint64_t seed, unsigned r) { return 256 + (size_t)(mt_mix(seed + r) % 3840); }

/* The dictionary, made before the timed part so the serial fragment stage
 * only copies. */
static unsigned char *g_dict[RECORDS];
static size_t g_dict_len[RECORDS];

/* The fragment stage's generator: a sequence of dictionary records. */
typedef struct stream {
    uint64_t seed;
    mt_rng rng;
    unsigned rec;
    size_t off, len;
} stream;

static void stream_fill(stream *s, unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s->off == s->len) {
            s->rec = (unsigned)mt_below(&s->rng, RECORDS);
            s->off = 0;
            s->len = g_dict_len[s->rec];
        }
        size_t k = s->len - s->off < n - i ? s->len - s->off : n - i;
        memcpy(buf + i, g_dict[s->rec] + s->off, k);
        s->off += k;
        i += k - 1;
    }
}

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u ^ n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return mt_mix(h);
}

/* ---- work items and queues ------------------------------------------------------- */

typedef struct item {
    uint64_t magic, key;     /* key: hash of (coarse, offset, len) */
    uint64_t seal;           /* hash of every other field, checked at each stage */
    unsigned char *data;     /* coarse / fine / compressed bytes */
    size_t len, clen;        /* data length; compressed length */
    uint64_t coarse, offset; /* position in the stream */
    uint64_t hash;           /* content hash of the (uncompressed) chunk */
    uint64_t data_owner, item_owner; /* stage threads that made data and item */
    uint64_t stage;          /* the stage that passed it on last (1..4) */
    int dup;
} item;

/* A bounded FIFO of item pointers (the program's lock, not the allocator's);
 * the ring lives in the queue, so an item overwritten by a broken allocator
 * cannot break the queue itself, only fail its seal. */
typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    item *ring[QCAP];
    unsigned head, count, producers; /* producers: still running */
} queue;

static void q_init(queue *q, unsigned producers)
{
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->head = q->count = 0;
    q->producers = producers;
}

static void q_destroy(queue *q)
{
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
}

static void q_push(queue *q, item *it)
{
    pthread_mutex_lock(&q->mu);
    while (q->count >= QCAP)
        pthread_cond_wait(&q->not_full, &q->mu);
    q->ring[(q->head + q->count) % QCAP] = it;
    q->count++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

/* One producer is done; the last one wakes every consumer. */
static void q_done(queue *q)
{
    pthread_mutex_lock(&q->mu);
    if (--q->producers == 0)
        pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

/* Next item, or NULL when the queue is empty and every producer is done. */
static item *q_pop(queue *q)
{
    pthread_mutex_lock(&q->mu);
    while (!q->count && q->producers > 0)
        pthread_cond_wait(&q->not_empty, &q->mu);
    item *it = NULL;
    if (q->count) {
        it = q->ring[q->head];
        q->head = (q->head + 1) % QCAP;
        q->count--;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->mu);
    return it;
}

/* ---- the dedup table: open addressing, striped locks (the program's) -------------- */

#define STRIPES 64

typedef struct slot {
    uint64_t hash; /* 0: empty (a real hash of 0 is stored as 1) */
    uint64_t len;
} slot;

static slot *g_table;
static size_t g_table_mask;
static pthread_mutex_t g_stripe[STRIPES];

/* Inserts (hash, len); returns 1 if it was new, 0 if it was already there. */
static int table_insert(uint64_t hash, uint64_t len)
{
    if (hash == 0)
        hash = 1;
    size_t i = (size_t)hash & g_table_mask;
    for (size_t probes = 0; probes <= g_table_mask; probes++, i = (i + 1) & g_table_mask) {
        /* stripe by slot: a probe sequence crosses stripes, each slot is guarded by one */
        pthread_mutex_t *mu = &g_stripe[i % STRIPES];
        pthread_mutex_lock(mu);
        slot *s = &g_table[i];
        if (s->hash == 0) {
            s->hash = hash;
            s->len = len;
            pthread_mutex_unlock(mu);
            return 1;
        }
        int same = s->hash == hash && s->len == len;
        pthread_mutex_unlock(mu);
        if (same)
            return 0;
    }
    mt_fail("dedup: the table is full");
}

/* ---- stages ------------------------------------------------------------------------- */

typedef struct thr {
    uint64_t id;
    queue *in, *out;
    uint64_t seed, ncoarse;
    uint64_t allocs, frees, cross;
    /* output stage: what it saw */
    uint64_t chunks, bytes, uniques, sum;
} thr;

static uint64_t item_key(const item *it) { return mt_mix(mt_sum(mt_sum(it->coarse, it->offset), it->len)); }

static uint64_t item_seal(const item *it)
{
    uint64_t s = mt_sum(it->magic, it->key);
    s = mt_sum(s, (uint64_t)(uintptr_t)it->data);
    s = mt_sum(s, it->len);
    s = mt_sum(s, it->clen);
    s = mt_sum(s, it->coarse);
    s = mt_sum(s, it->offset);
    s = mt_sum(s, it->hash);
    s = mt_sum(s, it->data_owner);
    s = mt_sum(s, it->item_owner);
    s = mt_sum(s, it->stage);
    return mt_sum(s, (uint64_t)it->dup);
}

/* Seals the item and hands it from stage to the next one. */
static void pass(queue *q, item *it, uint64_t stage)
{
    it->stage = stage;
    it->seal = item_seal(it);
    q_push(q, it);
}

static item *item_new(thr *t)
{
    item *it = mt_malloc(sizeof *it);
    memset(it, 0, sizeof *it);
    it->magic = IMAGIC;
    it->item_owner = t->id;
    t->allocs++;
    return it;
}

/* A stage works on a checked copy of the item: a broken allocator that hands
 * the item to someone else as well makes the check fail, never a crash. */
static item item_take(const item *p, const char *stage, uint64_t from)
{
    item w;
    memcpy(&w, p, sizeof w);
    if (w.magic != IMAGIC || w.key != item_key(&w) || w.seal != item_seal(&w))
        mt_fail("dedup %s: work item %p was overwritten (magic %016" PRIx64 ")", stage, (const void *)p, w.magic);
    if (w.stage != from)
        mt_fail("dedup %s: work item %p comes from stage %" PRIu64 ", not %" PRIu64 " (handed out twice?)", stage,
                (const void *)p, w.stage, from);
    return w;
}

/* Writes the stage's copy back and hands the item on. */
static void pass_on(queue *q, item *p, const item *w, uint64_t stage)
{
    memcpy(p, w, sizeof *p);
    pass(q, p, stage);
}

static void data_free(thr *t, item *it)
{
    if (it->data_owner != t->id)
        t->cross++;
    mt_free(it->data);
    it->data = NULL;
    t->frees++;
}

static void item_free(thr *t, item *it, uint64_t owner)
{
    if (owner != t->id)
        t->cross++;
    it->magic = 0xdddddddddddddddd;
    mt_free(it);
    t->frees++;
}

static void *fragment(void *arg)
{
    thr *t = arg;
    stream s = {t->seed, mt_rng_make(t->seed, 0xf4a6), 0, 0, 0};
    mt_rng sizes = mt_rng_make(t->seed, 0x512e);
    for (uint64_t c = 0; c < t->ncoarse; c++) {
        size_t n = mt_range(&sizes, COARSE_MIN, COARSE_MAX);
        item *it = item_new(t);
        it->data = mt_malloc(n);
        t->allocs++;
        it->data_owner = t->id;
        stream_fill(&s, it->data, n);
        it->len = n;
        it->coarse = c;
        it->hash = hash_bytes(it->data, n);
        it->key = item_key(it);
        pass(t->out, it, 1);
    }
    q_done(t->out);
    return NULL;
}

static void *refine(void *arg)
{
    thr *t = arg;
    item *p;
    while ((p = q_pop(t->in)) != NULL) {
        item w = item_take(p, "refine", 1), *c = &w;
        if (hash_bytes(c->data, c->len) != c->hash)
            mt_fail("dedup refine: coarse chunk %" PRIu64 " (%zu bytes at %p) changed in the queue", c->coarse, c->len,
                    (void *)c->data);
        size_t start = 0;
        uint32_t roll = 0;
        for (size_t i = 0; i < c->len; i++) {
            roll = (roll << 1) + (uint32_t)mt_mix(c->data[i]); /* gear-style rolling hash */
            size_t n = i + 1 - start;
            if (i + 1 == c->len || n == FINE_MAX || (n >= FINE_MIN && (roll & FINE_MASK) == 0)) {
                item *f = item_new(t);
                f->data = mt_malloc(n);
                t->allocs++;
                f->data_owner = t->id;
                memcpy(f->data, c->data + start, n);
                f->len = n;
                f->coarse = c->coarse;
                f->offset = start;
                f->hash = hash_bytes(f->data, n);
                f->key = item_key(f);
                pass(t->out, f, 2);
                start = i + 1;
                roll = 0;
            }
        }
        data_free(t, c);
        item_free(t, p, c->item_owner);
    }
    q_done(t->out);
    return NULL;
}

static void *dedup(void *arg)
{
    thr *t = arg;
    item *p;
    while ((p = q_pop(t->in)) != NULL) {
        item w = item_take(p, "dedup", 2), *f = &w;
        if (hash_bytes(f->data, f->len) != f->hash)
            mt_fail("dedup dedup: chunk %" PRIu64 "+%" PRIu64 " (%zu bytes at %p) changed in the queue", f->coarse,
                    f->offset, f->len, (void *)f->data);
        if (!table_insert(f->hash, f->len)) {
            f->dup = 1;
            data_free(t, f);
        }
        pass_on(t->out, p, f, 3);
    }
    q_done(t->out);
    return NULL;
}

/* run-length code: (count, byte) pairs, count 1..255 */
static size_t rle(const unsigned char *p, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t r = 1;
        while (i + r < n && r < 255 && p[i + r] == p[i])
            r++;
        out[o++] = (unsigned char)r;
        out[o++] = p[i];
        i += r;
    }
    return o;
}

static void *compress(void *arg)
{
    thr *t = arg;
    item *p;
    while ((p = q_pop(t->in)) != NULL) {
        item w = item_take(p, "compress", 3), *f = &w;
        if (!f->dup) {
            if (hash_bytes(f->data, f->len) != f->hash)
                mt_fail("dedup compress: chunk %" PRIu64 "+%" PRIu64 " (%zu bytes at %p) changed in the queue",
                        f->coarse, f->offset, f->len, (void *)f->data);
            unsigned char *z = mt_malloc(2 * f->len + 16); /* worst case */
            t->allocs++;
            size_t zn = rle(f->data, f->len, z);
            uint64_t zh = hash_bytes(z, zn);
            z = mt_realloc(z, zn); /* shrink to fit: the bytes must stay */
            if (hash_bytes(z, zn) != zh)
                mt_fail("dedup compress: realloc(%zu) lost the compressed bytes", zn);
            data_free(t, f);
            f->data = z;
            f->clen = zn;
            f->data_owner = t->id;
        }
        pass_on(t->out, p, f, 4);
    }
    q_done(t->out);
    return NULL;
}

static void *output(void *arg)
{
    thr *t = arg;
    item *p;
    while ((p = q_pop(t->in)) != NULL) {
        item w = item_take(p, "output", 4), *f = &w;
        t->chunks++;
        t->bytes += f->len;
        t->sum += mt_term(mt_sum(f->key, f->hash));
        if (!f->dup) {
            unsigned char *raw = mt_malloc(f->len);
            t->allocs++;
            size_t o = 0;
            for (size_t i = 0; i + 1 < f->clen; i += 2) {
                size_t r = f->data[i];
                if (r == 0 || o + r > f->len)
                    mt_fail("dedup output: chunk %" PRIu64 "+%" PRIu64 ": compressed form is corrupt", f->coarse,
                            f->offset);
                memset(raw + o, f->data[i + 1], r);
                o += r;
            }
            if (o != f->len || hash_bytes(raw, o) != f->hash)
                mt_fail("dedup output: chunk %" PRIu64 "+%" PRIu64 " decodes to other bytes than it had", f->coarse,
                        f->offset);
            mt_free(raw);
            t->frees++;
            t->uniques++;
            t->sum += mt_term(mt_sum(f->hash, f->clen));
            data_free(t, f);
        }
        item_free(t, p, f->item_owner);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    mt_opts o = mt_parse(argc, argv, "dedup",
                         "dedup-like pipeline: buffers of a few bytes..256 KiB made in one stage, freed in another.");
    size_t n = (size_t)o.threads;
    /* input: about scale * threads * 64 KiB (at least one coarse chunk) */
    uint64_t ncoarse = (o.scale * n * 64 * 1024) / ((COARSE_MIN + COARSE_MAX) / 2) + 1;
    size_t nthr = 3 * n + 2;
    /* table: at least twice the most fine chunks the input can hold */
    size_t cap = 1024;
    while (cap < 2 * (ncoarse * COARSE_MAX / FINE_MIN + ncoarse))
        cap <<= 1;
    g_table = mt_calloc(cap, sizeof *g_table);
    for (unsigned r = 0; r < RECORDS; r++) {
        g_dict_len[r] = rec_len(o.seed, r);
        g_dict[r] = mt_malloc(g_dict_len[r]);
        for (size_t i = 0; i < g_dict_len[r]; i++)
            g_dict[r][i] = rec_byte(o.seed, r, i);
    }
    g_table_mask = cap - 1;
    for (size_t i = 0; i < STRIPES; i++)
        pthread_mutex_init(&g_stripe[i], NULL);
    queue *qs = mt_calloc(4, sizeof *qs);
    q_init(&qs[0], 1);
    q_init(&qs[1], (unsigned)n);
    q_init(&qs[2], (unsigned)n);
    q_init(&qs[3], (unsigned)n);
    thr *ts = mt_calloc(nthr, sizeof *ts);
    pthread_t *th = mt_calloc(nthr, sizeof *th);
    void *(*fn[5])(void *) = {fragment, refine, dedup, compress, output};
    size_t stage_of[3 * 256 + 2];
    for (size_t i = 0; i < nthr; i++) {
        size_t st = i == 0 ? 0 : i == nthr - 1 ? 4 : 1 + (i - 1) / n;
        stage_of[i] = st;
        ts[i].id = i + 1;
        ts[i].seed = o.seed;
        ts[i].ncoarse = ncoarse;
        ts[i].in = st > 0 ? &qs[st - 1] : NULL;
        ts[i].out = st < 4 ? &qs[st] : NULL;
    }
    uint64_t t0 = mt_now_ns();
    for (size_t i = 0; i < nthr; i++)
        mt_spawn(&th[i], fn[stage_of[i]], &ts[i]);
    for (size_t i = 0; i < nthr; i++)
        mt_join(th[i]);
    uint64_t wall = mt_now_ns() - t0;

    uint64_t allocs = 0, frees = 0, cross = 0;
    for (size_t i = 0; i < nthr; i++) {
        allocs += ts[i].allocs;
        frees += ts[i].frees;
        cross += ts[i].cross;
    }
    thr *out = &ts[nthr - 1];
    /* what the input was: regenerate its length and count its distinct chunks */
    mt_rng sizes = mt_rng_make(o.seed, 0x512e);
    uint64_t bytes = 0;
    for (uint64_t c = 0; c < ncoarse; c++)
        bytes += mt_range(&sizes, COARSE_MIN, COARSE_MAX);
    uint64_t used = 0;
    for (size_t i = 0; i < cap; i++)
        used += g_table[i].hash != 0;
    if (out->bytes != bytes)
        mt_fail("dedup: the output saw %" PRIu64 " bytes, the input had %" PRIu64, out->bytes, bytes);
    if (out->uniques != used)
        mt_fail("dedup: %" PRIu64 " unique chunks reached the output, the table holds %" PRIu64, out->uniques, used);
    if (allocs != frees)
        mt_fail("dedup: %" PRIu64 " allocations, %" PRIu64 " frees", allocs, frees);
    for (size_t i = 0; i < 4; i++)
        if (qs[i].count)
            mt_fail("dedup: queue %zu is not empty", i);
    char extra[160];
    snprintf(extra, sizeof extra,
             "allocs=%" PRIu64 " cross_thread_frees=%" PRIu64 " chunks=%" PRIu64 " unique_chunks=%" PRIu64
             " input_bytes=%" PRIu64,
             allocs, cross, out->chunks, out->uniques, bytes);
    mt_report(&o, allocs + frees, wall, out->sum, extra);
    for (size_t i = 0; i < 4; i++)
        q_destroy(&qs[i]);
    for (size_t i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&g_stripe[i]);
    mt_free(th);
    mt_free(ts);
    mt_free(qs);
    mt_free(g_table);
    for (unsigned r = 0; r < RECORDS; r++)
        mt_free(g_dict[r]);
    return 0;
}
