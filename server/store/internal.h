/*
 * internal.h — what store modules share and nobody else sees: the SQLite
 * connection behind a bl_db, SQL execution and the per-connection statement
 * cache. Only the .c files of server/store (and unit tests of the store) include it;
 * scripts/check-layers fails when sqlite3 appears elsewhere under server/.
 */
#ifndef BL_STORE_INTERNAL_H
#define BL_STORE_INTERNAL_H

#include <sqlite3.h>
#include "store/db.h"

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

/* Sets what the SQL function rollups_kept() answers on this connection
 * (0 at open; store/rollups.h). */
void bl_db_set_rollups_kept(bl_db *db, int kept);
/* What rollups_kept() answers on this connection now. */
int bl_db_rollups_kept(bl_db *db);

#endif
