/*
 * buildcache.h — a build folder as a local cache of the PostgreSQL store
 * (issue 19: stateless nodes).
 *
 * With a PostgreSQL store the build's uploaded files are kept in the store
 * (store/files.h): which mapping and method-ID file a build has, and their
 * contents by hash. A node keeps copies in its data directory, in the build
 * folder the SQLite mode uses (pipeline/datadir.h: mapping.txt with
 * mapping.hash, method-ids.txt with method-ids.hash, and the mmap index
 * mapping.idx built from mapping.txt), so that everything reading a build
 * folder works the same on both backends once bl_buildcache_sync made the
 * folder agree with the store:
 *
 * - a file the store has and the folder lacks, or holds with another hash
 *   (another upload on another node, a replacement), or holds damaged (its
 *   XXH3-128 is not its hash), is fetched by hash into DIR/tmp, its hash
 *   checked, fsync'ed, renamed into place, then its .hash file written;
 *   for the mapping, mapping.idx is removed first (it is rebuilt from the
 *   new text by bl_datadir_open_index);
 * - a file the folder has and the store does not (a deleted build) is
 *   removed, with its .hash file (and mapping.idx).
 *
 * A cached file is hashed again when it was not seen before by this
 * process or changed since (device, inode, size or modification time differ
 * from when it was last checked): a damaged copy is found at the next sync
 * after the damage, at the cost of one read of the file per process and
 * change. Changes are made under the build folder's lock (.lock, flock, as
 * uploads take it); a sync that finds nothing to change takes no lock.
 *
 * In the SQLite mode nothing here is called (the files live in the data
 * directory alone, as before issue 19).
 */
#ifndef BL_BUILDCACHE_H
#define BL_BUILDCACHE_H

#include <stdint.h>

#include "common/blerr.h"
#include "store/db.h"

/* The largest contents fetched (the upload caps, --max-mapping and
 * --max-decompressed, bytes); both UINT64_MAX until set. Call once at start,
 * before any sync. */
void bl_buildcache_limits(uint64_t max_mapping, uint64_t max_methodids);

/*
 * Makes the folder of build (app_id, build) under data directory data_dir
 * agree with the PostgreSQL store `db` (see above); build_dir (BL_PATH_MAX
 * bytes) gets the folder's path, also on failure when it could be made.
 * The folder is created when the store has a file for the build. `locked`:
 * 1 when the caller holds the build folder's lock already (an upload), 0
 * to have it taken when something must change. *fetched (may be NULL) gets
 * the number of files fetched. BL_OK; BL_EINVAL (an invalid build name, or
 * db is not PostgreSQL); BL_ETOOBIG (a stored file over its limit);
 * BL_EFORMAT (a stored content damaged: its hash or size is not what the
 * store says); BL_ENOMEM; BL_EIO (database: bl_db_errmsg; or the data
 * directory: errno). On failure the folder holds, for each kind, either
 * the previous file with its .hash or none: never a file under another
 * file's hash.
 */
bl_err bl_buildcache_sync(bl_db *db, const char *data_dir, int64_t app_id, const char *build,
                          int locked, char *build_dir, unsigned *fetched);

/* Tells the cache that the file at `path` (just written by the caller, e.g.
 * an upload that computed its hash while receiving it) has content hash
 * `hash`: the next sync does not read it again. Best effort. */
void bl_buildcache_note(const char *path, const char *hash);

/* Files fetched from the store and cached copies found damaged since the
 * start (for logs and tests). */
uint64_t bl_buildcache_fetches(void);
uint64_t bl_buildcache_damaged(void);

#endif
