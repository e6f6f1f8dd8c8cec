/*
 * store_pg_test.c — the statement layer (store/stmt.h) and store/apps.h on
 * PostgreSQL (issue 19): `?` / `?NNN` parameters rewritten outside quotes
 * only, parameters the SQL never names, int64 edges, doubles, NULLs, bytea
 * with zero bytes, booleans, numeric sums past int64 saturating,
 * bl_st_changes, a failed statement aborting its transaction and the
 * rollback recovering, the statement cache, a lost connection (reconnected
 * outside a transaction, failing until the rollback inside one), and apps (create, list,
 * rotate-keys, quotas, key checks), methods rows written in chunks of arrays
 * (bl_wr_methods_put: names with quotes, backslashes, braces, commas,
 * "NULL", blanks and UTF-8 stored as given; a methodId given twice keeps
 * its last names, within a chunk and across chunks). Run by tests/unit/with_pg.sh, which
 * gives a fresh database's URL in BEATLINE_TEST_PG_DB; without it the test
 * is skipped (77).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/apps.h"
#include "store/db.h"
#include "store/internal.h"
#include "store/stmt.h"
#include "store/writer.h"
#include "testutil.h"

static bl_db *db;

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

static void setup(void)
{
    char err[512];
    const char *url = getenv("BEATLINE_TEST_PG_DB");
    ck_assert_ptr_nonnull(url);
    ck_assert_msg(bl_db_open(url, 0, &db, err, sizeof err) == BL_OK, "%s", err);
    ck_assert(bl_db_is_pg(db));
    exec_ok("CREATE TEMP TABLE t (k bigint PRIMARY KEY, v bigint, s text, b bytea, d double "
            "precision)");
    exec_ok("DELETE FROM app_keys");
    exec_ok("DELETE FROM apps WHERE id <> 0");
}

static void teardown(void)
{
    bl_db_close(db);
    db = NULL;
}

static bl_st *get_ok(const char *sql)
{
    bl_st *st = bl_st_get(db, sql);
    ck_assert_msg(st != NULL, "%s: %s", sql, bl_db_errmsg(db));
    return st;
}

static void row_ok(bl_st *st)
{
    int rc = bl_st_step(st);
    ck_assert_msg(rc == BL_ST_ROW, "step %d: %s", rc, bl_db_errmsg(db));
}

/* `?` inside quotes stays; `?NNN` and bare `?` number as in SQLite. */
START_TEST(params_rewritten_outside_quotes)
{
    bl_st *st = get_ok("SELECT CAST(? AS bigint) AS \"a?b\", '?', 'it''s ?' || CAST(? AS text), "
                       "CAST(?1 AS bigint) + 1, '\"?\"'");
    bl_st_int64(st, 1, 5);
    bl_st_text(st, 2, "hi", -1);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 5);
    ck_assert_str_eq(bl_st_col_text(st, 1), "?");
    ck_assert_str_eq(bl_st_col_text(st, 2), "it's ?hi");
    ck_assert_int_eq(bl_st_col_int64(st, 3), 6);
    ck_assert_str_eq(bl_st_col_text(st, 4), "\"?\"");
    ck_assert_int_eq(bl_st_step(st), BL_ST_DONE);
    bl_st_reset(st);

    /* a bare ? after ?3 is ?4 */
    st = get_ok("SELECT CAST(?3 AS bigint), CAST(? AS bigint), CAST(?2 AS text)");
    bl_st_int64(st, 3, 30);
    bl_st_int64(st, 4, 40);
    bl_st_text(st, 2, "two", 3);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 30);
    ck_assert_int_eq(bl_st_col_int64(st, 1), 40);
    ck_assert_str_eq(bl_st_col_text(st, 2), "two");
    bl_st_reset(st);
}
END_TEST

/* Parameters the SQL never names (SQLite allows ?1, ?2, ?4 without ?3):
 * bound or not, they change nothing. */
START_TEST(unnamed_parameter_gap)
{
    bl_st *st = get_ok("SELECT CAST(?1 AS bigint) + CAST(?4 AS bigint)");
    bl_st_int64(st, 1, 1);
    bl_st_int64(st, 4, 4);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 5);
    bl_st_reset(st);
    bl_st_text(st, 2, "x\\y", -1); /* any value, even one no type would take */
    bl_st_blob(st, 3, "\xff\0\xfe", 3);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 5);
    bl_st_reset(st);
}
END_TEST

START_TEST(int64_edges)
{
    static const int64_t v[] = { INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX };
    bl_st *ins = get_ok("INSERT INTO t(k, v) VALUES (?, ?)");
    for (int i = 0; i < 7; i++) {
        bl_st_int64(ins, 1, i);
        bl_st_int64(ins, 2, v[i]);
        ck_assert_msg(bl_st_done(ins) == BL_OK, "%s", bl_db_errmsg(db));
    }
    bl_st *st = get_ok("SELECT v, CAST(? AS bigint) FROM t WHERE k = ?2");
    for (int i = 0; i < 7; i++) {
        bl_st_reset(st);
        bl_st_int64(st, 1, v[i]);
        bl_st_int64(st, 2, i);
        row_ok(st);
        ck_assert(bl_st_col_int64(st, 0) == v[i]);
        ck_assert(bl_st_col_int64(st, 1) == v[i]);
        ck_assert(!bl_st_is_null(st, 0));
    }
    bl_st_reset(st);
    /* a bound value is compared as a bigint, not as text */
    st = get_ok("SELECT count(*) FROM t WHERE v < ?");
    bl_st_int64(st, 1, 0);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 3);
    bl_st_reset(st);
}
END_TEST

START_TEST(doubles)
{
    static const double v[] = { 0.1, -2.5e300, 1e-320, 123456789.125 };
    bl_st *st = get_ok("SELECT CAST(? AS double precision)");
    for (int i = 0; i < 4; i++) {
        bl_st_double(st, 1, v[i]);
        row_ok(st);
        ck_assert(bl_st_col_double(st, 0) == v[i]);
        bl_st_reset(st);
    }
    bl_st_double(st, 1, 1.0 / 0.0);
    row_ok(st);
    ck_assert(bl_st_col_double(st, 0) == 1.0 / 0.0);
    bl_st_reset(st);
}
END_TEST

START_TEST(nulls)
{
    bl_st *st = get_ok("SELECT CAST(? AS bigint), CAST(? AS text), CAST(? AS bytea), "
                       "CAST(? AS double precision), CAST(? AS text)");
    bl_st_null(st, 1);
    bl_st_null(st, 2);
    bl_st_null(st, 3);
    bl_st_null(st, 4);
    bl_st_text(st, 5, NULL, -1); /* NULL text is NULL */
    row_ok(st);
    for (int i = 0; i < 5; i++)
        ck_assert(bl_st_is_null(st, i));
    ck_assert_int_eq(bl_st_col_int64(st, 0), 0);
    ck_assert_ptr_null(bl_st_col_text(st, 1));
    ck_assert_str_eq(bl_st_col_str(st, 1), "");
    ck_assert_ptr_null(bl_st_col_blob(st, 2));
    ck_assert_uint_eq(bl_st_col_bytes(st, 2), 0);
    ck_assert(bl_st_col_double(st, 3) == 0.0);
    bl_st_reset(st);
    /* a fresh get clears the bindings: unbound is NULL */
    st = get_ok("SELECT CAST(? AS bigint), CAST(? AS text), CAST(? AS bytea), "
                "CAST(? AS double precision), CAST(? AS text)");
    row_ok(st);
    ck_assert(bl_st_is_null(st, 0) && bl_st_is_null(st, 4));
    bl_st_reset(st);
    /* '' is not NULL */
    st = get_ok("SELECT CAST(? AS text)");
    bl_st_text(st, 1, "", 0);
    row_ok(st);
    ck_assert(!bl_st_is_null(st, 0));
    ck_assert_str_eq(bl_st_col_text(st, 0), "");
    bl_st_reset(st);
}
END_TEST

START_TEST(bytea_round_trip)
{
    unsigned char bin[300];
    for (int i = 0; i < 300; i++)
        bin[i] = (unsigned char)(i % 3 == 0 ? 0 : (i * 37) & 0xff);
    bl_st *ins = get_ok("INSERT INTO t(k, b) VALUES (?, ?)");
    bl_st_int64(ins, 1, 1);
    bl_st_blob(ins, 2, bin, sizeof bin);
    ck_assert_msg(bl_st_done(ins) == BL_OK, "%s", bl_db_errmsg(db));
    bl_st_int64(ins, 1, 2);
    bl_st_blob(ins, 2, NULL, 0); /* an empty blob, not NULL */
    ck_assert_msg(bl_st_done(ins) == BL_OK, "%s", bl_db_errmsg(db));
    bl_st *st = get_ok("SELECT b, length(b), b IS NULL FROM t WHERE k = ? ");
    bl_st_int64(st, 1, 1);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 1), 300);
    ck_assert_uint_eq(bl_st_col_bytes(st, 0), 300);
    ck_assert(memcmp(bl_st_col_blob(st, 0), bin, 300) == 0);
    /* read twice: the same bytes */
    ck_assert(memcmp(bl_st_col_blob(st, 0), bin, 300) == 0);
    bl_st_reset(st);
    bl_st_int64(st, 1, 2);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 1), 0);
    ck_assert_int_eq(bl_st_col_int64(st, 2), 0);
    ck_assert(!bl_st_is_null(st, 0));
    ck_assert_uint_eq(bl_st_col_bytes(st, 0), 0);
    bl_st_reset(st);
    /* several rows, each decoded for itself */
    st = get_ok("SELECT decode(x, 'hex') FROM (VALUES ('00ff'), ('0102'), ('')) v(x)");
    row_ok(st);
    ck_assert_uint_eq(bl_st_col_bytes(st, 0), 2);
    ck_assert(memcmp(bl_st_col_blob(st, 0), "\x00\xff", 2) == 0);
    row_ok(st);
    ck_assert(memcmp(bl_st_col_blob(st, 0), "\x01\x02", 2) == 0);
    row_ok(st);
    ck_assert_uint_eq(bl_st_col_bytes(st, 0), 0);
    ck_assert_int_eq(bl_st_step(st), BL_ST_DONE);
    bl_st_reset(st);
}
END_TEST

START_TEST(booleans)
{
    bl_st *st = get_ok("SELECT true, false, 1 = 1, CAST(NULL AS boolean), "
                       "CAST(? AS bigint) IS NULL");
    bl_st_null(st, 1);
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 1);
    ck_assert_int_eq(bl_st_col_int64(st, 1), 0);
    ck_assert_int_eq(bl_st_col_int64(st, 2), 1);
    ck_assert_int_eq(bl_st_col_int64(st, 3), 0);
    ck_assert(bl_st_is_null(st, 3));
    ck_assert_int_eq(bl_st_col_int64(st, 4), 1);
    bl_st_reset(st);
}
END_TEST

/* PostgreSQL's sum(bigint) is numeric: exact within int64, saturating past */
START_TEST(numeric_sums_saturate)
{
    exec_ok("INSERT INTO t(k, v) VALUES (1, 9223372036854775807), (2, 10), "
            "(3, -9223372036854775807), (4, -9223372036854775807)");
    bl_st *st = get_ok("SELECT sum(v) FROM t WHERE k IN (?, ?)");
    bl_st_int64(st, 1, 1);
    bl_st_int64(st, 2, 2);
    row_ok(st);
    ck_assert(bl_st_col_int64(st, 0) == INT64_MAX);
    bl_st_reset(st);
    bl_st_int64(st, 1, 3);
    bl_st_int64(st, 2, 4);
    row_ok(st);
    ck_assert(bl_st_col_int64(st, 0) == INT64_MIN);
    bl_st_reset(st);
    bl_st_int64(st, 1, 1);
    bl_st_int64(st, 2, 3);
    row_ok(st);
    ck_assert(bl_st_col_int64(st, 0) == 0);
    bl_st_reset(st);
    st = get_ok("SELECT COALESCE(sum(v), 0), sum(v) FROM t WHERE k < 0");
    row_ok(st);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 0);
    ck_assert(bl_st_is_null(st, 1));
    bl_st_reset(st);
    /* a fitting sum past 2^53 stays exact (no trip through a double) */
    st = get_ok("SELECT sum(x) FROM (VALUES (9007199254740993), (2)) v(x)");
    row_ok(st);
    ck_assert(bl_st_col_int64(st, 0) == 9007199254740995ll);
    bl_st_reset(st);
}
END_TEST

START_TEST(changes)
{
    bl_st *ins = get_ok("INSERT INTO t(k, v) SELECT g, g FROM generate_series(1, CAST(? AS "
                        "bigint)) g");
    bl_st_int64(ins, 1, 3);
    ck_assert_int_eq(bl_st_done(ins), BL_OK);
    ck_assert_int_eq(bl_st_changes(ins), 3);
    bl_st *up = get_ok("UPDATE t SET v = v + 1 WHERE k >= ?");
    bl_st_int64(up, 1, 2);
    ck_assert_int_eq(bl_st_done(up), BL_OK);
    ck_assert_int_eq(bl_st_changes(up), 2);
    bl_st *del = get_ok("DELETE FROM t WHERE k > ?");
    bl_st_int64(del, 1, 100);
    ck_assert_int_eq(bl_st_done(del), BL_OK);
    ck_assert_int_eq(bl_st_changes(del), 0);
    bl_st *ups = get_ok("INSERT INTO t(k, v) VALUES (?, 0) ON CONFLICT (k) DO NOTHING");
    bl_st_int64(ups, 1, 1);
    ck_assert_int_eq(bl_st_done(ups), BL_OK);
    ck_assert_int_eq(bl_st_changes(ups), 0);
    /* RETURNING: rows come back, changes count them */
    bl_st *ret = get_ok("UPDATE t SET v = 7 WHERE k <= ? RETURNING k");
    bl_st_int64(ret, 1, 2);
    row_ok(ret);
    row_ok(ret);
    ck_assert_int_eq(bl_st_step(ret), BL_ST_DONE);
    ck_assert_int_eq(bl_st_changes(ret), 2);
    bl_st_reset(ret);
}
END_TEST

/* A failed statement aborts the transaction (as the callers expect), the
 * rollback undoes it, and the connection and its statements work again. */
START_TEST(failure_aborts_and_rollback_recovers)
{
    bl_st *ins = get_ok("INSERT INTO t(k, v) VALUES (?, ?)");
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    bl_st_int64(ins, 1, 1);
    bl_st_int64(ins, 2, 1);
    ck_assert_int_eq(bl_st_done(ins), BL_OK);
    bl_st_int64(ins, 1, 1); /* duplicate key */
    bl_st_int64(ins, 2, 2);
    ck_assert_int_eq(bl_st_done(ins), BL_EIO);
    ck_assert_msg(strstr(bl_db_errmsg(db), "duplicate key") != NULL, "%s", bl_db_errmsg(db));
    /* the transaction is aborted: every statement fails until the rollback */
    bl_st *cnt = get_ok("SELECT count(*) FROM t");
    ck_assert_int_eq(bl_st_step(cnt), BL_ST_ERROR);
    ck_assert_msg(strstr(bl_db_errmsg(db), "aborted") != NULL, "%s", bl_db_errmsg(db));
    bl_st_reset(cnt);
    /* PostgreSQL turns the COMMIT into a rollback (its tag says ROLLBACK):
     * nothing was committed, and the caller hears it */
    ck_assert_int_eq(bl_db_commit(db), BL_EIO);
    ck_assert_msg(strstr(bl_db_errmsg(db), "rolled back, not committed") != NULL, "%s",
                  bl_db_errmsg(db));
    cnt = get_ok("SELECT count(*) FROM t");
    row_ok(cnt);
    ck_assert_int_eq(bl_st_col_int64(cnt, 0), 0);
    bl_st_reset(cnt);

    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    bl_st_int64(ins, 1, 2);
    bl_st_int64(ins, 2, 2);
    ck_assert_int_eq(bl_st_done(ins), BL_OK);
    bl_st *bad = get_ok("SELECT 1 / CAST(? AS bigint)");
    bl_st_int64(bad, 1, 0);
    ck_assert_int_eq(bl_st_step(bad), BL_ST_ERROR);
    ck_assert_msg(strstr(bl_db_errmsg(db), "division by zero") != NULL, "%s",
                  bl_db_errmsg(db));
    bl_st_reset(bad);
    bl_db_rollback(db);
    cnt = get_ok("SELECT count(*) FROM t");
    row_ok(cnt);
    ck_assert_int_eq(bl_st_col_int64(cnt, 0), 0);
    bl_st_reset(cnt);
    /* the failed statement runs again, the insert too */
    bl_st_int64(bad, 1, 2);
    row_ok(bad);
    ck_assert_int_eq(bl_st_col_int64(bad, 0), 0);
    bl_st_reset(bad);
    bl_st_int64(ins, 1, 3);
    bl_st_int64(ins, 2, 3);
    ck_assert_int_eq(bl_st_done(ins), BL_OK);

    /* SQL the server refuses: an error at the first step, every time */
    bl_st *syn = get_ok("SELEC nothing");
    ck_assert_int_eq(bl_st_step(syn), BL_ST_ERROR);
    ck_assert_msg(strstr(bl_db_errmsg(db), "syntax error") != NULL, "%s", bl_db_errmsg(db));
    bl_st_reset(syn);
    ck_assert_int_eq(bl_st_step(syn), BL_ST_ERROR);
    bl_st_reset(syn);
    ck_assert_int_eq(bl_db_ping(db), BL_OK);

    /* a statement first prepared inside an aborted transaction fails, and
     * works after the rollback */
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_st_step(syn), BL_ST_ERROR);
    bl_st_reset(syn);
    bl_st *late = get_ok("SELECT k FROM t WHERE k = ?");
    bl_st_int64(late, 1, 3);
    ck_assert_int_eq(bl_st_step(late), BL_ST_ERROR);
    bl_st_reset(late);
    bl_db_rollback(db);
    bl_st_int64(late, 1, 3);
    row_ok(late);
    ck_assert_int_eq(bl_st_col_int64(late, 0), 3);
    bl_st_reset(late);
}
END_TEST

/* Server-side cursors open on the connection (pg_cursors). */
static int64_t open_cursors(void)
{
    bl_st *c = get_ok("SELECT count(*) FROM pg_cursors WHERE name LIKE 'blc%'");
    row_ok(c);
    int64_t n = bl_st_col_int64(c, 0);
    bl_st_reset(c);
    return n;
}

static const char many_sql[] = "SELECT g, repeat('x', 100) FROM generate_series(1, ?) g";

/* Reads rows of many_sql up to `upto` (checking each), with `chunk` rows a
 * FETCH; 1 when the result ended before. */
static int read_many(bl_st *st, int64_t upto)
{
    for (int64_t i = 1; i <= upto; i++) {
        int rc = bl_st_step(st);
        if (rc == BL_ST_DONE)
            return 1;
        ck_assert_msg(rc == BL_ST_ROW, "row %lld: %d %s", (long long)i, rc, bl_db_errmsg(db));
        ck_assert_int_eq(bl_st_col_int64(st, 0), i);
        ck_assert_uint_eq(strlen(bl_st_col_str(st, 1)), 100);
    }
    return 0;
}

/* bl_st_stream: a large result comes through a cursor a chunk at a time
 * (never whole in the client), other statements run between its rows, and
 * a result abandoned half-way, failed half-way or read to its end leaves
 * the connection usable and no cursor behind; the statement runs again. */
START_TEST(streamed_rows)
{
    /* outside a transaction (a WITH HOLD cursor) */
    bl_st *st = get_ok(many_sql);
    bl_st_stream(st, 1000);
    bl_st_int64(st, 1, 100000);
    ck_assert_int_eq(read_many(st, 25000), 0);
    ck_assert_int_eq(open_cursors(), 1); /* streamed: a cursor, not one result */
    bl_st *ins = get_ok("INSERT INTO t(k, v) VALUES (?, ?)");
    bl_st_int64(ins, 1, 1);
    bl_st_int64(ins, 2, 1);
    ck_assert_int_eq(bl_st_done(ins), BL_OK); /* a write between two rows */
    for (int64_t i = 25001; i <= 50000; i++) {
        row_ok(st);
        ck_assert_int_eq(bl_st_col_int64(st, 0), i);
    }
    bl_st_reset(st); /* abandoned half-way */
    ck_assert_int_eq(open_cursors(), 0);
    ck_assert_int_eq(bl_db_ping(db), BL_OK);
    /* the same statement again (a re-get resets it), read to its end */
    st = get_ok(many_sql);
    bl_st_int64(st, 1, 100000);
    ck_assert_int_eq(read_many(st, 100000), 0);
    ck_assert_int_eq(bl_st_step(st), BL_ST_DONE);
    ck_assert_int_eq(bl_st_step(st), BL_ST_DONE);
    bl_st_reset(st);
    ck_assert_int_eq(open_cursors(), 0);
    /* an exact multiple of the chunk, and no row at all */
    bl_st_int64(st, 1, 3000);
    ck_assert_int_eq(read_many(st, 3001), 1);
    bl_st_reset(st);
    bl_st_int64(st, 1, 0);
    ck_assert_int_eq(bl_st_step(st), BL_ST_DONE);
    bl_st_reset(st);
    ck_assert_int_eq(open_cursors(), 0);

    /* inside a transaction: abandoned, then the transaction goes on */
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    bl_st_int64(st, 1, 100000);
    ck_assert_int_eq(read_many(st, 1500), 0);
    ck_assert_int_eq(open_cursors(), 1);
    bl_st_reset(st);
    ck_assert_int_eq(open_cursors(), 0);
    bl_st_int64(ins, 1, 2);
    bl_st_int64(ins, 2, 2);
    ck_assert_int_eq(bl_st_done(ins), BL_OK);
    bl_st_int64(st, 1, 2500); /* the statement again in the same transaction */
    ck_assert_int_eq(read_many(st, 2501), 1);
    bl_st_reset(st);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    bl_st *cnt = get_ok("SELECT count(*) FROM t");
    row_ok(cnt);
    ck_assert_int_eq(bl_st_col_int64(cnt, 0), 2);
    bl_st_reset(cnt);

    /* an error half-way (a row past the first chunk divides by zero) */
    static const char bad_sql[] =
        "SELECT CASE WHEN g > 2500 THEN 1 / (g - g) ELSE g END FROM generate_series(1, 5000) g";
    bl_st *bad = get_ok(bad_sql);
    bl_st_stream(bad, 1000);
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    int rc, rows = 0;
    while ((rc = bl_st_step(bad)) == BL_ST_ROW)
        rows++;
    ck_assert_int_eq(rc, BL_ST_ERROR);
    ck_assert_int_eq(rows, 2000); /* the chunks before the failing one */
    ck_assert_msg(strstr(bl_db_errmsg(db), "division by zero") != NULL, "%s", bl_db_errmsg(db));
    bl_st_reset(bad);
    bl_db_rollback(db);
    ck_assert_int_eq(open_cursors(), 0);
    bl_st_int64(st, 1, 1200);
    ck_assert_int_eq(read_many(st, 1201), 1);
    bl_st_reset(st);
    /* outside a transaction the cursor's rows are made at its DECLARE: the
     * error comes at the first step */
    ck_assert_int_eq(bl_st_step(bad), BL_ST_ERROR);
    bl_st_reset(bad);
    ck_assert_int_eq(open_cursors(), 0);
    ck_assert_int_eq(bl_db_ping(db), BL_OK);

    /* a transaction ended while its cursor was being read: an error, not a
     * silently short result */
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    bl_st_int64(st, 1, 5000);
    ck_assert_int_eq(read_many(st, 10), 0);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    rows = 10;
    while ((rc = bl_st_step(st)) == BL_ST_ROW)
        rows++;
    ck_assert_int_eq(rc, BL_ST_ERROR);
    ck_assert_int_eq(rows, 1000); /* the chunk in hand */
    bl_st_reset(st);
    ck_assert_int_eq(open_cursors(), 0);
    bl_st_int64(st, 1, 10);
    ck_assert_int_eq(read_many(st, 11), 1);
    bl_st_reset(st);
}
END_TEST

/* BL_ST_ROW_BY_ROW (single-row mode): an UPDATE … RETURNING read one row
 * at a time; abandoned half-way it still updated every row, and the
 * connection takes the next statement; an error half-way leaves it usable
 * too; while rows are pending no other statement runs. */
START_TEST(row_by_row)
{
    exec_ok("INSERT INTO t(k, v) SELECT g, 0 FROM generate_series(1, 20000) g");
    static const char upd_sql[] = "UPDATE t SET v = v + 1 WHERE k <= ? RETURNING k, v";
    bl_st *st = get_ok(upd_sql);
    bl_st_stream(st, BL_ST_ROW_BY_ROW);
    bl_st_int64(st, 1, 20000);
    for (int i = 0; i < 10000; i++) {
        row_ok(st);
        ck_assert_int_eq(bl_st_col_int64(st, 1), 1);
    }
    /* another statement now: refused, the connection is reading rows */
    bl_st *cnt = get_ok("SELECT count(*) FROM t WHERE v = 1");
    ck_assert_int_eq(bl_st_step(cnt), BL_ST_ERROR);
    ck_assert_msg(strstr(bl_db_errmsg(db), "still being read") != NULL, "%s", bl_db_errmsg(db));
    bl_st_reset(cnt);
    bl_st_reset(st); /* abandoned: the rest read and dropped */
    row_ok(cnt);
    ck_assert_int_eq(bl_st_col_int64(cnt, 0), 20000); /* the statement ran to its end */
    bl_st_reset(cnt);
    /* read to the end, then re-got half-way */
    st = get_ok(upd_sql);
    bl_st_int64(st, 1, 3);
    int rc, rows = 0;
    while ((rc = bl_st_step(st)) == BL_ST_ROW)
        rows++;
    ck_assert_int_eq(rc, BL_ST_DONE);
    ck_assert_int_eq(rows, 3);
    ck_assert_int_eq(bl_st_changes(st), 3);
    ck_assert_int_eq(bl_st_step(st), BL_ST_DONE);
    bl_st_reset(st);
    bl_st_int64(st, 1, 5000);
    row_ok(st);
    st = get_ok(upd_sql); /* a re-get resets it */
    ck_assert_int_eq(bl_db_ping(db), BL_OK);
    /* an error half-way (rows come before it), inside a transaction */
    static const char bad_sql[] = "UPDATE t SET v = 1 / (20001 - k - CAST(? AS bigint)) "
                                  "WHERE k <= 20000 RETURNING k";
    bl_st *bad = get_ok(bad_sql);
    bl_st_stream(bad, BL_ST_ROW_BY_ROW);
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    bl_st_int64(bad, 1, 0); /* k = 20001 never comes: no error */
    while ((rc = bl_st_step(bad)) == BL_ST_ROW)
        ;
    ck_assert_int_eq(rc, BL_ST_DONE);
    bl_st_reset(bad);
    bl_st_int64(bad, 1, 1); /* k = 20000: division by zero at the last row */
    while ((rc = bl_st_step(bad)) == BL_ST_ROW)
        ;
    ck_assert_int_eq(rc, BL_ST_ERROR);
    ck_assert_msg(strstr(bl_db_errmsg(db), "division by zero") != NULL, "%s", bl_db_errmsg(db));
    bl_st_reset(bad);
    bl_db_rollback(db);
    row_ok(cnt);
    /* rolled back: v is 1 again but for k <= 5000 (the abandoned run of
     * k <= 5000 updated all of them) */
    ck_assert_int_eq(bl_st_col_int64(cnt, 0), 15000);
    bl_st_reset(cnt);
    ck_assert_int_eq(bl_db_ping(db), BL_OK);
}
END_TEST

static const char cached_sql[] = "SELECT CAST(? AS bigint) * 2";

/* The cache key is the SQL's pointer: the same statement back, reset and
 * its bindings cleared; it runs again and again (prepared once). */
START_TEST(statement_cache)
{
    bl_st *a = get_ok(cached_sql);
    for (int i = 0; i < 200; i++) {
        bl_st *b = get_ok(cached_sql);
        ck_assert_ptr_eq(a, b);
        bl_st_int64(b, 1, i);
        row_ok(b);
        ck_assert_int_eq(bl_st_col_int64(b, 0), 2 * i);
        /* left mid-rows: the next get resets it */
    }
    bl_st *c = get_ok(cached_sql);
    row_ok(c); /* bindings cleared: NULL * 2 */
    ck_assert(bl_st_is_null(c, 0));
    bl_st_reset(c);
    /* the same text at another address is another statement */
    char copy[sizeof cached_sql];
    memcpy(copy, cached_sql, sizeof copy);
    bl_st *d = get_ok(copy);
    ck_assert_ptr_ne(a, d);
    bl_st_int64(d, 1, 21);
    row_ok(d);
    ck_assert_int_eq(bl_st_col_int64(d, 0), 42);
    bl_st_reset(d);
    /* one prepared statement on the server per cached statement */
    bl_st *n = get_ok("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE "
                      "'SELECT CAST($1 AS bigint) * 2'");
    row_ok(n);
    ck_assert_int_eq(bl_st_col_int64(n, 0), 2);
    bl_st_reset(n);
}
END_TEST

/* Ends this connection's server process from another connection (as a
 * PostgreSQL restart would). */
static void kill_backend(void)
{
    bl_st *st = get_ok("SELECT pg_backend_pid()");
    row_ok(st);
    int64_t pid = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    char err[512];
    bl_db *other;
    ck_assert_msg(bl_db_open(getenv("BEATLINE_TEST_PG_DB"), 0, &other, err, sizeof err) == BL_OK,
                  "%s", err);
    bl_st *k = bl_st_get(other, "SELECT pg_terminate_backend(CAST(? AS integer))");
    ck_assert_ptr_nonnull(k);
    bl_st_int64(k, 1, pid);
    ck_assert_int_eq(bl_st_step(k), BL_ST_ROW);
    ck_assert_int_eq(bl_st_col_int64(k, 0), 1);
    bl_st_reset(k);
    /* bounded wait until the process is gone */
    bl_st *g = bl_st_get(other, "SELECT count(*) FROM pg_stat_activity WHERE pid = ?");
    for (int i = 0; i < 100; i++) {
        bl_st_int64(g, 1, pid);
        ck_assert_int_eq(bl_st_step(g), BL_ST_ROW);
        int64_t n = bl_st_col_int64(g, 0);
        bl_st_reset(g);
        if (n == 0)
            break;
        usleep(20000);
    }
    bl_db_close(other);
}

static const char plus1_sql[] = "SELECT CAST(? AS bigint) + 1";

/* A connection lost outside a transaction: the command that finds it
 * broken fails, the next ones reconnect (statements prepared again). */
START_TEST(reconnect_when_idle)
{
    bl_st *st = get_ok(plus1_sql);
    bl_st_int64(st, 1, 1);
    row_ok(st);
    bl_st_reset(st);
    kill_backend();
    bl_st_int64(st, 1, 2);
    ck_assert_int_eq(bl_st_step(st), BL_ST_ERROR); /* found broken */
    bl_st_reset(st);
    bl_st_int64(st, 1, 3);
    row_ok(st); /* reconnected, prepared again */
    ck_assert_int_eq(bl_st_col_int64(st, 0), 4);
    bl_st_reset(st);
    ck_assert_int_eq(bl_db_ping(db), BL_OK);
    /* bl_db_exec too */
    kill_backend();
    ck_assert_int_eq(bl_db_exec(db, "SELECT 1"), BL_EIO);
    ck_assert_int_eq(bl_db_exec(db, "SELECT 1"), BL_OK);
    /* the session's settings are back */
    bl_st *tz = get_ok("SELECT current_setting('TimeZone')");
    row_ok(tz);
    ck_assert_str_eq(bl_st_col_text(tz, 0), "UTC");
    bl_st_reset(tz);
}
END_TEST

/* Lost inside a transaction: nothing after it runs on its own (it would
 * commit piecemeal) until the caller ends the transaction; COMMIT fails,
 * ROLLBACK succeeds, and the transaction's writes are gone. */
START_TEST(lost_inside_transaction)
{
    exec_ok("CREATE TABLE IF NOT EXISTS lost_t (k bigint)");
    exec_ok("DELETE FROM lost_t");
    bl_st *ins = get_ok("INSERT INTO lost_t(k) VALUES (?)");
    for (int end = 0; end < 2; end++) {
        ck_assert_int_eq(bl_db_begin(db), BL_OK);
        bl_st_int64(ins, 1, 1);
        ck_assert_int_eq(bl_st_done(ins), BL_OK);
        kill_backend();
        bl_st_int64(ins, 1, 2);
        ck_assert_int_eq(bl_st_done(ins), BL_EIO); /* found broken */
        bl_st_int64(ins, 1, 3);
        ck_assert_int_eq(bl_st_done(ins), BL_EIO); /* not run outside the transaction */
        ck_assert_msg(strstr(bl_db_errmsg(db), "lost inside a transaction") != NULL, "%s",
                      bl_db_errmsg(db));
        ck_assert_int_eq(bl_db_exec(db, "SELECT 1"), BL_EIO);
        if (end == 0) {
            ck_assert_int_eq(bl_db_commit(db), BL_EIO);
            ck_assert_msg(strstr(bl_db_errmsg(db), "not committed") != NULL, "%s",
                          bl_db_errmsg(db));
        } else {
            bl_db_rollback(db);
        }
        bl_st *n = get_ok("SELECT count(*) FROM lost_t");
        row_ok(n);
        ck_assert_int_eq(bl_st_col_int64(n, 0), 0);
        bl_st_reset(n);
    }
    /* and a transaction works again */
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    bl_st_int64(ins, 1, 9);
    ck_assert_int_eq(bl_st_done(ins), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    exec_ok("DROP TABLE lost_t");
}
END_TEST

static const char *const get2_sqlite = "SELECT 'sqlite'";

START_TEST(get2_picks_pg_text)
{
    bl_st *st = bl_st_get2(db, get2_sqlite, "SELECT 'postgresql'");
    ck_assert_ptr_nonnull(st);
    row_ok(st);
    ck_assert_str_eq(bl_st_col_text(st, 0), "postgresql");
    bl_st_reset(st);
}
END_TEST

START_TEST(apps_on_pg)
{
    char keys[3][64], keys2[3][64], keys3[3][64];
    int exists = -1;
    ck_assert_int_eq(bl_apps_create(db, "shop", keys, &exists), BL_OK);
    ck_assert_int_eq(exists, 0);
    ck_assert_int_eq(bl_apps_create(db, "shop", keys2, &exists), BL_EINVAL);
    ck_assert_int_eq(exists, 1);
    ck_assert_int_eq(bl_apps_create(db, "bad name", keys2, &exists), BL_EINVAL);
    ck_assert_int_eq(exists, 0);
    ck_assert_int_eq(bl_apps_create(db, "b2", keys2, &exists), BL_OK);
    int64_t id = 0, id2 = 0;
    ck_assert_int_eq(bl_apps_find(db, "shop", &id), BL_OK);
    ck_assert_int_eq(bl_apps_find(db, "b2", &id2), BL_OK);
    /* ids as SQLite hands them out: the refused create took none */
    ck_assert_int_eq(id2, id + 1);
    ck_assert_int_eq(bl_apps_find(db, "nope", &id2), BL_ENOTFOUND);

    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_apps_list_json(db, &b), BL_OK);
    ck_assert_msg(strstr(b.data, "{\"app\":\"b2\",") == b.data + 1, "%s", b.data);
    ck_assert_msg(strstr(b.data, "\"app\":\"shop\"") != NULL, "%s", b.data);
    ck_assert_msg(strstr(b.data, "\"builds\":0,\"keep_raw_days\":null,\"keep_days\":null}]"),
                  "%s", b.data);
    bl_buf_cleanup(&b);

    int64_t got = 0;
    ck_assert_int_eq(bl_apps_auth(db, "shop", keys[0], BL_ROLE_INGEST, &got), BL_OK);
    ck_assert_int_eq(got, id);
    ck_assert_int_eq(bl_apps_auth(db, "shop", keys[2], BL_ROLE_READ, &got), BL_OK);
    ck_assert_int_eq(bl_apps_auth(db, "shop", keys[2], BL_ROLE_UPLOAD, &got), BL_EINVAL);
    ck_assert_int_eq(bl_apps_auth(db, "b2", keys[2], BL_ROLE_READ, &got), BL_EINVAL);
    ck_assert_int_eq(bl_apps_auth(db, "shop", "blk_read_nope", BL_ROLE_READ, &got), BL_EINVAL);

    ck_assert_int_eq(bl_apps_rotate_keys(db, "shop", keys3), BL_OK);
    ck_assert_int_eq(bl_apps_auth(db, "shop", keys[2], BL_ROLE_READ, &got), BL_EINVAL);
    ck_assert_int_eq(bl_apps_auth(db, "shop", keys3[2], BL_ROLE_READ, &got), BL_OK);
    ck_assert_int_eq(bl_apps_rotate_keys(db, "nope", keys3), BL_ENOTFOUND);

    int64_t q[BL_APP_QUOTAS];
    ck_assert_int_eq(bl_apps_set_quota(db, "shop", 3, 7), BL_OK);
    ck_assert_int_eq(bl_apps_set_quota(db, "nope", 3, 7), BL_ENOTFOUND);
    ck_assert_int_eq(bl_apps_quotas(db, id, q), BL_OK);
    ck_assert_int_eq(q[0], -1);
    ck_assert_int_eq(q[3], 7);
    ck_assert_int_eq(bl_apps_set_quota(db, "shop", 3, -1), BL_OK);
    ck_assert_int_eq(bl_apps_quotas(db, id, q), BL_OK);
    ck_assert_int_eq(q[3], -1);
    ck_assert_int_eq(bl_apps_quotas(db, 999, q), BL_ENOTFOUND);
}
END_TEST

/* bl_wr_methods_put's rows: method i of 2,500, names made of awkward
 * texts; index 2500 gives methodId 7 again (across chunks), 2501 gives
 * 2100 again (in the second chunk) */
static const char *const awkward[] = { "a\"b", "c\\d", "{x,y}", "NULL", " sp ", "\xc3\xa9\xe6\xbc\xa2",
                                       "", "q\\\"}" };
#define MP_N 2502
static char mp_buf[4][64];

static int64_t mp_id(size_t i)
{
    return i == 2500 ? 7 : i == 2501 ? 2100 : (int64_t)i;
}

static bl_err mp_row(void *ctx, size_t i, bl_wr_method *out)
{
    (void)ctx;
    const char *w = awkward[i % 8];
    snprintf(mp_buf[0], 64, "%sC%zu", w, i);
    snprintf(mp_buf[1], 64, "m%zu%s", i, w);
    snprintf(mp_buf[2], 64, "(%s)V", w);
    snprintf(mp_buf[3], 64, "%s", w);
    *out = (bl_wr_method){ mp_id(i), mp_buf[0], mp_buf[1], mp_buf[2], mp_buf[3] };
    return BL_OK;
}

START_TEST(methods_put_in_chunks)
{
    exec_ok("INSERT INTO apps (id, name, created_at) VALUES (77, 'mp', 0)");
    exec_ok("INSERT INTO builds (id, app_id, name, created_at) VALUES (7700, 77, 'b', 0)");
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_msg(bl_wr_methods_put(db, 7700, MP_N, mp_row, NULL) == BL_OK, "%s",
                  bl_db_errmsg(db));
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    /* the last row given for each methodId */
    static size_t last[2500];
    for (size_t i = 0; i < MP_N; i++)
        last[mp_id(i)] = i;
    bl_st *st = get_ok("SELECT method_id, class, name, descriptor, source_file FROM methods "
                       "WHERE build_id = 7700 ORDER BY method_id");
    size_t n = 0;
    while (bl_st_step(st) == BL_ST_ROW) {
        ck_assert_int_lt(n, 2500);
        ck_assert_int_eq(bl_st_col_int64(st, 0), (int64_t)n);
        bl_wr_method m;
        mp_row(NULL, last[n], &m);
        ck_assert_str_eq(bl_st_col_str(st, 1), m.cls);
        ck_assert_str_eq(bl_st_col_str(st, 2), m.name);
        ck_assert_str_eq(bl_st_col_str(st, 3), m.descriptor);
        ck_assert_str_eq(bl_st_col_str(st, 4), m.source_file);
        n++;
    }
    bl_st_reset(st);
    ck_assert_int_eq((int)n, 2500);
    exec_ok("DELETE FROM methods WHERE build_id = 7700");
    exec_ok("DELETE FROM builds WHERE id = 7700");
}
END_TEST

int main(void)
{
    if (!getenv("BEATLINE_TEST_PG_DB")) {
        fprintf(stderr, "store_pg_test: no BEATLINE_TEST_PG_DB (run it with "
                        "tests/unit/with_pg.sh): skipped\n");
        return 77;
    }
    Suite *s = suite_create("store_pg");
    TCase *t = tcase_create("stmt");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, params_rewritten_outside_quotes);
    tcase_add_test(t, unnamed_parameter_gap);
    tcase_add_test(t, int64_edges);
    tcase_add_test(t, doubles);
    tcase_add_test(t, nulls);
    tcase_add_test(t, bytea_round_trip);
    tcase_add_test(t, booleans);
    tcase_add_test(t, numeric_sums_saturate);
    tcase_add_test(t, changes);
    tcase_add_test(t, failure_aborts_and_rollback_recovers);
    tcase_add_test(t, statement_cache);
    tcase_add_test(t, streamed_rows);
    tcase_add_test(t, row_by_row);
    tcase_add_test(t, get2_picks_pg_text);
    tcase_add_test(t, reconnect_when_idle);
    tcase_add_test(t, lost_inside_transaction);
    tcase_add_test(t, methods_put_in_chunks);
    suite_add_tcase(s, t);
    TCase *a = tcase_create("apps");
    tcase_add_checked_fixture(a, setup, teardown);
    tcase_add_test(a, apps_on_pg);
    suite_add_tcase(s, a);
    return tu_run(s);
}
