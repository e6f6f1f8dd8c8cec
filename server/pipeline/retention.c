/*
 * retention.c — the retention thread (see retention.h).
 */
#include "pipeline/retention.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pipeline/datadir.h"
#include "pipeline/prep.h"
#include "store/apps.h"
#include "store/db.h"
#include "store/files.h"
#include "store/queue.h"
#include "store/retention.h"

#define FILES_PER_SLICE 256
#define PAUSE_MS 30           /* after each write transaction: the writer's turn */
#define WRITER_WAIT_MS 200    /* at most, per slice, while the writer has work queued */
#define SCAN_EVERY_S 300.0

struct bl_retention {
    bl_retention_opts o;
    char data_dir[BL_PATH_MAX];
    bl_db *db;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, kicked;
    bl_retention_stats st;    /* under mu */
    bl_disk_app *disk;        /* under mu: last scan */
    size_t n_disk;
    bl_disk_server srv;
    int scanned;
    bl_rs_uuid uuids[FILES_PER_SLICE];
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void logmsg(const char *what, const char *detail)
{
    fprintf(stderr, "beatline-server: retention: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
}

/* The clock retention judges ages by (µs). */
static int64_t now_us(const bl_retention *r)
{
    return bl_now_us() + r->o.clock_offset_s * 1000000;
}

static int stopping(bl_retention *r)
{
    pthread_mutex_lock(&r->mu);
    int s = r->stop;
    pthread_mutex_unlock(&r->mu);
    return s;
}

/* Before a write transaction: the writer goes first while it has work
 * queued (bounded). */
static void writer_first(bl_retention *r)
{
    for (unsigned waited = 0; r->o.proc && waited < WRITER_WAIT_MS; waited += 5) {
        bl_proc_stats ps;
        bl_processor_stats(r->o.proc, &ps);
        if (!ps.queue_depth)
            return;
        sleep_ms(5);
    }
}

static void add_stat(bl_retention *r, uint64_t *field, uint64_t v)
{
    pthread_mutex_lock(&r->mu);
    *field += v;
    pthread_mutex_unlock(&r->mu);
}

/* Unlinks batches/done/UUID.* (every encoding) and batches/pending/UUID.*.
 * 0 when none is left, -1 when one could not be deleted (logged). */
static int unlink_batch(const char *dir, const char *uuid)
{
    int rc = 0;
    for (int done = 0; done <= 1; done++)
        for (int e = BL_ENC_IDENTITY; e <= BL_ENC_ZSTD; e++) {
            char p[BL_PATH_MAX];
            if (bl_datadir_batch(dir, done, uuid, (bl_encoding)e, p) != BL_OK)
                continue;
            if (unlink(p) != 0 && errno != ENOENT) {
                char msg[BL_PATH_MAX + 64];
                snprintf(msg, sizeof msg, "%s: %s", p, strerror(errno));
                logmsg("cannot delete a raw batch", msg);
                rc = -1;
            }
        }
    return rc;
}

/* fsync of DIR/SUB: 0, or -1 (logged) when the deletions in it may not be
 * durable yet (the rows naming them must then stay). A SUB that does not
 * exist held nothing to delete: 0 (with PostgreSQL a node sweeps builds
 * another node deleted and may never have made DIR/trash). */
static int fsync_sub(const char *dir, const char *sub)
{
    char d[BL_PATH_MAX];
    struct stat sb;
    if (bl_path_join(d, dir, sub) != BL_OK) {
        logmsg(sub, "cannot sync the folder");
        return -1;
    }
    if (bl_fsync_dir(d) != BL_OK) {
        if (lstat(d, &sb) != 0 && errno == ENOENT)
            return 0;
        logmsg(sub, "cannot sync the folder");
        return -1;
    }
    return 0;
}

/* Removes a folder and the files in it (one level: build folders have no
 * sub-folders). 0 when it is gone. */
static int rm_folder(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[BL_PATH_MAX];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            bl_path_join(p, path, e->d_name))
            continue;
        if (unlink(p) != 0 && errno != ENOENT) {
            int saved = errno;
            closedir(d);
            errno = saved; /* the caller logs it; the folder stays, tried again */
            return -1;
        }
    }
    closedir(d);
    return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
}

static bl_err trash_path(const char *dir, int64_t build_id, char *out)
{
    char t[BL_PATH_MAX], name[32];
    snprintf(name, sizeof name, "%lld", (long long)build_id);
    bl_err err = bl_path_join(t, dir, "trash");
    return err ? err : bl_path_join(out, t, name);
}

/* ---- requested deletions ------------------------------------------------ */

static bl_err request_path(const char *dir, int64_t build_id, char *out, char *rdir)
{
    char name[32];
    snprintf(name, sizeof name, "%lld", (long long)build_id);
    bl_err err = bl_path_join(rdir, dir, "deletions");
    return err ? err : bl_path_join(out, rdir, name);
}

bl_err bl_retention_request_add(const char *data_dir, int64_t build_id)
{
    char path[BL_PATH_MAX], rdir[BL_PATH_MAX];
    bl_err err = request_path(data_dir, build_id, path, rdir);
    if (err)
        return err;
    if (mkdir(rdir, 0750) != 0 && errno != EEXIST)
        return BL_EIO;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return BL_EIO;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    if (rc != 0) {
        errno = saved;
        return BL_EIO;
    }
    return bl_fsync_dir(rdir);
}

void bl_retention_request_done(const char *data_dir, int64_t build_id)
{
    char path[BL_PATH_MAX], rdir[BL_PATH_MAX];
    if (request_path(data_dir, build_id, path, rdir))
        return;
    if (unlink(path) != 0 && errno != ENOENT)
        logmsg("cannot remove a finished deletion request", strerror(errno));
}

static int request_exists(const char *data_dir, int64_t build_id)
{
    char path[BL_PATH_MAX], rdir[BL_PATH_MAX];
    return !request_path(data_dir, build_id, path, rdir) && access(path, F_OK) == 0;
}

/* Requested deletions that did not happen are tried again (through the
 * writer, in its queue order); the rest are removed. */
static void retry_requests(bl_retention *r)
{
    char rdir[BL_PATH_MAX];
    if (bl_path_join(rdir, r->data_dir, "deletions"))
        return;
    DIR *d = opendir(rdir);
    if (!d)
        return;
    /* the ids first: drop_build below may take a while, the folder changes */
    int64_t ids[64];
    size_t n = 0;
    struct dirent *e;
    while (n < 64 && (e = readdir(d))) {
        char *end;
        long long id = strtoll(e->d_name, &end, 10);
        if (e->d_name[0] != '.' && !*end && id > 0)
            ids[n++] = id;
    }
    closedir(d);
    for (size_t i = 0; i < n && !stopping(r); i++) {
        int state;
        int64_t app_id = 0;
        char name[BL_BUILD_NAME_MAX + 1] = "";
        if (bl_rs_build_state(r->db, ids[i], &state, &app_id, name, sizeof name)) {
            logmsg("reading a requested deletion's build", bl_db_errmsg(r->db));
            return;
        }
        if (state != 1) { /* in the graveyard or gone: it happened */
            bl_retention_request_done(r->data_dir, ids[i]);
            continue;
        }
        if (!r->o.proc)
            continue;
        int finished = 0;
        bl_err e2 = bl_processor_drop_build(r->o.proc, app_id, name, 0, 10000, &finished);
        if (finished && (e2 == BL_OK || e2 == BL_ENOTFOUND))
            bl_retention_request_done(r->data_dir, ids[i]);
        else if (finished)
            fprintf(stderr, "beatline-server: retention: build %s: requested deletion failed "
                            "again (%s); tried again later\n", name, bl_err_str(e2));
    }
}

/* ---- the writer's side of deleting a build ------------------------------ */

bl_err bl_retention_build_lock(const char *data_dir, int64_t app_id, const char *build,
                               unsigned wait_ms, int *fd)
{
    char dir[BL_PATH_MAX], lockp[BL_PATH_MAX];
    *fd = -1;
    bl_err err = bl_datadir_build(data_dir, app_id, build, dir);
    if (!err)
        err = bl_path_join(lockp, dir, ".lock");
    if (err)
        return err;
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return errno == ENOENT ? BL_OK : BL_EIO; /* no uploads: no folder */
    int lfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (lfd < 0)
        return BL_EIO;
    /* an upload of the build holds the lock while it writes (building a
     * mapping index may take long): wait a bounded time, 20 ms at a time */
    for (unsigned waited = 0;; waited += 20) {
        if (flock(lfd, LOCK_EX | LOCK_NB) == 0)
            break;
        int saved = errno;
        if ((saved != EWOULDBLOCK && saved != EINTR) || waited >= wait_ms) {
            close(lfd);
            errno = saved;
            return BL_EIO;
        }
        sleep_ms(20);
    }
    *fd = lfd;
    return BL_OK;
}

void bl_retention_build_unlock(int fd)
{
    if (fd < 0)
        return;
    flock(fd, LOCK_UN);
    close(fd);
}

bl_err bl_retention_trash_build(const char *data_dir, int64_t app_id, const char *build,
                                int64_t build_id, int locked, int *moved)
{
    char from[BL_PATH_MAX], to[BL_PATH_MAX], tdir[BL_PATH_MAX];
    *moved = 0;
    bl_err err = bl_datadir_build(data_dir, app_id, build, from);
    if (!err)
        err = trash_path(data_dir, build_id, to);
    if (!err)
        err = bl_path_join(tdir, data_dir, "trash");
    if (err)
        return err;
    struct stat sb;
    if (stat(from, &sb) != 0)
        return errno == ENOENT ? BL_OK : BL_EIO; /* no uploads: no folder */
    if (!locked) { /* an upload made the folder after the lock was looked for */
        errno = EBUSY;
        return BL_EIO;
    }
    if (mkdir(tdir, 0750) != 0 && errno != EEXIST)
        return BL_EIO;
    if (rename(from, to) != 0)
        return BL_EIO;
    char parent[BL_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", from);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = '\0';
    if (bl_fsync_dir(tdir) != BL_OK || bl_fsync_dir(parent) != BL_OK)
        return BL_EIO;
    *moved = 1;
    return BL_OK;
}

void bl_retention_untrash_build(const char *data_dir, int64_t app_id, const char *build,
                                int64_t build_id)
{
    char from[BL_PATH_MAX], to[BL_PATH_MAX];
    if (bl_datadir_build(data_dir, app_id, build, to) || trash_path(data_dir, build_id, from))
        return;
    if (rename(from, to) != 0)
        logmsg("cannot move a build folder back from trash", strerror(errno));
}

/* ---- start-up ----------------------------------------------------------- */

/* Batches in batches/pending of build (app_id, name) received no later than
 * `before` (the build folder's move to trash) are deleted: acknowledged
 * before the deletion, they go with the build (the writer's pr_forget_state
 * would have deleted them had the commit happened). Later ones make a new
 * build, as after any deletion. */
static void drop_pending_of(const char *data_dir, bl_db *db, int64_t app_id, const char *name,
                            const struct timespec *before)
{
    char pdir[BL_PATH_MAX];
    if (bl_path_join(pdir, data_dir, "batches/pending"))
        return;
    DIR *d = opendir(pdir);
    if (!d)
        return;
    bl_prep job;
    bl_prep_init(&job);
    size_t gone = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *dot = strchr(e->d_name, '.');
        uint8_t uid[16];
        bl_encoding enc;
        char path[BL_PATH_MAX];
        struct stat sb;
        if (!dot || dot - e->d_name != 36 || bl_uuid_parse(e->d_name, 36, uid) != 0 ||
            bl_enc_from_ext(dot + 1, &enc) != 0 || bl_path_join(path, pdir, e->d_name) ||
            stat(path, &sb) != 0)
            continue;
        if (sb.st_mtim.tv_sec > before->tv_sec ||
            (sb.st_mtim.tv_sec == before->tv_sec && sb.st_mtim.tv_nsec > before->tv_nsec))
            continue; /* received after the deletion */
        bl_prep_file(&job, path, enc, (uint64_t)256 << 20, 0);
        if (job.read_err || !job.decoded)
            continue; /* the writer decides about it */
        char app[80];
        int64_t aid;
        snprintf(app, sizeof app, "%.*s", (int)(job.bt.app.n < 79 ? job.bt.app.n : 79),
                 job.bt.app.p);
        if (job.bt.build.n != strlen(name) || memcmp(job.bt.build.p, name, job.bt.build.n) ||
            bl_apps_find(db, app, &aid) != BL_OK || aid != app_id)
            continue;
        if (unlink(path) != 0 && errno != ENOENT)
            logmsg("cannot delete a batch of a deleted build", strerror(errno));
        else
            gone++;
    }
    closedir(d);
    bl_prep_cleanup(&job);
    if (gone && bl_fsync_dir(pdir) != BL_OK)
        logmsg("cannot sync batches/pending", strerror(errno));
}

bl_err bl_retention_recover(const char *data_dir, char *errbuf, size_t n)
{
    char tdir[BL_PATH_MAX], dbp[BL_PATH_MAX];
    if (bl_path_join(tdir, data_dir, "trash") || bl_datadir_db(data_dir, dbp)) {
        snprintf(errbuf, n, "%s: path too long", data_dir);
        return BL_EIO;
    }
    DIR *d = opendir(tdir);
    if (!d)
        return BL_OK; /* nothing was ever deleted */
    bl_db *db;
    if (bl_db_open(dbp, 0, &db, errbuf, n) != BL_OK) {
        closedir(d);
        return BL_EIO;
    }
    bl_err err = BL_OK;
    struct dirent *e;
    while (!err && (e = readdir(d))) {
        char *end;
        long long id = strtoll(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end || id <= 0)
            continue;
        int state;
        int64_t app_id = 0;
        char name[BL_BUILD_NAME_MAX + 1] = "";
        if (bl_rs_build_state(db, id, &state, &app_id, name, sizeof name)) {
            err = BL_EIO;
            break;
        }
        if (state == 1 && bl_files_in_store(db)) {
            /* PostgreSQL store: the folder was this node's cache and the
             * deletion's transaction did not commit (the build's files are
             * still in the store). It is finished, but not here beside the
             * node that may hold the build's lock and its waiting batches:
             * in line in the shared queue (bl_processor_drop_build), from a
             * request the retention thread tries at start (a DELETE left
             * one; an expiry gets one now). */
            int asked = request_exists(data_dir, id);
            char tp[BL_PATH_MAX];
            if (!asked && bl_retention_request_add(data_dir, id) != BL_OK) {
                err = BL_EIO;
                break;
            }
            if (!bl_path_join(tp, tdir, e->d_name))
                rm_folder(tp);
            fprintf(stderr, "beatline-server: retention: build %lld: deletion (%s) cut short "
                            "by a stop, before its commit; finished in line\n", id,
                    asked ? "deleted" : "expired");
        } else if (state == 1) { /* moved, not committed: the deletion is finished now */
            /* a DELETE leaves its request (removed after the commit); a
             * deletion by expiry has none */
            const char *why = request_exists(data_dir, id) ? "deleted" : "expired";
            char tp[BL_PATH_MAX];
            struct stat sb;
            struct timespec moved_at = { 0, 0 }; /* the rename changed its ctime */
            if (!bl_path_join(tp, tdir, e->d_name) && stat(tp, &sb) == 0)
                moved_at = sb.st_ctim;
            if (bl_db_begin(db) || bl_rs_doom_build(db, id, why, bl_now_us()) ||
                bl_db_commit(db)) {
                bl_db_rollback(db);
                err = BL_EIO;
                break;
            }
            bl_retention_request_done(data_dir, id);
            drop_pending_of(data_dir, db, app_id, name, &moved_at);
            fprintf(stderr, "beatline-server: retention: build %lld: deletion (%s) cut short "
                            "by a stop, finished\n", id, why);
        } else if (state == 0) { /* its rows are gone already */
            char p[BL_PATH_MAX];
            if (!bl_path_join(p, tdir, e->d_name))
                rm_folder(p);
        }
    }
    closedir(d);
    if (err)
        snprintf(errbuf, n, "cannot finish deleting builds: %s", bl_db_errmsg(db));
    bl_db_close(db);
    return err;
}

/* ---- deleting builds in the graveyard ----------------------------------- */

/* Deletes one doomed build completely, slice by slice. -1 when stopped or
 * on an error (logged; tried again later). */
static int sweep_build(bl_retention *r, int64_t build_id)
{
    /* raw batches: files first, then their rows */
    for (;;) {
        size_t n;
        if (stopping(r))
            return -1;
        if (bl_rs_build_batches(r->db, build_id, FILES_PER_SLICE, r->uuids, &n)) {
            logmsg("reading a deleted build's batches", bl_db_errmsg(r->db));
            return -1;
        }
        if (!n)
            break;
        for (size_t i = 0; i < n; i++)
            if (unlink_batch(r->data_dir, r->uuids[i]))
                return -1;
        if (fsync_sub(r->data_dir, "batches/done"))
            return -1;
        writer_first(r);
        if (bl_db_begin(r->db) || bl_rs_batches_forget(r->db, r->uuids, n) ||
            bl_db_commit(r->db)) {
            logmsg("deleting a build's batches", bl_db_errmsg(r->db));
            bl_db_rollback(r->db);
            return -1;
        }
        sleep_ms(PAUSE_MS);
    }
    /* rows, table by table */
    for (;;) {
        int64_t deleted;
        if (stopping(r))
            return -1;
        writer_first(r);
        if (bl_db_begin(r->db) || bl_rs_build_slice(r->db, build_id, BL_RET_SLICE, &deleted) ||
            bl_db_commit(r->db)) {
            logmsg("deleting a build's rows", bl_db_errmsg(r->db));
            bl_db_rollback(r->db);
            return -1;
        }
        add_stat(r, &r->st.rows_deleted, (uint64_t)deleted);
        if (!deleted)
            break;
        sleep_ms(PAUSE_MS);
    }
    /* its folder (uploads), then the builds row */
    char p[BL_PATH_MAX];
    if (trash_path(r->data_dir, build_id, p) || rm_folder(p)) {
        logmsg("cannot remove a deleted build's folder", strerror(errno));
        return -1;
    }
    if (fsync_sub(r->data_dir, "trash"))
        return -1;
    if (bl_db_begin(r->db)) {
        logmsg("deleting a build", bl_db_errmsg(r->db));
        return -1;
    }
    bl_err err = bl_rs_build_forget(r->db, build_id);
    if (err || bl_db_commit(r->db)) {
        bl_db_rollback(r->db);
        if (err != BL_EINVAL)
            logmsg("deleting a build", bl_db_errmsg(r->db));
        return -1;
    }
    add_stat(r, &r->st.builds_deleted, 1);
    return 0;
}

static void sweep_doomed(bl_retention *r)
{
    int64_t after = 0, id, app;
    while (!stopping(r) && bl_rs_doomed_next(r->db, after, &id, &app) == BL_OK) {
        sweep_build(r, id);
        after = id;
    }
}

/* ---- a retention pass --------------------------------------------------- */

static int64_t days_us(int64_t days)
{
    return days * 86400 * (int64_t)1000000;
}

/* Deletes the app's raw batches received before cutoff. */
static void raw_retention(bl_retention *r, const bl_rs_app *a, int64_t cutoff)
{
    for (;;) {
        size_t n;
        if (stopping(r))
            return;
        if (bl_rs_raw_old(r->db, a->id, cutoff, FILES_PER_SLICE, r->uuids, &n)) {
            logmsg("reading raw batches", bl_db_errmsg(r->db));
            return;
        }
        if (!n)
            return;
        size_t keep = 0; /* the ones whose files are gone */
        for (size_t i = 0; i < n; i++)
            if (unlink_batch(r->data_dir, r->uuids[i]) == 0)
                memmove(r->uuids[keep++], r->uuids[i], sizeof r->uuids[i]);
        if (fsync_sub(r->data_dir, "batches/done"))
            return;
        writer_first(r);
        if (bl_db_begin(r->db) || bl_rs_raw_mark(r->db, r->uuids, keep, now_us(r)) ||
            bl_db_commit(r->db)) {
            logmsg("recording deleted raw batches", bl_db_errmsg(r->db));
            bl_db_rollback(r->db);
            return;
        }
        add_stat(r, &r->st.raw_deleted, keep);
        if (keep < n || n < FILES_PER_SLICE)
            return; /* a file could not go (logged): next pass */
        sleep_ms(PAUSE_MS);
    }
}

/* Deletes the app's aggregates older than cutoff; builds left with nothing
 * go whole (through the writer, which checks again). */
static void expire_aggregates(bl_retention *r, const bl_rs_app *a, int64_t cutoff)
{
    int64_t *ids;
    size_t n;
    if (bl_rs_app_builds(r->db, a->id, &ids, &n)) {
        logmsg("listing builds", bl_db_errmsg(r->db));
        return;
    }
    for (size_t i = 0; i < n && !stopping(r); i++) {
        bl_rs_cursor cur;
        memset(&cur, 0, sizeof cur);
        int done = 0, failed = 0;
        while (!done && !stopping(r)) {
            int64_t deleted = 0;
            writer_first(r);
            if (bl_db_begin(r->db) ||
                bl_rs_expire_slice(r->db, ids[i], cutoff, &cur, BL_RET_SLICE, BL_RET_SLICE,
                                   &deleted, &done) ||
                bl_db_commit(r->db)) {
                logmsg("deleting old aggregates", bl_db_errmsg(r->db));
                bl_db_rollback(r->db);
                failed = 1;
                break;
            }
            add_stat(r, &r->st.rows_deleted, (uint64_t)deleted);
            /* the slice held the write lock even when it found nothing */
            sleep_ms(PAUSE_MS);
        }
        int idle = 0;
        if (failed || !done || bl_rs_build_idle(r->db, ids[i], cutoff, &idle) || !idle)
            continue;
        int state;
        int64_t app_id = 0;
        char name[BL_BUILD_NAME_MAX + 1];
        if (bl_rs_build_state(r->db, ids[i], &state, &app_id, name, sizeof name) ||
            state != 1 || !r->o.proc)
            continue;
        int finished;
        /* the writer checks again that nothing came meanwhile, and logs it */
        (void)bl_processor_drop_build(r->o.proc, app_id, name, cutoff, 10000, &finished);
    }
    free(ids);
}

/* Failed batches that failed before cutoff (µs): PostgreSQL, raw_batches
 * rows by failed_at, in slices; SQLite, batches/failed files by
 * modification time (the time they were moved there). */
static void expire_failed(bl_retention *r, int64_t cutoff)
{
    if (bl_files_in_store(r->db)) { /* a PostgreSQL store */
        for (;;) {
            int64_t n = 0;
            if (stopping(r))
                return;
            writer_first(r);
            if (bl_queue_failed_expire(r->db, cutoff, BL_RET_SLICE, &n)) {
                logmsg("deleting failed batches", bl_db_errmsg(r->db));
                return;
            }
            add_stat(r, &r->st.failed_deleted, (uint64_t)n);
            if (n < BL_RET_SLICE)
                return;
            sleep_ms(PAUSE_MS);
        }
    }
    char dir[BL_PATH_MAX];
    if (bl_path_join(dir, r->data_dir, "batches/failed"))
        return;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno != ENOENT)
            logmsg("reading batches/failed", strerror(errno));
        return;
    }
    uint64_t gone = 0;
    struct dirent *e;
    while ((e = readdir(d)) && !stopping(r)) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode) || (int64_t)st.st_mtime * 1000000 >= cutoff)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            gone++;
        else if (errno != ENOENT)
            logmsg("deleting a failed batch", strerror(errno));
    }
    closedir(d);
    if (gone) {
        (void)fsync_sub(r->data_dir, "batches/failed");
        add_stat(r, &r->st.failed_deleted, gone);
    }
}

/* PostgreSQL: uploaded contents no build names, stored before cutoff. */
static void expire_orphan_files(bl_retention *r, int64_t cutoff)
{
    if (!bl_files_in_store(r->db))
        return; /* SQLite: a build's files live in its folder and go with it */
    for (;;) {
        int64_t n = 0;
        if (stopping(r))
            return;
        writer_first(r);
        /* few contents per statement: each may be many 4 MiB chunks */
        if (bl_files_orphans_expire(r->db, cutoff, 16, &n)) {
            logmsg("deleting uploaded contents no build names", bl_db_errmsg(r->db));
            return;
        }
        add_stat(r, &r->st.files_deleted, (uint64_t)n);
        if (n < 16)
            return;
        sleep_ms(PAUSE_MS);
    }
}

static void pass(bl_retention *r)
{
    bl_rs_app *apps;
    size_t n;
    if (bl_rs_apps(r->db, &apps, &n)) {
        logmsg("listing apps", bl_db_errmsg(r->db));
        return;
    }
    int64_t now = now_us(r);
    for (size_t i = 0; i < n && !stopping(r); i++) {
        int64_t raw = apps[i].keep_raw_days >= 0 ? apps[i].keep_raw_days
                                                 : (int64_t)r->o.keep_raw_days;
        int64_t agg = apps[i].keep_days >= 0 ? apps[i].keep_days : (int64_t)r->o.keep_days;
        if (raw > BL_RET_MAX_DAYS)
            raw = BL_RET_MAX_DAYS;
        if (agg > BL_RET_MAX_DAYS)
            agg = BL_RET_MAX_DAYS;
        if (raw > 0)
            raw_retention(r, &apps[i], now - days_us(raw));
        if (agg > 0)
            expire_aggregates(r, &apps[i], now - days_us(agg));
    }
    free(apps);
    if (r->o.keep_failed_days > 0 && !stopping(r))
        expire_failed(r, now - days_us((int64_t)(r->o.keep_failed_days > BL_RET_MAX_DAYS
                                                     ? BL_RET_MAX_DAYS
                                                     : r->o.keep_failed_days)));
    if (!stopping(r))
        expire_orphan_files(r, now - (int64_t)BL_RET_ORPHAN_GRACE_S * 1000000);
    add_stat(r, &r->st.passes, 1);
}

/* ---- disk scan ---------------------------------------------------------- */

/* Sum of the sizes of the regular files in a folder (and, with depth > 0,
 * in its sub-folders). */
static uint64_t folder_bytes(const char *path, int depth)
{
    DIR *d = opendir(path);
    if (!d)
        return 0;
    uint64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[BL_PATH_MAX];
        struct stat sb;
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        if (bl_path_join(p, path, e->d_name) || lstat(p, &sb) != 0)
            continue;
        if (S_ISREG(sb.st_mode))
            sum += (uint64_t)sb.st_size;
        else if (S_ISDIR(sb.st_mode) && depth > 0)
            sum += folder_bytes(p, depth - 1);
    }
    closedir(d);
    return sum;
}

static bl_disk_app *find_app(bl_disk_app *v, const int64_t *ids, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return &v[i];
    return NULL;
}

static void scan(bl_retention *r)
{
    bl_rs_app *apps;
    size_t n;
    if (bl_rs_apps(r->db, &apps, &n))
        return;
    bl_disk_app *v = calloc(n ? n : 1, sizeof *v);
    int64_t *ids = calloc(n ? n : 1, sizeof *ids);
    if (!v || !ids) {
        free(v);
        free(ids);
        free(apps);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(v[i].app, sizeof v[i].app, "%s", apps[i].name);
        v[i].id = apps[i].id;
        ids[i] = apps[i].id;
        char bd[BL_PATH_MAX], ad[BL_PATH_MAX], name[32];
        snprintf(name, sizeof name, "%lld", (long long)apps[i].id);
        if (!bl_path_join(bd, r->data_dir, "builds") && !bl_path_join(ad, bd, name))
            v[i].upload_bytes = folder_bytes(ad, 1);
    }
    free(apps);
    bl_disk_server srv;
    memset(&srv, 0, sizeof srv);
    char d[BL_PATH_MAX];
    if (!bl_path_join(d, r->data_dir, "batches/done")) {
        DIR *dd = opendir(d);
        struct dirent *e;
        while (dd && (e = readdir(dd))) {
            char p[BL_PATH_MAX], uuid[37];
            struct stat sb;
            const char *dot = strchr(e->d_name, '.');
            if (!dot || dot - e->d_name != 36 || bl_path_join(p, d, e->d_name) ||
                lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
                continue;
            memcpy(uuid, e->d_name, 36);
            uuid[36] = '\0';
            int64_t app_id;
            int gone;
            bl_err err = bl_rs_batch_owner(r->db, uuid, &app_id, &gone);
            bl_disk_app *a = err ? NULL : find_app(v, ids, n, app_id);
            if (!err && gone) {
                /* sent again after raw retention deleted it (a duplicate, not
                 * counted twice): it goes too */
                unlink(p);
            } else if (a) {
                a->raw_bytes += (uint64_t)sb.st_size;
                a->raw_files++;
            } else {
                srv.unattributed += (uint64_t)sb.st_size;
            }
        }
        if (dd)
            closedir(dd);
    }
    static const char *const dbfiles[3] = { "beatline.db", "beatline.db-wal",
                                            "beatline.db-shm" };
    for (int i = 0; i < 3; i++) {
        struct stat sb;
        if (!bl_path_join(d, r->data_dir, dbfiles[i]) && stat(d, &sb) == 0)
            srv.database += (uint64_t)sb.st_size;
    }
    if (!bl_path_join(d, r->data_dir, "batches/pending"))
        srv.pending = folder_bytes(d, 0);
    if (!bl_path_join(d, r->data_dir, "batches/failed"))
        srv.failed = folder_bytes(d, 0);
    if (!bl_path_join(d, r->data_dir, "trash"))
        srv.trash = folder_bytes(d, 1);
    free(ids);
    pthread_mutex_lock(&r->mu);
    free(r->disk);
    r->disk = v;
    r->n_disk = n;
    r->srv = srv;
    r->scanned = 1;
    r->st.scans++;
    pthread_mutex_unlock(&r->mu);
}

/* ---- the thread --------------------------------------------------------- */

static void *retention_main(void *arg)
{
    bl_retention *r = arg;
    double next_pass = mono_s(), next_scan = mono_s();
    int kicked = 0;
    for (;;) {
        /* builds deleted (at start: deletions a stop cut short); also
         * looked for every minute, for a DELETE answered 202 whose build
         * the writer moved to the graveyard after the answer */
        retry_requests(r);
        sweep_doomed(r);
        int passed = 0;
        if (!stopping(r) && mono_s() >= next_pass) {
            pass(r);
            sweep_doomed(r); /* builds whose data all expired */
            next_pass = mono_s() + (double)r->o.interval_s;
            passed = 1;
        }
        /* at start, after a pass or a deletion, and every SCAN_EVERY_S */
        if (!stopping(r) && (passed || kicked || mono_s() >= next_scan)) {
            scan(r);
            next_scan = mono_s() + SCAN_EVERY_S;
        }
        pthread_mutex_lock(&r->mu);
        double wake = next_pass < next_scan ? next_pass : next_scan;
        if (wake > mono_s() + 60)
            wake = mono_s() + 60;
        while (!r->stop && !r->kicked) {
            double left = wake - mono_s();
            if (left <= 0)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += (time_t)left;
            ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        }
        int stop = r->stop;
        kicked = r->kicked;
        r->kicked = 0;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
    }
    return NULL;
}

bl_err bl_retention_start(const bl_retention_opts *o, bl_retention **out, char *errbuf,
                          size_t n)
{
    *out = NULL;
    bl_retention *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(errbuf, n, "out of memory");
        return BL_ENOMEM;
    }
    r->o = *o;
    snprintf(r->data_dir, sizeof r->data_dir, "%s", o->data_dir);
    r->o.data_dir = r->data_dir;
    if (!r->o.interval_s)
        r->o.interval_s = 3600;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    char dbp[BL_PATH_MAX];
    bl_err err = bl_datadir_db(r->data_dir, dbp);
    if (err)
        snprintf(errbuf, n, "%s: path too long", r->data_dir);
    else
        err = bl_db_open(dbp, 0, &r->db, errbuf, n);
    if (!err) {
        if (pthread_create(&r->thread, NULL, retention_main, r) != 0) {
            snprintf(errbuf, n, "cannot start the retention thread");
            err = BL_ENOMEM;
        } else {
            r->started = 1;
        }
    }
    if (err) {
        bl_retention_stop(r);
        return err;
    }
    *out = r;
    return BL_OK;
}

void bl_retention_stop(bl_retention *r)
{
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    bl_db_close(r->db);
    free(r->disk);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

void bl_retention_kick(bl_retention *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->kicked = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void bl_retention_stats_get(bl_retention *r, bl_retention_stats *s)
{
    pthread_mutex_lock(&r->mu);
    *s = r->st;
    pthread_mutex_unlock(&r->mu);
}

bl_err bl_retention_disk(bl_retention *r, bl_disk_app **apps, size_t *n, bl_disk_server *srv,
                         int *scanned)
{
    pthread_mutex_lock(&r->mu);
    *n = r->n_disk;
    *srv = r->srv;
    *scanned = r->scanned;
    *apps = malloc((r->n_disk ? r->n_disk : 1) * sizeof **apps);
    if (*apps && r->n_disk)
        memcpy(*apps, r->disk, r->n_disk * sizeof **apps);
    pthread_mutex_unlock(&r->mu);
    if (!*apps) {
        *n = 0;
        return BL_ENOMEM;
    }
    return BL_OK;
}
