/*
 * retention.h — what retention and build deletion do to the store
 * (pipeline/retention.h drives it; schema/migrations/0004_retention.sql).
 *
 * Deleting a build is two steps. bl_rs_doom_build moves it to the graveyard
 * in one small write: builds.app_id = 0 (an app nobody can reach) and
 * builds.name = its id as text, with a doomed_builds row remembering what it
 * was; from then on no query, upload or batch sees it, and a new build of
 * the same name is a new row. Its rows are then deleted in bounded slices
 * (bl_rs_build_slice, bl_rs_batches_forget) and last the builds row
 * (bl_rs_build_forget): a kill -9 at any point leaves a store where the
 * build is either live or in the graveyard, never half visible, and the
 * deletion resumes from doomed_builds.
 *
 * The tables a build owns are listed once in retention.c: per_build (all
 * rows of a build, children first) and per_time (rows of a build with a
 * time, dropped when older than the app's keep-days). A new aggregate table
 * is one line there.
 *
 * Every call runs on the caller's writable connection; the caller brackets
 * writes in bl_db_begin / bl_db_commit (small transactions: the writer
 * thread waits for the lock while one is open). Times are µs since the Unix
 * epoch. Every error is BL_EIO with the reason in bl_db_errmsg unless said
 * otherwise. No backend types appear here.
 */
#ifndef BL_STORE_RETENTION_H
#define BL_STORE_RETENTION_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

/* A batch id as text (canonical UUID, NUL-terminated). */
typedef char bl_rs_uuid[37];

/* ---- per-app settings ------------------------------------------------ */

/* Retention of one app: days, -1 = the server's option, 0 = for ever. */
typedef struct bl_rs_app {
    int64_t id;
    char name[72];
    int64_t keep_raw_days;
    int64_t keep_days;
} bl_rs_app;

/* Every app (not the graveyard), by id. *apps is the caller's (free()).
 * BL_ENOMEM, BL_EIO. */
bl_err bl_rs_apps(bl_db *db, bl_rs_app **apps, size_t *n);

/* Sets app `name`'s keep-raw-days (which = 0) or keep-days (which = 1) to
 * `days` (-1: back to the server's option; 0: for ever). BL_ENOTFOUND,
 * BL_EINVAL (which or days out of range), BL_EIO. */
bl_err bl_rs_set_keep(bl_db *db, const char *name, int which, int64_t days);

/* ---- raw retention --------------------------------------------------- */

/* Up to `max` batches of app `app_id` received before `before_us` whose raw
 * file is still kept, oldest first, into uuids[]; *n of them. */
bl_err bl_rs_raw_old(bl_db *db, int64_t app_id, int64_t before_us, size_t max,
                     bl_rs_uuid *uuids, size_t *n);

/* Records that these batches' raw files are deleted (at now_us). */
bl_err bl_rs_raw_mark(bl_db *db, const bl_rs_uuid *uuids, size_t n, int64_t now_us);

/* Who owns batch `uuid`: *app_id (of the app it was posted to, also for a
 * build being deleted) and *raw_deleted = 1 when raw retention deleted its
 * file already. BL_ENOTFOUND when no processed batch has this id. */
bl_err bl_rs_batch_owner(bl_db *db, const char *uuid, int64_t *app_id, int *raw_deleted);

/* ---- aggregate expiry ------------------------------------------------ */

/* The live builds of app `app_id` (ids, any order). *ids is the caller's
 * (free()). BL_ENOMEM, BL_EIO. */
bl_err bl_rs_app_builds(bl_db *db, int64_t app_id, int64_t **ids, size_t *n);

/* Where an expiry walk of one build is (bl_rs_expire_slice). Zero it to
 * start. */
typedef struct bl_rs_cursor {
    size_t table;   /* index into per_time */
    int64_t k1, k2; /* last key done: (method, main) */
    int started;
} bl_rs_cursor;

/* One UTC day in µs. */
#define BL_RS_DAY_US 86400000000ll

/* Deletes rows of build `build_id` in the per-time tables whose time span
 * ends at or before `cutoff_us` (block tables: hour + 1 h <= cutoff);
 * method_stats expire by whole UTC days (hour + 1 h <= cutoff rounded down
 * to a UTC day's start), the rollups' days. Deleted
 * method_stats rows are subtracted from the slow-methods rollups in the
 * same transaction (bl_rollups_sub: exact, no rebuild); when the walk of
 * method_stats ends, the build's and app's first hours move up
 * (bl_rollups_expired),
 * walking the build's keys from *cur on, until `max_rows` rows are deleted
 * or `max_keys` keys were visited. *deleted += rows deleted; *done =
 * 1 when the walk reached the end. */
bl_err bl_rs_expire_slice(bl_db *db, int64_t build_id, int64_t cutoff_us, bl_rs_cursor *cur,
                          int64_t max_rows, int64_t max_keys, int64_t *deleted, int *done);

/* *idle = 1 when build `build_id` has no row left in any per-time table and
 * nothing about it (creation, uploads, processed batches) is newer than
 * `cutoff_us`: its data is all gone and it may go whole. */
bl_err bl_rs_build_idle(bl_db *db, int64_t build_id, int64_t cutoff_us, int *idle);

/* ---- deleting builds ------------------------------------------------- */

/* The id of app `app_id`'s live build `name`. BL_ENOTFOUND, BL_EIO. */
bl_err bl_rs_build_find(bl_db *db, int64_t app_id, const char *name, int64_t *build_id);

/* Moves live build `build_id` to the graveyard (see above) with `reason`
 * ("deleted" / "expired"). BL_ENOTFOUND when it is not a live build. */
bl_err bl_rs_doom_build(bl_db *db, int64_t build_id, const char *reason, int64_t now_us);

/* What build `build_id` is: 0 no such row, 1 live, 2 in the graveyard.
 * With state 1 and app_id/name not NULL, its app and name (namecap bytes,
 * NUL-terminated). */
bl_err bl_rs_build_state(bl_db *db, int64_t build_id, int *state, int64_t *app_id, char *name,
                         size_t namecap);

/* The first build being deleted with an id above `after`: *build_id, and
 * its former app (for its files). BL_ENOTFOUND when none. */
bl_err bl_rs_doomed_next(bl_db *db, int64_t after, int64_t *build_id, int64_t *app_id);

/* Up to `max` batches of build `build_id` into uuids[]; *n. */
bl_err bl_rs_build_batches(bl_db *db, int64_t build_id, size_t max, bl_rs_uuid *uuids,
                           size_t *n);

/* Deletes these batches' rows (their files must be gone first). */
bl_err bl_rs_batches_forget(bl_db *db, const bl_rs_uuid *uuids, size_t n);

/* Deletes up to `limit` rows of build `build_id` from the first per-build
 * table that still has some (children first); *deleted = rows deleted, 0
 * when every per-build table is empty for it. */
bl_err bl_rs_build_slice(bl_db *db, int64_t build_id, int64_t limit, int64_t *deleted);

/* Last step: deletes the builds row and its doomed_builds row. BL_EINVAL
 * while the build still has batches or rows in a per-build table (delete
 * more slices first; one such row may have been deleted). */
bl_err bl_rs_build_forget(bl_db *db, int64_t build_id);

#endif
