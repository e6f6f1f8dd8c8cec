/*
 * blocks_test.c — block trees and signature paths (agg/blocks.h): the
 * window's calls (carried enters and calls open before the window left
 * out, a call open at the end counted to the last record), merging by path,
 * the "more than half" descent rule and its boundary (exactly half stops),
 * ties, recursion, empty windows, begin > end, the work budget (max_calls),
 * the path cap, and signature texts (names only, stable, order-sensitive).
 */
#include "agg/blocks.h"
#include "agg/calltree.h"
#include "ingest/batch.h"
#include "testutil.h"

static uint8_t rec[8 * 512];

/* Parses "i1@0 i2@5 o2@7 o1@10" into rec; returns the record count. */
static uint32_t recs(const char *s)
{
    uint32_t n = 0;
    while (*s) {
        if (*s == ' ') {
            s++;
            continue;
        }
        int is_exit = *s++ == 'o';
        char *e;
        unsigned long m = strtoul(s, &e, 10);
        unsigned long long ts = strtoull(e + 1, &e, 10);
        uint64_t v = bl_rec_make(is_exit, (uint32_t)m, ts);
        for (int k = 0; k < 8; k++)
            rec[(size_t)n * 8 + k] = (uint8_t)(v >> (8 * k));
        n++;
        s = e;
    }
    return n;
}

static bl_calltree tree;
static bl_block_tree bt;

static void setup(void)
{
    bl_calltree_init(&tree);
    bl_block_tree_init(&bt);
}

static void teardown(void)
{
    bl_calltree_cleanup(&tree);
    bl_block_tree_cleanup(&bt);
}

/* Builds the segment and indexes it. */
static void build(const char *s, uint32_t n_carried, uint64_t since, int continues)
{
    uint32_t n = recs(s);
    bl_segment seg = { 0, continues, n_carried, since };
    ck_assert_int_eq(bl_calltree_build_segment(&tree, rec, n, &seg), BL_OK);
    ck_assert_int_eq(bl_block_index(&bt, &tree), BL_OK);
}

/* The signature path as "m1 m2 m3" (methodIds). */
static const char *path(void)
{
    static char out[1024];
    size_t l = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < bt.path_len; i++)
        l += (size_t)snprintf(out + l, sizeof out - l, i ? " %u" : "%u",
                              bt.nodes[bt.path[i]].method_id);
    return out;
}

/* The node of methodId mid under parent methodId pmid (0: a root). */
static const bl_block_node *node(uint32_t pmid, uint32_t mid)
{
    for (uint32_t i = 0; i < bt.n_nodes; i++) {
        const bl_block_node *x = &bt.nodes[i];
        uint32_t p = x->parent == BL_BLOCK_NONE ? 0 : bt.nodes[x->parent].method_id;
        if (x->method_id == mid && p == pmid)
            return x;
    }
    return NULL;
}

START_TEST(heaviest_path_and_noise)
{
    /* loop(7) open before the window; run(1) > load(2) > query(3) holds the
     * time; log(4) and tiny(6) are noise */
    build("i7@0 i1@10 i4@20 o4@30 i2@100 i3@200 o3@880000 o2@890000 i6@890100 o6@890200 "
          "o1@900000 i6@950000 o6@950001 o7@990000",
          0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 10, 900000, 1000), BL_OK);
    ck_assert_str_eq(path(), "1 2 3");
    ck_assert_uint_eq(bt.n_calls, 5); /* run, log, load, query, tiny; not loop, not the later tiny */
    ck_assert_ptr_null(node(0, 7));
    const bl_block_node *q = node(2, 3);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(q->total, 879800);
    ck_assert_uint_eq(q->count, 1);
    ck_assert_uint_eq(node(0, 1)->total, 899990);
}
END_TEST

START_TEST(exactly_half_stops)
{
    /* run = 800: load 400 (exactly half) and decode 400: the culprit is run */
    build("i1@0 i2@0 o2@400 i5@400 o5@800 o1@800", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 800, 100), BL_OK);
    ck_assert_str_eq(path(), "1");
    /* one µs more for load: it holds more than half */
    build("i1@0 i2@0 o2@401 i5@401 o5@800 o1@800", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 800, 100), BL_OK);
    ck_assert_str_eq(path(), "1 2");
}
END_TEST

START_TEST(paths_merge_and_loops)
{
    /* a loop of many short parse(3) calls under run(1): merged by path they
     * hold the time, so parse is the culprit */
    build("i1@0 i3@0 o3@100 i3@100 o3@200 i3@200 o3@300 i4@300 o4@310 o1@320", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 320, 100), BL_OK);
    ck_assert_str_eq(path(), "1 3");
    ck_assert_uint_eq(node(1, 3)->count, 3);
    ck_assert_uint_eq(node(1, 3)->total, 300);
    /* recursion: f(2) > f > f, each level its own path */
    build("i2@0 i2@1 i2@2 o2@90 o2@95 o2@100", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 100, 100), BL_OK);
    ck_assert_str_eq(path(), "2 2 2");
}
END_TEST

START_TEST(roots_and_ties)
{
    /* two top-level calls: the heavier is the root of the path */
    build("i1@0 o1@100 i2@100 i3@110 o3@250 o2@300", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 300, 100), BL_OK);
    ck_assert_str_eq(path(), "2 3");
    /* equal roots: the earlier call wins */
    build("i5@0 o5@100 i4@100 o4@200", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 200, 100), BL_OK);
    ck_assert_str_eq(path(), "5");
}
END_TEST

START_TEST(carried_enters_left_out)
{
    /* a block window uploaded as its own segment: loop(7) and run(1) carried
     * (open at begin = since = 1000); only work(3) and its child are the
     * block's calls */
    build("i7@0 i1@500 i3@1000 i4@1100 o4@1800 o3@1900 o1@1950", 2, 1000, 1);
    ck_assert_int_eq(bl_block_window(&bt, 1000, 2000, 100), BL_OK);
    ck_assert_uint_eq(bt.n_calls, 2);
    ck_assert_str_eq(path(), "3 4");
    ck_assert_ptr_null(node(0, 1));
    ck_assert_ptr_null(node(0, 7));
    /* a call open at the end of the segment counts to the last record */
    build("i1@0 i2@10 i3@15 o3@30", 0, 0, 1);
    ck_assert_int_eq(bl_block_window(&bt, 0, 100, 100), BL_OK);
    ck_assert_str_eq(path(), "1 2 3");
    ck_assert_uint_eq(node(0, 1)->total, 30);
    /* an exit whose enter was lost: its synthesized enter is not the block's */
    build("i3@5 o3@6 o9@50 i2@60 o2@70", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 100, 100), BL_OK);
    ck_assert_ptr_null(node(0, 9));
    ck_assert_str_eq(path(), "2");
}
END_TEST

START_TEST(carried_enters_of_the_message)
{
    /* full mode: the ring was dumped during the stall. The message began at
     * 50; run(1) > load(2) > query(3) were entered in the previous segment
     * and are carried into this one (since = 5000), which holds their exits,
     * the block event and noise(6). loop(7), entered before the message, is
     * carried too and stays out. */
    build("i7@10 i1@100 i2@150 i3@200 o3@800000 o2@800010 i6@800020 o6@800030 o1@800100", 4,
          5000, 1);
    ck_assert_int_eq(bl_block_window(&bt, 50, 800100, 100), BL_OK);
    ck_assert_str_eq(path(), "1 2 3");
    ck_assert_uint_eq(bt.n_calls, 4); /* run, load, query, noise */
    ck_assert_ptr_null(node(0, 7));
    ck_assert_uint_eq(node(0, 1)->count, 1);
    ck_assert_uint_eq(node(0, 1)->total, 800000);
    ck_assert_uint_eq(node(2, 3)->total, 799800);
    ck_assert_ptr_nonnull(node(1, 6));
}
END_TEST

START_TEST(neighbour_messages_in_edge_micros)
{
    /* µs times: the previous message, quick(18), ends in the µs the block
     * begins (1765), its children 12 and 13 entered there; the block's
     * message run(7) > load(6) > query(3) begins in that µs too; the next
     * message, slow(9) > decode(10), begins in the µs the block ends */
    build("i18@0 i12@1765 o12@1765 i13@1765 o13@1765 o18@1765 i7@1765 i6@1766 i3@1767 "
          "o3@800000 o6@800001 o7@800002 i9@800002 i10@800002 o10@1900000 o9@1900000",
          0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 1765, 800002, 100), BL_OK);
    ck_assert_str_eq(path(), "7 6 3");
    ck_assert_uint_eq(bt.n_calls, 3);
    ck_assert_ptr_null(node(0, 12));
    ck_assert_ptr_null(node(0, 13));
    ck_assert_ptr_null(node(0, 9));
    ck_assert_ptr_null(node(0, 10));
    ck_assert_ptr_null(node(9, 10));
    /* the message's own calls in its edge µs stay: run(7) enters in
     * begin_us and lasts, its children 6 (wholly in begin_us) and 4
     * (entered in end_us) are not roots */
    build("i7@100 i6@100 o6@100 i3@100 o3@600 i4@900 o4@900 o7@900", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 100, 900, 100), BL_OK);
    ck_assert_str_eq(path(), "7 3");
    ck_assert_ptr_nonnull(node(7, 6));
    ck_assert_ptr_nonnull(node(7, 4));
}
END_TEST

START_TEST(window_edges)
{
    build("i1@100 o1@200 i2@300 o2@400", 0, 0, 0);
    /* no calls in the window */
    ck_assert_int_eq(bl_block_window(&bt, 201, 299, 100), BL_OK);
    ck_assert_uint_eq(bt.n_calls, 0);
    ck_assert_uint_eq(bt.path_len, 0);
    /* one instant: the call entered then */
    ck_assert_int_eq(bl_block_window(&bt, 300, 300, 100), BL_OK);
    ck_assert_str_eq(path(), "2");
    /* enter time inclusive at both ends; a root entered in end_us is the
     * next message's (neighbour_messages_in_edge_micros) */
    ck_assert_int_eq(bl_block_window(&bt, 100, 301, 100), BL_OK);
    ck_assert_uint_eq(bt.n_calls, 2);
    ck_assert_int_eq(bl_block_window(&bt, 100, 300, 100), BL_OK);
    ck_assert_uint_eq(bt.n_calls, 1);
    /* begin > end */
    ck_assert_int_eq(bl_block_window(&bt, 300, 200, 100), BL_EINVAL);
    ck_assert_uint_eq(bt.n_calls, 0);
    /* the budget: more calls than max_calls */
    ck_assert_int_eq(bl_block_window(&bt, 0, 1000, 1), BL_ETOOBIG);
    ck_assert_uint_eq(bt.n_nodes, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 1000, 2), BL_OK);
    /* an empty thread */
    build("", 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 1000, 2), BL_OK);
    ck_assert_uint_eq(bt.path_len, 0);
}
END_TEST

START_TEST(path_cap)
{
    /* 100 nested calls, each holding all the time: the path stops at 64 */
    char s[4096];
    size_t l = 0;
    for (int i = 0; i < 100; i++)
        l += (size_t)snprintf(s + l, sizeof s - l, "i%d@%d ", i + 1, i);
    for (int i = 99; i >= 0; i--)
        l += (size_t)snprintf(s + l, sizeof s - l, "o%d@%d ", i + 1, 1000 - i);
    build(s, 0, 0, 0);
    ck_assert_int_eq(bl_block_window(&bt, 0, 1000, 1000), BL_OK);
    ck_assert_uint_eq(bt.path_len, BL_BLOCK_PATH_MAX);
}
END_TEST

START_TEST(signature_text)
{
    bl_buf a, b;
    bl_buf_init(&a, 0);
    bl_buf_init(&b, 0);
    char x[33], y[33];
    bl_block_sig_reset(&a);
    ck_assert_int_eq(bl_block_sig_add(&a, "com.example.Feed", "run", "()V"), BL_OK);
    ck_assert_int_eq(bl_block_sig_add(&a, "com.example.Db", "query", "(Ljava/lang/String;)V"),
                     BL_OK);
    bl_block_sig_text(&a, x);
    ck_assert_uint_eq(strlen(x), 32);
    /* the same names again (another build): the same text */
    bl_block_sig_reset(&b);
    bl_block_sig_add(&b, "com.example.Feed", "run", "()V");
    bl_block_sig_add(&b, "com.example.Db", "query", "(Ljava/lang/String;)V");
    bl_block_sig_text(&b, y);
    ck_assert_str_eq(x, y);
    /* another order, or names split differently: another text */
    bl_block_sig_reset(&b);
    bl_block_sig_add(&b, "com.example.Db", "query", "(Ljava/lang/String;)V");
    bl_block_sig_add(&b, "com.example.Feed", "run", "()V");
    bl_block_sig_text(&b, y);
    ck_assert_str_ne(x, y);
    bl_block_sig_reset(&b);
    bl_block_sig_add(&b, "com.example.Feedr", "un", "()V");
    bl_block_sig_add(&b, "com.example.Db", "query", "(Ljava/lang/String;)V");
    bl_block_sig_text(&b, y);
    ck_assert_str_ne(x, y);
    /* the empty path has a text too */
    bl_block_sig_reset(&b);
    bl_block_sig_text(&b, y);
    ck_assert_uint_eq(strlen(y), 32);
    ck_assert_str_ne(x, y);
    bl_buf_cleanup(&a);
    bl_buf_cleanup(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("blocks");
    TCase *tc = tcase_create("blocks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, heaviest_path_and_noise);
    tcase_add_test(tc, exactly_half_stops);
    tcase_add_test(tc, paths_merge_and_loops);
    tcase_add_test(tc, roots_and_ties);
    tcase_add_test(tc, carried_enters_left_out);
    tcase_add_test(tc, carried_enters_of_the_message);
    tcase_add_test(tc, neighbour_messages_in_edge_micros);
    tcase_add_test(tc, window_edges);
    tcase_add_test(tc, path_cap);
    tcase_add_test(tc, signature_text);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
