/*
 * src/trace/idmap.h - a small open-addressing map from 64-bit object ids to
 * 64-bit values, used wherever trace code tracks objects by id.
 */
#ifndef DMM_TRACE_IDMAP_H
#define DMM_TRACE_IDMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct dmm_idmap {
    uint64_t *keys;
    uint64_t *vals;
    unsigned char *state; /* 0 empty, 1 full, 2 deleted */
    size_t cap, used, full;
} dmm_idmap;

static inline size_t dmm_idmap_slot(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1u);
}

static inline int dmm_idmap_init(dmm_idmap *m, size_t cap)
{
    size_t c = 16;
    while (c < cap)
        c <<= 1;
    m->keys = malloc(c * sizeof *m->keys);
    m->vals = malloc(c * sizeof *m->vals);
    m->state = calloc(c, 1);
    m->cap = c;
    m->used = m->full = 0;
    if (!m->keys || !m->vals || !m->state) {
        free(m->keys);
        free(m->vals);
        free(m->state);
        m->keys = m->vals = NULL;
        m->state = NULL;
        return -1;
    }
    return 0;
}

static inline void dmm_idmap_free(dmm_idmap *m)
{
    free(m->keys);
    free(m->vals);
    free(m->state);
    m->keys = m->vals = NULL;
    m->state = NULL;
}

static inline size_t dmm_idmap_find(const dmm_idmap *m, uint64_t k, int *found)
{
    size_t i = dmm_idmap_slot(k, m->cap), tomb = (size_t)-1;
    for (;;) {
        if (m->state[i] == 0) {
            *found = 0;
            return tomb != (size_t)-1 ? tomb : i;
        }
        if (m->state[i] == 1 && m->keys[i] == k) {
            *found = 1;
            return i;
        }
        if (m->state[i] == 2 && tomb == (size_t)-1)
            tomb = i;
        i = (i + 1) & (m->cap - 1u);
    }
}

static inline int dmm_idmap_get(const dmm_idmap *m, uint64_t k, uint64_t *v)
{
    int f;
    size_t i = dmm_idmap_find(m, k, &f);
    if (!f)
        return -1;
    *v = m->vals[i];
    return 0;
}

static inline int dmm_idmap_put(dmm_idmap *m, uint64_t k, uint64_t v);

static inline int dmm_idmap_grow(dmm_idmap *m)
{
    dmm_idmap n;
    if (dmm_idmap_init(&n, m->full * 4 + 16))
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->state[i] == 1)
            dmm_idmap_put(&n, m->keys[i], m->vals[i]);
    dmm_idmap_free(m);
    *m = n;
    return 0;
}

static inline int dmm_idmap_put(dmm_idmap *m, uint64_t k, uint64_t v)
{
    int f;
    size_t i;
    if ((m->used + 1) * 4 > m->cap * 3 && dmm_idmap_grow(m))
        return -1;
    i = dmm_idmap_find(m, k, &f);
    if (!f) {
        if (m->state[i] == 0)
            m->used++;
        m->state[i] = 1;
        m->keys[i] = k;
        m->full++;
    }
    m->vals[i] = v;
    return 0;
}

static inline void dmm_idmap_del(dmm_idmap *m, uint64_t k)
{
    int f;
    size_t i = dmm_idmap_find(m, k, &f);
    if (f) {
        m->state[i] = 2;
        m->full--;
    }
}

#endif
