/*
 * src/heap/stats.c - the statistics' JSON form, from the stats list in
 * heap_fields.h (keys = member names, in struct order).
 */
#include "../core/fields.h"
#include "heap_fields.h"
#include "heap_internal.h"

/* The list against the public struct: same members, offsets, sizes, types. */
#define HS_MIRROR_S(member, type) type member;
#define HS_MIRROR_A(member, type, count) type member[count];
struct hs_mirror {
    DMM_HEAP_STATS_FIELDS(HS_MIRROR_S, HS_MIRROR_A)
};
_Static_assert(sizeof(struct hs_mirror) == sizeof(dmm_heap_stats),
               "DMM_HEAP_STATS_FIELDS and dmm_heap_stats differ (a member missing from one of them?)");
#define HS_MEMBER(member) (((dmm_heap_stats *)0)->member)
#define HS_SAME_S(member, type)                                                                              \
    _Static_assert(offsetof(dmm_heap_stats, member) == offsetof(struct hs_mirror, member) &&                 \
                       sizeof(HS_MEMBER(member)) == sizeof(type) && _Generic(HS_MEMBER(member), type: 1, default: 0), \
                   "dmm_heap_stats." #member ": offset, size or type differs from DMM_HEAP_STATS_FIELDS");
#define HS_SAME_A(member, type, count)                                                                       \
    _Static_assert(offsetof(dmm_heap_stats, member) == offsetof(struct hs_mirror, member) &&                 \
                       sizeof(HS_MEMBER(member)) == sizeof(type) * (count) &&                                 \
                       _Generic(HS_MEMBER(member)[0], type: 1, default: 0),                                   \
                   "dmm_heap_stats." #member ": offset, size or type differs from DMM_HEAP_STATS_FIELDS");
DMM_HEAP_STATS_FIELDS(HS_SAME_S, HS_SAME_A)

#define HS_DESC_S(member, type) DMM_STAT_INIT(dmm_heap_stats, member, #member),
#define HS_DESC_A(member, type, count) DMM_STAT_ARRAY_INIT(dmm_heap_stats, member, #member),
static const dmm_stat heap_stats[] = {DMM_HEAP_STATS_FIELDS(HS_DESC_S, HS_DESC_A)};

size_t dmm_heap_stats_json(const dmm_heap_stats *st, char *buf, size_t cap)
{
    return dmm_stats_json(heap_stats, (unsigned)(sizeof heap_stats / sizeof heap_stats[0]), st, buf, cap);
}
