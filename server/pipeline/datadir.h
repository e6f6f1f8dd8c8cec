/*
 * datadir.h — layout of a Beatline data directory, and the file operations
 * that make acknowledged data survive a kill -9 (write to a temporary file,
 * fsync, link/rename into place, fsync the directory).
 *
 *   DIR/beatline.db                    SQLite database (WAL)
 *   DIR/batches/pending/UUID.EXT       accepted, not yet processed
 *   DIR/batches/done/UUID.EXT          processed (kept: the raw batch store)
 *   DIR/builds/APP_ID/HASH/            one folder per build; HASH is the
 *        build-name,                   SHA-256 of the build name in lowercase
 *        mapping.txt, mapping.idx,     hex (64 characters, whatever the name's
 *        mapping.hash, method-ids.txt, length), so no request text ever
 *        method-ids.hash               becomes a path component and every
 *                                      valid name fits the 255-byte file-name
 *                                      limit. build-name holds the name's
 *                                      bytes exactly (no newline).
 *   DIR/tmp/                           temporary files (same filesystem)
 *
 * Before issue 11 a build folder was named by the build name in hex (a
 * 128-byte name made a 256-byte file name: uploads failed).
 * bl_datadir_migrate renames such folders at start.
 *
 * EXT is the body's Content-Encoding as received: bin (identity), gz, zst.
 */
#ifndef BL_DATADIR_H
#define BL_DATADIR_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/decomp.h"

#define BL_PATH_MAX 1024
#define BL_BUILD_NAME_MAX 128 /* bytes of a build name */

/* Creates the folders under dir (mode 0750). BL_EIO with errno. */
bl_err bl_datadir_init(const char *dir);

/* Builds a path into out (BL_PATH_MAX bytes); BL_ETOOBIG when it does not fit. */
/* bl_datadir_db: the store every connection of this process opens (store/db.h
 * bl_db_open): the URL given to bl_datadir_set_store when one was, else
 * DIR/beatline.db (SQLite in the data directory). */
bl_err bl_datadir_db(const char *dir, char *out);
/* Sets the process's store URL (`--store`, BEATLINE_STORE: `sqlite:PATH` or
 * `postgresql://…`, checked by bl_db_url_check) for bl_datadir_db; NULL or
 * "" for the data directory's SQLite database. Borrowed: the string must
 * outlive every later bl_datadir_db. Call it before any thread starts. */
void bl_datadir_set_store(const char *url);
bl_err bl_datadir_batch(const char *dir, int done, const char *uuid, bl_encoding enc, char *out);
/* DIR/builds/APP_ID/HASH (see above); BL_EINVAL for an invalid build name. */
bl_err bl_datadir_build(const char *dir, int64_t app_id, const char *build, char *out);
/* As bl_datadir_build, and creates the folder with its build-name file when
 * absent. The folder appears whole or not at all: it is made in DIR/tmp with
 * build-name written and fsync'ed, then renamed into place (a concurrent
 * creation of the same build wins harmlessly). BL_EIO with errno. */
bl_err bl_datadir_build_create(const char *dir, int64_t app_id, const char *build, char *out);
/* Reads build_dir/build-name into name (BL_BUILD_NAME_MAX + 1 bytes, NUL-
 * terminated): BL_OK only when the file holds a valid build name whose hash
 * is the folder's own name. BL_ENOTFOUND when absent, BL_EFORMAT otherwise. */
bl_err bl_datadir_build_name(const char *build_dir, char *name);
/*
 * Renames every build folder of the old layout (the name in hex) under
 * DIR/builds to its hash name. Crash-safe and idempotent: for each old
 * folder, build-name is written first (durably, inside the old folder), then
 * the folder is renamed and its parent fsync'ed; a folder that has a
 * build-name file but not its hash as name is a migration cut short and is
 * finished. A folder whose target already exists, or whose name is neither
 * layout, is left alone and logged. Call before anything else uses the data
 * directory (the server calls it under its lock, before the writer starts).
 * *migrated (may be NULL) gets the number of folders renamed.
 * BL_EIO when a rename or fsync fails (errno kept; the next start retries).
 */
bl_err bl_datadir_migrate(const char *dir, unsigned *migrated);
/* Removes what a creation cut short left in DIR/tmp (files, and folders of
 * bl_datadir_build_create with their build-name file). */
void bl_datadir_clean_tmp(const char *dir);
/* A build name is 1..BL_BUILD_NAME_MAX bytes of UTF-8 without control characters,
 * '/' or '\\', and not "." or ".." (it travels in URL paths, where those are
 * dot segments, RFC 3986 5.2.4). 1 when valid. */
int bl_build_name_valid(const char *build, size_t n);

/* File extension of an encoding, and back (-1 if unknown). */
const char *bl_enc_ext(bl_encoding enc);
int bl_enc_from_ext(const char *ext, bl_encoding *enc);

/* out = dir + "/" + name, checked against BL_PATH_MAX (BL_ETOOBIG). */
bl_err bl_path_join(char *out, const char *dir, const char *name);
/* Creates `path` and its missing parents (mode 0750; existing ones are
 * fine). BL_OK; BL_EINVAL (empty path) or BL_ETOOBIG (BL_PATH_MAX or
 * longer, errno ENAMETOOLONG); BL_EIO with errno of the mkdir that failed. */
bl_err bl_mkdir_p(const char *path);

/* fsyncs a directory. */
bl_err bl_fsync_dir(const char *dir);

/*
 * Creates a unique temporary file in DIR/tmp for writing; *fd and path out.
 * The caller writes, then calls bl_file_commit (fsync + link to `dst`
 * without replacing: BL_EINVAL with *exists = 1 when dst exists) or
 * bl_file_replace (fsync + rename over dst). Both fsync dst's directory and
 * remove the temporary name. bl_file_abort closes and unlinks.
 */
bl_err bl_tmpfile(const char *dir, int *fd, char *path);
bl_err bl_file_commit(int fd, const char *tmp, const char *dst, int *exists);
bl_err bl_file_replace(int fd, const char *tmp, const char *dst);
void bl_file_abort(int fd, const char *tmp);

/*
 * Opens build_dir/mapping.idx (symbol/mapindex.h; verified by its
 * checksum). When it is missing (ENOENT), damaged (BL_EFORMAT), of another
 * format (BL_EVERSION) or stale — build_dir/mapping.txt is of another size
 * than the index was built from, or newer than the index (a crash between
 * the two renames of a mapping upload, or a file put there by hand) — and
 * mapping.txt exists, rebuilds it from mapping.txt — under the build's lock
 * (build_dir/.lock, as uploads take it), into DIR/tmp, then renamed over
 * the old one and the folder fsync'ed — logs it, counts it
 * (bl_datadir_index_rebuilds) and opens the new one. *mi is the caller's
 * (bl_mapindex_close). *rebuilt (may be NULL) = 1 when it rebuilt.
 * BL_ENOTFOUND when the build has no mapping; BL_ENOMEM; BL_EIO (errno
 * kept) when the index cannot be opened for another reason (EMFILE,
 * EACCES, ...: nothing is rebuilt) or the rebuild failed; the builder's
 * errors when the stored mapping cannot be indexed.
 */
struct bl_mapindex;
bl_err bl_datadir_open_index(const char *dir, const char *build_dir, struct bl_mapindex **mi,
                             int *rebuilt);
/* The same for a caller that holds the build's lock already (an upload). */
bl_err bl_datadir_open_index_locked(const char *dir, const char *build_dir,
                                    struct bl_mapindex **mi, int *rebuilt);
/* Mapping indexes rebuilt by bl_datadir_open_index since the start (for
 * /metrics). */
uint64_t bl_datadir_index_rebuilds(void);

/* Reads a whole file (at most max bytes) into a new heap buffer. */
bl_err bl_read_file(const char *path, size_t max, char **data, size_t *len);

#endif
