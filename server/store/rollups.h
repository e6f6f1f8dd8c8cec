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
 * rollup_dirty). What cannot be added — a method renamed by a
 * re-symbolication, a method_stats row deleted, a build moved to another
 * app — marks the app dirty (SQL triggers); its queries then read
 * method_stats (exact, slower) until bl_rollups_refresh rebuilds its
 * rollups.
 *
 * No backend types appear here: a second backend implements the same
 * function (or keeps no rollups and answers from its own aggregates).
 */
#ifndef BL_ROLLUPS_H
#define BL_ROLLUPS_H

#include <stddef.h>
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

#endif
