/*
 * store_blocks_test.c — store/blocks.h on a fresh database: groups per
 * (build, path); per-hour figures summed over the hours asked for (count,
 * ANRs, max, first/last, the target of the latest block whatever the
 * insertion order, the merged sketch); exact distinct devices and sessions
 * across hours; merged call-tree nodes (accumulated, ids stable, names
 * joined from methods, placeholders for methodIds without a row); and a
 * rolled-back transaction leaving nothing.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "agg/sketch.h"
#include "store/blocks.h"
#include "store/db.h"
#include "store/internal.h"
#include "store_testutil.h"
#include "testutil.h"

#define H 3600000000ll
#define T0 (498877 * H) /* the start of an hour */

static char dir[64];
static char path[128];
static bl_db *db;
static bl_buf blob;

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bl_store_blocks_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/beatline.db", dir);
    tu_agg_store_open(&db, path);
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1)");
    exec_ok("INSERT INTO builds(id, app_id, name, created_at) VALUES (1, 1, '1.0', 1), "
            "(2, 1, '2.0', 2)");
    exec_ok("INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
            "source_file) VALUES (10, 1, 1, 'com.A', 'run', '()V', 'A.java'), "
            "(11, 1, 2, 'com.B', 'go', '(I)V', 'B.java')");
    bl_buf_init(&blob, 0);
}

static void teardown(void)
{
    bl_buf_cleanup(&blob);
    bl_db_close(db);
    db = NULL;
    tu_sqlite_remove(dir, path);
}

/* Adds one block; returns its group. */
static int64_t add_stack(int64_t build, const char *p, int64_t at, int64_t dur, int anr,
                         const char *target, const char *device, const char *session,
                         const char *stack)
{
    bl_sketch s;
    bl_sketch_init(&s);
    bl_buf_reset(&blob);
    ck_assert_int_eq(bl_sketch_add(&s, (uint64_t)dur, 1), BL_OK);
    ck_assert_int_eq(bl_sketch_serialize(&s, &blob), BL_OK);
    bl_sketch_cleanup(&s);
    bl_blk_block b = { build, p, at, dur, anr, target, device, session, blob.data, blob.len,
                       stack };
    int64_t g;
    ck_assert_msg(bl_blk_add(db, &b, &g) == BL_OK, "%s", bl_db_errmsg(db));
    return g;
}

static int64_t add(int64_t build, const char *p, int64_t at, int64_t dur, int anr,
                   const char *target, const char *device, const char *session)
{
    return add_stack(build, p, at, dur, anr, target, device, session, NULL);
}

typedef struct got {
    int n;
    bl_blk_group g[4];
    char path[4][32], target[4][32];
    uint64_t p50[4], p99[4], values[4]; /* values: in the sketch */
} got;

static int collect(const bl_blk_group *g, void *ctx)
{
    got *x = ctx;
    ck_assert_int_lt(x->n, 4);
    x->g[x->n] = *g;
    snprintf(x->path[x->n], sizeof x->path[0], "%s", g->path);
    snprintf(x->target[x->n], sizeof x->target[0], "%s", g->target);
    bl_sketch s;
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, g->sketch, g->sketch_len), BL_OK);
    x->p50[x->n] = bl_sketch_quantile(&s, 0.5);
    x->p99[x->n] = bl_sketch_quantile(&s, 0.99);
    x->values[x->n] = s.count;
    bl_sketch_cleanup(&s);
    x->n++;
    return 0;
}

START_TEST(groups_and_figures)
{
    exec_ok("BEGIN");
    int64_t g1 = add(1, "1,2", T0 + 500, 1000, 0, "late", "d1", "s1");
    /* an earlier block added later: the target stays the latest one's */
    ck_assert_int_eq(add(1, "1,2", T0 + 100, 3000, 1, "early", "d2", "s1"), g1);
    /* the next hour: device d1 again, new session */
    ck_assert_int_eq(add(1, "1,2", T0 + H + 7, 2000, 0, "next", "d1", "s2"), g1);
    int64_t g2 = add(1, "1", T0, 700, 0, "other", "d1", "s1");
    int64_t g3 = add(2, "1,2", T0, 800, 0, "b2", "d9", "s9");
    int64_t g4 = add(1, "", T0, 900, 0, "empty", "d1", "s1");
    exec_ok("COMMIT");
    ck_assert_int_ne(g1, g2);
    ck_assert_int_ne(g1, g3);
    ck_assert_int_ne(g2, g4);
    got x = { 0 };
    ck_assert_int_eq(bl_blk_groups(db, 1, 0, INT64_MAX / H, collect, &x), BL_OK);
    ck_assert_int_eq(x.n, 3); /* build 2's group is not listed */
    ck_assert_str_eq(x.path[0], "1,2");
    ck_assert_int_eq(x.g[0].count, 3);
    ck_assert_int_eq(x.g[0].anrs, 1);
    ck_assert_int_eq(x.g[0].max_us, 3000);
    ck_assert_int_eq(x.g[0].first_at, T0 + 100);
    ck_assert_int_eq(x.g[0].last_at, T0 + H + 7);
    ck_assert_str_eq(x.target[0], "next");
    ck_assert_int_eq(x.g[0].devices, 2);
    ck_assert_int_eq(x.g[0].sessions, 2);
    ck_assert_uint_eq(x.p50[0] / 10, 2000 / 10); /* within the sketch's bucket */
    ck_assert_uint_ge(x.p99[0], 2976);
    ck_assert_str_eq(x.path[2], "");
    /* the first hour only */
    got y = { 0 };
    ck_assert_int_eq(bl_blk_groups(db, 1, T0 / H, T0 / H, collect, &y), BL_OK);
    ck_assert_int_eq(y.n, 3);
    ck_assert_int_eq(y.g[0].count, 2);
    ck_assert_str_eq(y.target[0], "late");
    ck_assert_int_eq(y.g[0].devices, 2);
    ck_assert_int_eq(y.g[0].sessions, 1);
    ck_assert_int_eq(y.g[0].last_at, T0 + 500);
    /* the second hour only */
    got z = { 0 };
    ck_assert_int_eq(bl_blk_groups(db, 1, T0 / H + 1, T0 / H + 1, collect, &z), BL_OK);
    ck_assert_int_eq(z.n, 1);
    ck_assert_int_eq(z.g[0].devices, 1);
}
END_TEST

typedef struct nodes {
    int n;
    int64_t id[8], parent[8], count[8], total[8];
    char name[8][40];
} nodes;

static int collect_node(const bl_blk_node *n, void *ctx)
{
    nodes *x = ctx;
    ck_assert_int_lt(x->n, 8);
    x->id[x->n] = n->id;
    x->parent[x->n] = n->parent;
    x->count[x->n] = n->count;
    x->total[x->n] = n->total_us;
    snprintf(x->name[x->n], sizeof x->name[0], "%s.%s", n->names.cls, n->names.name);
    x->n++;
    return 0;
}

static void name_of(const bl_blk_names *n, void *ctx)
{
    snprintf(ctx, 40, "%s.%s%s", n->cls, n->name, n->descriptor);
}

START_TEST(nodes_merge)
{
    exec_ok("BEGIN");
    int64_t g = add(1, "1,2", T0, 1000, 0, "t", "d", "s");
    int64_t r1, c1, r2, c2, u;
    ck_assert_int_eq(bl_blk_node_add(db, g, 0, 1, 1, 1000, 10, &r1), BL_OK);
    ck_assert_int_eq(bl_blk_node_add(db, g, r1, 2, 2, 900, 900, &c1), BL_OK);
    ck_assert_int_eq(bl_blk_node_add(db, g, 0, 1, 1, 500, 5, &r2), BL_OK);
    ck_assert_int_eq(bl_blk_node_add(db, g, r2, 2, 1, 400, 400, &c2), BL_OK);
    ck_assert_int_eq(bl_blk_node_add(db, g, c2, 77, 1, 50, 50, &u), BL_OK);
    exec_ok("COMMIT");
    ck_assert_int_eq(r1, r2);
    ck_assert_int_eq(c1, c2);
    nodes x = { 0 };
    ck_assert_int_eq(bl_blk_nodes(db, 1, g, collect_node, &x), BL_OK);
    ck_assert_int_eq(x.n, 3);
    ck_assert_str_eq(x.name[0], "com.A.run");
    ck_assert_int_eq(x.count[0], 2);
    ck_assert_int_eq(x.total[0], 1500);
    ck_assert_int_eq(x.parent[1], x.id[0]);
    ck_assert_int_eq(x.count[1], 3);
    ck_assert_str_eq(x.name[2], "?.unknown method 77");
    char nm[40];
    ck_assert_int_eq(bl_blk_method(db, 1, 2, name_of, nm), BL_OK);
    ck_assert_str_eq(nm, "com.B.go(I)V");
    ck_assert_int_eq(bl_blk_method(db, 2, 2, name_of, nm), BL_OK);
    ck_assert_str_eq(nm, "?.unknown method 2");
}
END_TEST

typedef struct stk {
    char s[64];
    int64_t at;
    int n;
} stk;

static void take_stack(const char *stack, int64_t at_us, void *ctx)
{
    stk *k = ctx;
    snprintf(k->s, sizeof k->s, "%s", stack);
    k->at = at_us;
    k->n++;
}

/* The latest ANR stack of a group (by its block's begin), across hours and
 * within one, whatever order the blocks were added in; blocks without a
 * stack never replace one. */
START_TEST(anr_stack_latest)
{
    stk k = { "", 0, 0 };
    int64_t g = add(1, "1", T0 + 5, 1000, 1, "t", "d", "s");
    ck_assert_int_eq(bl_blk_anr_stack(db, g, take_stack, &k), BL_OK);
    ck_assert_int_eq(k.n, 0); /* an ANR without a stack */
    add_stack(1, "1", T0 + 100, 1000, 1, "t", "d", "s", "x.a(S)\ny.b(S)");
    add_stack(1, "1", T0 + 50, 1000, 1, "t", "d", "s", "older");     /* same hour, earlier */
    add(1, "1", T0 + 200, 1000, 0, "t", "d", "s");                    /* later, no stack */
    ck_assert_int_eq(bl_blk_anr_stack(db, g, take_stack, &k), BL_OK);
    ck_assert_int_eq(k.n, 1);
    ck_assert_str_eq(k.s, "x.a(S)\ny.b(S)");
    ck_assert_int_eq(k.at, T0 + 100);
    add_stack(1, "1", T0 - H, 1000, 1, "t", "d", "s", "an hour before");
    add_stack(1, "1", T0 + 2 * H, 1000, 1, "t", "d", "s", "two hours later");
    ck_assert_int_eq(bl_blk_anr_stack(db, g, take_stack, &k), BL_OK);
    ck_assert_str_eq(k.s, "two hours later");
    ck_assert_int_eq(k.at, T0 + 2 * H);
}
END_TEST

/* One connection (one node) adding n blocks of group "race", hour T0, in a
 * transaction each. */
typedef struct racer {
    const char *url;
    int n, errors;
    char msg[256];
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    bl_db *d;
    char err[256];
    if (bl_db_open(r->url, 0, &d, err, sizeof err) != BL_OK) {
        r->errors = r->n;
        snprintf(r->msg, sizeof r->msg, "%s", err);
        return NULL;
    }
    bl_buf b;
    bl_buf_init(&b, 0);
    for (int i = 0; i < r->n; i++) {
        bl_sketch s;
        bl_sketch_init(&s);
        bl_buf_reset(&b);
        if (bl_sketch_add(&s, (uint64_t)(1000 + i), 1) || bl_sketch_serialize(&s, &b)) {
            r->errors++;
            bl_sketch_cleanup(&s);
            continue;
        }
        bl_sketch_cleanup(&s);
        bl_blk_block blk = { 1, "race", T0 + i, 1000 + i, 0, "t", "d", "s", b.data, b.len,
                             NULL };
        int64_t g;
        if (bl_db_begin(d) || bl_blk_add(d, &blk, &g) || bl_db_commit(d)) {
            snprintf(r->msg, sizeof r->msg, "%s", bl_db_errmsg(d));
            bl_db_rollback(d);
            r->errors++;
        }
    }
    bl_buf_cleanup(&b);
    bl_db_close(d);
    return NULL;
}

/* PostgreSQL: two nodes adding blocks of one group and hour at the same
 * time: each block counted once and its duration in the merged sketch
 * (the row is read FOR UPDATE, merged in C and written back; a row two
 * nodes insert at once is merged on the second turn). SQLite has one
 * writer: nothing to race there. */
START_TEST(concurrent_adds)
{
    const char *url = getenv("BEATLINE_TEST_PG_DB");
    if (!url || !*url)
        return;
    racer r[2] = { { url, 150, 0, "" }, { url, 150, 0, "" } };
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    ck_assert_msg(r[0].errors == 0 && r[1].errors == 0, "%d, %d errors: %s %s", r[0].errors,
                  r[1].errors, r[0].msg, r[1].msg);
    got x = { 0 };
    ck_assert_int_eq(bl_blk_groups(db, 1, T0 / H, T0 / H, collect, &x), BL_OK);
    ck_assert_int_eq(x.n, 1);
    ck_assert_int_eq(x.g[0].count, 300);
    ck_assert_int_eq(x.g[0].max_us, 1149);
    ck_assert_uint_eq(x.values[0], 300); /* every duration in the sketch, none lost */
}
END_TEST

START_TEST(rollback_leaves_nothing)
{
    exec_ok("BEGIN");
    int64_t g = add(1, "1", T0, 1000, 0, "t", "d", "s"), id;
    ck_assert_int_eq(bl_blk_node_add(db, g, 0, 1, 1, 1000, 1000, &id), BL_OK);
    bl_db_rollback(db);
    got x = { 0 };
    ck_assert_int_eq(bl_blk_groups(db, 1, 0, INT64_MAX / H, collect, &x), BL_OK);
    ck_assert_int_eq(x.n, 0);
    nodes y = { 0 };
    ck_assert_int_eq(bl_blk_nodes(db, 1, g, collect_node, &y), BL_OK);
    ck_assert_int_eq(y.n, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store_blocks");
    TCase *t = tcase_create("store_blocks");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, groups_and_figures);
    tcase_add_test(t, nodes_merge);
    tcase_add_test(t, rollback_leaves_nothing);
    tcase_add_test(t, anr_stack_latest);
    tcase_add_test(t, concurrent_adds);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
