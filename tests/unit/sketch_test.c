/*
 * sketch_test.c — the percentile sketch: bucket/midpoint consistency for
 * every small value, every bucket and random values over all of uint64; the
 * relative error bound; quantiles of known distributions against the exact
 * sorted-array quantile; exact merges; the serialised form and malformed
 * blobs; and a throughput print (no timing asserts).
 */
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "agg/sketch.h"
#include "testutil.h"

#define NB BL_SKETCH_BUCKETS

static uint64_t rng_state;

/* splitmix64 */
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A value whose magnitude is spread evenly over the 64 bit positions. */
static uint64_t rnd_any(void)
{
    return rnd() >> (rnd() % 64);
}

/* Exact quantile of a sorted array with the header's rank definition. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
    if (q >= 1.0)
        return sorted[n - 1];
    double r = q * (double)n;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r)
        rank++;
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* |a - b| <= b * num / den, in integers */
static int within(uint64_t a, uint64_t b, uint64_t num, uint64_t den)
{
    uint64_t d = a > b ? a - b : b - a;
    return (unsigned __int128)d * den <= (unsigned __int128)b * num;
}

/* Everything observable about a sketch, for "nothing changed" checks. */
typedef struct snap {
    uint64_t count, max, sum;
    uint32_t lo, hi;
    int has_buckets;
    uint64_t bucket[NB];
} snap;

static void take(const bl_sketch *s, snap *o)
{
    o->count = s->count;
    o->max = s->max;
    o->sum = s->sum;
    o->lo = s->lo;
    o->hi = s->hi;
    o->has_buckets = s->bucket != NULL;
    if (s->bucket)
        memcpy(o->bucket, s->bucket, sizeof o->bucket);
    else
        memset(o->bucket, 0, sizeof o->bucket);
}

static int same(const snap *a, const snap *b)
{
    return a->count == b->count && a->max == b->max && a->sum == b->sum && a->lo == b->lo &&
           a->hi == b->hi && a->has_buckets == b->has_buckets &&
           !memcmp(a->bucket, b->bucket, sizeof a->bucket);
}

static snap snap_a, snap_b;

/* Checks the invariants in sketch.c's header comment. */
static void check_invariants(const bl_sketch *s)
{
    if (!s->count) {
        uint64_t total = 0;
        for (uint32_t b = 0; s->bucket && b < NB; b++)
            total += s->bucket[b];
        ck_assert_uint_eq(total, 0);
        return;
    }
    ck_assert_ptr_nonnull(s->bucket);
    ck_assert_uint_le(s->lo, s->hi);
    ck_assert_uint_lt(s->hi, NB);
    ck_assert_uint_ne(s->bucket[s->lo], 0);
    ck_assert_uint_ne(s->bucket[s->hi], 0);
    uint64_t total = 0, outside = 0;
    for (uint32_t b = 0; b < NB; b++) {
        if (b < s->lo || b > s->hi)
            outside += s->bucket[b];
        total += s->bucket[b];
    }
    ck_assert_uint_eq(outside, 0);
    ck_assert_uint_eq(total, s->count);
}

/* ---- buckets ----------------------------------------------------------- */

START_TEST(small_values)
{
    /* values below 2^7 have buckets of their own */
    for (uint64_t v = 0; v < 128; v++) {
        ck_assert_uint_eq(bl_sketch_bucket(v), v);
        ck_assert_uint_eq(bl_sketch_bucket_mid((uint32_t)v), v);
    }
    /* every value up to 2^20: in its bucket, monotone, contiguous (Check
     * only on failure: each passing ck_assert costs a syscall) */
    uint32_t prev = 0;
    for (uint64_t v = 0; v <= (1u << 20); v++) {
        uint32_t b = bl_sketch_bucket(v);
        uint64_t mid = bl_sketch_bucket_mid(b);
        if (!(b == prev || b == prev + 1) || bl_sketch_bucket(mid) != b || !within(mid, v, 1, 128))
            ck_abort_msg("v=%llu: bucket %u (previous %u), mid %llu", (unsigned long long)v,
                         (unsigned)b, (unsigned)prev, (unsigned long long)mid);
        prev = b;
    }
    ck_assert_uint_eq(bl_sketch_bucket(128), 128);
    ck_assert_uint_eq(bl_sketch_bucket(129), 128);
    ck_assert_uint_eq(bl_sketch_bucket(130), 129);
    ck_assert_uint_eq(bl_sketch_bucket_mid(128), 129);
    ck_assert_uint_eq(bl_sketch_bucket(UINT64_MAX), NB - 1);
}
END_TEST

/* bl_sketch_add_buckets: the same buckets, count and bytes as adding the
 * values themselves, into an empty or a used sketch; an index out of range
 * adds nothing */
START_TEST(add_buckets)
{
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 50; round++) {
        bl_sketch a, b;
        bl_sketch_init(&a);
        bl_sketch_init(&b);
        uint16_t bk[300];
        size_t n = 0;
        for (int part = 0; part < 3; part++) {
            size_t m = (size_t)(round + part) % 100;
            for (size_t i = 0; i < m; i++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                uint64_t v = (r >> (r % 60)) % ((uint64_t)1 << 40);
                ck_assert_int_eq(bl_sketch_add(&a, v, 1), BL_OK);
                bk[n + i] = (uint16_t)bl_sketch_bucket(v);
            }
            ck_assert_int_eq(bl_sketch_add_buckets(&b, bk + n, m), BL_OK);
            n += m;
        }
        ck_assert_uint_eq(a.count, b.count);
        if (a.count) {
            ck_assert_uint_eq(a.lo, b.lo);
            ck_assert_uint_eq(a.hi, b.hi);
        }
        bl_buf x, y;
        bl_buf_init(&x, 0);
        bl_buf_init(&y, 0);
        ck_assert_int_eq(bl_sketch_serialize(&a, &x), BL_OK);
        ck_assert_int_eq(bl_sketch_serialize(&b, &y), BL_OK);
        ck_assert_uint_eq(x.len, y.len);
        ck_assert(memcmp(x.data, y.data, x.len) == 0);
        /* out of range: refused, nothing added */
        uint16_t bad[2] = { 5, (uint16_t)NB };
        ck_assert_int_eq(bl_sketch_add_buckets(&b, bad, 2), BL_EINVAL);
        ck_assert_uint_eq(b.count, a.count);
        bl_buf_cleanup(&x);
        bl_buf_cleanup(&y);
        bl_sketch_cleanup(&a);
        bl_sketch_cleanup(&b);
    }
}
END_TEST

/* bl_sketch_serialize_marked writes bl_sketch_serialize's bytes for the
 * same counts, and leaves counters and mark zero */
START_TEST(serialize_marked)
{
    uint64_t r = 0x2545F4914F6CDD1Dull;
    uint64_t *bucket = calloc(NB, sizeof *bucket);
    uint64_t mark[BL_SKETCH_MARK_WORDS] = { 0 };
    ck_assert_ptr_nonnull(bucket);
    bl_buf x, y;
    bl_buf_init(&x, 0);
    bl_buf_init(&y, 0);
    for (int round = 0; round < 200; round++) {
        bl_sketch a;
        bl_sketch_init(&a);
        size_t m = round == 0 ? 0 : round == 1 ? NB : (size_t)(r % 700);
        for (size_t i = 0; i < m; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            uint64_t v = round == 1 ? bl_sketch_bucket_mid((uint32_t)i)
                                    : (r >> (r % 64)) >> (round % 3 ? 20 : 0);
            uint64_t n = round % 5 == 0 ? 1 + r % 100000 : 1;
            ck_assert_int_eq(bl_sketch_add(&a, v, n), BL_OK);
            uint32_t b = bl_sketch_bucket(v);
            bucket[b] += n;
            mark[b / 64] |= (uint64_t)1 << (b % 64);
        }
        bl_buf_reset(&x);
        bl_buf_reset(&y);
        ck_assert_int_eq(bl_sketch_serialize(&a, &x), BL_OK);
        ck_assert_int_eq(bl_buf_append(&y, "ab", 2), BL_OK); /* appends */
        ck_assert_int_eq(bl_sketch_serialize_marked(bucket, mark, &y), BL_OK);
        ck_assert_uint_eq(x.len + 2, y.len);
        ck_assert(memcmp(x.data, y.data + 2, x.len) == 0);
        for (size_t b = 0; b < NB; b++)
            ck_assert_uint_eq(bucket[b], 0);
        for (size_t w = 0; w < BL_SKETCH_MARK_WORDS; w++)
            ck_assert_uint_eq(mark[w], 0);
        bl_sketch_cleanup(&a);
    }
    bl_buf_cleanup(&x);
    bl_buf_cleanup(&y);
    free(bucket);
}
END_TEST

START_TEST(every_bucket)
{
    uint64_t prev_mid = 0;
    for (uint32_t b = 0; b < NB; b++) {
        uint64_t mid = bl_sketch_bucket_mid(b);
        if (bl_sketch_bucket(mid) != b || (b && mid <= prev_mid))
            ck_abort_msg("bucket %u: mid %llu", (unsigned)b, (unsigned long long)mid);
        prev_mid = mid;
    }
    /* powers of two start a bucket: the one before ends the previous */
    for (int k = 1; k < 64; k++) {
        uint64_t p = 1ull << k;
        ck_assert_uint_eq(bl_sketch_bucket(p), bl_sketch_bucket(p - 1) + 1);
        ck_assert_uint_eq(bl_sketch_bucket(p + 1) - bl_sketch_bucket(p), k <= 6 ? 1 : 0);
    }
    /* the midpoint is the middle of its bucket: for b >= 128 the bucket is
     * [mid - w/2, mid + w/2) with w a power of two */
    for (uint32_t b = 128; b < NB; b++) {
        uint64_t mid = bl_sketch_bucket_mid(b);
        uint64_t half = 1ull << ((b >> 6) - 2); /* w/2 = 2^(shift-1), shift = (b >> 6) - 1 */
        if (bl_sketch_bucket(mid - half) != b || bl_sketch_bucket(mid - half - 1) != b - 1 ||
            bl_sketch_bucket(mid + (half - 1)) != b ||
            (b + 1 < NB && bl_sketch_bucket(mid + half) != b + 1))
            ck_abort_msg("bucket %u is not [mid - %llu, mid + %llu)", (unsigned)b,
                         (unsigned long long)half, (unsigned long long)half);
    }
}
END_TEST

START_TEST(random_values)
{
    rng_state = 1;
    for (int i = 0; i < 2000000; i++) {
        uint64_t v = rnd_any();
        uint32_t b = bl_sketch_bucket(v);
        if (b >= NB)
            ck_abort_msg("v=%llu: bucket %u", (unsigned long long)v, (unsigned)b);
        uint64_t mid = bl_sketch_bucket_mid(b);
        /* in its bucket, monotone, relative error <= 2^-7 */
        if (bl_sketch_bucket(mid) != b || !within(mid, v, 1, 128) ||
            (v && bl_sketch_bucket(v - 1) > b) || (v != UINT64_MAX && bl_sketch_bucket(v + 1) < b))
            ck_abort_msg("v=%llu: bucket %u, mid %llu", (unsigned long long)v, (unsigned)b,
                         (unsigned long long)mid);
    }
}
END_TEST

/* ---- quantiles ----------------------------------------------------------- */

static const double qs[] = { 0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0 };

/* Adds vals to a sketch and compares every quantile with the exact one. */
static void check_distribution(const char *name, uint64_t *vals, size_t n)
{
    bl_sketch s;
    bl_sketch_init(&s);
    uint64_t sum = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad |= bl_sketch_add(&s, vals[i], 1) != BL_OK;
        sum = sum > UINT64_MAX - vals[i] ? UINT64_MAX : sum + vals[i]; /* saturating */
    }
    ck_assert_int_eq(bad, 0);
    check_invariants(&s);
    ck_assert_uint_eq(s.count, n);
    ck_assert_uint_eq(s.sum, sum);
    qsort(vals, n, sizeof *vals, cmp_u64);
    ck_assert_uint_eq(s.max, vals[n - 1]);
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        uint64_t got = bl_sketch_quantile(&s, qs[i]);
        uint64_t want = exact_quantile(vals, n, qs[i]);
        /* the promise is 2%; the construction gives 2^-7 */
        ck_assert_msg(within(got, want, 2, 100), "%s q=%g: %llu vs exact %llu", name, qs[i],
                      (unsigned long long)got, (unsigned long long)want);
        ck_assert_msg(within(got, want, 1, 128), "%s q=%g: %llu vs exact %llu", name, qs[i],
                      (unsigned long long)got, (unsigned long long)want);
        ck_assert_uint_eq(bl_sketch_bucket(got), bl_sketch_bucket(want));
    }
    ck_assert_uint_eq(bl_sketch_quantile(&s, 1.0), vals[n - 1]);
    bl_sketch_cleanup(&s);
}

START_TEST(uniform)
{
    size_t n = 1000000;
    uint64_t *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rng_state = 7;
    for (size_t i = 0; i < n; i++)
        v[i] = i + 1;
    /* order of adds does not matter; shuffle anyway */
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(rnd() % (i + 1));
        uint64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
    check_distribution("uniform 1..1e6", v, n);
    /* the known answers */
    bl_sketch s;
    bl_sketch_init(&s);
    int bad = 0;
    for (uint64_t i = 1; i <= n; i++)
        bad |= bl_sketch_add(&s, i, 1) != BL_OK;
    ck_assert_int_eq(bad, 0);
    ck_assert(within(bl_sketch_quantile(&s, 0.5), 500000, 1, 128));
    ck_assert(within(bl_sketch_quantile(&s, 0.9), 900000, 1, 128));
    ck_assert(within(bl_sketch_quantile(&s, 0.99), 990000, 1, 128));
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.0), 1);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 1.0), 1000000);
    bl_sketch_cleanup(&s);
    free(v);
}
END_TEST

START_TEST(exponential)
{
    size_t n = 500000;
    uint64_t *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rng_state = 11;
    for (size_t i = 0; i < n; i++) {
        double u = ((double)(rnd() >> 11) + 1.0) / 9007199254740992.0; /* (0, 1] */
        v[i] = (uint64_t)(-log(u) * 20000.0);                            /* mean 20 ms */
    }
    check_distribution("exponential", v, n);
    free(v);
}
END_TEST

START_TEST(wide_and_odd)
{
    size_t n = 200000;
    uint64_t *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rng_state = 13;
    for (size_t i = 0; i < n; i++)
        v[i] = rnd_any();
    check_distribution("log-uniform", v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = 12345;
    check_distribution("constant", v, n);
    v[0] = 987654321;
    check_distribution("single", v, 1);
    v[0] = 0;
    check_distribution("single zero", v, 1);
    for (size_t i = 0; i < 101; i++)
        v[i] = i;
    check_distribution("0..100 (exact)", v, 101);
    bl_sketch s;
    bl_sketch_init(&s);
    for (uint64_t i = 0; i <= 100; i++)
        ck_assert_int_eq(bl_sketch_add(&s, i, 1), BL_OK);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.5), 50);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.9), 90);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.0), 0);
    bl_sketch_cleanup(&s);
    free(v);
}
END_TEST

START_TEST(edge_cases)
{
    bl_sketch s;
    bl_sketch_init(&s);
    /* empty */
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++)
        ck_assert_uint_eq(bl_sketch_quantile(&s, qs[i]), 0);
    /* n == 0 adds nothing and allocates nothing */
    ck_assert_int_eq(bl_sketch_add(&s, 5, 0), BL_OK);
    ck_assert_ptr_null(s.bucket);
    ck_assert_uint_eq(s.count, 0);
    /* weighted adds */
    ck_assert_int_eq(bl_sketch_add(&s, 10, 3), BL_OK);
    ck_assert_int_eq(bl_sketch_add(&s, 1000, 1), BL_OK);
    ck_assert_int_eq(bl_sketch_add(&s, 7, 0), BL_OK);
    check_invariants(&s);
    ck_assert_uint_eq(s.count, 4);
    ck_assert_uint_eq(s.sum, 1030);
    ck_assert_uint_eq(s.max, 1000);
    ck_assert_uint_eq(s.lo, 10);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.75), 10);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.76), bl_sketch_bucket_mid(bl_sketch_bucket(1000)));
    ck_assert_uint_eq(bl_sketch_quantile(&s, 1.0), 1000);
    /* out-of-range q: clamped */
    ck_assert_uint_eq(bl_sketch_quantile(&s, -1.0), 10);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 2.0), 1000);
    ck_assert_uint_eq(bl_sketch_quantile(&s, NAN), 10);
    /* tiny q still means rank 1 */
    ck_assert_uint_eq(bl_sketch_quantile(&s, 1e-300), 10);
    /* sum saturates, max is exact */
    ck_assert_int_eq(bl_sketch_add(&s, UINT64_MAX, 2), BL_OK);
    ck_assert_uint_eq(s.sum, UINT64_MAX);
    ck_assert_uint_eq(s.max, UINT64_MAX);
    ck_assert_uint_eq(s.hi, NB - 1);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 1.0), UINT64_MAX);
    ck_assert(within(bl_sketch_quantile(&s, 0.99), UINT64_MAX, 1, 128));
    check_invariants(&s);
    /* reset keeps the storage and empties everything */
    uint64_t *keep = s.bucket;
    bl_sketch_reset(&s);
    ck_assert_ptr_eq(s.bucket, keep);
    ck_assert_uint_eq(s.count, 0);
    ck_assert_uint_eq(s.sum, 0);
    ck_assert_uint_eq(s.max, 0);
    check_invariants(&s);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.5), 0);
    ck_assert_int_eq(bl_sketch_add(&s, 42, 1), BL_OK);
    ck_assert_uint_eq(s.lo, 42);
    ck_assert_uint_eq(s.hi, 42);
    ck_assert_uint_eq(bl_sketch_quantile(&s, 0.5), 42);
    bl_sketch_cleanup(&s);
    ck_assert_ptr_null(s.bucket);
    bl_sketch_cleanup(&s); /* twice is fine */
    bl_sketch_reset(&s);   /* as is resetting an unallocated sketch */
    ck_assert_ptr_null(s.bucket);
}
END_TEST

/* ---- merge --------------------------------------------------------------- */

START_TEST(merge_exact)
{
    bl_sketch a, b, all, empty;
    bl_sketch_init(&a);
    bl_sketch_init(&b);
    bl_sketch_init(&all);
    bl_sketch_init(&empty);
    rng_state = 17;
    int bad = 0;
    for (int i = 0; i < 300000; i++) {
        uint64_t v = rnd_any() >> 8, n = 1 + rnd() % 3;
        bad |= bl_sketch_add(rnd() & 1 ? &a : &b, v, n) != BL_OK;
        bad |= bl_sketch_add(&all, v, n) != BL_OK;
    }
    ck_assert_int_eq(bad, 0);
    /* merging an empty sketch changes nothing and allocates nothing */
    take(&a, &snap_a);
    ck_assert_int_eq(bl_sketch_merge(&a, &empty), BL_OK);
    take(&a, &snap_b);
    ck_assert(same(&snap_a, &snap_b));
    ck_assert_int_eq(bl_sketch_merge(&empty, &empty), BL_OK);
    ck_assert_ptr_null(empty.bucket);

    ck_assert_int_eq(bl_sketch_merge(&a, &b), BL_OK);
    check_invariants(&a);
    take(&a, &snap_a);
    take(&all, &snap_b);
    ck_assert(same(&snap_a, &snap_b));
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++)
        ck_assert_uint_eq(bl_sketch_quantile(&a, qs[i]), bl_sketch_quantile(&all, qs[i]));

    /* into an unallocated sketch */
    ck_assert_int_eq(bl_sketch_merge(&empty, &all), BL_OK);
    take(&empty, &snap_a);
    ck_assert(same(&snap_a, &snap_b));

    /* with itself: every count doubles */
    ck_assert_int_eq(bl_sketch_merge(&empty, &empty), BL_OK);
    check_invariants(&empty);
    ck_assert_uint_eq(empty.count, 2 * all.count);
    for (uint32_t i = 0; i < NB; i++)
        if (empty.bucket[i] != 2 * all.bucket[i])
            ck_abort_msg("bucket %u not doubled", (unsigned)i);

    /* a count that would not fit: refused, nothing changes */
    bl_sketch big;
    bl_sketch_init(&big);
    ck_assert_int_eq(bl_sketch_add(&big, 5, UINT64_MAX - 10), BL_OK);
    take(&big, &snap_a);
    ck_assert_int_eq(bl_sketch_merge(&big, &all), BL_ETOOBIG);
    take(&big, &snap_b);
    ck_assert(same(&snap_a, &snap_b));

    bl_sketch_cleanup(&a);
    bl_sketch_cleanup(&b);
    bl_sketch_cleanup(&all);
    bl_sketch_cleanup(&empty);
    bl_sketch_cleanup(&big);
}
END_TEST

/* ---- serialised form ----------------------------------------------------- */

/* A sketch's version-1 blob (the form written before version 2), built
 * here from its buckets: u8 1, u8 6, u16 0, u32 n, n × (u32, u64). */
static void to_v1(const bl_sketch *s, bl_buf *out)
{
    uint8_t pair[12];
    uint32_t n = 0;
    size_t at = out->len;
    uint8_t head[8] = { 1, 6, 0, 0, 0, 0, 0, 0 };
    ck_assert_int_eq(bl_buf_append(out, head, 8), BL_OK);
    for (uint32_t b = 0; s->count && b < NB; b++) {
        if (!s->bucket[b])
            continue;
        for (int i = 0; i < 4; i++)
            pair[i] = (uint8_t)(b >> (8 * i));
        for (int i = 0; i < 8; i++)
            pair[4 + i] = (uint8_t)(s->bucket[b] >> (8 * i));
        ck_assert_int_eq(bl_buf_append(out, pair, 12), BL_OK);
        n++;
    }
    for (int i = 0; i < 4; i++)
        out->data[at + 4 + i] = (char)(uint8_t)(n >> (8 * i));
}

START_TEST(blob_layout)
{
    bl_sketch s;
    bl_sketch_init(&s);
    bl_buf out;
    bl_buf_init(&out, 0);
    /* empty sketch: header only */
    ck_assert_int_eq(bl_sketch_serialize(&s, &out), BL_OK);
    static const uint8_t empty[4] = { 2, 6, 0, 0 };
    ck_assert_uint_eq(out.len, 4);
    ck_assert_mem_eq(out.data, empty, 4);

    ck_assert_int_eq(bl_sketch_add(&s, 5, 2), BL_OK);
    ck_assert_int_eq(bl_sketch_add(&s, 1000, 0x0102030405ull), BL_OK);
    /* 1000 = 0b1111101000: e = 9, shift 3, 1000 >> 3 = 125 → 3*64 + 125 = 317 */
    ck_assert_uint_eq(bl_sketch_bucket(1000), 317);
    bl_buf_reset(&out);
    ck_assert_int_eq(bl_buf_puts(&out, "xy"), BL_OK); /* appends after what is there */
    ck_assert_int_eq(bl_sketch_serialize(&s, &out), BL_OK);
    /* version 2: bucket 5 = gap 5, count 2; bucket 317 = gap 311 (varint
     * B7 02), count 0x0102030405 (varint 85 88 8C 90 10) */
    static const uint8_t want[] = {
        'x', 'y', 2, 6, 2, 0,
        0x05, 0x02,
        0xB7, 0x02, 0x85, 0x88, 0x8C, 0x90, 0x10,
    };
    ck_assert_uint_eq(out.len, sizeof want);
    ck_assert_mem_eq(out.data, want, sizeof want);
    ck_assert_int_eq(out.data[out.len], '\0');

    /* the same sketch as a version-1 blob is read the same way and turned
     * into the version-2 bytes by a merge with the empty blob */
    static const uint8_t v1[] = {
        1, 6, 0, 0, 2, 0, 0, 0,
        5, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
        0x3D, 0x01, 0, 0, 0x05, 0x04, 0x03, 0x02, 0x01, 0, 0, 0,
    };
    bl_buf m;
    bl_buf_init(&m, 0);
    ck_assert_int_eq(bl_sketch_blob_merge(v1, sizeof v1, empty, 4, &m), BL_OK);
    ck_assert_uint_eq(m.len, sizeof want - 2);
    ck_assert_mem_eq(m.data, want + 2, sizeof want - 2);
    bl_buf_reset(&m);
    ck_assert_int_eq(bl_sketch_blob_merge(empty, 4, v1, sizeof v1, &m), BL_OK);
    ck_assert_mem_eq(m.data, want + 2, sizeof want - 2);
    bl_sketch r;
    bl_sketch_init(&r);
    ck_assert_int_eq(bl_sketch_merge_blob(&r, v1, sizeof v1), BL_OK);
    ck_assert_uint_eq(r.count, 0x0102030405ull + 2);
    ck_assert_uint_eq(r.bucket[317], 0x0102030405ull);
    bl_sketch_cleanup(&r);
    bl_buf_cleanup(&m);

    /* a capped buffer that is too small: BL_ETOOBIG, buffer unchanged */
    bl_buf small;
    bl_buf_init(&small, 8);
    ck_assert_int_eq(bl_sketch_serialize(&s, &small), BL_ETOOBIG);
    ck_assert_uint_eq(small.len, 0);
    bl_buf_cleanup(&small);
    bl_buf_cleanup(&out);
    bl_sketch_cleanup(&s);
}
END_TEST

START_TEST(blob_round_trip)
{
    bl_sketch a, c;
    bl_sketch_init(&a);
    bl_sketch_init(&c);
    rng_state = 19;
    int bad = 0;
    for (int i = 0; i < 100000; i++)
        bad |= bl_sketch_add(&a, rnd_any(), 1 + rnd() % 1000) != BL_OK;
    ck_assert_int_eq(bad, 0);
    bl_buf blob;
    bl_buf_init(&blob, 0);
    ck_assert_int_eq(bl_sketch_serialize(&a, &blob), BL_OK);

    /* into an empty sketch: same buckets, count, lo, hi; max and sum are
     * not in the blob */
    ck_assert_int_eq(bl_sketch_merge_blob(&c, blob.data, blob.len), BL_OK);
    check_invariants(&c);
    ck_assert_uint_eq(c.count, a.count);
    ck_assert_uint_eq(c.lo, a.lo);
    ck_assert_uint_eq(c.hi, a.hi);
    ck_assert_mem_eq(c.bucket, a.bucket, NB * sizeof *a.bucket);
    ck_assert_uint_eq(c.max, 0);
    ck_assert_uint_eq(c.sum, 0);
    for (size_t i = 0; i + 1 < sizeof qs / sizeof *qs; i++)
        ck_assert_uint_eq(bl_sketch_quantile(&c, qs[i]), bl_sketch_quantile(&a, qs[i]));

    /* quantiles read from the blob, and from the same sketch's version-1
     * blob, are the sketch's; the version-2 blob is the smaller */
    bl_buf old;
    bl_buf_init(&old, 0);
    to_v1(&a, &old);
    ck_assert_uint_lt(blob.len * 2, old.len);
    uint64_t q2[8], q1[8];
    const double qq[8] = { 0.99, 0.5, 0.0, 1.0, 0.9, 0.999, 0.25, 0.75 };
    ck_assert_int_eq(bl_sketch_blob_quantiles(blob.data, blob.len, qq, 8, q2), BL_OK);
    ck_assert_int_eq(bl_sketch_blob_quantiles(old.data, old.len, qq, 8, q1), BL_OK);
    for (int i = 0; i < 8; i++) {
        uint64_t want = qq[i] >= 1.0 ? bl_sketch_bucket_mid(a.hi) : bl_sketch_quantile(&a, qq[i]);
        ck_assert_uint_eq(q2[i], want);
        ck_assert_uint_eq(q1[i], want);
    }
    bl_sketch v1c;
    bl_sketch_init(&v1c);
    ck_assert_int_eq(bl_sketch_merge_blob(&v1c, old.data, old.len), BL_OK);
    ck_assert_uint_eq(v1c.count, a.count);
    ck_assert_mem_eq(v1c.bucket, a.bucket, NB * sizeof *a.bucket);
    bl_sketch_cleanup(&v1c);
    bl_buf_cleanup(&old);

    /* serialising the copy gives the same bytes */
    bl_buf again;
    bl_buf_init(&again, 0);
    ck_assert_int_eq(bl_sketch_serialize(&c, &again), BL_OK);
    ck_assert_uint_eq(again.len, blob.len);
    ck_assert_mem_eq(again.data, blob.data, blob.len);

    /* into a non-empty sketch: the same as bl_sketch_merge */
    bl_sketch d, e;
    bl_sketch_init(&d);
    bl_sketch_init(&e);
    for (int i = 0; i < 1000; i++) {
        uint64_t v = rnd() % 5000;
        ck_assert_int_eq(bl_sketch_add(&d, v, 1), BL_OK);
        ck_assert_int_eq(bl_sketch_add(&e, v, 1), BL_OK);
    }
    ck_assert_int_eq(bl_sketch_merge_blob(&d, blob.data, blob.len), BL_OK);
    ck_assert_int_eq(bl_sketch_merge(&e, &a), BL_OK);
    ck_assert_uint_eq(d.count, e.count);
    ck_assert_uint_eq(d.lo, e.lo);
    ck_assert_uint_eq(d.hi, e.hi);
    ck_assert_mem_eq(d.bucket, e.bucket, NB * sizeof *d.bucket);

    /* an empty blob adds nothing and allocates nothing */
    bl_sketch f;
    bl_sketch_init(&f);
    bl_buf_reset(&again);
    ck_assert_int_eq(bl_sketch_serialize(&f, &again), BL_OK);
    ck_assert_int_eq(bl_sketch_merge_blob(&f, again.data, again.len), BL_OK);
    ck_assert_ptr_null(f.bucket);
    ck_assert_uint_eq(f.count, 0);

    bl_buf_cleanup(&blob);
    bl_buf_cleanup(&again);
    bl_sketch_cleanup(&a);
    bl_sketch_cleanup(&c);
    bl_sketch_cleanup(&d);
    bl_sketch_cleanup(&e);
    bl_sketch_cleanup(&f);
}
END_TEST

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Checks that merging blob into a populated and into an unallocated sketch
 * fails with `want` and changes neither. */
static void rejected(const uint8_t *blob, size_t len, bl_err want, const char *what)
{
    bl_sketch s, z;
    bl_sketch_init(&s);
    bl_sketch_init(&z);
    ck_assert_int_eq(bl_sketch_add(&s, 3, 1), BL_OK);
    ck_assert_int_eq(bl_sketch_add(&s, 70000, 2), BL_OK);
    take(&s, &snap_a);
    ck_assert_msg(bl_sketch_merge_blob(&s, blob, len) == want, "%s: not rejected", what);
    take(&s, &snap_b);
    ck_assert_msg(same(&snap_a, &snap_b), "%s: sketch changed", what);
    ck_assert_int_eq(bl_sketch_merge_blob(&z, blob, len), want);
    ck_assert_ptr_null(z.bucket);
    ck_assert_uint_eq(z.count, 0);
    bl_sketch_cleanup(&s);
}

START_TEST(blob_malformed)
{
    /* a valid blob with three buckets: 2 (×1), 300 (×5), 3775 (×7) */
    uint8_t good[8 + 3 * 12];
    memset(good, 0, sizeof good);
    good[0] = 1;
    good[1] = 6;
    put32(good + 4, 3);
    const uint32_t idx[3] = { 2, 300, NB - 1 };
    const uint64_t cnt[3] = { 1, 5, 7 };
    for (int i = 0; i < 3; i++) {
        put32(good + 8 + 12 * i, idx[i]);
        put64(good + 12 + 12 * i, cnt[i]);
    }
    bl_sketch s;
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, good, sizeof good), BL_OK);
    ck_assert_uint_eq(s.count, 13);
    ck_assert_uint_eq(s.bucket[300], 5);
    ck_assert_uint_eq(s.lo, 2);
    ck_assert_uint_eq(s.hi, NB - 1);
    bl_sketch_cleanup(&s);

    uint8_t m[sizeof good + 1];
    /* every truncation, and one byte too many */
    for (size_t len = 0; len < sizeof good; len++)
        rejected(good, len, BL_EFORMAT, "truncated");
    memcpy(m, good, sizeof good);
    m[sizeof good] = 0;
    rejected(m, sizeof good + 1, BL_EFORMAT, "trailing byte");
    rejected(NULL, 0, BL_EFORMAT, "NULL");

#define MUTATE(stmt, what)                       \
    do {                                         \
        memcpy(m, good, sizeof good);            \
        stmt;                                    \
        rejected(m, sizeof good, BL_EFORMAT, what); \
    } while (0)

    MUTATE(m[0] = 0, "version 0");
    MUTATE(m[0] = 3, "version 3");
    MUTATE(m[1] = 5, "sub_bits 5");
    MUTATE(m[1] = 7, "sub_bits 7");
    MUTATE(m[2] = 1, "reserved");
    MUTATE(m[3] = 0x80, "reserved high");
    MUTATE(put32(m + 4, 2), "n_nonzero too small");
    MUTATE(put32(m + 4, 4), "n_nonzero too large");
    MUTATE(put32(m + 4, UINT32_MAX), "n_nonzero huge");
    MUTATE(put32(m + 8 + 12, 2), "repeated index");
    MUTATE(put32(m + 8 + 12, 1), "descending index");
    MUTATE((put32(m + 8, 300), put32(m + 8 + 12, 2)), "swapped indexes");
    MUTATE(put32(m + 8 + 24, NB), "index out of range");
    MUTATE(put32(m + 8 + 24, UINT32_MAX), "index far out of range");
    MUTATE(put64(m + 12, 0), "zero count first");
    MUTATE(put64(m + 12 + 24, 0), "zero count last");
    MUTATE((put64(m + 12, UINT64_MAX), put64(m + 12 + 12, 1)), "counts overflow");
#undef MUTATE

    /* a total that fits in the blob but not in the sketch it is merged into */
    bl_sketch t;
    bl_sketch_init(&t);
    ck_assert_int_eq(bl_sketch_add(&t, 9, UINT64_MAX - 12), BL_OK);
    take(&t, &snap_a);
    ck_assert_int_eq(bl_sketch_merge_blob(&t, good, sizeof good), BL_ETOOBIG);
    take(&t, &snap_b);
    ck_assert(same(&snap_a, &snap_b));
    bl_sketch_cleanup(&t);
    bl_sketch_init(&t);
    ck_assert_int_eq(bl_sketch_add(&t, 9, UINT64_MAX - 13), BL_OK);
    ck_assert_int_eq(bl_sketch_merge_blob(&t, good, sizeof good), BL_OK);
    ck_assert_uint_eq(t.count, UINT64_MAX);
    bl_sketch_cleanup(&t);
}
END_TEST

/* The version-2 form: a valid blob and every way to break it. */
START_TEST(blob_malformed_v2)
{
    /* buckets 2 (×1), 300 (×5), 3775 (×7): gaps 2, 297, 3474 */
    static const uint8_t good[] = { 2, 6, 3, 0, 0x02, 0x01, 0xA9, 0x02, 0x05, 0x92, 0x1B, 0x07 };
    bl_sketch s;
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, good, sizeof good), BL_OK);
    ck_assert_uint_eq(s.count, 13);
    ck_assert_uint_eq(s.bucket[2], 1);
    ck_assert_uint_eq(s.bucket[300], 5);
    ck_assert_uint_eq(s.bucket[NB - 1], 7);
    ck_assert_uint_eq(s.lo, 2);
    ck_assert_uint_eq(s.hi, NB - 1);
    /* and it is what serialising that sketch gives */
    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_sketch_serialize(&s, &b), BL_OK);
    ck_assert_uint_eq(b.len, sizeof good);
    ck_assert_mem_eq(b.data, good, sizeof good);
    bl_buf_cleanup(&b);
    bl_sketch_cleanup(&s);

    uint8_t m[64];
    for (size_t len = 0; len < sizeof good; len++)
        rejected(good, len, BL_EFORMAT, "v2 truncated");
    memcpy(m, good, sizeof good);
    m[sizeof good] = 0;
    rejected(m, sizeof good + 1, BL_EFORMAT, "v2 trailing byte");

#define BAD(what, ...)                                           \
    do {                                                         \
        static const uint8_t x[] = { __VA_ARGS__ };              \
        rejected(x, sizeof x, BL_EFORMAT, what);                 \
        bl_buf o_;                                               \
        bl_buf_init(&o_, 0);                                     \
        ck_assert_msg(bl_sketch_blob_merge(good, sizeof good, x, sizeof x, &o_) == \
                      BL_EFORMAT, "%s: merged", what);           \
        ck_assert_uint_eq(o_.len, 0);                            \
        bl_buf_cleanup(&o_);                                     \
    } while (0)

    BAD("v2 sub_bits 5", 2, 5, 3, 0, 0x02, 0x01, 0xA9, 0x02, 0x05, 0x92, 0x1B, 0x07);
    BAD("v2 n too small", 2, 6, 2, 0, 0x02, 0x01, 0xA9, 0x02, 0x05, 0x92, 0x1B, 0x07);
    BAD("v2 n too large", 2, 6, 4, 0, 0x02, 0x01, 0xA9, 0x02, 0x05, 0x92, 0x1B, 0x07);
    BAD("v2 n huge", 2, 6, 0xFF, 0xFF, 0x02, 0x01, 0xA9, 0x02, 0x05, 0x92, 0x1B, 0x07);
    BAD("v2 index out of range", 2, 6, 3, 0, 0x02, 0x01, 0xA9, 0x02, 0x05, 0x93, 0x1B, 0x07);
    BAD("v2 gap of 3 bytes", 2, 6, 1, 0, 0x80, 0x80, 0x01, 0x01);
    BAD("v2 overlong gap", 2, 6, 1, 0, 0x82, 0x00, 0x01);
    BAD("v2 overlong count", 2, 6, 1, 0, 0x02, 0x81, 0x00);
    BAD("v2 zero count", 2, 6, 2, 0, 0x02, 0x01, 0x00, 0x00);
    BAD("v2 count past 64 bits", 2, 6, 1, 0, 0x02,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02);
    BAD("v2 count of 11 bytes", 2, 6, 1, 0, 0x02,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x81, 0x00);
    BAD("v2 counts overflow", 2, 6, 2, 0, 0x02,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x00, 0x01);
    BAD("v2 count cut", 2, 6, 1, 0, 0x02, 0x81);
#undef BAD
    /* the largest count fits */
    static const uint8_t big[] = { 2, 6, 1, 0, 0x02,
                                   0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01 };
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_merge_blob(&s, big, sizeof big), BL_OK);
    ck_assert_uint_eq(s.count, UINT64_MAX);
    bl_sketch_cleanup(&s);
    /* two valid blobs whose totals overflow together: BL_ETOOBIG, nothing appended */
    bl_buf o;
    bl_buf_init(&o, 0);
    ck_assert_int_eq(bl_sketch_blob_merge(big, sizeof big, good, sizeof good, &o), BL_ETOOBIG);
    ck_assert_uint_eq(o.len, 0);
    bl_buf_cleanup(&o);
}
END_TEST

/* Random bytes and random mutations of valid blobs (both forms): every blob
 * function gives the same verdict (read whole or refused with BL_EFORMAT),
 * never reads outside the blob (ASan builds), and what is accepted means
 * the same to all of them. */
START_TEST(blob_random)
{
    static const uint8_t empty[4] = { 2, 6, 0, 0 };
    uint64_t rng = 4242;
    int accepted = 0, refused = 0;
    for (int round = 0; round < 4000; round++) {
        uint8_t x[96];
        size_t len;
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        if (round % 2) { /* a valid blob, one or two bytes changed or cut */
            bl_sketch v;
            bl_sketch_init(&v);
            int nv = 1 + (int)((rng >> 33) % 6);
            for (int i = 0; i < nv; i++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                ck_assert_int_eq(bl_sketch_add(&v, (rng >> 20) % (1ull << ((rng >> 10) % 40)),
                                               1 + (rng >> 40) % 300), BL_OK);
            }
            bl_buf b;
            bl_buf_init(&b, 0);
            if (round % 4 == 1)
                ck_assert_int_eq(bl_sketch_serialize(&v, &b), BL_OK);
            else
                to_v1(&v, &b);
            bl_sketch_cleanup(&v);
            len = b.len < sizeof x ? b.len : sizeof x;
            memcpy(x, b.data, len);
            bl_buf_cleanup(&b);
            for (int k = 0; k < 2; k++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                int what = (int)((rng >> 60) % 4);
                size_t at = (size_t)((rng >> 20) % len);
                if (what == 0)
                    len = at; /* cut */
                else if (what == 1 && len)
                    x[at] = (uint8_t)(rng >> 8); /* any byte */
                else if (len)
                    x[at] ^= (uint8_t)(1u << ((rng >> 5) % 8)); /* one bit */
                if (!len)
                    break;
            }
        } else { /* a version-2 header, then random bytes, mostly small */
            len = 4 + (size_t)((rng >> 35) % 40);
            x[0] = 2;
            x[1] = 6;
            x[2] = (uint8_t)((rng >> 45) % 20);
            x[3] = (rng >> 55) % 50 ? 0 : (uint8_t)(rng >> 8);
            for (size_t i = 4; i < len; i++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                x[i] = (rng >> 61) ? (uint8_t)((rng >> 20) % 100) : (uint8_t)(rng >> 24);
            }
        }
        /* copied to a buffer of exactly len bytes: a read past it is an ASan error */
        uint8_t *e = malloc(len ? len : 1);
        ck_assert_ptr_nonnull(e);
        memcpy(e, x, len);
        bl_sketch s;
        bl_sketch_init(&s);
        bl_err r1 = bl_sketch_merge_blob(&s, e, len);
        bl_buf m;
        bl_buf_init(&m, 0);
        bl_err r2 = bl_sketch_blob_merge(e, len, empty, 4, &m);
        uint64_t qv[3];
        const double qq[3] = { 0.5, 0.9, 1.0 };
        bl_err r3 = bl_sketch_blob_quantiles(e, len, qq, 3, qv);
        bl_buf d;
        bl_buf_init(&d, 0);
        bl_err r4 = bl_sketch_blob_sub(e, len, e, len, &d);
        ck_assert_msg(r1 == BL_OK || r1 == BL_EFORMAT, "round %d: %d", round, (int)r1);
        ck_assert_msg(r2 == r1 && r3 == r1 && r4 == r1, "round %d: verdicts %d %d %d %d", round,
                      (int)r1, (int)r2, (int)r3, (int)r4);
        if (r1 == BL_OK) {
            accepted++;
            /* the merged bytes are the sketch's serialisation, read back the same */
            bl_buf again;
            bl_buf_init(&again, 0);
            ck_assert_int_eq(bl_sketch_serialize(&s, &again), BL_OK);
            ck_assert_uint_eq(again.len, m.len);
            ck_assert_int_eq(memcmp(again.data, m.data, m.len), 0);
            bl_buf_cleanup(&again);
            if (s.count)
                ck_assert_uint_eq(qv[0], bl_sketch_quantile(&s, 0.5));
            ck_assert_uint_eq(d.len, 4); /* x - x: empty */
        } else {
            refused++;
            ck_assert_uint_eq(m.len, 0);
            ck_assert_uint_eq(s.count, 0);
            ck_assert_ptr_null(s.bucket);
        }
        bl_buf_cleanup(&m);
        bl_buf_cleanup(&d);
        bl_sketch_cleanup(&s);
        free(e);
    }
    ck_assert_int_gt(accepted, 300);
    ck_assert_int_gt(refused, 300);
}
END_TEST

/* ---- throughput (printed, not asserted) -------------------------------- */

/* bl_sketch_blob_merge gives the bytes of the union's serialisation. */
START_TEST(blob_merge_linear)
{
    uint64_t rng = 12345;
    for (int round = 0; round < 50; round++) {
        bl_sketch a, b, u;
        bl_sketch_init(&a);
        bl_sketch_init(&b);
        bl_sketch_init(&u);
        int na = round % 7 == 0 ? 0 : 1 + round * 13, nb = round % 5 == 0 ? 0 : 1 + round * 7;
        for (int i = 0; i < na; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t v = (rng >> 20) % (1ull << (round % 40 + 1));
            ck_assert_int_eq(bl_sketch_add(&a, v, 1), BL_OK);
            ck_assert_int_eq(bl_sketch_add(&u, v, 1), BL_OK);
        }
        for (int i = 0; i < nb; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t v = (rng >> 17) % 100000;
            ck_assert_int_eq(bl_sketch_add(&b, v, 2), BL_OK);
            ck_assert_int_eq(bl_sketch_add(&u, v, 2), BL_OK);
        }
        bl_buf ba, bb, bu, bm;
        bl_buf_init(&ba, 0);
        bl_buf_init(&bb, 0);
        bl_buf_init(&bu, 0);
        bl_buf_init(&bm, 0);
        ck_assert_int_eq(bl_sketch_serialize(&a, &ba), BL_OK);
        ck_assert_int_eq(bl_sketch_serialize(&b, &bb), BL_OK);
        ck_assert_int_eq(bl_sketch_serialize(&u, &bu), BL_OK);
        ck_assert_int_eq(bl_sketch_blob_merge(ba.data, ba.len, bb.data, bb.len, &bm), BL_OK);
        ck_assert_uint_eq(bm.len, bu.len);
        ck_assert_int_eq(memcmp(bm.data, bu.data, bu.len), 0);
        /* version-1 inputs (either side, or both) give the same bytes */
        bl_buf a1, b1;
        bl_buf_init(&a1, 0);
        bl_buf_init(&b1, 0);
        to_v1(&a, &a1);
        to_v1(&b, &b1);
        const bl_buf *l[3] = { &a1, &ba, &a1 }, *r[3] = { &bb, &b1, &b1 };
        for (int k = 0; k < 3; k++) {
            bl_buf_reset(&bm);
            ck_assert_int_eq(bl_sketch_blob_merge(l[k]->data, l[k]->len, r[k]->data, r[k]->len,
                                                  &bm), BL_OK);
            ck_assert_uint_eq(bm.len, bu.len);
            ck_assert_int_eq(memcmp(bm.data, bu.data, bu.len), 0);
        }
        bl_buf_cleanup(&a1);
        bl_buf_cleanup(&b1);
        /* with the quantiles of the union: the same bytes, and what
         * bl_sketch_blob_quantiles reads from them */
        const double qq[4] = { 0.5, 0.9, 0.99, 1.0 };
        uint64_t qm[4], qu[4];
        bl_buf_reset(&bm);
        ck_assert_int_eq(bl_buf_puts(&bm, "z"), BL_OK); /* appended after */
        ck_assert_int_eq(bl_sketch_blob_merge_q(ba.data, ba.len, bb.data, bb.len, &bm, qq, 4, qm),
                         BL_OK);
        ck_assert_uint_eq(bm.len, bu.len + 1);
        ck_assert_int_eq(memcmp(bm.data + 1, bu.data, bu.len), 0);
        ck_assert_int_eq(bl_sketch_blob_quantiles(bu.data, bu.len, qq, 4, qu), BL_OK);
        for (int k = 0; k < 4; k++)
            ck_assert_uint_eq(qm[k], qu[k]);
        if (u.count)
            ck_assert_uint_eq(qm[0], bl_sketch_quantile(&u, 0.5));
        bl_buf_reset(&bm);
        ck_assert_int_eq(bl_sketch_blob_merge_q(ba.data, ba.len, bb.data, bb.len, &bm, qq, 9, qm),
                         BL_EINVAL);
        /* a malformed side is refused, and nothing is appended */
        bl_buf_reset(&bm);
        ck_assert_int_eq(bl_sketch_blob_merge(ba.data, ba.len - 1, bb.data, bb.len, &bm),
                         BL_EFORMAT);
        ck_assert_int_eq(bl_sketch_blob_merge(ba.data, ba.len, bb.data, bb.len - 1, &bm),
                         BL_EFORMAT);
        ck_assert_uint_eq(bm.len, 0);
        bl_buf_cleanup(&ba);
        bl_buf_cleanup(&bb);
        bl_buf_cleanup(&bu);
        bl_buf_cleanup(&bm);
        bl_sketch_cleanup(&a);
        bl_sketch_cleanup(&b);
        bl_sketch_cleanup(&u);
    }
}
END_TEST

/* bl_sketch_blob_sub undoes a merge exactly: (a ∪ b) − b has the bytes of
 * a's serialisation; what is not contained is refused. */
START_TEST(blob_sub_exact)
{
    uint64_t rng = 777;
    for (int round = 0; round < 50; round++) {
        bl_sketch a, b, u;
        bl_sketch_init(&a);
        bl_sketch_init(&b);
        bl_sketch_init(&u);
        int na = round % 7 == 0 ? 0 : 1 + round * 13, nb = round % 5 == 0 ? 0 : 1 + round * 7;
        for (int i = 0; i < na; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t v = (rng >> 20) % (1ull << (round % 40 + 1));
            ck_assert_int_eq(bl_sketch_add(&a, v, 1), BL_OK);
            ck_assert_int_eq(bl_sketch_add(&u, v, 1), BL_OK);
        }
        for (int i = 0; i < nb; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t v = (rng >> 17) % 100000;
            ck_assert_int_eq(bl_sketch_add(&b, v, 2), BL_OK);
            ck_assert_int_eq(bl_sketch_add(&u, v, 2), BL_OK);
        }
        bl_buf ba, bb, bu, bs;
        bl_buf_init(&ba, 0);
        bl_buf_init(&bb, 0);
        bl_buf_init(&bu, 0);
        bl_buf_init(&bs, 0);
        ck_assert_int_eq(bl_sketch_serialize(&a, &ba), BL_OK);
        ck_assert_int_eq(bl_sketch_serialize(&b, &bb), BL_OK);
        ck_assert_int_eq(bl_sketch_serialize(&u, &bu), BL_OK);
        ck_assert_int_eq(bl_sketch_blob_sub(bu.data, bu.len, bb.data, bb.len, &bs), BL_OK);
        ck_assert_uint_eq(bs.len, ba.len);
        ck_assert_int_eq(memcmp(bs.data, ba.data, ba.len), 0);
        bl_buf_reset(&bs);
        ck_assert_int_eq(bl_sketch_blob_sub(bu.data, bu.len, ba.data, ba.len, &bs), BL_OK);
        ck_assert_uint_eq(bs.len, bb.len);
        ck_assert_int_eq(memcmp(bs.data, bb.data, bb.len), 0);
        /* everything taken away: the empty sketch */
        bl_buf_reset(&bs);
        ck_assert_int_eq(bl_sketch_blob_sub(bu.data, bu.len, bu.data, bu.len, &bs), BL_OK);
        ck_assert_uint_eq(bs.len, 4);
        /* from a version-1 union: the same bytes */
        bl_buf u1;
        bl_buf_init(&u1, 0);
        to_v1(&u, &u1);
        bl_buf_reset(&bs);
        ck_assert_int_eq(bl_sketch_blob_sub(u1.data, u1.len, bb.data, bb.len, &bs), BL_OK);
        ck_assert_uint_eq(bs.len, ba.len);
        ck_assert_int_eq(memcmp(bs.data, ba.data, ba.len), 0);
        bl_buf_cleanup(&u1);
        /* more than there is: refused */
        bl_buf_reset(&bs);
        if (nb)
            ck_assert_int_eq(bl_sketch_blob_sub(ba.data, ba.len, bu.data, bu.len, &bs),
                             BL_EINVAL);
        bl_buf_reset(&bs);
        ck_assert_int_eq(bl_sketch_blob_sub(bu.data, bu.len - 1, bb.data, bb.len, &bs),
                         BL_EFORMAT);
        bl_buf_cleanup(&ba);
        bl_buf_cleanup(&bb);
        bl_buf_cleanup(&bu);
        bl_buf_cleanup(&bs);
        bl_sketch_cleanup(&a);
        bl_sketch_cleanup(&b);
        bl_sketch_cleanup(&u);
    }
}
END_TEST

START_TEST(throughput)
{
    enum { N = 1 << 16, ROUNDS = 200 };
    static uint64_t vals[N];
    rng_state = 23;
    for (int i = 0; i < N; i++)
        vals[i] = rnd() % 2000000;
    bl_sketch s;
    bl_sketch_init(&s);
    ck_assert_int_eq(bl_sketch_add(&s, 0, 1), BL_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < N; i++)
            bl_sketch_add(&s, vals[i], 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("sketch: %.1f M adds/s (%.2f ns/add)\n", (double)N * ROUNDS / sec / 1e6,
           sec * 1e9 / ((double)N * ROUNDS));
    ck_assert_uint_eq(s.count, (uint64_t)N * ROUNDS + 1);
    bl_sketch_cleanup(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sketch");
    TCase *tb = tcase_create("buckets");
    tcase_add_test(tb, small_values);
    tcase_add_test(tb, every_bucket);
    tcase_add_test(tb, random_values);
    suite_add_tcase(s, tb);
    TCase *tq = tcase_create("quantiles");
    tcase_add_test(tq, uniform);
    tcase_add_test(tq, exponential);
    tcase_add_test(tq, wide_and_odd);
    tcase_add_test(tq, edge_cases);
    suite_add_tcase(s, tq);
    TCase *tm = tcase_create("merge");
    tcase_add_test(tm, merge_exact);
    tcase_add_test(tm, add_buckets);
    tcase_add_test(tm, serialize_marked);
    tcase_add_test(tm, blob_layout);
    tcase_add_test(tm, blob_round_trip);
    tcase_add_test(tm, blob_malformed);
    tcase_add_test(tm, blob_malformed_v2);
    tcase_add_test(tm, blob_random);
    tcase_add_test(tm, blob_merge_linear);
    tcase_add_test(tm, blob_sub_exact);
    tcase_add_test(tm, throughput);
    suite_add_tcase(s, tm);
    return tu_run(s);
}
