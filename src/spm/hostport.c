/*
 * src/spm/hostport.c - the host's DMA port (include/dmm/spm.h,
 * docs/spm.md "Host port and cost model"): memcpy between a core's local
 * buffer and the global memory, the Cell's transfer rules enforced, and a
 * cost model that charges simulated cycles.
 *
 * An illegal transfer (misaligned address or size, larger than
 * max_transfer, outside the global memory, a tag >= 32) is a bug in the
 * library that issued it, not a run-time condition: it is reported through
 * the port layer's error output and stops the program.
 */
#include "dmm/spm.h"

#include "../port/port.h"

#define HOSTPORT_ALIGN 16u
#define HOSTPORT_MAX 16384u
#define HOSTPORT_TAGS 32u

dmm_spm_cost dmm_spm_cell_cost(void)
{
    dmm_spm_cost c;
    c.issue = 10;
    c.latency = 400;
    c.bytes_per_cycle = 8;
    c.mailbox_word = 100;
    return c;
}

static size_t str_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static void put_str(const char *s) { dmm_port_write_err(s, str_len(s)); }

static void put_u64(uint64_t v)
{
    char d[24];
    size_t i = sizeof d;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    dmm_port_write_err(d + i, sizeof d - i);
}

_Noreturn static void illegal(const char *op, const char *why, dmm_gaddr g, size_t n)
{
    put_str("dmmkit: spm host port: illegal ");
    put_str(op);
    put_str(" of ");
    put_u64(n);
    put_str(" bytes at global address ");
    put_u64(g);
    put_str(": ");
    put_str(why);
    put_str("\n");
    dmm_port_abort();
}

/* The host pointer of a legal transfer; stops the program otherwise. */
static unsigned char *check(dmm_spm_hostport *hp, const char *op, const void *local, dmm_gaddr g, size_t n,
                            unsigned tag)
{
    const size_t al = hp->port.align;
    if (tag >= HOSTPORT_TAGS)
        illegal(op, "tag is not below 32", g, n);
    if (al > 1 && (((uintptr_t)local & (al - 1)) != 0 || (g & (al - 1)) != 0))
        illegal(op, "an address is not a multiple of the port's alignment", g, n);
    if (al > 1 && (n & (al - 1)) != 0)
        illegal(op, "the size is not a multiple of the port's alignment", g, n);
    if (n > hp->port.max_transfer)
        illegal(op, "larger than the port's max_transfer (the caller must split it)", g, n);
    if (!local)
        illegal(op, "no local buffer", g, n);
    unsigned char *h = dmm_spm_global_host(hp->global, g, n);
    if (!h)
        illegal(op, "outside the global memory", g, n);
    return h;
}

static uint64_t transfer_cost(const dmm_spm_cost *c, size_t n)
{
    uint64_t bpc = c->bytes_per_cycle ? c->bytes_per_cycle : 1;
    return (uint64_t)c->issue + c->latency + ((uint64_t)n + bpc - 1) / bpc;
}

static void hp_get(void *ctx, void *local, dmm_gaddr src, size_t n, unsigned tag)
{
    dmm_spm_hostport *hp = ctx;
    unsigned char *h = check(hp, "get", local, src, n, tag);
    dmm_port_memcpy(local, h, n);
    hp->gets++;
    hp->bytes_in += n;
    hp->cycles += transfer_cost(&hp->cost, n);
}

static void hp_put(void *ctx, dmm_gaddr dst, const void *local, size_t n, unsigned tag)
{
    dmm_spm_hostport *hp = ctx;
    unsigned char *h = check(hp, "put", local, dst, n, tag);
    dmm_port_memcpy(h, local, n);
    hp->puts++;
    hp->bytes_out += n;
    hp->cycles += transfer_cost(&hp->cost, n);
}

/* Copies are done when issued: a wait only counts (transfers are charged
 * as if waited for at once). */
static void hp_wait(void *ctx, uint32_t tag_mask)
{
    (void)tag_mask;
    dmm_spm_hostport *hp = ctx;
    hp->waits++;
}

static uint64_t hp_clock(void *ctx)
{
    const dmm_spm_hostport *hp = ctx;
    return hp->cycles;
}

static void hp_mailbox(void *ctx, unsigned words)
{
    dmm_spm_hostport *hp = ctx;
    hp->mailbox_words += words;
    hp->cycles += (uint64_t)words * hp->cost.mailbox_word;
}

void dmm_spm_hostport_init(dmm_spm_hostport *hp, dmm_spm_global *g, const dmm_spm_cost *cost)
{
    if (!hp)
        return;
    hp->port.ctx = hp;
    hp->port.get = hp_get;
    hp->port.put = hp_put;
    hp->port.wait = hp_wait;
    hp->port.clock = hp_clock;
    hp->port.mailbox = hp_mailbox;
    hp->port.align = HOSTPORT_ALIGN;
    hp->port.max_transfer = HOSTPORT_MAX;
    hp->global = g;
    hp->cost = cost ? *cost : dmm_spm_cell_cost();
    hp->cycles = 0;
    hp->gets = hp->puts = 0;
    hp->bytes_in = hp->bytes_out = 0;
    hp->waits = 0;
    hp->mailbox_words = 0;
}
