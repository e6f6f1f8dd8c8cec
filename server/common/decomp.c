/*
 * decomp.c — streaming gzip / zstd / identity decoding with an output cap.
 */
#include "common/decomp.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#define CHUNK 65536

struct bl_decomp {
    bl_encoding enc;
    uint64_t max_out, total;
    bl_decomp_sink sink;
    void *ctx;
    int ended;          /* gzip/zstd: a complete frame has ended */
    int started;        /* any input seen */
    z_stream z;
    ZSTD_DStream *zs;
    size_t zs_hint;     /* last ZSTD_decompressStream return: 0 = frame done */
    unsigned char out[CHUNK];
};

int bl_encoding_parse(const char *v, bl_encoding *enc)
{
    if (!v || !*v || !strcasecmp(v, "identity"))
        *enc = BL_ENC_IDENTITY;
    else if (!strcasecmp(v, "gzip") || !strcasecmp(v, "x-gzip"))
        *enc = BL_ENC_GZIP;
    else if (!strcasecmp(v, "zstd"))
        *enc = BL_ENC_ZSTD;
    else
        return -1;
    return 0;
}

bl_err bl_decomp_new(bl_encoding enc, uint64_t max_out, bl_decomp_sink sink, void *ctx,
                     bl_decomp **out)
{
    *out = NULL;
    bl_decomp *d = calloc(1, sizeof *d);
    if (!d)
        return BL_ENOMEM;
    d->enc = enc;
    d->max_out = max_out;
    d->sink = sink;
    d->ctx = ctx;
    if (enc == BL_ENC_GZIP) {
        if (inflateInit2(&d->z, 16 + MAX_WBITS) != Z_OK) {
            free(d);
            return BL_ENOMEM;
        }
    } else if (enc == BL_ENC_ZSTD) {
        d->zs = ZSTD_createDStream();
        if (!d->zs || ZSTD_isError(ZSTD_initDStream(d->zs))) {
            ZSTD_freeDStream(d->zs);
            free(d);
            return BL_ENOMEM;
        }
        /* refuse frames that need a window over 128 MiB of memory */
        ZSTD_DCtx_setParameter(d->zs, ZSTD_d_windowLogMax, 27);
    }
    *out = d;
    return BL_OK;
}

static bl_err emit(bl_decomp *d, const void *p, size_t n)
{
    if (n == 0)
        return BL_OK;
    if (n > d->max_out || d->total > d->max_out - n)
        return BL_ETOOBIG;
    d->total += n;
    return d->sink(d->ctx, p, n);
}

bl_err bl_decomp_feed(bl_decomp *d, const void *p, size_t n)
{
    bl_err err;
    if (n)
        d->started = 1;
    if (d->enc == BL_ENC_IDENTITY)
        return emit(d, p, n);
    if (d->enc == BL_ENC_GZIP) {
        if (d->ended && n) { /* another member follows */
            if (inflateReset(&d->z) != Z_OK)
                return BL_EFORMAT;
            d->ended = 0;
        }
        d->z.next_in = (unsigned char *)(uintptr_t)p;
        while (n > 0) {
            uInt take = n > (1u << 30) ? (1u << 30) : (uInt)n;
            d->z.next_in = (unsigned char *)(uintptr_t)p;
            d->z.avail_in = take;
            do {
                d->z.next_out = d->out;
                d->z.avail_out = CHUNK;
                int rc = inflate(&d->z, Z_NO_FLUSH);
                if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
                    return BL_EFORMAT;
                if ((err = emit(d, d->out, CHUNK - d->z.avail_out)))
                    return err;
                if (rc == Z_STREAM_END) {
                    /* RFC 1952 §2.2: a file may hold several members */
                    d->ended = 1;
                    if (d->z.avail_in == 0)
                        break;
                    if (inflateReset(&d->z) != Z_OK)
                        return BL_EFORMAT;
                    d->ended = 0;
                    continue;
                }
                if (rc == Z_BUF_ERROR && d->z.avail_in == 0)
                    break;
            } while (d->z.avail_in > 0 || d->z.avail_out == 0);
            p = (const char *)p + take;
            n -= take;
        }
        return BL_OK;
    }
    /* zstd: several concatenated frames are allowed (RFC 8878 §3.1) */
    ZSTD_inBuffer in = { p, n, 0 };
    int last_full = 0;
    while (in.pos < in.size) {
        ZSTD_outBuffer ob = { d->out, CHUNK, 0 };
        size_t rc = ZSTD_decompressStream(d->zs, &ob, &in);
        if (ZSTD_isError(rc))
            return BL_EFORMAT;
        d->zs_hint = rc;
        if ((err = emit(d, d->out, ob.pos)))
            return err;
        last_full = ob.pos == CHUNK;
    }
    /* drain what is still buffered inside the decoder (only when the last
     * call filled the output: otherwise nothing is pending, and another call
     * would report the next frame's header hint instead of "frame done") */
    while (last_full) {
        ZSTD_outBuffer ob = { d->out, CHUNK, 0 };
        size_t rc = ZSTD_decompressStream(d->zs, &ob, &in);
        if (ZSTD_isError(rc))
            return BL_EFORMAT;
        if (ob.pos)
            d->zs_hint = rc;
        if ((err = emit(d, d->out, ob.pos)))
            return err;
        last_full = ob.pos == CHUNK;
    }
    return BL_OK;
}

bl_err bl_decomp_end(bl_decomp *d)
{
    if (d->enc == BL_ENC_GZIP)
        return d->ended ? BL_OK : BL_EFORMAT;
    if (d->enc == BL_ENC_ZSTD)
        return d->started && d->zs_hint == 0 ? BL_OK : BL_EFORMAT;
    return BL_OK;
}

uint64_t bl_decomp_total(const bl_decomp *d)
{
    return d->total;
}

void bl_decomp_free(bl_decomp *d)
{
    if (!d)
        return;
    if (d->enc == BL_ENC_GZIP)
        inflateEnd(&d->z);
    ZSTD_freeDStream(d->zs);
    free(d);
}
