/*
 * aggregate_test.c — partial aggregates (pipeline/aggregate.h): a batch
 * aggregated on its own (bl_agg_part_build, as a prep thread does) and
 * merged by the writer (bl_agg_merge) must give exactly what bl_agg_tree on
 * each of its threads gives: every stat (key, count, total, self, max,
 * sketch bytes) in stored order, every node delta (id, parent, method,
 * main, new or stored, count, total, self), the methods rows made for
 * unknown methodIds and their order, and the malformed, unknown_records and
 * dropped_nodes counters — over random batches with several threads (main
 * and not), unknown and far methodIds, damaged records, segments that
 * continue, calls across an hour boundary, a small node cap, and flushes.
 * The partial made in one pass from the records (bl_agg_part_records, for
 * well-formed batches) must equal, field by field, the one made from the
 * trees, and refuse (BL_EFORMAT) what it does not take.
 */
#include "agg/calltree.h"
#include "ingest/batch.h"
#include "pipeline/aggregate.h"
#include "testutil.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One side: an aggregator, its build, and the log of rows it asked for. */
typedef struct side {
    bl_agg a;
    bl_agg_build b;
    int64_t next_row;
    uint32_t made[20000]; /* methodIds new_row was asked for, in order */
    uint32_t n_made;
} side;

static bl_err new_row(void *ctx, bl_agg_build *b, uint32_t mid, int64_t *row)
{
    side *s = ctx;
    (void)b;
    ck_assert_uint_lt(s->n_made, 20000);
    s->made[s->n_made++] = mid;
    *row = s->next_row++;
    return BL_OK;
}

#define N_KNOWN 24  /* methodIds 1..N_KNOWN have rows (the method-ID file) */
#define ID_CAP 40   /* methodIds >= ID_CAP are far */

static void side_init(side *s, uint32_t max_nodes)
{
    memset(s, 0, sizeof *s);
    bl_agg_init(&s->a, 1, max_nodes, new_row, s);
    bl_agg_build_init(&s->b, 7);
    s->b.id_cap = ID_CAP;
    s->next_row = 100000;
    for (uint32_t m = 1; m <= N_KNOWN; m++)
        ck_assert_int_eq(bl_agg_build_set_row(&s->b, m, 1000 + m, 0), BL_OK);
}

static void side_cleanup(side *s)
{
    bl_agg_cleanup(&s->a);
    bl_agg_build_cleanup(&s->b);
}

/* 1: the batches made are well-formed (what bl_agg_part_records takes): no
 * damaged exits, no truncated threads, no carried enters; some threads end
 * with calls still open */
static int clean;

/* Random records of one thread: nested calls of methodIds drawn from known,
 * unknown (N_KNOWN < id < ID_CAP) and far ones; now and then an exit that
 * matches nothing or a lost enter (malformed), times going forward. */
static uint32_t gen_thread(uint64_t *rec, uint32_t max, uint64_t *t)
{
    int stop_open = clean && next() % 3 == 0;
    uint32_t stack[40], depth = 0, n = 0;
    while (n < max) {
        int enter = depth == 0 || (depth < 30 && next() % 100 < 55);
        *t += next() % 3 == 0 ? 0 : 1 + next() % 400;
        if (n + depth + 1 >= max) {
            if (stop_open && depth > 0)
                break; /* calls left open at the end */
            enter = 0;
        }
        if (enter) {
            uint32_t r = (uint32_t)(next() % 100), m;
            if (r < 75)
                m = 1 + (uint32_t)(next() % 8);          /* hot known methods */
            else if (r < 88)
                m = 1 + (uint32_t)(next() % N_KNOWN);
            else if (r < 96)
                m = N_KNOWN + 1 + (uint32_t)(next() % (ID_CAP - N_KNOWN - 1));
            else
                m = ID_CAP + (uint32_t)(next() % 5000);  /* far */
            rec[n++] = bl_rec_make(0, m, *t);
            stack[depth++] = m;
        } else if (depth > 0) {
            uint32_t m = stack[--depth];
            if (!clean && next() % 50 == 0)
                m = 1 + (uint32_t)(next() % N_KNOWN); /* an exit of another method */
            rec[n++] = bl_rec_make(1, m, *t);
        } else {
            break;
        }
        if (depth == 0 && n + 2 > max)
            break;
    }
    return n;
}

/* A batch of 1..5 threads with flags; records in rec (caller's storage). */
static void gen_batch(bl_batch *bt, bl_batch_thread *th, uint64_t *rec, uint32_t per,
                      int64_t origin)
{
    memset(bt, 0, sizeof *bt);
    bt->origin_wall_us = origin;
    bt->n_threads = 1 + (uint32_t)(next() % 5);
    bt->threads = th;
    uint64_t *r = rec;
    for (uint32_t i = 0; i < bt->n_threads; i++) {
        bl_batch_thread *x = &th[i];
        memset(x, 0, sizeof *x);
        x->id = i + 1;
        x->main = i == 0 || next() % 4 == 0;
        x->truncated = !clean && next() % 6 == 0;
        x->continues = next() % 5 == 0;
        uint64_t t = next() % 1000;
        x->n_records = gen_thread(r, per, &t);
        if (!clean && next() % 6 == 0 && x->n_records > 4) { /* carried enters */
            x->n_carried = 1;
            x->since_us = 0;
        }
        x->records = (const uint8_t *)r; /* little-endian host */
        bt->n_records += x->n_records;
        r += per;
    }
}

/* x and y (finished) hold the same deltas */
static void same(side *x, side *y)
{
    ck_assert_uint_eq(x->a.n_stats, y->a.n_stats);
    for (size_t i = 0; i < x->a.n_stats; i++) {
        const bl_agg_stat *p = &x->a.stats[x->a.stat_order[i]];
        const bl_agg_stat *q = &y->a.stats[y->a.stat_order[i]];
        ck_assert_int_eq(p->build_id, q->build_id);
        ck_assert_int_eq(p->method, q->method);
        ck_assert_int_eq(p->hour, q->hour);
        ck_assert_int_eq(p->main, q->main);
        ck_assert_uint_eq(p->count, q->count);
        ck_assert_uint_eq(p->total, q->total);
        ck_assert_uint_eq(p->self, q->self);
        ck_assert_uint_eq(p->max, q->max);
        ck_assert_uint_eq(p->blob_len, q->blob_len);
        ck_assert(memcmp(x->a.blobs.data + p->blob_off, y->a.blobs.data + q->blob_off,
                         p->blob_len) == 0);
    }
    ck_assert_uint_eq(x->a.n_nodes, y->a.n_nodes);
    for (size_t i = 0; i < x->a.n_nodes; i++) {
        const bl_agg_node *p = &x->a.nodes[i], *q = &y->a.nodes[i];
        if (i) /* B-tree order: by build, then id (one build here) */
            ck_assert_int_lt(x->a.nodes[i - 1].id, p->id);
        ck_assert_int_eq(p->id, q->id);
        ck_assert_int_eq(p->parent, q->parent);
        ck_assert_int_eq(p->method, q->method);
        ck_assert_int_eq(p->main, q->main);
        ck_assert_int_eq(p->is_new, q->is_new);
        ck_assert_uint_eq(p->count, q->count);
        ck_assert_uint_eq(p->total, q->total);
        ck_assert_uint_eq(p->self, q->self);
    }
    ck_assert_uint_eq(x->a.malformed, y->a.malformed);
    ck_assert_uint_eq(x->a.unknown_records, y->a.unknown_records);
    ck_assert_uint_eq(x->a.dropped_nodes, y->a.dropped_nodes);
    ck_assert_int_eq(x->a.next_node, y->a.next_node);
    ck_assert_uint_eq(x->n_made, y->n_made);
    for (uint32_t i = 0; i < x->n_made; i++)
        ck_assert_uint_eq(x->made[i], y->made[i]);
}

/* Finishes x, y and z (NULL: none), compares y and z with x, then marks
 * their nodes stored (committed) and clears them. */
static void check_equal3(side *x, side *y, side *z)
{
    side *all[3] = { x, y, z };
    for (int i = 0; i < 3; i++)
        if (all[i])
            ck_assert_int_eq(bl_agg_finish(&all[i]->a), BL_OK);
    same(x, y);
    if (z)
        same(x, z);
    for (int i = 0; i < 3; i++)
        if (all[i]) {
            bl_agg_mark_stored(&all[i]->a);
            bl_agg_clear(&all[i]->a);
        }
}

static void check_equal(side *x, side *y)
{
    check_equal3(x, y, NULL);
}

/* The partial of bl_agg_part_records (q) equals bl_agg_part_build's (p). */
static void check_same_part(const bl_agg_part *p, const bl_agg_part *q)
{
    ck_assert(p->ok && q->ok);
    ck_assert_int_eq(p->origin, q->origin);
    ck_assert_uint_eq(p->malformed, q->malformed);
    ck_assert_uint_eq(p->max_mid, q->max_mid);
    ck_assert_uint_eq(p->n_calls, q->n_calls);
    ck_assert_uint_eq(p->n_st, q->n_st);
    for (size_t i = 0; i < p->n_st; i++) {
        const bl_agg_pstat *a = &p->st[i], *b = &q->st[i];
        ck_assert_uint_eq(a->key, b->key);
        ck_assert_uint_eq(a->count, b->count);
        ck_assert_uint_eq(a->total, b->total);
        ck_assert_uint_eq(a->self, b->self);
        ck_assert_uint_eq(a->max, b->max);
        ck_assert_uint_eq(a->unknown_records, b->unknown_records);
        ck_assert_uint_eq(a->bk_off, b->bk_off);
    }
    ck_assert_uint_eq(p->n_vals, q->n_vals);
    /* the buckets of each stat, as a multiset (their order inside a stat's
     * run does not matter to a sketch): sorted copies compared */
    for (size_t i = 0; i < p->n_st; i++) {
        uint32_t c = (uint32_t)p->st[i].count, h1[64] = { 0 }, h2[64] = { 0 };
        uint64_t s1 = 0, s2 = 0;
        for (uint32_t k = 0; k < c; k++) {
            uint16_t x = p->bk[p->st[i].bk_off + k], y = q->bk[q->st[i].bk_off + k];
            h1[x % 64]++;
            h2[y % 64]++;
            s1 += (uint64_t)x * x + x;
            s2 += (uint64_t)y * y + y;
        }
        ck_assert(memcmp(h1, h2, sizeof h1) == 0);
        ck_assert_uint_eq(s1, s2);
    }
    ck_assert_uint_eq(p->n_path, q->n_path);
    for (size_t i = 0; i < p->n_path; i++) {
        const bl_agg_ppath *a = &p->path[i], *b = &q->path[i];
        ck_assert_uint_eq(a->parent1, b->parent1);
        ck_assert_uint_eq(a->key2, b->key2);
        ck_assert_uint_eq(a->n_threads, b->n_threads);
        ck_assert_uint_eq(a->count, b->count);
        ck_assert_uint_eq(a->total, b->total);
        ck_assert_uint_eq(a->self, b->self);
    }
}

/* rounds × batches, a flush (compare, mark stored, clear) after each round */
static uint64_t seen_dropped, seen_unknown, seen_malformed, seen_onepass;

static void run(uint32_t max_nodes, uint32_t per, int rounds, int batches, int64_t origin)
{
    seen_dropped = seen_unknown = seen_malformed = seen_onepass = 0;
    static side x, y, z;
    side_init(&x, max_nodes);
    side_init(&y, max_nodes);
    side_init(&z, max_nodes);
    bl_agg_part one;
    bl_agg_part_init(&one);
    bl_calltree trees[5];
    for (int i = 0; i < 5; i++)
        bl_calltree_init(&trees[i]);
    bl_agg_part part;
    bl_agg_part_init(&part);
    uint64_t *rec = malloc((size_t)5 * per * sizeof *rec);
    ck_assert_ptr_nonnull(rec);
    int merged = 0;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < batches; k++) {
            bl_batch bt;
            bl_batch_thread th[5];
            clean = k % 2;
            gen_batch(&bt, th, rec, per, origin + (int64_t)(next() % 3000000));
            int ok = 1;
            for (uint32_t i = 0; i < bt.n_threads; i++) {
                bl_segment seg = { .truncated = th[i].truncated, .continues = th[i].continues,
                                   .n_carried = th[i].n_carried, .since_us = th[i].since_us };
                ok &= bl_calltree_build_segment(&trees[i], th[i].records, th[i].n_records,
                                                &seg) == BL_OK;
            }
            ck_assert(ok);
            for (uint32_t i = 0; i < bt.n_threads; i++)
                ck_assert_int_eq(bl_agg_tree(&x.a, &x.b, &th[i], &trees[i], bt.origin_wall_us),
                                 BL_OK);
            ck_assert_int_eq(bl_agg_part_build(&part, &bt, trees, bt.origin_wall_us), BL_OK);
            if (bl_agg_part_usable(&y.b, &part, bt.origin_wall_us)) {
                ck_assert_int_eq(bl_agg_merge(&y.a, &y.b, &part), BL_OK);
                merged++;
            } else {
                for (uint32_t i = 0; i < bt.n_threads; i++)
                    ck_assert_int_eq(bl_agg_tree(&y.a, &y.b, &th[i], &trees[i],
                                                 bt.origin_wall_us), BL_OK);
            }
            /* z: as a prep thread and the writer do (prep.c, proc_round.c):
             * the one pass when it takes the batch, else the trees */
            bl_err e = bl_agg_part_records(&one, &bt, bt.origin_wall_us);
            if (clean) {
                ck_assert_int_eq(e, BL_OK);
                check_same_part(&part, &one);
                seen_onepass++;
            } else if (e != BL_OK) {
                ck_assert_int_eq(e, BL_EFORMAT);
                ck_assert(!one.ok);
                ck_assert_int_eq(bl_agg_part_build(&one, &bt, trees, bt.origin_wall_us), BL_OK);
            } else {
                check_same_part(&part, &one); /* well-formed by chance */
            }
            if (bl_agg_part_usable(&z.b, &one, bt.origin_wall_us)) {
                ck_assert_int_eq(bl_agg_merge(&z.a, &z.b, &one), BL_OK);
            } else {
                for (uint32_t i = 0; i < bt.n_threads; i++)
                    ck_assert_int_eq(bl_agg_thread(&z.a, &z.b, &th[i], bt.origin_wall_us),
                                     BL_OK);
            }
        }
        seen_dropped += x.a.dropped_nodes;
        seen_unknown += x.a.unknown_records;
        seen_malformed += x.a.malformed;
        check_equal3(&x, &y, &z);
    }
    clean = 0;
    ck_assert_uint_gt(seen_onepass, 0);
    bl_agg_part_cleanup(&one);
    side_cleanup(&z);
    ck_assert_int_gt(merged, rounds * batches / 2);
    free(rec);
    bl_agg_part_cleanup(&part);
    for (int i = 0; i < 5; i++)
        bl_calltree_cleanup(&trees[i]);
    side_cleanup(&x);
    side_cleanup(&y);
}

/* an origin 1.5 s before an hour ends: calls on both sides of it */
#define ORIGIN (1795960000000000ll - 1795960000000000ll % BL_HOUR_US + BL_HOUR_US - 1500000)

START_TEST(merge_equals_tree)
{
    run(1000000, 400, 6, 8, ORIGIN);
    ck_assert_uint_eq(seen_dropped, 0);
    ck_assert_uint_gt(seen_unknown, 0);
    ck_assert_uint_gt(seen_malformed, 0);
}
END_TEST

START_TEST(merge_equals_tree_node_cap)
{
    /* few nodes per build and thread kind: paths are dropped, counted once
     * per thread that has them */
    run(60, 300, 5, 8, ORIGIN);
    ck_assert_uint_gt(seen_dropped, 0);
}
END_TEST

START_TEST(merge_equals_tree_big)
{
    run(1000000, 6000, 2, 3, ORIGIN);
}
END_TEST

START_TEST(not_usable)
{
    static side s;
    side_init(&s, 100);
    bl_agg_part part;
    bl_agg_part_init(&part);
    bl_batch bt;
    bl_batch_thread th[5];
    uint64_t rec[5 * 50];
    bl_calltree trees[5];
    for (int i = 0; i < 5; i++)
        bl_calltree_init(&trees[i]);
    gen_batch(&bt, th, rec, 50, ORIGIN);
    for (uint32_t i = 0; i < bt.n_threads; i++) {
        bl_segment seg = { .truncated = th[i].truncated, .continues = th[i].continues,
                           .n_carried = th[i].n_carried, .since_us = th[i].since_us };
        ck_assert_int_eq(bl_calltree_build_segment(&trees[i], th[i].records, th[i].n_records,
                                                   &seg), BL_OK);
    }
    /* a wall clock the writer would replace: no partial */
    ck_assert_int_eq(bl_agg_part_build(&part, &bt, trees, 5), BL_EINVAL);
    ck_assert(!bl_agg_part_usable(&s.b, &part, 5));
    ck_assert_int_eq(bl_agg_merge(&s.a, &s.b, &part), BL_EINVAL);
    /* built from another origin than the writer's */
    ck_assert_int_eq(bl_agg_part_build(&part, &bt, trees, ORIGIN), BL_OK);
    ck_assert(bl_agg_part_usable(&s.b, &part, ORIGIN));
    ck_assert(!bl_agg_part_usable(&s.b, &part, ORIGIN + 1));
    /* close to the far methodId cap, with a far methodId: left to bl_agg_tree */
    uint64_t far[2] = { bl_rec_make(0, ID_CAP + 7, 1), bl_rec_make(1, ID_CAP + 7, 2) };
    bl_batch_thread one = { .id = 1, .main = 1, .n_records = 2, .records = (const uint8_t *)far };
    bl_batch b1 = { .origin_wall_us = ORIGIN, .n_threads = 1, .threads = &one, .n_records = 2 };
    bl_segment seg = { 0 };
    ck_assert_int_eq(bl_calltree_build_segment(&trees[0], one.records, 2, &seg), BL_OK);
    ck_assert_int_eq(bl_agg_part_build(&part, &b1, trees, ORIGIN), BL_OK);
    ck_assert(bl_agg_part_usable(&s.b, &part, ORIGIN));
    for (uint32_t m = 0; s.b.far_rows.n + 1 < BL_AGG_MAX_FAR; m++)
        ck_assert_int_eq(bl_agg_build_set_row(&s.b, ID_CAP + 100 + m, 5000000 + m, 1), BL_OK);
    ck_assert(!bl_agg_part_usable(&s.b, &part, ORIGIN));
    ck_assert_int_eq(bl_agg_merge(&s.a, &s.b, &part), BL_EINVAL);
    ck_assert_uint_eq(s.a.n_stats, 0);
    for (int i = 0; i < 5; i++)
        bl_calltree_cleanup(&trees[i]);
    bl_agg_part_cleanup(&part);
    side_cleanup(&s);
}
END_TEST

/* batches without a counted call (no threads, empty threads, a call that
 * goes on later) merged into a fresh aggregator: nothing but what
 * bl_agg_tree adds */
START_TEST(empty_batches)
{
    static side x, y;
    side_init(&x, 100);
    side_init(&y, 100);
    bl_agg_part part, one;
    bl_agg_part_init(&part);
    bl_agg_part_init(&one);
    bl_calltree trees[2];
    bl_calltree_init(&trees[0]);
    bl_calltree_init(&trees[1]);
    uint64_t open1 = bl_rec_make(0, 3, 10);
    bl_batch_thread th[2] = { { .id = 1, .main = 1 },
                              { .id = 2, .continues = 1, .n_records = 1,
                                .records = (const uint8_t *)&open1 } };
    for (uint32_t nt = 0; nt <= 2; nt++) {
        bl_batch bt = { .origin_wall_us = ORIGIN, .n_threads = nt, .threads = th,
                        .n_records = nt == 2 };
        for (uint32_t i = 0; i < nt; i++) {
            bl_segment seg = { .continues = th[i].continues };
            ck_assert_int_eq(bl_calltree_build_segment(&trees[i], th[i].records,
                                                       th[i].n_records, &seg), BL_OK);
            ck_assert_int_eq(bl_agg_tree(&x.a, &x.b, &th[i], &trees[i], ORIGIN), BL_OK);
        }
        ck_assert_int_eq(bl_agg_part_build(&part, &bt, trees, ORIGIN), BL_OK);
        ck_assert(bl_agg_part_usable(&y.b, &part, ORIGIN));
        ck_assert_int_eq(bl_agg_part_records(&one, &bt, ORIGIN), BL_OK);
        check_same_part(&part, &one);
        ck_assert_int_eq(bl_agg_merge(&y.a, &y.b, &part), BL_OK);
        check_equal(&x, &y);
    }
    bl_calltree_cleanup(&trees[0]);
    bl_calltree_cleanup(&trees[1]);
    bl_agg_part_cleanup(&part);
    bl_agg_part_cleanup(&one);
    side_cleanup(&x);
    side_cleanup(&y);
}
END_TEST

/* what the one pass leaves to the trees: BL_EFORMAT, ok 0 */
START_TEST(one_pass_refuses)
{
    bl_agg_part part;
    bl_agg_part_init(&part);
    uint64_t rec[4];
    bl_batch_thread th = { .id = 1, .main = 1, .records = (const uint8_t *)rec };
    bl_batch bt = { .origin_wall_us = ORIGIN, .n_threads = 1, .threads = &th };
    /* well-formed: taken */
    rec[0] = bl_rec_make(0, 3, 10);
    rec[1] = bl_rec_make(0, 4, 11);
    rec[2] = bl_rec_make(1, 4, 15);
    rec[3] = bl_rec_make(1, 3, 20);
    th.n_records = bt.n_records = 4;
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, ORIGIN), BL_OK);
    ck_assert(part.ok);
    ck_assert_uint_eq(part.n_calls, 2);
    ck_assert_uint_eq(part.n_path, 2);
    ck_assert_uint_eq(part.path[0].key2, 3u << 1 | 1); /* the parent first */
    ck_assert_uint_eq(part.path[1].parent1, 1);
    ck_assert_uint_eq(part.path[0].self, 6);
    /* a wall clock the writer replaces */
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, 5), BL_EINVAL);
    ck_assert(!part.ok);
    /* a truncated ring; carried enters */
    th.truncated = 1;
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, ORIGIN), BL_EFORMAT);
    th.truncated = 0;
    th.n_carried = 1;
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, ORIGIN), BL_EFORMAT);
    th.n_carried = 0;
    /* an exit of another method than the open call's */
    rec[2] = bl_rec_make(1, 3, 15);
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, ORIGIN), BL_EFORMAT);
    ck_assert(!part.ok);
    /* an exit with nothing open (a lost enter) */
    rec[0] = bl_rec_make(1, 3, 10);
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, ORIGIN), BL_EFORMAT);
    /* a timestamp going back */
    rec[0] = bl_rec_make(0, 3, 10);
    rec[2] = bl_rec_make(1, 4, 9);
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, ORIGIN), BL_EFORMAT);
    /* deep: the open calls' frames grow (to 5,000) and the partial is the
     * trees' one; past BL_CALLTREE_MAX_DEPTH open calls, refused */
    {
        uint32_t d = 5000, nd = BL_CALLTREE_MAX_DEPTH + 1;
        uint64_t *deep = malloc((size_t)nd * sizeof *deep);
        ck_assert_ptr_nonnull(deep);
        for (uint32_t k = 0; k < d; k++) {
            deep[k] = bl_rec_make(0, 1 + k % 7, 10 + k);
            deep[2 * d - 1 - k] = bl_rec_make(1, 1 + k % 7, 10 + 3 * d - k);
        }
        bl_batch_thread dt = { .id = 1, .records = (const uint8_t *)deep, .n_records = 2 * d };
        bl_batch db = { .origin_wall_us = ORIGIN, .n_threads = 1, .threads = &dt,
                        .n_records = 2 * d };
        bl_calltree tree;
        bl_calltree_init(&tree);
        bl_segment seg = { 0 };
        ck_assert_int_eq(bl_calltree_build_segment(&tree, dt.records, dt.n_records, &seg), BL_OK);
        bl_agg_part ref;
        bl_agg_part_init(&ref);
        ck_assert_int_eq(bl_agg_part_build(&ref, &db, &tree, ORIGIN), BL_OK);
        ck_assert_int_eq(bl_agg_part_records(&part, &db, ORIGIN), BL_OK);
        check_same_part(&ref, &part);
        ck_assert_uint_eq(part.n_path, d);
        for (uint32_t k = 0; k < nd; k++)
            deep[k] = bl_rec_make(0, 3, 10 + k);
        dt.n_records = db.n_records = nd;
        ck_assert_int_eq(bl_agg_part_records(&part, &db, ORIGIN), BL_EFORMAT);
        bl_agg_part_cleanup(&ref);
        bl_calltree_cleanup(&tree);
        free(deep);
    }
    /* taken again after refusals (the storage is reused) */
    rec[2] = bl_rec_make(1, 4, 15);
    ck_assert_int_eq(bl_agg_part_records(&part, &bt, ORIGIN), BL_OK);
    ck_assert_uint_eq(part.n_path, 2);
    bl_agg_part_cleanup(&part);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("aggregate");
    TCase *tc = tcase_create("partial");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, merge_equals_tree);
    tcase_add_test(tc, merge_equals_tree_node_cap);
    tcase_add_test(tc, merge_equals_tree_big);
    tcase_add_test(tc, not_usable);
    tcase_add_test(tc, empty_batches);
    tcase_add_test(tc, one_pass_refuses);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
