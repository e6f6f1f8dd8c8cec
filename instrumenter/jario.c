/*
 * jario.c — reading jars, class directories and class files, and decoding
 * and re-encoding their class entries (contract in jario.h); writing the
 * instrumented copies is jarstage.c (jarstage.h).
 *
 * Jar input: the file is read into memory once (up to BL_JIO_INMEM_MAX;
 * larger ones are read by libzip from the file); libzip lists the entries
 * and hands out each class entry's stored bytes (ZIP_FL_COMPRESSED), which
 * bl_jio_load inflates and checks (libdeflate, CRC-32) on the caller's
 * threads; bl_jio_precompress deflates the rewritten ones there too.
 *
 * Invariant: every entry name kept passed bl_jio_name_safe or came from
 * readdir (no "..", no '/'-prefix).
 */
#include "jario.h"
#include "jario_internal.h"

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

/* ---- small helpers ------------------------------------------------------- */

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

const char *bl_jio_base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

char *bl_jio_cat3(const char *a, const char *b, const char *c)
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

void bl_jio_zip_msg(int code, char *buf, size_t n)
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
        bl_jio_zip_msg(code, m, sizeof m);
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

void bl_jio_notice_f(bl_jio_notice_fn fn, void *ctx, const char *fmt, ...)
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
    if (depth > BL_JIO_MAX_DEPTH) {
        snprintf(w->err, w->errlen, "%s/%s: folders nested deeper than %d levels", root, rel,
                 BL_JIO_MAX_DEPTH);
        return BL_ETOOBIG;
    }
    char *dpath = bl_jio_cat3(root, "/", rel);
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
        char *relname = bl_jio_cat3(rel, names[i], "");
        char *full = relname ? bl_jio_cat3(root, "/", relname) : NULL;
        struct stat sb;
        if (!full) {
            rc = BL_ENOMEM;
        } else if (lstat(full, &sb) != 0) {
            snprintf(w->err, w->errlen, "%s: %s", full, strerror(errno));
            rc = BL_EIO;
        } else {
            int link = S_ISLNK(sb.st_mode);
            if (link && stat(full, &sb) != 0) {
                bl_jio_notice_f(w->notice, w->ctx, "%s: skipped (dangling symbolic link)", full);
            } else if (S_ISDIR(sb.st_mode)) {
                if (link) {
                    bl_jio_notice_f(w->notice, w->ctx, "%s: skipped (symbolic link to a folder)",
                                    full);
                } else {
                    char *dn = bl_jio_cat3(relname, "/", "");
                    bl_jio_entry e = {.name = dn, .is_dir = 1, .mode = sb.st_mode & 07777};
                    if (!dn)
                        rc = BL_ENOMEM;
                    else if ((rc = push_entry(w->in, &w->cap, &e)) != BL_OK)
                        free(dn);
                    else
                        rc = walk_dir(w, dn, depth + 1);
                }
            } else if (!S_ISREG(sb.st_mode)) {
                bl_jio_notice_f(w->notice, w->ctx, "%s: skipped (not a regular file)", full);
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
        if (!(e.name = strdup(bl_jio_base_name(in->path)))) {
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
