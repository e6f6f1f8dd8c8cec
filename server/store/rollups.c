/*
 * rollups.c — rebuilding dirty apps' rollups (see rollups.h). The triggers
 * of schema/migrations/0003_rollups.sql keep clean apps in step.
 */
#include "store/rollups.h"
#include "store/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg/sketch.h"
#include "common/buf.h"

#define DAY_US "86400000000"
#define NO_MAX "9223372036854775807" /* sketch_q3 without clamping */
#define APP_SCOPES "(scope = -?1 OR scope IN (SELECT id FROM builds WHERE app_id = ?1))"

/* run in order for one app (?1) */
static const char *const rebuild_sql[] = {
    /* identities of the app's methods that have none yet */
    "INSERT INTO method_sigs(app_id, class, name, descriptor, source_file) "
    "SELECT DISTINCT ?1, m.class, m.name, m.descriptor, m.source_file FROM methods m "
    "JOIN builds b ON b.id = m.build_id WHERE b.app_id = ?1 AND m.sig IS NULL "
    "ON CONFLICT DO NOTHING",
    "UPDATE methods SET sig = (SELECT s.id FROM method_sigs s WHERE s.app_id = ?1 "
    "AND s.class = methods.class AND s.name = methods.name AND s.descriptor = methods.descriptor "
    "AND s.source_file = methods.source_file) "
    "WHERE sig IS NULL AND build_id IN (SELECT id FROM builds WHERE app_id = ?1)",
    "DELETE FROM rollup_totals WHERE " APP_SCOPES,
    "DELETE FROM rollup_days WHERE " APP_SCOPES,
    "DELETE FROM rollup_spans WHERE " APP_SCOPES,
    "INSERT INTO rollup_days(scope, sig, day, main, count, total_us, self_us, max_us, q3, sketch) "
    "SELECT -?1, m.sig, s.hour - ((s.hour % " DAY_US ") + " DAY_US ") % " DAY_US
    " AS d, s.main, sum(s.count), sum(s.total_us), sum(s.self_us), max(s.max_us), x'', "
    "sketch_union(s.sketch) FROM method_stats s JOIN builds b ON b.id = s.build_id "
    "JOIN methods m ON m.id = s.method WHERE b.app_id = ?1 GROUP BY m.sig, d, s.main",
    "INSERT INTO rollup_totals(scope, sig, main, count, total_us, self_us, max_us, q3, sketch) "
    "SELECT s.build_id, m.sig, s.main, sum(s.count), sum(s.total_us), sum(s.self_us), "
    "max(s.max_us), x'', sketch_union(s.sketch) FROM method_stats s "
    "JOIN builds b ON b.id = s.build_id JOIN methods m ON m.id = s.method WHERE b.app_id = ?1 "
    "GROUP BY s.build_id, m.sig, s.main",
    "INSERT INTO rollup_totals(scope, sig, main, count, total_us, self_us, max_us, q3, sketch) "
    "SELECT -?1, sig, main, sum(count), sum(total_us), sum(self_us), max(max_us), x'', "
    "sketch_union(sketch) FROM rollup_days WHERE scope = -?1 GROUP BY sig, main",
    /* both thread kinds */
    "INSERT INTO rollup_totals(scope, sig, main, count, total_us, self_us, max_us, q3, sketch) "
    "SELECT scope, sig, 2, sum(count), sum(total_us), sum(self_us), max(max_us), x'', "
    "sketch_union(sketch) FROM rollup_totals WHERE " APP_SCOPES " GROUP BY scope, sig",
    /* other threads alone are never asked for: main (1) and both (2) kept */
    "DELETE FROM rollup_totals WHERE main = 0 AND " APP_SCOPES,
    "UPDATE rollup_totals SET q3 = sketch_q3(sketch, max_us) WHERE " APP_SCOPES,
    "UPDATE rollup_days SET q3 = sketch_q3(sketch, " NO_MAX ") WHERE scope = -?1",
    "INSERT INTO rollup_spans(scope, first_hour, last_hour) "
    "SELECT s.build_id, min(s.hour), max(s.hour) FROM method_stats s "
    "JOIN builds b ON b.id = s.build_id WHERE b.app_id = ?1 GROUP BY s.build_id",
    "INSERT INTO rollup_spans(scope, first_hour, last_hour) "
    "SELECT -?1, min(first_hour), max(last_hour) FROM rollup_spans "
    "WHERE scope IN (SELECT id FROM builds WHERE app_id = ?1) HAVING count(*) > 0",
    "DELETE FROM rollup_dirty WHERE app_id = ?1",
};

/* rows of builds that no longer exist */
static const char *const orphans_sql[] = {
    "DELETE FROM rollup_totals WHERE scope > 0 AND scope NOT IN (SELECT id FROM builds)",
    "DELETE FROM rollup_days WHERE scope > 0 AND scope NOT IN (SELECT id FROM builds)",
    "DELETE FROM rollup_spans WHERE scope > 0 AND scope NOT IN (SELECT id FROM builds)",
};

/* app 0 (retention's graveyard of builds being deleted): no rollups */
static const char *const graveyard_sql[] = {
    "DELETE FROM rollup_totals WHERE scope = 0 OR scope IN (SELECT id FROM builds "
    "WHERE app_id = 0)",
    "DELETE FROM rollup_days WHERE scope = 0",
    "DELETE FROM rollup_spans WHERE scope = 0 OR scope IN (SELECT id FROM builds "
    "WHERE app_id = 0)",
    "DELETE FROM rollup_dirty WHERE app_id = 0",
};

static bl_err run(bl_db *db, const char *sql, int64_t app)
{
    sqlite3_stmt *st = bl_db_stmt(db, sql);
    if (!st)
        return BL_EIO;
    if (sqlite3_bind_parameter_count(st) > 0) /* app 0, the graveyard, too */
        sqlite3_bind_int64(st, 1, app);
    return bl_db_step_done(st);
}

bl_err bl_rollups_refresh(bl_db *db, int *rebuilt)
{
    if (rebuilt)
        *rebuilt = 0;
    int64_t last = -1;
    for (int n = 0;; n++) {
        sqlite3_stmt *st = bl_db_stmt(db, "SELECT app_id FROM rollup_dirty LIMIT 1");
        if (!st)
            return BL_EIO;
        int rc = sqlite3_step(st);
        int64_t app = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (rc == SQLITE_DONE) {
            for (size_t i = 0; n && i < sizeof orphans_sql / sizeof *orphans_sql; i++)
                if (run(db, orphans_sql[i], 0))
                    return BL_EIO;
            return BL_OK;
        }
        if (rc != SQLITE_ROW)
            return BL_EIO;
        if (app == 0) { /* the graveyard of builds being deleted keeps none */
            for (size_t i = 0; i < sizeof graveyard_sql / sizeof *graveyard_sql; i++)
                if (run(db, graveyard_sql[i], 0))
                    return BL_EIO;
            last = app;
            continue;
        }
        /* each rebuild clears its app's mark: an app dirty again right after
         * its rebuild would loop for ever */
        if (n > 0 && app == last)
            return BL_EIO;
        last = app;
        /* one app's rebuild is all or nothing (a savepoint): a failure
         * leaves its old rows and its dirty mark, not half a rebuild */
        if (bl_db_exec(db, "SAVEPOINT rollup_rebuild"))
            return BL_EIO;
        for (size_t i = 0; i < sizeof rebuild_sql / sizeof *rebuild_sql; i++)
            if (run(db, rebuild_sql[i], app)) {
                bl_db_exec(db, "ROLLBACK TO rollup_rebuild");
                bl_db_exec(db, "RELEASE rollup_rebuild");
                return BL_EIO;
            }
        if (bl_db_exec(db, "RELEASE rollup_rebuild"))
            return BL_EIO;
        if (rebuilt)
            (*rebuilt)++;
    }
}

/* A row is updated when it exists, else inserted: the percentiles (q3)
 * are computed once, from the merged sketch (an INSERT … ON CONFLICT would
 * compute them for the VALUES as well). ?1 scope, ?2 sig, ?3 thread kind,
 * ?4 count, ?5 total, ?6 self, ?7 max, ?8 sketch, ?9 day. */
static const char totals_upd_sql[] =
    "UPDATE rollup_totals SET count = count + ?4, total_us = total_us + ?5, "
    "self_us = self_us + ?6, max_us = max(max_us, ?7), sketch = sketch_merge(sketch, ?8), "
    "q3 = sketch_q3(sketch_merge(sketch, ?8), max(max_us, ?7)) "
    "WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char totals_ins_sql[] =
    "INSERT INTO rollup_totals(scope, sig, main, count, total_us, self_us, max_us, q3, sketch) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, sketch_q3(?8, ?7), ?8)";
static const char days_upd_sql[] =
    "UPDATE rollup_days SET count = count + ?4, total_us = total_us + ?5, "
    "self_us = self_us + ?6, max_us = max(max_us, ?7), sketch = sketch_merge(sketch, ?8), "
    "q3 = sketch_q3(sketch_merge(sketch, ?8), " NO_MAX ") "
    "WHERE scope = ?1 AND sig = ?2 AND day = ?9 AND main = ?3";
static const char days_ins_sql[] =
    "INSERT INTO rollup_days(scope, sig, day, main, count, total_us, self_us, max_us, q3, sketch) "
    "VALUES (?1, ?2, ?9, ?3, ?4, ?5, ?6, ?7, sketch_q3(?8, " NO_MAX "), ?8)";
static const char span_sql[] =
    "INSERT INTO rollup_spans(scope, first_hour, last_hour) VALUES (?, ?, ?) "
    "ON CONFLICT DO UPDATE SET first_hour = min(first_hour, excluded.first_hour), "
    "last_hour = max(last_hour, excluded.last_hour)";

/* first/last hour per scope seen in one call, written at its end */
#define SPANS 16
typedef struct span {
    int64_t scope, first, last;
} span;

static bl_err span_flush(bl_db *db, span *sp, int *n)
{
    for (int i = 0; i < *n; i++) {
        sqlite3_stmt *st = bl_db_stmt(db, span_sql);
        if (!st)
            return BL_EIO;
        sqlite3_bind_int64(st, 1, sp[i].scope);
        sqlite3_bind_int64(st, 2, sp[i].first);
        sqlite3_bind_int64(st, 3, sp[i].last);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
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

/* Runs one of the statements above. *changed: rows changed. */
static bl_err add_stmt(bl_db *db, const char *sql, int64_t scope, int64_t sig, int kind,
                       const bl_wr_stat *s, int64_t day, int *changed)
{
    sqlite3_stmt *st = bl_db_stmt(db, sql);
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, scope);
    sqlite3_bind_int64(st, 2, sig);
    sqlite3_bind_int(st, 3, kind);
    sqlite3_bind_int64(st, 4, s->count);
    sqlite3_bind_int64(st, 5, s->total_us);
    sqlite3_bind_int64(st, 6, s->self_us);
    sqlite3_bind_int64(st, 7, s->max_us);
    sqlite3_bind_blob(st, 8, s->sketch, (int)s->sketch_len, SQLITE_STATIC);
    if (sql == days_upd_sql || sql == days_ins_sql)
        sqlite3_bind_int64(st, 9, day);
    int rc = sqlite3_step(st);
    *changed = sqlite3_changes(bl_db_handle(db));
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

/* kind: 0/1 the row's thread kind, 2 both; days: the app's day row */
static bl_err upsert(bl_db *db, int days, int64_t scope, int64_t sig, int kind,
                     const bl_wr_stat *s, int64_t day)
{
    int changed;
    if (add_stmt(db, days ? days_upd_sql : totals_upd_sql, scope, sig, kind, s, day, &changed))
        return BL_EIO;
    if (changed)
        return BL_OK;
    return add_stmt(db, days ? days_ins_sql : totals_ins_sql, scope, sig, kind, s, day, &changed);
}

/* One addition to a rollup row; a flush's additions are sorted by row and
 * merged, so each row is written once per flush. */
typedef struct radd {
    int table; /* 0 rollup_totals, 1 rollup_days */
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
 * identity `sig`) feeds, written to a[] (room for 5): the build's and the
 * app's totals for both kinds (2) and, on the main thread, for the main
 * thread (1); the app's day (UTC, µs) for its own kind. Returns how many. */
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
    r.table = 1;
    r.scope = -app;
    r.kind = kind;
    r.day = s->hour - ((s->hour % 86400000000ll) + 86400000000ll) % 86400000000ll;
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

static bl_err lookups(bl_db *db, const bl_wr_stat *s, int64_t *build, int64_t *app, int64_t *sig)
{
    int rc;
    if (s->build_id != *build || !*app) {
        sqlite3_stmt *st = bl_db_stmt(db, "SELECT app_id FROM builds WHERE id = ?");
        if (!st)
            return BL_EIO;
        sqlite3_bind_int64(st, 1, s->build_id);
        rc = sqlite3_step(st);
        *app = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
            return BL_EIO;
        *build = s->build_id;
    }
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT sig FROM methods WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, s->method);
    rc = sqlite3_step(st);
    *sig = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    int null_sig = rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_NULL;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return BL_EIO;
    if (!null_sig)
        return BL_OK;
    /* the method's first stats: its identity in the app, created if new */
    st = bl_db_stmt(db, "INSERT INTO method_sigs(app_id, class, name, descriptor, source_file) "
                        "SELECT ?1, class, name, descriptor, source_file FROM methods "
                        "WHERE id = ?2 ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, *app);
    sqlite3_bind_int64(st, 2, s->method);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return BL_EIO;
    st = bl_db_stmt(db, "UPDATE methods SET sig = (SELECT s.id FROM method_sigs s "
                        "WHERE s.app_id = ?1 AND s.class = methods.class "
                        "AND s.name = methods.name AND s.descriptor = methods.descriptor "
                        "AND s.source_file = methods.source_file) WHERE id = ?2 RETURNING sig");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, *app);
    sqlite3_bind_int64(st, 2, s->method);
    rc = sqlite3_step(st);
    null_sig = rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
    *sig = null_sig ? 0 : sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return null_sig ? BL_EIO : BL_OK;
}

bl_err bl_rollups_add(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx)
{
    if (!n)
        return BL_OK;
    int64_t build = 0, app = 0;
    span sp[SPANS];
    int n_sp = 0;
    /* at most 5 additions per row */
    if (n > SIZE_MAX / 5 / sizeof(radd))
        return BL_ENOMEM;
    radd *a = malloc(5 * n * sizeof *a);
    if (!a)
        return BL_ENOMEM;
    size_t na = 0;
    bl_err err = BL_OK;
    for (size_t i = 0; i < n && !err; i++) {
        bl_wr_stat s;
        row(ctx, i, &s);
        int64_t sig;
        if ((err = lookups(db, &s, &build, &app, &sig)))
            break;
        na += fan_out(a + na, &s, build, app, sig);
        if (span_note(db, sp, &n_sp, build, s.hour) || span_note(db, sp, &n_sp, -app, s.hour))
            err = BL_EIO;
    }
    if (!err)
        qsort(a, na, sizeof *a, cmp_radd);
    bl_buf m[2];
    bl_buf_init(&m[0], 0);
    bl_buf_init(&m[1], 0);
    for (size_t i = 0; i < na && !err;) {
        size_t j = i + 1;
        while (j < na && !cmp_radd(&a[i], &a[j]))
            j++;
        bl_wr_stat s = { 0 };
        s.count = a[i].count;
        s.total_us = a[i].total;
        s.self_us = a[i].self;
        s.max_us = a[i].max;
        s.sketch = a[i].blob;
        s.sketch_len = a[i].len;
        /* merge the run's sketches: m[cur] holds the sum so far */
        int cur = 0;
        for (size_t k = i + 1; k < j && !err; k++) {
            s.count += a[k].count;
            s.total_us += a[k].total;
            s.self_us += a[k].self;
            s.max_us = a[k].max > s.max_us ? a[k].max : s.max_us;
            bl_buf_reset(&m[!cur]);
            err = bl_sketch_blob_merge(s.sketch, s.sketch_len, a[k].blob, a[k].len, &m[!cur]);
            cur = !cur;
            s.sketch = m[cur].data;
            s.sketch_len = m[cur].len;
        }
        if (!err && upsert(db, a[i].table, a[i].scope, a[i].sig, a[i].kind, &s, a[i].day))
            err = BL_EIO;
        i = j;
    }
    bl_buf_cleanup(&m[0]);
    bl_buf_cleanup(&m[1]);
    free(a);
    if (err)
        return err == BL_ENOMEM ? BL_ENOMEM : BL_EIO;
    return span_flush(db, sp, &n_sp);
}

/* ---- subtracting expired rows ------------------------------------------ */

/* ?1 scope, ?2 sig, ?3 thread kind, ?9 day (rollup_days) */
static const char totals_get_sql[] =
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_totals "
    "WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char days_get_sql[] =
    "SELECT count, total_us, self_us, max_us, sketch FROM rollup_days "
    "WHERE scope = ?1 AND sig = ?2 AND day = ?9 AND main = ?3";
static const char totals_del_sql[] =
    "DELETE FROM rollup_totals WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char days_del_sql[] =
    "DELETE FROM rollup_days WHERE scope = ?1 AND sig = ?2 AND day = ?9 AND main = ?3";
/* ?4 count, ?5 total, ?6 self, ?7 max, ?8 sketch: the new figures */
static const char totals_set_sql[] =
    "UPDATE rollup_totals SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = sketch_q3(?8, ?7) WHERE scope = ?1 AND sig = ?2 AND main = ?3";
static const char days_set_sql[] =
    "UPDATE rollup_days SET count = ?4, total_us = ?5, self_us = ?6, max_us = ?7, "
    "sketch = ?8, q3 = sketch_q3(?8, " NO_MAX ") "
    "WHERE scope = ?1 AND sig = ?2 AND day = ?9 AND main = ?3";
/* the largest max left, when the subtracted rows held the row's max:
 * an app's day from its builds' method_stats hours of that day (the
 * methods_sig index, then the method_stats key); a build's total from its
 * method_stats rows of the identity; an app's total from its days */
static const char days_max_sql[] =
    "SELECT max(s.max_us) FROM methods m JOIN builds b ON b.id = m.build_id "
    "JOIN method_stats s ON s.build_id = m.build_id AND s.method = m.id AND s.main = ?3 "
    "AND s.hour >= ?9 AND s.hour < ?9 + " DAY_US " WHERE m.sig = ?2 AND b.app_id = -?1";
static const char build_max_sql[] =
    "SELECT max(s.max_us) FROM methods m JOIN method_stats s ON s.build_id = m.build_id "
    "AND s.method = m.id WHERE m.build_id = ?1 AND m.sig = ?2 AND (?3 = 2 OR s.main = 1)";
static const char app_max_sql[] =
    "SELECT max(max_us) FROM rollup_days WHERE scope = ?1 AND sig = ?2 "
    "AND (?3 = 2 OR main = 1)";

static sqlite3_stmt *key_stmt(bl_db *db, const char *sql, int64_t scope, int64_t sig, int kind,
                              int64_t day)
{
    sqlite3_stmt *st = bl_db_stmt(db, sql);
    if (!st)
        return NULL;
    sqlite3_bind_int64(st, 1, scope);
    sqlite3_bind_int64(st, 2, sig);
    sqlite3_bind_int(st, 3, kind);
    if (strstr(sql, "?9"))
        sqlite3_bind_int64(st, 9, day);
    return st;
}

static bl_err mark_dirty(bl_db *db, int64_t app)
{
    sqlite3_stmt *st =
        bl_db_stmt(db, "INSERT INTO rollup_dirty(app_id) VALUES (?) ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

/* Subtracts s (merged figures of deleted rows) from one rollup row.
 * BL_EINVAL when the row does not hold them (the rollups are not what
 * method_stats held: the caller marks the app dirty). tmp: scratch. */
static bl_err sub_one(bl_db *db, int days, int64_t scope, int64_t sig, int kind, int64_t day,
                      const bl_wr_stat *s, bl_buf *tmp)
{
    sqlite3_stmt *st = key_stmt(db, days ? days_get_sql : totals_get_sql, scope, sig, kind, day);
    if (!st)
        return BL_EIO;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? BL_EINVAL : BL_EIO;
    }
    int64_t count = sqlite3_column_int64(st, 0) - s->count;
    int64_t total = sqlite3_column_int64(st, 1) - s->total_us;
    int64_t self = sqlite3_column_int64(st, 2) - s->self_us;
    int64_t max = sqlite3_column_int64(st, 3);
    bl_buf_reset(tmp);
    const void *blob = sqlite3_column_blob(st, 4);
    int bn = sqlite3_column_bytes(st, 4);
    bl_err err = blob ? bl_sketch_blob_sub(blob, (size_t)bn, s->sketch, s->sketch_len, tmp)
                      : BL_EINVAL;
    if (err == BL_EFORMAT)
        err = BL_EINVAL;
    sqlite3_reset(st);
    if (err)
        return err;
    if (count < 0 || s->max_us > max)
        return BL_EINVAL;
    /* count 0 may be left by rows of calls still running only: whether
     * rows are left is what the max query tells (NULL: none) */
    if (count == 0 || s->max_us == max) { /* the max may have gone with the rows */
        const char *sql = days ? days_max_sql : scope > 0 ? build_max_sql : app_max_sql;
        st = key_stmt(db, sql, scope, sig, kind, day);
        if (!st)
            return BL_EIO;
        rc = sqlite3_step(st);
        int none = rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
        max = none ? 0 : sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
            return BL_EIO;
        if (none && count)
            return BL_EINVAL; /* count left but no row */
        if (none) { /* nothing left behind the row */
            st = key_stmt(db, days ? days_del_sql : totals_del_sql, scope, sig, kind, day);
            if (!st)
                return BL_EIO;
            rc = sqlite3_step(st);
            sqlite3_reset(st);
            return rc == SQLITE_DONE ? BL_OK : BL_EIO;
        }
    }
    st = key_stmt(db, days ? days_set_sql : totals_set_sql, scope, sig, kind, day);
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 4, count);
    sqlite3_bind_int64(st, 5, total);
    sqlite3_bind_int64(st, 6, self);
    sqlite3_bind_int64(st, 7, max);
    sqlite3_bind_blob(st, 8, tmp->data, (int)tmp->len, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

/* The app of a build and the identity of a method for subtraction: *app 0
 * (skip the row) for the graveyard app, an app already dirty (its rebuild
 * recomputes everything), or a method without identity (marked dirty). */
static bl_err sub_lookups(bl_db *db, const bl_wr_stat *s, int64_t *build, int64_t *app,
                          int64_t *sig)
{
    *sig = 0;
    if (s->build_id != *build) {
        sqlite3_stmt *st = bl_db_stmt(
            db, "SELECT b.app_id, EXISTS (SELECT 1 FROM rollup_dirty d WHERE d.app_id = b.app_id) "
                "FROM builds b WHERE b.id = ?");
        if (!st)
            return BL_EIO;
        sqlite3_bind_int64(st, 1, s->build_id);
        int rc = sqlite3_step(st);
        *app = rc == SQLITE_ROW && !sqlite3_column_int(st, 1) ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return BL_EIO;
        *build = s->build_id;
    }
    if (!*app)
        return BL_OK;
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT sig FROM methods WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, s->method);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *sig = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
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
    if (n > SIZE_MAX / 5 / sizeof(radd))
        return BL_ENOMEM;
    radd *a = malloc(5 * n * sizeof *a);
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
    /* the days first: an app total's max is recomputed from them */
    for (int pass = 1; pass >= 0 && !err; pass--) {
        for (size_t i = 0; i < na && !err;) {
            size_t j = i + 1;
            while (j < na && !cmp_radd(&a[i], &a[j]))
                j++;
            if (a[i].table != pass) {
                i = j;
                continue;
            }
            bl_wr_stat s = { 0 };
            s.count = a[i].count;
            s.total_us = a[i].total;
            s.self_us = a[i].self;
            s.max_us = a[i].max;
            s.sketch = a[i].blob;
            s.sketch_len = a[i].len;
            int cur = 0;
            for (size_t k = i + 1; k < j && !err; k++) {
                s.count += a[k].count;
                s.total_us += a[k].total;
                s.self_us += a[k].self;
                s.max_us = a[k].max > s.max_us ? a[k].max : s.max_us;
                bl_buf_reset(&m[!cur]);
                err = bl_sketch_blob_merge(s.sketch, s.sketch_len, a[k].blob, a[k].len, &m[!cur]);
                cur = !cur;
                s.sketch = m[cur].data;
                s.sketch_len = m[cur].len;
            }
            if (err == BL_EFORMAT || err == BL_ETOOBIG)
                err = BL_EINVAL;
            if (!err)
                err = sub_one(db, a[i].table, a[i].scope, a[i].sig, a[i].kind, a[i].day, &s, &tmp);
            if (err == BL_EINVAL) { /* not what method_stats held: rebuilt */
                int64_t owner = a[i].scope < 0 ? -a[i].scope : 0;
                if (!owner) {
                    sqlite3_stmt *st = bl_db_stmt(db, "SELECT app_id FROM builds WHERE id = ?");
                    if (!st) {
                        err = BL_EIO;
                        break;
                    }
                    sqlite3_bind_int64(st, 1, a[i].scope);
                    if (sqlite3_step(st) == SQLITE_ROW)
                        owner = sqlite3_column_int64(st, 0);
                    sqlite3_reset(st);
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
        "UPDATE rollup_spans SET first_hour = max(first_hour, ?2) WHERE scope = ?1",
        "DELETE FROM rollup_spans WHERE scope = -(SELECT app_id FROM builds WHERE id = ?1) "
        "AND NOT EXISTS (SELECT 1 FROM rollup_dirty d JOIN builds b ON b.app_id = d.app_id "
        "WHERE b.id = ?1)",
        "INSERT INTO rollup_spans(scope, first_hour, last_hour) "
        "SELECT -b.app_id, min(p.first_hour), max(p.last_hour) FROM builds b "
        "JOIN builds o ON o.app_id = b.app_id JOIN rollup_spans p ON p.scope = o.id "
        "WHERE b.id = ?1 AND b.app_id <> 0 AND NOT EXISTS "
        "(SELECT 1 FROM rollup_dirty d WHERE d.app_id = b.app_id) "
        "GROUP BY b.app_id ON CONFLICT DO NOTHING",
    };
    for (size_t i = 0; i < sizeof sql / sizeof *sql; i++) {
        sqlite3_stmt *st = bl_db_stmt(db, sql[i]);
        if (!st)
            return BL_EIO;
        sqlite3_bind_int64(st, 1, build_id);
        if (strstr(sql[i], "?2"))
            sqlite3_bind_int64(st, 2, before_hour);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return BL_EIO;
    }
    return BL_OK;
}
