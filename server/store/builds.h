/*
 * builds.h — reading an app's builds: the listing (GET .../builds) and
 * lookups by name. Writing builds (creation on first batch or upload,
 * mapping / method-ID records, counters) is in store/writer.h.
 *
 * Times are µs since the Unix epoch. Strings handed to a callback are
 * owned by the store and valid only during that call; copy what you keep.
 * No backend types appear here: a second backend implements the same
 * functions.
 */
#ifndef BL_BUILDS_H
#define BL_BUILDS_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

/* One build as listed. An integer that was never recorded is -1; a string
 * that was never recorded is NULL. */
typedef struct bl_build_row {
    const char *name;            /* never NULL */
    int64_t created_at;          /* µs */
    const char *mapping_hash;    /* hex XXH128 of the mapping; NULL: no mapping */
    int64_t mapping_size;        /* bytes, decompressed */
    int64_t mapping_at;          /* µs, upload time */
    const char *methodids_hash;  /* NULL: no method-ID file */
    int64_t methodids_count;     /* methods in the file */
    int methodids_obfuscated;    /* 1: names are obfuscated, 0: original */
    int64_t methodids_at;        /* µs, upload time */
    int64_t symbolicated_at;     /* µs of the last (re)symbolication; -1 never */
    int64_t batches, records;    /* processed so far */
    const char *warnings;        /* JSON array of strings as the processor wrote it,
                                  * or NULL */
} bl_build_row;

/* Called once per row; return 0 to go on, anything else to stop early
 * (the listing then returns BL_OK). */
typedef int (*bl_build_cb)(const bl_build_row *row, void *ctx);

/* Lists the builds of app `app_id`, newest first (created_at descending,
 * then creation order descending). BL_OK (also when cb stopped it), BL_EIO
 * (message: bl_db_errmsg). */
bl_err bl_builds_list(bl_db *db, int64_t app_id, bl_build_cb cb, void *ctx);

/* BL_OK when app `app_id` has a build called `name`, BL_ENOTFOUND when not,
 * BL_EIO on a database error. */
bl_err bl_builds_exists(bl_db *db, int64_t app_id, const char *name);

/* As bl_builds_exists, and *build_id is the build's row id when found (a
 * plain read: on PostgreSQL it never waits for a transaction that wrote
 * the row). */
bl_err bl_builds_find(bl_db *db, int64_t app_id, const char *name, int64_t *build_id);

/* The build a call tree is drawn from: `name`, or when name is NULL the
 * newest build that has processed batches (else the newest build). Writes
 * its id (an opaque key for other store calls) and its name (NUL-terminated,
 * truncated to namecap - 1 bytes) to the caller's buffers. BL_ENOTFOUND (no
 * such build / no builds), BL_EIO. */
bl_err bl_builds_pick(bl_db *db, int64_t app_id, const char *name, int64_t *build_id,
                      char *name_out, size_t namecap);

#endif
