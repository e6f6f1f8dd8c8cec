/*
 * datadir.c — data directory layout and durable file operations.
 */
#include "pipeline/datadir.h"

#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bl_err fits(int n)
{
    return n < 0 || n >= BL_PATH_MAX ? BL_ETOOBIG : BL_OK;
}

/* snprintf into a BL_PATH_MAX buffer; BL_ETOOBIG when it does not fit. */
#define fmt(out, ...) fits(snprintf((out), BL_PATH_MAX, __VA_ARGS__))

static bl_err mkdir_p(const char *path)
{
    char tmp[BL_PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return BL_EINVAL;
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
    static const char *const sub[] = { "", "/batches/pending", "/batches/done", "/builds",
                                       "/tmp" };
    for (size_t i = 0; i < sizeof sub / sizeof *sub; i++) {
        char p[BL_PATH_MAX];
        bl_err e = fmt(p, "%s%s%s", dir, sub[i], "");
        if (e || (e = mkdir_p(p)))
            return e;
    }
    return BL_OK;
}

bl_err bl_datadir_db(const char *dir, char *out)
{
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

bl_err bl_datadir_build(const char *dir, int64_t app_id, const char *build, char *out)
{
    size_t n = strlen(build);
    if (!bl_build_name_valid(build, n))
        return BL_EINVAL;
    char hex[2 * BL_BUILD_NAME_MAX + 1];
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[(unsigned char)build[i] >> 4];
        hex[2 * i + 1] = digits[(unsigned char)build[i] & 15];
    }
    hex[2 * n] = '\0';
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)app_id);
    return fmt(out, "%s/builds/%s/%s", dir, id, hex);
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
