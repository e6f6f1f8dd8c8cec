/*
 * datadir.h — layout of a Beatline data directory, and the file operations
 * that make acknowledged data survive a kill -9 (write to a temporary file,
 * fsync, link/rename into place, fsync the directory).
 *
 *   DIR/beatline.db                    SQLite database (WAL)
 *   DIR/batches/pending/UUID.EXT       accepted, not yet processed
 *   DIR/batches/done/UUID.EXT          processed (kept: the raw batch store)
 *   DIR/builds/APP_ID/HEX/             one folder per build; HEX is the build
 *        mapping.txt, mapping.idx,     name hex-encoded, so no request text
 *        mapping.hash, method-ids.txt, ever becomes a path component
 *        method-ids.hash
 *   DIR/tmp/                           temporary files (same filesystem)
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
bl_err bl_datadir_db(const char *dir, char *out);
bl_err bl_datadir_batch(const char *dir, int done, const char *uuid, bl_encoding enc, char *out);
bl_err bl_datadir_build(const char *dir, int64_t app_id, const char *build, char *out);
/* A build name is 1..BL_BUILD_NAME_MAX bytes of UTF-8 without control characters,
 * '/' or '\\', and not "." or ".." (it travels in URL paths, where those are
 * dot segments, RFC 3986 5.2.4). 1 when valid. */
int bl_build_name_valid(const char *build, size_t n);

/* File extension of an encoding, and back (-1 if unknown). */
const char *bl_enc_ext(bl_encoding enc);
int bl_enc_from_ext(const char *ext, bl_encoding *enc);

/* out = dir + "/" + name, checked against BL_PATH_MAX (BL_ETOOBIG). */
bl_err bl_path_join(char *out, const char *dir, const char *name);

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

/* Reads a whole file (at most max bytes) into a new heap buffer. */
bl_err bl_read_file(const char *path, size_t max, char **data, size_t *len);

#endif
