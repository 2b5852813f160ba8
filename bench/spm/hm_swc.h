/*
 * bench/spm/hm_swc.h - hm.h's software-cache backend (included by hm.h when
 * HM_BACKEND_SWC is defined): the comparison point of seed 000, section 5.
 *
 * Every malloc/calloc/realloc/free goes to the main core's manager (one
 * mailbox round trip each in dynamic mode, seed Fig. 4); every scalar
 * access is one dmm_swc_read / dmm_swc_write call through the
 * set-associative cache in local memory (the Cell SDK's shape).  HM_W /
 * HM_R map exactly sizeof(T) bytes (dmm_swc_map: valid until the next
 * dmm_swc_* call).  The cache cannot pin and has no s2p: HM_PIN and HM_S2P
 * end the program with a message (no program uses them).
 */
#ifndef HM_SWC_H
#define HM_SWC_H

static inline hm_ref hm_malloc(size_t n) { return dmm_swc_malloc(hm_self->swc, n); }
static inline hm_ref hm_calloc(size_t n, size_t sz) { return dmm_swc_calloc(hm_self->swc, n, sz); }
static inline hm_ref hm_realloc(hm_ref r, size_t n) { return dmm_swc_realloc(hm_self->swc, r, n); }
static inline void hm_free(hm_ref r) { dmm_swc_free(hm_self->swc, r); }

static inline void hm_swc_read_bytes(hm_ref a, void *dst, size_t n)
{
    if (dmm_swc_read(hm_self->swc, a, dst, n) != DMM_OK)
        hm_fail("read", a, n);
}
static inline void hm_swc_write_bytes(hm_ref a, const void *src, size_t n)
{
    if (dmm_swc_write(hm_self->swc, a, src, n) != DMM_OK)
        hm_fail("write", a, n);
}

static inline void *hm_wn(hm_ref r, size_t n)
{
    void *p = dmm_swc_map(hm_self->swc, r, n, true);
    if (!p)
        hm_fail("map", r, n);
    return p;
}
static inline const void *hm_rn(hm_ref r, size_t n)
{
    const void *p = dmm_swc_map(hm_self->swc, r, n, false);
    if (!p)
        hm_fail("map", r, n);
    return p;
}
static inline void *hm_w(hm_ref r) { return hm_wn(r, 1); }
static inline const void *hm_r(hm_ref r) { return hm_rn(r, 1); }
static inline hm_ref hm_s2p(const void *p)
{
    (void)p;
    hm_fail("s2p (the software cache has no s2p)", 0, 0);
}
static inline void *hm_pin(hm_ref r) { hm_fail("pin (the software cache cannot pin)", r, 0); }
static inline void hm_unpin(hm_ref r) { (void)r; }

#endif
