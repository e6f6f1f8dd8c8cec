/*
 * store_network_test.c — store/network.h on a fresh database: user URL
 * patterns (order, replacement, updated_at, by build); network groups per
 * (build, host, method, pattern) with per-hour figures summed over the
 * hours asked for (counts, status classes, max, merged sketches, phase
 * sums, bytes), host and method filters; callers by count with names from
 * the build's methods and placeholders; the per-build group cap folding
 * new groups into "{other}"; retention deleting a build's network rows
 * (per build, and per hour by expiry).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "agg/sketch.h"
#include "store/db.h"
#include "store/internal.h"
#include "store/network.h"
#include "store/retention.h"
#include "store_testutil.h"
#include "testutil.h"

#define H 3600000000ll
#define HOUR0 498877ll

static char dir[64];
static char path[128];
static bl_db *db;
static bl_buf blob, blob2;

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

static int64_t count_of(const char *sql)
{
    bl_st *st = bl_st_get(db, sql);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
    int64_t n = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return n;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bl_store_net_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/beatline.db", dir);
    tu_agg_store_open(&db, path);
    exec_ok("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1), (2, 'b', 1)");
    exec_ok("INSERT INTO builds(id, app_id, name, created_at) VALUES (1, 1, '1.0', 1), "
            "(2, 1, '2.0', 2), (3, 2, '1.0', 3)");
    exec_ok("INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
            "source_file) VALUES (10, 1, 1, 'com.A', 'run', '()V', 'A.java'), "
            "(11, 1, 2, 'com.B', 'go', '(I)V', 'B.java')");
    bl_buf_init(&blob, 0);
    bl_buf_init(&blob2, 0);
}

static void teardown(void)
{
    bl_buf_cleanup(&blob);
    bl_buf_cleanup(&blob2);
    bl_db_close(db);
    db = NULL;
    tu_sqlite_remove(dir, path);
}

/* ---- patterns ---------------------------------------------------------------- */

typedef struct plist {
    char s[512];
    int n;
} plist;

static int pcollect(const char *p, void *ctx)
{
    plist *l = ctx;
    size_t k = strlen(l->s);
    snprintf(l->s + k, sizeof l->s - k, "%s%s", l->n++ ? "|" : "", p);
    return 0;
}

START_TEST(patterns)
{
    plist l = { "", 0 };
    int64_t at;
    ck_assert_int_eq(bl_net_patterns_get(db, 1, pcollect, &l, &at), BL_OK);
    ck_assert_int_eq(l.n, 0);
    ck_assert_int_eq(at, -1);
    const char *a[] = { "*/z", "*/a", "api.x/b/*" };
    ck_assert_int_eq(bl_net_patterns_set(db, 1, a, 3, 42), BL_OK);
    ck_assert_int_eq(bl_net_patterns_get(db, 1, pcollect, &l, &at), BL_OK);
    ck_assert_str_eq(l.s, "*/z|*/a|api.x/b/*"); /* in the order given */
    ck_assert_int_eq(at, 42);
    /* by build: builds 1 and 2 are app 1's, build 3 app 2's */
    plist l2 = { "", 0 }, l3 = { "", 0 };
    ck_assert_int_eq(bl_net_patterns_of_build(db, 2, pcollect, &l2), BL_OK);
    ck_assert_str_eq(l2.s, "*/z|*/a|api.x/b/*");
    ck_assert_int_eq(bl_net_patterns_of_build(db, 3, pcollect, &l3), BL_OK);
    ck_assert_int_eq(l3.n, 0);
    /* replaced, shorter; then emptied (updated_at stays set) */
    const char *b[] = { "*/only" };
    ck_assert_int_eq(bl_net_patterns_set(db, 1, b, 1, 43), BL_OK);
    plist l4 = { "", 0 };
    ck_assert_int_eq(bl_net_patterns_get(db, 1, pcollect, &l4, &at), BL_OK);
    ck_assert_str_eq(l4.s, "*/only");
    ck_assert_int_eq(bl_net_patterns_set(db, 1, NULL, 0, 44), BL_OK);
    plist l5 = { "", 0 };
    ck_assert_int_eq(bl_net_patterns_get(db, 1, pcollect, &l5, &at), BL_OK);
    ck_assert_int_eq(l5.n, 0);
    ck_assert_int_eq(at, 44);
}
END_TEST

/* ---- aggregates ---------------------------------------------------------------- */

/* One request's row (total and ttfb once in the sketches). */
static int64_t add(int64_t build, const char *host, const char *method, const char *pattern,
                   int64_t hour, int64_t total, int64_t ttfb, int status)
{
    bl_sketch s, t;
    bl_sketch_init(&s);
    bl_sketch_init(&t);
    bl_buf_reset(&blob);
    bl_buf_reset(&blob2);
    ck_assert_int_eq(bl_sketch_add(&s, (uint64_t)total, 1), BL_OK);
    if (ttfb >= 0)
        ck_assert_int_eq(bl_sketch_add(&t, (uint64_t)ttfb, 1), BL_OK);
    ck_assert_int_eq(bl_sketch_serialize(&s, &blob), BL_OK);
    ck_assert_int_eq(bl_sketch_serialize(&t, &blob2), BL_OK);
    bl_sketch_cleanup(&s);
    bl_sketch_cleanup(&t);
    bl_net_add_row r = {
        .build_id = build, .host = host, .http_method = method, .pattern = pattern,
        .hour = hour, .count = 1, .errors = status >= 400 || status < 0,
        .max_us = total, .ttfb_max_us = ttfb < 0 ? 0 : ttfb,
        .sketch = blob.data, .sketch_len = blob.len,
        .ttfb_sketch = blob2.data, .ttfb_sketch_len = blob2.len,
        .dns_us = 10, .dns_n = 1, .bytes_in = 100, .bytes_out = 7,
    };
    r.status[status < 0 ? 5 : status / 100 - 1] = 1;
    int64_t g;
    ck_assert_msg(bl_net_add(db, &r, &g) == BL_OK, "%s", bl_db_errmsg(db));
    return g;
}

typedef struct glist {
    bl_net_group g[8];
    char host[8][64], pattern[8][64];
    uint64_t p50[8], n_ttfb[8];
    int n;
} glist;

static int gcollect(const bl_net_group *g, void *ctx)
{
    glist *l = ctx;
    ck_assert_int_lt(l->n, 8);
    l->g[l->n] = *g;
    snprintf(l->host[l->n], 64, "%s", g->host);
    snprintf(l->pattern[l->n], 64, "%s", g->pattern);
    bl_sketch s;
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, g->sketch, g->sketch_len), BL_OK);
    l->p50[l->n] = bl_sketch_quantile(&s, 0.5);
    bl_sketch_reset(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, g->ttfb_sketch, g->ttfb_sketch_len), BL_OK);
    l->n_ttfb[l->n] = s.count;
    bl_sketch_cleanup(&s);
    l->n++;
    return 0;
}

START_TEST(groups)
{
    int64_t a = add(1, "api.x", "GET", "/u/{id}", HOUR0, 100, 40, 200);
    ck_assert_int_eq(add(1, "api.x", "GET", "/u/{id}", HOUR0, 300, -1, 404), a);
    ck_assert_int_eq(add(1, "api.x", "GET", "/u/{id}", HOUR0 + 1, 200, 50, -1), a);
    int64_t p = add(1, "api.x", "POST", "/u/{id}", HOUR0, 1000, 5, 503);
    ck_assert_int_ne(p, a);
    int64_t c = add(1, "cdn.x", "GET", "/u/{id}", HOUR0, 10, 5, 304);
    ck_assert_int_ne(c, a);
    ck_assert_int_ne(add(2, "api.x", "GET", "/u/{id}", HOUR0, 10, 5, 200), a); /* other build */
    glist l = { .n = 0 };
    ck_assert_int_eq(bl_net_groups(db, 1, HOUR0, HOUR0 + 1, NULL, NULL, gcollect, &l), BL_OK);
    ck_assert_int_eq(l.n, 3);
    const bl_net_group *g = &l.g[0];
    ck_assert_int_eq(g->id, a);
    ck_assert_str_eq(l.host[0], "api.x");
    ck_assert_str_eq(l.pattern[0], "/u/{id}");
    ck_assert_int_eq(g->count, 3);
    ck_assert_int_eq(g->errors, 2);
    ck_assert_int_eq(g->status[1], 1);
    ck_assert_int_eq(g->status[3], 1);
    ck_assert_int_eq(g->status[5], 1);
    ck_assert_int_eq(g->max_us, 300);
    ck_assert_int_eq(g->ttfb_max_us, 50);
    /* merged across rows and hours: the middle of 100, 200, 300 (1% error) */
    ck_assert_uint_ge(l.p50[0], 198);
    ck_assert_uint_le(l.p50[0], 202);
    ck_assert_uint_eq(l.n_ttfb[0], 2);  /* the request without a ttfb is not in it */
    ck_assert_int_eq(g->dns_us, 30);
    ck_assert_int_eq(g->dns_n, 3);
    ck_assert_int_eq(g->bytes_in, 300);
    ck_assert_int_eq(g->bytes_out, 21);
    /* one hour only */
    glist l1 = { .n = 0 };
    ck_assert_int_eq(bl_net_groups(db, 1, HOUR0 + 1, HOUR0 + 1, NULL, NULL, gcollect, &l1),
                     BL_OK);
    ck_assert_int_eq(l1.n, 1);
    ck_assert_int_eq(l1.g[0].count, 1);
    ck_assert_int_eq(l1.g[0].status[5], 1);
    /* filters */
    glist lf = { .n = 0 };
    ck_assert_int_eq(bl_net_groups(db, 1, HOUR0, HOUR0 + 1, "api.x", "POST", gcollect, &lf),
                     BL_OK);
    ck_assert_int_eq(lf.n, 1);
    ck_assert_int_eq(lf.g[0].id, p);
    glist lh = { .n = 0 };
    ck_assert_int_eq(bl_net_groups(db, 1, HOUR0, HOUR0 + 1, "cdn.x", NULL, gcollect, &lh),
                     BL_OK);
    ck_assert_int_eq(lh.n, 1);
    ck_assert_int_eq(lh.g[0].id, c);
}
END_TEST

typedef struct clist {
    char s[512];
} clist;

static int ccollect(const bl_net_caller *c, void *ctx)
{
    clist *l = ctx;
    size_t k = strlen(l->s);
    snprintf(l->s + k, sizeof l->s - k, "%s%s.%s%s=%lld", k ? "|" : "", c->cls, c->name,
             c->descriptor, (long long)c->count);
    return 0;
}

START_TEST(callers)
{
    int64_t g = add(1, "api.x", "GET", "/", HOUR0, 1, 1, 200);
    ck_assert_int_eq(bl_net_caller_add(db, g, HOUR0, 1, 2), BL_OK);
    ck_assert_int_eq(bl_net_caller_add(db, g, HOUR0 + 1, 1, 1), BL_OK);
    ck_assert_int_eq(bl_net_caller_add(db, g, HOUR0, 2, 3), BL_OK);
    ck_assert_int_eq(bl_net_caller_add(db, g, HOUR0, 9, 3), BL_OK);
    ck_assert_int_eq(bl_net_caller_add(db, g, HOUR0, 2, 1), BL_OK);
    clist l = { "" };
    ck_assert_int_eq(bl_net_callers(db, 1, g, HOUR0, HOUR0 + 1, 10, ccollect, &l), BL_OK);
    /* by count, ties by methodId; summed over rows and hours; a methodId
     * without a methods row named as a placeholder */
    ck_assert_str_eq(l.s, "com.B.go(I)V=4|com.A.run()V=3|?.unknown method 9=3");
    clist l1 = { "" };
    ck_assert_int_eq(bl_net_callers(db, 1, g, HOUR0, HOUR0, 1, ccollect, &l1), BL_OK);
    ck_assert_str_eq(l1.s, "com.B.go(I)V=4");
}
END_TEST

START_TEST(group_cap)
{
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    char pat[32];
    for (int i = 0; i < BL_NET_GROUPS_MAX; i++) {
        snprintf(pat, sizeof pat, "/p%d", i);
        add(1, "h", "GET", pat, HOUR0, 1, 1, 200);
    }
    ck_assert_int_eq(bl_db_commit(db), BL_OK);
    /* a known group still counts as itself; new ones go to {other} */
    int64_t g0 = add(1, "h", "GET", "/p0", HOUR0, 1, 1, 200);
    int64_t o1 = add(1, "new.host", "GET", "/new", HOUR0, 1, 1, 200);
    int64_t o2 = add(1, "h", "GET", "/other-new", HOUR0, 1, 1, 200);
    int64_t o3 = add(1, "h", "PUT", "/p0", HOUR0, 1, 1, 200);
    ck_assert_int_eq(o1, o2);
    ck_assert_int_ne(o1, o3); /* its own method */
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_groups WHERE build_id = 1"),
                     BL_NET_GROUPS_MAX + 2);
    ck_assert_int_eq(count_of("SELECT count FROM net_stats WHERE grp = (SELECT id FROM "
                              "net_groups WHERE host = '{other}' AND pattern = '{other}' AND "
                              "http_method = 'GET')"), 2);
    ck_assert_int_eq(count_of("SELECT count FROM net_stats s JOIN net_groups g ON g.id = s.grp "
                              "WHERE g.pattern = '/p0' AND g.http_method = 'GET'"), 2);
    ck_assert_int_ne(g0, o1);
    /* another build has room of its own */
    int64_t b2 = add(2, "new.host", "GET", "/new", HOUR0, 1, 1, 200);
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_groups WHERE build_id = 2 AND "
                              "host = 'new.host'"), 1);
    ck_assert_int_ne(b2, o1);
}
END_TEST

START_TEST(retention)
{
    int64_t g = add(1, "api.x", "GET", "/", HOUR0, 1, 1, 200);
    add(1, "api.x", "GET", "/", HOUR0 + 5, 1, 1, 200);
    ck_assert_int_eq(bl_net_caller_add(db, g, HOUR0, 1, 1), BL_OK);
    ck_assert_int_eq(bl_net_caller_add(db, g, HOUR0 + 5, 1, 1), BL_OK);
    add(2, "api.x", "GET", "/", HOUR0, 1, 1, 200);
    /* expiry: the hours ending at or before the cutoff go */
    bl_rs_cursor cur = { 0 };
    int64_t deleted = 0;
    int done = 0;
    for (int i = 0; i < 100 && !done; i++)
        ck_assert_msg(bl_rs_expire_slice(db, 1, (HOUR0 + 2) * H, &cur, 1000, 1000, &deleted,
                                         &done) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert(done);
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_stats WHERE grp = 1"), 1);
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_callers WHERE grp = 1"), 1);
    int idle = 1;
    ck_assert_int_eq(bl_rs_build_idle(db, 1, INT64_MAX, &idle), BL_OK);
    ck_assert(!idle); /* an hour is left */
    /* deletion: every network row of build 1, none of build 2 */
    for (int i = 0; i < 100; i++) {
        int64_t d = 0;
        ck_assert_int_eq(bl_rs_build_slice(db, 1, 1000, &d), BL_OK);
        if (!d)
            break;
    }
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_groups WHERE build_id = 1"), 0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_stats WHERE grp = 1"), 0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_callers"), 0);
    ck_assert_int_eq(count_of("SELECT count(*) FROM net_groups WHERE build_id = 2"), 1);
}
END_TEST


/* ---- two nodes at once (PostgreSQL) ---------------------------------------------- */

/* One connection (one node) adding n requests of (build 1, api.x, GET, /,
 * HOUR0), a transaction each. */
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
    bl_buf b[2];
    bl_buf_init(&b[0], 0);
    bl_buf_init(&b[1], 0);
    for (int i = 0; i < r->n; i++) {
        int bad = 0;
        for (int k = 0; k < 2; k++) {
            bl_sketch s;
            bl_sketch_init(&s);
            bl_buf_reset(&b[k]);
            bad |= bl_sketch_add(&s, (uint64_t)(k ? 10 + i : 1000 + i), 1) ||
                   bl_sketch_serialize(&s, &b[k]);
            bl_sketch_cleanup(&s);
        }
        bl_net_add_row row = { .build_id = 1, .host = "api.x", .http_method = "GET",
                               .pattern = "/", .hour = HOUR0, .count = 1,
                               .status = { 0, 1, 0, 0, 0, 0 }, .max_us = 1000 + i,
                               .ttfb_max_us = 10 + i, .sketch = b[0].data,
                               .sketch_len = b[0].len, .ttfb_sketch = b[1].data,
                               .ttfb_sketch_len = b[1].len, .bytes_in = 7 };
        int64_t g;
        if (bad || bl_db_begin(d) || bl_net_add(d, &row, &g) || bl_db_commit(d)) {
            snprintf(r->msg, sizeof r->msg, "%s", bl_db_errmsg(d));
            bl_db_rollback(d);
            r->errors++;
        }
    }
    bl_buf_cleanup(&b[0]);
    bl_buf_cleanup(&b[1]);
    bl_db_close(d);
    return NULL;
}

typedef struct raced {
    int n;
    int64_t count, bytes_in;
    uint64_t values, ttfb_values; /* in the merged sketches */
} raced;

static int collect_raced(const bl_net_group *g, void *ctx)
{
    raced *x = ctx;
    x->n++;
    x->count = g->count;
    x->bytes_in = g->bytes_in;
    bl_sketch s;
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, g->sketch, g->sketch_len), BL_OK);
    x->values = s.count;
    bl_sketch_reset(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, g->ttfb_sketch, g->ttfb_sketch_len), BL_OK);
    x->ttfb_values = s.count;
    bl_sketch_cleanup(&s);
    return 0;
}

/* PostgreSQL: two nodes adding requests of one group and hour at the same
 * time (the group new): one group, every request counted once and its
 * durations in both merged sketches (the row is read FOR UPDATE, merged in
 * C and written back; a group or row two nodes insert at once is found or
 * merged on the second turn). SQLite has one writer: nothing to race. */
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
    raced x = { 0 };
    ck_assert_int_eq(bl_net_groups(db, 1, HOUR0, HOUR0, NULL, NULL, collect_raced, &x), BL_OK);
    ck_assert_int_eq(x.n, 1);
    ck_assert_int_eq(x.count, 300);
    ck_assert_int_eq(x.bytes_in, 2100);
    ck_assert_uint_eq(x.values, 300); /* none lost */
    ck_assert_uint_eq(x.ttfb_values, 300);
}
END_TEST
int main(void)
{
    Suite *s = suite_create("store_network");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, patterns);
    tcase_add_test(tc, groups);
    tcase_add_test(tc, callers);
    tcase_add_test(tc, group_cap);
    tcase_add_test(tc, retention);
    tcase_add_test(tc, concurrent_adds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
