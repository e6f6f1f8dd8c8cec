/* u128map.c — open-addressing (linear probing) map of (u64, u64) -> u64. */
#include "common/u128map.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

void bl_u128map_init(bl_u128map *m)
{
    m->slots = NULL;
    m->cap = m->n = 0;
}

void bl_u128map_cleanup(bl_u128map *m)
{
    free(m->slots);
    bl_u128map_init(m);
}

void bl_u128map_clear(bl_u128map *m)
{
    if (m->slots)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->n = 0;
}

uint64_t *bl_u128map_get(const bl_u128map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = mix(a, b) & mask;
    for (;;) {
        bl_u128map_slot *s = &m->slots[i];
        if (!s->used)
            return NULL;
        if (s->a == a && s->b == b)
            return &s->v;
        i = (i + 1) & mask;
    }
}

static bl_err grow(bl_u128map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 64;
    bl_u128map_slot *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return BL_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        bl_u128map_slot *s = &m->slots[i];
        if (!s->used)
            continue;
        size_t j = mix(s->a, s->b) & (nc - 1);
        while (ns[j].used)
            j = (j + 1) & (nc - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = nc;
    return BL_OK;
}

size_t bl_u128map_grow_bytes(const bl_u128map *m)
{
    if ((m->n + 1) * 4 > m->cap * 3)
        return (m->cap ? m->cap * 2 : 64) * sizeof(bl_u128map_slot);
    return 0;
}

size_t bl_u128map_bytes(const bl_u128map *m)
{
    return m->cap * sizeof(bl_u128map_slot);
}

bl_err bl_u128map_put(bl_u128map *m, uint64_t a, uint64_t b, uint64_t init, uint64_t **val,
                      int *inserted)
{
    *inserted = 0;
    if ((m->n + 1) * 4 > m->cap * 3) {
        bl_err e = grow(m);
        if (e)
            return e;
    }
    size_t mask = m->cap - 1, i = mix(a, b) & mask;
    for (;;) {
        bl_u128map_slot *s = &m->slots[i];
        if (!s->used) {
            s->used = 1;
            s->a = a;
            s->b = b;
            s->v = init;
            m->n++;
            *inserted = 1;
            *val = &s->v;
            return BL_OK;
        }
        if (s->a == a && s->b == b) {
            *val = &s->v;
            return BL_OK;
        }
        i = (i + 1) & mask;
    }
}
