/*
 * bench/anchors/adapter_dmm.c - anchor.h over a dmm_heap.
 *
 * Built by bench/anchors/CMakeLists.txt once per preset and form:
 *   runtime forms: linked against the runtime library `dmm_heap`, configured
 *     from ANCHOR_DMM_CONFIG ("preset=X" as shipped, or
 *     "preset=X,stats=off,harden=off" lean) with dmm_heap_config_parse;
 *   frozen forms: linked against a library compiled with
 *     DMM_HEAP_CONFIG_HEADER (configs/frozen/X.h as shipped, or the lean copy
 *     generated into the build tree); no ANCHOR_DMM_CONFIG, the heap is
 *     initialised with cfg NULL, i.e. the frozen configuration.
 * ANCHOR_DMM_NAME names the binary's target, e.g. "dmm-tlsf-frozen-lean".
 */
#include "anchor.h"

#include "dmm/heap.h"

#include <stdio.h>

#ifndef ANCHOR_DMM_NAME
#error "define ANCHOR_DMM_NAME"
#endif

static dmm_heap *heap;
static char desc[640];

int anchor_init(void *buf, size_t n)
{
    const dmm_heap_config *use = NULL;
#ifdef ANCHOR_DMM_CONFIG
    const char *err = NULL;
    dmm_heap_config cfg = dmm_heap_default_config();
    if (dmm_heap_config_parse(ANCHOR_DMM_CONFIG, &cfg, &err) != DMM_OK ||
        dmm_heap_config_check(&cfg, &err) != DMM_OK) {
        fprintf(stderr, "adapter_dmm: config '%s': %s\n", ANCHOR_DMM_CONFIG, err ? err : "?");
        return -1;
    }
    if (dmm_heap_is_frozen()) {
        fprintf(stderr, "adapter_dmm: a runtime form linked against a frozen library\n");
        return -1;
    }
    use = &cfg;
#else
    if (!dmm_heap_is_frozen()) {
        fprintf(stderr, "adapter_dmm: a frozen form linked against the runtime library\n");
        return -1;
    }
#endif
    heap = NULL;
    dmm_status st = dmm_heap_init(&heap, buf, n, use);
    if (st == DMM_E_TOO_SMALL)
        return 1;
    if (st != DMM_OK) {
        fprintf(stderr, "adapter_dmm: dmm_heap_init: status %d\n", (int)st);
        return -1;
    }
    dmm_heap_config now = dmm_heap_get_config(heap);
    char text[512];
    dmm_heap_config_format(&now, text, sizeof text);
    snprintf(desc, sizeof desc, "dmm %s library; config: %s", dmm_heap_is_frozen() ? "frozen" : "runtime",
             text);
    return 0;
}

void *anchor_malloc(size_t n) { return dmm_heap_malloc(heap, n); }

void anchor_free(void *p) { dmm_heap_free(heap, p); }

const char *anchor_name(void) { return ANCHOR_DMM_NAME; }

const char *anchor_describe(void)
{
    if (!desc[0]) {
        /* --info runs without init: describe from a throw-away heap. */
        static unsigned char probe[1 << 16] __attribute__((aligned(64)));
        if (anchor_init(probe, sizeof probe) != 0)
            snprintf(desc, sizeof desc, "dmm (init failed)");
    }
    return desc;
}
