/*
 * store_files_pg_test.c — uploaded files in a PostgreSQL store (issue 19):
 * store/files.h (contents by hash in 4 MiB chunks: sizes at and around the
 * chunk boundary, wrong hash or size refused with nothing stored, a second
 * put stores nothing more, the size cap of a get, a damaged or missing
 * chunk found; a build's file records: create, same, conflict, replace,
 * forget) and pipeline/buildcache.h (a build folder fetched, kept, a
 * damaged copy fetched again, a file the store no longer has removed). Run
 * by tests/unit/with_pg.sh (a fresh database in BEATLINE_TEST_PG_DB);
 * skipped (77) without it.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "pipeline/buildcache.h"
#include "pipeline/datadir.h"
#include "store/db.h"
#include "store/files.h"
#include "store/internal.h"
#include "store/stmt.h"
#include "testutil.h"

static bl_db *db;
static char tmpdir[256];

static void exec_ok(const char *sql)
{
    ck_assert_msg(bl_db_exec(db, sql) == BL_OK, "%s: %s", sql, bl_db_errmsg(db));
}

static void setup(void)
{
    char err[512];
    const char *url = getenv("BEATLINE_TEST_PG_DB");
    ck_assert_ptr_nonnull(url);
    ck_assert_msg(bl_db_open(url, 0, &db, err, sizeof err) == BL_OK, "%s", err);
    exec_ok("DELETE FROM build_files");
    exec_ok("DELETE FROM file_chunks");
    exec_ok("DELETE FROM files");
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/files-pg-XXXXXX", t && *t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    bl_db_close(db);
    db = NULL;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* n bytes of a pattern seeded by seed, written to tmpdir/name; its hash. */
static unsigned char *make_file(const char *name, size_t n, unsigned seed, char *hash,
                                char *path)
{
    unsigned char *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
    snprintf(path, 512, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    XXH128_hash_t h = XXH3_128bits(p, n);
    snprintf(hash, BL_FILES_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
    return p;
}

/* sql: a string literal (the statement cache's key) */
static int64_t count(const char *sql)
{
    bl_st *st = bl_st_get(db, sql);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
    int64_t v = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return v;
}

/* get of hash into tmpdir/out: its result; the bytes back in *got. */
static bl_err get_to(const char *hash, uint64_t max, char **got, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/out", tmpdir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    bl_err e = bl_files_get(db, hash, fd, max);
    ck_assert_int_eq(close(fd), 0);
    *got = tu_read_file(path, n);
    ck_assert_ptr_nonnull(*got);
    return e;
}

START_TEST(chunk_boundaries)
{
    const size_t C = BL_FILES_CHUNK;
    const size_t sizes[] = { 0, 1, C - 1, C, C + 1, 2 * C };
    const int64_t chunks[] = { 1, 1, 1, 1, 2, 2 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char hash[40], path[512], name[32];
        snprintf(name, sizeof name, "f%zu", i);
        unsigned char *p = make_file(name, sizes[i], (unsigned)i, hash, path);
        ck_assert_int_eq(bl_files_exists(db, hash, NULL), BL_ENOTFOUND);
        ck_assert_msg(bl_files_put(db, hash, path, sizes[i]) == BL_OK, "size %zu: %s",
                      sizes[i], bl_db_errmsg(db));
        uint64_t sz = 7;
        ck_assert_int_eq(bl_files_exists(db, hash, &sz), BL_OK);
        ck_assert_uint_eq(sz, sizes[i]);
        bl_st *st = bl_st_get(db, "SELECT chunks FROM files WHERE hash = ?");
        ck_assert_ptr_nonnull(st);
        bl_st_text(st, 1, hash, -1);
        ck_assert_int_eq(bl_st_step(st), BL_ST_ROW);
        ck_assert_msg(bl_st_col_int64(st, 0) == chunks[i], "size %zu: %lld chunks", sizes[i],
                      (long long)bl_st_col_int64(st, 0));
        bl_st_reset(st);
        char *got;
        size_t n;
        ck_assert_int_eq(get_to(hash, UINT64_MAX, &got, &n), BL_OK);
        ck_assert_uint_eq(n, sizes[i]);
        ck_assert(memcmp(got, p, n) == 0);
        free(got);
        free(p);
    }
}
END_TEST

START_TEST(put_refuses_wrong_hash_or_size_and_is_idempotent)
{
    char hash[40], path[512];
    unsigned char *p = make_file("a", BL_FILES_CHUNK + 10, 3, hash, path);
    free(p);
    char wrong[40];
    snprintf(wrong, sizeof wrong, "%s", hash);
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    ck_assert_int_eq(bl_files_put(db, wrong, path, BL_FILES_CHUNK + 10), BL_EFORMAT);
    ck_assert_int_eq(bl_files_put(db, hash, path, BL_FILES_CHUNK + 9), BL_EFORMAT);
    ck_assert_int_eq(bl_files_put(db, hash, path, BL_FILES_CHUNK + 11), BL_EFORMAT);
    ck_assert_int_eq(count("SELECT count(*) FROM files"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM file_chunks"), 0); /* rolled back */
    ck_assert_int_eq(bl_files_put(db, "not a hash", path, 1), BL_EINVAL);
    ck_assert_int_eq(bl_files_put(db, "0123456789ABCDEF0123456789abcdef", path, 1), BL_EINVAL);
    ck_assert_int_eq(bl_files_put(db, hash, path, BL_FILES_CHUNK + 10), BL_OK);
    ck_assert_int_eq(bl_files_put(db, hash, path, BL_FILES_CHUNK + 10), BL_OK);
    ck_assert_int_eq(count("SELECT count(*) FROM files"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM file_chunks"), 2);
}
END_TEST

START_TEST(get_cap_and_damage)
{
    char hash[40], path[512];
    unsigned char *p = make_file("a", BL_FILES_CHUNK + 100, 5, hash, path);
    free(p);
    ck_assert_int_eq(bl_files_put(db, hash, path, BL_FILES_CHUNK + 100), BL_OK);
    char *got;
    size_t n;
    ck_assert_int_eq(get_to(hash, BL_FILES_CHUNK + 99, &got, &n), BL_ETOOBIG);
    ck_assert_uint_eq(n, 0); /* nothing written */
    free(got);
    ck_assert_int_eq(get_to(hash, BL_FILES_CHUNK + 100, &got, &n), BL_OK);
    free(got);
    ck_assert_int_eq(get_to("00000000000000000000000000000000", UINT64_MAX, &got, &n),
                     BL_ENOTFOUND);
    free(got);
    /* one byte changed in the last chunk */
    exec_ok("UPDATE file_chunks SET data = set_byte(data, 3, get_byte(data, 3) # 1) "
            "WHERE seq = 1");
    ck_assert_int_eq(get_to(hash, UINT64_MAX, &got, &n), BL_EFORMAT);
    free(got);
    exec_ok("DELETE FROM file_chunks WHERE seq = 1");
    ck_assert_int_eq(get_to(hash, UINT64_MAX, &got, &n), BL_EFORMAT);
    free(got);
}
END_TEST

START_TEST(build_records)
{
    char h1[40], h2[40], path[512], prev[40];
    free(make_file("1", 100, 1, h1, path));
    ck_assert_int_eq(bl_files_put(db, h1, path, 100), BL_OK);
    free(make_file("2", 200, 2, h2, path));
    ck_assert_int_eq(bl_files_put(db, h2, path, 200), BL_OK);
    char got[40];
    uint64_t sz;
    ck_assert_int_eq(bl_files_build_get(db, 1, "b", BL_FILE_MAPPING, got, &sz), BL_ENOTFOUND);
    ck_assert_int_eq(bl_files_build_set(db, 1, "b", BL_FILE_MAPPING, h1, 100, 5, 0, prev),
                     BL_OK);
    ck_assert_str_eq(prev, "");
    ck_assert_int_eq(bl_files_build_get(db, 1, "b", BL_FILE_MAPPING, got, &sz), BL_OK);
    ck_assert_str_eq(got, h1);
    ck_assert_uint_eq(sz, 100);
    /* the other kind, another build, another app: separate records */
    ck_assert_int_eq(bl_files_build_get(db, 1, "b", BL_FILE_METHODIDS, got, NULL), BL_ENOTFOUND);
    ck_assert_int_eq(bl_files_build_get(db, 1, "B", BL_FILE_MAPPING, got, NULL), BL_ENOTFOUND);
    ck_assert_int_eq(bl_files_build_get(db, 2, "b", BL_FILE_MAPPING, got, NULL), BL_ENOTFOUND);
    /* the same again; a different one without and with replace */
    ck_assert_int_eq(bl_files_build_set(db, 1, "b", BL_FILE_MAPPING, h1, 100, 6, 0, prev),
                     BL_OK);
    ck_assert_str_eq(prev, h1);
    ck_assert_int_eq(bl_files_build_set(db, 1, "b", BL_FILE_MAPPING, h2, 200, 7, 0, prev),
                     BL_EINVAL);
    ck_assert_str_eq(prev, h1);
    ck_assert_int_eq(bl_files_build_get(db, 1, "b", BL_FILE_MAPPING, got, NULL), BL_OK);
    ck_assert_str_eq(got, h1);
    ck_assert_int_eq(bl_files_build_set(db, 1, "b", BL_FILE_MAPPING, h2, 200, 8, 1, prev),
                     BL_OK);
    ck_assert_str_eq(prev, h1);
    ck_assert_int_eq(bl_files_build_get(db, 1, "b", BL_FILE_MAPPING, got, &sz), BL_OK);
    ck_assert_str_eq(got, h2);
    ck_assert_uint_eq(sz, 200);
    /* a content that is not stored: refused by the foreign key */
    ck_assert_int_eq(bl_files_build_set(db, 1, "c", BL_FILE_MAPPING,
                                        "00000000000000000000000000000000", 1, 9, 1, prev),
                     BL_EIO);
    ck_assert_int_eq(bl_files_build_set(db, 1, "b", BL_FILE_METHODIDS, h1, 100, 5, 0, NULL),
                     BL_OK);
    ck_assert_int_eq(bl_files_build_forget(db, 1, "b"), BL_OK);
    ck_assert_int_eq(bl_files_build_get(db, 1, "b", BL_FILE_MAPPING, got, NULL), BL_ENOTFOUND);
    ck_assert_int_eq(bl_files_build_get(db, 1, "b", BL_FILE_METHODIDS, got, NULL), BL_ENOTFOUND);
    ck_assert_int_eq(bl_files_exists(db, h1, NULL), BL_OK); /* contents stay */
}
END_TEST

/* the text of dir/name ("" when absent) */
static char *text_of(const char *dir, const char *name)
{
    char p[BL_PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    size_t n;
    char *t = tu_read_file(p, &n);
    return t ? t : strdup("");
}

START_TEST(cache_sync)
{
    char data[BL_PATH_MAX], dir[BL_PATH_MAX], h1[40], h2[40], path[512];
    snprintf(data, sizeof data, "%s/data", tmpdir);
    ck_assert_int_eq(bl_datadir_init(data), BL_OK);
    unsigned char *m = make_file("m", 5000, 11, h1, path);
    ck_assert_int_eq(bl_files_put(db, h1, path, 5000), BL_OK);
    unsigned char *i = make_file("i", 300, 12, h2, path);
    ck_assert_int_eq(bl_files_put(db, h2, path, 300), BL_OK);
    unsigned fetched;
    /* nothing in the store: nothing made */
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_OK);
    ck_assert_uint_eq(fetched, 0);
    struct stat st;
    ck_assert_int_ne(stat(dir, &st), 0);
    ck_assert_int_eq(bl_files_build_set(db, 3, "7.1", BL_FILE_MAPPING, h1, 5000, 1, 0, NULL),
                     BL_OK);
    ck_assert_int_eq(bl_files_build_set(db, 3, "7.1", BL_FILE_METHODIDS, h2, 300, 1, 0, NULL),
                     BL_OK);
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_OK);
    ck_assert_uint_eq(fetched, 2);
    char *t = text_of(dir, "mapping.txt");
    ck_assert(memcmp(t, m, 5000) == 0);
    free(t);
    t = text_of(dir, "method-ids.txt");
    ck_assert(memcmp(t, i, 300) == 0);
    free(t);
    char want[48];
    snprintf(want, sizeof want, "%s\n", h1);
    t = text_of(dir, "mapping.hash");
    ck_assert_str_eq(t, want);
    free(t);
    /* in line: nothing fetched */
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_OK);
    ck_assert_uint_eq(fetched, 0);
    /* a damaged copy (one byte, the size kept): fetched again */
    uint64_t damaged = bl_buildcache_damaged();
    char mp[BL_PATH_MAX + 32];
    snprintf(mp, sizeof mp, "%s/mapping.txt", dir);
    int fd = open(mp, O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    unsigned char b = (unsigned char)(m[77] ^ 0x20);
    ck_assert_int_eq(pwrite(fd, &b, 1, 77), 1);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_OK);
    ck_assert_uint_eq(fetched, 1);
    ck_assert_uint_eq(bl_buildcache_damaged(), damaged + 1);
    t = text_of(dir, "mapping.txt");
    ck_assert(memcmp(t, m, 5000) == 0);
    free(t);
    /* a copy without its hash file, or under another hash: fetched again */
    snprintf(mp, sizeof mp, "%s/method-ids.hash", dir);
    ck_assert_int_eq(unlink(mp), 0);
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_OK);
    ck_assert_uint_eq(fetched, 1);
    /* the build forgotten by the store: its files go */
    ck_assert_int_eq(bl_files_build_forget(db, 3, "7.1"), BL_OK);
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_OK);
    ck_assert_uint_eq(fetched, 0);
    snprintf(mp, sizeof mp, "%s/mapping.txt", dir);
    ck_assert_int_ne(stat(mp, &st), 0);
    snprintf(mp, sizeof mp, "%s/method-ids.hash", dir);
    ck_assert_int_ne(stat(mp, &st), 0);
    /* a stored content over its cap: BL_ETOOBIG, nothing in the folder */
    bl_buildcache_limits(4999, UINT64_MAX);
    ck_assert_int_eq(bl_files_build_set(db, 3, "7.1", BL_FILE_MAPPING, h1, 5000, 1, 0, NULL),
                     BL_OK);
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_ETOOBIG);
    snprintf(mp, sizeof mp, "%s/mapping.txt", dir);
    ck_assert_int_ne(stat(mp, &st), 0);
    bl_buildcache_limits(UINT64_MAX, UINT64_MAX);
    ck_assert_int_eq(bl_buildcache_sync(db, data, 3, "7.1", 0, dir, &fetched), BL_OK);
    ck_assert_uint_eq(fetched, 1);
    free(m);
    free(i);
}
END_TEST

int main(void)
{
    if (!getenv("BEATLINE_TEST_PG_DB")) {
        fprintf(stderr, "store_files_pg_test: no BEATLINE_TEST_PG_DB (run it with "
                        "tests/unit/with_pg.sh): skipped\n");
        return 77;
    }
    Suite *s = suite_create("store_files_pg");
    TCase *t = tcase_create("files");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, chunk_boundaries);
    tcase_add_test(t, put_refuses_wrong_hash_or_size_and_is_idempotent);
    tcase_add_test(t, get_cap_and_damage);
    tcase_add_test(t, build_records);
    tcase_add_test(t, cache_sync);
    suite_add_tcase(s, t);
    return tu_run(s);
}
