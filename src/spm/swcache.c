/*
 * src/spm/swcache.c - the software-cache baseline (include/dmm/swcache.h,
 * docs/swcache.md): a set-associative cache of global-memory lines in a
 * core's local memory, every allocation a round trip to the main core.
 *
 * Local memory: [control block][tags][dirty masks][lines][bounce buffer],
 * each part 16-byte aligned.  A tag holds the line number (global address
 * / line) and an LRU stamp; a line's dirty mask has one bit per 16-byte
 * granule.  Only dirty granules are written back: a line also covers the
 * global heap's own headers and other objects, which this core must never
 * overwrite with its stale copy.  Every object is 16-aligned with a
 * 16-byte header {size, size ^ address ^ magic} in front and its size
 * rounded up to 16, so a granule holds bytes of one object only.
 */
#include "dmm/swcache.h"

#include "../core/report.h"
#include "../port/port.h"

#define SWC_MAGIC 0x43575344u /* "DSWC" */
#define SWC_HDR_MAGIC 0x5357434845414452ull
#define GR 16u
#define NO_TAG UINT64_MAX

typedef struct swc_tag {
    uint64_t line;  /* line number, NO_TAG when empty */
    uint32_t stamp; /* LRU: larger = used later */
    uint32_t pad;
} swc_tag;

struct dmm_swc {
    uint32_t magic;
    dmm_swc_config cfg;
    dmm_spm_global *g;
    unsigned core;
    dmm_spm_port port;
    size_t line, mask_bytes;
    unsigned ways, sets;
    uint64_t gsize;
    swc_tag *tags;
    unsigned char *dirty;
    unsigned char *lines;
    unsigned char *bounce;
    size_t bounce_size;
    dmm_swc_layout layout;
    uint32_t clk;
    bool map_on, map_write, map_bounce;
    dmm_gaddr map_a;
    size_t map_n;
    dmm_status last;
    dmm_swc_stats st;
};

static size_t rup(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }
static bool is_pow2(size_t x) { return x && !(x & (x - 1)); }

dmm_swc_config dmm_swc_default_config(void)
{
    dmm_swc_config c;
    dmm_port_memset(&c, 0, sizeof c);
    c.line = 128;
    c.ways = 4;
    c.sets = 0;
    c.bounce = 512;
    c.write_back = true;
    c.timing = false;
    c.on_error = DMM_ON_ERROR_REPORT;
    return c;
}

static size_t fixed_bytes(void) { return rup(sizeof(struct dmm_swc), GR); }

static size_t per_set_bytes(size_t line, unsigned ways, size_t mask_bytes)
{
    return (size_t)ways * (sizeof(swc_tag) + mask_bytes + line);
}

dmm_status dmm_swc_create(dmm_swc **out, void *local, size_t size, const dmm_swc_config *cfg,
                          dmm_spm_global *g, unsigned core, const dmm_spm_port *port)
{
    if (!out || !local || !cfg || !g || !port || !port->get || !port->put || !port->wait)
        return DMM_E_NULL;
    *out = NULL;
    size_t al = port->align ? port->align : 1;
    if (((uintptr_t)local & (GR - 1)) != 0 || !is_pow2(cfg->line) || cfg->line < DMM_SWC_MIN_LINE ||
        cfg->line > DMM_SWC_MAX_LINE || cfg->line > port->max_transfer || al > GR || cfg->ways == 0 ||
        cfg->bounce < GR || (cfg->bounce & (GR - 1)) != 0 || cfg->bounce > DMM_SPM_MAX_LOCAL)
        return DMM_E_CONFIG;
    size_t mask_bytes = rup(cfg->line / GR / 8 ? cfg->line / GR / 8 : 1, 4);
    size_t per = per_set_bytes(cfg->line, cfg->ways, mask_bytes);
    size_t fixed = fixed_bytes() + cfg->bounce + 3 * GR; /* padding between parts */
    if (size > ((size_t)1 << 30))
        size = (size_t)1 << 30; /* keeps the derived set count in an unsigned */
    if (size < fixed + per)
        return DMM_E_TOO_SMALL;
    size_t sets = cfg->sets ? cfg->sets : (size - fixed) / per;
    if (sets == 0 || sets > (size - fixed) / per)
        return DMM_E_TOO_SMALL;
    size_t nl = sets * cfg->ways;

    unsigned char *b = local;
    dmm_swc *c = (dmm_swc *)b;
    dmm_port_memset(c, 0, sizeof *c);
    size_t off = fixed_bytes();
    c->tags = (swc_tag *)(b + off);
    off = rup(off + nl * sizeof(swc_tag), GR);
    c->dirty = b + off;
    off = rup(off + nl * mask_bytes, GR);
    c->lines = b + off;
    off += nl * cfg->line;
    c->bounce = b + off;
    off += cfg->bounce;

    c->magic = SWC_MAGIC;
    c->cfg = *cfg;
    c->cfg.sets = (unsigned)sets;
    c->g = g;
    c->core = core;
    c->port = *port;
    c->line = cfg->line;
    c->mask_bytes = mask_bytes;
    c->ways = cfg->ways;
    c->sets = (unsigned)sets;
    c->gsize = dmm_spm_global_size(g);
    c->bounce_size = cfg->bounce;
    for (size_t i = 0; i < nl; i++) {
        c->tags[i].line = NO_TAG;
        c->tags[i].stamp = 0;
    }
    dmm_port_memset(c->dirty, 0, nl * mask_bytes);
    c->layout.local_size = size;
    c->layout.control_bytes = fixed_bytes();
    c->layout.tag_bytes = (size_t)((unsigned char *)c->lines - (unsigned char *)c->tags);
    c->layout.line_bytes = nl * cfg->line;
    c->layout.bounce_bytes = cfg->bounce;
    c->layout.sets = (unsigned)sets;
    c->layout.ways = cfg->ways;
    c->layout.line = cfg->line;
    c->last = DMM_OK;
    *out = c;
    return DMM_OK;
}

dmm_swc_layout dmm_swc_get_layout(const dmm_swc *c)
{
    dmm_swc_layout l;
    if (c)
        return c->layout;
    dmm_port_memset(&l, 0, sizeof l);
    return l;
}

/* ---- timing ------------------------------------------------------------- */

typedef struct t0 {
    uint64_t cyc, ns;
} t0;

static t0 begin(const dmm_swc *c)
{
    t0 t;
    t.cyc = c->port.clock ? c->port.clock(c->port.ctx) : 0;
    t.ns = c->cfg.timing ? dmm_port_clock_ns() : 0;
    return t;
}

static void end(dmm_swc *c, dmm_swc_fn fn, t0 t)
{
    c->st.calls[fn]++;
    if (c->port.clock)
        c->st.sim_cycles[fn] += c->port.clock(c->port.ctx) - t.cyc;
    if (c->cfg.timing)
        c->st.host_ns[fn] += dmm_port_clock_ns() - t.ns;
}

static void report(dmm_swc *c, dmm_error_kind k, dmm_op op, dmm_gaddr a, const char *msg)
{
    c->st.errors++;
    dmm__report_error(c->cfg.error_fn, c->cfg.error_ctx, c->cfg.on_error, k, op, (const void *)(uintptr_t)a, msg);
}

/* ---- lines -------------------------------------------------------------- */

static unsigned char *mask_of(dmm_swc *c, size_t i) { return c->dirty + i * c->mask_bytes; }
static unsigned char *data_of(dmm_swc *c, size_t i) { return c->lines + i * c->line; }

static void put(dmm_swc *c, uint64_t ga, const void *local, size_t n)
{
    c->port.put(c->port.ctx, ga, local, n, 0);
    c->st.puts++;
    c->st.bytes_out += n;
}

/* Writes line i's dirty granules (runs of them, one put each). */
static void write_back(dmm_swc *c, size_t i)
{
    unsigned char *m = mask_of(c, i);
    size_t ng = c->line / GR, g = 0;
    bool any = false;
    uint64_t base = c->tags[i].line * c->line;
    while (g < ng) {
        if (!(m[g / 8] & (1u << (g % 8)))) {
            g++;
            continue;
        }
        size_t s = g;
        while (g < ng && (m[g / 8] & (1u << (g % 8))))
            g++;
        put(c, base + s * GR, data_of(c, i) + s * GR, (g - s) * GR);
        any = true;
    }
    if (any) {
        c->port.wait(c->port.ctx, 1u);
        c->st.writebacks++;
        dmm_port_memset(m, 0, c->mask_bytes);
    }
}

/* The index of the resident line `ln`, fetched (after evicting the LRU
 * way of its set) on a miss. */
static size_t lookup(dmm_swc *c, uint64_t ln)
{
    size_t set = (size_t)(ln % c->sets), first = set * c->ways, victim = first;
    c->st.lookups++;
    for (size_t w = 0; w < c->ways; w++) {
        swc_tag *t = &c->tags[first + w];
        if (t->line == ln) {
            c->st.hits++;
            t->stamp = ++c->clk;
            return first + w;
        }
        if (c->tags[victim].line != NO_TAG && (t->line == NO_TAG || t->stamp < c->tags[victim].stamp))
            victim = first + w;
    }
    c->st.misses++;
    if (c->tags[victim].line != NO_TAG) {
        c->st.evictions++;
        write_back(c, victim);
    }
    uint64_t base = ln * c->line;
    size_t n = c->line;
    if (base + n > c->gsize)
        n = (size_t)((c->gsize - base) & ~(uint64_t)(GR - 1));
    if (n) {
        c->port.get(c->port.ctx, data_of(c, victim), base, n, 0);
        c->port.wait(c->port.ctx, 1u);
        c->st.gets++;
        c->st.bytes_in += n;
    }
    c->st.lines_fetched++;
    c->tags[victim].line = ln;
    c->tags[victim].stamp = ++c->clk;
    dmm_port_memset(mask_of(c, victim), 0, c->mask_bytes);
    return victim;
}

static bool in_range(const dmm_swc *c, dmm_gaddr a, size_t n)
{
    return a >= GR && a <= c->gsize && n <= c->gsize - a;
}

/* Bytes [off, off+n) of resident line i were written: dirty (write-back)
 * or put at once (write-through), granule-wise. */
static void touched(dmm_swc *c, size_t i, size_t off, size_t n)
{
    size_t g0 = off / GR, g1 = (off + n + GR - 1) / GR;
    if (c->cfg.write_back) {
        unsigned char *m = mask_of(c, i);
        for (size_t g = g0; g < g1; g++)
            m[g / 8] |= (unsigned char)(1u << (g % 8));
    } else {
        put(c, c->tags[i].line * c->line + g0 * GR, data_of(c, i) + g0 * GR, (g1 - g0) * GR);
        c->port.wait(c->port.ctx, 1u);
    }
}

static void do_read(dmm_swc *c, dmm_gaddr a, unsigned char *dst, size_t n)
{
    while (n) {
        uint64_t ln = a / c->line;
        size_t off = (size_t)(a % c->line), k = c->line - off;
        if (k > n)
            k = n;
        size_t i = lookup(c, ln);
        dmm_port_memcpy(dst, data_of(c, i) + off, k);
        a += k;
        dst += k;
        n -= k;
    }
}

static void do_write(dmm_swc *c, dmm_gaddr a, const unsigned char *src, size_t n)
{
    while (n) {
        uint64_t ln = a / c->line;
        size_t off = (size_t)(a % c->line), k = c->line - off;
        if (k > n)
            k = n;
        size_t i = lookup(c, ln);
        dmm_port_memcpy(data_of(c, i) + off, src, k);
        touched(c, i, off, k);
        a += k;
        src += k;
        n -= k;
    }
}

/* Ends the pending map: a write map's bytes go out. */
static void retire(dmm_swc *c)
{
    if (!c->map_on)
        return;
    c->map_on = false;
    if (!c->map_write)
        return;
    if (c->map_bounce) {
        do_write(c, c->map_a, c->bounce, c->map_n);
    } else {
        /* Nothing ran since the map: the line is still resident. */
        size_t i = lookup(c, c->map_a / c->line);
        touched(c, i, (size_t)(c->map_a % c->line), c->map_n);
    }
}

static bool valid(const dmm_swc *c) { return c && c->magic == SWC_MAGIC; }

/* ---- allocation ------------------------------------------------------------ */

typedef struct swc_hdr {
    uint64_t size, check;
} swc_hdr;

static void charge(dmm_swc *c, unsigned words)
{
    c->st.mailbox_words += words;
    if (words && c->port.mailbox)
        c->port.mailbox(c->port.ctx, words);
}

static dmm_gaddr do_malloc(dmm_swc *c, size_t size)
{
    if (size == 0 || size > SIZE_MAX / 2) {
        c->last = DMM_E_RANGE;
        return DMM_GNULL;
    }
    unsigned w = 0;
    dmm_gaddr b = dmm_spm_global_alloc(c->g, c->core, GR + rup(size, GR), GR, &w);
    charge(c, w);
    if (b == DMM_GNULL) {
        c->last = DMM_E_TOO_SMALL;
        return DMM_GNULL;
    }
    dmm_gaddr a = b + GR;
    swc_hdr h = {size, (uint64_t)size ^ a ^ SWC_HDR_MAGIC};
    do_write(c, b, (const unsigned char *)&h, sizeof h);
    c->st.live_objects++;
    c->st.live_bytes += size;
    c->last = DMM_OK;
    return a;
}

/* The size of the live object at a, 0 if the header does not match. */
static size_t obj_size(dmm_swc *c, dmm_gaddr a)
{
    if ((a & (GR - 1)) != 0 || !in_range(c, a, 0) || a < 2 * GR)
        return 0;
    swc_hdr h;
    do_read(c, a - GR, (unsigned char *)&h, sizeof h);
    if (h.size == 0 || h.check != (h.size ^ a ^ SWC_HDR_MAGIC) || h.size > c->gsize - a)
        return 0;
    return (size_t)h.size;
}

static void do_free(dmm_swc *c, dmm_gaddr a)
{
    size_t size = obj_size(c, a);
    unsigned w = 0;
    if (!size) {
        report(c, DMM_ERR_INVALID_POINTER, DMM_OP_FREE, a, "swcache: free of an address whose header does not match");
        c->last = DMM_E_RANGE;
        dmm_spm_global_free(c->g, c->core, a >= GR ? a - GR : a, &w);
        charge(c, w);
        return;
    }
    /* Drop the object's dirty granules (header included) from resident
     * lines, and spoil the cached header so a second free is caught while
     * the line stays resident. */
    dmm_gaddr lo = a - GR, hi = a + rup(size, GR);
    for (uint64_t ln = lo / c->line; ln <= (hi - 1) / c->line; ln++) {
        size_t set = (size_t)(ln % c->sets);
        for (size_t w2 = 0; w2 < c->ways; w2++) {
            size_t i = set * c->ways + w2;
            if (c->tags[i].line != ln)
                continue;
            uint64_t base = ln * c->line;
            uint64_t s = lo > base ? lo : base, e = hi < base + c->line ? hi : base + c->line;
            unsigned char *m = mask_of(c, i);
            for (size_t g = (size_t)(s - base) / GR; g < (size_t)(e - base) / GR; g++)
                m[g / 8] &= (unsigned char)~(1u << (g % 8));
            if (lo >= base && lo < base + c->line)
                dmm_port_memset(data_of(c, i) + (lo - base), 0, GR);
        }
    }
    dmm_spm_global_free(c->g, c->core, lo, &w);
    charge(c, w);
    c->st.live_objects--;
    c->st.live_bytes -= size;
    c->last = DMM_OK;
}

dmm_gaddr dmm_swc_malloc(dmm_swc *c, size_t size)
{
    if (!valid(c))
        return DMM_GNULL;
    t0 t = begin(c);
    retire(c);
    dmm_gaddr a = do_malloc(c, size);
    end(c, DMM_SWC_FN_MALLOC, t);
    return a;
}

dmm_gaddr dmm_swc_calloc(dmm_swc *c, size_t n, size_t size)
{
    if (!valid(c))
        return DMM_GNULL;
    t0 t = begin(c);
    retire(c);
    dmm_gaddr a = DMM_GNULL;
    if (size && n > SIZE_MAX / size) {
        c->last = DMM_E_RANGE;
    } else {
        a = do_malloc(c, n * size);
        if (a) {
            /* Zeroes go through the cache in bounce-sized pieces. */
            size_t total = n * size;
            dmm_port_memset(c->bounce, 0, c->bounce_size);
            for (size_t off = 0; off < total; off += c->bounce_size)
                do_write(c, a + off, c->bounce, total - off < c->bounce_size ? total - off : c->bounce_size);
        }
    }
    end(c, DMM_SWC_FN_MALLOC, t);
    return a;
}

void dmm_swc_free(dmm_swc *c, dmm_gaddr a)
{
    if (!valid(c) || a == DMM_GNULL)
        return;
    t0 t = begin(c);
    retire(c);
    do_free(c, a);
    end(c, DMM_SWC_FN_FREE, t);
}

dmm_gaddr dmm_swc_realloc(dmm_swc *c, dmm_gaddr a, size_t size)
{
    if (!valid(c))
        return DMM_GNULL;
    t0 t = begin(c);
    retire(c);
    dmm_gaddr r = DMM_GNULL;
    if (a == DMM_GNULL) {
        r = do_malloc(c, size);
    } else if (size == 0) {
        do_free(c, a);
    } else {
        size_t old = obj_size(c, a);
        if (!old) {
            report(c, DMM_ERR_INVALID_POINTER, DMM_OP_REALLOC, a, "swcache: realloc of an address whose header does not match");
            c->last = DMM_E_RANGE;
        } else if (rup(size, GR) <= rup(old, GR)) {
            swc_hdr h = {size, (uint64_t)size ^ a ^ SWC_HDR_MAGIC};
            do_write(c, a - GR, (const unsigned char *)&h, sizeof h);
            c->st.live_bytes = c->st.live_bytes - old + size;
            c->last = DMM_OK;
            r = a;
        } else {
            r = do_malloc(c, size);
            if (r) {
                for (size_t off = 0; off < old; off += c->bounce_size) {
                    size_t k = old - off < c->bounce_size ? old - off : c->bounce_size;
                    do_read(c, a + off, c->bounce, k);
                    do_write(c, r + off, c->bounce, k);
                }
                do_free(c, a);
            }
        }
    }
    end(c, DMM_SWC_FN_REALLOC, t);
    return r;
}

size_t dmm_swc_size(dmm_swc *c, dmm_gaddr a)
{
    if (!valid(c))
        return 0;
    retire(c);
    return obj_size(c, a);
}

/* ---- access --------------------------------------------------------------- */

/* One read (dst) or write (src) call through the cache. */
static dmm_status access_call(dmm_swc *c, dmm_gaddr a, void *dst, const void *src, size_t n)
{
    if (!valid(c) || (!dst && !src && n))
        return DMM_E_NULL;
    t0 t = begin(c);
    retire(c);
    dmm_status s = DMM_OK;
    if (!in_range(c, a, n))
        s = DMM_E_RANGE;
    else if (dst)
        do_read(c, a, dst, n);
    else
        do_write(c, a, src, n);
    c->last = s;
    end(c, DMM_SWC_FN_ACCESS, t);
    return s;
}

dmm_status dmm_swc_read(dmm_swc *c, dmm_gaddr a, void *dst, size_t n) { return access_call(c, a, dst, NULL, n); }

dmm_status dmm_swc_write(dmm_swc *c, dmm_gaddr a, const void *src, size_t n)
{
    return access_call(c, a, NULL, src, n);
}

void *dmm_swc_map(dmm_swc *c, dmm_gaddr a, size_t n, bool write)
{
    if (!valid(c))
        return NULL;
    t0 t = begin(c);
    retire(c);
    void *p = NULL;
    if (n == 0 || !in_range(c, a, n)) {
        c->last = DMM_E_RANGE;
    } else if (a / c->line == (a + n - 1) / c->line) {
        size_t i = lookup(c, a / c->line);
        p = data_of(c, i) + a % c->line;
        c->map_bounce = false;
    } else if (n <= c->bounce_size) {
        do_read(c, a, c->bounce, n);
        p = c->bounce;
        c->map_bounce = true;
        c->st.bounce_maps++;
    } else {
        c->last = DMM_E_RANGE;
    }
    if (p) {
        c->map_on = true;
        c->map_write = write;
        c->map_a = a;
        c->map_n = n;
        c->last = DMM_OK;
    }
    end(c, DMM_SWC_FN_ACCESS, t);
    return p;
}

dmm_status dmm_swc_flush(dmm_swc *c)
{
    if (!valid(c))
        return DMM_E_NULL;
    t0 t = begin(c);
    retire(c);
    size_t nl = (size_t)c->sets * c->ways;
    for (size_t i = 0; i < nl; i++)
        if (c->tags[i].line != NO_TAG)
            write_back(c, i);
    c->last = DMM_OK;
    end(c, DMM_SWC_FN_FLUSH, t);
    return DMM_OK;
}

void dmm_swc_destroy(dmm_swc *c)
{
    if (!valid(c))
        return;
    dmm_swc_flush(c);
    c->magic = 0;
}

dmm_status dmm_swc_last_status(const dmm_swc *c) { return c ? c->last : DMM_E_NULL; }

dmm_swc_stats dmm_swc_get_stats(const dmm_swc *c)
{
    dmm_swc_stats s;
    if (valid(c))
        return c->st;
    dmm_port_memset(&s, 0, sizeof s);
    return s;
}

/* ---- JSON (no stdio) -------------------------------------------------------- */

typedef struct jb {
    char *buf;
    size_t cap, len;
} jb;

static void js(jb *b, const char *s)
{
    for (; *s; s++, b->len++)
        if (b->len + 1 < b->cap)
            b->buf[b->len] = *s;
}

static void ju(jb *b, uint64_t v)
{
    char d[24];
    size_t i = sizeof d - 1;
    d[i] = 0;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    js(b, d + i);
}

static void jkv(jb *b, const char *k, uint64_t v, bool comma)
{
    js(b, "\"");
    js(b, k);
    js(b, "\":");
    ju(b, v);
    if (comma)
        js(b, ",");
}

static void jarr(jb *b, const char *k, const uint64_t *v)
{
    static const char *const names[DMM_SWC_FN_COUNT] = {"malloc", "free", "realloc", "access", "flush"};
    js(b, "\"");
    js(b, k);
    js(b, "\":{");
    for (unsigned i = 0; i < DMM_SWC_FN_COUNT; i++)
        jkv(b, names[i], v[i], i + 1 < DMM_SWC_FN_COUNT);
    js(b, "},");
}

size_t dmm_swc_stats_json(const dmm_swc_stats *st, char *buf, size_t cap)
{
    jb b = {buf, buf ? cap : 0, 0};
    if (!st)
        return 0;
    js(&b, "{");
    jarr(&b, "calls", st->calls);
    jarr(&b, "sim_cycles", st->sim_cycles);
    jarr(&b, "host_ns", st->host_ns);
    jkv(&b, "lookups", st->lookups, true);
    jkv(&b, "hits", st->hits, true);
    jkv(&b, "misses", st->misses, true);
    jkv(&b, "evictions", st->evictions, true);
    jkv(&b, "writebacks", st->writebacks, true);
    jkv(&b, "lines_fetched", st->lines_fetched, true);
    jkv(&b, "gets", st->gets, true);
    jkv(&b, "puts", st->puts, true);
    jkv(&b, "bytes_in", st->bytes_in, true);
    jkv(&b, "bytes_out", st->bytes_out, true);
    jkv(&b, "bounce_maps", st->bounce_maps, true);
    jkv(&b, "mailbox_words", st->mailbox_words, true);
    jkv(&b, "live_objects", st->live_objects, true);
    jkv(&b, "live_bytes", st->live_bytes, true);
    jkv(&b, "errors", st->errors, false);
    js(&b, "}");
    if (b.cap)
        b.buf[b.len < b.cap ? b.len : b.cap - 1] = 0;
    return b.len;
}
