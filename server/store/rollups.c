/*
 * rollups.c — rebuilding dirty apps' rollups (see rollups.h). The triggers
 * of schema/migrations/0003_rollups.sql keep clean apps in step.
 */
#include "store/rollups.h"
#include "store/internal.h" /* bl_db_exec */
#include "store/pg_rows.h"
#include "store/stmt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg/sketch.h"
#include "common/buf.h"
#include "store/sqlfuncs.h"

#define DAY_US "86400000000"
#define APP_SCOPES                                                                        \
    "(scope = -CAST(?1 AS bigint) OR scope IN (SELECT id FROM builds WHERE app_id = ?1))"

/* Starting an app's rebuild (?1): its methods without identity get one,
 * its mark goes and rollup_rebuild holds its cursor, at -1: its rollup
 * rows are deleted first, in steps (wipe_sql), then its rows added. */
static const char *const start_sql[] = {
    /* identities of the app's methods that have none yet */
    "INSERT INTO method_sigs(app_id, class, name, descriptor, source_file) "
    "SELECT DISTINCT CAST(?1 AS bigint), m.class, m.name, m.descriptor, m.source_file FROM methods m "
    "JOIN builds b ON b.id = m.build_id WHERE b.app_id = ?1 AND m.sig IS NULL "
    "ON CONFLICT DO NOTHING",
    "UPDATE methods SET sig = (SELECT s.id FROM method_sigs s WHERE s.app_id = ?1 "
    "AND s.class = methods.class AND s.name = methods.name AND s.descriptor = methods.descriptor "
    "AND s.source_file = methods.source_file) "
    "WHERE sig IS NULL AND build_id IN (SELECT id FROM builds WHERE app_id = ?1)",
    "DELETE FROM rollup_spans WHERE " APP_SCOPES,
    "DELETE FROM rollup_dirty WHERE app_id = ?1",
    "INSERT INTO rollup_rebuild(app_id, build, method, main, hour) "
    "VALUES (?1, -1, 0, 0, 0) ON CONFLICT (app_id) DO UPDATE SET build = -1, method = 0, main = 0, "
    "hour = 0",
};

/* Wiping: the rows of scope ?1 up to the sig of its ?2-th row (primary-key
 * order; the last sig's rows go whole, a few more than ?2). */
static const char *const wipe_sql[3] = {
    "DELETE FROM rollup_totals WHERE scope = ?1 AND sig <= (SELECT max(sig) FROM "
    "(SELECT sig FROM rollup_totals WHERE scope = ?1 ORDER BY sig LIMIT ?2) AS w)",
    "DELETE FROM rollup_days WHERE scope = ?1 AND sig <= (SELECT max(sig) FROM "
    "(SELECT sig FROM rollup_days WHERE scope = ?1 ORDER BY sig LIMIT ?2) AS w)",
    "DELETE FROM rollup_hours WHERE scope = ?1 AND sig <= (SELECT max(sig) FROM "
    "(SELECT sig FROM rollup_hours WHERE scope = ?1 ORDER BY sig LIMIT ?2) AS w)",
};

/* rows of builds that no longer exist */
static const char *const orphans_sql[] = {
    "DELETE FROM rollup_totals WHERE scope > 0 AND scope NOT IN (SELECT id FROM builds)",
    "DELETE FROM rollup_spans WHERE scope > 0 AND scope NOT IN (SELECT id FROM builds)",
};

/* app 0 (retention's graveyard of builds being deleted): no rollups */
static const char *const graveyard_sql[] = {
    "DELETE FROM rollup_totals WHERE scope = 0 OR scope IN (SELECT id FROM builds "
    "WHERE app_id = 0)",
    "DELETE FROM rollup_days WHERE scope = 0",
    "DELETE FROM rollup_hours WHERE scope = 0",
    "DELETE FROM rollup_spans WHERE scope = 0 OR scope IN (SELECT id FROM builds "
    "WHERE app_id = 0)",
    "DELETE FROM rollup_dirty WHERE app_id = 0",
    "DELETE FROM rollup_rebuild WHERE app_id = 0",
};

static bl_err run(bl_db *db, const char *sql, int64_t app)
{
    bl_st *st = bl_st_get(db, sql);
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app); /* app 0, the graveyard, too (ignored without ?1) */
    return bl_st_done(st);
}

static bl_err add_rows(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx, int check);

/* method_stats rows read by a rebuild step (blobs copied: owned) */
typedef struct chunk {
    bl_wr_stat *row;
    size_t n, cap;
    bl_buf blobs;
    size_t *off;
} chunk;

static void chunk_row(void *ctx, size_t i, bl_wr_stat *out)
{
    const chunk *c = ctx;
    *out = c->row[i];
    out->sketch = c->blobs.data + c->off[i];
}

/* Deletes up to about *budget rows of app `app`'s old rollups (its totals,
 * days and hours, its builds' totals), each table and scope in primary-key
 * order, taking them off *budget; when none is left, its rebuild's cursor
 * moves on to adding rows (build 0). */
static bl_err wipe_step(bl_db *db, int64_t app, int64_t *budget)
{
    /* the scopes: the app's, then its builds' (totals only) */
    int64_t *scope = NULL;
    size_t n = 0, cap = 0;
    bl_err err = BL_OK;
    bl_st *st = bl_st_get(db, "SELECT id FROM builds WHERE app_id = ?1 ORDER BY id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app);
    int rc = BL_ST_ROW;
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            int64_t *g = realloc(scope, nc * sizeof *g);
            if (!g) {
                err = BL_ENOMEM;
                break;
            }
            scope = g;
            cap = nc;
        }
        if (!n) {
            scope[n++] = -app;
            continue;
        }
        if ((rc = bl_st_step(st)) != BL_ST_ROW)
            break;
        scope[n++] = bl_st_col_int64(st, 0);
    }
    bl_st_reset(st);
    if (!err && rc != BL_ST_DONE)
        err = BL_EIO;
    int more = 0;
    for (int t = 0; t < 3 && !err && !more; t++)
        for (size_t i = 0; i < (t == 0 ? n : 1) && !err && !more; i++)
            for (;;) {
                if (*budget <= 0) {
                    more = 1;
                    break;
                }
                st = bl_st_get(db, wipe_sql[t]);
                if (!st) {
                    err = BL_EIO;
                    break;
                }
                bl_st_int64(st, 1, scope[i]);
                bl_st_int64(st, 2, *budget);
                if ((err = bl_st_done(st)))
                    break;
                int64_t gone = bl_st_changes(st);
                if (!gone)
                    break;
                *budget -= gone;
            }
    free(scope);
    if (err || more)
        return err;
    return run(db, "UPDATE rollup_rebuild SET build = 0 WHERE app_id = ?1", app);
}

/* One step of app `app`'s rebuild from its cursor (rollup_rebuild): adds
 * up to *budget of its method_stats rows after the cursor (in key order,
 * builds by id), moves the cursor past them and takes them off *budget.
 * The cursor (build, method, main, hour): build > 0, the rows of that
 * build up to (method, main, hour) are in; build 0, the rows of builds up
 * to id `method` are (0: none yet); build -1, the app's old rollup rows
 * are being deleted (up to *budget rows of each table per step), none is
 * in. *finished when none is left (its rollup_rebuild row then goes). */
static bl_err rebuild_step(bl_db *db, int64_t app, int64_t *budget_, int *finished)
{
    int64_t budget = *budget_;
    *finished = 0;
    bl_st *st =
        bl_st_get(db, "SELECT build, method, main, hour FROM rollup_rebuild WHERE app_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app);
    int rc = bl_st_step(st);
    int64_t cur[4] = { 0, 0, 0, 0 };
    for (int k = 0; rc == BL_ST_ROW && k < 4; k++)
        cur[k] = bl_st_col_int64(st, k);
    bl_st_reset(st);
    if (rc != BL_ST_ROW)
        return rc == BL_ST_DONE ? BL_OK : BL_EIO;
    if (cur[0] == -1) /* wiping: rows deleted count as rows read */
        return wipe_step(db, app, budget_);
    chunk c;
    memset(&c, 0, sizeof c);
    bl_buf_init(&c.blobs, 0);
    bl_err err = BL_OK;
    /* cur[0] == 0: no build started yet (ids are > 0); else the rows of
     * build cur[0] after (method, main, hour) = cur[1..3] are left */
    while (!err && budget > 0) {
        if (cur[0] == 0) {
            st = bl_st_get(db, "SELECT min(id) FROM builds WHERE app_id = ?1 AND id > ?2");
            if (!st) {
                err = BL_EIO;
                break;
            }
            bl_st_int64(st, 1, app);
            bl_st_int64(st, 2, cur[1]); /* the last build done */
            rc = bl_st_step(st);
            int none = rc != BL_ST_ROW || bl_st_is_null(st, 0);
            int64_t b = none ? 0 : bl_st_col_int64(st, 0);
            bl_st_reset(st);
            if (rc != BL_ST_ROW) {
                err = BL_EIO;
                break;
            }
            if (none) {
                *finished = 1;
                break;
            }
            cur[0] = b;
            cur[1] = cur[2] = cur[3] = INT64_MIN;
        }
        st = bl_st_get(db, "SELECT method, main, hour, count, total_us, self_us, max_us, sketch "
                            "FROM method_stats WHERE build_id = ?1 AND (method, main, hour) > "
                            "(?2, ?3, ?4) ORDER BY method, main, hour LIMIT ?5");
        if (!st) {
            err = BL_EIO;
            break;
        }
        for (int k = 0; k < 4; k++)
            bl_st_int64(st, k + 1, cur[k]);
        bl_st_int64(st, 5, budget);
        c.n = 0;
        bl_buf_reset(&c.blobs);
        while ((rc = bl_st_step(st)) == BL_ST_ROW) {
            if (c.n == c.cap) {
                size_t nc = c.cap ? 2 * c.cap : 256;
                bl_wr_stat *r = realloc(c.row, nc * sizeof *r);
                if (r)
                    c.row = r;
                size_t *o = r ? realloc(c.off, nc * sizeof *o) : NULL;
                if (o)
                    c.off = o;
                if (!r || !o) {
                    err = BL_ENOMEM;
                    break;
                }
                c.cap = nc;
            }
            bl_wr_stat *r = &c.row[c.n];
            r->build_id = cur[0];
            r->method = bl_st_col_int64(st, 0);
            r->main = (int)bl_st_col_int64(st, 1);
            r->hour = bl_st_col_int64(st, 2);
            r->count = bl_st_col_int64(st, 3);
            r->total_us = bl_st_col_int64(st, 4);
            r->self_us = bl_st_col_int64(st, 5);
            r->max_us = bl_st_col_int64(st, 6);
            const void *blob = bl_st_col_blob(st, 7);
            r->sketch_len = bl_st_col_bytes(st, 7);
            c.off[c.n] = c.blobs.len;
            if (r->sketch_len && (err = bl_buf_append(&c.blobs, blob, r->sketch_len)))
                break;
            c.n++;
        }
        if (!err && rc != BL_ST_DONE)
            err = BL_EIO;
        bl_st_reset(st);
        if (err)
            break;
        if (c.n && (err = add_rows(db, c.n, chunk_row, &c, 0)))
            break;
        budget -= (int64_t)c.n;
        *budget_ = budget;
        if (c.n) {
            const bl_wr_stat *l = &c.row[c.n - 1];
            cur[1] = l->method;
            cur[2] = l->main;
            cur[3] = l->hour;
        }
        if (budget > 0) { /* fewer than asked: the build is done */
            cur[1] = cur[0];
            cur[0] = 0;
        }
    }
    free(c.row);
    free(c.off);
    bl_buf_cleanup(&c.blobs);
    if (err)
        return err;
    if (*finished)
        return run(db, "DELETE FROM rollup_rebuild WHERE app_id = ?1", app);
    st = bl_st_get(db, "UPDATE rollup_rebuild SET build = ?2, method = ?3, main = ?4, "
                        "hour = ?5 WHERE app_id = ?1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app);
    for (int k = 0; k < 4; k++)
        bl_st_int64(st, k + 2, cur[k]);
    return bl_st_done(st);
}

bl_err bl_rollups_refresh_step(bl_db *db, int64_t budget, int *more, int *rebuilt)
{
    if (more)
        *more = 0;
    if (rebuilt)
        *rebuilt = 0;
    if (budget <= 0)
        budget = INT64_MAX;
    int64_t last_started = -1;
    for (;;) {
        /* marks first: a mark made during a rebuild starts it over */
        bl_st *st = bl_st_get(db, "SELECT app_id FROM rollup_dirty ORDER BY app_id LIMIT 1");
        if (!st)
            return BL_EIO;
        int rc = bl_st_step(st);
        int64_t app = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : 0;
        bl_st_reset(st);
        if (rc != BL_ST_ROW && rc != BL_ST_DONE)
            return BL_EIO;
        if (rc == BL_ST_ROW) {
            /* starting clears the mark: an app marked again at once would
             * loop for ever */
            if (app == last_started)
                return BL_EIO;
            last_started = app;
            const char *const *sql = app ? start_sql : graveyard_sql;
            size_t n = app ? sizeof start_sql / sizeof *start_sql
                           : sizeof graveyard_sql / sizeof *graveyard_sql;
            for (size_t i = 0; i < n; i++)
                if (run(db, sql[i], app))
                    return BL_EIO;
            continue;
        }
        if (budget <= 0) {
            st = bl_st_get(db, "SELECT EXISTS (SELECT 1 FROM rollup_rebuild)");
            if (!st)
                return BL_EIO;
            rc = bl_st_step(st);
            if (more && rc == BL_ST_ROW)
                *more = (int)bl_st_col_int64(st, 0);
            bl_st_reset(st);
            return rc == BL_ST_ROW ? BL_OK : BL_EIO;
        }
        st = bl_st_get(db, "SELECT app_id FROM rollup_rebuild ORDER BY app_id LIMIT 1");
        if (!st)
            return BL_EIO;
        rc = bl_st_step(st);
        app = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : 0;
        bl_st_reset(st);
        if (rc == BL_ST_DONE)
            return BL_OK;
        if (rc != BL_ST_ROW)
            return BL_EIO;
        /* one step is all or nothing (a savepoint): a failure leaves the
         * cursor where it was */
        if (bl_db_exec(db, "SAVEPOINT rollup_rebuild"))
            return BL_EIO;
        int finished = 0;
        int64_t before = budget;
        bl_err err = rebuild_step(db, app, &budget, &finished);
        if (err) {
            bl_db_exec(db, "ROLLBACK TO rollup_rebuild");
            bl_db_exec(db, "RELEASE rollup_rebuild");
            return err == BL_ENOMEM ? BL_ENOMEM : BL_EIO;
        }
        if (bl_db_exec(db, "RELEASE rollup_rebuild"))
            return BL_EIO;
        if (finished) {
            for (size_t i = 0; i < sizeof orphans_sql / sizeof *orphans_sql; i++)
                if (run(db, orphans_sql[i], 0))
                    return BL_EIO;
            if (rebuilt)
                (*rebuilt)++;
        }
        if (before == INT64_MAX)
            budget = INT64_MAX; /* unbounded */
    }
}

bl_err bl_rollups_pending(bl_db *db, int *pending)
{
    *pending = 0;
    bl_st *st = bl_st_get(db, "SELECT EXISTS (SELECT 1 FROM rollup_dirty) OR "
                                      "EXISTS (SELECT 1 FROM rollup_rebuild)");
    if (!st)
        return BL_EIO;
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *pending = (int)bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

bl_err bl_rollups_refresh(bl_db *db, int *rebuilt)
{
    int n;
    bl_err err = bl_rollups_refresh_step(db, 0, NULL, &n);
    if (rebuilt)
        *rebuilt = err ? 0 : n;
    return err;
}

/* A row is read, merged in C (one sketch merge, its percentiles q3 from
 * the result) and written back when it exists, else inserted. ?1 scope,
 * ?2 sig, ?3 thread kind, ?4 count, ?5 total, ?6 self, ?7 max, ?8 sketch,
 * ?9 day or hour, ?10 q3 (bl_sql_q3: clamped to the max in the totals, not
 * in days and hours). */
static const char totals_read_sql[] =
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_totals "
    "WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char days_read_sql[] =
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_days "
    "WHERE scope = ?1 AND sig = ?2 AND day = ?9 AND main = ?3";
static const char hours_read_sql[] =
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_hours "
    "WHERE scope = ?1 AND sig = ?2 AND hour = ?9 AND main = ?3";
static const char totals_put_sql[] =
    "UPDATE rollup_totals SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = ?10 WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char days_put_sql[] =
    "UPDATE rollup_days SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = ?10 WHERE scope = ?1 AND sig = ?2 AND day = ?9 AND main = ?3";
static const char hours_put_sql[] =
    "UPDATE rollup_hours SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = ?10 WHERE scope = ?1 AND sig = ?2 AND hour = ?9 AND main = ?3";
static const char totals_ins_sql[] =
    "INSERT INTO rollup_totals(scope, sig, main, count, total_us, self_us, max_us, q3, sketch) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?10, ?8)";
static const char days_ins_sql[] =
    "INSERT INTO rollup_days(scope, sig, day, main, count, total_us, self_us, max_us, q3, sketch) "
    "VALUES (?1, ?2, ?9, ?3, ?4, ?5, ?6, ?7, ?10, ?8)";
static const char hours_ins_sql[] =
    "INSERT INTO rollup_hours(scope, sig, hour, main, count, total_us, self_us, max_us, q3, "
    "sketch) VALUES (?1, ?2, ?9, ?3, ?4, ?5, ?6, ?7, ?10, ?8)";
/* by table: 0 rollup_totals, 1 rollup_days, 2 rollup_hours */
static const char *const read_sql[3] = { totals_read_sql, days_read_sql, hours_read_sql };
static const char *const put_sql[3] = { totals_put_sql, days_put_sql, hours_put_sql };
static const char *const ins_sql[3] = { totals_ins_sql, days_ins_sql, hours_ins_sql };
static const char span_sql[] =
    "INSERT INTO rollup_spans(scope, first_hour, last_hour) VALUES (?, ?, ?) "
    "ON CONFLICT DO UPDATE SET first_hour = min(first_hour, excluded.first_hour), "
    "last_hour = max(last_hour, excluded.last_hour)";
static const char span_sql_pg[] =
    "INSERT INTO rollup_spans(scope, first_hour, last_hour) VALUES (?, ?, ?) "
    "ON CONFLICT (scope) DO UPDATE SET "
    "first_hour = LEAST(rollup_spans.first_hour, excluded.first_hour), "
    "last_hour = GREATEST(rollup_spans.last_hour, excluded.last_hour)";

/* first/last hour per scope seen in one call, written at its end */
#define SPANS 16
typedef struct span {
    int64_t scope, first, last;
} span;

static int cmp_span(const void *a, const void *b)
{
    int64_t x = ((const span *)a)->scope, y = ((const span *)b)->scope;
    return x < y ? -1 : x > y;
}

/* Writes the spans noted, in scope order (rows locked in one order by
 * every writer: no deadlock between nodes on PostgreSQL). */
static bl_err span_flush(bl_db *db, span *sp, int *n)
{
    qsort(sp, (size_t)*n, sizeof *sp, cmp_span);
    for (int i = 0; i < *n; i++) {
        bl_st *st = bl_st_get2(db, span_sql, span_sql_pg);
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, sp[i].scope);
        bl_st_int64(st, 2, sp[i].first);
        bl_st_int64(st, 3, sp[i].last);
        int rc = bl_st_step(st);
        bl_st_reset(st);
        if (rc != BL_ST_DONE)
            return BL_EIO;
    }
    *n = 0;
    return BL_OK;
}

static bl_err span_note(bl_db *db, span *sp, int *n, int64_t scope, int64_t hour)
{
    for (int i = 0; i < *n; i++)
        if (sp[i].scope == scope) {
            if (hour < sp[i].first)
                sp[i].first = hour;
            if (hour > sp[i].last)
                sp[i].last = hour;
            return BL_OK;
        }
    if (*n == SPANS && span_flush(db, sp, n))
        return BL_EIO;
    sp[(*n)++] = (span){ scope, hour, hour };
    return BL_OK;
}

/* Writes one row with put_sql or ins_sql[table] (s: its new figures, q3
 * its percentiles). */
static bl_err put_stmt(bl_db *db, const char *sql, int64_t scope, int64_t sig, int kind,
                       const bl_wr_stat *s, const uint8_t q3[24], int64_t day)
{
    bl_st *st = bl_st_get(db, sql);
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, scope);
    bl_st_int64(st, 2, sig);
    bl_st_int64(st, 3, kind);
    bl_st_int64(st, 4, s->count);
    bl_st_int64(st, 5, s->total_us);
    bl_st_int64(st, 6, s->self_us);
    bl_st_int64(st, 7, s->max_us);
    bl_st_blob(st, 8, s->sketch, s->sketch_len);
    if (sql != totals_put_sql && sql != totals_ins_sql)
        bl_st_int64(st, 9, day);
    bl_st_blob(st, 10, q3, 24);
    int rc = bl_st_step(st);
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* Adds s to one rollup row. kind: 0/1 the row's thread kind, 2 both;
 * table: 0 totals, 1 the app's day row, 2 its hour row (day: the day's or
 * hour's start). mb: scratch for the merged sketch. BL_EIO also for a
 * stored sketch that is malformed (as sketch_merge's SQL error was). */
static bl_err upsert(bl_db *db, int table, int64_t scope, int64_t sig, int kind,
                     const bl_wr_stat *s, int64_t day, bl_buf *mb)
{
    static const uint8_t empty[4] = { 2, BL_SKETCH_SUB_BITS, 0, 0 };
    bl_st *st = bl_st_get(db, read_sql[table]);
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, scope);
    bl_st_int64(st, 2, sig);
    bl_st_int64(st, 3, kind);
    if (table)
        bl_st_int64(st, 9, day);
    int rc = bl_st_step(st);
    bl_wr_stat t = *s;
    bl_err err = BL_OK;
    uint64_t qv[3];
    if (rc == BL_ST_ROW) {
        t.count += bl_st_col_int64(st, 0);
        t.total_us += bl_st_col_int64(st, 1);
        t.self_us += bl_st_col_int64(st, 2);
        int64_t max = bl_st_col_int64(st, 3);
        t.max_us = max > t.max_us ? max : t.max_us;
        const void *old = bl_st_col_blob(st, 4);
        size_t on = bl_st_col_bytes(st, 4);
        if (bl_st_is_null(st, 4)) { /* as sketch_merge: empty */
            old = empty;
            on = sizeof empty;
        }
        bl_buf_reset(mb);
        err = bl_sketch_blob_merge_q(old, on, s->sketch, s->sketch_len, mb, bl_sql_q3_levels,
                                     3, qv);
        t.sketch = mb->data;
        t.sketch_len = mb->len;
    }
    bl_st_reset(st);
    if (rc != BL_ST_ROW && rc != BL_ST_DONE)
        return BL_EIO;
    if (err)
        return err == BL_ENOMEM ? BL_ENOMEM : BL_EIO;
    /* the percentiles: clamped to the max in the totals, as sketch_q3 */
    uint64_t clamp = table ? UINT64_MAX >> 1 : (uint64_t)t.max_us;
    uint8_t q3[24];
    if (rc == BL_ST_ROW)
        bl_sql_q3_pack(qv, clamp, q3);
    else if (bl_sql_q3(t.sketch, t.sketch_len, clamp, q3))
        return BL_EIO;
    return put_stmt(db, rc == BL_ST_ROW ? put_sql[table] : ins_sql[table], scope, sig, kind,
                    &t, q3, day);
}

/* One addition to a rollup row; a flush's additions are sorted by row and
 * merged, so each row is written once per flush. */
typedef struct radd {
    int table; /* 0 rollup_totals, 1 rollup_days, 2 rollup_hours */
    int kind;
    int64_t scope, sig, day;
    int64_t count, total, self, max;
    const void *blob;
    size_t len;
} radd;

static int cmp_i(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

/* The rollup rows one method_stats row `s` (of build `build`, app `app`,
 * identity `sig`) feeds, written to a[] (room for FAN): the build's and the
 * app's totals for both kinds (2) and, on the main thread, for the main
 * thread (1); the app's day (UTC, µs) and hour for its own kind. Returns
 * how many. */
#define FAN 7
static size_t fan_out(radd *a, const bl_wr_stat *s, int64_t build, int64_t app, int64_t sig)
{
    size_t na = 0;
    int kind = s->main ? 1 : 0;
    radd r = { 0, 0, 0, sig, 0, s->count, s->total_us, s->self_us, s->max_us, s->sketch,
               s->sketch_len };
    const int64_t scopes[2] = { build, -app };
    for (int k = 0; k < 2; k++) {
        r.scope = scopes[k];
        if (kind == 1) {
            r.kind = 1;
            a[na++] = r;
        }
        r.kind = 2;
        a[na++] = r;
    }
    /* the app's day: both kinds (2) and, on the main thread, the main
     * thread (1), as the totals (a query reads one of them); its hour: the
     * row's own kind, as method_stats (hours are read at a range's edges
     * only: fewer and smaller rows) */
    r.scope = -app;
    r.table = 1;
    r.day = s->hour - ((s->hour % 86400000000ll) + 86400000000ll) % 86400000000ll;
    if (kind == 1) {
        r.kind = 1;
        a[na++] = r;
    }
    r.kind = 2;
    a[na++] = r;
    r.table = 2;
    r.kind = kind;
    r.day = s->hour;
    a[na++] = r;
    return na;
}

static int cmp_radd(const void *pa, const void *pb)
{
    const radd *a = pa, *b = pb;
    int c;
    if ((c = cmp_i(a->table, b->table)) || (c = cmp_i(a->scope, b->scope)) ||
        (c = cmp_i(a->sig, b->sig)) || (c = cmp_i(a->kind, b->kind)))
        return c;
    return cmp_i(a->day, b->day);
}

/* The sum of a[i..j) (rows of one key, cmp_radd), sketches merged through
 * the two buffers m (the result's sketch points into one of them or into
 * a[i]). BL_OK; bl_sketch_blob_merge's errors. */
static bl_err merge_run(const radd *a, size_t i, size_t j, bl_buf m[2], bl_wr_stat *s)
{
    memset(s, 0, sizeof *s);
    s->count = a[i].count;
    s->total_us = a[i].total;
    s->self_us = a[i].self;
    s->max_us = a[i].max;
    s->sketch = a[i].blob;
    s->sketch_len = a[i].len;
    int cur = 0; /* m[cur] holds the sum so far */
    for (size_t k = i + 1; k < j; k++) {
        s->count += a[k].count;
        s->total_us += a[k].total;
        s->self_us += a[k].self;
        s->max_us = a[k].max > s->max_us ? a[k].max : s->max_us;
        bl_buf_reset(&m[!cur]);
        bl_err err = bl_sketch_blob_merge(s->sketch, s->sketch_len, a[k].blob, a[k].len,
                                          &m[!cur]);
        if (err)
            return err;
        cur = !cur;
        s->sketch = m[cur].data;
        s->sketch_len = m[cur].len;
    }
    return BL_OK;
}

/* What the writer's rows of one build do to the rollups (add_rows with
 * check): mode 0 added; 1 skipped (the app is marked for a rebuild, which
 * clears its rollups first, or is the graveyard app 0); 2 added when at or
 * before the app's rebuild cursor cur[] (rollup_rebuild). */
typedef struct bstate {
    int64_t build, app;
    int mode;
    int64_t cur[4];
} bstate;

static bl_err build_state(bl_db *db, int64_t build, bstate *b)
{
    bl_st *st = bl_st_get(
        db, "SELECT b.app_id, EXISTS (SELECT 1 FROM rollup_dirty d WHERE d.app_id = b.app_id), "
            "r.app_id IS NOT NULL, r.build, r.method, r.main, r.hour FROM builds b "
            "LEFT JOIN rollup_rebuild r ON r.app_id = b.app_id WHERE b.id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        b->build = build;
        b->app = bl_st_col_int64(st, 0);
        b->mode = !b->app || (int)bl_st_col_int64(st, 1) ? 1 : (int)bl_st_col_int64(st, 2) ? 2 : 0;
        for (int k = 0; k < 4; k++)
            b->cur[k] = bl_st_col_int64(st, 3 + k);
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

/* Whether row s is in the rollups of an app being rebuilt (rebuild_step's
 * cursor): the later rows are still to be read by the rebuild. */
static int before_cursor(const bstate *b, const bl_wr_stat *s)
{
    const int64_t *c = b->cur;
    if (c[0] == -1) /* its old rows are being deleted: none yet */
        return 0;
    if (c[0] == 0) /* builds up to id c[1] done */
        return s->build_id <= c[1];
    if (s->build_id != c[0])
        return s->build_id < c[0];
    if (s->method != c[1])
        return s->method < c[1];
    if (s->main != c[2])
        return s->main < c[2];
    return s->hour <= c[3];
}

static bl_err lookups(bl_db *db, const bl_wr_stat *s, int64_t app, int64_t *sig)
{
    int rc;
    bl_st *st = bl_st_get(db, "SELECT sig FROM methods WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, s->method);
    rc = bl_st_step(st);
    *sig = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : 0;
    int null_sig = rc == BL_ST_ROW && bl_st_is_null(st, 0);
    bl_st_reset(st);
    if (rc != BL_ST_ROW)
        return BL_EIO;
    if (!null_sig)
        return BL_OK;
    /* the method's first stats: its identity in the app, created if new */
    st = bl_st_get(db, "INSERT INTO method_sigs(app_id, class, name, descriptor, source_file) "
                        "SELECT CAST(?1 AS bigint), class, name, descriptor, source_file FROM methods "
                        "WHERE id = ?2 ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app);
    bl_st_int64(st, 2, s->method);
    rc = bl_st_step(st);
    bl_st_reset(st);
    if (rc != BL_ST_DONE)
        return BL_EIO;
    st = bl_st_get(db, "UPDATE methods SET sig = (SELECT s.id FROM method_sigs s "
                        "WHERE s.app_id = ?1 AND s.class = methods.class "
                        "AND s.name = methods.name AND s.descriptor = methods.descriptor "
                        "AND s.source_file = methods.source_file) WHERE id = ?2 RETURNING sig");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app);
    bl_st_int64(st, 2, s->method);
    rc = bl_st_step(st);
    null_sig = rc != BL_ST_ROW || bl_st_is_null(st, 0);
    *sig = null_sig ? 0 : bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return null_sig ? BL_EIO : BL_OK;
}

/* ---- PostgreSQL: a flush's rollup rows in a few statements -------------- */

/* store/pg_rows.h's bl_pgm_table statements of the three rollup tables:
 * rollup_totals keyed (scope, sig, main), q3 clamped to the max; days and
 * hours keyed (scope, sig, day or hour, main), q3 not clamped */
#define RU3_UNNEST                                                                            \
    "unnest(CAST(?1 AS bigint[]), CAST(?2 AS bigint[]), CAST(?3 AS bigint[]), "               \
    "CAST(?4 AS bigint[]), CAST(?5 AS bigint[]), CAST(?6 AS bigint[]), CAST(?7 AS bigint[]), " \
    "CAST(?8 AS int[]), CAST(?9 AS int[])) WITH ORDINALITY "                                  \
    "AS u(sc, sg, mn, c, tt, sf, mx, o, l, ord)"
static const char totals_read_pg[] =
    "SELECT t.scope, t.sig, t.main, t.count, t.total_us, t.self_us, t.max_us, t.sketch "
    "FROM unnest(CAST(?1 AS bigint[]), CAST(?2 AS bigint[]), CAST(?3 AS bigint[])) "
    "AS k(sc, sg, mn) JOIN rollup_totals t ON t.scope = k.sc AND t.sig = k.sg "
    "AND t.main = k.mn ORDER BY t.scope, t.sig, t.main FOR UPDATE OF t";
static const char totals_update_pg[] =
    "UPDATE rollup_totals AS t SET count = u.c, total_us = u.tt, self_us = u.sf, "
    "max_us = u.mx, sketch = substring(CAST(?10 AS bytea) FROM u.o FOR u.l), "
    "q3 = substring(CAST(?11 AS bytea) FROM CAST(u.ord AS int) * 24 - 23 FOR 24) "
    "FROM " RU3_UNNEST " WHERE t.scope = u.sc AND t.sig = u.sg AND t.main = u.mn";
static const char totals_insert_pg[] =
    "INSERT INTO rollup_totals(scope, sig, main, count, total_us, self_us, max_us, q3, sketch) "
    "SELECT u.sc, u.sg, u.mn, u.c, u.tt, u.sf, u.mx, "
    "substring(CAST(?11 AS bytea) FROM CAST(u.ord AS int) * 24 - 23 FOR 24), "
    "substring(CAST(?10 AS bytea) FROM u.o FOR u.l) FROM " RU3_UNNEST
    " ON CONFLICT (scope, sig, main) DO NOTHING RETURNING scope, sig, main";
#define RU4_UNNEST                                                                            \
    "unnest(CAST(?1 AS bigint[]), CAST(?2 AS bigint[]), CAST(?3 AS bigint[]), "               \
    "CAST(?4 AS bigint[]), CAST(?5 AS bigint[]), CAST(?6 AS bigint[]), CAST(?7 AS bigint[]), " \
    "CAST(?8 AS bigint[]), CAST(?9 AS int[]), CAST(?10 AS int[])) WITH ORDINALITY "           \
    "AS u(sc, sg, d, mn, c, tt, sf, mx, o, l, ord)"
#define RU4_READ(T, D)                                                                        \
    "SELECT t.scope, t.sig, t." D ", t.main, t.count, t.total_us, t.self_us, t.max_us, "       \
    "t.sketch FROM unnest(CAST(?1 AS bigint[]), CAST(?2 AS bigint[]), CAST(?3 AS bigint[]), " \
    "CAST(?4 AS bigint[])) AS k(sc, sg, d, mn) JOIN " T " t ON t.scope = k.sc "               \
    "AND t.sig = k.sg AND t." D " = k.d AND t.main = k.mn "                                   \
    "ORDER BY t.scope, t.sig, t." D ", t.main FOR UPDATE OF t"
#define RU4_UPDATE(T, D)                                                                      \
    "UPDATE " T " AS t SET count = u.c, total_us = u.tt, self_us = u.sf, max_us = u.mx, "     \
    "sketch = substring(CAST(?11 AS bytea) FROM u.o FOR u.l), "                               \
    "q3 = substring(CAST(?12 AS bytea) FROM CAST(u.ord AS int) * 24 - 23 FOR 24) "            \
    "FROM " RU4_UNNEST " WHERE t.scope = u.sc AND t.sig = u.sg AND t." D " = u.d "           \
    "AND t.main = u.mn"
#define RU4_INSERT(T, D)                                                                      \
    "INSERT INTO " T "(scope, sig, " D ", main, count, total_us, self_us, max_us, q3, "       \
    "sketch) SELECT u.sc, u.sg, u.d, u.mn, u.c, u.tt, u.sf, u.mx, "                           \
    "substring(CAST(?12 AS bytea) FROM CAST(u.ord AS int) * 24 - 23 FOR 24), "                \
    "substring(CAST(?11 AS bytea) FROM u.o FOR u.l) FROM " RU4_UNNEST                         \
    " ON CONFLICT (scope, sig, " D ", main) DO NOTHING RETURNING scope, sig, " D ", main"
static const char days_read_pg[] = RU4_READ("rollup_days", "day");
static const char days_update_pg[] = RU4_UPDATE("rollup_days", "day");
static const char days_insert_pg[] = RU4_INSERT("rollup_days", "day");
static const char hours_read_pg[] = RU4_READ("rollup_hours", "hour");
static const char hours_update_pg[] = RU4_UPDATE("rollup_hours", "hour");
static const char hours_insert_pg[] = RU4_INSERT("rollup_hours", "hour");
/* by table: 0 rollup_totals, 1 rollup_days, 2 rollup_hours */
static const bl_pgm_table pg_tables[3] = {
    { totals_read_pg, totals_update_pg, totals_insert_pg, 3, 1 },
    { days_read_pg, days_update_pg, days_insert_pg, 4, 2 },
    { hours_read_pg, hours_update_pg, hours_insert_pg, 4, 2 },
};

/* the methods' identities, ?1 their ids: read; made for those without one
 * in the order of the unique key (two nodes making identities of one app
 * at once wait on each other's rows in one order: no deadlock) */
static const char sigs_read_pg[] =
    "SELECT id, sig FROM methods WHERE id = ANY(CAST(?1 AS bigint[])) ORDER BY id";
static const char sigs_make_pg[] =
    "INSERT INTO method_sigs(app_id, class, name, descriptor, source_file) "
    "SELECT b.app_id, m.class, m.name, m.descriptor, m.source_file "
    "FROM methods m JOIN builds b ON b.id = m.build_id "
    "WHERE m.id = ANY(CAST(?1 AS bigint[])) "
    "ORDER BY b.app_id, m.class, m.name, m.descriptor, m.source_file ON CONFLICT DO NOTHING";
/* (a subquery per row, as on SQLite: joined instead, PostgreSQL planned the
 * method_sigs lookup on app_id alone while the tables had no statistics,
 * seconds per round; no `sig IS NULL`: it led the planner to that index) */
static const char sigs_set_pg[] =
    "UPDATE methods AS m SET sig = (SELECT s.id FROM method_sigs s WHERE s.app_id = b.app_id "
    "AND s.class = m.class AND s.name = m.name AND s.descriptor = m.descriptor "
    "AND s.source_file = m.source_file) FROM builds b "
    "WHERE m.id = ANY(CAST(?1 AS bigint[])) AND b.id = m.build_id RETURNING m.id, m.sig";

static int cmp_int64(const void *x, const void *y)
{
    return cmp_i(*(const int64_t *)x, *(const int64_t *)y);
}

/* a method's identity, found by id in mids[0..nm) (sorted) */
typedef struct msig {
    int64_t *mids, *sigs;
    char *asked; /* 1: in the list of those to make */
    size_t nm;
} msig;

static size_t msig_find(const msig *m, int64_t id)
{
    const int64_t *p = bsearch(&id, m->mids, m->nm, sizeof *m->mids, cmp_int64);
    return p ? (size_t)(p - m->mids) : SIZE_MAX;
}

/* Runs sql (?1: ids) and stores the (id, sig) rows it answers into m. */
static bl_err msig_run(bl_db *db, const char *sql, bl_pga *ids, msig *m)
{
    bl_st *st = bl_st_get(db, sql);
    if (!st)
        return BL_EIO;
    if (bl_pga_bind(ids, st, 1))
        return BL_ENOMEM;
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        size_t k = msig_find(m, bl_st_col_int64(st, 0));
        if (k != SIZE_MAX && !bl_st_is_null(st, 1))
            m->sigs[k] = bl_st_col_int64(st, 1);
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* The identities of the methods of rows s[i] with app[i] != 0, into m
 * (sorted ids, their sigs), made when missing. BL_EIO also when a methods
 * row is missing (as SQLite's lookups). */
static bl_err pg_sigs(bl_db *db, const bl_wr_stat *s, const int64_t *app, size_t n, msig *m)
{
    m->nm = 0;
    for (size_t i = 0; i < n; i++)
        if (app[i])
            m->mids[m->nm++] = s[i].method;
    qsort(m->mids, m->nm, sizeof *m->mids, cmp_int64);
    size_t w = 0;
    for (size_t i = 0; i < m->nm; i++)
        if (!w || m->mids[i] != m->mids[w - 1])
            m->mids[w++] = m->mids[i];
    m->nm = w;
    memset(m->sigs, 0, w * sizeof *m->sigs);
    memset(m->asked, 0, w);
    bl_pga ids;
    bl_pga_init(&ids);
    bl_err err = BL_OK;
    for (size_t i = 0; i < w && !err; i++)
        err = bl_pga_int(&ids, m->mids[i]);
    if (!err)
        err = msig_run(db, sigs_read_pg, &ids, m);
    /* those without identity (sigs_make_pg orders them) */
    bl_pga_reset(&ids);
    for (size_t i = 0; i < n && !err; i++) {
        size_t k = app[i] ? msig_find(m, s[i].method) : SIZE_MAX;
        if (k == SIZE_MAX || m->sigs[k] || m->asked[k])
            continue;
        m->asked[k] = 1;
        err = bl_pga_int(&ids, s[i].method);
    }
    if (!err && ids.n) {
        bl_st *st = bl_st_get(db, sigs_make_pg);
        if (!st)
            err = BL_EIO;
        else if ((err = bl_pga_bind(&ids, st, 1)) == BL_OK && bl_st_done(st))
            err = BL_EIO;
        if (!err)
            err = msig_run(db, sigs_set_pg, &ids, m);
    }
    for (size_t i = 0; i < w && !err; i++)
        if (!m->sigs[i]) {
            bl_pg_fail(db, "a method of the stats has no methods row");
            err = BL_EIO;
        }
    bl_pga_cleanup(&ids);
    return err;
}

/* add_rows on PostgreSQL: the rows' builds and identities looked up in a
 * few statements, each rollup row's additions merged in memory, then each
 * table's rows read, merged and written in three statements
 * (bl_pgm_merge). */
static bl_err add_rows_pg(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx, int check)
{
    if (n > SIZE_MAX / FAN / sizeof(radd))
        return BL_ENOMEM;
    bl_wr_stat *s = malloc(n * sizeof *s);
    int64_t *app = malloc(n * sizeof *app);
    msig m = { malloc(n * sizeof(int64_t)), malloc(n * sizeof(int64_t)), malloc(n), 0 };
    radd *a = malloc(FAN * n * sizeof *a);
    bl_pgm_row *pr = malloc(FAN * n * sizeof *pr);
    size_t *aoff = malloc(FAN * n * sizeof *aoff);
    bl_buf arena, mb[2];
    bl_buf_init(&arena, 0);
    bl_buf_init(&mb[0], 0);
    bl_buf_init(&mb[1], 0);
    bl_err err = s && app && m.mids && m.sigs && m.asked && a && pr && aoff ? BL_OK : BL_ENOMEM;
    bstate bs = { 0, 0, 0, { 0, 0, 0, 0 } };
    for (size_t i = 0; i < n && !err; i++) {
        row(ctx, i, &s[i]);
        app[i] = 0;
        if (s[i].build_id != bs.build && (err = build_state(db, s[i].build_id, &bs)))
            break;
        if (check && (bs.mode == 1 || (bs.mode == 2 && !before_cursor(&bs, &s[i]))))
            continue;
        if (!bs.app) { /* a rebuild of app 0 does not happen (graveyard_sql) */
            err = BL_EIO;
            break;
        }
        app[i] = bs.app;
    }
    if (!err)
        err = pg_sigs(db, s, app, n, &m);
    span sp[SPANS];
    int n_sp = 0;
    size_t na = 0;
    for (size_t i = 0; i < n && !err; i++) {
        if (!app[i])
            continue;
        na += fan_out(a + na, &s[i], s[i].build_id, app[i], m.sigs[msig_find(&m, s[i].method)]);
        if (span_note(db, sp, &n_sp, s[i].build_id, s[i].hour) ||
            span_note(db, sp, &n_sp, -app[i], s[i].hour))
            err = BL_EIO;
    }
    if (!err)
        qsort(a, na, sizeof *a, cmp_radd);
    /* each rollup row's additions merged; merged sketches in the arena
     * (aoff: their offsets, SIZE_MAX for a row's own sketch) */
    size_t np = 0, first[4] = { 0, 0, 0, 0 };
    for (size_t i = 0; i < na && !err;) {
        size_t j = i + 1;
        while (j < na && !cmp_radd(&a[i], &a[j]))
            j++;
        bl_wr_stat t;
        err = merge_run(a, i, j, mb, &t);
        if (err)
            break;
        aoff[np] = SIZE_MAX;
        if (j - i > 1) {
            aoff[np] = arena.len;
            if ((err = bl_buf_append(&arena, t.sketch, t.sketch_len)))
                break;
        }
        bl_pgm_row *r = &pr[np];
        if (a[i].table == 0)
            *r = (bl_pgm_row){ { a[i].scope, a[i].sig, a[i].kind, 0 }, 0, 0, 0, 0, NULL, 0 };
        else
            *r = (bl_pgm_row){ { a[i].scope, a[i].sig, a[i].day, a[i].kind }, 0, 0, 0, 0, NULL, 0 };
        r->count = t.count;
        r->total_us = t.total_us;
        r->self_us = t.self_us;
        r->max_us = t.max_us;
        r->sketch = t.sketch;
        r->sketch_len = t.sketch_len;
        first[a[i].table + 1] = ++np;
        i = j;
    }
    for (size_t k = 0; k < np && !err; k++)
        if (aoff[k] != SIZE_MAX)
            pr[k].sketch = arena.data + aoff[k];
    /* rows are sorted by table: table t's are pr[first[t]..first[t + 1]) */
    for (int t = 1; t < 4; t++)
        if (first[t] < first[t - 1])
            first[t] = first[t - 1];
    for (int t = 0; t < 3 && !err; t++)
        err = bl_pgm_merge(db, &pg_tables[t], pr + first[t], first[t + 1] - first[t]);
    if (!err)
        err = span_flush(db, sp, &n_sp);
    if (err == BL_ENOMEM)
        bl_pg_fail(db, "out of memory");
    else if (err == BL_EFORMAT || err == BL_ETOOBIG)
        bl_pg_fail(db, "malformed sketch (or a count past 2^64)");
    bl_buf_cleanup(&arena);
    bl_buf_cleanup(&mb[0]);
    bl_buf_cleanup(&mb[1]);
    free(s);
    free(app);
    free(m.mids);
    free(m.sigs);
    free(m.asked);
    free(a);
    free(pr);
    free(aoff);
    return err == BL_ENOMEM ? BL_ENOMEM : err ? BL_EIO : BL_OK;
}

bl_err bl_rollups_add(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx)
{
    return add_rows(db, n, row, ctx, 1);
}

/* check: the writer's rows (added per bstate); 0: a rebuild's own rows */
static bl_err add_rows(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx, int check)
{
    if (!n)
        return BL_OK;
    if (bl_db_is_pg(db))
        return add_rows_pg(db, n, row, ctx, check);
    bstate bs = { 0, 0, 0, { 0, 0, 0, 0 } };
    span sp[SPANS];
    int n_sp = 0;
    if (n > SIZE_MAX / FAN / sizeof(radd))
        return BL_ENOMEM;
    radd *a = malloc(FAN * n * sizeof *a);
    if (!a)
        return BL_ENOMEM;
    size_t na = 0;
    bl_err err = BL_OK;
    for (size_t i = 0; i < n && !err; i++) {
        bl_wr_stat s;
        row(ctx, i, &s);
        if (s.build_id != bs.build && (err = build_state(db, s.build_id, &bs)))
            break;
        if (check && (bs.mode == 1 || (bs.mode == 2 && !before_cursor(&bs, &s))))
            continue;
        if (!bs.app) { /* a rebuild of app 0 does not happen (graveyard_sql) */
            err = BL_EIO;
            break;
        }
        int64_t sig;
        if ((err = lookups(db, &s, bs.app, &sig)))
            break;
        na += fan_out(a + na, &s, s.build_id, bs.app, sig);
        if (span_note(db, sp, &n_sp, s.build_id, s.hour) ||
            span_note(db, sp, &n_sp, -bs.app, s.hour))
            err = BL_EIO;
    }
    if (!err)
        qsort(a, na, sizeof *a, cmp_radd);
    bl_buf m[2], mb;
    bl_buf_init(&m[0], 0);
    bl_buf_init(&m[1], 0);
    bl_buf_init(&mb, 0);
    for (size_t i = 0; i < na && !err;) {
        size_t j = i + 1;
        while (j < na && !cmp_radd(&a[i], &a[j]))
            j++;
        bl_wr_stat s;
        err = merge_run(a, i, j, m, &s);
        if (!err)
            err = upsert(db, a[i].table, a[i].scope, a[i].sig, a[i].kind, &s, a[i].day, &mb);
        i = j;
    }
    bl_buf_cleanup(&m[0]);
    bl_buf_cleanup(&m[1]);
    bl_buf_cleanup(&mb);
    free(a);
    if (err)
        return err == BL_ENOMEM ? BL_ENOMEM : BL_EIO;
    return span_flush(db, sp, &n_sp);
}

/* ---- subtracting expired rows ------------------------------------------ */

/* ?1 scope, ?2 sig, ?3 thread kind, ?4 day or hour (days, hours); PostgreSQL
 * locks the row (another node's writer may add to it meanwhile) */
#define TOTALS_GET                                                                            \
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_totals "                     \
    "WHERE scope = ?1 AND sig = ?2 AND main = ?3"
#define DAYS_GET                                                                              \
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_days "                       \
    "WHERE scope = ?1 AND sig = ?2 AND day = ?4 AND main = ?3"
#define HOURS_GET                                                                             \
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_hours "                      \
    "WHERE scope = ?1 AND sig = ?2 AND hour = ?4 AND main = ?3"
static const char totals_get_sql[] = TOTALS_GET;
static const char days_get_sql[] = DAYS_GET;
static const char hours_get_sql[] = HOURS_GET;
static const char *const get_sql_pg[3] = { TOTALS_GET " FOR UPDATE", DAYS_GET " FOR UPDATE",
                                           HOURS_GET " FOR UPDATE" };
static const char totals_del_sql[] =
    "DELETE FROM rollup_totals WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char days_del_sql[] =
    "DELETE FROM rollup_days WHERE scope = ?1 AND sig = ?2 AND day = ?4 AND main = ?3";
static const char hours_del_sql[] =
    "DELETE FROM rollup_hours WHERE scope = ?1 AND sig = ?2 AND hour = ?4 AND main = ?3";
/* the new figures: ?4 count, ?5 total, ?6 self, ?7 max, ?8 sketch, ?9 its
 * percentiles (bl_sql_q3: clamped to the max in the totals, not in days
 * and hours); ?10 the day or hour (PostgreSQL wants every number up to the
 * largest used) */
static const char totals_set_sql[] =
    "UPDATE rollup_totals SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = ?9 WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char days_set_sql[] =
    "UPDATE rollup_days SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = ?9 WHERE scope = ?1 AND sig = ?2 AND day = ?10 AND main = ?3";
static const char hours_set_sql[] =
    "UPDATE rollup_hours SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = ?9 WHERE scope = ?1 AND sig = ?2 AND hour = ?10 AND main = ?3";
/* the largest max left, when the subtracted rows held the row's max:
 * an app's day from its builds' method_stats hours of that day (the
 * methods_sig index, then the method_stats key); a build's total from its
 * method_stats rows of the identity; an app's total from its days */
static const char days_max_sql[] =
    "SELECT max(s.max_us) FROM methods m JOIN builds b ON b.id = m.build_id "
    "JOIN method_stats s ON s.build_id = m.build_id AND s.method = m.id "
    "AND s.hour >= ?4 AND s.hour < ?4 + " DAY_US " WHERE m.sig = ?2 "
    "AND b.app_id = -CAST(?1 AS bigint) AND (?3 = 2 OR s.main = 1)";
static const char hours_max_sql[] =
    "SELECT max(s.max_us) FROM methods m JOIN builds b ON b.id = m.build_id "
    "JOIN method_stats s ON s.build_id = m.build_id AND s.method = m.id AND s.main = ?3 "
    "AND s.hour = ?4 WHERE m.sig = ?2 AND b.app_id = -CAST(?1 AS bigint)";
static const char build_max_sql[] =
    "SELECT max(s.max_us) FROM methods m JOIN method_stats s ON s.build_id = m.build_id "
    "AND s.method = m.id WHERE m.build_id = ?1 AND m.sig = ?2 AND (?3 = 2 OR s.main = 1)";
static const char app_max_sql[] =
    "SELECT max(max_us) FROM rollup_days WHERE scope = ?1 AND sig = ?2 AND main = ?3";
/* by table: 0 rollup_totals, 1 rollup_days, 2 rollup_hours */
static const char *const get_sql[3] = { totals_get_sql, days_get_sql, hours_get_sql };
static const char *const del_sql[3] = { totals_del_sql, days_del_sql, hours_del_sql };
static const char *const set_sql[3] = { totals_set_sql, days_set_sql, hours_set_sql };

/* The cached statement for sql (get2: its PostgreSQL text, or NULL for the
 * same) with the row's key bound: ?1 scope, ?2 sig, ?3 thread kind, and the
 * day or hour at parameter day_ix (0: none). */
static bl_st *key_stmt(bl_db *db, const char *sql, const char *pg_sql, int64_t scope,
                       int64_t sig, int kind, int64_t day, int day_ix)
{
    bl_st *st = bl_st_get2(db, sql, pg_sql ? pg_sql : sql);
    if (!st)
        return NULL;
    bl_st_int64(st, 1, scope);
    bl_st_int64(st, 2, sig);
    bl_st_int64(st, 3, kind);
    if (day_ix)
        bl_st_int64(st, day_ix, day);
    return st;
}

static bl_err mark_dirty(bl_db *db, int64_t app)
{
    bl_st *st =
        bl_st_get(db, "INSERT INTO rollup_dirty(app_id) VALUES (?) ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app);
    int rc = bl_st_step(st);
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* Subtracts s (merged figures of deleted rows) from one rollup row.
 * BL_EINVAL when the row does not hold them (the rollups are not what
 * method_stats held: the caller marks the app dirty). tmp: scratch. */
static bl_err sub_one(bl_db *db, int table, int64_t scope, int64_t sig, int kind, int64_t day,
                      const bl_wr_stat *s, bl_buf *tmp)
{
    bl_st *st = key_stmt(db, get_sql[table], get_sql_pg[table], scope, sig, kind, day,
                         table ? 4 : 0);
    if (!st)
        return BL_EIO;
    int rc = bl_st_step(st);
    if (rc != BL_ST_ROW) {
        bl_st_reset(st);
        return rc == BL_ST_DONE ? BL_EINVAL : BL_EIO;
    }
    int64_t count = bl_st_col_int64(st, 0) - s->count;
    int64_t total = bl_st_col_int64(st, 1) - s->total_us;
    int64_t self = bl_st_col_int64(st, 2) - s->self_us;
    int64_t max = bl_st_col_int64(st, 3);
    bl_buf_reset(tmp);
    const void *blob = bl_st_col_blob(st, 4);
    size_t bn = bl_st_col_bytes(st, 4);
    bl_err err = blob ? bl_sketch_blob_sub(blob, bn, s->sketch, s->sketch_len, tmp)
                      : BL_EINVAL;
    if (err == BL_EFORMAT)
        err = BL_EINVAL;
    bl_st_reset(st);
    if (err)
        return err;
    if (count < 0 || s->max_us > max)
        return BL_EINVAL;
    /* count 0 may be left by rows of calls still running only: whether
     * rows are left is what the max query tells (NULL: none) */
    if (count == 0 || s->max_us == max) { /* the max may have gone with the rows */
        const char *sql = table == 1   ? days_max_sql
                          : table == 2 ? hours_max_sql
                          : scope > 0  ? build_max_sql
                                       : app_max_sql;
        st = key_stmt(db, sql, NULL, scope, sig, kind, day, table ? 4 : 0);
        if (!st)
            return BL_EIO;
        rc = bl_st_step(st);
        int none = rc != BL_ST_ROW || bl_st_is_null(st, 0);
        max = none ? 0 : bl_st_col_int64(st, 0);
        bl_st_reset(st);
        if (rc != BL_ST_ROW)
            return BL_EIO;
        if (none && count)
            return BL_EINVAL; /* count left but no row */
        if (none) { /* nothing left behind the row */
            st = key_stmt(db, del_sql[table], NULL, scope, sig, kind, day, table ? 4 : 0);
            if (!st)
                return BL_EIO;
            rc = bl_st_step(st);
            bl_st_reset(st);
            return rc == BL_ST_DONE ? BL_OK : BL_EIO;
        }
    }
    /* the percentiles of what is left (clamped to the max in the totals) */
    uint8_t q3[24];
    if (bl_sql_q3(tmp->data, tmp->len, table ? UINT64_MAX >> 1 : (uint64_t)max, q3))
        return BL_EIO;
    st = key_stmt(db, set_sql[table], NULL, scope, sig, kind, day, table ? 10 : 0);
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 4, count);
    bl_st_int64(st, 5, total);
    bl_st_int64(st, 6, self);
    bl_st_int64(st, 7, max);
    bl_st_blob(st, 8, tmp->data, tmp->len);
    bl_st_blob(st, 9, q3, sizeof q3);
    rc = bl_st_step(st);
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* The app of a build and the identity of a method for subtraction: *app 0
 * (skip the row) for the graveyard app, an app already dirty (its rebuild
 * recomputes everything), or a method without identity (marked dirty). */
static bl_err sub_lookups(bl_db *db, const bl_wr_stat *s, int64_t *build, int64_t *app,
                          int64_t *sig)
{
    *sig = 0;
    if (s->build_id != *build) {
        bl_st *st = bl_st_get(
            db, "SELECT b.app_id, EXISTS (SELECT 1 FROM rollup_dirty d WHERE d.app_id = b.app_id) "
                "OR EXISTS (SELECT 1 FROM rollup_rebuild r WHERE r.app_id = b.app_id) "
                "FROM builds b WHERE b.id = ?");
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, s->build_id);
        int rc = bl_st_step(st);
        *app = rc == BL_ST_ROW && !(int)bl_st_col_int64(st, 1) ? bl_st_col_int64(st, 0) : 0;
        bl_st_reset(st);
        if (rc != BL_ST_ROW && rc != BL_ST_DONE)
            return BL_EIO;
        *build = s->build_id;
    }
    if (!*app)
        return BL_OK;
    bl_st *st = bl_st_get(db, "SELECT sig FROM methods WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, s->method);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW && !bl_st_is_null(st, 0))
        *sig = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    if (rc != BL_ST_ROW && rc != BL_ST_DONE)
        return BL_EIO;
    if (!*sig) { /* figures under an identity it lost: rebuilt */
        if (mark_dirty(db, *app))
            return BL_EIO;
        *app = 0;
    }
    return BL_OK;
}

bl_err bl_rollups_sub(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx)
{
    if (!n)
        return BL_OK;
    if (n > SIZE_MAX / FAN / sizeof(radd))
        return BL_ENOMEM;
    radd *a = malloc(FAN * n * sizeof *a);
    if (!a)
        return BL_ENOMEM;

    size_t na = 0;
    int64_t build = 0, app = 0;
    bl_err err = BL_OK;
    for (size_t i = 0; i < n && !err; i++) {
        bl_wr_stat s;
        row(ctx, i, &s);
        int64_t sig;
        if ((err = sub_lookups(db, &s, &build, &app, &sig)) || !app)
            continue;
        na += fan_out(a + na, &s, build, app, sig);
    }

    if (!err)
        qsort(a, na, sizeof *a, cmp_radd);
    bl_buf m[2], tmp;
    bl_buf_init(&m[0], 0);
    bl_buf_init(&m[1], 0);
    bl_buf_init(&tmp, 0);
    /* the hours and days first: an app total's max is recomputed from the
     * days */
    for (int pass = 2; pass >= 0 && !err; pass--) {
        for (size_t i = 0; i < na && !err;) {
            size_t j = i + 1;
            while (j < na && !cmp_radd(&a[i], &a[j]))
                j++;
            if (a[i].table != pass) {
                i = j;
                continue;
            }
            bl_wr_stat s;
            err = merge_run(a, i, j, m, &s);
            if (err == BL_EFORMAT || err == BL_ETOOBIG)
                err = BL_EINVAL;
            if (!err)
                err = sub_one(db, a[i].table, a[i].scope, a[i].sig, a[i].kind, a[i].day, &s, &tmp);
            if (err == BL_EINVAL) { /* not what method_stats held: rebuilt */
                int64_t owner = a[i].scope < 0 ? -a[i].scope : 0;
                if (!owner) {
                    bl_st *st = bl_st_get(db, "SELECT app_id FROM builds WHERE id = ?");
                    if (!st) {
                        err = BL_EIO;
                        break;
                    }
                    bl_st_int64(st, 1, a[i].scope);
                    if (bl_st_step(st) == BL_ST_ROW)
                        owner = bl_st_col_int64(st, 0);
                    bl_st_reset(st);
                }
                err = owner ? mark_dirty(db, owner) : BL_OK;
                /* the app's other rows are moot now */
                size_t k = j;
                while (k < na && (a[k].scope == a[i].scope || a[k].scope == -owner))
                    k++;
                j = k;
            }
            i = j;
        }
    }
    bl_buf_cleanup(&m[0]);
    bl_buf_cleanup(&m[1]);
    bl_buf_cleanup(&tmp);
    free(a);
    return err == BL_ENOMEM ? BL_ENOMEM : err ? BL_EIO : BL_OK;
}

bl_err bl_rollups_expired(bl_db *db, int64_t build_id, int64_t before_hour)
{
    static const char *const sql[] = {
        "DELETE FROM rollup_spans WHERE scope = ?1 AND NOT EXISTS "
        "(SELECT 1 FROM method_stats WHERE build_id = ?1)",
        "UPDATE rollup_spans SET first_hour = CASE WHEN first_hour < ?2 THEN ?2 "
        "ELSE first_hour END WHERE scope = ?1",
        "DELETE FROM rollup_spans WHERE scope = -(SELECT app_id FROM builds WHERE id = ?1) "
        "AND NOT EXISTS (SELECT 1 FROM rollup_dirty d JOIN builds b ON b.app_id = d.app_id "
        "WHERE b.id = ?1) AND NOT EXISTS (SELECT 1 FROM rollup_rebuild r "
        "JOIN builds b ON b.app_id = r.app_id WHERE b.id = ?1)",
        "INSERT INTO rollup_spans(scope, first_hour, last_hour) "
        "SELECT -b.app_id, min(p.first_hour), max(p.last_hour) FROM builds b "
        "JOIN builds o ON o.app_id = b.app_id JOIN rollup_spans p ON p.scope = o.id "
        "WHERE b.id = ?1 AND b.app_id <> 0 AND NOT EXISTS "
        "(SELECT 1 FROM rollup_dirty d WHERE d.app_id = b.app_id) AND NOT EXISTS "
        "(SELECT 1 FROM rollup_rebuild r WHERE r.app_id = b.app_id) "
        "GROUP BY b.app_id ON CONFLICT DO NOTHING",
    };
    for (size_t i = 0; i < sizeof sql / sizeof *sql; i++) {
        bl_st *st = bl_st_get(db, sql[i]);
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, build_id);
        if (strstr(sql[i], "?2"))
            bl_st_int64(st, 2, before_hour);
        int rc = bl_st_step(st);
        bl_st_reset(st);
        if (rc != BL_ST_DONE)
            return BL_EIO;
    }
    return BL_OK;
}
