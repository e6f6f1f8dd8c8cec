/*
 * u128map.h — open-addressing hash map from a pair of uint64 keys to a
 * uint64 value. Used by the processing pipeline for call-path nodes and
 * aggregate deltas. Not thread-safe; the map owns its table.
 */
#ifndef BL_U128MAP_H
#define BL_U128MAP_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef struct bl_u128map_slot {
    uint64_t a, b, v;
    uint64_t used;
} bl_u128map_slot;

typedef struct bl_u128map {
    bl_u128map_slot *slots;
    size_t cap, n; /* cap is a power of two (or 0) */
} bl_u128map;

void bl_u128map_init(bl_u128map *m);
void bl_u128map_cleanup(bl_u128map *m);
/* Empties the map, keeping its table. */
void bl_u128map_clear(bl_u128map *m);
/* Bytes of table the next bl_u128map_put allocates (the table doubles
 * when it would be over 3/4 full; the old table is freed afterwards), or
 * 0 when it will not grow: lets a caller charge a memory budget first. */
size_t bl_u128map_grow_bytes(const bl_u128map *m);
/* Bytes of table held now. */
size_t bl_u128map_bytes(const bl_u128map *m);
/* Pointer to the value of (a, b), or NULL. */
uint64_t *bl_u128map_get(const bl_u128map *m, uint64_t a, uint64_t b);
/* Pointer to the value of (a, b), inserting it with value `init` if absent
 * (*inserted = 1). The pointer is valid until the next insertion. BL_ENOMEM. */
bl_err bl_u128map_put(bl_u128map *m, uint64_t a, uint64_t b, uint64_t init, uint64_t **val,
                      int *inserted);

#endif
