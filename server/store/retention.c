/*
 * retention.c — retention and build deletion in SQLite or PostgreSQL (see
 * retention.h).
 */
#include "store/retention.h"
#include "store/builds.h"
#include "store/internal.h"
#include "store/rollups.h"
#include "store/stmt.h"
#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The tables a build owns. Adding an aggregate table is one line here.
 *
 * per_build: every row of a build, deleted `?2` rows at a time, in this
 * order (a table before the ones its rows refer to: methods last).
 */
static const char *const per_build[] = {
    "DELETE FROM method_stats WHERE (build_id, method, main, hour) IN (SELECT build_id, "
    "method, main, hour FROM method_stats WHERE build_id = ?1 LIMIT ?2)",
    "DELETE FROM call_nodes WHERE id IN (SELECT id FROM call_nodes WHERE build_id = ?1 "
    "LIMIT ?2)",
    "DELETE FROM block_nodes WHERE id IN (SELECT n.id FROM block_nodes n JOIN block_groups g "
    "ON g.id = n.grp WHERE g.build_id = ?1 LIMIT ?2)",
    "DELETE FROM block_seen WHERE (grp, kind, value, hour) IN (SELECT s.grp, s.kind, s.value, "
    "s.hour FROM block_seen s JOIN block_groups g ON g.id = s.grp WHERE g.build_id = ?1 LIMIT ?2)",
    "DELETE FROM block_stats WHERE (grp, hour) IN (SELECT s.grp, s.hour FROM block_stats s "
    "JOIN block_groups g ON g.id = s.grp WHERE g.build_id = ?1 LIMIT ?2)",
    "DELETE FROM block_groups WHERE id IN (SELECT id FROM block_groups WHERE build_id = ?1 "
    "LIMIT ?2)",
    /* launch tables (issue 15) */
    "DELETE FROM launch_nodes WHERE id IN (SELECT id FROM launch_nodes WHERE build_id = ?1 "
    "LIMIT ?2)",
    "DELETE FROM launch_methods WHERE (build_id, kind, method_id, hour) IN (SELECT build_id, "
    "kind, method_id, hour FROM launch_methods WHERE build_id = ?1 LIMIT ?2)",
    "DELETE FROM launch_measures WHERE (build_id, kind, measure, hour) IN (SELECT build_id, "
    "kind, measure, hour FROM launch_measures WHERE build_id = ?1 LIMIT ?2)",
    "DELETE FROM launch_stats WHERE (build_id, kind, hour) IN (SELECT build_id, kind, hour "
    "FROM launch_stats WHERE build_id = ?1 LIMIT ?2)",
    /* network tables (issue 16) */
    "DELETE FROM net_callers WHERE (grp, hour, method_id) IN (SELECT c.grp, c.hour, "
    "c.method_id FROM net_callers c JOIN net_groups g ON g.id = c.grp WHERE g.build_id = ?1 "
    "LIMIT ?2)",
    "DELETE FROM net_stats WHERE (grp, hour) IN (SELECT s.grp, s.hour FROM net_stats s "
    "JOIN net_groups g ON g.id = s.grp WHERE g.build_id = ?1 LIMIT ?2)",
    "DELETE FROM net_groups WHERE id IN (SELECT id FROM net_groups WHERE build_id = ?1 "
    "LIMIT ?2)",
    "DELETE FROM methods WHERE id IN (SELECT id FROM methods WHERE build_id = ?1 LIMIT ?2)",
};

/*
 * per_time: rows of a build with a time, keyed within the build by (method,
 * main). `next` finds the key after (?2, ?3) (an index seek), `del` deletes
 * at most ?5 of that key's rows whose time span ends at or before ?4 (µs),
 * `any` says whether the build has a row left.
 */
static const struct {
    const char *next, *del, *any;
} per_time[] = {
    { "SELECT method, main FROM method_stats WHERE build_id = ?1 AND (method, main) > (?2, ?3) "
      "ORDER BY method, main LIMIT 1",
      "DELETE FROM method_stats WHERE (build_id, method, main, hour) IN (SELECT build_id, "
      "method, main, hour FROM method_stats WHERE build_id = ?1 AND method = ?2 AND main = ?3 "
      "AND hour <= ?4 - 3600000000 LIMIT ?5) "
      "RETURNING hour, count, total_us, self_us, max_us, sketch",
      "SELECT 1 FROM method_stats WHERE build_id = ?1 LIMIT 1" },
    /* block tables (issue 13): keyed by group; `hour` is an hour number
     * (µs since the epoch / 3600e6), so it ends at or before ?4 when
     * hour <= ?4 / 3600e6 - 1 */
    { "SELECT id, 0 FROM block_groups WHERE build_id = ?1 AND (id, 0) > (?2, CAST(?3 AS bigint)) "
      "ORDER BY id LIMIT 1",
      "DELETE FROM block_stats WHERE (grp, hour) IN (SELECT grp, hour FROM block_stats "
      "WHERE grp = ?2 AND CAST(?1 AS bigint) = ?1 AND CAST(?3 AS bigint) = 0 "
      "AND hour <= ?4 / 3600000000 - 1 LIMIT ?5)",
      "SELECT 1 FROM block_stats WHERE grp IN (SELECT id FROM block_groups WHERE build_id = ?1) "
      "LIMIT 1" },
    { "SELECT id, 0 FROM block_groups WHERE build_id = ?1 AND (id, 0) > (?2, CAST(?3 AS bigint)) "
      "ORDER BY id LIMIT 1",
      "DELETE FROM block_seen WHERE (grp, kind, value, hour) IN (SELECT grp, kind, value, hour "
      "FROM block_seen WHERE grp = ?2 AND CAST(?1 AS bigint) = ?1 AND CAST(?3 AS bigint) = 0 "
      "AND hour <= ?4 / 3600000000 - 1 LIMIT ?5)",
      "SELECT 1 FROM block_seen WHERE grp IN (SELECT id FROM block_groups WHERE build_id = ?1) "
      "LIMIT 1" },
    /* a group's merged call tree has no hours: it goes once every hour of
     * the group has expired (after block_stats above, same pass) */
    { "SELECT id, 0 FROM block_groups WHERE build_id = ?1 AND (id, 0) > (?2, CAST(?3 AS bigint)) "
      "ORDER BY id LIMIT 1",
      "DELETE FROM block_nodes WHERE id IN (SELECT id FROM block_nodes WHERE grp = ?2 "
      "AND CAST(?1 AS bigint) = ?1 AND CAST(?3 AS bigint) = 0 "
      "AND CAST(?4 AS bigint) = ?4 AND NOT EXISTS (SELECT 1 FROM block_stats WHERE grp = ?2) LIMIT ?5)",
      "SELECT 1 FROM block_nodes WHERE grp IN (SELECT id FROM block_groups WHERE build_id = ?1) "
      "LIMIT 1" },
    /* launch tables (issue 15): hour numbers as the block tables; keyed by
     * kind (launch_stats), (kind, measure), (kind, method_id) */
    { "SELECT kind, 0 FROM launch_stats WHERE build_id = ?1 AND (kind, 0) > (?2, CAST(?3 AS bigint)) "
      "ORDER BY kind LIMIT 1",
      "DELETE FROM launch_stats WHERE (build_id, kind, hour) IN (SELECT build_id, kind, hour "
      "FROM launch_stats WHERE build_id = ?1 AND kind = ?2 AND CAST(?3 AS bigint) = 0 "
      "AND hour <= ?4 / 3600000000 - 1 LIMIT ?5)",
      "SELECT 1 FROM launch_stats WHERE build_id = ?1 LIMIT 1" },
    { "SELECT kind, measure FROM launch_measures WHERE build_id = ?1 "
      "AND (kind, measure) > (?2, ?3) ORDER BY kind, measure LIMIT 1",
      "DELETE FROM launch_measures WHERE (build_id, kind, measure, hour) IN (SELECT build_id, "
      "kind, measure, hour FROM launch_measures WHERE build_id = ?1 AND kind = ?2 "
      "AND measure = ?3 AND hour <= ?4 / 3600000000 - 1 LIMIT ?5)",
      "SELECT 1 FROM launch_measures WHERE build_id = ?1 LIMIT 1" },
    { "SELECT kind, method_id FROM launch_methods WHERE build_id = ?1 "
      "AND (kind, method_id) > (?2, ?3) ORDER BY kind, method_id LIMIT 1",
      "DELETE FROM launch_methods WHERE (build_id, kind, method_id, hour) IN (SELECT build_id, "
      "kind, method_id, hour FROM launch_methods WHERE build_id = ?1 AND kind = ?2 "
      "AND method_id = ?3 AND hour <= ?4 / 3600000000 - 1 LIMIT ?5)",
      "SELECT 1 FROM launch_methods WHERE build_id = ?1 LIMIT 1" },
    /* a kind's merged launch tree has no hours: it goes once every hour of
     * the kind has expired (after launch_stats above, same pass) */
    { "SELECT kind, 0 FROM launch_nodes WHERE build_id = ?1 AND (kind, 0) > (?2, CAST(?3 AS bigint)) "
      "GROUP BY kind ORDER BY kind LIMIT 1",
      "DELETE FROM launch_nodes WHERE id IN (SELECT id FROM launch_nodes WHERE build_id = ?1 "
      "AND kind = ?2 AND CAST(?3 AS bigint) = 0 AND CAST(?4 AS bigint) = ?4 AND NOT EXISTS (SELECT 1 FROM launch_stats "
      "WHERE build_id = ?1 AND kind = ?2) LIMIT ?5)",
      "SELECT 1 FROM launch_nodes WHERE build_id = ?1 LIMIT 1" },
    /* network tables (issue 16): keyed by group, hour numbers as above */
    { "SELECT id, 0 FROM net_groups WHERE build_id = ?1 AND (id, 0) > (?2, CAST(?3 AS bigint)) "
      "ORDER BY id LIMIT 1",
      "DELETE FROM net_stats WHERE (grp, hour) IN (SELECT grp, hour FROM net_stats "
      "WHERE grp = ?2 AND CAST(?1 AS bigint) = ?1 AND CAST(?3 AS bigint) = 0 "
      "AND hour <= ?4 / 3600000000 - 1 LIMIT ?5)",
      "SELECT 1 FROM net_stats WHERE grp IN (SELECT id FROM net_groups WHERE build_id = ?1) "
      "LIMIT 1" },
    { "SELECT id, 0 FROM net_groups WHERE build_id = ?1 AND (id, 0) > (?2, CAST(?3 AS bigint)) "
      "ORDER BY id LIMIT 1",
      "DELETE FROM net_callers WHERE (grp, hour, method_id) IN (SELECT grp, hour, method_id "
      "FROM net_callers WHERE grp = ?2 AND CAST(?1 AS bigint) = ?1 AND CAST(?3 AS bigint) = 0 "
      "AND hour <= ?4 / 3600000000 - 1 LIMIT ?5)",
      "SELECT 1 FROM net_callers WHERE grp IN (SELECT id FROM net_groups WHERE build_id = ?1) "
      "LIMIT 1" },
};

#define N_PER_BUILD (sizeof per_build / sizeof *per_build)
#define N_PER_TIME (sizeof per_time / sizeof *per_time)

/* ---- per-app settings ------------------------------------------------ */

bl_err bl_rs_apps(bl_db *db, bl_rs_app **apps, size_t *n)
{
    *apps = NULL;
    *n = 0;
    bl_st *st = bl_st_get(db, "SELECT id, name, keep_raw_days, keep_days FROM apps "
                                      "WHERE id <> 0 ORDER BY id");
    if (!st)
        return BL_EIO;
    size_t cap = 0;
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            bl_rs_app *na = realloc(*apps, nc * sizeof *na);
            if (!na) {
                bl_st_reset(st);
                free(*apps);
                *apps = NULL;
                *n = 0;
                return BL_ENOMEM;
            }
            *apps = na;
            cap = nc;
        }
        bl_rs_app *a = &(*apps)[(*n)++];
        const char *name = bl_st_col_text(st, 1);
        a->id = bl_st_col_int64(st, 0);
        snprintf(a->name, sizeof a->name, "%s", name ? name : "");
        a->keep_raw_days = bl_st_is_null(st, 2) ? -1 : bl_st_col_int64(st, 2);
        a->keep_days = bl_st_is_null(st, 3) ? -1 : bl_st_col_int64(st, 3);
    }
    bl_st_reset(st);
    if (rc != BL_ST_DONE) {
        free(*apps);
        *apps = NULL;
        *n = 0;
        return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_rs_set_keep(bl_db *db, const char *name, int which, int64_t days)
{
    static const char *const sql[2] = {
        "UPDATE apps SET keep_raw_days = ? WHERE name = ? AND id <> 0",
        "UPDATE apps SET keep_days = ? WHERE name = ? AND id <> 0",
    };
    if (which < 0 || which > 1 || days < -1)
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, sql[which]);
    if (!st)
        return BL_EIO;
    if (days < 0)
        bl_st_null(st, 1);
    else
        bl_st_int64(st, 1, days);
    bl_st_text(st, 2, name, -1);
    if (bl_st_done(st))
        return BL_EIO;
    return bl_st_changes(st) == 1 ? BL_OK : BL_ENOTFOUND;
}

/* ---- raw retention --------------------------------------------------- */

/* Steps st (one text column per row) into uuids[]. */
static bl_err uuid_rows(bl_st *st, size_t max, bl_rs_uuid *uuids, size_t *n)
{
    int rc;
    *n = 0;
    while (*n < max && (rc = bl_st_step(st)) == BL_ST_ROW) {
        const char *u = bl_st_col_text(st, 0);
        if (!u || strlen(u) != 36)
            continue; /* not a batch id this server wrote: left alone */
        memcpy(uuids[*n], u, 37);
        (*n)++;
    }
    if (*n < max && rc != BL_ST_DONE) {
        bl_st_reset(st);
        return BL_EIO;
    }
    bl_st_reset(st);
    return BL_OK;
}

bl_err bl_rs_raw_old(bl_db *db, int64_t app_id, int64_t before_us, size_t max,
                     bl_rs_uuid *uuids, size_t *n)
{
    *n = 0;
    bl_st *st = bl_st_get(
        db, "SELECT batch_id FROM batches WHERE app_id = ?1 AND raw_deleted_at IS NULL "
            "AND received_at < ?2 ORDER BY received_at LIMIT ?3");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_int64(st, 2, before_us);
    bl_st_int64(st, 3, (int64_t)max);
    return uuid_rows(st, max, uuids, n);
}

bl_err bl_rs_raw_mark(bl_db *db, const bl_rs_uuid *uuids, size_t n, int64_t now_us)
{
    for (size_t i = 0; i < n; i++) {
        bl_st *st =
            bl_st_get(db, "UPDATE batches SET raw_deleted_at = ?2 WHERE batch_id = ?1");
        if (!st)
            return BL_EIO;
        bl_st_text(st, 1, uuids[i], -1);
        bl_st_int64(st, 2, now_us);
        if (bl_st_done(st))
            return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_rs_batch_owner(bl_db *db, const char *uuid, int64_t *app_id, int *raw_deleted)
{
    bl_st *st = bl_st_get(
        db, "SELECT app_id, raw_deleted_at IS NOT NULL FROM batches WHERE batch_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, uuid, -1);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        *app_id = bl_st_col_int64(st, 0);
        *raw_deleted = (int)bl_st_col_int64(st, 1);
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

/* ---- aggregate expiry ------------------------------------------------ */

bl_err bl_rs_app_builds(bl_db *db, int64_t app_id, int64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    bl_st *st = bl_st_get(db, "SELECT id FROM builds WHERE app_id = ? ORDER BY id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    size_t cap = 0;
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            int64_t *ni = realloc(*ids, nc * sizeof *ni);
            if (!ni) {
                bl_st_reset(st);
                free(*ids);
                *ids = NULL;
                *n = 0;
                return BL_ENOMEM;
            }
            *ids = ni;
            cap = nc;
        }
        (*ids)[(*n)++] = bl_st_col_int64(st, 0);
    }
    bl_st_reset(st);
    if (rc != BL_ST_DONE) {
        free(*ids);
        *ids = NULL;
        *n = 0;
        return BL_EIO;
    }
    return BL_OK;
}

/* method_stats rows deleted by a slice's expiry statements, subtracted
 * from the rollups together at the slice's end (bl_rollups_sub merges
 * what goes to one rollup row: each is rewritten once per slice) */
typedef struct expired {
    int64_t build;
    size_t n, cap;
    struct {
        int64_t method, hour, count, total, self, max;
        int main;
        size_t off, len; /* the sketch in `blobs` */
    } *row;
    bl_buf blobs;
} expired;

static void expired_row(void *ctx, size_t i, bl_wr_stat *out)
{
    const expired *e = ctx;
    out->build_id = e->build;
    out->method = e->row[i].method;
    out->main = e->row[i].main;
    out->hour = e->row[i].hour;
    out->count = e->row[i].count;
    out->total_us = e->row[i].total;
    out->self_us = e->row[i].self;
    out->max_us = e->row[i].max;
    out->sketch = e->blobs.data + e->row[i].off;
    out->sketch_len = e->row[i].len;
}

/* Whether the app of build `build_id` is marked for a rollups rebuild or
 * being rebuilt. */
static bl_err app_dirty(bl_db *db, int64_t build_id, int *dirty)
{
    bl_st *st = bl_st_get(db, "SELECT EXISTS (SELECT 1 FROM rollup_dirty WHERE app_id = "
                                      "(SELECT app_id FROM builds WHERE id = ?1)) OR EXISTS "
                                      "(SELECT 1 FROM rollup_rebuild WHERE app_id = "
                                      "(SELECT app_id FROM builds WHERE id = ?1))");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    int rc = bl_st_step(st);
    *dirty = rc == BL_ST_ROW && (int)bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

/* Runs the method_stats expiry statement `del` (bound: build, key method,
 * main) and collects its rows from RETURNING into *e; the caller subtracts
 * them from the rollups in this transaction, so the dirty mark the delete
 * trigger makes is taken back when the app was clean before (no SQL
 * function tells the trigger apart: the sqlite3 shell could not delete a
 * row). *n: rows deleted. */
static bl_err expire_stats(bl_db *db, bl_st *del, expired *e, int64_t build_id,
                           int64_t method, int main, int64_t *n)
{
    size_t n0 = e->n;
    int was_dirty;
    bl_err err = app_dirty(db, build_id, &was_dirty);
    if (err) {
        bl_st_reset(del);
        *n = 0;
        return err;
    }
    int rc;
    while ((rc = bl_st_step(del)) == BL_ST_ROW) {
        if (e->n == e->cap) {
            size_t nc = e->cap ? e->cap * 2 : 64;
            void *nr = realloc(e->row, nc * sizeof *e->row);
            if (!nr) {
                err = BL_ENOMEM;
                break;
            }
            e->row = nr;
            e->cap = nc;
        }
        const void *blob = bl_st_col_blob(del, 5);
        size_t len = bl_st_col_bytes(del, 5);
        e->row[e->n].method = method;
        e->row[e->n].main = main;
        e->row[e->n].hour = bl_st_col_int64(del, 0);
        e->row[e->n].count = bl_st_col_int64(del, 1);
        e->row[e->n].total = bl_st_col_int64(del, 2);
        e->row[e->n].self = bl_st_col_int64(del, 3);
        e->row[e->n].max = bl_st_col_int64(del, 4);
        e->row[e->n].off = e->blobs.len;
        e->row[e->n].len = len;
        if (len && (err = bl_buf_append(&e->blobs, blob, len)))
            break;
        e->n++;
    }
    if (!err && rc != BL_ST_DONE)
        err = BL_EIO;
    bl_st_reset(del);
    *n = (int64_t)(e->n - n0);
    if (!err && !was_dirty && *n > 0) {
        bl_st *st = bl_st_get(db, "DELETE FROM rollup_dirty WHERE app_id = "
                                          "(SELECT app_id FROM builds WHERE id = ?1)");
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, build_id);
        err = bl_st_done(st);
    }
    return err;
}

/* Subtracts the slice's collected rows from the rollups and frees them. */
static bl_err expired_flush(bl_db *db, expired *e, bl_err err)
{
    if (!err && e->n)
        err = bl_rollups_sub(db, e->n, expired_row, e);
    free(e->row);
    bl_buf_cleanup(&e->blobs);
    return err;
}

static bl_err slice_walk(bl_db *db, int64_t build_id, int64_t cutoff_us, bl_rs_cursor *cur,
                         int64_t max_rows, int64_t max_keys, int64_t *deleted, int *done_,
                         expired *e)
{
    *done_ = 0;
    /* method_stats expire by whole UTC days: the rollups' days then go whole */
    int64_t hour_cutoff = cutoff_us;
    cutoff_us -= ((cutoff_us % BL_RS_DAY_US) + BL_RS_DAY_US) % BL_RS_DAY_US;
    int64_t rows = 0, keys = 0;
    while (cur->table < N_PER_TIME && rows < max_rows && keys < max_keys) {
        if (!cur->started) {
            cur->k1 = cur->k2 = INT64_MIN;
            cur->started = 1;
        }
        bl_st *st = bl_st_get(db, per_time[cur->table].next);
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, build_id);
        bl_st_int64(st, 2, cur->k1);
        bl_st_int64(st, 3, cur->k2);
        int rc = bl_st_step(st);
        int64_t k1 = 0, k2 = 0;
        if (rc == BL_ST_ROW) {
            k1 = bl_st_col_int64(st, 0);
            k2 = bl_st_col_int64(st, 1);
        }
        bl_st_reset(st);
        if (rc == BL_ST_DONE) { /* this table is done: the next one */
            if (cur->table == 0) { /* the rollups before the span */
                bl_err err = expired_flush(db, e, BL_OK);
                memset(e, 0, sizeof *e);
                bl_buf_init(&e->blobs, 0);
                e->build = build_id;
                if (err)
                    return err;
                if (bl_rollups_expired(db, build_id, cutoff_us))
                    return BL_EIO;
            }
            cur->table++;
            cur->started = 0;
            continue;
        }
        if (rc != BL_ST_ROW)
            return BL_EIO;
        bl_st *del = bl_st_get(db, per_time[cur->table].del);
        if (!del)
            return BL_EIO;
        bl_st_int64(del, 1, build_id);
        bl_st_int64(del, 2, k1);
        bl_st_int64(del, 3, k2);
        bl_st_int64(del, 4, cur->table == 0 ? cutoff_us : hour_cutoff);
        bl_st_int64(del, 5, max_rows - rows);
        int64_t c;
        if (cur->table == 0) {
            bl_err err = expire_stats(db, del, e, build_id, k1, (int)k2, &c);
            if (err)
                return err;
        } else {
            if (bl_st_done(del))
                return BL_EIO;
            c = bl_st_changes(del);
        }
        rows += c;
        keys++;
        if (rows >= max_rows)
            break; /* this key may have more: it is walked again next slice */
        cur->k1 = k1;
        cur->k2 = k2;
    }
    *deleted += rows;
    *done_ = cur->table >= N_PER_TIME;
    return BL_OK;
}

bl_err bl_rs_expire_slice(bl_db *db, int64_t build_id, int64_t cutoff_us, bl_rs_cursor *cur,
                          int64_t max_rows, int64_t max_keys, int64_t *deleted, int *done_)
{
    expired e = { .build = build_id };
    bl_buf_init(&e.blobs, 0);
    bl_err err = slice_walk(db, build_id, cutoff_us, cur, max_rows, max_keys, deleted, done_, &e);
    return expired_flush(db, &e, err);
}

bl_err bl_rs_build_idle(bl_db *db, int64_t build_id, int64_t cutoff_us, int *idle)
{
    *idle = 0;
    for (size_t t = 0; t < N_PER_TIME; t++) {
        bl_st *st = bl_st_get(db, per_time[t].any);
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, build_id);
        int rc = bl_st_step(st);
        bl_st_reset(st);
        if (rc == BL_ST_ROW)
            return BL_OK; /* data left */
        if (rc != BL_ST_DONE)
            return BL_EIO;
    }
    bl_st *st = bl_st_get2(
        db,
        "SELECT max(created_at, coalesce(mapping_at, 0), coalesce(methodids_at, 0), "
        "coalesce((SELECT max(received_at) FROM batches WHERE build_id = ?1), 0)) "
        "FROM builds WHERE id = ?1 AND app_id <> 0",
        "SELECT GREATEST(created_at, coalesce(mapping_at, 0), coalesce(methodids_at, 0), "
        "coalesce((SELECT max(received_at) FROM batches WHERE build_id = ?1), 0)) "
        "FROM builds WHERE id = ?1 AND app_id <> 0");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *idle = bl_st_col_int64(st, 0) < cutoff_us;
    bl_st_reset(st);
    return rc == BL_ST_ROW || rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* ---- deleting builds ------------------------------------------------- */

bl_err bl_rs_build_find(bl_db *db, int64_t app_id, const char *name, int64_t *build_id)
{
    if (app_id == 0) /* app 0 holds the rows of builds being deleted */
        return BL_ENOTFOUND;
    return bl_builds_find(db, app_id, name, build_id);
}

bl_err bl_rs_doom_build(bl_db *db, int64_t build_id, const char *reason, int64_t now_us)
{
    bl_st *st = bl_st_get(
        db, "INSERT INTO doomed_builds(build_id, app_id, name, reason, at) "
            "SELECT id, app_id, name, CAST(?2 AS text), CAST(?3 AS bigint) FROM builds "
            "WHERE id = ?1 AND app_id <> 0");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_text(st, 2, reason, -1);
    bl_st_int64(st, 3, now_us);
    if (bl_st_done(st))
        return BL_EIO;
    if (bl_st_changes(st) != 1)
        return BL_ENOTFOUND;
    st = bl_st_get(db, "UPDATE builds SET app_id = 0, name = CAST(id AS TEXT) WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    return bl_st_done(st);
}

bl_err bl_rs_build_state(bl_db *db, int64_t build_id, int *state, int64_t *app_id, char *name,
                         size_t namecap)
{
    *state = 0;
    bl_st *st = bl_st_get(db, "SELECT app_id, name FROM builds WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        int64_t a = bl_st_col_int64(st, 0);
        *state = a == 0 ? 2 : 1;
        if (a && app_id)
            *app_id = a;
        const char *n = bl_st_col_text(st, 1);
        if (a && name && namecap)
            snprintf(name, namecap, "%s", n ? n : "");
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW || rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_rs_doomed_next(bl_db *db, int64_t after, int64_t *build_id, int64_t *app_id)
{
    bl_st *st = bl_st_get(db, "SELECT build_id, app_id FROM doomed_builds "
                                      "WHERE build_id > ? ORDER BY build_id LIMIT 1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, after);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        *build_id = bl_st_col_int64(st, 0);
        *app_id = bl_st_col_int64(st, 1);
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

bl_err bl_rs_build_batches(bl_db *db, int64_t build_id, size_t max, bl_rs_uuid *uuids,
                           size_t *n)
{
    *n = 0;
    bl_st *st =
        bl_st_get(db, "SELECT batch_id FROM batches WHERE build_id = ?1 LIMIT ?2");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, (int64_t)max);
    return uuid_rows(st, max, uuids, n);
}

bl_err bl_rs_batches_forget(bl_db *db, const bl_rs_uuid *uuids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bl_st *st = bl_st_get(db, "DELETE FROM batches WHERE batch_id = ?");
        if (!st)
            return BL_EIO;
        bl_st_text(st, 1, uuids[i], -1);
        if (bl_st_done(st))
            return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_rs_build_slice(bl_db *db, int64_t build_id, int64_t limit, int64_t *deleted)
{
    *deleted = 0;
    for (size_t t = 0; t < N_PER_BUILD; t++) {
        bl_st *st = bl_st_get(db, per_build[t]);
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, build_id);
        bl_st_int64(st, 2, limit);
        if (bl_st_done(st))
            return BL_EIO;
        if ((*deleted = bl_st_changes(st)) > 0)
            return BL_OK;
    }
    return BL_OK;
}

bl_err bl_rs_build_forget(bl_db *db, int64_t build_id)
{
    bl_st *st = bl_st_get(db, "SELECT 1 FROM batches WHERE build_id = ? LIMIT 1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    int rc = bl_st_step(st);
    bl_st_reset(st);
    if (rc == BL_ST_ROW)
        return BL_EINVAL;
    if (rc != BL_ST_DONE)
        return BL_EIO;
    int64_t left;
    bl_err err = bl_rs_build_slice(db, build_id, 1, &left);
    if (err)
        return err;
    if (left) /* a row was still there (deleted now): not done yet */
        return BL_EINVAL;
    st = bl_st_get(db, "DELETE FROM doomed_builds WHERE build_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    if (bl_st_done(st))
        return BL_EIO;
    st = bl_st_get(db, "DELETE FROM builds WHERE id = ? AND app_id = 0");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    return bl_st_done(st);
}
