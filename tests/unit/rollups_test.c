/*
 * rollups_test.c — store/rollups.h and the slow-methods fast path: for every
 * build (and all builds), thread kind, sort, limit and many hour ranges
 * (whole days, edges inside days, single hours, nothing), the answer from the
 * rollups (bl_slow_methods) equals the answer computed from method_stats
 * alone (bl_slow_methods_scan) row for row: after several writer
 * transactions (new rows and growing ones), after a migration from schema 2
 * backfills them, after a re-symbolication renames methods, and after rows
 * are written or deleted behind the writer's back, and after a build
 * leaves its app. Each check first asserts
 * that the rollups are clean, so the fast path is what is compared.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agg/sketch.h"
#include "store/db.h"
#include "store/internal.h"
#include "store/retention.h"
#include "store/rollups.h"
#include "store/slow_methods.h"
#include "store/writer.h"
#include "flushgen.h"
#include "testutil.h"

#define H(n) ((int64_t)(n) * 3600000000ll)
#define BASE_HOUR (24 * 20000 + 5) /* 05:00 of a day */
#define HOURS 120                  /* five days and a bit */
#define METHODS 12                 /* methods rows per build */

static char dir[64];
static char path[128];
static bl_db *db;
static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

static int64_t count_of(const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(bl_db_handle(db), sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* apps 1 and 2; builds 1, 2 (app 1), 3 (app 2); per build METHODS methods
 * rows (row id = build * 100 + i): names repeat across builds, and in build
 * 1 rows 10 and 11 share one identity (two methodIds, same names). */
static void names_of(int build, int i, char *cls, char *name)
{
    int k = (build == 1 && i == 11) ? 10 : i;
    sprintf(cls, "com.C%d", k % 4);
    sprintf(name, "m%d", k);
}

static void schema_fixture(void)
{
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1), (2, 'b', 1)");
    exec_ok("INSERT INTO builds(id, app_id, name, created_at) VALUES "
            "(1, 1, '1.0', 1), (2, 1, '2.0', 2), (3, 2, 'x', 3)");
    for (int b = 1; b <= 3; b++)
        for (int i = 0; i < METHODS; i++) {
            char cls[32], name[32], sql[256];
            names_of(b, i, cls, name);
            snprintf(sql, sizeof sql,
                     "INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
                     "source_file) VALUES (%d, %d, %d, '%s', '%s', '()V', 'S.java')",
                     b * 100 + i, b, i, cls, name);
            exec_ok(sql);
        }
}

/* random stat rows of one flush */
typedef struct flush {
    bl_wr_stat s[64];
    bl_buf blob[64];
    size_t n;
} flush;

static void make_flush(flush *f, size_t n)
{
    f->n = n;
    for (size_t i = 0; i < n; i++)
        tu_flush_row(f->s, i, &f->blob[i], next, METHODS, BASE_HOUR, HOURS);
}

static void free_flush(flush *f)
{
    for (size_t i = 0; i < f->n; i++)
        bl_buf_cleanup(&f->blob[i]);
}

static void flush_row(void *ctx, size_t i, bl_wr_stat *out)
{
    *out = ((flush *)ctx)->s[i];
}

/* one writer transaction of n random rows, as pipeline/processor.c does */
static void write_txn(size_t n)
{
    flush f;
    make_flush(&f, n);
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_msg(bl_wr_stats_add(db, f.n, flush_row, &f) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert_msg(bl_rollups_add(db, f.n, flush_row, &f) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert_msg(bl_rollups_refresh(db, NULL) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    free_flush(&f);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bl_rollups_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/beatline.db", dir);
}

static void teardown(void)
{
    bl_db_close(db);
    db = NULL;
    const char *suffix[] = { "", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void open_db(void)
{
    char err[256];
    ck_assert_msg(bl_db_open(path, 0, &db, err, sizeof err) == BL_OK, "%s", err);
}

/* ---- comparing answers -------------------------------------------------- */

typedef struct ans {
    int n;
    bl_slow_row row[64];
    char names[64][4][32];
} ans;

static int take(const bl_slow_row *r, void *ctx)
{
    ans *a = ctx;
    ck_assert_int_lt(a->n, 64);
    a->row[a->n] = *r;
    const char *s[4] = { r->cls, r->name, r->descriptor, r->source_file };
    for (int k = 0; k < 4; k++)
        snprintf(a->names[a->n][k], 32, "%s", s[k] ? s[k] : "(null)");
    a->n++;
    return 0;
}

static int n_compared;

static void same_answer(const bl_slow_query *q)
{
    ans *fast = calloc(1, sizeof *fast), *ref = calloc(1, sizeof *ref);
    ck_assert_ptr_nonnull(fast);
    ck_assert_ptr_nonnull(ref);
    ck_assert_int_eq(bl_slow_methods(db, q, take, fast), BL_OK);
    ck_assert_int_eq(bl_slow_methods_scan(db, q, take, ref), BL_OK);
    char what[200];
    snprintf(what, sizeof what, "build %s main %d since %lld until %lld sort %d limit %lld",
             q->build ? q->build : "all", q->main_only, (long long)q->since_us,
             (long long)q->until_us, (int)q->sort, (long long)q->limit);
    ck_assert_msg(fast->n == ref->n, "%s: %d rows, reference %d", what, fast->n, ref->n);
    for (int i = 0; i < ref->n; i++) {
        const bl_slow_row *a = &fast->row[i], *b = &ref->row[i];
        for (int k = 0; k < 4; k++)
            ck_assert_msg(!strcmp(fast->names[i][k], ref->names[i][k]), "%s: row %d: %s vs %s",
                          what, i, fast->names[i][k], ref->names[i][k]);
        ck_assert_msg(a->count == b->count && a->total_us == b->total_us &&
                          a->self_us == b->self_us && a->max_us == b->max_us &&
                          a->p50_us == b->p50_us && a->p90_us == b->p90_us &&
                          a->p99_us == b->p99_us,
                      "%s: row %d (%s.%s): count %lld/%lld total %lld/%lld self %lld/%lld "
                      "max %llu/%llu p50 %llu/%llu p90 %llu/%llu p99 %llu/%llu",
                      what, i, ref->names[i][0], ref->names[i][1], (long long)a->count,
                      (long long)b->count, (long long)a->total_us, (long long)b->total_us,
                      (long long)a->self_us, (long long)b->self_us,
                      (unsigned long long)a->max_us, (unsigned long long)b->max_us,
                      (unsigned long long)a->p50_us, (unsigned long long)b->p50_us,
                      (unsigned long long)a->p90_us, (unsigned long long)b->p90_us,
                      (unsigned long long)a->p99_us, (unsigned long long)b->p99_us);
    }
    n_compared++;
    free(fast);
    free(ref);
}

/* every build of app 1 and all, both thread kinds, every sort, limits 1, 3
 * and 50, and hour ranges over and around the data */
static void all_answers_equal(void)
{
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_rebuild"), 0);
    const char *builds[] = { NULL, "1.0", "2.0", "nope" };
    const int64_t day0 = H(BASE_HOUR - 5), day = H(24);
    const int64_t t[][2] = {
        { 0, INT64_MAX },                          /* everything */
        { H(BASE_HOUR), H(BASE_HOUR + HOURS) },    /* exactly the data */
        { day0 + day, INT64_MAX },                 /* from a midnight on */
        { day0 + day + H(7) + 123, INT64_MAX },    /* from inside a day */
        { day0 + day + H(7), day0 + 3 * day + H(2) + 1 }, /* edges on both sides */
        { day0 + day, day0 + 3 * day },            /* whole days only */
        { H(BASE_HOUR + 30), H(BASE_HOUR + 31) },  /* one hour */
        { H(BASE_HOUR + 30) + 1, H(BASE_HOUR + 30) + 2 }, /* inside one hour */
        { day0 + H(20), day0 + day + H(4) },       /* across one midnight */
        { 0, H(BASE_HOUR) },                       /* before the data */
        { H(BASE_HOUR + HOURS), INT64_MAX },       /* after it */
        { H(BASE_HOUR + 50), H(BASE_HOUR + 40) },  /* empty */
    };
    const int64_t limits[] = { 1, 3, 50 };
    for (size_t b = 0; b < sizeof builds / sizeof *builds; b++)
        for (int m = 0; m < 2; m++)
            for (size_t r = 0; r < sizeof t / sizeof *t; r++)
                for (int s = 0; s < BL_SLOW_SORTS; s++)
                    for (size_t l = 0; l < 3; l++) {
                        bl_slow_query q = { 1, builds[b], m, t[r][0], t[r][1], (bl_slow_sort)s,
                                            limits[l] };
                        same_answer(&q);
                    }
    /* app 2 as well, all builds and its build '2' (moved there last) */
    bl_slow_query q = { 2, NULL, 0, 0, INT64_MAX, BL_SLOW_P99, 50 };
    same_answer(&q);
    q.build = "2";
    same_answer(&q);
    q.since_us = H(BASE_HOUR + 30);
    same_answer(&q);
}

START_TEST(rollups_follow_writer_transactions)
{
    open_db();
    schema_fixture();
    /* direct fixture writes left no mark: methods only */
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 0);
    for (int i = 0; i < 12; i++)
        write_txn(40); /* later ones hit stored rows: rows grow */
    ck_assert_int_gt(count_of("SELECT count(*) FROM rollup_days"), 0);
    all_answers_equal();
    ck_assert_int_gt(n_compared, 1000);
}
END_TEST

START_TEST(rollups_backfilled_by_migration)
{
    /* a schema-2 database with data, as written before rollups existed */
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    for (int i = 1; i <= 2; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/schema/migrations/%04d_%s.sql", BL_SOURCE_DIR, i,
                 i == 1 ? "init" : "warnings_quotas");
        size_t len;
        char *sql = tu_read_file(p, &len);
        ck_assert_ptr_nonnull(sql);
        ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
        free(sql);
    }
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA user_version = 2", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    /* the fixture's methods before migration 3: no sig column yet */
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h,
                                  "INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1), "
                                  "(2, 'b', 1); INSERT INTO builds(id, app_id, name, created_at) "
                                  "VALUES (1, 1, '1.0', 1), (2, 1, '2.0', 2), (3, 2, 'x', 3)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    for (int b = 1; b <= 3; b++)
        for (int i = 0; i < METHODS; i++) {
            char cls[32], name[32], sql[256];
            names_of(b, i, cls, name);
            snprintf(sql, sizeof sql,
                     "INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
                     "source_file) VALUES (%d, %d, %d, '%s', '%s', '()V', 'S.java')",
                     b * 100 + i, b, i, cls, name);
            ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
        }
    sqlite3_close(h);
    /* method_stats rows need sketch_merge: written through a schema-3
     * connection would add rollups, so write them with a plain connection
     * and the same upsert the writer uses (a sum on repeat keys) */
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    for (int t = 0; t < 8; t++) {
        flush f;
        make_flush(&f, 40);
        for (size_t i = 0; i < f.n; i++) {
            sqlite3_stmt *st;
            const bl_wr_stat *s = &f.s[i];
            /* repeat keys are skipped: schema 2 has no sketch_merge here */
            ck_assert_int_eq(sqlite3_prepare_v2(h,
                                                "INSERT INTO method_stats VALUES (?,?,?,?,?,?,?,?,?) "
                                                "ON CONFLICT DO NOTHING",
                                                -1, &st, NULL),
                             SQLITE_OK);
            sqlite3_bind_int64(st, 1, s->build_id);
            sqlite3_bind_int64(st, 2, s->method);
            sqlite3_bind_int(st, 3, s->main);
            sqlite3_bind_int64(st, 4, s->hour);
            sqlite3_bind_int64(st, 5, s->count);
            sqlite3_bind_int64(st, 6, s->total_us);
            sqlite3_bind_int64(st, 7, s->self_us);
            sqlite3_bind_int64(st, 8, s->max_us);
            sqlite3_bind_blob(st, 9, s->sketch, (int)s->sketch_len, SQLITE_STATIC);
            ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
            sqlite3_finalize(st);
        }
        free_flush(&f);
    }
    sqlite3_close(h);
    /* the migration marks both apps; the open leaves them (a fast open),
     * the server's rebuild thread or a refresh rebuilds them */
    open_db();
    ck_assert_int_eq(count_of("PRAGMA user_version"), bl_db_schema_version());
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 2);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_totals"), 0);
    int rebuilt;
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_rollups_refresh(db, &rebuilt), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    ck_assert_int_eq(rebuilt, 2);
    ck_assert_int_eq(count_of("SELECT count(*) FROM methods WHERE sig IS NULL"), 0);
    ck_assert_int_gt(count_of("SELECT count(*) FROM rollup_totals"), 0);
    all_answers_equal();
    /* and the writer keeps them from there */
    for (int i = 0; i < 4; i++)
        write_txn(40);
    all_answers_equal();
}
END_TEST

START_TEST(rollups_rebuilt_after_rename_and_foreign_writes)
{
    open_db();
    schema_fixture();
    for (int i = 0; i < 6; i++)
        write_txn(40);
    /* a re-symbolication: m1 of build 1 takes another name, m2 the name of
     * m3 (two groups become one) */
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_wr_method_put(db, 1, 1, "com.New", "renamed", "()V", "S.java"), BL_OK);
    ck_assert_int_eq(bl_wr_method_put(db, 1, 2, "com.C3", "m3", "()V", "S.java"), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 1);
    /* dirty: the answer comes from method_stats meanwhile */
    bl_slow_query q = { 1, NULL, 0, 0, INT64_MAX, BL_SLOW_TOTAL, 50 };
    ans *a = calloc(1, sizeof *a), *r = calloc(1, sizeof *r);
    ck_assert_int_eq(bl_slow_methods(db, &q, take, a), BL_OK);
    ck_assert_int_eq(bl_slow_methods_scan(db, &q, take, r), BL_OK);
    ck_assert_int_eq(a->n, r->n);
    free(a);
    free(r);
    int rebuilt;
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_rollups_refresh(db, &rebuilt), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    ck_assert_int_eq(rebuilt, 1);
    all_answers_equal();

    /* rows written behind the writer's back by a tool that marks the app
     * (the contract of rollups.h), then deleted (a trigger marks it) */
    exec_ok("UPDATE method_stats SET count = count + 1, total_us = total_us + 7 "
            "WHERE build_id = 2 AND method = 203");
    exec_ok("INSERT INTO rollup_dirty(app_id) VALUES (1)");
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 1);
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_rollups_refresh(db, NULL), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    all_answers_equal();
    exec_ok("DELETE FROM method_stats WHERE build_id = 1 AND hour < 3600000000 * (480005 + 30)");
    exec_ok("DELETE FROM method_stats WHERE build_id = 2 AND main = 1");
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 1);
    write_txn(40); /* the writer's flush rebuilds */
    all_answers_equal();

    /* a build moves to another app (retention moves a doomed build to
     * app 0): both apps' rows follow */
    exec_ok("UPDATE builds SET app_id = 2, name = '2' WHERE id = 2");
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty WHERE app_id IN (1, 2)"), 2);
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_rollups_refresh(db, NULL), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    all_answers_equal();
}
END_TEST

/* Expires build `build` up to `cutoff` in slices of at most 7 rows, one
 * transaction each, as retention does; the app stays clean throughout. */
static void expire_build(int64_t build, int64_t cutoff)
{
    bl_rs_cursor cur;
    memset(&cur, 0, sizeof cur);
    int64_t deleted = 0;
    int done = 0, slices = 0;
    while (!done) {
        ck_assert_int_eq(bl_db_begin(db), BL_OK);
        ck_assert_msg(bl_rs_expire_slice(db, build, cutoff, &cur, 7, 7, &deleted, &done) == BL_OK,
                      "%s", bl_db_errmsg(db));
        ck_assert_int_eq(bl_db_commit(db), BL_OK);
        ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 0);
        ck_assert_int_lt(++slices, 10000);
    }
    ck_assert_int_gt(slices, 2);
}

/* one stat row of `calls` calls of `v` µs each */
static void write_one(int64_t build, int64_t method, int main, int64_t hour, uint64_t v, int calls)
{
    flush f;
    f.n = 1;
    bl_sketch sk;
    bl_sketch_init(&sk);
    ck_assert_int_eq(bl_sketch_add(&sk, v, (uint64_t)calls), BL_OK);
    bl_buf_init(&f.blob[0], 0);
    ck_assert_int_eq(bl_sketch_serialize(&sk, &f.blob[0]), BL_OK);
    bl_sketch_cleanup(&sk);
    f.s[0] = (bl_wr_stat){ build, method, main, hour, calls, (int64_t)v * calls,
                           (int64_t)v * calls / 2, (int64_t)v, f.blob[0].data, f.blob[0].len };
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_wr_stats_add(db, 1, flush_row, &f), BL_OK);
    ck_assert_int_eq(bl_rollups_add(db, 1, flush_row, &f), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    free_flush(&f);
}

/* Retention expires whole days in slices: the rollups are adjusted in the
 * same transactions (no dirty mark, no rebuild) and answer exactly what
 * method_stats holds, also halfway (one build of the app expired, the other
 * not); a max that lived in an expired day is recomputed from what is left;
 * an identity whose rows all expired leaves no rollup row. */
START_TEST(rollups_exact_through_expiry)
{
    open_db();
    schema_fixture();
    /* an identity seen only on the first day (build 1, main thread) */
    exec_ok("INSERT INTO methods(id, build_id, method_id, class, name, descriptor, source_file) "
            "VALUES (150, 1, 50, 'com.Gone', 'once', '()V', 'S.java')");
    for (int i = 0; i < 12; i++)
        write_txn(40);
    write_one(1, 150, 1, H(BASE_HOUR + 2), 77, 3);
    /* the largest calls of m5 (build 1) and m6 (build 2, other threads):
     * on the first day */
    write_one(1, 105, 1, H(BASE_HOUR + 1), 9000000, 1);
    write_one(2, 206, 0, H(BASE_HOUR + 3), 8000000, 2);
    all_answers_equal();
    const char *max_m5 = "SELECT max(max_us) FROM rollup_totals WHERE scope IN (1, -1) AND "
                         "sig = (SELECT sig FROM methods WHERE id = 105)";
    const char *max_m6 = "SELECT max(max_us) FROM rollup_totals WHERE scope IN (2, -1) AND "
                         "sig = (SELECT sig FROM methods WHERE id = 206)";
    ck_assert_int_eq(count_of(max_m5), 9000000);
    ck_assert_int_eq(count_of(max_m6), 8000000);
    int64_t gone_sig = count_of("SELECT sig FROM methods WHERE id = 150");
    ck_assert_int_gt(gone_sig, 0);

    /* the cutoff is inside the second day: the first day expires whole */
    const int64_t day0 = H(BASE_HOUR - 5), day = H(24);
    int64_t left = count_of("SELECT count(*) FROM method_stats WHERE build_id = 2");
    expire_build(1, day0 + day + H(7));
    ck_assert_int_eq(count_of("SELECT count(*) FROM method_stats WHERE build_id = 1 AND "
                              "hour < 3600000000 * (480000 + 24)"),
                     0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM method_stats WHERE build_id = 1 AND "
                              "hour >= 3600000000 * (480000 + 24) AND hour < 3600000000 * "
                              "(480000 + 31)") > 0,
                     1); /* hours before the cutoff but in its day stay */
    ck_assert_int_eq(count_of("SELECT count(*) FROM method_stats WHERE build_id = 2"), left);
    all_answers_equal(); /* halfway: build 2 not expired yet */
    expire_build(2, day0 + day + H(7));
    expire_build(3, day0 + day + H(7));
    all_answers_equal();
    /* the maxima went with their day, recomputed from what is left */
    ck_assert_int_lt(count_of(max_m5), 9000000);
    ck_assert_int_gt(count_of(max_m5), 0);
    ck_assert_int_lt(count_of("SELECT max(max_us) FROM rollup_totals WHERE scope = 2 AND "
                              "sig = (SELECT sig FROM methods WHERE id = 206)"),
                     8000000);
    /* an identity with nothing left has no rollup rows; none is empty */
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM rollup_totals WHERE sig = %lld",
             (long long)gone_sig);
    ck_assert_int_eq(count_of(sql), 0);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM rollup_days WHERE sig = %lld",
             (long long)gone_sig);
    ck_assert_int_eq(count_of(sql), 0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_days WHERE day < 3600000000 * "
                              "(480000 + 24)"),
                     0);
    /* every rollup row left has method_stats rows behind it (count 0 may
     * be rows of calls still running only) */
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_totals t WHERE NOT EXISTS "
                              "(SELECT 1 FROM method_stats s JOIN methods m ON m.id = s.method "
                              "JOIN builds b ON b.id = s.build_id WHERE m.sig = t.sig AND "
                              "(s.build_id = t.scope OR -b.app_id = t.scope))"),
                     0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_days t WHERE NOT EXISTS "
                              "(SELECT 1 FROM method_stats s JOIN methods m ON m.id = s.method "
                              "JOIN builds b ON b.id = s.build_id WHERE m.sig = t.sig AND "
                              "-b.app_id = t.scope AND (t.main = 2 OR s.main = t.main) AND s.hour >= t.day "
                              "AND s.hour < t.day + 86400000000)"),
                     0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_totals WHERE count < 0") +
                         count_of("SELECT count(*) FROM rollup_days WHERE count < 0"),
                     0);
    /* two more days, then everything */
    for (int64_t b = 1; b <= 3; b++)
        expire_build(b, day0 + 3 * day);
    all_answers_equal();
    for (int64_t b = 1; b <= 3; b++)
        expire_build(b, day0 + 30 * day);
    ck_assert_int_eq(count_of("SELECT count(*) FROM method_stats"), 0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_totals") +
                         count_of("SELECT count(*) FROM rollup_days") +
                         count_of("SELECT count(*) FROM rollup_spans"),
                     0);
    all_answers_equal();
}
END_TEST

/* Deleting a build (retention moves it to the graveyard app 0, then
 * deletes its rows in slices): its app is rebuilt once, when it leaves;
 * the slices mark nothing, app 0 keeps no rollups, and the app's answers
 * stay exact. */
START_TEST(rollups_build_deletion_rebuilds_once)
{
    open_db();
    schema_fixture();
    for (int i = 0; i < 8; i++)
        write_txn(40);
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_rs_doom_build(db, 2, "deleted", 1), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 1);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_totals WHERE scope IN (0, 2)") +
                         count_of("SELECT count(*) FROM rollup_spans WHERE scope IN (0, 2)"),
                     0);
    int rebuilt;
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_int_eq(bl_rollups_refresh(db, &rebuilt), BL_OK);
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    ck_assert_int_eq(rebuilt, 1);
    int64_t deleted;
    int slices = 0;
    do {
        ck_assert_int_eq(bl_db_begin(db), BL_OK);
        ck_assert_int_eq(bl_rs_build_slice(db, 2, 10, &deleted), BL_OK);
        ck_assert_int_eq(bl_db_commit(db), BL_OK);
        ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 0);
        ck_assert_int_lt(++slices, 1000);
    } while (deleted);
    ck_assert_int_gt(slices, 5);
    ck_assert_int_eq(bl_rs_build_forget(db, 2), BL_OK);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_totals WHERE scope IN (0, 2)") +
                         count_of("SELECT count(*) FROM rollup_days WHERE scope = 0"),
                     0);
    bl_slow_query q = { 1, NULL, 0, 0, INT64_MAX, BL_SLOW_P99, 50 };
    same_answer(&q);
    q.since_us = H(BASE_HOUR + 30);
    same_answer(&q);
}
END_TEST

/* ---- many builds over many days: ranges with partial days ------------- */

#define WIDE_BUILDS 8
#define WIDE_DAYS 10

/* app 1 with builds 1..WIDE_BUILDS ("w1"…), METHODS methods each (names
 * shared across builds, as names_of for build 2) */
static void wide_fixture(void)
{
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1)");
    for (int b = 1; b <= WIDE_BUILDS; b++) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "INSERT INTO builds(id, app_id, name, created_at) VALUES (%d, 1, 'w%d', 1)", b,
                 b);
        exec_ok(sql);
        for (int i = 0; i < METHODS; i++) {
            char cls[32], name[32];
            names_of(2, i, cls, name);
            snprintf(sql, sizeof sql,
                     "INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
                     "source_file) VALUES (%d, %d, %d, '%s', '%s', '()V', 'S.java')",
                     b * 100 + i, b, i, cls, name);
            exec_ok(sql);
        }
    }
}

/* n random rows of the wide fixture, one flush; refresh: as write_txn */
static void wide_txn(size_t n, int refresh)
{
    flush f;
    make_flush(&f, n);
    for (size_t i = 0; i < f.n; i++) { /* spread over builds and days */
        bl_wr_stat *s = &f.s[i];
        int dup;
        do {
            s->build_id = 1 + (int64_t)(next() % WIDE_BUILDS);
            s->method = s->build_id * 100 + (int64_t)(next() % METHODS);
            s->main = (int)(next() % 2);
            s->hour = H(BASE_HOUR + (int64_t)(next() % (WIDE_DAYS * 24)));
            dup = 0;
            for (size_t j = 0; j < i; j++)
                dup |= f.s[j].build_id == s->build_id && f.s[j].method == s->method &&
                       f.s[j].main == s->main && f.s[j].hour == s->hour;
        } while (dup);
    }
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    ck_assert_msg(bl_wr_stats_add(db, f.n, flush_row, &f) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert_msg(bl_rollups_add(db, f.n, flush_row, &f) == BL_OK, "%s", bl_db_errmsg(db));
    if (refresh)
        ck_assert_msg(bl_rollups_refresh(db, NULL) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    free_flush(&f);
}

/* random ranges (µs edges inside hours and days, open or closed ends),
 * all builds and one, both thread kinds, every sort, limits 1, 5, 50:
 * the rollup answer equals the one merged from the raw method_stats rows */
static void wide_answers_equal(int ranges)
{
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_dirty"), 0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_rebuild"), 0);
    const char *builds[] = { NULL, "w3" };
    const int64_t limits[] = { 1, 5, 50 };
    const int64_t t0 = H(BASE_HOUR) - H(30);
    for (int r = 0; r < ranges; r++) {
        int64_t since = t0 + (int64_t)(next() % (uint64_t)H(24 * (WIDE_DAYS + 2)));
        int64_t until = r % 3 == 0 ? INT64_MAX
                                   : since + 1 + (int64_t)(next() % (uint64_t)H(24 * 6));
        if (r == 0)
            since = 0;
        for (size_t b = 0; b < 2; b++)
            for (int m = 0; m < 2; m++)
                for (int s = 0; s < BL_SLOW_SORTS; s++) {
                    bl_slow_query q = { 1, builds[b], m, since, until, (bl_slow_sort)s,
                                        limits[(size_t)(r + s) % 3] };
                    same_answer(&q);
                }
    }
}

START_TEST(rollups_ranges_with_partial_days)
{
    open_db();
    wide_fixture();
    for (int i = 0; i < 16; i++)
        wide_txn(60, 1);
    /* the hours at the ranges' edges come from the all-builds hourly
     * rollups, the whole days from the days */
    ck_assert_int_gt(count_of("SELECT count(*) FROM rollup_hours WHERE scope = -1"), 0);
    ck_assert_int_gt(count_of("SELECT count(DISTINCT day) FROM rollup_days WHERE scope = -1"),
                     WIDE_DAYS - 1);
    n_compared = 0;
    wide_answers_equal(40);
    ck_assert_int_eq(n_compared, 40 * 2 * 2 * BL_SLOW_SORTS);
}
END_TEST

/* A rebuild in bounded steps, the writer adding rows between them (some
 * before the cursor, some after), a mark in the middle starting it over:
 * at its end the answers are exact, and during it they come from
 * method_stats. */
START_TEST(rollups_rebuild_in_steps_with_writes)
{
    open_db();
    wide_fixture();
    for (int i = 0; i < 8; i++)
        wide_txn(60, 1);
    exec_ok("INSERT INTO rollup_dirty(app_id) VALUES (1)");
    int steps = 0, more = 1, marked_again = 0, rebuilt_total = 0;
    while (more) {
        int rebuilt = 0;
        ck_assert_int_eq(bl_db_begin(db), BL_OK);
        ck_assert_msg(bl_rollups_refresh_step(db, 25, &more, &rebuilt) == BL_OK, "%s",
                      bl_db_errmsg(db));
        ck_assert_int_eq(bl_db_commit(db), BL_OK);
        rebuilt_total += rebuilt;
        if (more) {
            ck_assert_int_eq(count_of("SELECT count(*) FROM rollup_rebuild"), 1);
            bl_slow_query q = { 1, NULL, 0, H(BASE_HOUR + 30) + 17, INT64_MAX, BL_SLOW_P99, 50 };
            same_answer(&q); /* from method_stats meanwhile */
        }
        wide_txn(20, 0); /* the writer, between steps */
        if (steps == 20 && !marked_again) { /* a tool writes: starts over */
            exec_ok("INSERT INTO rollup_dirty(app_id) VALUES (1)");
            marked_again = 1;
            more = 1;
        }
        ck_assert_int_lt(++steps, 5000);
    }
    ck_assert_int_gt(steps, 30);
    ck_assert_int_eq(rebuilt_total, 1);
    wide_answers_equal(12);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rollups");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, rollups_follow_writer_transactions);
    tcase_add_test(t, rollups_backfilled_by_migration);
    tcase_add_test(t, rollups_rebuilt_after_rename_and_foreign_writes);
    tcase_add_test(t, rollups_exact_through_expiry);
    tcase_add_test(t, rollups_build_deletion_rebuilds_once);
    tcase_add_test(t, rollups_ranges_with_partial_days);
    tcase_add_test(t, rollups_rebuild_in_steps_with_writes);
    suite_add_tcase(s, t);
    return tu_run(s);
}
