/*
 * rollups_pg_test.c — the store's write path gives the same rows on SQLite
 * and on PostgreSQL (issue 19): the same writer transactions (method_stats
 * and rollups of random flushes, call-path nodes new and growing), a
 * re-symbolication that renames a method and the rebuild in bounded steps
 * that follows (with writes between the steps), and an expiry that
 * subtracts deleted rows from the rollups, run on a SQLite file and on a
 * PostgreSQL database; after each phase every row of method_stats,
 * rollup_totals, rollup_days, rollup_hours, rollup_spans, call_nodes,
 * rollup_dirty and rollup_rebuild, and each method's identity, is compared
 * byte for byte (sketches and percentiles included; identities by their
 * names, as their ids are the engines' own). The method histogram of a
 * method is compared too.
 *
 * BEATLINE_TEST_PG_URL names a fresh PostgreSQL database (postgresql://…);
 * tests/integration/pg_write_test.sh starts a throwaway server and sets it.
 * Without it the test fails. BEATLINE_TEST_SQLITE_KEEP (optional): the
 * SQLite file to write, left in place (the script then compares the read
 * path's answers of both stores with store_read_dump).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agg/sketch.h"
#include "common/buf.h"
#include "store/db.h"
#include "store/internal.h"
#include "store/method_hist.h"
#include "store/rollups.h"
#include "store/stmt.h"
#include "store/writer.h"
#include "flushgen.h"
#include "testutil.h"

#define H(n) ((int64_t)(n) * 3600000000ll)
#define BASE_HOUR (24 * 20000 + 5) /* 05:00 of a day */
#define HOURS 100
#define METHODS 12
#define NODES 70 /* node k: build 1 + k % 3, main (k / 3) % 2, method (k / 6) % 12 */

static char dir[64];
static char path[128];
static bl_db *dbs[2]; /* 0 SQLite, 1 PostgreSQL */
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void exec_both(const char *sql)
{
    for (int e = 0; e < 2; e++)
        ck_assert_msg(bl_db_exec(dbs[e], sql) == BL_OK, "%s: %s: %s", e ? "pg" : "sqlite", sql,
                      bl_db_errmsg(dbs[e]));
}

/* ---- the rows compared ---------------------------------------------------- */

/* each query with its column kinds: i integer, s text, b blob (hex) */
static const struct {
    const char *sql, *kinds;
} dumps[] = {
    { "SELECT build_id, method, main, hour, count, total_us, self_us, max_us, sketch "
      "FROM method_stats ORDER BY build_id, method, main, hour",
      "iiiiiiiib" },
    { "SELECT t.scope, s.class, s.name, s.descriptor, s.source_file, t.main, t.count, "
      "t.total_us, t.self_us, t.max_us, t.q3, t.sketch FROM rollup_totals t "
      "LEFT JOIN method_sigs s ON s.id = t.sig "
      "ORDER BY t.scope, s.class, s.name, s.descriptor, s.source_file, t.main",
      "isssssiiiibb" },
    { "SELECT t.scope, s.class, s.name, s.descriptor, s.source_file, t.day, t.main, t.count, "
      "t.total_us, t.self_us, t.max_us, t.q3, t.sketch FROM rollup_days t "
      "LEFT JOIN method_sigs s ON s.id = t.sig "
      "ORDER BY t.scope, s.class, s.name, s.descriptor, s.source_file, t.day, t.main",
      "isssssiiiiibb" },
    { "SELECT t.scope, s.class, s.name, s.descriptor, s.source_file, t.hour, t.main, "
      "t.count, t.total_us, t.self_us, t.max_us, t.q3, t.sketch FROM rollup_hours t "
      "LEFT JOIN method_sigs s ON s.id = t.sig "
      "ORDER BY t.scope, s.class, s.name, s.descriptor, s.source_file, t.hour, t.main",
      "isssssiiiiibb" },
    { "SELECT scope, first_hour, last_hour FROM rollup_spans ORDER BY scope", "iii" },
    { "SELECT id, build_id, main, parent, method, count, total_us, self_us FROM call_nodes "
      "ORDER BY id",
      "iiiiiiii" },
    { "SELECT app_id FROM rollup_dirty ORDER BY app_id", "i" },
    { "SELECT app_id, build, method, main, hour FROM rollup_rebuild ORDER BY app_id", "iiiii" },
    { "SELECT m.id, m.sig IS NULL, s.app_id, s.class, s.name, s.descriptor, s.source_file "
      "FROM methods m LEFT JOIN method_sigs s ON s.id = m.sig ORDER BY m.id",
      "iiisssss" },
};

/* Every row of every dump query as text lines, into out. */
static void dump(bl_db *db, bl_buf *out)
{
    bl_buf_reset(out);
    for (size_t q = 0; q < sizeof dumps / sizeof *dumps; q++) {
        bl_st *st = bl_st_get(db, dumps[q].sql);
        ck_assert_msg(st != NULL, "%s", bl_db_errmsg(db));
        char line[64];
        snprintf(line, sizeof line, "== %zu\n", q);
        ck_assert_int_eq(bl_buf_puts(out, line), BL_OK);
        int rc;
        while ((rc = bl_st_step(st)) == BL_ST_ROW) {
            for (int c = 0; dumps[q].kinds[c]; c++) {
                char k = dumps[q].kinds[c];
                if (c)
                    ck_assert_int_eq(bl_buf_putc(out, '|'), BL_OK);
                if (k == 'i') {
                    snprintf(line, sizeof line, "%lld", (long long)bl_st_col_int64(st, c));
                    ck_assert_int_eq(bl_buf_puts(out, line), BL_OK);
                } else if (k == 's') {
                    ck_assert_int_eq(bl_buf_puts(out, bl_st_is_null(st, c) ? "<null>"
                                                                          : bl_st_col_str(st, c)),
                                     BL_OK);
                } else {
                    const unsigned char *p = bl_st_col_blob(st, c);
                    size_t n = bl_st_col_bytes(st, c);
                    for (size_t i = 0; p && i < n; i++) {
                        snprintf(line, sizeof line, "%02x", p[i]);
                        ck_assert_int_eq(bl_buf_puts(out, line), BL_OK);
                    }
                }
            }
            ck_assert_int_eq(bl_buf_putc(out, '\n'), BL_OK);
        }
        ck_assert_msg(rc == BL_ST_DONE, "%s: %s", dumps[q].sql, bl_db_errmsg(db));
        bl_st_reset(st);
    }
    ck_assert_int_eq(bl_buf_putc(out, 0), BL_OK);
}

/* The line of text t holding offset off. */
static void print_line(const char *who, const char *t, size_t off)
{
    size_t a = off, b = off;
    while (a > 0 && t[a - 1] != '\n')
        a--;
    while (t[b] && t[b] != '\n')
        b++;
    fprintf(stderr, "%s: %.*s\n", who, (int)(b - a), t + a);
}

static int n_rows_compared;

/* Both databases hold the same rows (and some rows at all). */
static void same_rows(const char *when)
{
    bl_buf d[2];
    for (int e = 0; e < 2; e++) {
        bl_buf_init(&d[e], 0);
        dump(dbs[e], &d[e]);
    }
    const char *a = (const char *)d[0].data, *b = (const char *)d[1].data;
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    if (a[i] != b[i]) {
        fprintf(stderr, "rows differ %s:\n", when);
        print_line("sqlite", a, i);
        print_line("pg    ", b, i);
    }
    ck_assert_msg(a[i] == b[i], "SQLite and PostgreSQL rows differ %s", when);
    int lines = 0;
    for (const char *p = a; *p; p++)
        lines += *p == '\n';
    n_rows_compared += lines;
    bl_buf_cleanup(&d[0]);
    bl_buf_cleanup(&d[1]);
}

/* ---- the writes ------------------------------------------------------------ */

static void fixture(void)
{
    exec_both("INSERT INTO apps(id, name, created_at) VALUES (1, 'a', 1), (2, 'b', 1)");
    exec_both("INSERT INTO builds(id, app_id, name, created_at) VALUES "
              "(1, 1, '1.0', 1), (2, 1, '2.0', 2), (3, 2, 'x', 3)");
    for (int b = 1; b <= 3; b++)
        for (int i = 0; i < METHODS; i++) {
            /* names repeat across builds; in build 1 rows 10 and 11 share
             * one identity */
            int k = (b == 1 && i == 11) ? 10 : i;
            char sql[256];
            snprintf(sql, sizeof sql,
                     "INSERT INTO methods(id, build_id, method_id, class, name, descriptor, "
                     "source_file) VALUES (%d, %d, %d, 'com.C%d', 'm%d', '()V', 'S.java')",
                     b * 100 + i, b, i, k % 4, k);
            exec_both(sql);
        }
}

typedef struct flush {
    bl_wr_stat s[64];
    bl_buf blob[64];
    size_t n;
    bl_wr_node node[NODES];
    size_t n_nodes;
} flush;

static char node_known[NODES + 1];

/* n random method_stats rows (one per key, in key order as the writer
 * gives them), and some call-path nodes (new ones and known ones) */
static void make_flush(flush *f, size_t n)
{
    f->n = n;
    for (size_t i = 0; i < n; i++)
        tu_flush_row(f->s, i, &f->blob[i], next, METHODS, BASE_HOUR, HOURS);
    for (size_t i = 0; i < n; i++) { /* key order */
        for (size_t j = i + 1; j < n; j++) {
            bl_wr_stat *a = &f->s[i], *b = &f->s[j];
            int gt = a->build_id != b->build_id ? a->build_id > b->build_id
                     : a->method != b->method   ? a->method > b->method
                     : a->main != b->main       ? a->main > b->main
                                                : a->hour > b->hour;
            if (gt) {
                bl_wr_stat t = *a;
                *a = *b;
                *b = t;
                bl_buf tb = f->blob[i];
                f->blob[i] = f->blob[j];
                f->blob[j] = tb;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        f->s[i].sketch = f->blob[i].data;
        f->s[i].sketch_len = f->blob[i].len;
    }
    f->n_nodes = 0;
    for (int k = 1; k <= NODES; k++) {
        if (next() % 3)
            continue;
        int64_t b = 1 + k % 3;
        f->node[f->n_nodes++] = (bl_wr_node){
            .id = k, .build_id = b, .main = (k / 3) % 2, .is_new = !node_known[k],
            .parent = 0, .method = b * 100 + (k / 6) % METHODS,
            .count = (int64_t)(next() % 9), .total_us = (int64_t)(next() % 100000),
            .self_us = (int64_t)(next() % 1000),
        };
        node_known[k] = 1;
    }
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

static void flush_node(void *ctx, size_t i, bl_wr_node *out)
{
    *out = ((flush *)ctx)->node[i];
}

/* one writer transaction of n random rows on both, as the committer does */
static void write_txn(size_t n)
{
    flush f;
    make_flush(&f, n);
    for (int e = 0; e < 2; e++) {
        bl_db *db = dbs[e];
        ck_assert_int_eq(bl_db_begin(db), BL_OK);
        ck_assert_msg(bl_wr_stats_add(db, f.n, flush_row, &f) == BL_OK, "%s", bl_db_errmsg(db));
        ck_assert_msg(bl_rollups_add(db, f.n, flush_row, &f) == BL_OK, "%s", bl_db_errmsg(db));
        ck_assert_msg(bl_wr_nodes_add(db, f.n_nodes, flush_node, &f) == BL_OK, "%s",
                      bl_db_errmsg(db));
        ck_assert_msg(bl_db_commit(db) == BL_OK, "%s", bl_db_errmsg(db));
    }
    free_flush(&f);
}

/* One rebuild step (budget rows) on both, each its own transaction;
 * returns whether rows are left (the same on both). */
static int refresh_step(int64_t budget)
{
    int more[2];
    for (int e = 0; e < 2; e++) {
        bl_db *db = dbs[e];
        ck_assert_int_eq(bl_db_begin(db), BL_OK);
        ck_assert_msg(bl_rollups_refresh_step(db, budget, &more[e], NULL) == BL_OK, "%s",
                      bl_db_errmsg(db));
        ck_assert_msg(bl_db_commit(db) == BL_OK, "%s", bl_db_errmsg(db));
    }
    ck_assert_int_eq(more[0], more[1]);
    return more[0];
}

/* rows of one build before a day, read back for the subtraction */
typedef struct gone {
    bl_wr_stat s[4096];
    bl_buf blobs;
    size_t off[4096];
    size_t n;
} gone;

static void gone_row(void *ctx, size_t i, bl_wr_stat *out)
{
    gone *g = ctx;
    *out = g->s[i];
    out->sketch = g->blobs.data + g->off[i];
}

/* Retention's expiry of build `build` before `cutoff` (a day's start), by
 * hand, on one database: the rows read and deleted, the dirty mark their
 * deletion made taken back (the app was clean), subtracted from the
 * rollups, the spans moved. */
static void expire(bl_db *db, int64_t build, int64_t app, int64_t cutoff)
{
    static gone g;
    g.n = 0;
    bl_buf_init(&g.blobs, 0);
    ck_assert_int_eq(bl_db_begin(db), BL_OK);
    bl_st *st = bl_st_get(db, "SELECT method, main, hour, count, total_us, self_us, max_us, "
                              "sketch FROM method_stats WHERE build_id = ?1 AND hour < ?2 "
                              "ORDER BY method, main, hour");
    ck_assert_ptr_nonnull(st);
    bl_st_int64(st, 1, build);
    bl_st_int64(st, 2, cutoff);
    while (bl_st_step(st) == BL_ST_ROW) {
        ck_assert_int_lt(g.n, 4096);
        bl_wr_stat *s = &g.s[g.n];
        s->build_id = build;
        s->method = bl_st_col_int64(st, 0);
        s->main = (int)bl_st_col_int64(st, 1);
        s->hour = bl_st_col_int64(st, 2);
        s->count = bl_st_col_int64(st, 3);
        s->total_us = bl_st_col_int64(st, 4);
        s->self_us = bl_st_col_int64(st, 5);
        s->max_us = bl_st_col_int64(st, 6);
        s->sketch_len = bl_st_col_bytes(st, 7);
        g.off[g.n] = g.blobs.len;
        ck_assert_int_eq(bl_buf_append(&g.blobs, bl_st_col_blob(st, 7), s->sketch_len), BL_OK);
        g.n++;
    }
    bl_st_reset(st);
    ck_assert_int_gt(g.n, 0);
    st = bl_st_get(db, "SELECT count(*) FROM rollup_dirty WHERE app_id = ?1");
    bl_st_int64(st, 1, app);
    ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
    ck_assert_int_eq(bl_st_col_int64(st, 0), 0); /* clean before */
    bl_st_reset(st);
    st = bl_st_get(db, "DELETE FROM method_stats WHERE build_id = ?1 AND hour < ?2");
    bl_st_int64(st, 1, build);
    bl_st_int64(st, 2, cutoff);
    ck_assert_msg(bl_st_done(st) == BL_OK, "%s", bl_db_errmsg(db));
    st = bl_st_get(db, "DELETE FROM rollup_dirty WHERE app_id = ?1");
    bl_st_int64(st, 1, app);
    ck_assert_int_eq(bl_st_done(st), BL_OK);
    ck_assert_msg(bl_rollups_sub(db, g.n, gone_row, &g) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert_msg(bl_rollups_expired(db, build, cutoff) == BL_OK, "%s", bl_db_errmsg(db));
    ck_assert_msg(bl_db_commit(db) == BL_OK, "%s", bl_db_errmsg(db));
    bl_buf_cleanup(&g.blobs);
}

/* The histogram of method m5 (all builds of app 1, all threads) on both:
 * the same sketch bytes, count and max. */
static void same_histogram(void)
{
    bl_buf out[2];
    int64_t count[2];
    uint64_t max[2];
    for (int e = 0; e < 2; e++) {
        bl_method_hist_query q = { 1, NULL, 0, 0, INT64_MAX, "com.C1", "m5", "()V" };
        bl_sketch sk;
        bl_sketch_init(&sk);
        ck_assert_msg(bl_method_hist(dbs[e], &q, &sk, &count[e], &max[e]) == BL_OK, "%s",
                      bl_db_errmsg(dbs[e]));
        bl_buf_init(&out[e], 0);
        ck_assert_int_eq(bl_sketch_serialize(&sk, &out[e]), BL_OK);
        bl_sketch_cleanup(&sk);
    }
    ck_assert_int_gt(count[0], 0);
    ck_assert_int_eq(count[0], count[1]);
    ck_assert_uint_eq(max[0], max[1]);
    ck_assert_uint_eq(out[0].len, out[1].len);
    ck_assert_int_eq(memcmp(out[0].data, out[1].data, out[0].len), 0);
    bl_buf_cleanup(&out[0]);
    bl_buf_cleanup(&out[1]);
}

START_TEST(same_rows_on_sqlite_and_postgresql)
{
    const char *url = getenv("BEATLINE_TEST_PG_URL");
    ck_assert_msg(url && *url, "BEATLINE_TEST_PG_URL is not set "
                               "(tests/integration/pg_write_test.sh sets it)");
    const char *keep = getenv("BEATLINE_TEST_SQLITE_KEEP");
    if (keep && *keep) {
        snprintf(path, sizeof path, "%s", keep);
    } else {
        snprintf(dir, sizeof dir, "/tmp/bl_rollups_pg_XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/beatline.db", dir);
    }
    char err[256];
    ck_assert_msg(bl_db_open(path, 0, &dbs[0], err, sizeof err) == BL_OK, "%s", err);
    ck_assert_msg(bl_db_open(url, 0, &dbs[1], err, sizeof err) == BL_OK, "%s", err);
    ck_assert_int_eq(bl_db_is_pg(dbs[0]), 0);
    ck_assert_int_eq(bl_db_is_pg(dbs[1]), 1);
    fixture();

    /* writer transactions: rows new and growing, nodes new and known */
    for (int i = 0; i < 12; i++)
        write_txn(i % 3 ? 40 : 64);
    same_rows("after the writer's transactions");
    same_histogram();

    /* a re-symbolication renames a method with stats: its app is rebuilt in
     * steps of 7 rows, with writes between the steps */
    exec_both("UPDATE methods SET name = 'renamed' WHERE id = 105");
    same_rows("after the rename");
    int steps = 0;
    while (refresh_step(7)) {
        if (steps % 4 == 0)
            write_txn(12);
        ck_assert_int_lt(++steps, 2000);
    }
    ck_assert_int_gt(steps, 5);
    same_rows("after the rebuild");

    /* expiry: build 1's first two days, then build 3's first */
    const int64_t day0 = H(BASE_HOUR - 5);
    for (int e = 0; e < 2; e++) {
        expire(dbs[e], 1, 1, day0 + H(48));
        expire(dbs[e], 3, 2, day0 + H(24));
    }
    same_rows("after the expiry");
    write_txn(40);
    same_rows("after a write following the expiry");
    fprintf(stderr, "rollups_pg_test: %d rows compared\n", n_rows_compared);

    for (int e = 0; e < 2; e++)
        bl_db_close(dbs[e]);
    if (keep && *keep)
        return; /* the caller compares more, then removes it */
    const char *suffix[] = { "", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rollups_pg");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, same_rows_on_sqlite_and_postgresql);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
