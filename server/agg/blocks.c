/*
 * blocks.c — block call trees and signatures (see blocks.h).
 */
#include "agg/blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

void bl_block_tree_init(bl_block_tree *bt)
{
    memset(bt, 0, sizeof *bt);
    bl_u128map_init(&bt->ix);
}

void bl_block_tree_cleanup(bl_block_tree *bt)
{
    free(bt->nodes);
    free(bt->order);
    free(bt->node_of);
    bl_u128map_cleanup(&bt->ix);
    memset(bt, 0, sizeof *bt);
}

/* A call that may belong to a window: not one whose enter was lost. A
 * carried call belongs to a window when its (original) enter time is in it:
 * the message began before the previous segment ended (a full-mode dump in
 * the middle of a stall); carried calls entered before begin_us were open
 * when the message began and are left out by their time, as all others. */
static int eligible(const bl_call *c)
{
    return !(c->flags & BL_CALL_SYNTH_ENTER);
}

static _Thread_local const bl_call *sort_calls; /* qsort has no context argument */

static int cmp_start(const void *a, const void *b)
{
    const bl_call *x = &sort_calls[*(const uint32_t *)a], *y = &sort_calls[*(const uint32_t *)b];
    if (x->start_us != y->start_us)
        return x->start_us < y->start_us ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

bl_err bl_block_index(bl_block_tree *bt, const bl_calltree *t)
{
    bt->indexed = NULL;
    if (t->n_calls > bt->cap_order) {
        uint32_t *o = realloc(bt->order, (size_t)t->n_calls * sizeof *o);
        if (!o)
            return BL_ENOMEM;
        bt->order = o;
        bt->cap_order = t->n_calls;
    }
    if (t->n_calls > bt->cap_node_of) {
        uint32_t *o = realloc(bt->node_of, (size_t)t->n_calls * sizeof *o);
        if (!o)
            return BL_ENOMEM;
        bt->node_of = o;
        bt->cap_node_of = t->n_calls;
    }
    bt->n_order = 0;
    for (uint32_t i = 0; i < t->n_calls; i++)
        if (eligible(&t->calls[i]))
            bt->order[bt->n_order++] = i;
    sort_calls = t->calls;
    qsort(bt->order, bt->n_order, sizeof *bt->order, cmp_start);
    bt->indexed = t;
    return BL_OK;
}

/* The node (parent, mid), created when new. BL_BLOCK_NONE: out of memory. */
static uint32_t node_get(bl_block_tree *bt, uint32_t parent, uint32_t mid)
{
    uint64_t *v;
    int ins;
    if (bt->n_nodes == UINT32_MAX - 1 ||
        bl_u128map_put(&bt->ix, (uint64_t)parent + 1, mid, bt->n_nodes, &v, &ins))
        return BL_BLOCK_NONE;
    if (!ins)
        return (uint32_t)*v;
    if (bt->n_nodes == bt->cap_nodes) {
        uint32_t nc = bt->cap_nodes ? bt->cap_nodes * 2 : 64;
        bl_block_node *nn = realloc(bt->nodes, (size_t)nc * sizeof *nn);
        if (!nn)
            return BL_BLOCK_NONE; /* the map entry dangles: the window fails and is reset */
        bt->nodes = nn;
        bt->cap_nodes = nc;
    }
    bl_block_node *n = &bt->nodes[bt->n_nodes];
    memset(n, 0, sizeof *n);
    n->method_id = mid;
    n->parent = parent;
    n->heavy = BL_BLOCK_NONE;
    return bt->n_nodes++;
}

static void reset_window(bl_block_tree *bt)
{
    bt->n_nodes = 0;
    bt->n_calls = 0;
    bt->path_len = 0;
    bl_u128map_clear(&bt->ix);
}

bl_err bl_block_window(bl_block_tree *bt, uint64_t begin_us, uint64_t end_us,
                       uint64_t max_calls)
{
    reset_window(bt);
    const bl_calltree *t = bt->indexed;
    if (!t || begin_us > end_us)
        return BL_EINVAL;
    const bl_call *calls = t->calls;
    /* first eligible call entered at or after begin_us */
    uint32_t lo = 0, hi = bt->n_order;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (calls[bt->order[mid]].start_us < begin_us)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* parents come before their children in this order (a parent enters no
     * later than its child, and is shallower) */
    for (uint32_t k = lo; k < bt->n_order; k++) {
        uint32_t i = bt->order[k];
        const bl_call *c = &calls[i];
        if (c->start_us > end_us)
            break;
        uint32_t pnode = BL_BLOCK_NONE;
        if (c->parent != BL_CALL_ROOT) {
            const bl_call *p = &calls[c->parent];
            if (eligible(p) && p->start_us >= begin_us)
                pnode = bt->node_of[c->parent]; /* BL_BLOCK_NONE when p was left out */
        }
        /* The neighbouring messages share the window's edge µs: the previous
         * message's last calls can be entered (and closed) in begin_us, the
         * next message's first calls entered in end_us. A call that would be a
         * root of the window is theirs when it lies wholly in begin_us, or
         * enters in end_us (a message's own calls there are nested in it). */
        if (pnode == BL_BLOCK_NONE && begin_us < end_us &&
            ((c->start_us == begin_us && c->end_us == begin_us) || c->start_us == end_us)) {
            bt->node_of[i] = BL_BLOCK_NONE;
            continue;
        }
        if (++bt->n_calls > max_calls) {
            reset_window(bt);
            return BL_ETOOBIG;
        }
        uint32_t n = node_get(bt, pnode, c->method_id);
        if (n == BL_BLOCK_NONE) {
            reset_window(bt);
            return BL_ENOMEM;
        }
        bt->node_of[i] = n;
        bl_block_node *x = &bt->nodes[n];
        x->count++;
        x->total += c->end_us - c->start_us;
        x->self += c->self_us;
    }
    /* heaviest child of every node, and the heaviest root */
    uint32_t root = BL_BLOCK_NONE;
    for (uint32_t j = 0; j < bt->n_nodes; j++) {
        bl_block_node *x = &bt->nodes[j];
        uint32_t *best = x->parent == BL_BLOCK_NONE ? &root : &bt->nodes[x->parent].heavy;
        if (*best == BL_BLOCK_NONE || x->total > bt->nodes[*best].total)
            *best = j;
    }
    for (uint32_t n = root; n != BL_BLOCK_NONE && bt->path_len < BL_BLOCK_PATH_MAX;) {
        bt->path[bt->path_len++] = n;
        uint32_t h = bt->nodes[n].heavy;
        if (h == BL_BLOCK_NONE || !(bt->nodes[h].total > bt->nodes[n].total - bt->nodes[h].total))
            break; /* the heaviest child holds half or less: the time spreads out here */
        n = h;
    }
    return BL_OK;
}

void bl_block_sig_reset(bl_buf *acc)
{
    bl_buf_reset(acc);
}

bl_err bl_block_sig_add(bl_buf *acc, const char *cls, const char *name, const char *descriptor)
{
    bl_err e = bl_buf_append(acc, cls, strlen(cls) + 1);
    if (!e)
        e = bl_buf_append(acc, name, strlen(name) + 1);
    if (!e)
        e = bl_buf_append(acc, descriptor, strlen(descriptor) + 1);
    return e;
}

void bl_block_sig_text(const bl_buf *acc, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(acc->len ? acc->data : "", acc->len);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}
