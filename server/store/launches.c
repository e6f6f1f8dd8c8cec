/*
 * launches.c — launch aggregates in SQLite (see launches.h).
 */
#include "store/launches.h"

#include <stdio.h>
#include "store/internal.h"

#define HOUR_US 3600000000ll

static const char *const kind_names[BL_LCH_KINDS] = { "cold", "warm", "hot" };
static const char *const measure_names[BL_LCH_MEASURES] = {
    "application_attach_base_context", "application_on_create", "activity_on_create",
    "activity_on_start", "activity_on_resume", "ttid", "ttfd",
};

const char *bl_lch_kind_name(int kind)
{
    return kind >= 0 && kind < BL_LCH_KINDS ? kind_names[kind] : NULL;
}

const char *bl_lch_measure_name(int measure)
{
    return measure >= 0 && measure < BL_LCH_MEASURES ? measure_names[measure] : NULL;
}

static int64_t hour_of(int64_t at_us)
{
    /* floor, also for times before 1970 */
    return at_us >= 0 ? at_us / HOUR_US : -((-at_us + HOUR_US - 1) / HOUR_US);
}

/* Steps a statement that returns no row (or whose row is not wanted) and
 * resets it. */
static bl_err step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? BL_OK : BL_EIO;
}

bl_err bl_lch_add(bl_db *db, const bl_lch_launch *l)
{
    int64_t hour = hour_of(l->at_us);
    sqlite3_stmt *st = bl_db_stmt(
        db, "INSERT INTO launch_stats (build_id, kind, hour, count, first_at, last_at, "
            "activity, activity_at) VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5, "
            "CASE WHEN ?5 IS NULL THEN NULL ELSE ?4 END) "
            "ON CONFLICT(build_id, kind, hour) DO UPDATE SET count = count + 1, "
            "first_at = min(first_at, excluded.first_at), "
            "last_at = max(last_at, excluded.last_at), "
            "activity = CASE WHEN excluded.activity IS NOT NULL AND "
            "(activity_at IS NULL OR excluded.activity_at >= activity_at) "
            "THEN excluded.activity ELSE activity END, "
            "activity_at = CASE WHEN excluded.activity IS NOT NULL AND "
            "(activity_at IS NULL OR excluded.activity_at >= activity_at) "
            "THEN excluded.activity_at ELSE activity_at END");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, l->build_id);
    sqlite3_bind_int(st, 2, l->kind);
    sqlite3_bind_int64(st, 3, hour);
    sqlite3_bind_int64(st, 4, l->at_us);
    if (l->activity)
        sqlite3_bind_text(st, 5, l->activity, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 5);
    if (step_done(st))
        return BL_EIO;
    st = bl_db_stmt(db, "INSERT INTO launch_measures (build_id, kind, measure, hour, count, "
                        "max_us, sketch) VALUES (?, ?, ?, ?, 1, ?, ?) "
                        "ON CONFLICT(build_id, kind, measure, hour) DO UPDATE SET "
                        "count = count + 1, max_us = max(max_us, excluded.max_us), "
                        "sketch = sketch_merge(sketch, excluded.sketch)");
    if (!st)
        return BL_EIO;
    for (size_t i = 0; i < l->n_values; i++) {
        const bl_lch_value *v = &l->values[i];
        sqlite3_bind_int64(st, 1, l->build_id);
        sqlite3_bind_int(st, 2, l->kind);
        sqlite3_bind_int(st, 3, v->measure);
        sqlite3_bind_int64(st, 4, hour);
        sqlite3_bind_int64(st, 5, v->dur_us);
        sqlite3_bind_blob(st, 6, v->sketch, (int)v->sketch_len, SQLITE_TRANSIENT);
        if (step_done(st))
            return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_lch_method_add(bl_db *db, int64_t build_id, int kind, int64_t at_us,
                         int64_t method_id, int64_t count, int64_t total_us, int64_t self_us)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "INSERT INTO launch_methods (build_id, kind, method_id, hour, count, total_us, "
            "self_us, launches) VALUES (?, ?, ?, ?, ?, ?, ?, 1) "
            "ON CONFLICT(build_id, kind, method_id, hour) DO UPDATE SET "
            "count = count + excluded.count, total_us = total_us + excluded.total_us, "
            "self_us = self_us + excluded.self_us, launches = launches + 1");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, kind);
    sqlite3_bind_int64(st, 3, method_id);
    sqlite3_bind_int64(st, 4, hour_of(at_us));
    sqlite3_bind_int64(st, 5, count);
    sqlite3_bind_int64(st, 6, total_us);
    sqlite3_bind_int64(st, 7, self_us);
    return step_done(st);
}

bl_err bl_lch_node_add(bl_db *db, int64_t build_id, int kind, int64_t parent,
                       int64_t method_id, int64_t count, int64_t total_us, int64_t self_us,
                       int64_t *id)
{
    sqlite3_stmt *st = bl_db_stmt(db, "INSERT INTO launch_nodes (build_id, kind, parent, "
                                      "method_id, count, total_us, self_us) "
                                      "VALUES (?, ?, ?, ?, ?, ?, ?) "
                                      "ON CONFLICT(build_id, kind, parent, method_id) DO UPDATE "
                                      "SET count = count + excluded.count, "
                                      "total_us = total_us + excluded.total_us, "
                                      "self_us = self_us + excluded.self_us RETURNING id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, kind);
    sqlite3_bind_int64(st, 3, parent);
    sqlite3_bind_int64(st, 4, method_id);
    sqlite3_bind_int64(st, 5, count);
    sqlite3_bind_int64(st, 6, total_us);
    sqlite3_bind_int64(st, 7, self_us);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return BL_EIO;
    }
    *id = sqlite3_column_int64(st, 0);
    return step_done(st); /* RETURNING's statement ends with the next step */
}

bl_err bl_lch_kinds(bl_db *db, int64_t build_id, int kind, int64_t hour_from, int64_t hour_to,
                    int (*cb)(const bl_lch_kind *k, void *ctx), void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT s.kind, sum(s.count), min(s.first_at), max(s.last_at), "
            "(SELECT t.activity FROM launch_stats t WHERE t.build_id = ?1 AND t.kind = s.kind "
            "AND t.hour BETWEEN ?2 AND ?3 AND t.activity IS NOT NULL "
            "ORDER BY t.activity_at DESC LIMIT 1) "
            "FROM launch_stats s WHERE s.build_id = ?1 AND s.hour BETWEEN ?2 AND ?3 "
            "AND (?4 < 0 OR s.kind = ?4) GROUP BY s.kind ORDER BY s.kind");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, hour_from);
    sqlite3_bind_int64(st, 3, hour_to);
    sqlite3_bind_int(st, 4, kind);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_lch_kind k = {
            sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
            sqlite3_column_type(st, 4) == SQLITE_NULL ? NULL : bl_db_text(st, 4),
        };
        if (cb(&k, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_lch_measures(bl_db *db, int64_t build_id, int kind, int64_t hour_from,
                       int64_t hour_to, int (*cb)(const bl_lch_measure_row *m, void *ctx),
                       void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT measure, sum(count), max(max_us), sketch_union(sketch) FROM launch_measures "
            "WHERE build_id = ?1 AND kind = ?2 AND hour BETWEEN ?3 AND ?4 "
            "GROUP BY measure ORDER BY measure");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, kind);
    sqlite3_bind_int64(st, 3, hour_from);
    sqlite3_bind_int64(st, 4, hour_to);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_lch_measure_row m = {
            sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_blob(st, 3),
            (size_t)sqlite3_column_bytes(st, 3),
        };
        if (cb(&m, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_lch_methods(bl_db *db, int64_t build_id, int kind, int64_t hour_from,
                      int64_t hour_to, int64_t limit,
                      int (*cb)(const bl_lch_method_row *m, void *ctx), void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT l.method_id, l.c, l.t, l.s, l.n, m.class, m.name, m.descriptor, "
            "m.source_file FROM (SELECT method_id, sum(count) AS c, sum(total_us) AS t, "
            "sum(self_us) AS s, sum(launches) AS n FROM launch_methods WHERE build_id = ?1 "
            "AND kind = ?2 AND hour BETWEEN ?3 AND ?4 GROUP BY method_id "
            "ORDER BY s DESC, method_id LIMIT ?5) l "
            "LEFT JOIN methods m ON m.build_id = ?1 AND m.method_id = l.method_id "
            "ORDER BY l.s DESC, l.method_id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, kind);
    sqlite3_bind_int64(st, 3, hour_from);
    sqlite3_bind_int64(st, 4, hour_to);
    sqlite3_bind_int64(st, 5, limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char name[64];
        bl_lch_method_row m = {
            sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
            sqlite3_column_int64(st, 4),
            { NULL, NULL, NULL, NULL },
        };
        m.names = bl_db_method_names(st, 5, m.method_id, name, sizeof name);
        if (cb(&m, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_lch_nodes(bl_db *db, int64_t build_id, int kind, bl_blk_node_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT n.id, n.parent, n.method_id, n.count, n.total_us, "
                                      "n.self_us, m.class, m.name, m.descriptor, m.source_file "
                                      "FROM launch_nodes n LEFT JOIN methods m ON "
                                      "m.build_id = ?1 AND m.method_id = n.method_id "
                                      "WHERE n.build_id = ?1 AND n.kind = ?2 ORDER BY n.id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, kind);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char name[64];
        bl_blk_node n = {
            sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
            sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
            { NULL, NULL, NULL, NULL },
        };
        n.names = bl_db_method_names(st, 6, n.method_id, name, sizeof name);
        if (cb(&n, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}
