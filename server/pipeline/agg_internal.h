/*
 * agg_internal.h — private to the aggregate module's two files:
 * aggregate.c (everything in aggregate.h but bl_agg_part_records) and
 * agg_records.c (bl_agg_part_records, the partial made in one pass over a
 * batch's records). Not for other modules.
 */
#ifndef BL_AGG_INTERNAL_H
#define BL_AGG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "common/blerr.h"
#include "pipeline/aggregate.h"

/* Hash of a 64-bit key into [0, mask] (mask + 1 a power of 2): the node
 * table's and the partial's lookup table's. */
static inline uint32_t agg_nhash(uint64_t k, uint32_t mask)
{
    k ^= k >> 29;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 32;
    return (uint32_t)k & mask;
}

/* Grows *arr (elements of `size` bytes, *cap of them; owned by the caller)
 * to hold at least n, doubling from 256. BL_ENOMEM (*arr unchanged). */
bl_err agg_reserve(void **arr, size_t *cap, size_t n, size_t size);

/* A partial's lookup table (bl_agg_part.tab) holds stats, key
 * AGG_STAT_TAG | pstat key, and paths, key parent1 << 32 | key2. */
#define AGG_STAT_TAG ((uint64_t)1 << 63)

/* Makes room in the lookup table for one more entry (load <= 1/2): a
 * bigger table gets the entries in use rehashed. BL_ENOMEM. */
bl_err agg_ptab_grow(bl_agg_part *p);

static inline bl_err agg_ptab_room(bl_agg_part *p)
{
    return (p->n_st + p->n_path + 1) * 2 <= p->tab_cap ? BL_OK : agg_ptab_grow(p);
}

/* The slot of key; *fresh = 1 when it was absent (the slot is taken then,
 * its val for the caller to set). Call agg_ptab_room first. */
static inline struct bl_agg_pslot *agg_ptab_get(bl_agg_part *p, uint64_t key, int *fresh)
{
    uint32_t mask = (uint32_t)(p->tab_cap - 1);
    for (uint32_t i = agg_nhash(key, mask);; i = (i + 1) & mask) {
        struct bl_agg_pslot *sl = &p->tab[i];
        if (sl->gen != p->tab_gen) {
            sl->gen = p->tab_gen;
            sl->key = key;
            *fresh = 1;
            return sl;
        }
        if (sl->key == key) {
            *fresh = 0;
            return sl;
        }
    }
}

/* Fills the new path slot pp (the next of p->path, its table slot just
 * taken) of (parent1, key2), first met in thread t, and counts it. */
static inline void agg_path_new(bl_agg_part *p, bl_agg_ppath *pp, uint32_t parent1,
                                uint32_t key2, uint32_t t)
{
    p->n_path++;
    memset(pp, 0, sizeof *pp);
    pp->parent1 = parent1;
    pp->key2 = key2;
    pp->n_threads = 1;
    pp->last_thread = t;
    pp->stat = UINT32_MAX;
}

/* The index in p->st of the stat of key skey (methodId/main and hour, as
 * bl_agg_pstat.key), made (zeroed, key set) when absent. BL_ENOMEM. */
static inline bl_err agg_stat_slot(bl_agg_part *p, uint64_t skey, uint32_t *si)
{
    bl_err err;
    if ((err = agg_ptab_room(p)) ||
        (err = agg_reserve((void **)&p->st, &p->cap_st, p->n_st + 1, sizeof *p->st)))
        return err;
    int fresh;
    struct bl_agg_pslot *sl = agg_ptab_get(p, AGG_STAT_TAG | skey, &fresh);
    if (fresh) {
        sl->val = (uint32_t)p->n_st;
        bl_agg_pstat *ns = &p->st[p->n_st++];
        memset(ns, 0, sizeof *ns);
        ns->key = skey;
    }
    *si = sl->val;
    return BL_OK;
}

/* The end of a partial: each stat's bucket offset and unknown-record count,
 * and the times' sketch buckets grouped by stat (a counting sort, in
 * cache), so that the writer adds them run by run. perm: the stat index a
 * kept time names -> its stat's index now (NULL: the same). BL_ENOMEM. */
bl_err agg_part_buckets(bl_agg_part *p, const uint32_t *perm);

#endif
