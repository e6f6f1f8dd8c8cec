/*
 * bench_ctree_fill — fills one build of a Beatline data directory with a
 * large stored call tree, through the store's writer API (store/writer.h),
 * for timing GET /v1/apps/{app}/call-tree (bench/server-bench.sh, section
 * "call-tree query").
 *
 *   bench_ctree_fill DATA_DIR APP BUILD [NODES [SEED]]
 *
 * APP must exist (beatline-server app create); BUILD is created. NODES
 * (default 1,000,000) distinct call paths are stored, in the shape of
 * sampled executions: 5,000 methods, each with its own callee list (most
 * 2-6 callees, a quarter 8-30, one in twenty a dispatcher with 50-300);
 * stacks are walked from a root, picking callees with a skew towards the
 * first ones of the list, stopping with probability 1/15 per level (mean
 * depth 15, about 1 % of walks deeper than 64, the deepest past 150). 60 %
 * of walks are on the main thread (3 roots), 40 % on other threads (40
 * roots, one of them shared with the main thread so thread=all merges
 * paths). Node ids are given in discovery order, as the writer does, so a
 * node's children are spread over the id range. Each visit adds one call
 * and 0-49 µs of self time to every node of the walk.
 *
 * Prints the node counts (main, other), the deepest level and the widest
 * node's children. Not run by ctest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/u128map.h"
#include "pipeline/datadir.h"
#include "store/apps.h"
#include "store/db.h"
#include "store/writer.h"

#define N_METHODS 5000
#define MAX_WALK 400

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t below)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % below);
}

typedef struct node {
    int64_t parent; /* index + 1, 0: root */
    int32_t method; /* methodId */
    int32_t main;
    int64_t count, total, self;
    uint32_t kids;
} node;

static struct {
    uint32_t *callee[N_METHODS];
    uint32_t n_callee[N_METHODS];
} g;

static int64_t rows[N_METHODS];
static node *nodes;
static size_t n_nodes;
static int64_t first_id, build_id;

static bl_err method_row(int64_t method_id, int64_t row, int placeholder, void *ctx)
{
    (void)placeholder;
    (void)ctx;
    if (method_id >= 0 && method_id < N_METHODS)
        rows[method_id] = row;
    return BL_OK;
}

static void node_row(void *ctx, size_t i, bl_wr_node *out)
{
    size_t base = *(size_t *)ctx;
    const node *x = &nodes[base + i];
    out->id = first_id + (int64_t)(base + i);
    out->build_id = build_id;
    out->main = x->main;
    out->parent = x->parent ? first_id + x->parent - 1 : 0;
    out->method = rows[x->method];
    out->count = x->count;
    out->total_us = x->total;
    out->self_us = x->self;
}

static int die(const char *what, bl_db *db)
{
    fprintf(stderr, "bench_ctree_fill: %s: %s\n", what, db ? bl_db_errmsg(db) : "failed");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_ctree_fill DATA_DIR APP BUILD [NODES [SEED]]\n");
        return 2;
    }
    size_t want = argc > 4 ? (size_t)strtoull(argv[4], NULL, 10) : 1000000;
    if (argc > 5)
        rng ^= strtoull(argv[5], NULL, 10) * 0xBF58476D1CE4E5B9ull;
    if (want == 0 || want > 2000000) {
        fprintf(stderr, "bench_ctree_fill: NODES must be 1..2000000\n");
        return 2;
    }
    /* callee lists */
    for (uint32_t m = 0; m < N_METHODS; m++) {
        uint32_t r = rnd(100), k;
        k = r < 70 ? 2 + rnd(5) : r < 95 ? 8 + rnd(23) : 50 + rnd(251);
        g.callee[m] = malloc(k * sizeof(uint32_t));
        if (!g.callee[m])
            return die("out of memory", NULL);
        g.n_callee[m] = k;
        for (uint32_t j = 0; j < k; j++)
            g.callee[m][j] = 50 + rnd(N_METHODS - 50); /* 0..49: roots only */
    }
    static const uint32_t main_roots[3] = { 0, 1, 2 };
    nodes = calloc(want, sizeof *nodes);
    if (!nodes)
        return die("out of memory", NULL);
    bl_u128map ix; /* (parent index + 1, main << 32 | method) -> index */
    bl_u128map_init(&ix);
    size_t path[MAX_WALK];
    uint32_t self[MAX_WALK];
    size_t deepest = 0, n_main = 0;
    while (n_nodes < want) {
        int main_thread = rnd(10) < 6;
        uint32_t m = main_thread ? main_roots[rnd(3)] : 2 + rnd(40); /* 2: shared */
        size_t d = 0;
        int64_t parent = 0;
        for (;;) {
            uint64_t *v;
            int ins;
            if (bl_u128map_put(&ix, (uint64_t)parent, (uint64_t)main_thread << 32 | m, n_nodes,
                               &v, &ins))
                return die("out of memory", NULL);
            if (ins) {
                node *x = &nodes[n_nodes++];
                x->parent = parent;
                x->method = (int32_t)m;
                x->main = main_thread;
                n_main += (size_t)main_thread;
                if (parent)
                    nodes[parent - 1].kids++;
            }
            path[d] = (size_t)*v;
            self[d] = rnd(50);
            d++;
            if (n_nodes == want || d == MAX_WALK || (d > 1 && rnd(15) == 0))
                break;
            parent = (int64_t)path[d - 1] + 1;
            /* skewed pick: u^3 favours the first callees */
            double u = (double)rnd(1u << 20) / (double)(1u << 20);
            m = g.callee[m][(uint32_t)(u * u * u * g.n_callee[m])];
        }
        if (d > deepest)
            deepest = d;
        uint64_t acc = 0;
        for (size_t i = d; i-- > 0;) {
            node *x = &nodes[path[i]];
            acc += self[i];
            x->count++;
            x->self += self[i];
            x->total += acc;
        }
    }
    bl_u128map_cleanup(&ix);
    uint32_t widest = 0;
    for (size_t i = 0; i < n_nodes; i++)
        if (nodes[i].kids > widest)
            widest = nodes[i].kids;

    char dbp[4096], err[512];
    bl_db *db;
    if (bl_datadir_db(argv[1], dbp) || bl_db_open(dbp, 0, &db, err, sizeof err)) {
        fprintf(stderr, "bench_ctree_fill: %s: cannot open the database\n", argv[1]);
        return 1;
    }
    int64_t app_id;
    if (bl_apps_find(db, argv[2], &app_id))
        return die("no such app", db);
    if (bl_db_begin(db) || bl_wr_build_get(db, app_id, argv[3], bl_now_us(), &build_id) ||
        bl_wr_build_count_batch(db, build_id, 1))
        return die("build", db);
    for (uint32_t m = 0; m < N_METHODS; m++) {
        char cls[64], name[32], src[32];
        snprintf(cls, sizeof cls, "com.example.app.p%u.C%u", m % 37, m % 611);
        snprintf(name, sizeof name, "m%u", m);
        snprintf(src, sizeof src, "C%u.java", m % 611);
        if (bl_wr_method_put(db, build_id, m, cls, name, m % 3 ? "()V" : "(I)Ljava/lang/String;",
                             src))
            return die("methods", db);
    }
    if (bl_wr_methods_each(db, build_id, method_row, NULL) || bl_wr_next_node_id(db, &first_id) ||
        bl_db_commit(db))
        return die("methods", db);
    for (size_t base = 0; base < n_nodes; base += 100000) {
        size_t n = n_nodes - base < 100000 ? n_nodes - base : 100000;
        if (bl_db_begin(db) || bl_wr_nodes_add(db, n, node_row, &base) || bl_db_commit(db))
            return die("nodes", db);
    }
    bl_db_close(db);
    printf("build %s: %zu call-tree nodes (%zu main, %zu other), deepest %zu levels, "
           "widest node %u children\n",
           argv[3], n_nodes, n_main, n_nodes - n_main, deepest, widest);
    free(nodes);
    for (uint32_t m = 0; m < N_METHODS; m++)
        free(g.callee[m]);
    return 0;
}
