/*
 * apps.c — apps and hashed per-app keys (see apps.h).
 */
#include "store/apps.h"
#include "store/internal.h"
#include "store/stmt.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

static const char *const role_name[3] = { "ingest", "upload", "read" };
static const char *const role_prefix[3] = { "blk_ing_", "blk_upl_", "blk_read_" };

int bl_app_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static void key_hash(const char *key, char hex[65])
{
    unsigned char h[32];
    crypto_generichash(h, sizeof h, (const unsigned char *)key, strlen(key), NULL, 0);
    sodium_bin2hex(hex, 65, h, sizeof h);
}

static bl_err issue_keys(bl_db *db, int64_t app_id, char keys[3][64])
{
    for (int r = 0; r < 3; r++) {
        unsigned char rnd[24];
        char hex[49];
        randombytes_buf(rnd, sizeof rnd);
        sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
        snprintf(keys[r], 64, "%s%s", role_prefix[r], hex);
        char h[65];
        key_hash(keys[r], h);
        bl_st *st = bl_st_get(
            db, "INSERT INTO app_keys(key_hash, app_id, role, created_at) VALUES (?,?,?,?)");
        if (!st)
            return BL_EIO;
        bl_st_text(st, 1, h, -1);
        bl_st_int64(st, 2, app_id);
        bl_st_text(st, 3, role_name[r], -1);
        bl_st_int64(st, 4, bl_now_us());
        if (bl_st_done(st) != BL_OK)
            return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_apps_find(bl_db *db, const char *name, int64_t *app_id)
{
    bl_st *st = bl_st_get(db, "SELECT id FROM apps WHERE name = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, name, -1);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        *app_id = bl_st_col_int64(st, 0);
        bl_st_reset(st);
        return BL_OK;
    }
    bl_st_reset(st);
    return rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

bl_err bl_apps_create(bl_db *db, const char *name, char keys[3][64], int *exists)
{
    *exists = 0;
    if (!bl_app_name_valid(name))
        return BL_EINVAL;
    if (sodium_init() < 0)
        return BL_EIO;
    if (bl_db_begin(db))
        return BL_EIO;
    /* looked up first: on PostgreSQL an INSERT that ends in ON CONFLICT
     * still takes an id from the sequence, and the next app's id would
     * differ from SQLite's */
    int64_t id;
    bl_err err = bl_apps_find(db, name, &id);
    if (err == BL_OK) {
        *exists = 1;
        err = BL_EINVAL;
        goto out;
    }
    if (err != BL_ENOTFOUND)
        goto out;
    err = BL_OK;
    /* no row back: the name was taken meanwhile by another node's create
     * (PostgreSQL: the insert waits for its commit) */
    bl_st *st = bl_st_get(db, "INSERT INTO apps(name, created_at) VALUES (?, ?) "
                              "ON CONFLICT (name) DO NOTHING RETURNING id");
    if (!st) {
        err = BL_EIO;
        goto out;
    }
    bl_st_text(st, 1, name, -1);
    bl_st_int64(st, 2, bl_now_us());
    int rc = bl_st_step(st);
    id = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : 0;
    if (rc == BL_ST_ROW && bl_st_step(st) != BL_ST_DONE)
        rc = BL_ST_ERROR;
    bl_st_reset(st);
    if (rc == BL_ST_DONE) {
        *exists = 1;
        err = BL_EINVAL;
        goto out;
    }
    if (rc != BL_ST_ROW) {
        err = BL_EIO;
        goto out;
    }
    err = issue_keys(db, id, keys);
out:
    if (bl_db_exec(db, err ? "ROLLBACK" : "COMMIT") && !err)
        err = BL_EIO;
    return err;
}

bl_err bl_apps_rotate_keys(bl_db *db, const char *name, char keys[3][64])
{
    if (sodium_init() < 0)
        return BL_EIO;
    if (bl_db_begin(db))
        return BL_EIO;
    int64_t id;
    bl_err err = bl_apps_find(db, name, &id);
    if (err)
        goto out;
    bl_st *st = bl_st_get(
        db, "UPDATE app_keys SET revoked_at = ? WHERE app_id = ? AND revoked_at IS NULL");
    if (!st) {
        err = BL_EIO;
        goto out;
    }
    bl_st_int64(st, 1, bl_now_us());
    bl_st_int64(st, 2, id);
    if (bl_st_done(st) != BL_OK) {
        err = BL_EIO;
        goto out;
    }
    err = issue_keys(db, id, keys);
out:
    if (bl_db_exec(db, err ? "ROLLBACK" : "COMMIT") && !err)
        err = BL_EIO;
    return err;
}

bl_err bl_apps_list_json(bl_db *db, bl_buf *out)
{
    bl_st *st = bl_st_get(
        db, "SELECT a.name, a.created_at, (SELECT count(*) FROM builds b WHERE b.app_id = a.id), "
            "a.keep_raw_days, a.keep_days, a.id FROM apps a WHERE a.id <> 0 ORDER BY a.name");
    if (!st)
        return BL_EIO;
    bl_err err = bl_buf_putc(out, '[');
    int first = 1, rc;
    while (!err && (rc = bl_st_step(st)) == BL_ST_ROW) {
        char tmp[320], keep[2][24];
        const char *name = bl_st_col_str(st, 0);
        /* retention (migration 4): null = the server's option */
        for (int k = 0; k < 2; k++) {
            if (bl_st_is_null(st, 3 + k))
                snprintf(keep[k], sizeof keep[k], "null");
            else
                snprintf(keep[k], sizeof keep[k], "%lld", (long long)bl_st_col_int64(st, 3 + k));
        }
        snprintf(tmp, sizeof tmp,
                 "%s{\"app\":\"%s\",\"id\":%lld,\"created_at\":%lld,\"builds\":%lld,"
                 "\"keep_raw_days\":%s,\"keep_days\":%s}",
                 first ? "" : ",", name, (long long)bl_st_col_int64(st, 5),
                 (long long)bl_st_col_int64(st, 1), (long long)bl_st_col_int64(st, 2), keep[0],
                 keep[1]);
        err = bl_buf_puts(out, tmp);
        first = 0;
    }
    bl_st_reset(st);
    if (!err && rc != BL_ST_DONE)
        err = BL_EIO;
    if (!err)
        err = bl_buf_puts(out, "]");
    return err;
}

bl_err bl_apps_auth(bl_db *db, const char *app_name, const char *key, bl_role role,
                    int64_t *app_id)
{
    if (!key || !*key || strlen(key) > 200)
        return BL_EINVAL;
    if (sodium_init() < 0)
        return BL_EIO;
    char h[65];
    key_hash(key, h);
    bl_st *st = bl_st_get(
        db, "SELECT a.id, k.role, k.revoked_at IS NULL, a.name = ? FROM app_keys k "
            "JOIN apps a ON a.id = k.app_id WHERE k.key_hash = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, app_name, -1);
    bl_st_text(st, 2, h, -1);
    int rc = bl_st_step(st);
    bl_err err = BL_EINVAL;
    if (rc == BL_ST_ROW) {
        const char *r = bl_st_col_text(st, 1);
        if (r && !strcmp(r, role_name[role]) && bl_st_col_int64(st, 2) &&
            bl_st_col_int64(st, 3)) {
            *app_id = bl_st_col_int64(st, 0);
            err = BL_OK;
        }
    } else if (rc != BL_ST_DONE) {
        err = BL_EIO;
    }
    bl_st_reset(st);
    return err;
}

const char *const bl_apps_quota_names[BL_APP_QUOTAS] = { "waiting-builds", "waiting-batches",
                                                         "waiting-bytes", "new-builds" };

bl_err bl_apps_set_quota(bl_db *db, const char *name, int which, int64_t value)
{
    /* one statement per column: column names cannot be bound */
    static const char *const sql[BL_APP_QUOTAS] = {
        "UPDATE apps SET quota_waiting_builds = ? WHERE name = ?",
        "UPDATE apps SET quota_waiting_batches = ? WHERE name = ?",
        "UPDATE apps SET quota_waiting_bytes = ? WHERE name = ?",
        "UPDATE apps SET quota_new_builds = ? WHERE name = ?",
    };
    if (which < 0 || which >= BL_APP_QUOTAS || value < -1)
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, sql[which]);
    if (!st)
        return BL_EIO;
    if (value < 0)
        bl_st_null(st, 1);
    else
        bl_st_int64(st, 1, value);
    bl_st_text(st, 2, name, -1);
    if (bl_st_done(st) != BL_OK)
        return BL_EIO;
    return bl_st_changes(st) == 1 ? BL_OK : BL_ENOTFOUND;
}

bl_err bl_apps_quotas(bl_db *db, int64_t app_id, int64_t out[BL_APP_QUOTAS])
{
    bl_st *st = bl_st_get(db, "SELECT quota_waiting_builds, quota_waiting_batches, "
                              "quota_waiting_bytes, quota_new_builds FROM apps WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    int rc = bl_st_step(st);
    for (int i = 0; i < BL_APP_QUOTAS; i++)
        out[i] = rc == BL_ST_ROW && !bl_st_is_null(st, i) ? bl_st_col_int64(st, i) : -1;
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}
