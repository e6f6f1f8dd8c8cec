/*
 * decomp.h — streaming decompression of HTTP bodies (Content-Encoding
 * identity, gzip per RFC 1952 via zlib, zstd per RFC 8878 via libzstd) with a
 * hard cap on the decompressed size, so a small compressed body can never
 * expand past the server's limit (decompression bombs).
 *
 * Feed compressed chunks of any size with bl_decomp_feed; decompressed bytes
 * go to a sink callback. Finish with bl_decomp_end, which checks the stream
 * ended exactly (no truncated gzip/zstd frame).
 */
#ifndef BL_DECOMP_H
#define BL_DECOMP_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef enum bl_encoding {
    BL_ENC_IDENTITY = 0,
    BL_ENC_GZIP,
    BL_ENC_ZSTD
} bl_encoding;

/* Parses a Content-Encoding header value (NULL or "" = identity; case-
 * insensitive "gzip", "x-gzip", "zstd", "identity"). Returns 0 and sets *enc,
 * or -1 for an unsupported encoding (the server answers 415). */
int bl_encoding_parse(const char *value, bl_encoding *enc);

/* Receives decompressed bytes; returns BL_OK to continue, or an error that
 * bl_decomp_feed then returns. */
typedef bl_err (*bl_decomp_sink)(void *ctx, const void *p, size_t n);

typedef struct bl_decomp bl_decomp;

/* New decompressor; output beyond `max_out` bytes fails with BL_ETOOBIG.
 * BL_ENOMEM. */
bl_err bl_decomp_new(bl_encoding enc, uint64_t max_out, bl_decomp_sink sink, void *ctx,
                     bl_decomp **out);
/* Feeds n compressed bytes. BL_EFORMAT for corrupt data (bad header, bad
 * checksum, data after the end), BL_ETOOBIG, or the sink's error. */
bl_err bl_decomp_feed(bl_decomp *d, const void *p, size_t n);
/* Ends the stream: BL_EFORMAT when it was truncated. */
bl_err bl_decomp_end(bl_decomp *d);
/* Decompressed bytes produced so far. */
uint64_t bl_decomp_total(const bl_decomp *d);
void bl_decomp_free(bl_decomp *d);

#endif
