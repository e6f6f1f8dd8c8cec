/*
 * rollups.h — the slow-methods rollups (schema/migrations/0003_rollups.sql):
 * method_stats summed per method identity (class, name, descriptor, source
 * file: a "sig" of the app) and thread kind (main or not): in total for each
 * build and for all the builds of an app, and per day and per hour for all
 * the builds of an app (migration 0008), plus each scope's first and last
 * hour. store/slow_methods.c answers from them.
 *
 * Writing: the writer hands every flush's method_stats rows to
 * bl_rollups_add too, in the same transaction (only the writer inserts or
 * updates method_stats; a tool that does must INSERT the app into
 * rollup_dirty); retention's expiry subtracts what it deletes
 * (bl_rollups_sub, same transaction). What cannot be followed — a method
 * renamed by a re-symbolication, a method_stats row deleted otherwise, a
 * build moved to another app (its deletion) — marks the app dirty (SQL
 * triggers, migrations 0003 and 0006; never the graveyard app 0, which
 * keeps no rollups); its queries then read method_stats (exact, slower)
 * until its rollups are rebuilt, in bounded steps
 * (bl_rollups_refresh_step: the server's processor runs them on a thread of
 * its own, store/db.c's open does not).
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
 * app's totals, the app's day and hour, and both scopes' first/last hour;
 * rows of an app marked for a rebuild are left out, and of an app being
 * rebuilt those after its cursor (the rebuild reads them). Call it in
 * the transaction of the bl_wr_stats_add of the same rows (before or after).
 * Per row: the build's and the app's totals of both thread kinds and (for
 * a main-thread row) of the main thread, and the app's day and hour; the
 * additions to one rollup row are merged in memory first (sorted: 6 × 72 bytes
 * per row, freed before return), so each row is written once per call.
 * Sketch pointers must stay valid during the call. On PostgreSQL the
 * rows' identities are looked up (and made) in three statements and each
 * table's rows read (locked, in key order), merged in C and written in
 * three (store/pg_rows.h): the same bytes as on SQLite. BL_ENOMEM when that
 * memory cannot be had (the caller rolls the transaction back); BL_EIO
 * (message: bl_db_errmsg) at the first failure. */
bl_err bl_rollups_add(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx);

/* One bounded step of the rebuilds (migration 0008): first every app
 * marked in rollup_dirty is started — its methods get identities, its
 * mark goes and rollup_rebuild holds its cursor (the graveyard app 0 has
 * its rows deleted, nothing more); a mark made while an app is being
 * rebuilt starts it over — then, within `budget` rows (0: no bound), the
 * old rollup rows of apps being rebuilt are deleted (up to `budget` per
 * table) and their method_stats rows after their cursor are added, in key
 * order, with the code that adds a flush's rows. Until its rebuild ends an app's queries read
 * method_stats (store/slow_methods.h). Runs in the caller's transaction (a
 * writer connection between bl_db_begin and bl_db_commit); each step
 * should be its own transaction, so that the writer waits for one step
 * only (a step of 2,000 rows: about 0.1–0.3 s on the benchmark machine).
 * *more (may be NULL): 1 when rows are left for a next step. *rebuilt (may
 * be NULL): the apps whose rebuild ended in this step. BL_ENOMEM; BL_EIO
 * (message: bl_db_errmsg) when a step fails (e.g. a malformed sketch a
 * tool wrote): that step is undone (a savepoint) and the cursor stays,
 * the caller's transaction can still commit; the next call fails the same
 * way until the app is marked again (the server logs it and retries
 * later). */
bl_err bl_rollups_refresh_step(bl_db *db, int64_t budget, int *more, int *rebuilt);

/* *pending = 1 when an app is marked for a rebuild or being rebuilt (a
 * read: two indexed lookups, no write lock). BL_EIO. */
bl_err bl_rollups_pending(bl_db *db, int *pending);

/* Every rebuild to its end in the caller's transaction (tests, tools):
 * bl_rollups_refresh_step without a budget. Time grows with the rows of
 * the apps rebuilt. *rebuilt (may be NULL): apps whose rebuild ended. */
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
