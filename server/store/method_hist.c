/*
 * method_hist.c — see method_hist.h. One statement over method_stats (the
 * same selection as bl_slow_methods_scan, for one method).
 */
#include "store/method_hist.h"

#include "store/internal.h"

static const char hist_sql[] =
    "SELECT s.count, s.max_us, s.sketch "
    "FROM method_stats s JOIN methods m ON m.id = s.method "
    "JOIN builds b ON b.id = s.build_id "
    "WHERE b.app_id = ?1 AND (?2 IS NULL OR b.name = ?2) AND (?3 = 0 OR s.main = 1) "
    "AND s.hour + 3600000000 > ?4 AND s.hour < ?5 "
    "AND m.class = ?6 AND m.name = ?7 AND (?8 IS NULL OR m.descriptor = ?8)";

bl_err bl_method_hist(bl_db *db, const bl_method_hist_query *q, bl_sketch *out, int64_t *count,
                      uint64_t *max_us)
{
    *count = 0;
    *max_us = 0;
    sqlite3_stmt *st = bl_db_stmt(db, hist_sql);
    if (!st)
        return BL_EIO;
    if (sqlite3_bind_int64(st, 1, q->app_id) != SQLITE_OK ||
        (q->build && sqlite3_bind_text(st, 2, q->build, -1, SQLITE_TRANSIENT) != SQLITE_OK) ||
        sqlite3_bind_int(st, 3, q->main_only ? 1 : 0) != SQLITE_OK ||
        sqlite3_bind_int64(st, 4, q->since_us) != SQLITE_OK ||
        sqlite3_bind_int64(st, 5, q->until_us) != SQLITE_OK ||
        sqlite3_bind_text(st, 6, q->cls, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_bind_text(st, 7, q->name, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        (q->descriptor &&
         sqlite3_bind_text(st, 8, q->descriptor, -1, SQLITE_TRANSIENT) != SQLITE_OK)) {
        sqlite3_reset(st);
        return BL_ENOMEM;
    }
    int rc;
    bl_err e = BL_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *blob = sqlite3_column_blob(st, 2);
        int bn = sqlite3_column_bytes(st, 2);
        if (!blob)
            continue;
        bl_err me = bl_sketch_merge_blob(out, blob, (size_t)bn);
        if (me == BL_ENOMEM) {
            e = me;
            break;
        }
        if (me != BL_OK)
            continue; /* malformed (or a count past 2^64): left out */
        *count += sqlite3_column_int64(st, 0);
        uint64_t mx = (uint64_t)sqlite3_column_int64(st, 1);
        if (mx > *max_us)
            *max_us = mx;
    }
    if (!e && rc != SQLITE_DONE)
        e = BL_EIO;
    sqlite3_reset(st);
    return e;
}
