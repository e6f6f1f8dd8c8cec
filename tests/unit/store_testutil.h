/*
 * store_testutil.h — fixtures shared by the store unit tests of the event
 * aggregates (store_blocks_test, store_launches_test, store_network_test;
 * header-only, like testutil.h). Failures are Check assertions.
 */
#ifndef BL_STORE_TESTUTIL_H
#define BL_STORE_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/db.h"
#include "store/internal.h"

/* Opens the test's store into *db (owned by the caller: bl_db_close): the
 * SQLite file `path`, or, with BEATLINE_TEST_PG_DB set, that PostgreSQL
 * database (migrated by bl_db_open), emptied first (every aggregate table,
 * ids restarted, the graveyard app 0 back): the store's answers must be the
 * same on both backends (the _pg ctest variants). */
static inline void tu_agg_store_open(bl_db **db, const char *path)
{
    const char *url = getenv("BEATLINE_TEST_PG_DB");
    char err[256];
    ck_assert_msg(bl_db_open(url && *url ? url : path, 0, db, err, sizeof err) == BL_OK, "%s",
                  err);
    if (url && *url) {
        static const char *const sql[] = {
            "TRUNCATE apps, builds, methods, block_groups, block_stats, block_seen, "
            "block_nodes, launch_stats, launch_measures, launch_methods, launch_nodes, "
            "url_patterns, url_pattern_sets, net_groups, net_stats, net_callers "
            "RESTART IDENTITY CASCADE",
            "INSERT INTO apps(id, name, created_at) VALUES (0, '', 0)",
        };
        for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
            ck_assert_msg(bl_db_exec(*db, sql[i]) == BL_OK, "%s: %s", sql[i],
                          bl_db_errmsg(*db));
    }
}

/* Removes the SQLite file `path` with its -wal and -shm files, then the
 * (now empty) folder dir. Nothing is reported: missing files are fine. */
static inline void tu_sqlite_remove(const char *dir, const char *path)
{
    char p[4096];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    rmdir(dir);
}

#endif
