/*
 * bench/anchors/adapter_tlsf.c - anchor.h over TLSF 3.1 (mattconte/tlsf).
 * Compiled by hand against tlsf.h / tlsf.c kept outside the repository
 * (bench/README.md, "Anchors").  The control structure (tlsf_create) sits
 * at the start of the arena and the rest is the one pool, exactly what
 * tlsf_create_with_pool does, but with the pool's failure checked.
 */
#include "anchor.h"

#include "tlsf.h"

static tlsf_t tlsf;

int anchor_init(void *buf, size_t n)
{
    size_t ctl = tlsf_size();
    if (n < ctl + tlsf_pool_overhead() + tlsf_block_size_min())
        return 1;
    if (n - ctl > tlsf_block_size_max() + tlsf_pool_overhead())
        return -1;
    tlsf = tlsf_create(buf);
    if (!tlsf)
        return -1;
    if (!tlsf_add_pool(tlsf, (char *)buf + ctl, n - ctl))
        return 1;
    return 0;
}

void *anchor_malloc(size_t n) { return tlsf_malloc(tlsf, n); }

void anchor_free(void *p) { tlsf_free(tlsf, p); }

const char *anchor_name(void) { return "tlsf"; }

const char *anchor_describe(void)
{
    return "TLSF 3.1 (mattconte/tlsf): tlsf_create + tlsf_add_pool on the arena";
}
