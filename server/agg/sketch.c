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
/* v1 (read only): u8 1, u8 S, u16 0, u32 n, n × (u32 bucket, u64 count) */
#define V1_HEADER 8
#define V1_PAIR 12
/* v2 (written): u8 2, u8 S, u16 n, n × (varint gap, varint count) */
#define V2_HEADER 4
#define V2_PAIR_MAX 12 /* a gap (< 2^14: 2 bytes) and a count (10 bytes) */

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

bl_err bl_sketch_add_buckets(bl_sketch *s, const uint16_t *b, size_t n)
{
    if (n == 0)
        return BL_OK;
    uint32_t lo = b[0], hi = b[0];
    for (size_t i = 1; i < n; i++) {
        lo = b[i] < lo ? b[i] : lo;
        hi = b[i] > hi ? b[i] : hi;
    }
    if (hi >= BL_SKETCH_BUCKETS)
        return BL_EINVAL;
    bl_err err = ensure_buckets(s);
    if (err)
        return err;
    assert(n <= UINT64_MAX - s->count);
    for (size_t i = 0; i < n; i++)
        s->bucket[b[i]]++;
    if (!s->count) {
        s->lo = lo;
        s->hi = hi;
    } else {
        s->lo = lo < s->lo ? lo : s->lo;
        s->hi = hi > s->hi ? hi : s->hi;
    }
    s->count += n;
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

/* ---- serialised forms (sketch.h) ---------------------------------------- */

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

/* Writes v as a LEB128 varint (7 bits a byte, low first, high bit = more
 * follow) at w; returns the byte after it (1–10 bytes). */
static inline uint8_t *put_varint(uint8_t *w, uint64_t v)
{
    while (v >= 0x80) {
        *w++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *w++ = (uint8_t)v;
    return w;
}

/* Reads a varint of at most `max` bytes from *pp (< end) into *out and
 * moves *pp past it. -1 when it runs past end or `max` bytes, has a final
 * 0 byte after others (an overlong form: every value has one encoding), or
 * does not fit in 64 bits. */
static inline int get_varint(const uint8_t **pp, const uint8_t *end, int max, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(p < end && *p < 0x80, 1)) { /* one byte: most of them */
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < max; i++) {
        if (p == end)
            return -1;
        uint8_t x = *p++;
        if (i == 9 && x > 1)
            return -1; /* bits past 64 */
        v |= (uint64_t)(x & 0x7f) << (7 * i);
        if (!(x & 0x80)) {
            if (!x)
                return -1; /* overlong */
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* A reader of either serialised form: the pairs in order, each checked
 * (index in range and above the previous one, count non-zero), and the
 * blob's end where the last pair ends. */
typedef struct rd {
    const uint8_t *p, *end;
    uint32_t left; /* pairs still to read */
    int v2;
    int64_t prev;  /* the last bucket read, -1 before the first */
} rd;

/* Reads the header. BL_EFORMAT when it is not one of the two forms (the
 * pairs are checked as they are read). */
static bl_err rd_open(rd *r, const void *blob, size_t len)
{
    const uint8_t *p = blob;
    if (!p || len < V2_HEADER || p[1] != S)
        return BL_EFORMAT;
    r->end = p + len;
    r->prev = -1;
    if (p[0] == 2) {
        r->v2 = 1;
        r->left = (uint32_t)p[2] | (uint32_t)p[3] << 8;
        r->p = p + V2_HEADER;
        /* a pair takes at least 2 bytes */
        if (r->left > BL_SKETCH_BUCKETS || r->left > (len - V2_HEADER) / 2)
            return BL_EFORMAT;
        return BL_OK;
    }
    if (p[0] != 1 || len < V1_HEADER || p[2] || p[3])
        return BL_EFORMAT;
    uint64_t nz = get_u32(p + 4);
    if ((len - V1_HEADER) % V1_PAIR || (len - V1_HEADER) / V1_PAIR != nz)
        return BL_EFORMAT;
    r->v2 = 0;
    r->left = (uint32_t)nz;
    r->p = p + V1_HEADER;
    return BL_OK;
}

/* The next pair: 1 with *b and *c set, 0 at the blob's end (all its bytes
 * read), -1 when malformed. */
static inline int rd_next(rd *r, uint32_t *b, uint64_t *c)
{
    if (!r->left)
        return r->p == r->end ? 0 : -1;
    uint64_t idx;
    if (r->v2) {
        uint64_t gap;
        const uint8_t *p = r->p;
        if (__builtin_expect(r->end - p >= 2 && !((p[0] | p[1]) & 0x80), 1)) {
            gap = p[0]; /* a one-byte gap and count: most pairs */
            *c = p[1];
            r->p = p + 2;
        } else if (get_varint(&r->p, r->end, 2, &gap) || get_varint(&r->p, r->end, 10, c)) {
            return -1;
        }
        idx = (uint64_t)(r->prev + 1) + gap;
    } else {
        idx = get_u32(r->p);
        *c = get_u64(r->p + 4);
        r->p += V1_PAIR;
        if ((int64_t)idx <= r->prev)
            return -1;
    }
    if (idx >= BL_SKETCH_BUCKETS || !*c)
        return -1;
    r->prev = (int64_t)idx;
    r->left--;
    *b = (uint32_t)idx;
    return 1;
}

/* A v2 blob being written at w0: pairs appended in ascending order. */
typedef struct wr {
    uint8_t *w0, *w;
    uint32_t n;
    int64_t prev;
} wr;

static inline void wr_open(wr *o, uint8_t *w0)
{
    o->w0 = w0;
    o->w = w0 + V2_HEADER;
    o->n = 0;
    o->prev = -1;
}

static inline void wr_pair(wr *o, uint32_t b, uint64_t c)
{
    o->w = put_varint(o->w, (uint64_t)((int64_t)b - o->prev - 1));
    o->w = put_varint(o->w, c);
    o->prev = b;
    o->n++;
}

/* Writes the header; returns the blob's length. */
static inline size_t wr_close(wr *o)
{
    o->w0[0] = 2;
    o->w0[1] = S;
    o->w0[2] = (uint8_t)o->n;
    o->w0[3] = (uint8_t)(o->n >> 8);
    return (size_t)(o->w - o->w0);
}

bl_err bl_sketch_serialize(const bl_sketch *s, bl_buf *out)
{
    /* room for every non-empty bucket, which lie in [lo, hi] */
    size_t span = s->count ? (size_t)(s->hi - s->lo + 1) : 0;
    bl_err err = bl_buf_reserve(out, V2_HEADER + span * V2_PAIR_MAX);
    if (err)
        return err;
    wr o;
    wr_open(&o, (uint8_t *)out->data + out->len);
    /* zero runs (most of a wide span) are skipped four buckets at a time */
    const uint64_t *bk = s->bucket;
    uint32_t b = s->lo, end = s->lo + (uint32_t)span;
    while (b < end) {
        if (b + 4 <= end && (bk[b] | bk[b + 1] | bk[b + 2] | bk[b + 3]) == 0) {
            b += 4;
            continue;
        }
        if (bk[b])
            wr_pair(&o, b, bk[b]);
        b++;
    }
    out->len += wr_close(&o);
    out->data[out->len] = '\0';
    return BL_OK;
}

bl_err bl_sketch_serialize_marked(uint64_t *bucket, uint64_t *mark, bl_buf *out)
{
    size_t nz = 0;
    for (size_t w = 0; w < BL_SKETCH_MARK_WORDS; w++)
        nz += (size_t)__builtin_popcountll(mark[w]);
    bl_err err = bl_buf_reserve(out, V2_HEADER + nz * V2_PAIR_MAX);
    if (err)
        return err;
    wr o;
    wr_open(&o, (uint8_t *)out->data + out->len);
    for (uint32_t w = 0; w < BL_SKETCH_MARK_WORDS; w++) {
        for (uint64_t m = mark[w]; m; m &= m - 1) { /* set bits, ascending */
            uint32_t b = w * 64 + (uint32_t)__builtin_ctzll(m);
            wr_pair(&o, b, bucket[b]);
            bucket[b] = 0;
        }
        mark[w] = 0;
    }
    out->len += wr_close(&o);
    out->data[out->len] = '\0';
    return BL_OK;
}

/* Checks a whole blob (rd_open, rd_next to the end); *nz gets its pair
 * count and *total the sum of its counts (BL_EFORMAT when it overflows). */
static bl_err check_blob(const void *blob, size_t len, uint64_t *nz_out, uint64_t *total_out)
{
    rd r;
    if (rd_open(&r, blob, len))
        return BL_EFORMAT;
    uint64_t nz = 0, total = 0, c;
    uint32_t b;
    int k;
    while ((k = rd_next(&r, &b, &c)) == 1) {
        if (__builtin_add_overflow(total, c, &total))
            return BL_EFORMAT;
        nz++;
    }
    if (k)
        return BL_EFORMAT;
    *nz_out = nz;
    *total_out = total;
    return BL_OK;
}

/* One pass over both blobs, checking them as they are read (the writer's
 * rollup and stat upserts run it for every row they touch); nothing is
 * appended on an error. *total: the result's count. */
static bl_err merge(const void *a, size_t alen, const void *b, size_t blen, bl_buf *out,
                    uint64_t *total)
{
    rd ra, rb;
    if (rd_open(&ra, a, alen) || rd_open(&rb, b, blen))
        return BL_EFORMAT;
    /* every output pair is no longer than the input pair(s) it comes from:
     * its gap is at most theirs and its count at most their two counts */
    bl_err err = bl_buf_reserve(out, V2_HEADER + alen + blen);
    if (err)
        return err;
    wr o;
    wr_open(&o, (uint8_t *)out->data + out->len);
    uint32_t ba = 0, bb = 0;
    uint64_t ca = 0, cb = 0, ta = 0, tb = 0;
    int ka = rd_next(&ra, &ba, &ca), kb = rd_next(&rb, &bb, &cb);
    int ovf = 0;
    while (ka == 1 || kb == 1) {
        if (ka == 1 && (kb != 1 || ba < bb)) {
            wr_pair(&o, ba, ca);
            ovf |= __builtin_add_overflow(ta, ca, &ta);
            ka = rd_next(&ra, &ba, &ca);
        } else if (kb == 1 && (ka != 1 || bb < ba)) {
            wr_pair(&o, bb, cb);
            ovf |= __builtin_add_overflow(tb, cb, &tb) << 1;
            kb = rd_next(&rb, &bb, &cb);
        } else { /* the same bucket in both */
            wr_pair(&o, ba, ca + cb); /* wraps only when the totals do: refused below */
            ovf |= __builtin_add_overflow(ta, ca, &ta);
            ovf |= __builtin_add_overflow(tb, cb, &tb) << 1;
            ka = rd_next(&ra, &ba, &ca);
            kb = rd_next(&rb, &bb, &cb);
        }
    }
    if (ka || kb || ovf)
        return BL_EFORMAT; /* a malformed pair or end, or a blob's own total overflows */
    if (__builtin_add_overflow(ta, tb, total))
        return BL_ETOOBIG;
    out->len += wr_close(&o);
    out->data[out->len] = '\0';
    return BL_OK;
}

bl_err bl_sketch_blob_merge(const void *a, size_t alen, const void *b, size_t blen, bl_buf *out)
{
    uint64_t total;
    return merge(a, alen, b, blen, out, &total);
}

bl_err bl_sketch_blob_merge_q(const void *a, size_t alen, const void *b, size_t blen,
                              bl_buf *out, const double *q, int n, uint64_t *qv)
{
    if (n < 0 || n > 8)
        return BL_EINVAL;
    size_t at = out->len;
    uint64_t total, rank[8];
    bl_err err = merge(a, alen, b, blen, out, &total);
    if (err)
        return err;
    int left = 0;
    for (int k = 0; k < n; k++) {
        qv[k] = 0;
        rank[k] = !total ? 0 : q[k] >= 1.0 ? total : rank_of(total, q[k]);
        left += rank[k] != 0;
    }
    /* the merged blob was written just now: read without checks */
    const uint8_t *p = (const uint8_t *)out->data + at + V2_HEADER;
    uint64_t seen = 0, b_ = (uint64_t)-1;
    while (left) {
        uint64_t gap = 0, c = 0;
        int sh = 0;
        do
            gap |= (uint64_t)(*p & 0x7f) << sh, sh += 7;
        while (*p++ & 0x80);
        sh = 0;
        do
            c |= (uint64_t)(*p & 0x7f) << sh, sh += 7;
        while (*p++ & 0x80);
        b_ += gap + 1;
        seen += c;
        for (int k = 0; k < n; k++)
            if (rank[k] && seen >= rank[k]) {
                qv[k] = bl_sketch_bucket_mid((uint32_t)b_);
                rank[k] = 0;
                left--;
            }
    }
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
    if ((err = bl_buf_reserve(out, V2_HEADER + alen)))
        return err;
    rd ra, rb;
    rd_open(&ra, a, alen);
    rd_open(&rb, b, blen);
    wr o;
    wr_open(&o, (uint8_t *)out->data + out->len);
    uint32_t ib = 0, ia;
    uint64_t cb = 0, c;
    int kb = rd_next(&rb, &ib, &cb);
    /* every bucket of b must be in a with at least its count */
    while (rd_next(&ra, &ia, &c) == 1) {
        if (kb == 1 && ib < ia)
            return BL_EINVAL; /* a bucket of b that a lacks */
        if (kb == 1 && ib == ia) {
            if (cb > c)
                return BL_EINVAL;
            c -= cb;
            kb = rd_next(&rb, &ib, &cb);
        }
        if (c)
            wr_pair(&o, ia, c);
    }
    if (kb == 1)
        return BL_EINVAL;
    out->len += wr_close(&o);
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
    /* one more pass: each quantile is set at the first bucket whose running
     * count reaches its rank (q >= 1: the largest bucket's representative,
     * the blob has no max) */
    for (int k = 0; k < n; k++)
        out[k] = 0;
    if (!total)
        return BL_OK;
    uint64_t rank[8];
    for (int k0 = 0; k0 < n; k0 += 8) { /* 8 quantiles a pass */
        int m = n - k0 < 8 ? n - k0 : 8, found = 0;
        for (int k = 0; k < m; k++)
            rank[k] = q[k0 + k] >= 1.0 ? total : rank_of(total, q[k0 + k]);
        rd r;
        rd_open(&r, blob, len);
        uint64_t seen = 0, c;
        uint32_t b;
        while (found < m && rd_next(&r, &b, &c) == 1) {
            seen += c;
            for (int k = 0; k < m; k++)
                if (rank[k] && seen >= rank[k]) {
                    out[k0 + k] = bl_sketch_bucket_mid(b);
                    rank[k] = 0; /* found (ranks are >= 1) */
                    found++;
                }
        }
    }
    return BL_OK;
}

bl_err bl_sketch_merge_blob(bl_sketch *s, const void *blob, size_t len)
{
    uint64_t nz, total;
    bl_err cerr = check_blob(blob, len, &nz, &total);
    if (cerr)
        return cerr;
    if (!nz)
        return BL_OK;
    if (total > UINT64_MAX - s->count)
        return BL_ETOOBIG;
    bl_err err = ensure_buckets(s);
    if (err)
        return err;
    rd r;
    rd_open(&r, blob, len);
    uint32_t b, lo = UINT32_MAX, hi = 0;
    uint64_t c;
    while (rd_next(&r, &b, &c) == 1) {
        s->bucket[b] += c;
        lo = b < lo ? b : lo;
        hi = b;
    }
    s->count += total;
    s->lo = lo < s->lo ? lo : s->lo;
    s->hi = hi > s->hi ? hi : s->hi;
    return BL_OK;
}
