/*
 * h_web.c — GET / and the dashboard's files (web/, built by esbuild) from
 * one folder, the --web DIR of the server (docs/api.md "Web UI").
 *
 * No request path reaches the file system unchecked:
 *   - the decoded path is split on '/'; every segment is 1-128 bytes of
 *     A-Z a-z 0-9 '.' '_' '-' and does not begin with '.' (so no "." or
 *     "..", no hidden file); at most BL_WEB_MAX_DEPTH segments; "/" is
 *     index.html; anything else → 404;
 *   - the file is opened segment by segment with openat() from the folder's
 *     descriptor (opened once at start) with O_NOFOLLOW: a symbolic link
 *     anywhere below the folder is refused (404), so nothing outside it
 *     can be reached even by a link placed inside;
 *   - only regular files of a known extension are served (the type comes
 *     from the extension; nosniff).
 * Every answer carries a strict Content-Security-Policy (scripts, styles,
 * images and API calls from this origin only, no inline script, no
 * framing). Names the build hashes (NAME-XXXXXXXX.EXT, 8 of A-Z 0-9, what
 * esbuild writes for [name]-[hash]) are cached for a year (immutable);
 * every other file (index.html) is "no-cache": revalidated each time, by
 * its ETag (size and modification time; If-None-Match → 304).
 */
#include "http/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BL_WEB_MAX_DEPTH 8
#define BL_WEB_MAX_SEGMENT 128

/* The policy sent with every file. 'self' only; no inline script or
 * style element; style attributes are not set by the bundle (uPlot sets
 * styles through the CSSOM, which CSP does not restrict). */
#define BL_WEB_CSP                                                                             \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "          \
    "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "              \
    "form-action 'none'; frame-ancestors 'none'"

static const struct {
    const char *ext;
    const char *type;
} web_types[] = {
    { ".html", "text/html; charset=utf-8" },
    { ".js", "text/javascript; charset=utf-8" },
    { ".css", "text/css; charset=utf-8" },
    { ".json", "application/json" },
    { ".map", "application/json" },
    { ".svg", "image/svg+xml" },
    { ".png", "image/png" },
    { ".ico", "image/x-icon" },
    { ".woff2", "font/woff2" },
    { ".txt", "text/plain; charset=utf-8" },
};

int bl_web_open(const char *dir, int *fd_out, char *err, size_t n)
{
    *fd_out = -1;
    if (!dir || !*dir)
        return 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, n, "--web %s: %s", dir, strerror(errno));
        return -1;
    }
    *fd_out = fd;
    return 0;
}

/* The Content-Type of a file name by its extension, or NULL (not served). */
static const char *type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return NULL;
    for (size_t i = 0; i < sizeof web_types / sizeof web_types[0]; i++)
        if (!strcmp(dot, web_types[i].ext))
            return web_types[i].type;
    return NULL;
}

/* 1 when the name is NAME-XXXXXXXX.EXT with 8 of A-Z 0-9 (esbuild's hash). */
static int hashed_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot - name < 10 || dot[-9] != '-')
        return 0;
    for (const char *p = dot - 8; p < dot; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

static int segment_ok(const char *s, size_t len)
{
    if (len == 0 || len > BL_WEB_MAX_SEGMENT || s[0] == '.')
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

/* Opens the file of a request path below dirfd: -1 when the path is not
 * one the rules above allow, does not exist, is not a regular file or
 * passes through a symbolic link. On success the descriptor (the caller's),
 * its stat in *st, and *name the last segment (inside path). The last
 * segment is checked with fstatat before it is opened, so a device or FIFO
 * in the folder is never opened, and again with fstat after. */
static int open_below(int dirfd, const char *path, struct stat *st, const char **name)
{
    if (path[0] != '/')
        return -1;
    if (!strcmp(path, "/"))
        path = "/index.html";
    const char *p = path + 1;
    int cur = dirfd, depth = 0;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        char seg[BL_WEB_MAX_SEGMENT + 1];
        if (!segment_ok(p, len) || ++depth > BL_WEB_MAX_DEPTH)
            break;
        memcpy(seg, p, len);
        seg[len] = '\0';
        struct stat pre;
        if (!slash && (fstatat(cur, seg, &pre, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(pre.st_mode))) {
            if (cur != dirfd)
                close(cur);
            return -1;
        }
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (slash ? O_DIRECTORY : O_NONBLOCK);
        int fd = openat(cur, seg, flags);
        if (cur != dirfd)
            close(cur);
        cur = dirfd;
        if (fd < 0)
            return -1;
        if (slash) {
            cur = fd;
            p = slash + 1;
            continue;
        }
        if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
            close(fd);
            return -1;
        }
        *name = p;
        return fd;
    }
    if (cur != dirfd)
        close(cur);
    return -1;
}

enum MHD_Result bl_h_web(struct MHD_Connection *c, bl_http *h, req *r, const char *url)
{
    (void)r;
    if (h->web_fd < 0)
        return bl_reply_error(c, h, 404,
                              "no web UI here: start the server with --web DIR (the built "
                              "dashboard); the API is under /v1/");
    struct stat st;
    const char *name = NULL, *type = NULL;
    int fd = open_below(h->web_fd, url, &st, &name);
    if (fd >= 0 && !(type = type_of(name))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        return bl_reply_error(c, h, 404, "not found");
    /* a validator for no-cache revalidation: size and modification time */
    char etag[64];
    snprintf(etag, sizeof etag, "\"%llx-%llx.%lx\"", (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtim.tv_sec, (unsigned long)st.st_mtim.tv_nsec);
    const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
    int not_modified = inm && (strstr(inm, etag) != NULL || !strcmp(inm, "*"));
    struct MHD_Response *resp;
    if (not_modified) {
        close(fd);
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        /* libmicrohttpd owns fd from here (closed with the response) */
        resp = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
        if (!resp)
            close(fd);
    }
    if (!resp)
        return bl_reply_error(c, h, 503, "cannot answer the file (out of memory)");
    unsigned status = not_modified ? 304 : 200;
    int ok = MHD_add_response_header(resp, "ETag", etag) == MHD_YES &&
             MHD_add_response_header(resp, "Content-Type", type) == MHD_YES &&
             MHD_add_response_header(resp, "Cache-Control",
                                     hashed_name(name) ? "public, max-age=31536000, immutable"
                                                       : "no-cache") == MHD_YES &&
             MHD_add_response_header(resp, "Content-Security-Policy", BL_WEB_CSP) == MHD_YES &&
             MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") == MHD_YES &&
             MHD_add_response_header(resp, "X-Frame-Options", "DENY") == MHD_YES &&
             MHD_add_response_header(resp, "Referrer-Policy", "no-referrer") == MHD_YES &&
             MHD_add_response_header(resp, "Cross-Origin-Opener-Policy", "same-origin") ==
                 MHD_YES;
    if (!ok) {
        MHD_destroy_response(resp);
        return bl_reply_error(c, h, 503, "cannot answer the file (out of memory)");
    }
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    if (rc == MHD_YES)
        bl_http_count_status(h, status);
    MHD_destroy_response(resp);
    return rc;
}
