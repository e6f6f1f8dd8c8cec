/*
 * stmt.c — prepared statements on SQLite or PostgreSQL (see stmt.h).
 */
#include "store/stmt.h"
#include "store/conn.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a decoded bytea column of the current row (PostgreSQL) */
typedef struct {
    unsigned char *p; /* owned */
    size_t n, cap;
    int row; /* row it was decoded for, -1 none */
} colbuf;

struct bl_st {
    bl_db *db; /* the connection that owns the statement */
    sqlite3_stmt *sq; /* SQLite backend (owned) */
    /* PostgreSQL backend */
    char *sql; /* the text with $n parameters (owned) */
    char name[16];
    int prepared;
    unsigned epoch; /* db->epoch when prepared: a reconnection drops it */
    int np;          /* number of parameters */
    const char **pv; /* values (NULL: SQL NULL); owned array, values borrowed or in pbuf */
    int *pl, *pf;    /* lengths and formats (1: binary, blobs) */
    char **pbuf;     /* per-parameter text buffers (owned) */
    unsigned char *used; /* per parameter: named in the SQL (owned) */
    size_t *pcap;
    PGresult *res; /* owned, NULL before the run */
    int row, nrows;
    int64_t changes;
    colbuf *cb; /* per result column, grown on demand (owned) */
    int ncb;
    /* streaming through a cursor (bl_st_stream): */
    int chunk;     /* rows per FETCH; 0: the whole result in one round trip */
    int started;   /* run since the last reset (a cursor's rows may be done) */
    int cur;       /* a cursor of this statement may be open on the server */
    int cur_hold;  /* declared WITH HOLD (outside a transaction) */
    int cur_end;   /* the last FETCH returned fewer rows than asked: no more */
    unsigned cur_epoch, cur_gen; /* db->epoch and db->txn_gen at its DECLARE */
    char cur_name[24];
};

int bl_db_is_pg(const bl_db *db)
{
    return db->pg != NULL;
}

void bl_db_set_pg_error(bl_db *db, const char *what, const char *msg)
{
    size_t n = msg ? strlen(msg) : 0;
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        n--;
    snprintf(db->err, sizeof db->err, "%s%s%.*s", what ? what : "", what && n ? ": " : "",
             (int)n, msg ? msg : "");
}

/* `sql` with each parameter outside quotes replaced by PostgreSQL's form:
 * `?NNN` by `$NNN`, a bare `?` by the number after the largest so far (as
 * SQLite numbers them); *np the largest number; *used (owned by the
 * caller, *np entries, NULL when 0) 1 for each number the SQL names (SQLite
 * lets `?1, ?3` leave 2 out; PostgreSQL needs a type for every $n). */
static char *pg_rewrite(const char *sql, int *np, unsigned char **used)
{
    size_t n = strlen(sql), q = 0;
    for (size_t i = 0; i < n; i++)
        q += sql[i] == '?';
    char *out = malloc(n + q * 6 + 1);
    int *nums = malloc((q ? q : 1) * sizeof *nums);
    if (!out || !nums) {
        free(out);
        free(nums);
        return NULL;
    }
    size_t nn = 0;
    char *o = out;
    char quote = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = sql[i];
        if (quote) {
            if (c == quote)
                quote = 0;
            *o++ = c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            *o++ = c;
        } else if (c == '?') {
            if (sql[i + 1] >= '0' && sql[i + 1] <= '9') {
                int num = 0;
                while (sql[i + 1] >= '0' && sql[i + 1] <= '9' && num < 100000)
                    num = num * 10 + (sql[++i] - '0');
                o += sprintf(o, "$%d", num);
                if (num > k)
                    k = num;
                nums[nn++] = num;
            } else {
                o += sprintf(o, "$%d", ++k);
                nums[nn++] = k;
            }
        } else {
            *o++ = c;
        }
    }
    *o = 0;
    *np = k;
    *used = NULL;
    if (k > 0) {
        *used = calloc((size_t)k, 1);
        if (!*used) {
            free(out);
            free(nums);
            return NULL;
        }
        for (size_t i = 0; i < nn; i++)
            if (nums[i] >= 1)
                (*used)[nums[i] - 1] = 1;
    }
    free(nums);
    return out;
}

static bl_st *st_new_pg(bl_db *db, const char *sql)
{
    bl_st *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->db = db;
    st->row = -1;
    st->sql = pg_rewrite(sql, &st->np, &st->used);
    if (!st->sql) {
        free(st);
        return NULL;
    }
    int n = st->np ? st->np : 1;
    st->pv = calloc((size_t)n, sizeof *st->pv);
    st->pl = calloc((size_t)n, sizeof *st->pl);
    st->pf = calloc((size_t)n, sizeof *st->pf);
    st->pbuf = calloc((size_t)n, sizeof *st->pbuf);
    st->pcap = calloc((size_t)n, sizeof *st->pcap);
    if (!st->sql || !st->pv || !st->pl || !st->pf || !st->pbuf || !st->pcap) {
        bl_st_free(st);
        return NULL;
    }
    snprintf(st->name, sizeof st->name, "bl%u", db->next_name++);
    return st;
}

void bl_st_free(bl_st *st)
{
    if (!st)
        return;
    sqlite3_finalize(st->sq);
    PQclear(st->res);
    for (int i = 0; i < st->np; i++)
        free(st->pbuf[i]);
    for (int i = 0; i < st->ncb; i++)
        free(st->cb[i].p);
    free(st->cb);
    free(st->pbuf);
    free(st->pcap);
    free(st->pv);
    free(st->pl);
    free(st->pf);
    free(st->sql);
    free(st->used);
    free(st);
}

static void pg_clear_bindings(bl_st *st)
{
    for (int i = 0; i < st->np; i++) {
        st->pv[i] = NULL;
        st->pl[i] = 0;
        st->pf[i] = 0;
    }
}

bl_st *bl_st_get2(bl_db *db, const char *sqlite_sql, const char *pg_sql)
{
    int free_slot = -1;
    for (int i = 0; i < BL_STMT_CACHE; i++) {
        if (db->cache[i].key == sqlite_sql) {
            bl_st *st = db->cache[i].st;
            if (st->sq) {
                sqlite3_reset(st->sq);
                sqlite3_clear_bindings(st->sq);
            } else {
                bl_st_reset(st);
                pg_clear_bindings(st);
            }
            return st;
        }
        if (!db->cache[i].key && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0) {
        /* never evicted (a caller may be stepping any cached statement);
         * refused, loudly: BL_STMT_CACHE must grow */
        fprintf(stderr, "beatline-server: the statement cache (%d) is full; not prepared: %.80s\n",
                BL_STMT_CACHE, sqlite_sql);
        if (db->pg)
            bl_db_set_pg_error(db, "statement cache full", NULL);
        return NULL;
    }
    bl_st *st;
    if (db->pg) {
        st = st_new_pg(db, pg_sql);
        if (!st) {
            bl_db_set_pg_error(db, "out of memory", NULL);
            return NULL;
        }
    } else {
        st = calloc(1, sizeof *st);
        if (!st)
            return NULL;
        st->db = db;
        if (sqlite3_prepare_v3(db->h, sqlite_sql, -1, SQLITE_PREPARE_PERSISTENT, &st->sq,
                               NULL) != SQLITE_OK) {
            free(st);
            return NULL;
        }
    }
    db->cache[free_slot].key = sqlite_sql;
    db->cache[free_slot].st = st;
    return st;
}

bl_st *bl_st_get(bl_db *db, const char *sql)
{
    return bl_st_get2(db, sql, sql);
}

/* PostgreSQL: parameter i's own text buffer holding s[0..n) and a NUL. */
static void pg_bind_text(bl_st *st, int i, const char *s, size_t n)
{
    if (i < 1 || i > st->np)
        return;
    i--;
    if (st->pcap[i] < n + 1) {
        size_t cap = n + 1 < 32 ? 32 : n + 1;
        char *p = realloc(st->pbuf[i], cap);
        if (!p) {
            /* the run fails with this message rather than sending NULL */
            st->pv[i] = NULL;
            st->pf[i] = -1;
            return;
        }
        st->pbuf[i] = p;
        st->pcap[i] = cap;
    }
    memcpy(st->pbuf[i], s, n);
    st->pbuf[i][n] = 0;
    st->pv[i] = st->pbuf[i];
    st->pl[i] = (int)n;
    st->pf[i] = 0;
}

void bl_st_int64(bl_st *st, int i, int64_t v)
{
    if (st->sq) {
        sqlite3_bind_int64(st->sq, i, v);
        return;
    }
    char b[24];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    pg_bind_text(st, i, b, (size_t)n);
}

void bl_st_double(bl_st *st, int i, double v)
{
    if (st->sq) {
        sqlite3_bind_double(st->sq, i, v);
        return;
    }
    char b[40];
    int n = snprintf(b, sizeof b, "%.17g", v);
    pg_bind_text(st, i, b, (size_t)n);
}

void bl_st_text(bl_st *st, int i, const char *s, int len)
{
    if (st->sq) {
        sqlite3_bind_text(st->sq, i, s, len, SQLITE_TRANSIENT);
        return;
    }
    if (!s) {
        bl_st_null(st, i);
        return;
    }
    pg_bind_text(st, i, s, len < 0 ? strlen(s) : (size_t)len);
}

void bl_st_blob(bl_st *st, int i, const void *p, size_t n)
{
    if (st->sq) {
        sqlite3_bind_blob64(st->sq, i, p ? p : "", (sqlite3_uint64)n, SQLITE_STATIC);
        return;
    }
    if (i < 1 || i > st->np)
        return;
    st->pv[i - 1] = p ? p : "";
    st->pl[i - 1] = (int)n;
    st->pf[i - 1] = 1;
}

void bl_st_null(bl_st *st, int i)
{
    if (st->sq) {
        sqlite3_bind_null(st->sq, i);
        return;
    }
    if (i < 1 || i > st->np)
        return;
    st->pv[i - 1] = NULL;
    st->pl[i - 1] = 0;
    st->pf[i - 1] = 0;
}

/* The primary message of a failed result ("column \"x\" does not exist"),
 * or the connection's message when there is no result. */
static const char *pg_msg(bl_db *db, const PGresult *r)
{
    const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    return m ? m : r ? PQresultErrorMessage(r) : PQerrorMessage(db->pg);
}

/* The parameters as sent, and the connection ready for a command:
 * BL_ST_DONE, or BL_ST_ERROR with the message recorded. */
static int pg_params(bl_st *st)
{
    bl_db *db = st->db;
    /* a parameter the SQL never names is declared text and sent as NULL
     * (whatever was bound: it is read by nothing) */
    for (int i = 0; i < st->np; i++)
        if (!st->used[i]) {
            st->pv[i] = NULL;
            st->pl[i] = 0;
            st->pf[i] = 0;
        }
    for (int i = 0; i < st->np; i++)
        if (st->pf[i] < 0) {
            bl_db_set_pg_error(db, "out of memory binding a parameter", NULL);
            return BL_ST_ERROR;
        }
    if (bl_db_pg_ready(db, 0) != 0)
        return BL_ST_ERROR;
    return BL_ST_DONE;
}

/* The statement prepared on the connection (once per session). */
static int pg_prepare(bl_st *st)
{
    bl_db *db = st->db;
    if (!st->prepared || st->epoch != db->epoch) {
        st->prepared = 0;
        Oid types[64], *tv = types;
        if (st->np > 64 && !(tv = calloc((size_t)st->np, sizeof *tv))) {
            bl_db_set_pg_error(db, "out of memory preparing a statement", NULL);
            return BL_ST_ERROR;
        }
        for (int i = 0; i < st->np; i++)
            tv[i] = st->used[i] ? 0 : 25; /* 0: inferred by the server; 25: text */
        PGresult *r = PQprepare(db->pg, st->name, st->sql, st->np, tv);
        bl_db_pg_after(db);
        if (tv != types)
            free(tv);
        int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            bl_db_set_pg_error(db, "prepare", pg_msg(db, r));
        PQclear(r);
        if (!ok)
            return BL_ST_ERROR;
        st->prepared = 1;
        st->epoch = db->epoch;
    }
    return BL_ST_DONE;
}

static int pg_run(bl_st *st)
{
    bl_db *db = st->db;
    if (pg_params(st) != BL_ST_DONE || pg_prepare(st) != BL_ST_DONE)
        return BL_ST_ERROR;
    PGresult *r = PQexecPrepared(db->pg, st->name, st->np, st->pv, st->pl, st->pf, 0);
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    bl_db_pg_after(db);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        bl_db_set_pg_error(db, NULL, pg_msg(db, r));
        PQclear(r);
        return BL_ST_ERROR;
    }
    st->res = r;
    st->nrows = s == PGRES_TUPLES_OK ? PQntuples(r) : 0;
    const char *ct = PQcmdTuples(r);
    st->changes = ct && *ct ? strtoll(ct, NULL, 10) : 0;
    st->row = -1;
    return BL_ST_DONE;
}

/* ---- streaming through a cursor ------------------------------------------
 * A statement marked by bl_st_stream runs as
 *   DECLARE blc<N> NO SCROLL CURSOR [WITH HOLD] FOR <its SQL>
 * and its rows come FETCH FORWARD <chunk> at a time, so the client holds
 * one chunk (one PGresult) at a time, never the whole result. Between two
 * FETCHes the connection is free: the caller may run other statements
 * while it reads the rows (as SQLite allows). Inside a transaction the
 * cursor reads the transaction's snapshot and goes with it; outside one it
 * is declared WITH HOLD (the server keeps the rows, spilling to disk past
 * work_mem, until CLOSE). Each DECLARE takes a new name, so a cursor this
 * file believes gone never collides with a new one. The cursor is closed
 * when the last row has been read (WITH HOLD; one inside a transaction is
 * left to it, read to its end), by bl_st_reset (a result abandoned
 * half-way), and at a re-get. */

/* 1 when the statement's cursor still exists on the server. */
static int pg_cursor_alive(const bl_st *st)
{
    const bl_db *db = st->db;
    return st->cur && st->cur_epoch == db->epoch && PQstatus(db->pg) == CONNECTION_OK &&
           !db->lost && (st->cur_hold || st->cur_gen == db->txn_gen);
}

/* Closes the statement's cursor when it still exists. A cursor left open
 * inside a failed transaction goes with its ROLLBACK; a WITH HOLD one
 * there is left to the session (closing it would fail: the transaction
 * accepts nothing but ROLLBACK). Errors are not reported (the statement's
 * own result, if any, has been). */
static void pg_cursor_close(bl_st *st)
{
    if (!st->cur)
        return;
    bl_db *db = st->db;
    if (pg_cursor_alive(st) && PQtransactionStatus(db->pg) != PQTRANS_INERROR) {
        char sql[48];
        snprintf(sql, sizeof sql, "CLOSE %s", st->cur_name);
        PGresult *r = PQexec(db->pg, sql);
        bl_db_pg_after(db);
        PQclear(r);
    }
    st->cur = 0;
    st->cur_end = 0;
}

/* A FETCH's rows become the current chunk (r owned by st now). The last
 * chunk (fewer rows than asked) of a cursor inside a transaction leaves
 * it open: its transaction closes it (no CLOSE round trip); a WITH HOLD
 * one is closed when its last row has been read. */
static void pg_take_chunk(bl_st *st, PGresult *r)
{
    st->res = r;
    st->nrows = PQntuples(r);
    st->row = -1;
    for (int i = 0; i < st->ncb; i++)
        st->cb[i].row = -1;
    st->cur_end = st->nrows < st->chunk;
    if (st->cur_end && !st->cur_hold)
        st->cur = 0;
}

/* The next chunk of rows into st->res (the previous one freed). */
static int pg_fetch(bl_st *st)
{
    bl_db *db = st->db;
    PQclear(st->res);
    st->res = NULL;
    st->row = -1;
    st->nrows = 0;
    for (int i = 0; i < st->ncb; i++)
        st->cb[i].row = -1;
    char sql[64];
    snprintf(sql, sizeof sql, "FETCH FORWARD %d FROM %s", st->chunk, st->cur_name);
    PGresult *r = PQexec(db->pg, sql);
    bl_db_pg_after(db);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        bl_db_set_pg_error(db, NULL, pg_msg(db, r));
        PQclear(r);
        pg_cursor_close(st);
        return BL_ST_ERROR;
    }
    pg_take_chunk(st, r);
    return BL_ST_DONE;
}

/* Declares the cursor with the bound parameters and fetches its first chunk. */
/* The statement's cursor is declared (WITH HOLD when `hold`). */
static void pg_cursor_opened(bl_st *st, int hold)
{
    st->cur = 1;
    st->cur_hold = hold;
    st->cur_end = 0;
    st->cur_epoch = st->db->epoch;
    st->cur_gen = st->db->txn_gen;
    st->changes = 0;
}

static int pg_declare(bl_st *st)
{
    bl_db *db = st->db;
    pg_cursor_close(st);
    if (pg_params(st) != BL_ST_DONE)
        return BL_ST_ERROR;
    int hold = PQtransactionStatus(db->pg) == PQTRANS_IDLE;
    snprintf(st->cur_name, sizeof st->cur_name, "blc%u", db->next_cursor++);
    const char *head = hold ? "NO SCROLL CURSOR WITH HOLD FOR " : "NO SCROLL CURSOR FOR ";
    size_t n = strlen(st->sql) + strlen(head) + sizeof st->cur_name + 16;
    char *sql = malloc(n);
    Oid types[64], *tv = types;
    if (st->np > 64)
        tv = calloc((size_t)st->np, sizeof *tv);
    if (!sql || !tv) {
        free(sql);
        if (tv != types)
            free(tv);
        bl_db_set_pg_error(db, "out of memory declaring a cursor", NULL);
        return BL_ST_ERROR;
    }
    snprintf(sql, n, "DECLARE %s %s%s", st->cur_name, head, st->sql);
    for (int i = 0; i < st->np; i++)
        tv[i] = st->used[i] ? 0 : 25; /* as pg_run's PQprepare */
    if (hold) {
        /* outside a transaction: alone, so that its implicit transaction
         * (which makes every row of a WITH HOLD cursor) ends before a FETCH
         * and any error shows here */
        PGresult *r = PQexecParams(db->pg, sql, st->np, tv, st->pv, st->pl, st->pf, 0);
        bl_db_pg_after(db);
        free(sql);
        if (tv != types)
            free(tv);
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
            bl_db_set_pg_error(db, NULL, pg_msg(db, r));
            PQclear(r);
            return BL_ST_ERROR;
        }
        PQclear(r);
        pg_cursor_opened(st, 1);
        return pg_fetch(st);
    }
    /* inside a transaction: DECLARE and the first FETCH in one round trip
     * (pipeline mode), so a result of at most one chunk costs what a plain
     * run costs */
    char fetch[64];
    snprintf(fetch, sizeof fetch, "FETCH FORWARD %d FROM %s", st->chunk, st->cur_name);
    PGresult *rd = NULL, *rf = NULL, *x;
    int sent = PQenterPipelineMode(db->pg) &&
               PQsendQueryParams(db->pg, sql, st->np, tv, st->pv, st->pl, st->pf, 0) &&
               PQsendQueryParams(db->pg, fetch, 0, NULL, NULL, NULL, NULL, 0) &&
               PQpipelineSync(db->pg);
    free(sql);
    if (tv != types)
        free(tv);
    int sync = 0;
    if (sent) {
        /* each query's result then NULL, then the sync's result */
        rd = PQgetResult(db->pg);
        while ((x = PQgetResult(db->pg)) != NULL)
            PQclear(x);
        rf = PQgetResult(db->pg);
        while ((x = PQgetResult(db->pg)) != NULL)
            PQclear(x);
        x = PQgetResult(db->pg);
        sync = x && PQresultStatus(x) == PGRES_PIPELINE_SYNC;
        PQclear(x);
    }
    if (!PQexitPipelineMode(db->pg)) {
        /* results still pending (a broken connection): dropped */
        for (int k = 0; k < 8 && !PQexitPipelineMode(db->pg); k++)
            while ((x = PQgetResult(db->pg)) != NULL)
                PQclear(x);
    }
    bl_db_pg_after(db);
    if (!sent || !sync || !rd || PQresultStatus(rd) != PGRES_COMMAND_OK) {
        bl_db_set_pg_error(db, NULL, pg_msg(db, sent && sync ? rd : NULL));
        PQclear(rd);
        PQclear(rf);
        return BL_ST_ERROR;
    }
    PQclear(rd);
    pg_cursor_opened(st, 0);
    if (!rf || PQresultStatus(rf) != PGRES_TUPLES_OK) {
        bl_db_set_pg_error(db, NULL, pg_msg(db, rf));
        PQclear(rf);
        pg_cursor_close(st);
        return BL_ST_ERROR;
    }
    pg_take_chunk(st, rf);
    return BL_ST_DONE;
}

static int pg_stream_step(bl_st *st)
{
    if (!st->started) {
        st->started = 1;
        if (pg_declare(st) != BL_ST_DONE)
            return BL_ST_ERROR;
    }
    for (;;) {
        if (st->res && st->row < st->nrows)
            st->row++;
        if (st->res && st->row < st->nrows)
            return BL_ST_ROW;
        if (!st->cur)
            return BL_ST_DONE; /* read to the end: closed */
        if (st->cur_end || !pg_cursor_alive(st)) {
            if (!st->cur_end) {
                /* its transaction ended or the connection was made again
                 * while the rows were being read: the rest is gone */
                st->cur = 0;
                bl_db_set_pg_error(st->db, "the cursor's transaction ended before its last row",
                                   NULL);
                return BL_ST_ERROR;
            }
            pg_cursor_close(st);
            return BL_ST_DONE;
        }
        if (pg_fetch(st) != BL_ST_DONE)
            return BL_ST_ERROR;
    }
}

/* ---- row by row (single-row mode) -----------------------------------------
 * For a statement no cursor can hold (a data-modifying one: UPDATE …
 * RETURNING): sent with PQsendQueryPrepared in libpq's single-row mode
 * (PQsetSingleRowMode; libpq here is 15, before chunked rows), each step
 * takes one row's result (PQgetResult). The statement runs to its end on
 * the server whatever the client reads; until its last result is taken
 * the connection takes no other command (bl_db_pg_ready refuses it), so
 * bl_st_reset of an unfinished one, an error and a re-get read and drop
 * the rest (one row at a time) until PQgetResult says NULL. */

/* Reads and drops whatever is left of the statement's results. */
static void pg_drain(bl_st *st)
{
    if (!st->cur)
        return;
    bl_db *db = st->db;
    PGresult *r;
    while ((r = PQgetResult(db->pg)) != NULL)
        PQclear(r);
    bl_db_pg_after(db);
    st->cur = 0;
    if (db->streaming == st)
        db->streaming = NULL;
}

static int pg_single_step(bl_st *st)
{
    bl_db *db = st->db;
    if (!st->started) {
        st->started = 1;
        st->changes = 0;
        if (pg_params(st) != BL_ST_DONE || pg_prepare(st) != BL_ST_DONE)
            return BL_ST_ERROR;
        if (!PQsendQueryPrepared(db->pg, st->name, st->np, st->pv, st->pl, st->pf, 0)) {
            bl_db_set_pg_error(db, NULL, PQerrorMessage(db->pg));
            bl_db_pg_after(db);
            return BL_ST_ERROR;
        }
        st->cur = 1;
        db->streaming = st;
        if (!PQsetSingleRowMode(db->pg)) { /* cannot fail right after the send */
            bl_db_set_pg_error(db, "cannot read the rows one by one", NULL);
            pg_drain(st);
            return BL_ST_ERROR;
        }
    }
    PQclear(st->res);
    st->res = NULL;
    st->row = -1;
    st->nrows = 0;
    for (int i = 0; i < st->ncb; i++)
        st->cb[i].row = -1;
    if (!st->cur)
        return BL_ST_DONE;
    PGresult *r = PQgetResult(db->pg);
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (s == PGRES_SINGLE_TUPLE) {
        st->res = r;
        st->nrows = 1;
        st->row = 0;
        return BL_ST_ROW;
    }
    /* the end: the last result (no row) or an error */
    int ok = s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
    if (ok) {
        const char *ct = PQcmdTuples(r);
        st->changes = ct && *ct ? strtoll(ct, NULL, 10) : 0;
    } else {
        bl_db_set_pg_error(db, NULL, pg_msg(db, r));
    }
    PQclear(r);
    pg_drain(st);
    return ok ? BL_ST_DONE : BL_ST_ERROR;
}

void bl_st_stream(bl_st *st, int rows)
{
    if (st->sq || rows < BL_ST_ROW_BY_ROW)
        return;
    st->chunk = rows;
}

int bl_st_step(bl_st *st)
{
    if (st->sq) {
        int rc = sqlite3_step(st->sq);
        return rc == SQLITE_ROW ? BL_ST_ROW : rc == SQLITE_DONE ? BL_ST_DONE : BL_ST_ERROR;
    }
    if (st->chunk > 0)
        return pg_stream_step(st);
    if (st->chunk == BL_ST_ROW_BY_ROW)
        return pg_single_step(st);
    if (!st->res && pg_run(st) != BL_ST_DONE)
        return BL_ST_ERROR;
    if (st->row < st->nrows)
        st->row++;
    return st->row < st->nrows ? BL_ST_ROW : BL_ST_DONE;
}

bl_err bl_st_done(bl_st *st)
{
    int rc = bl_st_step(st);
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

void bl_st_reset(bl_st *st)
{
    if (st->sq) {
        sqlite3_reset(st->sq);
        return;
    }
    if (st->chunk == BL_ST_ROW_BY_ROW)
        pg_drain(st); /* the rest of an abandoned one read and dropped */
    else
        pg_cursor_close(st); /* an abandoned stream: its cursor closed */
    st->started = 0;
    PQclear(st->res);
    st->res = NULL;
    st->row = -1;
    st->nrows = 0;
    for (int i = 0; i < st->ncb; i++)
        st->cb[i].row = -1;
}

int64_t bl_st_changes(bl_st *st)
{
    if (st->sq)
        return sqlite3_changes64(sqlite3_db_handle(st->sq));
    return st->changes;
}

/* PostgreSQL: the current row's value of column i, NULL for NULL or out of range. */
static const char *pg_val(bl_st *st, int i)
{
    if (!st->res || st->row < 0 || st->row >= st->nrows || i < 0 || i >= PQnfields(st->res) ||
        PQgetisnull(st->res, st->row, i))
        return NULL;
    return PQgetvalue(st->res, st->row, i);
}

int bl_st_is_null(bl_st *st, int i)
{
    if (st->sq)
        return sqlite3_column_type(st->sq, i) == SQLITE_NULL;
    return pg_val(st, i) == NULL;
}

int64_t bl_st_col_int64(bl_st *st, int i)
{
    if (st->sq)
        return sqlite3_column_int64(st->sq, i);
    const char *v = pg_val(st, i);
    if (!v)
        return 0;
    if (v[0] == 't' && !v[1])
        return 1;
    if (v[0] == 'f' && !v[1])
        return 0;
    errno = 0;
    long long x = strtoll(v, NULL, 10); /* saturates (ERANGE) past int64 */
    return (int64_t)x;
}

double bl_st_col_double(bl_st *st, int i)
{
    if (st->sq)
        return sqlite3_column_double(st->sq, i);
    const char *v = pg_val(st, i);
    return v ? strtod(v, NULL) : 0.0;
}

const char *bl_st_col_text(bl_st *st, int i)
{
    if (st->sq)
        return (const char *)sqlite3_column_text(st->sq, i);
    return pg_val(st, i);
}

const char *bl_st_col_str(bl_st *st, int i)
{
    const char *s = bl_st_col_text(st, i);
    return s ? s : "";
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* PostgreSQL: column i decoded from bytea's hex text form ("\x…") into its
 * buffer; text of another form is returned as it is. NULL for NULL. */
static colbuf *pg_blob(bl_st *st, int i, const char **raw, size_t *rawn)
{
    const char *v = pg_val(st, i);
    *raw = v;
    *rawn = v ? strlen(v) : 0;
    if (!v || v[0] != '\\' || v[1] != 'x')
        return NULL;
    if (i >= st->ncb) {
        int n = PQnfields(st->res);
        colbuf *cb = realloc(st->cb, (size_t)n * sizeof *cb);
        if (!cb)
            return NULL;
        for (int k = st->ncb; k < n; k++)
            cb[k] = (colbuf){ NULL, 0, 0, -1 };
        st->cb = cb;
        st->ncb = n;
    }
    colbuf *b = &st->cb[i];
    if (b->row == st->row)
        return b;
    size_t hex = *rawn - 2, n = hex / 2;
    if (b->cap < n + 1) {
        unsigned char *p = realloc(b->p, n + 1);
        if (!p)
            return NULL;
        b->p = p;
        b->cap = n + 1;
    }
    for (size_t k = 0; k < n; k++) {
        int hi = hexval((unsigned char)v[2 + 2 * k]), lo = hexval((unsigned char)v[3 + 2 * k]);
        if (hi < 0 || lo < 0)
            return NULL;
        b->p[k] = (unsigned char)(hi << 4 | lo);
    }
    b->p[n] = 0;
    b->n = n;
    b->row = st->row;
    return b;
}

const void *bl_st_col_blob(bl_st *st, int i)
{
    if (st->sq)
        return sqlite3_column_blob(st->sq, i);
    const char *raw;
    size_t rawn;
    colbuf *b = pg_blob(st, i, &raw, &rawn);
    if (b)
        return b->p;
    return raw && raw[0] == '\\' && raw[1] == 'x' ? NULL : raw;
}

size_t bl_st_col_bytes(bl_st *st, int i)
{
    if (st->sq)
        return (size_t)sqlite3_column_bytes(st->sq, i);
    const char *raw;
    size_t rawn;
    colbuf *b = pg_blob(st, i, &raw, &rawn);
    if (b)
        return b->n;
    return raw && raw[0] == '\\' && raw[1] == 'x' ? 0 : rawn;
}
