/* scripts/spm_hitpath.c - the scratchpad heap's hit path, for callgrind
 * (scripts/spm_hitpath.sh).  One core, static mode, default config
 * (harden=checked, the hit path's cache on); one 64-byte object made
 * resident, then N rounds of: p2s, p2s_ro, s2p, pin and unpin of addresses
 * inside it, all hits.  Prints a checksum and the stats so a wrong run shows. */
#include "dmm/spm.h"
#include <stdio.h>
#include <stdlib.h>

static _Alignas(16) unsigned char gmem[1 << 20];
static _Alignas(16) unsigned char lmem[32768];

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000;
    dmm_spm_global_config gc = dmm_spm_global_default_config();
    gc.mode = DMM_SPM_STATIC;
    dmm_spm_global *g;
    if (dmm_spm_global_create(&g, gmem, sizeof gmem, &gc) != DMM_OK)
        return 1;
    dmm_spm_hostport hp;
    dmm_spm_hostport_init(&hp, g, NULL);
    dmm_spm *s;
    if (dmm_spm_create(&s, lmem, sizeof lmem, NULL, g, 0, &hp.port) != DMM_OK)
        return 2;
    dmm_gaddr a = dmm_spm_malloc(s, 64);
    if (!a || !dmm_spm_p2s(s, a))
        return 3;
    long sum = 0;
    for (long i = 0; i < n; i++) {
        dmm_gaddr x = a + (dmm_gaddr)(i & 15) * 4;
        int *p = dmm_spm_p2s(s, x);
        *p += 1;
        const int *q = dmm_spm_p2s_ro(s, a + (dmm_gaddr)(i & 7) * 4);
        sum += *q;
        sum += (long)(dmm_spm_s2p(s, p) - a);
        int *r = dmm_spm_pin(s, x);
        sum += *r;
        dmm_spm_unpin(s, x);
    }
    dmm_spm_stats st = dmm_spm_get_stats(s);
    printf("sum %ld p2s_hits %llu errors %llu\n", sum, (unsigned long long)st.p2s_hits,
           (unsigned long long)st.errors);
    dmm_spm_destroy(s);
    dmm_spm_global_destroy(g);
    return st.errors ? 4 : 0;
}
