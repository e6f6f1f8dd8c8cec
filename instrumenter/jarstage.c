/*
 * jarstage.c — writing the instrumented copy of each input beside its
 * target and renaming it into place (contract in jarstage.h; reading is
 * jario.c).
 *
 * Jar output: libzip opens the input for update — through `memzip`, a
 * libzip source reading the bytes in memory and taking the new archive in a
 * buffer, or, for large jars, a byte-for-byte copy of the input file.
 * Replaced class entries (finished bytes with their CRC, from
 * bl_jio_precompress) and deleted signature files are the only changes, so
 * zip_close copies every other entry raw (compressed bytes, local and
 * central headers, order) and writes only the replaced ones anew; we write
 * the buffer to our temporary, fsync it and rename it. Both ways give the
 * same bytes.
 *
 * Invariants: every name written below an output folder passed
 * bl_jio_name_safe or came from readdir (no "..", no '/'-prefix); a staged
 * output exists on disk iff st->tmp != NULL; every error path removes what
 * it created.
 */
/* Linux calls, each used only when CMake found it (instrumenter/CMakeLists.txt;
 * never with -DBEATLINE_POSIX_ONLY=ON), else a POSIX fallback:
 *   BL_HAVE_RENAMEAT2: renameat2(RENAME_EXCHANGE) swaps a new output folder
 *     in atomically; fallback: rename the old one aside, rename the new one in,
 *     remove the old one (a crash in between leaves the old output at
 *     TMP.old and no TARGET);
 *   BL_HAVE_SYNCFS: one syncfs for a whole output folder tree; fallback: an
 *     fsync per file and per folder. */
#if defined(BL_HAVE_RENAMEAT2) || defined(BL_HAVE_SYNCFS)
#define _GNU_SOURCE
#endif
#include "jarstage.h"
#include "jario_internal.h"

#include "common/buf.h"
#include "common/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#define COPY_CHUNK (1u << 20)

/* ---- staging ------------------------------------------------------------- */

/* Template ".NAME.blXXXXXX" in target's folder (heap). */
static char *tmp_template(const char *target)
{
    const char *b = bl_jio_base_name(target);
    size_t dn = (size_t)(b - target);
    size_t bn = strlen(b);
    char *t = malloc(dn + 1 + bn + 9 + 1);
    if (!t)
        return NULL;
    memcpy(t, target, dn);
    t[dn] = '.';
    memcpy(t + dn + 1, b, bn);
    memcpy(t + dn + 1 + bn, ".blXXXXXX", 10);
    return t;
}

static int fsync_path(const char *path, int dir)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return r;
}

/* fsyncs the folder holding path. */
static int fsync_parent(const char *path)
{
    const char *b = bl_jio_base_name(path);
    if (b == path)
        return fsync_path(".", 1);
    char *d = malloc((size_t)(b - path) + 1);
    if (!d)
        return -1;
    memcpy(d, path, (size_t)(b - path));
    d[b - path] = '\0';
    int r = fsync_path(d, 1);
    free(d);
    return r;
}

/* Removes a file tree without following symbolic links (bounded depth). */
static void remove_tree_at(int dfd, const char *name, int depth)
{
    if (unlinkat(dfd, name, 0) == 0 || depth > BL_JIO_MAX_DEPTH + 1)
        return;
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            remove_tree_at(fd, de->d_name, depth + 1);
    closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

static void remove_tree(const char *path)
{
    remove_tree_at(AT_FDCWD, path, 0);
}

/* Writes data to a new file `path` (mode), fsync'ed when `sync`. */
static bl_err write_new_file(const char *path, const void *data, size_t len, mode_t mode,
                             int sync)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return BL_EIO;
    bl_err e = bl_fd_write_all(fd, data, len);
    if (!e && sync && fsync(fd) != 0)
        e = BL_EIO;
    int saved = errno;
    if (close(fd) != 0 && !e)
        e = BL_EIO;
    else
        errno = saved;
    if (e)
        unlink(path);
    return e;
}

/* Copies file src to a new file dst (mode), fsync'ed when `sync`. */
static bl_err copy_file(const char *src, const char *dst, mode_t mode, int dst_exists, int sync)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return BL_EIO;
    int out = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | (dst_exists ? O_TRUNC : O_EXCL), mode);
    if (out < 0) {
        int saved = errno;
        close(in);
        errno = saved;
        return BL_EIO;
    }
    char *buf = malloc(COPY_CHUNK);
    bl_err e = buf ? BL_OK : BL_ENOMEM;
    while (!e) {
        ssize_t r = read(in, buf, COPY_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            e = BL_EIO;
        if (r <= 0)
            break;
        e = bl_fd_write_all(out, buf, (size_t)r);
    }
    if (!e && sync && fsync(out) != 0)
        e = BL_EIO;
    int saved = errno;
    free(buf);
    close(in);
    if (close(out) != 0 && !e)
        e = BL_EIO;
    else
        errno = saved;
    return e;
}

/* 0666 minus the process umask: the mode a plain open(O_CREAT) would give. */
static mode_t file_mode(void)
{
    mode_t um = umask(022);
    umask(um);
    return 0666 & ~um;
}

static const char *estr(bl_err e)
{
    return e == BL_EIO ? strerror(errno) : bl_err_str(e);
}
/* A libzip source that serves an entry's finished bytes and says so in its
 * stat (comp_method deflate with zout, or stored with out; size, crc), so
 * zip_close copies them as they are instead of compressing them or
 * computing the CRC again. */
typedef struct zsrc {
    const bl_jio_entry *en;
    size_t pos;
    zip_error_t error;
} zsrc;

/* ZIP_SOURCE_READ of both callbacks: up to `want` bytes of src[0, len)
 * from *pos into data; advances *pos; returns the count. */
static zip_int64_t read_span(const uint8_t *src, size_t len, size_t *pos, void *data,
                             zip_uint64_t want)
{
    size_t left = len - *pos;
    size_t n = want < left ? (size_t)want : left;
    if (n)
        memcpy(data, src + *pos, n);
    *pos += n;
    return (zip_int64_t)n;
}

/* ZIP_SOURCE_STAT of both callbacks: the caller's zip_stat_t in data,
 * initialised; NULL (error set) when len is too small for one. */
static zip_stat_t *stat_begin(void *data, zip_uint64_t len, zip_error_t *error)
{
    if (len < sizeof(zip_stat_t)) {
        zip_error_set(error, ZIP_ER_INVAL, 0);
        return NULL;
    }
    zip_stat_t *st = data;
    zip_stat_init(st);
    return st;
}

/* ZIP_SOURCE_SEEK and _SEEK_WRITE: *pos moved as data (a
 * zip_source_args_seek_t of len bytes) says, within [0, end]. 0; -1 with
 * error set. */
static zip_int64_t seek_span(size_t *pos, size_t end, void *data, zip_uint64_t len,
                             zip_error_t *error)
{
    zip_int64_t p = zip_source_seek_compute_offset(*pos, end, data, len, error);
    if (p < 0)
        return -1;
    *pos = (size_t)p;
    return 0;
}

static zip_int64_t zsrc_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
    zsrc *z = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN:
        z->pos = 0;
        return 0;
    case ZIP_SOURCE_READ:
        return z->en->zout ? read_span(z->en->zout, z->en->zout_len, &z->pos, data, len)
                           : read_span(z->en->out, z->en->out_len, &z->pos, data, len);
    case ZIP_SOURCE_CLOSE:
        return 0;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *st = stat_begin(data, len, &z->error);
        if (!st)
            return -1;
        st->valid = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_CRC |
                    ZIP_STAT_MTIME | ZIP_STAT_ENCRYPTION_METHOD;
        st->size = z->en->out_len;
        st->comp_size = z->en->zout ? z->en->zout_len : z->en->out_len;
        st->comp_method = z->en->zout ? ZIP_CM_DEFLATE : ZIP_CM_STORE;
        st->encryption_method = ZIP_EM_NONE;
        st->crc = z->en->crc;
        st->mtime = z->en->mtime;
        return (zip_int64_t)sizeof *st;
    }
    case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&z->error, data, len);
    case ZIP_SOURCE_FREE:
        zip_error_fini(&z->error);
        free(z);
        return 0;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                              -1);
    default:
        zip_error_set(&z->error, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
}

static zip_source_t *source_for(zip_t *za, const bl_jio_entry *en)
{
    if (!en->has_crc)
        return zip_source_buffer(za, en->out, en->out_len, 0);
    zsrc *z = calloc(1, sizeof *z);
    if (!z)
        return NULL;
    z->en = en;
    zip_error_init(&z->error);
    zip_source_t *src = zip_source_function(za, zsrc_cb, z);
    if (!src) {
        zip_error_fini(&z->error);
        free(z);
    }
    return src;
}

/* The archive as a libzip source in memory: reads serve the input jar's
 * bytes (borrowed), writes (zip_close) go to `out` (owned), which holds the
 * new archive once committed. No BEGIN_WRITE_CLONING: libzip then writes
 * the whole archive, exactly as it does to a file (its cloning path writes
 * different central-directory flags, and libzip 1.7.3's own buffer source
 * frees memory it does not own when cloning). */
typedef struct memzip {
    const uint8_t *in;
    size_t in_len, pos;
    bl_buf out;        /* the archive being written */
    size_t wpos;       /* write position in out */
    int committed;     /* out is the archive */
    zip_error_t error;
} memzip;

static zip_int64_t memzip_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
    memzip *m = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN:
        m->pos = 0;
        return 0;
    case ZIP_SOURCE_READ:
        return read_span(m->in, m->in_len, &m->pos, data, len);
    case ZIP_SOURCE_CLOSE:
        return 0;
    case ZIP_SOURCE_SEEK:
        return seek_span(&m->pos, m->in_len, data, len, &m->error);
    case ZIP_SOURCE_TELL:
        return (zip_int64_t)m->pos;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *st = stat_begin(data, len, &m->error);
        if (!st)
            return -1;
        st->valid = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD |
                    ZIP_STAT_ENCRYPTION_METHOD;
        st->size = st->comp_size = m->in_len;
        st->comp_method = ZIP_CM_STORE;
        st->encryption_method = ZIP_EM_NONE;
        return (zip_int64_t)sizeof *st;
    }
    case ZIP_SOURCE_BEGIN_WRITE:
        bl_buf_reset(&m->out);
        m->wpos = 0;
        m->committed = 0;
        return 0;
    case ZIP_SOURCE_WRITE: {
        /* overwrite from wpos, appending past the end */
        size_t n = (size_t)len;
        size_t over = m->wpos < m->out.len ? m->out.len - m->wpos : 0;
        if (over > n)
            over = n;
        if (over)
            memcpy(m->out.data + m->wpos, data, over);
        if (n > over) {
            if (m->wpos > m->out.len && bl_buf_zero(&m->out, m->wpos - m->out.len) != BL_OK) {
                zip_error_set(&m->error, ZIP_ER_MEMORY, 0);
                return -1;
            }
            if (bl_buf_append(&m->out, (const uint8_t *)data + over, n - over) != BL_OK) {
                zip_error_set(&m->error, ZIP_ER_MEMORY, 0);
                return -1;
            }
        }
        m->wpos += n;
        return (zip_int64_t)n;
    }
    case ZIP_SOURCE_SEEK_WRITE:
        return seek_span(&m->wpos, m->out.len, data, len, &m->error);
    case ZIP_SOURCE_TELL_WRITE:
        return (zip_int64_t)m->wpos;
    case ZIP_SOURCE_COMMIT_WRITE:
        m->committed = 1;
        return 0;
    case ZIP_SOURCE_ROLLBACK_WRITE:
        bl_buf_reset(&m->out);
        m->committed = 0;
        return 0;
    case ZIP_SOURCE_REMOVE:
        bl_buf_reset(&m->out);
        m->committed = 1; /* an empty archive; stage_jar writes one itself */
        return 0;
    case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&m->error, data, len);
    case ZIP_SOURCE_FREE:
        return 0; /* m belongs to stage_jar */
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(
            ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
            ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
            ZIP_SOURCE_SUPPORTS, ZIP_SOURCE_BEGIN_WRITE, ZIP_SOURCE_WRITE,
            ZIP_SOURCE_SEEK_WRITE, ZIP_SOURCE_TELL_WRITE, ZIP_SOURCE_COMMIT_WRITE,
            ZIP_SOURCE_ROLLBACK_WRITE, ZIP_SOURCE_REMOVE, -1);
    default:
        zip_error_set(&m->error, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
}

/* Frees the in-memory archive of stage_jar (msrc and m may be NULL). */
static void memzip_done(zip_source_t *msrc, memzip *m)
{
    if (msrc)
        zip_source_free(msrc);
    if (m) {
        bl_buf_cleanup(&m->out);
        zip_error_fini(&m->error);
    }
}

/* Replaces the contents of the existing file `path` with len bytes of data
 * (the caller fsyncs it). */
static bl_err write_file_at(const char *path, const uint8_t *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    bl_err e = bl_fd_write_all(fd, data, len);
    int saved = errno;
    if (close(fd) != 0 && !e)
        e = BL_EIO;
    else
        errno = saved;
    return e;
}

static bl_err stage_jar(const bl_jio_input *in, const char *tmp, bl_jio_notice_fn notice,
                        void *ctx, char *err, size_t errlen)
{
    /* in memory (in->file): libzip edits a buffer source over the bytes read
     * by bl_jio_open and writes the new archive into it, we write that out
     * once. Else: a copy of the input file, edited by libzip in place. */
    memzip mz = {.in = in->file, .in_len = in->file_len};
    memzip *m = NULL; /* &mz when in memory */
    zip_source_t *msrc = NULL;
    zip_t *za = NULL;
    bl_err e;
    if (in->file) {
        m = &mz;
        bl_buf_init(&mz.out, 0);
        zip_error_init(&mz.error);
        zip_error_t ze;
        zip_error_init(&ze);
        msrc = zip_source_function_create(memzip_cb, m, &ze);
        if (msrc) {
            zip_source_keep(msrc); /* still ours after zip_close */
            if (!(za = zip_open_from_source(msrc, 0, &ze)))
                zip_source_free(msrc); /* drop the reference zip_open did not take */
        }
        if (!za) {
            snprintf(err, errlen, "%s: cannot reopen %s in memory: %s", tmp, in->path,
                     zip_error_strerror(&ze));
            zip_error_fini(&ze);
            if (msrc)
                zip_source_free(msrc);
            bl_buf_cleanup(&mz.out);
            zip_error_fini(&mz.error);
            return BL_ENOMEM;
        }
        zip_error_fini(&ze);
    } else {
        e = copy_file(in->path, tmp, 0644, 1, 0);
        if (e) {
            snprintf(err, errlen, "%s: copying %s: %s", tmp, in->path, estr(e));
            return e;
        }
        int code = 0;
        za = zip_open(tmp, 0, &code);
        if (!za) {
            char zm[256];
            bl_jio_zip_msg(code, zm, sizeof zm);
            snprintf(err, errlen, "%s: cannot reopen the copy of %s: %s", tmp, in->path, zm);
            return BL_EIO;
        }
    }
    int changed = 0;
    for (size_t i = 0; i < in->n; i++) {
        const bl_jio_entry *en = &in->entries[i];
        if (!en->out)
            continue;
        changed = 1;
        zip_source_t *src = source_for(za, en);
        if (!src || zip_file_replace(za, en->index, src, 0) != 0) {
            if (src)
                zip_source_free(src);
            goto zfail_entry;
        }
        /* stored stays stored; anything else becomes deflate (done by
         * bl_jio_precompress at BL_JIO_DEFLATE_LEVEL; libzip deflates, at
         * that level, only entries nobody pre-compressed) */
        zip_int32_t comp = en->comp == ZIP_CM_STORE ? ZIP_CM_STORE : ZIP_CM_DEFLATE;
        zip_uint32_t lvl = comp == ZIP_CM_STORE ? 0 : BL_JIO_DEFLATE_LEVEL;
        if (zip_set_file_compression(za, en->index, comp, lvl) != 0 ||
            zip_file_set_mtime(za, en->index, en->mtime, 0) != 0)
            goto zfail_entry;
        continue;
    zfail_entry:
        snprintf(err, errlen, "%s!%s: cannot replace the entry: %s", in->path, en->name,
                 zip_strerror(za));
        zip_discard(za);
        memzip_done(msrc, m);
        return BL_EIO;
    }
    size_t kept = in->n;
    for (size_t i = 0; changed && i < in->n; i++) {
        const bl_jio_entry *en = &in->entries[i];
        if (en->is_dir || !bl_jio_is_signature(en->name))
            continue;
        if (zip_delete(za, en->index) != 0) {
            snprintf(err, errlen, "%s!%s: cannot drop the entry: %s", in->path, en->name,
                     zip_strerror(za));
            zip_discard(za);
            memzip_done(msrc, m);
            return BL_EIO;
        }
        kept--;
        bl_jio_notice_f(notice, ctx,
                        "%s: dropped signature file %s (the classes changed; sign the output "
                        "again if needed)",
                        in->path, en->name);
    }
    if (zip_close(za) != 0) {
        snprintf(err, errlen, "%s: writing the jar: %s", tmp, zip_strerror(za));
        zip_discard(za);
        memzip_done(msrc, m);
        return BL_EIO;
    }
    if (kept == 0) {
        /* libzip removes an archive left empty: write an empty one */
        static const uint8_t eocd[22] = {0x50, 0x4b, 0x05, 0x06};
        memzip_done(msrc, m);
        unlink(tmp);
        if ((e = write_new_file(tmp, eocd, sizeof eocd, 0666, 1)) != BL_OK) {
            snprintf(err, errlen, "%s: %s", tmp, estr(e));
            return e;
        }
    } else if (m) {
        /* committed: the new archive; not committed: zip_close had nothing
         * to change, the input as it is */
        e = write_file_at(tmp, m->committed ? (const uint8_t *)m->out.data : m->in,
                          m->committed ? m->out.len : m->in_len);
        memzip_done(msrc, m);
        if (e) {
            snprintf(err, errlen, "%s: %s", tmp, estr(e));
            return e;
        }
    }
    if (chmod(tmp, file_mode()) != 0 || fsync_path(tmp, 0) != 0) {
        snprintf(err, errlen, "%s: chmod/fsync: %s", tmp, strerror(errno));
        return BL_EIO;
    }
    return BL_OK;
}

#ifdef BL_HAVE_SYNCFS
#define PER_FILE_SYNC 0 /* one syncfs at the end */
#else
#define PER_FILE_SYNC 1
#endif

static bl_err stage_dir(const bl_jio_input *in, const char *tmp, char *err, size_t errlen)
{
    for (size_t i = 0; i < in->n; i++) {
        const bl_jio_entry *en = &in->entries[i];
        char *dst = bl_jio_cat3(tmp, "/", en->name);
        if (!dst) {
            snprintf(err, errlen, "%s: out of memory", tmp);
            return BL_ENOMEM;
        }
        bl_err e = BL_OK;
        if (en->is_dir) {
            if (mkdir(dst, 0755) != 0)
                e = BL_EIO;
        } else if (en->out || en->data) {
            e = write_new_file(dst, en->out ? en->out : en->data, en->out ? en->out_len : en->len,
                               (mode_t)(en->mode ? en->mode : 0644), PER_FILE_SYNC);
        } else {
            char *src = bl_jio_cat3(in->path, "/", en->name);
            e = src ? copy_file(src, dst, (mode_t)(en->mode ? en->mode : 0644), 0, PER_FILE_SYNC)
                    : BL_ENOMEM;
            free(src);
        }
        if (e) {
            snprintf(err, errlen, "%s: %s", dst, estr(e));
            free(dst);
            return e;
        }
        free(dst);
    }
#ifdef BL_HAVE_SYNCFS
    /* one syncfs for the whole tree instead of an fsync per file (thousands
     * of fsyncs cost seconds); then the root folder */
    int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) != 0 || fsync(fd) != 0) {
#else
    /* POSIX: every file was fsync'ed as written; now every folder, deepest
     * entries last in the list first, then the root */
    for (size_t i = in->n; i-- > 0;) {
        if (!in->entries[i].is_dir)
            continue;
        char *dst = bl_jio_cat3(tmp, "/", in->entries[i].name);
        if (!dst) {
            snprintf(err, errlen, "%s: out of memory", tmp);
            return BL_ENOMEM;
        }
        int r = fsync_path(dst, 1);
        int saved = errno;
        free(dst);
        if (r != 0) {
            snprintf(err, errlen, "%s/%s: fsync: %s", tmp, in->entries[i].name,
                     strerror(saved));
            return BL_EIO;
        }
    }
    int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
#endif
        snprintf(err, errlen, "%s: sync: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return BL_EIO;
    }
    close(fd);
    return BL_OK;
}

bl_err bl_jio_stage(const bl_jio_input *in, const char *target, bl_jio_notice_fn notice,
                    void *ctx, bl_jio_staged *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    char *tmp = tmp_template(target);
    st->target = strdup(target);
    if (!tmp || !st->target) {
        free(tmp);
        bl_jio_staged_cleanup(st);
        snprintf(err, errlen, "%s: out of memory", target);
        return BL_ENOMEM;
    }
    struct stat sb;
    if (lstat(target, &sb) == 0 && (S_ISDIR(sb.st_mode) != (in->kind == BL_JIO_DIR))) {
        snprintf(err, errlen, "%s: exists and is %s; the output of %s is %s", target,
                 S_ISDIR(sb.st_mode) ? "a folder" : "not a folder", in->path,
                 in->kind == BL_JIO_DIR ? "a folder" : "a file");
        free(tmp);
        bl_jio_staged_cleanup(st);
        return BL_EINVAL;
    }
    bl_err e;
    if (in->kind == BL_JIO_DIR) {
        if (!mkdtemp(tmp)) {
            snprintf(err, errlen, "%s: cannot create a temporary folder: %s", tmp,
                     strerror(errno));
            free(tmp);
            bl_jio_staged_cleanup(st);
            return BL_EIO;
        }
        /* mkdtemp makes it 0700: give the folder the mode mkdir would */
        mode_t um = umask(0);
        umask(um);
        (void)chmod(tmp, 0777 & ~um);
        st->is_dir = 1;
        st->tmp = tmp;
        e = stage_dir(in, tmp, err, errlen);
    } else {
        int fd = mkstemp(tmp);
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot create a temporary file: %s", tmp,
                     strerror(errno));
            free(tmp);
            bl_jio_staged_cleanup(st);
            return BL_EIO;
        }
        close(fd);
        st->tmp = tmp;
        if (in->kind == BL_JIO_JAR) {
            e = stage_jar(in, tmp, notice, ctx, err, errlen);
        } else {
            const bl_jio_entry *en = &in->entries[0];
            unlink(tmp);
            e = write_new_file(tmp, en->out ? en->out : en->data, en->out ? en->out_len : en->len,
                               0666, 1);
            if (e)
                snprintf(err, errlen, "%s: %s", tmp, estr(e));
        }
    }
    if (e) {
        bl_jio_abort(st);
        bl_jio_staged_cleanup(st);
    }
    return e;
}

bl_err bl_jio_stage_bytes(const char *target, const void *data, size_t len, bl_jio_staged *st,
                          char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    char *tmp = tmp_template(target);
    st->target = strdup(target);
    if (!tmp || !st->target) {
        free(tmp);
        bl_jio_staged_cleanup(st);
        snprintf(err, errlen, "%s: out of memory", target);
        return BL_ENOMEM;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file: %s", tmp, strerror(errno));
        free(tmp);
        bl_jio_staged_cleanup(st);
        return BL_EIO;
    }
    st->tmp = tmp;
    bl_err e = bl_fd_write_all(fd, data, len);
    if (!e && fchmod(fd, file_mode()) != 0)
        e = BL_EIO;
    if (!e && fsync(fd) != 0)
        e = BL_EIO;
    int saved = errno;
    if (close(fd) != 0 && !e)
        e = BL_EIO;
    else
        errno = saved;
    if (e) {
        snprintf(err, errlen, "%s: %s", tmp, estr(e));
        bl_jio_abort(st);
        bl_jio_staged_cleanup(st);
    }
    return e;
}

bl_err bl_jio_commit(bl_jio_staged *st, char *err, size_t errlen)
{
    if (!st->tmp)
        return BL_OK;
    struct stat sb;
    int exists = lstat(st->target, &sb) == 0;
    if (st->is_dir && exists) {
        /* swap the new folder in, then remove the old one (now at tmp) */
#ifdef BL_HAVE_RENAMEAT2
        int swapped = renameat2(AT_FDCWD, st->tmp, AT_FDCWD, st->target, RENAME_EXCHANGE) == 0;
#else
        int swapped = 0; /* POSIX: no exchange; rename aside below */
#endif
        if (!swapped) {
            char *old = bl_jio_cat3(st->tmp, ".old", "");
            if (!old || rename(st->target, old) != 0) {
                snprintf(err, errlen, "%s: cannot replace: %s", st->target,
                         old ? strerror(errno) : "out of memory");
                free(old);
                bl_jio_abort(st);
                return BL_EIO;
            }
            if (rename(st->tmp, st->target) != 0) {
                snprintf(err, errlen, "%s: %s", st->target, strerror(errno));
                if (rename(old, st->target) != 0)
                    snprintf(err, errlen, "%s: replacement failed; the previous output is "
                                          "at %s", st->target, old);
                free(old);
                bl_jio_abort(st);
                return BL_EIO;
            }
            remove_tree(old);
            free(old);
            free(st->tmp);
            st->tmp = NULL;
        } else {
            remove_tree(st->tmp);
            free(st->tmp);
            st->tmp = NULL;
        }
    } else {
        if (rename(st->tmp, st->target) != 0) {
            snprintf(err, errlen, "%s: %s", st->target, strerror(errno));
            bl_jio_abort(st);
            return BL_EIO;
        }
        free(st->tmp);
        st->tmp = NULL;
    }
    if (fsync_parent(st->target) != 0) {
        snprintf(err, errlen, "%s: fsync of its folder: %s", st->target, strerror(errno));
        return BL_EIO;
    }
    return BL_OK;
}

void bl_jio_abort(bl_jio_staged *st)
{
    if (!st->tmp)
        return;
    if (st->is_dir)
        remove_tree(st->tmp);
    else
        unlink(st->tmp);
    free(st->tmp);
    st->tmp = NULL;
}

void bl_jio_staged_cleanup(bl_jio_staged *st)
{
    free(st->target);
    free(st->tmp);
    memset(st, 0, sizeof *st);
}
