/*
 * builds.c — reading an app's builds (see builds.h).
 */
#include "store/builds.h"
#include "store/internal.h"

#include <stdio.h>

static const char *text_or_null(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NULL
                                                     : (const char *)sqlite3_column_text(st, i);
}

static int64_t int_or_minus1(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

bl_err bl_builds_list(bl_db *db, int64_t app_id, bl_build_cb cb, void *ctx)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT name, created_at, mapping_hash, mapping_size, mapping_at, methodids_hash, "
            "methodids_count, methodids_obfuscated, methodids_at, symbolicated_at, batches, "
            "records, warnings FROM builds WHERE app_id = ? ORDER BY created_at DESC, id DESC");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_build_row b;
        b.name = (const char *)sqlite3_column_text(st, 0);
        b.created_at = sqlite3_column_int64(st, 1);
        b.mapping_hash = text_or_null(st, 2);
        b.mapping_size = int_or_minus1(st, 3);
        b.mapping_at = int_or_minus1(st, 4);
        b.methodids_hash = text_or_null(st, 5);
        b.methodids_count = int_or_minus1(st, 6);
        b.methodids_obfuscated = sqlite3_column_int(st, 7) != 0;
        b.methodids_at = int_or_minus1(st, 8);
        b.symbolicated_at = int_or_minus1(st, 9);
        b.batches = sqlite3_column_int64(st, 10);
        b.records = sqlite3_column_int64(st, 11);
        b.warnings = sqlite3_column_type(st, 12) == SQLITE_TEXT
                         ? (const char *)sqlite3_column_text(st, 12)
                         : NULL;
        if (!b.name)
            b.name = "";
        if (cb(&b, ctx) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BL_OK : BL_EIO;
}

bl_err bl_builds_exists(bl_db *db, int64_t app_id, const char *name)
{
    sqlite3_stmt *st = bl_db_stmt(db, "SELECT 1 FROM builds WHERE app_id = ? AND name = ?");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : rc == SQLITE_DONE ? BL_ENOTFOUND : BL_EIO;
}

bl_err bl_builds_pick(bl_db *db, int64_t app_id, const char *name, int64_t *build_id,
                      char *name_out, size_t namecap)
{
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT id, name FROM builds WHERE app_id = ?1 AND (?2 IS NULL OR name = ?2) "
            "ORDER BY (batches > 0) DESC, created_at DESC, id DESC LIMIT 1");
    if (!st)
        return BL_EIO;
    sqlite3_bind_int64(st, 1, app_id);
    if (name)
        sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *build_id = sqlite3_column_int64(st, 0);
        const char *n = (const char *)sqlite3_column_text(st, 1);
        if (namecap)
            snprintf(name_out, namecap, "%s", n ? n : "");
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? BL_OK : rc == SQLITE_DONE ? BL_ENOTFOUND : BL_EIO;
}
