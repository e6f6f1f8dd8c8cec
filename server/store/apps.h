/*
 * apps.h — apps and their per-app keys.
 *
 * Each app has three keys, one per role: ingest (POST batches), upload (PUT
 * mapping / method-IDs) and read (queries). A key is "blk_<role>_" followed
 * by 48 hex digits of randomness (libsodium randombytes, 192 bits). Only its
 * BLAKE2b-256 hash (hex) is stored; the key is shown once, at creation or
 * rotation. Rotation revokes the app's current keys and issues new ones.
 */
#ifndef BL_APPS_H
#define BL_APPS_H

#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"
#include "store/db.h"

typedef enum bl_role { BL_ROLE_INGEST = 0, BL_ROLE_UPLOAD = 1, BL_ROLE_READ = 2 } bl_role;

#define BL_KEY_LEN 62 /* "blk_read_" (9) + 48 hex + slack; buffers are 64 */

/* App names: 1–64 characters of [A-Za-z0-9._-]. 1 when valid. */
int bl_app_name_valid(const char *name);

/* Creates app `name` with fresh keys, written into keys[role] (NUL-
 * terminated). BL_EINVAL for a bad name, or with *exists = 1 when the app
 * already exists; BL_EIO on SQL errors. */
bl_err bl_apps_create(bl_db *db, const char *name, char keys[3][64], int *exists);

/* Revokes the app's keys and issues new ones. BL_ENOTFOUND, BL_EIO. */
bl_err bl_apps_rotate_keys(bl_db *db, const char *name, char keys[3][64]);

/* Appends a JSON array of {"app","created_at","builds","keep_raw_days",
 * "keep_days"} to out (keep_*: days, 0 = for ever, null = the server's
 * option; store/retention.h). The graveyard (app 0) is not listed. */
bl_err bl_apps_list_json(bl_db *db, bl_buf *out);

/* Looks up an app by name: *app_id, or BL_ENOTFOUND. */
bl_err bl_apps_find(bl_db *db, const char *name, int64_t *app_id);

/* Checks that `key` is a live key of app `app_name` with role `role`.
 * BL_OK, BL_ENOTFOUND (unknown app), BL_EINVAL (key missing, wrong,
 * revoked, or of another role or app), BL_EIO. */
bl_err bl_apps_auth(bl_db *db, const char *app_name, const char *key, bl_role role,
                    int64_t *app_id);

/* Per-app ingest quotas (pipeline/quota.h), in the order of
 * bl_apps_quota_names: waiting-builds, waiting-batches, waiting-bytes,
 * new-builds. A value of -1 means "the server's option", 0 no limit. */
#define BL_APP_QUOTAS 4
extern const char *const bl_apps_quota_names[BL_APP_QUOTAS];

/* Sets quota `which` (0 .. BL_APP_QUOTAS-1) of app `name` to `value`
 * (-1: back to the server's option). BL_ENOTFOUND, BL_EINVAL, BL_EIO. */
bl_err bl_apps_set_quota(bl_db *db, const char *name, int which, int64_t value);

/* The app's quotas (-1 where the server's option applies). BL_ENOTFOUND,
 * BL_EIO. */
bl_err bl_apps_quotas(bl_db *db, int64_t app_id, int64_t out[BL_APP_QUOTAS]);

#endif
