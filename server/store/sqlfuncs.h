/*
 * sqlfuncs.h — SQL functions Beatline registers on each connection:
 *
 *   sketch_merge(a, b)   scalar: the agg/sketch.h blob of both sketches' union
 *                        (NULL inputs count as empty)
 *   sketch_union(x)      aggregate: the blob of the union of all rows' sketches
 *   sketch_quantile(x, q) scalar: the q-quantile (µs) of a sketch blob
 *   sketch_q3(x, max)    scalar: p50, p90, p99 of a sketch blob, each
 *                        clamped to max, as a 24-byte blob of three
 *                        little-endian u64 (the rollups' precomputed
 *                        percentiles, store/rollups.h)
 *   sat_sum(x)           aggregate: the exact integer sum, INT64_MAX past it
 *                        (INT64_MIN below), 0 over no row (BL_SQL_SATSUM,
 *                        store/internal.h)
 *
 * A malformed blob raises an SQL error (never silently ignored).
 */
#ifndef BL_SQLFUNCS_H
#define BL_SQLFUNCS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/blerr.h"

/* What sketch_q3(blob, max) gives, computed in C (the writer's rollup
 * upserts, which merge in C): 24 bytes into out. BL_EFORMAT for a
 * malformed blob. */
bl_err bl_sql_q3(const void *blob, size_t len, uint64_t max, uint8_t out[24]);
/* The quantiles sketch_q3 gives (0.50, 0.90, 0.99), and its 24 bytes from
 * their values v (each clamped to max). */
extern const double bl_sql_q3_levels[3];
void bl_sql_q3_pack(const uint64_t v[3], uint64_t max, uint8_t out[24]);

/* Returns SQLITE_OK or the error of sqlite3_create_function_v2. */
int bl_sql_register(sqlite3 *db);

#endif
