/*
 * datahealth.c — data directory start-up checks, lock and free-space checks
 * (see datahealth.h).
 */
#include "pipeline/datahealth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "pipeline/datadir.h"

/* Folders the server creates files in (relative to the data directory). */
static const char *const written[] = { "", "batches/pending", "builds", "tmp" };

static int not_writable(int e)
{
    return e == EACCES || e == EPERM || e == EROFS;
}

/* Creates and removes an empty file in folder `d`; errno on failure. */
static int probe(const char *d)
{
    char p[BL_PATH_MAX];
    int k = snprintf(p, sizeof p, "%s/.probe-%ld", d, (long)getpid());
    if (k < 0 || k >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return -1;
    close(fd);
    return unlink(p);
}

bl_err bl_datadir_open(const char *dir, int *lock_fd, char *err, size_t n)
{
    *lock_fd = -1;
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT || bl_mkdir_p(dir) != BL_OK) {
            snprintf(err, n, "cannot create the data directory %s: %s", dir, strerror(errno));
            return BL_EIO;
        }
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(err, n, "the data directory %s is not a directory", dir);
        return BL_EIO;
    }
    if (bl_datadir_init(dir) != BL_OK) {
        int e = errno;
        if (not_writable(e))
            snprintf(err, n, "the data directory %s is not writable (cannot create its folders: %s)",
                     dir, strerror(e));
        else
            snprintf(err, n, "cannot create the folders of the data directory %s: %s", dir,
                     strerror(e));
        return BL_EIO;
    }
    for (size_t i = 0; i < sizeof written / sizeof *written; i++) {
        char d[BL_PATH_MAX];
        int k = snprintf(d, sizeof d, "%s%s%s", dir, written[i][0] ? "/" : "", written[i]);
        if (k < 0 || k >= (int)sizeof d) {
            snprintf(err, n, "data directory path too long: %s", dir);
            return BL_EIO;
        }
        if (probe(d) != 0) {
            int e = errno;
            if (not_writable(e))
                snprintf(err, n, "the data directory %s is not writable (%s: %s)", dir, d,
                         strerror(e));
            else
                snprintf(err, n, "cannot write in the data directory %s (%s: %s)", dir, d,
                         strerror(e));
            return BL_EIO;
        }
    }
    char lockp[BL_PATH_MAX];
    if (bl_path_join(lockp, dir, ".server.lock") != BL_OK) {
        snprintf(err, n, "data directory path too long: %s", dir);
        return BL_EIO;
    }
    int fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(err, n, "cannot open the lock file %s: %s", lockp, strerror(errno));
        return BL_EIO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            char pid[32] = "";
            ssize_t r = pread(fd, pid, sizeof pid - 1, 0);
            long v = r > 0 ? strtol(pid, NULL, 10) : 0;
            if (v > 0)
                snprintf(err, n, "%s is in use by another beatline-server (pid %ld)", dir, v);
            else
                snprintf(err, n, "%s is in use by another beatline-server", dir);
        } else {
            snprintf(err, n, "cannot lock %s: %s", lockp, strerror(e));
        }
        close(fd);
        return BL_EIO;
    }
    /* the pid, for the message above; best effort (the lock is what counts) */
    char pid[32];
    int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)k, 0) != k)
        fprintf(stderr, "beatline-server: cannot write the pid into %s: %s\n", lockp,
                strerror(errno));
    *lock_fd = fd;
    return BL_OK;
}

bl_err bl_disk_state_read(const char *dir, bl_disk_state *out)
{
    memset(out, 0, sizeof *out);
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0)
        return BL_EIO;
    out->read_only = (sv.f_flag & ST_RDONLY) != 0;
    out->free_bytes = (uint64_t)sv.f_bavail * (uint64_t)(sv.f_frsize ? sv.f_frsize : sv.f_bsize);
    out->free_inodes = sv.f_files ? (uint64_t)sv.f_favail : UINT64_MAX;
    static const char *const sub[2] = { "tmp", "batches/pending" };
    for (int i = 0; i < 2 && !out->read_only; i++) {
        char p[BL_PATH_MAX];
        if (bl_path_join(p, dir, sub[i]) == BL_OK && access(p, W_OK) != 0 &&
            not_writable(errno))
            out->read_only = 1;
    }
    return BL_OK;
}

unsigned bl_disk_judge(const bl_disk_state *ds, uint64_t min_free, uint64_t need, char *msg,
                       size_t n)
{
    if (ds->read_only) {
        snprintf(msg, n, "the data directory is not writable (read-only); the server cannot "
                         "store data");
        return 503;
    }
    /* a disk with no byte free takes nothing, whatever --min-free says */
    if (ds->free_bytes == 0 || ds->free_bytes < min_free || ds->free_bytes - min_free < need) {
        snprintf(msg, n,
                 "insufficient storage: the data directory's disk is (nearly) full: %" PRIu64
                 " bytes free, the server keeps at least %" PRIu64 " (--min-free)",
                 ds->free_bytes, min_free);
        return 507;
    }
    if (ds->free_inodes < 16) {
        snprintf(msg, n, "insufficient storage: the data directory's disk has no free inodes");
        return 507;
    }
    return 0;
}

unsigned bl_disk_refuse(const char *dir, uint64_t min_free, uint64_t need, char *msg, size_t n)
{
    bl_disk_state ds;
    if (bl_disk_state_read(dir, &ds) != BL_OK) {
        snprintf(msg, n, "cannot check the data directory: %s", strerror(errno));
        return 503;
    }
    return bl_disk_judge(&ds, min_free, need, msg, n);
}
