/*
 * bufx.h — inline fast paths for the many small appends of the class-file
 * writer (probe.c, codeattr.c, frames.c) onto common/buf.h's bl_buf. When
 * the bytes fit in the allocation they are copied in place, keeping bl_buf's
 * invariants (NUL after len, len <= cap_max); otherwise bl_buf_append does
 * the growing and the cap check. Header-only.
 */
#ifndef BL_BUFX_H
#define BL_BUFX_H

#include <string.h>
#include "common/buf.h"

static inline bl_err bl_bx_app(bl_buf *b, const void *p, size_t n)
{
    if (n == 0) /* p may be NULL then, as for bl_buf_append */
        return BL_OK;
    if (b->data && b->alloc - b->len > n && b->cap_max - b->len >= n) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return BL_OK;
    }
    return bl_buf_append(b, p, n);
}

static inline bl_err bl_bx_u8(bl_buf *b, unsigned v)
{
    unsigned char x = (unsigned char)v;
    return bl_bx_app(b, &x, 1);
}

static inline bl_err bl_bx_u16(bl_buf *b, uint32_t v)
{
    unsigned char x[2] = {(unsigned char)(v >> 8), (unsigned char)v};
    return bl_bx_app(b, x, 2);
}

static inline bl_err bl_bx_u32(bl_buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    return bl_bx_app(b, x, 4);
}

#endif
