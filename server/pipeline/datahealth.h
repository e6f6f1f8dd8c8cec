/*
 * datahealth.h — can the data directory take data: the checks made at
 * start-up (with a reason a person can act on), the one-server lock, and
 * the cheap checks made by /healthz and before every POST/PUT that writes.
 *
 * Nothing here writes more than an empty probe file.
 */
#ifndef BL_DATAHEALTH_H
#define BL_DATAHEALTH_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

/*
 * Start-up: makes `dir` a usable data directory and takes its lock.
 *   - `dir` missing: created (with its parents); when that fails, "cannot
 *     create the data directory DIR: REASON";
 *   - `dir` not a directory: "DIR is not a directory";
 *   - the folders of datadir.h are created; then an empty probe file is
 *     created and removed in each folder the server writes to: when that
 *     fails with EACCES/EPERM/EROFS, "the data directory DIR is not
 *     writable (PATH: REASON)"; other errors name the path and reason;
 *   - the lock DIR/.server.lock (flock, held while the process lives): held
 *     by another process → "DIR is in use by another beatline-server
 *     (pid N)"; other lock errors name the reason.
 * On success *lock_fd is the lock's descriptor (the caller keeps it open
 * until exit; the lock file holds the pid). Errors: BL_EIO with `err` set
 * (NUL-terminated, truncated to n). `err` is written only on failure.
 */
bl_err bl_datadir_open(const char *dir, int *lock_fd, char *err, size_t n);

/* What the data directory's file system looks like now. */
typedef struct bl_disk_state {
    int read_only;        /* mounted read-only (ST_RDONLY) or probe said EROFS/EACCES */
    uint64_t free_bytes;  /* available to this process (f_bavail * f_frsize) */
    uint64_t free_inodes; /* available inodes (f_favail; UINT64_MAX when the fs has none) */
} bl_disk_state;

/*
 * Reads the state of the data directory's file system (statvfs, plus an
 * access(W_OK) on DIR/tmp and DIR/batches/pending: no write). BL_EIO with
 * errno when statvfs fails.
 */
bl_err bl_disk_state_read(const char *dir, bl_disk_state *out);

/*
 * The judgement of bl_disk_refuse on a state already read (/healthz uses
 * it with need 0, so health and refusals never disagree).
 */
unsigned bl_disk_judge(const bl_disk_state *ds, uint64_t min_free, uint64_t need, char *msg,
                       size_t n);

/*
 * Whether a write of about `need` more bytes should be refused: 0 when it
 * may go on; else an HTTP status (507 not enough free space or inodes, 503
 * read-only or the check failed) and a message in `msg` (n bytes) naming
 * the free bytes and the minimum `min_free` (--min-free). Costs one statvfs
 * and two access() calls.
 */
unsigned bl_disk_refuse(const char *dir, uint64_t min_free, uint64_t need, char *msg, size_t n);

#endif
