/*
 * textout.h — answers written as JSON (or binary) text into a buffer charged
 * to the request's in-flight memory budget (http/internal.h bl_req_append),
 * for the big read answers (h_query.c slow methods, h_calltree.c call tree):
 * no jansson tree per row (about 1 KiB each), one buffer whose growth is
 * charged. HTTP-internal, like internal.h.
 *
 * The first failed write (budget spent, out of memory) is kept in `e` and
 * makes every later write do nothing; bl_out_reply_as then answers 503.
 */
#ifndef BL_HTTP_TEXTOUT_H
#define BL_HTTP_TEXTOUT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <microhttpd.h>

#include "common/blerr.h"
#include "common/buf.h"
#include "http/internal.h"

/* An answer being written (fields in this order: callers initialise
 * scratch ones as { r, buffer, error }). */
typedef struct bl_out {
    req *r;   /* the request charged (borrowed) */
    bl_buf b; /* the bytes so far; owned until bl_out_reply_as (or freed by
                 the caller with bl_req_buf_free) */
    bl_err e; /* first error; later writes do nothing */
} bl_out;

/* Starts an empty answer charged to r. */
void bl_out_init(bl_out *o, req *r);
/* Appends n bytes of s (any bytes, not only text). */
void bl_out_raw(bl_out *o, const char *s, size_t n);
/* Appends the NUL-terminated s. */
void bl_out_str(bl_out *o, const char *s);
/* Appends v in decimal, after a comma when sep. */
void bl_out_u64(bl_out *o, int sep, uint64_t v);
/* Appends v (stolen: freed here; NULL means out of memory, BL_ENOMEM) as
 * compact JSON. */
void bl_out_json(bl_out *o, json_t *v);
/* Answers 200 with the bytes as Content-Type `type`, or 503 (budget spent /
 * out of memory) when a write failed; frees o's buffer either way. */
enum MHD_Result bl_out_reply_as(struct MHD_Connection *c, bl_http *h, bl_out *o,
                                const char *type);
/* bl_out_reply_as with application/json. */
enum MHD_Result bl_out_reply(struct MHD_Connection *c, bl_http *h, bl_out *o);

#endif
