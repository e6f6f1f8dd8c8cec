/*
 * rollups.h — the slow-methods rollups (schema/migrations/0003_rollups.sql):
 * method_stats summed per method identity (class, name, descriptor, source
 * file: a "sig" of the app), thread kind (main or not) and day, and in
 * total, for each build and for all the builds of an app, plus each scope's
 * first and last hour. store/slow_methods.c answers from them.
 *
 * Writing: the writer hands every flush's method_stats rows to
 * bl_rollups_add too, in the same transaction (only the writer inserts or
 * updates method_stats; a tool that does must INSERT the app into
 * rollup_dirty); retention's expiry subtracts what it deletes
 * (bl_rollups_sub, same transaction). What cannot be followed — a method
 * renamed by a re-symbolication, a method_stats row deleted otherwise, a
 * build moved to another app (its deletion) — marks the app dirty (SQL
 * triggers, migrations 0003 and 0006; never the graveyard app 0, which
 * keeps no rollups); its queries then read
 * method_stats (exact, slower) until bl_rollups_refresh rebuilds its
 * rollups.
 *
 * No backend types appear here: a second backend implements the same
 * function (or keeps no rollups and answers from its own aggregates).
 */
#ifndef BL_ROLLUPS_H
#define BL_ROLLUPS_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"
#include "store/writer.h"

/* Adds rows 0..n-1 (from `row`, as given to bl_wr_stats_add) to the
 * rollups: per method identity and thread kind, to the build's and the
 * app's totals, the app's day, and both scopes' first/last hour. Call it in
 * the transaction of the bl_wr_stats_add of the same rows (before or after).
 * Per row: the build's and the app's totals of both thread kinds and (for
 * a main-thread row) of the main thread, and the app's day; the additions
 * to one rollup row are merged in memory first (sorted: about 5 × 72 bytes
 * per row, freed before return), so each row is written once per call.
 * Sketch pointers must stay valid during the call. BL_ENOMEM when that
 * memory cannot be had (the caller rolls the transaction back); BL_EIO
 * (message: bl_db_errmsg) at the first failure. */
bl_err bl_rollups_add(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx);

/* Rebuilds the rollups of every dirty app from method_stats and clears its
 * mark; a no-op (one indexed read) when none is dirty. Runs in the caller's
 * transaction (a writer connection between bl_db_begin and bl_db_commit).
 * Time grows with the dirty apps' method_stats rows (10–80 s for 289,000
 * rows on the shared benchmark machine). *rebuilt (may be NULL) gets the number of
 * apps rebuilt. BL_EIO when an app's rebuild fails (e.g. a malformed
 * sketch a tool wrote): that app's rebuild is undone (a savepoint), it stays
 * dirty, the caller's transaction can still commit; the server logs it and
 * goes on (store/db.c at open, the writer's flush). */
bl_err bl_rollups_refresh(bl_db *db, int *rebuilt);

/* Subtracts rows 0..n-1 (from `row`, as bl_wr_stat), which the caller
 * deleted from method_stats in this transaction (the caller clears the
 * dirty mark their deletion made, when the app was clean before), from the
 * rollups, keeping them exact: count and µs sums subtracted, sketches
 * subtracted bucket-wise (bl_sketch_blob_sub) and their percentiles
 * recomputed; a max that went with the rows is recomputed from what is
 * left (an app's day from its builds' method_stats hours of the day, a
 * build's total from its method_stats rows of the identity, an app's total
 * from its days); rollup rows with no row left behind them are deleted
 * (count 0 alone may be a method whose calls were all still running). Rows of the
 * graveyard app 0 and of apps already dirty are skipped (the rebuild
 * recomputes those). Rollups that do not hold the rows (written by hand,
 * damaged) mark the app dirty instead. Sketch pointers must stay valid
 * during the call. Time: a few indexed statements per rollup row touched
 * (up to 5 per method, thread kind and day), plus one max query when the
 * row's max went. BL_ENOMEM, BL_EIO (message: bl_db_errmsg). */
bl_err bl_rollups_sub(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx);

/* After expiry deleted every method_stats row of build `build_id` before
 * `before_hour` (µs, a UTC day's start) in this transaction: the build's
 * first hour becomes at least before_hour (its span row goes when nothing
 * is left), and its app's span is recomputed from its builds' (unless the
 * app is dirty). BL_EIO. */
bl_err bl_rollups_expired(bl_db *db, int64_t build_id, int64_t before_hour);

#endif
