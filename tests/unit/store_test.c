/*
 * store_test.c — the read-side store modules on a small fixture database:
 * store/slow_methods.h (grouping across builds, build / thread / hour
 * filters, sorts, limit, methods with no finished call left out, percentiles
 * from the merged sketches clamped to the max, early stop, bad sort) and
 * store/builds.h (listing order and unrecorded fields, exists, pick).
 */
#include <sqlite3.h>
#include <stdint.h>
#include <unistd.h>

#include "agg/sketch.h"
#include "store/builds.h"
#include "store/db.h"
#include "store/internal.h"
#include "store/slow_methods.h"
#include "testutil.h"

#define H(n) ((int64_t)(n) * 3600000000ll)

static char dir[64];
static char path[128];
static bl_db *db;

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

/* One method_stats row whose sketch holds the n values v[]. */
static void stat_row(int64_t build, int64_t method, int main_, int64_t hour, int64_t count,
                     int64_t total, int64_t self, const uint64_t *v, int n)
{
    bl_sketch s;
    bl_sketch_init(&s);
    uint64_t max = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(bl_sketch_add(&s, v[i], 1), BL_OK);
        if (v[i] > max)
            max = v[i];
    }
    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_sketch_serialize(&s, &b), BL_OK);
    sqlite3_stmt *st;
    static const char sql[] = "INSERT INTO method_stats(build_id, method, main, hour, count, "
                              "total_us, self_us, max_us, sketch) VALUES (?,?,?,?,?,?,?,?,?)";
    ck_assert_int_eq(sqlite3_prepare_v2(bl_db_handle(db), sql, -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, build);
    sqlite3_bind_int64(st, 2, method);
    sqlite3_bind_int(st, 3, main_);
    sqlite3_bind_int64(st, 4, hour);
    sqlite3_bind_int64(st, 5, count);
    sqlite3_bind_int64(st, 6, total);
    sqlite3_bind_int64(st, 7, self);
    sqlite3_bind_int64(st, 8, (int64_t)max);
    sqlite3_bind_blob(st, 9, b.data ? b.data : "", (int)b.len, SQLITE_TRANSIENT);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    /* written behind the writer's back: the app is marked for a rollups
     * rebuild, as store/rollups.h asks of a tool (answers from method_stats) */
    exec_ok("INSERT INTO rollup_dirty(app_id) SELECT id FROM apps WHERE id <> 0 "
            "ON CONFLICT DO NOTHING");
    bl_buf_cleanup(&b);
    bl_sketch_cleanup(&s);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bl_store_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/beatline.db", dir);
    char err[256];
    ck_assert_msg(bl_db_open(path, 0, &db, err, sizeof err) == BL_OK, "%s", err);
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1), (2, 'b', 1)");
    /* 2.0 is newer but has no processed batch; x belongs to app b */
    exec_ok("INSERT INTO builds(id, app_id, name, created_at, mapping_hash, mapping_size, "
            "mapping_at, symbolicated_at, batches, records, warnings) VALUES "
            "(1, 1, '1.0', 100, 'abc', 10, 110, 120, 1, 7, '[\"w\"]'), "
            "(3, 2, 'x', 50, NULL, NULL, NULL, NULL, 1, 1, NULL)");
    exec_ok("INSERT INTO builds(id, app_id, name, created_at) VALUES (2, 1, '2.0', 200)");
    exec_ok("INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
            "source_file) VALUES "
            "(1, 1, 1, 'com.A', 'run', '()V', 'A.java'), "
            "(2, 1, 2, 'com.B', 'go', '()V', 'B.java'), "
            "(3, 2, 1, 'com.A', 'run', '()V', 'A.java'), "
            "(4, 1, 3, 'com.C', 'idle', '()V', 'C.java'), "
            "(5, 3, 1, 'com.X', 'x', '()V', 'X.java')");
    static const uint64_t a1[] = { 100, 200 }, a2[] = { 50 }, a3[] = { 1000 },
                          b1[] = { 60, 60, 60, 60, 60, 60, 60, 60, 60, 60 }, x1[] = { 5000 };
    stat_row(1, 1, 1, H(10), 2, 300, 100, a1, 2);
    stat_row(1, 1, 0, H(11), 1, 50, 50, a2, 1);
    stat_row(2, 3, 1, H(10), 1, 1000, 1000, a3, 1);
    stat_row(1, 2, 0, H(10), 10, 600, 600, b1, 10);
    stat_row(1, 4, 1, H(10), 0, 0, 70, NULL, 0); /* only a call still running */
    stat_row(3, 5, 1, H(10), 1, 5000, 5000, x1, 1);
}

static void teardown(void)
{
    bl_db_close(db);
    db = NULL;
    unlink(path);
    char p[160];
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    rmdir(dir);
}

typedef struct got {
    int n, stop_after;
    char cls[8][32], name[8][32];
    bl_slow_row row[8];
} got;

static int collect(const bl_slow_row *r, void *ctx)
{
    got *g = ctx;
    ck_assert_int_lt(g->n, 8);
    snprintf(g->cls[g->n], sizeof g->cls[0], "%s", r->cls);
    snprintf(g->name[g->n], sizeof g->name[0], "%s", r->name);
    g->row[g->n] = *r;
    g->row[g->n].cls = g->row[g->n].name = g->row[g->n].descriptor =
        g->row[g->n].source_file = NULL; /* valid only during the call */
    g->n++;
    return g->stop_after && g->n >= g->stop_after;
}

static bl_slow_query all(void)
{
    bl_slow_query q = { 1, NULL, 0, 0, INT64_MAX, BL_SLOW_TOTAL, 50 };
    return q;
}

static uint64_t quantile_of(const uint64_t *v, int n, double q)
{
    bl_sketch s;
    bl_sketch_init(&s);
    uint64_t max = 0;
    for (int i = 0; i < n; i++) {
        bl_sketch_add(&s, v[i], 1);
        if (v[i] > max)
            max = v[i];
    }
    uint64_t x = bl_sketch_quantile(&s, q);
    bl_sketch_cleanup(&s);
    return x < max ? x : max;
}

START_TEST(slow_all_builds_grouped)
{
    got g = { 0 };
    bl_slow_query q = all();
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    /* com.A.run of builds 1.0 and 2.0 is one method; com.C.idle (no finished
     * call) and app b's method are not listed */
    ck_assert_int_eq(g.n, 2);
    ck_assert_str_eq(g.cls[0], "com.A");
    ck_assert_str_eq(g.name[0], "run");
    ck_assert_int_eq(g.row[0].count, 4);
    ck_assert_int_eq(g.row[0].total_us, 1350);
    ck_assert_int_eq(g.row[0].self_us, 1150);
    ck_assert_uint_eq(g.row[0].max_us, 1000);
    static const uint64_t av[] = { 100, 200, 50, 1000 };
    ck_assert_uint_eq(g.row[0].p50_us, quantile_of(av, 4, 0.5));
    ck_assert_uint_eq(g.row[0].p90_us, quantile_of(av, 4, 0.9));
    ck_assert_uint_eq(g.row[0].p99_us, quantile_of(av, 4, 0.99));
    ck_assert_str_eq(g.cls[1], "com.B");
    ck_assert_int_eq(g.row[1].count, 10);
    ck_assert_uint_eq(g.row[1].p50_us, 60);
    ck_assert_uint_eq(g.row[1].max_us, 60);
}
END_TEST

START_TEST(slow_filters)
{
    got g = { 0 };
    bl_slow_query q = all();
    q.build = "1.0";
    q.main_only = 1;
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 1); /* A.run on the main thread in 1.0 only */
    ck_assert_int_eq(g.row[0].count, 2);
    ck_assert_int_eq(g.row[0].total_us, 300);

    memset(&g, 0, sizeof g);
    q = all();
    q.since_us = H(11); /* hour 10 ends at 11: not selected */
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 1);
    ck_assert_int_eq(g.row[0].count, 1);
    ck_assert_int_eq(g.row[0].total_us, 50);

    memset(&g, 0, sizeof g);
    q = all();
    q.until_us = H(10) + 1; /* hour 11 starts after: not selected */
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 2);
    ck_assert_int_eq(g.row[0].total_us, 1300);

    memset(&g, 0, sizeof g);
    q = all();
    q.build = "nope";
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 0);
}
END_TEST

START_TEST(slow_sort_limit_stop)
{
    got g = { 0 };
    bl_slow_query q = all();
    q.sort = BL_SLOW_COUNT;
    q.limit = 1;
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 1);
    ck_assert_str_eq(g.cls[0], "com.B");

    memset(&g, 0, sizeof g);
    q = all();
    q.sort = BL_SLOW_P50;
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 2);
    ck_assert_str_eq(g.cls[0], "com.A");

    memset(&g, 0, sizeof g);
    q = all();
    q.limit = 0;
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 0);

    memset(&g, 0, sizeof g);
    g.stop_after = 1;
    q = all();
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_OK);
    ck_assert_int_eq(g.n, 1);

    q.sort = (bl_slow_sort)BL_SLOW_SORTS;
    ck_assert_int_eq(bl_slow_methods(db, &q, collect, &g), BL_EINVAL);
}
END_TEST

typedef struct blist {
    int n;
    char name[4][16];
    bl_build_row row[4];
} blist;

static int collect_build(const bl_build_row *b, void *ctx)
{
    blist *l = ctx;
    ck_assert_int_lt(l->n, 4);
    snprintf(l->name[l->n], sizeof l->name[0], "%s", b->name);
    l->row[l->n] = *b;
    l->n++;
    return 0;
}

START_TEST(builds_read)
{
    blist l = { 0 };
    ck_assert_int_eq(bl_builds_list(db, 1, collect_build, &l), BL_OK);
    ck_assert_int_eq(l.n, 2);
    ck_assert_str_eq(l.name[0], "2.0"); /* newest first */
    ck_assert_int_eq(l.row[0].mapping_size, -1);
    ck_assert_int_eq(l.row[0].symbolicated_at, -1);
    ck_assert_str_eq(l.name[1], "1.0");
    ck_assert_int_eq(l.row[1].mapping_size, 10);
    ck_assert_int_eq(l.row[1].records, 7);
    ck_assert_int_eq(bl_builds_exists(db, 1, "1.0"), BL_OK);
    ck_assert_int_eq(bl_builds_exists(db, 1, "x"), BL_ENOTFOUND);
    int64_t id;
    char name[8];
    ck_assert_int_eq(bl_builds_pick(db, 1, NULL, &id, name, sizeof name), BL_OK);
    ck_assert_int_eq(id, 1); /* the newest with data, not 2.0 */
    ck_assert_str_eq(name, "1.0");
    ck_assert_int_eq(bl_builds_pick(db, 1, "2.0", &id, name, sizeof name), BL_OK);
    ck_assert_int_eq(id, 2);
    ck_assert_int_eq(bl_builds_pick(db, 2, "1.0", &id, name, sizeof name), BL_ENOTFOUND);
    ck_assert_int_eq(bl_db_ping(db), BL_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store");
    TCase *t = tcase_create("read");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, slow_all_builds_grouped);
    tcase_add_test(t, slow_filters);
    tcase_add_test(t, slow_sort_limit_stop);
    tcase_add_test(t, builds_read);
    suite_add_tcase(s, t);
    return tu_run(s);
}
