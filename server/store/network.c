/*
 * network.c — network-request aggregates and user URL patterns in SQLite or
 * PostgreSQL (see network.h).
 */
#include "store/network.h"

#include <stdio.h>
#include "store/internal.h"
#include "store/stmt.h"

/* ---- user URL patterns ------------------------------------------------------ */

bl_err bl_net_patterns_set(bl_db *db, int64_t app_id, const char *const *pats, size_t n,
                           int64_t now_us)
{
    bl_st *st = bl_st_get(db, "DELETE FROM url_patterns WHERE app_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    if (bl_st_done(st))
        return BL_EIO;
    st = bl_st_get(db, "INSERT INTO url_patterns (app_id, pos, pattern) VALUES (?, ?, ?)");
    if (!st)
        return BL_EIO;
    for (size_t i = 0; i < n; i++) {
        bl_st_int64(st, 1, app_id);
        bl_st_int64(st, 2, (int64_t)i);
        bl_st_text(st, 3, pats[i], -1);
        if (bl_st_done(st))
            return BL_EIO;
    }
    st = bl_st_get(db, "INSERT INTO url_pattern_sets (app_id, updated_at) VALUES (?, ?) "
                       "ON CONFLICT(app_id) DO UPDATE SET updated_at = excluded.updated_at");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_int64(st, 2, now_us);
    return bl_st_done(st);
}

static bl_err list_patterns(bl_st *st, int (*cb)(const char *p, void *ctx), void *ctx)
{
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW)
        if (cb(bl_st_col_str(st, 0), ctx)) {
            rc = BL_ST_DONE;
            break;
        }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_net_patterns_get(bl_db *db, int64_t app_id, int (*cb)(const char *p, void *ctx),
                           void *ctx, int64_t *updated_at)
{
    if (updated_at) {
        bl_st *st = bl_st_get(db, "SELECT updated_at FROM url_pattern_sets WHERE app_id = ?");
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, app_id);
        int rc = bl_st_step(st);
        *updated_at = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : -1;
        bl_st_reset(st);
        if (rc != BL_ST_ROW && rc != BL_ST_DONE)
            return BL_EIO;
    }
    bl_st *st = bl_st_get(db, "SELECT pattern FROM url_patterns WHERE app_id = ? ORDER BY pos");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    return list_patterns(st, cb, ctx);
}

bl_err bl_net_patterns_of_build(bl_db *db, int64_t build_id,
                                int (*cb)(const char *p, void *ctx), void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT p.pattern FROM url_patterns p JOIN builds b "
                              "ON b.app_id = p.app_id WHERE b.id = ? ORDER BY p.pos");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    return list_patterns(st, cb, ctx);
}

/* ---- writing aggregates ------------------------------------------------------ */

/* The id of group (build, host, method, pattern), or 0 when there is none. */
static bl_err find_group(bl_db *db, int64_t build_id, const char *host, const char *method,
                         const char *pattern, int64_t *id)
{
    bl_st *st = bl_st_get(db, "SELECT id FROM net_groups WHERE build_id = ? AND host = ? AND "
                              "http_method = ? AND pattern = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_text(st, 2, host, -1);
    bl_st_text(st, 3, method, -1);
    bl_st_text(st, 4, pattern, -1);
    int rc = bl_st_step(st);
    *id = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : 0;
    bl_st_reset(st);
    return rc == BL_ST_ROW || rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

static bl_err get_group(bl_db *db, const bl_net_add_row *r, int64_t *id)
{
    const char *host = r->host, *pattern = r->pattern;
    if (find_group(db, r->build_id, host, r->http_method, pattern, id))
        return BL_EIO;
    if (*id)
        return BL_OK;
    bl_st *st = bl_st_get(db, "SELECT count(*) FROM net_groups WHERE build_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, r->build_id);
    int rc = bl_st_step(st);
    int64_t n = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : 0;
    bl_st_reset(st);
    if (rc != BL_ST_ROW)
        return BL_EIO;
    if (n >= BL_NET_GROUPS_MAX) {
        host = pattern = BL_NET_OTHER;
        if (find_group(db, r->build_id, host, r->http_method, pattern, id))
            return BL_EIO;
        if (*id)
            return BL_OK;
    }
    /* DO NOTHING: on PostgreSQL another node may have inserted the group
     * since find_group (it is found below then) */
    st = bl_st_get(db, "INSERT INTO net_groups (build_id, host, http_method, pattern) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, r->build_id);
    bl_st_text(st, 2, host, -1);
    bl_st_text(st, 3, r->http_method, -1);
    bl_st_text(st, 4, pattern, -1);
    rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *id = bl_st_col_int64(st, 0);
    if (rc == BL_ST_ROW)
        rc = bl_st_step(st);
    bl_st_reset(st);
    if (rc != BL_ST_DONE)
        return BL_EIO;
    if (!*id && find_group(db, r->build_id, host, r->http_method, pattern, id))
        return BL_EIO;
    return *id ? BL_OK : BL_EIO;
}

#define NET_SET_SUMS(T)                                                                         \
    "count = " T "count + excluded.count, errors = " T "errors + excluded.errors, "            \
    "s1xx = " T "s1xx + excluded.s1xx, s2xx = " T "s2xx + excluded.s2xx, "                     \
    "s3xx = " T "s3xx + excluded.s3xx, s4xx = " T "s4xx + excluded.s4xx, "                     \
    "s5xx = " T "s5xx + excluded.s5xx, failed = " T "failed + excluded.failed, "               \
    "dns_us = " BL_SQL_SATADD(T "dns_us", "excluded.dns_us") ", "                              \
    "dns_n = " T "dns_n + excluded.dns_n, "                                                    \
    "connect_us = " BL_SQL_SATADD(T "connect_us", "excluded.connect_us") ", "                  \
    "connect_n = " T "connect_n + excluded.connect_n, "                                        \
    "tls_us = " BL_SQL_SATADD(T "tls_us", "excluded.tls_us") ", "                              \
    "tls_n = " T "tls_n + excluded.tls_n, "                                                    \
    "bytes_in = " BL_SQL_SATADD(T "bytes_in", "excluded.bytes_in") ", "                        \
    "bytes_out = " BL_SQL_SATADD(T "bytes_out", "excluded.bytes_out")
#define NET_INSERT(AS)                                                                          \
    "INSERT INTO net_stats " AS "(grp, hour, count, errors, s1xx, s2xx, s3xx, s4xx, s5xx, "    \
    "failed, max_us, sketch, ttfb_max_us, ttfb_sketch, dns_us, dns_n, connect_us, connect_n, " \
    "tls_us, tls_n, bytes_in, bytes_out) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "    \
    "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22) "                             \
    "ON CONFLICT(grp, hour) DO UPDATE SET "

static const char stats_upsert[] =
    NET_INSERT("") NET_SET_SUMS("") ", max_us = max(max_us, excluded.max_us), "
    "sketch = sketch_merge(sketch, excluded.sketch), "
    "ttfb_max_us = max(ttfb_max_us, excluded.ttfb_max_us), "
    "ttfb_sketch = sketch_merge(ttfb_sketch, excluded.ttfb_sketch)";
/* PostgreSQL: ?12 and ?14 are the merged sketches, ?23 whether the row was
 * there (locked) when they were merged (see bl_st_sketch_lock_merge) */
static const char stats_upsert_pg[] =
    NET_INSERT("AS s ") NET_SET_SUMS("s.") ", max_us = GREATEST(s.max_us, excluded.max_us), "
    "sketch = excluded.sketch, ttfb_max_us = GREATEST(s.ttfb_max_us, excluded.ttfb_max_us), "
    "ttfb_sketch = excluded.ttfb_sketch WHERE CAST(?23 AS bigint) = 1";

bl_err bl_net_add(bl_db *db, const bl_net_add_row *r, int64_t *group)
{
    int64_t g;
    if (get_group(db, r, &g))
        return BL_EIO;
    int pg = bl_db_is_pg(db);
    bl_buf merged[2];
    bl_buf_init(&merged[0], 0);
    bl_buf_init(&merged[1], 0);
    bl_err err = BL_EIO;
    /* PostgreSQL: a row that appears between the lock and the insert is
     * locked on the next turn */
    for (int turn = 0; turn < 3; turn++) {
        int found = 0;
        const void *sk[2] = { r->sketch, r->ttfb_sketch };
        size_t sk_len[2] = { r->sketch_len, r->ttfb_sketch_len };
        if (pg) {
            bl_st *lock = bl_st_get(db, "SELECT sketch, ttfb_sketch FROM net_stats WHERE "
                                        "grp = ? AND hour = ? FOR UPDATE");
            if (!lock)
                break;
            bl_st_int64(lock, 1, g);
            bl_st_int64(lock, 2, r->hour);
            if ((err = bl_st_sketch_lock_merge(lock, 2, sk, sk_len, merged, &found)))
                break;
            for (int k = 0; k < 2; k++) {
                sk[k] = merged[k].data;
                sk_len[k] = merged[k].len;
            }
            err = BL_EIO;
        }
        bl_st *st = bl_st_get2(db, stats_upsert, stats_upsert_pg);
        if (!st)
            break;
        int64_t v[] = { g, r->hour, r->count, r->errors, r->status[0], r->status[1],
                        r->status[2], r->status[3], r->status[4], r->status[5], r->max_us };
        for (int i = 0; i < 11; i++)
            bl_st_int64(st, i + 1, v[i]);
        bl_st_blob(st, 12, sk[0], sk_len[0]);
        bl_st_int64(st, 13, r->ttfb_max_us);
        bl_st_blob(st, 14, sk[1], sk_len[1]);
        int64_t w[] = { r->dns_us, r->dns_n, r->connect_us, r->connect_n, r->tls_us, r->tls_n,
                        r->bytes_in, r->bytes_out };
        for (int i = 0; i < 8; i++)
            bl_st_int64(st, i + 15, w[i]);
        if (pg)
            bl_st_int64(st, 23, found);
        if (bl_st_done(st))
            break;
        if (!pg || bl_st_changes(st) > 0) {
            err = BL_OK;
            break;
        }
    }
    bl_buf_cleanup(&merged[0]);
    bl_buf_cleanup(&merged[1]);
    if (!err)
        *group = g;
    return err;
}

bl_err bl_net_caller_add(bl_db *db, int64_t group, int64_t hour, int64_t method_id,
                         int64_t count)
{
    bl_st *st = bl_st_get(db, "INSERT INTO net_callers AS c (grp, hour, method_id, count) "
                              "VALUES (?, ?, ?, ?) ON CONFLICT(grp, hour, method_id) "
                              "DO UPDATE SET count = c.count + excluded.count");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, group);
    bl_st_int64(st, 2, hour);
    bl_st_int64(st, 3, method_id);
    bl_st_int64(st, 4, count);
    return bl_st_done(st);
}

/* ---- reading ------------------------------------------------------------------ */

bl_err bl_net_groups(bl_db *db, int64_t build_id, int64_t hour_from, int64_t hour_to,
                     const char *host, const char *http_method,
                     int (*cb)(const bl_net_group *g, void *ctx), void *ctx)
{
    /* every sum saturated (BL_SQL_SATSUM): µs and bytes over hours pass 2^63
     * long before any row does */
#define GROUPS_SQL(SUM, UNION)                                                                  \
    "SELECT g.id, g.host, g.http_method, g.pattern, " SUM("s.count") ", " SUM("s.errors") ", " \
    SUM("s.s1xx") ", " SUM("s.s2xx") ", " SUM("s.s3xx") ", " SUM("s.s4xx") ", "                \
    SUM("s.s5xx") ", " SUM("s.failed") ", max(s.max_us), max(s.ttfb_max_us), "                 \
    UNION("s.sketch") ", " UNION("s.ttfb_sketch") ", " SUM("s.dns_us") ", " SUM("s.dns_n")     \
    ", " SUM("s.connect_us") ", " SUM("s.connect_n") ", " SUM("s.tls_us") ", "                 \
    SUM("s.tls_n") ", " SUM("s.bytes_in") ", " SUM("s.bytes_out") " "                          \
    "FROM net_groups g JOIN net_stats s ON s.grp = g.id "                                      \
    "WHERE g.build_id = ?1 AND s.hour BETWEEN ?2 AND ?3 "                                      \
    "AND (CAST(?4 AS text) IS NULL OR g.host = ?4) "                                           \
    "AND (CAST(?5 AS text) IS NULL OR g.http_method = ?5) GROUP BY g.id ORDER BY g.id"
#define SK_UNION(x) "sketch_union(" x ")"
    bl_st *st = bl_st_get2(db, GROUPS_SQL(BL_SQL_SATSUM, SK_UNION),
                           GROUPS_SQL(BL_SQL_SATSUM_PG, BL_SQL_SKETCHES_PG));
#undef GROUPS_SQL
#undef SK_UNION
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_WIDE);
    int pg = bl_db_is_pg(db);
    bl_buf sk[2];
    bl_buf_init(&sk[0], 0);
    bl_buf_init(&sk[1], 0);
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, hour_from);
    bl_st_int64(st, 3, hour_to);
    if (host)
        bl_st_text(st, 4, host, -1);
    else
        bl_st_null(st, 4);
    if (http_method)
        bl_st_text(st, 5, http_method, -1);
    else
        bl_st_null(st, 5);
    int rc;
    bl_err err = BL_OK;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_net_group g = {
            .id = bl_st_col_int64(st, 0), .host = bl_st_col_str(st, 1),
            .http_method = bl_st_col_str(st, 2), .pattern = bl_st_col_str(st, 3),
            .count = bl_st_col_int64(st, 4), .errors = bl_st_col_int64(st, 5),
            .max_us = bl_st_col_int64(st, 12), .ttfb_max_us = bl_st_col_int64(st, 13),
        };
        if (pg) {
            if ((err = bl_st_col_sketch_union(st, 14, &sk[0])) ||
                (err = bl_st_col_sketch_union(st, 15, &sk[1])))
                break;
            g.sketch = sk[0].data;
            g.sketch_len = sk[0].len;
            g.ttfb_sketch = sk[1].data;
            g.ttfb_sketch_len = sk[1].len;
        } else {
            g.sketch = bl_st_col_blob(st, 14);
            g.sketch_len = bl_st_col_bytes(st, 14);
            g.ttfb_sketch = bl_st_col_blob(st, 15);
            g.ttfb_sketch_len = bl_st_col_bytes(st, 15);
        }
        for (int i = 0; i < 6; i++)
            g.status[i] = bl_st_col_int64(st, 6 + i);
        int64_t *w[] = { &g.dns_us, &g.dns_n, &g.connect_us, &g.connect_n, &g.tls_us,
                         &g.tls_n, &g.bytes_in, &g.bytes_out };
        for (int i = 0; i < 8; i++)
            *w[i] = bl_st_col_int64(st, 16 + i);
        if (cb(&g, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    bl_buf_cleanup(&sk[0]);
    bl_buf_cleanup(&sk[1]);
    return err ? err : rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_net_callers(bl_db *db, int64_t build_id, int64_t group, int64_t hour_from,
                      int64_t hour_to, int64_t limit,
                      int (*cb)(const bl_net_caller *c, void *ctx), void *ctx)
{
#define CALLERS_SQL(SUM)                                                                        \
    "SELECT c.method_id, " SUM("c.count") " AS n, m.class, m.name, m.descriptor, "             \
    "m.source_file FROM net_callers c LEFT JOIN methods m ON m.build_id = ?1 AND "             \
    "m.method_id = c.method_id WHERE c.grp = ?2 AND c.hour BETWEEN ?3 AND ?4 "                 \
    "GROUP BY c.method_id, m.class, m.name, m.descriptor, m.source_file "                      \
    "ORDER BY n DESC, c.method_id LIMIT ?5"
    bl_st *st = bl_st_get2(db, CALLERS_SQL(BL_SQL_SATSUM), CALLERS_SQL(BL_SQL_SATSUM_PG));
#undef CALLERS_SQL
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, group);
    bl_st_int64(st, 3, hour_from);
    bl_st_int64(st, 4, hour_to);
    bl_st_int64(st, 5, limit);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        char name[64];
        int64_t mid = bl_st_col_int64(st, 0);
        bl_blk_names n = bl_st_method_names(st, 2, mid, name, sizeof name);
        bl_net_caller c = { mid, bl_st_col_int64(st, 1), n.cls, n.name, n.descriptor,
                            n.source_file };
        if (cb(&c, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}
