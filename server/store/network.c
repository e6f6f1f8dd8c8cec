/*
 * network.c — network-request aggregates and user URL patterns in SQLite
 * (see network.h).
 */
#include "store/network.h"

#include <stdio.h>
#include "store/internal.h"

/* ---- user URL patterns ------------------------------------------------------ */

bl_err bl_net_patterns_set(bl_db *db, int64_t app_id, const char *const *pats, size_t n,
                           int64_t now_us)
{
    sqlite3_stmt *st = bl_db_stmt(db, "DELETE FROM url_patterns WHERE app_id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    if (bl_db_step_done(st))
        return BL_EIO;
    st = bl_db_stmt(db, "INSERT INTO url_patterns (app_id, pos, pattern) VALUES (?, ?, ?)");
    if (!st)
        return BL_EIO;
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, app_id);
        sqlite3_bind_int64(st, 2, (int64_t)i);
        sqlite3_bind_text(st, 3, pats[i], -1, SQLITE_TRANSIENT);
        if (bl_db_step_done(st))
            return BL_EIO;
    }
    st = bl_db_stmt(db, "INSERT INTO url_pattern_sets (app_id, updated_at) VALUES (?, ?) "
                        "ON CONFLICT(app_id) DO UPDATE SET updated_at = excluded.updated_at");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    sqlite3_bind_int64(st, 2, now_us);
    return bl_db_step_done(st);
}

static bl_err list_patterns(sqlite3_stmt *st, int (*cb)(const char *p, void *ctx), void *ctx)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (cb(bl_db_text(st, 0), ctx)) {
            rc = SQLITE_DONE;
            break;
        }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_net_patterns_get(bl_db *db, int64_t app_id, int (*cb)(const char *p, void *ctx),
                           void *ctx, int64_t *updated_at)
{
    if (updated_at) {
        sqlite3_stmt *st = bl_db_stmt(db, "SELECT updated_at FROM url_pattern_sets "
                                          "WHERE app_id = ?");
        if (!st)
            return BL_EIO;
        sqlite3_bind_int64(st, 1, app_id);
        int rc = sqlite3_step(st);
        *updated_at = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return BL_EIO;
    }
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT pattern FROM url_patterns WHERE app_id = ? "
                                      "ORDER BY pos");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    return list_patterns(st, cb, ctx);
}

bl_err bl_net_patterns_of_build(bl_db *db, int64_t build_id,
                                int (*cb)(const char *p, void *ctx), void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT p.pattern FROM url_patterns p JOIN builds b "
                                      "ON b.app_id = p.app_id WHERE b.id = ? ORDER BY p.pos");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    return list_patterns(st, cb, ctx);
}

/* ---- writing aggregates ------------------------------------------------------ */

/* The id of group (build, host, method, pattern), or 0 when there is none. */
static bl_err find_group(bl_db *db, int64_t build_id, const char *host, const char *method,
                         const char *pattern, int64_t *id)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT id FROM net_groups WHERE build_id = ? AND "
                                      "host = ? AND http_method = ? AND pattern = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_text(st, 2, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, method, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, pattern, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    *id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

static bl_err get_group(bl_db *db, const bl_net_add_row *r, int64_t *id)
{
    const char *host = r->host, *pattern = r->pattern;
    if (find_group(db, r->build_id, host, r->http_method, pattern, id))
        return BL_EIO;
    if (*id)
        return BL_OK;
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT count(*) FROM net_groups WHERE build_id = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, r->build_id);
    int rc = sqlite3_step(st);
    int64_t n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return BL_EIO;
    if (n >= BL_NET_GROUPS_MAX) {
        host = pattern = BL_NET_OTHER;
        if (find_group(db, r->build_id, host, r->http_method, pattern, id))
            return BL_EIO;
        if (*id)
            return BL_OK;
    }
    st = bl_db_stmt(db, "INSERT INTO net_groups (build_id, host, http_method, pattern) "
                        "VALUES (?, ?, ?, ?) RETURNING id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, r->build_id);
    sqlite3_bind_text(st, 2, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, r->http_method, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, pattern, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    if (rc == SQLITE_ROW)
        rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE && *id ? BL_OK : BL_EIO;
}

bl_err bl_net_add(bl_db *db, const bl_net_add_row *r, int64_t *group)
{
    int64_t g;
    if (get_group(db, r, &g))
        return BL_EIO;
    sqlite3_stmt *st = bl_db_stmt(
        db,
        "INSERT INTO net_stats (grp, hour, count, errors, s1xx, s2xx, s3xx, s4xx, s5xx, failed, "
        "max_us, sketch, ttfb_max_us, ttfb_sketch, dns_us, dns_n, connect_us, connect_n, "
        "tls_us, tls_n, bytes_in, bytes_out) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22) "
        "ON CONFLICT(grp, hour) DO UPDATE SET count = count + excluded.count, "
        "errors = errors + excluded.errors, s1xx = s1xx + excluded.s1xx, "
        "s2xx = s2xx + excluded.s2xx, s3xx = s3xx + excluded.s3xx, "
        "s4xx = s4xx + excluded.s4xx, s5xx = s5xx + excluded.s5xx, "
        "failed = failed + excluded.failed, max_us = max(max_us, excluded.max_us), "
        "sketch = sketch_merge(sketch, excluded.sketch), "
        "ttfb_max_us = max(ttfb_max_us, excluded.ttfb_max_us), "
        "ttfb_sketch = sketch_merge(ttfb_sketch, excluded.ttfb_sketch), "
        "dns_us = dns_us + excluded.dns_us, dns_n = dns_n + excluded.dns_n, "
        "connect_us = connect_us + excluded.connect_us, "
        "connect_n = connect_n + excluded.connect_n, tls_us = tls_us + excluded.tls_us, "
        "tls_n = tls_n + excluded.tls_n, bytes_in = bytes_in + excluded.bytes_in, "
        "bytes_out = bytes_out + excluded.bytes_out");
    if (!st)
        return BL_EIO;
    int64_t v[] = { g, r->hour, r->count, r->errors, r->status[0], r->status[1], r->status[2],
                    r->status[3], r->status[4], r->status[5], r->max_us };
    for (int i = 0; i < 11; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    sqlite3_bind_blob(st, 12, r->sketch, (int)r->sketch_len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 13, r->ttfb_max_us);
    sqlite3_bind_blob(st, 14, r->ttfb_sketch, (int)r->ttfb_sketch_len, SQLITE_TRANSIENT);
    int64_t w[] = { r->dns_us, r->dns_n, r->connect_us, r->connect_n, r->tls_us, r->tls_n,
                    r->bytes_in, r->bytes_out };
    for (int i = 0; i < 8; i++)
        sqlite3_bind_int64(st, i + 15, w[i]);
    if (bl_db_step_done(st))
        return BL_EIO;
    *group = g;
    return BL_OK;
}

bl_err bl_net_caller_add(bl_db *db, int64_t group, int64_t hour, int64_t method_id,
                         int64_t count)
{
    sqlite3_stmt *st = bl_db_stmt(db, "INSERT INTO net_callers (grp, hour, method_id, count) "
                                      "VALUES (?, ?, ?, ?) ON CONFLICT(grp, hour, method_id) "
                                      "DO UPDATE SET count = count + excluded.count");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, group);
    sqlite3_bind_int64(st, 2, hour);
    sqlite3_bind_int64(st, 3, method_id);
    sqlite3_bind_int64(st, 4, count);
    return bl_db_step_done(st);
}

/* ---- reading ------------------------------------------------------------------ */

/* A total of µs or bytes over hours, read with total() (a double: sum()
 * fails the whole query once the exact sum passes 2^63): exact below 2^53,
 * at most 2^63 - 1. */
static int64_t saturated(double d)
{
    if (!(d > 0))
        return 0;
    return d >= 9223372036854775807.0 ? INT64_MAX : (int64_t)d;
}

bl_err bl_net_groups(bl_db *db, int64_t build_id, int64_t hour_from, int64_t hour_to,
                     const char *host, const char *http_method,
                     int (*cb)(const bl_net_group *g, void *ctx), void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db,
        "SELECT g.id, g.host, g.http_method, g.pattern, sum(s.count), sum(s.errors), "
        "sum(s.s1xx), sum(s.s2xx), sum(s.s3xx), sum(s.s4xx), sum(s.s5xx), sum(s.failed), "
        "max(s.max_us), max(s.ttfb_max_us), sketch_union(s.sketch), sketch_union(s.ttfb_sketch), "
        "total(s.dns_us), sum(s.dns_n), total(s.connect_us), sum(s.connect_n), "
        "total(s.tls_us), sum(s.tls_n), total(s.bytes_in), total(s.bytes_out) "
        "FROM net_groups g JOIN net_stats s ON s.grp = g.id "
        "WHERE g.build_id = ?1 AND s.hour BETWEEN ?2 AND ?3 AND (?4 IS NULL OR g.host = ?4) "
        "AND (?5 IS NULL OR g.http_method = ?5) GROUP BY g.id ORDER BY g.id");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, hour_from);
    sqlite3_bind_int64(st, 3, hour_to);
    if (host)
        sqlite3_bind_text(st, 4, host, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 4);
    if (http_method)
        sqlite3_bind_text(st, 5, http_method, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 5);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_net_group g = {
            .id = sqlite3_column_int64(st, 0), .host = bl_db_text(st, 1),
            .http_method = bl_db_text(st, 2), .pattern = bl_db_text(st, 3),
            .count = sqlite3_column_int64(st, 4), .errors = sqlite3_column_int64(st, 5),
            .max_us = sqlite3_column_int64(st, 12), .ttfb_max_us = sqlite3_column_int64(st, 13),
            .sketch = sqlite3_column_blob(st, 14),
        };
        g.sketch_len = (size_t)sqlite3_column_bytes(st, 14);
        g.ttfb_sketch = sqlite3_column_blob(st, 15);
        g.ttfb_sketch_len = (size_t)sqlite3_column_bytes(st, 15);
        for (int i = 0; i < 6; i++)
            g.status[i] = sqlite3_column_int64(st, 6 + i);
        int64_t *w[] = { &g.dns_us, &g.dns_n, &g.connect_us, &g.connect_n, &g.tls_us,
                         &g.tls_n, &g.bytes_in, &g.bytes_out };
        for (int i = 0; i < 8; i++)
            *w[i] = i % 2 && i < 6 ? sqlite3_column_int64(st, 16 + i)
                                   : saturated(sqlite3_column_double(st, 16 + i));
        if (cb(&g, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_net_callers(bl_db *db, int64_t build_id, int64_t group, int64_t hour_from,
                      int64_t hour_to, int64_t limit,
                      int (*cb)(const bl_net_caller *c, void *ctx), void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db,
        "SELECT c.method_id, sum(c.count) AS n, m.class, m.name, m.descriptor, m.source_file "
        "FROM net_callers c LEFT JOIN methods m ON m.build_id = ?1 AND m.method_id = c.method_id "
        "WHERE c.grp = ?2 AND c.hour BETWEEN ?3 AND ?4 GROUP BY c.method_id "
        "ORDER BY n DESC, c.method_id LIMIT ?5");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int64(st, 2, group);
    sqlite3_bind_int64(st, 3, hour_from);
    sqlite3_bind_int64(st, 4, hour_to);
    sqlite3_bind_int64(st, 5, limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char name[64];
        bl_net_caller c = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                            bl_db_text(st, 2), bl_db_text(st, 3), bl_db_text(st, 4), bl_db_text(st, 5) };
        if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
            snprintf(name, sizeof name, "unknown method %lld", (long long)c.method_id);
            c.cls = "?";
            c.name = name;
            c.descriptor = c.source_file = "";
        }
        if (cb(&c, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}
