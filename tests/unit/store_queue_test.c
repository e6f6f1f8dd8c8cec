/*
 * store_queue_test.c — store/queue.h on a real PostgreSQL database (issue
 * 19): the URL of a fresh database in $BEATLINE_TEST_PG_DB (ctest
 * store_queue_pg starts a throwaway cluster with tests/lib/pg.sh); skipped
 * (77) without it. Two connections play two nodes.
 *
 * Checked: a put is durable and a second put of the same id (or of a
 * processed one) is a duplicate; a claim leases rows of the given keys only,
 * oldest first, and another node's claim skips leased rows; a lease that
 * ran out is claimed by the other node; renewal keeps only the listed rows;
 * a finish rolled back keeps the row, committed removes it; a failed row is
 * never claimed; a row claimed too often fails; release makes rows
 * claimable at once; advisory locks exclude the other connection and are
 * given up when their connection closes; node-id blocks never overlap;
 * looking a build up (bl_wr_build_get) does not wait for another
 * connection's open transaction that wrote its row (a node's round).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/db.h"
#include "store/internal.h" /* bl_db_exec: SET statement_timeout */
#include "store/queue.h"
#include "store/stmt.h"
#include "store/writer.h"
#include "testutil.h"

static const char *url;
static bl_db *a, *b; /* node A's and node B's connections */

static void open_both(void)
{
    char err[256];
    ck_assert_msg(bl_db_open(url, 0, &a, err, sizeof err) == BL_OK, "%s", err);
    ck_assert_msg(bl_db_open(url, 0, &b, err, sizeof err) == BL_OK, "%s", err);
    bl_st *st = bl_st_get(a, "DELETE FROM raw_batches");
    ck_assert_int_eq(bl_st_done(st), BL_OK);
}

static void close_both(void)
{
    bl_db_close(a);
    bl_db_close(b);
    a = b = NULL;
}

static const char *uuid_n(int i)
{
    static char u[8][37];
    static int k;
    char *s = u[k++ % 8];
    snprintf(s, 37, "00000000-0000-4000-8000-%012d", i);
    return s;
}

typedef struct {
    char uuids[64][37];
    int n;
    int attempts[64];
    size_t lens[64];
} got;

static bl_err collect(const bl_queue_row *r, void *ctx)
{
    got *g = ctx;
    if (g->n < 64) {
        snprintf(g->uuids[g->n], 37, "%s", r->uuid);
        g->attempts[g->n] = r->attempts;
        g->lens[g->n] = r->len;
        g->n++;
    }
    return BL_OK;
}

static void put(bl_db *db, int i, int64_t app, const char *build, int want_dup)
{
    int dup = -1;
    char body[32];
    int n = snprintf(body, sizeof body, "body-%d", i);
    ck_assert_msg(bl_queue_put(db, uuid_n(i), app, build, 2, body, (size_t)n, &dup) == BL_OK,
                  "%s", bl_db_errmsg(db));
    ck_assert_int_eq(dup, want_dup);
}

static size_t claim(bl_db *db, const char *node, int64_t lease_us, const int64_t *keys,
                    size_t nk, size_t max, got *g)
{
    memset(g, 0, sizeof *g);
    size_t n;
    ck_assert_msg(bl_queue_claim(db, node, lease_us, keys, nk, max, collect, g, &n) == BL_OK,
                  "%s", bl_db_errmsg(db));
    ck_assert_int_eq((int)n, g->n);
    return n;
}

START_TEST(put_and_duplicates)
{
    open_both();
    put(a, 1, 1, "b1", 0);
    put(b, 1, 1, "b1", 1); /* the other node sees it at once: committed */
    int64_t live, leased, failed;
    ck_assert_int_eq(bl_queue_counts(b, &live, &leased, &failed), BL_OK);
    ck_assert_int_eq(live, 1);
    ck_assert_int_eq(leased, 0);
    ck_assert_int_eq(failed, 0);
    /* a processed batch (table batches) is a duplicate even once its row went */
    ck_assert_int_eq(bl_queue_finish(a, uuid_n(1)), BL_OK);
    bl_st *st = bl_st_get(a, "INSERT INTO apps (id, name, created_at) VALUES (1, 'q', 0) "
                             "ON CONFLICT DO NOTHING");
    ck_assert_msg(bl_st_done(st) == BL_OK, "%s", bl_db_errmsg(a));
    st = bl_st_get(a, "INSERT INTO builds (id, app_id, name, created_at) VALUES (1, 1, 'b1', 0) "
                      "ON CONFLICT DO NOTHING");
    ck_assert_msg(bl_st_done(st) == BL_OK, "%s", bl_db_errmsg(a));
    st = bl_st_get(a, "INSERT INTO batches (batch_id, app_id, build_id, received_at, "
                      "processed_at, records, malformed, bytes) VALUES "
                      "('00000000-0000-4000-8000-000000000001', 1, 1, 0, 0, 1, 0, 1)");
    ck_assert_msg(bl_st_done(st) == BL_OK, "%s", bl_db_errmsg(a));
    put(b, 1, 1, "b1", 1);
    ck_assert_int_eq(bl_queue_counts(b, &live, NULL, NULL), BL_OK);
    ck_assert_int_eq(live, 0);
    st = bl_st_get(a, "DELETE FROM batches");
    ck_assert_int_eq(bl_st_done(st), BL_OK);
    close_both();
}
END_TEST

START_TEST(claim_lease_skip_and_expiry)
{
    open_both();
    int64_t k1 = bl_queue_lock_key(1, "b1"), k2 = bl_queue_lock_key(1, "b2");
    ck_assert(k1 != k2);
    for (int i = 10; i < 15; i++)
        put(a, i, 1, "b1", 0);
    put(a, 20, 1, "b2", 0);
    int64_t keys[2] = { k1, k2 };
    size_t nk;
    ck_assert_int_eq(bl_queue_pending_keys(b, keys, 2, &nk), BL_OK);
    ck_assert_int_eq((int)nk, 2);
    got g;
    /* node A: 3 of b1's, oldest first, nothing of b2 */
    ck_assert_int_eq((int)claim(a, "A", 60000000, &k1, 1, 3, &g), 3);
    ck_assert_str_eq(g.uuids[0], uuid_n(10));
    ck_assert_str_eq(g.uuids[2], uuid_n(12));
    ck_assert_int_eq(g.attempts[0], 1);
    ck_assert_int_eq((int)g.lens[0], 7); /* "body-10" */
    /* node B: the two left, never A's leased ones */
    ck_assert_int_eq((int)claim(b, "B", 1, &k1, 1, 10, &g), 2);
    ck_assert_str_eq(g.uuids[0], uuid_n(13));
    /* B's 1 µs leases ran out: A claims them again (B "died") */
    usleep(2000);
    ck_assert_int_eq((int)claim(a, "A", 60000000, &k1, 1, 10, &g), 2);
    ck_assert_int_eq(g.attempts[0], 2);
    ck_assert_int_eq((int)claim(b, "B", 60000000, &k1, 1, 10, &g), 0);
    /* b1 has nothing claimable left; b2 has */
    ck_assert_int_eq(bl_queue_pending_keys(b, keys, 2, &nk), BL_OK);
    ck_assert_int_eq((int)nk, 1);
    ck_assert(keys[0] == k2);
    close_both();
}
END_TEST

START_TEST(renew_finish_fail_release)
{
    open_both();
    int64_t k = bl_queue_lock_key(2, "r");
    for (int i = 30; i < 34; i++)
        put(a, i, 2, "r", 0);
    got g;
    ck_assert_int_eq((int)claim(a, "A", 1, &k, 1, 10, &g), 4);
    /* renewal of the rows A still works on: 30 and 31 (32, 33 forgotten) */
    const char *keep[2] = { uuid_n(30), uuid_n(31) };
    int64_t n;
    ck_assert_int_eq(bl_queue_renew(a, "A", 60000000, keep, 2, &n), BL_OK);
    ck_assert_int_eq(n, 2);
    /* a row another transaction holds (the node's commit finishing it) is
     * skipped, not waited for (a wait could deadlock): bounded by a
     * statement timeout, renewal of 30 and 31 while b deletes 30 */
    ck_assert_int_eq(bl_db_exec(a, "SET statement_timeout = 3000"), BL_OK);
    ck_assert_int_eq(bl_db_begin(b), BL_OK);
    ck_assert_int_eq(bl_queue_finish(b, uuid_n(30)), BL_OK);
    ck_assert_int_eq(bl_queue_renew(a, "A", 60000000, keep, 2, &n), BL_OK);
    ck_assert_int_eq(n, 1);
    bl_db_rollback(b);
    ck_assert_int_eq(bl_db_exec(a, "SET statement_timeout = 0"), BL_OK);
    usleep(2000);
    ck_assert_int_eq((int)claim(b, "B", 60000000, &k, 1, 10, &g), 2); /* 32, 33 */
    ck_assert_str_eq(g.uuids[0], uuid_n(32));
    /* a finish rolled back leaves the row; committed removes it */
    ck_assert_int_eq(bl_db_begin(a), BL_OK);
    ck_assert_int_eq(bl_queue_finish(a, uuid_n(30)), BL_OK);
    bl_db_rollback(a);
    int64_t live, leased, failed;
    ck_assert_int_eq(bl_queue_counts(b, &live, &leased, &failed), BL_OK);
    ck_assert_int_eq(live, 4);
    ck_assert_int_eq(bl_db_begin(a), BL_OK);
    ck_assert_int_eq(bl_queue_finish(a, uuid_n(30)), BL_OK);
    ck_assert_int_eq(bl_db_commit(a), BL_OK);
    ck_assert_int_eq(bl_queue_counts(b, &live, &leased, &failed), BL_OK);
    ck_assert_int_eq(live, 3);
    /* failed: kept, never claimed again */
    ck_assert_int_eq(bl_queue_fail(a, uuid_n(31), "test"), BL_OK);
    ck_assert_int_eq(bl_queue_counts(b, &live, &leased, &failed), BL_OK);
    ck_assert_int_eq(live, 2);
    ck_assert_int_eq(failed, 1);
    /* B gives its leases up: claimable at once, by A */
    ck_assert_int_eq((int)claim(a, "A", 60000000, &k, 1, 10, &g), 0);
    ck_assert_int_eq(bl_queue_release(b, "B"), BL_OK);
    ck_assert_int_eq((int)claim(a, "A", 60000000, &k, 1, 10, &g), 2);
    close_both();
}
END_TEST

START_TEST(too_many_attempts_fail)
{
    open_both();
    int64_t k = bl_queue_lock_key(3, "p");
    put(a, 40, 3, "p", 0);
    got g;
    for (int i = 0; i < BL_QUEUE_MAX_ATTEMPTS; i++) {
        ck_assert_int_eq((int)claim(a, "A", 1, &k, 1, 10, &g), 1);
        usleep(1500);
    }
    ck_assert_int_eq((int)claim(a, "A", 1, &k, 1, 10, &g), 0);
    int64_t failed;
    ck_assert_int_eq(bl_queue_counts(a, NULL, NULL, &failed), BL_OK);
    ck_assert_int_eq(failed, 1);
    close_both();
}
END_TEST

START_TEST(advisory_locks_and_id_blocks)
{
    open_both();
    int got_a, got_b;
    ck_assert_int_eq(bl_queue_lock_try(a, 77, &got_a), BL_OK);
    ck_assert_int_eq(got_a, 1);
    ck_assert_int_eq(bl_queue_lock_try(b, 77, &got_b), BL_OK);
    ck_assert_int_eq(got_b, 0);
    /* A's session ends (a node killed): B gets the lock */
    bl_db_close(a);
    a = NULL;
    for (int i = 0; i < 100 && !got_b; i++) { /* the backend exits asynchronously */
        ck_assert_int_eq(bl_queue_lock_try(b, 77, &got_b), BL_OK);
        if (!got_b)
            usleep(20000);
    }
    ck_assert_int_eq(got_b, 1);
    ck_assert_int_eq(bl_queue_unlock(b, 77), BL_OK);
    char err[256];
    ck_assert_msg(bl_db_open(url, 0, &a, err, sizeof err) == BL_OK, "%s", err);
    int64_t f1, f2, f3;
    ck_assert_int_eq(bl_queue_node_id_block(a, &f1), BL_OK);
    ck_assert_int_eq(bl_queue_node_id_block(b, &f2), BL_OK);
    ck_assert_int_eq(bl_queue_node_id_block(a, &f3), BL_OK);
    ck_assert(f1 >= BL_NODE_ID_BLOCK);
    ck_assert(f2 >= f1 + BL_NODE_ID_BLOCK);
    ck_assert(f3 >= f2 + BL_NODE_ID_BLOCK);
    close_both();
}
END_TEST

START_TEST(given_back_reason_kept)
{
    open_both();
    int64_t k = bl_queue_lock_key(5, "gb");
    put(a, 50, 5, "gb", 0);
    put(a, 51, 5, "gb", 0);
    got g;
    /* 50: given back with a reason each time (its build's registration
     * failing); 51: its node stops each time (the lease runs out) */
    for (int i = 0; i < BL_QUEUE_MAX_ATTEMPTS; i++) {
        ck_assert_int_eq((int)claim(a, "A", 1, &k, 1, 10, &g), 2);
        ck_assert_int_eq(bl_queue_unlease(a, "A", uuid_n(50), "registration failed: test"),
                         BL_OK);
        usleep(1500);
    }
    ck_assert_int_eq((int)claim(a, "A", 1, &k, 1, 10, &g), 0);
    bl_st *st = bl_st_get(b, "SELECT error FROM raw_batches WHERE failed_at IS NOT NULL "
                             "ORDER BY batch_id");
    ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
    ck_assert_str_eq(bl_st_col_str(st, 0), "claimed 20 times without being finished (last given "
                                           "back by its node: registration failed: test)");
    ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
    ck_assert_str_eq(bl_st_col_str(st, 0), "claimed 20 times without being finished (its node "
                                           "stopped each time)");
    bl_st_reset(st);
    close_both();
}
END_TEST

START_TEST(build_get_waits_for_no_round)
{
    open_both();
    bl_st *st = bl_st_get(a, "INSERT INTO apps (id, name, created_at) VALUES (4, 'g', 0) "
                             "ON CONFLICT DO NOTHING");
    ck_assert_msg(bl_st_done(st) == BL_OK, "%s", bl_db_errmsg(a));
    /* past the ids put_and_duplicates gave by hand */
    ck_assert_int_eq(bl_db_exec(a, "SELECT setval(pg_get_serial_sequence('builds', 'id'), "
                                   "1000)"), BL_OK);
    int64_t id_a, id_b = -1;
    ck_assert_msg(bl_wr_build_get(a, 4, "gx", 1, &id_a) == BL_OK, "%s", bl_db_errmsg(a));
    /* node A's round counts a batch into the build: the row is written by
     * A's open transaction */
    ck_assert_int_eq(bl_db_begin(a), BL_OK);
    ck_assert_int_eq(bl_wr_build_count_batch(a, id_a, 3), BL_OK);
    /* node B's registration looks the build up: no lock wait (a wait runs
     * into the lock timeout and fails) */
    ck_assert_int_eq(bl_db_exec(b, "SET lock_timeout = 2000"), BL_OK);
    ck_assert_msg(bl_wr_build_get(b, 4, "gx", 2, &id_b) == BL_OK, "%s", bl_db_errmsg(b));
    ck_assert(id_b == id_a);
    /* a new build is still made */
    int64_t id_n = -1;
    ck_assert_msg(bl_wr_build_get(b, 4, "gy", 2, &id_n) == BL_OK, "%s", bl_db_errmsg(b));
    ck_assert(id_n > 0 && id_n != id_a);
    ck_assert_int_eq(bl_db_exec(b, "SET lock_timeout = 0"), BL_OK);
    bl_db_rollback(a);
    close_both();
}
END_TEST

START_TEST(reason_cut_in_a_utf8_sequence)
{
    open_both();
    int64_t k = bl_queue_lock_key(6, "u8");
    put(a, 60, 6, "u8", 0);
    put(a, 61, 6, "u8", 0);
    got g;
    /* reasons cut by their makers' byte limits inside a two-byte sequence
     * ("\xd0\xb1" is U+0431): PostgreSQL refuses such text, and the
     * statement — the round's commit — failed with it */
    ck_assert_int_eq((int)claim(a, "A", 60000000, &k, 1, 10, &g), 2);
    ck_assert_msg(bl_queue_fail(a, uuid_n(60), "build \xd0\xb1\xd0") == BL_OK, "%s",
                  bl_db_errmsg(a));
    ck_assert_msg(bl_queue_unlease(a, "A", uuid_n(61), "given back \xd0\xb1\xd0") == BL_OK,
                  "%s", bl_db_errmsg(a));
    bl_st *st = bl_st_get(b, "SELECT error FROM raw_batches WHERE batch_id IN "
                             "(CAST(?1 AS text), CAST(?2 AS text)) ORDER BY batch_id");
    bl_st_text(st, 1, uuid_n(60), -1);
    bl_st_text(st, 2, uuid_n(61), -1);
    ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
    ck_assert_str_eq(bl_st_col_str(st, 0), "build \xd0\xb1\xef\xbf\xbd");
    ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
    ck_assert_str_eq(bl_st_col_str(st, 0), "given back \xd0\xb1\xef\xbf\xbd");
    bl_st_reset(st);
    close_both();
}
END_TEST

int main(void)
{
    url = getenv("BEATLINE_TEST_PG_DB");
    if (!url || !*url) {
        fprintf(stderr, "store_queue_test: no BEATLINE_TEST_PG_DB: skipped\n");
        return 77;
    }
    Suite *s = suite_create("store_queue");
    TCase *t = tcase_create("store_queue");
    tcase_add_test(t, put_and_duplicates);
    tcase_add_test(t, claim_lease_skip_and_expiry);
    tcase_add_test(t, renew_finish_fail_release);
    tcase_add_test(t, too_many_attempts_fail);
    tcase_add_test(t, advisory_locks_and_id_blocks);
    tcase_add_test(t, build_get_waits_for_no_round);
    tcase_add_test(t, given_back_reason_kept);
    tcase_add_test(t, reason_cut_in_a_utf8_sequence);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
