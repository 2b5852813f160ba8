/*
 * src/heap/stats.c - the statistics' JSON form.
 */
#include "../core/text.h"
#include "heap_internal.h"

static void j_num(dmm_text *t, const char *k, uint64_t v)
{
    dmm_text_str(t, "\"");
    dmm_text_str(t, k);
    dmm_text_str(t, "\":");
    dmm_text_u64(t, v);
    dmm_text_char(t, ',');
}

size_t dmm_heap_stats_json(const dmm_heap_stats *st, char *buf, size_t cap)
{
    dmm_text t;
    dmm_text_init(&t, buf, cap);
    if (!st)
        return 0;
    dmm_text_char(&t, '{');
    j_num(&t, "malloc_count", st->malloc_count);
    j_num(&t, "calloc_count", st->calloc_count);
    j_num(&t, "realloc_count", st->realloc_count);
    j_num(&t, "aligned_count", st->aligned_count);
    j_num(&t, "free_count", st->free_count);
    j_num(&t, "failed_count", st->failed_count);
    j_num(&t, "error_count", st->error_count);
    j_num(&t, "search_steps", st->search_steps);
    j_num(&t, "search_max", st->search_max);
    j_num(&t, "sweep_count", st->sweep_count);
    j_num(&t, "grow_count", st->grow_count);
    j_num(&t, "release_count", st->release_count);
    j_num(&t, "live_count", st->live_count);
    j_num(&t, "live_block_bytes", st->live_block_bytes);
    j_num(&t, "peak_block_bytes", st->peak_block_bytes);
    j_num(&t, "live_requested", st->live_requested);
    j_num(&t, "peak_requested", st->peak_requested);
    j_num(&t, "footprint", st->footprint);
    j_num(&t, "peak_footprint", st->peak_footprint);
    j_num(&t, "top_bytes", st->top_bytes);
    j_num(&t, "extent", st->extent);
    j_num(&t, "peak_extent", st->peak_extent);
    j_num(&t, "free_bytes", st->free_bytes);
    j_num(&t, "largest_free", st->largest_free);
    dmm_text_str(&t, "\"size_hist\":[");
    for (unsigned i = 0; i < DMM_HEAP_HIST_BUCKETS; i++) {
        if (i)
            dmm_text_char(&t, ',');
        dmm_text_u64(&t, st->size_hist[i]);
    }
    dmm_text_str(&t, "]}");
    return t.len;
}
