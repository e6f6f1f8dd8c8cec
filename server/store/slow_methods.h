/*
 * slow_methods.h — the slow-methods answer: per-method aggregates of an app
 * (one build or all), summed over the selected hours and threads, sorted
 * and cut to a limit by the store, so the caller's memory does not grow
 * with the number of methods.
 *
 * Units: durations in µs, times in µs since the Unix epoch. Aggregates are
 * kept per hour: an hour [h, h + 1 h) is selected when it overlaps
 * [since_us, until_us). Percentiles come from the merged latency sketches
 * (agg/sketch.h), clamped to the exact maximum.
 *
 * No backend types appear here: the same functions run on SQLite and on
 * PostgreSQL (store/stmt.h) and give the same rows, byte for byte. On
 * PostgreSQL a statement's result is read whole by the client, so memory
 * there grows with the rows a query selects (the rollup rows of the scope,
 * or the method_stats rows of the scan), not only with `limit`; names and
 * sketches are read in batches (a statement is a round trip).
 */
#ifndef BL_SLOW_METHODS_H
#define BL_SLOW_METHODS_H

#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

/* Sort keys, all descending; ties by total time descending, then class,
 * name, descriptor ascending (byte order). */
typedef enum bl_slow_sort {
    BL_SLOW_P50 = 0,
    BL_SLOW_P90,
    BL_SLOW_P99,
    BL_SLOW_COUNT,
    BL_SLOW_TOTAL,
    BL_SLOW_SELF,
    BL_SLOW_MAX
} bl_slow_sort;
#define BL_SLOW_SORTS 7

typedef struct bl_slow_query {
    int64_t app_id;
    const char *build;  /* a build name, or NULL for all the app's builds */
    int main_only;      /* 1: the main thread's calls only; 0: all threads */
    int64_t since_us;   /* hours ending after this (inclusive lower bound) */
    int64_t until_us;   /* hours starting before this (INT64_MAX: no bound) */
    bl_slow_sort sort;
    int64_t limit;      /* at most this many rows (0: none) */
} bl_slow_query;

/* One method. Strings are owned by the store and valid only during the
 * callback; NULL when not recorded. Methods are grouped by (class, name,
 * descriptor, source_file); a method none of whose calls finished in the
 * selection (count 0) is not listed. */
typedef struct bl_slow_row {
    const char *cls, *name, *descriptor, *source_file;
    int64_t count;      /* finished calls */
    int64_t total_us;   /* inclusive time, summed */
    int64_t self_us;    /* exclusive time, summed */
    uint64_t p50_us, p90_us, p99_us, max_us;
} bl_slow_row;

/* Called once per row in order; return 0 to go on, anything else to stop
 * (bl_slow_methods then returns BL_OK). */
typedef int (*bl_slow_cb)(const bl_slow_row *row, void *ctx);

/* Runs the query: from the rollups (store/rollups.h) when the app's are
 * clean, else as bl_slow_methods_scan; the same rows either way. Ties on
 * the sort key and total are broken by class, name, descriptor, source
 * file. Memory: `limit` rows and one 30 KiB sketch; limit < 0 (no limit)
 * takes the scan. A group with a malformed stored sketch is left out.
 * Does not check that q->build exists (bl_builds_exists): an unknown build
 * gives no rows. BL_OK, BL_EINVAL (bad sort), BL_ENOMEM, BL_EIO (message:
 * bl_db_errmsg); on an error after some rows the callback has seen them. */
bl_err bl_slow_methods(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx);

/* The same answer read from method_stats alone, one SQL statement grouping
 * every selected hour row (the reference the rollups are checked against;
 * time grows with the rows selected). Same errors. */
bl_err bl_slow_methods_scan(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx);

#endif
