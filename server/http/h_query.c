/*
 * h_query.c — read endpoints:
 *   GET /v1/apps/{app}/builds
 *   GET /v1/apps/{app}/slow-methods?build=&thread=main|all&since=&until=&sort=&limit=
 * (the call tree, GET /v1/apps/{app}/call-tree, is h_calltree.c). Shapes and
 * units are in docs/api.md. Times are µs; since/until are Unix seconds and
 * select whole hours (aggregates are kept per hour).
 */
#include "http/internal.h"
#include "http/textout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/builds.h"
#include "store/db.h"
#include "store/slow_methods.h"

static json_t *text_or_null(const char *s)
{
    return s ? bl_json_text(s) : json_null();
}

/* An integer the store did not record (-1) is null. */
static json_t *int_or_null(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

typedef struct builds_ctx {
    json_t *arr;
    int oom;
} builds_ctx;

static int build_row(const bl_build_row *b, void *ctx)
{
    builds_ctx *x = ctx;
    json_t *mapping = json_null(), *mids = json_null();
    if (b->mapping_hash)
        mapping = json_pack("{s:o,s:o,s:o}", "hash", bl_json_text(b->mapping_hash), "bytes",
                            int_or_null(b->mapping_size), "uploaded_at",
                            int_or_null(b->mapping_at));
    if (b->methodids_hash)
        mids = json_pack("{s:o,s:o,s:s,s:o}", "hash", bl_json_text(b->methodids_hash), "methods",
                         int_or_null(b->methodids_count), "names",
                         b->methodids_obfuscated ? "obfuscated" : "original", "uploaded_at",
                         int_or_null(b->methodids_at));
    /* warnings: a JSON array of strings written by the processor */
    json_t *warn = b->warnings ? json_loads(b->warnings, 0, NULL) : NULL;
    if (!json_is_array(warn)) {
        json_decref(warn);
        warn = json_array();
    }
    /* a build left out of the list would be a wrong answer: 503 */
    x->oom = json_array_append_new(
                 x->arr, json_pack("{s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o}", "build",
                                   bl_json_text(b->name), "created_at", json_integer(b->created_at),
                                   "mapping", mapping, "method_ids", mids, "symbolicated",
                                   b->symbolicated_at >= 0, "batches", json_integer(b->batches),
                                   "records", json_integer(b->records), "warnings", warn)) != 0;
    return x->oom;
}

enum MHD_Result bl_h_builds(struct MHD_Connection *c, bl_http *h, req *r)
{
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_error(c, h, 503, "database unavailable");
    builds_ctx x = { json_array(), 0 };
    if (!x.arr)
        return bl_reply_error(c, h, 503, "out of memory");
    bl_err e = bl_builds_list(db, r->app_id, build_row, &x);
    if (x.oom) {
        json_decref(x.arr);
        return bl_reply_error(c, h, 503, "out of memory");
    }
    if (e) {
        json_decref(x.arr);
        return bl_reply_error(c, h, 500, "database error");
    }
    return bl_reply_json(c, h, 200, json_pack("{s:s,s:o}", "app", r->app, "builds", x.arr));
}

/* ---- slow methods ---------------------------------------------------------
 * The store sorts and cuts to `limit` (store/slow_methods.h); each row is
 * written as it comes, so memory does not grow with the number of methods. */

typedef struct slow_ctx {
    bl_out *o;
    int first;
} slow_ctx;

static int slow_row(const bl_slow_row *m, void *ctx)
{
    slow_ctx *x = ctx;
    if (!x->first)
        bl_out_raw(x->o, ",", 1);
    x->first = 0;
    bl_out_json(x->o, json_pack("{s:{s:o,s:o,s:o,s:o},s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "method",
                             "class", text_or_null(m->cls), "name", text_or_null(m->name),
                             "descriptor", text_or_null(m->descriptor), "source_file",
                             text_or_null(m->source_file), "count", (json_int_t)m->count,
                             "total_us", (json_int_t)m->total_us, "self_us",
                             (json_int_t)m->self_us, "p50_us", (json_int_t)m->p50_us, "p90_us",
                             (json_int_t)m->p90_us, "p99_us", (json_int_t)m->p99_us, "max_us",
                             (json_int_t)m->max_us));
    return x->o->e != BL_OK;
}

enum MHD_Result bl_h_slow(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int main_only;
    int64_t since, until, limit;
    const char *build = bl_arg(c, "build");
    const char *sort = bl_arg(c, "sort");
    /* indexed by bl_slow_sort */
    static const char *const sorts[BL_SLOW_SORTS] = { "p50",   "p90",  "p99", "count",
                                                      "total", "self", "max" };
    int sort_ix = BL_SLOW_TOTAL;
    if (sort) {
        sort_ix = -1;
        for (int i = 0; i < BL_SLOW_SORTS; i++)
            if (!strcmp(sort, sorts[i]))
                sort_ix = i;
        if (sort_ix < 0)
            return bl_reply_error(c, h, 400,
                                  "'sort' must be one of p50, p90, p99, count, total, self, max");
    }
    if (bl_arg_thread(c, &main_only, err, sizeof err) ||
        bl_arg_i64(c, "since", 0, 0, INT64_MAX / 1000000, &since, err, sizeof err) ||
        bl_arg_i64(c, "until", INT64_MAX / 1000000, 0, INT64_MAX / 1000000, &until, err,
                sizeof err) ||
        bl_arg_i64(c, "limit", 50, 0, 10000, &limit, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    enum MHD_Result rc;
    bl_db *db = bl_http_db_build(c, h, r, build, &rc);
    if (!db)
        return rc;
    bl_slow_query q = { r->app_id,
                        build,
                        main_only,
                        since * 1000000,
                        until > INT64_MAX / 1000000 - 1 ? INT64_MAX : until * 1000000,
                        (bl_slow_sort)sort_ix,
                        limit };
    bl_out o;
    bl_out_init(&o, r);
    bl_out_str(&o, "{\"app\":");
    bl_out_json(&o, bl_json_text(r->app));
    bl_out_str(&o, ",\"build\":");
    bl_out_json(&o, build ? bl_json_text(build) : json_null());
    bl_out_str(&o, main_only ? ",\"thread\":\"main\",\"sort\":\""
                             : ",\"thread\":\"all\",\"sort\":\"");
    bl_out_str(&o, sorts[sort_ix]);
    bl_out_str(&o, "\",\"methods\":[");
    slow_ctx x = { &o, 1 };
    /* one snapshot for every read of the answer: a rollups rebuild step
     * committed between them must not show half done */
    bl_err e = BL_OK;
    if (!o.e && !(e = bl_db_read_begin(db))) {
        e = bl_slow_methods(db, &q, slow_row, &x);
        bl_db_read_end(db);
    }
    if (!o.e && e) {
        bl_req_buf_free(r, &o.b);
        return bl_reply_error(c, h, 500, "database error");
    }
    bl_out_str(&o, "]}");
    return bl_out_reply(c, h, &o);
}
