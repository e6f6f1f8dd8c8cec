/* u64map.c — see u64map.h. */
#include "common/u64map.h"

#include <stdlib.h>

#include "common/buf.h"

static uint32_t home(uint64_t key, uint32_t mask)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

void bl_u64map_init(bl_u64map *m)
{
    m->slot = NULL;
    m->mask = m->n = 0;
}

void bl_u64map_cleanup(bl_u64map *m)
{
    free(m->slot);
    bl_u64map_init(m);
}

uint32_t bl_u64map_get(const bl_u64map *m, uint64_t key, uint32_t none)
{
    if (!m->slot || !key)
        return none;
    for (uint32_t j = home(key, m->mask);; j = (j + 1) & m->mask) {
        if (m->slot[j].key == key)
            return m->slot[j].val;
        if (!m->slot[j].key)
            return none;
    }
}

/* Rehashes into `cap` slots (a power of two, above twice the keys held). */
static bl_err rehash(bl_u64map *m, uint32_t cap)
{
    bl_u64map_slot *ns = bl_zalloc(cap, sizeof *ns); /* probed before written */
    if (!ns)
        return BL_ENOMEM;
    for (uint32_t i = 0; m->slot && i <= m->mask; i++) {
        if (!m->slot[i].key)
            continue;
        uint32_t j = home(m->slot[i].key, cap - 1);
        while (ns[j].key)
            j = (j + 1) & (cap - 1);
        ns[j] = m->slot[i];
    }
    free(m->slot);
    m->slot = ns;
    m->mask = cap - 1;
    return BL_OK;
}

static bl_err grow(bl_u64map *m)
{
    if (m->slot && m->mask + 1 >= (1u << 31))
        return BL_ETOOBIG;
    return rehash(m, m->slot ? (m->mask + 1) * 2 : 1024);
}

bl_err bl_u64map_reserve(bl_u64map *m, uint32_t n)
{
    if (n > (1u << 30))
        return BL_ETOOBIG;
    uint32_t cap = 1024;
    while ((uint64_t)n * 2 > cap)
        cap *= 2;
    if (m->slot && cap <= m->mask + 1)
        return BL_OK;
    return rehash(m, cap);
}

bl_err bl_u64map_put(bl_u64map *m, uint64_t key, uint32_t init, uint32_t **val, int *added)
{
    *added = 0;
    if (!key)
        return BL_EINVAL;
    if (m->slot) { /* present: no growth */
        uint32_t j = home(key, m->mask);
        while (m->slot[j].key && m->slot[j].key != key)
            j = (j + 1) & m->mask;
        if (m->slot[j].key) {
            *val = &m->slot[j].val;
            return BL_OK;
        }
    }
    if (!m->slot || ((uint64_t)m->n + 1) * 2 > (uint64_t)m->mask + 1) {
        bl_err err = grow(m);
        if (err)
            return err;
    }
    uint32_t j = home(key, m->mask);
    while (m->slot[j].key)
        j = (j + 1) & m->mask;
    m->slot[j].key = key;
    m->slot[j].val = init;
    m->n++;
    *added = 1;
    *val = &m->slot[j].val;
    return BL_OK;
}
