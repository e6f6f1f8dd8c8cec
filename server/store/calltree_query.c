/*
 * calltree_query.c — reading call-tree nodes and method names (see
 * calltree_query.h).
 */
#include "store/calltree_query.h"
#include "store/internal.h"

bl_err bl_calltree_nodes(bl_db *db, const bl_calltree_query *q, bl_calltree_node_cb cb,
                         void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT n.id, n.parent, n.method, n.count, n.total_us, "
                                      "n.self_us, (?3 IS NOT NULL AND m.class = ?3 AND "
                                      "m.name = ?4 AND (?5 IS NULL OR m.descriptor = ?5)) "
                                      "FROM call_nodes n JOIN methods m ON m.id = n.method "
                                      "WHERE n.build_id = ?1 AND (?2 = 0 OR n.main = 1) "
                                      "ORDER BY n.id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, q->build_id);
    sqlite3_bind_int(st, 2, q->main_only ? 1 : 0);
    if (q->root_class) {
        sqlite3_bind_text(st, 3, q->root_class, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, q->root_name ? q->root_name : "", -1, SQLITE_TRANSIENT);
        if (q->root_descriptor)
            sqlite3_bind_text(st, 5, q->root_descriptor, -1, SQLITE_TRANSIENT);
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_calltree_node n = {
            sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
            sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
            sqlite3_column_int(st, 6) != 0, 0,
        };
        if (cb(&n, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

/* seeks on the UNIQUE (build_id, main, parent, method) index */
bl_err bl_calltree_children(bl_db *db, int64_t build_id, int main, int64_t parent,
                            bl_calltree_node_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT id, method, count, total_us, self_us "
                                      "FROM call_nodes WHERE build_id = ? AND main = ? "
                                      "AND parent = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, main);
    sqlite3_bind_int64(st, 3, parent);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_calltree_node n = {
            sqlite3_column_int64(st, 0), parent,
            sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
            sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), 0, 0,
        };
        if (cb(&n, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

/* main >= ?2 (not "?2 = 0 OR main = 1"): the index's range, so its order
 * is the ORDER BY (no sort) */
bl_err bl_calltree_scan(bl_db *db, int64_t build_id, int main_only, int64_t max_rows,
                        bl_calltree_node_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT id, parent, method, count, total_us, self_us, "
                                      "main FROM call_nodes WHERE build_id = ?1 AND main >= ?2 "
                                      "ORDER BY main, parent, method LIMIT ?3");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, main_only ? 1 : 0);
    sqlite3_bind_int64(st, 3, max_rows < 0 ? 0 : max_rows);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_calltree_node n = {
            sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
            sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5), 0,
            sqlite3_column_int(st, 6) != 0,
        };
        if (cb(&n, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_calltree_has_children(bl_db *db, int64_t build_id, int main, int64_t parent,
                                int *has)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT 1 FROM call_nodes WHERE build_id = ? AND "
                                      "main = ? AND parent = ? LIMIT 1");
    *has = 0;
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, main);
    sqlite3_bind_int64(st, 3, parent);
    int rc = sqlite3_step(st);
    *has = rc == SQLITE_ROW;
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_calltree_method(bl_db *db, int64_t method, bl_method_cb cb, void *ctx)
{
    sqlite3_stmt *st =
        bl_db_stmt(db, "SELECT class, name, descriptor, source_file FROM methods WHERE id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, method);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        bl_method_names m = { bl_db_text(st, 0), bl_db_text(st, 1), bl_db_text(st, 2), bl_db_text(st, 3) };
        cb(&m, ctx);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : rc == SQLITE_DONE ? BL_ENOTFOUND : BL_EIO;
}
