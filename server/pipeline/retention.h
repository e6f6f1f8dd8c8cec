/*
 * retention.h — the server's retention thread: what a busy app keeps on
 * disk is bounded (issue 12, part 3).
 *
 *   raw batches   batches/done/UUID.EXT of an app are deleted once received
 *                 more than keep-raw-days ago (default 7); their batches
 *                 rows stay (the duplicate guard) with raw_deleted_at set;
 *                 aggregates are untouched.
 *   aggregates    rows of the per-time tables (method_stats by its hour)
 *                 whose hour ended more than keep-days ago (default 90) are
 *                 deleted. A build left with no aggregates and nothing newer
 *                 than keep-days (creation, uploads, processed batches) and
 *                 no batch waiting for it is deleted whole, as by DELETE.
 *   builds        a deleted build (bl_processor_drop_build) is in the
 *                 graveyard (store/retention.h); this thread deletes its raw
 *                 batches, rows and folder (moved to DIR/trash/ID by the
 *                 writer), then the builds row.
 *   failed        batches that could not be processed (batches/failed files,
 *                 by modification time; PostgreSQL: raw_batches rows by
 *                 failed_at) go keep-failed-days after they failed (default
 *                 30; they are kept for inspection until then).
 *   contents      PostgreSQL: uploaded contents (files, file_chunks) that no
 *                 build names any more (deleted or replaced) go once stored
 *                 or uploaded again more than BL_RET_ORPHAN_GRACE_S ago (an
 *                 upload stores the content first and names it just after).
 *   disk          bytes on disk per app (raw batches, uploaded files) and
 *                 of the server (database, pending, failed, trash), counted
 *                 by a scan after each pass and every 5 minutes, never per
 *                 scrape (bl_retention_disk).
 *
 * Per-app settings (`app set NAME --keep-raw-days N --keep-days N`) override
 * the options; 0 keeps for ever. A pass runs at start and every interval_s;
 * builds in the graveyard are looked for when woken (bl_retention_kick), at
 * start and every minute.
 *
 * Never blocking ingest: HTTP threads never wait on this thread; deletion
 * runs in transactions of at most BL_RET_SLICE rows (or 256 files; the
 * expiry walk visits at most BL_RET_SLICE keys per transaction), each a few
 * milliseconds, with a 30 ms pause after each that lets the writer thread
 * take the write lock, and the thread waits while the writer has work
 * queued (up to 200 ms per slice). The expiry walk costs two index seeks per
 * (build, method, thread kind) per pass. Files are deleted before the rows that
 * name them are updated, so a kill -9 at any point leaves a consistent
 * store and the work resumes at the next start.
 */
#ifndef BL_RETENTION_H
#define BL_RETENTION_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "pipeline/processor.h"

/* Rows deleted per transaction at most. */
#define BL_RET_SLICE 1000
/* An uploaded content no build names is deleted this long after it was
 * last stored (s). */
#define BL_RET_ORPHAN_GRACE_S 86400
/* The largest keep-*-days: 100 years. */
#define BL_RET_MAX_DAYS 36525

typedef struct bl_retention_opts {
    const char *data_dir;
    uint64_t keep_raw_days;  /* raw batches; 0 = for ever (default 7 set by main.c) */
    uint64_t keep_days;      /* aggregates; 0 = for ever (default 90) */
    uint64_t keep_failed_days; /* failed batches (batches/failed, PostgreSQL's failed
                                * raw_batches rows); 0 = for ever (default 30) */
    uint64_t interval_s;     /* seconds between passes (0: 3600) */
    int64_t clock_offset_s;  /* TEST ONLY: added to the clock retention judges ages by
                              * (BEATLINE_TEST_CLOCK_OFFSET); 0 in production */
    bl_processor *proc;      /* borrowed: whole builds are deleted through the writer */
} bl_retention_opts;

typedef struct bl_retention bl_retention;

/* Bytes on disk of one app (gauges, as of the last scan). */
typedef struct bl_disk_app {
    int64_t id;    /* the app's id (`beatline-server app list`): /metrics labels */
    char app[72];
    uint64_t raw_bytes, raw_files; /* batches/done files of the app's batches */
    uint64_t upload_bytes;         /* builds/APP_ID/: mappings, indexes, method-ID files */
} bl_disk_app;

/* Bytes on disk of the server, not per app (as of the last scan). */
typedef struct bl_disk_server {
    uint64_t database;    /* beatline.db with its -wal and -shm */
    uint64_t pending;     /* batches/pending (not yet processed or waiting) */
    uint64_t failed;      /* batches/failed */
    uint64_t trash;       /* folders of builds being deleted */
    uint64_t unattributed;/* batches/done files no batches row names */
} bl_disk_server;

/* Counters for /metrics. */
typedef struct bl_retention_stats {
    uint64_t passes;         /* retention passes finished */
    uint64_t raw_deleted;    /* raw batch files deleted by raw retention */
    uint64_t rows_deleted;   /* aggregate rows deleted (expiry and deleted builds) */
    uint64_t builds_deleted; /* builds whose deletion finished */
    uint64_t failed_deleted; /* failed batches deleted after keep_failed_days */
    uint64_t files_deleted;  /* PostgreSQL: uploaded contents no build names, deleted */
    uint64_t scans;          /* disk scans finished */
} bl_retention_stats;

/* Requested deletions (DELETE answered 202 may end in a failure the caller
 * never hears of): DIR/deletions/BUILD_ID, an empty file made (and
 * fsynced) before the request is queued, removed by the writer once the
 * build is in the graveyard, or by the caller when its answer says nothing
 * changed. The retention thread tries again the ones whose build is still
 * live (at start, when woken and every minute) and removes the others.
 * bl_retention_request_add: BL_EIO with errno, BL_ETOOBIG (path). */
bl_err bl_retention_request_add(const char *data_dir, int64_t build_id);
void bl_retention_request_done(const char *data_dir, int64_t build_id);

/* Before the writer starts: finishes what a kill -9 cut short between the
 * writer moving a build's folder to DIR/trash and its commit (the build is
 * moved to the graveyard now), and removes trash folders of builds that are
 * gone. BL_EIO with a message in errbuf. */
bl_err bl_retention_recover(const char *data_dir, char *errbuf, size_t n);

/* Opens a write connection and starts the thread (the first pass at once).
 * errbuf gets a message on failure. */
bl_err bl_retention_start(const bl_retention_opts *o, bl_retention **out, char *errbuf,
                          size_t n);
/* Stops at the end of the current slice and joins. NULL allowed. */
void bl_retention_stop(bl_retention *r);
/* Wakes the thread to delete builds moved to the graveyard (after a
 * DELETE). NULL allowed. */
void bl_retention_kick(bl_retention *r);

void bl_retention_stats_get(bl_retention *r, bl_retention_stats *s);
/* A copy of the last disk scan: *apps is the caller's (free()); *n = 0 and
 * *scanned = 0 before the first scan. BL_ENOMEM. */
bl_err bl_retention_disk(bl_retention *r, bl_disk_app **apps, size_t *n, bl_disk_server *srv,
                         int *scanned);

/* Writer side of deleting a build (pipeline/processor.c), in this order:
 *
 * bl_retention_build_lock takes the lock of the build's folder
 * DIR/builds/APP_ID/HASH/.lock (the one uploads hold while they write),
 * waiting at most wait_ms (tries every 20 ms), before the writer begins its
 * transaction: the writer never waits for an upload while it holds the
 * database's write lock. *fd: the locked descriptor, or -1 when the build
 * has no folder (no uploads). BL_EIO with errno (EWOULDBLOCK: an upload held
 * it all that time) when the lock cannot be opened or taken: nothing may be
 * moved then. Release with bl_retention_build_unlock(*fd) (-1 allowed).
 *
 * bl_retention_trash_build moves the build's folder (when it exists) to
 * DIR/trash/BUILD_ID and fsyncs both folders; `locked`: the caller holds
 * its lock (fd >= 0 above). *moved = 1 when there was a folder. BL_EIO with
 * errno, also (EBUSY) when the folder exists but was not locked (an upload
 * made it in between). */
bl_err bl_retention_build_lock(const char *data_dir, int64_t app_id, const char *build,
                               unsigned wait_ms, int *fd);
void bl_retention_build_unlock(int fd);
bl_err bl_retention_trash_build(const char *data_dir, int64_t app_id, const char *build,
                                int64_t build_id, int locked, int *moved);
/* Undoes bl_retention_trash_build (the commit failed). */
void bl_retention_untrash_build(const char *data_dir, int64_t app_id, const char *build,
                                int64_t build_id);

#endif
