/*
 * h_upload.c — PUT /v1/apps/{app}/builds/{build}/mapping and …/method-ids.
 *
 * The body is decompressed as it streams in (never buffered whole) into a
 * temporary file while its XXH3-128 hash is computed. At the end, under the
 * build's lock: the same content again → 200 "unchanged"; different content
 * for a build that has the file → 409 unless ?replace=true; otherwise the
 * file is validated (mapping: the index is built, mapping/mapindex.h;
 * method-IDs: parsed, ingest/methodid.h), moved into the build folder with
 * its hash, and the processor is told (it re-symbolicates the build and
 * processes batches that were waiting for it).
 *
 * With a PostgreSQL store (store/files.h) the build folder is this node's
 * cache of the store: it is made to agree with the store first, under the
 * build's lock (pipeline/buildcache.h), so "what the build has" is what any
 * node uploaded; an accepted file is stored in PostgreSQL (its content by
 * hash, then the build's record of it) before it is moved into the folder
 * and before the answer, so no 2xx depends on this node's disk.
 */
#include "http/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingest/methodid.h"
#include "ingest/namecheck.h"
#include "pipeline/buildcache.h"
#include "store/files.h"
#include "symbol/mapindex.h"

static bl_err sink_file(void *ctx, const void *p, size_t n)
{
    req *r = ctx;
    XXH3_128bits_update(r->hash, p, n);
    return bl_fd_write_all(r->fd, p, n);
}

int bl_h_upload_begin(struct MHD_Connection *c, bl_http *h, req *r)
{
    const char *rep = bl_arg(c, "replace");
    r->replace = rep && (!strcmp(rep, "true") || !strcmp(rep, "1"));
    r->hash = XXH3_createState();
    if (!r->hash || XXH3_128bits_reset(r->hash) != XXH_OK) {
        bl_req_fail(r, 500, "out of memory");
        return -1;
    }
    if (bl_tmpfile(h->data_dir, &r->fd, r->tmp) != BL_OK) {
        r->fd = -1;
        bl_req_fail(r, 500, "cannot create a temporary file");
        return -1;
    }
    uint64_t max = r->route == R_MAPPING ? h->c.max_mapping : h->c.max_decompressed;
    return bl_req_body_begin(c, h, r, max, sink_file, r);
}

int bl_h_upload_feed(bl_http *h, req *r, const char *data, size_t n)
{
    return bl_req_body_feed(h, r, data, n);
}

void bl_h_upload_abort(req *r)
{
    if (r->fd >= 0 || r->tmp[0]) {
        bl_file_abort(r->fd, r->tmp);
        r->fd = -1;
        r->tmp[0] = '\0';
    }
}

/* Writes text durably to dir/name (tmp + rename). */
static bl_err write_small(bl_http *h, const char *dir, const char *name, const char *text)
{
    char tmp[BL_PATH_MAX], dst[BL_PATH_MAX];
    int fd;
    bl_err e = bl_path_join(dst, dir, name);
    if (e)
        return e;
    e = bl_tmpfile(h->data_dir, &fd, tmp);
    if (e)
        return e;
    if ((e = bl_fd_write_all(fd, text, strlen(text)))) {
        bl_file_abort(fd, tmp);
        return e;
    }
    return bl_file_replace(fd, tmp, dst);
}

struct diag_first {
    uint64_t line;
    char msg[160];
};

static void map_diag(void *ctx, const bl_mi_diag *d)
{
    struct diag_first *f = ctx;
    if (!f->line) {
        f->line = d->line;
        snprintf(f->msg, sizeof f->msg, "%s", d->message);
    }
}

typedef struct diag_first diag_first;

/* XXH3-128 of the file at path as 32 hex digits into hex[33]. BL_EIO,
 * BL_ENOMEM. */
static bl_err hash_file(const char *path, char *hex)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    XXH3_state_t *st = XXH3_createState();
    if (!st || XXH3_128bits_reset(st) != XXH_OK) {
        XXH3_freeState(st);
        close(fd);
        return BL_ENOMEM;
    }
    bl_err e = BL_OK;
    char buf[65536];
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
        XXH3_128bits_update(st, buf, (size_t)n);
    }
    close(fd);
    XXH128_hash_t hv = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    if (!e)
        snprintf(hex, 33, "%016llx%016llx", (unsigned long long)hv.high64,
                 (unsigned long long)hv.low64);
    return e;
}

/* Whether dir/name exists. */
static int has_file(const char *dir, const char *name)
{
    char p[BL_PATH_MAX];
    return bl_path_join(p, dir, name) == BL_OK && access(p, F_OK) == 0;
}

static void mid_diag(void *ctx, uint64_t line, const char *message)
{
    diag_first *d = ctx;
    if (!d->line) {
        d->line = line;
        snprintf(d->msg, sizeof d->msg, "%s", message);
    }
}

/* Appends the namecheck.h warning to `warnings` when the method-ID file
 * `t`, read as original names, holds obfuscated names of the mapping index
 * at `idx_path` (nothing when there is no index there). Borrowed arguments. */
static bl_err names_warning(const bl_methodids *t, const char *idx_path, json_t *warnings)
{
    if (bl_methodids_obfuscated(t))
        return BL_OK;
    bl_mapindex *mi;
    if (bl_mapindex_open(idx_path, &mi) != BL_OK)
        return BL_OK; /* no mapping (yet): checked when it arrives */
    bl_names_check nc;
    int obf = 0;
    bl_err e = bl_names_check_run(t, mi, &nc, &obf);
    bl_mapindex_close(mi);
    if (!e && obf) {
        char w[900];
        bl_names_warning(&nc, w, sizeof w);
        if (json_array_append_new(warnings, json_string(w)) != 0)
            e = BL_ENOMEM;
    }
    return e;
}

/* Reads and parses the method-ID file at `path` (at most `max` bytes),
 * charging r's share of --max-inflight before each allocation: the file's
 * text (its size), then the table (arena: the size again; 32 bytes per
 * line; 16 KiB of page directory and 16 KiB per line's 4096-id page, at
 * most 32 MiB: ingest/methodid.c). *charged is what the caller gives back
 * (bl_req_give) once it has freed *t. BL_ENOTFOUND when the file cannot be
 * read, BL_ETOOBIG when the charge alone is over --max-inflight (it could
 * never be parsed; *need says how much), BL_ENOMEM when the budget is
 * spent now (or out of memory), else what bl_methodids_parse returns (*t
 * may then hold a table to free). */
static bl_err mid_load(req *r, const char *path, size_t max, bl_mid_diag_fn diag, void *dctx,
                       bl_methodids **t, uint64_t *bad, uint64_t *charged, uint64_t *need)
{
    *t = NULL;
    *charged = 0;
    *need = 0;
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > max)
        return BL_ENOTFOUND;
    uint64_t size = (uint64_t)st.st_size + 1;
    if (size > r->h->c.max_inflight) {
        *need = size;
        return BL_ETOOBIG;
    }
    if (bl_req_take(r, size) != 0)
        return BL_ENOMEM;
    *charged = size;
    char *text;
    size_t len;
    if (bl_read_file(path, max, &text, &len) != BL_OK)
        return BL_ENOTFOUND;
    uint64_t lines = 1;
    for (const char *q = text; (q = memchr(q, '\n', (size_t)(text + len - q))) != NULL; q++)
        lines++;
    uint64_t pages = lines * ((uint64_t)16 << 10);
    if (pages > ((uint64_t)32 << 20))
        pages = (uint64_t)32 << 20;
    uint64_t table = (uint64_t)len + 1 + 32 * lines + ((uint64_t)16 << 10) + pages;
    *need = size + table;
    if (*need > r->h->c.max_inflight) {
        free(text);
        return BL_ETOOBIG;
    }
    if (bl_req_take(r, table) != 0) {
        free(text);
        return BL_ENOMEM;
    }
    *charged += table;
    bl_err e = bl_methodids_parse(text, len, 0, diag, dctx, t, bad);
    free(text);
    return e;
}

/* The same for a mapping upload (index at idx_path) and the build's
 * current method-ID file in dir, if any (its parse charged to r).
 * BL_ENOMEM: out of memory or of --max-inflight. */
static bl_err names_warning_of_build(req *r, const char *dir, const char *idx_path,
                                     json_t *warnings)
{
    char path[BL_PATH_MAX];
    if (bl_path_join(path, dir, "method-ids.txt") != BL_OK)
        return BL_OK;
    bl_methodids *t = NULL;
    uint64_t bad, charged, need;
    bl_err e = mid_load(r, path, (size_t)r->h->c.max_decompressed, NULL, NULL, &t, &bad,
                        &charged, &need);
    /* no method-ID file (yet): checked when it arrives; one too big to
     * parse within --max-inflight: not checked */
    if (e == BL_ENOTFOUND || e == BL_ETOOBIG) {
        bl_req_give(r, charged);
        return BL_OK;
    }
    if (!e)
        e = names_warning(t, idx_path, warnings);
    bl_methodids_free(t);
    bl_req_give(r, charged);
    return e == BL_ENOMEM ? e : BL_OK;
}

enum MHD_Result bl_h_upload_finish(struct MHD_Connection *c, bl_http *h, req *r)
{
    int mapping = r->route == R_MAPPING;
    const char *fname = mapping ? "mapping.txt" : "method-ids.txt";
    const char *hname = mapping ? "mapping.hash" : "method-ids.hash";
    if (bl_req_body_end(r) != 0) {
        bl_h_upload_abort(r);
        return bl_reply_error(c, h, r->status, r->err);
    }
    if (fsync(r->fd) != 0) {
        bl_h_upload_abort(r);
        return bl_reply_error(c, h, 500, "cannot write the upload");
    }
    XXH128_hash_t hv = XXH3_128bits_digest(r->hash);
    char hex[40];
    snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)hv.high64,
             (unsigned long long)hv.low64);
    uint64_t bytes = bl_decomp_total(r->dec);

    char dir[BL_PATH_MAX], lockp[BL_PATH_MAX], path[BL_PATH_MAX], idx_tmp[BL_PATH_MAX] = "";
    if (bl_datadir_build_create(h->data_dir, r->app_id, r->build, dir) != BL_OK ||
        bl_path_join(lockp, dir, ".lock") != BL_OK) {
        bl_h_upload_abort(r);
        return bl_reply_error(c, h, 500, "cannot create the build folder");
    }
    int lfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (lfd < 0 || flock(lfd, LOCK_EX) != 0) {
        if (lfd >= 0)
            close(lfd);
        bl_h_upload_abort(r);
        return bl_reply_error(c, h, 500, "cannot lock the build");
    }
    enum MHD_Result rc;
    int obf_names = 0; /* a method-ID upload: its names are obfuscated */
    /* PostgreSQL store: the writable connection of this thread, and the
     * folder brought in line with the store (the lock is held) */
    bl_db *wdb = NULL;
    if (bl_http_store_remote(h)) {
        char cdir[BL_PATH_MAX];
        bl_err se = BL_EIO;
        if ((wdb = bl_http_db_rw(h)) != NULL)
            se = bl_buildcache_sync(wdb, h->data_dir, r->app_id, r->build, 1, cdir, NULL);
        if (se) {
            bl_h_upload_abort(r);
            if (wdb)
                fprintf(stderr, "beatline-server: upload to build %s: cannot read its files "
                                "from the store: %s (%s)\n",
                        r->build, bl_err_str(se), se == BL_EIO ? bl_db_errmsg(wdb) : "");
            rc = bl_reply_error(c, h, 503, "cannot read the build's files from the database; "
                                           "try again");
            flock(lfd, LOCK_UN);
            close(lfd);
            return rc;
        }
    }
    json_t *extra = json_object();
    json_t *warnings = json_array();
    /* `warnings` is extra's from here on, borrowed by this function: on a
     * failure json_object_set_new has freed it already */
    if (!extra || !warnings || json_object_set_new(extra, "warnings", warnings) != 0) {
        if (!extra)
            json_decref(warnings);
        bl_h_upload_abort(r);
        rc = bl_reply_error(c, h, 503, "out of memory");
        goto out;
    }
    /* compare with what the build has */
    char old[80] = "";
    char *od;
    if (bl_path_join(path, dir, hname) != BL_OK) {
        bl_h_upload_abort(r);
        rc = bl_reply_error(c, h, 500, "path too long");
        goto out;
    }
    size_t on;
    if (bl_read_file(path, 200, &od, &on) == BL_OK) {
        snprintf(old, sizeof old, "%.*s", (int)(on && od[on - 1] == '\n' ? on - 1 : on), od);
        free(od);
    }
    /* the hash file is written after its file: a file newer than its hash
     * (a crash between the two, or a file put there by hand) has its own
     * hash computed and recorded, and the processor is told */
    int resync = 0;
    if (old[0]) {
        char fpath[BL_PATH_MAX], fresh[40];
        struct stat fs, hs;
        if (bl_path_join(fpath, dir, fname) == BL_OK && stat(fpath, &fs) == 0 &&
            stat(path, &hs) == 0 &&
            (fs.st_mtim.tv_sec > hs.st_mtim.tv_sec ||
             (fs.st_mtim.tv_sec == hs.st_mtim.tv_sec && fs.st_mtim.tv_nsec > hs.st_mtim.tv_nsec))) {
            char line[48];
            if (hash_file(fpath, fresh) != BL_OK ||
                snprintf(line, sizeof line, "%s\n", fresh) >= (int)sizeof line ||
                write_small(h, dir, hname, line) != BL_OK) {
                bl_h_upload_abort(r);
                rc = bl_reply_error(c, h, 500, "cannot read the build's stored file back");
                goto out;
            }
            resync = strcmp(old, fresh) != 0;
            snprintf(old, sizeof old, "%s", fresh);
        }
    }
    if (resync && bl_processor_build_changed(h->c.proc, r->app_id, r->build) != BL_OK) {
        bl_h_upload_abort(r);
        rc = bl_reply_error(c, h, 503, "out of memory");
        goto out;
    }
    if (old[0] && !strcmp(old, hex)) {
        bl_h_upload_abort(r);
        if (mapping) {
            /* the same mapping again: its index is repaired if it needs it
             * (the build's lock is held: the _locked variant) */
            bl_mapindex *mi;
            bl_err e = bl_datadir_open_index_locked(h->data_dir, dir, &mi, NULL);
            int err = errno;
            bl_mapindex_close(mi);
            if (e) {
                int busy = e == BL_ENOMEM || (e == BL_EIO && (err == EMFILE || err == ENFILE));
                rc = bl_reply_error(c, h, busy ? 503 : 500,
                                    busy ? "out of memory or file descriptors; try again"
                                         : "the build's mapping index cannot be opened or "
                                           "rebuilt from its mapping");
                goto out;
            }
        }
        rc = bl_reply_json(c, h, 200,
                           json_pack("{s:s,s:s,s:s,s:I,s:s,s:s}", "app", r->app, "build",
                                     r->build, "file", mapping ? "mapping" : "method-ids",
                                     "bytes", (json_int_t)bytes, "hash", hex, "status",
                                     "unchanged"));
        goto out;
    }
    if (old[0] && !r->replace) {
        bl_h_upload_abort(r);
        char msg[300];
        snprintf(msg, sizeof msg,
                 "build '%s' already has a different %s; add ?replace=true to replace it",
                 r->build, mapping ? "mapping" : "method-ID file");
        rc = bl_reply_error(c, h, 409, msg);
        goto out;
    }
    if (mapping) {
        /* the index is built aside and moved in with the mapping: a
         * rejected upload never touches the build's current files */
        bl_mi_stats st;
        diag_first mf = { 0, "" };
        bl_mi_build_opts mo = { .diag = map_diag, .diag_ctx = &mf };
        bl_err e = BL_OK;
        if (snprintf(idx_tmp, sizeof idx_tmp, "%s.idx", r->tmp) >= (int)sizeof idx_tmp)
            e = BL_ETOOBIG;
        if (!e)
            e = bl_mapindex_build_file(r->tmp, idx_tmp, &mo, &st);
        if (e) {
            bl_h_upload_abort(r);
            unlink(idx_tmp);
            rc = bl_reply_error(c, h, e == BL_ENOMEM ? 503 : 500, "cannot index the mapping");
            goto out;
        }
        if (st.classes == 0) {
            bl_h_upload_abort(r);
            unlink(idx_tmp);
            char msg[400];
            if (mf.line)
                snprintf(msg, sizeof msg,
                         "not a ProGuard/R8 mapping file: line %llu: %s (%llu malformed lines, "
                         "no class line)",
                         (unsigned long long)mf.line, mf.msg, (unsigned long long)st.malformed);
            else
                snprintf(msg, sizeof msg, "not a ProGuard/R8 mapping file: no class line");
            rc = bl_reply_error(c, h, 400, msg);
            goto out;
        }
        if (names_warning_of_build(r, dir, idx_tmp, warnings) != BL_OK) {
            bl_h_upload_abort(r);
            unlink(idx_tmp);
            rc = bl_reply_error(c, h, 503, "the server is busy with other uploads (out of "
                                           "memory for the method-ID file); retry later");
            goto out;
        }
        if (json_object_set_new(extra, "classes", json_integer(st.classes)) != 0 ||
            json_object_set_new(extra, "methods", json_integer(st.methods)) != 0 ||
            json_object_set_new(extra, "malformed_lines",
                                json_integer((json_int_t)st.malformed)) != 0) {
            bl_h_upload_abort(r);
            unlink(idx_tmp);
            rc = bl_reply_error(c, h, 503, "out of memory");
            goto out;
        }
    } else {
        bl_methodids *t = NULL;
        uint64_t bad = 0, charged = 0, need = 0;
        diag_first df = { 0, "" };
        bl_err e = mid_load(r, r->tmp, (size_t)h->c.max_decompressed, mid_diag, &df, &t, &bad,
                            &charged, &need);
        if (e == BL_ETOOBIG) {
            bl_req_give(r, charged);
            bl_h_upload_abort(r);
            char msg[200];
            snprintf(msg, sizeof msg,
                     "the method-ID file needs about %llu bytes of memory to check, more "
                     "than --max-inflight (%llu bytes)",
                     (unsigned long long)need, (unsigned long long)h->c.max_inflight);
            rc = bl_reply_error(c, h, 413, msg);
            goto out;
        }
        if (e == BL_ENOTFOUND) {
            bl_req_give(r, charged);
            bl_h_upload_abort(r);
            rc = bl_reply_error(c, h, 500, "cannot read the upload back");
            goto out;
        }
        if (e == BL_ENOMEM) {
            bl_methodids_free(t);
            bl_req_give(r, charged);
            bl_h_upload_abort(r);
            rc = bl_reply_error(c, h, 503, "the server is busy with other uploads; retry later");
            goto out;
        }
        if (e || bl_methodids_count(t) == 0) {
            bl_h_upload_abort(r);
            char msg[300];
            if (df.line)
                snprintf(msg, sizeof msg, "not a method-ID file: line %llu: %s",
                         (unsigned long long)df.line, df.msg);
            else
                snprintf(msg, sizeof msg, "not a method-ID file: no 'methodId,flags,class "
                                          "method descriptor' line");
            rc = bl_reply_error(c, h, 400, msg);
            bl_methodids_free(t);
            bl_req_give(r, charged);
            goto out;
        }
        /* a build id in the header (schema/build-id.md) that is not the one
         * the build's name ends in: the file of another build */
        const char *bid = bl_methodids_build_id(t);
        if (bid && bl_build_name_conflicts(r->build, bid)) {
            bl_h_upload_abort(r);
            char sh[BL_BUILD_SHORT_LEN + 1], msg[400];
            bl_build_short_id(bid, sh);
            snprintf(msg, sizeof msg,
                     "the method-ID file is of build id %s (short id %s), not of build '%.128s'",
                     bid, sh, r->build);
            rc = bl_reply_error(c, h, 400, msg);
            bl_methodids_free(t);
            bl_req_give(r, charged);
            goto out;
        }
        int oom =
            json_object_set_new(extra, "build_id", bid ? json_string(bid) : json_null()) != 0 ||
            json_object_set_new(extra, "methods", json_integer(bl_methodids_count(t))) != 0 ||
            json_object_set_new(extra, "malformed_lines",
                                json_integer((json_int_t)bl_methodids_malformed(t))) != 0 ||
            json_object_set_new(extra, "names",
                                json_string(bl_methodids_obfuscated(t) ? "obfuscated"
                                                                       : "original")) != 0;
        char idx[BL_PATH_MAX];
        if (oom || (bl_path_join(idx, dir, "mapping.idx") == BL_OK &&
                    names_warning(t, idx, warnings) == BL_ENOMEM)) {
            bl_methodids_free(t);
            bl_req_give(r, charged);
            bl_h_upload_abort(r);
            rc = bl_reply_error(c, h, 503, "out of memory");
            goto out;
        }
        obf_names = bl_methodids_obfuscated(t);
        bl_methodids_free(t);
        bl_req_give(r, charged);
    }
    /* PostgreSQL store: durable there first (content, then the build's
     * record of it); a build that got another file from another node
     * meanwhile is a conflict as above */
    char prev[BL_FILES_HASH_LEN + 1] = "";
    if (wdb) {
        bl_file_kind kind = mapping ? BL_FILE_MAPPING : BL_FILE_METHODIDS;
        /* its memory (a chunk read, the same in libpq's output buffer, and
         * slack) is charged to --max-inflight like the rest of the upload */
        uint64_t charge = 3 * (uint64_t)BL_FILES_CHUNK;
        if (bl_req_take(r, charge) != 0) {
            bl_h_upload_abort(r);
            unlink(idx_tmp);
            rc = bl_reply_error(c, h, 503, "the server is busy with other uploads; retry later");
            goto out;
        }
        bl_err se = bl_files_put(wdb, hex, r->tmp, bytes);
        bl_req_give(r, charge);
        if (!se)
            se = bl_files_build_set(wdb, r->app_id, r->build, kind, hex, bytes, bl_now_us(),
                                    r->replace, prev);
        if (se == BL_EINVAL) {
            bl_h_upload_abort(r);
            unlink(idx_tmp);
            char msg[300];
            snprintf(msg, sizeof msg,
                     "build '%s' already has a different %s; add ?replace=true to replace it",
                     r->build, mapping ? "mapping" : "method-ID file");
            rc = bl_reply_error(c, h, 409, msg);
            goto out;
        }
        if (se) {
            bl_h_upload_abort(r);
            unlink(idx_tmp);
            fprintf(stderr, "beatline-server: upload to build %s: cannot store it in the "
                            "database: %s (%s)\n",
                    r->build, bl_err_str(se), se == BL_EIO ? bl_db_errmsg(wdb) : "");
            rc = bl_reply_error(c, h, 503, "cannot store the upload in the database; try again");
            goto out;
        }
        if (prev[0] && !old[0] && strcmp(prev, hex) != 0)
            snprintf(old, sizeof old, "%s", prev); /* replaced another node's upload */
    }
    if (bl_path_join(path, dir, fname) != BL_OK ||
        bl_file_replace(r->fd, r->tmp, path) != BL_OK) {
        r->fd = -1;
        bl_h_upload_abort(r);
        rc = bl_reply_error(c, h, 500, "cannot store the upload");
        goto out;
    }
    r->fd = -1;
    r->tmp[0] = '\0';
    if (wdb)
        bl_buildcache_note(path, hex); /* hashed while received: not read again */
    if (mapping) {
        char idx[BL_PATH_MAX];
        if (bl_path_join(idx, dir, "mapping.idx") != BL_OK || rename(idx_tmp, idx) != 0 ||
            bl_fsync_dir(dir) != BL_OK) {
            unlink(idx_tmp);
            rc = bl_reply_error(c, h, 500, "cannot store the mapping index");
            goto out;
        }
    }
    char line[80];
    snprintf(line, sizeof line, "%s\n", hex);
    if (write_small(h, dir, hname, line) != BL_OK) {
        rc = bl_reply_error(c, h, 500, "cannot store the upload's hash");
        goto out;
    }
    if (bl_processor_build_changed(h->c.proc, r->app_id, r->build) != BL_OK) {
        rc = bl_reply_error(c, h, 503, "out of memory");
        goto out;
    }
    /* When the build can now be processed (method-ID file, and the mapping
     * when its names are obfuscated), the quota tracker learns it before
     * the answer, so a batch sent right after it is never refused by a
     * quota; the writer confirms it (or withdraws it when the build cannot
     * be symbolicated) when it registers the build. */
    int ready = mapping ? has_file(dir, "method-ids.hash")
                        : !obf_names || has_file(dir, "mapping.hash");
    if (ready && bl_quota_set_ready(bl_processor_quota(h->c.proc), r->app_id, r->build, 1) !=
                     BL_OK) {
        rc = bl_reply_error(c, h, 503, "out of memory");
        goto out;
    }
    json_t *body = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s}", "app", r->app, "build", r->build,
                             "file", mapping ? "mapping" : "method-ids", "bytes",
                             (json_int_t)bytes, "hash", hex, "status",
                             old[0] ? "replaced" : "created");
    if (!body || json_object_update(body, extra) != 0) {
        /* stored and told to the processor: only the answer is lost */
        json_decref(body);
        rc = bl_reply_error(c, h, 503, "out of memory");
        goto out;
    }
    rc = bl_reply_json(c, h, old[0] ? 200 : 201, body);
out:
    json_decref(extra);
    flock(lfd, LOCK_UN);
    close(lfd);
    return rc;
}
