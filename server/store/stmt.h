/*
 * stmt.h — prepared statements of the store, whichever backend holds the
 * data (issue 19): the embedded SQLite database or a PostgreSQL server
 * (libpq). Store modules write their SQL once, with `?` parameters, in the
 * dialect both engines accept (INSERT … ON CONFLICT … DO UPDATE, RETURNING,
 * COALESCE, CASE, standard aggregates); where the dialects differ a module
 * passes both texts to bl_st_get2 and tests the backend with bl_db_is_pg.
 * Private to server/store (like internal.h): nothing outside the store sees
 * a statement.
 *
 * Semantics are SQLite's, so a module behaves the same on both backends:
 * - parameters are numbered from 1, columns from 0;
 * - a column read as an integer is 0 for NULL, a PostgreSQL boolean is 1
 *   ('t') or 0 ('f'), a numeric (PostgreSQL's sum of bigint) is read in
 *   full when it fits an int64 and saturates at INT64_MIN/INT64_MAX beyond;
 * - text and blob columns are NULL for NULL; their memory belongs to the
 *   statement and stays valid until its next step, reset or re-get.
 *
 * On PostgreSQL a statement runs when it is first stepped (one round trip:
 * all result rows arrive at once, in text form, and are held in memory
 * until the reset; a bytea is decoded from its hex form) — unless marked
 * with bl_st_stream, see there — and is prepared on the server at its first run on the
 * connection (PQprepare, then PQexecPrepared), with `?` rewritten to `$n`
 * outside quotes. Parameter types are inferred by the server from the SQL;
 * a bare `?` whose type the server cannot infer needs a cast in the SQL
 * (`CAST(? AS bigint)`), which SQLite accepts too.
 */
#ifndef BL_STORE_STMT_H
#define BL_STORE_STMT_H

#include <stddef.h>
#include <stdint.h>

#include "common/blerr.h"
#include "store/db.h"

typedef struct bl_st bl_st;

/* step results */
#define BL_ST_ROW 1
#define BL_ST_DONE 0
#define BL_ST_ERROR (-1)

/* 1 when the connection is a PostgreSQL one. */
int bl_db_is_pg(const bl_db *db);

/*
 * The connection's cached statement for `sql` (a string literal: the
 * pointer is the cache key), reset with its bindings cleared. Owned by the
 * connection (never freed by the caller). NULL on failure (message:
 * bl_db_errmsg): SQLite refused the SQL, out of memory, or the cache full.
 * On PostgreSQL, errors in the SQL show at the first step.
 */
bl_st *bl_st_get(bl_db *db, const char *sql);
/* The same with a text per backend: `sqlite_sql` on SQLite (also the cache
 * key), `pg_sql` on PostgreSQL. */
bl_st *bl_st_get2(bl_db *db, const char *sqlite_sql, const char *pg_sql);

/*
 * Marks a SELECT that may return many rows to be read `rows` rows at a
 * time on PostgreSQL (no effect on SQLite, which reads row by row): it
 * runs through a server-side cursor (DECLARE … NO SCROLL CURSOR, WITH HOLD
 * outside a transaction; FETCH FORWARD `rows`; CLOSE after the last row or
 * at bl_st_reset), so the client holds at most `rows` rows of it at once
 * instead of the whole result. The DECLARE and the first FETCH go in one
 * round trip (libpq's pipeline mode), and a cursor inside a transaction
 * whose rows came in its first chunk is left to the transaction's end (no
 * CLOSE): inside a transaction a result of at most `rows` rows costs one
 * round trip, as a plain run; each further chunk one more, and a WITH
 * HOLD cursor's CLOSE one. The SQL is planned at each run. Other
 * statements may run on the connection while its rows are read. Inside a
 * transaction the rows must be read before the transaction ends (else the
 * next step is BL_ST_ERROR). The SQL must be a plain query (no
 * data-modifying WITH, no FOR UPDATE outside a transaction). `rows` 0
 * turns streaming off. Sticky: the cached statement keeps it.
 *
 * `rows` BL_ST_ROW_BY_ROW: for a statement no cursor can hold (UPDATE …
 * RETURNING, a data-modifying WITH), libpq's single-row mode: one row in
 * the client at a time; the statement runs to its end on the server
 * whatever is read. Until its last row is read or it is reset (which reads
 * and drops the rest), the connection takes no other statement (they fail:
 * BL_ST_ERROR, BL_EIO).
 */
void bl_st_stream(bl_st *st, int rows);
/* rows per FETCH for rows of numbers and names (a call-tree node, a
 * method): about 1-2 MB of client memory */
#define BL_ST_FETCH_ROWS 8192
/* bl_st_stream: one row at a time, no cursor (single-row mode) */
#define BL_ST_ROW_BY_ROW (-1)
/* rows per FETCH for rows that carry sketches (a few KB each at most) */
#define BL_ST_FETCH_WIDE 256

/* Binding parameter i (from 1; `?NNN` numbers them in the SQL, a bare `?`
 * takes the number after the largest so far, as in SQLite). Text is copied
 * at once; a blob is read when the statement runs, so its memory must stay
 * valid until the statement's next step. len < 0: up to the NUL. */
void bl_st_int64(bl_st *st, int i, int64_t v);
void bl_st_double(bl_st *st, int i, double v);
void bl_st_text(bl_st *st, int i, const char *s, int len);
void bl_st_blob(bl_st *st, int i, const void *p, size_t n);
void bl_st_null(bl_st *st, int i);

/* Runs the statement or moves to its next row: BL_ST_ROW, BL_ST_DONE, or
 * BL_ST_ERROR (message: bl_db_errmsg; on PostgreSQL a failed statement
 * aborts the current transaction, as the caller's rollback expects). */
int bl_st_step(bl_st *st);
/* Steps a statement that returns no row and resets it: BL_OK when done,
 * else BL_EIO. */
bl_err bl_st_done(bl_st *st);
/* Resets the statement (rows dropped, bindings kept). */
void bl_st_reset(bl_st *st);
/* Rows changed by the statement's last run (INSERT, UPDATE, DELETE). */
int64_t bl_st_changes(bl_st *st);

/* Columns of the current row (see the semantics above). */
int bl_st_is_null(bl_st *st, int i);
int64_t bl_st_col_int64(bl_st *st, int i);
double bl_st_col_double(bl_st *st, int i);
const char *bl_st_col_text(bl_st *st, int i);
const void *bl_st_col_blob(bl_st *st, int i);
size_t bl_st_col_bytes(bl_st *st, int i);
/* Column text, "" for NULL (valid as bl_st_col_text). */
const char *bl_st_col_str(bl_st *st, int i);

#endif
