/*
 * h_network.c — network endpoints (issue 16):
 *   PUT /v1/apps/{app}/url-patterns   (upload key) {"patterns": [...]}
 *   GET /v1/apps/{app}/url-patterns   (read key)
 *   GET /v1/apps/{app}/network?build=&host=&method=&sort=&limit=&callers=&since=&until=
 *                                     (read key)
 * Shapes, units and errors are in docs/api.md ("Network requests", "URL
 * patterns"). A new pattern list is written by the processor's writer in
 * queue order (pipeline/processor.h): batches accepted before the PUT are
 * grouped with the old list, those after with the new one. Every byte an
 * answer of /network holds is charged to the request's in-flight budget
 * (503 when it is spent).
 */
#include "http/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/sketch.h"
#include "agg/urlpattern.h"
#include "pipeline/processor.h"
#include "store/builds.h"
#include "store/network.h"

#define HOUR_US 3600000000ll
#define ROW_CHARGE 2048   /* bytes charged per request row (a jansson object and its members) */
#define CALLER_CHARGE 1024 /* and per caller */
/* How long a PUT waits for the writer (it may have a backlog). */
#define URLPAT_WAIT_MS 10000

/* ---- PUT / GET url-patterns -------------------------------------------------- */

static int collect(const char *p, void *ctx)
{
    json_t *arr = ctx;
    return json_array_append_new(arr, bl_json_text(p)) ? -1 : 0;
}

/* {"app":…, "patterns":[…], "updated_at": µs or null} from the database. */
static enum MHD_Result patterns_answer(struct MHD_Connection *c, bl_http *h, req *r,
                                       unsigned status, const char *state)
{
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_error(c, h, 503, "database unavailable");
    json_t *arr = json_array();
    int64_t at = -1;
    bl_err e = arr ? bl_net_patterns_get(db, r->app_id, collect, arr, &at) : BL_ENOMEM;
    if (e) {
        json_decref(arr);
        return e == BL_EIO ? bl_reply_error(c, h, 500, "database error")
                           : bl_reply_error(c, h, 503, "out of memory; retry later");
    }
    json_t *o = json_pack("{s:o,s:o,s:o}", "app", bl_json_text(r->app), "patterns", arr,
                          "updated_at", at >= 0 ? json_integer(at) : json_null());
    if (o && state && json_object_set_new(o, "status", json_string(state))) {
        json_decref(o);
        o = NULL;
    }
    return o ? bl_reply_json(c, h, status, o) : bl_reply_error(c, h, 503, "out of memory");
}

enum MHD_Result bl_h_url_patterns_get(struct MHD_Connection *c, bl_http *h, req *r)
{
    return patterns_answer(c, h, r, 200, NULL);
}

enum MHD_Result bl_h_url_patterns_put(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[300], why[200];
    json_error_t jerr;
    json_t *o = json_loadb(r->body.data ? r->body.data : "", r->body.len,
                           JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        snprintf(err, sizeof err, "the body is not JSON: %.150s (line %d)", jerr.text,
                 jerr.line);
        return bl_reply_error(c, h, 400, err);
    }
    json_t *pats = json_object_get(o, "patterns");
    if (!json_is_object(o) || !json_is_array(pats) || json_object_size(o) != 1) {
        json_decref(o);
        return bl_reply_error(c, h, 400, "the body must be {\"patterns\": [\"HOST/PATH\", ...]} "
                                         "and nothing else");
    }
    size_t n = json_array_size(pats);
    if (n > BL_URLPAT_MAX_PATTERNS) {
        json_decref(o);
        snprintf(err, sizeof err, "%zu patterns: at most %d per app", n, BL_URLPAT_MAX_PATTERNS);
        return bl_reply_error(c, h, 400, err);
    }
    const char *v[BL_URLPAT_MAX_PATTERNS];
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(pats, i);
        if (!json_is_string(p)) {
            json_decref(o);
            snprintf(err, sizeof err, "patterns[%zu] is not a string", i);
            return bl_reply_error(c, h, 400, err);
        }
        size_t len = json_string_length(p);
        v[i] = json_string_value(p);
        if (strlen(v[i]) != len) {
            json_decref(o);
            snprintf(err, sizeof err, "patterns[%zu] holds a NUL character", i);
            return bl_reply_error(c, h, 400, err);
        }
        if (bl_urlpat_check(v[i], len, why, sizeof why)) {
            json_decref(o);
            snprintf(err, sizeof err, "patterns[%zu]: %s", i, why);
            return bl_reply_error(c, h, 400, err);
        }
    }
    int done = 0;
    bl_err e = bl_processor_set_url_patterns(h->c.proc, r->app_id, v, n, URLPAT_WAIT_MS, &done);
    json_decref(o);
    if (e == BL_ENOMEM)
        return bl_reply_error(c, h, 503, "out of memory; retry later");
    if (e)
        return bl_reply_error(c, h, 503, "the patterns could not be stored (see the server "
                                         "log); retry later");
    if (!done) /* queued behind a backlog: the GET shows the old list until then */
        return bl_reply_json(c, h, 202, json_pack("{s:s,s:s}", "app", r->app, "status",
                                                  "queued"));
    return patterns_answer(c, h, r, 200, "set");
}

/* ---- GET network ------------------------------------------------------------ */

enum { S_COUNT, S_P50, S_P90, S_P99, S_ERRORS, S_BYTES, N_SORTS };
static const char *const sort_names[N_SORTS] = { "count", "p50", "p90", "p99", "errors",
                                                 "bytes" };

/* One group as listed, its strings in the context's text buffer. */
typedef struct nrow {
    int64_t id, count, errors, status[6], max_us, ttfb_max_us;
    int64_t dns_us, dns_n, connect_us, connect_n, tls_us, tls_n, bytes_in, bytes_out;
    uint64_t q[3];      /* p50, p90, p99 of total_us */
    int64_t tq[3];      /* the same of ttfb_us; -1: no request had one */
    size_t host_off, method_off, pattern_off;
} nrow;

typedef struct list_ctx {
    req *r;
    bl_buf rows;  /* nrow[], charged */
    bl_buf text;  /* NUL-terminated strings, charged */
    bl_sketch sk;
    int failed;   /* out of memory / budget */
} list_ctx;

static int put_text(list_ctx *x, const char *s, size_t *off)
{
    *off = x->text.len;
    return bl_req_append(x->r, &x->text, s, strlen(s) + 1) != BL_OK;
}

/* q[0..3) of a serialised sketch, each at most max; -1 each when empty. */
static int quantiles(list_ctx *x, const void *blob, size_t len, int64_t max, int64_t out[3])
{
    bl_sketch_reset(&x->sk);
    if (len && bl_sketch_merge_blob(&x->sk, blob, len) == BL_ENOMEM)
        return -1;
    static const double qs[3] = { 0.5, 0.9, 0.99 };
    for (int i = 0; i < 3; i++) {
        uint64_t v = bl_sketch_quantile(&x->sk, qs[i]);
        out[i] = !x->sk.count ? -1 : v > (uint64_t)max ? max : (int64_t)v;
    }
    return 0;
}

static int group_row(const bl_net_group *g, void *ctx)
{
    list_ctx *x = ctx;
    nrow row;
    memset(&row, 0, sizeof row);
    row.id = g->id;
    row.count = g->count;
    row.errors = g->errors;
    memcpy(row.status, g->status, sizeof row.status);
    row.max_us = g->max_us;
    row.ttfb_max_us = g->ttfb_max_us;
    row.dns_us = g->dns_us;
    row.dns_n = g->dns_n;
    row.connect_us = g->connect_us;
    row.connect_n = g->connect_n;
    row.tls_us = g->tls_us;
    row.tls_n = g->tls_n;
    row.bytes_in = g->bytes_in;
    row.bytes_out = g->bytes_out;
    int64_t q[3];
    if (quantiles(x, g->sketch, g->sketch_len, g->max_us, q) ||
        quantiles(x, g->ttfb_sketch, g->ttfb_sketch_len, g->ttfb_max_us, row.tq)) {
        x->failed = 1;
        return 1;
    }
    for (int i = 0; i < 3; i++)
        row.q[i] = q[i] < 0 ? 0 : (uint64_t)q[i];
    if (put_text(x, g->host, &row.host_off) || put_text(x, g->http_method, &row.method_off) ||
        put_text(x, g->pattern, &row.pattern_off) ||
        bl_req_append(x->r, &x->rows, &row, sizeof row)) {
        x->failed = 1;
        return 1;
    }
    return 0;
}

/* qsort has no context argument */
static _Thread_local int sort_key;
static _Thread_local const char *sort_text; /* list_ctx.text */

static uint64_t key_of(const nrow *g)
{
    switch (sort_key) {
    case S_P50: return g->q[0];
    case S_P90: return g->q[1];
    case S_P99: return g->q[2];
    case S_ERRORS: return (uint64_t)g->errors;
    case S_BYTES: return (uint64_t)g->bytes_in + (uint64_t)g->bytes_out;
    default: return (uint64_t)g->count;
    }
}

static int cmp_row(const void *a, const void *b)
{
    const nrow *x = a, *y = b;
    uint64_t kx = key_of(x), ky = key_of(y);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    /* then by host, HTTP method, pattern (bytewise): group ids follow the
     * processing order, which on PostgreSQL is not the same on every store */
    const size_t ox[3] = { x->host_off, x->method_off, x->pattern_off };
    const size_t oy[3] = { y->host_off, y->method_off, y->pattern_off };
    for (int i = 0; i < 3; i++) {
        int c = strcmp(sort_text + ox[i], sort_text + oy[i]);
        if (c)
            return c < 0 ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

static json_t *opt_int(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

/* mean of `sum` over n requests, µs (rounded down); null when none */
static json_t *mean(int64_t sum, int64_t n)
{
    return n > 0 ? json_integer(sum / n) : json_null();
}

typedef struct callers_ctx {
    req *r;
    json_t *arr;
    int failed;
} callers_ctx;

static int caller_row(const bl_net_caller *k, void *ctx)
{
    callers_ctx *x = ctx;
    size_t sz = CALLER_CHARGE + 2 * (strlen(k->cls) + strlen(k->name) + strlen(k->descriptor) +
                                     strlen(k->source_file));
    json_t *o = NULL;
    if (!bl_req_take(x->r, sz))
        o = json_pack("{s:{s:o,s:o,s:o,s:o},s:I}", "method", "class", bl_json_text(k->cls),
                      "name", bl_json_text(k->name), "descriptor", bl_json_text(k->descriptor),
                      "source_file", bl_json_text(k->source_file), "count",
                      (json_int_t)k->count);
    if (!o || json_array_append_new(x->arr, o)) {
        x->failed = 1;
        return 1;
    }
    return 0;
}

static json_t *row_json(const list_ctx *x, const nrow *g, json_t *callers)
{
    const char *t = x->text.data;
    json_t *status = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "1xx", (json_int_t)g->status[0],
                               "2xx", (json_int_t)g->status[1], "3xx", (json_int_t)g->status[2],
                               "4xx", (json_int_t)g->status[3], "5xx", (json_int_t)g->status[4],
                               "failed", (json_int_t)g->status[5]);
    double rate = g->count ? (double)g->errors / (double)g->count : 0.0;
    json_t *o = json_pack(
        "{s:o,s:o,s:o,s:I,s:I,s:f,s:o,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:o}",
        "host", bl_json_text(t + g->host_off), "pattern", bl_json_text(t + g->pattern_off),
        "http_method", bl_json_text(t + g->method_off), "count", (json_int_t)g->count, "errors",
        (json_int_t)g->errors, "error_rate", rate, "status", status, "p50_us",
        (json_int_t)g->q[0], "p90_us", (json_int_t)g->q[1], "p99_us", (json_int_t)g->q[2],
        "max_us", (json_int_t)g->max_us, "ttfb_p50_us", opt_int(g->tq[0]), "ttfb_p90_us",
        opt_int(g->tq[1]), "ttfb_p99_us", opt_int(g->tq[2]), "ttfb_max_us",
        g->tq[0] < 0 ? json_null() : json_integer(g->ttfb_max_us), "dns_mean_us",
        mean(g->dns_us, g->dns_n), "connect_mean_us", mean(g->connect_us, g->connect_n),
        "tls_mean_us", mean(g->tls_us, g->tls_n), "bytes_in", (json_int_t)g->bytes_in,
        "bytes_out", (json_int_t)g->bytes_out, "callers", callers);
    return o;
}

/* a query value given as 1..max bytes of the allowed set (NULL: absent) */
static int arg_ok(const char *v, size_t max, int upper_only)
{
    size_t n = strlen(v);
    if (n < 1 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (upper_only ? ch < 'A' || ch > 'Z' : ch <= ' ' || ch == 0x7f)
            return 0;
    }
    return 1;
}

enum MHD_Result bl_h_network(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int64_t since, until, limit, ncallers;
    const char *sort = bl_arg(c, "sort"), *host = bl_arg(c, "host"),
               *method = bl_arg(c, "method");
    int sk = S_COUNT;
    if (sort) {
        sk = -1;
        for (int i = 0; i < N_SORTS; i++)
            if (!strcmp(sort, sort_names[i]))
                sk = i;
        if (sk < 0)
            return bl_reply_error(c, h, 400,
                                  "'sort' must be one of count, p50, p90, p99, errors, bytes");
    }
    if (bl_arg_i64(c, "since", 0, 0, INT64_MAX / 1000000, &since, err, sizeof err) ||
        bl_arg_i64(c, "until", INT64_MAX / 1000000, 0, INT64_MAX / 1000000, &until, err,
                   sizeof err) ||
        bl_arg_i64(c, "limit", 50, 0, 10000, &limit, err, sizeof err) ||
        bl_arg_i64(c, "callers", 10, 0, 100, &ncallers, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    if (since > until) /* whole hours: an inverted range inside one hour would read it */
        return bl_reply_error(c, h, 400, "'since' must not be after 'until'");
    if (host && !arg_ok(host, 255, 0))
        return bl_reply_error(c, h, 400, "'host' must be 1-255 bytes without spaces");
    if (method && !arg_ok(method, 16, 1))
        return bl_reply_error(c, h, 400, "'method' must be 1-16 upper-case letters (GET, POST...)");
    char lhost[256];
    if (host) { /* hosts are stored lower-cased */
        size_t i = 0;
        for (; host[i]; i++)
            lhost[i] = host[i] >= 'A' && host[i] <= 'Z' ? (char)(host[i] + 32) : host[i];
        lhost[i] = '\0';
    }
    int64_t build_id;
    char bname[BL_BUILD_NAME_MAX + 1];
    enum MHD_Result rc;
    bl_db *db = bl_http_db_pick(c, h, r, &build_id, bname, sizeof bname, &rc);
    if (!db)
        return rc;
    /* [since, until) in whole hours (a partial hour counts whole, as /blocks) */
    int64_t until_us = until > INT64_MAX / 1000000 - 1 ? INT64_MAX : until * 1000000;
    int64_t from = since * 1000000 / HOUR_US;
    int64_t to = until_us / HOUR_US + (until_us % HOUR_US != 0) - 1;
    list_ctx x;
    memset(&x, 0, sizeof x);
    x.r = r;
    bl_buf_init(&x.rows, 0);
    bl_buf_init(&x.text, 0);
    bl_sketch_init(&x.sk);
    bl_err e = bl_net_groups(db, build_id, from, to, host ? lhost : NULL, method, group_row, &x);
    nrow *g = (nrow *)(void *)x.rows.data;
    size_t n = x.rows.len / sizeof *g;
    if (!e && !x.failed && n) {
        sort_key = sk;
        sort_text = x.text.data;
        qsort(g, n, sizeof *g, cmp_row);
    }
    json_t *arr = json_array();
    if (!arr)
        x.failed = 1;
    for (size_t i = 0; i < n && i < (size_t)limit && !e && !x.failed; i++) {
        callers_ctx cx = { r, json_array(), 0 };
        if (!cx.arr || bl_req_take(r, ROW_CHARGE)) {
            json_decref(cx.arr);
            x.failed = 1;
            break;
        }
        e = bl_net_callers(db, build_id, g[i].id, from, to, ncallers, caller_row, &cx);
        if (e || cx.failed) {
            json_decref(cx.arr);
            x.failed = cx.failed;
            break;
        }
        json_t *o = row_json(&x, &g[i], cx.arr);
        if (!o || json_array_append_new(arr, o))
            x.failed = 1;
    }
    bl_req_buf_free(r, &x.rows);
    bl_req_buf_free(r, &x.text);
    bl_sketch_cleanup(&x.sk);
    if (e || x.failed) {
        json_decref(arr);
        return e && !x.failed ? bl_reply_error(c, h, 500, "database error")
                              : bl_reply_error(c, h, 503, "not enough memory for this answer "
                                                          "now; retry later or ask for fewer "
                                                          "rows (limit)");
    }
    json_t *v = json_pack("{s:o,s:o,s:s,s:o}", "app", bl_json_text(r->app), "build",
                          bl_json_text(bname), "sort", sort_names[sk], "requests", arr);
    bl_buf b;
    bl_buf_init(&b, 0);
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!s || bl_req_append(r, &b, s, strlen(s))) {
        free(s);
        bl_req_buf_free(r, &b);
        return bl_reply_error(c, h, 503, "not enough memory for this answer now; retry later "
                                         "or ask for fewer rows (limit)");
    }
    free(s);
    return bl_reply_buf(c, h, 200, "application/json", &b);
}
