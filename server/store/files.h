/*
 * files.h — uploaded mapping and method-ID files kept in a PostgreSQL store
 * (issue 19: stateless nodes). With a PostgreSQL store nothing a node needs
 * may live only on its local disk: an upload is durable here before it is
 * answered, and a node that needs a build's file and does not have it
 * fetches it by hash into its data directory (pipeline/buildcache.h).
 *
 * Two records (schema/pg/0003_files.sql):
 * - contents by content hash (the XXH3-128 the upload handler computes, 32
 *   lowercase hex digits: high 64 bits then low 64 bits): table `files`
 *   (hash, size, chunks) and the bytes in rows of at most BL_FILES_CHUNK
 *   bytes of table `file_chunks` (hash, seq from 0, data bytea). A content
 *   is stored once whatever the number of builds or nodes that upload it.
 * - which content a build has: table `build_files` (app_id, build name,
 *   kind, hash, size, uploaded_at µs), one row per (app, build, kind) —
 *   what DIR/builds/APP/HASH/mapping.hash and method-ids.hash say in the
 *   SQLite mode.
 *
 * PostgreSQL only: on an SQLite connection every function returns BL_EINVAL
 * (the SQLite mode keeps the files in the data directory alone, as before).
 * Errors: BL_EIO is a database error (message: bl_db_errmsg) or, where a
 * local file is read or written, an I/O error (errno kept).
 */
#ifndef BL_STORE_FILES_H
#define BL_STORE_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "common/blerr.h"
#include "store/db.h"

/* bytes per file_chunks row (4 MiB: a chunk travels whole, in one
 * statement, and its hex form doubles it in libpq's result) */
#define BL_FILES_CHUNK ((size_t)4 << 20)
/* length of a content hash in hex digits */
#define BL_FILES_HASH_LEN 32

/* the kinds of build file */
typedef enum { BL_FILE_MAPPING = 1, BL_FILE_METHODIDS = 2 } bl_file_kind;

/* 1 when the store `db` keeps the uploaded files (a PostgreSQL store: the
 * nodes' build folders are caches, pipeline/buildcache.h), 0 when they live
 * in the data directory alone (SQLite). */
int bl_files_in_store(const bl_db *db);

/* 1 when `hash` is BL_FILES_HASH_LEN lowercase hex digits, NUL-terminated. */
int bl_files_hash_valid(const char *hash);

/*
 * Stores the content of the local file `path` (exactly `size` bytes, whose
 * XXH3-128 is `hash`, checked while it is read) under `hash`, in one
 * transaction of its own on `db` (a writable connection outside any
 * transaction), read and sent BL_FILES_CHUNK bytes at a time (memory: one
 * chunk). Idempotent: a content already stored is not sent again, and two
 * nodes storing the same content at once store it once. Durable when BL_OK
 * returns (PostgreSQL commit). BL_EINVAL (SQLite, or an invalid hash),
 * BL_EFORMAT (the file is not of that size or hash: nothing stored),
 * BL_ENOMEM, BL_EIO.
 */
bl_err bl_files_put(bl_db *db, const char *hash, const char *path, uint64_t size);

/* BL_OK when content `hash` is stored (*size, may be NULL, gets its size),
 * BL_ENOTFOUND when not, BL_EINVAL, BL_EIO. */
bl_err bl_files_exists(bl_db *db, const char *hash, uint64_t *size);

/*
 * Writes content `hash` to the open file descriptor `fd` (from its current
 * position; the caller owns fd, and makes the file durable and moves it
 * into place: pipeline/buildcache.h), one chunk per statement (memory: one
 * chunk). Checks the chunks are all there, the size, and the XXH3-128 of
 * what was written. BL_ENOTFOUND (no such content), BL_ETOOBIG (its size is
 * over `max` bytes: nothing written), BL_EFORMAT (stored content damaged:
 * a chunk missing, another size or another hash; fd holds a part),
 * BL_EINVAL, BL_ENOMEM, BL_EIO (database, or the write: errno).
 */
bl_err bl_files_get(bl_db *db, const char *hash, int fd, uint64_t max);

/* The content build (app_id, build) has of `kind`: hash into hash_out
 * (BL_FILES_HASH_LEN + 1 bytes) and *size (may be NULL). BL_ENOTFOUND when
 * it has none, BL_EFORMAT when the recorded hash is not one (a row written
 * by hand), BL_EINVAL, BL_EIO. */
bl_err bl_files_build_get(bl_db *db, int64_t app_id, const char *build, bl_file_kind kind,
                          char *hash_out, uint64_t *size);

/*
 * Records that build (app_id, build) has content `hash` (stored already by
 * bl_files_put, else BL_EIO: foreign key) of `kind`, `size` bytes, uploaded
 * at `at_us`. With replace = 0 it is recorded only when the build has no
 * file of that kind or has this same content; with replace = 1 it replaces
 * any. *previous (BL_FILES_HASH_LEN + 1 bytes, may be NULL) gets the hash
 * the build had before ("" when none). BL_OK when the build now has `hash`;
 * BL_EINVAL with *previous set when replace = 0 and the build has another
 * content (nothing changed: the caller answers 409), also for an invalid
 * hash or SQLite; BL_ENOTFOUND when replace = 0 and the conflicting row
 * went meanwhile (a deletion: try again); BL_EIO. One statement, committed when it returns unless
 * the caller holds a transaction.
 */
bl_err bl_files_build_set(bl_db *db, int64_t app_id, const char *build, bl_file_kind kind,
                          const char *hash, uint64_t size, int64_t at_us, int replace,
                          char *previous);

/* Deletes up to `max` contents (files rows and their file_chunks) that no
 * build_files row names and that were stored (or stored again: bl_files_put
 * renews the time of a content it finds) before `before_us` (µs, the
 * database server's clock); *n: contents deleted. A content an upload is
 * naming at the same moment is skipped (locked) or, stored again, too new.
 * BL_EINVAL (SQLite), BL_EIO. */
bl_err bl_files_orphans_expire(bl_db *db, int64_t before_us, int64_t max, int64_t *n);

/* Forgets the files of build (app_id, build) (a deleted build: a build of
 * the same name made later starts without files). The contents stay (other
 * builds may share them). BL_OK also when it had none; BL_EINVAL (SQLite),
 * BL_EIO. Runs in the caller's transaction when there is one. */
bl_err bl_files_build_forget(bl_db *db, int64_t app_id, const char *build);

#endif
