/*
 * retention_store_test.c — store/retention.h on a small fixture database:
 * raw retention picks only the app's kept batches older than the cutoff and
 * marks them; aggregate expiry deletes only rows whose hour ended before the
 * cutoff (method_stats: the cutoff rounded down to a UTC day), of that build, in slices bounded by max_rows (a key with more rows
 * is walked again); a build with data left or recent activity is not idle;
 * the graveyard hides a build from every lookup, its rows go slice by slice
 * children first, and the builds row only when nothing is left; per-app
 * settings; the graveyard app is not listed.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <unistd.h>

#include "store/apps.h"
#include "store/builds.h"
#include "store/db.h"
#include "store/internal.h"
#include "store/retention.h"
#include "testutil.h"

#define H(n) ((int64_t)(n) * 3600000000ll)
#define D(n) ((int64_t)(n) * 86400000000ll)

static char dir[64];
static char path[128];
static bl_db *db;

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

static int64_t count(const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(bl_db_handle(db), sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bl_ret_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/beatline.db", dir);
    char err[256];
    ck_assert_msg(bl_db_open(path, 0, &db, err, sizeof err) == BL_OK, "%s", err);
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1), (2, 'b', 1)");
    exec_ok("INSERT INTO builds(id, app_id, name, created_at) VALUES (1, 1, '1.0', 100), "
            "(2, 1, '2.0', 100), (3, 2, 'x', 100)");
    exec_ok("INSERT INTO methods(id, build_id, method_id, class, name, descriptor, source_file) "
            "VALUES (1, 1, 1, 'A', 'a', '()V', ''), (2, 1, 2, 'B', 'b', '()V', ''), "
            "(3, 2, 1, 'A', 'a', '()V', ''), (4, 3, 1, 'A', 'a', '()V', '')");
    /* build 1: method 1 main hours 1..10, method 2 both threads hour 5 and
     * 20; build 2 and 3: hour 1 */
    for (int h = 1; h <= 10; h++) {
        char sql[200];
        snprintf(sql, sizeof sql,
                 "INSERT INTO method_stats VALUES (1, 1, 1, %lld, 1, 1, 1, 1, x'')",
                 (long long)H(h));
        exec_ok(sql);
    }
    exec_ok("INSERT INTO method_stats VALUES (1, 2, 0, 18000000000, 1, 1, 1, 1, x''), "
            "(1, 2, 1, 18000000000, 1, 1, 1, 1, x''), (1, 2, 1, 72000000000, 1, 1, 1, 1, x''), "
            "(2, 3, 1, 3600000000, 1, 1, 1, 1, x''), (3, 4, 1, 3600000000, 1, 1, 1, 1, x'')");
    exec_ok("INSERT INTO call_nodes(id, build_id, main, parent, method, count, total_us, "
            "self_us) VALUES (1, 1, 1, 0, 1, 1, 1, 1), (2, 1, 1, 1, 2, 1, 1, 1), "
            "(3, 2, 1, 0, 3, 1, 1, 1)");
    exec_ok("INSERT INTO batches(batch_id, app_id, build_id, received_at, processed_at, "
            "records, malformed, bytes) VALUES "
            "('00000000-0000-4000-8000-000000000001', 1, 1, 10, 10, 1, 0, 1), "
            "('00000000-0000-4000-8000-000000000002', 1, 2, 20, 20, 1, 0, 1), "
            "('00000000-0000-4000-8000-000000000003', 1, 1, 30, 30, 1, 0, 1), "
            "('00000000-0000-4000-8000-000000000004', 2, 3, 5, 5, 1, 0, 1)");
}

static void teardown(void)
{
    bl_db_close(db);
    char p[200];
    const char *sfx[3] = { "", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
    rmdir(dir);
}

START_TEST(raw_old_and_mark)
{
    bl_rs_uuid u[8];
    size_t n;
    ck_assert_int_eq(bl_rs_raw_old(db, 1, 25, 8, u, &n), BL_OK);
    ck_assert_int_eq(n, 2); /* app 1, received before 25, oldest first */
    ck_assert_str_eq(u[0], "00000000-0000-4000-8000-000000000001");
    ck_assert_str_eq(u[1], "00000000-0000-4000-8000-000000000002");
    ck_assert_int_eq(bl_rs_raw_old(db, 1, 25, 1, u, &n), BL_OK);
    ck_assert_int_eq(n, 1); /* max */
    ck_assert_int_eq(bl_rs_raw_mark(db, u, 1, 99), BL_OK);
    ck_assert_int_eq(bl_rs_raw_old(db, 1, 25, 8, u, &n), BL_OK);
    ck_assert_int_eq(n, 1); /* the marked one is not picked again */
    ck_assert_str_eq(u[0], "00000000-0000-4000-8000-000000000002");
    int64_t app;
    int gone;
    ck_assert_int_eq(bl_rs_batch_owner(db, "00000000-0000-4000-8000-000000000001", &app, &gone),
                     BL_OK);
    ck_assert_int_eq(app, 1);
    ck_assert_int_eq(gone, 1);
    ck_assert_int_eq(bl_rs_batch_owner(db, "00000000-0000-4000-8000-000000000004", &app, &gone),
                     BL_OK);
    ck_assert_int_eq(app, 2);
    ck_assert_int_eq(gone, 0);
    ck_assert_int_eq(bl_rs_batch_owner(db, "00000000-0000-4000-8000-00000000000f", &app, &gone),
                     BL_ENOTFOUND);
    /* nothing else changed */
    ck_assert_int_eq(count("SELECT count(*) FROM batches"), 4);
    ck_assert_int_eq(count("SELECT count(*) FROM batches WHERE raw_deleted_at IS NOT NULL"), 1);
}
END_TEST

START_TEST(expire_slices)
{
    /* method_stats expire by whole UTC days: a cutoff within the fixture's
     * first day deletes none of its hours */
    bl_rs_cursor cur;
    memset(&cur, 0, sizeof cur);
    int64_t deleted = 0;
    int done = 0, slices = 0;
    while (!done) {
        ck_assert_int_eq(bl_rs_expire_slice(db, 1, H(23), &cur, 2, 100, &deleted, &done), BL_OK);
        ck_assert_int_lt(++slices, 50);
    }
    ck_assert_int_eq(deleted, 0);
    /* the fixture's hour h becomes day h; cutoff day 6 + 5 h: rows of days
     * 1..5 end at or before day 6's start, the cutoff rounded down */
    exec_ok("UPDATE method_stats SET hour = hour * 24");
    memset(&cur, 0, sizeof cur);
    done = slices = 0;
    while (!done) {
        ck_assert_int_eq(bl_rs_expire_slice(db, 1, D(6) + H(5), &cur, 2, 100, &deleted, &done),
                         BL_OK);
        ck_assert_int_le(deleted, 2 * (slices + 1)); /* max_rows per slice */
        ck_assert_int_lt(++slices, 50);
    }
    /* method 1: hours 1..5 (5 rows); method 2: hour 5 main and not (2) */
    ck_assert_int_eq(deleted, 7);
    ck_assert_int_eq(count("SELECT count(*) FROM method_stats WHERE build_id = 1"), 6);
    ck_assert_int_eq(count("SELECT min(hour) FROM method_stats WHERE build_id = 1"), D(6));
    ck_assert_int_eq(count("SELECT count(*) FROM method_stats WHERE build_id <> 1"), 2);
    /* the day that ends exactly at the cutoff went, the next one stays */
    ck_assert_int_eq(count("SELECT count(*) FROM method_stats WHERE hour = 518400000000"), 1);
    int idle;
    ck_assert_int_eq(bl_rs_build_idle(db, 1, H(100), &idle), BL_OK);
    ck_assert_int_eq(idle, 0); /* rows left */
    memset(&cur, 0, sizeof cur);
    deleted = 0;
    ck_assert_int_eq(bl_rs_expire_slice(db, 2, D(6), &cur, 100, 100, &deleted, &done), BL_OK);
    ck_assert_int_eq(done, 1);
    ck_assert_int_eq(deleted, 1);
    exec_ok("UPDATE builds SET created_at = 1 WHERE id = 2");
    ck_assert_int_eq(bl_rs_build_idle(db, 2, 10, &idle), BL_OK);
    ck_assert_int_eq(idle, 0); /* its batch (received 20) is newer than 10 */
    ck_assert_int_eq(bl_rs_build_idle(db, 2, 21, &idle), BL_OK);
    ck_assert_int_eq(idle, 1);
    exec_ok("UPDATE builds SET mapping_at = 500 WHERE id = 2");
    ck_assert_int_eq(bl_rs_build_idle(db, 2, 21, &idle), BL_OK);
    ck_assert_int_eq(idle, 0); /* an upload newer than the cutoff */
}
END_TEST

START_TEST(graveyard)
{
    int64_t id;
    ck_assert_int_eq(bl_rs_build_find(db, 1, "1.0", &id), BL_OK);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(bl_rs_doom_build(db, 1, "deleted", 7), BL_OK);
    ck_assert_int_eq(bl_rs_doom_build(db, 1, "deleted", 7), BL_ENOTFOUND);
    ck_assert_int_eq(bl_rs_build_find(db, 1, "1.0", &id), BL_ENOTFOUND);
    ck_assert_int_eq(bl_builds_exists(db, 1, "1.0"), BL_ENOTFOUND);
    int state;
    ck_assert_int_eq(bl_rs_build_state(db, 1, &state, NULL, NULL, 0), BL_OK);
    ck_assert_int_eq(state, 2);
    int64_t app;
    ck_assert_int_eq(bl_rs_doomed_next(db, 0, &id, &app), BL_OK);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(app, 1);
    ck_assert_int_eq(bl_rs_doomed_next(db, 1, &id, &app), BL_ENOTFOUND);
    /* a new build of the same name is a new row */
    exec_ok("INSERT INTO builds(app_id, name, created_at) VALUES (1, '1.0', 1)");
    /* not forgotten while rows are left */
    ck_assert_int_eq(bl_rs_build_forget(db, 1), BL_EINVAL);
    bl_rs_uuid u[8];
    size_t n;
    ck_assert_int_eq(bl_rs_build_batches(db, 1, 8, u, &n), BL_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(bl_rs_batches_forget(db, u, n), BL_OK);
    int64_t deleted;
    int slices = 0;
    do {
        ck_assert_int_eq(bl_rs_build_slice(db, 1, 3, &deleted), BL_OK);
        ck_assert_int_le(deleted, 3);
        ck_assert_int_lt(++slices, 20);
    } while (deleted);
    /* 13 stats, 2 nodes, 2 methods in slices of at most 3 */
    ck_assert_int_ge(slices, 7);
    ck_assert_int_eq(bl_rs_build_forget(db, 1), BL_OK);
    ck_assert_int_eq(count("SELECT count(*) FROM builds WHERE id = 1"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM doomed_builds"), 0);
    /* nothing of the other builds went */
    ck_assert_int_eq(count("SELECT count(*) FROM method_stats"), 2);
    ck_assert_int_eq(count("SELECT count(*) FROM call_nodes"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM methods"), 2);
    ck_assert_int_eq(count("SELECT count(*) FROM batches"), 2);
    ck_assert_int_eq(count("SELECT count(*) FROM builds"), 3);
    ck_assert_int_eq(count("SELECT count(*) FROM pragma_foreign_key_check"), 0);
}
END_TEST

/* Block aggregates (issue 13): per-hour rows expire with their hour, a
 * group's merged tree once every hour of the group expired; a build's
 * deletion takes all of them; other builds' blocks stay. Hours of the block
 * tables are hour numbers (µs / 3600e6). */
START_TEST(block_tables)
{
    exec_ok("INSERT INTO block_groups(id, build_id, path) VALUES (1, 1, '1'), (2, 1, '2'), "
            "(3, 2, '1')");
    exec_ok("INSERT INTO block_stats (grp, hour, count, anrs, max_us, sketch, first_at, last_at, target) VALUES (1, 3, 1, 0, 9, x'', 1, 1, 't'), "
            "(1, 8, 1, 0, 9, x'', 1, 1, 't'), (2, 3, 1, 0, 9, x'', 1, 1, 't'), "
            "(3, 3, 1, 0, 9, x'', 1, 1, 't')");
    exec_ok("INSERT INTO block_seen VALUES (1, 0, 'd', 3), (1, 0, 'd', 8), (2, 1, 's', 3), "
            "(3, 0, 'd', 3)");
    exec_ok("INSERT INTO block_nodes(id, grp, parent, method_id, count, total_us, self_us) "
            "VALUES (1, 1, 0, 1, 2, 9, 9), (2, 2, 0, 2, 1, 9, 9), (3, 2, 2, 1, 1, 1, 1), "
            "(4, 3, 0, 1, 1, 9, 9)");
    /* cutoff H(6): hour 3 ends before it, hour 8 does not */
    bl_rs_cursor cur;
    memset(&cur, 0, sizeof cur);
    int64_t deleted = 0;
    int done = 0, slices = 0;
    while (!done) {
        ck_assert_int_eq(bl_rs_expire_slice(db, 1, H(6), &cur, 2, 100, &deleted, &done), BL_OK);
        ck_assert_int_lt(++slices, 50);
    }
    ck_assert_int_eq(count("SELECT count(*) FROM block_stats WHERE grp = 1"), 1);
    ck_assert_int_eq(count("SELECT hour FROM block_stats WHERE grp = 1"), 8);
    ck_assert_int_eq(count("SELECT count(*) FROM block_stats WHERE grp = 2"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM block_seen WHERE grp IN (1, 2)"), 1);
    /* group 1 keeps its tree (an hour left), group 2's tree went */
    ck_assert_int_eq(count("SELECT count(*) FROM block_nodes WHERE grp = 1"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM block_nodes WHERE grp = 2"), 0);
    /* build 2's blocks untouched */
    ck_assert_int_eq(count("SELECT count(*) FROM block_stats WHERE grp = 3"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM block_nodes WHERE grp = 3"), 1);
    /* deleting build 1 takes every block row of it, nothing of build 2 */
    exec_ok("DELETE FROM method_stats WHERE build_id = 1");
    slices = 0;
    do {
        ck_assert_int_eq(bl_rs_build_slice(db, 1, 2, &deleted), BL_OK);
        ck_assert_int_lt(++slices, 40);
    } while (deleted);
    ck_assert_int_eq(count("SELECT count(*) FROM block_groups WHERE build_id = 1"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM block_stats WHERE grp IN (1, 2)"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM block_seen WHERE grp IN (1, 2)"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM block_nodes WHERE grp IN (1, 2)"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM block_groups"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM block_seen"), 1);
}
END_TEST

/* Launch aggregates (issue 15): per-hour rows (launch_stats,
 * launch_measures, launch_methods) expire with their hour, a kind's merged
 * launch tree once every hour of that kind expired; a build's deletion
 * takes all of them; other builds' launches stay. */
START_TEST(launch_tables)
{
    exec_ok("INSERT INTO launch_stats (build_id, kind, hour, count, first_at, last_at) VALUES "
            "(1, 0, 3, 1, 1, 1), (1, 0, 8, 1, 1, 1), (1, 2, 3, 1, 1, 1), (2, 0, 3, 1, 1, 1)");
    exec_ok("INSERT INTO launch_measures VALUES (1, 0, 5, 3, 1, 9, x''), (1, 0, 5, 8, 1, 9, x''), "
            "(1, 0, 1, 3, 1, 9, x''), (1, 2, 5, 3, 1, 9, x''), (2, 0, 5, 3, 1, 9, x'')");
    exec_ok("INSERT INTO launch_methods VALUES (1, 0, 7, 3, 1, 9, 9, 1), (1, 0, 7, 8, 1, 9, 9, 1), "
            "(1, 2, 7, 3, 1, 9, 9, 1), (2, 0, 7, 3, 1, 9, 9, 1)");
    exec_ok("INSERT INTO launch_nodes (id, build_id, kind, parent, method_id, count, total_us, "
            "self_us) VALUES (1, 1, 0, 0, 7, 1, 9, 9), (2, 1, 2, 0, 7, 1, 9, 9), "
            "(3, 1, 2, 2, 8, 1, 9, 9), (4, 2, 0, 0, 7, 1, 9, 9)");
    /* cutoff H(6): hour 3 ends before it, hour 8 does not */
    bl_rs_cursor cur;
    memset(&cur, 0, sizeof cur);
    int64_t deleted = 0;
    int done = 0, slices = 0;
    while (!done) {
        ck_assert_int_eq(bl_rs_expire_slice(db, 1, H(6), &cur, 2, 100, &deleted, &done), BL_OK);
        ck_assert_int_lt(++slices, 50);
    }
    ck_assert_int_eq(count("SELECT count(*) FROM launch_stats WHERE build_id = 1"), 1);
    ck_assert_int_eq(count("SELECT hour FROM launch_stats WHERE build_id = 1"), 8);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_measures WHERE build_id = 1"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_methods WHERE build_id = 1"), 1);
    /* cold (an hour left) keeps its tree, hot's tree went */
    ck_assert_int_eq(count("SELECT count(*) FROM launch_nodes WHERE build_id = 1 AND kind = 0"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_nodes WHERE build_id = 1 AND kind = 2"), 0);
    /* build 2's launches untouched */
    ck_assert_int_eq(count("SELECT count(*) FROM launch_stats WHERE build_id = 2"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_measures WHERE build_id = 2"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_nodes WHERE build_id = 2"), 1);
    /* deleting build 1 takes every launch row of it, nothing of build 2 */
    exec_ok("DELETE FROM method_stats WHERE build_id = 1");
    slices = 0;
    do {
        ck_assert_int_eq(bl_rs_build_slice(db, 1, 2, &deleted), BL_OK);
        ck_assert_int_lt(++slices, 40);
    } while (deleted);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_stats WHERE build_id = 1"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_measures WHERE build_id = 1"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_methods WHERE build_id = 1"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_nodes WHERE build_id = 1"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_stats"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_methods"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM launch_nodes"), 1);
}
END_TEST

START_TEST(app_settings)
{
    ck_assert_int_eq(bl_rs_set_keep(db, "a", 0, 3), BL_OK);
    ck_assert_int_eq(bl_rs_set_keep(db, "a", 1, 0), BL_OK);
    ck_assert_int_eq(bl_rs_set_keep(db, "b", 1, 5), BL_OK);
    ck_assert_int_eq(bl_rs_set_keep(db, "b", 1, -1), BL_OK);
    ck_assert_int_eq(bl_rs_set_keep(db, "nope", 1, 5), BL_ENOTFOUND);
    ck_assert_int_eq(bl_rs_set_keep(db, "", 1, 5), BL_ENOTFOUND); /* the graveyard */
    ck_assert_int_eq(bl_rs_set_keep(db, "a", 2, 5), BL_EINVAL);
    bl_rs_app *apps;
    size_t n;
    ck_assert_int_eq(bl_rs_apps(db, &apps, &n), BL_OK);
    ck_assert_int_eq(n, 2); /* not the graveyard */
    ck_assert_int_eq(apps[0].keep_raw_days, 3);
    ck_assert_int_eq(apps[0].keep_days, 0);
    ck_assert_int_eq(apps[1].keep_raw_days, -1);
    ck_assert_int_eq(apps[1].keep_days, -1);
    free(apps);
    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_apps_list_json(db, &b), BL_OK);
    ck_assert_str_eq(b.data, "[{\"app\":\"a\",\"id\":1,\"created_at\":1,\"builds\":2,\"keep_raw_days\":3,"
                             "\"keep_days\":0},{\"app\":\"b\",\"id\":2,\"created_at\":1,\"builds\":1,"
                             "\"keep_raw_days\":null,\"keep_days\":null}]");
    bl_buf_cleanup(&b);
    int64_t *ids;
    ck_assert_int_eq(bl_rs_app_builds(db, 1, &ids, &n), BL_OK);
    ck_assert_int_eq(n, 2);
    free(ids);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("retention_store");
    TCase *t = tcase_create("retention");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, raw_old_and_mark);
    tcase_add_test(t, expire_slices);
    tcase_add_test(t, graveyard);
    tcase_add_test(t, block_tables);
    tcase_add_test(t, launch_tables);
    tcase_add_test(t, app_settings);
    suite_add_tcase(s, t);
    return tu_run(s);
}
