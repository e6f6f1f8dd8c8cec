/*
 * blocks.c — block aggregates in SQLite or PostgreSQL (see blocks.h).
 */
#include "store/blocks.h"

#include <stdio.h>
#include "store/internal.h"
#include "store/stmt.h"

#define HOUR_US 3600000000ll

static int64_t hour_of(int64_t at_us)
{
    /* floor, also for times before 1970 */
    return at_us >= 0 ? at_us / HOUR_US : -((-at_us + HOUR_US - 1) / HOUR_US);
}

/* The row keeps the target of its latest block and the stack of its
 * latest ANR; of two at the same µs, the greater text (bytes): the same
 * row whatever order the blocks were processed in (several nodes). AT and
 * STACK: the row's columns; C: the collation clause (PostgreSQL) */
#define ANR_NEWER(AT, STACK, C)                                                              \
    "excluded.anr_stack IS NOT NULL AND (" AT " IS NULL OR excluded.anr_at > " AT " OR "      \
    "(excluded.anr_at = " AT " AND excluded.anr_stack" C " > " STACK C "))"
/* block_stats' upsert: on SQLite the sketches merge in SQL (sketch_merge);
 * on PostgreSQL ?5 is the merged sketch (bl_st_sketch_lock_merge) and ?9
 * says whether the row was there (locked) when it was merged. */
static const char stats_upsert[] =
    "INSERT INTO block_stats (grp, hour, count, anrs, max_us, sketch, first_at, "
    "last_at, target, anr_stack, anr_at) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?6, "
    "?7, ?8, CASE WHEN CAST(?8 AS text) IS NULL THEN NULL ELSE CAST(?6 AS bigint) END) "
    "ON CONFLICT(grp, hour) DO UPDATE SET count = count + 1, "
    "anrs = anrs + excluded.anrs, max_us = max(max_us, excluded.max_us), "
    "sketch = sketch_merge(sketch, excluded.sketch), "
    "first_at = min(first_at, excluded.first_at), "
    "target = CASE WHEN excluded.last_at > last_at OR (excluded.last_at = last_at AND "
    "excluded.target > target) THEN excluded.target ELSE target END, "
    "anr_stack = CASE WHEN " ANR_NEWER("anr_at", "anr_stack", "") " THEN excluded.anr_stack "
    "ELSE anr_stack END, "
    "anr_at = CASE WHEN " ANR_NEWER("anr_at", "anr_stack", "") " THEN excluded.anr_at "
    "ELSE anr_at END, last_at = max(last_at, excluded.last_at)";
static const char stats_upsert_pg[] =
    "INSERT INTO block_stats AS s (grp, hour, count, anrs, max_us, sketch, first_at, "
    "last_at, target, anr_stack, anr_at) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?6, "
    "?7, ?8, CASE WHEN CAST(?8 AS text) IS NULL THEN NULL ELSE CAST(?6 AS bigint) END) "
    "ON CONFLICT(grp, hour) DO UPDATE SET count = s.count + 1, "
    "anrs = s.anrs + excluded.anrs, max_us = GREATEST(s.max_us, excluded.max_us), "
    "sketch = excluded.sketch, first_at = LEAST(s.first_at, excluded.first_at), "
    "target = CASE WHEN excluded.last_at > s.last_at OR (excluded.last_at = s.last_at AND "
    "excluded.target COLLATE \"C\" > s.target COLLATE \"C\") THEN excluded.target "
    "ELSE s.target END, "
    "anr_stack = CASE WHEN " ANR_NEWER("s.anr_at", "s.anr_stack", " COLLATE \"C\"")
    " THEN excluded.anr_stack ELSE s.anr_stack END, "
    "anr_at = CASE WHEN " ANR_NEWER("s.anr_at", "s.anr_stack", " COLLATE \"C\"")
    " THEN excluded.anr_at ELSE s.anr_at END, last_at = GREATEST(s.last_at, excluded.last_at) "
    "WHERE CAST(?9 AS bigint) = 1";

/* Adds block b to the (group, hour) row of block_stats. */
static bl_err stats_add(bl_db *db, const bl_blk_block *b, int64_t g, int64_t hour)
{
    int pg = bl_db_is_pg(db);
    bl_buf merged;
    bl_buf_init(&merged, 0);
    bl_err err = BL_EIO;
    /* PostgreSQL: a row that appears between the lock and the insert is
     * locked on the next turn; three turns are more than enough */
    for (int turn = 0; turn < 3; turn++) {
        int found = 0;
        const void *sk = b->sketch;
        size_t sk_len = b->sketch_len;
        if (pg) {
            bl_st *lock = bl_st_get(db, "SELECT sketch FROM block_stats WHERE grp = ? AND "
                                        "hour = ? FOR UPDATE");
            if (!lock)
                break;
            bl_st_int64(lock, 1, g);
            bl_st_int64(lock, 2, hour);
            if ((err = bl_st_sketch_lock_merge(lock, 1, &sk, &sk_len, &merged, &found)))
                break;
            sk = merged.data;
            sk_len = merged.len;
            err = BL_EIO;
        }
        bl_st *st = bl_st_get2(db, stats_upsert, stats_upsert_pg);
        if (!st)
            break;
        bl_st_int64(st, 1, g);
        bl_st_int64(st, 2, hour);
        bl_st_int64(st, 3, b->anr ? 1 : 0);
        bl_st_int64(st, 4, b->dur_us);
        bl_st_blob(st, 5, sk, sk_len);
        bl_st_int64(st, 6, b->at_us);
        bl_st_text(st, 7, b->target, -1);
        if (b->anr_stack)
            bl_st_text(st, 8, b->anr_stack, -1);
        else
            bl_st_null(st, 8);
        if (pg)
            bl_st_int64(st, 9, found);
        if (bl_st_done(st))
            break;
        if (!pg || bl_st_changes(st) > 0) {
            err = BL_OK;
            break;
        }
    }
    bl_buf_cleanup(&merged);
    return err;
}

bl_err bl_blk_add(bl_db *db, const bl_blk_block *b, int64_t *group)
{
    bl_st *st = bl_st_get(db, "INSERT INTO block_groups AS g (build_id, path) VALUES (?, ?) "
                              "ON CONFLICT(build_id, path) DO UPDATE SET path = g.path "
                              "RETURNING id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, b->build_id);
    bl_st_text(st, 2, b->path, -1);
    if (bl_st_step(st) != BL_ST_ROW) {
        bl_st_reset(st);
        return BL_EIO;
    }
    int64_t g = bl_st_col_int64(st, 0);
    if (bl_st_done(st)) /* RETURNING's statement ends with the next step */
        return BL_EIO;
    int64_t hour = hour_of(b->at_us);
    bl_err err = stats_add(db, b, g, hour);
    if (err)
        return err;
    st = bl_st_get(db, "INSERT INTO block_seen (grp, kind, value, hour) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    for (int kind = 0; kind < 2; kind++) {
        bl_st_int64(st, 1, g);
        bl_st_int64(st, 2, kind);
        bl_st_text(st, 3, kind ? b->session : b->device, -1);
        bl_st_int64(st, 4, hour);
        if (bl_st_done(st))
            return BL_EIO;
    }
    *group = g;
    return BL_OK;
}

bl_err bl_blk_node_add(bl_db *db, int64_t group, int64_t parent, int64_t method_id,
                       int64_t count, int64_t total_us, int64_t self_us, int64_t *id)
{
    bl_st *st = bl_st_get(db, "INSERT INTO block_nodes AS n (grp, parent, method_id, count, "
                              "total_us, self_us) VALUES (?, ?, ?, ?, ?, ?) "
                              "ON CONFLICT(grp, parent, method_id) DO UPDATE SET "
                              "count = " BL_SQL_SATADD("n.count", "excluded.count") ", "
                              "total_us = " BL_SQL_SATADD("n.total_us", "excluded.total_us") ", "
                              "self_us = " BL_SQL_SATADD("n.self_us", "excluded.self_us") " "
                              "RETURNING id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, group);
    bl_st_int64(st, 2, parent);
    bl_st_int64(st, 3, method_id);
    bl_st_int64(st, 4, count);
    bl_st_int64(st, 5, total_us);
    bl_st_int64(st, 6, self_us);
    if (bl_st_step(st) != BL_ST_ROW) {
        bl_st_reset(st);
        return BL_EIO;
    }
    *id = bl_st_col_int64(st, 0);
    return bl_st_done(st);
}

bl_err bl_blk_groups(bl_db *db, int64_t build_id, int64_t hour_from, int64_t hour_to,
                     bl_blk_group_cb cb, void *ctx)
{
#define GROUPS_SQL(SUM, UNION)                                                                  \
    "SELECT g.id, g.path, " SUM("s.count") ", " SUM("s.anrs") ", max(s.max_us), "              \
    "min(s.first_at), max(s.last_at), (SELECT t.target FROM block_stats t WHERE t.grp = g.id " \
    "AND t.hour BETWEEN ?2 AND ?3 ORDER BY t.last_at DESC LIMIT 1), "                          \
    "(SELECT count(DISTINCT v.value) FROM block_seen v WHERE v.grp = g.id AND v.kind = 0 "     \
    "AND v.hour BETWEEN ?2 AND ?3), "                                                          \
    "(SELECT count(DISTINCT v.value) FROM block_seen v WHERE v.grp = g.id AND v.kind = 1 "     \
    "AND v.hour BETWEEN ?2 AND ?3), " UNION("s.sketch") " "                                    \
    "FROM block_groups g JOIN block_stats s ON s.grp = g.id "                                  \
    "WHERE g.build_id = ?1 AND s.hour BETWEEN ?2 AND ?3 GROUP BY g.id ORDER BY g.id"
#define SK_UNION(x) "sketch_union(" x ")"
    bl_st *st = bl_st_get2(db, GROUPS_SQL(BL_SQL_SATSUM, SK_UNION),
                           GROUPS_SQL(BL_SQL_SATSUM_PG, BL_SQL_SKETCHES_PG));
#undef GROUPS_SQL
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_WIDE);
    int pg = bl_db_is_pg(db);
    bl_buf sk;
    bl_buf_init(&sk, 0);
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, hour_from);
    bl_st_int64(st, 3, hour_to);
    int rc;
    bl_err err = BL_OK;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_blk_group g = {
            .id = bl_st_col_int64(st, 0), .path = bl_st_col_str(st, 1),
            .count = bl_st_col_int64(st, 2), .anrs = bl_st_col_int64(st, 3),
            .max_us = bl_st_col_int64(st, 4), .first_at = bl_st_col_int64(st, 5),
            .last_at = bl_st_col_int64(st, 6), .target = bl_st_col_str(st, 7),
            .devices = bl_st_col_int64(st, 8), .sessions = bl_st_col_int64(st, 9),
        };
        if (pg) {
            if ((err = bl_st_col_sketch_union(st, 10, &sk)))
                break;
            g.sketch = sk.data;
            g.sketch_len = sk.len;
        } else {
            g.sketch = bl_st_col_blob(st, 10);
            g.sketch_len = bl_st_col_bytes(st, 10);
        }
        if (cb(&g, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    bl_buf_cleanup(&sk);
    return err ? err : rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_blk_method(bl_db *db, int64_t build_id, int64_t method_id,
                     void (*cb)(const bl_blk_names *n, void *ctx), void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT class, name, descriptor, source_file FROM methods "
                              "WHERE build_id = ? AND method_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, method_id);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        bl_blk_names n = { bl_st_col_str(st, 0), bl_st_col_str(st, 1), bl_st_col_str(st, 2),
                           bl_st_col_str(st, 3) };
        cb(&n, ctx);
    } else if (rc == BL_ST_DONE) {
        char name[64];
        snprintf(name, sizeof name, "unknown method %lld", (long long)method_id);
        bl_blk_names n = { "?", name, "", "" };
        cb(&n, ctx);
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW || rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_blk_anr_stack(bl_db *db, int64_t group,
                        void (*cb)(const char *stack, int64_t at_us, void *ctx), void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT anr_stack, anr_at FROM block_stats WHERE grp = ? "
                              "AND anr_stack IS NOT NULL ORDER BY anr_at DESC LIMIT 1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, group);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        cb(bl_st_col_str(st, 0), bl_st_col_int64(st, 1), ctx);
    bl_st_reset(st);
    return rc == BL_ST_ROW || rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_blk_nodes(bl_db *db, int64_t build_id, int64_t group, bl_blk_node_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT n.id, n.parent, n.method_id, n.count, n.total_us, "
                              "n.self_us, m.class, m.name, m.descriptor, m.source_file "
                              "FROM block_nodes n LEFT JOIN methods m ON "
                              "m.build_id = ?1 AND m.method_id = n.method_id "
                              "WHERE n.grp = ?2 ORDER BY n.id");
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_ROWS);
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, group);
    return bl_st_blk_nodes(st, cb, ctx);
}

bl_err bl_st_blk_nodes(bl_st *st, bl_blk_node_cb cb, void *ctx)
{
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        char name[64];
        bl_blk_node n = {
            bl_st_col_int64(st, 0), bl_st_col_int64(st, 1), bl_st_col_int64(st, 2),
            bl_st_col_int64(st, 3), bl_st_col_int64(st, 4), bl_st_col_int64(st, 5),
            { NULL, NULL, NULL, NULL },
        };
        n.names = bl_st_method_names(st, 6, n.method_id, name, sizeof name);
        if (cb(&n, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}
