/*
 * launches.c — launch aggregates in SQLite or PostgreSQL (see launches.h).
 */
#include "store/launches.h"

#include <stdio.h>
#include "store/internal.h"
#include "store/stmt.h"

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

static const char measures_upsert[] =
    "INSERT INTO launch_measures (build_id, kind, measure, hour, count, max_us, sketch) "
    "VALUES (?, ?, ?, ?, 1, ?, ?) "
    "ON CONFLICT(build_id, kind, measure, hour) DO UPDATE SET "
    "count = count + 1, max_us = max(max_us, excluded.max_us), "
    "sketch = sketch_merge(sketch, excluded.sketch)";
/* PostgreSQL: ?6 is the merged sketch, ?7 whether the row was there (locked)
 * when it was merged (see bl_st_sketch_lock_merge) */
static const char measures_upsert_pg[] =
    "INSERT INTO launch_measures AS m (build_id, kind, measure, hour, count, max_us, sketch) "
    "VALUES (?, ?, ?, ?, 1, ?, ?) "
    "ON CONFLICT(build_id, kind, measure, hour) DO UPDATE SET "
    "count = m.count + 1, max_us = GREATEST(m.max_us, excluded.max_us), "
    "sketch = excluded.sketch WHERE CAST(? AS bigint) = 1";

/* Adds one measured value to its (build, kind, measure, hour) row. */
static bl_err measure_add(bl_db *db, const bl_lch_launch *l, int64_t hour, const bl_lch_value *v,
                          bl_buf *merged)
{
    int pg = bl_db_is_pg(db);
    bl_err err = BL_EIO;
    /* PostgreSQL: a row that appears between the lock and the insert is
     * locked on the next turn */
    for (int turn = 0; turn < 3; turn++) {
        int found = 0;
        const void *sk = v->sketch;
        size_t sk_len = v->sketch_len;
        if (pg) {
            bl_st *lock = bl_st_get(db, "SELECT sketch FROM launch_measures WHERE build_id = ? "
                                        "AND kind = ? AND measure = ? AND hour = ? FOR UPDATE");
            if (!lock)
                return BL_EIO;
            bl_st_int64(lock, 1, l->build_id);
            bl_st_int64(lock, 2, l->kind);
            bl_st_int64(lock, 3, v->measure);
            bl_st_int64(lock, 4, hour);
            if ((err = bl_st_sketch_lock_merge(lock, 1, &sk, &sk_len, merged, &found)))
                return err;
            sk = merged->data;
            sk_len = merged->len;
        }
        bl_st *st = bl_st_get2(db, measures_upsert, measures_upsert_pg);
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, l->build_id);
        bl_st_int64(st, 2, l->kind);
        bl_st_int64(st, 3, v->measure);
        bl_st_int64(st, 4, hour);
        bl_st_int64(st, 5, v->dur_us);
        bl_st_blob(st, 6, sk, sk_len);
        if (pg)
            bl_st_int64(st, 7, found);
        if (bl_st_done(st))
            return BL_EIO;
        if (!pg || bl_st_changes(st) > 0)
            return BL_OK;
    }
    return err;
}

/* The row keeps the activity of its latest launch that named one; of two
 * at the same µs, the greater name (bytes): the same row whatever order the
 * launches were processed in (several nodes). AT, ACT: the row's columns;
 * C: the collation clause (PostgreSQL) */
#define ACT_NEWER(AT, ACT, C)                                                                  \
    "excluded.activity IS NOT NULL AND (" AT " IS NULL OR excluded.activity_at > " AT " OR "    \
    "(excluded.activity_at = " AT " AND excluded.activity" C " > " ACT C "))"

bl_err bl_lch_add(bl_db *db, const bl_lch_launch *l)
{
    int64_t hour = hour_of(l->at_us);
    bl_st *st = bl_st_get2(
        db,
        "INSERT INTO launch_stats (build_id, kind, hour, count, first_at, last_at, "
        "activity, activity_at) VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5, "
        "CASE WHEN CAST(?5 AS text) IS NULL THEN NULL ELSE CAST(?4 AS bigint) END) "
        "ON CONFLICT(build_id, kind, hour) DO UPDATE SET count = count + 1, "
        "first_at = min(first_at, excluded.first_at), "
        "last_at = max(last_at, excluded.last_at), "
        "activity = CASE WHEN " ACT_NEWER("activity_at", "activity", "") " "
        "THEN excluded.activity ELSE activity END, "
        "activity_at = CASE WHEN " ACT_NEWER("activity_at", "activity", "") " "
        "THEN excluded.activity_at ELSE activity_at END",
        "INSERT INTO launch_stats AS s (build_id, kind, hour, count, first_at, last_at, "
        "activity, activity_at) VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5, "
        "CASE WHEN CAST(?5 AS text) IS NULL THEN NULL ELSE CAST(?4 AS bigint) END) "
        "ON CONFLICT(build_id, kind, hour) DO UPDATE SET count = s.count + 1, "
        "first_at = LEAST(s.first_at, excluded.first_at), "
        "last_at = GREATEST(s.last_at, excluded.last_at), "
        "activity = CASE WHEN " ACT_NEWER("s.activity_at", "s.activity", " COLLATE \"C\"") " "
        "THEN excluded.activity ELSE s.activity END, "
        "activity_at = CASE WHEN " ACT_NEWER("s.activity_at", "s.activity", " COLLATE \"C\"") " "
        "THEN excluded.activity_at ELSE s.activity_at END");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, l->build_id);
    bl_st_int64(st, 2, l->kind);
    bl_st_int64(st, 3, hour);
    bl_st_int64(st, 4, l->at_us);
    if (l->activity)
        bl_st_text(st, 5, l->activity, -1);
    else
        bl_st_null(st, 5);
    if (bl_st_done(st))
        return BL_EIO;
    bl_buf merged;
    bl_buf_init(&merged, 0);
    bl_err err = BL_OK;
    for (size_t i = 0; i < l->n_values && !err; i++)
        err = measure_add(db, l, hour, &l->values[i], &merged);
    bl_buf_cleanup(&merged);
    return err;
}

bl_err bl_lch_method_add(bl_db *db, int64_t build_id, int kind, int64_t at_us,
                         int64_t method_id, int64_t count, int64_t total_us, int64_t self_us)
{
    bl_st *st = bl_st_get(
        db, "INSERT INTO launch_methods AS l (build_id, kind, method_id, hour, count, total_us, "
            "self_us, launches) VALUES (?, ?, ?, ?, ?, ?, ?, 1) "
            "ON CONFLICT(build_id, kind, method_id, hour) DO UPDATE SET "
            "count = " BL_SQL_SATADD("l.count", "excluded.count") ", "
            "total_us = " BL_SQL_SATADD("l.total_us", "excluded.total_us") ", "
            "self_us = " BL_SQL_SATADD("l.self_us", "excluded.self_us") ", "
            "launches = l.launches + 1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, kind);
    bl_st_int64(st, 3, method_id);
    bl_st_int64(st, 4, hour_of(at_us));
    bl_st_int64(st, 5, count);
    bl_st_int64(st, 6, total_us);
    bl_st_int64(st, 7, self_us);
    return bl_st_done(st);
}

bl_err bl_lch_node_add(bl_db *db, int64_t build_id, int kind, int64_t parent,
                       int64_t method_id, int64_t count, int64_t total_us, int64_t self_us,
                       int64_t *id)
{
    bl_st *st = bl_st_get(db, "INSERT INTO launch_nodes AS n (build_id, kind, parent, "
                              "method_id, count, total_us, self_us) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?) "
                              "ON CONFLICT(build_id, kind, parent, method_id) DO UPDATE SET "
                              "count = " BL_SQL_SATADD("n.count", "excluded.count") ", "
                              "total_us = " BL_SQL_SATADD("n.total_us", "excluded.total_us") ", "
                              "self_us = " BL_SQL_SATADD("n.self_us", "excluded.self_us") " "
                              "RETURNING id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, kind);
    bl_st_int64(st, 3, parent);
    bl_st_int64(st, 4, method_id);
    bl_st_int64(st, 5, count);
    bl_st_int64(st, 6, total_us);
    bl_st_int64(st, 7, self_us);
    if (bl_st_step(st) != BL_ST_ROW) {
        bl_st_reset(st);
        return BL_EIO;
    }
    *id = bl_st_col_int64(st, 0);
    return bl_st_done(st); /* RETURNING's statement ends with the next step */
}

bl_err bl_lch_kinds(bl_db *db, int64_t build_id, int kind, int64_t hour_from, int64_t hour_to,
                    int (*cb)(const bl_lch_kind *k, void *ctx), void *ctx)
{
#define KINDS_SQL(SUM)                                                                          \
    "SELECT s.kind, " SUM("s.count") ", min(s.first_at), max(s.last_at), "                     \
    "(SELECT t.activity FROM launch_stats t WHERE t.build_id = ?1 AND t.kind = s.kind "        \
    "AND t.hour BETWEEN ?2 AND ?3 AND t.activity IS NOT NULL "                                 \
    "ORDER BY t.activity_at DESC LIMIT 1) "                                                    \
    "FROM launch_stats s WHERE s.build_id = ?1 AND s.hour BETWEEN ?2 AND ?3 "                  \
    "AND (CAST(?4 AS bigint) < 0 OR s.kind = ?4) GROUP BY s.kind ORDER BY s.kind"
    bl_st *st = bl_st_get2(db, KINDS_SQL(BL_SQL_SATSUM), KINDS_SQL(BL_SQL_SATSUM_PG));
#undef KINDS_SQL
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, hour_from);
    bl_st_int64(st, 3, hour_to);
    bl_st_int64(st, 4, kind);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_lch_kind k = {
            (int)bl_st_col_int64(st, 0), bl_st_col_int64(st, 1), bl_st_col_int64(st, 2),
            bl_st_col_int64(st, 3), bl_st_is_null(st, 4) ? NULL : bl_st_col_str(st, 4),
        };
        if (cb(&k, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_lch_measures(bl_db *db, int64_t build_id, int kind, int64_t hour_from,
                       int64_t hour_to, int (*cb)(const bl_lch_measure_row *m, void *ctx),
                       void *ctx)
{
#define MEASURES_SQL(SUM, UNION)                                                                \
    "SELECT measure, " SUM("count") ", max(max_us), " UNION("sketch") " "                      \
    "FROM launch_measures WHERE build_id = ?1 AND kind = ?2 AND hour BETWEEN ?3 AND ?4 "       \
    "GROUP BY measure ORDER BY measure"
#define SK_UNION(x) "sketch_union(" x ")"
    bl_st *st = bl_st_get2(db, MEASURES_SQL(BL_SQL_SATSUM, SK_UNION),
                           MEASURES_SQL(BL_SQL_SATSUM_PG, BL_SQL_SKETCHES_PG));
#undef MEASURES_SQL
#undef SK_UNION
    if (!st)
        return BL_EIO;
    int pg = bl_db_is_pg(db);
    bl_buf sk;
    bl_buf_init(&sk, 0);
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, kind);
    bl_st_int64(st, 3, hour_from);
    bl_st_int64(st, 4, hour_to);
    int rc;
    bl_err err = BL_OK;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_lch_measure_row m = {
            (int)bl_st_col_int64(st, 0), bl_st_col_int64(st, 1), bl_st_col_int64(st, 2),
            NULL, 0,
        };
        if (pg) {
            if ((err = bl_st_col_sketch_union(st, 3, &sk)))
                break;
            m.sketch = sk.data;
            m.sketch_len = sk.len;
        } else {
            m.sketch = bl_st_col_blob(st, 3);
            m.sketch_len = bl_st_col_bytes(st, 3);
        }
        if (cb(&m, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    bl_buf_cleanup(&sk);
    return err ? err : rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_lch_methods(bl_db *db, int64_t build_id, int kind, int64_t hour_from,
                      int64_t hour_to, int64_t limit,
                      int (*cb)(const bl_lch_method_row *m, void *ctx), void *ctx)
{
    /* saturated sums (BL_SQL_SATSUM): the hours' µs of a method pass 2^63
     * long before any row does */
#define METHODS_SQL(SUM)                                                                        \
    "SELECT l.method_id, l.c, l.t, l.s, l.n, m.class, m.name, m.descriptor, "                  \
    "m.source_file FROM (SELECT method_id, " SUM("count") " AS c, " SUM("total_us") " AS t, "   \
    SUM("self_us") " AS s, " SUM("launches") " AS n FROM launch_methods WHERE build_id = ?1 "  \
    "AND kind = ?2 AND hour BETWEEN ?3 AND ?4 GROUP BY method_id "                             \
    "ORDER BY s DESC, method_id LIMIT ?5) l "                                                  \
    "LEFT JOIN methods m ON m.build_id = ?1 AND m.method_id = l.method_id "                    \
    "ORDER BY l.s DESC, l.method_id"
    bl_st *st = bl_st_get2(db, METHODS_SQL(BL_SQL_SATSUM), METHODS_SQL(BL_SQL_SATSUM_PG));
#undef METHODS_SQL
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, kind);
    bl_st_int64(st, 3, hour_from);
    bl_st_int64(st, 4, hour_to);
    bl_st_int64(st, 5, limit);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        char name[64];
        bl_lch_method_row m = {
            bl_st_col_int64(st, 0), bl_st_col_int64(st, 1), bl_st_col_int64(st, 2),
            bl_st_col_int64(st, 3), bl_st_col_int64(st, 4),
            { NULL, NULL, NULL, NULL },
        };
        m.names = bl_st_method_names(st, 5, m.method_id, name, sizeof name);
        if (cb(&m, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_lch_nodes(bl_db *db, int64_t build_id, int kind, bl_blk_node_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT n.id, n.parent, n.method_id, n.count, n.total_us, "
                              "n.self_us, m.class, m.name, m.descriptor, m.source_file "
                              "FROM launch_nodes n LEFT JOIN methods m ON "
                              "m.build_id = ?1 AND m.method_id = n.method_id "
                              "WHERE n.build_id = ?1 AND n.kind = ?2 ORDER BY n.id");
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_ROWS);
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, kind);
    return bl_st_blk_nodes(st, cb, ctx);
}
