/*
 * db.c — the store's connection on SQLite or PostgreSQL: opening,
 * migrations, transactions (see db.h); statements are in stmt.c.
 */
#include "store/db.h"
#include "store/conn.h"
#include "store/internal.h"

#include "store/sqlfuncs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>

extern const char *const bl_migrations[];
extern const char *const bl_pg_migrations[];
/* Page size of a new database (an existing one keeps its own). 16 KiB
 * rather than SQLite's 4 KiB: a method-hour row's percentile sketch is a few
 * KB, and a row of a WITHOUT ROWID table keeps only about a quarter of a
 * page in the B-tree; with 4 KiB pages every sketch went to overflow pages,
 * read and rewritten by each upsert (2.6x slower measured). */
#define BL_DB_PAGE_SIZE 16384
#define BL_STR_(x) #x
#define BL_STR(x) BL_STR_(x)

int bl_db_schema_version(void)
{
    int n = 0;
    while (bl_migrations[n])
        n++;
    return n;
}

int64_t bl_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The session settings of a PostgreSQL connection (at open and after a
 * reconnection), by PQexec. BL_OK, or BL_EIO with the message recorded. */
static bl_err pg_session(bl_db *db)
{
    /* cursor_tuple_fraction: a streamed statement (store/stmt.h,
     * bl_st_stream) is read to its end, so its cursor is planned for all
     * its rows, as the plain statement (not for the first tenth) */
    static const char *const set[] = { "SET client_min_messages = warning",
                                       "SET TIME ZONE 'UTC'", "SET cursor_tuple_fraction = 1",
                                       "SET default_transaction_read_only = on" };
    for (int i = 0; i < (db->readonly ? 4 : 3); i++) {
        PGresult *r = PQexec(db->pg, set[i]);
        int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            bl_db_set_pg_error(db, NULL, r ? PQresultErrorMessage(r) : PQerrorMessage(db->pg));
        PQclear(r);
        if (!ok)
            return BL_EIO;
    }
    return BL_OK;
}

void bl_db_pg_after(bl_db *db)
{
    if (PQstatus(db->pg) == CONNECTION_OK) {
        int t = (int)PQtransactionStatus(db->pg);
        if (t == PQTRANS_IDLE && db->txn != PQTRANS_IDLE)
            db->txn_gen++; /* the transaction ended: its cursors are closed */
        db->txn = t;
    }
}

int bl_db_pg_ready(bl_db *db, int ends_txn)
{
    if (db->streaming) {
        bl_db_set_pg_error(db, "the rows of another statement are still being read on this "
                               "connection (reset it first)",
                           NULL);
        return -1;
    }
    if (PQstatus(db->pg) == CONNECTION_OK && !db->lost && !db->unset)
        return 0;
    if (PQstatus(db->pg) != CONNECTION_OK || db->lost) {
        /* broken: by the last state seen, was a transaction open? Its work
         * is gone with the connection, and the statements after it must
         * not run one by one outside it: they fail until the caller ends
         * it. */
        if (!db->lost && db->txn != PQTRANS_IDLE)
            db->lost = 1;
        if (db->lost && !ends_txn) {
            bl_db_set_pg_error(db, "the connection to PostgreSQL was lost inside a "
                                   "transaction (rolled back); end it with ROLLBACK", NULL);
            return -1;
        }
        PQreset(db->pg);
        if (PQstatus(db->pg) != CONNECTION_OK) {
            bl_db_set_pg_error(db, "PostgreSQL: reconnection failed", PQerrorMessage(db->pg));
            return -1;
        }
        db->epoch++;
        db->txn = PQTRANS_IDLE;
        db->unset = 1;
    }
    if (pg_session(db) != BL_OK)
        return -1; /* tried again at the next command */
    db->unset = 0;
    if (db->lost) {
        db->lost = 0;
        return 1;
    }
    return 0;
}

/* 1 when `sql` starts with COMMIT, END or ROLLBACK (any case) */
static int ends_txn(const char *sql)
{
    while (*sql == ' ' || *sql == '\n' || *sql == '\t')
        sql++;
    return !strncasecmp(sql, "COMMIT", 6) || !strncasecmp(sql, "ROLLBACK", 8) ||
           !strncasecmp(sql, "END", 3);
}

bl_err bl_db_exec(bl_db *db, const char *sql)
{
    if (db->pg) {
        int ends = ends_txn(sql);
        int ready = bl_db_pg_ready(db, ends);
        if (ready < 0)
            return BL_EIO;
        if (ready == 1) {
            /* the transaction died with the connection: a rollback is
             * done, a commit failed */
            if (!strncasecmp(sql + strspn(sql, " \n\t"), "ROLLBACK", 8))
                return BL_OK;
            bl_db_set_pg_error(db, "the connection to PostgreSQL was lost inside the "
                                   "transaction: not committed",
                               NULL);
            return BL_EIO;
        }
        PGresult *r = PQexec(db->pg, sql);
        bl_db_pg_after(db);
        if (!strncasecmp(sql + strspn(sql, " \n\t"), "ROLLBACK", 8))
            db->txn_gen++; /* ROLLBACK TO a savepoint closes the cursors opened since */
        ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
        int ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
        /* COMMIT (or END) of a transaction an earlier statement aborted
         * succeeds as a command but rolls back: its tag says ROLLBACK
         * (PostgreSQL docs, COMMIT; libpq PQcmdStatus). Nothing was
         * committed, so the caller must hear it. */
        if (ok && ends && strncasecmp(sql + strspn(sql, " \n\t"), "ROLLBACK", 8) &&
            !strcmp(PQcmdStatus(r), "ROLLBACK")) {
            PQclear(r);
            bl_db_set_pg_error(db, "the transaction was aborted by an earlier error: "
                                   "rolled back, not committed",
                               NULL);
            return BL_EIO;
        }
        if (!ok) {
            const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
            bl_db_set_pg_error(db, NULL,
                               m ? m : r ? PQresultErrorMessage(r) : PQerrorMessage(db->pg));
        }
        PQclear(r);
        return ok ? BL_OK : BL_EIO;
    }
    return sqlite3_exec(db->h, sql, NULL, NULL, NULL) == SQLITE_OK ? BL_OK : BL_EIO;
}

bl_err bl_db_begin(bl_db *db)
{
    return bl_db_exec(db, db->pg ? "BEGIN" : "BEGIN IMMEDIATE");
}

bl_err bl_db_commit(bl_db *db)
{
    return bl_db_exec(db, "COMMIT");
}

void bl_db_rollback(bl_db *db)
{
    (void)bl_db_exec(db, "ROLLBACK");
}

bl_err bl_db_read_begin(bl_db *db)
{
    return bl_db_exec(db, db->pg ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                                 : "BEGIN DEFERRED");
}

void bl_db_read_end(bl_db *db)
{
    if (bl_db_exec(db, "COMMIT") != BL_OK)
        (void)bl_db_exec(db, "ROLLBACK");
}

const char *bl_db_errmsg(bl_db *db)
{
    if (db->pg)
        return db->err[0] ? db->err : PQerrorMessage(db->pg);
    return sqlite3_errmsg(db->h);
}

bl_err bl_db_ping(bl_db *db)
{
    bl_st *st = bl_st_get(db, "SELECT count(*) FROM apps");
    if (!st)
        return BL_EIO;
    int rc = bl_st_step(st);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

bl_err bl_db_writer_memory(bl_db *db)
{
    if (db->pg)
        return BL_OK;
    return bl_db_exec(db, "PRAGMA cache_size = -" BL_STR(BL_DB_WRITER_CACHE_KIB));
}

bl_err bl_db_writer_no_fk_checks(bl_db *db)
{
    if (db->pg)
        return BL_OK;
    return bl_db_exec(db, "PRAGMA foreign_keys = OFF");
}

bl_err bl_db_no_autocheckpoint(bl_db *db)
{
    if (db->pg)
        return BL_OK;
    /* the WAL file is cut back to 64 MiB when the writer starts it over
     * after a checkpoint (else it keeps the size of the biggest transaction) */
    /* not PRAGMA wal_autocheckpoint = 0: that would remove on_wal_commit */
    db->autockpt = 0;
    return bl_db_exec(db, "PRAGMA journal_size_limit = 67108864");
}

bl_err bl_db_checkpoint(bl_db *db)
{
    if (db->pg)
        return BL_OK;
    int rc = sqlite3_wal_checkpoint_v2(db->h, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return rc == SQLITE_OK || rc == SQLITE_BUSY ? BL_OK : BL_EIO;
}

bl_err bl_db_defer_sync(bl_db *db)
{
    if (db->pg)
        return BL_OK;
    return bl_db_exec(db, "PRAGMA synchronous = NORMAL");
}

bl_err bl_db_sync_wal(bl_db *db)
{
    if (db->pg)
        return BL_OK;
    const char *wal = sqlite3_filename_wal(sqlite3_db_filename(db->h, "main"));
    if (!wal || !*wal) {
        errno = ENOENT;
        return BL_EIO;
    }
    int fd = open(wal, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    int rc = fdatasync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc == 0 ? BL_OK : BL_EIO;
}

bl_err bl_db_bound_memory(bl_db *db)
{
    if (db->pg)
        return BL_OK;
    return bl_db_exec(db, "PRAGMA cache_size = -2048; PRAGMA temp_store = FILE");
}

static int user_version(sqlite3 *h)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

static bl_err migrate(sqlite3 *h, char *errbuf, size_t errlen)
{
    int have = user_version(h), want = bl_db_schema_version();
    if (have < 0) {
        snprintf(errbuf, errlen, "cannot read schema version: %s", sqlite3_errmsg(h));
        return BL_EIO;
    }
    if (have > want) {
        snprintf(errbuf, errlen, "database schema %d is newer than this program (%d)", have,
                 want);
        return BL_EVERSION;
    }
    for (int i = have; i < want; i++) {
        char *msg = NULL;
        char ver[64];
        snprintf(ver, sizeof ver, "PRAGMA user_version = %d", i + 1);
        if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(h, bl_migrations[i], NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(h, ver, NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(h, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(errbuf, errlen, "migration %d failed: %s", i + 1,
                     msg ? msg : sqlite3_errmsg(h));
            sqlite3_free(msg);
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
            return BL_EIO;
        }
    }
    return BL_OK;
}

int bl_db_url_is_pg(const char *url)
{
    return url && (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11));
}

/* libpq quotes the whole URI in some messages (a parse error): each copy of
 * `url` in buf becomes "(the URL)", as the URL may hold a password. Trailing
 * newlines are cut. */
static void scrub_url(char *buf, size_t cap, const char *url)
{
    size_t ul = strlen(url);
    char *p;
    while (ul && (p = strstr(buf, url)) != NULL) {
        static const char mark[] = "(the URL)";
        size_t tail = strlen(p + ul);
        if (ul >= sizeof mark - 1) {
            memcpy(p, mark, sizeof mark - 1);
            memmove(p + sizeof mark - 1, p + ul, tail + 1);
        } else if ((size_t)(p - buf) + sizeof mark + tail <= cap) {
            memmove(p + sizeof mark - 1, p + ul, tail + 1);
            memcpy(p, mark, sizeof mark - 1);
        } else {
            *p = 0;
        }
    }
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = 0;
}

bl_err bl_db_url_check(const char *url, char *errbuf, size_t errlen)
{
    if (!url || !*url) {
        snprintf(errbuf, errlen, "the store URL is empty");
        return BL_EINVAL;
    }
    if (!strncmp(url, "sqlite:", 7)) {
        if (!url[7]) {
            snprintf(errbuf, errlen, "store URL sqlite: needs a path (sqlite:PATH)");
            return BL_EINVAL;
        }
        return BL_OK;
    }
    if (bl_db_url_is_pg(url)) {
        char *msg = NULL;
        PQconninfoOption *o = PQconninfoParse(url, &msg);
        if (!o) {
            snprintf(errbuf, errlen, "bad PostgreSQL URL: %s", msg ? msg : "out of memory");
            PQfreemem(msg);
            scrub_url(errbuf, errlen, url);
            return BL_EINVAL;
        }
        PQconninfoFree(o);
        return BL_OK;
    }
    size_t k = strcspn(url, ":/@");
    if (url[k] == ':' && k > 0 && k <= 16)
        snprintf(errbuf, errlen, "unknown store URL scheme '%.*s:' (sqlite:PATH or postgresql://…)",
                 (int)k, url);
    else
        snprintf(errbuf, errlen, "bad store URL (sqlite:PATH or postgresql://…)");
    return BL_EINVAL;
}

const char *bl_db_url_redact(const char *url, char *out, size_t n)
{
    if (!n)
        return out;
    PQconninfoOption *o = bl_db_url_is_pg(url) ? PQconninfoParse(url, NULL) : NULL;
    if (!o) {
        snprintf(out, n, "%s", bl_db_url_is_pg(url) ? "postgresql://(unparsable)" : url);
        return out;
    }
    const char *user = NULL, *host = NULL, *port = NULL, *dbname = NULL;
    for (PQconninfoOption *p = o; p->keyword; p++) {
        if (!p->val || !*p->val)
            continue;
        if (!strcmp(p->keyword, "user"))
            user = p->val;
        else if (!strcmp(p->keyword, "host"))
            host = p->val;
        else if (!strcmp(p->keyword, "port"))
            port = p->val;
        else if (!strcmp(p->keyword, "dbname"))
            dbname = p->val;
    }
    snprintf(out, n, "postgresql://%s%s%s%s%s%s%s", user ? user : "", user ? "@" : "",
             host ? host : "", port ? ":" : "", port ? port : "", dbname ? "/" : "",
             dbname ? dbname : "");
    PQconninfoFree(o);
    return out;
}

int bl_db_remote(const bl_db *db)
{
    return db->pg != NULL;
}

int bl_db_connection_lost(const bl_db *db)
{
    return db->pg && (PQstatus(db->pg) != CONNECTION_OK || db->lost);
}

int bl_db_pg_schema_version(void)
{
    int n = 0;
    while (bl_pg_migrations[n])
        n++;
    return n;
}

/* libpq's notices (CREATE … IF NOT EXISTS on an existing table, …) are not
 * errors: dropped instead of printed on stderr */
static void pg_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* One number that the migrating connections of every node agree on, for
 * pg_advisory_lock: "BEAT" "LINE" in ASCII. */
#define PG_MIGRATION_LOCK "4881586592"

/* The schema version recorded in beatline_schema, -1 on error. */
static int pg_version(bl_db *db)
{
    PGresult *r = PQexec(db->pg, "SELECT coalesce(max(version), 0) FROM beatline_schema");
    int v = -1;
    if (r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = atoi(PQgetvalue(r, 0, 0));
    else
        bl_db_set_pg_error(db, NULL, r ? PQresultErrorMessage(r) : PQerrorMessage(db->pg));
    PQclear(r);
    return v;
}

/* Applies schema/pg migrations not yet applied, one transaction each,
 * under an advisory lock so that nodes starting together migrate once.
 * On any failure (the lock's release included) the caller closes the
 * connection, which releases the lock if it is still held. */
static bl_err pg_migrate(bl_db *db, char *errbuf, size_t errlen)
{
    if (bl_db_exec(db, "SELECT pg_advisory_lock(" PG_MIGRATION_LOCK ")") ||
        bl_db_exec(db, "CREATE TABLE IF NOT EXISTS beatline_schema (version integer PRIMARY KEY, "
                       "applied_at bigint NOT NULL)")) {
        snprintf(errbuf, errlen, "cannot prepare migrations: %s", bl_db_errmsg(db));
        return BL_EIO;
    }
    bl_err err = BL_OK;
    int have = pg_version(db), want = bl_db_pg_schema_version();
    if (have < 0) {
        snprintf(errbuf, errlen, "cannot read schema version: %s", bl_db_errmsg(db));
        err = BL_EIO;
    } else if (have > want) {
        snprintf(errbuf, errlen, "database schema %d is newer than this program (%d)", have,
                 want);
        err = BL_EVERSION;
    }
    for (int i = have; !err && i < want; i++) {
        char ver[128];
        snprintf(ver, sizeof ver, "INSERT INTO beatline_schema VALUES (%d, %lld)", i + 1,
                 (long long)bl_now_us());
        if (bl_db_exec(db, "BEGIN") || bl_db_exec(db, bl_pg_migrations[i]) ||
            bl_db_exec(db, ver) || bl_db_exec(db, "COMMIT")) {
            snprintf(errbuf, errlen, "migration %d failed: %s", i + 1, bl_db_errmsg(db));
            (void)bl_db_exec(db, "ROLLBACK");
            err = BL_EIO;
        }
    }
    /* a lock not let go would hold every other node's open (it waits in
     * pg_advisory_lock) for as long as this connection lives: the open
     * fails instead, and closing the connection lets the lock go */
    if (bl_db_exec(db, "SELECT pg_advisory_unlock(" PG_MIGRATION_LOCK ")") && !err) {
        snprintf(errbuf, errlen, "cannot release the migration lock: %s", bl_db_errmsg(db));
        err = BL_EIO;
    }
    return err;
}

/* set once a PostgreSQL connection is opened in this process
 * (bl_db_generation_is_complete) */
static atomic_int pg_in_use;

static bl_err pg_open(const char *url, int readonly, bl_db **out, char *errbuf, size_t errlen)
{
    atomic_store(&pg_in_use, 1);
    bl_db *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(errbuf, errlen, "out of memory");
        return BL_ENOMEM;
    }
    db->readonly = readonly;
    /* a server that does not answer fails the open after 10 s rather than
     * the system's TCP timeout (minutes); a connect_timeout in the URL wins */
    static const char *const keys[] = { "connect_timeout", "dbname", NULL };
    const char *const vals[] = { "10", url, NULL };
    db->pg = PQconnectdbParams(keys, vals, 1);
    if (!db->pg || PQstatus(db->pg) != CONNECTION_OK) {
        /* libpq names host and port, never the password; a URI it quotes is
         * scrubbed (scrub_url) */
        snprintf(errbuf, errlen, "PostgreSQL: %s",
                 db->pg ? PQerrorMessage(db->pg) : "out of memory");
        scrub_url(errbuf, errlen, url);
        bl_db_close(db);
        return BL_EIO;
    }
    PQsetNoticeProcessor(db->pg, pg_quiet, NULL);
    bl_err err = BL_OK;
    if (pg_session(db)) {
        snprintf(errbuf, errlen, "PostgreSQL: %s", bl_db_errmsg(db));
        err = BL_EIO;
    } else if (!readonly) {
        err = pg_migrate(db, errbuf, errlen);
    } else {
        int v = pg_version(db);
        if (v != bl_db_pg_schema_version()) {
            snprintf(errbuf, errlen, "PostgreSQL: schema version %d, this program needs %d", v,
                     bl_db_pg_schema_version());
            err = BL_EVERSION;
        }
    }
    if (err) {
        bl_db_close(db);
        return err;
    }
    *out = db;
    return BL_OK;
}

/* commits of this process's writable connections (bl_db_write_generation) */
static _Atomic uint64_t write_gen;

uint64_t bl_db_write_generation(void)
{
    return atomic_load(&write_gen);
}

int bl_db_generation_is_complete(void)
{
    return !atomic_load(&pg_in_use);
}

/* SQLite's WAL hook: called after each commit of a writable connection, once
 * the transaction is in the WAL (new read snapshots see it). Counts it, and
 * checkpoints as SQLite's own hook (which this one replaces) would: a
 * passive checkpoint once the WAL holds autockpt pages. */
static int on_wal_commit(void *ctx, sqlite3 *h, const char *name, int pages)
{
    const bl_db *db = ctx;
    atomic_fetch_add(&write_gen, 1);
    if (db->autockpt > 0 && pages >= db->autockpt)
        (void)sqlite3_wal_checkpoint_v2(h, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

bl_err bl_db_open(const char *path, int readonly, bl_db **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    if (bl_db_url_is_pg(path))
        return pg_open(path, readonly, out, errbuf, errlen);
    if (!strncmp(path, "sqlite:", 7))
        path += 7;
    bl_db *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(errbuf, errlen, "out of memory");
        return BL_ENOMEM;
    }
    db->readonly = readonly;
    int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &db->h, flags, NULL) != SQLITE_OK) {
        snprintf(errbuf, errlen, "%s: %s", path, db->h ? sqlite3_errmsg(db->h) : "cannot open");
        sqlite3_close(db->h);
        free(db);
        return BL_EIO;
    }
    sqlite3_busy_timeout(db->h, 5000);
    if (!readonly) {
        db->autockpt = 1000; /* SQLite's default wal_autocheckpoint */
        sqlite3_wal_hook(db->h, on_wal_commit, db);
    }
    bl_err err = BL_OK;
    if (bl_sql_register(db->h) != SQLITE_OK) {
        snprintf(errbuf, errlen, "cannot register SQL functions: %s", sqlite3_errmsg(db->h));
        err = BL_EIO;
    } else if (!readonly) {
        if (sqlite3_exec(db->h,
                         "PRAGMA page_size=" BL_STR(BL_DB_PAGE_SIZE) "; "
                         "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                         "PRAGMA foreign_keys=ON;",
                         NULL, NULL, NULL) != SQLITE_OK) {
            snprintf(errbuf, errlen, "%s: %s", path, sqlite3_errmsg(db->h));
            err = BL_EIO;
        } else {
            err = migrate(db->h, errbuf, errlen);
        }
    } else {
        int v = user_version(db->h);
        if (v != bl_db_schema_version()) {
            snprintf(errbuf, errlen, "%s: schema version %d, this program needs %d", path, v,
                     bl_db_schema_version());
            err = BL_EVERSION;
        }
    }
    if (err) {
        bl_db_close(db);
        return err;
    }
    *out = db;
    return BL_OK;
}

void bl_db_close(bl_db *db)
{
    if (!db)
        return;
    for (int i = 0; i < BL_STMT_CACHE; i++)
        bl_st_free(db->cache[i].st);
    sqlite3_close(db->h);
    if (db->pg)
        PQfinish(db->pg);
    free(db);
}

bl_err bl_db_reconnect(bl_db *db, int *renewed)
{
    *renewed = 0;
    if (!db->pg)
        return BL_OK;
    unsigned before = db->epoch;
    /* a session the server ended (a restart) still says CONNECTION_OK until
     * it is used: reading what is pending on the socket (no round trip)
     * finds the closed connection first — twice: a backend told to stop
     * sends its FATAL message before it closes, and one read may take the
     * message without reaching the end of the stream */
    if (PQstatus(db->pg) == CONNECTION_OK && !db->lost && !db->unset &&
        PQconsumeInput(db->pg) == 1 && PQconsumeInput(db->pg) == 1 &&
        PQstatus(db->pg) == CONNECTION_OK)
        return BL_OK;
    /* made again as the next command would (a transaction lost with it is
     * over: the caller rolled back, or it ends here) */
    if (bl_db_pg_ready(db, 1) < 0)
        return BL_EIO;
    *renewed = db->epoch != before;
    return BL_OK;
}

unsigned bl_db_session(const bl_db *db)
{
    return db->pg ? db->epoch : 0;
}

sqlite3 *bl_db_handle(bl_db *db)
{
    return db->h;
}

bl_blk_names bl_st_method_names(bl_st *st, int col, int64_t method_id, char *buf, size_t n)
{
    if (bl_st_is_null(st, col)) {
        snprintf(buf, n, "unknown method %lld", (long long)method_id);
        return (bl_blk_names){ "?", buf, "", "" };
    }
    return (bl_blk_names){ bl_st_col_str(st, col), bl_st_col_str(st, col + 1),
                           bl_st_col_str(st, col + 2), bl_st_col_str(st, col + 3) };
}
