/*
 * decomp.c — streaming gzip / zstd / identity decoding with an output cap.
 */
#include "common/decomp.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createDStream_advanced (exported by libzstd) */
#include <zstd.h>
#include <zstd_errors.h>

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
    bl_decomp_mem mem;  /* budget of every allocation below (take/give NULL: none) */
    const char *why;    /* reason of the last BL_EFORMAT, or NULL */
    int hdr_done;       /* zstd: the first frame's header was checked */
    size_t hdr_len;     /* zstd: bytes of it in hdr so far */
    unsigned char hdr[ZSTD_FRAMEHEADERSIZE_MAX]; /* zstd: a copy of the first bytes */
    unsigned char out[CHUNK];
};

/* Budgeted allocations: each block carries its size in front so that the
 * free callbacks (zlib's and zstd's take only the address) can give it
 * back. HDR keeps the payload aligned for any type. */
#define HDR (sizeof(max_align_t) > sizeof(size_t) ? sizeof(max_align_t) : sizeof(size_t))

static void *mem_alloc(bl_decomp_mem *m, size_t n)
{
    if (n > SIZE_MAX - HDR)
        return NULL;
    if (m->take && m->take(m->ctx, n + HDR) != 0)
        return NULL;
    unsigned char *p = malloc(n + HDR);
    if (!p) {
        if (m->give)
            m->give(m->ctx, n + HDR);
        return NULL;
    }
    memcpy(p, &n, sizeof n);
    return p + HDR;
}

static void mem_free(bl_decomp_mem *m, void *q)
{
    if (!q)
        return;
    unsigned char *p = (unsigned char *)q - HDR;
    size_t n;
    memcpy(&n, p, sizeof n);
    free(p);
    if (m->give)
        m->give(m->ctx, n + HDR);
}

static void *z_alloc(void *opaque, uInt items, uInt size)
{
    if (size && items > SIZE_MAX / size)
        return NULL;
    return mem_alloc(opaque, (size_t)items * size);
}

static void z_free(void *opaque, void *p)
{
    mem_free(opaque, p);
}

static void *zs_alloc(void *opaque, size_t n)
{
    return mem_alloc(opaque, n);
}

static void zs_free(void *opaque, void *p)
{
    mem_free(opaque, p);
}

/* BL_ENOMEM for an allocation failure (or refusal), else BL_EFORMAT with
 * the reason noted when it is worth telling. */
static bl_err zs_error(bl_decomp *d, size_t rc)
{
    ZSTD_ErrorCode e = ZSTD_getErrorCode(rc);
    if (e == ZSTD_error_memory_allocation)
        return BL_ENOMEM;
    if (e == ZSTD_error_frameParameter_windowTooLarge)
        d->why = "the zstd frame needs a window over 8 MiB (RFC 9659 allows at most 8 MiB for "
                 "Content-Encoding: zstd; compress without --long or --ultra)";
    return BL_EFORMAT;
}

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

static bl_err decomp_new(bl_encoding enc, uint64_t max_out, bl_decomp_sink sink, void *ctx,
                         const bl_decomp_mem *mem, int window_log, bl_decomp **out)
{
    *out = NULL;
    bl_decomp_mem m = { NULL, NULL, NULL };
    if (mem)
        m = *mem;
    bl_decomp *d = mem_alloc(&m, sizeof *d);
    if (!d)
        return BL_ENOMEM;
    memset(d, 0, offsetof(bl_decomp, out));
    d->enc = enc;
    d->max_out = max_out;
    d->sink = sink;
    d->ctx = ctx;
    d->mem = m;
    if (enc == BL_ENC_GZIP) {
        d->z.zalloc = z_alloc;
        d->z.zfree = z_free;
        d->z.opaque = &d->mem;
        if (inflateInit2(&d->z, 16 + MAX_WBITS) != Z_OK) {
            mem_free(&m, d);
            return BL_ENOMEM;
        }
    } else if (enc == BL_ENC_ZSTD) {
        ZSTD_customMem cm = { zs_alloc, zs_free, &d->mem };
        d->zs = ZSTD_createDStream_advanced(cm);
        /* refuse frames that need a bigger window than window_log: the
         * window is the decoder's largest allocation */
        if (!d->zs || ZSTD_isError(ZSTD_initDStream(d->zs)) ||
            ZSTD_isError(ZSTD_DCtx_setParameter(d->zs, ZSTD_d_windowLogMax, window_log))) {
            ZSTD_freeDStream(d->zs);
            mem_free(&m, d);
            return BL_ENOMEM;
        }
    }
    *out = d;
    return BL_OK;
}

bl_err bl_decomp_new(bl_encoding enc, uint64_t max_out, bl_decomp_sink sink, void *ctx,
                     bl_decomp **out)
{
    return decomp_new(enc, max_out, sink, ctx, NULL, 27, out);
}

bl_err bl_decomp_new_mem(bl_encoding enc, uint64_t max_out, bl_decomp_sink sink, void *ctx,
                         const bl_decomp_mem *mem, bl_decomp **out)
{
    return decomp_new(enc, max_out, sink, ctx, mem, BL_DECOMP_HTTP_WINDOW_LOG, out);
}

const char *bl_decomp_why(const bl_decomp *d)
{
    return d ? d->why : NULL;
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
                if (rc == Z_MEM_ERROR)
                    return BL_ENOMEM;
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
    /* zstd: several concatenated frames are allowed (RFC 8878 §3.1). A
     * first frame that declares more content than max_out is refused before
     * anything is decoded (the later frames are cut by emit as they come).
     * The header may come in pieces: its first bytes are copied into hdr
     * (they are decoded as usual: the decoder emits nothing before the
     * whole header is in) until ZSTD_getFrameHeader can read it. */
    if (!d->hdr_done && n) {
        size_t k = sizeof d->hdr - d->hdr_len;
        if (k > n)
            k = n;
        memcpy(d->hdr + d->hdr_len, p, k);
        d->hdr_len += k;
        ZSTD_frameHeader fh;
        size_t rc = ZSTD_getFrameHeader(&fh, d->hdr, d->hdr_len);
        if (rc == 0) {
            d->hdr_done = 1;
            if (fh.frameType == ZSTD_frame && fh.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN &&
                fh.frameContentSize > d->max_out)
                return BL_ETOOBIG;
        } else if (ZSTD_isError(rc) || d->hdr_len == sizeof d->hdr) {
            d->hdr_done = 1; /* not a frame header: the decoder says why */
        }
    }
    ZSTD_inBuffer in = { p, n, 0 };
    int last_full = 0;
    while (in.pos < in.size) {
        ZSTD_outBuffer ob = { d->out, CHUNK, 0 };
        size_t rc = ZSTD_decompressStream(d->zs, &ob, &in);
        if (ZSTD_isError(rc))
            return zs_error(d, rc);
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
            return zs_error(d, rc);
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
    bl_decomp_mem m = d->mem;
    mem_free(&m, d);
}
