/*
 * h_calltree.c — the call tree:
 *   GET /v1/apps/{app}/call-tree?build=&root=&thread=&max_depth=&limit=
 *       &format=json|columns|columns-binary|speedscope|chrome
 * Shapes and units are in docs/api.md; times are µs. Answers are written as
 * text into a charged buffer (http/textout.h); answers without root= are
 * kept while nothing is committed (http/tree_keep.h).
 */
#include "http/internal.h"
#include "http/textout.h"
#include "http/tree_keep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/u128map.h"
#include "store/builds.h"
#include "store/calltree_query.h"
#include "store/db.h"

/* ------------------------------------------------------------------------ */
/* call tree, with root= or a limit over TOP_DOWN_MAX_LIMIT (else see
 * "top-down reading" below, same answer): nodes of the build are merged by
 * call path (and, for thread=all, across main and other threads; with
 * root=, across every subtree rooted at that method) into an output tree,
 * printed depth-first with children by total time, until `limit` nodes are
 * printed.
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
    uint32_t max_depth;
    int by_root; /* root= given: output trees start at the root method's nodes */
    int failed;  /* out of memory (budget) while merging */
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

/* Merges one stored node (bl_calltree_nodes, by ascending id) into the
 * output tree; stops the listing when memory runs out. */
static int tree_add(const bl_calltree_node *n, void *ctx)
{
    tree *t = ctx;
    const src_ix *p = n->parent ? src_find(t, n->parent) : NULL;
    int64_t ti;
    if (p && p->ti == PRUNED) {
        ti = PRUNED;
    } else if (p && tn(t)[p->ti].depth + 1 >= t->max_depth) {
        tn(t)[p->ti].cut = 1; /* printed with no children: truncated */
        ti = PRUNED;
    } else if (p) {
        ti = tree_child(t, p->ti, n->method, tn(t)[p->ti].depth + 1);
    } else if (t->by_root ? n->is_root : n->parent == 0) {
        ti = tree_child(t, -1, n->method, 0);
    } else {
        return 0; /* not in an output tree */
    }
    if (ti < 0 && ti != PRUNED) {
        t->failed = 1;
        return 1;
    }
    if (ti >= 0) {
        tnode *x = &tn(t)[ti];
        x->count += (uint64_t)n->count;
        x->total += (uint64_t)n->total_us;
        x->self += (uint64_t)n->self_us;
    }
    src_ix si = { n->id, ti };
    if (bl_req_append(t->r, &t->src, &si, sizeof si) != BL_OK) {
        t->failed = 1;
        return 1;
    }
    return 0;
}

typedef struct emit_ctx {
    bl_db *db;
    tree *t;
    bl_out *o;
    bl_u128map names; /* method id -> offset in text; growth charged */
    bl_buf text;      /* printed methods' JSON, each NUL-terminated; charged */
    uint64_t budget;  /* nodes left to print */
    int truncated;
    /* top-down reading (no root=, see lazy_children) */
    const bl_calltree_query *q;
    uint32_t max_depth;
    bl_buf rows, groups, order; /* stacks of crow / cgroup / int64_t; charged */
    int dberr;                  /* a read failed: the answer is 500 */
    int main;                   /* thread kind of the rows being read */
    /* format= (see "exports" below): TREE_JSON, TREE_COLUMNS, TREE_SPEEDSCOPE
     * or TREE_CHROME */
    int fmt;
    uint64_t cursor;  /* exports: µs laid out so far (a node opens here) */
    uint64_t events;  /* exports and columns: nodes written (for the commas) */
    bl_buf frames;    /* speedscope, columns: the frames / methods list's JSON; charged */
    uint64_t n_frames;
    /* columns: the numbers of each column as JSON list text (no brackets),
     * and the indexes of the open nodes (int64_t stack); all charged */
    bl_out col[5];
    bl_buf open;
    /* format=columns-binary (fmt TREE_COLUMNS, binary 1): the columns
     * hold each node's values as native uint64_t (written little-endian in
     * their wire types at the end, "binary columns" below); ix: scratch
     * for a method's index text */
    int binary;
    bl_out ix;
    /* top-down reading from the build read in one scan (see "one scan"
     * below): prow[] by (thread kind, parent), charged; empty: read from
     * the database; keys: their (kind, parent) keys, uint64_t[] */
    bl_buf pre, keys;
    /* remote store (bl_db_remote): the build's method names read in one
     * statement (mrefs: mref[] by id; mtext: their 4 NUL-terminated
     * strings each), both charged; empty: looked up one by one */
    bl_buf mrefs, mtext;
    /* ties (see "equal times"): method key -> offset in tktext of its
     * methodId (8 bytes) and class, name, descriptor (NUL-terminated);
     * both charged */
    bl_u128map tkeys;
    bl_buf tktext;
} emit_ctx;

enum { TREE_JSON = 0, TREE_COLUMNS, TREE_SPEEDSCOPE, TREE_CHROME, TREE_COLUMNS_BINARY };
/* the columns of format=columns, in answer order */
enum { COL_PARENT = 0, COL_METHOD, COL_COUNT, COL_TOTAL, COL_SELF, COLS };
static const char *const col_names[COLS] = { "parent", "method", "count", "total_us", "self_us" };

/* 1 when s is printable ASCII only (0x20-0x7E): then jansson's compact
 * text of it is s between quotes with '"' and '\\' escaped, nothing else */
static int plain_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7E)
            return 0;
    return 1;
}

static void out_plain(bl_out *o, const char *s)
{
    const char *run = s;
    bl_out_raw(o, "\"", 1);
    for (; *s; s++)
        if (*s == '"' || *s == '\\') {
            bl_out_raw(o, run, (size_t)(s - run));
            bl_out_raw(o, *s == '"' ? "\\\"" : "\\\\", 2);
            run = s + 1;
        }
    bl_out_raw(o, run, (size_t)(s - run));
    bl_out_raw(o, "\"", 1);
}

typedef struct method_out {
    bl_out *o;
    int found;
    int fmt; /* TREE_JSON: the method object; else its name as one JSON string
              * ("class.name(descriptor)"), for speedscope inside a frame object */
} method_out;

/* Writes "class.name(descriptor)" as a JSON string (UTF-8 repaired). */
static void name_json(bl_out *o, const bl_method_names *n)
{
    size_t len = strlen(n->cls) + strlen(n->name) + strlen(n->descriptor) + 2;
    char *s = NULL;
    if (!o->e && bl_req_take(o->r, len) == 0) {
        s = malloc(len);
        if (!s)
            bl_req_give(o->r, len);
    }
    if (!s) {
        if (!o->e)
            o->e = BL_ENOMEM;
        return;
    }
    snprintf(s, len, "%s.%s%s", n->cls, n->name, n->descriptor);
    bl_out_json(o, bl_json_text(s));
    free(s);
    bl_req_give(o->r, len);
}

/* Writes the method's names as JSON: written directly when they are all
 * printable ASCII (the same bytes jansson writes), else through jansson
 * (UTF-8 repaired, control characters escaped). */
static void method_json(const bl_method_names *n, void *ctx)
{
    method_out *m = ctx;
    m->found = 1;
    if (m->fmt == TREE_SPEEDSCOPE) {
        bl_out_str(m->o, "{\"name\":");
        name_json(m->o, n);
        if (n->source_file[0]) {
            bl_out_str(m->o, ",\"file\":");
            bl_out_json(m->o, bl_json_text(n->source_file));
        }
        bl_out_raw(m->o, "}", 1);
        return;
    }
    if (m->fmt == TREE_CHROME) {
        name_json(m->o, n);
        return;
    }
    if (plain_ascii(n->cls) && plain_ascii(n->name) && plain_ascii(n->descriptor) &&
        plain_ascii(n->source_file)) {
        bl_out_str(m->o, "{\"class\":");
        out_plain(m->o, n->cls);
        bl_out_str(m->o, ",\"name\":");
        out_plain(m->o, n->name);
        bl_out_str(m->o, ",\"descriptor\":");
        out_plain(m->o, n->descriptor);
        bl_out_str(m->o, ",\"source_file\":");
        out_plain(m->o, n->source_file);
        bl_out_raw(m->o, "}", 1);
        return;
    }
    bl_out_json(m->o, json_pack("{s:o,s:o,s:o,s:o}", "class", bl_json_text(n->cls), "name",
                             bl_json_text(n->name), "descriptor", bl_json_text(n->descriptor),
                             "source_file", bl_json_text(n->source_file)));
}

/* Writes the method's JSON ({"class","name","descriptor","source_file"}),
 * looked up once per method. */
/* ---- method names read in one statement (remote stores) ---------------- */
typedef struct mref {
    int64_t id, method_id;
    size_t off; /* into mtext: class, name, descriptor, source file, each NUL-terminated */
} mref;

typedef struct mload_ctx {
    emit_ctx *e;
    bl_err err;
} mload_ctx;

static int mload_add(int64_t id, const bl_method_names *m, void *ctx)
{
    mload_ctx *l = ctx;
    emit_ctx *e = l->e;
    mref r = { id, m->method_id, e->mtext.len };
    const char *parts[4] = { m->cls, m->name, m->descriptor, m->source_file };
    for (int i = 0; i < 4 && !l->err; i++)
        l->err = bl_req_append(e->o->r, &e->mtext, parts[i], strlen(parts[i]) + 1);
    if (!l->err)
        l->err = bl_req_append(e->o->r, &e->mrefs, &r, sizeof r);
    return l->err != BL_OK;
}

/* On a remote store: the build's method names in e->mrefs/e->mtext (one
 * statement instead of one per method). Out of memory: left empty (the
 * names are looked up one by one). BL_EIO when the read failed. */
static bl_err mload(emit_ctx *e)
{
    if (!bl_db_remote(e->db))
        return BL_OK;
    mload_ctx l = { e, BL_OK };
    bl_err err = bl_calltree_build_methods(e->db, e->q->build_id, mload_add, &l);
    if (err || l.err) {
        bl_req_buf_free(e->o->r, &e->mrefs);
        bl_req_buf_free(e->o->r, &e->mtext);
    }
    return err;
}

/* bl_calltree_method, answered from e->mrefs when they were read */
static void method_lookup(emit_ctx *e, int64_t id, bl_method_cb cb, void *ctx)
{
    size_t n = e->mrefs.len / sizeof(mref);
    if (n) {
        const mref *a = (const mref *)(const void *)e->mrefs.data;
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (a[mid].id < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n && a[lo].id == id) {
            const char *t = (const char *)e->mtext.data + a[lo].off;
            bl_method_names m;
            m.cls = t;
            m.name = m.cls + strlen(m.cls) + 1;
            m.descriptor = m.name + strlen(m.name) + 1;
            m.source_file = m.descriptor + strlen(m.descriptor) + 1;
            m.method_id = a[lo].method_id;
            cb(&m, ctx);
            return;
        }
    }
    (void)bl_calltree_method(e->db, id, cb, ctx);
}

static void out_method(emit_ctx *e, int64_t id)
{
    bl_out *o = e->o;
    uint64_t *v;
    int ins;
    if (o->e)
        return;
    if ((o->e = map_put(o->r, &e->names, (uint64_t)id, 0, e->text.len, &v, &ins)))
        return;
    if (ins && (e->fmt == TREE_SPEEDSCOPE || e->fmt == TREE_COLUMNS)) {
        /* the frame (speedscope) or method object (columns) goes to the
         * frames list, its index to the text */
        bl_out fr = { o->r, e->frames, BL_OK };
        if (e->n_frames)
            bl_out_raw(&fr, ",", 1);
        method_out m = { &fr, 0, e->fmt == TREE_COLUMNS ? TREE_JSON : e->fmt };
        method_lookup(e, id, method_json, &m);
        if (!m.found)
            bl_out_str(&fr, e->fmt == TREE_COLUMNS ? "{\"class\":\"?\",\"name\":\"?\"}"
                                                : "{\"name\":\"?\"}");
        e->frames = fr.b;
        char ix[24];
        snprintf(ix, sizeof ix, "%llu", (unsigned long long)e->n_frames++);
        bl_out tmp = { o->r, e->text, fr.e };
        bl_out_str(&tmp, ix);
        e->text = tmp.b;
        if (!tmp.e)
            tmp.e = bl_req_append(o->r, &e->text, "", 1);
        if ((o->e = tmp.e))
            return;
    } else if (ins) {
        /* written into the names text, then NUL-terminated */
        bl_out tmp = { o->r, e->text, BL_OK };
        method_out m = { &tmp, 0, e->fmt };
        method_lookup(e, id, method_json, &m);
        if (!m.found)
            bl_out_json(&tmp, e->fmt == TREE_CHROME ? json_string("?")
                                                 : json_pack("{s:s,s:s}", "class", "?", "name", "?"));
        e->text = tmp.b;
        if (!tmp.e)
            tmp.e = bl_req_append(o->r, &e->text, "", 1);
        if ((o->e = tmp.e))
            return;
    }
    bl_out_str(o, e->text.data + *v);
}

/* ---- equal times ------------------------------------------------------------
 * Children are listed by total time, descending; children with equal times
 * by their method's names (class, then name, then descriptor, compared
 * byte for byte), then by its methodId (two entries of a method-ID file
 * with the same names), then by the method's key (only methods without
 * names: a damaged store). Never by node id: node ids are the order in
 * which the nodes were made, which on PostgreSQL depends on which node
 * processed which batch (node-id blocks of 2^25 per node), so answers are
 * the same on every store and every node. The names are looked up once per
 * method that ties (tkeys). */

typedef struct tk_fill {
    emit_ctx *e;
    int found;
} tk_fill;

static void tk_cb(const bl_method_names *m, void *ctx)
{
    tk_fill *f = ctx;
    emit_ctx *e = f->e;
    const char *parts[3] = { m->cls, m->name, m->descriptor };
    f->found = 1;
    if (!e->o->e)
        e->o->e = bl_req_append(e->o->r, &e->tktext, &m->method_id, sizeof m->method_id);
    for (int i = 0; i < 3 && !e->o->e; i++)
        e->o->e = bl_req_append(e->o->r, &e->tktext, parts[i], strlen(parts[i]) + 1);
}

/* The offset in e->tktext of method `id`'s key, looked up when new; on
 * error (e->o->e set) SIZE_MAX. */
static size_t tk_off(emit_ctx *e, int64_t id)
{
    uint64_t *v;
    int ins;
    if (e->o->e || (e->o->e = map_put(e->o->r, &e->tkeys, (uint64_t)id, 0, e->tktext.len, &v,
                                      &ins)))
        return SIZE_MAX;
    if (!ins)
        return (size_t)*v;
    size_t off = e->tktext.len;
    tk_fill f = { e, 0 };
    method_lookup(e, id, tk_cb, &f);
    if (!f.found) { /* no names: methodId -1, empty names */
        static const char none[8 + 3] = { (char)0xff, (char)0xff, (char)0xff, (char)0xff,
                                          (char)0xff, (char)0xff, (char)0xff, (char)0xff };
        if (!e->o->e)
            e->o->e = bl_req_append(e->o->r, &e->tktext, none, sizeof none);
    }
    return e->o->e ? SIZE_MAX : off;
}

/* Orders two different methods with equal times (above). */
static int tie_cmp(emit_ctx *e, int64_t ma, int64_t mb)
{
    if (ma == mb)
        return 0;
    size_t oa = tk_off(e, ma), ob = tk_off(e, mb);
    if (oa != SIZE_MAX && ob != SIZE_MAX) {
        const char *a = e->tktext.data + oa, *b = e->tktext.data + ob;
        int64_t ia, ib;
        memcpy(&ia, a, sizeof ia);
        memcpy(&ib, b, sizeof ib);
        a += sizeof ia;
        b += sizeof ib;
        for (int i = 0; i < 3; i++) {
            int c = strcmp(a, b); /* bytes as unsigned char */
            if (c)
                return c < 0 ? -1 : 1;
            a += strlen(a) + 1;
            b += strlen(b) + 1;
        }
        if (ia != ib)
            return ia < ib ? -1 : 1;
    }
    return ma < mb ? -1 : 1;
}

/* qsort has no context argument */
static _Thread_local const tnode *cmp_nodes;
static _Thread_local emit_ctx *cmp_e;

/* By total time alone (descending): the first pass over a level longer
 * than the nodes left to print (emit_children). */
static int cmp_total_only(const void *a, const void *b)
{
    uint64_t x = cmp_nodes[*(const int64_t *)a].total, y = cmp_nodes[*(const int64_t *)b].total;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int cmp_total(const void *a, const void *b)
{
    const tnode *x = &cmp_nodes[*(const int64_t *)a], *y = &cmp_nodes[*(const int64_t *)b];
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return tie_cmp(cmp_e, x->method, y->method);
}

static uint64_t node_total(int64_t i)
{
    return cmp_nodes[i].total;
}

/* Orders the entries ids[0..k) of one tree level for printing when at most
 * `budget` of them can be printed (the nodes left): with more than that,
 * first by total time alone (by_total), then by the full rule (full: ties
 * by names, "equal times") only down to the last printable entry's total,
 * its ties included — the same first `budget` as ordering them all, with
 * names looked up for the ties at the cut only (a level of 300,000 roots
 * under limit=10 would otherwise load the names of nearly every method
 * that ties anywhere on it). total(i): entry i's total time (the
 * comparators' thread-local arrays set). Returns how many are in the full
 * order: m < k means the level is cut there. */
static size_t order_printable(int64_t *ids, size_t k, uint64_t budget,
                              int (*by_total)(const void *, const void *),
                              int (*full)(const void *, const void *),
                              uint64_t (*total)(int64_t))
{
    size_t m = k;
    if (budget < k) {
        qsort(ids, k, sizeof *ids, by_total);
        m = budget ? (size_t)budget : 1;
        uint64_t cut = total(ids[m - 1]);
        while (m < k && total(ids[m]) == cut)
            m++;
    }
    qsort(ids, m, sizeof *ids, full);
    return m;
}

/* ---- exports (format=speedscope|chrome) ----------------------------------
 * The same nodes in the same order, written as events instead of a nested
 * tree: each node is laid out from e->cursor, its children one after
 * another from its start, and it ends at max(start + total, the end of its
 * last child) — so events nest and never go back in time. speedscope: an
 * open ("O") and a close ("C") event per node in an evented profile (µs),
 * frames listed once; Chrome trace events: one complete ("X") event per
 * node (ts, dur = total). The JSON tree's list punctuation is written by
 * tree_punct, which writes nothing for the exports. */

static void tree_punct(emit_ctx *e, const char *s, size_t n)
{
    if (e->fmt == TREE_JSON)
        bl_out_raw(e->o, s, n);
}

/* Writes a node's start (JSON: up to "children":; exports: its opening
 * event) and returns where it starts. */
static uint64_t node_open(emit_ctx *e, int64_t method, uint64_t count, uint64_t total,
                          uint64_t self)
{
    char num[160];
    uint64_t at = e->cursor;
    if (e->fmt == TREE_JSON) {
        bl_out_str(e->o, "{\"method\":");
        out_method(e, method);
        snprintf(num, sizeof num, ",\"count\":%llu,\"total_us\":%llu,\"self_us\":%llu,\"children\":",
                 (unsigned long long)count, (unsigned long long)total, (unsigned long long)self);
        bl_out_str(e->o, num);
        return at;
    }
    if (e->fmt == TREE_COLUMNS) {
        /* one number per column; the parent is the innermost open node */
        if (e->o->e)
            return at;
        int sep = e->events != 0;
        size_t depth = e->open.len / sizeof(int64_t);
        int64_t self_ix = (int64_t)e->events++;
        if (e->binary) {
            uint64_t v[COLS];
            v[COL_PARENT] = depth ? (uint64_t)((int64_t *)(void *)e->open.data)[depth - 1]
                                  : UINT64_MAX; /* -1 */
            bl_out *o = e->o; /* the method's index, as text, to the scratch */
            e->ix.b.len = 0;
            e->o = &e->ix;
            out_method(e, method);
            e->o = o;
            v[COL_METHOD] = e->ix.b.len && !e->ix.e ? strtoull(e->ix.b.data, NULL, 10) : 0;
            v[COL_COUNT] = count;
            v[COL_TOTAL] = total;
            v[COL_SELF] = self;
            if (!o->e)
                o->e = e->ix.e;
            for (int k = 0; k < COLS; k++)
                bl_out_raw(&e->col[k], (const char *)&v[k], sizeof v[k]);
            if (!o->e)
                o->e = bl_req_append(o->r, &e->open, &self_ix, sizeof self_ix);
            for (int k = 0; k < COLS && !o->e; k++)
                o->e = e->col[k].e;
            return at;
        }
        if (depth)
            bl_out_u64(&e->col[COL_PARENT], sep,
                       (uint64_t)((int64_t *)(void *)e->open.data)[depth - 1]);
        else
            bl_out_raw(&e->col[COL_PARENT], sep ? ",-1" : "-1", sep ? 3 : 2);
        bl_out_raw(&e->col[COL_METHOD], ",", (size_t)sep);
        bl_out *o = e->o; /* the method's index is written to its column */
        e->o = &e->col[COL_METHOD];
        out_method(e, method);
        e->o = o;
        bl_out_u64(&e->col[COL_COUNT], sep, count);
        bl_out_u64(&e->col[COL_TOTAL], sep, total);
        bl_out_u64(&e->col[COL_SELF], sep, self);
        if (!o->e)
            o->e = bl_req_append(o->r, &e->open, &self_ix, sizeof self_ix);
        for (int k = 0; k < COLS && !o->e; k++)
            o->e = e->col[k].e;
        return at;
    }
    if (e->events++)
        bl_out_raw(e->o, ",", 1);
    if (e->fmt == TREE_SPEEDSCOPE) {
        bl_out_str(e->o, "{\"type\":\"O\",\"frame\":");
        out_method(e, method);
        snprintf(num, sizeof num, ",\"at\":%llu}", (unsigned long long)at);
    } else {
        bl_out_str(e->o, "{\"name\":");
        out_method(e, method);
        snprintf(num, sizeof num,
                 ",\"cat\":\"beatline\",\"ph\":\"X\",\"ts\":%llu,\"dur\":%llu,\"pid\":1,\"tid\":1,"
                 "\"args\":{\"calls\":%llu,\"self_us\":%llu}}",
                 (unsigned long long)at, (unsigned long long)total, (unsigned long long)count,
                 (unsigned long long)self);
    }
    bl_out_str(e->o, num);
    return at;
}

/* Writes a node's end (JSON: "}"; speedscope: its closing event) and moves
 * the cursor past it. */
static void node_close(emit_ctx *e, int64_t method, uint64_t at, uint64_t total)
{
    uint64_t end = total > UINT64_MAX - at ? UINT64_MAX : at + total;
    if (end < e->cursor)
        end = e->cursor;
    e->cursor = end;
    if (e->fmt == TREE_JSON) {
        bl_out_raw(e->o, "}", 1);
    } else if (e->fmt == TREE_COLUMNS) {
        if (e->open.len >= sizeof(int64_t))
            e->open.len -= sizeof(int64_t);
    } else if (e->fmt == TREE_SPEEDSCOPE) {
        char num[64];
        bl_out_str(e->o, ",{\"type\":\"C\",\"frame\":");
        out_method(e, method);
        snprintf(num, sizeof num, ",\"at\":%llu}", (unsigned long long)end);
        bl_out_str(e->o, num);
    }
}

static void emit(emit_ctx *e, int64_t i, uint32_t max_depth);

/* Writes the children list starting at `first` (linked by next_sibling),
 * by total time descending, while the node budget lasts. */
static void emit_children(emit_ctx *e, int64_t first, uint32_t max_depth)
{
    const tnode *n = tn(e->t);
    size_t k = 0;
    tree_punct(e, "[", 1);
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
            cmp_e = e;
            size_t m = order_printable(ids, k, e->budget, cmp_total_only, cmp_total, node_total);
            for (size_t j = 0; j < m && !e->o->e; j++) {
                if (e->budget == 0) {
                    e->truncated = 1;
                    break;
                }
                if (j)
                    tree_punct(e, ",", 1);
                emit(e, ids[j], max_depth);
            }
            if (m < k)
                e->truncated = 1;
            free(ids);
            bl_req_give(e->o->r, k * sizeof *ids);
        }
    }
    tree_punct(e, "]", 1);
}

static void emit(emit_ctx *e, int64_t i, uint32_t max_depth)
{
    const tnode *x = &tn(e->t)[i];
    e->budget--;
    uint64_t at = node_open(e, x->method, x->count, x->total, x->self);
    if (x->depth + 1 < max_depth) {
        emit_children(e, x->first_child, max_depth);
    } else {
        tree_punct(e, "[]", 2);
        if (x->first_child >= 0 || x->cut)
            e->truncated = 1;
    }
    x = &tn(e->t)[i];
    node_close(e, x->method, at, x->total);
}

/* ---- top-down reading (no root=, limit up to TOP_DOWN_MAX_LIMIT) -----------
 * Without root=, the output tree's roots are the stored roots merged by
 * method, and an output node's children are the stored children of its
 * stored nodes merged by method. So the tree is read while it is printed,
 * one level under each printed node (bl_calltree_children: an index seek
 * per stored node): what max_depth and limit leave out is never read, and
 * a node on the last printed level or past the limit costs one existence
 * seek (for `truncated`) until the answer is known to be truncated.
 *
 * The answer is byte-identical to merging every stored node first (above,
 * still used for root=): both order children by total time and ties by
 * their methods' names ("equal times"), a total order that does not depend
 * on node ids or on the order rows are read in.
 *
 * Memory, charged to the request: the stored children of each node on the
 * path being printed (48 bytes each, plus 56 bytes per merged child and 8
 * for its place in the order), in three stacks reused all along. */

/* Up to this limit the tree is read top-down; past it, merging every
 * stored node is cheaper: a top-down read costs about 3.5 µs per printed
 * node (its index seek), the merge about 2.5 µs per stored node, and a
 * build keeps up to 2,000,000 (bench/calltree-query-bench.sh: limit
 * 1,000,000 over 1,000,000 nodes, 3.5 s top-down, 2.7 s merged). */
#define TOP_DOWN_MAX_LIMIT 100000

typedef struct crow {
    int64_t id, method, count, total, self; /* one stored node */
    int64_t main;                           /* its thread kind, 1 main */
} crow;

typedef struct cgroup {
    uint64_t count, total, self; /* summed over the stored nodes */
    int64_t method;
    size_t first, n; /* its stored nodes: rows [first, first + n) */
} cgroup;

static crow *rows_at(emit_ctx *e)
{
    return (crow *)(void *)e->rows.data;
}

static cgroup *groups_at(emit_ctx *e)
{
    return (cgroup *)(void *)e->groups.data;
}

static int64_t *order_at(emit_ctx *e)
{
    return (int64_t *)(void *)e->order.data;
}

static int cmp_method_id(const void *a, const void *b)
{
    const crow *x = a, *y = b;
    if (x->method != y->method)
        return x->method < y->method ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static _Thread_local const cgroup *cmp_groups; /* qsort has no context argument */

/* cmp_total's twin on merged children: the same order (a total order, see
 * "equal times") */
/* By total alone: the first pass over more groups than can be printed
 * (lazy_children; as emit_children's) */
static int cmp_group_total_only(const void *a, const void *b)
{
    const cgroup *x = &cmp_groups[*(const int64_t *)a], *y = &cmp_groups[*(const int64_t *)b];
    return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

static uint64_t group_total(int64_t i)
{
    return cmp_groups[i].total;
}

static int cmp_group_total(const void *a, const void *b)
{
    const cgroup *x = &cmp_groups[*(const int64_t *)a], *y = &cmp_groups[*(const int64_t *)b];
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return tie_cmp(cmp_e, x->method, y->method);
}

static int row_add(const bl_calltree_node *n, void *ctx)
{
    emit_ctx *e = ctx;
    crow c = { n->id, n->method, n->count, n->total_us, n->self_us, e->main };
    if ((e->o->e = bl_req_append(e->o->r, &e->rows, &c, sizeof c)))
        return 1;
    return 0;
}

/* Calls f on the stored nodes rows [first, first + n) (on their thread
 * kind), or on the pseudo node 0 (the roots' parent) of the main thread and,
 * for thread=all, of the others when n is 0. */
static bl_err for_parents(emit_ctx *e, size_t first, size_t n,
                          bl_err (*f)(emit_ctx *e, int64_t parent, int *stop))
{
    int stop = 0;
    bl_err err = BL_OK;
    if (n == 0) {
        e->main = 1;
        err = f(e, 0, &stop);
        if (!err && !stop && !e->q->main_only) {
            e->main = 0;
            err = f(e, 0, &stop);
        }
        return err;
    }
    for (size_t i = 0; i < n && !stop && !err; i++) {
        const crow *p = &rows_at(e)[first + i]; /* rows may move in f */
        e->main = (int)p->main;
        err = f(e, p->id, &stop);
    }
    return err;
}

/* ---- one scan ---------------------------------------------------------------
 * Reading children top-down costs an index seek per stored parent (about
 * 1.2 µs of CPU per printed node: most of the 100,000-node flame graph's
 * first render); one range scan of the build's nodes costs about a fifth
 * of that per node (bl_calltree_scan). So when the build holds at most
 * PRELOAD_FACTOR × limit stored nodes (of the thread kinds asked), they
 * are read in one scan (in the answer's snapshot) into e->pre, ordered by
 * (thread kind, parent), and the top-down reading takes a node's children
 * from there by binary search instead of from the database: the same rows,
 * so the same answer. A bigger build is read top-down from the database as
 * before, after a wasted scan of PRELOAD_FACTOR × limit + 1 rows (at most
 * about as much CPU as the limit's top-down reading); so is one whose scan
 * does not fit the request's memory budget (56 bytes per stored node).
 * On a remote store (bl_db_remote: PostgreSQL, where each children read is
 * a round trip) the whole build is scanned whatever its size, as far as
 * the memory budget allows. */
#define PRELOAD_FACTOR 3

typedef struct prow {
    int64_t parent;
    crow c; /* c.main: the thread kind */
} prow;

typedef struct preload_ctx {
    emit_ctx *e;
    uint64_t n, cap;
    int failed; /* over the cap or out of memory: not used */
    int sorted; /* rows came in (main, parent) order so far */
} preload_ctx;

static int prow_cmp(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    if (x->c.main != y->c.main)
        return x->c.main < y->c.main ? -1 : 1;
    return x->parent < y->parent ? -1 : x->parent > y->parent;
}

static int preload_add(const bl_calltree_node *n, void *ctx)
{
    preload_ctx *p = ctx;
    /* over the cap, or a parent id pre_key cannot hold: not used */
    if (++p->n > p->cap || n->parent < 0 || n->parent >= INT64_C(1) << 62) {
        p->failed = 1;
        return 1;
    }
    prow r = { n->parent, { n->id, n->method, n->count, n->total_us, n->self_us, n->main } };
    size_t k = p->e->pre.len / sizeof r;
    if (k && p->sorted && prow_cmp(&((const prow *)(const void *)p->e->pre.data)[k - 1], &r) > 0)
        p->sorted = 0;
    if (bl_req_append(p->e->o->r, &p->e->pre, &r, sizeof r) != BL_OK) {
        p->failed = 1;
        return 1;
    }
    return 0;
}

static bl_err pre_keys(emit_ctx *e);

/* Reads the build's nodes into e->pre when there are at most
 * PRELOAD_FACTOR × limit of them (else leaves e->pre empty). BL_EIO when
 * the read failed. */
static bl_err preload(emit_ctx *e, uint64_t limit)
{
    /* a remote store (PostgreSQL): each children read would be a round
     * trip, so the whole build is scanned when the memory budget allows */
    uint64_t cap = bl_db_remote(e->db) || limit > UINT64_MAX / PRELOAD_FACTOR - 1
                       ? UINT64_MAX - 1
                       : limit * PRELOAD_FACTOR;
    preload_ctx p = { e, 0, cap, 0, 1 };
    int64_t max = p.cap >= (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)p.cap + 1;
    bl_err err = bl_calltree_scan(e->db, e->q->build_id, e->q->main_only, max, preload_add, &p);
    if (err || p.failed) {
        bl_req_buf_free(e->o->r, &e->pre);
        return err;
    }
    if (!p.sorted) /* the index's order, but the answer must not depend on it */
        qsort(e->pre.data, e->pre.len / sizeof(prow), sizeof(prow), prow_cmp);
    if (pre_keys(e) != BL_OK) /* out of memory: read from the database */
        bl_req_buf_free(e->o->r, &e->pre);
    return BL_OK;
}

/* A preloaded row's (thread kind, parent) as one ordered key: ids are
 * positive and below 2^62 */
static uint64_t pre_key(int64_t main, int64_t parent)
{
    return (main ? UINT64_C(1) << 62 : 0) | (uint64_t)parent;
}

/* e->keys: pre_key of each row of e->pre, searched instead of the rows
 * (8 bytes a row instead of 56: fewer cache misses) */
static bl_err pre_keys(emit_ctx *e)
{
    const prow *a = (const prow *)(const void *)e->pre.data;
    size_t len = e->pre.len / sizeof *a;
    bl_err err = bl_req_reserve(e->o->r, &e->keys, len * sizeof(uint64_t));
    if (err)
        return err;
    uint64_t *k = (uint64_t *)(void *)e->keys.data;
    for (size_t i = 0; i < len; i++)
        k[i] = pre_key(a[i].c.main, a[i].parent);
    e->keys.len = len * sizeof(uint64_t);
    return BL_OK;
}

/* The preloaded children of `parent` on thread kind e->main: rows
 * [*first, *first + *n) of e->pre. */
static void pre_children(const emit_ctx *e, int64_t parent, size_t *first, size_t *n)
{
    const uint64_t *k = (const uint64_t *)(const void *)e->keys.data;
    size_t len = e->keys.len / sizeof *k;
    uint64_t key = pre_key(e->main, parent);
    size_t lo = 0, hi = len;
    while (lo < hi) { /* the first row >= key */
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    while (lo < len && k[lo] == key)
        lo++;
    *n = lo - *first;
}

static bl_err read_children(emit_ctx *e, int64_t parent, int *stop)
{
    bl_err err = BL_OK;
    if (e->pre.len) {
        size_t first, n;
        pre_children(e, parent, &first, &n);
        for (size_t i = 0; i < n && !e->o->e; i++) {
            crow c = ((const prow *)(const void *)e->pre.data)[first + i].c;
            e->o->e = bl_req_append(e->o->r, &e->rows, &c, sizeof c);
        }
    } else {
        err = bl_calltree_children(e->db, e->q->build_id, e->main, parent, row_add, e);
    }
    *stop = e->o->e != BL_OK;
    return err;
}

static bl_err check_children(emit_ctx *e, int64_t parent, int *stop)
{
    int has;
    bl_err err = BL_OK;
    if (e->pre.len) {
        size_t first, n;
        pre_children(e, parent, &first, &n);
        has = n > 0;
    } else {
        err = bl_calltree_has_children(e->db, e->q->build_id, e->main, parent, &has);
    }
    if (has)
        e->truncated = 1;
    *stop = has;
    return err;
}

/* Marks the answer truncated when one of the stored nodes has a child. */
static void lazy_cut(emit_ctx *e, size_t first, size_t n)
{
    if (!e->truncated && !e->o->e && !e->dberr && for_parents(e, first, n, check_children))
        e->dberr = 1;
}

static void lazy_emit(emit_ctx *e, size_t gi, uint32_t depth);

/* Writes the merged children of the stored nodes rows [first, first + n)
 * (n 0: the roots), at `depth`, by total time descending, while the node
 * budget lasts. */
static void lazy_children(emit_ctx *e, size_t first, size_t n, uint32_t depth)
{
    tree_punct(e, "[", 1);
    if (e->budget == 0) {
        lazy_cut(e, first, n);
        tree_punct(e, "]", 1);
        return;
    }
    size_t r0 = e->rows.len / sizeof(crow), g0 = e->groups.len / sizeof(cgroup),
           o0 = e->order.len / sizeof(int64_t);
    if (!e->o->e && !e->dberr && for_parents(e, first, n, read_children))
        e->dberr = 1;
    size_t r1 = e->rows.len / sizeof(crow);
    if (r1 > r0 && !e->o->e && !e->dberr) {
        crow *rw = rows_at(e);
        qsort(rw + r0, r1 - r0, sizeof(crow), cmp_method_id);
        for (size_t i = r0; i < r1 && !e->o->e;) {
            cgroup g = { 0, 0, 0, rw[i].method, i, 0 };
            for (; i < r1 && rw[i].method == g.method; i++, g.n++) {
                g.count += (uint64_t)rw[i].count;
                g.total += (uint64_t)rw[i].total;
                g.self += (uint64_t)rw[i].self;
            }
            e->o->e = bl_req_append(e->o->r, &e->groups, &g, sizeof g);
        }
        size_t k = e->groups.len / sizeof(cgroup) - g0;
        if (!e->o->e)
            e->o->e = bl_req_reserve(e->o->r, &e->order, k * sizeof(int64_t));
        if (!e->o->e) {
            int64_t *ord = order_at(e) + o0;
            for (size_t j = 0; j < k; j++)
                ord[j] = (int64_t)(g0 + j);
            e->order.len += k * sizeof(int64_t);
            /* by total, ties by names (as the merge) */
            cmp_groups = groups_at(e);
            cmp_e = e;
            size_t m = order_printable(ord, k, e->budget, cmp_group_total_only, cmp_group_total,
                                       group_total);
            for (size_t j = 0; j < m && !e->o->e && !e->dberr; j++) {
                if (e->budget == 0) {
                    e->truncated = 1;
                    break;
                }
                if (j)
                    tree_punct(e, ",", 1);
                lazy_emit(e, (size_t)order_at(e)[o0 + j], depth);
            }
            if (m < k)
                e->truncated = 1;
        }
    }
    e->rows.len = r0 * sizeof(crow);
    e->groups.len = g0 * sizeof(cgroup);
    e->order.len = o0 * sizeof(int64_t);
    tree_punct(e, "]", 1);
}

static void lazy_emit(emit_ctx *e, size_t gi, uint32_t depth)
{
    cgroup g = groups_at(e)[gi];
    e->budget--;
    uint64_t at = node_open(e, g.method, g.count, g.total, g.self);
    if (depth + 1 < e->max_depth) {
        lazy_children(e, g.first, g.n, depth + 1);
    } else {
        tree_punct(e, "[]", 2);
        lazy_cut(e, g.first, g.n);
    }
    node_close(e, g.method, at, g.total);
}

/* The printer of both readings, writing to o: its names, tie keys, scratch
 * text and format=columns' buffers empty (emit_init), then given back to
 * r's budget (emit_free). fmt as parsed (TREE_COLUMNS_BINARY: the columns,
 * binary); at most `limit` nodes printed. */
static void emit_init(emit_ctx *e, req *r, bl_db *db, bl_out *o, int64_t limit, int fmt)
{
    memset(e, 0, sizeof *e);
    e->db = db;
    e->o = o;
    e->budget = (uint64_t)limit;
    e->fmt = fmt == TREE_COLUMNS_BINARY ? TREE_COLUMNS : fmt;
    e->binary = fmt == TREE_COLUMNS_BINARY;
    bl_u128map_init(&e->names);
    bl_u128map_init(&e->tkeys);
    bl_buf_init(&e->tktext, 0);
    bl_buf_init(&e->text, 0);
    bl_buf_init(&e->frames, 0);
    for (int k = 0; k < COLS; k++)
        bl_out_init(&e->col[k], r);
    bl_out_init(&e->ix, r);
    bl_buf_init(&e->open, 0);
}

static void emit_free(emit_ctx *e, req *r)
{
    map_free(r, &e->names);
    map_free(r, &e->tkeys);
    bl_req_buf_free(r, &e->tktext);
    bl_req_buf_free(r, &e->text);
    bl_req_buf_free(r, &e->frames);
    for (int k = 0; k < COLS; k++)
        bl_req_buf_free(r, &e->col[k].b);
    bl_req_buf_free(r, &e->ix.b);
    bl_req_buf_free(r, &e->open);
}

/* ---- binary columns (format=columns-binary, docs/api.md) -----------------
 * "BLCB", the head's length (u32), the head (the columns answer's JSON
 * without its five lists, plus "columns": [name, type] pairs), zeros to a
 * multiple of 8 bytes; then each column's `nodes` values in its type,
 * little-endian, each followed by zeros to a multiple of 8. parent is i32
 * (-1: a root), method u32; count, total_us and self_us are u32 when every
 * value of the column fits, else f64 (exact below 2^53). No text to format
 * or parse per node: the page takes typed arrays over the bytes. */
#define BIN_MAGIC "BLCB"

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* the wire type of column k: 'i' (4 bytes) or 'f' (f64) */
static char col_type(const emit_ctx *e, int k)
{
    if (k == COL_PARENT || k == COL_METHOD)
        return 'i';
    const uint64_t *v = (const uint64_t *)(const void *)e->col[k].b.data;
    size_t n = e->col[k].b.len / sizeof *v;
    for (size_t i = 0; i < n; i++)
        if (v[i] > UINT32_MAX)
            return 'f';
    return 'i';
}

static void out_pad8(bl_out *o)
{
    static const char zeros[8] = { 0 };
    if (o->b.len % 8)
        bl_out_raw(o, zeros, 8 - o->b.len % 8);
}

/* Writes the head's "columns" pairs (after "nodes"). */
static void bin_types(emit_ctx *e, const char *types)
{
    bl_out *o = e->o;
    bl_out_str(o, ",\"columns\":[");
    for (int k = 0; k < COLS; k++) {
        bl_out_str(o, k ? ",[\"" : "[\"");
        bl_out_str(o, col_names[k]);
        bl_out_str(o, k == COL_PARENT    ? "\",\"i32\"]"
                   : types[k] == 'f' ? "\",\"f64\"]"
                                     : "\",\"u32\"]");
    }
    bl_out_raw(o, "]", 1);
}

/* After the head: its length patched in, then the columns. */
static void bin_columns(emit_ctx *e, const char *types)
{
    bl_out *o = e->o;
    if (o->e)
        return;
    if (o->b.len < 8 || o->b.len - 8 > UINT32_MAX) {
        o->e = BL_ENOMEM;
        return;
    }
    put_le((unsigned char *)o->b.data + 4, o->b.len - 8, 4);
    out_pad8(o);
    for (int k = 0; k < COLS && !o->e; k++) {
        const uint64_t *v = (const uint64_t *)(const void *)e->col[k].b.data;
        size_t n = e->col[k].b.len / sizeof *v, w = types[k] == 'f' ? 8 : 4;
        if (n > (SIZE_MAX / 2) / w) {
            o->e = BL_ENOMEM;
            return;
        }
        if ((o->e = bl_req_reserve(o->r, &o->b, n * w)))
            return;
        unsigned char *p = (unsigned char *)o->b.data + o->b.len;
        for (size_t i = 0; i < n; i++, p += w) {
            if (w == 8) {
                double d = (double)v[i];
                uint64_t bits;
                memcpy(&bits, &d, sizeof bits);
                put_le(p, bits, 8);
            } else {
                put_le(p, v[i], 4); /* a root's parent: UINT64_MAX, so 0xFFFFFFFF */
            }
        }
        o->b.len += n * w;
        o->b.data[o->b.len] = '\0';
        out_pad8(o);
    }
}

/* The answer's head: up to "roots": (JSON), or up to the first event of the
 * exports' event list (Chrome: a thread-name event first). */
static void tree_head(emit_ctx *e, req *r, const char *bname, int main_only, const char *root)
{
    bl_out *o = e->o;
    if (e->binary) /* magic, then the head's length (bin_columns) */
        bl_out_raw(o, BIN_MAGIC "\0\0\0\0", 8);
    bl_out_str(o, e->fmt == TREE_SPEEDSCOPE
                   ? "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                     "\"exporter\":\"beatline\",\"app\":"
                   : "{\"app\":");
    bl_out_json(o, bl_json_text(r->app));
    bl_out_str(o, ",\"build\":");
    bl_out_json(o, bl_json_text(bname));
    bl_out_str(o, main_only ? ",\"thread\":\"main\",\"root\":" : ",\"thread\":\"all\",\"root\":");
    bl_out_json(o, root ? bl_json_text(root) : json_null());
    if (e->fmt == TREE_JSON) {
        bl_out_str(o, ",\"roots\":");
        return;
    }
    if (e->fmt == TREE_COLUMNS) {
        bl_out_str(o, e->binary ? ",\"format\":\"columns-binary\"" : ",\"format\":\"columns\"");
        return;
    }
    char name[BL_BUILD_NAME_MAX + 128];
    snprintf(name, sizeof name, "%s %s (%s thread%s)", r->app, bname, main_only ? "main" : "all",
             main_only ? "" : "s");
    if (e->fmt == TREE_SPEEDSCOPE) {
        bl_out_str(o, ",\"activeProfileIndex\":0,\"name\":");
        bl_out_json(o, bl_json_text(name));
        bl_out_str(o, ",\"profiles\":[{\"type\":\"evented\",\"unit\":\"microseconds\","
                   "\"startValue\":0,\"name\":");
        bl_out_json(o, bl_json_text(name));
        bl_out_str(o, ",\"events\":[");
    } else {
        bl_out_str(o, ",\"displayTimeUnit\":\"ms\",\"traceEvents\":[{\"name\":\"thread_name\","
                   "\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":");
        bl_out_json(o, bl_json_text(name));
        bl_out_str(o, "}}");
        e->events = 1;
    }
}

/* The answer's tail after the roots / events. */
static void tree_tail(emit_ctx *e)
{
    bl_out *o = e->o;
    char types[COLS] = { 0 }; /* binary: each column's wire type */
    if (e->fmt == TREE_SPEEDSCOPE) {
        char num[64];
        snprintf(num, sizeof num, "],\"endValue\":%llu}],\"shared\":{\"frames\":[",
                 (unsigned long long)e->cursor);
        bl_out_str(o, num);
        if (e->frames.len)
            bl_out_raw(o, e->frames.data, e->frames.len);
        bl_out_str(o, "]}");
    } else if (e->fmt == TREE_CHROME) {
        bl_out_str(o, "]");
    } else if (e->fmt == TREE_COLUMNS) {
        char num[64];
        bl_out_str(o, ",\"methods\":[");
        if (e->frames.len)
            bl_out_raw(o, e->frames.data, e->frames.len);
        snprintf(num, sizeof num, "],\"nodes\":%llu", (unsigned long long)e->events);
        bl_out_str(o, num);
        for (int k = 0; k < COLS && e->binary; k++)
            if (!o->e)
                o->e = e->col[k].e;
        if (e->binary) {
            for (int k = 0; k < COLS; k++)
                types[k] = col_type(e, k);
            bin_types(e, types);
        }
        for (int k = 0; k < COLS && !e->binary; k++) {
            if (!o->e)
                o->e = e->col[k].e;
            bl_out_str(o, ",\"");
            bl_out_str(o, col_names[k]);
            bl_out_str(o, "\":[");
            if (e->col[k].b.len)
                bl_out_raw(o, e->col[k].b.data, e->col[k].b.len);
            bl_out_raw(o, "]", 1);
        }
    }
    bl_out_str(o, e->truncated ? ",\"truncated\":true}" : ",\"truncated\":false}");
    if (e->binary)
        bin_columns(e, types);
}


static const char *tree_type(int fmt)
{
    return fmt == TREE_COLUMNS_BINARY ? "application/octet-stream" : "application/json";
}

/* The call tree without root= (limit up to TOP_DOWN_MAX_LIMIT), read
 * top-down while printed. */
static enum MHD_Result tree_top_down(struct MHD_Connection *c, bl_http *h, req *r, bl_db *db,
                                     const bl_calltree_query *q, const char *bname,
                                     int64_t max_depth, int64_t limit, int fmt, uint64_t gen)
{
    bl_out o;
    bl_out_init(&o, r);
    emit_ctx e;
    emit_init(&e, r, db, &o, limit, fmt);
    e.q = q;
    e.max_depth = (uint32_t)max_depth;
    bl_buf_init(&e.rows, 0);
    bl_buf_init(&e.groups, 0);
    bl_buf_init(&e.order, 0);
    tree_head(&e, r, bname, q->main_only, NULL);
    /* one snapshot for every read of the answer, as the merge's one query */
    bl_buf_init(&e.pre, 0);
    bl_buf_init(&e.keys, 0);
    bl_buf_init(&e.mrefs, 0);
    bl_buf_init(&e.mtext, 0);
    if (bl_db_read_begin(db) != BL_OK) {
        e.dberr = 1;
    } else {
        if (preload(&e, (uint64_t)limit) != BL_OK || mload(&e) != BL_OK)
            e.dberr = 1;
        else
            lazy_children(&e, 0, 0, 0);
        bl_db_read_end(db);
    }
    bl_req_buf_free(r, &e.pre);
    bl_req_buf_free(r, &e.keys);
    bl_req_buf_free(r, &e.mrefs);
    bl_req_buf_free(r, &e.mtext);
    tree_tail(&e);
    emit_free(&e, r);
    bl_req_buf_free(r, &e.rows);
    bl_req_buf_free(r, &e.groups);
    bl_req_buf_free(r, &e.order);
    if (e.dberr) {
        bl_req_buf_free(r, &o.b);
        return bl_reply_error(c, h, 500, "database error");
    }
    if (!o.e)
        bl_tree_keep_put(r, q->build_id, q->main_only, max_depth, limit, fmt, gen, o.b.data,
                         o.b.len);
    return bl_out_reply_as(c, h, &o, tree_type(fmt));
}

enum MHD_Result bl_h_tree(struct MHD_Connection *c, bl_http *h, req *r)
{
    /* before any read: a commit after this makes the answer not kept */
    uint64_t gen = bl_db_write_generation();
    char err[200];
    int main_only;
    int64_t max_depth, limit;
    const char *build = bl_arg(c, "build");
    const char *root = bl_arg(c, "root");
    const char *format = bl_arg(c, "format");
    int fmt = TREE_JSON;
    if (format && !strcmp(format, "columns"))
        fmt = TREE_COLUMNS;
    else if (format && !strcmp(format, "columns-binary"))
        fmt = TREE_COLUMNS_BINARY;
    else if (format && !strcmp(format, "speedscope"))
        fmt = TREE_SPEEDSCOPE;
    else if (format && !strcmp(format, "chrome"))
        fmt = TREE_CHROME;
    else if (format && *format && strcmp(format, "json") != 0)
        return bl_reply_error(c, h, 400, "'format' must be json, columns, columns-binary, speedscope or chrome");
    if (bl_arg_thread(c, &main_only, err, sizeof err) ||
        bl_arg_i64(c, "max_depth", 64, 1, 4096, &max_depth, err, sizeof err) ||
        bl_arg_i64(c, "limit", 10000, 0, 1000000, &limit, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_error(c, h, 503, "database unavailable");
    /* the build: given, or the newest one with data */
    int64_t build_id;
    char bname[BL_BUILD_NAME_MAX + 1];
    bl_err be = bl_builds_pick(db, r->app_id, build, &build_id, bname, sizeof bname);
    if (be == BL_ENOTFOUND) {
        snprintf(err, sizeof err, build ? "unknown build '%s'" : "app has no builds%s",
                 build ? build : "");
        return bl_reply_error(c, h, 404, err);
    }
    if (be)
        return bl_reply_error(c, h, 500, "database error");
    /* root: "class.method" or "class.method(descriptor)" */
    char rcls[512] = "", rname[256] = "";
    const char *rdesc = NULL;
    if (root && bl_parse_method(root, rcls, sizeof rcls, rname, sizeof rname, &rdesc))
        return bl_reply_error(c, h, 400,
                              "'root' must be class.method or class.method(descriptor)");
    bl_calltree_query q = { build_id, main_only, root ? rcls : NULL, root ? rname : NULL,
                            rdesc };
    if (!root) { /* an answer kept since nothing was committed (http/tree_keep.h) */
        bl_out k;
        bl_out_init(&k, r);
        int got = bl_tree_keep_get(r, build_id, main_only, max_depth, limit, fmt, gen, &k.b, &k.e);
        if (got)
            return bl_out_reply_as(c, h, &k, tree_type(fmt)); /* -1: 503, k freed */
        bl_req_buf_free(r, &k.b);
    }
    if (!root && limit <= TOP_DOWN_MAX_LIMIT)
        return tree_top_down(c, h, r, db, &q, bname, max_depth, limit, fmt, gen);
    tree t;
    memset(&t, 0, sizeof t);
    t.r = r;
    t.max_depth = (uint32_t)max_depth;
    t.by_root = root != NULL;
    bl_buf_init(&t.nodes, 0);
    bl_buf_init(&t.src, 0);
    bl_u128map_init(&t.ix);
    bl_err le = bl_calltree_nodes(db, &q, tree_add, &t);
    int failed = t.failed;
    bl_req_buf_free(r, &t.src);
    if (!failed && le) {
        bl_req_buf_free(r, &t.nodes);
        map_free(r, &t.ix);
        return bl_reply_error(c, h, 500, "database error");
    }
    map_free(r, &t.ix); /* merging is done */
    bl_out o;
    bl_out_init(&o, r);
    if (failed)
        o.e = BL_ENOMEM;
    /* roots are the nodes at depth 0, linked through a virtual head */
    emit_ctx e;
    emit_init(&e, r, db, &o, limit, fmt);
    e.t = &t;
    int64_t head = -1;
    for (size_t i = 0; i < t.len; i++)
        if (tn(&t)[i].depth == 0) {
            tn(&t)[i].next_sibling = (int32_t)head;
            head = (int64_t)i;
        }
    tree_head(&e, r, bname, main_only, root);
    emit_children(&e, head, (uint32_t)max_depth);
    tree_tail(&e);
    emit_free(&e, r);
    bl_req_buf_free(r, &t.nodes);
    if (!o.e && !root)
        bl_tree_keep_put(r, build_id, main_only, max_depth, limit, fmt, gen, o.b.data, o.b.len);
    return bl_out_reply_as(c, h, &o, tree_type(fmt));
}

