/*
 * launches.h — stored launch aggregates (issue 15; schema migration
 * 0009_launches.sql): per build, kind and hour the launches' count and the
 * sketches of each measure (phase durations, TTID, TTFD); per build, kind,
 * method and hour the calls within launch windows; per build and kind the
 * merged launch call tree.
 *
 * Writing (bl_lch_add, bl_lch_method_add, bl_lch_node_add) runs on the
 * writer connection inside the transaction the processor opened
 * (bl_db_begin), so a batch's launches are committed with the batch row:
 * exactly once. Reading runs on any connection. Times are µs since the
 * Unix epoch, durations µs; hours are hour numbers (µs since the epoch /
 * 3600e6, floored). Strings passed in are copied; strings handed to a
 * callback are owned by the store and valid only during that call. Errors:
 * BL_EIO (message: bl_db_errmsg) unless said otherwise. No backend types
 * appear here.
 */
#ifndef BL_STORE_LAUNCHES_H
#define BL_STORE_LAUNCHES_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/blocks.h"
#include "store/db.h"

/* Kinds (stored as these numbers). */
enum { BL_LCH_COLD, BL_LCH_WARM, BL_LCH_HOT, BL_LCH_KINDS };
/* Measures: the five phases in lifecycle order, then TTID and TTFD. */
enum {
    BL_LCH_ATTACH_BASE_CONTEXT, BL_LCH_APP_ON_CREATE, BL_LCH_ACT_ON_CREATE,
    BL_LCH_ACT_ON_START, BL_LCH_ACT_ON_RESUME, BL_LCH_TTID, BL_LCH_TTFD, BL_LCH_MEASURES
};
#define BL_LCH_PHASES 5 /* measures 0..4 are phases */

/* "cold", "warm", "hot"; NULL out of range. */
const char *bl_lch_kind_name(int kind);
/* "application_attach_base_context", …, "activity_on_resume", "ttid",
 * "ttfd"; NULL out of range. */
const char *bl_lch_measure_name(int measure);

/* ---- writing ----------------------------------------------------------- */

/* One measure of a launch. */
typedef struct bl_lch_value {
    int measure;          /* BL_LCH_* measure */
    int64_t dur_us;       /* >= 0 */
    const void *sketch;   /* agg/sketch.h blob holding dur_us once */
    size_t sketch_len;
} bl_lch_value;

/* One launch. */
typedef struct bl_lch_launch {
    int64_t build_id;
    int kind;                  /* BL_LCH_COLD … BL_LCH_HOT */
    int64_t at_us;             /* launch start, µs since the epoch (any sign) */
    const char *activity;      /* as sent; NULL: none */
    const bl_lch_value *values; /* n_values measures, each at most once */
    size_t n_values;
} bl_lch_launch;

/* Adds the launch to its build, kind and hour (rows created when new). */
bl_err bl_lch_add(bl_db *db, const bl_lch_launch *l);

/* Adds one launch's calls of methodId `method_id` (count calls, inclusive
 * and exclusive µs summed) to the hour of at_us; counts one more launch
 * for the method. */
bl_err bl_lch_method_add(bl_db *db, int64_t build_id, int kind, int64_t at_us,
                         int64_t method_id, int64_t count, int64_t total_us, int64_t self_us);

/* Adds (count, total_us, self_us) to the node (build, kind, parent,
 * method_id) of the merged launch call tree (parent: a node id, 0 for a
 * root), creating it; its id -> *id. */
bl_err bl_lch_node_add(bl_db *db, int64_t build_id, int kind, int64_t parent,
                       int64_t method_id, int64_t count, int64_t total_us, int64_t self_us,
                       int64_t *id);

/* ---- reading ----------------------------------------------------------- */

/* A kind's launches over the hours asked for. */
typedef struct bl_lch_kind {
    int kind;
    int64_t count, first_at, last_at;
    const char *activity;     /* of the latest launch in the range that named one; NULL: none */
} bl_lch_kind;

/* Calls cb per kind with launches of build `build_id` in hours
 * [hour_from, hour_to], by kind; kind >= 0: that kind only. cb returns 0
 * to go on. BL_OK, BL_EIO. */
bl_err bl_lch_kinds(bl_db *db, int64_t build_id, int kind, int64_t hour_from, int64_t hour_to,
                    int (*cb)(const bl_lch_kind *k, void *ctx), void *ctx);

/* One measure of a kind over the hours asked for. */
typedef struct bl_lch_measure_row {
    int measure;
    int64_t count, max_us;
    const void *sketch;       /* union of the hours' sketches */
    size_t sketch_len;
} bl_lch_measure_row;

/* Calls cb per measure of kind `kind` of build `build_id` in hours
 * [hour_from, hour_to], by measure. BL_OK, BL_EIO. */
bl_err bl_lch_measures(bl_db *db, int64_t build_id, int kind, int64_t hour_from,
                       int64_t hour_to, int (*cb)(const bl_lch_measure_row *m, void *ctx),
                       void *ctx);

/* One method within launch windows, with its names (placeholders as
 * bl_blk_names for a methodId without a methods row). */
typedef struct bl_lch_method_row {
    int64_t method_id, count, total_us, self_us, launches;
    bl_blk_names names;
} bl_lch_method_row;

/* Calls cb for the `limit` methods with the largest exclusive time (ties:
 * smaller methodId first) of kind `kind` of build `build_id` in hours
 * [hour_from, hour_to]. BL_OK, BL_EIO. */
bl_err bl_lch_methods(bl_db *db, int64_t build_id, int kind, int64_t hour_from,
                      int64_t hour_to, int64_t limit,
                      int (*cb)(const bl_lch_method_row *m, void *ctx), void *ctx);

/* Lists the nodes of the merged launch call tree of kind `kind` of build
 * `build_id` by ascending id (a parent before its children), in the node
 * shape of store/blocks.h. cb returns 0 to go on. BL_OK, BL_EIO. */
bl_err bl_lch_nodes(bl_db *db, int64_t build_id, int kind, bl_blk_node_cb cb, void *ctx);

#endif
