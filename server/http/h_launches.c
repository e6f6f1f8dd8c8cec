/*
 * h_launches.c — app launch endpoints (issue 15):
 *   GET /v1/apps/{app}/launches?build=&kind=cold|warm|hot&since=&until=&methods=
 *   GET /v1/apps/{app}/launches/tree?build=&kind=&limit=
 * Shapes, units and errors are in docs/api.md ("Launches"). Figures come
 * from store/launches.h; the launched activity's class names are retraced
 * here with the build's mapping (as block targets), so a mapping uploaded
 * late applies too. Every object an answer holds is charged to the
 * request's in-flight budget (503 when it is spent).
 */
#include "http/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/sketch.h"
#include "store/builds.h"
#include "store/launches.h"
#include "symbol/mapindex.h"
#include "symbol/retrace.h"

#define HOUR_US 3600000000ll
#define OBJ_CHARGE 1024 /* bytes charged per JSON object built (an object and its members) */

static const char *const oom_msg =
    "not enough memory for this answer now; retry later or ask for fewer rows";

/* The `kind` argument: BL_LCH_* kind, dflt when absent or empty; -2 when
 * it is none of the kinds. */
static int kind_arg(struct MHD_Connection *c, int dflt)
{
    const char *k = bl_arg(c, "kind");
    if (!k || !*k)
        return dflt;
    for (int i = 0; i < BL_LCH_KINDS; i++)
        if (!strcmp(k, bl_lch_kind_name(i)))
            return i;
    return -2;
}

/* Answers a JSON value (stolen) whose size is charged first. */
static enum MHD_Result reply_charged(struct MHD_Connection *c, bl_http *h, req *r, json_t *v)
{
    bl_buf b;
    bl_buf_init(&b, 0);
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!s || bl_req_append(r, &b, s, strlen(s))) {
        free(s);
        bl_req_buf_free(r, &b);
        return bl_reply_error(c, h, 503, oom_msg);
    }
    free(s);
    return bl_reply_buf(c, h, 200, "application/json", &b);
}

/* ---- GET /launches ------------------------------------------------------ */

/* One kind as listed (the store's strings are gone after its callback). */
typedef struct kind_row {
    int kind;
    int64_t count, first_at, last_at;
    char *activity; /* malloc'd, NULL: none */
} kind_row;

typedef struct kinds_ctx {
    kind_row rows[BL_LCH_KINDS];
    int n, oom;
} kinds_ctx;

static int kind_cb(const bl_lch_kind *k, void *ctx)
{
    kinds_ctx *x = ctx;
    if (x->n >= BL_LCH_KINDS)
        return 1;
    kind_row *row = &x->rows[x->n];
    *row = (kind_row){ k->kind, k->count, k->first_at, k->last_at, NULL };
    if (k->activity && !(row->activity = strdup(k->activity))) {
        x->oom = 1;
        return 1;
    }
    x->n++;
    return 0;
}

/* The percentiles of one measure: {"p50_us", "p90_us", "p99_us", "max_us"}
 * (+ "phase" and "count" as asked). */
typedef struct measures_ctx {
    req *r;
    bl_sketch sk;
    json_t *phases;   /* array */
    json_t *ttid, *ttfd;
    int oom;
} measures_ctx;

static int measure_cb(const bl_lch_measure_row *m, void *ctx)
{
    measures_ctx *x = ctx;
    const char *name = bl_lch_measure_name(m->measure);
    if (!name || m->count <= 0)
        return 0; /* stored by someone else: not ours to show */
    if (bl_req_take(x->r, OBJ_CHARGE)) {
        x->oom = 1;
        return 1;
    }
    bl_sketch_reset(&x->sk);
    if (m->sketch_len && bl_sketch_merge_blob(&x->sk, m->sketch, m->sketch_len) == BL_ENOMEM) {
        x->oom = 1;
        return 1;
    }
    static const double qs[3] = { 0.5, 0.9, 0.99 };
    uint64_t q[3];
    for (int i = 0; i < 3; i++) {
        uint64_t v = bl_sketch_quantile(&x->sk, qs[i]);
        q[i] = v > (uint64_t)m->max_us ? (uint64_t)m->max_us : v;
    }
    json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I}", "count", (json_int_t)m->count, "p50_us",
                          (json_int_t)q[0], "p90_us", (json_int_t)q[1], "p99_us",
                          (json_int_t)q[2], "max_us", (json_int_t)m->max_us);
    int bad = !o;
    if (!bad && m->measure < BL_LCH_PHASES)
        bad = json_object_set_new(o, "phase", json_string(name)) ||
              json_array_append(x->phases, o);
    if (!bad && m->measure == BL_LCH_TTID && !x->ttid)
        x->ttid = json_incref(o);
    if (!bad && m->measure == BL_LCH_TTFD && !x->ttfd)
        x->ttfd = json_incref(o);
    json_decref(o);
    if (bad) {
        x->oom = 1;
        return 1;
    }
    return 0;
}

typedef struct methods_ctx {
    req *r;
    json_t *arr;
    int oom;
} methods_ctx;

static size_t slen(const char *s)
{
    return s ? strlen(s) : 0;
}

static int method_cb(const bl_lch_method_row *m, void *ctx)
{
    methods_ctx *x = ctx;
    const bl_blk_names *n = &m->names;
    if (bl_req_take(x->r, OBJ_CHARGE + 2 * (slen(n->cls) + slen(n->name) +
                                            slen(n->descriptor) + slen(n->source_file)))) {
        x->oom = 1;
        return 1;
    }
    json_t *o = json_pack("{s:{s:o,s:o,s:o,s:o},s:I,s:I,s:I,s:I}", "method", "class",
                          bl_json_text(n->cls), "name", bl_json_text(n->name), "descriptor",
                          bl_json_text(n->descriptor), "source_file",
                          bl_json_text(n->source_file), "count", (json_int_t)m->count,
                          "total_us", (json_int_t)m->total_us, "self_us",
                          (json_int_t)m->self_us, "launches", (json_int_t)m->launches);
    if (!o || json_array_append_new(x->arr, o)) {
        x->oom = 1;
        return 1;
    }
    return 0;
}

/* The JSON of one kind. BL_EIO, BL_ENOMEM. */
static bl_err kind_json(bl_db *db, req *r, int64_t build_id, const bl_mapindex *mi,
                        const kind_row *k, int64_t from, int64_t to, int64_t methods,
                        json_t **out)
{
    if (bl_req_take(r, OBJ_CHARGE))
        return BL_ENOMEM;
    measures_ctx mx = { r, { 0 }, json_array(), NULL, NULL, 0 };
    bl_sketch_init(&mx.sk);
    methods_ctx sx = { r, json_array(), 0 };
    bl_err e = mx.phases && sx.arr ? BL_OK : BL_ENOMEM;
    if (!e && !(e = bl_lch_measures(db, build_id, k->kind, from, to, measure_cb, &mx)) &&
        mx.oom)
        e = BL_ENOMEM;
    if (!e && !(e = bl_lch_methods(db, build_id, k->kind, from, to, methods, method_cb, &sx)) &&
        sx.oom)
        e = BL_ENOMEM;
    bl_sketch_cleanup(&mx.sk);
    /* the activity's class names retraced with the build's mapping, if any */
    json_t *act = NULL;
    if (!e && k->activity) {
        bl_buf tb;
        bl_buf_init(&tb, 0);
        size_t al = strlen(k->activity);
        if (bl_req_take(r, 2 * al + 64) || bl_retrace_class_names(mi, k->activity, al, &tb) ||
            !(act = bl_json_text(tb.data)))
            e = BL_ENOMEM;
        bl_buf_cleanup(&tb);
    }
    if (!e) {
        *out = json_pack("{s:s,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "kind",
                         bl_lch_kind_name(k->kind), "count", (json_int_t)k->count, "first_at",
                         (json_int_t)k->first_at, "last_at", (json_int_t)k->last_at,
                         "activity", act ? act : json_null(), "phases", mx.phases, "ttid",
                         mx.ttid ? mx.ttid : json_null(), "ttfd",
                         mx.ttfd ? mx.ttfd : json_null(), "slowest_methods", sx.arr);
        return *out ? BL_OK : BL_ENOMEM; /* json_pack's "o" steals even on failure */
    }
    json_decref(act);
    json_decref(mx.phases);
    json_decref(mx.ttid);
    json_decref(mx.ttfd);
    json_decref(sx.arr);
    return e;
}

enum MHD_Result bl_h_launches(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int64_t since, until, methods;
    int kind = kind_arg(c, -1);
    if (kind == -2)
        return bl_reply_error(c, h, 400, "'kind' must be one of cold, warm, hot");
    if (bl_arg_i64(c, "since", 0, 0, INT64_MAX / 1000000, &since, err, sizeof err) ||
        bl_arg_i64(c, "until", INT64_MAX / 1000000, 0, INT64_MAX / 1000000, &until, err,
                   sizeof err) ||
        bl_arg_i64(c, "methods", 20, 0, 1000, &methods, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    if (since > until)
        return bl_reply_error(c, h, 400, "'since' must not be after 'until'");
    int64_t build_id;
    char bname[BL_BUILD_NAME_MAX + 1];
    enum MHD_Result rc;
    bl_db *db = bl_http_db_pick(c, h, r, &build_id, bname, sizeof bname, &rc);
    if (!db)
        return rc;
    /* whole hours overlapping [since, until) */
    int64_t until_us = until > INT64_MAX / 1000000 - 1 ? INT64_MAX : until * 1000000;
    int64_t from = since * 1000000 / HOUR_US;
    int64_t to = until_us / HOUR_US + (until_us % HOUR_US != 0) - 1;
    /* best effort: without a mapping (or an index that cannot be opened
     * now) activities are answered as the runtime named them */
    bl_mapindex *mi = NULL;
    char bdir[BL_PATH_MAX];
    if (bl_http_build_dir(h, r, r->app_id, bname, bdir) != BL_OK ||
        bl_datadir_open_index(h->data_dir, bdir, &mi, NULL) != BL_OK)
        mi = NULL;
    kinds_ctx kx = { .n = 0 };
    /* one snapshot for every read of the answer: counts and percentiles of
     * the same launches even when the writer commits meanwhile */
    bl_err e = bl_db_read_begin(db);
    int in_read = !e;
    if (!e)
        e = bl_lch_kinds(db, build_id, kind, from, to, kind_cb, &kx);
    if (!e && kx.oom)
        e = BL_ENOMEM;
    json_t *arr = json_array();
    if (!e && !arr)
        e = BL_ENOMEM;
    for (int i = 0; i < kx.n && !e; i++) {
        json_t *o;
        if (!(e = kind_json(db, r, build_id, mi, &kx.rows[i], from, to, methods, &o)) &&
            json_array_append_new(arr, o))
            e = BL_ENOMEM;
    }
    if (in_read)
        bl_db_read_end(db);
    for (int i = 0; i < kx.n; i++)
        free(kx.rows[i].activity);
    if (mi)
        bl_mapindex_close(mi);
    if (e) {
        json_decref(arr);
        return e == BL_EIO ? bl_reply_error(c, h, 500, "database error")
                           : bl_reply_error(c, h, 503, oom_msg);
    }
    return reply_charged(c, h, r,
                         json_pack("{s:o,s:o,s:o}", "app", bl_json_text(r->app), "build",
                                   bl_json_text(bname), "launches", arr));
}

/* ---- GET /launches/tree ------------------------------------------------- */

typedef struct launch_nodes_ctx {
    bl_db *db;
    int64_t build_id;
    int kind;
} launch_nodes_ctx;

static bl_err launch_nodes(bl_blk_node_cb cb, void *cb_ctx, void *ctx)
{
    launch_nodes_ctx *x = ctx;
    return bl_lch_nodes(x->db, x->build_id, x->kind, cb, cb_ctx);
}

enum MHD_Result bl_h_launch_tree(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int64_t limit;
    int kind = kind_arg(c, BL_LCH_COLD);
    if (kind == -2)
        return bl_reply_error(c, h, 400, "'kind' must be one of cold, warm, hot");
    if (bl_arg_i64(c, "limit", 10000, 0, 100000, &limit, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    int64_t build_id;
    char bname[BL_BUILD_NAME_MAX + 1];
    enum MHD_Result rc;
    bl_db *db = bl_http_db_pick(c, h, r, &build_id, bname, sizeof bname, &rc);
    if (!db)
        return rc;
    launch_nodes_ctx lx = { db, build_id, kind };
    json_t *roots;
    int truncated;
    bl_err e = bl_blk_tree_json(r, limit, launch_nodes, &lx, &roots, &truncated);
    if (e)
        return e == BL_EIO ? bl_reply_error(c, h, 500, "database error")
                           : bl_reply_error(c, h, 503, "not enough memory for this answer now; "
                                                       "retry later");
    return reply_charged(c, h, r,
                         json_pack("{s:o,s:o,s:s,s:b,s:o}", "app", bl_json_text(r->app), "build",
                                   bl_json_text(bname), "kind", bl_lch_kind_name(kind),
                                   "truncated", truncated, "roots", roots));
}
