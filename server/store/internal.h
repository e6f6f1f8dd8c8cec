/*
 * internal.h — what store modules share and nobody else sees: the SQLite
 * connection behind a bl_db, SQL execution and the per-connection statement
 * cache. Only the .c files of server/store (and unit tests of the store) include it;
 * scripts/check-layers fails when sqlite3 appears elsewhere under server/.
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

/* A prepared statement cached on the connection for `sql` (a string
 * literal: the pointer is the cache key). Reset and bindings cleared before
 * it is returned; owned by the connection (never finalize it). NULL on
 * failure (message: bl_db_errmsg). */
sqlite3_stmt *bl_db_stmt(bl_db *db, const char *sql);

/* Steps a statement that returns no row (its parameters bound) and resets
 * it: BL_OK on SQLITE_DONE, else BL_EIO (message: bl_db_errmsg). */
bl_err bl_db_step_done(sqlite3_stmt *st);

/* Column i of the current row as text: "" for NULL (borrowed from the
 * statement, valid until its next step or reset). */
const char *bl_db_text(sqlite3_stmt *st, int i);

/* A method's names from columns col..col+3 (class, name, descriptor,
 * source file, of a LEFT JOIN on methods); a NULL class (no methods row)
 * gives the placeholders of bl_blk_names, "unknown method N" written into
 * buf (the caller's, at least 64 bytes, as long as the names are used). */
bl_blk_names bl_db_method_names(sqlite3_stmt *st, int col, int64_t method_id, char *buf,
                                size_t n);

/* The same two on a bl_st (store/stmt.h), for modules ported to it (issue
 * 19; the sqlite3_stmt versions above go when every module is): a
 * column's text or "" is bl_st_col_str (stmt.h); the names of columns
 * col..col+3, placeholders when the class is NULL, as bl_db_method_names. */
bl_blk_names bl_st_method_names(bl_st *st, int col, int64_t method_id, char *buf, size_t n);


#endif
