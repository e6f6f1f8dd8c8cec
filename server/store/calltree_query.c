/*
 * calltree_query.c — reading call-tree nodes and method names (see
 * calltree_query.h), on SQLite or PostgreSQL (store/stmt.h): the same SQL
 * on both. Node order matters only in bl_calltree_nodes (ORDER BY id);
 * children come in no particular order (the caller sorts them).
 *
 * The scans of a whole build (bl_calltree_nodes, bl_calltree_scan,
 * bl_calltree_build_methods) read their rows BL_ST_FETCH_ROWS at a time
 * through a cursor on PostgreSQL (bl_st_stream), never the whole result
 * at once. Measured on a 6,500-node build: 2-5 ms more PostgreSQL CPU a
 * query than a plain run. libpq's single-row mode (one round trip, the
 * prepared plan) cost about as much CPU, and would forbid any other
 * statement on the connection while the rows are read.
 */
#include "store/calltree_query.h"
#include "store/stmt.h"

bl_err bl_calltree_nodes(bl_db *db, const bl_calltree_query *q, bl_calltree_node_cb cb,
                         void *ctx)
{
    /* is_root: NULL (a NULL comparison) reads as 0 on both engines; the
     * casts give PostgreSQL the type of a parameter first seen in IS NULL */
    bl_st *st = bl_st_get(db, "SELECT n.id, n.parent, n.method, n.count, n.total_us, "
                              "n.self_us, (CAST(?3 AS text) IS NOT NULL AND m.class = ?3 AND "
                              "m.name = ?4 AND (CAST(?5 AS text) IS NULL OR m.descriptor = ?5)) "
                              "FROM call_nodes n JOIN methods m ON m.id = n.method "
                              "WHERE n.build_id = ?1 AND (?2 = 0 OR n.main = 1) "
                              "ORDER BY n.id");
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_ROWS);
    bl_st_int64(st, 1, q->build_id);
    bl_st_int64(st, 2, q->main_only ? 1 : 0);
    if (q->root_class) {
        bl_st_text(st, 3, q->root_class, -1);
        bl_st_text(st, 4, q->root_name ? q->root_name : "", -1);
        if (q->root_descriptor)
            bl_st_text(st, 5, q->root_descriptor, -1);
    }
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_calltree_node n = {
            bl_st_col_int64(st, 0), bl_st_col_int64(st, 1),
            bl_st_col_int64(st, 2), bl_st_col_int64(st, 3),
            bl_st_col_int64(st, 4), bl_st_col_int64(st, 5),
            bl_st_col_int64(st, 6) != 0, 0,
        };
        if (cb(&n, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* seeks on the UNIQUE (build_id, main, parent, method) index */
bl_err bl_calltree_children(bl_db *db, int64_t build_id, int main, int64_t parent,
                            bl_calltree_node_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT id, method, count, total_us, self_us "
                              "FROM call_nodes WHERE build_id = ? AND main = ? "
                              "AND parent = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, main);
    bl_st_int64(st, 3, parent);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_calltree_node n = {
            bl_st_col_int64(st, 0), parent,
            bl_st_col_int64(st, 1), bl_st_col_int64(st, 2),
            bl_st_col_int64(st, 3), bl_st_col_int64(st, 4), 0, 0,
        };
        if (cb(&n, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* main >= ?2 (not "?2 = 0 OR main = 1"): the index's range, so its order
 * is the ORDER BY (no sort) */
bl_err bl_calltree_scan(bl_db *db, int64_t build_id, int main_only, int64_t max_rows,
                        bl_calltree_node_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT id, parent, method, count, total_us, self_us, "
                              "main FROM call_nodes WHERE build_id = ?1 AND main >= ?2 "
                              "ORDER BY main, parent, method LIMIT ?3");
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_ROWS);
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, main_only ? 1 : 0);
    bl_st_int64(st, 3, max_rows < 0 ? 0 : max_rows);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_calltree_node n = {
            bl_st_col_int64(st, 0), bl_st_col_int64(st, 1),
            bl_st_col_int64(st, 2), bl_st_col_int64(st, 3),
            bl_st_col_int64(st, 4), bl_st_col_int64(st, 5), 0,
            bl_st_col_int64(st, 6) != 0,
        };
        if (cb(&n, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_calltree_has_children(bl_db *db, int64_t build_id, int main, int64_t parent,
                                int *has)
{
    bl_st *st = bl_st_get(db, "SELECT 1 FROM call_nodes WHERE build_id = ? AND "
                              "main = ? AND parent = ? LIMIT 1");
    *has = 0;
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, main);
    bl_st_int64(st, 3, parent);
    int rc = bl_st_step(st);
    *has = rc == BL_ST_ROW;
    bl_st_reset(st);
    return rc == BL_ST_ROW || rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_calltree_method(bl_db *db, int64_t method, bl_method_cb cb, void *ctx)
{
    bl_st *st =
        bl_st_get(db, "SELECT class, name, descriptor, source_file, method_id FROM methods "
                      "WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, method);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        bl_method_names m = { bl_st_col_str(st, 0), bl_st_col_str(st, 1), bl_st_col_str(st, 2),
                              bl_st_col_str(st, 3), bl_st_col_int64(st, 4) };
        cb(&m, ctx);
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

bl_err bl_calltree_build_methods(bl_db *db, int64_t build_id, bl_method_id_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT id, class, name, descriptor, source_file, method_id "
                              "FROM methods "
                              "WHERE id IN (SELECT method FROM call_nodes WHERE build_id = ?) "
                              "ORDER BY id");
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_ROWS);
    bl_st_int64(st, 1, build_id);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_method_names m = { bl_st_col_str(st, 1), bl_st_col_str(st, 2), bl_st_col_str(st, 3),
                              bl_st_col_str(st, 4), bl_st_col_int64(st, 5) };
        if (cb(bl_st_col_int64(st, 0), &m, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}
