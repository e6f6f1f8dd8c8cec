/* u64map.c — see u64map.h. */
#include "common/u64map.h"

#include <stdlib.h>

static uint32_t home(uint64_t key, uint32_t mask)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

void bl_u64map_init(bl_u64map *m)
{
    m->key = NULL;
    m->val = NULL;
    m->mask = m->n = 0;
}

void bl_u64map_cleanup(bl_u64map *m)
{
    free(m->key);
    free(m->val);
    bl_u64map_init(m);
}

uint32_t bl_u64map_get(const bl_u64map *m, uint64_t key, uint32_t none)
{
    if (!m->key || !key)
        return none;
    for (uint32_t j = home(key, m->mask);; j = (j + 1) & m->mask) {
        if (m->key[j] == key)
            return m->val[j];
        if (!m->key[j])
            return none;
    }
}

static bl_err grow(bl_u64map *m)
{
    if (m->key && m->mask + 1 >= (1u << 31))
        return BL_ETOOBIG;
    uint32_t cap = m->key ? (m->mask + 1) * 2 : 1024;
    uint64_t *nk = calloc(cap, sizeof *nk);
    uint32_t *nv = malloc((size_t)cap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return BL_ENOMEM;
    }
    for (uint32_t i = 0; m->key && i <= m->mask; i++) {
        if (!m->key[i])
            continue;
        uint32_t j = home(m->key[i], cap - 1);
        while (nk[j])
            j = (j + 1) & (cap - 1);
        nk[j] = m->key[i];
        nv[j] = m->val[i];
    }
    free(m->key);
    free(m->val);
    m->key = nk;
    m->val = nv;
    m->mask = cap - 1;
    return BL_OK;
}

bl_err bl_u64map_put(bl_u64map *m, uint64_t key, uint32_t init, uint32_t **val, int *added)
{
    *added = 0;
    if (!key)
        return BL_EINVAL;
    if (m->key) { /* present: no growth */
        uint32_t j = home(key, m->mask);
        while (m->key[j] && m->key[j] != key)
            j = (j + 1) & m->mask;
        if (m->key[j]) {
            *val = &m->val[j];
            return BL_OK;
        }
    }
    if (!m->key || ((uint64_t)m->n + 1) * 2 > (uint64_t)m->mask + 1) {
        bl_err err = grow(m);
        if (err)
            return err;
    }
    uint32_t j = home(key, m->mask);
    while (m->key[j])
        j = (j + 1) & m->mask;
    m->key[j] = key;
    m->val[j] = init;
    m->n++;
    *added = 1;
    *val = &m->val[j];
    return BL_OK;
}
