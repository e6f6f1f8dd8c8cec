/*
 * slow_methods.c — the slow-methods query (see slow_methods.h).
 *
 * Sort and limit happen in SQL (ORDER BY … LIMIT keeps only `limit` rows
 * while the groups stream by); the percentile sorts compute each group's
 * quantile from its merged sketch (store/sqlfuncs.h), clamped to the exact
 * max as the row is.
 */
#include "store/slow_methods.h"
#include "store/internal.h"

#include "agg/sketch.h"

#define SLOW_SQL(key)                                                                          \
    "SELECT m.class, m.name, m.descriptor, m.source_file, sum(s.count) AS cnt, "              \
    "sum(s.total_us) AS tot, sum(s.self_us) AS slf, max(s.max_us) AS mx, "                     \
    "sketch_union(s.sketch) AS sk "                                                            \
    "FROM method_stats s JOIN methods m ON m.id = s.method "                                   \
    "JOIN builds b ON b.id = s.build_id "                                                      \
    "WHERE b.app_id = ?1 AND (?2 IS NULL OR b.name = ?2) AND (?3 = 0 OR s.main = 1) "          \
    "AND s.hour + 3600000000 > ?4 AND s.hour < ?5 "                                            \
    "GROUP BY m.class, m.name, m.descriptor, m.source_file "                                   \
    /* rows of calls still running when their batch ended carry only self                      \
     * time (schema/batch-format.md, "Segments"): a method is listed once a                    \
     * call of it has finished */                                                              \
    "HAVING cnt > 0 "                                                                          \
    "ORDER BY " key " DESC, tot DESC, m.class, m.name, m.descriptor LIMIT ?6"

/* indexed by bl_slow_sort */
static const char *const slow_sql[BL_SLOW_SORTS] = {
    SLOW_SQL("min(sketch_quantile(sk, 0.5), mx)"),
    SLOW_SQL("min(sketch_quantile(sk, 0.9), mx)"),
    SLOW_SQL("min(sketch_quantile(sk, 0.99), mx)"),
    SLOW_SQL("cnt"),
    SLOW_SQL("tot"),
    SLOW_SQL("slf"),
    SLOW_SQL("mx"),
};

static const char *text_or_null(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NULL
                                                     : (const char *)sqlite3_column_text(st, i);
}

bl_err bl_slow_methods(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx)
{
    if ((unsigned)q->sort >= BL_SLOW_SORTS)
        return BL_EINVAL;
    sqlite3_stmt *st = bl_db_stmt(db, slow_sql[q->sort]);
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, q->app_id);
    if (q->build)
        sqlite3_bind_text(st, 2, q->build, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, q->main_only ? 1 : 0);
    sqlite3_bind_int64(st, 4, q->since_us);
    sqlite3_bind_int64(st, 5, q->until_us);
    sqlite3_bind_int64(st, 6, q->limit);
    int rc;
    bl_sketch sk;
    bl_sketch_init(&sk);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_sketch_reset(&sk);
        const void *blob = sqlite3_column_blob(st, 8);
        int bn = sqlite3_column_bytes(st, 8);
        if (blob && bl_sketch_merge_blob(&sk, blob, (size_t)bn) != BL_OK)
            continue;
        bl_slow_row row;
        row.max_us = (uint64_t)sqlite3_column_int64(st, 7);
        /* a bucket midpoint can sit above the exact max: clamp */
        uint64_t q50 = bl_sketch_quantile(&sk, 0.50), q90 = bl_sketch_quantile(&sk, 0.90),
                 q99 = bl_sketch_quantile(&sk, 0.99);
        row.p50_us = q50 < row.max_us ? q50 : row.max_us;
        row.p90_us = q90 < row.max_us ? q90 : row.max_us;
        row.p99_us = q99 < row.max_us ? q99 : row.max_us;
        row.cls = text_or_null(st, 0);
        row.name = text_or_null(st, 1);
        row.descriptor = text_or_null(st, 2);
        row.source_file = text_or_null(st, 3);
        row.count = sqlite3_column_int64(st, 4);
        row.total_us = sqlite3_column_int64(st, 5);
        row.self_us = sqlite3_column_int64(st, 6);
        if (cb(&row, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    bl_sketch_cleanup(&sk);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}
