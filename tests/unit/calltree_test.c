/*
 * calltree_test.c — call-tree rebuild (agg/calltree.h): exact start, end,
 * self, depth, parent and flags for nesting, recursion, exception unwinding,
 * truncated rings (lost enters, nested), open calls at the end, unbalanced
 * and unmatched exits (shallow and deep stacks), decreasing timestamps,
 * 40-bit times, the depth limit, errors midway, storage growth at every fill
 * level and reuse, and long random sequences (balanced, cut as a wrapped
 * ring cuts them, and damaged) against a naive reference implementation
 * written here (child lists, linear stack search, recursive depths).
 *
 * Records are always handed over at an odd address: the API promises any
 * alignment.
 */
#include "agg/calltree.h"
#include "ingest/batch.h"
#include "testutil.h"

/* ------------------------------------------------------------------------ */
/* Record helpers                                                            */

static uint8_t *rec_bytes;   /* 1 + 8 × n bytes; records start at +1 */
static size_t rec_cap;

/* Encodes v[0..n) little-endian at rec_bytes + 1 and returns that address. */
static const uint8_t *encode(const uint64_t *v, uint32_t n)
{
    size_t need = 1 + (size_t)n * 8;
    if (need > rec_cap) {
        free(rec_bytes);
        rec_bytes = malloc(need);
        ck_assert_ptr_nonnull(rec_bytes);
        rec_cap = need;
    }
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 8; k++)
            rec_bytes[1 + (size_t)i * 8 + k] = (uint8_t)(v[i] >> (8 * k));
    return rec_bytes + 1;
}

/* Parses "i1@0 i2@5 o2@7 o1@10" (enter/exit, method id, '@', µs). */
static uint32_t parse_recs(const char *s, uint64_t *v, uint32_t max)
{
    uint32_t n = 0;
    while (*s) {
        if (*s == ' ') {
            s++;
            continue;
        }
        ck_assert(*s == 'i' || *s == 'o');
        int is_exit = *s++ == 'o';
        char *e;
        unsigned long m = strtoul(s, &e, 10);
        ck_assert(*e == '@');
        unsigned long long ts = strtoull(e + 1, &e, 10);
        ck_assert_uint_lt(n, max);
        v[n++] = bl_rec_make(is_exit, (uint32_t)m, ts);
        s = e;
    }
    return n;
}

static bl_calltree T;

/* Builds T from the text form. */
static bl_err build_s(const char *s, int truncated)
{
    uint64_t v[256];
    uint32_t n = parse_recs(s, v, 256);
    return bl_calltree_build(&T, encode(v, n), n, truncated);
}

#define ROOT BL_CALL_ROOT
#define INC BL_CALL_INCOMPLETE
#define SYN BL_CALL_SYNTH_ENTER
#define UNB BL_CALL_UNBALANCED

/* Asserts every field of call i. */
#define CALL(i, m, par, dep, fl, st, en, se) call_is(__LINE__, i, m, par, dep, fl, st, en, se)
static void call_is(int line, uint32_t i, uint32_t m, uint32_t parent, uint32_t depth,
                    uint32_t flags, uint64_t start, uint64_t end, uint64_t self)
{
    ck_assert_msg(i < T.n_calls, "line %d: call %u of %u", line, i, T.n_calls);
    const bl_call *c = &T.calls[i];
    ck_assert_msg(c->method_id == m && c->parent == parent && c->depth == depth &&
                      c->flags == flags && c->start_us == start && c->end_us == end &&
                      c->self_us == self,
                  "line %d: call %u is {m %u parent %u depth %u flags %u %llu..%llu self %llu}",
                  line, i, c->method_id, c->parent, c->depth, c->flags,
                  (unsigned long long)c->start_us, (unsigned long long)c->end_us,
                  (unsigned long long)c->self_us);
}

static void setup(void)
{
    bl_calltree_init(&T);
}

static void teardown(void)
{
    bl_calltree_cleanup(&T);
    free(rec_bytes);
    rec_bytes = NULL;
    rec_cap = 0;
}

/* ------------------------------------------------------------------------ */
/* Reference: naive, with explicit child lists, a linear stack search,
 * adoption by re-linking, and depth/self computed at the end by recursion. */

typedef struct ref {
    bl_call *calls;
    uint32_t n;
    uint64_t malformed;
    bl_err err;
    uint32_t *kid, *sib;     /* first child / next sibling, UINT32_MAX = none */
} ref;

typedef struct rframe {
    uint32_t m;
    uint64_t start;
    uint32_t kids, kids_tail;
} rframe;

static void ref_link(ref *r, uint32_t *head, uint32_t *tail, uint32_t c)
{
    r->sib[c] = UINT32_MAX;
    if (*head == UINT32_MAX)
        *head = c;
    else
        r->sib[*tail] = c;
    *tail = c;
}

static void ref_close(ref *r, rframe *st, uint32_t *sp, uint32_t *rh, uint32_t *rt,
                      uint64_t end, uint32_t flags)
{
    rframe f = st[--*sp];
    uint32_t c = r->n++;
    r->calls[c] = (bl_call){ .method_id = f.m, .flags = flags, .start_us = f.start, .end_us = end };
    r->kid[c] = f.kids;
    for (uint32_t k = f.kids; k != UINT32_MAX; k = r->sib[k])
        r->calls[k].parent = c;
    if (*sp)
        ref_link(r, &st[*sp - 1].kids, &st[*sp - 1].kids_tail, c);
    else
        ref_link(r, rh, rt, c);
}

static void ref_finish(ref *r, uint32_t c, uint32_t depth)
{
    bl_call *x = &r->calls[c];
    x->depth = depth;
    if (depth >= BL_CALLTREE_MAX_DEPTH)
        r->err = BL_ETOOBIG;
    x->self_us = x->end_us - x->start_us;
    for (uint32_t k = r->kid[c]; k != UINT32_MAX; k = r->sib[k]) {
        x->self_us -= r->calls[k].end_us - r->calls[k].start_us;
        ref_finish(r, k, depth + 1);
    }
}

static void ref_build(const uint64_t *v, uint32_t n, int truncated, ref *r)
{
    memset(r, 0, sizeof *r);
    r->calls = calloc(n + 1, sizeof *r->calls);
    r->kid = malloc((n + 1) * sizeof *r->kid);
    r->sib = malloc((n + 1) * sizeof *r->sib);
    rframe *st = malloc((n + 1) * sizeof *st);
    ck_assert(r->calls && r->kid && r->sib && st);
    uint32_t sp = 0, rh = UINT32_MAX, rt = UINT32_MAX;
    uint64_t first = n ? bl_rec_time(v[0]) : 0, prev = first;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        uint64_t now = bl_rec_time(v[i]);
        int bad = 0;
        if (now < prev) {
            now = prev;
            bad = 1;
        }
        prev = now;
        uint32_t m = bl_rec_method(v[i]);
        if (!bl_rec_is_exit(v[i])) {
            if (sp == BL_CALLTREE_MAX_DEPTH) {
                r->err = BL_ETOOBIG;
                break;
            }
            st[sp++] = (rframe){ m, now, UINT32_MAX, UINT32_MAX };
        } else if (sp == 0) {
            bad |= !truncated;
            uint32_t c = r->n++;
            r->calls[c] = (bl_call){ .method_id = m, .flags = BL_CALL_SYNTH_ENTER,
                                     .start_us = first, .end_us = now };
            r->kid[c] = rh;
            for (uint32_t k = rh; k != UINT32_MAX; k = r->sib[k])
                r->calls[k].parent = c;
            rh = rt = UINT32_MAX;
            ref_link(r, &rh, &rt, c);
        } else {
            uint32_t at = sp;
            while (at > 0 && st[at - 1].m != m)
                at--;
            if (at == 0) {
                bad = 1;   /* st[at - 1] would be the match: there is none */
            } else {
                bad |= at != sp;
                while (sp > at)
                    ref_close(r, st, &sp, &rh, &rt, now, BL_CALL_UNBALANCED);
                ref_close(r, st, &sp, &rh, &rt, now, 0);
            }
        }
        r->malformed += bad;
    }
    while (!r->err && sp)
        ref_close(r, st, &sp, &rh, &rt, prev, BL_CALL_INCOMPLETE);
    for (uint32_t k = rh; !r->err && k != UINT32_MAX; k = r->sib[k]) {
        r->calls[k].parent = BL_CALL_ROOT;
        ref_finish(r, k, 0);
    }
    free(st);
}

static void ref_free(ref *r)
{
    free(r->calls);
    free(r->kid);
    free(r->sib);
}

/* Builds v with both implementations and asserts they agree exactly.
 * Returns the number of calls. */
static uint32_t check_against_ref(const uint64_t *v, uint32_t n, int truncated)
{
    ref r;
    ref_build(v, n, truncated, &r);
    bl_err err = bl_calltree_build(&T, encode(v, n), n, truncated);
    ck_assert_int_eq(err, r.err);
    uint32_t got = 0;
    if (!err) {
        ck_assert_uint_eq(T.n_calls, r.n);
        ck_assert_uint_eq(T.malformed, r.malformed);
        for (uint32_t i = 0; i < r.n; i++) {
            const bl_call *a = &T.calls[i], *b = &r.calls[i];
            if (a->method_id != b->method_id || a->parent != b->parent ||
                a->depth != b->depth || a->flags != b->flags || a->start_us != b->start_us ||
                a->end_us != b->end_us || a->self_us != b->self_us)
                ck_abort_msg("call %u: got {m %u p %u d %u f %u %llu..%llu self %llu}, "
                             "want {m %u p %u d %u f %u %llu..%llu self %llu}",
                             i, a->method_id, a->parent, a->depth, a->flags,
                             (unsigned long long)a->start_us, (unsigned long long)a->end_us,
                             (unsigned long long)a->self_us, b->method_id, b->parent, b->depth,
                             b->flags, (unsigned long long)b->start_us,
                             (unsigned long long)b->end_us, (unsigned long long)b->self_us);
        }
        got = r.n;
    }
    ref_free(&r);
    return got;
}

static uint64_t rng;
static uint32_t rnd(uint32_t below)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % below);
}

/* A balanced sequence of n records (n even): random nesting up to ~60 deep,
 * methods from a small set (so recursion is common), time steps of
 * min_step..min_step+4 µs. *open_at (if not NULL) gets the number of frames
 * open just before record `cut`. */
static void gen_balanced(uint64_t *v, uint32_t n, uint32_t min_step, uint32_t *open_at,
                         uint32_t cut)
{
    uint32_t *st = malloc(n * sizeof *st);
    ck_assert_ptr_nonnull(st);
    uint32_t sp = 0, k = 0;
    uint64_t now = rnd(1000);
    while (k < n) {
        if (k == cut && open_at)
            *open_at = sp;
        int can_enter = k + sp + 2 <= n && sp < 60;
        now += min_step + rnd(5);
        if (sp && (!can_enter || rnd(100) < 50)) {
            sp--;
            v[k++] = bl_rec_make(1, st[sp], now);
        } else {
            st[sp] = rnd(24);
            v[k++] = bl_rec_make(0, st[sp++], now);
        }
    }
    ck_assert_uint_eq(sp, 0);
    free(st);
}

/* ------------------------------------------------------------------------ */
/* Segments: calls that span batches (carried enters, continues)            */

#define CAR BL_CALL_CARRIED
#define CON BL_CALL_CONTINUES

static bl_err build_seg(const char *s, uint32_t carried, uint64_t since, int continues)
{
    uint64_t v[256];
    uint32_t n = parse_recs(s, v, 256);
    bl_segment seg = { .continues = continues, .n_carried = carried, .since_us = since };
    return bl_calltree_build_segment(&T, encode(v, n), n, &seg);
}

START_TEST(segments_worked_example)
{
    /* one run, 1 [0,70] ( 2 [10,50] ( 3 [15,25], 4 [30,40] ) ), cut at 25 */
    ck_assert_int_eq(build_seg("i1@0 i2@10 i3@15 o3@25", 0, 0, 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 3);
    CALL(0, 3, 1, 2, 0, 15, 25, 10);
    CALL(1, 2, 2, 1, CON, 10, 25, 5);      /* open: self up to the cut only */
    CALL(2, 1, ROOT, 0, CON, 0, 25, 10);
    ck_assert_int_eq(build_seg("i1@0 i2@10 i4@30 o4@40 o2@50 o1@70", 2, 25, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 3);
    CALL(0, 4, 1, 2, 0, 30, 40, 10);
    CALL(1, 2, 2, 1, CAR, 10, 50, 15);     /* inclusive from the original enter */
    CALL(2, 1, ROOT, 0, CAR, 0, 70, 20);
    ck_assert_uint_eq(T.malformed, 0);
    /* self 5 + 15 = 20 and 10 + 20 = 30: those of the uncut run */
    ck_assert_int_eq(build_s("i1@0 i2@10 i3@15 o3@25 i4@30 o4@40 o2@50 o1@70", 0), BL_OK);
    CALL(2, 2, 3, 1, 0, 10, 50, 20);
    CALL(3, 1, ROOT, 0, 0, 0, 70, 30);
}
END_TEST

START_TEST(segments_edge_cases)
{
    /* only carried enters: nothing happened in the window */
    ck_assert_int_eq(build_seg("i1@0 i2@10", 2, 90, 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 2);
    CALL(0, 2, 1, 1, CAR | CON, 10, 90, 0);
    CALL(1, 1, ROOT, 0, CAR | CON, 0, 90, 0);
    /* a record before since is raised to it (malformed) */
    ck_assert_int_eq(build_seg("i1@0 o1@20", 1, 50, 0), BL_OK);
    CALL(0, 1, ROOT, 0, CAR, 0, 50, 0);
    ck_assert_uint_eq(T.malformed, 1);
    /* an exit among the carried records ends the carried run */
    ck_assert_int_eq(build_seg("i1@0 o1@60 i2@70 o2@80", 3, 50, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 2);
    CALL(0, 1, ROOT, 0, CAR, 0, 60, 10);
    CALL(1, 2, ROOT, 0, 0, 70, 80, 10);
    /* after the carried calls close, a lost enter starts at since */
    ck_assert_int_eq(build_seg("i1@0 o1@60 o9@100", 1, 50, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 2);
    CALL(0, 1, 1, 1, CAR, 0, 60, 10);
    CALL(1, 9, ROOT, 0, SYN, 50, 100, 40);
    /* n_carried larger than the records */
    ck_assert_int_eq(build_seg("i1@0", 5, 10, 1), BL_OK);
    CALL(0, 1, ROOT, 0, CAR | CON, 0, 10, 0);
}
END_TEST

/* Per-method totals: count and inclusive time of finished calls, self time
 * of all. */
typedef struct mtot {
    uint64_t count, incl, self;
} mtot;

static void add_tree(mtot *t)
{
    for (uint32_t i = 0; i < T.n_calls; i++) {
        const bl_call *c = &T.calls[i];
        ck_assert_uint_lt(c->method_id, 24);
        if (!(c->flags & BL_CALL_CONTINUES)) {
            t[c->method_id].count++;
            t[c->method_id].incl += c->end_us - c->start_us;
        }
        t[c->method_id].self += c->self_us;
    }
}

START_TEST(segments_random_cuts)
{
    /* a balanced run cut into segments the way a runtime dumps it: each
     * segment re-states the open calls (carried) and says where the
     * previous one ended; every method's count, inclusive and self time
     * summed over the segments equal those of the uncut run */
    uint32_t n = 20000;
    uint64_t *v = malloc(n * sizeof *v), *seg = malloc((n + 64) * sizeof *seg);
    uint32_t *open = malloc(64 * sizeof *open);
    ck_assert(v && seg && open);
    for (uint64_t round = 1; round <= 40; round++) {
        rng = round * 0x9E3779B97F4A7C15ull;
        gen_balanced(v, n, 0, NULL, 0);
        mtot whole[24] = { { 0 } }, parts[24] = { { 0 } };
        ck_assert_int_eq(bl_calltree_build(&T, encode(v, n), n, 0), BL_OK);
        add_tree(whole);
        uint32_t sp = 0, at = 0;
        uint64_t since = 0;
        while (at < n) {
            uint32_t len = 1 + rnd(round % 4 == 0 ? 5 : 3000);
            if (len > n - at)
                len = n - at;
            uint32_t k = 0;
            for (uint32_t d = 0; d < sp; d++)   /* carried enters, original times */
                seg[k++] = v[open[d]];
            uint32_t carried = k;
            for (uint32_t i = at; i < at + len; i++) {
                seg[k++] = v[i];
                if (bl_rec_is_exit(v[i]))
                    sp--;
                else
                    open[sp++] = i;
            }
            bl_segment sg = { .continues = at + len < n, .n_carried = carried,
                              .since_us = carried ? since : 0 };
            ck_assert_int_eq(bl_calltree_build_segment(&T, encode(seg, k), k, &sg), BL_OK);
            ck_assert_uint_eq(T.malformed, 0);
            add_tree(parts);
            since = bl_rec_time(v[at + len - 1]);
            at += len;
        }
        for (int m = 0; m < 24; m++) {
            ck_assert_uint_eq(parts[m].count, whole[m].count);
            ck_assert_uint_eq(parts[m].incl, whole[m].incl);
            ck_assert_uint_eq(parts[m].self, whole[m].self);
        }
    }
    free(v);
    free(seg);
    free(open);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Exact cases                                                               */

START_TEST(empty_input)
{
    ck_assert_int_eq(bl_calltree_build(&T, NULL, 0, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 0);
    ck_assert_uint_eq(T.malformed, 0);
    ck_assert_int_eq(bl_calltree_build(&T, NULL, 0, 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 0);
}
END_TEST

START_TEST(single_record)
{
    ck_assert_int_eq(build_s("i7@100", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 1);
    CALL(0, 7, ROOT, 0, INC, 100, 100, 0);
    ck_assert_uint_eq(T.malformed, 0);

    ck_assert_int_eq(build_s("o7@100", 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 1);
    CALL(0, 7, ROOT, 0, SYN, 100, 100, 0);
    ck_assert_uint_eq(T.malformed, 0);

    ck_assert_int_eq(build_s("o7@100", 0), BL_OK);   /* lost enter, not truncated */
    CALL(0, 7, ROOT, 0, SYN, 100, 100, 0);
    ck_assert_uint_eq(T.malformed, 1);
}
END_TEST

START_TEST(simple_nesting)
{
    /* 1 [0,100]: 2 [10,40] (3 [15,25]), 4 [50,90]; then 5 [100,130] */
    ck_assert_int_eq(build_s("i1@0 i2@10 i3@15 o3@25 o2@40 i4@50 o4@90 o1@100 i5@100 o5@130", 0),
                     BL_OK);
    ck_assert_uint_eq(T.n_calls, 5);
    CALL(0, 3, 1, 2, 0, 15, 25, 10);
    CALL(1, 2, 3, 1, 0, 10, 40, 20);
    CALL(2, 4, 3, 1, 0, 50, 90, 40);
    CALL(3, 1, ROOT, 0, 0, 0, 100, 30);
    CALL(4, 5, ROOT, 0, 0, 100, 130, 30);
    ck_assert_uint_eq(T.malformed, 0);
}
END_TEST

START_TEST(recursion)
{
    /* A→A→A: each exit closes the innermost A */
    ck_assert_int_eq(build_s("i9@0 i9@5 i9@7 o9@8 o9@20 i9@21 o9@22 o9@30", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 4);
    CALL(0, 9, 1, 2, 0, 7, 8, 1);
    CALL(1, 9, 3, 1, 0, 5, 20, 14);
    CALL(2, 9, 3, 1, 0, 21, 22, 1);
    CALL(3, 9, ROOT, 0, 0, 0, 30, 14);
    ck_assert_uint_eq(T.malformed, 0);
}
END_TEST

START_TEST(exception_unwind)
{
    /* 1 calls 2 calls 3 calls 4; 4 throws at 50, the exception passes
     * through 4, 3 and 2 (the instrumenter emits their exits at 50, 50, 51)
     * and is caught in 1, which calls 5 and returns. */
    ck_assert_int_eq(build_s("i1@0 i2@10 i3@20 i4@30 o4@50 o3@50 o2@51 i5@60 o5@70 o1@80", 0),
                     BL_OK);
    ck_assert_uint_eq(T.n_calls, 5);
    CALL(0, 4, 1, 3, 0, 30, 50, 20);
    CALL(1, 3, 2, 2, 0, 20, 50, 10);
    CALL(2, 2, 4, 1, 0, 10, 51, 11);
    CALL(3, 5, 4, 1, 0, 60, 70, 10);
    CALL(4, 1, ROOT, 0, 0, 0, 80, 80 - 41 - 10);
    ck_assert_uint_eq(T.malformed, 0);
}
END_TEST

START_TEST(truncated_one_lost_enter)
{
    /* the ring starts inside method 8: two calls complete before its exit */
    ck_assert_int_eq(build_s("i1@10 i2@12 o2@14 o1@20 i3@25 o3@30 o8@40 i4@41 o4@45", 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 5);
    CALL(0, 2, 1, 2, 0, 12, 14, 2);
    CALL(1, 1, 3, 1, 0, 10, 20, 8);
    CALL(2, 3, 3, 1, 0, 25, 30, 5);
    CALL(3, 8, ROOT, 0, SYN, 10, 40, 15);   /* 30 − 10 − 5 */
    CALL(4, 4, ROOT, 0, 0, 41, 45, 4);
    ck_assert_uint_eq(T.malformed, 0);
}
END_TEST

START_TEST(truncated_two_lost_enters)
{
    /* lost: Q(9) called P(8); P's exit adopts 1; Q's exit adopts P and 4 */
    const char *s = "i1@10 i2@12 o2@14 o1@20 o8@30 i4@31 o4@35 o9@50 i5@55";
    ck_assert_int_eq(build_s(s, 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 6);
    CALL(0, 2, 1, 3, 0, 12, 14, 2);
    CALL(1, 1, 2, 2, 0, 10, 20, 8);
    CALL(2, 8, 4, 1, SYN, 10, 30, 10);
    CALL(3, 4, 4, 1, 0, 31, 35, 4);
    CALL(4, 9, ROOT, 0, SYN, 10, 50, 16);   /* 40 − 20 − 4 */
    CALL(5, 5, ROOT, 0, INC, 55, 55, 0);
    ck_assert_uint_eq(T.malformed, 0);

    /* the same records when the ring is not marked truncated: same tree,
     * both lost enters counted */
    ck_assert_int_eq(build_s(s, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 6);
    CALL(4, 9, ROOT, 0, SYN, 10, 50, 16);
    ck_assert_uint_eq(T.malformed, 2);

    /* lost exits in a row, no completed calls in between */
    ck_assert_int_eq(build_s("i1@5 o1@6 o2@7 o3@9", 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 3);
    CALL(0, 1, 1, 2, 0, 5, 6, 1);
    CALL(1, 2, 2, 1, SYN, 5, 7, 1);
    CALL(2, 3, ROOT, 0, SYN, 5, 9, 2);
}
END_TEST

START_TEST(open_at_end)
{
    /* 1 and 2 never exit: closed at the last timestamp (77), which is the
     * exit of 3 */
    ck_assert_int_eq(build_s("i1@0 i2@10 i3@20 o3@77", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 3);
    CALL(0, 3, 1, 2, 0, 20, 77, 57);
    CALL(1, 2, 2, 1, INC, 10, 77, 10);
    CALL(2, 1, ROOT, 0, INC, 0, 77, 10);
    ck_assert_uint_eq(T.malformed, 0);
}
END_TEST

START_TEST(unbalanced_exit)
{
    /* 3's and 2's exits are missing: 1's exit at 60 closes both */
    ck_assert_int_eq(build_s("i1@0 i2@10 i3@20 i4@25 o4@30 o1@60 i5@61 o5@62", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 5);
    CALL(0, 4, 1, 3, 0, 25, 30, 5);
    CALL(1, 3, 2, 2, UNB, 20, 60, 35);
    CALL(2, 2, 3, 1, UNB, 10, 60, 10);
    CALL(3, 1, ROOT, 0, 0, 0, 60, 10);
    CALL(4, 5, ROOT, 0, 0, 61, 62, 1);
    ck_assert_uint_eq(T.malformed, 1);   /* one bad record */

    /* in recursion the exit closes the topmost matching frame */
    ck_assert_int_eq(build_s("i1@0 i2@1 i1@2 i3@3 o1@4 o2@5 o1@6", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 4);
    CALL(0, 3, 1, 3, UNB, 3, 4, 1);
    CALL(1, 1, 2, 2, 0, 2, 4, 1);
    CALL(2, 2, 3, 1, 0, 1, 5, 2);
    CALL(3, 1, ROOT, 0, 0, 0, 6, 2);
    ck_assert_uint_eq(T.malformed, 1);
}
END_TEST

START_TEST(ignored_exit)
{
    /* the exits of 7 (at 20) and 8 (at 45) match no open frame */
    ck_assert_int_eq(build_s("i1@0 i2@10 o7@20 i3@30 o3@40 o8@45 o2@50 o1@100", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 3);
    CALL(0, 3, 1, 2, 0, 30, 40, 10);
    CALL(1, 2, 2, 1, 0, 10, 50, 30);
    CALL(2, 1, ROOT, 0, 0, 0, 100, 60);
    ck_assert_uint_eq(T.malformed, 2);

    /* ignored on a non-empty stack even when the ring is truncated */
    ck_assert_int_eq(build_s("i1@0 o7@20 o1@30", 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 1);
    CALL(0, 1, ROOT, 0, 0, 0, 30, 30);
    ck_assert_uint_eq(T.malformed, 1);
}
END_TEST

START_TEST(decreasing_timestamps)
{
    /* 2 enters "before" 1 and exits "before" it entered: both are clamped to
     * the previous timestamp, durations never go negative */
    ck_assert_int_eq(build_s("i1@100 i2@90 o2@95 i3@120 o3@110 o1@200", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 3);
    CALL(0, 2, 2, 1, 0, 100, 100, 0);
    CALL(1, 3, 2, 1, 0, 120, 120, 0);
    CALL(2, 1, ROOT, 0, 0, 100, 200, 100);
    ck_assert_uint_eq(T.malformed, 3);

    /* a record that goes backwards and also breaks another rule counts once */
    ck_assert_int_eq(build_s("i1@100 o7@50 o1@150", 0), BL_OK);
    CALL(0, 1, ROOT, 0, 0, 100, 150, 150 - 100);
    ck_assert_uint_eq(T.malformed, 1);

    /* the last timestamp of a thread whose clock went back is the highest */
    ck_assert_int_eq(build_s("i1@100 i2@300 o2@200", 0), BL_OK);
    CALL(0, 2, 1, 1, 0, 300, 300, 0);
    CALL(1, 1, ROOT, 0, INC, 100, 300, 200);
    ck_assert_uint_eq(T.malformed, 1);
}
END_TEST

START_TEST(depth_limit)
{
    uint32_t max = BL_CALLTREE_MAX_DEPTH;
    uint64_t *v = malloc((size_t)(max + 2) * sizeof *v);
    ck_assert_ptr_nonnull(v);

    /* exactly MAX_DEPTH open frames: fine, all incomplete */
    for (uint32_t i = 0; i < max; i++)
        v[i] = bl_rec_make(0, i & 1023, i);
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, max), max, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, max);
    CALL(0, (max - 1) & 1023, 1, max - 1, INC, max - 1, max - 1, 0);
    CALL(1, (max - 2) & 1023, 2, max - 2, INC, max - 2, max - 1, 1);
    CALL(max - 1, 0, ROOT, 0, INC, 0, max - 1, 1);

    /* one more: BL_ETOOBIG, and nothing is left in the tree */
    v[max] = bl_rec_make(0, 5, max);
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, max + 1), max + 1, 0), BL_ETOOBIG);
    ck_assert_uint_eq(T.n_calls, 0);

    /* lost enters count as stack too: a call under MAX_DEPTH − 1 lost
     * frames is at depth MAX_DEPTH − 1, under MAX_DEPTH it is too deep */
    v[0] = bl_rec_make(0, 1, 0);
    v[1] = bl_rec_make(1, 1, 1);
    for (uint32_t i = 2; i < max + 2; i++)
        v[i] = bl_rec_make(1, 2, i);
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, max + 1), max + 1, 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, max);
    CALL(0, 1, 1, max - 1, 0, 0, 1, 1);
    CALL(max - 1, 2, ROOT, 0, SYN, 0, max, 1);
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, max + 2), max + 2, 1), BL_ETOOBIG);
    ck_assert_uint_eq(T.n_calls, 0);

    /* the tree is still usable after an error */
    ck_assert_int_eq(build_s("i1@0 o1@5", 0), BL_OK);
    CALL(0, 1, ROOT, 0, 0, 0, 5, 5);
    free(v);
}
END_TEST

START_TEST(deep_unmatched_exits)
{
    /* 200 open frames, deeper than a linear scan is allowed to go: frame d
     * is method 1000 + d entered at d, except method 7 at depths 40 and 120.
     * Then five exits, each breaking a rule (the method index path): */
    uint64_t v[210];
    uint32_t n = 0;
    for (uint32_t d = 0; d < 200; d++)
        v[n++] = bl_rec_make(0, d == 40 || d == 120 ? 7 : 1000 + d, d);
    v[n++] = bl_rec_make(1, 5, 300);    /* absent: ignored */
    v[n++] = bl_rec_make(1, 7, 310);    /* closes 199..121, then 7 at 120 */
    v[n++] = bl_rec_make(1, 4242, 320); /* absent: ignored */
    v[n++] = bl_rec_make(1, 1010, 330); /* closes 119..11 (7 at 40 too), then 10 */
    v[n++] = bl_rec_make(1, 1000, 340); /* closes 9..1, then 0 (a short scan) */
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, n), n, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 200);
    ck_assert_uint_eq(T.malformed, 5);
    CALL(0, 1199, 1, 199, UNB, 199, 310, 111);
    CALL(78, 1121, 79, 121, UNB, 121, 310, 1);
    CALL(79, 7, 80, 120, 0, 120, 310, 1);
    CALL(80, 1119, 81, 119, UNB, 119, 330, 211 - 190);
    CALL(159, 7, 160, 40, UNB, 40, 330, 1);
    CALL(188, 1011, 189, 11, UNB, 11, 330, 1);
    CALL(189, 1010, 190, 10, 0, 10, 330, 1);
    CALL(190, 1009, 191, 9, UNB, 9, 340, 331 - 320);
    CALL(199, 1000, ROOT, 0, 0, 0, 340, 1);
    /* all of it against the reference, truncated or not */
    ck_assert_uint_eq(check_against_ref(v, n, 0), 200);
    ck_assert_uint_eq(check_against_ref(v, n, 1), 200);

    /* frames pushed after the index was built are added to it on the next
     * lookup: 3 more frames on top of 40 (the index covers 40), then exits
     * of 1002 (pushed later, found), and of 1020 (indexed earlier) */
    n = 0;
    for (uint32_t d = 0; d < 40; d++)
        v[n++] = bl_rec_make(0, 1000 + d, d);
    v[n++] = bl_rec_make(1, 5, 50);     /* builds the index: ignored */
    for (uint32_t d = 0; d < 3; d++)
        v[n++] = bl_rec_make(0, 1000 + d, 60 + d);
    v[n++] = bl_rec_make(1, 1001, 70);  /* frame 41 */
    v[n++] = bl_rec_make(1, 1020, 80);  /* frame 20 */
    v[n++] = bl_rec_make(1, 1001, 90);  /* frame 1 */
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, n), n, 0), BL_OK);
    ck_assert_uint_eq(T.malformed, 4);
    CALL(0, 1002, 1, 42, UNB, 62, 70, 8);
    CALL(1, 1001, 2, 41, 0, 61, 70, 1);
    CALL(2, 1000, 3, 40, UNB, 60, 80, 20 - 9);
    CALL(21, 1021, 22, 21, UNB, 21, 80, 1);
    CALL(22, 1020, 23, 20, 0, 20, 80, 1);
    CALL(41, 1001, 42, 1, 0, 1, 90, 1);
    CALL(23, 1019, 24, 19, UNB, 19, 90, 71 - 60);
    CALL(42, 1000, ROOT, 0, INC, 0, 90, 1);
    ck_assert_uint_eq(check_against_ref(v, n, 0), 43);
}
END_TEST

START_TEST(index_after_error)
{
    /* a build that fails with the method index in use leaves no stale
     * entries behind: 40 frames (methods 0..39), an unmatched exit builds
     * the index, then the stack overflows */
    uint32_t n = BL_CALLTREE_MAX_DEPTH + 2;
    uint64_t *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (uint32_t d = 0; d < 40; d++)
        v[d] = bl_rec_make(0, d, d);
    v[40] = bl_rec_make(1, 99, 40);
    for (uint32_t i = 41; i < n; i++)
        v[i] = bl_rec_make(0, 50, i);
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, n), n, 0), BL_ETOOBIG);
    /* now 40 frames of other methods: an exit of 20 matches nothing */
    for (uint32_t d = 0; d < 40; d++)
        v[d] = bl_rec_make(0, 1000 + d, d);
    v[40] = bl_rec_make(1, 20, 40);
    v[41] = bl_rec_make(1, 1039, 41);
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, 42), 42, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 40);
    ck_assert_uint_eq(T.malformed, 1);
    CALL(0, 1039, 1, 39, 0, 39, 41, 2);
    CALL(1, 1038, 2, 38, INC, 38, 41, 1);
    free(v);
}
END_TEST

START_TEST(large_times)
{
    /* 40-bit timestamps near the top of their range, hours-long calls */
    uint64_t top = BL_REC_T_MASK;
    uint64_t v[] = {
        bl_rec_make(0, 1, top - 9000000000ull),
        bl_rec_make(0, 2, top - 8000000000ull),
        bl_rec_make(1, 2, top - 2000000000ull),
        bl_rec_make(1, 1, top - 1000000000ull),
        bl_rec_make(1, 3, top - 1),               /* lost enter */
        bl_rec_make(0, BL_REC_ID_MAX, top),
    };
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, 6), 6, 1), BL_OK);
    ck_assert_uint_eq(T.n_calls, 4);
    CALL(0, 2, 1, 2, 0, top - 8000000000ull, top - 2000000000ull, 6000000000ull);
    CALL(1, 1, 2, 1, 0, top - 9000000000ull, top - 1000000000ull, 2000000000ull);
    CALL(2, 3, ROOT, 0, SYN, top - 9000000000ull, top - 1, 1000000000ull - 1);
    CALL(3, BL_REC_ID_MAX, ROOT, 0, INC, top, top, 0);
    ck_assert_uint_eq(T.malformed, 0);
    check_against_ref(v, 6, 1);
}
END_TEST

START_TEST(growth_boundaries)
{
    /* every fill level of calls[] at which a storage grow or a nearly full
     * array can meet an enter or an exit: k enters, then n − k exits (of the
     * open methods, innermost first), n ≤ 300, on fresh and reused trees */
    uint64_t v[300];
    bl_calltree reused;
    bl_calltree_init(&reused);
    for (uint32_t n = 1; n <= 300; n++)
        for (uint32_t k = (n + 1) / 2; k <= n; k++) {
            for (uint32_t i = 0; i < n; i++)
                v[i] = i < k ? bl_rec_make(0, i, i) : bl_rec_make(1, 2 * k - 1 - i, i);
            ref r;
            ref_build(v, n, 0, &r);
            const uint8_t *p = encode(v, n);
            for (int pass = 0; pass < 2; pass++) {
                bl_calltree fresh;
                bl_calltree_init(&fresh);
                bl_calltree *t = pass ? &reused : &fresh;
                ck_assert_int_eq(bl_calltree_build(t, p, n, 0), BL_OK);
                if (t->n_calls != r.n || t->malformed != 0 ||
                    memcmp(t->calls, r.calls, r.n * sizeof *r.calls) != 0)
                    ck_abort_msg("n %u, k %u, %s tree: differs from the reference", n, k,
                                 pass ? "reused" : "fresh");
                bl_calltree_cleanup(&fresh);
            }
            ref_free(&r);
        }
    bl_calltree_cleanup(&reused);
}
END_TEST

START_TEST(reuse)
{
    /* big, small, big again: results equal a fresh tree's, storage kept */
    uint32_t n = 20000;
    uint64_t *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rng = 42;
    gen_balanced(v, n, 0, NULL, 0);
    check_against_ref(v, n, 0);
    uint32_t cap = T.cap_calls;
    bl_call *first = malloc(T.n_calls * sizeof *first);
    ck_assert_ptr_nonnull(first);
    uint32_t n1 = T.n_calls;
    memcpy(first, T.calls, n1 * sizeof *first);

    ck_assert_int_eq(build_s("i1@0 i2@1 o2@2 o1@3", 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, 2);
    CALL(0, 2, 1, 1, 0, 1, 2, 1);
    CALL(1, 1, ROOT, 0, 0, 0, 3, 2);
    ck_assert_uint_ge(T.cap_calls, cap);   /* never shrinks */

    ck_assert_int_eq(bl_calltree_build(&T, encode(v, n), n, 0), BL_OK);
    ck_assert_uint_eq(T.n_calls, n1);
    ck_assert_uint_eq(T.cap_calls, cap);
    ck_assert(memcmp(first, T.calls, n1 * sizeof *first) == 0);
    free(first);
    free(v);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Random sequences against the reference                                    */

START_TEST(random_balanced)
{
    uint32_t n = 400000;
    uint64_t *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (uint64_t seed = 1; seed <= 4; seed++) {
        rng = seed * 0x9E3779B97F4A7C15ull;
        gen_balanced(v, n, 0, NULL, 0);
        ck_assert_uint_eq(check_against_ref(v, n, 0), n / 2);
        ck_assert_uint_eq(T.malformed, 0);
        for (uint32_t i = 0; i < T.n_calls; i++)
            if (T.calls[i].flags)
                ck_abort_msg("call %u has flags %u", i, T.calls[i].flags);
    }
    free(v);
}
END_TEST

START_TEST(random_cut_ring)
{
    /* a balanced sequence with its head cut off, as a wrapped ring keeps
     * it: no malformed records, one synthesized call per frame open at the
     * cut, and every other call exactly as in the whole sequence (times are
     * strictly increasing here, so "entered after the cut" is start ≥ the
     * first kept timestamp) */
    uint32_t n = 100000;
    uint64_t *v = malloc(n * sizeof *v);
    bl_call *whole = malloc(n * sizeof *whole);
    ck_assert(v && whole);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rng = seed * 0xD1B54A32D192ED03ull;
        uint32_t cut = 1 + rnd(n - 1), open = 0;
        gen_balanced(v, n, 1, &open, cut);
        ck_assert_int_eq(bl_calltree_build(&T, encode(v, n), n, 0), BL_OK);
        uint32_t nw = T.n_calls;
        memcpy(whole, T.calls, nw * sizeof *whole);

        uint32_t nc = check_against_ref(v + cut, n - cut, 1);
        ck_assert_uint_eq(T.malformed, 0);
        uint64_t t_cut = bl_rec_time(v[cut]);
        uint32_t synth = 0, j = 0;
        for (uint32_t i = 0; i < nc; i++) {
            const bl_call *c = &T.calls[i];
            if (c->flags & BL_CALL_SYNTH_ENTER) {
                if (c->start_us != t_cut)
                    ck_abort_msg("call %u: synthesized enter at %llu", i,
                                 (unsigned long long)c->start_us);
                synth++;
                continue;
            }
            while (j < nw && whole[j].start_us < t_cut)
                j++;
            if (j == nw || c->flags || c->method_id != whole[j].method_id ||
                c->start_us != whole[j].start_us || c->end_us != whole[j].end_us ||
                c->self_us != whole[j].self_us)
                ck_abort_msg("call %u differs from the uncut sequence's", i);
            j++;
        }
        while (j < nw && whole[j].start_us < t_cut)
            j++;
        ck_assert_uint_eq(j, nw);
        ck_assert_uint_eq(synth, open);
        check_against_ref(v + cut, n - cut, 0);   /* the same, but malformed */
        ck_assert_uint_eq(T.malformed, open);
    }
    free(whole);
    free(v);
}
END_TEST

/* Damaged sequences: random enters and exits, deep stacks, absent methods,
 * clock steps backwards, truncated or not. */
START_TEST(random_damaged)
{
    uint32_t n = 60000;
    uint64_t *v = malloc(n * sizeof *v);
    uint32_t *st = malloc(n * sizeof *st);
    ck_assert(v && st);
    uint32_t indexed = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        rng = seed * 0x2545F4914F6CDD1Dull;
        uint32_t enter_pct = 40 + rnd(25);   /* > 50: stacks grow deep */
        uint32_t methods = 2 + rnd(seed % 3 ? 40 : 4000);
        uint32_t max_sp = seed % 4 ? 20 + rnd(200) : 3000;   /* shallow and deep */
        uint32_t sp = 0;
        uint64_t now = rnd(100);
        for (uint32_t k = 0; k < n; k++) {
            now += rnd(4);
            uint64_t ts = rnd(50) ? now : now - rnd((uint32_t)now + 1);   /* clock goes back */
            uint32_t dice = rnd(100);
            if (dice < enter_pct && sp < max_sp) {
                st[sp] = rnd(methods);
                v[k] = bl_rec_make(0, st[sp++], ts);
            } else if (sp && dice < 97) {   /* a well-formed exit */
                v[k] = bl_rec_make(1, st[--sp], ts);
            } else {                        /* any method: lost, deep or absent */
                uint32_t m = rnd(3) ? rnd(methods) : 100000 + rnd(1000);
                v[k] = bl_rec_make(1, m, ts);
                /* the real tree pops to the topmost frame of m, if any */
                for (uint32_t d = sp; d-- > 0;)
                    if (st[d] == m) {
                        sp = d;
                        break;
                    }
            }
        }
        check_against_ref(v, n, (int)(seed & 1));
        indexed += T.n_roots > 0;
    }
    /* white-box: the deep sequences did go through the method index */
    ck_assert_uint_ge(indexed, 10);
    free(st);
    free(v);
}
END_TEST


/* bl_calltree_nesting (the check made at POST, pipeline/aggregate.h) gives
 * exactly the rebuild's deepest depth + 1, on damaged input too: lost
 * enters (each makes the calls before it one level deeper), exits that
 * close deeper frames or match nothing, deep stacks (method index). */
static uint32_t rebuilt_nesting(const uint64_t *v, uint32_t n, int truncated)
{
    ck_assert_int_eq(bl_calltree_build(&T, encode(v, n), n, truncated), BL_OK);
    uint32_t m = 0;
    for (uint32_t i = 0; i < T.n_calls; i++)
        if (T.calls[i].depth + 1 > m)
            m = T.calls[i].depth + 1;
    return m;
}

START_TEST(nesting_matches_rebuild)
{
    uint32_t n = 20000;
    uint64_t *v = malloc(n * sizeof *v);
    uint32_t *st = malloc(n * sizeof *st);
    ck_assert(v && st);
    bl_segment seg = { 0 };
    uint32_t got;
    for (uint64_t seed = 1; seed <= 80; seed++) {
        rng = seed * 0x9E3779B97F4A7C15ull;
        uint32_t enter_pct = 35 + rnd(30);
        uint32_t methods = 2 + rnd(seed % 3 ? 30 : 3000);
        uint32_t max_sp = seed % 4 ? 10 + rnd(100) : 2000;
        uint32_t lost_pct = seed % 5 ? 1 : 20; /* exits with nothing open */
        uint32_t sp = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t dice = rnd(100);
            if (dice < enter_pct && sp < max_sp) {
                st[sp] = rnd(methods);
                v[k] = bl_rec_make(0, st[sp++], k);
            } else if (sp && dice < 95) {
                v[k] = bl_rec_make(1, st[--sp], k);
            } else if (!sp || rnd(100) < lost_pct) {
                v[k] = bl_rec_make(1, rnd(methods), k);
                for (uint32_t d = sp; d-- > 0;)
                    if (st[d] == (uint32_t)(bl_rec_method(v[k]))) {
                        sp = d;
                        break;
                    }
            } else {
                uint32_t m = rnd(2) ? rnd(methods) : 100000 + rnd(100);
                v[k] = bl_rec_make(1, m, k);
                for (uint32_t d = sp; d-- > 0;)
                    if (st[d] == m) {
                        sp = d;
                        break;
                    }
            }
        }
        uint32_t want = rebuilt_nesting(v, n, (int)(seed & 1));
        ck_assert_int_eq(bl_calltree_nesting(encode(v, n), n, &seg, BL_CALLTREE_MAX_DEPTH, &got),
                         BL_OK);
        ck_assert_uint_eq(got, want);
        ck_assert_int_eq(bl_calltree_nesting(encode(v, n), n, &seg, want, &got), BL_OK);
        ck_assert_int_eq(bl_calltree_nesting(encode(v, n), n, &seg, want - 1, &got), BL_ETOOBIG);
        ck_assert_uint_eq(got, want);
    }
    /* lost enters alone: k exits nest k deep */
    for (uint32_t k = 0; k < 3000; k++)
        v[k] = bl_rec_make(1, 7, k);
    ck_assert_uint_eq(rebuilt_nesting(v, 3000, 1), 3000);
    ck_assert_int_eq(bl_calltree_nesting(encode(v, 3000), 3000, &seg, 3000, &got), BL_OK);
    ck_assert_uint_eq(got, 3000);
    ck_assert_int_eq(bl_calltree_nesting(encode(v, 3000), 3000, &seg, 2999, &got), BL_ETOOBIG);
    ck_assert_int_eq(bl_calltree_nesting(NULL, 0, &seg, 1, &got), BL_OK);
    ck_assert_uint_eq(got, 0);
    free(st);
    free(v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calltree");
    TCase *tc = tcase_create("exact");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, empty_input);
    tcase_add_test(tc, single_record);
    tcase_add_test(tc, simple_nesting);
    tcase_add_test(tc, recursion);
    tcase_add_test(tc, exception_unwind);
    tcase_add_test(tc, truncated_one_lost_enter);
    tcase_add_test(tc, truncated_two_lost_enters);
    tcase_add_test(tc, open_at_end);
    tcase_add_test(tc, unbalanced_exit);
    tcase_add_test(tc, ignored_exit);
    tcase_add_test(tc, decreasing_timestamps);
    tcase_add_test(tc, depth_limit);
    tcase_add_test(tc, deep_unmatched_exits);
    tcase_add_test(tc, index_after_error);
    tcase_add_test(tc, large_times);
    tcase_add_test(tc, growth_boundaries);
    tcase_add_test(tc, reuse);
    tcase_add_test(tc, segments_worked_example);
    tcase_add_test(tc, segments_edge_cases);
    tcase_add_test(tc, segments_random_cuts);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("random");
    tcase_add_checked_fixture(tr, setup, teardown);
    tcase_add_test(tr, random_balanced);
    tcase_add_test(tr, random_cut_ring);
    tcase_add_test(tr, random_damaged);
    tcase_add_test(tr, nesting_matches_rebuild);
    suite_add_tcase(s, tr);
    return tu_run(s);
}
