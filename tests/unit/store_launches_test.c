/*
 * store_launches_test.c — store/launches.h on a fresh database: per build,
 * kind and hour the launches' count, first/last start and the activity of
 * the latest launch that named one (whatever the insertion order); measure
 * sketches merged over the hours asked for (count, max, percentiles), kinds
 * kept apart and filtered; methods within launches summed per methodId,
 * ordered by exclusive time, limited, with placeholders for unknown
 * methodIds; merged tree nodes per build and kind (accumulated, ids stable,
 * kinds never mixed); and a rolled-back transaction leaving nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "agg/sketch.h"
#include "store/db.h"
#include "store/internal.h"
#include "store/launches.h"
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
    snprintf(dir, sizeof dir, "/tmp/bl_store_launches_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/beatline.db", dir);
    tu_agg_store_open(&db, path);
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1)");
    exec_ok("INSERT INTO builds(id, app_id, name, created_at) VALUES (1, 1, '1.0', 1), "
            "(2, 1, '2.0', 2)");
    exec_ok("INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
            "source_file) VALUES (10, 1, 1, 'com.App', 'onCreate', '()V', 'App.java'), "
            "(11, 1, 2, 'com.Db', 'open', '()V', 'Db.java')");
    bl_buf_init(&blob, 0);
}

static void teardown(void)
{
    bl_buf_cleanup(&blob);
    bl_db_close(db);
    db = NULL;
    tu_sqlite_remove(dir, path);
}

/* Adds one launch of `kind` with TTID `ttid` and, when on_create >= 0,
 * application_on_create lasting on_create µs. */
static void add(int64_t build, int kind, int64_t at, int64_t ttid, int64_t on_create,
                const char *activity)
{
    bl_lch_value v[2];
    size_t off[2], n = 0;
    int64_t d[2] = { ttid, on_create };
    int m[2] = { BL_LCH_TTID, BL_LCH_APP_ON_CREATE };
    bl_buf_reset(&blob);
    for (int i = 0; i < 2; i++) {
        if (d[i] < 0)
            continue;
        bl_sketch s;
        bl_sketch_init(&s);
        off[n] = blob.len;
        ck_assert_int_eq(bl_sketch_add(&s, (uint64_t)d[i], 1), BL_OK);
        ck_assert_int_eq(bl_sketch_serialize(&s, &blob), BL_OK);
        bl_sketch_cleanup(&s);
        v[n] = (bl_lch_value){ m[i], d[i], NULL, blob.len - off[n] };
        n++;
    }
    for (size_t i = 0; i < n; i++)
        v[i].sketch = blob.data + off[i];
    bl_lch_launch l = { build, kind, at, activity, v, n };
    ck_assert_msg(bl_lch_add(db, &l) == BL_OK, "%s", bl_db_errmsg(db));
}

typedef struct kinds {
    int n;
    bl_lch_kind k[3];
    char act[3][32];
} kinds;

static int collect_kind(const bl_lch_kind *k, void *ctx)
{
    kinds *x = ctx;
    ck_assert_int_lt(x->n, 3);
    x->k[x->n] = *k;
    snprintf(x->act[x->n], sizeof x->act[0], "%s", k->activity ? k->activity : "(null)");
    x->n++;
    return 0;
}

typedef struct measures {
    int n;
    int measure[8];
    int64_t count[8], max[8];
    uint64_t p50[8], p90[8];
} measures;

static int collect_measure(const bl_lch_measure_row *m, void *ctx)
{
    measures *x = ctx;
    ck_assert_int_lt(x->n, 8);
    x->measure[x->n] = m->measure;
    x->count[x->n] = m->count;
    x->max[x->n] = m->max_us;
    bl_sketch s;
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, m->sketch, m->sketch_len), BL_OK);
    x->p50[x->n] = bl_sketch_quantile(&s, 0.5);
    x->p90[x->n] = bl_sketch_quantile(&s, 0.9);
    bl_sketch_cleanup(&s);
    x->n++;
    return 0;
}

START_TEST(kinds_and_measures)
{
    exec_ok("BEGIN");
    add(1, BL_LCH_COLD, T0 + 500, 100, 10, "late");
    add(1, BL_LCH_COLD, T0 + 100, 120, 30, "early"); /* earlier, added later */
    add(1, BL_LCH_COLD, T0 + 900, 110, -1, NULL);    /* latest: no activity, no phase */
    add(1, BL_LCH_COLD, T0 + H + 7, 90, 20, "next"); /* the next hour */
    add(1, BL_LCH_WARM, T0 - H, 50, -1, "warm");     /* the hour before */
    add(2, BL_LCH_COLD, T0, 77, 77, "b2");
    exec_ok("COMMIT");
    kinds k = { 0 };
    ck_assert_int_eq(bl_lch_kinds(db, 1, -1, INT64_MIN / H, INT64_MAX / H, collect_kind, &k),
                     BL_OK);
    ck_assert_int_eq(k.n, 2);
    ck_assert_int_eq(k.k[0].kind, BL_LCH_COLD);
    ck_assert_int_eq(k.k[0].count, 4);
    ck_assert_int_eq(k.k[0].first_at, T0 + 100);
    ck_assert_int_eq(k.k[0].last_at, T0 + H + 7);
    ck_assert_str_eq(k.act[0], "next");
    ck_assert_int_eq(k.k[1].kind, BL_LCH_WARM);
    ck_assert_int_eq(k.k[1].first_at, T0 - H);
    /* the first hour: the latest launch there named none, "late" did */
    kinds k1 = { 0 };
    ck_assert_int_eq(bl_lch_kinds(db, 1, -1, T0 / H, T0 / H, collect_kind, &k1), BL_OK);
    ck_assert_int_eq(k1.n, 1);
    ck_assert_int_eq(k1.k[0].count, 3);
    ck_assert_str_eq(k1.act[0], "late");
    ck_assert_int_eq(k1.k[0].last_at, T0 + 900);
    /* a kind asked for */
    kinds k2 = { 0 };
    ck_assert_int_eq(bl_lch_kinds(db, 1, BL_LCH_WARM, INT64_MIN / H, INT64_MAX / H,
                                  collect_kind, &k2), BL_OK);
    ck_assert_int_eq(k2.n, 1);
    ck_assert_int_eq(k2.k[0].kind, BL_LCH_WARM);
    ck_assert_str_eq(k2.act[0], "warm");
    /* measures of the cold launches, all hours: TTID 90, 100, 110, 120;
     * application_on_create 10, 20, 30 (one launch had none) */
    measures m = { 0 };
    ck_assert_int_eq(bl_lch_measures(db, 1, BL_LCH_COLD, INT64_MIN / H, INT64_MAX / H,
                                     collect_measure, &m), BL_OK);
    ck_assert_int_eq(m.n, 2);
    ck_assert_int_eq(m.measure[0], BL_LCH_APP_ON_CREATE);
    ck_assert_int_eq(m.count[0], 3);
    ck_assert_int_eq(m.max[0], 30);
    ck_assert_uint_eq(m.p50[0], 20);
    ck_assert_int_eq(m.measure[1], BL_LCH_TTID);
    ck_assert_int_eq(m.count[1], 4);
    ck_assert_int_eq(m.max[1], 120);
    ck_assert_uint_eq(m.p50[1], 100);
    ck_assert_uint_eq(m.p90[1], 120);
    /* the first hour only */
    measures m1 = { 0 };
    ck_assert_int_eq(bl_lch_measures(db, 1, BL_LCH_COLD, T0 / H, T0 / H, collect_measure, &m1),
                     BL_OK);
    ck_assert_int_eq(m1.count[1], 3);
    ck_assert_int_eq(m1.max[1], 120);
    ck_assert_uint_eq(m1.p50[1], 110);
    /* build 2 is apart */
    measures m2 = { 0 };
    ck_assert_int_eq(bl_lch_measures(db, 2, BL_LCH_COLD, INT64_MIN / H, INT64_MAX / H,
                                     collect_measure, &m2), BL_OK);
    ck_assert_int_eq(m2.count[1], 1);
    ck_assert_int_eq(m2.max[1], 77);
    ck_assert_str_eq(bl_lch_kind_name(BL_LCH_HOT), "hot");
    ck_assert_str_eq(bl_lch_measure_name(BL_LCH_ACT_ON_RESUME), "activity_on_resume");
    ck_assert_ptr_null(bl_lch_measure_name(BL_LCH_MEASURES));
}
END_TEST

typedef struct meths {
    int n;
    int64_t mid[4], count[4], total[4], self[4], launches[4];
    char name[4][40];
} meths;

static int collect_method(const bl_lch_method_row *m, void *ctx)
{
    meths *x = ctx;
    ck_assert_int_lt(x->n, 4);
    x->mid[x->n] = m->method_id;
    x->count[x->n] = m->count;
    x->total[x->n] = m->total_us;
    x->self[x->n] = m->self_us;
    x->launches[x->n] = m->launches;
    snprintf(x->name[x->n], sizeof x->name[0], "%s.%s", m->names.cls, m->names.name);
    x->n++;
    return 0;
}

START_TEST(methods_by_self_time)
{
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0, 1, 1, 1000, 100), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + 5, 1, 2, 500, 150), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + H, 2, 3, 300, 300), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0, 99, 1, 200, 200), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_HOT, T0, 2, 1, 9000, 9000), BL_OK);
    meths x = { 0 };
    ck_assert_int_eq(bl_lch_methods(db, 1, BL_LCH_COLD, INT64_MIN / H, INT64_MAX / H, 10,
                                    collect_method, &x), BL_OK);
    ck_assert_int_eq(x.n, 3);
    ck_assert_str_eq(x.name[0], "com.Db.open"); /* self 300 */
    ck_assert_int_eq(x.self[0], 300);
    ck_assert_int_eq(x.mid[1], 1);              /* self 250, summed over the hour */
    ck_assert_int_eq(x.count[1], 3);
    ck_assert_int_eq(x.total[1], 1500);
    ck_assert_int_eq(x.launches[1], 2);
    ck_assert_str_eq(x.name[2], "?.unknown method 99");
    meths y = { 0 };
    ck_assert_int_eq(bl_lch_methods(db, 1, BL_LCH_COLD, T0 / H, T0 / H, 1, collect_method, &y),
                     BL_OK);
    ck_assert_int_eq(y.n, 1); /* limit 1; Db.open's hour is not asked for */
    ck_assert_int_eq(y.mid[0], 1);
}
END_TEST

/* Sums over hours past 2^63 saturate (they once failed with sum()'s
 * 'integer overflow': GET /launches answered 500), sums below stay exact
 * (also past 2^53, where a double would round), rows past 2^63 within an
 * hour saturate too, and the order by self time stays right. */
START_TEST(methods_sums_saturate)
{
    const int64_t big = (int64_t)1 << 62;
    for (int h = 0; h < 3; h++) /* 3 x 2^62 over three hours */
        ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + h * H, 1, 1, big, big),
                         BL_OK);
    for (int h = 0; h < 4; h++) /* 4 x 2^62: more, but saturated all the same */
        ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + h * H, 2, 1, big, big),
                         BL_OK);
    /* within one hour: 2 x 2^62 is past 2^63 in the row itself */
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + 3 * H, 3, 1, big, big), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + 3 * H, 3, 1, big, big), BL_OK);
    /* 2^53 + 1 + 1: exact */
    const int64_t p53 = (int64_t)1 << 53;
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0, 99, 1, p53, p53), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + H, 99, 1, 1, 1), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0 + 2 * H, 99, 1, 1, 1), BL_OK);
    meths x = { 0 };
    ck_assert_int_eq(bl_lch_methods(db, 1, BL_LCH_COLD, INT64_MIN / H, INT64_MAX / H, 10,
                                    collect_method, &x), BL_OK);
    ck_assert_int_eq(x.n, 4);
    /* saturated sums tie (on both stores, whatever the exact sums): by methodId */
    ck_assert_int_eq(x.mid[0], 1);
    ck_assert_int_eq(x.self[0], INT64_MAX);
    ck_assert_int_eq(x.total[0], INT64_MAX);
    ck_assert_int_eq(x.count[0], 3);
    ck_assert_int_eq(x.launches[0], 3);
    ck_assert_int_eq(x.mid[1], 2);
    ck_assert_int_eq(x.self[1], INT64_MAX);
    ck_assert_int_eq(x.mid[2], 3);
    ck_assert_int_eq(x.self[2], INT64_MAX);
    ck_assert_int_eq(x.mid[3], 99);
    ck_assert_int_eq(x.self[3], p53 + 2);
    ck_assert_int_eq(x.total[3], p53 + 2);
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

START_TEST(nodes_merge_per_kind)
{
    int64_t r1, c1, r2, c2, h1, u;
    ck_assert_int_eq(bl_lch_node_add(db, 1, BL_LCH_COLD, 0, 1, 1, 1000, 10, &r1), BL_OK);
    ck_assert_int_eq(bl_lch_node_add(db, 1, BL_LCH_COLD, r1, 2, 2, 900, 900, &c1), BL_OK);
    ck_assert_int_eq(bl_lch_node_add(db, 1, BL_LCH_COLD, 0, 1, 1, 500, 5, &r2), BL_OK);
    ck_assert_int_eq(bl_lch_node_add(db, 1, BL_LCH_COLD, r2, 2, 1, 400, 400, &c2), BL_OK);
    ck_assert_int_eq(bl_lch_node_add(db, 1, BL_LCH_HOT, 0, 1, 1, 70, 70, &h1), BL_OK);
    ck_assert_int_eq(bl_lch_node_add(db, 1, BL_LCH_COLD, c2, 77, 1, 50, 50, &u), BL_OK);
    ck_assert_int_eq(r1, r2);
    ck_assert_int_eq(c1, c2);
    ck_assert_int_ne(h1, r1);
    nodes x = { 0 };
    ck_assert_int_eq(bl_lch_nodes(db, 1, BL_LCH_COLD, collect_node, &x), BL_OK);
    ck_assert_int_eq(x.n, 3);
    ck_assert_str_eq(x.name[0], "com.App.onCreate");
    ck_assert_int_eq(x.count[0], 2);
    ck_assert_int_eq(x.total[0], 1500);
    ck_assert_int_eq(x.parent[1], x.id[0]);
    ck_assert_int_eq(x.count[1], 3);
    ck_assert_str_eq(x.name[2], "?.unknown method 77");
    nodes y = { 0 };
    ck_assert_int_eq(bl_lch_nodes(db, 1, BL_LCH_HOT, collect_node, &y), BL_OK);
    ck_assert_int_eq(y.n, 1);
    ck_assert_int_eq(y.total[0], 70);
    nodes z = { 0 };
    ck_assert_int_eq(bl_lch_nodes(db, 2, BL_LCH_COLD, collect_node, &z), BL_OK);
    ck_assert_int_eq(z.n, 0);
}
END_TEST

START_TEST(rollback_leaves_nothing)
{
    exec_ok("BEGIN");
    add(1, BL_LCH_COLD, T0, 100, 10, "a");
    int64_t id;
    ck_assert_int_eq(bl_lch_node_add(db, 1, BL_LCH_COLD, 0, 1, 1, 100, 100, &id), BL_OK);
    ck_assert_int_eq(bl_lch_method_add(db, 1, BL_LCH_COLD, T0, 1, 1, 100, 100), BL_OK);
    bl_db_rollback(db);
    kinds k = { 0 };
    ck_assert_int_eq(bl_lch_kinds(db, 1, -1, INT64_MIN / H, INT64_MAX / H, collect_kind, &k),
                     BL_OK);
    ck_assert_int_eq(k.n, 0);
    measures m = { 0 };
    ck_assert_int_eq(bl_lch_measures(db, 1, BL_LCH_COLD, INT64_MIN / H, INT64_MAX / H,
                                     collect_measure, &m), BL_OK);
    ck_assert_int_eq(m.n, 0);
    nodes y = { 0 };
    ck_assert_int_eq(bl_lch_nodes(db, 1, BL_LCH_COLD, collect_node, &y), BL_OK);
    ck_assert_int_eq(y.n, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store_launches");
    TCase *t = tcase_create("store_launches");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, kinds_and_measures);
    tcase_add_test(t, methods_by_self_time);
    tcase_add_test(t, methods_sums_saturate);
    tcase_add_test(t, nodes_merge_per_kind);
    tcase_add_test(t, rollback_leaves_nothing);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
