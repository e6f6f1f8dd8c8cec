/*
 * u64map.h — open-addressing (linear probing) hash map from a nonzero
 * 64-bit key to a 32-bit value. Made for keys that are already hashes
 * (XXH3 of a name): the key is mixed once more to pick the slot, so keys
 * whose low bits picked a slot elsewhere still spread. Kept at most half
 * full. Not thread-safe; the map owns its two arrays.
 */
#ifndef BL_U64MAP_H
#define BL_U64MAP_H

#include <stdint.h>
#include "common/blerr.h"

/* A slot: key and value side by side, so a lookup reads one cache line. */
typedef struct bl_u64map_slot {
    uint64_t key; /* 0 = empty slot */
    uint32_t val;
} bl_u64map_slot;

typedef struct bl_u64map {
    bl_u64map_slot *slot; /* NULL before the first put or reserve */
    uint32_t mask; /* slots - 1 (slots a power of two), 0 before the first put */
    uint32_t n;    /* keys held */
} bl_u64map;

/* An empty map (no allocation; a zeroed struct is the same). */
void bl_u64map_init(bl_u64map *m);
/* Frees the table; the map is empty again and may be reused. */
void bl_u64map_cleanup(bl_u64map *m);

/* The value of key, or `none` when the map does not hold it. */
uint32_t bl_u64map_get(const bl_u64map *m, uint64_t key, uint32_t none);

/* *val points at the value of key (valid until the next put), which is
 * `init` when the key was absent and is now added (*added = 1). key must not
 * be 0 (BL_EINVAL). BL_ENOMEM (the map is unchanged), BL_ETOOBIG past 2^30
 * keys. */
bl_err bl_u64map_put(bl_u64map *m, uint64_t key, uint32_t init, uint32_t **val, int *added);

/* Makes room for n keys in all (no growth until more are put): a caller
 * that knows about how many keys come saves the rehashing on the way.
 * Only ever grows the table. BL_ENOMEM (the map is unchanged), BL_ETOOBIG
 * past 2^30 keys. */
bl_err bl_u64map_reserve(bl_u64map *m, uint32_t n);

#endif
