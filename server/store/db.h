/*
 * db.h — the SQLite database of a Beatline data directory: opening, pragmas,
 * schema migrations (schema/migrations/NNNN_name.sql, embedded at build
 * time, applied in order; PRAGMA user_version = last applied), and small
 * helpers every store module uses. Only store/ code speaks SQL: the SQLite
 * handle, bl_db_exec and the statement cache are in store/internal.h, which
 * only store modules include.
 *
 * Concurrency: one writer connection (the processing thread, and the CLI's
 * app commands) and any number of read-only connections (HTTP threads), in
 * WAL mode so readers never block the writer. busy_timeout 5 s.
 */
#ifndef BL_DB_H
#define BL_DB_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef struct bl_db bl_db;

/*
 * Opens (creating if needed) the database at `path`. A writable connection
 * applies pending migrations; a read-only one refuses a database whose
 * schema is older or newer than this program (BL_EVERSION). Opening does
 * no other work: rollups a migration marked for a rebuild are rebuilt by
 * the server's processor (store/rollups.h), not here. On error, a
 * message is written to errbuf. BL_EIO, BL_EVERSION, BL_ENOMEM.
 */
bl_err bl_db_open(const char *path, int readonly, bl_db **out, char *errbuf, size_t errlen);
void bl_db_close(bl_db *db);

/*
 * The store URL (issue 19, `--store URL`): `sqlite:PATH` or a plain path is
 * the embedded SQLite database above; `postgresql://…` or `postgres://…` (a
 * libpq connection URI, https://www.postgresql.org/docs/15/libpq-connect.html
 * §34.1.1) connects to PostgreSQL, whose schema comes from
 * schema/pg/NNNN_*.sql (applied in order by a writable connection, under an
 * advisory lock so that nodes starting together migrate once; the version is
 * the table beatline_schema). bl_db_open takes either form. A read-only
 * PostgreSQL connection sets default_transaction_read_only. The pragma-like
 * calls below (memory bounds, checkpoints, deferred sync) are SQLite's and
 * return BL_OK without effect on PostgreSQL, whose commits are durable when
 * they return (synchronous_commit on).
 *
 * A lost PostgreSQL connection (the server restarted, the network): the
 * command that finds it broken fails (BL_EIO / BL_ST_ERROR); when no
 * transaction was open the next command reconnects (same URL, session
 * settings again, statements prepared again). When one was open, its work
 * is gone: every command fails until the caller ends it — ROLLBACK
 * succeeds, COMMIT fails ("not committed") — and the one after reconnects,
 * so no statement of a lost transaction runs on its own. A server still
 * down: each command fails after at most connect_timeout (10 s unless the
 * URL sets it).
 */
int bl_db_url_is_pg(const char *url);
/* Checks a store URL as `--store` takes it: `sqlite:PATH` (PATH not
 * empty), or a `postgresql://`/`postgres://` URI that libpq parses. BL_OK;
 * else BL_EINVAL with the reason in errbuf — which names the scheme or
 * libpq's complaint, never the URL itself (it may hold a password). A plain
 * path is for bl_db_open only, not a store URL. */
bl_err bl_db_url_check(const char *url, char *errbuf, size_t errlen);
/* The URL as it may be shown (logs, messages): a PostgreSQL URI as
 * "postgresql://USER@HOST:PORT/DBNAME" without its password or other
 * parameters (parts libpq leaves unset are left out), anything else as it
 * is. Written into out (n bytes, truncated, NUL-terminated); returns out. */
const char *bl_db_url_redact(const char *url, char *out, size_t n);
/* 1 when every statement on the connection is a round trip to another
 * process (PostgreSQL), 0 when it runs in this process (SQLite): readers
 * that would issue one small statement per item (a call tree's children,
 * node by node) read in bulk instead when this is 1. */
int bl_db_remote(const bl_db *db);
/* 1 when db is a PostgreSQL connection found broken by its last command
 * (the server stopped or restarted, the network broke) and not made again
 * yet: a failed command was the store's absence, not a fault (HTTP answers
 * 503 + Retry-After). 0 on SQLite and on a working connection. */
int bl_db_connection_lost(const bl_db *db);
/* Schema version of the PostgreSQL schema this program writes. */
int bl_db_pg_schema_version(void);

/* PostgreSQL: when the connection was lost (the server restarted, the
 * network broke), connects again with the same parameters (libpq PQreset;
 * statements are prepared again), losing the session's state (an open
 * transaction, session advisory locks). BL_OK when the connection is
 * (again) up — *renewed = 1 when it is a new session, 0 when the old one
 * was working — BL_EIO when not (message: bl_db_errmsg). A session the
 * server closed is found without a round trip (the socket is read).  A no-op on SQLite
 * and on a working connection. Only the thread using the connection may
 * call it, with no statement of the connection in use. */
bl_err bl_db_reconnect(bl_db *db, int *renewed);
/* The connection's session number: changes each time the connection is
 * made again (by bl_db_reconnect, or by any command after a lost
 * connection, see above); 0 on SQLite. What belongs to a session —
 * advisory locks above all — is gone once it changed. */
unsigned bl_db_session(const bl_db *db);
/* How many transactions this process's writable connections have
 * committed (counted once each is visible to new read snapshots; starts at
 * 0). A value read before a read snapshot began that is still the same
 * later means the database is unchanged since, for every writer in this
 * process (the server's only writer of call trees, names and builds; the
 * CLI's app commands in another process write apps and keys only). Do not
 * set PRAGMA wal_autocheckpoint on a writable connection: that would
 * remove the hook that counts (bl_db_no_autocheckpoint stops checkpoints
 * instead). */
uint64_t bl_db_write_generation(void);
/* 1 while the write generation above sees every commit to the store: the
 * process uses SQLite. 0 once it opened a PostgreSQL connection — other
 * nodes commit to the same database without this process counting them,
 * so nothing may be kept on the strength of an unchanged generation. */
int bl_db_generation_is_complete(void);

/* Schema version this program writes (number of migrations). */
int bl_db_schema_version(void);

/* Transactions on the connection, without SQL in the caller: begin takes
 * the write lock at once (SQLite BEGIN IMMEDIATE), so a writer waits there
 * (busy_timeout) rather than failing at its first write. BL_EIO on failure
 * (message: bl_db_errmsg). Commit fails too when PostgreSQL rolled the
 * transaction back instead (an earlier statement in it failed: COMMIT then
 * answers ROLLBACK). Rollback ignores errors (nothing to undo is fine). */
bl_err bl_db_begin(bl_db *db);
bl_err bl_db_commit(bl_db *db);
void bl_db_rollback(bl_db *db);

/* A read transaction (any connection, read-only ones too): the reads
 * between begin and end see one snapshot of the database (taken at the
 * first read), and each read skips taking and dropping the database's
 * locks again (cheaper for many small reads). End always closes it and
 * ignores errors; call it on every path once begin returned BL_OK. BL_EIO
 * on failure (message: bl_db_errmsg). */
bl_err bl_db_read_begin(bl_db *db);
void bl_db_read_end(bl_db *db);

/* The database's message for the last failed call on this connection
 * (English text, never NULL). Owned by the connection: valid until the
 * next call on it. */
const char *bl_db_errmsg(bl_db *db);

/* Checks that the database answers a query (a cheap read of the apps
 * table). BL_OK, or BL_EIO with the reason in bl_db_errmsg. */
bl_err bl_db_ping(bl_db *db);

/* Bounds the memory of a (read) connection: a page cache of at most 2 MiB,
 * and sorts of big queries (slow-methods groups every method) spill to
 * temporary files instead of memory. For the HTTP threads' connections.
 * BL_EIO on failure (the connection still works, unbounded). */
bl_err bl_db_bound_memory(bl_db *db);

/* Gives the writer connection a page cache of up to BL_DB_WRITER_CACHE_KIB
 * KiB (SQLite's default is 2 MiB): a transaction updates every call-path
 * node and method-hour row it touched, and with a small cache those pages
 * are read again from the file (pread) and spilled to the WAL before the
 * commit. Memory grows only as pages are used. BL_EIO on failure (the
 * connection still works, with the default cache). */
#define BL_DB_WRITER_CACHE_KIB 131072
bl_err bl_db_writer_memory(bl_db *db);

/* The writer connection stops checking foreign keys (SQLite: PRAGMA
 * foreign_keys = OFF; PostgreSQL: no-op, its constraints stay). Every id the
 * writer writes comes from a row it read or created itself (methods.id by
 * methodId, builds, apps): the check found nothing there, and it cost a
 * B-tree seek per new call-path node (about a quarter of the node insert:
 * 2.4 -> 1.75 µs per node in the 200-batch benchmark). Every other
 * connection (retention, HTTP, the rollups rebuild, the CLI) keeps
 * checking, so a deletion that would orphan a node is still refused.
 * Call outside a transaction. BL_EIO (the connection keeps checking). */
bl_err bl_db_writer_no_fk_checks(bl_db *db);

/* Checkpoints run by another thread: the writer connection stops doing
 * them at its commits (as PRAGMA wal_autocheckpoint = 0), and the checkpointer
 * calls bl_db_checkpoint on a connection of its own after each commit. A
 * checkpoint copies the pages of committed transactions from the WAL into
 * the database file and syncs it: reading and writing all those pages
 * again, work the writer then no longer waits for. Also sets
 * journal_size_limit (64 MiB): when the writer starts the WAL over, a
 * bigger file is truncated to that size. BL_EIO. */
bl_err bl_db_no_autocheckpoint(bl_db *db);
/* A passive checkpoint (never waits for readers or the writer, which go on
 * meanwhile; copies what it can). BL_EIO on failure (message:
 * bl_db_errmsg); busy (another checkpoint running) is BL_OK. */
bl_err bl_db_checkpoint(bl_db *db);

/*
 * Commits without waiting for the disk (issue 12): the writer connection's
 * commits write the transaction into the WAL file but no longer fsync it
 * (PRAGMA synchronous = NORMAL); bl_db_sync_wal, called afterwards by
 * another thread, makes every transaction committed before it began
 * durable. A process crash (kill -9) loses no committed transaction either
 * way (the data is in the kernel's page cache); a power loss may undo the
 * transactions committed after the last bl_db_sync_wal, so whoever defers
 * the sync must keep the inputs of those transactions (the raw batches in
 * batches/pending) until bl_db_sync_wal returned BL_OK. The database stays
 * consistent in every case (SQLite's WAL frames carry checksums). BL_EIO.
 */
bl_err bl_db_defer_sync(bl_db *db);
/* fdatasync of the connection's WAL file (DB-wal): what was committed on
 * any connection of the database before the call is durable when it
 * returns BL_OK (frames a completed checkpoint copied out were synced in
 * the database file by that checkpoint before the WAL could be restarted).
 * BL_EIO (errno set) when the file cannot be opened or synced. */
bl_err bl_db_sync_wal(bl_db *db);

/* Microseconds since the Unix epoch, now. */
int64_t bl_now_us(void);

#endif
