/*
 * jario.c — reading jars, class directories and class files, and writing
 * their instrumented copies (contract in jario.h).
 *
 * Jar input: the file is read into memory once (up to BL_JIO_INMEM_MAX;
 * larger ones are read by libzip from the file); libzip lists the entries
 * and hands out each class entry's stored bytes (ZIP_FL_COMPRESSED), which
 * bl_jio_load inflates and checks (libdeflate, CRC-32) on the caller's
 * threads.
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
#include "jario.h"

#include "common/buf.h"
#include "common/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <libdeflate.h>

#define MAX_DEPTH 256
#define COPY_CHUNK (1u << 20)

/* ---- small helpers ------------------------------------------------------- */

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* New heap string "a" + "b" + "c". */
static char *cat3(const char *a, const char *b, const char *c)
{
    size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
    char *s = malloc(na + nb + nc + 1);
    if (!s)
        return NULL;
    memcpy(s, a, na);
    memcpy(s + na, b, nb);
    memcpy(s + na + nb, c, nc + 1);
    return s;
}

int bl_jio_is_signature(const char *name)
{
    if (strncmp(name, "META-INF/", 9) != 0)
        return 0;
    const char *f = name + 9;
    if (!*f || strchr(f, '/'))
        return 0;
    if (strncmp(f, "SIG-", 4) == 0)
        return 1;
    const char *dot = strrchr(f, '.');
    if (!dot)
        return 0;
    return !strcasecmp(dot, ".SF") || !strcasecmp(dot, ".RSA") || !strcasecmp(dot, ".DSA") ||
           !strcasecmp(dot, ".EC");
}

int bl_jio_name_safe(const char *name)
{
    if (!name[0] || name[0] == '/' || strchr(name, '\\'))
        return 0;
    if (((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')) &&
        name[1] == ':')
        return 0;
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 0;
        p += n;
        if (*p == '/')
            p++;
    }
    return 1;
}

static bl_err push_entry(bl_jio_input *in, size_t *cap, bl_jio_entry *e)
{
    if (in->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        bl_jio_entry *v = realloc(in->entries, nc * sizeof *v);
        if (!v)
            return BL_ENOMEM;
        in->entries = v;
        *cap = nc;
    }
    in->entries[in->n++] = *e;
    return BL_OK;
}

void bl_jio_free(bl_jio_input *in)
{
    if (!in)
        return;
    for (size_t i = 0; i < in->n; i++) {
        free(in->entries[i].name);
        free(in->entries[i].data);
        free(in->entries[i].zout);
    }
    free(in->entries);
    free(in->raw);
    free(in->file);
    free(in->path);
    free(in);
}

/* Reads a whole regular file (at most cap bytes) into data and len. */
static bl_err read_file(const char *path, size_t cap, uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    bl_buf b;
    bl_buf_init(&b, cap);
    bl_err e = bl_fd_read_all(fd, &b);
    int saved = errno;
    close(fd);
    errno = saved;
    if (e) {
        bl_buf_cleanup(&b);
        return e;
    }
    if (!b.data && bl_buf_reserve(&b, 1)) {
        bl_buf_cleanup(&b);
        return BL_ENOMEM;
    }
    *data = (uint8_t *)b.data;
    *len = b.len;
    return BL_OK;
}

/* Reads the regular file `path` into *data (owned, *len bytes) when its size
 * is at most max; else leaves *data NULL and returns BL_ETOOBIG. *size gets
 * the file's size either way. BL_EIO (errno), BL_EFORMAT (the file changed
 * size while being read), BL_ENOMEM. */
static bl_err read_whole(const char *path, uint64_t max, uint8_t **data, size_t *len,
                         uint64_t *size)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0)
        return BL_EIO;
    if (fstat(fd, &sb) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return BL_EIO;
    }
    *size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    if (*size > max || *size > SIZE_MAX / 2) {
        close(fd);
        return BL_ETOOBIG;
    }
    size_t n = (size_t)*size;
    uint8_t *d = malloc(n ? n : 1);
    if (!d) {
        close(fd);
        return BL_ENOMEM;
    }
    size_t got = 0;
    bl_err e = BL_OK;
    for (;;) {
        /* one byte past the size: notices a file that grew */
        size_t want = got < n ? n - got : 1;
        uint8_t extra;
        ssize_t r = read(fd, got < n ? d + got : &extra, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = BL_EIO;
            break;
        }
        if (r == 0 || got >= n) {
            if (r != 0 || got != n)
                e = BL_EFORMAT;
            break;
        }
        got += (size_t)r;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    if (e) {
        free(d);
        return e;
    }
    *data = d;
    *len = n;
    return BL_OK;
}

/* ---- jar input ----------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void zip_msg(int code, char *buf, size_t n)
{
    zip_error_t ze;
    zip_error_init_with_code(&ze, code);
    snprintf(buf, n, "%s", zip_error_strerror(&ze));
    zip_error_fini(&ze);
}

/* Reads entry i (declared size `size`) into e->data. */
static bl_err read_entry(zip_t *za, const char *path, bl_jio_entry *e, zip_uint64_t size,
                         uint64_t *total, char *err, size_t errlen)
{
    if (size > BL_JIO_CLASS_MAX) {
        snprintf(err, errlen, "%s!%s: declared size %llu exceeds the %u-byte limit for a class",
                 path, e->name, (unsigned long long)size, BL_JIO_CLASS_MAX);
        return BL_ETOOBIG;
    }
    zip_file_t *zf = zip_fopen_index(za, e->index, 0);
    if (!zf) {
        snprintf(err, errlen, "%s!%s: cannot read entry: %s", path, e->name, zip_strerror(za));
        return BL_EFORMAT;
    }
    bl_buf b;
    bl_buf_init(&b, BL_JIO_CLASS_MAX);
    bl_err rc = BL_OK;
    uint8_t chunk[65536];
    for (;;) {
        zip_int64_t r = zip_fread(zf, chunk, sizeof chunk);
        if (r < 0) {
            snprintf(err, errlen, "%s!%s: corrupt entry data: %s", path, e->name,
                     zip_file_strerror(zf));
            rc = BL_EFORMAT;
            break;
        }
        if (r == 0)
            break;
        if ((rc = bl_buf_append(&b, chunk, (size_t)r)) != BL_OK) {
            snprintf(err, errlen, "%s!%s: %s", path, e->name,
                     rc == BL_ETOOBIG ? "class larger than the limit" : "out of memory");
            break;
        }
        if ((*total += (uint64_t)r) > BL_JIO_TOTAL_MAX) {
            snprintf(err, errlen, "%s!%s: more than %llu bytes of classes in one input", path,
                     e->name, (unsigned long long)BL_JIO_TOTAL_MAX);
            rc = BL_ETOOBIG;
            break;
        }
    }
    zip_fclose(zf);
    if (!rc && b.len != size) {
        snprintf(err, errlen, "%s!%s: entry holds %zu bytes, its header says %llu", path,
                 e->name, b.len, (unsigned long long)size);
        rc = BL_EFORMAT;
    }
    if (!rc && !b.data && bl_buf_reserve(&b, 1))
        rc = BL_ENOMEM;
    if (rc) {
        bl_buf_cleanup(&b);
        return rc;
    }
    e->data = (uint8_t *)b.data;
    e->len = b.len;
    return BL_OK;
}

/* Deflate cannot expand more than 1,032 : 1 (258-byte matches at about 2
 * bits each); a declared size above this is a lie, whatever the data. */
#define DEFLATE_MAX_RATIO 1032u

/* Reads the `e->raw_len` stored bytes of entry e (libzip, no decoding) to
 * dst. */
static bl_err read_raw(zip_t *za, const char *path, const bl_jio_entry *e, uint8_t *dst,
                       char *err, size_t errlen)
{
    zip_file_t *zf = zip_fopen_index(za, e->index, ZIP_FL_COMPRESSED);
    if (!zf) {
        snprintf(err, errlen, "%s!%s: cannot read entry: %s", path, e->name, zip_strerror(za));
        return BL_EFORMAT;
    }
    size_t got = 0;
    bl_err rc = BL_OK;
    while (got < e->raw_len) {
        zip_int64_t r = zip_fread(zf, dst + got, e->raw_len - got);
        if (r < 0) {
            snprintf(err, errlen, "%s!%s: corrupt entry data: %s", path, e->name,
                     zip_file_strerror(zf));
            rc = BL_EFORMAT;
            break;
        }
        if (r == 0) {
            snprintf(err, errlen, "%s!%s: entry data truncated (%zu of %zu compressed bytes)",
                     path, e->name, got, e->raw_len);
            rc = BL_EFORMAT;
            break;
        }
        got += (size_t)r;
    }
    zip_fclose(zf);
    return rc;
}

static bl_err open_jar(bl_jio_input *in, char *err, size_t errlen)
{
    uint64_t file_size = 0;
    bl_err rc = read_whole(in->path, BL_JIO_INMEM_MAX, &in->file, &in->file_len, &file_size);
    if (rc && rc != BL_ETOOBIG) {
        snprintf(err, errlen, "%s: %s", in->path,
                 rc == BL_EIO      ? strerror(errno)
                 : rc == BL_EFORMAT ? "the file changed while being read"
                                    : "out of memory");
        return rc;
    }
    /* libzip opens an empty file as an empty archive; a jar has at least
     * its 22-byte end-of-central-directory record (APPNOTE 4.3.16) */
    if (file_size < 22) {
        snprintf(err, errlen, "%s: cannot open as a jar (zip): %llu bytes, too short", in->path,
                 (unsigned long long)file_size);
        return BL_EFORMAT;
    }
    int code = 0;
    zip_t *za = NULL;
    if (in->file) {
        zip_error_t ze;
        zip_error_init(&ze);
        zip_source_t *src = zip_source_buffer_create(in->file, in->file_len, 0, &ze);
        if (src && !(za = zip_open_from_source(src, ZIP_RDONLY, &ze)))
            zip_source_free(src);
        code = zip_error_code_zip(&ze);
        zip_error_fini(&ze);
    } else {
        za = zip_open(in->path, ZIP_RDONLY, &code); /* too large to hold: from the file */
    }
    if (!za) {
        char m[256];
        zip_msg(code, m, sizeof m);
        snprintf(err, errlen, "%s: cannot open as a jar (zip): %s", in->path, m);
        return code == ZIP_ER_MEMORY ? BL_ENOMEM : code == ZIP_ER_OPEN || code == ZIP_ER_READ
                                                       ? BL_EIO
                                                       : BL_EFORMAT;
    }
    rc = BL_OK;
    size_t cap = 0;
    uint64_t total = 0, raw_total = 0;
    zip_int64_t n = zip_get_num_entries(za, 0);
    char **sorted = NULL;
    /* pass A: list the entries; class entries that are deflated or stored
     * (with sizes and CRC known) only get their raw size noted here, others
     * are decoded by libzip now */
    for (zip_int64_t i = 0; i < n && !rc; i++) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(za, (zip_uint64_t)i, ZIP_FL_ENC_RAW, &st) != 0 ||
            !(st.valid & ZIP_STAT_NAME)) {
            snprintf(err, errlen, "%s: entry #%lld: %s", in->path, (long long)i,
                     zip_strerror(za));
            rc = BL_EFORMAT;
            break;
        }
        bl_jio_entry e = {.index = (uint64_t)i,
                          .comp = (st.valid & ZIP_STAT_COMP_METHOD) ? st.comp_method : ZIP_CM_DEFLATE,
                          .mtime = (st.valid & ZIP_STAT_MTIME) ? st.mtime : 0};
        if (!bl_jio_name_safe(st.name)) {
            snprintf(err, errlen,
                     "%s!%s: unsafe entry name (empty, absolute, '..' component or "
                     "backslash)",
                     in->path, st.name);
            rc = BL_EFORMAT;
            break;
        }
        if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
            snprintf(err, errlen, "%s!%s: encrypted entries are not supported", in->path,
                     st.name);
            rc = BL_EFORMAT;
            break;
        }
        if (!(e.name = strdup(st.name))) {
            rc = BL_ENOMEM;
            break;
        }
        e.is_dir = ends_with(e.name, "/");
        e.is_class = !e.is_dir && ends_with(e.name, ".class");
        const zip_uint64_t need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC |
                                  ZIP_STAT_COMP_METHOD;
        if (e.is_class && (st.valid & need) == need &&
            (st.comp_method == ZIP_CM_DEFLATE || st.comp_method == ZIP_CM_STORE)) {
            /* never trust the sizes: bounded by the limits, the archive's
             * size and what deflate can expand to */
            if (st.size > BL_JIO_CLASS_MAX) {
                snprintf(err, errlen,
                         "%s!%s: declared size %llu exceeds the %u-byte limit for a class",
                         in->path, e.name, (unsigned long long)st.size, BL_JIO_CLASS_MAX);
                rc = BL_ETOOBIG;
            } else if (st.comp_size > file_size || (raw_total += st.comp_size) > file_size) {
                snprintf(err, errlen,
                         "%s!%s: compressed data runs past the end of the archive or overlaps "
                         "other entries",
                         in->path, e.name);
                rc = BL_EFORMAT;
            } else if (st.comp_method == ZIP_CM_STORE ? st.size != st.comp_size
                                                      : st.size > (uint64_t)st.comp_size *
                                                                          DEFLATE_MAX_RATIO) {
                snprintf(err, errlen,
                         "%s!%s: corrupt entry header (%llu bytes declared for %llu %s bytes)",
                         in->path, e.name, (unsigned long long)st.size,
                         (unsigned long long)st.comp_size,
                         st.comp_method == ZIP_CM_STORE ? "stored" : "compressed");
                rc = BL_EFORMAT;
            } else if ((total += st.size) > BL_JIO_TOTAL_MAX) {
                snprintf(err, errlen, "%s!%s: more than %llu bytes of classes in one input",
                         in->path, e.name, (unsigned long long)BL_JIO_TOTAL_MAX);
                rc = BL_ETOOBIG;
            } else {
                e.raw_len = (size_t)st.comp_size;
                e.size = st.size;
                e.crc_in = st.crc; /* e.raw is set in pass B */
            }
            if (rc) {
                free(e.name);
                break;
            }
        } else if (e.is_class &&
                   (rc = read_entry(za, in->path, &e, st.size, &total, err, errlen))) {
            free(e.name);
            break;
        }
        if ((rc = push_entry(in, &cap, &e)) != BL_OK) {
            free(e.name);
            free(e.data);
        }
    }
    /* pass B: the pending class entries' raw bytes, into one buffer */
    if (!rc) {
        in->raw = malloc(raw_total ? (size_t)raw_total : 1);
        if (!in->raw)
            rc = BL_ENOMEM;
        size_t off = 0;
        for (size_t i = 0; !rc && i < in->n; i++) {
            bl_jio_entry *e = &in->entries[i];
            if (!e->is_class || e->data) /* not pending (read_entry sets data) */
                continue;
            e->raw = in->raw + off;
            rc = read_raw(za, in->path, e, in->raw + off, err, errlen);
            off += e->raw_len;
        }
    }
    if (!rc && in->n > 1) {
        sorted = malloc(in->n * sizeof *sorted);
        if (!sorted)
            rc = BL_ENOMEM;
        for (size_t i = 0; !rc && i < in->n; i++)
            sorted[i] = in->entries[i].name;
        if (!rc)
            qsort(sorted, in->n, sizeof *sorted, cmp_names);
        for (size_t i = 1; !rc && i < in->n; i++)
            if (!strcmp(sorted[i - 1], sorted[i])) {
                snprintf(err, errlen, "%s!%s: duplicate entry name", in->path, sorted[i]);
                rc = BL_EFORMAT;
            }
        free(sorted);
    }
    if (rc == BL_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", in->path);
    zip_discard(za);
    return rc;
}

/* ---- directory input ----------------------------------------------------- */

typedef struct walk {
    bl_jio_input *in;
    size_t cap;
    uint64_t total;
    bl_jio_notice_fn notice;
    void *ctx;
    char *err;
    size_t errlen;
} walk;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

__attribute__((format(printf, 3, 4))) static void notice_f(bl_jio_notice_fn fn, void *ctx,
                                                            const char *fmt, ...)
{
    if (!fn)
        return;
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    fn(ctx, m);
}

/* Adds the entries below rel ("" for the root, else "a/b/") of the input. */
static bl_err walk_dir(walk *w, const char *rel, int depth)
{
    const char *root = w->in->path;
    if (depth > MAX_DEPTH) {
        snprintf(w->err, w->errlen, "%s/%s: folders nested deeper than %d levels", root, rel,
                 MAX_DEPTH);
        return BL_ETOOBIG;
    }
    char *dpath = cat3(root, "/", rel);
    if (!dpath)
        return BL_ENOMEM;
    DIR *d = opendir(dpath);
    if (!d) {
        snprintf(w->err, w->errlen, "%s: %s", dpath, strerror(errno));
        free(dpath);
        return BL_EIO;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    bl_err rc = BL_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **v = realloc(names, nc * sizeof *v);
            if (!v) {
                rc = BL_ENOMEM;
                break;
            }
            names = v;
            cap = nc;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = BL_ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (!rc && n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && !rc; i++) {
        char *relname = cat3(rel, names[i], "");
        char *full = relname ? cat3(root, "/", relname) : NULL;
        struct stat sb;
        if (!full) {
            rc = BL_ENOMEM;
        } else if (lstat(full, &sb) != 0) {
            snprintf(w->err, w->errlen, "%s: %s", full, strerror(errno));
            rc = BL_EIO;
        } else {
            int link = S_ISLNK(sb.st_mode);
            if (link && stat(full, &sb) != 0) {
                notice_f(w->notice, w->ctx, "%s: skipped (dangling symbolic link)", full);
            } else if (S_ISDIR(sb.st_mode)) {
                if (link) {
                    notice_f(w->notice, w->ctx, "%s: skipped (symbolic link to a folder)", full);
                } else {
                    char *dn = cat3(relname, "/", "");
                    bl_jio_entry e = {.name = dn, .is_dir = 1, .mode = sb.st_mode & 07777};
                    if (!dn)
                        rc = BL_ENOMEM;
                    else if ((rc = push_entry(w->in, &w->cap, &e)) != BL_OK)
                        free(dn);
                    else
                        rc = walk_dir(w, dn, depth + 1);
                }
            } else if (!S_ISREG(sb.st_mode)) {
                notice_f(w->notice, w->ctx, "%s: skipped (not a regular file)", full);
            } else {
                bl_jio_entry e = {.name = relname, .mode = sb.st_mode & 07777};
                e.is_class = ends_with(relname, ".class");
                relname = NULL;
                if (e.is_class) {
                    rc = read_file(full, BL_JIO_CLASS_MAX, &e.data, &e.len);
                    if (rc == BL_ETOOBIG)
                        snprintf(w->err, w->errlen, "%s: class larger than %u bytes", full,
                                 BL_JIO_CLASS_MAX);
                    else if (rc == BL_EIO)
                        snprintf(w->err, w->errlen, "%s: %s", full, strerror(errno));
                    else if (!rc && (w->total += e.len) > BL_JIO_TOTAL_MAX) {
                        snprintf(w->err, w->errlen, "%s: more than %llu bytes of classes", root,
                                 (unsigned long long)BL_JIO_TOTAL_MAX);
                        rc = BL_ETOOBIG;
                    }
                }
                if (!rc)
                    rc = push_entry(w->in, &w->cap, &e);
                if (rc) {
                    free(e.name);
                    free(e.data);
                }
            }
        }
        free(relname);
        free(full);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(dpath);
    if (rc == BL_ENOMEM)
        snprintf(w->err, w->errlen, "%s: out of memory", root);
    return rc;
}

bl_err bl_jio_open(const char *path, bl_jio_notice_fn notice, void *ctx, bl_jio_input **out,
                   char *err, size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return BL_EIO;
    }
    bl_jio_input *in = calloc(1, sizeof *in);
    if (!in || !(in->path = strdup(path))) {
        free(in);
        snprintf(err, errlen, "%s: out of memory", path);
        return BL_ENOMEM;
    }
    /* "dir/" and "dir" name the same input; keep paths without a trailing '/' */
    for (size_t l = strlen(in->path); l > 1 && in->path[l - 1] == '/'; l--)
        in->path[l - 1] = '\0';
    bl_err rc;
    if (S_ISDIR(sb.st_mode)) {
        in->kind = BL_JIO_DIR;
        walk w = {in, 0, 0, notice, ctx, err, errlen};
        rc = walk_dir(&w, "", 0);
    } else if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a jar, class file or folder", path);
        rc = BL_EFORMAT;
    } else if (ends_with(path, ".class")) {
        in->kind = BL_JIO_CLASS;
        bl_jio_entry e = {.is_class = 1, .mode = sb.st_mode & 07777};
        if (!(e.name = strdup(base_name(in->path)))) {
            rc = BL_ENOMEM;
            snprintf(err, errlen, "%s: out of memory", path);
        } else if ((rc = read_file(path, BL_JIO_CLASS_MAX, &e.data, &e.len)) != BL_OK) {
            snprintf(err, errlen, "%s: %s", path,
                     rc == BL_EIO ? strerror(errno)
                                  : rc == BL_ETOOBIG ? "class larger than the limit"
                                                     : "out of memory");
            free(e.name);
        } else {
            size_t cap = 0;
            if ((rc = push_entry(in, &cap, &e)) != BL_OK) {
                free(e.name);
                free(e.data);
                snprintf(err, errlen, "%s: out of memory", path);
            }
        }
    } else {
        in->kind = BL_JIO_JAR;
        rc = open_jar(in, err, errlen);
    }
    if (rc) {
        bl_jio_free(in);
        return rc;
    }
    *out = in;
    return BL_OK;
}

/* ---- staging ------------------------------------------------------------- */

/* Template ".NAME.blXXXXXX" in target's folder (heap). */
static char *tmp_template(const char *target)
{
    const char *b = base_name(target);
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
    const char *b = base_name(path);
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
    if (unlinkat(dfd, name, 0) == 0 || depth > MAX_DEPTH + 1)
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

/* ---- pre-compressed entries ------------------------------------------- */

/* Per-thread libdeflate state, allocated on first use (a compressor holds
 * about a megabyte of tables; allocating one per class costs more than the
 * compression). Freed by bl_jio_thread_done. */
static _Thread_local struct libdeflate_decompressor *tl_dec;
static _Thread_local struct libdeflate_compressor *tl_comp;

void bl_jio_thread_done(void)
{
    libdeflate_free_decompressor(tl_dec);
    libdeflate_free_compressor(tl_comp);
    tl_dec = NULL;
    tl_comp = NULL;
}

bl_err bl_jio_load(const bl_jio_input *in, bl_jio_entry *en, char *err, size_t errlen)
{
    if (en->data || !en->is_class || !en->raw)
        return BL_OK;
    /* bl_jio_open bounded size: <= BL_JIO_CLASS_MAX, == raw_len when stored,
     * <= raw_len * 1032 when deflated */
    size_t size = (size_t)en->size;
    uint8_t *d = malloc(size ? size : 1);
    if (!d) {
        snprintf(err, errlen, "%s!%s: out of memory", in->path, en->name);
        return BL_ENOMEM;
    }
    if (en->comp == ZIP_CM_STORE) {
        if (size)
            memcpy(d, en->raw, size);
    } else {
        if (!tl_dec && !(tl_dec = libdeflate_alloc_decompressor())) {
            free(d);
            snprintf(err, errlen, "%s!%s: out of memory", in->path, en->name);
            return BL_ENOMEM;
        }
        size_t got = 0;
        enum libdeflate_result r =
            libdeflate_deflate_decompress(tl_dec, en->raw, en->raw_len, d, size, &got);
        if (r != LIBDEFLATE_SUCCESS || got != size) {
            if (r == LIBDEFLATE_INSUFFICIENT_SPACE)
                snprintf(err, errlen, "%s!%s: entry holds more bytes than its header says (%zu)",
                         in->path, en->name, size);
            else if (r == LIBDEFLATE_SUCCESS)
                snprintf(err, errlen, "%s!%s: entry holds %zu bytes, its header says %zu",
                         in->path, en->name, got, size);
            else
                snprintf(err, errlen, "%s!%s: corrupt entry data (invalid deflate stream)",
                         in->path, en->name);
            free(d);
            return BL_EFORMAT;
        }
    }
    uint32_t crc = (uint32_t)libdeflate_crc32(0, d, size);
    if (crc != en->crc_in) {
        snprintf(err, errlen,
                 "%s!%s: corrupt entry data (CRC-32 %08x, its header says %08x)", in->path,
                 en->name, (unsigned)crc, (unsigned)en->crc_in);
        free(d);
        return BL_EFORMAT;
    }
    en->data = d;
    en->len = size;
    return BL_OK;
}

bl_err bl_jio_precompress(const bl_jio_input *in, bl_jio_entry *en)
{
    if (in->kind != BL_JIO_JAR || !en->out || en->has_crc)
        return BL_OK;
    if (en->comp != ZIP_CM_STORE) {
        if (!tl_comp && !(tl_comp = libdeflate_alloc_compressor(BL_JIO_DEFLATE_LEVEL)))
            return BL_ENOMEM;
        size_t bound = libdeflate_deflate_compress_bound(tl_comp, en->out_len);
        uint8_t *z = malloc(bound ? bound : 1);
        if (!z)
            return BL_ENOMEM;
        size_t n = libdeflate_deflate_compress(tl_comp, en->out, en->out_len, z, bound);
        if (n == 0) { /* cannot happen with the bound; be safe */
            free(z);
            return BL_EFORMAT;
        }
        en->zout = z;
        en->zout_len = n;
    }
    en->crc = (uint32_t)libdeflate_crc32(0, en->out, en->out_len);
    en->has_crc = 1;
    return BL_OK;
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
        if (len < sizeof(zip_stat_t)) {
            zip_error_set(&z->error, ZIP_ER_INVAL, 0);
            return -1;
        }
        zip_stat_t *st = data;
        zip_stat_init(st);
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
    case ZIP_SOURCE_SEEK: {
        zip_int64_t p = zip_source_seek_compute_offset(m->pos, m->in_len, data, len, &m->error);
        if (p < 0)
            return -1;
        m->pos = (size_t)p;
        return 0;
    }
    case ZIP_SOURCE_TELL:
        return (zip_int64_t)m->pos;
    case ZIP_SOURCE_STAT: {
        if (len < sizeof(zip_stat_t)) {
            zip_error_set(&m->error, ZIP_ER_INVAL, 0);
            return -1;
        }
        zip_stat_t *st = data;
        zip_stat_init(st);
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
    case ZIP_SOURCE_SEEK_WRITE: {
        zip_int64_t p = zip_source_seek_compute_offset(m->wpos, m->out.len, data, len, &m->error);
        if (p < 0)
            return -1;
        m->wpos = (size_t)p;
        return 0;
    }
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
            zip_msg(code, zm, sizeof zm);
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
        notice_f(notice, ctx,
                 "%s: dropped signature file %s (the classes changed; sign the output again "
                 "if needed)",
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
        char *dst = cat3(tmp, "/", en->name);
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
            char *src = cat3(in->path, "/", en->name);
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
        char *dst = cat3(tmp, "/", in->entries[i].name);
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
            char *old = cat3(st->tmp, ".old", "");
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
