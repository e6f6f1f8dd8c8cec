/*
 * http.c — libmicrohttpd daemon, routing, authentication, body streaming
 * and response helpers. Endpoint logic lives in h_*.c.
 *
 * libmicrohttpd calls the access handler several times per request: first
 * with the headers (we route, authenticate and set up body decoding), then
 * once per body chunk, then once more with an empty chunk (we answer).
 * A request that fails early keeps consuming (and discarding) its body and
 * answers the error at the end, so clients always read a JSON error.
 */
#include "http/internal.h"

#include "common/utf8.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* One read-only connection per HTTP thread, closed when the thread ends. */
static pthread_key_t db_key;
static pthread_once_t db_once = PTHREAD_ONCE_INIT;

static void close_db(void *p)
{
    bl_db_close(p);
}

static void make_key(void)
{
    pthread_key_create(&db_key, close_db);
}

bl_db *bl_http_db(bl_http *h)
{
    pthread_once(&db_once, make_key);
    bl_db *db = pthread_getspecific(db_key);
    if (!db) {
        char path[BL_PATH_MAX], err[256] = "";
        if (bl_datadir_db(h->data_dir, path) || bl_db_open(path, 1, &db, err, sizeof err)) {
            fprintf(stderr, "beatline-server: read connection: %s\n", err);
            return NULL;
        }
        /* bounded per thread: a page cache of at most 2 MiB, and the sorts of
         * big queries (slow-methods groups every method) spill to temporary
         * files instead of memory */
        if (bl_db_exec(db, "PRAGMA cache_size = -2048; PRAGMA temp_store = FILE") != BL_OK)
            fprintf(stderr, "beatline-server: read connection: cannot set its cache size\n");
        pthread_setspecific(db_key, db);
    }
    return db;
}

void bl_req_fail(req *r, unsigned status, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = 1;
    r->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
}

static void count_status(bl_http *h, unsigned status)
{
    if (status < 600)
        atomic_fetch_add(&h->status_count[status], 1);
}

enum MHD_Result bl_reply_text(struct MHD_Connection *c, bl_http *h, unsigned status,
                              const char *type, const char *text, size_t n)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(n, (void *)(uintptr_t)text, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    count_status(h, status);
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result bl_reply_json(struct MHD_Connection *c, bl_http *h, unsigned status,
                              json_t *body)
{
    int retry = status == 503;
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!s)
        return bl_reply_text(c, h, 500, "application/json", "{\"error\":\"out of memory\"}", 25);
    size_t n = strlen(s);
    s[n] = '\0';
    enum MHD_Result rc;
    struct MHD_Response *resp = MHD_create_response_from_buffer(n, s, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (retry)
        MHD_add_response_header(resp, "Retry-After", "5");
    count_status(h, status);
    rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result bl_reply_buf(struct MHD_Connection *c, bl_http *h, unsigned status,
                             const char *type, bl_buf *b)
{
    if (!b->data && bl_buf_grow_to(b, 1) != BL_OK)
        return bl_reply_text(c, h, 500, "application/json", "{\"error\":\"out of memory\"}", 25);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b->len, b->data, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        bl_buf_cleanup(b);
        return MHD_NO;
    }
    /* MHD frees the text; its charge is given back when the request completes */
    b->data = NULL;
    b->len = b->alloc = 0;
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    count_status(h, status);
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

json_t *bl_json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    bl_buf b;
    bl_buf_init(&b, 0);
    if (bl_utf8_repair(s, strlen(s), &b) == BL_OK && b.data)
        j = json_string(b.data);
    bl_buf_cleanup(&b);
    return j;
}

enum MHD_Result bl_reply_error(struct MHD_Connection *c, bl_http *h, unsigned status,
                               const char *msg)
{
    json_t *o = json_object();
    json_t *t = bl_json_text(msg);
    if (o && t)
        json_object_set_new(o, "error", t);
    else
        json_decref(t);
    return bl_reply_json(c, h, status, o);
}

const char *bl_arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

int bl_req_auth(struct MHD_Connection *c, bl_http *h, req *r, bl_role role)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) {
        bl_req_fail(r, 401, "missing 'Authorization: Bearer KEY'");
        return -1;
    }
    const char *key = auth + 7;
    while (*key == ' ')
        key++;
    bl_db *db = bl_http_db(h);
    if (!db) {
        bl_req_fail(r, 503, "database unavailable");
        return -1;
    }
    int64_t id;
    bl_err e = bl_apps_find(db, r->app, &id);
    if (e == BL_ENOTFOUND) {
        bl_req_fail(r, 404, "unknown app '%s'", r->app);
        return -1;
    }
    if (e) {
        bl_req_fail(r, 500, "database error");
        return -1;
    }
    e = bl_apps_auth(db, r->app, key, role, &r->app_id);
    if (e == BL_EINVAL) {
        static const char *const need[3] = { "an ingest", "an upload", "a read" };
        bl_req_fail(r, 403, "this endpoint needs %s key of app '%s'", need[role], r->app);
        return -1;
    }
    if (e) {
        bl_req_fail(r, 500, "database error");
        return -1;
    }
    return 0;
}

/* ---- request memory, counted against c.max_inflight -------------------
 * Every buffer a request holds is charged to h->inflight before it is
 * allocated (r->held sums the request's share), so all requests together
 * never hold more than max_inflight: the raw batch body, the decompressed
 * body, the decoder's state and window, and response text built with
 * bl_req_reserve. What a request still holds is given back when it
 * completes (on_completed). */

static int take(req *r, uint64_t n)
{
    bl_http *h = r->h;
    uint64_t cur = atomic_load(&h->inflight);
    do {
        if (cur > h->c.max_inflight || n > h->c.max_inflight - cur)
            return -1;
    } while (!atomic_compare_exchange_weak(&h->inflight, &cur, cur + n));
    r->held += n;
    return 0;
}

static void give(req *r, uint64_t n)
{
    atomic_fetch_sub(&r->h->inflight, n);
    r->held -= n;
}

int bl_req_take(req *r, uint64_t n)
{
    return take(r, n);
}

void bl_req_give(req *r, uint64_t n)
{
    give(r, n);
}

static int dec_take(void *ctx, size_t n)
{
    return take(ctx, n);
}

static void dec_give(void *ctx, size_t n)
{
    give(ctx, n);
}

/* Buffers grow by doubling up to 4 MiB, then by an eighth: a charged
 * buffer holds at most 1/8 more than its content. */
#define GROW_DOUBLE_MAX ((size_t)4 << 20)

bl_err bl_req_reserve(req *r, bl_buf *b, size_t extra)
{
    if (extra > b->cap_max || b->len > b->cap_max - extra)
        return BL_ETOOBIG;
    size_t need = b->len + extra + 1;
    if (need <= b->alloc)
        return BL_OK;
    size_t n = b->mapped                    ? need /* committed in 64 KiB steps, no copies */
               : b->alloc < 128             ? 256
               : b->alloc < GROW_DOUBLE_MAX ? b->alloc * 2
                                            : b->alloc + b->alloc / 8;
    if (n < need)
        n = need;
    if (n - 1 > b->cap_max)
        n = b->cap_max + 1; /* >= need: need - 1 <= cap_max was checked */
    n = bl_buf_grow_size(b, n);
    if (take(r, n - b->alloc) != 0)
        return BL_ENOMEM;
    size_t before = b->alloc;
    bl_err e = bl_buf_grow_to(b, n);
    if (e)
        give(r, n - before);
    return e;
}

bl_err bl_req_append(req *r, bl_buf *b, const void *p, size_t n)
{
    bl_err e = bl_req_reserve(r, b, n);
    if (e)
        return e;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return BL_OK;
}

void bl_req_buf_free(req *r, bl_buf *b)
{
    give(r, b->alloc);
    bl_buf_cleanup(b);
}

/* Frees what the body holds once the request has failed: its error is
 * answered without it, and the memory goes back to other requests now
 * rather than when the client has finished sending. */
static void release_body(req *r)
{
    bl_decomp_free(r->dec);
    r->dec = NULL;
    bl_req_buf_free(r, &r->raw);
    bl_req_buf_free(r, &r->body);
}

/* A request body buffer (mapped: see bl_buf_init_mapped), its first
 * committed bytes charged; -1 over the budget. */
static int body_buf_init(req *r, bl_buf *b, size_t cap)
{
    bl_buf_cleanup(b);
    bl_buf_init_mapped(b, cap);
    if (take(r, b->alloc) != 0) {
        bl_buf_cleanup(b);
        return -1;
    }
    return 0;
}

/* Decompressed bytes into r->body. */
static bl_err sink_buf(void *ctx, const void *p, size_t n)
{
    req *r = ctx;
    return bl_req_append(r, &r->body, p, n);
}

/* Identity batches: the raw body (r->raw) is the batch; no second copy. */
static bl_err sink_none(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
    return BL_OK;
}

/* The largest body as sent: uploads stream to disk and may be as large as
 * what they decompress to; everything else is held in memory. */
static uint64_t raw_limit(const bl_http *h, const req *r)
{
    if (r->route == R_MAPPING)
        return h->c.max_mapping;
    if (r->route == R_METHODIDS)
        return h->c.max_decompressed;
    return h->c.max_body;
}

int bl_req_body_begin(struct MHD_Connection *c, bl_http *h, req *r, uint64_t max_out,
                      bl_decomp_sink sink, void *ctx)
{
    const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    if (bl_encoding_parse(ce, &r->enc) != 0) {
        bl_req_fail(r, 415, "unsupported Content-Encoding '%s' (use identity, gzip or zstd)", ce);
        return -1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    unsigned long long declared = 0;
    if (cl) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (*end == '\0' && v > raw_limit(h, r)) {
            bl_req_fail(r, 413, "body of %llu bytes is over the limit of %llu bytes", v,
                        (unsigned long long)raw_limit(h, r));
            return -1;
        }
        if (*end == '\0' && end != cl)
            declared = v;
    }
    bl_buf *whole = NULL; /* the buffer that will hold the body as sent, if any */
    if (!sink) {
        int identity_batch = r->route == R_BATCHES && r->enc == BL_ENC_IDENTITY;
        if ((!identity_batch && body_buf_init(r, &r->body, max_out) != 0) ||
            (r->route == R_BATCHES && body_buf_init(r, &r->raw, h->c.max_body) != 0)) {
            bl_req_fail(r, 503, "the server is busy with other uploads; retry later");
            release_body(r);
            return -1;
        }
        ctx = r;
        if (identity_batch) {
            sink = sink_none;
            whole = &r->raw;
        } else {
            sink = sink_buf;
            whole = r->route == R_BATCHES ? &r->raw : r->enc == BL_ENC_IDENTITY ? &r->body : NULL;
        }
    }
    /* a declared length within the limits is reserved (and charged) at
     * once: no growth, no slack */
    if (whole && declared && declared <= whole->cap_max) {
        bl_err e = bl_req_reserve(r, whole, (size_t)declared);
        if (e == BL_ENOMEM) {
            bl_req_fail(r, 503, "the server is busy with other uploads; retry later");
            return -1;
        }
    }
    bl_decomp_mem mem = { dec_take, dec_give, r };
    bl_err e = bl_decomp_new_mem(r->enc, max_out, sink, ctx, &mem, &r->dec);
    if (e != BL_OK) {
        bl_req_fail(r, 503, "the server is busy with other uploads; retry later");
        release_body(r);
        return -1;
    }
    return 0;
}

int bl_req_body_feed(bl_http *h, req *r, const char *data, size_t n)
{
    r->raw_bytes += n;
    atomic_fetch_add(&h->bytes_in, n);
    bl_err e = BL_OK;
    if (r->raw_bytes > raw_limit(h, r)) {
        bl_req_fail(r, 413, "body is over the limit of %llu bytes",
                    (unsigned long long)raw_limit(h, r));
        release_body(r);
        return -1;
    }
    if (r->route == R_BATCHES) /* kept as sent: it is what gets stored */
        e = bl_req_append(r, &r->raw, data, n);
    if (!e)
        e = bl_decomp_feed(r->dec, data, n);
    if (e == BL_ETOOBIG) {
        bl_req_fail(r, 413, "decompressed body is over the limit");
    } else if (e == BL_ENOMEM) {
        bl_req_fail(r, 503, "the server is busy with other uploads; retry later");
    } else if (e == BL_EFORMAT) {
        const char *why = bl_decomp_why(r->dec);
        if (why)
            bl_req_fail(r, 400, "%s", why);
        else
            bl_req_fail(r, 400, "body is not valid %s data",
                        r->enc == BL_ENC_GZIP ? "gzip" : r->enc == BL_ENC_ZSTD ? "zstd" : "");
    } else if (e) {
        bl_req_fail(r, 500, "cannot store the body: %s", bl_err_str(e));
    }
    if (e) {
        release_body(r);
        return -1;
    }
    return 0;
}

int bl_req_body_end(req *r)
{
    if (bl_decomp_end(r->dec) != BL_OK) {
        bl_req_fail(r, 400, "body ends inside a compressed frame (truncated)");
        release_body(r);
        return -1;
    }
    return 0;
}

/* Splits /v1/apps/{app}/... into route, app and build. */
static enum route route_of(const char *method, const char *url, req *r)
{
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), put = !strcmp(method, "PUT"),
        post = !strcmp(method, "POST");
    if (!strcmp(url, "/healthz"))
        return get ? R_HEALTH : R_NONE;
    if (!strcmp(url, "/metrics"))
        return get ? R_METRICS : R_NONE;
    if (strncmp(url, "/v1/apps/", 9) != 0)
        return R_NONE;
    const char *a = url + 9, *s = strchr(a, '/');
    if (!s || s == a)
        return R_NONE;
    if ((size_t)(s - a) >= sizeof r->app) {
        r->bad_name = 1;
        return R_NONE;
    }
    memcpy(r->app, a, (size_t)(s - a));
    r->app[s - a] = '\0';
    const char *rest = s;
    if (!strcmp(rest, "/batches"))
        return post ? R_BATCHES : R_NONE;
    if (!strcmp(rest, "/builds"))
        return get ? R_BUILDS : R_NONE;
    if (!strcmp(rest, "/slow-methods"))
        return get ? R_SLOW : R_NONE;
    if (!strcmp(rest, "/call-tree"))
        return get ? R_TREE : R_NONE;
    if (strncmp(rest, "/builds/", 8) != 0)
        return R_NONE;
    const char *b = rest + 8, *e = strrchr(b, '/');
    if (!e || e == b)
        return R_NONE;
    if ((size_t)(e - b) > BL_BUILD_NAME_MAX) {
        r->bad_name = 2;
        return R_NONE;
    }
    memcpy(r->build, b, (size_t)(e - b));
    r->build[e - b] = '\0';
    if (!strcmp(e, "/mapping"))
        return put ? R_MAPPING : R_NONE;
    if (!strcmp(e, "/method-ids"))
        return put ? R_METHODIDS : R_NONE;
    if (!strcmp(e, "/retrace"))
        return post ? R_RETRACE : R_NONE;
    return R_NONE;
}

static const bl_role route_role[] = {
    [R_MAPPING] = BL_ROLE_UPLOAD, [R_METHODIDS] = BL_ROLE_UPLOAD, [R_BATCHES] = BL_ROLE_INGEST,
    [R_BUILDS] = BL_ROLE_READ,    [R_SLOW] = BL_ROLE_READ,        [R_TREE] = BL_ROLE_READ,
    [R_RETRACE] = BL_ROLE_READ,
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    bl_http *h = cls;
    req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->fd = -1;
        r->h = h;
        bl_buf_init(&r->raw, h->c.max_body);
        *con_cls = r;
        r->route = route_of(method, url, r);
        if (r->bad_name) {
            bl_req_fail(r, 400, r->bad_name == 1 ? "bad app name (1-64 characters of A-Z a-z 0-9 . _ -)"
                                                 : "bad build name (1-128 bytes)");
            return MHD_YES;
        }
        if (r->route == R_NONE) {
            bl_req_fail(r, 404, "no endpoint %s %s", method, url);
            return MHD_YES;
        }
        if (r->app[0] && !bl_app_name_valid(r->app)) {
            bl_req_fail(r, 400, "bad app name");
            return MHD_YES;
        }
        if (r->build[0] && !bl_build_name_valid(r->build, strlen(r->build))) {
            bl_req_fail(r, 400, "bad build name (1-128 bytes, no control characters, '/' or '\\', "
                                "not '.' or '..')");
            return MHD_YES;
        }
        if (r->route >= R_MAPPING && bl_req_auth(c, h, r, route_role[r->route]) != 0)
            return MHD_YES;
        if (r->route == R_MAPPING || r->route == R_METHODIDS) {
            bl_h_upload_begin(c, h, r);
        } else if (r->route == R_BATCHES || r->route == R_RETRACE) {
            bl_req_body_begin(c, h, r, h->c.max_decompressed, NULL, NULL);
        }
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->failed)
            return MHD_YES; /* discard the rest of the body */
        if (r->route == R_MAPPING || r->route == R_METHODIDS) {
            bl_h_upload_feed(h, r, upload_data, n);
        } else if (r->route == R_BATCHES || r->route == R_RETRACE) {
            bl_req_body_feed(h, r, upload_data, n); /* batches: keeps the raw body too */
        } else {
            bl_req_fail(r, 400, "this endpoint takes no body");
        }
        return MHD_YES;
    }
    /* the whole request is in */
    if (!r->failed && r->dec && r->route != R_MAPPING && r->route != R_METHODIDS)
        bl_req_body_end(r);
    if (r->failed) {
        if (r->route == R_MAPPING || r->route == R_METHODIDS)
            bl_h_upload_abort(r);
        return bl_reply_error(c, h, r->status, r->err);
    }
    switch (r->route) {
    case R_HEALTH: return bl_h_health(c, h, r);
    case R_METRICS: return bl_h_metrics(c, h, r);
    case R_BUILDS: return bl_h_builds(c, h, r);
    case R_SLOW: return bl_h_slow(c, h, r);
    case R_TREE: return bl_h_tree(c, h, r);
    case R_RETRACE: return bl_h_retrace(c, h, r);
    case R_BATCHES: return bl_h_batch(c, h, r);
    case R_MAPPING:
    case R_METHODIDS: return bl_h_upload_finish(c, h, r);
    case R_NONE: break;
    }
    return bl_reply_error(c, h, 404, "not found");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    req *r = *con_cls;
    if (!r)
        return;
    if (r->route == R_MAPPING || r->route == R_METHODIDS)
        bl_h_upload_abort(r); /* no-op when finished */
    bl_decomp_free(r->dec); /* gives its state back */
    atomic_fetch_sub(&((bl_http *)cls)->inflight, r->held);
    bl_buf_cleanup(&r->raw);
    bl_buf_cleanup(&r->body);
    if (r->hash)
        XXH3_freeState(r->hash);
    free(r);
    *con_cls = NULL;
}

bl_err bl_http_start(const bl_http_config *c, bl_http **out, char *errbuf, size_t n)
{
    *out = NULL;
    bl_http *h = calloc(1, sizeof *h);
    if (!h)
        return BL_ENOMEM;
    h->c = *c;
    snprintf(h->data_dir, sizeof h->data_dir, "%s", c->data_dir);
    h->c.data_dir = h->data_dir;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    socklen_t sl;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, c->bind_addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(c->port);
        sl = sizeof *s4;
    } else if (inet_pton(AF_INET6, c->bind_addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(c->port);
        sl = sizeof *s6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(errbuf, n, "bad listen address '%s' (use an IP literal)", c->bind_addr);
        free(h);
        return BL_EINVAL;
    }
    (void)sl;
    h->d = MHD_start_daemon(flags, c->port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(c->threads ? c->threads : 4),
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)256,
                            MHD_OPTION_END);
    if (!h->d) {
        snprintf(errbuf, n, "cannot listen on %s:%u", c->bind_addr, (unsigned)c->port);
        free(h);
        return BL_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : c->port;
    *out = h;
    return BL_OK;
}

uint16_t bl_http_port(const bl_http *h)
{
    return h->port;
}

void bl_http_stop(bl_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
