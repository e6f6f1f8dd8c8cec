/*
 * internal.h — shared by the HTTP handler files (one file per endpoint
 * family). Not a public interface.
 */
#ifndef BL_HTTP_INTERNAL_H
#define BL_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <jansson.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "common/buf.h"
#include "common/decomp.h"
#include "common/fdio.h"
#include "http/http.h"
#include "pipeline/datadir.h"
#include "store/apps.h"
#include "store/blocks.h"
#include "store/db.h"

enum route {
    R_NONE = 0,
    R_HEALTH,
    R_METRICS,
    R_WEB,          /* GET anything outside /v1/: the dashboard's files (h_web.c) */
    R_MAPPING,
    R_METHODIDS,
    R_BATCHES,
    R_BUILDS,
    R_SLOW,
    R_TREE,
    R_RETRACE,
    R_DELETE_BUILD, /* DELETE /v1/apps/{app}/builds/{build} (h_delete.c) */
    R_BLOCKS,
    R_BLOCK,
    R_METHOD_HIST,  /* GET /v1/apps/{app}/method-histogram (h_method.c) */
    R_LAUNCHES,     /* GET /v1/apps/{app}/launches (h_launches.c) */
    R_LAUNCH_TREE,  /* GET /v1/apps/{app}/launches/tree (h_launches.c) */
    R_URLPAT_PUT,   /* PUT /v1/apps/{app}/url-patterns (h_network.c) */
    R_URLPAT_GET,   /* GET /v1/apps/{app}/url-patterns */
    R_NETWORK       /* GET /v1/apps/{app}/network */
};

/* One open connection, for the total-time limits (http.c "watchdog").
 * Created when libmicrohttpd accepts the connection and freed when it is
 * closed; every field is guarded by bl_http.conn_mu. */
typedef struct bl_conn {
    struct bl_conn *prev, *next;
    int fd;                /* the socket, valid until the connection closes */
    int stage;             /* CONN_HEADERS, CONN_BODY or CONN_BUSY (http.c) */
    int killed;            /* the watchdog answered 408 and shut the socket down */
    int in_request;        /* a request line has arrived (stage CONN_HEADERS) */
    uint64_t requests;     /* requests completed on this connection */
    uint64_t since_ms;     /* monotonic ms the stage began */
    uint64_t body_bytes;   /* body bytes received in CONN_BODY */
    uint64_t last_body_ms; /* monotonic ms of the last body bytes (or of CONN_BODY's start) */
} bl_conn;

struct bl_http {
    bl_http_config c;
    char data_dir[BL_PATH_MAX];
    struct MHD_Daemon *d;
    uint16_t port;
    _Atomic uint64_t status_count[600];
    _Atomic uint64_t bytes_in, batches_in, records_in, duplicates_in;
    int query_cut;               /* on_uri may cut over-cap queries (libmicrohttpd 0.9.75) */
    _Atomic uint64_t quota_refused; /* batches answered 429 by a quota */
    _Atomic uint64_t inflight;  /* bytes held by requests now (bodies, decoders, answers):
                                 * never above c.max_inflight (http.c, take()) */
    pthread_mutex_t conn_mu;     /* guards conns, n_conns and every bl_conn */
    pthread_cond_t conn_cv;      /* wakes the watchdog to stop */
    bl_conn *conns;              /* open connections (list) */
    unsigned n_conns;
    int stopping;
    int watchdog_running;
    pthread_t watchdog;
    int web_fd;                  /* the --web folder (h_web.c), -1: none */
};

/* Per-request state, created on the first callback. */
typedef struct req {
    int started;           /* the access handler has seen the headers */
    int replied;           /* a response is queued: ignore further calls */
    int target_too_long;   /* set by the URI callback (over BL_HTTP_MAX_TARGET) */
    int nul_in_target;     /* set by the URI callback: "%00" in the target */
    int too_many_args;     /* set by the URI callback (over BL_HTTP_MAX_ARGS) */
    bl_conn *conn;         /* the connection's tracker (may be NULL) */
    enum route route;
    char app[72];
    char build[BL_BUILD_NAME_MAX + 1];
    int64_t app_id;
    int failed;            /* an error response is queued or due */
    int bad_name;          /* 1: app name too long, 2: build name too long */
    unsigned status;       /* error status when failed */
    unsigned retry_after;  /* Retry-After seconds of that error (0: 5 for a 503, else none) */
    char err[320];
    /* body */
    bl_encoding enc;
    bl_decomp *dec;
    uint64_t raw_bytes;
    uint64_t max_out;      /* the body's limit once decompressed (identity: as sent) */
    uint64_t held;         /* this request's share of bl_http.inflight: raw, body,
                            * decoder state, answers built with bl_req_reserve */
    struct bl_http *h;
    bl_buf raw;            /* batches: the body as received (charged) */
    bl_buf body;           /* decompressed (batches unless identity, retrace; charged);
                            * an identity batch is only in raw */
    int fd;                /* mapping: temporary file */
    char tmp[BL_PATH_MAX];
    XXH3_state_t *hash;    /* mapping / method-ids content hash */
    int replace;           /* ?replace=true */
    char sig[40];          /* GET .../blocks/{signature}: its first 39 bytes */
    int not_allowed;       /* a method other than GET/HEAD on a web path: 405 */
} req;

/* 1 when this process's store is PostgreSQL (uploaded files live there,
 * store/files.h), whether or not it can be reached right now. */
int bl_http_store_remote(bl_http *h);

/* The read connection of the calling thread (opened on first use). NULL
 * when it cannot be opened, or (PostgreSQL) when it was lost and cannot be
 * made again now: callers answer 503 + Retry-After. */
bl_db *bl_http_db(bl_http *h);
/* A writable connection of the calling thread (opened on first use; owned
 * by the thread, closed when it ends), for uploads' writes to a PostgreSQL
 * store (store/files.h). NULL when it cannot be opened (logged). */
bl_db *bl_http_db_rw(bl_http *h);
/* The folder of build (app_id, build) into dir (BL_PATH_MAX bytes), as
 * bl_datadir_build; with a PostgreSQL store first made to agree with the
 * store (pipeline/buildcache.h: a file another node uploaded is fetched, a
 * damaged copy fetched again; the fetch's memory, 3 chunks of
 * store/files.h, charged to r's share of --max-inflight meanwhile).
 * BL_EINVAL when bl_datadir_build fails (an invalid build name); BL_ENOMEM
 * when --max-inflight is spent; else bl_buildcache_sync's errors (logged). */
bl_err bl_http_build_dir(bl_http *h, req *r, int64_t app_id, const char *build, char *dir);

/* A JSON string of arbitrary bytes: invalid UTF-8 becomes U+FFFD. Never
 * NULL unless memory runs out. */
json_t *bl_json_text(const char *s);

/* Responses. All return MHD_YES/MHD_NO from MHD_queue_response. */
enum MHD_Result bl_reply_json(struct MHD_Connection *c, bl_http *h, unsigned status,
                              json_t *body /* stolen */);
enum MHD_Result bl_reply_text(struct MHD_Connection *c, bl_http *h, unsigned status,
                              const char *type, const char *text, size_t n);
enum MHD_Result bl_reply_error(struct MHD_Connection *c, bl_http *h, unsigned status,
                               const char *msg);
/* bl_reply_error with a Retry-After of `retry` seconds (0: no header). A
 * 503 from the two above says Retry-After: 5. */
enum MHD_Result bl_reply_error_retry(struct MHD_Connection *c, bl_http *h, unsigned status,
                                     const char *msg, unsigned retry);

/* Marks the request failed with a status and message (first one wins). */
void bl_req_fail(req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Authenticates the request's key for r->app and role; on failure sets the
 * 401/403/404 error on r and returns -1. */
int bl_req_auth(struct MHD_Connection *c, bl_http *h, req *r, bl_role role);

/* Query argument or NULL. */
const char *bl_arg(struct MHD_Connection *c, const char *name);

/* Parses an optional integer argument in [min, max] (max <= INT64_MAX / 10
 * - 1): decimal digits only, no sign, spaces or other characters; absent or
 * empty gives dflt. -1 with the error text in err (naming the parameter and
 * its range, for a 400). */
int bl_arg_i64(struct MHD_Connection *c, const char *name, int64_t dflt, int64_t min,
               int64_t max, int64_t *out, char *err, size_t n);

/* A method named as class.method or class.method(descriptor) (call-tree's
 * root=, method-histogram's method=): the class (up to the last '.' before
 * any '(') into cls and the method name into name, NUL-terminated; *desc
 * points at the '(' in s (the descriptor, borrowed from s) or is NULL.
 * 0, or -1 when there is no class or no name, or either does not fit
 * (ccap, ncap bytes with the NUL). */
int bl_parse_method(const char *s, char *cls, size_t ccap, char *name, size_t ncap,
                    const char **desc);

/* The `thread` argument: main (*main_only 1), all or absent (0). -1 with
 * the error text in err (for a 400) for anything else. */
int bl_arg_thread(struct MHD_Connection *c, int *main_only, char *err, size_t n);

/* The database for a read handler, checking the optional `build` argument
 * names a build of the request's app. NULL with the answer queued in *rc:
 * 503 (+ Retry-After 5) no database or its connection lost meanwhile
 * (PostgreSQL down or restarting), 404 unknown build, 500 database error. */
bl_db *bl_http_db_build(struct MHD_Connection *c, bl_http *h, req *r, const char *build,
                        enum MHD_Result *rc);

/* The database for a read handler and the request's build: the `build`
 * argument, or the app's newest build with data (store/builds.h
 * bl_builds_pick): its id in *build_id and its name in bname (bcap bytes).
 * NULL with the answer queued in *rc: 503 no database, 404 unknown build
 * or no builds, 500 database error. */
bl_db *bl_http_db_pick(struct MHD_Connection *c, bl_http *h, req *r, int64_t *build_id,
                       char *bname, size_t bcap, enum MHD_Result *rc);

/* Request memory, charged against c.max_inflight (bl_http.inflight) before
 * it is allocated and given back when the request completes.
 * bl_req_reserve makes room for `extra` more bytes in b (growth: doubling
 * to 4 MiB, then +1/8): BL_ETOOBIG past b->cap_max, BL_ENOMEM when the
 * server-wide budget is spent (answer 503 + Retry-After) or malloc fails;
 * b is unchanged on failure. bl_req_append appends n bytes the same way.
 * bl_req_buf_free frees a charged buffer early and gives its charge back. */
bl_err bl_req_reserve(req *r, bl_buf *b, size_t extra);
/* Charges n bytes the caller is about to allocate (-1: over the budget,
 * nothing charged) / gives back n bytes it freed. */
int bl_req_take(req *r, uint64_t n);
void bl_req_give(req *r, uint64_t n);
bl_err bl_req_append(req *r, bl_buf *b, const void *p, size_t n);
void bl_req_buf_free(req *r, bl_buf *b);
/* Answers b's text with Content-Type `type`; takes b's storage (left
 * empty), which stays charged to r until the request completes. Heap
 * storage is handed to MHD (which free()s it); a mapped buffer is copied
 * by MHD and unmapped at once, never handed to free(). */
enum MHD_Result bl_reply_buf(struct MHD_Connection *c, bl_http *h, unsigned status,
                             const char *type, bl_buf *b);

/* Body handling shared by uploads: sets up decompression into r->body
 * (or a sink) according to Content-Encoding; -1 with r failed on error. */
int bl_req_body_begin(struct MHD_Connection *c, bl_http *h, req *r, uint64_t max_out,
                      bl_decomp_sink sink, void *ctx);
/* Feeds a chunk (batches: also kept as sent in r->raw); -1 with r failed
 * (413 / 400 / 503 over the in-flight budget / 500); a failed request's
 * body memory is freed at once. */
int bl_req_body_feed(bl_http *h, req *r, const char *data, size_t n);
/* Ends the body; -1 with r failed. */
int bl_req_body_end(req *r);

/* Handlers: called once the whole body is in (or for GET, at once). */
enum MHD_Result bl_h_health(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_metrics(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_builds(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_slow(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_tree(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_retrace(struct MHD_Connection *c, bl_http *h, req *r);
/* h_blocks.c */
enum MHD_Result bl_h_blocks(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_block(struct MHD_Connection *c, bl_http *h, req *r);
/* A stored tree's nodes, by ascending id (parents first), handed to cb
 * (store/blocks.h node shape). BL_OK, BL_EIO. */
typedef bl_err (*bl_tree_lister)(bl_blk_node_cb cb, void *cb_ctx, void *ctx);
/* The JSON roots (node shape of GET call-tree: method, count, total_us,
 * self_us, children; siblings by total_us descending, equal times by
 * their method's names then methodId) of the nodes `list` gives: all of
 * them are read (each charged to r, about 1 KiB, as it is built), then the
 * first `limit` in depth-first order of the sorted tree are kept
 * (*truncated = 1 when some were left out): the same answer whatever the
 * order the nodes were stored in. *roots is owned by the caller. BL_EIO (the listing failed), BL_ENOMEM (memory
 * or the request's budget). */
bl_err bl_blk_tree_json(req *r, int64_t limit, bl_tree_lister list, void *ctx, json_t **roots,
                        int *truncated);
/* h_launches.c */
enum MHD_Result bl_h_launches(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_launch_tree(struct MHD_Connection *c, bl_http *h, req *r);
/* h_web.c: the dashboard's files. bl_web_open opens the folder (NULL or
 * "": none, *fd = -1); -1 with err when it cannot be opened. bl_h_web
 * answers the file of the decoded request path url (200, or 404 JSON). */
int bl_web_open(const char *dir, int *fd, char *err, size_t n);
enum MHD_Result bl_h_web(struct MHD_Connection *c, bl_http *h, req *r, const char *url);
/* Counts an answer's status for /metrics (beatline_http_requests_total). */
void bl_http_count_status(bl_http *h, unsigned status);
enum MHD_Result bl_h_method_hist(struct MHD_Connection *c, bl_http *h, req *r);
/* h_network.c (issue 16). A url-patterns body is at most this long once
 * decompressed (413 past it). */
#define BL_URLPAT_BODY_MAX ((uint64_t)256 << 10)
enum MHD_Result bl_h_url_patterns_put(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_url_patterns_get(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_network(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_batch(struct MHD_Connection *c, bl_http *h, req *r);
enum MHD_Result bl_h_delete_build(struct MHD_Connection *c, bl_http *h, req *r);
/* Uploads stream: begin on the first call, feed per chunk, finish at end. */
int bl_h_upload_begin(struct MHD_Connection *c, bl_http *h, req *r);
int bl_h_upload_feed(bl_http *h, req *r, const char *data, size_t n);
enum MHD_Result bl_h_upload_finish(struct MHD_Connection *c, bl_http *h, req *r);
void bl_h_upload_abort(req *r);

#endif
