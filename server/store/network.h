/*
 * network.h — stored network-request aggregates and per-app user URL
 * patterns (issue 16; schema migration 0010_network.sql).
 *
 * Writing runs on the writer connection inside a transaction the caller
 * opened (bl_db_begin): a batch's requests are committed with the batch
 * row, exactly once; an app's patterns in a transaction of their own.
 * Reading runs on any connection. Times are µs since the Unix epoch,
 * durations µs, hours hour numbers (µs / 3600e6). Strings passed in are
 * copied; strings handed to a callback are owned by the store and valid
 * only during that call. Errors: BL_EIO (message: bl_db_errmsg) unless
 * said otherwise. No backend types appear here.
 */
#ifndef BL_STORE_NETWORK_H
#define BL_STORE_NETWORK_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

/* Distinct (host, method, pattern) groups one build keeps at most; the
 * requests of a new one past it are counted in the build's group with host
 * and pattern BL_NET_OTHER (and their own method). */
#define BL_NET_GROUPS_MAX 5000
#define BL_NET_OTHER "{other}"

/* ---- user URL patterns -------------------------------------------------- */

/* Replaces app `app_id`'s list by pats[0..n) (checked by the caller,
 * agg/urlpattern.h), stamped `now_us`. */
bl_err bl_net_patterns_set(bl_db *db, int64_t app_id, const char *const *pats, size_t n,
                           int64_t now_us);

/* Calls cb(pattern, ctx) for each of app `app_id`'s patterns in order (cb
 * returns 0 to go on); *updated_at (may be NULL) = when the list was last
 * set, -1 when never. BL_OK, BL_EIO. */
bl_err bl_net_patterns_get(bl_db *db, int64_t app_id, int (*cb)(const char *p, void *ctx),
                           void *ctx, int64_t *updated_at);

/* The same, for the app of build `build_id` (the writer has the build). */
bl_err bl_net_patterns_of_build(bl_db *db, int64_t build_id,
                                int (*cb)(const char *p, void *ctx), void *ctx);

/* ---- writing aggregates ---------------------------------------------------- */

/* One group's figures for one hour, added to what is stored. */
typedef struct bl_net_add_row {
    int64_t build_id;
    const char *host, *http_method, *pattern;
    int64_t hour;
    int64_t count, errors;
    int64_t status[6];           /* 1xx, 2xx, 3xx, 4xx, 5xx, no status */
    int64_t max_us, ttfb_max_us;
    const void *sketch;          /* agg/sketch.h blob of the total_us values */
    size_t sketch_len;
    const void *ttfb_sketch;     /* blob of the ttfb_us values (may hold none) */
    size_t ttfb_sketch_len;
    int64_t dns_us, dns_n, connect_us, connect_n, tls_us, tls_n;
    int64_t bytes_in, bytes_out;
} bl_net_add_row;

/* Adds the row to its group (created when new; past BL_NET_GROUPS_MAX the
 * build's BL_NET_OTHER group) and hour; the group's id -> *group. */
bl_err bl_net_add(bl_db *db, const bl_net_add_row *r, int64_t *group);

/* Adds `count` requests of caller method_id to (group, hour). */
bl_err bl_net_caller_add(bl_db *db, int64_t group, int64_t hour, int64_t method_id,
                         int64_t count);

/* ---- reading ----------------------------------------------------------------- */

/* A group's figures over the hours asked for. */
typedef struct bl_net_group {
    int64_t id;                  /* opaque key for bl_net_callers */
    const char *host, *http_method, *pattern;
    int64_t count, errors;
    int64_t status[6];           /* as bl_net_add_row.status */
    int64_t max_us, ttfb_max_us;
    const void *sketch;          /* union of the hours' sketches */
    size_t sketch_len;
    const void *ttfb_sketch;
    size_t ttfb_sketch_len;
    int64_t dns_us, dns_n, connect_us, connect_n, tls_us, tls_n;
    int64_t bytes_in, bytes_out;
} bl_net_group;

/* Lists build `build_id`'s groups with requests in hours [hour_from,
 * hour_to], by group id; host / http_method (NULL: any) keep only the
 * groups with that host / method. cb returns 0 to go on, anything else
 * stops (the listing then returns BL_OK). BL_OK, BL_EIO. */
bl_err bl_net_groups(bl_db *db, int64_t build_id, int64_t hour_from, int64_t hour_to,
                     const char *host, const char *http_method,
                     int (*cb)(const bl_net_group *g, void *ctx), void *ctx);

/* One caller of a group, with its method's names from the build's methods
 * (a methodId without a row: class "?", name "unknown method N", empty
 * descriptor and source file, as store/blocks.h). */
typedef struct bl_net_caller {
    int64_t method_id, count;
    const char *cls, *name, *descriptor, *source_file;
} bl_net_caller;

/* Calls cb for group `group`'s callers over hours [hour_from, hour_to], by
 * count (largest first, then methodId), at most `limit`. BL_OK, BL_EIO. */
bl_err bl_net_callers(bl_db *db, int64_t build_id, int64_t group, int64_t hour_from,
                      int64_t hour_to, int64_t limit,
                      int (*cb)(const bl_net_caller *c, void *ctx), void *ctx);

#endif
