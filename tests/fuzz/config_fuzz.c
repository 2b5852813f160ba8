/*
 * tests/fuzz/config_fuzz.c - libFuzzer harness for dmm_heap_config_parse.
 *
 * Random text must never crash the parser.  On failure the status is
 * DMM_E_CONFIG with a message and the config is unchanged; on success the
 * formatted config parses back to the same config and formats identically,
 * and when the result is valid, a heap of exactly dmm_heap_min_buffer bytes
 * inits and serves one malloc(1).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dmm/heap.h"

static int same(const dmm_heap_config *a, const dmm_heap_config *b)
{
    return a->org == b->org && a->sl_bits == b->sl_bits && a->exact_max == b->exact_max &&
           a->links == b->links && a->order == b->order && a->fit == b->fit && a->split == b->split &&
           a->split_min == b->split_min && a->coalesce == b->coalesce &&
           a->coalesce_max == b->coalesce_max && a->quick_max == b->quick_max &&
           a->quick_limit == b->quick_limit && a->lock == b->lock &&
           a->lock_hooks.lock == b->lock_hooks.lock && a->lock_hooks.unlock == b->lock_hooks.unlock &&
           a->lock_hooks.ctx == b->lock_hooks.ctx && a->stats == b->stats && a->harden == b->harden &&
           a->poison == b->poison && a->on_error == b->on_error && a->error_fn == b->error_fn &&
           a->error_ctx == b->error_ctx && a->grow_granularity == b->grow_granularity &&
           a->release_empty == b->release_empty && a->max_block_log2 == b->max_block_log2 &&
           a->cookie == b->cookie;
}

static _Alignas(64) unsigned char arena[1 << 16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;
    char out[1024], again[1024];
    dmm_heap_config cfg, before, back;
    const char *err = NULL;
    dmm_status st;
    size_t n;
    if (size > 2048)
        return 0;
    text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    cfg = (size && (data[0] & 1)) ? dmm_heap_preset_config(DMM_PRESET_P2012) : dmm_heap_default_config();
    before = cfg;
    st = dmm_heap_config_parse(text, &cfg, &err);
    free(text);
    if (st != DMM_OK) {
        if (st != DMM_E_CONFIG || err == NULL || err[0] == '\0' || !same(&cfg, &before))
            __builtin_trap();
        return 0;
    }

    n = dmm_heap_config_format(&cfg, out, sizeof out);
    if (n >= sizeof out || strlen(out) != n)
        __builtin_trap();
    back = dmm_heap_default_config();
    if (dmm_heap_config_parse(out, &back, &err) != DMM_OK || !same(&back, &cfg))
        __builtin_trap();
    if (dmm_heap_config_format(&back, again, sizeof again) != n || strcmp(out, again) != 0)
        __builtin_trap();

    if (dmm_heap_config_check(&cfg, &err) == DMM_OK) {
        size_t min = dmm_heap_min_buffer(&cfg);
        dmm_heap *h = NULL;
        if (min == 0 || dmm_heap_block_overhead(&cfg) == 0)
            __builtin_trap();
        if (cfg.lock == DMM_LOCK_USER || min > sizeof arena)
            return 0;
        cfg.grow_granularity = 0;
        cfg.release_empty = 0;
        min = dmm_heap_min_buffer(&cfg);
        if (min == 0 || min > sizeof arena)
            return 0;
        if (dmm_heap_init(&h, arena, min, &cfg) != DMM_OK)
            __builtin_trap();
        if (!dmm_heap_malloc(h, 1) || dmm_heap_check(h, NULL) != DMM_OK)
            __builtin_trap();
        dmm_heap_destroy(h);
    }
    return 0;
}
