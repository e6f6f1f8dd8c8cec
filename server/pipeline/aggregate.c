/*
 * aggregate.c — calls to aggregate deltas (see aggregate.h; the partial
 * made in one pass over a batch's records, bl_agg_part_records, is in
 * agg_records.c, helpers both files share in agg_internal.h).
 *
 * Hot path. Per call: one array lookup for the method row, a cached slot for
 * the (method, main, hour) stat delta (the hour rarely changes inside a
 * batch: the cache is keyed by methodId × main and checked against the
 * hour and the delta generation, so most calls skip the hash map), one hash
 * lookup for the call-path node, and one sequential append of the inclusive
 * time; the sketches are built per stat in bl_agg_finish.
 */
#include "pipeline/aggregate.h"
#include "pipeline/agg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bl_agg_init(bl_agg *a, int64_t next_node, uint32_t max_nodes, bl_agg_new_row_fn fn,
                 void *ctx)
{
    memset(a, 0, sizeof *a);
    bl_u128map_init(&a->stat_ix);
    bl_calltree_init(&a->tree);
    bl_sketch_init(&a->scratch);
    bl_buf_init(&a->blobs, 0);
    a->gen = 1;
    a->next_node = next_node;
    a->max_nodes = max_nodes;
    a->new_row = fn;
    a->new_row_ctx = ctx;
}

void bl_agg_clear(bl_agg *a)
{
    a->n_stats = 0;
    a->n_nodes = 0;
    a->n_vals = 0;
    a->n_bks = 0;
    a->n_runs = 0;
    a->n_touched = 0;
    bl_buf_reset(&a->blobs);
    bl_u128map_clear(&a->stat_ix);
    a->gen++;
}

void bl_agg_cleanup(bl_agg *a)
{
    bl_agg_clear(a);
    free(a->stats);
    free(a->stat_order);
    bl_u128map_cleanup(&a->stat_ix);
    bl_calltree_cleanup(&a->tree);
    free(a->node_of);
    free(a->vals);
    free(a->vals2);
    free(a->touched);
    free(a->nodes);
    free(a->tpath);
    free(a->tkey);
    free(a->tval);
    free(a->pmap);
    free(a->bks);
    free(a->runs);
    free(a->runs2);
    bl_sketch_cleanup(&a->scratch);
    bl_buf_cleanup(&a->blobs);
}

/* methodIds past the method-ID file's range: kept in far_rows */
static int is_far(const bl_agg_build *b, uint32_t mid)
{
    return b->id_cap && mid >= b->id_cap;
}

/* methods.id of mid, 0 when not known yet. */
static int64_t row_of(const bl_agg_build *b, uint32_t mid)
{
    if (mid < b->n_rows && b->rows[mid])
        return b->rows[mid];
    uint64_t *v = bl_u128map_get(&b->far_rows, mid, 0);
    return v ? (int64_t)*v : 0;
}

/* qsort has no context argument: the stats being ordered (writer thread
 * only; bench and tests are single-threaded per aggregator too) */
static _Thread_local const bl_agg_stat *sort_ctx;

static int cmp_stat(const void *x, const void *y)
{
    const bl_agg_stat *a = &sort_ctx[*(const uint32_t *)x], *b = &sort_ctx[*(const uint32_t *)y];
    if (a->build_id != b->build_id)
        return a->build_id < b->build_id ? -1 : 1;
    if (a->method != b->method)
        return a->method < b->method ? -1 : 1;
    if (a->main != b->main)
        return a->main < b->main ? -1 : 1;
    return a->hour < b->hour ? -1 : a->hour > b->hour;
}

static int cmp_touched(const void *x, const void *y)
{
    const struct touched *a = x, *b = y;
    if (a->b != b->b) {
        if (a->b->build_id != b->b->build_id)
            return a->b->build_id < b->b->build_id ? -1 : 1;
        return (uintptr_t)a->b < (uintptr_t)b->b ? -1 : 1;
    }
    return a->local < b->local ? -1 : a->local > b->local;
}

void bl_agg_mark_stored(bl_agg *a)
{
    for (size_t i = 0; i < a->n_touched; i++)
        a->touched[i].b->lnode[a->touched[i].local].stored = 1;
}

void bl_agg_out_init(bl_agg_out *o)
{
    memset(o, 0, sizeof *o);
    bl_buf_init(&o->blobs, 0);
}

void bl_agg_out_cleanup(bl_agg_out *o)
{
    free(o->stats);
    free(o->stat_order);
    free(o->nodes);
    bl_buf_cleanup(&o->blobs);
    memset(o, 0, sizeof *o);
}

#define SWAP_(T, x, y) do { T t_ = (x); (x) = (y); (y) = t_; } while (0)

void bl_agg_take_nodes(bl_agg *a, bl_agg_out *o)
{
    SWAP_(bl_agg_node *, a->nodes, o->nodes);
    SWAP_(size_t, a->cap_nodes, o->cap_nodes);
    o->n_nodes = a->n_nodes;
    a->n_nodes = 0;
}

void bl_agg_take_stats(bl_agg *a, bl_agg_out *o)
{
    SWAP_(bl_agg_stat *, a->stats, o->stats);
    SWAP_(size_t, a->cap_stats, o->cap_stats);
    o->n_stats = a->n_stats;
    SWAP_(uint32_t *, a->stat_order, o->stat_order);
    SWAP_(size_t, a->cap_order, o->cap_order);
    SWAP_(bl_buf, a->blobs, o->blobs);
    bl_agg_clear(a);
}

void bl_agg_take(bl_agg *a, bl_agg_out *o)
{
    bl_agg_take_nodes(a, o);
    bl_agg_take_stats(a, o);
}

bl_err bl_agg_finish(bl_agg *a)
{
    bl_err err = bl_agg_finish_stats(a);
    return err ? err : bl_agg_finish_nodes(a);
}

bl_err bl_agg_finish_stats(bl_agg *a)
{
    size_t n = a->n_vals, ns = a->n_stats, nr = a->n_runs;
    if (n > a->cap_vals2) {
        bl_agg_val *v = realloc(a->vals2, n * sizeof *v);
        if (!v)
            return BL_ENOMEM;
        a->vals2 = v;
        a->cap_vals2 = n;
    }
    if (nr > a->cap_runs2) {
        struct bl_agg_run *r = realloc(a->runs2, nr * sizeof *r);
        if (!r)
            return BL_ENOMEM;
        a->runs2 = r;
        a->cap_runs2 = nr;
    }
    /* counting sorts by stat: the kept times (pos) and the merged runs
     * (rpos); each stat's times and runs together make its count */
    size_t *pos = calloc(2 * (ns + 1), sizeof *pos);
    if (!pos)
        return BL_ENOMEM;
    size_t *rpos = pos + ns + 1;
    for (size_t k = 0; k < n; k++)
        pos[a->vals[k] >> BL_AGG_VAL_US_BITS]++;
    for (size_t i = 0; i < nr; i++)
        rpos[a->runs[i].stat]++;
    size_t acc = 0, racc = 0;
    bl_err err = BL_OK;
    for (size_t i = 0; i < ns; i++) {
        size_t c = pos[i], rc = rpos[i];
        pos[i] = acc;
        rpos[i] = racc;
        acc += c;
        racc += rc;
    }
    pos[ns] = acc;
    rpos[ns] = racc;
    for (size_t k = 0; k < n; k++)
        a->vals2[pos[a->vals[k] >> BL_AGG_VAL_US_BITS]++] = a->vals[k];
    for (size_t i = 0; i < nr; i++)
        a->runs2[rpos[a->runs[i].stat]++] = a->runs[i];
    /* pos[i] and rpos[i] now end stat i's ranges (start: those of i - 1).
     * Each stat's sketch as bare bucket counts (the scratch sketch's
     * counters, all zero between stats; its count stays 0) and a mark of
     * the non-empty ones, so that writing the blob and zeroing the counters
     * touch those buckets only (bl_sketch_serialize_marked) */
    uint64_t *cnt = a->scratch.bucket;
    if (!cnt && !(cnt = a->scratch.bucket = calloc(BL_SKETCH_BUCKETS, sizeof *cnt))) {
        free(pos);
        return BL_ENOMEM;
    }
    uint64_t mark[BL_SKETCH_MARK_WORDS] = { 0 };
    bl_buf_reset(&a->blobs);
    size_t start = 0, rstart = 0;
    for (size_t i = 0; i < ns && !err; i++) {
        bl_agg_stat *s = &a->stats[i];
        uint64_t added = 0;
        for (size_t k = start; k < pos[i]; k++) {
            uint32_t b = bl_sketch_bucket(a->vals2[k] & (((uint64_t)1 << BL_AGG_VAL_US_BITS) - 1));
            cnt[b]++;
            mark[b / 64] |= (uint64_t)1 << (b % 64);
        }
        added += pos[i] - start;
        for (size_t r = rstart; r < rpos[i]; r++) {
            /* a stat's runs lie apart (one a batch), in memory another
             * thread wrote: fetch a later run's start ahead */
            if (r + 8 < nr) {
                const uint16_t *q = a->bks + a->runs2[r + 8].off;
                __builtin_prefetch(q);
                __builtin_prefetch(q + 32);
            }
            const uint16_t *bk = a->bks + a->runs2[r].off;
            uint32_t len = a->runs2[r].len;
            for (uint32_t k = 0; k < len; k++) {
                uint32_t b = bk[k];
                if (__builtin_expect(b >= BL_SKETCH_BUCKETS, 0)) {
                    err = BL_EINVAL; /* not a bucket index: a bug */
                    break;
                }
                cnt[b]++;
                mark[b / 64] |= (uint64_t)1 << (b % 64);
            }
            added += len;
        }
        start = pos[i];
        rstart = rpos[i];
        if (!err && added != s->count)
            err = BL_EINVAL; /* counts and kept values disagree: a bug */
        s->blob_off = a->blobs.len;
        if (!err)
            err = bl_sketch_serialize_marked(cnt, mark, &a->blobs);
        s->blob_len = a->blobs.len - s->blob_off;
    }
    free(pos);
    if (err) { /* the counters start at zero next time */
        memset(cnt, 0, BL_SKETCH_BUCKETS * sizeof *cnt);
        return err;
    }
    /* the stats in key order */
    if (ns > a->cap_order) {
        uint32_t *o = realloc(a->stat_order, ns * sizeof *o);
        if (!o)
            return BL_ENOMEM;
        a->stat_order = o;
        a->cap_order = ns;
    }
    for (size_t i = 0; i < ns; i++)
        a->stat_order[i] = (uint32_t)i;
    sort_ctx = a->stats;
    if (ns > 1)
        qsort(a->stat_order, ns, sizeof *a->stat_order, cmp_stat);
    return BL_OK;
}

/* Sorts the touched nodes as cmp_touched does. All of one build (the
 * usual round): a radix sort of their locals (distinct: a node is touched
 * once a round), 11 bits a pass; else, or without memory for it, qsort. */
static void sort_touched(bl_agg *a)
{
    size_t n = a->n_touched;
    if (n < 2)
        return;
    struct touched *t = a->touched;
    uint32_t max_local = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].b != t[0].b) {
            max_local = UINT32_MAX;
            break;
        }
        max_local = t[i].local > max_local ? t[i].local : max_local;
    }
    struct touched *tmp = max_local == UINT32_MAX || n < 256 ? NULL : malloc(n * sizeof *tmp);
    if (!tmp) {
        qsort(t, n, sizeof *t, cmp_touched);
        return;
    }
    struct touched *x = t, *y = tmp;
    for (unsigned sh = 0; sh < 32 && (max_local >> sh) != 0; sh += 11) {
        size_t cnt[2048] = { 0 };
        for (size_t i = 0; i < n; i++)
            cnt[(x[i].local >> sh) & 2047]++;
        size_t acc = 0;
        for (unsigned d = 0; d < 2048; d++) {
            size_t c = cnt[d];
            cnt[d] = acc;
            acc += c;
        }
        for (size_t i = 0; i < n; i++)
            y[cnt[(x[i].local >> sh) & 2047]++] = x[i];
        struct touched *z = x;
        x = y;
        y = z;
    }
    if (x != t)
        memcpy(t, x, n * sizeof *t);
    free(tmp);
}

bl_err bl_agg_finish_nodes(bl_agg *a)
{
    /* node deltas, by build and id (a build's local order is its id order) */
    sort_touched(a);
    if (a->n_touched > a->cap_nodes) {
        bl_agg_node *nn = realloc(a->nodes, a->n_touched * sizeof *nn);
        if (!nn)
            return BL_ENOMEM;
        a->nodes = nn;
        a->cap_nodes = a->n_touched;
    }
    for (size_t i = 0; i < a->n_touched; i++) {
        bl_agg_build *b = a->touched[i].b;
        const bl_agg_lnode *ln = &b->lnode[a->touched[i].local];
        bl_agg_node *d = &a->nodes[i];
        d->id = ln->id;
        d->build_id = b->build_id;
        d->parent = ln->parent1 ? b->lnode[ln->parent1 - 1].id : 0;
        d->method = row_of(b, (uint32_t)(ln->key >> 1));
        d->main = (int)(ln->key & 1);
        d->is_new = !ln->stored;
        d->count = ln->count;
        d->total = ln->total;
        d->self = ln->self;
    }
    a->n_nodes = a->n_touched;
    return BL_OK;
}

void bl_agg_build_init(bl_agg_build *b, int64_t build_id)
{
    memset(b, 0, sizeof *b);
    b->build_id = build_id;
    bl_u128map_init(&b->id_local);
    bl_u128map_init(&b->far_rows);
}

void bl_agg_build_cleanup(bl_agg_build *b)
{
    free(b->rows);
    free(b->unknown);
    bl_u128map_cleanup(&b->far_rows);
    free(b->slot_gen);
    free(b->slot_idx);
    free(b->lnode);
    free(b->nslot);
    bl_u128map_cleanup(&b->id_local);
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
    uint8_t *u = realloc(b->unknown, n);
    if (!u)
        return BL_ENOMEM;
    memset(u + b->n_rows, 0, n - b->n_rows);
    b->unknown = u;
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

bl_err bl_agg_build_set_row(bl_agg_build *b, uint32_t mid, int64_t row, int unknown)
{
    if (mid > BL_AGG_MID_OVERFLOW)
        return BL_EINVAL;
    if (is_far(b, mid)) {
        uint64_t *v;
        int ins;
        bl_err e = bl_u128map_put(&b->far_rows, mid, 0, (uint64_t)row, &v, &ins);
        if (!e)
            *v = (uint64_t)row;
        return e;
    }
    bl_err e = grow_rows(b, mid);
    if (e)
        return e;
    b->rows[mid] = row;
    b->unknown[mid] = unknown != 0;
    return BL_OK;
}

/* The node table: 16 bytes a slot, linear probing, load <= 1/2 (hashed
 * with agg_nhash, agg_internal.h). */

static uint32_t *nfind(const bl_agg_build *b, uint64_t key)
{
    if (!b->nslot)
        return NULL;
    for (uint32_t i = agg_nhash(key, b->nmask);; i = (i + 1) & b->nmask) {
        struct bl_agg_nslot *sl = &b->nslot[i];
        if (sl->key == key)
            return &sl->val;
        if (sl->key == UINT64_MAX)
            return NULL;
    }
}

static bl_err ninsert(bl_agg_build *b, uint64_t key, uint32_t val)
{
    if ((uint64_t)(b->nused + 1) * 2 > (uint64_t)b->nmask + 1 || !b->nslot) {
        uint32_t ncap = b->nslot ? (b->nmask + 1) * 2 : 1024;
        struct bl_agg_nslot *ns = malloc((size_t)ncap * sizeof *ns);
        if (!ns)
            return BL_ENOMEM;
        for (uint32_t i = 0; i < ncap; i++)
            ns[i].key = UINT64_MAX;
        for (uint32_t i = 0; b->nslot && i <= b->nmask; i++) {
            if (b->nslot[i].key == UINT64_MAX)
                continue;
            uint32_t j = agg_nhash(b->nslot[i].key, ncap - 1);
            while (ns[j].key != UINT64_MAX)
                j = (j + 1) & (ncap - 1);
            ns[j] = b->nslot[i];
        }
        free(b->nslot);
        b->nslot = ns;
        b->nmask = ncap - 1;
    }
    uint32_t i = agg_nhash(key, b->nmask);
    while (b->nslot[i].key != UINT64_MAX)
        i = (i + 1) & b->nmask;
    b->nslot[i].key = key;
    b->nslot[i].val = val;
    b->nused++;
    return BL_OK;
}

/* Appends a local node; *local gets its index. key2 = mid << 1 | main. */
static bl_err new_local(bl_agg_build *b, int64_t id, uint32_t parent_local1, uint64_t key2,
                        uint32_t *local)
{
    if (b->n_local == UINT32_MAX - 1)
        return BL_ETOOBIG;
    if (b->n_local == b->cap_local) {
        uint32_t nc = b->cap_local ? b->cap_local * 2 : 1024;
        bl_agg_lnode *nl = realloc(b->lnode, (size_t)nc * sizeof *nl);
        if (!nl)
            return BL_ENOMEM;
        b->lnode = nl;
        b->cap_local = nc;
    }
    bl_err e = ninsert(b, (uint64_t)parent_local1 << 32 | key2, b->n_local);
    if (e)
        return e;
    uint32_t l = b->n_local++;
    bl_agg_lnode *n = &b->lnode[l];
    memset(n, 0, sizeof *n);
    n->id = id;
    n->key = key2;
    n->parent1 = parent_local1;
    b->n_nodes[key2 & 1]++;
    *local = l;
    return BL_OK;
}

bl_err bl_agg_build_add_node(bl_agg_build *b, int64_t id, int64_t parent, int main, uint32_t mid)
{
    if (mid > BL_AGG_MID_OVERFLOW)
        return BL_EINVAL;
    uint32_t parent_local1 = 0;
    if (parent) {
        uint64_t *pl = bl_u128map_get(&b->id_local, (uint64_t)parent, 0);
        if (!pl)
            return BL_EINVAL;
        parent_local1 = (uint32_t)*pl + 1;
    }
    uint32_t l;
    bl_err e = new_local(b, id, parent_local1, (uint64_t)mid << 1 | (uint64_t)(main != 0), &l);
    if (e)
        return e;
    b->lnode[l].stored = 1;
    uint64_t *v;
    int ins;
    return bl_u128map_put(&b->id_local, (uint64_t)id, 0, l, &v, &ins);
}

/* The methods row of methodId *mid for build b (*row), made with the
 * new_row callback when the build has none yet; *unknown: 1 for an
 * "unknown method" row. A methodId past the method-ID file's range beyond
 * the first BL_AGG_MAX_FAR ones becomes BL_AGG_MID_OVERFLOW in *mid. */
static inline bl_err resolve_row(bl_agg *a, bl_agg_build *b, uint32_t *mid, int64_t *row,
                                 int *unknown)
{
    bl_err err = BL_OK;
    uint32_t m = *mid;
    int64_t r;
    if (!is_far(b, m)) {
        if (m >= b->n_rows && (err = grow_rows(b, m)))
            return err;
        r = b->rows[m];
        if (!r) {
            if (!a->new_row || (err = a->new_row(a->new_row_ctx, b, m, &r)))
                return err ? err : BL_EINVAL;
            b->rows[m] = r;
            b->unknown[m] = 1;
        }
        *unknown = b->unknown[m];
    } else {
        if (!(r = row_of(b, m)) && b->far_rows.n >= BL_AGG_MAX_FAR)
            r = row_of(b, m = BL_AGG_MID_OVERFLOW);
        if (!r) {
            if (!a->new_row || (err = a->new_row(a->new_row_ctx, b, m, &r)))
                return err ? err : BL_EINVAL;
            if ((err = bl_agg_build_set_row(b, m, r, 1)))
                return err;
        }
        *unknown = 1;
    }
    *mid = m;
    *row = r;
    return BL_OK;
}

static bl_err stat_slot(bl_agg *a, bl_agg_build *b, uint32_t mid, int64_t row, int main,
                        int64_t hour, bl_agg_stat **out)
{
    size_t k = (size_t)mid * 2 + (size_t)main;
    int cached = k < b->n_slots; /* far methodIds may be past the cache */
    if (cached && b->slot_gen[k] == a->gen) {
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
        if (a->n_stats >= BL_AGG_MAX_STATS)
            return BL_ETOOBIG; /* absurdly many distinct stats: the batch is refused */
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
    }
    if (cached) {
        b->slot_gen[k] = a->gen;
        b->slot_idx[k] = (uint32_t)*v;
    }
    *out = &a->stats[*v];
    return BL_OK;
}

/* The node (parent, main, row), created with a new id when absent; NULL
 * past the node cap (counted `drops` times in dropped_nodes: once per
 * thread that has the path). parent_local1: parent's local + 1, 0 for a
 * root. */
static bl_err node_get(bl_agg *a, bl_agg_build *b, uint32_t parent_local1, int main,
                       uint32_t mid, uint64_t drops, uint32_t *local1, bl_agg_lnode **out)
{
    *out = NULL;
    *local1 = 0;
    uint32_t l;
    uint64_t key2 = (uint64_t)mid << 1 | (uint64_t)main;
    /* a parent calls the same child again and again (loops): try the child
     * found last time before hashing */
    uint32_t lc = parent_local1 ? b->lnode[parent_local1 - 1].last_child : 0;
    if (lc && b->lnode[lc - 1].key == key2) {
        l = lc - 1;
    } else {
        uint32_t *v = nfind(b, (uint64_t)parent_local1 << 32 | key2);
        if (v) {
            l = *v;
        } else {
            if (b->n_nodes[main] >= a->max_nodes) {
                a->dropped_nodes += drops;
                return BL_OK;
            }
            bl_err e = new_local(b, a->next_node, parent_local1, key2, &l);
            if (e)
                return e;
            a->next_node++;
        }
        if (parent_local1)
            b->lnode[parent_local1 - 1].last_child = l + 1;
    }
    bl_agg_lnode *n = &b->lnode[l];
    if (n->gen != a->gen) {
        if (a->n_touched == a->cap_touched) {
            size_t nc = a->cap_touched ? a->cap_touched * 2 : 1024;
            struct touched *nt = realloc(a->touched, nc * sizeof *nt);
            if (!nt)
                return BL_ENOMEM;
            a->touched = nt;
            a->cap_touched = nc;
        }
        a->touched[a->n_touched].b = b;
        a->touched[a->n_touched++].local = l;
        n->gen = a->gen;
        n->count = n->total = n->self = 0;
    }
    *local1 = l + 1;
    *out = n;
    return BL_OK;
}

bl_err bl_agg_thread(bl_agg *a, bl_agg_build *b, const bl_batch_thread *th, int64_t origin)
{
    bl_segment seg = { .truncated = th->truncated, .continues = th->continues,
                       .n_carried = th->n_carried, .since_us = th->since_us };
    bl_err err = bl_calltree_build_segment(&a->tree, th->records, th->n_records, &seg);
    if (err)
        return err;
    return bl_agg_tree(a, b, th, &a->tree, origin);
}

bl_err bl_agg_tree(bl_agg *a, bl_agg_build *b, const bl_batch_thread *th, const bl_calltree *tree,
                   int64_t origin)
{
    bl_err err;
    a->malformed += tree->malformed;
    uint32_t n = tree->n_calls;
    if (n > a->cap_node_of) {
        uint32_t *no = realloc(a->node_of, (size_t)n * sizeof *no);
        if (!no)
            return BL_ENOMEM;
        a->node_of = no;
        a->cap_node_of = n;
    }
    int main = th->main != 0;
    /* path table: at most n paths, load <= 1/2 */
    size_t tcap = 64;
    while (tcap < (size_t)n * 2)
        tcap *= 2;
    if (tcap > a->tcap) {
        uint64_t *tk = realloc(a->tkey, tcap * sizeof *tk);
        if (!tk)
            return BL_ENOMEM;
        a->tkey = tk;
        uint32_t *tv = realloc(a->tval, tcap * sizeof *tv);
        if (!tv)
            return BL_ENOMEM;
        a->tval = tv;
        a->tcap = tcap;
    }
    if (n > a->cap_tpath) {
        struct bl_agg_tpath *t = realloc(a->tpath, (size_t)n * sizeof *t);
        if (!t)
            return BL_ENOMEM;
        a->tpath = t;
        a->cap_tpath = n;
    }
    /* a small thread uses only the start of the table */
    size_t used = 64;
    while (used < (size_t)n * 2)
        used *= 2;
    memset(a->tkey, 0xff, used * sizeof *a->tkey);
    size_t saved_tcap = a->tcap;
    a->tcap = used;
    a->n_tpath = 0;
    /* calls are in exit order (children first): walk backwards so that a
     * parent's path exists before its children's */
    for (uint32_t k = n; k-- > 0;) {
        const bl_call *c = &tree->calls[k];
        uint32_t mid = c->method_id;
        int64_t row;
        int unknown;
        if ((err = resolve_row(a, b, &mid, &row, &unknown)))
            return err;
        if (unknown) /* its enter and exit, when they are in this segment */
            a->unknown_records +=
                (uint64_t)!(c->flags & BL_CALL_SYNTH_ENTER) +
                !(c->flags & (BL_CALL_INCOMPLETE | BL_CALL_CONTINUES | BL_CALL_UNBALANCED));
        uint64_t incl = c->end_us - c->start_us;
        int64_t t = origin + (int64_t)c->start_us;
        int64_t hour = t - t % BL_HOUR_US;
        bl_agg_stat *s;
        if ((err = stat_slot(a, b, mid, row, main, hour, &s)))
            return err;
        /* a call that goes on in a later segment is counted there; here
         * only its self time (schema/batch-format.md, "Segments") */
        uint64_t one = (c->flags & BL_CALL_CONTINUES) ? 0 : 1;
        incl &= 0 - one;
        s->count += one;
        s->total += incl;
        s->self += c->self_us;
        if (incl > s->max)
            s->max = incl;
        if (a->n_vals == a->cap_vals) {
            size_t nc = a->cap_vals ? a->cap_vals * 2 : 4096;
            bl_agg_val *nv = realloc(a->vals, nc * sizeof *nv);
            if (!nv)
                return BL_ENOMEM;
            a->vals = nv;
            a->cap_vals = nc;
        }
        a->vals[a->n_vals] = (uint64_t)(s - a->stats) << BL_AGG_VAL_US_BITS | incl;
        a->n_vals += one;
        /* the call's path in this thread */
        uint32_t parent1 = c->parent == BL_CALL_ROOT ? 0 : a->node_of[c->parent];
        uint64_t key = (uint64_t)parent1 << 32 | mid;
        uint32_t i = agg_nhash(key, (uint32_t)(a->tcap - 1));
        while (a->tkey[i] != key && a->tkey[i] != UINT64_MAX)
            i = (i + 1) & (uint32_t)(a->tcap - 1);
        if (a->tkey[i] == UINT64_MAX) {
            a->tkey[i] = key;
            a->tval[i] = (uint32_t)a->n_tpath;
            struct bl_agg_tpath *np = &a->tpath[a->n_tpath++];
            memset(np, 0, sizeof *np);
            np->parent1 = parent1;
            np->mid = mid;
        }
        struct bl_agg_tpath *tp = &a->tpath[a->tval[i]];
        tp->count += one;
        tp->total += incl;
        tp->self += c->self_us;
        uint32_t node1 = a->tval[i] + 1;
        a->node_of[k] = node1;
    }
    a->tcap = saved_tcap;
    /* each distinct path once into the build's node table (parents first) */
    for (size_t i = 0; i < a->n_tpath; i++) {
        struct bl_agg_tpath *tp = &a->tpath[i];
        /* the node table is large and cold: fetch the slot of a path a few
         * steps ahead whose parent is already resolved */
        size_t ahead = i + 8;
        if (ahead < a->n_tpath && b->nslot) {
            const struct bl_agg_tpath *tq = &a->tpath[ahead];
            if (!tq->parent1 || tq->parent1 - 1 < i) {
                uint32_t gp = tq->parent1 ? a->tpath[tq->parent1 - 1].global1 : 0;
                uint64_t k = (uint64_t)gp << 32 | (uint64_t)tq->mid << 1 | (uint64_t)main;
                __builtin_prefetch(&b->nslot[agg_nhash(k, b->nmask)]);
            }
        }
        tp->global1 = 0;
        uint32_t gparent1 = tp->parent1 ? a->tpath[tp->parent1 - 1].global1 : 0;
        if (tp->parent1 && !gparent1)
            continue; /* the parent was past the node cap */
        bl_agg_lnode *d;
        uint32_t g1;
        if ((err = node_get(a, b, gparent1, main, tp->mid, 1, &g1, &d)))
            return err;
        if (d) {
            d->count += tp->count;
            d->total += tp->total;
            d->self += tp->self;
            tp->global1 = g1;
        }
    }
    return BL_OK;
}

/* ---- partial aggregates (see aggregate.h) ---- */

void bl_agg_part_init(bl_agg_part *p)
{
    memset(p, 0, sizeof *p);
}

void bl_agg_part_cleanup(bl_agg_part *p)
{
    free(p->st);
    free(p->vals);
    free(p->bk);
    free(p->path);
    free(p->tab);
    free(p->node_of);
    free(p->fr);
    free(p->tl);
    free(p->sortk);
    free(p->sortk2);
    free(p->perm_st);
    free(p->perm_path);
    free(p->st2);
    free(p->path2);
    memset(p, 0, sizeof *p);
}

bl_err agg_reserve(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return BL_OK;
    size_t nc = *cap ? *cap : 256;
    while (nc < n)
        nc *= 2;
    void *na = realloc(*arr, nc * size);
    if (!na)
        return BL_ENOMEM;
    *arr = na;
    *cap = nc;
    return BL_OK;
}

bl_err agg_ptab_grow(bl_agg_part *p)
{
    size_t used = p->n_st + p->n_path + 1;
    size_t nc = p->tab_cap ? p->tab_cap * 2 : 4096;
    while (used * 2 > nc)
        nc *= 2;
    struct bl_agg_pslot *nt = calloc(nc, sizeof *nt); /* gen 0: free */
    if (!nt)
        return BL_ENOMEM;
    for (size_t i = 0; i < p->tab_cap; i++) {
        if (p->tab[i].gen != p->tab_gen)
            continue;
        uint32_t j = agg_nhash(p->tab[i].key, (uint32_t)(nc - 1));
        while (nt[j].gen)
            j = (j + 1) & (uint32_t)(nc - 1);
        nt[j] = p->tab[i];
        nt[j].gen = 1;
    }
    free(p->tab);
    p->tab = nt;
    p->tab_cap = nc;
    p->tab_gen = 1;
    return BL_OK;
}

_Static_assert(BL_SKETCH_BUCKETS <= 65536, "a sketch bucket index fits in 16 bits");

bl_err bl_agg_part_build(bl_agg_part *p, const bl_batch *bt, const bl_calltree *trees,
                         int64_t origin)
{
    p->ok = 0;
    p->n_st = p->n_vals = p->n_path = 0;
    p->malformed = 0;
    p->max_mid = 0;
    p->origin = origin;
    if (origin < BL_AGG_ORIGIN_MIN || origin > BL_AGG_ORIGIN_MAX)
        return BL_EINVAL;
    /* a new generation frees every slot; at the wrap (0 is what a fresh
     * slot holds) the table is cleared instead */
    if (++p->tab_gen == 0) {
        if (p->tab)
            memset(p->tab, 0, p->tab_cap * sizeof *p->tab);
        p->tab_gen = 1;
    }
    size_t calls = 0;
    for (uint32_t t = 0; t < bt->n_threads; t++)
        calls += trees[t].n_calls;
    p->n_calls = calls;
    bl_err err = agg_reserve((void **)&p->vals, &p->cap_vals, calls, sizeof *p->vals);
    if (err)
        return err;
    int64_t hour_lo = 0, hour_hi = 0; /* [lo, hi): the hour of the last call */
    uint64_t hour_ix = 0;
    for (uint32_t t = 0; t < bt->n_threads; t++) {
        const bl_calltree *tree = &trees[t];
        uint32_t n = tree->n_calls;
        uint32_t main = bt->threads[t].main != 0;
        p->malformed += tree->malformed;
        if ((err = agg_reserve((void **)&p->node_of, &p->cap_node_of, n, sizeof *p->node_of)))
            return err;
        /* as bl_agg_tree: backwards, a parent's path before its children's */
        for (uint32_t k = n; k-- > 0;) {
            const bl_call *c = &tree->calls[k];
            uint32_t mid = c->method_id;
            uint64_t incl = c->end_us - c->start_us;
            /* a call that goes on in a later segment: only its self time */
            uint64_t one = (c->flags & BL_CALL_CONTINUES) ? 0 : 1;
            incl &= 0 - one;
            /* its path in this batch: (parent path, methodId, main); a
             * parent calls the same child again and again (loops): the
             * child it had last is tried before hashing */
            uint32_t parent1 = c->parent == BL_CALL_ROOT ? 0 : p->node_of[c->parent];
            uint32_t key2 = mid << 1 | main;
            uint32_t pi, lc = parent1 ? p->path[parent1 - 1].last_child : 0;
            int fresh = 0;
            if (lc && p->path[lc - 1].key2 == key2) {
                pi = lc - 1;
            } else {
                /* room for one more path (and in the table) before looking */
                if ((err = agg_ptab_room(p)) ||
                    (err = agg_reserve((void **)&p->path, &p->cap_path, p->n_path + 1,
                                   sizeof *p->path)))
                    return err;
                struct bl_agg_pslot *sl = agg_ptab_get(p, (uint64_t)parent1 << 32 | key2, &fresh);
                if (fresh)
                    sl->val = (uint32_t)p->n_path;
                pi = sl->val;
                if (parent1)
                    p->path[parent1 - 1].last_child = pi + 1;
            }
            bl_agg_ppath *pp = &p->path[pi];
            if (fresh) {
                /* every methodId of the batch comes here first */
                if (mid > BL_REC_ID_MAX)
                    return BL_EINVAL; /* not from a record: left to bl_agg_tree */
                p->max_mid = mid > p->max_mid ? mid : p->max_mid;
                agg_path_new(p, pp, parent1, key2, t);
            } else if (pp->last_thread != t) {
                pp->last_thread = t;
                pp->n_threads++;
            }
            pp->count += one;
            pp->total += incl;
            pp->self += c->self_us;
            p->node_of[k] = pi + 1;
            /* its stat: (hour, methodId, main); the path's calls had the
             * same one last time unless the hour changed */
            int64_t at = origin + (int64_t)c->start_us;
            if (at < hour_lo || at >= hour_hi) {
                hour_ix = (uint64_t)(at / BL_HOUR_US);
                hour_lo = (int64_t)hour_ix * BL_HOUR_US;
                hour_hi = hour_lo + BL_HOUR_US;
            }
            uint64_t skey = hour_ix << 25 | key2;
            uint32_t si = pp->stat;
            if (si == UINT32_MAX || p->st[si].key != skey) {
                if ((err = agg_stat_slot(p, skey, &si)))
                    return err;
                pp->stat = si;
            }
            bl_agg_pstat *s = &p->st[si];
            s->count += one;
            s->total += incl;
            s->self += c->self_us;
            s->max = incl > s->max ? incl : s->max;
            /* its enter and exit when they are in this segment (counted if the
             * methodId proves unknown): 2 a call but for these rare flags;
             * here the records missing (the 2s are added at the end) */
            if (__builtin_expect(c->flags & (BL_CALL_SYNTH_ENTER | BL_CALL_INCOMPLETE |
                                             BL_CALL_CONTINUES | BL_CALL_UNBALANCED), 0)) {
                s->unknown_records +=
                    (uint64_t)!!(c->flags & BL_CALL_SYNTH_ENTER) +
                    !!(c->flags & (BL_CALL_INCOMPLETE | BL_CALL_CONTINUES | BL_CALL_UNBALANCED));
                s->n_continues += (c->flags & BL_CALL_CONTINUES) != 0;
            }
            p->vals[p->n_vals] = (uint64_t)si << BL_AGG_VAL_US_BITS | incl;
            p->n_vals += one;
        }
    }
    if ((err = agg_part_buckets(p, NULL)))
        return err;
    p->ok = 1;
    return BL_OK;
}

bl_err agg_part_buckets(bl_agg_part *p, const uint32_t *perm)
{
    bl_err err;
    if ((err = agg_reserve((void **)&p->bk, &p->cap_bk, p->n_vals, sizeof *p->bk)))
        return err;
    uint32_t acc = 0;
    for (size_t i = 0; i < p->n_st; i++) {
        bl_agg_pstat *s = &p->st[i];
        s->bk_off = acc;
        acc += (uint32_t)s->count;
        /* calls (counted ones and those going on later) × 2 - missing */
        s->unknown_records = 2 * (s->count + s->n_continues) - s->unknown_records;
    }
    const uint64_t us_mask = ((uint64_t)1 << BL_AGG_VAL_US_BITS) - 1;
    if (perm) {
        for (size_t k = 0; k < p->n_vals; k++) {
            bl_agg_val v = p->vals[k];
            p->bk[p->st[perm[v >> BL_AGG_VAL_US_BITS]].bk_off++] =
                (uint16_t)bl_sketch_bucket(v & us_mask);
        }
    } else {
        for (size_t k = 0; k < p->n_vals; k++) {
            bl_agg_val v = p->vals[k];
            p->bk[p->st[v >> BL_AGG_VAL_US_BITS].bk_off++] =
                (uint16_t)bl_sketch_bucket(v & us_mask);
        }
    }
    for (size_t i = 0; i < p->n_st; i++)
        p->st[i].bk_off -= (uint32_t)p->st[i].count;
    return BL_OK;
}

int bl_agg_part_usable(const bl_agg_build *b, const bl_agg_part *p, int64_t origin)
{
    if (!p->ok || p->origin != origin)
        return 0;
    /* each methodId keeps a row of its own unless the far ones could reach
     * the cap (then BL_AGG_MID_OVERFLOW would merge stats and paths) */
    return !(b->id_cap && p->max_mid >= b->id_cap &&
             b->far_rows.n + p->n_st >= BL_AGG_MAX_FAR);
}

bl_err bl_agg_merge(bl_agg *a, bl_agg_build *b, const bl_agg_part *p)
{
    if (!bl_agg_part_usable(b, p, p->origin))
        return BL_EINVAL;
    bl_err err;
    size_t need = p->n_st > p->n_path ? p->n_st : p->n_path;
    if ((err = agg_reserve((void **)&a->pmap, &a->cap_pmap, need, sizeof *a->pmap)))
        return err;
    if ((err = agg_reserve((void **)&a->bks, &a->cap_bks, a->n_bks + p->n_vals, sizeof *a->bks)) ||
        (err = agg_reserve((void **)&a->runs, &a->cap_runs, a->n_runs + p->n_st, sizeof *a->runs)))
        return err;
    a->malformed += p->malformed;
    /* the stats in order of first call: rows and stats are made in the
     * order bl_agg_tree would make them; pmap: partial stat -> stat */
    for (size_t i = 0; i < p->n_st; i++) {
        const bl_agg_pstat *ps = &p->st[i];
        uint32_t mid = (uint32_t)(ps->key >> 1) & BL_REC_ID_MAX;
        int main = (int)(ps->key & 1);
        int64_t hour = (int64_t)(ps->key >> 25) * BL_HOUR_US;
        int64_t row;
        int unknown;
        if ((err = resolve_row(a, b, &mid, &row, &unknown)))
            return err;
        if (unknown)
            a->unknown_records += ps->unknown_records;
        bl_agg_stat *s;
        if ((err = stat_slot(a, b, mid, row, main, hour, &s)))
            return err;
        s->count += ps->count;
        s->total += ps->total;
        s->self += ps->self;
        if (ps->max > s->max)
            s->max = ps->max;
        if (ps->count) /* its inclusive times, as sketch buckets */
            a->runs[a->n_runs++] = (struct bl_agg_run){ .stat = (uint32_t)(s - a->stats),
                                                        .len = (uint32_t)ps->count,
                                                        .off = a->n_bks + ps->bk_off };
        a->pmap[i] = (uint32_t)(s - a->stats);
    }
    if (p->n_vals) /* (a batch without counted calls may have no arrays) */
        memcpy(a->bks + a->n_bks, p->bk, p->n_vals * sizeof *p->bk);
    a->n_bks += p->n_vals;
    /* each distinct path of the batch once into the build's node table,
     * parents first; pmap now: path -> the build's node local + 1 */
    for (size_t i = 0; i < p->n_path; i++) {
        const bl_agg_ppath *pp = &p->path[i];
        size_t ahead = i + 8; /* fetch the cold slot of a path a few ahead */
        if (ahead < p->n_path && b->nslot) {
            const bl_agg_ppath *pq = &p->path[ahead];
            if (!pq->parent1 || pq->parent1 - 1 < i) {
                uint32_t gp = pq->parent1 ? a->pmap[pq->parent1 - 1] : 0;
                __builtin_prefetch(&b->nslot[agg_nhash((uint64_t)gp << 32 | pq->key2, b->nmask)]);
            }
        }
        uint32_t gparent1 = pp->parent1 ? a->pmap[pp->parent1 - 1] : 0;
        a->pmap[i] = 0;
        if (pp->parent1 && !gparent1)
            continue; /* the parent was past the node cap */
        bl_agg_lnode *d;
        uint32_t g1;
        if ((err = node_get(a, b, gparent1, (int)(pp->key2 & 1), pp->key2 >> 1, pp->n_threads,
                            &g1, &d)))
            return err;
        if (d) {
            d->count += pp->count;
            d->total += pp->total;
            d->self += pp->self;
            a->pmap[i] = g1;
        }
    }
    return BL_OK;
}

bl_err bl_agg_check_batch(const bl_batch *b, char *msg, size_t n)
{
    if (n)
        msg[0] = '\0';
    if (b->n_records > BL_AGG_MAX_BATCH_RECORDS) {
        snprintf(msg, n, "batch has %llu records; the limit is %u records per batch",
                 (unsigned long long)b->n_records, (unsigned)BL_AGG_MAX_BATCH_RECORDS);
        return BL_ETOOBIG;
    }
    for (uint32_t i = 0; i < b->n_threads; i++) {
        const bl_batch_thread *t = &b->threads[i];
        bl_segment seg = { .truncated = t->truncated, .continues = t->continues,
                           .n_carried = t->n_carried, .since_us = t->since_us };
        uint32_t depth;
        bl_err e = bl_calltree_nesting(t->records, t->n_records, &seg, BL_AGG_MAX_NESTING,
                                       &depth);
        if (e == BL_ETOOBIG)
            snprintf(msg, n,
                     "thread %u (id %llu) nests calls more than %u deep (counting enters "
                     "lost before the segment start); the limit is %u nested calls per thread",
                     i, (unsigned long long)t->id, (unsigned)BL_AGG_MAX_NESTING,
                     (unsigned)BL_AGG_MAX_NESTING);
        if (e)
            return e;
    }
    return BL_OK;
}
