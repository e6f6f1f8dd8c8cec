/*
 * writer.c — the processing thread's SQL (see writer.h). Statements are
 * cached on the connection (bl_db_stmt): the text pointer is the key.
 */
#include "store/writer.h"
#include "store/internal.h"

#include <stdio.h>

bl_err bl_wr_build_get(bl_db *db, int64_t app_id, const char *name, int64_t now_us,
                       int64_t *id)
{
    sqlite3_stmt *st = bl_db_stmt(db, "INSERT INTO builds(app_id, name, created_at) "
                                      "VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, now_us);
    if (bl_db_step_done(st))
        return BL_EIO;
    st = bl_db_stmt(db, "SELECT id FROM builds WHERE app_id = ? AND name = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : BL_EIO;
}

bl_err bl_wr_build_files_get(bl_db *db, int64_t id, bl_wr_build_files *out)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT coalesce(mapping_hash,''), coalesce(methodids_hash,''), "
            "coalesce(methodids_obfuscated,0), symbolicated_at IS NOT NULL FROM builds WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 0);
        const char *i = (const char *)sqlite3_column_text(st, 1);
        snprintf(out->mapping_hash, sizeof out->mapping_hash, "%s", m ? m : "");
        snprintf(out->methodids_hash, sizeof out->methodids_hash, "%s", i ? i : "");
        out->obfuscated = sqlite3_column_int(st, 2);
        out->symbolicated = sqlite3_column_int(st, 3);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : BL_EIO;
}

bl_err bl_wr_build_set_mapping(bl_db *db, int64_t id, const char *hash, int64_t size,
                               int64_t at_us)
{
    sqlite3_stmt *st = bl_db_stmt(db, "UPDATE builds SET mapping_hash = ?, mapping_size = ?, "
                                      "mapping_at = ?, symbolicated_at = NULL WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, size);
    sqlite3_bind_int64(st, 3, at_us);
    sqlite3_bind_int64(st, 4, id);
    return bl_db_step_done(st);
}

bl_err bl_wr_build_set_methodids(bl_db *db, int64_t id, const char *hash, int64_t count,
                                 int obfuscated, int64_t at_us)
{
    sqlite3_stmt *st = bl_db_stmt(db, "UPDATE builds SET methodids_hash = ?, methodids_count = ?, "
                                      "methodids_obfuscated = ?, methodids_at = ?, "
                                      "symbolicated_at = NULL WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, count);
    sqlite3_bind_int(st, 3, obfuscated);
    sqlite3_bind_int64(st, 4, at_us);
    sqlite3_bind_int64(st, 5, id);
    return bl_db_step_done(st);
}

bl_err bl_wr_build_set_warnings(bl_db *db, int64_t id, const char *json)
{
    sqlite3_stmt *st = bl_db_stmt(db, "UPDATE builds SET warnings = ? WHERE id = ?");
    if (!st)
        return BL_EIO;
    if (json)
        sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 1);
    sqlite3_bind_int64(st, 2, id);
    return bl_db_step_done(st);
}

bl_err bl_wr_build_set_symbolicated(bl_db *db, int64_t id, int64_t at_us)
{
    sqlite3_stmt *st = bl_db_stmt(db, "UPDATE builds SET symbolicated_at = ? WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, at_us);
    sqlite3_bind_int64(st, 2, id);
    return bl_db_step_done(st);
}

bl_err bl_wr_build_count_batch(bl_db *db, int64_t id, int64_t records)
{
    sqlite3_stmt *st = bl_db_stmt(db, "UPDATE builds SET batches = batches + 1, records = records + ? "
                                      "WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, records);
    sqlite3_bind_int64(st, 2, id);
    return bl_db_step_done(st);
}

bl_err bl_wr_builds_ready(bl_db *db, bl_wr_ready_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT app_id, name, methodids_hash IS NOT NULL AND "
            "(coalesce(methodids_obfuscated, 0) = 0 OR mapping_hash IS NOT NULL) FROM builds");
    if (!st)
        return BL_EIO;
    bl_err err = BL_OK;
    while (!err && sqlite3_step(st) == SQLITE_ROW)
        err = cb(sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
                 sqlite3_column_int(st, 2), ctx);
    sqlite3_reset(st);
    return err;
}

bl_err bl_wr_methods_top(bl_db *db, int64_t build_id, int64_t *top)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT coalesce(max(method_id), -1) FROM methods "
                                      "WHERE build_id = ? AND NOT (class = '?' AND "
                                      "descriptor = '')");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    *top = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_reset(st);
    return BL_OK;
}

bl_err bl_wr_methods_each(bl_db *db, int64_t build_id, bl_wr_method_cb cb, void *ctx)
{
    /* placeholders of unknown methods: class '?' and no descriptor (a method
     * of the method-ID file always has a class name) */
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT method_id, id, class = '?' AND descriptor = '' "
                                      "FROM methods WHERE build_id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    bl_err err = BL_OK;
    while (!err && sqlite3_step(st) == SQLITE_ROW)
        err = cb(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                 sqlite3_column_int(st, 2), ctx);
    sqlite3_reset(st);
    return err;
}

bl_err bl_wr_method_put(bl_db *db, int64_t build_id, int64_t method_id, const char *cls,
                        const char *name, const char *descriptor, const char *source_file)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "INSERT INTO methods(build_id, method_id, class, name, descriptor, source_file) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(build_id, method_id) DO UPDATE SET "
            "class = excluded.class, name = excluded.name, descriptor = excluded.descriptor, "
            "source_file = excluded.source_file");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, method_id);
    sqlite3_bind_text(st, 3, cls, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, descriptor, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, source_file, -1, SQLITE_TRANSIENT);
    return bl_db_step_done(st);
}

bl_err bl_wr_method_unknown(bl_db *db, int64_t build_id, int64_t method_id, const char *name,
                            int64_t *row)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "INSERT INTO methods(build_id, method_id, class, name, descriptor, source_file) "
            "VALUES (?, ?, '?', ?, '', '') ON CONFLICT(build_id, method_id) DO UPDATE SET "
            "name = CASE WHEN class = '?' AND descriptor = '' THEN excluded.name "
            "ELSE name END RETURNING id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, method_id);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *row = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : BL_EIO;
}

bl_err bl_wr_nodes_each(bl_db *db, int64_t build_id, bl_wr_node_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT n.id, n.main, n.parent, m.method_id FROM call_nodes n "
                                      "JOIN methods m ON m.id = n.method WHERE n.build_id = ? "
                                      "ORDER BY n.id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    bl_err err = BL_OK;
    while (!err && sqlite3_step(st) == SQLITE_ROW)
        err = cb(sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                 sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), ctx);
    sqlite3_reset(st);
    return err;
}

bl_err bl_wr_next_node_id(bl_db *db, int64_t *next)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT coalesce(max(id), 0) + 1 FROM call_nodes");
    if (!st)
        return BL_EIO;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *next = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : BL_EIO;
}

bl_err bl_wr_stats_add(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx)
{
    if (!n)
        return BL_OK;
    sqlite3_stmt *st = bl_db_stmt(
        db, "INSERT INTO method_stats(build_id, method, main, hour, count, total_us, "
            "self_us, max_us, sketch) VALUES (?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT DO UPDATE SET count = count + excluded.count, "
            "total_us = total_us + excluded.total_us, self_us = self_us + excluded.self_us, "
            "max_us = max(max_us, excluded.max_us), "
            "sketch = sketch_merge(sketch, excluded.sketch)");
    if (!st)
        return BL_EIO;
    for (size_t i = 0; i < n; i++) {
        bl_wr_stat s;
        row(ctx, i, &s);
        sqlite3_bind_int64(st, 1, s.build_id);
        sqlite3_bind_int64(st, 2, s.method);
        sqlite3_bind_int(st, 3, s.main);
        sqlite3_bind_int64(st, 4, s.hour);
        sqlite3_bind_int64(st, 5, s.count);
        sqlite3_bind_int64(st, 6, s.total_us);
        sqlite3_bind_int64(st, 7, s.self_us);
        sqlite3_bind_int64(st, 8, s.max_us);
        sqlite3_bind_blob(st, 9, s.sketch, (int)s.sketch_len, SQLITE_STATIC);
        if (bl_db_step_done(st))
            return BL_EIO;
    }
    return BL_OK;
}

static const char nodes_upsert[] =
    "INSERT INTO call_nodes(id, build_id, main, parent, method, count, total_us, self_us) "
    "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET count = count + excluded.count, "
    "total_us = total_us + excluded.total_us, self_us = self_us + excluded.self_us";

/* A stored node's counters, by id: one seek in the table's B-tree (the
 * UNIQUE index's columns do not change, so it is not touched). */
static const char nodes_update[] =
    "UPDATE call_nodes SET count = count + ?2, total_us = total_us + ?3, "
    "self_us = self_us + ?4 WHERE id = ?1";

bl_err bl_wr_nodes_add(bl_db *db, size_t n, bl_wr_node_fn row, void *ctx)
{
    if (!n)
        return BL_OK;
    sqlite3_stmt *ins = bl_db_stmt(db, nodes_upsert);
    sqlite3_stmt *upd = ins ? bl_db_stmt(db, nodes_update) : NULL;
    if (!upd)
        return BL_EIO;
    sqlite3 *h = bl_db_handle(db);
    for (size_t i = 0; i < n; i++) {
        bl_wr_node d;
        row(ctx, i, &d);
        if (!d.is_new) {
            sqlite3_bind_int64(upd, 1, d.id);
            sqlite3_bind_int64(upd, 2, d.count);
            sqlite3_bind_int64(upd, 3, d.total_us);
            sqlite3_bind_int64(upd, 4, d.self_us);
            if (bl_db_step_done(upd))
                return BL_EIO;
            if (sqlite3_changes(h) == 1)
                continue;
            /* the row is gone (deleted behind the writer's back): made anew */
        }
        sqlite3_bind_int64(ins, 1, d.id);
        sqlite3_bind_int64(ins, 2, d.build_id);
        sqlite3_bind_int(ins, 3, d.main);
        sqlite3_bind_int64(ins, 4, d.parent);
        sqlite3_bind_int64(ins, 5, d.method);
        sqlite3_bind_int64(ins, 6, d.count);
        sqlite3_bind_int64(ins, 7, d.total_us);
        sqlite3_bind_int64(ins, 8, d.self_us);
        if (bl_db_step_done(ins))
            return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_wr_batch_seen(bl_db *db, const char *uuid)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT 1 FROM batches WHERE batch_id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : BL_ENOTFOUND;
}

bl_err bl_wr_batch_insert(bl_db *db, const bl_wr_batch *b)
{
    sqlite3_stmt *st = bl_db_stmt(db, "INSERT INTO batches(batch_id, app_id, build_id, received_at, "
                                      "processed_at, records, malformed, bytes) VALUES (?,?,?,?,?,?,?,?)");
    if (!st)
        return BL_EIO;
    sqlite3_bind_text(st, 1, b->uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, b->app_id);
    sqlite3_bind_int64(st, 3, b->build_id);
    sqlite3_bind_int64(st, 4, b->received_at);
    sqlite3_bind_int64(st, 5, b->processed_at);
    sqlite3_bind_int64(st, 6, b->records);
    sqlite3_bind_int64(st, 7, b->malformed);
    sqlite3_bind_int64(st, 8, b->bytes);
    return bl_db_step_done(st);
}
