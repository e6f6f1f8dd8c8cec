/*
 * internal.h — what store modules share and nobody else sees: the SQLite
 * connection behind a bl_db (tests), SQL execution, method names from a
 * statement (statements themselves: store/stmt.h), the SQL of saturated
 * sums and PostgreSQL's sketch unions and merges. Only the .c files of
 * server/store (and unit tests of the store) include it; scripts/check-layers
 * fails when sqlite3 or libpq appears elsewhere under server/.
 */
#ifndef BL_STORE_INTERNAL_H
#define BL_STORE_INTERNAL_H

#include <sqlite3.h>
#include "store/blocks.h"
#include "store/db.h"
#include "store/stmt.h"

/* The connection's SQLite handle (owned by the bl_db). */
sqlite3 *bl_db_handle(bl_db *db);

/* Runs SQL without results (BEGIN, COMMIT, PRAGMA…). BL_EIO on failure
 * (message: bl_db_errmsg). */
bl_err bl_db_exec(bl_db *db, const char *sql);

/* A method's names from columns col..col+3 (class, name, descriptor,
 * source file, of a LEFT JOIN on methods); a NULL class (no methods row)
 * gives the placeholders of bl_blk_names, "unknown method N" written into
 * buf (the caller's, at least 64 bytes, as long as the names are used).
 * A column's text or "" is bl_st_col_str (stmt.h). */
bl_blk_names bl_st_method_names(bl_st *st, int col, int64_t method_id, char *buf, size_t n);

/* Steps st (bound, columns: id, parent, method_id, count, total_us,
 * self_us, then the method's names as bl_st_method_names reads them) to its
 * end, handing each row to cb as a bl_blk_node (names valid during the
 * call) until cb returns non-zero; resets st. BL_OK, BL_EIO. Block and
 * launch call trees (blocks.c, launches.c). */
bl_err bl_st_blk_nodes(bl_st *st, bl_blk_node_cb cb, void *ctx);


/* ---- event aggregates on both backends (blocks, launches, network) ---- */

#include "common/buf.h"

/*
 * Saturated sums. A sum over rows of an integer column (µs, bytes, counts
 * over hours) may pass 2^63 although every row fits: SQLite's sum() then
 * fails the whole query ("integer overflow": the endpoint answered 500) and
 * total() is a double, rounded past 2^53 in an order-dependent way; on
 * PostgreSQL sum(bigint) is an exact numeric. BL_SQL_SATSUM(x) (SQLite,
 * the sat_sum aggregate of store/sqlfuncs.c) and BL_SQL_SATSUM_PG(x) (the
 * same on PostgreSQL) are both the exact sum when it fits an int64, else
 * INT64_MAX (INT64_MIN below), 0 over no row: read with bl_st_col_int64,
 * and ordering by it gives the same order on both backends. `x` is a
 * string literal (the expression summed).
 */
#define BL_SQL_SATSUM(x) "sat_sum(" x ")"
#define BL_SQL_SATSUM_PG(x)                                                                     \
    "GREATEST(LEAST(COALESCE(sum(" x "), 0), 9223372036854775807), -9223372036854775808)"
/* a + b for b >= 0 (a row's column plus an increment, both int64: SET
 * clauses of upserts), INT64_MAX instead of past it. Plain addition raises
 * 'bigint out of range' on PostgreSQL (the batch could never be stored)
 * and turns the column into a REAL on SQLite. */
#define BL_SQL_SATADD(a, b)                                                                     \
    "CASE WHEN " a " > 9223372036854775807 - " b " THEN 9223372036854775807 ELSE " a " + " b   \
    " END"

/*
 * Sketch unions on PostgreSQL, which has no sketch_union aggregate:
 * BL_SQL_SKETCHES_PG(x) aggregates the blobs of column x as one bytea (each
 * prefixed with its length, 4 bytes big-endian; NULL skipped), and
 * bl_st_col_sketch_union merges column i of that form with the C sketch
 * code into *out (reset first): the bytes sketch_union(x) gives on SQLite
 * (an empty sketch when there is no blob; merging adds bucket counts, so
 * the order of the rows does not matter). BL_EFORMAT for a malformed
 * blob, BL_ENOMEM.
 */
#define BL_SQL_SKETCHES_PG(x) "string_agg(int4send(length(" x ")) || " x ", ''::bytea)"
bl_err bl_st_col_sketch_union(bl_st *st, int i, bl_buf *out);

/*
 * Sketch merges in upserts on PostgreSQL (no sketch_merge function): the
 * caller reads the row with `lock` (bound: a SELECT … FOR UPDATE of its n
 * sketch columns, n <= 4) and this merges add[k] (add_len[k] bytes) into
 * the row's column k, the result in out[k] (reset first; add[k] itself
 * when the row is not there). *found: whether it was. The caller then
 * upserts with `sketch = excluded.sketch` under `WHERE <found>`, and starts
 * again when that changed nothing (another transaction inserted the row in
 * between; it is locked by then). BL_EIO (statement error: bl_db_errmsg),
 * BL_EFORMAT, BL_ETOOBIG (counts overflow), BL_ENOMEM.
 */
bl_err bl_st_sketch_lock_merge(bl_st *lock, int n, const void *const *add,
                               const size_t *add_len, bl_buf *out, int *found);

#endif
