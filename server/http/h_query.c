/*
 * h_query.c — read endpoints:
 *   GET /v1/apps/{app}/builds
 *   GET /v1/apps/{app}/slow-methods?build=&thread=main|all&since=&until=&sort=&limit=
 *   GET /v1/apps/{app}/call-tree?build=&root=&thread=&max_depth=&limit=
 * Shapes and units are in docs/api.md. Times are µs; since/until are Unix
 * seconds and select whole hours (aggregates are kept per hour).
 */
#include "http/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/sketch.h"
#include "common/u128map.h"

#define HOUR_US 3600000000ll

static json_t *col_text_or_null(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    return bl_json_text((const char *)sqlite3_column_text(st, i));
}

static json_t *col_int_or_null(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    return json_integer(sqlite3_column_int64(st, i));
}

enum MHD_Result bl_h_builds(struct MHD_Connection *c, bl_http *h, req *r)
{
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_error(c, h, 503, "database unavailable");
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT name, created_at, mapping_hash, mapping_size, mapping_at, methodids_hash, "
            "methodids_count, methodids_obfuscated, methodids_at, symbolicated_at, batches, "
            "records FROM builds WHERE app_id = ? ORDER BY created_at DESC, id DESC");
    if (!st)
        return bl_reply_error(c, h, 500, "database error");
    sqlite3_bind_int64(st, 1, r->app_id);
    json_t *arr = json_array();
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *mapping = json_null(), *mids = json_null();
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            mapping = json_pack("{s:o,s:o,s:o}", "hash", col_text_or_null(st, 2), "bytes",
                                col_int_or_null(st, 3), "uploaded_at", col_int_or_null(st, 4));
        if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            mids = json_pack("{s:o,s:o,s:s,s:o}", "hash", col_text_or_null(st, 5), "methods",
                             col_int_or_null(st, 6), "names",
                             sqlite3_column_int(st, 7) ? "obfuscated" : "original",
                             "uploaded_at", col_int_or_null(st, 8));
        json_array_append_new(
            arr, json_pack("{s:o,s:o,s:o,s:o,s:b,s:o,s:o}", "build", col_text_or_null(st, 0),
                           "created_at", col_int_or_null(st, 1), "mapping", mapping,
                           "method_ids", mids, "symbolicated",
                           sqlite3_column_type(st, 9) != SQLITE_NULL, "batches",
                           col_int_or_null(st, 10), "records", col_int_or_null(st, 11)));
    }
    sqlite3_reset(st);
    return bl_reply_json(c, h, 200, json_pack("{s:s,s:o}", "app", r->app, "builds", arr));
}

/* Parses an optional integer argument in [min, max] (max <= INT64_MAX / 10 - 1): decimal
 * digits only, no sign, spaces or other characters; absent or empty gives
 * dflt. -1 with the error text (naming the parameter and its range). */
static int arg_i64(struct MHD_Connection *c, const char *name, int64_t dflt, int64_t min,
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

/* thread=main|all → 1 for main only. */
static int arg_thread(struct MHD_Connection *c, int *main_only, char *err, size_t n)
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

/* ---- answers written as text into a charged buffer ----------------------
 * Big answers are not built as a jansson tree (about 1 KiB per row): each
 * row is written as JSON text at once into a buffer whose growth is
 * charged to the request's in-flight budget (http/internal.h). */

typedef struct out {
    req *r;
    bl_buf b;
    bl_err e; /* first error; later writes do nothing */
} out;

static void out_init(out *o, req *r)
{
    o->r = r;
    bl_buf_init(&o->b, 0);
    o->e = BL_OK;
}

static void out_raw(out *o, const char *s, size_t n)
{
    if (!o->e)
        o->e = bl_req_append(o->r, &o->b, s, n);
}

static void out_str(out *o, const char *s)
{
    out_raw(o, s, strlen(s));
}

static int dump_cb(const char *p, size_t n, void *ctx)
{
    out *o = ctx;
    out_raw(o, p, n);
    return o->e ? -1 : 0;
}

/* Writes v (stolen; NULL means out of memory) as compact JSON. */
static void out_json(out *o, json_t *v)
{
    if (!v && !o->e)
        o->e = BL_ENOMEM;
    if (v && !o->e && json_dump_callback(v, dump_cb, o, JSON_COMPACT | JSON_ENCODE_ANY) != 0 &&
        !o->e)
        o->e = BL_ENOMEM;
    json_decref(v);
}

/* Answers the text, or 503 (budget spent / out of memory) when writing
 * failed; frees o either way. */
static enum MHD_Result out_reply(struct MHD_Connection *c, bl_http *h, out *o)
{
    if (o->e) {
        bl_req_buf_free(o->r, &o->b);
        return bl_reply_error(c, h, 503, "not enough memory for this answer now; retry later "
                                         "or ask for fewer rows (limit)");
    }
    return bl_reply_buf(c, h, 200, &o->b);
}

/* ---- slow methods ---------------------------------------------------------
 * Sort and limit happen in SQL (ORDER BY … LIMIT keeps only `limit` rows
 * while the groups stream by), so memory does not grow with the number of
 * methods; the percentile sorts compute each group's quantile from its
 * merged sketch (store/sqlfuncs.h), clamped to the exact max as the answer
 * is. Ties: total time descending, then class, name, descriptor. */
#define SLOW_SQL(key)                                                                          \
    "SELECT m.class, m.name, m.descriptor, m.source_file, sum(s.count) AS cnt, "              \
    "sum(s.total_us) AS tot, sum(s.self_us) AS slf, max(s.max_us) AS mx, "                     \
    "sketch_union(s.sketch) AS sk "                                                            \
    "FROM method_stats s JOIN methods m ON m.id = s.method "                                   \
    "JOIN builds b ON b.id = s.build_id "                                                      \
    "WHERE b.app_id = ?1 AND (?2 IS NULL OR b.name = ?2) AND (?3 = 0 OR s.main = 1) "          \
    "AND s.hour + 3600000000 > ?4 AND s.hour < ?5 "                                            \
    "GROUP BY m.class, m.name, m.descriptor, m.source_file "                                   \
    /* rows of calls still running when their batch ended carry only self                      \
     * time (schema/batch-format.md, "Segments"): a method is listed once a                    \
     * call of it has finished */                                                              \
    "HAVING cnt > 0 "                                                                          \
    "ORDER BY " key " DESC, tot DESC, m.class, m.name, m.descriptor LIMIT ?6"

static const char *const slow_sql[7] = {
    SLOW_SQL("min(sketch_quantile(sk, 0.5), mx)"),
    SLOW_SQL("min(sketch_quantile(sk, 0.9), mx)"),
    SLOW_SQL("min(sketch_quantile(sk, 0.99), mx)"),
    SLOW_SQL("cnt"),
    SLOW_SQL("tot"),
    SLOW_SQL("slf"),
    SLOW_SQL("mx"),
};

enum MHD_Result bl_h_slow(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int main_only;
    int64_t since, until, limit;
    const char *build = bl_arg(c, "build");
    const char *sort = bl_arg(c, "sort");
    static const char *const sorts[] = { "p50", "p90", "p99", "count", "total", "self", "max" };
    int sort_ix = 4;
    if (sort) {
        sort_ix = -1;
        for (int i = 0; i < 7; i++)
            if (!strcmp(sort, sorts[i]))
                sort_ix = i;
        if (sort_ix < 0)
            return bl_reply_error(c, h, 400,
                                  "'sort' must be one of p50, p90, p99, count, total, self, max");
    }
    if (arg_thread(c, &main_only, err, sizeof err) ||
        arg_i64(c, "since", 0, 0, INT64_MAX / 1000000, &since, err, sizeof err) ||
        arg_i64(c, "until", INT64_MAX / 1000000, 0, INT64_MAX / 1000000, &until, err,
                sizeof err) ||
        arg_i64(c, "limit", 50, 0, 10000, &limit, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_error(c, h, 503, "database unavailable");
    sqlite3_stmt *st;
    if (build) {
        st = bl_db_stmt(db, "SELECT 1 FROM builds WHERE app_id = ? AND name = ?");
        if (!st)
            return bl_reply_error(c, h, 500, "database error");
        sqlite3_bind_int64(st, 1, r->app_id);
        sqlite3_bind_text(st, 2, build, -1, SQLITE_TRANSIENT);
        int known = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_reset(st);
        if (!known) {
            snprintf(err, sizeof err, "unknown build '%.100s'", build);
            return bl_reply_error(c, h, 404, err);
        }
    }
    st = bl_db_stmt(db, slow_sql[sort_ix]);
    if (!st)
        return bl_reply_error(c, h, 500, "database error");
    sqlite3_bind_int64(st, 1, r->app_id);
    if (build)
        sqlite3_bind_text(st, 2, build, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, main_only);
    sqlite3_bind_int64(st, 4, since * 1000000);
    sqlite3_bind_int64(st, 5, until > INT64_MAX / 1000000 - 1 ? INT64_MAX : until * 1000000);
    sqlite3_bind_int64(st, 6, limit);
    out o;
    out_init(&o, r);
    out_str(&o, "{\"app\":");
    out_json(&o, bl_json_text(r->app));
    out_str(&o, ",\"build\":");
    out_json(&o, build ? bl_json_text(build) : json_null());
    out_str(&o, main_only ? ",\"thread\":\"main\",\"sort\":\"" : ",\"thread\":\"all\",\"sort\":\"");
    out_str(&o, sorts[sort_ix]);
    out_str(&o, "\",\"methods\":[");
    int rc = SQLITE_DONE, first = 1;
    bl_sketch sk;
    bl_sketch_init(&sk);
    while (!o.e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bl_sketch_reset(&sk);
        const void *blob = sqlite3_column_blob(st, 8);
        int bn = sqlite3_column_bytes(st, 8);
        if (blob && bl_sketch_merge_blob(&sk, blob, (size_t)bn) != BL_OK)
            continue;
        uint64_t max = (uint64_t)sqlite3_column_int64(st, 7);
        /* a bucket midpoint can sit above the exact max: clamp */
        uint64_t q50 = bl_sketch_quantile(&sk, 0.50), q90 = bl_sketch_quantile(&sk, 0.90),
                 q99 = bl_sketch_quantile(&sk, 0.99);
        if (!first)
            out_raw(&o, ",", 1);
        first = 0;
        out_json(&o, json_pack("{s:{s:o,s:o,s:o,s:o},s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "method",
                               "class", col_text_or_null(st, 0), "name", col_text_or_null(st, 1),
                               "descriptor", col_text_or_null(st, 2), "source_file",
                               col_text_or_null(st, 3), "count",
                               (json_int_t)sqlite3_column_int64(st, 4), "total_us",
                               (json_int_t)sqlite3_column_int64(st, 5), "self_us",
                               (json_int_t)sqlite3_column_int64(st, 6), "p50_us",
                               (json_int_t)(q50 < max ? q50 : max), "p90_us",
                               (json_int_t)(q90 < max ? q90 : max), "p99_us",
                               (json_int_t)(q99 < max ? q99 : max), "max_us", (json_int_t)max));
    }
    sqlite3_reset(st);
    bl_sketch_cleanup(&sk);
    if (!o.e && rc != SQLITE_DONE) {
        bl_req_buf_free(r, &o.b);
        return bl_reply_error(c, h, 500, "database error");
    }
    out_str(&o, "]}");
    return out_reply(c, h, &o);
}

/* ------------------------------------------------------------------------ */
/* call tree: nodes of the build are merged by call path (and, for
 * thread=all, across main and other threads) into an output tree. */

typedef struct tnode {
    int64_t method;
    uint64_t count, total, self;
    int64_t first_child, next_sibling; /* indexes, -1 none */
    uint32_t depth;
} tnode;

typedef struct tree {
    tnode *n;
    size_t len, cap;
    bl_u128map ix; /* (parent index + 1, method) -> index */
} tree;

static int64_t tree_child(tree *t, int64_t parent, int64_t method, uint32_t depth)
{
    uint64_t *v;
    int ins;
    if (bl_u128map_put(&t->ix, (uint64_t)(parent + 1), (uint64_t)method, t->len, &v, &ins))
        return -1;
    if (!ins)
        return (int64_t)*v;
    if (t->len == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        tnode *nn = realloc(t->n, nc * sizeof *nn);
        if (!nn)
            return -1;
        t->n = nn;
        t->cap = nc;
    }
    tnode *x = &t->n[t->len];
    memset(x, 0, sizeof *x);
    x->method = method;
    x->first_child = -1;
    x->depth = depth;
    x->next_sibling = -1;
    if (parent >= 0) {
        x->next_sibling = t->n[parent].first_child;
        t->n[parent].first_child = (int64_t)t->len;
    }
    return (int64_t)t->len++;
}

typedef struct mname {
    int64_t id;
    json_t *obj; /* {"class","name","descriptor","source_file"} */
} mname;

static json_t *method_json(bl_db *db, bl_u128map *cache, json_t *store, int64_t id)
{
    uint64_t *v = bl_u128map_get(cache, (uint64_t)id, 0);
    if (v)
        return json_array_get(store, *v);
    sqlite3_stmt *st =
        bl_db_stmt(db, "SELECT class, name, descriptor, source_file FROM methods WHERE id = ?");
    json_t *o = NULL;
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW)
            o = json_pack("{s:o,s:o,s:o,s:o}", "class", col_text_or_null(st, 0), "name",
                          col_text_or_null(st, 1), "descriptor", col_text_or_null(st, 2),
                          "source_file", col_text_or_null(st, 3));
        sqlite3_reset(st);
    }
    if (!o)
        o = json_pack("{s:s,s:s}", "class", "?", "name", "?");
    int ins;
    uint64_t *slot;
    if (bl_u128map_put(cache, (uint64_t)id, 0, json_array_size(store), &slot, &ins) == BL_OK)
        json_array_append_new(store, o);
    else
        return o;
    return o;
}

typedef struct emit_ctx {
    bl_db *db;
    tree *t;
    bl_u128map names;
    json_t *name_store;
    uint64_t budget; /* nodes left to print */
    int truncated;
} emit_ctx;

static _Thread_local const tree *cmp_tree; /* qsort has no context argument */

static int cmp_total(const void *a, const void *b)
{
    const tnode *n = cmp_tree->n;
    uint64_t x = n[*(const int64_t *)a].total, y = n[*(const int64_t *)b].total;
    return x < y ? 1 : x > y ? -1 : 0;
}

static json_t *emit(emit_ctx *e, int64_t i, uint32_t max_depth);

static json_t *emit_children(emit_ctx *e, int64_t first, uint32_t max_depth)
{
    json_t *arr = json_array();
    size_t k = 0;
    for (int64_t c = first; c >= 0; c = e->t->n[c].next_sibling)
        k++;
    if (!k)
        return arr;
    int64_t *ids = malloc(k * sizeof *ids);
    if (!ids)
        return arr;
    k = 0;
    for (int64_t c = first; c >= 0; c = e->t->n[c].next_sibling)
        ids[k++] = c;
    cmp_tree = e->t;
    qsort(ids, k, sizeof *ids, cmp_total);
    for (size_t j = 0; j < k; j++) {
        if (e->budget == 0) {
            e->truncated = 1;
            break;
        }
        json_array_append_new(arr, emit(e, ids[j], max_depth));
    }
    free(ids);
    return arr;
}

static json_t *emit(emit_ctx *e, int64_t i, uint32_t max_depth)
{
    tnode *x = &e->t->n[i];
    e->budget--;
    json_t *m = method_json(e->db, &e->names, e->name_store, x->method);
    json_t *o = json_pack("{s:O,s:I,s:I,s:I}", "method", m, "count", (json_int_t)x->count,
                          "total_us", (json_int_t)x->total, "self_us", (json_int_t)x->self);
    if (x->depth + 1 < max_depth)
        json_object_set_new(o, "children", emit_children(e, x->first_child, max_depth));
    else {
        json_object_set_new(o, "children", json_array());
        if (x->first_child >= 0)
            e->truncated = 1;
    }
    return o;
}

enum MHD_Result bl_h_tree(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    int main_only;
    int64_t max_depth, limit;
    const char *build = bl_arg(c, "build");
    const char *root = bl_arg(c, "root");
    if (arg_thread(c, &main_only, err, sizeof err) ||
        arg_i64(c, "max_depth", 64, 1, 4096, &max_depth, err, sizeof err) ||
        arg_i64(c, "limit", 10000, 0, 1000000, &limit, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_error(c, h, 503, "database unavailable");
    /* the build: given, or the newest one with data */
    sqlite3_stmt *st = bl_db_stmt(
        db, "SELECT id, name FROM builds WHERE app_id = ?1 AND (?2 IS NULL OR name = ?2) "
            "ORDER BY (batches > 0) DESC, created_at DESC, id DESC LIMIT 1");
    if (!st)
        return bl_reply_error(c, h, 500, "database error");
    sqlite3_bind_int64(st, 1, r->app_id);
    if (build)
        sqlite3_bind_text(st, 2, build, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_reset(st);
        snprintf(err, sizeof err, build ? "unknown build '%s'" : "app has no builds%s",
                 build ? build : "");
        return bl_reply_error(c, h, 404, err);
    }
    int64_t build_id = sqlite3_column_int64(st, 0);
    char bname[BL_BUILD_NAME_MAX + 1];
    snprintf(bname, sizeof bname, "%s", (const char *)sqlite3_column_text(st, 1));
    sqlite3_reset(st);
    /* root: "class.method" or "class.method(descriptor)" */
    char rcls[512] = "", rname[256] = "";
    const char *rdesc = NULL;
    if (root) {
        const char *paren = strchr(root, '(');
        size_t rl = paren ? (size_t)(paren - root) : strlen(root);
        const char *dot = NULL;
        for (size_t i = 0; i < rl; i++)
            if (root[i] == '.')
                dot = root + i;
        if (!dot || dot == root || (size_t)(dot - root) >= sizeof rcls ||
            rl - (size_t)(dot - root) - 1 >= sizeof rname || dot + 1 == root + rl)
            return bl_reply_error(c, h, 400, "'root' must be class.method or class.method(descriptor)");
        memcpy(rcls, root, (size_t)(dot - root));
        rcls[dot - root] = '\0';
        memcpy(rname, dot + 1, rl - (size_t)(dot - root) - 1);
        rname[rl - (size_t)(dot - root) - 1] = '\0';
        rdesc = paren;
    }
    st = bl_db_stmt(db, "SELECT n.id, n.parent, n.method, n.count, n.total_us, n.self_us, "
                        "(?3 IS NOT NULL AND m.class = ?3 AND m.name = ?4 AND "
                        "(?5 IS NULL OR m.descriptor = ?5)) "
                        "FROM call_nodes n JOIN methods m ON m.id = n.method "
                        "WHERE n.build_id = ?1 AND (?2 = 0 OR n.main = 1) ORDER BY n.id");
    if (!st)
        return bl_reply_error(c, h, 500, "database error");
    sqlite3_bind_int64(st, 1, build_id);
    sqlite3_bind_int(st, 2, main_only);
    if (root) {
        sqlite3_bind_text(st, 3, rcls, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, rname, -1, SQLITE_TRANSIENT);
        if (rdesc)
            sqlite3_bind_text(st, 5, rdesc, -1, SQLITE_TRANSIENT);
    }
    tree t;
    memset(&t, 0, sizeof t);
    bl_u128map_init(&t.ix);
    bl_u128map srcmap; /* source node id -> tree index + 1 */
    bl_u128map_init(&srcmap);
    int failed = 0;
    while (sqlite3_step(st) == SQLITE_ROW && !failed) {
        int64_t id = sqlite3_column_int64(st, 0), parent = sqlite3_column_int64(st, 1);
        int64_t method = sqlite3_column_int64(st, 2);
        int is_root = sqlite3_column_int(st, 6);
        int64_t tparent = -2; /* -2: not in an output tree */
        if (parent) {
            uint64_t *v = bl_u128map_get(&srcmap, (uint64_t)parent, 0);
            if (v)
                tparent = (int64_t)*v - 1;
        }
        if (tparent == -2 && (root ? is_root : parent == 0))
            tparent = -1;
        if (tparent == -2)
            continue;
        uint32_t depth = tparent < 0 ? 0 : t.n[tparent].depth + 1;
        int64_t ti = tree_child(&t, tparent, method, depth);
        if (ti < 0) {
            failed = 1;
            break;
        }
        t.n[ti].count += (uint64_t)sqlite3_column_int64(st, 3);
        t.n[ti].total += (uint64_t)sqlite3_column_int64(st, 4);
        t.n[ti].self += (uint64_t)sqlite3_column_int64(st, 5);
        uint64_t *v;
        int ins;
        if (bl_u128map_put(&srcmap, (uint64_t)id, 0, (uint64_t)ti + 1, &v, &ins))
            failed = 1;
    }
    sqlite3_reset(st);
    bl_u128map_cleanup(&srcmap);
    if (failed) {
        free(t.n);
        bl_u128map_cleanup(&t.ix);
        return bl_reply_error(c, h, 503, "out of memory");
    }
    /* roots are the nodes at depth 0, linked through a virtual head */
    emit_ctx e = { db, &t, { 0 }, json_array(), (uint64_t)limit, 0 };
    bl_u128map_init(&e.names);
    int64_t head = -1;
    for (size_t i = 0; i < t.len; i++)
        if (t.n[i].depth == 0) {
            t.n[i].next_sibling = head;
            head = (int64_t)i;
        }
    json_t *roots = emit_children(&e, head, (uint32_t)max_depth);
    json_t *body = json_pack("{s:s,s:s,s:s,s:o,s:o,s:b}", "app", r->app, "build", bname,
                             "thread", main_only ? "main" : "all", "root",
                             root ? bl_json_text(root) : json_null(), "roots", roots, "truncated",
                             e.truncated);
    json_decref(e.name_store);
    bl_u128map_cleanup(&e.names);
    bl_u128map_cleanup(&t.ix);
    free(t.n);
    return bl_reply_json(c, h, 200, body);
}
