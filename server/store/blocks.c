/*
 * blocks.c — block aggregates in SQLite (see blocks.h).
 */
#include "store/blocks.h"

#include <stdio.h>
#include "store/internal.h"

#define HOUR_US 3600000000ll

static int64_t hour_of(int64_t at_us)
{
    /* floor, also for times before 1970 */
    return at_us >= 0 ? at_us / HOUR_US : -((-at_us + HOUR_US - 1) / HOUR_US);
}

static bl_err done(sqlite3_stmt *st, int rc)
{
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? BL_OK : BL_EIO;
}

bl_err bl_blk_add(bl_db *db, const bl_blk_block *b, int64_t *group)
{
    sqlite3_stmt *st = bl_db_stmt(db, "INSERT INTO block_groups (build_id, path) VALUES (?, ?) "
                                      "ON CONFLICT(build_id, path) DO UPDATE SET path = path "
                                      "RETURNING id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, b->build_id);
    sqlite3_bind_text(st, 2, b->path, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return BL_EIO;
    }
    int64_t g = sqlite3_column_int64(st, 0);
    rc = sqlite3_step(st);
    if (done(st, rc))
        return BL_EIO;
    int64_t hour = hour_of(b->at_us);
    st = bl_db_stmt(db,
                    "INSERT INTO block_stats (grp, hour, count, anrs, max_us, sketch, first_at, "
                    "last_at, target, anr_stack, anr_at) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?6, "
                    "?7, ?8, CASE WHEN ?8 IS NULL THEN NULL ELSE ?6 END) "
                    "ON CONFLICT(grp, hour) DO UPDATE SET count = count + 1, "
                    "anrs = anrs + excluded.anrs, max_us = max(max_us, excluded.max_us), "
                    "sketch = sketch_merge(sketch, excluded.sketch), "
                    "first_at = min(first_at, excluded.first_at), "
                    "target = CASE WHEN excluded.last_at >= last_at THEN excluded.target "
                    "ELSE target END, "
                    "anr_stack = CASE WHEN excluded.anr_stack IS NOT NULL AND "
                    "(anr_at IS NULL OR excluded.anr_at >= anr_at) THEN excluded.anr_stack "
                    "ELSE anr_stack END, "
                    "anr_at = CASE WHEN excluded.anr_stack IS NOT NULL AND "
                    "(anr_at IS NULL OR excluded.anr_at >= anr_at) THEN excluded.anr_at "
                    "ELSE anr_at END, last_at = max(last_at, excluded.last_at)");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, g);
    sqlite3_bind_int64(st, 2, hour);
    sqlite3_bind_int(st, 3, b->anr ? 1 : 0);
    sqlite3_bind_int64(st, 4, b->dur_us);
    sqlite3_bind_blob(st, 5, b->sketch, (int)b->sketch_len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, b->at_us);
    sqlite3_bind_text(st, 7, b->target, -1, SQLITE_TRANSIENT);
    if (b->anr_stack)
        sqlite3_bind_text(st, 8, b->anr_stack, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 8);
    if (done(st, sqlite3_step(st)))
        return BL_EIO;
    st = bl_db_stmt(db, "INSERT INTO block_seen (grp, kind, value, hour) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    for (int kind = 0; kind < 2; kind++) {
        sqlite3_bind_int64(st, 1, g);
        sqlite3_bind_int(st, 2, kind);
        sqlite3_bind_text(st, 3, kind ? b->session : b->device, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, hour);
        if (done(st, sqlite3_step(st)))
            return BL_EIO;
    }
    *group = g;
    return BL_OK;
}

bl_err bl_blk_node_add(bl_db *db, int64_t group, int64_t parent, int64_t method_id,
                       int64_t count, int64_t total_us, int64_t self_us, int64_t *id)
{
    sqlite3_stmt *st = bl_db_stmt(db, "INSERT INTO block_nodes (grp, parent, method_id, count, "
                                      "total_us, self_us) VALUES (?, ?, ?, ?, ?, ?) "
                                      "ON CONFLICT(grp, parent, method_id) DO UPDATE SET "
                                      "count = count + excluded.count, "
                                      "total_us = total_us + excluded.total_us, "
                                      "self_us = self_us + excluded.self_us RETURNING id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, group);
    sqlite3_bind_int64(st, 2, parent);
    sqlite3_bind_int64(st, 3, method_id);
    sqlite3_bind_int64(st, 4, count);
    sqlite3_bind_int64(st, 5, total_us);
    sqlite3_bind_int64(st, 6, self_us);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return BL_EIO;
    }
    *id = sqlite3_column_int64(st, 0);
    return done(st, sqlite3_step(st));
}

bl_err bl_blk_groups(bl_db *db, int64_t build_id, int64_t hour_from, int64_t hour_to,
                     bl_blk_group_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db,
        "SELECT g.id, g.path, sum(s.count), sum(s.anrs), max(s.max_us), min(s.first_at), "
        "max(s.last_at), (SELECT t.target FROM block_stats t WHERE t.grp = g.id AND "
        "t.hour BETWEEN ?2 AND ?3 ORDER BY t.last_at DESC LIMIT 1), "
        "(SELECT count(DISTINCT v.value) FROM block_seen v WHERE v.grp = g.id AND v.kind = 0 "
        "AND v.hour BETWEEN ?2 AND ?3), "
        "(SELECT count(DISTINCT v.value) FROM block_seen v WHERE v.grp = g.id AND v.kind = 1 "
        "AND v.hour BETWEEN ?2 AND ?3), sketch_union(s.sketch) "
        "FROM block_groups g JOIN block_stats s ON s.grp = g.id "
        "WHERE g.build_id = ?1 AND s.hour BETWEEN ?2 AND ?3 GROUP BY g.id ORDER BY g.id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, hour_from);
    sqlite3_bind_int64(st, 3, hour_to);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_blk_group g = {
            .id = sqlite3_column_int64(st, 0), .path = bl_db_text(st, 1),
            .count = sqlite3_column_int64(st, 2), .anrs = sqlite3_column_int64(st, 3),
            .max_us = sqlite3_column_int64(st, 4), .first_at = sqlite3_column_int64(st, 5),
            .last_at = sqlite3_column_int64(st, 6), .target = bl_db_text(st, 7),
            .devices = sqlite3_column_int64(st, 8), .sessions = sqlite3_column_int64(st, 9),
            .sketch = sqlite3_column_blob(st, 10),
        };
        g.sketch_len = (size_t)sqlite3_column_bytes(st, 10);
        if (cb(&g, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_blk_method(bl_db *db, int64_t build_id, int64_t method_id,
                     void (*cb)(const bl_blk_names *n, void *ctx), void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT class, name, descriptor, source_file FROM methods "
                                      "WHERE build_id = ? AND method_id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, method_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        bl_blk_names n = { bl_db_text(st, 0), bl_db_text(st, 1), bl_db_text(st, 2), bl_db_text(st, 3) };
        cb(&n, ctx);
    } else if (rc == SQLITE_DONE) {
        char name[64];
        snprintf(name, sizeof name, "unknown method %lld", (long long)method_id);
        bl_blk_names n = { "?", name, "", "" };
        cb(&n, ctx);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_blk_anr_stack(bl_db *db, int64_t group,
                        void (*cb)(const char *stack, int64_t at_us, void *ctx), void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT anr_stack, anr_at FROM block_stats WHERE grp = ? "
                                      "AND anr_stack IS NOT NULL ORDER BY anr_at DESC LIMIT 1");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, group);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        cb(bl_db_text(st, 0), sqlite3_column_int64(st, 1), ctx);
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_blk_nodes(bl_db *db, int64_t build_id, int64_t group, bl_blk_node_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT n.id, n.parent, n.method_id, n.count, n.total_us, "
                                      "n.self_us, m.class, m.name, m.descriptor, m.source_file "
                                      "FROM block_nodes n LEFT JOIN methods m ON "
                                      "m.build_id = ?1 AND m.method_id = n.method_id "
                                      "WHERE n.grp = ?2 ORDER BY n.id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, group);
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
