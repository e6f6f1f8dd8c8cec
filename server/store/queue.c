/*
 * queue.c — the raw batch queue on PostgreSQL (see queue.h).
 */
#include "store/queue.h"
#include "store/stmt.h"
#include "common/buf.h"
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* now, µs since the epoch, on the database server's clock (the same for
 * every node) */
#define NOW_US "CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS bigint)"

int64_t bl_queue_lock_key(int64_t app_id, const char *build)
{
    return (int64_t)XXH3_64bits_withSeed(build, strlen(build), (uint64_t)app_id);
}

bl_err bl_queue_put(bl_db *db, const char *uuid, int64_t app_id, const char *build, int enc,
                    const void *body, size_t len, int *duplicate)
{
    *duplicate = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(
        db, "INSERT INTO raw_batches (batch_id, app_id, build, lock_key, enc, received_at, "
            "bytes, body) "
            "SELECT CAST(?1 AS text), CAST(?2 AS bigint), CAST(?3 AS text), CAST(?4 AS bigint), "
            "CAST(?5 AS integer), " NOW_US ", CAST(?6 AS bigint), CAST(?7 AS bytea) "
            "WHERE NOT EXISTS (SELECT 1 FROM batches WHERE batch_id = CAST(?1 AS text)) "
            "ON CONFLICT (batch_id) DO NOTHING");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, uuid, -1);
    bl_st_int64(st, 2, app_id);
    bl_st_text(st, 3, build, -1);
    bl_st_int64(st, 4, bl_queue_lock_key(app_id, build));
    bl_st_int64(st, 5, enc);
    bl_st_int64(st, 6, (int64_t)len);
    bl_st_blob(st, 7, body ? body : "", len);
    if (bl_st_step(st) == BL_ST_ERROR)
        return BL_EIO;
    *duplicate = bl_st_changes(st) == 0;
    bl_st_reset(st);
    return BL_OK;
}

/* "{k1,k2,…}" (PostgreSQL array text) of keys[0..n): malloc'd, caller frees. */
static char *key_array(const int64_t *keys, size_t n)
{
    char *s = malloc(n * 21 + 3);
    if (!s)
        return NULL;
    size_t o = 0;
    s[o++] = '{';
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(s + o, "%s%lld", i ? "," : "", (long long)keys[i]);
    s[o++] = '}';
    s[o] = '\0';
    return s;
}

bl_err bl_queue_claim(bl_db *db, const char *node, int64_t lease_us, const int64_t *keys,
                      size_t n_keys, size_t max_rows, bl_queue_row_cb cb, void *ctx,
                      size_t *n_out)
{
    *n_out = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    if (!n_keys || !max_rows)
        return BL_OK;
    char *arr = key_array(keys, n_keys);
    if (!arr)
        return BL_ENOMEM;
    /* rows claimed too often (their node died each time) fail instead */
    bl_st *st = bl_st_get(
        db, "UPDATE raw_batches SET failed_at = " NOW_US ", lease_owner = NULL, "
            "lease_until = NULL, error = 'claimed ' || attempts || ' times without being "
            "finished (' || coalesce('last given back by its node: ' || error, "
            "'its node stopped each time') || ')' "
            "WHERE lock_key = ANY (CAST(?1 AS bigint[])) AND failed_at IS NULL "
            "AND attempts >= CAST(?2 AS integer) "
            "AND (lease_until IS NULL OR lease_until < " NOW_US ")");
    if (!st) {
        free(arr);
        return BL_EIO;
    }
    bl_st_text(st, 1, arr, -1);
    bl_st_int64(st, 2, BL_QUEUE_MAX_ATTEMPTS);
    if (bl_st_done(st)) {
        free(arr);
        return BL_EIO;
    }
    /* a build's deletion row runs after every batch received before it:
     * while an earlier live row of its build is leased by another node (one
     * that died, or whose session was lost and that has not given up its
     * claims yet) it is not claimed; those rows come first once their lease
     * runs out or is given up */
    st = bl_st_get(
        db, "WITH c AS (SELECT q.id FROM raw_batches q "
            "WHERE q.lock_key = ANY (CAST(?3 AS bigint[])) AND q.failed_at IS NULL "
            "AND (q.lease_until IS NULL OR q.lease_until < " NOW_US ") "
            "AND (q.enc <> CAST(?5 AS integer) OR NOT EXISTS (SELECT 1 FROM raw_batches e "
            "WHERE e.lock_key = q.lock_key AND e.id < q.id AND e.failed_at IS NULL "
            "AND e.lease_until >= " NOW_US " "
            "AND e.lease_owner IS DISTINCT FROM CAST(?1 AS text))) "
            "ORDER BY q.id LIMIT CAST(?4 AS bigint) FOR UPDATE OF q SKIP LOCKED), "
            "u AS (UPDATE raw_batches r SET lease_owner = CAST(?1 AS text), "
            "lease_until = " NOW_US " + CAST(?2 AS bigint), attempts = r.attempts + 1 "
            "FROM c WHERE r.id = c.id "
            "RETURNING r.id, r.batch_id, r.app_id, r.build, r.lock_key, r.enc, r.received_at, "
            "r.attempts, r.body) "
            "SELECT batch_id, app_id, build, lock_key, enc, received_at, attempts, body "
            "FROM u ORDER BY id");
    if (!st) {
        free(arr);
        return BL_EIO;
    }
    /* one claimed body in the client at a time (each up to --max-body, twice
     * that as bytea's hex text), not all of them at once */
    bl_st_stream(st, BL_ST_ROW_BY_ROW);
    bl_st_text(st, 1, node, -1);
    bl_st_int64(st, 2, lease_us);
    bl_st_text(st, 3, arr, -1);
    bl_st_int64(st, 4, (int64_t)max_rows);
    bl_st_int64(st, 5, BL_QUEUE_ENC_DROP);
    free(arr);
    int rc;
    bl_err err = BL_OK;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_queue_row r = {
            .uuid = bl_st_col_str(st, 0),
            .app_id = bl_st_col_int64(st, 1),
            .build = bl_st_col_str(st, 2),
            .lock_key = bl_st_col_int64(st, 3),
            .enc = (int)bl_st_col_int64(st, 4),
            .received_at = bl_st_col_int64(st, 5),
            .attempts = (int)bl_st_col_int64(st, 6),
            .body = bl_st_col_blob(st, 7),
            .len = bl_st_col_bytes(st, 7),
        };
        (*n_out)++;
        if (!err)
            err = cb(&r, ctx);
    }
    bl_st_reset(st);
    if (rc == BL_ST_ERROR)
        return BL_EIO;
    return err;
}

bl_err bl_queue_pending_keys(bl_db *db, int64_t *keys, size_t max, size_t *n)
{
    *n = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT DISTINCT lock_key FROM raw_batches "
                              "WHERE failed_at IS NULL "
                              "AND (lease_until IS NULL OR lease_until < " NOW_US ") "
                              "ORDER BY lock_key LIMIT CAST(?1 AS bigint)");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, (int64_t)max);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW)
        if (*n < max)
            keys[(*n)++] = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return rc == BL_ST_ERROR ? BL_EIO : BL_OK;
}

bl_err bl_queue_renew(bl_db *db, const char *node, int64_t lease_us,
                      const char *const *uuids, size_t n_uuids, int64_t *n)
{
    *n = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    if (!n_uuids)
        return BL_OK;
    /* "{u1,u2,…}": canonical UUIDs need no quoting */
    char *arr = malloc(n_uuids * 37 + 3);
    if (!arr)
        return BL_ENOMEM;
    size_t o = 0;
    arr[o++] = '{';
    for (size_t i = 0; i < n_uuids; i++) {
        if (i)
            arr[o++] = ',';
        size_t l = strnlen(uuids[i], 36);
        memcpy(arr + o, uuids[i], l);
        o += l;
    }
    arr[o++] = '}';
    arr[o] = '\0';
    /* rows locked by another transaction — the node's own commit finishing
     * or failing them — are skipped, not waited for: waiting on rows
     * locked in another order could deadlock; a row whose finish rolls
     * back is renewed at the next tick, long before its lease runs out */
    bl_st *st = bl_st_get(db, "UPDATE raw_batches SET lease_until = " NOW_US
                              " + CAST(?2 AS bigint) "
                              "WHERE batch_id IN (SELECT batch_id FROM raw_batches "
                              "WHERE lease_owner = CAST(?1 AS text) AND failed_at IS NULL "
                              "AND batch_id = ANY (CAST(?3 AS text[])) "
                              "ORDER BY batch_id FOR UPDATE SKIP LOCKED)");
    if (!st) {
        free(arr);
        return BL_EIO;
    }
    bl_st_text(st, 1, node, -1);
    bl_st_int64(st, 2, lease_us);
    bl_st_text(st, 3, arr, -1);
    free(arr);
    if (bl_st_step(st) == BL_ST_ERROR)
        return BL_EIO;
    *n = bl_st_changes(st);
    bl_st_reset(st);
    return BL_OK;
}

bl_err bl_queue_release(bl_db *db, const char *node)
{
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "UPDATE raw_batches SET lease_owner = NULL, lease_until = NULL "
                              "WHERE lease_owner = CAST(?1 AS text)");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, node, -1);
    return bl_st_done(st);
}

/* Binds a failure reason (NULL: SQL NULL) as text PostgreSQL accepts: the
 * reasons are cut to a few hundred bytes by their makers, which can split a
 * UTF-8 sequence (a build name, a localised server message), and text that
 * is not valid UTF-8 fails the statement — and with it the round's commit.
 * Invalid sequences become U+FFFD (bl_utf8_repair); out of memory binds the
 * valid prefix. */
static void bind_reason(bl_st *st, int i, const char *why)
{
    if (!why) {
        bl_st_null(st, i);
        return;
    }
    size_t n = strlen(why);
    size_t ok = bl_utf8_check((const uint8_t *)why, n);
    if (ok == n) {
        bl_st_text(st, i, why, -1);
        return;
    }
    bl_buf b;
    bl_buf_init(&b, 0);
    if (bl_utf8_repair(why, n, &b) == BL_OK)
        bl_st_text(st, i, b.data, (int)b.len);
    else
        bl_st_text(st, i, why, (int)ok);
    bl_buf_cleanup(&b);
}

bl_err bl_queue_unlease(bl_db *db, const char *node, const char *uuid, const char *why)
{
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "UPDATE raw_batches SET lease_owner = NULL, lease_until = NULL, "
                              "error = coalesce(CAST(?3 AS text), error) "
                              "WHERE batch_id = CAST(?2 AS text) "
                              "AND lease_owner = CAST(?1 AS text)");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, node, -1);
    bl_st_text(st, 2, uuid, -1);
    bind_reason(st, 3, why);
    return bl_st_done(st);
}

bl_err bl_queue_finish(bl_db *db, const char *uuid)
{
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "DELETE FROM raw_batches WHERE batch_id = CAST(?1 AS text)");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, uuid, -1);
    return bl_st_done(st);
}

bl_err bl_queue_fail(bl_db *db, const char *uuid, const char *why)
{
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "UPDATE raw_batches SET failed_at = " NOW_US ", error = "
                              "CAST(?2 AS text), lease_owner = NULL, lease_until = NULL "
                              "WHERE batch_id = CAST(?1 AS text)");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, uuid, -1);
    bind_reason(st, 2, why);
    return bl_st_done(st);
}

bl_err bl_queue_drop(bl_db *db, const char *uuid)
{
    return bl_queue_finish(db, uuid);
}

bl_err bl_queue_counts(bl_db *db, int64_t *live, int64_t *leased, int64_t *failed)
{
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(
        db, "SELECT count(*) FILTER (WHERE failed_at IS NULL), "
            "count(*) FILTER (WHERE failed_at IS NULL AND lease_until >= " NOW_US "), "
            "count(*) FILTER (WHERE failed_at IS NOT NULL) FROM raw_batches "
            "WHERE enc <> CAST(?1 AS integer)");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, BL_QUEUE_ENC_DROP);
    if (bl_st_step(st) != BL_ST_ROW) {
        bl_st_reset(st);
        return BL_EIO;
    }
    if (live)
        *live = bl_st_col_int64(st, 0);
    if (leased)
        *leased = bl_st_col_int64(st, 1);
    if (failed)
        *failed = bl_st_col_int64(st, 2);
    bl_st_reset(st);
    return BL_OK;
}

bl_err bl_queue_exists(bl_db *db, const char *uuid, int *exists)
{
    *exists = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT 1 FROM raw_batches WHERE batch_id = CAST(?1 AS text)");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, uuid, -1);
    int rc = bl_st_step(st);
    *exists = rc == BL_ST_ROW;
    bl_st_reset(st);
    return rc == BL_ST_ERROR ? BL_EIO : BL_OK;
}

bl_err bl_queue_build_has(bl_db *db, int64_t app_id, const char *build, int *has)
{
    *has = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT 1 FROM raw_batches WHERE app_id = CAST(?1 AS bigint) "
                              "AND build = CAST(?2 AS text) AND enc <> CAST(?3 AS integer) "
                              "LIMIT 1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_text(st, 2, build, -1);
    bl_st_int64(st, 3, BL_QUEUE_ENC_DROP);
    int rc = bl_st_step(st);
    *has = rc == BL_ST_ROW;
    bl_st_reset(st);
    return rc == BL_ST_ERROR ? BL_EIO : BL_OK;
}

bl_err bl_queue_gauges(bl_db *db, int64_t *waiting, int64_t *leased, int64_t *failed,
                       int64_t *oldest_s)
{
    *waiting = *leased = *failed = *oldest_s = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    /* one scan of the table (it holds what is waiting and what failed,
     * never the processed batches); the oldest live row by the claim
     * index's order (ids grow with time) */
    bl_st *st = bl_st_get(
        db, "WITH n AS (SELECT " NOW_US " AS t) "
            "SELECT count(*) FILTER (WHERE failed_at IS NULL AND (lease_until IS NULL OR "
            "lease_until < n.t)), "
            "count(*) FILTER (WHERE failed_at IS NULL AND lease_until >= n.t), "
            "count(*) FILTER (WHERE failed_at IS NOT NULL), "
            "COALESCE(max(n.t - received_at) FILTER (WHERE failed_at IS NULL), 0) / 1000000 "
            "FROM raw_batches, n WHERE enc <> CAST(?1 AS integer)");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, BL_QUEUE_ENC_DROP);
    if (bl_st_step(st) != BL_ST_ROW) {
        bl_st_reset(st);
        return BL_EIO;
    }
    *waiting = bl_st_col_int64(st, 0);
    *leased = bl_st_col_int64(st, 1);
    *failed = bl_st_col_int64(st, 2);
    *oldest_s = bl_st_col_int64(st, 3);
    if (*oldest_s < 0)
        *oldest_s = 0;
    bl_st_reset(st);
    return BL_OK;
}

bl_err bl_queue_failed_expire(bl_db *db, int64_t before_us, int64_t max, int64_t *n)
{
    *n = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(
        db, "DELETE FROM raw_batches WHERE id IN (SELECT id FROM raw_batches "
            "WHERE failed_at IS NOT NULL AND failed_at < CAST(?1 AS bigint) "
            "ORDER BY id LIMIT CAST(?2 AS bigint))");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, before_us);
    bl_st_int64(st, 2, max);
    if (bl_st_step(st) == BL_ST_ERROR)
        return BL_EIO;
    *n = bl_st_changes(st);
    bl_st_reset(st);
    return BL_OK;
}

/* One pg_try_advisory_*lock call (sql) on key: *got 1 when taken. */
static bl_err try_lock(bl_db *db, const char *sql, int64_t key, int *got)
{
    *got = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, sql);
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, key);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *got = bl_st_col_int64(st, 0) != 0;
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

bl_err bl_queue_lock_try(bl_db *db, int64_t key, int *got)
{
    return try_lock(db, "SELECT pg_try_advisory_lock(CAST(?1 AS bigint))", key, got);
}

bl_err bl_queue_xact_lock_try(bl_db *db, int64_t key, int *got)
{
    return try_lock(db, "SELECT pg_try_advisory_xact_lock(CAST(?1 AS bigint))", key, got);
}

bl_err bl_queue_unlock(bl_db *db, int64_t key)
{
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT pg_advisory_unlock(CAST(?1 AS bigint))");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, key);
    int rc = bl_st_step(st);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

bl_err bl_queue_node_id_block(bl_db *db, int64_t *first)
{
    *first = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT nextval('call_node_id_blocks')");
    if (!st)
        return BL_EIO;
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *first = bl_st_col_int64(st, 0) * BL_NODE_ID_BLOCK;
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

/* a build's files are in the database (method-ID file, and the mapping
 * unless its names are known not to be obfuscated); ?1 app, BUILD the
 * build's name (an SQL expression) */
#define READY_SQL(BUILD)                                                                      \
    "(EXISTS (SELECT 1 FROM build_files f WHERE f.app_id = ?1 AND f.build = " BUILD " "       \
    "AND f.kind = 'method-ids') AND (EXISTS (SELECT 1 FROM build_files f WHERE "              \
    "f.app_id = ?1 AND f.build = " BUILD " AND f.kind = 'mapping') OR NOT EXISTS (SELECT 1 "  \
    "FROM builds b WHERE b.app_id = ?1 AND b.name = " BUILD " "                               \
    "AND coalesce(b.methodids_obfuscated, 0) <> 0)))"

bl_err bl_queue_waiting_of(bl_db *db, int64_t app_id, const char *build, bl_queue_waiting *w)
{
    memset(w, 0, sizeof *w);
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "WITH g AS (SELECT build, count(*) AS n, sum(bytes) AS b "
                              "FROM raw_batches WHERE app_id = ?1 AND failed_at IS NULL "
                              "GROUP BY build), "
                              "w AS (SELECT * FROM g WHERE NOT " READY_SQL("g.build") ") "
                              "SELECT coalesce(sum(n), 0), coalesce(sum(b), 0), count(*), "
                              "coalesce(bool_or(build = CAST(?2 AS text)), false), "
                              READY_SQL("CAST(?2 AS text)") " FROM w");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_text(st, 2, build, -1);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        w->batches = bl_st_col_int64(st, 0);
        w->bytes = bl_st_col_int64(st, 1);
        w->builds = bl_st_col_int64(st, 2);
        w->build_waits = bl_st_col_int64(st, 3) != 0;
        w->build_ready = bl_st_col_int64(st, 4) != 0;
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}
