/*
 * h_blocks.c — block endpoints (issue 13):
 *   GET /v1/apps/{app}/blocks?build=&since=&until=&sort=count|p50|p90|p99|max&limit=
 *   GET /v1/apps/{app}/blocks/{signature}?build=&limit=
 * Shapes, units and errors are in docs/api.md ("Blocks"). Group figures
 * come from store/blocks.h; the signature text is computed here from the
 * path's current method names (agg/blocks.h), so it follows late
 * symbolication. Every byte an answer holds is charged to the request's
 * in-flight budget (503 when it is spent).
 */
#include "http/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/blocks.h"
#include "agg/sketch.h"
#include "common/u128map.h"
#include "store/blocks.h"
#include "store/builds.h"
#include "symbol/mapindex.h"
#include "symbol/retrace.h"

#define HOUR_US 3600000000ll
#define NODE_CHARGE 1024 /* bytes charged per call-tree node (a jansson object and its members) */
/* GET /blocks/{signature} computes the signatures of at most this many
 * groups of the build (by count, biggest first): the most /blocks lists */
#define BLOCK_SIG_SCAN_MAX 10000

enum { S_COUNT, S_P50, S_P90, S_P99, S_MAX, N_SORTS };
static const char *const sort_names[N_SORTS] = { "count", "p50", "p90", "p99", "max" };

/* One group as listed, its strings in the context's text buffer. */
typedef struct grp {
    int64_t id, count, anrs, max_us, first_at, last_at, devices, sessions;
    uint64_t q[3]; /* p50, p90, p99 */
    size_t path_off, target_off;
} grp;

typedef struct list_ctx {
    req *r;
    bl_buf rows;  /* grp[], charged */
    bl_buf text;  /* NUL-terminated strings, charged */
    bl_sketch sk;
    bl_mapindex *mi; /* the build's mapping index (owned; NULL: none, targets as sent) */
    int failed;   /* out of memory / budget */
} list_ctx;

static int put_text(list_ctx *x, const char *s, size_t *off)
{
    *off = x->text.len;
    return bl_req_append(x->r, &x->text, s, strlen(s) + 1) != BL_OK;
}

static int group_row(const bl_blk_group *g, void *ctx)
{
    list_ctx *x = ctx;
    grp row = { g->id, g->count, g->anrs, g->max_us, g->first_at, g->last_at,
                g->devices, g->sessions, { 0, 0, 0 }, 0, 0 };
    bl_sketch_reset(&x->sk);
    if (g->sketch_len && bl_sketch_merge_blob(&x->sk, g->sketch, g->sketch_len) == BL_ENOMEM) {
        x->failed = 1;
        return 1;
    }
    static const double qs[3] = { 0.5, 0.9, 0.99 };
    for (int i = 0; i < 3; i++) {
        uint64_t v = bl_sketch_quantile(&x->sk, qs[i]);
        row.q[i] = v > (uint64_t)g->max_us ? (uint64_t)g->max_us : v;
    }
    if (put_text(x, g->path, &row.path_off) || put_text(x, g->target, &row.target_off) ||
        bl_req_append(x->r, &x->rows, &row, sizeof row)) {
        x->failed = 1;
        return 1;
    }
    return 0;
}

static void list_free(list_ctx *x)
{
    bl_req_buf_free(x->r, &x->rows);
    bl_req_buf_free(x->r, &x->text);
    bl_sketch_cleanup(&x->sk);
    if (x->mi)
        bl_mapindex_close(x->mi);
}

/* qsort has no context argument */
static _Thread_local int sort_key;
static _Thread_local const char *sort_text; /* list_ctx.text */

static uint64_t key_of(const grp *g)
{
    switch (sort_key) {
    case S_P50: return g->q[0];
    case S_P90: return g->q[1];
    case S_P99: return g->q[2];
    case S_MAX: return (uint64_t)g->max_us;
    default: return (uint64_t)g->count;
    }
}

static int cmp_grp(const void *a, const void *b)
{
    const grp *x = a, *y = b;
    uint64_t kx = key_of(x), ky = key_of(y);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    /* then by the stored path (methodIds, the same on every store; group
     * ids are not: on PostgreSQL they follow the processing order) */
    int c = strcmp(sort_text + x->path_off, sort_text + y->path_off);
    if (c)
        return c < 0 ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Names of one method, as JSON, and into the signature accumulator. */
typedef struct names_ctx {
    req *r;       /* NULL: the signature only (no JSON, nothing charged) */
    json_t *obj;
    bl_buf *acc;
    int oom;
} names_ctx;

static size_t slen(const char *s)
{
    return s ? strlen(s) : 0;
}

static void names_cb(const bl_blk_names *n, void *ctx)
{
    names_ctx *x = ctx;
    if (!x->r) {
        if (bl_block_sig_add(x->acc, n->cls, n->name, n->descriptor))
            x->oom = 1;
        return;
    }
    /* the method object is charged before it is built: its four strings
     * twice (jansson's copies and the answer's text) and NODE_CHARGE */
    if (bl_req_take(x->r, NODE_CHARGE + 2 * (slen(n->cls) + slen(n->name) +
                                             slen(n->descriptor) + slen(n->source_file)))) {
        x->oom = 1;
        return;
    }
    x->obj = json_pack("{s:o,s:o,s:o,s:o}", "class", bl_json_text(n->cls), "name",
                       bl_json_text(n->name), "descriptor", bl_json_text(n->descriptor),
                       "source_file", bl_json_text(n->source_file));
    if (!x->obj || bl_block_sig_add(x->acc, n->cls, n->name, n->descriptor))
        x->oom = 1;
}

/* The group's path as a JSON array of methods (out != NULL: every method
 * charged to r, BL_ENOMEM when the budget is spent), and its signature.
 * out == NULL: the signature only. BL_EIO, BL_ENOMEM. */
static bl_err path_json(bl_db *db, int64_t build_id, const char *path, req *r, json_t **out,
                        char sig[33])
{
    bl_buf acc;
    bl_buf_init(&acc, 0);
    bl_block_sig_reset(&acc);
    json_t *arr = out ? json_array() : NULL;
    bl_err e = arr || !out ? BL_OK : BL_ENOMEM;
    for (const char *p = path; *p && !e;) {
        char *end;
        long long mid = strtoll(p, &end, 10);
        names_ctx x = { out ? r : NULL, NULL, &acc, 0 };
        e = bl_blk_method(db, build_id, mid, names_cb, &x);
        if (!e && (x.oom || (out && json_array_append_new(arr, x.obj))))
            e = BL_ENOMEM;
        else if (e)
            json_decref(x.obj);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) /* not a number: stored by someone else; stop */
            break;
    }
    bl_block_sig_text(&acc, sig);
    bl_buf_cleanup(&acc);
    if (e) {
        json_decref(arr);
        return e;
    }
    if (out)
        *out = arr;
    return BL_OK;
}

/* The JSON of one group (without call_tree). */
static bl_err group_json(bl_db *db, int64_t build_id, const list_ctx *x, const grp *g,
                         json_t **out, char sig[33])
{
    json_t *path;
    bl_err e = path_json(db, build_id, x->text.data + g->path_off, x->r, &path, sig);
    if (e)
        return e;
    size_t n = json_array_size(path);
    json_t *method = n ? json_incref(json_array_get(path, n - 1)) : json_null();
    /* the target's class names retraced with the build's mapping, if any */
    const char *t = x->text.data + g->target_off;
    bl_buf tb;
    bl_buf_init(&tb, 0);
    if (bl_req_take(x->r, 2 * strlen(t) + 64) ||
        bl_retrace_class_names(x->mi, t, strlen(t), &tb)) {
        bl_buf_cleanup(&tb);
        json_decref(path);
        json_decref(method);
        return BL_ENOMEM;
    }
    *out = json_pack("{s:s,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "signature", sig,
                     "method", method, "path", path, "count", (json_int_t)g->count, "p50_us",
                     (json_int_t)g->q[0], "p90_us", (json_int_t)g->q[1], "p99_us",
                     (json_int_t)g->q[2], "max_us", (json_int_t)g->max_us, "devices",
                     (json_int_t)g->devices, "sessions", (json_int_t)g->sessions, "anrs",
                     (json_int_t)g->anrs, "first_at", (json_int_t)g->first_at, "last_at",
                     (json_int_t)g->last_at, "target", bl_json_text(tb.data));
    bl_buf_cleanup(&tb);
    return *out ? BL_OK : BL_ENOMEM;
}

/* The build and the groups of [since, until): shared by both endpoints.
 * Returns 0, or -1 with the answer queued in *rc. */
static int load_groups(struct MHD_Connection *c, bl_http *h, req *r, int64_t since,
                       int64_t until, list_ctx *x, int64_t *build_id, char *bname, size_t bcap,
                       bl_db **dbp, enum MHD_Result *rc)
{
    bl_db *db = bl_http_db_pick(c, h, r, build_id, bname, bcap, rc);
    if (!db)
        return -1;
    int64_t until_us = until > INT64_MAX / 1000000 - 1 ? INT64_MAX : until * 1000000;
    int64_t from = since * 1000000 / HOUR_US;
    int64_t to = until_us / HOUR_US + (until_us % HOUR_US != 0) - 1;
    memset(x, 0, sizeof *x);
    x->r = r;
    bl_buf_init(&x->rows, 0);
    bl_buf_init(&x->text, 0);
    bl_sketch_init(&x->sk);
    /* best effort: without a mapping (or an index that cannot be opened
     * now) targets are answered as the runtime named them */
    char bdir[BL_PATH_MAX];
    if (bl_http_build_dir(h, r, r->app_id, bname, bdir) != BL_OK ||
        bl_datadir_open_index(h->data_dir, bdir, &x->mi, NULL) != BL_OK)
        x->mi = NULL;
    bl_err e = bl_blk_groups(db, *build_id, from, to, group_row, x);
    if (x->failed || e) {
        list_free(x);
        *rc = x->failed ? bl_reply_error(c, h, 503, "not enough memory for this answer now; "
                                                    "retry later")
                        : bl_reply_error(c, h, 500, "database error");
        return -1;
    }
    *dbp = db;
    return 0;
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
        return bl_reply_error(c, h, 503, "not enough memory for this answer now; retry later "
                                         "or ask for fewer rows (limit)");
    }
    free(s);
    return bl_reply_buf(c, h, 200, "application/json", &b);
}

enum MHD_Result bl_h_blocks(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int64_t since, until, limit;
    const char *sort = bl_arg(c, "sort");
    int sk = S_COUNT;
    if (sort) {
        sk = -1;
        for (int i = 0; i < N_SORTS; i++)
            if (!strcmp(sort, sort_names[i]))
                sk = i;
        if (sk < 0)
            return bl_reply_error(c, h, 400, "'sort' must be one of count, p50, p90, p99, max");
    }
    if (bl_arg_i64(c, "since", 0, 0, INT64_MAX / 1000000, &since, err, sizeof err) ||
        bl_arg_i64(c, "until", INT64_MAX / 1000000, 0, INT64_MAX / 1000000, &until, err,
                sizeof err) ||
        bl_arg_i64(c, "limit", 50, 0, 10000, &limit, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    if (since > until)
        return bl_reply_error(c, h, 400, "'since' must not be after 'until'");
    list_ctx x;
    int64_t build_id;
    char bname[BL_BUILD_NAME_MAX + 1];
    bl_db *db;
    enum MHD_Result rc;
    if (load_groups(c, h, r, since, until, &x, &build_id, bname, sizeof bname, &db, &rc))
        return rc;
    grp *g = (grp *)(void *)x.rows.data;
    size_t n = x.rows.len / sizeof *g;
    sort_key = sk;
    sort_text = x.text.data;
    if (n)
        qsort(g, n, sizeof *g, cmp_grp);
    json_t *arr = json_array();
    bl_err e = arr ? BL_OK : BL_ENOMEM;
    for (size_t i = 0; i < n && i < (size_t)limit && !e; i++) {
        json_t *o;
        char sig[33];
        if ((e = bl_req_take(r, NODE_CHARGE) ? BL_ENOMEM : BL_OK))
            break; /* the group object; its path's methods are charged as built */
        e = group_json(db, build_id, &x, &g[i], &o, sig);
        if (!e && json_array_append_new(arr, o))
            e = BL_ENOMEM;
    }
    list_free(&x);
    if (e) {
        json_decref(arr);
        return e == BL_EIO ? bl_reply_error(c, h, 500, "database error")
                           : bl_reply_error(c, h, 503, "not enough memory for this answer now; "
                                                       "retry later or ask for fewer rows (limit)");
    }
    return reply_charged(c, h, r,
                         json_pack("{s:o,s:o,s:s,s:o}", "app", bl_json_text(r->app), "build",
                                   bl_json_text(bname), "sort", sort_names[sk], "blocks", arr));
}

/* ---- one group and its merged call tree -------------------------------- */

/* the member a node's methodId is kept in while its tree is sorted */
#define TIE_MID "\x01mid"

typedef struct tree_ctx {
    req *r;
    bl_u128map ix;     /* node id -> index in objs + 1 */
    json_t **objs;     /* nodes loaded, in id order */
    size_t n, cap;
    int failed;
} tree_ctx;

static int tree_node(const bl_blk_node *n, void *ctx)
{
    tree_ctx *t = ctx;
    uint64_t *pv = n->parent ? bl_u128map_get(&t->ix, (uint64_t)n->parent, 0) : NULL;
    if (n->parent && !pv)
        return 0; /* below a node left out */
    /* the parent's index now: the put below may move the map's slots */
    size_t parent_ix = pv ? (size_t)*pv : 0;
    if (bl_req_take(t->r, NODE_CHARGE)) {
        t->failed = 1;
        return 1;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        json_t **o = realloc(t->objs, nc * sizeof *o);
        if (!o) {
            t->failed = 1;
            return 1;
        }
        t->objs = o;
        t->cap = nc;
    }
    json_t *kids = json_array();
    /* TIE_MID: the methodId for sort_nodes, removed before the answer */
    json_t *o = json_pack("{s:{s:o,s:o,s:o,s:o},s:I,s:I,s:I,s:o,s:I}", "method", "class",
                          bl_json_text(n->names.cls), "name", bl_json_text(n->names.name),
                          "descriptor", bl_json_text(n->names.descriptor), "source_file",
                          bl_json_text(n->names.source_file), "count", (json_int_t)n->count,
                          "total_us", (json_int_t)n->total_us, "self_us",
                          (json_int_t)n->self_us, "children", kids, TIE_MID,
                          (json_int_t)n->method_id);
    uint64_t *v;
    int ins;
    if (!o || bl_u128map_put(&t->ix, (uint64_t)n->id, 0, t->n + 1, &v, &ins)) {
        json_decref(o);
        t->failed = 1;
        return 1;
    }
    t->objs[t->n++] = o;
    if (parent_ix && json_array_append(json_object_get(t->objs[parent_ix - 1], "children"), o)) {
        t->failed = 1;
        return 1;
    }
    return 0;
}

/* 0 when the method names of nodes a and b are the same, else their order
 * (member k of "method", bytewise) */
static int cmp_name(const json_t *a, const json_t *b, const char *k)
{
    const json_t *x = json_object_get(json_object_get(a, "method"), k);
    const json_t *y = json_object_get(json_object_get(b, "method"), k);
    const char *sx = json_string_value(x), *sy = json_string_value(y);
    size_t lx = json_string_length(x), ly = json_string_length(y);
    int c = memcmp(sx ? sx : "", sy ? sy : "", lx < ly ? lx : ly);
    return c ? (c < 0 ? -1 : 1) : lx < ly ? -1 : lx > ly;
}

/* By total_us descending; equal times by the method's names (class, name,
 * descriptor, bytewise), then its methodId: the order of call-tree answers
 * (h_calltree.c, "equal times"), never the order nodes were stored in. */
static int cmp_total(const void *a, const void *b)
{
    const json_t *na = *(json_t *const *)a, *nb = *(json_t *const *)b;
    json_int_t x = json_integer_value(json_object_get(na, "total_us"));
    json_int_t y = json_integer_value(json_object_get(nb, "total_us"));
    if (x != y)
        return x > y ? -1 : 1;
    int c;
    if ((c = cmp_name(na, nb, "class")) || (c = cmp_name(na, nb, "name")) ||
        (c = cmp_name(na, nb, "descriptor")))
        return c;
    x = json_integer_value(json_object_get(na, TIE_MID));
    y = json_integer_value(json_object_get(nb, TIE_MID));
    return x < y ? -1 : x > y;
}

/* Sorts an array of nodes by cmp_total (in place). */
static int sort_nodes(json_t *arr)
{
    size_t k = json_array_size(arr);
    if (k < 2)
        return 0;
    json_t **tmp = malloc(k * sizeof *tmp);
    if (!tmp)
        return -1;
    for (size_t i = 0; i < k; i++)
        tmp[i] = json_incref(json_array_get(arr, i));
    qsort(tmp, k, sizeof *tmp, cmp_total);
    json_array_clear(arr);
    int bad = 0;
    for (size_t i = 0; i < k; i++)
        bad |= json_array_append_new(arr, tmp[i]);
    free(tmp);
    return bad ? -1 : 0;
}

/* Keeps the first *budget nodes of the sorted nodes arr in depth-first
 * order (a node, then its children's subtrees in order), as call-tree's
 * limit does, and removes the others; *truncated = 1 when one was removed.
 * Recursion as deep as the tree (json_dumps goes as deep). */
static void keep_first(json_t *arr, int64_t *budget, int *truncated)
{
    size_t k = json_array_size(arr);
    for (size_t i = 0; i < k; i++) {
        if (*budget <= 0) {
            for (size_t j = k; j > i; j--)
                json_array_remove(arr, j - 1);
            *truncated = 1;
            return;
        }
        (*budget)--;
        keep_first(json_object_get(json_array_get(arr, i), "children"), budget, truncated);
    }
}

bl_err bl_blk_tree_json(req *r, int64_t limit, bl_tree_lister list, void *ctx, json_t **roots,
                        int *truncated)
{
    tree_ctx t = { r, { 0 }, NULL, 0, 0, 0 };
    int cut = 0;
    bl_u128map_init(&t.ix);
    bl_err e = list(tree_node, &t, ctx);
    json_t *arr = json_array();
    int bad = !arr || t.failed || e;
    for (size_t i = 0; i < t.n && !bad; i++) {
        json_t *o = t.objs[i];
        bad |= sort_nodes(json_object_get(o, "children")) != 0;
        /* roots: nodes nobody lists as a child; a node's refcount says so */
        if (o->refcount == 1)
            bad |= json_array_append(arr, o) != 0;
    }
    if (!bad)
        bad = sort_nodes(arr) != 0;
    if (!bad)
        keep_first(arr, &limit, &cut);
    for (size_t i = 0; i < t.n; i++) {
        json_object_del(t.objs[i], TIE_MID);
        json_decref(t.objs[i]);
    }
    free(t.objs);
    bl_u128map_cleanup(&t.ix);
    if (bad) {
        json_decref(arr);
        return e && !t.failed ? BL_EIO : BL_ENOMEM;
    }
    *roots = arr;
    *truncated = cut;
    return BL_OK;
}

typedef struct block_nodes_ctx {
    bl_db *db;
    int64_t build_id, group;
} block_nodes_ctx;

static bl_err block_nodes(bl_blk_node_cb cb, void *cb_ctx, void *ctx)
{
    block_nodes_ctx *x = ctx;
    return bl_blk_nodes(x->db, x->build_id, x->group, cb, cb_ctx);
}

/* The latest ANR stack of a group, retraced with the build's mapping. */
typedef struct stack_ctx {
    req *r;
    const bl_mapindex *mi;
    json_t *obj;   /* {"at_us": …, "frames": […]}, owned; NULL: none */
    int oom;
} stack_ctx;

static void stack_cb(const char *stack, int64_t at_us, void *ctx)
{
    stack_ctx *x = ctx;
    /* one "\tat FRAME" line per frame, as a Java stack trace prints it */
    bl_buf in, out;
    bl_buf_init(&in, 0);
    bl_buf_init(&out, 0);
    json_t *frames = json_array();
    int bad = !frames || bl_buf_puts(&in, "\tat ");
    for (const char *p = stack; *p && !bad; p++)
        bad = *p == '\n' ? bl_buf_puts(&in, "\n\tat ") : bl_buf_putc(&in, *p);
    bad = bad || bl_buf_putc(&in, '\n');
    if (!bad && x->mi) {
        bl_retrace_opts o = { 0 };
        bad = bl_req_take(x->r, 4 * in.len + 4096) ||
              bl_retrace_text(x->mi, &o, in.data, in.len, &out) != BL_OK;
    } else if (!bad) {
        bad = bl_buf_append(&out, in.data, in.len);
    }
    /* the frames back out of the (retraced) text: each line without its
     * indentation and "at " (an ambiguous frame's other candidates keep
     * R8's "<OR> at " before them) */
    for (size_t i = 0; i < out.len && !bad;) {
        size_t j = i;
        while (j < out.len && out.data[j] != '\n')
            j++;
        size_t a = i;
        while (a < j && (out.data[a] == ' ' || out.data[a] == '\t'))
            a++;
        if (j - a >= 3 && !memcmp(out.data + a, "at ", 3))
            a += 3;
        if (j > a)
            bad = json_array_append_new(frames, json_stringn(out.data + a, j - a)) != 0 ||
                  bl_req_take(x->r, 64 + (j - a));
        i = j + 1;
    }
    bl_buf_cleanup(&in);
    bl_buf_cleanup(&out);
    if (!bad)
        x->obj = json_pack("{s:I,s:o}", "at_us", (json_int_t)at_us, "frames", frames);
    else
        json_decref(frames);
    x->oom = !x->obj;
}

enum MHD_Result bl_h_block(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int64_t limit;
    size_t sl = strlen(r->sig);
    int hex = sl == 32;
    for (size_t i = 0; i < sl && hex; i++)
        hex = (r->sig[i] >= '0' && r->sig[i] <= '9') || (r->sig[i] >= 'a' && r->sig[i] <= 'f');
    if (!hex)
        return bl_reply_error(c, h, 400, "the signature must be 32 lower-case hex digits");
    if (bl_arg_i64(c, "limit", 10000, 0, 100000, &limit, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    list_ctx x;
    int64_t build_id;
    char bname[BL_BUILD_NAME_MAX + 1];
    bl_db *db;
    enum MHD_Result rc;
    if (load_groups(c, h, r, 0, INT64_MAX / 1000000, &x, &build_id, bname, sizeof bname, &db,
                    &rc))
        return rc;
    grp *g = (grp *)(void *)x.rows.data;
    size_t n = x.rows.len / sizeof *g;
    sort_key = S_COUNT;
    sort_text = x.text.data;
    if (n)
        qsort(g, n, sizeof *g, cmp_grp); /* two paths with one signature: the bigger group */
    /* signatures only (nothing built, nothing charged) of at most
     * BLOCK_SIG_SCAN_MAX groups, the biggest first; JSON for the match */
    json_t *found = NULL;
    int64_t gid = 0;
    bl_err e = BL_OK;
    size_t hit = SIZE_MAX;
    for (size_t i = 0; i < n && i < BLOCK_SIG_SCAN_MAX && hit == SIZE_MAX && !e; i++) {
        char sig[33];
        if (!(e = path_json(db, build_id, x.text.data + g[i].path_off, r, NULL, sig)) &&
            !strcmp(sig, r->sig))
            hit = i;
    }
    stack_ctx sx = { r, NULL, NULL, 0 };
    if (!e && hit != SIZE_MAX) {
        char sig[33];
        if (!(e = group_json(db, build_id, &x, &g[hit], &found, sig)))
            gid = g[hit].id;
        sx.mi = x.mi;
        if (!e && !(e = bl_blk_anr_stack(db, gid, stack_cb, &sx)) && sx.oom)
            e = BL_ENOMEM;
        if (!e && json_object_set_new(found, "anr_stack", sx.obj ? sx.obj : json_null()))
            e = BL_ENOMEM;
        else if (e)
            json_decref(sx.obj);
    }
    list_free(&x);
    if (e)
        json_decref(found);
    if (e)
        return e == BL_EIO ? bl_reply_error(c, h, 500, "database error")
                           : bl_reply_error(c, h, 503, "out of memory; retry later");
    if (!found) {
        char msg[400];
        if (n > BLOCK_SIG_SCAN_MAX)
            snprintf(msg, sizeof msg, "no blocks with signature %s among the %d biggest block "
                     "groups of build '%.100s' (it has %zu; the lookup stops there)", r->sig,
                     BLOCK_SIG_SCAN_MAX, bname, n);
        else
            snprintf(msg, sizeof msg, "no blocks with signature %s in build '%.100s'", r->sig,
                     bname);
        return bl_reply_error(c, h, 404, msg);
    }
    block_nodes_ctx bn = { db, build_id, gid };
    json_t *roots;
    int truncated;
    e = bl_blk_tree_json(r, limit, block_nodes, &bn, &roots, &truncated);
    if (e) {
        json_decref(found);
        return e == BL_EIO ? bl_reply_error(c, h, 500, "database error")
                           : bl_reply_error(c, h, 503, "not enough memory for this answer "
                                                       "now; retry later");
    }
    if (json_object_set_new(found, "app", bl_json_text(r->app)) ||
        json_object_set_new(found, "build", bl_json_text(bname)) ||
        json_object_set_new(found, "call_tree", roots) ||
        json_object_set_new(found, "truncated", json_boolean(truncated))) {
        json_decref(found);
        return bl_reply_error(c, h, 503, "out of memory; retry later");
    }
    return reply_charged(c, h, r, found);
}
