/*
 * files.c — uploaded files in a PostgreSQL store (see files.h).
 */
#include "store/files.h"
#include "store/internal.h"
#include "store/stmt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

int bl_files_in_store(const bl_db *db)
{
    return db && bl_db_is_pg(db);
}

int bl_files_hash_valid(const char *hash)
{
    if (!hash)
        return 0;
    size_t i = 0;
    for (; hash[i]; i++)
        if (i >= BL_FILES_HASH_LEN ||
            !((hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' && hash[i] <= 'f')))
            return 0;
    return i == BL_FILES_HASH_LEN;
}

static const char *kind_name(bl_file_kind kind)
{
    return kind == BL_FILE_MAPPING ? "mapping" : kind == BL_FILE_METHODIDS ? "method-ids" : NULL;
}

/* The hex form of an XXH3-128 digest (as http/h_upload.c writes it). */
static void hex128(XXH3_state_t *s, char out[BL_FILES_HASH_LEN + 1])
{
    XXH128_hash_t h = XXH3_128bits_digest(s);
    snprintf(out, BL_FILES_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

bl_err bl_files_exists(bl_db *db, const char *hash, uint64_t *size)
{
    if (!bl_db_is_pg(db) || !bl_files_hash_valid(hash))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT size FROM files WHERE hash = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, hash, -1);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW && size) {
        int64_t n = bl_st_col_int64(st, 0);
        *size = n < 0 ? 0 : (uint64_t)n;
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

/* Reads up to n bytes (fewer only at the end of the file). */
static ssize_t read_full(int fd, unsigned char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* The chunks of the file on fd, then the files row; inside the caller's
 * transaction. buf: BL_FILES_CHUNK bytes. */
static bl_err put_chunks(bl_db *db, const char *hash, int fd, uint64_t size, unsigned char *buf,
                         XXH3_state_t *xs)
{
    bl_st *ins = bl_st_get(db, "INSERT INTO file_chunks (hash, seq, data) VALUES (?, ?, ?) "
                               "ON CONFLICT (hash, seq) DO NOTHING");
    if (!ins)
        return BL_EIO;
    uint64_t total = 0;
    int64_t seq = 0;
    for (;;) {
        ssize_t n = read_full(fd, buf, BL_FILES_CHUNK);
        if (n < 0)
            return BL_EIO;
        if (n == 0 && seq > 0)
            break;
        total += (uint64_t)n;
        if (total > size)
            return BL_EFORMAT;
        XXH3_128bits_update(xs, buf, (size_t)n);
        bl_st_text(ins, 1, hash, -1);
        bl_st_int64(ins, 2, seq);
        bl_st_blob(ins, 3, buf, (size_t)n);
        if (bl_st_done(ins))
            return BL_EIO;
        seq++;
        if ((size_t)n < BL_FILES_CHUNK)
            break;
    }
    char got[BL_FILES_HASH_LEN + 1];
    hex128(xs, got);
    if (total != size || strcmp(got, hash) != 0)
        return BL_EFORMAT;
    bl_st *f = bl_st_get(db, "INSERT INTO files (hash, size, chunks, created_at) "
                             "VALUES (?, ?, ?, "
                             "CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS bigint)) "
                             "ON CONFLICT (hash) DO NOTHING");
    if (!f)
        return BL_EIO;
    bl_st_text(f, 1, hash, -1);
    bl_st_int64(f, 2, (int64_t)size);
    bl_st_int64(f, 3, seq);
    return bl_st_done(f);
}

bl_err bl_files_put(bl_db *db, const char *hash, const char *path, uint64_t size)
{
    if (!bl_db_is_pg(db) || !bl_files_hash_valid(hash) || size > INT64_MAX)
        return BL_EINVAL;
    /* stored already: its time is renewed, so that the cleanup of contents
     * no build names (bl_files_orphans_expire) leaves it to the build
     * about to name it */
    bl_st *t = bl_st_get(db, "UPDATE files SET created_at = "
                             "CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS bigint) "
                             "WHERE hash = ?");
    if (!t)
        return BL_EIO;
    bl_st_text(t, 1, hash, -1);
    if (bl_st_step(t) == BL_ST_ERROR)
        return BL_EIO;
    int found = bl_st_changes(t) > 0;
    bl_st_reset(t);
    if (found)
        return BL_OK;
    bl_err e;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    unsigned char *buf = malloc(BL_FILES_CHUNK);
    XXH3_state_t *xs = XXH3_createState();
    if (!buf || !xs || XXH3_128bits_reset(xs) != XXH_OK) {
        free(buf);
        XXH3_freeState(xs);
        close(fd);
        return BL_ENOMEM;
    }
    e = bl_db_begin(db);
    if (!e) {
        e = put_chunks(db, hash, fd, size, buf, xs);
        int err = errno;
        if (!e)
            e = bl_db_commit(db);
        if (e)
            bl_db_rollback(db);
        errno = err;
    }
    int err = errno;
    free(buf);
    XXH3_freeState(xs);
    close(fd);
    errno = err;
    return e;
}

/* Writes n bytes to fd. */
static bl_err write_full(int fd, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return BL_EIO;
        c += w;
        n -= (size_t)w;
    }
    return BL_OK;
}

bl_err bl_files_get(bl_db *db, const char *hash, int fd, uint64_t max)
{
    if (!bl_db_is_pg(db) || !bl_files_hash_valid(hash))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT size, chunks FROM files WHERE hash = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, hash, -1);
    int rc = bl_st_step(st);
    int64_t size = rc == BL_ST_ROW ? bl_st_col_int64(st, 0) : 0;
    int64_t chunks = rc == BL_ST_ROW ? bl_st_col_int64(st, 1) : 0;
    bl_st_reset(st);
    if (rc != BL_ST_ROW)
        return rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
    if (size < 0 || chunks < 1 || (uint64_t)chunks > (uint64_t)size / BL_FILES_CHUNK + 1)
        return BL_EFORMAT;
    if ((uint64_t)size > max)
        return BL_ETOOBIG;
    XXH3_state_t *xs = XXH3_createState();
    if (!xs || XXH3_128bits_reset(xs) != XXH_OK) {
        XXH3_freeState(xs);
        return BL_ENOMEM;
    }
    bl_st *ck = bl_st_get(db, "SELECT data FROM file_chunks WHERE hash = ? AND seq = ?");
    bl_err e = ck ? BL_OK : BL_EIO;
    uint64_t total = 0;
    for (int64_t seq = 0; !e && seq < chunks; seq++) {
        bl_st_text(ck, 1, hash, -1);
        bl_st_int64(ck, 2, seq);
        rc = bl_st_step(ck);
        if (rc != BL_ST_ROW) {
            e = rc == BL_ST_DONE ? BL_EFORMAT : BL_EIO;
        } else {
            const void *p = bl_st_col_blob(ck, 0);
            size_t n = bl_st_col_bytes(ck, 0);
            if (n > BL_FILES_CHUNK || total + n > (uint64_t)size || (n && !p)) {
                e = BL_EFORMAT;
            } else if (n) {
                XXH3_128bits_update(xs, p, n);
                e = write_full(fd, p, n);
                total += n;
            }
        }
        int err = errno;
        bl_st_reset(ck);
        errno = err;
    }
    char got[BL_FILES_HASH_LEN + 1];
    hex128(xs, got);
    XXH3_freeState(xs);
    if (!e && (total != (uint64_t)size || strcmp(got, hash) != 0))
        e = BL_EFORMAT;
    return e;
}

bl_err bl_files_build_get(bl_db *db, int64_t app_id, const char *build, bl_file_kind kind,
                          char *hash_out, uint64_t *size)
{
    const char *k = kind_name(kind);
    if (!bl_db_is_pg(db) || !k)
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "SELECT hash, size FROM build_files "
                              "WHERE app_id = ? AND build = ? AND kind = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_text(st, 2, build, -1);
    bl_st_text(st, 3, k, -1);
    int rc = bl_st_step(st), bad = 0;
    if (rc == BL_ST_ROW) {
        const char *h = bl_st_col_str(st, 0);
        if (!bl_files_hash_valid(h)) {
            bad = 1;
        } else {
            snprintf(hash_out, BL_FILES_HASH_LEN + 1, "%s", h);
            if (size) {
                int64_t n = bl_st_col_int64(st, 1);
                *size = n < 0 ? 0 : (uint64_t)n;
            }
        }
    }
    bl_st_reset(st);
    if (bad)
        return BL_EFORMAT;
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

bl_err bl_files_build_set(bl_db *db, int64_t app_id, const char *build, bl_file_kind kind,
                          const char *hash, uint64_t size, int64_t at_us, int replace,
                          char *previous)
{
    const char *k = kind_name(kind);
    if (!bl_db_is_pg(db) || !k || !bl_files_hash_valid(hash) || size > INT64_MAX)
        return BL_EINVAL;
    if (previous)
        previous[0] = '\0';
    /* replace: one upsert that also says what was there (the CTE reads the
     * row as it was before the statement); not replace: an insert that does
     * nothing on a conflict, then the row that is there */
    bl_st *st =
        replace
            ? bl_st_get(db, "WITH old AS (SELECT hash FROM build_files WHERE app_id = ?1 "
                            "AND build = ?2 AND kind = ?3) "
                            "INSERT INTO build_files (app_id, build, kind, hash, size, "
                            "uploaded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                            "ON CONFLICT (app_id, build, kind) DO UPDATE SET "
                            "hash = excluded.hash, size = excluded.size, "
                            "uploaded_at = excluded.uploaded_at "
                            "RETURNING COALESCE((SELECT hash FROM old), '')")
            : bl_st_get(db, "INSERT INTO build_files (app_id, build, kind, hash, size, "
                            "uploaded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                            "ON CONFLICT (app_id, build, kind) DO NOTHING RETURNING ''");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_text(st, 2, build, -1);
    bl_st_text(st, 3, k, -1);
    bl_st_text(st, 4, hash, -1);
    bl_st_int64(st, 5, (int64_t)size);
    bl_st_int64(st, 6, at_us);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW && previous)
        snprintf(previous, BL_FILES_HASH_LEN + 1, "%s", bl_st_col_str(st, 0));
    bl_st_reset(st);
    if (rc == BL_ST_ROW)
        return BL_OK;
    if (rc != BL_ST_DONE)
        return BL_EIO;
    /* not replace, and the build has a file of that kind already */
    char cur[BL_FILES_HASH_LEN + 1];
    bl_err e = bl_files_build_get(db, app_id, build, kind, cur, NULL);
    if (e)
        return e;
    if (previous)
        snprintf(previous, BL_FILES_HASH_LEN + 1, "%s", cur);
    return strcmp(cur, hash) == 0 ? BL_OK : BL_EINVAL;
}

bl_err bl_files_build_forget(bl_db *db, int64_t app_id, const char *build)
{
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    bl_st *st = bl_st_get(db, "DELETE FROM build_files WHERE app_id = ? AND build = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_text(st, 2, build, -1);
    return bl_st_done(st);
}

bl_err bl_files_orphans_expire(bl_db *db, int64_t before_us, int64_t max, int64_t *n)
{
    *n = 0;
    if (!bl_db_is_pg(db))
        return BL_EINVAL;
    /* FOR UPDATE: an upload naming the content (its foreign key check)
     * makes it skipped; one that stored it again made it too new (the
     * condition is checked again on the row as it is once locked) */
    bl_st *st = bl_st_get(
        db, "WITH d AS (DELETE FROM files WHERE hash IN (SELECT f.hash FROM files f "
            "WHERE f.created_at < ? AND NOT EXISTS (SELECT 1 FROM build_files b "
            "WHERE b.hash = f.hash) ORDER BY f.hash LIMIT ? FOR UPDATE SKIP LOCKED) "
            "AND created_at < ? RETURNING hash), "
            "c AS (DELETE FROM file_chunks WHERE hash IN (SELECT hash FROM d)) "
            "SELECT count(*) FROM d");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, before_us);
    bl_st_int64(st, 2, max);
    bl_st_int64(st, 3, before_us);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *n = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}
