/*
 * aggregate.c — calls to aggregate deltas (see aggregate.h).
 *
 * Hot path. Per call: one array lookup for the method row, a cached slot for
 * the (method, main, hour) stat delta (the hour rarely changes inside a
 * batch: the cache is keyed by methodId × main and checked against the
 * hour and the delta generation, so most calls skip the hash map), one hash
 * lookup for the call-path node, one sketch add.
 */
#include "pipeline/aggregate.h"

#include <stdlib.h>
#include <string.h>

void bl_agg_init(bl_agg *a, int64_t next_node, uint32_t max_nodes, bl_agg_new_row_fn fn,
                 void *ctx)
{
    memset(a, 0, sizeof *a);
    bl_u128map_init(&a->stat_ix);
    bl_u128map_init(&a->node_ix);
    bl_calltree_init(&a->tree);
    a->gen = 1;
    a->next_node = next_node;
    a->max_nodes = max_nodes;
    a->new_row = fn;
    a->new_row_ctx = ctx;
}

void bl_agg_clear(bl_agg *a)
{
    for (size_t i = 0; i < a->n_stats; i++)
        bl_sketch_cleanup(&a->stats[i].sk);
    a->n_stats = 0;
    a->n_nodes = 0;
    bl_u128map_clear(&a->stat_ix);
    bl_u128map_clear(&a->node_ix);
    a->gen++;
}

void bl_agg_cleanup(bl_agg *a)
{
    bl_agg_clear(a);
    free(a->stats);
    free(a->nodes);
    bl_u128map_cleanup(&a->stat_ix);
    bl_u128map_cleanup(&a->node_ix);
    bl_calltree_cleanup(&a->tree);
    free(a->node_of);
}

void bl_agg_build_init(bl_agg_build *b, int64_t build_id)
{
    memset(b, 0, sizeof *b);
    b->build_id = build_id;
    bl_u128map_init(&b->nodes);
}

void bl_agg_build_cleanup(bl_agg_build *b)
{
    free(b->rows);
    free(b->slot_gen);
    free(b->slot_idx);
    bl_u128map_cleanup(&b->nodes);
    memset(b, 0, sizeof *b);
}

static bl_err grow_rows(bl_agg_build *b, uint32_t mid)
{
    if (mid < b->n_rows)
        return BL_OK;
    uint32_t n = b->n_rows ? b->n_rows : 64;
    while (n <= mid)
        n = n > UINT32_MAX / 2 ? mid + 1 : n * 2;
    int64_t *r = realloc(b->rows, (size_t)n * sizeof *r);
    if (!r)
        return BL_ENOMEM;
    memset(r + b->n_rows, 0, (size_t)(n - b->n_rows) * sizeof *r);
    b->rows = r;
    b->n_rows = n;
    uint64_t *g = realloc(b->slot_gen, (size_t)n * 2 * sizeof *g);
    if (!g)
        return BL_ENOMEM;
    b->slot_gen = g;
    uint32_t *ix = realloc(b->slot_idx, (size_t)n * 2 * sizeof *ix);
    if (!ix)
        return BL_ENOMEM;
    b->slot_idx = ix;
    memset(g + (size_t)b->n_slots, 0, ((size_t)n * 2 - b->n_slots) * sizeof *g);
    b->n_slots = n * 2;
    return BL_OK;
}

bl_err bl_agg_build_set_row(bl_agg_build *b, uint32_t mid, int64_t row)
{
    bl_err e = grow_rows(b, mid);
    if (e)
        return e;
    b->rows[mid] = row;
    return BL_OK;
}

bl_err bl_agg_build_add_node(bl_agg_build *b, int64_t id, int64_t parent, int main, int64_t row)
{
    uint64_t *v;
    int ins;
    bl_err e = bl_u128map_put(&b->nodes, (uint64_t)parent << 1 | (uint64_t)(main != 0),
                              (uint64_t)row, (uint64_t)id, &v, &ins);
    if (!e && ins)
        b->n_nodes[main != 0]++;
    return e;
}

static bl_err stat_slot(bl_agg *a, bl_agg_build *b, uint32_t mid, int64_t row, int main,
                        int64_t hour, bl_agg_stat **out)
{
    size_t k = (size_t)mid * 2 + (size_t)main;
    if (b->slot_gen[k] == a->gen) {
        bl_agg_stat *s = &a->stats[b->slot_idx[k]];
        if (s->hour == hour) {
            *out = s;
            return BL_OK;
        }
    }
    uint64_t *v;
    int ins;
    bl_err e = bl_u128map_put(&a->stat_ix, (uint64_t)row << 1 | (uint64_t)main, (uint64_t)hour,
                              a->n_stats, &v, &ins);
    if (e)
        return e;
    if (ins) {
        if (a->n_stats == a->cap_stats) {
            size_t nc = a->cap_stats ? a->cap_stats * 2 : 256;
            bl_agg_stat *ns = realloc(a->stats, nc * sizeof *ns);
            if (!ns)
                return BL_ENOMEM;
            a->stats = ns;
            a->cap_stats = nc;
        }
        bl_agg_stat *s = &a->stats[a->n_stats++];
        memset(s, 0, sizeof *s);
        s->build_id = b->build_id;
        s->method = row;
        s->main = main;
        s->hour = hour;
        bl_sketch_init(&s->sk);
    }
    b->slot_gen[k] = a->gen;
    b->slot_idx[k] = (uint32_t)*v;
    *out = &a->stats[*v];
    return BL_OK;
}

/* Node id of (parent, main, row), allocating it; 0 past the node cap. */
static bl_err node_id(bl_agg *a, bl_agg_build *b, int64_t parent, int main, int64_t row,
                      bl_agg_node **out)
{
    uint64_t key = (uint64_t)parent << 1 | (uint64_t)main;
    uint64_t *v = bl_u128map_get(&b->nodes, key, (uint64_t)row);
    *out = NULL;
    if (!v) {
        if (b->n_nodes[main] >= a->max_nodes) {
            a->dropped_nodes++;
            return BL_OK;
        }
        int ins;
        bl_err e = bl_u128map_put(&b->nodes, key, (uint64_t)row, (uint64_t)a->next_node, &v, &ins);
        if (e)
            return e;
        a->next_node++;
        b->n_nodes[main]++;
    }
    int64_t id = (int64_t)*v;
    uint64_t *ix;
    int ins;
    bl_err e = bl_u128map_put(&a->node_ix, (uint64_t)id, 0, a->n_nodes, &ix, &ins);
    if (e)
        return e;
    if (ins) {
        if (a->n_nodes == a->cap_nodes) {
            size_t nc = a->cap_nodes ? a->cap_nodes * 2 : 256;
            bl_agg_node *nn = realloc(a->nodes, nc * sizeof *nn);
            if (!nn)
                return BL_ENOMEM;
            a->nodes = nn;
            a->cap_nodes = nc;
        }
        bl_agg_node *d = &a->nodes[a->n_nodes++];
        memset(d, 0, sizeof *d);
        d->id = id;
        d->build_id = b->build_id;
        d->parent = parent;
        d->method = row;
        d->main = main;
    }
    *out = &a->nodes[*ix];
    return BL_OK;
}

bl_err bl_agg_thread(bl_agg *a, bl_agg_build *b, const bl_batch_thread *th, int64_t origin)
{
    bl_err err = bl_calltree_build(&a->tree, th->records, th->n_records, th->truncated);
    if (err)
        return err;
    a->malformed += a->tree.malformed;
    uint32_t n = a->tree.n_calls;
    if (n > a->cap_node_of) {
        int64_t *no = realloc(a->node_of, (size_t)n * sizeof *no);
        if (!no)
            return BL_ENOMEM;
        a->node_of = no;
        a->cap_node_of = n;
    }
    int main = th->main != 0;
    /* calls are in exit order (children first): walk backwards so that a
     * parent's node exists before its children's */
    for (uint32_t k = n; k-- > 0;) {
        const bl_call *c = &a->tree.calls[k];
        uint32_t mid = c->method_id;
        if (mid >= b->n_rows && (err = grow_rows(b, mid)))
            return err;
        int64_t row = b->rows[mid];
        if (!row) {
            if (!a->new_row || (err = a->new_row(a->new_row_ctx, b, mid, &row)))
                return err ? err : BL_EINVAL;
            b->rows[mid] = row;
        }
        uint64_t incl = c->end_us - c->start_us;
        int64_t t = origin + (int64_t)c->start_us;
        int64_t hour = t - t % BL_HOUR_US;
        bl_agg_stat *s;
        if ((err = stat_slot(a, b, mid, row, main, hour, &s)))
            return err;
        s->count++;
        s->total += incl;
        s->self += c->self_us;
        if (incl > s->max)
            s->max = incl;
        if ((err = bl_sketch_add(&s->sk, incl, 1)))
            return err;
        int64_t parent = c->parent == BL_CALL_ROOT ? 0 : a->node_of[c->parent];
        int64_t node = 0;
        if (c->parent == BL_CALL_ROOT || parent != 0) {
            bl_agg_node *d;
            if ((err = node_id(a, b, parent, main, row, &d)))
                return err;
            if (d) {
                node = d->id;
                d->count++;
                d->total += incl;
                d->self += c->self_us;
            }
        }
        a->node_of[k] = node;
    }
    return BL_OK;
}
