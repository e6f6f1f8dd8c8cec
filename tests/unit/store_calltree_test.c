/*
 * store_calltree_test.c — store/calltree_query.h's top-down reads
 * (bl_calltree_children, bl_calltree_has_children) and its one-scan read
 * (bl_calltree_scan) against the stored rows
 * of a generated tree (two builds, main and other threads), their early
 * stop, and the read transaction of store/db.h (bl_db_read_begin/end: one
 * snapshot for many reads).
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/calltree_query.h"
#include "store/db.h"
#include "store/internal.h"
#include "testutil.h"

#define NODES 3000

static char dir[64];
static char path[128];
static bl_db *db;

/* the generated rows: node ids 1..NODES; build 2 owns every 10th */
typedef struct gen {
    int64_t build, main, parent, method, count, total, self;
} gen;
static gen g[NODES + 1];

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

static uint64_t rng = 12345;
static uint32_t rnd(uint32_t below)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % below);
}

static sqlite3_stmt *insert_stmt(void)
{
    sqlite3_stmt *st;
    static const char sql[] = "INSERT INTO call_nodes(id, build_id, main, parent, method, "
                              "count, total_us, self_us) VALUES (?,?,?,?,?,?,?,?)";
    ck_assert_int_eq(sqlite3_prepare_v2(bl_db_handle(db), sql, -1, &st, NULL), SQLITE_OK);
    return st;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bl_store_ct_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/beatline.db", dir);
    char err[256];
    ck_assert_msg(bl_db_open(path, 0, &db, err, sizeof err) == BL_OK, "%s", err);
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1)");
    exec_ok("INSERT INTO builds(id, app_id, name, created_at) VALUES (1, 1, '1.0', 1), "
            "(2, 1, '2.0', 2)");
    exec_ok("WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 40) "
            "INSERT INTO methods(id, build_id, method_id, class, name, descriptor, source_file) "
            "SELECT i, 1 + (i > 30), i, 'com.C', 'm' || i, '()V', 'C.java' FROM k");
    /* parents first; a child is on its parent's build and thread kind, and
     * siblings' ids are spread out as the writer gives them */
    for (int64_t id = 1; id <= NODES; id++) {
        gen *x = &g[id];
        int64_t p = id > 20 && rnd(8) ? 1 + (int64_t)rnd((uint32_t)id - 1) : 0;
        x->build = p ? g[p].build : 1 + (id % 10 == 0);
        x->main = p ? g[p].main : (int64_t)rnd(2);
        x->parent = p;
        x->method = x->build == 1 ? 1 + rnd(30) : 31 + rnd(10);
        x->count = 1 + rnd(5);
        x->total = rnd(100);
        x->self = rnd(50);
    }
    exec_ok("BEGIN");
    sqlite3_stmt *st = insert_stmt();
    /* a node whose (build, main, parent, method) is taken is not stored,
     * nor are its descendants */
    for (int64_t id = 1; id <= NODES; id++) {
        sqlite3_reset(st);
        gen *x = &g[id];
        if (x->parent && !g[x->parent].build) {
            x->build = 0;
            continue;
        }
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, x->build);
        sqlite3_bind_int64(st, 3, x->main);
        sqlite3_bind_int64(st, 4, x->parent);
        sqlite3_bind_int64(st, 5, x->method);
        sqlite3_bind_int64(st, 6, x->count);
        sqlite3_bind_int64(st, 7, x->total);
        sqlite3_bind_int64(st, 8, x->self);
        if (sqlite3_step(st) != SQLITE_DONE)
            x->build = 0; /* not stored (duplicate path) */
    }
    sqlite3_finalize(st);
    exec_ok("COMMIT");
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

typedef struct seen {
    int n, stop_after;
    int64_t parent;
    unsigned char got[NODES + 1];
} seen;

static int collect(const bl_calltree_node *n, void *ctx)
{
    seen *s = ctx;
    ck_assert_int_ge(n->id, 1);
    ck_assert_int_le(n->id, NODES);
    ck_assert_int_eq(s->got[n->id], 0);
    s->got[n->id] = 1;
    const gen *x = &g[n->id];
    ck_assert_int_eq(n->parent, s->parent);
    ck_assert_int_eq(n->method, x->method);
    ck_assert_int_eq(n->count, x->count);
    ck_assert_int_eq(n->total_us, x->total);
    ck_assert_int_eq(n->self_us, x->self);
    ck_assert_int_eq(n->is_root, 0);
    s->n++;
    return s->stop_after && s->n == s->stop_after;
}

/* Every stored node's children (and the roots, parent 0) on both thread
 * kinds of both builds: exactly the generated rows with that build, kind
 * and parent. */
START_TEST(children_match_rows)
{
    static seen s;
    int stored = 0, with_children = 0;
    for (int64_t p = 0; p <= NODES; p++) {
        if (p && !g[p].build)
            continue;
        for (int64_t b = 1; b <= 2; b++)
            for (int m = 0; m <= 1; m++) {
                memset(&s, 0, sizeof s);
                s.parent = p;
                ck_assert_int_eq(bl_calltree_children(db, b, m, p, collect, &s), BL_OK);
                int want = 0;
                for (int64_t id = 1; id <= NODES; id++)
                    if (g[id].build == b && g[id].main == m && g[id].parent == p) {
                        want++;
                        ck_assert_msg(s.got[id], "node %lld missing under %lld", (long long)id,
                                      (long long)p);
                    }
                ck_assert_int_eq(s.n, want);
                int has = -1;
                ck_assert_int_eq(bl_calltree_has_children(db, b, m, p, &has), BL_OK);
                ck_assert_int_eq(has, want > 0);
                stored += want;
                with_children += want > 0;
            }
    }
    /* every stored node was listed once under its parent */
    int rows = 0;
    for (int64_t id = 1; id <= NODES; id++)
        rows += g[id].build != 0;
    ck_assert_int_eq(stored, rows);
    ck_assert_int_gt(with_children, 100);
    /* a node of no build, an id past the end */
    int has = 1;
    ck_assert_int_eq(bl_calltree_has_children(db, 3, 1, 0, &has), BL_OK);
    ck_assert_int_eq(has, 0);
    ck_assert_int_eq(bl_calltree_has_children(db, 1, 1, NODES + 5, &has), BL_OK);
    ck_assert_int_eq(has, 0);
}
END_TEST

/* A callback's non-zero stops the listing, which still answers BL_OK. */
START_TEST(children_stop)
{
    static seen s;
    memset(&s, 0, sizeof s);
    s.stop_after = 2;
    ck_assert_int_eq(bl_calltree_children(db, 1, 1, 0, collect, &s), BL_OK);
    ck_assert_int_eq(s.n, 2);
    /* the statement was reset: the next listing starts over */
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(bl_calltree_children(db, 1, 1, 0, collect, &s), BL_OK);
    ck_assert_int_gt(s.n, 2);
}
END_TEST

/* bl_calltree_scan: every stored node of the build (of the thread kinds
 * asked) once, with its fields and thread kind, in (main, parent, method)
 * order; max_rows cuts the listing; a callback's nonzero stops it */
typedef struct scanned {
    int n, stop_after;
    int64_t last_main, last_parent, last_method;
    unsigned char got[NODES + 1];
} scanned;

static int scan_cb(const bl_calltree_node *n, void *ctx)
{
    scanned *s = ctx;
    ck_assert_int_ge(n->id, 1);
    ck_assert_int_le(n->id, NODES);
    ck_assert_int_eq(s->got[n->id], 0);
    s->got[n->id] = 1;
    const gen *x = &g[n->id];
    ck_assert_int_eq(n->main, x->main);
    ck_assert_int_eq(n->parent, x->parent);
    ck_assert_int_eq(n->method, x->method);
    ck_assert_int_eq(n->count, x->count);
    ck_assert_int_eq(n->total_us, x->total);
    ck_assert_int_eq(n->self_us, x->self);
    ck_assert_int_eq(n->is_root, 0);
    /* strictly ascending (main, parent, method): the key is unique */
    if (s->n)
        ck_assert_msg(n->main > s->last_main ||
                          (n->main == s->last_main &&
                           (n->parent > s->last_parent ||
                            (n->parent == s->last_parent && n->method > s->last_method))),
                      "node %lld out of order", (long long)n->id);
    s->last_main = n->main;
    s->last_parent = n->parent;
    s->last_method = n->method;
    return ++s->n == s->stop_after;
}

START_TEST(scan_lists_build_in_order)
{
    static scanned s;
    for (int64_t b = 1; b <= 2; b++) {
        for (int main_only = 0; main_only <= 1; main_only++) {
            memset(&s, 0, sizeof s);
            ck_assert_int_eq(bl_calltree_scan(db, b, main_only, INT64_MAX, scan_cb, &s), BL_OK);
            int want = 0;
            for (int64_t id = 1; id <= NODES; id++) {
                int in = g[id].build == b && (!main_only || g[id].main);
                want += in;
                ck_assert_msg(s.got[id] == in, "build %lld main_only %d: node %lld %s",
                              (long long)b, main_only, (long long)id,
                              in ? "missing" : "listed");
            }
            ck_assert_int_eq(s.n, want);
            ck_assert_int_gt(want, 10);
        }
    }
    /* max_rows: the first rows of the same order, no more */
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(bl_calltree_scan(db, 1, 0, 7, scan_cb, &s), BL_OK);
    ck_assert_int_eq(s.n, 7);
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(bl_calltree_scan(db, 1, 0, 0, scan_cb, &s), BL_OK);
    ck_assert_int_eq(s.n, 0);
    /* the callback stops it */
    memset(&s, 0, sizeof s);
    s.stop_after = 3;
    ck_assert_int_eq(bl_calltree_scan(db, 1, 0, INT64_MAX, scan_cb, &s), BL_OK);
    ck_assert_int_eq(s.n, 3);
    /* no such build: nothing */
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(bl_calltree_scan(db, 3, 0, INT64_MAX, scan_cb, &s), BL_OK);
    ck_assert_int_eq(s.n, 0);
}
END_TEST

static int count_cb(const bl_calltree_node *n, void *ctx)
{
    (void)n;
    ++*(int *)ctx;
    return 0;
}

/* Reads between bl_db_read_begin and bl_db_read_end see one snapshot: a
 * node committed meanwhile by the writer shows only after the end. */
START_TEST(read_snapshot)
{
    char err[256];
    bl_db *rd;
    ck_assert_msg(bl_db_open(path, 1, &rd, err, sizeof err) == BL_OK, "%s", err);
    int before = 0, during = 0, after = 0;
    ck_assert_int_eq(bl_db_read_begin(rd), BL_OK);
    ck_assert_int_eq(bl_calltree_children(rd, 1, 1, 0, count_cb, &before), BL_OK);
    /* the writer adds a main-thread root of a method no node has */
    exec_ok("INSERT INTO methods(id, build_id, method_id, class, name, descriptor, source_file) "
            "VALUES (41, 1, 41, 'com.C', 'm41', '()V', 'C.java')");
    sqlite3_stmt *st = insert_stmt();
    sqlite3_bind_int64(st, 1, NODES + 100);
    sqlite3_bind_int64(st, 2, 1);
    sqlite3_bind_int64(st, 3, 1);
    sqlite3_bind_int64(st, 4, 0);
    sqlite3_bind_int64(st, 5, 41);
    sqlite3_bind_int64(st, 6, 1);
    sqlite3_bind_int64(st, 7, 1);
    sqlite3_bind_int64(st, 8, 1);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    ck_assert_int_eq(bl_calltree_children(rd, 1, 1, 0, count_cb, &during), BL_OK);
    ck_assert_int_eq(during, before);
    bl_db_read_end(rd);
    ck_assert_int_eq(bl_calltree_children(rd, 1, 1, 0, count_cb, &after), BL_OK);
    ck_assert_int_ne(after, before);
    /* the transaction is closed: another begin works */
    ck_assert_int_eq(bl_db_read_begin(rd), BL_OK);
    bl_db_read_end(rd);
    bl_db_close(rd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store_calltree");
    TCase *t = tcase_create("read");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, children_match_rows);
    tcase_add_test(t, children_stop);
    tcase_add_test(t, scan_lists_build_in_order);
    tcase_add_test(t, read_snapshot);
    suite_add_tcase(s, t);
    return tu_run(s);
}
