/*
 * db.c — SQLite connection, migrations and statement cache (see db.h).
 */
#include "store/db.h"
#include "store/internal.h"

#include "store/sqlfuncs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>

extern const char *const bl_migrations[];

/* statements cached per connection: every distinct SQL text of the store
 * (about 45 on the busiest connection today) */
#define STMT_CACHE 256
/* Page size of a new database (an existing one keeps its own). 16 KiB
 * rather than SQLite's 4 KiB: a method-hour row's percentile sketch is a few
 * KB, and a row of a WITHOUT ROWID table keeps only about a quarter of a
 * page in the B-tree; with 4 KiB pages every sketch went to overflow pages,
 * read and rewritten by each upsert (2.6x slower measured). */
#define BL_DB_PAGE_SIZE 16384
#define BL_STR_(x) #x
#define BL_STR(x) BL_STR_(x)

struct bl_db {
    sqlite3 *h;
    int readonly;
    int autockpt; /* writable: WAL pages that make a commit checkpoint (0: never) */
    struct {
        const char *sql;
        sqlite3_stmt *st;
    } cache[STMT_CACHE];
};

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

bl_err bl_db_exec(bl_db *db, const char *sql)
{
    return sqlite3_exec(db->h, sql, NULL, NULL, NULL) == SQLITE_OK ? BL_OK : BL_EIO;
}

bl_err bl_db_begin(bl_db *db)
{
    return bl_db_exec(db, "BEGIN IMMEDIATE");
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
    return bl_db_exec(db, "BEGIN DEFERRED");
}

void bl_db_read_end(bl_db *db)
{
    if (bl_db_exec(db, "COMMIT") != BL_OK)
        (void)bl_db_exec(db, "ROLLBACK");
}

const char *bl_db_errmsg(bl_db *db)
{
    return sqlite3_errmsg(db->h);
}

bl_err bl_db_ping(bl_db *db)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT count(*) FROM apps");
    if (!st)
        return BL_EIO;
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : BL_EIO;
}

bl_err bl_db_writer_memory(bl_db *db)
{
    return bl_db_exec(db, "PRAGMA cache_size = -" BL_STR(BL_DB_WRITER_CACHE_KIB));
}

bl_err bl_db_no_autocheckpoint(bl_db *db)
{
    /* the WAL file is cut back to 64 MiB when the writer starts it over
     * after a checkpoint (else it keeps the size of the biggest transaction) */
    /* not PRAGMA wal_autocheckpoint = 0: that would remove on_wal_commit */
    db->autockpt = 0;
    return bl_db_exec(db, "PRAGMA journal_size_limit = 67108864");
}

bl_err bl_db_checkpoint(bl_db *db)
{
    int rc = sqlite3_wal_checkpoint_v2(db->h, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return rc == SQLITE_OK || rc == SQLITE_BUSY ? BL_OK : BL_EIO;
}

bl_err bl_db_defer_sync(bl_db *db)
{
    return bl_db_exec(db, "PRAGMA synchronous = NORMAL");
}

bl_err bl_db_sync_wal(bl_db *db)
{
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

/* commits of this process's writable connections (bl_db_write_generation) */
static _Atomic uint64_t write_gen;

uint64_t bl_db_write_generation(void)
{
    return atomic_load(&write_gen);
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
        for (int i = 0; i < STMT_CACHE; i++)
            sqlite3_finalize(db->cache[i].st);
        sqlite3_close(db->h);
        free(db);
        return err;
    }
    *out = db;
    return BL_OK;
}

void bl_db_close(bl_db *db)
{
    if (!db)
        return;
    for (int i = 0; i < STMT_CACHE; i++)
        sqlite3_finalize(db->cache[i].st);
    sqlite3_close(db->h);
    free(db);
}

bl_err bl_db_step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

sqlite3 *bl_db_handle(bl_db *db)
{
    return db->h;
}

sqlite3_stmt *bl_db_stmt(bl_db *db, const char *sql)
{
    int free_slot = -1;
    for (int i = 0; i < STMT_CACHE; i++) {
        if (db->cache[i].sql == sql) {
            sqlite3_reset(db->cache[i].st);
            sqlite3_clear_bindings(db->cache[i].st);
            return db->cache[i].st;
        }
        if (!db->cache[i].sql && free_slot < 0)
            free_slot = i;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        return NULL;
    if (free_slot >= 0) {
        db->cache[free_slot].sql = sql;
        db->cache[free_slot].st = st;
    } else {
        /* cache full: never evicted (a caller may be stepping any cached
         * statement); refused, loudly: STMT_CACHE must grow */
        sqlite3_finalize(st);
        fprintf(stderr, "beatline-server: the statement cache (%d) is full; not prepared: %.80s\n",
                STMT_CACHE, sql);
        return NULL;
    }
    return st;
}

const char *bl_db_text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

bl_blk_names bl_db_method_names(sqlite3_stmt *st, int col, int64_t method_id, char *buf,
                                size_t n)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) {
        snprintf(buf, n, "unknown method %lld", (long long)method_id);
        return (bl_blk_names){ "?", buf, "", "" };
    }
    return (bl_blk_names){ bl_db_text(st, col), bl_db_text(st, col + 1), bl_db_text(st, col + 2),
                           bl_db_text(st, col + 3) };
}
