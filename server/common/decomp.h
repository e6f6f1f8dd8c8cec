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
 * zstd frames may use a window of up to 128 MiB (windowLog 27, libzstd's
 * default limit). BL_ENOMEM. */
bl_err bl_decomp_new(bl_encoding enc, uint64_t max_out, bl_decomp_sink sink, void *ctx,
                     bl_decomp **out);

/* A memory budget for the decoder's own state (the bl_decomp with its
 * 64 KiB output chunk, zlib's inflate state and 32 KiB window, libzstd's
 * context, input buffer and window). take(ctx, n) is called before each
 * allocation of n bytes and returns 0 to allow it or -1 to refuse it (the
 * call that needed the memory then fails with BL_ENOMEM); give(ctx, n)
 * returns the same n when that memory is freed. Both are called only from
 * the bl_decomp_* call in progress, on its thread. */
typedef struct bl_decomp_mem {
    int (*take)(void *ctx, size_t n);
    void (*give)(void *ctx, size_t n);
    void *ctx;
} bl_decomp_mem;

/* Largest zstd window bl_decomp_new_mem accepts: 8 MiB, the limit RFC 9659
 * sets for the zstd HTTP Content-Encoding (what `zstd` levels 1-19 use
 * without --long). A frame asking for more fails with BL_EFORMAT and
 * bl_decomp_why() says so. */
#define BL_DECOMP_HTTP_WINDOW_LOG 23

/* As bl_decomp_new, for HTTP bodies: every byte of decoder state is taken
 * from `mem` (copied; NULL = unbudgeted), and zstd windows are limited to
 * 2^BL_DECOMP_HTTP_WINDOW_LOG bytes. BL_ENOMEM when the budget refuses the
 * decoder itself. */
bl_err bl_decomp_new_mem(bl_encoding enc, uint64_t max_out, bl_decomp_sink sink, void *ctx,
                         const bl_decomp_mem *mem, bl_decomp **out);
/* Why the last BL_EFORMAT happened, when more can be said than "corrupt
 * data" (a zstd window over the limit); NULL otherwise. Static text. */
const char *bl_decomp_why(const bl_decomp *d);
/* Feeds n compressed bytes. BL_EFORMAT for corrupt data (bad header, bad
 * checksum, data after the end), BL_ETOOBIG, BL_ENOMEM (out of memory or
 * refused by the budget), or the sink's error. */
bl_err bl_decomp_feed(bl_decomp *d, const void *p, size_t n);
/* Ends the stream: BL_EFORMAT when it was truncated. */
bl_err bl_decomp_end(bl_decomp *d);
/* Decompressed bytes produced so far. */
uint64_t bl_decomp_total(const bl_decomp *d);
/* Frees the decoder and its state (returned to its budget). NULL is a no-op. */
void bl_decomp_free(bl_decomp *d);

#endif
