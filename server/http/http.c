/*
 * http.c — libmicrohttpd daemon, routing, authentication, body streaming
 * and response helpers. Endpoint logic lives in h_*.c.
 *
 * libmicrohttpd calls the access handler several times per request: first
 * with the headers (we route, authenticate and set up body decoding), then
 * once per body chunk, then once more with an empty chunk (we answer).
 * Everything that can be decided on the headers (size caps, framing, route,
 * names, key, Content-Length over the limit) is answered on that first
 * call, before any body byte is read: libmicrohttpd then sends no
 * "100 Continue", and the answer carries "Connection: close" so the unread
 * body is never consumed. A body that fails while streaming (over the
 * limit, corrupt compressed data) is answered at once the same way.
 *
 * Total-time limits (slowloris): libmicrohttpd's own timeout is per idle
 * period only, so a client sending a byte every few seconds would hold a
 * connection for ever. Each connection is tracked from accept to close
 * (on_connection); a watchdog thread answers 408 and shuts the socket down
 * when the headers are not in within header_timeout of the connection (or
 * of the end of the previous answer on a kept-alive connection), or when a
 * body older than body_timeout has averaged less than min_body_rate. When
 * three quarters of max_connections are open, the header limit drops to
 * 2 s so slow clients cannot crowd out the others.
 */
#include "http/internal.h"

#include "common/utf8.h"
#include "pipeline/datahealth.h"
#include "pipeline/buildcache.h"
#include "store/builds.h"
#include "store/files.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { CONN_HEADERS, CONN_BODY, CONN_BUSY };

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Each HTTP thread's own connections (one read-only, one writable), closed
 * when the thread ends. */
static void close_db(void *p)
{
    bl_db_close(p);
}

/* The calling thread's connection kept under *key (made once through
 * *once and make_key), opened on first use (read-only when ro; `what`
 * names it in messages) and renewed when it was lost (PostgreSQL: the
 * server restarted or the network broke; a no-op on SQLite and on a working
 * connection). NULL, with a message, when it cannot be opened or renewed
 * (stopped, starting up): callers answer 503. The connection belongs to the
 * thread and is closed when the thread ends. */
static bl_db *thread_db(bl_http *h, pthread_key_t *key, pthread_once_t *once,
                        void (*make_key)(void), int ro, const char *what)
{
    pthread_once(once, make_key);
    bl_db *db = pthread_getspecific(*key);
    if (!db) {
        char path[BL_PATH_MAX], err[256] = "";
        if (bl_datadir_db(h->data_dir, path) || bl_db_open(path, ro, &db, err, sizeof err)) {
            fprintf(stderr, "beatline-server: %s: %s\n", what, err);
            return NULL;
        }
        /* bounded per thread (store/db.h) */
        if (ro && bl_db_bound_memory(db) != BL_OK)
            fprintf(stderr, "beatline-server: %s: cannot set its cache size\n", what);
        pthread_setspecific(*key, db);
    } else {
        int renewed;
        if (bl_db_reconnect(db, &renewed) != BL_OK) {
            fprintf(stderr, "beatline-server: %s: %s\n", what, bl_db_errmsg(db));
            return NULL;
        }
    }
    return db;
}

static pthread_key_t db_key;
static pthread_once_t db_once = PTHREAD_ONCE_INIT;

static void make_key(void)
{
    pthread_key_create(&db_key, close_db);
}

bl_db *bl_http_db(bl_http *h)
{
    return thread_db(h, &db_key, &db_once, make_key, 1, "read connection");
}

/* A writable connection per HTTP thread, opened on first use: uploads with
 * a PostgreSQL store write their files there (store/files.h). */
static pthread_key_t db_rw_key;
static pthread_once_t db_rw_once = PTHREAD_ONCE_INIT;

static void make_rw_key(void)
{
    pthread_key_create(&db_rw_key, close_db);
}

bl_db *bl_http_db_rw(bl_http *h)
{
    return thread_db(h, &db_rw_key, &db_rw_once, make_rw_key, 0, "writable connection");
}

int bl_http_store_remote(bl_http *h)
{
    char path[BL_PATH_MAX];
    return bl_datadir_db(h->data_dir, path) == BL_OK && bl_db_url_is_pg(path);
}

bl_err bl_http_build_dir(bl_http *h, req *r, int64_t app_id, const char *build, char *dir)
{
    if (bl_datadir_build(h->data_dir, app_id, build, dir) != BL_OK)
        return BL_EINVAL;
    if (!bl_http_store_remote(h))
        return BL_OK;
    bl_db *db = bl_http_db(h);
    if (!db)
        return BL_EIO; /* PostgreSQL unreachable for now */
    /* a fetch holds a chunk, its hex form in libpq's result and the
     * decoded copy: charged like the rest of the request */
    uint64_t charge = 3 * (uint64_t)BL_FILES_CHUNK;
    if (bl_req_take(r, charge) != 0)
        return BL_ENOMEM;
    bl_err e = bl_buildcache_sync(db, h->data_dir, app_id, build, 0, dir, NULL);
    bl_req_give(r, charge);
    if (e && e != BL_EINVAL)
        fprintf(stderr, "beatline-server: build %s: cannot bring its files from the store: "
                        "%s (%s)\n",
                build, bl_err_str(e), e == BL_EIO ? bl_db_errmsg(db) : "");
    return e;
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

void bl_http_count_status(bl_http *h, unsigned status)
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
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    if (rc == MHD_YES)
        bl_http_count_status(h, status);
    MHD_destroy_response(resp);
    return rc;
}

/* Queues body (stolen) as JSON. retry: Retry-After seconds (0: none); close
 * adds "Connection: close" (an early answer: the rest of the request is
 * never read). */
static enum MHD_Result queue_json(struct MHD_Connection *c, bl_http *h, unsigned status,
                                  json_t *body, unsigned retry, int close)
{
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!s)
        return bl_reply_text(c, h, 500, "application/json", "{\"error\":\"out of memory\"}", 25);
    size_t n = strlen(s);
    enum MHD_Result rc;
    struct MHD_Response *resp = MHD_create_response_from_buffer(n, s, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (retry) {
        char ra[16];
        snprintf(ra, sizeof ra, "%u", retry);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    if (close)
        MHD_add_response_header(resp, "Connection", "close");
    if (status == 405)
        MHD_add_response_header(resp, "Allow", "GET, HEAD");
    rc = MHD_queue_response(c, status, resp);
    if (rc == MHD_YES)
        bl_http_count_status(h, status);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result bl_reply_json(struct MHD_Connection *c, bl_http *h, unsigned status,
                              json_t *body)
{
    return queue_json(c, h, status, body, status == 503 ? 5 : 0, 0);
}

static json_t *error_body(const char *msg)
{
    json_t *o = json_object();
    json_t *t = bl_json_text(msg);
    if (!o || !t) {
        json_decref(o);
        json_decref(t);
        return NULL;
    }
    if (json_object_set_new(o, "error", t) != 0) { /* t is released by it */
        json_decref(o);
        return NULL;
    }
    return o;
}

enum MHD_Result bl_reply_buf(struct MHD_Connection *c, bl_http *h, unsigned status,
                             const char *type, bl_buf *b)
{
    if (!b->data && bl_buf_grow_to(b, 1) != BL_OK)
        return bl_reply_text(c, h, 500, "application/json", "{\"error\":\"out of memory\"}", 25);
    /* MHD_RESPMEM_MUST_FREE hands the text to free(): only heap storage may
     * go that way. A mapped buffer (bl_buf_init_mapped) is copied by MHD
     * instead and unmapped here; its charge (r->held) still covers the
     * copy, and is given back when the request completes. */
    int mapped = b->mapped != 0;
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        b->len, b->data, mapped ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        bl_buf_cleanup(b);
        return MHD_NO;
    }
    if (mapped) {
        bl_buf_cleanup(b);
    } else { /* MHD frees the text */
        b->data = NULL;
        b->len = b->alloc = 0;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    bl_http_count_status(h, status);
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
    return bl_reply_error_retry(c, h, status, msg, status == 503 ? 5 : 0);
}

enum MHD_Result bl_reply_error_retry(struct MHD_Connection *c, bl_http *h, unsigned status,
                                     const char *msg, unsigned retry)
{
    return queue_json(c, h, status, error_body(msg), retry, 0);
}

const char *bl_arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

bl_db *bl_http_db_build(struct MHD_Connection *c, bl_http *h, req *r, const char *build,
                        enum MHD_Result *rc)
{
    bl_db *db = bl_http_db(h);
    if (!db) {
        *rc = bl_reply_error(c, h, 503, "database unavailable");
        return NULL;
    }
    if (build) {
        bl_err be = bl_builds_exists(db, r->app_id, build);
        if (be) {
            char err[160];
            snprintf(err, sizeof err, "unknown build '%.100s'", build);
            /* a connection lost meanwhile (PostgreSQL stopping or
             * restarting) is unavailable for a moment, as in bl_req_auth */
            *rc = be == BL_ENOTFOUND        ? bl_reply_error(c, h, 404, err)
                  : bl_db_connection_lost(db) ? bl_reply_error(c, h, 503, "database unavailable")
                                            : bl_reply_error(c, h, 500, "database error");
            return NULL;
        }
    }
    return db;
}

bl_db *bl_http_db_pick(struct MHD_Connection *c, bl_http *h, req *r, int64_t *build_id,
                       char *bname, size_t bcap, enum MHD_Result *rc)
{
    char err[200];
    const char *build = bl_arg(c, "build");
    bl_db *db = bl_http_db(h);
    if (!db) {
        *rc = bl_reply_error(c, h, 503, "database unavailable");
        return NULL;
    }
    bl_err be = bl_builds_pick(db, r->app_id, build, build_id, bname, bcap);
    if (be == BL_ENOTFOUND) {
        snprintf(err, sizeof err, build ? "unknown build '%.100s'" : "app has no builds%s",
                 build ? build : "");
        *rc = bl_reply_error(c, h, 404, err);
        return NULL;
    }
    if (be) {
        *rc = bl_reply_error(c, h, 500, "database error");
        return NULL;
    }
    return db;
}

int bl_arg_i64(struct MHD_Connection *c, const char *name, int64_t dflt, int64_t min,
               int64_t max, int64_t *out, char *err, size_t n)
{
    const char *v = bl_arg(c, name);
    if (!v || !*v) {
        *out = dflt;
        return 0;
    }
    int64_t x = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9'; p++) {
        x = x * 10 + (*p - '0');
        if (x > max)
            break;
    }
    if (*p || x < min || x > max) {
        snprintf(err, n, "'%s' must be an integer from %lld to %lld (decimal digits only)", name,
                 (long long)min, (long long)max);
        return -1;
    }
    *out = x;
    return 0;
}

int bl_parse_method(const char *s, char *cls, size_t ccap, char *name, size_t ncap,
                    const char **desc)
{
    const char *paren = strchr(s, '(');
    size_t sl = paren ? (size_t)(paren - s) : strlen(s);
    const char *dot = NULL;
    for (size_t i = 0; i < sl; i++)
        if (s[i] == '.')
            dot = s + i;
    if (!dot || dot == s || (size_t)(dot - s) >= ccap || dot + 1 == s + sl ||
        sl - (size_t)(dot - s) - 1 >= ncap)
        return -1;
    memcpy(cls, s, (size_t)(dot - s));
    cls[dot - s] = '\0';
    memcpy(name, dot + 1, sl - (size_t)(dot - s) - 1);
    name[sl - (size_t)(dot - s) - 1] = '\0';
    *desc = paren;
    return 0;
}

int bl_arg_thread(struct MHD_Connection *c, int *main_only, char *err, size_t n)
{
    const char *v = bl_arg(c, "thread");
    if (!v || !strcmp(v, "all")) {
        *main_only = 0;
        return 0;
    }
    if (!strcmp(v, "main")) {
        *main_only = 1;
        return 0;
    }
    snprintf(err, n, "'thread' must be main or all");
    return -1;
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
    /* The key is checked before anything about the app is looked at: a key
     * that is not a live key of this app with this role gets the same 403
     * whether the app exists or not (one query by the key's hash, so the
     * time does not tell either). Only a valid key reveals the app. */
    bl_err e = bl_apps_auth(db, r->app, key, role, &r->app_id);
    if (e == BL_EINVAL || e == BL_ENOTFOUND) {
        static const char *const need[3] = { "an ingest", "an upload", "a read" };
        bl_req_fail(r, 403, "this endpoint needs %s key of app '%s'", need[role], r->app);
        return -1;
    }
    if (e) {
        /* the connection went while the key was checked (PostgreSQL
         * stopping or restarting): unavailable for a moment, not a fault */
        if (bl_db_connection_lost(db))
            bl_req_fail(r, 503, "database unavailable");
        else
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
    /* charged and grown here; bl_buf_append then finds the room there */
    bl_err e = bl_req_reserve(r, b, n);
    return e ? e : bl_buf_append(b, p, n);
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
    if (cl) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (*end == '\0' && v > raw_limit(h, r)) {
            bl_req_fail(r, 413, "body of %llu bytes is over the limit of %llu bytes", v,
                        (unsigned long long)raw_limit(h, r));
            return -1;
        }
    }
    if (!sink) {
        int identity_batch = r->route == R_BATCHES && r->enc == BL_ENC_IDENTITY;
        if ((!identity_batch && body_buf_init(r, &r->body, max_out) != 0) ||
            (r->route == R_BATCHES && body_buf_init(r, &r->raw, h->c.max_body) != 0)) {
            bl_req_fail(r, 503, "the server is busy with other uploads; retry later");
            release_body(r);
            return -1;
        }
        ctx = r;
        sink = identity_batch ? sink_none : sink_buf;
    }
    /* nothing is reserved for the declared length: buffers are charged as
     * the bytes arrive (mapped buffers never copy, so reserving ahead
     * would buy nothing), and a client that declares a big body and sends
     * little holds little of --max-inflight */
    r->max_out = max_out;
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
        bl_req_fail(r, 413, "body as sent is over the limit of %llu bytes",
                    (unsigned long long)raw_limit(h, r));
        release_body(r);
        return -1;
    }
    if (r->route == R_BATCHES) /* kept as sent: it is what gets stored */
        e = bl_req_append(r, &r->raw, data, n);
    if (e == BL_ETOOBIG) { /* not expected: raw_bytes was checked above */
        bl_req_fail(r, 413, "body as sent is over the limit of %llu bytes",
                    (unsigned long long)r->raw.cap_max);
        release_body(r);
        return -1;
    }
    if (!e)
        e = bl_decomp_feed(r->dec, data, n);
    if (e == BL_ETOOBIG) {
        if (r->enc == BL_ENC_IDENTITY)
            bl_req_fail(r, 413, "body is over the limit of %llu bytes",
                        (unsigned long long)r->max_out);
        else
            bl_req_fail(r, 413, "decompressed body is over the limit of %llu bytes",
                        (unsigned long long)r->max_out);
    } else if (e == BL_ENOMEM) {
        bl_req_fail(r, 503, "the server is busy with other uploads; retry later");
    } else if (e == BL_EFORMAT) {
        const char *why = bl_decomp_why(r->dec);
        if (why)
            bl_req_fail(r, 400, "%s", why);
        else
            bl_req_fail(r, 400, "body is not valid %s data",
                        r->enc == BL_ENC_GZIP ? "gzip" : r->enc == BL_ENC_ZSTD ? "zstd" : "");
    } else if (e == BL_EIO && (errno == ENOSPC || errno == EDQUOT)) {
        bl_req_fail(r, 507, "insufficient storage: the data directory's disk is full");
        r->retry_after = 60;
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
        post = !strcmp(method, "POST"), del = !strcmp(method, "DELETE");
    if (!strcmp(url, "/healthz"))
        return get ? R_HEALTH : R_NONE;
    if (!strcmp(url, "/metrics"))
        return get ? R_METRICS : R_NONE;
    if (strncmp(url, "/v1/", 4) != 0 && strcmp(url, "/v1") != 0) { /* the dashboard */
        r->not_allowed = !get;
        return get ? R_WEB : R_NONE;
    }
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
    if (!strcmp(rest, "/blocks"))
        return get ? R_BLOCKS : R_NONE;
    if (!strcmp(rest, "/method-histogram"))
        return get ? R_METHOD_HIST : R_NONE;
    if (!strcmp(rest, "/launches"))
        return get ? R_LAUNCHES : R_NONE;
    if (!strcmp(rest, "/launches/tree"))
        return get ? R_LAUNCH_TREE : R_NONE;
    if (!strcmp(rest, "/url-patterns"))
        return put ? R_URLPAT_PUT : get ? R_URLPAT_GET : R_NONE;
    if (!strcmp(rest, "/network"))
        return get ? R_NETWORK : R_NONE;
    if (!strncmp(rest, "/blocks/", 8) && rest[8] && !strchr(rest + 8, '/')) {
        snprintf(r->sig, sizeof r->sig, "%s", rest + 8);
        return get ? R_BLOCK : R_NONE;
    }
    if (strncmp(rest, "/builds/", 8) != 0)
        return R_NONE;
    const char *b = rest + 8, *e = strrchr(b, '/');
    if (!e && *b) { /* /builds/{build}: a build name has no '/' */
        if (strlen(b) > BL_BUILD_NAME_MAX) {
            r->bad_name = 2;
            return R_NONE;
        }
        snprintf(r->build, sizeof r->build, "%s", b);
        return del ? R_DELETE_BUILD : R_NONE;
    }
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
    [R_RETRACE] = BL_ROLE_READ,   [R_DELETE_BUILD] = BL_ROLE_UPLOAD,
                                  [R_BLOCKS] = BL_ROLE_READ,      [R_BLOCK] = BL_ROLE_READ,
    [R_METHOD_HIST] = BL_ROLE_READ,
    [R_LAUNCHES] = BL_ROLE_READ,  [R_LAUNCH_TREE] = BL_ROLE_READ,
    [R_URLPAT_PUT] = BL_ROLE_UPLOAD, [R_URLPAT_GET] = BL_ROLE_READ, [R_NETWORK] = BL_ROLE_READ,
};

/* ---- connection tracking and the watchdog (total-time limits) ---------- */

static bl_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Moves the connection to `stage`; -1 when the watchdog has already
 * answered it (the caller returns MHD_NO so libmicrohttpd closes it). */
static int conn_enter(bl_http *h, bl_conn *k, int stage)
{
    if (!k)
        return 0;
    pthread_mutex_lock(&h->conn_mu);
    int killed = k->killed;
    if (!killed && k->stage != stage) {
        k->stage = stage;
        k->since_ms = now_ms();
        k->last_body_ms = k->since_ms;
        k->body_bytes = 0;
    }
    pthread_mutex_unlock(&h->conn_mu);
    return killed ? -1 : 0;
}

/* Counts body bytes; -1 when the watchdog has answered the connection. */
static int conn_body(bl_http *h, bl_conn *k, size_t n)
{
    if (!k)
        return 0;
    pthread_mutex_lock(&h->conn_mu);
    int killed = k->killed;
    k->body_bytes += n;
    if (n)
        k->last_body_ms = now_ms();
    pthread_mutex_unlock(&h->conn_mu);
    return killed ? -1 : 0;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    bl_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        bl_conn *k = calloc(1, sizeof *k);
        if (!k || !ci) {
            /* untracked: only libmicrohttpd's idle timeout applies to it */
            free(k);
            return;
        }
        k->fd = ci->connect_fd;
        k->stage = CONN_HEADERS;
        k->since_ms = now_ms();
        pthread_mutex_lock(&h->conn_mu);
        k->next = h->conns;
        if (h->conns)
            h->conns->prev = k;
        h->conns = k;
        h->n_conns++;
        pthread_mutex_unlock(&h->conn_mu);
        *socket_context = k;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        /* libmicrohttpd closes the socket after this call: once unlinked
         * here the watchdog can no longer touch the descriptor */
        bl_conn *k = *socket_context;
        if (!k)
            return;
        pthread_mutex_lock(&h->conn_mu);
        if (k->prev)
            k->prev->next = k->next;
        else
            h->conns = k->next;
        if (k->next)
            k->next->prev = k->prev;
        h->n_conns--;
        pthread_mutex_unlock(&h->conn_mu);
        free(k);
        *socket_context = NULL;
    }
}

/* Writes a whole JSON error answer with "Connection: close" straight to
 * the socket. Only for moments when libmicrohttpd itself writes nothing on
 * it (it is receiving the headers or the body) and will not (the caller
 * then makes libmicrohttpd close the connection). */
static void raw_answer(bl_http *h, int fd, unsigned status, const char *msg, unsigned retry)
{
    /* r->err is at most 319 bytes; JSON escaping at most sextuples it */
    char body[2048], buf[2560], ra[32] = "";
    json_t *o = error_body(msg);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    snprintf(body, sizeof body, "%s", js ? js : "{\"error\":\"request refused\"}");
    free(js);
    if (retry)
        snprintf(ra, sizeof ra, "Retry-After: %u\r\n", retry);
    const char *reason = MHD_get_reason_phrase_for(status);
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
                     "Cache-Control: no-store\r\n%sConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                     status, reason && *reason ? reason : "Error", ra, strlen(body), body);
    if (fd >= 0 && n > 0 && (size_t)n < sizeof buf &&
        send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n)
        bl_http_count_status(h, status);
}

/* Answers 408 on the socket and shuts it down; libmicrohttpd then sees the
 * end of the stream and closes the connection. Called with conn_mu held,
 * while libmicrohttpd is only reading from this socket (headers or body
 * stage): it writes nothing before the access handler, which takes conn_mu
 * and sees `killed`, queues an answer. msg NULL: no answer. */
static void conn_kill(bl_http *h, bl_conn *k, const char *msg)
{
    /* msg NULL: a kept-alive connection with no new request is closed
     * quietly; an unasked 408 could be read as the answer to a request
     * sent at that moment */
    if (msg)
        raw_answer(h, k->fd, 408, msg, 0);
    shutdown(k->fd, SHUT_RDWR);
    k->killed = 1;
}

static void *watchdog_main(void *arg)
{
    bl_http *h = arg;
    pthread_mutex_lock(&h->conn_mu);
    while (!h->stopping) {
        uint64_t now = now_ms();
        uint64_t header_ms = (uint64_t)h->c.header_timeout * 1000u;
        uint64_t body_ms = (uint64_t)h->c.body_timeout * 1000u;
        /* under pressure slow headers lose their slot sooner */
        if ((uint64_t)h->n_conns * 4 >= (uint64_t)h->c.max_connections * 3 && header_ms > 2000)
            header_ms = 2000;
        for (bl_conn *k = h->conns; k; k = k->next) {
            if (k->killed || k->fd < 0)
                continue;
            uint64_t age = now > k->since_ms ? now - k->since_ms : 0;
            char msg[200];
            if (k->stage == CONN_HEADERS && age > header_ms) {
                snprintf(msg, sizeof msg, "request headers not complete within %llu s",
                         (unsigned long long)(header_ms / 1000u));
                conn_kill(h, k, k->in_request || !k->requests ? msg : NULL);
            } else if (k->stage == CONN_BODY && now > k->last_body_ms &&
                       now - k->last_body_ms > body_ms) {
                /* a stalled body: answered before libmicrohttpd's idle
                 * timeout (body_timeout + 5 s) closes it without a word */
                snprintf(msg, sizeof msg, "request body stalled: no byte for %u s after %llu bytes",
                         h->c.body_timeout, (unsigned long long)k->body_bytes);
                conn_kill(h, k, msg);
            } else if (k->stage == CONN_BODY && age > body_ms &&
                       k->body_bytes / (age / 1000u ? age / 1000u : 1) < h->c.min_body_rate) {
                snprintf(msg, sizeof msg,
                         "request body too slow: %llu bytes in %llu s (after %u s at least "
                         "%llu bytes/s on average)",
                         (unsigned long long)k->body_bytes, (unsigned long long)(age / 1000u),
                         h->c.body_timeout, (unsigned long long)h->c.min_body_rate);
                conn_kill(h, k, msg);
            }
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->conn_cv, &h->conn_mu, &ts);
    }
    pthread_mutex_unlock(&h->conn_mu);
    return NULL;
}

/* ---- requests ------------------------------------------------------------ */

static req *req_new(bl_http *h)
{
    req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = -1;
    r->h = h;
    bl_buf_init(&r->raw, h->c.max_body);
    return r;
}

/* Called by libmicrohttpd once the request line is in, before it parses
 * the query: creates the request and measures the target. libmicrohttpd
 * 0.9.75 stores every query parameter in the connection's fixed memory
 * pool and, when the pool runs out, closes the connection without an
 * answer; so a query over the caps is cut here (the buffer is
 * libmicrohttpd's own writable copy of the request line, parsed right after
 * this call) and the request is answered 414 by the handler. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    bl_http *h = cls;
    bl_conn *k = conn_of(c);
    if (k) {
        pthread_mutex_lock(&h->conn_mu);
        k->in_request = 1;
        pthread_mutex_unlock(&h->conn_mu);
    }
    const char *q = strchr(uri, '?');
    size_t args = 0;
    if (q) {
        args = 1;
        for (const char *p = q + 1; *p; p++)
            args += *p == '&';
    }
    int too_long = strlen(uri) > BL_HTTP_MAX_TARGET, too_many = args > BL_HTTP_MAX_ARGS;
    /* Cut an over-cap query so that libmicrohttpd stores no parameters: with
     * thousands of them its per-connection memory runs out and it closes the
     * connection without an answer. This writes into libmicrohttpd's read
     * buffer (not const there, but const in the API): libmicrohttpd 0.9.75
     * passes `uri` pointing into that buffer and parses the query from the
     * '?' it found, up to a NUL, after this callback returns. Verified for
     * that version only (h->query_cut, set at start from MHD_get_version());
     * with another version the query is left alone and a request with very
     * many parameters may be closed without an answer. */
    if (q && (too_long || too_many) && h->query_cut)
        ((char *)q)[1] = '\0';
    req *r = req_new(h);
    if (!r)
        return NULL; /* on_request answers 503 */
    r->target_too_long = too_long;
    /* libmicrohttpd decodes %00 and then cuts the value there: "limit=5%00x"
     * would read as "5", "builds/x%00y" as "builds/x". Refused whole. */
    r->nul_in_target = strstr(uri, "%00") != NULL;
    r->too_many_args = too_many;
    return r;
}

struct hdr_stats {
    size_t n, bytes, content_length, transfer_encoding;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    struct hdr_stats *st = cls;
    st->n++;
    st->bytes += (key ? strlen(key) : 0) + (value ? strlen(value) : 0);
    if (key && !strcasecmp(key, "Content-Length"))
        st->content_length++;
    if (key && !strcasecmp(key, "Transfer-Encoding"))
        st->transfer_encoding++;
    return MHD_YES;
}

/* Everything decided on the headers alone; -1 with r failed. */
static int begin(struct MHD_Connection *c, bl_http *h, req *r, const char *method,
                 const char *url)
{
    if (r->nul_in_target) {
        bl_req_fail(r, 400, "a NUL byte (%%00) in the request target");
        return -1;
    }
    if (r->target_too_long) {
        bl_req_fail(r, 414, "request target over %d bytes", BL_HTTP_MAX_TARGET);
        return -1;
    }
    if (r->too_many_args) {
        bl_req_fail(r, 414, "more than %d query parameters", BL_HTTP_MAX_ARGS);
        return -1;
    }
    struct hdr_stats st = { 0, 0, 0, 0 };
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &st);
    if (st.n > BL_HTTP_MAX_HEADERS || st.bytes > BL_HTTP_MAX_HEADER_BYTES) {
        bl_req_fail(r, 431, "request headers over the limit (%d fields, %d bytes)",
                    BL_HTTP_MAX_HEADERS, BL_HTTP_MAX_HEADER_BYTES);
        return -1;
    }
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (te && strcasecmp(te, "chunked") != 0) {
        bl_req_fail(r, 501, "Transfer-Encoding '%s' is not supported (only chunked; compress "
                            "with Content-Encoding)", te);
        return -1;
    }
    if (st.content_length + st.transfer_encoding > 1) {
        bl_req_fail(r, 400, "more than one Content-Length / Transfer-Encoding header");
        return -1;
    }
    int has_body = te || (cl && strtoull(cl, NULL, 10) > 0);
    r->route = route_of(method, url, r);
    if (r->bad_name) {
        bl_req_fail(r, 400, r->bad_name == 1 ? "bad app name (1-64 characters of A-Z a-z 0-9 . _ -)"
                                             : "bad build name (1-128 bytes)");
        return -1;
    }
    if (r->route == R_NONE) {
        if (r->not_allowed)
            bl_req_fail(r, 405, "method %s not allowed on %s (GET or HEAD)", method, url);
        else
            bl_req_fail(r, 404, "no endpoint %s %s", method, url);
        return -1;
    }
    if (r->app[0] && !bl_app_name_valid(r->app)) {
        bl_req_fail(r, 400, "bad app name");
        return -1;
    }
    if (r->build[0] && !bl_build_name_valid(r->build, strlen(r->build))) {
        bl_req_fail(r, 400, "bad build name (1-128 bytes, no control characters, '/' or '\\', "
                            "not '.' or '..')");
        return -1;
    }
    if (r->route >= R_MAPPING && bl_req_auth(c, h, r, route_role[r->route]) != 0)
        return -1;
    int takes_body = r->route == R_MAPPING || r->route == R_METHODIDS ||
                     r->route == R_BATCHES || r->route == R_RETRACE ||
                     r->route == R_URLPAT_PUT;
    if (has_body && !takes_body) {
        bl_req_fail(r, 400, "this endpoint takes no body");
        return -1;
    }
    if (r->route == R_MAPPING || r->route == R_METHODIDS || r->route == R_BATCHES) {
        /* refused before the body is read: a full or read-only disk cannot
         * take it (the Content-Length, when sent, must fit too) */
        unsigned long long need = cl ? strtoull(cl, NULL, 10) : 0;
        char msg[256];
        unsigned dst = bl_disk_refuse(h->data_dir, h->c.min_free, need, msg, sizeof msg);
        if (dst) {
            bl_req_fail(r, dst, "%s", msg);
            r->retry_after = dst == 507 ? 60 : 5;
            return -1;
        }
    }
    if (r->route == R_MAPPING || r->route == R_METHODIDS)
        return bl_h_upload_begin(c, h, r);
    if (r->route == R_BATCHES || r->route == R_RETRACE)
        return bl_req_body_begin(c, h, r, h->c.max_decompressed, NULL, NULL);
    if (r->route == R_URLPAT_PUT)
        return bl_req_body_begin(c, h, r, BL_URLPAT_BODY_MAX, NULL, NULL);
    return 0;
}

/* Answers r's error while its body streams in, and closes: libmicrohttpd
 * 0.9.75 refuses MHD_queue_response between the first call and the end of
 * the body, and would otherwise read the rest of a body we already refuse
 * (an endless chunked body for ever). The answer is written to the socket
 * directly (libmicrohttpd is only reading it now) and MHD_NO makes
 * libmicrohttpd close the connection. */
static enum MHD_Result reply_midbody(struct MHD_Connection *c, bl_http *h, req *r)
{
    if (r->route == R_MAPPING || r->route == R_METHODIDS)
        bl_h_upload_abort(r);
    r->replied = 1;
    int fd = -1;
    bl_conn *k = r->conn;
    if (k) {
        pthread_mutex_lock(&h->conn_mu);
        if (!k->killed) {
            k->killed = 1; /* the watchdog leaves it alone from now on */
            fd = k->fd;
        }
        pthread_mutex_unlock(&h->conn_mu);
    } else {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        fd = ci ? ci->connect_fd : -1;
    }
    if (fd >= 0) {
        raw_answer(h, fd, r->status, r->err,
                   r->retry_after ? r->retry_after : r->status == 503 ? 5 : 0);
        shutdown(fd, SHUT_WR);
    }
    return MHD_NO;
}

/* Answers r's error now, on the first call, with "Connection: close": the
 * body (if any) is never read. */
static enum MHD_Result reply_now(struct MHD_Connection *c, bl_http *h, req *r)
{
    if (r->route == R_MAPPING || r->route == R_METHODIDS)
        bl_h_upload_abort(r);
    r->replied = 1;
    if (conn_enter(h, r->conn, CONN_BUSY) != 0)
        return MHD_NO;
    return queue_json(c, h, r->status, error_body(r->err),
                      r->retry_after ? r->retry_after : r->status == 503 ? 5 : 0, 1);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    bl_http *h = cls;
    req *r = *con_cls;
    if (!r) {
        /* on_uri runs first for every request and could not allocate it */
        r = req_new(h);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        r->started = 1;
        r->conn = conn_of(c);
        bl_req_fail(r, 503, "out of memory");
        return reply_now(c, h, r);
    }
    if (r->replied) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (!r->started) {
        r->started = 1;
        r->conn = conn_of(c);
        if (conn_enter(h, r->conn, CONN_BODY) != 0)
            return MHD_NO; /* answered 408 by the watchdog */
        if (begin(c, h, r, method, url) != 0 || r->failed)
            return reply_now(c, h, r);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (conn_body(h, r->conn, n) != 0)
            return MHD_NO; /* answered 408 by the watchdog */
        if (r->route == R_MAPPING || r->route == R_METHODIDS) {
            bl_h_upload_feed(h, r, upload_data, n);
        } else {
            /* batches and retrace (begin() refuses a body anywhere else);
             * a batch keeps its raw body too */
            bl_req_body_feed(h, r, upload_data, n);
        }
        return r->failed ? reply_midbody(c, h, r) : MHD_YES;
    }
    /* the whole request is in */
    if (conn_enter(h, r->conn, CONN_BUSY) != 0)
        return MHD_NO;
    if (!r->failed && r->dec && r->route != R_MAPPING && r->route != R_METHODIDS)
        bl_req_body_end(r);
    if (r->failed) {
        if (r->route == R_MAPPING || r->route == R_METHODIDS)
            bl_h_upload_abort(r);
        r->replied = 1;
        return bl_reply_error_retry(c, h, r->status, r->err,
                                    r->retry_after ? r->retry_after
                                                   : r->status == 503 ? 5 : 0);
    }
    r->replied = 1;
    switch (r->route) {
    case R_HEALTH: return bl_h_health(c, h, r);
    case R_METRICS: return bl_h_metrics(c, h, r);
    case R_WEB: return bl_h_web(c, h, r, url);
    case R_BUILDS: return bl_h_builds(c, h, r);
    case R_SLOW: return bl_h_slow(c, h, r);
    case R_TREE: return bl_h_tree(c, h, r);
    case R_RETRACE: return bl_h_retrace(c, h, r);
    case R_BLOCKS: return bl_h_blocks(c, h, r);
    case R_BLOCK: return bl_h_block(c, h, r);
    case R_METHOD_HIST: return bl_h_method_hist(c, h, r);
    case R_LAUNCHES: return bl_h_launches(c, h, r);
    case R_LAUNCH_TREE: return bl_h_launch_tree(c, h, r);
    case R_URLPAT_PUT: return bl_h_url_patterns_put(c, h, r);
    case R_URLPAT_GET: return bl_h_url_patterns_get(c, h, r);
    case R_NETWORK: return bl_h_network(c, h, r);
    case R_BATCHES: return bl_h_batch(c, h, r);
    case R_DELETE_BUILD: return bl_h_delete_build(c, h, r);
    case R_MAPPING:
    case R_METHODIDS: return bl_h_upload_finish(c, h, r);
    case R_NONE: break;
    }
    return bl_reply_error(c, h, 404, "not found");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    bl_http *h = cls;
    /* a kept-alive connection now waits for its next request: the header
     * limit starts again */
    bl_conn *k = conn_of(c);
    if (k) {
        pthread_mutex_lock(&h->conn_mu);
        k->stage = CONN_HEADERS;
        k->since_ms = now_ms();
        k->in_request = 0;
        k->requests++;
        pthread_mutex_unlock(&h->conn_mu);
    }
    req *r = *con_cls;
    if (!r)
        return;
    if (r->route == R_MAPPING || r->route == R_METHODIDS)
        bl_h_upload_abort(r); /* no-op when finished */
    bl_decomp_free(r->dec); /* gives its state back */
    atomic_fetch_sub(&h->inflight, r->held);
    bl_buf_cleanup(&r->raw);
    bl_buf_cleanup(&r->body);
    if (r->hash)
        XXH3_freeState(r->hash);
    free(r);
    *con_cls = NULL;
}

/* libmicrohttpd's messages, to stderr (cut at 2 KiB), except the line it
 * logs for every connection that a client or the watchdog ends early
 * ("closed ...", "disconnected ...") and for every body answered and closed
 * by reply_midbody ("Application reported internal error"): under a
 * slowloris load they would be hundreds of lines a second and say nothing. */
static void on_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    static const char *const quiet[] = {
        "Connection socket is closed when reading request",
        "Connection was closed by remote side",
        "Socket has been disconnected when reading request",
        "Application reported internal error",
    };
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    for (size_t i = 0; i < sizeof quiet / sizeof *quiet; i++)
        if (!strncmp(line, quiet[i], strlen(quiet[i])))
            return;
    fputs(line, stderr);
}

bl_err bl_http_start(const bl_http_config *c, bl_http **out, char *errbuf, size_t n)
{
    *out = NULL;
    bl_http *h = calloc(1, sizeof *h);
    if (!h)
        return BL_ENOMEM;
    h->c = *c;
    /* the query cut of on_uri relies on libmicrohttpd 0.9.75's internals */
    const char *mhd_version = MHD_get_version();
    h->query_cut = mhd_version && !strcmp(mhd_version, "0.9.75");
    if (!h->query_cut)
        fprintf(stderr, "beatline-server: libmicrohttpd %s (not 0.9.75): over-long queries are "
                        "not cut before parsing; a request with thousands of query "
                        "parameters may be closed without an answer\n",
                mhd_version ? mhd_version : "?");
    snprintf(h->data_dir, sizeof h->data_dir, "%s", c->data_dir);
    h->c.data_dir = h->data_dir;
    if (!h->c.header_timeout)
        h->c.header_timeout = 10;
    if (!h->c.body_timeout)
        h->c.body_timeout = 60;
    if (!h->c.min_body_rate)
        h->c.min_body_rate = 16384;
    if (!h->c.max_connections)
        h->c.max_connections = 1000;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, c->bind_addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(c->port);
    } else if (inet_pton(AF_INET6, c->bind_addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(c->port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(errbuf, n, "bad listen address '%s' (use an IP literal)", c->bind_addr);
        free(h);
        return BL_EINVAL;
    }
    if (pthread_mutex_init(&h->conn_mu, NULL) != 0) {
        free(h);
        return BL_ENOMEM;
    }
    if (pthread_cond_init(&h->conn_cv, NULL) != 0) {
        pthread_mutex_destroy(&h->conn_mu);
        free(h);
        return BL_ENOMEM;
    }
    /* libmicrohttpd's idle timeout only catches a connection that sends
     * nothing at all; the watchdog's limits come first */
    unsigned idle = h->c.body_timeout + 5;
    if (idle < h->c.header_timeout + 5)
        idle = h->c.header_timeout + 5;
    if (bl_web_open(c->web_dir, &h->web_fd, errbuf, n) != 0) {
        pthread_cond_destroy(&h->conn_cv);
        pthread_mutex_destroy(&h->conn_mu);
        free(h);
        return BL_EINVAL;
    }
    h->d = MHD_start_daemon(flags, c->port, NULL, NULL, on_request, h,
                            MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(c->threads ? c->threads : 4),
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)BL_HTTP_POOL_BYTES,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle,
                            MHD_OPTION_CONNECTION_LIMIT, h->c.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->c.max_per_ip,
                            MHD_OPTION_END);
    if (!h->d) {
        snprintf(errbuf, n, "cannot listen on %s:%u", c->bind_addr, (unsigned)c->port);
        if (h->web_fd >= 0)
            close(h->web_fd);
        pthread_cond_destroy(&h->conn_cv);
        pthread_mutex_destroy(&h->conn_mu);
        free(h);
        return BL_EIO;
    }
    if (pthread_create(&h->watchdog, NULL, watchdog_main, h) != 0) {
        snprintf(errbuf, n, "cannot start the connection watchdog thread");
        MHD_stop_daemon(h->d);
        if (h->web_fd >= 0)
            close(h->web_fd);
        pthread_cond_destroy(&h->conn_cv);
        pthread_mutex_destroy(&h->conn_mu);
        free(h);
        return BL_ENOMEM;
    }
    h->watchdog_running = 1;
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
    if (h->watchdog_running) {
        pthread_mutex_lock(&h->conn_mu);
        h->stopping = 1;
        pthread_cond_signal(&h->conn_cv);
        pthread_mutex_unlock(&h->conn_mu);
        pthread_join(h->watchdog, NULL);
    }
    MHD_stop_daemon(h->d);
    if (h->web_fd >= 0)
        close(h->web_fd);
    pthread_cond_destroy(&h->conn_cv);
    pthread_mutex_destroy(&h->conn_mu);
    free(h);
}
