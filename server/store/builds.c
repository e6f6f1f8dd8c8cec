/*
 * builds.c — reading an app's builds (see builds.h).
 */
#include "store/builds.h"
#include "store/internal.h"
#include "store/stmt.h"

#include <stdio.h>

static int64_t int_or_minus1(bl_st *st, int i)
{
    return bl_st_is_null(st, i) ? -1 : bl_st_col_int64(st, i);
}

bl_err bl_builds_list(bl_db *db, int64_t app_id, bl_build_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(
        db, "SELECT name, created_at, mapping_hash, mapping_size, mapping_at, methodids_hash, "
            "methodids_count, methodids_obfuscated, methodids_at, symbolicated_at, batches, "
            "records, warnings FROM builds WHERE app_id = ? ORDER BY created_at DESC, id DESC");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    int rc;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_build_row b;
        b.name = bl_st_col_text(st, 0);
        b.created_at = bl_st_col_int64(st, 1);
        b.mapping_hash = bl_st_col_text(st, 2);
        b.mapping_size = int_or_minus1(st, 3);
        b.mapping_at = int_or_minus1(st, 4);
        b.methodids_hash = bl_st_col_text(st, 5);
        b.methodids_count = int_or_minus1(st, 6);
        b.methodids_obfuscated = bl_st_col_int64(st, 7) != 0;
        b.methodids_at = int_or_minus1(st, 8);
        b.symbolicated_at = int_or_minus1(st, 9);
        b.batches = bl_st_col_int64(st, 10);
        b.records = bl_st_col_int64(st, 11);
        b.warnings = bl_st_col_text(st, 12);
        if (!b.name)
            b.name = "";
        if (cb(&b, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

bl_err bl_builds_find(bl_db *db, int64_t app_id, const char *name, int64_t *build_id)
{
    bl_st *st = bl_st_get(db, "SELECT id FROM builds WHERE app_id = ? AND name = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_text(st, 2, name, -1);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *build_id = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

bl_err bl_builds_exists(bl_db *db, int64_t app_id, const char *name)
{
    int64_t id;
    return bl_builds_find(db, app_id, name, &id);
}

bl_err bl_builds_pick(bl_db *db, int64_t app_id, const char *name, int64_t *build_id,
                      char *name_out, size_t namecap)
{
    bl_st *st = bl_st_get(
        db, "SELECT id, name FROM builds WHERE app_id = ?1 AND (CAST(?2 AS text) IS NULL OR name = ?2) "
            "ORDER BY (batches > 0) DESC, created_at DESC, id DESC LIMIT 1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    if (name)
        bl_st_text(st, 2, name, -1);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        *build_id = bl_st_col_int64(st, 0);
        const char *n = bl_st_col_text(st, 1);
        if (namecap)
            snprintf(name_out, namecap, "%s", n ? n : "");
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}
