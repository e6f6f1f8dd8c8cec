/*
 * conn.h — the inside of a bl_db, shared by db.c (opening, migrations,
 * transactions) and stmt.c (statements). Private to those two files.
 */
#ifndef BL_STORE_CONN_H
#define BL_STORE_CONN_H

#include <libpq-fe.h>
#include <sqlite3.h>

#include "store/db.h"
#include "store/stmt.h"

/* statements cached per connection: every distinct SQL text of the store
 * (about 45 on the busiest connection today) */
#define BL_STMT_CACHE 256

struct bl_db {
    sqlite3 *h;   /* SQLite backend (owned), or NULL */
    PGconn *pg;   /* PostgreSQL backend (owned), or NULL */
    int readonly;
    unsigned next_name; /* PostgreSQL: prepared statement names "bl<N>" */
    char err[512];      /* PostgreSQL: the last error, "" when none */
    struct {
        const char *key;
        bl_st *st;
    } cache[BL_STMT_CACHE];
};

/* Frees a statement (its SQLite statement or its PostgreSQL result and
 * buffers); the server-side prepared statement goes with the connection. */
void bl_st_free(bl_st *st);
/* The SQLite statement behind st (NULL on PostgreSQL). */
sqlite3_stmt *bl_st_sqlite(bl_st *st);
/* Records a PostgreSQL error text as the connection's bl_db_errmsg. */
void bl_db_set_pg_error(bl_db *db, const char *what, const char *msg);

#endif
