/*
 * store_read_dump — prints what the store's read path answers for one app,
 * over a fixed matrix of queries, as text: the same store contents on
 * SQLite and on PostgreSQL must print the same bytes (issue 19; used by
 * tests/integration/pg_read_test.sh, which diffs the two).
 *
 *   store_read_dump STORE APP_ID [SECONDS...]
 *   store_read_dump --migrate STORE     (opens it writable: schema applied)
 *   store_read_dump --all-builds STORE APP_ID [SECONDS...]
 *       (slow methods of all builds only: for large stores)
 *
 * STORE: a SQLite path or a postgresql:// URL (bl_db_open, read-only).
 * SECONDS: times (s since the epoch) that bound the since/until ranges
 * tried besides "everything": every ordered pair (since < until) and each
 * alone as since, and as until.
 *
 * Printed, for the app's builds (bl_builds_list) and "all builds", thread
 * main/all, every range, every sort and the limits 1, 3, 50 and none:
 * bl_slow_methods (rollups) and bl_slow_methods_scan (the reference) row by
 * row with every figure; for each build and thread kind: bl_calltree_nodes
 * without a root and rooted at each of the build's first methods (by id),
 * bl_calltree_children of every node (sorted: their order is unspecified),
 * bl_calltree_has_children, and the names of every method seen.
 * Exit status: 0, or 1 when a call failed (its error is printed too).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/builds.h"
#include "store/calltree_query.h"
#include "store/db.h"
#include "store/slow_methods.h"

static int failed;

static void check(bl_err e, bl_db *db, const char *what)
{
    if (e && e != BL_ENOTFOUND) {
        printf("ERROR %s: %d %s\n", what, (int)e, bl_db_errmsg(db));
        failed = 1;
    }
}

static int slow_row(const bl_slow_row *r, void *ctx)
{
    (void)ctx;
    printf("  %s|%s|%s|%s count=%" PRId64 " total=%" PRId64 " self=%" PRId64 " p50=%" PRIu64
           " p90=%" PRIu64 " p99=%" PRIu64 " max=%" PRIu64 "\n",
           r->cls ? r->cls : "(null)", r->name ? r->name : "(null)",
           r->descriptor ? r->descriptor : "(null)", r->source_file ? r->source_file : "(null)",
           r->count, r->total_us, r->self_us, r->p50_us, r->p90_us, r->p99_us, r->max_us);
    return 0;
}

/* the builds' names and ids */
typedef struct names {
    char **v;
    size_t n;
} names;

static int build_cb(const bl_build_row *b, void *ctx)
{
    names *x = ctx;
    char **v = realloc(x->v, (x->n + 1) * sizeof *v);
    if (!v)
        return 1;
    x->v = v;
    if (!(x->v[x->n] = strdup(b->name)))
        return 1;
    x->n++;
    return 0;
}

/* nodes of a listing, kept for their children */
typedef struct nodes {
    bl_calltree_node *v;
    size_t n, cap;
} nodes;

static int node_keep(const bl_calltree_node *n, void *ctx)
{
    nodes *x = ctx;
    if (x->n == x->cap) {
        size_t c = x->cap ? 2 * x->cap : 256;
        bl_calltree_node *v = realloc(x->v, c * sizeof *v);
        if (!v)
            return 1;
        x->v = v;
        x->cap = c;
    }
    x->v[x->n++] = *n;
    return 0;
}

static int cmp_node(const void *a, const void *b)
{
    const bl_calltree_node *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void print_node(const char *tag, const bl_calltree_node *n)
{
    printf("  %s id=%" PRId64 " parent=%" PRId64 " method=%" PRId64 " count=%" PRId64
           " total=%" PRId64 " self=%" PRId64 " root=%d\n",
           tag, n->id, n->parent, n->method, n->count, n->total_us, n->self_us, n->is_root);
}

typedef struct root3 {
    char cls[512], name[512], desc[512];
} root3;

static void names_cb(const bl_method_names *m, void *ctx)
{
    root3 *r = ctx;
    snprintf(r->cls, sizeof r->cls, "%s", m->cls);
    snprintf(r->name, sizeof r->name, "%s", m->name);
    snprintf(r->desc, sizeof r->desc, "%s", m->descriptor);
    printf("  method %s|%s|%s|%s\n", m->cls, m->name, m->descriptor, m->source_file);
}

static void dump_tree(bl_db *db, int64_t build_id, int main_only)
{
    bl_calltree_query q = { build_id, main_only, NULL, NULL, NULL };
    nodes all = { NULL, 0, 0 };
    printf("tree build_id=%" PRId64 " main_only=%d\n", build_id, main_only);
    check(bl_calltree_nodes(db, &q, node_keep, &all), db, "nodes");
    for (size_t i = 0; i < all.n; i++)
        print_node("node", &all.v[i]);
    /* children of the roots' parent and of every node, each list sorted */
    for (size_t i = 0; i <= all.n; i++) {
        int64_t parent = i < all.n ? all.v[i].id : 0;
        for (int kind = 0; kind < 2; kind++) {
            nodes ch = { NULL, 0, 0 };
            int has = -1;
            check(bl_calltree_children(db, build_id, kind, parent, node_keep, &ch), db,
                  "children");
            check(bl_calltree_has_children(db, build_id, kind, parent, &has), db, "has");
            if (ch.n)
                qsort(ch.v, ch.n, sizeof *ch.v, cmp_node);
            printf(" children of %" PRId64 " kind %d (has %d): %zu\n", parent, kind, has, ch.n);
            for (size_t k = 0; k < ch.n; k++)
                print_node("child", &ch.v[k]);
            free(ch.v);
        }
    }
    /* rooted at the first methods seen (by node id), with and without the
     * descriptor; every method's names */
    int64_t seen[6];
    int n_seen = 0;
    for (size_t i = 0; i < all.n && n_seen < 6; i++) {
        int dup = 0;
        for (int k = 0; k < n_seen; k++)
            dup |= seen[k] == all.v[i].method;
        if (!dup)
            seen[n_seen++] = all.v[i].method;
    }
    for (int k = 0; k < n_seen; k++) {
        root3 r = { "", "", "" };
        printf(" root method %" PRId64 "\n", seen[k]);
        check(bl_calltree_method(db, seen[k], names_cb, &r), db, "method");
        for (int with_desc = 0; with_desc < 2; with_desc++) {
            bl_calltree_query rq = { build_id, main_only, r.cls, r.name,
                                     with_desc ? r.desc : NULL };
            nodes rn = { NULL, 0, 0 };
            check(bl_calltree_nodes(db, &rq, node_keep, &rn), db, "rooted nodes");
            printf(" rooted (descriptor %d): %zu nodes\n", with_desc, rn.n);
            for (size_t i = 0; i < rn.n; i++)
                if (rn.v[i].is_root)
                    print_node("is_root", &rn.v[i]);
            free(rn.v);
        }
    }
    for (size_t i = 0; i < all.n; i++) {
        root3 r;
        check(bl_calltree_method(db, all.v[i].method, names_cb, &r), db, "method");
    }
    printf(" unknown method: %d\n", (int)bl_calltree_method(db, INT64_MAX, names_cb, NULL));
    free(all.v);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s STORE APP_ID [SECONDS...]\n", argv[0]);
        return 2;
    }
    char err[512];
    bl_db *db;
    if (!strcmp(argv[1], "--migrate")) {
        if (bl_db_open(argv[2], 0, &db, err, sizeof err) != BL_OK) {
            fprintf(stderr, "store_read_dump: %s\n", err);
            return 1;
        }
        bl_db_close(db);
        return 0;
    }
    int all_only = !strcmp(argv[1], "--all-builds");
    if (all_only) {
        argv++;
        argc--;
    }
    if (bl_db_open(argv[1], 1, &db, err, sizeof err) != BL_OK) {
        fprintf(stderr, "store_read_dump: %s\n", err);
        return 1;
    }
    int64_t app = strtoll(argv[2], NULL, 10);
    /* ranges: everything, then from the times given */
    int nt = argc - 3;
    size_t nr = 1 + 2 * (size_t)nt + (size_t)nt * (size_t)nt;
    int64_t(*rg)[2] = malloc(nr * sizeof *rg);
    if (!rg)
        return 1;
    size_t k = 0;
    rg[k][0] = 0;
    rg[k++][1] = INT64_MAX;
    for (int i = 0; i < nt; i++) {
        int64_t a = strtoll(argv[3 + i], NULL, 10) * 1000000;
        rg[k][0] = a;
        rg[k++][1] = INT64_MAX;
        rg[k][0] = 0;
        rg[k++][1] = a;
        for (int j = 0; j < nt; j++) {
            int64_t b = strtoll(argv[3 + j], NULL, 10) * 1000000;
            if (a < b) {
                rg[k][0] = a;
                rg[k++][1] = b;
            }
        }
    }
    nr = k;
    names b = { NULL, 0 };
    if (!all_only)
        check(bl_builds_list(db, app, build_cb, &b), db, "builds");
    static const int64_t limits[] = { 1, 3, 50, -1 };
    for (size_t bi = 0; bi <= b.n; bi++) {
        const char *build = bi < b.n ? b.v[bi] : NULL;
        for (int main_only = 0; main_only < 2; main_only++)
            for (size_t ri = 0; ri < nr; ri++)
                for (int sort = 0; sort < BL_SLOW_SORTS; sort++)
                    for (size_t li = 0; li < sizeof limits / sizeof *limits; li++)
                        for (int scan = 0; scan < 2; scan++) {
                            bl_slow_query q = { app,          build, main_only,
                                                rg[ri][0],    rg[ri][1], (bl_slow_sort)sort,
                                                limits[li] };
                            printf("slow build=%s main_only=%d since=%" PRId64
                                   " until=%" PRId64 " sort=%d limit=%" PRId64 " %s\n",
                                   build ? build : "(all)", main_only, q.since_us, q.until_us,
                                   sort, q.limit, scan ? "scan" : "fast");
                            check(bl_db_read_begin(db), db, "read_begin");
                            check(scan ? bl_slow_methods_scan(db, &q, slow_row, NULL)
                                       : bl_slow_methods(db, &q, slow_row, NULL),
                                  db, "slow");
                            bl_db_read_end(db);
                        }
        if (build) {
            int64_t id;
            char nm[256];
            check(bl_builds_pick(db, app, build, &id, nm, sizeof nm), db, "pick");
            for (int main_only = 0; main_only < 2; main_only++)
                dump_tree(db, id, main_only);
        }
    }
    for (size_t i = 0; i < b.n; i++)
        free(b.v[i]);
    free(b.v);
    free(rg);
    bl_db_close(db);
    return failed;
}
