/*
 * method_hist.c — see method_hist.h. One statement over method_stats (the
 * same selection as bl_slow_methods_scan, for one method); the sketches are
 * merged in C on both backends (store/stmt.h), in the order the rows come
 * (a bucket-wise sum: the result does not depend on it).
 */
#include "store/method_hist.h"

#include "store/stmt.h"

/* a NULL build or descriptor: any (the casts give PostgreSQL their type) */
static const char hist_sql[] =
    "SELECT s.count, s.max_us, s.sketch "
    "FROM method_stats s JOIN methods m ON m.id = s.method "
    "JOIN builds b ON b.id = s.build_id "
    "WHERE b.app_id = ?1 AND (CAST(?2 AS text) IS NULL OR b.name = ?2) "
    "AND (?3 = 0 OR s.main = 1) AND s.hour + 3600000000 > ?4 AND s.hour < ?5 "
    "AND m.class = ?6 AND m.name = ?7 AND (CAST(?8 AS text) IS NULL OR m.descriptor = ?8)";

bl_err bl_method_hist(bl_db *db, const bl_method_hist_query *q, bl_sketch *out, int64_t *count,
                      uint64_t *max_us)
{
    *count = 0;
    *max_us = 0;
    bl_st *st = bl_st_get(db, hist_sql);
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_WIDE);
    bl_st_int64(st, 1, q->app_id);
    if (q->build)
        bl_st_text(st, 2, q->build, -1);
    bl_st_int64(st, 3, q->main_only ? 1 : 0);
    bl_st_int64(st, 4, q->since_us);
    bl_st_int64(st, 5, q->until_us);
    bl_st_text(st, 6, q->cls, -1);
    bl_st_text(st, 7, q->name, -1);
    if (q->descriptor)
        bl_st_text(st, 8, q->descriptor, -1);
    int rc;
    bl_err e = BL_OK;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        const void *blob = bl_st_col_blob(st, 2);
        size_t bn = bl_st_col_bytes(st, 2);
        if (!blob)
            continue;
        bl_err me = bl_sketch_merge_blob(out, blob, bn);
        if (me == BL_ENOMEM) {
            e = me;
            break;
        }
        if (me != BL_OK)
            continue; /* malformed (or a count past 2^64): left out */
        *count += bl_st_col_int64(st, 0);
        uint64_t mx = (uint64_t)bl_st_col_int64(st, 1);
        if (mx > *max_us)
            *max_us = mx;
    }
    if (!e && rc != BL_ST_DONE)
        e = BL_EIO;
    bl_st_reset(st);
    return e;
}
