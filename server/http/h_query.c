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
            "records, warnings FROM builds WHERE app_id = ? ORDER BY created_at DESC, id DESC");
    if (!st)
        return bl_reply_error(c, h, 500, "database error");
    sqlite3_bind_int64(st, 1, r->app_id);
    json_t *arr = json_array();
    int oom = !arr;
    while (!oom && sqlite3_step(st) == SQLITE_ROW) {
        json_t *mapping = json_null(), *mids = json_null();
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            mapping = json_pack("{s:o,s:o,s:o}", "hash", col_text_or_null(st, 2), "bytes",
                                col_int_or_null(st, 3), "uploaded_at", col_int_or_null(st, 4));
        if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            mids = json_pack("{s:o,s:o,s:s,s:o}", "hash", col_text_or_null(st, 5), "methods",
                             col_int_or_null(st, 6), "names",
                             sqlite3_column_int(st, 7) ? "obfuscated" : "original",
                             "uploaded_at", col_int_or_null(st, 8));
        /* warnings: a JSON array of strings written by the processor */
        json_t *warn = NULL;
        if (sqlite3_column_type(st, 12) == SQLITE_TEXT)
            warn = json_loads((const char *)sqlite3_column_text(st, 12), 0, NULL);
        if (!json_is_array(warn)) {
            json_decref(warn);
            warn = json_array();
        }
        /* a build left out of the list would be a wrong answer: 503 */
        oom = json_array_append_new(
            arr, json_pack("{s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o}", "build", col_text_or_null(st, 0),
                           "created_at", col_int_or_null(st, 1), "mapping", mapping,
                           "method_ids", mids, "symbolicated",
                           sqlite3_column_type(st, 9) != SQLITE_NULL, "batches",
                           col_int_or_null(st, 10), "records", col_int_or_null(st, 11),
                           "warnings", warn)) != 0;
    }
    sqlite3_reset(st);
    if (oom) {
        json_decref(arr);
        return bl_reply_error(c, h, 503, "out of memory");
    }
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
    return bl_reply_buf(c, h, 200, "application/json", &o->b);
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
 * thread=all, across main and other threads; with root=, across every
 * subtree rooted at that method) into an output tree, printed depth-first
 * with children by total time, until `limit` nodes are printed.
 *
 * Memory, all of it charged to the request's in-flight budget (503 when it
 * is spent): per output-tree node within max_depth levels 48 bytes plus its
 * (parent, method) index entry (43-85 bytes); 16 bytes per stored node of
 * the chosen subtrees (source id -> output node); the children list of the
 * node being printed; the answer text (about 100 bytes per printed node)
 * and each printed method's names once. Nodes below max_depth are not
 * loaded: they only mark their ancestor on the last printed level as cut. */

typedef struct tnode {
    int64_t method;
    uint64_t count, total, self;
    int32_t first_child, next_sibling; /* indexes, -1 none */
    uint32_t depth;
    uint8_t cut; /* has children below max_depth (not loaded) */
} tnode;

#define PRUNED (-1) /* src_ix.ti of a node inside an output tree, below max_depth */

typedef struct src_ix {
    int64_t id; /* call_nodes.id, ascending */
    int64_t ti; /* output-tree index, or PRUNED */
} src_ix;

typedef struct tree {
    req *r;
    bl_buf nodes;  /* tnode[len], charged */
    bl_buf src;    /* src_ix[] by ascending id, charged */
    bl_u128map ix; /* (parent index + 1, method) -> index; growth charged */
    size_t len;
} tree;

static tnode *tn(const tree *t)
{
    return (tnode *)(void *)t->nodes.data;
}

/* bl_u128map_put with the table's growth charged to r. */
static bl_err map_put(req *r, bl_u128map *m, uint64_t a, uint64_t b, uint64_t init,
                      uint64_t **v, int *ins)
{
    size_t g = bl_u128map_grow_bytes(m), old = bl_u128map_bytes(m);
    if (g && bl_req_take(r, g) != 0)
        return BL_ENOMEM;
    bl_err e = bl_u128map_put(m, a, b, init, v, ins);
    if (g)
        bl_req_give(r, e ? g : old); /* grown: the old table is freed */
    return e;
}

static void map_free(req *r, bl_u128map *m)
{
    bl_req_give(r, bl_u128map_bytes(m));
    bl_u128map_cleanup(m);
}

static int64_t tree_child(tree *t, int64_t parent, int64_t method, uint32_t depth)
{
    uint64_t *v;
    int ins;
    if (t->len >= INT32_MAX ||
        map_put(t->r, &t->ix, (uint64_t)(parent + 1), (uint64_t)method, t->len, &v, &ins))
        return -1;
    if (!ins)
        return (int64_t)*v;
    if (bl_req_reserve(t->r, &t->nodes, sizeof(tnode)) != BL_OK)
        return -1; /* the whole answer fails: the dangling index entry is never read */
    tnode *x = &tn(t)[t->len];
    memset(x, 0, sizeof *x);
    x->method = method;
    x->first_child = -1;
    x->next_sibling = -1;
    x->depth = depth;
    if (parent >= 0) {
        x->next_sibling = tn(t)[parent].first_child;
        tn(t)[parent].first_child = (int32_t)t->len;
    }
    t->nodes.len += sizeof(tnode);
    return (int64_t)t->len++;
}

static const src_ix *src_find(const tree *t, int64_t id)
{
    const src_ix *a = (const src_ix *)(const void *)t->src.data;
    size_t lo = 0, hi = t->src.len / sizeof *a;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->src.len / sizeof *a && a[lo].id == id ? &a[lo] : NULL;
}

typedef struct emit_ctx {
    bl_db *db;
    tree *t;
    out *o;
    bl_u128map names; /* method id -> offset in text; growth charged */
    bl_buf text;      /* printed methods' JSON, each NUL-terminated; charged */
    uint64_t budget;  /* nodes left to print */
    int truncated;
} emit_ctx;

/* Writes the method's JSON ({"class","name","descriptor","source_file"}),
 * looked up once per method. */
static void out_method(emit_ctx *e, int64_t id)
{
    out *o = e->o;
    uint64_t *v;
    int ins;
    if (o->e)
        return;
    if ((o->e = map_put(o->r, &e->names, (uint64_t)id, 0, e->text.len, &v, &ins)))
        return;
    if (ins) {
        sqlite3_stmt *st =
            bl_db_stmt(e->db, "SELECT class, name, descriptor, source_file FROM methods WHERE id = ?");
        json_t *m = NULL;
        if (st) {
            sqlite3_bind_int64(st, 1, id);
            if (sqlite3_step(st) == SQLITE_ROW)
                m = json_pack("{s:o,s:o,s:o,s:o}", "class", col_text_or_null(st, 0), "name",
                              col_text_or_null(st, 1), "descriptor", col_text_or_null(st, 2),
                              "source_file", col_text_or_null(st, 3));
            sqlite3_reset(st);
        }
        if (!m)
            m = json_pack("{s:s,s:s}", "class", "?", "name", "?");
        /* dumped into the names text, then NUL-terminated */
        out tmp = { o->r, e->text, BL_OK };
        out_json(&tmp, m);
        e->text = tmp.b;
        if (!tmp.e)
            tmp.e = bl_req_append(o->r, &e->text, "", 1);
        if ((o->e = tmp.e))
            return;
    }
    out_str(o, e->text.data + *v);
}

static _Thread_local const tnode *cmp_nodes; /* qsort has no context argument */

static int cmp_total(const void *a, const void *b)
{
    uint64_t x = cmp_nodes[*(const int64_t *)a].total, y = cmp_nodes[*(const int64_t *)b].total;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void emit(emit_ctx *e, int64_t i, uint32_t max_depth);

/* Writes the children list starting at `first` (linked by next_sibling),
 * by total time descending, while the node budget lasts. */
static void emit_children(emit_ctx *e, int64_t first, uint32_t max_depth)
{
    const tnode *n = tn(e->t);
    size_t k = 0;
    out_raw(e->o, "[", 1);
    for (int64_t c = first; c >= 0; c = n[c].next_sibling)
        k++;
    if (k && !e->o->e) {
        int64_t *ids = NULL;
        if (bl_req_take(e->o->r, k * sizeof *ids) == 0) {
            ids = malloc(k * sizeof *ids);
            if (!ids)
                bl_req_give(e->o->r, k * sizeof *ids);
        }
        if (!ids)
            e->o->e = BL_ENOMEM;
        if (ids) {
            k = 0;
            for (int64_t c = first; c >= 0; c = n[c].next_sibling)
                ids[k++] = c;
            cmp_nodes = n;
            qsort(ids, k, sizeof *ids, cmp_total);
            for (size_t j = 0; j < k && !e->o->e; j++) {
                if (e->budget == 0) {
                    e->truncated = 1;
                    break;
                }
                if (j)
                    out_raw(e->o, ",", 1);
                emit(e, ids[j], max_depth);
            }
            free(ids);
            bl_req_give(e->o->r, k * sizeof *ids);
        }
    }
    out_raw(e->o, "]", 1);
}

static void emit(emit_ctx *e, int64_t i, uint32_t max_depth)
{
    const tnode *x = &tn(e->t)[i];
    char num[100];
    e->budget--;
    out_str(e->o, "{\"method\":");
    out_method(e, x->method);
    snprintf(num, sizeof num, ",\"count\":%lld,\"total_us\":%lld,\"self_us\":%lld,\"children\":",
             (long long)x->count, (long long)x->total, (long long)x->self);
    out_str(e->o, num);
    if (x->depth + 1 < max_depth) {
        emit_children(e, x->first_child, max_depth);
    } else {
        out_raw(e->o, "[]", 2);
        if (x->first_child >= 0 || x->cut)
            e->truncated = 1;
    }
    out_raw(e->o, "}", 1);
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
    t.r = r;
    bl_buf_init(&t.nodes, 0);
    bl_buf_init(&t.src, 0);
    bl_u128map_init(&t.ix);
    int failed = 0, rc = SQLITE_DONE;
    while (!failed && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), parent = sqlite3_column_int64(st, 1);
        int64_t method = sqlite3_column_int64(st, 2);
        int is_root = sqlite3_column_int(st, 6);
        const src_ix *p = parent ? src_find(&t, parent) : NULL;
        int64_t ti;
        if (p && p->ti == PRUNED) {
            ti = PRUNED;
        } else if (p && tn(&t)[p->ti].depth + 1 >= (uint64_t)max_depth) {
            tn(&t)[p->ti].cut = 1; /* printed with no children: truncated */
            ti = PRUNED;
        } else if (p) {
            ti = tree_child(&t, p->ti, method, tn(&t)[p->ti].depth + 1);
        } else if (root ? is_root : parent == 0) {
            ti = tree_child(&t, -1, method, 0);
        } else {
            continue; /* not in an output tree */
        }
        if (ti < 0 && ti != PRUNED) {
            failed = 1;
            break;
        }
        if (ti >= 0) {
            tnode *x = &tn(&t)[ti];
            x->count += (uint64_t)sqlite3_column_int64(st, 3);
            x->total += (uint64_t)sqlite3_column_int64(st, 4);
            x->self += (uint64_t)sqlite3_column_int64(st, 5);
        }
        src_ix si = { id, ti };
        if (bl_req_append(r, &t.src, &si, sizeof si) != BL_OK)
            failed = 1;
    }
    sqlite3_reset(st);
    bl_req_buf_free(r, &t.src);
    if (!failed && rc != SQLITE_DONE) {
        bl_req_buf_free(r, &t.nodes);
        map_free(r, &t.ix);
        return bl_reply_error(c, h, 500, "database error");
    }
    map_free(r, &t.ix); /* merging is done */
    out o;
    out_init(&o, r);
    if (failed)
        o.e = BL_ENOMEM;
    /* roots are the nodes at depth 0, linked through a virtual head */
    emit_ctx e = { db, &t, &o, { 0 }, { 0 }, (uint64_t)limit, 0 };
    bl_u128map_init(&e.names);
    bl_buf_init(&e.text, 0);
    int64_t head = -1;
    for (size_t i = 0; i < t.len; i++)
        if (tn(&t)[i].depth == 0) {
            tn(&t)[i].next_sibling = (int32_t)head;
            head = (int64_t)i;
        }
    out_str(&o, "{\"app\":");
    out_json(&o, bl_json_text(r->app));
    out_str(&o, ",\"build\":");
    out_json(&o, bl_json_text(bname));
    out_str(&o, main_only ? ",\"thread\":\"main\",\"root\":" : ",\"thread\":\"all\",\"root\":");
    out_json(&o, root ? bl_json_text(root) : json_null());
    out_str(&o, ",\"roots\":");
    emit_children(&e, head, (uint32_t)max_depth);
    out_str(&o, e.truncated ? ",\"truncated\":true}" : ",\"truncated\":false}");
    map_free(r, &e.names);
    bl_req_buf_free(r, &e.text);
    bl_req_buf_free(r, &t.nodes);
    return out_reply(c, h, &o);
}
