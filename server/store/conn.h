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
    int autockpt; /* SQLite writable: WAL pages that make a commit checkpoint (0: never) */
    unsigned next_name; /* PostgreSQL: prepared statement names "bl<N>" */
    char err[512];      /* PostgreSQL: the last error, "" when none */
    /* PostgreSQL, a lost connection (server restarted, network): */
    int txn;        /* PQtransactionStatus after the last command that reached the server */
    int lost;       /* lost inside a transaction: every statement fails until COMMIT/ROLLBACK */
    unsigned epoch; /* bumped by each reconnection (server-side prepared statements gone) */
    int unset;      /* reconnected, session settings (pg_session) not yet applied */
    unsigned txn_gen;     /* bumped when a transaction ends or is rolled back (to a
                           * savepoint): cursors declared without WITH HOLD are gone */
    unsigned next_cursor; /* PostgreSQL: cursor names "blc<N>" (stmt.c) */
    bl_st *streaming;     /* PostgreSQL: the statement whose rows are being read one by
                           * one (bl_st_stream BL_ST_ROW_BY_ROW): the connection takes
                           * no other command until they are all read or dropped */
    struct {
        const char *key;
        bl_st *st;
    } cache[BL_STMT_CACHE];
};

/* Frees a statement (its SQLite statement or its PostgreSQL result and
 * buffers); the server-side prepared statement goes with the connection. */
void bl_st_free(bl_st *st);
/* Records a PostgreSQL error text as the connection's bl_db_errmsg. */
void bl_db_set_pg_error(bl_db *db, const char *what, const char *msg);
/* PostgreSQL, before a command (`ends_txn`: it is COMMIT or ROLLBACK): 0
 * when the connection can take it — one found broken outside a transaction
 * has been made again (PQreset; db->epoch bumped); 1 when the connection
 * was lost inside a transaction and has been made again for the command
 * that ends it (the transaction is gone: ROLLBACK has nothing left to do,
 * COMMIT must fail); -1 (message: bl_db_errmsg) when the server cannot be
 * reached, or the connection was lost inside a transaction and the command
 * does not end it. */
int bl_db_pg_ready(bl_db *db, int ends_txn);
/* PostgreSQL, after a command: remembers the transaction state the
 * connection is in (for bl_db_pg_ready). */
void bl_db_pg_after(bl_db *db);

#endif
