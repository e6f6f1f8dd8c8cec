/*
 * buildcache.c — build folders as caches of the PostgreSQL store (see
 * buildcache.h).
 */
#include "pipeline/buildcache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/fdio.h"
#include "common/u128map.h"
#include "pipeline/datadir.h"
#include "store/files.h"

static _Atomic uint64_t max_of[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };
static _Atomic uint64_t n_fetches, n_damaged;

void bl_buildcache_limits(uint64_t max_mapping, uint64_t max_methodids)
{
    atomic_store(&max_of[BL_FILE_MAPPING], max_mapping);
    atomic_store(&max_of[BL_FILE_METHODIDS], max_methodids);
}

uint64_t bl_buildcache_fetches(void)
{
    return atomic_load(&n_fetches);
}

uint64_t bl_buildcache_damaged(void)
{
    return atomic_load(&n_damaged);
}

/* The files of a kind in a build folder. */
static const struct {
    bl_file_kind kind;
    const char *file, *hashf;
} KINDS[2] = {
    { BL_FILE_MAPPING, "mapping.txt", "mapping.hash" },
    { BL_FILE_METHODIDS, "method-ids.txt", "method-ids.hash" },
};

/* ------------------------------------------------------------------------ */
/* Which cached files were checked, and as what (process-wide)              */

typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
    char hash[BL_FILES_HASH_LEN + 1];
} seen;

static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static bl_u128map memo_ix; /* XXH3-128 of the path -> index + 1 into memo */
static seen *memo;
static size_t memo_n, memo_cap;

static int same_stat(const seen *s, const struct stat *st)
{
    return s->dev == st->st_dev && s->ino == st->st_ino && s->size == st->st_size &&
           s->mtim.tv_sec == st->st_mtim.tv_sec && s->mtim.tv_nsec == st->st_mtim.tv_nsec &&
           s->ctim.tv_sec == st->st_ctim.tv_sec && s->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

/* 1 when the memo says the file as stat'ed has content `hash`. */
static int memo_says(const char *path, const struct stat *st, const char *hash)
{
    XXH128_hash_t k = XXH3_128bits(path, strlen(path));
    int ok = 0;
    pthread_mutex_lock(&memo_mu);
    uint64_t *v = bl_u128map_get(&memo_ix, k.high64, k.low64);
    if (v && *v && *v <= memo_n) {
        const seen *s = &memo[*v - 1];
        ok = same_stat(s, st) && !strcmp(s->hash, hash);
    }
    pthread_mutex_unlock(&memo_mu);
    return ok;
}

/* Records that the file as stat'ed has content `hash` (out of memory: not
 * recorded, it is hashed again next time). */
static void memo_put(const char *path, const struct stat *st, const char *hash)
{
    XXH128_hash_t k = XXH3_128bits(path, strlen(path));
    seen s = { st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim, "" };
    snprintf(s.hash, sizeof s.hash, "%s", hash);
    pthread_mutex_lock(&memo_mu);
    uint64_t *v;
    int ins;
    if (bl_u128map_put(&memo_ix, k.high64, k.low64, 0, &v, &ins) == BL_OK) {
        if (*v && *v <= memo_n) {
            memo[*v - 1] = s;
        } else {
            if (memo_n == memo_cap) {
                size_t nc = memo_cap ? memo_cap * 2 : 64;
                seen *nm = realloc(memo, nc * sizeof *nm);
                if (nm) {
                    memo = nm;
                    memo_cap = nc;
                }
            }
            if (memo_n < memo_cap) {
                memo[memo_n++] = s;
                *v = memo_n;
            }
        }
    }
    pthread_mutex_unlock(&memo_mu);
}

void bl_buildcache_note(const char *path, const char *hash)
{
    struct stat st;
    if (bl_files_hash_valid(hash) && stat(path, &st) == 0)
        memo_put(path, &st, hash);
}

/* XXH3-128 of the file at path into hex. BL_EIO (errno), BL_ENOMEM. */
static bl_err hash_file(const char *path, char hex[BL_FILES_HASH_LEN + 1])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    XXH3_state_t *xs = XXH3_createState();
    if (!xs || XXH3_128bits_reset(xs) != XXH_OK) {
        XXH3_freeState(xs);
        close(fd);
        return BL_ENOMEM;
    }
    bl_err e = BL_OK;
    static _Thread_local char buf[1 << 16];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = BL_EIO;
            break;
        }
        if (n == 0)
            break;
        XXH3_128bits_update(xs, buf, (size_t)n);
    }
    int err = errno;
    close(fd);
    XXH128_hash_t h = XXH3_128bits_digest(xs);
    XXH3_freeState(xs);
    if (!e)
        snprintf(hex, BL_FILES_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
                 (unsigned long long)h.low64);
    errno = err;
    return e;
}

/* ------------------------------------------------------------------------ */
/* One kind of file in one folder                                            */

/* The .hash file's text without its newline ("" when absent or unreadable). */
static void read_hash(const char *dir, const char *name, char *out, size_t cap)
{
    char path[BL_PATH_MAX];
    out[0] = '\0';
    if (bl_path_join(path, dir, name))
        return;
    char *d;
    size_t n;
    if (bl_read_file(path, 256, &d, &n) != BL_OK)
        return;
    while (n && (d[n - 1] == '\n' || d[n - 1] == ' '))
        n--;
    snprintf(out, cap, "%.*s", (int)n, d);
    free(d);
}

/* Whether dir/name exists (or cannot be told: then as existing). */
static int present(const char *dir, const char *name)
{
    char p[BL_PATH_MAX];
    struct stat st;
    if (bl_path_join(p, dir, name))
        return 0;
    return lstat(p, &st) == 0 || errno != ENOENT;
}

enum { KEEP, FETCH, REMOVE };

/* What kind k of folder dir needs to agree with the store's hash `want`
 * ("" none): KEEP, FETCH or REMOVE. A cached file is hashed when the memo
 * does not know it as it is; a damaged one is logged and counted when
 * `report`. */
static int plan(const char *dir, int k, const char *want, int report)
{
    if (!want[0])
        return present(dir, KINDS[k].file) || present(dir, KINDS[k].hashf) ? REMOVE : KEEP;
    char have[80], path[BL_PATH_MAX];
    read_hash(dir, KINDS[k].hashf, have, sizeof have);
    struct stat st;
    if (strcmp(have, want) != 0 || bl_path_join(path, dir, KINDS[k].file) ||
        stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return FETCH;
    if (memo_says(path, &st, want))
        return KEEP;
    char got[BL_FILES_HASH_LEN + 1];
    if (hash_file(path, got) != BL_OK)
        return FETCH;
    struct stat st2;
    if (strcmp(got, want) != 0 || stat(path, &st2) != 0 || st2.st_ino != st.st_ino) {
        if (report && strcmp(got, want) != 0) {
            atomic_fetch_add(&n_damaged, 1);
            fprintf(stderr,
                    "beatline-server: %s: cached copy damaged (XXH3-128 %s, not %s); "
                    "fetched again from the store\n",
                    path, got, want);
        }
        return FETCH;
    }
    memo_put(path, &st, want);
    return KEEP;
}

/* Removes dir/name (absent is fine). */
static bl_err drop(const char *dir, const char *name)
{
    char p[BL_PATH_MAX];
    bl_err e = bl_path_join(p, dir, name);
    if (e)
        return e;
    return unlink(p) == 0 || errno == ENOENT ? BL_OK : BL_EIO;
}

/* Writes "hash\n" durably to dir/name (tmp + rename). */
static bl_err write_hash(const char *data_dir, const char *dir, const char *name,
                         const char *hash)
{
    char tmp[BL_PATH_MAX], dst[BL_PATH_MAX], line[BL_FILES_HASH_LEN + 2];
    int fd;
    bl_err e = bl_path_join(dst, dir, name);
    if (e)
        return e;
    snprintf(line, sizeof line, "%s\n", hash);
    if ((e = bl_tmpfile(data_dir, &fd, tmp)))
        return e;
    if ((e = bl_fd_write_all(fd, line, strlen(line)))) {
        bl_file_abort(fd, tmp);
        return e;
    }
    return bl_file_replace(fd, tmp, dst);
}

/* Brings kind k of folder dir to the store's hash `want` (the caller holds
 * the folder's lock). The old .hash goes first, the new one comes last:
 * a crash between leaves a file without a hash (fetched again next time),
 * never one under another's hash. */
static bl_err apply(bl_db *db, const char *data_dir, const char *dir, int k, const char *want,
                    int action, unsigned *fetched)
{
    bl_err e;
    if (action == REMOVE) {
        if ((e = drop(dir, KINDS[k].hashf)) || (e = drop(dir, KINDS[k].file)) ||
            (KINDS[k].kind == BL_FILE_MAPPING && (e = drop(dir, "mapping.idx"))))
            return e;
        return bl_fsync_dir(dir);
    }
    char tmp[BL_PATH_MAX], dst[BL_PATH_MAX];
    int fd;
    if ((e = bl_path_join(dst, dir, KINDS[k].file)) || (e = bl_tmpfile(data_dir, &fd, tmp)))
        return e;
    e = bl_files_get(db, want, fd, atomic_load(&max_of[KINDS[k].kind]));
    if (e) {
        int err = errno;
        bl_file_abort(fd, tmp);
        errno = err;
        return e;
    }
    if ((e = drop(dir, KINDS[k].hashf)) ||
        (KINDS[k].kind == BL_FILE_MAPPING && (e = drop(dir, "mapping.idx")))) {
        bl_file_abort(fd, tmp);
        return e;
    }
    if ((e = bl_file_replace(fd, tmp, dst)))
        return e;
    if ((e = write_hash(data_dir, dir, KINDS[k].hashf, want)))
        return e;
    bl_buildcache_note(dst, want);
    atomic_fetch_add(&n_fetches, 1);
    if (fetched)
        (*fetched)++;
    fprintf(stderr, "beatline-server: %s: %s %s fetched from the store\n", dir, KINDS[k].file,
            want);
    return BL_OK;
}

bl_err bl_buildcache_sync(bl_db *db, const char *data_dir, int64_t app_id, const char *build,
                          int locked, char *build_dir, unsigned *fetched)
{
    if (fetched)
        *fetched = 0;
    if (!bl_files_in_store(db))
        return BL_EINVAL;
    bl_err e = bl_datadir_build(data_dir, app_id, build, build_dir);
    if (e)
        return e;
    char want[2][BL_FILES_HASH_LEN + 1];
    int any = 0;
    for (int k = 0; k < 2; k++) {
        e = bl_files_build_get(db, app_id, build, KINDS[k].kind, want[k], NULL);
        if (e == BL_ENOTFOUND) /* none: a cached copy goes (a deleted build) */
            want[k][0] = '\0';
        else if (e)
            return e;
        e = BL_OK;
        any |= want[k][0] != 0;
    }
    int act[2], todo = 0;
    for (int k = 0; k < 2; k++)
        todo |= (act[k] = plan(build_dir, k, want[k], 1)) != KEEP;
    if (!todo)
        return BL_OK;
    if (any && (e = bl_datadir_build_create(data_dir, app_id, build, build_dir)))
        return e;
    int lfd = -1;
    if (!locked) {
        char lockp[BL_PATH_MAX];
        if ((e = bl_path_join(lockp, build_dir, ".lock")))
            return e;
        lfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
        if (lfd < 0)
            return BL_EIO;
        if (flock(lfd, LOCK_EX) != 0) {
            int err = errno;
            close(lfd);
            errno = err;
            return BL_EIO;
        }
        /* another thread may have done it while this one waited */
        for (int k = 0; k < 2; k++)
            act[k] = plan(build_dir, k, want[k], 0);
    }
    for (int k = 0; k < 2 && !e; k++)
        if (act[k] != KEEP)
            e = apply(db, data_dir, build_dir, k, want[k], act[k], fetched);
    if (lfd >= 0) {
        int err = errno;
        flock(lfd, LOCK_UN);
        close(lfd);
        errno = err;
    }
    return e;
}
