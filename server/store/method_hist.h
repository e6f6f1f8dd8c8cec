/*
 * method_hist.h — the distribution of one method's call durations: the
 * latency sketches (agg/sketch.h) of its hourly aggregates merged over the
 * selected builds, hours and threads (GET …/method-histogram, docs/api.md).
 *
 * Units: durations in µs, times in µs since the Unix epoch; an hour
 * [h, h + 1 h) is selected when it overlaps [since_us, until_us), as in
 * slow_methods.h.
 */
#ifndef BL_METHOD_HIST_H
#define BL_METHOD_HIST_H

#include <stdint.h>
#include "agg/sketch.h"
#include "common/blerr.h"
#include "store/db.h"

typedef struct bl_method_hist_query {
    int64_t app_id;
    const char *build;      /* a build name, or NULL for all the app's builds */
    int main_only;          /* 1: the main thread's calls only; 0: all threads */
    int64_t since_us;       /* hours ending after this */
    int64_t until_us;       /* hours starting before this (INT64_MAX: no bound) */
    const char *cls, *name; /* the method's original class and name */
    const char *descriptor; /* its descriptor, or NULL for every overload */
} bl_method_hist_query;

/* Merges the method's sketches into out (initialised by the caller, bl_sketch_init;
 * the caller cleans it up) and sets *count (finished calls) and *max_us (exact).
 * No rows: out empty, *count 0. A row whose stored sketch is malformed (or
 * would overflow the merged count) is left out, its count and max too. BL_OK, BL_ENOMEM, BL_EIO (message:
 * bl_db_errmsg). */
bl_err bl_method_hist(bl_db *db, const bl_method_hist_query *q, bl_sketch *out, int64_t *count,
                      uint64_t *max_us);

#endif
