/*
 * sketch.c — log-linear latency histogram (see sketch.h for the contract and
 * the serialised form).
 *
 * Bucket index, with S = BL_SKETCH_SUB_BITS (6) and shift = max(0, e - S)
 * where e is the highest set bit of v:
 *
 *   b(v) = (shift << S) + (v >> shift)
 *
 * For v < 2^(S+1) shift is 0 and b = v: every value below 128 has a bucket
 * of its own (the header promises exactness below 2^S; the next power of two
 * comes for free). Above, v >> shift is in [2^S, 2^(S+1)), i.e. 2^S + the S
 * bits after the leading one, so b = ((e - S + 1) << S) + sub-bucket:
 * buckets are contiguous and the last one, for 2^64 - 1, is
 * (57 << 6) + 127 = 3775 = BL_SKETCH_BUCKETS - 1. Computing shift from
 * clz(v | 2^S) makes the whole thing branch-free (and keeps clz away from 0).
 *
 * Bucket b >= 128 holds [m << shift, (m + 1) << shift) with
 * shift = (b >> S) - 1 and m = 2^S + (b & (2^S - 1)); its midpoint is
 * low + 2^(shift-1), at most 2^(shift-1) away from any value in it, and the
 * values are >= 2^S << shift, so the relative error is <= 2^-(S+1).
 *
 * Invariants (count > 0): bucket != NULL; sum of bucket[] == count;
 * bucket[lo] and bucket[hi] are non-zero and every bucket outside [lo, hi]
 * is zero. With count == 0, lo == UINT32_MAX and hi == 0 so that adds can
 * take min/max without a branch.
 */
#include "agg/sketch.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define S BL_SKETCH_SUB_BITS
#define BLOB_VERSION 1
#define BLOB_HEADER 8
#define BLOB_PAIR 12

_Static_assert(BL_SKETCH_BUCKETS == (57 << S) + (2 << S), "bucket count matches b(UINT64_MAX)");

void bl_sketch_init(bl_sketch *s)
{
    s->count = 0;
    s->max = 0;
    s->sum = 0;
    s->lo = UINT32_MAX;
    s->hi = 0;
    s->bucket = NULL;
}

void bl_sketch_cleanup(bl_sketch *s)
{
    free(s->bucket);
    bl_sketch_init(s);
}

void bl_sketch_reset(bl_sketch *s)
{
    if (s->bucket && s->count)
        memset(s->bucket + s->lo, 0, (size_t)(s->hi - s->lo + 1) * sizeof *s->bucket);
    uint64_t *keep = s->bucket;
    bl_sketch_init(s);
    s->bucket = keep;
}

uint32_t bl_sketch_bucket(uint64_t v)
{
    uint32_t shift = (uint32_t)(63 - S) - (uint32_t)__builtin_clzll(v | (1ull << S));
    return (shift << S) + (uint32_t)(v >> shift);
}

uint64_t bl_sketch_bucket_mid(uint32_t b)
{
    assert(b < BL_SKETCH_BUCKETS);
    if (b < (2u << S))
        return b;
    uint32_t shift = (b >> S) - 1;
    uint64_t low = ((uint64_t)(1u << S) + (b & ((1u << S) - 1))) << shift;
    return low + (1ull << (shift - 1));
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static bl_err ensure_buckets(bl_sketch *s)
{
    if (!s->bucket && !(s->bucket = calloc(BL_SKETCH_BUCKETS, sizeof *s->bucket)))
        return BL_ENOMEM;
    return BL_OK;
}

/* The rare cases of an add, kept out of the hot path: n == 0 (nothing to do,
 * and lo/hi must not move) and the first add (allocation). */
static __attribute__((noinline)) bl_err add_slow(bl_sketch *s, uint64_t v, uint64_t n)
{
    if (n == 0)
        return BL_OK;
    bl_err err = ensure_buckets(s);
    if (err)
        return err;
    return bl_sketch_add(s, v, n);
}

/*
 * Hot path: integer only, no branch but the rare-case test. Precondition
 * (asserted, not checked in release builds): count + n fits in 64 bits.
 * Unlike merges, which refuse with BL_ETOOBIG, an add cannot get there
 * short of 2^64 events.
 */
bl_err bl_sketch_add(bl_sketch *s, uint64_t v, uint64_t n)
{
    if (__builtin_expect(!s->bucket || n == 0, 0))
        return add_slow(s, v, n);
    assert(n <= UINT64_MAX - s->count);
    uint32_t b = bl_sketch_bucket(v);
    s->bucket[b] += n;
    s->count += n;
    uint64_t prod, sum;
    int ovf = __builtin_mul_overflow(v, n, &prod);
    ovf |= __builtin_add_overflow(s->sum, prod, &sum);
    s->sum = ovf ? UINT64_MAX : sum;
    s->max = v > s->max ? v : s->max;
    s->lo = b < s->lo ? b : s->lo;
    s->hi = b > s->hi ? b : s->hi;
    return BL_OK;
}

/*
 * Adds src's buckets, count, max and sum into dst. BL_ETOOBIG (nothing
 * added) when the total count would not fit in 64 bits; BL_ENOMEM when dst
 * had no buckets yet and they cannot be allocated. src may be dst.
 */
bl_err bl_sketch_merge(bl_sketch *dst, const bl_sketch *src)
{
    if (!src->count)
        return BL_OK;
    if (src->count > UINT64_MAX - dst->count)
        return BL_ETOOBIG;
    bl_err err = ensure_buckets(dst);
    if (err)
        return err;
    uint32_t lo = src->lo, hi = src->hi; /* read before dst (maybe src) changes */
    for (uint32_t b = lo; b <= hi; b++)
        dst->bucket[b] += src->bucket[b];
    dst->count += src->count;
    dst->sum = sat_add(dst->sum, src->sum);
    dst->max = src->max > dst->max ? src->max : dst->max;
    dst->lo = lo < dst->lo ? lo : dst->lo;
    dst->hi = hi > dst->hi ? hi : dst->hi;
    return BL_OK;
}

/*
 * q >= 1 gives max; q <= 0 and NaN give rank 1. The rank ceil(q * count)
 * is computed in double: exact while count < 2^53, and it sees q as the
 * double it is (0.7 * 10 may round up to rank 8).
 */
/* The rank of the q-quantile among count values (0 < q < 1), see below. */
static uint64_t rank_of(uint64_t count, double q)
{
    uint64_t rank = 1;
    if (q > 0.0) {
        double r = q * (double)count;
        if (r >= (double)count) {
            rank = count;
        } else if (r > 1.0) {
            rank = (uint64_t)r; /* r < count <= 2^64: in range */
            rank += (double)rank < r; /* ceil without libm */
        }
    }
    return rank;
}

uint64_t bl_sketch_quantile(const bl_sketch *s, double q)
{
    if (!s->count)
        return 0;
    if (q >= 1.0)
        return s->max;
    uint64_t rank = rank_of(s->count, q);
    uint64_t seen = 0;
    for (uint32_t b = s->lo; b <= s->hi; b++) {
        seen += s->bucket[b];
        if (seen >= rank)
            return bl_sketch_bucket_mid(b);
    }
    assert(0 && "bucket counts do not add up to count");
    return s->max;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* One (u32 bucket, u64 count) pair, little-endian: two stores, where the
 * byte loop above costs a shift per byte in the serialise loop. */
static inline void put_pair(uint8_t *p, uint32_t b, uint64_t c)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    b = __builtin_bswap32(b);
    c = __builtin_bswap64(c);
#endif
    memcpy(p, &b, 4);
    memcpy(p + 4, &c, 8);
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* A pair's bucket (u32) and count (u64), little-endian: one load each, where
 * get_le's byte loop costs a shift per byte; the blob merges of the writer's
 * upserts (sketch_merge, rollups) read every pair twice (check, merge). */
static inline uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t get_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

bl_err bl_sketch_serialize(const bl_sketch *s, bl_buf *out)
{
    /* one pass: room for every bucket in [lo, hi], the count patched after */
    size_t span = s->count ? (size_t)(s->hi - s->lo + 1) : 0;
    bl_err err = bl_buf_reserve(out, BLOB_HEADER + span * BLOB_PAIR);
    if (err)
        return err;
    uint8_t *p0 = (uint8_t *)out->data + out->len, *p = p0 + BLOB_HEADER;
    uint32_t nz = 0;
    /* locals: the byte stores below may alias anything, so reading through
     * s-> would reload the pointer every step; zero runs (most of a wide
     * span) are skipped four buckets at a time */
    const uint64_t *bk = s->bucket;
    uint32_t b = s->lo, end = s->lo + (uint32_t)span;
    while (b < end) {
        if (b + 4 <= end && (bk[b] | bk[b + 1] | bk[b + 2] | bk[b + 3]) == 0) {
            b += 4;
            continue;
        }
        uint64_t c = bk[b];
        if (c) {
            put_pair(p, b, c);
            p += BLOB_PAIR;
            nz++;
        }
        b++;
    }
    put_le(p0, BLOB_VERSION, 1);
    put_le(p0 + 1, S, 1);
    put_le(p0 + 2, 0, 2);
    put_le(p0 + 4, nz, 4);
    out->len += BLOB_HEADER + (size_t)nz * BLOB_PAIR;
    out->data[out->len] = '\0';
    return BL_OK;
}

/*
 * Checks the whole blob before touching s: version, sub_bits, reserved == 0,
 * length exactly header + n_nonzero pairs, indexes strictly ascending and in
 * range, counts non-zero and their total within 64 bits (BL_EFORMAT). A
 * total that fits but would overflow s->count is BL_ETOOBIG. s->max and
 * s->sum are left alone (the blob does not carry them).
 */
/* Checks a blob; *nz gets its pair count and *total the sum of its counts. */
static bl_err check_blob(const uint8_t *p, size_t len, uint64_t *nz_out, uint64_t *total_out)
{
    if (len < BLOB_HEADER || !p)
        return BL_EFORMAT;
    if (p[0] != BLOB_VERSION || p[1] != S || get_le(p + 2, 2) != 0)
        return BL_EFORMAT;
    uint64_t nz = get_le(p + 4, 4);
    if ((len - BLOB_HEADER) / BLOB_PAIR != nz || (len - BLOB_HEADER) % BLOB_PAIR)
        return BL_EFORMAT;
    const uint8_t *pairs = p + BLOB_HEADER;
    uint64_t total = 0;
    uint64_t prev = 0;
    for (uint64_t i = 0; i < nz; i++) {
        uint64_t b = get_u32(pairs + i * BLOB_PAIR);
        uint64_t c = get_u64(pairs + i * BLOB_PAIR + 4);
        if (b >= BL_SKETCH_BUCKETS || c == 0 || __builtin_add_overflow(total, c, &total))
            return BL_EFORMAT;
        if (i && b <= prev)
            return BL_EFORMAT;
        prev = b;
    }
    *nz_out = nz;
    *total_out = total;
    return BL_OK;
}

bl_err bl_sketch_blob_merge(const void *a, size_t alen, const void *b, size_t blen, bl_buf *out)
{
    uint64_t na, nb, ta, tb, t;
    bl_err err;
    if ((err = check_blob(a, alen, &na, &ta)) || (err = check_blob(b, blen, &nb, &tb)))
        return err;
    if (__builtin_add_overflow(ta, tb, &t))
        return BL_ETOOBIG;
    size_t at = out->len;
    if ((err = bl_buf_reserve(out, BLOB_HEADER + (size_t)(na + nb) * BLOB_PAIR)))
        return err;
    uint8_t *o = (uint8_t *)out->data + at;
    const uint8_t *pa = (const uint8_t *)a + BLOB_HEADER, *pb = (const uint8_t *)b + BLOB_HEADER;
    uint8_t *w = o + BLOB_HEADER;
    uint64_t i = 0, j = 0, n = 0;
    while (i < na || j < nb) {
        uint64_t ba = i < na ? get_u32(pa + i * BLOB_PAIR) : UINT64_MAX;
        uint64_t bb = j < nb ? get_u32(pb + j * BLOB_PAIR) : UINT64_MAX;
        uint64_t idx = ba < bb ? ba : bb, c = 0;
        if (ba == idx)
            c += get_u64(pa + i++ * BLOB_PAIR + 4);
        if (bb == idx)
            c += get_u64(pb + j++ * BLOB_PAIR + 4);
        put_pair(w, (uint32_t)idx, c);
        w += BLOB_PAIR;
        n++;
    }
    put_le(o, BLOB_VERSION, 1);
    put_le(o + 1, S, 1);
    put_le(o + 2, 0, 2);
    put_le(o + 4, n, 4);
    out->len = at + BLOB_HEADER + (size_t)n * BLOB_PAIR;
    out->data[out->len] = '\0';
    return BL_OK;
}

bl_err bl_sketch_blob_sub(const void *a, size_t alen, const void *b, size_t blen, bl_buf *out)
{
    uint64_t na, nb, ta, tb;
    bl_err err;
    if ((err = check_blob(a, alen, &na, &ta)) || (err = check_blob(b, blen, &nb, &tb)))
        return err;
    if (tb > ta)
        return BL_EINVAL;
    size_t at = out->len;
    if ((err = bl_buf_reserve(out, BLOB_HEADER + (size_t)na * BLOB_PAIR)))
        return err;
    uint8_t *o = (uint8_t *)out->data + at;
    const uint8_t *pa = (const uint8_t *)a + BLOB_HEADER, *pb = (const uint8_t *)b + BLOB_HEADER;
    uint8_t *w = o + BLOB_HEADER;
    uint64_t i = 0, j = 0, n = 0;
    /* every bucket of b must be in a with at least its count */
    for (; i < na; i++) {
        uint64_t idx = get_le(pa + i * BLOB_PAIR, 4), c = get_le(pa + i * BLOB_PAIR + 4, 8);
        if (j < nb && get_le(pb + j * BLOB_PAIR, 4) < idx)
            return BL_EINVAL; /* a bucket of b that a lacks */
        if (j < nb && get_le(pb + j * BLOB_PAIR, 4) == idx) {
            uint64_t cb = get_le(pb + j++ * BLOB_PAIR + 4, 8);
            if (cb > c)
                return BL_EINVAL;
            c -= cb;
        }
        if (!c)
            continue;
        put_le(w, idx, 4);
        put_le(w + 4, c, 8);
        w += BLOB_PAIR;
        n++;
    }
    if (j < nb)
        return BL_EINVAL;
    put_le(o, BLOB_VERSION, 1);
    put_le(o + 1, S, 1);
    put_le(o + 2, 0, 2);
    put_le(o + 4, n, 4);
    out->len = at + BLOB_HEADER + (size_t)n * BLOB_PAIR;
    out->data[out->len] = '\0';
    return BL_OK;
}

bl_err bl_sketch_blob_quantiles(const void *blob, size_t len, const double *q, int n,
                                uint64_t *out)
{
    uint64_t nz, total;
    bl_err err = check_blob(blob, len, &nz, &total);
    if (err)
        return err;
    const uint8_t *pairs = (const uint8_t *)blob + BLOB_HEADER;
    for (int k = 0; k < n; k++) {
        out[k] = 0;
        if (!total)
            continue;
        /* q >= 1: the largest bucket's representative (the blob has no max) */
        uint64_t rank = q[k] >= 1.0 ? total : rank_of(total, q[k]), seen = 0;
        for (uint64_t i = 0; i < nz; i++) {
            seen += get_le(pairs + i * BLOB_PAIR + 4, 8);
            if (seen >= rank) {
                out[k] = bl_sketch_bucket_mid((uint32_t)get_le(pairs + i * BLOB_PAIR, 4));
                break;
            }
        }
    }
    return BL_OK;
}

bl_err bl_sketch_merge_blob(bl_sketch *s, const void *blob, size_t len)
{
    const uint8_t *p = blob;
    uint64_t nz, total;
    bl_err cerr = check_blob(p, len, &nz, &total);
    if (cerr)
        return cerr;
    const uint8_t *pairs = p + BLOB_HEADER;
    if (!nz)
        return BL_OK;
    if (total > UINT64_MAX - s->count)
        return BL_ETOOBIG;
    bl_err err = ensure_buckets(s);
    if (err)
        return err;
    for (uint64_t i = 0; i < nz; i++) {
        uint32_t b = (uint32_t)get_le(pairs + i * BLOB_PAIR, 4);
        s->bucket[b] += get_le(pairs + i * BLOB_PAIR + 4, 8);
    }
    uint32_t lo = (uint32_t)get_le(pairs, 4);
    uint32_t hi = (uint32_t)get_le(pairs + (nz - 1) * BLOB_PAIR, 4);
    s->count += total;
    s->lo = lo < s->lo ? lo : s->lo;
    s->hi = hi > s->hi ? hi : s->hi;
    return BL_OK;
}
