/*
 * sketch.h — mergeable latency histogram for percentiles (p50/p90/p99) with
 * a bounded relative error, in the spirit of HdrHistogram / DDSketch.
 *
 * Values are durations in µs (uint64). Bucketing is log-linear: values below
 * 2^BL_SKETCH_SUB_BITS are exact; above, a value with highest set bit e goes
 * to one of 2^BL_SKETCH_SUB_BITS equal sub-buckets of [2^e, 2^(e+1)). A
 * quantile is reported as the midpoint of its bucket, so its relative error
 * is at most 2^-(BL_SKETCH_SUB_BITS+1) (0.78% with 6 bits) — well under
 * the 2% the server promises. Two sketches merge by adding bucket counts,
 * so merged results are exactly what one sketch of all values would give.
 *
 * Serialised forms (stored in SQLite as a BLOB), little-endian; both are
 * read, version 2 is written (by bl_sketch_serialize and every blob
 * function below, whatever the form of their inputs):
 *   version 1: u8 1, u8 sub_bits, u16 reserved (0), u32 n_nonzero, then
 *     n_nonzero × (u32 bucket index, u64 count), indexes ascending
 *     (12 bytes a bucket);
 *   version 2: u8 2, u8 sub_bits, u16 n_nonzero, then n_nonzero ×
 *     (varint gap, varint count), where the bucket index is the previous
 *     one + 1 + gap (the first: gap itself) and a varint is LEB128 (7 bits
 *     a byte, low bits first, high bit set on every byte but the last; no
 *     overlong forms; a gap takes at most 2 bytes, a count at most 10).
 *     Typically 2–3 bytes a bucket.
 * In both, counts are non-zero, indexes below BL_SKETCH_BUCKETS and the
 * blob ends with its last pair; anything else is malformed (BL_EFORMAT).
 */
#ifndef BL_SKETCH_H
#define BL_SKETCH_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"

#define BL_SKETCH_SUB_BITS 6
/* enough buckets for any uint64 value */
#define BL_SKETCH_BUCKETS ((64 - BL_SKETCH_SUB_BITS + 1) << BL_SKETCH_SUB_BITS)

typedef struct bl_sketch {
    uint64_t count;   /* values added */
    uint64_t max;     /* largest value added (exact) */
    uint64_t sum;     /* sum of values (saturating) */
    uint32_t lo, hi;  /* smallest / largest non-empty bucket (valid when count > 0) */
    uint64_t *bucket; /* BL_SKETCH_BUCKETS counters, allocated on first add; owned */
} bl_sketch;

void bl_sketch_init(bl_sketch *s);
void bl_sketch_cleanup(bl_sketch *s);
void bl_sketch_reset(bl_sketch *s);

/* Bucket index of a value, and the midpoint value that represents a bucket. */
uint32_t bl_sketch_bucket(uint64_t v);
uint64_t bl_sketch_bucket_mid(uint32_t b);

/* Adds `n` occurrences of value v (µs). BL_ENOMEM on the first add only. */
bl_err bl_sketch_add(bl_sketch *s, uint64_t v, uint64_t n);
/* Adds one value to each bucket b[0..n) (indexes as from bl_sketch_bucket,
 * < BL_SKETCH_BUCKETS): the buckets and count that adding values of those
 * buckets gives, but not their sum or max (left as they are: the caller
 * keeps those, a serialised sketch carries neither). For values bucketed
 * ahead, e.g. on another thread. BL_EINVAL when an index is out of range,
 * BL_ENOMEM on the first add (nothing added in both cases). */
bl_err bl_sketch_add_buckets(bl_sketch *s, const uint16_t *b, size_t n);
/* Adds all of src into dst. */
bl_err bl_sketch_merge(bl_sketch *dst, const bl_sketch *src);
/* The q-quantile (0 <= q <= 1) of the values added: the representative of
 * the bucket holding the value of rank ceil(q * count) (rank 1 for q == 0);
 * q == 1 returns the exact max. 0 when empty. */
uint64_t bl_sketch_quantile(const bl_sketch *s, double q);

/* Appends the serialised form to out. */
bl_err bl_sketch_serialize(const bl_sketch *s, bl_buf *out);

/* Words of a bitmap with one bit per bucket (bl_sketch_serialize_marked). */
#define BL_SKETCH_MARK_WORDS ((BL_SKETCH_BUCKETS + 63) / 64)
/*
 * Appends the serialised form of a sketch held as bare counts: bucket[]
 * (BL_SKETCH_BUCKETS counters, owned by the caller) is non-zero exactly
 * where bit b % 64 of mark[b / 64] is set (BL_SKETCH_MARK_WORDS words). The
 * blob is bl_sketch_serialize's for a sketch with those bucket counts. Then
 * zeroes those counters and the mark, ready for the next sketch: a caller
 * that builds many sketches in turn (pipeline/aggregate.c, one per stat)
 * touches only their non-empty buckets, not the whole span between their
 * smallest and largest. BL_ENOMEM (counters and mark left as they were).
 */
bl_err bl_sketch_serialize_marked(uint64_t *bucket, uint64_t *mark, bl_buf *out);
/* Adds a serialised sketch (as from bl_sketch_serialize) into s: the same as
 * merging it. BL_EFORMAT on a malformed blob (nothing is added then). The
 * blob carries no max/sum: callers keep those in their own columns. */
bl_err bl_sketch_merge_blob(bl_sketch *s, const void *blob, size_t len);

/* out[k] = the q[k]-quantile (0 <= q[k] < 1) of a serialised sketch, for
 * k < n, without expanding it: what bl_sketch_quantile gives for a sketch
 * holding the same buckets (0 when empty). BL_EFORMAT for a malformed blob. */
bl_err bl_sketch_blob_quantiles(const void *blob, size_t len, const double *q, int n,
                                uint64_t *out);

/* Merges two serialised sketches into one serialised sketch appended to
 * out, without expanding either (a linear merge of their bucket lists): the
 * same bytes bl_sketch_serialize would give for the union. BL_EFORMAT for a
 * malformed blob, BL_ETOOBIG when the counts overflow, BL_ENOMEM. */
bl_err bl_sketch_blob_merge(const void *a, size_t alen, const void *b, size_t blen, bl_buf *out);

/* bl_sketch_blob_merge, and qv[k] = the q[k]-quantile of the result for
 * k < n <= 8, as bl_sketch_blob_quantiles gives it (read from the merged
 * blob without checking it again). BL_EINVAL when n > 8; else as
 * bl_sketch_blob_merge. */
bl_err bl_sketch_blob_merge_q(const void *a, size_t alen, const void *b, size_t blen,
                              bl_buf *out, const double *q, int n, uint64_t *qv);

/* Subtracts serialised sketch b from serialised sketch a (bucket-wise, exact:
 * what bl_sketch_serialize gives for a sketch of a's values without b's),
 * appended to out; buckets that reach 0 are left out. BL_EINVAL when b is
 * not contained in a (a bucket of b missing in a or with a larger count:
 * nothing useful is appended then), BL_EFORMAT for a malformed blob,
 * BL_ENOMEM. */
bl_err bl_sketch_blob_sub(const void *a, size_t alen, const void *b, size_t blen, bl_buf *out);

#endif
