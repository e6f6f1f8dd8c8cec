/*
 * datadir.c — data directory layout and durable file operations.
 */
#include "pipeline/datadir.h"

#include "common/fdio.h"
#include "common/utf8.h"
#include "symbol/mapindex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>
#include <stdatomic.h>
#include <sys/file.h>

static bl_err dir_of(const char *path, char *out);

static bl_err fits(int n)
{
    return n < 0 || n >= BL_PATH_MAX ? BL_ETOOBIG : BL_OK;
}

/* snprintf into a BL_PATH_MAX buffer; BL_ETOOBIG when it does not fit. */
#define fmt(out, ...) fits(snprintf((out), BL_PATH_MAX, __VA_ARGS__))

bl_err bl_mkdir_p(const char *path)
{
    char tmp[BL_PATH_MAX];
    size_t n = strlen(path);
    if (n == 0) {
        errno = EINVAL;
        return BL_EINVAL;
    }
    if (n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return BL_ETOOBIG;
    }
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            char c = tmp[i];
            tmp[i] = '\0';
            if (mkdir(tmp, 0750) != 0 && errno != EEXIST)
                return BL_EIO;
            tmp[i] = c;
        }
    }
    return BL_OK;
}

bl_err bl_datadir_init(const char *dir)
{
    if (sodium_init() < 0) /* SHA-256 of build names */
        return BL_EIO;
    static const char *const sub[] = { "", "/batches/pending", "/batches/done", "/builds",
                                       "/tmp" };
    for (size_t i = 0; i < sizeof sub / sizeof *sub; i++) {
        char p[BL_PATH_MAX];
        bl_err e = fmt(p, "%s%s%s", dir, sub[i], "");
        if (e || (e = bl_mkdir_p(p)))
            return e;
    }
    return BL_OK;
}

/* the process's store URL (borrowed; bl_datadir_set_store), NULL: DIR/beatline.db */
static const char *store_url;

void bl_datadir_set_store(const char *url)
{
    store_url = url && *url ? url : NULL;
}

bl_err bl_datadir_db(const char *dir, char *out)
{
    if (store_url)
        return fmt(out, "%s%s%s", store_url, "", "");
    return fmt(out, "%s/beatline.db%s%s", dir, "", "");
}

const char *bl_enc_ext(bl_encoding enc)
{
    switch (enc) {
    case BL_ENC_IDENTITY: return "bin";
    case BL_ENC_GZIP: return "gz";
    case BL_ENC_ZSTD: return "zst";
    }
    return "bin";
}

int bl_enc_from_ext(const char *ext, bl_encoding *enc)
{
    if (!strcmp(ext, "bin"))
        *enc = BL_ENC_IDENTITY;
    else if (!strcmp(ext, "gz"))
        *enc = BL_ENC_GZIP;
    else if (!strcmp(ext, "zst"))
        *enc = BL_ENC_ZSTD;
    else
        return -1;
    return 0;
}

bl_err bl_datadir_batch(const char *dir, int done, const char *uuid, bl_encoding enc, char *out)
{
    char name[64];
    snprintf(name, sizeof name, "%.36s.%s", uuid, bl_enc_ext(enc));
    return fmt(out, "%s/batches/%s/%s", dir, done ? "done" : "pending", name);
}

int bl_build_name_valid(const char *build, size_t n)
{
    if (n == 0 || n > BL_BUILD_NAME_MAX || bl_utf8_check((const uint8_t *)build, n) != n)
        return 0;
    if ((n == 1 && build[0] == '.') || (n == 2 && build[0] == '.' && build[1] == '.'))
        return 0; /* a URL dot segment: clients rewrite it (RFC 3986 5.2.4) */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)build[i] < 0x20 || build[i] == 0x7f || build[i] == '/' ||
            build[i] == '\\')
            return 0;
    return 1;
}

/* The folder name of a build: SHA-256 of the name, lowercase hex. */
static void build_hash(const char *build, size_t n, char hex[65])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)build, n);
    sodium_bin2hex(hex, 65, h, sizeof h);
}

bl_err bl_datadir_build(const char *dir, int64_t app_id, const char *build, char *out)
{
    size_t n = strlen(build);
    if (!bl_build_name_valid(build, n))
        return BL_EINVAL;
    char hex[65];
    build_hash(build, n, hex);
    return fmt(out, "%s/builds/%lld/%s", dir, (long long)app_id, hex);
}

/* Writes data to dir/name durably via a temporary file in the same folder. */
static bl_err write_in(const char *dir, const char *name, const char *data, size_t n)
{
    char tmp[BL_PATH_MAX], dst[BL_PATH_MAX];
    bl_err e = fmt(tmp, "%s/.%s.tmp%s", dir, name, "");
    if (e || (e = bl_path_join(dst, dir, name)))
        return e;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return BL_EIO;
    if ((e = bl_fd_write_all(fd, data, n))) {
        bl_file_abort(fd, tmp);
        return e;
    }
    return bl_file_replace(fd, tmp, dst);
}

bl_err bl_datadir_build_create(const char *dir, int64_t app_id, const char *build, char *out)
{
    bl_err e = bl_datadir_build(dir, app_id, build, out);
    if (e)
        return e;
    struct stat sb;
    if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode))
        return BL_OK;
    char parent[BL_PATH_MAX], tmpd[BL_PATH_MAX];
    if ((e = dir_of(out, parent)) || (e = bl_mkdir_p(parent)) ||
        (e = fmt(tmpd, "%s/tmp/build-XXXXXX%s", dir, "")))
        return e;
    if (!mkdtemp(tmpd))
        return BL_EIO;
    char namef[BL_PATH_MAX];
    e = write_in(tmpd, "build-name", build, strlen(build));
    if (!e && rename(tmpd, out) != 0) {
        /* another request created it meanwhile: theirs is as good */
        e = (errno == EEXIST || errno == ENOTEMPTY) && stat(out, &sb) == 0 ? BL_OK : BL_EIO;
        int saved = errno;
        if (!bl_path_join(namef, tmpd, "build-name"))
            unlink(namef);
        rmdir(tmpd);
        errno = saved;
        return e;
    }
    if (e) {
        if (!bl_path_join(namef, tmpd, "build-name"))
            unlink(namef);
        rmdir(tmpd);
        return e;
    }
    return bl_fsync_dir(parent);
}

/* Reads a build-name file: BL_OK with a valid name (NUL-terminated). */
static bl_err read_name(const char *build_dir, char *name)
{
    char path[BL_PATH_MAX];
    bl_err e = bl_path_join(path, build_dir, "build-name");
    if (e)
        return e;
    char *d;
    size_t n;
    if ((e = bl_read_file(path, BL_BUILD_NAME_MAX + 1, &d, &n)))
        return e == BL_ETOOBIG ? BL_EFORMAT : e;
    int ok = n <= BL_BUILD_NAME_MAX && memchr(d, 0, n) == NULL && bl_build_name_valid(d, n);
    if (ok)
        memcpy(name, d, n + 1);
    free(d);
    return ok ? BL_OK : BL_EFORMAT;
}

bl_err bl_datadir_build_name(const char *build_dir, char *name)
{
    bl_err e = read_name(build_dir, name);
    if (e)
        return e;
    const char *base = strrchr(build_dir, '/');
    base = base ? base + 1 : build_dir;
    char hex[65];
    build_hash(name, strlen(name), hex);
    return strcmp(base, hex) ? BL_EFORMAT : BL_OK;
}

/* The build name an old-layout folder name stands for (hex of the name). */
static int old_name(const char *f, char *name)
{
    size_t hl = strlen(f);
    if (hl == 0 || hl % 2 || hl > 2 * BL_BUILD_NAME_MAX)
        return 0;
    for (size_t i = 0; i < hl / 2; i++) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            char c = f[2 * i + (size_t)k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return 0;
            v = v * 16 + d;
        }
        name[i] = (char)v;
    }
    name[hl / 2] = '\0';
    return memchr(name, 0, hl / 2) == NULL && bl_build_name_valid(name, hl / 2);
}

/* Migrates one folder builds/APP/F (see bl_datadir_migrate). */
static bl_err migrate_one(const char *app_dir, const char *f, unsigned *migrated)
{
    char from[BL_PATH_MAX], to[BL_PATH_MAX], name[BL_BUILD_NAME_MAX + 1], hex[65];
    bl_err e = bl_path_join(from, app_dir, f);
    if (e)
        return BL_OK; /* cannot be a folder of ours */
    struct stat sb;
    if (stat(from, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return BL_OK;
    e = read_name(from, name);
    if (e == BL_ENOTFOUND) {
        if (!old_name(f, name)) {
            fprintf(stderr, "beatline-server: %s: not a build folder (no build-name, not a "
                            "hex name); left alone\n", from);
            return BL_OK;
        }
        /* step 1: the name goes inside, durably */
        if ((e = write_in(from, "build-name", name, strlen(name))))
            return e;
    } else if (e) {
        fprintf(stderr, "beatline-server: %s: unreadable build-name; left alone\n", from);
        return e == BL_EIO ? e : BL_OK;
    }
    build_hash(name, strlen(name), hex);
    if (!strcmp(f, hex))
        return BL_OK; /* new layout already */
    if ((e = bl_path_join(to, app_dir, hex)))
        return e;
    if (lstat(to, &sb) == 0) {
        fprintf(stderr, "beatline-server: %s: its new name %s exists already; left alone\n",
                from, hex);
        return BL_OK;
    }
    /* step 2: rename, then make the rename durable */
    if (rename(from, to) != 0)
        return BL_EIO;
    if (migrated)
        (*migrated)++;
    return bl_fsync_dir(app_dir);
}

bl_err bl_datadir_migrate(const char *dir, unsigned *migrated)
{
    if (migrated)
        *migrated = 0;
    char bd[BL_PATH_MAX];
    bl_err err = fmt(bd, "%s/builds%s%s", dir, "", "");
    if (err)
        return err;
    DIR *apps = opendir(bd);
    if (!apps)
        return errno == ENOENT ? BL_OK : BL_EIO;
    struct dirent *ae;
    while (!err && (ae = readdir(apps))) {
        if (ae->d_name[0] == '.')
            continue;
        char ad[BL_PATH_MAX];
        if (bl_path_join(ad, bd, ae->d_name))
            continue;
        DIR *b = opendir(ad);
        if (!b)
            continue;
        /* names first, renames after: renaming while reading a folder may
         * make readdir return an entry twice or not at all */
        char (*names)[256] = NULL;
        size_t n = 0, cap = 0;
        struct dirent *be;
        while ((be = readdir(b))) {
            if (be->d_name[0] == '.')
                continue;
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                char (*nn)[256] = realloc(names, nc * sizeof *nn);
                if (!nn) {
                    err = BL_ENOMEM;
                    break;
                }
                names = nn;
                cap = nc;
            }
            snprintf(names[n++], 256, "%s", be->d_name);
        }
        closedir(b);
        for (size_t i = 0; i < n && !err; i++)
            err = migrate_one(ad, names[i], migrated);
        free(names);
    }
    closedir(apps);
    return err;
}

void bl_datadir_clean_tmp(const char *dir)
{
    char td[BL_PATH_MAX];
    if (fmt(td, "%s/tmp%s%s", dir, "", ""))
        return;
    DIR *d = opendir(td);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char f[BL_PATH_MAX], inner[BL_PATH_MAX];
        if (e->d_name[0] == '.' || bl_path_join(f, td, e->d_name))
            continue;
        if (unlink(f) != 0 && (errno == EISDIR || errno == EPERM)) {
            /* a build folder whose creation was cut short */
            DIR *sub = opendir(f);
            struct dirent *se;
            while (sub && (se = readdir(sub)))
                if (strcmp(se->d_name, ".") && strcmp(se->d_name, "..") &&
                    !bl_path_join(inner, f, se->d_name))
                    unlink(inner);
            if (sub)
                closedir(sub);
            rmdir(f);
        }
    }
    if (d)
        closedir(d);
}

bl_err bl_path_join(char *out, const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    if (a + 1 + b >= BL_PATH_MAX)
        return BL_ETOOBIG;
    memcpy(out, dir, a);
    out[a] = '/';
    memcpy(out + a + 1, name, b + 1);
    return BL_OK;
}

bl_err bl_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    int rc = fsync(fd);
    close(fd);
    return rc == 0 ? BL_OK : BL_EIO;
}

bl_err bl_tmpfile(const char *dir, int *fd, char *path)
{
    bl_err e = fmt(path, "%s/tmp/upload-XXXXXX%s%s", dir, "", "");
    if (e)
        return e;
    *fd = mkstemp(path);
    return *fd < 0 ? BL_EIO : BL_OK;
}

static bl_err dir_of(const char *path, char *out)
{
    size_t n = strlen(path);
    if (n >= BL_PATH_MAX)
        return BL_ETOOBIG;
    memcpy(out, path, n + 1);
    char *slash = strrchr(out, '/');
    if (!slash)
        memcpy(out, ".", 2);
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
    return BL_OK;
}

bl_err bl_file_commit(int fd, const char *tmp, const char *dst, int *exists)
{
    *exists = 0;
    char d[BL_PATH_MAX];
    bl_err e = BL_OK;
    if (fsync(fd) != 0)
        e = BL_EIO;
    if (close(fd) != 0 && !e)
        e = BL_EIO;
    if (!e && link(tmp, dst) != 0) {
        if (errno == EEXIST) {
            *exists = 1;
            e = BL_EINVAL;
        } else {
            e = BL_EIO;
        }
    }
    unlink(tmp);
    if (!e && !(e = dir_of(dst, d)))
        e = bl_fsync_dir(d);
    return e;
}

bl_err bl_file_replace(int fd, const char *tmp, const char *dst)
{
    char d[BL_PATH_MAX];
    bl_err e = BL_OK;
    if (fsync(fd) != 0)
        e = BL_EIO;
    if (close(fd) != 0 && !e)
        e = BL_EIO;
    if (!e && rename(tmp, dst) != 0)
        e = BL_EIO;
    if (e)
        unlink(tmp);
    if (!e && !(e = dir_of(dst, d)))
        e = bl_fsync_dir(d);
    return e;
}

void bl_file_abort(int fd, const char *tmp)
{
    if (fd >= 0)
        close(fd);
    unlink(tmp);
}

bl_err bl_read_file(const char *path, size_t max, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? BL_ENOTFOUND : BL_EIO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return BL_EIO;
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return BL_ETOOBIG;
    }
    size_t n = (size_t)st.st_size;
    char *p = malloc(n + 1);
    if (!p) {
        close(fd);
        return BL_ENOMEM;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(p);
        return BL_EIO;
    }
    p[n] = '\0';
    *data = p;
    *len = n;
    return BL_OK;
}

static _Atomic uint64_t index_rebuilds;

uint64_t bl_datadir_index_rebuilds(void)
{
    return atomic_load(&index_rebuilds);
}

/* Why the index at idx cannot be used as it is (how opening it failed, or
 * STALE when it opens but was not built from the mapping.txt beside it), or
 * BL_OK with *mi open. */
#define STALE (-1)

/* a's time is not after b's */
static int ts_le(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

static int try_open(const char *idx, const char *txt, struct bl_mapindex **mi)
{
    bl_err e = bl_mapindex_open(idx, mi);
    if (e)
        return e;
    /* mapping.txt is replaced before its index (h_upload.c): a crash in
     * between, or a mapping.txt put there by hand, leaves the old index
     * beside a newer text. The index records the size it was built from,
     * and its file is written after its text; a text of another size or
     * newer than the index makes the index stale. */
    struct stat ts, is;
    if (stat(txt, &ts) != 0 || stat(idx, &is) != 0)
        return BL_OK; /* no text (kept index) or gone meanwhile: as opened */
    if ((uint64_t)ts.st_size == bl_mapindex_header(*mi)->mapping_size &&
        ts_le(&ts.st_mtim, &is.st_mtim))
        return BL_OK;
    bl_mapindex_close(*mi);
    *mi = NULL;
    return STALE;
}

/* Whether a failure of try_open calls for a rebuild: the index is missing,
 * damaged, of another format or stale. Other errors (EMFILE, EACCES,
 * ENOMEM, ...) say nothing about the index and are returned. `err` is the
 * errno of the failure. */
static int rebuildable(int why, int err)
{
    return why == STALE || why == BL_EFORMAT || why == BL_EVERSION ||
           (why == BL_EIO && err == ENOENT);
}

/* The index of build_dir as it is (idx and txt get the two paths; *mi and
 * *rebuilt, when not NULL, start cleared): 0 with *mi open; 1 when it must
 * be rebuilt (*why: try_open's reason); -1 with *e the error to return
 * (errno kept). */
static int open_as_is(const char *build_dir, char *idx, char *txt, struct bl_mapindex **mi,
                      int *rebuilt, int *why, bl_err *e)
{
    *mi = NULL;
    if (rebuilt)
        *rebuilt = 0;
    *e = BL_OK;
    *why = BL_OK;
    if ((*e = bl_path_join(idx, build_dir, "mapping.idx")) ||
        (*e = bl_path_join(txt, build_dir, "mapping.txt")))
        return -1;
    *why = try_open(idx, txt, mi);
    if (*why == BL_OK)
        return 0;
    int err = errno;
    if (rebuildable(*why, err))
        return 1;
    *e = *why == BL_ENOMEM ? BL_ENOMEM : BL_EIO;
    errno = err;
    return -1;
}

bl_err bl_datadir_open_index_locked(const char *dir, const char *build_dir,
                                    struct bl_mapindex **mi, int *rebuilt)
{
    char idx[BL_PATH_MAX], txt[BL_PATH_MAX], tmp[BL_PATH_MAX];
    bl_err e;
    int why;
    if (open_as_is(build_dir, idx, txt, mi, rebuilt, &why, &e) <= 0)
        return e;
    struct stat ts;
    if (stat(txt, &ts) != 0)
        return errno == ENOENT ? BL_ENOTFOUND : BL_EIO;
    int fd;
    if ((e = bl_tmpfile(dir, &fd, tmp)))
        return e;
    close(fd);
    e = bl_mapindex_build_file(txt, tmp, NULL, NULL);
    if (!e) {
        /* not older than its text, even when the text's time is ahead of
         * the clock: else it would be found stale at every open */
        struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, ts.st_mtim };
        struct stat is;
        if (stat(tmp, &is) == 0 && !ts_le(&ts.st_mtim, &is.st_mtim) &&
            utimensat(AT_FDCWD, tmp, t, 0) != 0)
            e = BL_EIO;
    }
    if (!e && rename(tmp, idx) != 0)
        e = BL_EIO;
    if (e) {
        unlink(tmp);
        fprintf(stderr, "beatline-server: %s: cannot rebuild the mapping index: %s\n", build_dir,
                bl_err_str(e));
        return e;
    }
    if ((e = bl_fsync_dir(build_dir)))
        return e;
    atomic_fetch_add(&index_rebuilds, 1);
    fprintf(stderr, "beatline-server: %s: mapping index %s; rebuilt from mapping.txt\n",
            build_dir,
            why == STALE         ? "older than mapping.txt or of another mapping"
            : why == BL_EIO      ? "missing"
            : why == BL_EVERSION ? "of another format version"
                                 : "damaged (checksum or structure)");
    if (rebuilt)
        *rebuilt = 1;
    return bl_mapindex_open(idx, mi);
}

bl_err bl_datadir_open_index(const char *dir, const char *build_dir, struct bl_mapindex **mi,
                             int *rebuilt)
{
    char idx[BL_PATH_MAX], txt[BL_PATH_MAX], lockp[BL_PATH_MAX];
    bl_err e;
    int why;
    if (open_as_is(build_dir, idx, txt, mi, rebuilt, &why, &e) <= 0)
        return e;
    if ((e = bl_path_join(lockp, build_dir, ".lock")))
        return e;
    if (access(txt, F_OK) != 0)
        return errno == ENOENT ? BL_ENOTFOUND : BL_EIO;
    int lfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (lfd < 0)
        return BL_EIO;
    if (flock(lfd, LOCK_EX) != 0) {
        close(lfd);
        return BL_EIO;
    }
    /* another thread may have rebuilt it while this one waited: the locked
     * version opens it again first */
    e = bl_datadir_open_index_locked(dir, build_dir, mi, rebuilt);
    int err = errno;
    flock(lfd, LOCK_UN);
    close(lfd);
    errno = err;
    return e;
}
