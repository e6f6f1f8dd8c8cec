/* fuzz_aggregate — differential: a batch's partial aggregate made in one
 * pass over its records (bl_agg_part_records) against the call trees.
 *
 * The bytes are a small program that builds decoded batches (bl_batch as
 * bl_batch_decode leaves it: carried records are enters, since_us only with
 * carried ones, times below 2^40) of 0..5 threads each, with well-formed
 * calls and odd things: exits without enters, exits of another method,
 * timestamps going back, huge and zero durations, deep nesting (up to past
 * BL_CALLTREE_MAX_DEPTH), long loops, methodIds near the caps (0, the far
 * cap, BL_REC_ID_MAX). Every batch is aggregated three ways, each side with
 * its own aggregator and build (as aggregate_test's merge_equals_tree):
 *   x: bl_agg_tree on each thread's tree (the reference);
 *   y: bl_agg_part_build from the trees, merged (bl_agg_tree when not usable);
 *   z: as prep.c and the writer: bl_agg_part_records, or when it refuses
 *      (BL_EFORMAT, and then p->ok must be 0) bl_agg_part_build into the
 *      same storage; merged, or bl_agg_thread when not usable.
 * When the one pass takes a batch its partial must equal the trees' one
 * field by field; after each flush the three sides must hold the same
 * stats (key, count, total, self, max, sketch bytes) in stored order, the
 * same node deltas, rows made in the same order, and the same malformed,
 * unknown_records and dropped_nodes counts. Any difference: abort().
 *
 * Input:
 *   byte: setup — bits 0-1 id_cap (0, 1: 40; 2: 1024; 3: none, and then
 *         methodIds taken mod 2^16: the build's per-methodId arrays stay
 *         small), bits 2-3 node cap (0, 3: 10^6; 1: 60; 2: 5), bit 4 far
 *         rows prefilled to BL_AGG_MAX_FAR - 16 + byte % 16 (with a cap),
 *         bits 5-7 origin (0: 1.5 s before an hour; 1: BL_AGG_ORIGIN_MIN;
 *         2: BL_AGG_ORIGIN_MAX; 3: outside the range; else MIN + 6 bytes,
 *         in range)
 *   then up to 3 batches, each: byte — bits 0-2 threads (mod 6), bit 3 flush
 *   after it; per thread: byte — bit 0 main, 1 truncated, 2 continues,
 *   3 carried enters (n from the next byte), then ops to op 12 or the end:
 *     op & 15 0-3  enter; methodId class (op & 3) << 2 | op >> 6, time step
 *                  class (op >> 4) & 3: 0, 1 + byte, 2 bytes, 5 bytes
 *             4-6  exit of the open call (of a class-0 method when none is)
 *             7    exit of a methodId of class byte & 15
 *             8    time back by 1 + byte
 *             9    time forward by 5 bytes
 *             10   deep: 2 bytes n; n % 4096 enters (op bit 7: 65,536 +
 *                  n % 16 - 8), then (op bit 6) their exits
 *             11   loop: 2 bytes n, n % 4096 calls of a methodId of class op >> 4
 *             12   end of thread
 *             13-15 enter of a methodId of 3 bytes
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg/calltree.h"
#include "ingest/batch.h"
#include "pipeline/aggregate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_KNOWN 24u         /* methodIds 1..N_KNOWN have rows */
#define MAX_THREADS 5u
#define MAX_RECORDS (1u << 18) /* records of one input, all batches */

/* ---- the input ---- */

typedef struct rd {
    const uint8_t *p;
    size_t n, pos;
} rd;

static int more(const rd *r)
{
    return r->pos < r->n;
}

static uint32_t u8(rd *r)
{
    return r->pos < r->n ? r->p[r->pos++] : 0;
}

static uint64_t un(rd *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | u8(r);
    return v;
}

/* ---- one side: an aggregator, its build, the rows it made ---- */

typedef struct side {
    bl_agg a;
    bl_agg_build b;
    int64_t next_row;
    uint32_t *made; /* methodIds new_row was asked for, in order */
    size_t n_made, cap_made;
} side;

static bl_err new_row(void *ctx, bl_agg_build *b, uint32_t mid, int64_t *row)
{
    side *s = ctx;
    (void)b;
    if (s->n_made == s->cap_made) {
        size_t nc = s->cap_made ? 2 * s->cap_made : 64;
        uint32_t *m = realloc(s->made, nc * sizeof *m);
        if (!m)
            return BL_ENOMEM;
        s->made = m;
        s->cap_made = nc;
    }
    s->made[s->n_made++] = mid;
    *row = s->next_row++;
    return BL_OK;
}

static void must(int ok)
{
    if (!ok)
        abort();
}

static void side_init(side *s, uint32_t max_nodes, uint32_t id_cap, uint32_t prefill)
{
    memset(s, 0, sizeof *s);
    bl_agg_init(&s->a, 1, max_nodes, new_row, s);
    bl_agg_build_init(&s->b, 7);
    s->b.id_cap = id_cap;
    s->next_row = 100000;
    for (uint32_t m = 1; m <= N_KNOWN; m++)
        must(bl_agg_build_set_row(&s->b, m, 1000 + m, 0) == BL_OK);
    /* far methodIds the build has seen already (rows of their own), away
     * from those the ops make */
    for (uint32_t m = 0; m < prefill; m++)
        must(bl_agg_build_set_row(&s->b, id_cap + 100000 + m, 5000000 + m, 1) == BL_OK);
}

static void side_cleanup(side *s)
{
    bl_agg_cleanup(&s->a);
    bl_agg_build_cleanup(&s->b);
    free(s->made);
}

/* x and y (finished) hold the same deltas */
static void same(const side *x, const side *y)
{
    must(x->a.n_stats == y->a.n_stats);
    for (size_t i = 0; i < x->a.n_stats; i++) {
        const bl_agg_stat *p = &x->a.stats[x->a.stat_order[i]];
        const bl_agg_stat *q = &y->a.stats[y->a.stat_order[i]];
        must(p->build_id == q->build_id && p->method == q->method && p->hour == q->hour &&
             p->main == q->main);
        must(p->count == q->count && p->total == q->total && p->self == q->self &&
             p->max == q->max);
        must(p->blob_len == q->blob_len);
        must(p->blob_len == 0 || memcmp(x->a.blobs.data + p->blob_off,
                                        y->a.blobs.data + q->blob_off, p->blob_len) == 0);
    }
    must(x->a.n_nodes == y->a.n_nodes);
    for (size_t i = 0; i < x->a.n_nodes; i++) {
        const bl_agg_node *p = &x->a.nodes[i], *q = &y->a.nodes[i];
        if (i) /* B-tree order: by build, then id (one build here) */
            must(x->a.nodes[i - 1].id < p->id);
        must(p->id == q->id && p->build_id == q->build_id && p->parent == q->parent &&
             p->method == q->method && p->main == q->main && p->is_new == q->is_new);
        must(p->count == q->count && p->total == q->total && p->self == q->self);
    }
    must(x->a.malformed == y->a.malformed);
    must(x->a.unknown_records == y->a.unknown_records);
    must(x->a.dropped_nodes == y->a.dropped_nodes);
    must(x->a.next_node == y->a.next_node);
    must(x->n_made == y->n_made);
    for (size_t i = 0; i < x->n_made; i++)
        must(x->made[i] == y->made[i]);
}

/* Finishes the three sides, compares y and z with x, then marks their
 * nodes stored (committed) and clears them. */
static void flush(side *s)
{
    for (int i = 0; i < 3; i++)
        must(bl_agg_finish(&s[i].a) == BL_OK);
    same(&s[0], &s[1]);
    same(&s[0], &s[2]);
    for (int i = 0; i < 3; i++) {
        bl_agg_mark_stored(&s[i].a);
        bl_agg_clear(&s[i].a);
    }
}

/* The one pass's partial q equals the trees' p, field by field; the
 * buckets of each stat as a multiset (their order inside a stat's run does
 * not matter to a sketch). */
static void same_part(const bl_agg_part *p, const bl_agg_part *q)
{
    must(p->ok && q->ok);
    must(p->origin == q->origin && p->malformed == q->malformed &&
         p->max_mid == q->max_mid && p->n_calls == q->n_calls);
    must(p->n_st == q->n_st && p->n_vals == q->n_vals && p->n_path == q->n_path);
    for (size_t i = 0; i < p->n_st; i++) {
        const bl_agg_pstat *a = &p->st[i], *b = &q->st[i];
        must(a->key == b->key && a->count == b->count && a->total == b->total &&
             a->self == b->self && a->max == b->max);
        must(a->unknown_records == b->unknown_records && a->bk_off == b->bk_off);
    }
    static uint32_t h1[65536], h2[65536];
    for (size_t i = 0; i < p->n_st; i++) {
        uint64_t c = p->st[i].count;
        if (!c)
            continue;
        const uint16_t *x = p->bk + p->st[i].bk_off, *y = q->bk + q->st[i].bk_off;
        for (uint64_t k = 0; k < c; k++) {
            h1[x[k]]++;
            h2[y[k]]++;
        }
        for (uint64_t k = 0; k < c; k++)
            must(h1[x[k]] == h2[x[k]]);
        for (uint64_t k = 0; k < c; k++)
            h1[x[k]] = h2[y[k]] = 0;
    }
    for (size_t i = 0; i < p->n_path; i++) {
        const bl_agg_ppath *a = &p->path[i], *b = &q->path[i];
        must(a->parent1 == b->parent1 && a->key2 == b->key2 && a->n_threads == b->n_threads);
        must(a->count == b->count && a->total == b->total && a->self == b->self);
    }
}

/* ---- making records ---- */

typedef struct gen {
    rd *r;
    uint64_t *rec;     /* MAX_RECORDS, all batches */
    uint32_t n;        /* used */
    uint64_t t;        /* the next record's time (masked to 40 bits) */
    uint32_t *stack;   /* open methodIds, as the records have them */
    uint32_t depth, cap_depth;
    uint32_t fold;     /* methodIds kept under it (0: not) */
} gen;

static uint32_t mid_of(gen *g, uint32_t cls)
{
    switch (cls & 15) {
    case 0: case 1: case 2: case 3:
        return 1 + u8(g->r) % 8;                       /* hot known ones */
    case 4: case 5:
        return 1 + u8(g->r) % N_KNOWN;
    case 6:
        return N_KNOWN + 1 + u8(g->r) % 15;            /* unknown, under 40 */
    case 7: case 8:
        return 40 + u8(g->r);                          /* far (cap 40) */
    case 9:
        return 0;
    case 10:
        return 39 + u8(g->r) % 3;                      /* around cap 40 */
    case 11:
        return 1022 + u8(g->r) % 4;                    /* around cap 1024 */
    case 12:
        return BL_REC_ID_MAX - u8(g->r) % 4;
    case 13:
        return g->depth ? g->stack[g->depth - 1] : 1;  /* recursion */
    case 14:
        return (uint32_t)un(g->r, 2);
    default:
        return 1000 + u8(g->r);
    }
}

static uint64_t step_of(gen *g, uint32_t cls)
{
    switch (cls & 3) {
    case 0: return 0;
    case 1: return 1 + u8(g->r);
    case 2: return un(g->r, 2);
    default: return un(g->r, 5);
    }
}

static int put(gen *g, int is_exit, uint32_t mid)
{
    if (g->n >= MAX_RECORDS)
        return 0;
    if (g->fold)
        mid %= g->fold;
    g->rec[g->n++] = bl_rec_make(is_exit, mid, g->t);
    return 1;
}

static int enter(gen *g, uint32_t mid)
{
    if (g->depth == g->cap_depth) {
        uint32_t nc = g->cap_depth ? 2 * g->cap_depth : 256;
        uint32_t *s = realloc(g->stack, (size_t)nc * sizeof *s);
        if (!s)
            abort();
        g->stack = s;
        g->cap_depth = nc;
    }
    if (!put(g, 0, mid))
        return 0;
    g->stack[g->depth++] = bl_rec_method(g->rec[g->n - 1]);
    return 1;
}

static int leave(gen *g)
{
    uint32_t m = g->depth ? g->stack[g->depth - 1] : 1 + u8(g->r) % 8;
    if (!put(g, 1, m))
        return 0;
    if (g->depth)
        g->depth--;
    return 1;
}

/* One thread's records from the ops, into g->rec from g->n. */
static void gen_thread(gen *g, bl_batch_thread *th)
{
    rd *r = g->r;
    uint32_t flags = u8(r);
    uint32_t first = g->n;
    th->main = flags & 1;
    th->truncated = (flags >> 1) & 1;
    th->continues = (flags >> 2) & 1;
    uint32_t want_carried = (flags & 8) ? 1 + u8(r) % 4 : 0;
    g->depth = 0;
    g->t = un(r, 2);
    int room = 1;
    while (room && more(r)) {
        uint32_t op = u8(r);
        switch (op & 15) {
        case 0: case 1: case 2: case 3:
            g->t += step_of(g, op >> 4);
            room = enter(g, mid_of(g, (op & 3) << 2 | op >> 6));
            break;
        case 4: case 5: case 6:
            g->t += step_of(g, op >> 4);
            room = leave(g);
            break;
        case 7: {
            uint32_t m = mid_of(g, u8(r));
            g->t += step_of(g, op >> 4);
            room = put(g, 1, m);
            if (room && g->depth && g->stack[g->depth - 1] == bl_rec_method(g->rec[g->n - 1]))
                g->depth--;
            break;
        }
        case 8:
            g->t -= 1 + u8(r);
            break;
        case 9:
            g->t += un(r, 5);
            break;
        case 10: {
            uint32_t n = (uint32_t)un(r, 2) % 4096;
            if (op & 128)
                n = 65536 + n % 16 - 8;
            uint32_t d0 = g->depth;
            for (uint32_t k = 0; room && k < n; k++) {
                g->t += k % 3 == 0;
                room = enter(g, 1 + k % 7);
            }
            if (op & 64)
                while (room && g->depth > d0) {
                    g->t += 1;
                    room = leave(g);
                }
            break;
        }
        case 11: {
            uint32_t n = (uint32_t)un(r, 2) % 4096;
            uint32_t m = mid_of(g, op >> 4);
            for (uint32_t k = 0; room && k < n; k++) {
                g->t += k & 1;
                room = enter(g, m) && (g->t += 2, leave(g));
            }
            break;
        }
        case 12:
            goto done;
        default:
            g->t += step_of(g, op >> 4);
            room = enter(g, (uint32_t)un(r, 3));
            break;
        }
    }
done:
    th->records = (const uint8_t *)(g->rec + first); /* little-endian host */
    th->n_records = g->n - first;
    /* carried records are enters (the decoder's rule) */
    uint32_t c = 0;
    while (c < want_carried && c < th->n_records && !bl_rec_is_exit(g->rec[first + c]))
        c++;
    th->n_carried = c;
    th->since_us = c ? bl_rec_time(g->rec[first]) / 2 : 0;
}

/* ---- one batch, three ways ---- */

typedef struct work {
    side s[3];          /* x, y, z */
    bl_calltree trees[MAX_THREADS];
    bl_agg_part part;   /* from the trees (y) */
    bl_agg_part one;    /* the one pass, or the trees when it refuses (z) */
} work;

static void aggregate(work *w, const bl_batch *bt)
{
    bl_err tree_err = BL_OK;
    for (uint32_t i = 0; i < bt->n_threads; i++) {
        const bl_batch_thread *th = &bt->threads[i];
        bl_segment seg = { .truncated = th->truncated, .continues = th->continues,
                           .n_carried = th->n_carried, .since_us = th->since_us };
        bl_err e = bl_calltree_build_segment(&w->trees[i], th->records, th->n_records, &seg);
        if (e && !tree_err)
            tree_err = e;
    }
    char why[256];
    bl_err check = bl_agg_check_batch(bt, why, sizeof why);
    must(check == BL_OK || check == BL_ETOOBIG);
    if (check == BL_OK)
        must(tree_err == BL_OK); /* a batch that passes the check has its trees */
    int64_t origin = bt->origin_wall_us;
    int in_range = origin >= BL_AGG_ORIGIN_MIN && origin <= BL_AGG_ORIGIN_MAX;
    bl_err e = bl_agg_part_records(&w->one, bt, origin);
    must(e == BL_OK || e == BL_EFORMAT || e == BL_EINVAL);
    must((e == BL_OK) == (w->one.ok != 0));
    must((e == BL_EINVAL) == !in_range);
    if (tree_err) {
        /* the writer reports the thread; the one pass must not have taken
         * what the trees cannot rebuild */
        must(tree_err == BL_ETOOBIG && e != BL_OK);
        return;
    }
    side *x = &w->s[0], *y = &w->s[1], *z = &w->s[2];
    for (uint32_t i = 0; i < bt->n_threads; i++)
        must(bl_agg_tree(&x->a, &x->b, &bt->threads[i], &w->trees[i], origin) == BL_OK);

    bl_err pe = bl_agg_part_build(&w->part, bt, w->trees, origin);
    must(pe == (in_range ? BL_OK : BL_EINVAL));
    if (bl_agg_part_usable(&y->b, &w->part, origin))
        must(bl_agg_merge(&y->a, &y->b, &w->part) == BL_OK);
    else
        for (uint32_t i = 0; i < bt->n_threads; i++)
            must(bl_agg_tree(&y->a, &y->b, &bt->threads[i], &w->trees[i], origin) == BL_OK);

    if (e == BL_OK) {
        same_part(&w->part, &w->one);
    } else if (e == BL_EFORMAT) {
        /* the trees' way into the storage the refusal left */
        must(bl_agg_part_build(&w->one, bt, w->trees, origin) == BL_OK);
        same_part(&w->part, &w->one);
    }
    if (bl_agg_part_usable(&z->b, &w->one, origin))
        must(bl_agg_merge(&z->a, &z->b, &w->one) == BL_OK);
    else
        for (uint32_t i = 0; i < bt->n_threads; i++)
            must(bl_agg_thread(&z->a, &z->b, &bt->threads[i], origin) == BL_OK);
}

/* an origin 1.5 s before an hour ends: calls on both sides of it */
#define NEAR_HOUR (1795960000000000ll - 1795960000000000ll % BL_HOUR_US + BL_HOUR_US - 1500000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static work w;
    static uint64_t *rec;
    if (!rec && !(rec = malloc((size_t)MAX_RECORDS * sizeof *rec)))
        abort();
    rd r = { data, size, 0 };
    uint32_t setup = u8(&r);
    static const uint32_t caps[4] = { 40, 40, 1024, 0 };
    static const uint32_t node_caps[4] = { 1000000, 60, 5, 1000000 };
    uint32_t id_cap = caps[setup & 3];
    uint32_t prefill = (setup & 16) && id_cap ? BL_AGG_MAX_FAR - 16 + u8(&r) % 16 : 0;
    int64_t origin;
    switch (setup >> 5) {
    case 0: origin = NEAR_HOUR; break;
    case 1: origin = BL_AGG_ORIGIN_MIN; break;
    case 2: origin = BL_AGG_ORIGIN_MAX; break;
    case 3: origin = u8(&r) & 1 ? BL_AGG_ORIGIN_MIN - 1 : 5; break;
    default:
        origin = BL_AGG_ORIGIN_MIN +
                 (int64_t)(un(&r, 6) % (uint64_t)(BL_AGG_ORIGIN_MAX - BL_AGG_ORIGIN_MIN + 1));
        break;
    }
    for (int i = 0; i < 3; i++)
        side_init(&w.s[i], node_caps[(setup >> 2) & 3], id_cap, prefill);
    for (uint32_t i = 0; i < MAX_THREADS; i++)
        bl_calltree_init(&w.trees[i]);
    bl_agg_part_init(&w.part);
    bl_agg_part_init(&w.one);

    /* without a cap the build's per-methodId arrays reach the largest
     * methodId: kept small, or an input would take a second */
    gen g = { .r = &r, .rec = rec, .fold = id_cap ? 0 : 1u << 16 };
    for (int k = 0; k < 3 && (k == 0 || more(&r)); k++) {
        uint32_t hdr = u8(&r);
        bl_batch_thread th[MAX_THREADS];
        bl_batch bt;
        memset(&bt, 0, sizeof bt);
        memset(th, 0, sizeof th);
        bt.origin_wall_us = origin;
        bt.n_threads = (hdr & 7) % (MAX_THREADS + 1);
        bt.threads = th;
        for (uint32_t i = 0; i < bt.n_threads; i++) {
            th[i].id = i + 1;
            gen_thread(&g, &th[i]);
            bt.n_records += th[i].n_records;
        }
        aggregate(&w, &bt);
        if (hdr & 8)
            flush(w.s);
    }
    flush(w.s);

    free(g.stack);
    bl_agg_part_cleanup(&w.one);
    bl_agg_part_cleanup(&w.part);
    for (uint32_t i = 0; i < MAX_THREADS; i++)
        bl_calltree_cleanup(&w.trees[i]);
    for (int i = 0; i < 3; i++)
        side_cleanup(&w.s[i]);
    return 0;
}
